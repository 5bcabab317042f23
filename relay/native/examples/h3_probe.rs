//! A bare HTTP/3 client over quinn, used by `test/wt.test.mjs` to check what
//! the WebTransport server says in HTTP/3 and what it asks of a browser,
//! without wtransport's own client (which would hide both).
//!
//! It connects to `127.0.0.1:--port` (ALPN h3, the certificate pinned by
//! `--hash`), reads the server's control stream and reports its SETTINGS
//! frame as sent: every identifier and value, in order, unknown ones too.
//! With `--settings ID=V,...` (hex or decimal, e.g. the settings a Safari
//! sends) it then sends exactly those client SETTINGS on its own control
//! stream, opens a session at `--path` with an extended CONNECT
//! (`:protocol webtransport` and an Origin, as browsers send), and reports
//! the `:status` and whether an HTTP/3 datagram sent on the session came
//! back (the tests run it against an echo server).
//!
//! cargo build --release --example h3_probe
//! target/release/examples/h3_probe --port 4433 --hash <hex> [--settings 0x33=1,0xc671706a=1] [--path /echo]
//!
//! Prints one JSON line: {"serverSettings":[["0x1",0],...],"status":"200","datagramEchoed":true}.

mod common;

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use wtransport::quinn;

/// What the caller asked for.
struct Args {
    port: u16,
    hash: [u8; 32],
    path: String,
    /// Client SETTINGS to send (identifier, value); None: only read the server's.
    settings: Option<Vec<(u64, u64)>>,
    wait: Duration,
}

/// A number in hex (`0x...`) or decimal.
fn num(t: &str) -> Option<u64> {
    match t.trim().strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => t.trim().parse().ok(),
    }
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        port: 0,
        hash: [0; 32],
        path: "/echo".into(),
        settings: None,
        wait: Duration::from_secs(5),
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().ok_or(format!("{k} needs a value"))?;
        match k.as_str() {
            "--port" => a.port = v.parse().map_err(|_| "bad --port")?,
            "--path" => a.path = v,
            "--wait-ms" => a.wait = Duration::from_millis(v.parse().map_err(|_| "bad --wait-ms")?),
            "--hash" => a.hash = common::parse_hex(&v).ok_or("--hash needs 64 hex digits")?,
            "--settings" => {
                let mut pairs = Vec::new();
                for kv in v.split(',').filter(|t| !t.trim().is_empty()) {
                    let (id, val) = kv.split_once('=').ok_or(format!("bad setting {kv}"))?;
                    pairs.push((
                        num(id).ok_or(format!("bad id {id}"))?,
                        num(val).ok_or(format!("bad value {val}"))?,
                    ));
                }
                a.settings = Some(pairs);
            }
            _ => return Err(format!("unknown argument {k}")),
        }
    }
    if a.port == 0 {
        return Err("--port and --hash are required".into());
    }
    Ok(a)
}

/// A QUIC varint (RFC 9000, section 16).
fn put_varint(out: &mut Vec<u8>, v: u64) {
    match v {
        0..=0x3f => out.push(v as u8),
        0x40..=0x3fff => out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes()),
        0x4000..=0x3fff_ffff => out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes()),
        _ => out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
    }
}

/// The QUIC varint at the start of `b`: (value, its length), or None if cut short.
fn get_varint(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    let len = 1usize << (first >> 6);
    let bytes = b.get(..len)?;
    let v = bytes[1..]
        .iter()
        .fold(u64::from(first & 0x3f), |v, &x| (v << 8) | u64::from(x));
    Some((v, len))
}

/// The first whole HTTP/3 frame in `b`: (type, payload).
fn get_frame(b: &[u8]) -> Option<(u64, &[u8])> {
    let (ty, n1) = get_varint(b)?;
    let (len, n2) = get_varint(&b[n1..])?;
    let start = n1 + n2;
    Some((
        ty,
        b.get(start..start.checked_add(usize::try_from(len).ok()?)?)?,
    ))
}

/// Reads `s` into `b` until `done(b)`; an error if the stream ends first.
async fn read_until(
    s: &mut quinn::RecvStream,
    b: &mut Vec<u8>,
    done: impl Fn(&[u8]) -> bool,
) -> Result<(), String> {
    let mut chunk = [0u8; 512];
    while !done(b) {
        match s.read(&mut chunk).await.map_err(|e| e.to_string())? {
            Some(n) => b.extend_from_slice(&chunk[..n]),
            None => return Err(format!("stream ended after {} bytes", b.len())),
        }
    }
    Ok(())
}

/// The server's SETTINGS (RFC 9114, 6.2.1 and 7.2.4): the first frame on the
/// unidirectional stream of type 0x00, as `["0xID",value]` JSON pairs in order.
/// The server's streams go to `keep`: dropping one would stop it, and a
/// stopped control stream is a connection error (H3_CLOSED_CRITICAL_STREAM).
async fn server_settings(
    conn: &quinn::Connection,
    keep: &mut Vec<quinn::RecvStream>,
) -> Result<String, String> {
    loop {
        keep.push(conn.accept_uni().await.map_err(|e| e.to_string())?);
        let s = keep.last_mut().ok_or("no stream")?;
        let mut b = Vec::new();
        read_until(s, &mut b, |b| get_varint(b).is_some()).await?;
        let Some((0x00, skip)) = get_varint(&b) else {
            continue; // a QPACK encoder or decoder stream
        };
        read_until(s, &mut b, |b| get_frame(&b[skip..]).is_some()).await?;
        let (ty, mut p) = get_frame(&b[skip..]).ok_or("no frame")?;
        if ty != 0x04 {
            return Err(format!(
                "the control stream opens with frame 0x{ty:x}, not SETTINGS"
            ));
        }
        let mut pairs = Vec::new();
        while !p.is_empty() {
            let (id, n1) = get_varint(p).ok_or("SETTINGS: identifier cut short")?;
            let (v, n2) = get_varint(&p[n1..]).ok_or("SETTINGS: value cut short")?;
            pairs.push(format!("[\"0x{id:x}\",{v}]"));
            p = &p[n1 + n2..];
        }
        return Ok(pairs.join(","));
    }
}

/// Sends `settings` as our SETTINGS, opens a session at `url`, and sends one
/// datagram on it: (":status", whether the datagram came back unchanged).
async fn open_session(
    conn: &quinn::Connection,
    url: &str,
    settings: &[(u64, u64)],
    wait: Duration,
) -> Result<(String, bool), String> {
    // Our control stream: type 0x00, then a SETTINGS frame with exactly these pairs.
    let mut payload = Vec::new();
    for &(id, v) in settings {
        put_varint(&mut payload, id);
        put_varint(&mut payload, v);
    }
    let mut ctrl = vec![0x00, 0x04];
    put_varint(&mut ctrl, payload.len() as u64);
    ctrl.extend_from_slice(&payload);
    let mut ctrl_stream = conn.open_uni().await.map_err(|e| e.to_string())?;
    ctrl_stream
        .write_all(&ctrl)
        .await
        .map_err(|e| e.to_string())?;

    // The extended CONNECT (RFC 9220) in a HEADERS frame, QPACK-encoded.
    let mut req =
        wtransport::proto::session::SessionRequest::new(url).map_err(|e| format!("{e:?}"))?;
    req.insert("origin", "https://game.example")
        .map_err(|e| format!("{e:?}"))?;
    let mut headers = Vec::new();
    req.headers()
        .generate_frame()
        .write(&mut headers)
        .map_err(|e| format!("{e:?}"))?;
    let (mut send, mut recv) = conn.open_bi().await.map_err(|e| e.to_string())?;
    send.write_all(&headers).await.map_err(|e| e.to_string())?;

    let mut b = Vec::new();
    tokio::time::timeout(
        wait,
        read_until(&mut recv, &mut b, |b| get_frame(b).is_some()),
    )
    .await
    .map_err(|_| "no CONNECT response in time".to_string())??;
    let (ty, p) = get_frame(&b).ok_or("no frame")?;
    if ty != 0x01 {
        return Err(format!(
            "the response opens with frame 0x{ty:x}, not HEADERS"
        ));
    }
    let h = wtransport::proto::qpack::Decoder::decode(p).map_err(|e| format!("qpack: {e:?}"))?;
    let status = h.get(":status").cloned().unwrap_or_default();
    if status != "200" {
        return Ok((status, false));
    }

    // An HTTP/3 datagram (RFC 9297): the quarter stream ID of the CONNECT
    // stream (client bidi stream N has ID 4N, so N), then the payload.
    let mut d = Vec::new();
    put_varint(&mut d, send.id().index());
    d.extend_from_slice(b"ricochet h3 probe");
    conn.send_datagram(d.clone().into())
        .map_err(|e| format!("datagram: {e}"))?;
    let echoed = matches!(
        tokio::time::timeout(wait, conn.read_datagram()).await,
        Ok(Ok(r)) if r[..] == d[..]
    );
    drop(ctrl_stream);
    Ok((status, echoed))
}

async fn run(a: Args) -> Result<String, String> {
    let peer = SocketAddr::from((Ipv4Addr::LOCALHOST, a.port));
    let cc = common::quinn_client_config(a.hash)?;
    let mut ep =
        quinn::Endpoint::client((Ipv4Addr::LOCALHOST, 0).into()).map_err(|e| e.to_string())?;
    ep.set_default_client_config(cc);
    let conn = ep
        .connect(peer, "localhost")
        .map_err(|e| e.to_string())?
        .await
        .map_err(|e| format!("quic connect: {e}"))?;

    let mut server_streams = Vec::new();
    let settings = tokio::time::timeout(a.wait, server_settings(&conn, &mut server_streams))
        .await
        .map_err(|_| "no server SETTINGS in time".to_string())??;
    let mut out = format!("{{\"serverSettings\":[{settings}]");
    if let Some(ours) = &a.settings {
        let url = format!("https://127.0.0.1:{}{}", a.port, a.path);
        let (status, echoed) =
            open_session(&conn, &url, ours, a.wait).await.map_err(|e| {
                match conn.close_reason() {
                    Some(why) => format!("{e}: {why}"),
                    None => e,
                }
            })?;
        out += &format!(",\"status\":{status:?},\"datagramEchoed\":{echoed}");
    }
    conn.close(0u32.into(), b"probe done");
    drop(server_streams);
    let _ = tokio::time::timeout(Duration::from_millis(300), ep.wait_idle()).await;
    Ok(out + "}")
}

fn main() -> std::process::ExitCode {
    let res = parse_args().and_then(|a| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?
            .block_on(run(a))
    });
    common::report(res)
}
