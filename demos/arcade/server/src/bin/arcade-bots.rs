//! Load bots for the arcade server.
//!
//! ```sh
//! arcade-bots --ports 4000,4001 --bots 2000 --per-room 20 --seconds 20 --threads 2 --priority idle
//! ```
//!
//! `--priority idle` runs the bot threads under Linux's SCHED_IDLE: they get
//! only the CPU the server leaves, as if they were the players' own machines,
//! so a server tick on the same cores is never made to wait for a bot.
//!
//! Room r is served by port `ports[r % ports.len()]` (the server's shards).
//! Prints one JSON line at the end: bots that connected, that were closed,
//! snapshots received and inputs sent per bot per second, kills seen.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use ricochet_arcade::bots::{run_bots, Bot};

struct Args {
    host: String,
    ports: Vec<u16>,
    bots: usize,
    per_room: usize,
    seconds: f64,
    threads: usize,
    ramp_per_tick: usize,
    idle_priority: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        host: "127.0.0.1".into(),
        ports: vec![],
        bots: 100,
        per_room: 20,
        seconds: 10.0,
        threads: 1,
        ramp_per_tick: 20,
        idle_priority: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let v = it.next().ok_or(format!("{flag} needs a value"))?;
        let num = |s: &str| {
            s.parse::<f64>()
                .map_err(|_| format!("{flag}: not a number: {s}"))
        };
        match flag.as_str() {
            "--host" => a.host = v,
            "--ports" => {
                a.ports = v
                    .split(',')
                    .map(|p| {
                        p.trim()
                            .parse()
                            .map_err(|_| format!("--ports: bad port {p}"))
                    })
                    .collect::<Result<_, _>>()?
            }
            "--bots" => a.bots = num(&v)? as usize,
            "--per-room" => a.per_room = (num(&v)? as usize).clamp(1, 32),
            "--seconds" => a.seconds = num(&v)?,
            "--threads" => a.threads = (num(&v)? as usize).max(1),
            "--ramp-per-tick" => a.ramp_per_tick = (num(&v)? as usize).max(1),
            "--priority" => {
                a.idle_priority = match v.as_str() {
                    "idle" => true,
                    "normal" => false,
                    _ => return Err(format!("--priority: expected idle or normal, got {v}")),
                }
            }
            other => return Err(format!("unknown argument: {other}")),
        }
    }
    if a.ports.is_empty() {
        return Err("--ports is required".into());
    }
    Ok(a)
}

fn main() -> ExitCode {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("arcade-bots: {e}");
            return ExitCode::from(2);
        }
    };
    let started = Instant::now();
    let until = started + Duration::from_secs_f64(a.seconds);
    let per_thread = a.bots.div_ceil(a.threads);
    let mut handles = Vec::new();
    for t in 0..a.threads {
        let first = t * per_thread;
        let count = per_thread.min(a.bots.saturating_sub(first));
        let (host, ports, per_room, ramp, idle) = (
            a.host.clone(),
            a.ports.clone(),
            a.per_room,
            a.ramp_per_tick,
            a.idle_priority,
        );
        handles.push(std::thread::spawn(move || {
            if idle {
                idle_priority()?;
            }
            let make = |i: usize| {
                let n = first + i;
                let room = (n / per_room) % 256;
                let port = ports[room % ports.len()];
                let addr: SocketAddr = format!("{host}:{port}")
                    .parse()
                    .map_err(|e| std::io::Error::other(format!("{e}")))?;
                Bot::join(
                    addr,
                    room as u8,
                    &format!("bot-{n}"),
                    0x9e37_79b9 ^ (n as u64) << 16,
                )
            };
            run_bots(make, count, ramp.div_ceil(a.threads), until)
        }));
    }
    let (mut connected, mut closed, mut snapshots, mut kills, mut inputs) =
        (0, 0, 0u64, 0u64, 0u64);
    let mut steady_since = started;
    for h in handles {
        match h.join() {
            Ok(Ok((bots, since))) => {
                steady_since = steady_since.max(since);
                for b in bots {
                    connected += b.connected as usize;
                    closed += b.closed as usize;
                    snapshots += b.snapshots;
                    kills += b.kills_seen;
                    inputs += b.inputs;
                }
            }
            Ok(Err(e)) => {
                eprintln!("arcade-bots: {e}");
                return ExitCode::FAILURE;
            }
            Err(_) => return ExitCode::FAILURE,
        }
    }
    let secs = started.elapsed().as_secs_f64();
    // Rates over the steady state (after every bot joined), not the ramp.
    let steady = until
        .saturating_duration_since(steady_since)
        .as_secs_f64()
        .max(1e-3);
    println!(
        r#"{{"event":"bots","bots":{},"connected":{connected},"closed":{closed},"seconds":{secs:.1},"snapshotsPerBotPerSecond":{:.1},"inputsPerBotPerSecond":{:.1},"killsSeen":{kills}}}"#,
        a.bots,
        snapshots as f64 / steady / connected.max(1) as f64,
        inputs as f64 / steady / connected.max(1) as f64
    );
    ExitCode::SUCCESS
}

/// Puts the calling thread under SCHED_IDLE (Linux schedules it only when
/// nothing else wants the core; no privilege needed to lower one's own).
#[cfg(target_os = "linux")]
fn idle_priority() -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; `param` outlives the call.
    match unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } {
        0 => Ok(()),
        _ => {
            let e = std::io::Error::last_os_error();
            Err(std::io::Error::other(format!("--priority idle: SCHED_IDLE refused ({e}); use --priority normal (bench: ARCADE_BENCH_BOT_PRIORITY=normal)")))
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn idle_priority() -> std::io::Result<()> {
    Err(std::io::Error::other(
        "--priority idle needs Linux (SCHED_IDLE)",
    ))
}
