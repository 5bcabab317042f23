//! The game server over real UDP on loopback: a shard on its own thread,
//! clients from ricochet-native. Each test waits for what it expects, up to
//! a deadline, never for a fixed time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ricochet_arcade::bots::client_config;
use ricochet_arcade::codec::{InputFrame, Message, KEY_RIGHT};
use ricochet_arcade::net::{Shard, ShardOptions, ShardStats, CH_EVENTS, CH_INPUT};
use ricochet_native::{CloseReason, Event, UdpClient};

struct Server {
    port: u16,
    stats: Arc<ShardStats>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn start() -> Server {
    let stats = Arc::new(ShardStats::default());
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    let (s, st) = (stats.clone(), stop.clone());
    let thread = std::thread::spawn(move || {
        let opts = ShardOptions::acks_on_snapshots(30, Duration::from_millis(1));
        let mut shard = Shard::bind("127.0.0.1", 0, &opts, s).expect("bind");
        tx.send(shard.port().expect("port")).expect("send port");
        shard.run(&st).expect("run");
    });
    let port = rx.recv().expect("shard started");
    Server {
        port,
        stats,
        stop,
        thread: Some(thread),
    }
}

fn join(server: &Server, room: u8, name: &str) -> UdpClient {
    let hello = Message::Join {
        room,
        name: name.into(),
    }
    .encode();
    UdpClient::connect(("127.0.0.1", server.port), client_config(), &hello).expect("connect")
}

/// Polls until `f` returns Some for an event, or panics after 5 s.
fn wait_for<T>(c: &mut UdpClient, what: &str, mut f: impl FnMut(Event) -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        c.poll(Duration::from_millis(5)).expect("poll");
        while let Some(ev) = c.next_event() {
            if let Some(v) = f(ev) {
                return v;
            }
        }
    }
    panic!("timed out waiting for {what}");
}

fn message(ev: Event) -> Option<Message> {
    match ev {
        Event::Message { data, .. } => {
            Some(Message::decode(&data).expect("the server sends valid messages"))
        }
        _ => None,
    }
}

fn welcome(c: &mut UdpClient) -> u8 {
    wait_for(c, "welcome", |ev| match message(ev) {
        Some(Message::Welcome { you, .. }) => Some(you),
        _ => None,
    })
}

#[test]
fn a_join_is_welcomed_with_the_map_and_snapshots_follow() {
    let server = start();
    let mut c = join(&server, 4, "ann");
    let (room, walls) = wait_for(&mut c, "welcome", |ev| match message(ev) {
        Some(Message::Welcome { room, walls, .. }) => Some((room, walls.len())),
        _ => None,
    });
    assert_eq!(room, 4);
    assert!(walls > 0);
    let players = wait_for(&mut c, "snapshot", |ev| match message(ev) {
        Some(Message::Snapshot { players, .. }) => Some(players.len()),
        _ => None,
    });
    assert_eq!(players, 1);
}

#[test]
fn a_malformed_join_is_rejected_with_a_reason() {
    let server = start();
    let mut c = UdpClient::connect(("127.0.0.1", server.port), client_config(), &[0xff, 0x00])
        .expect("connect");
    let reason = wait_for(&mut c, "rejection", |ev| match ev {
        Event::Closed(CloseReason::Rejected { reason }) => Some(reason),
        _ => None,
    });
    assert_eq!(reason, "bad join: unknown message tag 15");
}

#[test]
fn inputs_move_the_player_and_are_acknowledged_in_snapshots() {
    let server = start();
    let mut c = join(&server, 1, "mover");
    let me = welcome(&mut c);
    let x0 = wait_for(&mut c, "first snapshot", |ev| match message(ev) {
        Some(Message::Snapshot { players, .. }) => players.iter().find(|p| p.id == me).map(|p| p.x),
        _ => None,
    });
    let frame = InputFrame {
        keys: KEY_RIGHT,
        fire: false,
        aim: 0.0,
    };
    // Six inputs, each message repeating the ones before it (as the browser does).
    for seq in 1..=6u16 {
        let frames = vec![frame.clone(); (seq as usize).min(4)];
        c.send(CH_INPUT, Message::Input { seq, frames }.encode())
            .expect("send");
        c.flush(); // one datagram each: queued sequenced messages supersede each other
    }
    let x = wait_for(
        &mut c,
        "snapshot acknowledging input 6",
        |ev| match message(ev) {
            Some(Message::Snapshot {
                ack: 6, players, ..
            }) => players.iter().find(|p| p.id == me).map(|p| p.x),
            _ => None,
        },
    );
    assert_eq!(
        x,
        x0 + 24.0,
        "six steps of 4 px, each applied once despite the repeats"
    );
}

#[test]
fn garbage_on_a_channel_is_counted_and_the_session_lives_on() {
    let server = start();
    let mut c = join(&server, 2, "noisy");
    welcome(&mut c);
    c.send(CH_INPUT, vec![0xff, 0xff, 0xff]).expect("send");
    c.send(CH_EVENTS, vec![]).expect("send");
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.stats.bad_messages.load(Ordering::Relaxed) < 2 {
        assert!(Instant::now() < deadline, "bad messages were not counted");
        c.poll(Duration::from_millis(5)).expect("poll");
        c.events().for_each(drop);
    }
    // Still seated: snapshots keep coming.
    wait_for(&mut c, "a snapshot after the garbage", |ev| {
        match message(ev) {
            Some(Message::Snapshot { .. }) => Some(()),
            _ => None,
        }
    });
    assert!(c.is_connected());
}

#[test]
fn players_in_one_room_see_each_others_joins_and_chat() {
    let server = start();
    let mut a = join(&server, 9, "ann");
    welcome(&mut a);
    let mut b = join(&server, 9, "bob");
    let bob = welcome(&mut b);
    let joined = wait_for(&mut a, "bob's join", |ev| match message(ev) {
        Some(Message::PlayerJoined { id, name, .. }) if name == "bob" => Some(id),
        _ => None,
    });
    assert_eq!(joined, bob);
    b.send(
        CH_EVENTS,
        Message::Chat {
            text: "hi ann".into(),
        }
        .encode(),
    )
    .expect("send");
    b.flush();
    let (from, text) = wait_for(&mut a, "bob's chat", |ev| match message(ev) {
        Some(Message::ChatFrom { from, text }) => Some((from, text)),
        _ => None,
    });
    assert_eq!((from, text.as_str()), (bob, "hi ann"));
    b.close(0, "bye");
    b.flush();
    let left = wait_for(&mut a, "bob's leave", |ev| match message(ev) {
        Some(Message::PlayerLeft { id }) => Some(id),
        _ => None,
    });
    assert_eq!(left, bob);
}

#[test]
fn rooms_are_separate() {
    let server = start();
    let mut a = join(&server, 1, "ann");
    welcome(&mut a);
    let mut b = join(&server, 2, "bob");
    welcome(&mut b);
    // Ann's snapshots carry only Ann for a while after Bob joined elsewhere.
    let mut seen = 0;
    wait_for(&mut a, "ten snapshots", |ev| match message(ev) {
        Some(Message::Snapshot { players, .. }) => {
            assert_eq!(players.len(), 1);
            seen += 1;
            (seen == 10).then_some(())
        }
        Some(Message::PlayerJoined { name, .. }) => {
            assert_ne!(name, "bob");
            None
        }
        _ => None,
    });
}
