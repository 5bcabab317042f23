//! Seeded fuzzing of whole conversations: two endpoints, random application
//! actions, and a hostile link that drops, duplicates, reorders, corrupts,
//! truncates and injects, an impostor who knows the connection ID but not
//! the session key, and HELLOs from spoofed addresses that nobody behind
//! them answers. (Coverage-guided versions live in wasm/fuzz.)

mod common;

use std::collections::HashMap;

use common::{check, payload};
use ricochet_core::auth::{welcome_number, Direction, TagKey};
use ricochet_core::wire::{self, ChannelKind, Writer};
use ricochet_core::{Config, Connection, Event, Server, ServerConfig, AMPLIFICATION_FACTOR};
use ricochet_sim::rng::Rng;

struct Hostility {
    drop: f64,
    duplicate: f64,
    corrupt: f64,
    inject: f64,
    /// Chance per step of one impostor datagram (see `impostor`).
    impostor: f64,
}

/// A datagram from another address carrying the victim's connection ID and
/// a key of the impostor's own: a HELLO, or DATA (CLOSE, a message on the
/// ordered channel, a PING) with a wrong or missing tag, or a WELCOME or
/// REJECT for the client; or a HELLO for a fresh ID of its own, from a
/// spoofed address. Returns it, whether it goes to the server, and the
/// fresh ID if it is one.
fn impostor(rng: &mut Rng, id: u32) -> (Vec<u8>, bool, Option<u32>) {
    let key: [u8; 16] = std::array::from_fn(|_| rng.next_u32() as u8);
    let mut buf = vec![0u8; 1500];
    let mut w = Writer::new(&mut buf);
    let pn = rng.below(1 << 17);
    let nonce: [u8; 8] = std::array::from_fn(|_| rng.next_u32() as u8);
    let (ok, to_server, number) = match rng.below(7) {
        0 => {
            let ok = wire::encode_hello(
                &mut w,
                id,
                &[ChannelKind::ReliableOrdered],
                &key,
                b"impostor",
            );
            wire::pad_hello(&mut w);
            (ok, true, None)
        }
        1 => (
            wire::encode_data_header(&mut w, id, pn) && wire::encode_close(&mut w, 7, b"hijacked"),
            rng.chance(0.5),
            Some(pn),
        ),
        2 => {
            let m = payload(u32::MAX - 1, 40);
            let ok = wire::encode_data_header(&mut w, id, pn)
                && w.put_u8(wire::FRAME_MESSAGES)
                && w.put_u8(0)
                && w.put_u16(rng.below(1 << 16) as u16)
                && w.put_u8(1)
                && w.put_len_prefixed(&m);
            (ok, rng.chance(0.5), Some(pn))
        }
        3 => (
            wire::encode_data_header(&mut w, id, pn) && w.put_u8(wire::FRAME_PING),
            rng.chance(0.5),
            Some(pn),
        ),
        4 => (
            wire::encode_welcome(&mut w, id, &nonce),
            false,
            Some(welcome_number(&nonce)),
        ),
        6 => {
            let fresh = (rng.next_u32() | 1).wrapping_add(id);
            let ok = wire::encode_hello(
                &mut w,
                fresh,
                &[ChannelKind::ReliableOrdered],
                &key,
                b"spoofed",
            );
            wire::pad_hello(&mut w);
            assert!(ok);
            let n = w.len();
            buf.truncate(n);
            return (buf, true, Some(fresh));
        }
        _ => (wire::encode_reject(&mut w, id, b"hijacked"), false, Some(0)),
    };
    assert!(ok);
    let n = w.len();
    buf.truncate(n);
    // Tagged under its own key half the time; the zero tag otherwise.
    if let (Some(number), true) = (number, rng.chance(0.5)) {
        let dir = if to_server {
            Direction::ClientToServer
        } else {
            Direction::ServerToClient
        };
        TagKey::derive(&key, dir).seal(&mut buf, number);
    }
    (buf, to_server, None)
}

/// Runs one conversation; returns reliable-ordered payload numbers delivered
/// to the server, in order, how many were sent, and the packets rebuilt by
/// FEC on either side (the lossy link turns FEC on, so REPAIR and
/// LOSS_REPORT frames cross the hostile link too).
fn converse(seed: u64, h: &Hostility) -> (Vec<u32>, u32, u64) {
    let mut closed = 0;
    let mut rng = Rng::new(seed);
    let cfg = Config {
        max_message_size: 64 << 10,
        send_buffer_bytes: 1 << 20,
        recv_buffer_bytes: 256 << 10,
        ..Config::default()
    };
    let mut client = Connection::client(
        cfg.clone(),
        0,
        &ricochet_sim::pair::insecure_seeded_entropy(seed),
        b"fuzz",
    )
    .unwrap();
    let mut server = Server::new(
        ServerConfig {
            connection: cfg.clone(),
            ..ServerConfig::default()
        },
        &ricochet_sim::pair::TEST_SERVER_SECRET,
    )
    .unwrap();
    let mut in_flight: Vec<(u64, bool, Vec<u8>)> = Vec::new(); // (arrival, to_server, bytes)
    let mut buf = vec![0u8; 1500];
    let mut delivered = Vec::new();
    let mut sent_ordered = 0u32;
    let mut now = 0u64;
    // Spoofed HELLOs' IDs: bytes the server received from and sent to them.
    let mut spoofed: HashMap<u32, (u64, u64)> = HashMap::new();
    for _ in 0..4_000 {
        now += 1_000 + rng.below(4_000);
        // Application actions.
        if client.is_connected() && rng.chance(0.6) {
            let ch = rng.below(4) as u8;
            let len = if rng.chance(0.05) {
                8 + rng.below(20_000) as usize
            } else {
                8 + rng.below(300) as usize
            };
            let n = if ch == 0 { sent_ordered } else { u32::MAX };
            if client.send(now, ch, payload(n, len)).is_ok() && ch == 0 {
                sent_ordered += 1;
            }
        }
        // Now and then the host moves the client onto a new path (resumption).
        if rng.chance(0.01) {
            client.handle_path_change(now);
        }
        // Now and then the server's host sees the client at a new address: it
        // challenges it (the link delivers to the client either way).
        if rng.chance(0.01) {
            server.path_changed(now, client.id(), 100);
        }
        for id in server.connection_ids().collect::<Vec<_>>() {
            if rng.chance(0.3) {
                let _ = server.send(
                    now,
                    id,
                    rng.below(4) as u8,
                    payload(0, 8 + rng.below(2_000) as usize),
                );
            }
        }
        // Outputs through the hostile link.
        let mut outs = Vec::new();
        while let Some(n) = client.poll_transmit(now, &mut buf) {
            outs.push((true, buf[..n].to_vec()));
        }
        while let Some((id, n)) = server.poll_transmit(now, &mut buf) {
            if let Some((got, sent)) = spoofed.get_mut(&id) {
                // Toward the victim: nobody answers, so never validated.
                *sent += n as u64;
                assert!(
                    *sent <= AMPLIFICATION_FACTOR * *got,
                    "seed {seed}: {sent} bytes drawn by {got} spoofed"
                );
                continue;
            }
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
        // The impostor strikes once the server knows the victim's ID (a blind
        // attacker learns it no earlier). The host would move the session
        // to the impostor's address on Ok: it must never get one.
        if server.connection(client.id()).is_some() && rng.chance(h.impostor) {
            let (d, to_server, fresh) = impostor(&mut rng, client.id());
            if let Some(fresh) = fresh {
                if server.handle_datagram(now, &d).is_ok() {
                    spoofed.entry(fresh).or_default().0 += d.len() as u64;
                }
            } else if to_server {
                assert!(
                    server.handle_datagram(now, &d).is_err(),
                    "the server took an impostor's datagram: {d:02x?}"
                );
            } else {
                assert!(
                    client.handle_datagram(now, &d).is_err(),
                    "the client took an impostor's datagram: {d:02x?}"
                );
            }
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
        while let Some(ev) = client.poll_event() {
            closed += matches!(ev, Event::Closed(_)) as u32;
        }
        while let Some((id, ev)) = server.poll_event() {
            match ev {
                // Spoofed HELLOs' connections time out: not the session's end.
                Event::Closed(_) if !spoofed.contains_key(&id) => closed += 1,
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
            assert!(r <= cfg.recv_buffer_bytes as u64, "receive buffer {r}");
        }
    }
    if h.corrupt == 0.0 {
        // Corruption may turn a real frame into CLOSE (the tag covers the
        // header only); without it nothing may end the session.
        assert_eq!(closed, 0, "seed {seed}: the session was closed");
        assert!(client.is_connected(), "seed {seed}");
    }
    let nums = if h.corrupt == 0.0 {
        delivered.iter().map(|d| check(d)).collect()
    } else {
        Vec::new()
    };
    let rebuilt = client.stats().fec_recovered
        + server
            .connection_ids()
            .map(|id| server.connection(id).map_or(0, |c| c.stats().fec_recovered))
            .sum::<u64>();
    (nums, sent_ordered, rebuilt)
}

#[test]
fn conversations_over_a_corrupting_link_never_panic_and_stay_bounded() {
    let h = Hostility {
        drop: 0.1,
        duplicate: 0.05,
        corrupt: 0.05,
        inject: 0.05,
        impostor: 0.05,
    };
    let mut rebuilt = 0;
    for seed in 0..12 {
        rebuilt += converse(seed, &h).2;
    }
    assert!(
        rebuilt > 0,
        "FEC rebuilt nothing: the fuzz does not reach it"
    );
}

#[test]
fn conversations_over_a_dropping_duplicating_injecting_link_deliver_in_order() {
    let h = Hostility {
        drop: 0.15,
        duplicate: 0.1,
        corrupt: 0.0,
        inject: 0.1,
        impostor: 0.1,
    };
    for seed in 100..108 {
        let (got, sent, rebuilt) = converse(seed, &h);
        assert!(rebuilt > 0, "seed {seed}: FEC rebuilt nothing");
        assert!(sent > 100, "seed {seed}: only {sent} sent");
        // Everything delivered is intact and in order; the tail may still be in flight.
        assert_eq!(
            got,
            (0..got.len() as u32).collect::<Vec<_>>(),
            "seed {seed}"
        );
        assert!(
            got.len() as u32 + 200 >= sent,
            "seed {seed}: delivered {} of {sent}",
            got.len()
        );
    }
}
