//! A TUN device (IFF_TUN, no packet information header): the kernel's IP packets in and out
//! of a namespace, through a file descriptor this process holds.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;

use crate::EmuError;

/// An open TUN device; the device disappears when this is dropped.
#[derive(Debug)]
pub(crate) struct Tun {
    file: File,
}

impl Tun {
    /// Opens `/dev/net/tun` and attaches it to a new device `name`, in the calling thread's
    /// network namespace; non-blocking.
    pub(crate) fn create(name: &str) -> Result<Tun, EmuError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open("/dev/net/tun")
            .map_err(|e| EmuError::sys("/dev/net/tun", e))?;
        if name.len() >= libc::IFNAMSIZ {
            return Err(EmuError::Internal(format!("device name {name} too long")));
        }
        // SAFETY: `ifreq` is plain old data, valid all zero.
        #[allow(unsafe_code)]
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes()) {
            *dst = src as libc::c_char;
        }
        req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
        // SAFETY: TUNSETIFF reads and writes one `ifreq`, which `req` is, for the duration of
        // the call; the descriptor is open. nix has no safe wrapper for this request.
        #[allow(unsafe_code)]
        let rc = unsafe {
            libc::ioctl(
                std::os::fd::AsRawFd::as_raw_fd(&file),
                libc::TUNSETIFF as _,
                &mut req as *mut libc::ifreq,
            )
        };
        if rc < 0 {
            return Err(EmuError::sys(
                format!("TUNSETIFF {name}"),
                io::Error::last_os_error(),
            ));
        }
        Ok(Tun { file })
    }

    /// One packet into `buf`; `Ok(None)` when none is waiting.
    pub(crate) fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        match self.file.read(buf) {
            Ok(n) => Ok(Some(n)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Hands one packet to the kernel.
    pub(crate) fn send(&mut self, pkt: &[u8]) -> io::Result<()> {
        self.file.write(pkt).map(|_| ())
    }

    /// The device's descriptor, for a caller that does its own reads and writes.
    pub(crate) fn into_file(self) -> File {
        self.file
    }

    pub(crate) fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        std::os::fd::AsFd::as_fd(&self.file)
    }
}
