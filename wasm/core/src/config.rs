//! Connection configuration: a plain struct whose every field states its unit
//! and default, named presets, and one validation pass with exact messages.
//!
//! The defaults are tuned for a 60 Hz game on links up to ~150 ms RTT.

pub use crate::fec::FecConfig;
use crate::prelude::*;
pub use crate::wire::ChannelKind;
use crate::wire::{MAX_CHANNELS, PROTOCOL_VERSION};

/// Largest datagram any transport carries (UDP over IPv4), bytes.
pub const MAX_DATAGRAM_SIZE: usize = 65507;

/// One channel, declared at connect time by the client (its kind travels in
/// HELLO; priority and age limit are local to each side).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelConfig {
    pub kind: ChannelKind,
    /// Higher is sent first when a datagram has room for only some channels.
    /// Default 128.
    pub priority: u8,
    /// Unreliable channels only: a message not yet sent after this many
    /// microseconds is dropped (reported `Lost`). 0 = no limit. Default 0.
    pub max_age_us: u64,
    /// One-way delivery latency this channel's messages should meet, µs
    /// (local, not sent). FEC sends repair for packets carrying them early
    /// enough to arrive within it, as far as the FEC budget allows. 0 = no
    /// target (repair waits for a full group). Default 0.
    pub latency_target_us: u64,
}

impl ChannelConfig {
    pub fn new(kind: ChannelKind) -> Self {
        ChannelConfig {
            kind,
            priority: 128,
            max_age_us: 0,
            latency_target_us: 0,
        }
    }
    pub fn reliable_ordered() -> Self {
        Self::new(ChannelKind::ReliableOrdered)
    }
    pub fn reliable_unordered() -> Self {
        Self::new(ChannelKind::ReliableUnordered)
    }
    pub fn unreliable_sequenced() -> Self {
        Self::new(ChannelKind::UnreliableSequenced)
    }
    pub fn unreliable() -> Self {
        Self::new(ChannelKind::Unreliable)
    }
    pub fn with_priority(mut self, priority: u8) -> Self {
        self.priority = priority;
        self
    }
    pub fn with_max_age_us(mut self, max_age_us: u64) -> Self {
        self.max_age_us = max_age_us;
        self
    }
    pub fn with_latency_target_us(mut self, latency_target_us: u64) -> Self {
        self.latency_target_us = latency_target_us;
        self
    }
}

/// Which congestion controller a connection uses (see `congestion/`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CongestionKind {
    /// Rate- and delay-based (BBR v1 model), paced: approaches the link rate
    /// under random loss and keeps the bottleneck queue short. The default.
    Bbr,
    /// Loss-based window (RFC 9002 style) with a floor, unpaced; halves on
    /// every round trip with loss, so random loss holds it near the floor.
    NewReno,
    /// No window: send whatever is queued. For tests and closed networks only.
    Unlimited,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Channels, by index. Default: one of each kind, in the order
    /// reliable-ordered, reliable-unordered, unreliable-sequenced, unreliable.
    pub channels: Vec<ChannelConfig>,
    /// Largest datagram this side sends, bytes. Default 1200 (fits every
    /// common path, WebTransport's ~1211 included). Range 128..=65507.
    pub max_datagram_size: usize,
    /// Smallest size `Connection::set_max_datagram_size` may later set
    /// (a move to a transport with smaller datagrams), bytes. Fragments are
    /// cut to fit it, since the wire fixes a message's fragments once sent:
    /// those in flight must still fit after the move. Messages that fit one
    /// datagram whole still use the full `max_datagram_size`. Default 0: the
    /// same as `max_datagram_size` (fragments as large as possible; the size
    /// may only grow). Otherwise 128..=`max_datagram_size`.
    pub min_datagram_size: usize,
    /// Largest message `send` accepts and the peer will reassemble, bytes.
    /// Default 1 MiB.
    pub max_message_size: usize,
    /// Bytes of queued plus unacknowledged messages before `send` refuses.
    /// Default 8 MiB. Must be at least `max_message_size`.
    pub send_buffer_bytes: usize,
    /// Receive memory budget of the whole connection, bytes: out-of-order and
    /// partially reassembled messages of all its channels together, head-of-line
    /// reassemblies included; never exceeded, however many channels the peer
    /// declared. Packets that would exceed it are dropped unacknowledged (the
    /// sender retransmits). `head_reserve(max_message_size)` of it (about
    /// 1.25 × `max_message_size`) is kept for one channel at a time to
    /// complete the message it waits for next, so no channel deadlocks.
    /// Default 8 MiB. Must be at least `head_reserve(max_message_size)`.
    pub recv_buffer_bytes: usize,
    /// Reliable channels: most messages in flight per channel (sent but not
    /// acknowledged, and held out of order by the receiver). Default 4096,
    /// at most 16384 (the wire carries 16-bit sequence numbers).
    pub reliable_window: u32,
    /// No packet received for this long closes the connection, µs. Default 10 s.
    pub idle_timeout_us: u64,
    /// Send a PING when nothing ack-eliciting was sent for this long, µs.
    /// Default 1 s. Must be below `idle_timeout_us`.
    pub keepalive_interval_us: u64,
    /// Client: give up connecting after this long, µs. Default 5 s.
    pub handshake_timeout_us: u64,
    /// Client: first HELLO retransmission after this long, doubling, µs.
    /// Default 250 ms.
    pub handshake_resend_us: u64,
    /// Longest this side delays an acknowledgement, µs. Default 5 ms.
    pub max_ack_delay_us: u64,
    /// An acknowledgement goes out at once, not delayed, after this many
    /// ack-eliciting packets. Default 2 (as QUIC). A server whose own
    /// messages leave at a fixed rate (game snapshots) can raise it, with
    /// `max_ack_delay_us` above that period, so that ACKs ride on those
    /// messages instead of costing datagrams of their own.
    pub ack_eliciting_threshold: u32,
    /// RTT assumed before the first sample, µs. Default 100 ms.
    pub initial_rtt_us: u64,
    /// A packet is lost once this many later packets are acknowledged.
    /// Default 3.
    pub packet_threshold: u64,
    /// Largest handshake payload (HELLO) and reject reason, bytes. Default 512.
    /// With a relay key (`ServerConfig::relay_key`) it limits the client's own
    /// payload inside the attestation; the envelope adds at most
    /// `attest::MAX_CLAIMS_LEN` + 40 bytes on top (client payloads below 16 KiB).
    pub max_handshake_payload: usize,
    /// Thin streams (in flight at most half the window): send a packet's
    /// reliable data again as soon as its ACK is overdue (srtt + 4·rttvar +
    /// the peer's usual ACK delay), without waiting for a later packet to
    /// reveal the loss. Costs one resent message per lost ACK. Default true.
    pub early_resend: bool,
    /// Congestion controller (and pacing). Default `CongestionKind::Bbr`.
    pub congestion: CongestionKind,
    /// Forward error correction on this side's packets. Default
    /// `FecConfig::balanced()` (on; no repair until the peer reports loss).
    /// Change at run time with `Connection::set_fec`.
    pub fec: FecConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            channels: vec![
                ChannelConfig::reliable_ordered(),
                ChannelConfig::reliable_unordered(),
                ChannelConfig::unreliable_sequenced(),
                ChannelConfig::unreliable(),
            ],
            max_datagram_size: 1200,
            min_datagram_size: 0,
            max_message_size: 1 << 20,
            send_buffer_bytes: 8 << 20,
            recv_buffer_bytes: 8 << 20,
            reliable_window: 4096,
            idle_timeout_us: 10_000_000,
            keepalive_interval_us: 1_000_000,
            handshake_timeout_us: 5_000_000,
            handshake_resend_us: 250_000,
            max_ack_delay_us: 5_000,
            ack_eliciting_threshold: 2,
            initial_rtt_us: 100_000,
            packet_threshold: 3,
            max_handshake_payload: 512,
            early_resend: true,
            congestion: CongestionKind::Bbr,
            fec: FecConfig::balanced(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl core::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "invalid config: {}", self.0)
    }
}

impl core::error::Error for ConfigError {}

impl Config {
    /// Acknowledges within 1 ms, keeps the link warm every 250 ms and spends
    /// up to 250 % extra bytes on FEC (`FecConfig::low_latency`): for
    /// fast-paced games that want losses repaired or detected as early as
    /// possible.
    pub fn low_latency() -> Self {
        Config {
            max_ack_delay_us: 1_000,
            keepalive_interval_us: 250_000,
            fec: FecConfig::low_latency(),
            ..Config::default()
        }
    }

    /// Builder: replace the channel list.
    pub fn with_channels(mut self, channels: Vec<ChannelConfig>) -> Self {
        self.channels = channels;
        self
    }

    /// Protocol version this build speaks.
    pub fn protocol_version() -> u16 {
        PROTOCOL_VERSION
    }

    /// The smallest datagram size this connection may be set to: fragments
    /// are cut to fit it (`min_datagram_size`, 0 meaning `max_datagram_size`).
    pub fn floor_datagram_size(&self) -> usize {
        if self.min_datagram_size == 0 {
            self.max_datagram_size
        } else {
            self.min_datagram_size.min(self.max_datagram_size)
        }
    }

    /// What `Connection::client` checks before it starts: the config, and a
    /// handshake payload of `handshake_len` bytes against
    /// `max_handshake_payload`.
    pub fn check_client(&self, handshake_len: usize) -> Result<(), ConfigError> {
        self.validate()?;
        if handshake_len > self.max_handshake_payload {
            return Err(ConfigError(msg![
                "handshake payload: ",
                handshake_len,
                " bytes exceeds max_handshake_payload (",
                self.max_handshake_payload,
                ")"
            ]));
        }
        Ok(())
    }

    /// Checks every field once; the message names the field and the limit.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |m: String| Err(ConfigError(m));
        if self.channels.is_empty() || self.channels.len() > MAX_CHANNELS {
            return err(msg![
                "channels: need 1..=",
                MAX_CHANNELS,
                ", got ",
                self.channels.len()
            ]);
        }
        if !(128..=MAX_DATAGRAM_SIZE).contains(&self.max_datagram_size) {
            return err(msg![
                "max_datagram_size: need 128..=65507 bytes, got ",
                self.max_datagram_size
            ]);
        }
        if self.min_datagram_size != 0
            && !(128..=self.max_datagram_size).contains(&self.min_datagram_size)
        {
            return err(msg![
                "min_datagram_size: need 0 or 128..=",
                self.max_datagram_size,
                " bytes, got ",
                self.min_datagram_size
            ]);
        }
        if self.max_message_size == 0 || self.max_message_size > (1 << 30) {
            return err(msg![
                "max_message_size: need 1..=1 GiB, got ",
                self.max_message_size
            ]);
        }
        if self.send_buffer_bytes < self.max_message_size {
            return err(msg![
                "send_buffer_bytes (",
                self.send_buffer_bytes,
                ") must be at least max_message_size (",
                self.max_message_size,
                ")"
            ]);
        }
        let reserve = crate::recv_budget::head_reserve(self.max_message_size);
        if self.recv_buffer_bytes < reserve {
            return err(msg![
                "recv_buffer_bytes (",
                self.recv_buffer_bytes,
                ") must be at least ",
                reserve,
                " (head_reserve of max_message_size ",
                self.max_message_size,
                ")"
            ]);
        }
        if !(1..=16384).contains(&self.reliable_window) {
            return err(msg![
                "reliable_window: need 1..=16384 messages, got ",
                self.reliable_window
            ]);
        }
        if self.idle_timeout_us == 0 {
            return err("idle_timeout_us: must be above 0".into());
        }
        if self.keepalive_interval_us == 0 || self.keepalive_interval_us >= self.idle_timeout_us {
            return err(msg![
                "keepalive_interval_us (",
                self.keepalive_interval_us,
                ") must be above 0 and below idle_timeout_us (",
                self.idle_timeout_us,
                ")"
            ]);
        }
        if self.handshake_resend_us == 0 || self.handshake_timeout_us == 0 {
            return err("handshake_resend_us and handshake_timeout_us: must be above 0".into());
        }
        if self.initial_rtt_us == 0 {
            return err("initial_rtt_us: must be above 0".into());
        }
        if self.packet_threshold == 0 {
            return err("packet_threshold: must be above 0".into());
        }
        if !(1..=255).contains(&self.ack_eliciting_threshold) {
            return err(msg![
                "ack_eliciting_threshold: need 1..=255 packets, got ",
                self.ack_eliciting_threshold
            ]);
        }
        if let Err(e) = self.fec.validate() {
            return err(e);
        }
        if self.max_handshake_payload + 64 > self.floor_datagram_size() {
            return err(msg![
                "max_handshake_payload (",
                self.max_handshake_payload,
                ") must leave 64 bytes of min_datagram_size/max_datagram_size (",
                self.floor_datagram_size(),
                ")"
            ]);
        }
        Ok(())
    }
}

/// Server endpoint configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerConfig {
    /// Applied to every accepted connection. Each client declares its
    /// channels in HELLO; of `channels` only `latency_target_us` is used, for
    /// the channel of the same index when its kind matches.
    pub connection: Config,
    /// Most live connections; HELLOs beyond it are rejected with "server full".
    /// Default 4096.
    pub max_connections: usize,
    /// Most connect requests awaiting `accept`/`reject`. Default 1024.
    pub max_pending: usize,
    /// A connect request not answered in this long is rejected, µs. Default 5 s.
    pub pending_timeout_us: u64,
    /// Relay attestation key (`attest::attest_key` of the relay's token
    /// secret). When set, every HELLO must carry a valid relay attestation
    /// (WIRE.md, "Relay attestation"): others are rejected with
    /// "not admitted by a relay", and `Server::claims` holds each admitted
    /// connection's claims. None (the default): HELLOs are taken as sent,
    /// for direct clients.
    pub relay_key: Option<crate::attest::AttestKey>,
    /// Most channels a client may declare in HELLO; a HELLO with more is
    /// rejected with "too many channels" before anything is allocated.
    /// Default 16 (the SDK declares 4 by default, the arcade 3). Range 1..=255.
    pub max_channels: usize,
    /// The server declares the channel layout: a HELLO whose channel kinds
    /// differ from `connection.channels` (their number, or any kind by
    /// index) is rejected with "channel layout differs: server has …"
    /// before anything is allocated, so a client that lists its channels
    /// in another order is refused instead of silently misread. Default
    /// false: each client declares its own.
    pub strict_channels: bool,
    /// Server-wide receive memory budget, bytes: the sum over connections of
    /// what each holds out of order or in reassembly. At the budget no
    /// connection's receive buffer grows (packets that would grow it are
    /// dropped unacknowledged, as at a connection's own budget), so the total
    /// stays bounded and no connection takes more than its own
    /// `recv_buffer_bytes`. Default 256 MiB. Must be at least
    /// `connection.recv_buffer_bytes`.
    pub recv_budget_bytes: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            connection: Config::default(),
            max_connections: 4096,
            max_pending: 1024,
            pending_timeout_us: 5_000_000,
            relay_key: None,
            max_channels: 16,
            strict_channels: false,
            recv_budget_bytes: 256 << 20,
        }
    }
}

impl ServerConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.connection.validate()?;
        if self.max_connections == 0 || self.max_pending == 0 {
            return Err(ConfigError(
                "max_connections and max_pending: must be above 0".into(),
            ));
        }
        if !(1..=MAX_CHANNELS).contains(&self.max_channels) {
            return Err(ConfigError(msg![
                "max_channels: need 1..=",
                MAX_CHANNELS,
                ", got ",
                self.max_channels
            ]));
        }
        if self.recv_budget_bytes < self.connection.recv_buffer_bytes {
            return Err(ConfigError(msg![
                "recv_budget_bytes (",
                self.recv_budget_bytes,
                ") must be at least connection.recv_buffer_bytes (",
                self.connection.recv_buffer_bytes,
                ")"
            ]));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_and_presets_validate() {
        Config::default().validate().unwrap();
        Config::low_latency().validate().unwrap();
        ServerConfig::default().validate().unwrap();
    }

    #[test]
    fn an_ack_threshold_of_zero_is_refused_by_name() {
        let c = Config {
            ack_eliciting_threshold: 0,
            ..Config::default()
        };
        assert!(c
            .validate()
            .unwrap_err()
            .0
            .starts_with("ack_eliciting_threshold"));
    }

    #[test]
    fn validation_names_the_field() {
        let c = Config {
            max_datagram_size: 20,
            ..Config::default()
        };
        assert!(c.validate().unwrap_err().0.starts_with("max_datagram_size"));
        let c = Config {
            send_buffer_bytes: 10,
            ..Config::default()
        };
        assert!(c.validate().unwrap_err().0.starts_with("send_buffer_bytes"));
    }
}
