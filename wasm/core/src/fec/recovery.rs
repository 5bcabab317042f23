//! Receiver side: keeps recent packet bodies while the peer sends repair,
//! holds repairs still missing more than one member, and rebuilds a lost
//! packet once it is the only one missing from a repair's group.

use crate::prelude::*;
use crate::ring::Ring;

use super::parity;

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
        let mut v = self.pool.pop().unwrap_or_default();
        v.clear();
        v.extend_from_slice(body);
        self.body_bytes += v.len();
        self.bodies.push_back((pn, v));
    }

    /// A REPAIR frame arrived protecting `first .. first + count`.
    pub fn on_repair(&mut self, now: u64, first: u64, count: u8, parity: &[u8]) {
        self.keep_until = Some(now + KEEP_AFTER_REPAIR_US);
        self.latest_group = Some((first, count));
        if self.pending.len() >= MAX_PENDING {
            if let Some(old) = self.pending.pop_front() {
                self.pool.push(old.parity);
            }
        }
        let mut v = self.pool.pop().unwrap_or_default();
        v.clear();
        v.extend_from_slice(parity);
        self.pending.push_back(PendingRepair {
            first,
            count,
            parity: v,
        });
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
    /// are dropped.
    pub fn recover(&mut self, have: impl Fn(u64) -> bool) -> Option<(u64, Vec<u8>)> {
        let mut i = 0;
        while i < self.pending.len() {
            let Some(r) = self.pending.get(i) else {
                break;
            };
            let mut missing = None;
            let mut n_missing = 0;
            let mut usable = true;
            for pn in r.first..r.first + r.count as u64 {
                if !have(pn) {
                    n_missing += 1;
                    missing = Some(pn);
                } else if self.body(pn).is_none() {
                    usable = false;
                }
            }
            match (usable, n_missing, missing) {
                (true, 1, Some(lost)) => {
                    let Some(r) = self.pending.remove(i) else {
                        break;
                    };
                    let mut p = r.parity;
                    let mut consistent = true;
                    for pn in r.first..r.first + r.count as u64 {
                        if pn != lost {
                            consistent &= self
                                .body(pn)
                                .is_some_and(|b| parity::remove_image(&mut p, b));
                        }
                    }
                    let body = if consistent {
                        parity::recovered_body(&p).map(|b| b.to_vec())
                    } else {
                        None
                    };
                    self.pool.push(p);
                    match body {
                        Some(b) => return Some((lost, b)),
                        None => self.rejected += 1,
                    }
                }
                (true, n, _) if n > 1 => i += 1,
                _ => {
                    if let Some(r) = self.pending.remove(i) {
                        self.pool.push(r.parity);
                    }
                }
            }
        }
        None
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
        rb.on_repair(0, 10, 3, &parity_of(&bodies));
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

    #[test]
    fn a_corrupted_member_makes_the_repair_refuse() {
        let mut rb = RecoveryBuffer::default();
        rb.on_repair(0, 0, 2, &parity_of(&[b"good", b"lost"]));
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
