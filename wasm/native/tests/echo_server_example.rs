//! The `echo_server` example as the browser tests and the relay use it: a
//! child process that prints its port, echoes, rejects one payload, logs
//! JSON lines, and exits on stdin EOF.

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use common::{check, client_config, payload};
use ricochet_native::{CloseReason, Event, UdpClient};

/// The example binary next to this test's profile directory, built on
/// demand when the test runs alone (`cargo test` builds examples anyway).
fn example_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .unwrap()
        .to_path_buf();
    let bin = profile_dir
        .join("examples")
        .join(format!("echo_server{}", std::env::consts::EXE_SUFFIX));
    if !bin.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "-p", "ricochet-native", "--example", "echo_server"]);
        if profile_dir.ends_with("release") {
            cmd.arg("--release");
        }
        assert!(
            cmd.status().unwrap().success(),
            "building echo_server failed"
        );
    }
    bin
}

struct EchoProcess {
    child: Child,
    lines: Receiver<String>,
}

impl EchoProcess {
    fn start(args: &[&str]) -> (EchoProcess, u16) {
        let mut child = Command::new(example_binary())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn echo_server");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut p = EchoProcess { child, lines };
        let first = p.line();
        let port = first
            .strip_prefix(r#"{"event":"listening","port":"#)
            .and_then(|s| s.strip_suffix('}'))
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("unexpected first line: {first}"));
        (p, port)
    }

    fn line(&mut self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(5))
            .expect("a line from echo_server")
    }

    /// Next line containing `needle`, skipping others.
    fn line_with(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            let l = self.line();
            if l.contains(needle) {
                return l;
            }
        }
        panic!("no line with {needle}");
    }
}

impl Drop for EchoProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run_client(
    client: &mut UdpClient,
    limit: Duration,
    mut done: impl FnMut(&Event) -> bool,
) -> Vec<Event> {
    let deadline = Instant::now() + limit;
    let mut events = Vec::new();
    while Instant::now() < deadline {
        client.poll(Duration::from_millis(5)).unwrap();
        for ev in client.events() {
            let stop = done(&ev);
            events.push(ev);
            if stop {
                return events;
            }
        }
    }
    panic!("client condition not met; events: {events:?}");
}

#[test]
fn echo_server_echoes_rejects_logs_and_exits_on_stdin_eof() {
    let (mut p, port) = EchoProcess::start(&["--port", "0", "--reject-payload", "go away"]);
    let addr = ("127.0.0.1", port);

    let mut client = UdpClient::connect(addr, client_config(), b"hello").unwrap();
    run_client(&mut client, Duration::from_secs(3), |e| {
        *e == Event::Connected
    });
    let connect = p.line_with(r#""event":"connect""#);
    assert!(
        connect.contains(&format!(r#""id":{}"#, client.id())),
        "{connect}"
    );
    for n in 0..100 {
        client
            .send((n % 2) as u8, payload(n, 20 + n as usize * 30))
            .unwrap();
    }
    let mut next = [0u32, 1];
    run_client(&mut client, Duration::from_secs(5), |e| {
        if let Event::Message { channel, data } = e {
            let c = *channel as usize;
            assert_eq!(check(data), next[c], "channel {channel}");
            next[c] += 2;
        }
        next == [100, 101]
    });

    let mut refused = UdpClient::connect(addr, client_config(), b"go away").unwrap();
    let events = run_client(&mut refused, Duration::from_secs(3), |e| {
        matches!(e, Event::Closed(_))
    });
    assert_eq!(
        events,
        vec![Event::Closed(CloseReason::Rejected {
            reason: "rejected by echo server".into()
        })]
    );
    p.line_with(r#""event":"reject""#);

    client.close(3, "done \"here\"");
    client.flush();
    let close = p.line_with(r#""event":"close""#);
    assert!(
        close.contains(r#""kind":"RICOCHET_CLOSED_BY_PEER","code":3,"reason":"done \"here\"""#),
        "{close}"
    );

    drop(p.child.stdin.take());
    p.line_with(r#"{"event":"stopped"}"#);
    let deadline = Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(s) = p.child.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "echo_server did not exit on stdin EOF"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "{status}");
}
