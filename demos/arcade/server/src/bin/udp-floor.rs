//! The kernel's CPU cost per UDP datagram on this machine's loopback: the
//! floor under any forwarder (relay) or server that moves datagrams here.
//!
//! ```sh
//! udp-floor [--size 64] [--rounds 40] [--batch 64]
//! ```
//!
//! Each round sends `batch × 50` datagrams with `sendmmsg` (`batch` a call)
//! into a socket with room for them all, then reads them back with
//! `recvmmsg` in full batches: the cheapest way Linux offers to move them.
//! Sending includes the loopback delivery into the receiving socket, which
//! the kernel runs inside the sender's call. Prints one JSON line with the
//! thread CPU time per datagram of each side (median round).

use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::process::ExitCode;

use ricochet_arcade::net::thread_cpu_us;

fn headers(iov: &mut [libc::iovec]) -> Vec<libc::mmsghdr> {
    iov.iter_mut()
        .map(|v| {
            // SAFETY: an all-zero mmsghdr is valid (no name, no control data).
            let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
            h.msg_hdr.msg_iov = v;
            h.msg_hdr.msg_iovlen = 1;
            h
        })
        .collect()
}

fn main() -> ExitCode {
    let (mut size, mut rounds, mut batch) = (64usize, 40usize, 64usize);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let v: Option<usize> = args.next().and_then(|v| v.parse().ok());
        match (flag.as_str(), v) {
            ("--size", Some(v)) if (1..=1400).contains(&v) => size = v,
            ("--rounds", Some(v)) if v > 0 => rounds = v,
            ("--batch", Some(v)) if (1..=1024).contains(&v) => batch = v,
            _ => {
                eprintln!(
                    "udp-floor: usage: udp-floor [--size 1..1400] [--rounds N] [--batch 1..1024]"
                );
                return ExitCode::from(2);
            }
        }
    }
    match run(size, rounds, batch) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("udp-floor: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(size: usize, rounds: usize, batch: usize) -> std::io::Result<()> {
    let per_round = batch * 50;
    let rx = UdpSocket::bind("127.0.0.1:0")?;
    rx.set_nonblocking(true)?;
    let want: libc::c_int = 64 << 20;
    // SAFETY: setsockopt reads an int of the given size. FORCE needs root;
    // without it the plain option gives what the sysctl allows.
    unsafe {
        let p = &want as *const libc::c_int as *const libc::c_void;
        if libc::setsockopt(rx.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, p, 4) != 0 {
            libc::setsockopt(rx.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF, p, 4);
        }
    }
    let tx = UdpSocket::bind("127.0.0.1:0")?;
    tx.connect(rx.local_addr()?)?;
    let payload = vec![0x5au8; size];
    let mut bufs = vec![[0u8; 2048]; batch];
    let (mut send_us, mut recv_us) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let t0 = thread_cpu_us();
        let mut sent = 0;
        while sent < per_round {
            let mut iov: Vec<libc::iovec> = (0..batch)
                .map(|_| libc::iovec {
                    iov_base: payload.as_ptr() as *mut _,
                    iov_len: size,
                })
                .collect();
            let mut msgs = headers(&mut iov);
            // SAFETY: `msgs` points at `batch` headers whose buffers outlive the call.
            let n = unsafe { libc::sendmmsg(tx.as_raw_fd(), msgs.as_mut_ptr(), batch as u32, 0) };
            if n < 0 {
                return Err(std::io::Error::last_os_error());
            }
            sent += n as usize;
        }
        let t1 = thread_cpu_us();
        let mut got = 0;
        loop {
            let mut iov: Vec<libc::iovec> = bufs
                .iter_mut()
                .map(|b| libc::iovec {
                    iov_base: b.as_mut_ptr() as *mut _,
                    iov_len: b.len(),
                })
                .collect();
            let mut msgs = headers(&mut iov);
            // SAFETY: as above, with writable buffers; the socket is non-blocking.
            let n = unsafe {
                libc::recvmmsg(
                    rx.as_raw_fd(),
                    msgs.as_mut_ptr(),
                    batch as u32,
                    0,
                    std::ptr::null_mut(),
                )
            };
            if n <= 0 {
                break;
            }
            got += n as usize;
        }
        let t2 = thread_cpu_us();
        if got < per_round * 9 / 10 {
            return Err(std::io::Error::other(format!(
                "only {got} of {per_round} datagrams arrived: receive buffer too small"
            )));
        }
        send_us.push((t1 - t0) as f64 / sent as f64);
        recv_us.push((t2 - t1) as f64 / got as f64);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        r#"{{"event":"udp-floor","size":{size},"batch":{batch},"rounds":{rounds},"sendUsPerDatagram":{:.3},"recvUsPerDatagram":{:.3}}}"#,
        median(&mut send_us),
        median(&mut recv_us)
    );
    Ok(())
}
