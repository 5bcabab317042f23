use crate::prelude::*;
use ricochet_core::{ChannelConfig, ChannelKind, Config, CongestionKind, FecConfig, ServerConfig};
use wasm_bindgen::prelude::*;

use crate::Scratch;

/// Connection settings from JS, read and written by field number (`get`,
/// `set`: one export pair instead of a getter and setter per field, each of
/// which costs glue JS and a wasm wrapper). Fields mirror
/// `ricochet_core::Config` (see its docs for units and defaults); the SDK
/// fills them from typed options (their numbers reach the SDK through
/// sdk/scripts/gen-codes.mjs).
#[wasm_bindgen]
#[derive(Clone)]
pub struct ConfigInput {
    channels: Vec<ChannelConfig>,
    /// Indexed by `Field`.
    values: [f64; FIELDS],
    /// Server: relay attestation key (`setRelayKey`); None admits HELLOs as sent.
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    relay_key: Option<[u8; 32]>,
    /// Written by JS at `ioReserve` (a client's entropy and handshake) and
    /// by `check` (its refusal).
    pub(crate) io: Scratch,
}

/// Field numbers of `ConfigInput::get`/`set`; sdk/scripts/gen-codes.mjs reads
/// them from here (the SDK suite fails when its generated copy is stale).
#[derive(Clone, Copy)]
enum Field {
    MaxDatagramSize,
    MaxMessageSize,
    SendBufferBytes,
    RecvBufferBytes,
    ReliableWindow,
    IdleTimeoutUs,
    KeepaliveIntervalUs,
    HandshakeTimeoutUs,
    MaxAckDelayUs,
    /// Server: most connections.
    MaxConnections,
    /// Server: most channels a client may declare (default 16; more: REJECT
    /// "too many channels").
    MaxChannels,
    /// Server: receive memory budget of all connections together, bytes
    /// (default 256 MiB; at least `recv_buffer_bytes`).
    RecvBudgetBytes,
    /// FEC preset: 0 off, 1 balanced (default), 2 low latency, 3 thrifty;
    /// plus [`FEC_WHOLE`] for latency-targeted messages sent whole.
    FecPreset,
    /// FEC budget (repair bytes per protected byte); 0 = the preset's.
    FecBudget,
    /// Congestion controller: 0 BBR (default), 1 NewReno.
    Congestion,
    /// Smallest datagram size the connection may later be set to (0: the
    /// max; see `Config::min_datagram_size`).
    MinDatagramSize,
    /// Server: 1 = the channels added are the layout every client must
    /// declare (`ServerConfig::strict_channels`); 0 (default) = any.
    StrictChannels,
}
const FIELDS: usize = Field::StrictChannels as usize + 1;

impl Default for ConfigInput {
    fn default() -> Self {
        let c = Config::default();
        let s = ServerConfig::default();
        let mut values = [0.0; FIELDS];
        let mut put = |f: Field, v: f64| values[f as usize] = v;
        put(Field::MaxDatagramSize, c.max_datagram_size as f64);
        put(Field::MaxMessageSize, c.max_message_size as f64);
        put(Field::SendBufferBytes, c.send_buffer_bytes as f64);
        put(Field::RecvBufferBytes, c.recv_buffer_bytes as f64);
        put(Field::ReliableWindow, c.reliable_window as f64);
        put(Field::IdleTimeoutUs, c.idle_timeout_us as f64);
        put(Field::KeepaliveIntervalUs, c.keepalive_interval_us as f64);
        put(Field::HandshakeTimeoutUs, c.handshake_timeout_us as f64);
        put(Field::MaxAckDelayUs, c.max_ack_delay_us as f64);
        put(Field::MaxConnections, s.max_connections as f64);
        put(Field::MaxChannels, s.max_channels as f64);
        put(Field::RecvBudgetBytes, s.recv_budget_bytes as f64);
        put(Field::FecPreset, 1.0);
        put(Field::FecBudget, 0.0);
        put(Field::Congestion, 0.0);
        put(Field::MinDatagramSize, c.min_datagram_size as f64);
        ConfigInput {
            channels: Vec::new(),
            values,
            relay_key: None,
            io: Scratch::default(),
        }
    }
}

#[wasm_bindgen]
impl ConfigInput {
    #[wasm_bindgen(constructor)]
    pub fn new() -> ConfigInput {
        ConfigInput::default()
    }

    /// Field `field` (see `Field`); NaN for an unknown number.
    pub fn get(&self, field: u8) -> f64 {
        self.values.get(field as usize).copied().unwrap_or(f64::NAN)
    }

    /// Sets field `field` (see `Field`), stored as the core's type holds it
    /// (as the per-field setters this replaces did: u32 fields wrap modulo
    /// 2^32, u8 fields keep the low byte); unknown numbers are ignored.
    pub fn set(&mut self, field: u8, value: f64) {
        use Field::*;
        const U32: [Field; 9] = [
            MaxDatagramSize,
            MinDatagramSize,
            MaxMessageSize,
            SendBufferBytes,
            RecvBufferBytes,
            ReliableWindow,
            MaxConnections,
            MaxChannels,
            RecvBudgetBytes,
        ];
        let Some(v) = self.values.get_mut(field as usize) else {
            return;
        };
        // ToUint32 of the number, as the JS -> wasm i32 conversion did
        // (exact below 2^63 in magnitude; the SDK's checks stay far below).
        let wrapped = if value.is_finite() {
            value as i64 as u32
        } else {
            0
        };
        *v = if U32.iter().any(|&f| f as u8 == field) {
            wrapped as f64
        } else if field == FecPreset as u8
            || field == Congestion as u8
            || field == StrictChannels as u8
        {
            wrapped as u8 as f64
        } else {
            value
        };
    }

    /// Declare a channel: kind 0 reliable-ordered, 1 reliable-unordered,
    /// 2 unreliable-sequenced, 3 unreliable. False (nothing added) for
    /// another kind. (Failures here and in `check` return plain values, not
    /// a thrown `JsError`: that costs the client's glue an externref table.)
    #[wasm_bindgen(js_name = addChannel)]
    pub fn add_channel(
        &mut self,
        kind: u8,
        priority: u8,
        max_age_us: f64,
        latency_target_us: f64,
    ) -> bool {
        let Ok(kind) = ChannelKind::from_byte(kind) else {
            return false;
        };
        self.channels.push(ChannelConfig {
            kind,
            priority,
            max_age_us: crate::micros(max_age_us),
            latency_target_us: crate::micros(latency_target_us),
        });
        true
    }

    /// Address of an input buffer of at least `len` bytes; valid until the
    /// next call into wasm.
    #[wasm_bindgen(js_name = ioReserve)]
    pub fn io_reserve(&mut self, len: usize) -> usize {
        self.io.reserve(len) as usize
    }

    /// Checks this config for a client with a handshake payload of
    /// `handshake_len` bytes, as `new Client` will: 0 if it would start,
    /// else the length of why not, written at `ioReserve`.
    pub fn check(&mut self, handshake_len: usize) -> usize {
        match self.to_config().check_client(handshake_len) {
            Ok(()) => 0,
            Err(e) => self
                .io
                .put(ricochet_core::msg!["invalid config: ", e.0].as_bytes()),
        }
    }

    /// Server only: admit only HELLOs attested with this 32-byte relay key
    /// (e.g. from `relayAttestKey`).
    #[cfg(feature = "server")]
    #[wasm_bindgen(js_name = setRelayKey)]
    pub fn set_relay_key(&mut self, key: &[u8]) -> Result<(), JsError> {
        let key: [u8; 32] = key
            .try_into()
            .map_err(|_| JsError::new("relayKey must be 32 bytes"))?;
        self.relay_key = Some(key);
        Ok(())
    }
}

impl ConfigInput {
    /// A u32 or u8 field (`set` stored it in range).
    fn u32(&self, f: Field) -> u32 {
        self.values[f as usize] as u32
    }

    fn u8(&self, f: Field) -> u8 {
        self.values[f as usize] as u8
    }

    pub(crate) fn to_config(&self) -> Config {
        let v = |f: Field| self.values[f as usize];
        let mut c = Config {
            max_datagram_size: self.u32(Field::MaxDatagramSize) as usize,
            min_datagram_size: self.u32(Field::MinDatagramSize) as usize,
            max_message_size: self.u32(Field::MaxMessageSize) as usize,
            send_buffer_bytes: self.u32(Field::SendBufferBytes) as usize,
            recv_buffer_bytes: self.u32(Field::RecvBufferBytes) as usize,
            reliable_window: self.u32(Field::ReliableWindow),
            idle_timeout_us: crate::micros(v(Field::IdleTimeoutUs)),
            keepalive_interval_us: crate::micros(v(Field::KeepaliveIntervalUs)),
            handshake_timeout_us: crate::micros(v(Field::HandshakeTimeoutUs)),
            max_ack_delay_us: crate::micros(v(Field::MaxAckDelayUs)),
            fec: fec_config(self.u8(Field::FecPreset), v(Field::FecBudget)),
            congestion: if self.u8(Field::Congestion) == 1 {
                CongestionKind::NewReno
            } else {
                CongestionKind::Bbr
            },
            ..Config::default()
        };
        if !self.channels.is_empty() {
            c.channels = self.channels.clone();
        }
        c
    }

    #[cfg(feature = "server")]
    pub(crate) fn to_server_config(&self) -> ServerConfig {
        ServerConfig {
            connection: self.to_config(),
            max_connections: self.u32(Field::MaxConnections) as usize,
            max_channels: self.u32(Field::MaxChannels) as usize,
            strict_channels: self.u8(Field::StrictChannels) == 1,
            recv_budget_bytes: self.u32(Field::RecvBudgetBytes) as usize,
            relay_key: self.relay_key,
            ..ServerConfig::default()
        }
    }
}

/// Added to a preset number: latency-targeted messages go whole with their
/// copies, never in halves (`FecConfig::halves` false; the SDK's choice on
/// Chromium's WebTransport, `fecShapeFor` in sdk/src/core-config.ts).
pub(crate) const FEC_WHOLE: u8 = 16;

/// FEC settings from a preset number (see `Field::FecPreset`) and an
/// optional budget override (0 or NaN keeps the preset's). Validated by the core.
pub(crate) fn fec_config(preset: u8, budget: f64) -> FecConfig {
    let mut f = match preset & !FEC_WHOLE {
        0 => FecConfig::off(),
        2 => FecConfig::low_latency(),
        3 => FecConfig::thrifty(),
        _ => FecConfig::balanced(),
    };
    if budget > 0.0 {
        f.budget = budget;
    }
    f.halves = preset & FEC_WHOLE == 0;
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fec_whole_added_to_a_preset_keeps_it_and_turns_halves_off() {
        for preset in 0..4u8 {
            let plain = fec_config(preset, 0.0);
            assert!(plain.halves);
            let whole = fec_config(preset + FEC_WHOLE, 0.5);
            assert!(!whole.halves);
            assert_eq!(
                FecConfig {
                    halves: true,
                    budget: plain.budget,
                    ..whole
                },
                plain
            );
            assert_eq!(whole.budget, 0.5);
        }
    }
}
