use tracing::debug;
use wtransport_proto::bytes::IoReadError;
use wtransport_proto::capsule::capsules;
use wtransport_proto::capsule::Capsule;
use wtransport_proto::capsule::{self};
use wtransport_proto::error::ErrorCode;
use wtransport_proto::frame::FrameKind;
use wtransport_proto::varint::VarInt;

use super::session::StreamSession;
use super::ProtoReadError;
use super::ProtoWriteError;
use wtransport_proto::frame::Frame;
use crate::driver::DriverError;
use crate::error::ApplicationClose;
use std::future::pending;

pub struct ConnectStream {
    stream: Option<StreamSession>,
}

impl ConnectStream {
    pub fn empty() -> Self {
        Self { stream: None }
    }

    pub fn is_empty(&self) -> bool {
        self.stream.is_none()
    }

    pub fn set_stream(&mut self, stream: StreamSession) {
        self.stream = Some(stream);
    }

    /// [ricochet patch] Sends CLOSE_WEBTRANSPORT_SESSION (capsule type 0x2843:
    /// a 32-bit error code, then the UTF-8 reason, at most 1024 bytes) in a DATA
    /// frame on the CONNECT stream and FINs its send side, as
    /// draft-ietf-webtrans-http3 (section "Session Termination") requires. The
    /// receive side stays open: the peer answers with its own FIN (or capsule),
    /// which [`Self::run`] turns into `ApplicationClosed`, and the driver then
    /// closes the QUIC connection. Does nothing once the peer closed the stream.
    pub async fn send_close(&mut self, error_code: u32, reason: &[u8]) -> Result<(), DriverError> {
        let Some(stream) = self.stream.as_mut() else {
            return Ok(());
        };
        let reason = &reason[..reason.len().min(1024)];
        let len = 4 + reason.len(); // < 2^14: a two-byte varint
        let mut payload = Vec::with_capacity(4 + len);
        payload.extend_from_slice(&[0x68, 0x43]); // varint 0x2843
        payload.extend_from_slice(&[0x40 | (len >> 8) as u8, len as u8]);
        payload.extend_from_slice(&error_code.to_be_bytes());
        payload.extend_from_slice(reason);
        match stream.write_frame(Frame::new_data(payload.into())).await {
            Ok(()) => {}
            Err(ProtoWriteError::NotConnected) => return Err(DriverError::NotConnected),
            // The peer stopped reading the CONNECT stream: the session is over anyway.
            Err(ProtoWriteError::Stopped) => return Ok(()),
        }
        stream.finish().await;
        Ok(())
    }

    pub async fn run(&mut self) -> DriverError {
        let stream = match self.stream.as_mut() {
            Some(stream) => stream,
            None => pending().await,
        };

        loop {
            return match stream.read_frame().await {
                Ok(frame) => {
                    if !matches!(frame.kind(), FrameKind::Data) {
                        debug!("Skipping non-data frame of kind {:?}", frame.kind());
                        continue;
                    }

                    let capsule = match Capsule::with_frame(&frame) {
                        Some(capsule)
                            if matches!(
                                capsule.kind(),
                                capsule::CapsuleKind::CloseWebTransportSession
                            ) =>
                        {
                            capsule
                        }
                        // Unknown capsule, skip it
                        _ => {
                            debug!(
                                "Unknown capsule of kind {:?} of {}B",
                                frame.kind(),
                                frame.payload().len()
                            );

                            continue;
                        }
                    };

                    let close_session =
                        match capsules::CloseWebTransportSession::with_capsule(&capsule) {
                            Ok(close_session) => close_session,
                            Err(error_code) => return DriverError::Proto(error_code),
                        };

                    // reset right away to avoid receiving additional data which requires resetting with ErrorCode::Message.
                    self.stream
                        .take()
                        .unwrap()
                        .reset(ErrorCode::NoError.to_code());

                    DriverError::ApplicationClosed(ApplicationClose::new(
                        close_session.error_code(),
                        close_session
                            .reason()
                            .as_bytes()
                            .to_vec()
                            .into_boxed_slice(),
                    ))
                }
                Err(ProtoReadError::H3(error_code)) => DriverError::Proto(error_code),
                Err(ProtoReadError::IO(io_error)) => match io_error {
                    // Cleanly terminating a CONNECT stream without a CLOSE_WEBTRANSPORT_SESSION
                    // capsule SHALL be semantically equivalent to terminating it with a
                    // CLOSE_WEBTRANSPORT_SESSION capsule that has an error code of 0 and an empty error string.
                    IoReadError::ImmediateFin => DriverError::ApplicationClosed(
                        ApplicationClose::new(VarInt::from_u32(0), Box::new([])),
                    ),
                    IoReadError::UnexpectedFin | IoReadError::Reset => {
                        DriverError::Proto(ErrorCode::ClosedCriticalStream)
                    }
                    IoReadError::NotConnected => DriverError::NotConnected,
                },
            };
        }
    }
}
