// Design 1: tokio + tokio-tungstenite, one task per WS session with its own connected UDP socket.
// Usage: tokiofwd LISTEN_PORT BACKEND_PORT [mt|ct]   (mt = multi-thread runtime, ct = current_thread)
use futures_util::{SinkExt, StreamExt};
use std::io::ErrorKind;
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio_tungstenite::tungstenite::Message;

async fn session(tcp: TcpStream, backend: u16) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    tcp.set_nodelay(true)?;
    let mut ws = tokio_tungstenite::accept_async(tcp).await?;
    let udp = UdpSocket::bind("127.0.0.1:0").await?;
    udp.connect(("127.0.0.1", backend)).await?;
    let mut buf = vec![0u8; 65536];
    loop {
        tokio::select! {
            m = ws.next() => {
                match m {
                    None => break,
                    Some(Err(e)) => return Err(e.into()),
                    Some(Ok(Message::Binary(b))) => { let _ = udp.send(&b).await; }
                    Some(Ok(Message::Close(_))) => { let _ = ws.flush().await; } // tungstenite queued the close reply; stream ends next
                    Some(Ok(_)) => {} // ping: pong auto-queued by tungstenite; text ignored
                }
            }
            r = udp.readable() => {
                r?;
                let mut n = 0;
                loop {
                    match udp.try_recv(&mut buf) {
                        Ok(len) => { ws.feed(Message::Binary(buf[..len].to_vec())).await?; n += 1; }
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == ErrorKind::ConnectionRefused => break,
                        Err(e) => return Err(e.into()),
                    }
                }
                if n > 0 { ws.flush().await?; }
            }
        }
    }
    let _ = ws.close(None).await;
    Ok(())
}

async fn serve(port: u16, backend: u16) {
    let l = TcpListener::bind(("127.0.0.1", port)).await.unwrap();
    eprintln!("tokiofwd listening {}", port);
    loop {
        let (s, _) = l.accept().await.unwrap();
        tokio::spawn(async move { if let Err(e) = session(s, backend).await { eprintln!("session: {e}"); } });
    }
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let port: u16 = a.get(1).map(|s| s.parse().unwrap()).unwrap_or(9002);
    let backend: u16 = a.get(2).map(|s| s.parse().unwrap()).unwrap_or(9100);
    let mode = a.get(3).cloned().unwrap_or("mt".into());
    let rt = if mode == "ct" {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
    } else {
        tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap()
    };
    rt.block_on(serve(port, backend));
}
