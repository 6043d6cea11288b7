//! The loss generator of seed 003's hardware data link emulator (section 5.3.3), reproduced
//! bit for bit.
//!
//! The emulator, built on an M30620FP single-chip microcomputer, has "two independent Random
//! Number Generators (RNGs) ... one for each direction. The generated random number is compared
//! with the preset Link Error Rate (LER) to decide whether to send the data to the outgoing TxD
//! buffer or to drop it." The generator is the linear congruential generator of equation 5.2,
//! x_{n+1} = (a x_n + c) mod m, with "a = 16807, c = 0, m = 2^31 - 1 = 2147483647, which is a
//! prime number, and x_0 = 1" — LCG(16807, 0, 2^31 - 1, 1), the "minimal standard" generator
//! of Park and Miller (CACM 31(10), 1988). Its period is m - 1 = 2,147,483,646 (the seed's
//! "2,147,487,647" is an extraction error) and its values are 1 ..= m - 1.
//!
//! The decision rule is the one seed 003 states for its uniform-loss simulations (4.4.1.1):
//! "If the random number is larger than the packet transmission error probability, the packet
//! is passed through, otherwise the packet is dropped", with the random number normalised to
//! r = x / m (section 5.3.3 reports the mean and variance of "normalised numbers").
//!
//! # Choices where the seed is silent
//!
//! * One number is drawn per packet (the LER is quoted as a "packet error ratio", 5.4.2).
//! * The first number used is x_1 = 16807, i.e. the generator is advanced before use (the
//!   usual reading of LCG(a, c, m, x_0)).
//! * r <= LER is decided in integers, exactly: x / m <= LER  <=>  x <= floor(LER m). The
//!   threshold floor(LER m) is computed once; [`Lcg16807Loss::from_threshold`] takes it
//!   directly for an exact reproduction of a given device setting.

use super::{ConfigError, LossModel};
use crate::time::SimTime;

/// The multiplier a of LCG(16807, 0, 2^31 - 1) (seed 003, equation 5.2 and section 5.3.3).
pub const LCG16807_MULTIPLIER: u64 = 16_807;
/// The modulus m = 2^31 - 1 (seed 003, section 5.3.3), a Mersenne prime.
pub const LCG16807_MODULUS: u32 = 2_147_483_647;

/// The Park–Miller minimal-standard generator x_{n+1} = 16807 x_n mod (2^31 - 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lcg16807 {
    state: u32,
}

impl Lcg16807 {
    /// A generator with initial value `seed` (x_0), which must be in 1 ..= 2^31 - 2.
    /// Seed 003's emulator uses x_0 = 1.
    pub fn new(seed: u32) -> Result<Self, ConfigError> {
        if seed == 0 || seed >= LCG16807_MODULUS {
            return Err(ConfigError::new(
                "seed",
                format!(
                    "expected an LCG seed in 1..={}, got {seed}",
                    LCG16807_MODULUS - 1
                ),
            ));
        }
        Ok(Lcg16807 { state: seed })
    }

    /// Advances the generator and returns the new value x_{n+1}, in 1 ..= 2^31 - 2.
    #[inline]
    pub fn next_value(&mut self) -> u32 {
        // 16807 * x < 2^46: exact in u64.
        let next = (LCG16807_MULTIPLIER * u64::from(self.state)) % u64::from(LCG16807_MODULUS);
        self.state = next as u32;
        self.state
    }

    /// The current value x_n (the seed before the first call).
    pub fn state(&self) -> u32 {
        self.state
    }
}

/// Packet losses decided by LCG(16807, 0, 2^31 - 1) exactly as seed 003's emulator does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lcg16807Loss {
    gen: Lcg16807,
    threshold: u32,
}

impl Lcg16807Loss {
    /// The emulator's seed x_0 = 1 (seed 003, 5.3.3).
    pub const EMULATOR_SEED: u32 = 1;

    /// Link error rate `ler` in [0, 1]; a packet is dropped when x / m <= ler.
    pub fn from_error_rate(ler: f64, seed: u32) -> Result<Self, ConfigError> {
        if !(0.0..=1.0).contains(&ler) {
            return Err(ConfigError::new(
                "ler",
                format!("expected a link error rate in [0, 1], got {ler}"),
            ));
        }
        let threshold = libm::floor(ler * f64::from(LCG16807_MODULUS)) as u32;
        Self::from_threshold(threshold, seed)
    }

    /// An integer threshold: a packet is dropped when the generator's value x <= `threshold`.
    pub fn from_threshold(threshold: u32, seed: u32) -> Result<Self, ConfigError> {
        Ok(Lcg16807Loss {
            gen: Lcg16807::new(seed)?,
            threshold: threshold.min(LCG16807_MODULUS),
        })
    }

    pub fn threshold(&self) -> u32 {
        self.threshold
    }

    pub fn generator(&self) -> &Lcg16807 {
        &self.gen
    }
}

impl LossModel for Lcg16807Loss {
    fn is_lost(&mut self, _now: SimTime) -> bool {
        self.gen.next_value() <= self.threshold
    }

    /// Over a full period every value in 1 ..= m - 1 occurs once, so the rate is
    /// min(threshold, m - 1) / (m - 1).
    fn analytic_loss_rate(&self) -> f64 {
        let span = f64::from(LCG16807_MODULUS - 1);
        f64::from(self.threshold).min(span) / span
    }

    /// For a rate r strictly between 0 and 1 the generator is treated as i.i.d. uniform, as
    /// the emulator intends: 1 / (1 - r).
    fn analytic_mean_burst_len(&self) -> Option<f64> {
        let r = self.analytic_loss_rate();
        (r > 0.0 && r < 1.0).then(|| 1.0 / (1.0 - r))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::observe;
    use super::*;
    use crate::time::SimDuration;

    #[test]
    fn minimal_standard_check_value() {
        // Park and Miller (1988): starting from x_0 = 1, x_10000 = 1043618065.
        let mut g = Lcg16807::new(1).unwrap();
        let mut x = 0;
        for _ in 0..10_000 {
            x = g.next_value();
        }
        assert_eq!(x, 1_043_618_065);
    }

    #[test]
    fn first_values_from_seed_one() {
        let mut g = Lcg16807::new(Lcg16807Loss::EMULATOR_SEED).unwrap();
        let v: Vec<u32> = (0..4).map(|_| g.next_value()).collect();
        // 16807, 16807^2 mod m, ...
        assert_eq!(v, vec![16_807, 282_475_249, 1_622_650_073, 984_943_658]);
    }

    #[test]
    fn decision_is_x_at_or_below_floor_of_ler_times_m() {
        let m = Lcg16807Loss::from_error_rate(0.1, 1).unwrap();
        assert_eq!(m.threshold(), 214_748_364);
        // Replay the decisions with the bare generator.
        let mut g = Lcg16807::new(1).unwrap();
        let mut model = m;
        for _ in 0..10_000 {
            let x = g.next_value();
            let r = f64::from(x) / f64::from(LCG16807_MODULUS);
            assert_eq!(model.is_lost(SimTime::ZERO), r <= 0.1);
        }
        // First values: 16807 / m = 7.8e-6 <= 0.1 (dropped), 282475249 / m = 0.13 (passed).
        let mut fresh = Lcg16807Loss::from_error_rate(0.1, 1).unwrap();
        assert!(fresh.is_lost(SimTime::ZERO));
        assert!(!fresh.is_lost(SimTime::ZERO));
    }

    #[test]
    fn long_run_rate() {
        for ler in [0.01, 0.1] {
            let mut m = Lcg16807Loss::from_error_rate(ler, 1).unwrap();
            assert!((m.analytic_loss_rate() - ler).abs() < 1e-9);
            let n = 1_000_000u64;
            let (rate, _) = observe(&mut m, n, SimDuration::from_millis(1));
            let sd = (ler * (1.0 - ler) / n as f64).sqrt();
            assert!((rate - ler).abs() < 5.0 * sd, "ler={ler}: {rate}");
        }
    }

    #[test]
    fn edge_rates_and_bad_seeds() {
        let mut never = Lcg16807Loss::from_error_rate(0.0, 1).unwrap();
        assert!((0..1000).all(|_| !never.is_lost(SimTime::ZERO)));
        let mut always = Lcg16807Loss::from_error_rate(1.0, 1).unwrap();
        assert!((0..1000).all(|_| always.is_lost(SimTime::ZERO)));
        assert_eq!(always.analytic_loss_rate(), 1.0);
        assert_eq!(Lcg16807::new(0).unwrap_err().param, "seed");
        assert_eq!(Lcg16807::new(LCG16807_MODULUS).unwrap_err().param, "seed");
        assert_eq!(
            Lcg16807Loss::from_error_rate(-0.5, 1).unwrap_err().param,
            "ler"
        );
    }
}
