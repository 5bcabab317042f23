//! A server with a relay key admits only HELLOs that a relay attested
//! (WIRE.md, "Relay attestation"), and learns the relay-verified claims.
//! Each test stands in for the relay: it rewrites the client's HELLO.

use ricochet_core::attest::{attest_key, relay_attest, AttestKey};
use ricochet_core::wire::{self, decode_handshake, Handshake, Writer};
use ricochet_core::{CloseReason, Config, Connection, Event, Server, ServerConfig, State};
use ricochet_sim::pair::insecure_seeded_entropy;

const CLAIMS: &[u8] = br#"{"sub":"alice","data":"room=7"}"#;

fn key() -> AttestKey {
    attest_key(b"relay token secret")
}

fn server(relay_key: Option<AttestKey>) -> Server {
    Server::new(
        ServerConfig {
            relay_key,
            ..ServerConfig::default()
        },
        &ricochet_sim::pair::TEST_SERVER_SECRET,
    )
    .unwrap()
}

/// A client and its first HELLO.
fn client(seed: u64, payload: &[u8]) -> (Connection, Vec<u8>) {
    let mut c = Connection::client(
        Config::default(),
        0,
        &insecure_seeded_entropy(seed),
        payload,
    )
    .unwrap();
    let mut buf = vec![0u8; 1500];
    let n = c.poll_transmit(0, &mut buf).unwrap();
    (c, buf[..n].to_vec())
}

/// What the relay forwards: the HELLO with its payload replaced by `f` of
/// (connection ID, session key, client payload).
fn rewrite(hello: &[u8], f: impl FnOnce(u32, &[u8; 16], &[u8]) -> Vec<u8>) -> Vec<u8> {
    let Ok(Handshake::Hello {
        conn_id,
        channels,
        key,
        payload,
        ..
    }) = decode_handshake(hello)
    else {
        panic!("not a HELLO")
    };
    let payload = f(conn_id, &key, payload);
    let mut buf = vec![0u8; 4096];
    let mut w = Writer::new(&mut buf);
    assert!(wire::encode_hello(
        &mut w, conn_id, &channels, &key, &payload
    ));
    let n = w.len();
    buf.truncate(n);
    buf
}

/// The HELLO as a relay that verified a token with these claims forwards it.
fn relayed(hello: &[u8], key: &AttestKey, claims: &[u8]) -> Vec<u8> {
    rewrite(hello, |id, k, p| {
        relay_attest(key, id, k, claims, p).unwrap()
    })
}

fn requests(server: &mut Server) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Some((_, ev)) = server.poll_event() {
        if let Event::ConnectRequest { payload } = ev {
            out.push(payload);
        }
    }
    out
}

/// Delivers the server's answers to the client; returns the client's events.
fn answer(server: &mut Server, client: &mut Connection) -> Vec<Event> {
    let mut buf = vec![0u8; 1500];
    while let Some((_, n)) = server.poll_transmit(0, &mut buf) {
        let _ = client.handle_datagram(0, &buf[..n]);
    }
    std::iter::from_fn(|| client.poll_event()).collect()
}

/// The server refuses the HELLO as not relay-admitted, with no request.
fn assert_not_admitted(hello: &[u8], seed_client: &mut Connection) {
    let mut s = server(Some(key()));
    assert_eq!(s.handle_datagram(0, hello), Ok(seed_client.id()));
    assert_eq!(requests(&mut s), Vec::<Vec<u8>>::new());
    assert_eq!(s.claims(seed_client.id()), None);
    let events = answer(&mut s, seed_client);
    assert_eq!(
        events,
        vec![Event::Closed(CloseReason::Rejected {
            reason: "not admitted by a relay".into()
        })]
    );
}

#[test]
fn a_relayed_hello_yields_the_claims_and_the_clients_own_payload() {
    let (mut c, hello) = client(1, b"join room 7");
    let mut s = server(Some(key()));
    assert_eq!(
        s.handle_datagram(0, &relayed(&hello, &key(), CLAIMS)),
        Ok(c.id())
    );
    assert_eq!(requests(&mut s), vec![b"join room 7".to_vec()]);
    assert_eq!(s.claims(c.id()), Some(CLAIMS));
    assert!(s.accept(0, c.id()));
    assert_eq!(answer(&mut s, &mut c), vec![Event::Connected]);
    assert_eq!(
        s.claims(c.id()),
        Some(CLAIMS),
        "claims stay with the live connection"
    );
}

#[test]
fn a_hello_without_an_attestation_is_not_admitted() {
    let (mut c, hello) = client(2, b"join");
    assert_not_admitted(&hello, &mut c);
}

#[test]
fn a_hello_with_a_bad_mac_is_not_admitted() {
    let (mut c, hello) = client(3, b"join");
    let forged = rewrite(&hello, |id, k, p| {
        let mut a = relay_attest(&key(), id, k, CLAIMS, p).unwrap();
        *a.last_mut().unwrap() ^= 1;
        a
    });
    assert_not_admitted(&forged, &mut c);
}

#[test]
fn an_attestation_under_another_secret_is_not_admitted() {
    let (mut c, hello) = client(4, b"join");
    assert_not_admitted(
        &relayed(&hello, &attest_key(b"another relay"), CLAIMS),
        &mut c,
    );
}

#[test]
fn an_attestation_bound_to_another_connection_id_is_not_admitted() {
    let (mut c, hello) = client(5, b"join");
    let moved = rewrite(&hello, |id, k, p| {
        relay_attest(&key(), id ^ 0x100, k, CLAIMS, p).unwrap()
    });
    assert_not_admitted(&moved, &mut c);
}

#[test]
fn an_attestation_bound_to_another_session_key_is_not_admitted() {
    let (mut c, hello) = client(6, b"join");
    let moved = rewrite(&hello, |id, _, p| {
        relay_attest(&key(), id, &[0x5a; 16], CLAIMS, p).unwrap()
    });
    assert_not_admitted(&moved, &mut c);
}

#[test]
fn claims_that_are_not_utf8_are_not_admitted() {
    let (mut c, hello) = client(7, b"join");
    assert_not_admitted(&relayed(&hello, &key(), &[0xff, 0xfe]), &mut c);
}

#[test]
fn the_payload_limit_counts_the_clients_payload_not_the_envelope() {
    // A client payload at the limit plus 1 KiB of claims: admitted.
    let (c, hello) = client(8, &[7; 512]);
    let big_claims = format!(r#"{{"sub":"{}"}}"#, "a".repeat(1014));
    assert_eq!(big_claims.len(), 1024);
    let mut s = server(Some(key()));
    assert_eq!(
        s.handle_datagram(0, &relayed(&hello, &key(), big_claims.as_bytes())),
        Ok(c.id())
    );
    assert_eq!(requests(&mut s), vec![vec![7; 512]]);
    assert_eq!(s.claims(c.id()), Some(big_claims.as_bytes()));
}

#[test]
fn a_retransmitted_relayed_hello_makes_no_second_request() {
    let (mut c, hello) = client(9, b"join");
    let mut s = server(Some(key()));
    let hello = relayed(&hello, &key(), CLAIMS);
    assert_eq!(s.handle_datagram(0, &hello), Ok(c.id()));
    assert_eq!(s.handle_datagram(1_000, &hello), Ok(c.id()));
    assert_eq!(requests(&mut s).len(), 1);
    assert!(s.accept(1_000, c.id()));
    assert_eq!(answer(&mut s, &mut c), vec![Event::Connected]);
    assert_eq!(
        s.handle_datagram(2_000, &hello),
        Ok(c.id()),
        "answered again"
    );
    assert_eq!(requests(&mut s).len(), 0);
    let mut buf = vec![0u8; 1500];
    let (_, n) = s.poll_transmit(2_000, &mut buf).unwrap();
    assert_eq!(buf[0], wire::PACKET_WELCOME);
    let _ = c.handle_datagram(2_000, &buf[..n]);
    assert_eq!(c.state(), State::Connected);
}

#[test]
fn without_a_relay_key_hellos_are_taken_as_sent() {
    let (mut c, hello) = client(10, b"direct");
    let mut s = server(None);
    assert_eq!(s.handle_datagram(0, &hello), Ok(c.id()));
    assert_eq!(requests(&mut s), vec![b"direct".to_vec()]);
    assert_eq!(s.claims(c.id()), None);
    assert!(s.accept(0, c.id()));
    assert_eq!(answer(&mut s, &mut c), vec![Event::Connected]);
}

#[test]
fn without_a_relay_key_a_relayed_hello_gives_the_clients_payload_and_no_claims() {
    let (c, hello) = client(11, b"join");
    let hello = relayed(&hello, &key(), CLAIMS);
    let mut s = server(None);
    assert_eq!(s.handle_datagram(0, &hello), Ok(c.id()));
    assert_eq!(requests(&mut s), vec![b"join".to_vec()]);
    assert_eq!(s.claims(c.id()), None);
}

/// Connects a client (through the stand-in relay when `relay_key` is set),
/// has the server send three 1,100-byte reliable messages, and returns the
/// largest datagram the server sent once they were delivered.
fn largest_datagram_to_client(relay_key: Option<AttestKey>) -> usize {
    let (mut c, hello) = client(40, b"join");
    let mut s = server(relay_key);
    let hello = match &relay_key {
        Some(k) => relayed(&hello, k, CLAIMS),
        None => hello,
    };
    assert_eq!(s.handle_datagram(0, &hello), Ok(c.id()));
    requests(&mut s);
    assert!(s.accept(0, c.id()));
    assert_eq!(answer(&mut s, &mut c), vec![Event::Connected]);
    for _ in 0..3 {
        s.send(0, c.id(), 0, vec![7; 1100]).unwrap();
    }
    let (mut largest, mut delivered, mut buf) = (0, 0, vec![0u8; 1500]);
    for tick in 1..200u64 {
        let now = tick * 10_000;
        while let Some((_, n)) = s.poll_transmit(now, &mut buf) {
            largest = largest.max(n);
            let _ = c.handle_datagram(now, &buf[..n]);
        }
        delivered += std::iter::from_fn(|| c.poll_event())
            .filter(|e| matches!(e, Event::Message { .. }))
            .count();
        while let Some(n) = c.poll_transmit(now, &mut buf) {
            let _ = s.handle_datagram(now, &buf[..n]);
        }
        if delivered == 3 {
            return largest;
        }
    }
    panic!("delivered {delivered} of 3");
}

#[test]
fn a_relayed_client_gets_datagrams_every_relay_transport_carries() {
    assert!(largest_datagram_to_client(Some(key())) <= ricochet_core::RELAYED_DATAGRAM_SIZE);
}

#[test]
fn a_direct_client_gets_datagrams_of_the_configured_size() {
    assert!(largest_datagram_to_client(None) > ricochet_core::RELAYED_DATAGRAM_SIZE);
}
