//! Path validation in `UdpServer` over real sockets on 127.0.0.1: a
//! forwarder stands between client and server and changes the source
//! address the server sees (a NAT rebinding), or replays one of the
//! client's datagrams from a third socket (its key holder spoofing).

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use common::{client_config, payload, LOOPBACK, TICK};
use ricochet_native::{AcceptPolicy, Event, ServerConfig, UdpClient, UdpServer};

struct Forwarder {
    /// Where the client sends.
    front: UdpSocket,
    /// Toward the server: the current source, and the others still open.
    back: Vec<UdpSocket>,
    current: usize,
    client: Option<SocketAddr>,
    server: SocketAddr,
    /// Send the next client datagram from this socket instead, once.
    replay_from: Option<UdpSocket>,
    /// Size of the replayed datagram, and what the server sent its socket.
    replay_len: usize,
    replay_got: Vec<Vec<u8>>,
}

impl Forwarder {
    fn new(server: SocketAddr) -> Forwarder {
        let front = UdpSocket::bind(LOOPBACK).unwrap();
        front.set_nonblocking(true).unwrap();
        let mut f = Forwarder {
            front,
            back: Vec::new(),
            current: 0,
            client: None,
            server,
            replay_from: None,
            replay_len: 0,
            replay_got: Vec::new(),
        };
        f.rebind();
        f
    }

    /// New source port toward the server (the old one keeps forwarding back).
    fn rebind(&mut self) -> SocketAddr {
        let s = UdpSocket::bind(LOOPBACK).unwrap();
        s.set_nonblocking(true).unwrap();
        let addr = s.local_addr().unwrap();
        self.back.push(s);
        self.current = self.back.len() - 1;
        addr
    }

    fn pump(&mut self) {
        let mut buf = [0u8; 2048];
        while let Ok((n, from)) = self.front.recv_from(&mut buf) {
            self.client = Some(from);
            if let Some(s) = self.replay_from.as_ref() {
                s.send_to(&buf[..n], self.server).unwrap();
                self.replay_len = n;
                // Only once; the socket stays to hear what the server sends it.
                let s = self.replay_from.take().unwrap();
                s.set_nonblocking(true).unwrap();
                self.back.push(s);
                continue;
            }
            self.back[self.current]
                .send_to(&buf[..n], self.server)
                .unwrap();
        }
        for (i, s) in self.back.iter().enumerate() {
            while let Ok((n, _)) = s.recv_from(&mut buf) {
                let replay = i == self.back.len() - 1 && i != self.current;
                if replay {
                    self.replay_got.push(buf[..n].to_vec());
                } else if let Some(c) = self.client {
                    self.front.send_to(&buf[..n], c).unwrap();
                }
            }
        }
    }
}

struct Rig {
    server: UdpServer,
    client: UdpClient,
    fwd: Forwarder,
    got: Vec<Vec<u8>>,
}

impl Rig {
    fn new() -> Rig {
        let mut server = UdpServer::bind(LOOPBACK, ServerConfig::default()).unwrap();
        server.set_accept_policy(AcceptPolicy::AcceptAll);
        let fwd = Forwarder::new(server.local_addr().unwrap());
        let client =
            UdpClient::connect(fwd.front.local_addr().unwrap(), client_config(), b"").unwrap();
        let mut r = Rig {
            server,
            client,
            fwd,
            got: Vec::new(),
        };
        assert!(r.run_until(Duration::from_secs(3), |r| r.client.is_connected()));
        r.run_until(Duration::from_millis(30), |_| false);
        r
    }

    fn step(&mut self) {
        self.client.poll(TICK).unwrap();
        for ev in self.client.events() {
            if let Event::Message { data, .. } = ev {
                self.got.push(data);
            }
        }
        self.fwd.pump();
        self.server.poll(TICK).unwrap();
        self.server.events().for_each(drop);
        self.fwd.pump();
    }

    fn run_until(&mut self, limit: Duration, mut cond: impl FnMut(&Rig) -> bool) -> bool {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if cond(self) {
                return true;
            }
            self.step();
        }
        cond(self)
    }
}

#[test]
fn a_rebound_client_is_challenged_then_followed() {
    let mut r = Rig::new();
    let id = r.client.id();
    let old = r.server.peer_addr(id).unwrap();
    let new = r.fwd.rebind();
    r.client.send(0, payload(1, 50)).unwrap();
    assert!(
        r.run_until(Duration::from_secs(3), |r| r.server.peer_addr(id)
            == Some(new)),
        "the session follows after PATH_RESPONSE"
    );
    assert_ne!(old, new);
    r.server.send(id, 0, payload(2, 100)).unwrap();
    r.server.flush();
    assert!(r.run_until(Duration::from_secs(3), |r| r.got.len() == 1));
}

#[test]
fn a_replayed_datagram_from_another_address_draws_only_challenges_there() {
    let mut r = Rig::new();
    let id = r.client.id();
    let home = r.server.peer_addr(id).unwrap();
    r.fwd.replay_from = Some(UdpSocket::bind(LOOPBACK).unwrap());
    r.client.send(0, payload(1, 50)).unwrap();
    r.client.flush();
    r.run_until(Duration::from_millis(20), |r| r.fwd.replay_from.is_none());
    assert!(r.fwd.replay_from.is_none(), "the replay went out");
    for i in 0..20 {
        r.server.send(id, 0, payload(100 + i, 200)).unwrap();
    }
    r.server.flush();
    assert!(
        r.run_until(Duration::from_secs(3), |r| r.got.len() == 20),
        "the stream stays with the client: {}",
        r.got.len()
    );
    r.run_until(Duration::from_millis(300), |_| false);
    assert_eq!(r.server.peer_addr(id), Some(home));
    assert!(
        !r.fwd.replay_got.is_empty(),
        "the other address is challenged"
    );
    for d in &r.fwd.replay_got {
        assert_eq!(
            (d[0], d[15]),
            (0x04, 0x30),
            "only PATH_CHALLENGE goes there"
        );
    }
    let sent: usize = r.fwd.replay_got.iter().map(Vec::len).sum();
    assert!(
        sent <= 3 * r.fwd.replay_len,
        "{sent} bytes toward the other address, {} from it",
        r.fwd.replay_len
    );
}
