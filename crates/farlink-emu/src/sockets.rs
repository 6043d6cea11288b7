//! The socket pieces the emulator's competing traffic shares (`traffic.rs`, `exchange.rs`): a
//! kernel TCP connection with its controller and send buffer, a listener with its receive
//! buffer, and the bounded waits that look at the run's stop flag.

use std::io::Read;
use std::net::{Shutdown, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nix::sys::socket::{self, sockopt, AddressFamily, SockFlag, SockType, SockaddrIn};
use nix::sys::time::TimeVal;

use crate::clock::monotonic_ns;

pub(crate) const POLL: Duration = Duration::from_millis(100);
pub(crate) const WRITE_POLL: Duration = Duration::from_millis(10);
pub(crate) fn timeval(d: Duration) -> TimeVal {
    TimeVal::new(d.as_secs() as _, d.subsec_micros() as _)
}

pub(crate) fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}

/// Sleeps until monotonic `at_ns`; false if the run was stopped first.
pub(crate) fn wait_until(at_ns: u64, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = monotonic_ns();
        if now >= at_ns {
            return true;
        }
        std::thread::sleep(Duration::from_nanos((at_ns - now).min(10_000_000)));
    }
}

/// What a class's connections need besides their arrival.
#[derive(Clone, Debug)]
pub(crate) struct ShortFlowSettings {
    pub(crate) peer: SocketAddrV4,
    pub(crate) congestion: String,
    pub(crate) send_buffer_bytes: Option<u64>,
}

/// `bytes` as the value of SO_SNDBUF or SO_RCVBUF: the option is an int, which the kernel
/// doubles, so a larger scenario buffer is taken as the most the option can say.
pub(crate) fn buffer_option(bytes: u64) -> usize {
    bytes.min(i32::MAX as u64 / 2) as usize
}

/// A kernel TCP connection to `settings.peer` with its controller and send buffer, writes
/// bounded by 10 ms; an error if the run stops before it is up.
pub(crate) fn connect(
    settings: &ShortFlowSettings,
    stop: &AtomicBool,
) -> std::io::Result<TcpStream> {
    let fd = socket::socket(
        AddressFamily::Inet,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    if let Some(b) = settings.send_buffer_bytes {
        socket::setsockopt(&fd, sockopt::SndBuf, &buffer_option(b))?;
    }
    socket::setsockopt(
        &fd,
        sockopt::TcpCongestion,
        &std::ffi::OsString::from(&settings.congestion),
    )?;
    // Bounds connect() and every write, so the stop flag is looked at.
    socket::setsockopt(&fd, sockopt::SendTimeout, &timeval(WRITE_POLL))?;
    let raw = std::os::fd::AsRawFd::as_raw_fd(&fd);
    loop {
        match socket::connect(raw, &SockaddrIn::from(settings.peer)) {
            Ok(()) | Err(nix::errno::Errno::EISCONN) => break,
            Err(nix::errno::Errno::EINPROGRESS | nix::errno::Errno::EALREADY) => {
                if stop.load(Ordering::Relaxed) {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::Interrupted,
                        "the run stopped during the handshake",
                    ));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(TcpStream::from(fd))
}

/// A short-flow class's listener on `at`, its receive buffer set before any connection's
/// window is advertised.
pub(crate) fn short_flow_listener(
    at: SocketAddrV4,
    receive_buffer_bytes: u64,
) -> std::io::Result<TcpListener> {
    let fd = socket::socket(
        AddressFamily::Inet,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    socket::setsockopt(&fd, sockopt::ReuseAddr, &true)?;
    let rcvbuf = buffer_option(receive_buffer_bytes);
    socket::setsockopt(&fd, sockopt::RcvBuf, &rcvbuf)?;
    socket::setsockopt(&fd, sockopt::ReceiveTimeout, &timeval(POLL))?;
    socket::bind(std::os::fd::AsRawFd::as_raw_fd(&fd), &SockaddrIn::from(at))?;
    socket::listen(
        &fd,
        socket::Backlog::new(512).map_err(std::io::Error::from)?,
    )?;
    Ok(TcpListener::from(fd))
}

/// How often a sender that shuts down once everything is acknowledged looks again.
const ACKNOWLEDGED_POLL: Duration = Duration::from_millis(2);

/// The bytes written on `fd` that the peer has not acknowledged yet (SIOCOUTQ). On a Multipath
/// TCP socket it is the connection's count, written less DATA_ACKed (`mptcp_ioctl` in Linux's
/// net/mptcp/protocol.c), whatever the subflows carry.
pub(crate) fn unacknowledged_bytes(fd: BorrowedFd<'_>) -> std::io::Result<u64> {
    let mut bytes: libc::c_int = 0;
    // SAFETY: SIOCOUTQ (TIOCOUTQ's number) writes one int through the pointer, which lives
    // across the call; `fd` is a descriptor borrowed for it.
    #[allow(unsafe_code)]
    let rc = unsafe {
        libc::ioctl(
            fd.as_raw_fd(),
            libc::TIOCOUTQ as _,
            &mut bytes as *mut libc::c_int,
        )
    };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(u64::try_from(bytes).unwrap_or(0))
}

/// Waits until the peer has acknowledged every byte written on `conn`, or the run stops: an
/// application that keeps its connection open until its peer has everything (`app.shutdown =
/// "acknowledged"`, `scenario/shutdown.rs`).
pub(crate) fn wait_acknowledged(conn: &TcpStream, stop: &AtomicBool) -> std::io::Result<()> {
    while !stop.load(Ordering::Relaxed) {
        if unacknowledged_bytes(conn.as_fd())? == 0 {
            break;
        }
        std::thread::sleep(ACKNOWLEDGED_POLL);
    }
    Ok(())
}

/// Ends the writing half of `conn` and reads until the peer closes its own (or the run stops):
/// the bulk transfer's and a short flow's end, each sender then knowing its last byte was read.
pub(crate) fn finish_write(conn: &mut TcpStream, stop: &AtomicBool) -> std::io::Result<()> {
    conn.shutdown(Shutdown::Write)?;
    let mut scratch = [0u8; 512];
    while !stop.load(Ordering::Relaxed) {
        match conn.read(&mut scratch) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if is_timeout(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::net::Ipv4Addr;
    use std::sync::Arc;
    use std::time::Instant;

    use super::*;

    const WRITTEN_BYTES: usize = 32 * 1024;
    /// How long the peer leaves its small receive buffer full before reading.
    const PEER_ASLEEP: Duration = Duration::from_millis(300);

    /// A connection over loopback (Multipath TCP if `mptcp`) to a listener whose receive buffer
    /// holds a few kilobytes, with a send buffer that holds everything written; `None` where
    /// the kernel has no Multipath TCP.
    fn pair(mptcp: bool) -> Option<(TcpStream, TcpListener)> {
        let listener = if mptcp {
            let fd = crate::bulk::stream_socket(true).ok()?;
            socket::setsockopt(&fd, sockopt::RcvBuf, &4096).unwrap();
            socket::bind(fd.as_raw_fd(), &SockaddrIn::new(127, 0, 0, 1, 0)).unwrap();
            socket::listen(&fd, socket::Backlog::new(1).unwrap()).unwrap();
            TcpListener::from(fd)
        } else {
            short_flow_listener(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0), 4096).unwrap()
        };
        let std::net::SocketAddr::V4(at) = listener.local_addr().unwrap() else {
            unreachable!("bound to an IPv4 address")
        };
        let fd = crate::bulk::stream_socket(mptcp).unwrap();
        socket::setsockopt(&fd, sockopt::SndBuf, &(1 << 20)).unwrap();
        socket::connect(fd.as_raw_fd(), &SockaddrIn::from(at)).unwrap();
        Some((TcpStream::from(fd), listener))
    }

    /// Writes, then waits for the acknowledgements of a peer that reads only after
    /// [`PEER_ASLEEP`]; returns how long the wait took from the first write.
    fn wait_for_a_sleeping_peer(mptcp: bool) -> Option<Duration> {
        let (mut conn, listener) = pair(mptcp)?;
        let peer = std::thread::spawn(move || {
            let (mut c, _) = listener.accept().unwrap();
            std::thread::sleep(PEER_ASLEEP);
            let mut all = Vec::new();
            c.read_to_end(&mut all).unwrap();
            all.len()
        });
        let started = Instant::now();
        conn.write_all(&vec![7u8; WRITTEN_BYTES]).unwrap();
        assert!(
            unacknowledged_bytes(conn.as_fd()).unwrap() > 0,
            "the peer's small buffer holds everything: nothing to wait for"
        );
        wait_acknowledged(&conn, &AtomicBool::new(false)).unwrap();
        let waited = started.elapsed();
        assert_eq!(unacknowledged_bytes(conn.as_fd()).unwrap(), 0);
        conn.shutdown(Shutdown::Write).unwrap();
        assert_eq!(peer.join().unwrap(), WRITTEN_BYTES);
        Some(waited)
    }

    #[test]
    fn a_tcp_sender_waits_until_its_peer_has_acknowledged_every_byte() {
        let waited = wait_for_a_sleeping_peer(false).unwrap();
        assert!(
            waited >= PEER_ASLEEP - POLL / 2,
            "returned after {waited:?}"
        );
    }

    #[test]
    fn a_multipath_sender_waits_for_the_connection_level_acknowledgement() {
        let Some(waited) = wait_for_a_sleeping_peer(true) else {
            eprintln!("skipped: no Multipath TCP in this kernel (net.mptcp.enabled)");
            return;
        };
        assert!(
            waited >= PEER_ASLEEP - POLL / 2,
            "returned after {waited:?}"
        );
    }

    #[test]
    fn the_wait_ends_when_the_run_stops() {
        let (mut conn, listener) = pair(false).unwrap();
        let (_peer, _) = listener.accept().unwrap();
        conn.write_all(&vec![7u8; WRITTEN_BYTES]).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopper = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                stop.store(true, Ordering::Relaxed);
            })
        };
        let started = Instant::now();
        wait_acknowledged(&conn, &stop).unwrap();
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(unacknowledged_bytes(conn.as_fd()).unwrap() > 0);
        stopper.join().unwrap();
    }
}
