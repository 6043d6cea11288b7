//! The socket pieces the emulator's competing traffic shares (`traffic.rs`, `exchange.rs`): a
//! kernel TCP connection with its controller and send buffer, a listener with its receive
//! buffer, and the bounded waits that look at the run's stop flag.

use std::io::Read;
use std::net::{Shutdown, SocketAddrV4, TcpListener, TcpStream};
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
