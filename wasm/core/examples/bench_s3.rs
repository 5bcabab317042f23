//! Scenario S3: CPU cost of the core per reliable message — send, transmit,
//! receive, deliver and acknowledge — with client and server in one thread
//! and datagrams handed across directly (no simulator, no sockets).
//!
//! `cargo run --release --example bench_s3 -- [messages] [size] [per_tick]`
//! prints one JSON line: {"messages":…, "ns_per_message":…, …}. The same
//! loop in wasm: `s3_core`.

use std::time::Instant;

#[path = "shared/s3_loop.rs"]
mod s3_loop;

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let messages = args.first().copied().unwrap_or(1_000_000);
    let size = args.get(1).copied().unwrap_or(100) as usize;
    let per_tick = args.get(2).copied().unwrap_or(1).max(1);
    let mut s3 = s3_loop::S3::connected();
    let start = Instant::now();
    let r = s3.run(messages, size, per_tick);
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "{{\"impl\":\"native\",\"messages\":{},\"size\":{},\"per_tick\":{},\"seconds\":{:.4},\"ns_per_message\":{:.1},\"messages_per_sec\":{:.0},\"datagrams\":{},\"wire_bytes_per_payload_byte\":{:.4}}}",
        r.delivered,
        size,
        per_tick,
        seconds,
        seconds * 1e9 / r.delivered as f64,
        r.delivered as f64 / seconds,
        r.datagrams,
        r.wire_bytes as f64 / (r.delivered as f64 * size as f64)
    );
}
