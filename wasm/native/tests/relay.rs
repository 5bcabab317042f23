//! A server with a relay key, over real UDP on 127.0.0.1: clients that
//! come through a relay are admitted with the claims it verified; clients
//! that come straight to the server are refused.

mod common;

use std::time::{Duration, Instant};

use common::{client_config, Relay, LOOPBACK, TICK};
use ricochet_native::{
    attest_key, AcceptPolicy, CloseReason, Event, ServerConfig, UdpClient, UdpServer,
};

const SECRET: &str = "relay token secret";
const CLAIMS: &str = r#"{"sub":"alice","data":"room=7"}"#;

fn relayed_server() -> UdpServer {
    let config = ServerConfig {
        relay_key: Some(attest_key(SECRET.as_bytes())),
        ..ServerConfig::default()
    };
    UdpServer::bind(LOOPBACK, config).expect("bind server")
}

#[test]
fn a_client_through_the_relay_is_admitted_with_its_claims() {
    let mut server = relayed_server();
    let mut relay = Relay::new(server.local_addr().unwrap(), SECRET, CLAIMS);
    let mut client = UdpClient::connect(relay.addr(), client_config(), b"join room 7").unwrap();
    let id = client.id();
    let mut request = None;
    let deadline = Instant::now() + Duration::from_secs(3);
    while !client.is_connected() && Instant::now() < deadline {
        server.poll(TICK).unwrap();
        while let Some((from, ev)) = server.next_event() {
            if let Event::ConnectRequest { payload } = ev {
                request = Some((from, payload, server.claims(from).map(<[u8]>::to_vec)));
                assert!(server.accept(from));
            }
        }
        relay.pump();
        client.poll(TICK).unwrap();
        relay.pump();
    }
    assert!(client.is_connected(), "no connection through the relay");
    assert_eq!(
        request,
        Some((
            id,
            b"join room 7".to_vec(),
            Some(CLAIMS.as_bytes().to_vec())
        ))
    );
    assert_eq!(server.claims(id), Some(CLAIMS.as_bytes()));
}

#[test]
fn a_client_that_bypasses_the_relay_is_not_admitted() {
    let mut server = relayed_server();
    server.set_accept_policy(AcceptPolicy::AcceptAll);
    let mut client =
        UdpClient::connect(server.local_addr().unwrap(), client_config(), b"join").unwrap();
    let mut client_events = Vec::new();
    let mut server_events = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(3);
    while client_events.is_empty() && Instant::now() < deadline {
        server.poll(TICK).unwrap();
        server_events.extend(server.events());
        client.poll(TICK).unwrap();
        client_events.extend(client.events());
    }
    assert_eq!(
        client_events,
        vec![Event::Closed(CloseReason::Rejected {
            reason: "not admitted by a relay".into()
        })]
    );
    assert_eq!(server_events, vec![]);
    assert_eq!(server.connection_count(), 0);
}
