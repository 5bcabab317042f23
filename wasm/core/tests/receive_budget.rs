//! Budgets before trust (issue 12): what a client declares in HELLO and what
//! it sends out of order cannot make a server hold more receive memory than
//! `max_channels`, `recv_buffer_bytes` (per connection) and
//! `recv_budget_bytes` (server-wide) allow; honest data still all arrives.

use ricochet_core::{
    head_reserve, ChannelConfig, CloseReason, Config, CongestionKind, Connection, Event, Server,
    ServerConfig,
};
use ricochet_sim::pair::{insecure_seeded_entropy, TEST_SERVER_SECRET};

const MAX_MESSAGE: usize = 64 << 10;
const MESSAGE: usize = 40_000;

/// Per-connection budget: one head-of-line message in reassembly and 32 KiB besides.
fn conn_budget() -> usize {
    head_reserve(MAX_MESSAGE) + (32 << 10)
}

fn server_config() -> ServerConfig {
    let connection = Config {
        max_message_size: MAX_MESSAGE,
        send_buffer_bytes: MAX_MESSAGE,
        recv_buffer_bytes: conn_budget(),
        ..Config::default()
    };
    ServerConfig {
        connection,
        ..ServerConfig::default()
    }
}

/// A client that ignores congestion, so it overruns the server's buffers.
fn client_config(channels: usize) -> Config {
    Config {
        channels: vec![ChannelConfig::reliable_ordered(); channels],
        congestion: CongestionKind::Unlimited,
        max_message_size: MAX_MESSAGE,
        send_buffer_bytes: 4 << 20,
        ..Config::default()
    }
}

fn message(channel: u8, index: u8) -> Vec<u8> {
    let mut m = vec![channel ^ index; MESSAGE];
    (m[0], m[1]) = (channel, index);
    m
}

struct Net {
    now: u64,
    server: Server,
    clients: Vec<Connection>,
    /// Messages the server delivered: (connection, channel, data).
    got: Vec<(u32, u8, Vec<u8>)>,
    most_buffered: usize,
}

impl Net {
    fn new(config: ServerConfig) -> Net {
        Net {
            now: 0,
            server: Server::new(config, &TEST_SERVER_SECRET).unwrap(),
            clients: Vec::new(),
            got: Vec::new(),
            most_buffered: 0,
        }
    }

    /// Feed the server one datagram and check the server-wide invariants.
    fn deliver(&mut self, d: &[u8]) {
        let _ = self.server.handle_datagram(self.now, d);
        let total = self.server.receive_buffered_bytes();
        let sum: usize = self
            .server
            .connection_ids()
            .map(|id| self.server.connection(id).unwrap().receive_buffered_bytes())
            .sum();
        assert_eq!(
            total, sum,
            "the server's running total matches its connections"
        );
        assert!(
            total <= self.server.config().recv_budget_bytes,
            "server holds {total}"
        );
        for id in self.server.connection_ids() {
            let b = self.server.connection(id).unwrap().receive_buffered_bytes();
            assert!(
                b <= conn_budget(),
                "connection holds {b} > {}",
                conn_budget()
            );
        }
        self.most_buffered = self.most_buffered.max(total);
        while let Some((id, ev)) = self.server.poll_event() {
            match ev {
                Event::ConnectRequest { .. } => assert!(self.server.accept(self.now, id)),
                Event::Message { channel, data } => self.got.push((id, channel, data)),
                _ => {}
            }
        }
    }

    /// Move every queued datagram, client `c`'s passing `keep(n)` (n counts its datagrams).
    fn exchange(&mut self, c: usize, keep: &mut dyn FnMut(usize) -> bool, sent: &mut usize) {
        let mut buf = vec![0u8; 65536];
        while let Some(n) = self.clients[c].poll_transmit(self.now, &mut buf) {
            *sent += 1;
            if keep(*sent) {
                let d = buf[..n].to_vec();
                self.deliver(&d);
            }
        }
        while let Some((id, n)) = self.server.poll_transmit(self.now, &mut buf) {
            if let Some(cl) = self.clients.iter_mut().find(|cl| cl.id() == id) {
                let _ = cl.handle_datagram(self.now, &buf[..n]);
            }
        }
    }

    fn connect(&mut self, config: Config, seed: u64) -> usize {
        self.clients.push(
            Connection::client(config, self.now, &insecure_seeded_entropy(seed), b"").unwrap(),
        );
        let c = self.clients.len() - 1;
        for _ in 0..3 {
            self.exchange(c, &mut |_| true, &mut 0);
        }
        assert!(self.clients[c].is_connected());
        c
    }

    /// Lossless until `done` or 30 s of virtual time, timers included.
    fn run_until(&mut self, done: impl Fn(&Net) -> bool) -> bool {
        let end = self.now + 30_000_000;
        while self.now < end {
            if done(self) {
                return true;
            }
            self.now += 1_000;
            for c in 0..self.clients.len() {
                if self.clients[c]
                    .poll_timeout()
                    .is_some_and(|t| t <= self.now)
                {
                    self.clients[c].handle_timeout(self.now);
                }
            }
            if self.server.poll_timeout().is_some_and(|t| t <= self.now) {
                self.server.handle_timeout(self.now);
            }
            for c in 0..self.clients.len() {
                self.exchange(c, &mut |_| true, &mut 0);
            }
        }
        done(self)
    }

    /// What connection `id` delivered on `channel`, as (channel, index) tags.
    fn tags(&self, id: u32, channel: u8) -> Vec<(u8, u8)> {
        self.got
            .iter()
            .filter(|(i, ch, _)| *i == id && *ch == channel)
            .map(|(_, _, d)| (d[0], d[1]))
            .collect()
    }
}

#[test]
fn a_hello_declaring_255_channels_is_rejected_and_allocates_nothing() {
    let mut net = Net::new(ServerConfig::default());
    let mut client =
        Connection::client(client_config(255), 0, &insecure_seeded_entropy(1), b"").unwrap();
    let mut buf = vec![0u8; 2048];
    let n = client.poll_transmit(0, &mut buf).unwrap();
    let id = net.server.handle_datagram(0, &buf[..n]).unwrap();
    assert!(net.server.poll_event().is_none(), "no connect request");
    assert!(!net.server.accept(0, id), "nothing pending");
    assert_eq!(net.server.connection_count(), 0);
    let (_, m) = net.server.poll_transmit(0, &mut buf).unwrap();
    assert!(m <= n, "REJECT no larger than the HELLO");
    client.handle_datagram(0, &buf[..m]).unwrap();
    let closed = std::iter::from_fn(|| client.poll_event()).find_map(|e| match e {
        Event::Closed(r) => Some(r),
        _ => None,
    });
    assert_eq!(
        closed,
        Some(CloseReason::Rejected {
            reason: "too many channels".into()
        })
    );
}

#[test]
fn a_hello_declaring_max_channels_is_a_connect_request() {
    let mut net = Net::new(ServerConfig::default());
    let c = net.connect(client_config(ServerConfig::default().max_channels), 2);
    assert_eq!(net.clients[c].channels().len(), 16);
    assert_eq!(net.server.connection_count(), 1);
}

#[test]
fn out_of_order_data_on_many_channels_stays_within_the_connection_budget() {
    let mut net = Net::new(server_config());
    let c = net.connect(client_config(16), 3);
    let id = net.clients[c].id();
    for ch in 0..16u8 {
        for i in 0..2 {
            net.clients[c].send(net.now, ch, message(ch, i)).unwrap();
        }
    }
    // Every 7th datagram lost: each channel's head-of-line message stays
    // partial while the rest of its data arrives (before the budget covered
    // head-of-line reassemblies, this held about 16 × 34 KB).
    net.exchange(c, &mut |n| n % 7 != 0, &mut 0);
    // Everything but one head-of-line message filled (`Net::deliver`
    // checked the budget after every datagram).
    assert!(
        net.most_buffered > 32 << 10,
        "the test reached the budget: {}",
        net.most_buffered
    );
    assert!(
        net.server.connection(id).unwrap().stats().no_room > 0,
        "packets beyond it were refused"
    );
    // Retransmissions fill the gaps: everything arrives, in order.
    assert!(
        net.run_until(|n| n.got.len() == 32),
        "delivered {}",
        net.got.len()
    );
    for ch in 0..16u8 {
        assert_eq!(net.tags(id, ch), vec![(ch, 0), (ch, 1)]);
    }
    assert!(net.got.iter().all(|(_, _, d)| *d == message(d[0], d[1])));
    assert_eq!(net.server.receive_buffered_bytes(), 0);
}

#[test]
fn the_server_wide_budget_bounds_many_connections_and_a_polite_one_still_delivers() {
    // Eight connections each try to hold ~35 KB (one partial head-of-line
    // message per channel, as above): 280 KB, where the server allows 180 KB.
    let mut net = Net::new(ServerConfig {
        recv_budget_bytes: conn_budget() + (64 << 10),
        ..server_config()
    });
    let pushy: Vec<usize> = (0..8)
        .map(|s| net.connect(client_config(4), 10 + s))
        .collect();
    let polite = net.connect(
        Config {
            channels: vec![ChannelConfig::reliable_ordered()],
            ..Config::default()
        },
        20,
    );
    for &c in &pushy {
        for ch in 0..4u8 {
            for i in 0..2 {
                net.clients[c].send(net.now, ch, message(ch, i)).unwrap();
            }
        }
        net.exchange(c, &mut |n| n % 7 != 0, &mut 0);
    }
    let cap = net.server.config().recv_budget_bytes;
    let general = cap - head_reserve(MAX_MESSAGE);
    assert!(
        net.most_buffered > general,
        "the server budget was reached: {} of {cap}",
        net.most_buffered
    );
    // Small in-order messages need no buffer: the polite client is served at once.
    let polite_id = net.clients[polite].id();
    for i in 0..10u8 {
        net.clients[polite].send(net.now, 0, vec![i; 100]).unwrap();
    }
    net.exchange(polite, &mut |_| true, &mut 0);
    assert_eq!(
        net.got.iter().filter(|(id, _, _)| *id == polite_id).count(),
        10
    );
    // And every pushy connection completes once retransmissions flow.
    assert!(
        net.run_until(|n| n.got.len() == 10 + 8 * 8),
        "delivered {}",
        net.got.len()
    );
    for &c in &pushy {
        for ch in 0..4u8 {
            assert_eq!(net.tags(net.clients[c].id(), ch), vec![(ch, 0), (ch, 1)]);
        }
    }
}

#[test]
fn a_window_of_messages_arriving_in_reverse_is_delivered_in_order_within_budget_and_freed() {
    // Out-of-order data is held in tables indexed by sequence number (their
    // memory charged to the budget): the reverse of a whole window, the order
    // a hostile sender would pick, costs O(1) a message and is refused past
    // the budget; the sender's retransmissions then complete it in order.
    let mut net = Net::new(server_config());
    let c = net.connect(client_config(1), 11);
    let id = net.clients[c].id();
    let mut held = Vec::new();
    let mut buf = vec![0u8; 65536];
    for i in 0..4000u32 {
        net.clients[c]
            .send(net.now, 0, i.to_le_bytes().to_vec())
            .unwrap();
        while let Some(n) = net.clients[c].poll_transmit(net.now, &mut buf) {
            held.push(buf[..n].to_vec());
        }
    }
    assert_eq!(held.len(), 4000, "a datagram each");
    for d in held.iter().rev() {
        net.deliver(d);
    }
    // What arrived within the packet-number bound was held out of order
    // (with its table) until the first message came, last, and freed it all.
    assert!(net.got.len() >= 500, "{} delivered", net.got.len());
    assert!(net.most_buffered > 500 * 4, "held {}", net.most_buffered);
    assert!(net.run_until(|n| n.got.len() == 4000));
    let order: Vec<u32> = net
        .got
        .iter()
        .map(|(_, _, d)| u32::from_le_bytes(d[..4].try_into().unwrap()))
        .collect();
    assert_eq!(order, (0..4000).collect::<Vec<_>>());
    assert_eq!(
        net.server.connection(id).unwrap().receive_buffered_bytes(),
        0,
        "every table freed"
    );
}
