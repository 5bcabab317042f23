//! What the example clients share (`mod common;` in each): argument and
//! address helpers, the client TLS that pins the server's certificate hash,
//! WebTransport connect and Ricochet HELLO, and the JSON exit of `main`.
//! Cargo builds examples from `examples/*.rs` only, so this is no example.

// Each example uses a different part of this (h3_probe only the TLS and the exit).
#![allow(dead_code)]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use wtransport::quinn;
use wtransport::tls::client::{build_default_tls_config, ServerHashVerification};
use wtransport::tls::Sha256Digest;
use wtransport::{ClientConfig, Endpoint};

/// A SHA-256 from 64 hex digits; anything else in `s` (colons, spaces) is skipped.
pub fn parse_hex(s: &str) -> Option<[u8; 32]> {
    let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// The address of `https://IP:PORT/...` (or `localhost`, `[v6]`).
pub fn host_port(url: &str) -> Result<SocketAddr, String> {
    let rest = url
        .strip_prefix("https://")
        .ok_or("url must start with https://")?;
    let authority = rest.split('/').next().unwrap_or(rest);
    let (host, port) = if let Some(r) = authority.strip_prefix('[') {
        let (h, p) = r.split_once("]:").ok_or("bad [v6]:port")?;
        (h.to_string(), p)
    } else {
        let (h, p) = authority.rsplit_once(':').ok_or("url needs a port")?;
        (h.to_string(), p)
    };
    let ip: IpAddr = match host.as_str() {
        "localhost" => IpAddr::V4(Ipv4Addr::LOCALHOST),
        h => h.parse().map_err(|_| format!("host {h} must be an IP"))?,
    };
    Ok(SocketAddr::new(ip, port.parse().map_err(|_| "bad port")?))
}

/// The local address to bind for `peer`: `--bind` if given, else any of its family.
pub fn local_addr(peer: SocketAddr, bind: Option<IpAddr>) -> SocketAddr {
    match bind {
        Some(ip) => (ip, 0).into(),
        None if peer.is_ipv4() => (Ipv4Addr::UNSPECIFIED, 0).into(),
        None => (Ipv6Addr::UNSPECIFIED, 0).into(),
    }
}

/// A UDP socket on `local` with 4 MiB buffers. It blocks: a caller that hands
/// it to an async endpoint sets it non-blocking itself.
pub fn bind_socket(local: SocketAddr) -> std::io::Result<std::net::UdpSocket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::for_address(local), Type::DGRAM, Some(Protocol::UDP))?;
    let _ = s.set_recv_buffer_size(4 << 20);
    let _ = s.set_send_buffer_size(4 << 20);
    s.bind(&local.into())?;
    Ok(s.into())
}

/// The `p` quantile of `sorted` (ns), in µs.
pub fn pct(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)] as f64 / 1000.0
}

/// `{"p50":..,"p90":..,"p99":..,"max":..}` of `v` (ns), in µs.
pub fn dist_json(mut v: Vec<u64>) -> String {
    v.sort_unstable();
    format!(
        "{{\"p50\":{:.1},\"p90\":{:.1},\"p99\":{:.1},\"max\":{:.1}}}",
        pct(&v, 0.5),
        pct(&v, 0.9),
        pct(&v, 0.99),
        pct(&v, 1.0)
    )
}

/// A HELLO for connection `id`: the relay admits a session only once it opens
/// with a valid one (WIRE.md version 3: one channel, a session key, no
/// payload, padded).
pub fn hello_packet(id: u32) -> Vec<u8> {
    let mut hello = vec![0u8; 128];
    hello[0] = 1;
    hello[1..5].copy_from_slice(&id.to_le_bytes());
    hello[5..7].copy_from_slice(&3u16.to_le_bytes());
    hello[7] = 1;
    for (i, b) in hello[9..25].iter_mut().enumerate() {
        // Not secret here: the backend only echoes.
        *b = (id as u8).wrapping_mul(31).wrapping_add(i as u8);
    }
    hello
}

/// Client TLS that trusts only the certificate with SHA-256 `hash` (ALPN h3).
pub fn pinned_tls(hash: [u8; 32]) -> wtransport::tls::rustls::ClientConfig {
    build_default_tls_config(
        Arc::new(wtransport::tls::rustls::RootCertStore::empty()),
        Some(Arc::new(ServerHashVerification::new([Sha256Digest::new(
            hash,
        )]))),
    )
}

/// A bare quinn client config over [`pinned_tls`], with quinn's default transport.
pub fn quinn_client_config(hash: [u8; 32]) -> Result<quinn::ClientConfig, String> {
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(pinned_tls(hash))
        .map_err(|e| e.to_string())?;
    Ok(quinn::ClientConfig::new(Arc::new(crypto)))
}

pub type ClientEndpoint = Endpoint<wtransport::endpoint::endpoint_side::Client>;

/// A WebTransport session to `url`, trusting the certificate with SHA-256
/// `hash`, from `--bind` if given.
pub async fn connect_wt(
    url: &str,
    hash: [u8; 32],
    bind: Option<IpAddr>,
) -> Result<(ClientEndpoint, wtransport::Connection), String> {
    let peer = host_port(url)?;
    // Same as `with_server_certificate_hashes`, plus a larger datagram
    // receive buffer so bursts measure the server rather than this client.
    let mut tc = wtransport::quinn::TransportConfig::default();
    tc.datagram_receive_buffer_size(Some(16 << 20));
    tc.datagram_send_buffer_size(4 << 20);
    let sock = bind_socket(local_addr(peer, bind)).map_err(|e| e.to_string())?;
    sock.set_nonblocking(true).map_err(|e| e.to_string())?;
    let cfg = ClientConfig::builder()
        .with_bind_socket(sock)
        .with_custom_tls_and_transport(pinned_tls(hash), tc)
        .build();
    let ep = Endpoint::client(cfg).map_err(|e| e.to_string())?;
    let conn = ep.connect(url).await.map_err(|e| format!("connect: {e}"))?;
    Ok((ep, conn))
}

/// Sends the HELLO for `id` on `conn` and waits up to 5 s for its echo.
pub async fn wt_hello(conn: &wtransport::Connection, id: u32) -> Result<(), String> {
    conn.send_datagram(hello_packet(id))
        .map_err(|e| format!("hello: {e}"))?;
    tokio::time::timeout(Duration::from_secs(5), conn.receive_datagram())
        .await
        .map_err(|_| "no echo of the HELLO within 5 s".to_string())?
        .map_err(|e| format!("hello echo: {e}"))?;
    Ok(())
}

/// For a bad command line: the error on stderr as `name: e`, exit code 2.
pub fn usage_error(name: &str, e: &str) -> ExitCode {
    eprintln!("{name}: {e}");
    ExitCode::from(2)
}

/// A tokio runtime with two workers; if none can be built, the error on
/// stderr as `name: runtime: e` and exit code 1.
pub fn runtime(name: &str) -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("{name}: runtime: {e}");
            ExitCode::from(1)
        })
}

/// The outcome as one JSON line on stdout: the result itself (exit code 0)
/// or `{"error":"..."}` (exit code 1).
pub fn report(res: Result<String, String>) -> ExitCode {
    match res {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("{{\"error\":{e:?}}}");
            ExitCode::from(1)
        }
    }
}
