//! TCP Westwood+: after a loss, ssthresh from the bandwidth the ACKs measure, not a halving.
//!
//! Read first: S. Mascolo, C. Casetti, M. Gerla, M. Sanadidi and R. Wang, "TCP Westwood:
//! bandwidth estimation for enhanced transport over wireless links", ACM MobiCom 2001 (the
//! window rules after duplicate ACKs and after a timeout); L. A. Grieco and S. Mascolo,
//! "Performance evaluation and comparison of Westwood+, New Reno, and Vegas TCP congestion
//! control", ACM SIGCOMM CCR 34(2), 2004 (the Westwood+ estimate, one sample per RTT, and its
//! filter). Then RFC 5681 (the probing phase is Reno's).
//!
//! The bandwidth estimate (BWE): once per RTT, the sample b_k = d_k / Δ_k, where d_k is the
//! data the ACKs of the last Δ_k reported delivered, feeds the low-pass filter
//! `BWE_k = γ·BWE_{k−1} + (1 − γ)·b_k` with γ = 0.9 (Grieco and Mascolo 2004); the first sample
//! fills the filter. Sampling every RTT rather than every ACK is what "+" adds to Westwood: ACK
//! compression no longer inflates the estimate.
//!
//! On a loss indication: `ssthresh = max(BWE × RTT_min, 2·SMSS)`; after duplicate ACKs (or
//! SACK) `cwnd = min(cwnd, ssthresh)` (Mascolo et al. 2001: "if (cwin > ssthresh) cwin =
//! ssthresh"), which is the window fast recovery deflates to; after a timeout `cwnd = 1`
//! segment (RFC 5681's loss window). Otherwise the window grows as Reno's (RFC 5681 eqs. (2)
//! and (3) per ACK).
//!
//! Choices (see also `docs/congestion-control.md`):
//! - Delivered data is the bytes newly cumulatively acknowledged that were not already SACKed,
//!   plus the bytes newly SACKed. Westwood counted each duplicate ACK as one segment
//!   delivered; with SACK the blocks say exactly what arrived, and without SACK the
//!   cumulative ACK that ends recovery credits the same bytes a little later (a sample of a
//!   whole RTT, filtered, barely notices).
//! - The sampling interval is max(SRTT, 50 ms): Linux's floor (`TCP_WESTWOOD_RTT_MIN`), which
//!   keeps a sub-millisecond RTT from producing samples of a handful of ACKs. Until the first
//!   RTT sample nothing is sampled.
//! - With no estimate yet (a loss in the first RTT), ssthresh is Reno's `max(FlightSize/2,
//!   2·SMSS)`; Linux's empty filter would give the two-segment floor.
//! - The filter is the paper's single one with γ = 0.9; Linux cascades two filters of 7/8.
//! - Linux sets cwnd = ssthresh when recovery completes even if that is more than the window
//!   before the loss; we keep the paper's min.

use super::{
    max_window_bytes, AckBatch, CcMetrics, CongestionController, CongestionEvent, ControllerInit,
    Reduction,
};
use crate::tcp::rtt::RttEstimator;
use crate::time::{SimDuration, SimTime};

/// Grieco and Mascolo (2004): the Westwood+ filter coefficient 0.9.
pub const DEFAULT_FILTER_GAIN: f64 = 0.9;
/// The shortest sampling interval, 50 ms: Linux's `TCP_WESTWOOD_RTT_MIN` (HZ/20).
pub const DEFAULT_MIN_SAMPLE_INTERVAL: SimDuration = SimDuration::from_millis(50);
/// RFC 5681 equation (4), and Mascolo et al.: ssthresh is at least 2 segments.
pub const MIN_SSTHRESH_SEGMENTS: u64 = 2;
/// RFC 5681 section 3.1, and Mascolo et al. ("cwin = 1" after a timeout).
pub const LOSS_WINDOW_SEGMENTS: u64 = 1;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WestwoodConfig {
    /// γ of the low-pass filter, in [0, 1): the weight of the previous estimate.
    pub filter_gain: f64,
    /// The sampling interval is max(SRTT, this).
    pub min_sample_interval: SimDuration,
    /// RFC 5681 3.1: "arbitrarily high".
    pub initial_ssthresh_bytes: u64,
}

impl Default for WestwoodConfig {
    /// γ = 0.9 (Grieco and Mascolo 2004), samples at least 50 ms apart (Linux).
    fn default() -> Self {
        WestwoodConfig {
            filter_gain: DEFAULT_FILTER_GAIN,
            min_sample_interval: DEFAULT_MIN_SAMPLE_INTERVAL,
            initial_ssthresh_bytes: u64::MAX,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Westwood {
    config: WestwoodConfig,
    smss_bytes: u64,
    cwnd_bytes: u64,
    ssthresh_bytes: u64,
    /// When the current sample began (the first ACK; then each sample's end).
    sample_start: Option<SimTime>,
    /// Bytes reported delivered since `sample_start`.
    sample_bytes: u64,
    /// BWE, bytes per second.
    bwe_bytes_per_s: Option<f64>,
    /// RTT_min, from the estimator at the last ACK.
    rtt_min: Option<SimDuration>,
}

impl Westwood {
    pub fn new(config: &WestwoodConfig, init: &ControllerInit) -> Self {
        let smss_bytes = init.smss_bytes.max(1);
        Westwood {
            config: WestwoodConfig {
                filter_gain: if (0.0..1.0).contains(&config.filter_gain) {
                    config.filter_gain
                } else {
                    DEFAULT_FILTER_GAIN
                },
                ..*config
            },
            smss_bytes,
            cwnd_bytes: init
                .initial_window_bytes
                .clamp(smss_bytes, max_window_bytes(smss_bytes)),
            ssthresh_bytes: config
                .initial_ssthresh_bytes
                .max(MIN_SSTHRESH_SEGMENTS * smss_bytes),
            sample_start: None,
            sample_bytes: 0,
            bwe_bytes_per_s: None,
            rtt_min: None,
        }
    }

    pub fn ssthresh_bytes(&self) -> u64 {
        self.ssthresh_bytes
    }

    /// The filtered bandwidth estimate, bytes per second.
    pub fn bandwidth_estimate_bytes_per_s(&self) -> Option<f64> {
        self.bwe_bytes_per_s
    }

    /// BWE × RTT_min in bytes, at least two segments; `None` without an estimate.
    fn bwe_ssthresh(&self) -> Option<u64> {
        let bwe = self.bwe_bytes_per_s?;
        let rtt_min_s = self.rtt_min?.as_secs_f64();
        // To the nearest byte; `as` saturates, and no NaN arises (both factors are finite and
        // non-negative).
        let bytes = libm::round(bwe * rtt_min_s);
        Some((bytes as u64).max(MIN_SSTHRESH_SEGMENTS * self.smss_bytes))
    }

    fn sample(&mut self, now: SimTime, delivered: u64, rtt: &RttEstimator) {
        let Some(start) = self.sample_start else {
            // The first ACK opens the first sample; what it acknowledges was sent before.
            self.sample_start = Some(now);
            return;
        };
        self.sample_bytes = self.sample_bytes.saturating_add(delivered);
        let Some(srtt) = rtt.srtt() else {
            return;
        };
        let interval = srtt.max(self.config.min_sample_interval);
        let elapsed = now.saturating_since(start);
        if elapsed.as_nanos() == 0 || elapsed < interval {
            return;
        }
        let b = self.sample_bytes as f64 / elapsed.as_secs_f64();
        let g = self.config.filter_gain;
        self.bwe_bytes_per_s = Some(match self.bwe_bytes_per_s {
            None => b,
            Some(prev) => g * prev + (1.0 - g) * b,
        });
        self.sample_start = Some(now);
        self.sample_bytes = 0;
    }
}

impl CongestionController for Westwood {
    fn name(&self) -> &'static str {
        "westwood"
    }

    fn on_ack_batch(&mut self, now: SimTime, batch: &AckBatch<'_>, rtt: &RttEstimator) {
        self.rtt_min = rtt.min_rtt();
        // Delivered: newly cumulatively acknowledged and not SACKed before, plus newly SACKed.
        let delivered = batch.newly_delivered_bytes();
        self.sample(now, delivered, rtt);

        // Probing as Reno (RFC 5681 3.1, per ACK); no growth during fast recovery (3.2).
        let n = batch.newly_acked_bytes;
        if batch.in_recovery || n == 0 {
            return;
        }
        let smss = self.smss_bytes;
        let increase = if self.cwnd_bytes < self.ssthresh_bytes {
            n.min(smss)
        } else {
            (smss * smss / self.cwnd_bytes).max(1)
        };
        self.cwnd_bytes = self
            .cwnd_bytes
            .saturating_add(increase)
            .min(max_window_bytes(smss));
    }

    fn on_congestion_event(&mut self, _now: SimTime, event: &CongestionEvent) -> Reduction {
        let smss = self.smss_bytes;
        // RFC 5681 3.1 holds ssthresh on a repeated timeout; no ACK has refreshed the
        // estimate since the first one anyway.
        if !event.repeated_timeout {
            self.ssthresh_bytes = self
                .bwe_ssthresh()
                .unwrap_or((event.flight_size_bytes / 2).max(MIN_SSTHRESH_SEGMENTS * smss))
                .min(max_window_bytes(smss));
        }
        self.cwnd_bytes = if event.restart_slow_start {
            LOSS_WINDOW_SEGMENTS * smss
        } else {
            self.cwnd_bytes.min(self.ssthresh_bytes)
        };
        Reduction {
            ssthresh_bytes: self.ssthresh_bytes,
            cwnd_bytes: self.cwnd_bytes,
        }
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
    use crate::tcp::cc::{Acked, Detection};
    use crate::tcp::rtt::{RttConfig, RttEstimator};

    const SMSS: u64 = 1000;

    fn westwood(iw_segments: u64) -> Westwood {
        Westwood::new(
            &WestwoodConfig::default(),
            &ControllerInit {
                smss_bytes: SMSS,
                initial_window_bytes: iw_segments * SMSS,
            },
        )
    }

    fn ack(cc: &mut Westwood, now: SimTime, bytes: u64, sacked: u64, rtt: &RttEstimator) {
        let batch = AckBatch {
            acked: &[],
            lost: &[],
            newly_acked_bytes: bytes,
            newly_sacked_bytes: sacked,
            prior_in_flight_bytes: 0,
            in_flight_bytes: 0,
            in_recovery: false,
            rtt_sample: None,
            smss_bytes: SMSS,
        };
        cc.on_ack_batch(now, &batch, rtt);
    }

    fn loss(cc: &mut Westwood, detection: Detection, flight: u64) -> Reduction {
        cc.on_congestion_event(
            SimTime::ZERO,
            &CongestionEvent {
                detection,
                flight_size_bytes: flight,
                lost_bytes: SMSS,
                smss_bytes: SMSS,
                restart_slow_start: detection == Detection::RetransmissionTimeout,
                repeated_timeout: false,
                during_fast_recovery: false,
            },
        )
    }

    fn at_ms(v: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_millis(v)
    }

    /// One segment acknowledged every `gap_ms` for `secs` seconds, RTT 100 ms (min 80 ms).
    fn constant_rate(cc: &mut Westwood, gap_ms: u64, secs: u64) -> RttEstimator {
        let mut rtt = RttEstimator::new(RttConfig::default());
        rtt.on_sample(SimDuration::from_millis(80));
        rtt.on_sample(SimDuration::from_millis(100));
        let mut t = 0;
        while t <= secs * 1000 {
            ack(cc, at_ms(t), SMSS, 0, &rtt);
            t += gap_ms;
        }
        rtt
    }

    #[test]
    fn estimate_is_the_ack_rate_and_ssthresh_is_bwe_times_rtt_min() {
        // 1000 bytes every 10 ms: 100,000 bytes/s. RTT_min 80 ms: ssthresh 8,000 bytes.
        let mut cc = westwood(10);
        constant_rate(&mut cc, 10, 5);
        let bwe = cc.bandwidth_estimate_bytes_per_s().unwrap();
        assert!((bwe / 100_000.0 - 1.0).abs() < 1e-9, "BWE {bwe}");
        let before = cc.window();
        let r = loss(&mut cc, Detection::DupAcks, before);
        assert_eq!(r.ssthresh_bytes, 8_000);
        assert_eq!(r.cwnd_bytes, 8_000.min(before));
        assert_eq!(cc.metrics().ssthresh_bytes, 8_000);
    }

    #[test]
    fn a_timeout_sets_ssthresh_from_the_estimate_and_cwnd_to_one_segment() {
        let mut cc = westwood(10);
        constant_rate(&mut cc, 4, 3); // 250,000 bytes/s × 80 ms = 20,000 bytes
        let r = loss(&mut cc, Detection::RetransmissionTimeout, 50 * SMSS);
        assert_eq!((r.ssthresh_bytes, r.cwnd_bytes), (20_000, SMSS));
    }

    #[test]
    fn fast_recovery_does_not_raise_the_window() {
        // After a timeout the window is one segment; a loss then finds ssthresh (80,000
        // bytes) above it and keeps the window.
        let mut cc = westwood(3);
        constant_rate(&mut cc, 1, 1);
        loss(&mut cc, Detection::RetransmissionTimeout, 10 * SMSS);
        let r = loss(&mut cc, Detection::DupAcks, SMSS);
        assert_eq!((r.ssthresh_bytes, r.cwnd_bytes), (80_000, SMSS));
    }

    #[test]
    fn ssthresh_is_at_least_two_segments() {
        let mut cc = westwood(10);
        constant_rate(&mut cc, 1000, 10); // 1000 bytes/s × 80 ms = 80 bytes
        let r = loss(&mut cc, Detection::DupAcks, 10 * SMSS);
        assert_eq!(r.ssthresh_bytes, 2 * SMSS);
    }

    #[test]
    fn without_an_estimate_the_reduction_is_renos() {
        let mut cc = westwood(10);
        let r = loss(&mut cc, Detection::DupAcks, 10 * SMSS);
        assert_eq!((r.ssthresh_bytes, r.cwnd_bytes), (5 * SMSS, 5 * SMSS));
    }

    #[test]
    fn the_filter_moves_a_tenth_of_the_way_per_sample() {
        let mut cc = westwood(10);
        let rtt = constant_rate(&mut cc, 10, 2); // 100,000 bytes/s
                                                 // Then twice the rate for exactly one sampling interval (SRTT ≈ 98 ms ≥ 50 ms).
        let start = 2000;
        let mut t = start;
        let mut samples = 0;
        let mut last = cc.bandwidth_estimate_bytes_per_s().unwrap();
        while samples < 1 {
            t += 5;
            ack(&mut cc, at_ms(t), SMSS, 0, &rtt);
            let now = cc.bandwidth_estimate_bytes_per_s().unwrap();
            if now != last {
                samples += 1;
                last = now;
            }
        }
        // The first fast sample spans the slow tail too; it lies between the two rates and
        // the estimate moved by a tenth of (sample − previous).
        assert!(last > 100_000.0 && last < 110_000.0, "BWE {last}");
    }

    #[test]
    fn sacked_bytes_count_once() {
        let mut rtt = RttEstimator::new(RttConfig::default());
        rtt.on_sample(SimDuration::from_millis(100));
        let mut a = westwood(10);
        let mut b = westwood(10);
        // a: 2000 bytes SACKed, then the cumulative ACK covers them and 1000 more.
        // b: 3000 bytes cumulatively acknowledged. Same delivery, same estimate.
        ack(&mut a, at_ms(0), 0, 0, &rtt);
        ack(&mut b, at_ms(0), 0, 0, &rtt);
        ack(&mut a, at_ms(50), 0, 2000, &rtt);
        let acked = [
            Acked {
                end_seq: 1000,
                bytes: 1000,
                sent_time: SimTime::ZERO,
                retransmitted: true,
                was_sacked: false,
            },
            Acked {
                end_seq: 3000,
                bytes: 2000,
                sent_time: SimTime::ZERO,
                retransmitted: false,
                was_sacked: true,
            },
        ];
        let batch = AckBatch {
            acked: &acked,
            lost: &[],
            newly_acked_bytes: 3000,
            newly_sacked_bytes: 0,
            prior_in_flight_bytes: 0,
            in_flight_bytes: 0,
            in_recovery: false,
            rtt_sample: None,
            smss_bytes: SMSS,
        };
        a.on_ack_batch(at_ms(200), &batch, &rtt);
        ack(&mut b, at_ms(200), 3000, 0, &rtt);
        assert_eq!(
            a.bandwidth_estimate_bytes_per_s(),
            b.bandwidth_estimate_bytes_per_s()
        );
        assert_eq!(a.bandwidth_estimate_bytes_per_s(), Some(15_000.0));
    }

    #[test]
    fn probing_is_renos() {
        let mut cc = westwood(10);
        let rtt = RttEstimator::new(RttConfig::default());
        for i in 0..10 {
            ack(&mut cc, at_ms(i), SMSS, 0, &rtt);
        }
        assert_eq!(cc.window(), 20 * SMSS, "slow start, one SMSS per ACK");
    }
}
