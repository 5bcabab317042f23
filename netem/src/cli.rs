//! Command line: a named profile from the simulator, then overrides that
//! apply to both directions (`--delay-ms`) or one (`--ab-delay-ms`,
//! `--ba-delay-ms`). A is the "client" side of a profile, B the "server".

use std::path::PathBuf;

use ricochet_sim::{LinkConfig, LossModel, NetworkProfile};

pub const USAGE: &str = "\
ricochet-netem: forward IP packets between two network namespaces through
the ricochet-sim simulator's links (delay, jitter, loss, duplication,
reordering, rate), one Link per direction.

USAGE
  ricochet-netem --ns-a NAME --ns-b NAME [LINK OPTIONS] [--seed S] [--stats-file F]
  ricochet-netem --print-profile [LINK OPTIONS]    print both directions' configs as JSON
  ricochet-netem --list-profiles                   print the profile names, one a line

NAMESPACES AND DEVICES
  --ns-a NAME, --ns-b NAME   existing namespaces (/run/netns/NAME, or a path)
  --tun-a NAME, --tun-b NAME TUN device created in each (default: \"t\" + the
                             namespace name, cut to 15 bytes); the caller
                             assigns addresses and brings them up

LINK OPTIONS (both directions; prefix ab- or ba- for one: --ab-delay-ms 30)
  --profile NAME        start from a simulator profile (default: perfect)
  --delay-ms MS         one-way delay
  --jitter-ms MS        extra uniform delay in [0, MS]; never reorders by itself
  --loss P              loss probability, independent per packet
  --burst C             with --loss: Gilbert-Elliott chain with mean loss P and
                        P(loss | previous lost) = C (mean burst 1/(1-C))
  --loss-ge PGB,PBG,LG,LB   Gilbert-Elliott: P(good->bad), P(bad->good),
                            loss in good, loss in bad
  --loss-markov4 P13,P14,P23,P31,P32   netem's 4-state chain
  --dup P               probability a packet is also delivered twice
  --reorder P           probability a packet is held back --reorder-ms
  --reorder-ms MS       hold-back of a reordered packet (default 10)
  --rate-kbps N         bottleneck rate, kilobits/s (0 = unlimited)
  --queue-bytes N       bottleneck queue (default: 100 ms of the rate, >= 4500)
  --mtu N               drop packets larger than N bytes (0 = no limit)

RUN
  --seed S              all randomness derives from S (default 1)
  --stats-file F        counters as JSON, rewritten every --stats-interval-ms
                        (default 1000, 0 = only on SIGUSR1 and at exit)
  --die-with-parent     exit when the parent process dies
  --block-udp           drop every UDP packet both ways (a firewall that
                        blocks QUIC/WebTransport); counted as udp_blocked
  SIGUSR1 prints a {\"event\":\"stats\"} line and rewrites the stats file;
  SIGTERM/SIGINT write final stats and exit 0.
";

/// What the process was asked to do.
#[derive(Debug, PartialEq)]
pub enum Action {
    Run,
    PrintProfile,
    ListProfiles,
    Help,
}

/// Parsed command line.
#[derive(Debug)]
pub struct Options {
    pub action: Action,
    pub ns_a: String,
    pub ns_b: String,
    pub tun_a: String,
    pub tun_b: String,
    pub profile: String,
    /// A -> B (the profile's client-to-server direction).
    pub a_to_b: LinkConfig,
    /// B -> A.
    pub b_to_a: LinkConfig,
    pub seed: u64,
    pub stats_file: Option<PathBuf>,
    pub stats_interval_ms: u64,
    pub die_with_parent: bool,
    /// Drop every UDP packet, both ways.
    pub block_udp: bool,
}

/// Link overrides given on the command line for one scope (both / ab / ba).
#[derive(Default, Debug)]
struct Overrides {
    delay_us: Option<u64>,
    jitter_us: Option<u64>,
    loss: Option<f64>,
    burst: Option<f64>,
    loss_ge: Option<Vec<f64>>,
    loss_markov4: Option<Vec<f64>>,
    dup: Option<f64>,
    reorder: Option<f64>,
    reorder_extra_us: Option<u64>,
    rate_bytes_per_sec: Option<u64>,
    queue_bytes: Option<usize>,
    mtu: Option<usize>,
}

const DEFAULT_REORDER_US: u64 = 10_000;
const MIN_DEFAULT_QUEUE_BYTES: usize = 4_500;

fn number(flag: &str, v: &str) -> Result<f64, String> {
    match v.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(format!("{flag}: expected a non-negative number, got {v:?}")),
    }
}

fn probability(flag: &str, v: &str) -> Result<f64, String> {
    let x = number(flag, v)?;
    if x > 1.0 {
        return Err(format!("{flag}: expected a probability in [0, 1], got {v}"));
    }
    Ok(x)
}

fn integer(flag: &str, v: &str) -> Result<u64, String> {
    v.parse::<u64>()
        .map_err(|_| format!("{flag}: expected a non-negative integer, got {v:?}"))
}

fn ms_to_us(flag: &str, v: &str) -> Result<u64, String> {
    let ms = number(flag, v)?;
    if ms > 3_600_000.0 {
        return Err(format!("{flag}: at most one hour"));
    }
    Ok((ms * 1000.0).round() as u64)
}

fn probabilities(flag: &str, v: &str, n: usize) -> Result<Vec<f64>, String> {
    let parts: Vec<&str> = v.split(',').collect();
    if parts.len() != n {
        return Err(format!(
            "{flag}: expected {n} comma-separated probabilities"
        ));
    }
    parts.iter().map(|p| probability(flag, p.trim())).collect()
}

impl Overrides {
    /// Consume one link option; `Ok(false)` if `flag` is not a link option.
    fn set(&mut self, flag: &str, name: &str, v: &str) -> Result<bool, String> {
        match name {
            "delay-ms" => self.delay_us = Some(ms_to_us(flag, v)?),
            "jitter-ms" => self.jitter_us = Some(ms_to_us(flag, v)?),
            "loss" => self.loss = Some(probability(flag, v)?),
            "burst" => self.burst = Some(probability(flag, v)?),
            "loss-ge" => self.loss_ge = Some(probabilities(flag, v, 4)?),
            "loss-markov4" => self.loss_markov4 = Some(probabilities(flag, v, 5)?),
            "dup" => self.dup = Some(probability(flag, v)?),
            "reorder" => self.reorder = Some(probability(flag, v)?),
            "reorder-ms" => self.reorder_extra_us = Some(ms_to_us(flag, v)?),
            "rate-kbps" => {
                let kbps = number(flag, v)?;
                self.rate_bytes_per_sec = Some((kbps * 1000.0 / 8.0).round() as u64);
            }
            "queue-bytes" => self.queue_bytes = Some(integer(flag, v)? as usize),
            "mtu" => self.mtu = Some(integer(flag, v)? as usize),
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn loss_model(&self) -> Result<Option<LossModel>, String> {
        let given = [
            self.loss.is_some(),
            self.loss_ge.is_some(),
            self.loss_markov4.is_some(),
        ];
        if given.iter().filter(|&&g| g).count() > 1 {
            return Err("give only one of --loss, --loss-ge, --loss-markov4".into());
        }
        if self.burst.is_some() && self.loss.is_none() {
            return Err("--burst needs --loss (the mean loss)".into());
        }
        if let Some(p) = self.loss {
            return Ok(Some(match self.burst {
                Some(c) => LossModel::bursty(p, c),
                None => LossModel::iid(p),
            }));
        }
        if let Some(g) = &self.loss_ge {
            return Ok(Some(LossModel::GilbertElliott {
                p_good_to_bad: g[0],
                p_bad_to_good: g[1],
                loss_in_good: g[2],
                loss_in_bad: g[3],
            }));
        }
        if let Some(m) = &self.loss_markov4 {
            return Ok(Some(LossModel::Markov4 {
                p13: m[0],
                p14: m[1],
                p23: m[2],
                p31: m[3],
                p32: m[4],
            }));
        }
        Ok(None)
    }

    fn apply(&self, cfg: &mut LinkConfig) -> Result<(), String> {
        if let Some(v) = self.delay_us {
            cfg.latency_us = v;
        }
        if let Some(v) = self.jitter_us {
            cfg.jitter_us = v;
        }
        if let Some(m) = self.loss_model()? {
            cfg.loss = m;
        }
        if let Some(v) = self.dup {
            cfg.duplicate = v;
        }
        if let Some(v) = self.reorder {
            cfg.reorder = v;
        }
        if let Some(v) = self.reorder_extra_us {
            cfg.reorder_extra_us = v;
        }
        if let Some(v) = self.rate_bytes_per_sec {
            cfg.rate_bytes_per_sec = v;
        }
        if let Some(v) = self.queue_bytes {
            cfg.queue_bytes = v;
        }
        if let Some(v) = self.mtu {
            cfg.mtu = v;
        }
        Ok(())
    }
}

/// Fill in defaults that depend on other settings, then validate.
fn finish(cfg: &mut LinkConfig, queue_given: bool, dir: &str) -> Result<(), String> {
    if cfg.reorder > 0.0 && cfg.reorder_extra_us == 0 {
        cfg.reorder_extra_us = DEFAULT_REORDER_US;
    }
    if cfg.rate_bytes_per_sec > 0 && cfg.queue_bytes == 0 && !queue_given {
        let hundred_ms = usize::try_from(cfg.rate_bytes_per_sec / 10).unwrap_or(usize::MAX);
        cfg.queue_bytes = hundred_ms.max(MIN_DEFAULT_QUEUE_BYTES);
    }
    cfg.validate().map_err(|e| format!("{dir}: {e}"))
}

/// Default TUN name for a namespace: "t" + its last path component, cut to
/// the kernel's 15-byte limit (at a char boundary).
fn default_tun(ns: &str) -> String {
    let base = ns.rsplit('/').next().unwrap_or(ns);
    let mut name = format!("t{base}");
    while name.len() > 15 {
        name.pop();
    }
    name
}

pub fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        action: Action::Run,
        ns_a: String::new(),
        ns_b: String::new(),
        tun_a: String::new(),
        tun_b: String::new(),
        profile: "perfect".into(),
        a_to_b: LinkConfig::default(),
        b_to_a: LinkConfig::default(),
        seed: 1,
        stats_file: None,
        stats_interval_ms: 1000,
        die_with_parent: false,
        block_udp: false,
    };
    let mut both = Overrides::default();
    let mut ab = Overrides::default();
    let mut ba = Overrides::default();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let name = flag
            .strip_prefix("--")
            .ok_or_else(|| format!("unexpected argument {flag:?} (see --help)"))?;
        match name {
            "help" | "h" => o.action = Action::Help,
            "print-profile" => o.action = Action::PrintProfile,
            "list-profiles" => o.action = Action::ListProfiles,
            "die-with-parent" => o.die_with_parent = true,
            "block-udp" => o.block_udp = true,
            _ => {
                let value = it
                    .next()
                    .ok_or_else(|| format!("{flag} needs a value"))?
                    .as_str();
                let taken = match name {
                    "ns-a" => {
                        o.ns_a = value.into();
                        true
                    }
                    "ns-b" => {
                        o.ns_b = value.into();
                        true
                    }
                    "tun-a" => {
                        o.tun_a = value.into();
                        true
                    }
                    "tun-b" => {
                        o.tun_b = value.into();
                        true
                    }
                    "profile" => {
                        o.profile = value.into();
                        true
                    }
                    "seed" => {
                        o.seed = integer(flag, value)?;
                        true
                    }
                    "stats-file" => {
                        o.stats_file = Some(PathBuf::from(value));
                        true
                    }
                    "stats-interval-ms" => {
                        o.stats_interval_ms = integer(flag, value)?;
                        true
                    }
                    _ => match (name.strip_prefix("ab-"), name.strip_prefix("ba-")) {
                        (Some(n), _) => ab.set(flag, n, value)?,
                        (_, Some(n)) => ba.set(flag, n, value)?,
                        _ => both.set(flag, name, value)?,
                    },
                };
                if !taken {
                    return Err(format!("unknown option {flag} (see --help)"));
                }
            }
        }
    }
    let profile = NetworkProfile::by_name(&o.profile).ok_or_else(|| {
        format!(
            "unknown profile {:?}; known: {}",
            o.profile,
            NetworkProfile::names().join(", ")
        )
    })?;
    o.a_to_b = profile.client_to_server;
    o.b_to_a = profile.server_to_client;
    both.apply(&mut o.a_to_b)?;
    both.apply(&mut o.b_to_a)?;
    ab.apply(&mut o.a_to_b)?;
    ba.apply(&mut o.b_to_a)?;
    let queue_given = both.queue_bytes.is_some();
    finish(
        &mut o.a_to_b,
        queue_given || ab.queue_bytes.is_some(),
        "a_to_b",
    )?;
    finish(
        &mut o.b_to_a,
        queue_given || ba.queue_bytes.is_some(),
        "b_to_a",
    )?;
    if o.action == Action::Run {
        if o.ns_a.is_empty() || o.ns_b.is_empty() {
            return Err("--ns-a and --ns-b are required (see --help)".into());
        }
        if o.tun_a.is_empty() {
            o.tun_a = default_tun(&o.ns_a);
        }
        if o.tun_b.is_empty() {
            o.tun_b = default_tun(&o.ns_b);
        }
        for t in [&o.tun_a, &o.tun_b] {
            if t.len() > 15 || t.contains('/') || t.contains(char::is_whitespace) {
                return Err(format!(
                    "bad device name {t:?}: at most 15 bytes, no '/' or spaces"
                ));
            }
        }
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn profile_then_overrides_per_direction() {
        let o = parse(&args(
            "--ns-a a --ns-b b --profile s1_5pct --ab-delay-ms 30 --rate-kbps 800",
        ))
        .unwrap();
        assert_eq!(o.a_to_b.latency_us, 30_000);
        assert_eq!(o.b_to_a.latency_us, 10_000);
        assert_eq!(o.a_to_b.loss, LossModel::iid(0.05));
        assert_eq!(o.a_to_b.rate_bytes_per_sec, 100_000);
        assert_eq!(o.a_to_b.queue_bytes, 10_000);
        assert_eq!((o.tun_a.as_str(), o.tun_b.as_str()), ("ta", "tb"));
    }

    #[test]
    fn burst_builds_the_simulators_bursty_model() {
        let o = parse(&args("--print-profile --loss 0.1 --burst 0.25")).unwrap();
        assert_eq!(o.a_to_b.loss, LossModel::bursty(0.10, 0.25));
        assert_eq!(
            o.b_to_a.loss,
            NetworkProfile::by_name("s1_bursty")
                .unwrap()
                .client_to_server
                .loss
        );
    }

    #[test]
    fn bad_input_is_rejected_with_a_message() {
        for bad in [
            "--print-profile --loss 1.5",
            "--print-profile --burst 0.2",
            "--print-profile --loss 0.1 --loss-ge 0.1,0.2,0,1",
            "--print-profile --loss-markov4 0.1,0.2",
            "--print-profile --profile nope",
            "--print-profile --delay-ms -3",
            "--print-profile --frobnicate 1",
            "--ns-a a",
            "--ns-a a --ns-b b --tun-a way-too-long-name",
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn reorder_gets_a_hold_back_and_tun_names_are_cut() {
        let o = parse(&args(
            "--ns-a /run/netns/averyveryverylongname --ns-b b --reorder 0.1",
        ))
        .unwrap();
        assert_eq!(o.a_to_b.reorder_extra_us, DEFAULT_REORDER_US);
        assert_eq!(o.tun_a, "taveryveryveryl");
    }
}
