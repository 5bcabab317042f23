//! Small WebTransport client used by `test/wt.test.mjs` (no browser needed).
//!
//! Modes:
//!   echo  (default) connect, send `--count` datagrams of `--size` bytes at
//!         `--rate` per second (0 = as fast as quinn's send buffer allows),
//!         count the echoes and print a JSON summary on stdout.
//!   stall open `--conns` QUIC connections with ALPN h3 but never send the
//!         HTTP/3 CONNECT; print a `ready` line once every attempt has
//!         connected or failed, then report after how long the server
//!         closed them.
//!   streams connect, then try to open `--streams` bidi and as many uni
//!         WebTransport streams, each given `--wait-ms` for the server's
//!         stream credit; report how many opened. With `--stream-bytes N`
//!         then write N bytes on the first uni stream, which the server never
//!         reads, and report how many the server's flow control let through.
//!
//! `--bind IP` picks the local address (any 127.x.y.z is loopback on Linux,
//! so tests can play several sources).
//!
//! Each datagram carries `seq: u32 LE` and `sent_ns: u64 LE` (since the
//! client started), so echoes give round-trip times. With `--conn-id N`
//! they are framed as Ricochet packets for the relay (a HELLO first, whose
//! echo is awaited, then DATA: type byte and connection ID before seq), so
//! the relay's own forwarding can be measured against an echo backend.
//!
//! cargo build --release --example wt_client
//! target/release/examples/wt_client --url https://127.0.0.1:4433/x --hash <hex> --count 1000 --rate 2000

mod common;

use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wtransport::VarInt;

struct Args {
    mode: String,
    url: String,
    hash: [u8; 32],
    count: u32,
    size: usize,
    rate: f64,
    wait_ms: u64,
    stall_ms: u64,
    close: bool,
    /// Ricochet framing with this connection ID (see the module doc).
    conn_id: Option<u32>,
    bind: Option<IpAddr>,
    conns: u32,
    streams: u32,
    stream_bytes: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        mode: "echo".into(),
        url: String::new(),
        hash: [0; 32],
        count: 1000,
        size: 64,
        rate: 2000.0,
        wait_ms: 2000,
        stall_ms: 5000,
        close: true,
        conn_id: None,
        bind: None,
        conns: 1,
        streams: 8,
        stream_bytes: 0,
    };
    let mut have_hash = false;
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().ok_or(format!("{k} needs a value"));
        match k.as_str() {
            "--mode" => a.mode = v()?,
            "--url" => a.url = v()?,
            "--hash" => {
                a.hash = common::parse_hex(&v()?).ok_or("bad --hash")?;
                have_hash = true;
            }
            "--count" => a.count = v()?.parse().map_err(|_| "bad --count")?,
            "--size" => a.size = v()?.parse().map_err(|_| "bad --size")?,
            "--rate" => a.rate = v()?.parse().map_err(|_| "bad --rate")?,
            "--wait-ms" => a.wait_ms = v()?.parse().map_err(|_| "bad --wait-ms")?,
            "--stall-ms" => a.stall_ms = v()?.parse().map_err(|_| "bad --stall-ms")?,
            "--no-close" => a.close = false,
            "--conn-id" => a.conn_id = Some(v()?.parse().map_err(|_| "bad --conn-id")?),
            "--bind" => a.bind = Some(v()?.parse().map_err(|_| "bad --bind")?),
            "--conns" => a.conns = v()?.parse().map_err(|_| "bad --conns")?,
            "--streams" => a.streams = v()?.parse().map_err(|_| "bad --streams")?,
            "--stream-bytes" => a.stream_bytes = v()?.parse().map_err(|_| "bad --stream-bytes")?,
            _ => return Err(format!("unknown argument {k}")),
        }
    }
    if a.url.is_empty() || !have_hash {
        return Err("--url and --hash are required".into());
    }
    a.size = a.size.max(12 + header_len(a.conn_id));
    Ok(a)
}

/// Bytes before `seq`: a Ricochet packet type and connection ID, if framed.
fn header_len(conn_id: Option<u32>) -> usize {
    if conn_id.is_some() {
        5
    } else {
        0
    }
}

#[derive(Default)]
struct RecvState {
    got: Vec<bool>,
    received: u64,
    duplicates: u64,
    malformed: u64,
    rtt_ns: Vec<u64>,
    last_recv: Option<Instant>,
}

async fn echo(a: Args) -> Result<String, String> {
    let t0 = Instant::now();
    let (ep, conn) = common::connect_wt(&a.url, a.hash, a.bind).await?;
    let conn = Arc::new(conn);
    let connect_ms = t0.elapsed().as_secs_f64() * 1000.0;
    let max_dgram = conn.max_datagram_size().unwrap_or(0);

    let hdr = header_len(a.conn_id);
    if let Some(id) = a.conn_id {
        common::wt_hello(&conn, id).await?;
    }
    // The relay's close notice, if the server sends one (a unidirectional stream
    // before it closes the session; relay/native/src/lib.rs): its bytes in hex.
    let notice = {
        let conn = conn.clone();
        tokio::spawn(async move {
            let mut s = conn.accept_uni().await.ok()?;
            let mut buf = vec![0u8; 256];
            let mut n = 0;
            while n < buf.len() {
                match s.read(&mut buf[n..]).await {
                    Ok(Some(k)) => n += k,
                    _ => break,
                }
            }
            Some(
                buf[..n]
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<String>(),
            )
        })
    };
    let st = Arc::new(Mutex::new(RecvState {
        got: vec![false; a.count as usize],
        ..Default::default()
    }));
    let rx = {
        let conn = conn.clone();
        let st = st.clone();
        tokio::spawn(async move {
            loop {
                let d = match conn.receive_datagram().await {
                    Ok(d) => d,
                    Err(e) => return e.to_string(),
                };
                let now = t0.elapsed().as_nanos() as u64;
                let payload = d.payload();
                let p = payload.get(hdr..).unwrap_or(&[]);
                let mut s = st.lock().unwrap_or_else(|e| e.into_inner());
                s.last_recv = Some(Instant::now());
                if p.len() < 12 {
                    s.malformed += 1;
                    continue;
                }
                let seq = u32::from_le_bytes([p[0], p[1], p[2], p[3]]) as usize;
                let mut ts = [0u8; 8];
                ts.copy_from_slice(&p[4..12]);
                let sent = u64::from_le_bytes(ts);
                match s.got.get(seq).copied() {
                    Some(false) => {
                        s.got[seq] = true;
                        s.received += 1;
                        s.rtt_ns.push(now.saturating_sub(sent));
                    }
                    Some(true) => s.duplicates += 1,
                    None => s.malformed += 1,
                }
            }
        })
    };

    let mut buf = vec![0u8; a.size];
    for (i, b) in buf.iter_mut().enumerate().skip(hdr + 12) {
        *b = i as u8;
    }
    if let Some(id) = a.conn_id {
        buf[0] = 4; // DATA
        buf[1..5].copy_from_slice(&id.to_le_bytes());
    }
    let mut send_errors = 0u64;
    let mut buffer_waits = 0u64;
    let send_start = Instant::now();
    for seq in 0..a.count {
        if a.rate > 0.0 {
            let due = send_start + Duration::from_secs_f64(seq as f64 / a.rate);
            let now = Instant::now();
            if due > now {
                tokio::time::sleep(due - now).await;
            }
        } else {
            // Burst: as fast as quinn's datagram send buffer drains.
            while conn.quic_connection().datagram_send_buffer_space() < a.size + 16 {
                buffer_waits += 1;
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
        }
        buf[hdr..hdr + 4].copy_from_slice(&seq.to_le_bytes());
        buf[hdr + 4..hdr + 12].copy_from_slice(&(t0.elapsed().as_nanos() as u64).to_le_bytes());
        if conn.send_datagram(&buf).is_err() {
            send_errors += 1;
        }
    }
    let send_secs = send_start.elapsed().as_secs_f64();

    // Wait until every echo arrived, or `wait_ms` passed without progress.
    let mut idle_since = Instant::now();
    let mut last_count = 0;
    loop {
        let (n, done) = {
            let s = st.lock().unwrap_or_else(|e| e.into_inner());
            (s.received, s.received >= a.count as u64 || rx.is_finished())
        };
        if done {
            break;
        }
        if n != last_count {
            last_count = n;
            idle_since = Instant::now();
        } else if idle_since.elapsed() > Duration::from_millis(a.wait_ms) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let total_secs = send_start.elapsed().as_secs_f64();

    let rx_closed = rx.is_finished();
    let mut closed_reason = String::new();
    // How the QUIC connection itself ended, before this client closes it: after
    // a WebTransport session close (a capsule on the CONNECT stream) wtransport
    // closed it locally; after a bare QUIC close it holds the server's code.
    let quic_close = conn
        .quic_connection()
        .close_reason()
        .map(|e| e.to_string())
        .unwrap_or_default();
    let notice = if notice.is_finished() {
        notice.await.ok().flatten().unwrap_or_default()
    } else {
        notice.abort();
        String::new()
    };
    if a.close {
        conn.close(VarInt::from_u32(0), b"client done");
        let _ = tokio::time::timeout(Duration::from_millis(300), ep.wait_idle()).await;
    }
    if rx_closed {
        if let Ok(r) = rx.await {
            closed_reason = r;
        }
    } else {
        rx.abort();
    }

    let s = st.lock().unwrap_or_else(|e| e.into_inner());
    let recv_secs = s
        .last_recv
        .map(|t| t.duration_since(send_start).as_secs_f64())
        .unwrap_or(0.0);
    Ok(format!(
        concat!(
            "{{\"mode\":\"echo\",\"sent\":{},\"received\":{},\"duplicates\":{},\"malformed\":{},",
            "\"sendErrors\":{},\"bufferWaits\":{},\"size\":{},\"maxDatagramSize\":{},",
            "\"connectMs\":{:.2},\"sendSecs\":{:.4},\"totalSecs\":{:.4},\"recvSecs\":{:.4},",
            "\"sendRate\":{:.0},\"echoRate\":{:.0},",
            "\"rttUs\":{},",
            "\"closedByServer\":{},\"closeReason\":{:?},\"quicClose\":{:?},\"notice\":{:?}}}"
        ),
        a.count,
        s.received,
        s.duplicates,
        s.malformed,
        send_errors,
        buffer_waits,
        a.size,
        max_dgram,
        connect_ms,
        send_secs,
        total_secs,
        recv_secs,
        a.count as f64 / send_secs.max(1e-9),
        s.received as f64 / recv_secs.max(1e-9),
        common::dist_json(s.rtt_ns.clone()),
        rx_closed,
        closed_reason,
        quic_close,
        notice,
    ))
}

/// Opens streams until the server's stream credit runs out (an open that
/// waits `--wait-ms` for credit counts as refused). Streams stay open so
/// the server cannot hand the credit back meanwhile.
async fn streams(a: Args) -> Result<String, String> {
    let (ep, conn) = common::connect_wt(&a.url, a.hash, a.bind).await?;
    let wait = Duration::from_millis(a.wait_ms);
    let mut bidi = Vec::new();
    for _ in 0..a.streams {
        match tokio::time::timeout(wait, async { conn.open_bi().await.ok()?.await.ok() }).await {
            Ok(Some(s)) => bidi.push(s),
            _ => break,
        }
    }
    let mut uni = Vec::new();
    for _ in 0..a.streams {
        match tokio::time::timeout(wait, async { conn.open_uni().await.ok()?.await.ok() }).await {
            Ok(Some(s)) => uni.push(s),
            _ => break,
        }
    }
    // Bytes written until flow control stalls the stream for `--wait-ms`.
    let mut written = 0usize;
    if let Some(s) = uni.first_mut() {
        let chunk = [0u8; 1024];
        while written < a.stream_bytes {
            let n = chunk.len().min(a.stream_bytes - written);
            match tokio::time::timeout(wait, s.write(&chunk[..n])).await {
                Ok(Ok(k)) => written += k,
                _ => break,
            }
        }
    }
    let (b, u) = (bidi.len(), uni.len());
    drop((bidi, uni));
    conn.close(VarInt::from_u32(0), b"client done");
    let _ = tokio::time::timeout(Duration::from_millis(300), ep.wait_idle()).await;
    Ok(format!(
    "{{\"mode\":\"streams\",\"tried\":{},\"bidiOpened\":{b},\"uniOpened\":{u},\"uniBytesWritten\":{written}}}",
    a.streams
  ))
}

/// `--conns` QUIC handshakes with ALPN h3 from one socket, then silence: no
/// SETTINGS, no CONNECT.
async fn stall(a: Args) -> Result<String, String> {
    use wtransport::quinn;
    let peer = common::host_port(&a.url)?;
    let mut cc = common::quinn_client_config(a.hash)?;
    let mut tc = quinn::TransportConfig::default();
    tc.keep_alive_interval(Some(Duration::from_millis(1000)));
    cc.transport_config(Arc::new(tc));
    let mut ep =
        quinn::Endpoint::client(common::local_addr(peer, a.bind)).map_err(|e| e.to_string())?;
    ep.set_default_client_config(cc);
    let t0 = Instant::now();
    let attempts: Vec<_> = (0..a.conns.max(1))
        .map(|_| {
            let ep = ep.clone();
            tokio::spawn(async move {
                ep.connect(peer, "localhost")
                    .map_err(|e| e.to_string())?
                    .await
                    .map_err(|e| format!("quic connect: {e}"))
            })
        })
        .collect();
    let mut conns = Vec::new();
    let mut first_error = String::new();
    for h in attempts {
        match h.await.map_err(|e| e.to_string()).and_then(|r| r) {
            Ok(c) => conns.push(c),
            Err(e) if first_error.is_empty() => first_error = e,
            Err(_) => {}
        }
    }
    let connected_ms = t0.elapsed().as_secs_f64() * 1000.0;
    let failed = a.conns.max(1) as usize - conns.len();
    println!("{{\"event\":\"ready\",\"connected\":{},\"failed\":{failed},\"firstError\":{first_error:?}}}", conns.len());
    if conns.is_empty() {
        return Err(first_error);
    }
    let deadline = t0 + Duration::from_millis(a.stall_ms);
    let (mut closed, mut reason, mut after) = (0usize, String::new(), 0.0);
    for c in &conns {
        if let Ok(e) = tokio::time::timeout_at(deadline.into(), c.closed()).await {
            closed += 1;
            after = t0.elapsed().as_secs_f64() * 1000.0;
            if reason.is_empty() {
                reason = e.to_string();
            }
        }
    }
    let all = closed == conns.len();
    Ok(format!(
    concat!(
      "{{\"mode\":\"stall\",\"connected\":{},\"failed\":{},\"quicConnectedMs\":{:.2},\"closed\":{},",
      "\"closedByServer\":{},\"closedAfterMs\":{:.1},\"closeReason\":{:?}}}"
    ),
    conns.len(),
    failed,
    connected_ms,
    closed,
    all,
    after,
    reason,
  ))
}

fn main() -> std::process::ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => return common::usage_error("wt_client", &e),
    };
    let rt = match common::runtime("wt_client") {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let res = rt.block_on(async move {
        match args.mode.as_str() {
            "echo" => echo(args).await,
            "stall" => stall(args).await,
            "streams" => streams(args).await,
            m => Err(format!("unknown mode {m}")),
        }
    });
    common::report(res)
}
