//! The two-state Gilbert–Elliott channel with exponentially distributed sojourns in *time*, as
//! seed 003 section 4.4.1.2 models bursty wireless losses: "one state is the error-free state
//! S0 and the other is the error state S1 ... The length of an error burst, which is the number
//! of consecutively corrupted packets, is determined by the duration of state S1 ... The
//! duration of each state is exponentially distributed." Its example is "an average error
//! burst of 8 packets and an overall packet error ratio of 10^-2".
//!
//! The channel is a continuous-time Markov chain that runs in simulated time whether or not
//! packets are sent; a packet reaching the receiver at `now` sees the state at `now` (a
//! transition at exactly `now` has already happened). By default the good state loses nothing
//! and the bad state loses every packet; each state's loss probability can be set.
//!
//! # Parameterisation (where the seed is silent, our choice)
//!
//! * From a mean burst *time* T_B and an overall loss rate r (with losses 0 and 1 per state):
//!   pi_B = r, so T_G = T_B (1 - r) / r.
//! * From a mean burst in *packets* n at a packet interval tau (the seed's "8 packets"):
//!   T_B = n tau, read literally from the seed ("determined by the duration of state S1").
//!   The mean run of consecutive lost packets that back-to-back packets then see is slightly
//!   larger than n, because a bad period that holds no packet is invisible and the sampled
//!   chain's run length is 1 / (1 - P_BB(tau)); `analytic_mean_burst_len` gives that exact
//!   value (8.5 for n = 8 and r = 0.01), and the tests check the simulation against it.
//!
//! Sojourns are drawn as `f64` nanoseconds from the model's stream, rounded to the nearest
//! nanosecond and at least 1 ns, and added to an integer `SimTime`; no float ever becomes an
//! event time by accumulation.

use super::{check_probability, two_state_loss_stats, ConfigError, LossModel};
use crate::rng::StreamRng;
use crate::time::{SimDuration, SimTime};

/// Across an idle gap longer than this many mean cycles (T_G + T_B) the channel jumps to
/// `now` in one draw instead of stepping through every sojourn (our choice: beyond 32 cycles
/// the two ways differ in cost only).
const SKIP_AHEAD_MEANS: f64 = 32.0;

/// Parameters of a [`GilbertElliott`] channel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GilbertElliottConfig {
    /// Mean sojourn in the good state, in nanoseconds (need not be an integer).
    pub mean_good_ns: f64,
    /// Mean sojourn in the bad state, in nanoseconds.
    pub mean_bad_ns: f64,
    /// Loss probability of a packet arriving in the good state (0 in seed 003).
    pub loss_good: f64,
    /// Loss probability of a packet arriving in the bad state (1 in seed 003).
    pub loss_bad: f64,
    /// The spacing at which packets are nominally offered, for `analytic_mean_burst_len`;
    /// `None` if the model was specified in time only.
    pub nominal_spacing: Option<SimDuration>,
}

impl GilbertElliottConfig {
    /// Mean error-burst duration `mean_burst` and overall loss rate `loss_rate` in (0, 1); the
    /// good state is lossless and the bad state loses everything.
    pub fn from_burst_time(mean_burst: SimDuration, loss_rate: f64) -> Result<Self, ConfigError> {
        if !(loss_rate > 0.0 && loss_rate < 1.0) {
            return Err(ConfigError::new(
                "loss_rate",
                format!("expected a loss rate in (0, 1), got {loss_rate}"),
            ));
        }
        if mean_burst.as_nanos() == 0 {
            return Err(ConfigError::new(
                "mean_burst",
                "expected a positive duration",
            ));
        }
        let mean_bad_ns = mean_burst.as_nanos() as f64;
        let cfg = GilbertElliottConfig {
            mean_good_ns: mean_bad_ns * (1.0 - loss_rate) / loss_rate,
            mean_bad_ns,
            loss_good: 0.0,
            loss_bad: 1.0,
            nominal_spacing: None,
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// Seed 003's form: a mean error burst of `mean_burst_pkts` packets for packets every
    /// `packet_interval` (mean bad sojourn = `mean_burst_pkts * packet_interval`) and an
    /// overall loss rate `loss_rate`. Sets `nominal_spacing` to `packet_interval`.
    pub fn from_burst_packets(
        mean_burst_pkts: f64,
        loss_rate: f64,
        packet_interval: SimDuration,
    ) -> Result<Self, ConfigError> {
        if !(mean_burst_pkts.is_finite() && mean_burst_pkts > 0.0) {
            return Err(ConfigError::new(
                "mean_burst_pkts",
                format!("expected a positive number of packets, got {mean_burst_pkts}"),
            ));
        }
        if packet_interval.as_nanos() == 0 {
            return Err(ConfigError::new(
                "packet_interval",
                "expected a positive duration",
            ));
        }
        if !(loss_rate > 0.0 && loss_rate < 1.0) {
            return Err(ConfigError::new(
                "loss_rate",
                format!("expected a loss rate in (0, 1), got {loss_rate}"),
            ));
        }
        let mean_bad_ns = mean_burst_pkts * packet_interval.as_nanos() as f64;
        let cfg = GilbertElliottConfig {
            mean_good_ns: mean_bad_ns * (1.0 - loss_rate) / loss_rate,
            mean_bad_ns,
            loss_good: 0.0,
            loss_bad: 1.0,
            nominal_spacing: Some(packet_interval),
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks every field; called by `GilbertElliott::new`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (name, v) in [
            ("mean_good_ns", self.mean_good_ns),
            ("mean_bad_ns", self.mean_bad_ns),
        ] {
            if !(v.is_finite() && v >= 1.0) {
                return Err(ConfigError::new(
                    name,
                    format!("expected a finite mean sojourn of at least 1 ns, got {v}"),
                ));
            }
        }
        check_probability("loss_good", self.loss_good)?;
        check_probability("loss_bad", self.loss_bad)?;
        if self.nominal_spacing == Some(SimDuration::ZERO) {
            return Err(ConfigError::new(
                "nominal_spacing",
                "expected a positive duration",
            ));
        }
        Ok(())
    }

    /// Stationary probability of the bad state: T_B / (T_G + T_B).
    pub fn pi_bad(&self) -> f64 {
        self.mean_bad_ns / (self.mean_good_ns + self.mean_bad_ns)
    }

    /// Transition probabilities (good to bad, bad to good) between two observations `spacing`
    /// apart: with rates a = 1/T_G, b = 1/T_B and e = exp(-(a + b) spacing),
    /// P_GB = pi_B (1 - e) and P_BG = pi_G (1 - e).
    pub fn transition_probs(&self, spacing: SimDuration) -> (f64, f64) {
        let pi_b = self.pi_bad();
        let rate_sum = 1.0 / self.mean_good_ns + 1.0 / self.mean_bad_ns;
        let one_minus_e = -libm::expm1(-rate_sum * spacing.as_nanos() as f64);
        (pi_b * one_minus_e, (1.0 - pi_b) * one_minus_e)
    }

    /// The exact mean length of a run of consecutive lost packets for packets offered every
    /// `spacing` (the continuous chain sampled at a fixed spacing is a discrete Markov chain).
    pub fn mean_burst_len_at(&self, spacing: SimDuration) -> Option<f64> {
        let (p_gb, p_bg) = self.transition_probs(spacing);
        two_state_loss_stats(p_gb, p_bg, self.loss_good, self.loss_bad).1
    }
}

/// A Gilbert–Elliott channel evolving in simulated time; see the module documentation.
#[derive(Debug)]
pub struct GilbertElliott {
    cfg: GilbertElliottConfig,
    bad: bool,
    /// When the current sojourn ends.
    next_change: SimTime,
    last_now: SimTime,
    rng: StreamRng,
}

impl GilbertElliott {
    /// A channel started at time zero in its stationary regime: the initial state is bad with
    /// probability pi_B, and the first sojourn is a fresh exponential (the residual life of an
    /// exponential sojourn has the same law).
    pub fn new(cfg: GilbertElliottConfig, mut rng: StreamRng) -> Result<Self, ConfigError> {
        cfg.validate()?;
        let bad = rng.bernoulli(cfg.pi_bad());
        let mut m = GilbertElliott {
            cfg,
            bad,
            next_change: SimTime::ZERO,
            last_now: SimTime::ZERO,
            rng,
        };
        m.next_change = SimTime::ZERO + m.draw_sojourn();
        Ok(m)
    }

    pub fn config(&self) -> &GilbertElliottConfig {
        &self.cfg
    }

    /// Whether the channel was in the bad state at the last call (or at time zero).
    pub fn is_bad(&self) -> bool {
        self.bad
    }

    /// When the current sojourn ends (for traces of the channel state).
    pub fn next_change(&self) -> SimTime {
        self.next_change
    }

    fn draw_sojourn(&mut self) -> SimDuration {
        let mean = if self.bad {
            self.cfg.mean_bad_ns
        } else {
            self.cfg.mean_good_ns
        };
        let ns = libm::round(self.rng.exponential(mean));
        // `as` saturates, and a sojourn is at least 1 ns so that time always moves on.
        SimDuration::from_nanos((ns as u64).max(1))
    }

    /// Advances the channel to `now`.
    ///
    /// Sojourn by sojourn, except across a gap longer than [`SKIP_AHEAD_MEANS`] mean cycles
    /// (a link idle for hours with millisecond sojourns): there the state at `now` is drawn
    /// from the chain's transition law over the gap, P(bad at now | bad at t) = pi_B + pi_G e
    /// and P(bad at now | good at t) = pi_B (1 - e) with e = exp(-(1/T_G + 1/T_B)(now - t)),
    /// and the sojourn in progress at `now` gets a fresh exponential remainder (memorylessness).
    /// Both ways give the same law; the jump costs O(1) instead of O(gap / cycle).
    fn advance(&mut self, now: SimTime) {
        debug_assert!(now >= self.last_now, "loss model asked about the past");
        let now = now.max(self.last_now);
        self.last_now = now;
        if self.next_change > now {
            return;
        }
        let cycle_ns = self.cfg.mean_good_ns + self.cfg.mean_bad_ns;
        let gap_ns = (now - self.next_change).as_nanos() as f64;
        if gap_ns > SKIP_AHEAD_MEANS * cycle_ns {
            // The sojourn ending at `next_change` ends; from there the chain runs freely.
            let from_bad = !self.bad;
            let pi_b = self.cfg.pi_bad();
            let rate_sum = 1.0 / self.cfg.mean_good_ns + 1.0 / self.cfg.mean_bad_ns;
            let e = libm::exp(-rate_sum * gap_ns);
            let p_bad = if from_bad {
                pi_b + (1.0 - pi_b) * e
            } else {
                pi_b * (1.0 - e)
            };
            self.bad = self.rng.bernoulli(p_bad);
            self.next_change = now + self.draw_sojourn();
            return;
        }
        while self.next_change <= now {
            self.bad = !self.bad;
            let d = self.draw_sojourn();
            self.next_change += d;
        }
    }
}

impl LossModel for GilbertElliott {
    /// Advances the channel to `now`, then loses the packet with the current state's loss
    /// probability. A state with loss probability exactly 0 or 1 decides without a draw.
    fn is_lost(&mut self, now: SimTime) -> bool {
        self.advance(now);
        let l = if self.bad {
            self.cfg.loss_bad
        } else {
            self.cfg.loss_good
        };
        if l <= 0.0 {
            false
        } else if l >= 1.0 {
            true
        } else {
            self.rng.bernoulli(l)
        }
    }

    /// pi_G l_G + pi_B l_B.
    fn analytic_loss_rate(&self) -> f64 {
        let pi_b = self.cfg.pi_bad();
        (1.0 - pi_b) * self.cfg.loss_good + pi_b * self.cfg.loss_bad
    }

    /// At `nominal_spacing`, if the model has one.
    fn analytic_mean_burst_len(&self) -> Option<f64> {
        self.cfg
            .nominal_spacing
            .and_then(|s| self.cfg.mean_burst_len_at(s))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::observe;
    use super::*;

    /// Seed 003, 4.4.1: 1000-byte packets on the 1.5 Mb/s wireless link, 16/3 ms apart.
    const SEED003_PACKET_NS: u64 = 5_333_333;

    #[test]
    fn seed003_example_parameters() {
        let interval = SimDuration::from_nanos(SEED003_PACKET_NS);
        let cfg = GilbertElliottConfig::from_burst_packets(8.0, 0.01, interval).unwrap();
        assert!((cfg.mean_bad_ns - 8.0 * SEED003_PACKET_NS as f64).abs() < 1e-6);
        assert!((cfg.pi_bad() - 0.01).abs() < 1e-15);
        let m = GilbertElliott::new(cfg, StreamRng::derive(1, "ge")).unwrap();
        assert!((m.analytic_loss_rate() - 0.01).abs() < 1e-15);
        // 1 / (1 - P_BB(tau)) with P_BB = pi_B + pi_G exp(-tau (1/T_G + 1/T_B)).
        let burst = m.analytic_mean_burst_len().unwrap();
        let rate_sum = 1.0 / cfg.mean_good_ns + 1.0 / cfg.mean_bad_ns;
        let p_bb = 0.01 + 0.99 * (-(SEED003_PACKET_NS as f64) * rate_sum).exp();
        assert!((burst - 1.0 / (1.0 - p_bb)).abs() < 1e-9);
        assert!(burst > 8.0 && burst < 8.6, "burst {burst}");
    }

    #[test]
    fn long_run_rate_and_burst_match_analytic_values() {
        // A burstier, higher-loss variant of the seed's example so that a short run holds
        // many bursts: mean burst 8 packets, loss rate 5 %.
        let interval = SimDuration::from_nanos(SEED003_PACKET_NS);
        let cfg = GilbertElliottConfig::from_burst_packets(8.0, 0.05, interval).unwrap();
        let mut m = GilbertElliott::new(cfg, StreamRng::derive(2024, "ge")).unwrap();
        let n = 2_000_000;
        let (rate, burst) = observe(&mut m, n, interval);
        // About n * r / burst = 11,700 bursts; the rate's relative sd is about
        // sqrt(burst cv^2 / bursts) ~ 1.3 %.
        assert!((rate - 0.05).abs() / 0.05 < 0.06, "rate {rate}");
        let want = m.analytic_mean_burst_len().unwrap();
        assert!(
            (burst - want).abs() / want < 0.04,
            "burst {burst} vs {want}"
        );
    }

    #[test]
    fn time_only_model_has_rate_but_no_packet_burst() {
        let cfg =
            GilbertElliottConfig::from_burst_time(SimDuration::from_millis(40), 0.02).unwrap();
        assert!((cfg.mean_good_ns - 40e6 * 49.0).abs() < 1e-3);
        let m = GilbertElliott::new(cfg, StreamRng::derive(1, "ge")).unwrap();
        assert_eq!(m.analytic_mean_burst_len(), None);
        assert!((m.analytic_loss_rate() - 0.02).abs() < 1e-15);
        // Back-to-back packets much closer than the burst time see runs of ~ T_B / spacing.
        let b = cfg
            .mean_burst_len_at(SimDuration::from_micros(100))
            .unwrap();
        assert!((b - 400.0).abs() < 1.0, "{b}");
    }

    #[test]
    fn partial_losses_per_state() {
        let cfg = GilbertElliottConfig {
            mean_good_ns: 9e6,
            mean_bad_ns: 1e6,
            loss_good: 0.01,
            loss_bad: 0.5,
            nominal_spacing: Some(SimDuration::from_micros(250)),
        };
        let mut m = GilbertElliott::new(cfg, StreamRng::derive(5, "ge")).unwrap();
        let want_rate = 0.9 * 0.01 + 0.1 * 0.5;
        assert!((m.analytic_loss_rate() - want_rate).abs() < 1e-15);
        let (rate, burst) = observe(&mut m, 2_000_000, SimDuration::from_micros(250));
        assert!((rate - want_rate).abs() / want_rate < 0.05, "rate {rate}");
        let want = m.analytic_mean_burst_len().unwrap();
        assert!(
            (burst - want).abs() / want < 0.03,
            "burst {burst} vs {want}"
        );
    }

    #[test]
    fn state_evolves_during_idle_time() {
        // Fraction of time in the bad state, probed once per second (far apart compared with
        // the sojourns, so nearly independent probes).
        let cfg = GilbertElliottConfig::from_burst_time(SimDuration::from_millis(10), 0.3).unwrap();
        let mut m = GilbertElliott::new(cfg, StreamRng::derive(9, "ge")).unwrap();
        let (rate, _) = observe(&mut m, 20_000, SimDuration::from_secs(1));
        // sd = sqrt(0.21 / 20000) = 0.0032
        assert!((rate - 0.3).abs() < 0.017, "rate {rate}");
    }

    #[test]
    fn long_idle_gaps_jump_ahead_with_the_right_law() {
        // Sojourns of ~1 ms probed once an hour: every probe takes the O(1) jump. The state at
        // a probe must be bad with probability pi_B = 0.25, and a packet right after the probe
        // must see the state's residual sojourn (here: the same state 1 us later, almost
        // surely).
        let cfg = GilbertElliottConfig::from_burst_time(SimDuration::from_millis(1), 0.25).unwrap();
        let mut m = GilbertElliott::new(cfg, StreamRng::derive(12, "ge")).unwrap();
        let hour = SimDuration::from_secs(3600);
        let n = 20_000;
        let (mut bad, mut same) = (0u32, 0u32);
        let mut now = SimTime::ZERO;
        for _ in 0..n {
            now += hour;
            let a = m.is_lost(now);
            let b = m.is_lost(now + SimDuration::from_micros(1));
            bad += u32::from(a);
            same += u32::from(a == b);
        }
        let rate = f64::from(bad) / f64::from(n);
        // sd = sqrt(0.1875 / 20000) = 0.0031
        assert!((rate - 0.25).abs() < 0.0155, "rate {rate}");
        assert!(
            same >= n - 60,
            "state flipped within 1 us {} times",
            n - same
        );
        assert!(m.next_change() > now);
    }

    #[test]
    fn same_seed_same_decisions() {
        let cfg = GilbertElliottConfig::from_burst_time(SimDuration::from_millis(5), 0.1).unwrap();
        let run = || {
            let mut m = GilbertElliott::new(cfg, StreamRng::derive(77, "ge")).unwrap();
            (0..10_000u64)
                .map(|i| m.is_lost(SimTime::from_nanos(i * 1_000_000)))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn rejects_bad_parameters() {
        let i = SimDuration::from_millis(1);
        assert_eq!(
            GilbertElliottConfig::from_burst_packets(8.0, 0.0, i)
                .unwrap_err()
                .param,
            "loss_rate"
        );
        assert_eq!(
            GilbertElliottConfig::from_burst_packets(-1.0, 0.1, i)
                .unwrap_err()
                .param,
            "mean_burst_pkts"
        );
        assert_eq!(
            GilbertElliottConfig::from_burst_time(SimDuration::ZERO, 0.1)
                .unwrap_err()
                .param,
            "mean_burst"
        );
        let mut cfg = GilbertElliottConfig::from_burst_time(i, 0.1).unwrap();
        cfg.loss_bad = 2.0;
        assert_eq!(
            GilbertElliott::new(cfg, StreamRng::derive(1, "g"))
                .unwrap_err()
                .param,
            "loss_bad"
        );
    }
}
