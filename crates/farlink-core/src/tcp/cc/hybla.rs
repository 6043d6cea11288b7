//! TCP Hybla: the window growth of a short-RTT reference connection, for long-RTT paths.
//!
//! Read first: C. Caini and R. Firrincieli, "TCP Hybla: a TCP enhancement for heterogeneous
//! networks", International Journal of Satellite Communications and Networking 22(5), 2004
//! (the normalised RTT ρ, the two growth rules, the reference RTT₀ of 25 ms). Then RFC 5681
//! (what is kept from Reno).
//!
//! With ρ = max(RTT / RTT₀, 1), per ACK of new data, in segments:
//! - slow start: cwnd += 2^ρ − 1 (the window is multiplied by 2^ρ per round trip, so that it
//!   grows in time as a connection with RTT₀ would: doubling every RTT₀);
//! - congestion avoidance: cwnd += ρ² / cwnd (ρ² segments per round trip: per unit of time ρ
//!   times the growth of a Reno connection whose RTT is RTT₀, and ρ² times that of Reno on
//!   the same path).
//!
//! A window W = ρ·W₀ over RTT = ρ·RTT₀ sends at the rate W₀/RTT₀ of the reference connection:
//! that equal rate is the point. With ρ = 1 both rules are Reno's (RFC 5681 eqs. (2), (3),
//! per ACK); multiplicative decrease and the loss window are Reno's (RFC 5681 eq. (4), 3.1).
//!
//! Choices (see also `docs/congestion-control.md`):
//! - ρ comes from the **minimum** RTT by default ([`HyblaRtt::Min`]), the propagation delay
//!   the paper's analysis is about; the smoothed RTT ([`HyblaRtt::Smoothed`]) also counts
//!   the connection's own queue, so ρ — and the aggressiveness — would grow as the
//!   bottleneck buffer fills (Linux takes SRTT but recomputes ρ only when SRTT reaches a new
//!   minimum). Before any sample ρ = 1.
//! - Slow start stops *at* ssthresh: the increment that would cross it ends there, since with
//!   2^ρ − 1 segments per ACK an overshoot could be many times the window (Reno's overshoot is
//!   at most one segment). Linux's `tcp_hybla` clamps the same way.
//! - After a timeout (or any restart from the loss window), until every segment outstanding
//!   at that moment is acknowledged, the window grows as Reno's: Linux's `tcp_hybla` applies
//!   Hybla's rules only in the Open state (`hybla_en`), not in the Loss state that follows a
//!   timeout. Without it, the first ACK after a timeout lifts the window from one segment to
//!   ssthresh at once, and the burst that follows (ssthresh still reflects the flight before
//!   the timeout) overflows the bottleneck and times out again, in a cycle that seed 003's
//!   lossless wireless path with a 1 MiB receive buffer repeats every few seconds.
//! - The window never exceeds [`MAX_CWND_BYTES`](super::MAX_CWND_BYTES) (an initial slow start with ρ = 24 would
//!   multiply the window by 2^24 in one round trip).
//! - Only the window rules: the paper's Hybla also comprises SACK, timestamps, Hoe's estimate
//!   of the channel bandwidth (for the first ssthresh) and packet spacing. SACK and timestamps
//!   are the sender's options; the sender does not pace and the first ssthresh is arbitrarily
//!   high, so Hybla's growth reaches the bottleneck in bursts. With a buffer much smaller than
//!   ρ² segments an overshoot loses many segments at once, which NewReno repairs one per round
//!   trip: run Hybla with SACK.

use super::{
    max_window_bytes, AckBatch, CcMetrics, CongestionController, CongestionEvent, ControllerInit,
    Reduction, SentPacket,
};
use crate::tcp::rtt::RttEstimator;
use crate::time::SimDuration;
use crate::time::SimTime;

/// Caini and Firrincieli (2004): RTT₀ = 25 ms, the reference connection (also the default of
/// Linux's `tcp_hybla` module parameter `rtt0`).
pub const DEFAULT_RTT0: SimDuration = SimDuration::from_millis(25);
/// RFC 5681 equation (4): ssthresh is at least 2*SMSS.
pub const MIN_SSTHRESH_SEGMENTS: u64 = 2;
/// RFC 5681 section 3.1: the loss window is one segment.
pub const LOSS_WINDOW_SEGMENTS: u64 = 1;

/// Which RTT ρ is computed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HyblaRtt {
    /// The smallest sample (RTT estimator's `min_rtt`): the path's propagation RTT.
    Min,
    /// RFC 6298's SRTT, as Linux's `tcp_hybla` uses.
    Smoothed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HyblaConfig {
    /// RTT₀, the reference RTT.
    pub rtt0: SimDuration,
    pub rho_from: HyblaRtt,
    /// RFC 5681 3.1: "arbitrarily high".
    pub initial_ssthresh_bytes: u64,
}

impl Default for HyblaConfig {
    /// RTT₀ = 25 ms (Caini and Firrincieli 2004), ρ from the minimum RTT.
    fn default() -> Self {
        HyblaConfig {
            rtt0: DEFAULT_RTT0,
            rho_from: HyblaRtt::Min,
            initial_ssthresh_bytes: u64::MAX,
        }
    }
}

/// ρ = max(RTT / RTT₀, 1); 1 without an RTT or with an RTT₀ of zero.
pub fn rho(rtt: Option<SimDuration>, rtt0: SimDuration) -> f64 {
    match rtt {
        Some(r) if rtt0.as_nanos() > 0 => (r.as_nanos() as f64 / rtt0.as_nanos() as f64).max(1.0),
        _ => 1.0,
    }
}

#[derive(Clone, Debug)]
pub struct Hybla {
    config: HyblaConfig,
    smss_bytes: u64,
    /// Bytes; fractional so that ρ²/cwnd increments accumulate exactly.
    cwnd: f64,
    ssthresh_bytes: u64,
    rho: f64,
    /// One after the highest sequence number sent.
    snd_max: u64,
    /// After a timeout: Reno's growth until the cumulative ACK passes this (Linux's Loss
    /// state, in which `tcp_hybla` is off).
    loss_recovery_point: Option<u64>,
}

impl Hybla {
    pub fn new(config: &HyblaConfig, init: &ControllerInit) -> Self {
        let smss_bytes = init.smss_bytes.max(1);
        Hybla {
            config: *config,
            smss_bytes,
            cwnd: init
                .initial_window_bytes
                .clamp(smss_bytes, max_window_bytes(smss_bytes)) as f64,
            ssthresh_bytes: config
                .initial_ssthresh_bytes
                .max(MIN_SSTHRESH_SEGMENTS * smss_bytes),
            rho: 1.0,
            snd_max: 0,
            loss_recovery_point: None,
        }
    }

    pub fn ssthresh_bytes(&self) -> u64 {
        self.ssthresh_bytes
    }

    /// ρ as of the last ACK.
    pub fn rho(&self) -> f64 {
        self.rho
    }

    fn in_slow_start(&self) -> bool {
        self.window() < self.ssthresh_bytes
    }

    /// Recovering from a timeout: Reno's growth, not Hybla's.
    pub fn in_loss_recovery(&self) -> bool {
        self.loss_recovery_point.is_some()
    }
}

impl CongestionController for Hybla {
    fn name(&self) -> &'static str {
        "hybla"
    }

    fn on_packet_sent(&mut self, _now: SimTime, sent: &SentPacket, _in_flight_bytes: u64) {
        self.snd_max = self.snd_max.max(sent.seq.saturating_add(sent.bytes));
    }

    fn on_ack_batch(&mut self, _now: SimTime, batch: &AckBatch<'_>, rtt: &RttEstimator) {
        let sample = match self.config.rho_from {
            HyblaRtt::Min => rtt.min_rtt(),
            HyblaRtt::Smoothed => rtt.srtt(),
        };
        self.rho = rho(sample, self.config.rtt0);
        let n = batch.newly_acked_bytes;
        // RFC 5681 3.2 step 6: no growth during fast recovery.
        if batch.in_recovery || n == 0 {
            return;
        }
        if let Some(point) = self.loss_recovery_point {
            if batch.acked.iter().any(|a| a.end_seq >= point) {
                self.loss_recovery_point = None;
            }
        }
        // Reno's rules (ρ = 1) while recovering from a timeout.
        let rho = if self.in_loss_recovery() {
            1.0
        } else {
            self.rho
        };
        let smss = self.smss_bytes as f64;
        let limit = max_window_bytes(self.smss_bytes) as f64;
        if self.in_slow_start() {
            // cwnd += (2^ρ − 1) segments, per full-sized segment acknowledged (ρ = 1:
            // RFC 5681 eq. (2), min(N, SMSS)); ended at ssthresh.
            let increase = (libm::exp2(rho) - 1.0) * (n as f64).min(smss);
            let ceiling = (self.ssthresh_bytes as f64).min(limit);
            self.cwnd = (self.cwnd + increase).min(ceiling).max(self.cwnd);
        } else {
            // cwnd += ρ²/cwnd segments, i.e. ρ²·SMSS²/cwnd bytes (ρ = 1: RFC 5681 eq. (3)).
            let increase = rho * rho * smss * smss / self.cwnd;
            self.cwnd = (self.cwnd + increase).min(limit).max(self.cwnd);
        }
    }

    fn on_congestion_event(&mut self, _now: SimTime, event: &CongestionEvent) -> Reduction {
        let smss = self.smss_bytes;
        // Reno's reduction: RFC 5681 eq. (4), held on a repeated timeout (3.1).
        if !event.repeated_timeout {
            self.ssthresh_bytes = (event.flight_size_bytes / 2).max(MIN_SSTHRESH_SEGMENTS * smss);
        }
        let cwnd_bytes = if event.restart_slow_start {
            self.loss_recovery_point = Some(self.snd_max);
            LOSS_WINDOW_SEGMENTS * smss
        } else {
            self.ssthresh_bytes.min(max_window_bytes(smss))
        };
        self.cwnd = cwnd_bytes as f64;
        Reduction {
            ssthresh_bytes: self.ssthresh_bytes,
            cwnd_bytes,
        }
    }

    fn window(&self) -> u64 {
        // Whole bytes; never below one segment.
        (self.cwnd as u64).max(self.smss_bytes)
    }

    fn metrics(&self) -> CcMetrics {
        CcMetrics::new(self.window(), self.ssthresh_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::cc::{Detection, Reno, RenoConfig};
    use crate::tcp::rtt::{RttConfig, RttEstimator};

    const SMSS: u64 = 1000;

    fn init(iw_segments: u64) -> ControllerInit {
        ControllerInit {
            smss_bytes: SMSS,
            initial_window_bytes: iw_segments * SMSS,
        }
    }

    fn hybla(ssthresh_segments: Option<u64>, iw_segments: u64) -> Hybla {
        Hybla::new(
            &HyblaConfig {
                initial_ssthresh_bytes: ssthresh_segments.map_or(u64::MAX, |s| s * SMSS),
                ..HyblaConfig::default()
            },
            &init(iw_segments),
        )
    }

    fn estimator(rtt: SimDuration) -> RttEstimator {
        let mut e = RttEstimator::new(RttConfig::default());
        e.on_sample(rtt);
        e
    }

    fn ack(cc: &mut dyn CongestionController, rtt: &RttEstimator) {
        let batch = AckBatch {
            acked: &[],
            lost: &[],
            newly_acked_bytes: SMSS,
            newly_sacked_bytes: 0,
            prior_in_flight_bytes: 0,
            in_flight_bytes: 0,
            in_recovery: false,
            rtt_sample: None,
            smss_bytes: SMSS,
        };
        cc.on_ack_batch(SimTime::ZERO, &batch, rtt);
    }

    /// One round trip, one ACK per segment of the window at its start.
    fn round(cc: &mut dyn CongestionController, rtt: &RttEstimator) {
        for _ in 0..cc.window() / SMSS {
            ack(cc, rtt);
        }
    }

    fn ms(v: u64) -> SimDuration {
        SimDuration::from_millis(v)
    }

    #[test]
    fn rho_is_rtt_over_25_ms_and_at_least_one() {
        assert_eq!(rho(Some(ms(600)), DEFAULT_RTT0), 24.0);
        assert_eq!(rho(Some(ms(100)), DEFAULT_RTT0), 4.0);
        assert_eq!(rho(Some(ms(10)), DEFAULT_RTT0), 1.0);
        assert_eq!(rho(None, DEFAULT_RTT0), 1.0);
        assert_eq!(rho(Some(ms(10)), SimDuration::ZERO), 1.0);
    }

    #[test]
    fn slow_start_multiplies_the_window_by_two_to_the_rho_per_rtt() {
        // ρ = 4: ×16 per round trip, exactly.
        let rtt = estimator(ms(100));
        let mut cc = hybla(None, 2);
        round(&mut cc, &rtt);
        assert_eq!(cc.rho(), 4.0);
        assert_eq!(cc.window(), 32 * SMSS);
        round(&mut cc, &rtt);
        assert_eq!(cc.window(), 512 * SMSS);
    }

    #[test]
    fn slow_start_at_rho_24_is_two_to_the_24_per_rtt_up_to_the_cap() {
        // 600 ms: ρ = 24. From one segment, one ACK gives 2^24 segments (16.8 GB), which the
        // window cap of 2^30 bytes stops; below the cap the factor is exact.
        let rtt = estimator(ms(600));
        let mut cc = hybla(None, 1);
        ack(&mut cc, &rtt);
        assert_eq!(cc.rho(), 24.0);
        let expected = ((1u64 << 24) * SMSS).min(crate::tcp::cc::MAX_CWND_BYTES);
        assert_eq!(cc.window(), expected);
        assert_eq!(cc.window(), crate::tcp::cc::MAX_CWND_BYTES);

        // A smaller segment keeps 2^24 × SMSS below the cap: the factor is 2^24 exactly.
        let mut cc = Hybla::new(
            &HyblaConfig::default(),
            &ControllerInit {
                smss_bytes: 16,
                initial_window_bytes: 16,
            },
        );
        ack_bytes(&mut cc, 16, &rtt);
        assert_eq!(cc.window(), 16 << 24);
    }

    fn ack_bytes(cc: &mut Hybla, bytes: u64, rtt: &RttEstimator) {
        let batch = AckBatch {
            acked: &[],
            lost: &[],
            newly_acked_bytes: bytes,
            newly_sacked_bytes: 0,
            prior_in_flight_bytes: 0,
            in_flight_bytes: 0,
            in_recovery: false,
            rtt_sample: None,
            smss_bytes: cc.smss_bytes,
        };
        cc.on_ack_batch(SimTime::ZERO, &batch, rtt);
    }

    #[test]
    fn slow_start_stops_at_ssthresh() {
        let rtt = estimator(ms(200));
        let mut cc = hybla(Some(50), 2);
        ack(&mut cc, &rtt);
        assert_eq!(cc.window(), 50 * SMSS);
        assert!(!cc.in_slow_start());
    }

    #[test]
    fn congestion_avoidance_grows_rho_squared_segments_per_rtt() {
        // ρ = 24 over a window of 100,000 segments: per ACK ρ²/cwnd, so a round trip adds
        // ρ² = 576 segments (less the growth of cwnd within the round: √(W² + 2ρ²W) − W).
        let rtt = estimator(ms(600));
        let w0 = 100_000;
        let mut cc = hybla(Some(2), w0);
        let mut reno = Reno::new(
            // Byte counting adds exactly one segment per window acknowledged, at any W.
            &RenoConfig {
                initial_ssthresh_bytes: 2 * SMSS,
                ..RenoConfig::byte_counting()
            },
            &init(w0),
        );
        round(&mut cc, &rtt);
        round(&mut reno, &rtt);
        let hybla_growth = (cc.window() - w0 * SMSS) as f64 / SMSS as f64;
        let reno_growth = (reno.window() - w0 * SMSS) as f64 / SMSS as f64;
        assert_eq!(reno_growth, 1.0);
        let ratio = hybla_growth / reno_growth;
        assert!(
            (ratio / 576.0 - 1.0).abs() < 0.01,
            "growth per RTT {hybla_growth} segments, {ratio} times Reno's"
        );
    }

    #[test]
    fn congestion_avoidance_grows_rho_times_reno_at_rtt0_per_unit_of_time() {
        // Over 600 ms: Hybla at ρ = 4 (100 ms) has 6 round trips of ρ² = 16 segments; Reno
        // with RTT₀ (25 ms) has 24 round trips of 1 segment. The ratio is ρ = 4.
        let w0 = 50_000;
        let mut cc = hybla(Some(2), w0);
        let rtt = estimator(ms(100));
        for _ in 0..6 {
            round(&mut cc, &rtt);
        }
        let mut reno = Reno::new(
            // Byte counting adds exactly one segment per window acknowledged, at any W.
            &RenoConfig {
                initial_ssthresh_bytes: 2 * SMSS,
                ..RenoConfig::byte_counting()
            },
            &init(w0),
        );
        let rtt0 = estimator(DEFAULT_RTT0);
        for _ in 0..24 {
            round(&mut reno, &rtt0);
        }
        let ratio = (cc.window() - w0 * SMSS) as f64 / (reno.window() - w0 * SMSS) as f64;
        assert!((ratio - 4.0).abs() < 0.02, "ratio {ratio}");
    }

    #[test]
    fn short_rtt_is_reno() {
        let rtt = estimator(ms(10));
        let mut cc = hybla(Some(20), 20);
        let mut reno = Reno::new(
            &RenoConfig {
                initial_ssthresh_bytes: 20 * SMSS,
                ..RenoConfig::default()
            },
            &init(20),
        );
        for _ in 0..5 {
            round(&mut cc, &rtt);
            round(&mut reno, &rtt);
        }
        // Reno rounds SMSS²/cwnd down to whole bytes per ACK; Hybla keeps the fraction.
        let diff = cc.window().abs_diff(reno.window());
        assert!(
            diff <= 5 * 25,
            "hybla {} reno {}",
            cc.window(),
            reno.window()
        );
    }

    #[test]
    fn rho_from_the_minimum_or_the_smoothed_rtt() {
        let mut rtt = estimator(ms(100));
        rtt.on_sample(ms(300));
        let mut min = hybla(None, 2);
        let mut smoothed = Hybla::new(
            &HyblaConfig {
                rho_from: HyblaRtt::Smoothed,
                ..HyblaConfig::default()
            },
            &init(2),
        );
        ack(&mut min, &rtt);
        ack(&mut smoothed, &rtt);
        assert_eq!(min.rho(), 4.0);
        assert_eq!(smoothed.rho(), 5.0, "SRTT = 7/8·100 + 1/8·300 = 125 ms");
    }

    #[test]
    fn reduction_is_renos() {
        let mut cc = hybla(None, 10);
        let event = |detection, flight, restart, repeated| CongestionEvent {
            detection,
            flight_size_bytes: flight,
            lost_bytes: SMSS,
            smss_bytes: SMSS,
            restart_slow_start: restart,
            repeated_timeout: repeated,
            during_fast_recovery: false,
        };
        let r = cc.on_congestion_event(
            SimTime::ZERO,
            &event(Detection::DupAcks, 40 * SMSS, false, false),
        );
        assert_eq!((r.ssthresh_bytes, r.cwnd_bytes), (20 * SMSS, 20 * SMSS));
        let r = cc.on_congestion_event(
            SimTime::ZERO,
            &event(Detection::RetransmissionTimeout, 20 * SMSS, true, false),
        );
        assert_eq!((r.ssthresh_bytes, r.cwnd_bytes), (10 * SMSS, SMSS));
        let r = cc.on_congestion_event(
            SimTime::ZERO,
            &event(Detection::RetransmissionTimeout, SMSS, true, true),
        );
        assert_eq!((r.ssthresh_bytes, r.cwnd_bytes), (10 * SMSS, SMSS));
        assert_eq!(cc.window(), SMSS);
    }

    #[test]
    fn after_a_timeout_growth_is_renos_until_the_outstanding_data_is_acknowledged() {
        use crate::tcp::cc::Acked;
        let rtt = estimator(ms(200)); // ρ = 8
        let mut cc = hybla(None, 10);
        for i in 0..50 {
            let sent = SentPacket {
                seq: i * SMSS,
                bytes: SMSS,
                retransmission: false,
            };
            cc.on_packet_sent(SimTime::ZERO, &sent, 0);
        }
        cc.on_congestion_event(
            SimTime::ZERO,
            &CongestionEvent {
                detection: Detection::RetransmissionTimeout,
                flight_size_bytes: 50 * SMSS,
                lost_bytes: 50 * SMSS,
                smss_bytes: SMSS,
                restart_slow_start: true,
                repeated_timeout: false,
                during_fast_recovery: false,
            },
        );
        assert!(cc.in_loss_recovery());
        let ack_to = |cc: &mut Hybla, end_seq: u64| {
            let acked = [Acked {
                end_seq,
                bytes: SMSS,
                sent_time: SimTime::ZERO,
                retransmitted: true,
                was_sacked: false,
            }];
            let batch = AckBatch {
                acked: &acked,
                lost: &[],
                newly_acked_bytes: SMSS,
                newly_sacked_bytes: 0,
                prior_in_flight_bytes: 0,
                in_flight_bytes: 0,
                in_recovery: false,
                rtt_sample: None,
                smss_bytes: SMSS,
            };
            cc.on_ack_batch(SimTime::ZERO, &batch, &rtt);
        };
        // Reno's slow start: one segment per ACK (Hybla's would add 2^8 − 1).
        ack_to(&mut cc, SMSS);
        ack_to(&mut cc, 2 * SMSS);
        assert_eq!(cc.window(), 3 * SMSS);
        // The ACK of everything outstanding at the timeout ends it: Hybla again, up to
        // ssthresh (25 segments).
        ack_to(&mut cc, 50 * SMSS);
        assert!(!cc.in_loss_recovery());
        assert_eq!(cc.window(), 25 * SMSS);
    }

    #[test]
    fn no_growth_in_fast_recovery() {
        let rtt = estimator(ms(600));
        let mut cc = hybla(None, 10);
        let batch = AckBatch {
            acked: &[],
            lost: &[],
            newly_acked_bytes: SMSS,
            newly_sacked_bytes: 0,
            prior_in_flight_bytes: 0,
            in_flight_bytes: 0,
            in_recovery: true,
            rtt_sample: None,
            smss_bytes: SMSS,
        };
        cc.on_ack_batch(SimTime::ZERO, &batch, &rtt);
        assert_eq!(cc.window(), 10 * SMSS);
    }
}
