//! Receiver side of packet acknowledgement: which packet numbers arrived,
//! when an ACK is owed, and how it is encoded.

use crate::prelude::*;
use crate::wire::{varint_len, Writer, FRAME_ACK, MAX_ACK_RANGES};

/// Ranges kept; older ones are forgotten (their packets count as duplicates
/// if they ever show up again, which is safe: the sender has long since
/// declared them lost and retransmitted their reliable data).
const MAX_TRACKED_RANGES: usize = 32;
/// Packets more than this far below the largest are refused as too old.
const MAX_PN_DISTANCE: u64 = 16_384;
/// ACKs that carry a range before it is left out: a range every one of
/// the last four ACKs reported reached the sender unless all four were
/// lost (6 in a million at 5 % loss); should it happen, the sender counts
/// those packets lost and resends their data, which costs bytes, not
/// correctness. Repeating every old gap in every ACK cost S1 at 5 % loss
/// about 30 bytes a message (issue 16).
const REPORTS_PER_RANGE: usize = 4;

#[derive(Clone, Debug, Default)]
pub struct ReceivedPackets {
    /// Ascending, disjoint, non-adjacent inclusive ranges.
    ranges: Vec<(u64, u64)>,
    /// Packet numbers below this are refused.
    floor: u64,
    largest_time: u64,
    /// Ack-eliciting packets received since the last ACK was sent.
    unacked_eliciting: u32,
    /// Something arrived since the last ACK (eliciting or not).
    ack_owed: bool,
    immediate: bool,
    /// A packet arrived out of order since the last ACK: one is owed at
    /// once, from the next packet that does not lead more of its message.
    reordered: bool,
    first_unacked_time: Option<u64>,
    first_pn: Option<u64>,
    unique: u64,
    /// When the last ack-eliciting packet arrived.
    last_eliciting_at: Option<u64>,
    /// The largest packet number at each of the last ACKs sent, newest
    /// last; ranges wholly below the oldest are no longer reported.
    reported_largest: [u64; REPORTS_PER_RANGE],
}

pub enum Insert {
    New,
    Duplicate,
}

impl ReceivedPackets {
    pub fn largest(&self) -> Option<u64> {
        self.ranges.last().map(|r| r.1)
    }

    /// True for a packet seen before, or too old to tell.
    pub fn is_duplicate(&self, pn: u64) -> bool {
        if pn < self.floor || self.largest().is_some_and(|l| pn + MAX_PN_DISTANCE < l) {
            return true;
        }
        let idx = self.ranges.partition_point(|r| r.1 < pn);
        self.ranges.get(idx).is_some_and(|r| r.0 <= pn)
    }

    /// A duplicate arrived: our ACK may have been lost, so owe one now.
    pub fn on_duplicate(&mut self, now: u64) {
        self.ack_now(now);
    }

    /// Owe an ACK at once (a duplicate, or a repair that could not rebuild
    /// a lost packet: the sender should learn of the loss without waiting).
    pub fn ack_now(&mut self, now: u64) {
        if self.ranges.is_empty() {
            return;
        }
        self.ack_owed = true;
        self.immediate = true;
        self.unacked_eliciting = self.unacked_eliciting.max(1);
        self.first_unacked_time.get_or_insert(now);
    }

    /// Record an arrival. Returns `Duplicate` for a packet seen before or too old.
    pub fn insert(&mut self, pn: u64, now: u64) -> Insert {
        if self.is_duplicate(pn) {
            return Insert::Duplicate;
        }
        let idx = self.ranges.partition_point(|r| r.1 < pn);
        let largest_before = self.largest();
        // Out of order (a gap below, or filling one) asks for an immediate ACK
        // so the sender detects loss without waiting for the ack delay
        // (`on_packet` says when).
        if largest_before.is_some_and(|l| pn != l + 1) {
            self.reordered = true;
        }
        let joins_prev = idx > 0 && self.ranges[idx - 1].1 + 1 == pn;
        let joins_next = idx < self.ranges.len() && self.ranges[idx].0 == pn + 1;
        match (joins_prev, joins_next) {
            (true, true) => {
                self.ranges[idx - 1].1 = self.ranges[idx].1;
                self.ranges.remove(idx);
            }
            (true, false) => self.ranges[idx - 1].1 = pn,
            (false, true) => self.ranges[idx].0 = pn,
            (false, false) => self.ranges.insert(idx, (pn, pn)),
        }
        if self.ranges.len() > MAX_TRACKED_RANGES {
            let dropped = self.ranges.remove(0);
            self.floor = dropped.1 + 1;
        }
        if largest_before.is_none_or(|l| pn > l) {
            self.largest_time = now;
        }
        self.first_pn = Some(self.first_pn.map_or(pn, |f| f.min(pn)));
        self.unique += 1;
        Insert::New
    }

    /// Note that the packet just inserted was ack-eliciting (or not).
    /// Packets that elicit nothing (pure ACKs) are recorded but never make
    /// an ACK owed: the peer does not track them. The `threshold`th
    /// ack-eliciting packet since the last ACK makes one due at once.
    ///
    /// Delaying an ACK pays when it can cover the next packet or ride on our
    /// own data. A sparse stream (nothing else arrived within the ACK delay)
    /// towards a `quiet` side (nothing of ours to ride on) gains neither,
    /// and the delay would only hold back the sender's loss detection: such
    /// a packet is acknowledged at once.
    ///
    /// A packet that `leads` (more of its message follows right behind)
    /// draws no ACK at once, not even for a gap: the ACK waits for the rest,
    /// so one ACK covers the message. Sent for the lead alone, it would leave
    /// the rest to the ACK delay and the sender's early resend would fire.
    pub fn on_packet(
        &mut self,
        now: u64,
        ack_eliciting: bool,
        threshold: u32,
        max_ack_delay: u64,
        quiet: bool,
        leads: bool,
    ) {
        if self.reordered && !leads {
            self.reordered = false;
            self.immediate = true;
        }
        if ack_eliciting {
            let sparse = self
                .last_eliciting_at
                .is_none_or(|t| now.saturating_sub(t) > max_ack_delay);
            self.last_eliciting_at = Some(now);
            self.ack_owed = true;
            self.unacked_eliciting += 1;
            if self.unacked_eliciting >= threshold.max(1) || (sparse && quiet && !leads) {
                self.immediate = true;
            }
            self.first_unacked_time.get_or_insert(now);
        }
    }

    /// When the delayed ACK is due, if one is owed for ack-eliciting packets.
    pub fn ack_deadline(&self, max_ack_delay: u64) -> Option<u64> {
        if self.unacked_eliciting == 0 {
            return None;
        }
        if self.immediate {
            return self.first_unacked_time.or(Some(0));
        }
        self.first_unacked_time.map(|t| t + max_ack_delay)
    }

    /// True if an ACK should go out now on its own.
    pub fn ack_due(&self, now: u64, max_ack_delay: u64) -> bool {
        self.ack_deadline(max_ack_delay).is_some_and(|d| d <= now)
    }

    /// True if there is anything to acknowledge (for piggybacking).
    pub fn ack_owed(&self) -> bool {
        self.ack_owed && !self.ranges.is_empty()
    }

    /// The ranges an ACK carries, newest first, as (gap, len) after the first
    /// range `(0, first_len)`. Every field stays within WIRE.md's 16-bit
    /// limits: a longer range is cut to its newest 65536 packets, and nothing
    /// older than a cut or a gap too wide to encode is reported.
    fn ack_fields(&self) -> Option<(u64, u64, impl Iterator<Item = (u64, u64)> + '_)> {
        const MAX: u64 = u16::MAX as u64;
        let &(lo, hi) = self.ranges.last()?;
        let first = (hi - lo).min(MAX);
        let mut prev_lo = hi - first;
        let mut stop = first < hi - lo;
        let reported_enough = self.reported_largest[0];
        let rest = self
            .ranges
            .iter()
            .rev()
            .skip(1)
            .take(MAX_ACK_RANGES)
            .map_while(move |&(l, h)| {
                let gap = prev_lo - h - 2;
                if stop || gap > MAX || h - l > MAX || h < reported_enough {
                    stop = true;
                    return None;
                }
                prev_lo = l;
                Some((gap, h - l))
            });
        Some((hi, first, rest))
    }

    /// Bytes the ACK frame would take now.
    pub fn ack_frame_len(&self, now: u64) -> usize {
        let Some((_, first, rest)) = self.ack_fields() else {
            return 0;
        };
        let mut n = 1 + 2 + varint_len(now.saturating_sub(self.largest_time)) + varint_len(first);
        let mut count = 0;
        for (gap, len) in rest {
            n += varint_len(gap) + varint_len(len);
            count += 1;
        }
        n + varint_len(count)
    }

    /// Write the ACK frame (largest first, QUIC-style gaps). Returns false and
    /// writes nothing if it does not fit. Call `on_ack_sent` once it leaves.
    pub fn encode_ack(&self, w: &mut Writer, now: u64) -> bool {
        let Some((hi, first, rest)) = self.ack_fields() else {
            return false;
        };
        if self.ack_frame_len(now) > w.remaining() {
            return false;
        }
        let ranges: Vec<(u64, u64)> = rest.collect();
        let mut ok = w.put_u8(FRAME_ACK)
            && w.put_u16(hi as u16)
            && w.put_varint(now.saturating_sub(self.largest_time))
            && w.put_varint(ranges.len() as u64)
            && w.put_varint(first);
        for (gap, len) in ranges {
            ok = ok && w.put_varint(gap) && w.put_varint(len);
        }
        ok
    }

    /// The ACK just encoded was sent: nothing is owed until more arrives.
    pub fn on_ack_sent(&mut self) {
        self.reported_largest.rotate_left(1);
        self.reported_largest[REPORTS_PER_RANGE - 1] = self.largest().unwrap_or(0);
        self.unacked_eliciting = 0;
        self.immediate = false;
        self.reordered = false;
        self.ack_owed = false;
        self.first_unacked_time = None;
    }

    /// Packets numbered from the first to the largest received (0 before one arrives).
    pub fn expected(&self) -> u64 {
        match (self.first_pn, self.largest()) {
            (Some(first), Some(largest)) => largest - first + 1,
            _ => 0,
        }
    }

    /// Fraction of packets the peer sent that never arrived, from gaps in
    /// packet numbers (0 before two packets), not counting `rebuilt` ones
    /// (recorded here but restored by FEC rather than received).
    pub fn loss_in(&self, rebuilt: u64) -> f64 {
        match (self.first_pn, self.largest()) {
            (Some(first), Some(largest)) if largest > first => {
                let expected = (largest - first + 1) as f64;
                (1.0 - self.unique.saturating_sub(rebuilt) as f64 / expected).max(0.0)
            }
            _ => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{decode_frame, AckRanges, Frame, Reader};

    fn ack_of(rp: &mut ReceivedPackets) -> Vec<(u64, u64)> {
        let mut buf = [0u8; 256];
        let mut w = Writer::new(&mut buf);
        assert!(rp.encode_ack(&mut w, 0));
        let n = w.len();
        let mut r = Reader::new(&buf[..n]);
        let Ok(Frame::Ack {
            largest,
            first_range,
            ranges,
            ..
        }) = decode_frame(&mut r)
        else {
            panic!("not an ack")
        };
        let hi = crate::wire::expand_u16(largest, rp.largest().unwrap());
        let mut out = vec![(hi - first_range, hi)];
        let mut lo = hi - first_range;
        for (gap, len) in AckRanges::new(ranges) {
            let h = lo - gap - 2;
            out.push((h - len, h));
            lo = h - len;
        }
        out
    }

    /// Receives packets 0..n in order, each ack-eliciting, at time 0.
    fn receive_in_order(n: u64, threshold: u32) -> ReceivedPackets {
        let mut rp = ReceivedPackets::default();
        for pn in 0..n {
            rp.insert(pn, 0);
            rp.on_packet(0, true, threshold, 40_000, false, false);
        }
        rp
    }

    #[test]
    fn by_default_the_second_eliciting_packet_makes_an_ack_due_at_once() {
        assert!(!receive_in_order(1, 2).ack_due(0, 40_000));
        assert!(receive_in_order(2, 2).ack_due(0, 40_000));
    }

    #[test]
    fn a_higher_threshold_lets_the_ack_wait_for_its_delay() {
        let rp = receive_in_order(3, 4);
        assert!(!rp.ack_due(0, 40_000));
        assert!(!rp.ack_due(39_999, 40_000));
        assert!(rp.ack_due(40_000, 40_000));
        assert!(receive_in_order(4, 4).ack_due(0, 40_000));
    }

    #[test]
    fn a_range_four_acks_have_carried_is_left_out_of_the_next() {
        let mut rp = ReceivedPackets::default();
        // The ACK's range count, checked against `ack_frame_len`.
        let ranges_in_ack = |rp: &ReceivedPackets| {
            let mut buf = [0u8; 256];
            let mut w = Writer::new(&mut buf);
            assert!(rp.encode_ack(&mut w, 0));
            let n = w.len();
            assert_eq!(rp.ack_frame_len(0), n);
            let mut r = crate::wire::Reader::new(&buf[..n]);
            match crate::wire::decode_frame(&mut r) {
                Ok(crate::wire::Frame::Ack { range_count, .. }) => range_count,
                other => panic!("{other:?}"),
            }
        };
        // Packets 0–9 with 5 missing: one gap, two ranges.
        for pn in (0..10).filter(|&pn| pn != 5) {
            rp.insert(pn, 0);
        }
        for _ in 0..4 {
            assert_eq!(ranges_in_ack(&rp), 1, "the older range goes along");
            rp.on_ack_sent();
            let next = rp.largest().unwrap() + 1;
            rp.insert(next, 0);
        }
        assert_eq!(ranges_in_ack(&rp), 0, "four ACKs carried it");
    }

    #[test]
    fn a_gap_makes_an_ack_due_at_once_whatever_the_threshold() {
        let mut rp = receive_in_order(1, 8);
        rp.insert(2, 0);
        rp.on_packet(0, true, 8, 40_000, false, false);
        assert!(rp.ack_due(0, 40_000));
    }

    #[test]
    fn ranges_merge_and_encode_largest_first() {
        let mut rp = ReceivedPackets::default();
        for pn in [0, 1, 2, 5, 6, 9, 4, 3] {
            rp.insert(pn, 0);
        }
        assert_eq!(ack_of(&mut rp), vec![(9, 9), (0, 6)]);
    }

    #[test]
    fn ack_fields_stay_within_16_bits() {
        let mut rp = ReceivedPackets::default();
        for pn in 0..70_000 {
            rp.insert(pn, 0);
        }
        rp.insert(70_002, 0);
        // The first range is 70_002 alone; the next is cut to 65_536 packets.
        assert_eq!(ack_of(&mut rp), vec![(70_002, 70_002)]);
        rp.insert(70_000, 0);
        rp.insert(70_001, 0);
        assert_eq!(ack_of(&mut rp), vec![(70_002 - 65_535, 70_002)]);
    }

    #[test]
    fn duplicates_are_reported() {
        let mut rp = ReceivedPackets::default();
        assert!(matches!(rp.insert(7, 0), Insert::New));
        assert!(matches!(rp.insert(7, 0), Insert::Duplicate));
    }

    #[test]
    fn loss_in_counts_gaps() {
        let mut rp = ReceivedPackets::default();
        for pn in (0..100).filter(|p| p % 10 != 0) {
            rp.insert(pn, 0);
        }
        assert!((rp.loss_in(0) - 10.0 / 99.0).abs() < 0.02);
        assert!((rp.loss_in(5) - 15.0 / 99.0).abs() < 0.02);
    }

    /// One ack-eliciting packet arriving at `now` after an ACK went out.
    fn arrive(rp: &mut ReceivedPackets, pn: u64, now: u64, quiet: bool) -> Option<u64> {
        rp.insert(pn, now);
        rp.on_packet(now, true, 2, 5_000, quiet, false);
        let due = rp.ack_deadline(5_000);
        rp.on_ack_sent();
        due
    }

    #[test]
    fn a_sparse_stream_to_a_quiet_side_is_acked_at_once() {
        let mut rp = ReceivedPackets::default();
        arrive(&mut rp, 0, 0, true);
        assert_eq!(
            arrive(&mut rp, 1, 16_667, true),
            Some(16_667),
            "a 60 Hz stream, nothing of ours to ride on"
        );
    }

    #[test]
    fn an_ack_waits_to_ride_on_our_own_data_or_to_cover_the_next_packet() {
        let mut rp = ReceivedPackets::default();
        arrive(&mut rp, 0, 0, false);
        assert_eq!(
            arrive(&mut rp, 1, 16_667, false),
            Some(21_667),
            "we send too: the ACK may ride on our data"
        );
        assert_eq!(
            arrive(&mut rp, 2, 18_000, true),
            Some(23_000),
            "packets 1.3 ms apart: the next may share the ACK"
        );
    }

    #[test]
    fn a_gap_seen_by_a_leading_fragment_is_acked_with_the_rest_of_its_message() {
        let mut rp = ReceivedPackets::default();
        for pn in 0..3 {
            rp.insert(pn, 0);
            rp.on_packet(0, true, 2, 5_000, false, false);
            rp.on_ack_sent();
        }
        // Packet 3 was lost; 4 carries the first half of a message.
        rp.insert(4, 16_667);
        rp.on_packet(16_667, true, 8, 5_000, false, true);
        assert_eq!(
            rp.ack_deadline(5_000),
            Some(21_667),
            "no ACK for the lead alone"
        );
        rp.insert(5, 16_700);
        rp.on_packet(16_700, true, 8, 5_000, false, false);
        assert_eq!(
            rp.ack_deadline(5_000),
            Some(16_667),
            "the rest arrived: the gap is reported at once"
        );
    }
}
