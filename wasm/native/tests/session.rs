//! Connection lifecycle over real UDP on 127.0.0.1: connect, accept,
//! reject, close.

mod common;

use std::time::{Duration, Instant};

use common::{Harness, LOOPBACK, TICK};
use ricochet_native::{
    AcceptPolicy, CloseReason, Event, SendError, ServerConfig, State, UdpClient, UdpServer,
};

#[test]
fn client_and_server_connect() {
    let mut h = Harness::new(AcceptPolicy::AcceptAll, b"token-1");
    assert!(h.run_until(Duration::from_secs(3), |h| h.client.is_connected()));
    let id = h.client.id();
    assert!(h.server_events.contains(&(
        id,
        Event::ConnectRequest {
            payload: b"token-1".to_vec()
        }
    )));
    assert!(h.server_events.contains(&(id, Event::Connected)));
    assert_eq!(h.client_events, vec![Event::Connected]);
    assert_eq!(h.server.connection_ids(), vec![id]);
    assert_eq!(h.server.peer_addr(id), Some(h.client.local_addr().unwrap()));
    assert!(h.server.stats(id).is_some());
}

#[test]
fn manual_accept_surfaces_the_request_and_connects_after_accept() {
    let mut h = Harness::new(AcceptPolicy::Manual, b"let me in");
    let id = h.client.id();
    assert!(h.run_until(Duration::from_secs(3), |h| !h.server_events.is_empty()));
    assert_eq!(
        h.server_events,
        vec![(
            id,
            Event::ConnectRequest {
                payload: b"let me in".to_vec()
            }
        )]
    );
    h.step();
    assert_eq!(
        h.client.state(),
        State::Connecting,
        "connected before accept"
    );
    assert!(h.server.accept(id));
    assert!(!h.server.accept(id), "accepted twice");
    assert!(h.run_until(Duration::from_secs(3), |h| h.client.is_connected()));
}

#[test]
fn rejected_handshake_carries_its_reason() {
    let mut h = Harness::new(AcceptPolicy::Manual, b"bad token");
    let id = h.client.id();
    assert!(h.run_until(Duration::from_secs(3), |h| !h.server_events.is_empty()));
    assert!(h.server.reject(id, "token expired"));
    assert!(h.run_until(Duration::from_secs(3), |h| !h.client_events.is_empty()));
    assert_eq!(
        h.client_events,
        vec![Event::Closed(CloseReason::Rejected {
            reason: "token expired".into()
        })]
    );
    assert!(h.client.is_drained());
    assert_eq!(h.server.connection_count(), 0);
    // The address of a refused handshake is not kept.
    h.run_until(Duration::from_millis(20), |_| false);
    assert_eq!(h.server.peer_addr(id), None);
}

#[test]
fn client_close_reaches_the_server() {
    let mut h = Harness::connected();
    let id = h.client.id();
    h.client.close(42, "bye from client");
    h.client.flush();
    assert!(h.run_until(Duration::from_secs(3), |h| h
        .server_events
        .iter()
        .any(|(_, e)| matches!(e, Event::Closed(_)))));
    let closed: Vec<_> = h
        .server_events
        .iter()
        .filter(|(_, e)| matches!(e, Event::Closed(_)))
        .collect();
    assert_eq!(
        closed,
        vec![&(
            id,
            Event::Closed(CloseReason::Peer {
                code: 42,
                reason: "bye from client".into()
            })
        )]
    );
    assert_eq!(
        h.client_events.last(),
        Some(&Event::Closed(CloseReason::Local {
            code: 42,
            reason: "bye from client".into()
        }))
    );
}

#[test]
fn server_close_reaches_the_client() {
    let mut h = Harness::connected();
    let id = h.client.id();
    h.server.close(id, 7, "kicked");
    assert!(h.run_until(Duration::from_secs(3), |h| h.client.is_drained()));
    assert_eq!(
        h.client_events.last(),
        Some(&Event::Closed(CloseReason::Peer {
            code: 7,
            reason: "kicked".into()
        }))
    );
    assert!(
        matches!(h.server.send(id, 0, b"late".to_vec()), Err(SendError::NotConnected(m)) if m == b"late")
    );
    // The server forgets the connection once it has drained.
    assert!(h.run_until(Duration::from_secs(3), |h| h.server.connection_count() == 0));
}

#[test]
fn send_to_an_unknown_connection_hands_the_message_back() {
    let mut server = UdpServer::bind(LOOPBACK, ServerConfig::default()).unwrap();
    assert_eq!(
        server.send(12345, 0, b"hello".to_vec()),
        Err(SendError::NotConnected(b"hello".to_vec()))
    );
}

#[test]
fn broadcast_reaches_every_connected_client() {
    let mut h = Harness::connected();
    let mut second =
        UdpClient::connect(h.server.local_addr().unwrap(), common::client_config(), b"").unwrap();
    let mut second_events = Vec::new();
    let mut step_both = |h: &mut Harness, second_events: &mut Vec<Event>| {
        h.step();
        second.poll(TICK).unwrap();
        second_events.extend(second.events());
    };
    let deadline = Instant::now() + Duration::from_secs(3);
    while second_events.is_empty() && Instant::now() < deadline {
        step_both(&mut h, &mut second_events);
    }
    assert_eq!(second_events, vec![Event::Connected]);
    assert_eq!(h.server.broadcast(1, b"to all"), 2);
    while second_events.len() < 2 && Instant::now() < deadline + Duration::from_secs(3) {
        step_both(&mut h, &mut second_events);
    }
    assert!(h.run_until(Duration::from_secs(3), |h| !h.client_messages(1).is_empty()));
    assert_eq!(h.client_messages(1), vec![b"to all".as_slice()]);
    assert_eq!(
        second_events[1],
        Event::Message {
            channel: 1,
            data: b"to all".to_vec()
        }
    );
}

#[test]
fn invalid_config_is_an_invalid_input_error() {
    let mut config = ServerConfig::default();
    config.connection.max_datagram_size = 10;
    let err = UdpServer::bind(LOOPBACK, config)
        .err()
        .expect("invalid config accepted");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("max_datagram_size"), "{err}");
}
