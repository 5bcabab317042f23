//! Shared server state: configuration, counters, sessions, and the event
//! queue that carries session opens, datagrams and closes to the JS thread
//! in batches.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use tokio::sync::{watch, Notify};
use wtransport::quinn;
use wtransport::Connection;

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Clone)]
pub(crate) struct Cfg {
    pub(crate) addr: SocketAddr,
    pub(crate) max_dgram: usize,
    pub(crate) max_sessions: usize,
    pub(crate) hs_timeout: Duration,
    pub(crate) max_pending_hs: usize,
    pub(crate) max_pending_per_addr: usize,
    /// Pending handshakes at which unvalidated addresses get a QUIC Retry.
    pub(crate) retry_at_pending: usize,
    pub(crate) idle_timeout: Duration,
    pub(crate) keep_alive: Option<Duration>,
    pub(crate) rate: f64,
    pub(crate) burst: f64,
    pub(crate) send_q: usize,
    pub(crate) recv_q: usize,
    pub(crate) udp_buf: usize,
    /// How long after `close()` (or `stop()`) a session's QUIC connection is
    /// left for the peer to close before we close it (see `close_task`).
    pub(crate) close_grace: Duration,
}

#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) sessions_opened: AtomicU64,
    pub(crate) sessions_closed: AtomicU64,
    pub(crate) dg_in: AtomicU64,
    pub(crate) bytes_in: AtomicU64,
    pub(crate) dg_out: AtomicU64,
    pub(crate) bytes_out: AtomicU64,
    pub(crate) send_queued: AtomicU64,
    pub(crate) send_buffer_waits: AtomicU64,
    pub(crate) batches: AtomicU64,
    pub(crate) panics: AtomicU64,
    pub(crate) oversize_in: AtomicU64,
    pub(crate) recv_queue_full: AtomicU64,
    pub(crate) send_queue_full: AtomicU64,
    pub(crate) oversize_out: AtomicU64,
    pub(crate) unknown_session: AtomicU64,
    pub(crate) closed_with_queue: AtomicU64,
    pub(crate) unsupported_by_peer: AtomicU64,
    pub(crate) quic_recv_overflow: AtomicU64,
    pub(crate) hs_accepted: AtomicU64,
    pub(crate) hs_timeout: AtomicU64,
    pub(crate) hs_failed: AtomicU64,
    pub(crate) hs_rejected_full: AtomicU64,
    pub(crate) hs_rejected_backlog: AtomicU64,
    pub(crate) hs_rejected_per_address: AtomicU64,
    pub(crate) hs_retries: AtomicU64,
    /// Datagrams forwarded client → backend inside the addon (native data path).
    pub(crate) native_up: AtomicU64,
    /// Datagrams forwarded backend → client inside the addon (native data path).
    pub(crate) native_down: AtomicU64,
    /// Native-path sessions handed back to JS because a datagram broke a limit.
    pub(crate) native_handbacks: AtomicU64,
}

pub(crate) fn inc(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}
pub(crate) fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}
pub(crate) fn get(c: &AtomicU64) -> f64 {
    c.load(Ordering::Relaxed) as f64
}

pub(crate) enum Event {
    Session {
        id: u32,
        path: String,
        origin: Option<String>,
    },
    Datagrams {
        id: u32,
        dgrams: Vec<Bytes>,
    },
    Close {
        id: u32,
        reason: String,
    },
    /// Datagrams from a backend socket while no session is attached to it.
    BackendDatagrams {
        bid: u32,
        dgrams: Vec<Bytes>,
    },
    /// The backend socket failed (e.g. `ECONNREFUSED`); it reads no more.
    BackendError {
        bid: u32,
        code: String,
    },
    /// The addon handed the data path back to JS (a datagram broke a limit;
    /// that datagram follows as the session's next client datagram).
    Detached {
        bid: u32,
        largest: f64,
    },
    /// A copy of a WELCOME-shaped datagram forwarded natively, for the
    /// relay's resume proof (it needs the WELCOME's nonce).
    Observed {
        bid: u32,
        d: Bytes,
    },
}

#[derive(Default)]
pub(crate) struct EventQueue {
    pub(crate) events: Vec<Event>,
    /// Index in `events` of the open `Datagrams` entry per session, so every
    /// datagram of a session in one batch lands in one `onDatagrams` call.
    pub(crate) dgram_slot: HashMap<u32, usize>,
    /// The same for backend sockets' datagrams.
    pub(crate) backend_slot: HashMap<u32, usize>,
}

/// What the JS thread receives: a flat array `[kind, id, a, b, ...]`, four
/// slots per event (see `index.js`).
pub(crate) struct EventBatch(Vec<Event>);

impl ToNapiValue for EventBatch {
    unsafe fn to_napi_value(
        raw_env: napi::sys::napi_env,
        val: Self,
    ) -> Result<napi::sys::napi_value> {
        let env = Env::from_raw(raw_env);
        let mut arr = env.create_array((val.0.len() * 4) as u32)?;
        let mut i = 0u32;
        for ev in val.0 {
            match ev {
                Event::Session { id, path, origin } => {
                    arr.set(i, 0u32)?;
                    arr.set(i + 1, id)?;
                    arr.set(i + 2, path)?;
                    arr.set(i + 3, origin)?;
                }
                Event::Datagrams { id, dgrams } => {
                    let list = buffer_list(&env, &dgrams)?;
                    arr.set(i, 1u32)?;
                    arr.set(i + 1, id)?;
                    arr.set(i + 2, list)?;
                    arr.set(i + 3, Null)?;
                }
                Event::Close { id, reason } => {
                    arr.set(i, 2u32)?;
                    arr.set(i + 1, id)?;
                    arr.set(i + 2, reason)?;
                    arr.set(i + 3, Null)?;
                }
                Event::BackendDatagrams { bid, dgrams } => {
                    let list = buffer_list(&env, &dgrams)?;
                    arr.set(i, 3u32)?;
                    arr.set(i + 1, bid)?;
                    arr.set(i + 2, list)?;
                    arr.set(i + 3, Null)?;
                }
                Event::BackendError { bid, code } => {
                    arr.set(i, 4u32)?;
                    arr.set(i + 1, bid)?;
                    arr.set(i + 2, code)?;
                    arr.set(i + 3, Null)?;
                }
                Event::Detached { bid, largest } => {
                    arr.set(i, 5u32)?;
                    arr.set(i + 1, bid)?;
                    arr.set(i + 2, largest)?;
                    arr.set(i + 3, Null)?;
                }
                Event::Observed { bid, d } => {
                    arr.set(i, 6u32)?;
                    arr.set(i + 1, bid)?;
                    arr.set(i + 2, BufferSlice::copy_from(&env, &d)?)?;
                    arr.set(i + 3, Null)?;
                }
            }
            i += 4;
        }
        unsafe { Array::to_napi_value(raw_env, arr) }
    }
}

/// One batch's datagrams as a JS array of Buffers (copied: the batch is freed).
fn buffer_list<'e>(env: &'e Env, dgrams: &[Bytes]) -> Result<Array<'e>> {
    let mut list = env.create_array(dgrams.len() as u32)?;
    for (j, d) in dgrams.iter().enumerate() {
        list.set(j as u32, BufferSlice::copy_from(env, d)?)?;
    }
    Ok(list)
}

pub(crate) type EventTsfn = ThreadsafeFunction<(), (), EventBatch, Status, false>;

pub(crate) struct CertInfo {
    pub(crate) hashes: Vec<String>,
    pub(crate) valid_until_ms: f64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Idle,
    Starting,
    Listening,
    Stopping,
    Stopped,
}

pub(crate) struct Session {
    pub(crate) id: u32,
    pub(crate) conn: Connection,
    /// Datagrams taken from wtransport (all are handed to JS, oversize too).
    pub(crate) rx_seen: AtomicU64,
    pub(crate) out: Mutex<VecDeque<Bytes>>,
    pub(crate) wake: Notify,
    pub(crate) local_close: Mutex<Option<String>>,
    /// `close()` was called: the close notice and session close are under way.
    pub(crate) closing: AtomicBool,
    /// The backend socket this session's datagrams go to inside the addon
    /// (native data path), if JS attached one.
    pub(crate) backend: Mutex<Option<Arc<Backend>>>,
}

/// A token bucket (`rate` per second, bursts up to `burst`), as the relay's JS one.
pub(crate) struct Bucket {
    tokens: f64,
    rate: f64,
    burst: f64,
    last: Instant,
}

impl Bucket {
    pub(crate) fn new(rate: f64, burst: f64) -> Self {
        Self {
            tokens: burst,
            rate,
            burst,
            last: Instant::now(),
        }
    }
    pub(crate) fn take(&mut self, n: f64, now: Instant) -> bool {
        self.tokens =
            (self.tokens + now.duration_since(self.last).as_secs_f64() * self.rate).min(self.burst);
        self.last = now;
        if self.tokens < n {
            return false;
        }
        self.tokens -= n;
        true
    }
}

/// What JS allows a session on the native path (see `attach_backend`).
pub(crate) struct Attach {
    pub(crate) sess: Arc<Session>,
    pub(crate) conn_id: u32,
    pub(crate) max_dgram: usize,
    pub(crate) packets: Bucket,
    pub(crate) bytes: Bucket,
    /// Largest client DATA packet number forwarded (-1: none), for resume proofs.
    pub(crate) largest: f64,
    /// Copy WELCOME-shaped datagrams to JS (`Event::Observed`).
    pub(crate) watch_welcome: bool,
}

/// A UDP socket toward one game server, owned by the addon so the data path
/// can skip JS; JS still sends and receives through it while not attached.
pub(crate) struct Backend {
    pub(crate) id: u32,
    pub(crate) sock: std::net::UdpSocket,
    pub(crate) attach: Mutex<Option<Attach>>,
    pub(crate) task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    pub(crate) up_dg: AtomicU64,
    pub(crate) up_bytes: AtomicU64,
    pub(crate) down_dg: AtomicU64,
    pub(crate) down_bytes: AtomicU64,
    pub(crate) up_failed: AtomicU64,
}

/// The RFC 9000 §A.3 expansion the relay's JS uses (session-proof.ts).
pub(crate) fn expand_pn(low: u16, expected: f64) -> f64 {
    let win = 65536.0;
    let mut c = expected - expected.rem_euclid(win) + f64::from(low);
    if c + win / 2.0 <= expected {
        c += win;
    } else if c > expected + win / 2.0 && c >= win {
        c -= win;
    }
    c
}

pub(crate) struct Inner {
    pub(crate) cfg: Cfg,
    pub(crate) initial_pem: Mutex<Option<(String, String)>>,
    pub(crate) phase: Mutex<Phase>,
    pub(crate) endpoint: Mutex<Option<quinn::Endpoint>>,
    /// The endpoint's server config; a certificate rotation swaps only its
    /// crypto, so Retry tokens issued just before stay valid.
    pub(crate) server_config: Mutex<Option<quinn::ServerConfig>>,
    pub(crate) cert: Mutex<CertInfo>,
    pub(crate) sessions: Mutex<HashMap<u32, Arc<Session>>>,
    pub(crate) stopping: AtomicBool,
    pub(crate) shutdown_tx: watch::Sender<bool>,
    pub(crate) accept_task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    pub(crate) queue: Mutex<EventQueue>,
    pub(crate) scheduled: AtomicBool,
    pub(crate) tsfn: Mutex<Option<EventTsfn>>,
    pub(crate) stats: Counters,
    pub(crate) next_id: AtomicU32,
    pub(crate) pending_hs: AtomicUsize,
    /// Pending handshakes per source (see `addr_key`).
    pub(crate) pending_by_addr: Mutex<HashMap<IpAddr, usize>>,
    pub(crate) backends: Mutex<HashMap<u32, Arc<Backend>>>,
    pub(crate) next_bid: AtomicU32,
}

/// The unit a peer cannot cheaply multiply: an IPv4 address, or an IPv6 /64
/// (one host commonly owns a whole /64).
pub(crate) fn addr_key(a: SocketAddr) -> IpAddr {
    match a.ip() {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
        },
    }
}

impl Session {
    pub(crate) fn quic_recv_overflow(&self) -> u64 {
        let frames = self.conn.quic_connection().stats().frame_rx.datagram;
        frames.saturating_sub(self.rx_seen.load(Ordering::Relaxed))
    }
}

impl Inner {
    /// Ask the JS thread to drain the queue unless a drain is already pending.
    pub(crate) fn schedule(&self) {
        if self.scheduled.swap(true, Ordering::AcqRel) {
            return;
        }
        let guard = lock(&self.tsfn);
        let ok = match guard.as_ref() {
            Some(t) => t.call((), ThreadsafeFunctionCallMode::NonBlocking) == Status::Ok,
            None => false,
        };
        if !ok {
            self.scheduled.store(false, Ordering::Release);
        }
    }

    /// Runs on the JS thread.
    pub(crate) fn drain(&self) -> EventBatch {
        self.scheduled.store(false, Ordering::Release);
        let mut q = lock(&self.queue);
        q.dgram_slot.clear();
        q.backend_slot.clear();
        let events = std::mem::take(&mut q.events);
        drop(q);
        if !events.is_empty() {
            inc(&self.stats.batches);
        }
        EventBatch(events)
    }

    pub(crate) fn push_session(&self, id: u32, path: String, origin: Option<String>) {
        lock(&self.queue)
            .events
            .push(Event::Session { id, path, origin });
        self.schedule();
    }

    pub(crate) fn push_close(&self, id: u32, reason: String) {
        {
            let mut q = lock(&self.queue);
            q.dgram_slot.remove(&id);
            q.events.push(Event::Close { id, reason });
        }
        self.schedule();
    }

    pub(crate) fn push_datagram(&self, id: u32, d: Bytes) {
        self.push_batched(
            id,
            d,
            |q| &mut q.dgram_slot,
            |id| Event::Datagrams {
                id,
                dgrams: Vec::new(),
            },
        );
    }

    pub(crate) fn push_backend_datagram(&self, bid: u32, d: Bytes) {
        self.push_batched(
            bid,
            d,
            |q| &mut q.backend_slot,
            |bid| Event::BackendDatagrams {
                bid,
                dgrams: Vec::new(),
            },
        );
    }

    /// Appends `d` to the open batch of `key` (one event per session or
    /// backend socket per drain, opened by `open`; `slot` says which index
    /// map tracks it), or drops and counts it when the batch is full.
    fn push_batched(
        &self,
        key: u32,
        d: Bytes,
        slot: fn(&mut EventQueue) -> &mut HashMap<u32, usize>,
        open: fn(u32) -> Event,
    ) {
        {
            let mut q = lock(&self.queue);
            let idx = match slot(&mut q).get(&key).copied() {
                Some(i) => i,
                None => {
                    q.events.push(open(key));
                    let i = q.events.len() - 1;
                    slot(&mut q).insert(key, i);
                    i
                }
            };
            match q.events.get_mut(idx) {
                Some(Event::Datagrams { dgrams, .. } | Event::BackendDatagrams { dgrams, .. }) => {
                    if dgrams.len() >= self.cfg.recv_q {
                        inc(&self.stats.recv_queue_full);
                        return;
                    }
                    dgrams.push(d);
                }
                _ => return,
            }
        }
        self.schedule();
    }

    pub(crate) fn push_backend_error(&self, bid: u32, code: String) {
        {
            let mut q = lock(&self.queue);
            q.backend_slot.remove(&bid);
            q.events.push(Event::BackendError { bid, code });
        }
        self.schedule();
    }

    pub(crate) fn push_observed(&self, bid: u32, d: Bytes) {
        lock(&self.queue).events.push(Event::Observed { bid, d });
        self.schedule();
    }

    pub(crate) fn push_detached(&self, bid: u32, largest: f64) {
        lock(&self.queue)
            .events
            .push(Event::Detached { bid, largest });
        self.schedule();
    }

    /// Queue one datagram toward a session's client (paced by `send_loop`).
    pub(crate) fn enqueue(&self, sess: &Session, d: Bytes) -> bool {
        let max = sess.conn.max_datagram_size().unwrap_or(0);
        if d.len() > max {
            inc(&self.stats.oversize_out);
            return false;
        }
        {
            let mut q = lock(&sess.out);
            if q.len() >= self.cfg.send_q {
                q.pop_front();
                inc(&self.stats.send_queue_full);
                self.stats.send_queued.fetch_sub(1, Ordering::Relaxed);
            }
            q.push_back(d);
        }
        self.stats.send_queued.fetch_add(1, Ordering::Relaxed);
        sess.wake.notify_one();
        true
    }

    /// The native data path, client → backend: true if `p` went to the
    /// session's backend socket. Anything the path does not take (no backend
    /// attached; a HELLO, which JS attests; a datagram breaking a limit)
    /// detaches the session and goes to JS, which judges it as always.
    pub(crate) fn forward_up(&self, sess: &Session, p: &[u8]) -> bool {
        let Some(b) = lock(&sess.backend).clone() else {
            return false;
        };
        let mut guard = lock(&b.attach);
        let Some(a) = guard.as_mut() else {
            return false;
        };
        if a.sess.id != sess.id {
            return false;
        }
        let ok = p.len() >= 5
            && p.len() <= a.max_dgram
            && (2..=4).contains(&p[0])
            && u32::from_le_bytes([p[1], p[2], p[3], p[4]]) == a.conn_id;
        let now = Instant::now();
        if !ok || !a.packets.take(1.0, now) || !a.bytes.take(p.len() as f64, now) {
            let largest = a.largest;
            *guard = None;
            drop(guard);
            *lock(&sess.backend) = None;
            inc(&self.stats.native_handbacks);
            self.push_detached(b.id, largest);
            return false;
        }
        if p[0] == 4 && p.len() >= 15 {
            let pn = expand_pn(u16::from_le_bytes([p[5], p[6]]), a.largest + 1.0);
            if pn > a.largest {
                a.largest = pn;
            }
        }
        drop(guard);
        match b.sock.send(p) {
            Ok(_) => {
                inc(&b.up_dg);
                add(&b.up_bytes, p.len() as u64);
                inc(&self.stats.native_up);
            }
            Err(_) => inc(&b.up_failed),
        }
        true
    }

    pub(crate) fn session(&self, id: u32) -> Option<Arc<Session>> {
        lock(&self.sessions).get(&id).cloned()
    }
}
