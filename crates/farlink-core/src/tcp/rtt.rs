//! The retransmission timeout estimator of RFC 6298, with Karn's exponential backoff.
//!
//! Read first: RFC 6298 (all of it; the numbered rules (2.1)–(2.5) and (5.1)–(5.7) are quoted
//! in the code), Karn and Partridge 1987 ("Improving round-trip time estimates in reliable
//! transport protocols"), RFC 7323 section 4 (RTT measurement with timestamps).
//!
//! The estimator only does arithmetic on samples it is given. *Which* acknowledgements may give
//! a sample (Karn's rule: none from a retransmitted segment unless timestamps make it
//! unambiguous) is the sender's decision, in `sender.rs`. Times are integer nanoseconds.

use crate::time::SimDuration;

/// RFC 6298 (2.1): "Until a round-trip time (RTT) measurement has been made ..., the sender
/// SHOULD set RTO <- 1 second".
pub const INITIAL_RTO: SimDuration = SimDuration::from_secs(1);
/// RFC 6298 (2.4): "Whenever RTO is computed, if it is less than 1 second, then the RTO SHOULD
/// be rounded up to 1 second."
pub const MIN_RTO: SimDuration = SimDuration::from_secs(1);
/// RFC 6298 (2.5): "A maximum value MAY be placed on RTO provided it is at least 60 seconds."
/// 64 s is the bound of the BSD stacks that seed 004 (IS-707) observes ("TCP waits a long
/// timeout interval (64 seconds)").
pub const MAX_RTO: SimDuration = SimDuration::from_secs(64);
/// RFC 6298 section 2: G, the clock granularity. Our clock is exact to the nanosecond; we take
/// the 1 ms of a kernel at HZ=1000, which also matches the timestamp clock tick
/// (`segment::TIMESTAMP_TICK`).
pub const CLOCK_GRANULARITY: SimDuration = SimDuration::from_millis(1);
/// RFC 6298 (2.3): alpha = 1/8 ...
const ALPHA_SHIFT: u32 = 3;
/// ... and beta = 1/4.
const BETA_SHIFT: u32 = 2;
/// RFC 6298 (2.2): K = 4.
const K: u64 = 4;
/// RFC 6298 (5.5): "The host MUST set RTO <- RTO * 2 ("back off the timer")."
const BACKOFF_FACTOR: u64 = 2;

/// Bounds and initial value of the retransmission timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RttConfig {
    pub initial_rto: SimDuration,
    pub min_rto: SimDuration,
    pub max_rto: SimDuration,
    /// G of RFC 6298 section 2.
    pub clock_granularity: SimDuration,
}

impl Default for RttConfig {
    /// RFC 6298 values: initial 1 s (2.1), minimum 1 s (2.4), maximum 64 s (2.5), G = 1 ms.
    fn default() -> Self {
        RttConfig {
            initial_rto: INITIAL_RTO,
            min_rto: MIN_RTO,
            max_rto: MAX_RTO,
            clock_granularity: CLOCK_GRANULARITY,
        }
    }
}

/// SRTT, RTTVAR and the (possibly backed-off) RTO of RFC 6298.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    config: RttConfig,
    srtt: Option<SimDuration>,
    rttvar: SimDuration,
    latest: Option<SimDuration>,
    min_rtt: Option<SimDuration>,
    /// RTO computed from SRTT and RTTVAR by (2.2)/(2.3), clamped by (2.4)/(2.5).
    base_rto: SimDuration,
    /// The RTO in force: `base_rto` doubled once per timeout since the last valid sample
    /// (RFC 6298 (5.5); Karn's algorithm keeps the backed-off value until a sample arrives).
    rto: SimDuration,
    backoffs: u32,
    samples: u64,
}

impl RttEstimator {
    pub fn new(config: RttConfig) -> Self {
        let rto = clamp(config.initial_rto, &config);
        RttEstimator {
            config,
            srtt: None,
            rttvar: SimDuration::ZERO,
            latest: None,
            min_rtt: None,
            base_rto: rto,
            rto,
            backoffs: 0,
            samples: 0,
        }
    }

    /// Feeds one valid RTT measurement R and recomputes RTO; clears any backoff.
    pub fn on_sample(&mut self, r: SimDuration) {
        let r_ns = r.as_nanos();
        match self.srtt {
            None => {
                // (2.2) "When the first RTT measurement R is made, the host MUST set
                //        SRTT <- R, RTTVAR <- R/2, RTO <- SRTT + max (G, K*RTTVAR)"
                self.srtt = Some(r);
                self.rttvar = SimDuration::from_nanos(r_ns / 2);
            }
            Some(srtt) => {
                // (2.3) "RTTVAR <- (1 - beta) * RTTVAR + beta * |SRTT - R'|
                //        SRTT <- (1 - alpha) * SRTT + alpha * R'"
                // RTTVAR first, with the SRTT from before this update, as (2.3) requires.
                let srtt_ns = srtt.as_nanos();
                let rttvar_ns = self.rttvar.as_nanos();
                let err_ns = srtt_ns.abs_diff(r_ns);
                let rttvar_ns = rttvar_ns - (rttvar_ns >> BETA_SHIFT) + (err_ns >> BETA_SHIFT);
                let srtt_ns = srtt_ns - (srtt_ns >> ALPHA_SHIFT) + (r_ns >> ALPHA_SHIFT);
                self.rttvar = SimDuration::from_nanos(rttvar_ns);
                self.srtt = Some(SimDuration::from_nanos(srtt_ns));
            }
        }
        let srtt_ns = self.srtt.map_or(0, SimDuration::as_nanos);
        let var_term_ns =
            (K * self.rttvar.as_nanos()).max(self.config.clock_granularity.as_nanos());
        self.base_rto = clamp(SimDuration::from_nanos(srtt_ns + var_term_ns), &self.config);
        self.rto = self.base_rto;
        self.backoffs = 0;
        self.latest = Some(r);
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        self.samples += 1;
    }

    /// (5.5) "The host MUST set RTO <- RTO * 2 ("back off the timer"). The maximum value
    /// discussed in (2.5) above may be used to provide an upper bound to this doubling
    /// operation."
    pub fn back_off(&mut self) {
        let doubled = self.rto.as_nanos().saturating_mul(BACKOFF_FACTOR);
        self.rto = SimDuration::from_nanos(doubled.min(self.config.max_rto.as_nanos()));
        self.backoffs += 1;
    }

    /// Sets the RTO to `rto` (clamped by (2.4)/(2.5)) with no backoff, SRTT still unknown:
    /// RFC 6298 (5.7), the RTO once data starts after a retransmitted SYN or SYN-ACK.
    pub fn reset_rto(&mut self, rto: SimDuration) {
        self.base_rto = clamp(rto, &self.config);
        self.rto = self.base_rto;
        self.backoffs = 0;
    }

    /// The retransmission timeout in force, backoff included.
    pub fn rto(&self) -> SimDuration {
        self.rto
    }
    pub fn srtt(&self) -> Option<SimDuration> {
        self.srtt
    }
    pub fn rttvar(&self) -> SimDuration {
        self.rttvar
    }
    /// The most recent sample.
    pub fn latest(&self) -> Option<SimDuration> {
        self.latest
    }
    /// The smallest sample seen (for delay-based controllers such as Vegas).
    pub fn min_rtt(&self) -> Option<SimDuration> {
        self.min_rtt
    }
    /// Timeouts since the last valid sample.
    pub fn backoffs(&self) -> u32 {
        self.backoffs
    }
    /// Valid samples taken.
    pub fn samples(&self) -> u64 {
        self.samples
    }
    pub fn config(&self) -> &RttConfig {
        &self.config
    }
}

/// (2.4) and (2.5): round up to the minimum, cap at the maximum.
fn clamp(rto: SimDuration, config: &RttConfig) -> SimDuration {
    rto.max(config.min_rto).min(config.max_rto)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> SimDuration {
        SimDuration::from_millis(v)
    }

    fn unclamped() -> RttConfig {
        RttConfig {
            min_rto: SimDuration::ZERO,
            ..RttConfig::default()
        }
    }

    #[test]
    fn initial_rto_is_one_second() {
        let e = RttEstimator::new(RttConfig::default());
        assert_eq!(e.rto(), SimDuration::from_secs(1));
        assert_eq!(e.srtt(), None);
    }

    #[test]
    fn first_sample_sets_srtt_and_half_rttvar() {
        let mut e = RttEstimator::new(unclamped());
        e.on_sample(ms(600));
        assert_eq!(e.srtt(), Some(ms(600)));
        assert_eq!(e.rttvar(), ms(300));
        assert_eq!(e.rto(), ms(600 + 4 * 300));
    }

    #[test]
    fn later_samples_use_alpha_one_eighth_and_beta_one_quarter() {
        let mut e = RttEstimator::new(unclamped());
        e.on_sample(ms(800));
        e.on_sample(ms(400));
        // RTTVAR = 3/4 * 400 + 1/4 * |800 - 400| = 400; SRTT = 7/8 * 800 + 1/8 * 400 = 750.
        assert_eq!(e.rttvar(), ms(400));
        assert_eq!(e.srtt(), Some(ms(750)));
        assert_eq!(e.rto(), ms(750 + 1600));
    }

    #[test]
    fn steady_samples_converge_and_granularity_bounds_the_variance_term() {
        let mut e = RttEstimator::new(unclamped());
        for _ in 0..200 {
            e.on_sample(ms(100));
        }
        assert_eq!(e.srtt(), Some(ms(100)));
        assert_eq!(
            e.rto(),
            ms(101),
            "RTO = SRTT + max(G, 4 RTTVAR) with RTTVAR -> 0"
        );
    }

    #[test]
    fn rto_is_rounded_up_to_the_minimum() {
        let mut e = RttEstimator::new(RttConfig::default());
        e.on_sample(ms(10));
        assert_eq!(e.rto(), SimDuration::from_secs(1));
    }

    #[test]
    fn backoff_doubles_up_to_the_maximum_and_a_sample_clears_it() {
        let mut e = RttEstimator::new(RttConfig::default());
        e.back_off();
        assert_eq!(e.rto(), SimDuration::from_secs(2));
        for _ in 0..10 {
            e.back_off();
        }
        assert_eq!(e.rto(), MAX_RTO);
        assert_eq!(e.backoffs(), 11);
        e.on_sample(ms(500));
        assert_eq!(e.backoffs(), 0);
        assert_eq!(e.rto(), ms(500 + 4 * 250));
    }

    #[test]
    fn reset_rto_clears_the_backoff_and_respects_the_bounds() {
        let mut e = RttEstimator::new(RttConfig::default());
        e.back_off();
        e.back_off();
        e.reset_rto(SimDuration::from_secs(3));
        assert_eq!(
            (e.rto(), e.backoffs(), e.srtt()),
            (SimDuration::from_secs(3), 0, None)
        );
        let mut e = RttEstimator::new(RttConfig {
            max_rto: SimDuration::from_secs(2),
            min_rto: SimDuration::from_secs(1),
            ..RttConfig::default()
        });
        e.reset_rto(SimDuration::from_secs(3));
        assert_eq!(e.rto(), SimDuration::from_secs(2));
    }

    #[test]
    fn initial_rto_above_the_maximum_is_capped() {
        let e = RttEstimator::new(RttConfig {
            initial_rto: SimDuration::from_secs(100),
            ..RttConfig::default()
        });
        assert_eq!(e.rto(), MAX_RTO);
    }
}
