//! `ricochet-relay-wt`: a WebTransport (HTTP/3) server hosted inside the Node
//! relay process, as a napi-rs addon.
//!
//! Each WebTransport session is one Ricochet session. Datagrams move between
//! Rust and JS in batches: every event (session opened, datagrams, session
//! closed) goes into one queue, and a single threadsafe function call hands
//! the JS thread everything queued by the time it runs. `index.js` unpacks the
//! batch and calls the user's `onSession` / `onDatagrams` / `onClose`, so the
//! order of events for a session is always open → datagrams → close.
//!
//! Nothing a peer sends may take the process down: peer input is never
//! unwrapped, every session runs in its own tokio task whose panics are
//! caught (and counted), and exported methods run under `catch_unwind`.

#![deny(clippy::unwrap_used, clippy::expect_used)]

mod api;
mod state;
mod tasks;
mod tls;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use tokio::sync::watch;
use wtransport::VarInt;

pub use crate::api::*;
use crate::state::*;
use crate::tasks::*;
use crate::tls::*;

#[napi]
pub struct WtServerNative {
    inner: Arc<Inner>,
    on_events: FunctionRef<(), ()>,
}

/// The addon's tokio runtime: one worker per core but one, which the relay's
/// JS thread keeps (on 2 cores, 1 worker forwarded 8 % more datagrams per
/// CPU-second than napi's default of one per core: fewer cross-thread
/// wake-ups). `RICOCHET_RELAY_WT_WORKERS` overrides it; set before loading.
#[napi_derive::module_init]
fn init_runtime() {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let workers = std::env::var("RICOCHET_RELAY_WT_WORKERS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0);
    let workers = workers.unwrap_or(cores.saturating_sub(1).max(1));
    // If the runtime cannot be built, napi builds its default one on first use.
    if let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
    {
        create_custom_tokio_runtime(rt);
    }
}

/// `s` cut to at most `max` bytes on a character boundary (the session close
/// capsule's reason must stay valid UTF-8).
fn utf8_prefix(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

/// Magic and version of the close notice (see `close_task`).
const NOTICE_MAGIC: &[u8; 4] = b"RCLS";
/// Longest notice reason, as for a WebSocket close frame.
const NOTICE_REASON_MAX: usize = 123;

/// How a session ends when the relay closes it, so the page learns the code
/// and reason (browsers report a QUIC connection closed under a session as
/// "Connection lost", without either):
///
/// 1. The close notice, for the SDK: a unidirectional stream carrying
///    `"RCLS"`, the code (u16 big-endian) and the reason (UTF-8, ≤ 123 bytes),
///    then FIN. We wait (≤ 1 s, ≤ `closeGraceMs`) until the peer acknowledged
///    it; the SDK then reports the code and closes the session itself.
/// 2. The WebTransport session close (CLOSE_WEBTRANSPORT_SESSION on the
///    CONNECT stream, then FIN; draft-ietf-webtrans-http3, "Session
///    Termination"; see the patched wtransport in vendor/), for any other
///    client: `WebTransport.closed` resolves with `{ closeCode, reason }`.
///    Chromium 156 loses that information now and then (its network service
///    tears both mojo pipes down right after passing it on, and the page may
///    see the disconnect first), which is why the notice comes first.
/// 3. The peer closes the QUIC connection itself (Chromium does so at once; a
///    server's CONNECTION_CLOSE right after would race the page's close
///    info); one still open `closeGraceMs` later gets the QUIC close with the
///    same code.
async fn close_task(conn: wtransport::Connection, code: u32, reason: String, grace: Duration) {
    let start = tokio::time::Instant::now();
    if let Ok(code16) = u16::try_from(code) {
        let mut r = utf8_prefix(reason.clone(), NOTICE_REASON_MAX).into_bytes();
        let mut notice = Vec::with_capacity(6 + r.len());
        notice.extend_from_slice(NOTICE_MAGIC);
        notice.extend_from_slice(&code16.to_be_bytes());
        notice.append(&mut r);
        let send = async {
            let mut s = conn.open_uni().await.ok()?.await.ok()?;
            s.write_all(&notice).await.ok()?;
            s.finish().await.ok()?;
            // Ok(None) once the peer acknowledged every byte and the FIN.
            s.quic_stream_mut().stopped().await.ok()
        };
        let wait = grace.min(Duration::from_secs(1));
        tokio::select! {
          _ = tokio::time::timeout(wait, send) => {}
          _ = conn.closed() => return,
        }
        // The SDK closes the session as soon as it has read the notice.
        if tokio::time::timeout(Duration::from_millis(50), conn.closed())
            .await
            .is_ok()
        {
            return;
        }
    }
    conn.close_session(code, reason.as_bytes());
    let left = grace
        .saturating_sub(start.elapsed())
        .max(Duration::from_millis(100));
    if tokio::time::timeout(left, conn.closed()).await.is_err() {
        conn.close(VarInt::from_u32(code), reason.as_bytes());
    }
}

fn opt(v: Option<u32>, d: u32) -> u32 {
    v.unwrap_or(d)
}

#[napi]
impl WtServerNative {
    #[napi(constructor, catch_unwind)]
    pub fn new(options: NativeOptions, on_events: FunctionRef<(), ()>) -> Result<Self> {
        if options.port > 65535 {
            return Err(Error::from_reason("port must be 0..65535"));
        }
        let host = options
            .host
            .clone()
            .unwrap_or_else(|| "127.0.0.1".to_owned());
        let addr = resolve(&host, options.port as u16).map_err(Error::from_reason)?;
        let initial_pem = match (options.cert_pem, options.key_pem) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            _ => {
                return Err(Error::from_reason(
                    "certPem and keyPem must be given together",
                ))
            }
        };
        let keep_alive = opt(options.keep_alive_ms, 0);
        // A pending handshake is one quinn connection with small windows, so the
        // total is generous; the per-address cap keeps one source from taking it.
        let max_pending_hs = opt(options.max_pending_handshakes, 1024).max(1) as usize;
        let cfg = Cfg {
            addr,
            max_dgram: opt(options.max_datagram_size, 1200) as usize,
            max_sessions: opt(options.max_sessions, 10_000).max(1) as usize,
            hs_timeout: Duration::from_millis(
                opt(options.handshake_timeout_ms, 10_000).max(1) as u64
            ),
            max_pending_hs,
            max_pending_per_addr: opt(options.max_pending_handshakes_per_address, 16).max(1)
                as usize,
            retry_at_pending: options
                .retry_at_pending_handshakes
                .map_or(max_pending_hs / 2, |n| n as usize),
            idle_timeout: Duration::from_millis(opt(options.idle_timeout_ms, 30_000).max(1) as u64),
            keep_alive: (keep_alive > 0).then(|| Duration::from_millis(keep_alive as u64)),
            rate: opt(options.send_rate_per_sec, 10_000) as f64,
            burst: opt(options.send_burst, 64).max(1) as f64,
            send_q: opt(options.send_queue_max, 1024).max(1) as usize,
            recv_q: opt(options.recv_queue_max, 4096).max(1) as usize,
            udp_buf: opt(options.udp_buffer_bytes, 4 * 1024 * 1024) as usize,
            close_grace: Duration::from_millis(opt(options.close_grace_ms, 1000).max(1) as u64),
        };
        let (shutdown_tx, _) = watch::channel(false);
        let inner = Arc::new(Inner {
            cfg,
            initial_pem: Mutex::new(initial_pem),
            phase: Mutex::new(Phase::Idle),
            endpoint: Mutex::new(None),
            server_config: Mutex::new(None),
            cert: Mutex::new(CertInfo {
                hashes: vec![],
                valid_until_ms: 0.0,
            }),
            sessions: Mutex::new(HashMap::new()),
            stopping: AtomicBool::new(false),
            shutdown_tx,
            accept_task: Mutex::new(None),
            queue: Mutex::new(EventQueue::default()),
            scheduled: AtomicBool::new(false),
            tsfn: Mutex::new(None),
            stats: Counters::default(),
            next_id: AtomicU32::new(1),
            pending_hs: AtomicUsize::new(0),
            pending_by_addr: Mutex::new(HashMap::new()),
            backends: Mutex::new(HashMap::new()),
            next_bid: AtomicU32::new(1),
        });
        Ok(Self { inner, on_events })
    }

    /// Binds the UDP socket and starts accepting sessions. Creates the
    /// threadsafe function that keeps Node alive until `stop()`.
    #[napi(catch_unwind)]
    pub fn listen<'e>(&self, env: &'e Env) -> Result<PromiseRaw<'e, ListenResult>> {
        {
            let mut phase = lock(&self.inner.phase);
            if *phase != Phase::Idle {
                return Err(Error::from_reason("listen() may be called once"));
            }
            *phase = Phase::Starting;
        }
        let f = self.on_events.borrow_back(env)?;
        let drain_inner = self.inner.clone();
        let tsfn: EventTsfn = f
            .build_threadsafe_function::<()>()
            .callee_handled::<false>()
            .build_callback(move |_ctx| Ok(drain_inner.drain()))?;
        *lock(&self.inner.tsfn) = Some(tsfn);
        let inner = self.inner.clone();
        env.spawn_future(async move {
            match listen_impl(inner.clone()).await {
                Ok(r) => {
                    let mut phase = lock(&inner.phase);
                    if *phase == Phase::Starting {
                        *phase = Phase::Listening;
                    }
                    Ok(r)
                }
                Err(e) => {
                    *lock(&inner.phase) = Phase::Stopped;
                    let t = lock(&inner.tsfn).take();
                    drop(t);
                    Err(Error::from_reason(e))
                }
            }
        })
    }

    /// Queues datagrams for one session; returns how many were queued.
    #[napi(catch_unwind)]
    pub fn send(&self, id: u32, datagrams: Vec<BufferSlice>) -> u32 {
        let inner = &self.inner;
        let Some(sess) = inner.session(id) else {
            add(&inner.stats.unknown_session, datagrams.len() as u64);
            return 0;
        };
        let mut queued = 0u32;
        for d in datagrams.iter() {
            if inner.enqueue(&sess, Bytes::copy_from_slice(d)) {
                queued += 1;
            }
        }
        queued
    }

    /// Opens a UDP socket connected to a game server (`ip`: a literal
    /// address) for the relay's session; returns its id. Its datagrams reach
    /// JS (`onBackendDatagrams`) unless a session is attached to it.
    #[napi(catch_unwind)]
    pub fn open_backend(&self, ip: String, port: u32) -> Result<u32> {
        let ip: IpAddr = ip
            .parse()
            .map_err(|_| Error::from_reason("backend address must be an IP literal"))?;
        let port = u16::try_from(port).map_err(|_| Error::from_reason("port must be 0..65535"))?;
        let target = SocketAddr::new(ip, port);
        let domain = if ip.is_ipv4() {
            socket2::Domain::IPV4
        } else {
            socket2::Domain::IPV6
        };
        let io = |e: std::io::Error| Error::from_reason(format!("backend socket: {e}"));
        let s = socket2::Socket::new(domain, socket2::Type::DGRAM, Some(socket2::Protocol::UDP))
            .map_err(io)?;
        // Backends burst (a tick at once): as the JS path's 1 MiB.
        let _ = s.set_recv_buffer_size(1 << 20);
        let any: SocketAddr = if ip.is_ipv4() {
            SocketAddr::new(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), 0)
        } else {
            SocketAddr::new(IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED), 0)
        };
        s.bind(&any.into()).map_err(io)?;
        s.connect(&target.into()).map_err(io)?;
        s.set_nonblocking(true).map_err(io)?;
        let sock: std::net::UdpSocket = s.into();
        let reader = sock.try_clone().map_err(io)?;
        let bid = self.inner.next_bid.fetch_add(1, Ordering::Relaxed);
        let b = Arc::new(Backend {
            id: bid,
            sock,
            attach: Mutex::new(None),
            task: Mutex::new(None),
            up_dg: Default::default(),
            up_bytes: Default::default(),
            down_dg: Default::default(),
            down_bytes: Default::default(),
            up_failed: Default::default(),
        });
        lock(&self.inner.backends).insert(bid, b.clone());
        let task =
            napi::bindgen_prelude::spawn(backend_loop(self.inner.clone(), b.clone(), reader));
        *lock(&b.task) = Some(task);
        Ok(bid)
    }

    /// Sends datagrams on a backend socket (the JS data path); returns how many went.
    #[napi(catch_unwind)]
    pub fn send_backend(&self, bid: u32, datagrams: Vec<BufferSlice>) -> u32 {
        let Some(b) = lock(&self.inner.backends).get(&bid).cloned() else {
            return 0;
        };
        let mut sent = 0;
        for d in datagrams.iter() {
            if b.sock.send(d).is_ok() {
                sent += 1;
            } else {
                inc(&b.up_failed);
            }
        }
        sent
    }

    /// Closes a backend socket (detaching its session).
    #[napi(catch_unwind)]
    pub fn close_backend(&self, bid: u32) -> bool {
        let Some(b) = lock(&self.inner.backends).remove(&bid) else {
            return false;
        };
        if let Some(a) = lock(&b.attach).take() {
            lock(&a.sess.backend).take();
        }
        if let Some(t) = lock(&b.task).take() {
            t.abort();
        }
        true
    }

    /// The native data path: from now on session `id`'s datagrams go to
    /// backend `bid` and back inside the addon, within the limits given; a
    /// datagram that breaks one (or a HELLO) hands the path back to JS
    /// (`onDetached`, then that datagram). `largest`: the largest client DATA
    /// packet number seen so far (-1: none). False if either is gone.
    #[napi(catch_unwind)]
    pub fn attach_backend(&self, bid: u32, id: u32, limits: AttachLimits) -> bool {
        let Some(b) = lock(&self.inner.backends).get(&bid).cloned() else {
            return false;
        };
        let Some(sess) = self.inner.session(id) else {
            return false;
        };
        if sess.closing.load(Ordering::Acquire) {
            return false;
        }
        let pps = limits.max_datagrams_per_second.max(1.0);
        let bps = limits.max_bytes_per_second.max(1.0);
        let mut a = lock(&b.attach);
        if let Some(old) = a.take() {
            lock(&old.sess.backend).take();
        }
        *a = Some(Attach {
            sess: sess.clone(),
            conn_id: limits.connection_id,
            max_dgram: limits.max_datagram_bytes as usize,
            packets: Bucket::new(pps, (pps / 10.0).max(64.0)),
            bytes: Bucket::new(bps, (bps / 10.0).max(65536.0)),
            largest: limits.largest,
            watch_welcome: limits.watch_welcome,
        });
        *lock(&sess.backend) = Some(b.clone());
        true
    }

    /// Hands the data path back to JS; returns the largest client DATA packet
    /// number forwarded, or null if it was not attached.
    #[napi(catch_unwind)]
    pub fn detach_backend(&self, bid: u32) -> Option<f64> {
        let b = lock(&self.inner.backends).get(&bid).cloned()?;
        let a = lock(&b.attach).take()?;
        lock(&a.sess.backend).take();
        Some(a.largest)
    }

    /// A backend socket's counters (both paths' datagrams, the native path's in
    /// `native*`), for the relay's metrics and idle checks; null if closed.
    #[napi(catch_unwind)]
    pub fn backend_stats(&self, bid: u32) -> Option<BackendStats> {
        let b = lock(&self.inner.backends).get(&bid).cloned()?;
        let a = lock(&b.attach);
        Some(BackendStats {
            attached: a.is_some(),
            largest: a.as_ref().map_or(-1.0, |a| a.largest),
            native_up_datagrams: get(&b.up_dg),
            native_up_bytes: get(&b.up_bytes),
            native_down_datagrams: get(&b.down_dg),
            native_down_bytes: get(&b.down_bytes),
            send_failed: get(&b.up_failed),
        })
    }

    /// Closes one session so the peer learns `code` and `reason`; `onClose`
    /// follows with `closed locally (code): reason`. Only the first close of a
    /// session counts. See `close_task` for how.
    #[napi(catch_unwind)]
    pub fn close(&self, id: u32, code: u32, reason: String) -> bool {
        let Some((sess, reason)) = self.local_close(id, code, reason) else {
            return false;
        };
        if !sess.closing.swap(true, Ordering::AcqRel) {
            napi::bindgen_prelude::spawn(close_task(
                sess.conn.clone(),
                code,
                reason,
                self.inner.cfg.close_grace,
            ));
        }
        true
    }

    /// Closes one session's QUIC connection at once (no session close for the
    /// peer to read: it sees the connection lost); `onClose` follows.
    #[napi(catch_unwind)]
    pub fn abort(&self, id: u32, code: u32, reason: String) -> bool {
        let Some((sess, reason)) = self.local_close(id, code, reason) else {
            return false;
        };
        sess.conn.close(VarInt::from_u32(code), reason.as_bytes());
        true
    }

    /// Replaces the certificate for new sessions; live sessions keep theirs.
    #[napi(catch_unwind)]
    pub fn rotate_certificate(
        &self,
        cert_pem: Option<String>,
        key_pem: Option<String>,
    ) -> Result<CertificateResult> {
        let pem = match (cert_pem.as_deref(), key_pem.as_deref()) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            _ => {
                return Err(Error::from_reason(
                    "certPem and keyPem must be given together",
                ))
            }
        };
        let (tls, cert) = make_tls(pem).map_err(Error::from_reason)?;
        let crypto = quic_crypto(tls).map_err(Error::from_reason)?;
        let ep = lock(&self.inner.endpoint).clone();
        let (Some(ep), Some(mut sc)) = (ep, lock(&self.inner.server_config).clone()) else {
            return Err(Error::from_reason("server is not listening"));
        };
        sc.crypto = crypto;
        ep.set_server_config(Some(sc.clone()));
        *lock(&self.inner.server_config) = Some(sc);
        let res = CertificateResult {
            cert_hashes: cert.hashes.clone(),
            valid_until_ms: cert.valid_until_ms,
        };
        *lock(&self.inner.cert) = cert;
        Ok(res)
    }

    /// The certificate currently presented to new sessions.
    #[napi(catch_unwind)]
    pub fn certificate(&self) -> CertificateResult {
        let c = lock(&self.inner.cert);
        CertificateResult {
            cert_hashes: c.hashes.clone(),
            valid_until_ms: c.valid_until_ms,
        }
    }

    #[napi(catch_unwind)]
    pub fn stats(&self) -> ServerStats {
        let s = &self.inner.stats;
        let (active, live_overflow) = {
            let map = lock(&self.inner.sessions);
            (
                map.len(),
                map.values().map(|x| x.quic_recv_overflow()).sum::<u64>(),
            )
        };
        ServerStats {
            sessions_active: active as f64,
            sessions_opened: get(&s.sessions_opened),
            sessions_closed: get(&s.sessions_closed),
            datagrams_in: get(&s.dg_in),
            bytes_in: get(&s.bytes_in),
            datagrams_out: get(&s.dg_out),
            bytes_out: get(&s.bytes_out),
            send_queued: get(&s.send_queued),
            send_buffer_waits: get(&s.send_buffer_waits),
            batches: get(&s.batches),
            panics: get(&s.panics),
            native_up: get(&s.native_up),
            native_down: get(&s.native_down),
            native_handbacks: get(&s.native_handbacks),
            backends_open: lock(&self.inner.backends).len() as f64,
            drops: DropStats {
                oversize_in: get(&s.oversize_in),
                recv_queue_full: get(&s.recv_queue_full),
                send_queue_full: get(&s.send_queue_full),
                oversize_out: get(&s.oversize_out),
                unknown_session: get(&s.unknown_session),
                closed_with_queue: get(&s.closed_with_queue),
                unsupported_by_peer: get(&s.unsupported_by_peer),
                quic_recv_overflow: get(&s.quic_recv_overflow) + live_overflow as f64,
            },
            handshakes: HandshakeStats {
                accepted: get(&s.hs_accepted),
                timeout: get(&s.hs_timeout),
                failed: get(&s.hs_failed),
                rejected_full: get(&s.hs_rejected_full),
                rejected_backlog: get(&s.hs_rejected_backlog),
                rejected_per_address: get(&s.hs_rejected_per_address),
                retries: get(&s.hs_retries),
                pending: self.inner.pending_hs.load(Ordering::Relaxed) as f64,
            },
        }
    }

    /// Closes every session (each gets `onClose`), closes the endpoint and
    /// releases the threadsafe function so Node can exit. Idempotent.
    #[napi(catch_unwind)]
    pub fn stop<'e>(&self, env: &'e Env) -> Result<PromiseRaw<'e, ()>> {
        let inner = self.inner.clone();
        let prev = {
            let mut phase = lock(&inner.phase);
            let prev = *phase;
            if matches!(prev, Phase::Idle | Phase::Stopped) {
                *phase = Phase::Stopped;
            } else if prev != Phase::Stopping {
                *phase = Phase::Stopping;
            }
            prev
        };
        env.spawn_future(async move {
            match prev {
                Phase::Idle | Phase::Stopped => {
                    let t = lock(&inner.tsfn).take();
                    drop(t);
                }
                Phase::Stopping => {
                    while *lock(&inner.phase) != Phase::Stopped {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                }
                Phase::Starting => {
                    // Wait for listen() to finish, then stop normally.
                    while lock(&inner.endpoint).is_none() && lock(&inner.tsfn).is_some() {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    stop_impl(inner).await;
                }
                Phase::Listening => stop_impl(inner).await,
            }
            Ok(())
        })
    }
}

impl WtServerNative {
    /// The prologue of `close` and `abort`: the session, and the reason cut to
    /// 512 bytes, noted as the session's local close (the first one counts).
    fn local_close(&self, id: u32, code: u32, reason: String) -> Option<(Arc<Session>, String)> {
        let Some(sess) = self.inner.session(id) else {
            inc(&self.inner.stats.unknown_session);
            return None;
        };
        let reason = utf8_prefix(reason, 512);
        lock(&sess.local_close).get_or_insert_with(|| format!("closed locally ({code}): {reason}"));
        Some((sess, reason))
    }
}
