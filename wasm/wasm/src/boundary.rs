//! What crosses the JS boundary, shared by both bindings crates (the
//! simulator's, wasm/sim-wasm, includes this file by path): time as a JS
//! number of microseconds, deadlines, and the byte buffer JS writes into.

use alloc::vec::Vec;

/// JS numbers carry microseconds; negative or NaN become 0.
pub(crate) fn micros(now: f64) -> u64 {
    if now.is_finite() && now > 0.0 {
        now as u64
    } else {
        0
    }
}

/// A deadline as a JS number, -1 for none.
pub(crate) fn deadline(t: Option<u64>) -> f64 {
    t.map_or(-1.0, |t| t as f64)
}

/// A growable byte buffer JS writes into through a view.
#[derive(Default, Clone)]
pub(crate) struct Scratch {
    pub bytes: Vec<u8>,
}

impl Scratch {
    /// Ensure room for `len` bytes and return the buffer's address.
    pub fn reserve(&mut self, len: usize) -> *mut u8 {
        if self.bytes.len() < len {
            self.bytes.resize(len, 0);
        }
        self.bytes.as_mut_ptr()
    }
    pub fn get(&self, len: usize) -> &[u8] {
        &self.bytes[..len.min(self.bytes.len())]
    }
    /// Writes `text` at the start of the buffer for JS to read; returns its
    /// length. (Unused by the simulator's bindings, which include this file.)
    #[allow(dead_code)]
    pub fn put(&mut self, text: &[u8]) -> usize {
        self.reserve(text.len());
        self.bytes[..text.len()].copy_from_slice(text);
        text.len()
    }
}
