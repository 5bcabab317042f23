//! Packet assembly: `poll_transmit` fills one datagram with, in order, an
//! ACK (when owed), PING, CLOSE, retransmitted fragments, then new messages
//! by channel priority, coalescing consecutive small messages of a channel
//! into one MESSAGES frame.

use crate::auth::welcome_number;
use crate::connection::{Connection, Side, State};
use crate::fec::encoder::PROTECTED_RESERVE;
use crate::fec::{loss_meter, Halves};
use crate::loss::Recovery;
use crate::outbox::Outbox;
use crate::pn_bound::PnRoom;
use crate::prelude::*;
use crate::sent::{Chunk, SentPacket};
use crate::timer::Timer;
use crate::wire::{self, messages_header_len, varint_len, Writer};

/// Smallest datagram worth sending but a WELCOME (which needs 23 bytes).
const MIN_DATAGRAM: usize = 64;

/// Most messages in one MESSAGES frame (its count is a one-byte varint).
const MAX_RUN: u8 = 127;

/// An open MESSAGES frame that later messages of the same channel may join.
struct Run {
    channel: u8,
    next_seq: u64,
    count_at: usize,
    count: u8,
}

/// Append one message or fragment to the packet. Returns false (writing
/// nothing) if it does not fit.
fn write_chunk(
    w: &mut Writer,
    run: &mut Option<Run>,
    c: Chunk,
    data: &[u8],
    frag_count: u32,
) -> bool {
    if frag_count > 1 {
        *run = None;
        return wire::encode_fragment(w, c.channel, c.seq, c.frag, frag_count, data);
    }
    let entry = varint_len(data.len() as u64) + data.len();
    if let Some(r) = run.as_mut() {
        if r.channel == c.channel
            && r.next_seq == c.seq
            && r.count < MAX_RUN
            && entry <= w.remaining()
        {
            w.put_len_prefixed(data);
            r.count += 1;
            r.next_seq += 1;
            w.patch_u8(r.count_at, r.count);
            return true;
        }
    }
    if messages_header_len(1) + entry > w.remaining() {
        return false;
    }
    w.put_u8(wire::FRAME_MESSAGES);
    w.put_u8(c.channel);
    w.put_u16(c.seq as u16);
    let count_at = w.len();
    w.put_u8(1);
    w.put_len_prefixed(data);
    *run = Some(Run {
        channel: c.channel,
        next_seq: c.seq + 1,
        count_at,
        count: 1,
    });
    true
}

/// Retransmissions or first transmissions are waiting.
fn has_unsent(recovery: &Recovery, outbox: &Outbox) -> bool {
    recovery.has_retransmits() || outbox.has_queued()
}

/// What the next datagrams owe the peer besides messages. Inputs and
/// timers elsewhere ask for these through the methods; only this file
/// clears them, as it sends them.
#[derive(Debug, Default)]
pub(crate) struct Owed {
    /// Client: HELLO's handshake payload, and how often HELLO went.
    handshake_payload: Vec<u8>,
    hello_sends: u32,
    hello: bool,
    welcome: bool,
    /// CLOSE's code and reason, and whether it is owed (again).
    close_frame: Option<(u64, String)>,
    close: bool,
    ping: bool,
    /// Probe packets owed after a probe timeout (they may exceed the window).
    probes: u8,
}

impl Owed {
    /// A client's: its first HELLO, carrying `handshake_payload`.
    pub fn client(handshake_payload: Vec<u8>) -> Owed {
        Owed {
            handshake_payload,
            hello: true,
            ..Owed::default()
        }
    }

    pub fn hello(&mut self) {
        self.hello = true;
    }

    /// Connected: no HELLO is owed any more.
    pub fn cancel_hello(&mut self) {
        self.hello = false;
    }

    pub fn hello_due(&self) -> bool {
        self.hello
    }

    pub fn hello_sends(&self) -> u32 {
        self.hello_sends
    }

    pub fn welcome(&mut self) {
        self.welcome = true;
    }

    /// Closing locally: CLOSE with this code and reason.
    pub fn close(&mut self, code: u64, reason: String) {
        self.close_frame = Some((code, reason));
        self.close = true;
    }

    /// Closing, a packet arrived: answer it with the same CLOSE.
    pub fn close_again(&mut self) {
        self.close = true;
    }

    pub fn ping(&mut self) {
        self.ping = true;
    }

    pub fn probes(&mut self, n: u8) {
        self.probes = n;
    }
}

impl Connection {
    /// The bytes of chunk `c`'s fragment and its message's fragment count,
    /// or None if the message was cut again or that fragment was acked.
    pub(crate) fn message_frag(&self, c: Chunk) -> Option<(&[u8], u32)> {
        let m = self.outbox.channel(c.channel).get(c.seq)?;
        if !m.is_cut(&c) || m.is_acked(c.frag) {
            return None;
        }
        Some((m.fragment(c.frag), m.frag_count))
    }

    /// Write the next datagram to send into `buf` and return its length, or
    /// None when nothing is due now. Call repeatedly until None after every
    /// input, command or timeout. `buf` should hold `max_datagram_size` bytes.
    pub fn poll_transmit(&mut self, now: u64, buf: &mut [u8]) -> Option<usize> {
        self.path.start_transmit();
        let max = buf.len().min(self.config.max_datagram_size);
        if max < MIN_DATAGRAM {
            return None;
        }
        if self.state == State::Connected && self.path_pending() {
            if let Some(n) = self.transmit_challenge(buf) {
                self.refresh_timers();
                return Some(n);
            }
        }
        if self.state == State::Connected && !self.owed.welcome && self.idle(now) {
            return None;
        }
        // Until the client proves its address, what is left of 3× what it sent.
        let max = max.min(self.amp.allowance());
        let pn = self.packet_numbers.next();
        let mut w = Writer::new(&mut buf[..max]);
        let n = match self.state {
            State::Drained => None,
            State::Connected if self.owed.welcome => {
                let sent = wire::encode_welcome(&mut w, self.conn_id, &self.nonce);
                self.owed.welcome &= !sent;
                sent.then_some(w.len())
            }
            _ if max < MIN_DATAGRAM => None,
            State::Connecting => self.transmit_hello(now, &mut w),
            State::Closing => self.transmit_close(now, &mut w),
            State::Connected => self.transmit_data(now, &mut w),
        };
        if let Some(n) = n {
            // Every packet but HELLO is tagged once complete (the tag covers
            // its length). Each DATA transmit numbers exactly one packet `pn`.
            match buf[0] {
                wire::PACKET_DATA => self.keys.tx.seal(&mut buf[..n], pn),
                wire::PACKET_WELCOME => self
                    .keys
                    .tx
                    .seal(&mut buf[..n], welcome_number(&self.nonce)),
                _ => {}
            }
            self.amp.on_sent(n);
            self.stats.packets_out += 1;
            self.stats.bytes_out += n as u64;
        }
        self.refresh_timers();
        n
    }

    /// True when a connected poll at `now` finds nothing to send: no frame
    /// owed, nothing queued, no repair due, no ACK due. Every drain ends
    /// with such a poll (hosts poll until None), so it skips building a
    /// packet and, unless the pacer or an expired loss report changes a
    /// deadline, refreshing the timers: every other input refreshed them
    /// last, and nothing they depend on has moved since.
    fn idle(&mut self, now: u64) -> bool {
        self.elicit_if_due();
        if self.owed.ping
            || self.owed.probes > 0
            || self.path_response_owed()
            || self.fec.tx.is_due()
            || self.has_unsent()
            || self.received.ack_due(now, self.config.max_ack_delay_us)
        {
            return false;
        }
        // As a packet-building poll would: with room in the window the
        // sender is app-limited (samples until what is in flight arrives say
        // nothing of the path; a loss since the last send lowers that mark),
        // nothing waits for the pacer, and a loss report past its lifetime
        // is dropped. (The pacer's credit is topped up at the next send.)
        let in_flight = self.recovery.bytes_in_flight();
        if in_flight + self.config.max_datagram_size as u64 <= self.rate.window() {
            self.rate
                .on_app_limited(in_flight + wire::DATA_HEADER_LEN as u64);
        }
        let paced = self.rate.on_idle();
        if self.fec.tx.expire_report(now) || paced {
            self.refresh_timers();
        } else {
            self.debug_assert_timers_current("an input left the timers stale");
        }
        true
    }

    fn transmit_hello(&mut self, now: u64, w: &mut Writer) -> Option<usize> {
        if self.side != Side::Client || !self.owed.hello {
            return None;
        }
        let kinds: Vec<_> = self.config.channels.iter().map(|c| c.kind).collect();
        if !wire::encode_hello(
            w,
            self.conn_id,
            &kinds,
            &self.keys.key,
            &self.owed.handshake_payload,
        ) {
            return None;
        }
        wire::pad_hello(w);
        self.owed.hello = false;
        self.owed.hello_sends += 1;
        self.last_eliciting_sent = now;
        self.timers.stop(Timer::HelloResend);
        Some(w.len())
    }

    fn transmit_close(&mut self, now: u64, w: &mut Writer) -> Option<usize> {
        if !self.owed.close {
            return None;
        }
        self.owed.close = false;
        // Past even the probe bound the peer would refuse it (pn_bound).
        if !self.may_send(true) {
            return None;
        }
        let (code, reason) = self.owed.close_frame.clone()?;
        wire::encode_data_header(w, self.conn_id, self.packet_numbers.next());
        self.packet_numbers.advance();
        if self.received.ack_owed() && self.received.encode_ack(w, now) {
            self.received.on_ack_sent();
        }
        wire::encode_close(w, code, reason.as_bytes());
        Some(w.len())
    }

    fn transmit_data(&mut self, now: u64, w: &mut Writer) -> Option<usize> {
        // Too far past the largest acknowledged: only a probe may go (pn_bound).
        if !self.may_send(self.owed.probes > 0) {
            return None;
        }
        if self.pn_room() == PnRoom::Open && self.fec.tx.is_due() {
            if let Some(n) = self.transmit_repair(now, w) {
                return Some(n);
            }
        }
        self.fec.tx.expire_report(now);
        let fec_active = self.fec.tx.active();
        if fec_active {
            // Protected packets leave room for their repair's image header.
            w.limit(w.capacity().saturating_sub(PROTECTED_RESERVE));
        }
        let pn = self.packet_numbers.next();
        wire::encode_data_header(w, self.conn_id, pn);
        let mut ack_written = false;
        if self.received.ack_owed() {
            ack_written = self.received.encode_ack(w, now);
        }
        let mut eliciting = false;
        self.elicit_if_due();
        if self.owed.ping && w.put_u8(wire::FRAME_PING) {
            self.owed.ping = false;
            eliciting = true;
        }
        eliciting |= self.write_path_response(w);
        let probing = self.owed.probes > 0;
        let room = self.recovery.bytes_in_flight() + w.capacity() as u64 <= self.rate.window();
        let (recovery, outbox) = (&self.recovery, &self.outbox);
        let paced = self
            .rate
            .pace(now, &self.rtt, room, w.capacity() as u64, || {
                has_unsent(recovery, outbox)
            });
        let mut chunks = self.recovery.take_chunk_vec();
        let mut payload = 0usize;
        let may_fill = (room && !paced) || probing;
        // Nothing queued: the loops below would find nothing to write.
        let mut unsent = may_fill && self.has_unsent();
        let mut halves = Halves::None;
        // Chunks resent in this packet (the first `resent` of `chunks`).
        let mut resent = 0;
        if unsent {
            let mut run: Option<Run> = None;
            while let Some(c) = self.recovery.next_retransmit() {
                let Some((data, count)) = self.message_frag(c) else {
                    self.recovery.pop_retransmit();
                    continue;
                };
                if !write_chunk(w, &mut run, c, data, count) {
                    break;
                }
                payload += data.len();
                self.recovery.pop_retransmit();
                self.stats.retransmissions += 1;
                chunks.push(c);
            }
            resent = chunks.len();
            halves = self.fill_new_messages(now, w, &mut run, &mut chunks, &mut payload);
            eliciting |= !chunks.is_empty();
            unsent = self.has_unsent();
        }
        if may_fill && room && !paced && !unsent {
            self.rate
                .on_app_limited(self.recovery.bytes_in_flight() + w.len() as u64);
        }
        if probing && !eliciting && w.put_u8(wire::FRAME_PING) {
            eliciting = true;
        }
        if !eliciting && !self.received.ack_due(now, self.config.max_ack_delay_us) {
            // Nothing worth a datagram yet (a piggybackable ACK can wait).
            self.recovery.recycle(chunks);
            return None;
        }
        if !eliciting && !ack_written {
            self.recovery.recycle(chunks);
            return None;
        }
        if ack_written {
            self.received.on_ack_sent();
        }
        if let Some(report) = self.fec.meter.report_due(now) {
            if wire::encode_loss_report(
                w,
                loss_meter::to_wire(report.0),
                loss_meter::to_wire(report.1),
            ) {
                self.fec.meter.on_report_sent(now, report);
            }
        }
        self.packet_numbers.advance();
        let n = w.len();
        // Halves of a latency-targeted message; a second half whose repair
        // follows it at once waits for its first before an early resend
        // (`early_resend`).
        let mut latency_halves = Halves::None;
        let mut repair_follows = false;
        if fec_active {
            let deadline = self.repair_deadline(now, &chunks);
            if deadline.is_some() {
                latency_halves = halves;
            }
            // A bulk transfer gains nothing from repair (a round trip is
            // cheap beside its length) and would pay for it in goodput; a
            // channel with a latency target is protected regardless.
            // A resend of latency-targeted data goes bare while the loss is
            // independent (one XOR would keep halves in time, whether
            // messages go in halves or whole): its message is late already and
            // it travels for the ones behind, which a loss of the resend too
            // delays only p of the time; most resends are of messages whose
            // ACK was lost, so a repair would double each one's cost for
            // nothing. Under bursts it keeps its repair.
            let bare_resend =
                resent == chunks.len() && deadline.is_some() && self.fec.tx.one_halves_repair();
            let protect =
                !chunks.is_empty() && !bare_resend && (deadline.is_some() || !self.bulk());
            let resend_after = self.early_resend_after();
            self.fec.tx.set_useful_for(resend_after);
            // More of this tick's new latency-targeted messages follow at
            // once (a packet with resends neither opens nor extends a tick
            // group).
            let channels = &self.config.channels;
            let tick_continues = unsent
                && resent == 0
                && self
                    .outbox
                    .has_queued_on(|ch| channels[ch].latency_target_us > 0);
            self.fec.tx.set_tick_continues(tick_continues);
            self.fec.tx.on_packet_sent(
                now,
                pn,
                &w.written()[wire::DATA_HEADER_LEN..],
                protect,
                deadline,
                latency_halves,
            );
            repair_follows = self.fec.tx.is_due();
        }
        self.stats.payload_bytes_out += payload as u64;
        self.stats.overhead_bytes_out += (n - payload) as u64;
        if eliciting {
            // A probe or resend is not resent early, nor is a first half
            // (left to loss detection, `early_resend`).
            let skip_early_resend =
                probing || resent > 0 || (fec_active && halves == Halves::First);
            let first_half = match halves {
                Halves::First => {
                    self.first_half_pn = Some(pn);
                    None
                }
                Halves::Second => self.first_half_pn.take().filter(|_| {
                    latency_halves == Halves::Second && repair_follows && !skip_early_resend
                }),
                Halves::None => None,
            };
            self.owed.probes = self.owed.probes.saturating_sub(1);
            self.stats.eliciting_packets_out += 1;
            let ack_held = self.peer_holds_ack(now, &chunks);
            self.last_eliciting_sent = now;
            let delivery =
                self.rate
                    .on_sent(now, &self.rtt, n as u64, self.recovery.bytes_in_flight());
            self.recovery.on_sent(SentPacket {
                pn,
                time_sent: now,
                size: n as u64,
                chunks,
                delivery,
                skip_early_resend,
                first_half,
                ack_held,
            });
        } else {
            self.recovery.recycle(chunks);
        }
        Some(n)
    }

    /// A bulk transfer is under way: more is buffered than two congestion
    /// windows, so the path, not the application, sets the pace.
    pub(crate) fn bulk(&self) -> bool {
        self.bulk_under(self.rate.window())
    }

    /// `bulk()` under congestion window `window` (`self.rate.window()`).
    pub(crate) fn bulk_under(&self, window: u64) -> bool {
        self.outbox.buffered() as u64 > window.saturating_mul(2)
    }

    fn has_unsent(&self) -> bool {
        has_unsent(&self.recovery, &self.outbox)
    }

    /// A packet of repair for the last group of packets (not ack-eliciting,
    /// never itself protected), with an ACK if one is owed and fits.
    fn transmit_repair(&mut self, now: u64, w: &mut Writer) -> Option<usize> {
        let repair = self.fec.tx.take_repair(self.packet_numbers.next())?;
        let frame_len = wire::repair_frame_len(repair.parity.len());
        if wire::DATA_HEADER_LEN + frame_len > w.capacity() {
            // Cannot happen while protected packets keep PROTECTED_RESERVE free.
            self.fec.tx.recycle(repair.parity);
            return None;
        }
        let pn = self.packet_numbers.next();
        wire::encode_data_header(w, self.conn_id, pn);
        if self.received.ack_owed()
            && self.received.ack_frame_len(now) + frame_len <= w.remaining()
            && self.received.encode_ack(w, now)
        {
            self.received.on_ack_sent();
        }
        wire::encode_repair(
            w,
            repair.first_pn,
            repair.count,
            repair.power,
            &repair.parity,
        );
        self.fec.tx.recycle(repair.parity);
        self.packet_numbers.advance();
        let n = w.len();
        self.stats.fec_repair_packets_out += 1;
        self.stats.fec_repair_bytes_out += n as u64;
        self.stats.overhead_bytes_out += n as u64;
        Some(n)
    }

    /// When the repair for a packet carrying these chunks must leave so it
    /// arrives within the strictest of their channels' latency targets:
    /// target − one-way delay (half the smoothed RTT) − RTT variation − 1 ms.
    fn repair_deadline(&self, now: u64, chunks: &[Chunk]) -> Option<u64> {
        let target = chunks
            .iter()
            .map(|c| self.config.channels[c.channel as usize].latency_target_us)
            .filter(|&t| t > 0)
            .min()?;
        let transit = self.rtt.smoothed() / 2 + self.rtt.var() + 1_000;
        Some(now + target.saturating_sub(transit))
    }

    /// First transmissions, highest-priority channel first.
    fn fill_new_messages(
        &mut self,
        now: u64,
        w: &mut Writer,
        run: &mut Option<Run>,
        chunks: &mut Vec<Chunk>,
        payload: &mut usize,
    ) -> Halves {
        let window = self.config.reliable_window as u64;
        // A message's fragments leave in packets of their own: one loss then
        // costs one fragment, which its group's repair can rebuild.
        let mut fragment_of: Option<(u8, u64)> = None;
        let mut halves = Halves::None;
        self.outbox.fill(
            now,
            window,
            &mut self.events,
            |c, data, frag_count, in_halves| {
                // Nor does a first half follow a second: each message in
                // halves is a group of its own, which one repair rebuilds.
                if fragment_of == Some((c.channel, c.seq))
                    || (in_halves && c.frag == 0 && halves == Halves::Second)
                {
                    return false;
                }
                if !write_chunk(w, run, c, data, frag_count) {
                    return false;
                }
                if frag_count > 1 {
                    fragment_of = Some((c.channel, c.seq));
                }
                // A message cut in halves for repair, not one fragmented
                // for size (their groups and copies stay as they were).
                if in_halves {
                    halves = if c.frag == 0 {
                        Halves::First
                    } else {
                        Halves::Second
                    };
                }
                *payload += data.len();
                chunks.push(c);
                true
            },
        );
        halves
    }
}
