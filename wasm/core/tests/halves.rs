//! Messages in halves (issue 16): on a path losing packets independently,
//! a latency-targeted message goes in two packets and one XOR of them, so a
//! loss is rebuilt in the same tick for half a message of repair instead of
//! a whole copy; under bursts, two or three repairs of different powers of
//! ω, any two of the packets rebuilding the message.

mod common;

use common::{check, payload};
use ricochet_core::wire::{self, Frame, Reader};
use ricochet_core::{ChannelConfig, Config, Event, ServerConfig};
use ricochet_sim::pair::Pair;
use ricochet_sim::{LossModel, NetworkProfile};

const TICK: u64 = 16_667;

/// The game's configuration: `Config::low_latency()`, a 15 ms target on
/// the message channel; 300 ticks of S1 traffic over `loss` so the peer's
/// loss reports reach the sender, then a clean link for the test proper.
fn warmed_up(loss: LossModel, seed: u64) -> Pair {
    warmed_up_with(ServerConfig::default(), loss, seed)
}

/// `warmed_up` towards a server configured as `server`.
fn warmed_up_with(server: ServerConfig, loss: LossModel, seed: u64) -> Pair {
    let cfg = Config::low_latency().with_channels(vec![
        ChannelConfig::reliable_ordered().with_latency_target_us(15_000)
    ]);
    warmed_up_as(cfg, server, loss, seed)
}

/// `warmed_up` with the client configured as `cfg` (S1 traffic on channel 0).
fn warmed_up_as(cfg: Config, server: ServerConfig, loss: LossModel, seed: u64) -> Pair {
    let mut p = Pair::new(cfg, server, NetworkProfile::s1(loss), seed);
    assert!(p.connect());
    for i in 0..300 {
        p.run_until(p.now + TICK);
        p.client.send(p.now, 0, payload(i, 400)).unwrap();
        p.drive();
    }
    p.run_for(200_000);
    p.net.set_profile(NetworkProfile::s1(LossModel::None));
    p
}

/// What one DATA packet carries: (fragment index, count) of each FRAGMENT,
/// the number of whole messages, and the REPAIR's group size, if any.
#[derive(Debug, Default)]
struct Carried {
    fragments: Vec<(u32, u32)>,
    messages: usize,
    repair: Option<u8>,
    /// The REPAIR's power of ω (0: the XOR).
    power: Option<u8>,
    /// The REPAIR's first member (low 16 bits of its packet number).
    first_pn: Option<u16>,
}

fn carried(d: &[u8]) -> Carried {
    let mut c = Carried::default();
    let mut r = Reader::new(&d[wire::DATA_HEADER_LEN..]);
    while let Ok(f) = wire::decode_frame(&mut r) {
        match f {
            Frame::Fragment { index, count, .. } => c.fragments.push((index, count)),
            Frame::Messages { .. } => c.messages += 1,
            Frame::Repair {
                count,
                power,
                first_pn,
                ..
            } => {
                c.repair = Some(count);
                c.power = Some(power);
                c.first_pn = Some(first_pn);
            }
            _ => {}
        }
    }
    c
}

/// Send one 400-byte message and return the datagrams it produced at once.
fn send_one(p: &mut Pair, n: u32) -> Vec<Vec<u8>> {
    send_tick(p, n, 1, 400)
}

/// Every datagram the client has to send now.
fn sent_now(p: &mut Pair) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1500];
    while let Some(len) = p.client.poll_transmit(p.now, &mut buf) {
        out.push(buf[..len].to_vec());
    }
    out
}

/// Send two 400-byte messages in one tick (`n`, `n + 1`), the second once
/// the sender has put out `between` datagrams of the first; return the
/// datagrams the two produced at once.
fn send_two(p: &mut Pair, n: u32, between: usize) -> Vec<Vec<u8>> {
    p.run_until(p.now + TICK);
    p.client.send(p.now, 0, payload(n, 400)).unwrap();
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1500];
    while out.len() < between {
        let len = p.client.poll_transmit(p.now, &mut buf).unwrap();
        out.push(buf[..len].to_vec());
    }
    p.client.send(p.now, 0, payload(n + 1, 400)).unwrap();
    out.extend(sent_now(p));
    out
}

/// One packet with whole messages (one MESSAGES frame), then its copy.
fn whole_with_its_copy(sent: &[Vec<u8>]) {
    let what: Vec<Carried> = sent.iter().map(|d| carried(d)).collect();
    assert_eq!(what.len(), 2, "{what:?}");
    assert!(
        what[0].fragments.is_empty() && what[0].messages == 1,
        "whole, in one MESSAGES frame: {what:?}"
    );
    assert_eq!(
        (what[1].repair, what[1].power),
        (Some(1), Some(0)),
        "its copy: {what:?}"
    );
}

/// Two messages each in halves with their own repair, one after the other:
/// first half, second half, XOR, three times two.
fn two_groups_of_halves(sent: &[Vec<u8>]) {
    let what: Vec<Carried> = sent.iter().map(|d| carried(d)).collect();
    assert_eq!(what.len(), 6, "{what:?}");
    for g in [0, 3] {
        assert_eq!(what[g].fragments, [(0, 2)], "first half alone: {what:?}");
        assert_eq!(
            what[g + 1].fragments,
            [(1, 2)],
            "second half alone: {what:?}"
        );
        assert_eq!(what[g + 2].repair, Some(2), "its own repair: {what:?}");
    }
}

/// Send `count` messages of `size` bytes in one tick (`n`, `n + 1`, …) and
/// return the datagrams they produced at once.
fn send_tick(p: &mut Pair, n: u32, count: u32, size: usize) -> Vec<Vec<u8>> {
    p.run_until(p.now + TICK);
    for i in 0..count {
        p.client.send(p.now, 0, payload(n + i, size)).unwrap();
    }
    sent_now(p)
}

/// Hand the server every datagram of `sent` but those at `lost`.
fn deliver_all_but(p: &mut Pair, sent: &[Vec<u8>], lost: &[usize]) {
    for (i, d) in sent.iter().enumerate() {
        if !lost.contains(&i) {
            let _ = p.server.handle_datagram(p.now, d);
        }
    }
    p.drive();
}

fn delivered(p: &Pair, n: u32) -> bool {
    p.server_events
        .iter()
        .any(|(_, e)| matches!(e, Event::Message { channel: 0, data } if check(data) == n))
}

#[test]
fn on_independent_loss_a_message_goes_in_two_packets_and_their_xor() {
    let mut p = warmed_up(LossModel::iid(0.03), 3);
    let sent = send_one(&mut p, 10_000);
    let what: Vec<Carried> = sent.iter().map(|d| carried(d)).collect();
    assert_eq!(what.len(), 3, "{what:?}");
    assert_eq!(what[0].fragments, [(0, 2)], "first half alone: {what:?}");
    assert_eq!(what[1].fragments, [(1, 2)], "second half alone: {what:?}");
    assert_eq!(what[2].repair, Some(2), "one repair over both: {what:?}");
    // Half a message of repair, not a whole copy.
    assert!(
        sent[2].len() < sent[0].len() + 20,
        "{} vs {}",
        sent[2].len(),
        sent[0].len()
    );
}

#[test]
fn without_halves_the_same_message_goes_whole_with_its_copy_in_two_packets() {
    // `FecConfig::halves` off (the SDK's choice on Chromium's WebTransport,
    // whose pacer holds a tick's third datagram): at 5 % loss, where halves
    // with their XOR would go (three packets), the message goes whole with
    // one copy, either of which delivers it.
    let fec = |halves| {
        let mut f = Config::low_latency().fec;
        f.halves = halves;
        f
    };
    let mut p = warmed_up(LossModel::iid(0.05), 3);
    assert_eq!(send_one(&mut p, 10_000).len(), 3, "halves and their XOR");
    for kept in [0, 1] {
        let mut p = warmed_up(LossModel::iid(0.05), 3);
        p.client.set_fec(fec(false)).unwrap();
        let sent = send_one(&mut p, 10_000);
        whole_with_its_copy(&sent);
        let _ = p.server.handle_datagram(p.now, &sent[kept]);
        p.drive();
        assert!(delivered(&p, 10_000), "packet {kept} alone delivers it");
    }
    let mut p = warmed_up(LossModel::iid(0.05), 3);
    p.client.set_fec(fec(true)).unwrap();
    assert_eq!(
        send_one(&mut p, 10_000).len(),
        3,
        "halves again once allowed"
    );
}

#[test]
fn a_lost_half_is_rebuilt_from_the_other_and_the_repair_in_the_same_tick() {
    for lost in [0, 1] {
        let mut p = warmed_up(LossModel::iid(0.03), 4);
        let sent = send_one(&mut p, 10_000);
        assert_eq!(sent.len(), 3);
        for (i, d) in sent.iter().enumerate() {
            if i != lost {
                let _ = p.server.handle_datagram(p.now, d);
            }
        }
        p.drive();
        assert!(
            delivered(&p, 10_000),
            "half {lost} lost: rebuilt and delivered at once"
        );
    }
}

#[test]
fn several_messages_in_one_tick_go_whole_together_with_one_copy() {
    // A game's tick often carries several messages on one channel. In
    // halves, each with its own repair, a loss its repair cannot rebuild
    // would hold the tick's later messages behind it (reliable order), so
    // a tick of two or more late far more often than S1's one message.
    // Whole in one packet with its copy, either packet delivers them all.
    for kept in [0, 1] {
        let mut p = warmed_up(LossModel::iid(0.05), 3);
        let sent = send_two(&mut p, 10_000, 0);
        whole_with_its_copy(&sent);
        deliver_all_but(&mut p, &sent, &[1 - kept]);
        assert!(
            delivered(&p, 10_000) && delivered(&p, 10_001),
            "packet {kept} alone delivers both"
        );
    }
}

#[test]
fn under_bursts_a_tick_spanning_packets_is_one_group_that_rebuilds_any_two() {
    // Four 400-byte messages fill more than one packet. Under bursts each
    // packet with copies of its own loses the tick whenever one packet and
    // its copies all go; one group over the tick's packets with repairs of
    // powers 0, 1 and 2 rebuilds any two of them, as a message in halves.
    let mut p = warmed_up(LossModel::bursty(0.10, 0.25), 3);
    let sent = send_tick(&mut p, 10_000, 4, 400);
    let what: Vec<Carried> = sent.iter().map(|d| carried(d)).collect();
    let data = what.iter().filter(|c| c.repair.is_none()).count();
    assert!(data >= 2, "the tick spans packets: {what:?}");
    let repairs: Vec<(Option<u8>, Option<u8>)> =
        what[data..].iter().map(|c| (c.repair, c.power)).collect();
    let count = Some(data as u8);
    assert_eq!(
        repairs,
        [(count, Some(0)), (count, Some(1)), (count, Some(2))],
        "one group's three repairs: {what:?}"
    );
    for lost in [[0, 1], [0, data], [1, data + 1]] {
        let mut p = warmed_up(LossModel::bursty(0.10, 0.25), 3);
        let sent = send_tick(&mut p, 10_000, 4, 400);
        deliver_all_but(&mut p, &sent, &lost);
        assert!(
            (10_000..10_004).all(|n| delivered(&p, n)),
            "packets {lost:?} lost: the tick rebuilt and delivered at once"
        );
    }
}

#[test]
fn under_bursts_a_tick_over_three_packets_comes_back_with_all_three_lost() {
    // Six 400-byte messages take three packets, and the group's three
    // repairs (powers 0, 1, 2) carry as much as they do: any three of the
    // six packets hold the tick, the three repairs alone included.
    let mut p = warmed_up(LossModel::bursty(0.10, 0.25), 3);
    let sent = send_tick(&mut p, 10_000, 6, 400);
    let what: Vec<Carried> = sent.iter().map(|d| carried(d)).collect();
    let repairs: Vec<(Option<u8>, Option<u8>)> = what.iter().map(|c| (c.repair, c.power)).collect();
    let data = (None, None);
    assert_eq!(
        repairs,
        [
            data,
            data,
            data,
            (Some(3), Some(0)),
            (Some(3), Some(1)),
            (Some(3), Some(2))
        ],
        "three data packets, then one group's three repairs: {what:?}"
    );
    let rebuilt = p.server_conn().map_or(0, |c| c.stats().fec_recovered);
    deliver_all_but(&mut p, &sent, &[0, 1, 2]);
    assert!(
        (10_000..10_006).all(|n| delivered(&p, n)),
        "the tick rebuilt from its repairs and delivered at once"
    );
    let now_rebuilt = p.server_conn().map_or(0, |c| c.stats().fec_recovered);
    assert_eq!(now_rebuilt - rebuilt, 3, "all three packets rebuilt");
}

#[test]
fn at_5_percent_a_tick_over_three_packets_is_one_group_with_two_repairs() {
    // Each packet with a copy of its own loses the tick whenever one packet
    // and its copy both go (0.75 % of ticks of three, and the later
    // messages wait behind it); the XOR and a repair of power 1 over the
    // three, five packets instead of six, lose it only when three go.
    let mut p = warmed_up(LossModel::iid(0.05), 3);
    let sent = send_tick(&mut p, 10_000, 6, 400);
    let what: Vec<(Option<u8>, Option<u8>)> = sent
        .iter()
        .map(|d| carried(d))
        .map(|c| (c.repair, c.power))
        .collect();
    let data = (None, None);
    assert_eq!(
        what,
        [data, data, data, (Some(3), Some(0)), (Some(3), Some(1))],
        "three data packets, then one group's two repairs"
    );
    for lost in [[0, 1], [1, 2], [0, 4], [2, 3]] {
        let mut p = warmed_up(LossModel::iid(0.05), 3);
        let sent = send_tick(&mut p, 10_000, 6, 400);
        deliver_all_but(&mut p, &sent, &lost);
        assert!(
            (10_000..10_006).all(|n| delivered(&p, n)),
            "packets {lost:?} lost: the tick rebuilt and delivered at once"
        );
    }
}

#[test]
fn a_tick_followed_by_other_channels_data_has_its_repair_at_once() {
    // Under bursts, a latency-targeted tick in one packet while another
    // channel (no target) still has data queued: the tick's repair leaves
    // right after it, not held for a tick group the other data never ends.
    let cfg = Config::low_latency().with_channels(vec![
        ChannelConfig::reliable_ordered().with_latency_target_us(15_000),
        ChannelConfig::reliable_ordered(),
    ]);
    let mut p = warmed_up_as(
        cfg,
        ServerConfig::default(),
        LossModel::bursty(0.10, 0.25),
        3,
    );
    p.run_until(p.now + TICK);
    for i in 0..2 {
        p.client.send(p.now, 0, payload(10_000 + i, 400)).unwrap();
    }
    for i in 0..3 {
        p.client.send(p.now, 1, payload(20_000 + i, 1_000)).unwrap();
    }
    let sent = sent_now(&mut p);
    let what: Vec<Carried> = sent.iter().map(|d| carried(d)).collect();
    let tick = pn_of(&sent[0]);
    assert!(
        what[1..3].iter().any(|c| c.first_pn == Some(tick)),
        "a repair of the tick's packet within the next two: {what:?}"
    );
}

#[test]
fn below_the_budget_of_a_whole_copy_several_messages_keep_their_halves() {
    // A budget under one whole copy (the SDK caps `low-latency`'s at 0.6 on
    // Firefox's WebTransport) could not protect a tick sent whole: two
    // messages queued together go in halves, each with its own XOR.
    let mut p = warmed_up(LossModel::iid(0.03), 3);
    let mut fec = Config::low_latency().fec;
    fec.budget = 0.6;
    p.client.set_fec(fec).unwrap();
    let sent = send_two(&mut p, 10_000, 0);
    two_groups_of_halves(&sent);
}

#[test]
fn a_packet_ending_one_message_in_halves_carries_no_first_half_of_the_next() {
    // A message queued once the one before has started out (its first half
    // sent) goes in halves too. Each keeps a group of its own: the packet
    // with the first message's second half does not carry the next one's
    // first half, so each XOR covers its own message's halves and a half
    // lost from each is rebuilt at once (sharing that packet, the two
    // would have one XOR over three packets, which two losses defeat).
    let mut p = warmed_up(LossModel::iid(0.03), 3);
    let sent = send_two(&mut p, 10_000, 1);
    two_groups_of_halves(&sent);
    for lost in [[0, 3], [0, 4], [1, 3], [1, 4]] {
        let mut p = warmed_up(LossModel::iid(0.03), 3);
        let sent = send_two(&mut p, 10_000, 1);
        deliver_all_but(&mut p, &sent, &lost);
        assert!(
            delivered(&p, 10_000) && delivered(&p, 10_001),
            "packets {lost:?} lost: both rebuilt and delivered at once"
        );
    }
}

/// The packet number of a DATA datagram (WIRE.md: type, connection ID, pn).
fn pn_of(d: &[u8]) -> u16 {
    u16::from_le_bytes([d[5], d[6]])
}

/// The first range (largest, count below it) of each ACK the server sends now.
fn server_acks(p: &mut Pair) -> Vec<(u16, u64)> {
    let mut acks = Vec::new();
    let mut buf = vec![0u8; 1500];
    while let Some((_, len)) = p.server.poll_transmit(p.now, &mut buf) {
        let mut r = Reader::new(&buf[wire::DATA_HEADER_LEN..len]);
        while let Ok(f) = wire::decode_frame(&mut r) {
            if let Frame::Ack {
                largest,
                first_range,
                ..
            } = f
            {
                acks.push((largest, first_range));
            }
        }
    }
    acks
}

#[test]
fn a_first_half_rebuilt_from_the_second_and_the_repair_is_acknowledged_at_once() {
    let mut p = warmed_up(LossModel::iid(0.03), 4);
    let sent = send_one(&mut p, 10_000);
    assert_eq!(sent.len(), 3);
    let first = pn_of(&sent[0]);
    let _ = p.server.handle_datagram(p.now, &sent[1]);
    let _ = server_acks(&mut p);
    let _ = p.server.handle_datagram(p.now, &sent[2]);
    let acks = server_acks(&mut p);
    assert!(
        acks.iter()
            .any(|&(largest, below)| largest.wrapping_sub(first) as u64 <= below),
        "the sender would resend a half the peer has: {acks:?} (first half {first})"
    );
}

#[test]
fn a_message_whose_ack_is_lost_is_not_sent_again() {
    // Its packets all arrived; the ACK did not (one in twenty at 5 % loss).
    // A lost first half shows in the ACK of a later packet of the message,
    // a lost second half and repair in the ACK of the first alone: silence
    // is a lost ACK, and the next message's ACK settles this one.
    let mut p = warmed_up(LossModel::iid(0.03), 4);
    let before = p.client.stats();
    let sent = send_one(&mut p, 10_000);
    let t0 = p.now;
    assert_eq!(sent.len(), 3);
    for d in &sent {
        let _ = p.server.handle_datagram(p.now, d);
    }
    assert!(!server_acks(&mut p).is_empty(), "the ACK that is lost");
    p.run_until(t0 + TICK);
    p.client.send(p.now, 0, payload(10_001, 400)).unwrap();
    p.drive();
    p.run_until(t0 + 4 * TICK);
    let after = p.client.stats();
    assert!(delivered(&p, 10_001));
    assert_eq!(
        (after.retransmissions, after.early_resends),
        (before.retransmissions, before.early_resends),
        "nothing of the first message goes again"
    );
}

/// Only the first half of a message arrives; the next message follows a
/// tick later. Both must be delivered before the second is 25 ms old;
/// returns the sender's early resends meanwhile.
fn first_half_alone_then_the_next_message(p: &mut Pair) -> u64 {
    let before = p.client.stats().early_resends;
    let sent = send_one(p, 10_000);
    let t0 = p.now;
    p.net.client_to_server.send(p.now, &sent[0]);
    p.run_until(t0 + TICK);
    p.client.send(p.now, 0, payload(10_001, 400)).unwrap();
    p.drive();
    p.run_until(t0 + TICK + 25_000);
    assert!(delivered(p, 10_000) && delivered(p, 10_001));
    p.client.stats().early_resends - before
}

#[test]
fn a_lost_second_half_and_its_repair_go_again_in_time_for_the_next_message() {
    // The peer acknowledges the first half alone, after the ACK delay it
    // holds a leading fragment for (5 ms), and nothing after it, so no
    // later packet's ACK shows the second lost. The second half's own ACK
    // was due before that ACK came; it goes when it comes, in time for the
    // next message (held behind this one).
    let mut p = warmed_up(LossModel::iid(0.03), 4);
    assert_eq!(first_half_alone_then_the_next_message(&mut p), 1);
}

#[test]
fn a_lost_second_half_goes_again_early_when_the_first_is_acknowledged_at_once() {
    // A peer that acknowledges within 1 ms: the ACK of the first half
    // alone comes before the second half's ACK is overdue, and the timer
    // resends it.
    let mut server = ServerConfig::default();
    server.connection.max_ack_delay_us = 1_000;
    let mut p = warmed_up_with(server, LossModel::iid(0.03), 4);
    assert_eq!(first_half_alone_then_the_next_message(&mut p), 1);
}

#[test]
fn a_message_fragmented_for_size_gets_two_repairs_over_both_fragments() {
    // 1,800 bytes do not fit one datagram: two fragments for size, not
    // halves. At 5 % one XOR over both would leave either fragment
    // unrecoverable whenever the other is lost too, and a copy of each
    // loses the message when a fragment and its copy both go: the XOR and a
    // repair of power 1 over both, as many packets, rebuild it from any two.
    let mut p = warmed_up(LossModel::iid(0.05), 6);
    p.run_until(p.now + TICK);
    p.client.send(p.now, 0, payload(10_000, 1_800)).unwrap();
    let sent = sent_now(&mut p);
    let what: Vec<Carried> = sent.iter().map(|d| carried(d)).collect();
    let fragments: Vec<_> = what.iter().flat_map(|c| c.fragments.clone()).collect();
    assert_eq!(fragments, [(0, 2), (1, 2)], "{what:?}");
    let repairs: Vec<_> = what.iter().filter_map(|c| c.repair.zip(c.power)).collect();
    assert_eq!(
        repairs,
        [(2, 0), (2, 1)],
        "two repairs of one group: {what:?}"
    );
    deliver_all_but(&mut p, &sent, &[0, 1]);
    assert!(delivered(&p, 10_000), "rebuilt from the two repairs alone");
}

#[test]
fn on_a_clean_link_messages_go_whole() {
    let mut p = warmed_up(LossModel::None, 5);
    let sent = send_one(&mut p, 10_000);
    let first = carried(&sent[0]);
    assert!(
        first.fragments.is_empty() && first.messages == 1,
        "{first:?}"
    );
}

#[test]
fn under_bursts_a_message_in_halves_gets_repairs_of_other_powers() {
    // Seeds whose warm-up reads as bursts (a few read heavier, and their
    // messages go whole with copies, as before).
    let mut three = 0;
    for seed in [7, 9, 10, 11, 12] {
        let mut p = warmed_up(LossModel::bursty(0.10, 0.25), seed);
        let w: Vec<Carried> = send_one(&mut p, 10_000)
            .iter()
            .map(|d| carried(d))
            .collect();
        assert_eq!(w[0].fragments, [(0, 2)], "{w:?}");
        assert_eq!(w[1].fragments, [(1, 2)], "{w:?}");
        let powers: Vec<_> = w[2..].iter().map(|c| (c.repair, c.power)).collect();
        assert!(
            powers == [(Some(2), Some(0)), (Some(2), Some(1))]
                || powers == [(Some(2), Some(0)), (Some(2), Some(1)), (Some(2), Some(2))],
            "{w:?}"
        );
        three += (w.len() == 5) as u32;
    }
    // Two repairs would leave more late than the rule aims at on s1_bursty:
    // three for all (a milder reading of the bursts mixes two and three,
    // `fec::encoder`'s tests).
    assert!(three >= 4, "three repairs for most: {three} of 5");
}

#[test]
fn under_bursts_any_two_of_a_messages_packets_deliver_it_in_the_same_tick() {
    // Seed 9 sends five packets: halves 0 and 1, repairs of powers 0, 1, 2.
    for [a, b] in [
        [3, 4],
        [2, 4],
        [2, 3],
        [0, 3],
        [1, 3],
        [0, 4],
        [1, 4],
        [0, 2],
        [1, 2],
        [0, 1],
    ] {
        let mut p = warmed_up(LossModel::bursty(0.10, 0.25), 9);
        let sent = send_one(&mut p, 10_000);
        assert_eq!(sent.len(), 5, "halves and three repairs");
        for i in [a, b] {
            let _ = p.server.handle_datagram(p.now, &sent[i]);
        }
        p.drive();
        assert!(
            delivered(&p, 10_000),
            "packets {a} and {b} of {}",
            sent.len()
        );
    }
}

/// S1's 5 % cell on seed `seed` as bench/s1.mjs counts it (every datagram
/// both ways with 28 bytes of IP and UDP): each message's latency after the
/// first second, which goes whole (no loss report has come back yet), and
/// the wire bytes.
fn s1_5pct(seed: u64, messages: u32) -> (Vec<u64>, u64) {
    let cfg = Config::low_latency().with_channels(vec![
        ChannelConfig::reliable_ordered().with_latency_target_us(15_000)
    ]);
    let mut p = Pair::new(
        cfg,
        ServerConfig::default(),
        NetworkProfile::s1(LossModel::iid(0.05)),
        seed,
    );
    assert!(p.connect());
    let (c0, s0) = p.net.stats();
    let mut sent_at = Vec::new();
    let mut latency = vec![u64::MAX; messages as usize];
    let start = p.now;
    let mut seen = 0;
    let mut record = |p: &Pair, sent_at: &[u64], seen: &mut usize| {
        for (_, e) in &p.server_events[*seen..] {
            if let Event::Message { channel: 0, data } = e {
                let n = check(data) as usize;
                latency[n] = p.now - sent_at[n];
            }
        }
        *seen = p.server_events.len();
    };
    for i in 0..messages {
        let due = start + i as u64 * TICK;
        while p.step_until(due) {
            record(&p, &sent_at, &mut seen);
        }
        p.run_until(due);
        record(&p, &sent_at, &mut seen);
        sent_at.push(p.now);
        p.client.send(p.now, 0, payload(i, 400)).unwrap();
        p.drive();
        record(&p, &sent_at, &mut seen);
    }
    let end = p.now + 3_000_000;
    while p.step_until(end) {
        record(&p, &sent_at, &mut seen);
    }
    let (c1, s1) = p.net.stats();
    let packets = (c1.sent - c0.sent) + (s1.sent - s0.sent);
    let bytes = (c1.bytes_sent - c0.bytes_sent) + (s1.bytes_sent - s0.bytes_sent) + 28 * packets;
    assert!(
        latency.iter().all(|&l| l != u64::MAX),
        "every message arrives"
    );
    (latency[120..].to_vec(), bytes)
}

#[test]
fn s1_at_5pct_costs_under_2_25_wire_bytes_a_payload_byte_with_p99_under_25ms() {
    // Whole messages and their copies cost 2.70 here (p99 12 ms); halves
    // and trimmed ACKs 2.28 (p99 18.8 ms: the 0.7 % that lose two of three
    // packets wait for a resend); one ACK a message and second halves alone
    // resent, bare, 2.15 (p99 19.5 ms); second halves resent early only once
    // their first is acknowledged 2.10 (0.8–0.9 % over 25 ms). With that
    // share late, p99 is measured over three seeds of 10,000 messages
    // pooled: one seed's sample puts it on either side of 25 ms by chance.
    const MESSAGES: u32 = 10_000;
    let (mut ms, mut bytes) = (Vec::new(), 0);
    for seed in 1..=3 {
        let (l, b) = s1_5pct(seed, MESSAGES);
        ms.extend(l);
        bytes += b;
    }
    ms.sort_unstable();
    let p99 = ms[(ms.len() * 99).div_ceil(100) - 1];
    let per_payload = bytes as f64 / (3.0 * MESSAGES as f64 * 400.0);
    assert!(p99 <= 25_000, "p99 {p99} µs");
    assert!(
        per_payload <= 2.25,
        "{per_payload:.3} wire bytes a payload byte"
    );
}
