//! Path validation (WIRE.md): an authentic datagram from a new address does
//! not move a validated session; the server challenges the address (within
//! 3× what came from it) and the session follows only a PATH_RESPONSE.

mod common;

use common::payload;
use ricochet_core::auth::{SessionKey, TagKey};
use ricochet_core::wire::{self, Writer};
use ricochet_core::{PathEvent, Server, ServerConfig, AMPLIFICATION_FACTOR};
use ricochet_sim::pair::{insecure_seeded_entropy, Pair, TEST_SERVER_SECRET};
use ricochet_sim::NetworkProfile;

const SEED: u64 = 31;

fn client_key() -> SessionKey {
    insecure_seeded_entropy(SEED)[4..].try_into().unwrap()
}

/// A DATA packet from the session's own key holder, numbered `pn`.
fn authentic(p: &Pair, pn: u64, frames: impl FnOnce(&mut Writer) -> bool) -> Vec<u8> {
    let mut buf = vec![0u8; 1500];
    let mut w = Writer::new(&mut buf);
    assert!(wire::encode_data_header(&mut w, p.client.id(), pn) && frames(&mut w));
    let n = w.len();
    buf.truncate(n);
    TagKey::derive_client(&client_key(), &p.server_conn().unwrap().nonce()).seal(&mut buf, pn);
    buf
}

fn validated_pair() -> Pair {
    let mut p = Pair::over(NetworkProfile::lan(), SEED);
    assert!(p.connect());
    p.run_for(100_000);
    assert!(p.server_conn().unwrap().is_validated());
    p
}

/// Runs the server alone (nobody answers) for `dt`: bytes to the candidate
/// (each a PATH_CHALLENGE), bytes to the current address, path events.
fn run_server(server: &mut Server, mut now: u64, dt: u64) -> (u64, u64, Vec<(u32, PathEvent)>) {
    let (mut to_candidate, mut to_current, mut events) = (0, 0, Vec::new());
    let mut buf = vec![0u8; 1500];
    let end = now + dt;
    loop {
        while let Some((_, n)) = server.poll_transmit(now, &mut buf) {
            if server.transmit_to_candidate() {
                assert_eq!(
                    (buf[0], buf[wire::DATA_HEADER_LEN]),
                    (wire::PACKET_DATA, wire::FRAME_PATH_CHALLENGE)
                );
                to_candidate += n as u64;
            } else {
                to_current += n as u64;
            }
        }
        while server.poll_event().is_some() {}
        while let Some(e) = server.poll_path_event() {
            events.push(e);
        }
        match server.poll_timeout() {
            Some(t) if t <= end => {
                now = now.max(t);
                server.handle_timeout(now);
            }
            _ => return (to_candidate, to_current, events),
        }
    }
}

#[test]
fn tagged_data_from_a_new_address_draws_only_challenges_there_until_a_path_response() {
    let mut p = validated_pair();
    let id = p.client.id();
    // The key holder sends from a victim's address (spoofed source).
    let spoofed = authentic(&p, p.client.stats().packets_out + 50, |w| {
        w.put_u8(wire::FRAME_PING)
    });
    assert_eq!(p.server.handle_datagram(p.now, &spoofed), Ok(id));
    assert!(
        p.server.path_changed(p.now, id, spoofed.len()),
        "a validated session holds the new address as a candidate"
    );
    for i in 0..10 {
        p.server.send(p.now, id, 0, payload(i, 1_000)).unwrap();
    }
    let (victim, current, events) = run_server(&mut p.server, p.now, 2_000_000);
    assert!(victim > 0, "the candidate is challenged");
    assert!(
        victim <= AMPLIFICATION_FACTOR * spoofed.len() as u64,
        "{victim} bytes toward the victim"
    );
    assert!(
        current >= 10_000,
        "the stream stays on the current address: {current}"
    );
    assert_eq!(events, vec![(id, PathEvent::Abandoned)]);
}

#[test]
fn a_path_response_with_other_bytes_validates_nothing() {
    let mut p = validated_pair();
    let id = p.client.id();
    let pn = p.client.stats().packets_out + 50;
    let spoofed = authentic(&p, pn, |w| w.put_u8(wire::FRAME_PING));
    assert_eq!(p.server.handle_datagram(p.now, &spoofed), Ok(id));
    assert!(p.server.path_changed(p.now, id, spoofed.len()));
    // The key holder guesses, from the candidate address.
    let guess = authentic(&p, pn + 1, |w| {
        wire::encode_path_frame(w, wire::FRAME_PATH_RESPONSE, &[7; 8])
    });
    assert_eq!(p.server.handle_datagram(p.now, &guess), Ok(id));
    p.server.candidate_datagram(id, guess.len());
    assert_eq!(p.server.poll_path_event(), None);
    assert!(p.server_conn().unwrap().path_pending());
}

#[test]
fn a_client_that_really_moved_answers_the_challenge_and_the_session_follows_within_a_round_trip() {
    let mut p = validated_pair();
    let id = p.client.id();
    // The host saw the client's next datagram arrive from a new address.
    assert!(p.server.path_changed(p.now, id, 100));
    let start = p.now;
    // (The pair delivers to the client whatever the address: it is at both.)
    let mut events = Vec::new();
    assert!(p.run_while_not(1_000_000, |p| !p.server_conn().unwrap().path_pending()));
    while let Some(e) = p.server.poll_path_event() {
        events.push(e);
    }
    assert_eq!(events, vec![(id, PathEvent::Validated)]);
    assert!(
        p.now - start <= 2_000 + 500,
        "validated after {} µs (lan RTT ≈ 1 ms)",
        p.now - start
    );
    p.server.send(p.now, id, 0, payload(0, 100)).unwrap();
    assert!(p.run_while_not(1_000_000, |p| p.client_messages(0).len() == 1));
}

#[test]
fn before_the_client_is_validated_a_new_address_needs_no_challenge() {
    let mut server = Server::new(ServerConfig::default(), &TEST_SERVER_SECRET).unwrap();
    let mut client = ricochet_core::Connection::client(
        Default::default(),
        0,
        &insecure_seeded_entropy(SEED),
        b"",
    )
    .unwrap();
    let mut buf = vec![0u8; 1500];
    let n = client.poll_transmit(0, &mut buf).unwrap();
    let id = server.handle_datagram(0, &buf[..n]).unwrap();
    assert!(server.accept(0, id));
    // Its 3× limit already covers whatever address the host sends to.
    assert!(!server.path_changed(0, id, n));
    assert!(!server.path_changed(0, 0x5eed, n), "unknown connection");
}
