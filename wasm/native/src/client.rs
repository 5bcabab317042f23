//! `UdpClient`: one client connection on its own UDP socket, for tests,
//! bots and tools (game clients in browsers use the TypeScript SDK).

use std::collections::VecDeque;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

use ricochet_core::{
    Config, Connection, Event, MessageId, SendError, State, Stats, CLIENT_ENTROPY_LEN,
};

use crate::clock::Clock;
use crate::socket::{Socket, SocketStats, MAX_UDP_PAYLOAD};

/// Most datagrams read in one `poll` (see `UdpServer`).
const MAX_BATCH: usize = 4096;
const DRIVE_EVERY: usize = 64;

/// A Ricochet client on one UDP socket connected to one server. Not `Send`
/// (see `UdpServer`).
pub struct UdpClient {
    conn: Connection,
    socket: Socket,
    clock: Clock,
    server: SocketAddr,
    events: VecDeque<Event>,
    recv_buf: Vec<u8>,
    send_buf: Vec<u8>,
}

/// The connection ID and session key, from the OS: the key is what keeps
/// another party from taking over the session, so it must be unguessable.
fn os_entropy() -> io::Result<[u8; CLIENT_ENTROPY_LEN]> {
    let mut e = [0u8; CLIENT_ENTROPY_LEN];
    getrandom::fill(&mut e).map_err(|err| io::Error::other(format!("no OS randomness: {err}")))?;
    Ok(e)
}

impl UdpClient {
    /// Binds an ephemeral port (on loopback when the server is on loopback,
    /// otherwise on every interface), sends HELLO with `handshake`, and
    /// returns at once: `Event::Connected` or `Event::Closed` follows from
    /// `poll`. Invalid config or handshake is an `InvalidInput` error.
    pub fn connect(
        server: impl ToSocketAddrs,
        config: Config,
        handshake: &[u8],
    ) -> io::Result<UdpClient> {
        let server = server
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no server address"))?;
        let ip = match (server.ip().is_loopback(), server.ip()) {
            (true, ip) => ip,
            (false, IpAddr::V4(_)) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            (false, IpAddr::V6(_)) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        };
        Self::connect_from(SocketAddr::new(ip, 0), server, config, handshake)
    }

    /// `connect` from a chosen local address.
    pub fn connect_from(
        local: SocketAddr,
        server: SocketAddr,
        config: Config,
        handshake: &[u8],
    ) -> io::Result<UdpClient> {
        let clock = Clock::new();
        let conn = Connection::client(config, clock.now_us(), &os_entropy()?, handshake)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let mut socket = Socket::bind(local)?;
        socket.connect(server)?;
        let datagram = conn.config().max_datagram_size;
        let mut client = UdpClient {
            conn,
            socket,
            clock,
            server,
            events: VecDeque::new(),
            recv_buf: vec![0; MAX_UDP_PAYLOAD],
            send_buf: vec![0; datagram],
        };
        client.drive();
        Ok(client)
    }

    // ---- getters -------------------------------------------------------

    /// The connection ID (chosen at random, sent in HELLO).
    pub fn id(&self) -> u32 {
        self.conn.id()
    }

    pub fn state(&self) -> State {
        self.conn.state()
    }

    pub fn is_connected(&self) -> bool {
        self.conn.is_connected()
    }

    /// True once the connection is over and has nothing more to send.
    pub fn is_drained(&self) -> bool {
        self.conn.is_drained()
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    pub fn server_addr(&self) -> SocketAddr {
        self.server
    }

    /// The core's clock: microseconds since `connect`.
    pub fn now_us(&self) -> u64 {
        self.clock.now_us()
    }

    /// The sans-IO connection, for reading what this driver does not wrap.
    pub fn core(&self) -> &Connection {
        &self.conn
    }

    pub fn stats(&self) -> Stats {
        self.conn.stats()
    }

    pub fn socket_stats(&self) -> SocketStats {
        self.socket.stats.clone()
    }

    // ---- commands ------------------------------------------------------

    /// Queues a message; its fate arrives later as `Acked(id)`/`Lost(id)`.
    pub fn send(&mut self, channel: u8, data: Vec<u8>) -> Result<MessageId, SendError> {
        self.conn.send(self.clock.now_us(), channel, data)
    }

    /// Closes with an application code and reason. Keep polling (or
    /// `flush`) so the CLOSE frame leaves.
    pub fn close(&mut self, code: u64, reason: &str) {
        self.conn.close(self.clock.now_us(), code, reason);
    }

    // ---- run loop ------------------------------------------------------

    /// Same contract as `UdpServer::poll`.
    pub fn poll(&mut self, max_wait: Duration) -> io::Result<()> {
        self.drive();
        let wait = self.clock.wait_until(self.conn.poll_timeout(), max_wait);
        let mut next = self.socket.recv(&mut self.recv_buf, wait)?;
        let mut count = 0;
        while let Some((len, _)) = next {
            let now = self.clock.now_us();
            if self
                .conn
                .handle_datagram(now, &self.recv_buf[..len])
                .is_err()
            {
                self.socket.stats.dropped_in += 1;
            }
            count += 1;
            if count >= MAX_BATCH {
                break;
            }
            if count % DRIVE_EVERY == 0 {
                self.drive();
            }
            next = self.socket.try_recv(&mut self.recv_buf)?;
        }
        let now = self.clock.now_us();
        let timed_out = self.conn.poll_timeout().is_some_and(|t| t <= now);
        if timed_out {
            self.conn.handle_timeout(now);
        }
        // Nothing read and no timer due: the connection is as the first
        // drive left it, so a second would only ask it again for nothing
        // (a bot polls 60 times a second and reads on half of them).
        if count > 0 || timed_out {
            self.drive();
        }
        Ok(())
    }

    /// Sends queued output now, without waiting.
    pub fn flush(&mut self) {
        self.drive();
    }

    /// Drains the events gathered so far, in order.
    pub fn events(&mut self) -> impl Iterator<Item = Event> + '_ {
        self.events.drain(..)
    }

    pub fn next_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    fn drive(&mut self) {
        let now = self.clock.now_us();
        while let Some(n) = self.conn.poll_transmit(now, &mut self.send_buf) {
            self.socket.send(&self.send_buf[..n], None);
        }
        while let Some(ev) = self.conn.poll_event() {
            self.events.push_back(ev);
        }
    }
}
