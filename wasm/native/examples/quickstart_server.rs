//! The quick start's game server (`docs/quickstart.md`, `server.mjs`) in
//! Rust: the same channels, the same messages, behind the same relay.
//!
//! ```sh
//! RICOCHET_RELAY_TOKEN_SECRET=… cargo run --release -p ricochet-native --example quickstart_server
//! ```
//!
//! UDP on 127.0.0.1:4000. Admits only players the relay admitted (it shares
//! the relay's token secret), refuses a client whose channel layout differs,
//! welcomes each player, broadcasts every chat line and tells each player
//! once a second how many of its inputs arrived. Connect tokens are minted
//! wherever players log in (`mintToken` from `@ricochet/relay`, or any
//! HMAC-SHA256: see the README's "Connect tokens"); the quick start's
//! `server.mjs` does that beside its own game server.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use ricochet_native::{
    attest_key, AcceptPolicy, ChannelConfig, Config, Event, ServerConfig, UdpServer,
};

const CHAT: u8 = 0;
const INPUT: u8 = 1;

fn main() -> std::io::Result<()> {
    let secret = std::env::var("RICOCHET_RELAY_TOKEN_SECRET")
        .map_err(|_| std::io::Error::other("set RICOCHET_RELAY_TOKEN_SECRET (the relay's)"))?;
    let config = ServerConfig {
        connection: Config {
            channels: vec![
                ChannelConfig::reliable_ordered(),
                ChannelConfig::unreliable_sequenced(),
            ],
            ..Config::default()
        },
        strict_channels: true, // a client with another layout is refused
        relay_key: Some(attest_key(secret.as_bytes())), // only players the relay admitted, with their claims
        ..ServerConfig::default()
    };
    let mut server = UdpServer::bind("127.0.0.1:4000", config)?;
    server.set_accept_policy(AcceptPolicy::AcceptAll);
    println!("game server on udp {}", server.local_addr()?);

    let mut names: HashMap<u32, String> = HashMap::new();
    let mut inputs: HashMap<u32, u64> = HashMap::new();
    let mut next_report = Instant::now();
    loop {
        server.poll(Duration::from_millis(20))?;
        while let Some((id, event)) = server.next_event() {
            match event {
                Event::Connected => {
                    // The relay-verified claims: {"sub":"player-1"} (and "data" if the token had it).
                    let claims = server
                        .claims(id)
                        .map(|c| String::from_utf8_lossy(c).into_owned())
                        .unwrap_or_default();
                    let name = claims
                        .split("\"sub\":\"")
                        .nth(1)
                        .and_then(|s| s.split('"').next())
                        .unwrap_or("?")
                        .to_owned();
                    println!("{name} joined");
                    let _ = server.send(id, CHAT, format!("welcome, {name}").into_bytes());
                    names.insert(id, name);
                }
                Event::Message { channel: INPUT, .. } => *inputs.entry(id).or_default() += 1,
                Event::Message { data, .. } => {
                    let line = format!(
                        "{}: {}",
                        names.get(&id).map_or("?", String::as_str),
                        String::from_utf8_lossy(&data)
                    );
                    println!("{line}");
                    server.broadcast(CHAT, line.as_bytes());
                }
                Event::Closed(_) => {
                    names.remove(&id);
                    inputs.remove(&id);
                }
                _ => {}
            }
        }
        if next_report.elapsed() >= Duration::from_secs(1) {
            next_report = Instant::now();
            for (&id, n) in &inputs {
                let _ = server.send(
                    id,
                    CHAT,
                    format!("the server has {n} of your inputs").into_bytes(),
                );
            }
        }
    }
}
