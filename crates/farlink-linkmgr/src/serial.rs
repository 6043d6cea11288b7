//! A modem's serial port: opened non-blocking and raw (no echo, no line discipline, 8 data
//! bits), at the profile's rate, with RTS/CTS flow control if asked for (a pty keeps the flag
//! and has no lines for it to act on, which is harmless), and its carrier (DCD) where the
//! device has modem lines.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{open, OFlag};
use nix::sys::stat::Mode;
use nix::sys::termios::{
    cfmakeraw, cfsetspeed, tcflush, tcgetattr, tcsetattr, BaudRate, ControlFlags, FlushArg, SetArg,
};

/// The rates `baud` may take (the termios constants up to 4 Mbit/s).
pub const STANDARD_BAUDS: [u32; 19] = [
    300, 600, 1200, 1800, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400, 460800, 500000,
    576000, 921600, 1000000, 2000000, 4000000,
];

/// The termios constant of `baud`, if it is a standard rate.
pub fn baud_constant(baud: u32) -> Option<BaudRate> {
    use BaudRate::*;
    let constants = [
        B300, B600, B1200, B1800, B2400, B4800, B9600, B19200, B38400, B57600, B115200, B230400,
        B460800, B500000, B576000, B921600, B1000000, B2000000, B4000000,
    ];
    let i = STANDARD_BAUDS.iter().position(|&b| b == baud)?;
    Some(constants[i])
}

nix::ioctl_read_bad!(tiocmget, nix::libc::TIOCMGET, nix::libc::c_int);

/// An open serial port.
#[derive(Debug)]
pub struct SerialPort {
    fd: OwnedFd,
    path: PathBuf,
    /// Whether the port kept the RTS/CTS setting.
    pub flow_control: bool,
}

impl SerialPort {
    /// Opens `path` raw at `baud`, asking for RTS/CTS with `flow_control`.
    pub fn open(path: &Path, baud: u32, flow_control: bool) -> Result<SerialPort, String> {
        let fd = open(
            path,
            OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| format!("cannot open {}: {}", path.display(), e.desc()))?;
        let mut t = tcgetattr(&fd)
            .map_err(|e| format!("{} is not a serial port: {}", path.display(), e.desc()))?;
        cfmakeraw(&mut t);
        let rate = baud_constant(baud).ok_or_else(|| format!("{baud} is not a standard rate"))?;
        cfsetspeed(&mut t, rate).map_err(|e| format!("{}: baud {baud}: {}", path.display(), e))?;
        // CLOCAL: reads and writes do not wait on the carrier; the daemon watches DCD itself.
        // HUPCL: closing the port (a stop, a kill) drops DTR, and the modem hangs up.
        t.control_flags |= ControlFlags::CLOCAL | ControlFlags::CREAD | ControlFlags::HUPCL;
        t.control_flags.set(ControlFlags::CRTSCTS, flow_control);
        tcsetattr(&fd, SetArg::TCSANOW, &t)
            .map_err(|e| format!("{}: cannot set raw mode: {}", path.display(), e.desc()))?;
        let stuck = tcgetattr(&fd)
            .map(|t| t.control_flags.contains(ControlFlags::CRTSCTS))
            .unwrap_or(false);
        // What a previous user of the port left in it is not an answer to us.
        let _ = tcflush(&fd, FlushArg::TCIOFLUSH);
        Ok(SerialPort {
            fd,
            path: path.to_path_buf(),
            flow_control: stuck,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    pub fn borrow(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The carrier (DCD), or `None` where the device has no modem lines (a pty).
    pub fn carrier(&self) -> Option<bool> {
        let mut bits: nix::libc::c_int = 0;
        // SAFETY: TIOCMGET writes one c_int through the pointer, which points to `bits`,
        // alive and writable for the call.
        #[allow(unsafe_code)]
        let r = unsafe { tiocmget(self.fd.as_raw_fd(), &mut bits) };
        r.ok().map(|_| bits & nix::libc::TIOCM_CAR != 0)
    }

    /// Reads what is there: `Ok(0)` when nothing is, `Err` when the port is gone (EOF, EIO:
    /// the device was unplugged or the far side of a pty closed).
    pub fn read(&self, buf: &mut [u8]) -> Result<usize, String> {
        match nix::unistd::read(&self.fd, buf) {
            Ok(0) => Err("the port reads end of file".into()),
            Ok(n) => Ok(n),
            Err(Errno::EAGAIN | Errno::EINTR) => Ok(0),
            Err(e) => Err(format!("read: {}", e.desc())),
        }
    }

    /// Writes as much of `data` as the port takes now.
    pub fn write(&self, data: &[u8]) -> Result<usize, String> {
        match nix::unistd::write(&self.fd, data) {
            Ok(n) => Ok(n),
            Err(Errno::EAGAIN | Errno::EINTR) => Ok(0),
            Err(e) => Err(format!("write: {}", e.desc())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::pty::openpty;

    #[test]
    fn a_pty_opens_raw_without_a_carrier() {
        let pty = openpty(None, None).unwrap();
        let name = nix::unistd::ttyname(&pty.slave).unwrap();
        let port = SerialPort::open(&name, 9600, true).unwrap();
        assert_eq!(port.carrier(), None);
        let mut buf = [0u8; 16];
        assert_eq!(port.read(&mut buf), Ok(0), "non-blocking");
        assert_eq!(port.write(b"AT\r"), Ok(3));
        let mut got = [0u8; 3];
        assert_eq!(nix::unistd::read(&pty.master, &mut got), Ok(3));
        assert_eq!(&got, b"AT\r", "raw: no CR translation");
        // The far side goes away: the port reports it.
        drop(pty.master);
        assert!(port.read(&mut buf).is_err());
        assert!(SerialPort::open(Path::new("/nonexistent/tty"), 9600, true)
            .unwrap_err()
            .starts_with("cannot open /nonexistent/tty"));
        assert_eq!(baud_constant(9601), None);
    }
}
