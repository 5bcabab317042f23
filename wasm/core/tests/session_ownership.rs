//! Sessions belong to whoever opened them: knowing a live connection ID is
//! not enough to hijack, close, feed or stall a session, and a server never
//! answers a HELLO with more bytes than it carried (WIRE.md, version 3).

mod common;

use common::{check, payload};
use ricochet_core::auth::{welcome_number, Direction, SessionKey, TagKey};
use ricochet_core::wire::{self, ChannelKind, Writer};
use ricochet_core::{
    CloseReason, Config, Connection, DropReason, Event, Server, ServerConfig, State,
};
use ricochet_sim::pair::insecure_seeded_entropy;
use ricochet_sim::pair::{AcceptPolicy, Pair};
use ricochet_sim::NetworkProfile;

const SEED: u64 = 21;
const IMPOSTOR_KEY: SessionKey = [0x66; 16];

/// The session key of the pair's client (seeded, so the test knows it).
fn client_key() -> SessionKey {
    insecure_seeded_entropy(SEED)[4..].try_into().unwrap()
}

fn packet(f: impl FnOnce(&mut Writer) -> bool) -> Vec<u8> {
    let mut buf = vec![0u8; 1500];
    let mut w = Writer::new(&mut buf);
    assert!(f(&mut w));
    let n = w.len();
    buf.truncate(n);
    buf
}

fn hello(id: u32, key: &SessionKey) -> Vec<u8> {
    packet(|w| {
        let ok = wire::encode_hello(w, id, &[ChannelKind::ReliableOrdered], key, b"");
        wire::pad_hello(w);
        ok
    })
}

/// A DATA packet with these frames, tagged under `tag_key`.
fn data(id: u32, pn: u64, tag_key: TagKey, frames: impl FnOnce(&mut Writer) -> bool) -> Vec<u8> {
    let mut d = packet(|w| wire::encode_data_header(w, id, pn) && frames(w));
    tag_key.seal(&mut d, pn);
    d
}

/// The client → server key of `key` under the pair's server nonce.
fn up(p: &Pair, key: &SessionKey) -> TagKey {
    TagKey::derive_client(key, &p.server_conn().unwrap().nonce())
}

fn down(key: &SessionKey) -> TagKey {
    TagKey::derive(key, Direction::ServerToClient)
}

fn connected_pair() -> Pair {
    let mut p = Pair::over(NetworkProfile::lan(), SEED);
    assert!(p.connect());
    p
}

fn closes(p: &Pair) -> usize {
    let server = p
        .server_events
        .iter()
        .filter(|(_, e)| matches!(e, Event::Closed(_)))
        .count();
    server
        + p.client_events
            .iter()
            .filter(|e| matches!(e, Event::Closed(_)))
            .count()
}

/// Send `n` reliable messages from the client and check the server got
/// exactly 0..n, in order.
fn delivers(p: &mut Pair, n: u32) {
    for i in 0..n {
        p.client.send(p.now, 0, payload(i, 100)).unwrap();
        p.run_for(16_667);
    }
    assert!(
        p.run_while_not(2_000_000, |p| p.server_messages(0).len() == n as usize),
        "delivery stalled"
    );
    let got: Vec<u32> = p.server_messages(0).iter().map(|d| check(d)).collect();
    assert_eq!(got, (0..n).collect::<Vec<_>>());
}

#[test]
fn a_hello_with_a_live_sessions_id_and_another_key_is_dropped_without_an_answer() {
    let mut p = connected_pair();
    let id = p.client.id();
    // Err: a host following Ok(id) keeps the session at the client's address.
    assert_eq!(
        p.server.handle_datagram(p.now, &hello(id, &IMPOSTOR_KEY)),
        Err(DropReason::Unauthenticated)
    );
    let mut buf = vec![0u8; 1500];
    assert_eq!(
        p.server.poll_transmit(p.now, &mut buf),
        None,
        "no WELCOME for the impostor"
    );
    // The real client's own HELLO (a resumption from a new address) still moves it.
    assert_eq!(
        p.server.handle_datagram(p.now, &hello(id, &client_key())),
        Ok(id)
    );
    delivers(&mut p, 20);
}

#[test]
fn a_hello_with_a_pending_or_rejected_id_and_another_key_is_dropped() {
    let mut server = Server::new(
        ServerConfig::default(),
        &ricochet_sim::pair::TEST_SERVER_SECRET,
    )
    .unwrap();
    let key: SessionKey = [1; 16];
    assert_eq!(server.handle_datagram(0, &hello(7, &key)), Ok(7));
    assert_eq!(
        server.handle_datagram(0, &hello(7, &IMPOSTOR_KEY)),
        Err(DropReason::Unauthenticated)
    );
    assert_eq!(
        server.handle_datagram(0, &hello(7, &key)),
        Ok(7),
        "its own retransmission is fine"
    );
    assert!(server.reject(0, 7, "no"));
    let mut buf = vec![0u8; 1500];
    while server.poll_transmit(0, &mut buf).is_some() {}
    assert_eq!(
        server.handle_datagram(0, &hello(7, &IMPOSTOR_KEY)),
        Err(DropReason::Unauthenticated)
    );
    assert_eq!(server.poll_transmit(0, &mut buf), None);
    assert_eq!(server.handle_datagram(0, &hello(7, &key)), Ok(7));
    assert!(
        server.poll_transmit(0, &mut buf).is_some(),
        "the REJECT is repeated to its own client"
    );
}

#[test]
fn an_injected_close_with_a_wrong_tag_ends_neither_side() {
    let mut p = connected_pair();
    let id = p.client.id();
    let close = |w: &mut Writer| wire::encode_close(w, 1, b"bye");
    // Numbers neither side has used yet (packets_out also counts HELLO/WELCOME).
    let to_server_pn = p.client.stats().packets_out + 100;
    let to_client_pn = p.server_conn().unwrap().stats().packets_out + 100;
    for k in 0..8 {
        // The right direction key and a fresh number: only the tag is wrong.
        let mut to_server = data(id, to_server_pn + k, up(&p, &client_key()), close);
        let mut to_client = data(id, to_client_pn + k, down(&client_key()), close);
        to_server[7] ^= 1;
        to_client[14] ^= 0x80;
        assert_eq!(
            p.server.handle_datagram(p.now, &to_server),
            Err(DropReason::Unauthenticated)
        );
        assert_eq!(
            p.client.handle_datagram(p.now, &to_client),
            Err(DropReason::Unauthenticated)
        );
    }
    assert_eq!(closes(&p), 0);
    assert!(p.client.is_connected() && p.server_conn().unwrap().is_connected());
    delivers(&mut p, 20);
    // Positive control: the same packets with the right tag do close each side.
    let to_server_pn = p.client.stats().packets_out + 100;
    let to_client_pn = p.server_conn().unwrap().stats().packets_out + 100;
    let to_server = data(id, to_server_pn, up(&p, &client_key()), close);
    let to_client = data(id, to_client_pn, down(&client_key()), close);
    assert_eq!(p.server.handle_datagram(p.now, &to_server), Ok(id));
    assert_eq!(p.client.handle_datagram(p.now, &to_client), Ok(()));
    p.drive();
    let peer_close = |e: &Event| matches!(e, Event::Closed(CloseReason::Peer { code: 1, reason }) if reason == "bye");
    assert!(p.server_events.iter().any(|(_, e)| peer_close(e)));
    assert!(p.client_events.iter().any(peer_close));
}

#[test]
fn forged_data_is_dropped_before_it_changes_anything() {
    let mut p = connected_pair();
    let id = p.client.id();
    p.run_for(1_000_000);
    let before = p.server_conn().unwrap().stats();
    let idle_at = p.server_conn().unwrap().poll_timeout();
    let forged = data(id, before.packets_in + 1, up(&p, &IMPOSTOR_KEY), |w| {
        w.put_u8(wire::FRAME_PING)
            && w.put_u8(wire::FRAME_MESSAGES)
            && w.put_u8(0)
            && w.put_u16(0)
            && w.put_u8(1)
            && w.put_len_prefixed(b"x")
    });
    assert_eq!(
        p.server.handle_datagram(p.now + 10, &forged),
        Err(DropReason::Unauthenticated)
    );
    let after = p.server_conn().unwrap().stats();
    assert_eq!(
        (after.packets_in, after.bytes_in, after.unauthenticated),
        (before.packets_in, before.bytes_in, 1)
    );
    assert_eq!(
        p.server_conn().unwrap().poll_timeout(),
        idle_at,
        "no ACK owed, no idle refresh"
    );
    let mut buf = vec![0u8; 1500];
    assert_eq!(p.server.poll_transmit(p.now + 10, &mut buf), None);
    assert!(p.server_messages(0).is_empty());
}

#[test]
fn the_servers_packets_do_not_verify_as_the_clients() {
    // Each direction has its own key: a reflected packet is not authentic.
    let mut p = connected_pair();
    let id = p.client.id();
    let reflected = data(id, 1, down(&client_key()), |w| {
        wire::encode_close(w, 1, b"bye")
    });
    assert_eq!(
        p.server.handle_datagram(p.now, &reflected),
        Err(DropReason::Unauthenticated)
    );
    assert!(p.server_conn().unwrap().is_connected());
}

#[test]
fn a_packet_number_jump_of_30000_is_refused_and_the_client_keeps_delivering() {
    let mut p = connected_pair();
    delivers(&mut p, 5);
    let id = p.client.id();
    // Authentic (right key), as a buggy or malicious peer would send it.
    let pn = p.client.stats().packets_out + 30_000;
    let jump = data(id, pn, up(&p, &client_key()), |w| {
        w.put_u8(wire::FRAME_PING)
    });
    assert_eq!(
        p.server.handle_datagram(p.now, &jump),
        Err(DropReason::TooFarAhead)
    );
    assert_eq!(p.server_conn().unwrap().stats().too_far_ahead, 1);
    for i in 5..25 {
        p.client.send(p.now, 0, payload(i, 100)).unwrap();
        p.run_for(16_667);
    }
    assert!(
        p.run_while_not(2_000_000, |p| p.server_messages(0).len() == 25),
        "the real client's packets look like duplicates"
    );
    assert_eq!(p.server_conn().unwrap().stats().duplicates, 0);
}

#[test]
fn a_forged_welcome_or_reject_does_not_move_a_connecting_client() {
    let client =
        || Connection::client(Config::default(), 0, &insecure_seeded_entropy(SEED), b"").unwrap();
    let nonce = [9; 8];
    let sealed = |mut d: Vec<u8>, key: &SessionKey| {
        let number = if d[0] == wire::PACKET_WELCOME {
            welcome_number(&nonce)
        } else {
            0
        };
        TagKey::derive(key, Direction::ServerToClient).seal(&mut d, number);
        d
    };
    let mut c = client();
    let id = c.id();
    let welcome = packet(|w| wire::encode_welcome(w, id, &nonce));
    let reject = packet(|w| wire::encode_reject(w, id, b"go away"));
    assert_eq!(
        c.handle_datagram(0, &sealed(welcome.clone(), &IMPOSTOR_KEY)),
        Err(DropReason::Unauthenticated)
    );
    assert_eq!(
        c.handle_datagram(0, &reject),
        Err(DropReason::Unauthenticated),
        "untagged"
    );
    assert_eq!(
        c.handle_datagram(0, &sealed(reject.clone(), &IMPOSTOR_KEY)),
        Err(DropReason::Unauthenticated)
    );
    assert_eq!(c.state(), State::Connecting);
    assert_eq!(c.poll_event(), None);
    // Positive controls: tagged under the session's key, each one acts.
    assert_eq!(
        c.handle_datagram(0, &sealed(welcome, &client_key())),
        Ok(())
    );
    assert_eq!(
        (c.state(), c.poll_event()),
        (State::Connected, Some(Event::Connected))
    );
    let mut c = client();
    assert_eq!(c.handle_datagram(0, &sealed(reject, &client_key())), Ok(()));
    assert_eq!(
        c.poll_event(),
        Some(Event::Closed(CloseReason::Rejected {
            reason: "go away".into()
        }))
    );
}

#[test]
fn a_minimal_hello_draws_a_reject_no_larger_than_itself() {
    let mut server = Server::new(
        ServerConfig::default(),
        &ricochet_sim::pair::TEST_SERVER_SECRET,
    )
    .unwrap();
    // Unpadded, no payload, another version: 26 bytes, the least a HELLO can be.
    let mut small = packet(|w| wire::encode_hello(w, 5, &[ChannelKind::Unreliable], &[2; 16], b""));
    small[5] = 99;
    assert_eq!(small.len(), 26);
    assert_eq!(server.handle_datagram(0, &small), Ok(5));
    let mut buf = vec![0u8; 1500];
    let (_, n) = server.poll_transmit(0, &mut buf).unwrap();
    assert!(
        n <= small.len(),
        "a {}-byte HELLO drew a {n}-byte REJECT",
        small.len()
    );
    // Still a valid, tagged REJECT with a prefix of the reason.
    let mut entropy = [2u8; 20];
    entropy[..4].copy_from_slice(&5u32.to_le_bytes());
    let mut client = Connection::client(Config::default(), 0, &entropy, b"").unwrap();
    client.handle_datagram(0, &buf[..n]).unwrap();
    assert!(
        matches!(client.poll_event(), Some(Event::Closed(CloseReason::Rejected { reason })) if "unsupported protocol version 99".starts_with(&reason) && !reason.is_empty())
    );
}

#[test]
fn a_padded_hello_has_room_for_the_whole_reason() {
    let mut p = Pair::over(NetworkProfile::lan(), SEED);
    p.accept = AcceptPolicy::Reject("room full: try the next one".into());
    p.run_for(1_000_000);
    assert!(p
        .client_events
        .contains(&Event::Closed(CloseReason::Rejected {
            reason: "room full: try the next one".into()
        })));
    // A long reason is cut to what a padded HELLO (128 bytes) allows.
    let mut p = Pair::over(NetworkProfile::lan(), SEED);
    p.accept = AcceptPolicy::Reject("é".repeat(200));
    p.run_for(1_000_000);
    let reason = p.client_events.iter().find_map(|e| match e {
        Event::Closed(CloseReason::Rejected { reason }) => Some(reason.clone()),
        _ => None,
    });
    assert_eq!(
        reason,
        Some("é".repeat((wire::HELLO_MIN_LEN - wire::HANDSHAKE_REPLY_HEADER_LEN - 1) / 2))
    );
}
