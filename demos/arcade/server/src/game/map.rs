//! The arena: 1600 × 900 px, pillars and bars for cover. Sent to clients in
//! `Welcome`, so this is the only copy.

use crate::codec::Wall;

pub const WIDTH: u16 = 1600;
pub const HEIGHT: u16 = 900;

pub const WALLS: [Wall; 10] = [
    Wall {
        x: 380,
        y: 120,
        w: 40,
        h: 200,
    },
    Wall {
        x: 380,
        y: 580,
        w: 40,
        h: 200,
    },
    Wall {
        x: 1180,
        y: 120,
        w: 40,
        h: 200,
    },
    Wall {
        x: 1180,
        y: 580,
        w: 40,
        h: 200,
    },
    Wall {
        x: 700,
        y: 300,
        w: 200,
        h: 40,
    },
    Wall {
        x: 700,
        y: 560,
        w: 200,
        h: 40,
    },
    Wall {
        x: 780,
        y: 80,
        w: 40,
        h: 140,
    },
    Wall {
        x: 780,
        y: 680,
        w: 40,
        h: 140,
    },
    Wall {
        x: 560,
        y: 180,
        w: 30,
        h: 60,
    },
    Wall {
        x: 1010,
        y: 660,
        w: 30,
        h: 60,
    },
];

/// Spawn points, used in turn: the first two face each other across the
/// open middle row (y = 450 crosses no wall between them).
pub const SPAWNS: [(f64, f64); 8] = [
    (200.0, 450.0),
    (1400.0, 450.0),
    (200.0, 150.0),
    (1400.0, 750.0),
    (200.0, 750.0),
    (1400.0, 150.0),
    (600.0, 150.0),
    (1000.0, 750.0),
];
