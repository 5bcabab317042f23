//! Headless bots for load: each joins a room over UDP (one socket each, like
//! real players), wanders, aims, shoots, and counts the snapshots it gets.
//! Written in Rust on ricochet-native so that thousands fit beside the
//! server on the same machine (a Node bot costs ~10× the CPU).

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use ricochet_native::{ChannelConfig, Config, Event, UdpClient};

use crate::codec::{InputFrame, Message, KEY_DOWN, KEY_LEFT, KEY_RIGHT, KEY_UP, MAX_INPUT_FRAMES};
use crate::net::CH_INPUT;

/// The channels every client declares (see `net`).
pub fn client_config() -> Config {
    Config {
        channels: vec![
            ChannelConfig::unreliable_sequenced(),
            ChannelConfig::unreliable_sequenced(),
            ChannelConfig::reliable_ordered(),
        ],
        // As the browser: the server's ACK delay at 30 Hz snapshots (see
        // arcade-server), so RTT samples subtract it whole; our own ACKs
        // ride on the next 60 Hz input.
        max_ack_delay_us: 40_000,
        ..Config::default()
    }
}

/// xorshift64: bots need variety, not quality.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

pub struct Bot {
    client: UdpClient,
    seq: u16,
    recent: Vec<InputFrame>,
    keys: u8,
    aim: f64,
    change_in: u32,
    rng: Rng,
    pub connected: bool,
    pub closed: bool,
    pub snapshots: u64,
    pub kills_seen: u64,
    /// Inputs sent (60 per second when the bot process keeps up).
    pub inputs: u64,
}

impl Bot {
    pub fn join(server: SocketAddr, room: u8, name: &str, seed: u64) -> io::Result<Bot> {
        let hello = Message::Join {
            room,
            name: name.into(),
        }
        .encode();
        Ok(Bot {
            client: UdpClient::connect(server, client_config(), &hello)?,
            seq: 0,
            recent: Vec::with_capacity(MAX_INPUT_FRAMES),
            keys: 0,
            aim: 0.0,
            change_in: 0,
            rng: Rng(seed | 1),
            connected: false,
            closed: false,
            snapshots: 0,
            kills_seen: 0,
            inputs: 0,
        })
    }

    /// One 1/60 s step: pick what to do, send the input (with the last three
    /// again, as the browser does).
    pub fn step(&mut self) {
        if !self.connected || self.closed {
            return;
        }
        if self.change_in == 0 {
            const MOVES: [u8; 9] = [
                0,
                KEY_UP,
                KEY_DOWN,
                KEY_LEFT,
                KEY_RIGHT,
                KEY_UP | KEY_LEFT,
                KEY_UP | KEY_RIGHT,
                KEY_DOWN | KEY_LEFT,
                KEY_DOWN | KEY_RIGHT,
            ];
            self.keys = MOVES[self.rng.below(MOVES.len() as u64) as usize];
            self.change_in = 30 + self.rng.below(90) as u32;
        }
        self.change_in -= 1;
        self.aim += (self.rng.below(21) as f64 - 10.0) * 0.01;
        let fire = self.rng.below(4) == 0;
        self.seq = self.seq.wrapping_add(1);
        self.recent.insert(
            0,
            InputFrame {
                keys: self.keys,
                fire,
                aim: self.aim,
            },
        );
        self.recent.truncate(MAX_INPUT_FRAMES);
        // The frames are lent to the message and taken back: no copy per input.
        let m = Message::Input {
            seq: self.seq,
            frames: std::mem::take(&mut self.recent),
        };
        let _ = self.client.send(CH_INPUT, m.encode());
        if let Message::Input { frames, .. } = m {
            self.recent = frames;
        }
        self.inputs += 1;
    }

    /// Reads what arrived and sends what is due, without waiting.
    pub fn poll(&mut self) -> io::Result<()> {
        self.client.poll(Duration::ZERO)?;
        while let Some(ev) = self.client.next_event() {
            match ev {
                Event::Connected => self.connected = true,
                Event::Closed(_) => self.closed = true,
                Event::Message { data, .. } => match Message::decode(&data) {
                    Ok(Message::Snapshot { .. }) => self.snapshots += 1,
                    Ok(Message::Kill { .. }) => self.kills_seen += 1,
                    _ => {}
                },
                _ => {}
            }
        }
        Ok(())
    }

    pub fn close(&mut self) {
        self.client.close(0, "bot done");
        let _ = self.client.poll(Duration::ZERO);
    }
}

/// Runs `count` bots on this thread at 60 Hz until `until`, joining
/// `ramp_per_tick` new ones per tick from `make`. Counters restart once all
/// have joined; returns the bots and that moment (the steady state's start).
pub fn run_bots(
    mut make: impl FnMut(usize) -> io::Result<Bot>,
    count: usize,
    ramp_per_tick: usize,
    until: Instant,
) -> io::Result<(Vec<Bot>, Instant)> {
    let period = Duration::from_secs(1) / 60;
    let mut bots: Vec<Bot> = Vec::with_capacity(count);
    let mut next = Instant::now();
    let mut steady_since = None;
    while Instant::now() < until {
        for _ in 0..ramp_per_tick.max(1) {
            if bots.len() < count {
                bots.push(make(bots.len())?);
            }
        }
        if steady_since.is_none() && bots.len() == count {
            for b in bots.iter_mut() {
                (b.snapshots, b.inputs) = (0, 0);
            }
            steady_since = Some(Instant::now());
        }
        for b in bots.iter_mut() {
            b.step();
            b.poll()?;
        }
        next += period;
        let now = Instant::now();
        if next > now {
            // One read per bot per step: the socket buffers what arrives
            // meanwhile, and the bots leave the CPU to the server.
            std::thread::sleep(next - now);
        } else if now > next + 10 * period {
            next = now; // far behind: drop steps rather than burst
        }
    }
    for b in bots.iter_mut() {
        b.close();
    }
    Ok((bots, steady_since.unwrap_or(until)))
}
