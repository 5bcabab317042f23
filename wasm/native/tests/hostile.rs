//! Sessions survive what other sockets send, and follow their client to a
//! new address (sessions are found by connection ID, not address).

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use common::{check, client_config, payload, Harness, LOOPBACK, TICK};
use ricochet_core::wire::{self, ChannelKind, Writer};
use ricochet_core::Connection;
use ricochet_native::{AcceptPolicy, Event, ServerConfig, UdpServer};
use ricochet_sim::pair::insecure_seeded_entropy;

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// One hostile datagram: random bytes, plausible headers for random or the
/// live connection ID (always invalid for it), and well-formed HELLOs for
/// other IDs.
fn garbage(rng: &mut XorShift, live: u32) -> (Vec<u8>, bool) {
    match rng.next() % 5 {
        0 => {
            let n = (rng.next() % 1400) as usize;
            (rng.bytes(n), false)
        }
        1 => {
            let mut d = vec![1 + (rng.next() % 4) as u8];
            d.extend_from_slice(&(rng.next() as u32).to_le_bytes());
            let n = (rng.next() % 200) as usize;
            d.extend(rng.bytes(n));
            (d, false)
        }
        2 => {
            // DATA for the live session, shorter than its header.
            let mut d = vec![wire::PACKET_DATA];
            d.extend_from_slice(&live.to_le_bytes());
            let n = (rng.next() % (wire::DATA_HEADER_LEN as u64 - 5)) as usize;
            d.extend(rng.bytes(n));
            (d, false)
        }
        3 => {
            // Handshake packets for the live session, truncated.
            let mut d = vec![
                [
                    wire::PACKET_HELLO,
                    wire::PACKET_WELCOME,
                    wire::PACKET_REJECT,
                ][(rng.next() % 3) as usize],
            ];
            d.extend_from_slice(&live.to_le_bytes());
            d.push(rng.next() as u8);
            (d, false)
        }
        _ => {
            let id = (rng.next() as u32).max(1);
            (hello(id, &[0x66; 16]), true)
        }
    }
}

/// A padded HELLO, as a real client sends it, with this ID and key.
fn hello(id: u32, key: &[u8; 16]) -> Vec<u8> {
    let mut buf = [0u8; 256];
    let mut w = Writer::new(&mut buf);
    assert!(wire::encode_hello(
        &mut w,
        id,
        &[ChannelKind::ReliableOrdered],
        key,
        b"intruder"
    ));
    wire::pad_hello(&mut w);
    let n = w.len();
    buf[..n].to_vec()
}

#[test]
fn a_hello_with_a_live_sessions_id_and_another_key_does_not_move_the_session() {
    let mut h = Harness::connected();
    let live = h.client.id();
    let client_addr = h.client.local_addr().unwrap();
    let server_addr = h.server.local_addr().unwrap();
    let attacker = UdpSocket::bind(LOOPBACK).unwrap();
    attacker.set_nonblocking(true).unwrap();
    let dropped = h.server.socket_stats().dropped_in;
    for _ in 0..3 {
        attacker
            .send_to(&hello(live, &[0x66; 16]), server_addr)
            .unwrap();
        h.step();
    }
    assert!(
        h.server.socket_stats().dropped_in >= dropped + 3,
        "every impostor HELLO is dropped"
    );
    assert_eq!(
        h.server.peer_addr(live),
        Some(client_addr),
        "the impostor took the session's address"
    );
    let mut buf = [0u8; 1500];
    assert!(
        attacker.recv_from(&mut buf).is_err(),
        "the impostor got an answer"
    );
    h.client.send(0, payload(1, 100)).unwrap();
    assert!(
        h.run_until(Duration::from_secs(5), |h| h.client_messages(0).len() == 1),
        "the session stopped echoing"
    );
    assert!(h.client.is_connected());
}

#[test]
fn garbage_from_another_socket_does_not_disturb_a_live_session() {
    let mut h = Harness::connected();
    let live = h.client.id();
    let client_addr = h.client.local_addr().unwrap();
    let server_addr = h.server.local_addr().unwrap();
    let attacker = UdpSocket::bind(LOOPBACK).unwrap();
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let (mut invalid, mut hellos) = (0u64, 0u64);
    for round in 0..30u32 {
        for _ in 0..100 {
            let (d, is_hello) = garbage(&mut rng, live);
            attacker.send_to(&d, server_addr).unwrap();
            if is_hello {
                hellos += 1;
            } else {
                invalid += 1;
            }
        }
        h.client
            .send(0, payload(round, 100 + round as usize * 50))
            .unwrap();
        h.step();
    }
    assert!(
        h.run_until(Duration::from_secs(5), |h| h.client_messages(0).len() == 30),
        "echoes missing"
    );
    let got: Vec<u32> = h.client_messages(0).iter().map(|m| check(m)).collect();
    assert_eq!(got, (0..30).collect::<Vec<_>>());
    assert!(h.client.is_connected());
    assert!(!h
        .client_events
        .iter()
        .any(|e| matches!(e, Event::Closed(_))));
    assert!(!h
        .server_events
        .iter()
        .any(|(id, e)| *id == live && matches!(e, Event::Closed(_))));
    assert_eq!(
        h.server.peer_addr(live),
        Some(client_addr),
        "garbage moved the session"
    );
    let stats = h.server.socket_stats();
    assert!(
        stats.dropped_in >= invalid,
        "dropped {} of {invalid} invalid datagrams",
        stats.dropped_in
    );
    assert!(hellos > 0);
}

/// A core client driven by hand over whichever socket the test chooses.
struct RawClient {
    conn: Connection,
    start: Instant,
    buf: Vec<u8>,
    events: Vec<Event>,
}

impl RawClient {
    fn now(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    fn pump(&mut self, sock: &UdpSocket, server: SocketAddr) {
        let now = self.now();
        while let Ok((n, _)) = sock.recv_from(&mut self.buf) {
            let _ = self.conn.handle_datagram(now, &self.buf[..n]);
        }
        if self.conn.poll_timeout().is_some_and(|t| t <= now) {
            self.conn.handle_timeout(now);
        }
        while let Some(n) = self.conn.poll_transmit(now, &mut self.buf) {
            sock.send_to(&self.buf[..n], server).unwrap();
        }
        self.events
            .extend(std::iter::from_fn(|| self.conn.poll_event()));
    }

    fn messages(&self) -> Vec<&[u8]> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Message { data, .. } => Some(data.as_slice()),
                _ => None,
            })
            .collect()
    }
}

#[test]
fn peer_address_follows_the_client_to_a_new_port() {
    let mut server = UdpServer::bind(LOOPBACK, ServerConfig::default()).unwrap();
    server.set_accept_policy(AcceptPolicy::AcceptAll);
    let server_addr = server.local_addr().unwrap();
    let old_port = UdpSocket::bind(LOOPBACK).unwrap();
    let new_port = UdpSocket::bind(LOOPBACK).unwrap();
    for s in [&old_port, &new_port] {
        s.set_nonblocking(true).unwrap();
    }
    let start = Instant::now();
    let conn = Connection::client(client_config(), 0, &insecure_seeded_entropy(7), b"").unwrap();
    let mut raw = RawClient {
        conn,
        start,
        buf: vec![0; 65_535],
        events: Vec::new(),
    };
    let id = raw.conn.id();
    let mut step = |raw: &mut RawClient, sock: &UdpSocket| {
        raw.pump(sock, server_addr);
        server.poll(TICK).unwrap();
        while let Some((id, ev)) = server.next_event() {
            if let Event::Message { channel, data } = ev {
                server.send(id, channel, data).unwrap();
            }
        }
        server.peer_addr(id)
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    let now = raw.now();
    raw.conn.send(now, 0, Vec::new()).unwrap_err(); // not connected yet
    while !raw.conn.is_connected() && Instant::now() < deadline {
        step(&mut raw, &old_port);
    }
    assert!(raw.conn.is_connected());
    let now = raw.now();
    raw.conn.send(now, 0, payload(1, 40)).unwrap();
    while raw.messages().is_empty() && Instant::now() < deadline {
        step(&mut raw, &old_port);
    }
    assert_eq!(raw.messages().len(), 1);
    // The "NAT" rebinds: the same session now speaks from another port.
    let now = raw.now();
    raw.conn.send(now, 0, payload(2, 40)).unwrap();
    let mut peer = None;
    while raw.messages().len() < 2 && Instant::now() < deadline {
        peer = step(&mut raw, &new_port);
    }
    let got: Vec<u32> = raw.messages().iter().map(|m| check(m)).collect();
    assert_eq!(got, vec![1, 2], "the echo did not follow the client");
    assert_eq!(peer, Some(new_port.local_addr().unwrap()));
    assert!(raw.conn.is_connected());
}
