//! Path validation (WIRE.md, "Path validation"). Sessions are found by
//! connection ID, so only the host sees that an authentic datagram came
//! from a new address, and the session's own key holder can send one with
//! any source address it likes. So a validated connection does not follow
//! it: the host keeps sending to the old address and holds the new one as a
//! candidate (`Server::path_changed`); the server sends the candidate only
//! PATH_CHALLENGEs with 8 unpredictable bytes, within 3× what came from
//! there. A PATH_RESPONSE echoing them proves a peer receives there; then
//! the host moves the session (`PathEvent::Validated`).

use crate::amplify::AmpLimit;
use crate::auth::ct_eq;
use crate::connection::{Connection, Side, State};
use crate::timer::Timer;
use crate::wire::{self, Writer, PATH_DATA_LEN};

/// Challenges sent before a candidate is given up.
pub const MAX_PATH_CHALLENGES: u8 = 3;

/// What became of a candidate address (`Server::poll_path_event`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathEvent {
    /// A PATH_RESPONSE came back: the session moves to the candidate.
    Validated,
    /// No response to `MAX_PATH_CHALLENGES` challenges: forget the candidate.
    Abandoned,
}

/// A connection's part in path validation. Only this file changes it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PathState {
    /// Server: the candidate address being challenged.
    check: Option<PathCheck>,
    event: Option<PathEvent>,
    /// Client: a PATH_RESPONSE owed.
    response: Option<[u8; PATH_DATA_LEN]>,
    /// The last datagram transmitted goes to the candidate address.
    to_candidate: bool,
}

impl PathState {
    /// A new `poll_transmit`: its datagram goes to the current address
    /// unless it turns out to be a challenge.
    pub fn start_transmit(&mut self) {
        self.to_candidate = false;
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct PathCheck {
    challenge: [u8; PATH_DATA_LEN],
    /// What may be sent to the candidate: 3× what came from it.
    amp: AmpLimit,
    due: bool,
    timeouts: u8,
}

impl Connection {
    /// Server: an authentic datagram of `len` bytes came from a new address.
    /// False if the connection is not validated yet (its own limit already
    /// covers any address: the host may simply move) or not connected.
    pub(crate) fn start_path_check(
        &mut self,
        now: u64,
        challenge: [u8; PATH_DATA_LEN],
        len: usize,
    ) -> bool {
        if self.side != Side::Server || self.state != State::Connected || !self.amp.is_validated() {
            return false;
        }
        let mut amp = AmpLimit::unvalidated(0);
        amp.on_received(len);
        self.path.check = Some(PathCheck {
            challenge,
            amp,
            due: true,
            timeouts: 0,
        });
        self.timers
            .set(Timer::PathChallenge, now + self.path_interval());
        true
    }

    /// Server: another authentic datagram from the candidate.
    pub(crate) fn on_candidate_datagram(&mut self, len: usize) {
        if let Some(p) = &mut self.path.check {
            p.amp.on_received(len);
        }
    }

    /// True while a candidate address is being challenged.
    pub fn path_pending(&self) -> bool {
        self.path.check.is_some()
    }

    /// True if the datagram the last `poll_transmit` returned goes to the
    /// candidate address (a PATH_CHALLENGE), not the current one.
    pub fn transmit_to_candidate(&self) -> bool {
        self.path.to_candidate
    }

    pub(crate) fn take_path_event(&mut self) -> Option<PathEvent> {
        self.path.event.take()
    }

    fn path_interval(&self) -> u64 {
        2 * self.rtt.pto_base(self.config.max_ack_delay_us)
    }

    /// A DATA packet with a PATH_CHALLENGE for the candidate, if one is due
    /// and fits what the candidate may be sent. Not tracked for loss or
    /// congestion: the path timer repeats it.
    pub(crate) fn transmit_challenge(&mut self, buf: &mut [u8]) -> Option<usize> {
        let p = self.path.check.as_ref().filter(|p| p.due)?;
        let max = buf
            .len()
            .min(self.config.max_datagram_size)
            .min(p.amp.allowance());
        let challenge = p.challenge;
        if max < wire::DATA_HEADER_LEN + 1 + PATH_DATA_LEN || !self.may_send(true) {
            return None;
        }
        let pn = self.packet_numbers.next();
        let mut w = Writer::new(&mut buf[..max]);
        if !(wire::encode_data_header(&mut w, self.conn_id, pn)
            && wire::encode_path_frame(&mut w, wire::FRAME_PATH_CHALLENGE, &challenge))
        {
            return None;
        }
        let n = w.len();
        self.keys.tx.seal(&mut buf[..n], pn);
        self.packet_numbers.advance();
        if let Some(p) = &mut self.path.check {
            p.due = false;
            p.amp.on_sent(n);
        }
        self.path.to_candidate = true;
        self.stats.packets_out += 1;
        self.stats.bytes_out += n as u64;
        self.stats.overhead_bytes_out += n as u64;
        Some(n)
    }

    /// `handle_timeout`: challenge again, or give the candidate up.
    pub(crate) fn on_path_timeout(&mut self, now: u64) {
        let interval = self.path_interval();
        let Some(p) = &mut self.path.check else {
            return;
        };
        p.timeouts += 1;
        if p.timeouts >= MAX_PATH_CHALLENGES {
            self.path.check = None;
            self.path.event = Some(PathEvent::Abandoned);
            return;
        }
        p.due = true;
        self.timers.set(Timer::PathChallenge, now + interval);
    }

    /// A PATH_CHALLENGE (client: answer it) or PATH_RESPONSE (server: does
    /// it echo ours?) in an authentic packet. Inside a `rebuilt` one it is
    /// stale: ignored (the path timer repeats challenges). Always true (the
    /// frame is processed).
    pub(crate) fn on_path_frame(
        &mut self,
        now: u64,
        rebuilt: bool,
        challenge: bool,
        data: [u8; PATH_DATA_LEN],
    ) -> bool {
        match (self.side, challenge) {
            _ if rebuilt => {}
            (Side::Client, true) => self.path.response = Some(data),
            (Side::Server, false)
                if self.path.check.is_some_and(|p| ct_eq(&p.challenge, &data)) =>
            {
                self.path.check = None;
                self.timers.stop(Timer::PathChallenge);
                self.path.event = Some(PathEvent::Validated);
                // The session moves there now: probe at once rather than
                // wait out a backoff grown toward the old address.
                self.handle_path_change(now);
            }
            _ => {}
        }
        true
    }

    /// A PATH_RESPONSE is owed (the next packet carries it).
    pub(crate) fn path_response_owed(&self) -> bool {
        self.path.response.is_some()
    }

    /// Client, in `transmit_data`: the PATH_RESPONSE owed, if it fits.
    /// True if written (it elicits an acknowledgement).
    pub(crate) fn write_path_response(&mut self, w: &mut Writer) -> bool {
        let Some(data) = self.path.response else {
            return false;
        };
        let ok = wire::encode_path_frame(w, wire::FRAME_PATH_RESPONSE, &data);
        if ok {
            self.path.response = None;
        }
        ok
    }
}
