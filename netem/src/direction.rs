//! One direction of the emulated path: packets read from one TUN device go
//! through a simulator [`Link`] and are written to the other device when due.
//!
//! The Link only sees a packet's length and bytes, so to measure the delay a
//! packet really got, its first 8 bytes are swapped for a token while it is in
//! the Link and restored on delivery (IP headers are at least 20 bytes).

use std::collections::HashMap;
use std::os::fd::RawFd;

use ricochet_sim::{Link, LinkConfig, LossModel};

use crate::histogram::Histogram;
use crate::tun;

const TOKEN_BYTES: usize = 8;
/// Deliveries per call, so a huge backlog cannot starve reading.
const MAX_DELIVERIES_PER_CALL: usize = 1024;

struct InFlight {
    head: [u8; TOKEN_BYTES],
    arrival_us: u64,
    copies: u64,
}

pub struct Direction {
    link: Link,
    in_flight: HashMap<u64, InFlight>,
    next_token: u64,
    /// Packets too short to carry a token (never valid IP); dropped.
    malformed: u64,
    /// Delivered packets the kernel refused (e.g. the device went down).
    write_errors: u64,
    /// Drop UDP packets before the link (see `block_udp`).
    block_udp: bool,
    udp_blocked: u64,
    /// Time from read to write, per delivered copy.
    delay: Histogram,
    /// How late each copy was written after its scheduled time (scheduling
    /// error of this process; large values mean CPU stalls).
    late: Histogram,
}

impl Direction {
    pub fn new(link: Link) -> Direction {
        Direction {
            link,
            in_flight: HashMap::new(),
            next_token: 0,
            malformed: 0,
            write_errors: 0,
            block_udp: false,
            udp_blocked: 0,
            delay: Histogram::new(),
            late: Histogram::new(),
        }
    }

    /// Drop every UDP packet in this direction, like a firewall that blocks
    /// QUIC (and so WebTransport) but lets TCP through.
    pub fn block_udp(mut self, on: bool) -> Direction {
        self.block_udp = on;
        self
    }

    /// Earliest delivery due, microseconds.
    pub fn next_deadline(&self) -> Option<u64> {
        self.link.poll_timeout()
    }

    /// Offer a packet read at `now_us`. `packet` is scratch: it is modified.
    pub fn ingest(&mut self, now_us: u64, packet: &mut [u8]) {
        if packet.len() < TOKEN_BYTES {
            self.malformed += 1;
            return;
        }
        if self.block_udp && is_udp(packet) {
            self.udp_blocked += 1;
            return;
        }
        let token = self.next_token;
        self.next_token += 1;
        let mut head = [0u8; TOKEN_BYTES];
        head.copy_from_slice(&packet[..TOKEN_BYTES]);
        packet[..TOKEN_BYTES].copy_from_slice(&token.to_ne_bytes());
        let before = self.link.stats().in_flight;
        self.link.send(now_us, packet);
        // Nothing is delivered inside `send`, so the growth is this packet's
        // scheduled copies: 0 (dropped), 1, or 2 (duplicated).
        let copies = self.link.stats().in_flight.saturating_sub(before);
        if copies > 0 {
            self.in_flight.insert(
                token,
                InFlight {
                    head,
                    arrival_us: now_us,
                    copies,
                },
            );
        }
    }

    /// Write every copy due at `now_us` to `out`.
    pub fn deliver_due(&mut self, now_us: u64, out: RawFd) {
        for _ in 0..MAX_DELIVERIES_PER_CALL {
            match self.link.poll_timeout() {
                Some(due) if due <= now_us => {
                    let Some(mut packet) = self.link.poll_deliver(now_us) else {
                        return;
                    };
                    let mut token = [0u8; TOKEN_BYTES];
                    token.copy_from_slice(&packet[..TOKEN_BYTES]);
                    let token = u64::from_ne_bytes(token);
                    if let Some(f) = self.in_flight.get_mut(&token) {
                        packet[..TOKEN_BYTES].copy_from_slice(&f.head);
                        self.delay.record(now_us.saturating_sub(f.arrival_us));
                        self.late.record(now_us.saturating_sub(due));
                        f.copies -= 1;
                        if f.copies == 0 {
                            self.in_flight.remove(&token);
                        }
                    }
                    if tun::write_packet(out, &packet).is_err() {
                        self.write_errors += 1;
                    }
                }
                _ => return,
            }
        }
    }

    /// Counters as a JSON object.
    pub fn stats_json(&self) -> String {
        let s = self.link.stats();
        format!(
            concat!(
                "{{\"packets_in\":{},\"bytes_in\":{},\"delivered\":{},\"bytes_delivered\":{},",
                "\"lost\":{},\"duplicated\":{},\"reordered\":{},\"queue_dropped\":{},",
                "\"oversize_dropped\":{},\"in_flight\":{},\"malformed\":{},\"write_errors\":{},\"udp_blocked\":{},",
                "\"delay_us\":{{\"mean\":{:.1},\"p50\":{},\"p99\":{},\"max\":{}}},",
                "\"late_us\":{{\"mean\":{:.1},\"p50\":{},\"p99\":{},\"max\":{}}}}}"
            ),
            s.sent + self.malformed + self.udp_blocked,
            s.bytes_sent,
            s.delivered,
            s.bytes_delivered,
            s.lost,
            s.duplicated,
            s.reordered,
            s.queue_dropped,
            s.oversize_dropped,
            s.in_flight,
            self.malformed,
            self.write_errors,
            self.udp_blocked,
            self.delay.mean(),
            self.delay.quantile(0.5),
            self.delay.quantile(0.99),
            self.delay.max(),
            self.late.mean(),
            self.late.quantile(0.5),
            self.late.quantile(0.99),
            self.late.max(),
        )
    }
}

fn loss_json(m: &LossModel) -> String {
    let body = match *m {
        LossModel::None => "\"model\":\"none\"".to_string(),
        LossModel::Iid { p } => format!("\"model\":\"iid\",\"p\":{p}"),
        LossModel::GilbertElliott {
            p_good_to_bad,
            p_bad_to_good,
            loss_in_good,
            loss_in_bad,
        } => format!(
            concat!(
                "\"model\":\"gilbert_elliott\",\"p_good_to_bad\":{},\"p_bad_to_good\":{},",
                "\"loss_in_good\":{},\"loss_in_bad\":{}"
            ),
            p_good_to_bad, p_bad_to_good, loss_in_good, loss_in_bad
        ),
        LossModel::Markov4 {
            p13,
            p14,
            p23,
            p31,
            p32,
        } => format!(
            "\"model\":\"markov4\",\"p13\":{p13},\"p14\":{p14},\"p23\":{p23},\"p31\":{p31},\"p32\":{p32}"
        ),
    };
    format!("{{{body},\"mean_loss\":{}}}", m.mean_loss())
}

/// A link config as a JSON object (units in the key names).
/// An IPv4 packet whose protocol is UDP, or an IPv6 packet whose first next
/// header is UDP (extension headers are not followed).
fn is_udp(packet: &[u8]) -> bool {
    const UDP: u8 = 17;
    match packet.first().map(|b| b >> 4) {
        Some(4) => packet.get(9) == Some(&UDP),
        Some(6) => packet.get(6) == Some(&UDP),
        _ => false,
    }
}

pub fn config_json(c: &LinkConfig) -> String {
    format!(
        concat!(
            "{{\"latency_us\":{},\"jitter_us\":{},\"loss\":{},\"duplicate\":{},",
            "\"reorder\":{},\"reorder_extra_us\":{},\"rate_bytes_per_sec\":{},",
            "\"queue_bytes\":{},\"mtu\":{}}}"
        ),
        c.latency_us,
        c.jitter_us,
        loss_json(&c.loss),
        c.duplicate,
        c.reorder,
        c.reorder_extra_us,
        c.rate_bytes_per_sec,
        c.queue_bytes,
        c.mtu
    )
}

/// A string as a JSON string literal.
pub fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_is_swapped_in_and_restored_with_duplicates() {
        let cfg = LinkConfig {
            latency_us: 1_000,
            duplicate: 1.0,
            ..LinkConfig::default()
        };
        let mut d = Direction::new(Link::new(cfg, 1));
        let original: Vec<u8> = (0..40).collect();
        let mut scratch = original.clone();
        d.ingest(0, &mut scratch);
        assert_eq!(d.next_deadline(), Some(1_000));
        // Deliver into a pipe to see the bytes.
        let mut fds = [0; 2];
        // SAFETY: fds is a valid 2-element array.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        d.deliver_due(1_500, fds[1]);
        let mut got = vec![0u8; 80];
        // SAFETY: got is writable for 80 bytes; fds[0] is the pipe's read end.
        let n = unsafe { libc::read(fds[0], got.as_mut_ptr().cast(), 80) };
        assert_eq!(n, 80);
        assert_eq!(&got[..40], &original[..]);
        assert_eq!(&got[40..], &original[..]);
        assert!(d.in_flight.is_empty());
        assert_eq!((d.delay.quantile(0.5), d.late.quantile(0.5)), (1_500, 500));
        // SAFETY: closing the pipe ends opened above.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
        assert!(d.stats_json().contains("\"duplicated\":1"));
    }

    #[test]
    fn dropped_packets_leave_no_token_behind() {
        let cfg = LinkConfig {
            loss: LossModel::iid(1.0),
            ..LinkConfig::default()
        };
        let mut d = Direction::new(Link::new(cfg, 1));
        d.ingest(0, &mut [0u8; 20]);
        d.ingest(0, &mut [0u8; 3]);
        assert!(d.in_flight.is_empty());
        assert!(d.stats_json().contains("\"packets_in\":2,"));
        assert!(d.stats_json().contains("\"malformed\":1,"));
        assert_eq!(json_str("a\"b\n"), "\"a\\\"b\\u000a\"");
    }

    #[test]
    fn block_udp_drops_udp_over_ipv4_and_ipv6_and_lets_tcp_through() {
        let mut d = Direction::new(Link::new(LinkConfig::default(), 1)).block_udp(true);
        let mut v4 = vec![0u8; 40];
        v4[0] = 0x45;
        v4[9] = 17;
        let mut v6 = vec![0u8; 60];
        v6[0] = 0x60;
        v6[6] = 17;
        let mut tcp = vec![0u8; 40];
        tcp[0] = 0x45;
        tcp[9] = 6;
        d.ingest(0, &mut v4);
        d.ingest(0, &mut v6);
        d.ingest(0, &mut tcp);
        assert_eq!(d.udp_blocked, 2);
        assert_eq!(d.link.stats().sent, 1);
        assert!(d.stats_json().contains("\"udp_blocked\":2"));
    }
}
