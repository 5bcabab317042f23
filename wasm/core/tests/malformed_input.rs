//! Hostile bytes: truncated, bit-flipped and random datagrams never panic and
//! never disturb a live session.

mod common;

use common::{check, hostile, payload};
use ricochet_core::wire::{self, Reader};
use ricochet_core::{Config, Connection, DropReason, Server, ServerConfig};
use ricochet_sim::pair::Pair;
use ricochet_sim::rng::Rng;
use ricochet_sim::{LossModel, NetworkProfile};

/// Every datagram of a short real conversation (both directions), with FEC
/// on: a lossy warm-up gets both sides loss reports, so the transcript holds
/// REPAIR and LOSS_REPORT frames as well.
fn transcript() -> Vec<Vec<u8>> {
    let mut p = Pair::over(NetworkProfile::lan(), 11);
    assert!(p.connect());
    p.net.set_profile(NetworkProfile::s1(LossModel::iid(0.1)));
    for i in 0..200u32 {
        p.client.send(p.now, 0, payload(i, 300)).unwrap();
        let id = p.client.id();
        p.server.send(p.now, id, 0, payload(i, 300)).unwrap();
        p.run_for(16_667);
    }
    p.net.set_profile(NetworkProfile::lan());
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1500];
    for i in 0..20u32 {
        let len = if i % 7 == 0 { 4_000 } else { 30 + i as usize };
        p.client
            .send(p.now, (i % 4) as u8, payload(i, len))
            .unwrap();
        let mut k = 0;
        while let Some(n) = p.client.poll_transmit(p.now, &mut buf) {
            out.push(buf[..n].to_vec());
            k += 1;
            if k % 5 != 0 {
                let _ = p.server.handle_datagram(p.now, &buf[..n]);
            }
        }
        while let Some((_, n)) = p.server.poll_transmit(p.now + 1, &mut buf) {
            out.push(buf[..n].to_vec());
        }
        // Long enough in all for the server to send a fresh LOSS_REPORT.
        p.run_for(10_000);
    }
    p.client.close(p.now, 1, "done");
    while let Some(n) = p.client.poll_transmit(p.now, &mut buf) {
        out.push(buf[..n].to_vec());
    }
    let has = |ty: u8| {
        out.iter()
            .any(|d| d.first() == Some(&wire::PACKET_DATA) && frames(d).contains(&ty))
    };
    assert!(
        has(wire::FRAME_REPAIR) && has(wire::FRAME_LOSS_REPORT),
        "the transcript exercises FEC frames: repair {}, report {}",
        has(wire::FRAME_REPAIR),
        has(wire::FRAME_LOSS_REPORT)
    );
    out
}

/// Frame types of a DATA packet (as far as it decodes).
fn frames(d: &[u8]) -> Vec<u8> {
    let mut r = Reader::new(d.get(wire::DATA_HEADER_LEN..).unwrap_or_default());
    let mut types = Vec::new();
    let mut pos = r.pos();
    while let Ok(_f) = wire::decode_frame(&mut r) {
        types.push(d[wire::DATA_HEADER_LEN + pos]);
        pos = r.pos();
    }
    types
}

fn victims(seed: u64) -> (Connection, Server) {
    (
        Connection::client(
            Config::default(),
            0,
            &ricochet_sim::pair::insecure_seeded_entropy(seed),
            b"",
        )
        .unwrap(),
        Server::new(
            ServerConfig::default(),
            &ricochet_sim::pair::TEST_SERVER_SECRET,
        )
        .unwrap(),
    )
}

fn poke(client: &mut Connection, server: &mut Server, now: u64, d: &[u8]) {
    let mut buf = vec![0u8; 1500];
    let _ = client.handle_datagram(now, d);
    let _ = server.handle_datagram(now, d);
    while client.poll_transmit(now, &mut buf).is_some() {}
    while client.poll_event().is_some() {}
    while server.poll_transmit(now, &mut buf).is_some() {}
    while let Some((id, ev)) = server.poll_event() {
        if let ricochet_core::Event::ConnectRequest { .. } = ev {
            server.accept(now, id);
        }
    }
    client.handle_timeout(now);
    server.handle_timeout(now);
}

#[test]
fn truncated_and_bit_flipped_datagrams_never_panic() {
    let t = transcript();
    assert!(t.len() > 20);
    // Same seed as the transcript's pair: the victims share its connection
    // ID, so the mutated DATA packets reach frame decoding and live state.
    let (mut client, mut server) = victims(11);
    let mut buf = vec![0u8; 1500];
    let n = client.poll_transmit(0, &mut buf).expect("HELLO");
    let hello = buf[..n].to_vec();
    poke(&mut client, &mut server, 0, &hello);
    // The victim client needs the WELCOME's nonce (repeated for a HELLO).
    assert!(server.handle_datagram(0, &hello).is_ok());
    let (_, n) = server.poll_transmit(0, &mut buf).expect("WELCOME");
    assert_eq!(client.handle_datagram(0, &buf[..n]), Ok(()));
    assert_eq!(server.connection_ids().count(), 1);
    // Let the victims see the real conversation first, so mutations hit live state.
    let (last, rest) = t.split_last().unwrap();
    for (i, d) in rest.iter().enumerate() {
        poke(&mut client, &mut server, i as u64, d);
    }
    assert!(
        client.stats().packets_in > 0,
        "the victim client took the transcript's packets"
    );
    assert!(
        server
            .connection(client.id())
            .is_some_and(|c| c.stats().packets_in > 0),
        "so did the victim server"
    );
    let mut now = 1_000;
    for d in rest {
        for len in 0..d.len() {
            poke(&mut client, &mut server, now, &d[..len]);
        }
        let bits = (d.len() * 8).min(2_000);
        for bit in 0..bits {
            let mut m = d.clone();
            m[bit / 8] ^= 1 << (bit % 8);
            poke(&mut client, &mut server, now, &m);
        }
        now += 1_000;
    }
    assert!(
        client.stats().malformed > 0 && client.is_connected(),
        "mutations reached a live client"
    );
    assert!(
        client.stats().unauthenticated > 0,
        "header flips and cuts fail the tag"
    );
    // The client's own CLOSE ends the server side; reflected back to the
    // client it is refused, since each direction has its own tag key.
    poke(&mut client, &mut server, now, last);
    assert!(server
        .connection(client.id())
        .is_none_or(|c| !c.is_connected()));
    assert!(client.is_connected());
}

#[test]
fn random_datagrams_never_panic() {
    let (mut client, mut server) = victims(2);
    let id = client.id().to_le_bytes();
    let mut rng = Rng::new(3);
    for i in 0..100_000u64 {
        let len = rng.below(1_400) as usize;
        let mut d: Vec<u8> = (0..len).map(|_| rng.next_u32() as u8).collect();
        // Half carry a plausible header so they reach the frame decoder.
        if len >= 7 && i % 2 == 0 {
            d[0] = 1 + rng.below(4) as u8;
            d[1..5].copy_from_slice(&id);
        }
        poke(&mut client, &mut server, i * 10, &d);
    }
}

#[test]
fn garbage_does_not_disturb_a_live_session() {
    let mut p = Pair::over(hostile(0.05, 0.05, 0.02), 4);
    assert!(p.connect());
    let id = p.client.id().to_le_bytes();
    let mut rng = Rng::new(5);
    let mut injected = 0;
    let mut stray_malformed = 0;
    for i in 0..2_000u32 {
        p.client
            .send(p.now, 0, payload(i, 50 + i as usize % 2_000))
            .unwrap();
        for _ in 0..3 {
            let len = 16 + rng.below(300) as usize;
            let mut d: Vec<u8> = (0..len).map(|_| rng.next_u32() as u8).collect();
            if rng.chance(0.5) {
                // Right connection, undecodable frame and no valid tag: must be
                // dropped whole, before the frames are even looked at.
                d[0] = 4;
                d[1..5].copy_from_slice(&id);
                d[15] = 0xff;
                assert_eq!(
                    p.server.handle_datagram(p.now, &d),
                    Err(DropReason::Unauthenticated)
                );
                assert_eq!(
                    p.client.handle_datagram(p.now, &d),
                    Err(DropReason::Unauthenticated)
                );
                injected += 1;
            } else {
                // Another connection's ID (or no valid type at all).
                d[1..5].copy_from_slice(&(u32::from_le_bytes(id) ^ 1).to_le_bytes());
                let verdict = p.client.handle_datagram(p.now, &d);
                assert!(matches!(
                    verdict,
                    Err(DropReason::Malformed | DropReason::UnknownConnection)
                ));
                if verdict == Err(DropReason::Malformed) {
                    stray_malformed += 1;
                }
                assert!(p.server.handle_datagram(p.now, &d).is_err());
            }
        }
        p.run_for(8_000);
    }
    assert!(p.run_while_not(30_000_000, |p| p.server_messages(0).len() == 2_000));
    let got: Vec<u32> = p.server_messages(0).iter().map(|d| check(d)).collect();
    assert_eq!(got, (0..2_000).collect::<Vec<_>>());
    assert_eq!(p.client.stats().malformed, stray_malformed);
    assert_eq!(p.client.stats().unauthenticated, injected);
    assert_eq!(p.server_conn().unwrap().stats().unauthenticated, injected);
}
