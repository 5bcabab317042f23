//! The relay's QUIC stack (quinn-proto, patched in `vendor/quinn-proto`)
//! adds its pending ACK to every packet it sends that has room, so an ACK
//! lost on the way to the browser is repeated by the next datagram the game
//! server sends back. Unpatched, quinn bundles an ACK again only once the RTT
//! plus the peer's max_ack_delay has passed, unless the peer sends something
//! new meanwhile, which a browser with a full window does not. Sans-IO: two
//! quinn-proto endpoints on virtual time (fixed seeds, no MTU probes), each
//! packet handed over or dropped by hand.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use quinn_proto::{
    ClientConfig, Connection, ConnectionHandle, DatagramEvent, Endpoint, EndpointConfig, Event,
    ServerConfig,
};
use wtransport::tls::rustls;

const CLIENT: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 40_000);
const SERVER: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 40_001);

/// One side: its endpoint and its one connection.
struct Side {
    endpoint: Endpoint,
    handle: Option<ConnectionHandle>,
    conn: Option<Connection>,
}

impl Side {
    fn conn(&mut self) -> &mut Connection {
        self.conn.as_mut().expect("connection")
    }

    /// The packets this side sends at `now`, after its endpoint events are handled.
    fn transmit(&mut self, now: Instant) -> Vec<BytesMut> {
        let mut out = Vec::new();
        let Some(conn) = self.conn.as_mut() else {
            return out;
        };
        while let Some(ev) = conn.poll_endpoint_events() {
            let handle = self.handle.expect("handle");
            if let Some(back) = self.endpoint.handle_event(handle, ev) {
                conn.handle_event(back);
            }
        }
        let mut buf = Vec::new();
        while let Some(t) = conn.poll_transmit(now, 1, &mut buf) {
            out.push(BytesMut::from(&buf[..t.size]));
            buf.clear();
        }
        out
    }

    /// Hands `packet` from `from` to this side (accepting a new connection).
    fn receive(&mut self, now: Instant, from: SocketAddr, packet: BytesMut) {
        let mut buf = Vec::new();
        match self
            .endpoint
            .handle(now, from, None, None, packet, &mut buf)
        {
            Some(DatagramEvent::ConnectionEvent(_, ev)) => self.conn().handle_event(ev),
            Some(DatagramEvent::NewConnection(incoming)) => {
                let (h, c) = self
                    .endpoint
                    .accept(incoming, now, &mut buf, None)
                    .expect("accept");
                self.handle = Some(h);
                self.conn = Some(c);
            }
            Some(DatagramEvent::Response(_)) | None => {}
        }
    }

    /// Fires the connection's timer if due at `now`.
    fn tick(&mut self, now: Instant) {
        if let Some(conn) = self.conn.as_mut() {
            if conn.poll_timeout().is_some_and(|t| t <= now) {
                conn.handle_timeout(now);
            }
        }
    }
}

/// A connected pair after the handshake has settled, and the time then.
fn connected_pair() -> (Side, Side, Instant) {
    let identity = wtransport::Identity::self_signed(["localhost"]).expect("certificate");
    let chain: Vec<rustls::pki_types::CertificateDer<'static>> = identity
        .certificate_chain()
        .as_slice()
        .iter()
        .map(|c| c.der().to_vec().into())
        .collect();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(
        identity.private_key().secret_der().to_vec().into(),
    );
    let mut roots = rustls::RootCertStore::empty();
    roots.add(chain[0].clone()).expect("root");
    let server_config = ServerConfig::with_single_cert(chain, key).expect("server config");
    let client_config = ClientConfig::with_root_certificates(Arc::new(roots)).expect("client");

    let mut now = Instant::now();
    // No MTU probes and fixed seeds (packet-number skips): the same trace every run.
    let endpoint = |server: Option<ServerConfig>, seed: u8| {
        Endpoint::new(
            Arc::new(EndpointConfig::default()),
            server.map(Arc::new),
            false,
            Some([seed; 32]),
        )
    };
    let mut server = Side {
        endpoint: endpoint(Some(server_config), 1),
        handle: None,
        conn: None,
    };
    let mut client = Side {
        endpoint: endpoint(None, 2),
        handle: None,
        conn: None,
    };
    let (h, c) = client
        .endpoint
        .connect(now, client_config, SERVER, "localhost")
        .expect("connect");
    client.handle = Some(h);
    client.conn = Some(c);
    // Deliver everything, 1 ms a hop, until both are connected, a round
    // passes with nothing sent and no timer is due within 100 ms (delayed
    // ACKs and loss timers settled: only the idle timers are left).
    let mut connected = 0;
    for _ in 0..2_000 {
        now += Duration::from_millis(1);
        client.tick(now);
        server.tick(now);
        let (up, down) = (client.transmit(now), server.transmit(now));
        let quiet = up.is_empty() && down.is_empty();
        for p in up {
            server.receive(now, CLIENT, p);
        }
        for p in down {
            client.receive(now, SERVER, p);
        }
        for side in [&mut client, &mut server] {
            while let Some(ev) = side.conn.as_mut().and_then(Connection::poll) {
                if matches!(ev, Event::Connected) {
                    connected += 1;
                }
            }
        }
        let settled = |side: &mut Side| {
            side.conn()
                .poll_timeout()
                .is_none_or(|t| t > now + Duration::from_millis(100))
        };
        if connected == 2 && quiet && settled(&mut client) && settled(&mut server) {
            return (client, server, now);
        }
    }
    panic!("no handshake");
}

#[test]
fn a_datagram_sent_after_a_lost_ack_carries_the_ack_again() {
    let (mut client, mut server, mut now) = connected_pair();
    // The browser sends two datagrams, a millisecond apart; the first is
    // lost, so the relay acknowledges the second at once (it arrived after a
    // gap), in a packet of its own...
    let mut up = Vec::new();
    for i in 0..2u8 {
        client
            .conn()
            .datagrams()
            .send(Bytes::from(vec![i; 100]), false)
            .expect("send");
        up.extend(client.transmit(now));
        now += Duration::from_millis(1);
    }
    assert_eq!(up.len(), 2, "a packet each");
    let second = up.pop().expect("second");
    now += Duration::from_millis(10);
    server.receive(now, CLIENT, second);
    let before = server.conn().stats().frame_tx;
    let ack_only = server.transmit(now);
    let after = server.conn().stats().frame_tx;
    assert_eq!(
        ack_only.len(),
        1,
        "an immediate ACK for the out-of-order packet"
    );
    assert_eq!(
        (after.acks, after.datagram),
        (before.acks + 1, before.datagram)
    );
    // ...and that ACK is lost on the way back. 1 ms later the game server's
    // reply leaves the relay as a datagram.
    now += Duration::from_millis(1);
    server
        .conn()
        .datagrams()
        .send(Bytes::from_static(b"reply"), false)
        .expect("reply");
    let down = server.transmit(now);
    let replied = server.conn().stats().frame_tx;
    assert_eq!(down.len(), 1);
    assert_eq!(
        (replied.datagram, replied.acks),
        (after.datagram + 1, after.acks + 1),
        "the reply's packet repeats the lost ACK"
    );
    // The browser learns its second datagram arrived: a fresh RTT sample,
    // ~22 ms against the handshake's 2 ms.
    let rtt_before = client.conn().rtt();
    now += Duration::from_millis(10);
    client.receive(now, SERVER, down.into_iter().next().expect("reply packet"));
    assert!(
        client.conn().rtt() > rtt_before,
        "the datagram is acknowledged"
    );
}
