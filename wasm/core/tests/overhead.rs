//! Header overhead as WIRE.md states it: 15 bytes per datagram (7 before the
//! 8-byte tag of wire version 3), 1–2 bytes per
//! coalesced message in the common case.

mod common;

use common::payload;
use ricochet_core::wire::DATA_HEADER_LEN;
use ricochet_sim::pair::Pair;
use ricochet_sim::NetworkProfile;

/// (datagrams, overhead bytes) spent sending `count` messages of `len` bytes
/// in one tick on an otherwise idle connection.
fn burst(count: u32, len: usize) -> (u64, u64) {
    let mut p = Pair::over(NetworkProfile::lan(), 1);
    assert!(p.connect());
    p.run_for(100_000);
    let before = p.client.stats();
    let mut buf = vec![0u8; 1500];
    for i in 0..count {
        p.client.send(p.now, 0, payload(i, len)).unwrap();
    }
    while p.client.poll_transmit(p.now, &mut buf).is_some() {}
    let after = p.client.stats();
    (
        after.packets_out - before.packets_out,
        after.overhead_bytes_out - before.overhead_bytes_out,
    )
}

#[test]
fn one_message_costs_the_datagram_header_plus_five_bytes() {
    let (datagrams, overhead) = burst(1, 400);
    assert_eq!(datagrams, 1);
    // 15-byte header (with its tag), 5-byte MESSAGES header, 2-byte length (400 ≥ 128).
    assert_eq!(overhead, DATA_HEADER_LEN as u64 + 5 + 2);
}

#[test]
fn coalesced_small_messages_cost_under_two_bytes_each() {
    let (datagrams, overhead) = burst(40, 20);
    assert_eq!(datagrams, 1, "40 × 20 bytes fit one datagram");
    let per_message = (overhead - DATA_HEADER_LEN as u64) as f64 / 40.0;
    assert!(per_message <= 2.0, "per-message overhead {per_message}");
    println!("40 coalesced 20-byte messages: {overhead} overhead bytes, {per_message:.2} per message beyond the 15-byte datagram header");
}
