//! The C ABI, called from Rust exactly as C would call it.

mod common;

use std::ffi::CString;
use std::ptr;
use std::time::{Duration, Instant};

use common::{client_config, Relay, TICK};
use ricochet_native::ffi::*;
use ricochet_native::{ChannelConfig, CloseReason, Config, Event, UdpClient};

struct Handle(*mut RicochetServer);

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: created by ricochet_server_create, freed once here.
        unsafe { ricochet_server_free(self.0) }
    }
}

fn next_event(srv: &Handle) -> Option<(RicochetEvent, Vec<u8>)> {
    let mut e = std::mem::MaybeUninit::<RicochetEvent>::uninit();
    // SAFETY: live handle; `e` is writable; data/len copied before the next call.
    unsafe {
        if !ricochet_server_next_event(srv.0, e.as_mut_ptr()) {
            assert_eq!(e.assume_init().kind, RicochetEventKind::None);
            return None;
        }
        let e = e.assume_init();
        let data = if e.len == 0 {
            Vec::new()
        } else {
            std::slice::from_raw_parts(e.data, e.len).to_vec()
        };
        Some((e, data))
    }
}

/// Polls both ends until the server reports an event of `kind`.
fn wait_for(
    srv: &Handle,
    client: &mut UdpClient,
    client_events: &mut Vec<Event>,
    kind: RicochetEventKind,
) -> (RicochetEvent, Vec<u8>) {
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        // SAFETY: live handle.
        assert_eq!(unsafe { ricochet_server_poll(srv.0, 1_000) }, 0);
        while let Some((e, data)) = next_event(srv) {
            if e.kind == kind {
                return (e, data);
            }
        }
        client.poll(TICK).unwrap();
        client_events.extend(client.events());
    }
    panic!("no {kind:?} event");
}

#[test]
fn c_abi_accepts_echoes_and_reports_close() {
    let addr = CString::new("127.0.0.1:0").unwrap();
    // SAFETY: NUL-terminated string.
    let srv = Handle(unsafe { ricochet_server_create(addr.as_ptr(), false) });
    assert!(!srv.0.is_null());
    // SAFETY: live handle.
    let port = unsafe { ricochet_server_local_port(srv.0) };
    assert_ne!(port, 0);
    let mut client = UdpClient::connect(("127.0.0.1", port), client_config(), b"c-token").unwrap();
    let mut client_events = Vec::new();

    let (req, payload) = wait_for(
        &srv,
        &mut client,
        &mut client_events,
        RicochetEventKind::ConnectRequest,
    );
    assert_eq!(payload, b"c-token");
    assert_eq!(req.connection_id, client.id());
    // SAFETY: live handle.
    assert!(unsafe { ricochet_server_accept(srv.0, req.connection_id) });
    wait_for(
        &srv,
        &mut client,
        &mut client_events,
        RicochetEventKind::Connected,
    );

    let deadline = Instant::now() + Duration::from_secs(3);
    while !client.is_connected() && Instant::now() < deadline {
        client.poll(TICK).unwrap();
        // SAFETY: live handle.
        unsafe { ricochet_server_poll(srv.0, 0) };
    }
    client.send(1, b"ping".to_vec()).unwrap();
    let (msg, data) = wait_for(
        &srv,
        &mut client,
        &mut client_events,
        RicochetEventKind::Message,
    );
    assert_eq!((msg.channel, data.as_slice()), (1, b"ping".as_slice()));
    // SAFETY: live handle; `data` holds `data.len()` bytes.
    let id =
        unsafe { ricochet_server_send(srv.0, msg.connection_id, 1, data.as_ptr(), data.len()) };
    assert!(id > 0);
    let (acked, _) = wait_for(
        &srv,
        &mut client,
        &mut client_events,
        RicochetEventKind::Acked,
    );
    assert_eq!(acked.message_id as i64, id);
    assert!(client_events.contains(&Event::Message {
        channel: 1,
        data: b"ping".to_vec()
    }));

    // SAFETY: live handle; null data with a length is refused, not read.
    unsafe {
        assert_eq!(
            ricochet_server_send(srv.0, msg.connection_id, 9, b"x".as_ptr(), 1),
            RICOCHET_SEND_UNKNOWN_CHANNEL
        );
        assert_eq!(
            ricochet_server_send(srv.0, 4242, 0, b"x".as_ptr(), 1),
            RICOCHET_SEND_NOT_CONNECTED
        );
        assert_eq!(
            ricochet_server_send(srv.0, msg.connection_id, 0, ptr::null(), 5),
            RICOCHET_SEND_INVALID_ARGUMENT
        );
        assert_eq!(
            ricochet_server_send(ptr::null_mut(), 1, 0, ptr::null(), 0),
            RICOCHET_SEND_INVALID_ARGUMENT
        );
        assert_eq!(ricochet_server_poll(ptr::null_mut(), 0), -1);
        assert!(!ricochet_server_next_event(srv.0, ptr::null_mut()));
    }

    client.close(5, "c side done");
    client.flush();
    let (closed, reason) = wait_for(
        &srv,
        &mut client,
        &mut client_events,
        RicochetEventKind::Closed,
    );
    assert_eq!(
        (closed.close_kind, closed.close_code),
        (RicochetCloseKind::Peer, 5)
    );
    assert_eq!(reason, b"c side done");
    client_events.extend(client.events());
    assert!(matches!(
        client_events.last(),
        Some(Event::Closed(CloseReason::Local { code: 5, .. }))
    ));
}

#[test]
fn c_abi_reject_reaches_the_client() {
    let addr = CString::new("127.0.0.1:0").unwrap();
    // SAFETY: NUL-terminated string.
    let srv = Handle(unsafe { ricochet_server_create(addr.as_ptr(), false) });
    // SAFETY: live handle.
    let port = unsafe { ricochet_server_local_port(srv.0) };
    let mut client = UdpClient::connect(("127.0.0.1", port), client_config(), b"").unwrap();
    let mut client_events = Vec::new();
    let (req, _) = wait_for(
        &srv,
        &mut client,
        &mut client_events,
        RicochetEventKind::ConnectRequest,
    );
    let reason = CString::new("no seats").unwrap();
    // SAFETY: live handle; NUL-terminated reason.
    assert!(unsafe { ricochet_server_reject(srv.0, req.connection_id, reason.as_ptr()) });
    let deadline = Instant::now() + Duration::from_secs(3);
    while client_events.is_empty() && Instant::now() < deadline {
        // SAFETY: live handle.
        unsafe { ricochet_server_poll(srv.0, 1_000) };
        client.poll(TICK).unwrap();
        client_events.extend(client.events());
    }
    assert_eq!(
        client_events,
        vec![Event::Closed(CloseReason::Rejected {
            reason: "no seats".into()
        })]
    );
}

#[test]
fn c_abi_refuses_bad_arguments() {
    let bad = CString::new("not an address").unwrap();
    // SAFETY: null and NUL-terminated strings; null handles are ignored.
    unsafe {
        assert!(ricochet_server_create(ptr::null(), true).is_null());
        assert!(ricochet_server_create(bad.as_ptr(), true).is_null());
        ricochet_server_free(ptr::null_mut());
        assert_eq!(ricochet_server_local_port(ptr::null()), 0);
    }
}

#[test]
fn c_abi_relayed_server_reports_the_claims() {
    let secret = CString::new("relay token secret").unwrap();
    let mut key = [0u8; 32];
    let addr = CString::new("127.0.0.1:0").unwrap();
    // SAFETY: NUL-terminated strings, a 32-byte key buffer; null refused.
    let srv = unsafe {
        assert!(ricochet_relay_attest_key(secret.as_ptr(), key.as_mut_ptr()));
        assert!(!ricochet_relay_attest_key(ptr::null(), key.as_mut_ptr()));
        assert!(ricochet_server_create_relayed(addr.as_ptr(), false, ptr::null()).is_null());
        Handle(ricochet_server_create_relayed(
            addr.as_ptr(),
            false,
            key.as_ptr(),
        ))
    };
    assert!(!srv.0.is_null());
    // SAFETY: live handle.
    let port = unsafe { ricochet_server_local_port(srv.0) };
    let mut relay = Relay::new(
        ([127, 0, 0, 1], port).into(),
        "relay token secret",
        r#"{"sub":"bob"}"#,
    );
    let mut client = UdpClient::connect(relay.addr(), client_config(), b"c-token").unwrap();
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut request = None;
    while request.is_none() && Instant::now() < deadline {
        // SAFETY: live handle.
        assert_eq!(unsafe { ricochet_server_poll(srv.0, 1_000) }, 0);
        while let Some((e, data)) = next_event(&srv) {
            if e.kind == RicochetEventKind::ConnectRequest {
                // SAFETY: `claims`/`claims_len` are valid until the next call on the handle.
                let claims = unsafe { std::slice::from_raw_parts(e.claims, e.claims_len) }.to_vec();
                request = Some((e.connection_id, data, claims));
            }
        }
        relay.pump();
        client.poll(TICK).unwrap();
        relay.pump();
    }
    assert_eq!(
        request,
        Some((
            client.id(),
            b"c-token".to_vec(),
            br#"{"sub":"bob"}"#.to_vec()
        ))
    );
}

#[test]
fn c_abi_events_of_a_server_without_relay_key_have_no_claims() {
    let addr = CString::new("127.0.0.1:0").unwrap();
    // SAFETY: NUL-terminated string.
    let srv = Handle(unsafe { ricochet_server_create(addr.as_ptr(), false) });
    // SAFETY: live handle.
    let port = unsafe { ricochet_server_local_port(srv.0) };
    let mut client = UdpClient::connect(("127.0.0.1", port), client_config(), b"direct").unwrap();
    let mut client_events = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut request = None;
    while request.is_none() && Instant::now() < deadline {
        // SAFETY: live handle.
        unsafe { ricochet_server_poll(srv.0, 1_000) };
        let mut e = std::mem::MaybeUninit::<RicochetEvent>::uninit();
        // SAFETY: live handle, writable event.
        while unsafe { ricochet_server_next_event(srv.0, e.as_mut_ptr()) } {
            // SAFETY: written by the call above.
            let e = unsafe { e.assume_init() };
            if e.kind == RicochetEventKind::ConnectRequest {
                request = Some((e.claims.is_null(), e.claims_len));
            }
        }
        client.poll(TICK).unwrap();
        client_events.extend(client.events());
    }
    assert_eq!(request, Some((true, 0)));
}

/// A server created with `strict_channels` over the C ABI, declaring
/// `client_config()`'s layout (reliable-ordered, reliable-ordered, unreliable).
fn strict_server(accept_all: bool) -> Handle {
    let addr = CString::new("127.0.0.1:0").unwrap();
    let layout = [
        RICOCHET_CHANNEL_RELIABLE_ORDERED,
        RICOCHET_CHANNEL_RELIABLE_ORDERED,
        RICOCHET_CHANNEL_UNRELIABLE,
    ];
    let options = RicochetServerOptions {
        accept_all,
        relay_key: ptr::null(),
        channels: layout.as_ptr(),
        channel_count: layout.len(),
        strict_channels: true,
    };
    // SAFETY: NUL-terminated string; `options.channels` holds `channel_count` bytes.
    let srv = Handle(unsafe { ricochet_server_create_with_options(addr.as_ptr(), &options) });
    assert!(!srv.0.is_null());
    srv
}

#[test]
fn c_abi_strict_channels_refuses_a_client_whose_layout_differs() {
    let srv = strict_server(true);
    // SAFETY: live handle.
    let port = unsafe { ricochet_server_local_port(srv.0) };
    // The server's kinds in another order.
    let other = Config::default().with_channels(vec![
        ChannelConfig::unreliable(),
        ChannelConfig::reliable_ordered(),
        ChannelConfig::reliable_ordered(),
    ]);
    let mut client = UdpClient::connect(("127.0.0.1", port), other, b"").unwrap();
    let mut client_events = Vec::new();
    let mut server_events = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(3);
    while client_events.is_empty() && Instant::now() < deadline {
        // SAFETY: live handle.
        assert_eq!(unsafe { ricochet_server_poll(srv.0, 1_000) }, 0);
        server_events.extend(std::iter::from_fn(|| next_event(&srv)).map(|(e, _)| e.kind));
        client.poll(TICK).unwrap();
        client_events.extend(client.events());
    }
    assert_eq!(
        client_events,
        vec![Event::Closed(CloseReason::Rejected {
            reason:
                "channel layout differs: server has reliable-ordered, reliable-ordered, unreliable"
                    .into()
        })]
    );
    assert_eq!(
        server_events,
        vec![],
        "a refused client never reaches the application"
    );
}

#[test]
fn c_abi_strict_channels_admits_a_client_with_the_servers_layout() {
    let srv = strict_server(false);
    // SAFETY: live handle.
    let port = unsafe { ricochet_server_local_port(srv.0) };
    let mut client = UdpClient::connect(("127.0.0.1", port), client_config(), b"same").unwrap();
    let mut client_events = Vec::new();
    let (req, payload) = wait_for(
        &srv,
        &mut client,
        &mut client_events,
        RicochetEventKind::ConnectRequest,
    );
    assert_eq!(
        (req.connection_id, payload.as_slice()),
        (client.id(), b"same".as_slice())
    );
    // SAFETY: live handle.
    assert!(unsafe { ricochet_server_accept(srv.0, req.connection_id) });
    wait_for(
        &srv,
        &mut client,
        &mut client_events,
        RicochetEventKind::Connected,
    );
}

#[test]
fn c_abi_options_refuse_an_unknown_channel_kind_or_missing_channels() {
    let addr = CString::new("127.0.0.1:0").unwrap();
    let kinds = [RICOCHET_CHANNEL_RELIABLE_ORDERED, 4];
    let mut options = RicochetServerOptions {
        accept_all: false,
        relay_key: ptr::null(),
        channels: kinds.as_ptr(),
        channel_count: kinds.len(),
        strict_channels: true,
    };
    // SAFETY: NUL-terminated string; `channels` null or holding `channel_count` bytes.
    unsafe {
        assert!(ricochet_server_create_with_options(addr.as_ptr(), &options).is_null());
        options.channels = ptr::null();
        assert!(ricochet_server_create_with_options(addr.as_ptr(), &options).is_null());
        // Null options, and no channels (count 0): the defaults.
        let defaults = Handle(ricochet_server_create_with_options(
            addr.as_ptr(),
            ptr::null(),
        ));
        assert!(!defaults.0.is_null());
        options.channel_count = 0;
        let default_layout = Handle(ricochet_server_create_with_options(addr.as_ptr(), &options));
        assert!(!default_layout.0.is_null());
    }
}
