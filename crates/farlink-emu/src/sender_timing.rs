//! How promptly farlink's sender on the wire answers what it receives, and what its own work
//! costs: the ACK-to-send latency and the time spent inside the sender's calls; with its
//! counters, what the result says of that sender ([`WireSummary`]).
//!
//! The ACK-to-send latency runs from the instant the driver hands the sender a packet (an ACK
//! the kernel receiver sent, delivered by the last link of the route) to the instant the
//! sender has written the first segment that packet released, and, separately, the last one
//! of the burst it released (the sender writes until it has nothing more to send). When several
//! packets reach the sender before it is polled, the earliest starts the clock; a packet that
//! releases nothing gives no sample. The clock is CLOCK_MONOTONIC (a vDSO read, tens of
//! nanoseconds), so the measurement stays on: a few reads per packet, no allocation (the
//! histograms are allocated once, at the start).

use hdrhistogram::Histogram;

use crate::clock::monotonic_ns;
use crate::histogram::{ns_histogram, Percentiles};

/// What farlink's sender counted on the wire.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct WireSummary {
    pub packets_sent: u64,
    pub packets_received: u64,
    pub dsack_blocks: u64,
    pub out_of_window: u64,
    pub malformed: u64,
    pub window_probes: u64,
    pub fin_transmissions: u64,
    /// The sender's ACK-to-send latency and busy time.
    pub timing: SenderTimingSummary,
}

impl WireSummary {
    pub(crate) fn new(
        w: &farlink_core::tcp::wire_client::WireStats,
        window_probes: u64,
        timing: SenderTimingSummary,
    ) -> Self {
        WireSummary {
            packets_sent: w.packets_sent,
            packets_received: w.packets_received,
            dsack_blocks: w.dsack_blocks,
            out_of_window: w.out_of_window,
            malformed: w.malformed,
            window_probes,
            fin_transmissions: w.fin_transmissions,
            timing,
        }
    }
}

/// One sender's latency histograms and busy time.
pub(crate) struct SenderTiming {
    first_ns: Histogram<u64>,
    burst_ns: Histogram<u64>,
    /// When the earliest packet not yet answered was handed to the sender.
    received_ns: Option<u64>,
    /// When the last segment of the burst in progress was written.
    last_write_ns: Option<u64>,
    busy_ns: u64,
}

/// What [`SenderTiming`] measured, for the result.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct SenderTimingSummary {
    /// A received packet to the first segment it released, µs.
    pub ack_to_first_send_us: Percentiles,
    /// A received packet to the last segment of the burst it released, µs.
    pub ack_to_burst_end_us: Percentiles,
    /// Time spent inside the sender's own calls (packets in, segments out, timers), s: its
    /// CPU, as it runs on the driver's thread.
    pub busy_s: f64,
}

impl SenderTiming {
    pub(crate) fn new() -> SenderTiming {
        SenderTiming {
            first_ns: ns_histogram(),
            burst_ns: ns_histogram(),
            received_ns: None,
            last_write_ns: None,
            busy_ns: 0,
        }
    }

    /// Runs `call` (one of the sender's entry points), adding its duration to the busy time;
    /// returns its value and the instants it was called and returned.
    pub(crate) fn timed<T>(&mut self, call: impl FnOnce() -> T) -> (T, u64, u64) {
        let start = monotonic_ns();
        let out = call();
        let end = monotonic_ns();
        self.busy_ns += end.saturating_sub(start);
        (out, start, end)
    }

    /// The sender was handed a packet at `at_ns`.
    pub(crate) fn received(&mut self, at_ns: u64) {
        self.received_ns.get_or_insert(at_ns);
    }

    /// The sender wrote a segment at `at_ns`.
    pub(crate) fn wrote(&mut self, at_ns: u64) {
        if let Some(rx) = self.received_ns {
            if self.last_write_ns.is_none() {
                self.first_ns
                    .saturating_record(at_ns.saturating_sub(rx).max(1));
            }
            self.last_write_ns = Some(at_ns);
        }
    }

    /// The sender has nothing more to write now: the burst, if any, is over.
    pub(crate) fn idle(&mut self) {
        if let (Some(rx), Some(last)) = (self.received_ns, self.last_write_ns) {
            self.burst_ns
                .saturating_record(last.saturating_sub(rx).max(1));
        }
        self.received_ns = None;
        self.last_write_ns = None;
    }

    pub(crate) fn summary(&self) -> SenderTimingSummary {
        SenderTimingSummary {
            ack_to_first_send_us: Percentiles::of_ns(&self.first_ns),
            ack_to_burst_end_us: Percentiles::of_ns(&self.burst_ns),
            busy_s: self.busy_ns as f64 / 1e9,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_timed_from_the_earliest_packet_to_its_first_and_last_segment() {
        let mut t = SenderTiming::new();
        t.received(1_000);
        t.received(4_000); // a second ACK before the poll: the first one starts the clock
        t.wrote(6_000);
        t.wrote(9_000);
        t.idle();
        let s = t.summary();
        assert_eq!(s.ack_to_first_send_us.count, 1);
        assert_eq!(s.ack_to_burst_end_us.count, 1);
        assert!((s.ack_to_first_send_us.max - 5.0).abs() < 0.01, "{s:?}");
        assert!((s.ack_to_burst_end_us.max - 8.0).abs() < 0.01, "{s:?}");
    }

    #[test]
    fn a_packet_that_releases_nothing_and_a_timer_s_segment_give_no_sample() {
        let mut t = SenderTiming::new();
        t.received(1_000);
        t.idle(); // nothing released: the clock stops without a sample
        t.wrote(50_000); // a retransmission on the timer, no packet before it
        t.idle();
        let s = t.summary();
        assert_eq!(s.ack_to_first_send_us.count, 0);
        assert_eq!(s.ack_to_burst_end_us.count, 0);
    }

    #[test]
    fn the_busy_time_adds_up_the_calls() {
        let mut t = SenderTiming::new();
        let (v, start, end) = t.timed(|| std::hint::black_box(2 + 2));
        assert_eq!(v, 4);
        assert!(start <= end);
        assert_eq!(t.busy_ns, end - start);
    }
}
