//! Scenario S2 on the simulator, traced: goodput per 100 ms window with the
//! sender's window, bytes in flight, RTT and the link's drop counters.
//! `cargo run --release --example s2_trace -- [bbr|newreno] [fec: off|balanced] [MiB]`

use ricochet_core::{ChannelConfig, Config, CongestionKind, Event, FecConfig, ServerConfig};
use ricochet_sim::pair::Pair;
use ricochet_sim::payload::payload;
use ricochet_sim::{LinkConfig, LossModel, NetworkProfile};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cc = if args.first().map(String::as_str) == Some("newreno") {
        CongestionKind::NewReno
    } else {
        CongestionKind::Bbr
    };
    let fec = if args.get(1).map(String::as_str) == Some("balanced") {
        FecConfig::balanced()
    } else {
        FecConfig::off()
    };
    let mib: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(48);
    let rate = 200_000_000 / 8;
    let l = LinkConfig {
        latency_us: 12_000,
        jitter_us: 6_000,
        loss: LossModel::iid(1.0 - 0.98f64.powi(3)),
        rate_bytes_per_sec: rate,
        queue_bytes: 750_000,
        ..LinkConfig::default()
    };
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
    let mut p = Pair::new(
        cfg,
        server,
        NetworkProfile {
            name: "s2",
            client_to_server: l,
            server_to_client: l,
        },
        15,
    );
    assert!(p.connect());
    const MSG: usize = 64 << 10;
    let count = (mib << 20) / MSG;
    let (start, mut queued, mut delivered, mut seen) =
        (p.now, 0usize, 0usize, p.server_events.len());
    let (mut window_start, mut window_bytes) = (p.now, 0usize);
    while delivered < count {
        while queued < count && p.client.send(p.now, 0, payload(queued as u32, MSG)).is_ok() {
            queued += 1;
        }
        p.step_until(u64::MAX);
        for (_, e) in &p.server_events[seen..] {
            if let Event::Message { .. } = e {
                delivered += 1;
                window_bytes += MSG;
            }
        }
        seen = p.server_events.len();
        if p.now - window_start >= 100_000 {
            let s = p.client.stats();
            let l = p.net.client_to_server.stats();
            println!(
                "t={:5} ms goodput {:6.1} Mbit/s cwnd {:8} inflight {:8} rtt {:5.1} ms lost {:6} qdrop {:6} retx {:7} repair {:6}",
                (p.now - start) / 1000,
                window_bytes as f64 * 8.0 / (p.now - window_start) as f64,
                s.congestion_window,
                s.bytes_in_flight,
                s.rtt_us as f64 / 1e3,
                l.lost,
                l.queue_dropped,
                s.retransmissions,
                s.fec_repair_packets_out
            );
            window_start = p.now;
            window_bytes = 0;
        }
    }
    let secs = (p.now - start) as f64 / 1e6;
    println!(
        "total {:.1} Mbit/s over {:.2} s",
        (count * MSG) as f64 * 8.0 / secs / 1e6,
        secs
    );
}
