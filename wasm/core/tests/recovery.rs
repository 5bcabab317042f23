//! Loss recovery and scheduling: time-based repair, tail-loss probes with
//! backoff, channel priority.

mod common;

use common::{check, payload};
use ricochet_core::{ChannelConfig, Config, ServerConfig};
use ricochet_sim::pair::Pair;
use ricochet_sim::{LinkConfig, LossModel, NetworkProfile};

#[test]
fn lost_message_is_repaired_within_about_one_round_trip_after_detection() {
    let mut p = Pair::over(NetworkProfile::s1(LossModel::None), 1);
    assert!(p.connect());
    p.run_for(2_000_000);
    let mut buf = vec![0u8; 1500];
    p.client.send(p.now, 0, payload(0, 100)).unwrap();
    p.client.poll_transmit(p.now, &mut buf).unwrap(); // this datagram is lost
    let lost_at = p.now;
    for i in 1..=3 {
        p.run_for(16_667);
        p.client.send(p.now, 0, payload(i, 100)).unwrap();
    }
    assert!(p.run_while_not(1_000_000, |p| !p.server_messages(0).is_empty()));
    let repaired_after = p.now - lost_at;
    // Detected when a later packet's ACK arrives (≈ 16.7 ms + 20 ms RTT) and
    // resent at once: ≈ 47 ms, far below any fixed retransmission timeout.
    assert!(
        repaired_after <= 60_000,
        "repaired after {repaired_after} µs"
    );
    assert!(p.run_while_not(1_000_000, |p| p.server_messages(0).len() == 4));
    let got: Vec<u32> = p.server_messages(0).iter().map(|d| check(d)).collect();
    assert_eq!(got, vec![0, 1, 2, 3]);
}

#[test]
fn tail_loss_is_recovered_by_a_probe() {
    let mut p = Pair::over(NetworkProfile::s1(LossModel::None), 2);
    assert!(p.connect());
    p.run_for(1_000_000);
    let mut buf = vec![0u8; 1500];
    p.client.send(p.now, 0, payload(7, 100)).unwrap();
    p.client.poll_transmit(p.now, &mut buf).unwrap(); // the only packet, lost
    assert!(p.run_while_not(500_000, |p| p.server_messages(0).len() == 1));
    assert!(p.client.stats().retransmissions >= 1);
}

#[test]
fn probes_back_off_exponentially_while_the_peer_is_silent() {
    let cfg = Config {
        idle_timeout_us: 60_000_000,
        keepalive_interval_us: 30_000_000,
        ..Config::default()
    };
    let server = ServerConfig {
        connection: cfg.clone(),
        ..ServerConfig::default()
    };
    let mut p = Pair::new(cfg, server, NetworkProfile::s1(LossModel::None), 3);
    assert!(p.connect());
    p.run_for(1_000_000);
    let dead = LinkConfig {
        loss: LossModel::iid(1.0),
        ..LinkConfig::default()
    };
    p.net.set_profile(NetworkProfile {
        name: "dead",
        client_to_server: dead,
        server_to_client: dead,
    });
    p.client.send(p.now, 0, payload(1, 100)).unwrap();
    let mut sends = Vec::new();
    let mut last = p.net.client_to_server.stats().sent;
    let end = p.now + 20_000_000;
    while p.step_until(end) {
        let sent = p.net.client_to_server.stats().sent;
        if sent > last {
            sends.push(p.now);
            last = sent;
        }
    }
    // The first resend may be the thin stream's early resend (once, for a
    // first transmission); the probes after it back off.
    let gaps: Vec<u64> = sends.windows(2).skip(1).map(|w| w[1] - w[0]).collect();
    assert!(gaps.len() >= 5, "probes: {gaps:?}");
    for w in gaps.windows(2).take(5) {
        assert!(
            w[1] >= w[0] * 3 / 2,
            "probe intervals should grow: {gaps:?}"
        );
    }
}

#[test]
fn higher_priority_channel_is_sent_first() {
    let cfg = Config::default().with_channels(vec![
        ChannelConfig::reliable_ordered().with_priority(10),
        ChannelConfig::unreliable().with_priority(200),
    ]);
    let mut p = Pair::new(cfg, ServerConfig::default(), NetworkProfile::lan(), 4);
    assert!(p.connect());
    let mut buf = vec![0u8; 1500];
    for i in 0..20 {
        p.client.send(p.now, 0, payload(i, 500)).unwrap();
    }
    for i in 0..3 {
        p.client.send(p.now, 1, payload(100 + i, 200)).unwrap();
    }
    // Only the first datagram reaches the server.
    let n = p.client.poll_transmit(p.now, &mut buf).unwrap();
    p.server.handle_datagram(p.now, &buf[..n]).unwrap();
    p.drive();
    assert_eq!(
        p.server_messages(1).len(),
        3,
        "all high-priority messages in the first datagram"
    );
    assert!(p.server_messages(0).len() <= 1);
}
