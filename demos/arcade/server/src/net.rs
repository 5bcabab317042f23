//! Rooms served on one `UdpServer` at a fixed tick rate. A shard is one
//! thread with its own socket (the native driver is single-threaded by
//! design); rooms live on shard `room % shards`.
//!
//! Channels, as every client declares them: 0 input (unreliable-sequenced),
//! 1 state (unreliable-sequenced snapshots), 2 events (reliable-ordered:
//! welcome, joins, leaves, kills, chat).

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ricochet_native::{AcceptPolicy, ConnectionId, Event, ServerConfig, UdpServer};

use crate::codec::{encode_snapshot_header, Message, MAX_CHAT_BYTES};
use crate::game::room::Room;
use crate::game::sim::TICK_HZ;
use crate::snapshot_turns::SnapshotTurns;

/// One 60 Hz tick.
pub const TICK_PERIOD: Duration = Duration::from_nanos(1_000_000_000 / TICK_HZ as u64);

/// When shard `index` of `shards` first ticks, given the server's `start`.
pub fn tick_phase(start: Instant, index: u32, shards: u32) -> Instant {
    start + TICK_PERIOD + TICK_PERIOD * index / shards.max(1)
}

pub const CH_INPUT: u8 = 0;
pub const CH_STATE: u8 = 1;
pub const CH_EVENTS: u8 = 2;

/// What a shard reports to whoever prints statistics.
#[derive(Default)]
pub struct ShardStats {
    pub players: AtomicU64,
    pub rooms: AtomicU64,
    pub ticks: AtomicU64,
    /// Ticks that started more than one period late.
    pub late_ticks: AtomicU64,
    pub bad_messages: AtomicU64,
    /// Tick durations (µs, wall clock) since the last `take_tick_times`,
    /// each with the CPU time the shard's thread spent in it (µs): a tick
    /// much longer than its CPU time waited for a core.
    tick_times: Mutex<Vec<(u32, u32)>>,
}

impl ShardStats {
    pub fn take_tick_times(&self) -> Vec<(u32, u32)> {
        std::mem::take(&mut *self.tick_times.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// CPU time of the calling thread, µs (0 where unsupported).
pub fn thread_cpu_us() -> u64 {
    #[cfg(unix)]
    {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes only into `t`.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0 {
            return t.tv_sec as u64 * 1_000_000 + t.tv_nsec as u64 / 1_000;
        }
    }
    0
}

pub struct ShardOptions {
    /// Snapshots per second (a divisor of the 60 Hz tick rate).
    pub snapshot_hz: u32,
    /// Between ticks, read the socket this often (0 = wake on every
    /// datagram). Acknowledgements leave up to this much later.
    pub read_every: Duration,
    /// How long an acknowledgement may wait for a snapshot to ride on, µs
    /// (the core's default, 5 ms, means one ACK datagram per 60 Hz input).
    pub max_ack_delay_us: u64,
    /// Inputs after which an ACK leaves at once instead of waiting (the
    /// core's default, 2, sends an ACK datagram for every 2 inputs: with
    /// 30 Hz snapshots, as many datagrams again as the snapshots).
    pub ack_eliciting_threshold: u32,
}

impl ShardOptions {
    /// Options under which every acknowledgement rides on a snapshot: ACKs
    /// wait one snapshot period plus a margin for a late tick, and only
    /// more inputs than arrive between two snapshots make one leave at once.
    pub fn acks_on_snapshots(snapshot_hz: u32, read_every: Duration) -> ShardOptions {
        let hz = snapshot_hz.clamp(1, TICK_HZ);
        ShardOptions {
            snapshot_hz: hz,
            read_every,
            max_ack_delay_us: 1_000_000 / hz as u64 + 6_000,
            ack_eliciting_threshold: TICK_HZ / hz + 2,
        }
    }
}

struct Seat {
    room: u8,
    id: u8,
}

pub struct Shard {
    udp: UdpServer,
    rooms: HashMap<u8, Room>,
    seats: HashMap<ConnectionId, Seat>,
    /// Accepted joins waiting for `Connected`.
    joining: HashMap<ConnectionId, (u8, String)>,
    /// Who sits where, per room, for sending.
    members: HashMap<u8, Vec<(ConnectionId, u8)>>,
    tick: u32,
    turns: SnapshotTurns,
    read_every: Duration,
    stats: Arc<ShardStats>,
}

impl Shard {
    pub fn bind(
        host: &str,
        port: u16,
        o: &ShardOptions,
        stats: Arc<ShardStats>,
    ) -> io::Result<Shard> {
        let mut config = ServerConfig::default();
        config.connection.max_ack_delay_us = o.max_ack_delay_us;
        config.connection.ack_eliciting_threshold = o.ack_eliciting_threshold;
        let mut udp = UdpServer::bind((host, port), config)?;
        udp.set_accept_policy(AcceptPolicy::Manual);
        let snapshot_every = (TICK_HZ / o.snapshot_hz.clamp(1, TICK_HZ)).max(1);
        Ok(Shard {
            udp,
            rooms: HashMap::new(),
            seats: HashMap::new(),
            joining: HashMap::new(),
            members: HashMap::new(),
            tick: 0,
            turns: SnapshotTurns::new(snapshot_every),
            read_every: o.read_every,
            stats,
        })
    }

    pub fn port(&self) -> io::Result<u16> {
        Ok(self.udp.local_addr()?.port())
    }

    /// Ticks at 60 Hz until `stop`, then closes every connection.
    pub fn run(&mut self, stop: &AtomicBool) -> io::Result<()> {
        self.run_from(stop, Instant::now() + TICK_PERIOD)
    }

    /// `run` with the first tick at `first_tick`: shards of one server start
    /// a fraction of a period apart (`tick_phase`) so that their ticks, which
    /// are mostly snapshot sends, do not contend for the cores at once.
    pub fn run_from(&mut self, stop: &AtomicBool, first_tick: Instant) -> io::Result<()> {
        let period = TICK_PERIOD;
        let mut next = first_tick;
        while !stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            if now < next {
                // Sleep between reads so datagrams are read in batches, not
                // one wake-up each (inputs are only used at the tick anyway).
                std::thread::sleep(self.read_every.min(next - now));
                self.udp.poll(Duration::ZERO)?;
                self.handle_events();
                continue;
            }
            if now > next + period {
                self.stats.late_ticks.fetch_add(1, Ordering::Relaxed);
            }
            let (started, cpu_started) = (Instant::now(), thread_cpu_us());
            self.udp.poll(Duration::ZERO)?;
            self.handle_events();
            self.tick();
            let took = started.elapsed().as_micros().min(u32::MAX as u128) as u32;
            let cpu = thread_cpu_us()
                .saturating_sub(cpu_started)
                .min(u32::MAX as u64) as u32;
            self.stats
                .tick_times
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((took, cpu));
            self.stats.ticks.fetch_add(1, Ordering::Relaxed);
            next += period;
            if Instant::now() > next + 10 * period {
                next = Instant::now() + period; // hopelessly behind: skip, do not spiral
            }
        }
        for id in self.udp.connection_ids() {
            self.udp.close(id, 0, "server shutting down");
        }
        let deadline = Instant::now() + Duration::from_millis(200);
        while self.udp.connection_count() > 0 && Instant::now() < deadline {
            self.udp.poll(Duration::from_millis(10))?;
            self.udp.events().for_each(drop);
        }
        Ok(())
    }

    fn handle_events(&mut self) {
        while let Some((conn, ev)) = self.udp.next_event() {
            match ev {
                Event::ConnectRequest { payload } => match Message::decode(&payload) {
                    Ok(Message::Join { room, name }) => {
                        if self
                            .rooms
                            .get(&room)
                            .is_some_and(|r| r.player_count() >= crate::codec::MAX_PLAYERS)
                        {
                            self.udp.reject(conn, "room full");
                        } else {
                            self.udp.accept(conn);
                            self.joining.insert(conn, (room, name));
                        }
                    }
                    Ok(_) => {
                        self.udp.reject(conn, "bad join: expected a join message");
                    }
                    Err(e) => {
                        self.udp.reject(conn, &format!("bad join: {e}"));
                    }
                },
                Event::Connected => self.seat(conn),
                Event::Message { channel, data } => self.on_message(conn, channel, &data),
                Event::Closed(_) => self.unseat(conn),
                Event::Acked(_) | Event::Lost(_) => {}
            }
        }
    }

    fn seat(&mut self, conn: ConnectionId) {
        let Some((room_id, name)) = self.joining.remove(&conn) else {
            return;
        };
        self.turns.add(room_id);
        let room = self
            .rooms
            .entry(room_id)
            .or_insert_with(|| Room::new(room_id));
        let Some(id) = room.join(&name) else {
            self.udp.close(conn, 4001, "room full");
            return;
        };
        let mut to_new = vec![room.welcome(id)];
        to_new.extend(room.players().map(|p| Message::PlayerJoined {
            id: p.id,
            name: p.name.clone(),
            kills: p.kills,
            deaths: p.deaths,
        }));
        for m in to_new {
            let _ = self.udp.send(conn, CH_EVENTS, m.encode());
        }
        let name = room.player(id).map(|p| p.name.clone()).unwrap_or(name);
        let joined = Message::PlayerJoined {
            id,
            name,
            kills: 0,
            deaths: 0,
        }
        .encode();
        let members = self.members.entry(room_id).or_default();
        for &(other, _) in members.iter() {
            let _ = self.udp.send(other, CH_EVENTS, joined.clone());
        }
        members.push((conn, id));
        self.seats.insert(conn, Seat { room: room_id, id });
        self.stats.players.fetch_add(1, Ordering::Relaxed);
        self.stats
            .rooms
            .store(self.rooms.len() as u64, Ordering::Relaxed);
    }

    fn unseat(&mut self, conn: ConnectionId) {
        self.joining.remove(&conn);
        let Some(seat) = self.seats.remove(&conn) else {
            return;
        };
        if let Some(room) = self.rooms.get_mut(&seat.room) {
            room.leave(seat.id);
            if room.player_count() == 0 {
                self.rooms.remove(&seat.room);
                self.turns.remove(seat.room);
            }
        }
        if let Some(members) = self.members.get_mut(&seat.room) {
            members.retain(|&(c, _)| c != conn);
            let left = Message::PlayerLeft { id: seat.id }.encode();
            for &(other, _) in members.iter() {
                let _ = self.udp.send(other, CH_EVENTS, left.clone());
            }
            if members.is_empty() {
                self.members.remove(&seat.room);
            }
        }
        self.stats.players.fetch_sub(1, Ordering::Relaxed);
        self.stats
            .rooms
            .store(self.rooms.len() as u64, Ordering::Relaxed);
    }

    /// Bad bytes from a client are counted and dropped; the session lives on.
    fn on_message(&mut self, conn: ConnectionId, channel: u8, data: &[u8]) {
        let Some(seat) = self.seats.get(&conn) else {
            return;
        };
        let (room_id, id) = (seat.room, seat.id);
        match (channel, Message::decode(data)) {
            (CH_INPUT, Ok(Message::Input { seq, frames })) => {
                if let Some(room) = self.rooms.get_mut(&room_id) {
                    room.receive_input(id, seq, &frames);
                }
            }
            (CH_EVENTS, Ok(Message::Chat { text })) => {
                let text: String = text.chars().filter(|c| !c.is_control()).collect();
                let m = Message::ChatFrom {
                    from: id,
                    text: text.chars().take(MAX_CHAT_BYTES).collect(),
                }
                .encode();
                for &(other, _) in self.members.get(&room_id).into_iter().flatten() {
                    let _ = self.udp.send(other, CH_EVENTS, m.clone());
                }
            }
            _ => {
                self.stats.bad_messages.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn tick(&mut self) {
        self.tick = self.tick.wrapping_add(1);
        for (room_id, room) in self.rooms.iter_mut() {
            // Rooms take turns: each tick sends a share of the snapshots
            // instead of all of them every `snapshot_every` ticks.
            let snapshot = self.turns.is_due(*room_id, self.tick);
            let events = room.tick();
            let members = self.members.get(room_id).map(Vec::as_slice).unwrap_or(&[]);
            for m in events {
                let bytes = m.encode();
                for &(conn, _) in members {
                    let _ = self.udp.send(conn, CH_EVENTS, bytes.clone());
                }
            }
            if snapshot {
                let body = room.snapshot_body();
                for &(conn, id) in members {
                    let ack = room.player(id).map_or(0, |p| p.last_applied);
                    let mut out = Vec::with_capacity(body.len() + 7);
                    out.extend_from_slice(&encode_snapshot_header(self.tick, ack));
                    out.extend_from_slice(&body);
                    // Unreliable: a full send buffer just skips this one.
                    let _ = self.udp.send(conn, CH_STATE, out);
                }
            }
        }
        self.udp.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_first_tick_evenly_spread_over_one_period() {
        let start = Instant::now();
        let firsts: Vec<Instant> = (0..4).map(|i| tick_phase(start, i, 4)).collect();
        assert_eq!(firsts[0] - start, TICK_PERIOD);
        for pair in firsts.windows(2) {
            let gap = (pair[1] - pair[0]).as_nanos() as i128;
            let quarter = (TICK_PERIOD / 4).as_nanos() as i128;
            assert!(
                (gap - quarter).abs() <= 1,
                "gap {gap} ns, a quarter period is {quarter} ns"
            );
        }
    }

    #[test]
    fn a_single_shard_ticks_one_period_after_start() {
        let start = Instant::now();
        assert_eq!(tick_phase(start, 0, 1) - start, TICK_PERIOD);
    }
}
