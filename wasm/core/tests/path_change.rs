//! Resumption after a dead path: the host moves the connection to a new
//! transport (`handle_path_change`), and a peer that hears from the other
//! side again after a long silence stops waiting out its probe backoff.

mod common;

use common::{check, payload};
use ricochet_sim::pair::Pair;
use ricochet_sim::{LinkConfig, LossModel, NetworkProfile};

const TICK_US: u64 = 16_667;

fn dead() -> NetworkProfile {
    let l = LinkConfig {
        loss: LossModel::iid(1.0),
        ..LinkConfig::default()
    };
    NetworkProfile {
        name: "dead",
        client_to_server: l,
        server_to_client: l,
    }
}

/// Connect over the S1 path, then keep sending one reliable message a tick
/// through a 5 s outage (the server always, the client if `client_sends`).
/// Returns how many each side sent.
fn outage_with_traffic(p: &mut Pair, client_sends: bool) -> (u32, u32) {
    assert!(p.connect());
    let id = p.client.id();
    let (mut up, mut down) = (0u32, 0u32);
    let tick = |p: &mut Pair, up: &mut u32, down: &mut u32| {
        if client_sends {
            p.client.send(p.now, 0, payload(*up, 400)).unwrap();
            *up += 1;
        }
        p.server.send(p.now, id, 0, payload(*down, 400)).unwrap();
        *down += 1;
        p.run_for(TICK_US);
    };
    for _ in 0..60 {
        tick(p, &mut up, &mut down);
    }
    p.net.set_profile(dead());
    for _ in 0..300 {
        tick(p, &mut up, &mut down);
    }
    p.net.set_profile(NetworkProfile::s1(LossModel::None));
    (up, down)
}

fn in_order(msgs: Vec<&[u8]>) -> Vec<u32> {
    msgs.iter().map(|d| check(d)).collect()
}

#[test]
fn path_change_delivers_everything_queued_during_an_outage_within_a_few_round_trips() {
    let mut p = Pair::over(NetworkProfile::s1(LossModel::None), 11);
    let (up, down) = outage_with_traffic(&mut p, true);
    let restored = p.now;
    p.client.handle_path_change(p.now);
    let done = p.run_while_not(2_000_000, |p| {
        p.server_messages(0).len() == up as usize && p.client_messages(0).len() == down as usize
    });
    assert!(
        done,
        "server got {}/{up}, client got {}/{down}",
        p.server_messages(0).len(),
        p.client_messages(0).len()
    );
    // 5 s of silence backs probes off to seconds; after the path change both
    // directions catch up in a few 20 ms round trips (congestion window
    // regrowth included), not at the next backed-off probe.
    let took = p.now - restored;
    assert!(
        took < 400_000,
        "caught up {took} µs after the path came back"
    );
    assert_eq!(in_order(p.server_messages(0)), (0..up).collect::<Vec<_>>());
    assert_eq!(
        in_order(p.client_messages(0)),
        (0..down).collect::<Vec<_>>()
    );
}

#[test]
fn peer_heard_again_after_long_silence_resends_without_waiting_for_its_backoff() {
    let mut p = Pair::over(NetworkProfile::s1(LossModel::None), 12);
    let (_, down) = outage_with_traffic(&mut p, false);
    let restored = p.now;
    // No path change: the client, with nothing of its own in flight, merely
    // sends again. The server, hearing it after 5 s of silence, must probe at
    // the base interval, not at its backed-off probe timeout.
    p.client.send(p.now, 1, payload(9_999, 10)).unwrap();
    assert!(p.run_while_not(2_000_000, |p| p.client_messages(0).len() == down as usize));
    let took = p.now - restored;
    assert!(
        took < 500_000,
        "server caught up {took} µs after hearing from the client"
    );
    assert_eq!(
        in_order(p.client_messages(0)),
        (0..down).collect::<Vec<_>>()
    );
}

#[test]
fn path_change_while_connecting_resends_hello_at_once() {
    let mut p = Pair::over(dead(), 13);
    p.run_for(1_500_000); // HELLO resends have backed off
    p.net.set_profile(NetworkProfile::s1(LossModel::None));
    let at = p.now;
    p.client.handle_path_change(p.now);
    assert!(p.run_while_not(1_000_000, |p| p.client.is_connected()));
    assert!(
        p.now - at < 60_000,
        "connected {} µs after the path change",
        p.now - at
    );
}
