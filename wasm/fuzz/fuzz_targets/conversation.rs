//! A client and a server talking through a hostile link, scripted by the fuzz
//! input. The first bytes pick a configuration; the rest is a list of ops
//! (advance time, send, deliver/drop/duplicate/reorder/corrupt/truncate the
//! next in-flight datagram, inject raw bytes, close, ...).
//!
//! Invariants (checked after every op):
//! - nothing panics;
//! - `stats().send_buffer_bytes <= send_buffer_bytes` on every endpoint;
//! - `stats().recv_buffer_bytes <= recv_buffer_bytes` (head-of-line
//!   reassemblies included), and the server's total within `recv_budget_bytes`
//!   (half the inputs set it to one connection's budget);
//! - every message ID gets at most one `Acked`/`Lost` receipt, and only IDs
//!   that `send` returned get one; `send` refuses `BufferFull` only when the
//!   message really does not fit, and hands every refused message back; no
//!   event follows `Closed`;
//! - when the script used no corruption, truncation or injection: every
//!   message delivered on channel 0 (reliable-ordered), either way, is intact
//!   and in counter order; and after a final settling phase over a clean
//!   link, every channel-0 message the sender had Acked was delivered.
//!
//! Two further checks, on by default (RICOCHET_FUZZ_SKIP=malformed,reincarnation
//! turns them off while hunting something else):
//! - malformed: a datagram dropped as `Malformed` leaves the endpoint's
//!   `state()` unchanged (the contract of `Connection::handle_datagram`).
//! - reincarnation: keep the ordering checks on if the server ever accepts
//!   the same connection ID twice (a stale HELLO after the first connection
//!   drained); the server now refuses retired IDs, so this should not occur.
//!
//! Op bytes (high bit = direction server → client, or the server side):
//! 0-15 advance time, 16-39 send, 40-63 deliver next, 64-71 drop, 72-75
//! duplicate, 76-83 reorder, 84-87 corrupt, 88-89 truncate, 90-93 inject,
//! 94-95 close, 96-103 deliver all, 104-111 jump to next timer, 112-115
//! burst of channel-0 sends, 116-117 path change (server side: the host
//! reports a new address, which the server challenges), 118-123 deliver the newest
//! first, 124-127 an impostor (the live ID, a key of its own: HELLO, DATA
//! with CLOSE/a message/PING, WELCOME, REJECT; or a HELLO for a fresh ID
//! from a spoofed address). An impostor does not make the script unclean:
//! it must be refused (`Err`, so a host would not move the session to its
//! address) and change nothing the checks can see. A spoofed HELLO is
//! accepted and sent a message at once, and must never draw more than 3×
//! its bytes (nobody behind the address answers). A spoofed HELLO declaring
//! more than `max_channels` channels must draw a REJECT and no connection.
//!
//! RICOCHET_FUZZ_TRACE=1 prints every op, datagram and event: use it when
//! replaying one reproducer.

#![no_main]

use std::collections::{HashMap, VecDeque};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use ricochet_core::auth::{welcome_number, Direction, SessionKey, TagKey};
use ricochet_core::wire::{self, Writer};
use ricochet_core::{
    head_reserve, ChannelConfig, ChannelKind, Config, CongestionKind, Connection, DropReason,
    Event, FecConfig, SendError, Server, ServerConfig, AMPLIFICATION_FACTOR,
};
use ricochet_sim::pair::insecure_seeded_entropy;

/// Most datagrams held in flight per direction (the oldest is lost beyond).
const MAX_IN_FLIGHT: usize = 2048;
/// Most ops interpreted per input (keeps execs fast).
const MAX_OPS: usize = 4096;

fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v != "0" && !v.is_empty())
}

/// A check is on unless named in RICOCHET_FUZZ_SKIP (a comma list).
fn strict(check: &str) -> bool {
    static S: OnceLock<String> = OnceLock::new();
    let v = S.get_or_init(|| std::env::var("RICOCHET_FUZZ_SKIP").unwrap_or_default());
    !v.split(',').any(|c| c.trim() == check)
}

/// RICOCHET_FUZZ_TRACE=1 (see the header).
fn trace() -> bool {
    static T: OnceLock<bool> = OnceLock::new();
    *T.get_or_init(|| env_flag("RICOCHET_FUZZ_TRACE"))
}

macro_rules! trace {
    ($($t:tt)*) => {
        if trace() {
            eprintln!($($t)*);
        }
    };
}

/// Cursor over the fuzz input; reads past the end yield zeros.
struct Input<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Input<'a> {
    fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    fn bytes(&mut self, n: usize) -> &'a [u8] {
        let start = self.pos.min(self.data.len());
        let end = (start + n).min(self.data.len());
        self.pos += n;
        &self.data[start..end]
    }
    fn done(&self) -> bool {
        self.pos >= self.data.len()
    }
}

use ricochet_sim::payload::payload;

/// The counter of an intact payload, or why it is not one.
fn check(data: &[u8]) -> Result<u32, String> {
    if data.len() < 8 {
        return Err(format!("payload of {} bytes (< 8)", data.len()));
    }
    let n = u32::from_le_bytes(data[0..4].try_into().unwrap());
    let len = u32::from_le_bytes(data[4..8].try_into().unwrap()) as usize;
    if len != data.len() || data != &payload(n, len)[..] {
        return Err(format!(
            "payload #{n} corrupted (claims {len} bytes, has {})",
            data.len()
        ));
    }
    Ok(n)
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Receipt {
    Pending,
    Acked,
    Lost,
}

struct SentMsg {
    channel: u8,
    counter: u32,
    receipt: Receipt,
}

/// One side's view for the invariants: what it sent, what it got.
#[derive(Default)]
struct Book {
    sent: HashMap<u64, SentMsg>,
    /// Channel-0 counter of the next message this side sends.
    next_counter: u32,
    /// Channel-0 counter this side expects to receive next.
    expect: u32,
    /// Channel-0 counters received, in order.
    got: Vec<u32>,
    /// First channel-0 counter of each incarnation of the peer's connection
    /// (the server's can restart, see `drain`); empty means [0].
    peer_bases: Vec<u32>,
    /// `expect` was set from the first message (to its incarnation's base).
    pinned: bool,
    closed: bool,
    connected: bool,
}

impl Book {
    fn on_event(&mut self, who: &str, ev: Event, clean: bool) {
        match &ev {
            Event::Message { channel, data } => trace!(
                "  {who} event Message ch {channel} {} bytes #{:?}",
                data.len(),
                check(data)
            ),
            _ => trace!("  {who} event {ev:?}"),
        }
        assert!(!self.closed, "{who}: event after Closed: {ev:?}");
        match ev {
            Event::Connected => self.connected = true,
            Event::Message { channel, data } => {
                if clean && channel == 0 {
                    let n = check(&data)
                        .unwrap_or_else(|e| panic!("{who}: channel 0 over a clean link: {e}"));
                    if !self.pinned {
                        // The stream starts at the base of the incarnation it comes from.
                        self.expect = self
                            .peer_bases
                            .iter()
                            .copied()
                            .filter(|&b| b <= n)
                            .max()
                            .unwrap_or(0);
                        self.pinned = true;
                    }
                    assert_eq!(n, self.expect, "{who}: channel 0 delivered #{n} out of order (expected #{}; got so far {:?})", self.expect, tail(&self.got));
                    self.expect += 1;
                    self.got.push(n);
                }
            }
            Event::Acked(id) | Event::Lost(id) => {
                let acked = matches!(ev, Event::Acked(_));
                let m = self
                    .sent
                    .get_mut(&id)
                    .unwrap_or_else(|| panic!("{who}: receipt {ev:?} for a message ID never sent"));
                assert_eq!(
                    m.receipt,
                    Receipt::Pending,
                    "{who}: second receipt {ev:?} for message {id} (channel {}, #{})",
                    m.channel,
                    m.counter
                );
                m.receipt = if acked { Receipt::Acked } else { Receipt::Lost };
            }
            Event::Closed(_) => self.closed = true,
            Event::ConnectRequest { .. } => panic!("{who}: ConnectRequest on a connection"),
        }
    }
}

fn tail(v: &[u32]) -> &[u32] {
    &v[v.len().saturating_sub(8)..]
}

struct World {
    cfg: Config,
    client: Connection,
    server: Server,
    id: u32,
    /// The client's session key (the impostor must not hold it).
    key: SessionKey,
    now: u64,
    /// In flight: index 0 = client → server, 1 = server → client.
    link: [VecDeque<Vec<u8>>; 2],
    cb: Book,
    sb: Book,
    /// The script corrupted, truncated or injected something.
    dirty: bool,
    /// Server connections accepted for our ID so far.
    incarnations: u32,
    /// More than one (see `drain`): ordering checks are off unless strict.
    reincarnated: bool,
    buf: Vec<u8>,
    nchannels: u8,
    /// IDs of spoofed HELLOs: bytes the server received from and sent to them.
    spoofed: HashMap<u32, (u64, u64)>,
}

fn config(inp: &mut Input) -> Config {
    let a = inp.u8();
    let b = inp.u8();
    let c = inp.u8();
    let d = inp.u8();
    let max_datagram_size = [1200usize, 128, 300, 576][(a & 3) as usize];
    let max_message_size = [1024usize, 4096, 16 << 10, 64 << 10][((a >> 2) & 3) as usize];
    let send_buffer_bytes = max_message_size * [1usize, 2, 4, 16][((a >> 4) & 3) as usize];
    let recv_buffer_bytes = head_reserve(max_message_size)
        + max_message_size * [0usize, 1, 3, 15][((a >> 6) & 3) as usize];
    let reliable_window = [4096u32, 2, 8, 64][(b & 3) as usize];
    // c & 0x20 doubles as a channel-kind bit: the pairing only correlates the two.
    let congestion = match (b & 4 != 0, c & 0x20 != 0) {
        (true, _) => CongestionKind::Unlimited,
        (false, true) => CongestionKind::NewReno,
        (false, false) => CongestionKind::Bbr,
    };
    // b & 0x80: FEC latency-first, with a 25 ms target on channel 0 (repair for nearly every packet once loss is reported).
    let fec_first = b & 0x80 != 0;
    let mut channels = vec![ChannelConfig::reliable_ordered()
        .with_latency_target_us(if fec_first { 25_000 } else { 0 })];
    let kinds = [
        ChannelKind::ReliableOrdered,
        ChannelKind::ReliableUnordered,
        ChannelKind::UnreliableSequenced,
        ChannelKind::Unreliable,
    ];
    for i in 0..((b >> 3) & 3) {
        let k = kinds[((c >> (2 * i)) & 3) as usize];
        let mut ch =
            ChannelConfig::new(k).with_priority(if c & 0x40 != 0 { 200 - i * 50 } else { 128 });
        if c & 0x80 != 0 && !k.is_reliable() {
            ch = ch.with_max_age_us(20_000);
        }
        channels.push(ch);
    }
    let base = if b & 0x20 != 0 {
        Config::low_latency()
    } else {
        Config::default()
    };
    Config {
        channels,
        max_datagram_size,
        max_message_size,
        send_buffer_bytes,
        recv_buffer_bytes,
        reliable_window,
        congestion,
        max_handshake_payload: max_datagram_size - 64,
        packet_threshold: if b & 0x40 != 0 { 1 } else { 3 },
        fec: if fec_first {
            FecConfig::low_latency()
        } else {
            base.fec
        },
        // d: the ACK cadence and early resend (thin-stream) knobs.
        ack_eliciting_threshold: [2u32, 1, 4, 64][(d & 3) as usize],
        max_ack_delay_us: [base.max_ack_delay_us, 0, 40_000, 200_000][((d >> 2) & 3) as usize],
        early_resend: d & 0x10 == 0,
        ..base
    }
}

impl World {
    fn new(inp: &mut Input) -> World {
        let cfg = config(inp);
        cfg.validate().expect("fuzz config must validate");
        let seed = inp.u16() as u64;
        let entropy = insecure_seeded_entropy(seed);
        let client = Connection::client(cfg.clone(), 0, &entropy, b"fuzz").unwrap();
        let key: SessionKey = entropy[4..].try_into().unwrap();
        let server = Server::new(
            ServerConfig {
                connection: Config {
                    channels: vec![ChannelConfig::reliable_ordered()],
                    ..cfg.clone()
                },
                max_pending: 4,
                // The top seed bit: a server-wide budget of one connection's, so
                // spoofed connections and the client's compete for it.
                recv_budget_bytes: if seed & 0x8000 != 0 {
                    cfg.recv_buffer_bytes
                } else {
                    ServerConfig::default()
                        .recv_budget_bytes
                        .max(cfg.recv_buffer_bytes)
                },
                ..ServerConfig::default()
            },
            &ricochet_sim::pair::TEST_SERVER_SECRET,
        )
        .unwrap();
        let id = client.id();
        let nchannels = cfg.channels.len() as u8;
        let mut w = World {
            cfg,
            client,
            server,
            id,
            key,
            now: 0,
            link: [VecDeque::new(), VecDeque::new()],
            cb: Book::default(),
            sb: Book::default(),
            dirty: false,
            incarnations: 0,
            reincarnated: false,
            buf: vec![0u8; 2048],
            nchannels,
            spoofed: HashMap::new(),
        };
        w.drain();
        w
    }

    /// Collect every output and event, accept connect requests, check the
    /// buffer bounds of both endpoints.
    fn drain(&mut self) {
        self.drain_checking(true, true);
    }

    /// `drain`, checking the bounds of only the named endpoints (stats() is
    /// not free: after a delivery only the recipient's can have grown).
    fn drain_checking(&mut self, client: bool, server: bool) {
        let now = self.now;
        while let Some(n) = self.client.poll_transmit(now, &mut self.buf) {
            assert!(n <= self.cfg.max_datagram_size);
            push(&mut self.link[0], self.buf[..n].to_vec());
        }
        while let Some((id, n)) = self.server.poll_transmit(now, &mut self.buf) {
            assert!(n <= self.cfg.max_datagram_size);
            if let Some((got, sent)) = self.spoofed.get_mut(&id) {
                *sent += n as u64;
                assert!(
                    *sent <= AMPLIFICATION_FACTOR * *got,
                    "a spoofed HELLO of {got} bytes drew {sent}"
                );
            } else if id == self.id {
                push(&mut self.link[1], self.buf[..n].to_vec());
            } else {
                // Only injection can make the server talk to anyone else.
                assert!(
                    self.dirty,
                    "server transmitted for unknown connection {id:#x}"
                );
            }
        }
        let clean = !self.dirty && !self.reincarnated;
        while let Some(ev) = self.client.poll_event() {
            self.cb.on_event("client", ev, clean);
        }
        let mut accepted = false;
        while let Some((id, ev)) = self.server.poll_event() {
            if self.spoofed.contains_key(&id) {
                // The application greets whoever connects, before any reply.
                if matches!(ev, Event::ConnectRequest { .. }) && self.server.accept(now, id) {
                    let _ = self.server.send(now, id, 0, vec![0x5a; 2000]);
                }
                continue;
            }
            if id != self.id {
                assert!(
                    self.dirty,
                    "server event for unknown connection {id:#x}: {ev:?}"
                );
                if matches!(ev, Event::ConnectRequest { .. }) {
                    self.server.reject(now, id, "not in this script");
                }
                continue;
            }
            if let Event::ConnectRequest { payload } = ev {
                if !self.dirty {
                    assert_eq!(payload, b"fuzz");
                }
                if self.server.accept(now, id) {
                    self.incarnations += 1;
                    if self.incarnations > 1 && !strict("reincarnation") {
                        // A stale HELLO arrived after the server's connection
                        // drained and started a second one with the same ID,
                        // which the still-open client cannot tell apart.
                        self.reincarnated = true;
                    }
                    // Fresh books, but the channel-0 counter keeps counting,
                    // so a client that sees both incarnations' data is caught.
                    let next_counter = self.sb.next_counter;
                    self.sb = Book {
                        next_counter,
                        ..Book::default()
                    };
                    self.cb.peer_bases.push(next_counter);
                    accepted = true;
                }
                continue;
            }
            self.sb.on_event("server", ev, clean);
        }
        if accepted {
            // The accept queued a WELCOME: send it.
            return self.drain_checking(client, server);
        }
        self.check_bounds(client, server);
    }

    fn check_bounds(&self, client: bool, server: bool) {
        let cfg = &self.cfg;
        // The documented bounds (config.rs, recv_buffer_bytes and recv_budget_bytes).
        let recv_max = cfg.recv_buffer_bytes as u64;
        let total = self.server.receive_buffered_bytes();
        assert!(
            total <= self.server.config().recv_budget_bytes,
            "server receive total {total}"
        );
        if client {
            let s = self.client.stats();
            assert!(
                s.send_buffer_bytes <= cfg.send_buffer_bytes as u64,
                "client send buffer {} > {}",
                s.send_buffer_bytes,
                cfg.send_buffer_bytes
            );
            assert!(
                s.recv_buffer_bytes <= recv_max,
                "client receive buffer {} > {recv_max}",
                s.recv_buffer_bytes
            );
        }
        if let Some(c) = self.server.connection(self.id).filter(|_| server) {
            let s = c.stats();
            assert!(
                s.send_buffer_bytes <= cfg.send_buffer_bytes as u64,
                "server send buffer {} > {}",
                s.send_buffer_bytes,
                cfg.send_buffer_bytes
            );
            assert!(
                s.recv_buffer_bytes <= recv_max,
                "server receive buffer {} > {recv_max}",
                s.recv_buffer_bytes
            );
        }
    }

    fn next_deadline(&self) -> Option<u64> {
        match (self.client.poll_timeout(), self.server.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Fire due timers at their deadlines, up to `target`, as a host would.
    fn advance_to(&mut self, target: u64) {
        for _ in 0..64 {
            match self.next_deadline() {
                Some(t) if t <= target => {
                    self.now = self.now.max(t);
                    self.fire();
                }
                _ => break,
            }
        }
        self.now = self.now.max(target);
        self.fire();
    }

    fn fire(&mut self) {
        let now = self.now;
        if self.client.poll_timeout().is_some_and(|t| t <= now) {
            self.client.handle_timeout(now);
        }
        if self.server.poll_timeout().is_some_and(|t| t <= now) {
            self.server.handle_timeout(now);
        }
        self.drain();
    }

    fn send(&mut self, server: bool, channel: u8, len: usize) {
        let now = self.now;
        let book = if server { &mut self.sb } else { &mut self.cb };
        let counter = if channel == 0 {
            book.next_counter
        } else {
            u32::MAX - channel as u32
        };
        let data = payload(counter, len);
        let len = data.len();
        let before = if server {
            self.server
                .connection(self.id)
                .map(|c| c.stats().send_buffer_bytes)
        } else {
            Some(self.client.stats().send_buffer_bytes)
        };
        let r = if server {
            self.server.send(now, self.id, channel, data)
        } else {
            self.client.send(now, channel, data)
        };
        trace!(
            "  {} send ch {channel} #{counter} {len} bytes -> {:?}",
            if server { "server" } else { "client" },
            r.as_ref().map_err(|e| e.code())
        );
        let book = if server { &mut self.sb } else { &mut self.cb };
        match r {
            Ok(id) => {
                assert!(channel < self.nchannels);
                assert!(len <= self.cfg.max_message_size);
                let prev = book.sent.insert(
                    id,
                    SentMsg {
                        channel,
                        counter,
                        receipt: Receipt::Pending,
                    },
                );
                assert!(prev.is_none(), "message ID {id} returned twice");
                if channel == 0 {
                    book.next_counter += 1;
                }
            }
            Err(e) if e.clone().into_message().len() != len => {
                panic!("{e:?}: the refused message was not handed back")
            }
            Err(SendError::BufferFull(_)) => {
                if let Some(b) = before {
                    assert!(
                        b + len as u64 > self.cfg.send_buffer_bytes as u64,
                        "BufferFull with {b} + {len} <= {}",
                        self.cfg.send_buffer_bytes
                    );
                }
            }
            Err(SendError::TooLarge(_)) => assert!(len > self.cfg.max_message_size),
            Err(SendError::UnknownChannel(_)) => assert!(channel >= self.nchannels),
            Err(SendError::NotConnected(_)) => {}
        }
        self.drain_checking(!server, server);
    }

    /// Hand one datagram to an endpoint.
    fn deliver(&mut self, to_server: bool, d: &[u8]) {
        let now = self.now;
        let r = if to_server {
            let before = self.server.connection(self.id).map(|c| c.state());
            let r = self.server.handle_datagram(now, d).map(|_| ());
            let after = self.server.connection(self.id).map(|c| c.state());
            (r, before, after)
        } else {
            let before = Some(self.client.state());
            let r = self.client.handle_datagram(now, d);
            (r, before, Some(self.client.state()))
        };
        trace!(
            "  deliver {} bytes {} {:02x?}{} -> {:?}; recv buffer now {}",
            d.len(),
            if to_server { "to server" } else { "to client" },
            &d[..d.len().min(24)],
            if d.len() > 24 { ".." } else { "" },
            r.0,
            if to_server {
                self.server
                    .connection(self.id)
                    .map_or(0, |c| c.stats().recv_buffer_bytes)
            } else {
                self.client.stats().recv_buffer_bytes
            }
        );
        if strict("malformed") && r.0 == Err(DropReason::Malformed) {
            assert_eq!(
                r.1,
                r.2,
                "a datagram dropped as Malformed changed the {} state: {:02x?}",
                if to_server { "server" } else { "client" },
                d
            );
        }
        self.drain_checking(!to_server, to_server);
    }

    fn deliver_next(&mut self, dir: usize) {
        if let Some(d) = self.link[dir].pop_front() {
            self.deliver(dir == 0, &d);
        }
    }

    /// Deliver everything in flight, both ways, until the link is empty.
    fn flush(&mut self) {
        for _ in 0..64 {
            if self.link[0].is_empty() && self.link[1].is_empty() {
                return;
            }
            while let Some(d) = self.link[0].pop_front() {
                self.deliver(true, &d);
            }
            while let Some(d) = self.link[1].pop_front() {
                self.deliver(false, &d);
            }
        }
    }

    fn op(&mut self, inp: &mut Input) {
        let op = inp.u8();
        let dir = (op >> 7) as usize; // 0: client → server, 1: server → client
        trace!(
            "t={} op {op:#04x} ({}) dir {} | in flight c→s {} s→c {} | recv buffer client {} server {}",
            self.now,
            op_name(op & 0x7f),
            if dir == 0 { "c→s" } else { "s→c" },
            self.link[0].len(),
            self.link[1].len(),
            self.client.stats().recv_buffer_bytes,
            self.server.connection(self.id).map_or(0, |c| c.stats().recv_buffer_bytes)
        );
        match op & 0x7f {
            // Advance time by a scaled amount.
            0..=15 => {
                let v = inp.u16() as u64;
                let dt = v << [0u32, 4, 8, 12][(op & 3) as usize];
                self.advance_to(self.now + dt);
            }
            // Application sends: short, medium or up to max_message_size (+ a bit).
            16..=39 => {
                let server = op & 0x80 != 0;
                let b = inp.u8();
                let channel = (b & 7) % (self.nchannels + 1);
                let v = inp.u16() as usize;
                let len = match b >> 6 {
                    0 | 1 => 8 + (v & 0xff),
                    2 => 8 + v % 4096,
                    _ => 8 + v % (self.cfg.max_message_size + 64),
                };
                self.send(server, channel, len);
            }
            // Deliver the next datagram.
            40..=63 => self.deliver_next(dir),
            // Drop it.
            64..=71 => {
                self.link[dir].pop_front();
            }
            // Duplicate it (deliver one copy, keep one in flight at the back).
            72..=75 => {
                if let Some(d) = self.link[dir].pop_front() {
                    push(&mut self.link[dir], d.clone());
                    self.deliver(dir == 0, &d);
                }
            }
            // Reorder: move it back by k places.
            76..=83 => {
                let k = inp.u8() as usize;
                if let Some(d) = self.link[dir].pop_front() {
                    let at = k.min(self.link[dir].len());
                    self.link[dir].insert(at, d);
                }
            }
            // Corrupt: flip bits in one byte.
            84..=87 => {
                let i = inp.u16() as usize;
                let mask = inp.u8().max(1);
                if let Some(d) = self.link[dir].front_mut() {
                    self.dirty = true;
                    if !d.is_empty() {
                        let i = i % d.len();
                        d[i] ^= mask;
                    }
                }
            }
            // Truncate.
            88..=89 => {
                let n = inp.u16() as usize;
                if let Some(d) = self.link[dir].front_mut() {
                    self.dirty = true;
                    let n = n % (d.len() + 1);
                    d.truncate(n);
                }
            }
            // Inject raw bytes from the input, optionally aimed at our conn ID.
            90..=93 => {
                self.dirty = true;
                let flags = inp.u8();
                let len = inp.u8() as usize + if flags & 0x80 != 0 { 256 } else { 0 };
                let mut d = inp.bytes(len).to_vec();
                if flags & 1 != 0 {
                    let mut h = vec![4u8];
                    h.extend_from_slice(&self.id.to_le_bytes());
                    h.extend_from_slice(&((flags >> 1) as u16 & 0x1f).to_le_bytes());
                    h.extend_from_slice(&d);
                    d = h;
                } else if flags & 2 != 0 && d.len() >= 5 {
                    d[1..5].copy_from_slice(&self.id.to_le_bytes());
                }
                self.deliver(dir == 0, &d);
            }
            // Close.
            94..=95 => {
                let code = inp.u8() as u64;
                let now = self.now;
                if dir == 0 {
                    self.client.close(now, code, "fuzz");
                } else {
                    self.server.close(now, self.id, code, "fuzz");
                }
                self.drain();
            }
            // Deliver everything in flight.
            96..=103 => self.flush(),
            // Jump to the next timer deadline.
            104..=111 => {
                if let Some(t) = self.next_deadline() {
                    self.advance_to(t);
                }
            }
            // The client host moves the connection onto a new path (a resumed transport).
            116..=117 => {
                let now = self.now;
                if op & 0x80 != 0 {
                    // The server's host saw the client at a new address: a
                    // challenge, answered over the same link.
                    self.server.path_changed(now, self.id, 100);
                } else {
                    self.client.handle_path_change(now);
                }
                self.drain();
            }
            // A burst: several sends on channel 0.
            112..=115 => {
                let server = op & 0x80 != 0;
                let n = inp.u8() % 32;
                let len = 8 + inp.u8() as usize * 4;
                for _ in 0..n {
                    self.send(server, 0, len);
                }
            }
            124..=127 => self.impostor(dir, inp),
            // Deliver the last in-flight datagram first (tail reordering).
            _ => {
                if let Some(d) = self.link[dir].pop_back() {
                    self.deliver(dir == 0, &d);
                }
            }
        }
    }

    /// A HELLO for a fresh ID of the impostor's, "from" a victim's address:
    /// the server accepts it, but what it sends there stays within 3× (see
    /// `drain_checking`).
    fn spoofed_hello(&mut self, key: SessionKey) {
        let id = (key[0] as u32 | 1).wrapping_add(self.id).max(1);
        if id == self.id || self.server.connection(self.id).is_none() {
            return;
        }
        // key[1] odd: as many channels as key[2] says (up to 255), often
        // beyond `max_channels`.
        let nch = if key[1] & 1 == 1 {
            (key[2] as usize).max(1)
        } else {
            1
        };
        let kinds = vec![ChannelKind::ReliableOrdered; nch];
        let mut buf = vec![0u8; 1500];
        let mut w = Writer::new(&mut buf);
        let _ = wire::encode_hello(&mut w, id, &kinds, &key, b"spoofed");
        wire::pad_hello(&mut w);
        let n = w.len();
        trace!("  spoofed HELLO for {id:#x}, {nch} channels, {n} bytes");
        let known = self.server.connection(id).is_some() || self.spoofed.contains_key(&id);
        if self.server.handle_datagram(self.now, &buf[..n]).is_ok() {
            self.spoofed.entry(id).or_default().0 += n as u64;
        }
        self.drain();
        if !known && nch > self.server.config().max_channels {
            assert!(
                self.server.connection(id).is_none(),
                "a HELLO with {nch} channels opened a connection"
            );
        }
    }

    /// One impostor datagram with our connection ID and a key of its own,
    /// tagged under that key or with tag bytes from the input. HELLO and
    /// DATA go to the server (once it knows our ID: a blind attacker learns
    /// it no earlier), WELCOME, REJECT and DATA (dir 1) to the client.
    fn impostor(&mut self, dir: usize, inp: &mut Input) {
        let mut key: SessionKey = inp.bytes(16).try_into().unwrap_or([0; 16]);
        if key == self.key {
            key[0] ^= 1;
        }
        let kind = inp.u8();
        let pn = inp.u16() as u64 | (inp.u8() as u64) << 16;
        let mut buf = vec![0u8; 1500];
        let mut w = Writer::new(&mut buf);
        // The encoders cannot run out of room in 1500 bytes: their results are moot.
        if kind % 7 == 6 {
            return self.spoofed_hello(key);
        }
        let to_server = match kind % 7 {
            0 => {
                let _ = wire::encode_hello(
                    &mut w,
                    self.id,
                    &[ChannelKind::ReliableOrdered],
                    &key,
                    b"fuzz",
                );
                wire::pad_hello(&mut w);
                true
            }
            1 => {
                let _ = wire::encode_data_header(&mut w, self.id, pn)
                    && wire::encode_close(&mut w, 9, b"impostor");
                dir == 0
            }
            2 => {
                let m = payload(self.sb.expect.max(self.cb.expect), 40);
                let seq = inp.u16();
                let _ = wire::encode_data_header(&mut w, self.id, pn)
                    && w.put_u8(wire::FRAME_MESSAGES)
                    && w.put_u8(0)
                    && w.put_u16(seq)
                    && w.put_u8(1)
                    && w.put_len_prefixed(&m);
                dir == 0
            }
            3 => {
                let _ = wire::encode_data_header(&mut w, self.id, pn) && w.put_u8(wire::FRAME_PING);
                dir == 0
            }
            4 => {
                let _ = wire::encode_welcome(&mut w, self.id, &[pn as u8; 8]);
                false
            }
            _ => {
                let _ = wire::encode_reject(&mut w, self.id, b"impostor");
                false
            }
        };
        let n = w.len();
        let mut d = buf[..n].to_vec();
        if d[0] != wire::PACKET_HELLO {
            // The tag: under the impostor's key, or bytes from the input.
            let number = match d[0] {
                wire::PACKET_DATA => pn,
                wire::PACKET_WELCOME => welcome_number(&[pn as u8; 8]),
                _ => 0,
            };
            if kind & 0x80 != 0 {
                d[7..15].copy_from_slice(inp.bytes(8).get(..8).unwrap_or(&[0; 8]));
            } else {
                let dir = if to_server {
                    Direction::ClientToServer
                } else {
                    Direction::ServerToClient
                };
                TagKey::derive(&key, dir).seal(&mut d, number);
            }
        }
        let now = self.now;
        trace!(
            "  impostor → {} {} bytes",
            if to_server { "server" } else { "client" },
            d.len()
        );
        if to_server {
            if self.server.connection(self.id).is_none() {
                return;
            }
            let r = self.server.handle_datagram(now, &d);
            assert!(r.is_err(), "the server took an impostor's datagram ({r:?}): a host would move the session to it");
        } else {
            let before = self.client.state();
            let r = self.client.handle_datagram(now, &d);
            assert!(r.is_err(), "the client took an impostor's datagram ({r:?})");
            assert_eq!(self.client.state(), before);
        }
        self.drain();
    }

    /// A clean link from now on: deliver everything and let timers run until
    /// every message has its receipt (or a side closed). Over a clean script,
    /// if both sides are still open, every channel-0 message was then Acked
    /// and delivered, in order.
    fn settle(&mut self) {
        let resolved = |b: &Book| b.sent.values().all(|m| m.receipt != Receipt::Pending);
        let mut settled = false;
        for _ in 0..400 {
            self.flush();
            if self.client.is_drained() || self.server.connection(self.id).is_none() {
                break;
            }
            if resolved(&self.cb) && resolved(&self.sb) {
                settled = true;
                break;
            }
            match self.next_deadline() {
                Some(t) => self.advance_to(t.max(self.now)),
                None => break,
            }
        }
        self.flush();
        if self.dirty || self.reincarnated || !settled {
            return;
        }
        let open = |b: &Book| b.connected && !b.closed;
        if !(open(&self.cb) && open(&self.sb) && self.client.is_connected()) {
            return;
        }
        for (who, sender, receiver) in [
            ("client", &self.cb, &self.sb),
            ("server", &self.sb, &self.cb),
        ] {
            let lost: Vec<u32> = sender
                .sent
                .values()
                .filter(|m| m.channel == 0 && m.receipt == Receipt::Lost)
                .map(|m| m.counter)
                .collect();
            assert!(
                lost.is_empty(),
                "{who}: reliable messages reported Lost on an open connection: {lost:?}"
            );
            // Counted from the sender's current incarnation.
            let base = receiver.peer_bases.last().copied().unwrap_or(0);
            let sent = sender.next_counter - base;
            let delivered = if receiver.pinned && receiver.expect >= base {
                receiver.expect - base
            } else {
                0
            };
            assert_eq!(delivered, sent, "{who} sent {sent} channel-0 messages (from #{base}), all Acked, but the peer delivered {delivered}");
        }
    }
}

fn op_name(op: u8) -> &'static str {
    match op {
        0..=15 => "advance",
        16..=39 => "send",
        40..=63 => "deliver",
        64..=71 => "drop",
        72..=75 => "duplicate",
        76..=83 => "reorder",
        84..=87 => "corrupt",
        88..=89 => "truncate",
        90..=93 => "inject",
        94..=95 => "close",
        96..=103 => "flush",
        104..=111 => "next deadline",
        112..=115 => "burst",
        116..=117 => "path change",
        124..=127 => "impostor",
        _ => "deliver last",
    }
}

fn push(q: &mut VecDeque<Vec<u8>>, d: Vec<u8>) {
    if q.len() >= MAX_IN_FLIGHT {
        q.pop_front();
    }
    q.push_back(d);
}

fuzz_target!(|data: &[u8]| {
    let mut inp = Input { data, pos: 0 };
    let mut w = World::new(&mut inp);
    let mut ops = 0;
    while !inp.done() && ops < MAX_OPS {
        w.op(&mut inp);
        ops += 1;
    }
    w.settle();
});
