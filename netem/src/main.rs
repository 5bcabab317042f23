//! ricochet-netem: a user-space impaired link between two network namespaces.
//!
//! For kernels without netem. One TUN device in each namespace; every IP
//! packet the kernel routes into one comes out of the other after passing a
//! ricochet-sim simulator [`Link`] (A -> B and B -> A, independent seeds
//! derived like [`Duplex`]), so TCP, UDP, QUIC and browsers are impaired
//! alike and the profile names mean exactly what they mean in the simulator.
//!
//! Run loop (one thread): write every due packet, sleep in ppoll(2) until a
//! device is readable, a delivery is due, a stats write is due or a signal
//! arrives, then read what is queued (stamped with one clock reading).
//!
//! Non-goals: addressing and routing (the caller runs `ip`, see
//! netem/lab.mjs); more than two endpoints; L2 (TAP) emulation.

mod cli;
mod direction;
mod histogram;
mod tun;

use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use ricochet_sim::{Duplex, NetworkProfile};

use cli::{Action, Options};
use direction::{config_json, json_str, Direction};

static STOP: AtomicBool = AtomicBool::new(false);
static DUMP: AtomicBool = AtomicBool::new(false);

/// Packets read from one device per loop turn, so both sides get a turn.
const READ_BATCH: usize = 64;
/// Big enough for any packet a TUN device hands out (MTU up to 65535).
const BUF_BYTES: usize = 65_536;

extern "C" fn on_signal(sig: libc::c_int) {
    if sig == libc::SIGUSR1 {
        DUMP.store(true, Ordering::SeqCst);
    } else {
        STOP.store(true, Ordering::SeqCst);
    }
}

/// Block our signals (they are only taken inside ppoll, so none is lost
/// between a check and the sleep); returns the mask to sleep with.
fn install_signals() -> libc::sigset_t {
    // SAFETY: plain libc signal setup on zeroed, then initialised, sigsets;
    // the handler only stores to atomics (async-signal-safe).
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGUSR1] {
            libc::sigaddset(&mut set, sig);
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
        libc::sigprocmask(libc::SIG_BLOCK, &set, &mut old);
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGUSR1] {
            libc::sigdelset(&mut old, sig);
        }
        old
    }
}

fn sched_name() -> &'static str {
    // SAFETY: queries this process's own policy.
    match unsafe { libc::sched_getscheduler(0) } {
        libc::SCHED_FIFO => "fifo",
        libc::SCHED_RR => "rr",
        _ => "other",
    }
}

/// Print one line to stdout; a closed stdout is not an error worth dying for.
fn emit(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

struct Emulator {
    opts: Options,
    dirs: [Direction; 2],
    start: Instant,
    stats_seq: u64,
}

impl Emulator {
    fn now_us(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    fn stats_json(&mut self, is_final: bool) -> String {
        self.stats_seq += 1;
        format!(
            "{{\"event\":\"stats\",\"seq\":{},\"final\":{},\"uptime_ms\":{},\"profile\":{},\"seed\":{},\"a_to_b\":{},\"b_to_a\":{}}}",
            self.stats_seq,
            is_final,
            self.now_us() / 1000,
            json_str(&self.opts.profile),
            self.opts.seed,
            self.dirs[0].stats_json(),
            self.dirs[1].stats_json()
        )
    }

    /// Rewrite the stats file atomically (write aside, rename).
    fn write_stats_file(&self, json: &str) {
        let Some(path) = &self.opts.stats_file else {
            return;
        };
        let tmp = path.with_extension("tmp");
        let done =
            std::fs::write(&tmp, format!("{json}\n")).and_then(|()| std::fs::rename(&tmp, path));
        if let Err(e) = done {
            eprintln!("ricochet-netem: stats file {}: {e}", path.display());
        }
    }
}

fn run(opts: Options) -> Result<(), String> {
    if opts.die_with_parent {
        // SAFETY: prctl with plain integer arguments.
        let parent = unsafe { libc::getppid() };
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) };
        if unsafe { libc::getppid() } != parent {
            return Err("parent exited before we started".into());
        }
    }
    // Wake exactly at deadlines (normal threads default to 50 µs of slack).
    // SAFETY: prctl with plain integer arguments.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let sleep_mask = install_signals();

    let tun_a = tun::open_in_netns(&opts.ns_a, &opts.tun_a).map_err(|e| e.to_string())?;
    let tun_b = tun::open_in_netns(&opts.ns_b, &opts.tun_b).map_err(|e| e.to_string())?;
    let profile = NetworkProfile {
        name: "emulated",
        client_to_server: opts.a_to_b,
        server_to_client: opts.b_to_a,
    };
    let duplex = Duplex::new(profile, opts.seed);
    let mut emu = Emulator {
        dirs: [
            Direction::new(duplex.client_to_server).block_udp(opts.block_udp),
            Direction::new(duplex.server_to_client).block_udp(opts.block_udp),
        ],
        opts,
        start: Instant::now(),
        stats_seq: 0,
    };
    let fds = [tun_a.fd.as_raw_fd(), tun_b.fd.as_raw_fd()];
    emit(&format!(
        "{{\"event\":\"ready\",\"pid\":{},\"ns_a\":{},\"ns_b\":{},\"tun_a\":{},\"tun_b\":{},\"profile\":{},\"seed\":{},\"sched\":\"{}\",\"a_to_b\":{},\"b_to_a\":{}}}",
        std::process::id(),
        json_str(&emu.opts.ns_a),
        json_str(&emu.opts.ns_b),
        json_str(&tun_a.name),
        json_str(&tun_b.name),
        json_str(&emu.opts.profile),
        emu.opts.seed,
        sched_name(),
        config_json(&emu.opts.a_to_b),
        config_json(&emu.opts.b_to_a),
    ));

    let interval_us = emu.opts.stats_interval_ms.saturating_mul(1000);
    let mut next_stats = if interval_us > 0 {
        interval_us
    } else {
        u64::MAX
    };
    let mut buf = vec![0u8; BUF_BYTES];
    let mut failure = None;
    while !STOP.load(Ordering::SeqCst) {
        let now = emu.now_us();
        emu.dirs[0].deliver_due(now, fds[1]);
        emu.dirs[1].deliver_due(now, fds[0]);
        if DUMP.swap(false, Ordering::SeqCst) {
            let json = emu.stats_json(false);
            // The file first: whoever reads the line on stdout may read the file next.
            emu.write_stats_file(&json);
            emit(&json);
        }
        if now >= next_stats {
            let json = emu.stats_json(false);
            emu.write_stats_file(&json);
            next_stats = now.saturating_add(interval_us);
        }
        let deadline = [
            emu.dirs[0].next_deadline(),
            emu.dirs[1].next_deadline(),
            Some(next_stats),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(u64::MAX);
        let wait_us = deadline.saturating_sub(emu.now_us());
        let ts = libc::timespec {
            tv_sec: (wait_us / 1_000_000).min(3600) as libc::time_t,
            tv_nsec: ((wait_us % 1_000_000) * 1000) as libc::c_long,
        };
        let mut pfds = fds.map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        });
        // SAFETY: pfds, ts and sleep_mask are valid for the call's duration.
        let n = unsafe { libc::ppoll(pfds.as_mut_ptr(), 2, &ts, &sleep_mask) };
        if n <= 0 {
            continue; // timeout or a signal: the loop top handles both
        }
        let now = emu.now_us();
        for (i, p) in pfds.iter().enumerate() {
            if p.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
                failure = Some(format!(
                    "device {} failed (namespace deleted?)",
                    ["A", "B"][i]
                ));
            }
            if p.revents & libc::POLLIN == 0 {
                continue;
            }
            for _ in 0..READ_BATCH {
                match tun::read_packet(p.fd, &mut buf) {
                    Ok(Some(len)) => emu.dirs[i].ingest(now, &mut buf[..len]),
                    Ok(None) => break,
                    Err(e) => {
                        failure = Some(format!("read from device {}: {e}", ["A", "B"][i]));
                        break;
                    }
                }
            }
        }
        if failure.is_some() {
            break;
        }
    }
    let json = emu.stats_json(true);
    emu.write_stats_file(&json);
    emit(&json);
    match failure {
        Some(f) => Err(f),
        None => Ok(()),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = match cli::parse(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("ricochet-netem: {e}");
            std::process::exit(2);
        }
    };
    match opts.action {
        Action::Help => print!("{}", cli::USAGE),
        Action::ListProfiles => {
            for name in NetworkProfile::names() {
                println!("{name}");
            }
        }
        Action::PrintProfile => println!(
            "{{\"profile\":{},\"a_to_b\":{},\"b_to_a\":{}}}",
            json_str(&opts.profile),
            config_json(&opts.a_to_b),
            config_json(&opts.b_to_a)
        ),
        Action::Run => {
            if let Some(f) = &opts.stats_file {
                if let Some(dir) = f.parent().filter(|d| !d.as_os_str().is_empty()) {
                    if !Path::new(dir).is_dir() {
                        eprintln!("ricochet-netem: no directory {}", dir.display());
                        std::process::exit(2);
                    }
                }
            }
            if let Err(e) = run(opts) {
                eprintln!("ricochet-netem: {e}");
                std::process::exit(1);
            }
        }
    }
}
