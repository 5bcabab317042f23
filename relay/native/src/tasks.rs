//! The server's tokio tasks: accept, handshake, one task per session
//! (receive loop and paced send loop), and shutdown.

use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{watch, Notify};
use wtransport::endpoint::IncomingSessionFuture;
use wtransport::error::SendDatagramError;
use wtransport::quinn;
use wtransport::{Connection, VarInt};

use crate::api::*;
use crate::state::*;
use crate::tls::*;

pub(crate) async fn listen_impl(inner: Arc<Inner>) -> std::result::Result<ListenResult, String> {
    let pem = lock(&inner.initial_pem).take();
    let (tls, cert) = make_tls(pem.as_ref().map(|(c, k)| (c.as_str(), k.as_str())))?;
    let sc = quic_server_config(&inner.cfg, tls)?;
    let (socket, rb, sb) = bind_udp(inner.cfg.addr, inner.cfg.udp_buf)
        .map_err(|e| format!("bind {}: {e}", inner.cfg.addr))?;
    *lock(&inner.server_config) = Some(sc.clone());
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
    let task = tokio::spawn(accept_loop(
        inner.clone(),
        ep,
        inner.shutdown_tx.subscribe(),
    ));
    *lock(&inner.accept_task) = Some(task);
    Ok(result)
}

pub(crate) async fn accept_loop(
    inner: Arc<Inner>,
    ep: quinn::Endpoint,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let mut incoming = tokio::select! {
          _ = shutdown.changed() => break,
          inc = ep.accept() => match inc { Some(i) => i, None => break },
        };
        if lock(&inner.sessions).len() >= inner.cfg.max_sessions {
            inc(&inner.stats.hs_rejected_full);
            incoming.refuse();
            continue;
        }
        let pending = inner.pending_hs.load(Ordering::Acquire);
        // Under pressure, make the peer prove it receives at its source address
        // first: a Retry is stateless, so spoofed-source floods hold no slot.
        if pending >= inner.cfg.retry_at_pending && !incoming.remote_address_validated() {
            match incoming.retry() {
                Ok(()) => {
                    inc(&inner.stats.hs_retries);
                    continue;
                }
                Err(e) => incoming = e.into_incoming(),
            }
        }
        let key = addr_key(incoming.remote_address());
        {
            let mut by_addr = lock(&inner.pending_by_addr);
            if by_addr.get(&key).copied().unwrap_or(0) >= inner.cfg.max_pending_per_addr {
                drop(by_addr);
                inc(&inner.stats.hs_rejected_per_address);
                incoming.refuse();
                continue;
            }
            if pending >= inner.cfg.max_pending_hs {
                drop(by_addr);
                inc(&inner.stats.hs_rejected_backlog);
                incoming.refuse();
                continue;
            }
            *by_addr.entry(key).or_insert(0) += 1;
        }
        inner.pending_hs.fetch_add(1, Ordering::AcqRel);
        let guard = PendingGuard(inner.clone(), key);
        let sd = shutdown.clone();
        // The handshake runs in its own task; a panic inside it is caught here.
        let h = tokio::spawn(handshake(inner.clone(), incoming, sd, guard));
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

/// One pending handshake, counted in total and for its source.
pub(crate) struct PendingGuard(Arc<Inner>, IpAddr);
impl Drop for PendingGuard {
    fn drop(&mut self) {
        let mut by_addr = lock(&self.0.pending_by_addr);
        if let Some(n) = by_addr.get_mut(&self.1) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                by_addr.remove(&self.1);
            }
        }
        drop(by_addr);
        self.0.pending_hs.fetch_sub(1, Ordering::AcqRel);
    }
}

pub(crate) enum HsError {
    Full,
    Failed,
}

pub(crate) async fn handshake(
    inner: Arc<Inner>,
    incoming: quinn::Incoming,
    mut shutdown: watch::Receiver<bool>,
    guard: PendingGuard,
) {
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

pub(crate) async fn run_session(
    inner: Arc<Inner>,
    conn: Connection,
    path: String,
    origin: Option<String>,
) {
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
        closing: AtomicBool::new(false),
        backend: Mutex::new(None),
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
    // The backend socket outlives the session (the relay may park it for a
    // resume); its datagrams go to JS again.
    let attached = lock(&sess.backend).take();
    if let Some(b) = attached {
        let detached = lock(&b.attach).take();
        if let Some(a) = detached {
            inner.push_detached(b.id, a.largest);
        }
    }
    let reason = lock(&sess.local_close).take().unwrap_or(reason);
    // Close event first, then forget the session (stop() waits for the map to
    // empty before releasing the threadsafe function).
    inner.push_close(id, reason);
    inc(&inner.stats.sessions_closed);
    lock(&inner.sessions).remove(&id);
}

pub(crate) async fn recv_loop(inner: Arc<Inner>, sess: Arc<Session>) -> String {
    loop {
        match sess.conn.receive_datagram().await {
            Ok(d) => {
                sess.rx_seen.fetch_add(1, Ordering::Relaxed);
                let p = d.payload();
                // Counted, but still handed over: the relay answers it by closing
                // the session with 4413, which a silent drop would never tell the peer.
                if p.len() > inner.cfg.max_dgram {
                    inc(&inner.stats.oversize_in);
                }
                inc(&inner.stats.dg_in);
                add(&inner.stats.bytes_in, p.len() as u64);
                if !inner.forward_up(&sess, &p) {
                    inner.push_datagram(sess.id, p);
                }
            }
            Err(e) => return e.to_string(),
        }
    }
}

/// Per-session pacing: a token bucket (`sendRatePerSec`, `sendBurst`), and
/// never more than quinn's datagram send buffer can hold, so quinn never
/// silently drops what we hand it.
pub(crate) async fn send_loop(inner: Arc<Inner>, sess: Arc<Session>) {
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
                tokio::time::sleep(Duration::from_secs_f64(((1.0 - tokens) / rate).max(0.0005)))
                    .await;
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

pub(crate) async fn stop_impl(inner: Arc<Inner>) {
    inner.stopping.store(true, Ordering::Release);
    let _ = inner.shutdown_tx.send(true);
    let task = lock(&inner.accept_task).take();
    if let Some(t) = task {
        let _ = t.await;
    }
    // Sessions get a session close (one closed before keeps its own code) and
    // up to `close_grace` to answer it; then their QUIC connections close.
    let sessions: Vec<Arc<Session>> = lock(&inner.sessions).values().cloned().collect();
    for s in &sessions {
        lock(&s.local_close).get_or_insert_with(|| "server stopped".to_owned());
        if !s.closing.swap(true, Ordering::AcqRel) {
            s.conn.close_session(0, b"server stopped");
        }
    }
    // The peer closes the QUIC connection once it has the session close.
    let _ = tokio::time::timeout(inner.cfg.close_grace, async {
        while sessions
            .iter()
            .any(|s| s.conn.quic_connection().close_reason().is_none())
        {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
    for s in sessions {
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

/// Reads one backend socket: to the attached session's client (native data
/// path) or, unattached, to JS. Ends at the first socket error, which JS
/// learns (a connected UDP socket reports ICMP port-unreachable as ECONNREFUSED).
pub(crate) async fn backend_loop(inner: Arc<Inner>, b: Arc<Backend>, sock: std::net::UdpSocket) {
    let sock = match tokio::net::UdpSocket::from_std(sock) {
        Ok(s) => s,
        Err(e) => {
            inner.push_backend_error(b.id, e.to_string());
            return;
        }
    };
    let mut buf = vec![0u8; 65536];
    loop {
        match sock.recv(&mut buf).await {
            Ok(n) => {
                let d = bytes::Bytes::copy_from_slice(&buf[..n]);
                let target = lock(&b.attach)
                    .as_ref()
                    .map(|a| (a.sess.clone(), a.watch_welcome));
                match target {
                    Some((s, watch)) => {
                        if watch && n == 23 && d[0] == 2 {
                            inner.push_observed(b.id, d.clone());
                        }
                        inc(&b.down_dg);
                        add(&b.down_bytes, n as u64);
                        inc(&inner.stats.native_down);
                        inner.enqueue(&s, d);
                    }
                    None => inner.push_backend_datagram(b.id, d),
                }
            }
            Err(e) => {
                let code = match e.kind() {
                    std::io::ErrorKind::ConnectionRefused => "ECONNREFUSED".to_owned(),
                    _ => e.to_string(),
                };
                inner.push_backend_error(b.id, code);
                return;
            }
        }
    }
}
