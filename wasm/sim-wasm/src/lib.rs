//! wasm-bindgen bindings of `ricochet-sim`'s network simulator for the
//! TypeScript SDK's `@ricochet/sdk/simulator` entry (its `src/simulator.ts`
//! is the only caller). A module of its own, so that the production modules
//! built from `ricochet-wasm` carry no simulator.
//!
//! Bytes cross the boundary as in `ricochet-wasm`: through a buffer the
//! object owns, viewed from JS (`ioReserve` / `outPtr` + length). Time is a
//! JS number of microseconds.

mod link;

pub use link::Link;

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
#[derive(Default)]
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
}
