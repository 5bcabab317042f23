//! Connection statistics, read with `Connection::stats`.

use crate::prelude::*;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChannelStats {
    pub messages_sent: u64,
    pub messages_delivered: u64,
    /// Messages queued, not yet fully sent.
    pub queued_messages: u64,
    /// Messages sent and awaiting acknowledgement.
    pub unacked_messages: u64,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    pub rtt_us: u64,
    pub rtt_var_us: u64,
    pub min_rtt_us: u64,
    /// Fraction of our ack-eliciting packets declared lost (after the
    /// peer's FEC repair: a rebuilt packet is acknowledged, not lost).
    pub loss_out: f64,
    /// Fraction of the peer's packets that never arrived over the link (from
    /// number gaps), before FEC repair.
    pub loss_in: f64,
    /// Fraction of the peer's packets still missing after FEC repair
    /// (residual loss; retransmission covers it for reliable data). Lost
    /// repair packets count here too: they are never rebuilt.
    pub residual_loss_in: f64,
    /// Peer packets rebuilt from FEC repair (no round trip).
    pub fec_recovered: u64,
    /// Packets the peer numbered from the first to the largest received:
    /// what `loss_in` and `residual_loss_in` are fractions of, so a host can
    /// tell recent loss from two readings (missing = fraction × expected).
    pub peer_packets_expected: u64,
    /// Bytes of repair packets this side sent.
    pub fec_repair_bytes_out: u64,
    /// Repair packets this side sent.
    pub fec_repair_packets_out: u64,
    /// Loss rate and P(lost | previous lost) the peer last reported on our
    /// packets (what this side's FEC adapts to).
    pub fec_peer_loss: f64,
    pub fec_peer_burst: f64,
    pub packets_out: u64,
    pub packets_in: u64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// Packets declared lost.
    pub packets_lost: u64,
    /// Ack-eliciting packets sent (the ones tracked for loss).
    pub eliciting_packets_out: u64,
    /// Message fragments sent again: after loss, on probe, or early (see
    /// `early_resends`).
    pub retransmissions: u64,
    /// Sent whole messages cut again into fragments because the datagram
    /// size fell below them (`set_max_datagram_size`); sent again from the start.
    pub recut_messages: u64,
    /// Packets whose reliable data was sent again because their ACK was
    /// overdue on a thin stream, before any loss was known (some of them
    /// had only lost their ACK).
    pub early_resends: u64,
    /// Packets received twice (dropped).
    pub duplicates: u64,
    /// Datagrams dropped as malformed.
    pub malformed: u64,
    /// Datagrams dropped because their tag (or HELLO key) did not match.
    pub unauthenticated: u64,
    /// Authentic packets dropped as numbered too far ahead of the largest
    /// received (`MAX_PACKET_NUMBER_JUMP`); a conforming peer never sends one.
    pub too_far_ahead: u64,
    /// Packets dropped for lack of receive room (left unacknowledged).
    pub no_room: u64,
    /// Bytes of packet headers and frame headers sent (everything but payload).
    pub overhead_bytes_out: u64,
    /// Payload bytes of messages sent (first transmissions and retransmissions).
    pub payload_bytes_out: u64,
    pub congestion_window: u64,
    pub bytes_in_flight: u64,
    /// Bytes held by queued and unacknowledged messages.
    pub send_buffer_bytes: u64,
    /// Bytes held out of order or in reassembly at the receiver.
    pub recv_buffer_bytes: u64,
    pub channels: Vec<ChannelStats>,
}
