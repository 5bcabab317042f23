//! Opt-in Agones integration (`arcade-server --agones`): tells the Agones SDK
//! sidecar that this game server is Ready once its shards listen, then sends
//! Health pings until it stops. Speaks the sidecar's HTTP gateway
//! (`POST /ready`, `POST /health` with `{}` on
//! `localhost:$AGONES_SDK_HTTP_PORT`, default 9358) over a plain TCP stream,
//! so the arcade takes no gRPC or HTTP dependency for it.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// The sidecar's HTTP gateway.
#[derive(Clone, Debug)]
pub struct AgonesSdk {
    addr: SocketAddr,
}

impl AgonesSdk {
    /// The gateway on localhost at `AGONES_SDK_HTTP_PORT` (what Agones sets in
    /// a game server's container), else Agones' default port 9358.
    pub fn from_env() -> io::Result<AgonesSdk> {
        let port = match std::env::var("AGONES_SDK_HTTP_PORT") {
            Ok(p) => p
                .parse::<u16>()
                .map_err(|_| io::Error::other(format!("AGONES_SDK_HTTP_PORT={p} is not a port")))?,
            Err(_) => 9358,
        };
        let addr = ("localhost", port)
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| io::Error::other("localhost does not resolve"))?;
        Ok(AgonesSdk { addr })
    }

    /// This game server can take players: Agones may allocate it.
    pub fn ready(&self) -> io::Result<()> {
        self.post("/ready")
    }

    /// One health ping; Agones marks the game server Unhealthy when they stop
    /// (spec.health.periodSeconds × failureThreshold).
    pub fn health(&self) -> io::Result<()> {
        self.post("/health")
    }

    /// Pings every `every` on its own thread until `stop` is set. A failed
    /// ping is logged and retried next period: the sidecar decides health.
    pub fn keep_healthy(self, every: Duration, stop: &'static AtomicBool) -> JoinHandle<()> {
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                if let Err(e) = self.health() {
                    eprintln!("arcade-server: agones health ping failed: {e}");
                }
                // Sleep in short steps so a stop is not held up by a whole period.
                let mut slept = Duration::ZERO;
                while slept < every && !stop.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(50));
                    slept += Duration::from_millis(50);
                }
            }
        })
    }

    /// POST `{}` to path; Ok on a 2xx answer.
    fn post(&self, path: &str) -> io::Result<()> {
        let mut s = TcpStream::connect_timeout(&self.addr, Duration::from_secs(2))?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        s.set_write_timeout(Some(Duration::from_secs(5)))?;
        write!(s, "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}")?;
        let mut answer = Vec::new();
        s.read_to_end(&mut answer)?;
        let status = status_code(&answer)
            .ok_or_else(|| io::Error::other(format!("agones sdk {path}: no HTTP answer")))?;
        if (200..300).contains(&status) {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "agones sdk {path}: HTTP {status}"
            )))
        }
    }
}

/// The status code of an HTTP/1.x answer's status line.
fn status_code(answer: &[u8]) -> Option<u16> {
    let line = answer.split(|&b| b == b'\n').next()?;
    let mut parts = std::str::from_utf8(line).ok()?.split_whitespace();
    parts.next().filter(|v| v.starts_with("HTTP/1."))?;
    parts.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_status_line() {
        assert_eq!(
            status_code(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{}"),
            Some(200)
        );
        assert_eq!(
            status_code(b"HTTP/1.0 503 Service Unavailable\r\n\r\n"),
            Some(503)
        );
        assert_eq!(status_code(b"SSH-2.0-OpenSSH\r\n"), None);
        assert_eq!(status_code(b""), None);
    }

    #[test]
    fn no_sidecar_is_an_error_not_a_hang() {
        // A port nothing listens on: bind one, note it, close it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let sdk = AgonesSdk {
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        };
        assert!(sdk.ready().is_err());
    }
}
