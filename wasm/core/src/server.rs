//! Server endpoint: routes datagrams to connections by connection ID (never
//! by address), turns HELLOs into connect requests the application accepts
//! or rejects, and multiplexes every connection's output.

use crate::prelude::*;
use alloc::collections::binary_heap::PeekMut;
use alloc::collections::BinaryHeap;
use core::cmp::Reverse;

use crate::attest::{unwrap_unverified, verify_attestation, NOT_ADMITTED};
use crate::auth::{ct_eq, server_nonce, Direction, ServerSecret, SessionKey, TagKey};
use crate::config::{ConfigError, ServerConfig};
use crate::connection::Connection;
use crate::error::{DropReason, SendError};
use crate::event::{Event, MessageId};
use crate::path::PathEvent;
use crate::ring::Ring;
use crate::slab_map::SlabMap;
use crate::wire::{self, ChannelKind, Handshake, Writer, PROTOCOL_VERSION};

/// A connection ID, as chosen by the client.
pub type ConnectionId = u32;

struct Pending {
    channels: Vec<ChannelKind>,
    key: SessionKey,
    /// Size of the HELLO: a REJECT in answer may not be larger.
    hello_len: usize,
    /// Bytes of every HELLO with this key so far (the amplification budget).
    received: usize,
    since: u64,
    /// Relay-verified claims (only with a relay key).
    claims: Option<Box<[u8]>>,
}

/// A REJECT to send: to whom, tagged with which key, at most how large.
struct RejectDue {
    id: ConnectionId,
    key: SessionKey,
    max_len: usize,
    reason: String,
}

/// A recent rejection, repeated to a HELLO with the same key.
struct Rejected {
    key: SessionKey,
    reason: String,
    until: u64,
}

struct Entry {
    conn: Connection,
    /// Relay-verified claims, kept for the connection's life.
    claims: Option<Box<[u8]>>,
    /// May have output: checked by `poll_transmit`.
    dirty: bool,
    /// The deadline this connection has in `deadlines` (others there are stale).
    scheduled: Option<u64>,
    /// Its receive buffer as last counted in `Server::recv_buffered`.
    recv_counted: usize,
}

pub struct Server {
    config: ServerConfig,
    connections: SlabMap<ConnectionId, Entry>,
    pending: SlabMap<ConnectionId, Pending>,
    /// Rejections to send, and recent ones to repeat if HELLO comes again.
    rejects_due: Ring<RejectDue>,
    rejected: SlabMap<ConnectionId, Rejected>,
    /// IDs of connections that ended, refused until the given time: a stale
    /// or replayed HELLO must not open a second connection under an ID whose
    /// client may still be running (it would splice two streams into one).
    /// The key says whose: only that client is answered.
    retired: SlabMap<ConnectionId, (u64, SessionKey)>,
    /// Host-supplied entropy the connections' nonces are derived from.
    secret: ServerSecret,
    /// Makes each nonce's input unique, even for a reused ID and key.
    nonces: u64,
    dirty: Ring<ConnectionId>,
    events: Ring<(ConnectionId, Event)>,
    /// What became of candidate addresses (see `path_changed`).
    path_events: Ring<(ConnectionId, PathEvent)>,
    /// The last datagram `poll_transmit` returned goes to the candidate.
    to_candidate: bool,
    /// Connection deadlines, earliest first, so timeouts cost O(log n) with
    /// thousands of connections. Entries not matching `Entry::scheduled` are
    /// stale and skipped; the top is always current.
    deadlines: BinaryHeap<Reverse<(u64, ConnectionId)>>,
    /// Receive buffers of all connections, kept by delta after each call on
    /// a connection (O(1)), against `ServerConfig::recv_budget_bytes`.
    recv_buffered: usize,
    /// The connection granted the server's head reserve (see `with_conn`).
    recv_holder: Option<ConnectionId>,
    recv_reserve: usize,
}

/// Labels of the nonce and path-challenge derivations (`auth::server_nonce`).
const NONCE_LABEL: &[u8] = b"ricochet-3 welcome nonce";
const CHALLENGE_LABEL: &[u8] = b"ricochet-3 path challenge";

impl Server {
    /// `secret`: 32 bytes from OS randomness (e.g. `getrandom`,
    /// `crypto.getRandomValues`), fresh per server. Each WELCOME's nonce is
    /// derived from it; anyone who knows it can predict nonces and so pass
    /// for any address (tests may use a fixed one).
    pub fn new(config: ServerConfig, secret: &ServerSecret) -> Result<Server, ConfigError> {
        config.validate()?;
        let recv_reserve = crate::recv_budget::head_reserve(config.connection.max_message_size)
            .min(config.recv_budget_bytes);
        Ok(Server {
            config,
            connections: SlabMap::new(),
            pending: SlabMap::new(),
            rejects_due: Ring::new(),
            rejected: SlabMap::new(),
            retired: SlabMap::new(),
            secret: *secret,
            nonces: 0,
            dirty: Ring::new(),
            events: Ring::new(),
            path_events: Ring::new(),
            to_candidate: false,
            deadlines: BinaryHeap::new(),
            recv_buffered: 0,
            recv_holder: None,
            recv_reserve,
        })
    }

    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    pub fn connection(&self, id: ConnectionId) -> Option<&Connection> {
        self.connections.get(id).map(|e| &e.conn)
    }

    /// IDs of live connections, ascending.
    pub fn connection_ids(&self) -> impl Iterator<Item = ConnectionId> + '_ {
        self.connections.iter().map(|(id, _)| id)
    }

    /// Bytes all connections hold out of order or in reassembly (at most
    /// `ServerConfig::recv_budget_bytes`).
    pub fn receive_buffered_bytes(&self) -> usize {
        self.recv_buffered
    }

    pub fn connection_count(&self) -> usize {
        self.connections.len()
    }

    /// Feed one datagram. Returns the connection ID it belonged to (so the
    /// host can note the peer's current address) or why it was dropped.
    /// Only the session's own client gets `Ok`: a DATA packet whose tag does
    /// not verify, or a HELLO for a live, pending, rejected or retired ID
    /// with another session key, is `Err(Unauthenticated)`, so a host
    /// following `Ok` never moves a session to an attacker's address.
    pub fn handle_datagram(
        &mut self,
        now: u64,
        datagram: &[u8],
    ) -> Result<ConnectionId, DropReason> {
        let (ty, id) = wire::peek_conn_id(datagram).ok_or(DropReason::Malformed)?;
        if let Some(r) = self.with_conn(id, |c| c.handle_datagram(now, datagram)) {
            return r.map(|_| id);
        }
        if ty != wire::PACKET_HELLO {
            return Err(DropReason::UnknownConnection);
        }
        let Ok(Handshake::Hello {
            conn_id,
            version,
            channels,
            key,
            payload,
        }) = wire::decode_handshake(datagram)
        else {
            return Err(DropReason::Malformed);
        };
        let hello_len = datagram.len();
        if let Some(p) = self.pending.get_mut(conn_id) {
            if !ct_eq(&p.key, &key) {
                return Err(DropReason::Unauthenticated);
            }
            p.received = p.received.saturating_add(hello_len);
            return Ok(conn_id);
        }
        if let Some((_, old_key)) = self.retired.get(conn_id) {
            // Only the connection's own client hears that it is over; another
            // key could make us answer toward anyone.
            if !ct_eq(old_key, &key) {
                return Err(DropReason::Unauthenticated);
            }
            self.queue_reject(conn_id, key, hello_len, "connection closed".into());
            return Ok(conn_id);
        }
        if let Some(r) = self.rejected.get(conn_id) {
            if !ct_eq(&r.key, &key) {
                return Err(DropReason::Unauthenticated);
            }
            let reason = r.reason.clone();
            self.queue_reject(conn_id, key, hello_len, reason);
            return Ok(conn_id);
        }
        if version != PROTOCOL_VERSION {
            let reason = msg![
                "unsupported protocol version ",
                version,
                "; server speaks ",
                PROTOCOL_VERSION
            ];
            self.reject_new(now, conn_id, key, hello_len, reason);
            return Ok(conn_id);
        }
        // With a relay key, only relay-admitted clients go further; the
        // payload limit then applies to the client's own payload.
        let (payload, claims) = match &self.config.relay_key {
            // No key: no claims, but the client's own payload, relayed or not.
            None => (unwrap_unverified(payload).unwrap_or(payload), None),
            Some(relay_key) => match verify_attestation(relay_key, conn_id, &key, payload) {
                Some(a) => (a.payload, Some(Box::from(a.claims))),
                None => {
                    self.reject_new(now, conn_id, key, hello_len, NOT_ADMITTED.into());
                    return Ok(conn_id);
                }
            },
        };
        if self.connections.len() >= self.config.max_connections
            || self.pending.len() >= self.config.max_pending
        {
            self.reject_new(now, conn_id, key, hello_len, "server full".into());
            return Ok(conn_id);
        }
        // Every declared channel costs state on both sides: refuse before
        // anything is allocated for this client.
        if channels.len() > self.config.max_channels {
            self.reject_new(now, conn_id, key, hello_len, "too many channels".into());
            return Ok(conn_id);
        }
        if self.config.strict_channels && !same_kinds(&channels, &self.config.connection.channels) {
            self.reject_new(
                now,
                conn_id,
                key,
                hello_len,
                layout_differs(&self.config.connection.channels),
            );
            return Ok(conn_id);
        }
        if payload.len() > self.config.connection.max_handshake_payload {
            self.reject_new(
                now,
                conn_id,
                key,
                hello_len,
                "handshake payload too large".into(),
            );
            return Ok(conn_id);
        }
        self.pending.insert(
            conn_id,
            Pending {
                channels,
                key,
                hello_len,
                received: hello_len,
                since: now,
                claims,
            },
        );
        self.events.push_back((
            conn_id,
            Event::ConnectRequest {
                payload: payload.to_vec(),
            },
        ));
        Ok(conn_id)
    }

    /// The host saw `handle_datagram` return `Ok(id)` for a datagram of
    /// `len` bytes from an address that is neither the connection's current
    /// one nor its candidate. True: keep sending to the current address and
    /// hold this one as the candidate (replacing any other); the server sends
    /// it PATH_CHALLENGEs (`transmit_to_candidate`) and reports the outcome in
    /// `poll_path_event`. False: the connection is not validated yet (its
    /// 3× limit covers every address) or not live: move at once.
    pub fn path_changed(&mut self, now: u64, id: ConnectionId, len: usize) -> bool {
        let Some(e) = self.connections.get(id) else {
            return false;
        };
        self.nonces += 1;
        let challenge = server_nonce(
            &self.secret,
            CHALLENGE_LABEL,
            id,
            &e.conn.keys.key,
            self.nonces,
        );
        self.with_conn(id, |c| c.start_path_check(now, challenge, len))
            .unwrap_or(false)
    }

    /// Another `Ok` datagram of `len` bytes from the candidate address: the
    /// server may send it 3× as much more.
    pub fn candidate_datagram(&mut self, id: ConnectionId, len: usize) {
        if let Some(e) = self.connections.get_mut(id) {
            e.conn.on_candidate_datagram(len);
        }
    }

    /// True if the datagram the last `poll_transmit` returned goes to its
    /// connection's candidate address, not the current one.
    pub fn transmit_to_candidate(&self) -> bool {
        self.to_candidate
    }

    /// What became of a candidate: `Validated` (send to it from now on) or
    /// `Abandoned` (forget it). Drain after every input and timeout.
    pub fn poll_path_event(&mut self) -> Option<(ConnectionId, PathEvent)> {
        self.path_events.pop_front()
    }

    /// The relay-verified claims (UTF-8 JSON, e.g. `{"sub":"alice"}`) of a
    /// pending connect request or a live connection; None without a relay
    /// key (`ServerConfig::relay_key`) or once the connection is gone.
    pub fn claims(&self, id: ConnectionId) -> Option<&[u8]> {
        match self.pending.get(id) {
            Some(p) => p.claims.as_deref(),
            None => self.connections.get(id)?.claims.as_deref(),
        }
    }

    /// Accept a pending connect request. Returns false if there is none.
    pub fn accept(&mut self, now: u64, id: ConnectionId) -> bool {
        let Some(p) = self.pending.remove(id) else {
            return false;
        };
        self.nonces += 1;
        let nonce = server_nonce(&self.secret, NONCE_LABEL, id, &p.key, self.nonces);
        let mut config = self.config.connection.clone();
        if p.claims.is_some() {
            relayed_datagram_size(&mut config);
        }
        let conn = Connection::accepted(config, id, p.key, &p.channels, now, nonce, p.received);
        self.connections.insert(
            id,
            Entry {
                conn,
                claims: p.claims,
                dirty: false,
                scheduled: None,
                recv_counted: 0,
            },
        );
        self.with_conn(id, |_| ());
        true
    }

    /// Refuse a pending connect request; the client gets `Closed(Rejected)`
    /// with this reason. Returns false if there is none.
    pub fn reject(&mut self, now: u64, id: ConnectionId, reason: &str) -> bool {
        let Some(p) = self.pending.remove(id) else {
            return false;
        };
        self.reject_new(now, id, p.key, p.hello_len, reason.to_string());
        true
    }

    fn reject_new(
        &mut self,
        now: u64,
        id: ConnectionId,
        key: SessionKey,
        hello_len: usize,
        mut reason: String,
    ) {
        let max = self.config.connection.max_handshake_payload;
        if reason.len() > max {
            let mut cut = max;
            while !reason.is_char_boundary(cut) {
                cut -= 1;
            }
            reason.truncate(cut);
        }
        // Remember briefly so a retransmitted HELLO gets the same answer.
        if self.rejected.len() >= self.config.max_pending {
            self.rejected.pop_first();
        }
        self.rejected.insert(
            id,
            Rejected {
                key,
                reason: reason.clone(),
                until: now + self.config.pending_timeout_us,
            },
        );
        self.queue_reject(id, key, hello_len, reason);
    }

    /// `max_len`: the size of the HELLO answered. Before its client is
    /// validated a server never sends more than it received, so a spoofed
    /// source address cannot turn it into an amplifier.
    fn queue_reject(&mut self, id: ConnectionId, key: SessionKey, max_len: usize, reason: String) {
        if self.rejects_due.len() < self.config.max_pending {
            self.rejects_due.push_back(RejectDue {
                id,
                key,
                max_len,
                reason,
            });
        }
    }

    /// Send on one connection (see `Connection::send`). An unknown ID hands
    /// the message back in `NotConnected`.
    pub fn send(
        &mut self,
        now: u64,
        id: ConnectionId,
        channel: u8,
        data: Vec<u8>,
    ) -> Result<MessageId, SendError> {
        let Some(e) = self.connections.get_mut(id) else {
            return Err(SendError::NotConnected(data));
        };
        let r = e.conn.send(now, channel, data);
        if Self::settle(
            &mut self.events,
            &mut self.path_events,
            &mut self.dirty,
            &mut self.deadlines,
            id,
            e,
        ) {
            self.clean_deadlines();
        }
        r
    }

    /// Close one connection with an application code and reason.
    pub fn close(&mut self, now: u64, id: ConnectionId, code: u64, reason: &str) {
        self.with_conn(id, |c| c.close(now, code, reason));
    }

    /// Run `f` on a connection, then collect its events and mark it dirty.
    pub fn with_conn<R>(
        &mut self,
        id: ConnectionId,
        f: impl FnOnce(&mut Connection) -> R,
    ) -> Option<R> {
        let e = self.connections.get_mut(id)?;
        // What the server-wide budget lets this connection hold meanwhile.
        // As within a connection (`recv_budget`), one head-of-line reserve is
        // kept back and granted to one connection at a time, so a server full
        // of out-of-order data still completes the messages it waits for.
        let (cap, reserve) = (self.config.recv_budget_bytes, self.recv_reserve);
        let ceiling = e.recv_counted + (cap - reserve).saturating_sub(self.recv_buffered);
        let head_ceiling = if self.recv_holder.is_none_or(|h| h == id) {
            e.recv_counted + cap.saturating_sub(self.recv_buffered)
        } else {
            ceiling
        };
        e.conn.recv_budget.set_ceilings(ceiling, head_ceiling);
        let r = f(&mut e.conn);
        self.recv_buffered = self.recv_buffered - e.recv_counted + e.conn.receive_buffered_bytes();
        e.recv_counted = e.conn.receive_buffered_bytes();
        let heading = e.conn.recv_budget.head_in_progress();
        if self.recv_holder == Some(id) && !heading {
            self.recv_holder = None;
        }
        if self.recv_holder.is_none() && heading && self.recv_buffered > cap - reserve {
            self.recv_holder = Some(id);
        }
        if Self::settle(
            &mut self.events,
            &mut self.path_events,
            &mut self.dirty,
            &mut self.deadlines,
            id,
            e,
        ) {
            self.clean_deadlines();
        }
        Some(r)
    }

    /// After a call on entry `e`: collect its events, mark it dirty and
    /// reschedule it, on the entry in hand (with thousands of connections
    /// each lookup of `id` is a walk of cold tree nodes). True if its
    /// deadline changed (see `note_deadline`).
    fn settle(
        events: &mut Ring<(ConnectionId, Event)>,
        path_events: &mut Ring<(ConnectionId, PathEvent)>,
        dirty: &mut Ring<ConnectionId>,
        deadlines: &mut BinaryHeap<Reverse<(u64, ConnectionId)>>,
        id: ConnectionId,
        e: &mut Entry,
    ) -> bool {
        while let Some(ev) = e.conn.poll_event() {
            events.push_back((id, ev));
        }
        if let Some(pe) = e.conn.take_path_event() {
            path_events.push_back((id, pe));
        }
        if !e.dirty {
            e.dirty = true;
            dirty.push_back(id);
        }
        Self::note_deadline(deadlines, id, e)
    }

    /// Pushes `e`'s deadline if it changed; true if it did (the entry it
    /// replaces is stale now and may be the top). Unchanged, the heap is
    /// as it was and its top still current.
    fn note_deadline(
        deadlines: &mut BinaryHeap<Reverse<(u64, ConnectionId)>>,
        id: ConnectionId,
        e: &mut Entry,
    ) -> bool {
        let at = e.conn.poll_timeout();
        let Some(old) = core::mem::replace(&mut e.scheduled, at) else {
            if let Some(at) = at {
                deadlines.push(Reverse((at, id)));
            }
            return at.is_some();
        };
        if at == Some(old) {
            return false;
        }
        // With few connections its entry is usually the top: move it there
        // rather than push a new one and pop the stale one later.
        let moved = match deadlines.peek_mut() {
            Some(mut top) if top.0 == (old, id) => {
                match at {
                    // Sifts down when `top` drops.
                    Some(at) => *top = Reverse((at, id)),
                    None => {
                        PeekMut::pop(top);
                    }
                }
                true
            }
            _ => false,
        };
        match at {
            Some(at) if moved => deadlines.peek() != Some(&Reverse((at, id))),
            Some(at) => {
                deadlines.push(Reverse((at, id)));
                true
            }
            None => true,
        }
    }

    /// Drop stale entries from the top (and compact when mostly stale).
    fn clean_deadlines(&mut self) {
        while let Some(&Reverse((at, id))) = self.deadlines.peek() {
            if self
                .connections
                .get(id)
                .is_some_and(|e| e.scheduled == Some(at))
            {
                break;
            }
            self.deadlines.pop();
        }
        if self.deadlines.len() > 2 * self.connections.len() + 64 {
            self.deadlines = self
                .connections
                .iter()
                .filter_map(|(id, e)| e.scheduled.map(|at| Reverse((at, id))))
                .collect();
        }
    }

    /// Next datagram to send and the connection it is for.
    pub fn poll_transmit(&mut self, now: u64, buf: &mut [u8]) -> Option<(ConnectionId, usize)> {
        self.to_candidate = false;
        while let Some(r) = self.rejects_due.pop_front() {
            let Some(reason) = wire::fit_reject_reason(&r.reason, r.max_len) else {
                continue;
            };
            let mut w = Writer::new(buf);
            if wire::encode_reject(&mut w, r.id, reason.as_bytes()) {
                let n = w.len();
                TagKey::derive(&r.key, Direction::ServerToClient).seal(&mut buf[..n], 0);
                return Some((r.id, n));
            }
        }
        while let Some(&id) = self.dirty.front() {
            let Some(e) = self.connections.get_mut(id) else {
                self.dirty.pop_front();
                continue;
            };
            if let Some(n) = e.conn.poll_transmit(now, buf) {
                self.to_candidate = e.conn.transmit_to_candidate();
                if Self::note_deadline(&mut self.deadlines, id, e) {
                    self.clean_deadlines();
                }
                return Some((id, n));
            }
            e.dirty = false;
            self.dirty.pop_front();
            while let Some(ev) = e.conn.poll_event() {
                self.events.push_back((id, ev));
            }
            if e.conn.is_drained() {
                self.retire(now, id);
            } else if Self::note_deadline(&mut self.deadlines, id, e) {
                self.clean_deadlines();
            }
        }
        None
    }

    pub fn poll_event(&mut self) -> Option<(ConnectionId, Event)> {
        self.events.pop_front()
    }

    /// Earliest deadline across connections and pending requests.
    pub fn poll_timeout(&self) -> Option<u64> {
        let conns = self.deadlines.peek().map(|Reverse((at, _))| *at);
        if self.pending.is_empty() && self.rejected.is_empty() {
            return conns;
        }
        let pend = self
            .pending
            .iter()
            .map(|(_, p)| p)
            .map(|p| p.since + self.config.pending_timeout_us);
        let rej = self.rejected.iter().map(|(_, r)| r).map(|r| r.until);
        conns.into_iter().chain(pend).chain(rej).min()
    }

    pub fn handle_timeout(&mut self, now: u64) {
        // Take every due connection first: each gets one call, even if its
        // next deadline is still at or before `now`.
        let mut due = Vec::new();
        while let Some(&Reverse((at, id))) = self.deadlines.peek() {
            if at > now {
                break;
            }
            self.deadlines.pop();
            if let Some(e) = self
                .connections
                .get_mut(id)
                .filter(|e| e.scheduled == Some(at))
            {
                e.scheduled = None;
                due.push(id);
            }
        }
        for id in due {
            self.with_conn(id, |c| c.handle_timeout(now));
        }
        // The pops above may have left a stale entry on top (`with_conn`
        // cleans only when a deadline moved).
        self.clean_deadlines();
        let expired: Vec<ConnectionId> = self
            .pending
            .iter()
            .filter(|(_, p)| p.since + self.config.pending_timeout_us <= now)
            .map(|(id, _)| id)
            .collect();
        for id in expired {
            self.reject(now, id, "connect request timed out");
        }
        self.rejected.retain(|r| r.until > now);
        // Drained connections leave in `poll_transmit`, once their events are collected.
        self.retired.retain(|&(until, _)| until > now);
    }

    /// Forget a finished connection, and refuse its ID for an idle timeout
    /// (by then its client has given up too).
    fn retire(&mut self, now: u64, id: ConnectionId) {
        let Some(e) = self.connections.remove(id) else {
            return;
        };
        self.recv_buffered -= e.recv_counted;
        if self.recv_holder == Some(id) {
            self.recv_holder = None;
        }
        // Its deadline may be the heap's top: keep the top current.
        self.clean_deadlines();
        if self.retired.len() >= 2 * self.config.max_connections {
            self.retired.pop_first();
        }
        self.retired.insert(
            id,
            (
                now + self.config.connection.idle_timeout_us,
                e.conn.keys.key,
            ),
        );
    }
}

/// Datagrams toward a relayed client (one the relay attested) that every
/// relay transport carries: Firefox's WebTransport starts at 1024 bytes,
/// and the relay drops what its browser cannot take (it never splits a
/// datagram), so larger ones would stall reliable channels.
pub const RELAYED_DATAGRAM_SIZE: usize = 1024;

/// Caps a relayed connection's datagrams at [`RELAYED_DATAGRAM_SIZE`],
/// keeping the config valid (fragment floor and handshake room).
fn relayed_datagram_size(config: &mut crate::config::Config) {
    let max = config.max_datagram_size.min(RELAYED_DATAGRAM_SIZE);
    if config.max_handshake_payload + 64 > max {
        return; // a handshake payload this large needs the configured size
    }
    config.max_datagram_size = max;
    config.min_datagram_size = config.min_datagram_size.min(max);
}

/// True if a HELLO's channel kinds are the server's declared layout, index by index.
fn same_kinds(hello: &[crate::wire::ChannelKind], layout: &[crate::config::ChannelConfig]) -> bool {
    hello.len() == layout.len() && hello.iter().zip(layout).all(|(&k, c)| k == c.kind)
}

/// The REJECT reason for a client whose channels differ: what the server has, by index
/// (REJECTs are cut to fit, so a long layout may end early).
fn layout_differs(layout: &[crate::config::ChannelConfig]) -> String {
    use crate::wire::ChannelKind::*;
    let names: Vec<&str> = layout
        .iter()
        .map(|c| match c.kind {
            ReliableOrdered => "reliable-ordered",
            ReliableUnordered => "reliable-unordered",
            UnreliableSequenced => "unreliable-sequenced",
            Unreliable => "unreliable",
        })
        .collect();
    msg!["channel layout differs: server has ", names.join(", ")]
}
