//! TCP settings of a flow (or of one connection of a split flow).

use std::str::FromStr;

use super::errors::{at, err, ScenarioError};
use super::profile::TcpProfile;
use super::quantity::{opt_bytes, opt_duration};
use super::raw::{CountOrName, RawTcp};
use crate::tcp::cc::reno::ABC_LIMIT_SEGMENTS;
use crate::tcp::cc::{CcConfig, WindowGrowth};
use crate::tcp::ecn::EcnMode;
use crate::tcp::prr::WindowReduction;
use crate::tcp::receiver::{
    DelayedAck, ReceiverConfig, ACK_EVERY_SEGMENTS, DEFAULT_MAX_OOO_RANGES,
    DEFAULT_RECEIVE_BUFFER_BYTES, DELAYED_ACK_TIMEOUT,
};
use crate::tcp::recovery::{LossRecovery, DUP_THRESH};
use crate::tcp::rtt::{
    RtoRule, RttConfig, CLOCK_GRANULARITY, INITIAL_RTO, LINUX_MAX_RTO, LINUX_MIN_RTO, MAX_RTO,
    MIN_RTO,
};
use crate::tcp::sender::{
    AppSource, SenderConfig, DEFAULT_INITIAL_WINDOW_SEGMENTS, DEFAULT_SCOREBOARD_CAPACITY_SEGMENTS,
};
use crate::tcp::{TcpOptions, UnknownName};

/// Default MSS option: an Ethernet MTU of 1500 bytes less 40 bytes of IPv4 and TCP headers.
pub const DEFAULT_MSS_BYTES: u32 = 1460;
/// Bounds of the MSS option: above the 12 bytes of per-segment options with room to spare,
/// and at most an IPv4 total length of 65535 less 40 bytes of headers.
pub const MSS_RANGE_BYTES: (u32, u32) = (64, 65_495);
/// The largest window TCP can announce: 65535 << 14 (RFC 7323 section 2.3).
pub const MAX_RECEIVE_BUFFER_BYTES: u64 = 65_535 << 14;
/// The most out-of-order ranges a receiver may be told to keep by count (`"window"` lifts the
/// count altogether).
pub const MAX_OOO_RANGES: u64 = 1_000_000;
/// Headers of a full-sized data segment beyond its MSS: IPv4 and TCP (20 + 20); with
/// timestamps the 12 option bytes come out of the MSS (RFC 6691).
pub(super) const DATA_HEADER_BYTES: u32 = 40;

/// TCP settings of a flow; both ends use the same options.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TcpSpec {
    /// The family of defaults the fields not given were taken from (`scenario/profile.rs`).
    pub profile: TcpProfile,
    pub options: TcpOptions,
    pub initial_window_segments: u32,
    pub receive_buffer_bytes: u64,
    /// The sender's socket buffer; `None`: unbounded (see [`SenderConfig::send_buffer_bytes`]).
    pub send_buffer_bytes: Option<u64>,
    pub delayed_ack: DelayedAck,
    pub rtt: RttConfig,
    pub recovery: LossRecovery,
    /// How the window comes down in SACK-based recovery (`cwnd_reduction`).
    pub window_reduction: WindowReduction,
    pub cc: CcConfig,
    pub dup_thresh: u32,
    pub limited_transmit: bool,
    /// Simulate the three-way handshake (`Sender::connect`, `Receiver::listen`); otherwise
    /// both ends start established with what the handshake would have agreed.
    pub handshake: bool,
    /// Out-of-order ranges the receiver keeps before it drops further out-of-order segments
    /// (see [`ReceiverConfig::max_ooo_ranges`]); `None`: no count, the receive window alone
    /// bounds what it holds (`"window"`).
    pub max_ooo_ranges: Option<usize>,
    /// ECN at both ends (`ecn`; [`crate::tcp::ecn`]).
    pub ecn: EcnMode,
}

impl TcpSpec {
    /// The sender's configuration for application source `app`.
    pub fn sender_config(&self, app: AppSource) -> SenderConfig {
        SenderConfig {
            options: self.options,
            initial_window_segments: self.initial_window_segments,
            recovery: self.recovery,
            window_reduction: self.window_reduction,
            congestion_control: self.cc,
            rtt: self.rtt,
            app,
            dup_thresh: self.dup_thresh,
            limited_transmit: self.limited_transmit,
            scoreboard_capacity_segments: DEFAULT_SCOREBOARD_CAPACITY_SEGMENTS,
            send_buffer_bytes: self.send_buffer_bytes,
            nagle: false,
            ecn: self.ecn,
        }
    }

    /// The receiver's configuration; `reads_on_demand` for a relay's receiver.
    pub fn receiver_config(&self, reads_on_demand: bool) -> ReceiverConfig {
        ReceiverConfig {
            options: self.options,
            receive_buffer_bytes: self.receive_buffer_bytes,
            delayed_ack: self.delayed_ack,
            // Past the window nothing is held, so a range of at least one byte per byte of
            // window is no count at all.
            max_ooo_ranges: self.max_ooo_ranges.unwrap_or_else(|| {
                usize::try_from(self.receive_buffer_bytes).unwrap_or(usize::MAX)
            }),
            reads_on_demand,
            ecn: self.ecn,
        }
    }

    /// These settings with the controller a command line names (`--tcp NAME`): the one the
    /// profile runs for the name (under `linux` the model of the module so named, with the
    /// profile's growth for it; the controller already running keeps its configuration) over
    /// the profile's own loss recovery, if it has one (the scenario's otherwise).
    pub fn with_named_controller(mut self, name: &str) -> Result<TcpSpec, UnknownName> {
        let model = self.profile.controller(name);
        if self.cc.name() != model {
            self.cc = CcConfig::from_name(model)?;
            if let (Some(growth), CcConfig::Reno(r)) = (
                self.profile.growth(model).and_then(window_growth),
                &mut self.cc,
            ) {
                r.growth = growth;
            }
        }
        if let Some(recovery) = self.profile.recovery() {
            self.recovery = recovery.parse()?;
        }
        Ok(self)
    }

    /// Bytes on the wire of a full-sized data segment (MSS + 40).
    pub fn full_packet_bytes(&self) -> u32 {
        self.options.mss_bytes + DATA_HEADER_BYTES
    }
}

pub(super) fn tcp_spec(p: &str, given: &RawTcp) -> Result<TcpSpec, ScenarioError> {
    let profile: TcpProfile = named(p, "profile", &given.profile)?;
    let t = &profile.fill(given)?;
    let mss = match opt_bytes(
        p,
        ("mss", &t.mss),
        ("mss_bytes", t.mss_bytes.map(u64::from)),
    )? {
        Some((v, path)) => {
            let (lo, hi) = MSS_RANGE_BYTES;
            if v < u64::from(lo) || v > u64::from(hi) {
                return err(
                    path,
                    format!("expected an MSS of {lo} to {hi} bytes, got {v}"),
                );
            }
            v as u32
        }
        None => DEFAULT_MSS_BYTES,
    };
    let options = TcpOptions {
        mss_bytes: mss,
        sack: t.sack.unwrap_or(true),
        timestamps: t.timestamps.unwrap_or(true),
        window_scaling: t.window_scaling.unwrap_or(true),
    };
    let initial_window_segments = t
        .initial_window_segments
        .unwrap_or(DEFAULT_INITIAL_WINDOW_SEGMENTS);
    if initial_window_segments == 0 {
        return err(
            at(p, "initial_window_segments"),
            "expected at least 1 segment, got 0",
        );
    }
    let (receive_buffer_bytes, send_buffer_bytes) = buffers(p, t, mss)?;
    let (delayed_ack, rtt) = timers(p, t)?;
    let (recovery, cc) = control(p, t, profile)?;
    let window_reduction: WindowReduction = named(p, "cwnd_reduction", &t.cwnd_reduction)?;
    let dup_thresh = t.dup_thresh.unwrap_or(DUP_THRESH);
    if dup_thresh == 0 {
        return err(at(p, "dup_thresh"), "expected at least 1, got 0");
    }
    let max_ooo_ranges = match &t.max_ooo_ranges {
        None => Some(DEFAULT_MAX_OOO_RANGES),
        Some(CountOrName::Name(n, _)) if n == "window" => None,
        Some(CountOrName::Count(n, _)) if (1..=MAX_OOO_RANGES).contains(n) => Some(*n as usize),
        Some(CountOrName::Count(n, _)) => {
            return err(
                at(p, "max_ooo_ranges"),
                format!("expected 1 to {MAX_OOO_RANGES} ranges (or \"window\"), got {n}"),
            )
        }
        Some(CountOrName::Name(n, _)) => {
            return err(
                at(p, "max_ooo_ranges"),
                format!("expected a number of out-of-order ranges or \"window\", got \"{n}\""),
            )
        }
    };
    Ok(TcpSpec {
        profile,
        options,
        initial_window_segments,
        receive_buffer_bytes,
        send_buffer_bytes,
        delayed_ack,
        rtt,
        recovery,
        window_reduction,
        cc,
        dup_thresh,
        limited_transmit: t.limited_transmit.unwrap_or(true),
        handshake: t.handshake.unwrap_or(false),
        max_ooo_ranges,
        ecn: ecn_mode(p, &t.ecn, &cc)?,
    })
}

/// `ecn = true | false | "accurate"`; `"accurate"` needs a controller with DCTCP's
/// proportional response.
fn ecn_mode(
    p: &str,
    given: &Option<serde_json::Value>,
    cc: &CcConfig,
) -> Result<EcnMode, ScenarioError> {
    use serde_json::Value;
    let mode = match given {
        None | Some(Value::Bool(false)) => EcnMode::Off,
        Some(Value::Bool(true)) => EcnMode::Classic,
        Some(Value::String(s)) if s.eq_ignore_ascii_case("accurate") => EcnMode::Accurate,
        Some(other) => {
            return err(
                at(p, "ecn"),
                format!("expected true, false or \"accurate\", got {other}"),
            )
        }
    };
    if mode == EcnMode::Accurate && !cc.has_proportional_reduction() {
        return err(
            at(p, "ecn"),
            format!(
                "\"accurate\" answers marks with DCTCP's reduction (RFC 8257), which farlink models on reno's window; cc \"{}\" has none (set cc = \"reno\", or ecn = true)",
                cc.name()
            ),
        );
    }
    Ok(mode)
}

/// The receive buffer (at least the MSS; default the receiver's, raised to one MSS) and the
/// send buffer (default unbounded).
fn buffers(p: &str, t: &RawTcp, mss: u32) -> Result<(u64, Option<u64>), ScenarioError> {
    let receive_buffer_bytes = match opt_bytes(
        p,
        ("receive_buffer", &t.receive_buffer),
        ("receive_buffer_bytes", t.receive_buffer_bytes),
    )? {
        Some((v, path)) => {
            if v < u64::from(mss) || v > MAX_RECEIVE_BUFFER_BYTES {
                return err(
                    path,
                    format!(
                        "expected a receive buffer of at least the MSS ({mss} bytes) and at most {MAX_RECEIVE_BUFFER_BYTES} bytes, got {v}"
                    ),
                );
            }
            v
        }
        None => DEFAULT_RECEIVE_BUFFER_BYTES.max(u64::from(mss)),
    };
    let send_buffer_bytes = match opt_bytes(
        p,
        ("send_buffer", &t.send_buffer),
        ("send_buffer_bytes", t.send_buffer_bytes),
    )? {
        Some((v, path)) => {
            if v < u64::from(mss) {
                return err(
                    path,
                    format!("expected a send buffer of at least the MSS ({mss} bytes), got {v}"),
                );
            }
            Some(v)
        }
        None => None,
    };
    Ok((receive_buffer_bytes, send_buffer_bytes))
}

/// Delayed ACKs and the retransmission timer's bounds.
fn timers(p: &str, t: &RawTcp) -> Result<(DelayedAck, RttConfig), ScenarioError> {
    let delack_timeout = opt_duration(
        p,
        ("delayed_ack_timeout", &t.delayed_ack_timeout),
        ("delayed_ack_timeout_s", &t.delayed_ack_timeout_s),
        false,
    )?;
    let delayed_ack = if t.delayed_ack.unwrap_or(true) {
        DelayedAck::On {
            timeout: delack_timeout.unwrap_or(DELAYED_ACK_TIMEOUT),
            every_segments: ACK_EVERY_SEGMENTS,
            quick_ack: t.quick_ack.unwrap_or(false),
        }
    } else {
        if delack_timeout.is_some() {
            return err(
                at(p, "delayed_ack_timeout"),
                "given while delayed_ack is false",
            );
        }
        // Quick-ACK mode is a mode of delayed ACKs; without them every segment is acked.
        if t.quick_ack == Some(true) {
            return err(at(p, "quick_ack"), "given while delayed_ack is false");
        }
        DelayedAck::Off
    };
    let rule: RtoRule = named(p, "rto", &t.rto)?;
    // Linux's rule brings Linux's bounds unless the scenario gives its own.
    let (default_min_rto, default_max_rto) = match rule {
        RtoRule::Rfc6298 => (MIN_RTO, MAX_RTO),
        RtoRule::Linux => (LINUX_MIN_RTO, LINUX_MAX_RTO),
    };
    let initial_rto = opt_duration(
        p,
        ("initial_rto", &t.initial_rto),
        ("initial_rto_s", &t.initial_rto_s),
        false,
    )?
    .unwrap_or(INITIAL_RTO);
    let min_rto = opt_duration(
        p,
        ("min_rto", &t.min_rto),
        ("min_rto_s", &t.min_rto_s),
        false,
    )?
    .unwrap_or(default_min_rto);
    let max_rto = opt_duration(
        p,
        ("max_rto", &t.max_rto),
        ("max_rto_s", &t.max_rto_s),
        false,
    )?
    .unwrap_or(default_max_rto);
    if max_rto < min_rto {
        return err(
            at(p, "max_rto"),
            format!("expected max_rto >= min_rto ({min_rto}), got {max_rto}"),
        );
    }
    Ok((
        delayed_ack,
        RttConfig {
            initial_rto,
            min_rto,
            max_rto,
            clock_granularity: CLOCK_GRANULARITY,
            rule,
        },
    ))
}

/// Reno's window growth by its name in a scenario.
fn window_growth(name: &str) -> Option<WindowGrowth> {
    match name {
        "per-ack" => Some(WindowGrowth::PerAck),
        "byte-counting" => Some(WindowGrowth::ByteCounting {
            limit_segments: ABC_LIMIT_SEGMENTS,
        }),
        _ => None,
    }
}

/// A setting chosen by name (`p.key`): its default when absent, else the name parsed, case
/// ignored (`"NewReno"`, `--tcp SACK`), an unknown one an error at `p.key` listing the known.
fn named<T>(p: &str, key: &str, name: &Option<String>) -> Result<T, ScenarioError>
where
    T: Default + FromStr,
    T::Err: std::fmt::Display,
{
    match name {
        None => Ok(T::default()),
        Some(name) => name
            .to_ascii_lowercase()
            .parse::<T>()
            .map_err(|e| ScenarioError::new(at(p, key), e.to_string())),
    }
}

/// Loss recovery and the congestion controller (with its window growth): the controller the
/// profile runs for the name given, with the profile's growth for it where none is given.
fn control(
    p: &str,
    t: &RawTcp,
    profile: TcpProfile,
) -> Result<(LossRecovery, CcConfig), ScenarioError> {
    let recovery: LossRecovery = named(p, "recovery", &t.recovery)?;
    let name =
        t.cc.as_ref()
            .map(|n| profile.controller(&n.to_ascii_lowercase()).to_owned());
    let mut cc: CcConfig = named(p, "cc", &name)?;
    let growth = t
        .growth
        .clone()
        .or_else(|| profile.growth(cc.name()).map(str::to_owned));
    if let Some(growth) = &growth {
        let Some(g) = window_growth(growth) else {
            return err(
                at(p, "growth"),
                format!(
                    "unknown window growth \"{growth}\"; expected one of: per-ack, byte-counting"
                ),
            );
        };
        match &mut cc {
            CcConfig::Reno(r) => r.growth = g,
            // The other controllers grow per ACK by their own rules; only Reno counts bytes.
            _ if g == WindowGrowth::PerAck => {}
            other => {
                return err(
                    at(p, "growth"),
                    format!(
                        "byte-counting growth is implemented for cc \"reno\" only, not \"{}\"",
                        other.name()
                    ),
                )
            }
        }
    }
    if let Some(on) = t.fast_convergence {
        set_fast_convergence(p, &mut cc, on)?;
    }
    Ok((recovery, cc))
}

/// `fast_convergence`: RFC 9438 4.7's rule in `cubic`, Linux's module parameter in
/// `cubic-linux`, BIC's own; no other controller has one.
fn set_fast_convergence(p: &str, cc: &mut CcConfig, on: bool) -> Result<(), ScenarioError> {
    match cc {
        CcConfig::Cubic(c) => c.fast_convergence = on,
        CcConfig::CubicLinux(c) => c.fast_convergence = on,
        CcConfig::Bic(c) => c.fast_convergence = on,
        other => {
            return err(
                at(p, "fast_convergence"),
                format!(
                    "fast convergence is a rule of cc \"cubic\", \"cubic-linux\" and \"bic\", \
                     not \"{}\"",
                    other.name()
                ),
            )
        }
    }
    Ok(())
}

/// `over`'s fields where given, else `base`'s; a quantity's two spellings go together.
pub(super) fn tcp_over(base: &RawTcp, over: &RawTcp) -> RawTcp {
    fn one<T: Clone>(over: &Option<T>, base: &Option<T>) -> Option<T> {
        over.clone().or_else(|| base.clone())
    }
    fn pair<A: Clone, B: Clone>(
        over: (&Option<A>, &Option<B>),
        base: (&Option<A>, &Option<B>),
    ) -> (Option<A>, Option<B>) {
        if over.0.is_some() || over.1.is_some() {
            (over.0.clone(), over.1.clone())
        } else {
            (base.0.clone(), base.1.clone())
        }
    }
    let (mss, mss_bytes) = pair((&over.mss, &over.mss_bytes), (&base.mss, &base.mss_bytes));
    let (receive_buffer, receive_buffer_bytes) = pair(
        (&over.receive_buffer, &over.receive_buffer_bytes),
        (&base.receive_buffer, &base.receive_buffer_bytes),
    );
    let (send_buffer, send_buffer_bytes) = pair(
        (&over.send_buffer, &over.send_buffer_bytes),
        (&base.send_buffer, &base.send_buffer_bytes),
    );
    let delayed_ack = one(&over.delayed_ack, &base.delayed_ack);
    // A segment that turns delayed ACKs off does not inherit the flow's timeout for them, nor
    // its quick-ACK mode.
    let quick_ack = if over.delayed_ack == Some(false) {
        over.quick_ack
    } else {
        one(&over.quick_ack, &base.quick_ack)
    };
    let (delayed_ack_timeout, delayed_ack_timeout_s) = if over.delayed_ack == Some(false) {
        (
            over.delayed_ack_timeout.clone(),
            over.delayed_ack_timeout_s.clone(),
        )
    } else {
        pair(
            (&over.delayed_ack_timeout, &over.delayed_ack_timeout_s),
            (&base.delayed_ack_timeout, &base.delayed_ack_timeout_s),
        )
    };
    let (initial_rto, initial_rto_s) = pair(
        (&over.initial_rto, &over.initial_rto_s),
        (&base.initial_rto, &base.initial_rto_s),
    );
    let (min_rto, min_rto_s) = pair(
        (&over.min_rto, &over.min_rto_s),
        (&base.min_rto, &base.min_rto_s),
    );
    let (max_rto, max_rto_s) = pair(
        (&over.max_rto, &over.max_rto_s),
        (&base.max_rto, &base.max_rto_s),
    );
    // Window growth and fast convergence are parameters of the controller: a segment naming
    // its own controller does not inherit the flow's.
    let (growth, fast_convergence) = if over.cc.is_some() {
        (over.growth.clone(), over.fast_convergence)
    } else {
        (
            one(&over.growth, &base.growth),
            one(&over.fast_convergence, &base.fast_convergence),
        )
    };
    RawTcp {
        profile: one(&over.profile, &base.profile),
        mss,
        mss_bytes,
        initial_window_segments: one(&over.initial_window_segments, &base.initial_window_segments),
        receive_buffer,
        receive_buffer_bytes,
        send_buffer,
        send_buffer_bytes,
        window_scaling: one(&over.window_scaling, &base.window_scaling),
        sack: one(&over.sack, &base.sack),
        timestamps: one(&over.timestamps, &base.timestamps),
        delayed_ack,
        delayed_ack_timeout,
        delayed_ack_timeout_s,
        quick_ack,
        initial_rto,
        initial_rto_s,
        min_rto,
        min_rto_s,
        max_rto,
        max_rto_s,
        rto: one(&over.rto, &base.rto),
        recovery: one(&over.recovery, &base.recovery),
        cwnd_reduction: one(&over.cwnd_reduction, &base.cwnd_reduction),
        cc: one(&over.cc, &base.cc),
        growth,
        fast_convergence,
        dup_thresh: one(&over.dup_thresh, &base.dup_thresh),
        limited_transmit: one(&over.limited_transmit, &base.limited_transmit),
        handshake: one(&over.handshake, &base.handshake),
        max_ooo_ranges: one(&over.max_ooo_ranges, &base.max_ooo_ranges),
        ecn: one(&over.ecn, &base.ecn),
    }
}
