//! `TCP_INFO` of a kernel socket, decoded from the kernel's `struct tcp_info` by byte offset
//! (`include/uapi/linux/tcp.h`), so fields newer than the libc crate's copy of the struct
//! (`tcpi_total_rto`, Linux 6.7) are read where the kernel has them.

use std::os::fd::{AsRawFd, BorrowedFd};

/// What the emulator reads of a socket's `TCP_INFO`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TcpInfo {
    pub(crate) rto_us: u32,
    pub(crate) snd_mss: u32,
    pub(crate) rtt_us: u32,
    pub(crate) rttvar_us: u32,
    pub(crate) snd_ssthresh_pkts: u32,
    pub(crate) snd_cwnd_pkts: u32,
    pub(crate) total_retrans: u32,
    pub(crate) bytes_acked: u64,
    /// Data bytes received from the peer (`tcpi_bytes_received`).
    pub(crate) bytes_received: u64,
    pub(crate) bytes_sent: Option<u64>,
    pub(crate) bytes_retrans: Option<u64>,
    /// Retransmission timeouts, SYN's included; `None` before Linux 6.7.
    pub(crate) total_rto: Option<u16>,
    /// Data segments sent, retransmissions included (`tcpi_data_segs_out`, Linux 4.6 on).
    pub(crate) data_segs_out: Option<u32>,
    /// The least RTT measured (`tcpi_min_rtt`); `None` before the first measurement.
    pub(crate) min_rtt_us: Option<u32>,
    /// The kernel's send-side chronographs (Linux 4.10 on), µs: time with data outstanding
    /// (`tcpi_busy_time`, the limits' included), and of it the time held by the peer's
    /// window (`tcpi_rwnd_limited`) and by the send buffer (`tcpi_sndbuf_limited`).
    pub(crate) chrono_us: Option<Chrono>,
}

/// The kernel's send-side chronographs of a socket, µs (`tcp_get_info_chrono_stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Chrono {
    pub(crate) busy_us: u64,
    pub(crate) rwnd_limited_us: u64,
    pub(crate) sndbuf_limited_us: u64,
}

impl TcpInfo {
    /// Decodes the first `len` bytes the kernel filled in.
    pub(crate) fn decode(raw: &[u8]) -> Option<TcpInfo> {
        let u32_at = |o: usize| -> Option<u32> {
            Some(u32::from_ne_bytes(raw.get(o..o + 4)?.try_into().ok()?))
        };
        let u64_at = |o: usize| -> Option<u64> {
            Some(u64::from_ne_bytes(raw.get(o..o + 8)?.try_into().ok()?))
        };
        let u16_at = |o: usize| -> Option<u16> {
            Some(u16::from_ne_bytes(raw.get(o..o + 2)?.try_into().ok()?))
        };
        Some(TcpInfo {
            rto_us: u32_at(8)?,
            snd_mss: u32_at(16)?,
            rtt_us: u32_at(68)?,
            rttvar_us: u32_at(72)?,
            snd_ssthresh_pkts: u32_at(76)?,
            snd_cwnd_pkts: u32_at(80)?,
            total_retrans: u32_at(100)?,
            bytes_acked: u64_at(120)?,
            bytes_received: u64_at(128)?,
            bytes_sent: u64_at(200),
            bytes_retrans: u64_at(208),
            total_rto: u16_at(240),
            data_segs_out: u32_at(156),
            // The kernel's "no sample yet" is ~0U.
            min_rtt_us: u32_at(148).filter(|&v| v != u32::MAX),
            chrono_us: (|| {
                Some(Chrono {
                    busy_us: u64_at(168)?,
                    rwnd_limited_us: u64_at(176)?,
                    sndbuf_limited_us: u64_at(184)?,
                })
            })(),
        })
    }

    /// Reads `TCP_INFO` of socket `fd`.
    pub(crate) fn read(fd: BorrowedFd<'_>) -> std::io::Result<TcpInfo> {
        let mut raw = [0u8; 256];
        let mut len = raw.len() as libc::socklen_t;
        // SAFETY: the kernel writes at most `len` bytes into `raw` and stores the length it
        // wrote in `len`; both outlive the call. nix has no TCP_INFO option.
        #[allow(unsafe_code)]
        let rc = unsafe {
            libc::getsockopt(
                fd.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_INFO,
                raw.as_mut_ptr().cast(),
                &mut len,
            )
        };
        if rc < 0 {
            return Err(std::io::Error::last_os_error());
        }
        TcpInfo::decode(&raw[..(len as usize).min(raw.len())])
            .ok_or_else(|| std::io::Error::other("TCP_INFO shorter than expected"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_read_at_the_kernels_offsets_and_newer_ones_only_if_filled() {
        let mut raw = vec![0u8; 248];
        raw[80..84].copy_from_slice(&10u32.to_ne_bytes());
        raw[100..104].copy_from_slice(&3u32.to_ne_bytes());
        raw[120..128].copy_from_slice(&123_456u64.to_ne_bytes());
        raw[240..242].copy_from_slice(&2u16.to_ne_bytes());
        raw[148..152].copy_from_slice(&u32::MAX.to_ne_bytes());
        raw[156..160].copy_from_slice(&77u32.to_ne_bytes());
        raw[168..176].copy_from_slice(&9_000u64.to_ne_bytes());
        raw[176..184].copy_from_slice(&1_000u64.to_ne_bytes());
        let full = TcpInfo::decode(&raw).unwrap();
        assert_eq!(
            (full.snd_cwnd_pkts, full.total_retrans, full.bytes_acked),
            (10, 3, 123_456)
        );
        assert_eq!(full.total_rto, Some(2));
        assert_eq!((full.data_segs_out, full.min_rtt_us), (Some(77), None));
        let chrono = full.chrono_us.unwrap();
        assert_eq!((chrono.busy_us, chrono.rwnd_limited_us), (9_000, 1_000));
        let old = TcpInfo::decode(&raw[..232]).unwrap();
        assert_eq!(old.total_rto, None);
        // Linux 4.6-4.9: data segments counted, no chronographs yet.
        let older = TcpInfo::decode(&raw[..160]).unwrap();
        assert_eq!((older.data_segs_out, older.chrono_us), (Some(77), None));
        assert!(TcpInfo::decode(&raw[..100]).is_none());
    }
}
