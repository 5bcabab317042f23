//! Scenario S3's loop (bench/SCENARIOS.md): a client sends reliable messages
//! to a server in the same thread, datagrams handed across directly (no
//! simulator, no sockets, no bindings), until every message is acknowledged.
//! Included by `bench_s3` (native) and `s3_core` (the same loop compiled to
//! wasm, so that the core's own cost there is measured apart from the
//! bindings and JavaScript that bench/s3-loop.mjs adds). No clock: the
//! caller times `run`.

use ricochet_core::{Config, Connection, Event, Server, ServerConfig};

pub struct Counts {
    pub delivered: u64,
    pub datagrams: u64,
    pub wire_bytes: u64,
}

pub struct S3 {
    client: Connection,
    server: Server,
    buf: Vec<u8>,
    now: u64,
}

impl S3 {
    /// A client and a server with the handshake done.
    pub fn connected() -> S3 {
        let mut client = Connection::client(
            Config::default(),
            0,
            &ricochet_sim::pair::insecure_seeded_entropy(1),
            b"",
        )
        .expect("valid config");
        let mut server = Server::new(
            ServerConfig::default(),
            &ricochet_sim::pair::TEST_SERVER_SECRET,
        )
        .expect("valid config");
        let mut buf = vec![0u8; 1500];
        let mut now = 0u64;
        while !client.is_connected() {
            now += 1_000;
            while let Some(n) = client.poll_transmit(now, &mut buf) {
                let _ = server.handle_datagram(now, &buf[..n]);
            }
            while let Some((id, ev)) = server.poll_event() {
                if let Event::ConnectRequest { .. } = ev {
                    server.accept(now, id);
                }
            }
            while let Some((_, n)) = server.poll_transmit(now, &mut buf) {
                let _ = client.handle_datagram(now, &buf[..n]);
            }
            while client.poll_event().is_some() {}
        }
        S3 {
            client,
            server,
            buf,
            now,
        }
    }

    /// Sends `messages` of `size` bytes, `per_tick` a tick 100 µs apart,
    /// until all are acknowledged.
    pub fn run(&mut self, messages: u64, size: usize, per_tick: u64) -> Counts {
        let S3 {
            client,
            server,
            buf,
            now: clock,
        } = self;
        // A local clock (written back at the end), as bench_s3 always had it.
        let mut now = *clock;
        let payload = vec![0xabu8; size];
        let (mut sent, mut delivered, mut acked, mut datagrams, mut wire_bytes) =
            (0u64, 0u64, 0u64, 0u64, 0u64);
        // Each side drains as lib.rs's run loop says a host does after its
        // inputs: datagrams until None (handed to the other side), then events,
        // then the timer if it is due (and the datagrams that firing made).
        while acked < messages {
            now += 100;
            for _ in 0..per_tick.min(messages - sent) {
                if let Err(e) = client.send(now, 0, payload.clone()) {
                    panic!("{e} after {sent} sent, {acked} acked: {:?}", client.stats());
                }
                sent += 1;
            }
            let mut client_due = true;
            while client_due {
                client_due = false;
                let mut fired = false;
                loop {
                    while let Some(n) = client.poll_transmit(now, buf) {
                        datagrams += 1;
                        wire_bytes += n as u64;
                        let _ = server.handle_datagram(now, &buf[..n]);
                    }
                    while let Some(ev) = client.poll_event() {
                        if let Event::Acked(_) = ev {
                            acked += 1;
                        }
                    }
                    if fired || client.poll_timeout().is_none_or(|t| t > now) {
                        break;
                    }
                    client.handle_timeout(now);
                    fired = true;
                }
                let mut fired = false;
                loop {
                    while let Some((_, n)) = server.poll_transmit(now, buf) {
                        wire_bytes += n as u64;
                        let _ = client.handle_datagram(now, &buf[..n]);
                        client_due = true;
                    }
                    while let Some((_, ev)) = server.poll_event() {
                        if let Event::Message { .. } = ev {
                            delivered += 1;
                        }
                    }
                    if fired || server.poll_timeout().is_none_or(|t| t > now) {
                        break;
                    }
                    server.handle_timeout(now);
                    fired = true;
                }
            }
        }
        *clock = now;
        assert_eq!(delivered, messages);
        Counts {
            delivered,
            datagrams,
            wire_bytes,
        }
    }
}
