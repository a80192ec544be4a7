//! A TCP proxy in front of a server that a test can take down and bring
//! back (or have go down by itself after so many bytes): how the tests
//! stop "HBase" under rowsearch without stopping the HBase other tests
//! share. While down, open connections are shut and new ones are closed
//! at once (a client sees its connection reset or closed).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A proxy to one upstream address.
#[derive(Debug)]
pub struct Proxy {
    /// `HOST:PORT` it listens on.
    pub addr: String,
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    upstream: String,
    down: AtomicBool,
    /// Bytes sent upstream so far.
    sent: AtomicU64,
    /// Go down once `sent` passes this.
    down_after: AtomicU64,
    open: Mutex<Vec<TcpStream>>,
    /// Hold replies back once one fills a read or a connection has
    /// relayed `BIG_REPLY` (32 KiB) bytes since armed (a scan's rows, not a
    /// schema nor a poll), until released.
    stall_big: Mutex<bool>,
    /// Bumped each time stalling is armed: each connection counts its
    /// reply bytes from the arming it saw last.
    armed: AtomicU64,
    released: std::sync::Condvar,
    /// Replies held back so far.
    stalls: AtomicU64,
}

impl Shared {
    fn is_down(&self) -> bool {
        self.down.load(Ordering::SeqCst)
    }

    fn cut(&self) {
        self.down.store(true, Ordering::SeqCst);
        self.released.notify_all();
        for s in self.open.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

impl Proxy {
    /// A proxy on 127.0.0.1 (a free port) to `upstream`, up.
    pub fn new(upstream: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let addr = listener.local_addr().expect("proxy address").to_string();
        let shared = Arc::new(Shared {
            upstream: upstream.to_owned(),
            down: AtomicBool::new(false),
            sent: AtomicU64::new(0),
            down_after: AtomicU64::new(u64::MAX),
            open: Mutex::new(Vec::new()),
            stall_big: Mutex::new(false),
            armed: AtomicU64::new(0),
            released: std::sync::Condvar::new(),
            stalls: AtomicU64::new(0),
        });
        let accepting = Arc::clone(&shared);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if accepting.is_down() {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(&accepting.upstream) else {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                {
                    let mut open = accepting.open.lock().unwrap();
                    open.push(client.try_clone().expect("clone"));
                    open.push(server.try_clone().expect("clone"));
                }
                let up = Arc::clone(&accepting);
                let (c, s) = (client.try_clone().expect("clone"), server.try_clone().expect("clone"));
                std::thread::spawn(move || pump(c, s, &up, true));
                let down = Arc::clone(&accepting);
                std::thread::spawn(move || pump(server, client, &down, false));
            }
        });
        Proxy { addr, shared }
    }

    /// Takes the upstream away: open connections shut, new ones refused.
    pub fn down(&self) {
        self.shared.cut();
    }

    /// Shuts every open connection, staying up: a client's next call
    /// connects again.
    pub fn reset(&self) {
        for s in self.shared.open.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
        self.shared.released.notify_all();
    }

    /// Brings it back.
    pub fn up(&self) {
        self.shared.down_after.store(u64::MAX, Ordering::SeqCst);
        self.shared.down.store(false, Ordering::SeqCst);
    }

    /// Goes down by itself once `bytes` more have been sent upstream.
    pub fn down_after(&self, bytes: u64) {
        let sent = self.shared.sent.load(Ordering::SeqCst);
        self.shared.down_after.store(sent.saturating_add(bytes), Ordering::SeqCst);
    }

    /// From now on, on each connection, the reply bytes past the first
    /// `BIG_REPLY` (32 KiB) (or a read filling 64 KiB) and everything after them
    /// wait until [`Self::release`]: a client is held in the middle of
    /// reading rows. Counted per connection, so a server's small polls
    /// beside it are not what gets held; and not by the size of one read,
    /// which depends on how the kernel splits a reply.
    pub fn stall_big_replies(&self) {
        let mut stall = self.shared.stall_big.lock().unwrap();
        self.shared.armed.fetch_add(1, Ordering::SeqCst);
        *stall = true;
    }

    /// How many replies have been held back.
    pub fn stalls(&self) -> u64 {
        self.shared.stalls.load(Ordering::SeqCst)
    }

    /// Lets stalled replies go.
    pub fn release(&self) {
        *self.shared.stall_big.lock().unwrap() = false;
        self.shared.released.notify_all();
    }

    /// Whether it is down.
    pub fn is_down(&self) -> bool {
        self.shared.is_down()
    }
}

/// Reply bytes a connection relays after stalling is armed before it is held.
pub const BIG_REPLY: u64 = 32 * 1024;

fn pump(mut from: TcpStream, mut to: TcpStream, shared: &Shared, upstream: bool) {
    let mut buf = vec![0u8; 64 * 1024];
    // (the arming seen last, reply bytes relayed since)
    let mut since = (shared.armed.load(Ordering::SeqCst), 0u64);
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if shared.is_down() {
            break;
        }
        let armed = shared.armed.load(Ordering::SeqCst);
        if since.0 != armed {
            since = (armed, 0);
        }
        since.1 += n as u64;
        if !upstream && (n == buf.len() || since.1 > BIG_REPLY) {
            let mut stalled = shared.stall_big.lock().unwrap();
            if *stalled {
                shared.stalls.fetch_add(1, Ordering::SeqCst);
            }
            while *stalled && !shared.is_down() {
                stalled = shared.released.wait(stalled).unwrap();
                // Shut meanwhile (reset): this reply goes nowhere.
                if to.peer_addr().is_err() || from.peer_addr().is_err() {
                    break;
                }
            }
        }
        if upstream {
            let sent = shared.sent.fetch_add(n as u64, Ordering::SeqCst) + n as u64;
            if sent > shared.down_after.load(Ordering::SeqCst) {
                shared.cut();
                break;
            }
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}
