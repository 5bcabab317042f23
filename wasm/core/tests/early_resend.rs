//! Early resend on thin streams (src/early_resend.rs): a reliable message
//! whose ACK is overdue goes again before any later packet reveals the loss;
//! a lost ACK costs one duplicate, never a declared loss; bulk transfers,
//! which fill their window, are left to ordinary loss detection.

mod common;

use common::{check, payload};
use ricochet_core::{Config, ServerConfig};
use ricochet_sim::pair::Pair;
use ricochet_sim::{LinkConfig, LossModel, NetworkProfile};

/// A game tick at 60 Hz, µs.
const TICK_US: u64 = 16_667;

/// S1's link (10 ms each way, 2 ms jitter, no loss), a connection warmed up
/// by a second of one message per tick so the RTT estimate is settled.
fn warmed_up(config: Config, seed: u64) -> Pair {
    let server = ServerConfig {
        connection: config.clone(),
        ..ServerConfig::default()
    };
    let mut p = Pair::new(config, server, NetworkProfile::s1(LossModel::None), seed);
    assert!(p.connect());
    for i in 0..60 {
        p.client.send(p.now, 0, payload(i, 400)).unwrap();
        p.run_for(TICK_US);
    }
    assert!(p.run_while_not(1_000_000, |p| p.server_messages(0).len() == 60));
    p
}

/// Loses the next client datagram (a message sent at a tick), keeps sending
/// one message per tick, and returns how long the lost one took to arrive.
fn repair_time_of_one_lost_message(config: Config) -> u64 {
    let mut p = warmed_up(config, 11);
    let mut buf = vec![0u8; 1500];
    p.client.send(p.now, 0, payload(60, 400)).unwrap();
    p.client.poll_transmit(p.now, &mut buf).unwrap(); // this datagram is lost
    let lost_at = p.now;
    let mut next_tick = p.now + TICK_US;
    let mut n = 61;
    while p.server_messages(0).len() == 60 && p.now < lost_at + 1_000_000 {
        if p.now >= next_tick {
            p.client.send(p.now, 0, payload(n, 400)).unwrap();
            n += 1;
            next_tick += TICK_US;
        }
        p.step_until(next_tick);
    }
    assert_eq!(
        check(p.server_messages(0)[60]),
        60,
        "the lost message is the next delivered, in order"
    );
    p.now - lost_at
}

#[test]
fn a_lost_tick_message_is_resent_before_the_next_tick_reveals_the_loss() {
    let early = repair_time_of_one_lost_message(Config::default());
    let late = repair_time_of_one_lost_message(Config {
        early_resend: false,
        ..Config::default()
    });
    // Overdue after srtt (≈ 20 ms) + 4·rttvar + ≈ 0 ACK delay, then 10 ms
    // across: ≈ 35 ms. Without it the loss shows when the next tick's packet
    // is acknowledged: 16.7 ms + 20 ms RTT + 10 ms across ≈ 47 ms.
    assert!(
        early <= 40_000,
        "repaired after {early} µs with early resend"
    );
    assert!(
        late >= 44_000,
        "repaired after {late} µs without early resend"
    );
}

#[test]
fn a_lost_ack_costs_one_duplicate_and_no_declared_loss() {
    let mut p = warmed_up(Config::default(), 12);
    let before = p.client.stats();
    let healthy = NetworkProfile::s1(LossModel::None);
    let acks_lost = LinkConfig {
        loss: LossModel::iid(1.0),
        ..healthy.server_to_client
    };
    p.net.set_profile(NetworkProfile {
        name: "acks lost",
        client_to_server: healthy.client_to_server,
        server_to_client: acks_lost,
    });
    p.client.send(p.now, 0, payload(60, 400)).unwrap();
    p.run_for(15_000); // delivered; its ACK is lost on the way back
    assert_eq!(p.server_messages(0).len(), 61);
    p.net.set_profile(healthy);
    p.run_for(200_000);
    let client = p.client.stats();
    assert_eq!(
        client.early_resends, 1,
        "the unacknowledged packet's message goes again once"
    );
    assert_eq!(
        p.server_messages(0).len(),
        61,
        "delivered once (the copy is dropped as a duplicate message)"
    );
    assert_eq!(
        client.retransmissions,
        before.retransmissions + 1,
        "sent twice in all"
    );
    assert_eq!(
        client.packets_lost, before.packets_lost,
        "nothing was declared lost"
    );
}

#[test]
fn a_bulk_transfer_filling_its_window_is_not_resent_early() {
    let config = Config::default();
    let server = ServerConfig {
        connection: config.clone(),
        ..ServerConfig::default()
    };
    let mut p = Pair::new(config, server, NetworkProfile::s1(LossModel::iid(0.02)), 13);
    assert!(p.connect());
    p.run_for(200_000);
    for i in 0..2_000 {
        p.client.send(p.now, 0, payload(i, 1_000)).unwrap();
    }
    assert!(p.run_while_not(30_000_000, |p| p.server_messages(0).len() == 2_000));
    let s = p.client.stats();
    // Only the ramp-up and the tail are thin; the bulk in between is not.
    assert!(
        s.early_resends * 20 <= s.retransmissions.max(1),
        "{} early resends beside {} retransmissions",
        s.early_resends,
        s.retransmissions
    );
}

#[test]
fn a_ticks_second_packet_is_not_resent_while_the_peer_holds_its_ack() {
    // A `low_latency` client (1 ms ACK delay) towards a default server
    // (5 ms): the server acknowledges a tick's first packet at once (it
    // arrives alone) and holds the ACK of the second, right behind it, for
    // its 5 ms. Timed by the client's own delay, every such ACK looked
    // overdue now and then and the second packet's messages went again.
    let mut p = Pair::new(
        Config::low_latency(),
        ServerConfig::default(),
        NetworkProfile::s1(LossModel::None),
        21,
    );
    assert!(p.connect());
    let mut n = 0;
    for _ in 0..300 {
        for _ in 0..4 {
            p.client.send(p.now, 0, payload(n, 400)).unwrap();
            n += 1;
        }
        p.run_for(TICK_US);
    }
    assert!(p.run_while_not(1_000_000, |p| p.server_messages(0).len() == n as usize));
    let client = p.client.stats();
    assert!(
        client.eliciting_packets_out >= 600,
        "two data packets a tick: {}",
        client.eliciting_packets_out
    );
    assert_eq!(client.early_resends, 0, "nothing lost, nothing resent");
    assert_eq!(client.retransmissions, 0);
}
