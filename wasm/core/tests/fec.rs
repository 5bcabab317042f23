//! Forward error correction on virtual time: repair without a round trip,
//! zero cost on a clean link, the byte budget, adaptation to bursty loss,
//! and the S1 scenario measured with FEC off and on.

mod common;

use common::{check, payload};
use ricochet_core::wire::{self, Frame, Reader};
use ricochet_core::{ChannelConfig, Config, Event, FecConfig, ServerConfig};
use ricochet_sim::pair::Pair;
use ricochet_sim::{LinkConfig, LossModel, NetworkProfile};

const TICK: u64 = 16_667;

fn pair(fec: FecConfig, target_us: u64, loss: LossModel, seed: u64) -> Pair {
    let channels = vec![
        ChannelConfig::reliable_ordered().with_latency_target_us(target_us),
        ChannelConfig::unreliable(),
    ];
    let cfg = Config {
        fec,
        ..Config::default()
    }
    .with_channels(channels);
    let server = ServerConfig {
        connection: cfg.clone(),
        ..ServerConfig::default()
    };
    let mut p = Pair::new(cfg, server, NetworkProfile::s1(loss), seed);
    assert!(p.connect());
    p
}

/// S1 traffic: one 400-byte reliable-ordered message per 60 Hz tick.
/// Returns one-way latencies (µs) by message number.
fn s1_run(p: &mut Pair, messages: u32) -> Vec<u64> {
    let mut sent_at = Vec::with_capacity(messages as usize);
    let mut latency = vec![u64::MAX; messages as usize];
    let mut seen = p.server_events.len();
    let start = p.now;
    for i in 0..messages {
        // Step event by event so each delivery is timed when it happens.
        let due = start + i as u64 * TICK;
        while p.step_until(due) {
            seen = collect(p, seen, &sent_at, &mut latency);
        }
        p.run_until(due);
        seen = collect(p, seen, &sent_at, &mut latency);
        sent_at.push(p.now);
        p.client.send(p.now, 0, payload(i, 400)).unwrap();
        p.drive();
        seen = collect(p, seen, &sent_at, &mut latency);
    }
    let end = p.now + 3_000_000;
    while p.step_until(end) {
        seen = collect(p, seen, &sent_at, &mut latency);
        if latency.iter().all(|&l| l != u64::MAX) {
            break;
        }
    }
    latency
}

/// Record delivery times of messages that arrived since event `seen`.
fn collect(p: &Pair, seen: usize, sent_at: &[u64], latency: &mut [u64]) -> usize {
    for (_, e) in &p.server_events[seen..] {
        if let Event::Message { channel: 0, data } = e {
            let n = check(data) as usize;
            latency[n] = p.now - sent_at[n];
        }
    }
    p.server_events.len()
}

struct Summary {
    p50: f64,
    p99: f64,
    mean_sd: f64,
    wire_per_payload: f64,
    recovered: u64,
}

fn summarize(p: &Pair, lat: &[u64]) -> Summary {
    assert!(
        lat.iter().all(|&l| l != u64::MAX),
        "every reliable message arrives"
    );
    let mut ms: Vec<f64> = lat.iter().map(|&l| l as f64 / 1000.0).collect();
    ms.sort_by(f64::total_cmp);
    let n = ms.len() as f64;
    let mean = ms.iter().sum::<f64>() / n;
    let sd = (ms.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
    let pct = |q: f64| {
        ms[((q * n).ceil() as usize)
            .saturating_sub(1)
            .min(ms.len() - 1)]
    };
    let c = p.client.stats();
    Summary {
        p50: pct(0.50),
        p99: pct(0.99),
        mean_sd: mean + sd,
        wire_per_payload: c.bytes_out as f64 / (400.0 * lat.len() as f64),
        recovered: p.server_conn().unwrap().stats().fec_recovered,
    }
}

#[test]
fn clean_link_sends_no_repair() {
    let mut p = pair(FecConfig::low_latency(), 25_000, LossModel::None, 1);
    s1_run(&mut p, 600);
    let (c, s) = (p.client.stats(), p.server_conn().unwrap().stats());
    assert_eq!(c.fec_repair_bytes_out + s.fec_repair_bytes_out, 0);
    assert_eq!(c.fec_repair_packets_out + s.fec_repair_packets_out, 0);
    assert_eq!(s.fec_peer_loss, 0.0, "a clean link is never reported");
    assert_eq!(c.fec_peer_loss, 0.0, "a clean link is never reported");
}

#[test]
fn reordering_without_loss_sends_no_repair() {
    let mut p = pair(FecConfig::low_latency(), 25_000, LossModel::None, 11);
    let l = LinkConfig {
        latency_us: 10_000,
        jitter_us: 2_000,
        reorder: 0.1,
        reorder_extra_us: 5_000,
        ..LinkConfig::default()
    };
    p.net.set_profile(NetworkProfile {
        name: "reordering",
        client_to_server: l,
        server_to_client: l,
    });
    s1_run(&mut p, 1_000);
    let c = p.client.stats();
    assert!(p.net.stats().0.reordered > 20, "the link reordered");
    assert_eq!(c.fec_repair_bytes_out, 0);
    assert_eq!(c.fec_peer_loss, 0.0);
}

#[test]
fn fec_repairs_most_single_losses_without_a_round_trip() {
    let mut p = pair(FecConfig::low_latency(), 25_000, LossModel::iid(0.05), 2);
    let lat = s1_run(&mut p, 3_000);
    let s = p.server_conn().unwrap().stats();
    // Messages repaired by FEC arrive well before a retransmission could
    // (one RTT after detection, ≥ 40 ms here).
    let late = lat.iter().filter(|&&l| l > 30_000).count();
    assert!(s.fec_recovered > 100, "recovered {}", s.fec_recovered);
    assert!(
        late < lat.len() / 100,
        "{late} of {} messages later than 30 ms",
        lat.len()
    );
    // Residual loss counts lost repair packets too (half the packets here).
    assert!(
        s.residual_loss_in < s.loss_in * 0.6,
        "residual {} vs raw {}",
        s.residual_loss_in,
        s.loss_in
    );
}

#[test]
fn repair_overhead_stays_within_budget() {
    let mut p = pair(FecConfig::balanced(), 25_000, LossModel::iid(0.05), 3);
    s1_run(&mut p, 3_000);
    let c = p.client.stats();
    let data_bytes = c.bytes_out - c.fec_repair_bytes_out;
    let ratio = c.fec_repair_bytes_out as f64 / data_bytes as f64;
    assert!(c.fec_repair_bytes_out > 0);
    assert!(ratio <= 0.30 + 0.01, "repair {ratio:.3} of data bytes");
}

#[test]
fn fec_adapts_to_bursty_loss() {
    // The same mean loss, independent vs bursty: bursty loss is reported as
    // bursty and gets smaller groups (more repair per packet). The budget is
    // ample so that the controller, not the budget, decides.
    let fec = FecConfig {
        budget: 1.1,
        ..FecConfig::balanced()
    };
    let mut iid = pair(fec, 0, LossModel::iid(0.03), 4);
    let mut bursty = pair(fec, 0, LossModel::bursty(0.03, 0.5), 4);
    s1_run(&mut iid, 2_000);
    s1_run(&mut bursty, 2_000);
    let (ci, cb) = (iid.client.stats(), bursty.client.stats());
    assert!(
        cb.fec_peer_burst > ci.fec_peer_burst + 0.2,
        "burst {} vs {}",
        cb.fec_peer_burst,
        ci.fec_peer_burst
    );
    let per_packet =
        |c: &ricochet_core::Stats| c.fec_repair_packets_out as f64 / c.eliciting_packets_out as f64;
    assert!(
        per_packet(&cb) > 2.0 * per_packet(&ci),
        "repairs per packet {} vs {}",
        per_packet(&cb),
        per_packet(&ci)
    );
}

#[test]
fn reliable_delivery_survives_loss_with_fec_off_and_on() {
    for fec in [
        FecConfig::off(),
        FecConfig::balanced(),
        FecConfig::low_latency(),
        FecConfig::thrifty(),
    ] {
        let mut p = pair(fec, 25_000, LossModel::bursty(0.10, 0.25), 5);
        let lat = s1_run(&mut p, 1_500);
        assert!(lat.iter().all(|&l| l != u64::MAX), "{fec:?}");
        let got: Vec<u32> = p.server_messages(0).iter().map(|d| check(d)).collect();
        assert_eq!(got, (0..1_500).collect::<Vec<_>>(), "{fec:?}");
    }
}

#[test]
fn fec_can_be_switched_off_at_run_time() {
    let mut p = pair(FecConfig::balanced(), 25_000, LossModel::iid(0.05), 6);
    s1_run(&mut p, 600);
    assert!(p.client.stats().fec_repair_packets_out > 0);
    p.client.set_fec(FecConfig::off()).unwrap();
    let before = p.client.stats().fec_repair_packets_out;
    s1_run(&mut p, 600);
    assert_eq!(p.client.stats().fec_repair_packets_out, before);
    assert!(p
        .client
        .set_fec(FecConfig {
            budget: 5.0,
            ..FecConfig::balanced()
        })
        .is_err());
}

#[test]
fn peer_reported_loss_matches_the_link() {
    // The meter remembers ~256 packets (±1.4 points at 5 %), so the reports
    // are judged by their average over the run, sampled each second.
    let mut p = pair(FecConfig::balanced(), 0, LossModel::iid(0.05), 7);
    let mut reports = Vec::new();
    for n in 0..3_000u32 {
        p.client.send(p.now, 0, payload(n, 400)).unwrap();
        p.run_for(TICK);
        if n >= 300 && n % 60 == 0 {
            reports.push(p.client.stats().fec_peer_loss);
        }
    }
    let mean = reports.iter().sum::<f64>() / reports.len() as f64;
    assert!(
        (mean - 0.05).abs() < 0.01,
        "reported {mean} on average ({reports:?})"
    );
}

#[test]
fn unreliable_messages_rebuilt_by_fec_are_acked_not_lost() {
    let mut p = pair(FecConfig::low_latency(), 25_000, LossModel::iid(0.10), 8);
    let mut ids = std::collections::HashMap::new();
    for i in 0..2_000u32 {
        ids.insert(p.client.send(p.now, 1, payload(i, 100)).unwrap(), i);
        p.run_for(TICK);
    }
    p.run_for(2_000_000);
    let delivered: std::collections::HashSet<u32> =
        p.server_messages(1).iter().map(|d| check(d)).collect();
    let mut lost = 0;
    for e in &p.client_events {
        if let Event::Lost(id) = e {
            assert!(
                !delivered.contains(&ids[id]),
                "a message reported lost was delivered"
            );
            lost += 1;
        }
    }
    assert_eq!(lost + delivered.len(), 2_000);
    assert!(p.server_conn().unwrap().stats().fec_recovered > 50);
}

fn carries_repair(d: &[u8]) -> bool {
    let mut r = Reader::new(&d[wire::DATA_HEADER_LEN..]);
    while let Ok(f) = wire::decode_frame(&mut r) {
        if matches!(f, Frame::Repair { .. }) {
            return true;
        }
    }
    false
}

#[test]
fn corrupted_repair_never_corrupts_delivered_data() {
    // Flip one bit in every REPAIR-carrying datagram: rebuilt packets fail
    // their check and are refused; retransmission still delivers everything intact.
    let mut p = pair(FecConfig::low_latency(), 25_000, LossModel::None, 9);
    let lossy = LinkConfig {
        latency_us: 10_000,
        loss: LossModel::iid(0.05),
        ..LinkConfig::default()
    };
    p.net.set_profile(NetworkProfile {
        name: "lossy",
        client_to_server: lossy,
        server_to_client: lossy,
    });
    let mut buf = vec![0u8; 1500];
    let mut corrupted = 0;
    for i in 0..1_500u32 {
        p.client.send(p.now, 0, payload(i, 400)).unwrap();
        while let Some(n) = p.client.poll_transmit(p.now, &mut buf) {
            let d = &mut buf[..n];
            if carries_repair(d) {
                let last = d.len() - 3;
                d[last] ^= 0x10;
                corrupted += 1;
            }
            p.net.client_to_server.send(p.now, d);
        }
        p.run_for(TICK);
    }
    assert!(p.run_while_not(5_000_000, |p| p.server_messages(0).len() == 1_500));
    let got: Vec<u32> = p.server_messages(0).iter().map(|d| check(d)).collect();
    assert_eq!(got, (0..1_500).collect::<Vec<_>>());
    assert!(corrupted > 20, "only {corrupted} repairs corrupted");
}

#[test]
fn a_latency_target_meets_p99_25ms_under_bursty_loss() {
    // S1's bursty cell (Gilbert-Elliott 10 %, 25 % correlation) with the
    // game's configuration: a 15 ms target on the message channel. The
    // repair is the packet right after its data, so a burst takes both a
    // quarter of the time; sent twice, at most 1 % of messages miss 25 ms.
    let mut p = pair(
        FecConfig::low_latency(),
        15_000,
        LossModel::bursty(0.10, 0.25),
        11,
    );
    let lat = s1_run(&mut p, 6_000);
    summarize(&p, &lat); // every message arrives
                         // The first second goes unrepaired: no loss report has come back yet.
    let mut ms: Vec<u64> = lat[120..].to_vec();
    ms.sort_unstable();
    let p99 = ms[(ms.len() * 99).div_ceil(100) - 1];
    let late = ms.iter().filter(|&&l| l > 25_000).count();
    assert!(p99 <= 25_000, "p99 {p99} µs, {late} of {} late", ms.len());
}

#[test]
fn s1_measured_with_fec_off_and_on() {
    let cells: [(&str, LossModel); 4] = [
        ("0%", LossModel::None),
        ("1%", LossModel::iid(0.01)),
        ("5%", LossModel::iid(0.05)),
        ("GE 10%/25%", LossModel::bursty(0.10, 0.25)),
    ];
    let modes = [
        ("off", FecConfig::off()),
        ("balanced", FecConfig::balanced()),
        ("low_latency", FecConfig::low_latency()),
    ];
    println!("S1 on the simulator, 10000 × 400 B at 60 Hz, 20 ms RTT, 2 ms jitter; channel latency target 25 ms");
    println!(
        "{:<11} {:<12} {:>7} {:>7} {:>8} {:>10} {:>9}",
        "loss", "fec", "p50 ms", "p99 ms", "mean+sd", "wire/payl", "rebuilt"
    );
    for (name, loss) in cells {
        let mut p99_off = 0.0;
        for (mode, fec) in modes {
            let mut p = pair(fec, 25_000, loss, 42);
            let lat = s1_run(&mut p, 10_000);
            let s = summarize(&p, &lat);
            println!(
                "{name:<11} {mode:<12} {:>7.1} {:>7.1} {:>8.1} {:>10.3} {:>9}",
                s.p50, s.p99, s.mean_sd, s.wire_per_payload, s.recovered
            );
            if mode == "off" {
                p99_off = s.p99;
            }
            // Generous regression bounds: FEC never makes the tail worse
            // than retransmission alone, and costs nothing on a clean link.
            assert!(
                s.p99 <= p99_off + 2.0,
                "{name} {mode}: p99 {} vs off {p99_off}",
                s.p99
            );
            if matches!(loss, LossModel::None) {
                assert!(
                    s.wire_per_payload < 1.10,
                    "{name} {mode}: {}",
                    s.wire_per_payload
                );
            }
            if mode == "low_latency" && name == "5%" {
                assert!(s.p99 <= 30.0, "5% low_latency p99 {}", s.p99);
            }
        }
    }
}

#[test]
fn repair_that_cannot_rebuild_draws_an_immediate_ack() {
    let mut p = pair(FecConfig::balanced(), 0, LossModel::iid(0.05), 10);
    s1_run(&mut p, 300); // the server reports the loss; the client's FEC turns on
    p.net.set_profile(NetworkProfile::s1(LossModel::None));
    p.run_for(1_000_000);
    let mut buf = vec![0u8; 1500];
    let mut out = vec![0u8; 1500];
    // Drop the first two members of the next repair group, deliver the rest.
    let (mut seen_repair, mut dropped) = (false, 0);
    for i in 0..200u32 {
        p.client.send(p.now, 0, payload(10_000 + i, 400)).unwrap();
        while let Some(n) = p.client.poll_transmit(p.now, &mut buf) {
            let d = buf[..n].to_vec();
            if carries_repair(&d) {
                if seen_repair && dropped == 2 {
                    p.server.handle_datagram(p.now, &d).unwrap();
                    assert!(
                        p.server.poll_transmit(p.now, &mut out).is_some(),
                        "an ACK leaves at once"
                    );
                    return;
                }
                seen_repair = true;
            } else if seen_repair && dropped < 2 {
                dropped += 1;
                continue;
            }
            let _ = p.server.handle_datagram(p.now, &d);
            while p.server.poll_transmit(p.now, &mut out).is_some() {}
        }
        p.run_for(TICK);
    }
    panic!("no repair group with two losses was formed");
}

#[test]
fn server_latency_targets_apply_by_channel_index() {
    // The server's config names a target for channel 0 (the client declares
    // only the kind): the server's repairs follow it.
    let channels = vec![ChannelConfig::reliable_ordered().with_latency_target_us(25_000)];
    // Groups of 2 suit 5 % loss; the ample budget lets the deadline decide.
    let cfg = Config {
        fec: FecConfig {
            budget: 1.1,
            ..FecConfig::balanced()
        },
        ..Config::default()
    }
    .with_channels(channels.clone());
    let server = ServerConfig {
        connection: cfg.clone(),
        ..ServerConfig::default()
    };
    let client = Config {
        channels: vec![ChannelConfig::reliable_ordered()],
        ..cfg
    };
    let mut p = Pair::new(client, server, NetworkProfile::s1(LossModel::iid(0.05)), 12);
    assert!(p.connect());
    assert_eq!(
        p.server_conn().unwrap().channels()[0].latency_target_us,
        25_000
    );
    let id = p.client.id();
    for i in 0..600u32 {
        p.server.send(p.now, id, 0, payload(i, 400)).unwrap();
        p.run_for(TICK);
    }
    let s = p.server_conn().unwrap().stats();
    // One repair per packet (the deadline, 25 ms − transit, comes before the
    // next packet), not one per group of 2 as without the target.
    assert!(
        s.fec_repair_packets_out > 450,
        "repairs {}",
        s.fec_repair_packets_out
    );
}

#[test]
fn repair_stops_once_the_link_is_clean_again() {
    let mut p = pair(FecConfig::balanced(), 25_000, LossModel::iid(0.05), 13);
    s1_run(&mut p, 600);
    assert!(p.client.stats().fec_repair_packets_out > 0);
    p.net.set_profile(NetworkProfile::s1(LossModel::None));
    s1_run(&mut p, 600); // 10 s: the peer's estimate decays and clears
    let settled = p.client.stats().fec_repair_packets_out;
    s1_run(&mut p, 300);
    assert_eq!(
        p.client.stats().fec_repair_packets_out,
        settled,
        "no repair on the clean link"
    );
    assert_eq!(p.client.stats().fec_peer_loss, 0.0);
}

#[test]
fn a_lost_last_packet_still_gets_its_verdict_when_the_sender_goes_quiet() {
    // The sender stops after its last message; if that packet is lost while
    // its repair group is still open, no more data will ever close the group.
    // The probe timeout must settle it instead (seeds 17 and 19 of these hit
    // exactly that case).
    for seed in 0..20 {
        let up = LinkConfig {
            latency_us: 5_000,
            loss: LossModel::iid(0.2),
            ..LinkConfig::default()
        };
        let down = LinkConfig {
            latency_us: 5_000,
            ..LinkConfig::default()
        };
        let mut p = Pair::new(
            Config::default(),
            ServerConfig::default(),
            NetworkProfile {
                name: "lossy up",
                client_to_server: up,
                server_to_client: down,
            },
            seed,
        );
        assert!(p.connect());
        let mut pending = std::collections::HashSet::new();
        for i in 0..500 {
            pending.insert(p.client.send(p.now, 3, payload(i, 50)).unwrap());
            p.run_for(10_000);
        }
        p.run_for(2_000_000);
        for ev in p.client_events.drain(..) {
            if let Event::Acked(id) | Event::Lost(id) = ev {
                pending.remove(&id);
            }
        }
        assert!(
            pending.is_empty(),
            "seed {seed}: no verdict for {pending:?}"
        );
    }
}

/// 20 Mbit/s each way, 10 ms one way, 5 % iid loss, a 100 kB queue.
fn lossy_bottleneck() -> NetworkProfile {
    let l = LinkConfig {
        latency_us: 10_000,
        loss: LossModel::iid(0.05),
        rate_bytes_per_sec: 2_500_000,
        queue_bytes: 100_000,
        ..LinkConfig::default()
    };
    NetworkProfile {
        name: "lossy bottleneck",
        client_to_server: l,
        server_to_client: l,
    }
}

/// Queues `total` bytes of 1,000-byte messages on channel `ch` at once and
/// runs until they are all delivered; returns the client's repair bytes and
/// all bytes sent.
fn bulk_repair_share(channels: Vec<ChannelConfig>, total: u32) -> f64 {
    let cfg = Config::default().with_channels(channels);
    let server = ServerConfig {
        connection: cfg.clone(),
        ..ServerConfig::default()
    };
    let mut p = Pair::new(cfg, server, lossy_bottleneck(), 21);
    assert!(p.connect());
    // A second of game ticks first, so the sender knows the loss rate.
    for i in 0..60 {
        p.client.send(p.now, 0, payload(i, 400)).unwrap();
        p.run_for(TICK);
    }
    let before = p.client.stats();
    for i in 0..total / 1_000 {
        p.client.send(p.now, 0, payload(60 + i, 1_000)).unwrap();
    }
    assert!(
        p.run_while_not(60_000_000, |p| p.server_messages(0).len() as u32
            == 60 + total / 1_000)
    );
    let s = p.client.stats();
    (s.fec_repair_bytes_out - before.fec_repair_bytes_out) as f64
        / (s.bytes_out - before.bytes_out) as f64
}

#[test]
fn a_bulk_transfer_spends_almost_nothing_on_repair() {
    let share = bulk_repair_share(vec![ChannelConfig::reliable_ordered()], 4_000_000);
    // Only the tail, once less than two windows is buffered, is protected.
    assert!(
        share < 0.03,
        "repair was {:.1} % of the bytes",
        share * 100.0
    );
}

#[test]
fn a_bulk_transfer_on_a_channel_with_a_latency_target_keeps_its_repair() {
    let share = bulk_repair_share(
        vec![ChannelConfig::reliable_ordered().with_latency_target_us(50_000)],
        4_000_000,
    );
    assert!(
        share > 0.1,
        "repair was {:.1} % of the bytes",
        share * 100.0
    );
}
