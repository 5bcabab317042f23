//! Seeded fuzzing of whole conversations: two endpoints, random application
//! actions, and a hostile link that drops, duplicates, reorders, corrupts,
//! truncates and injects. (Coverage-guided versions live in wasm/fuzz.)

mod common;

use common::{check, payload};
use ricochet_core::rng::Rng;
use ricochet_core::{Config, Connection, Event, Server, ServerConfig};

struct Hostility {
    drop: f64,
    duplicate: f64,
    corrupt: f64,
    inject: f64,
}

/// Runs one conversation; returns reliable-ordered payload numbers delivered
/// to the server, in order, how many were sent, and the packets rebuilt by
/// FEC on either side (the lossy link turns FEC on, so REPAIR and
/// LOSS_REPORT frames cross the hostile link too).
fn converse(seed: u64, h: &Hostility) -> (Vec<u32>, u32, u64) {
    let mut rng = Rng::new(seed);
    let cfg = Config { max_message_size: 64 << 10, send_buffer_bytes: 1 << 20, recv_buffer_bytes: 256 << 10, ..Config::default() };
    let mut client = Connection::client(cfg.clone(), 0, seed, b"fuzz").unwrap();
    let mut server = Server::new(ServerConfig { connection: cfg.clone(), ..ServerConfig::default() }).unwrap();
    let mut in_flight: Vec<(u64, bool, Vec<u8>)> = Vec::new(); // (arrival, to_server, bytes)
    let mut buf = vec![0u8; 1500];
    let mut delivered = Vec::new();
    let mut sent_ordered = 0u32;
    let mut now = 0u64;
    for _ in 0..4_000 {
        now += 1_000 + rng.below(4_000);
        // Application actions.
        if client.is_connected() && rng.chance(0.6) {
            let ch = rng.below(4) as u8;
            let len = if rng.chance(0.05) { 8 + rng.below(20_000) as usize } else { 8 + rng.below(300) as usize };
            let n = if ch == 0 { sent_ordered } else { u32::MAX };
            if client.send(now, ch, payload(n, len)).is_ok() && ch == 0 {
                sent_ordered += 1;
            }
        }
        // Now and then the host moves the client onto a new path (resumption).
        if rng.chance(0.01) {
            client.handle_path_change(now);
        }
        for id in server.connection_ids().collect::<Vec<_>>() {
            if rng.chance(0.3) {
                let _ = server.send(now, id, rng.below(4) as u8, payload(0, 8 + rng.below(2_000) as usize));
            }
        }
        // Outputs through the hostile link.
        let mut outs = Vec::new();
        while let Some(n) = client.poll_transmit(now, &mut buf) {
            outs.push((true, buf[..n].to_vec()));
        }
        while let Some((_, n)) = server.poll_transmit(now, &mut buf) {
            outs.push((false, buf[..n].to_vec()));
        }
        if rng.chance(h.inject) {
            let len = rng.below(1_300) as usize;
            let mut d: Vec<u8> = (0..len).map(|_| rng.next_u32() as u8).collect();
            if len > 5 {
                d[1..5].copy_from_slice(&client.id().to_le_bytes());
            }
            outs.push((rng.chance(0.5), d));
        }
        for (to_server, mut d) in outs {
            if rng.chance(h.drop) {
                continue;
            }
            if rng.chance(h.corrupt) && !d.is_empty() {
                let i = rng.below(d.len() as u64) as usize;
                d[i] ^= 1 << rng.below(8);
                if rng.chance(0.3) {
                    d.truncate(rng.below(d.len() as u64) as usize);
                }
            }
            let delay = 5_000 + rng.below(20_000);
            if rng.chance(h.duplicate) {
                in_flight.push((now + delay + rng.below(10_000), to_server, d.clone()));
            }
            in_flight.push((now + delay, to_server, d));
        }
        // Arrivals.
        in_flight.sort_by_key(|x| x.0);
        while in_flight.first().is_some_and(|x| x.0 <= now) {
            let (_, to_server, d) = in_flight.remove(0);
            if to_server {
                let _ = server.handle_datagram(now, &d);
            } else {
                let _ = client.handle_datagram(now, &d);
            }
        }
        if client.poll_timeout().is_some_and(|t| t <= now) {
            client.handle_timeout(now);
        }
        if server.poll_timeout().is_some_and(|t| t <= now) {
            server.handle_timeout(now);
        }
        while client.poll_event().is_some() {}
        while let Some((id, ev)) = server.poll_event() {
            match ev {
                Event::ConnectRequest { .. } => {
                    server.accept(now, id);
                }
                Event::Message { channel: 0, data } if id == client.id() => delivered.push(data),
                _ => {}
            }
        }
        // Memory stays bounded whatever the link does.
        let s = client.stats();
        assert!(s.send_buffer_bytes <= cfg.send_buffer_bytes as u64);
        for id in server.connection_ids() {
            let r = server.connection(id).unwrap().stats().recv_buffer_bytes;
            assert!(r <= (cfg.recv_buffer_bytes + cfg.max_message_size) as u64, "receive buffer {r}");
        }
    }
    let nums = if h.corrupt == 0.0 { delivered.iter().map(|d| check(d)).collect() } else { Vec::new() };
    let rebuilt = client.stats().fec_recovered + server.connection_ids().map(|id| server.connection(id).map_or(0, |c| c.stats().fec_recovered)).sum::<u64>();
    (nums, sent_ordered, rebuilt)
}

#[test]
fn conversations_over_a_corrupting_link_never_panic_and_stay_bounded() {
    let h = Hostility { drop: 0.1, duplicate: 0.05, corrupt: 0.05, inject: 0.05 };
    let mut rebuilt = 0;
    for seed in 0..12 {
        rebuilt += converse(seed, &h).2;
    }
    assert!(rebuilt > 0, "FEC rebuilt nothing: the fuzz does not reach it");
}

#[test]
fn conversations_over_a_dropping_duplicating_injecting_link_deliver_in_order() {
    let h = Hostility { drop: 0.15, duplicate: 0.1, corrupt: 0.0, inject: 0.1 };
    for seed in 100..108 {
        let (got, sent, rebuilt) = converse(seed, &h);
        assert!(rebuilt > 0, "seed {seed}: FEC rebuilt nothing");
        assert!(sent > 100, "seed {seed}: only {sent} sent");
        // Everything delivered is intact and in order; the tail may still be in flight.
        assert_eq!(got, (0..got.len() as u32).collect::<Vec<_>>(), "seed {seed}");
        assert!(got.len() as u32 + 200 >= sent, "seed {seed}: delivered {} of {sent}", got.len());
    }
}
