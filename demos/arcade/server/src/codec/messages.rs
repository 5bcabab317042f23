//! The arcade's game messages on top of `ricochet_game`'s bit-packing and
//! quantisation. Byte-identical to `demos/arcade/protocol/messages.ts`;
//! `demos/arcade/protocol/vectors.json` pins both.
//!
//! Every message starts with a 4-bit tag. Positions are 14 bits on a 1/8 px
//! grid, angles 8 bits, player ids 5 bits (32 per room). Strings are
//! byte-aligned: a length byte, then UTF-8.

use ricochet_game::{decode_angle, encode_angle, BitReader, BitWriter, DecodeError, Quantizer};

/// Player ids per room (5 bits).
pub const MAX_PLAYERS: usize = 32;
/// Bullets in one snapshot (7-bit count).
pub const MAX_BULLETS: usize = 127;
/// Walls in a map (6-bit count).
pub const MAX_WALLS: usize = 63;
/// Inputs carried by one input message: the newest and up to 3 repeats, so
/// a lost datagram costs nothing when the next one arrives.
pub const MAX_INPUT_FRAMES: usize = 4;
pub const MAX_NAME_BYTES: usize = 16;
pub const MAX_CHAT_BYTES: usize = 120;
pub const MAX_HP: u8 = 3;
/// Arena coordinates: 0..2047.875 px in steps of 1/8 px.
pub const POSITION: Quantizer = Quantizer::new(0.0, 0.125, 14);
pub const AIM_BITS: u32 = 8;
/// Map geometry is whole pixels, 12 bits.
const WALL_BITS: u32 = 12;
const ID_BITS: u32 = 5;

pub const KEY_UP: u8 = 1;
pub const KEY_DOWN: u8 = 2;
pub const KEY_LEFT: u8 = 4;
pub const KEY_RIGHT: u8 = 8;

const TAG_JOIN: u32 = 1;
const TAG_INPUT: u32 = 2;
const TAG_CHAT: u32 = 3;
const TAG_WELCOME: u32 = 4;
const TAG_PLAYER_JOINED: u32 = 5;
const TAG_PLAYER_LEFT: u32 = 6;
const TAG_KILL: u32 = 7;
const TAG_CHAT_FROM: u32 = 8;
const TAG_SNAPSHOT: u32 = 9;

/// Bytes before a snapshot's body: tag byte, tick u32, ack u16. Aligned, so
/// one room body is encoded once and prefixed per recipient.
pub const SNAPSHOT_HEADER_BYTES: usize = 7;

#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(
    test,
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "camelCase")
)]
pub struct InputFrame {
    /// `KEY_*` bits.
    pub keys: u8,
    pub fire: bool,
    /// Radians; sent as 8 bits.
    pub aim: f64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(test, derive(serde::Serialize, serde::Deserialize))]
pub struct Wall {
    pub x: u16,
    pub y: u16,
    pub w: u16,
    pub h: u16,
}

#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(serde::Serialize, serde::Deserialize))]
pub struct PlayerState {
    pub id: u8,
    pub x: f64,
    pub y: f64,
    pub aim: f64,
    pub hp: u8,
    pub alive: bool,
}

#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(serde::Serialize, serde::Deserialize))]
pub struct BulletState {
    pub owner: u8,
    pub x: f64,
    pub y: f64,
}

#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(
    test,
    derive(serde::Serialize, serde::Deserialize),
    serde(
        tag = "type",
        rename_all = "camelCase",
        rename_all_fields = "camelCase"
    )
)]
pub enum Message {
    /// Client → server, as the connection's handshake payload.
    Join {
        room: u8,
        name: String,
    },
    /// Client → server on the input channel: `frames[0]` is input `seq`,
    /// `frames[i]` is input `seq - i`.
    Input {
        seq: u16,
        frames: Vec<InputFrame>,
    },
    /// Client → server on the events channel.
    Chat {
        text: String,
    },
    /// Server → client, first on the events channel: who you are and the map.
    Welcome {
        you: u8,
        room: u8,
        tick_hz: u8,
        width: u16,
        height: u16,
        walls: Vec<Wall>,
    },
    PlayerJoined {
        id: u8,
        name: String,
        kills: u16,
        deaths: u16,
    },
    PlayerLeft {
        id: u8,
    },
    Kill {
        killer: u8,
        victim: u8,
        killer_kills: u16,
        victim_deaths: u16,
    },
    ChatFrom {
        from: u8,
        text: String,
    },
    /// Server → client on the state channel. `ack` is the recipient's last
    /// input applied, for reconciliation.
    Snapshot {
        tick: u32,
        ack: u16,
        players: Vec<PlayerState>,
        bullets: Vec<BulletState>,
    },
}

fn write_position(w: &mut BitWriter, x: f64, y: f64) {
    w.write_bits(POSITION.encode(x), POSITION.bits);
    w.write_bits(POSITION.encode(y), POSITION.bits);
}

fn read_position(r: &mut BitReader) -> Result<(f64, f64), DecodeError> {
    let x = POSITION.decode(r.read_bits(POSITION.bits)?);
    let y = POSITION.decode(r.read_bits(POSITION.bits)?);
    Ok((x, y))
}

/// The aligned prefix of a snapshot for one recipient.
pub fn encode_snapshot_header(tick: u32, ack: u16) -> [u8; SNAPSHOT_HEADER_BYTES] {
    let t = tick.to_le_bytes();
    let a = ack.to_le_bytes();
    [TAG_SNAPSHOT as u8, t[0], t[1], t[2], t[3], a[0], a[1]]
}

/// A room's snapshot body, shared by every recipient in the room. Lists
/// beyond `MAX_PLAYERS`/`MAX_BULLETS` are cut.
pub fn encode_snapshot_body(players: &[PlayerState], bullets: &[BulletState]) -> Vec<u8> {
    let players = &players[..players.len().min(MAX_PLAYERS)];
    let bullets = &bullets[..bullets.len().min(MAX_BULLETS)];
    let mut w = BitWriter::with_capacity(2 + players.len() * 6 + bullets.len() * 5);
    w.write_bits(players.len() as u32, 6);
    for p in players {
        w.write_bits(p.id as u32, ID_BITS);
        write_position(&mut w, p.x, p.y);
        w.write_bits(encode_angle(p.aim, AIM_BITS), AIM_BITS);
        w.write_bits(p.hp.min(MAX_HP) as u32, 2);
        w.write_bool(p.alive);
    }
    w.write_bits(bullets.len() as u32, 7);
    for b in bullets {
        w.write_bits(b.owner as u32, ID_BITS);
        write_position(&mut w, b.x, b.y);
    }
    w.finish()
}

impl Message {
    pub fn encode(&self) -> Vec<u8> {
        if let Message::Snapshot {
            tick,
            ack,
            players,
            bullets,
        } = self
        {
            let mut out = encode_snapshot_header(*tick, *ack).to_vec();
            out.extend_from_slice(&encode_snapshot_body(players, bullets));
            return out;
        }
        let mut w = BitWriter::with_capacity(32);
        match self {
            Message::Join { room, name } => {
                w.write_bits(TAG_JOIN, 4);
                w.write_bits(*room as u32, 8);
                w.write_string(name, MAX_NAME_BYTES);
            }
            Message::Input { seq, frames } => {
                let frames = &frames[..frames.len().clamp(1, MAX_INPUT_FRAMES)];
                w.write_bits(TAG_INPUT, 4);
                w.write_bits(*seq as u32, 16);
                w.write_bits(frames.len() as u32 - 1, 2);
                for f in frames {
                    w.write_bits(f.keys as u32, 4);
                    w.write_bool(f.fire);
                    w.write_bits(encode_angle(f.aim, AIM_BITS), AIM_BITS);
                }
            }
            Message::Chat { text } => {
                w.write_bits(TAG_CHAT, 4);
                w.write_string(text, MAX_CHAT_BYTES);
            }
            Message::Welcome {
                you,
                room,
                tick_hz,
                width,
                height,
                walls,
            } => {
                w.write_bits(TAG_WELCOME, 4);
                w.write_bits(*you as u32, ID_BITS);
                w.write_bits(*room as u32, 8);
                w.write_bits(*tick_hz as u32, 8);
                w.write_bits(*width as u32, WALL_BITS);
                w.write_bits(*height as u32, WALL_BITS);
                let walls = &walls[..walls.len().min(MAX_WALLS)];
                w.write_bits(walls.len() as u32, 6);
                for wall in walls {
                    for v in [wall.x, wall.y, wall.w, wall.h] {
                        w.write_bits(v as u32, WALL_BITS);
                    }
                }
            }
            Message::PlayerJoined {
                id,
                name,
                kills,
                deaths,
            } => {
                w.write_bits(TAG_PLAYER_JOINED, 4);
                w.write_bits(*id as u32, ID_BITS);
                w.write_bits(*kills as u32, 16);
                w.write_bits(*deaths as u32, 16);
                w.write_string(name, MAX_NAME_BYTES);
            }
            Message::PlayerLeft { id } => {
                w.write_bits(TAG_PLAYER_LEFT, 4);
                w.write_bits(*id as u32, ID_BITS);
            }
            Message::Kill {
                killer,
                victim,
                killer_kills,
                victim_deaths,
            } => {
                w.write_bits(TAG_KILL, 4);
                w.write_bits(*killer as u32, ID_BITS);
                w.write_bits(*victim as u32, ID_BITS);
                w.write_bits(*killer_kills as u32, 16);
                w.write_bits(*victim_deaths as u32, 16);
            }
            Message::ChatFrom { from, text } => {
                w.write_bits(TAG_CHAT_FROM, 4);
                w.write_bits(*from as u32, ID_BITS);
                w.write_string(text, MAX_CHAT_BYTES);
            }
            Message::Snapshot { .. } => unreachable!("handled above"),
        }
        w.finish()
    }

    /// Decodes one whole message; anything malformed is an error.
    pub fn decode(bytes: &[u8]) -> Result<Message, DecodeError> {
        let mut r = BitReader::new(bytes);
        let tag = r.read_bits(4)?;
        let m = match tag {
            TAG_JOIN => {
                let room = r.read_bits(8)? as u8;
                Message::Join {
                    room,
                    name: r.read_string(MAX_NAME_BYTES, "name")?,
                }
            }
            TAG_INPUT => {
                let seq = r.read_bits(16)? as u16;
                let n = r.read_bits(2)? as usize + 1;
                let mut frames = Vec::with_capacity(n);
                for _ in 0..n {
                    let keys = r.read_bits(4)? as u8;
                    let fire = r.read_bool()?;
                    let aim = decode_angle(r.read_bits(AIM_BITS)?, AIM_BITS);
                    frames.push(InputFrame { keys, fire, aim });
                }
                Message::Input { seq, frames }
            }
            TAG_CHAT => Message::Chat {
                text: r.read_string(MAX_CHAT_BYTES, "text")?,
            },
            TAG_WELCOME => {
                let you = r.read_bits(ID_BITS)? as u8;
                let room = r.read_bits(8)? as u8;
                let tick_hz = r.read_bits(8)? as u8;
                let width = r.read_bits(WALL_BITS)? as u16;
                let height = r.read_bits(WALL_BITS)? as u16;
                let n = r.read_bits(6)? as usize;
                let mut walls = Vec::with_capacity(n);
                for _ in 0..n {
                    let x = r.read_bits(WALL_BITS)? as u16;
                    let y = r.read_bits(WALL_BITS)? as u16;
                    let w = r.read_bits(WALL_BITS)? as u16;
                    let h = r.read_bits(WALL_BITS)? as u16;
                    walls.push(Wall { x, y, w, h });
                }
                Message::Welcome {
                    you,
                    room,
                    tick_hz,
                    width,
                    height,
                    walls,
                }
            }
            TAG_PLAYER_JOINED => {
                let id = r.read_bits(ID_BITS)? as u8;
                let kills = r.read_bits(16)? as u16;
                let deaths = r.read_bits(16)? as u16;
                Message::PlayerJoined {
                    id,
                    kills,
                    deaths,
                    name: r.read_string(MAX_NAME_BYTES, "name")?,
                }
            }
            TAG_PLAYER_LEFT => Message::PlayerLeft {
                id: r.read_bits(ID_BITS)? as u8,
            },
            TAG_KILL => Message::Kill {
                killer: r.read_bits(ID_BITS)? as u8,
                victim: r.read_bits(ID_BITS)? as u8,
                killer_kills: r.read_bits(16)? as u16,
                victim_deaths: r.read_bits(16)? as u16,
            },
            TAG_CHAT_FROM => {
                let from = r.read_bits(ID_BITS)? as u8;
                Message::ChatFrom {
                    from,
                    text: r.read_string(MAX_CHAT_BYTES, "text")?,
                }
            }
            TAG_SNAPSHOT => {
                r.align();
                let head = r.read_bytes(6)?;
                let tick = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
                let ack = u16::from_le_bytes([head[4], head[5]]);
                let n = r.read_bits(6)? as usize;
                if n > MAX_PLAYERS {
                    return Err(DecodeError::OutOfRange("player count"));
                }
                let mut players = Vec::with_capacity(n);
                for _ in 0..n {
                    let id = r.read_bits(ID_BITS)? as u8;
                    let (x, y) = read_position(&mut r)?;
                    let aim = decode_angle(r.read_bits(AIM_BITS)?, AIM_BITS);
                    let hp = r.read_bits(2)? as u8;
                    let alive = r.read_bool()?;
                    players.push(PlayerState {
                        id,
                        x,
                        y,
                        aim,
                        hp,
                        alive,
                    });
                }
                let n = r.read_bits(7)? as usize;
                let mut bullets = Vec::with_capacity(n);
                for _ in 0..n {
                    let owner = r.read_bits(ID_BITS)? as u8;
                    let (x, y) = read_position(&mut r)?;
                    bullets.push(BulletState { owner, x, y });
                }
                Message::Snapshot {
                    tick,
                    ack,
                    players,
                    bullets,
                }
            }
            other => return Err(DecodeError::UnknownTag(other)),
        };
        r.finish()?;
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_header_and_shared_body_form_the_whole_message() {
        let players = vec![PlayerState {
            id: 3,
            x: 100.5,
            y: 200.125,
            aim: 0.0,
            hp: 2,
            alive: true,
        }];
        let bullets = vec![BulletState {
            owner: 3,
            x: 10.0,
            y: 20.0,
        }];
        let whole = Message::Snapshot {
            tick: 77,
            ack: 5,
            players: players.clone(),
            bullets: bullets.clone(),
        }
        .encode();
        let mut parts = encode_snapshot_header(77, 5).to_vec();
        parts.extend(encode_snapshot_body(&players, &bullets));
        assert_eq!(whole, parts);
    }

    #[test]
    fn unknown_tag_is_an_error() {
        assert_eq!(Message::decode(&[0x0f]), Err(DecodeError::UnknownTag(15)));
        assert_eq!(Message::decode(&[]), Err(DecodeError::Truncated));
    }

    #[test]
    fn a_snapshot_claiming_too_many_players_is_refused() {
        let mut bytes = encode_snapshot_header(1, 1).to_vec();
        bytes.push(63); // 6-bit count of 63 players
        assert_eq!(
            Message::decode(&bytes),
            Err(DecodeError::OutOfRange("player count"))
        );
    }

    #[test]
    fn input_frames_beyond_four_are_not_sent() {
        let f = InputFrame {
            keys: KEY_UP,
            fire: false,
            aim: 0.0,
        };
        let m = Message::Input {
            seq: 9,
            frames: vec![f.clone(); 6],
        };
        match Message::decode(&m.encode()).unwrap() {
            Message::Input { frames, .. } => assert_eq!(frames.len(), MAX_INPUT_FRAMES),
            other => panic!("decoded {other:?}"),
        }
    }

    #[test]
    fn no_bytes_make_the_decoder_panic() {
        // Every truncation and single-bit flip of valid messages, then
        // pseudo-random bytes: each decodes or errors.
        let samples = [
            Message::Join {
                room: 3,
                name: "ann".into(),
            }
            .encode(),
            Message::Snapshot {
                tick: 9,
                ack: 2,
                players: vec![PlayerState {
                    id: 1,
                    x: 5.0,
                    y: 6.0,
                    aim: 1.0,
                    hp: 3,
                    alive: true,
                }],
                bullets: vec![BulletState {
                    owner: 1,
                    x: 1.0,
                    y: 2.0,
                }],
            }
            .encode(),
            Message::Welcome {
                you: 1,
                room: 2,
                tick_hz: 60,
                width: 1600,
                height: 900,
                walls: vec![Wall {
                    x: 1,
                    y: 2,
                    w: 3,
                    h: 4,
                }],
            }
            .encode(),
        ];
        for s in &samples {
            for cut in 0..s.len() {
                let _ = Message::decode(&s[..cut]);
            }
            for bit in 0..s.len() * 8 {
                let mut b = s.clone();
                b[bit / 8] ^= 1 << (bit % 8);
                let _ = Message::decode(&b);
            }
        }
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for len in 0..2000usize {
            let bytes: Vec<u8> = (0..len % 200)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let _ = Message::decode(&bytes);
        }
    }
}
