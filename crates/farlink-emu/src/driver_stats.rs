//! What the real-time driver counts while it runs: packets read and written, drops by cause
//! (all flows and per flow), the data and ACK segments the links delivered per flow, its
//! wake-ups and CPU. The driver and its offload path write it; the report reads it.

use farlink_core::link::N_DROP_CAUSES;
use farlink_core::time::SimTime;

/// What the driver counted.
#[derive(Debug, Default)]
pub(crate) struct DriverStats {
    pub(crate) read_pkts: u64,
    pub(crate) read_bytes: u64,
    pub(crate) written_pkts: u64,
    pub(crate) written_bytes: u64,
    /// Packets the kernel sent that no route takes (not IPv4, or to no end node).
    pub(crate) unroutable_pkts: u64,
    pub(crate) write_errors: u64,
    /// Link drops by cause code, all flows.
    pub(crate) drops: [u64; N_DROP_CAUSES],
    /// Per flow: drops by cause code.
    pub(crate) flow_drops: Vec<[u64; N_DROP_CAUSES]>,
    /// Per flow: data segments the links delivered to the receiver (duplicates included),
    /// and ACKs the receiver sent (segments without data, SYN, FIN or RST): `simulate`'s
    /// `data_segments_delivered` and `acks_sent`.
    pub(crate) flow_data_delivered: Vec<u64>,
    pub(crate) flow_acks_sent: Vec<u64>,
    /// Per flow: when the links last delivered a data segment to the receiver (emulated
    /// time), the end of a program's transfer as the sink's last byte is the built-in's.
    pub(crate) flow_last_data_at: Vec<Option<SimTime>>,
    /// Times the slab grew past its initial size.
    pub(crate) slab_growths: u64,
    /// Wake-ups by the timer, and deadlines reached by spinning.
    pub(crate) timer_wakeups: u64,
    pub(crate) spins: u64,
    /// CPU time the driver's thread spent in its loop, user and system.
    pub(crate) cpu_ns: u64,
    /// The driver ran SCHED_FIFO.
    pub(crate) realtime: bool,
    /// Packets a capture could not take.
    pub(crate) pcap_errors: u64,
}
