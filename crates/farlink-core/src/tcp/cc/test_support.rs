//! What the controllers' unit tests share: a plain ACK, a congestion event and an RTT estimator
//! with one sample, built the same way for every controller.

use super::{AckBatch, CongestionEvent, Detection};
use crate::tcp::rtt::{RttConfig, RttEstimator};
use crate::time::SimDuration;

/// An ACK newly covering `acked_bytes` cumulatively, without SACK, loss or an RTT sample, with
/// `prior_in_flight_bytes` in flight before it.
pub(super) fn plain_ack(
    acked_bytes: u64,
    prior_in_flight_bytes: u64,
    in_recovery: bool,
    smss_bytes: u64,
) -> AckBatch<'static> {
    AckBatch {
        acked: &[],
        lost: &[],
        newly_acked_bytes: acked_bytes,
        newly_sacked_bytes: 0,
        prior_in_flight_bytes,
        in_flight_bytes: 0,
        in_recovery,
        rtt_sample: None,
        smss_bytes,
    }
}

/// A loss of one segment with `flight_segments` in flight; a timeout restarts slow start.
pub(super) fn congestion_event(
    detection: Detection,
    flight_segments: u64,
    smss_bytes: u64,
) -> CongestionEvent {
    CongestionEvent {
        detection,
        flight_size_bytes: flight_segments * smss_bytes,
        lost_bytes: smss_bytes,
        smss_bytes,
        restart_slow_start: detection == Detection::RetransmissionTimeout,
        repeated_timeout: false,
        during_fast_recovery: false,
    }
}

/// An estimator that has seen one sample of `rtt`.
pub(super) fn estimator(rtt: SimDuration) -> RttEstimator {
    let mut e = RttEstimator::new(RttConfig::default());
    e.on_sample(rtt);
    e
}
