//! Scenario S2's path on virtual time: bulk transfer across three hops,
//! each its own 200 Mbit/s link with a queue, 4 ms + [0, 2] ms and iid loss,
//! both ways, as `bench/s2.mjs` builds it from one emulator per hop (IP and
//! UDP headers included in the rate). `examples/s2_bulk.rs` is the same
//! harness as a command with figures.

use ricochet_core::{Config, Connection, Event, Server, ServerConfig};
use ricochet_sim::{insecure_seeded_entropy, Link, LinkConfig, LossModel, TEST_SERVER_SECRET};

const IP_UDP: usize = 28;
const RATE: u64 = 200_000_000 / 8;

/// One direction: a hop's delivery enters the next hop at once.
struct Chain(Vec<Link>);

impl Chain {
    fn new(loss: f64, queue_bytes: usize, seed: u64) -> Chain {
        let cfg = LinkConfig {
            latency_us: 4_000,
            jitter_us: 2_000,
            loss: LossModel::iid(loss),
            rate_bytes_per_sec: RATE,
            queue_bytes,
            ..LinkConfig::default()
        };
        Chain((0..3).map(|h| Link::new(cfg, seed * 10 + h)).collect())
    }

    fn send(&mut self, now: u64, datagram: &[u8]) {
        let mut d = datagram.to_vec();
        d.resize(datagram.len() + IP_UDP, 0);
        self.0[0].send(now, &d);
    }

    fn deliver(&mut self, now: u64, out: &mut Vec<Vec<u8>>) {
        for h in 0..self.0.len() {
            while let Some(mut d) = self.0[h].poll_deliver(now) {
                match self.0.get_mut(h + 1) {
                    Some(next) => next.send(now, &d),
                    None => {
                        d.truncate(d.len() - IP_UDP);
                        out.push(d);
                    }
                }
            }
        }
    }
}

struct Run {
    /// Message bytes delivered between `from` and `to`, as a share of the
    /// link rate.
    goodput: f64,
    /// Bytes the first hop was offered (IP packets) in that time, as a share.
    first_hop_use: f64,
    /// Share of the sender's ack-eliciting packets declared lost.
    loss: f64,
}

/// The sender keeps its buffer full of 16 KiB reliable messages (as
/// `s2_peer` does, default config); measured from `from` to `to` µs.
fn bulk(loss: f64, queue_bytes: usize, seed: u64, from: u64, to: u64) -> Run {
    let mut server = Server::new(ServerConfig::default(), &TEST_SERVER_SECRET).unwrap();
    let mut client =
        Connection::client(Config::default(), 0, &insecure_seeded_entropy(seed), b"s2").unwrap();
    let mut up = Chain::new(loss, queue_bytes, seed);
    let mut down = Chain::new(loss, queue_bytes, seed + 1000);
    let (mut buf, mut arrived) = (vec![0u8; 2048], Vec::new());
    let (mut now, mut bytes, mut marks) = (0u64, 0u64, None);
    let (mut offered0, mut lost0) = (0, (0, 0));
    while now < to {
        if marks.is_none() && now >= from {
            marks = Some(now);
            offered0 = up.0[0].stats().bytes_sent;
            let s = client.stats();
            lost0 = (s.packets_lost, s.eliciting_packets_out);
            bytes = 0;
        }
        loop {
            let mut progressed = false;
            while client.is_connected() && client.send(now, 0, vec![7; 16_384]).is_ok() {}
            while let Some(n) = client.poll_transmit(now, &mut buf) {
                up.send(now, &buf[..n]);
                progressed = true;
            }
            while client.poll_event().is_some() {}
            while let Some((_, n)) = server.poll_transmit(now, &mut buf) {
                down.send(now, &buf[..n]);
                progressed = true;
            }
            while let Some((id, ev)) = server.poll_event() {
                match ev {
                    Event::ConnectRequest { .. } => progressed |= server.accept(now, id),
                    Event::Message { data, .. } => bytes += data.len() as u64,
                    _ => {}
                }
            }
            if !progressed {
                break;
            }
        }
        let next = [client.poll_timeout(), server.poll_timeout()]
            .into_iter()
            .chain(up.0.iter().chain(&down.0).map(Link::poll_timeout))
            .flatten()
            .min()
            .expect("a bulk transfer always has something pending");
        now = now.max(next);
        up.deliver(now, &mut arrived);
        for d in arrived.drain(..) {
            let _ = server.handle_datagram(now, &d);
        }
        down.deliver(now, &mut arrived);
        for d in arrived.drain(..) {
            let _ = client.handle_datagram(now, &d);
        }
        if client.poll_timeout().is_some_and(|t| t <= now) {
            client.handle_timeout(now);
        }
        if server.poll_timeout().is_some_and(|t| t <= now) {
            server.handle_timeout(now);
        }
    }
    let secs = (now - marks.expect("measured")) as f64 / 1e6;
    let s = client.stats();
    Run {
        goodput: bytes as f64 / secs / RATE as f64,
        first_hop_use: (up.0[0].stats().bytes_sent - offered0) as f64 / secs / RATE as f64,
        loss: (s.packets_lost - lost0.0) as f64 / (s.eliciting_packets_out - lost0.1) as f64,
    }
}

#[test]
fn bulk_across_three_lossy_hops_keeps_the_first_hop_busy() {
    // 2 % per hop, 5.9 % end to end, queues of 100 ms (the emulator's
    // default). Pacing at the delivered rate alone kept the first hop
    // 97.2 % busy here (goodput 87.4 % of the link); pacing makes up what
    // random loss takes. Measured from 2 s (startup over) to 9.5 s (before
    // the first ProbeRtt).
    let r = bulk(0.02, 2_500_000, 1, 2_000_000, 9_500_000);
    println!(
        "S2 chain: goodput {:.1} % of the link, first hop offered {:.1} %, loss {:.2} %",
        r.goodput * 100.0,
        r.first_hop_use * 100.0,
        r.loss * 100.0
    );
    assert!(r.first_hop_use >= 0.98, "first hop {:.3}", r.first_hop_use);
    assert!(r.goodput >= 0.88, "goodput {:.3}", r.goodput);
}

#[test]
fn a_shallow_overflowing_queue_is_not_mistaken_for_random_loss() {
    // No loss on the wire; each hop queues 1 ms (25 kB): every loss is
    // overflow the sender causes (4.2 % here), and making up for it would
    // overflow the queue more (6.4 % without the drain/probe comparison).
    let r = bulk(0.0, 25_000, 2, 2_000_000, 9_500_000);
    println!(
        "shallow chain: goodput {:.1} % of the link, loss {:.2} %",
        r.goodput * 100.0,
        r.loss * 100.0
    );
    assert!(r.loss <= 0.05, "loss {:.3}", r.loss);
    assert!(r.goodput >= 0.85, "goodput {:.3}", r.goodput);
}
