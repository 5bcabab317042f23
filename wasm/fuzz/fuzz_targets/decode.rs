//! Arbitrary bytes through every decoder and into fresh endpoints.
//!
//! 1. The whole input through `peek_conn_id`, `decode_handshake` (with a
//!    decode → encode → decode round trip of what decodes) and a
//!    `decode_frame` loop over the input read as a DATA body.
//! 2. The input, cut into datagrams (`[len u8][flags u8][bytes..]` records),
//!    into four endpoints: a connecting client, a connected client, a fresh
//!    server and a server with one accepted connection. Flag bits patch the
//!    record's connection ID to the victim's and/or prepend a valid DATA
//!    header, tagged under the victim's session key (the fuzzer plays the
//!    peer), so the bytes reach deep state instead of being dropped at the
//!    door. Every output is drained and timers are run between records.
//!
//! Nothing may panic; malformed input must come back as `Err`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use ricochet_core::auth::{Direction, SessionKey, TagKey};
use ricochet_core::wire::{
    self, decode_frame, decode_handshake, peek_conn_id, Frame, Handshake, Reader, Writer,
};
use ricochet_core::{Config, Connection, Event, Server, ServerConfig};
use ricochet_sim::pair::insecure_seeded_entropy;

const SEED: u64 = 0x5eed;

fuzz_target!(|data: &[u8]| {
    decoders(data);
    endpoints(data);
});

fn decoders(data: &[u8]) {
    if let Some((ty, id)) = peek_conn_id(data) {
        assert!((wire::PACKET_HELLO..=wire::PACKET_DATA).contains(&ty));
        assert_eq!(id.to_le_bytes(), data[1..5]);
    } else {
        assert!(data.len() < 5 || !(wire::PACKET_HELLO..=wire::PACKET_DATA).contains(&data[0]));
    }

    if let Ok(hs) = decode_handshake(data) {
        // What decodes re-encodes to something that decodes the same.
        let mut buf = vec![0u8; data.len() + 16];
        let mut w = Writer::new(&mut buf);
        let ok = match &hs {
            Handshake::Hello {
                conn_id,
                channels,
                key,
                payload,
                ..
            } => wire::encode_hello(&mut w, *conn_id, channels, key, payload),
            Handshake::Welcome { conn_id, nonce, .. } => {
                wire::encode_welcome(&mut w, *conn_id, nonce)
            }
            Handshake::Reject {
                conn_id, reason, ..
            } => wire::encode_reject(&mut w, *conn_id, reason),
        };
        assert!(ok, "re-encoding a decoded handshake did not fit");
        let n = w.len();
        let again = decode_handshake(&buf[..n]).expect("re-encoded handshake must decode");
        match (&hs, &again) {
            // The encoders always write PROTOCOL_VERSION.
            (
                Handshake::Hello {
                    conn_id: a,
                    channels: ca,
                    key: ka,
                    payload: pa,
                    ..
                },
                Handshake::Hello {
                    conn_id: b,
                    channels: cb,
                    key: kb,
                    payload: pb,
                    ..
                },
            ) => {
                assert_eq!((a, ca, ka, pa), (b, cb, kb, pb));
            }
            (
                Handshake::Welcome {
                    conn_id: a,
                    nonce: x,
                    ..
                },
                Handshake::Welcome {
                    conn_id: b,
                    nonce: y,
                    ..
                },
            ) => assert_eq!((a, x), (b, y)),
            (
                Handshake::Reject {
                    conn_id: a,
                    reason: ra,
                    ..
                },
                Handshake::Reject {
                    conn_id: b,
                    reason: rb,
                    ..
                },
            ) => {
                assert_eq!((a, ra), (b, rb));
            }
            _ => panic!("handshake type changed on re-encode: {hs:?} -> {again:?}"),
        }
    }

    // The input as a DATA body (and, if it is a DATA packet, its real body).
    frame_loop(data);
    if data.len() >= wire::DATA_HEADER_LEN && data[0] == wire::PACKET_DATA {
        frame_loop(&data[wire::DATA_HEADER_LEN..]);
    }
}

fn frame_loop(body: &[u8]) {
    let mut r = Reader::new(body);
    let mut last = 0;
    while !r.is_empty() {
        match decode_frame(&mut r) {
            Ok(f) => {
                assert!(r.pos() > last, "decode_frame made no progress");
                last = r.pos();
                match f {
                    Frame::Messages { count, body, .. } => {
                        assert!(count >= 1);
                        assert_eq!(
                            wire::MessageIter::new(body).count(),
                            count,
                            "MessageIter disagrees with count"
                        );
                    }
                    Frame::Ack {
                        ranges,
                        range_count,
                        ..
                    } => {
                        assert_eq!(
                            wire::AckRanges::new(ranges).count(),
                            range_count,
                            "AckRanges disagrees with count"
                        );
                    }
                    Frame::Fragment { index, count, .. } => assert!(count >= 2 && index < count),
                    Frame::Repair {
                        count,
                        power,
                        parity,
                        ..
                    } => {
                        assert!((1..=wire::MAX_REPAIR_COUNT).contains(&count) && parity.len() >= 6);
                        assert!(power < ricochet_core::fec::parity::POWERS);
                        // Whatever the parity holds, rebuilding refuses or returns a body inside it.
                        if let Some(b) = ricochet_core::fec::parity::recovered_body(parity) {
                            assert!(b.len() + 6 <= parity.len());
                        }
                    }
                    Frame::Ping
                    | Frame::Close { .. }
                    | Frame::LossReport { .. }
                    | Frame::PathChallenge(_)
                    | Frame::PathResponse(_) => {}
                }
            }
            Err(_) => break,
        }
        assert!(r.pos() <= body.len());
    }
}

struct Victims {
    connecting: Connection,
    connected: Connection,
    fresh: Server,
    live: Server,
    live_id: u32,
    now: u64,
    buf: Vec<u8>,
}

fn small_config() -> Config {
    Config {
        max_message_size: 16 << 10,
        send_buffer_bytes: 64 << 10,
        recv_buffer_bytes: 32 << 10,
        reliable_window: 64,
        ..Config::default()
    }
}

impl Victims {
    fn new() -> Victims {
        let cfg = small_config();
        let scfg = ServerConfig {
            connection: cfg.clone(),
            max_pending: 4,
            max_connections: 4,
            ..ServerConfig::default()
        };
        let connecting =
            Connection::client(cfg.clone(), 0, &insecure_seeded_entropy(SEED), b"hi").unwrap();
        let mut connected =
            Connection::client(cfg.clone(), 0, &insecure_seeded_entropy(SEED + 1), b"hi").unwrap();
        let mut live = Server::new(scfg.clone(), &ricochet_sim::pair::TEST_SERVER_SECRET).unwrap();
        let fresh = Server::new(scfg, &ricochet_sim::pair::TEST_SERVER_SECRET).unwrap();
        let mut buf = vec![0u8; 1500];
        // Handshake `connected` with `live` over a perfect link.
        let live_id = connected.id();
        let n = connected.poll_transmit(0, &mut buf).unwrap();
        live.handle_datagram(0, &buf[..n]).unwrap();
        while let Some((id, ev)) = live.poll_event() {
            if matches!(ev, Event::ConnectRequest { .. }) {
                assert!(live.accept(0, id));
            }
        }
        while let Some((_, n)) = live.poll_transmit(0, &mut buf) {
            let _ = connected.handle_datagram(0, &buf[..n]);
        }
        assert!(connected.is_connected());
        // Give both something outstanding so ACK frames have work to do.
        for ch in 0..4u8 {
            let _ = connected.send(0, ch, vec![ch; 300]);
            let _ = live.send(0, live_id, ch, vec![ch; 3000]);
        }
        while connected.poll_transmit(0, &mut buf).is_some() {}
        while live.poll_transmit(0, &mut buf).is_some() {}
        while connected.poll_event().is_some() {}
        while live.poll_event().is_some() {}
        Victims {
            connecting,
            connected,
            fresh,
            live,
            live_id,
            now: 0,
            buf,
        }
    }

    fn feed(&mut self, flags: u8, bytes: &[u8]) {
        self.now += 1 + (flags as u64 >> 4) * 2_000;
        let now = self.now;
        let targets: [u32; 4] = [
            self.connecting.id(),
            self.connected.id(),
            self.connecting.id(),
            self.live_id,
        ];
        // Who each target hears from: the direction and key its peer tags with.
        let peers = [
            (Direction::ServerToClient, SEED),
            (Direction::ServerToClient, SEED + 1),
            (Direction::ClientToServer, SEED),
            (Direction::ClientToServer, SEED + 1),
        ];
        for (i, &id) in targets.iter().enumerate() {
            let mut d = Vec::with_capacity(bytes.len() + wire::DATA_HEADER_LEN);
            if flags & 0x02 != 0 {
                // A valid DATA header (pn from the flags) ahead of the bytes.
                let pn = (flags as u64 >> 2) & 3;
                d.push(wire::PACKET_DATA);
                d.extend_from_slice(&id.to_le_bytes());
                d.extend_from_slice(&(pn as u16).to_le_bytes());
                d.extend_from_slice(&[0; ricochet_core::auth::TAG_LEN]);
                d.extend_from_slice(bytes);
                let (dir, seed) = peers[i];
                let key: SessionKey = insecure_seeded_entropy(seed)[4..].try_into().unwrap();
                TagKey::derive(&key, dir).seal(&mut d, pn);
            } else {
                d.extend_from_slice(bytes);
            }
            if flags & 0x01 != 0 && d.len() >= 5 && flags & 0x02 == 0 {
                d[1..5].copy_from_slice(&id.to_le_bytes());
            }
            let _ = match i {
                0 => self.connecting.handle_datagram(now, &d).map(|_| 0),
                1 => self.connected.handle_datagram(now, &d).map(|_| 0),
                2 => self.fresh.handle_datagram(now, &d),
                _ => self.live.handle_datagram(now, &d),
            };
        }
        self.pump(now);
    }

    fn pump(&mut self, now: u64) {
        for c in [&mut self.connecting, &mut self.connected] {
            if c.poll_timeout().is_some_and(|t| t <= now) {
                c.handle_timeout(now);
            }
            while c.poll_transmit(now, &mut self.buf).is_some() {}
            while c.poll_event().is_some() {}
            let s = c.stats();
            assert!(s.send_buffer_bytes <= c.config().send_buffer_bytes as u64);
            assert!(
                s.recv_buffer_bytes <= c.config().recv_buffer_bytes as u64,
                "recv buffer {}",
                s.recv_buffer_bytes
            );
        }
        for s in [&mut self.fresh, &mut self.live] {
            if s.poll_timeout().is_some_and(|t| t <= now) {
                s.handle_timeout(now);
            }
            while s.poll_transmit(now, &mut self.buf).is_some() {}
            while let Some((id, ev)) = s.poll_event() {
                if matches!(ev, Event::ConnectRequest { .. }) {
                    s.accept(now, id);
                }
            }
            let cfg = s.config().connection.clone();
            for id in s.connection_ids().collect::<Vec<_>>() {
                let st = s.connection(id).unwrap().stats();
                assert!(st.send_buffer_bytes <= cfg.send_buffer_bytes as u64);
                assert!(
                    st.recv_buffer_bytes <= cfg.recv_buffer_bytes as u64,
                    "recv buffer {}",
                    st.recv_buffer_bytes
                );
            }
        }
    }
}

fn endpoints(data: &[u8]) {
    let mut v = Victims::new();
    // The whole input as one datagram, as is.
    v.feed(0, data);
    // Then as records: [len][flags][len bytes]...
    let mut rest = data;
    let mut records = 0;
    while rest.len() >= 2 && records < 64 {
        let len = (rest[0] as usize).min(rest.len() - 2);
        let flags = rest[1];
        let bytes = &rest[2..2 + len];
        v.feed(flags, bytes);
        rest = &rest[2 + len..];
        records += 1;
    }
}
