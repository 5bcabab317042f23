//! Traffic through a real UDP echo server on 127.0.0.1.

mod common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use common::{check, client_config, payload, size_of, EchoThread};
use ricochet_native::{Event, SendError, UdpClient};

fn connect(echo: &EchoThread) -> UdpClient {
    let mut client = UdpClient::connect(echo.addr, client_config(), b"echo-test").expect("connect");
    let deadline = Instant::now() + Duration::from_secs(3);
    while !client.is_connected() && Instant::now() < deadline {
        client.poll(Duration::from_millis(5)).unwrap();
        for ev in client.events() {
            assert!(
                !matches!(ev, Event::Closed(_)),
                "closed while connecting: {ev:?}"
            );
        }
    }
    assert!(client.is_connected(), "no connection");
    client
}

#[test]
fn reliable_ordered_5000_messages_on_two_channels_echo_intact_in_order() {
    const N: u32 = 5_000;
    let echo = EchoThread::start();
    let mut client = connect(&echo);
    let mut next_send = [0u32; 2];
    let mut next_recv = [0u32; 2];
    let mut held: [Option<Vec<u8>>; 2] = [None, None];
    let deadline = Instant::now() + Duration::from_secs(20);
    while next_recv != [N, N] {
        assert!(
            Instant::now() < deadline,
            "timed out: sent {next_send:?}, echoed {next_recv:?}"
        );
        for ch in 0..2u8 {
            let c = ch as usize;
            while next_send[c] < N {
                let n = next_send[c];
                let data = held[c]
                    .take()
                    .unwrap_or_else(|| payload(n + ch as u32 * N, size_of(n)));
                match client.send(ch, data) {
                    Ok(_) => next_send[c] += 1,
                    Err(SendError::BufferFull(data)) => {
                        held[c] = Some(data);
                        break;
                    }
                    Err(e) => panic!("send: {e}"),
                }
            }
        }
        client.poll(Duration::from_millis(5)).unwrap();
        for ev in client.events() {
            match ev {
                Event::Message { channel, data } => {
                    let c = channel as usize;
                    assert!(c < 2, "message on channel {channel}");
                    let n = check(&data) - channel as u32 * N;
                    assert_eq!(n, next_recv[c], "channel {channel} out of order");
                    next_recv[c] += 1;
                }
                Event::Lost(id) => panic!("reliable message {id} lost"),
                Event::Closed(r) => panic!("closed: {r:?}"),
                _ => {}
            }
        }
    }
    let s = client.stats();
    assert_eq!(s.channels[0].messages_delivered, N as u64);
    assert_eq!(s.channels[1].messages_delivered, N as u64);
}

#[test]
fn unreliable_messages_each_get_exactly_one_receipt() {
    const N: u32 = 1_000;
    let echo = EchoThread::start();
    let mut client = connect(&echo);
    let mut ids = HashSet::new();
    for n in 0..N {
        ids.insert(client.send(2, payload(n, size_of(n))).expect("send"));
        if n % 100 == 99 {
            client.poll(Duration::ZERO).unwrap();
        }
    }
    let mut receipts = HashSet::new();
    let mut echoed = 0;
    let deadline = Instant::now() + Duration::from_secs(10);
    while receipts.len() < ids.len() && Instant::now() < deadline {
        client.poll(Duration::from_millis(5)).unwrap();
        for ev in client.events() {
            match ev {
                Event::Acked(id) | Event::Lost(id) => {
                    assert!(ids.contains(&id), "receipt for unknown message {id}");
                    assert!(receipts.insert(id), "second receipt for message {id}");
                }
                Event::Message { channel: 2, data } => {
                    check(&data);
                    echoed += 1;
                }
                Event::Closed(r) => panic!("closed: {r:?}"),
                _ => {}
            }
        }
    }
    assert_eq!(receipts.len(), ids.len(), "messages without a receipt");
    assert!(echoed > 0, "no unreliable echo arrived");
}
