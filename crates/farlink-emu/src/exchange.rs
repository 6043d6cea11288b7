//! A request/response flow on real sockets (issue 30): the simulator's two persistent
//! connections, requests from the client (the flow's source) to the server on one, responses
//! back on the other, each listening on the flow's port in its namespace (so the links count
//! both by it). The exchanges are the core's `apps::exchange::Exchanges` (same streams, so the
//! same request and response sizes and think times for a seed), shared by the two ends, which
//! are threads of one process: the client writes a request when it says, the server answers
//! once it read the whole request, the client thinks once it read the whole answer.
//!
//! Every blocking call is bounded (100 ms, 10 ms for writes) and looks at the stop flag.

use std::io::{Read, Write};
use std::net::{SocketAddrV4, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use farlink_core::apps::exchange::Exchanges;
use farlink_core::time::SimTime;

use crate::clock::monotonic_ns;
use crate::sockets::{connect, is_timeout, short_flow_listener, wait_until, ShortFlowSettings};

const POLL: Duration = Duration::from_millis(100);
const WRITE_POLL: Duration = Duration::from_millis(10);

/// The run's time line: monotonic ns less its time zero.
fn run_time(t0_ns: u64) -> SimTime {
    SimTime::from_nanos(monotonic_ns().saturating_sub(t0_ns))
}

/// Accepts one connection on `listener` (with its 100 ms timeout) unless the run stops.
fn accept_one(listener: &TcpListener, stop: &AtomicBool) -> std::io::Result<Option<TcpStream>> {
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((c, _)) => return Ok(Some(c)),
            Err(e) if is_timeout(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// Writes `bytes` zeros on `conn` unless the run stops.
fn write_zeros(conn: &mut TcpStream, mut bytes: u64, stop: &AtomicBool) -> std::io::Result<()> {
    conn.set_write_timeout(Some(WRITE_POLL))?;
    let chunk = [0u8; 16 * 1024];
    while bytes > 0 && !stop.load(Ordering::Relaxed) {
        let want = bytes.min(chunk.len() as u64) as usize;
        match conn.write(&chunk[..want]) {
            Ok(n) => bytes -= n as u64,
            Err(e) if is_timeout(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// What one end read, and why it ended early if it did.
#[derive(Debug, Default)]
pub(crate) struct Ended {
    pub(crate) read_bytes: u64,
    pub(crate) error: Option<String>,
}

/// A listener for one end, bound in the calling thread's namespace.
pub(crate) fn listener(
    at: SocketAddrV4,
    receive_buffer_bytes: u64,
) -> std::io::Result<TcpListener> {
    short_flow_listener(at, receive_buffer_bytes)
}

/// The server's end: accepts the request connection, opens the response connection to the
/// client's listener (`back`), and answers each whole request.
pub(crate) fn server(
    requests: TcpListener,
    back: ShortFlowSettings,
    ex: Arc<Mutex<Exchanges>>,
    stop: Arc<AtomicBool>,
) -> Ended {
    let mut read_bytes = 0u64;
    let result = (|| -> std::io::Result<()> {
        let Some(mut req) = accept_one(&requests, &stop)? else {
            return Ok(());
        };
        let mut resp = connect(&back, &stop)?;
        req.set_read_timeout(Some(POLL))?;
        let mut buf = vec![0u8; 64 * 1024];
        while !stop.load(Ordering::Relaxed) {
            match req.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => {
                    read_bytes += n as u64;
                    let answer = ex.lock().map_or(None, |mut e| e.on_server_read(read_bytes));
                    if let Some(bytes) = answer {
                        write_zeros(&mut resp, bytes, &stop)?;
                    }
                }
                Err(e) if is_timeout(&e) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    })();
    Ended {
        read_bytes,
        error: result
            .err()
            .map(|e| format!("request/response server: {e}")),
    }
}

/// The client's end: opens the request connection (`to`), accepts the response connection,
/// then requests, reads each whole answer, thinks, and asks again until the flow's `stop`.
pub(crate) fn client(
    to: ShortFlowSettings,
    responses: TcpListener,
    ex: Arc<Mutex<Exchanges>>,
    (start, stop_at): (SimTime, Option<SimTime>),
    t0_ns: u64,
    stop: Arc<AtomicBool>,
) -> Ended {
    let mut read_bytes = 0u64;
    let result = (|| -> std::io::Result<()> {
        if !wait_until(t0_ns + start.as_nanos(), &stop) {
            return Ok(());
        }
        let mut req = connect(&to, &stop)?;
        let Some(mut resp) = accept_one(&responses, &stop)? else {
            return Ok(());
        };
        resp.set_read_timeout(Some(POLL))?;
        let mut buf = vec![0u8; 64 * 1024];
        // The next request's instant on the run's time line (`None`: an answer is awaited).
        let mut next = Some(run_time(t0_ns));
        while !stop.load(Ordering::Relaxed) {
            let now = run_time(t0_ns);
            // At the flow's stop no more requests; the outstanding answer is still read.
            if stop_at.is_some_and(|s| now >= s) {
                next = None;
                let idle = ex.lock().map_or(true, |mut e| e.stop());
                if idle {
                    return Ok(());
                }
            }
            if next.is_some_and(|t| now >= t) {
                next = None;
                let bytes = ex.lock().map_or(None, |mut e| e.request(now));
                if let Some(bytes) = bytes {
                    write_zeros(&mut req, bytes, &stop)?;
                }
            }
            // Reads wait at most until the next request is due.
            let wait = next.map_or(POLL, |t| {
                Duration::from_nanos(
                    t.saturating_since(now)
                        .as_nanos()
                        .clamp(1_000_000, 100_000_000),
                )
            });
            resp.set_read_timeout(Some(wait))?;
            match resp.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => {
                    read_bytes += n as u64;
                    let now = run_time(t0_ns);
                    let think = ex
                        .lock()
                        .map_or(None, |mut e| e.on_client_read(now, read_bytes));
                    if let Some(think) = think {
                        next = Some(now + think);
                    }
                }
                Err(e) if is_timeout(&e) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    })();
    Ended {
        read_bytes,
        error: result
            .err()
            .map(|e| format!("request/response client: {e}")),
    }
}
