//! The schema macros from outside the crate, as a game server uses them,
//! against bytes written by `@ricochet/game`'s `defineMessages`.

use ricochet_game::{
    decode_angle, define_messages, define_struct, BitReader, BitWriter, DecodeError, EncodeError,
    Quantizer,
};

const POSITION: Quantizer = Quantizer::new(0.0, 0.125, 14);
const SPEED: Quantizer = Quantizer::new(-8.0, 0.0625, 8);

define_struct! {
    #[derive(Clone, Debug, PartialEq)]
    pub struct Frame {
        pub keys: uint(4),
        pub fire: bool(),
        pub aim: angle(8),
    }
}

define_struct! {
    #[derive(Clone, Debug, PartialEq)]
    pub struct Player {
        pub id: uint(5),
        pub x: quantized(POSITION),
        pub y: quantized(POSITION),
        pub hp: uint(2).max(3),
    }
}

define_messages! {
    /// The same declaration as `CROSS_CHECK` in game/test/schema-rust.test.ts.
    #[derive(Clone, Debug, PartialEq)]
    pub enum Message(id_bits = 4) {
        Join = 1 { room: uint(8), name: string(16) },
        Input = 2 { seq: uint(16), frames: array(nested(Frame), 4).min(1) },
        Nudge = 3 { dx: int(6), dy: int(12), speed: quantized(SPEED) },
        Snapshot = 9 { tick: aligned(uint(32)), players: array(nested(Player), 32).count_bits(6) },
    }
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// `(message as written, its bytes from @ricochet/game, what decoding gives)`.
/// The hex strings are game/test/schema-rust.test.ts's, byte for byte.
fn cross_check() -> Vec<(Message, &'static str, Message)> {
    let snapshot = |players: Vec<Player>| Message::Snapshot {
        tick: 0x1234_5678,
        players,
    };
    vec![
        (
            Message::Join {
                room: 7,
                name: "Zoë".into(),
            },
            "7100045a6fc3ab",
            Message::Join {
                room: 7,
                name: "Zoë".into(),
            },
        ),
        (
            Message::Input {
                seq: 65535,
                frames: vec![
                    Frame {
                        keys: 5,
                        fire: true,
                        aim: -std::f64::consts::FRAC_PI_2,
                    },
                    Frame {
                        keys: 15,
                        fire: false,
                        aim: 1.0,
                    },
                ],
            },
            "f2ff5f057e29",
            Message::Input {
                seq: 65535,
                frames: vec![
                    Frame {
                        keys: 5,
                        fire: true,
                        aim: decode_angle(192, 8),
                    },
                    Frame {
                        keys: 15,
                        fire: false,
                        aim: decode_angle(41, 8),
                    },
                ],
            },
        ),
        (
            Message::Nudge {
                dx: -32,
                dy: 2047,
                speed: 3.3,
            },
            "03fc7f2d",
            Message::Nudge {
                dx: -32,
                dy: 2047,
                speed: 3.3125,
            },
        ),
        (
            snapshot(vec![
                Player {
                    id: 3,
                    x: 812.3,
                    y: 0.0,
                    hp: 3,
                },
                Player {
                    id: 31,
                    x: 2047.875,
                    y: 1e9,
                    hp: 0,
                },
            ]),
            "0978563412c210cb0080ffffffff03",
            snapshot(vec![
                Player {
                    id: 3,
                    x: 812.25,
                    y: 0.0,
                    hp: 3,
                },
                Player {
                    id: 31,
                    x: 2047.875,
                    y: 2047.875,
                    hp: 0,
                },
            ]),
        ),
        (
            Message::Snapshot {
                tick: 0,
                players: vec![],
            },
            "090000000000",
            Message::Snapshot {
                tick: 0,
                players: vec![],
            },
        ),
    ]
}

#[test]
fn encodes_what_the_typescript_schema_encodes_and_decodes_its_bytes() {
    for (message, hex, decoded) in cross_check() {
        assert_eq!(message.encode().unwrap(), unhex(hex), "{message:?}");
        assert_eq!(Message::decode(&unhex(hex)).unwrap(), decoded, "{hex}");
        // What a receiver sees encodes to the same bytes again.
        assert_eq!(decoded.encode().unwrap(), unhex(hex));
    }
}

#[test]
fn ids_and_id_bits() {
    assert_eq!(Message::ID_BITS, 4);
    assert_eq!(
        Message::Join {
            room: 0,
            name: String::new()
        }
        .id(),
        1
    );
    assert_eq!(
        Message::Snapshot {
            tick: 0,
            players: vec![]
        }
        .id(),
        9
    );
}

#[test]
fn several_messages_share_one_datagram() {
    let a = Message::Join {
        room: 1,
        name: "a".into(),
    };
    let b = Message::Nudge {
        dx: 1,
        dy: -1,
        speed: 0.0,
    };
    let mut w = BitWriter::new();
    a.write(&mut w).unwrap();
    b.write(&mut w).unwrap();
    let bytes = w.finish();
    let mut r = BitReader::new(&bytes);
    assert_eq!(Message::read(&mut r).unwrap(), a);
    assert_eq!(Message::read(&mut r).unwrap(), b);
    r.finish().unwrap();
}

#[test]
fn values_that_do_not_fit_are_encode_errors_naming_the_field() {
    let e = Message::Join {
        room: 256,
        name: String::new(),
    }
    .encode()
    .unwrap_err();
    assert_eq!(
        e,
        EncodeError {
            field: "Join.room",
            reason: "256 is not in 0..=255".into()
        }
    );
    assert_eq!(e.to_string(), "Join.room: 256 is not in 0..=255");
    let e = Message::Nudge {
        dx: 32,
        dy: 0,
        speed: 0.0,
    }
    .encode()
    .unwrap_err();
    assert_eq!(e.field, "Nudge.dx");
    assert_eq!(
        Message::Nudge {
            dx: 0,
            dy: -2049,
            speed: 0.0
        }
        .encode()
        .unwrap_err()
        .field,
        "Nudge.dy"
    );
    assert_eq!(
        Message::Input {
            seq: 0,
            frames: vec![]
        }
        .encode()
        .unwrap_err()
        .reason,
        "0 items, not 1..=4"
    );
    let frame = Frame {
        keys: 16,
        fire: false,
        aim: 0.0,
    };
    assert_eq!(
        Message::Input {
            seq: 0,
            frames: vec![frame]
        }
        .encode()
        .unwrap_err()
        .field,
        "Frame.keys"
    );
    let hp4 = Player {
        id: 0,
        x: 0.0,
        y: 0.0,
        hp: 4,
    };
    assert_eq!(
        Message::Snapshot {
            tick: 0,
            players: vec![hp4]
        }
        .encode()
        .unwrap_err()
        .field,
        "Player.hp"
    );
}

#[test]
fn strings_are_cut_or_refused() {
    define_messages! {
        #[derive(Debug, PartialEq)]
        enum Names(id_bits = 1) {
            Cut = 0 { name: string(4) },
            Strict = 1 { name: string(4).truncate(false) },
        }
    }
    let bytes = Names::Cut {
        name: "héllo".into(),
    }
    .encode()
    .unwrap();
    assert_eq!(
        Names::decode(&bytes).unwrap(),
        Names::Cut {
            name: "hél".into()
        }
    );
    assert_eq!(
        Names::Strict {
            name: "héllo".into()
        }
        .encode()
        .unwrap_err()
        .field,
        "Strict.name"
    );
    assert!(Names::Strict { name: "hé".into() }.encode().is_ok());
}

#[test]
fn bad_bytes_are_decode_errors() {
    // Unknown id 4.
    assert_eq!(Message::decode(&[0x04]), Err(DecodeError::UnknownTag(4)));
    // Cut short, and a byte too many.
    let join = unhex("7100045a6fc3ab");
    assert_eq!(Message::decode(&join[..5]), Err(DecodeError::Truncated));
    assert_eq!(
        Message::decode(&[&join[..], &[0]].concat()),
        Err(DecodeError::TrailingBytes(1))
    );
    // A player count of 33 (over the maximum of 32).
    assert_eq!(
        Message::decode(&unhex("090000000021")),
        Err(DecodeError::OutOfRange("Snapshot.players"))
    );
    // A count of 32 with no bytes left for the players: refused before allocating.
    assert_eq!(
        Message::decode(&unhex("090000000020")),
        Err(DecodeError::Truncated)
    );
    // A 17-byte name where 16 is the most.
    assert_eq!(
        Message::decode(&[0x71, 0x00, 17]),
        Err(DecodeError::OutOfRange("Join.name"))
    );
}

#[test]
fn a_bounded_uint_refuses_larger_codes() {
    define_struct! {
        #[derive(Debug)]
        struct Hp { hp: uint(2).max(2) }
    }
    define_messages! {
        #[derive(Debug)]
        enum M(id_bits = 1) { Hit = 1 { target: nested(Hp) } }
    }
    assert!(M::Hit {
        target: Hp { hp: 2 }
    }
    .encode()
    .is_ok());
    assert_eq!(
        M::decode(&[0b0000_0111]).unwrap_err(),
        DecodeError::OutOfRange("Hp.hp")
    );
}

#[test]
fn no_bytes_make_decode_panic() {
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut decoded = 0;
    for len in 0..3000usize {
        let mut bytes: Vec<u8> = (0..len % 48).map(|_| next() as u8).collect();
        if let Some(b) = bytes.first_mut() {
            // Mostly known ids, so the fields get exercised.
            *b = (*b & 0xf0) | [1, 2, 3, 9][len % 4];
        }
        if let Ok(m) = Message::decode(&bytes) {
            decoded += 1;
            // Whatever decodes encodes (padding bits aside, to the same bytes) and decodes back.
            assert_eq!(Message::decode(&m.encode().unwrap()).unwrap(), m);
        }
    }
    assert!(decoded > 0);
}
