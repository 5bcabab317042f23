//! A server that declares its channel layout (`strict_channels`) refuses a
//! client whose channels differ, before allocating anything, and says what
//! it has; a client with the same layout connects as usual.

use ricochet_core::{ChannelConfig, CloseReason, Config, Connection, Event, Server, ServerConfig};
use ricochet_sim::pair::{insecure_seeded_entropy, TEST_SERVER_SECRET};

fn server(layout: Vec<ChannelConfig>) -> Server {
    let config = ServerConfig {
        connection: Config {
            channels: layout,
            ..Config::default()
        },
        strict_channels: true,
        ..ServerConfig::default()
    };
    Server::new(config, &TEST_SERVER_SECRET).unwrap()
}

/// The client's HELLO in, the server's first answer out: the client's close reason, if it was refused.
fn first_answer(server: &mut Server, channels: Vec<ChannelConfig>) -> (Option<CloseReason>, bool) {
    let mut client = Connection::client(
        Config {
            channels,
            ..Config::default()
        },
        0,
        &insecure_seeded_entropy(3),
        b"",
    )
    .unwrap();
    let mut buf = vec![0u8; 2048];
    let n = client.poll_transmit(0, &mut buf).unwrap();
    let id = server.handle_datagram(0, &buf[..n]).unwrap();
    let requested = std::iter::from_fn(|| server.poll_event())
        .any(|(i, e)| i == id && matches!(e, Event::ConnectRequest { .. }));
    if let Some((_, m)) = server.poll_transmit(0, &mut buf) {
        let _ = client.handle_datagram(0, &buf[..m]);
    }
    let closed = std::iter::from_fn(|| client.poll_event()).find_map(|e| match e {
        Event::Closed(r) => Some(r),
        _ => None,
    });
    (closed, requested)
}

#[test]
fn a_client_listing_the_channels_in_another_order_is_refused_with_the_servers_layout() {
    let layout = vec![
        ChannelConfig::reliable_ordered(),
        ChannelConfig::unreliable_sequenced(),
    ];
    let mut s = server(layout.clone());
    let (closed, requested) = first_answer(
        &mut s,
        vec![
            ChannelConfig::unreliable_sequenced(),
            ChannelConfig::reliable_ordered(),
        ],
    );
    assert!(!requested, "no connect request reaches the application");
    assert_eq!(
        closed,
        Some(CloseReason::Rejected {
            reason: "channel layout differs: server has reliable-ordered, unreliable-sequenced"
                .into()
        })
    );
    assert_eq!(s.connection_count(), 0);
}

#[test]
fn a_client_with_one_channel_too_few_is_refused() {
    let mut s = server(vec![
        ChannelConfig::reliable_ordered(),
        ChannelConfig::unreliable_sequenced(),
    ]);
    let (closed, requested) = first_answer(&mut s, vec![ChannelConfig::reliable_ordered()]);
    assert!(!requested);
    assert!(
        matches!(closed, Some(CloseReason::Rejected { reason }) if reason.starts_with("channel layout differs"))
    );
}

#[test]
fn a_client_with_the_servers_layout_gets_its_connect_request() {
    let layout = vec![
        ChannelConfig::reliable_ordered(),
        ChannelConfig::unreliable_sequenced(),
    ];
    let mut s = server(layout.clone());
    let (closed, requested) = first_answer(&mut s, layout);
    assert!(requested);
    assert_eq!(closed, None);
}
