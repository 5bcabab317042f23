//! One room's authoritative state: players (32 ids), bullets, hits, scores.
//! No I/O: `net` feeds it inputs and sends what it produces.

use std::collections::VecDeque;

use super::map::{HEIGHT, SPAWNS, WALLS, WIDTH};
use super::sim::{
    bullet_blocked, move_player, BULLET_RADIUS, BULLET_STEP, BULLET_TICKS, FIRE_COOLDOWN_TICKS,
    PLAYER_HALF, RESPAWN_TICKS,
};
use crate::codec::{
    encode_snapshot_body, BulletState, InputFrame, Message, PlayerState, MAX_BULLETS, MAX_HP,
    MAX_PLAYERS,
};

/// Inputs held per player; beyond it the oldest are dropped (a client
/// running far ahead would otherwise build up latency).
const MAX_QUEUED_INPUTS: usize = 8;
/// With more than this many queued, two are applied per tick to catch up.
const CATCH_UP_ABOVE: usize = 3;

pub struct Player {
    pub id: u8,
    pub name: String,
    pub x: f64,
    pub y: f64,
    pub aim: f64,
    pub hp: u8,
    pub alive: bool,
    pub kills: u16,
    pub deaths: u16,
    respawn_in: u32,
    cooldown: u32,
    inputs: VecDeque<(u16, InputFrame)>,
    last_received: Option<u16>,
    /// The newest input applied: sent back as the snapshot's `ack`.
    pub last_applied: u16,
}

struct Bullet {
    owner: u8,
    x: f64,
    y: f64,
    dx: f64,
    dy: f64,
    ticks_left: u32,
}

/// `a` is newer than `b` in wrapping u16 sequence space.
fn newer(a: u16, b: u16) -> bool {
    (a.wrapping_sub(b) as i16) > 0
}

pub struct Room {
    pub id: u8,
    players: Vec<Option<Player>>,
    bullets: Vec<Bullet>,
    next_spawn: usize,
}

impl Room {
    pub fn new(id: u8) -> Room {
        Room {
            id,
            players: (0..MAX_PLAYERS).map(|_| None).collect(),
            bullets: Vec::new(),
            next_spawn: 0,
        }
    }

    pub fn player_count(&self) -> usize {
        self.players.iter().filter(|p| p.is_some()).count()
    }

    pub fn players(&self) -> impl Iterator<Item = &Player> {
        self.players.iter().flatten()
    }

    pub fn player(&self, id: u8) -> Option<&Player> {
        self.players.get(id as usize).and_then(|p| p.as_ref())
    }

    /// The welcome for player `you`: the map.
    pub fn welcome(&self, you: u8) -> Message {
        Message::Welcome {
            you,
            room: self.id,
            tick_hz: super::sim::TICK_HZ as u8,
            width: WIDTH,
            height: HEIGHT,
            walls: WALLS.to_vec(),
        }
    }

    /// Adds a player at the next spawn point; None if the room is full.
    pub fn join(&mut self, name: &str) -> Option<u8> {
        let slot = self.players.iter().position(|p| p.is_none())?;
        let (x, y) = self.take_spawn();
        // Control characters would garble every scoreboard; a blank name gets one.
        let clean: String = name
            .chars()
            .filter(|c| !c.is_control())
            .collect::<String>()
            .trim()
            .to_string();
        self.players[slot] = Some(Player {
            id: slot as u8,
            name: if clean.is_empty() {
                format!("player {}", slot + 1)
            } else {
                clean
            },
            x,
            y,
            aim: 0.0,
            hp: MAX_HP,
            alive: true,
            kills: 0,
            deaths: 0,
            respawn_in: 0,
            cooldown: 0,
            inputs: VecDeque::new(),
            last_received: None,
            last_applied: 0,
        });
        Some(slot as u8)
    }

    pub fn leave(&mut self, id: u8) {
        if let Some(p) = self.players.get_mut(id as usize) {
            *p = None;
        }
        self.bullets.retain(|b| b.owner != id);
    }

    /// Queues the frames of an input message that are newer than any seen
    /// (the redundant repeats of inputs already received are skipped).
    pub fn receive_input(&mut self, id: u8, seq: u16, frames: &[InputFrame]) {
        let Some(p) = self.players.get_mut(id as usize).and_then(|p| p.as_mut()) else {
            return;
        };
        for (i, frame) in frames.iter().enumerate().rev() {
            let s = seq.wrapping_sub(i as u16);
            if p.last_received.is_none_or(|last| newer(s, last)) {
                p.inputs.push_back((s, frame.clone()));
                p.last_received = Some(s);
            }
        }
        while p.inputs.len() > MAX_QUEUED_INPUTS {
            p.inputs.pop_front();
        }
    }

    fn take_spawn(&mut self) -> (f64, f64) {
        let s = SPAWNS[self.next_spawn % SPAWNS.len()];
        self.next_spawn += 1;
        s
    }

    /// Advances one tick; returns the reliable events it produced (kills).
    pub fn tick(&mut self) -> Vec<Message> {
        let (w, h) = (WIDTH as f64, HEIGHT as f64);
        for slot in 0..self.players.len() {
            let Some(p) = self.players[slot].as_mut() else {
                continue;
            };
            p.cooldown = p.cooldown.saturating_sub(1);
            if !p.alive {
                p.respawn_in = p.respawn_in.saturating_sub(1);
            }
            let steps = if p.inputs.len() > CATCH_UP_ABOVE {
                2
            } else {
                1
            };
            let mut fired = None;
            for _ in 0..steps {
                let Some((seq, input)) = p.inputs.pop_front() else {
                    break;
                };
                p.last_applied = seq;
                if !p.alive {
                    continue;
                }
                (p.x, p.y) = move_player(p.x, p.y, input.keys, &WALLS, w, h);
                p.aim = input.aim;
                if input.fire && p.cooldown == 0 {
                    p.cooldown = FIRE_COOLDOWN_TICKS;
                    fired = Some((p.x, p.y, p.aim));
                }
            }
            if let Some((x, y, aim)) = fired {
                if self.bullets.len() < MAX_BULLETS {
                    let (dx, dy) = (aim.cos() * BULLET_STEP, aim.sin() * BULLET_STEP);
                    let lead = (PLAYER_HALF + BULLET_RADIUS + 2.0) / BULLET_STEP;
                    self.bullets.push(Bullet {
                        owner: slot as u8,
                        x: x + dx * lead,
                        y: y + dy * lead,
                        dx,
                        dy,
                        ticks_left: BULLET_TICKS,
                    });
                }
            }
        }
        for slot in 0..self.players.len() {
            if self.players[slot]
                .as_ref()
                .is_some_and(|p| !p.alive && p.respawn_in == 0)
            {
                let (x, y) = self.take_spawn();
                let p = self.players[slot].as_mut().expect("checked above");
                (p.x, p.y, p.hp, p.alive) = (x, y, MAX_HP, true);
            }
        }
        self.move_bullets(w, h)
    }

    fn move_bullets(&mut self, w: f64, h: f64) -> Vec<Message> {
        let mut events = Vec::new();
        let hit_r2 = (PLAYER_HALF + BULLET_RADIUS) * (PLAYER_HALF + BULLET_RADIUS);
        let players = &mut self.players;
        self.bullets.retain_mut(|b| {
            b.x += b.dx;
            b.y += b.dy;
            b.ticks_left -= 1;
            if b.ticks_left == 0 || bullet_blocked(b.x, b.y, &WALLS, w, h) {
                return false;
            }
            let victim = players
                .iter()
                .flatten()
                .find(|p| {
                    p.alive && p.id != b.owner && (p.x - b.x).powi(2) + (p.y - b.y).powi(2) < hit_r2
                })
                .map(|p| p.id);
            let Some(v) = victim else { return true };
            let p = players[v as usize].as_mut().expect("found above");
            p.hp -= 1;
            if p.hp == 0 {
                p.alive = false;
                p.respawn_in = RESPAWN_TICKS;
                p.deaths = p.deaths.saturating_add(1);
                let victim_deaths = p.deaths;
                let killer_kills = match players[b.owner as usize].as_mut() {
                    Some(k) => {
                        k.kills = k.kills.saturating_add(1);
                        k.kills
                    }
                    None => 0,
                };
                events.push(Message::Kill {
                    killer: b.owner,
                    victim: v,
                    killer_kills,
                    victim_deaths,
                });
            }
            false
        });
        events
    }

    /// The snapshot body every player of the room receives this tick.
    pub fn snapshot_body(&self) -> Vec<u8> {
        let players: Vec<PlayerState> = self
            .players()
            .map(|p| PlayerState {
                id: p.id,
                x: p.x,
                y: p.y,
                aim: p.aim,
                hp: p.hp,
                alive: p.alive,
            })
            .collect();
        let bullets: Vec<BulletState> = self
            .bullets
            .iter()
            .map(|b| BulletState {
                owner: b.owner,
                x: b.x,
                y: b.y,
            })
            .collect();
        encode_snapshot_body(&players, &bullets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{KEY_RIGHT, KEY_UP};

    fn frame(keys: u8, fire: bool, aim: f64) -> InputFrame {
        InputFrame { keys, fire, aim }
    }

    #[test]
    fn an_input_moves_its_player_one_step_on_the_next_tick() {
        let mut room = Room::new(0);
        let a = room.join("a").unwrap();
        let x0 = room.player(a).unwrap().x;
        room.receive_input(a, 1, &[frame(KEY_RIGHT, false, 0.0)]);
        room.tick();
        assert_eq!(room.player(a).unwrap().x, x0 + 4.0);
        assert_eq!(room.player(a).unwrap().last_applied, 1);
    }

    #[test]
    fn redundant_repeats_of_received_inputs_are_applied_once() {
        let mut room = Room::new(0);
        let a = room.join("a").unwrap();
        let x0 = room.player(a).unwrap().x;
        room.receive_input(a, 1, &[frame(KEY_RIGHT, false, 0.0)]);
        room.receive_input(
            a,
            2,
            &[frame(KEY_RIGHT, false, 0.0), frame(KEY_RIGHT, false, 0.0)],
        );
        for _ in 0..5 {
            room.tick();
        }
        assert_eq!(room.player(a).unwrap().x, x0 + 8.0);
    }

    #[test]
    fn a_lost_input_is_recovered_from_the_next_messages_repeats() {
        let mut room = Room::new(0);
        let a = room.join("a").unwrap();
        let y0 = room.player(a).unwrap().y;
        // Input 1 never arrives on its own; message 2 carries 2 and 1.
        room.receive_input(
            a,
            2,
            &[frame(KEY_UP, false, 0.0), frame(KEY_UP, false, 0.0)],
        );
        room.tick();
        room.tick();
        assert_eq!(room.player(a).unwrap().y, y0 - 8.0);
        assert_eq!(room.player(a).unwrap().last_applied, 2);
    }

    #[test]
    fn three_hits_kill_and_score_for_the_shooter() {
        let mut room = Room::new(0);
        let a = room.join("a").unwrap(); // spawns at (200, 450)
        let b = room.join("b").unwrap(); // spawns at (1400, 450), straight ahead
        let mut kills = Vec::new();
        for seq in 1..=400u16 {
            room.receive_input(a, seq, &[frame(0, true, 0.0)]);
            kills.extend(room.tick());
            if !kills.is_empty() {
                break;
            }
        }
        assert_eq!(
            kills,
            vec![Message::Kill {
                killer: a,
                victim: b,
                killer_kills: 1,
                victim_deaths: 1
            }]
        );
        assert!(!room.player(b).unwrap().alive);
        assert_eq!(room.player(a).unwrap().kills, 1);
    }

    #[test]
    fn a_dead_player_respawns_with_full_health() {
        let mut room = Room::new(0);
        let a = room.join("a").unwrap();
        let b = room.join("b").unwrap();
        let mut seq = 0u16;
        while room.player(b).unwrap().alive {
            seq += 1;
            room.receive_input(a, seq, &[frame(0, true, 0.0)]);
            room.tick();
            assert!(seq < 1000, "b was never killed");
        }
        for _ in 0..RESPAWN_TICKS {
            room.tick();
        }
        let p = room.player(b).unwrap();
        assert!(p.alive);
        assert_eq!(p.hp, MAX_HP);
    }

    #[test]
    fn bullets_vanish_at_the_arena_edge() {
        let mut room = Room::new(0);
        let a = room.join("a").unwrap(); // (200, 450)
        room.join("b").unwrap();
        // Aim up: the bullet flies to the top edge, no one there.
        room.receive_input(a, 1, &[frame(0, true, -std::f64::consts::FRAC_PI_2)]);
        room.tick();
        assert_eq!(room.bullets.len(), 1);
        for _ in 0..BULLET_TICKS {
            room.tick();
        }
        assert!(room.bullets.is_empty());
    }

    #[test]
    fn a_full_room_refuses_the_33rd_player() {
        let mut room = Room::new(0);
        for i in 0..MAX_PLAYERS {
            assert!(room.join(&format!("p{i}")).is_some());
        }
        assert_eq!(room.join("late"), None);
    }

    #[test]
    fn blank_names_get_one_and_control_characters_are_dropped() {
        let mut room = Room::new(0);
        let a = room.join(" \n ").unwrap();
        let b = room.join("z\u{7}oë").unwrap();
        assert_eq!(room.player(a).unwrap().name, "player 1");
        assert_eq!(room.player(b).unwrap().name, "zoë");
    }

    #[test]
    fn leaving_frees_the_id_for_the_next_player() {
        let mut room = Room::new(0);
        let a = room.join("a").unwrap();
        room.join("b").unwrap();
        room.leave(a);
        assert_eq!(room.join("c"), Some(a));
        assert_eq!(room.player_count(), 2);
    }
}
