//! Ricochet's peer for the S1 benchmark (bench/s1.mjs): a sender (UdpClient,
//! namespace A) or a receiver (UdpServer, namespace B) of fixed-size
//! reliable-ordered messages at a fixed rate.
//!
//! ```sh
//! s1_peer recv --listen HOST:PORT --count N [--size 400] [--max-ms T]
//! s1_peer send --to HOST:PORT --count N [--size 400] [--hz 60] [--per-tick 1] [--preset default|low_latency] [--latency-target-ms T] [--max-ms T]
//! ```
//!
//! Message format, shared with the KCP and TCP peers (bench/peers):
//! u32 seq, u32 size, u64 send time (ns, CLOCK_MONOTONIC, which every
//! network namespace shares), then bytes derived from seq; little-endian.
//! Prints JSON lines: `{"event":"listening","port":N}` (receiver), then one
//! `{"event":"result",...}`. The receiver stops after `--count` messages;
//! the sender keeps polling (so repairs finish) until stdin ends or
//! `--max-ms` passes. The connection uses the core's configuration preset as
//! it is, so the benchmark follows whatever the core does; `--latency-target-ms`
//! states the message channel's one-way latency target, as a game would
//! (FEC then sends repair early enough for it, as its budget allows).
//! `--per-tick K` sends K messages a tick, queued together before one flush
//! (a game's tick of several messages); `--count` still counts messages.

use std::io;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use ricochet_native::{AcceptPolicy, Config, Event, ServerConfig, UdpClient, UdpServer};

#[path = "peer_io/mod.rs"]
mod peer_io;
use peer_io::{emit, stdin_closed};

const HEADER: usize = 16;
/// Longest one poll waits, so stop requests are seen promptly.
const MAX_WAIT: Duration = Duration::from_millis(5);

struct Args {
    role: String,
    addr: String,
    count: u32,
    size: usize,
    hz: f64,
    per_tick: u32,
    preset: String,
    latency_target_ms: u64,
    max_ms: u64,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let role = it
        .next()
        .filter(|r| r == "send" || r == "recv")
        .ok_or("first argument: send or recv")?;
    let mut a = Args {
        role,
        addr: String::new(),
        count: 10_000,
        size: 400,
        hz: 60.0,
        per_tick: 1,
        preset: "default".into(),
        latency_target_ms: 0,
        max_ms: 600_000,
    };
    while let Some(flag) = it.next() {
        let v = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let bad = |_: std::num::ParseIntError| format!("{flag}: bad value {v}");
        match flag.as_str() {
            "--listen" | "--to" => a.addr = v.clone(),
            "--count" => a.count = v.parse().map_err(bad)?,
            "--size" => a.size = v.parse().map_err(bad)?,
            "--hz" => a.hz = v.parse().map_err(|_| format!("{flag}: bad value {v}"))?,
            "--per-tick" => a.per_tick = v.parse::<u32>().map_err(bad)?.max(1),
            "--preset" => a.preset = v.clone(),
            "--latency-target-ms" => a.latency_target_ms = v.parse().map_err(bad)?,
            "--max-ms" => a.max_ms = v.parse().map_err(bad)?,
            _ => return Err(format!("unknown argument: {flag}")),
        }
    }
    if a.addr.is_empty() || a.size < HEADER {
        return Err("need --listen/--to HOST:PORT and --size ≥ 16".into());
    }
    Ok(a)
}

fn config(preset: &str, latency_target_ms: u64) -> Result<Config, String> {
    let mut cfg = match preset {
        "default" => Config::default(),
        "low_latency" => Config::low_latency(),
        _ => return Err(format!("--preset: default or low_latency, got {preset}")),
    };
    // Channel 0 carries the messages (reliable-ordered in every preset).
    cfg.channels[0] = cfg.channels[0].with_latency_target_us(latency_target_ms * 1000);
    Ok(cfg)
}

fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes only into the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn fill(buf: &mut [u8], seq: u32) {
    buf[0..4].copy_from_slice(&seq.to_le_bytes());
    let len = buf.len() as u32;
    buf[4..8].copy_from_slice(&len.to_le_bytes());
    let mut x = seq.wrapping_mul(2_654_435_761) | 1;
    for b in &mut buf[HEADER..] {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *b = x as u8;
    }
}

/// Size and padding intact (the timestamp is the only free field).
fn intact(data: &[u8]) -> bool {
    if data.len() < HEADER {
        return false;
    }
    let mut want = vec![0; data.len()];
    fill(
        &mut want,
        u32::from_le_bytes(data[0..4].try_into().unwrap_or_default()),
    );
    want[8..16].copy_from_slice(&data[8..16]);
    want == data
}

fn receive(a: &Args) -> io::Result<()> {
    let mut server = UdpServer::bind(a.addr.as_str(), ServerConfig::default())?;
    server.set_accept_policy(AcceptPolicy::AcceptAll);
    emit(&format!(
        r#"{{"event":"listening","port":{}}}"#,
        server.local_addr()?.port()
    ));
    let stop = stdin_closed();
    let deadline = Instant::now() + Duration::from_millis(a.max_ms);
    let mut latencies_us = Vec::with_capacity(a.count as usize);
    let (mut next, mut order_errors, mut corrupt) = (0u32, 0u32, 0u32);
    while latencies_us.len() < a.count as usize
        && !stop.load(Ordering::SeqCst)
        && Instant::now() < deadline
    {
        server.poll(MAX_WAIT)?;
        while let Some((_, ev)) = server.next_event() {
            let Event::Message { data, .. } = ev else {
                continue;
            };
            let now = mono_ns();
            if !intact(&data) {
                corrupt += 1;
                continue;
            }
            let seq = u32::from_le_bytes(data[0..4].try_into().unwrap_or_default());
            if seq != next {
                order_errors += 1;
            }
            next = seq + 1;
            let sent = u64::from_le_bytes(data[8..16].try_into().unwrap_or_default());
            latencies_us.push(now.saturating_sub(sent) / 1000);
        }
    }
    let error = if latencies_us.len() < a.count as usize {
        r#","error":"stopped before every message arrived""#
    } else {
        ""
    };
    let list: Vec<String> = latencies_us.iter().map(u64::to_string).collect();
    emit(&format!(
        r#"{{"event":"result","received":{},"order_errors":{order_errors},"corrupt":{corrupt}{error},"latencies_us":[{}]}}"#,
        latencies_us.len(),
        list.join(",")
    ));
    // Acknowledge the last messages before leaving, so the sender is not left retransmitting.
    let linger = Instant::now() + Duration::from_millis(200);
    while Instant::now() < linger {
        server.poll(MAX_WAIT)?;
        server.events().for_each(drop);
    }
    Ok(())
}

fn send(a: &Args) -> io::Result<()> {
    let cfg = config(&a.preset, a.latency_target_ms)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let mut client = UdpClient::connect(a.addr.as_str(), cfg, b"s1")?;
    let stop = stdin_closed();
    let deadline = Instant::now() + Duration::from_millis(a.max_ms);
    while !client.is_connected() {
        if Instant::now() > deadline || client.is_drained() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "not connected"));
        }
        client.poll(MAX_WAIT)?;
        client.events().for_each(drop);
    }
    let period = Duration::from_secs_f64(1.0 / a.hz);
    let start = Instant::now();
    let (mut sent, mut acked, mut lost) = (0u32, 0u32, 0u32);
    let mut late_max = Duration::ZERO;
    let mut buf = vec![0u8; a.size];
    while !stop.load(Ordering::SeqCst) && Instant::now() < deadline {
        if sent < a.count {
            let due = start + period * (sent / a.per_tick);
            let now = Instant::now();
            if now >= due {
                late_max = late_max.max(now - due);
                for _ in 0..a.per_tick.min(a.count - sent) {
                    fill(&mut buf, sent);
                    buf[8..16].copy_from_slice(&mono_ns().to_le_bytes());
                    client
                        .send(0, buf.clone())
                        .map_err(|e| io::Error::other(format!("send refused: {e:?}")))?;
                    sent += 1;
                }
                client.flush();
                continue;
            }
            client.poll(MAX_WAIT.min(due - now))?;
        } else {
            client.poll(MAX_WAIT)?;
        }
        for ev in client.events() {
            match ev {
                Event::Acked(_) => acked += 1,
                Event::Lost(_) => lost += 1,
                Event::Closed(r) => return Err(io::Error::other(format!("closed: {r:?}"))),
                _ => {}
            }
        }
    }
    let s = client.stats();
    let sock = client.socket_stats();
    emit(&format!(
        r#"{{"event":"result","sent":{sent},"acked":{acked},"lost":{lost},"late_tick_max_us":{},"preset":"{}","ricochet":{{"packets_out":{},"packets_lost":{},"retransmissions":{},"early_resends":{},"fec_repair_bytes_out":{},"bytes_out":{},"socket_bytes_out":{},"socket_bytes_in":{},"rtt_us":{}}}}}"#,
        late_max.as_micros(),
        a.preset,
        s.packets_out,
        s.packets_lost,
        s.retransmissions,
        s.early_resends,
        s.fec_repair_bytes_out,
        s.bytes_out,
        sock.bytes_out,
        sock.bytes_in,
        s.rtt_us
    ));
    client.close(0, "done");
    client.flush();
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("s1_peer: {e}");
            return ExitCode::from(2);
        }
    };
    let r = if args.role == "send" {
        send(&args)
    } else {
        receive(&args)
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("s1_peer {}: {e}", args.role);
            ExitCode::FAILURE
        }
    }
}
