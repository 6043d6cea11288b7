//! Congestion controllers behind one narrow trait, selected by lower-case name.
//!
//! Read first: RFC 5681 (the Reno window rules every controller is measured against),
//! RFC 5033 (what an alternative controller must do), RFC 3465 (byte counting); the trait
//! shape follows quinn's `Controller` and quiche's `gcongestion` (acked and lost in one batch).
//!
//! The boundary (see `tcp/README.md`): the sender detects loss and decides recovery; only then
//! does it hand the controller a [`CongestionEvent`]. A controller receives read-only views
//! (the [`AckBatch`], the `&RttEstimator`), keeps its own window, and *returns* its reduction
//! ([`Reduction`]) instead of writing into the sender. It never sees the scoreboard, the
//! sequence space or the timers. During fast recovery the window the sender uses may differ
//! from [`CongestionController::window`] (Reno's inflation, RFC 6675's pipe); that is the
//! recovery role's business, not the controller's.

pub mod bbr;
pub mod bic;
pub mod cubic;
pub mod cubic_linux;
pub mod hybla;
pub mod reno;
pub mod stpd;
#[cfg(test)]
mod test_support;
pub mod vegas;
pub mod westwood;

use std::fmt;
use std::str::FromStr;

use super::rtt::RttEstimator;
use super::UnknownName;
use crate::time::{BitRate, SimDuration, SimTime};

pub use bbr::{Bbr, BbrConfig, BbrState};
pub use bic::{Bic, BicConfig, BicRegion};
pub use cubic::{Cubic, CubicConfig, CubicRegion};
pub use cubic_linux::{CubicLinux, CubicLinuxConfig};
pub use hybla::{Hybla, HyblaConfig, HyblaRtt};
pub use reno::{Reno, RenoConfig, WindowGrowth};
pub use stpd::{GainSchedule, Gains, Stpd, StpdConfig};
pub use vegas::{EpochRtt, Vegas, VegasActual, VegasConfig};
pub use westwood::{Westwood, WestwoodConfig};

/// The largest window any controller but Reno keeps: 2^30 bytes, the largest receive window
/// TCP can announce (RFC 7323 section 2.3: a shift of at most 14 on the 16-bit window field).
/// A larger congestion window could never be used; the cap keeps aggressive growth (Hybla's
/// 2^ρ per ACK) finite.
pub const MAX_CWND_BYTES: u64 = 1 << 30;

/// The largest window a controller may hold: [`MAX_CWND_BYTES`], and never below one segment.
pub fn max_window_bytes(smss_bytes: u64) -> u64 {
    MAX_CWND_BYTES.max(smss_bytes)
}

/// One segment newly acknowledged by the cumulative ACK field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acked {
    /// Sequence number after the segment's last byte.
    pub end_seq: u64,
    pub bytes: u64,
    /// When it was last (re)transmitted.
    pub sent_time: SimTime,
    /// Sent more than once (its ACK is ambiguous for RTT, Karn's rule).
    pub retransmitted: bool,
    /// Already selectively acknowledged before this cumulative ACK.
    pub was_sacked: bool,
}

/// One segment newly presumed lost by this ACK (RFC 6675 `IsLost`, or the segment a fast
/// retransmit repairs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lost {
    pub seq: u64,
    pub bytes: u64,
    pub sent_time: SimTime,
}

/// One segment handed to the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentPacket {
    pub seq: u64,
    pub bytes: u64,
    pub retransmission: bool,
}

/// The segment an arriving ACK answers: the one whose arrival made the receiver send it, as the
/// timestamp ns-2's TCP sink echoes in every ACK names it, duplicates included. The sender
/// matches it from its own records (it owns the sequence space): for an ACK of new data, the
/// segment covered that was sent last and not SACKed before; for a duplicate ACK, the next
/// segment above the one the previous ACK was matched to (the receiver answers every arriving
/// segment, and the path does not reorder). Seed 003 section 4.2: "as long as an
/// acknowledgment arrives, regardless of whether it is a duplicate acknowledgment, ST-PD TCP
/// always calculates the current RTT".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckEcho {
    /// The time since that segment was last sent.
    pub rtt: SimDuration,
    /// The ACK acknowledged nothing new.
    pub duplicate: bool,
    /// The segment was sent more than once, so the ACK may answer an earlier copy and the time
    /// may be short (Karn's ambiguity, RFC 6298 section 3).
    pub ambiguous: bool,
}

/// Everything one arriving ACK told the sender, in one batch.
#[derive(Clone, Copy, Debug)]
pub struct AckBatch<'a> {
    pub acked: &'a [Acked],
    pub lost: &'a [Lost],
    /// Bytes the cumulative ACK field newly covers (RFC 3465's N).
    pub newly_acked_bytes: u64,
    /// Bytes newly covered by SACK blocks.
    pub newly_sacked_bytes: u64,
    /// Bytes in flight before and after the ACK was processed.
    pub prior_in_flight_bytes: u64,
    pub in_flight_bytes: u64,
    /// The ACK arrived during fast recovery (RFC 5681 3.2 / RFC 6582 / RFC 6675 loss
    /// recovery), including the ACK that ends it; Reno does not grow the window then.
    pub in_recovery: bool,
    /// The RTT sample this ACK gave, if any (already fed to the estimator).
    pub rtt_sample: Option<SimDuration>,
    pub smss_bytes: u64,
}

impl AckBatch<'_> {
    /// What this ACK newly delivered, each segment counted once, as Linux's
    /// `tcp_newly_delivered` (`tp->delivered` grows when a segment is SACKed and, for one that
    /// was not, when the cumulative ACK covers it): the bytes newly SACKed, and those the
    /// cumulative ACK newly covers less the ones already SACKed before it.
    pub fn newly_delivered_bytes(&self) -> u64 {
        let sacked_before: u64 = self
            .acked
            .iter()
            .filter(|a| a.was_sacked)
            .map(|a| a.bytes)
            .sum();
        self.newly_acked_bytes
            .saturating_sub(sacked_before)
            .saturating_add(self.newly_sacked_bytes)
    }
}

/// How the loss behind a congestion event was detected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Detection {
    /// DupThresh duplicate ACKs (RFC 5681 section 3.2).
    DupAcks,
    /// The SACK scoreboard (RFC 6675 section 5 step (2), `IsLost(HighACK + 1)`).
    Sack,
    /// The retransmission timer expired (RFC 6298 section 5).
    RetransmissionTimeout,
    /// No loss: the receiver echoed a CE mark (RFC 3168 section 6.1.2: the sender reacts "as
    /// it would to a dropped packet", without retransmitting; see [`crate::tcp::ecn`]).
    Ecn,
}

/// A loss the recovery role decided the controller must respond to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CongestionEvent {
    pub detection: Detection,
    /// RFC 5681's FlightSize when the loss was detected.
    pub flight_size_bytes: u64,
    /// Bytes presumed lost.
    pub lost_bytes: u64,
    pub smss_bytes: u64,
    /// Restart from the loss window (RFC 5681 3.1 on a timeout; Tahoe also after a fast
    /// retransmit) instead of continuing from ssthresh.
    pub restart_slow_start: bool,
    /// A retransmission sent by the timer timed out again: RFC 5681 3.1 holds ssthresh.
    pub repeated_timeout: bool,
    /// A timeout that ends a fast recovery still in progress, whose reduction was made for the
    /// same loss episode (Linux's `tcp_enter_loss` then keeps the recovery's ssthresh).
    pub during_fast_recovery: bool,
}

/// What a controller decided on a congestion event; the sender records it for traces and for
/// the recovery role. The controller has already applied it to its own window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reduction {
    pub ssthresh_bytes: u64,
    pub cwnd_bytes: u64,
}

/// A controller's state for traces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CcMetrics {
    pub cwnd_bytes: u64,
    pub ssthresh_bytes: u64,
    pub pacing_rate_bps: Option<u64>,
}

impl CcMetrics {
    pub fn new(cwnd_bytes: u64, ssthresh_bytes: u64) -> Self {
        CcMetrics {
            cwnd_bytes,
            ssthresh_bytes,
            pacing_rate_bps: None,
        }
    }
}

/// What every controller is built from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControllerInit {
    pub smss_bytes: u64,
    /// The initial window (RFC 5681 3.1, RFC 6928), chosen by the sender's configuration.
    pub initial_window_bytes: u64,
}

/// A congestion controller. Hooks other than the ACK batch, the congestion event and the
/// queries default to doing nothing.
pub trait CongestionController: Send + fmt::Debug {
    /// The lower-case registry name.
    fn name(&self) -> &'static str;
    fn on_packet_sent(&mut self, _now: SimTime, _sent: &SentPacket, _in_flight_bytes: u64) {}
    /// The segment an arriving ACK answers, for every ACK the sender can match, duplicates
    /// included; called just before [`CongestionController::on_ack_batch`] for the same ACK.
    fn on_ack_echo(&mut self, _now: SimTime, _echo: &AckEcho) {}
    /// One arriving ACK: what it acknowledged, what it revealed lost.
    fn on_ack_batch(&mut self, now: SimTime, batch: &AckBatch<'_>, rtt: &RttEstimator);
    /// A loss the recovery role says to respond to; returns the reduction applied.
    fn on_congestion_event(&mut self, now: SimTime, event: &CongestionEvent) -> Reduction;
    /// DCTCP's response to ECN marks (RFC 8257 section 3.3): the window times (1 −
    /// `fraction`), ssthresh the same, as Linux's `dctcp_ssthresh`. `None`: the controller has
    /// no such response (the scenario then refuses `tcp.ecn = "accurate"`; see
    /// [`CcConfig::has_proportional_reduction`]).
    fn on_proportional_reduction(&mut self, _now: SimTime, _fraction: f64) -> Option<Reduction> {
        None
    }
    /// A previous congestion event turned out spurious (undo; F-RTO, Eifel later).
    fn on_spurious_congestion(&mut self, _now: SimTime) {}
    /// The congestion window in bytes; `u64::MAX` for a rate-only controller.
    fn window(&self) -> u64;
    /// Header bytes (IP, TCP, options) each data segment carries on the wire besides its
    /// payload, told once by the sender after construction: a pacing controller that measures
    /// delivered payload converts its rate to the wire rate the sender paces at.
    fn on_wire_overhead(&mut self, _header_bytes: u64) {}
    /// The rate to pace at, on the wire, if the controller paces.
    fn pacing_rate(&self) -> Option<BitRate> {
        None
    }
    /// The controller sets its own window during recovery (BBR's packet conservation), so
    /// the sender's window reduction ([`crate::tcp::prr`]) leaves it alone, as Linux skips
    /// `tcp_cwnd_reduction` for a controller with a `cong_control` hook.
    fn sets_recovery_window(&self) -> bool {
        false
    }
    fn metrics(&self) -> CcMetrics;
}

/// The configuration of one controller, by algorithm. Each variant's `Default` carries the RFC
/// values; [`CcConfig::build`] makes the controller.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum CcConfig {
    Reno(RenoConfig),
    Vegas(VegasConfig),
    Hybla(HyblaConfig),
    Westwood(WestwoodConfig),
    Cubic(CubicConfig),
    CubicLinux(CubicLinuxConfig),
    Bic(BicConfig),
    Stpd(StpdConfig),
    Bbr(BbrConfig),
}

impl CcConfig {
    /// The registry: every controller name, lower case, as the CLI and scenario files spell it.
    pub const NAMES: &'static [&'static str] = &[
        "reno",
        "vegas",
        "hybla",
        "westwood",
        "cubic",
        "cubic-linux",
        "bic",
        "stpd",
        "bbr",
    ];

    /// The controllers that model a Linux module's own arithmetic, as (the module's name, the
    /// controller's): the emulator runs the module for the controller, and
    /// `farlink.linux_tcp` names the controller for the module.
    pub const LINUX_MODELS: &'static [(&'static str, &'static str)] = &[("cubic", "cubic-linux")];

    /// The Linux module controller `name` stands for: the module it models, else its own name.
    pub fn linux_module(name: &str) -> &str {
        Self::LINUX_MODELS
            .iter()
            .find(|(_, model)| *model == name)
            .map_or(name, |(module, _)| module)
    }

    /// The default configuration of the named controller.
    pub fn from_name(name: &str) -> Result<CcConfig, UnknownName> {
        match name {
            "reno" => Ok(CcConfig::Reno(RenoConfig::default())),
            "vegas" => Ok(CcConfig::Vegas(VegasConfig::default())),
            "hybla" => Ok(CcConfig::Hybla(HyblaConfig::default())),
            "westwood" => Ok(CcConfig::Westwood(WestwoodConfig::default())),
            "cubic" => Ok(CcConfig::Cubic(CubicConfig::default())),
            "cubic-linux" => Ok(CcConfig::CubicLinux(CubicLinuxConfig::default())),
            "bic" => Ok(CcConfig::Bic(BicConfig::default())),
            "stpd" => Ok(CcConfig::Stpd(StpdConfig::default())),
            "bbr" => Ok(CcConfig::Bbr(BbrConfig::default())),
            _ => Err(UnknownName {
                what: "congestion controller",
                name: name.to_owned(),
                expected: Self::NAMES,
            }),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            CcConfig::Reno(_) => "reno",
            CcConfig::Vegas(_) => "vegas",
            CcConfig::Hybla(_) => "hybla",
            CcConfig::Westwood(_) => "westwood",
            CcConfig::Cubic(_) => "cubic",
            CcConfig::CubicLinux(_) => "cubic-linux",
            CcConfig::Bic(_) => "bic",
            CcConfig::Stpd(_) => "stpd",
            CcConfig::Bbr(_) => "bbr",
        }
    }

    /// The controller answers ECN marks in proportion to their fraction
    /// ([`CongestionController::on_proportional_reduction`]): Reno, which with it is DCTCP
    /// (RFC 8257 keeps Reno's growth; Linux's `dctcp` module is Reno's window with this
    /// reduction).
    pub fn has_proportional_reduction(&self) -> bool {
        matches!(self, CcConfig::Reno(_))
    }

    pub fn build(&self, init: &ControllerInit) -> Box<dyn CongestionController> {
        match self {
            CcConfig::Reno(cfg) => Box::new(Reno::new(cfg, init)),
            CcConfig::Vegas(cfg) => Box::new(Vegas::new(cfg, init)),
            CcConfig::Hybla(cfg) => Box::new(Hybla::new(cfg, init)),
            CcConfig::Westwood(cfg) => Box::new(Westwood::new(cfg, init)),
            CcConfig::Cubic(cfg) => Box::new(Cubic::new(cfg, init)),
            CcConfig::CubicLinux(cfg) => Box::new(CubicLinux::new(cfg, init)),
            CcConfig::Bic(cfg) => Box::new(Bic::new(cfg, init)),
            CcConfig::Stpd(cfg) => Box::new(Stpd::new(cfg, init)),
            CcConfig::Bbr(cfg) => Box::new(Bbr::new(cfg, init)),
        }
    }
}

impl Default for CcConfig {
    fn default() -> Self {
        CcConfig::Reno(RenoConfig::default())
    }
}

impl FromStr for CcConfig {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CcConfig::from_name(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_name_builds_a_controller_of_that_name() {
        let init = ControllerInit {
            smss_bytes: 1000,
            initial_window_bytes: 10_000,
        };
        for name in CcConfig::NAMES {
            let cfg: CcConfig = name.parse().unwrap();
            assert_eq!(cfg.name(), *name);
            let cc = cfg.build(&init);
            assert_eq!(cc.name(), *name);
            assert_eq!(cc.window(), 10_000);
        }
    }

    #[test]
    fn a_model_of_a_linux_module_stands_for_that_module() {
        for (module, model) in CcConfig::LINUX_MODELS {
            assert!(CcConfig::NAMES.contains(model), "{model} not registered");
            assert_eq!(CcConfig::linux_module(model), *module);
        }
        assert_eq!(CcConfig::linux_module("cubic-linux"), "cubic");
        assert_eq!(CcConfig::linux_module("reno"), "reno");
        assert_eq!(
            CcConfig::linux_module("htcp"),
            "htcp",
            "a kernel's own name stays"
        );
    }

    #[test]
    fn unknown_name_lists_the_known_ones() {
        let err = "cubik".parse::<CcConfig>().unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "unknown congestion controller \"cubik\"; expected one of: {}",
                CcConfig::NAMES.join(", ")
            )
        );
        assert!(err
            .to_string()
            .contains("reno, vegas, hybla, westwood, cubic"));
    }
}
