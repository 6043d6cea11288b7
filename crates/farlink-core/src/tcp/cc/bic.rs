//! BIC-TCP: binary search towards the window of the last loss, Linux's default congestion
//! control from 2.6.8 to 2.6.18 (CUBIC replaced it in 2.6.19).
//!
//! Read first: L. Xu, K. Harfoush, I. Rhee, "Binary Increase Congestion Control (BIC) for Fast
//! Long-Distance Networks", IEEE INFOCOM 2004 (section III: binary search increase, additive
//! increase capped by S_max, max probing, fast convergence, the multiplicative decrease β and
//! the low window below which BIC is Reno); then the Linux 2.6 module `net/ipv4/tcp_bic.c`
//! (2.6.13 to 2.6.18, where congestion control became pluggable), whose integer per-ACK
//! arithmetic this file follows. RFC 5681 for slow start and the loss window.
//!
//! All window arithmetic is in whole segments and integers, as the kernel's: W_max
//! (`last_max_cwnd`) and cwnd in segments, β as 819/1024. Per ACK in congestion avoidance the
//! controller computes `cnt`, the number of ACKs after which cwnd grows by one segment:
//! - cwnd ≤ low_window: `cnt = cwnd` (Reno, one segment per round trip);
//! - cwnd < W_max, with `dist = (W_max − cwnd)/B`: `dist > S_max` → `cnt = cwnd/S_max` (additive
//!   increase, S_max segments per round trip); `dist ≤ 1` → `cnt = cwnd·smooth_part/B` (the
//!   plateau just below W_max); otherwise `cnt = cwnd/dist` (binary search: each round trip a
//!   B-th of the way to W_max, i.e. towards the midpoint for B = 2, a quarter for B = 4);
//! - cwnd ≥ W_max (max probing): `cwnd < W_max + B` → the plateau again; `cwnd < W_max +
//!   S_max·(B − 1)` → `cnt = cwnd·(B − 1)/(cwnd − W_max)` (slow-start-like, growing with the
//!   distance beyond W_max); beyond that `cnt = cwnd/S_max`;
//! - with no W_max (no loss yet, or after a timeout) `cnt ≤ 20`: at least 5 % per round trip;
//! - above low_window `cnt` is then divided by the measured segments per ACK (delayed ACKs), so
//!   that the growth per round trip does not depend on how many segments each ACK covers.
//!
//! On a loss: `W_max = cwnd`, or `cwnd·(1 + β)/2` when cwnd is below the previous W_max and fast
//! convergence is on; `ssthresh = max(cwnd·β, 2)`, or `max(cwnd/2, 2)` at or below low_window;
//! cwnd = ssthresh (fast recovery) or the loss window (timeout). A timeout (Linux's Loss state)
//! also forgets W_max and the ACK ratio.
//!
//! Choices (see also `docs/congestion-control.md`):
//! - The reduction is computed from the controller's cwnd, as Linux 2.6 did, not from RFC 5681's
//!   FlightSize; for a window-limited sender they are the same.
//! - Slow start is RFC 5681's per ACK `min(N, SMSS)`, in slow start while cwnd ≤ ssthresh (the
//!   kernel's test); Linux 2.6 added one segment per ACK, the same for full-sized segments.
//! - `cnt` is recomputed on every ACK; the kernel skipped the recomputation for 1/32 s when
//!   cwnd had not changed, which only delays a change of the ACK ratio.
//! - As Linux 2.6 (`tcp_is_cwnd_limited` without TSO), the window grows only on an ACK that
//!   found the sender window-limited: no room for another full segment in flight. Unlike the
//!   other controllers here, which grow regardless: since the reduction is taken from cwnd, a
//!   window grown far past what the receive window or the application lets out would make a
//!   loss reduce nothing.
//! - A spurious congestion event restores max(cwnd, cwnd before the reduction) and the previous
//!   ssthresh if larger (Linux's undo); W_max stays as the event set it, as in the kernel.

use super::{
    max_window_bytes, AckBatch, CcMetrics, CongestionController, CongestionEvent, ControllerInit,
    Detection, Reduction, MAX_CWND_BYTES,
};
use crate::tcp::rtt::RttEstimator;
use crate::time::SimTime;

/// Linux 2.6.13 `tcp_bic.c` `BICTCP_B`: "In binary search, go to point (max+min)/N". The paper
/// (section III) halves the interval; the kernel moves a quarter of the way per round trip.
pub const DEFAULT_B: u64 = 4;
/// Linux 2.6.13 `tcp_bic.c` `max_increment = 16`, the paper's S_max: "Limit on increment
/// allowed during binary search", segments per round trip. (The earlier BIC inside
/// `tcp_input.c`, 2.6.8 to 2.6.12, used `BICTCP_MAX_INCREMENT 32`.)
pub const DEFAULT_MAX_INCREMENT_SEGMENTS: u64 = 16;
/// Linux 2.6.13 `tcp_bic.c` `low_window = 14`: "lower bound on congestion window (for TCP
/// friendliness)"; at or below it BIC grows and reduces as Reno. The paper's low_window.
pub const DEFAULT_LOW_WINDOW_SEGMENTS: u64 = 14;
/// Linux 2.6.13 `tcp_bic.c` `beta = 819`, in 1024ths (≈ 0.8): ssthresh = cwnd·β after a loss.
/// The paper's β = 0.8. (2.6.8 to 2.6.12 kept 7/8, `BICTCP_1_OVER_BETA 8`.)
pub const DEFAULT_BETA_PER_1024: u64 = 819;
/// Linux `tcp_bic.c` `BICTCP_BETA_SCALE`.
pub const BETA_SCALE: u64 = 1024;
/// Linux 2.6.13 `tcp_bic.c` `smooth_part = 20`: "log(B/(B*Smin))/log(B/(B-1))+B, # of RTT
/// from Wmax-B to Wmax": within B segments of W_max the window grows B/smooth_part segments
/// per round trip (the paper's S_min plateau).
pub const DEFAULT_SMOOTH_PART: u64 = 20;
/// Linux `tcp_bic.c` `bictcp_update`: "if in slow start or link utilization is very low" (no
/// W_max), `cnt` is at most 20: "increase cwnd 5% per RTT".
pub const NO_W_MAX_MAX_CNT: u64 = 20;
/// Linux `tcp_bic.c` `ACK_RATIO_SHIFT 4`: the segments-per-ACK ratio is kept in 16ths.
const ACK_RATIO_SHIFT: u32 = 4;
/// Linux `tcp_bic.c` `bictcp_reset`: `delayed_ack = 2 << ACK_RATIO_SHIFT`, two segments per
/// ACK (RFC 1122 delayed ACKs) until measured.
const INITIAL_ACK_RATIO_X16: u64 = 2 << ACK_RATIO_SHIFT;
/// Linux `tcp_bic.c` `bictcp_recalc_ssthresh`: `max(..., 2U)`; RFC 5681 eq. (4).
pub const MIN_SSTHRESH_SEGMENTS: u64 = 2;
/// RFC 5681 3.1: the loss window, one segment.
pub const LOSS_WINDOW_SEGMENTS: u64 = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BicConfig {
    /// B, the binary search divisor.
    pub b: u64,
    /// S_max, segments per round trip.
    pub max_increment_segments: u64,
    /// At or below this window BIC is Reno.
    pub low_window_segments: u64,
    /// β in 1024ths.
    pub beta_per_1024: u64,
    /// Round trips from W_max − B to W_max.
    pub smooth_part: u64,
    /// Linux 2.6.13 `tcp_bic.c` `fast_convergence = 1`; the paper's fast convergence.
    pub fast_convergence: bool,
    /// RFC 5681 3.1: "arbitrarily high". Linux's `initial_ssthresh` module parameter overrides
    /// the route's (unset by default in `tcp_bic.c`; some 2.6 controllers, e.g. 2.6.16's
    /// `tcp_cubic.c`, set 100 segments).
    pub initial_ssthresh_bytes: u64,
}

impl Default for BicConfig {
    /// The Linux 2.6.13–2.6.18 `tcp_bic.c` module defaults: B = 4, S_max = 16, low_window =
    /// 14, β = 819/1024, smooth_part = 20, fast convergence on.
    fn default() -> Self {
        BicConfig {
            b: DEFAULT_B,
            max_increment_segments: DEFAULT_MAX_INCREMENT_SEGMENTS,
            low_window_segments: DEFAULT_LOW_WINDOW_SEGMENTS,
            beta_per_1024: DEFAULT_BETA_PER_1024,
            smooth_part: DEFAULT_SMOOTH_PART,
            fast_convergence: true,
            initial_ssthresh_bytes: u64::MAX,
        }
    }
}

/// The rule the last ACK's growth followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BicRegion {
    SlowStart,
    /// cwnd ≤ low_window: Reno's one segment per round trip.
    RenoLow,
    /// Below W_max, farther than B·S_max: S_max segments per round trip.
    AdditiveIncrease,
    /// Below W_max: a B-th of the distance per round trip, or the plateau just below it.
    BinarySearch,
    /// At or above W_max (or without one): slow-start-like growth away from it, S_max per
    /// round trip at most.
    MaxProbing,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Saved {
    cwnd_bytes: u64,
    ssthresh_bytes: u64,
}

#[derive(Clone, Debug)]
pub struct Bic {
    config: BicConfig,
    smss_bytes: u64,
    cwnd_bytes: u64,
    ssthresh_bytes: u64,
    /// W_max in segments; 0 before any loss and after a timeout (Linux's `last_max_cwnd`).
    last_max_cwnd_segments: u64,
    /// ACKs per one-segment increase, from the last ACK.
    cnt: u64,
    /// ACKs counted towards the next increase (Linux's `snd_cwnd_cnt`).
    ack_count: u64,
    /// Segments per ACK, in 16ths, a moving average with gain 1/16 (Linux's `delayed_ack`).
    ack_ratio_x16: u64,
    region: BicRegion,
    prior: Option<Saved>,
}

impl Bic {
    pub fn new(config: &BicConfig, init: &ControllerInit) -> Self {
        let smss_bytes = init.smss_bytes.max(1);
        let d = BicConfig::default();
        // Out-of-range settings fall back to the kernel's (B ≥ 2 keeps B − 1 ≥ 1; β < 1).
        let config = BicConfig {
            b: if config.b >= 2 { config.b } else { d.b },
            max_increment_segments: config.max_increment_segments.max(1),
            beta_per_1024: if config.beta_per_1024 > 0 && config.beta_per_1024 < BETA_SCALE {
                config.beta_per_1024
            } else {
                d.beta_per_1024
            },
            smooth_part: config.smooth_part.max(1),
            ..*config
        };
        Bic {
            config,
            smss_bytes,
            cwnd_bytes: init
                .initial_window_bytes
                .clamp(smss_bytes, max_window_bytes(smss_bytes)),
            ssthresh_bytes: config
                .initial_ssthresh_bytes
                .max(MIN_SSTHRESH_SEGMENTS * smss_bytes),
            last_max_cwnd_segments: 0,
            cnt: 0,
            ack_count: 0,
            ack_ratio_x16: INITIAL_ACK_RATIO_X16,
            region: BicRegion::SlowStart,
            prior: None,
        }
    }

    pub fn ssthresh_bytes(&self) -> u64 {
        self.ssthresh_bytes
    }
    /// W_max in segments, `None` before any loss and after a timeout.
    pub fn w_max_segments(&self) -> Option<u64> {
        (self.last_max_cwnd_segments > 0).then_some(self.last_max_cwnd_segments)
    }
    pub fn region(&self) -> BicRegion {
        self.region
    }
    /// ACKs per one-segment increase, as the last ACK computed it.
    pub fn acks_per_increase(&self) -> u64 {
        self.cnt
    }
    /// The measured segments per ACK.
    pub fn segments_per_ack(&self) -> f64 {
        self.ack_ratio_x16 as f64 / (1u64 << ACK_RATIO_SHIFT) as f64
    }

    fn cwnd_segments(&self) -> u64 {
        (self.cwnd_bytes / self.smss_bytes).max(1)
    }

    /// Linux's `snd_cwnd <= snd_ssthresh`.
    fn in_slow_start(&self) -> bool {
        self.cwnd_bytes <= self.ssthresh_bytes
    }

    /// `cnt` in round-trip terms (ACKs per increase if every ACK covered one segment) and the
    /// region, for a window of `cwnd` segments (Linux's `bictcp_update`, before the ACK ratio).
    fn segments_per_increase(&self, cwnd: u64) -> (u64, BicRegion) {
        let BicConfig {
            b,
            max_increment_segments: s_max,
            low_window_segments,
            smooth_part,
            ..
        } = self.config;
        let w_max = self.last_max_cwnd_segments;
        let plateau = cwnd.saturating_mul(smooth_part) / b;
        let (cnt, region) = if cwnd <= low_window_segments {
            (cwnd, BicRegion::RenoLow)
        } else if cwnd < w_max {
            let dist = (w_max - cwnd) / b;
            if dist > s_max {
                (cwnd / s_max, BicRegion::AdditiveIncrease)
            } else if dist <= 1 {
                (plateau, BicRegion::BinarySearch)
            } else {
                (cwnd / dist, BicRegion::BinarySearch)
            }
        } else if cwnd < w_max.saturating_add(b) {
            (plateau, BicRegion::MaxProbing)
        } else if cwnd < w_max.saturating_add(s_max.saturating_mul(b - 1)) {
            // cwnd ≥ w_max + b here, so the divisor is at least b.
            (
                cwnd.saturating_mul(b - 1) / (cwnd - w_max),
                BicRegion::MaxProbing,
            )
        } else {
            (cwnd / s_max, BicRegion::MaxProbing)
        };
        if w_max == 0 && region != BicRegion::RenoLow {
            (cnt.min(NO_W_MAX_MAX_CNT), region)
        } else {
            (cnt, region)
        }
    }

    /// Linux's `bictcp_reset`, on entering the Loss state (a retransmission timeout).
    fn forget(&mut self) {
        self.last_max_cwnd_segments = 0;
        self.cnt = 0;
        self.ack_count = 0;
        self.ack_ratio_x16 = INITIAL_ACK_RATIO_X16;
    }
}

impl CongestionController for Bic {
    fn name(&self) -> &'static str {
        "bic"
    }

    fn on_ack_batch(&mut self, _now: SimTime, batch: &AckBatch<'_>, _rtt: &RttEstimator) {
        let n = batch.newly_acked_bytes;
        // RFC 5681 3.2: no growth during fast recovery; Linux calls neither the ACK-ratio hook
        // (Open state only) nor the window growth then.
        if batch.in_recovery || n == 0 {
            return;
        }
        let smss = self.smss_bytes;
        // Linux `bictcp_acked`: ratio += segments − ratio/16, i.e. ratio ← 15/16 ratio +
        // segments, in 16ths. The average stays below 16 times the largest ACK, so an ACK of
        // at most 2^30 segments (the window cap) cannot overflow it.
        let segments = n.div_ceil(smss).min(MAX_CWND_BYTES);
        self.ack_ratio_x16 =
            self.ack_ratio_x16 - (self.ack_ratio_x16 >> ACK_RATIO_SHIFT) + segments;
        // Linux 2.6 `bictcp_cong_avoid`: `if (!tcp_is_cwnd_limited(sk, in_flight)) return;`.
        if batch.prior_in_flight_bytes.saturating_add(smss) <= self.cwnd_bytes {
            return;
        }
        let limit = max_window_bytes(smss);
        if self.in_slow_start() {
            // RFC 5681 eq. (2).
            self.cwnd_bytes = (self.cwnd_bytes + n.min(smss)).min(limit);
            self.region = BicRegion::SlowStart;
            return;
        }
        let (per_round_trip, region) = self.segments_per_increase(self.cwnd_segments());
        self.region = region;
        self.cnt = if region == BicRegion::RenoLow {
            // Linux `bictcp_update` returns before the ACK ratio here: cnt = cwnd ACKs, so
            // with delayed ACKs the low window grows as per-ACK Reno does, half a segment per
            // round trip.
            per_round_trip.max(1)
        } else {
            // cnt counts ACKs: divide by the segments each ACK covers.
            ((per_round_trip << ACK_RATIO_SHIFT) / self.ack_ratio_x16.max(1)).max(1)
        };
        // Linux 2.6 `bictcp_cong_avoid`: one segment once cnt ACKs have been counted.
        if self.ack_count >= self.cnt {
            self.cwnd_bytes = (self.cwnd_bytes + smss).min(limit);
            self.ack_count = 0;
        } else {
            self.ack_count += 1;
        }
    }

    fn on_congestion_event(&mut self, _now: SimTime, event: &CongestionEvent) -> Reduction {
        let smss = self.smss_bytes;
        let timeout = event.detection == Detection::RetransmissionTimeout;
        if event.repeated_timeout {
            // RFC 5681 3.1: ssthresh held; still the loss window, still in the Loss state.
            self.cwnd_bytes = LOSS_WINDOW_SEGMENTS * smss;
            self.forget();
            return Reduction {
                ssthresh_bytes: self.ssthresh_bytes,
                cwnd_bytes: self.window(),
            };
        }
        self.prior = Some(Saved {
            cwnd_bytes: self.cwnd_bytes,
            ssthresh_bytes: self.ssthresh_bytes,
        });
        let cwnd = self.cwnd_segments();
        let beta = self.config.beta_per_1024;
        // W_max and fast convergence (Linux `bictcp_recalc_ssthresh`; the paper's section III).
        self.last_max_cwnd_segments =
            if self.config.fast_convergence && cwnd < self.last_max_cwnd_segments {
                cwnd * (BETA_SCALE + beta) / (2 * BETA_SCALE)
            } else {
                cwnd
            };
        let ssthresh = if cwnd <= self.config.low_window_segments {
            cwnd / 2
        } else {
            cwnd * beta / BETA_SCALE
        };
        self.ssthresh_bytes =
            (ssthresh.max(MIN_SSTHRESH_SEGMENTS) * smss).min(max_window_bytes(smss));
        self.cwnd_bytes = if event.restart_slow_start {
            LOSS_WINDOW_SEGMENTS * smss
        } else {
            self.ssthresh_bytes
        };
        self.ack_count = 0;
        if timeout {
            // Linux computes ssthresh (and W_max) first, then enters the Loss state, whose
            // `bictcp_reset` forgets W_max: the next stage probes from scratch.
            self.forget();
        }
        Reduction {
            ssthresh_bytes: self.ssthresh_bytes,
            cwnd_bytes: self.window(),
        }
    }

    /// Linux `tcp_undo_cwnd`: cwnd back to at least its value before the reduction, ssthresh
    /// to the previous one if that was larger.
    fn on_spurious_congestion(&mut self, _now: SimTime) {
        if let Some(p) = self.prior.take() {
            self.cwnd_bytes = self.cwnd_bytes.max(p.cwnd_bytes);
            self.ssthresh_bytes = self.ssthresh_bytes.max(p.ssthresh_bytes);
        }
    }

    fn window(&self) -> u64 {
        self.cwnd_bytes.max(self.smss_bytes)
    }

    fn metrics(&self) -> CcMetrics {
        CcMetrics::new(self.window(), self.ssthresh_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support;
    use super::*;
    use crate::tcp::rtt::RttEstimator;
    use crate::time::SimDuration;

    const SMSS: u64 = 1000;

    fn bic_with(config: BicConfig, iw_segments: u64) -> Bic {
        Bic::new(
            &config,
            &ControllerInit {
                smss_bytes: SMSS,
                initial_window_bytes: iw_segments * SMSS,
            },
        )
    }

    fn bic(iw_segments: u64) -> Bic {
        bic_with(BicConfig::default(), iw_segments)
    }

    fn event(detection: Detection, flight_segments: u64) -> CongestionEvent {
        test_support::congestion_event(detection, flight_segments, SMSS)
    }

    fn estimator() -> RttEstimator {
        test_support::estimator(SimDuration::from_millis(100))
    }

    /// An ACK to a window-limited sender: the whole window was in flight.
    fn ack(cc: &mut Bic, now: SimTime, bytes: u64, in_recovery: bool) {
        let in_flight = cc.window();
        ack_in_flight(cc, now, bytes, in_recovery, in_flight);
    }

    fn ack_in_flight(cc: &mut Bic, now: SimTime, bytes: u64, in_recovery: bool, in_flight: u64) {
        let batch = test_support::plain_ack(bytes, in_flight, in_recovery, SMSS);
        cc.on_ack_batch(now, &batch, &estimator());
    }

    /// One ACK-clocked round trip: the window's segments acknowledged `per_ack` at a time.
    fn round_acking(cc: &mut Bic, per_ack: u64) {
        let n = (cc.window() / SMSS / per_ack).max(1);
        for _ in 0..n {
            ack(cc, SimTime::ZERO, per_ack * SMSS, false);
        }
    }

    fn round(cc: &mut Bic) {
        round_acking(cc, 1)
    }

    fn segments(cc: &Bic) -> u64 {
        cc.window() / SMSS
    }

    /// A controller in congestion avoidance at `cwnd` segments with W_max = `w_max`, its ACK
    /// ratio measured at one segment per ACK.
    fn after_loss_at(w_max: u64) -> Bic {
        let mut cc = bic(w_max);
        cc.on_congestion_event(SimTime::ZERO, &event(Detection::DupAcks, w_max));
        // Settle the ACK-ratio average at one segment per ACK without growing (in recovery
        // the ratio is not measured, so use a window-neutral warm-up instead).
        cc.ack_ratio_x16 = 1 << ACK_RATIO_SHIFT;
        cc
    }

    #[test]
    fn defaults_are_the_linux_2_6_modules() {
        let c = BicConfig::default();
        assert_eq!(
            (
                c.b,
                c.max_increment_segments,
                c.low_window_segments,
                c.beta_per_1024,
                c.smooth_part,
                c.fast_convergence
            ),
            (4, 16, 14, 819, 20, true)
        );
        assert_eq!(bic(3).segments_per_ack(), 2.0);
    }

    #[test]
    fn decrease_is_beta_above_low_window_and_half_at_or_below_it() {
        let mut cc = bic(100);
        let r = cc.on_congestion_event(SimTime::ZERO, &event(Detection::DupAcks, 100));
        // 100 · 819 / 1024 = 79.98, truncated as the kernel does.
        assert_eq!((r.ssthresh_bytes, r.cwnd_bytes), (79 * SMSS, 79 * SMSS));
        assert_eq!(cc.w_max_segments(), Some(100));
        let mut cc = bic(14);
        let r = cc.on_congestion_event(SimTime::ZERO, &event(Detection::DupAcks, 14));
        assert_eq!(r.ssthresh_bytes, 7 * SMSS);
        let mut cc = bic(15);
        let r = cc.on_congestion_event(SimTime::ZERO, &event(Detection::DupAcks, 15));
        assert_eq!(r.ssthresh_bytes, 11 * SMSS);
        let mut cc = bic(3);
        let r = cc.on_congestion_event(SimTime::ZERO, &event(Detection::DupAcks, 3));
        assert_eq!(r.ssthresh_bytes, 2 * SMSS, "at least two segments");
    }

    #[test]
    fn binary_search_converges_to_w_max_and_rests_there() {
        let mut cc = after_loss_at(100);
        assert_eq!(segments(&cc), 79);
        // The first ACK is slow start (cwnd = ssthresh, Linux's <=), then binary search.
        let mut sizes = vec![segments(&cc)];
        for _ in 0..12 {
            round(&mut cc);
            sizes.push(segments(&cc));
        }
        assert_eq!(cc.region(), BicRegion::BinarySearch);
        // Each round trip closes about a quarter of the remaining gap (B = 4): the increments
        // shrink, and the window approaches W_max from below without passing it.
        let steps: Vec<u64> = sizes.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(steps[1] >= 4, "{sizes:?}");
        assert!(steps[1] > steps[8], "{sizes:?}");
        assert!(sizes.iter().all(|&w| w <= 100), "{sizes:?}");
        assert!(sizes[12] >= 94, "{sizes:?}");
        // On the plateau (within B of W_max): B/smooth_part = 0.2 segments per round trip.
        let before = segments(&cc);
        for _ in 0..5 {
            round(&mut cc);
        }
        assert!(segments(&cc) - before <= 2, "{before} -> {}", segments(&cc));
    }

    #[test]
    fn additive_increase_far_below_w_max_is_capped_at_s_max() {
        // W_max 1000: after the loss cwnd 799, dist = 50 > 16.
        let mut cc = after_loss_at(1000);
        round(&mut cc);
        let w0 = segments(&cc);
        round(&mut cc);
        assert_eq!(cc.region(), BicRegion::AdditiveIncrease);
        let step = segments(&cc) - w0;
        // cnt = cwnd/16 ACKs and one more to count: a little under 16 per round trip.
        assert!((14..=16).contains(&step), "step {step}");
    }

    #[test]
    fn max_probing_beyond_w_max_accelerates_then_is_linear() {
        let mut cc = after_loss_at(100);
        while segments(&cc) < 100 {
            round(&mut cc);
        }
        // The plateau: within B = 4 segments of W_max the window grows B/smooth_part = 0.2
        // segments per round trip, so it stays near W_max for about smooth_part round trips.
        let mut plateau_rounds = 0;
        while segments(&cc) < 104 {
            round(&mut cc);
            plateau_rounds += 1;
        }
        assert!((15..=25).contains(&plateau_rounds), "{plateau_rounds}");
        let mut sizes = vec![segments(&cc)];
        for _ in 0..10 {
            round(&mut cc);
            sizes.push(segments(&cc));
        }
        assert_eq!(cc.region(), BicRegion::MaxProbing);
        let steps: Vec<u64> = sizes.windows(2).map(|w| w[1] - w[0]).collect();
        // Then faster the farther beyond W_max (cwnd − W_max over B − 1 per round trip, slow
        // start's shape), up to S_max = 16 per round trip once 48 segments beyond it.
        assert!(steps[0] <= 2, "{sizes:?}");
        assert!(steps[3] > steps[0], "{sizes:?}");
        let last = *steps.last().unwrap();
        assert!(steps.iter().all(|&s| s <= 16), "{sizes:?}");
        assert!(sizes[10] > 100 + 48, "{sizes:?}");
        assert!((14..=16).contains(&last), "{sizes:?}");
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        let mut on = bic(100);
        let mut off = bic_with(
            BicConfig {
                fast_convergence: false,
                ..BicConfig::default()
            },
            100,
        );
        for cc in [&mut on, &mut off] {
            cc.on_congestion_event(SimTime::ZERO, &event(Detection::DupAcks, 100));
            // A loss below the previous W_max: the available bandwidth shrank.
            cc.cwnd_bytes = 80 * SMSS;
            cc.on_congestion_event(SimTime::ZERO, &event(Detection::DupAcks, 80));
        }
        // 80 · (1024 + 819) / 2048 = 71.99 → 71.
        assert_eq!(on.w_max_segments(), Some(71));
        assert_eq!(off.w_max_segments(), Some(80));
        // 80 · 819 / 1024 = 63.98 → 63.
        assert_eq!(on.window(), 63 * SMSS);
    }

    #[test]
    fn at_or_below_low_window_growth_is_renos() {
        let mut cc = after_loss_at(12);
        let w0 = segments(&cc);
        assert_eq!(w0, 6);
        round(&mut cc);
        let w1 = segments(&cc);
        for _ in 0..4 {
            round(&mut cc);
        }
        assert_eq!(cc.region(), BicRegion::RenoLow);
        // One segment per round trip (cnt = cwnd ACKs, plus the one that resets the count).
        let per_round = (segments(&cc) - w1) as f64 / 4.0;
        assert!((0.75..=1.0).contains(&per_round), "{per_round}");
        assert!(segments(&cc) <= 14);
    }

    #[test]
    fn delayed_acks_do_not_slow_growth_per_round_trip() {
        // W_max 1000, additive increase: one ACK per segment against one per two segments
        // (the default ratio estimate is already two).
        let mut every = after_loss_at(1000);
        let mut delayed = bic(1000);
        delayed.on_congestion_event(SimTime::ZERO, &event(Detection::DupAcks, 1000));
        for _ in 0..3 {
            round(&mut every);
            round_acking(&mut delayed, 2);
        }
        assert!((delayed.segments_per_ack() - 2.0).abs() < 0.1);
        let (a, b) = (segments(&every), segments(&delayed));
        assert!(a.abs_diff(b) <= 3, "every {a} delayed {b}");
        assert!(b >= 799 + 40, "grew {}", b - 799);
    }

    #[test]
    fn timeout_forgets_w_max_and_restarts_from_one_segment() {
        let mut cc = bic(100);
        let r =
            cc.on_congestion_event(SimTime::ZERO, &event(Detection::RetransmissionTimeout, 100));
        assert_eq!((r.ssthresh_bytes, r.cwnd_bytes), (79 * SMSS, SMSS));
        assert_eq!(cc.w_max_segments(), None);
        while segments(&cc) <= 79 {
            round(&mut cc);
        }
        // Beyond ssthresh without a W_max: max probing, cnt ≤ 20 (at least 5 % per RTT).
        round(&mut cc);
        assert_eq!(cc.region(), BicRegion::MaxProbing);
        assert!(cc.acks_per_increase() <= NO_W_MAX_MAX_CNT);
        // A repeated timeout holds ssthresh.
        let mut repeated = event(Detection::RetransmissionTimeout, 1);
        repeated.repeated_timeout = true;
        let r = cc.on_congestion_event(SimTime::ZERO, &repeated);
        assert_eq!((r.ssthresh_bytes, r.cwnd_bytes), (79 * SMSS, SMSS));
    }

    #[test]
    fn no_growth_during_fast_recovery() {
        let mut cc = bic(100);
        cc.on_congestion_event(SimTime::ZERO, &event(Detection::DupAcks, 100));
        for _ in 0..200 {
            ack(&mut cc, SimTime::ZERO, SMSS, true);
        }
        assert_eq!(cc.window(), 79 * SMSS);
    }

    #[test]
    fn spurious_congestion_undoes_the_reduction() {
        let mut cc = bic(100);
        cc.on_congestion_event(SimTime::ZERO, &event(Detection::DupAcks, 100));
        cc.on_spurious_congestion(SimTime::ZERO);
        assert_eq!(cc.window(), 100 * SMSS);
        assert_eq!(cc.ssthresh_bytes(), u64::MAX);
    }

    #[test]
    fn no_growth_while_not_window_limited() {
        // A receive window of 30 segments holds the flight below cwnd = 40: the window stays.
        let mut cc = after_loss_at(50);
        for _ in 0..1000 {
            ack_in_flight(&mut cc, SimTime::ZERO, SMSS, false, 30 * SMSS);
        }
        assert_eq!(segments(&cc), 39);
        let mut ss = bic(10);
        for _ in 0..100 {
            ack_in_flight(&mut ss, SimTime::ZERO, SMSS, false, 9 * SMSS);
        }
        assert_eq!(segments(&ss), 10);
        // One segment short of the window is room for one more: not window-limited either;
        // a full window is.
        ack_in_flight(&mut ss, SimTime::ZERO, SMSS, false, 10 * SMSS);
        assert_eq!(segments(&ss), 11);
    }

    #[test]
    fn slow_start_is_renos() {
        let mut cc = bic(10);
        round(&mut cc);
        assert_eq!(cc.window(), 20 * SMSS);
        assert_eq!(cc.region(), BicRegion::SlowStart);
    }
}
