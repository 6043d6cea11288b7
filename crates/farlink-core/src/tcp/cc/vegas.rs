//! TCP Vegas: congestion avoidance by the queue a connection keeps at the bottleneck.
//!
//! Read first: L. S. Brakmo and L. L. Peterson, "TCP Vegas: End to End Congestion Avoidance on
//! a Global Internet", IEEE JSAC 13(8), 1995 (section 3.2, the congestion-avoidance mechanism;
//! section 3.3, the modified slow start); seed 003 section 3.2.4 (the description this module
//! matches: "If the difference is less than α, TCP Vegas increases the congestion window by
//! 1/cwnd. If the difference is greater than β, TCP Vegas decreases the congestion window by
//! one, and if the difference lies between α and β, TCP Vegas leaves the congestion window
//! unchanged"), and seed 003 section 4.4.2 ("Vegas doubles its congestion window size every
//! two RTTs during the slow start phase"; on three duplicate ACKs "TCP Vegas reduces its
//! congestion window by half immediately just as TCP Reno does").
//!
//! The measurement, once per round trip ("epoch"). An epoch starts at an ACK and ends at the
//! ACK of the first segment sent after it started (the paper's distinguished segment; ns-2's
//! `v_begseq_`). At its end:
//! - BaseRTT is the smallest RTT sample seen;
//! - RTT is the smallest of the epoch's RTT samples (the elapsed time if it had none; see
//!   [`EpochRtt`] for ns-2's mean);
//! - Expected = W / BaseRTT, with W the bytes in flight when the ACK arrived;
//! - Actual = W / RTT ([`VegasActual::InFlight`], the default) or, the paper's definition,
//!   (bytes sent during the epoch) / RTT ([`VegasActual::BytesSent`]);
//! - Diff = (Expected − Actual) × BaseRTT, in segments rounded to the nearest integer: the
//!   number of this connection's segments queued in the network.
//!
//! Congestion avoidance: Diff < α grows the window by one segment over the next round trip
//! (SMSS²/cwnd per ACK), Diff > β shrinks it by one segment at once (never below two), and
//! α ≤ Diff ≤ β leaves it alone. Slow start grows by one segment per ACK only every other
//! round trip, so that Diff is measured with a window that did not change during the
//! measurement; when Diff exceeds γ, slow start ends: the window drops by one eighth and
//! ssthresh goes to two segments (so that only slow start ever uses it, as in ns-2). The
//! window grows only while the sender uses it (no more than two segments of it unused when
//! the ACK arrives, as ns-2).
//!
//! Delayed ACKs. ns-2's receiver in seed 003 acknowledges every segment; with delayed ACKs
//! (RFC 5681 4.2, on by default here) two things mislead the paper's measurement, and the
//! defaults avoid both:
//! - a sample may include the receiver's delayed-ACK wait (up to 200 ms), which a mean of the
//!   epoch's samples (ns-2's, [`EpochRtt::Mean`]) reads as queueing; the epoch's smallest
//!   sample ([`EpochRtt::Min`], the default, as Linux's `tcp_vegas` for this reason) does not;
//! - with an odd window one segment waits at the receiver for the next every round trip, so
//!   fewer bytes are sent per round trip than the window holds. The paper's Actual reads that
//!   too as queueing and holds the window there, at a few segments of the 31-segment pipe of
//!   seed 003's lossless wireless path (about a third of the rate, where the default Actual
//!   fills the path).
//!
//! Where the sender is ACK-clocked and every segment is acknowledged, the bytes sent in an
//! epoch are the window and the two Actuals agree (the unit test
//! `both_actuals_agree_when_every_segment_is_acknowledged`).
//!
//! Where this differs from the ns-2 agent (`tcp/tcp-vegas.cc`) that seed 003 ran: loss
//! *recovery* is not here (it is `tcp/recovery.rs`, as for every controller), so ns-2's
//! fine-grained Vegas retransmission timer is absent; the reduction on a fast retransmit is
//! Reno's halving, as seed 003 describes and its figures show (the ns-2 code and the paper
//! reduce by a quarter when the lost segment was sent once); a timeout restarts from RFC
//! 5681's loss window of one segment (ns-2 uses two).

use super::{
    max_window_bytes, AckBatch, CcMetrics, CongestionController, CongestionEvent, ControllerInit,
    Reduction, SentPacket,
};
use crate::tcp::rtt::RttEstimator;
use crate::time::{SimDuration, SimTime};

/// ns-2's default `Agent/TCP/Vegas set v_alpha_ 1` (`tcl/lib/ns-default.tcl`), the agent seed
/// 003 used.
pub const DEFAULT_ALPHA_SEGMENTS: u32 = 1;
/// ns-2's `v_beta_ 3`. Seed 003 section 3.3.2: "One of the Vegas design objectives is to keep
/// buffer occupancy between 1 to 3 packets".
pub const DEFAULT_BETA_SEGMENTS: u32 = 3;
/// ns-2's `v_gamma_ 1`: the slow-start exit threshold (the paper's γ, section 3.3).
pub const DEFAULT_GAMMA_SEGMENTS: u32 = 1;
/// RFC 5681 equation (4): ssthresh is at least 2*SMSS; also Vegas's smallest window after a
/// decrease (ns-2 "if(cwnd_<2) cwnd_ = 2").
pub const MIN_WINDOW_SEGMENTS: u64 = 2;
/// RFC 5681 section 3.1: the loss window is one segment.
pub const LOSS_WINDOW_SEGMENTS: u64 = 1;
/// ns-2 grows the window only while "cwnd − (segments in flight) ≤ 2".
pub const UNUSED_WINDOW_LIMIT_SEGMENTS: u64 = 2;

/// Which of an epoch's RTT samples stands for its RTT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EpochRtt {
    /// The smallest: filters the receiver's delayed-ACK wait (Linux).
    Min,
    /// The mean, as ns-2's `Agent/TCP/Vegas` (seed 003).
    Mean,
}

/// What Actual, the measured rate, counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VegasActual {
    /// The bytes in flight when the epoch ends, over the epoch's RTT: Diff = W·(1 −
    /// BaseRTT/RTT), as Linux's `tcp_vegas` computes it.
    InFlight,
    /// The bytes sent during the epoch, over its RTT: the paper's definition, ns-2's and seed
    /// 003's ("by counting the number of bytes transmitted every RTT").
    BytesSent,
}

/// Vegas's thresholds, in segments of the queue estimate Diff.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VegasConfig {
    pub alpha_segments: u32,
    pub beta_segments: u32,
    pub gamma_segments: u32,
    pub epoch_rtt: EpochRtt,
    pub actual: VegasActual,
    /// RFC 5681 3.1: "arbitrarily high".
    pub initial_ssthresh_bytes: u64,
}

impl Default for VegasConfig {
    /// α = 1, β = 3, γ = 1: ns-2's defaults (`ns-default.tcl`), the agent of seed 003; the
    /// epoch's RTT is its smallest sample.
    fn default() -> Self {
        VegasConfig {
            alpha_segments: DEFAULT_ALPHA_SEGMENTS,
            beta_segments: DEFAULT_BETA_SEGMENTS,
            gamma_segments: DEFAULT_GAMMA_SEGMENTS,
            epoch_rtt: EpochRtt::Min,
            actual: VegasActual::InFlight,
            initial_ssthresh_bytes: u64::MAX,
        }
    }
}

/// What each ACK of new data does to the window until the next epoch ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Increase {
    None,
    /// Slow start: min(N, SMSS) per ACK (RFC 5681 eq. (2)), up to ssthresh.
    SlowStart,
    /// Congestion avoidance: SMSS²/cwnd per ACK, one segment per round trip.
    Linear,
}

/// One measurement round trip.
#[derive(Clone, Copy, Debug)]
struct Epoch {
    /// `snd_max` when it started: the epoch ends at the first ACK beyond it, that of the
    /// first segment sent after the epoch began.
    end_seq: u64,
    start: SimTime,
    /// `snd_max` when it started: what is sent after it counts for Actual.
    sent_at_start: u64,
    rtt_sum_ns: u128,
    rtt_samples: u64,
    rtt_min_ns: u64,
}

#[derive(Clone, Debug)]
pub struct Vegas {
    config: VegasConfig,
    smss_bytes: u64,
    cwnd_bytes: u64,
    ssthresh_bytes: u64,
    /// One after the highest sequence number sent.
    snd_max: u64,
    epoch: Option<Epoch>,
    base_rtt: Option<SimDuration>,
    increase: Increase,
    /// Slow start grows only in every other round trip; true in a growing one.
    slow_start_growing: bool,
    /// A fast retransmit reduced the window; when recovery ends ssthresh drops to two
    /// segments, so that congestion avoidance, not slow start, follows (ns-2 Vegas).
    leaving_fast_recovery: bool,
    /// The last Diff computed, in segments (for tests and traces).
    last_diff_segments: Option<i64>,
}

impl Vegas {
    pub fn new(config: &VegasConfig, init: &ControllerInit) -> Self {
        let smss_bytes = init.smss_bytes.max(1);
        Vegas {
            config: *config,
            smss_bytes,
            cwnd_bytes: init
                .initial_window_bytes
                .clamp(smss_bytes, max_window_bytes(smss_bytes)),
            ssthresh_bytes: config
                .initial_ssthresh_bytes
                .max(MIN_WINDOW_SEGMENTS * smss_bytes),
            snd_max: 0,
            epoch: None,
            base_rtt: None,
            // The first round trip grows: nothing suggests a queue yet.
            increase: Increase::SlowStart,
            slow_start_growing: true,
            leaving_fast_recovery: false,
            last_diff_segments: None,
        }
    }

    pub fn ssthresh_bytes(&self) -> u64 {
        self.ssthresh_bytes
    }

    /// BaseRTT: the smallest RTT sample seen.
    pub fn base_rtt(&self) -> Option<SimDuration> {
        self.base_rtt
    }

    /// Diff of the last epoch, in segments: the estimated number of this connection's
    /// segments queued in the network.
    pub fn diff_segments(&self) -> Option<i64> {
        self.last_diff_segments
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd_bytes < self.ssthresh_bytes
    }

    fn min_window_bytes(&self) -> u64 {
        MIN_WINDOW_SEGMENTS * self.smss_bytes
    }

    fn start_epoch(&mut self, now: SimTime) {
        self.epoch = Some(Epoch {
            end_seq: self.snd_max,
            start: now,
            sent_at_start: self.snd_max,
            rtt_sum_ns: 0,
            rtt_samples: 0,
            rtt_min_ns: u64::MAX,
        });
    }

    /// Diff = (Expected − Actual) × BaseRTT in segments, rounded to nearest (ns-2 rounds the
    /// same way), from integers: W − sent × BaseRTT / RTT.
    fn diff_segments_of(&self, epoch: &Epoch, now: SimTime, window_bytes: u64) -> Option<i64> {
        let base_ns = u128::from(self.base_rtt?.as_nanos());
        let rtt_ns = if epoch.rtt_samples > 0 {
            match self.config.epoch_rtt {
                EpochRtt::Min => u128::from(epoch.rtt_min_ns),
                EpochRtt::Mean => epoch.rtt_sum_ns / u128::from(epoch.rtt_samples),
            }
        } else {
            u128::from(now.saturating_since(epoch.start).as_nanos())
        };
        if rtt_ns == 0 {
            return None;
        }
        let sent = match self.config.actual {
            VegasActual::InFlight => u128::from(window_bytes),
            VegasActual::BytesSent => u128::from(self.snd_max.saturating_sub(epoch.sent_at_start)),
        };
        // Bytes, scaled by rtt_ns: W·RTT − sent·BaseRTT.
        let diff_scaled = i128::try_from(u128::from(window_bytes) * rtt_ns).ok()?
            - i128::try_from(sent * base_ns).ok()?;
        let denom = i128::try_from(rtt_ns * u128::from(self.smss_bytes)).ok()?;
        // Round half away from zero.
        let rounded = if diff_scaled >= 0 {
            (2 * diff_scaled + denom) / (2 * denom)
        } else {
            -((-2 * diff_scaled + denom) / (2 * denom))
        };
        Some(rounded.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64)
    }

    /// The once-per-round-trip decision.
    fn on_epoch_end(&mut self, diff: Option<i64>) {
        self.last_diff_segments = diff.or(self.last_diff_segments);
        let smss = self.smss_bytes;
        if self.in_slow_start() {
            self.slow_start_growing = !self.slow_start_growing;
            if !self.slow_start_growing {
                self.increase = Increase::None;
                return;
            }
            match diff {
                Some(d) if d > i64::from(self.config.gamma_segments) => {
                    // Slow start ends: back off by an eighth and leave ssthresh to slow start
                    // only (ns-2: "ssthresh_ = 2; cwnd_ -= (cwnd_/8)").
                    self.ssthresh_bytes = self.min_window_bytes();
                    self.cwnd_bytes =
                        (self.cwnd_bytes - self.cwnd_bytes / 8).max(self.min_window_bytes());
                    self.increase = Increase::None;
                }
                _ => self.increase = Increase::SlowStart,
            }
            return;
        }
        self.increase = match diff {
            Some(d) if d > i64::from(self.config.beta_segments) => {
                self.cwnd_bytes = self
                    .cwnd_bytes
                    .saturating_sub(smss)
                    .max(self.min_window_bytes());
                Increase::None
            }
            Some(d) if d < i64::from(self.config.alpha_segments) => Increase::Linear,
            Some(_) => Increase::None,
            // No BaseRTT yet: grow as Reno would.
            None => Increase::Linear,
        };
    }
}

impl CongestionController for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }

    fn on_packet_sent(&mut self, _now: SimTime, sent: &SentPacket, _in_flight_bytes: u64) {
        self.snd_max = self.snd_max.max(sent.seq.saturating_add(sent.bytes));
    }

    fn on_ack_batch(&mut self, now: SimTime, batch: &AckBatch<'_>, _rtt: &RttEstimator) {
        if let Some(r) = batch.rtt_sample {
            self.base_rtt = Some(self.base_rtt.map_or(r, |b| b.min(r)));
            if let Some(e) = &mut self.epoch {
                e.rtt_sum_ns += u128::from(r.as_nanos());
                e.rtt_samples += 1;
                e.rtt_min_ns = e.rtt_min_ns.min(r.as_nanos());
            }
        }
        let n = batch.newly_acked_bytes;
        if n == 0 {
            return;
        }
        if batch.in_recovery {
            return;
        }
        if self.leaving_fast_recovery {
            // ns-2 Vegas, on the first new ACK after the inflated window: "vegas ssthresh is
            // used only during slow-start".
            self.leaving_fast_recovery = false;
            self.ssthresh_bytes = self.min_window_bytes();
        }
        let ack = batch.acked.iter().map(|a| a.end_seq).max();
        match (self.epoch, ack) {
            (None, _) => self.start_epoch(now),
            // The epoch ends when the first segment sent after it began is acknowledged.
            (Some(e), Some(ack)) if ack > e.end_seq => {
                let diff = self.diff_segments_of(&e, now, batch.prior_in_flight_bytes);
                self.on_epoch_end(diff);
                self.start_epoch(now);
            }
            _ => {}
        }
        // ns-2: "incr cwnd unless we havent been able to keep up with it". The window in use
        // is what was in flight when the ACK arrived: after it, a delayed ACK's two segments
        // and the window's fraction of a segment would already leave more than two unused.
        let unused = self.cwnd_bytes.saturating_sub(batch.prior_in_flight_bytes);
        if unused > UNUSED_WINDOW_LIMIT_SEGMENTS * self.smss_bytes {
            return;
        }
        let smss = self.smss_bytes;
        match self.increase {
            Increase::None => {}
            Increase::SlowStart => {
                if self.in_slow_start() {
                    self.cwnd_bytes = self.cwnd_bytes.saturating_add(n.min(smss));
                } else {
                    // Reached ssthresh before the round trip ended.
                    self.increase = Increase::None;
                }
            }
            Increase::Linear => {
                self.cwnd_bytes += (smss * smss / self.cwnd_bytes).max(1);
            }
        }
        self.cwnd_bytes = self.cwnd_bytes.min(max_window_bytes(smss));
    }

    fn on_congestion_event(&mut self, _now: SimTime, event: &CongestionEvent) -> Reduction {
        let smss = self.smss_bytes;
        // RFC 5681 eq. (4), held on a repeated timeout (RFC 5681 3.1); seed 003: Vegas "cuts
        // its congestion window by half on experiencing packet losses".
        if !event.repeated_timeout {
            self.ssthresh_bytes = (event.flight_size_bytes / 2).max(self.min_window_bytes());
        }
        if event.restart_slow_start {
            self.cwnd_bytes = LOSS_WINDOW_SEGMENTS * smss;
            self.increase = Increase::SlowStart;
            self.slow_start_growing = true;
            self.leaving_fast_recovery = false;
        } else {
            self.cwnd_bytes = self.ssthresh_bytes.min(max_window_bytes(smss));
            self.increase = Increase::None;
            self.leaving_fast_recovery = true;
        }
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
    use std::collections::VecDeque;

    const SMSS: u64 = 1000;

    fn vegas(config: VegasConfig, iw_segments: u64) -> Vegas {
        Vegas::new(
            &config,
            &ControllerInit {
                smss_bytes: SMSS,
                initial_window_bytes: iw_segments * SMSS,
            },
        )
    }

    /// An ACK-clocked sender in front of a bottleneck: every ACK frees one segment and the
    /// window is refilled at once, so a round trip acknowledges the window sent in the last.
    struct Path {
        now: SimTime,
        next_seq: u64,
        outstanding: VecDeque<(u64, SimTime)>,
        rtt: RttEstimator,
        /// Added to every second ACK's sample, as a receiver's delayed-ACK wait would.
        extra_every_other: SimDuration,
        acks: u64,
    }

    impl Path {
        fn new() -> Self {
            Path {
                now: SimTime::ZERO,
                next_seq: 0,
                outstanding: VecDeque::new(),
                rtt: RttEstimator::new(RttConfig::default()),
                extra_every_other: SimDuration::ZERO,
                acks: 0,
            }
        }

        fn in_flight(&self) -> u64 {
            self.outstanding.len() as u64 * SMSS
        }

        fn fill(&mut self, cc: &mut Vegas) {
            while self.in_flight() + SMSS <= cc.window() {
                let sent = SentPacket {
                    seq: self.next_seq,
                    bytes: SMSS,
                    retransmission: false,
                };
                cc.on_packet_sent(self.now, &sent, self.in_flight());
                self.next_seq += SMSS;
                self.outstanding.push_back((self.next_seq, self.now));
            }
        }

        /// One round trip of `rtt`: every segment now outstanding is acknowledged, one ACK
        /// each, spread over the round trip.
        fn round(&mut self, cc: &mut Vegas, rtt: SimDuration) {
            self.fill(cc);
            let n = self.outstanding.len() as u64;
            let start = self.now;
            for i in 1..=n {
                self.now = start + SimDuration::from_nanos(rtt.as_nanos() * i / n);
                let prior = self.in_flight();
                let (end_seq, _) = self.outstanding.pop_front().unwrap();
                let acked = [Acked {
                    end_seq,
                    bytes: SMSS,
                    sent_time: self.now,
                    retransmitted: false,
                    was_sacked: false,
                }];
                self.acks += 1;
                let sample = if self.acks % 2 == 0 {
                    rtt + self.extra_every_other
                } else {
                    rtt
                };
                self.rtt.on_sample(sample);
                let batch = AckBatch {
                    acked: &acked,
                    lost: &[],
                    newly_acked_bytes: SMSS,
                    newly_sacked_bytes: 0,
                    prior_in_flight_bytes: prior,
                    in_flight_bytes: self.in_flight(),
                    in_recovery: false,
                    rtt_sample: Some(sample),
                    smss_bytes: SMSS,
                };
                cc.on_ack_batch(self.now, &batch, &self.rtt);
                self.fill(cc);
            }
        }
    }

    fn ms(v: u64) -> SimDuration {
        SimDuration::from_millis(v)
    }

    /// A bottleneck whose pipe holds `bdp` segments with a propagation RTT of `base`: a
    /// window of W segments queues W − bdp of them and the RTT grows accordingly.
    fn rtt_for(window_segments: u64, bdp: u64, base: SimDuration) -> SimDuration {
        let w = window_segments.max(bdp);
        SimDuration::from_nanos(base.as_nanos() * w / bdp)
    }

    #[test]
    fn default_thresholds_are_ns2s() {
        let c = VegasConfig::default();
        assert_eq!(
            (c.alpha_segments, c.beta_segments, c.gamma_segments),
            (1, 3, 1)
        );
    }

    /// 120 round trips through a bottleneck whose pipe holds 20 segments (base RTT 100 ms).
    fn settle(config: VegasConfig) -> (Vegas, Vec<u64>) {
        let mut cc = vegas(config, 2);
        let mut path = Path::new();
        let (bdp, base) = (20, ms(100));
        let mut windows = Vec::new();
        for _ in 0..120 {
            let w = cc.window() / SMSS;
            path.round(&mut cc, rtt_for(w, bdp, base));
            windows.push(cc.window() / SMSS);
        }
        assert_eq!(cc.base_rtt(), Some(base));
        (cc, windows)
    }

    #[test]
    fn holds_the_queue_between_alpha_and_beta_at_a_bottleneck() {
        for actual in [VegasActual::InFlight, VegasActual::BytesSent] {
            for epoch_rtt in [EpochRtt::Min, EpochRtt::Mean] {
                let (cc, windows) = settle(VegasConfig {
                    actual,
                    epoch_rtt,
                    ..VegasConfig::default()
                });
                // Segments queued at the bottleneck, and Vegas's estimate of them.
                let queued = cc.window() / SMSS - 20;
                assert!(
                    (1..=3).contains(&queued),
                    "{actual:?} {epoch_rtt:?}: queue {queued}, windows {windows:?}"
                );
                let diff = cc.diff_segments().unwrap();
                assert!((1..=3).contains(&diff), "Diff {diff}");
                // Settled: flat over the last 30 round trips.
                let tail = &windows[windows.len() - 30..];
                assert!(tail.iter().all(|&w| w == tail[0]), "{tail:?}");
            }
        }
    }

    #[test]
    fn both_actuals_agree_when_every_segment_is_acknowledged() {
        let (_, in_flight) = settle(VegasConfig::default());
        let (_, bytes_sent) = settle(VegasConfig {
            actual: VegasActual::BytesSent,
            ..VegasConfig::default()
        });
        assert_eq!(in_flight, bytes_sent);
    }

    #[test]
    fn stays_flat_when_diff_is_between_alpha_and_beta() {
        let config = VegasConfig {
            initial_ssthresh_bytes: 2 * SMSS,
            ..VegasConfig::default()
        };
        let mut cc = vegas(config, 20);
        let mut path = Path::new();
        // BaseRTT 100 ms, then 110 ms: Diff = W × (1 − 100/110) = 1.8 → 2 segments.
        path.round(&mut cc, ms(100));
        // The decision at the start of a round trip uses the samples of the previous one.
        path.round(&mut cc, ms(110));
        path.round(&mut cc, ms(110));
        let before = cc.window();
        for _ in 0..10 {
            path.round(&mut cc, ms(110));
            assert_eq!(cc.diff_segments(), Some(2));
            assert_eq!(cc.window(), before);
        }
    }

    #[test]
    fn grows_one_segment_per_rtt_below_alpha_and_shrinks_one_above_beta() {
        let config = VegasConfig {
            initial_ssthresh_bytes: 2 * SMSS,
            ..VegasConfig::default()
        };
        let mut cc = vegas(config, 20);
        let mut path = Path::new();
        path.round(&mut cc, ms(100));
        path.round(&mut cc, ms(100));
        // No queue: Diff = 0 < α, one segment per round trip.
        let w0 = cc.window();
        for _ in 0..4 {
            path.round(&mut cc, ms(100));
        }
        let grown = cc.window() - w0;
        assert!(
            (3 * SMSS..=5 * SMSS).contains(&grown),
            "grew {grown} bytes in 4 RTTs"
        );
        // RTT doubled: Diff = W/2 > β, one segment off per round trip. The decision at the
        // start of the first such round trip still sees the last short samples.
        path.round(&mut cc, ms(200));
        let w1 = cc.window();
        for _ in 0..3 {
            path.round(&mut cc, ms(200));
        }
        assert_eq!(w1 - cc.window(), 3 * SMSS);
        assert!(cc.diff_segments().unwrap() > 3);
    }

    #[test]
    fn the_epochs_smallest_sample_ignores_a_delayed_ack_wait() {
        // No queue, but every second sample 150 ms longer, as a delayed-ACK timer makes them.
        // The smallest sample sees no queue and grows; ns-2's mean sees one and shrinks.
        let run = |epoch_rtt| {
            let config = VegasConfig {
                initial_ssthresh_bytes: 2 * SMSS,
                epoch_rtt,
                ..VegasConfig::default()
            };
            let mut cc = vegas(config, 20);
            let mut path = Path::new();
            path.extra_every_other = ms(150);
            for _ in 0..10 {
                path.round(&mut cc, ms(100));
            }
            cc.window() / SMSS
        };
        assert!(run(EpochRtt::Min) >= 27);
        assert!(run(EpochRtt::Mean) < 20);
    }

    #[test]
    fn slow_start_doubles_every_other_round_trip() {
        let mut cc = vegas(VegasConfig::default(), 2);
        let mut path = Path::new();
        let mut w = vec![cc.window() / SMSS];
        for _ in 0..6 {
            path.round(&mut cc, ms(100));
            w.push(cc.window() / SMSS);
        }
        // No queue (constant RTT), so γ never ends it: grow, hold, grow, hold, ...
        assert_eq!(w, vec![2, 4, 4, 8, 8, 16, 16]);
    }

    #[test]
    fn slow_start_ends_when_diff_exceeds_gamma() {
        let mut cc = vegas(VegasConfig::default(), 2);
        let mut path = Path::new();
        let (bdp, base) = (8, ms(100));
        let mut exited_at = None;
        for i in 0..12 {
            let w = cc.window() / SMSS;
            path.round(&mut cc, rtt_for(w, bdp, base));
            if cc.ssthresh_bytes() == 2 * SMSS {
                exited_at = Some((i, w, cc.window() / SMSS));
                break;
            }
        }
        // 2 → 4 → 8 (no queue yet) → 16: 8 queued > γ, so 16 − 16/8 = 14.
        let (_, w, after) = exited_at.expect("slow start ended");
        assert_eq!((w, after), (16, 14));
        assert!(!cc.in_slow_start());
    }

    #[test]
    fn fast_retransmit_halves_and_timeout_restarts_from_one_segment() {
        let mut cc = vegas(VegasConfig::default(), 10);
        let r = cc.on_congestion_event(
            SimTime::ZERO,
            &CongestionEvent {
                detection: Detection::DupAcks,
                flight_size_bytes: 30 * SMSS,
                lost_bytes: SMSS,
                smss_bytes: SMSS,
                restart_slow_start: false,
                repeated_timeout: false,
                during_fast_recovery: false,
            },
        );
        assert_eq!((r.ssthresh_bytes, r.cwnd_bytes), (15 * SMSS, 15 * SMSS));
        let r = cc.on_congestion_event(
            SimTime::ZERO,
            &CongestionEvent {
                detection: Detection::RetransmissionTimeout,
                flight_size_bytes: 20 * SMSS,
                lost_bytes: 20 * SMSS,
                smss_bytes: SMSS,
                restart_slow_start: true,
                repeated_timeout: false,
                during_fast_recovery: false,
            },
        );
        assert_eq!((r.ssthresh_bytes, r.cwnd_bytes), (10 * SMSS, SMSS));
    }

    #[test]
    fn congestion_avoidance_follows_fast_recovery() {
        let mut cc = vegas(VegasConfig::default(), 10);
        let mut path = Path::new();
        path.round(&mut cc, ms(100));
        cc.on_congestion_event(
            path.now,
            &CongestionEvent {
                detection: Detection::DupAcks,
                flight_size_bytes: 20 * SMSS,
                lost_bytes: SMSS,
                smss_bytes: SMSS,
                restart_slow_start: false,
                repeated_timeout: false,
                during_fast_recovery: false,
            },
        );
        assert_eq!(cc.window(), 10 * SMSS);
        path.round(&mut cc, ms(100));
        assert_eq!(
            cc.ssthresh_bytes(),
            2 * SMSS,
            "ns-2: ssthresh only for slow start"
        );
        assert!(!cc.in_slow_start());
    }
}
