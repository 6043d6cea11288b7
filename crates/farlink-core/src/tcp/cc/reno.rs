//! Reno congestion control (slow start, congestion avoidance, multiplicative decrease).
//!
//! Read first: RFC 5681 sections 3.1 and 3.2 (equations (2), (3) and (4), the loss window),
//! RFC 3465 (appropriate byte counting), RFC 6928 (initial window).
//!
//! Fast recovery's window inflation is *not* here: it belongs to the recovery role
//! (`tcp/recovery.rs`). This controller's window is the Reno `cwnd` outside recovery, and
//! `ssthresh` from the moment a fast retransmit reduces it, which is what RFC 5681 step 6
//! deflates to when recovery ends.
//!
//! Two growth rules, selected by [`WindowGrowth`]:
//! - [`WindowGrowth::PerAck`]: RFC 5681 equations (2) and (3) applied once per ACK that
//!   acknowledges new data, as ns-3's TcpNewReno does. With delayed ACKs (one ACK per two
//!   segments) slow start grows by 1.5× per RTT and congestion avoidance by SMSS/2 per RTT.
//! - [`WindowGrowth::ByteCounting`]: RFC 3465, growth by the bytes acknowledged (limit L per ACK
//!   in slow start), as Linux grows per acknowledged segment; delayed ACKs no longer slow it.

use super::{
    AckBatch, CcMetrics, CongestionController, CongestionEvent, ControllerInit, Reduction,
};
use crate::tcp::rtt::RttEstimator;
use crate::time::SimTime;

/// RFC 3465 section 2.2: "L = 2*SMSS bytes": the most slow start may grow on one ACK.
pub const ABC_LIMIT_SEGMENTS: u64 = 2;
/// RFC 3465 section 2.3: after a retransmission timeout slow start uses L = 1*SMSS, because
/// the ACKs then may cover data that left the network long ago.
pub const ABC_LIMIT_AFTER_RTO_SEGMENTS: u64 = 1;
/// RFC 5681 equation (4): ssthresh is at least 2*SMSS.
pub const MIN_SSTHRESH_SEGMENTS: u64 = 2;
/// RFC 5681 section 3.1: the loss window, "LW, ... equals 1 full-sized segment".
pub const LOSS_WINDOW_SEGMENTS: u64 = 1;

/// How the window grows on ACKs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowGrowth {
    /// One increment per ACK of new data: `min(N, SMSS)` in slow start (RFC 5681 eq. (2)),
    /// `max(1, SMSS*SMSS/cwnd)` in congestion avoidance (eq. (3)).
    PerAck,
    /// Appropriate byte counting (RFC 3465 section 2): `min(N, L)` in slow start, one SMSS per
    /// cwnd of bytes acknowledged in congestion avoidance.
    ByteCounting {
        /// L in SMSS; RFC 3465 allows at most 2.
        limit_segments: u64,
    },
}

/// Reno's settings. The initial window comes from the sender ([`ControllerInit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenoConfig {
    pub growth: WindowGrowth,
    /// RFC 5681 3.1: "The initial value of ssthresh SHOULD be set arbitrarily high (e.g., to
    /// the size of the largest possible advertised window)".
    pub initial_ssthresh_bytes: u64,
}

impl Default for RenoConfig {
    /// Per-ACK growth (RFC 5681's equations as written, and ns-3's default) and an unbounded
    /// initial ssthresh.
    fn default() -> Self {
        RenoConfig {
            growth: WindowGrowth::PerAck,
            initial_ssthresh_bytes: u64::MAX,
        }
    }
}

impl RenoConfig {
    /// RFC 3465 byte counting with L = 2*SMSS.
    pub fn byte_counting() -> Self {
        RenoConfig {
            growth: WindowGrowth::ByteCounting {
                limit_segments: ABC_LIMIT_SEGMENTS,
            },
            ..RenoConfig::default()
        }
    }
}

#[derive(Clone, Debug)]
pub struct Reno {
    growth: WindowGrowth,
    smss_bytes: u64,
    cwnd_bytes: u64,
    ssthresh_bytes: u64,
    /// RFC 3465 section 2.1 `bytes_acked`, the congestion-avoidance byte counter.
    bytes_acked: u64,
    /// Set on a retransmission timeout, cleared when slow start ends: RFC 3465 2.3 limits
    /// slow start to L = 1*SMSS until then.
    slow_start_after_rto: bool,
}

impl Reno {
    pub fn new(config: &RenoConfig, init: &ControllerInit) -> Self {
        Reno {
            growth: config.growth,
            smss_bytes: init.smss_bytes,
            cwnd_bytes: init.initial_window_bytes.max(init.smss_bytes),
            ssthresh_bytes: config.initial_ssthresh_bytes,
            bytes_acked: 0,
            slow_start_after_rto: false,
        }
    }

    pub fn ssthresh_bytes(&self) -> u64 {
        self.ssthresh_bytes
    }

    /// RFC 5681 3.1: slow start while cwnd < ssthresh (at equality either may be used; we
    /// use congestion avoidance, as ns-3 does).
    fn in_slow_start(&self) -> bool {
        self.cwnd_bytes < self.ssthresh_bytes
    }
}

impl CongestionController for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    fn on_ack_batch(&mut self, _now: SimTime, batch: &AckBatch<'_>, _rtt: &RttEstimator) {
        // RFC 5681 3.2 step 6: the window is not grown during fast recovery; the ACK that ends
        // it deflates the window to ssthresh (which this controller already holds).
        let n = batch.newly_acked_bytes;
        if batch.in_recovery || n == 0 {
            return;
        }
        let smss = self.smss_bytes;
        if self.in_slow_start() {
            let increase = match self.growth {
                // RFC 5681 eq. (2): cwnd += min (N, SMSS)
                WindowGrowth::PerAck => n.min(smss),
                // RFC 3465 2.2: cwnd += min (N, L)
                WindowGrowth::ByteCounting { limit_segments } => {
                    let l = if self.slow_start_after_rto {
                        ABC_LIMIT_AFTER_RTO_SEGMENTS
                    } else {
                        limit_segments
                    };
                    n.min(l * smss)
                }
            };
            self.cwnd_bytes = self.cwnd_bytes.saturating_add(increase);
        } else {
            self.slow_start_after_rto = false;
            match self.growth {
                // RFC 5681 eq. (3): cwnd += SMSS*SMSS/cwnd, "if the above formula yields 0,
                // the result SHOULD be rounded up to 1 byte".
                WindowGrowth::PerAck => {
                    self.cwnd_bytes += (smss * smss / self.cwnd_bytes).max(1);
                }
                // RFC 3465 2.1 (and RFC 5681 3.1): "When bytes_acked becomes greater than or
                // equal to the value of the congestion window, bytes_acked is reduced by the
                // value of cwnd. Next, cwnd is incremented by a full-sized segment (SMSS)."
                WindowGrowth::ByteCounting { .. } => {
                    self.bytes_acked += n;
                    if self.bytes_acked >= self.cwnd_bytes {
                        self.bytes_acked -= self.cwnd_bytes;
                        self.cwnd_bytes += smss;
                    }
                }
            }
        }
    }

    fn on_congestion_event(&mut self, _now: SimTime, event: &CongestionEvent) -> Reduction {
        let smss = self.smss_bytes;
        // RFC 5681 eq. (4): ssthresh = max (FlightSize / 2, 2*SMSS).
        // RFC 5681 3.1: "when a TCP sender detects segment loss using the retransmission timer
        // and the given segment has already been retransmitted by way of the retransmission
        // timer at least once, the value of ssthresh is held constant."
        if !event.repeated_timeout {
            self.ssthresh_bytes = (event.flight_size_bytes / 2).max(MIN_SSTHRESH_SEGMENTS * smss);
        }
        self.cwnd_bytes = if event.restart_slow_start {
            // RFC 5681 3.1: "upon a timeout cwnd MUST be set to no more than the loss window".
            LOSS_WINDOW_SEGMENTS * smss
        } else {
            // RFC 5681 3.2 steps 2 and 6: the window recovery deflates to.
            self.ssthresh_bytes
        };
        self.slow_start_after_rto = event.restart_slow_start;
        self.bytes_acked = 0;
        Reduction {
            ssthresh_bytes: self.ssthresh_bytes,
            cwnd_bytes: self.cwnd_bytes,
        }
    }

    /// RFC 8257 3.3: `cwnd = cwnd * (1 - DCTCP.Alpha / 2)`; ssthresh follows it (Linux's
    /// `dctcp_ssthresh`), at least 2 SMSS as RFC 5681's.
    fn on_proportional_reduction(&mut self, _now: SimTime, fraction: f64) -> Option<Reduction> {
        let kept = self.cwnd_bytes as f64 * (1.0 - fraction.clamp(0.0, 1.0));
        self.ssthresh_bytes = (kept as u64).max(MIN_SSTHRESH_SEGMENTS * self.smss_bytes);
        self.cwnd_bytes = self.ssthresh_bytes;
        self.bytes_acked = 0;
        Some(Reduction {
            ssthresh_bytes: self.ssthresh_bytes,
            cwnd_bytes: self.cwnd_bytes,
        })
    }

    fn window(&self) -> u64 {
        self.cwnd_bytes
    }

    fn metrics(&self) -> CcMetrics {
        CcMetrics::new(self.cwnd_bytes, self.ssthresh_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::cc::Detection;
    use crate::tcp::rtt::{RttConfig, RttEstimator};

    const SMSS: u64 = 1000;

    fn reno(config: RenoConfig, iw_segments: u64) -> Reno {
        Reno::new(
            &config,
            &ControllerInit {
                smss_bytes: SMSS,
                initial_window_bytes: iw_segments * SMSS,
            },
        )
    }

    fn ack(cc: &mut Reno, bytes: u64, in_recovery: bool) {
        let rtt = RttEstimator::new(RttConfig::default());
        let batch = AckBatch {
            acked: &[],
            lost: &[],
            newly_acked_bytes: bytes,
            newly_sacked_bytes: 0,
            prior_in_flight_bytes: 0,
            in_flight_bytes: 0,
            in_recovery,
            rtt_sample: None,
            smss_bytes: SMSS,
        };
        cc.on_ack_batch(SimTime::ZERO, &batch, &rtt);
    }

    fn loss(cc: &mut Reno, flight: u64, detection: Detection, repeated: bool) -> Reduction {
        let timeout = detection == Detection::RetransmissionTimeout;
        cc.on_congestion_event(
            SimTime::ZERO,
            &CongestionEvent {
                detection,
                flight_size_bytes: flight,
                lost_bytes: SMSS,
                smss_bytes: SMSS,
                restart_slow_start: timeout,
                repeated_timeout: repeated,
                during_fast_recovery: false,
            },
        )
    }

    /// One round trip: the whole window acknowledged, one ACK per `per_ack` segments.
    fn round(cc: &mut Reno, per_ack: u64) {
        let mut segments = cc.window() / SMSS;
        while segments > 0 {
            let n = segments.min(per_ack);
            ack(cc, n * SMSS, false);
            segments -= n;
        }
    }

    #[test]
    fn slow_start_doubles_per_rtt_with_an_ack_per_segment() {
        let mut cc = reno(RenoConfig::default(), 10);
        round(&mut cc, 1);
        assert_eq!(cc.window(), 20 * SMSS);
        round(&mut cc, 1);
        assert_eq!(cc.window(), 40 * SMSS);
    }

    #[test]
    fn per_ack_slow_start_grows_one_and_a_half_per_rtt_with_delayed_acks() {
        let mut cc = reno(RenoConfig::default(), 10);
        round(&mut cc, 2);
        assert_eq!(cc.window(), 15 * SMSS);
    }

    #[test]
    fn byte_counting_slow_start_doubles_per_rtt_with_delayed_acks() {
        let mut cc = reno(RenoConfig::byte_counting(), 10);
        round(&mut cc, 2);
        assert_eq!(cc.window(), 20 * SMSS);
    }

    #[test]
    fn byte_counting_caps_a_stretch_ack_at_two_segments() {
        let mut cc = reno(RenoConfig::byte_counting(), 10);
        ack(&mut cc, 8 * SMSS, false);
        assert_eq!(cc.window(), 12 * SMSS);
    }

    #[test]
    fn congestion_avoidance_per_ack_grows_half_a_segment_per_rtt_with_delayed_acks() {
        let mut per_ack = reno(
            RenoConfig {
                initial_ssthresh_bytes: 20 * SMSS,
                ..RenoConfig::default()
            },
            20,
        );
        let mut abc = reno(
            RenoConfig {
                initial_ssthresh_bytes: 20 * SMSS,
                ..RenoConfig::byte_counting()
            },
            20,
        );
        for _ in 0..4 {
            round(&mut per_ack, 2);
            round(&mut abc, 2);
        }
        // ABC: one SMSS per window of bytes acknowledged, 4 windows → +4 SMSS.
        assert_eq!(abc.window(), 24 * SMSS);
        // Per ACK: 10 ACKs of SMSS²/cwnd per round ≈ +0.5 SMSS per RTT → about +2 SMSS.
        let grown = per_ack.window() - 20 * SMSS;
        assert!((1800..=2100).contains(&grown), "grew {grown} bytes");
    }

    #[test]
    fn fast_retransmit_halves_flight_size_and_window_goes_to_ssthresh() {
        let mut cc = reno(RenoConfig::default(), 10);
        let r = loss(&mut cc, 20 * SMSS, Detection::DupAcks, false);
        assert_eq!(r.ssthresh_bytes, 10 * SMSS);
        assert_eq!(r.cwnd_bytes, 10 * SMSS);
        assert_eq!(cc.window(), 10 * SMSS);
        assert_eq!(cc.metrics().ssthresh_bytes, 10 * SMSS);
    }

    #[test]
    fn ssthresh_is_at_least_two_segments() {
        let mut cc = reno(RenoConfig::default(), 10);
        let r = loss(&mut cc, SMSS, Detection::DupAcks, false);
        assert_eq!(r.ssthresh_bytes, 2 * SMSS);
    }

    #[test]
    fn no_growth_during_fast_recovery() {
        let mut cc = reno(RenoConfig::default(), 10);
        loss(&mut cc, 20 * SMSS, Detection::DupAcks, false);
        ack(&mut cc, 5 * SMSS, true);
        assert_eq!(cc.window(), 10 * SMSS);
    }

    #[test]
    fn timeout_restarts_from_the_loss_window_and_slow_starts_to_ssthresh() {
        let mut cc = reno(RenoConfig::default(), 10);
        let r = loss(&mut cc, 16 * SMSS, Detection::RetransmissionTimeout, false);
        assert_eq!(r.cwnd_bytes, SMSS);
        assert_eq!(r.ssthresh_bytes, 8 * SMSS);
        for _ in 0..7 {
            ack(&mut cc, SMSS, false);
        }
        assert_eq!(cc.window(), 8 * SMSS);
        ack(&mut cc, SMSS, false);
        assert_eq!(cc.window(), 8 * SMSS + SMSS / 8, "congestion avoidance");
    }

    #[test]
    fn repeated_timeout_holds_ssthresh() {
        let mut cc = reno(RenoConfig::default(), 10);
        loss(&mut cc, 16 * SMSS, Detection::RetransmissionTimeout, false);
        let r = loss(&mut cc, SMSS, Detection::RetransmissionTimeout, true);
        assert_eq!(r.ssthresh_bytes, 8 * SMSS);
        assert_eq!(r.cwnd_bytes, SMSS);
    }

    #[test]
    fn byte_counting_after_timeout_limits_slow_start_to_one_segment_per_ack() {
        let mut cc = reno(RenoConfig::byte_counting(), 10);
        loss(&mut cc, 40 * SMSS, Detection::RetransmissionTimeout, false);
        ack(&mut cc, 2 * SMSS, false);
        assert_eq!(cc.window(), 2 * SMSS);
    }

    #[test]
    fn zero_byte_ack_does_not_grow() {
        let mut cc = reno(RenoConfig::default(), 10);
        ack(&mut cc, 0, false);
        assert_eq!(cc.window(), 10 * SMSS);
    }
}
