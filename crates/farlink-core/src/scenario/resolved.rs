//! The resolved scenario: a validated [`Scenario`] written out with every default filled, for
//! the engines and programs that do not run the simulator (the closed-form models, the sweep's
//! model column, `farlink scenario show`, `farlink predict SCENARIO`). Whatever the core decided
//! (link names, routes, TCP defaults, the rate of a bundle, a loss model's mean rate) is read
//! here and never derived again downstream.
//!
//! # Format (`resolved_schema_version` 1)
//!
//! JSON, quantities in base units named by suffix (`_bps`, `_s`, `_bytes`, `_pkts`). Fields a
//! scenario can set keep the scenario's names (`links[0].fwd.delay_s`, `flows[0].tcp.mss_bytes`);
//! fields the core derives are listed in [`DERIVED_FIELDS`]. `defaults` lists the path of every
//! settable field the document did not give, in the grammar of `--set` paths
//! (`flows[0].tcp.min_rto_s`); a value taken from an enclosing table (a direction's rate from
//! its link, a member's from its bundle, a segment's TCP from its flow, a trace from
//! `trace.all`) counts as given. Documented field by field in `docs/scenarios.md`
//! ("The resolved scenario"). `from_profile` lists, in the same grammar, the fields a TCP
//! profile set (`scenario/profile.rs`); `defaults` does not list them.
//!
//! # Definitions
//!
//! * **`loss_rate`** of a link direction: the long-run mean loss probability of its loss model
//!   per unit it decides (Bernoulli `p`; the stationary rate of `gilbert_elliott` and
//!   `gilbert_packets`; `pe` of `markov_fading`; the threshold rate of `lcg16807`; 0 for
//!   `none` and `drop_list`). The unit (`loss_unit`) is the packet on a plain link, a frame slot
//!   on a radio hop, and on a bundle an ARQ frame (with ARQ) or a packet with its multilink
//!   header.
//! * **`packet_loss_rate`**: the probability that a full-sized packet (`packet_bytes`: the
//!   largest data packet of the flows crossing the direction, else 1500 bytes) is lost after
//!   link-layer recovery, with unit losses taken independent at `loss_rate` (bursty models lose
//!   more after ARQ than this): on a plain link or a bundle without ARQ, `loss_rate`; on a
//!   bundle with ARQ, `1 - (1 - q^max_tries)^n` for `n` frames per packet (its multilink header
//!   included); on a radio hop, `1 - (1 - q s^(R(R+1)/2))^n` for `n` frames per packet, `R` NAK
//!   rounds and `s = q' + (1 - q') q` the chance that a NAK round's retransmission fails
//!   (`q'` the reverse channel's loss rate, which loses NAKs). Call drops are not in it: a
//!   bundle gives `call_drop_rate_per_s` per member.
//! * **`base_rtt_s`** of a flow: the round trip of one full-sized segment and its ACK on an
//!   idle path: the propagation delay of every hop of the data path and of the ACK path, plus
//!   the transmission of one full-sized data packet (MSS + 40 bytes) on every data hop and of
//!   one pure ACK (40 bytes, + 12 with timestamps) on every ACK hop. A packet crosses a plain
//!   link at the direction's rate (with a token bucket, full on an idle path, at its peak rate,
//!   in no time without one), a bundle on one member (the slowest, with its multilink
//!   header) and a radio hop in whole frame slots. Queueing, delayed ACKs and link-layer
//!   retransmission are not in it. The parts are in `rtt`.
//! * **`bottleneck_bps`** of a flow: the smallest rate of the directions its data crosses (a
//!   bundle's rate is the sum of its members'; a token bucket's, its token rate).

use serde::Serialize;
use serde_json::Value;

use super::links::DirectionSpec;
use super::routes::Hop;
use super::trace::{Tap, TapSite};
use super::{
    AppSpec, FlowSpec, LinkSpec, LossSpec, Scenario, Shutdown, TcpSpec, Transport, SCHEMA_VERSION,
};
use crate::links::link::QueueLimit;
use crate::links::rlp::IdlePolicy;
use crate::links::schedule::{DelayShape, Schedule};
use crate::tcp::cc::{CcConfig, WindowGrowth};
use crate::tcp::ecn::EcnMode;
use crate::tcp::receiver::DelayedAck;
use crate::tcp::segment::{IPV4_HEADER_BYTES, TCP_HEADER_BYTES, TIMESTAMPS_OPTION_BYTES};
use crate::tcp::Negotiated;
use crate::time::SimDuration;

/// The version of the resolved scenario's format.
pub const RESOLVED_SCHEMA_VERSION: u32 = 1;

/// Fields the core derives; `defaults` never lists them.
pub const DERIVED_FIELDS: &[&str] = &[
    "resolved_schema_version",
    "scenario_schema",
    "defaults",
    "from_profile",
    "link_type",
    "index",
    "loss_rate",
    "loss_unit",
    "packet_loss_rate",
    "packet_bytes",
    "route",
    "rtt",
    "base_rtt_s",
    "bottleneck_bps",
    "bottleneck_link",
    "payload_bytes",
    "data_packet_bytes",
    "ack_packet_bytes",
    "capacity_bps",
    "segments",
    "schedule",
    "rate_trace",
];

/// The resolved scenario (see the module's documentation).
#[derive(Debug, Serialize)]
pub struct Resolved {
    pub resolved_schema_version: u32,
    pub scenario_schema: u32,
    pub name: Option<String>,
    pub seed: u64,
    pub duration_s: f64,
    pub nodes: Vec<String>,
    pub links: Vec<RLink>,
    pub flows: Vec<RFlow>,
    pub lossy_link: Option<RLossyLink>,
    pub trace: RTrace,
    /// The taps as a scenario writes them: a link's name, `{link, at}` or `{node}`.
    pub pcap: Vec<Value>,
    pub defaults: Vec<String>,
    /// The settable fields a TCP profile set (`flows[0].tcp.profile = "linux"`), in the grammar
    /// of `defaults`, which then does not list them; absent where none did.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub from_profile: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct RLink {
    pub index: usize,
    pub name: String,
    pub a: String,
    pub b: String,
    /// `"link"`, `"bundle"` or `"rlp"`.
    pub link_type: &'static str,
    pub fwd: RDirection,
    pub rev: RDirection,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bundle: Option<RBundle>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rlp: Option<RRlp>,
}

#[derive(Debug, Serialize)]
pub struct RDirection {
    /// On a bundle, the sum of its members' rates.
    pub rate_bps: u64,
    /// On a bundle, the largest member delay.
    pub delay_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_pkts: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
    /// A token bucket's depth; absent without a bucket (then `rate_bps` is a serializer's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burst_bytes: Option<u64>,
    /// A token bucket's peak rate; absent without a bucket or without a peak.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_rate_bps: Option<u64>,
    /// The queue's discipline; absent for drop-tail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_discipline: Option<&'static str>,
    /// Its parameters, every default filled; absent for drop-tail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aqm: Option<Value>,
    pub loss: Value,
    pub loss_rate: f64,
    pub loss_unit: &'static str,
    pub packet_bytes: u32,
    pub packet_loss_rate: f64,
    /// A schedule's outline; absent without one (`links/schedule.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<RSchedule>,
    /// A mahimahi trace's outline; absent without one (then `rate_bps` is its mean).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_trace: Option<RRateTrace>,
}

/// What a direction's schedule holds, in short: its rows, its cycle, what an outage does, and
/// the range of its rates and delays.
#[derive(Debug, Serialize)]
pub struct RSchedule {
    pub rows: usize,
    /// The period it repeats with; null if it does not.
    pub period_s: Option<f64>,
    pub down: &'static str,
    pub interpolate_delay: bool,
    pub min_rate_bps: u64,
    pub max_rate_bps: u64,
    pub min_delay_s: f64,
    pub max_delay_s: f64,
    /// Rows in which the direction is down.
    pub down_rows: usize,
}

/// A mahimahi trace in short.
#[derive(Debug, Serialize)]
pub struct RRateTrace {
    pub opportunities: usize,
    /// The last timestamp, the period it repeats with.
    pub period_ms: u64,
}

fn schedule_outline(s: &Schedule) -> RSchedule {
    let rows = s.rows();
    let (rates, delays) = (
        rows.iter().map(|r| r.rate.bps()),
        rows.iter().map(|r| r.delay),
    );
    RSchedule {
        rows: rows.len(),
        period_s: s.repeats().then(|| rows.last().map_or(0.0, |r| secs(r.at))),
        down: s.down_policy().name(),
        interpolate_delay: s.delay_shape() == DelayShape::Linear,
        min_rate_bps: rates.clone().min().unwrap_or(0),
        max_rate_bps: rates.max().unwrap_or(0),
        min_delay_s: delays.clone().min().map_or(0.0, secs),
        max_delay_s: delays.max().map_or(0.0, secs),
        down_rows: rows.iter().filter(|r| !r.up).count(),
    }
}

#[derive(Debug, Serialize)]
pub struct RBundle {
    /// The sum of the members' rates.
    pub capacity_bps: u64,
    pub members: Vec<RMember>,
    pub fragment: bool,
    pub mp_header_bytes: u32,
    pub reassembly_timeout_s: f64,
    pub detection_delay_s: f64,
    pub dial_time_s: f64,
    pub dial_failure_prob: f64,
    pub t_d_s: f64,
    pub t_f_s: f64,
    pub max_attempts: u32,
    pub blocked_for_s: f64,
    pub primary: bool,
    pub start: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arq: Option<RArq>,
}

#[derive(Debug, Serialize)]
pub struct RMember {
    pub name: String,
    pub rate_bps: u64,
    pub delay_s: f64,
    pub txqueue_pkts: u32,
    pub call_drop_rate_per_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_frames: Option<u32>,
}

#[derive(Debug, Serialize)]
pub struct RArq {
    pub mode: &'static str,
    pub frame_bytes: u32,
    pub max_tries: u32,
}

#[derive(Debug, Serialize)]
pub struct RRlp {
    pub frame_bytes: u32,
    pub payload_bytes: u32,
    pub nak_rounds: u32,
    /// Per direction when not given (it follows from each direction's slot and delay).
    pub nak_timer_s: Option<f64>,
    pub idle_frames: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pe: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fd_t: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct RHop {
    pub link: String,
    pub index: usize,
    pub direction: &'static str,
}

#[derive(Debug, Serialize)]
pub struct RRoute {
    pub data: Vec<RHop>,
    /// The data path reversed, through the same links.
    pub ack: Vec<RHop>,
}

#[derive(Debug, Serialize)]
pub struct RRtt {
    pub propagation_s: f64,
    pub data_transmission_s: f64,
    pub ack_transmission_s: f64,
}

#[derive(Debug, Serialize)]
pub struct RFlow {
    pub name: String,
    pub from: String,
    pub to: String,
    pub start_s: f64,
    pub stop_s: Option<f64>,
    pub app: Value,
    pub tcp: RTcp,
    pub route: RRoute,
    pub relays: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relay_buffer_bytes: Option<u64>,
    pub segments: Vec<RSegment>,
    pub base_rtt_s: f64,
    pub rtt: RRtt,
    pub bottleneck_bps: u64,
    pub bottleneck_link: String,
    /// `mptcp` for a Multipath TCP flow; absent for TCP, so resolved scenarios without one
    /// (and their hashes) are as before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mptcp: Option<Value>,
}

#[derive(Debug, Serialize)]
pub struct RSegment {
    pub from: String,
    pub to: String,
    pub tcp: RTcp,
    pub route: RRoute,
}

#[derive(Debug, Serialize)]
pub struct RTcp {
    /// The TCP profile; printed only where not `rfc`, so resolved scenarios without one (and
    /// their hashes) are as before profiles existed.
    #[serde(skip_serializing_if = "str::is_empty")]
    pub profile: &'static str,
    pub mss_bytes: u32,
    /// SMSS: the payload of a full-sized segment (the MSS less 12 bytes with timestamps).
    pub payload_bytes: u32,
    /// On the wire: the MSS and 40 bytes of IPv4 and TCP headers.
    pub data_packet_bytes: u32,
    /// A pure ACK on the wire (40 bytes, + 12 with timestamps; SACK blocks not counted).
    pub ack_packet_bytes: u32,
    pub initial_window_segments: u32,
    pub receive_buffer_bytes: u64,
    /// `null`: unbounded.
    pub send_buffer_bytes: Option<u64>,
    pub window_scaling: bool,
    pub sack: bool,
    pub timestamps: bool,
    pub delayed_ack: bool,
    pub delayed_ack_timeout_s: Option<f64>,
    /// Linux's quick-ACK mode; printed only where on, so resolved scenarios without it (and
    /// their hashes) are as before it existed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub quick_ack: bool,
    pub initial_rto_s: f64,
    pub min_rto_s: f64,
    pub max_rto_s: f64,
    pub rto: &'static str,
    pub recovery: &'static str,
    pub cwnd_reduction: &'static str,
    pub cc: &'static str,
    pub growth: &'static str,
    /// `false` where a controller that has fast convergence runs without it; printed only
    /// then, so resolved scenarios without it (and their hashes) are as before it existed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fast_convergence: Option<bool>,
    pub dup_thresh: u32,
    pub limited_transmit: bool,
    pub handshake: bool,
    /// A number, or `"window"`: no count, the receive window bounds the out-of-order data.
    pub max_ooo_ranges: Value,
    /// `true` or `"accurate"`; printed only where on, so resolved scenarios without it (and
    /// their hashes) are as before it existed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecn: Option<Value>,
}

#[derive(Debug, Serialize)]
pub struct RLossyLink {
    pub link: String,
    pub index: usize,
    pub direction: &'static str,
}

#[derive(Debug, Serialize)]
pub struct RTrace {
    pub cwnd: bool,
    pub seq: bool,
    pub ack: bool,
    pub rtt: bool,
    pub rto: bool,
    pub queue: bool,
    pub drops: bool,
    pub goodput: bool,
    pub member_state: bool,
    pub capacity: bool,
    /// Written only when on, so that a resolved scenario without them reads as before.
    #[serde(skip_serializing_if = "is_false")]
    pub queue_delay: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub aqm: bool,
    pub goodput_interval_s: f64,
}

fn is_false(on: &bool) -> bool {
    !*on
}

fn secs(d: SimDuration) -> f64 {
    d.as_secs_f64()
}

fn direction_name(forward: bool) -> &'static str {
    if forward {
        "fwd"
    } else {
        "rev"
    }
}

impl Resolved {
    /// `scenario` written out; `input` is the document it was read from (for `defaults`).
    pub fn new(s: &Scenario, input: &Value) -> Resolved {
        let links: Vec<RLink> = s
            .links
            .iter()
            .enumerate()
            .map(|(i, l)| link(s, i, l))
            .collect();
        let flows = s.flows.iter().map(|f| flow(s, f)).collect();
        let t = &s.trace;
        let mut resolved = Resolved {
            resolved_schema_version: RESOLVED_SCHEMA_VERSION,
            scenario_schema: SCHEMA_VERSION,
            name: s.name.clone(),
            seed: s.seed,
            duration_s: secs(s.duration),
            nodes: s.nodes.clone(),
            links,
            flows,
            lossy_link: s.lossy_link.as_ref().map(|l| RLossyLink {
                link: s.links[l.link].name.clone(),
                index: l.link,
                direction: direction_name(l.forward),
            }),
            trace: RTrace {
                cwnd: t.cwnd,
                seq: t.seq,
                ack: t.ack,
                rtt: t.rtt,
                rto: t.rto,
                queue: t.queue,
                drops: t.drops,
                goodput: t.goodput,
                member_state: t.member_state,
                capacity: t.capacity,
                queue_delay: t.queue_delay,
                aqm: t.aqm,
                goodput_interval_s: secs(t.goodput_interval),
            },
            pcap: s.pcap.iter().map(|t| tap_value(s, t)).collect(),
            defaults: Vec::new(),
            from_profile: Vec::new(),
        };
        if let Ok(value) = serde_json::to_value(&resolved) {
            let origins = super::defaults::origins(input, &value, DERIVED_FIELDS);
            resolved.defaults = origins.defaults;
            resolved.from_profile = origins.from_profile;
        }
        resolved
    }
}

fn link(s: &Scenario, i: usize, l: &LinkSpec) -> RLink {
    let link_type = if l.bundle.is_some() {
        "bundle"
    } else if l.rlp.is_some() {
        "rlp"
    } else {
        "link"
    };
    let bundle = l.bundle.as_ref().map(|b| RBundle {
        capacity_bps: b.capacity().bps(),
        members: b
            .members
            .iter()
            .map(|m| RMember {
                name: m.name.clone(),
                rate_bps: m.rate.bps(),
                delay_s: secs(m.delay),
                txqueue_pkts: m.txqueue_pkts,
                call_drop_rate_per_s: m.call_drop_rate_per_s,
                window_frames: m.arq.map(|a| a.window_frames),
            })
            .collect(),
        fragment: b.fragment,
        mp_header_bytes: b.mp_header_bytes,
        reassembly_timeout_s: secs(b.reassembly_timeout),
        detection_delay_s: secs(b.detection_delay),
        dial_time_s: secs(b.dial_time),
        dial_failure_prob: b.dial_failure_prob,
        t_d_s: secs(b.modem.t_d),
        t_f_s: secs(b.modem.t_f),
        max_attempts: b.modem.max_attempts,
        blocked_for_s: secs(b.modem.blocked_for),
        primary: b.primary,
        start: if b.start_connected {
            "connected"
        } else {
            "dialing"
        },
        arq: b.members[0].arq.map(|a| RArq {
            mode: a.mode.name(),
            frame_bytes: a.frame_bytes,
            max_tries: a.max_tries,
        }),
    });
    let rlp = l.rlp.map(|r| RRlp {
        frame_bytes: r.frame_bytes,
        payload_bytes: r.payload_bytes,
        nak_rounds: r.nak_rounds,
        nak_timer_s: r.nak_timer.map(secs),
        idle_frames: match r.idle {
            IdlePolicy::None => Value::from("none"),
            IdlePolicy::Unlimited => Value::from("unlimited"),
            IdlePolicy::Count(n) => Value::from(n),
        },
        pe: r.channel.map(|c| c.0),
        fd_t: r.channel.map(|c| c.1),
    });
    RLink {
        index: i,
        name: l.name.clone(),
        a: s.nodes[l.a].clone(),
        b: s.nodes[l.b].clone(),
        link_type,
        fwd: direction(s, i, l, true),
        rev: direction(s, i, l, false),
        bundle,
        rlp,
    }
}

/// The largest full-sized data packet crossing `hop`, or the nominal packet.
fn packet_bytes_on(s: &Scenario, hop: Hop) -> u32 {
    s.flows
        .iter()
        .filter_map(|f| f.full_packet_bytes_on(hop))
        .max()
        .unwrap_or(super::DEFAULT_NOMINAL_PACKET_BYTES)
}

fn direction(s: &Scenario, i: usize, l: &LinkSpec, forward: bool) -> RDirection {
    let d = l.direction(forward);
    let packet_bytes = packet_bytes_on(s, Hop { link: i, forward });
    let q = d.loss.analytic_loss_rate();
    let (loss_unit, packet_loss_rate) = match (&l.bundle, &l.rlp) {
        (Some(b), _) => match b.members[0].arq {
            Some(a) => {
                let frames = (packet_bytes + b.mp_header_bytes).div_ceil(a.frame_bytes);
                let frame_lost = q.powi(a.max_tries as i32);
                ("frame", 1.0 - (1.0 - frame_lost).powi(frames as i32))
            }
            None => ("packet", q),
        },
        (None, Some(r)) => {
            let q_nak = l.direction(!forward).loss.analytic_loss_rate();
            let round_fails = q_nak + (1.0 - q_nak) * q;
            let rounds = r.nak_rounds as i32;
            let frame_lost = q * round_fails.powi(rounds * (rounds + 1) / 2);
            let frames = packet_bytes.div_ceil(r.payload_bytes);
            ("frame", 1.0 - (1.0 - frame_lost).powi(frames as i32))
        }
        (None, None) => ("packet", q),
    };
    let discipline = super::aqm::resolved(&d.discipline);
    let (queue_pkts, queue_bytes) = match d.queue {
        QueueLimit::Packets(n) => (Some(n), None),
        QueueLimit::Bytes(n) => (None, Some(n)),
    };
    RDirection {
        rate_bps: d.rate.bps(),
        delay_s: secs(d.delay),
        queue_pkts,
        queue_bytes,
        burst_bytes: d.bucket.map(|b| b.burst_bytes),
        peak_rate_bps: d.bucket.and_then(|b| b.peak).map(|p| p.bps()),
        queue_discipline: discipline.as_ref().map(|x| x.0),
        aqm: discipline.map(|x| x.1),
        loss: loss_value(&d.loss),
        loss_rate: q,
        loss_unit,
        packet_bytes,
        packet_loss_rate,
        schedule: d.schedule.as_ref().map(schedule_outline),
        rate_trace: d.rate_trace.as_ref().map(|t| RRateTrace {
            opportunities: t.opportunities_ms().len(),
            period_ms: t.opportunities_ms().last().copied().unwrap_or(0),
        }),
    }
}

/// A loss model in the scenario's own spelling, every parameter filled.
fn loss_value(loss: &LossSpec) -> Value {
    use serde_json::json;
    match loss {
        LossSpec::None => json!({"model": "none"}),
        LossSpec::Bernoulli { p } => json!({"model": "bernoulli", "p": p}),
        LossSpec::GilbertElliott(c) => json!({
            "model": "gilbert_elliott",
            "rate": loss.analytic_loss_rate(),
            "mean_burst_s": c.mean_bad_ns / 1e9,
        }),
        LossSpec::GilbertPackets {
            rate,
            mean_burst_pkts,
        } => json!({"model": "gilbert_packets", "rate": rate, "mean_burst_pkts": mean_burst_pkts}),
        LossSpec::MarkovFading(c) => json!({
            "model": "markov_fading",
            "pe": c.frame_error_rate,
            "fd_t": c.fd_t,
            "frame_s": secs(c.frame),
        }),
        LossSpec::Lcg16807 { rate, seed } => {
            json!({"model": "lcg16807", "rate": rate, "seed": seed})
        }
        LossSpec::DropList { packets } => json!({"model": "drop_list", "packets": packets}),
    }
}

fn route(s: &Scenario, path: &[Hop]) -> RRoute {
    let hop = |h: &Hop| RHop {
        link: s.links[h.link].name.clone(),
        index: h.link,
        direction: direction_name(h.forward),
    };
    RRoute {
        data: path.iter().map(hop).collect(),
        ack: path.iter().rev().map(|h| hop(&h.reversed())).collect(),
    }
}

/// Seconds to put `bytes` on direction `hop`: at its rate; on a bundle on the slowest member
/// with the multilink header; on a radio hop in whole frame slots.
fn transmission_s(s: &Scenario, hop: Hop, bytes: u32) -> f64 {
    let l = &s.links[hop.link];
    let d: &DirectionSpec = l.direction(hop.forward);
    let (bits, rate) = match (&l.bundle, &l.rlp) {
        (Some(b), _) => {
            let slowest = b.members.iter().map(|m| m.rate.bps()).min().unwrap_or(1);
            (u64::from(bytes + b.mp_header_bytes) * 8, slowest)
        }
        (None, Some(r)) => (
            u64::from(bytes.div_ceil(r.payload_bytes) * r.frame_bytes) * 8,
            d.rate.bps(),
        ),
        (None, None) => match d.bucket {
            // On an idle path the bucket is full: the packet leaves at the peak rate.
            Some(b) => match b.peak {
                Some(peak) => (u64::from(bytes) * 8, peak.bps()),
                None => return 0.0,
            },
            None => (u64::from(bytes) * 8, d.rate.bps()),
        },
    };
    bits as f64 / rate as f64
}

fn ack_packet_bytes(t: &TcpSpec) -> u32 {
    IPV4_HEADER_BYTES
        + TCP_HEADER_BYTES
        + if t.options.timestamps {
            TIMESTAMPS_OPTION_BYTES
        } else {
            0
        }
}

/// `Some(false)` where the controller has fast convergence and runs without it.
fn fast_convergence_off(cc: &CcConfig) -> Option<bool> {
    let on = match cc {
        CcConfig::Cubic(c) => c.fast_convergence,
        CcConfig::CubicLinux(c) => c.fast_convergence,
        CcConfig::Bic(c) => c.fast_convergence,
        _ => true,
    };
    (!on).then_some(false)
}

fn tcp(t: &TcpSpec) -> RTcp {
    let (delayed_ack, delayed_ack_timeout_s) = match t.delayed_ack {
        DelayedAck::Off => (false, None),
        DelayedAck::On { timeout, .. } => (true, Some(secs(timeout))),
    };
    let quick_ack = matches!(
        t.delayed_ack,
        DelayedAck::On {
            quick_ack: true,
            ..
        }
    );
    let growth = match t.cc {
        CcConfig::Reno(r) => match r.growth {
            WindowGrowth::PerAck => "per-ack",
            WindowGrowth::ByteCounting { .. } => "byte-counting",
        },
        _ => "per-ack",
    };
    RTcp {
        profile: if t.profile.is_rfc() {
            ""
        } else {
            t.profile.name()
        },
        mss_bytes: t.options.mss_bytes,
        payload_bytes: Negotiated::without_handshake(
            &t.options,
            &t.options,
            t.receive_buffer_bytes,
        )
        .smss_bytes(),
        data_packet_bytes: t.full_packet_bytes(),
        ack_packet_bytes: ack_packet_bytes(t),
        initial_window_segments: t.initial_window_segments,
        receive_buffer_bytes: t.receive_buffer_bytes,
        send_buffer_bytes: t.send_buffer_bytes,
        window_scaling: t.options.window_scaling,
        sack: t.options.sack,
        timestamps: t.options.timestamps,
        delayed_ack,
        delayed_ack_timeout_s,
        quick_ack,
        initial_rto_s: secs(t.rtt.initial_rto),
        min_rto_s: secs(t.rtt.min_rto),
        max_rto_s: secs(t.rtt.max_rto),
        rto: t.rtt.rule.name(),
        recovery: t.recovery.name(),
        cwnd_reduction: t.window_reduction.name(),
        cc: t.cc.name(),
        growth,
        fast_convergence: fast_convergence_off(&t.cc),
        dup_thresh: t.dup_thresh,
        limited_transmit: t.limited_transmit,
        handshake: t.handshake,
        max_ooo_ranges: t
            .max_ooo_ranges
            .map_or_else(|| Value::from("window"), Value::from),
        ecn: match t.ecn {
            EcnMode::Off => None,
            EcnMode::Classic => Some(Value::Bool(true)),
            EcnMode::Accurate => Some(Value::from("accurate")),
        },
    }
}

fn app(a: &AppSpec, shutdown: Shutdown) -> Value {
    use serde_json::json;
    match *a {
        // The default shutdown is left out, so that every scenario before the key resolves
        // (and hashes) as it did.
        AppSpec::Bulk { size_bytes } if shutdown != Shutdown::Written => json!({
            "kind": "bulk",
            "size_bytes": size_bytes,
            "shutdown": shutdown.name(),
        }),
        AppSpec::Bulk { size_bytes } => json!({"kind": "bulk", "size_bytes": size_bytes}),
        AppSpec::Unbounded => json!({"kind": "unbounded"}),
        AppSpec::Telnet {
            mean_interval,
            message_bytes,
        } => json!({
            "kind": "telnet",
            "mean_interval_s": secs(mean_interval),
            "message_bytes": message_bytes,
        }),
        AppSpec::Udp(ref u) => crate::apps::resolved_udp(a.kind(), u),
        AppSpec::FlowsPoisson(ref f) => crate::apps::resolved_poisson(f),
        AppSpec::RequestResponse(ref c) => crate::apps::resolved_request_response(c),
    }
}

fn flow(s: &Scenario, f: &FlowSpec) -> RFlow {
    // The path's packets: each hop carries the data packet of the connection crossing it.
    let data_bytes = |h: Hop| {
        f.full_packet_bytes_on(h)
            .unwrap_or(f.tcp.full_packet_bytes())
    };
    let ack_bytes = ack_packet_bytes(&f.tcp);
    let mut rtt = RRtt {
        propagation_s: 0.0,
        data_transmission_s: 0.0,
        ack_transmission_s: 0.0,
    };
    for &h in &f.path {
        let back = h.reversed();
        let l = &s.links[h.link];
        rtt.propagation_s +=
            secs(l.direction(h.forward).delay) + secs(l.direction(back.forward).delay);
        rtt.data_transmission_s += transmission_s(s, h, data_bytes(h));
        rtt.ack_transmission_s += transmission_s(s, back, ack_bytes);
    }
    let (bottleneck_bps, bottleneck_link) = f
        .path
        .iter()
        .map(|h| {
            let l = &s.links[h.link];
            (l.direction(h.forward).rate.bps(), l.name.clone())
        })
        .min_by_key(|(rate, _)| *rate)
        .unwrap_or((0, String::new()));
    RFlow {
        name: f.name.clone(),
        from: s.nodes[f.from].clone(),
        to: s.nodes[f.to].clone(),
        start_s: f.start.as_secs_f64(),
        stop_s: f.stop.map(|t| t.as_secs_f64()),
        app: app(&f.app, f.shutdown),
        tcp: tcp(&f.tcp),
        route: route(s, &f.path),
        relays: f.relays.iter().map(|r| s.nodes[r.node].clone()).collect(),
        relay_buffer_bytes: f.relays.first().map(|r| r.buffer_bytes),
        segments: f
            .segments
            .iter()
            .map(|g| RSegment {
                from: s.nodes[g.from].clone(),
                to: s.nodes[g.to].clone(),
                tcp: tcp(&g.tcp),
                route: route(s, &g.path),
            })
            .collect(),
        base_rtt_s: rtt.propagation_s + rtt.data_transmission_s + rtt.ack_transmission_s,
        rtt,
        bottleneck_bps,
        bottleneck_link,
        transport: matches!(f.transport, Transport::Mptcp(_)).then_some("mptcp"),
        mptcp: match f.transport {
            Transport::Mptcp(m) => {
                let mut doc = serde_json::json!({
                    "scheduler": m.scheduler.name(),
                    "coupling": m.coupling.name(),
                    "retransmit_timer": m.retransmit_timer,
                    "keep_first_subflow": m.keep_first_subflow,
                    "bundle_link": s.links[f.path[m.bundle_hop].link].name,
                });
                // Only when not the default, so that the resolved scenario of every run that
                // does not set them stays as it was.
                let default = crate::mptcp::linux::CloseResends::default_for(m.scheduler);
                if m.close_resends != default {
                    doc["close_resends"] = Value::from(m.close_resends.name());
                }
                if m.stale_loss_count != super::mptcp::DEFAULT_STALE_LOSS_COUNT {
                    doc["stale_loss_count"] = Value::from(m.stale_loss_count);
                }
                Some(doc)
            }
            Transport::Tcp => None,
        },
    }
}

/// A tap written back the way a scenario spells it.
fn tap_value(s: &Scenario, tap: &Tap) -> Value {
    match tap.site {
        TapSite::Link { link } => Value::from(s.links[link].name.clone()),
        TapSite::LinkEnd { link, at_b } => serde_json::json!({
            "link": s.links[link].name,
            "at": if at_b { "b" } else { "a" },
        }),
        TapSite::Node { node } => serde_json::json!({ "node": s.nodes[node] }),
    }
}
