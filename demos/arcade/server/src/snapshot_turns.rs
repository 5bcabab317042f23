//! Which ticks each room's snapshots go out on. With a snapshot every `n`
//! ticks, rooms are spread over the `n` turns so that every tick sends about
//! as many snapshots (a shard's tick time is mostly its snapshot sends).
//! Room ids cannot decide it: shard i holds the rooms whose id % shards is
//! i, so with 2 shards and 30 Hz snapshots every room on a shard had the
//! same parity, and each shard sent all its snapshots every other tick.

use std::collections::HashMap;

pub struct SnapshotTurns {
    every: u32,
    turn_of: HashMap<u8, u32>,
    /// Rooms per turn.
    load: Vec<u32>,
}

impl SnapshotTurns {
    /// Snapshots every `every` ticks (at least 1).
    pub fn new(every: u32) -> SnapshotTurns {
        let every = every.max(1);
        SnapshotTurns {
            every,
            turn_of: HashMap::new(),
            load: vec![0; every as usize],
        }
    }

    /// Gives a new room the turn with the fewest rooms; a known room keeps its own.
    pub fn add(&mut self, room: u8) {
        if self.turn_of.contains_key(&room) {
            return;
        }
        let (turn, _) = self
            .load
            .iter()
            .enumerate()
            .min_by_key(|&(_, n)| *n)
            .unwrap_or((0, &0));
        self.load[turn] += 1;
        self.turn_of.insert(room, turn as u32);
    }

    pub fn remove(&mut self, room: u8) {
        if let Some(turn) = self.turn_of.remove(&room) {
            self.load[turn as usize] -= 1;
        }
    }

    /// Whether `room` sends its snapshot on `tick`.
    pub fn is_due(&self, room: u8, tick: u32) -> bool {
        let turn = self
            .turn_of
            .get(&room)
            .copied()
            .unwrap_or(room as u32 % self.every);
        tick % self.every == turn
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn due_per_tick(turns: &SnapshotTurns, rooms: &[u8], ticks: u32) -> Vec<usize> {
        (0..ticks)
            .map(|t| rooms.iter().filter(|&&r| turns.is_due(r, t)).count())
            .collect()
    }

    #[test]
    fn rooms_of_one_parity_are_spread_over_both_turns() {
        let mut turns = SnapshotTurns::new(2);
        let rooms: Vec<u8> = (0..20).map(|i| i * 2).collect();
        rooms.iter().for_each(|&r| turns.add(r));
        assert_eq!(due_per_tick(&turns, &rooms, 4), vec![10, 10, 10, 10]);
    }

    #[test]
    fn every_room_sends_once_per_period() {
        let mut turns = SnapshotTurns::new(3);
        for r in [4, 9, 17, 200, 33] {
            turns.add(r);
            assert_eq!(
                (0..3).filter(|&t| turns.is_due(r, t)).count(),
                1,
                "room {r}"
            );
        }
    }

    #[test]
    fn a_new_room_takes_the_turn_a_removed_room_left() {
        let mut turns = SnapshotTurns::new(2);
        for r in [0, 2, 4, 6] {
            turns.add(r);
        }
        turns.remove(2);
        turns.add(8);
        assert_eq!(due_per_tick(&turns, &[0, 4, 6, 8], 2), vec![2, 2]);
    }

    #[test]
    fn adding_a_room_twice_keeps_its_turn_and_the_balance() {
        let mut turns = SnapshotTurns::new(2);
        turns.add(1);
        let first = turns.is_due(1, 0);
        turns.add(1);
        turns.add(3);
        assert_eq!(turns.is_due(1, 0), first);
        assert_eq!(due_per_tick(&turns, &[1, 3], 2), vec![1, 1]);
    }
}
