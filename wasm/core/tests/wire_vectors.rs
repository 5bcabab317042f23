//! Generates WIRE.md test vectors from the code and checks them against the
//! committed `vectors/wire.json` (rewrite with `RICOCHET_BLESS=1`). The
//! TypeScript suite decodes the same file with a decoder written from
//! WIRE.md alone.

use ricochet_core::ack::ReceivedPackets;
use ricochet_core::auth::{
    welcome_number, Direction, Nonce, SessionKey, TagKey, TAG_LEN, TAG_OFFSET,
};
use ricochet_core::fec;
use ricochet_core::wire::{
    self, decode_frame, decode_handshake, AckRanges, ChannelKind, Frame, Handshake, MessageIter,
    Reader, Writer,
};

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn json_str(s: &[u8]) -> String {
    let s = String::from_utf8_lossy(s);
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Describe a datagram as JSON using the Rust decoder.
fn describe(d: &[u8]) -> Option<String> {
    let (ty, id) = wire::peek_conn_id(d)?;
    if ty != wire::PACKET_DATA {
        return Some(match decode_handshake(d).ok()? {
            Handshake::Hello { conn_id, version, channels, key, payload } => format!(
                "{{\"type\":\"HELLO\",\"connection_id\":{conn_id},\"version\":{version},\"channels\":[{}],\"session_key\":\"{}\",\"payload\":\"{}\"}}",
                channels.iter().map(|k| (*k as u8).to_string()).collect::<Vec<_>>().join(","),
                hex(&key),
                hex(payload)
            ),
            Handshake::Welcome { conn_id, version, nonce } => format!(
                "{{\"type\":\"WELCOME\",\"connection_id\":{conn_id},\"version\":{version},\"tag\":\"{}\",\"nonce\":\"{}\"}}",
                hex(tag(d)),
                hex(&nonce)
            ),
            Handshake::Reject { conn_id, version, reason } => format!(
                "{{\"type\":\"REJECT\",\"connection_id\":{conn_id},\"version\":{version},\"tag\":\"{}\",\"reason\":{}}}",
                hex(tag(d)),
                json_str(reason)
            ),
        });
    }
    if d.len() < wire::DATA_HEADER_LEN || id == 0 {
        return None;
    }
    let pn = u16::from_le_bytes([d[5], d[6]]);
    let mut r = Reader::new(&d[wire::DATA_HEADER_LEN..]);
    let mut frames = Vec::new();
    while !r.is_empty() {
        frames.push(match decode_frame(&mut r).ok()? {
            Frame::Ack { largest, delay_us, first_range, ranges, .. } => format!(
                "{{\"type\":\"ACK\",\"largest\":{largest},\"ack_delay_us\":{delay_us},\"first_range\":{first_range},\"ranges\":[{}]}}",
                AckRanges::new(ranges).map(|(g, l)| format!("[{g},{l}]")).collect::<Vec<_>>().join(",")
            ),
            Frame::Ping => "{\"type\":\"PING\"}".into(),
            Frame::Close { code, reason } => format!("{{\"type\":\"CLOSE\",\"code\":{code},\"reason\":{}}}", json_str(reason)),
            Frame::Messages { channel, first_seq, body, .. } => format!(
                "{{\"type\":\"MESSAGES\",\"channel\":{channel},\"first_seq\":{first_seq},\"messages\":[{}]}}",
                MessageIter::new(body).map(|m| format!("\"{}\"", hex(m))).collect::<Vec<_>>().join(",")
            ),
            Frame::Fragment { channel, seq, index, count, data } => format!(
                "{{\"type\":\"FRAGMENT\",\"channel\":{channel},\"seq\":{seq},\"index\":{index},\"count\":{count},\"data\":\"{}\"}}",
                hex(data)
            ),
            Frame::Repair { first_pn, count, power, parity } => format!(
                "{{\"type\":\"REPAIR\",\"first_pn\":{first_pn},\"count\":{count},\"power\":{power},\"parity\":\"{}\"}}",
                hex(parity)
            ),
            Frame::LossReport { loss, burst } => format!("{{\"type\":\"LOSS_REPORT\",\"loss\":{loss},\"burst\":{burst}}}"),
            Frame::PathChallenge(data) => format!("{{\"type\":\"PATH_CHALLENGE\",\"data\":\"{}\"}}", hex(&data)),
            Frame::PathResponse(data) => format!("{{\"type\":\"PATH_RESPONSE\",\"data\":\"{}\"}}", hex(&data)),
        });
    }
    Some(format!(
        "{{\"type\":\"DATA\",\"connection_id\":{id},\"packet_number\":{pn},\"tag\":\"{}\",\"frames\":[{}]}}",
        hex(tag(d)),
        frames.join(",")
    ))
}

fn tag(d: &[u8]) -> &[u8] {
    &d[TAG_OFFSET..TAG_OFFSET + TAG_LEN]
}

/// The session key every tagged vector is sealed with: bytes 00 01 … 0f.
const TEST_KEY: SessionKey = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];
/// The server nonce (WELCOME) the client → server vectors are sealed under: a0 a1 … a7.
const TEST_NONCE: Nonce = [0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7];

/// How a vector was sealed: direction and the number its tag covers.
#[derive(Clone, Copy)]
enum Seal {
    None,
    Up(u64),
    Down(u64),
}

/// A DATA packet from the client, numbered `pn`, with the tag filled in.
fn up(pn: u64, f: impl FnOnce(&mut Writer) -> bool) -> (Vec<u8>, Seal) {
    sealed(Seal::Up(pn), |w| {
        wire::encode_data_header(w, 0x1234_5678, pn) && f(w)
    })
}

fn sealed(seal: Seal, f: impl FnOnce(&mut Writer) -> bool) -> (Vec<u8>, Seal) {
    let mut d = build(f);
    match seal {
        Seal::None => {}
        Seal::Up(n) => TagKey::derive_client(&TEST_KEY, &TEST_NONCE).seal(&mut d, n),
        Seal::Down(n) => TagKey::derive(&TEST_KEY, Direction::ServerToClient).seal(&mut d, n),
    }
    (d, seal)
}

fn plain(d: Vec<u8>) -> (Vec<u8>, Seal) {
    (d, Seal::None)
}

/// A DATA header (connection ID 1, packet number 0, zero tag) and frames:
/// for vectors that are invalid whatever their tag.
fn bad(frames: &[u8]) -> Vec<u8> {
    [&[0x04, 1, 0, 0, 0, 0, 0][..], &[0; TAG_LEN], frames].concat()
}

fn build(f: impl FnOnce(&mut Writer) -> bool) -> Vec<u8> {
    let mut buf = vec![0u8; 1500];
    let mut w = Writer::new(&mut buf);
    assert!(f(&mut w));
    let n = w.len();
    buf.truncate(n);
    buf
}

fn messages(w: &mut Writer, channel: u8, first_seq: u16, msgs: &[&[u8]]) -> bool {
    w.put_u8(wire::FRAME_MESSAGES)
        && w.put_u8(channel)
        && w.put_u16(first_seq)
        && w.put_varint(msgs.len() as u64)
        && msgs.iter().all(|m| w.put_len_prefixed(m))
}

/// Two protected DATA packets (numbers 65535 and 65536, i.e. 0 on the
/// wire), the REPAIR that rebuilds either from the other, and one of power
/// 1 that rebuilds both with it.
fn repair_group() -> [(Vec<u8>, Seal); 4] {
    let a = up(65_535, |w| messages(w, 0, 41, &[b"first"]));
    let b = up(65_536, |w| {
        w.put_u8(wire::FRAME_PING) && messages(w, 0, 42, &[b"second, longer"])
    });
    let mut parity = Vec::new();
    fec::parity::xor_image(&mut parity, &a.0[wire::DATA_HEADER_LEN..]);
    fec::parity::xor_image(&mut parity, &b.0[wire::DATA_HEADER_LEN..]);
    let repair = up(65_537, |w| wire::encode_repair(w, 65_535, 2, 0, &parity));
    let (mut p0, mut p1) = (Vec::new(), Vec::new());
    for (i, d) in [&a.0, &b.0].into_iter().enumerate() {
        fec::parity::add_images(
            &mut [(&mut p0, 0), (&mut p1, i as u8)],
            &d[wire::DATA_HEADER_LEN..],
        );
    }
    assert_eq!(p0, parity, "power 0 is the XOR");
    let power1 = up(65_538, |w| wire::encode_repair(w, 65_535, 2, 1, &p1));
    [a, b, repair, power1]
}

fn vectors() -> Vec<(&'static str, (Vec<u8>, Seal))> {
    let id = 0x1234_5678;
    let [protected_a, protected_b, repair, repair_power1] = repair_group();
    let long: Vec<u8> = (0..200u32).map(|i| (i * 7) as u8).collect();
    let mut acks = ReceivedPackets::default();
    for pn in [0u64, 1, 2, 3, 5, 6, 9, 10, 11, 20] {
        acks.insert(pn, 1_000);
    }
    vec![
        (
            "hello",
            plain(build(|w| {
                wire::encode_hello(
                    w,
                    id,
                    &[
                        ChannelKind::ReliableOrdered,
                        ChannelKind::UnreliableSequenced,
                        ChannelKind::Unreliable,
                    ],
                    &TEST_KEY,
                    b"token",
                )
            })),
        ),
        (
            "hello_empty_payload",
            plain(build(|w| {
                wire::encode_hello(w, 1, &[ChannelKind::ReliableUnordered], &TEST_KEY, b"")
            })),
        ),
        (
            "hello_padded",
            plain(build(|w| {
                let ok = wire::encode_hello(w, id, &[ChannelKind::Unreliable], &TEST_KEY, b"hi");
                wire::pad_hello(w);
                ok && w.len() == wire::HELLO_MIN_LEN
            })),
        ),
        (
            "welcome",
            sealed(Seal::Down(welcome_number(&TEST_NONCE)), |w| {
                wire::encode_welcome(w, id, &TEST_NONCE)
            }),
        ),
        (
            "reject",
            sealed(Seal::Down(0), |w| {
                wire::encode_reject(w, id, "room \"full\"".as_bytes())
            }),
        ),
        ("data_ping", up(0, |w| w.put_u8(wire::FRAME_PING))),
        ("data_empty", up(65_535, |_| true)),
        (
            "data_messages_run",
            up(7, |w| messages(w, 0, 65_534, &[b"a", b"", b"xyz"])),
        ),
        (
            "data_two_byte_length",
            up(70_000, |w| messages(w, 3, 9, &[&long])),
        ),
        ("data_ack_ranges", up(3, |w| acks.encode_ack(w, 1_500))),
        (
            "data_fragment",
            up(4, |w| wire::encode_fragment(w, 1, 300, 2, 3, b"tail")),
        ),
        ("data_close", up(5, |w| wire::encode_close(w, 4000, b"bye"))),
        (
            "data_from_server",
            sealed(Seal::Down(1 << 32), |w| {
                wire::encode_data_header(w, id, 1 << 32) && w.put_u8(wire::FRAME_PING)
            }),
        ),
        (
            "data_mixed",
            up(6, |w| {
                acks.encode_ack(w, 1_000)
                    && w.put_u8(wire::FRAME_PING)
                    && messages(w, 2, 1, &[b"hi"])
                    && wire::encode_fragment(w, 0, 0, 0, 2, &[0x68; 64])
            }),
        ),
        ("protected_a", protected_a),
        ("protected_b", protected_b),
        ("data_repair", repair),
        ("data_repair_power1", repair_power1),
        (
            "data_loss_report",
            up(8, |w| {
                acks.encode_ack(w, 1_000) && wire::encode_loss_report(w, 3277, 16384)
            }),
        ),
        (
            "data_path_challenge",
            sealed(Seal::Down(9), |w| {
                wire::encode_data_header(w, id, 9)
                    && wire::encode_path_frame(
                        w,
                        wire::FRAME_PATH_CHALLENGE,
                        &[0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7],
                    )
            }),
        ),
        (
            "data_path_response",
            up(10, |w| {
                acks.encode_ack(w, 1_000)
                    && wire::encode_path_frame(
                        w,
                        wire::FRAME_PATH_RESPONSE,
                        &[0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7],
                    )
            }),
        ),
        ("invalid_empty", plain(vec![])),
        ("invalid_short_header", plain(vec![0x04, 0x78, 0x56, 0x34])),
        ("invalid_packet_type", plain(vec![0x09, 1, 0, 0, 0, 1, 0])),
        (
            "invalid_conn_id_zero",
            plain([vec![0x02, 0, 0, 0, 0, 3, 0], vec![0; TAG_LEN]].concat()),
        ),
        (
            "invalid_data_without_tag",
            plain(vec![0x04, 0x78, 0x56, 0x34, 0x12, 0, 0, 0x02]),
        ),
        (
            "invalid_welcome_without_tag",
            plain(vec![0x02, 0x78, 0x56, 0x34, 0x12, 3, 0]),
        ),
        (
            "invalid_welcome_without_nonce",
            plain([vec![0x02, 0x78, 0x56, 0x34, 0x12, 3, 0], vec![0; TAG_LEN]].concat()),
        ),
        (
            "invalid_hello_without_key",
            plain(vec![0x01, 1, 0, 0, 0, 3, 0, 1, 0, 0]),
        ),
        ("invalid_unknown_frame", plain(bad(&[0x7f]))),
        (
            "invalid_truncated_messages",
            plain(bad(&[0x10, 0, 0, 0, 1, 5, b'a'])),
        ),
        (
            "invalid_zero_count_messages",
            plain(bad(&[0x10, 0, 0, 0, 0])),
        ),
        (
            "invalid_fragment_index",
            plain(bad(&[0x11, 0, 0, 0, 2, 2, 0])),
        ),
        (
            "invalid_short_middle_fragment",
            plain(bad(&[0x11, 0, 0, 0, 0, 2, 3, 1, 2, 3])),
        ),
        (
            "invalid_fragment_count_one",
            plain(bad(&[0x11, 0, 0, 0, 0, 1, 0])),
        ),
        (
            "invalid_overlong_varint",
            plain([bad(&[0x03]), vec![0x80; 10], vec![0x01, 0]].concat()),
        ),
        (
            "invalid_hello_nonzero_padding",
            plain(
                [
                    build(|w| wire::encode_hello(w, 1, &[ChannelKind::Unreliable], &TEST_KEY, b"")),
                    vec![0, 0, 1],
                ]
                .concat(),
            ),
        ),
        (
            "invalid_hello_kind",
            plain(
                [
                    vec![0x01, 1, 0, 0, 0, 3, 0, 1, 9],
                    TEST_KEY.to_vec(),
                    vec![0],
                ]
                .concat(),
            ),
        ),
        (
            "invalid_repair_count_zero",
            plain(bad(&[0x20, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0])),
        ),
        (
            "invalid_repair_count_33",
            plain([bad(&[0x20, 0, 0, 33, 6]), vec![0; 6]].concat()),
        ),
        (
            "invalid_repair_power_3",
            plain([bad(&[0x20, 0, 0, 0xc2, 6]), vec![0; 6]].concat()),
        ),
        (
            "invalid_repair_short_parity",
            plain(bad(&[0x20, 0, 0, 1, 5, 0, 0, 0, 0, 0])),
        ),
        (
            "invalid_truncated_loss_report",
            plain(bad(&[0x21, 0, 0, 0])),
        ),
        (
            "invalid_truncated_path_challenge",
            plain(bad(&[0x30, 1, 2, 3, 4, 5, 6, 7])),
        ),
        (
            "invalid_ack_too_many_ranges",
            plain([bad(&[0x01, 0, 0, 0, 17, 0]), vec![0; 34]].concat()),
        ),
    ]
}

fn render() -> String {
    let mut out = String::from("[\n");
    let v = vectors();
    for (i, (name, (d, seal))) in v.iter().enumerate() {
        let body = match describe(d) {
            Some(p) => format!("\"packet\":{p}"),
            None => "\"error\":true".into(),
        };
        assert_eq!(
            name.starts_with("invalid_"),
            body.contains("\"error\""),
            "vector {name}"
        );
        let seal = match seal {
            Seal::None => String::new(),
            // Decimal strings: a WELCOME's number (its nonce) exceeds 2^53.
            Seal::Up(n) => {
                format!("\"sealed\":{{\"direction\":\"client_to_server\",\"number\":\"{n}\"}},")
            }
            Seal::Down(n) => {
                format!("\"sealed\":{{\"direction\":\"server_to_client\",\"number\":\"{n}\"}},")
            }
        };
        out += &format!(
            "  {{\"name\":\"{name}\",\"hex\":\"{}\",{seal}{body}}}{}\n",
            hex(d),
            if i + 1 < v.len() { "," } else { "" }
        );
    }
    out + "]\n"
}

#[test]
fn wire_vectors_match_committed_file() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/wire.json");
    let fresh = render();
    if std::env::var_os("RICOCHET_BLESS").is_some() {
        std::fs::write(path, &fresh).unwrap();
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        committed == fresh,
        "wire format changed: review WIRE.md, then rerun with RICOCHET_BLESS=1"
    );
}

#[test]
fn derived_tag_keys_of_the_test_key() {
    // Pinned here and in the TypeScript suite, which derives them itself.
    assert_eq!(
        hex(&TagKey::derive_client(&TEST_KEY, &TEST_NONCE).to_bytes()),
        CLIENT_TO_SERVER_KEY
    );
    assert_eq!(
        hex(&TagKey::derive(&TEST_KEY, Direction::ServerToClient).to_bytes()),
        SERVER_TO_CLIENT_KEY
    );
}

const CLIENT_TO_SERVER_KEY: &str = "25383fa27eb94628e7ed950e8e11ac8c";
const SERVER_TO_CLIENT_KEY: &str = "2821bce109fe05e405c1595fa2690fea";
