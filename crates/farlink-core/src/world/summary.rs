//! The summary of a run: what the front end prints, stores and compares across engines.
//!
//! Plain serialisable values, built once at the end of a run. Rates are bit/s, times seconds,
//! sizes bytes; maps of drops are keyed by the cause names of [`crate::links::link::DROP_CAUSE_NAMES`]
//! and always hold every cause (zero included), so their keys never depend on the run.
//!
//! Both engines fill the same [`FlowSummary`] and [`AggregateSummary`] from their own
//! measurements, with the same arithmetic ([`goodput_bps`], [`normalized_goodput`],
//! [`ActiveSpan`], [`AggregateSummary::of`]): the simulator's world from its senders and links,
//! the emulator from the kernel's `TCP_INFO` and its links. A figure one engine cannot measure
//! is an `Option` (`null`): the simulator always knows it.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::apps::metrics::{jain_index, TrafficSummary};
use crate::links::link::{DROP_CAUSE_NAMES, N_DROP_CAUSES};
use crate::links::mlppp::ControlStats;
use crate::scenario::{Hop, Scenario};
use crate::tcp::limits::Limit;

/// The version of this summary's shape; bump on any change of field meaning.
pub const SUMMARY_SCHEMA_VERSION: u32 = 1;

/// Per flow, aggregate and per link results of one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub schema_version: u32,
    /// `farlink_core::VERSION` that produced it.
    pub core_version: String,
    pub scenario_name: Option<String>,
    pub seed: u64,
    /// Simulated time at which the run ended: the scenario's duration, or earlier once every
    /// flow had finished.
    pub sim_time_s: f64,
    /// Events popped from the event queue (stale timer events included).
    pub events: u64,
    /// Every flow finished (see [`FlowSummary::finished`]).
    pub all_finished: bool,
    /// The run stopped before its end (interrupted, or over its budget) and says why and
    /// when; everything here is up to that instant. Absent for a run that ran its course.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partial: Option<String>,
    pub aggregate: AggregateSummary,
    pub flows: Vec<FlowSummary>,
    pub links: Vec<LinkSummary>,
    /// The link direction `--loss` overrides, if the scenario names one.
    pub lossy_link: Option<LossyLinkSummary>,
}

/// One flow.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlowSummary {
    pub name: String,
    pub from: String,
    pub to: String,
    /// `bulk`, `unbounded` or `telnet`.
    pub app: &'static str,
    pub start_s: f64,
    /// The application stopped writing and every byte it wrote reached the receiving
    /// application (a bulk flow: its whole size).
    pub finished: bool,
    /// When the last byte reached the receiving application, once finished.
    pub finish_s: Option<f64>,
    /// `finish_s - start_s`; `None` while unfinished.
    pub transfer_time_s: Option<f64>,
    /// Bytes handed to the receiving application, each once and in order.
    pub delivered_bytes: u64,
    /// Bytes the sending application wrote; `None` for an unbounded source still writing.
    pub app_bytes: Option<u64>,
    /// `delivered_bytes * 8` over the flow's active time: from its start to its finish when
    /// finished (to its stop, if later, for unbounded and telnet sources), else to the end of
    /// the run.
    pub goodput_bps: f64,
    /// The slowest link direction on the flow's data path.
    pub bottleneck_bps: u64,
    /// `goodput_bps / bottleneck_bps`. Goodput counts payload only, so headers keep it below 1
    /// (at most MSS / (MSS + 40)).
    pub normalized_goodput: f64,
    /// Data segments sent, retransmissions included (emulate: `tcpi_data_segs_out`, `None` on
    /// kernels without it).
    pub segments_sent: Option<u64>,
    pub bytes_sent: Option<u64>,
    /// Data segments retransmitted (by any mechanism).
    pub retransmissions: u64,
    pub retransmitted_bytes: Option<u64>,
    /// Retransmission timer expiries.
    pub timeouts: u64,
    /// Entries into loss recovery on duplicate ACKs or SACK (emulate: the sender namespace's
    /// counters, `None` where flows share the namespace).
    pub fast_retransmits: Option<u64>,
    /// Zero-window probes the sender's persist timer sent (the receiver's window was closed
    /// and a window update may have been lost); `None` where the kernel sent.
    pub window_probes: Option<u64>,
    /// Data segments that reached the receiver (duplicates included).
    pub data_segments_delivered: u64,
    /// ACKs the receiver sent, and how many reached the sender (`None`: not counted).
    pub acks_sent: u64,
    pub acks_delivered: Option<u64>,
    /// Packets of this flow (data and ACKs) dropped, by cause.
    pub drops: BTreeMap<String, u64>,
    /// With `tcp.ecn` on: the flow's data packets that reached the receiver marked CE, and
    /// the reductions its sender made for ECN echoes (`tcp/ecn.rs`); absent when ECN is off,
    /// so results without it are as before it existed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ce_marked: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecn_reductions: Option<u64>,
    /// The sender's state at the end of the run (`None`: never sampled).
    pub final_cwnd_bytes: Option<u64>,
    pub final_srtt_s: Option<f64>,
    pub final_rto_s: Option<f64>,
    pub min_rtt_s: Option<f64>,
    /// Seconds the sender spent held back by each cause, every cause present (zero
    /// included): `application` (nothing to send), `receive_window` (the peer's window),
    /// `send_buffer`, `congestion_window` (the controller's window or pacing rate), `link` (a
    /// window or the pacing rate while the RTT shows a standing queue at the bottleneck).
    /// Counted by the sender from its first transmission to the end of the flow's active
    /// time (that of `goodput_bps`); the handshake is not counted. `tcp/limits.rs`. emulate:
    /// from the kernel's chronographs, `link` `None` (the kernel does not tell a standing queue
    /// from its window), the whole `None` without chronographs.
    pub limited_s: Option<BTreeMap<String, Option<f64>>>,
    /// The cause of `limited_s` with the most time; `None` if none was counted.
    pub limited_by: Option<String>,
    /// The simulated three-way handshake (`tcp.handshake`); absent when the connection
    /// started established.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handshake: Option<HandshakeSummary>,
    /// A flow split at relays: the relays, in path order; empty otherwise.
    pub relays: Vec<RelaySummary>,
    /// A flow split at relays: each TCP connection on its own, source to destination (named
    /// `name#k`); empty otherwise. The flow's own figures are then end to end: start, finish
    /// and delivered bytes at the flow's ends, counters summed over the connections, the
    /// sender state (`final_*`, `min_rtt_s`) that of the source's connection.
    pub segments: Vec<FlowSummary>,
    /// A Multipath TCP flow: each bundle member's subflows (`world/mptcp.rs`); absent for TCP,
    /// so results without one are as before.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subflows: Vec<super::SubflowSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mptcp: Option<super::MptcpSummary>,
    /// A UDP flow's or a short-flow class's own figures (`crate::apps::metrics`), at the
    /// flow's level beside the others; nothing for a TCP application.
    #[serde(flatten)]
    pub traffic: Option<TrafficSummary>,
}

impl FlowSummary {
    /// Scenario flow `i`'s summary with nothing measured yet: its names, application and start,
    /// its bottleneck, every count zero, every figure an engine may lack `None`. Each engine
    /// fills in what it measured (a UDP flow's or a short-flow class's, in the simulator and
    /// the emulator alike).
    pub fn unmeasured(sc: &Scenario, i: usize, bottleneck_bps: u64) -> FlowSummary {
        let f = &sc.flows()[i];
        let nodes = sc.nodes();
        FlowSummary {
            name: f.name.clone(),
            from: nodes[f.from].clone(),
            to: nodes[f.to].clone(),
            app: f.app.kind(),
            start_s: f.start.as_secs_f64(),
            finished: false,
            finish_s: None,
            transfer_time_s: None,
            delivered_bytes: 0,
            app_bytes: None,
            goodput_bps: 0.0,
            bottleneck_bps,
            normalized_goodput: normalized_goodput(0.0, bottleneck_bps),
            segments_sent: None,
            bytes_sent: None,
            retransmissions: 0,
            retransmitted_bytes: None,
            timeouts: 0,
            fast_retransmits: None,
            window_probes: None,
            data_segments_delivered: 0,
            acks_sent: 0,
            acks_delivered: None,
            drops: cause_map([0; N_DROP_CAUSES]),
            final_cwnd_bytes: None,
            final_srtt_s: None,
            final_rto_s: None,
            min_rtt_s: None,
            limited_s: None,
            limited_by: None,
            handshake: None,
            relays: Vec::new(),
            segments: Vec::new(),
            ce_marked: None,
            ecn_reductions: None,
            subflows: Vec::new(),
            mptcp: None,
            traffic: None,
        }
    }
}

/// The three-way handshake of a connection (of the source's connection for a split flow).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HandshakeSummary {
    /// Connection set-up time: from the flow's start to the SYN-ACK's arrival at the sender
    /// (one round trip without loss); `None` if it never arrived. The transfer time includes
    /// it.
    pub setup_time_s: Option<f64>,
    /// SYNs the sender sent (retransmissions included) and how many were retransmissions.
    pub syn_sent: u64,
    pub syn_retransmissions: u64,
    /// SYN-ACKs the receiver sent (retransmissions included) and how many were
    /// retransmissions, on its timer or answering a repeated SYN.
    pub syn_acks_sent: u64,
    pub syn_ack_retransmissions: u64,
    /// Pure ACKs the sender sent to answer a SYN-ACK (when no data could carry the ACK).
    pub handshake_acks_sent: u64,
}

/// A split-connection relay of a flow.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RelaySummary {
    pub node: String,
    /// Bytes the relay may hold between its connections.
    pub buffer_bytes: u64,
    /// Bytes it read from the incoming connection and wrote into the outgoing one.
    pub relayed_bytes: u64,
    /// The most it held at once (read and not yet acknowledged downstream).
    pub max_held_bytes: u64,
    /// The most in-order bytes waiting unread in its incoming receive buffer at once: these
    /// shrink the window it advertises upstream (back-pressure).
    pub max_unread_bytes: u64,
    /// Unsolicited window updates its receiver sent upstream after reading.
    pub window_updates: u64,
}

/// All flows together.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AggregateSummary {
    pub delivered_bytes: u64,
    /// Total delivered bytes * 8 over the span from the earliest start to the latest end of
    /// any flow's active time.
    pub goodput_bps: f64,
    /// The capacity the flows together can use: the sum of the rates of the distinct link
    /// directions that are some flow's bottleneck (the slowest direction on its data path).
    /// Flows sharing a bottleneck count it once (a dumbbell: the shared link's rate); flows on
    /// separate paths add their bottlenecks. `None` without flows.
    pub bottleneck_bps: Option<u64>,
    /// `goodput_bps / bottleneck_bps`: at most 1 (below it by the headers), since every
    /// flow's bytes cross its bottleneck within the span.
    pub normalized_goodput: Option<f64>,
    pub retransmissions: u64,
    pub timeouts: u64,
    /// All flows' entries into fast recovery; `None` where an engine could not count some.
    pub fast_retransmits: Option<u64>,
    pub data_segments_delivered: u64,
    /// Every packet dropped on any link, by cause.
    pub drops: BTreeMap<String, u64>,
    /// Jain's fairness index of the long-lived flows' (`bulk`, `unbounded`) goodputs; absent
    /// with fewer than two.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jain_index: Option<f64>,
}

impl AggregateSummary {
    /// All flows together: their sums, and the delivered bytes over `span`, the activity of
    /// all flows. `fast_retransmits` is the engine's total (the emulator counts per namespace,
    /// which need not be the flows' sum); `drops` every link's, by cause.
    pub fn of<'a>(
        sc: &Scenario,
        flows: impl IntoIterator<Item = &'a FlowSummary>,
        span: ActiveSpan,
        fast_retransmits: Option<u64>,
        drops: [u64; N_DROP_CAUSES],
    ) -> AggregateSummary {
        let mut sums = AggregateSummary {
            delivered_bytes: 0,
            goodput_bps: 0.0,
            bottleneck_bps: aggregate_capacity_bps(sc),
            normalized_goodput: None,
            retransmissions: 0,
            timeouts: 0,
            fast_retransmits,
            data_segments_delivered: 0,
            drops: cause_map(drops),
            jain_index: None,
        };
        let mut long_lived = Vec::new();
        for f in flows {
            if matches!(f.app, "bulk" | "unbounded") {
                long_lived.push(f.goodput_bps);
            }
            sums.delivered_bytes += f.delivered_bytes;
            sums.retransmissions += f.retransmissions;
            sums.timeouts += f.timeouts;
            sums.data_segments_delivered += f.data_segments_delivered;
        }
        sums.jain_index = jain_index(&long_lived);
        sums.goodput_bps = goodput_bps(sums.delivered_bytes, span.nanos());
        sums.normalized_goodput = sums
            .bottleneck_bps
            .filter(|&b| b > 0)
            .map(|b| sums.goodput_bps / b as f64);
        sums
    }
}

/// From the earliest start to the latest end of the flows' activity, in ns of the engine's
/// clock; empty until a flow started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ActiveSpan(Option<(u64, u64)>);

impl ActiveSpan {
    /// Widens the span to hold a flow active from `start_ns` to `end_ns`.
    pub fn include(&mut self, start_ns: u64, end_ns: u64) {
        self.0 = Some(self.0.map_or((start_ns, end_ns), |(a, b)| {
            (a.min(start_ns), b.max(end_ns))
        }));
    }

    /// Its length, ns (zero while empty).
    pub fn nanos(self) -> u64 {
        self.0.map_or(0, |(a, b)| b.saturating_sub(a))
    }
}

/// `delivered_bytes * 8` over an active time of `active_ns`; zero without one.
pub fn goodput_bps(delivered_bytes: u64, active_ns: u64) -> f64 {
    if active_ns > 0 {
        delivered_bytes as f64 * 8.0 / (active_ns as f64 / 1e9)
    } else {
        0.0
    }
}

/// Goodput over the bottleneck's rate; zero without a bottleneck.
pub fn normalized_goodput(goodput_bps: f64, bottleneck_bps: u64) -> f64 {
    if bottleneck_bps > 0 {
        goodput_bps / bottleneck_bps as f64
    } else {
        0.0
    }
}

/// The rate of the slowest direction on a flow's data path (zero for an empty path).
pub fn flow_bottleneck_bps(sc: &Scenario, path: &[Hop]) -> u64 {
    path.iter()
        .map(|h| sc.links()[h.link].direction(h.forward).rate.bps())
        .min()
        .unwrap_or(0)
}

/// One link, both directions.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkSummary {
    pub name: String,
    pub a: String,
    pub b: String,
    pub fwd: DirectionSummary,
    pub rev: DirectionSummary,
    /// For a bundle link: its members' calls and what each direction did with them.
    pub bundle: Option<BundleSummary>,
    /// For a radio hop with IS-707 RLP: the frames of each direction.
    pub rlp: Option<RlpSummary>,
}

/// A radio hop with IS-707 RLP (seed 004 section II), both directions.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RlpSummary {
    /// `none`, `unlimited` or the number of idle frames after the last data frame.
    pub idle_frames: String,
    pub nak_rounds: u32,
    pub nak_timer_s: f64,
    pub fwd: RlpDirectionSummary,
    pub rev: RlpDirectionSummary,
}

/// One direction of a radio hop: its data frames, and the NAKs its receiver sent back over the
/// other direction's channel.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RlpDirectionSummary {
    /// Data frames sent for the first time, and again after a NAK.
    pub data_frames_sent: u64,
    pub frames_resent: u64,
    /// Data frames (first or repeat) the channel damaged.
    pub frames_damaged: u64,
    /// Idle frames sent (in every slot the policy allows one); those that could tell the
    /// receiver something were drawn against the channel, and some of those damaged.
    pub idle_frames_sent: u64,
    pub idle_frames_drawn: u64,
    pub idle_frames_damaged: u64,
    pub nak_frames_sent: u64,
    pub nak_frames_lost: u64,
    /// Frames noticed missing from a later data frame, and from an idle frame.
    pub missing_by_data: u64,
    pub missing_by_idle: u64,
    /// Frames given up after the last NAK round, and packets lost with them.
    pub frames_given_up: u64,
    pub packets_given_up: u64,
    /// Busy slots (data frames, first or repeat) over all slots of the run.
    pub slot_utilization: f64,
}

/// A bundle link (seed 000 chapters 3, 5 and 7). Fractions are of the run's simulated time and
/// count a member as up while MLPPP may use it (connected, or dropped but not yet noticed), as
/// the KUMICS logs of seed 000 Figure 7.14 and seed 001 slides 17–19 do.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BundleSummary {
    pub members: Vec<String>,
    pub primary: bool,
    /// `go-back-n`, `selective-repeat`, or `None` without ARQ.
    pub arq: Option<&'static str>,
    pub fragment: bool,
    /// Its keys sit beside the others in the JSON.
    #[serde(flatten)]
    pub calls: BundleCalls,
    /// Times the bundle lost its last usable member.
    pub outages: u64,
    pub all_up_fraction: f64,
    pub any_up_fraction: f64,
    pub mean_members_up: f64,
    /// Per member, the fraction of the run it was up.
    pub member_uptime: Vec<f64>,
    pub fwd: BundleDirectionSummary,
    pub rev: BundleDirectionSummary,
}

/// What happened to a bundle's calls: the simulator's bundle summary and the emulator's
/// report both carry these keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct BundleCalls {
    /// Calls lost (the Poisson call drops of members whose call was up).
    pub call_drops: u64,
    /// Call drops the supervisor noticed (after the detection delay) while the member was
    /// still connected.
    pub drops_noticed: u64,
    /// Secondaries hung up because their primary's call dropped.
    pub hangups: u64,
    /// Bundles torn down by the loss of their primary.
    pub teardowns: u64,
    pub dials: u64,
    pub dial_failures: u64,
    /// Entries into the blocked state.
    pub blocks: u64,
}

impl From<ControlStats> for BundleCalls {
    fn from(stats: ControlStats) -> Self {
        BundleCalls {
            call_drops: stats.call_drops,
            drops_noticed: stats.supervisor.call_drops,
            hangups: stats.hangups,
            teardowns: stats.supervisor.teardowns,
            dials: stats.supervisor.dials,
            dial_failures: stats.supervisor.dial_failures,
            blocks: stats.supervisor.blocks,
        }
    }
}

/// What one direction of a bundle did with its units (packets or fragments).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BundleDirectionSummary {
    /// Units handed to members, units that arrived, and units lost by cause.
    pub units_sent: u64,
    pub units_arrived: u64,
    pub units_lost: BTreeMap<String, u64>,
    /// Units clocked into a call that had dropped unnoticed.
    pub units_into_the_void: u64,
    /// Packets sent as several fragments.
    pub fragmented_pkts: u64,
    /// Units that arrived after their packet was handed up or given up.
    pub late_units: u64,
    /// Packets given up by the reassembly timer (the rest by sequence numbers).
    pub reassembly_timeouts: u64,
    /// ARQ frames over all members: sent (repeats included), repeats, received damaged,
    /// given up.
    pub arq_frames_sent: u64,
    pub arq_frames_resent: u64,
    pub arq_frames_damaged: u64,
    pub arq_frames_given_up: u64,
}

/// One direction of a link.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DirectionSummary {
    pub rate_bps: u64,
    pub delay_s: f64,
    pub loss_model: &'static str,
    pub analytic_loss_rate: f64,
    pub offered_pkts: u64,
    pub delivered_pkts: u64,
    pub delivered_bytes: u64,
    pub drops: BTreeMap<String, u64>,
    /// Packets the queue's AQM marked CE instead of dropping them.
    pub ce_marked: u64,
    /// Delivered bits over the rate times the run's simulated time.
    pub utilization: f64,
    pub max_queue_pkts: u64,
    pub max_queue_bytes: u64,
    /// Packets still inside the link (queued, serializing or propagating) at the end.
    pub in_flight_pkts: u64,
}

/// The link direction whose loss `--loss` overrides.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LossyLinkSummary {
    pub link: String,
    /// `fwd` or `rev`.
    pub direction: &'static str,
    pub loss_model: &'static str,
    pub analytic_loss_rate: f64,
}

/// `limited_s` and `limited_by` of a [`FlowSummary`] from a sender's nanoseconds per cause
/// (in [`Limit::ALL`]'s order). Ties go to the cause listed first.
pub fn limit_fields(nanos: [u64; 5]) -> (BTreeMap<String, Option<f64>>, Option<String>) {
    let seconds = Limit::ALL
        .iter()
        .zip(nanos)
        .map(|(l, ns)| (l.name().to_owned(), Some(ns as f64 / 1e9)))
        .collect();
    let most = Limit::ALL.iter().zip(nanos).filter(|&(_, ns)| ns > 0).fold(
        None,
        |best: Option<(Limit, u64)>, (&l, ns)| match best {
            Some((_, b)) if b >= ns => best,
            _ => Some((l, ns)),
        },
    );
    (seconds, most.map(|(l, _)| l.name().to_owned()))
}

/// A count per drop cause as the summary's map: every cause's name, zero included.
pub fn cause_map(counts: [u64; N_DROP_CAUSES]) -> BTreeMap<String, u64> {
    DROP_CAUSE_NAMES
        .iter()
        .zip(counts)
        .map(|(name, n)| ((*name).to_owned(), n))
        .collect()
}

/// The rate all flows together can have at most: the sum of the rates of the distinct link
/// directions that are some flow's bottleneck (the slowest direction on its data path, the
/// first of equals). Flows sharing a bottleneck share its rate (a dumbbell: that link's
/// rate); flows on separate paths add theirs. Every flow's bytes cross its bottleneck, so the
/// aggregate goodput over this is at most 1. `None` without flows.
pub fn aggregate_capacity_bps(sc: &Scenario) -> Option<u64> {
    let mut bottlenecks: Vec<Hop> = Vec::new();
    for f in sc.flows() {
        let rate = |h: &Hop| sc.links()[h.link].direction(h.forward).rate;
        let mut slowest: Option<Hop> = None;
        for h in &f.path {
            if slowest.is_none_or(|s| rate(h) < rate(&s)) {
                slowest = Some(*h);
            }
        }
        if let Some(h) = slowest {
            if !bottlenecks.contains(&h) {
                bottlenecks.push(h);
            }
        }
    }
    (!sc.flows().is_empty()).then(|| {
        bottlenecks
            .iter()
            .map(|h| sc.links()[h.link].direction(h.forward).rate.bps())
            .sum()
    })
}
