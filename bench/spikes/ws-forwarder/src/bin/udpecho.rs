// UDP echo backend: echoes each datagram to its sender (recvmmsg/sendmmsg, 4 MB rcvbuf to avoid drops).
// Usage: udpecho PORT
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
const B: usize = 64;
fn main() {
    let port: u16 = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(9100);
    let s = UdpSocket::bind(("127.0.0.1", port)).unwrap();
    let fd = s.as_raw_fd();
    unsafe {
        let v: libc::c_int = 4 << 20;
        libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, &v as *const _ as *const libc::c_void, 4);
    }
    eprintln!("udpecho on {}", port);
    let mut bufs = vec![[0u8; 2048]; B];
    let mut addrs: Vec<libc::sockaddr_in> = vec![unsafe { std::mem::zeroed() }; B];
    let mut iov: Vec<libc::iovec> = vec![unsafe { std::mem::zeroed() }; B];
    let mut hdr: Vec<libc::mmsghdr> = vec![unsafe { std::mem::zeroed() }; B];
    loop {
        for i in 0..B {
            iov[i] = libc::iovec { iov_base: bufs[i].as_mut_ptr() as *mut _, iov_len: 2048 };
            hdr[i].msg_hdr.msg_iov = &mut iov[i];
            hdr[i].msg_hdr.msg_iovlen = 1;
            hdr[i].msg_hdr.msg_name = &mut addrs[i] as *mut _ as *mut _;
            hdr[i].msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as u32;
        }
        let n = unsafe { libc::recvmmsg(fd, hdr.as_mut_ptr(), B as u32, libc::MSG_WAITFORONE, std::ptr::null_mut()) };
        if n <= 0 { continue; }
        for i in 0..n as usize { iov[i].iov_len = hdr[i].msg_len as usize; }
        let mut off = 0usize;
        while off < n as usize {
            let r = unsafe { libc::sendmmsg(fd, hdr.as_mut_ptr().add(off), (n as usize - off) as u32, 0) };
            if r <= 0 { break; }
            off += r as usize;
        }
    }
}
