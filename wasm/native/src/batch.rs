//! Datagram batches: many datagrams per system call. On Linux one
//! `recvmmsg` reads a burst and one `sendmmsg` sends a tick's output (the
//! kernel still does its per-datagram work, but the per-call cost of a
//! syscall, a file lookup and the address copies is paid once per batch);
//! elsewhere the same API loops over `recv_from`/`send_to`.

use std::io;
use std::net::{SocketAddr, UdpSocket};

use crate::socket::{is_timeout, is_transient, MAX_UDP_PAYLOAD};

/// Most datagrams one call moves (the stack arrays below are sized by it).
pub(crate) const MAX_BATCH_SLOTS: usize = 64;

/// Datagrams read by one call. Every slot takes any UDP payload whole; the
/// memory is allocated once and only the pages a datagram lands on are
/// ever touched.
pub(crate) struct RecvBatch {
    bufs: Vec<u8>,
    lens: Vec<usize>,
    addrs: Vec<SocketAddr>,
    len: usize,
}

impl RecvBatch {
    pub(crate) fn new(slots: usize) -> RecvBatch {
        let slots = slots.clamp(1, MAX_BATCH_SLOTS);
        let unspecified = SocketAddr::from(([0, 0, 0, 0], 0));
        RecvBatch {
            bufs: vec![0; slots * MAX_UDP_PAYLOAD],
            lens: vec![0; slots],
            addrs: vec![unspecified; slots],
            len: 0,
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.lens.len()
    }

    /// Datagrams the last read returned.
    #[cfg_attr(any(target_os = "linux", target_os = "android"), allow(dead_code))]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The `i`th datagram of the last read and its sender.
    pub(crate) fn get(&self, i: usize) -> (&[u8], SocketAddr) {
        let start = i * MAX_UDP_PAYLOAD;
        (&self.bufs[start..start + self.lens[i]], self.addrs[i])
    }

    /// Slot `i`'s whole buffer, to read one datagram into.
    pub(crate) fn slot_mut(&mut self, i: usize) -> &mut [u8] {
        let start = i * MAX_UDP_PAYLOAD;
        &mut self.bufs[start..start + MAX_UDP_PAYLOAD]
    }

    /// Records that slot `i` holds `n` bytes from `from`; the batch then
    /// holds slots 0..=i.
    pub(crate) fn set(&mut self, i: usize, n: usize, from: SocketAddr) {
        self.lens[i] = n.min(MAX_UDP_PAYLOAD);
        self.addrs[i] = from;
        self.len = i + 1;
    }

    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }
}

/// Datagrams waiting to leave in one call. `next_buf` hands out the next
/// slot for the core to write a datagram into, `push` keeps it.
pub(crate) struct SendBatch {
    bufs: Vec<u8>,
    slot_size: usize,
    lens: Vec<usize>,
    /// None: the connected socket's peer.
    addrs: Vec<Option<SocketAddr>>,
}

impl SendBatch {
    pub(crate) fn new(slots: usize, slot_size: usize) -> SendBatch {
        let slots = slots.clamp(1, MAX_BATCH_SLOTS);
        SendBatch {
            bufs: vec![0; slots * slot_size],
            slot_size,
            lens: Vec::with_capacity(slots),
            addrs: Vec::with_capacity(slots),
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.bufs.len() / self.slot_size
    }

    pub(crate) fn len(&self) -> usize {
        self.lens.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.lens.is_empty()
    }

    pub(crate) fn is_full(&self) -> bool {
        self.len() >= self.capacity()
    }

    /// The free slot the next datagram goes into. Call only when not full.
    pub(crate) fn next_buf(&mut self) -> &mut [u8] {
        let start = self.len() * self.slot_size;
        &mut self.bufs[start..start + self.slot_size]
    }

    /// Keeps the first `n` bytes written into `next_buf` as a datagram to `to`.
    pub(crate) fn push(&mut self, n: usize, to: Option<SocketAddr>) {
        debug_assert!(!self.is_full());
        self.lens.push(n.min(self.slot_size));
        self.addrs.push(to);
    }

    pub(crate) fn get(&self, i: usize) -> (&[u8], Option<SocketAddr>) {
        let start = i * self.slot_size;
        (&self.bufs[start..start + self.lens[i]], self.addrs[i])
    }

    pub(crate) fn clear(&mut self) {
        self.lens.clear();
        self.addrs.clear();
    }
}

/// Outcome of sending a batch: how many left, how many the OS refused.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct SendOutcome {
    pub(crate) sent: usize,
    pub(crate) bytes: usize,
    pub(crate) failed: usize,
}

#[cfg(any(target_os = "linux", target_os = "android"))]
mod sys {
    use std::io;
    use std::mem::{self, MaybeUninit};
    use std::net::{SocketAddr, UdpSocket};
    use std::os::fd::AsRawFd;

    use socket2::{SockAddr, SockAddrStorage};

    use super::{is_timeout, is_transient, RecvBatch, SendBatch, SendOutcome, MAX_BATCH_SLOTS};
    use crate::socket::MAX_UDP_PAYLOAD;

    /// One `recvmmsg` without waiting; 0 when nothing is queued.
    pub(super) fn recv(socket: &UdpSocket, batch: &mut RecvBatch) -> io::Result<usize> {
        batch.clear();
        let slots = batch.capacity();
        // Only the slots in use are initialised: this runs once per poll of
        // every client, so zeroing whole arrays would cost more than the call.
        let mut names =
            [const { MaybeUninit::<libc::sockaddr_storage>::uninit() }; MAX_BATCH_SLOTS];
        let mut iovs = [const { MaybeUninit::<libc::iovec>::uninit() }; MAX_BATCH_SLOTS];
        let mut hdrs = [const { MaybeUninit::<libc::mmsghdr>::uninit() }; MAX_BATCH_SLOTS];
        let base = batch.bufs.as_mut_ptr();
        for i in 0..slots {
            // SAFETY: slot i lies inside `bufs` (slots * MAX_UDP_PAYLOAD bytes).
            let iov = iovs[i].write(libc::iovec {
                iov_base: unsafe { base.add(i * MAX_UDP_PAYLOAD) }.cast(),
                iov_len: MAX_UDP_PAYLOAD,
            });
            // SAFETY: all-zero is a valid mmsghdr; the fields that matter are set below.
            let h = hdrs[i].write(unsafe { mem::zeroed() });
            h.msg_hdr.msg_name = names[i].as_mut_ptr().cast();
            h.msg_hdr.msg_namelen = mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            h.msg_hdr.msg_iov = iov;
            h.msg_hdr.msg_iovlen = 1;
        }
        let hdrs_ptr = hdrs.as_mut_ptr().cast::<libc::mmsghdr>();
        // Bounded: a flood of ICMP reports cannot keep us here.
        for _ in 0..64 {
            // SAFETY: every header points at live buffers of the lengths given,
            // all of which outlive the call.
            let n = unsafe {
                libc::recvmmsg(
                    socket.as_raw_fd(),
                    hdrs_ptr,
                    slots as _,
                    libc::MSG_DONTWAIT,
                    std::ptr::null_mut(),
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if is_timeout(&e) {
                    return Ok(0);
                }
                if is_transient(&e) {
                    continue;
                }
                return Err(e);
            }
            let n = n as usize;
            for i in 0..n {
                // SAFETY: headers 0..slots were initialised above.
                let h = unsafe { hdrs[i].assume_init_ref() };
                let namelen =
                    (h.msg_hdr.msg_namelen as usize).min(mem::size_of::<libc::sockaddr_storage>());
                let mut storage = SockAddrStorage::zeroed();
                // SAFETY: SockAddrStorage wraps a sockaddr_storage; the kernel
                // wrote `namelen` bytes of a socket address into names[i].
                let addr = unsafe {
                    std::ptr::copy_nonoverlapping(
                        names[i].as_ptr().cast::<u8>(),
                        (storage.view_as::<libc::sockaddr_storage>()
                            as *mut libc::sockaddr_storage)
                            .cast::<u8>(),
                        namelen,
                    );
                    SockAddr::new(storage, namelen as libc::socklen_t)
                };
                // A datagram from a non-IP sender cannot happen on a UDP
                // socket; keep the slot, with an unspecified address.
                let from = addr
                    .as_socket()
                    .unwrap_or(SocketAddr::from(([0, 0, 0, 0], 0)));
                batch.set(i, h.msg_len as usize, from);
            }
            return Ok(n);
        }
        Ok(0)
    }

    /// `sendmmsg` until every datagram has been handed to the kernel or
    /// refused; a refused one is counted and skipped, as a lost datagram.
    pub(super) fn send(socket: &UdpSocket, batch: &SendBatch) -> SendOutcome {
        let count = batch.len();
        let mut out = SendOutcome::default();
        if count == 1 {
            // One datagram: plain sendto is cheaper than the msghdr path.
            let (data, to) = batch.get(0);
            match super::send_one(socket, data, to) {
                Ok(()) => (out.sent, out.bytes) = (1, data.len()),
                Err(_) => out.failed = 1,
            }
            return out;
        }
        if count == 0 {
            return out;
        }
        // On the stack: clients send a datagram or two per poll.
        let mut addrs = [const { MaybeUninit::<SockAddr>::uninit() }; MAX_BATCH_SLOTS];
        let mut iovs = [const { MaybeUninit::<libc::iovec>::uninit() }; MAX_BATCH_SLOTS];
        let mut hdrs = [const { MaybeUninit::<libc::mmsghdr>::uninit() }; MAX_BATCH_SLOTS];
        for i in 0..count {
            let (data, to) = batch.get(i);
            let iov = iovs[i].write(libc::iovec {
                iov_base: data.as_ptr() as *mut libc::c_void,
                iov_len: data.len(),
            });
            // SAFETY: all-zero is a valid mmsghdr; the fields that matter are set below.
            let h = &mut hdrs[i].write(unsafe { mem::zeroed() }).msg_hdr;
            if let Some(to) = to {
                let a = addrs[i].write(SockAddr::from(to));
                h.msg_name = a.as_ptr() as *mut libc::c_void;
                h.msg_namelen = a.len();
            }
            h.msg_iov = iov;
            h.msg_iovlen = 1;
        }
        let hdrs_ptr = hdrs.as_mut_ptr().cast::<libc::mmsghdr>();
        let mut next = 0;
        let mut interrupted = 0;
        while next < count {
            // SAFETY: headers next..count point at live datagrams and
            // addresses that outlive the call.
            let n = unsafe {
                libc::sendmmsg(
                    socket.as_raw_fd(),
                    hdrs_ptr.add(next),
                    (count - next) as _,
                    0,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted && interrupted < 2 {
                    interrupted += 1;
                    continue;
                }
                // The datagram at `next` was refused (full buffer, unreachable
                // peer): count it as lost and go on with the rest.
                out.failed += 1;
                next += 1;
                continue;
            }
            if n == 0 {
                // Never seen for a non-empty batch; stop rather than spin.
                out.failed += count - next;
                break;
            }
            for i in next..next + n as usize {
                out.sent += 1;
                out.bytes += batch.get(i).0.len();
            }
            next += n as usize;
        }
        out
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
mod sys {
    use std::io;
    use std::net::UdpSocket;

    use super::{is_timeout, is_transient, RecvBatch, SendBatch, SendOutcome};

    /// No `recvmmsg` here: one `recv_from` per datagram, up to the batch.
    pub(super) fn recv(socket: &UdpSocket, batch: &mut RecvBatch) -> io::Result<usize> {
        batch.clear();
        let mut transient = 0;
        while batch.len() < batch.capacity() {
            let i = batch.len();
            match socket.recv_from(batch.slot_mut(i)) {
                Ok((n, from)) => batch.set(i, n, from),
                Err(e) if is_timeout(&e) => break,
                Err(e) if is_transient(&e) && transient < 64 => transient += 1,
                Err(e) if is_transient(&e) => break,
                Err(e) => {
                    return if batch.len() > 0 {
                        Ok(batch.len())
                    } else {
                        Err(e)
                    }
                }
            }
        }
        Ok(batch.len())
    }

    pub(super) fn send(socket: &UdpSocket, batch: &SendBatch) -> SendOutcome {
        let mut out = SendOutcome::default();
        for i in 0..batch.len() {
            let (data, to) = batch.get(i);
            match super::send_one(socket, data, to) {
                Ok(()) => {
                    out.sent += 1;
                    out.bytes += data.len();
                }
                Err(_) => out.failed += 1,
            }
        }
        out
    }
}

/// Sends one datagram (`to` = None on a connected socket), once more if
/// a signal interrupted the call.
pub(crate) fn send_one(
    socket: &UdpSocket,
    datagram: &[u8],
    to: Option<SocketAddr>,
) -> io::Result<()> {
    let once = || match to {
        Some(addr) => socket.send_to(datagram, addr),
        None => socket.send(datagram),
    };
    let mut r = once();
    if r.as_ref()
        .is_err_and(|e| e.kind() == io::ErrorKind::Interrupted)
    {
        r = once();
    }
    r.map(drop)
}

/// Reads what is queued, up to the batch's capacity, without waiting.
pub(crate) fn recv_batch(socket: &UdpSocket, batch: &mut RecvBatch) -> io::Result<usize> {
    sys::recv(socket, batch)
}

/// Sends every datagram of the batch (refusals counted, never returned).
pub(crate) fn send_batch(socket: &UdpSocket, batch: &SendBatch) -> SendOutcome {
    sys::send(socket, batch)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound() -> UdpSocket {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.set_nonblocking(true).unwrap();
        s
    }

    fn queue(batch: &mut SendBatch, data: &[u8], to: Option<SocketAddr>) {
        batch.next_buf()[..data.len()].copy_from_slice(data);
        batch.push(data.len(), to);
    }

    // Loopback delivery is done inside sendto, so what was sent is queued
    // at the receiver when the call returns: no waiting needed.

    #[test]
    fn a_burst_is_read_in_one_call_with_contents_and_senders_intact() {
        let (rx, a, b) = (bound(), bound(), bound());
        let to = rx.local_addr().unwrap();
        for i in 0..10u8 {
            let from = if i % 2 == 0 { &a } else { &b };
            from.send_to(&[i; 100], to).unwrap();
        }
        let mut batch = RecvBatch::new(16);
        assert_eq!(recv_batch(&rx, &mut batch).unwrap(), 10);
        assert_eq!(batch.len(), 10);
        for i in 0..10u8 {
            let (data, from) = batch.get(i as usize);
            assert_eq!(data, &[i; 100][..]);
            let sender = if i % 2 == 0 { &a } else { &b };
            assert_eq!(from, sender.local_addr().unwrap());
        }
    }

    #[test]
    fn a_read_stops_at_the_batch_capacity_and_the_next_read_gets_the_rest() {
        let (rx, tx) = (bound(), bound());
        for i in 0..6u8 {
            tx.send_to(&[i], rx.local_addr().unwrap()).unwrap();
        }
        let mut batch = RecvBatch::new(4);
        assert_eq!(recv_batch(&rx, &mut batch).unwrap(), 4);
        assert_eq!(recv_batch(&rx, &mut batch).unwrap(), 2);
        assert_eq!(batch.get(1).0, &[5]);
    }

    #[test]
    fn reading_an_empty_socket_returns_nothing_without_waiting() {
        let rx = bound();
        let mut batch = RecvBatch::new(8);
        assert_eq!(recv_batch(&rx, &mut batch).unwrap(), 0);
        assert_eq!(batch.len(), 0);
    }

    #[test]
    fn a_datagram_near_the_udp_maximum_arrives_whole() {
        let (rx, tx) = (bound(), bound());
        let big: Vec<u8> = (0..60_000u32).map(|i| i as u8).collect();
        let mut out = SendBatch::new(2, 60_000);
        queue(&mut out, &big, Some(rx.local_addr().unwrap()));
        queue(&mut out, b"small", Some(rx.local_addr().unwrap()));
        assert_eq!(
            send_batch(&tx, &out),
            SendOutcome {
                sent: 2,
                bytes: 60_005,
                failed: 0
            }
        );
        let mut batch = RecvBatch::new(4);
        assert_eq!(recv_batch(&rx, &mut batch).unwrap(), 2);
        assert_eq!(batch.get(0).0, &big[..]);
        assert_eq!(batch.get(1).0, b"small");
    }

    #[test]
    fn one_send_call_delivers_each_datagram_to_its_own_destination() {
        let (tx, r1, r2) = (bound(), bound(), bound());
        let mut out = SendBatch::new(8, 1200);
        for i in 0..8u8 {
            let to = if i < 5 { &r1 } else { &r2 };
            queue(&mut out, &[i; 10], Some(to.local_addr().unwrap()));
        }
        assert!(out.is_full());
        assert_eq!(
            send_batch(&tx, &out),
            SendOutcome {
                sent: 8,
                bytes: 80,
                failed: 0
            }
        );
        let mut batch = RecvBatch::new(16);
        assert_eq!(recv_batch(&r1, &mut batch).unwrap(), 5);
        assert_eq!(batch.get(4).0, &[4; 10]);
        assert_eq!(recv_batch(&r2, &mut batch).unwrap(), 3);
        assert_eq!(batch.get(0), (&[5u8; 10][..], tx.local_addr().unwrap()));
    }

    #[test]
    fn a_refused_datagram_is_counted_and_the_rest_of_the_batch_still_leaves() {
        let (tx, rx) = (bound(), bound());
        let to = rx.local_addr().unwrap();
        let mut out = SendBatch::new(4, 1200);
        queue(&mut out, b"first", Some(to));
        // An IPv6 destination on an IPv4 socket: the OS refuses this one.
        queue(&mut out, b"refused", Some("[::1]:9".parse().unwrap()));
        queue(&mut out, b"third", Some(to));
        assert_eq!(
            send_batch(&tx, &out),
            SendOutcome {
                sent: 2,
                bytes: 10,
                failed: 1
            }
        );
        let mut batch = RecvBatch::new(4);
        assert_eq!(recv_batch(&rx, &mut batch).unwrap(), 2);
        assert_eq!(
            (batch.get(0).0, batch.get(1).0),
            (&b"first"[..], &b"third"[..])
        );
    }

    #[test]
    fn a_connected_socket_sends_a_batch_without_addresses() {
        let (tx, rx) = (bound(), bound());
        tx.connect(rx.local_addr().unwrap()).unwrap();
        let mut out = SendBatch::new(4, 1200);
        queue(&mut out, b"a", None);
        queue(&mut out, b"b", None);
        assert_eq!(send_batch(&tx, &out).sent, 2);
        let mut batch = RecvBatch::new(4);
        assert_eq!(recv_batch(&rx, &mut batch).unwrap(), 2);
    }

    #[test]
    fn a_cleared_send_batch_is_empty_and_reusable() {
        let mut out = SendBatch::new(2, 1200);
        queue(&mut out, b"x", None);
        queue(&mut out, b"y", None);
        assert!(out.is_full());
        out.clear();
        assert!(out.is_empty());
        queue(&mut out, b"z", None);
        assert_eq!(out.get(0), (&b"z"[..], None));
    }
}
