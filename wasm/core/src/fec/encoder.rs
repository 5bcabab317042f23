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
//! says the latency target needs, as far as the budget allows.

use super::{controller, FecConfig, IMAGE_HEADER};
use crate::prelude::*;

/// Bytes a repair packet adds beyond its parity: DATA header (7) and the
/// REPAIR frame header (type, first_pn, count, length varint ≤ 3).
pub const REPAIR_PACKET_OVERHEAD: usize = 7 + 1 + 2 + 1 + 3;

/// A report older than this no longer counts (the peer repeats a non-zero
/// one every second; silence means its loss cleared and that news was lost).
pub const REPORT_LIFETIME_US: u64 = 3_000_000;

/// Weight of the newest report in the averages that choose halves.
const REPORT_AVERAGING: f64 = 1.0 / 4.0;

/// Room the packetizer leaves free in protected packets so their repair
/// (image header plus the above) still fits one datagram.
pub const PROTECTED_RESERVE: usize = REPAIR_PACKET_OVERHEAD + IMAGE_HEADER;

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
    /// Its members include a message's halves: sent so only while one
    /// repair suffices (`controller::halves_pay`), so never twice.
    halves: bool,
    /// Earliest time a member's latency target wants the repair sent.
    deadline: Option<u64>,
    /// When the first member left.
    opened_at: u64,
    /// A member's channel has a latency target: this repair is its only
    /// chance to arrive within it.
    by_deadline: bool,
    parity: Vec<u8>,
}

/// A repair ready to go: protects `first_pn .. first_pn + count`.
#[derive(Debug, PartialEq, Eq)]
pub struct Repair {
    pub first_pn: u64,
    pub count: u8,
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
    spare: Vec<u8>,
    /// How long after its first member a group's repair still beats the
    /// retransmission (see `set_useful_for`); None = no limit.
    useful_for: Option<u64>,
    /// Recent repairs sent: (first protected packet, count, the repair's
    /// own packet number).
    sent: crate::ring::Ring<(u64, u8, u64)>,
    /// A repair to send once more (first protected packet, count; its
    /// parity in `again_parity`), due right after the first copy.
    again: Option<(u64, u8)>,
    again_parity: Vec<u8>,
    /// The reports averaged (weight [`REPORT_AVERAGING`] to the newest):
    /// one report (about one a second) comes from ~13 losses at 5 %, too
    /// few to choose halves by (`halves_pay`) without flipping between
    /// the two cuts.
    avg_loss: f64,
    avg_burst: f64,
    /// The averages hold a report (none yet, or the last one expired).
    averaging: bool,
    /// Running share of deadline groups owed a second copy (see
    /// `controller::second_copy_share`): a copy goes whenever it reaches 1.
    second_share: f64,
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
            spare: Vec::new(),
            useful_for: None,
            sent: Default::default(),
            again: None,
            again_parity: Vec::new(),
            second_share: 0.0,
            avg_loss: 0.0,
            avg_burst: 0.0,
            averaging: false,
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

    /// The peer measured this loss rate and burstiness on our packets.
    pub fn on_report(&mut self, now: u64, loss: f64, burst: f64) {
        if !self.averaging {
            (self.avg_loss, self.avg_burst) = (loss, burst);
            self.averaging = loss > 0.0;
        } else {
            self.avg_loss += (loss - self.avg_loss) * REPORT_AVERAGING;
            self.avg_burst += (burst - self.avg_burst) * REPORT_AVERAGING;
        }
        self.loss = loss;
        self.burst = burst;
        self.reported_at = now;
        if self.group_size().is_none() {
            self.abandon();
        }
    }

    /// Forget a report past its lifetime (call before sending).
    pub fn expire_report(&mut self, now: u64) {
        if self.loss > 0.0 && now > self.reported_at + REPORT_LIFETIME_US {
            self.averaging = false; // the averages start again from the next report
            self.on_report(now, 0.0, 0.0);
        }
    }

    /// Loss and burstiness last reported by the peer.
    pub fn reported(&self) -> (f64, f64) {
        (self.loss, self.burst)
    }

    /// Whether a latency-targeted message should go in halves now (see
    /// `controller::halves_pay`): repair is on and the loss allows it.
    pub fn halves_pay(&self) -> bool {
        self.active() && controller::halves_pay(self.avg_loss, self.avg_burst)
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
        if self.group.is_none() {
            if !carries_messages {
                return;
            }
            let mut parity = core::mem::take(&mut self.spare);
            parity.clear();
            self.group = Some(Group {
                first_pn: pn,
                count: 0,
                awaits_half: false,
                halves: false,
                deadline: None,
                opened_at: now,
                by_deadline: false,
                parity,
            });
        }
        if carries_messages {
            let cap = (2 * self.max_datagram) as f64;
            self.credit = (self.credit + self.config.budget * (body.len() + 7) as f64).min(cap);
        }
        let Some(g) = self.group.as_mut() else { return };
        super::parity::xor_image(&mut g.parity, body);
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
        (g.parity.len() + REPAIR_PACKET_OVERHEAD) as f64
    }

    fn evaluate(&mut self, now: u64, k: u8) {
        if self.again.is_some() {
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
            self.spare = g.parity;
        }
        self.again = None;
        self.due = false;
    }

    /// When the timer table should wake us: the open group's latency
    /// deadline, if the budget could pay for its repair then.
    pub fn timer(&self) -> Option<u64> {
        if self.again.is_some() {
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
        if let Some((first_pn, count)) = self.again.take() {
            let parity = core::mem::take(&mut self.again_parity);
            self.credit -= (parity.len() + REPAIR_PACKET_OVERHEAD) as f64;
            // The peer may rebuild from this copy: its verdict waits for it.
            if let Some(s) = self.sent.back_mut() {
                if (s.0, s.1) == (first_pn, count) {
                    s.2 = repair_pn;
                }
            }
            return Some(Repair {
                first_pn,
                count,
                parity,
            });
        }
        let g = self.group.take()?;
        let cost = Self::cost(&g);
        self.credit -= cost;
        if self.sent.len() >= 32 {
            self.sent.pop_front();
        }
        self.sent.push_back((g.first_pn, g.count, repair_pn));
        if g.by_deadline && !g.halves && self.second_copy_owed(g.count) && self.credit >= cost {
            let mut copy = core::mem::take(&mut self.again_parity);
            copy.clear();
            copy.extend_from_slice(&g.parity);
            self.again_parity = copy;
            self.again = Some((g.first_pn, g.count));
            self.due = true;
        }
        Some(Repair {
            first_pn: g.first_pn,
            count: g.count,
            parity: g.parity,
        })
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
    /// open group (its repair may yet leave), or the packet number its
    /// repair was sent in, if one was.
    pub fn repair_of(&self, pn: u64) -> Option<RepairFate> {
        if let Some(g) = &self.group {
            if (g.first_pn..g.first_pn + g.count as u64).contains(&pn) {
                return Some(RepairFate::Pending);
            }
        }
        self.sent
            .iter()
            .rev()
            .find(|(f, c, _)| (*f..*f + *c as u64).contains(&pn))
            .map(|&(_, _, rpn)| RepairFate::SentIn(rpn))
    }

    /// Reuse a written repair's buffer (no allocation per group).
    pub fn recycle(&mut self, parity: Vec<u8>) {
        if self.spare.capacity() >= parity.capacity()
            && self.again_parity.capacity() < parity.capacity()
        {
            self.again_parity = parity;
        } else {
            self.spare = parity;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lossy(cfg: FecConfig, loss: f64) -> RepairEncoder {
        let mut e = RepairEncoder::new(cfg, 1200);
        e.on_report(0, loss, loss);
        e
    }

    #[test]
    fn no_report_no_repair() {
        let mut e = RepairEncoder::new(FecConfig::balanced(), 1200);
        for pn in 0..100 {
            e.on_packet_sent(
                pn * 1000,
                pn,
                &[7; 400],
                true,
                Some(pn * 1000),
                Halves::None,
            );
        }
        assert!(!e.is_due());
        assert_eq!(e.take_repair(0), None);
    }

    #[test]
    fn budget_widens_groups_until_the_repair_is_paid_for() {
        // 5 % loss wants groups of 2; 30 % budget pays one 400-byte repair per ~4 packets.
        let mut e = lossy(FecConfig::balanced(), 0.05);
        assert_eq!(e.group_size(), Some(2));
        let mut counts = Vec::new();
        for pn in 0..40 {
            e.on_packet_sent(pn, pn, &[1; 400], true, None, Halves::None);
            if let Some(r) = e.take_repair(0) {
                counts.push(r.count);
                e.recycle(r.parity);
            }
        }
        assert!(counts.iter().all(|&c| (3..=4).contains(&c)), "{counts:?}");
    }

    #[test]
    fn latency_deadline_sends_a_small_group_early_when_affordable() {
        let mut e = lossy(FecConfig::low_latency(), 0.01);
        assert!(e.group_size().unwrap() > 1);
        e.on_packet_sent(0, 0, &[1; 400], true, Some(5_000), Halves::None);
        assert!(
            !e.is_due(),
            "one member of a larger group, before its deadline"
        );
        assert_eq!(e.timer(), Some(5_000));
        e.on_timeout(5_000);
        let r = e.take_repair(0).expect("due at the deadline");
        assert_eq!((r.first_pn, r.count), (0, 1));
    }

    #[test]
    fn a_report_expires_without_refresh() {
        let mut e = lossy(FecConfig::balanced(), 0.05);
        e.expire_report(REPORT_LIFETIME_US);
        assert!(e.active());
        e.expire_report(REPORT_LIFETIME_US + 1);
        assert!(!e.active());
    }

    #[test]
    fn a_group_still_open_when_its_first_member_would_be_resent_is_abandoned() {
        // 5 % loss at 60 Hz: groups of 3–4 ticks (50–67 ms) for the budget,
        // but a lost member's data goes again 25 ms after it left.
        let mut e = lossy(FecConfig::balanced(), 0.05);
        e.set_useful_for(Some(25_000));
        let mut repaired = Vec::new();
        for pn in 0..40 {
            e.on_packet_sent(pn * 16_667, pn, &[1; 400], true, None, Halves::None);
            if let Some(r) = e.take_repair(0) {
                repaired.push(r.count);
                e.recycle(r.parity);
            }
        }
        // Only groups that close within 25 ms (two ticks) are worth repair;
        // the credit of abandoned ones goes to the next.
        assert!(!repaired.is_empty(), "the budget still buys repair");
        assert!(repaired.iter().all(|&c| c <= 2), "{repaired:?}");
    }

    /// 60 Hz ticks of one 400-byte packet whose channel wants its repair
    /// 3 ms later; returns the repairs taken (with their packet numbers), in order.
    fn latency_ticks(e: &mut RepairEncoder, ticks: u64, deadline: bool) -> Vec<(u64, Repair)> {
        let mut out = Vec::new();
        let mut pn = 0;
        for t in 0..ticks {
            let now = t * 16_667;
            e.on_packet_sent(
                now,
                pn,
                &[t as u8; 400],
                true,
                deadline.then_some(now + 3_000),
                Halves::None,
            );
            pn += 1;
            e.on_timeout(now + 3_000);
            while let Some(r) = e.take_repair(pn) {
                let copy = Repair {
                    first_pn: r.first_pn,
                    count: r.count,
                    parity: r.parity.clone(),
                };
                out.push((pn, copy));
                pn += 1;
                e.recycle(r.parity);
            }
        }
        out
    }

    #[test]
    fn bursty_loss_sends_a_latency_targeted_repair_twice() {
        // s1_bursty: a lone copy right after a loss is itself lost 25 % of
        // the time (2.5 % of packets late); two copies leave 0.6 %.
        let mut e = RepairEncoder::new(FecConfig::low_latency(), 1200);
        e.on_report(0, 0.10, 0.25);
        let r = latency_ticks(&mut e, 100, true);
        // The budget (200 %) pays for two copies of all but a few: each
        // copy costs 20 bytes of headers more than the packet earns.
        assert!(r.len() >= 190, "{} repairs for 100 packets", r.len());
        for w in r.windows(2) {
            if w[0].1.first_pn == w[1].1.first_pn {
                assert_eq!(w[0].1, w[1].1, "the same repair twice");
                assert_eq!(w[1].0, w[0].0 + 1, "right after the first");
            }
        }
        // The peer may rebuild from the last copy: the sender's verdict waits for it.
        let (last_pn, last) = r.last().unwrap();
        assert_eq!(
            e.repair_of(last.first_pn),
            Some(RepairFate::SentIn(*last_pn))
        );
    }

    #[test]
    fn independent_loss_sends_a_latency_targeted_repair_once() {
        let mut e = RepairEncoder::new(FecConfig::low_latency(), 1200);
        e.on_report(0, 0.05, 0.05);
        let r = latency_ticks(&mut e, 100, true);
        assert_eq!(r.len(), 100);
    }

    #[test]
    fn a_repair_without_a_latency_target_goes_once_even_in_bursts() {
        let mut e = RepairEncoder::new(FecConfig::low_latency(), 1200);
        e.on_report(0, 0.10, 0.25);
        let r = latency_ticks(&mut e, 100, false);
        assert_eq!(r.len(), 100, "group of 1, one repair each");
    }

    #[test]
    fn a_second_copy_waits_for_the_budget() {
        // At 30 % no second copy is ever affordable: one repair per ~4 packets' credit.
        let mut e = RepairEncoder::new(FecConfig::balanced(), 1200);
        e.on_report(0, 0.10, 0.25);
        let r = latency_ticks(&mut e, 100, true);
        assert!(r.windows(2).all(|w| w[0] != w[1]), "no repair repeated");
    }
}
