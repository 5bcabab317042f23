use ricochet_core::{ChannelConfig, ChannelKind, Config, CongestionKind, FecConfig, ServerConfig};
use wasm_bindgen::prelude::*;

/// Connection settings from JS. Fields mirror `ricochet_core::Config` (see
/// its docs for units and defaults); the SDK fills them from typed options.
#[wasm_bindgen]
#[derive(Clone)]
pub struct ConfigInput {
    channels: Vec<ChannelConfig>,
    pub max_datagram_size: u32,
    pub max_message_size: u32,
    pub send_buffer_bytes: u32,
    pub recv_buffer_bytes: u32,
    pub reliable_window: u32,
    pub idle_timeout_us: f64,
    pub keepalive_interval_us: f64,
    pub handshake_timeout_us: f64,
    pub max_ack_delay_us: f64,
    pub max_connections: u32,
    /// Server: most channels a client may declare (default 16; more: REJECT
    /// "too many channels").
    pub max_channels: u32,
    /// Server: receive memory budget of all connections together, bytes
    /// (default 256 MiB; at least `recv_buffer_bytes`).
    pub recv_budget_bytes: u32,
    /// FEC preset: 0 off, 1 balanced (default), 2 low latency, 3 thrifty.
    pub fec_preset: u8,
    /// FEC budget (repair bytes per protected byte); 0 = the preset's.
    pub fec_budget: f64,
    /// Congestion controller: 0 BBR (default), 1 NewReno.
    pub congestion: u8,
    /// Server: relay attestation key (`setRelayKey`); None admits HELLOs as sent.
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    relay_key: Option<[u8; 32]>,
}

impl Default for ConfigInput {
    fn default() -> Self {
        let c = Config::default();
        let s = ServerConfig::default();
        ConfigInput {
            channels: Vec::new(),
            max_datagram_size: c.max_datagram_size as u32,
            max_message_size: c.max_message_size as u32,
            send_buffer_bytes: c.send_buffer_bytes as u32,
            recv_buffer_bytes: c.recv_buffer_bytes as u32,
            reliable_window: c.reliable_window,
            idle_timeout_us: c.idle_timeout_us as f64,
            keepalive_interval_us: c.keepalive_interval_us as f64,
            handshake_timeout_us: c.handshake_timeout_us as f64,
            max_ack_delay_us: c.max_ack_delay_us as f64,
            max_connections: s.max_connections as u32,
            max_channels: s.max_channels as u32,
            recv_budget_bytes: s.recv_budget_bytes as u32,
            fec_preset: 1,
            fec_budget: 0.0,
            congestion: 0,
            relay_key: None,
        }
    }
}

#[wasm_bindgen]
impl ConfigInput {
    #[wasm_bindgen(constructor)]
    pub fn new() -> ConfigInput {
        ConfigInput::default()
    }

    /// Declare a channel: kind 0 reliable-ordered, 1 reliable-unordered,
    /// 2 unreliable-sequenced, 3 unreliable.
    #[wasm_bindgen(js_name = addChannel)]
    pub fn add_channel(&mut self, kind: u8, priority: u8, max_age_us: f64, latency_target_us: f64) -> Result<(), JsError> {
        let kind = ChannelKind::from_byte(kind).map_err(|_| JsError::new("channel kind must be 0..=3"))?;
        let latency_target_us = crate::micros(latency_target_us);
        self.channels.push(ChannelConfig { kind, priority, max_age_us: crate::micros(max_age_us), latency_target_us });
        Ok(())
    }

    /// Server only: admit only HELLOs attested with this 32-byte relay key
    /// (e.g. from `relayAttestKey`).
    #[cfg(feature = "server")]
    #[wasm_bindgen(js_name = setRelayKey)]
    pub fn set_relay_key(&mut self, key: &[u8]) -> Result<(), JsError> {
        let key: [u8; 32] = key.try_into().map_err(|_| JsError::new("relayKey must be 32 bytes"))?;
        self.relay_key = Some(key);
        Ok(())
    }
}

impl ConfigInput {
    pub(crate) fn to_config(&self) -> Config {
        let mut c = Config {
            max_datagram_size: self.max_datagram_size as usize,
            max_message_size: self.max_message_size as usize,
            send_buffer_bytes: self.send_buffer_bytes as usize,
            recv_buffer_bytes: self.recv_buffer_bytes as usize,
            reliable_window: self.reliable_window,
            idle_timeout_us: crate::micros(self.idle_timeout_us),
            keepalive_interval_us: crate::micros(self.keepalive_interval_us),
            handshake_timeout_us: crate::micros(self.handshake_timeout_us),
            max_ack_delay_us: crate::micros(self.max_ack_delay_us),
            fec: fec_config(self.fec_preset, self.fec_budget),
            congestion: if self.congestion == 1 { CongestionKind::NewReno } else { CongestionKind::Bbr },
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
            max_connections: self.max_connections as usize,
            max_channels: self.max_channels as usize,
            recv_budget_bytes: self.recv_budget_bytes as usize,
            relay_key: self.relay_key,
            ..ServerConfig::default()
        }
    }
}

/// FEC settings from a preset number (see `ConfigInput::fec_preset`) and an
/// optional budget override (0 or NaN keeps the preset's). Validated by the core.
pub(crate) fn fec_config(preset: u8, budget: f64) -> FecConfig {
    let mut f = match preset {
        0 => FecConfig::off(),
        2 => FecConfig::low_latency(),
        3 => FecConfig::thrifty(),
        _ => FecConfig::balanced(),
    };
    if budget > 0.0 {
        f.budget = budget;
    }
    f
}
