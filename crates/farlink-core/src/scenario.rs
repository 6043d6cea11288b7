//! The scenario: the single input of a simulation, read from JSON and validated into typed
//! values with every error naming its place (`links[1].fwd.loss.p: ...`).
//!
//! This module owns the scenario's schema, its defaults, the resolution of names into indices,
//! static routing, and all validation. It must not run anything: [`crate::world`] builds the
//! components from a [`Scenario`] and runs them. The Python front end reads TOML (with presets),
//! applies command-line overrides by editing the document, and hands JSON to
//! [`parse_scenario_json`].
//!
//! # Quantities
//!
//! A quantity with a dimension is written either as a **string with its unit** under the plain
//! name (`"rate": "1.5Mbps"`, `"delay": "80ms"`, `"size": "64KiB"`), read by
//! [`crate::units`] exactly as the Python front end reads it, or as a **bare number under a
//! name that carries the unit** (`"rate_bps": 1500000`, `"delay_s": 0.08`,
//! `"size_bytes": 65536`). Giving both spellings of one quantity is an error, and so is a bare
//! number under a plain name (`"delay": 80` would be ambiguous). Sizes are rounded to the
//! nearest byte, rates to the nearest bit/s and durations to the nearest nanosecond; a
//! duration may not exceed [`MAX_DURATION_S`]. Probabilities and dimensionless parameters are
//! numbers.
//!
//! # Schema (version 1)
//!
//! Field by field, with defaults, in `docs/scenarios.md`.
//!
//! ```text
//! {
//!   "name": "stpd-wireless",          optional, free text (also "description", "schema": 1)
//!   "seed": 1,                        optional u64, default 1: the master seed
//!   "duration": "100s",               required (or duration_s): the simulated stop time
//!   "nodes": ["S", "R", "D"],         required, unique non-empty names
//!   "links": [ LINK, ... ],           required
//!   "flows": [ FLOW, ... ],           optional, default []
//!   "lossy_link": "R-D",              optional: LINK name, or {"link": "R-D", "direction": "fwd"}
//!   "trace": TRACE,                   optional, default: no traces
//!   "pcap": ["R-D"],                  optional: links whose departing packets are tapped
//!   "extra": ...                      optional, anything: ignored (for other engines)
//! }
//! LINK = {
//!   "name": "R-D",                    optional, default "<a>-<b>"; unique
//!   "a": "R", "b": "D",               the two nodes; "fwd" is a -> b, "rev" is b -> a
//!   "rate": "1.5Mbps" | "rate_bps",   both directions (required here or in fwd/rev)
//!   "delay": "80ms" | "delay_s",      one-way propagation delay (required here or in fwd/rev)
//!   "queue_pkts": 30 | "queue_bytes": 64000 | "queue": "64KiB"
//!                                     drop-tail queue at the sending end of each direction;
//!                                     default 100 packets
//!   "fwd": DIR, "rev": DIR            optional per-direction overrides
//!   "bundle": BUNDLE                  optional: the link is a multilink PPP bundle (then no
//!                                     rate or delay here or in fwd/rev; queue* bound the
//!                                     MLPPP queue in front of the members; fwd/rev loss is
//!                                     each member's frame (or packet) error model)
//!   "rlp": RLP                        optional: the link is an IS-707 radio hop (not with
//!                                     bundle); rate and frame set the slot, delay runs from
//!                                     a slot's end to the frame's arrival; fwd/rev loss
//!                                     decides each frame slot of that direction (and its
//!                                     NAKs cross the other direction's channel)
//! }
//! RLP = {"idle_frames": "none" | "unlimited" | 5, "nak_rounds": 3,
//!        "nak_timer": "120ms" | "nak_timer_s" (default from the slot and delay),
//!        "frame": "24B" | "frame_bytes", "payload": "19B" | "payload_bytes",
//!        "pe": 0.1, "fd_t": 0.01     optional, together: both directions' channel is the
//!                                     Markov fading model on the slot (then no fwd/rev loss)}
//! BUNDLE = {                          see docs/scenarios.md and docs/far-links.md
//!   "members": 8 | [MEMBER, ...],     1 to 64 members
//!   "rate", "delay" (or _bps, _s),    per member, unless every MEMBER gives its own
//!   "txqueue_pkts": 3,                per member, the packet being sent included
//!   "call_drop_rate": "1/50min" | "call_drop_rate_per_s"   Poisson per member, default 0
//!   "detection_delay": "30s",         call drop to the moment it is noticed
//!   "dial_time": "14.5s",             required if members ever dial
//!   "dial_failure_prob": 0.0,
//!   "t_d": "30s", "t_f": "30s", "max_attempts": 10, "blocked_for": "1h"   (or *_s)
//!   "primary": false, "start": "connected" | "dialing",
//!   "fragment": false, "mp_header_bytes": 4, "reassembly_timeout": "60s",
//!   "arq": {"mode": "go-back-n" | "selective-repeat", "frame": "27B" | "frame_bytes",
//!           "max_tries": 3, "window_frames": (default from the round trip)}
//! }
//! MEMBER = {"name", "rate", "delay", "txqueue_pkts", "call_drop_rate"} (each optional)
//! DIR = { rate, delay, queue as above (override the link's), "loss": LOSS }
//! LOSS = {"model": "none"}
//!      | {"model": "bernoulli", "p": 0.01}
//!      | {"model": "gilbert_elliott", "mean_burst": "40ms" | "mean_burst_s" | "mean_burst_pkts": 8,
//!         "rate": 0.01}
//!      | {"model": "gilbert_packets", "mean_burst_pkts": 8, "rate": 0.01}   stepped per packet
//!      | {"model": "markov_fading", "pe": 0.1, "fd_t": 0.01, "frame": "20ms" (default, or frame_s)}
//!      | {"model": "lcg16807", "rate": 0.1, "seed": 1 (default)}
//!      | {"model": "drop_list", "packets": [2000, 2001]}   arrival numbers from 1, increasing
//! FLOW = {
//!   "name": "ftp",                    optional, default "flow<i>"; unique
//!   "from": "S", "to": "D",           data flows from -> to; ACKs return on the reverse path
//!   "start": "0s" | "start_s",        default 0
//!   "stop": "60s" | "stop_s",         optional: the application writes nothing after it
//!   "tcp": TCP,                       optional
//!   "app": APP,                       required
//!   "relays": ["R1"], "relay_buffer": "128KiB", "segments": [{"tcp": TCP}, ...]
//!                                     optional: a split connection (scenario/split.rs)
//! }
//! TCP = {                             every field optional; defaults after RFCs / Linux
//!   "mss": "1460B" | "mss_bytes": 1460,          MSS option (64..=65495)
//!   "initial_window_segments": 10,
//!   "receive_buffer": "128KiB" | "receive_buffer_bytes": 131072,
//!   "send_buffer": "64KiB" | "send_buffer_bytes",  default unbounded
//!   "window_scaling": true, "sack": true, "timestamps": true,
//!   "delayed_ack": true, "delayed_ack_timeout": "200ms" | "delayed_ack_timeout_s",
//!   "initial_rto": "1s", "min_rto": "1s", "max_rto": "64s"     (or *_s),
//!   "recovery": "sack",               tahoe | reno | newreno | sack
//!   "cc": "reno",                     congestion controller by name (tcp::cc::CcConfig::NAMES:
//!                                     reno | vegas | hybla | westwood | cubic | bic | ...)
//!   "growth": "per-ack",              per-ack | byte-counting (Reno's window growth; the
//!                                     others accept per-ack only)
//!   "dup_thresh": 3,
//!   "limited_transmit": true,         RFC 3042 (on by default, as in Linux and ns-3)
//!   "handshake": false                simulate the SYN / SYN-ACK exchange (tcp::handshake);
//!                                     off: the connection starts established
//! }
//! APP = {"kind": "bulk", "size": "1MB" | "size_bytes": 1000000}
//!     | {"kind": "unbounded"}
//!     | {"kind": "telnet", "mean_interval": "1s" | "mean_interval_s",
//!        "message": "40B" | "message_bytes": 40 (default 1)}
//! TRACE = {"all", "cwnd", "seq", "ack", "rtt", "rto", "queue", "drops", "goodput",
//!          "member_state", "capacity": bool, "goodput_interval": "100ms" | "goodput_interval_s"}
//! ```
//!
//! # Choices
//!
//! * **Routing** is static: each flow's data takes a path with the fewest hops (breadth-first
//!   search over the links in the order they are listed, so ties go to the link listed
//!   first); its ACKs take exactly the reverse path, through the same links.
//! * **`lossy_link`** names the link direction whose loss the command line's `--loss P`
//!   replaces: the front end writes `links[i].<direction>.loss = {"model": "bernoulli",
//!   "p": P}` for the link named. The direction defaults to `fwd` and must carry the data of at
//!   least one flow.
//! * **`mean_burst_pkts`** of the Gilbert–Elliott model is converted to time with the packet
//!   interval of the direction: the transmission time of the largest full-sized data packet
//!   (MSS + 40 bytes of headers) of the flows whose data crosses it, or of 1500 bytes if none
//!   does (seed 003's "average error burst of 8 packets").

mod limits;
mod split;

pub use split::{RelaySpec, SegmentSpec, DEFAULT_RELAY_BUFFER_BYTES};

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

use crate::arq::{ArqConfig, ArqMode};
use crate::error::ConfigError;
use crate::link::{transmission_time, QueueLimit};
use crate::loss::{
    AnyLoss, Bernoulli, DropList, GilbertElliott, GilbertElliottConfig, GilbertPackets,
    Lcg16807Loss, LossModel, MarkovFading, MarkovFadingConfig, NoLoss, IS707_FRAME,
};
use crate::mlppp::{DEFAULT_MP_HEADER_BYTES, DEFAULT_TXQUEUE_PKTS, MAX_MEMBERS};
use crate::modem::ModemConfig;
use crate::rlp::{IdlePolicy, RlpConfig, IS707_FRAME_BYTES, IS707_NAK_ROUNDS, IS707_PAYLOAD_BYTES};
use crate::rng::StreamRng;
use crate::tcp::cc::reno::ABC_LIMIT_SEGMENTS;
use crate::tcp::cc::{CcConfig, WindowGrowth};
use crate::tcp::receiver::{
    DelayedAck, ReceiverConfig, ACK_EVERY_SEGMENTS, DEFAULT_MAX_OOO_RANGES,
    DEFAULT_RECEIVE_BUFFER_BYTES, DELAYED_ACK_TIMEOUT,
};
use crate::tcp::recovery::{LossRecovery, DUP_THRESH};
use crate::tcp::rtt::{RttConfig, CLOCK_GRANULARITY, INITIAL_RTO, MAX_RTO, MIN_RTO};
use crate::tcp::sender::{
    AppSource, SenderConfig, DEFAULT_INITIAL_WINDOW_SEGMENTS, DEFAULT_SCOREBOARD_CAPACITY_SEGMENTS,
};
use crate::tcp::TcpOptions;
use crate::time::{SimDuration, SimTime};
use crate::units::{self, UnitError};

/// The schema version this module reads.
pub const SCHEMA_VERSION: u32 = 1;
/// The longest duration accepted anywhere (about 3.2 years): keeps every sum of simulated
/// times far inside the u64 nanoseconds of [`SimTime`].
pub const MAX_DURATION_S: f64 = 1e8;
/// The default queue bound when a link gives none (ns-3's default `MaxSize` of 100 packets).
pub const DEFAULT_QUEUE_PKTS: u32 = 100;
/// Default MSS option: an Ethernet MTU of 1500 bytes less 40 bytes of IPv4 and TCP headers.
pub const DEFAULT_MSS_BYTES: u32 = 1460;
/// Bounds of the MSS option: above the 12 bytes of per-segment options with room to spare,
/// and at most an IPv4 total length of 65535 less 40 bytes of headers.
pub const MSS_RANGE_BYTES: (u32, u32) = (64, 65_495);
/// The largest window TCP can announce: 65535 << 14 (RFC 7323 section 2.3).
pub const MAX_RECEIVE_BUFFER_BYTES: u64 = 65_535 << 14;
/// The largest link rate accepted, 10 Tbit/s.
pub const MAX_RATE_BPS: f64 = 1e13;
/// The packet size used for `mean_burst_pkts` on a direction no flow's data crosses.
pub const DEFAULT_NOMINAL_PACKET_BYTES: u32 = 1500;
/// Headers of a full-sized data segment beyond its MSS: IPv4 and TCP (20 + 20); with
/// timestamps the 12 option bytes come out of the MSS (RFC 6691).
const DATA_HEADER_BYTES: u32 = 40;
/// Default goodput sampling interval of the trace.
pub const DEFAULT_GOODPUT_INTERVAL: SimDuration = SimDuration::from_millis(100);
/// Default telnet message size: one keystroke.
pub const DEFAULT_TELNET_MESSAGE_BYTES: u32 = 1;
/// Default time from a call drop to the moment it is noticed: seed 000 section 5.2, "in the
/// deployed Iridium system this time is at least of the order of 30 seconds".
pub const DEFAULT_DETECTION_DELAY: SimDuration = SimDuration::from_secs(30);
/// Default MLPPP reassembly timeout: longer than any member's queueing and ARQ delay in the
/// presets (about 20 s on Iridium), so it only ends stalls the sequence numbers cannot.
pub const DEFAULT_REASSEMBLY_TIMEOUT: SimDuration = SimDuration::from_secs(60);
/// Default tries per ARQ frame (a "small number of frame retransmissions", seed 004 II).
pub const DEFAULT_ARQ_MAX_TRIES: u32 = 3;

// ---------------------------------------------------------------------------------------------
// The validated scenario
// ---------------------------------------------------------------------------------------------

/// A validated scenario; build it with [`parse_scenario_json`].
#[derive(Clone, Debug)]
pub struct Scenario {
    pub(crate) name: Option<String>,
    pub(crate) seed: u64,
    pub(crate) duration: SimDuration,
    pub(crate) nodes: Vec<String>,
    pub(crate) links: Vec<LinkSpec>,
    pub(crate) flows: Vec<FlowSpec>,
    pub(crate) lossy_link: Option<LossyLink>,
    pub(crate) trace: TraceConfig,
    pub(crate) pcap_links: Vec<usize>,
}

impl Scenario {
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// The simulated stop time (from zero).
    pub fn duration(&self) -> SimDuration {
        self.duration
    }
    pub fn nodes(&self) -> &[String] {
        &self.nodes
    }
    pub fn links(&self) -> &[LinkSpec] {
        &self.links
    }
    pub fn flows(&self) -> &[FlowSpec] {
        &self.flows
    }
    /// The link direction whose loss `--loss` overrides, if the scenario names one.
    pub fn lossy_link(&self) -> Option<&LossyLink> {
        self.lossy_link.as_ref()
    }
    pub fn trace(&self) -> &TraceConfig {
        &self.trace
    }
    /// Indices into [`Scenario::links`] of the links whose packets are tapped for pcap.
    pub fn pcap_links(&self) -> &[usize] {
        &self.pcap_links
    }
    /// The same scenario with another master seed (for replications).
    pub fn with_seed(mut self, seed: u64) -> Scenario {
        self.seed = seed;
        self
    }
}

/// A duplex link between two nodes.
#[derive(Clone, Debug)]
pub struct LinkSpec {
    pub name: String,
    /// Index into [`Scenario::nodes`] of end `a`; the forward direction runs a -> b.
    pub a: usize,
    pub b: usize,
    pub fwd: DirectionSpec,
    pub rev: DirectionSpec,
    /// The link is a multilink PPP bundle; then each direction's `rate_bps` is the sum of the
    /// members' rates, `delay` the largest member delay, `queue` the MLPPP queue and `loss`
    /// each member's error model.
    pub bundle: Option<BundleSpec>,
    /// The link is an IS-707 radio hop in both directions (see [`crate::rlp`]).
    pub rlp: Option<RlpSpec>,
}

/// The radio link protocol of a link (both directions); rate, delay and queue are the
/// direction's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RlpSpec {
    pub frame_bytes: u32,
    pub payload_bytes: u32,
    pub nak_rounds: u32,
    /// `None`: [`RlpConfig::default_nak_timer`] of the direction.
    pub nak_timer: Option<SimDuration>,
    pub idle: IdlePolicy,
    /// Frame error rate P_e and normalised Doppler f_d T of both directions' channel, when
    /// given here rather than as each direction's loss.
    pub channel: Option<(f64, f64)>,
}

impl RlpSpec {
    /// The component's configuration for one direction.
    pub fn config(&self, dir: &DirectionSpec) -> RlpConfig {
        RlpConfig {
            rate_bps: dir.rate_bps,
            frame_bytes: self.frame_bytes,
            payload_bytes: self.payload_bytes,
            delay: dir.delay,
            nak_rounds: self.nak_rounds,
            nak_timer: self.nak_timer.unwrap_or_else(|| {
                RlpConfig::default_nak_timer(dir.rate_bps, self.frame_bytes, dir.delay)
            }),
            idle: self.idle,
            queue_limit: dir.queue,
        }
    }
}

/// A multilink PPP bundle (see [`crate::mlppp`] and [`crate::modem`]).
#[derive(Clone, Debug, PartialEq)]
pub struct BundleSpec {
    pub members: Vec<MemberSpec>,
    pub arq_mode: Option<ArqMode>,
    pub fragment: bool,
    pub mp_header_bytes: u32,
    pub reassembly_timeout: SimDuration,
    pub detection_delay: SimDuration,
    pub dial_time: SimDuration,
    pub dial_failure_prob: f64,
    pub modem: ModemConfig,
    pub primary: bool,
    pub start_connected: bool,
}

/// One member of a bundle (both directions).
#[derive(Clone, Debug, PartialEq)]
pub struct MemberSpec {
    pub name: String,
    pub rate_bps: u64,
    pub delay: SimDuration,
    pub txqueue_pkts: u32,
    /// Poisson call drops while the call is up, per second.
    pub call_drop_rate_per_s: f64,
    /// The ARQ, its window resolved for this member's rate and delay.
    pub arq: Option<ArqConfig>,
}

impl BundleSpec {
    /// The sum of the members' rates.
    pub fn capacity_bps(&self) -> u64 {
        self.members.iter().map(|m| m.rate_bps).sum()
    }
}

impl LinkSpec {
    pub fn direction(&self, forward: bool) -> &DirectionSpec {
        if forward {
            &self.fwd
        } else {
            &self.rev
        }
    }
}

/// One direction of a link: serializer, propagation, queue at the sending end, loss.
#[derive(Clone, Debug)]
pub struct DirectionSpec {
    pub rate_bps: u64,
    pub delay: SimDuration,
    pub queue: QueueLimit,
    pub loss: LossSpec,
}

/// A loss model and its parameters, resolved and checked.
#[derive(Clone, Debug, PartialEq)]
pub enum LossSpec {
    None,
    Bernoulli {
        p: f64,
    },
    GilbertElliott(GilbertElliottConfig),
    /// Stepped per packet: overall rate and mean burst in packets.
    GilbertPackets {
        rate: f64,
        mean_burst_pkts: f64,
    },
    MarkovFading(MarkovFadingConfig),
    Lcg16807 {
        rate: f64,
        seed: u32,
    },
    /// Arrival numbers (from 1, strictly increasing) of the packets to lose.
    DropList {
        packets: Vec<u64>,
    },
}

impl LossSpec {
    /// The model's name as the scenario spells it.
    pub fn model_name(&self) -> &'static str {
        match self {
            LossSpec::None => "none",
            LossSpec::Bernoulli { .. } => "bernoulli",
            LossSpec::GilbertElliott(_) => "gilbert_elliott",
            LossSpec::GilbertPackets { .. } => "gilbert_packets",
            LossSpec::MarkovFading(_) => "markov_fading",
            LossSpec::Lcg16807 { .. } => "lcg16807",
            LossSpec::DropList { .. } => "drop_list",
        }
    }

    /// Builds the model, drawing from `rng` (unused by `none`, `lcg16807` and `drop_list`).
    pub fn build(&self, rng: StreamRng) -> Result<AnyLoss, ConfigError> {
        Ok(match self {
            LossSpec::None => NoLoss.into(),
            LossSpec::Bernoulli { p } => Bernoulli::new(*p, rng)?.into(),
            LossSpec::GilbertElliott(cfg) => GilbertElliott::new(*cfg, rng)?.into(),
            LossSpec::GilbertPackets {
                rate,
                mean_burst_pkts,
            } => GilbertPackets::new(*rate, *mean_burst_pkts, rng)?.into(),
            LossSpec::MarkovFading(cfg) => MarkovFading::new(*cfg, rng)?.into(),
            LossSpec::Lcg16807 { rate, seed } => {
                Lcg16807Loss::from_error_rate(*rate, *seed)?.into()
            }
            LossSpec::DropList { packets } => DropList::new(packets.clone())?.into(),
        })
    }

    /// The model's long-run loss rate.
    pub fn analytic_loss_rate(&self) -> f64 {
        self.build(StreamRng::derive(0, "analytic"))
            .map(|m| m.analytic_loss_rate())
            .unwrap_or(f64::NAN)
    }
}

/// The link direction `--loss` overrides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LossyLink {
    /// Index into [`Scenario::links`].
    pub link: usize,
    pub forward: bool,
}

/// One hop of a path: a link and the direction it is crossed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hop {
    pub link: usize,
    pub forward: bool,
}

impl Hop {
    pub fn reversed(self) -> Hop {
        Hop {
            link: self.link,
            forward: !self.forward,
        }
    }
}

/// A TCP connection and the application feeding it.
#[derive(Clone, Debug)]
pub struct FlowSpec {
    pub name: String,
    /// Index into [`Scenario::nodes`] of the data sender.
    pub from: usize,
    /// Index of the data receiver.
    pub to: usize,
    pub start: SimTime,
    pub stop: Option<SimTime>,
    pub tcp: TcpSpec,
    pub app: AppSpec,
    /// The data path, sender to receiver; ACKs take it reversed. Through relays: the
    /// connections' paths one after the other.
    pub path: Vec<Hop>,
    /// Relays splitting the connection, in path order (`scenario/split.rs`); empty for one
    /// end-to-end connection.
    pub relays: Vec<RelaySpec>,
    /// With relays, the connections source to first relay, ..., last relay to destination,
    /// each with its own TCP settings; empty without relays.
    pub segments: Vec<SegmentSpec>,
}

/// TCP settings of a flow; both ends use the same options.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TcpSpec {
    pub options: TcpOptions,
    pub initial_window_segments: u32,
    pub receive_buffer_bytes: u64,
    /// The sender's socket buffer; `None`: unbounded (see [`SenderConfig::send_buffer_bytes`]).
    pub send_buffer_bytes: Option<u64>,
    pub delayed_ack: DelayedAck,
    pub rtt: RttConfig,
    pub recovery: LossRecovery,
    pub cc: CcConfig,
    pub dup_thresh: u32,
    pub limited_transmit: bool,
    /// Simulate the three-way handshake (`Sender::connect`, `Receiver::listen`); otherwise
    /// both ends start established with what the handshake would have agreed.
    pub handshake: bool,
}

impl TcpSpec {
    /// The sender's configuration for application source `app`.
    pub fn sender_config(&self, app: AppSource) -> SenderConfig {
        SenderConfig {
            options: self.options,
            initial_window_segments: self.initial_window_segments,
            recovery: self.recovery,
            congestion_control: self.cc,
            rtt: self.rtt,
            app,
            dup_thresh: self.dup_thresh,
            limited_transmit: self.limited_transmit,
            scoreboard_capacity_segments: DEFAULT_SCOREBOARD_CAPACITY_SEGMENTS,
            send_buffer_bytes: self.send_buffer_bytes,
            nagle: false,
        }
    }

    /// The receiver's configuration; `reads_on_demand` for a relay's receiver.
    pub fn receiver_config(&self, reads_on_demand: bool) -> ReceiverConfig {
        ReceiverConfig {
            options: self.options,
            receive_buffer_bytes: self.receive_buffer_bytes,
            delayed_ack: self.delayed_ack,
            max_ooo_ranges: DEFAULT_MAX_OOO_RANGES,
            reads_on_demand,
        }
    }

    /// Bytes on the wire of a full-sized data segment (MSS + 40).
    pub fn full_packet_bytes(&self) -> u32 {
        self.options.mss_bytes + DATA_HEADER_BYTES
    }
}

/// What the application at the sender does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AppSpec {
    /// `size_bytes` written at the start; the transfer time runs to the last byte delivered.
    Bulk { size_bytes: u64 },
    /// Always more to send (until `stop`).
    Unbounded,
    /// Messages of `message_bytes` with exponentially distributed gaps of mean `mean_interval`.
    Telnet {
        mean_interval: SimDuration,
        message_bytes: u32,
    },
}

impl AppSpec {
    pub fn kind(&self) -> &'static str {
        match self {
            AppSpec::Bulk { .. } => "bulk",
            AppSpec::Unbounded => "unbounded",
            AppSpec::Telnet { .. } => "telnet",
        }
    }
}

/// Which traces to record. Each costs nothing when off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceConfig {
    pub cwnd: bool,
    pub seq: bool,
    pub ack: bool,
    pub rtt: bool,
    pub rto: bool,
    pub queue: bool,
    pub drops: bool,
    pub goodput: bool,
    /// State changes of bundle members.
    pub member_state: bool,
    /// Bundle capacity (members MLPPP may use) over time.
    pub capacity: bool,
    pub goodput_interval: SimDuration,
}

impl Default for TraceConfig {
    fn default() -> Self {
        TraceConfig {
            cwnd: false,
            seq: false,
            ack: false,
            rtt: false,
            rto: false,
            queue: false,
            drops: false,
            goodput: false,
            member_state: false,
            capacity: false,
            goodput_interval: DEFAULT_GOODPUT_INTERVAL,
        }
    }
}

impl TraceConfig {
    /// Every trace on.
    pub fn all() -> Self {
        TraceConfig {
            cwnd: true,
            seq: true,
            ack: true,
            rtt: true,
            rto: true,
            queue: true,
            drops: true,
            goodput: true,
            member_state: true,
            capacity: true,
            goodput_interval: DEFAULT_GOODPUT_INTERVAL,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// An invalid scenario: where (`links[1].fwd.loss.p`, empty for the document as a whole) and
/// what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    pub path: String,
    pub message: String,
}

impl ScenarioError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        ScenarioError {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for ScenarioError {}

fn err<T>(path: impl Into<String>, message: impl Into<String>) -> Result<T, ScenarioError> {
    Err(ScenarioError::new(path, message))
}

/// Joins a parent path and a field.
fn at(parent: &str, field: &str) -> String {
    if parent.is_empty() {
        field.to_owned()
    } else {
        format!("{parent}.{field}")
    }
}

/// A tagged variant's name and the parameters it takes (loss models, application kinds).
type Variant = (&'static str, &'static [&'static str]);

/// Looks `name` up among `table`'s variants, or names the field and the accepted names.
fn variant(
    p: &str,
    field: &str,
    what: &str,
    name: &str,
    table: &[Variant],
) -> Result<Variant, ScenarioError> {
    table
        .iter()
        .find(|(n, _)| *n == name)
        .copied()
        .ok_or_else(|| {
            let names: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
            ScenarioError::new(
                at(p, field),
                format!(
                    "unknown {what} \"{name}\"; expected one of: {}",
                    names.join(", ")
                ),
            )
        })
}

/// Refuses a parameter given to a variant that does not take it, naming what it takes.
fn only_its_params(
    p: &str,
    what: &str,
    name: &str,
    allowed: &[&str],
    given: &[(&str, bool)],
) -> Result<(), ScenarioError> {
    match given
        .iter()
        .find(|(param, present)| *present && !allowed.contains(param))
    {
        None => Ok(()),
        Some((param, _)) => {
            let takes = if allowed.is_empty() {
                "no parameters".to_owned()
            } else {
                allowed.join(", ")
            };
            err(
                at(p, param),
                format!("not a parameter of {what} \"{name}\" (it takes: {takes})"),
            )
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------

/// Reads and validates a scenario from JSON. Every error names the path of the offending value
/// and what was expected; nothing here panics on any input.
pub fn parse_scenario_json(text: &str) -> Result<Scenario, ScenarioError> {
    // serde's derived structs also accept a JSON array of their fields in declaration order;
    // a scenario is only ever an object with named fields.
    if let Some(first) = text.trim_start().chars().next() {
        if first != '{' {
            return Err(ScenarioError::new(
                "",
                format!("expected a JSON object (the scenario), found `{first}` at its start"),
            ));
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let raw: RawScenario = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = error_path(e.path());
        let inner = e.into_inner();
        let mut message = inner.to_string();
        // A data error is located by its path; the JSON's line and column would point into a
        // document the user never wrote (the front end's translation of a TOML file).
        if inner.classify() == serde_json::error::Category::Data {
            let suffix = format!(" at line {} column {}", inner.line(), inner.column());
            if let Some(stripped) = message.strip_suffix(&suffix) {
                message = stripped.to_owned();
            }
        }
        ScenarioError::new(path, message)
    })?;
    de.end()
        .map_err(|e| ScenarioError::new("", e.to_string()))?;
    validate(raw).and_then(|sc| limits::check(&sc).map(|()| sc))
}

/// The path of a serde error in the grammar of `--set` paths: field names and `[index]`es
/// (`links[1].fwd.loss.p`), empty for the document as a whole. It stops before the first
/// segment that cannot be written so, in practice the name of an unknown field that is empty
/// or holds `.`, `[`, `]`, white space or a control character, or is all digits (it would
/// read as an index): the error then names the object holding it, and the message (serde's
/// "unknown field `...`") names the key.
fn error_path(path: &serde_path_to_error::Path) -> String {
    let mut out = String::new();
    for segment in path.iter() {
        match segment {
            serde_path_to_error::Segment::Seq { index } => {
                out.push_str(&format!("[{index}]"));
            }
            serde_path_to_error::Segment::Map { key } if is_path_field(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            _ => break,
        }
    }
    out
}

/// Whether `key` can stand as a field of a path (see [`error_path`]).
fn is_path_field(key: &str) -> bool {
    !key.is_empty()
        && !key.bytes().all(|b| b.is_ascii_digit())
        && !key
            .chars()
            .any(|c| matches!(c, '.' | '[' | ']') || c.is_whitespace() || c.is_control())
}

// ----- quantity value types -----

/// A value written as a string with a unit, parsed by `crate::units` into its base unit.
struct UnitText<K>(f64, PhantomData<K>);

impl<K> Clone for UnitText<K> {
    fn clone(&self) -> Self {
        UnitText(self.0, PhantomData)
    }
}

trait UnitKind {
    const EXPECTING: &'static str;
    fn parse(text: &str) -> Result<f64, UnitError>;
}

struct BitRate;
struct Duration;
struct Size;
struct EventRate;

impl UnitKind for BitRate {
    const EXPECTING: &'static str = "a bit rate as a string with its unit, such as \"1.5Mbps\" \
        (a bare number of bit/s goes in the field whose name ends in _bps)";
    fn parse(text: &str) -> Result<f64, UnitError> {
        units::parse_bitrate_bps(text)
    }
}

impl UnitKind for Duration {
    const EXPECTING: &'static str = "a duration as a string with its unit, such as \"80ms\" \
        (a bare number of seconds goes in the field whose name ends in _s)";
    fn parse(text: &str) -> Result<f64, UnitError> {
        units::parse_duration_s(text, true)
    }
}

impl UnitKind for Size {
    const EXPECTING: &'static str = "a size as a string with its unit, such as \"64KiB\" \
        (a bare number of bytes goes in the field whose name ends in _bytes)";
    fn parse(text: &str) -> Result<f64, UnitError> {
        units::parse_size_bytes(text, true)
    }
}

impl UnitKind for EventRate {
    const EXPECTING: &'static str = "an event rate as a string such as \"1/50min\" (a bare \
        number of events per second goes in the field whose name ends in _per_s)";
    fn parse(text: &str) -> Result<f64, UnitError> {
        units::parse_event_rate_per_s(text, true)
    }
}

impl<'de, K: UnitKind> Deserialize<'de> for UnitText<K> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<K>(PhantomData<K>);
        impl<K: UnitKind> Visitor<'_> for V<K> {
            type Value = UnitText<K>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(K::EXPECTING)
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                K::parse(s)
                    .map(|v| UnitText(v, PhantomData))
                    .map_err(|e| E::custom(e.message))
            }
        }
        d.deserialize_str(V(PhantomData))
    }
}

/// A bare number whose unit is in its field's name (`delay_s`, `rate_bps`).
#[derive(Clone)]
struct Bare(f64);

impl<'de> Deserialize<'de> for Bare {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Bare;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a number in the unit the field's name ends with (write a string with a \
                     unit under the name without the suffix)",
                )
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Bare, E> {
                Ok(Bare(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Bare, E> {
                Ok(Bare(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Bare, E> {
                Ok(Bare(v as f64))
            }
        }
        d.deserialize_f64(V)
    }
}

// ----- raw documents (serde), validated below -----

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    schema: Option<u32>,
    name: Option<String>,
    #[allow(dead_code)]
    description: Option<String>,
    seed: Option<u64>,
    duration: Option<UnitText<Duration>>,
    duration_s: Option<Bare>,
    nodes: Vec<String>,
    links: Vec<RawLink>,
    #[serde(default)]
    flows: Vec<RawFlow>,
    lossy_link: Option<RawLossyLink>,
    trace: Option<RawTrace>,
    #[serde(default)]
    pcap: Vec<String>,
    #[allow(dead_code)]
    extra: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLink {
    name: Option<String>,
    a: String,
    b: String,
    rate: Option<UnitText<BitRate>>,
    rate_bps: Option<Bare>,
    delay: Option<UnitText<Duration>>,
    delay_s: Option<Bare>,
    queue: Option<UnitText<Size>>,
    queue_bytes: Option<u64>,
    queue_pkts: Option<u32>,
    fwd: Option<RawDir>,
    rev: Option<RawDir>,
    bundle: Option<RawBundle>,
    rlp: Option<RawRlp>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRlp {
    idle_frames: Option<RawIdle>,
    nak_rounds: Option<u32>,
    nak_timer: Option<UnitText<Duration>>,
    nak_timer_s: Option<Bare>,
    frame: Option<UnitText<Size>>,
    frame_bytes: Option<u64>,
    payload: Option<UnitText<Size>>,
    payload_bytes: Option<u64>,
    pe: Option<f64>,
    fd_t: Option<f64>,
}

/// `"none"`, `"unlimited"` or a number of idle frames.
enum RawIdle {
    Count(u64),
    Name(String),
}

impl<'de> Deserialize<'de> for RawIdle {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawIdle;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("\"none\", \"unlimited\" or a number of idle frames")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawIdle, E> {
                Ok(RawIdle::Count(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawIdle, E> {
                u64::try_from(v).map(RawIdle::Count).map_err(|_| {
                    E::custom(format!(
                        "expected \"none\", \"unlimited\" or a number of idle frames, got {v}"
                    ))
                })
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawIdle, E> {
                Ok(RawIdle::Name(v.to_owned()))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBundle {
    members: RawMembers,
    rate: Option<UnitText<BitRate>>,
    rate_bps: Option<Bare>,
    delay: Option<UnitText<Duration>>,
    delay_s: Option<Bare>,
    txqueue_pkts: Option<u32>,
    call_drop_rate: Option<UnitText<EventRate>>,
    call_drop_rate_per_s: Option<Bare>,
    detection_delay: Option<UnitText<Duration>>,
    detection_delay_s: Option<Bare>,
    dial_time: Option<UnitText<Duration>>,
    dial_time_s: Option<Bare>,
    dial_failure_prob: Option<f64>,
    t_d: Option<UnitText<Duration>>,
    t_d_s: Option<Bare>,
    t_f: Option<UnitText<Duration>>,
    t_f_s: Option<Bare>,
    max_attempts: Option<u32>,
    blocked_for: Option<UnitText<Duration>>,
    blocked_for_s: Option<Bare>,
    primary: Option<bool>,
    start: Option<String>,
    fragment: Option<bool>,
    mp_header: Option<UnitText<Size>>,
    mp_header_bytes: Option<u32>,
    reassembly_timeout: Option<UnitText<Duration>>,
    reassembly_timeout_s: Option<Bare>,
    arq: Option<RawArq>,
}

/// `8` or `[MEMBER, ...]`.
enum RawMembers {
    Count(u64),
    List(Vec<RawMember>),
}

impl<'de> Deserialize<'de> for RawMembers {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawMembers;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number of members, or a list of member tables")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawMembers, E> {
                Ok(RawMembers::Count(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawMembers, E> {
                u64::try_from(v)
                    .map(RawMembers::Count)
                    .map_err(|_| E::custom(format!("expected a number of members, got {v}")))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<RawMembers, A::Error> {
                Vec::<RawMember>::deserialize(de::value::SeqAccessDeserializer::new(seq))
                    .map(RawMembers::List)
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawMember {
    name: Option<String>,
    rate: Option<UnitText<BitRate>>,
    rate_bps: Option<Bare>,
    delay: Option<UnitText<Duration>>,
    delay_s: Option<Bare>,
    txqueue_pkts: Option<u32>,
    call_drop_rate: Option<UnitText<EventRate>>,
    call_drop_rate_per_s: Option<Bare>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawArq {
    mode: String,
    frame: Option<UnitText<Size>>,
    frame_bytes: Option<u32>,
    max_tries: Option<u32>,
    window_frames: Option<u32>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawDir {
    rate: Option<UnitText<BitRate>>,
    rate_bps: Option<Bare>,
    delay: Option<UnitText<Duration>>,
    delay_s: Option<Bare>,
    queue: Option<UnitText<Size>>,
    queue_bytes: Option<u64>,
    queue_pkts: Option<u32>,
    loss: Option<RawLoss>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLoss {
    model: String,
    p: Option<f64>,
    mean_burst: Option<UnitText<Duration>>,
    mean_burst_s: Option<Bare>,
    mean_burst_pkts: Option<f64>,
    rate: Option<f64>,
    pe: Option<f64>,
    fd_t: Option<f64>,
    frame: Option<UnitText<Duration>>,
    frame_s: Option<Bare>,
    seed: Option<u32>,
    packets: Option<Vec<u64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFlow {
    name: Option<String>,
    from: String,
    to: String,
    start: Option<UnitText<Duration>>,
    start_s: Option<Bare>,
    stop: Option<UnitText<Duration>>,
    stop_s: Option<Bare>,
    tcp: Option<RawTcp>,
    app: RawApp,
    relays: Option<Vec<String>>,
    relay_buffer: Option<UnitText<Size>>,
    relay_buffer_bytes: Option<u64>,
    segments: Option<Vec<RawSegment>>,
}

/// One connection of a split flow (`scenario/split.rs`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSegment {
    tcp: Option<RawTcp>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
struct RawTcp {
    mss: Option<UnitText<Size>>,
    mss_bytes: Option<u32>,
    initial_window_segments: Option<u32>,
    receive_buffer: Option<UnitText<Size>>,
    receive_buffer_bytes: Option<u64>,
    send_buffer: Option<UnitText<Size>>,
    send_buffer_bytes: Option<u64>,
    window_scaling: Option<bool>,
    sack: Option<bool>,
    timestamps: Option<bool>,
    delayed_ack: Option<bool>,
    delayed_ack_timeout: Option<UnitText<Duration>>,
    delayed_ack_timeout_s: Option<Bare>,
    initial_rto: Option<UnitText<Duration>>,
    initial_rto_s: Option<Bare>,
    min_rto: Option<UnitText<Duration>>,
    min_rto_s: Option<Bare>,
    max_rto: Option<UnitText<Duration>>,
    max_rto_s: Option<Bare>,
    recovery: Option<String>,
    cc: Option<String>,
    growth: Option<String>,
    dup_thresh: Option<u32>,
    limited_transmit: Option<bool>,
    handshake: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawApp {
    kind: String,
    size: Option<UnitText<Size>>,
    size_bytes: Option<u64>,
    mean_interval: Option<UnitText<Duration>>,
    mean_interval_s: Option<Bare>,
    message: Option<UnitText<Size>>,
    message_bytes: Option<u32>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawTrace {
    all: Option<bool>,
    cwnd: Option<bool>,
    seq: Option<bool>,
    ack: Option<bool>,
    rtt: Option<bool>,
    rto: Option<bool>,
    queue: Option<bool>,
    drops: Option<bool>,
    goodput: Option<bool>,
    member_state: Option<bool>,
    capacity: Option<bool>,
    goodput_interval: Option<UnitText<Duration>>,
    goodput_interval_s: Option<Bare>,
}

/// `"R-D"` or `{"link": "R-D", "direction": "fwd"}`.
struct RawLossyLink {
    link: String,
    direction: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLossyLinkObject {
    link: String,
    direction: Option<String>,
}

impl<'de> Deserialize<'de> for RawLossyLink {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawLossyLink;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a link name, or an object {\"link\": NAME, \"direction\": \"fwd\" | \"rev\"}",
                )
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<RawLossyLink, E> {
                Ok(RawLossyLink {
                    link: s.to_owned(),
                    direction: None,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawLossyLink, A::Error> {
                let o =
                    RawLossyLinkObject::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(RawLossyLink {
                    link: o.link,
                    direction: o.direction,
                })
            }
        }
        d.deserialize_any(V)
    }
}

// ---------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------

/// One of two spellings of a quantity, in its base unit (`None` if neither was given).
fn one_of<K>(
    parent: &str,
    plain: (&str, &Option<UnitText<K>>),
    bare: (&str, &Option<Bare>),
) -> Result<Option<(f64, String)>, ScenarioError> {
    match (plain.1, bare.1) {
        (Some(_), Some(_)) => err(
            at(parent, bare.0),
            format!("give either {} or {}, not both", plain.0, bare.0),
        ),
        (Some(v), None) => Ok(Some((v.0, at(parent, plain.0)))),
        (None, Some(v)) => Ok(Some((v.0, at(parent, bare.0)))),
        (None, None) => Ok(None),
    }
}

/// A duration in seconds checked and converted to nanoseconds.
fn duration_from(path: &str, seconds: f64, allow_zero: bool) -> Result<SimDuration, ScenarioError> {
    if !seconds.is_finite() || seconds < 0.0 || (seconds == 0.0 && !allow_zero) {
        let what = if allow_zero {
            "a duration of zero or more"
        } else {
            "a positive duration"
        };
        return err(path, format!("expected {what}, got {seconds} s"));
    }
    if seconds > MAX_DURATION_S {
        return err(
            path,
            format!("expected a duration of at most {MAX_DURATION_S} s, got {seconds} s"),
        );
    }
    Ok(SimDuration::from_secs_f64(seconds))
}

fn opt_duration<K>(
    parent: &str,
    plain: (&str, &Option<UnitText<K>>),
    bare: (&str, &Option<Bare>),
    allow_zero: bool,
) -> Result<Option<SimDuration>, ScenarioError> {
    one_of(parent, plain, bare)?
        .map(|(s, path)| duration_from(&path, s, allow_zero))
        .transpose()
}

fn rate_from(path: &str, bps: f64) -> Result<u64, ScenarioError> {
    if !(0.5..=MAX_RATE_BPS).contains(&bps) {
        return err(
            path,
            format!("expected a bit rate of at least 1 bit/s and at most {MAX_RATE_BPS} bit/s, got {bps}"),
        );
    }
    Ok(bps.round() as u64)
}

/// A size in bytes from the plain (string) or `_bytes` (integer) spelling.
fn opt_bytes<K>(
    parent: &str,
    plain: (&str, &Option<UnitText<K>>),
    bare: (&str, Option<u64>),
) -> Result<Option<(u64, String)>, ScenarioError> {
    match (plain.1, bare.1) {
        (Some(_), Some(_)) => err(
            at(parent, bare.0),
            format!("give either {} or {}, not both", plain.0, bare.0),
        ),
        (Some(v), None) => {
            let path = at(parent, plain.0);
            let bytes = v.0.round();
            if !(0.0..=u64::MAX as f64 / 2.0).contains(&bytes) {
                return err(path, format!("expected a size in bytes, got {}", v.0));
            }
            Ok(Some((bytes as u64, path)))
        }
        (None, Some(v)) => Ok(Some((v, at(parent, bare.0)))),
        (None, None) => Ok(None),
    }
}

struct DirParts {
    rate_bps: Option<u64>,
    delay: Option<SimDuration>,
    queue: Option<QueueLimit>,
}

#[allow(clippy::too_many_arguments)]
fn dir_parts(
    parent: &str,
    rate: &Option<UnitText<BitRate>>,
    rate_bps: &Option<Bare>,
    delay: &Option<UnitText<Duration>>,
    delay_s: &Option<Bare>,
    queue: &Option<UnitText<Size>>,
    queue_bytes: Option<u64>,
    queue_pkts: Option<u32>,
) -> Result<DirParts, ScenarioError> {
    let rate_bps = one_of(parent, ("rate", rate), ("rate_bps", rate_bps))?
        .map(|(v, path)| rate_from(&path, v))
        .transpose()?;
    let delay = opt_duration(parent, ("delay", delay), ("delay_s", delay_s), true)?;
    let bytes = opt_bytes(parent, ("queue", queue), ("queue_bytes", queue_bytes))?;
    let queue = match (bytes, queue_pkts) {
        (Some((_, path)), Some(_)) => {
            return err(
                path,
                "give the queue bound either in packets (queue_pkts) or in bytes, not both",
            )
        }
        (Some((b, _)), None) => Some(QueueLimit::Bytes(b)),
        (None, Some(n)) => Some(QueueLimit::Packets(n)),
        (None, None) => None,
    };
    Ok(DirParts {
        rate_bps,
        delay,
        queue,
    })
}

/// A name: non-empty, no control characters.
fn check_name(path: &str, name: &str) -> Result<(), ScenarioError> {
    if name.trim().is_empty() || name.chars().any(char::is_control) {
        return err(
            path,
            format!(
                "expected a non-empty name without control characters, got {}",
                units::py_repr(name)
            ),
        );
    }
    Ok(())
}

fn validate(raw: RawScenario) -> Result<Scenario, ScenarioError> {
    if let Some(v) = raw.schema {
        if v != SCHEMA_VERSION {
            return err(
                "schema",
                format!("this core reads scenario schema {SCHEMA_VERSION}, got {v}"),
            );
        }
    }
    let duration = opt_duration(
        "",
        ("duration", &raw.duration),
        ("duration_s", &raw.duration_s),
        false,
    )?
    .ok_or_else(|| {
        ScenarioError::new(
            "duration",
            "missing: give the simulated stop time as duration (\"100s\") or duration_s",
        )
    })?;

    // Nodes.
    if raw.nodes.is_empty() {
        return err("nodes", "expected at least one node");
    }
    let mut node_index = BTreeMap::new();
    for (i, n) in raw.nodes.iter().enumerate() {
        let path = format!("nodes[{i}]");
        check_name(&path, n)?;
        if node_index.insert(n.as_str(), i).is_some() {
            return err(path, format!("duplicate node name \"{n}\""));
        }
    }
    let node = |path: String, name: &str| -> Result<usize, ScenarioError> {
        node_index
            .get(name)
            .copied()
            .ok_or_else(|| node_err(path, name, &raw.nodes))
    };

    // Links, without loss models yet (those may need the flows' packet sizes).
    struct PendingLink<'r> {
        name: String,
        a: usize,
        b: usize,
        dirs: [(DirParts, Option<&'r RawLoss>, String); 2],
        bundle: Option<BundleSpec>,
        rlp: Option<RlpSpec>,
    }
    let mut pending = Vec::with_capacity(raw.links.len());
    let mut link_index = BTreeMap::new();
    for (i, l) in raw.links.iter().enumerate() {
        let p = format!("links[{i}]");
        let a = node(at(&p, "a"), &l.a)?;
        let b = node(at(&p, "b"), &l.b)?;
        if a == b {
            return err(
                at(&p, "b"),
                format!("a link joins two different nodes, got \"{}\" twice", l.b),
            );
        }
        let name = match &l.name {
            Some(n) => {
                check_name(&at(&p, "name"), n)?;
                n.clone()
            }
            None => format!("{}-{}", l.a, l.b),
        };
        if link_index.insert(name.clone(), i).is_some() {
            return err(
                at(&p, "name"),
                format!("duplicate link name \"{name}\" (give each link a distinct name)"),
            );
        }
        let common = dir_parts(
            &p,
            &l.rate,
            &l.rate_bps,
            &l.delay,
            &l.delay_s,
            &l.queue,
            l.queue_bytes,
            l.queue_pkts,
        )?;
        let bundle = match &l.bundle {
            Some(rb) => {
                // A bundle's rate and delay are its members'.
                for (key, d) in [("", None), ("fwd", l.fwd.as_ref()), ("rev", l.rev.as_ref())] {
                    let (rate, delay) = match d {
                        None => (
                            l.rate.is_some() || l.rate_bps.is_some(),
                            l.delay.is_some() || l.delay_s.is_some(),
                        ),
                        Some(d) => (
                            d.rate.is_some() || d.rate_bps.is_some(),
                            d.delay.is_some() || d.delay_s.is_some(),
                        ),
                    };
                    let parent = if key.is_empty() {
                        p.clone()
                    } else {
                        at(&p, key)
                    };
                    if rate || delay {
                        let field = if rate { "rate" } else { "delay" };
                        return err(
                            at(&parent, field),
                            format!(
                                "a bundle link takes its {field} from its members (bundle.{field} or bundle.members)"
                            ),
                        );
                    }
                }
                Some(bundle_spec(&at(&p, "bundle"), rb)?)
            }
            None => None,
        };
        let rlp = match &l.rlp {
            Some(_) if bundle.is_some() => {
                return err(
                    at(&p, "rlp"),
                    "a link is either a bundle or a radio hop with RLP, not both",
                )
            }
            Some(r) => Some(rlp_spec(&at(&p, "rlp"), r)?),
            None => None,
        };
        let mut dirs = Vec::with_capacity(2);
        for (key, d) in [("fwd", &l.fwd), ("rev", &l.rev)] {
            let dp = at(&p, key);
            let empty = RawDir::default();
            let d = d.as_ref().unwrap_or(&empty);
            let own = dir_parts(
                &dp,
                &d.rate,
                &d.rate_bps,
                &d.delay,
                &d.delay_s,
                &d.queue,
                d.queue_bytes,
                d.queue_pkts,
            )?;
            let rate_bps = own
                .rate_bps
                .or(common.rate_bps)
                .or(bundle.as_ref().map(BundleSpec::capacity_bps));
            let delay = own.delay.or(common.delay).or(bundle
                .as_ref()
                .and_then(|b| b.members.iter().map(|m| m.delay).max()));
            if rate_bps.is_none() {
                return err(
                    at(&dp, "rate"),
                    "missing: give rate (\"1.5Mbps\") or rate_bps on the link or in this direction",
                );
            }
            if delay.is_none() {
                return err(
                    at(&dp, "delay"),
                    "missing: give delay (\"80ms\") or delay_s on the link or in this direction",
                );
            }
            let parts = DirParts {
                rate_bps,
                delay,
                queue: Some(
                    own.queue
                        .or(common.queue)
                        .unwrap_or(QueueLimit::Packets(DEFAULT_QUEUE_PKTS)),
                ),
            };
            let raw_loss = match key {
                "fwd" => l.fwd.as_ref(),
                _ => l.rev.as_ref(),
            }
            .and_then(|x| x.loss.as_ref());
            dirs.push((parts, raw_loss, at(&dp, "loss")));
        }
        let rev = dirs.pop();
        let fwd = dirs.pop();
        let (Some(fwd), Some(rev)) = (fwd, rev) else {
            return err(p, "internal: two directions expected");
        };
        pending.push(PendingLink {
            name,
            a,
            b,
            dirs: [fwd, rev],
            bundle,
            rlp,
        });
    }

    // Adjacency for routing: per node, (link, forward, neighbour) in link order.
    let mut adjacency: Vec<Vec<(usize, bool, usize)>> = vec![Vec::new(); raw.nodes.len()];
    for (i, l) in pending.iter().enumerate() {
        adjacency[l.a].push((i, true, l.b));
        adjacency[l.b].push((i, false, l.a));
    }

    // Flows.
    let mut flows = Vec::with_capacity(raw.flows.len());
    let mut flow_names = BTreeMap::new();
    for (i, f) in raw.flows.iter().enumerate() {
        let p = format!("flows[{i}]");
        let name = match &f.name {
            Some(n) => {
                check_name(&at(&p, "name"), n)?;
                n.clone()
            }
            None => format!("flow{i}"),
        };
        if flow_names.insert(name.clone(), i).is_some() {
            return err(at(&p, "name"), format!("duplicate flow name \"{name}\""));
        }
        let from = node(at(&p, "from"), &f.from)?;
        let to = node(at(&p, "to"), &f.to)?;
        if from == to {
            return err(
                at(&p, "to"),
                format!(
                    "a flow runs between two different nodes, got \"{}\" twice",
                    f.to
                ),
            );
        }
        let path = shortest_path(&adjacency, from, to).ok_or_else(|| {
            ScenarioError::new(
                at(&p, "to"),
                format!(
                    "no route from \"{}\" to \"{}\" over the links given",
                    f.from, f.to
                ),
            )
        })?;
        let start = opt_duration(&p, ("start", &f.start), ("start_s", &f.start_s), true)?
            .unwrap_or(SimDuration::ZERO);
        if start >= duration {
            return err(
                at(&p, "start"),
                format!("the flow starts at {start}, not before the run ends at {duration}"),
            );
        }
        let stop = opt_duration(&p, ("stop", &f.stop), ("stop_s", &f.stop_s), false)?;
        if let Some(stop) = stop {
            if stop <= start {
                return err(
                    at(&p, "stop"),
                    format!("the flow stops at {stop}, not after it starts at {start}"),
                );
            }
        }
        let empty = RawTcp::default();
        let tcp = tcp_spec(&at(&p, "tcp"), f.tcp.as_ref().unwrap_or(&empty))?;
        let app = app_spec(&at(&p, "app"), &f.app)?;
        let (relays, segments, path) =
            split::plan(&p, f, &tcp, from, to, &raw.nodes, &adjacency, path)?;
        flows.push(FlowSpec {
            name,
            from,
            to,
            start: SimTime::ZERO + start,
            stop: stop.map(|s| SimTime::ZERO + s),
            tcp,
            app,
            path,
            relays,
            segments,
        });
    }

    // Loss models, now that the packet sizes on each direction are known.
    let mut links = Vec::with_capacity(pending.len());
    for (i, l) in pending.into_iter().enumerate() {
        let mut specs = Vec::with_capacity(2);
        for (d, (parts, raw_loss, loss_path)) in l.dirs.into_iter().enumerate() {
            let forward = d == 0;
            let (Some(rate_bps), Some(delay), Some(queue)) =
                (parts.rate_bps, parts.delay, parts.queue)
            else {
                return err(format!("links[{i}]"), "internal: direction incomplete");
            };
            let packet_bytes = flows
                .iter()
                .filter_map(|f| f.full_packet_bytes_on(Hop { link: i, forward }))
                .max()
                .unwrap_or(DEFAULT_NOMINAL_PACKET_BYTES);
            // On a bundle the error model decides frames (with ARQ) or units on one member.
            let interval = match &l.bundle {
                Some(b) => {
                    let unit = b.members[0]
                        .arq
                        .map_or(packet_bytes + b.mp_header_bytes, |a| a.frame_bytes);
                    let slowest = b.members.iter().map(|m| m.rate_bps).min().unwrap_or(1);
                    transmission_time(unit, slowest)
                }
                // On a radio hop it decides frame slots.
                None => match &l.rlp {
                    Some(r) => transmission_time(r.frame_bytes, rate_bps),
                    None => transmission_time(packet_bytes, rate_bps),
                },
            };
            let loss = match (raw_loss, l.rlp.and_then(|r| r.channel)) {
                (Some(_), Some(_)) => {
                    return err(
                        loss_path,
                        format!("links[{i}].rlp gives this channel (pe, fd_t); give it once"),
                    )
                }
                (Some(r), None) => loss_spec(&loss_path, r, interval)?,
                (None, Some((pe, fd_t))) => {
                    let spec = LossSpec::MarkovFading(MarkovFadingConfig {
                        frame_error_rate: pe,
                        fd_t,
                        frame: interval,
                    });
                    spec.build(StreamRng::derive(0, "scenario/validate"))
                        .map_err(|e| {
                            let field = if e.param == "frame_error_rate" {
                                "pe"
                            } else {
                                e.param
                            };
                            ScenarioError::new(format!("links[{i}].rlp.{field}"), e.message)
                        })?;
                    spec
                }
                (None, None) => LossSpec::None,
            };
            specs.push(DirectionSpec {
                rate_bps,
                delay,
                queue,
                loss,
            });
        }
        let rev = specs.pop();
        let fwd = specs.pop();
        let (Some(fwd), Some(rev)) = (fwd, rev) else {
            return err(format!("links[{i}]"), "internal: two directions expected");
        };
        if let Some(r) = &l.rlp {
            for d in [&fwd, &rev] {
                r.config(d).validate().map_err(|e| {
                    let field = match e.param {
                        "rate_bps" => "rate".to_owned(),
                        other => format!("rlp.{other}"),
                    };
                    ScenarioError::new(format!("links[{i}].{field}"), e.message)
                })?;
            }
        }
        links.push(LinkSpec {
            name: l.name,
            a: l.a,
            b: l.b,
            fwd,
            rev,
            bundle: l.bundle,
            rlp: l.rlp,
        });
    }

    // lossy_link.
    let lossy_link = match &raw.lossy_link {
        None => None,
        Some(r) => {
            let (link_path, dir_path) = match r.direction {
                None => ("lossy_link".to_owned(), "lossy_link".to_owned()),
                Some(_) => (
                    "lossy_link.link".to_owned(),
                    "lossy_link.direction".to_owned(),
                ),
            };
            let Some(&link) = link_index.get(&r.link) else {
                return err(
                    link_path,
                    format!(
                        "unknown link \"{}\"; expected one of: {}",
                        r.link,
                        link_names(&links)
                    ),
                );
            };
            let forward = match r.direction.as_deref() {
                None | Some("fwd") => true,
                Some("rev") => false,
                Some(other) => {
                    return err(
                        dir_path,
                        format!("unknown direction \"{other}\"; expected one of: fwd, rev"),
                    )
                }
            };
            let carries = |fw: bool| {
                flows
                    .iter()
                    .any(|f| f.path.contains(&Hop { link, forward: fw }))
            };
            if !carries(forward) {
                let (this, other) = if forward {
                    ("fwd", "rev")
                } else {
                    ("rev", "fwd")
                };
                let hint = if carries(!forward) {
                    format!("; the flows' data crosses it in direction {other}")
                } else {
                    String::new()
                };
                return err(
                    dir_path,
                    format!(
                        "direction {this} of link \"{}\" carries no flow's data{hint}",
                        r.link
                    ),
                );
            }
            Some(LossyLink { link, forward })
        }
    };

    // pcap taps.
    let mut pcap_links = Vec::with_capacity(raw.pcap.len());
    for (i, name) in raw.pcap.iter().enumerate() {
        let Some(&link) = link_index.get(name) else {
            return err(
                format!("pcap[{i}]"),
                format!(
                    "unknown link \"{name}\"; expected one of: {}",
                    link_names(&links)
                ),
            );
        };
        if !pcap_links.contains(&link) {
            pcap_links.push(link);
        }
    }

    let empty = RawTrace::default();
    let trace = trace_config(raw.trace.as_ref().unwrap_or(&empty))?;

    Ok(Scenario {
        name: raw.name,
        seed: raw.seed.unwrap_or(1),
        duration,
        nodes: raw.nodes,
        links,
        flows,
        lossy_link,
        trace,
        pcap_links,
    })
}

/// An unknown node's error, naming the nodes there are.
fn node_err(path: String, name: &str, nodes: &[String]) -> ScenarioError {
    ScenarioError::new(
        path,
        format!(
            "unknown node \"{name}\"; expected one of: {}",
            nodes.join(", ")
        ),
    )
}

fn link_names(links: &[LinkSpec]) -> String {
    links
        .iter()
        .map(|l| l.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Fewest hops from `from` to `to`; neighbours are visited in link order, so the first path
/// found among equals is the one through the links listed first.
fn shortest_path(
    adjacency: &[Vec<(usize, bool, usize)>],
    from: usize,
    to: usize,
) -> Option<Vec<Hop>> {
    let mut came_by: Vec<Option<(usize, Hop)>> = vec![None; adjacency.len()];
    let mut seen = vec![false; adjacency.len()];
    let mut frontier = std::collections::VecDeque::new();
    seen[from] = true;
    frontier.push_back(from);
    while let Some(n) = frontier.pop_front() {
        if n == to {
            break;
        }
        for &(link, forward, next) in &adjacency[n] {
            if !seen[next] {
                seen[next] = true;
                came_by[next] = Some((n, Hop { link, forward }));
                frontier.push_back(next);
            }
        }
    }
    if !seen[to] {
        return None;
    }
    let mut path = Vec::new();
    let mut n = to;
    while n != from {
        let (prev, hop) = came_by[n]?;
        path.push(hop);
        n = prev;
    }
    path.reverse();
    Some(path)
}

/// The parameters each loss model takes.
const LOSS_MODELS: &[Variant] = &[
    ("none", &[]),
    ("bernoulli", &["p"]),
    (
        "gilbert_elliott",
        &["mean_burst", "mean_burst_s", "mean_burst_pkts", "rate"],
    ),
    ("gilbert_packets", &["mean_burst_pkts", "rate"]),
    ("markov_fading", &["pe", "fd_t", "frame", "frame_s"]),
    ("lcg16807", &["rate", "seed"]),
    ("drop_list", &["packets"]),
];

fn loss_spec(
    p: &str,
    r: &RawLoss,
    packet_interval: SimDuration,
) -> Result<LossSpec, ScenarioError> {
    let (model, allowed) = variant(p, "model", "loss model", &r.model, LOSS_MODELS)?;
    let given = [
        ("p", r.p.is_some()),
        ("mean_burst", r.mean_burst.is_some()),
        ("mean_burst_s", r.mean_burst_s.is_some()),
        ("mean_burst_pkts", r.mean_burst_pkts.is_some()),
        ("rate", r.rate.is_some()),
        ("pe", r.pe.is_some()),
        ("fd_t", r.fd_t.is_some()),
        ("frame", r.frame.is_some()),
        ("frame_s", r.frame_s.is_some()),
        ("seed", r.seed.is_some()),
        ("packets", r.packets.is_some()),
    ];
    only_its_params(p, "loss model", model, allowed, &given)?;
    let need = |param: &str, v: Option<f64>| -> Result<f64, ScenarioError> {
        v.ok_or_else(|| {
            ScenarioError::new(
                at(p, param),
                format!("missing: loss model \"{model}\" needs {param}"),
            )
        })
    };
    // Map a component's parameter name back to the scenario's field.
    let field = |param: &'static str| -> &'static str {
        match param {
            "loss_rate" | "ler" => "rate",
            "frame_error_rate" => "pe",
            "mean_bad_ns" | "mean_good_ns" => "mean_burst",
            other => other,
        }
    };
    let config_err = |e: ConfigError| ScenarioError::new(at(p, field(e.param)), e.message);
    let spec = match model {
        "none" => LossSpec::None,
        "bernoulli" => LossSpec::Bernoulli { p: need("p", r.p)? },
        "gilbert_elliott" => {
            let rate = need("rate", r.rate)?;
            let time = opt_duration(
                p,
                ("mean_burst", &r.mean_burst),
                ("mean_burst_s", &r.mean_burst_s),
                false,
            )?;
            let cfg = match (time, r.mean_burst_pkts) {
                (Some(_), Some(_)) => {
                    return err(
                        at(p, "mean_burst_pkts"),
                        "give the mean burst either as a duration or in packets, not both",
                    )
                }
                (Some(t), None) => GilbertElliottConfig::from_burst_time(t, rate),
                (None, Some(n)) => GilbertElliottConfig::from_burst_packets(n, rate, packet_interval),
                (None, None) => {
                    return err(
                        at(p, "mean_burst"),
                        "missing: loss model \"gilbert_elliott\" needs mean_burst (a duration, or mean_burst_s) or mean_burst_pkts",
                    )
                }
            }
            .map_err(config_err)?;
            LossSpec::GilbertElliott(cfg)
        }
        "gilbert_packets" => LossSpec::GilbertPackets {
            rate: need("rate", r.rate)?,
            mean_burst_pkts: need("mean_burst_pkts", r.mean_burst_pkts)?,
        },
        "markov_fading" => {
            let frame = opt_duration(p, ("frame", &r.frame), ("frame_s", &r.frame_s), false)?
                .unwrap_or(IS707_FRAME);
            LossSpec::MarkovFading(MarkovFadingConfig {
                frame_error_rate: need("pe", r.pe)?,
                fd_t: need("fd_t", r.fd_t)?,
                frame,
            })
        }
        "lcg16807" => LossSpec::Lcg16807 {
            rate: need("rate", r.rate)?,
            seed: r.seed.unwrap_or(Lcg16807Loss::EMULATOR_SEED),
        },
        "drop_list" => LossSpec::DropList {
            packets: r.packets.clone().ok_or_else(|| {
                ScenarioError::new(
                    at(p, "packets"),
                    "missing: loss model \"drop_list\" needs packets (a list of arrival numbers from 1)",
                )
            })?,
        },
        _ => return err(at(p, "model"), "internal: model listed but not built"),
    };
    // Build once with a throwaway stream: the components check their own domains.
    spec.build(StreamRng::derive(0, "scenario/validate"))
        .map_err(config_err)?;
    Ok(spec)
}

/// An event rate per second from `"1/50min"` or a bare `_per_s` number.
fn opt_event_rate(
    parent: &str,
    plain: (&str, &Option<UnitText<EventRate>>),
    bare: (&str, &Option<Bare>),
) -> Result<Option<f64>, ScenarioError> {
    one_of(parent, plain, bare)?
        .map(|(v, path)| {
            if v.is_finite() && (0.0..=1e6).contains(&v) {
                Ok(v)
            } else {
                err(
                    path,
                    format!("expected a rate of 0 to 1e6 events per second, got {v}"),
                )
            }
        })
        .transpose()
}

fn rlp_spec(p: &str, r: &RawRlp) -> Result<RlpSpec, ScenarioError> {
    let idle = match &r.idle_frames {
        None => IdlePolicy::None,
        Some(RawIdle::Name(n)) if n == "none" => IdlePolicy::None,
        Some(RawIdle::Name(n)) if n == "unlimited" => IdlePolicy::Unlimited,
        Some(RawIdle::Count(n)) => match u32::try_from(*n) {
            Ok(0) => IdlePolicy::None,
            Ok(n) if n <= 1_000_000 => IdlePolicy::Count(n),
            _ => {
                return err(
                    at(p, "idle_frames"),
                    format!("expected at most 1000000 idle frames (or \"unlimited\"), got {n}"),
                )
            }
        },
        Some(RawIdle::Name(n)) => {
            return err(
                at(p, "idle_frames"),
                format!("expected \"none\", \"unlimited\" or a number of idle frames, got \"{n}\""),
            )
        }
    };
    let bytes = |plain: (&str, &Option<UnitText<Size>>),
                 bare: (&str, Option<u64>),
                 default: u32|
     -> Result<u32, ScenarioError> {
        match opt_bytes(p, plain, bare)? {
            None => Ok(default),
            Some((v, path)) => u32::try_from(v)
                .ok()
                .filter(|&v| (1..=65_535).contains(&v))
                .ok_or_else(|| {
                    ScenarioError::new(path, format!("expected 1 to 65535 bytes, got {v}"))
                }),
        }
    };
    let frame_bytes = bytes(
        ("frame", &r.frame),
        ("frame_bytes", r.frame_bytes),
        IS707_FRAME_BYTES,
    )?;
    let payload_bytes = bytes(
        ("payload", &r.payload),
        ("payload_bytes", r.payload_bytes),
        IS707_PAYLOAD_BYTES,
    )?;
    let nak_timer = opt_duration(
        p,
        ("nak_timer", &r.nak_timer),
        ("nak_timer_s", &r.nak_timer_s),
        false,
    )?;
    let channel = match (r.pe, r.fd_t) {
        (Some(pe), Some(fd_t)) => Some((pe, fd_t)),
        (None, None) => None,
        (Some(_), None) => {
            return err(
                at(p, "fd_t"),
                "missing: give the channel's pe and fd_t together",
            )
        }
        (None, Some(_)) => {
            return err(
                at(p, "pe"),
                "missing: give the channel's pe and fd_t together",
            )
        }
    };
    Ok(RlpSpec {
        frame_bytes,
        payload_bytes,
        nak_rounds: r.nak_rounds.unwrap_or(IS707_NAK_ROUNDS),
        nak_timer,
        idle,
        channel,
    })
}

fn bundle_spec(p: &str, b: &RawBundle) -> Result<BundleSpec, ScenarioError> {
    let empty = Vec::new();
    let (count, listed): (u64, &Vec<RawMember>) = match &b.members {
        RawMembers::Count(n) => (*n, &empty),
        RawMembers::List(list) => (list.len() as u64, list),
    };
    if count == 0 || count > u64::from(MAX_MEMBERS) {
        return err(
            at(p, "members"),
            format!("expected 1 to {MAX_MEMBERS} members, got {count}"),
        );
    }
    let rate = one_of(p, ("rate", &b.rate), ("rate_bps", &b.rate_bps))?
        .map(|(v, path)| rate_from(&path, v))
        .transpose()?;
    let delay = opt_duration(p, ("delay", &b.delay), ("delay_s", &b.delay_s), true)?;
    let txqueue = b.txqueue_pkts.unwrap_or(DEFAULT_TXQUEUE_PKTS);
    if txqueue == 0 {
        return err(
            at(p, "txqueue_pkts"),
            "expected a transmit queue of at least 1 packet (the one being sent), got 0",
        );
    }
    let drop_rate = opt_event_rate(
        p,
        ("call_drop_rate", &b.call_drop_rate),
        ("call_drop_rate_per_s", &b.call_drop_rate_per_s),
    )?
    .unwrap_or(0.0);
    let arq = match &b.arq {
        None => None,
        Some(a) => {
            let ap = at(p, "arq");
            let mode = a
                .mode
                .parse::<ArqMode>()
                .map_err(|e| ScenarioError::new(at(&ap, "mode"), e))?;
            let Some((frame, frame_path)) = opt_bytes(
                &ap,
                ("frame", &a.frame),
                ("frame_bytes", a.frame_bytes.map(u64::from)),
            )?
            else {
                return err(
                    at(&ap, "frame"),
                    "missing: give the payload of a frame as frame (\"27B\") or frame_bytes",
                );
            };
            if frame == 0 || frame > 65_535 {
                return err(
                    frame_path,
                    format!("expected a frame payload of 1 to 65535 bytes, got {frame}"),
                );
            }
            Some((
                mode,
                frame as u32,
                a.max_tries.unwrap_or(DEFAULT_ARQ_MAX_TRIES),
                a.window_frames,
                ap,
            ))
        }
    };
    let mut members = Vec::with_capacity(count as usize);
    let mut names = BTreeMap::new();
    for i in 0..count as usize {
        let mp = at(p, &format!("members[{i}]"));
        let default = RawMember::default();
        let m = listed.get(i).unwrap_or(&default);
        let name = match &m.name {
            Some(n) => {
                check_name(&at(&mp, "name"), n)?;
                n.clone()
            }
            None => format!("member{i}"),
        };
        if names.insert(name.clone(), i).is_some() {
            return err(at(&mp, "name"), format!("duplicate member name \"{name}\""));
        }
        let own_rate = one_of(&mp, ("rate", &m.rate), ("rate_bps", &m.rate_bps))?
            .map(|(v, path)| rate_from(&path, v))
            .transpose()?;
        let Some(rate_bps) = own_rate.or(rate) else {
            return err(
                at(p, "rate"),
                format!("missing: give rate (\"2400bps\") or rate_bps here or in members[{i}]"),
            );
        };
        let own_delay = opt_duration(&mp, ("delay", &m.delay), ("delay_s", &m.delay_s), true)?;
        let Some(delay) = own_delay.or(delay) else {
            return err(
                at(p, "delay"),
                format!("missing: give delay (\"0.5s\") or delay_s here or in members[{i}]"),
            );
        };
        let txqueue_pkts = m.txqueue_pkts.unwrap_or(txqueue);
        if txqueue_pkts == 0 {
            return err(
                at(&mp, "txqueue_pkts"),
                "expected a transmit queue of at least 1 packet (the one being sent), got 0",
            );
        }
        let call_drop_rate_per_s = opt_event_rate(
            &mp,
            ("call_drop_rate", &m.call_drop_rate),
            ("call_drop_rate_per_s", &m.call_drop_rate_per_s),
        )?
        .unwrap_or(drop_rate);
        let arq = match &arq {
            None => None,
            Some((mode, frame_bytes, max_tries, window, ap)) => {
                let cfg = ArqConfig {
                    mode: *mode,
                    frame_bytes: *frame_bytes,
                    max_tries: *max_tries,
                    window_frames: window.unwrap_or_else(|| {
                        ArqConfig::default_window(*mode, rate_bps, delay, *frame_bytes, *max_tries)
                    }),
                };
                cfg.validate()
                    .map_err(|e| ScenarioError::new(at(ap, e.param), e.message))?;
                Some(cfg)
            }
        };
        members.push(MemberSpec {
            name,
            rate_bps,
            delay,
            txqueue_pkts,
            call_drop_rate_per_s,
            arq,
        });
    }
    let duration = |plain: (&str, &Option<UnitText<Duration>>),
                    bare: (&str, &Option<Bare>),
                    allow_zero: bool|
     -> Result<Option<SimDuration>, ScenarioError> {
        opt_duration(p, plain, bare, allow_zero)
    };
    let defaults = ModemConfig::default();
    let modem = ModemConfig {
        t_d: duration(("t_d", &b.t_d), ("t_d_s", &b.t_d_s), true)?.unwrap_or(defaults.t_d),
        t_f: duration(("t_f", &b.t_f), ("t_f_s", &b.t_f_s), true)?.unwrap_or(defaults.t_f),
        max_attempts: b.max_attempts.unwrap_or(defaults.max_attempts),
        blocked_for: duration(
            ("blocked_for", &b.blocked_for),
            ("blocked_for_s", &b.blocked_for_s),
            true,
        )?
        .unwrap_or(defaults.blocked_for),
    };
    let start_connected = match b.start.as_deref() {
        None | Some("connected") => true,
        Some("dialing") => false,
        Some(other) => {
            return err(
                at(p, "start"),
                format!("unknown start \"{other}\"; expected one of: connected, dialing"),
            )
        }
    };
    let dial_failure_prob = b.dial_failure_prob.unwrap_or(0.0);
    if !(0.0..=1.0).contains(&dial_failure_prob) {
        return err(
            at(p, "dial_failure_prob"),
            format!("expected a probability in [0, 1], got {dial_failure_prob}"),
        );
    }
    let dials = !start_connected || members.iter().any(|m| m.call_drop_rate_per_s > 0.0);
    // A dial takes time: with none, a modem whose dials always fail would redial forever at
    // one instant.
    let dial = duration(
        ("dial_time", &b.dial_time),
        ("dial_time_s", &b.dial_time_s),
        false,
    )?;
    let dial_time = match dial {
        Some(d) => d,
        None if dials => {
            return err(
                at(p, "dial_time"),
                "missing: members redial (they start dialing or have call drops), so give the \
                 time a dial takes as dial_time (\"15s\") or dial_time_s",
            )
        }
        None => SimDuration::ZERO,
    };
    let mp_header_bytes = match opt_bytes(
        p,
        ("mp_header", &b.mp_header),
        ("mp_header_bytes", b.mp_header_bytes.map(u64::from)),
    )? {
        Some((v, path)) if v > 64 => {
            return err(
                path,
                format!("expected a multilink header of 0 to 64 bytes, got {v}"),
            )
        }
        Some((v, _)) => v as u32,
        None => DEFAULT_MP_HEADER_BYTES,
    };
    Ok(BundleSpec {
        members,
        arq_mode: arq.as_ref().map(|a| a.0),
        fragment: b.fragment.unwrap_or(false),
        mp_header_bytes,
        reassembly_timeout: duration(
            ("reassembly_timeout", &b.reassembly_timeout),
            ("reassembly_timeout_s", &b.reassembly_timeout_s),
            false,
        )?
        .unwrap_or(DEFAULT_REASSEMBLY_TIMEOUT),
        detection_delay: duration(
            ("detection_delay", &b.detection_delay),
            ("detection_delay_s", &b.detection_delay_s),
            true,
        )?
        .unwrap_or(DEFAULT_DETECTION_DELAY),
        dial_time,
        dial_failure_prob,
        modem,
        primary: b.primary.unwrap_or(false),
        start_connected,
    })
}

fn tcp_spec(p: &str, t: &RawTcp) -> Result<TcpSpec, ScenarioError> {
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
        }
    } else {
        if delack_timeout.is_some() {
            return err(
                at(p, "delayed_ack_timeout"),
                "given while delayed_ack is false",
            );
        }
        DelayedAck::Off
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
    .unwrap_or(MIN_RTO);
    let max_rto = opt_duration(
        p,
        ("max_rto", &t.max_rto),
        ("max_rto_s", &t.max_rto_s),
        false,
    )?
    .unwrap_or(MAX_RTO);
    if max_rto < min_rto {
        return err(
            at(p, "max_rto"),
            format!("expected max_rto >= min_rto ({min_rto}), got {max_rto}"),
        );
    }
    let recovery = match &t.recovery {
        None => LossRecovery::default(),
        Some(name) => name
            .parse::<LossRecovery>()
            .map_err(|e| ScenarioError::new(at(p, "recovery"), e.to_string()))?,
    };
    let mut cc = match &t.cc {
        None => CcConfig::default(),
        Some(name) => name
            .parse::<CcConfig>()
            .map_err(|e| ScenarioError::new(at(p, "cc"), e.to_string()))?,
    };
    if let Some(growth) = &t.growth {
        let g = match growth.as_str() {
            "per-ack" => WindowGrowth::PerAck,
            "byte-counting" => WindowGrowth::ByteCounting {
                limit_segments: ABC_LIMIT_SEGMENTS,
            },
            other => {
                return err(
                    at(p, "growth"),
                    format!(
                    "unknown window growth \"{other}\"; expected one of: per-ack, byte-counting"
                ),
                )
            }
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
    let dup_thresh = t.dup_thresh.unwrap_or(DUP_THRESH);
    if dup_thresh == 0 {
        return err(at(p, "dup_thresh"), "expected at least 1, got 0");
    }
    Ok(TcpSpec {
        options,
        initial_window_segments,
        receive_buffer_bytes,
        send_buffer_bytes,
        delayed_ack,
        rtt: RttConfig {
            initial_rto,
            min_rto,
            max_rto,
            clock_granularity: CLOCK_GRANULARITY,
        },
        recovery,
        cc,
        dup_thresh,
        limited_transmit: t.limited_transmit.unwrap_or(true),
        handshake: t.handshake.unwrap_or(false),
    })
}

const APP_KINDS: &[Variant] = &[
    ("bulk", &["size", "size_bytes"]),
    ("unbounded", &[]),
    (
        "telnet",
        &[
            "mean_interval",
            "mean_interval_s",
            "message",
            "message_bytes",
        ],
    ),
];

fn app_spec(p: &str, a: &RawApp) -> Result<AppSpec, ScenarioError> {
    let (kind, allowed) = variant(p, "kind", "application kind", &a.kind, APP_KINDS)?;
    let given = [
        ("size", a.size.is_some()),
        ("size_bytes", a.size_bytes.is_some()),
        ("mean_interval", a.mean_interval.is_some()),
        ("mean_interval_s", a.mean_interval_s.is_some()),
        ("message", a.message.is_some()),
        ("message_bytes", a.message_bytes.is_some()),
    ];
    only_its_params(p, "application", kind, allowed, &given)?;
    Ok(match kind {
        "bulk" => {
            let Some((size_bytes, path)) =
                opt_bytes(p, ("size", &a.size), ("size_bytes", a.size_bytes))?
            else {
                return err(
                    at(p, "size"),
                    "missing: a bulk application needs size (\"1MB\") or size_bytes",
                );
            };
            if size_bytes == 0 {
                return err(path, "expected a positive size, got 0 bytes");
            }
            AppSpec::Bulk { size_bytes }
        }
        "unbounded" => AppSpec::Unbounded,
        _ => {
            let Some(mean_interval) = opt_duration(
                p,
                ("mean_interval", &a.mean_interval),
                ("mean_interval_s", &a.mean_interval_s),
                false,
            )?
            else {
                return err(
                    at(p, "mean_interval"),
                    "missing: a telnet application needs mean_interval (\"1s\") or mean_interval_s",
                );
            };
            let message_bytes = match opt_bytes(
                p,
                ("message", &a.message),
                ("message_bytes", a.message_bytes.map(u64::from)),
            )? {
                Some((v, path)) => {
                    if v == 0 || v > u64::from(u32::MAX) {
                        return err(path, format!("expected 1 to {} bytes, got {v}", u32::MAX));
                    }
                    v as u32
                }
                None => DEFAULT_TELNET_MESSAGE_BYTES,
            };
            AppSpec::Telnet {
                mean_interval,
                message_bytes,
            }
        }
    })
}

fn trace_config(t: &RawTrace) -> Result<TraceConfig, ScenarioError> {
    let all = t.all.unwrap_or(false);
    let goodput_interval = opt_duration(
        "trace",
        ("goodput_interval", &t.goodput_interval),
        ("goodput_interval_s", &t.goodput_interval_s),
        false,
    )?
    .unwrap_or(DEFAULT_GOODPUT_INTERVAL);
    Ok(TraceConfig {
        cwnd: t.cwnd.unwrap_or(all),
        seq: t.seq.unwrap_or(all),
        ack: t.ack.unwrap_or(all),
        rtt: t.rtt.unwrap_or(all),
        rto: t.rto.unwrap_or(all),
        queue: t.queue.unwrap_or(all),
        drops: t.drops.unwrap_or(all),
        goodput: t.goodput.unwrap_or(all),
        member_state: t.member_state.unwrap_or(all),
        capacity: t.capacity.unwrap_or(all),
        goodput_interval,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"{
        "duration": "10s",
        "nodes": ["S", "D"],
        "links": [{"a": "S", "b": "D", "rate": "1Mbps", "delay": "10ms"}],
        "flows": [{"from": "S", "to": "D", "app": {"kind": "unbounded"}}]
    }"#;

    #[test]
    fn minimal_scenario_gets_defaults() {
        let s = parse_scenario_json(MINIMAL).unwrap();
        assert_eq!(s.seed(), 1);
        assert_eq!(s.duration(), SimDuration::from_secs(10));
        let l = &s.links()[0];
        assert_eq!(l.name, "S-D");
        assert_eq!(l.fwd.rate_bps, 1_000_000);
        assert_eq!(l.rev.delay, SimDuration::from_millis(10));
        assert_eq!(l.fwd.queue, QueueLimit::Packets(DEFAULT_QUEUE_PKTS));
        assert_eq!(l.fwd.loss, LossSpec::None);
        let f = &s.flows()[0];
        assert_eq!(f.name, "flow0");
        assert_eq!(
            f.path,
            vec![Hop {
                link: 0,
                forward: true
            }]
        );
        assert_eq!(f.tcp.options, TcpOptions::default());
        assert_eq!(f.tcp.rtt.max_rto, SimDuration::from_secs(64));
        assert_eq!(f.tcp.recovery, LossRecovery::Sack);
        assert_eq!(s.trace(), &TraceConfig::default());
    }

    #[test]
    fn unknown_field_that_cannot_be_a_path_is_reported_at_its_object() {
        let with_key = |key: &str| {
            let mut v: serde_json::Value = serde_json::from_str(MINIMAL).unwrap();
            v["links"][0][key] = serde_json::json!(1);
            parse_scenario_json(&v.to_string()).unwrap_err()
        };
        // A plain unknown name is part of the path, as before.
        assert_eq!(with_key("colour").path, "links[0].colour");
        // Names that would make a malformed or misleading path are not.
        for key in ["", "a.b", "fwd[0]", "x]", "two words", "line\nbreak", "7"] {
            let e = with_key(key);
            assert_eq!(e.path, "links[0]", "key {key:?}");
            assert!(e.message.contains("unknown field"), "{e}");
        }
        let e = parse_scenario_json(r#"{"": 1, "duration": "1s"}"#).unwrap_err();
        assert_eq!(e.path, "");
        assert!(e.message.starts_with("unknown field ``"), "{e}");
    }

    #[test]
    fn shortest_path_prefers_fewer_hops_then_the_first_link() {
        // A - B - C and a direct A - C listed last: the direct link wins on hops.
        let adj = {
            let links = [(0usize, 1usize), (1, 2), (0, 2), (0, 2)];
            let mut adj = vec![Vec::new(); 3];
            for (i, &(a, b)) in links.iter().enumerate() {
                adj[a].push((i, true, b));
                adj[b].push((i, false, a));
            }
            adj
        };
        assert_eq!(
            shortest_path(&adj, 0, 2),
            Some(vec![Hop {
                link: 2,
                forward: true
            }])
        );
        assert_eq!(
            shortest_path(&adj, 2, 1),
            Some(vec![Hop {
                link: 1,
                forward: false
            }])
        );
    }
}
