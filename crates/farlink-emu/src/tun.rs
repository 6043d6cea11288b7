//! A TUN device (IFF_TUN, no packet information header): the kernel's IP packets in and out
//! of a namespace, through a file descriptor this process holds. Opened with offloads
//! (`IFF_VNET_HDR`, then `TUNSETOFFLOAD` with checksum offload and TSO for IPv4 and IPv6),
//! every read and write starts with a `virtio_net_hdr` (`farlink_core::tcp::gso`), and the
//! kernel hands over TCP super-segments of up to 64 KiB (and takes them back the same way).

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;

use crate::error::EmuError;

/// An open TUN device; the device disappears when this is dropped.
#[derive(Debug)]
pub struct Tun {
    file: File,
}

impl Tun {
    /// Opens `/dev/net/tun` and attaches it to a new device `name`, in the calling thread's
    /// network namespace; non-blocking.
    pub fn create(name: &str) -> Result<Tun, EmuError> {
        Tun::create_with(name, false)
    }

    /// As [`Tun::create`]; with `offload`, behind a `virtio_net_hdr` with checksum offload and
    /// TSO on.
    pub fn create_with(name: &str, offload: bool) -> Result<Tun, EmuError> {
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
        let vnet = if offload { libc::IFF_VNET_HDR } else { 0 };
        req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI | vnet) as libc::c_short;
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
        if offload {
            set_offloads(&file, name)?;
        }
        Ok(Tun { file })
    }

    /// One packet into `buf`; `Ok(None)` when none is waiting.
    pub fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        match self.file.read(buf) {
            Ok(n) => Ok(Some(n)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Hands one packet to the kernel.
    pub fn send(&mut self, pkt: &[u8]) -> io::Result<()> {
        self.file.write(pkt).map(|_| ())
    }

    /// The device's descriptor, for a caller that does its own reads and writes.
    pub fn into_file(self) -> File {
        self.file
    }

    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        std::os::fd::AsFd::as_fd(&self.file)
    }
}

/// The header's size (the 10 bytes without `num_buffers`, which is the default, said
/// explicitly), then checksum offload and TSO: the device then takes and gives super-segments.
fn set_offloads(file: &File, name: &str) -> Result<(), EmuError> {
    let fd = std::os::fd::AsRawFd::as_raw_fd(file);
    let size: libc::c_int = farlink_core::tcp::gso::VNET_HDR_BYTES as libc::c_int;
    // SAFETY: TUNSETVNETHDRSZ reads one `int` through the pointer, valid for the call.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::ioctl(fd, libc::TUNSETVNETHDRSZ as _, &size as *const libc::c_int) };
    if rc < 0 {
        return Err(EmuError::sys(
            format!("TUNSETVNETHDRSZ {name}"),
            io::Error::last_os_error(),
        ));
    }
    let features = libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO6;
    // SAFETY: TUNSETOFFLOAD takes its flags as the argument itself, no memory.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::ioctl(fd, libc::TUNSETOFFLOAD as _, features as libc::c_ulong) };
    if rc < 0 {
        return Err(EmuError::sys(
            format!("TUNSETOFFLOAD {name}"),
            io::Error::last_os_error(),
        ));
    }
    Ok(())
}
