//! Delivery guarantees of each channel kind under a lossy simulated network.

mod common;

use common::{check, hostile, payload};
use ricochet_core::{ChannelConfig, Config, Event, FecConfig, ServerConfig};
use ricochet_sim::pair::Pair;
use ricochet_sim::{LossModel, NetworkProfile};

#[test]
fn ten_thousand_ordered_messages_survive_10pct_loss_with_reordering_and_duplication() {
    let mut p = Pair::over(hostile(0.10, 0.05, 0.02), 1);
    assert!(p.connect());
    let n = 10_000u32;
    // 60 Hz ticks, several messages per tick.
    for i in 0..n {
        p.client
            .send(p.now, 0, payload(i, 40 + (i as usize % 300)))
            .unwrap();
        if i % 5 == 4 {
            p.run_for(16_667);
        }
    }
    assert!(p.run_while_not(60_000_000, |p| p.server_messages(0).len() == n as usize));
    let got: Vec<u32> = p.server_messages(0).iter().map(|d| check(d)).collect();
    assert_eq!(got, (0..n).collect::<Vec<_>>());
    let stats = p.client.stats();
    assert!(
        stats.retransmissions > 0 && stats.packets_lost > 0,
        "the link should have lost packets: {stats:?}"
    );
    assert!(
        p.server_conn().unwrap().stats().duplicates > 0,
        "the link should have duplicated packets"
    );
}

#[test]
fn one_mib_message_survives_5pct_loss() {
    let mut p = Pair::over(NetworkProfile::s1(LossModel::iid(0.05)), 2);
    assert!(p.connect());
    let big = payload(7, 1 << 20);
    let id = p.client.send(p.now, 0, big).unwrap();
    assert!(p.run_while_not(60_000_000, |p| !p.server_messages(0).is_empty()));
    assert_eq!(check(p.server_messages(0)[0]), 7);
    assert!(p.run_while_not(5_000_000, |p| p.client_events.contains(&Event::Acked(id))));
    assert!(p.client.stats().retransmissions > 0);
}

#[test]
fn ordered_channels_do_not_block_each_other() {
    let cfg = Config::default().with_channels(vec![
        ChannelConfig::reliable_ordered(),
        ChannelConfig::reliable_ordered(),
    ]);
    let mut p = Pair::new(cfg, ServerConfig::default(), NetworkProfile::lan(), 3);
    assert!(p.connect());
    let now = p.now;
    let mut buf = vec![0u8; 1500];
    // Channel 0's message travels alone in a datagram that we drop.
    p.client.send(now, 0, payload(0, 100)).unwrap();
    let n = p.client.poll_transmit(now, &mut buf).unwrap();
    let _lost = buf[..n].to_vec();
    p.client.send(now, 1, payload(1, 100)).unwrap();
    let n = p.client.poll_transmit(now, &mut buf).unwrap();
    p.server.handle_datagram(now, &buf[..n]).unwrap();
    p.drive();
    assert_eq!(
        p.server_messages(1).len(),
        1,
        "channel 1 must not wait for channel 0's loss"
    );
    assert!(p.server_messages(0).is_empty());
    // Channel 0 recovers by retransmission.
    assert!(p.run_while_not(2_000_000, |p| p.server_messages(0).len() == 1));
}

#[test]
fn unreliable_sequenced_drops_stale_messages() {
    let mut p = Pair::over(NetworkProfile::lan(), 4);
    assert!(p.connect());
    let now = p.now;
    let mut buf = vec![0u8; 1500];
    let mut datagrams = Vec::new();
    for i in 0..3 {
        p.client.send(now, 2, payload(i, 50)).unwrap();
        let n = p.client.poll_transmit(now, &mut buf).unwrap();
        datagrams.push(buf[..n].to_vec());
    }
    // Deliver newest first, then the older two.
    for i in [2, 0, 1] {
        let _ = p.server.handle_datagram(now, &datagrams[i]);
    }
    p.drive();
    let got: Vec<u32> = p.server_messages(2).iter().map(|d| check(d)).collect();
    assert_eq!(got, vec![2]);
}

#[test]
fn unreliable_sequenced_never_goes_backwards_under_reordering() {
    let mut p = Pair::over(hostile(0.05, 0.3, 0.05), 5);
    assert!(p.connect());
    for i in 0..2_000 {
        p.client.send(p.now, 2, payload(i, 60)).unwrap();
        p.run_for(2_000);
    }
    p.run_for(1_000_000);
    let got: Vec<u32> = p.server_messages(2).iter().map(|d| check(d)).collect();
    assert!(
        got.windows(2).all(|w| w[0] < w[1]),
        "sequenced delivery went backwards"
    );
    assert!(
        got.len() > 1_000 && got.len() < 2_000,
        "delivered {}",
        got.len()
    );
}

#[test]
fn reliable_unordered_delivers_everything_once() {
    let mut p = Pair::over(hostile(0.10, 0.1, 0.05), 6);
    assert!(p.connect());
    for i in 0..3_000 {
        p.client.send(p.now, 1, payload(i, 100)).unwrap();
        if i % 10 == 9 {
            p.run_for(10_000);
        }
    }
    assert!(p.run_while_not(30_000_000, |p| p.server_messages(1).len() >= 3_000));
    let mut got: Vec<u32> = p.server_messages(1).iter().map(|d| check(d)).collect();
    got.sort();
    assert_eq!(got, (0..3_000).collect::<Vec<_>>());
}

#[test]
fn every_message_gets_exactly_one_receipt() {
    let mut p = Pair::over(hostile(0.08, 0.05, 0.02), 7);
    assert!(p.connect());
    let mut ids = Vec::new();
    for i in 0..2_000u32 {
        let ch = (i % 4) as u8;
        let len = if i % 50 == 0 { 5_000 } else { 80 };
        ids.push(p.client.send(p.now, ch, payload(i, len)).unwrap());
        p.run_for(4_000);
    }
    p.run_for(10_000_000);
    let mut receipts = std::collections::HashMap::new();
    for e in &p.client_events {
        if let Event::Acked(id) | Event::Lost(id) = e {
            *receipts.entry(*id).or_insert(0) += 1;
        }
    }
    for id in &ids {
        assert_eq!(receipts.get(id), Some(&1), "message {id} receipts");
    }
    let lost = p
        .client_events
        .iter()
        .filter(|e| matches!(e, Event::Lost(_)))
        .count();
    assert!(
        lost > 0,
        "unreliable messages should have been lost at 8% loss"
    );
}

#[test]
fn lost_receipts_match_undelivered_unreliable_messages() {
    let mut p = Pair::over(hostile(0.10, 0.0, 0.0), 8);
    assert!(p.connect());
    let mut by_id = std::collections::HashMap::new();
    for i in 0..3_000u32 {
        let id = p.client.send(p.now, 3, payload(i, 100)).unwrap();
        by_id.insert(id, i);
        p.run_for(5_000);
    }
    p.run_for(2_000_000);
    let delivered: std::collections::HashSet<u32> =
        p.server_messages(3).iter().map(|d| check(d)).collect();
    for e in &p.client_events {
        if let Event::Lost(id) = e {
            assert!(
                !delivered.contains(&by_id[id]),
                "message reported lost was delivered"
            );
        }
    }
    let lost = p
        .client_events
        .iter()
        .filter(|e| matches!(e, Event::Lost(_)))
        .count();
    assert_eq!(lost + delivered.len(), 3_000);
}

#[test]
fn long_stream_survives_packet_number_and_sequence_wraparound() {
    // More than 2^16 packets and channel sequence numbers: every 16-bit
    // field on the wire wraps at least once.
    let mut p = Pair::over(NetworkProfile::lan(), 9);
    assert!(p.connect());
    let n = 70_000u32;
    for i in 0..n {
        p.client.send(p.now, 0, payload(i, 8)).unwrap();
        p.run_for(100);
    }
    assert!(p.run_while_not(10_000_000, |p| p.server_messages(0).len() == n as usize));
    assert!(p
        .server_messages(0)
        .iter()
        .enumerate()
        .all(|(i, d)| check(d) == i as u32));
    assert_eq!(
        p.client.stats().malformed + p.server_conn().unwrap().stats().malformed,
        0
    );
}

#[test]
fn measured_loss_each_way_matches_the_link() {
    // FEC off: with it, packets the peer rebuilds are acknowledged, so
    // loss_out (declared losses) reads the residual loss, not the link's.
    let cfg = Config {
        fec: FecConfig::off(),
        ..Config::default()
    };
    let server = ServerConfig {
        connection: cfg.clone(),
        ..ServerConfig::default()
    };
    let mut p = Pair::new(cfg, server, NetworkProfile::s1(LossModel::iid(0.05)), 3);
    assert!(p.connect());
    for i in 0..3000 {
        p.client.send(p.now, 0, payload(i, 400)).unwrap();
        let id = p.client.id();
        p.server.send(p.now, id, 0, payload(i, 100)).unwrap();
        p.run_for(16_667);
    }
    p.run_for(2_000_000);
    let s = p.client.stats();
    let (up, down) = p.net.stats();
    let up_loss = up.lost as f64 / up.sent as f64;
    let down_loss = down.lost as f64 / down.sent as f64;
    assert!(
        (s.loss_out - up_loss).abs() < 0.01,
        "loss out {} vs link {}",
        s.loss_out,
        up_loss
    );
    assert!(
        (s.loss_in - down_loss).abs() < 0.01,
        "loss in {} vs link {}",
        s.loss_in,
        down_loss
    );
    // RTT stays near the path's 20 ms despite lost ACKs.
    assert!((20_000..26_000).contains(&s.rtt_us), "srtt {}", s.rtt_us);
}
