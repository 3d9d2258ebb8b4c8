//! Slow clients against a running `recall serve` (docs/BENCHMARKS.md, "Slow clients").
//!
//! Holds N slow connections open — a third that send nothing, a third that send a request
//! header a byte every 2 s, a third that send a body a byte every 2 s — each reopened as soon
//! as the server closes it, while a probe opens a fresh connection for `GET /healthz` every
//! 100 ms. Prints the probe's latency without and with the slow clients, how many probes
//! were refused (the connection cap reached) and how long the server let each kind of slow
//! connection live.
//!
//! ```sh
//! cargo build --release -p recall-cli
//! cargo build --release -p recall-server --example slow_clients
//! target/release/recall serve --no-auth --db /tmp/slow.db --addr 127.0.0.1:8090 &
//! target/release/examples/slow_clients 127.0.0.1:8090 1000 60
//! ```
//!
//! Arguments: the server's address, N (default 1000), seconds under load (default 60). The
//! body clients POST to `/v1/conversations` without a key, so run the server with `--no-auth`
//! (or expect 401s, which end those connections early).
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Clone, Copy, Debug)]
enum Kind {
    Idle,
    Header,
    Body,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Idle => "idle (sends nothing)",
            Kind::Header => "header trickle (1 byte / 2 s)",
            Kind::Body => "body trickle (1 byte / 2 s)",
        }
    }

    /// What the client sends first, then the byte it trickles (none: it sends nothing).
    fn script(self) -> (&'static [u8], Option<u8>) {
        match self {
            Kind::Idle => (b"", None),
            Kind::Header => (
                b"GET /healthz HTTP/1.1\r\nhost: localhost\r\nx-slow: ",
                Some(b'a'),
            ),
            Kind::Body => (
                b"POST /v1/conversations HTTP/1.1\r\nhost: localhost\r\n\
                  content-type: application/json\r\ncontent-length: 100000\r\n\r\n{",
                Some(b' '),
            ),
        }
    }
}

/// Lifetimes of the connections of one kind that the server closed.
#[derive(Default)]
struct Lives(Mutex<Vec<Duration>>);

/// One slow client: connects, plays its script until the server closes the connection,
/// records how long that took, and starts over until `stop`.
async fn slow_client(addr: SocketAddr, kind: Kind, lives: Arc<Lives>, stop: Arc<AtomicBool>) {
    let (first, trickle) = kind.script();
    while !stop.load(Ordering::Relaxed) {
        let Ok(stream) = TcpStream::connect(addr).await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let opened = Instant::now();
        let (mut r, mut w) = stream.into_split();
        if w.write_all(first).await.is_err() {
            continue;
        }
        let writer = tokio::spawn(async move {
            let Some(b) = trickle else {
                return std::future::pending::<()>().await;
            };
            loop {
                tokio::time::sleep(Duration::from_secs(2)).await;
                if w.write_all(&[b]).await.is_err() {
                    return;
                }
            }
        });
        let mut buf = [0u8; 1024];
        let closed = loop {
            tokio::select! {
                n = r.read(&mut buf) => match n {
                    Ok(0) | Err(_) => break true,
                    Ok(_) => {}
                },
                _ = tokio::time::sleep(Duration::from_millis(500)) => {
                    if stop.load(Ordering::Relaxed) {
                        break false;
                    }
                }
            }
        };
        writer.abort();
        if closed {
            lives.0.lock().unwrap().push(opened.elapsed());
        }
    }
}

/// `GET /healthz` on a fresh connection: its latency, or `None` when it was not answered 200.
async fn probe(addr: SocketAddr) -> Option<Duration> {
    let started = Instant::now();
    let work = async {
        let mut s = TcpStream::connect(addr).await.ok()?;
        s.write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n")
            .await
            .ok()?;
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.ok()?;
        out.starts_with(b"HTTP/1.1 200").then_some(())
    };
    tokio::time::timeout(Duration::from_secs(10), work)
        .await
        .ok()
        .flatten()?;
    Some(started.elapsed())
}

/// Probes every 100 ms for `secs`; returns the latencies and the count of failed probes.
async fn probe_for(addr: SocketAddr, secs: u64) -> (Vec<Duration>, u64) {
    let until = Instant::now() + Duration::from_secs(secs);
    let mut ok = Vec::new();
    let mut failed = 0;
    while Instant::now() < until {
        match probe(addr).await {
            Some(d) => ok.push(d),
            None => failed += 1,
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (ok, failed)
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn report(what: &str, mut lat: Vec<Duration>, failed: u64) {
    lat.sort();
    println!(
        "{what}: {} probes answered, {failed} not; latency p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        lat.len(),
        quantile(&lat, 0.5).as_secs_f64() * 1e3,
        quantile(&lat, 0.99).as_secs_f64() * 1e3,
        lat.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
    );
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let addr: SocketAddr = args
        .first()
        .map(String::as_str)
        .unwrap_or("127.0.0.1:8090")
        .parse()
        .expect("an address like 127.0.0.1:8090");
    let n: usize = args.get(1).map_or(1000, |s| s.parse().expect("N"));
    let secs: u64 = args.get(2).map_or(60, |s| s.parse().expect("seconds"));

    let (lat, failed) = probe_for(addr, 10).await;
    report("no slow clients (10 s)", lat, failed);

    let stop = Arc::new(AtomicBool::new(false));
    let kinds = [Kind::Idle, Kind::Header, Kind::Body];
    let lives: Vec<Arc<Lives>> = kinds.iter().map(|_| Arc::default()).collect();
    let started = Arc::new(AtomicU64::new(0));
    let mut clients = Vec::new();
    for i in 0..n {
        let k = i % kinds.len();
        let (lives, stop, started) = (lives[k].clone(), stop.clone(), started.clone());
        clients.push(tokio::spawn(async move {
            started.fetch_add(1, Ordering::Relaxed);
            slow_client(addr, kinds[k], lives, stop).await;
        }));
    }
    let (lat, failed) = probe_for(addr, secs).await;
    stop.store(true, Ordering::Relaxed);
    report(
        &format!(
            "{} slow clients ({secs} s)",
            started.load(Ordering::Relaxed)
        ),
        lat,
        failed,
    );
    for (kind, lives) in kinds.iter().zip(&lives) {
        let mut l = lives.0.lock().unwrap().clone();
        l.sort();
        println!(
            "  {}: {} closed by the server, lived p50 {:.1} s, max {:.1} s",
            kind.name(),
            l.len(),
            quantile(&l, 0.5).as_secs_f64(),
            l.last().copied().unwrap_or_default().as_secs_f64(),
        );
    }
    for c in clients {
        let _ = c.await;
    }
}
