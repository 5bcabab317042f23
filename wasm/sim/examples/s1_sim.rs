//! Scenario S1 (bench/SCENARIOS.md) on the simulator, on virtual time: a
//! client sends 400-byte reliable-ordered messages at 60 Hz to a server over
//! a named profile (`s1_5pct`, `s1_bursty`, …: 10 ms ± 2 ms each way, the
//! same loss models as the netem lab), and prints one JSON line per run with
//! the one-way latency percentiles and the wire bytes per payload byte,
//! counted as `bench/s1.mjs` counts them: IP packets both ways, 28 bytes of
//! IPv4 + UDP header on each, lost packets included.
//!
//! The sender is configured as `wasm/native/examples/s1_peer.rs` configures
//! it (a core preset, optionally a latency target on channel 0); the
//! receiver uses `ServerConfig::default()`, as there. Deterministic: the
//! same seed gives the same figures. Fast: 10,000 messages in about a second.
//!
//!   cargo run --release -p ricochet-sim --example s1_sim -- \
//!     [--profile s1_5pct] [--preset default|low_latency] [--latency-target-ms 15] \
//!     [--count 10000] [--seeds 1,2,3] [--size 400] [--per-tick 1] [--halves on|off]
//!     [--fec-budget B]
//!
//! `--per-tick K` sends K messages of `--size` bytes each tick, all queued
//! before the sender runs (a game's tick with several messages), instead of
//! S1's one; `--count` still counts messages. `--halves off` sends
//! latency-targeted messages whole with their copies, as the SDK does on
//! Chromium's WebTransport (`FecConfig::halves`). `--fec-budget B` sets the
//! preset's repair budget (the SDK caps `low-latency`'s at 0.6 on Firefox's
//! WebTransport).

use ricochet_core::{Config, Event, ServerConfig};
use ricochet_sim::{NetworkProfile, Pair};

const IP_UDP: u64 = 28;

struct Args {
    profile: String,
    preset: String,
    target_ms: u64,
    count: u32,
    seeds: Vec<u64>,
    size: usize,
    per_tick: u32,
    halves: bool,
    fec_budget: Option<f64>,
}

fn args() -> Args {
    let mut a = Args {
        profile: "s1_5pct".into(),
        preset: "low_latency".into(),
        target_ms: 15,
        count: 10_000,
        seeds: vec![1],
        size: 400,
        per_tick: 1,
        halves: true,
        fec_budget: None,
    };
    let v: Vec<String> = std::env::args().skip(1).collect();
    for w in v.chunks(2) {
        let val = w.get(1).cloned().unwrap_or_default();
        match w[0].as_str() {
            "--profile" => a.profile = val,
            "--preset" => a.preset = val,
            "--latency-target-ms" => a.target_ms = val.parse().expect("ms"),
            "--count" => a.count = val.parse().expect("count"),
            "--seeds" => a.seeds = val.split(',').map(|s| s.parse().expect("seed")).collect(),
            "--size" => a.size = val.parse().expect("size"),
            "--per-tick" => a.per_tick = val.parse::<u32>().expect("messages a tick").max(1),
            "--halves" => a.halves = val == "on",
            "--fec-budget" => a.fec_budget = Some(val.parse().expect("budget")),
            o => panic!("unknown argument {o}"),
        }
    }
    a
}

fn pct(sorted: &[u64], q: f64) -> f64 {
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i] as f64 / 1000.0
}

fn run(a: &Args, seed: u64) {
    let mut cfg = match a.preset.as_str() {
        "default" => Config::default(),
        "low_latency" => Config::low_latency(),
        p => panic!("--preset: default or low_latency, got {p}"),
    };
    cfg.channels[0] = cfg.channels[0].with_latency_target_us(a.target_ms * 1000);
    cfg.fec.halves = a.halves;
    if let Some(b) = a.fec_budget {
        cfg.fec.budget = b;
    }
    let profile = NetworkProfile::by_name(&a.profile).expect("a profile name");
    let mut p = Pair::new(cfg, ServerConfig::default(), profile, seed);
    assert!(p.connect(), "connects");
    // Warm up a second (RTT and the peer's loss report settle), as the real
    // run's first messages do; then count from zero.
    let t0 = p.now + 1_000_000;
    let period = 1_000_000.0 / 60.0;
    let mut warm = 0u64;
    let w0 = p.now;
    while w0 + ((warm as f64 * period) as u64) < t0 {
        p.run_until(w0 + (warm as f64 * period) as u64);
        for _ in 0..a.per_tick {
            let _ = p.client.send(p.now, 0, vec![0xee; a.size]);
        }
        warm += 1;
    }
    p.run_for(200_000);
    let (c0, s0) = p.net.stats();
    let cs0 = p.client.stats();
    p.server_events.clear();
    let mut sent_at = Vec::with_capacity(a.count as usize);
    let mut lat = Vec::with_capacity(a.count as usize);
    let mut order = Vec::with_capacity(a.count as usize);
    let start = p.now;
    let ticks = a.count.div_ceil(a.per_tick);
    for tick in 0..ticks {
        let at = start + (tick as f64 * period) as u64;
        step_to(&mut p, at, &sent_at, &mut lat, &mut order);
        for k in tick * a.per_tick..((tick + 1) * a.per_tick).min(a.count) {
            let mut msg = vec![0u8; a.size];
            msg[0..4].copy_from_slice(&k.to_le_bytes());
            msg[4] = 1;
            p.client.send(p.now, 0, msg).expect("send");
            sent_at.push(p.now);
        }
        p.drive();
        collect(&mut p, &sent_at, &mut lat, &mut order);
    }
    let end = start + (ticks as f64 * period) as u64;
    while (lat.len() as u32) < a.count && p.now < end + 5_000_000 {
        let t = p.now + 1_000;
        step_to(&mut p, t, &sent_at, &mut lat, &mut order);
    }
    let (c1, s1) = p.net.stats();
    let cs1 = p.client.stats();
    let up_pk = c1.sent - c0.sent;
    let down_pk = s1.sent - s0.sent;
    let up_b = c1.bytes_sent - c0.bytes_sent + IP_UDP * up_pk;
    let down_b = s1.bytes_sent - s0.bytes_sent + IP_UDP * down_pk;
    let payload = a.count as f64 * a.size as f64;
    let n = lat.len();
    let late25 = lat.iter().filter(|&&l| l > 25_000).count();
    // Late only because the message before was (reliable-ordered: head of line).
    let mut by_msg = vec![0u64; a.count as usize];
    for (&k, &l) in order.iter().zip(&lat) {
        by_msg[k] = l;
    }
    let behind_late = (1..by_msg.len())
        .filter(|&k| by_msg[k] > 25_000 && by_msg[k - 1] > 25_000)
        .count();
    lat.sort_unstable();
    let mean = lat.iter().sum::<u64>() as f64 / n as f64 / 1000.0;
    println!(
        "{{\"profile\":\"{}\",\"preset\":\"{}\",\"target_ms\":{},\"seed\":{seed},\"warmup_msgs\":{warm},\"delivered\":{n},\"count\":{},\"size\":{},\"per_tick\":{},\
\"mean\":{mean:.2},\"p50\":{:.2},\"p99\":{:.2},\"p999\":{:.2},\"max\":{:.2},\"late_over_25ms\":{late25},\"late_behind_a_late_one\":{behind_late},\
\"wire_per_payload\":{:.3},\"up_per_payload\":{:.3},\"down_per_payload\":{:.3},\
\"up_packets_per_msg\":{:.3},\"down_packets_per_msg\":{:.3},\"repair_packets_per_msg\":{:.3},\"repair_bytes_per_msg\":{:.1},\
\"up_loss\":{:.4},\"down_loss\":{:.4},\"retransmissions\":{},\"early_resends\":{}}}",
        a.profile,
        a.preset,
        a.target_ms,
        a.count,
        a.size,
        a.per_tick,
        pct(&lat, 0.5),
        pct(&lat, 0.99),
        pct(&lat, 0.999),
        pct(&lat, 1.0),
        (up_b + down_b) as f64 / payload,
        up_b as f64 / payload,
        down_b as f64 / payload,
        up_pk as f64 / a.count as f64,
        down_pk as f64 / a.count as f64,
        (cs1.fec_repair_packets_out - cs0.fec_repair_packets_out) as f64 / a.count as f64,
        (cs1.fec_repair_bytes_out - cs0.fec_repair_bytes_out) as f64 / a.count as f64,
        (c1.lost - c0.lost) as f64 / up_pk as f64,
        (s1.lost - s0.lost) as f64 / down_pk.max(1) as f64,
        cs1.retransmissions - cs0.retransmissions,
        cs1.early_resends - cs0.early_resends,
    );
}

/// Run to `t`, stamping each delivery with the virtual time it happened.
fn step_to(p: &mut Pair, t: u64, sent_at: &[u64], lat: &mut Vec<u64>, order: &mut Vec<usize>) {
    while p.step_until(t) {
        collect(p, sent_at, lat, order);
    }
    p.run_until(t);
    collect(p, sent_at, lat, order);
}

fn collect(p: &mut Pair, sent_at: &[u64], lat: &mut Vec<u64>, order: &mut Vec<usize>) {
    for (_, ev) in p.server_events.drain(..) {
        if let Event::Message { channel: 0, data } = ev {
            if data.get(4) == Some(&1) {
                let k = u32::from_le_bytes(data[0..4].try_into().unwrap()) as usize;
                lat.push(p.now - sent_at[k]);
                order.push(k);
            }
        }
    }
}

fn main() {
    let a = args();
    for &seed in &a.seeds {
        run(&a, seed);
    }
}
