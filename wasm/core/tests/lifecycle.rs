//! Connection lifecycle: handshake, rejection, close, timeouts.

mod common;

use common::payload;
use ricochet_core::{CloseReason, Config, Connection, Event, ServerConfig, State};
use ricochet_sim::pair::{AcceptPolicy, Pair};
use ricochet_sim::{LinkConfig, LossModel, NetworkProfile};

fn closed(events: &[Event]) -> Vec<&CloseReason> {
    events
        .iter()
        .filter_map(|e| {
            if let Event::Closed(r) = e {
                Some(r)
            } else {
                None
            }
        })
        .collect()
}

#[test]
fn handshake_payload_reaches_server() {
    let mut p = Pair::with_handshake(
        Config::default(),
        ServerConfig::default(),
        NetworkProfile::lan(),
        1,
        b"token-123",
    );
    assert!(p.connect());
    assert!(p.server_events.iter().any(|(_, e)| *e
        == Event::ConnectRequest {
            payload: b"token-123".to_vec()
        }));
    assert!(p.client_events.contains(&Event::Connected));
}

#[test]
fn rejected_handshake_carries_its_reason() {
    let mut p = Pair::over(NetworkProfile::lan(), 2);
    p.accept = AcceptPolicy::Reject("room is full".into());
    p.run_for(1_000_000);
    assert_eq!(
        closed(&p.client_events),
        vec![&CloseReason::Rejected {
            reason: "room is full".into()
        }]
    );
    assert_eq!(p.client.state(), State::Drained);
}

#[test]
fn handshake_survives_heavy_loss() {
    let mut p = Pair::over(NetworkProfile::s1(LossModel::iid(0.5)), 3);
    assert!(p.connect());
}

#[test]
fn handshake_times_out_without_server() {
    let lossy = LinkConfig {
        loss: LossModel::iid(1.0),
        ..LinkConfig::default()
    };
    let profile = NetworkProfile {
        name: "dead",
        client_to_server: lossy,
        server_to_client: lossy,
    };
    let mut p = Pair::over(profile, 4);
    p.run_for(10_000_000);
    assert_eq!(
        closed(&p.client_events),
        vec![&CloseReason::HandshakeTimeout]
    );
}

#[test]
fn version_mismatch_is_rejected_with_reason() {
    let mut server = ricochet_core::Server::new(
        ServerConfig::default(),
        &ricochet_sim::pair::TEST_SERVER_SECRET,
    )
    .unwrap();
    let mut client = Connection::client(
        Config::default(),
        0,
        &ricochet_sim::pair::insecure_seeded_entropy(9),
        b"",
    )
    .unwrap();
    let mut buf = vec![0u8; 1500];
    let n = client.poll_transmit(0, &mut buf).unwrap();
    buf[5] = 99; // version field (little-endian u16 after type and conn id)
    server.handle_datagram(0, &buf[..n]).unwrap();
    let (_, m) = server.poll_transmit(0, &mut buf).unwrap();
    client.handle_datagram(0, &buf[..m]).unwrap();
    let ev: Vec<Event> = std::iter::from_fn(|| client.poll_event()).collect();
    assert!(
        matches!(&ev[..], [Event::Closed(CloseReason::Rejected { reason })] if reason.contains("version 99"))
    );
}

#[test]
fn idle_timeout_closes_both_sides() {
    let cfg = Config {
        idle_timeout_us: 2_000_000,
        keepalive_interval_us: 500_000,
        ..Config::default()
    };
    let server = ServerConfig {
        connection: cfg.clone(),
        ..ServerConfig::default()
    };
    let mut p = Pair::new(cfg, server, NetworkProfile::lan(), 5);
    assert!(p.connect());
    // Keepalives hold the connection open while the link works...
    p.run_for(5_000_000);
    assert!(p.client.is_connected());
    // ...then the link dies entirely.
    let dead = LinkConfig {
        loss: LossModel::iid(1.0),
        ..LinkConfig::default()
    };
    p.net.set_profile(NetworkProfile {
        name: "dead",
        client_to_server: dead,
        server_to_client: dead,
    });
    p.run_for(3_000_000);
    assert_eq!(closed(&p.client_events), vec![&CloseReason::IdleTimeout]);
    let server_closed: Vec<_> = p
        .server_events
        .iter()
        .filter(|(_, e)| matches!(e, Event::Closed(_)))
        .collect();
    assert_eq!(server_closed.len(), 1);
    assert_eq!(server_closed[0].1, Event::Closed(CloseReason::IdleTimeout));
    assert_eq!(
        p.server.connection_count(),
        0,
        "server released the connection"
    );
}

#[test]
fn graceful_close_reaches_peer_with_code_and_reason() {
    let mut p = Pair::over(NetworkProfile::lan(), 6);
    assert!(p.connect());
    p.client.close(p.now, 4000, "player quit");
    p.run_for(1_000_000);
    assert_eq!(
        closed(&p.client_events),
        vec![&CloseReason::Local {
            code: 4000,
            reason: "player quit".into()
        }]
    );
    assert!(p.server_events.iter().any(|(_, e)| *e
        == Event::Closed(CloseReason::Peer {
            code: 4000,
            reason: "player quit".into()
        })));
    assert!(p.client.is_drained());
    assert_eq!(p.server.connection_count(), 0);
}

#[test]
fn server_close_reaches_client() {
    let mut p = Pair::over(NetworkProfile::lan(), 7);
    assert!(p.connect());
    let id = p.client.id();
    p.server.close(p.now, id, 1, "kicked");
    p.run_for(1_000_000);
    assert_eq!(
        closed(&p.client_events),
        vec![&CloseReason::Peer {
            code: 1,
            reason: "kicked".into()
        }]
    );
}

#[test]
fn close_reports_outstanding_messages_lost_before_closed() {
    let mut p = Pair::over(NetworkProfile::lan(), 8);
    assert!(p.connect());
    let id = p.client.send(p.now, 0, payload(1, 100)).unwrap();
    p.client.close(p.now, 0, "bye");
    let evs: Vec<Event> = std::iter::from_fn(|| p.client.poll_event()).collect();
    assert_eq!(
        evs,
        vec![
            Event::Lost(id),
            Event::Closed(CloseReason::Local {
                code: 0,
                reason: "bye".into()
            })
        ]
    );
}

#[test]
fn keepalive_measures_rtt_on_idle_connection() {
    let mut p = Pair::over(NetworkProfile::s1(LossModel::None), 9);
    assert!(p.connect());
    p.run_for(5_000_000);
    let rtt = p.client.stats().rtt_us;
    assert!((19_000..=27_000).contains(&rtt), "rtt {rtt}");
}

#[test]
fn replayed_hello_cannot_reopen_a_closed_connection_id() {
    let mut p = Pair::over(NetworkProfile::lan(), 10);
    let mut buf = vec![0u8; 1500];
    let n = p.client.poll_transmit(0, &mut buf).unwrap();
    let hello = buf[..n].to_vec(); // an attacker (or a slow path) keeps a copy
    p.net.client_to_server.send(0, &hello);
    assert!(p.connect());
    let id = p.client.id();
    p.server.close(p.now, id, 1, "bye");
    p.run_for(1_000_000);
    assert_eq!(p.server.connection_count(), 0);
    let requests = p
        .server_events
        .iter()
        .filter(|(_, e)| matches!(e, Event::ConnectRequest { .. }))
        .count();
    let _ = p.server.handle_datagram(p.now, &hello);
    p.drive();
    assert_eq!(
        p.server.connection_count(),
        0,
        "the retired ID stays closed"
    );
    let after = p
        .server_events
        .iter()
        .filter(|(_, e)| matches!(e, Event::ConnectRequest { .. }))
        .count();
    assert_eq!(after, requests, "no new connect request for a retired ID");
}

#[test]
fn malformed_data_does_not_complete_the_handshake() {
    let mut client = Connection::client(
        Config::default(),
        0,
        &ricochet_sim::pair::insecure_seeded_entropy(12),
        b"",
    )
    .unwrap();
    let id = client.id().to_le_bytes();
    let bogus = [4, id[0], id[1], id[2], id[3], 0, 0, 0xe4];
    assert!(client.handle_datagram(0, &bogus).is_err());
    assert_eq!(client.state(), State::Connecting);
    assert!(client.handle_datagram(0, &bogus[..5]).is_err());
    assert_eq!(client.state(), State::Connecting);
    assert_eq!(client.poll_event(), None);
}

/// A server that has accepted `n` clients' HELLOs (its WELCOMEs not yet
/// polled); client `i` is seeded `seed + i`.
fn server_accepting(cfg: &Config, n: u64, seed: u64) -> (ricochet_core::Server, Vec<Connection>) {
    let mut server = ricochet_core::Server::new(
        ServerConfig {
            connection: cfg.clone(),
            ..ServerConfig::default()
        },
        &ricochet_sim::pair::TEST_SERVER_SECRET,
    )
    .unwrap();
    let mut buf = vec![0u8; 1500];
    let mut clients: Vec<Connection> = (0..n)
        .map(|i| {
            Connection::client(
                cfg.clone(),
                0,
                &ricochet_sim::pair::insecure_seeded_entropy(seed + i),
                b"",
            )
            .unwrap()
        })
        .collect();
    for c in &mut clients {
        while let Some(n) = c.poll_transmit(0, &mut buf) {
            server.handle_datagram(0, &buf[..n]).unwrap();
        }
    }
    while let Some((id, ev)) = server.poll_event() {
        if let Event::ConnectRequest { .. } = ev {
            server.accept(0, id);
        }
    }
    (server, clients)
}

#[test]
fn server_times_out_many_silent_connections_each_once() {
    let cfg = Config {
        idle_timeout_us: 1_000_000,
        keepalive_interval_us: 200_000,
        ..Config::default()
    };
    let (mut server, _clients) = server_accepting(&cfg, 300, 1000);
    let mut buf = vec![0u8; 1500];
    while server.poll_transmit(0, &mut buf).is_some() {}
    assert_eq!(server.connection_count(), 300);
    // The clients fall silent: step the server through its own deadlines.
    let mut closed = 0;
    let mut steps = 0;
    while let Some(t) = server.poll_timeout() {
        steps += 1;
        assert!(steps < 100_000, "server timers never settle");
        server.handle_timeout(t);
        while server.poll_transmit(t, &mut buf).is_some() {}
        while let Some((_, ev)) = server.poll_event() {
            if let Event::Closed(r) = ev {
                assert_eq!(r, CloseReason::IdleTimeout);
                assert!((1_000_000..=1_100_000).contains(&t), "closed at {t}");
                closed += 1;
            }
        }
        if server.connection_count() == 0 && t > 2_000_000 {
            break;
        }
    }
    assert_eq!(closed, 300);
    assert_eq!(server.connection_count(), 0);
}

#[test]
fn server_deadline_stays_the_earliest_of_its_connections() {
    // The server reschedules only connections whose deadline moved and
    // skips stale heap entries lazily: through sends, losses, ACKs and
    // timeouts its next deadline must still be its connections' earliest.
    let cfg = Config::default();
    let (mut server, mut clients) = server_accepting(&cfg, 40, 5000);
    let mut buf = vec![0u8; 1500];
    for round in 1..400u64 {
        let now = round * 3_000;
        for (i, c) in clients.iter().enumerate() {
            if (i as u64 + round).is_multiple_of(3) {
                let _ = server.send(now, c.id(), 0, vec![i as u8; 40]);
            }
        }
        if server.poll_timeout().is_some_and(|t| t <= now) {
            server.handle_timeout(now);
        }
        while let Some((id, n)) = server.poll_transmit(now, &mut buf) {
            // Every fifth datagram is lost, so loss timers and probes run too.
            if !(id as u64 + round).is_multiple_of(5) {
                if let Some(c) = clients.iter_mut().find(|c| c.id() == id) {
                    let _ = c.handle_datagram(now, &buf[..n]);
                }
            }
        }
        for c in &mut clients {
            if c.poll_timeout().is_some_and(|t| t <= now) {
                c.handle_timeout(now);
            }
            while let Some(n) = c.poll_transmit(now, &mut buf) {
                let _ = server.handle_datagram(now, &buf[..n]);
            }
            while c.poll_event().is_some() {}
        }
        while server.poll_event().is_some() {}
        let earliest = server
            .connection_ids()
            .filter_map(|id| server.connection(id).and_then(|c| c.poll_timeout()))
            .min();
        assert_eq!(server.poll_timeout(), earliest, "round {round}");
    }
}
