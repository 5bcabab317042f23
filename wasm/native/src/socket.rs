//! The UDP socket both endpoints use: non-blocking, with large buffers, and
//! a bounded wait for the first datagram of a batch.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use socket2::{Domain, Protocol, Socket as RawSocket, Type};

use crate::batch::{self, RecvBatch, SendBatch};

/// Requested kernel buffer sizes, bytes. Browser bursts overflow Linux's
/// default 208 KB; the kernel caps the request at `net.core.rmem_max` /
/// `wmem_max` (raise those sysctls on servers), and `SocketStats` reports
/// what was granted.
pub const SOCKET_BUFFER_BYTES: usize = 4 << 20;

/// Largest UDP payload; the receive buffer takes any datagram whole.
pub(crate) const MAX_UDP_PAYLOAD: usize = 65_535;

/// Counters of one endpoint's socket.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SocketStats {
    pub datagrams_in: u64,
    pub bytes_in: u64,
    pub datagrams_out: u64,
    pub bytes_out: u64,
    /// Datagrams the core refused (malformed, unknown connection, duplicate,
    /// no room, unauthenticated); they never change a session.
    pub dropped_in: u64,
    /// Datagrams the OS would not send (full send buffer, unreachable peer);
    /// the protocol treats them as lost.
    pub send_errors: u64,
    /// Datagrams whose destination was unknown (no peer address yet).
    pub unroutable_out: u64,
    /// Kernel receive and send buffer sizes granted, bytes.
    pub recv_buffer_bytes: usize,
    pub send_buffer_bytes: usize,
}

pub(crate) struct Socket {
    inner: UdpSocket,
    /// The peer of a connected socket: its reads use `recv`, which copies
    /// no address out of the kernel (a bot reads 60+ times a second).
    peer: Option<SocketAddr>,
    pub(crate) stats: SocketStats,
}

/// Errors that concern one datagram or one peer, not the socket: ICMP
/// reports surfacing on the next receive, or an interrupted call.
pub(crate) fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
    )
}

pub(crate) fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

impl Socket {
    pub(crate) fn bind(addr: SocketAddr) -> io::Result<Socket> {
        let raw = RawSocket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
        // Best effort: a smaller grant still works, only with more loss.
        let _ = raw.set_recv_buffer_size(SOCKET_BUFFER_BYTES);
        let _ = raw.set_send_buffer_size(SOCKET_BUFFER_BYTES);
        raw.bind(&addr.into())?;
        raw.set_nonblocking(true)?;
        let stats = SocketStats {
            recv_buffer_bytes: raw.recv_buffer_size().unwrap_or(0),
            send_buffer_bytes: raw.send_buffer_size().unwrap_or(0),
            ..SocketStats::default()
        };
        Ok(Socket {
            inner: raw.into(),
            peer: None,
            stats,
        })
    }

    /// Client sockets talk to one server: the kernel then filters every
    /// other sender.
    pub(crate) fn connect(&mut self, addr: SocketAddr) -> io::Result<()> {
        self.inner.connect(addr)?;
        self.peer = Some(addr);
        Ok(())
    }

    /// One read: `recv` on a connected socket (the kernel filters every
    /// other sender, so the datagram is from `peer`), else `recv_from`.
    fn read(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        match self.peer {
            Some(peer) => self.inner.recv(buf).map(|n| (n, peer)),
            None => self.inner.recv_from(buf),
        }
    }

    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    /// Next datagram already queued, or None.
    pub(crate) fn try_recv(&mut self, buf: &mut [u8]) -> io::Result<Option<(usize, SocketAddr)>> {
        // Bounded: a flood of ICMP reports cannot keep us here.
        for _ in 0..64 {
            match self.read(buf) {
                Ok((n, from)) => {
                    self.stats.datagrams_in += 1;
                    self.stats.bytes_in += n as u64;
                    return Ok(Some((n, from)));
                }
                Err(e) if is_timeout(&e) => return Ok(None),
                Err(e) if is_transient(&e) => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// Waits up to `wait` for a datagram (returns at once if one is queued).
    pub(crate) fn recv(
        &mut self,
        buf: &mut [u8],
        wait: Duration,
    ) -> io::Result<Option<(usize, SocketAddr)>> {
        if let Some(d) = self.try_recv(buf)? {
            return Ok(Some(d));
        }
        if wait.is_zero() {
            return Ok(None);
        }
        self.wait_recv(buf, wait)
    }

    /// `recv`'s wait. `ppoll` sleeps on a high-resolution timer, where a
    /// receive timeout (`SO_RCVTIMEO`) counts in scheduler ticks and rounds
    /// up by one more: on a 250 Hz kernel every wait under 4 ms lasted 8,
    /// and the core's deadlines (pacing, repair, ACK delay, resends) fired
    /// that late whenever no datagram came first.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn wait_recv(
        &mut self,
        buf: &mut [u8],
        wait: Duration,
    ) -> io::Result<Option<(usize, SocketAddr)>> {
        use std::os::fd::AsRawFd;
        let mut fd = libc::pollfd {
            fd: self.inner.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // Zeroed, then set: some 32-bit targets give timespec padding fields.
        // SAFETY: timespec is plain integers; all zeros is a valid value.
        let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
        ts.tv_sec = wait.as_secs().min(i32::MAX as u64) as libc::time_t;
        ts.tv_nsec = wait.subsec_nanos() as _;
        // SAFETY: one valid pollfd, a valid timespec, no signal mask.
        let n = unsafe { libc::ppoll(&mut fd, 1, &ts, std::ptr::null()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            // A signal ends the wait early; the caller polls again.
            return if is_transient(&e) { Ok(None) } else { Err(e) };
        }
        if n == 0 {
            return Ok(None);
        }
        // Readable (an ICMP report surfaces as a read error, which
        // `try_recv` passes over).
        self.try_recv(buf)
    }

    /// Elsewhere, block on a receive timeout for this one call (std has no
    /// poll(2); the socket stays non-blocking for batch reads and sends).
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    fn wait_recv(
        &mut self,
        buf: &mut [u8],
        wait: Duration,
    ) -> io::Result<Option<(usize, SocketAddr)>> {
        self.inner.set_nonblocking(false)?;
        let waited = self
            .inner
            .set_read_timeout(Some(wait))
            .and_then(|()| self.read(buf));
        self.inner.set_nonblocking(true)?;
        match waited {
            Ok((n, from)) => {
                self.stats.datagrams_in += 1;
                self.stats.bytes_in += n as u64;
                Ok(Some((n, from)))
            }
            Err(e) if is_timeout(&e) || is_transient(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Sends one datagram (`to` = None on a connected socket). Failures are
    /// counted, never returned: to the protocol a datagram the OS refused
    /// is a lost one, and one unreachable peer must not fail the server.
    pub(crate) fn send(&mut self, datagram: &[u8], to: Option<SocketAddr>) {
        match batch::send_one(&self.inner, datagram, to) {
            Ok(()) => {
                self.stats.datagrams_out += 1;
                self.stats.bytes_out += datagram.len() as u64;
            }
            Err(_) => self.stats.send_errors += 1,
        }
    }

    /// Reads up to a batch of queued datagrams without waiting (one
    /// `recvmmsg` on Linux); 0 when none is queued.
    pub(crate) fn recv_batch(&mut self, batch: &mut RecvBatch) -> io::Result<usize> {
        let n = batch::recv_batch(&self.inner, batch)?;
        for i in 0..n {
            self.stats.datagrams_in += 1;
            self.stats.bytes_in += batch.get(i).0.len() as u64;
        }
        Ok(n)
    }

    /// Waits up to `wait` for one datagram into slot 0 of `batch` (then
    /// `recv_batch` reads the rest of a burst); returns 0 or 1.
    pub(crate) fn recv_wait(&mut self, batch: &mut RecvBatch, wait: Duration) -> io::Result<usize> {
        batch.clear();
        match self.recv(batch.slot_mut(0), wait)? {
            Some((n, from)) => {
                batch.set(0, n, from);
                Ok(1)
            }
            None => Ok(0),
        }
    }

    /// Sends every datagram of `batch` (one `sendmmsg` per batch on Linux)
    /// and empties it. Failures are counted, as in `send`.
    pub(crate) fn send_batch(&mut self, batch: &mut SendBatch) {
        let out = batch::send_batch(&self.inner, batch);
        self.stats.datagrams_out += out.sent as u64;
        self.stats.bytes_out += out.bytes as u64;
        self.stats.send_errors += out.failed as u64;
        batch.clear();
    }
}
