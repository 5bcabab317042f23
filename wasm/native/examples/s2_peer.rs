//! Ricochet's peer for the S2 benchmark (bench/s2.mjs): bulk reliable
//! transfer. The sender keeps the send buffer full of `--chunk`-byte
//! reliable-ordered messages until stdin ends; the receiver counts the bytes
//! delivered during `--seconds` after the first one and reports goodput.
//!
//! ```sh
//! s2_peer recv --listen HOST:PORT [--seconds 60]
//! s2_peer send --to HOST:PORT [--chunk 16384] [--preset default|low_latency]
//! ```
//!
//! With `RICOCHET_S2_TRACE=1` the sender writes a line to stderr every
//! 100 ms: packets sent in it, window, bytes in flight, RTT and the RTT
//! estimator's lifetime minimum (as the simulator's `s2_bulk --trace 1`).
//!
//! Prints JSON lines: `{"event":"listening","port":N}` (receiver), then one
//! `{"event":"result",...}`. The core's configuration preset is used as it
//! is, congestion control included, so the benchmark follows the core.

use std::io;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use ricochet_native::{AcceptPolicy, Config, Event, SendError, ServerConfig, UdpClient, UdpServer};

#[path = "peer_io/mod.rs"]
mod peer_io;
use peer_io::{emit, stdin_closed};

const MAX_WAIT: Duration = Duration::from_millis(2);

struct Args {
    role: String,
    addr: String,
    chunk: usize,
    seconds: f64,
    preset: String,
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
        chunk: 16_384,
        seconds: 60.0,
        preset: "default".into(),
    };
    while let Some(flag) = it.next() {
        let v = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let bad = || format!("{flag}: bad value {v}");
        match flag.as_str() {
            "--listen" | "--to" => a.addr = v.clone(),
            "--chunk" => a.chunk = v.parse().map_err(|_| bad())?,
            "--seconds" => a.seconds = v.parse().map_err(|_| bad())?,
            "--preset" => a.preset = v.clone(),
            _ => return Err(format!("unknown argument: {flag}")),
        }
    }
    if a.addr.is_empty() || a.chunk < 4 {
        return Err("need --listen/--to HOST:PORT and --chunk ≥ 4".into());
    }
    Ok(a)
}

fn receive(a: &Args) -> io::Result<()> {
    let mut server = UdpServer::bind(a.addr.as_str(), ServerConfig::default())?;
    server.set_accept_policy(AcceptPolicy::AcceptAll);
    emit(&format!(
        r#"{{"event":"listening","port":{}}}"#,
        server.local_addr()?.port()
    ));
    let stop = stdin_closed();
    let window = Duration::from_secs_f64(a.seconds);
    let (mut bytes, mut order_errors, mut next) = (0u64, 0u64, 0u32);
    let mut first: Option<Instant> = None;
    while !stop.load(Ordering::SeqCst) && first.is_none_or(|t| t.elapsed() < window) {
        server.poll(MAX_WAIT)?;
        while let Some((_, ev)) = server.next_event() {
            let Event::Message { data, .. } = ev else {
                continue;
            };
            first.get_or_insert_with(Instant::now);
            let seq = u32::from_le_bytes(data[0..4].try_into().unwrap_or_default());
            if seq != next {
                order_errors += 1;
            }
            next = seq.wrapping_add(1);
            bytes += data.len() as u64;
        }
    }
    let secs = first.map_or(0.0, |t| t.elapsed().as_secs_f64());
    let mbps = if secs > 0.0 {
        bytes as f64 * 8.0 / secs / 1e6
    } else {
        0.0
    };
    emit(&format!(
        r#"{{"event":"result","bytes":{bytes},"seconds":{secs:.3},"mbps":{mbps:.2},"order_errors":{order_errors}}}"#
    ));
    Ok(())
}

fn send(a: &Args) -> io::Result<()> {
    let cfg = match a.preset.as_str() {
        "default" => Config::default(),
        "low_latency" => Config::low_latency(),
        p => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("--preset: default or low_latency, got {p}"),
            ))
        }
    };
    let mut client = UdpClient::connect(a.addr.as_str(), cfg, b"s2")?;
    let stop = stdin_closed();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !client.is_connected() {
        if Instant::now() > deadline || client.is_drained() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "not connected"));
        }
        client.poll(MAX_WAIT)?;
        client.events().for_each(drop);
    }
    let mut buf = vec![0u8; a.chunk];
    let mut seq = 0u32;
    let trace = std::env::var_os("RICOCHET_S2_TRACE").is_some_and(|v| v == "1");
    let (start, mut next_trace, mut last_out) = (Instant::now(), Duration::from_millis(100), 0);
    while !stop.load(Ordering::SeqCst) {
        if trace && start.elapsed() >= next_trace {
            let s = client.stats();
            // t is when the line was written: after a stall, a line covers longer.
            eprintln!(
                "t={:.1} packets={} cwnd={} flight={} rtt={:.1} min={:.1}",
                start.elapsed().as_secs_f64(),
                s.packets_out - last_out,
                s.congestion_window,
                s.bytes_in_flight,
                s.rtt_us as f64 / 1e3,
                s.min_rtt_us as f64 / 1e3
            );
            last_out = s.packets_out;
            while next_trace <= start.elapsed() {
                next_trace += Duration::from_millis(100);
            }
        }
        // Fill the send buffer; the core paces what leaves by its congestion window.
        loop {
            buf[0..4].copy_from_slice(&seq.to_le_bytes());
            match client.send(0, buf.clone()) {
                Ok(_) => seq = seq.wrapping_add(1),
                Err(SendError::BufferFull(_)) => break,
                Err(e) => return Err(io::Error::other(format!("send refused: {e:?}"))),
            }
        }
        client.poll(MAX_WAIT)?;
        for ev in client.events() {
            if let Event::Closed(r) = ev {
                return Err(io::Error::other(format!("closed: {r:?}")));
            }
        }
    }
    let s = client.stats();
    emit(&format!(
        r#"{{"event":"result","messages":{seq},"packets_out":{},"packets_lost":{},"retransmissions":{},"congestion_window":{},"rtt_us":{}}}"#,
        s.packets_out, s.packets_lost, s.retransmissions, s.congestion_window, s.rtt_us
    ));
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("s2_peer: {e}");
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
            eprintln!("s2_peer {}: {e}", args.role);
            ExitCode::FAILURE
        }
    }
}
