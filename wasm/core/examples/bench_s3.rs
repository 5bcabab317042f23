//! Scenario S3: CPU cost of the core per reliable message — send, transmit,
//! receive, deliver and acknowledge — with client and server in one thread
//! and datagrams handed across directly (no simulator, no sockets).
//!
//! `cargo run --release --example bench_s3 -- [messages] [size] [per_tick]`
//! prints one JSON line: {"messages":…, "ns_per_message":…, …}.

use std::time::Instant;

use ricochet_core::{Config, Connection, Event, Server, ServerConfig};

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let messages = args.first().copied().unwrap_or(1_000_000);
    let size = args.get(1).copied().unwrap_or(100) as usize;
    let per_tick = args.get(2).copied().unwrap_or(1).max(1);
    let r = run(messages, size, per_tick);
    println!(
        "{{\"impl\":\"native\",\"messages\":{},\"size\":{},\"per_tick\":{},\"seconds\":{:.4},\"ns_per_message\":{:.1},\"messages_per_sec\":{:.0},\"datagrams\":{},\"wire_bytes_per_payload_byte\":{:.4}}}",
        r.delivered,
        size,
        per_tick,
        r.seconds,
        r.seconds * 1e9 / r.delivered as f64,
        r.delivered as f64 / r.seconds,
        r.datagrams,
        r.wire_bytes as f64 / (r.delivered as f64 * size as f64)
    );
}

struct Result {
    delivered: u64,
    seconds: f64,
    datagrams: u64,
    wire_bytes: u64,
}

fn run(messages: u64, size: usize, per_tick: u64) -> Result {
    let mut client = Connection::client(
        Config::default(),
        0,
        &ricochet_sim::pair::insecure_seeded_entropy(1),
        b"",
    )
    .expect("valid config");
    let mut server = Server::new(
        ServerConfig::default(),
        &ricochet_sim::pair::TEST_SERVER_SECRET,
    )
    .expect("valid config");
    let mut buf = vec![0u8; 1500];
    let mut now = 0u64;
    // Handshake.
    while !client.is_connected() {
        now += 1_000;
        while let Some(n) = client.poll_transmit(now, &mut buf) {
            let _ = server.handle_datagram(now, &buf[..n]);
        }
        while let Some((id, ev)) = server.poll_event() {
            if let Event::ConnectRequest { .. } = ev {
                server.accept(now, id);
            }
        }
        while let Some((_, n)) = server.poll_transmit(now, &mut buf) {
            let _ = client.handle_datagram(now, &buf[..n]);
        }
        while client.poll_event().is_some() {}
    }
    let payload = vec![0xabu8; size];
    let (mut sent, mut delivered, mut acked, mut datagrams, mut wire_bytes) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    let start = Instant::now();
    // Each side drains as lib.rs's run loop says a host does after its
    // inputs: datagrams until None (handed to the other side), then events,
    // then the timer if it is due (and the datagrams that firing made).
    while acked < messages {
        now += 100;
        for _ in 0..per_tick.min(messages - sent) {
            if let Err(e) = client.send(now, 0, payload.clone()) {
                panic!("{e} after {sent} sent, {acked} acked: {:?}", client.stats());
            }
            sent += 1;
        }
        let mut client_due = true;
        while client_due {
            client_due = false;
            let mut fired = false;
            loop {
                while let Some(n) = client.poll_transmit(now, &mut buf) {
                    datagrams += 1;
                    wire_bytes += n as u64;
                    let _ = server.handle_datagram(now, &buf[..n]);
                }
                while let Some(ev) = client.poll_event() {
                    if let Event::Acked(_) = ev {
                        acked += 1;
                    }
                }
                if fired || client.poll_timeout().is_none_or(|t| t > now) {
                    break;
                }
                client.handle_timeout(now);
                fired = true;
            }
            let mut fired = false;
            loop {
                while let Some((_, n)) = server.poll_transmit(now, &mut buf) {
                    wire_bytes += n as u64;
                    let _ = client.handle_datagram(now, &buf[..n]);
                    client_due = true;
                }
                while let Some((_, ev)) = server.poll_event() {
                    if let Event::Message { .. } = ev {
                        delivered += 1;
                    }
                }
                if fired || server.poll_timeout().is_none_or(|t| t > now) {
                    break;
                }
                server.handle_timeout(now);
                fired = true;
            }
        }
    }
    assert_eq!(delivered, messages);
    Result {
        delivered,
        seconds: start.elapsed().as_secs_f64(),
        datagrams,
        wire_bytes,
    }
}
