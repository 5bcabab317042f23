//! Scenario S2 (bench/SCENARIOS.md) on the simulator, on virtual time: bulk
//! reliable transfer client → server across a chain of hops, each its own
//! rate-limited link with a FIFO queue, delay, jitter and iid loss, both
//! ways — as `bench/s2.mjs` builds it with one `netem/` emulator per hop
//! (200 Mbit/s, 4 ms + uniform [0, 2] ms, 2 % loss, a queue of 100 ms of
//! the rate). The emulator rates whole IP packets, so each datagram carries
//! 28 bytes of IPv4 + UDP header through the links here too.
//!
//! The sender keeps the send buffer full of 16 KiB reliable-ordered
//! messages (as `wasm/native/examples/s2_peer.rs` does); the receiver counts
//! message bytes delivered after the first one. Prints one JSON line per
//! seed. Deterministic; 20 virtual seconds run in a few real ones.
//!
//!   cargo run --release -p ricochet-sim --example s2_bulk -- \
//!     [--seconds 20] [--seeds 1,2,3] [--hops 3] [--loss 0.02] \
//!     [--rate-mbps 200] [--queue-ms 100] [--flows 1] [--cc bbr|new_reno] \
//!     [--datagram 1200] [--trace 1]
//!
//! `--flows N` runs N connections through the same chain at once (they
//! share every hop's queue): goodput per flow shows whether they share it.

use ricochet_core::{
    Config, CongestionKind, Connection, ConnectionId, Event, Server, ServerConfig,
};
use ricochet_sim::{insecure_seeded_entropy, Link, LinkConfig, LossModel, TEST_SERVER_SECRET};

const IP_UDP: usize = 28;
const CHUNK: usize = 16_384;

struct Args {
    seconds: u64,
    seeds: Vec<u64>,
    hops: usize,
    loss: f64,
    rate_mbps: u64,
    queue_ms: u64,
    flows: usize,
    cc: CongestionKind,
    /// Print a line per 100 ms: link use, window, flight, RTT.
    trace: bool,
    /// Largest datagram, bytes (default: the core's default, 1200).
    datagram: usize,
}

fn args() -> Args {
    let mut a = Args {
        seconds: 20,
        seeds: vec![1],
        hops: 3,
        loss: 0.02,
        rate_mbps: 200,
        queue_ms: 100,
        flows: 1,
        cc: CongestionKind::Bbr,
        trace: false,
        datagram: Config::default().max_datagram_size,
    };
    let v: Vec<String> = std::env::args().skip(1).collect();
    for w in v.chunks(2) {
        let val = w.get(1).cloned().unwrap_or_default();
        match w[0].as_str() {
            "--seconds" => a.seconds = val.parse().expect("seconds"),
            "--seeds" => a.seeds = val.split(',').map(|s| s.parse().expect("seed")).collect(),
            "--hops" => a.hops = val.parse().expect("hops"),
            "--loss" => a.loss = val.parse().expect("loss"),
            "--rate-mbps" => a.rate_mbps = val.parse().expect("rate"),
            "--queue-ms" => a.queue_ms = val.parse().expect("queue ms"),
            "--datagram" => a.datagram = val.parse().expect("bytes"),
            "--trace" => a.trace = val == "1",
            "--flows" => a.flows = val.parse().expect("flows"),
            "--cc" => {
                a.cc = match val.as_str() {
                    "bbr" => CongestionKind::Bbr,
                    "new_reno" => CongestionKind::NewReno,
                    o => panic!("--cc: bbr or new_reno, got {o}"),
                }
            }
            o => panic!("unknown argument {o}"),
        }
    }
    a
}

/// One direction of the chain: datagrams (IP/UDP header included) pass
/// hop after hop; a hop's delivery enters the next hop at once.
struct Chain {
    hops: Vec<Link>,
}

impl Chain {
    fn new(a: &Args, seed: u64) -> Chain {
        let rate = a.rate_mbps * 1_000_000 / 8;
        let cfg = LinkConfig {
            latency_us: 4_000,
            jitter_us: 2_000,
            loss: LossModel::iid(a.loss),
            rate_bytes_per_sec: rate,
            queue_bytes: (rate * a.queue_ms / 1000).max(4500) as usize,
            ..LinkConfig::default()
        };
        Chain {
            hops: (0..a.hops)
                .map(|h| Link::new(cfg, seed.wrapping_mul(1000) + h as u64))
                .collect(),
        }
    }

    fn send(&mut self, now: u64, datagram: &[u8]) {
        let mut d = datagram.to_vec();
        d.resize(datagram.len() + IP_UDP, 0);
        self.hops[0].send(now, &d);
    }

    fn poll_timeout(&self) -> Option<u64> {
        self.hops.iter().filter_map(Link::poll_timeout).min()
    }

    /// Move everything due by `now` along; returns what left the last hop.
    fn deliver(&mut self, now: u64, out: &mut Vec<Vec<u8>>) {
        let last = self.hops.len() - 1;
        for h in 0..=last {
            while let Some(mut d) = self.hops[h].poll_deliver(now) {
                if h == last {
                    d.truncate(d.len() - IP_UDP);
                    out.push(d);
                } else {
                    self.hops[h + 1].send(now, &d);
                }
            }
        }
    }
}

struct Flow {
    client: Connection,
    seq: u32,
    bytes: u64,
    first: Option<u64>,
}

fn run(a: &Args, seed: u64) {
    let cfg = Config {
        congestion: a.cc,
        max_datagram_size: a.datagram,
        ..Config::default()
    };
    let scfg = ServerConfig {
        connection: Config {
            max_datagram_size: a.datagram,
            ..Config::default()
        },
        ..ServerConfig::default()
    };
    let mut server = Server::new(scfg, &TEST_SERVER_SECRET).expect("server");
    let mut flows: Vec<Flow> = (0..a.flows)
        .map(|f| Flow {
            client: Connection::client(
                cfg.clone(),
                0,
                &insecure_seeded_entropy(seed * 100 + f as u64),
                b"s2",
            )
            .expect("client"),
            seq: 0,
            bytes: 0,
            first: None,
        })
        .collect();
    let mut up = Chain::new(a, seed);
    let mut down = Chain::new(a, seed ^ 0xdead_beef);
    let mut buf = vec![0u8; 65_536];
    let mut arrived = Vec::new();
    let ids: Vec<ConnectionId> = flows.iter().map(|f| f.client.id()).collect();
    let end = a.seconds * 1_000_000;
    let mut now = 0u64;
    let (mut next_trace, mut last_bytes) = (100_000u64, 0u64);
    loop {
        if a.trace && now >= next_trace {
            let b = up.hops[0].stats().bytes_sent;
            let s = flows[0].client.stats();
            eprintln!(
                "t={:.1} util={:.3} cwnd={} flight={} rtt={:.1} min={:.1} lost={}",
                next_trace as f64 / 1e6,
                (b - last_bytes) as f64 / (a.rate_mbps as f64 * 1e6 / 8.0 * 0.1),
                s.congestion_window,
                s.bytes_in_flight,
                s.rtt_us as f64 / 1e3,
                s.min_rtt_us as f64 / 1e3,
                s.packets_lost
            );
            last_bytes = b;
            next_trace += 100_000;
        }
        // Emit everything due now.
        loop {
            let mut progressed = false;
            for f in flows.iter_mut() {
                if f.client.is_connected() {
                    loop {
                        let mut m = vec![0u8; CHUNK];
                        m[0..4].copy_from_slice(&f.seq.to_le_bytes());
                        if f.client.send(now, 0, m).is_err() {
                            break;
                        }
                        f.seq = f.seq.wrapping_add(1);
                    }
                }
                while let Some(n) = f.client.poll_transmit(now, &mut buf) {
                    up.send(now, &buf[..n]);
                    progressed = true;
                }
                while f.client.poll_event().is_some() {}
            }
            while let Some((_, n)) = server.poll_transmit(now, &mut buf) {
                down.send(now, &buf[..n]);
                progressed = true;
            }
            while let Some((id, ev)) = server.poll_event() {
                match ev {
                    Event::ConnectRequest { .. } => {
                        server.accept(now, id);
                        progressed = true;
                    }
                    Event::Message { data, .. } => {
                        if let Some(k) = ids.iter().position(|&i| i == id) {
                            let f = &mut flows[k];
                            f.first.get_or_insert(now);
                            f.bytes += data.len() as u64;
                        }
                    }
                    _ => {}
                }
            }
            if !progressed {
                break;
            }
        }
        let next = flows
            .iter()
            .filter_map(|f| f.client.poll_timeout())
            .chain(server.poll_timeout())
            .chain(up.poll_timeout())
            .chain(down.poll_timeout())
            .min();
        let Some(next) = next else { break };
        if next > end {
            break;
        }
        now = now.max(next);
        up.deliver(now, &mut arrived);
        for d in arrived.drain(..) {
            let _ = server.handle_datagram(now, &d);
        }
        down.deliver(now, &mut arrived);
        for d in arrived.drain(..) {
            for f in flows.iter_mut() {
                let _ = f.client.handle_datagram(now, &d);
            }
        }
        for f in flows.iter_mut() {
            if f.client.poll_timeout().is_some_and(|t| t <= now) {
                f.client.handle_timeout(now);
            }
        }
        if server.poll_timeout().is_some_and(|t| t <= now) {
            server.handle_timeout(now);
        }
    }
    let link = a.rate_mbps as f64;
    let mut total = 0.0;
    let mut per_flow = Vec::new();
    for f in &flows {
        let secs = f.first.map_or(0.0, |t| (end - t) as f64 / 1e6);
        let mbps = if secs > 0.0 {
            f.bytes as f64 * 8.0 / secs / 1e6
        } else {
            0.0
        };
        total += mbps;
        per_flow.push(format!("{mbps:.1}"));
    }
    let s = flows[0].client.stats();
    let hop = |c: &Chain| {
        c.hops
            .iter()
            .map(|l| {
                let st = l.stats();
                format!(
                    "{{\"lost\":{:.4},\"queue_dropped\":{}}}",
                    st.lost as f64 / st.sent.max(1) as f64,
                    st.queue_dropped
                )
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    println!(
        "{{\"seed\":{seed},\"flows\":{},\"mbps\":{total:.1},\"share\":{:.3},\"per_flow\":[{}],\
\"lost_frac\":{:.4},\"retx\":{},\"packets_out\":{},\"cwnd\":{},\"in_flight\":{},\"rtt_ms\":{:.1},\"min_rtt_ms\":{:.1},\
\"overhead_frac\":{:.4},\"util\":{:.4},\"avg_pkt\":{:.0},\"up\":[{}],\"down\":[{}]}}",
        a.flows,
        total / link,
        per_flow.join(","),
        s.packets_lost as f64 / s.eliciting_packets_out.max(1) as f64,
        s.retransmissions,
        s.packets_out,
        s.congestion_window,
        s.bytes_in_flight,
        s.rtt_us as f64 / 1000.0,
        s.min_rtt_us as f64 / 1000.0,
        s.overhead_bytes_out as f64 / (s.overhead_bytes_out + s.payload_bytes_out).max(1) as f64,
        up.hops[0].stats().bytes_sent as f64 / (a.rate_mbps as f64 * 1e6 / 8.0 * a.seconds as f64),
        up.hops[0].stats().bytes_sent as f64 / up.hops[0].stats().sent.max(1) as f64,
        hop(&up),
        hop(&down),
    );
}

fn main() {
    let a = args();
    for &seed in &a.seeds {
        run(&a, seed);
    }
}
