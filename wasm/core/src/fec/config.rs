//! FEC settings: a plain struct with units and defaults, and named presets
//! that state the trade-off they make (latency bought with wire bytes).

use crate::prelude::*;

/// How this side spends repair bytes on its outgoing packets. Receivers
/// always decode repair, whatever their own setting.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FecConfig {
    /// Send repair at all. Default true (it costs nothing on a clean link:
    /// repair starts only once the peer reports loss).
    pub enabled: bool,
    /// Most repair bytes per byte of protected packets, each packet counted
    /// with its headers (`encoder::CREDITED_HEADER`), e.g. 0.3 = at most
    /// 30 % extra on the wire. Default 0.3. Range 0.01..=3.0.
    pub budget: f64,
    /// Fraction of packets the repair aims to leave unrecovered (before
    /// retransmission). Sets how small a group must be for the measured loss
    /// and burstiness; the budget caps what it may cost. Default 0.005.
    pub target_residual_loss: f64,
    /// Below this measured loss rate no repair is sent. Default 0.002.
    pub min_loss: f64,
    /// Most packets one repair protects. Default 16, range 1..=32.
    pub max_group: u8,
    /// A message on a channel with a latency target may go in two halves
    /// with their repairs when that costs fewer bytes than the whole message
    /// with its copies (`controller::halves_pay`). Default true. False sends
    /// such messages whole: more bytes, but a tick's message in two
    /// datagrams instead of three, for a path that holds back a tick's third
    /// datagram (Chromium's WebTransport paces it by the first two's transfer
    /// time at a rate pinned near its window's floor: bench/reference/s1-browsers.md).
    pub halves: bool,
}

impl Default for FecConfig {
    fn default() -> Self {
        FecConfig::balanced()
    }
}

impl FecConfig {
    /// No repair: reliable retransmission alone (S3-style cost, zero bytes).
    pub fn off() -> Self {
        FecConfig {
            enabled: false,
            ..FecConfig::balanced()
        }
    }

    /// At most 30 % extra bytes; repairs most single losses within a few
    /// packets. Channels with a `latency_target_us` get their repair sent
    /// early enough for it whenever the budget allows.
    pub fn balanced() -> Self {
        FecConfig {
            enabled: true,
            budget: 0.3,
            target_residual_loss: 0.005,
            min_loss: 0.002,
            max_group: 16,
            halves: true,
        }
    }

    /// Latency first: a repair per packet (about 105 % extra bytes, headers
    /// included), so nearly every loss is repaired one one-way delay later;
    /// up to 250 % when losses come in bursts and a channel's latency target
    /// needs each repair sent twice (see `encoder.rs`): a copy carries 13
    /// bytes of headers more than the packet it repairs, so two copies of a
    /// small message cost up to ~2.4 times its packet.
    pub fn low_latency() -> Self {
        FecConfig {
            enabled: true,
            budget: 2.5,
            target_residual_loss: 0.001,
            min_loss: 0.001,
            max_group: 8,
            halves: true,
        }
    }

    /// Bandwidth first: at most 10 % extra, large groups; for bulk transfer
    /// where a round trip matters less than bytes.
    pub fn thrifty() -> Self {
        FecConfig {
            enabled: true,
            budget: 0.1,
            target_residual_loss: 0.01,
            min_loss: 0.005,
            max_group: 32,
            halves: true,
        }
    }

    /// Messages print fractions in thousandths (integer formatting: float
    /// formatting would add ~30 KB to the wasm).
    pub fn validate(&self) -> Result<(), String> {
        if !(0.01..=3.0).contains(&self.budget) {
            return Err(msg![
                "fec.budget: need 0.01..=3.0 repair bytes per protected byte, got ",
                milli(self.budget)
            ]);
        }
        if !(0.0..1.0).contains(&self.target_residual_loss) {
            return Err(msg![
                "fec.target_residual_loss: need 0..1, got ",
                milli(self.target_residual_loss)
            ]);
        }
        if !(0.0..1.0).contains(&self.min_loss) {
            return Err(msg!["fec.min_loss: need 0..1, got ", milli(self.min_loss)]);
        }
        if !(1..=32).contains(&self.max_group) {
            return Err(msg![
                "fec.max_group: need 1..=32 packets, got ",
                self.max_group
            ]);
        }
        Ok(())
    }
}

/// A fraction as "N/1000" (NaN and infinities named).
fn milli(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return "infinity".into();
    }
    msg![(x * 1000.0).round() as i64, "/1000"]
}
