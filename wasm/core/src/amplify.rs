//! Anti-amplification (WIRE.md, "Authentication", rule 5). A HELLO's
//! source address may be spoofed and its session key is the sender's own
//! choice, so neither proves the client is where the HELLO says. Until an
//! authentic client DATA packet arrives (its tag key mixes in the nonce of
//! our WELCOME, so its sender received that WELCOME), a server sends at most
//! `AMPLIFICATION_FACTOR` times the bytes it received from the client.
//! Application data waits meanwhile; nothing is lost.

use crate::auth::{Direction, Nonce, SessionKeys};
use crate::connection::{Connection, Side, State};
use crate::error::DropReason;
use crate::timer::Timer;

/// Most bytes an unvalidated server sends per byte received (QUIC's rule).
pub const AMPLIFICATION_FACTOR: u64 = 3;

#[derive(Clone, Copy, Debug)]
pub(crate) struct AmpLimit {
    validated: bool,
    received: u64,
    sent: u64,
}

impl AmpLimit {
    /// A client trusts where its server answers from.
    pub fn validated() -> AmpLimit {
        AmpLimit {
            validated: true,
            received: 0,
            sent: 0,
        }
    }

    /// A server that has received `received` bytes (its HELLOs) so far.
    pub fn unvalidated(received: u64) -> AmpLimit {
        AmpLimit {
            validated: false,
            received,
            sent: 0,
        }
    }

    pub fn is_validated(&self) -> bool {
        self.validated
    }

    pub fn validate(&mut self) {
        self.validated = true;
    }

    pub fn on_received(&mut self, bytes: usize) {
        self.received = self.received.saturating_add(bytes as u64);
    }

    pub fn on_sent(&mut self, bytes: usize) {
        self.sent = self.sent.saturating_add(bytes as u64);
    }

    /// Bytes that may still be sent (unbounded once validated).
    pub fn allowance(&self) -> usize {
        if self.validated {
            return usize::MAX;
        }
        let cap = self
            .received
            .saturating_mul(AMPLIFICATION_FACTOR)
            .saturating_sub(self.sent);
        usize::try_from(cap).unwrap_or(usize::MAX)
    }
}

impl Connection {
    /// The server's nonce for this connection (WIRE.md, WELCOME); a client
    /// knows it once connected.
    pub fn nonce(&self) -> Nonce {
        self.nonce
    }

    /// Client, on its first WELCOME: the nonce completes our sending key.
    pub(crate) fn on_welcome_nonce(&mut self, nonce: Nonce) {
        self.nonce = nonce;
        self.keys = SessionKeys::new(self.keys.key, Direction::ClientToServer, &nonce);
        // Prove our address at once: the server holds its data back (3× what
        // we sent) until a DATA packet of ours arrives.
        self.owed.ping();
    }

    /// A DATA packet's tag verified. For a server, its key mixes in our
    /// WELCOME's nonce: the client is where it says. A connecting client
    /// whose WELCOME was lost or overtaken cannot answer without the nonce:
    /// it drops the packet and asks again.
    pub(crate) fn on_authentic_data(&mut self) -> Result<(), DropReason> {
        self.amp.validate();
        if self.state == State::Connecting {
            self.owed.hello();
            return Err(DropReason::Unexpected);
        }
        Ok(())
    }

    /// Bytes received from and sent to an unvalidated client (for tests and
    /// stats); None once validated.
    pub fn amplification_budget(&self) -> Option<usize> {
        (!self.amp.is_validated()).then(|| self.amp.allowance())
    }

    /// True once the client proved it receives at the address it claims
    /// (always true for a client).
    pub fn is_validated(&self) -> bool {
        self.amp.is_validated()
    }

    /// Part of `refresh_timers`: keepalives to a client that never proved its
    /// address would go to whoever the HELLO named (and, once the budget is
    /// spent, could not leave, so their deadline would spin the host).
    pub(crate) fn hold_timers_unvalidated(&mut self) {
        if self.side == Side::Server && !self.amp.is_validated() {
            self.timers.stop(Timer::Keepalive);
        }
    }
}
