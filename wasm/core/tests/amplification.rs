//! Return routability (WIRE.md, "Authentication", rule 5): a HELLO's source
//! address and session key prove nothing, so until the client shows it got
//! the WELCOME (an authentic DATA packet, tagged under a key that mixes in
//! the WELCOME's nonce) a server sends at most 3× what it received.

mod common;

use common::payload;
use ricochet_core::auth::SessionKey;
use ricochet_core::wire::{self, ChannelKind, Writer};
use ricochet_core::{
    CloseReason, Config, Connection, DropReason, Event, Server, ServerConfig, AMPLIFICATION_FACTOR,
};
use ricochet_sim::pair::{AcceptPolicy, Pair, TEST_SERVER_SECRET};
use ricochet_sim::{LinkConfig, NetworkProfile};

fn hello(id: u32, key: &SessionKey) -> Vec<u8> {
    let mut buf = vec![0u8; 1500];
    let mut w = Writer::new(&mut buf);
    assert!(wire::encode_hello(
        &mut w,
        id,
        &[ChannelKind::ReliableOrdered],
        key,
        b""
    ));
    wire::pad_hello(&mut w);
    let n = w.len();
    buf.truncate(n);
    buf
}

/// Everything the server sends until `until`, running its timers; bytes per ID.
fn drain_until(server: &mut Server, mut now: u64, until: u64, sent: &mut u64) -> Vec<(u32, Event)> {
    let mut buf = vec![0u8; 1500];
    let mut events = Vec::new();
    loop {
        while let Some((_, n)) = server.poll_transmit(now, &mut buf) {
            *sent += n as u64;
        }
        while let Some(ev) = server.poll_event() {
            events.push(ev);
        }
        match server.poll_timeout() {
            Some(t) if t <= until => {
                now = now.max(t);
                server.handle_timeout(now);
            }
            _ => return events,
        }
    }
}

/// 20 ms each way, no jitter or loss: arrival times are exact.
fn slow_path() -> NetworkProfile {
    let link = LinkConfig {
        latency_us: 20_000,
        ..LinkConfig::default()
    };
    NetworkProfile {
        name: "slow",
        client_to_server: link,
        server_to_client: link,
    }
}

#[test]
fn a_spoofed_hello_draws_at_most_three_times_its_size_until_the_idle_timeout() {
    let mut server = Server::new(ServerConfig::default(), &TEST_SERVER_SECRET).unwrap();
    let h = hello(0xbad, &[3; 16]);
    assert_eq!(server.handle_datagram(0, &h), Ok(0xbad));
    assert!(server.accept(0, 0xbad));
    // The application greets the new connection at once, with more than
    // the initial window would have let through.
    for i in 0..40 {
        server
            .send(0, 0xbad, 0, payload(i, if i % 2 == 0 { 60 } else { 1_000 }))
            .unwrap();
    }
    let mut sent = 0;
    let events = drain_until(&mut server, 0, 60_000_000, &mut sent);
    assert!(
        sent > 2 * h.len() as u64,
        "the WELCOME and some data go: {sent}"
    );
    assert!(
        sent <= AMPLIFICATION_FACTOR * h.len() as u64,
        "{} bytes of HELLO drew {sent}",
        h.len()
    );
    assert!(
        events
            .iter()
            .any(|(_, e)| matches!(e, Event::Closed(CloseReason::IdleTimeout))),
        "{events:?}"
    );
    assert_eq!(server.connection_count(), 0);
}

#[test]
fn each_repeated_hello_widens_the_budget_by_three_times_its_size() {
    let mut server = Server::new(ServerConfig::default(), &TEST_SERVER_SECRET).unwrap();
    let h = hello(9, &[4; 16]);
    server.handle_datagram(0, &h).unwrap();
    server.handle_datagram(0, &h).unwrap();
    assert!(server.accept(0, 9));
    for i in 0..60 {
        server.send(0, 9, 0, payload(i, 100)).unwrap();
    }
    let mut sent = 0;
    // (Long enough for the pacer, too short for the idle timeout.)
    drain_until(&mut server, 0, 100_000, &mut sent);
    assert!(
        sent <= 6 * h.len() as u64 && sent > 3 * h.len() as u64,
        "pending HELLOs count too: {sent}"
    );
    server.handle_datagram(200_000, &h).unwrap();
    let before = sent;
    drain_until(&mut server, 200_000, 300_000, &mut sent);
    assert!(
        sent - before <= 3 * h.len() as u64 && sent > before,
        "{}",
        sent - before
    );
}

#[test]
fn the_clients_first_packet_validates_it_and_data_sent_on_accept_follows_within_one_rtt_of_the_welcome(
) {
    let mut p = Pair::new(Config::default(), ServerConfig::default(), slow_path(), 5);
    p.accept = AcceptPolicy::Manual;
    assert!(p.run_while_not(1_000_000, |p| p
        .server_events
        .iter()
        .any(|(_, e)| matches!(e, Event::ConnectRequest { .. }))));
    let id = p.client.id();
    assert!(p.server.accept(p.now, id));
    // A greeting within the first flight's budget, and a bulk one beyond it.
    p.server.send(p.now, id, 0, payload(0, 100)).unwrap();
    p.server.send(p.now, id, 0, payload(1, 8_000)).unwrap();
    p.drive();
    assert!(!p.server_conn().unwrap().is_validated());
    assert!(p.run_while_not(1_000_000, |p| p.client.is_connected()));
    let welcome_at = p.now;
    assert_eq!(welcome_at, 40_000);
    assert!(p.run_while_not(1_000_000, |p| !p.client_messages(0).is_empty()));
    assert_eq!(p.now, welcome_at, "the greeting rides with the WELCOME");
    assert!(p.run_while_not(1_000_000, |p| p.server_conn().unwrap().is_validated()));
    assert_eq!(
        p.now,
        welcome_at + 20_000,
        "validated half an RTT after the WELCOME, by the client's PING"
    );
    assert!(p.run_while_not(1_000_000, |p| p.client_messages(0).len() == 2));
    assert!(
        p.now <= welcome_at + 40_000 + 1_000,
        "the rest one RTT after the WELCOME, at {}",
        p.now
    );
    assert_eq!(p.server_conn().unwrap().amplification_budget(), None);
}

#[test]
fn a_hello_with_another_key_for_a_retired_id_is_refused_and_draws_nothing() {
    let mut p = Pair::over(NetworkProfile::lan(), 8);
    assert!(p.connect());
    let id = p.client.id();
    let key: SessionKey = ricochet_sim::pair::insecure_seeded_entropy(8)[4..]
        .try_into()
        .unwrap();
    p.client.close(p.now, 0, "bye");
    assert!(p.run_while_not(5_000_000, |p| p.server.connection_count() == 0));
    let mut buf = vec![0u8; 1500];
    assert_eq!(
        p.server.handle_datagram(p.now, &hello(id, &[0x77; 16])),
        Err(DropReason::Unauthenticated)
    );
    assert_eq!(p.server.poll_transmit(p.now, &mut buf), None);
    // Its own client still hears that the connection is over.
    assert_eq!(p.server.handle_datagram(p.now, &hello(id, &key)), Ok(id));
    let (to, n) = p.server.poll_transmit(p.now, &mut buf).unwrap();
    assert_eq!((to, buf[0]), (id, wire::PACKET_REJECT));
    assert!(n <= wire::HELLO_MIN_LEN);
}

#[test]
fn server_data_that_overtakes_a_lost_welcome_is_dropped_and_the_hello_resent_at_once() {
    let mut server = Server::new(ServerConfig::default(), &TEST_SERVER_SECRET).unwrap();
    let mut client = Connection::client(
        Config::default(),
        0,
        &ricochet_sim::pair::insecure_seeded_entropy(3),
        b"",
    )
    .unwrap();
    let mut buf = vec![0u8; 1500];
    let n = client.poll_transmit(0, &mut buf).unwrap();
    let id = server.handle_datagram(0, &buf[..n]).unwrap();
    assert!(server.accept(0, id));
    server.send(0, id, 0, payload(0, 50)).unwrap();
    let (_, n) = server.poll_transmit(0, &mut buf).unwrap();
    assert_eq!(buf[0], wire::PACKET_WELCOME, "lost on the way");
    let (_, n2) = server.poll_transmit(0, &mut buf[n..]).unwrap();
    let data = buf[n..n + n2].to_vec();
    assert_eq!(data[0], wire::PACKET_DATA);
    // Without the nonce the client cannot answer: it asks again.
    assert_eq!(
        client.handle_datagram(1_000, &data),
        Err(DropReason::Unexpected)
    );
    let n = client.poll_transmit(1_000, &mut buf).unwrap();
    assert_eq!(buf[0], wire::PACKET_HELLO);
    assert_eq!(server.handle_datagram(1_000, &buf[..n]), Ok(id));
    let (_, n) = server.poll_transmit(1_000, &mut buf).unwrap();
    assert_eq!(client.handle_datagram(2_000, &buf[..n]), Ok(()));
    assert!(client.is_connected());
    // The client's PING validates it.
    let n = client.poll_transmit(2_000, &mut buf).unwrap();
    assert_eq!(server.handle_datagram(3_000, &buf[..n]), Ok(id));
    assert!(server.connection(id).unwrap().is_validated());
}
