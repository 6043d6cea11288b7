//! Each flow's summary, the core's [`FlowSummary`] filled from what the kernel and the links
//! measured, beside what only an emulation has ([`FlowEmulation`]); and the `TCP_INFO` samples
//! as columns.

use farlink_core::scenario::{AppSpec, FlowSpec, Scenario};
use farlink_core::world::{
    cause_map, flow_bottleneck_bps, goodput_bps, normalized_goodput, ActiveSpan, FlowSummary,
};
use serde::Serialize;

use super::Outcomes;
use crate::bulk::{SenderOutcome, SinkOutcome};
use crate::driver_stats::DriverStats;
use crate::sender_timing::WireSummary;
use crate::settings::FlowSettings;
use crate::tcpinfo::TcpInfo;

/// One flow: `simulate`'s keys first, then the emulation's own.
#[derive(Clone, Debug, Serialize)]
pub struct Flow {
    #[serde(flatten)]
    pub summary: FlowSummary,
    #[serde(flatten)]
    pub emulation: FlowEmulation,
}

/// What only an emulation says of a flow.
#[derive(Clone, Debug, Serialize)]
pub struct FlowEmulation {
    pub congestion: String,
    /// Time from the sender's connect() to the connection being up.
    pub setup_time_s: Option<f64>,
    pub kernel_settings: FlowSettings,
    pub error: Option<String>,
    /// Whose TCP sent: "kernel" (in the sender's namespace) or "farlink" (farlink's own
    /// sender on the wire, `wire_sender.rs`).
    pub sender: &'static str,
    /// A bulk transfer: whether the sink read exactly the bytes sent, in order (its digest
    /// against the payload stream's); null for other applications.
    pub verified: Option<bool>,
    /// What farlink's sender counted on the wire; absent for a kernel sender.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wire: Option<WireSummary>,
}

/// TCP_INFO samples of every flow's sender, as columns.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TcpInfoTrace {
    pub time_s: Vec<f64>,
    pub flow: Vec<u32>,
    pub cwnd_bytes: Vec<u64>,
    pub ssthresh_bytes: Vec<u64>,
    pub rtt_us: Vec<u32>,
    pub rto_us: Vec<u32>,
    pub retransmissions: Vec<u32>,
    pub acked_bytes: Vec<u64>,
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// When flow `k` wrote first and finished (monotonic ns), and what its application wrote.
struct Timeline {
    start_ns: Option<u64>,
    finish_ns: Option<u64>,
    /// From the first write to the finish, or to the end of the run.
    active_ns: u64,
    app_bytes: Option<u64>,
}

impl Timeline {
    fn of(
        f: &FlowSpec,
        snd: Option<&SenderOutcome>,
        sink: Option<&SinkOutcome>,
        o: &Outcomes<'_>,
    ) -> Self {
        // What the application wrote: a bulk transfer's size, or what an unbounded source had
        // written when it stopped (unknown while it writes).
        let app_bytes = match f.app {
            AppSpec::Bulk { size_bytes } if !o.program => Some(size_bytes),
            _ => snd.filter(|x| x.stopped).map(|x| x.written_bytes),
        };
        let start_ns = snd.and_then(|x| x.first_write_ns);
        let finish_ns = sink
            .filter(|x| x.eof && Some(x.received_bytes) == app_bytes)
            .and_then(|x| x.last_byte_ns);
        let active_ns = match (start_ns, finish_ns) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            (Some(a), None) => (o.t0_ns + o.end_ns).saturating_sub(a),
            _ => 0,
        };
        Timeline {
            start_ns,
            finish_ns,
            active_ns,
            app_bytes,
        }
    }

    /// Its active span, if it started.
    fn active(&self, o: &Outcomes<'_>) -> Option<(u64, u64)> {
        self.start_ns
            .map(|a| (a, self.finish_ns.unwrap_or(o.t0_ns + o.end_ns)))
    }
}

/// Every flow's summary, the span of their activity, and the `TCP_INFO` trace.
pub(super) fn flows(
    sc: &Scenario,
    stats: &DriverStats,
    o: &Outcomes<'_>,
) -> (Vec<Flow>, ActiveSpan, TcpInfoTrace) {
    let mut flows = Vec::with_capacity(sc.flows().len());
    let mut trace = TcpInfoTrace::default();
    let mut span = ActiveSpan::default();
    for (k, f) in sc.flows().iter().enumerate() {
        let (snd, sink) = (o.senders.get(k), o.sinks.get(k));
        let t = Timeline::of(f, snd, sink, o);
        if let Some((summary, active, error)) = super::traffic::summary(sc, k, stats, o) {
            if let Some((a, b)) = active {
                span.include(a, b);
            }
            let mut emulation = emulation(k, &t, o);
            emulation.error = error;
            flows.push(Flow { summary, emulation });
            continue;
        }
        if let Some((a, b)) = t.active(o) {
            span.include(a, b);
        }
        if let Some(x) = snd {
            sampled(&mut trace, k, x, o.t0_ns);
        }
        flows.push(Flow {
            summary: summary(sc, k, &t, stats, o),
            emulation: emulation(k, &t, o),
        });
    }
    (flows, span, trace)
}

/// The core's flow summary of flow `k`: its sender's last `TCP_INFO`, what the links counted,
/// its recoveries; `None` where the kernel cannot say.
fn summary(
    sc: &Scenario,
    k: usize,
    t: &Timeline,
    stats: &DriverStats,
    o: &Outcomes<'_>,
) -> FlowSummary {
    let f = &sc.flows()[k];
    let snd = o.senders.get(k);
    let last: Option<TcpInfo> = snd.and_then(|x| x.last);
    let mss = last.map_or(0, |i| u64::from(i.snd_mss));
    let delivered = o.sinks.get(k).map_or(0, |x| x.received_bytes);
    let goodput = goodput_bps(delivered, t.active_ns);
    let bottleneck_bps = flow_bottleneck_bps(sc, &f.path);
    let (limited_s, limited_by) =
        last.map_or((None, None), |i| crate::parity::limits(&i, t.active_ns));
    FlowSummary {
        finished: t.finish_ns.is_some(),
        finish_s: t.finish_ns.map(|b| secs(b.saturating_sub(o.t0_ns))),
        transfer_time_s: t
            .finish_ns
            .zip(t.start_ns)
            .map(|(b, a)| secs(b.saturating_sub(a))),
        delivered_bytes: delivered,
        app_bytes: t.app_bytes,
        goodput_bps: goodput,
        bottleneck_bps,
        normalized_goodput: normalized_goodput(goodput, bottleneck_bps),
        segments_sent: last.and_then(|i| i.data_segs_out).map(u64::from),
        bytes_sent: last.and_then(|i| i.bytes_sent),
        retransmissions: last.map_or(0, |i| u64::from(i.total_retrans)),
        retransmitted_bytes: last.and_then(|i| i.bytes_retrans),
        timeouts: last.and_then(|i| i.total_rto).map_or(0, u64::from),
        fast_retransmits: o.recoveries.per_flow.get(k).copied().flatten(),
        window_probes: snd.and_then(|x| x.wire).map(|w| w.window_probes),
        data_segments_delivered: stats.flow_data_delivered.get(k).copied().unwrap_or(0),
        acks_sent: stats.flow_acks_sent.get(k).copied().unwrap_or(0),
        acks_delivered: None,
        drops: cause_map(stats.flow_drops.get(k).copied().unwrap_or_default()),
        ce_marked: o.ce_received.get(k).copied().flatten(),
        // The kernel counts no reductions for ECN echoes.
        ecn_reductions: None,
        final_cwnd_bytes: last.map(|i| u64::from(i.snd_cwnd_pkts) * mss),
        final_srtt_s: last.map(|i| f64::from(i.rtt_us) / 1e6),
        final_rto_s: last.map(|i| f64::from(i.rto_us) / 1e6),
        min_rtt_s: last
            .and_then(|i| i.min_rtt_us)
            .map(|us| f64::from(us) / 1e6),
        limited_s,
        limited_by,
        // The names, the start and what only the simulator fills (a split flow's segments,
        // the handshake's figures) as the core leaves them unmeasured.
        ..FlowSummary::unmeasured(sc, k, bottleneck_bps)
    }
}

/// What only the emulation says of flow `k`.
fn emulation(k: usize, t: &Timeline, o: &Outcomes<'_>) -> FlowEmulation {
    let snd = o.senders.get(k);
    let sink = o.sinks.get(k);
    let error = [
        snd.and_then(|x| x.error.clone()),
        sink.and_then(|x| x.error.clone()),
    ]
    .into_iter()
    .flatten()
    .reduce(|a, b| format!("{a}; {b}"));
    let farlink = o.farlink.get(k).copied().unwrap_or(false);
    FlowEmulation {
        congestion: o.congestion.get(k).cloned().unwrap_or_default(),
        setup_time_s: snd.and_then(|x| x.connected_ns.map(|c| secs(c - x.connect_started_ns))),
        kernel_settings: o.settings.get(k).cloned().unwrap_or_default(),
        error,
        sender: if farlink { "farlink" } else { "kernel" },
        verified: o.expected_digests.get(k).copied().flatten().map(|d| {
            sink.is_some_and(|x| x.eof && Some(x.received_bytes) == t.app_bytes && x.digest == d)
        }),
        wire: snd.and_then(|x| x.wire),
    }
}

/// Flow `k`'s `TCP_INFO` samples appended to the trace's columns.
fn sampled(trace: &mut TcpInfoTrace, k: usize, snd: &SenderOutcome, t0_ns: u64) {
    for smp in &snd.samples {
        trace.time_s.push(secs(smp.at_ns.saturating_sub(t0_ns)));
        trace.flow.push(k as u32);
        let m = u64::from(smp.info.snd_mss);
        trace.cwnd_bytes.push(u64::from(smp.info.snd_cwnd_pkts) * m);
        trace
            .ssthresh_bytes
            .push(u64::from(smp.info.snd_ssthresh_pkts).saturating_mul(m));
        trace.rtt_us.push(smp.info.rtt_us);
        trace.rto_us.push(smp.info.rto_us);
        trace.retransmissions.push(smp.info.total_retrans);
        trace.acked_bytes.push(smp.info.bytes_acked);
    }
}
