//! Echo server: what the browser end-to-end tests and the relay talk to.
//!
//! ```sh
//! cargo run --release -p ricochet-native --example echo_server -- --port 0
//! ```
//!
//! Binds 127.0.0.1 (port 0 = any free port), prints one line
//! `{"event":"listening","port":N}`, accepts every connection and echoes
//! every message back to its sender on the same channel. Connects, rejects
//! and closes are logged as JSON lines on stdout. Exits cleanly on stdin EOF
//! (unless `--ignore-stdin`) or SIGTERM.
//!
//! Flags: `--port N` (default 0); `--reject-payload STR` rejects handshakes
//! whose payload equals STR with reason "rejected by echo server";
//! `--ignore-stdin` keeps running when stdin closes (detached runs).

use std::collections::{HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ricochet_native::{
    AcceptPolicy, CloseReason, ConnectionId, Event, SendError, ServerConfig, UdpServer,
};

const REJECT_REASON: &str = "rejected by echo server";
/// Longest the loop sleeps, so a stop request is seen promptly.
const TICK: Duration = Duration::from_millis(20);
/// Echoes waiting for send-buffer room, per connection; beyond it the
/// connection is closed (the client sends faster than it acknowledges).
const MAX_BACKLOG: usize = 100_000;

static STOP: AtomicBool = AtomicBool::new(false);

struct Args {
    port: u16,
    reject_payload: Option<String>,
    ignore_stdin: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        port: 0,
        reject_payload: None,
        ignore_stdin: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--port" => {
                let v = it.next().ok_or("--port needs a value")?;
                args.port = v
                    .parse()
                    .map_err(|_| format!("--port: not a port number: {v}"))?;
            }
            "--reject-payload" => {
                args.reject_payload = Some(it.next().ok_or("--reject-payload needs a value")?)
            }
            "--ignore-stdin" => args.ignore_stdin = true,
            other => return Err(format!("unknown argument: {other}")),
        }
    }
    Ok(args)
}

fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// One JSON line on stdout, flushed (readers wait for whole lines).
fn log(line: &str) {
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn log_close(id: ConnectionId, reason: &CloseReason) {
    let (code, text) = match reason {
        CloseReason::Local { code, reason } | CloseReason::Peer { code, reason } => {
            (*code, reason.as_str())
        }
        CloseReason::Rejected { reason } => (0, reason.as_str()),
        CloseReason::IdleTimeout | CloseReason::HandshakeTimeout => (0, ""),
    };
    log(&format!(
        r#"{{"event":"close","id":{id},"kind":"{}","code":{code},"reason":{}}}"#,
        reason.code(),
        json_string(text)
    ));
}

#[cfg(unix)]
fn stop_on_sigterm() {
    extern "C" fn on_sigterm(_: libc::c_int) {
        // Async-signal-safe: one atomic store.
        STOP.store(true, Ordering::SeqCst);
    }
    let handler: extern "C" fn(libc::c_int) = on_sigterm;
    // SAFETY: installs a handler that only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
    }
}

#[cfg(not(unix))]
fn stop_on_sigterm() {}

fn stop_on_stdin_eof() {
    std::thread::spawn(|| {
        let mut buf = [0u8; 1024];
        let mut stdin = io::stdin();
        loop {
            match stdin.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        STOP.store(true, Ordering::SeqCst);
    });
}

/// Echoes in order: once a connection has a backlog, new echoes join it.
struct Echo {
    backlog: HashMap<ConnectionId, VecDeque<(u8, Vec<u8>)>>,
}

impl Echo {
    fn echo(&mut self, server: &mut UdpServer, id: ConnectionId, channel: u8, data: Vec<u8>) {
        let queue = self.backlog.entry(id).or_default();
        if queue.is_empty() {
            match server.send(id, channel, data) {
                Ok(_) => return,
                Err(SendError::BufferFull(data)) => queue.push_back((channel, data)),
                Err(_) => return, // closing, or a channel/size the peer cannot take back
            }
        } else {
            queue.push_back((channel, data));
        }
        if queue.len() > MAX_BACKLOG {
            self.backlog.remove(&id);
            server.close(id, 1, "echo backlog overflow");
        }
    }

    /// Retries held echoes now that acknowledgements may have made room.
    fn retry(&mut self, server: &mut UdpServer) {
        for (&id, queue) in self.backlog.iter_mut() {
            while let Some((channel, data)) = queue.pop_front() {
                match server.send(id, channel, data) {
                    Ok(_) => continue,
                    Err(SendError::BufferFull(data)) => {
                        queue.push_front((channel, data));
                        break;
                    }
                    Err(_) => continue,
                }
            }
        }
        self.backlog.retain(|_, q| !q.is_empty());
    }
}

fn run(args: Args) -> io::Result<()> {
    let mut server = UdpServer::bind(("127.0.0.1", args.port), ServerConfig::default())?;
    server.set_accept_policy(AcceptPolicy::Manual);
    log(&format!(
        r#"{{"event":"listening","port":{}}}"#,
        server.local_addr()?.port()
    ));
    stop_on_sigterm();
    if !args.ignore_stdin {
        stop_on_stdin_eof();
    }
    let mut echo = Echo {
        backlog: HashMap::new(),
    };
    while !STOP.load(Ordering::SeqCst) {
        server.poll(TICK)?;
        while let Some((id, ev)) = server.next_event() {
            match ev {
                Event::ConnectRequest { payload } => {
                    if args
                        .reject_payload
                        .as_deref()
                        .is_some_and(|p| p.as_bytes() == payload.as_slice())
                    {
                        server.reject(id, REJECT_REASON);
                        log(&format!(
                            r#"{{"event":"reject","id":{id},"reason":{}}}"#,
                            json_string(REJECT_REASON)
                        ));
                    } else {
                        server.accept(id);
                    }
                }
                Event::Connected => {
                    let addr = server
                        .peer_addr(id)
                        .map(|a| a.to_string())
                        .unwrap_or_default();
                    log(&format!(
                        r#"{{"event":"connect","id":{id},"addr":{}}}"#,
                        json_string(&addr)
                    ));
                }
                Event::Message { channel, data } => echo.echo(&mut server, id, channel, data),
                Event::Closed(reason) => {
                    echo.backlog.remove(&id);
                    log_close(id, &reason);
                }
                Event::Acked(_) | Event::Lost(_) => {}
            }
        }
        echo.retry(&mut server);
    }
    // Tell connected peers, and give the CLOSE frames a moment to leave.
    for id in server.connection_ids() {
        server.close(id, 0, "server shutting down");
    }
    let deadline = Instant::now() + Duration::from_millis(200);
    while server.connection_count() > 0 && Instant::now() < deadline {
        server.poll(Duration::from_millis(10))?;
        for (id, ev) in server.events() {
            if let Event::Closed(reason) = ev {
                log_close(id, &reason);
            }
        }
    }
    log(r#"{"event":"stopped"}"#);
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("echo_server: {e}");
            return ExitCode::from(2);
        }
    };
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("echo_server: {e}");
            ExitCode::FAILURE
        }
    }
}
