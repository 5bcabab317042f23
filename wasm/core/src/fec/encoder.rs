//! Sender side: builds XOR repair over consecutive outgoing DATA packets and
//! decides when each repair leaves, within the byte budget.
//!
//! A group opens with a packet that carries messages; every DATA packet
//! sent while it is open joins (packet numbers must be consecutive). The
//! repair is due when the group reaches the controller's size, or earlier
//! when a member's channel latency target says so — in both cases only if
//! the budget has the bytes. Budget credit accrues as `budget` × bytes of
//! message-carrying packets; a group that reaches `max_group` without
//! credit is abandoned (its packets rely on retransmission).
//!
//! A repair that leaves early for a latency target is the only chance its
//! packets have of arriving in time. When losses come in bursts, the packet
//! right after a loss (the repair) is lost far more often than the mean, so
//! one copy leaves too many packets late; the encoder then sends the same
//! repair twice, for the share of such groups `controller::second_copy_share`
//! says the latency target needs, as far as the budget allows. A message in
//! halves gets instead repairs of other powers of ω (`parity`), so that any
//! two of its packets rebuild it, as many as `controller::halves_repairs`
//! says; and so does a tick of whole messages spanning two or three packets
//! when that is two or more (bursts), or when such a tick needs two repairs
//! itself (`controller::tick_repairs`: from ~2 % independent loss): one
//! group over the tick's packets, with as many repairs as its members ask.

use super::{controller, FecConfig, IMAGE_HEADER};
use crate::prelude::*;

/// The REPAIR frame's header: type, first_pn, count, length varint ≤ 3.
const REPAIR_FRAME_HEADER: usize = 1 + 2 + 1 + 3;

/// Bytes a repair packet may add beyond its parity, which the packetizer
/// keeps free in protected packets (`PROTECTED_RESERVE`): the REPAIR frame
/// header and 7 bytes of slack.
pub const REPAIR_PACKET_OVERHEAD: usize = 7 + REPAIR_FRAME_HEADER;

/// The budget counts wire bytes: every packet with its IPv4 and UDP header
/// (28, nominal: other paths add their own) and its DATA header. A
/// message-carrying packet credits `budget` × (its body + these) and a
/// repair costs [`repair_cost`]. A copy then costs 13 bytes more than the
/// packet it repairs (the image and REPAIR frame headers), so two copies of
/// a message of 12 bytes or more cost at most 2.4 times its packet. Counted
/// without the 43 bytes, as before, two copies of a 20-byte message cost
/// 2.8 times its credit: at a budget of 2.0 most went once, and under
/// bursts one copy leaves 2.5 % of them late.
pub const CREDITED_HEADER: usize = 28 + crate::wire::DATA_HEADER_LEN;

/// What a repair of `parity_len` bytes costs the budget: its parity, its
/// REPAIR frame header and the packet's own headers ([`CREDITED_HEADER`]).
pub fn repair_cost(parity_len: usize) -> f64 {
    (parity_len + REPAIR_FRAME_HEADER + CREDITED_HEADER) as f64
}

/// Most packets a tick's group takes: over GF(4) a member three places on
/// has the same weights, so in a larger group two missing members three
/// apart could not be told apart by any repair (the receiver rebuilds any
/// three of three from the repairs of powers 0, 1 and 2). What follows a
/// full group goes as before: a new tick group if more follows it, else a
/// group of its own with copies.
const MAX_TICK_GROUP: u8 = 3;

/// A report older than this no longer counts (the peer repeats a non-zero
/// one every second; silence means its loss cleared and that news was lost).
pub const REPORT_LIFETIME_US: u64 = 3_000_000;

/// Weight of the newest report in the averages that choose halves.
const REPORT_AVERAGING: f64 = 1.0 / 4.0;

/// Room the packetizer leaves free in protected packets so their repair
/// (image header plus the above) still fits one datagram.
pub const PROTECTED_RESERVE: usize = REPAIR_PACKET_OVERHEAD + IMAGE_HEADER;

/// Parity buffers kept for reuse (no allocation per group).
const POOL: usize = 6;

/// A packet's share of a message sent in halves (`datagram_size::cut_for`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Halves {
    /// Carries no half of a split message.
    None,
    /// Carries a first half: the group stays open for the second.
    First,
    /// Carries a second half: the group's repair (the XOR of the halves) is
    /// due at once.
    Second,
}

#[derive(Debug)]
struct Group {
    first_pn: u64,
    count: u8,
    /// A member carries a first half whose second has not joined yet.
    awaits_half: bool,
    /// Its members include a message's halves (`controller::halves_pay`):
    /// never a copy of its repair, but repairs of other powers.
    halves: bool,
    /// Earliest time a member's latency target wants the repair sent.
    deadline: Option<u64>,
    /// When the first member left.
    opened_at: u64,
    /// A member's channel has a latency target: this repair is its only
    /// chance to arrive within it.
    by_deadline: bool,
    parity: Vec<u8>,
    /// Parities of powers 1 and 2, kept from its first member when a first
    /// half opened it while halves need more than one repair, or a tick's
    /// first packet (else empty and `weighted` false).
    more: [Vec<u8>; 2],
    weighted: bool,
    /// Opened by a tick of whole messages spanning several packets
    /// (`set_tick_continues`): it awaits the tick's last packet.
    tick: bool,
}

/// A repair ready to go: protects `first_pn .. first_pn + count`, member
/// `i` times ω^(power·i).
#[derive(Debug, PartialEq, Eq)]
pub struct Repair {
    pub first_pn: u64,
    pub count: u8,
    pub power: u8,
    pub parity: Vec<u8>,
}

/// See [`RepairEncoder::repair_of`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RepairFate {
    Pending,
    SentIn(u64),
}

#[derive(Debug)]
pub struct RepairEncoder {
    config: FecConfig,
    /// The peer's latest report on our packets: loss rate and P(lost | lost).
    loss: f64,
    burst: f64,
    reported_at: u64,
    group: Option<Group>,
    /// Repair bytes the budget allows right now.
    credit: f64,
    due: bool,
    /// Largest datagram; bounds credit so an idle stretch cannot save up a burst.
    max_datagram: usize,
    pool: Vec<Vec<u8>>,
    /// How long after its first member a group's repair still beats the
    /// retransmission (see `set_useful_for`); None = no limit.
    useful_for: Option<u64>,
    /// Recent repairs sent: (first protected packet, count, the repair's
    /// own packet number).
    sent: crate::ring::Ring<(u64, u8, u64)>,
    /// More repairs of the last group (a copy, or other powers), due right
    /// after its first, taken from the back.
    again: Vec<Repair>,
    /// The reports averaged (weight [`REPORT_AVERAGING`] to the newest):
    /// one report (about one a second) comes from ~13 losses at 5 %, too
    /// few to choose halves by (`halves_pay`) without flipping between
    /// the two cuts.
    avg_loss: f64,
    avg_burst: f64,
    /// The averages hold a report (none yet, or the last one expired).
    averaging: bool,
    /// From the averages: repairs a message in halves needs, and copies a
    /// whole one needs (`controller::halves_repairs`, `whole_repairs`).
    halves_plan: Option<f64>,
    /// Repairs a tick group of MAX_TICK_GROUP packets needs at this loss
    /// (`controller::tick_repairs`).
    tick_plan: u32,
    whole_plan: f64,
    /// Running share of deadline groups owed a second copy (see
    /// `controller::second_copy_share`): a copy goes whenever it reaches 1.
    second_share: f64,
    /// The same for halves owed one repair more than the whole part of
    /// `controller::halves_repairs`.
    more_share: f64,
    /// More of the same tick's messages follow the next packet at once.
    tick_continues: bool,
}

impl RepairEncoder {
    pub fn new(config: FecConfig, max_datagram: usize) -> Self {
        RepairEncoder {
            config,
            loss: 0.0,
            burst: 0.0,
            reported_at: 0,
            group: None,
            credit: 0.0,
            due: false,
            max_datagram,
            pool: Vec::new(),
            useful_for: None,
            sent: Default::default(),
            again: Vec::new(),
            second_share: 0.0,
            more_share: 0.0,
            avg_loss: 0.0,
            avg_burst: 0.0,
            averaging: false,
            halves_plan: None,
            tick_plan: 1,
            whole_plan: 1.0,
            tick_continues: false,
        }
    }

    /// Switch settings at run time; turning FEC off drops the open group.
    pub fn set_config(&mut self, config: FecConfig) {
        self.config = config;
        if self.group_size().is_none() {
            self.abandon();
        }
    }

    /// The connection would resend a lost member's data this long after
    /// sending it (early resend on a thin stream), or None. A group still
    /// open that long is abandoned unrepaired: its repair could arrive no
    /// sooner than the resend, so the budget waits for a group it can help.
    pub fn set_useful_for(&mut self, useful_for: Option<u64>) {
        self.useful_for = useful_for;
    }

    /// Whether more of a tick's messages leave right after the next packet
    /// (the connection knows what it has queued; see `on_packet_sent`).
    pub fn set_tick_continues(&mut self, more: bool) {
        self.tick_continues = more;
    }

    /// The peer measured this loss rate and burstiness on our packets.
    pub fn on_report(&mut self, now: u64, loss: f64, burst: f64) {
        if !self.averaging {
            (self.avg_loss, self.avg_burst) = (loss, burst);
            self.averaging = loss > 0.0;
        } else {
            self.avg_loss += (loss - self.avg_loss) * REPORT_AVERAGING;
            self.avg_burst += (burst - self.avg_burst) * REPORT_AVERAGING;
        }
        self.halves_plan = controller::halves_repairs(self.avg_loss, self.avg_burst);
        self.whole_plan = controller::whole_repairs(self.avg_loss, self.avg_burst);
        self.tick_plan =
            controller::tick_repairs(self.avg_loss, self.avg_burst, MAX_TICK_GROUP.into());
        self.loss = loss;
        self.burst = burst;
        self.reported_at = now;
        if self.group_size().is_none() {
            self.abandon();
        }
    }

    /// Forget a report past its lifetime (call before sending). True if it
    /// was forgotten.
    pub fn expire_report(&mut self, now: u64) -> bool {
        let expired = self.loss > 0.0 && now > self.reported_at + REPORT_LIFETIME_US;
        if expired {
            self.averaging = false; // the averages start again from the next report
            self.on_report(now, 0.0, 0.0);
        }
        expired
    }

    /// Loss and burstiness last reported by the peer.
    pub fn reported(&self) -> (f64, f64) {
        (self.loss, self.burst)
    }

    /// Whether a latency-targeted message of `len` bytes should go in
    /// halves now (see `controller::halves_pay`): repair is on, halves are
    /// allowed (`FecConfig::halves`) and the loss makes them cheaper.
    pub fn halves_pay(&self, len: usize) -> bool {
        self.config.halves
            && self.active()
            && controller::halves_pay(
                self.avg_loss,
                self.avg_burst,
                self.halves_plan,
                self.whole_plan,
                len,
                self.config.budget,
            )
    }

    /// Messages go in halves (if at all) with their XOR alone: the loss is
    /// independent enough that one repair keeps them in time.
    pub fn one_halves_repair(&self) -> bool {
        self.active() && self.halves_plan == Some(1.0)
    }

    /// Halves need more than one repair now (`controller::halves_repairs`).
    fn more_halves_repairs(&self) -> Option<f64> {
        self.halves_plan.filter(|&r| r > 1.0)
    }

    fn buffer(&mut self) -> Vec<u8> {
        let mut v = self.pool.pop().unwrap_or_default();
        v.clear();
        v
    }

    /// Packets per repair now, or None when repair is off.
    pub fn group_size(&self) -> Option<u8> {
        controller::group_size(&self.config, self.loss, self.burst)
    }

    /// True while outgoing packets should leave room for repair.
    pub fn active(&self) -> bool {
        self.group_size().is_some()
    }

    /// A DATA packet (not a repair packet) left with packet number `pn` and
    /// `body` = everything after its header. `carries_messages`: it holds
    /// MESSAGES or FRAGMENT frames worth protecting (only such a packet opens
    /// a group and earns budget; the connection says no for bulk transfers
    /// without a latency target). `deadline`: when its channels' latency
    /// targets want the repair sent, if they have any.
    pub fn on_packet_sent(
        &mut self,
        now: u64,
        pn: u64,
        body: &[u8],
        carries_messages: bool,
        deadline: Option<u64>,
        halves: Halves,
    ) {
        let Some(k) = self.group_size() else {
            return;
        };
        if self.due {
            return; // the group is closed; its repair goes out next
        }
        if let Some(g) = &self.group {
            if g.first_pn + g.count as u64 != pn {
                self.abandon(); // a gap in numbering: the repair could not name its members
            } else if self.useful_for.is_some_and(|u| now >= g.opened_at + u) {
                // Its repair would now leave no sooner than the first member's
                // early resend: spend the budget on a group it can still help.
                self.abandon();
            }
        }
        // A tick of whole latency-targeted messages spanning packets, where
        // a message in halves would get two repairs or more (bursts): one
        // group over the tick's packets, repaired as halves are (the XOR
        // and powers 1 and 2, any two losses rebuilt), not each packet with
        // copies of its own, which a tick of two loses all of for one of
        // its packets about twice as often as halves lose two of five. With
        // one XOR (independent loss) a copy each loses less; where a tick
        // of three needs two repairs itself (5 %) and the budget pays for
        // them, the tick is one group too. The group
        // awaits the tick's next packet while more of it follows, up to
        // MAX_TICK_GROUP members; whatever packet comes next otherwise
        // closes it, so its repairs go at once. On independent loss where
        // the tick needs two repairs (5 %), the XOR and power 1 over its
        // packets lose it only when three of five go; a copy of each loses
        // it when any packet and its copy both do.
        let tick = halves == Halves::None
            && deadline.is_some()
            && carries_messages
            && self.halves_plan.is_some()
            && (self.more_halves_repairs().is_some_and(|r| r >= 2.0)
                || (self.tick_plan >= 2
                    && self.config.budget * f64::from(MAX_TICK_GROUP)
                        >= f64::from(self.tick_plan)));
        let members = self.group.as_ref().map_or(0, |g| g.count) + 1;
        let awaiting_tick = self.group.as_ref().is_some_and(|g| g.tick && g.awaits_half);
        let halves = match () {
            _ if tick
                && self.tick_continues
                && members < MAX_TICK_GROUP
                && self.group.as_ref().is_none_or(|g| g.tick) =>
            {
                Halves::First
            }
            _ if awaiting_tick && halves == Halves::None => Halves::Second,
            _ => halves,
        };
        let tick = (tick && halves == Halves::First) || awaiting_tick;
        if self.group.is_none() {
            if !carries_messages {
                return;
            }
            let parity = self.buffer();
            // Only a group a first half opens gets the other powers (a half
            // joining an open group gets its XOR alone).
            let weighted =
                halves == Halves::First && (self.more_halves_repairs().is_some() || tick);
            let more = if weighted {
                [self.buffer(), self.buffer()]
            } else {
                Default::default()
            };
            self.group = Some(Group {
                first_pn: pn,
                count: 0,
                awaits_half: false,
                halves: false,
                deadline: None,
                opened_at: now,
                by_deadline: false,
                parity,
                more,
                weighted,
                tick,
            });
        }
        if carries_messages {
            // Room for two repairs that fill a datagram each (a tick
            // group's three: four), so a near-full packet still gets both
            // copies.
            let full = self
                .max_datagram
                .saturating_sub(crate::wire::DATA_HEADER_LEN + REPAIR_FRAME_HEADER);
            let cap = (if tick { 4.0 } else { 2.0 }) * repair_cost(full);
            self.credit =
                (self.credit + self.config.budget * (body.len() + CREDITED_HEADER) as f64).min(cap);
        }
        let Some(g) = self.group.as_mut() else { return };
        if g.weighted {
            let at = |power| super::parity::member_power(power, g.count as u64);
            let (w1, w2) = (at(1), at(2));
            let [m1, m2] = &mut g.more;
            super::parity::add_images(&mut [(&mut g.parity, 0), (m1, w1), (m2, w2)], body);
        } else {
            super::parity::xor_image(&mut g.parity, body);
        }
        g.count += 1;
        if let Some(d) = deadline {
            g.deadline = Some(g.deadline.map_or(d, |e| e.min(d)));
        }
        match halves {
            Halves::None => {}
            Halves::First => {
                g.awaits_half = true;
                g.halves = true;
            }
            Halves::Second => {
                g.awaits_half = false;
                g.halves = true;
                g.deadline = Some(now);
            }
        }
        self.evaluate(now, k);
    }

    fn cost(g: &Group) -> f64 {
        repair_cost(g.parity.len())
    }

    fn evaluate(&mut self, now: u64, k: u8) {
        if !self.again.is_empty() {
            return; // the last group's second copy goes first
        }
        let Some(g) = self.group.as_mut() else { return };
        let affordable = self.credit >= Self::cost(g);
        let late = g.deadline.is_some_and(|d| d <= now);
        let full = g.count >= k && !g.awaits_half;
        if affordable && (full || late) {
            g.by_deadline = g.deadline.is_some();
            self.due = true;
        } else if g.count >= self.config.max_group.min(32) {
            self.abandon();
        }
    }

    /// The datagram size changed. The open group's repair was sized for the
    /// old one and may not fit the new: give it up (retransmission covers it).
    pub fn set_max_datagram(&mut self, bytes: usize) {
        if bytes < self.max_datagram {
            self.abandon();
        }
        self.max_datagram = bytes;
    }

    /// Give up the open group, if any: its packets rely on retransmission.
    pub fn abandon(&mut self) {
        if let Some(g) = self.group.take() {
            self.recycle(g.parity);
            for v in g.more {
                self.recycle(v);
            }
        }
        while let Some(r) = self.again.pop() {
            self.recycle(r.parity);
        }
        self.due = false;
    }

    /// When the timer table should wake us: the open group's latency
    /// deadline, if the budget could pay for its repair then.
    pub fn timer(&self) -> Option<u64> {
        if !self.again.is_empty() {
            return None;
        }
        let g = self.group.as_ref()?;
        if self.due || self.credit < Self::cost(g) {
            return None;
        }
        g.deadline
    }

    pub fn on_timeout(&mut self, now: u64) {
        if let Some(k) = self.group_size() {
            self.evaluate(now, k);
        }
    }

    /// True when a repair should be sent now.
    pub fn is_due(&self) -> bool {
        self.due
    }

    /// Take the due repair (its bytes are charged to the budget). Hand the
    /// parity back with `recycle` once written.
    /// `repair_pn` is the packet number the repair will travel in.
    pub fn take_repair(&mut self, repair_pn: u64) -> Option<Repair> {
        if !self.due {
            return None;
        }
        self.due = false;
        if let Some(r) = self.again.pop() {
            self.credit -= repair_cost(r.parity.len());
            // The peer may rebuild from this one: its verdict waits for it.
            if let Some(s) = self.sent.back_mut() {
                if (s.0, s.1) == (r.first_pn, r.count) {
                    s.2 = repair_pn;
                }
            }
            self.due = !self.again.is_empty();
            return Some(r);
        }
        let mut g = self.group.take()?;
        let cost = Self::cost(&g);
        self.credit -= cost;
        if self.sent.len() >= 32 {
            self.sent.pop_front();
        }
        self.sent.push_back((g.first_pn, g.count, repair_pn));
        if g.by_deadline {
            let extra = if !g.halves {
                self.second_copy_owed(g.count) as usize
            } else if g.weighted {
                // A tick group gets what its own members ask at least.
                let least = if g.tick {
                    controller::tick_repairs(self.avg_loss, self.avg_burst, g.count.into()) as usize
                        - 1
                } else {
                    0
                };
                self.halves_extra().max(least).min(g.more.len())
            } else {
                0
            };
            // As many as the budget pays for now (a negative credit casts
            // to 0); powers 1 then 2, taken from the back.
            let extra = extra.min((self.credit / cost) as usize);
            for k in (0..extra).rev() {
                let (power, parity) = if g.halves {
                    (k as u8 + 1, core::mem::take(&mut g.more[k]))
                } else {
                    let mut copy = self.buffer();
                    copy.extend_from_slice(&g.parity);
                    (0, copy)
                };
                self.again.push(Repair {
                    first_pn: g.first_pn,
                    count: g.count,
                    power,
                    parity,
                });
            }
            self.due = extra > 0;
        }
        for v in g.more {
            self.recycle(v);
        }
        Some(Repair {
            first_pn: g.first_pn,
            count: g.count,
            power: 0,
            parity: g.parity,
        })
    }

    /// Repairs beyond the XOR this halves group gets (see
    /// `controller::halves_repairs`): the whole part less one, and one more
    /// whenever the running share reaches 1.
    fn halves_extra(&mut self) -> usize {
        let Some(r) = self.more_halves_repairs() else {
            self.more_share = 0.0;
            return 0;
        };
        let whole = r as usize;
        self.more_share += r - whole as f64;
        let more = self.more_share >= 1.0;
        if more {
            self.more_share -= 1.0;
        }
        whole - 1 + more as usize
    }

    /// Whether this deadline group's repair goes twice (see the module doc).
    fn second_copy_owed(&mut self, count: u8) -> bool {
        let share = controller::second_copy_share(self.loss, self.burst, count as u32);
        if share <= 0.0 {
            self.second_share = 0.0;
            return false;
        }
        self.second_share += share;
        if self.second_share >= 1.0 {
            self.second_share -= 1.0;
            return true;
        }
        false
    }

    /// Whether packet `pn` may still be rebuilt by the peer: it is in the
    /// open group or has a repair queued (one may yet leave), or the packet
    /// number its last repair was sent in, if one was.
    pub fn repair_of(&self, pn: u64) -> Option<RepairFate> {
        let covers = |first: u64, count: u8| (first..first + count as u64).contains(&pn);
        // A repair still to leave (the open group's, or one of `again`) is
        // a chance the peer has yet: a packet sent before it settles nothing.
        if self
            .group
            .as_ref()
            .is_some_and(|g| covers(g.first_pn, g.count))
            || self.again.iter().any(|r| covers(r.first_pn, r.count))
        {
            return Some(RepairFate::Pending);
        }
        self.sent
            .iter()
            .rev()
            .find(|(f, c, _)| (*f..*f + *c as u64).contains(&pn))
            .map(|&(_, _, rpn)| RepairFate::SentIn(rpn))
    }

    /// Reuse a written repair's buffer (no allocation per group).
    pub fn recycle(&mut self, parity: Vec<u8>) {
        if self.pool.len() < POOL && parity.capacity() > 0 {
            self.pool.push(parity);
        }
    }
}

#[cfg(test)]
#[path = "encoder_tests.rs"]
mod tests;
