//! CUBIC: the window as a cubic function of the time since the last congestion event.
//!
//! Read first: RFC 9438 (all of section 4: 4.2 the window increase function, Figures 1 and 2
//! and the target; 4.3 the Reno-friendly region, Figure 4; 4.4 and 4.5 the concave and convex
//! regions; 4.6 multiplicative decrease, Figure 5; 4.7 fast convergence; 4.8 timeouts; 4.9
//! spurious congestion events; 4.10 slow start; section 5.1 for C), and RFC 5681.
//!
//! In segments, with t the time since the current congestion-avoidance stage began:
//! - `W_cubic(t) = C·(t − K)³ + W_max` (Figure 1), `K = ∛((W_max − cwnd_epoch) / C)` (Figure 2);
//! - per ACK, `W_est += α_cubic · segments_acked / cwnd` with `α_cubic = 3(1 − β)/(1 + β)`
//!   (Figure 4), 1 once `W_est ≥ cwnd_prior`; if `W_cubic(t) < W_est` the window is `W_est`
//!   (Reno-friendly region);
//! - otherwise `target = W_cubic(t + RTT)` bounded to `[cwnd, 1.5·cwnd]`, and cwnd grows by
//!   `(target − cwnd)/cwnd` per segment acknowledged (concave below W_max, convex above);
//! - on a congestion event `ssthresh = max(FlightSize·β, 2)`, `cwnd = ssthresh` (a timeout:
//!   the loss window), and W_max = cwnd before the reduction, or `cwnd·(1 + β)/2` if that is
//!   below the previous W_max and fast convergence is on (section 4.7).
//!
//! Time is integer nanoseconds everywhere; it becomes seconds (`f64`) only inside the window
//! arithmetic, and no float ever goes back into a time. Floats are IEEE operations and
//! `libm::cbrt`, so results are the same on every machine.
//!
//! Choices (see also `docs/congestion-control.md`):
//! - Slow start is RFC 5681's, per ACK `min(N, SMSS)`, as Reno's default here; HyStart++ (RFC
//!   9406), which RFC 9438 4.10 allows, is not implemented. If slow start ends without a loss
//!   (a finite initial ssthresh), K = 0 and W_max is the window then (RFC 9438 4.10).
//! - The cubic increment is applied per segment acknowledged (`segments_acked`, as W_est's
//!   Figure 4 is written) rather than per ACK, so that delayed ACKs do not halve the approach
//!   to the target; an ACK never takes the window past the target.
//! - The stage begins (epoch_start, K, W_est = cwnd_epoch) at the first ACK of new data in
//!   congestion avoidance, i.e. when fast recovery has ended.
//! - K is never negative: if W_max ≤ cwnd_epoch (possible only after the two-segment floor),
//!   K = 0.
//! - A repeated timeout holds ssthresh (RFC 5681 3.1) and leaves W_max and cwnd_prior as the
//!   first timeout set them.
//! - The RTT of the target is RFC 6298's SRTT (RFC 9438 4.2); before any sample, 0.

use super::{
    max_window_bytes, AckBatch, CcMetrics, CongestionController, CongestionEvent, ControllerInit,
    Detection, Reduction,
};
use crate::tcp::rtt::RttEstimator;
use crate::time::{SimDuration, SimTime};

/// RFC 9438 5.1: "C SHOULD be set to 0.4", in segments per second cubed.
pub const DEFAULT_C: f64 = 0.4;
/// RFC 9438 4.6: "The parameter β_cubic SHOULD be set to 0.7".
pub const DEFAULT_BETA: f64 = 0.7;
/// RFC 9438 4.6, Figure 5: "ssthresh = max(ssthresh, 2) // ssthresh >= 2 SMSS".
pub const MIN_SSTHRESH_SEGMENTS: u64 = 2;
/// RFC 9438 4.8 follows RFC 5681 3.1 on a timeout: the loss window, one segment.
pub const LOSS_WINDOW_SEGMENTS: u64 = 1;
/// RFC 9438 4.2: the target is at most 1.5 cwnd ("less than the increase rate of slow start").
pub const MAX_TARGET_RATIO: f64 = 1.5;

const NS_PER_S: f64 = 1e9;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CubicConfig {
    /// C, segments/s³.
    pub c: f64,
    /// β_cubic, the multiplicative decrease factor.
    pub beta: f64,
    /// RFC 9438 4.7: "the following 'Fast Convergence' mechanism SHOULD be implemented"; it
    /// "SHOULD be disabled" for a single CUBIC flow alone on a path, which a sender cannot know.
    pub fast_convergence: bool,
    /// RFC 5681 3.1: "arbitrarily high".
    pub initial_ssthresh_bytes: u64,
}

impl Default for CubicConfig {
    /// C = 0.4 (RFC 9438 5.1), β = 0.7 (4.6), fast convergence on (4.7, and Linux's default).
    fn default() -> Self {
        CubicConfig {
            c: DEFAULT_C,
            beta: DEFAULT_BETA,
            fast_convergence: true,
            initial_ssthresh_bytes: u64::MAX,
        }
    }
}

/// The rule the last ACK grew the window by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CubicRegion {
    SlowStart,
    /// RFC 9438 4.3: `W_cubic(t) < W_est`; cwnd follows Reno's estimate.
    RenoFriendly,
    /// RFC 9438 4.4: cwnd below W_max.
    Concave,
    /// RFC 9438 4.5: cwnd at or above W_max.
    Convex,
}

/// One congestion-avoidance stage.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Epoch {
    start: SimTime,
    k_s: f64,
    w_max_segments: f64,
}

/// What RFC 9438 4.9 saves before a reduction, to undo a spurious one.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Saved {
    cwnd: f64,
    ssthresh_bytes: u64,
    w_max_segments: Option<f64>,
    cwnd_prior_segments: f64,
    epoch: Option<Epoch>,
    w_est_segments: f64,
    after_timeout: bool,
}

#[derive(Clone, Debug)]
pub struct Cubic {
    config: CubicConfig,
    /// α_cubic = 3(1 − β)/(1 + β) (RFC 9438 4.3).
    alpha_cubic: f64,
    smss_bytes: u64,
    /// Bytes; fractional so that small increments accumulate.
    cwnd: f64,
    ssthresh_bytes: u64,
    /// W_max of the last congestion event; `None` before any.
    w_max_segments: Option<f64>,
    /// cwnd when ssthresh was last set (RFC 9438 4.3's cwnd_prior).
    cwnd_prior_segments: f64,
    epoch: Option<Epoch>,
    w_est_segments: f64,
    /// The next stage is the first after a timeout: K = 0, W_max = cwnd_epoch (RFC 9438 4.8).
    after_timeout: bool,
    region: CubicRegion,
    prior: Option<Saved>,
}

impl Cubic {
    pub fn new(config: &CubicConfig, init: &ControllerInit) -> Self {
        let smss_bytes = init.smss_bytes.max(1);
        let beta = if config.beta > 0.0 && config.beta < 1.0 {
            config.beta
        } else {
            DEFAULT_BETA
        };
        let c = if config.c > 0.0 && config.c.is_finite() {
            config.c
        } else {
            DEFAULT_C
        };
        Cubic {
            config: CubicConfig { c, beta, ..*config },
            alpha_cubic: 3.0 * (1.0 - beta) / (1.0 + beta),
            smss_bytes,
            cwnd: init
                .initial_window_bytes
                .clamp(smss_bytes, max_window_bytes(smss_bytes)) as f64,
            ssthresh_bytes: config
                .initial_ssthresh_bytes
                .max(MIN_SSTHRESH_SEGMENTS * smss_bytes),
            w_max_segments: None,
            cwnd_prior_segments: 0.0,
            epoch: None,
            w_est_segments: 0.0,
            after_timeout: false,
            region: CubicRegion::SlowStart,
            prior: None,
        }
    }

    pub fn ssthresh_bytes(&self) -> u64 {
        self.ssthresh_bytes
    }
    /// W_max in segments: of the current stage, else of the last congestion event.
    pub fn w_max_segments(&self) -> Option<f64> {
        self.epoch.map(|e| e.w_max_segments).or(self.w_max_segments)
    }
    /// K of the current congestion-avoidance stage, seconds.
    pub fn k_seconds(&self) -> Option<f64> {
        self.epoch.map(|e| e.k_s)
    }
    /// W_est, segments.
    pub fn w_est_segments(&self) -> f64 {
        self.w_est_segments
    }
    /// When the current congestion-avoidance stage began.
    pub fn epoch_start(&self) -> Option<SimTime> {
        self.epoch.map(|e| e.start)
    }
    pub fn region(&self) -> CubicRegion {
        self.region
    }
    /// `W_cubic(t)` of the current stage (Figure 1), segments, `t` since the stage began.
    pub fn w_cubic_segments(&self, t: SimDuration) -> Option<f64> {
        let e = self.epoch?;
        Some(self.w_cubic(&e, t.as_nanos() as f64 / NS_PER_S))
    }

    fn w_cubic(&self, e: &Epoch, t_s: f64) -> f64 {
        let x = t_s - e.k_s;
        self.config.c * x * x * x + e.w_max_segments
    }

    fn cwnd_segments(&self) -> f64 {
        self.cwnd / self.smss_bytes as f64
    }

    fn in_slow_start(&self) -> bool {
        self.window() < self.ssthresh_bytes
    }

    /// The stage begins at its first ACK (RFC 9438 4.2, 4.3, 4.8, 4.10).
    fn start_epoch(&mut self, now: SimTime) -> Epoch {
        let cwnd_epoch = self.cwnd_segments();
        let w_max = match self.w_max_segments {
            Some(w) if !self.after_timeout => w,
            // After a timeout, or slow start ended without a loss: K = 0, W_max = cwnd_epoch.
            _ => cwnd_epoch,
        };
        if self.w_max_segments.is_none() {
            // cwnd_prior: "upon exiting the first slow start".
            self.cwnd_prior_segments = cwnd_epoch;
        }
        self.w_max_segments = Some(w_max);
        self.after_timeout = false;
        // Figure 2, never negative.
        let k_s = libm::cbrt((w_max - cwnd_epoch).max(0.0) / self.config.c);
        self.w_est_segments = cwnd_epoch;
        let e = Epoch {
            start: now,
            k_s,
            w_max_segments: w_max,
        };
        self.epoch = Some(e);
        e
    }

    fn save(&self) -> Saved {
        Saved {
            cwnd: self.cwnd,
            ssthresh_bytes: self.ssthresh_bytes,
            w_max_segments: self.w_max_segments,
            cwnd_prior_segments: self.cwnd_prior_segments,
            epoch: self.epoch,
            w_est_segments: self.w_est_segments,
            after_timeout: self.after_timeout,
        }
    }
}

impl CongestionController for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn on_ack_batch(&mut self, now: SimTime, batch: &AckBatch<'_>, rtt: &RttEstimator) {
        let n = batch.newly_acked_bytes;
        // RFC 9438 4.2: CUBIC "does not make any changes to the TCP Fast Recovery"; the window
        // does not grow during it (RFC 5681 3.2).
        if batch.in_recovery || n == 0 {
            return;
        }
        let smss = self.smss_bytes as f64;
        let limit = max_window_bytes(self.smss_bytes) as f64;
        if self.in_slow_start() {
            // RFC 9438 4.10 with RFC 5681 eq. (2).
            self.cwnd = (self.cwnd + (n as f64).min(smss)).min(limit);
            self.region = CubicRegion::SlowStart;
            return;
        }
        let e = match self.epoch {
            Some(e) => e,
            None => self.start_epoch(now),
        };
        // t in integer nanoseconds; seconds only from here on.
        let t_s = now.saturating_since(e.start).as_nanos() as f64 / NS_PER_S;
        let rtt_s = rtt.srtt().map_or(0.0, |d| d.as_nanos() as f64 / NS_PER_S);
        let cwnd = self.cwnd_segments();
        let segments_acked = n as f64 / smss;

        // Figure 4, with α_cubic = 1 once W_est has reached cwnd_prior.
        let alpha = if self.w_est_segments >= self.cwnd_prior_segments {
            1.0
        } else {
            self.alpha_cubic
        };
        self.w_est_segments += alpha * segments_acked / cwnd;

        let next = if self.w_cubic(&e, t_s) < self.w_est_segments {
            // RFC 9438 4.3: "cwnd SHOULD be set to W_est".
            self.region = CubicRegion::RenoFriendly;
            self.w_est_segments.max(cwnd)
        } else {
            // RFC 9438 4.2: target = W_cubic(t + RTT), within [cwnd, 1.5 cwnd].
            let target = self
                .w_cubic(&e, t_s + rtt_s)
                .max(cwnd)
                .min(MAX_TARGET_RATIO * cwnd);
            self.region = if cwnd < e.w_max_segments {
                CubicRegion::Concave
            } else {
                CubicRegion::Convex
            };
            // 4.4, 4.5: (target − cwnd)/cwnd per segment acknowledged, never past target.
            let gap = target - cwnd;
            cwnd + (gap / cwnd * segments_acked).min(gap)
        };
        self.cwnd = (next * smss).min(limit).max(self.cwnd);
    }

    fn on_congestion_event(&mut self, _now: SimTime, event: &CongestionEvent) -> Reduction {
        let smss = self.smss_bytes;
        let timeout = event.detection == Detection::RetransmissionTimeout;
        if event.repeated_timeout {
            // RFC 5681 3.1: ssthresh held; still the loss window.
            self.cwnd = (LOSS_WINDOW_SEGMENTS * smss) as f64;
            self.epoch = None;
            self.after_timeout = true;
            return Reduction {
                ssthresh_bytes: self.ssthresh_bytes,
                cwnd_bytes: self.window(),
            };
        }
        // 4.9: save what a spurious event would restore.
        self.prior = Some(self.save());
        let cwnd = self.cwnd_segments();
        // 4.7: fast convergence, before the reduction.
        let fast_convergence = self.config.fast_convergence
            && self
                .epoch
                .map(|e| e.w_max_segments)
                .or(self.w_max_segments)
                .is_some_and(|w_max| cwnd < w_max);
        self.w_max_segments = Some(if fast_convergence {
            cwnd * (1.0 + self.config.beta) / 2.0
        } else {
            cwnd
        });
        // 4.6, Figure 5: ssthresh = flight_size × β_cubic; cwnd_prior = cwnd; cwnd =
        // max(ssthresh, 2); ssthresh = max(ssthresh, 2). To the nearest byte.
        self.cwnd_prior_segments = cwnd;
        let ssthresh = libm::round(event.flight_size_bytes as f64 * self.config.beta) as u64;
        self.ssthresh_bytes = ssthresh
            .max(MIN_SSTHRESH_SEGMENTS * smss)
            .min(max_window_bytes(smss));
        // 4.8: a timeout reduces cwnd as RFC 5681 does (the loss window), and so does a
        // restart from it that the recovery role asks for (Tahoe).
        self.cwnd = if event.restart_slow_start {
            (LOSS_WINDOW_SEGMENTS * smss) as f64
        } else {
            self.ssthresh_bytes as f64
        };
        self.after_timeout = timeout;
        self.epoch = None;
        Reduction {
            ssthresh_bytes: self.ssthresh_bytes,
            cwnd_bytes: self.window(),
        }
    }

    /// RFC 9438 4.9: restore the saved state "if the current cwnd is lower than prior_cwnd".
    fn on_spurious_congestion(&mut self, _now: SimTime) {
        if let Some(p) = self.prior.take() {
            if self.cwnd < p.cwnd {
                self.cwnd = p.cwnd;
                self.ssthresh_bytes = p.ssthresh_bytes;
                self.w_max_segments = p.w_max_segments;
                self.cwnd_prior_segments = p.cwnd_prior_segments;
                self.epoch = p.epoch;
                self.w_est_segments = p.w_est_segments;
                self.after_timeout = p.after_timeout;
            }
        }
    }

    fn window(&self) -> u64 {
        (self.cwnd as u64).max(self.smss_bytes)
    }

    fn metrics(&self) -> CcMetrics {
        CcMetrics::new(self.window(), self.ssthresh_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{self, estimator};
    use super::*;
    use crate::tcp::rtt::RttEstimator;

    const SMSS: u64 = 1000;

    fn cubic_with(config: CubicConfig, iw_segments: u64) -> Cubic {
        Cubic::new(
            &config,
            &ControllerInit {
                smss_bytes: SMSS,
                initial_window_bytes: iw_segments * SMSS,
            },
        )
    }

    fn cubic(iw_segments: u64) -> Cubic {
        cubic_with(CubicConfig::default(), iw_segments)
    }

    fn event(detection: Detection, flight_segments: u64) -> CongestionEvent {
        test_support::congestion_event(detection, flight_segments, SMSS)
    }

    fn ack(cc: &mut Cubic, now: SimTime, bytes: u64, in_recovery: bool, rtt: &RttEstimator) {
        let batch = test_support::plain_ack(bytes, 0, in_recovery, SMSS);
        cc.on_ack_batch(now, &batch, rtt);
    }

    /// An ACK-clocked round trip starting at `*now`: one ACK per segment of the window,
    /// evenly spread over `rtt`.
    fn round(cc: &mut Cubic, now: &mut SimTime, rtt: SimDuration, est: &RttEstimator) {
        let n = (cc.window() / SMSS).max(1);
        let start = *now;
        for i in 1..=n {
            *now = start + SimDuration::from_nanos(rtt.as_nanos() * i / n);
            ack(cc, *now, SMSS, false, est);
        }
    }

    fn segments(cc: &Cubic) -> f64 {
        cc.cwnd / SMSS as f64
    }

    #[test]
    fn defaults_are_rfc_9438s() {
        let c = CubicConfig::default();
        assert_eq!((c.c, c.beta, c.fast_convergence), (0.4, 0.7, true));
        let cc = cubic(10);
        assert!((cc.alpha_cubic - 3.0 * 0.3 / 1.7).abs() < 1e-15);
        assert!((cc.alpha_cubic - 0.5294).abs() < 1e-4);
    }

    #[test]
    fn loss_reduces_by_beta_0_7() {
        let mut cc = cubic(100);
        let r = cc.on_congestion_event(SimTime::ZERO, &event(Detection::DupAcks, 100));
        assert_eq!((r.ssthresh_bytes, r.cwnd_bytes), (70 * SMSS, 70 * SMSS));
        assert_eq!(cc.w_max_segments(), Some(100.0));
        // At least two segments.
        let r = cc.on_congestion_event(SimTime::ZERO, &event(Detection::DupAcks, 2));
        assert_eq!(r.ssthresh_bytes, 2 * SMSS);
    }

    #[test]
    fn k_is_the_cube_root_of_the_gap_over_c() {
        let est = estimator(SimDuration::from_millis(100));
        let mut cc = cubic(100);
        cc.on_congestion_event(SimTime::ZERO, &event(Detection::DupAcks, 100));
        let t0 = SimTime::from_nanos(5_000_000_000);
        ack(&mut cc, t0, SMSS, false, &est);
        // K = ∛((100 − 70) / 0.4) = ∛75.
        let k = cc.k_seconds().unwrap();
        assert!((k - libm::cbrt(75.0)).abs() < 1e-12, "K {k}");
        assert!((k - 4.217_163).abs() < 1e-6);
        assert_eq!(cc.epoch_start(), Some(t0));
        // W_cubic(0) = cwnd_epoch, W_cubic(K) = W_max.
        let w0 = cc.w_cubic_segments(SimDuration::ZERO).unwrap();
        assert!((w0 - 70.0).abs() < 1e-9, "{w0}");
        let k_ns = SimDuration::from_nanos((k * 1e9).round() as u64);
        let wk = cc.w_cubic_segments(k_ns).unwrap();
        assert!((wk - 100.0).abs() < 1e-9, "{wk}");
    }

    #[test]
    fn window_follows_w_cubic_and_reaches_w_max_at_k() {
        // W_max = 1000 segments, RTT 100 ms: K = ∛(300 / 0.4) ≈ 9.09 s, long before W_est
        // (about half a segment per round trip from 700) could catch up.
        let rtt = SimDuration::from_millis(100);
        let est = estimator(rtt);
        let mut cc = cubic(1000);
        cc.on_congestion_event(SimTime::ZERO, &event(Detection::DupAcks, 1000));
        let mut now = SimTime::from_nanos(1_000_000_000);
        round(&mut cc, &mut now, rtt, &est);
        let start = cc.epoch_start().unwrap();
        let k = cc.k_seconds().unwrap();
        assert!((k - libm::cbrt(750.0)).abs() < 1e-12);
        let mut checked_half = false;
        loop {
            let t = now.saturating_since(start);
            let t_s = t.as_nanos() as f64 / 1e9;
            let expected = cc.w_cubic_segments(t).unwrap();
            if !checked_half && t_s >= k / 2.0 {
                // W_cubic(K/2) = 1000 − 0.4·(K/2)³ = 962.5, within 0.5 %.
                assert!(
                    (segments(&cc) / expected - 1.0).abs() < 0.005,
                    "t {t_s}: cwnd {} W_cubic {expected}",
                    segments(&cc)
                );
                assert_eq!(cc.region(), CubicRegion::Concave);
                checked_half = true;
            }
            if t_s >= k {
                assert!(
                    (segments(&cc) / 1000.0 - 1.0).abs() < 0.005,
                    "at K cwnd {} segments",
                    segments(&cc)
                );
                break;
            }
            round(&mut cc, &mut now, rtt, &est);
        }
        assert!(checked_half);
        // Beyond K the window probes above W_max: the convex region.
        for _ in 0..30 {
            round(&mut cc, &mut now, rtt, &est);
        }
        assert_eq!(cc.region(), CubicRegion::Convex);
        let t = now.saturating_since(start);
        let expected = cc.w_cubic_segments(t).unwrap();
        assert!(segments(&cc) > 1000.0);
        assert!((segments(&cc) / expected - 1.0).abs() < 0.005);
    }

    #[test]
    fn reno_friendly_region_dominates_at_small_rtt_times_window() {
        // W_max = 10 segments, RTT 10 ms: K ≈ 1.96 s, while W_est gains about one segment per
        // 10 ms round trip.
        let rtt = SimDuration::from_millis(10);
        let est = estimator(rtt);
        let mut cc = cubic(10);
        cc.on_congestion_event(SimTime::ZERO, &event(Detection::DupAcks, 10));
        let mut now = SimTime::ZERO;
        for _ in 0..100 {
            round(&mut cc, &mut now, rtt, &est);
        }
        assert_eq!(cc.region(), CubicRegion::RenoFriendly);
        let t = now.saturating_since(cc.epoch_start().unwrap());
        let w_cubic = cc.w_cubic_segments(t).unwrap();
        assert!(w_cubic < 10.0, "W_cubic {w_cubic}");
        // About 0.53 per RTT until W_est reaches cwnd_prior (10), then 1 per RTT.
        let w = segments(&cc);
        assert!((95.0..=105.0).contains(&w), "cwnd {w} segments");
        assert!((w - cc.w_est_segments()).abs() < 1e-9);
    }

    #[test]
    fn w_est_grows_by_alpha_cubic_then_by_one_per_rtt() {
        let rtt = SimDuration::from_millis(10);
        let est = estimator(rtt);
        let mut cc = cubic(100);
        cc.on_congestion_event(SimTime::ZERO, &event(Detection::DupAcks, 100));
        let mut now = SimTime::ZERO;
        round(&mut cc, &mut now, rtt, &est);
        let w1 = cc.w_est_segments();
        round(&mut cc, &mut now, rtt, &est);
        let per_rtt = cc.w_est_segments() - w1;
        assert!((per_rtt - cc.alpha_cubic).abs() < 0.01, "{per_rtt}");
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        let mut on = cubic(100);
        let mut off = cubic_with(
            CubicConfig {
                fast_convergence: false,
                ..CubicConfig::default()
            },
            100,
        );
        for cc in [&mut on, &mut off] {
            cc.on_congestion_event(SimTime::ZERO, &event(Detection::DupAcks, 100));
            assert_eq!(cc.w_max_segments(), Some(100.0));
            // A second loss below W_max: the available bandwidth shrank.
            cc.on_congestion_event(SimTime::ZERO, &event(Detection::DupAcks, 70));
        }
        let w = on.w_max_segments().unwrap();
        assert!((w - 70.0 * 0.85).abs() < 1e-9, "W_max {w}");
        assert_eq!(off.w_max_segments(), Some(70.0));
        assert_eq!(on.window(), 49 * SMSS);
    }

    #[test]
    fn timeout_restarts_from_one_segment_then_k_is_zero() {
        let rtt = SimDuration::from_millis(100);
        let est = estimator(rtt);
        let mut cc = cubic(100);
        let r =
            cc.on_congestion_event(SimTime::ZERO, &event(Detection::RetransmissionTimeout, 100));
        assert_eq!((r.ssthresh_bytes, r.cwnd_bytes), (70 * SMSS, SMSS));
        let mut now = SimTime::ZERO;
        while cc.window() < cc.ssthresh_bytes() {
            round(&mut cc, &mut now, rtt, &est);
        }
        // Slow start overshoots ssthresh by less than a round trip's growth.
        round(&mut cc, &mut now, rtt, &est);
        assert_eq!(cc.k_seconds(), Some(0.0));
        let w = cc.w_max_segments().unwrap();
        assert!((70.0..=140.0).contains(&w), "W_max = cwnd_epoch = {w}");
        // A repeated timeout holds ssthresh.
        let mut repeated = event(Detection::RetransmissionTimeout, 1);
        repeated.repeated_timeout = true;
        let r = cc.on_congestion_event(now, &repeated);
        assert_eq!((r.ssthresh_bytes, r.cwnd_bytes), (70 * SMSS, SMSS));
    }

    #[test]
    fn no_growth_during_fast_recovery() {
        let est = estimator(SimDuration::from_millis(100));
        let mut cc = cubic(100);
        cc.on_congestion_event(SimTime::ZERO, &event(Detection::DupAcks, 100));
        ack(&mut cc, SimTime::from_nanos(1), 10 * SMSS, true, &est);
        assert_eq!(cc.window(), 70 * SMSS);
        assert_eq!(cc.epoch_start(), None, "the stage begins after recovery");
    }

    #[test]
    fn time_is_exact_far_into_a_run() {
        // An epoch starting after 10^7 s (116 days) of simulated time: t is computed in
        // integer nanoseconds, so W_cubic(0) is still exactly cwnd_epoch.
        let est = estimator(SimDuration::from_millis(100));
        let mut cc = cubic(100);
        cc.on_congestion_event(SimTime::ZERO, &event(Detection::DupAcks, 100));
        let t0 = SimTime::from_nanos(10_000_000 * 1_000_000_000 + 123);
        ack(&mut cc, t0, SMSS, false, &est);
        let w = cc.w_cubic_segments(SimDuration::ZERO).unwrap();
        assert!((w - 70.0).abs() < 1e-9);
        ack(&mut cc, t0 + SimDuration::from_millis(1), SMSS, false, &est);
        assert!(cc.window() >= 70 * SMSS);
    }

    #[test]
    fn spurious_congestion_restores_the_saved_state() {
        let est = estimator(SimDuration::from_millis(100));
        let mut cc = cubic(100);
        let mut now = SimTime::ZERO;
        round(&mut cc, &mut now, SimDuration::from_millis(100), &est);
        let before = (cc.window(), cc.ssthresh_bytes(), cc.w_max_segments());
        cc.on_congestion_event(now, &event(Detection::DupAcks, 150));
        assert!(cc.window() < before.0);
        cc.on_spurious_congestion(now);
        assert_eq!(
            (cc.window(), cc.ssthresh_bytes(), cc.w_max_segments()),
            before
        );
    }

    #[test]
    fn slow_start_is_renos() {
        let est = estimator(SimDuration::from_millis(100));
        let mut cc = cubic(10);
        let mut now = SimTime::ZERO;
        round(&mut cc, &mut now, SimDuration::from_millis(100), &est);
        assert_eq!(cc.window(), 20 * SMSS);
        assert_eq!(cc.region(), CubicRegion::SlowStart);
    }
}
