//! An ordered map for the server's tables (keyed by connection ID; the
//! receive windows use `seq_slots`). Each `BTreeMap<K, V>` instantiation costs
//! ~9 KB of wasm; this keeps one, `BTreeMap<u64, u32>` (key → slot), and
//! holds the values densely in a Vec, so only a little slot code is per
//! value type. Operations stay O(log n); iteration is in key order.

use crate::prelude::*;
use alloc::collections::BTreeMap;

pub(crate) struct SlabMap<K, V> {
    index: BTreeMap<u64, u32>,
    /// Values with their keys (to re-point the index after a swap_remove).
    slots: Vec<(K, V)>,
}

impl<K: Copy + Into<u64>, V> Default for SlabMap<K, V> {
    fn default() -> Self {
        SlabMap {
            index: BTreeMap::new(),
            slots: Vec::new(),
        }
    }
}

impl<K: Copy + Into<u64>, V> SlabMap<K, V> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where `k`'s value is. A map of one entry (one connection, one
    /// message in reassembly) needs no walk of the tree.
    fn slot(&self, k: K) -> Option<usize> {
        let k = k.into();
        match self.slots.as_slice() {
            [] => None,
            [(only, _)] => ((*only).into() == k).then_some(0),
            _ => self.index.get(&k).map(|&i| i as usize),
        }
    }

    pub fn get(&self, k: K) -> Option<&V> {
        let i = self.slot(k)?;
        self.slots.get(i).map(|(_, v)| v)
    }

    pub fn get_mut(&mut self, k: K) -> Option<&mut V> {
        let i = self.slot(k)?;
        self.slots.get_mut(i).map(|(_, v)| v)
    }

    /// Inserts or replaces; returns the value replaced.
    pub fn insert(&mut self, k: K, v: V) -> Option<V> {
        if let Some(i) = self.slot(k) {
            return Some(core::mem::replace(&mut self.slots[i].1, v));
        }
        self.index.insert(k.into(), self.slots.len() as u32);
        self.slots.push((k, v));
        None
    }

    pub fn remove(&mut self, k: K) -> Option<V> {
        if self.slots.is_empty() {
            return None;
        }
        let i = self.index.remove(&k.into())? as usize;
        let (_, v) = self.slots.swap_remove(i);
        if let Some(&(moved, _)) = self.slots.get(i) {
            self.index.insert(moved.into(), i as u32);
        }
        Some(v)
    }

    pub fn first_key(&self) -> Option<K> {
        let (_, &i) = self.index.first_key_value()?;
        Some(self.slots[i as usize].0)
    }

    pub fn pop_first(&mut self) -> Option<(K, V)> {
        let k = self.first_key()?;
        self.remove(k).map(|v| (k, v))
    }

    /// Entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (K, &V)> + '_ {
        self.index.values().map(move |&i| {
            let (k, v) = &self.slots[i as usize];
            (*k, v)
        })
    }

    /// Removes the entries `keep` says no to.
    pub fn retain(&mut self, mut keep: impl FnMut(&V) -> bool) {
        let doomed: Vec<K> = self
            .iter()
            .filter(|(_, v)| !keep(v))
            .map(|(k, _)| k)
            .collect();
        for k in doomed {
            self.remove(k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_as_an_ordered_map() {
        let mut m: SlabMap<u32, u32> = SlabMap::new();
        let mut model = BTreeMap::new();
        let mut x = 12345u32;
        for _ in 0..5000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let k = (x >> 16) % 64;
            match x % 4 {
                0 | 1 => assert_eq!(m.insert(k, x), model.insert(k, x)),
                2 => assert_eq!(m.remove(k), model.remove(&k)),
                _ => assert_eq!(m.pop_first(), model.pop_first()),
            }
            assert_eq!(m.len(), model.len());
            assert!(m
                .iter()
                .map(|(k, &v)| (k, v))
                .eq(model.iter().map(|(&k, &v)| (k, v))));
        }
        m.retain(|v| v % 2 == 0);
        model.retain(|_, v| *v % 2 == 0);
        assert!(m.iter().map(|(_, &v)| v).eq(model.into_values()));
    }
}
