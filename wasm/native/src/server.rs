//! `UdpServer`: one UDP socket serving many connections through the core's
//! `Server`, which routes datagrams by connection ID.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use ricochet_core::{
    wire, ConnectionId, Event, MessageId, PathEvent, SendError, Server, ServerConfig, Stats,
};

use crate::batch::{RecvBatch, SendBatch, MAX_BATCH_SLOTS};
use crate::clock::Clock;
use crate::socket::{Socket, SocketStats};

/// Most datagrams read in one `poll`, so timers and output keep their pace
/// under a flood.
const MAX_BATCH: usize = 4096;
/// Datagrams per receive and per send call; output (acknowledgements
/// first) is also sent after each full read, not only at the end.
const IO_BATCH: usize = MAX_BATCH_SLOTS;
/// Addresses of handshakes that never became connections are forgotten this
/// long after their last datagram (beyond the pending timeout), µs.
const HANDSHAKE_GRACE_US: u64 = 1_000_000;
/// How often stale addresses are swept, µs.
const SWEEP_EVERY_US: u64 = 1_000_000;

/// What the server does with a `ConnectRequest`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum AcceptPolicy {
    /// Surface it; the application answers with `accept` or `reject` within
    /// `ServerConfig::pending_timeout_us` (default 5 s). The default.
    #[default]
    Manual,
    /// Accept every request at once; the `ConnectRequest` event is still
    /// surfaced (for logging), followed by `Connected`.
    AcceptAll,
}

struct Peer {
    addr: SocketAddr,
    /// A new address an authentic datagram came from, challenged by the
    /// core; the session moves there only once it answers (path validation).
    candidate: Option<SocketAddr>,
    last_seen_us: u64,
}

/// A Ricochet server on one UDP socket. Not `Send` (the core's congestion
/// controllers are not): create it on the thread that polls it.
pub struct UdpServer {
    core: Server,
    socket: Socket,
    clock: Clock,
    policy: AcceptPolicy,
    /// Where each connection's (or handshake's) datagrams last came from.
    peers: HashMap<ConnectionId, Peer>,
    /// Connect requests surfaced and not yet answered, with their arrival.
    pending: HashMap<ConnectionId, u64>,
    events: VecDeque<(ConnectionId, Event)>,
    inbox: RecvBatch,
    outbox: SendBatch,
    last_sweep_us: u64,
}

impl UdpServer {
    /// Binds a UDP socket (4 MiB buffers, non-blocking) and starts the clock.
    /// An invalid config is an `InvalidInput` error naming the field.
    pub fn bind(addr: impl ToSocketAddrs, config: ServerConfig) -> io::Result<UdpServer> {
        // WELCOME nonces come from this: an attacker who could predict them
        // could pass a spoofed address off as validated.
        let mut secret = [0u8; ricochet_core::SERVER_SECRET_LEN];
        getrandom::fill(&mut secret)
            .map_err(|err| io::Error::other(format!("no OS randomness: {err}")))?;
        let core = Server::new(config, &secret)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let addr = addr
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address to bind"))?;
        let socket = Socket::bind(addr)?;
        let datagram = core.config().connection.max_datagram_size;
        Ok(UdpServer {
            core,
            socket,
            clock: Clock::new(),
            policy: AcceptPolicy::Manual,
            peers: HashMap::new(),
            pending: HashMap::new(),
            events: VecDeque::new(),
            inbox: RecvBatch::new(IO_BATCH),
            outbox: SendBatch::new(IO_BATCH, datagram),
            last_sweep_us: 0,
        })
    }

    // ---- getters -------------------------------------------------------

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    pub fn accept_policy(&self) -> &AcceptPolicy {
        &self.policy
    }

    pub fn set_accept_policy(&mut self, policy: AcceptPolicy) {
        self.policy = policy;
    }

    /// The core's clock: microseconds since `bind`.
    pub fn now_us(&self) -> u64 {
        self.clock.now_us()
    }

    /// The sans-IO server, for reading what this driver does not wrap.
    pub fn core(&self) -> &Server {
        &self.core
    }

    /// Where the connection's datagrams last came from.
    pub fn peer_addr(&self, id: ConnectionId) -> Option<SocketAddr> {
        self.peers.get(&id).map(|p| p.addr)
    }

    /// IDs of live connections (including ones closing), ascending.
    pub fn connection_ids(&self) -> Vec<ConnectionId> {
        self.core.connection_ids().collect()
    }

    pub fn connection_count(&self) -> usize {
        self.core.connection_count()
    }

    /// The relay-verified claims (UTF-8 JSON such as `{"sub":"alice"}`) of a
    /// pending connect request or a live connection. None unless the config
    /// has a `relay_key` (then every admitted HELLO carried a valid relay
    /// attestation), or once the connection is gone.
    pub fn claims(&self, id: ConnectionId) -> Option<&[u8]> {
        self.core.claims(id)
    }

    /// Statistics of one connection (None once it is gone).
    pub fn stats(&self, id: ConnectionId) -> Option<Stats> {
        self.core.connection(id).map(|c| c.stats())
    }

    pub fn socket_stats(&self) -> SocketStats {
        self.socket.stats.clone()
    }

    // ---- commands ------------------------------------------------------

    /// Accepts a pending connect request. False if there is none (already
    /// answered, or it timed out).
    pub fn accept(&mut self, id: ConnectionId) -> bool {
        self.pending.remove(&id);
        self.core.accept(self.clock.now_us(), id)
    }

    /// Refuses a pending connect request; the client closes with
    /// `CloseReason::Rejected { reason }`. False if there is none.
    pub fn reject(&mut self, id: ConnectionId, reason: &str) -> bool {
        self.pending.remove(&id);
        self.core.reject(self.clock.now_us(), id, reason)
    }

    /// Queues a message; its fate arrives later as `Acked(id)`/`Lost(id)`.
    /// A refused message is handed back inside the error.
    pub fn send(
        &mut self,
        id: ConnectionId,
        channel: u8,
        data: Vec<u8>,
    ) -> Result<MessageId, SendError> {
        self.core.send(self.clock.now_us(), id, channel, data)
    }

    /// Queues a copy of `data` to every connected connection; returns how
    /// many took it (the others are closing, or their buffer is full).
    pub fn broadcast(&mut self, channel: u8, data: &[u8]) -> usize {
        let now = self.clock.now_us();
        let ids: Vec<ConnectionId> = self.core.connection_ids().collect();
        let mut sent = 0;
        for id in ids {
            if self.core.connection(id).is_some_and(|c| c.is_connected())
                && self.core.send(now, id, channel, data.to_vec()).is_ok()
            {
                sent += 1;
            }
        }
        sent
    }

    /// Closes one connection with an application code and reason; the peer
    /// gets `Closed(Peer { code, reason })`, this side `Closed(Local { .. })`.
    /// Keep polling: the CLOSE frame is repeated while the connection drains.
    pub fn close(&mut self, id: ConnectionId, code: u64, reason: &str) {
        self.core.close(self.clock.now_us(), id, code, reason);
    }

    // ---- run loop ------------------------------------------------------

    /// Sends queued output, waits for a datagram or the core's next deadline
    /// (at most `max_wait`; zero only reads what is already queued), reads
    /// every datagram queued in the socket (up to a bounded batch), fires
    /// due timers and sends the output. Then drain `events`.
    pub fn poll(&mut self, max_wait: Duration) -> io::Result<()> {
        self.drive();
        let wait = self.clock.wait_until(self.core.poll_timeout(), max_wait);
        let mut read = self.socket.recv_batch(&mut self.inbox)?;
        if read == 0 && !wait.is_zero() {
            read = self.socket.recv_wait(&mut self.inbox, wait)?;
        }
        let mut count = 0;
        while read > 0 {
            for i in 0..read {
                self.on_datagram(i);
            }
            count += read;
            // A short read means the socket is drained: no empty call to learn it.
            if count >= MAX_BATCH || read < self.inbox.capacity() {
                break;
            }
            self.drive();
            read = self.socket.recv_batch(&mut self.inbox)?;
        }
        let now = self.clock.now_us();
        if self.core.poll_timeout().is_some_and(|t| t <= now) {
            self.core.handle_timeout(now);
        }
        self.drive();
        if now.saturating_sub(self.last_sweep_us) >= SWEEP_EVERY_US
            || self.peers.len() > self.peer_limit()
        {
            self.sweep(now);
        }
        Ok(())
    }

    /// Sends queued output now, without waiting (e.g. right after a burst
    /// of `send`s at the end of a game tick).
    pub fn flush(&mut self) {
        self.drive();
    }

    /// Drains the events gathered so far, in order.
    pub fn events(&mut self) -> impl Iterator<Item = (ConnectionId, Event)> + '_ {
        self.events.drain(..)
    }

    /// The next event, if any (for loops that answer events as they go).
    pub fn next_event(&mut self) -> Option<(ConnectionId, Event)> {
        self.events.pop_front()
    }

    /// Feeds the `i`th datagram of the last read to the core.
    fn on_datagram(&mut self, i: usize) {
        let now = self.clock.now_us();
        let (datagram, from) = self.inbox.get(i);
        let len = datagram.len();
        match self.core.handle_datagram(now, datagram) {
            // Accepted by the session (authentic: an impostor who knows the ID
            // but not the session key gets Err). From a new address, a
            // validated session only challenges it (the key holder may spoof
            // its source); before that the core's 3× limit covers any address.
            Ok(id) => match self.peers.entry(id) {
                Entry::Occupied(mut e) => {
                    let p = e.get_mut();
                    p.last_seen_us = now;
                    if p.addr == from {
                    } else if p.candidate == Some(from) {
                        self.core.candidate_datagram(id, len);
                    } else if self.core.path_changed(now, id, len) {
                        p.candidate = Some(from);
                    } else {
                        p.addr = from;
                        p.candidate = None;
                    }
                }
                Entry::Vacant(e) => {
                    e.insert(Peer {
                        addr: from,
                        candidate: None,
                        last_seen_us: now,
                    });
                }
            },
            Err(_) => self.socket.stats.dropped_in += 1,
        }
    }

    /// The core's outputs in the documented order, until neither produces
    /// more: datagrams to the network, then events (auto-accepting).
    fn drive(&mut self) {
        loop {
            let now = self.clock.now_us();
            let mut progressed = false;
            // A validated candidate is the address from now on (first: the
            // core probes it at once); an abandoned one is forgotten.
            while let Some((id, ev)) = self.core.poll_path_event() {
                if let Some(p) = self.peers.get_mut(&id) {
                    let candidate = p.candidate.take();
                    if ev == PathEvent::Validated {
                        p.addr = candidate.unwrap_or(p.addr);
                    }
                }
            }
            while let Some((id, n)) = self.core.poll_transmit(now, self.outbox.next_buf()) {
                progressed = true;
                let reject = self.outbox.next_buf()[0] == wire::PACKET_REJECT;
                let to = self.peers.get(&id).and_then(|p| {
                    if self.core.transmit_to_candidate() {
                        p.candidate
                    } else {
                        Some(p.addr)
                    }
                });
                match to {
                    Some(addr) => {
                        self.outbox.push(n, Some(addr));
                        if self.outbox.is_full() {
                            self.socket.send_batch(&mut self.outbox);
                        }
                    }
                    None => self.socket.stats.unroutable_out += 1,
                }
                // A REJECT ends a handshake: forget its address. (Checked
                // only then: a lookup per datagram costs at thousands of peers.)
                if reject && self.core.connection(id).is_none() {
                    self.peers.remove(&id);
                }
            }
            // The datagrams leave before the events they caused are seen.
            if !self.outbox.is_empty() {
                self.socket.send_batch(&mut self.outbox);
            }
            while let Some((id, ev)) = self.core.poll_event() {
                if let Event::ConnectRequest { .. } = ev {
                    match self.policy {
                        AcceptPolicy::AcceptAll => {
                            self.core.accept(now, id);
                            progressed = true;
                        }
                        AcceptPolicy::Manual => {
                            self.pending.insert(id, now);
                        }
                    }
                }
                self.events.push_back((id, ev));
            }
            if !progressed {
                break;
            }
        }
    }

    /// Addresses beyond this many mean a handshake flood: sweep at once.
    fn peer_limit(&self) -> usize {
        let c = self.core.config();
        c.max_connections + 2 * c.max_pending
    }

    /// Forgets addresses of handshakes that ended without a connection and
    /// of connections the core has dropped.
    fn sweep(&mut self, now: u64) {
        self.last_sweep_us = now;
        let timeout = self.core.config().pending_timeout_us;
        self.pending
            .retain(|_, since| now.saturating_sub(*since) < timeout);
        let flood = self.peers.len() > self.peer_limit();
        let (core, pending) = (&self.core, &self.pending);
        self.peers.retain(|id, p| {
            core.connection(*id).is_some()
                || pending.contains_key(id)
                || (!flood && now.saturating_sub(p.last_seen_us) < timeout + HANDSHAKE_GRACE_US)
        });
    }
}
