//! The retransmission timeout estimator of RFC 6298, with Karn's exponential backoff, and
//! Linux's estimator beside it ([`RtoRule::Linux`], opt-in).
//!
//! Read first: RFC 6298 (all of it; the numbered rules (2.1)–(2.5) and (5.1)–(5.7) are quoted
//! in the code), Karn and Partridge 1987 ("Improving round-trip time estimates in reliable
//! transport protocols"), RFC 7323 section 4 (RTT measurement with timestamps).
//!
//! The estimator only does arithmetic on samples it is given. *Which* acknowledgements may give
//! a sample (Karn's rule: none from a retransmitted segment unless timestamps make it
//! unambiguous) is the sender's decision, in `sender.rs`. Times are integer nanoseconds.
//!
//! Linux's rule (net/ipv4/tcp_input.c `tcp_rtt_estimator`, `tcp_set_rto`, `__tcp_set_rto`;
//! include/net/tcp.h `tcp_bound_rto`; net/ipv4/tcp_timer.c for the backoff) keeps the same
//! SRTT, but its variance term differs: `mdev` is the smoothed deviation, except that a
//! sample *below* SRTT moves it with weight 1/32 instead of 1/4; `mdev_max` is the largest
//! `mdev` of the current round trip, never below the minimum RTO; `rttvar` follows a rising
//! `mdev_max` at once and, once per round trip (when `SND.UNA` passes the `SND.NXT` of the
//! round's start), falls a quarter of the way towards it. RTO = SRTT + rttvar, so the floor is
//! SRTT + min_rto rather than a clamp of the whole RTO; the first sample gives
//! mdev = 2R and RTO = R + max(2R, min_rto). The kernel's `min_rto` is 200 ms and its maximum
//! 120 s (`TCP_RTO_MIN`, `TCP_RTO_MAX`); the scenario gives those defaults with `rto = "linux"`.

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
/// Linux's `TCP_RTO_MIN` (include/net/tcp.h: `HZ / 5`), the default `min_rto` of
/// [`RtoRule::Linux`].
pub const LINUX_MIN_RTO: SimDuration = SimDuration::from_millis(200);
/// Linux's `TCP_RTO_MAX` (`120 * HZ`), the default `max_rto` of [`RtoRule::Linux`].
pub const LINUX_MAX_RTO: SimDuration = SimDuration::from_secs(120);

/// Which estimator computes the RTO.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RtoRule {
    /// RFC 6298 (2.2)/(2.3), clamped by (2.4)/(2.5).
    #[default]
    Rfc6298,
    /// Linux's `tcp_rtt_estimator` and `tcp_set_rto` (module header).
    Linux,
}

impl RtoRule {
    pub const NAMES: &'static [&'static str] = &["rfc6298", "linux"];

    pub fn name(self) -> &'static str {
        match self {
            RtoRule::Rfc6298 => "rfc6298",
            RtoRule::Linux => "linux",
        }
    }

    /// Whether resending the oldest unacknowledged segment restarts the retransmission timer.
    /// RFC 6298 restarts it only on an ACK of new data (5.3); Linux's
    /// `tcp_xmit_retransmit_queue` (net/ipv4/tcp_output.c) also rearms it, for the RTO in
    /// force, whenever the segment it resent was the head of the retransmission queue and
    /// RACK's reordering timer was not the one pending. A fast recovery whose resends of the
    /// head keep being lost thus times out one RTO after the last of them, not one RTO after
    /// the last ACK of new data.
    pub fn restarts_on_head_retransmission(self) -> bool {
        self == RtoRule::Linux
    }
}

impl std::str::FromStr for RtoRule {
    type Err = super::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "rfc6298" => Ok(RtoRule::Rfc6298),
            "linux" => Ok(RtoRule::Linux),
            _ => Err(super::UnknownName {
                what: "RTO rule",
                name: s.to_owned(),
                expected: Self::NAMES,
            }),
        }
    }
}

/// Linux's variance state (`mdev_us`, `mdev_max_us`, `rttvar_us`, `rtt_seq` of
/// `struct tcp_sock`), in nanoseconds.
#[derive(Clone, Copy, Debug, Default)]
struct LinuxVar {
    mdev: u64,
    mdev_max: u64,
    rttvar: u64,
    /// `SND.NXT` when the current round trip began.
    rtt_seq: u64,
}

/// Bounds and initial value of the retransmission timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RttConfig {
    pub initial_rto: SimDuration,
    pub min_rto: SimDuration,
    pub max_rto: SimDuration,
    /// G of RFC 6298 section 2.
    pub clock_granularity: SimDuration,
    pub rule: RtoRule,
}

impl Default for RttConfig {
    /// RFC 6298 values: initial 1 s (2.1), minimum 1 s (2.4), maximum 64 s (2.5), G = 1 ms.
    fn default() -> Self {
        RttConfig {
            initial_rto: INITIAL_RTO,
            min_rto: MIN_RTO,
            max_rto: MAX_RTO,
            clock_granularity: CLOCK_GRANULARITY,
            rule: RtoRule::Rfc6298,
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
    linux: LinuxVar,
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
            linux: LinuxVar::default(),
        }
    }

    /// Feeds one valid RTT measurement R and recomputes RTO; clears any backoff. Linux's
    /// rule needs `SND.UNA` (after the ACK) and `SND.NXT` to tell round trips apart; RFC
    /// 6298's ignores them.
    pub fn on_sample_at(&mut self, r: SimDuration, snd_una: u64, snd_nxt: u64) {
        match self.config.rule {
            RtoRule::Rfc6298 => self.rfc6298_sample(r),
            RtoRule::Linux => self.linux_sample(r, snd_una, snd_nxt),
        }
    }

    /// [`RttEstimator::on_sample_at`] with no sequence space (a controller's own estimator,
    /// the handshake's sample before any data): Linux's rule then sees one round trip.
    pub fn on_sample(&mut self, r: SimDuration) {
        self.on_sample_at(r, 0, 0);
    }

    /// Linux's `tcp_rtt_estimator` then `tcp_set_rto` (module header). SRTT is kept exact
    /// in nanoseconds where the kernel keeps 8·SRTT in microseconds; the shifts are its.
    fn linux_sample(&mut self, r: SimDuration, snd_una: u64, snd_nxt: u64) {
        let r_ns = r.as_nanos();
        let min_rto_ns = self.config.min_rto.as_nanos();
        let v = &mut self.linux;
        match self.srtt {
            None => {
                // "srtt = m << 3; mdev_us = m << 1; rttvar_us = max(mdev_us, rto_min)".
                self.srtt = Some(r);
                v.mdev = 2 * r_ns;
                v.rttvar = v.mdev.max(min_rto_ns);
                v.mdev_max = v.rttvar;
                v.rtt_seq = snd_nxt;
            }
            Some(srtt) => {
                let srtt_ns = srtt.as_nanos();
                // SRTT += (R - SRTT) / 8.
                let srtt_ns = srtt_ns - (srtt_ns >> ALPHA_SHIFT) + (r_ns >> ALPHA_SHIFT);
                // mdev += (|R - SRTT| - mdev) / 4, except that a sample below SRTT counts
                // 1/8 as much ("m -= mdev >> 2; if (m > 0) m >>= 3"): a falling RTT must not
                // raise the RTO.
                let quarter = v.mdev >> BETA_SHIFT;
                let err_ns = srtt.as_nanos().abs_diff(r_ns);
                if r_ns < srtt.as_nanos() && err_ns > quarter {
                    v.mdev += (err_ns - quarter) >> ALPHA_SHIFT;
                } else {
                    v.mdev = v.mdev + err_ns - quarter;
                }
                self.srtt = Some(SimDuration::from_nanos(srtt_ns.max(1)));
                if v.mdev > v.mdev_max {
                    v.mdev_max = v.mdev;
                    v.rttvar = v.rttvar.max(v.mdev_max);
                }
                // Once per round trip: rttvar decays towards the round's largest mdev.
                if snd_una > v.rtt_seq {
                    if v.mdev_max < v.rttvar {
                        v.rttvar -= (v.rttvar - v.mdev_max) >> BETA_SHIFT;
                    }
                    v.rtt_seq = snd_nxt;
                    v.mdev_max = min_rto_ns;
                }
            }
        }
        self.rttvar = SimDuration::from_nanos(v.rttvar);
        let srtt_ns = self.srtt.map_or(0, SimDuration::as_nanos);
        // `__tcp_set_rto`: SRTT + rttvar; `tcp_bound_rto`: at most the maximum. The minimum
        // is already in rttvar.
        self.base_rto = SimDuration::from_nanos(srtt_ns + v.rttvar).min(self.config.max_rto);
        self.finish_sample(r);
    }

    /// RFC 6298's rule: one valid RTT measurement R.
    fn rfc6298_sample(&mut self, r: SimDuration) {
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
        self.finish_sample(r);
    }

    /// What every sample does whatever the rule: the backoff ends, the sample is counted.
    fn finish_sample(&mut self, r: SimDuration) {
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

    fn linux() -> RttConfig {
        RttConfig {
            min_rto: LINUX_MIN_RTO,
            max_rto: LINUX_MAX_RTO,
            rule: RtoRule::Linux,
            ..RttConfig::default()
        }
    }

    #[test]
    fn linux_rto_follows_the_kernel_rule_sample_by_sample() {
        let mut e = RttEstimator::new(linux());
        assert_eq!(e.rto(), SimDuration::from_secs(1), "initial 1 s");
        // First sample R = 100 ms: mdev = 2R = 200, rttvar = max(mdev, 200 ms) = 200,
        // RTO = 100 + 200.
        e.on_sample_at(ms(100), 0, 10);
        assert_eq!(e.rto(), ms(300));
        // R = 300 in the same round (SND.UNA 5 <= rtt_seq 10): SRTT = 100 + 200/8 = 125;
        // mdev = 200 + (200 - 200/4) = 350 > mdev_max 200, so rttvar = 350. RTO = 475.
        e.on_sample_at(ms(300), 5, 20);
        assert_eq!(e.rto(), ms(475));
        // R = 50, a new round (SND.UNA 15 > 10): SRTT = 125 - 125/8 + 50/8 = 115.625;
        // |err| = 75 below mdev/4 = 87.5, so mdev = 350 + 75 - 87.5 = 337.5 (no 1/8 damping);
        // the round ends with mdev_max = rttvar = 350: no decay; mdev_max resets to 200.
        // RTO = 115.625 + 350.
        e.on_sample_at(ms(50), 15, 30);
        assert_eq!(e.rto(), SimDuration::from_micros(465_625));
        // R = 100, a new round (31 > 30): SRTT = 115.625 - 14.453125 + 12.5 = 113.671875;
        // mdev = 337.5 + 15.625 - 84.375 = 268.75 = mdev_max; rttvar decays by
        // (350 - 268.75)/4 to 329.6875. RTO = 443.359375 ms.
        e.on_sample_at(ms(100), 31, 40);
        assert_eq!(e.rto(), SimDuration::from_nanos(443_359_375));
        // R = 10, same round: below SRTT by 103.671875 > mdev/4 = 67.1875, so mdev grows by
        // only (103.671875 - 67.1875)/8 and stays below rttvar. SRTT = 113.671875 -
        // 14.208984375 + 1.25 = 100.712890625, RTO = that + 329.6875 = 430.400390625 ms,
        // less the nanosecond the integer eighths drop.
        e.on_sample_at(ms(10), 35, 45);
        let expected_ns: u64 = 430_400_390;
        assert!(
            e.rto().as_nanos().abs_diff(expected_ns) <= 1,
            "{} ns",
            e.rto().as_nanos()
        );
        // An RFC 6298 estimator would have put RTO at its 1 s floor throughout.
        let mut rfc = RttEstimator::new(RttConfig::default());
        for r in [100, 300, 50, 100, 10] {
            rfc.on_sample_at(ms(r), 0, 0);
        }
        assert_eq!(rfc.rto(), SimDuration::from_secs(1));
    }

    #[test]
    fn linux_rto_floor_is_srtt_plus_min_rto_and_backoff_caps_at_120_s() {
        let mut e = RttEstimator::new(linux());
        // The handshake's sample, before any data: Linux's first-sample rule, not RFC 6298's.
        e.on_sample(ms(20));
        assert_eq!((e.rto(), e.rttvar()), (ms(220), ms(200)));
        let mut una = 0;
        for _ in 0..100 {
            una += 10;
            e.on_sample_at(ms(20), una, una + 10);
        }
        // Steady 20 ms: mdev -> 0, rttvar decays to its floor min_rto; RTO = 20 + 200.
        assert_eq!(e.rto(), ms(220));
        for _ in 0..20 {
            e.back_off();
        }
        assert_eq!(e.rto(), SimDuration::from_secs(120));
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
