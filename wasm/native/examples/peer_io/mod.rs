//! Stdout and stdin plumbing shared by the benchmark peers (s1_peer, s2_peer):
//! one JSON line per event, and "stdin closed" as the stop signal from the
//! driver that spawned them.

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Print one line and flush, so the driver sees it at once.
pub fn emit(line: &str) {
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Set when stdin reaches end of file.
pub fn stdin_closed() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 256];
        while matches!(io::stdin().read(&mut buf), Ok(n) if n > 0) {}
        f.store(true, Ordering::SeqCst);
    });
    flag
}
