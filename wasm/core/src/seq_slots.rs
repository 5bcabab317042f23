//! `SeqSlots<V>`: values keyed by sequence number, direct-addressed — key
//! `k` lives in slot `k mod capacity` of a power-of-two table. The receive
//! windows (`recv_channel`) keep every reliable key within
//! `[next, next + capacity)`, so keys never share a slot and each operation
//! is O(1) in whatever order a peer sends; a key beyond the table doubles it
//! (re-placing the entries) until it fits. Unreliable reassemblies use a
//! table of at most `limit` slots where a newer key evicts an older one in
//! its slot.
//!
//! Why not `BTreeMap`: its code was ~3.9 KB gzip of the browser's client
//! module (docs/size.md), and a sorted `Vec` would cost O(n) per insert under
//! a peer's reverse-order sends. The table's memory depends on the key span,
//! not the entry count, so `bytes()` reports it and the receive budget
//! charges it; an emptied table frees its memory.

use crate::prelude::*;

pub(crate) struct SeqSlots<V> {
    slots: Vec<Option<(u64, V)>>,
    len: usize,
}

impl<V> Default for SeqSlots<V> {
    fn default() -> Self {
        SeqSlots {
            slots: Vec::new(),
            len: 0,
        }
    }
}

impl<V> SeqSlots<V> {
    pub const SLOT_BYTES: usize = core::mem::size_of::<Option<(u64, V)>>();

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Memory the table holds (charged to the receive budget).
    pub fn bytes(&self) -> usize {
        self.slots.len() * Self::SLOT_BYTES
    }

    /// Slots in a table of at least `span` (a power of two, at least one).
    fn cap_for(span: u64) -> usize {
        span.max(1).next_power_of_two() as usize
    }

    /// Bytes `bytes()` would grow by for a table of at least `span` slots.
    pub fn growth(&self, span: u64) -> usize {
        Self::cap_for(span).saturating_sub(self.slots.len()) * Self::SLOT_BYTES
    }

    fn at(&self, k: u64) -> usize {
        // An empty table: `len() - 1` wraps, `get` then finds nothing.
        (k as usize) & self.slots.len().wrapping_sub(1)
    }

    pub fn get(&self, k: u64) -> Option<&V> {
        match self.slots.get(self.at(k))? {
            Some((s, v)) if *s == k => Some(v),
            _ => None,
        }
    }

    pub fn get_mut(&mut self, k: u64) -> Option<&mut V> {
        let i = self.at(k);
        match self.slots.get_mut(i)? {
            Some((s, v)) if *s == k => Some(v),
            _ => None,
        }
    }

    pub fn contains(&self, k: u64) -> bool {
        self.get(k).is_some()
    }

    pub fn remove(&mut self, k: u64) -> Option<V> {
        let i = self.at(k);
        let slot = self.slots.get_mut(i)?;
        if slot.as_ref().is_none_or(|(s, _)| *s != k) {
            return None;
        }
        let (_, v) = slot.take()?;
        self.len -= 1;
        if self.len == 0 {
            self.slots = Vec::new();
        }
        Some(v)
    }

    /// Places `v` at `k` in a table of at least `span` slots (reliable
    /// windows: `k - next + 1`, so every key fits without sharing). Returns
    /// what the slot held before: `k`'s old value or, in a table already at
    /// its span, another key's entry (the caller decides which survives).
    pub fn insert(&mut self, span: u64, k: u64, v: V) -> Option<(u64, V)> {
        let want = Self::cap_for(span);
        if want > self.slots.len() {
            self.grow(want);
        }
        let i = self.at(k);
        let old = self.slots[i].replace((k, v));
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    /// Another key that would share `k`'s slot in a table of `cap` slots.
    pub fn rival(&self, k: u64, cap: u64) -> Option<u64> {
        let mut keys = self.slots.iter().flatten().map(|(s, _)| *s);
        keys.find(|s| *s != k && (s ^ k) & (cap - 1) == 0)
    }

    /// The smallest table, from the current one up to `limit` slots, in
    /// which no other key shares `k`'s slot (`limit` if none is).
    pub fn span_for(&self, k: u64, limit: u64) -> u64 {
        let mut cap = (self.slots.len() as u64).max(1);
        while cap < limit && self.rival(k, cap).is_some() {
            cap *= 2;
        }
        cap
    }

    /// Doubles the table until it has `cap` slots: an entry in slot `i` of a
    /// table of `n` stays there or moves to `i + n` (its key's next bit).
    #[inline(never)]
    fn grow(&mut self, cap: usize) {
        if self.slots.is_empty() {
            self.slots.push(None);
        }
        while self.slots.len() < cap {
            let n = self.slots.len();
            self.slots.resize_with(2 * n, || None);
            for i in 0..n {
                if self.slots[i]
                    .as_ref()
                    .is_some_and(|(k, _)| *k as usize & n != 0)
                {
                    self.slots.swap(i, i + n);
                }
            }
        }
    }

    /// The smallest key (a scan: used only on small unreliable tables).
    pub fn min_key(&self) -> Option<u64> {
        self.slots.iter().flatten().map(|(k, _)| *k).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_within_the_span_never_share_a_slot() {
        let mut t: SeqSlots<u32> = SeqSlots::default();
        let next = 1_000_000u64;
        // Reverse order, as a hostile peer might send.
        for k in (next..next + 300).rev() {
            assert!(t.insert(k - next + 1, k, k as u32).is_none());
        }
        assert_eq!(t.len(), 300);
        assert_eq!(t.bytes(), 512 * SeqSlots::<u32>::SLOT_BYTES);
        for k in next..next + 300 {
            assert_eq!(t.get(k), Some(&(k as u32)));
            assert!(!t.contains(k + 512));
        }
        for k in next..next + 300 {
            assert_eq!(t.remove(k), Some(k as u32));
            assert_eq!(t.remove(k), None);
        }
        assert!(t.is_empty());
        assert_eq!(t.bytes(), 0, "an emptied table frees its memory");
    }

    #[test]
    fn a_full_small_table_reports_the_key_it_displaces() {
        let mut t: SeqSlots<u8> = SeqSlots::default();
        assert!(t.insert(4, 7, 1).is_none());
        assert_eq!(t.rival(11, 4), Some(7));
        assert_eq!(t.insert(4, 11, 2), Some((7, 1)));
        assert_eq!(t.get(7), None);
        assert_eq!(t.get(11), Some(&2));
        assert_eq!(t.len(), 1);
        assert_eq!(t.min_key(), Some(11));
    }

    #[test]
    fn span_for_doubles_until_the_key_has_its_own_slot() {
        let mut t: SeqSlots<u8> = SeqSlots::default();
        assert_eq!(t.span_for(5, 32), 1);
        t.insert(1, 5, 0);
        assert_eq!(t.span_for(5, 32), 1, "its own key is no conflict");
        assert_eq!(t.span_for(6, 32), 2);
        assert_eq!(t.span_for(13, 32), 16);
        assert_eq!(t.span_for(37, 32), 32, "5 and 37 share a slot of 32");
        t.insert(16, 13, 1);
        assert_eq!((t.get(5), t.get(13)), (Some(&0), Some(&1)));
    }

    #[test]
    fn growth_counts_only_new_slots() {
        let mut t: SeqSlots<u8> = SeqSlots::default();
        let slot = SeqSlots::<u8>::SLOT_BYTES;
        assert_eq!(t.growth(3), 4 * slot);
        t.insert(3, 2, 0);
        assert_eq!(t.growth(3), 0);
        assert_eq!(t.growth(5), 4 * slot);
    }
}
