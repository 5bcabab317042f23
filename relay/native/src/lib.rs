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

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use sha2::{Digest, Sha256};
use tokio::sync::{watch, Notify};
use wtransport::endpoint::IncomingSessionFuture;
use wtransport::error::SendDatagramError;
use wtransport::quinn;
use wtransport::tls::rustls;
use wtransport::{Connection, VarInt};

// ---------------------------------------------------------------------------
// Options and results exchanged with JS
// ---------------------------------------------------------------------------

/// Options as passed by `index.js` (callbacks are passed separately).
#[napi(object)]
pub struct NativeOptions {
  pub port: u32,
  pub host: Option<String>,
  pub cert_pem: Option<String>,
  pub key_pem: Option<String>,
  pub max_datagram_size: Option<u32>,
  pub max_sessions: Option<u32>,
  pub handshake_timeout_ms: Option<u32>,
  pub max_pending_handshakes: Option<u32>,
  pub idle_timeout_ms: Option<u32>,
  pub keep_alive_ms: Option<u32>,
  pub send_rate_per_sec: Option<u32>,
  pub send_burst: Option<u32>,
  pub send_queue_max: Option<u32>,
  pub recv_queue_max: Option<u32>,
  pub udp_buffer_bytes: Option<u32>,
}

#[napi(object)]
pub struct ListenResult {
  pub port: u32,
  pub cert_hashes: Vec<String>,
  pub valid_until_ms: f64,
  /// Effective kernel buffer sizes of the UDP socket (Linux reports double
  /// the requested value, capped by net.core.rmem_max / wmem_max).
  pub udp_recv_buffer: u32,
  pub udp_send_buffer: u32,
}

#[napi(object)]
pub struct CertificateResult {
  pub cert_hashes: Vec<String>,
  pub valid_until_ms: f64,
}

#[napi(object)]
pub struct DropStats {
  /// Datagrams from peers larger than `maxDatagramSize`.
  pub oversize_in: f64,
  /// Datagrams from a peer while JS had not yet taken `recvQueueMax` earlier ones.
  pub recv_queue_full: f64,
  /// Oldest queued outbound datagrams discarded because `sendQueueMax` was reached.
  pub send_queue_full: f64,
  /// Outbound datagrams larger than the session's current max datagram size.
  pub oversize_out: f64,
  /// `send` / `close` for a session id that is not (or no longer) open.
  pub unknown_session: f64,
  /// Outbound datagrams still queued when their session closed.
  pub closed_with_queue: f64,
  /// Peer does not support datagrams.
  pub unsupported_by_peer: f64,
  /// DATAGRAM frames quinn received that never reached this server's
  /// session loop (quinn's receive buffer overflowed while the session loop
  /// was behind, or a datagram for an unknown WebTransport session).
  pub quic_recv_overflow: f64,
}

#[napi(object)]
pub struct HandshakeStats {
  pub accepted: f64,
  pub timeout: f64,
  pub failed: f64,
  /// Refused because `maxSessions` sessions were open (QUIC refuse or HTTP 429).
  pub rejected_full: f64,
  /// Refused because `maxPendingHandshakes` handshakes were in progress.
  pub rejected_backlog: f64,
  pub pending: f64,
}

#[napi(object)]
pub struct ServerStats {
  pub sessions_active: f64,
  pub sessions_opened: f64,
  pub sessions_closed: f64,
  pub datagrams_in: f64,
  pub bytes_in: f64,
  pub datagrams_out: f64,
  pub bytes_out: f64,
  /// Outbound datagrams currently waiting in per-session pacing queues.
  pub send_queued: f64,
  /// Times a session's sender waited because quinn's datagram send buffer was full.
  pub send_buffer_waits: f64,
  /// Event batches delivered to JS (one threadsafe-function call each).
  pub batches: f64,
  /// Panics caught in session / handshake tasks.
  pub panics: f64,
  pub drops: DropStats,
  pub handshakes: HandshakeStats,
}

// ---------------------------------------------------------------------------
// Internal state
// ---------------------------------------------------------------------------

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
  m.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Clone)]
struct Cfg {
  addr: SocketAddr,
  max_dgram: usize,
  max_sessions: usize,
  hs_timeout: Duration,
  max_pending_hs: usize,
  idle_timeout: Duration,
  keep_alive: Option<Duration>,
  rate: f64,
  burst: f64,
  send_q: usize,
  recv_q: usize,
  udp_buf: usize,
}

#[derive(Default)]
struct Counters {
  sessions_opened: AtomicU64,
  sessions_closed: AtomicU64,
  dg_in: AtomicU64,
  bytes_in: AtomicU64,
  dg_out: AtomicU64,
  bytes_out: AtomicU64,
  send_queued: AtomicU64,
  send_buffer_waits: AtomicU64,
  batches: AtomicU64,
  panics: AtomicU64,
  oversize_in: AtomicU64,
  recv_queue_full: AtomicU64,
  send_queue_full: AtomicU64,
  oversize_out: AtomicU64,
  unknown_session: AtomicU64,
  closed_with_queue: AtomicU64,
  unsupported_by_peer: AtomicU64,
  quic_recv_overflow: AtomicU64,
  hs_accepted: AtomicU64,
  hs_timeout: AtomicU64,
  hs_failed: AtomicU64,
  hs_rejected_full: AtomicU64,
  hs_rejected_backlog: AtomicU64,
}

fn inc(c: &AtomicU64) {
  c.fetch_add(1, Ordering::Relaxed);
}
fn add(c: &AtomicU64, n: u64) {
  c.fetch_add(n, Ordering::Relaxed);
}
fn get(c: &AtomicU64) -> f64 {
  c.load(Ordering::Relaxed) as f64
}

enum Event {
  Session { id: u32, path: String, origin: Option<String> },
  Datagrams { id: u32, dgrams: Vec<Bytes> },
  Close { id: u32, reason: String },
}

#[derive(Default)]
struct EventQueue {
  events: Vec<Event>,
  /// Index in `events` of the open `Datagrams` entry per session, so every
  /// datagram of a session in one batch lands in one `onDatagrams` call.
  dgram_slot: HashMap<u32, usize>,
}

/// What the JS thread receives: a flat array `[kind, id, a, b, ...]`, four
/// slots per event (see `index.js`).
struct EventBatch(Vec<Event>);

impl ToNapiValue for EventBatch {
  unsafe fn to_napi_value(raw_env: napi::sys::napi_env, val: Self) -> Result<napi::sys::napi_value> {
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
          let mut list = env.create_array(dgrams.len() as u32)?;
          for (j, d) in dgrams.iter().enumerate() {
            list.set(j as u32, BufferSlice::copy_from(&env, d)?)?;
          }
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
      }
      i += 4;
    }
    unsafe { Array::to_napi_value(raw_env, arr) }
  }
}

type EventTsfn = ThreadsafeFunction<(), (), EventBatch, Status, false>;

struct CertInfo {
  hashes: Vec<String>,
  valid_until_ms: f64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
  Idle,
  Starting,
  Listening,
  Stopping,
  Stopped,
}

struct Session {
  id: u32,
  conn: Connection,
  /// Datagrams taken from wtransport (delivered or dropped as oversize).
  rx_seen: AtomicU64,
  out: Mutex<VecDeque<Bytes>>,
  wake: Notify,
  local_close: Mutex<Option<String>>,
}

struct Inner {
  cfg: Cfg,
  initial_pem: Mutex<Option<(String, String)>>,
  phase: Mutex<Phase>,
  endpoint: Mutex<Option<quinn::Endpoint>>,
  cert: Mutex<CertInfo>,
  sessions: Mutex<HashMap<u32, Arc<Session>>>,
  stopping: AtomicBool,
  shutdown_tx: watch::Sender<bool>,
  accept_task: Mutex<Option<tokio::task::JoinHandle<()>>>,
  queue: Mutex<EventQueue>,
  scheduled: AtomicBool,
  tsfn: Mutex<Option<EventTsfn>>,
  stats: Counters,
  next_id: AtomicU32,
  pending_hs: AtomicUsize,
}

impl Session {
  fn quic_recv_overflow(&self) -> u64 {
    let frames = self.conn.quic_connection().stats().frame_rx.datagram;
    frames.saturating_sub(self.rx_seen.load(Ordering::Relaxed))
  }
}

impl Inner {
  /// Ask the JS thread to drain the queue unless a drain is already pending.
  fn schedule(&self) {
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
  fn drain(&self) -> EventBatch {
    self.scheduled.store(false, Ordering::Release);
    let mut q = lock(&self.queue);
    q.dgram_slot.clear();
    let events = std::mem::take(&mut q.events);
    drop(q);
    if !events.is_empty() {
      inc(&self.stats.batches);
    }
    EventBatch(events)
  }

  fn push_session(&self, id: u32, path: String, origin: Option<String>) {
    lock(&self.queue).events.push(Event::Session { id, path, origin });
    self.schedule();
  }

  fn push_close(&self, id: u32, reason: String) {
    {
      let mut q = lock(&self.queue);
      q.dgram_slot.remove(&id);
      q.events.push(Event::Close { id, reason });
    }
    self.schedule();
  }

  fn push_datagram(&self, id: u32, d: Bytes) {
    {
      let mut q = lock(&self.queue);
      let idx = match q.dgram_slot.get(&id) {
        Some(&i) => i,
        None => {
          q.events.push(Event::Datagrams { id, dgrams: Vec::new() });
          let i = q.events.len() - 1;
          q.dgram_slot.insert(id, i);
          i
        }
      };
      match q.events.get_mut(idx) {
        Some(Event::Datagrams { dgrams, .. }) => {
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

  fn session(&self, id: u32) -> Option<Arc<Session>> {
    lock(&self.sessions).get(&id).cloned()
  }
}

// ---------------------------------------------------------------------------
// TLS / QUIC configuration
// ---------------------------------------------------------------------------

const SELF_SIGNED_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

fn hex(bytes: &[u8]) -> String {
  const H: &[u8; 16] = b"0123456789abcdef";
  let mut s = String::with_capacity(bytes.len() * 2);
  for b in bytes {
    s.push(H[(b >> 4) as usize] as char);
    s.push(H[(b & 15) as usize] as char);
  }
  s
}

/// Builds the TLS config (TLS 1.3 only, ALPN h3) from PEM strings or a fresh
/// self-signed ECDSA P-256 certificate valid 14 days. Never panics on bad
/// input: a key that does not match the certificate is an `Err`.
fn make_tls(
  pem: Option<(&str, &str)>,
) -> std::result::Result<(rustls::ServerConfig, CertInfo), String> {
  use rustls::pki_types::pem::PemObject;
  use rustls::pki_types::{CertificateDer, PrivateKeyDer};

  let (certs, key): (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) = match pem {
    None => {
      let id = wtransport::Identity::self_signed(SELF_SIGNED_NAMES)
        .map_err(|e| format!("self-signed certificate: {e}"))?;
      let certs = id
        .certificate_chain()
        .as_slice()
        .iter()
        .map(|c| CertificateDer::from(c.der().to_vec()))
        .collect();
      let key = PrivateKeyDer::Pkcs8(id.private_key().secret_der().to_vec().into());
      (certs, key)
    }
    Some((cert_pem, key_pem)) => {
      let certs = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| format!("certPem: {e}"))?;
      if certs.is_empty() {
        return Err("certPem: no CERTIFICATE section".into());
      }
      let key =
        PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).map_err(|e| format!("keyPem: {e}"))?;
      (certs, key)
    }
  };

  let leaf = certs.first().ok_or("no certificate")?;
  let hashes = vec![hex(&Sha256::digest(leaf.as_ref()))];
  let valid_until_ms = match x509_parser::parse_x509_certificate(leaf.as_ref()) {
    Ok((_, c)) => c.validity().not_after.timestamp() as f64 * 1000.0,
    Err(e) => return Err(format!("certificate: {e}")),
  };

  let provider = Arc::new(rustls::crypto::ring::default_provider());
  let mut tls = rustls::ServerConfig::builder_with_provider(provider)
    .with_protocol_versions(&[&rustls::version::TLS13])
    .map_err(|e| format!("tls: {e}"))?
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .map_err(|e| format!("tls: {e}"))?;
  tls.alpn_protocols = vec![wtransport::tls::WEBTRANSPORT_ALPN.to_vec()];
  Ok((tls, CertInfo { hashes, valid_until_ms }))
}

fn quic_server_config(
  cfg: &Cfg,
  tls: rustls::ServerConfig,
) -> std::result::Result<quinn::ServerConfig, String> {
  let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).map_err(|e| e.to_string())?;
  let mut sc = quinn::ServerConfig::with_crypto(Arc::new(crypto));
  let mut tc = quinn::TransportConfig::default();
  tc.max_idle_timeout(Some(
    quinn::IdleTimeout::try_from(cfg.idle_timeout).map_err(|e| format!("idleTimeoutMs: {e}"))?,
  ));
  tc.keep_alive_interval(cfg.keep_alive);
  tc.datagram_receive_buffer_size(Some(2 * 1024 * 1024));
  tc.datagram_send_buffer_size(1024 * 1024);
  sc.transport_config(Arc::new(tc));
  sc.migration(true);
  Ok(sc)
}

fn bind_udp(addr: SocketAddr, buf: usize) -> std::io::Result<(std::net::UdpSocket, usize, usize)> {
  use socket2::{Domain, Protocol, Socket, Type};
  let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
  if addr.is_ipv6() && addr.ip().is_unspecified() {
    let _ = s.set_only_v6(false);
  }
  let _ = s.set_recv_buffer_size(buf);
  let _ = s.set_send_buffer_size(buf);
  s.set_nonblocking(true)?;
  s.bind(&addr.into())?;
  let rb = s.recv_buffer_size().unwrap_or(0);
  let sb = s.send_buffer_size().unwrap_or(0);
  Ok((s.into(), rb, sb))
}

fn resolve(host: &str, port: u16) -> std::result::Result<SocketAddr, String> {
  if let Ok(ip) = host.parse::<IpAddr>() {
    return Ok(SocketAddr::new(ip, port));
  }
  (host, port)
    .to_socket_addrs()
    .map_err(|e| format!("host {host}: {e}"))?
    .next()
    .ok_or_else(|| format!("host {host}: no address"))
}

// ---------------------------------------------------------------------------
// Server tasks
// ---------------------------------------------------------------------------

async fn listen_impl(inner: Arc<Inner>) -> std::result::Result<ListenResult, String> {
  let pem = lock(&inner.initial_pem).take();
  let (tls, cert) = make_tls(pem.as_ref().map(|(c, k)| (c.as_str(), k.as_str())))?;
  let sc = quic_server_config(&inner.cfg, tls)?;
  let (socket, rb, sb) =
    bind_udp(inner.cfg.addr, inner.cfg.udp_buf).map_err(|e| format!("bind {}: {e}", inner.cfg.addr))?;
  let ep = quinn::Endpoint::new(
    quinn::EndpointConfig::default(),
    Some(sc),
    socket,
    Arc::new(quinn::TokioRuntime),
  )
  .map_err(|e| format!("endpoint: {e}"))?;
  let port = ep.local_addr().map_err(|e| e.to_string())?.port();
  let result = ListenResult {
    port: port as u32,
    cert_hashes: cert.hashes.clone(),
    valid_until_ms: cert.valid_until_ms,
    udp_recv_buffer: rb as u32,
    udp_send_buffer: sb as u32,
  };
  *lock(&inner.cert) = cert;
  *lock(&inner.endpoint) = Some(ep.clone());
  let task = tokio::spawn(accept_loop(inner.clone(), ep, inner.shutdown_tx.subscribe()));
  *lock(&inner.accept_task) = Some(task);
  Ok(result)
}

async fn accept_loop(inner: Arc<Inner>, ep: quinn::Endpoint, mut shutdown: watch::Receiver<bool>) {
  loop {
    let incoming = tokio::select! {
      _ = shutdown.changed() => break,
      inc = ep.accept() => match inc { Some(i) => i, None => break },
    };
    if lock(&inner.sessions).len() >= inner.cfg.max_sessions {
      inc(&inner.stats.hs_rejected_full);
      incoming.refuse();
      continue;
    }
    if inner.pending_hs.load(Ordering::Acquire) >= inner.cfg.max_pending_hs {
      inc(&inner.stats.hs_rejected_backlog);
      incoming.refuse();
      continue;
    }
    inner.pending_hs.fetch_add(1, Ordering::AcqRel);
    let inner2 = inner.clone();
    let sd = shutdown.clone();
    // The handshake runs in its own task; a panic inside it is caught here.
    let h = tokio::spawn(handshake(inner2, incoming, sd));
    let inner3 = inner.clone();
    tokio::spawn(async move {
      if let Err(e) = h.await {
        if e.is_panic() {
          inc(&inner3.stats.panics);
        }
      }
    });
  }
}

struct PendingGuard(Arc<Inner>);
impl Drop for PendingGuard {
  fn drop(&mut self) {
    self.0.pending_hs.fetch_sub(1, Ordering::AcqRel);
  }
}

enum HsError {
  Full,
  Failed,
}

async fn handshake(inner: Arc<Inner>, incoming: quinn::Incoming, mut shutdown: watch::Receiver<bool>) {
  let guard = PendingGuard(inner.clone());
  let max = inner.cfg.max_sessions;
  let inner_hs = inner.clone();
  let fut = async move {
    // QUIC handshake + HTTP/3 SETTINGS + extended CONNECT. Dropping this
    // future (timeout) drops wtransport's driver, which closes the connection.
    let req = IncomingSessionFuture::with_quic_incoming(incoming)
      .await
      .map_err(|_| HsError::Failed)?;
    if lock(&inner_hs.sessions).len() >= max {
      req.too_many_requests().await;
      return Err(HsError::Full);
    }
    let path = req.path().to_owned();
    let origin = req.origin().map(str::to_owned);
    let conn = req.accept().await.map_err(|_| HsError::Failed)?;
    Ok((conn, path, origin))
  };
  let res = tokio::select! {
    r = tokio::time::timeout(inner.cfg.hs_timeout, fut) => r,
    _ = shutdown.changed() => return,
  };
  drop(guard);
  match res {
    Err(_) => inc(&inner.stats.hs_timeout),
    Ok(Err(HsError::Full)) => inc(&inner.stats.hs_rejected_full),
    Ok(Err(HsError::Failed)) => inc(&inner.stats.hs_failed),
    Ok(Ok((conn, path, origin))) => run_session(inner, conn, path, origin).await,
  }
}

async fn run_session(inner: Arc<Inner>, conn: Connection, path: String, origin: Option<String>) {
  let mut id = inner.next_id.fetch_add(1, Ordering::Relaxed);
  if id == 0 {
    id = inner.next_id.fetch_add(1, Ordering::Relaxed);
  }
  let sess = Arc::new(Session {
    id,
    conn,
    rx_seen: AtomicU64::new(0),
    out: Mutex::new(VecDeque::new()),
    wake: Notify::new(),
    local_close: Mutex::new(None),
  });
  {
    let mut map = lock(&inner.sessions);
    if inner.stopping.load(Ordering::Acquire) || map.len() >= inner.cfg.max_sessions {
      drop(map);
      inc(&inner.stats.hs_rejected_full);
      sess.conn.close(VarInt::from_u32(0), b"server full");
      return;
    }
    // Queue the session event while holding the map lock so no datagram or
    // close for this id can be queued before it.
    inner.push_session(id, path, origin);
    map.insert(id, sess.clone());
  }
  inc(&inner.stats.hs_accepted);
  inc(&inner.stats.sessions_opened);

  let sender = tokio::spawn(send_loop(inner.clone(), sess.clone()));
  let receiver = tokio::spawn(recv_loop(inner.clone(), sess.clone()));
  let reason = match receiver.await {
    Ok(r) => r,
    Err(e) => {
      if e.is_panic() {
        inc(&inner.stats.panics);
      }
      sess.conn.close(VarInt::from_u32(0), b"internal error");
      "internal error".to_owned()
    }
  };
  sender.abort();
  if let Err(e) = sender.await {
    if e.is_panic() {
      inc(&inner.stats.panics);
    }
  }
  let left = std::mem::take(&mut *lock(&sess.out)).len() as u64;
  add(&inner.stats.closed_with_queue, left);
  inner.stats.send_queued.fetch_sub(left, Ordering::Relaxed);

  add(&inner.stats.quic_recv_overflow, sess.quic_recv_overflow());
  let reason = lock(&sess.local_close).take().unwrap_or(reason);
  // Close event first, then forget the session (stop() waits for the map to
  // empty before releasing the threadsafe function).
  inner.push_close(id, reason);
  inc(&inner.stats.sessions_closed);
  lock(&inner.sessions).remove(&id);
}

async fn recv_loop(inner: Arc<Inner>, sess: Arc<Session>) -> String {
  loop {
    match sess.conn.receive_datagram().await {
      Ok(d) => {
        sess.rx_seen.fetch_add(1, Ordering::Relaxed);
        let p = d.payload();
        if p.len() > inner.cfg.max_dgram {
          inc(&inner.stats.oversize_in);
          continue;
        }
        inc(&inner.stats.dg_in);
        add(&inner.stats.bytes_in, p.len() as u64);
        inner.push_datagram(sess.id, p);
      }
      Err(e) => return e.to_string(),
    }
  }
}

/// Per-session pacing: a token bucket (`sendRatePerSec`, `sendBurst`), and
/// never more than quinn's datagram send buffer can hold, so quinn never
/// silently drops what we hand it.
async fn send_loop(inner: Arc<Inner>, sess: Arc<Session>) {
  let rate = inner.cfg.rate;
  let burst = inner.cfg.burst;
  let mut tokens = burst;
  let mut last = Instant::now();
  loop {
    if lock(&sess.out).is_empty() {
      sess.wake.notified().await;
      continue;
    }
    if rate > 0.0 {
      let now = Instant::now();
      tokens = (tokens + now.duration_since(last).as_secs_f64() * rate).min(burst);
      last = now;
      if tokens < 1.0 {
        tokio::time::sleep(Duration::from_secs_f64(((1.0 - tokens) / rate).max(0.0005))).await;
        continue;
      }
    }
    let mut space = sess.conn.quic_connection().datagram_send_buffer_space();
    let mut blocked = false;
    while rate <= 0.0 || tokens >= 1.0 {
      let d = {
        let mut q = lock(&sess.out);
        match q.front() {
          None => break,
          // + 8: WebTransport quarter-stream-id prefix.
          Some(d) if d.len() + 8 > space => {
            blocked = true;
            break;
          }
          Some(_) => q.pop_front(),
        }
      };
      let Some(d) = d else { break };
      inner.stats.send_queued.fetch_sub(1, Ordering::Relaxed);
      match sess.conn.send_datagram(&d) {
        Ok(()) => {
          inc(&inner.stats.dg_out);
          add(&inner.stats.bytes_out, d.len() as u64);
          space = space.saturating_sub(d.len() + 8);
          tokens -= 1.0;
        }
        Err(SendDatagramError::TooLarge) => inc(&inner.stats.oversize_out),
        Err(SendDatagramError::UnsupportedByPeer) => inc(&inner.stats.unsupported_by_peer),
        Err(SendDatagramError::NotConnected) => {
          inc(&inner.stats.closed_with_queue);
          return;
        }
      }
    }
    if blocked {
      inc(&inner.stats.send_buffer_waits);
      tokio::time::sleep(Duration::from_millis(1)).await;
    }
  }
}

async fn stop_impl(inner: Arc<Inner>) {
  inner.stopping.store(true, Ordering::Release);
  let _ = inner.shutdown_tx.send(true);
  let task = lock(&inner.accept_task).take();
  if let Some(t) = task {
    let _ = t.await;
  }
  let sessions: Vec<Arc<Session>> = lock(&inner.sessions).values().cloned().collect();
  for s in sessions {
    *lock(&s.local_close) = Some("server stopped".to_owned());
    s.conn.close(VarInt::from_u32(0), b"server stopped");
  }
  let _ = tokio::time::timeout(Duration::from_secs(3), async {
    while !lock(&inner.sessions).is_empty() {
      tokio::time::sleep(Duration::from_millis(2)).await;
    }
  })
  .await;
  let ep = lock(&inner.endpoint).take();
  if let Some(ep) = ep {
    ep.close(quinn::VarInt::from_u32(0), b"server stopped");
    let _ = tokio::time::timeout(Duration::from_millis(500), ep.wait_idle()).await;
  }
  // Releasing the threadsafe function lets Node exit; queued batches (the
  // close events above) are still delivered first.
  let t = lock(&inner.tsfn).take();
  drop(t);
  *lock(&inner.phase) = Phase::Stopped;
}

// ---------------------------------------------------------------------------
// The exported class
// ---------------------------------------------------------------------------

#[napi]
pub struct WtServerNative {
  inner: Arc<Inner>,
  on_events: FunctionRef<(), ()>,
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
    let host = options.host.clone().unwrap_or_else(|| "127.0.0.1".to_owned());
    let addr = resolve(&host, options.port as u16).map_err(Error::from_reason)?;
    let initial_pem = match (options.cert_pem, options.key_pem) {
      (Some(c), Some(k)) => Some((c, k)),
      (None, None) => None,
      _ => return Err(Error::from_reason("certPem and keyPem must be given together")),
    };
    let keep_alive = opt(options.keep_alive_ms, 0);
    let cfg = Cfg {
      addr,
      max_dgram: opt(options.max_datagram_size, 1200) as usize,
      max_sessions: opt(options.max_sessions, 10_000).max(1) as usize,
      hs_timeout: Duration::from_millis(opt(options.handshake_timeout_ms, 10_000).max(1) as u64),
      max_pending_hs: opt(options.max_pending_handshakes, 256).max(1) as usize,
      idle_timeout: Duration::from_millis(opt(options.idle_timeout_ms, 30_000).max(1) as u64),
      keep_alive: (keep_alive > 0).then(|| Duration::from_millis(keep_alive as u64)),
      rate: opt(options.send_rate_per_sec, 10_000) as f64,
      burst: opt(options.send_burst, 64).max(1) as f64,
      send_q: opt(options.send_queue_max, 1024).max(1) as usize,
      recv_q: opt(options.recv_queue_max, 4096).max(1) as usize,
      udp_buf: opt(options.udp_buffer_bytes, 4 * 1024 * 1024) as usize,
    };
    let (shutdown_tx, _) = watch::channel(false);
    let inner = Arc::new(Inner {
      cfg,
      initial_pem: Mutex::new(initial_pem),
      phase: Mutex::new(Phase::Idle),
      endpoint: Mutex::new(None),
      cert: Mutex::new(CertInfo { hashes: vec![], valid_until_ms: 0.0 }),
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
    let max = sess.conn.max_datagram_size().unwrap_or(0);
    let mut queued = 0u32;
    {
      let mut q = lock(&sess.out);
      for d in datagrams.iter() {
        if d.len() > max {
          inc(&inner.stats.oversize_out);
          continue;
        }
        if q.len() >= inner.cfg.send_q {
          q.pop_front();
          inc(&inner.stats.send_queue_full);
          inner.stats.send_queued.fetch_sub(1, Ordering::Relaxed);
        }
        q.push_back(Bytes::copy_from_slice(d));
        inner.stats.send_queued.fetch_add(1, Ordering::Relaxed);
        queued += 1;
      }
    }
    if queued > 0 {
      sess.wake.notify_one();
    }
    queued
  }

  /// Closes one session; `onClose` follows with `closed locally (code): reason`.
  #[napi(catch_unwind)]
  pub fn close(&self, id: u32, code: u32, reason: String) -> bool {
    let Some(sess) = self.inner.session(id) else {
      inc(&self.inner.stats.unknown_session);
      return false;
    };
    let mut r = reason.into_bytes();
    r.truncate(512);
    let text = String::from_utf8_lossy(&r).into_owned();
    *lock(&sess.local_close) = Some(format!("closed locally ({code}): {text}"));
    sess.conn.close(VarInt::from_u32(code), &r);
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
      _ => return Err(Error::from_reason("certPem and keyPem must be given together")),
    };
    let (tls, cert) = make_tls(pem).map_err(Error::from_reason)?;
    let sc = quic_server_config(&self.inner.cfg, tls).map_err(Error::from_reason)?;
    let ep = lock(&self.inner.endpoint).clone();
    let Some(ep) = ep else {
      return Err(Error::from_reason("server is not listening"));
    };
    ep.set_server_config(Some(sc));
    let res = CertificateResult { cert_hashes: cert.hashes.clone(), valid_until_ms: cert.valid_until_ms };
    *lock(&self.inner.cert) = cert;
    Ok(res)
  }

  /// The certificate currently presented to new sessions.
  #[napi(catch_unwind)]
  pub fn certificate(&self) -> CertificateResult {
    let c = lock(&self.inner.cert);
    CertificateResult { cert_hashes: c.hashes.clone(), valid_until_ms: c.valid_until_ms }
  }

  #[napi(catch_unwind)]
  pub fn stats(&self) -> ServerStats {
    let s = &self.inner.stats;
    let (active, live_overflow) = {
      let map = lock(&self.inner.sessions);
      (map.len(), map.values().map(|x| x.quic_recv_overflow()).sum::<u64>())
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
