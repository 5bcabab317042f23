//! Receiver side: keeps recent packet bodies while the peer sends repair,
//! holds repairs still missing more than one member, and rebuilds a lost
//! packet once it is the only one missing from a repair's group, one of two
//! missing when a second repair of the group has another power, or one of
//! three missing, alone in its index mod 3, when the group's repairs of all
//! three powers are here.

use crate::prelude::*;
use crate::ring::Ring;

use super::parity::{self, POWERS};

/// Bodies kept for recovery (at 60 packets/s, about a second).
const MAX_BODIES: usize = 64;
/// Bytes of bodies kept at most, whatever the datagram size.
const MAX_BODY_BYTES: usize = 96 << 10;
/// Repairs waiting for a member (older ones are forgotten).
const MAX_PENDING: usize = 8;
/// Bodies are kept this long after the peer's last repair, µs.
const KEEP_AFTER_REPAIR_US: u64 = 5_000_000;

#[derive(Debug)]
struct PendingRepair {
    first: u64,
    count: u8,
    power: u8,
    parity: Vec<u8>,
}

#[derive(Debug, Default)]
pub struct RecoveryBuffer {
    keep_until: Option<u64>,
    bodies: Ring<(u64, Vec<u8>)>,
    body_bytes: usize,
    pending: Ring<PendingRepair>,
    pool: Vec<Vec<u8>>,
    /// Repairs whose rebuilt packet failed its check value or padding.
    pub rejected: u64,
    /// The group of the REPAIR frame in the packet being processed.
    pub(crate) latest_group: Option<(u64, u8)>,
}

impl RecoveryBuffer {
    /// True while bodies are worth keeping (the peer sent repair lately).
    /// Until then receiving costs nothing extra.
    pub fn keeping(&self, now: u64) -> bool {
        self.keep_until.is_some_and(|t| now < t)
    }

    /// True while some repair waits to be used (the common case is false).
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Keep a received packet's body (frames after the header).
    pub fn store(&mut self, now: u64, pn: u64, body: &[u8]) {
        if !self.keeping(now) || body.len() > MAX_BODY_BYTES {
            return;
        }
        while self.bodies.len() >= MAX_BODIES || self.body_bytes + body.len() > MAX_BODY_BYTES {
            let Some((_, old)) = self.bodies.pop_front() else {
                break;
            };
            self.body_bytes -= old.len();
            self.pool.push(old);
        }
        let mut v = self.buffer();
        v.extend_from_slice(body);
        self.body_bytes += v.len();
        self.bodies.push_back((pn, v));
    }

    /// A REPAIR frame of this power arrived protecting `first .. first + count`.
    pub fn on_repair(&mut self, now: u64, first: u64, count: u8, power: u8, parity: &[u8]) {
        self.keep_until = Some(now + KEEP_AFTER_REPAIR_US);
        self.latest_group = Some((first, count));
        if self.pending.len() >= MAX_PENDING {
            if let Some(old) = self.pending.pop_front() {
                self.pool.push(old.parity);
            }
        }
        let mut v = self.buffer();
        v.extend_from_slice(parity);
        self.pending.push_back(PendingRepair {
            first,
            count,
            power,
            parity: v,
        });
    }

    /// An empty buffer, reused from the pool when one is there.
    fn buffer(&mut self) -> Vec<u8> {
        let mut v = self.pool.pop().unwrap_or_default();
        v.clear();
        v
    }

    fn body(&self, pn: u64) -> Option<&[u8]> {
        self.bodies
            .iter()
            .rev()
            .find(|(p, _)| *p == pn)
            .map(|(_, b)| b.as_slice())
    }

    /// The next packet some repair can rebuild: its number and body (verified
    /// against the check value the sender put in the parity). `have(pn)` says whether
    /// the packet was already received (or is too old to matter). Repairs
    /// with nothing missing, or with a received member whose body is gone,
    /// are dropped. With two members missing, a second repair of the group
    /// (another power) rebuilds the later one and is used up; the first
    /// stays for the other member, which the caller's next call rebuilds
    /// once the rebuilt one is stored. With three missing, the group's
    /// repairs of all three powers rebuild the last whose index differs mod
    /// 3 from the others' (any of three in a group of up to three), one of
    /// them is used up, and the other two go on as for two.
    pub fn recover(&mut self, have: impl Fn(u64) -> bool) -> Option<(u64, Vec<u8>)> {
        let mut i = 0;
        while i < self.pending.len() {
            let Some(r) = self.pending.get(i) else {
                break;
            };
            let mut lost = [0u64; 3];
            let mut n_missing = 0;
            let mut usable = true;
            for pn in r.first..r.first + r.count as u64 {
                if !have(pn) {
                    if n_missing < 3 {
                        lost[n_missing] = pn;
                    }
                    n_missing += 1;
                } else if self.body(pn).is_none() {
                    usable = false;
                }
            }
            match (usable, n_missing) {
                (true, 1) => {
                    let Some(r) = self.pending.remove(i) else {
                        break;
                    };
                    let mut p = r.parity;
                    let body = self.solve_one(&mut p, r.first, r.count, r.power, lost[0]);
                    self.pool.push(p);
                    match body {
                        Some(b) => return Some((lost[0], b)),
                        None => self.rejected += 1,
                    }
                }
                (true, 2 | 3) => {
                    let solved = if n_missing == 2 {
                        self.solve_two(i, [lost[0], lost[1]])
                            .map(|r| r.map(|b| (lost[1], b)))
                    } else {
                        self.solve_three(i, lost)
                    };
                    match solved {
                        Some(Ok(rebuilt)) => return Some(rebuilt),
                        Some(Err(())) => {
                            // A repair was used up, maybe one before `i`: look again.
                            self.rejected += 1;
                            i = 0;
                        }
                        None => i += 1,
                    }
                }
                (true, n) if n > 3 => i += 1,
                _ => {
                    if let Some(r) = self.pending.remove(i) {
                        self.pool.push(r.parity);
                    }
                }
            }
        }
        None
    }

    /// Remove from `parity` (a repair of `power` over `first .. first +
    /// count`) every member but those in `lost`: false if one is inconsistent.
    fn remove_known(
        &self,
        parity: &mut [u8],
        first: u64,
        count: u8,
        power: u8,
        lost: &[u64],
    ) -> bool {
        (first..first + count as u64)
            .filter(|pn| !lost.contains(pn))
            .all(|pn| {
                let at = parity::member_power(power, pn - first);
                self.body(pn)
                    .is_some_and(|b| parity::remove_scaled(parity, b, at))
            })
    }

    /// The body of `lost`, the one member of the group missing.
    fn solve_one(
        &self,
        p: &mut [u8],
        first: u64,
        count: u8,
        power: u8,
        lost: u64,
    ) -> Option<Vec<u8>> {
        if !self.remove_known(p, first, count, power, &[lost]) {
            return None;
        }
        // p = ω^(power·j) × the image: multiply by the inverse.
        let at = parity::member_power(power, lost - first);
        parity::scale(p, (parity::POWERS - at) % parity::POWERS);
        parity::recovered_body(p).map(|b| b.to_vec())
    }

    /// Members `lost[0]` and `lost[1]` of pending repair `i`'s group are
    /// missing: with another repair of the group whose power separates them,
    /// the body of `lost[1]` (Err if it fails its check; that repair is used
    /// up either way), or None when there is no such repair.
    fn solve_two(&mut self, i: usize, lost: [u64; 2]) -> Option<Result<Vec<u8>, ()>> {
        let r = self.pending.get(i)?;
        let (first, count, pa) = (r.first, r.count, r.power);
        let (j1, j2) = (lost[0] - first, lost[1] - first);
        let k = (0..self.pending.len()).find(|&k| {
            self.pending.get(k).is_some_and(|o| {
                (o.first, o.count, o.parity.len()) == (first, count, r.parity.len())
                    && !((o.power as u64 + 3 - pa as u64) * (j2 - j1)).is_multiple_of(3)
            })
        })?;
        let mut r1 = self.pool.pop().unwrap_or_default();
        r1.clear();
        r1.extend_from_slice(&r.parity);
        let other = self.pending.remove(k)?;
        let (pb, mut r2) = (other.power, other.parity);
        let mut body = None;
        if self.remove_known(&mut r1, first, count, pa, &lost)
            && self.remove_known(&mut r2, first, count, pb, &lost)
        {
            // r1 = ω^a1·X + ω^b1·Y, r2 = ω^a2·X + ω^b2·Y, so
            // ω^a2·r1 + ω^a1·r2 = (ω^(a2+b1) + ω^(a1+b2))·Y, and the sum of
            // two different powers of ω is the third, ω^−(a1+a2+b1+b2).
            let m = parity::member_power;
            let (a1, b1, a2, b2) = (m(pa, j1), m(pa, j2), m(pb, j1), m(pb, j2));
            parity::scale(&mut r1, a2);
            parity::add_scaled_image(&mut r1, &r2, a1);
            parity::scale(&mut r1, (a1 + a2 + b1 + b2) % parity::POWERS);
            body = parity::recovered_body(&r1).map(|b| b.to_vec());
        }
        self.pool.push(r1);
        self.pool.push(r2);
        Some(body.ok_or(()))
    }

    /// Members `lost` of pending repair `i`'s group are missing: with the
    /// group's repairs of all three powers, the last of them whose index
    /// differs mod 3 from the other two (all three, in a group of up to
    /// three) and its body, or Err if that fails its check or a received
    /// member does not fit the parity; one of the three repairs is used up
    /// either way (the other two go on for two missing). None when no
    /// member's residue is its own, or a power is not here.
    fn solve_three(&mut self, i: usize, lost: [u64; 3]) -> Option<Result<(u64, Vec<u8>), ()>> {
        let r = self.pending.get(i)?;
        let (first, count, len) = (r.first, r.count, r.parity.len());
        let residue = |pn: u64| (pn - first) % POWERS as u64;
        let target = lost
            .into_iter()
            .rev()
            .find(|&pn| lost.iter().filter(|&&o| residue(o) == residue(pn)).count() == 1)?;
        let j = residue(target);
        // With R_p the repair of power p, Σ_p ω^(−p·j)·R_p sums every member
        // m times Σ_p ω^(p·(m − j)): 1 when m ≡ j (mod 3), 1 + ω + ω² = 0
        // otherwise. So it is the image of the target plus those of the
        // received members of its residue, which come off. One repair of
        // each power (a second of one power would cancel the first).
        let mut x = self.buffer();
        x.resize(len, 0);
        let (mut seen, mut used) = (0u8, 0);
        for k in 0..self.pending.len() {
            if let Some(o) = self.pending.get(k) {
                let bit = 1 << o.power;
                if (o.first, o.count, o.parity.len()) == (first, count, len) && seen & bit == 0 {
                    seen |= bit;
                    used = k;
                    let undo = (POWERS - parity::member_power(o.power, j)) % POWERS;
                    parity::add_scaled_image(&mut x, &o.parity, undo);
                }
            }
        }
        if seen != 0b111 {
            self.pool.push(x);
            return None;
        }
        let known = (first..first + count as u64)
            .filter(|&pn| residue(pn) == j && pn != target)
            .all(|pn| {
                self.body(pn)
                    .is_some_and(|b| parity::remove_scaled(&mut x, b, 0))
            });
        let body = if known {
            parity::recovered_body(&x).map(|b| (target, b.to_vec()))
        } else {
            None
        };
        if let Some(r) = self.pending.remove(used) {
            self.pool.push(r.parity);
        }
        self.pool.push(x);
        Some(body.ok_or(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parity_of(bodies: &[&[u8]]) -> Vec<u8> {
        let mut p = Vec::new();
        for b in bodies {
            parity::xor_image(&mut p, b);
        }
        p
    }

    #[test]
    fn the_single_missing_member_is_rebuilt_once_the_others_arrive() {
        let mut rb = RecoveryBuffer::default();
        let bodies: [&[u8]; 3] = [b"zero", b"one", b"two"];
        rb.on_repair(0, 10, 3, 0, &parity_of(&bodies));
        // 11 and 12 are both missing: nothing yet.
        rb.store(0, 10, bodies[0]);
        assert_eq!(rb.recover(|pn| pn == 10), None);
        rb.store(0, 12, bodies[2]);
        assert_eq!(
            rb.recover(|pn| pn == 10 || pn == 12),
            Some((11, b"one".to_vec()))
        );
        assert_eq!(rb.recover(|_| true), None, "the repair was used up");
    }

    fn powered(bodies: &[&[u8]], power: u8) -> Vec<u8> {
        let mut p = Vec::new();
        for (i, b) in bodies.iter().enumerate() {
            parity::add_images(&mut [(&mut p, parity::member_power(power, i as u64))], b);
        }
        p
    }

    /// A buffer holding the repairs of `powers`, in that order, over
    /// `bodies` numbered from `first`, and none of the bodies.
    fn repaired(
        first: u64,
        bodies: &[&[u8]],
        powers: impl IntoIterator<Item = u8>,
    ) -> RecoveryBuffer {
        let mut rb = RecoveryBuffer::default();
        for power in powers {
            rb.on_repair(0, first, bodies.len() as u8, power, &powered(bodies, power));
        }
        rb
    }

    #[test]
    fn one_repair_of_any_power_rebuilds_any_single_member() {
        let bodies: [&[u8]; 3] = [b"zero", b"one, longer", b"2"];
        for power in 0..3 {
            for lost in 0..3u64 {
                let mut rb = RecoveryBuffer::default();
                rb.on_repair(0, 10, 3, power, &powered(&bodies, power));
                for (i, b) in bodies.iter().enumerate() {
                    if i as u64 != lost {
                        rb.store(0, 10 + i as u64, b);
                    }
                }
                let got = rb.recover(|pn| pn != 10 + lost);
                assert_eq!(
                    got,
                    Some((10 + lost, bodies[lost as usize].to_vec())),
                    "power {power}"
                );
            }
        }
    }

    #[test]
    fn two_missing_members_of_a_group_of_three_come_back_from_two_powers() {
        let bodies: [&[u8]; 3] = [b"zero", b"one, longer", b"2"];
        for (pa, pb) in [(0, 1), (0, 2), (1, 2), (2, 0)] {
            for (j1, j2) in [(0u64, 1u64), (0, 2), (1, 2)] {
                let mut rb = RecoveryBuffer::default();
                rb.on_repair(0, 20, 3, pa, &powered(&bodies, pa));
                rb.on_repair(0, 20, 3, pb, &powered(&bodies, pb));
                let kept = 3 - j1 - j2;
                rb.store(0, 20 + kept, bodies[kept as usize]);
                // The later one first, then the other from the repair kept.
                let second = rb.recover(|pn| pn == 20 + kept);
                assert_eq!(
                    second,
                    Some((20 + j2, bodies[j2 as usize].to_vec())),
                    "{pa} {pb} {j1} {j2}"
                );
                rb.store(0, 20 + j2, bodies[j2 as usize]);
                let first = rb.recover(|pn| pn == 20 + kept || pn == 20 + j2);
                assert_eq!(
                    first,
                    Some((20 + j1, bodies[j1 as usize].to_vec())),
                    "{pa} {pb} {j1} {j2}"
                );
                assert_eq!(rb.rejected, 0);
            }
        }
    }

    #[test]
    fn three_missing_members_of_a_group_of_three_come_back_from_three_powers() {
        let bodies: [&[u8]; 3] = [b"zero", b"one, longer", b"2"];
        for order in [[0, 1, 2], [2, 0, 1], [1, 2, 0], [2, 1, 0]] {
            let mut rb = repaired(30, &bodies, order);
            // Nothing of the group arrived: the last member first, then the
            // other two from the two repairs left, as for two missing.
            let mut have = Vec::new();
            for j in [2u64, 1, 0] {
                let got = rb.recover(|pn| have.contains(&pn));
                assert_eq!(
                    got,
                    Some((30 + j, bodies[j as usize].to_vec())),
                    "{order:?}"
                );
                rb.store(0, 30 + j, bodies[j as usize]);
                have.push(30 + j);
            }
            assert_eq!(rb.rejected, 0);
            assert_eq!(
                rb.recover(|_| true),
                None,
                "every repair used up or dropped"
            );
        }
    }

    #[test]
    fn of_three_missing_the_one_alone_in_its_residue_comes_back() {
        // Members 0 and 3 of a group of four enter every power alike
        // (ω³ = 1): with 0, 1 and 3 missing, the three repairs rebuild 1
        // (the only one of its residue) but cannot tell 0 from 3.
        let bodies: [&[u8]; 4] = [b"zero", b"one", b"two", b"three"];
        let mut rb = repaired(40, &bodies, 0..3);
        rb.store(0, 42, bodies[2]);
        assert_eq!(rb.recover(|pn| pn == 42), Some((41, bodies[1].to_vec())));
        rb.store(0, 41, bodies[1]);
        assert_eq!(rb.recover(|pn| pn == 41 || pn == 42), None);
        assert_eq!(rb.rejected, 0);
        // Once 0 arrives, 3 is alone.
        rb.store(0, 40, bodies[0]);
        assert_eq!(rb.recover(|pn| pn != 43), Some((43, bodies[3].to_vec())));
    }

    #[test]
    fn three_missing_of_a_larger_group_come_back_past_a_received_member_of_their_residue() {
        // Group of four, 1, 2 and 3 missing: 3's sum over the powers also
        // holds member 0 (same residue), which is taken off.
        let bodies: [&[u8]; 4] = [b"zero, the longest", b"one", b"two", b"three"];
        let mut rb = repaired(60, &bodies, [2, 0, 1]);
        rb.store(0, 60, bodies[0]);
        let mut have = vec![60];
        for j in [3u64, 2, 1] {
            let got = rb.recover(|pn| have.contains(&pn));
            assert_eq!(got, Some((60 + j, bodies[j as usize].to_vec())));
            rb.store(0, 60 + j, bodies[j as usize]);
            have.push(60 + j);
        }
        assert_eq!(rb.rejected, 0);
    }

    #[test]
    fn a_received_member_longer_than_the_repairs_is_refused() {
        let bodies: [&[u8]; 4] = [b"0", b"one", b"two", b"three"];
        let mut rb = repaired(70, &bodies, 0..3);
        // Member 0 as stored does not fit the parity: nothing is rebuilt.
        rb.store(0, 70, &[7u8; 64]);
        assert_eq!(rb.recover(|pn| pn == 70), None);
        assert_eq!(rb.rejected, 1);
    }

    #[test]
    fn a_forged_third_power_rebuilds_nothing_wrong() {
        let bodies: [&[u8]; 3] = [b"zero", b"one, longer", b"2"];
        let mut rb = RecoveryBuffer::default();
        rb.on_repair(0, 50, 3, 0, &powered(&bodies, 0));
        rb.on_repair(0, 50, 3, 1, &powered(&bodies, 1));
        let mut forged = powered(&bodies, 2);
        forged[9] ^= 0x40;
        rb.on_repair(0, 50, 3, 2, &forged);
        assert_eq!(rb.recover(|_| false), None);
        assert_eq!(rb.rejected, 1, "refused by the check value");
    }

    #[test]
    fn two_repairs_of_one_power_cannot_rebuild_two_members() {
        let bodies: [&[u8]; 2] = [b"first half", b"second half"];
        let mut rb = RecoveryBuffer::default();
        rb.on_repair(0, 0, 2, 1, &powered(&bodies, 1));
        rb.on_repair(0, 0, 2, 1, &powered(&bodies, 1));
        assert_eq!(rb.recover(|_| false), None);
        assert!(rb.has_pending(), "both wait for a member");
    }

    #[test]
    fn a_forged_repair_of_another_power_is_refused_and_the_honest_one_kept() {
        let bodies: [&[u8]; 2] = [b"first half", b"second half"];
        let honest = powered(&bodies, 0);
        let mut rb = RecoveryBuffer::default();
        rb.on_repair(0, 0, 2, 0, &honest);
        // Both halves missing; a peer's garbage "power 1" of the same length.
        let forged: Vec<u8> = (0..honest.len() as u8)
            .map(|x| x.wrapping_mul(37))
            .collect();
        rb.on_repair(0, 0, 2, 1, &forged);
        assert_eq!(rb.recover(|_| false), None);
        assert_eq!(rb.rejected, 1);
        // The honest repair still rebuilds a half once the other arrives.
        rb.store(0, 1, bodies[1]);
        assert_eq!(rb.recover(|pn| pn == 1), Some((0, bodies[0].to_vec())));
    }

    #[test]
    fn a_repair_of_another_length_is_no_partner() {
        let bodies: [&[u8]; 2] = [b"first half", b"second half"];
        let mut rb = RecoveryBuffer::default();
        rb.on_repair(0, 0, 2, 0, &powered(&bodies, 0));
        let mut short = powered(&bodies, 1);
        short.truncate(7);
        rb.on_repair(0, 0, 2, 1, &short);
        assert_eq!(rb.recover(|_| false), None);
        assert_eq!(rb.rejected, 0, "never combined");
    }

    #[test]
    fn a_corrupted_member_makes_the_repair_refuse() {
        let mut rb = RecoveryBuffer::default();
        rb.on_repair(0, 0, 2, 0, &parity_of(&[b"good", b"lost"]));
        rb.store(0, 0, b"gooD");
        assert_eq!(rb.recover(|pn| pn == 0), None);
        assert_eq!(rb.rejected, 1);
    }

    #[test]
    fn nothing_is_kept_before_the_peer_sends_repair() {
        let mut rb = RecoveryBuffer::default();
        rb.store(0, 0, b"body");
        assert!(rb.bodies.is_empty());
    }
}
