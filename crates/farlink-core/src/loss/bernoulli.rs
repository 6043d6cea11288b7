//! Independent (uniformly distributed) packet losses: every packet is lost with the same
//! probability p, as in seed 003 section 4.4.1.1 ("a random number is generated uniformly over
//! the range [0, 1) every time a packet is transmitted ... compared with the packet
//! transmission error probability").

use super::{check_probability, ConfigError, LossModel};
use crate::rng::StreamRng;
use crate::time::SimTime;

/// Each packet lost independently with probability `p`.
#[derive(Debug)]
pub struct Bernoulli {
    p: f64,
    rng: StreamRng,
}

impl Bernoulli {
    /// A model losing each packet with probability `p` in [0, 1], drawing from `rng`.
    pub fn new(p: f64, rng: StreamRng) -> Result<Self, ConfigError> {
        Ok(Bernoulli {
            p: check_probability("p", p)?,
            rng,
        })
    }

    /// The loss probability.
    pub fn p(&self) -> f64 {
        self.p
    }
}

impl LossModel for Bernoulli {
    /// One uniform draw per packet (even for p = 0 or 1, so the stream position depends only on
    /// the number of packets).
    fn is_lost(&mut self, _now: SimTime) -> bool {
        self.rng.bernoulli(self.p)
    }

    fn analytic_loss_rate(&self) -> f64 {
        self.p
    }

    /// 1 / (1 - p): the burst length is geometric. `None` for p = 0 (no bursts) and p = 1
    /// (one endless burst).
    fn analytic_mean_burst_len(&self) -> Option<f64> {
        (self.p > 0.0 && self.p < 1.0).then(|| 1.0 / (1.0 - self.p))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::observe;
    use super::*;
    use crate::time::SimDuration;

    #[test]
    fn long_run_rate_and_burst_match_analytic_values() {
        for p in [0.01, 0.1, 0.3] {
            let mut m = Bernoulli::new(p, StreamRng::derive(11, "bernoulli")).unwrap();
            let n = 400_000u64;
            let (rate, burst) = observe(&mut m, n, SimDuration::from_millis(1));
            let sd = (p * (1.0 - p) / n as f64).sqrt();
            assert!((rate - p).abs() < 5.0 * sd, "p={p}: rate {rate}");
            let want = m.analytic_mean_burst_len().unwrap();
            assert!(
                (burst - want).abs() / want < 0.03,
                "p={p}: burst {burst} vs {want}"
            );
        }
    }

    #[test]
    fn rejects_probabilities_outside_unit_interval() {
        for p in [-0.1, 1.1, f64::NAN] {
            assert!(Bernoulli::new(p, StreamRng::derive(1, "b")).is_err());
        }
        let m = Bernoulli::new(0.0, StreamRng::derive(1, "b")).unwrap();
        assert_eq!(m.analytic_mean_burst_len(), None);
    }
}
