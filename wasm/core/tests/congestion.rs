//! Congestion control and pacing on virtual time, over a simulated
//! bottleneck (rate limit + tail-drop queue): bulk goodput under random loss,
//! the queueing delay bulk traffic adds, game latency beside a bulk
//! transfer, and pacing. BBR and NewReno run the same seeded scenarios; the
//! side-by-side figures print with `-- --nocapture`.

mod common;

use common::{check, payload};
use ricochet_core::{ChannelConfig, Config, CongestionKind, Event, FecConfig, ServerConfig, Timer};
use ricochet_sim::pair::Pair;
use ricochet_sim::{LinkConfig, LossModel, NetworkProfile};

const MBIT: u64 = 1_000_000 / 8; // bytes per second
const TICK: u64 = 16_667;

/// A bottleneck of `rate` bytes/s with a `queue_bytes` tail-drop queue,
/// `one_way_us` each way, iid `loss` each way.
fn bottleneck(
    rate: u64,
    one_way_us: u64,
    jitter_us: u64,
    loss: f64,
    queue_bytes: usize,
) -> NetworkProfile {
    let l = LinkConfig {
        latency_us: one_way_us,
        jitter_us,
        loss: if loss > 0.0 {
            LossModel::iid(loss)
        } else {
            LossModel::None
        },
        rate_bytes_per_sec: rate,
        queue_bytes,
        ..LinkConfig::default()
    };
    NetworkProfile {
        name: "bottleneck",
        client_to_server: l,
        server_to_client: l,
    }
}

/// 20 Mbit/s, 20 ms RTT, a queue of two bandwidth-delay products (100 kB).
fn link_20mbit(loss: f64) -> NetworkProfile {
    bottleneck(20 * MBIT, 10_000, 0, loss, 100_000)
}

fn pair(
    cc: CongestionKind,
    channels: Vec<ChannelConfig>,
    profile: NetworkProfile,
    seed: u64,
) -> Pair {
    // FEC off: these tests measure the congestion controller alone.
    let cfg = Config {
        congestion: cc,
        fec: FecConfig::off(),
        ..Config::default()
    }
    .with_channels(channels);
    let server = ServerConfig {
        connection: cfg.clone(),
        ..ServerConfig::default()
    };
    let mut p = Pair::new(cfg, server, profile, seed);
    assert!(p.connect());
    p
}

struct Bulk {
    /// Payload bytes delivered per second of transfer, as a share of `rate`.
    goodput: f64,
    /// The same, after the transfer's first 500 ms (startup excluded).
    steady_goodput: f64,
    seconds: f64,
    /// Smoothed RTT samples seen by the sender while the transfer ran, µs.
    rtt_samples: Vec<u64>,
}

/// Send `total` bytes as 64 kB reliable-ordered messages on `channel`,
/// keeping the send buffer fed, until every byte arrived in order.
fn bulk(p: &mut Pair, channel: u8, total: usize, rate: u64) -> Bulk {
    const MSG: usize = 64 << 10;
    let count = total.div_ceil(MSG) as u32;
    let start = p.now;
    let mut queued = 0u32;
    let mut rtt_samples = Vec::new();
    let mut seen = p.server_events.len();
    let mut delivered = 0u32;
    let limit = start + 600_000_000;
    let mut steady_from: Option<(u64, u32)> = None;
    while delivered < count {
        if steady_from.is_none() && p.now >= start + 500_000 {
            steady_from = Some((p.now, delivered));
        }
        while queued < count && p.client.send(p.now, channel, payload(queued, MSG)).is_ok() {
            queued += 1;
        }
        assert!(
            p.step_until(limit),
            "transfer stalled at {delivered}/{count}: {:?}",
            p.client.stats()
        );
        for (_, e) in &p.server_events[seen..] {
            if let Event::Message { channel: c, data } = e {
                if *c == channel {
                    assert_eq!(check(data), delivered, "in order, intact");
                    delivered += 1;
                }
            }
        }
        seen = p.server_events.len();
        rtt_samples.push(p.client.rtt());
    }
    let seconds = (p.now - start) as f64 / 1e6;
    let goodput = (count as usize * MSG) as f64 / seconds / rate as f64;
    let (t0, d0) = steady_from.unwrap_or((start, 0));
    let steady_goodput =
        ((count - d0) as usize * MSG) as f64 / ((p.now - t0) as f64 / 1e6) / rate as f64;
    Bulk {
        goodput,
        steady_goodput,
        seconds,
        rtt_samples,
    }
}

fn run_bulk(cc: CongestionKind, loss: f64, seed: u64) -> Bulk {
    let mut p = pair(
        cc,
        vec![ChannelConfig::reliable_ordered()],
        link_20mbit(loss),
        seed,
    );
    bulk(&mut p, 0, 8 << 20, 20 * MBIT)
}

fn compare_goodput(loss: f64) -> (f64, f64) {
    let bbr = run_bulk(CongestionKind::Bbr, loss, 11);
    let reno = run_bulk(CongestionKind::NewReno, loss, 11);
    println!(
        "8 MiB over 20 Mbit/s, 20 ms RTT, {:.0} % loss each way: goodput BBR {:.1} % of link ({:.2} s), NewReno {:.1} % ({:.2} s)",
        loss * 100.0,
        bbr.goodput * 100.0,
        bbr.seconds,
        reno.goodput * 100.0,
        reno.seconds
    );
    (bbr.goodput, reno.goodput)
}

#[test]
fn bulk_transfer_reaches_80pct_of_link_rate_on_a_clean_link() {
    let (bbr, _) = compare_goodput(0.0);
    assert!(bbr >= 0.80, "BBR goodput {:.1} %", bbr * 100.0);
}

#[test]
fn bulk_transfer_reaches_80pct_of_link_rate_at_2pct_loss() {
    let (bbr, reno) = compare_goodput(0.02);
    assert!(bbr >= 0.80, "BBR goodput {:.1} %", bbr * 100.0);
    assert!(
        bbr > reno * 1.5,
        "BBR {:.1} % should far exceed NewReno {:.1} %",
        bbr * 100.0,
        reno * 100.0
    );
}

#[test]
fn bulk_transfer_reaches_80pct_of_link_rate_at_5pct_loss() {
    let (bbr, reno) = compare_goodput(0.05);
    assert!(bbr >= 0.80, "BBR goodput {:.1} %", bbr * 100.0);
    assert!(
        bbr > reno * 1.5,
        "BBR {:.1} % should far exceed NewReno {:.1} %",
        bbr * 100.0,
        reno * 100.0
    );
}

/// Median and maximum of the sender's smoothed RTT during a clean-link
/// bulk transfer, and bottleneck queue drops.
fn queueing(cc: CongestionKind) -> (u64, u64, u64) {
    let mut p = pair(
        cc,
        vec![ChannelConfig::reliable_ordered()],
        link_20mbit(0.0),
        12,
    );
    let mut b = bulk(&mut p, 0, 8 << 20, 20 * MBIT);
    b.rtt_samples.sort_unstable();
    let median = b.rtt_samples[b.rtt_samples.len() / 2];
    let max = *b.rtt_samples.last().unwrap();
    (median, max, p.net.client_to_server.stats().queue_dropped)
}

#[test]
fn bulk_transfer_keeps_the_bottleneck_queue_short() {
    let (bbr_median, bbr_max, bbr_drops) = queueing(CongestionKind::Bbr);
    let (reno_median, reno_max, reno_drops) = queueing(CongestionKind::NewReno);
    println!(
        "RTT during 8 MiB bulk (base 20 ms, queue 100 kB = 40 ms): BBR median {:.1} ms max {:.1} ms, {bbr_drops} queue drops; NewReno median {:.1} ms max {:.1} ms, {reno_drops} queue drops",
        bbr_median as f64 / 1e3,
        bbr_max as f64 / 1e3,
        reno_median as f64 / 1e3,
        reno_max as f64 / 1e3
    );
    // Base RTT 20 ms (+ up to 5 ms ack delay); BBR keeps ≲ one BDP queued.
    assert!(bbr_median <= 30_000, "BBR median RTT {bbr_median} µs");
    assert!(
        bbr_median + 10_000 < reno_median,
        "NewReno fills the queue: {reno_median} µs vs BBR {bbr_median} µs"
    );
}

/// One-way latencies (µs) of 100-byte game messages sent every tick on a
/// high-priority channel while 4 MiB of bulk runs on a low-priority one.
fn game_beside_bulk(cc: CongestionKind, loss: f64) -> Vec<u64> {
    let channels = vec![
        ChannelConfig::unreliable_sequenced().with_priority(200),
        ChannelConfig::reliable_ordered().with_priority(10),
    ];
    let mut p = pair(cc, channels, link_20mbit(loss), 13);
    const MSG: usize = 64 << 10;
    let bulk_count = (4 << 20) / MSG as u32;
    let (mut queued, mut tick) = (0u32, 0u32);
    let mut sent_at: Vec<u64> = Vec::new();
    let mut latency = Vec::new();
    let mut seen = p.server_events.len();
    let start = p.now;
    let mut bulk_done = false;
    while !bulk_done {
        let due = start + tick as u64 * TICK;
        while queued < bulk_count && p.client.send(p.now, 1, payload(queued, MSG)).is_ok() {
            queued += 1;
        }
        if p.now >= due {
            sent_at.push(p.now);
            p.client.send(p.now, 0, payload(tick, 100)).unwrap();
            tick += 1;
            p.drive();
        }
        let next = start + tick as u64 * TICK;
        p.step_until(next);
        for (_, e) in &p.server_events[seen..] {
            match e {
                Event::Message { channel: 0, data } => {
                    let n = check(data) as usize;
                    latency.push(p.now - sent_at[n])
                }
                Event::Message { channel: 1, data } => bulk_done = check(data) + 1 == bulk_count,
                _ => {}
            }
        }
        seen = p.server_events.len();
        assert!(p.now < start + 120_000_000, "bulk never finished");
    }
    assert!(
        latency.len() as f64 >= sent_at.len() as f64 * (1.0 - loss) * 0.9,
        "most game messages arrive"
    );
    latency.sort_unstable();
    latency
}

fn p99(sorted: &[u64]) -> u64 {
    sorted[(sorted.len() * 99).div_ceil(100).saturating_sub(1)]
}

#[test]
fn game_messages_keep_low_latency_beside_a_bulk_transfer() {
    let bbr = game_beside_bulk(CongestionKind::Bbr, 0.0);
    let reno = game_beside_bulk(CongestionKind::NewReno, 0.0);
    println!(
        "60 Hz game messages beside 4 MiB bulk, 20 Mbit/s, 10 ms one way: BBR p50 {:.1} ms p99 {:.1} ms; NewReno p50 {:.1} ms p99 {:.1} ms",
        bbr[bbr.len() / 2] as f64 / 1e3,
        p99(&bbr) as f64 / 1e3,
        reno[reno.len() / 2] as f64 / 1e3,
        p99(&reno) as f64 / 1e3
    );
    // One-way delay is 10 ms: p99 within one RTT (20 ms) plus 10 ms, the
    // bulk transfer's start included.
    assert!(p99(&bbr) <= 30_000, "BBR game p99 {} µs", p99(&bbr));
}

/// A connected BBR client on a 2 Mbit/s, 20 ms RTT path, its bandwidth
/// measured by two seconds of traffic so pacing runs near 2 Mbit/s (where
/// the burst allowance is its 10-datagram minimum).
fn paced_client() -> Pair {
    let mut p = pair(
        CongestionKind::Bbr,
        vec![ChannelConfig::reliable_ordered()],
        bottleneck(2 * MBIT, 10_000, 0, 0.0, 0),
        14,
    );
    for i in 0..20 {
        p.client.send(p.now, 0, payload(i, 20_000)).unwrap();
        p.run_for(100_000);
    }
    p
}

#[test]
fn pacing_spreads_a_large_burst() {
    let mut p = paced_client();
    for i in 0..50 {
        p.client.send(p.now, 0, payload(1000 + i, 10_000)).unwrap();
    }
    let mut buf = vec![0u8; 1500];
    let mut at_once = 0;
    while p.client.poll_transmit(p.now, &mut buf).is_some() {
        at_once += 1;
    }
    // The burst allowance at a low rate is 10 datagrams; 500 kB are queued.
    assert!(
        (1..=10).contains(&at_once),
        "{at_once} datagrams left at one instant"
    );
    let (timer, at) = p.client.next_timer().unwrap();
    assert_eq!(
        timer,
        Timer::Pacing,
        "the pacing deadline is the next timer"
    );
    assert!(at > p.now);
    // At the deadline one more datagram may leave, not the whole queue.
    let mut next = 0;
    while p.client.poll_transmit(at, &mut buf).is_some() {
        next += 1;
    }
    assert!(
        (1..=2).contains(&next),
        "{next} datagrams at the pacing deadline"
    );
}

#[test]
fn game_tick_datagrams_leave_together_on_an_idle_link() {
    let mut p = paced_client();
    p.run_for(1_000_000);
    for i in 0..4 {
        p.client.send(p.now, 0, payload(5000 + i, 1_000)).unwrap();
    }
    let mut buf = vec![0u8; 1500];
    let mut at_once = 0;
    while p.client.poll_transmit(p.now, &mut buf).is_some() {
        at_once += 1;
    }
    assert_eq!(at_once, 4, "a tick's datagrams are not delayed by pacing");
    assert_ne!(p.client.next_timer().map(|t| t.0), Some(Timer::Pacing));
}

/// Scenario S2 collapsed onto one simulated link: three hops of 200 Mbit/s,
/// 5 ± 1 ms and 2 % loss each are one 200 Mbit/s bottleneck, 12–18 ms one
/// way and 1 − 0.98³ ≈ 5.9 % loss, each way; queue of one BDP (750 kB).
fn s2_chain() -> NetworkProfile {
    bottleneck(200 * MBIT, 12_000, 6_000, 1.0 - 0.98f64.powi(3), 750_000)
}

fn s2_bulk(cc: CongestionKind, fec: FecConfig, mib: usize) -> Bulk {
    let cfg = Config {
        congestion: cc,
        fec,
        ..Config::default()
    }
    .with_channels(vec![ChannelConfig::reliable_ordered()]);
    let server = ServerConfig {
        connection: cfg.clone(),
        ..ServerConfig::default()
    };
    let mut p = Pair::new(cfg, server, s2_chain(), 15);
    assert!(p.connect());
    bulk(&mut p, 0, mib << 20, 200 * MBIT)
}

#[test]
fn s2_lossy_chain_bulk_goodput_reaches_80pct_of_link_rate() {
    // Steady state is what a 60 s transfer sees; startup (~0.4 s) is
    // excluded. NewReno and FEC variants: `examples/s2_trace.rs` (release).
    let bbr = s2_bulk(CongestionKind::Bbr, FecConfig::off(), 40);
    println!(
        "S2 (200 Mbit/s, ~30 ms RTT, 5.9 % loss each way), BBR 40 MiB: {:.0} Mbit/s whole, {:.0} Mbit/s after 500 ms",
        bbr.goodput * 200.0,
        bbr.steady_goodput * 200.0
    );
    assert!(
        bbr.steady_goodput >= 0.80,
        "BBR steady goodput {:.1} %",
        bbr.steady_goodput * 100.0
    );
}

#[test]
fn game_messages_keep_low_latency_beside_a_bulk_transfer_at_5pct_loss() {
    let bbr = game_beside_bulk(CongestionKind::Bbr, 0.05);
    let reno = game_beside_bulk(CongestionKind::NewReno, 0.05);
    println!(
        "the same at 5 % loss each way: BBR p50 {:.1} ms p99 {:.1} ms; NewReno p50 {:.1} ms p99 {:.1} ms",
        bbr[bbr.len() / 2] as f64 / 1e3,
        p99(&bbr) as f64 / 1e3,
        reno[reno.len() / 2] as f64 / 1e3,
        p99(&reno) as f64 / 1e3
    );
    assert!(p99(&bbr) <= 30_000, "BBR game p99 {} µs", p99(&bbr));
}
