//! One-way latency through the relay, for S6 (`bench/latency.mjs`): a load
//! client and a stamping UDP backend sharing CLOCK_MONOTONIC, the clock of
//! Node's `process.hrtime.bigint()`, so every process on the host reads the
//! same time.
//!
//! Modes:
//!   latency  (default) open one session per `--urls` entry over
//!         `--transport wt` (WebTransport, `--hash` needed), `ws` (WebSocket,
//!         `ws://` URLs) or `udp` (`udp://IP:PORT`, straight to a backend),
//!         each opened with a Ricochet HELLO whose echo is awaited (connection
//!         IDs from `--conn-id`, default 1, up); then for each `--rates` entry
//!         (DATA packets per second over all sessions) send `--seconds` worth,
//!         evenly spaced from one thread and spread round-robin over the
//!         sessions, and report per step what the backend stamped: the one-way
//!         times up (client → backend) and down (backend → client) and the
//!         round trip, p50/p90/p99/max in µs, leaving out each step's first
//!         `--warmup` seconds. Prints `{"event":"step",...}` lines as each step
//!         starts and ends (the driver samples CPU times there), then one JSON
//!         summary line. With `--stop-p50-ms X` the steps stop after one that
//!         lost over 1 % or whose median round trip passed X ms (a ramp).
//!   stamp-echo  the backend, on `--listen IP:PORT` (port 0: any; prints
//!         `{"event":"listening","port":N}`): writes the times it received and
//!         echoed each DATA packet into it and echoes every datagram; exits
//!         when stdin closes.
//!
//! A DATA packet: type 4, connection ID (u32 LE), seq (u32), the client's send
//! time, the backend's receive and send times (u64 ns each), padding to
//! `--size` (default 100). WebSocket is a minimal RFC 6455 client (one
//! binary frame per datagram, as a browser sends them), so every path is
//! driven by the same code and pacing.
//!
//! cargo build --release --example latency_probe

mod common;

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wtransport::VarInt;

struct Args {
    mode: String,
    hash: [u8; 32],
    size: usize,
    conn_id: u32,
    bind: Option<IpAddr>,
    /// wt, ws or udp, and one URL per session.
    transport: String,
    urls: Vec<String>,
    /// Datagrams per second over all sessions, one step each.
    rates: Vec<f64>,
    seconds: f64,
    /// The first seconds of each step are left out of its percentiles.
    warmup: f64,
    /// Stop after a step that lost over 1 % or whose median round trip passed this (ms; 0: never).
    stop_p50_ms: f64,
    /// `stamp-echo`: the address to listen on.
    listen: String,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        mode: "latency".into(),
        hash: [0; 32],
        size: 100,
        conn_id: 1,
        bind: None,
        transport: "wt".into(),
        urls: Vec::new(),
        rates: Vec::new(),
        seconds: 5.0,
        warmup: 0.5,
        stop_p50_ms: 0.0,
        listen: "127.0.0.1:0".into(),
    };
    let mut have_hash = false;
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().ok_or(format!("{k} needs a value"));
        match k.as_str() {
            "--mode" => a.mode = v()?,
            "--hash" => {
                a.hash = common::parse_hex(&v()?).ok_or("bad --hash")?;
                have_hash = true;
            }
            "--size" => a.size = v()?.parse().map_err(|_| "bad --size")?,
            "--conn-id" => a.conn_id = v()?.parse().map_err(|_| "bad --conn-id")?,
            "--bind" => a.bind = Some(v()?.parse().map_err(|_| "bad --bind")?),
            "--transport" => a.transport = v()?,
            "--urls" => a.urls = v()?.split(',').map(String::from).collect(),
            "--rates" => {
                a.rates = v()?
                    .split(',')
                    .map(|r| r.parse().map_err(|_| "bad --rates"))
                    .collect::<Result<_, _>>()?
            }
            "--seconds" => a.seconds = v()?.parse().map_err(|_| "bad --seconds")?,
            "--warmup" => a.warmup = v()?.parse().map_err(|_| "bad --warmup")?,
            "--stop-p50-ms" => a.stop_p50_ms = v()?.parse().map_err(|_| "bad --stop-p50-ms")?,
            "--listen" => a.listen = v()?,
            _ => return Err(format!("unknown argument {k}")),
        }
    }
    if a.mode == "latency" {
        if a.urls.is_empty() || a.rates.is_empty() || a.rates.iter().any(|&r| r <= 0.0) {
            return Err("latency needs --urls and --rates (each > 0)".into());
        }
        if a.transport == "wt" && !have_hash {
            return Err("--transport wt needs --hash".into());
        }
    }
    a.size = a.size.clamp(L_MIN, 1200);
    Ok(a)
}

/// Where a DATA packet of `latency` keeps its fields: the Ricochet header
/// (type, connection ID), then seq, the client's send time, and the times
/// the backend received and echoed it (ns on CLOCK_MONOTONIC, LE).
const L_SEQ: usize = 5;
const L_SENT: usize = 9;
const L_BRECV: usize = 17;
const L_BSEND: usize = 25;
const L_MIN: usize = 33;

/// CLOCK_MONOTONIC in ns: what Node's `process.hrtime.bigint()` reads, so a
/// time stamped in one process can be read in another on the same host.
#[cfg(target_os = "linux")]
fn mono_ns() -> u64 {
    #[repr(C)]
    struct Timespec {
        tv_sec: std::ffi::c_long,
        tv_nsec: std::ffi::c_long,
    }
    extern "C" {
        fn clock_gettime(clock: std::ffi::c_int, tp: *mut Timespec) -> std::ffi::c_int;
    }
    const CLOCK_MONOTONIC: std::ffi::c_int = 1;
    let mut t = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe { clock_gettime(CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Elsewhere a process-local clock: one-way times then need client and
/// backend in one process, which `latency` does not do (Linux only).
#[cfg(not(target_os = "linux"))]
fn mono_ns() -> u64 {
    static T0: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    T0.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn read_u64(p: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(p[at..at + 8].try_into().unwrap_or([0; 8]))
}

/// The stamping UDP echo: the "game server" of `latency`.
fn stamp_echo(a: &Args) -> String {
    use socket2::{Domain, Protocol, Socket, Type};
    let run = || -> Result<(), String> {
        let addr: SocketAddr = a.listen.parse().map_err(|_| "bad --listen")?;
        let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
            .map_err(|e| e.to_string())?;
        let _ = s.set_recv_buffer_size(16 << 20);
        let _ = s.set_send_buffer_size(4 << 20);
        s.bind(&addr.into()).map_err(|e| e.to_string())?;
        let sock: std::net::UdpSocket = s.into();
        let port = sock.local_addr().map_err(|e| e.to_string())?.port();
        println!("{{\"event\":\"listening\",\"port\":{port}}}");
        // Ends with its parent: when stdin closes.
        std::thread::spawn(|| {
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            std::process::exit(0);
        });
        let mut buf = [0u8; 2048];
        loop {
            let Ok((n, from)) = sock.recv_from(&mut buf) else {
                continue;
            };
            let t = mono_ns();
            if n >= L_MIN && buf[0] == 4 {
                buf[L_BRECV..L_BRECV + 8].copy_from_slice(&t.to_le_bytes());
                buf[L_BSEND..L_BSEND + 8].copy_from_slice(&mono_ns().to_le_bytes());
            }
            let _ = sock.send_to(&buf[..n], from);
        }
    };
    match run() {
        Ok(()) => String::new(),
        Err(e) => e,
    }
}

/// One received DATA packet: seq and its one-way and round-trip times (ns).
struct Sample {
    seq: u32,
    up: u64,
    down: u64,
    rtt: u64,
}

type Samples = Arc<Mutex<Vec<Sample>>>;

fn record(samples: &Samples, p: &[u8], now: u64) {
    if p.len() < L_MIN || p[0] != 4 {
        return;
    }
    let seq = u32::from_le_bytes(p[L_SEQ..L_SEQ + 4].try_into().unwrap_or([0; 4]));
    let (sent, brecv, bsend) = (
        read_u64(p, L_SENT),
        read_u64(p, L_BRECV),
        read_u64(p, L_BSEND),
    );
    lock(samples).push(Sample {
        seq,
        up: brecv.saturating_sub(sent),
        down: now.saturating_sub(bsend),
        rtt: now.saturating_sub(sent),
    });
}

/// A session's sending half.
enum Link {
    Wt(Arc<wtransport::Connection>),
    Udp(Arc<std::net::UdpSocket>),
    Ws(Arc<Mutex<std::net::TcpStream>>),
}

impl Link {
    fn send(&self, p: &[u8]) -> bool {
        match self {
            Link::Wt(c) => c.send_datagram(p).is_ok(),
            Link::Udp(s) => s.send(p).is_ok(),
            Link::Ws(s) => ws_write(&mut lock(s), 0x2, p).is_ok(),
        }
    }
}

/// One WebSocket frame from the client: FIN, `opcode`, masked with the key
/// 0 (RFC 6455 asks for a key, any value; 0 leaves the payload as is).
fn ws_write(s: &mut std::net::TcpStream, opcode: u8, p: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = Vec::with_capacity(p.len() + 14);
    f.push(0x80 | opcode);
    match p.len() {
        n if n < 126 => f.push(0x80 | n as u8),
        n if n < 65536 => {
            f.push(0x80 | 126);
            f.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            f.push(0x80 | 127);
            f.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    f.extend_from_slice(&[0; 4]);
    f.extend_from_slice(p);
    s.write_all(&f)
}

/// A complete frame at the start of `b`: (opcode, payload range, mask), or None.
fn ws_parse(b: &[u8]) -> Option<(u8, usize, usize, Option<[u8; 4]>)> {
    if b.len() < 2 {
        return None;
    }
    let masked = b[1] & 0x80 != 0;
    let (len, mut at) = match b[1] & 0x7f {
        126 => (u16::from_be_bytes([*b.get(2)?, *b.get(3)?]) as usize, 4),
        127 => (
            u64::from_be_bytes(b.get(2..10)?.try_into().ok()?) as usize,
            10,
        ),
        n => (n as usize, 2),
    };
    let mask = if masked {
        let m: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
        at += 4;
        Some(m)
    } else {
        None
    };
    (b.len() >= at + len).then_some((b[0] & 0x0f, at, at + len, mask))
}

/// Opens a WebSocket (`ws://host:port/path`): the stream and any bytes read past the upgrade.
fn ws_connect(url: &str) -> Result<(std::net::TcpStream, Vec<u8>), String> {
    use std::io::{Read, Write};
    let rest = url
        .strip_prefix("ws://")
        .ok_or("ws url must start with ws://")?;
    let (authority, path) = rest.find('/').map_or((rest, "/"), |i| rest.split_at(i));
    let mut s = std::net::TcpStream::connect(authority).map_err(|e| format!("ws connect: {e}"))?;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk).map_err(|e| format!("ws upgrade: {e}"))?;
        if n == 0 {
            return Err("ws upgrade: closed".into());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            if !buf.starts_with(b"HTTP/1.1 101") {
                let head = String::from_utf8_lossy(&buf[..i]).into_owned();
                return Err(format!("ws upgrade refused: {head}"));
            }
            return Ok((s, buf[i + 4..].to_vec()));
        }
    }
}

/// Reads frames until the stream ends: binary ones go to `on_binary` with
/// the time their last byte was read; pings are answered.
fn ws_read_loop(
    mut s: std::net::TcpStream,
    mut buf: Vec<u8>,
    writer: &Mutex<std::net::TcpStream>,
    mut on_binary: impl FnMut(&[u8], u64),
) -> Result<(), String> {
    use std::io::Read;
    let mut chunk = vec![0u8; 1 << 16];
    let mut t = mono_ns();
    loop {
        let mut used = 0;
        while let Some((op, a, b, mask)) = ws_parse(&buf[used..]) {
            let mut p = buf[used + a..used + b].to_vec();
            if let Some(m) = mask {
                for (i, x) in p.iter_mut().enumerate() {
                    *x ^= m[i & 3];
                }
            }
            used += b;
            match op {
                0x2 => on_binary(&p, t),
                0x8 => return Err("ws closed by the server".into()),
                0x9 => {
                    let _ = ws_write(&mut lock(writer), 0xA, &p);
                }
                _ => {}
            }
        }
        buf.drain(..used);
        let n = s.read(&mut chunk).map_err(|e| format!("ws read: {e}"))?;
        if n == 0 {
            return Err("ws closed".into());
        }
        t = mono_ns();
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Opens session `i` of `latency` and starts its receiver; resolves once its HELLO came back.
async fn open_link(
    a: &Args,
    url: &str,
    id: u32,
    samples: Samples,
    keep: &mut Vec<common::ClientEndpoint>,
) -> Result<Link, String> {
    let hello = common::hello_packet(id);
    let hello_wait = Duration::from_secs(5);
    match a.transport.as_str() {
        "wt" => {
            let (ep, conn) = common::connect_wt(url, a.hash, a.bind).await?;
            keep.push(ep);
            let conn = Arc::new(conn);
            common::wt_hello(&conn, id).await?;
            let rx = conn.clone();
            tokio::spawn(async move {
                while let Ok(d) = rx.receive_datagram().await {
                    record(&samples, &d.payload(), mono_ns());
                }
            });
            Ok(Link::Wt(conn))
        }
        "udp" => {
            let peer: SocketAddr = url
                .strip_prefix("udp://")
                .and_then(|h| h.parse().ok())
                .ok_or("udp url must be udp://IP:PORT")?;
            let s =
                common::bind_socket(common::local_addr(peer, a.bind)).map_err(|e| e.to_string())?;
            s.connect(peer).map_err(|e| e.to_string())?;
            s.set_read_timeout(Some(hello_wait))
                .map_err(|e| e.to_string())?;
            s.send(&hello).map_err(|e| format!("hello: {e}"))?;
            let mut buf = [0u8; 2048];
            s.recv(&mut buf)
                .map_err(|e| format!("no echo of the HELLO: {e}"))?;
            s.set_read_timeout(None).map_err(|e| e.to_string())?;
            let s = Arc::new(s);
            let rx = s.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 2048];
                while let Ok(n) = rx.recv(&mut buf) {
                    record(&samples, &buf[..n], mono_ns());
                }
            });
            Ok(Link::Udp(s))
        }
        "ws" => {
            let (s, rest) = ws_connect(url)?;
            let writer = Arc::new(Mutex::new(s.try_clone().map_err(|e| e.to_string())?));
            ws_write(&mut lock(&writer), 0x2, &hello).map_err(|e| format!("hello: {e}"))?;
            // Wait for the HELLO's echo on this thread, then hand the stream to the receiver.
            let (tx, ready) = std::sync::mpsc::channel();
            let w = writer.clone();
            std::thread::spawn(move || {
                let mut first = Some(tx);
                let r = ws_read_loop(s, rest, &w, |p, t| match first.take() {
                    Some(tx) => {
                        let _ = tx.send(());
                    }
                    None => record(&samples, p, t),
                });
                if let Err(e) = r {
                    eprintln!("latency_probe: {e}");
                }
            });
            ready
                .recv_timeout(hello_wait)
                .map_err(|_| "no echo of the HELLO within 5 s".to_string())?;
            Ok(Link::Ws(writer))
        }
        t => Err(format!("unknown --transport {t}")),
    }
}

/// What the pacer sent in one step.
struct Step {
    rate: f64,
    first: u32,
    end: u32,
    send_secs: f64,
    send_errors: u64,
}

/// Sends every step's datagrams, evenly spaced in time, round-robin over the links.
fn pace(links: &[Link], ids: &[u32], a: &Args, samples: &Samples) -> Vec<Step> {
    let mut bufs: Vec<Vec<u8>> = ids
        .iter()
        .map(|id| {
            let mut b = vec![0u8; a.size];
            b[0] = 4; // DATA
            b[1..5].copy_from_slice(&id.to_le_bytes());
            b
        })
        .collect();
    let mut seq = 0u32;
    let mut steps = Vec::new();
    for (k, &rate) in a.rates.iter().enumerate() {
        println!("{{\"event\":\"step\",\"step\":{k},\"phase\":\"start\",\"rate\":{rate}}}");
        let n = (rate * a.seconds).round() as u64;
        let first = seq;
        let mut send_errors = 0;
        let t = Instant::now();
        for j in 0..n {
            let due = t + Duration::from_secs_f64(j as f64 / rate);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            let i = j as usize % links.len();
            let b = &mut bufs[i];
            b[L_SEQ..L_SEQ + 4].copy_from_slice(&seq.to_le_bytes());
            b[L_SENT..L_SENT + 8].copy_from_slice(&mono_ns().to_le_bytes());
            if !links[i].send(b) {
                send_errors += 1;
            }
            seq = seq.wrapping_add(1);
        }
        let send_secs = t.elapsed().as_secs_f64();
        // Let the step's echoes come back before the next one starts.
        std::thread::sleep(Duration::from_millis(300));
        println!("{{\"event\":\"step\",\"step\":{k},\"phase\":\"end\"}}");
        steps.push(Step {
            rate,
            first,
            end: seq,
            send_secs,
            send_errors,
        });
        if a.stop_p50_ms > 0.0 {
            let mut rtt: Vec<u64> = lock(samples)
                .iter()
                .filter(|x| x.seq >= first && x.seq < seq)
                .map(|x| x.rtt)
                .collect();
            rtt.sort_unstable();
            let lost = (seq - first) as usize - rtt.len();
            if lost * 100 > (seq - first) as usize
                || common::pct(&rtt, 0.5) > a.stop_p50_ms * 1000.0
            {
                break;
            }
        }
    }
    steps
}

async fn latency(a: Args) -> Result<String, String> {
    let samples: Samples = Arc::new(Mutex::new(Vec::new()));
    let mut keep = Vec::new();
    let mut links = Vec::new();
    let base = a.conn_id;
    let ids: Vec<u32> = (0..a.urls.len() as u32).map(|i| base + i).collect();
    for (url, &id) in a.urls.iter().zip(&ids) {
        links.push(open_link(&a, url, id, samples.clone(), &mut keep).await?);
    }
    println!(
        "{{\"event\":\"open\",\"sessions\":{},\"transport\":{:?}}}",
        links.len(),
        a.transport
    );
    let a = Arc::new(a);
    let (links, ids2, a2) = (Arc::new(links), ids.clone(), a.clone());
    let (l2, s2) = (links.clone(), samples.clone());
    let steps = tokio::task::spawn_blocking(move || pace(&l2, &ids2, &a2, &s2))
        .await
        .map_err(|e| e.to_string())?;
    let s = std::mem::take(&mut *lock(&samples));
    let mut out = Vec::new();
    for st in &steps {
        let in_step: Vec<&Sample> = s
            .iter()
            .filter(|x| x.seq >= st.first && x.seq < st.end)
            .collect();
        let skip = st.first as u64 + (a.warmup * st.rate) as u64;
        let kept: Vec<&&Sample> = in_step.iter().filter(|x| x.seq as u64 >= skip).collect();
        out.push(format!(
            concat!(
                "{{\"rate\":{},\"sent\":{},\"received\":{},\"sendErrors\":{},\"sendSecs\":{:.3},",
                "\"measured\":{},\"upUs\":{},\"downUs\":{},\"rttUs\":{}}}"
            ),
            st.rate,
            st.end - st.first,
            in_step.len(),
            st.send_errors,
            st.send_secs,
            kept.len(),
            common::dist_json(kept.iter().map(|x| x.up).collect()),
            common::dist_json(kept.iter().map(|x| x.down).collect()),
            common::dist_json(kept.iter().map(|x| x.rtt).collect()),
        ));
    }
    for l in links.iter() {
        if let Link::Wt(c) = l {
            c.close(VarInt::from_u32(0), b"client done");
        }
    }
    for ep in keep {
        let _ = tokio::time::timeout(Duration::from_millis(300), ep.wait_idle()).await;
    }
    Ok(format!(
        "{{\"mode\":\"latency\",\"transport\":{:?},\"sessions\":{},\"size\":{},\"steps\":[{}]}}",
        a.transport,
        ids.len(),
        a.size,
        out.join(",")
    ))
}

fn main() -> std::process::ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => return common::usage_error("latency_probe", &e),
    };
    if args.mode == "stamp-echo" {
        let e = stamp_echo(&args);
        println!("{{\"error\":{e:?}}}");
        return std::process::ExitCode::from(1);
    }
    let rt = match common::runtime("latency_probe") {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let res = rt.block_on(async move {
        match args.mode.as_str() {
            "latency" => latency(args).await,
            m => Err(format!("unknown mode {m}")),
        }
    });
    rt.shutdown_background();
    common::report(res)
}
