//! The emulator's own figures: the departure-time error, the packets moved, the driver's
//! wake-ups and CPU, the run's namespaces and the kernel settings applied.

use serde::Serialize;

use super::Outcomes;
use crate::driver::Driver;
use crate::histogram::Percentiles;
use crate::settings::Kernel;

#[derive(Clone, Debug, Serialize)]
pub struct Emulator {
    /// Delivered packets' write instant minus the link model's delivery instant, µs.
    pub departure_error_us: Percentiles,
    pub packets_read: u64,
    pub bytes_read: u64,
    pub packets_written: u64,
    pub bytes_written: u64,
    pub unroutable_pkts: u64,
    pub write_errors: u64,
    pub pcap_errors: u64,
    pub in_links_at_end: u64,
    pub slab_growths: u64,
    pub spin_us: u64,
    pub timer_wakeups: u64,
    pub spins: u64,
    /// The driver's thread ran SCHED_FIFO.
    pub realtime: bool,
    /// How the TUN devices were read and written: "per_packet", or "offload" (super-segments
    /// cut into packets on the way in, coalesced on the way out; `offload` says how much).
    pub io_path: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offload: Option<crate::offload::OffloadStats>,
    /// CPU the driver's thread spent, and that over the run's wall time.
    pub cpu_s: f64,
    pub cpu_fraction: f64,
    pub run_id: String,
    /// Namespaces of killed runs removed at this start.
    pub removed_stale: Vec<String>,
    pub kernel: Kernel,
}

impl Emulator {
    /// What the driver counted over a run of `o.end_ns`, with the run's own particulars.
    pub(super) fn of(driver: &Driver, o: Outcomes<'_>) -> Emulator {
        let s = &driver.stats;
        let cpu_s = s.cpu_ns as f64 / 1e9;
        let wall_s = o.end_ns as f64 / 1e9;
        Emulator {
            departure_error_us: Percentiles::of_ns(&driver.departure_error_ns),
            packets_read: s.read_pkts,
            bytes_read: s.read_bytes,
            packets_written: s.written_pkts,
            bytes_written: s.written_bytes,
            unroutable_pkts: s.unroutable_pkts,
            write_errors: s.write_errors,
            pcap_errors: s.pcap_errors,
            in_links_at_end: driver.in_flight(),
            slab_growths: s.slab_growths,
            spin_us: o.spin_us,
            timer_wakeups: s.timer_wakeups,
            spins: s.spins,
            realtime: s.realtime,
            io_path: if driver.offload.is_some() {
                "offload"
            } else {
                "per_packet"
            },
            offload: driver.offload.as_ref().map(|o| o.stats.clone()),
            cpu_s,
            cpu_fraction: if wall_s > 0.0 { cpu_s / wall_s } else { 0.0 },
            run_id: o.run_id,
            removed_stale: o.removed_stale,
            kernel: o.kernel,
        }
    }
}
