//! The driver's waits end at their deadline: the core's timers (pacing,
//! repair within a latency target, ACK delay, resends) fire when it asks,
//! not when the OS's scheduler tick next comes round. Linux and Android
//! only: elsewhere the driver still waits on a receive timeout (see
//! `socket.rs`), whose granularity is the platform's.
#![cfg(any(target_os = "linux", target_os = "android"))]

mod common;

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use common::LOOPBACK;
use ricochet_native::{Config, ServerConfig, UdpClient, UdpServer};

const WAIT: Duration = Duration::from_millis(1);

/// Median time of 15 calls of `poll`.
fn median(mut poll: impl FnMut()) -> Duration {
    let mut took: Vec<Duration> = (0..15)
        .map(|_| {
            let t = Instant::now();
            poll();
            t.elapsed()
        })
        .collect();
    took.sort();
    took[7]
}

/// A receive timeout slept two scheduler ticks for any wait under one
/// (8 ms for 1 ms on a 250 Hz kernel); a shared machine may add a little,
/// not that much to a median.
fn assert_on_time(took: Duration) {
    assert!(took >= WAIT, "woke before its wait: {took:?}");
    assert!(
        took < Duration::from_millis(5),
        "a {WAIT:?} wait took {took:?}"
    );
}

#[test]
fn an_idle_server_wakes_when_its_wait_ends() {
    let mut server = UdpServer::bind(LOOPBACK, ServerConfig::default()).unwrap();
    assert_on_time(median(|| server.poll(WAIT).unwrap()));
}

#[test]
fn a_client_with_no_reply_wakes_when_its_wait_ends() {
    // A bound socket that never answers: the client's HELLO goes unanswered.
    let silent = UdpSocket::bind(LOOPBACK).unwrap();
    let mut client =
        UdpClient::connect(silent.local_addr().unwrap(), Config::default(), b"").unwrap();
    assert_on_time(median(|| client.poll(WAIT).unwrap()));
}
