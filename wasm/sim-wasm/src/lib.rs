//! wasm-bindgen bindings of `ricochet-sim`'s network simulator for the
//! TypeScript SDK's `@ricochet/sdk/simulator` entry (its `src/simulator.ts`
//! is the only caller). A module of its own, so that the production modules
//! built from `ricochet-wasm` carry no simulator.
//!
//! Bytes cross the boundary as in `ricochet-wasm`: through a buffer the
//! object owns, viewed from JS (`ioReserve` / `outPtr` + length). Time is a
//! JS number of microseconds.

// One copy of the boundary helpers for both bindings crates; a dependency on
// ricochet-wasm would link its exports into the simulator's module.
extern crate alloc;

#[path = "../../wasm/src/boundary.rs"]
mod boundary;
mod link;

pub(crate) use boundary::{deadline, micros, Scratch};

pub use link::Link;
