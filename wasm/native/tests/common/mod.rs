//! Shared helpers: self-checking payloads, a two-endpoint harness polled on
//! one thread, and an echo server on its own thread. Every wait is bounded.
#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ricochet_native::{
    AcceptPolicy, ChannelConfig, Config, ConnectionId, Event, SendError, ServerConfig, UdpClient,
    UdpServer,
};

/// Loopback only: these tests never send anywhere else.
pub const LOOPBACK: &str = "127.0.0.1:0";
pub const TICK: Duration = Duration::from_millis(1);

#[allow(unused_imports)] // not every test file sends payloads
pub use ricochet_sim::payload::payload;

/// Checks a payload made by `payload` and returns its number.
pub fn check(data: &[u8]) -> u32 {
    ricochet_sim::payload::verify(data)
        .unwrap_or_else(|| panic!("payload corrupted ({} bytes)", data.len()))
}

/// Message sizes from tiny to several fragments, derived from `n`.
pub fn size_of(n: u32) -> usize {
    if n.is_multiple_of(10) {
        1500 + (n as usize * 7919) % 3000
    } else {
        8 + (n as usize * 31) % 300
    }
}

/// Client channels used by the tests: two reliable-ordered, one unreliable.
pub fn client_config() -> Config {
    Config::default().with_channels(vec![
        ChannelConfig::reliable_ordered(),
        ChannelConfig::reliable_ordered(),
        ChannelConfig::unreliable(),
    ])
}

/// A server and a client polled alternately on this thread.
pub struct Harness {
    pub server: UdpServer,
    pub client: UdpClient,
    pub server_events: Vec<(ConnectionId, Event)>,
    pub client_events: Vec<Event>,
    /// Echo every message the server receives.
    pub echo: bool,
}

impl Harness {
    pub fn new(policy: AcceptPolicy, handshake: &[u8]) -> Harness {
        let mut server = UdpServer::bind(LOOPBACK, ServerConfig::default()).expect("bind server");
        server.set_accept_policy(policy);
        let client = UdpClient::connect(server.local_addr().unwrap(), client_config(), handshake)
            .expect("connect");
        Harness {
            server,
            client,
            server_events: Vec::new(),
            client_events: Vec::new(),
            echo: false,
        }
    }

    /// A connected pair that echoes.
    pub fn connected() -> Harness {
        let mut h = Harness::new(AcceptPolicy::AcceptAll, b"hi");
        h.echo = true;
        assert!(
            h.run_until(Duration::from_secs(3), |h| h.client.is_connected()),
            "no connection"
        );
        h
    }

    pub fn step(&mut self) {
        self.server.poll(TICK).expect("server poll");
        while let Some((id, ev)) = self.server.next_event() {
            if let (true, Event::Message { channel, data }) = (self.echo, &ev) {
                self.server.send(id, *channel, data.clone()).expect("echo");
            }
            self.server_events.push((id, ev));
        }
        self.client.poll(TICK).expect("client poll");
        self.client_events.extend(self.client.events());
    }

    /// Steps until `cond` holds or `limit` passes; returns whether it held.
    pub fn run_until(&mut self, limit: Duration, mut cond: impl FnMut(&Harness) -> bool) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if cond(self) {
                return true;
            }
            self.step();
        }
        cond(self)
    }

    pub fn client_messages(&self, channel: u8) -> Vec<&[u8]> {
        self.client_events
            .iter()
            .filter_map(|e| match e {
                Event::Message { channel: c, data } if *c == channel => Some(data.as_slice()),
                _ => None,
            })
            .collect()
    }
}

/// An accept-all echo server on its own thread (the driver is not `Send`,
/// so it is created there). Stops when dropped, or after `MAX_LIFE`.
pub struct EchoThread {
    pub addr: std::net::SocketAddr,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

const MAX_LIFE: Duration = Duration::from_secs(60);

impl EchoThread {
    pub fn start() -> EchoThread {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut server = UdpServer::bind(LOOPBACK, ServerConfig::default()).expect("bind echo");
            server.set_accept_policy(AcceptPolicy::AcceptAll);
            tx.send(server.local_addr().unwrap()).unwrap();
            let mut backlog: HashMap<ConnectionId, VecDeque<(u8, Vec<u8>)>> = HashMap::new();
            let end = Instant::now() + MAX_LIFE;
            while !flag.load(Ordering::SeqCst) && Instant::now() < end {
                server.poll(Duration::from_millis(5)).expect("echo poll");
                while let Some((id, ev)) = server.next_event() {
                    if let Event::Message { channel, data } = ev {
                        backlog.entry(id).or_default().push_back((channel, data));
                    }
                }
                // In order: stop at the first message the buffer refuses.
                for (&id, q) in backlog.iter_mut() {
                    while let Some((channel, data)) = q.pop_front() {
                        match server.send(id, channel, data) {
                            Ok(_) => {}
                            Err(SendError::BufferFull(data)) => {
                                q.push_front((channel, data));
                                break;
                            }
                            Err(e) => panic!("echo send: {e}"),
                        }
                    }
                }
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(5))
            .expect("echo thread started");
        EchoThread {
            addr,
            stop,
            handle: Some(handle),
        }
    }
}

impl Drop for EchoThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let r = h.join();
            if !std::thread::panicking() {
                r.expect("echo thread panicked");
            }
        }
    }
}

/// A stand-in for the relay on 127.0.0.1: forwards datagrams between one
/// client and the server, rewriting each HELLO's payload into a relay
/// attestation of `claims` (WIRE.md, "Relay attestation").
pub struct Relay {
    socket: std::net::UdpSocket,
    server: std::net::SocketAddr,
    client: Option<std::net::SocketAddr>,
    key: ricochet_native::AttestKey,
    claims: Vec<u8>,
}

impl Relay {
    pub fn new(server: std::net::SocketAddr, token_secret: &str, claims: &str) -> Relay {
        let socket = std::net::UdpSocket::bind(LOOPBACK).expect("bind relay");
        socket.set_nonblocking(true).unwrap();
        let key = ricochet_native::attest_key(token_secret.as_bytes());
        Relay {
            socket,
            server,
            client: None,
            key,
            claims: claims.as_bytes().to_vec(),
        }
    }

    pub fn addr(&self) -> std::net::SocketAddr {
        self.socket.local_addr().unwrap()
    }

    /// Forwards every datagram queued in the relay's socket.
    pub fn pump(&mut self) {
        use ricochet_core::wire::{self, Handshake};
        let mut buf = vec![0u8; 65_535];
        while let Ok((n, from)) = self.socket.recv_from(&mut buf) {
            if from == self.server {
                if let Some(c) = self.client {
                    let _ = self.socket.send_to(&buf[..n], c);
                }
                continue;
            }
            self.client = Some(from);
            let out = match wire::decode_handshake(&buf[..n]) {
                Ok(Handshake::Hello {
                    conn_id,
                    channels,
                    key,
                    payload,
                    ..
                }) => {
                    let attested = ricochet_core::relay_attest(
                        &self.key,
                        conn_id,
                        &key,
                        &self.claims,
                        payload,
                    )
                    .expect("claims fit");
                    let mut hello = vec![0u8; 4096];
                    let mut w = wire::Writer::new(&mut hello);
                    assert!(wire::encode_hello(
                        &mut w, conn_id, &channels, &key, &attested
                    ));
                    let len = w.len();
                    hello.truncate(len);
                    hello
                }
                _ => buf[..n].to_vec(),
            };
            let _ = self.socket.send_to(&out, self.server);
        }
    }
}
