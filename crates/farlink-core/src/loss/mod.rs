//! Loss models: the processes that decide whether a packet or frame arriving over a link is
//! corrupted, each paired with its analytic loss rate (and mean burst length where defined) so
//! that a simulation can be checked against the value it should reproduce.
//!
//! This module owns the [`LossModel`] trait and its implementations:
//! - [`NoLoss`];
//! - [`Bernoulli`]: independent losses with probability p (seed 003, 4.4.1.1);
//! - [`GilbertElliott`]: two states with exponentially distributed sojourns in *time*
//!   (seed 003, 4.4.1.2);
//! - [`GilbertPackets`]: two states stepped per *packet*, geometric sojourns (seed 003,
//!   4.4.1.2 read in packets);
//! - [`MarkovFading`]: the per-frame first-order Markov model of a Rayleigh fading channel
//!   parameterised by frame error rate and normalised Doppler f_d T (seed 004, section III,
//!   after Zorzi, Rao and Milstein; derivation in `docs/fading-channel.md`);
//! - [`Lcg16807Loss`]: the LCG(16807, 0, 2^31 - 1) loss generator of seed 003's hardware data
//!   link emulator (seed 003, 5.3.3), bit-exact;
//! - [`DropList`]: scripted losses of the packets with given arrival numbers (seed 003, 4.4.2:
//!   "the 2000th and the 2001st packet");
//! - [`AnyLoss`]: an enum over all of them, for static dispatch without boxing.
//!
//! It must not touch queues, links or clocks: a model is handed the time at which a packet
//! reaches the receiving end and answers lost or not.
//!
//! # Who owns the randomness
//!
//! Each model **owns** its [`StreamRng`](crate::rng::StreamRng), handed to it at construction
//! (derived from the scenario seed and the model's stable name, e.g. `"link/0/fwd/loss"`).
//! So a model's draws never interleave with another component's, and swapping one loss model
//! for another does not shift any other stream. `Lcg16807Loss` is the exception: it reproduces
//! a specific hardware generator and carries that generator's own 31-bit state.
//!
//! # Time
//!
//! `is_lost(now)` must be called with non-decreasing `now`. Time-driven models
//! (`GilbertElliott`, `MarkovFading`) evolve their channel state in simulated time between
//! calls, whether or not packets were sent, so idle gaps are modelled correctly; per-packet
//! models (`Bernoulli`, `GilbertPackets`, `Lcg16807Loss`, `DropList`) ignore `now`. A `now` earlier than the
//! previous call is a caller bug; in release builds it is treated as the previous time.

mod bernoulli;
mod drop_list;
mod gilbert_elliott;
mod gilbert_packets;
mod lcg16807;
mod markov_fading;
pub mod special;

pub use bernoulli::Bernoulli;
pub use drop_list::DropList;
pub use gilbert_elliott::{GilbertElliott, GilbertElliottConfig};
pub use gilbert_packets::GilbertPackets;
pub use lcg16807::{Lcg16807, Lcg16807Loss, LCG16807_MODULUS, LCG16807_MULTIPLIER};
pub use markov_fading::{
    fading_transitions, FadingTransitions, MarkovFading, MarkovFadingConfig, IS707_FRAME, MAX_FD_T,
    MIN_FD_T,
};

use crate::time::SimTime;

/// A process that decides which packets a link corrupts.
pub trait LossModel {
    /// Whether the packet (or frame) that reaches the receiving end at `now` is lost.
    /// `now` must not decrease from one call to the next.
    fn is_lost(&mut self, now: SimTime) -> bool;

    /// The long-run fraction of packets lost, from the model's parameters alone.
    fn analytic_loss_rate(&self) -> f64;

    /// The mean length of a burst (a maximal run of consecutive lost packets), in packets,
    /// when packets are offered at the model's nominal spacing; `None` where the model has no
    /// such spacing or the value is not defined (no losses).
    fn analytic_mean_burst_len(&self) -> Option<f64> {
        None
    }
}

pub use crate::error::ConfigError;

/// Checks that `x` is a probability in the closed interval [0, 1].
pub(crate) fn check_probability(param: &'static str, x: f64) -> Result<f64, ConfigError> {
    if (0.0..=1.0).contains(&x) {
        Ok(x)
    } else {
        Err(ConfigError::new(
            param,
            format!("expected a probability in [0, 1], got {x}"),
        ))
    }
}

/// Loss rate and mean burst length of a two-state Markov-modulated loss process observed at
/// successive decisions: `p_gb`, `p_bg` are the good-to-bad and bad-to-good transition
/// probabilities between two decisions, `loss_good`, `loss_bad` the loss probability in each
/// state. The mean burst length is P(loss) / P(loss followed by no loss): every burst ends with
/// exactly one such pair. Returns `(rate, None)` when no burst ever ends.
pub(crate) fn two_state_loss_stats(
    p_gb: f64,
    p_bg: f64,
    loss_good: f64,
    loss_bad: f64,
) -> (f64, Option<f64>) {
    let pi_b = p_gb / (p_gb + p_bg);
    let pi_g = 1.0 - pi_b;
    let rate = pi_g * loss_good + pi_b * loss_bad;
    let (ok_g, ok_b) = (1.0 - loss_good, 1.0 - loss_bad);
    let end_of_burst = pi_g * loss_good * ((1.0 - p_gb) * ok_g + p_gb * ok_b)
        + pi_b * loss_bad * (p_bg * ok_g + (1.0 - p_bg) * ok_b);
    let burst = if end_of_burst > 0.0 {
        Some(rate / end_of_burst)
    } else {
        None
    };
    (rate, burst)
}

/// The lossless channel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoLoss;

impl LossModel for NoLoss {
    fn is_lost(&mut self, _now: SimTime) -> bool {
        false
    }
    fn analytic_loss_rate(&self) -> f64 {
        0.0
    }
}

/// Any loss model, dispatched statically (the engine's components are enums, never boxed
/// trait objects).
#[derive(Debug)]
pub enum AnyLoss {
    None(NoLoss),
    Bernoulli(Bernoulli),
    GilbertElliott(GilbertElliott),
    GilbertPackets(GilbertPackets),
    MarkovFading(MarkovFading),
    Lcg16807(Lcg16807Loss),
    DropList(DropList),
}

impl LossModel for AnyLoss {
    fn is_lost(&mut self, now: SimTime) -> bool {
        match self {
            AnyLoss::None(m) => m.is_lost(now),
            AnyLoss::Bernoulli(m) => m.is_lost(now),
            AnyLoss::GilbertElliott(m) => m.is_lost(now),
            AnyLoss::GilbertPackets(m) => m.is_lost(now),
            AnyLoss::MarkovFading(m) => m.is_lost(now),
            AnyLoss::Lcg16807(m) => m.is_lost(now),
            AnyLoss::DropList(m) => m.is_lost(now),
        }
    }
    fn analytic_loss_rate(&self) -> f64 {
        match self {
            AnyLoss::None(m) => m.analytic_loss_rate(),
            AnyLoss::Bernoulli(m) => m.analytic_loss_rate(),
            AnyLoss::GilbertElliott(m) => m.analytic_loss_rate(),
            AnyLoss::GilbertPackets(m) => m.analytic_loss_rate(),
            AnyLoss::MarkovFading(m) => m.analytic_loss_rate(),
            AnyLoss::Lcg16807(m) => m.analytic_loss_rate(),
            AnyLoss::DropList(m) => m.analytic_loss_rate(),
        }
    }
    fn analytic_mean_burst_len(&self) -> Option<f64> {
        match self {
            AnyLoss::None(m) => m.analytic_mean_burst_len(),
            AnyLoss::Bernoulli(m) => m.analytic_mean_burst_len(),
            AnyLoss::GilbertElliott(m) => m.analytic_mean_burst_len(),
            AnyLoss::GilbertPackets(m) => m.analytic_mean_burst_len(),
            AnyLoss::MarkovFading(m) => m.analytic_mean_burst_len(),
            AnyLoss::Lcg16807(m) => m.analytic_mean_burst_len(),
            AnyLoss::DropList(m) => m.analytic_mean_burst_len(),
        }
    }
}

impl From<NoLoss> for AnyLoss {
    fn from(m: NoLoss) -> Self {
        AnyLoss::None(m)
    }
}
impl From<Bernoulli> for AnyLoss {
    fn from(m: Bernoulli) -> Self {
        AnyLoss::Bernoulli(m)
    }
}
impl From<GilbertElliott> for AnyLoss {
    fn from(m: GilbertElliott) -> Self {
        AnyLoss::GilbertElliott(m)
    }
}
impl From<GilbertPackets> for AnyLoss {
    fn from(m: GilbertPackets) -> Self {
        AnyLoss::GilbertPackets(m)
    }
}
impl From<MarkovFading> for AnyLoss {
    fn from(m: MarkovFading) -> Self {
        AnyLoss::MarkovFading(m)
    }
}
impl From<Lcg16807Loss> for AnyLoss {
    fn from(m: Lcg16807Loss) -> Self {
        AnyLoss::Lcg16807(m)
    }
}
impl From<DropList> for AnyLoss {
    fn from(m: DropList) -> Self {
        AnyLoss::DropList(m)
    }
}

/// Helpers shared by the models' statistical tests.
#[cfg(test)]
pub(crate) mod testutil {
    use super::LossModel;
    use crate::time::{SimDuration, SimTime};

    /// Observed loss rate and mean burst length over `n` decisions at spacing `spacing`.
    pub(crate) fn observe<L: LossModel>(m: &mut L, n: u64, spacing: SimDuration) -> (f64, f64) {
        let mut now = SimTime::ZERO;
        let (mut lost, mut bursts, mut prev) = (0u64, 0u64, false);
        for _ in 0..n {
            let l = m.is_lost(now);
            if l {
                lost += 1;
                if !prev {
                    bursts += 1;
                }
            }
            prev = l;
            now += spacing;
        }
        let burst = if bursts > 0 {
            lost as f64 / bursts as f64
        } else {
            0.0
        };
        (lost as f64 / n as f64, burst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::StreamRng;

    #[test]
    fn no_loss_never_loses() {
        let mut m = NoLoss;
        assert!((0..1000).all(|i| !m.is_lost(SimTime::from_nanos(i))));
        assert_eq!(m.analytic_loss_rate(), 0.0);
        assert_eq!(m.analytic_mean_burst_len(), None);
    }

    #[test]
    fn two_state_stats_reduce_to_known_cases() {
        // Independent: p_gb + p_bg = 1 makes the state i.i.d.; with 0/1 losses this is
        // Bernoulli(pi_b), whose mean burst is 1 / (1 - p).
        let (rate, burst) = two_state_loss_stats(0.2, 0.8, 0.0, 1.0);
        assert!((rate - 0.2).abs() < 1e-15);
        assert!((burst.unwrap() - 1.25).abs() < 1e-12);
        // Simple Gilbert: mean bad run = 1 / p_bg.
        let (rate, burst) = two_state_loss_stats(0.01, 0.125, 0.0, 1.0);
        assert!((rate - 0.01 / 0.135).abs() < 1e-15);
        assert!((burst.unwrap() - 8.0).abs() < 1e-12);
        // Never leaving a lossy state: no burst ever ends.
        assert_eq!(two_state_loss_stats(0.5, 0.5, 1.0, 1.0).1, None);
    }

    #[test]
    fn any_loss_dispatches_to_the_model() {
        let mut m: AnyLoss = Bernoulli::new(1.0, StreamRng::derive(1, "x"))
            .unwrap()
            .into();
        assert!(m.is_lost(SimTime::ZERO));
        assert_eq!(m.analytic_loss_rate(), 1.0);
        let mut m: AnyLoss = NoLoss.into();
        assert!(!m.is_lost(SimTime::ZERO));
    }

    #[test]
    fn config_error_names_the_parameter() {
        let e = Bernoulli::new(1.5, StreamRng::derive(1, "x")).unwrap_err();
        assert_eq!(e.param, "p");
        assert!(e.to_string().starts_with("p: expected a probability"));
    }
}
