//! The arcade's game server.
//!
//! ```sh
//! arcade-server --port 0 --shards 2 --snapshot-hz 30 --stats-ms 1000 --read-every-ms 2
//! ```
//!
//! Prints `{"event":"listening","ports":[..]}` (shard i serves rooms with
//! `room % shards == i`), then a `stats` line every `--stats-ms` (players,
//! rooms, tick time p50/p99/max in µs over the interval, the CPU time of
//! those ticks p50/p99 (below the wall time when a tick waited for a core),
//! resident memory).
//! Stops on stdin EOF (unless `--ignore-stdin`) or SIGTERM.
//! `--agones`: under Agones, marks the game server Ready through the SDK
//! sidecar once listening and sends it Health pings (see `agones`).
//!
//! Acknowledgements ride on snapshots: by default an ACK waits up to one
//! snapshot period plus 6 ms (`--ack-delay-ms`, 40 at 30 Hz; the core's
//! default is 5) and leaves at once only after more inputs than arrive
//! between two snapshots (`--ack-threshold`, 4 at 30 Hz; the core's is 2,
//! which sent an ACK datagram per 2 inputs: as many datagrams again as the
//! snapshots). Clients declare the same delay so that RTT samples subtract
//! the whole reported delay.

use std::io::{self, Read, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ricochet_arcade::agones::AgonesSdk;
use ricochet_arcade::net::{tick_phase, Shard, ShardOptions, ShardStats};

static STOP: AtomicBool = AtomicBool::new(false);

struct Args {
    host: String,
    port: u16,
    shards: u16,
    snapshot_hz: u32,
    stats_ms: u64,
    read_every_ms: u64,
    /// None: derived from the snapshot rate (see the top of this file).
    ack_delay_ms: Option<u64>,
    ack_threshold: Option<u32>,
    ignore_stdin: bool,
    agones: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        host: "127.0.0.1".into(),
        port: 0,
        shards: 1,
        snapshot_hz: 30,
        stats_ms: 5000,
        read_every_ms: 2,
        ack_delay_ms: None,
        ack_threshold: None,
        ignore_stdin: false,
        agones: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match flag.as_str() {
            "--host" => a.host = value("--host")?,
            "--port" => {
                a.port = value("--port")?
                    .parse()
                    .map_err(|_| "--port: not a port number")?
            }
            "--shards" => {
                a.shards = value("--shards")?
                    .parse()
                    .map_err(|_| "--shards: not a number")?
            }
            "--snapshot-hz" => {
                a.snapshot_hz = value("--snapshot-hz")?
                    .parse()
                    .map_err(|_| "--snapshot-hz: not a number")?
            }
            "--stats-ms" => {
                a.stats_ms = value("--stats-ms")?
                    .parse()
                    .map_err(|_| "--stats-ms: not a number")?
            }
            "--read-every-ms" => {
                a.read_every_ms = value("--read-every-ms")?
                    .parse()
                    .map_err(|_| "--read-every-ms: not a number")?
            }
            "--ack-delay-ms" => {
                a.ack_delay_ms = Some(
                    value("--ack-delay-ms")?
                        .parse()
                        .map_err(|_| "--ack-delay-ms: not a number")?,
                )
            }
            "--ack-threshold" => {
                a.ack_threshold = Some(
                    value("--ack-threshold")?
                        .parse()
                        .map_err(|_| "--ack-threshold: not a number")?,
                )
            }
            "--ignore-stdin" => a.ignore_stdin = true,
            "--agones" => a.agones = true,
            other => return Err(format!("unknown argument: {other}")),
        }
    }
    if a.shards == 0 || a.shards > 64 {
        return Err("--shards must be 1..64".into());
    }
    if a.snapshot_hz == 0 || a.snapshot_hz > 60 {
        return Err("--snapshot-hz must be 1..60".into());
    }
    if a.ack_threshold.is_some_and(|t| !(1..=255).contains(&t)) {
        return Err("--ack-threshold must be 1..255".into());
    }
    Ok(a)
}

fn log(line: &str) {
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

#[cfg(unix)]
fn stop_on_sigterm() {
    extern "C" fn on_signal(_: libc::c_int) {
        STOP.store(true, Ordering::SeqCst); // async-signal-safe: one atomic store
    }
    let handler: extern "C" fn(libc::c_int) = on_signal;
    // SAFETY: installs a handler that only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
    }
}

#[cfg(not(unix))]
fn stop_on_sigterm() {}

fn stop_on_stdin_eof() {
    std::thread::spawn(|| {
        let mut buf = [0u8; 256];
        while let Ok(n) = io::stdin().read(&mut buf) {
            if n == 0 {
                break;
            }
        }
        STOP.store(true, Ordering::SeqCst);
    });
}

/// Resident memory, KiB (Linux; 0 elsewhere).
fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    pages * 4
}

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

fn run(a: Args) -> io::Result<()> {
    let mut opts =
        ShardOptions::acks_on_snapshots(a.snapshot_hz, Duration::from_millis(a.read_every_ms));
    if let Some(ms) = a.ack_delay_ms {
        opts.max_ack_delay_us = ms * 1000;
    }
    if let Some(t) = a.ack_threshold {
        opts.ack_eliciting_threshold = t;
    }
    // Shard i first ticks i/shards of a period after shard 0 (see `tick_phase`).
    let (start, shards) = (std::time::Instant::now(), a.shards);
    let mut ports = Vec::new();
    let mut handles = Vec::new();
    let mut all_stats = Vec::new();
    for i in 0..a.shards {
        let stats = Arc::new(ShardStats::default());
        all_stats.push(stats.clone());
        let (tx, rx) = std::sync::mpsc::channel();
        let host = a.host.clone();
        let port = if a.port == 0 { 0 } else { a.port + i };
        let (snapshot_hz, read_every, max_ack_delay_us, ack_eliciting_threshold) = (
            opts.snapshot_hz,
            opts.read_every,
            opts.max_ack_delay_us,
            opts.ack_eliciting_threshold,
        );
        // The shard is created on its own thread (UdpServer is not Send).
        handles.push(std::thread::spawn(move || -> io::Result<()> {
            let mut shard = match Shard::bind(
                &host,
                port,
                &ShardOptions {
                    snapshot_hz,
                    read_every,
                    max_ack_delay_us,
                    ack_eliciting_threshold,
                },
                stats,
            ) {
                Ok(s) => s,
                Err(e) => {
                    let _ = tx.send(Err(e.to_string()));
                    return Ok(());
                }
            };
            let _ = tx.send(shard.port().map_err(|e| e.to_string()));
            shard.run_from(&STOP, tick_phase(start, i as u32, shards as u32))
        }));
        let port = rx
            .recv()
            .map_err(|_| io::Error::other("shard thread died"))?
            .map_err(io::Error::other)?;
        ports.push(port.to_string());
    }
    log(&format!(
        r#"{{"event":"listening","ports":[{}],"tickHz":60,"snapshotHz":{}}}"#,
        ports.join(","),
        a.snapshot_hz
    ));
    // Agones (opt-in): allocatable once every shard listens; healthy while this process runs.
    let health = if a.agones {
        let sdk = AgonesSdk::from_env()?;
        sdk.ready().map_err(|e| {
            io::Error::other(format!(
                "--agones: the Agones SDK sidecar did not take Ready: {e}"
            ))
        })?;
        log(r#"{"event":"agones","state":"Ready"}"#);
        Some(sdk.keep_healthy(Duration::from_secs(2), &STOP))
    } else {
        None
    };
    let interval = Duration::from_millis(a.stats_ms.max(100));
    let mut waited = Duration::ZERO;
    while !STOP.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
        waited += Duration::from_millis(50);
        if waited < interval {
            continue;
        }
        waited = Duration::ZERO;
        let (mut times, mut cpu): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
        let (mut players, mut rooms, mut late, mut bad) = (0, 0, 0, 0);
        for s in &all_stats {
            for (wall, on_cpu) in s.take_tick_times() {
                times.push(wall);
                cpu.push(on_cpu);
            }
            players += s.players.load(Ordering::Relaxed);
            rooms += s.rooms.load(Ordering::Relaxed);
            late += s.late_ticks.load(Ordering::Relaxed);
            bad += s.bad_messages.load(Ordering::Relaxed);
        }
        times.sort_unstable();
        cpu.sort_unstable();
        log(&format!(
            r#"{{"event":"stats","players":{players},"rooms":{rooms},"ticks":{},"tickP50Us":{},"tickP99Us":{},"tickMaxUs":{},"tickCpuP50Us":{},"tickCpuP99Us":{},"lateTicks":{late},"badMessages":{bad},"rssKiB":{}}}"#,
            times.len(),
            percentile(&times, 0.5),
            percentile(&times, 0.99),
            times.last().copied().unwrap_or(0),
            percentile(&cpu, 0.5),
            percentile(&cpu, 0.99),
            rss_kib()
        ));
    }
    if let Some(h) = health {
        let _ = h.join();
    }
    for h in handles {
        match h.join() {
            Ok(r) => r?,
            Err(_) => return Err(io::Error::other("a shard thread panicked")),
        }
    }
    log(r#"{"event":"stopped"}"#);
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("arcade-server: {e}");
            return ExitCode::from(2);
        }
    };
    stop_on_sigterm();
    if !args.ignore_stdin {
        stop_on_stdin_eof();
    }
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("arcade-server: {e}");
            ExitCode::FAILURE
        }
    }
}
