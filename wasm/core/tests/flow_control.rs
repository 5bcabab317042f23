//! Bounded buffers: refusals hand the message back, nothing is dropped silently.

mod common;

use common::{check, payload};
use ricochet_core::{Config, CongestionKind, SendError, ServerConfig};
use ricochet_sim::pair::Pair;
use ricochet_sim::NetworkProfile;

#[test]
fn full_send_buffer_refuses_and_hands_back() {
    let cfg = Config {
        send_buffer_bytes: 1 << 20,
        ..Config::default()
    };
    let mut p = Pair::new(cfg, ServerConfig::default(), NetworkProfile::lan(), 1);
    assert!(p.connect());
    let mut accepted = 0;
    let refused = loop {
        match p.client.send(p.now, 0, payload(accepted, 10_000)) {
            Ok(_) => accepted += 1,
            Err(e) => break e,
        }
    };
    assert_eq!(refused.code(), "RICOCHET_ERR_SEND_BUFFER_FULL");
    let SendError::BufferFull(back) = refused else {
        panic!("wrong error")
    };
    assert_eq!(
        check(&back),
        accepted,
        "the refused message comes back intact"
    );
    // Once acks drain the buffer, sending works again and nothing was lost.
    assert!(p.run_while_not(10_000_000, |p| p.client.stats().send_buffer_bytes == 0));
    p.client.send(p.now, 0, back).unwrap();
    assert!(p.run_while_not(10_000_000, |p| p.server_messages(0).len()
        == accepted as usize + 1));
    let got: Vec<u32> = p.server_messages(0).iter().map(|d| check(d)).collect();
    assert_eq!(got, (0..=accepted).collect::<Vec<_>>());
}

#[test]
fn oversized_message_is_refused_with_its_bytes() {
    let cfg = Config {
        max_message_size: 1000,
        send_buffer_bytes: 4000,
        recv_buffer_bytes: 4000,
        ..Config::default()
    };
    let mut p = Pair::new(cfg, ServerConfig::default(), NetworkProfile::lan(), 2);
    assert!(p.connect());
    let err = p.client.send(p.now, 0, vec![1; 1001]).unwrap_err();
    assert_eq!(err.code(), "RICOCHET_ERR_MESSAGE_TOO_LARGE");
    assert_eq!(err.into_message().len(), 1001);
}

#[test]
fn unknown_channel_and_not_connected_are_refused() {
    let mut p = Pair::over(NetworkProfile::lan(), 3);
    let err = p.client.send(0, 0, vec![1]).unwrap_err();
    assert_eq!(err.code(), "RICOCHET_ERR_NOT_CONNECTED");
    assert!(p.connect());
    let err = p.client.send(p.now, 9, vec![1]).unwrap_err();
    assert_eq!(err.code(), "RICOCHET_ERR_UNKNOWN_CHANNEL");
}

#[test]
fn small_receive_buffer_still_delivers_everything_in_order() {
    // The receiver holds little out-of-order data; the rest is refused
    // unacknowledged and retransmitted, never lost.
    let server = ServerConfig {
        // Room for one 64 KiB message in reassembly and 16 KiB besides.
        connection: Config {
            recv_buffer_bytes: ricochet_core::head_reserve(64 << 10) + (16 << 10),
            max_message_size: 64 << 10,
            send_buffer_bytes: 64 << 10,
            ..Config::default()
        },
        ..ServerConfig::default()
    };
    // The sender ignores congestion so it overruns the receiver's buffer.
    let client = Config {
        congestion: CongestionKind::Unlimited,
        ..Config::default()
    };
    let mut p = Pair::new(client, server, common::hostile(0.05, 0.1, 0.0), 4);
    assert!(p.connect());
    for i in 0..400 {
        p.client.send(p.now, 0, payload(i, 3_000)).unwrap();
    }
    let done = p.run_while_not(60_000_000, |p| p.server_messages(0).len() == 400);
    assert!(
        done,
        "delivered {}; client {:?}; server {:?}",
        p.server_messages(0).len(),
        p.client.stats(),
        p.server_conn().map(|c| c.stats())
    );
    let got: Vec<u32> = p.server_messages(0).iter().map(|d| check(d)).collect();
    assert_eq!(got, (0..400).collect::<Vec<_>>());
    assert!(
        p.server_conn().unwrap().stats().no_room > 0,
        "the small buffer should have refused some packets"
    );
}

#[test]
fn server_send_to_unknown_connection_hands_the_message_back() {
    let mut server = ricochet_core::Server::new(
        ServerConfig::default(),
        &ricochet_sim::pair::TEST_SERVER_SECRET,
    )
    .unwrap();
    let err = server.send(0, 42, 0, vec![7; 10]).unwrap_err();
    assert_eq!(err, SendError::NotConnected(vec![7; 10]));
}

#[test]
fn connections_and_servers_can_move_between_threads() {
    fn assert_send<T: Send>() {}
    assert_send::<ricochet_core::Connection>();
    assert_send::<ricochet_core::Server>();
}

#[test]
fn unreliable_message_past_its_max_age_is_dropped_before_sending() {
    use ricochet_core::{ChannelConfig, Event};
    let cfg =
        Config::default().with_channels(vec![ChannelConfig::unreliable().with_max_age_us(50_000)]);
    let mut p = Pair::new(cfg, ServerConfig::default(), NetworkProfile::lan(), 5);
    assert!(p.connect());
    let mut buf = vec![0u8; 1500];
    while p.client.poll_transmit(p.now, &mut buf).is_some() {}
    let id = p.client.send(p.now, 0, payload(1, 50)).unwrap();
    // The host could not write for 100 ms (e.g. a stalled socket).
    let later = p.now + 100_000;
    let before = p.client.stats().payload_bytes_out;
    while p.client.poll_transmit(later, &mut buf).is_some() {}
    assert_eq!(
        p.client.stats().payload_bytes_out,
        before,
        "the stale message never reached the wire"
    );
    let events: Vec<Event> = std::iter::from_fn(|| p.client.poll_event()).collect();
    assert!(events.contains(&Event::Lost(id)));
}
