//! Datagram size changes at run time (`set_max_datagram_size`): a session
//! that moves from 1200-byte datagrams (WebSocket) to 1024 (Firefox's
//! WebTransport) keeps delivering, and never sends a datagram too large.

mod common;

use std::collections::HashMap;

use common::{check, payload};
use ricochet_core::{Config, ServerConfig};
use ricochet_core::{Event, MessageId};
use ricochet_sim::pair::Pair;
use ricochet_sim::{LinkConfig, LossModel, NetworkProfile};

const TICK_US: u64 = 16_667;

fn profile(mtu: usize, loss: f64) -> NetworkProfile {
    let l = LinkConfig {
        latency_us: 20_000,
        jitter_us: 2_000,
        loss: LossModel::iid(loss),
        reorder: 0.02,
        reorder_extra_us: 5_000,
        mtu,
        ..LinkConfig::default()
    };
    NetworkProfile {
        name: "mtu",
        client_to_server: l,
        server_to_client: LinkConfig { mtu: 0, ..l },
    }
}

fn client_config() -> Config {
    Config {
        min_datagram_size: 1024,
        ..Config::default()
    }
}

/// Sizes around both limits: whole at 1200 but not at 1024, just over a
/// 1024 fragment, several fragments, many fragments.
const SIZES: [usize; 6] = [1100, 1137, 962, 3000, 20_000, 400];

/// Queue `n` reliable messages a tick on channels 0 (ordered) and 1
/// (unordered), shrinking the datagram size (link and connection) at tick
/// `shrink_at`. Returns how many were sent per channel.
fn transfer(p: &mut Pair, ticks: u32, shrink_at: u32) -> u32 {
    assert!(p.connect());
    let mut sent = 0u32;
    for t in 0..ticks {
        if t == shrink_at {
            p.net.set_profile(profile(1024, 0.02));
            p.client.set_max_datagram_size(p.now, 1024).unwrap();
            p.client.handle_path_change(p.now);
        }
        for _ in 0..2 {
            let size = SIZES[sent as usize % SIZES.len()];
            p.client.send(p.now, 0, payload(sent, size)).unwrap();
            p.client.send(p.now, 1, payload(sent, size)).unwrap();
            sent += 1;
        }
        p.run_for(TICK_US);
    }
    sent
}

#[test]
fn reliable_messages_in_flight_when_datagrams_shrink_to_1024_arrive_in_order_exactly_once() {
    let mut p = Pair::new(
        client_config(),
        ServerConfig::default(),
        profile(1200, 0.02),
        3,
    );
    let sent = transfer(&mut p, 60, 20);
    let done = p.run_while_not(30_000_000, |p| {
        p.server_messages(0).len() >= sent as usize && p.server_messages(1).len() >= sent as usize
    });
    assert!(
        done,
        "ordered {}/{sent}, unordered {}/{sent}",
        p.server_messages(0).len(),
        p.server_messages(1).len()
    );
    let ordered: Vec<u32> = p.server_messages(0).iter().map(|d| check(d)).collect();
    assert_eq!(ordered, (0..sent).collect::<Vec<_>>());
    let mut unordered: Vec<u32> = p.server_messages(1).iter().map(|d| check(d)).collect();
    unordered.sort_unstable();
    assert_eq!(unordered, (0..sent).collect::<Vec<_>>(), "each once");
    p.run_for(1_000_000);
    assert_eq!(
        p.server_messages(0).len() + p.server_messages(1).len(),
        2 * sent as usize,
        "no duplicates later"
    );
    assert!(
        p.client.stats().recut_messages > 0,
        "whole messages in flight were cut again"
    );
    assert_eq!(
        p.server
            .connection(p.client.id())
            .unwrap()
            .receive_buffered_bytes(),
        0,
        "no reassembly left behind"
    );
}

#[test]
fn nothing_sent_after_the_shrink_exceeds_the_new_size() {
    let mut p = Pair::new(
        client_config(),
        ServerConfig::default(),
        profile(1200, 0.02),
        5,
    );
    let sent = transfer(&mut p, 40, 10);
    p.run_while_not(30_000_000, |p| p.server_messages(0).len() >= sent as usize);
    // The link drops anything above 1024 from the shrink on, like Firefox.
    assert_eq!(p.net.client_to_server.stats().oversize_dropped, 0);
    assert_eq!(p.server_messages(0).len(), sent as usize);
}

#[test]
fn without_the_size_change_the_oversized_datagrams_are_lost_and_the_channel_stalls() {
    // The bug the size change fixes: the transport drops every 1200-byte datagram.
    let mut p = Pair::new(
        client_config(),
        ServerConfig::default(),
        profile(1024, 0.0),
        7,
    );
    assert!(p.connect());
    for i in 0..10 {
        p.client.send(p.now, 0, payload(i, 1100)).unwrap();
    }
    p.run_for(3_000_000);
    assert_eq!(p.server_messages(0).len(), 0);
    assert!(p.net.client_to_server.stats().oversize_dropped > 0);
    p.client.set_max_datagram_size(p.now, 1024).unwrap();
    assert!(p.run_while_not(5_000_000, |p| p.server_messages(0).len() == 10));
}

#[test]
fn unreliable_messages_queued_before_the_shrink_go_in_fragments_that_fit() {
    let mut p = Pair::new(
        client_config(),
        ServerConfig::default(),
        profile(1024, 0.0),
        9,
    );
    assert!(p.connect());
    // Queued while the size is still 1200, sent after the change: fragmented
    // at 1024 like any unreliable message too large for one datagram.
    for i in 0..20 {
        p.client.send(p.now, 3, payload(i, 1100)).unwrap();
    }
    p.client.set_max_datagram_size(p.now, 1024).unwrap();
    p.run_for(1_000_000);
    let mut got: Vec<u32> = p.server_messages(3).iter().map(|d| check(d)).collect();
    got.sort_unstable();
    assert_eq!(got, (0..20).collect::<Vec<_>>());
    assert_eq!(p.net.client_to_server.stats().oversize_dropped, 0);
}

#[test]
fn unreliable_message_sent_whole_before_the_shrink_gets_a_verdict_and_is_not_resent() {
    let mut p = Pair::new(
        client_config(),
        ServerConfig::default(),
        profile(1200, 0.0),
        13,
    );
    assert!(p.connect());
    let id = p.client.send(p.now, 3, payload(0, 1100)).unwrap();
    p.drive(); // sent whole at 1200, in flight
    p.client.set_max_datagram_size(p.now, 1024).unwrap();
    p.run_for(1_000_000);
    assert!(p
        .client_events
        .iter()
        .any(|e| matches!(e, Event::Acked(i) | Event::Lost(i) if *i == id)));
    assert_eq!(p.server_messages(3).len(), 1);
}

#[test]
fn a_size_below_min_datagram_size_is_refused_and_changes_nothing() {
    let mut p = Pair::new(
        client_config(),
        ServerConfig::default(),
        profile(1200, 0.0),
        17,
    );
    assert!(p.connect());
    assert!(p.client.set_max_datagram_size(p.now, 1000).is_err());
    assert_eq!(p.client.config().max_datagram_size, 1200);
    // The default promises no shrink: fragments use the whole datagram.
    let mut q = Pair::over(profile(1200, 0.0), 17);
    assert!(q.connect());
    assert!(q.client.set_max_datagram_size(q.now, 1100).is_err());
    assert!(q.client.set_max_datagram_size(q.now, 1300).is_ok());
}

#[test]
fn growing_back_to_1200_sends_larger_messages_whole_again() {
    let mut p = Pair::new(
        Config {
            max_datagram_size: 1024,
            ..client_config()
        },
        ServerConfig::default(),
        profile(0, 0.0),
        19,
    );
    assert!(p.connect());
    p.client.set_max_datagram_size(p.now, 1200).unwrap();
    let before = p.client.stats().packets_out;
    for i in 0..10 {
        p.client.send(p.now, 0, payload(i, 1100)).unwrap();
    }
    p.run_for(1_000_000);
    assert_eq!(p.server_messages(0).len(), 10);
    // Whole: one datagram each (plus a few ACK-only ones at most).
    assert!(
        p.client.stats().packets_out - before < 16,
        "{} packets",
        p.client.stats().packets_out - before
    );
}

/// The cost of cutting fragments for 1024 while sending 1200-byte datagrams:
/// bytes on the wire for a bulk transfer of 16 KiB messages.
#[test]
fn fragments_cut_for_1024_cost_about_one_percent_on_bulk_transfers() {
    let wire = |cfg: Config| {
        let mut p = Pair::new(cfg, ServerConfig::default(), profile(0, 0.0), 23);
        assert!(p.connect());
        let before = p.client.stats().bytes_out;
        for i in 0..200 {
            p.client.send(p.now, 0, payload(i, 16_384)).unwrap();
        }
        assert!(p.run_while_not(30_000_000, |p| p.server_messages(0).len() == 200));
        p.client.stats().bytes_out - before
    };
    let full = wire(Config::default()) as f64;
    let floor = wire(client_config()) as f64;
    let cost = floor / full - 1.0;
    assert!(
        cost > 0.0 && cost < 0.015,
        "extra wire bytes {:.2} %",
        cost * 100.0
    );
}

/// A connected pair over a perfect link, for tests that carry datagrams by hand.
fn connected_by_hand() -> Pair {
    let mut p = Pair::new(
        client_config(),
        ServerConfig::default(),
        NetworkProfile::perfect(),
        1,
    );
    assert!(p.connect());
    p.run_for(200_000);
    p
}

/// The client's next datagram, taken off the link (the test carries it, or not).
fn client_datagram(p: &mut Pair) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; 2000];
    p.client
        .poll_transmit(p.now, &mut buf)
        .map(|n| buf[..n].to_vec())
}

/// Hand `datagram` to the server, and the server's ACK back to the client
/// once it is due. Returns the client's events since.
fn deliver_and_ack(p: &mut Pair, datagram: &[u8]) -> Vec<Event> {
    p.now += 10_000;
    let _ = p.server.handle_datagram(p.now, datagram);
    while let Some(e) = p.server.poll_event() {
        p.server_events.push(e);
    }
    p.now += 30_000; // past the ACK delay
    p.server.handle_timeout(p.now);
    let mut buf = vec![0u8; 2000];
    while let Some((_, n)) = p.server.poll_transmit(p.now, &mut buf) {
        let _ = p.client.handle_datagram(p.now, &buf[..n]);
    }
    core::iter::from_fn(|| p.client.poll_event()).collect()
}

#[test]
fn a_message_cut_again_and_grown_back_is_acked_only_once_the_peer_has_all_of_it() {
    let mut p = connected_by_hand();
    let id = p.client.send(p.now, 0, payload(0, 1100)).unwrap();
    let whole = client_datagram(&mut p).unwrap();
    assert!(whole.len() > 1100);
    // The whole copy is lost with the old transport; on the new one the
    // probe must not send the old copy's record as fragment 0 of the new cut.
    p.now += 1000;
    p.client.set_max_datagram_size(p.now, 1024).unwrap();
    p.client.handle_path_change(p.now);
    let first = client_datagram(&mut p).unwrap();
    // Back on 1200-byte datagrams before anything else goes.
    p.client.set_max_datagram_size(p.now, 1200).unwrap();
    let events = deliver_and_ack(&mut p, &first);
    assert!(
        !events.contains(&Event::Acked(id)),
        "acked, but the peer has one fragment of two"
    );
    p.client_events.extend(events);
    for i in 1..5 {
        p.client.send(p.now, 0, payload(i, 200)).unwrap();
    }
    p.run_for(5_000_000);
    let got: Vec<u32> = p.server_messages(0).iter().map(|d| check(d)).collect();
    assert_eq!(got, vec![0, 1, 2, 3, 4]);
    assert_eq!(
        p.client_events
            .iter()
            .filter(|e| **e == Event::Acked(id))
            .count(),
        1
    );
}

#[test]
fn the_ack_of_a_whole_copy_sent_before_the_shrink_completes_the_message() {
    let mut p = connected_by_hand();
    let id = p.client.send(p.now, 0, payload(0, 1100)).unwrap();
    let whole = client_datagram(&mut p).unwrap();
    p.client.set_max_datagram_size(p.now, 1024).unwrap();
    // The peer has it whole: no fragment needs to go, nor wait for an ACK.
    assert!(deliver_and_ack(&mut p, &whole).contains(&Event::Acked(id)));
    assert_eq!(p.client.stats().send_buffer_bytes, 0);
    assert_eq!(p.server_messages(0).len(), 1);
}

#[test]
fn whole_messages_lost_with_the_old_transport_go_again_once_as_fragments() {
    let mut p = connected_by_hand();
    p.net.set_profile(profile(1024, 0.0));
    for i in 0..10 {
        p.client.send(p.now, 0, payload(i, 1100)).unwrap();
    }
    while client_datagram(&mut p).is_some() {} // sent whole, all lost
    p.now += 1000;
    p.client.set_max_datagram_size(p.now, 1024).unwrap();
    p.client.handle_path_change(p.now);
    let before = p.client.stats();
    p.run_for(3_000_000);
    assert_eq!(p.server_messages(0).len(), 10);
    let after = p.client.stats();
    // Each message's two fragments, once: the stale whole copies' records
    // are not sent again as fragment 0.
    assert_eq!(after.payload_bytes_out - before.payload_bytes_out, 11_000);
    assert_eq!(after.retransmissions, before.retransmissions);
}

/// Reliable messages of sizes around both limits on channels 0 (ordered)
/// and 1 (unordered) while the datagram size flips between 1200 and 1024
/// every `period` ticks, under loss. Returns what went wrong, if anything.
fn flipping(seed: u64, period: u32, loss: f64, per_tick: u32) -> Result<(), String> {
    let mut p = Pair::new(
        client_config(),
        ServerConfig::default(),
        profile(1200, 0.0),
        seed,
    );
    assert!(p.connect());
    const FLIP_SIZES: [usize; 8] = [1100, 1137, 962, 961, 3000, 400, 1025, 1200];
    let mut ids: HashMap<MessageId, (u8, u32)> = HashMap::new();
    let mut sent = [0u32; 2];
    for t in 0..120u32 {
        if t % period == 0 {
            let size = if (t / period) % 2 == 1 { 1024 } else { 1200 };
            p.net.set_profile(profile(size, loss));
            p.client.set_max_datagram_size(p.now, size).unwrap();
        }
        for _ in 0..per_tick {
            for ch in 0..2u8 {
                let n = sent[ch as usize];
                let size = FLIP_SIZES[(n as usize * 7 + seed as usize) % FLIP_SIZES.len()];
                ids.insert(p.client.send(p.now, ch, payload(n, size)).unwrap(), (ch, n));
                sent[ch as usize] += 1;
            }
        }
        p.run_for(TICK_US);
    }
    p.run_while_not(60_000_000, |p| p.client.stats().send_buffer_bytes == 0);
    p.run_for(1_000_000);
    let mut got: [Vec<u32>; 2] =
        [0, 1].map(|ch| p.server_messages(ch).iter().map(|d| check(d)).collect());
    let mut errs = Vec::new();
    if got[0] != (0..sent[0]).collect::<Vec<_>>() {
        errs.push(format!(
            "ordered: {} of {} delivered",
            got[0].len(),
            sent[0]
        ));
    }
    got[1].sort_unstable();
    if got[1] != (0..sent[1]).collect::<Vec<_>>() {
        errs.push(format!(
            "unordered: {} of {} delivered",
            got[1].len(),
            sent[1]
        ));
    }
    let mut acked: HashMap<MessageId, u32> = HashMap::new();
    for e in &p.client_events {
        match e {
            Event::Acked(id) => *acked.entry(*id).or_default() += 1,
            Event::Lost(id) => errs.push(format!("reliable message {id} lost")),
            _ => {}
        }
    }
    let acked_undelivered = ids
        .iter()
        .filter(|(id, (ch, n))| acked.contains_key(id) && !got[*ch as usize].contains(n))
        .count();
    let not_acked_once = ids.keys().filter(|id| acked.get(id) != Some(&1)).count();
    if acked_undelivered + not_acked_once > 0 {
        errs.push(format!(
            "{acked_undelivered} acked but not delivered, {not_acked_once} not acked exactly once"
        ));
    }
    let held = p
        .server
        .connection(p.client.id())
        .unwrap()
        .receive_buffered_bytes();
    if held != 0 {
        errs.push(format!("{held} bytes left in reassembly"));
    }
    if p.net.client_to_server.stats().oversize_dropped != 0 {
        errs.push("datagrams over the size sent".into());
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join("; "))
    }
}

#[test]
fn flipping_between_1200_and_1024_under_loss_acks_each_reliable_message_once_after_delivery() {
    let mut failures = Vec::new();
    for seed in 0..12 {
        for (period, loss, per_tick) in [(2, 0.2, 1), (2, 0.3, 6), (1, 0.1, 4)] {
            if let Err(e) = flipping(seed, period, loss, per_tick) {
                failures.push(format!(
                    "seed {seed} period {period} loss {loss} per tick {per_tick}: {e}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
