//! One connection's state machine: handshake, lifecycle, acknowledgement
//! and message delivery. Packet assembly lives in `packetizer.rs`, ACK
//! processing and loss recovery in `loss.rs` and `early_resend.rs`, the
//! timer table's upkeep in `timer.rs`, return routability in `amplify.rs`;
//! this file handles inputs, timer expiry and events. Each of those files
//! owns the state it changes (see `Connection`'s fields).

use crate::prelude::*;
use crate::ring::Ring;

use crate::ack::ReceivedPackets;
use crate::amplify::AmpLimit;
use crate::auth::{self, Direction, Nonce, SessionKey, SessionKeys, CLIENT_ENTROPY_LEN, NONCE_LEN};
use crate::config::{ChannelConfig, Config};
use crate::error::{DropReason, SendError};
use crate::event::{CloseReason, Event, MessageId};
use crate::fec::{loss_meter, FecConfig, FecState};
use crate::loss::Recovery;
use crate::outbox::Outbox;
use crate::packetizer::Owed;
use crate::path::PathState;
use crate::pn_bound::{PacketNumbers, PnRoom};
use crate::recv_budget::RecvBudget;
use crate::recv_channel::RecvChannel;
use crate::rtt::RttEstimator;
use crate::send_channel::Cut;
use crate::send_rate::SendRate;
use crate::stats::{ChannelStats, Stats};
use crate::timer::{Timer, TimerTable};
use crate::wire::{
    self, decode_frame, expand_u16, ChannelKind, Frame, Handshake, MessageIter, Reader, WireError,
};

/// Payload bytes reserved in every DATA packet for the header, an ACK frame
/// and a frame header, when sizing fragments.
pub(crate) const FRAGMENT_RESERVE: usize = wire::DATA_HEADER_LEN + 48;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Client: HELLO sent, awaiting WELCOME or REJECT.
    Connecting,
    /// Messages flow.
    Connected,
    /// Closed locally; answering stray packets with CLOSE until the drain timer.
    Closing,
    /// Finished: no more output. The host may drop the connection.
    Drained,
}

/// A sans-IO connection. See the crate docs for the run loop.
///
/// Each group of state is a struct owned by the file that changes it
/// (private fields, small methods). The fields left here belong to the
/// connection as a whole; each says who changes it.
pub struct Connection {
    /// Fixed at creation but for the commands `set_fec` (here) and
    /// `set_max_datagram_size` (`datagram_size`).
    pub(crate) config: Config,
    pub(crate) side: Side,
    /// Changed only in this file (handshake, close, drain).
    pub(crate) state: State,
    pub(crate) conn_id: u32,
    /// Session key and the tag keys derived from it; a client's sending key
    /// is completed by WELCOME's nonce (`amplify`, which alone changes both).
    pub(crate) keys: SessionKeys,
    /// The server's nonce (from WELCOME, for a client; zeros before it).
    pub(crate) nonce: Nonce,
    /// What a server may send before its client proved its address
    /// (`amplify`; the packetizer reports what it sent).
    pub(crate) amp: AmpLimit,
    /// Path validation (`path`).
    pub(crate) path: PathState,

    // Sending.
    /// HELLO, WELCOME, CLOSE, PING and probes owed (`packetizer`).
    pub(crate) owed: Owed,
    /// Messages queued and unacknowledged, by channel (`outbox`).
    pub(crate) outbox: Outbox,
    /// The next packet number and the largest acknowledged (`pn_bound`).
    pub(crate) packet_numbers: PacketNumbers,
    /// Packets in flight, retransmissions, probe backoff (`loss`).
    pub(crate) recovery: Recovery,
    /// Congestion control, delivery rate and pacing (`send_rate`).
    pub(crate) rate: SendRate,
    /// Packets below this need no early resend (`early_resend` alone).
    pub(crate) early_cursor: u64,
    /// The packet that carried the last first half of a message in halves,
    /// until its second half or the next first half leaves (`packetizer`
    /// alone).
    pub(crate) first_half_pn: Option<u64>,
    /// When the last ack-eliciting packet left (`packetizer` alone).
    pub(crate) last_eliciting_sent: u64,
    /// Ack-eliciting packets the peer has not acknowledged at once, as the
    /// sender models its receiver (`early_resend::peer_holds_ack`).
    pub(crate) peer_unacked: u32,
    /// Forward error correction, both directions (`fec`).
    pub(crate) fec: FecState,

    // Receiving.
    /// Reassembly and order per channel, within one budget: both changed
    /// only by `take_data` (`recv_budget`; a server sets the ceilings).
    pub(crate) recv: Vec<RecvChannel>,
    pub(crate) recv_budget: RecvBudget,
    /// Packets received (recorded here) and the ACK owed for them (sent by
    /// the packetizer).
    pub(crate) received: ReceivedPackets,
    /// When the peer was last heard from (this file alone).
    pub(crate) last_received: u64,
    /// Samples from ACKs (`loss`) and from a client's WELCOME (here).
    pub(crate) rtt: RttEstimator,

    // Shared by every file, each with its own part.
    /// Every deadline: each file sets and stops the timers it handles;
    /// `refresh_timers` (`timer`) recomputes the rest after every input.
    pub(crate) timers: TimerTable,
    /// Output of `poll_event`, appended where each event happens.
    pub(crate) events: Ring<Event>,
    /// Counters: each file counts what it does.
    pub(crate) stats: Stats,
}

impl Connection {
    /// Start a client connection. `entropy` must be 20 fresh bytes from OS
    /// randomness (e.g. `getrandom`, `crypto.getRandomValues`): its first 4
    /// bytes are the connection ID, the other 16 the session key that
    /// authenticates every packet, so anyone who can predict them can
    /// hijack or close the session. `handshake` travels to the server in HELLO.
    pub fn client(
        config: Config,
        now: u64,
        entropy: &[u8; CLIENT_ENTROPY_LEN],
        handshake: &[u8],
    ) -> Result<Connection, crate::ConfigError> {
        config.check_client(handshake.len())?;
        let (conn_id, key) = auth::split_entropy(entropy);
        let channels = config.channels.clone();
        // The client → server key waits for WELCOME's nonce (no DATA before it).
        let nonce = [0; NONCE_LEN];
        let keys = SessionKeys::new(key, Direction::ClientToServer, &nonce);
        let mut c = Connection::new(config, Side::Client, conn_id, keys, nonce, channels, now);
        c.owed = Owed::client(handshake.to_vec());
        c.timers
            .set(Timer::Handshake, now + c.config.handshake_timeout_us);
        Ok(c)
    }

    /// Server side, created by `Server::accept` after a valid HELLO.
    /// `nonce`: unpredictable, for WELCOME; `hello_bytes`: received so far.
    pub(crate) fn accepted(
        config: Config,
        conn_id: u32,
        key: SessionKey,
        kinds: &[ChannelKind],
        now: u64,
        nonce: Nonce,
        hello_bytes: usize,
    ) -> Connection {
        // Kinds come from HELLO; a latency target set for the same index and
        // kind in the server's config applies to what the server sends.
        let channels = kinds
            .iter()
            .enumerate()
            .map(|(i, &k)| {
                let target = config
                    .channels
                    .get(i)
                    .filter(|c| c.kind == k)
                    .map_or(0, |c| c.latency_target_us);
                ChannelConfig::new(k).with_latency_target_us(target)
            })
            .collect();
        let keys = SessionKeys::new(key, Direction::ServerToClient, &nonce);
        let mut c = Connection::new(config, Side::Server, conn_id, keys, nonce, channels, now);
        c.amp = AmpLimit::unvalidated(hello_bytes as u64);
        c.state = State::Connected;
        c.owed.welcome();
        c.events.push_back(Event::Connected);
        c
    }

    fn new(
        mut config: Config,
        side: Side,
        conn_id: u32,
        keys: SessionKeys,
        nonce: Nonce,
        channels: Vec<ChannelConfig>,
        now: u64,
    ) -> Connection {
        config.channels = channels;
        // Fixed for the connection's life: fragments in flight fit it.
        config.min_datagram_size = config.floor_datagram_size();
        let stats = Stats {
            channels: vec![ChannelStats::default(); config.channels.len()],
            ..Stats::default()
        };
        let mut c = Connection {
            side,
            state: State::Connecting,
            conn_id,
            keys,
            nonce,
            amp: AmpLimit::validated(),
            path: PathState::default(),
            owed: Owed::default(),
            outbox: Outbox::new(&config.channels),
            recv: config
                .channels
                .iter()
                .enumerate()
                .map(|(i, c)| RecvChannel::new(i as u8, c.kind))
                .collect(),
            recv_budget: RecvBudget::new(config.recv_buffer_bytes, config.max_message_size),
            recovery: Recovery::default(),
            received: ReceivedPackets::default(),
            rtt: RttEstimator::new(config.initial_rtt_us),
            rate: SendRate::new(&config),
            timers: TimerTable::default(),
            events: Ring::new(),
            stats,
            packet_numbers: PacketNumbers::default(),
            last_eliciting_sent: now,
            peer_unacked: 0,
            last_received: now,
            fec: FecState::new(config.fec, config.max_datagram_size),
            early_cursor: 0,
            first_half_pn: None,
            config,
        };
        c.refresh_timers();
        c
    }

    // ---- getters -------------------------------------------------------

    pub fn id(&self) -> u32 {
        self.conn_id
    }
    pub fn side(&self) -> Side {
        self.side
    }
    pub fn state(&self) -> State {
        self.state
    }
    pub fn is_connected(&self) -> bool {
        self.state == State::Connected
    }
    /// True once the connection has nothing more to do; the host may drop it.
    pub fn is_drained(&self) -> bool {
        self.state == State::Drained
    }
    pub fn config(&self) -> &Config {
        &self.config
    }
    /// Channels of this connection (for a server, as the client declared them).
    pub fn channels(&self) -> &[ChannelConfig] {
        &self.config.channels
    }
    /// Smoothed round-trip time, µs.
    pub fn rtt(&self) -> u64 {
        self.rtt.smoothed()
    }
    pub fn stats(&self) -> Stats {
        let mut s = self.stats.clone();
        s.rtt_us = self.rtt.smoothed();
        s.rtt_var_us = self.rtt.var();
        s.min_rtt_us = self.rtt.min();
        s.loss_in = self.received.loss_in(self.stats.fec_recovered);
        s.residual_loss_in = self.received.loss_in(0);
        s.peer_packets_expected = self.received.expected();
        (s.fec_peer_loss, s.fec_peer_burst) = self.fec.tx.reported();
        // Only ack-eliciting packets are tracked for loss; pure ACKs are not.
        s.loss_out =
            self.stats.packets_lost as f64 / self.stats.eliciting_packets_out.max(1) as f64;
        s.congestion_window = self.rate.window();
        s.bytes_in_flight = self.recovery.bytes_in_flight();
        s.send_buffer_bytes = self.outbox.buffered() as u64;
        s.recv_buffer_bytes = self.recv_budget.buffered() as u64;
        for (i, cs) in s.channels.iter_mut().enumerate() {
            let send = &self.outbox.channels()[i];
            cs.messages_sent = send.messages_sent;
            cs.messages_delivered = self.recv[i].delivered;
            cs.queued_messages = send.queued_messages();
            cs.unacked_messages = send.unacked_messages();
        }
        s
    }
    /// Which timer fires next and when (for debugging).
    pub fn next_timer(&self) -> Option<(Timer, u64)> {
        self.timers.next()
    }

    /// Bytes held out of order or in reassembly, all channels (at most
    /// `recv_buffer_bytes`).
    pub fn receive_buffered_bytes(&self) -> usize {
        self.recv_budget.buffered()
    }

    // ---- commands ------------------------------------------------------

    /// Queue a message. It is packed into datagrams by `poll_transmit`; its
    /// fate arrives later as `Event::Acked(id)` or `Event::Lost(id)`.
    pub fn send(&mut self, now: u64, channel: u8, data: Vec<u8>) -> Result<MessageId, SendError> {
        if self.state != State::Connected {
            return Err(SendError::NotConnected(data));
        }
        if channel as usize >= self.outbox.channels().len() {
            return Err(SendError::UnknownChannel(data));
        }
        if data.len() > self.config.max_message_size {
            return Err(SendError::TooLarge(data));
        }
        if self.outbox.buffered() + data.len() > self.config.send_buffer_bytes {
            return Err(SendError::BufferFull(data));
        }
        let cut = if self.several_go_whole(channel) {
            Cut::sizes(self.cut_sizes())
        } else {
            self.cut_for(channel, data.len())
        };
        let id = self.outbox.push(now, channel, data, cut, &mut self.events);
        self.refresh_after_send();
        Ok(id)
    }

    /// Change FEC settings at run time (e.g. a network panel's toggle).
    /// Takes effect from the next packet; repair already sent still helps.
    pub fn set_fec(&mut self, fec: FecConfig) -> Result<(), crate::ConfigError> {
        fec.validate().map_err(crate::ConfigError)?;
        self.config.fec = fec;
        self.fec.tx.set_config(fec);
        self.refresh_timers();
        Ok(())
    }

    /// Close with an application code and reason. Outstanding messages are
    /// reported `Lost`, then `Closed(Local)`; a CLOSE frame goes to the peer.
    pub fn close(&mut self, now: u64, code: u64, reason: &str) {
        if matches!(self.state, State::Closing | State::Drained) {
            return;
        }
        let was_connected = self.state == State::Connected;
        let mut reason = reason.to_string();
        truncate_utf8(&mut reason, self.config.max_handshake_payload);
        self.finish(CloseReason::Local {
            code,
            reason: reason.clone(),
        });
        if was_connected {
            self.state = State::Closing;
            self.owed.close(code, reason);
            let drain = 3 * self.rtt.pto_base(self.config.max_ack_delay_us);
            self.timers.set(Timer::Drain, now + drain);
        }
    }

    /// Report every outstanding message lost, emit `Closed`, stop timers.
    fn finish(&mut self, reason: CloseReason) {
        self.outbox.close(&mut self.events);
        self.recovery.clear();
        self.fec.awaiting.clear();
        self.events.push_back(Event::Closed(reason));
        self.state = State::Drained;
        self.timers.stop_all();
    }

    // ---- inputs --------------------------------------------------------

    /// Feed one received datagram. Malformed or unexpected datagrams are
    /// dropped (counted in stats) and never change connection state; the
    /// `Err` says why, for hosts that log it.
    pub fn handle_datagram(&mut self, now: u64, datagram: &[u8]) -> Result<(), DropReason> {
        let result = self.handle_inner(now, datagram);
        match result {
            Err(DropReason::Malformed) => self.stats.malformed += 1,
            Err(DropReason::Unauthenticated) => self.stats.unauthenticated += 1,
            Err(DropReason::TooFarAhead) => self.stats.too_far_ahead += 1,
            _ => {}
        }
        self.refresh_timers();
        result
    }

    fn handle_inner(&mut self, now: u64, datagram: &[u8]) -> Result<(), DropReason> {
        let (ty, id) = wire::peek_conn_id(datagram).ok_or(DropReason::Malformed)?;
        if id != self.conn_id {
            return Err(DropReason::UnknownConnection);
        }
        if self.state == State::Drained {
            return Err(DropReason::Unexpected);
        }
        if ty != wire::PACKET_DATA {
            let hs = wire::decode_handshake(datagram).map_err(|_| DropReason::Malformed)?;
            return self.on_handshake(now, hs, datagram);
        }
        // Before anything looks at the packet: only the peer may change state.
        let pn = self.authenticate(datagram)?;
        self.on_authentic_data()?;
        if self.state == State::Closing {
            self.owed.close_again();
            return Ok(());
        }
        let result = self.handle_data(now, datagram, pn, false);
        if self.fec.rx.has_pending() {
            self.rebuild_lost(now);
        }
        if let Some((first, count)) = self.fec.rx.latest_group.take() {
            // A repair that could not rebuild its group: ACK at once so the
            // sender detects the loss about one RTT after sending, not later.
            if (first..first + count as u64).any(|pn| !self.received.is_duplicate(pn)) {
                self.received.ack_now(now);
            }
        }
        result
    }

    /// Rebuild every packet that FEC repair now allows and process it as
    /// if it had arrived (the same validation applies).
    fn rebuild_lost(&mut self, now: u64) {
        // Each round consumes a pending repair, so this ends; the bound is a guard.
        for _ in 0..16 {
            if self.state != State::Connected {
                return;
            }
            let received = &self.received;
            let Some((pn, body)) = self.fec.rx.recover(|pn| received.is_duplicate(pn)) else {
                return;
            };
            let mut d = Vec::with_capacity(wire::DATA_HEADER_LEN + body.len());
            d.push(wire::PACKET_DATA);
            d.extend_from_slice(&self.conn_id.to_le_bytes());
            d.extend_from_slice(&(pn as u16).to_le_bytes());
            // No tag: the image came from authentic packets and is never resent.
            d.extend_from_slice(&[0; auth::TAG_LEN]);
            d.extend_from_slice(&body);
            if self.handle_data(now, &d, pn, true).is_ok() {
                self.stats.fec_recovered += 1;
            }
        }
    }

    /// One DATA packet, from the link or `rebuilt` by FEC. A rebuilt packet
    /// is not measured as an arrival and its REPAIR/LOSS_REPORT frames are
    /// ignored (the sender never protects packets that carry repair).
    fn handle_data(
        &mut self,
        now: u64,
        datagram: &[u8],
        pn: u64,
        rebuilt: bool,
    ) -> Result<(), DropReason> {
        if datagram.len() < wire::DATA_HEADER_LEN {
            return Err(DropReason::Malformed);
        }
        // Validate every frame before acting on any, so a corrupt tail
        // cannot leave half a packet applied.
        let body = &datagram[wire::DATA_HEADER_LEN..];
        let mut r = Reader::new(body);
        let mut eliciting = false;
        let mut carries_repair = false;
        // A fragment with more of its message to follow (`ack::on_packet`).
        let mut leads = false;
        // The first frames, kept for the second pass (most packets have
        // one or two); a packet with more is decoded again.
        let mut kept: [Option<Frame>; KEPT_FRAMES] = [const { None }; KEPT_FRAMES];
        let mut frames = 0;
        while !r.is_empty() {
            let f = decode_frame(&mut r).map_err(|_| DropReason::Malformed)?;
            eliciting |= !matches!(
                f,
                Frame::Ack { .. }
                    | Frame::Close { .. }
                    | Frame::Repair { .. }
                    | Frame::LossReport { .. }
            );
            carries_repair |= matches!(f, Frame::Repair { .. });
            if let Some(ch) = frame_channel(&f) {
                if ch as usize >= self.recv.len() {
                    return Err(DropReason::Malformed);
                }
            }
            if let Frame::Fragment { index, count, .. } = f {
                leads |= index + 1 < count;
                // More fragments than a max-size message can have: bogus.
                if count as usize
                    > self
                        .config
                        .max_message_size
                        .div_ceil(wire::MIN_FRAGMENT_BYTES)
                        + 1
                {
                    return Err(DropReason::Malformed);
                }
            }
            if let Some(k) = kept.get_mut(frames) {
                *k = Some(f);
            }
            frames += 1;
        }
        if self.received.is_duplicate(pn) {
            self.stats.duplicates += 1;
            // Re-acknowledge: our earlier ACK may have been lost.
            self.received.on_duplicate(now);
            return Err(DropReason::Duplicate);
        }
        // The peer was silent for longer than a probe timeout and is back (a
        // resumed transport, a healed path): probe at the base interval again
        // instead of waiting out a backoff grown while nothing could arrive.
        // Not when stopped at the packet-number bound: see `pn_bound`.
        if self.recovery.pto_count() > 0
            && self.pn_room() == PnRoom::Open
            && now.saturating_sub(self.last_received)
                > self.rtt.pto_base(self.config.max_ack_delay_us)
        {
            self.recovery.reset_backoff();
        }
        self.last_received = now;
        if !rebuilt {
            self.fec.meter.on_arrival(pn);
            self.stats.packets_in += 1;
            self.stats.bytes_in += datagram.len() as u64;
        }
        let mut r = Reader::new(body);
        let mut accepted = true;
        for i in 0..frames {
            let frame = match kept.get_mut(i) {
                Some(k) if frames <= KEPT_FRAMES => k.take(),
                _ => decode_frame(&mut r).ok(),
            };
            let Some(frame) = frame else {
                break;
            };
            if !self.on_frame(now, frame, pn, rebuilt) {
                accepted = false;
                break;
            }
            if self.state == State::Drained {
                return Ok(());
            }
        }
        if !accepted {
            self.stats.no_room += 1;
            return Err(DropReason::NoRoom);
        }
        self.received.insert(pn, now);
        // A rebuilt lead's rest is here already (it was rebuilt from it).
        let leads = leads && !rebuilt;
        // Nothing ack-eliciting of ours left lately: an ACK has no data to ride on.
        let quiet = now.saturating_sub(self.last_eliciting_sent) > self.config.max_ack_delay_us;
        self.received.on_packet(
            now,
            eliciting,
            self.config.ack_eliciting_threshold,
            self.config.max_ack_delay_us,
            quiet,
            leads,
        );
        if !carries_repair {
            self.fec.rx.store(now, pn, body);
        }
        Ok(())
    }

    fn on_handshake(&mut self, now: u64, hs: Handshake, datagram: &[u8]) -> Result<(), DropReason> {
        match &hs {
            // A server's replies carry a tag (number 0): a forged WELCOME or
            // REJECT must not end or open a connecting client.
            Handshake::Welcome { nonce, .. }
                if !self.keys.rx.verify(datagram, auth::welcome_number(nonce)) =>
            {
                return Err(DropReason::Unauthenticated);
            }
            Handshake::Reject { .. } if !self.keys.rx.verify(datagram, 0) => {
                return Err(DropReason::Unauthenticated)
            }
            // A HELLO under our ID with another key is someone else's.
            Handshake::Hello { key, .. } if !self.keys.same_key(key) => {
                return Err(DropReason::Unauthenticated)
            }
            _ => {}
        }
        match (self.side, hs) {
            (Side::Client, Handshake::Welcome { nonce, .. }) => {
                if self.state == State::Connecting {
                    self.on_welcome_nonce(nonce);
                    if self.owed.hello_sends() == 1 {
                        // Unambiguous sample: HELLO was sent exactly once.
                        let sent_at = self
                            .timers
                            .get(Timer::Handshake)
                            .map_or(now, |t| t - self.config.handshake_timeout_us);
                        self.rtt.update(now.saturating_sub(sent_at), 0, 0);
                    }
                    self.on_connected(now);
                }
                Ok(())
            }
            (Side::Client, Handshake::Reject { reason, .. }) => {
                if self.state != State::Connecting {
                    return Err(DropReason::Unexpected);
                }
                let reason = crate::text::lossy(reason);
                self.finish(CloseReason::Rejected { reason });
                Ok(())
            }
            (Side::Server, Handshake::Hello { .. }) => {
                // Our WELCOME was lost; say it again.
                if self.state == State::Connected {
                    self.owed.welcome();
                }
                self.amp.on_received(datagram.len());
                self.last_received = now;
                Ok(())
            }
            _ => Err(DropReason::Unexpected),
        }
    }

    fn on_connected(&mut self, now: u64) {
        self.state = State::Connected;
        self.owed.cancel_hello();
        self.timers.stop(Timer::Handshake);
        self.timers.stop(Timer::HelloResend);
        self.last_received = now;
        self.events.push_back(Event::Connected);
    }

    /// Apply one frame of packet `pn`. Returns false if reliable data found
    /// no room (the packet must then stay unacknowledged).
    fn on_frame(&mut self, now: u64, frame: Frame, pn: u64, rebuilt: bool) -> bool {
        match frame {
            Frame::Ack {
                largest,
                delay_us,
                first_range,
                ranges,
                ..
            } => {
                self.on_ack(now, largest, delay_us, first_range, ranges);
                true
            }
            Frame::Ping => true,
            Frame::PathChallenge(data) => self.on_path_frame(now, rebuilt, true, data),
            Frame::PathResponse(data) => self.on_path_frame(now, rebuilt, false, data),
            Frame::Repair {
                first_pn,
                count,
                power,
                parity,
            } => {
                let first = expand_u16(first_pn, pn);
                // Only packets before this one can be protected by it.
                if !rebuilt && first + count as u64 <= pn {
                    self.fec.rx.on_repair(now, first, count, power, parity);
                }
                true
            }
            Frame::LossReport { loss, burst } => {
                if !rebuilt {
                    self.fec.tx.on_report(
                        now,
                        loss_meter::from_wire(loss),
                        loss_meter::from_wire(burst),
                    );
                }
                true
            }
            Frame::Close { code, reason } => {
                let reason = crate::text::lossy(reason);
                self.finish(CloseReason::Peer { code, reason });
                true
            }
            Frame::Messages {
                channel,
                first_seq,
                body,
                ..
            } => MessageIter::new(body)
                .enumerate()
                .all(|(i, d)| self.take_data(channel, first_seq.wrapping_add(i as u16), None, d)),
            Frame::Fragment {
                channel,
                seq,
                index,
                count,
                data,
            } => self.take_data(channel, seq, Some((index, count)), data),
        }
    }

    /// The host moved this connection onto a new path: a new transport after
    /// the old one died, or a forced switch. Probe at once (resend the oldest
    /// unacknowledged data, or a PING; a connecting client resends HELLO)
    /// instead of waiting out a probe timeout that backed off while the old
    /// path was dead. Loss detection and retransmission then proceed as usual.
    /// (`_now` keeps the uniform `handle_*(now, …)` shape; nothing here depends on it yet.)
    pub fn handle_path_change(&mut self, _now: u64) {
        match self.state {
            State::Connecting if self.side == Side::Client => self.owed.hello(),
            State::Connected => {
                self.on_probe_timeout();
                self.recovery.reset_backoff();
            }
            _ => return,
        }
        self.refresh_timers();
    }

    /// Call when `poll_timeout`'s deadline has passed.
    pub fn handle_timeout(&mut self, now: u64) {
        if self.timers.expire(Timer::Drain, now) {
            self.state = State::Drained;
            self.timers.stop_all();
            return;
        }
        if self.timers.expire(Timer::Handshake, now) {
            self.finish(CloseReason::HandshakeTimeout);
            return;
        }
        if self.timers.expire(Timer::Idle, now) {
            self.finish(CloseReason::IdleTimeout);
            return;
        }
        if self.timers.expire(Timer::HelloResend, now) {
            self.owed.hello();
        }
        if self.timers.expire(Timer::LossDetection, now) {
            self.detect_lost(now);
        }
        if self.timers.expire(Timer::Probe, now) {
            self.on_probe_timeout();
        }
        if self.timers.expire(Timer::EarlyResend, now) {
            self.on_early_resend_timeout(now);
        }
        if self.timers.expire(Timer::Keepalive, now) {
            self.owed.ping();
        }
        if self.timers.expire(Timer::Repair, now) {
            self.fec.tx.on_timeout(now);
        }
        if self.timers.expire(Timer::PathChallenge, now) {
            self.on_path_timeout(now);
        }
        if self.timers.expire(Timer::Pacing, now) {
            self.rate.on_pacing_timeout();
        }
        self.timers.expire(Timer::Ack, now);
        self.refresh_timers();
    }

    /// Earliest time `handle_timeout` must be called; None = no timer.
    /// Must be asked again after every input, command or poll.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.timers.earliest()
    }

    /// Next event; drain until None after every input or command.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}

/// Frames of a packet `handle_data` keeps from its checking pass.
const KEPT_FRAMES: usize = 4;

fn frame_channel(f: &Frame) -> Option<u8> {
    match f {
        Frame::Messages { channel, .. } | Frame::Fragment { channel, .. } => Some(*channel),
        _ => None,
    }
}

fn truncate_utf8(s: &mut String, max: usize) {
    if s.len() > max {
        let mut cut = max;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
}

impl From<WireError> for DropReason {
    fn from(_: WireError) -> Self {
        DropReason::Malformed
    }
}
