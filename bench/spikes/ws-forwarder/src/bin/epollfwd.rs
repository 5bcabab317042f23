// Design 2: single-threaded raw-epoll WebSocket <-> UDP forwarder with hand-written RFC 6455 framing.
// Each WS connection gets its own connected UDP socket to the backend.
// Usage: epollfwd LISTEN_PORT BACKEND_PORT [mode]
//   mode: (default) sendmmsg/recvmmsg + one write per client per epoll turn
//         nommsg    : send()/recv() one datagram per syscall
//         flushall  : write to TCP immediately after each UDP drain (no end-of-turn coalescing)
use std::sync::atomic::{AtomicBool, Ordering};
static STOP: AtomicBool = AtomicBool::new(false);
extern "C" fn on_term(_: libc::c_int) { STOP.store(true, Ordering::Relaxed); }
use std::io::{self};
use std::os::fd::RawFd;

const LISTEN_TOK: u64 = u64::MAX;
const RB: usize = 64; // recvmmsg batch
const DGRAM_MAX: usize = 2048;

#[derive(PartialEq)]
enum St { Handshake, Open, Closing }

struct Conn {
    tcp: RawFd,
    udp: RawFd,
    st: St,
    inb: Vec<u8>,
    ilen: usize,
    out: Vec<u8>,
    out_off: usize,
    want_out: bool, // EPOLLOUT registered
    dirty: bool,
}

struct Stats { tcp_reads: u64, tcp_writes: u64, udp_send_calls: u64, udp_sent: u64, udp_recv_calls: u64, udp_recvd: u64, drops: u64 }

fn cvt(r: isize) -> io::Result<isize> { if r < 0 { Err(io::Error::last_os_error()) } else { Ok(r) } }

unsafe fn ep_ctl(ep: RawFd, op: i32, fd: RawFd, ev: u32, tok: u64) {
    let mut e = libc::epoll_event { events: ev, u64: tok };
    unsafe { libc::epoll_ctl(ep, op, fd, &mut e); }
}

fn sockaddr(port: u16) -> libc::sockaddr_in {
    let mut a: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    a.sin_family = libc::AF_INET as u16;
    a.sin_port = port.to_be();
    a.sin_addr.s_addr = u32::from_ne_bytes([127, 0, 0, 1]);
    a
}

fn frame_into(out: &mut Vec<u8>, opcode: u8, payload: &[u8]) {
    let n = payload.len();
    out.push(0x80 | opcode);
    if n < 126 { out.push(n as u8); }
    else if n < 65536 { out.push(126); out.extend_from_slice(&(n as u16).to_be_bytes()); }
    else { out.push(127); out.extend_from_slice(&(n as u64).to_be_bytes()); }
    out.extend_from_slice(payload);
}

fn unmask(p: &mut [u8], key: [u8; 4]) {
    let k8 = u64::from_ne_bytes([key[0], key[1], key[2], key[3], key[0], key[1], key[2], key[3]]);
    let mut chunks = p.chunks_exact_mut(8);
    for c in &mut chunks {
        let v = u64::from_ne_bytes(c.try_into().unwrap()) ^ k8;
        c.copy_from_slice(&v.to_ne_bytes());
    }
    let rem = chunks.into_remainder();
    for (i, b) in rem.iter_mut().enumerate() { *b ^= key[i & 3]; }
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let port: u16 = a.get(1).map(|s| s.parse().unwrap()).unwrap_or(9003);
    let backend: u16 = a.get(2).map(|s| s.parse().unwrap()).unwrap_or(9100);
    let mode = a.get(3).cloned().unwrap_or_default();
    let use_mmsg = mode != "nommsg";
    let flush_all = mode == "flushall";
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN); libc::signal(libc::SIGTERM, on_term as usize); }

    let ep = unsafe { libc::epoll_create1(0) };
    let lfd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_NONBLOCK, 0) };
    unsafe {
        let one: libc::c_int = 1;
        libc::setsockopt(lfd, libc::SOL_SOCKET, libc::SO_REUSEADDR, &one as *const _ as *const _, 4);
        let sa = sockaddr(port);
        assert!(libc::bind(lfd, &sa as *const _ as *const _, std::mem::size_of::<libc::sockaddr_in>() as u32) == 0);
        libc::listen(lfd, 1024);
        ep_ctl(ep, libc::EPOLL_CTL_ADD, lfd, libc::EPOLLIN as u32, LISTEN_TOK);
    }
    eprintln!("epollfwd listening {} mode={:?}", port, mode);
    let bsa = sockaddr(backend);

    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut dirty: Vec<usize> = Vec::new();
    let mut events: Vec<libc::epoll_event> = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
    // recv scratch
    let mut rbufs = vec![[0u8; DGRAM_MAX]; RB];
    let mut riov: Vec<libc::iovec> = vec![unsafe { std::mem::zeroed() }; RB];
    let mut rhdr: Vec<libc::mmsghdr> = vec![unsafe { std::mem::zeroed() }; RB];
    for i in 0..RB {
        riov[i] = libc::iovec { iov_base: rbufs[i].as_mut_ptr() as *mut _, iov_len: DGRAM_MAX };
        rhdr[i].msg_hdr.msg_iov = &mut riov[i];
        rhdr[i].msg_hdr.msg_iovlen = 1;
    }
    // send scratch
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    let mut siov: Vec<libc::iovec> = Vec::new();
    let mut shdr: Vec<libc::mmsghdr> = Vec::new();
    let mut st = Stats { tcp_reads: 0, tcp_writes: 0, udp_send_calls: 0, udp_sent: 0, udp_recv_calls: 0, udp_recvd: 0, drops: 0 };
    let mut turns: u64 = 0;

    // write pending output; returns false if connection should be closed
    fn flush(ep: RawFd, c: &mut Conn, idx: usize, st: &mut Stats) -> bool {
        while c.out_off < c.out.len() {
            let r = unsafe { libc::write(c.tcp, c.out.as_ptr().add(c.out_off) as *const _, c.out.len() - c.out_off) };
            st.tcp_writes += 1;
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::WouldBlock {
                    if !c.want_out {
                        unsafe { ep_ctl(ep, libc::EPOLL_CTL_MOD, c.tcp, (libc::EPOLLIN | libc::EPOLLOUT) as u32, (idx as u64) << 1); }
                        c.want_out = true;
                    }
                    return true;
                }
                return false;
            }
            c.out_off += r as usize;
        }
        c.out.clear();
        c.out_off = 0;
        if c.want_out {
            unsafe { ep_ctl(ep, libc::EPOLL_CTL_MOD, c.tcp, libc::EPOLLIN as u32, (idx as u64) << 1); }
            c.want_out = false;
        }
        c.st != St::Closing
    }

    let mut report_at = std::time::Instant::now();
    loop {
        let n = unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), events.len() as i32, 1000) };
        if STOP.load(Ordering::Relaxed) {
            let d = st.udp_recvd.max(1) as f64;
            eprintln!("STATS turns={} tcp_reads={} tcp_writes={} udp_send_calls={} sent={} udp_recv_calls={} recvd={} drops={} | per backend datagram: tcp_reads {:.3} udp_send_calls {:.3} udp_recv_calls {:.3} tcp_writes {:.3} turns {:.3}",
                turns, st.tcp_reads, st.tcp_writes, st.udp_send_calls, st.udp_sent, st.udp_recv_calls, st.udp_recvd, st.drops,
                st.tcp_reads as f64 / d, st.udp_send_calls as f64 / d, st.udp_recv_calls as f64 / d, st.tcp_writes as f64 / d, turns as f64 / d);
            std::process::exit(0);
        }
        if n < 0 { continue; }
        turns += 1;
        let mut to_close: Vec<usize> = Vec::new();
        for ei in 0..n as usize {
            let ev = events[ei];
            let tok = ev.u64;
            if tok == LISTEN_TOK {
                loop {
                    let fd = unsafe { libc::accept4(lfd, std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_NONBLOCK) };
                    if fd < 0 { break; }
                    let one: libc::c_int = 1;
                    unsafe { libc::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, &one as *const _ as *const _, 4); }
                    let u = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK, 0) };
                    unsafe { libc::connect(u, &bsa as *const _ as *const _, std::mem::size_of::<libc::sockaddr_in>() as u32); }
                    let idx = free.pop().unwrap_or_else(|| { conns.push(None); conns.len() - 1 });
                    conns[idx] = Some(Conn { tcp: fd, udp: u, st: St::Handshake, inb: vec![0u8; 65536], ilen: 0, out: Vec::with_capacity(65536), out_off: 0, want_out: false, dirty: false });
                    unsafe {
                        ep_ctl(ep, libc::EPOLL_CTL_ADD, fd, libc::EPOLLIN as u32, (idx as u64) << 1);
                        ep_ctl(ep, libc::EPOLL_CTL_ADD, u, libc::EPOLLIN as u32, ((idx as u64) << 1) | 1);
                    }
                }
                continue;
            }
            let idx = (tok >> 1) as usize;
            let is_udp = tok & 1 == 1;
            let c = match conns.get_mut(idx).and_then(|c| c.as_mut()) { Some(c) => c, None => continue };
            if is_udp {
                // drain backend socket: datagram -> one binary WS message each
                if c.st != St::Open { // not yet upgraded: discard
                    unsafe { libc::recv(c.udp, rbufs[0].as_mut_ptr() as *mut _, DGRAM_MAX, 0); }
                    continue;
                }
                loop {
                    let got = if use_mmsg {
                        let r = unsafe { libc::recvmmsg(c.udp, rhdr.as_mut_ptr(), RB as u32, 0, std::ptr::null_mut()) };
                        st.udp_recv_calls += 1;
                        if r <= 0 { break; }
                        for i in 0..r as usize { frame_into(&mut c.out, 2, &rbufs[i][..rhdr[i].msg_len as usize]); }
                        r as usize
                    } else {
                        let r = unsafe { libc::recv(c.udp, rbufs[0].as_mut_ptr() as *mut _, DGRAM_MAX, 0) };
                        st.udp_recv_calls += 1;
                        if r < 0 { break; }
                        frame_into(&mut c.out, 2, &rbufs[0][..r as usize]);
                        1
                    };
                    st.udp_recvd += got as u64;
                    if use_mmsg && got < RB { break; } // short batch: socket drained, skip the EAGAIN call
                }
                if flush_all { if !flush(ep, c, idx, &mut st) { to_close.push(idx); } }
                else if !c.dirty { c.dirty = true; dirty.push(idx); }
                continue;
            }
            // TCP event
            if ev.events & libc::EPOLLOUT as u32 != 0 {
                if !flush(ep, c, idx, &mut st) { to_close.push(idx); continue; }
            }
            if ev.events & (libc::EPOLLIN | libc::EPOLLHUP | libc::EPOLLERR) as u32 == 0 { continue; }
            if c.ilen == c.inb.len() { let l = c.inb.len(); c.inb.resize(l * 2, 0); }
            let r = unsafe { libc::read(c.tcp, c.inb.as_mut_ptr().add(c.ilen) as *mut _, c.inb.len() - c.ilen) };
            st.tcp_reads += 1;
            if r == 0 { to_close.push(idx); continue; }
            if r < 0 {
                if io::Error::last_os_error().kind() != io::ErrorKind::WouldBlock { to_close.push(idx); }
                continue;
            }
            c.ilen += r as usize;
            let mut pos = 0usize;
            if c.st == St::Handshake {
                let hdr = &c.inb[..c.ilen];
                let end = match hdr.windows(4).position(|w| w == b"\r\n\r\n") { Some(e) => e + 4, None => continue };
                let text = String::from_utf8_lossy(&hdr[..end]).to_string();
                let key = text.lines().find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    if k.trim().eq_ignore_ascii_case("sec-websocket-key") { Some(v.trim().to_string()) } else { None }
                });
                let key = match key { Some(k) => k, None => { to_close.push(idx); continue; } };
                let acc = tungstenite::handshake::derive_accept_key(key.as_bytes());
                let resp = format!("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n", acc);
                c.out.extend_from_slice(resp.as_bytes());
                c.st = St::Open;
                pos = end;
                if !c.dirty { c.dirty = true; dirty.push(idx); }
            }
            // parse complete frames
            ranges.clear();
            let mut bad = false;
            while c.st == St::Open {
                let avail = c.ilen - pos;
                if avail < 2 { break; }
                let b0 = c.inb[pos]; let b1 = c.inb[pos + 1];
                let fin = b0 & 0x80 != 0; let op = b0 & 0x0f;
                let masked = b1 & 0x80 != 0;
                let mut len = (b1 & 0x7f) as usize; let mut h = 2;
                if len == 126 { if avail < 4 { break; } len = u16::from_be_bytes([c.inb[pos + 2], c.inb[pos + 3]]) as usize; h = 4; }
                else if len == 127 { if avail < 10 { break; } len = u64::from_be_bytes(c.inb[pos + 2..pos + 10].try_into().unwrap()) as usize; h = 10; }
                if !masked || !fin || len > 1 << 20 { bad = true; break; } // spike: no fragmentation support
                if avail < h + 4 + len { break; }
                let key = [c.inb[pos + h], c.inb[pos + h + 1], c.inb[pos + h + 2], c.inb[pos + h + 3]];
                let ps = pos + h + 4;
                unmask(&mut c.inb[ps..ps + len], key);
                match op {
                    2 => ranges.push((ps, len)),
                    9 => { let p = c.inb[ps..ps + len].to_vec(); frame_into(&mut c.out, 10, &p); if !c.dirty { c.dirty = true; dirty.push(idx); } }
                    8 => { let p = c.inb[ps..ps + len.min(2)].to_vec(); frame_into(&mut c.out, 8, &p); c.st = St::Closing; if !c.dirty { c.dirty = true; dirty.push(idx); } }
                    _ => {} // text / pong ignored
                }
                pos = ps + len;
            }
            // forward binary payloads to backend
            if !ranges.is_empty() {
                if use_mmsg && ranges.len() > 1 {
                    siov.clear(); shdr.clear();
                    for &(s, l) in &ranges { siov.push(libc::iovec { iov_base: unsafe { c.inb.as_mut_ptr().add(s) } as *mut _, iov_len: l }); }
                    for i in 0..siov.len() {
                        let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                        m.msg_hdr.msg_iov = &mut siov[i]; m.msg_hdr.msg_iovlen = 1;
                        shdr.push(m);
                    }
                    let mut off = 0;
                    while off < shdr.len() {
                        let r = unsafe { libc::sendmmsg(c.udp, shdr.as_mut_ptr().add(off), (shdr.len() - off) as u32, 0) };
                        st.udp_send_calls += 1;
                        if r <= 0 { st.drops += (shdr.len() - off) as u64; break; }
                        off += r as usize;
                    }
                    st.udp_sent += off as u64;
                } else {
                    for &(s, l) in &ranges {
                        let r = unsafe { libc::send(c.udp, c.inb.as_ptr().add(s) as *const _, l, 0) };
                        st.udp_send_calls += 1;
                        if r < 0 { st.drops += 1; } else { st.udp_sent += 1; }
                    }
                }
            }
            if bad { to_close.push(idx); continue; }
            // compact input buffer
            if pos > 0 { c.inb.copy_within(pos..c.ilen, 0); c.ilen -= pos; }
        }
        // end of turn: one write per dirty client
        for idx in dirty.drain(..) {
            if let Some(c) = conns[idx].as_mut() {
                c.dirty = false;
                if !flush(ep, c, idx, &mut st) { to_close.push(idx); }
            }
        }
        for idx in to_close {
            if let Some(c) = conns[idx].take() {
                unsafe { libc::close(c.tcp); libc::close(c.udp); }
                free.push(idx);
            }
        }
        let _ = cvt(0);
        if report_at.elapsed().as_secs() >= 3600 && st.udp_recvd > 0 {
            report_at = std::time::Instant::now();
            eprintln!("turns={} tcp_reads={} tcp_writes={} udp_send_calls={} sent={} udp_recv_calls={} recvd={} drops={}",
                turns, st.tcp_reads, st.tcp_writes, st.udp_send_calls, st.udp_sent, st.udp_recv_calls, st.udp_recvd, st.drops);
        }
    }
}
