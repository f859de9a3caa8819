//! A 127.0.0.1 TCP server that counts connections: the witness of network attack tests. A
//! sandboxed command that reaches it leaves a hit; an attack test asserts there is none.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// Counts every TCP connection made to it until dropped.
pub struct HitServer {
    addr: SocketAddr,
    hits: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl HitServer {
    /// Listens on 127.0.0.1 on a free port.
    ///
    /// # Panics
    /// When no port can be bound.
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let addr = listener.local_addr().expect("local address");
        let hits = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (thread_hits, thread_stop) = (hits.clone(), stop.clone());
        std::thread::spawn(move || {
            while !thread_stop.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((mut stream, _)) => {
                        thread_hits.fetch_add(1, Ordering::SeqCst);
                        let _ = std::io::Write::write_all(
                            &mut stream,
                            b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nhit",
                        );
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Self { addr, hits, stop }
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:<port>/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Connections so far.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

impl Drop for HitServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}
