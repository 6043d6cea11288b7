//! The built-in workload: one kernel TCP bulk transfer per flow, from a thread in the sender's
//! namespace to a sink in the receiver's, with `TCP_INFO` sampled on the sender's socket.
//!
//! Every blocking call has a 100 ms timeout and looks at the run's stop flag between calls, so
//! a run that is stopped (Ctrl-C, the end of its duration) never waits on a socket.

use std::io::{Read, Write};
use std::net::{SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use farlink_core::scenario::Shutdown;
use farlink_core::tcp::payload::{Digest, PayloadStream};
use nix::sys::socket::{self, sockopt, AddressFamily, SockFlag, SockType, SockaddrIn};

use crate::goodput::ReadRecord;
use crate::sockets::{finish_write, is_timeout, timeval, wait_acknowledged};
use crate::tcpinfo::TcpInfo;

const POLL: Duration = Duration::from_millis(100);
const WRITE_POLL: Duration = Duration::from_millis(10);
/// How often `TCP_INFO` is sampled.
pub(crate) const SAMPLE_INTERVAL: Duration = Duration::from_millis(10);

/// What one flow's sender does.
#[derive(Clone, Debug)]
pub(crate) struct SenderPlan {
    pub(crate) peer: SocketAddrV4,
    pub(crate) size_bytes: u64,
    /// Monotonic ns at which to connect.
    pub(crate) start_ns: u64,
    /// Monotonic ns at which the application stops writing, if it does.
    pub(crate) stop_ns: Option<u64>,
    pub(crate) congestion: String,
    pub(crate) send_buffer_bytes: Option<u64>,
    /// The seed of the bytes written (`farlink_core::tcp::payload`), which the sink's digest
    /// checks; `None`: zeros (the throughput benchmark, where generating them would cost).
    pub(crate) payload_seed: Option<u64>,
    /// A Multipath TCP socket (`IPPROTO_MPTCP`) in place of a TCP one.
    pub(crate) mptcp: bool,
    /// When the writing half is shut down (`app.shutdown`): at once after the last write, or
    /// once the peer has acknowledged every byte.
    pub(crate) shutdown: Shutdown,
}

/// One `TCP_INFO` sample.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sample {
    pub(crate) at_ns: u64,
    pub(crate) info: TcpInfo,
}

/// What the sender of one flow saw.
#[derive(Debug, Default)]
pub(crate) struct SenderOutcome {
    /// Monotonic ns of the first write (after the connection is up).
    pub(crate) first_write_ns: Option<u64>,
    pub(crate) connected_ns: Option<u64>,
    pub(crate) connect_started_ns: u64,
    pub(crate) written_bytes: u64,
    /// The application stopped writing at its stop time (before `size_bytes`).
    pub(crate) stopped: bool,
    pub(crate) samples: Vec<Sample>,
    pub(crate) last: Option<TcpInfo>,
    /// Entries into fast recovery, where the sender counts them itself (farlink's sender); a
    /// kernel sender's are its namespace's (`nstat.rs`).
    pub(crate) fast_retransmits: Option<u64>,
    pub(crate) error: Option<String>,
    /// What farlink's sender counted on the wire (none for a kernel sender).
    pub(crate) wire: Option<crate::sender_timing::WireSummary>,
}

/// What the sink of one flow saw.
#[derive(Debug, Default)]
pub(crate) struct SinkOutcome {
    pub(crate) received_bytes: u64,
    pub(crate) last_byte_ns: Option<u64>,
    pub(crate) eof: bool,
    pub(crate) error: Option<String>,
    /// The digest of the bytes read, in order (`farlink_core::tcp::payload::Digest`).
    pub(crate) digest: u64,
    /// The bytes read over time (the flow's `goodput` trace, `goodput.rs`).
    pub(crate) reads: ReadRecord,
}

/// The sink: accepts one connection on `addr`, reads to the end, counts. Runs in the receiver's
/// namespace; `receive_buffer_bytes` is set on the listener so the connection inherits it
/// before its window is first advertised.
pub(crate) fn sink(
    addr: SocketAddrV4,
    receive_buffer_bytes: Option<u64>,
    ready: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    now_ns: fn() -> u64,
    digest_bytes: bool,
    mptcp: bool,
) -> SinkOutcome {
    let mut out = SinkOutcome::default();
    let mut digest = Digest::new();
    let result = (|| -> std::io::Result<()> {
        let fd = stream_socket(mptcp)?;
        socket::setsockopt(&fd, sockopt::ReuseAddr, &true)?;
        if let Some(b) = receive_buffer_bytes {
            socket::setsockopt(&fd, sockopt::RcvBuf, &crate::sockets::buffer_option(b))?;
        }
        socket::setsockopt(&fd, sockopt::ReceiveTimeout, &timeval(POLL))?;
        socket::bind(
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            &SockaddrIn::from(addr),
        )?;
        socket::listen(&fd, socket::Backlog::new(4).map_err(std::io::Error::from)?)?;
        let listener = TcpListener::from(fd);
        ready.store(true, Ordering::Release);
        let mut conn = loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            match listener.accept() {
                Ok((c, _)) => break c,
                Err(e) if is_timeout(&e) => continue,
                Err(e) => return Err(e),
            }
        };
        conn.set_read_timeout(Some(POLL))?;
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            match conn.read(&mut buf) {
                Ok(0) => {
                    out.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    out.received_bytes += n as u64;
                    let at_ns = now_ns();
                    out.last_byte_ns = Some(at_ns);
                    out.reads.read(at_ns, out.received_bytes);
                    if digest_bytes {
                        digest.update(&buf[..n]);
                    }
                }
                Err(e) if is_timeout(&e) => continue,
                Err(e) => return Err(e),
            }
        }
    })();
    if let Err(e) = result {
        out.error = Some(format!("sink: {e}"));
    }
    out.digest = digest.value();
    out
}

/// An IPv4 stream socket: TCP, or Multipath TCP (which nix does not name).
pub(crate) fn stream_socket(mptcp: bool) -> std::io::Result<std::os::fd::OwnedFd> {
    if !mptcp {
        return Ok(socket::socket(
            AddressFamily::Inet,
            SockType::Stream,
            SockFlag::SOCK_CLOEXEC,
            None,
        )?);
    }
    // SAFETY: socket(2) with constant arguments; the descriptor it returns is owned here.
    #[allow(unsafe_code)]
    let fd = unsafe {
        libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            libc::IPPROTO_MPTCP,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a descriptor just opened and not owned elsewhere.
    #[allow(unsafe_code)]
    Ok(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) })
}

/// The sender: connects, writes `size_bytes`, closes its side, waits for the sink to close,
/// sampling `TCP_INFO` all along. Runs in the sender's namespace.
pub(crate) fn sender(
    plan: SenderPlan,
    stop: Arc<AtomicBool>,
    now_ns: fn() -> u64,
) -> SenderOutcome {
    let mut out = SenderOutcome::default();
    while now_ns() < plan.start_ns {
        if stop.load(Ordering::Relaxed) {
            return out;
        }
        std::thread::sleep(Duration::from_nanos(
            (plan.start_ns - now_ns()).min(10_000_000),
        ));
    }
    out.connect_started_ns = now_ns();
    let result = (|| -> std::io::Result<()> {
        let fd = stream_socket(plan.mptcp)?;
        if let Some(b) = plan.send_buffer_bytes {
            socket::setsockopt(&fd, sockopt::SndBuf, &crate::sockets::buffer_option(b))?;
        }
        socket::setsockopt(
            &fd,
            sockopt::TcpCongestion,
            &std::ffi::OsString::from(&plan.congestion),
        )?;
        // Bounds connect() and every write, so the application's stop time is kept within it.
        socket::setsockopt(&fd, sockopt::SendTimeout, &timeval(WRITE_POLL))?;
        let raw = std::os::fd::AsRawFd::as_raw_fd(&fd);
        loop {
            match socket::connect(raw, &SockaddrIn::from(plan.peer)) {
                Ok(()) => break,
                Err(nix::errno::Errno::EINPROGRESS | nix::errno::Errno::EALREADY) => {
                    // Timed out while the handshake goes on: wait for it.
                    if stop.load(Ordering::Relaxed) {
                        return Ok(());
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(nix::errno::Errno::EISCONN) => break,
                Err(e) => return Err(e.into()),
            }
        }
        out.connected_ns = Some(now_ns());
        let mut conn = TcpStream::from(fd);
        conn.set_read_timeout(Some(POLL))?;
        let mut chunk = vec![0u8; 64 * 1024];
        // A thread of its own samples TCP_INFO: writes block while the send buffer is full.
        let sampling = Arc::new(AtomicBool::new(true));
        let sampler = {
            let conn = conn.try_clone()?;
            let sampling = Arc::clone(&sampling);
            std::thread::spawn(move || {
                let mut samples = Vec::with_capacity(4096);
                while sampling.load(Ordering::Relaxed) {
                    if let Ok(info) = TcpInfo::read(conn.as_fd()) {
                        samples.push(Sample {
                            at_ns: now_ns(),
                            info,
                        });
                    }
                    std::thread::sleep(SAMPLE_INTERVAL);
                }
                samples
            })
        };
        let result = transfer(&plan, &mut conn, &mut chunk, &stop, &mut out, now_ns);
        sampling.store(false, Ordering::Relaxed);
        out.samples = sampler.join().unwrap_or_default();
        out.last = TcpInfo::read(conn.as_fd()).ok();
        result
    })();
    if let Err(e) = result {
        out.error = Some(format!("sender: {e}"));
    }
    out
}

/// Writes the flow's bytes, closes the sending side (once they are acknowledged, if the plan
/// says so) and waits for the sink to close.
fn transfer(
    plan: &SenderPlan,
    conn: &mut TcpStream,
    chunk: &mut [u8],
    stop: &AtomicBool,
    out: &mut SenderOutcome,
    now_ns: fn() -> u64,
) -> std::io::Result<()> {
    {
        let stream = plan.payload_seed.map(PayloadStream::new);
        while out.written_bytes < plan.size_bytes {
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            if plan.stop_ns.is_some_and(|s| now_ns() >= s) {
                out.stopped = true;
                break;
            }
            let want = (plan.size_bytes - out.written_bytes).min(chunk.len() as u64) as usize;
            if out.first_write_ns.is_none() {
                out.first_write_ns = Some(now_ns());
            }
            if let Some(stream) = &stream {
                stream.fill(out.written_bytes, &mut chunk[..want]);
            }
            match conn.write(&chunk[..want]) {
                Ok(n) => out.written_bytes += n as u64,
                Err(e) if is_timeout(&e) => {}
                Err(e) => return Err(e),
            }
        }
        if plan.shutdown == Shutdown::Acknowledged {
            wait_acknowledged(conn, stop)?;
        }
        finish_write(conn, stop)
    }
}
