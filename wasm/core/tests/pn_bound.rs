//! Packet-number bounds (WIRE.md, "Authentication"): a receiver refuses an
//! authentic packet numbered more than MAX_PACKET_NUMBER_JUMP above the
//! largest it received, so a sender must never get that far ahead of what
//! it knows arrived, however long its uplink is dead.

mod common;

use common::{check, link, payload};
use ricochet_core::auth::TagKey;
use ricochet_core::wire::{self, Writer};
use ricochet_core::{
    ChannelConfig, Config, CongestionKind, DropReason, ServerConfig, MAX_PACKET_NUMBER_JUMP,
    MAX_PROBE_AHEAD, MAX_SEND_AHEAD,
};
use ricochet_sim::pair::{insecure_seeded_entropy, Pair};
use ricochet_sim::{LossModel, NetworkProfile};

const TICK_US: u64 = 1_000;

fn config(channel: ChannelConfig) -> Config {
    Config {
        congestion: CongestionKind::Unlimited,
        send_buffer_bytes: 64 << 20,
        // Long enough that neither side gives up during the outage.
        idle_timeout_us: 60_000_000,
        ..Config::default()
    }
    .with_channels(vec![channel])
}

fn uplink_dead(alive: bool) -> NetworkProfile {
    let up = if alive {
        LossModel::None
    } else {
        LossModel::iid(1.0)
    };
    NetworkProfile {
        name: "uplink",
        client_to_server: link(500, up),
        server_to_client: link(500, LossModel::None),
    }
}

#[test]
fn an_unlimited_sender_behind_a_dead_uplink_stops_at_the_bound_and_recovers() {
    let channel = ChannelConfig::unreliable().with_max_age_us(100_000);
    let server = ServerConfig {
        connection: config(channel),
        ..ServerConfig::default()
    };
    let mut p = Pair::new(config(channel), server, uplink_dead(true), 5);
    assert!(p.connect());
    p.net.set_profile(uplink_dead(false));
    let before = p.client.stats().packets_out;
    // 4 s at ten 1000-byte messages a millisecond: 40,000 packets unbounded.
    let mut offered = 0u32;
    for _ in 0..4_000 {
        for _ in 0..10 {
            p.client.send(p.now, 0, payload(offered, 1_000)).unwrap();
            offered += 1;
        }
        p.run_for(TICK_US);
    }
    let during = p.client.stats().packets_out - before;
    assert!(during >= MAX_SEND_AHEAD - 64, "sent only {during}");
    assert!(
        during < MAX_PROBE_AHEAD,
        "sent {during} packets into a dead uplink"
    );
    // Healed: new messages get through (after the backed-off probe) and
    // nothing the client sent is refused.
    p.net.set_profile(uplink_dead(true));
    let first_new = offered;
    let delivered_new = |p: &Pair| {
        p.server_messages(0)
            .iter()
            .filter(|d| check(d) >= first_new)
            .count()
    };
    let mut recovered = false;
    for _ in 0..15_000 {
        p.client.send(p.now, 0, payload(offered, 1_000)).unwrap();
        offered += 1;
        p.run_for(TICK_US);
        if delivered_new(&p) >= 100 {
            recovered = true;
            break;
        }
    }
    assert!(recovered, "server got {} new messages", delivered_new(&p));
    let s = p.server_conn().unwrap().stats();
    assert_eq!((s.too_far_ahead, s.unauthenticated), (0, 0));
    // Recovered for good: the next second's messages nearly all arrive.
    let (from, got_before) = (offered, delivered_new(&p));
    for _ in 0..1_000 {
        p.client.send(p.now, 0, payload(offered, 1_000)).unwrap();
        offered += 1;
        p.run_for(TICK_US);
    }
    p.run_for(100_000);
    let got = delivered_new(&p) - got_before;
    assert!(
        got as u32 >= (offered - from) * 99 / 100,
        "{got} of {} delivered after recovery",
        offered - from
    );
}

#[test]
fn the_probe_reserve_outlasts_ten_minutes_of_dead_uplink_while_the_peer_keeps_talking() {
    let channel = ChannelConfig::unreliable().with_max_age_us(100_000);
    let cfg = Config {
        idle_timeout_us: 30 * 60_000_000,
        ..config(channel)
    };
    let server = ServerConfig {
        connection: cfg.clone(),
        ..ServerConfig::default()
    };
    let mut p = Pair::new(cfg, server, uplink_dead(true), 7);
    assert!(p.connect());
    let id = p.client.id();
    p.net.set_profile(uplink_dead(false));
    let before = p.client.stats().packets_out;
    let mut offered = 0u32;
    // Reach the bound within a second, then a game's pace both ways: the
    // client keeps hearing the server, which must not restart its probe backoff.
    for _ in 0..1_000 {
        for _ in 0..10 {
            p.client.send(p.now, 0, payload(offered, 1_000)).unwrap();
            offered += 1;
        }
        p.run_for(TICK_US);
    }
    let mut down = 0u32;
    while p.now < 600_000_000 {
        p.client.send(p.now, 0, payload(offered, 1_000)).unwrap();
        offered += 1;
        p.server.send(p.now, id, 0, payload(down, 100)).unwrap();
        down += 1;
        p.run_for(16_667);
    }
    let during = p.client.stats().packets_out - before;
    assert!(
        during < MAX_SEND_AHEAD + 200,
        "{during} packets: probes spent the reserve"
    );
    p.net.set_profile(uplink_dead(true));
    let first_new = offered;
    let healed = p.now;
    let delivered_new = |p: &Pair| p.server_messages(0).iter().any(|d| check(d) >= first_new);
    while !delivered_new(&p) && p.now < healed + 20_000_000 {
        p.client.send(p.now, 0, payload(offered, 1_000)).unwrap();
        offered += 1;
        p.run_for(16_667);
    }
    assert!(
        delivered_new(&p),
        "no new message 20 s after the uplink healed"
    );
}

#[test]
fn a_side_that_only_acknowledges_is_not_stopped_by_the_bound() {
    // The server sends 30,000 packets; the client answers each with an ACK
    // only (keepalive off in effect) and must keep learning that they arrive.
    let server_cfg = Config {
        keepalive_interval_us: 50_000_000,
        idle_timeout_us: 60_000_000,
        ..Config::default()
    };
    let cfg = Config {
        ack_eliciting_threshold: 1,
        ..server_cfg.clone()
    };
    let server = ServerConfig {
        connection: server_cfg,
        ..ServerConfig::default()
    };
    let mut p = Pair::new(cfg, server, NetworkProfile::lan(), 6);
    assert!(p.connect());
    let id = p.client.id();
    const N: u32 = 30_000;
    let mut sent = 0u32;
    while p.client_messages(0).len() < N as usize && p.now < 60_000_000 {
        // A few a millisecond, so they arrive (and are acknowledged) apart.
        for _ in 0..10 {
            if sent < N && p.server.send(p.now, id, 0, payload(sent, 1_000)).is_ok() {
                sent += 1;
            }
        }
        p.run_for(TICK_US);
    }
    assert_eq!(
        p.client_messages(0).len(),
        N as usize,
        "one-way transfer stalled"
    );
    let c = p.client.stats();
    assert!(
        c.packets_out > MAX_SEND_AHEAD,
        "the client sent only {} packets: no test",
        c.packets_out
    );
    assert_eq!(p.server_conn().unwrap().stats().too_far_ahead, 0);
}

#[test]
fn a_packet_exactly_at_the_receivers_limit_is_accepted_and_one_past_it_refused() {
    let mut p = Pair::over(NetworkProfile::lan(), 21);
    assert!(p.connect());
    p.run_for(100_000);
    let id = p.client.id();
    let key: [u8; 16] = insecure_seeded_entropy(21)[4..].try_into().unwrap();
    let nonce = p.server_conn().unwrap().nonce();
    let ping = |pn: u64| {
        let mut buf = vec![0u8; 64];
        let mut w = Writer::new(&mut buf);
        assert!(wire::encode_data_header(&mut w, id, pn) && w.put_u8(wire::FRAME_PING));
        let n = w.len();
        buf.truncate(n);
        TagKey::derive_client(&key, &nonce).seal(&mut buf, pn);
        buf
    };
    // Pin the server's largest received to a known number.
    let largest = 1_000;
    assert_eq!(p.server.handle_datagram(p.now, &ping(largest)), Ok(id));
    assert_eq!(
        p.server
            .handle_datagram(p.now, &ping(largest + MAX_PACKET_NUMBER_JUMP + 1)),
        Err(DropReason::TooFarAhead)
    );
    assert_eq!(p.server_conn().unwrap().stats().too_far_ahead, 1);
    assert_eq!(
        p.server
            .handle_datagram(p.now, &ping(largest + MAX_PACKET_NUMBER_JUMP)),
        Ok(id)
    );
    let s = p.server_conn().unwrap().stats();
    assert_eq!((s.too_far_ahead, s.unauthenticated), (1, 0));
}
