//! Columnar traces of a run and the packet taps for pcap.
//!
//! This module owns the *shape* of what a run records: each trace is a struct of `Vec`s (a time
//! column in nanoseconds and value columns of plain integers or booleans), so the bindings can
//! hand every column over as a NumPy array and a results store can write it as Parquet without
//! reshaping. The engine ([`crate::world`]) decides *when* to record: on change, never on every
//! tick; a trace that is switched off is never touched and stays empty.
//!
//! Rows are in simulated-time order within each flow (or link direction). Flows are numbered
//! by their position in the scenario's `flows`, links by their position in `links`, and
//! `forward` is the link's `a -> b` direction.
//!
//! Packet taps ([`TapRecord`]) hold a copy of every segment a tap of the scenario's `pcap`
//! sees leave a link's queue for the wire or arrive at a link's end; `crate::pcap` turns them
//! into a capture per tap.

use serde::Serialize;

use crate::links::link::{drop_cause_code, DropCause};
use crate::scenario::{LinkSpec, Tap, TapSite};
use crate::tcp::segment::Segment;
use crate::time::SimTime;

/// The congestion window of each flow, whenever the controller's window, ssthresh or the
/// window the sender actually uses (with Reno/NewReno fast-recovery inflation) changes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CwndTrace {
    pub time_ns: Vec<u64>,
    pub flow: Vec<u32>,
    /// The controller's `cwnd`.
    pub cwnd_bytes: Vec<u64>,
    /// `ssthresh`; `u64::MAX` until the first reduction (RFC 5681 "arbitrarily high").
    pub ssthresh_bytes: Vec<u64>,
    /// The window sent against: `cwnd` plus fast-recovery inflation.
    pub effective_cwnd_bytes: Vec<u64>,
}

/// Every data segment a sender hands to the network (zero-window probes included; the SYN and
/// the pure ACK of a simulated handshake are not data and not here).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SeqTrace {
    pub time_ns: Vec<u64>,
    pub flow: Vec<u32>,
    /// Sequence number of the first payload byte (from 0, unwrapped).
    pub seq: Vec<u64>,
    pub len_bytes: Vec<u32>,
    pub retransmission: Vec<bool>,
}

/// The cumulative acknowledgement (`SND.UNA`) of each sender, whenever it advances.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AckTrace {
    pub time_ns: Vec<u64>,
    pub flow: Vec<u32>,
    pub ack: Vec<u64>,
}

/// Every RTT sample a sender takes, with the smoothed RTT after it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RttTrace {
    pub time_ns: Vec<u64>,
    pub flow: Vec<u32>,
    pub rtt_ns: Vec<u64>,
    pub srtt_ns: Vec<u64>,
}

/// The retransmission timeout of each sender, whenever it changes (samples and backoff).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RtoTrace {
    pub time_ns: Vec<u64>,
    pub flow: Vec<u32>,
    pub rto_ns: Vec<u64>,
}

/// Occupancy of each link direction's queue (packets waiting, not the one being serialized),
/// whenever it changes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct QueueTrace {
    pub time_ns: Vec<u64>,
    pub link: Vec<u32>,
    pub forward: Vec<bool>,
    pub pkts: Vec<u32>,
    pub bytes: Vec<u64>,
}

/// Every packet leaving a link direction's queue, with its wait there: the time between
/// joining the queue and leaving it, for every queue discipline. `link` and `forward` name the
/// queue, the one a discipline runs in that direction: a plain link's, left for the serializer
/// (zero for a packet that found it idle); a bundle's MLPPP queue, left for a member's transmit
/// queue (zero for a packet a member took at once); a radio hop's, left as RLP sends the
/// packet's first frame.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct QueueDelayTrace {
    pub time_ns: Vec<u64>,
    pub link: Vec<u32>,
    pub forward: Vec<bool>,
    pub sojourn_ns: Vec<u64>,
}

/// Names of the events of [`AqmTrace::event`], by code ([`crate::links::queue::AqmEvent`]).
pub const AQM_EVENT_NAMES: [&str; 5] = crate::links::queue::AqmEvent::NAMES;

/// Every change of a link direction's AQM control state (the queue of [`QueueDelayTrace`]'s
/// rows, whatever the kind of link): CoDel's dropping state entered and
/// left (and each of FQ-CoDel's flow queues'), PIE's drop probability at an update that changed
/// it, RED's average queue at an arrival that changed it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AqmTrace {
    pub time_ns: Vec<u64>,
    pub link: Vec<u32>,
    pub forward: Vec<bool>,
    /// FQ-CoDel's flow queue; 0 for the single-queue disciplines.
    pub queue: Vec<u32>,
    /// A code of [`AQM_EVENT_NAMES`].
    pub event: Vec<u8>,
    /// CoDel's drop count, PIE's drop probability, or RED's average queue in packets.
    pub value: Vec<f64>,
}

/// Every packet dropped, with where, whose and why.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DropTrace {
    pub time_ns: Vec<u64>,
    pub link: Vec<u32>,
    pub forward: Vec<bool>,
    pub flow: Vec<u32>,
    /// The packet was an ACK (travelling receiver -> sender) rather than data.
    pub ack_packet: Vec<bool>,
    /// The data segment's sequence number, or the ACK's acknowledgement number.
    pub seq: Vec<u64>,
    /// The packet was a SYN (`ack_packet` false) or a SYN-ACK (`ack_packet` true) of a
    /// simulated handshake; its `seq` is then 0.
    pub syn: Vec<bool>,
    /// A code of [`crate::links::link::DROP_CAUSE_NAMES`] ([`crate::links::link::DROP_CAUSE_QUEUE_OVERFLOW`], ...).
    pub cause: Vec<u8>,
}

/// Bytes delivered to each receiving application, cumulative, at every multiple of the
/// scenario's `goodput_interval` from the flow's start (first sample at the first multiple at
/// or after it) to the end of the run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GoodputTrace {
    pub time_ns: Vec<u64>,
    pub flow: Vec<u32>,
    pub delivered_bytes: Vec<u64>,
}

/// Names of the member states of [`MemberStateTrace::state`], by code
/// ([`crate::links::mlppp::MemberState`]): the modem states of seed 000 Figure 7.2, `idle` for a
/// secondary waiting for its primary, and `call_lost` between a call drop and the moment it is
/// noticed.
pub const MEMBER_STATE_NAMES: [&str; 7] = crate::links::mlppp::MemberState::NAMES;

/// Every state change of every bundle member (both directions of a member share one call).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MemberStateTrace {
    pub time_ns: Vec<u64>,
    pub link: Vec<u32>,
    /// Index of the member in the bundle.
    pub member: Vec<u32>,
    /// A code of [`MEMBER_STATE_NAMES`].
    pub state: Vec<u8>,
}

/// The capacity of each bundle whenever the set of members MLPPP may use changes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CapacityTrace {
    pub time_ns: Vec<u64>,
    pub link: Vec<u32>,
    pub members_up: Vec<u32>,
    /// The sum of the rates of those members, in each direction.
    pub capacity_bps: Vec<u64>,
}

/// All traces of a run; those switched off are empty.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Traces {
    pub cwnd: CwndTrace,
    pub seq: SeqTrace,
    pub ack: AckTrace,
    pub rtt: RttTrace,
    pub rto: RtoTrace,
    pub queue: QueueTrace,
    pub drops: DropTrace,
    pub goodput: GoodputTrace,
    pub member_state: MemberStateTrace,
    pub capacity: CapacityTrace,
    pub queue_delay: QueueDelayTrace,
    pub aqm: AqmTrace,
}

/// Heap bytes a column holds (its capacity, not its length: what the allocator gave).
fn column_bytes<T>(v: &Vec<T>) -> usize {
    v.capacity() * std::mem::size_of::<T>()
}

/// Bytes of a column's rows (its length): what the rows take once written out.
fn row_bytes<T>(v: &[T]) -> usize {
    std::mem::size_of_val(v)
}

/// Rows a trace hands to a [`crate::world::TraceSink`] at a time, per table: 65,536 rows are 0.8 to 2.3 MiB
/// (rows are 13 to 36 bytes), and a table's vectors, grown by doubling, hold at most twice that
/// before they are handed over.
pub const CHUNK_ROWS: usize = 1 << 16;

/// Tap records a run streaming its captures holds before encoding them for the sink: at most
/// 4,096 packets of at most 64 KiB are 256 MiB only for jumbo segments; 6 MiB at a 1,500-byte
/// MTU.
pub const CHUNK_TAP_RECORDS: usize = 4096;

/// Calls `$m!` with every table of [`Traces`] and its columns, so that the walks over all
/// columns below cannot forget one.
macro_rules! each_column {
    ($m:ident, $traces:expr) => {
        $m!(
            $traces,
            cwnd {
                time_ns,
                flow,
                cwnd_bytes,
                ssthresh_bytes,
                effective_cwnd_bytes
            },
            seq {
                time_ns,
                flow,
                seq,
                len_bytes,
                retransmission
            },
            ack { time_ns, flow, ack },
            rtt {
                time_ns,
                flow,
                rtt_ns,
                srtt_ns
            },
            rto {
                time_ns,
                flow,
                rto_ns
            },
            queue {
                time_ns,
                link,
                forward,
                pkts,
                bytes
            },
            drops {
                time_ns,
                link,
                forward,
                flow,
                ack_packet,
                seq,
                syn,
                cause
            },
            goodput {
                time_ns,
                flow,
                delivered_bytes
            },
            member_state {
                time_ns,
                link,
                member,
                state
            },
            capacity {
                time_ns,
                link,
                members_up,
                capacity_bps
            },
            queue_delay {
                time_ns,
                link,
                forward,
                sojourn_ns
            },
            aqm {
                time_ns,
                link,
                forward,
                queue,
                event,
                value
            },
        )
    };
}

macro_rules! sum_columns {
    ($f:ident, $traces:expr, $($table:ident { $($column:ident),+ }),+ $(,)?) => {{
        let Traces { $($table),+ } = $traces;
        0 $($(+ $f(&$table.$column))+)+
    }};
}

impl Traces {
    /// Heap bytes all tables hold, for the run budget.
    pub fn heap_bytes(&self) -> usize {
        macro_rules! heap {
            ($t:expr, $($rest:tt)*) => { sum_columns!(column_bytes, $t, $($rest)*) };
        }
        each_column!(heap, self)
    }

    /// Bytes of all tables' rows: what they take written out uncompressed.
    pub fn row_bytes(&self) -> usize {
        macro_rules! rows {
            ($t:expr, $($rest:tt)*) => { sum_columns!(row_bytes, $t, $($rest)*) };
        }
        each_column!(rows, self)
    }

    /// Rows in all tables.
    pub fn rows(&self) -> usize {
        macro_rules! count {
            ($t:expr, $($table:ident { $($column:ident),+ }),+ $(,)?) => {{
                let Traces { $($table),+ } = $t;
                0 $(+ $table.time_ns.len())+
            }};
        }
        each_column!(count, self)
    }

    /// Moves out every table holding at least `min_rows` rows (all of them for 0), leaving
    /// those empty; `None` when no table has that many.
    pub(crate) fn take_full(&mut self, min_rows: usize) -> Option<Traces> {
        let mut chunk = Traces::default();
        let mut any = false;
        macro_rules! take {
            ($t:expr, $($table:ident { $($column:ident),+ }),+ $(,)?) => {
                $(if $t.$table.time_ns.len() >= min_rows.max(1) {
                    chunk.$table = std::mem::take(&mut $t.$table);
                    any = true;
                })+
            };
        }
        each_column!(take, self);
        (any || min_rows == 0).then_some(chunk)
    }

    /// Appends `other`'s rows to these tables (a sink's chunks put back together).
    #[cfg(test)]
    pub(crate) fn append(&mut self, mut other: Traces) {
        macro_rules! append {
            ($t:expr, $($table:ident { $($column:ident),+ }),+ $(,)?) => {
                $($($t.$table.$column.append(&mut other.$table.$column);)+)+
            };
        }
        each_column!(append, self);
    }

    /// The most rows any one table holds.
    pub fn max_table_rows(&self) -> usize {
        macro_rules! most {
            ($t:expr, $($table:ident { $($column:ident),+ }),+ $(,)?) => {{
                let Traces { $($table),+ } = $t;
                0 $(.max($table.time_ns.len()))+
            }};
        }
        each_column!(most, self)
    }
}

impl CwndTrace {
    #[inline]
    pub(crate) fn push(&mut self, at: SimTime, flow: u32, cwnd: u64, ssthresh: u64, eff: u64) {
        self.time_ns.push(at.as_nanos());
        self.flow.push(flow);
        self.cwnd_bytes.push(cwnd);
        self.ssthresh_bytes.push(ssthresh);
        self.effective_cwnd_bytes.push(eff);
    }
}

impl SeqTrace {
    #[inline]
    pub(crate) fn push(&mut self, at: SimTime, flow: u32, seq: u64, len: u32, retx: bool) {
        self.time_ns.push(at.as_nanos());
        self.flow.push(flow);
        self.seq.push(seq);
        self.len_bytes.push(len);
        self.retransmission.push(retx);
    }
}

impl AckTrace {
    #[inline]
    pub(crate) fn push(&mut self, at: SimTime, flow: u32, ack: u64) {
        self.time_ns.push(at.as_nanos());
        self.flow.push(flow);
        self.ack.push(ack);
    }
}

impl RttTrace {
    #[inline]
    pub(crate) fn push(&mut self, at: SimTime, flow: u32, rtt_ns: u64, srtt_ns: u64) {
        self.time_ns.push(at.as_nanos());
        self.flow.push(flow);
        self.rtt_ns.push(rtt_ns);
        self.srtt_ns.push(srtt_ns);
    }
}

impl RtoTrace {
    #[inline]
    pub(crate) fn push(&mut self, at: SimTime, flow: u32, rto_ns: u64) {
        self.time_ns.push(at.as_nanos());
        self.flow.push(flow);
        self.rto_ns.push(rto_ns);
    }
}

impl QueueTrace {
    #[inline]
    pub(crate) fn push(&mut self, at: SimTime, link: u32, forward: bool, pkts: u32, bytes: u64) {
        self.time_ns.push(at.as_nanos());
        self.link.push(link);
        self.forward.push(forward);
        self.pkts.push(pkts);
        self.bytes.push(bytes);
    }
}

impl QueueDelayTrace {
    #[inline]
    pub(crate) fn push(&mut self, at: SimTime, link: u32, forward: bool, sojourn_ns: u64) {
        self.time_ns.push(at.as_nanos());
        self.link.push(link);
        self.forward.push(forward);
        self.sojourn_ns.push(sojourn_ns);
    }
}

impl AqmTrace {
    #[inline]
    pub(crate) fn push(&mut self, link: u32, forward: bool, c: &crate::links::queue::AqmChange) {
        self.time_ns.push(c.at.as_nanos());
        self.link.push(link);
        self.forward.push(forward);
        self.queue.push(c.queue);
        self.event.push(c.event as u8);
        self.value.push(c.value);
    }
}

impl DropTrace {
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(crate) fn push(
        &mut self,
        at: SimTime,
        link: u32,
        forward: bool,
        flow: u32,
        ack_packet: bool,
        seq: u64,
        syn: bool,
        cause: DropCause,
    ) {
        self.time_ns.push(at.as_nanos());
        self.link.push(link);
        self.forward.push(forward);
        self.flow.push(flow);
        self.ack_packet.push(ack_packet);
        self.seq.push(seq);
        self.syn.push(syn);
        self.cause.push(drop_cause_code(cause));
    }
}

impl MemberStateTrace {
    #[inline]
    pub(crate) fn push(&mut self, at: SimTime, link: u32, member: u32, state: u8) {
        self.time_ns.push(at.as_nanos());
        self.link.push(link);
        self.member.push(member);
        self.state.push(state);
    }
}

impl CapacityTrace {
    #[inline]
    pub(crate) fn push(&mut self, at: SimTime, link: u32, members_up: u32, capacity_bps: u64) {
        self.time_ns.push(at.as_nanos());
        self.link.push(link);
        self.members_up.push(members_up);
        self.capacity_bps.push(capacity_bps);
    }
}

impl GoodputTrace {
    /// Makes room for exactly `rows` more rows, or says the allocator could not.
    pub(crate) fn try_reserve_exact(
        &mut self,
        rows: usize,
    ) -> Result<(), std::collections::TryReserveError> {
        self.time_ns.try_reserve_exact(rows)?;
        self.flow.try_reserve_exact(rows)?;
        self.delivered_bytes.try_reserve_exact(rows)
    }

    #[inline]
    pub(crate) fn push(&mut self, at: SimTime, flow: u32, delivered: u64) {
        self.time_ns.push(at.as_nanos());
        self.flow.push(flow);
        self.delivered_bytes.push(delivered);
    }
}

/// One packet seen by a tap, for the pcap writer: leaving a link's queue for the wire (the
/// instant its first bit is sent) or, for a tap at the far end, arriving there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TapRecord {
    pub at: SimTime,
    /// Index of the tap in the scenario's `pcap` (see [`TapInfo`]).
    pub tap: u32,
    /// Index of the link in the scenario's `links` (see [`TapLink`] for its ends).
    pub link: u32,
    /// Crossing the link `a -> b` (else `b -> a`).
    pub forward: bool,
    /// Index of the flow in the scenario's `flows`.
    pub flow: u32,
    /// A data segment of the flow (sender -> receiver); `false` for an ACK (receiver ->
    /// sender). The IP source is the flow's `from` node for data and its `to` node for ACKs.
    pub data: bool,
    pub seg: Segment,
}

/// A tap as a capture's reader needs it: its name (the capture's file name), where it sits,
/// and the links it sees.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TapInfo {
    pub name: String,
    /// The tapped link, for a link or link-end tap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// `"departures"` for a link tap (packets leaving either end), `"a"` or `"b"` for a link
    /// end (packets leaving and arriving there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<&'static str>,
    /// The tapped node, for a node tap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The links the tap sees, with their ends.
    pub links: Vec<TapLink>,
}

impl TapInfo {
    pub fn new(tap: &Tap, nodes: &[String], links: &[LinkSpec]) -> TapInfo {
        let (link, at, node) = match tap.site {
            TapSite::Link { link } => (Some(link), "departures", None),
            TapSite::LinkEnd { link, at_b } => (Some(link), if at_b { "b" } else { "a" }, None),
            TapSite::Node { node } => (None, "", Some(node)),
        };
        TapInfo {
            name: tap.name.clone(),
            link: link.map(|l| links[l].name.clone()),
            at: link.map(|_| at),
            node: node.map(|n| nodes[n].clone()),
            links: (0..links.len())
                .filter(|&l| tap.touches(links, l))
                .map(|l| TapLink {
                    link: l as u32,
                    name: links[l].name.clone(),
                    a: nodes[links[l].a].clone(),
                    b: nodes[links[l].b].clone(),
                })
                .collect(),
        }
    }
}

/// A tapped link and the names of its two end nodes, from which addresses are derived.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TapLink {
    pub link: u32,
    pub name: String,
    /// Node at end `a` (the forward direction starts here).
    pub a: String,
    pub b: String,
}
