//! Player movement and wall collision. The browser predicts with the same
//! arithmetic (`demos/arcade/protocol/sim.ts`), step for step, so a
//! reconciled position matches the server's exactly;
//! `demos/arcade/protocol/movement.json` pins the two together.

use std::f64::consts::FRAC_1_SQRT_2;

use crate::codec::{Wall, KEY_DOWN, KEY_LEFT, KEY_RIGHT, KEY_UP, POSITION};

pub const TICK_HZ: u32 = 60;
/// Half the side of a player's square hitbox against walls, px (also the
/// radius bullets hit).
pub const PLAYER_HALF: f64 = 14.0;
/// Movement per tick, px (240 px/s).
pub const PLAYER_STEP: f64 = 4.0;
/// Bullet movement per tick, px (720 px/s).
pub const BULLET_STEP: f64 = 12.0;
pub const BULLET_RADIUS: f64 = 4.0;
pub const BULLET_TICKS: u32 = 120;
pub const FIRE_COOLDOWN_TICKS: u32 = 12;
pub const RESPAWN_TICKS: u32 = 90;

fn overlaps(x: f64, y: f64, w: &Wall) -> bool {
    x + PLAYER_HALF > w.x as f64
        && x - PLAYER_HALF < (w.x + w.w) as f64
        && y + PLAYER_HALF > w.y as f64
        && y - PLAYER_HALF < (w.y + w.h) as f64
}

/// One tick of movement: x first, then y, each snapped to the position grid,
/// kept in the arena and pushed out of walls on the side it came from.
pub fn move_player(
    x: f64,
    y: f64,
    keys: u8,
    walls: &[Wall],
    width: f64,
    height: f64,
) -> (f64, f64) {
    let dx = (keys & KEY_RIGHT != 0) as i32 - (keys & KEY_LEFT != 0) as i32;
    let dy = (keys & KEY_DOWN != 0) as i32 - (keys & KEY_UP != 0) as i32;
    let step = if dx != 0 && dy != 0 {
        PLAYER_STEP * FRAC_1_SQRT_2
    } else {
        PLAYER_STEP
    };
    let mut nx = x;
    if dx != 0 {
        nx = POSITION
            .snap(x + dx as f64 * step)
            .clamp(PLAYER_HALF, width - PLAYER_HALF);
        for w in walls {
            if overlaps(nx, y, w) {
                nx = if dx > 0 {
                    w.x as f64 - PLAYER_HALF
                } else {
                    (w.x + w.w) as f64 + PLAYER_HALF
                };
            }
        }
    }
    let mut ny = y;
    if dy != 0 {
        ny = POSITION
            .snap(y + dy as f64 * step)
            .clamp(PLAYER_HALF, height - PLAYER_HALF);
        for w in walls {
            if overlaps(nx, ny, w) {
                ny = if dy > 0 {
                    w.y as f64 - PLAYER_HALF
                } else {
                    (w.y + w.h) as f64 + PLAYER_HALF
                };
            }
        }
    }
    (nx, ny)
}

/// True if a bullet at (x, y) touches a wall or left the arena.
pub fn bullet_blocked(x: f64, y: f64, walls: &[Wall], width: f64, height: f64) -> bool {
    if x < 0.0 || y < 0.0 || x > width || y > height {
        return true;
    }
    walls.iter().any(|w| {
        x + BULLET_RADIUS > w.x as f64
            && x - BULLET_RADIUS < (w.x + w.w) as f64
            && y + BULLET_RADIUS > w.y as f64
            && y - BULLET_RADIUS < (w.y + w.h) as f64
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const WALL: Wall = Wall {
        x: 100,
        y: 0,
        w: 20,
        h: 200,
    };

    #[test]
    fn a_player_moving_into_a_wall_stops_at_its_face() {
        let mut p = (80.0, 50.0);
        for _ in 0..10 {
            p = move_player(p.0, p.1, KEY_RIGHT, &[WALL], 1600.0, 900.0);
        }
        assert_eq!(p, (100.0 - PLAYER_HALF, 50.0));
    }

    #[test]
    fn a_player_cannot_leave_the_arena() {
        let p = move_player(15.0, 15.0, KEY_LEFT | KEY_UP, &[], 1600.0, 900.0);
        assert_eq!(p, (PLAYER_HALF, PLAYER_HALF));
    }

    #[test]
    fn diagonal_movement_is_as_fast_as_straight_movement_on_the_grid() {
        let (x, y) = move_player(500.0, 500.0, KEY_RIGHT | KEY_DOWN, &[], 1600.0, 900.0);
        assert_eq!((x, y), (502.875, 502.875)); // 4/√2 = 2.83 snapped to 1/8 px
    }

    #[test]
    fn sliding_along_a_wall_keeps_the_free_axis() {
        let (x, y) = move_player(
            100.0 - PLAYER_HALF,
            50.0,
            KEY_RIGHT | KEY_DOWN,
            &[WALL],
            1600.0,
            900.0,
        );
        assert_eq!(x, 100.0 - PLAYER_HALF);
        assert!(y > 50.0);
    }

    #[test]
    fn bullets_stop_at_walls_and_arena_edges() {
        assert!(bullet_blocked(105.0, 50.0, &[WALL], 1600.0, 900.0));
        assert!(bullet_blocked(-1.0, 50.0, &[], 1600.0, 900.0));
        assert!(!bullet_blocked(300.0, 50.0, &[WALL], 1600.0, 900.0));
    }
}

/// The shared movement vectors (`demos/arcade/protocol/movement.json`):
/// the TypeScript prediction must reproduce every position bit for bit.
#[cfg(test)]
mod shared_vectors {
    use super::*;
    use crate::game::map::{HEIGHT, WALLS, WIDTH};

    const PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../protocol/movement.json");

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Trajectory {
        name: String,
        start: (f64, f64),
        keys: Vec<u8>,
        positions: Vec<(f64, f64)>,
    }

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Vectors {
        width: f64,
        height: f64,
        walls: Vec<Wall>,
        trajectories: Vec<Trajectory>,
    }

    fn run(t: &Trajectory, v: &Vectors) -> Vec<(f64, f64)> {
        let mut p = t.start;
        t.keys
            .iter()
            .map(|&k| {
                p = move_player(p.0, p.1, k, &v.walls, v.width, v.height);
                p
            })
            .collect()
    }

    #[test]
    fn every_shared_trajectory_matches_step_for_step() {
        if std::env::var("ARCADE_WRITE_VECTORS").is_ok() {
            let (r, l, u, d) = (KEY_RIGHT, KEY_LEFT, KEY_UP, KEY_DOWN);
            let mut v = Vectors {
                width: WIDTH as f64,
                height: HEIGHT as f64,
                walls: WALLS.to_vec(),
                trajectories: vec![],
            };
            let mut add = |name: &str, start: (f64, f64), keys: Vec<u8>| {
                v.trajectories.push(Trajectory {
                    name: name.into(),
                    start,
                    keys,
                    positions: vec![],
                });
            };
            add("right into a pillar", (300.0, 200.0), vec![r; 40]);
            add(
                "diagonal along a bar",
                (650.0, 280.0),
                [vec![r | d; 30], vec![r | u; 30]].concat(),
            );
            add("into the top-left corner", (40.0, 40.0), vec![l | u; 20]);
            add(
                "circle",
                (1000.0, 450.0),
                [
                    vec![r; 10],
                    vec![r | d; 10],
                    vec![d; 10],
                    vec![l | d; 10],
                    vec![l; 10],
                    vec![l | u; 10],
                    vec![u; 10],
                    vec![r | u; 10],
                ]
                .concat(),
            );
            add(
                "opposite keys cancel",
                (900.0, 450.0),
                vec![l | r, u | d, l | r | u | d],
            );
            let positions: Vec<_> = v.trajectories.iter().map(|t| run(t, &v)).collect();
            for (t, p) in v.trajectories.iter_mut().zip(positions) {
                t.positions = p;
            }
            std::fs::write(PATH, serde_json::to_string(&v).unwrap() + "\n").unwrap();
            return;
        }
        let v: Vectors =
            serde_json::from_str(&std::fs::read_to_string(PATH).expect("movement.json"))
                .expect("parses");
        assert!(v.trajectories.len() >= 5);
        for t in &v.trajectories {
            assert_eq!(run(t, &v), t.positions, "{}", t.name);
        }
    }
}
