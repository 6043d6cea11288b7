//! The run budget: what a scenario will cost, known before paying it, and the bound a run
//! keeps while it runs.
//!
//! [`estimate`] reads a validated scenario and gives the events, trace rows and memory a run
//! of it takes, from its rates, duration, packet sizes, intervals and traces; it runs nothing
//! and so changes no result. [`Budget::admit`] refuses an estimate above the budget, saying
//! what it found and how to raise the budget. While running, the engine checks the same bound
//! every [`CHECK_EVERY_EVENTS`] events ([`Budget::exceeded`]) and stops with what it has if
//! the run outgrows it (timers that fire more often than the estimate could know).
//!
//! The estimate is an upper bound of the common case, within a small factor: every data
//! packet the bottleneck can carry over the flow's active time (a bulk transfer: its size,
//! twice over for retransmissions), each costing two events per hop there and two per hop for
//! its ACK back, more on bundle members with link-layer ARQ and on radio hops (per frame).
//! Idle RLP frames cost no events (the hop accounts for them when it next has work). Measured
//! against runs of the presets (`world::budget` tests and `farlink simulate --estimate`), it
//! is 1.2 to 2.5 times the events a run takes. Measured on the development machine, the engine runs 2 to 16
//! million events a second (`farlink simulate PRESET --json` prints `events` and
//! `wall_time_s`), so the default of 10^9 events is one to eight minutes.

use std::fmt;

use crate::scenario::{AppSpec, FlowSpec, LinkSpec, Scenario};
use crate::trace::{TapRecord, Traces, CHUNK_ROWS, CHUNK_TAP_RECORDS};
use crate::world::SPOOL_ENTRY_HEADER_BYTES;

/// Default bound on events: a few minutes on one core (see the module documentation).
pub const DEFAULT_MAX_EVENTS: u64 = 1_000_000_000;
/// Default bound on memory: 2 GiB, what a laptop spares a simulation without swapping.
pub const DEFAULT_MAX_MEMORY_BYTES: u64 = 2 << 30;
/// Default bound on the disk a run streaming its traces to a folder may fill: 16 GiB.
pub const DEFAULT_MAX_DISK_BYTES: u64 = 16 << 30;
/// The engine checks the budget (and the stop request, and reports progress) this often.
pub const CHECK_EVERY_EVENTS: u64 = 1 << 16;
/// Bytes of a trace row in the estimate: the columns' widths (20 to 36 bytes) with room for
/// the doubling growth of their vectors.
const TRACE_ROW_BYTES: f64 = 48.0;
/// Bytes of a trace row on disk in the estimate: the widest row's columns (36 bytes, `cwnd`),
/// before the compression Parquet applies.
const TRACE_ROW_DISK_BYTES: f64 = 36.0;
/// Memory a table's buffer holds when traces stream to a sink: [`CHUNK_ROWS`] rows, twice
/// over for the doubling growth of its vectors, at [`TRACE_ROW_BYTES`].
const TRACE_BUFFER_BYTES: f64 = 2.0 * CHUNK_ROWS as f64 * TRACE_ROW_BYTES;
/// Memory a run streaming its captures holds for them: a chunk of tap records and their
/// encoding, at most a full packet each.
const CAPTURE_BUFFER_BYTES: f64 = CHUNK_TAP_RECORDS as f64
    * (std::mem::size_of::<TapRecord>() as f64
        + PCAP_RECORD_HEADER_BYTES
        + SPOOL_ENTRY_HEADER_BYTES as f64
        + MAX_CAPTURED_PACKET_BYTES as f64);
/// Memory a run holds whatever its traces: components, queues, the event heap.
const BASE_MEMORY_BYTES: f64 = 16.0 * 1024.0 * 1024.0;
/// Headers of an ACK on the wire (IPv4 and TCP, with timestamps).
const ACK_BYTES: f64 = 52.0;
/// Bytes of a pcap record header.
const PCAP_RECORD_HEADER_BYTES: f64 = 16.0;
/// The bound the running check takes for a captured packet (an Ethernet MTU).
const MAX_CAPTURED_PACKET_BYTES: usize = 1500;

/// The bounds a run is held to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    pub max_events: u64,
    pub max_memory_bytes: u64,
    /// Bound on what a run streaming its traces ([`crate::world::TraceSink`]) writes.
    pub max_disk_bytes: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_events: DEFAULT_MAX_EVENTS,
            max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES,
            max_disk_bytes: DEFAULT_MAX_DISK_BYTES,
        }
    }
}

/// What a run of a scenario is expected to cost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    pub events: f64,
    pub trace_rows: f64,
    pub memory_bytes: f64,
    /// What the trace rows take on disk when they stream to a sink; 0 when they stay in
    /// memory (counted in `memory_bytes` then).
    pub disk_bytes: f64,
}

/// A run that would cost, or came to cost, more than its budget.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OverBudget {
    pub estimate: Estimate,
    pub budget: Budget,
}

impl fmt::Display for OverBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (e, b) = (&self.estimate, &self.budget);
        write!(
            f,
            "the run would take about {} events (budget {}) and {} of memory (budget {}), ",
            count(e.events),
            count(b.max_events as f64),
            bytes(e.memory_bytes),
            bytes(b.max_memory_bytes as f64),
        )?;
        if e.disk_bytes > 0.0 {
            write!(
                f,
                "{} of disk for its traces and captures (budget {}), ",
                bytes(e.disk_bytes),
                bytes(b.max_disk_bytes as f64),
            )?;
        }
        write!(
            f,
            "{} trace rows included; shorten the run or its traces, or raise the budget",
            count(e.trace_rows),
        )
    }
}

impl std::error::Error for OverBudget {}

impl Budget {
    /// Refuses an estimate above either bound.
    pub fn admit(&self, estimate: Estimate) -> Result<(), OverBudget> {
        if estimate.events > self.max_events as f64
            || estimate.memory_bytes > self.max_memory_bytes as f64
            || estimate.disk_bytes > self.max_disk_bytes as f64
        {
            Err(OverBudget {
                estimate,
                budget: *self,
            })
        } else {
            Ok(())
        }
    }

    /// Which bound a running simulation has passed, if any, as a phrase for its stop line.
    pub fn exceeded(&self, events: u64, memory_bytes: u64) -> Option<String> {
        if events >= self.max_events {
            Some(format!(
                "event budget of {} reached",
                count(self.max_events as f64)
            ))
        } else if memory_bytes >= self.max_memory_bytes {
            Some(format!(
                "memory budget of {} reached",
                bytes(self.max_memory_bytes as f64)
            ))
        } else {
            None
        }
    }

    /// The phrase for a run that has written its disk budget's worth of trace rows.
    pub fn exceeded_disk(&self, disk_bytes: u64) -> Option<String> {
        (disk_bytes >= self.max_disk_bytes).then(|| {
            format!(
                "disk budget of {} reached",
                bytes(self.max_disk_bytes as f64)
            )
        })
    }
}

/// What a scenario costs to run with its traces held in memory; see the module documentation
/// for the model.
pub fn estimate(sc: &Scenario) -> Estimate {
    estimate_with(sc, false, false)
}

/// What a scenario costs to run; with `streamed` its trace rows go to a sink as they are
/// recorded ([`crate::world::TraceSink`]), so memory holds one buffer per trace switched on
/// and the rows count as disk instead; with `captures_streamed` too the captures of its taps,
/// which take twice their size on disk until the run ends (a spool and the capture).
pub fn estimate_with(sc: &Scenario, streamed: bool, captures_streamed: bool) -> Estimate {
    let duration_s = sc.duration().as_secs_f64();
    let tr = sc.trace();
    let mut events = 0.0;
    let mut rows = 0.0;
    let mut tap_bytes = 0.0;
    let mut tap_disk_bytes = 0.0;
    // What the applications hold: a UDP flow's samples, a short-flow class's connections.
    let mut app_memory = 0.0;
    // Trace rows per data packet and per hop it crosses (with its ACK).
    let per_packet_rows = [tr.seq, tr.ack, tr.cwnd, tr.rtt, tr.rto, tr.drops]
        .iter()
        .filter(|&&on| on)
        .count() as f64;
    // The queue trace: a change at each enqueue and dequeue, data and ACK; queue_delay: a
    // row as each leaves the queue; aqm: at most one per arrival (RED's average).
    let per_hop_rows = [(tr.queue, 4.0), (tr.queue_delay, 2.0), (tr.aqm, 2.0)]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, rows)| rows)
        .sum::<f64>();
    for flow in sc.flows() {
        let (packets, active_s, messages) = data_packets(sc, flow, duration_s);
        events += messages;
        let pkt = f64::from(flow.tcp.full_packet_bytes());
        let mut hop_events = 0.0;
        for hop in &flow.path {
            let link = &sc.links()[hop.link];
            hop_events += hop_cost(link, pkt) + hop_cost(link, ACK_BYTES);
            // Each tap that sees the link holds a data packet and an ACK per packet sent.
            let taps = sc
                .pcap()
                .iter()
                .filter(|t| t.touches(sc.links(), hop.link))
                .count() as f64;
            if taps > 0.0 {
                let record = std::mem::size_of::<TapRecord>() as f64 + PCAP_RECORD_HEADER_BYTES;
                tap_bytes += taps * packets * (2.0 * record + pkt + ACK_BYTES);
                let spooled = PCAP_RECORD_HEADER_BYTES + SPOOL_ENTRY_HEADER_BYTES as f64;
                tap_disk_bytes += 2.0 * taps * packets * (2.0 * spooled + pkt + ACK_BYTES);
            }
        }
        events += packets * hop_events;
        rows += packets * (per_packet_rows + per_hop_rows * flow.path.len() as f64);
        if tr.goodput {
            rows += active_s / tr.goodput_interval.as_secs_f64().max(1e-9) + 1.0;
        }
        app_memory += crate::apps::budget_memory_bytes(&flow.app, packets, messages);
    }
    for link in sc.links() {
        if let Some(b) = &link.bundle {
            // A drop, its detection, a redial and the modem's timers: a handful each; and
            // dials that fail, one every dial time and retry delay at most.
            let drops: f64 = b.members.iter().map(|m| m.call_drop_rate_per_s).sum();
            let retry_s = (b.dial_time + b.modem.t_f).as_secs_f64().max(1e-3);
            let failed_dials = b.dial_failure_prob * duration_s / retry_s;
            events += 8.0 * drops * duration_s
                + 4.0 * failed_dials * b.members.len() as f64
                + 8.0 * b.members.len() as f64;
            if tr.member_state || tr.capacity {
                rows += 8.0 * drops * duration_s + 4.0 * b.members.len() as f64;
            }
        }
    }
    if streamed {
        let tables = [
            tr.cwnd,
            tr.seq,
            tr.ack,
            tr.rtt,
            tr.rto,
            tr.queue,
            tr.drops,
            tr.goodput,
            tr.member_state,
            tr.capacity,
            tr.queue_delay,
            tr.aqm,
        ]
        .iter()
        .filter(|&&on| on)
        .count() as f64;
        let (tap_memory, tap_disk) = match (captures_streamed, sc.pcap().is_empty()) {
            (true, false) => (CAPTURE_BUFFER_BYTES, tap_disk_bytes),
            _ => (tap_bytes, 0.0),
        };
        Estimate {
            events,
            trace_rows: rows,
            memory_bytes: BASE_MEMORY_BYTES + tables * TRACE_BUFFER_BYTES + tap_memory + app_memory,
            disk_bytes: rows * TRACE_ROW_DISK_BYTES + tap_disk,
        }
    } else {
        Estimate {
            events,
            trace_rows: rows,
            memory_bytes: BASE_MEMORY_BYTES + rows * TRACE_ROW_BYTES + tap_bytes + app_memory,
            disk_bytes: 0.0,
        }
    }
}

/// Data packets a flow sends, its active time and the application's own events.
fn data_packets(sc: &Scenario, flow: &FlowSpec, duration_s: f64) -> (f64, f64, f64) {
    let start_s = flow.start.as_secs_f64();
    let end_s = flow
        .stop
        .map_or(duration_s, |s| s.as_secs_f64().min(duration_s));
    let window_s = (end_s - start_s).max(0.0);
    let pkt_bits = 8.0 * f64::from(flow.tcp.full_packet_bytes());
    let mss = f64::from(flow.tcp.options.mss_bytes);
    let rate_bps = flow
        .path
        .iter()
        .map(|h| direction_rate_bps(&sc.links()[h.link], h.forward))
        .fold(f64::INFINITY, f64::min);
    let rate_bps = if rate_bps.is_finite() { rate_bps } else { 0.0 };
    let by_rate = rate_bps * window_s / pkt_bits;
    match flow.app {
        AppSpec::Unbounded => (by_rate, window_s, 0.0),
        AppSpec::Udp(ref u) => crate::apps::budget_packets(u, window_s),
        AppSpec::FlowsPoisson(ref c) => crate::apps::short_flow_packets(c, rate_bps, mss, window_s),
        AppSpec::RequestResponse(ref c) => crate::apps::exchange_packets(c, by_rate, mss, window_s),
        AppSpec::Bulk { size_bytes } => {
            let packets = 2.0 * (size_bytes as f64 / mss).ceil() + 10.0;
            // Four times the time it takes at the bottleneck, and a minute for recovery: a
            // bulk flow ends the run when it is done.
            let active_s = if rate_bps > 0.0 {
                (4.0 * size_bytes as f64 * 8.0 / rate_bps + 60.0).min(window_s)
            } else {
                window_s
            };
            (packets.min(by_rate.max(10.0)), active_s, 0.0)
        }
        AppSpec::Telnet {
            mean_interval,
            message_bytes,
        } => {
            let messages = window_s / mean_interval.as_secs_f64().max(1e-9);
            let per_message = (f64::from(message_bytes) / mss).ceil().max(1.0);
            (
                (messages * per_message).min(by_rate.max(messages)),
                window_s,
                messages,
            )
        }
    }
}

/// The rate packets can cross a link direction at: a bundle's members together, a radio
/// hop's frame payload.
fn direction_rate_bps(link: &LinkSpec, forward: bool) -> f64 {
    let rate = link.direction(forward).rate.as_bps_f64();
    match (&link.bundle, &link.rlp) {
        (Some(b), _) => b.capacity().as_bps_f64(),
        (None, Some(r)) => rate * f64::from(r.payload_bytes) / f64::from(r.frame_bytes.max(1)),
        (None, None) => rate,
    }
}

/// Events one packet of `bytes` costs crossing `link`: the end of its serialization and its
/// arrival, and with link-layer ARQ or RLP those of the frames it is cut into (measured: about
/// 1.2 events per RLP frame, 2 per ARQ frame with its feedback; the estimate takes a little
/// more).
fn hop_cost(link: &LinkSpec, bytes: f64) -> f64 {
    if let Some(rlp) = &link.rlp {
        return 2.0 + 1.5 * (bytes / f64::from(rlp.payload_bytes.max(1))).ceil();
    }
    if let Some(b) = &link.bundle {
        let frame = b
            .members
            .iter()
            .filter_map(|m| m.arq)
            .map(|a| f64::from(a.frame_bytes.max(1)))
            .fold(f64::INFINITY, f64::min);
        return if frame.is_finite() {
            2.0 + 3.0 * (bytes / frame).ceil()
        } else {
            2.0
        };
    }
    2.0
}

/// Bytes held by a run's traces and taps now: the capacity of their vectors, and the
/// captures the taps will become (a record header and at most a full packet each).
pub(crate) fn held_bytes(traces: &Traces, taps: &Vec<TapRecord>) -> u64 {
    let capture = PCAP_RECORD_HEADER_BYTES as usize + MAX_CAPTURED_PACKET_BYTES;
    (traces.heap_bytes()
        + taps.capacity() * std::mem::size_of::<TapRecord>()
        + taps.len() * capture) as u64
}

/// `1.2e10`-style counts for messages.
fn count(x: f64) -> String {
    if x < 1e6 {
        format!("{x:.0}")
    } else {
        format!("{x:.1e}")
    }
}

/// `4.1 GiB`-style sizes for messages.
fn bytes(x: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = x;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} B")
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::parse_scenario_json;
    use serde_json::json;

    fn dumbbell(rate: &str, duration: &str, app: serde_json::Value) -> Scenario {
        let doc = json!({
            "duration": duration,
            "nodes": ["S", "D"],
            "links": [{"a": "S", "b": "D", "rate": rate, "delay": "10ms"}],
            "flows": [{"from": "S", "to": "D", "app": app}],
        });
        parse_scenario_json(&doc.to_string()).unwrap()
    }

    #[test]
    fn ten_gigabits_for_a_hundred_million_seconds_is_refused_up_front() {
        let sc = dumbbell("10Gbps", "1e8s", json!({"kind": "unbounded"}));
        let e = estimate(&sc);
        assert!(e.events > 1e14, "{e:?}");
        let refusal = Budget::default().admit(e).unwrap_err().to_string();
        assert!(
            refusal.starts_with("the run would take about "),
            "{refusal}"
        );
        assert!(refusal.contains("(budget 1.0e9)"), "{refusal}");
        assert!(
            refusal.ends_with("shorten the run or its traces, or raise the budget"),
            "{refusal}"
        );
    }

    #[test]
    fn a_small_run_is_admitted_and_its_estimate_is_the_right_order() {
        // 1 Mbit/s for 10 s: 833 packets of 1500 bytes, one hop: about 3,300 events.
        let sc = dumbbell("1Mbps", "10s", json!({"kind": "unbounded"}));
        let e = estimate(&sc);
        assert!((3_000.0..4_000.0).contains(&e.events), "{e:?}");
        assert!(Budget::default().admit(e).is_ok());
        let run = crate::world::run(&sc).unwrap();
        let actual = run.summary.events as f64;
        assert!(
            actual < e.events && actual > e.events / 4.0,
            "{actual} {e:?}"
        );
    }

    #[test]
    fn a_fine_goodput_grid_costs_rows_and_memory() {
        let doc = json!({
            "duration": "60s",
            "nodes": ["S", "D"],
            "links": [{"a": "S", "b": "D", "rate": "1Mbps", "delay": "10ms"}],
            "flows": [{"from": "S", "to": "D", "app": {"kind": "unbounded"}}],
            "trace": {"goodput": true, "goodput_interval": "1us"},
        });
        let sc = parse_scenario_json(&doc.to_string()).unwrap();
        let e = estimate(&sc);
        assert!(e.trace_rows >= 6e7, "{e:?}");
        let refusal = Budget::default().admit(e).unwrap_err().to_string();
        assert!(
            refusal.contains("GiB of memory (budget 2.0 GiB)"),
            "{refusal}"
        );
    }

    #[test]
    fn a_bulk_transfer_is_priced_by_its_size_not_the_duration() {
        let sc = dumbbell("1Mbps", "1e8s", json!({"kind": "bulk", "size": "1MB"}));
        let e = estimate(&sc);
        assert!(e.events < 1e5, "{e:?}");
        assert!(Budget::default().admit(e).is_ok());
    }

    #[test]
    fn the_running_check_names_the_bound_passed() {
        let b = Budget {
            max_events: 100,
            max_memory_bytes: 1000,
            ..Budget::default()
        };
        assert_eq!(b.exceeded(10, 10), None);
        assert_eq!(
            b.exceeded(100, 10).as_deref(),
            Some("event budget of 100 reached")
        );
        assert_eq!(
            b.exceeded(10, 2048).as_deref(),
            Some("memory budget of 1000 B reached")
        );
    }

    #[test]
    fn a_run_that_outgrows_its_event_budget_stops_with_what_it_has() {
        let sc = dumbbell("1Mbps", "100s", json!({"kind": "unbounded"}));
        let control = crate::world::RunControl {
            budget: Some(Budget {
                max_events: 5_000,
                max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES,
                ..Budget::default()
            }),
            progress: None,
            sink: None,
        };
        // The estimate (about 33,000 events) is over 5,000: refused before running.
        let refused = crate::world::run_with(&sc, control).unwrap_err();
        assert!(matches!(refused, crate::world::RunError::OverBudget(_)));

        // Admitted on a small estimate, then held while running: a telnet source whose
        // estimate is exact but whose run is cut.
        let sc = dumbbell("1Mbps", "100s", json!({"kind": "unbounded"}));
        let full = crate::world::run(&sc).unwrap();
        let b = Budget {
            max_events: full.summary.events / 2,
            ..Budget::default()
        };
        let mut world = crate::world::World::build(&sc).unwrap();
        world.budget = Some(b);
        world.run().unwrap();
        let half = world.finish().unwrap();
        let why = half.summary.partial.as_deref().unwrap();
        assert!(why.starts_with("event budget of "), "{why}");
        assert!(why.contains(" reached at "), "{why}");
        assert_eq!(half.summary.events, b.max_events);
        assert!(half.summary.sim_time_s < full.summary.sim_time_s);
        assert!(half.summary.aggregate.delivered_bytes > 0);
        assert!(full.summary.partial.is_none());
    }

    #[test]
    fn the_progress_hook_sees_the_run_and_can_interrupt_it() {
        let sc = dumbbell("10Mbps", "100s", json!({"kind": "unbounded"}));
        let mut seen = Vec::new();
        let mut hook = |p: crate::world::Progress| {
            seen.push(p);
            seen.len() < 2
        };
        let r = crate::world::run_with(
            &sc,
            crate::world::RunControl {
                budget: Some(Budget::default()),
                progress: Some(&mut hook),
                sink: None,
            },
        )
        .unwrap();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[1].events, 2 * CHECK_EVERY_EVENTS);
        assert!(seen[0].now < seen[1].now && seen[1].now < seen[1].end);
        let why = r.summary.partial.as_deref().unwrap();
        assert!(why.starts_with("interrupted at "), "{why}");
        assert_eq!(r.summary.events, 2 * CHECK_EVERY_EVENTS);
    }

    #[test]
    fn holding_a_run_changes_nothing_it_computes() {
        let doc = json!({
            "duration": "200s", "seed": 5,
            "nodes": ["S", "D"],
            "links": [{"a": "S", "b": "D", "rate": "10Mbps", "delay": "40ms",
                       "fwd": {"loss": {"model": "bernoulli", "p": 0.001}}}],
            "flows": [{"from": "S", "to": "D", "app": {"kind": "unbounded"}}],
            "trace": {"all": true},
        });
        let sc = parse_scenario_json(&doc.to_string()).unwrap();
        let free = crate::world::run(&sc).unwrap();
        let mut calls = 0;
        let mut hook = |_: crate::world::Progress| {
            calls += 1;
            true
        };
        let held = crate::world::run_with(
            &sc,
            crate::world::RunControl {
                budget: Some(Budget::default()),
                progress: Some(&mut hook),
                sink: None,
            },
        )
        .unwrap();
        assert!(calls > 0, "{} events", held.summary.events);
        assert_eq!(free.summary, held.summary);
        assert_eq!(free.traces, held.traces);
    }

    #[test]
    fn a_stalled_flow_cannot_fill_the_goodput_grid_past_the_memory_budget() {
        // Nothing gets through, so the grid is filled at the end for the whole million
        // seconds: 10^9 rows (20 GB) at once, where the estimate expected a transfer of a
        // minute. The fill stops at the budget and the result says so.
        let doc = json!({
            "duration": "1e6s",
            "nodes": ["S", "D"],
            "links": [{"a": "S", "b": "D", "rate": "1Mbps", "delay": "10ms",
                       "fwd": {"loss": {"model": "bernoulli", "p": 0.99999}}}],
            "flows": [{"from": "S", "to": "D", "app": {"kind": "bulk", "size": "10KB"}}],
            "trace": {"goodput": true, "goodput_interval": "1ms"},
        });
        let sc = parse_scenario_json(&doc.to_string()).unwrap();
        let b = Budget {
            max_events: DEFAULT_MAX_EVENTS,
            max_memory_bytes: 64 << 20,
            ..Budget::default()
        };
        assert!(b.admit(estimate(&sc)).is_ok());
        let r = crate::world::run_with(
            &sc,
            crate::world::RunControl {
                budget: Some(b),
                progress: None,
                sink: None,
            },
        )
        .unwrap();
        assert_eq!(r.summary.aggregate.delivered_bytes, 0);
        let why = r.summary.partial.as_deref().unwrap();
        assert_eq!(
            why,
            "memory budget of 64.0 MiB reached completing the goodput grid"
        );
        assert!(r.traces.heap_bytes() <= 64 << 20);
        assert!(r.traces.goodput.time_ns.len() > 1_000_000);
    }

    /// Puts a streamed run's chunks back together, noting the largest.
    #[derive(Default)]
    struct Collect {
        all: Traces,
        chunks: usize,
        largest_chunk_rows: usize,
    }

    impl crate::world::TraceSink for Collect {
        fn rows(&mut self, chunk: Traces) -> bool {
            self.chunks += 1;
            self.largest_chunk_rows = self.largest_chunk_rows.max(chunk.max_table_rows());
            self.all.append(chunk);
            true
        }
    }

    fn lossy_traced(duration: &str) -> Scenario {
        let doc = json!({
            "duration": duration, "seed": 3,
            "nodes": ["S", "D"],
            "links": [{"a": "S", "b": "D", "rate": "10Mbps", "delay": "40ms",
                       "fwd": {"loss": {"model": "bernoulli", "p": 0.001}}}],
            "flows": [{"from": "S", "to": "D", "app": {"kind": "unbounded"}}],
            "trace": {"all": true},
        });
        parse_scenario_json(&doc.to_string()).unwrap()
    }

    #[test]
    fn a_sink_takes_every_row_in_bounded_chunks_and_changes_nothing() {
        let sc = lossy_traced("400s");
        let held = crate::world::run(&sc).unwrap();
        assert!(
            held.traces.max_table_rows() > 2 * CHUNK_ROWS,
            "several chunks"
        );
        let mut sink = Collect::default();
        let streamed = crate::world::run_with(
            &sc,
            crate::world::RunControl {
                budget: Some(Budget::default()),
                progress: None,
                sink: Some(&mut sink),
            },
        )
        .unwrap();
        assert_eq!(streamed.summary, held.summary);
        assert_eq!(streamed.traces, Traces::default(), "nothing kept");
        assert_eq!(sink.all, held.traces, "the chunks, in order, are the table");
        assert!(sink.chunks > 2);
        // A table is handed over within SINK_EVERY_EVENTS events of reaching a chunk.
        assert!(
            sink.largest_chunk_rows <= CHUNK_ROWS + 4096,
            "{}",
            sink.largest_chunk_rows
        );
    }

    #[test]
    fn a_streamed_run_is_priced_in_disk_and_held_to_it() {
        let sc = lossy_traced("400s");
        let (held, streamed) = (estimate(&sc), estimate_with(&sc, true, true));
        assert_eq!(held.disk_bytes, 0.0);
        assert_eq!(held.trace_rows, streamed.trace_rows);
        assert!(
            streamed.memory_bytes < held.memory_bytes,
            "{streamed:?} {held:?}"
        );
        assert_eq!(
            streamed.disk_bytes,
            streamed.trace_rows * TRACE_ROW_DISK_BYTES
        );
        let small = Budget {
            max_disk_bytes: 1 << 20,
            ..Budget::default()
        };
        assert!(
            small.admit(held).is_ok(),
            "a run held in memory writes nothing"
        );
        let refusal = small.admit(streamed).unwrap_err().to_string();
        assert!(
            refusal.contains("of disk for its traces and captures (budget 1.0 MiB), "),
            "{refusal}"
        );
        // Admitted on the estimate, held to the disk budget while running.
        let mut sink = Collect::default();
        let mut world = crate::world::World::build(&sc).unwrap();
        world.budget = Some(Budget {
            max_disk_bytes: 2 << 20,
            ..Budget::default()
        });
        world.sink = Some(&mut sink);
        world.run().unwrap();
        let r = world.finish().unwrap();
        let why = r.summary.partial.as_deref().unwrap();
        assert!(
            why.starts_with("disk budget of 2.0 MiB reached at "),
            "{why}"
        );
        assert!(sink.all.row_bytes() < (2 << 20) + 4 * CHUNK_ROWS * 36);
    }

    #[test]
    fn dials_that_fail_over_and_over_are_priced() {
        let doc = json!({
            "duration": "1e7s",
            "nodes": ["S", "D"],
            "links": [{"a": "S", "b": "D", "bundle": {
                "members": 8, "rate": "2400bps", "delay": "500ms", "start": "dialing",
                "dial_time": "1ms", "dial_failure_prob": 1.0, "t_f": "1ms", "max_attempts": 0}}],
            "flows": [{"from": "S", "to": "D", "app": {"kind": "bulk", "size": "10KB"},
                       "tcp": {"max_rto": "64s"}}],
        });
        let sc = parse_scenario_json(&doc.to_string()).unwrap();
        let e = estimate(&sc);
        // 8 members redialling every 2 ms for 10^7 s.
        assert!(e.events >= 4.0 * 8.0 * 5e9, "{e:?}");
        assert!(Budget::default().admit(e).is_err());
    }
}
