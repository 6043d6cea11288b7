//! Simulated time: integer nanoseconds, never floating point.
//!
//! At 10 Gb/s one 1500-byte packet lasts 1.2 µs, so microseconds are too coarse; a `u64` of
//! nanoseconds spans 584 years, far beyond any scenario. Only `SimTime ± SimDuration` and
//! `SimTime − SimTime` are defined, so an instant can never be added to an instant.
//!
//! Rates live here too, as [`BitRate`] (integer bits per second): a rate only ever turns bytes
//! into a duration or a duration into bytes, and a type of its own keeps a rate in bytes per
//! second, or a plain count, from passing for one.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in simulated time, in nanoseconds since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(u64);

/// A span of simulated time, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimDuration(u64);

const NS_PER_S: u64 = 1_000_000_000;

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    pub const fn from_nanos(ns: u64) -> Self {
        SimTime(ns)
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Seconds as a float, for reporting only; never feed this back into event times.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NS_PER_S as f64
    }
    /// The span since an earlier instant, or zero if `earlier` is later.
    pub fn saturating_since(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(earlier.0))
    }
}

impl SimDuration {
    pub const ZERO: SimDuration = SimDuration(0);

    pub const fn from_nanos(ns: u64) -> Self {
        SimDuration(ns)
    }
    pub const fn from_micros(us: u64) -> Self {
        SimDuration(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Self {
        SimDuration(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Self {
        SimDuration(s * NS_PER_S)
    }
    /// Rounds to the nearest nanosecond; for configuration input, not for the hot path.
    pub fn from_secs_f64(s: f64) -> Self {
        SimDuration((s * NS_PER_S as f64).round() as u64)
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NS_PER_S as f64
    }
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    fn add(self, d: SimDuration) -> SimTime {
        SimTime(
            self.0
                .checked_add(d.0)
                .expect("simulated time overflowed u64 nanoseconds"),
        )
    }
}

impl AddAssign<SimDuration> for SimTime {
    fn add_assign(&mut self, d: SimDuration) {
        *self = *self + d;
    }
}

impl Sub<SimTime> for SimTime {
    type Output = SimDuration;
    fn sub(self, earlier: SimTime) -> SimDuration {
        SimDuration(
            self.0
                .checked_sub(earlier.0)
                .expect("subtracted a later SimTime from an earlier one"),
        )
    }
}

impl Add for SimDuration {
    type Output = SimDuration;
    fn add(self, o: SimDuration) -> SimDuration {
        SimDuration(self.0 + o.0)
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:09}s", self.0 / NS_PER_S, self.0 % NS_PER_S)
    }
}

impl fmt::Display for SimDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:09}s", self.0 / NS_PER_S, self.0 % NS_PER_S)
    }
}

/// A line rate in bits per second (never bytes per second: `2MBps` is read as 16 Mbit/s at the
/// edge, by the unit parser).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BitRate(u64);

impl BitRate {
    pub const fn from_bps(bps: u64) -> Self {
        BitRate(bps)
    }
    pub const fn bps(self) -> u64 {
        self.0
    }
    pub fn as_bps_f64(self) -> f64 {
        self.0 as f64
    }
    /// The time to put `size_bytes` on a line of this rate: ceil(8 size_bytes 1e9 / rate) ns,
    /// in integer arithmetic (u128, so no overflow for any u32 size and u64 rate).
    ///
    /// # Panics
    /// If the rate is zero.
    pub fn transmission_time(self, size_bytes: u32) -> SimDuration {
        self.transmission_time_u64(u64::from(size_bytes))
    }
    /// [`BitRate::transmission_time`] of a size beyond `u32` (a token bucket's depth); u128
    /// holds 8e9 times any u64.
    ///
    /// # Panics
    /// If the rate is zero.
    pub fn transmission_time_u64(self, size_bytes: u64) -> SimDuration {
        assert!(self.0 > 0, "transmission time at a rate of 0 bit/s");
        let bit_ns = u128::from(size_bytes) * 8 * u128::from(NS_PER_S);
        let ns = bit_ns.div_ceil(u128::from(self.0));
        // Beyond u64 only for absurd inputs (gigabytes at a few bit/s); saturate, and let the
        // time arithmetic that follows report the overflow.
        SimDuration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }
    /// The whole bytes a line of this rate sends in `d`: floor(rate d / 8e9).
    pub fn bytes_in(self, d: SimDuration) -> u64 {
        let bits_ns = u128::from(d.as_nanos()) * u128::from(self.0);
        u64::try_from(bits_ns / (8 * u128::from(NS_PER_S))).unwrap_or(u64::MAX)
    }
}

impl Add for BitRate {
    type Output = BitRate;
    fn add(self, rhs: BitRate) -> BitRate {
        BitRate(self.0 + rhs.0)
    }
}

impl std::iter::Sum for BitRate {
    fn sum<I: Iterator<Item = BitRate>>(iter: I) -> BitRate {
        BitRate(iter.map(|r| r.0).sum())
    }
}

impl fmt::Display for BitRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} bit/s", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instant_plus_duration_and_back() {
        let t = SimTime::ZERO + SimDuration::from_millis(1500);
        assert_eq!(t.as_nanos(), 1_500_000_000);
        assert_eq!(t - SimTime::ZERO, SimDuration::from_millis(1500));
        assert_eq!(t.to_string(), "1.500000000s");
    }

    #[test]
    fn seconds_round_to_nearest_nanosecond() {
        assert_eq!(SimDuration::from_secs_f64(0.61).as_nanos(), 610_000_000);
        assert_eq!(SimDuration::from_secs_f64(1e-9 * 0.6).as_nanos(), 1);
    }

    #[test]
    fn saturating_since_never_underflows() {
        let early = SimTime::from_nanos(5);
        let late = SimTime::from_nanos(9);
        assert_eq!(early.saturating_since(late), SimDuration::ZERO);
        assert_eq!(late.saturating_since(early).as_nanos(), 4);
    }

    #[test]
    fn a_rate_turns_bytes_into_time_and_time_into_bytes() {
        let r = BitRate::from_bps(2400);
        assert_eq!(r.transmission_time(300), SimDuration::from_secs(1));
        assert_eq!(r.bytes_in(SimDuration::from_secs(1)), 300);
        assert_eq!(r.bytes_in(SimDuration::from_millis(999)), 299);
        assert_eq!(
            BitRate::from_bps(u64::MAX).bytes_in(SimDuration::from_nanos(u64::MAX)),
            u64::MAX
        );
        assert_eq!([r, r].into_iter().sum::<BitRate>(), BitRate::from_bps(4800));
        assert_eq!(r.to_string(), "2400 bit/s");
    }
}
