//! Errors of commands. Network trouble is never an `Err`: it arrives as
//! `Event::Closed`. A refused message is handed back inside the error.

use crate::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SendError {
    /// The send buffer cannot take this message now; retry after acks drain it.
    BufferFull(Vec<u8>),
    /// Larger than `max_message_size`.
    TooLarge(Vec<u8>),
    /// No such channel index.
    UnknownChannel(Vec<u8>),
    /// The connection is not established (still connecting, or closed).
    NotConnected(Vec<u8>),
}

impl SendError {
    /// Stable code string (see the SDK error table).
    pub fn code(&self) -> &'static str {
        match self {
            SendError::BufferFull(_) => "RICOCHET_ERR_SEND_BUFFER_FULL",
            SendError::TooLarge(_) => "RICOCHET_ERR_MESSAGE_TOO_LARGE",
            SendError::UnknownChannel(_) => "RICOCHET_ERR_UNKNOWN_CHANNEL",
            SendError::NotConnected(_) => "RICOCHET_ERR_NOT_CONNECTED",
        }
    }
    /// The message, handed back.
    pub fn into_message(self) -> Vec<u8> {
        match self {
            SendError::BufferFull(m)
            | SendError::TooLarge(m)
            | SendError::UnknownChannel(m)
            | SendError::NotConnected(m) => m,
        }
    }
}

impl core::fmt::Display for SendError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let what = match self {
            SendError::BufferFull(_) => "send buffer full",
            SendError::TooLarge(_) => "message larger than max_message_size",
            SendError::UnknownChannel(_) => "unknown channel",
            SendError::NotConnected(_) => "connection not established",
        };
        write!(f, "{} ({})", what, self.code())
    }
}

impl core::error::Error for SendError {}

/// Why a received datagram was dropped (it never changes connection state).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    Malformed,
    UnknownConnection,
    Duplicate,
    /// Would exceed the receive buffer or reliable window; left unacknowledged.
    NoRoom,
    /// Arrived in a state that does not accept it (e.g. data before welcome).
    Unexpected,
    /// Its tag does not verify, or a HELLO carries another session key: not
    /// from this session's peer (a blind attacker who learned the ID).
    Unauthenticated,
    /// Authentic, but its packet number is too far ahead of the largest
    /// received (see `MAX_PACKET_NUMBER_JUMP`).
    TooFarAhead,
}
