//! TUN devices created directly inside a network namespace.
//!
//! The thread enters the namespace (setns), opens /dev/net/tun there and
//! returns home; the descriptor stays bound to the device in that namespace.
//! Devices are not persistent: they vanish when the descriptor closes, so a
//! dead emulator leaves nothing behind but its (empty) namespaces.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// One TUN device: its non-blocking descriptor and the kernel's name for it.
pub struct Tun {
    pub fd: OwnedFd,
    pub name: String,
}

fn netns_path(ns: &str) -> String {
    if ns.contains('/') {
        ns.to_string()
    } else {
        format!("/run/netns/{ns}")
    }
}

fn check(ret: libc::c_int, what: &str) -> io::Result<()> {
    if ret < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(())
}

/// Create TUN device `name` (IFF_TUN | IFF_NO_PI: raw IP packets) inside
/// namespace `ns` (a name under /run/netns or a path).
pub fn open_in_netns(ns: &str, name: &str) -> io::Result<Tun> {
    let home = File::open("/proc/thread-self/ns/net")?;
    let target = File::open(netns_path(ns))
        .map_err(|e| io::Error::new(e.kind(), format!("namespace {ns}: {e}")))?;
    // SAFETY: both descriptors are open namespace files owned above.
    check(
        unsafe { libc::setns(target.as_raw_fd(), libc::CLONE_NEWNET) },
        "setns",
    )?;
    let made = create(name);
    // SAFETY: as above; returning home must happen whatever `create` did.
    let back = unsafe { libc::setns(home.as_raw_fd(), libc::CLONE_NEWNET) };
    check(back, "setns (return)")?;
    made
}

fn create(name: &str) -> io::Result<Tun> {
    let path = CString::new("/dev/net/tun").expect("literal has no NUL");
    // SAFETY: path is a valid C string; flags are plain constants.
    let raw = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    check(raw, "open /dev/net/tun")?;
    // SAFETY: `raw` was just returned by open and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() >= req.ifr_name.len() || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad device name {name:?}"),
        ));
    }
    for (dst, &src) in req.ifr_name.iter_mut().zip(bytes) {
        *dst = src as libc::c_char;
    }
    req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: TUNSETIFF reads and writes one ifreq, which lives on our stack.
    check(
        unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut req) },
        &format!("TUNSETIFF {name}"),
    )?;
    let got: Vec<u8> = req
        .ifr_name
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    Ok(Tun {
        fd,
        name: String::from_utf8_lossy(&got).into_owned(),
    })
}

/// Read one packet; `Ok(None)` when nothing is queued.
pub fn read_packet(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: buf is a valid writable region of buf.len() bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n >= 0 {
        return Ok(Some(n as usize));
    }
    let e = io::Error::last_os_error();
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
        _ => Err(e),
    }
}

/// Hand one packet to the kernel on the device behind `fd`.
pub fn write_packet(fd: RawFd, packet: &[u8]) -> io::Result<()> {
    // SAFETY: packet is a valid readable region of packet.len() bytes.
    let n = unsafe { libc::write(fd, packet.as_ptr().cast(), packet.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
