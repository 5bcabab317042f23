//! wasm-bindgen bindings of `ricochet-core` for the TypeScript SDK.
//!
//! Bytes cross the boundary through buffers owned by each object and viewed
//! from JS (`*_ptr()` + length): no allocation per datagram in the steady
//! state. Time is a JS number of microseconds. The SDK is the only caller; its
//! public types are written there, and its numeric codes (`src/wasm-codes.ts`)
//! are generated from this crate's sources by `sdk/scripts/gen-codes.mjs`.

// The client build (no `std` feature) is `no_std`: see `Cargo.toml`.
#![cfg_attr(not(feature = "std"), no_std)]

extern crate alloc;

/// What std's prelude gives and `no_std` does not.
mod prelude {
    #[cfg(feature = "debug")]
    pub(crate) use alloc::format;
    pub(crate) use alloc::string::String;
    pub(crate) use alloc::vec;
    pub(crate) use alloc::vec::Vec;
}

/// A panic (a bug: no input makes the core panic) traps, as std's handler
/// does with `panic = "abort"`, without formatting its message: formatting
/// keeps `core::fmt` in the module. JS sees a `RuntimeError: unreachable`.
#[cfg(all(not(feature = "std"), target_arch = "wasm32"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::arch::wasm32::unreachable()
}

#[cfg(all(not(feature = "std"), target_arch = "wasm32"))]
mod class_alloc;
#[cfg(all(not(feature = "std"), target_arch = "wasm32"))]
#[global_allocator]
static ALLOC: class_alloc::ClassAlloc = class_alloc::ClassAlloc::new();

mod batch;
mod boundary;
mod client;
mod config;
mod events;
#[cfg(feature = "server")]
mod server;

pub(crate) use boundary::{deadline, micros, Scratch};
pub use client::Client;
pub use config::ConfigInput;
#[cfg(feature = "server")]
pub use server::Server;

use wasm_bindgen::prelude::*;

/// Protocol version spoken by this build.
#[wasm_bindgen(js_name = protocolVersion)]
pub fn protocol_version() -> u32 {
    ricochet_core::wire::PROTOCOL_VERSION as u32
}

/// The 32-byte relay attestation key derived from a relay's connect-token
/// secret (see `ricochet_core::attest::attest_key`).
#[cfg(feature = "server")]
#[wasm_bindgen(js_name = relayAttestKey)]
pub fn relay_attest_key(token_secret: &str) -> Vec<u8> {
    ricochet_core::attest_key(token_secret.as_bytes()).to_vec()
}
