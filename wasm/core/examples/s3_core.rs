//! Scenario S3's loop (`bench_s3`) compiled to wasm with nothing around it:
//! the core's own cost per message in a wasm engine, apart from the bindings
//! and JavaScript that bench/s3-loop.mjs adds. A cdylib with plain exports
//! (no wasm-bindgen, no imports), built by bench/s3-core.mjs:
//!
//!   s3_connect()                        handshake (not timed)
//!   s3_run(messages, size, per_tick)    the loop; returns messages delivered
//!   s3_datagrams(), s3_wire_bytes()     what that run moved

use std::cell::RefCell;

#[path = "shared/s3_loop.rs"]
mod s3_loop;

thread_local! {
    static STATE: RefCell<(Option<s3_loop::S3>, [f64; 2])> = const { RefCell::new((None, [0.0; 2])) };
}

#[no_mangle]
pub extern "C" fn s3_connect() {
    STATE.with_borrow_mut(|s| s.0 = Some(s3_loop::S3::connected()));
}

#[no_mangle]
pub extern "C" fn s3_run(messages: u32, size: u32, per_tick: u32) -> u32 {
    STATE.with_borrow_mut(|(s3, moved)| {
        let s3 = s3.get_or_insert_with(s3_loop::S3::connected);
        let c = s3.run(messages.into(), size as usize, per_tick.max(1).into());
        *moved = [c.datagrams as f64, c.wire_bytes as f64];
        c.delivered as u32
    })
}

#[no_mangle]
pub extern "C" fn s3_datagrams() -> f64 {
    STATE.with_borrow(|s| s.1[0])
}

#[no_mangle]
pub extern "C" fn s3_wire_bytes() -> f64 {
    STATE.with_borrow(|s| s.1[1])
}
