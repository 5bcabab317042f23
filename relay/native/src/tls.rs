//! TLS and QUIC configuration, the UDP socket, address resolution.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use sha2::{Digest, Sha256};
use wtransport::quinn;
use wtransport::tls::rustls;

use crate::state::*;

pub(crate) const SELF_SIGNED_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

pub(crate) fn hex(bytes: &[u8]) -> String {
    const H: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(H[(b >> 4) as usize] as char);
        s.push(H[(b & 15) as usize] as char);
    }
    s
}

/// Builds the TLS config (TLS 1.3 only, ALPN h3) from PEM strings or a fresh
/// self-signed ECDSA P-256 certificate valid 14 days. Never panics on bad
/// input: a key that does not match the certificate is an `Err`.
pub(crate) fn make_tls(
    pem: Option<(&str, &str)>,
) -> std::result::Result<(rustls::ServerConfig, CertInfo), String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};

    let (certs, key): (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) = match pem {
        None => {
            let id = wtransport::Identity::self_signed(SELF_SIGNED_NAMES)
                .map_err(|e| format!("self-signed certificate: {e}"))?;
            let certs = id
                .certificate_chain()
                .as_slice()
                .iter()
                .map(|c| CertificateDer::from(c.der().to_vec()))
                .collect();
            let key = PrivateKeyDer::Pkcs8(id.private_key().secret_der().to_vec().into());
            (certs, key)
        }
        Some((cert_pem, key_pem)) => {
            let certs = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| format!("certPem: {e}"))?;
            if certs.is_empty() {
                return Err("certPem: no CERTIFICATE section".into());
            }
            let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
                .map_err(|e| format!("keyPem: {e}"))?;
            (certs, key)
        }
    };

    let leaf = certs.first().ok_or("no certificate")?;
    let hashes = vec![hex(&Sha256::digest(leaf.as_ref()))];
    let valid_until_ms = match x509_parser::parse_x509_certificate(leaf.as_ref()) {
        Ok((_, c)) => c.validity().not_after.timestamp() as f64 * 1000.0,
        Err(e) => return Err(format!("certificate: {e}")),
    };

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("tls: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("tls: {e}"))?;
    tls.alpn_protocols = vec![wtransport::tls::WEBTRANSPORT_ALPN.to_vec()];
    Ok((
        tls,
        CertInfo {
            hashes,
            valid_until_ms,
        },
    ))
}

/// Stream budgets. The relay moves only datagrams, so streams carry HTTP/3
/// alone: the client's extended CONNECT (one bidi stream) and its control,
/// QPACK encoder and decoder streams (three uni, plus one spare: HTTP/3
/// allows reserved GREASE stream types). quinn's defaults (100 + 100
/// streams, 1.25 MB windows) would let every peer park megabytes of stream
/// data in the relay for nothing. Datagrams are not flow-controlled, so
/// these windows do not limit them. Chromium works within this budget.
pub(crate) const MAX_BIDI_STREAMS: u32 = 1;
pub(crate) const MAX_UNI_STREAMS: u32 = 4;
/// Per stream: HTTP/3 SETTINGS and CONNECT headers are well under 4 KiB.
pub(crate) const STREAM_WINDOW: u32 = 16 * 1024;
/// Whole connection, receive and unacknowledged send.
pub(crate) const CONN_WINDOW: u32 = 32 * 1024;

pub(crate) fn quic_crypto(
    tls: rustls::ServerConfig,
) -> std::result::Result<Arc<quinn::crypto::rustls::QuicServerConfig>, String> {
    Ok(Arc::new(
        quinn::crypto::rustls::QuicServerConfig::try_from(tls).map_err(|e| e.to_string())?,
    ))
}

pub(crate) fn quic_server_config(
    cfg: &Cfg,
    tls: rustls::ServerConfig,
) -> std::result::Result<quinn::ServerConfig, String> {
    let mut sc = quinn::ServerConfig::with_crypto(quic_crypto(tls)?);
    let mut tc = quinn::TransportConfig::default();
    tc.max_idle_timeout(Some(
        quinn::IdleTimeout::try_from(cfg.idle_timeout)
            .map_err(|e| format!("idleTimeoutMs: {e}"))?,
    ));
    tc.keep_alive_interval(cfg.keep_alive);
    tc.datagram_receive_buffer_size(Some(2 * 1024 * 1024));
    tc.datagram_send_buffer_size(1024 * 1024);
    tc.max_concurrent_bidi_streams(MAX_BIDI_STREAMS.into());
    tc.max_concurrent_uni_streams(MAX_UNI_STREAMS.into());
    tc.stream_receive_window(STREAM_WINDOW.into());
    tc.receive_window(CONN_WINDOW.into());
    tc.send_window(CONN_WINDOW.into());
    sc.transport_config(Arc::new(tc));
    sc.migration(true);
    Ok(sc)
}

pub(crate) fn bind_udp(
    addr: SocketAddr,
    buf: usize,
) -> std::io::Result<(std::net::UdpSocket, usize, usize)> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if addr.is_ipv6() && addr.ip().is_unspecified() {
        let _ = s.set_only_v6(false);
    }
    let _ = s.set_recv_buffer_size(buf);
    let _ = s.set_send_buffer_size(buf);
    s.set_nonblocking(true)?;
    s.bind(&addr.into())?;
    let rb = s.recv_buffer_size().unwrap_or(0);
    let sb = s.send_buffer_size().unwrap_or(0);
    Ok((s.into(), rb, sb))
}

pub(crate) fn resolve(host: &str, port: u16) -> std::result::Result<SocketAddr, String> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("host {host}: {e}"))?
        .next()
        .ok_or_else(|| format!("host {host}: no address"))
}
