//! The driver's offload path (`--offload`): TUN devices opened with `IFF_VNET_HDR` and TSO, so
//! the sending kernel hands over TCP super-segments of up to 64 KiB in one read, and the
//! receiving kernel takes GRO-style super-segments in one write.
//!
//! The link models still see one MSS-sized packet at a time: each read is cut
//! ([`Segmenter`]) into the packets the kernel's own software GSO would have made, each in
//! a slot of the slab, offered one by one; queue limits, losses and departure instants stay per
//! packet. On the way out, the packets the links deliver in one pass of the driver's loop (all
//! due by the instant it looked) are handed to a [`Coalescer`] per device, which joins the
//! in-order segments of a flow; the pass ends with a flush, so no packet waits for a later
//! one. Each packet's departure error is taken when the write carrying it is made.

use std::collections::VecDeque;

use farlink_core::tcp::gso::{Coalesced, Coalescer, Segmenter, VnetHdr, VNET_HDR_BYTES};
use farlink_core::time::SimTime;
use hdrhistogram::Histogram;
use serde::Serialize;

use crate::driver_stats::DriverStats;
use crate::tun::Tun;

/// What the offload path did, beside the per-packet counts of the driver.
#[derive(Clone, Debug, Default, Serialize)]
pub struct OffloadStats {
    /// Reads from the TUN devices, and those that were GSO super-segments.
    pub reads: u64,
    pub super_segments_read: u64,
    /// Writes to the TUN devices, those that were coalesced super-segments, and the packets
    /// these carried.
    pub writes: u64,
    pub super_segments_written: u64,
    pub packets_coalesced: u64,
    /// Reads whose `virtio_net_hdr` or packet could not be taken (dropped, as on a wire).
    pub header_errors: u64,
}

/// Where a write's packets are counted.
pub(crate) struct Tally<'a> {
    /// Monotonic ns of emulated time zero: each write reads the clock once, as it is made.
    pub(crate) t0_ns: u64,
    pub(crate) stats: &'a mut DriverStats,
    pub(crate) departure_error_ns: &'a mut Histogram<u64>,
}

impl<'a> Tally<'a> {
    pub(crate) fn new(
        t0_ns: u64,
        stats: &'a mut DriverStats,
        departure_error_ns: &'a mut Histogram<u64>,
    ) -> Self {
        Tally {
            t0_ns,
            stats,
            departure_error_ns,
        }
    }
}

#[derive(Debug)]
pub(crate) struct Offload {
    read_buf: Vec<u8>,
    /// Per TUN device: the coalescer, and the delivery instant and size of each packet handed
    /// to it and not yet written, in order.
    coalescers: Vec<Coalescer>,
    due: Vec<VecDeque<(SimTime, u32)>>,
    pub(crate) stats: OffloadStats,
}

impl Offload {
    pub(crate) fn new(tuns: usize) -> Offload {
        Offload {
            read_buf: vec![0; VNET_HDR_BYTES + u16::MAX as usize],
            coalescers: (0..tuns).map(|_| Coalescer::new()).collect(),
            due: (0..tuns).map(|_| VecDeque::with_capacity(64)).collect(),
            stats: OffloadStats::default(),
        }
    }

    /// One read from `tun`, cut into the packets it carries.
    pub(crate) fn read(&mut self, tun: &mut Tun) -> std::io::Result<Read<'_>> {
        let Some(n) = tun.recv(&mut self.read_buf)? else {
            return Ok(Read::Nothing);
        };
        self.stats.reads += 1;
        let cut = VnetHdr::parse(&self.read_buf[..n])
            .and_then(|h| Segmenter::new(h, &self.read_buf[VNET_HDR_BYTES..n]));
        Ok(match cut {
            Ok(seg) => {
                if seg.is_gso() {
                    self.stats.super_segments_read += 1;
                }
                Read::Packets(seg)
            }
            Err(_) => {
                self.stats.header_errors += 1;
                Read::Bad
            }
        })
    }

    /// Hands the packet `pkt`, delivered by the links at `at`, to device `to`'s coalescer;
    /// whatever that writes is written to `tun` and counted.
    pub(crate) fn push(
        &mut self,
        to: usize,
        pkt: &[u8],
        at: SimTime,
        tun: &mut Tun,
        tally: &mut Tally<'_>,
    ) {
        self.due[to].push_back((at, pkt.len() as u32));
        let (coalescer, due, stats) =
            (&mut self.coalescers[to], &mut self.due[to], &mut self.stats);
        let mut write = |o: Coalesced<'_>| write(o, tun, due, stats, tally);
        if coalescer.push(pkt, &mut write).is_err() {
            // Longer than any packet: the slab's slots cannot hold one.
            due.pop_back();
            tally.stats.write_errors += 1;
        }
    }

    /// Writes what device `to`'s coalescer holds.
    pub(crate) fn flush(&mut self, to: usize, tun: &mut Tun, tally: &mut Tally<'_>) {
        let (coalescer, due, stats) =
            (&mut self.coalescers[to], &mut self.due[to], &mut self.stats);
        coalescer.flush(&mut |o: Coalesced<'_>| write(o, tun, due, stats, tally));
    }
}

/// What one read gave.
pub(crate) enum Read<'a> {
    Nothing,
    /// A header or packet that could not be taken (counted).
    Bad,
    Packets(Segmenter<'a>),
}

/// One write of `o` to `tun`, its packets (the first of `due`) counted.
fn write(
    o: Coalesced<'_>,
    tun: &mut Tun,
    due: &mut VecDeque<(SimTime, u32)>,
    stats: &mut OffloadStats,
    tally: &mut Tally<'_>,
) {
    let now_ns = crate::clock::monotonic_ns().saturating_sub(tally.t0_ns);
    let ok = tun.send(o.bytes).is_ok();
    stats.writes += 1;
    if o.segments > 1 {
        stats.super_segments_written += 1;
        stats.packets_coalesced += u64::from(o.segments);
    }
    for _ in 0..o.segments {
        let Some((at, len)) = due.pop_front() else {
            break;
        };
        if ok {
            tally.stats.written_pkts += 1;
            tally.stats.written_bytes += u64::from(len);
            let late_ns = now_ns.saturating_sub(at.as_nanos());
            tally.departure_error_ns.saturating_record(late_ns.max(1));
        } else {
            tally.stats.write_errors += 1;
        }
    }
}
