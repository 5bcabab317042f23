//! A client and a server joined by a simulated network, on virtual time.
//! `step` jumps to the earliest deadline (a timer or a datagram arrival),
//! so a minute of traffic runs in milliseconds. The tests, the demo and the
//! benchmarks all drive the core through this.

use ricochet_core::{
    Config, Connection, ConnectionId, Event, Server, ServerConfig, ServerSecret, CLIENT_ENTROPY_LEN,
};

use crate::profile::{Duplex, NetworkProfile};

/// What the pair's server does with connect requests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AcceptPolicy {
    Accept,
    Reject(String),
    /// Leave them pending; the test calls `server.accept`/`reject` itself.
    Manual,
}

pub struct Pair {
    pub now: u64,
    pub client: Connection,
    pub server: Server,
    pub net: Duplex,
    pub client_events: Vec<Event>,
    pub server_events: Vec<(ConnectionId, Event)>,
    pub accept: AcceptPolicy,
    buf: Vec<u8>,
}

impl Pair {
    /// Client and server with these configs over `profile`, seeded.
    pub fn new(client: Config, server: ServerConfig, profile: NetworkProfile, seed: u64) -> Pair {
        Pair::with_handshake(client, server, profile, seed, b"")
    }

    pub fn with_handshake(
        client: Config,
        server: ServerConfig,
        profile: NetworkProfile,
        seed: u64,
        handshake: &[u8],
    ) -> Pair {
        let max = client
            .max_datagram_size
            .max(server.connection.max_datagram_size);
        Pair {
            now: 0,
            // Configs come from tests and benches; invalid ones are a bug there.
            client: Connection::client(client, 0, &insecure_seeded_entropy(seed), handshake)
                .expect("valid client config"),
            server: Server::new(server, &TEST_SERVER_SECRET).expect("valid server config"),
            net: Duplex::new(profile, seed ^ 0x5eed),
            client_events: Vec::new(),
            server_events: Vec::new(),
            accept: AcceptPolicy::Accept,
            buf: vec![0; max],
        }
    }

    /// Convenience: default configs over a named profile.
    pub fn over(profile: NetworkProfile, seed: u64) -> Pair {
        Pair::new(Config::default(), ServerConfig::default(), profile, seed)
    }

    /// The server side of the client's connection, once accepted.
    pub fn server_conn(&self) -> Option<&Connection> {
        self.server.connection(self.client.id())
    }

    /// Drain both sides' outputs at the current time.
    pub fn drive(&mut self) {
        let now = self.now;
        loop {
            let mut progressed = false;
            while let Some(n) = self.client.poll_transmit(now, &mut self.buf) {
                self.net.client_to_server.send(now, &self.buf[..n]);
                progressed = true;
            }
            while let Some(ev) = self.client.poll_event() {
                self.client_events.push(ev);
            }
            while let Some((_, n)) = self.server.poll_transmit(now, &mut self.buf) {
                self.net.server_to_client.send(now, &self.buf[..n]);
                progressed = true;
            }
            while let Some((id, ev)) = self.server.poll_event() {
                if let Event::ConnectRequest { .. } = ev {
                    match &self.accept {
                        AcceptPolicy::Accept => {
                            self.server.accept(now, id);
                            progressed = true;
                        }
                        AcceptPolicy::Reject(r) => {
                            let r = r.clone();
                            self.server.reject(now, id, &r);
                            progressed = true;
                        }
                        AcceptPolicy::Manual => {}
                    }
                }
                self.server_events.push((id, ev));
            }
            if !progressed {
                break;
            }
        }
    }

    /// Earliest pending deadline of either endpoint or the network.
    pub fn next_deadline(&self) -> Option<u64> {
        [
            self.client.poll_timeout(),
            self.server.poll_timeout(),
            self.net.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Advance to the next deadline (never past `limit`) and process it.
    /// Returns false when nothing is pending before `limit`.
    pub fn step_until(&mut self, limit: u64) -> bool {
        self.drive();
        let Some(next) = self.next_deadline() else {
            return false;
        };
        if next > limit {
            self.now = self.now.max(limit);
            return false;
        }
        self.now = self.now.max(next);
        let now = self.now;
        while let Some(d) = self.net.client_to_server.poll_deliver(now) {
            let _ = self.server.handle_datagram(now, &d);
        }
        while let Some(d) = self.net.server_to_client.poll_deliver(now) {
            let _ = self.client.handle_datagram(now, &d);
        }
        if self.client.poll_timeout().is_some_and(|t| t <= now) {
            self.client.handle_timeout(now);
        }
        if self.server.poll_timeout().is_some_and(|t| t <= now) {
            self.server.handle_timeout(now);
        }
        self.drive();
        true
    }

    /// Run until virtual time `t` (processing everything due before it).
    pub fn run_until(&mut self, t: u64) {
        while self.step_until(t) {}
        self.now = self.now.max(t);
        self.drive();
    }

    /// Run for `dt` µs of virtual time.
    pub fn run_for(&mut self, dt: u64) {
        self.run_until(self.now + dt);
    }

    /// Run until `cond` holds or `limit` µs of virtual time pass; returns
    /// whether it held.
    pub fn run_while_not(&mut self, limit: u64, mut cond: impl FnMut(&Pair) -> bool) -> bool {
        let deadline = self.now + limit;
        loop {
            if cond(self) {
                return true;
            }
            if !self.step_until(deadline) {
                return cond(self);
            }
        }
    }

    /// Run until the client is connected (panics in tests if it never is).
    pub fn connect(&mut self) -> bool {
        self.run_while_not(10_000_000, |p| {
            p.client.is_connected() && p.server_conn().is_some()
        })
    }

    /// Messages the client received on `channel`, in order.
    pub fn client_messages(&self, channel: u8) -> Vec<&[u8]> {
        messages(self.client_events.iter(), channel)
    }

    /// Messages the server received on `channel`, in order.
    pub fn server_messages(&self, channel: u8) -> Vec<&[u8]> {
        messages(self.server_events.iter().map(|(_, e)| e), channel)
    }
}

/// A fixed server secret for tests and simulations. Never for a real
/// server: whoever knows it predicts every nonce (see `Server::new`).
pub const TEST_SERVER_SECRET: ServerSecret = [0x5e; 32];

/// Client entropy derived from a seed, so simulations and tests replay
/// exactly. **Never use it for a real connection**: the session key it
/// yields is predictable, and whoever predicts it can hijack or close the
/// session. Real clients pass 20 bytes of OS randomness.
pub fn insecure_seeded_entropy(seed: u64) -> [u8; CLIENT_ENTROPY_LEN] {
    let mut rng = crate::rng::Rng::new(seed);
    let mut out = [0u8; CLIENT_ENTROPY_LEN];
    for chunk in out.chunks_mut(8) {
        let v = rng.next_u64().to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
    out
}

fn messages<'a>(events: impl Iterator<Item = &'a Event>, channel: u8) -> Vec<&'a [u8]> {
    events
        .filter_map(|e| match e {
            Event::Message { channel: c, data } if *c == channel => Some(data.as_slice()),
            _ => None,
        })
        .collect()
}
