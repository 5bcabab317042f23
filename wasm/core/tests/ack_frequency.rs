//! `ack_eliciting_threshold` with `max_ack_delay_us`: a game server that
//! gets inputs at 60 Hz and sends snapshots at 30 Hz lets every ACK ride on
//! a snapshot, where the default (an ACK at once after 2 packets) costs a
//! datagram of its own per 2 inputs.

use ricochet_core::{ChannelConfig, Config, ServerConfig};
use ricochet_sim::pair::Pair;
use ricochet_sim::NetworkProfile;

const INPUT_PERIOD_US: u64 = 16_667;
const SECONDS: u64 = 4;

fn channels() -> Vec<ChannelConfig> {
    vec![ChannelConfig::unreliable_sequenced()]
}

/// Datagrams the server sent over `SECONDS` of 60 Hz inputs and 30 Hz
/// snapshots, and the client's smoothed RTT at the end, µs.
fn game_traffic(server_ack_delay_us: u64, threshold: u32) -> (u64, u64) {
    let client = Config {
        channels: channels(),
        max_ack_delay_us: server_ack_delay_us,
        ..Config::default()
    };
    let mut server = ServerConfig::default();
    server.connection.channels = channels();
    server.connection.max_ack_delay_us = server_ack_delay_us;
    server.connection.ack_eliciting_threshold = threshold;
    let mut p = Pair::new(client, server, NetworkProfile::lan(), 7);
    assert!(p.connect());
    p.run_for(200_000);
    let id = p.client.id();
    let before = p.server_conn().unwrap().stats().packets_out;
    for tick in 0..60 * SECONDS {
        p.client.send(p.now, 0, vec![1; 20]).unwrap();
        if tick % 2 == 0 {
            p.server.send(p.now, id, 0, vec![2; 200]).unwrap();
        }
        p.run_for(INPUT_PERIOD_US);
    }
    let sent = p.server_conn().unwrap().stats().packets_out - before;
    (sent, p.client.stats().rtt_us)
}

#[test]
fn by_default_acks_of_60_hz_inputs_double_the_datagrams_of_30_hz_snapshots() {
    let (sent, _) = game_traffic(20_000, 2);
    let snapshots = 30 * SECONDS;
    assert!(
        sent >= snapshots * 19 / 10,
        "{sent} datagrams for {snapshots} snapshots"
    );
}

#[test]
fn acks_ride_on_snapshots_when_threshold_and_delay_cover_the_snapshot_period() {
    let (sent, rtt) = game_traffic(40_000, 4);
    let snapshots = 30 * SECONDS;
    assert!(
        sent <= snapshots + snapshots / 10,
        "{sent} datagrams for {snapshots} snapshots"
    );
    // The client subtracts the reported delay: its RTT stays the link's.
    let (_, rtt_default) = game_traffic(20_000, 2);
    assert!(
        rtt <= rtt_default + 2_000,
        "rtt {rtt} µs against {rtt_default} µs with immediate ACKs"
    );
}
