// Rust load generator (cheaper than Node, so the forwarder gets more load).
// Usage: loadgen URL PID CLIENTS WINDOW TOTAL WARM SIZE
use futures_util::{SinkExt, StreamExt};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use tokio_tungstenite::tungstenite::Message;

fn cpu(pid: u32) -> (f64, f64) {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let f: Vec<&str> = s[s.rfind(')').unwrap() + 2..].split(' ').collect();
    (f[11].parse::<f64>().unwrap() / 100.0, f[12].parse::<f64>().unwrap() / 100.0)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let a: Vec<String> = std::env::args().collect();
    let url = a[1].clone();
    let pid: u32 = a[2].parse().unwrap();
    let nc: usize = a[3].parse().unwrap();
    let win: usize = a[4].parse().unwrap();
    let total: u64 = a[5].parse().unwrap();
    let warm: u64 = a[6].parse().unwrap();
    let size: usize = a[7].parse().unwrap();
    let echoes = Arc::new(AtomicU64::new(0));
    let errs = Arc::new(AtomicU64::new(0));
    let mut conns = Vec::new();
    for _ in 0..nc {
        let (ws, _) = tokio_tungstenite::connect_async(url.as_str()).await.unwrap();
        conns.push(ws);
    }
    for (ci, ws) in conns.into_iter().enumerate() {
        let echoes = echoes.clone(); let errs = errs.clone();
        tokio::spawn(async move {
            let (mut tx, mut rx) = ws.split();
            let mut seq_out: u32 = 0; let mut seq_in: u32 = 0;
            let mk = |s: u32| { let mut b = vec![0u8; size]; b[..4].copy_from_slice(&s.to_le_bytes()); b[4..8].copy_from_slice(&(ci as u32).to_le_bytes()); Message::Binary(b) };
            for _ in 0..win { tx.feed(mk(seq_out)).await.unwrap(); seq_out += 1; }
            tx.flush().await.unwrap();
            while let Some(Ok(m)) = rx.next().await {
                if let Message::Binary(b) = m {
                    let s = u32::from_le_bytes(b[..4].try_into().unwrap());
                    if s != seq_in { errs.fetch_add(1, Relaxed); }
                    seq_in = s + 1;
                    echoes.fetch_add(1, Relaxed);
                    if tx.send(mk(seq_out)).await.is_err() { break; }
                    seq_out += 1;
                }
            }
        });
    }
    while echoes.load(Relaxed) < warm { tokio::time::sleep(std::time::Duration::from_micros(500)).await; }
    let c0 = cpu(pid); let t0 = std::time::Instant::now(); let e0 = echoes.load(Relaxed);
    while echoes.load(Relaxed) < e0 + total { tokio::time::sleep(std::time::Duration::from_micros(500)).await; }
    let c1 = cpu(pid); let wall = t0.elapsed().as_secs_f64(); let n = echoes.load(Relaxed) - e0;
    let (u, s) = (c1.0 - c0.0, c1.1 - c0.1);
    println!("{{\"echoes\":{n},\"wall\":{wall:.3},\"user\":{u:.2},\"sys\":{s:.2},\"cpu\":{:.2},\"msgs_per_cpu_s\":{:.0},\"echoes_per_wall_s\":{:.0},\"order_errors\":{}}}",
        u + s, 2.0 * n as f64 / (u + s), n as f64 / wall, errs.load(Relaxed));
    std::process::exit(0);
}
