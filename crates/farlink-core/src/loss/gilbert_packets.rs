//! The two-state bursty channel stepped per packet: the state changes between one packet and
//! the next, never in between, so bursts are counted in packets whatever the packets' spacing.
//!
//! Seed 003 section 4.4.1.2 describes its bursty losses as a two-state process whose error-burst
//! length "is the number of consecutively corrupted packets" and notes that "the packet error
//! distribution is independent of time, packet index rather than time is used". Its Reno stalls
//! for minutes waiting for retransmission timeouts (Figure 4.16, 56-250 s), which a channel
//! running in time cannot produce (a burst of 8 packet times is over long before a timeout) and
//! a channel stepped per packet does: a retransmission sent after a timeout is the next packet
//! of the same burst. [`super::GilbertElliott`] is the reading in time; this model is the
//! reading in packets.
//!
//! Sojourns are geometric, the discrete counterpart of the exponential: in the bad state every
//! packet is lost and the chain leaves after each one with probability 1/n (mean burst n
//! packets); in the good state none is lost and it leaves with the probability p_gb that makes
//! the bad state's share of packets equal to the overall rate r: p_gb = r / ((1 - r) n). The
//! initial state is drawn from that stationary law.

use super::{two_state_loss_stats, ConfigError, LossModel};
use crate::rng::StreamRng;
use crate::time::SimTime;

/// Two states stepped per packet, the bad one losing every packet.
#[derive(Debug)]
pub struct GilbertPackets {
    p_gb: f64,
    p_bg: f64,
    bad: bool,
    rng: StreamRng,
}

impl GilbertPackets {
    /// A channel losing a fraction `loss_rate` in (0, 1) of packets in bursts of
    /// `mean_burst_pkts` >= 1 packets on average.
    pub fn new(
        loss_rate: f64,
        mean_burst_pkts: f64,
        mut rng: StreamRng,
    ) -> Result<Self, ConfigError> {
        if !(loss_rate > 0.0 && loss_rate < 1.0) {
            return Err(ConfigError::new(
                "loss_rate",
                format!("expected a loss rate in (0, 1), got {loss_rate}"),
            ));
        }
        if !(mean_burst_pkts >= 1.0 && mean_burst_pkts.is_finite()) {
            return Err(ConfigError::new(
                "mean_burst_pkts",
                format!("expected a mean burst of at least 1 packet, got {mean_burst_pkts}"),
            ));
        }
        let p_bg = 1.0 / mean_burst_pkts;
        let p_gb = loss_rate / ((1.0 - loss_rate) * mean_burst_pkts);
        if p_gb > 1.0 {
            return Err(ConfigError::new(
                "mean_burst_pkts",
                format!(
                    "a mean burst of {mean_burst_pkts} packets cannot give a loss rate of \
                     {loss_rate} (good runs would be shorter than one packet); expected at \
                     least {}",
                    loss_rate / (1.0 - loss_rate)
                ),
            ));
        }
        let bad = rng.bernoulli(loss_rate);
        Ok(GilbertPackets {
            p_gb,
            p_bg,
            bad,
            rng,
        })
    }
}

impl LossModel for GilbertPackets {
    /// The packet sees the current state, then the chain takes one step (one draw per packet).
    fn is_lost(&mut self, _now: SimTime) -> bool {
        let lost = self.bad;
        let leave = if self.bad { self.p_bg } else { self.p_gb };
        if self.rng.bernoulli(leave) {
            self.bad = !self.bad;
        }
        lost
    }

    fn analytic_loss_rate(&self) -> f64 {
        two_state_loss_stats(self.p_gb, self.p_bg, 0.0, 1.0).0
    }

    fn analytic_mean_burst_len(&self) -> Option<f64> {
        two_state_loss_stats(self.p_gb, self.p_bg, 0.0, 1.0).1
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::observe;
    use super::*;
    use crate::time::SimDuration;

    #[test]
    fn analytic_values_are_the_parameters() {
        let m = GilbertPackets::new(0.01, 8.0, StreamRng::derive(1, "g")).unwrap();
        assert!((m.analytic_loss_rate() - 0.01).abs() < 1e-15);
        assert!((m.analytic_mean_burst_len().unwrap() - 8.0).abs() < 1e-12);
    }

    #[test]
    fn long_run_rate_and_burst_match_whatever_the_spacing() {
        // Stepped per packet: the spacing of the packets must not matter.
        for spacing in [SimDuration::from_micros(1), SimDuration::from_secs(10)] {
            let mut m = GilbertPackets::new(0.01, 8.0, StreamRng::derive(5, "g")).unwrap();
            let (rate, burst) = observe(&mut m, 1_000_000, spacing);
            assert!((rate - 0.01).abs() < 0.001, "rate {rate}");
            assert!((burst - 8.0).abs() < 0.3, "burst {burst}");
        }
    }

    #[test]
    fn rejects_impossible_parameters() {
        let rng = || StreamRng::derive(1, "g");
        assert_eq!(
            GilbertPackets::new(1.0, 8.0, rng()).unwrap_err().param,
            "loss_rate"
        );
        assert_eq!(
            GilbertPackets::new(0.01, 0.5, rng()).unwrap_err().param,
            "mean_burst_pkts"
        );
        // A 90 % loss rate needs bursts of at least 9 packets.
        let e = GilbertPackets::new(0.9, 2.0, rng()).unwrap_err();
        assert!(e.message.contains("at least 9"), "{e}");
        assert!(GilbertPackets::new(0.9, 9.5, rng()).is_ok());
    }
}
