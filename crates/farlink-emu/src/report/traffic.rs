//! A UDP flow's and a short-flow class's summary (`traffic.rs` ran them): the core's
//! [`FlowSummary`] with the same `traffic` figures as `simulate`'s, computed by the core's
//! code (`UdpSink`'s delays and jitters into `Percentiles`, `short_flows::summarize` against
//! `world::unloaded_path`), the drops those of the links.

use farlink_core::apps::exchange::Exchanges;
use farlink_core::apps::metrics::{Percentiles, TrafficSummary};
use farlink_core::apps::short_flows;
use farlink_core::scenario::{FlowSpec, Scenario};
use farlink_core::world::{
    cause_map, flow_bottleneck_bps, goodput_bps, normalized_goodput, unloaded_path, FlowSummary,
};

use super::Outcomes;
use crate::driver_stats::DriverStats;
use crate::traffic::{self, ConnRead, ConnSent, TrafficOutcome, UdpReceived, UdpSent};

/// A traffic flow's summary, its active span (monotonic ns) if it started, and its ends'
/// errors.
pub(super) type Measured = (FlowSummary, Option<(u64, u64)>, Option<String>);

/// What every traffic flow's summary reads: the flow, the run, and its span on the run's time
/// line (from its start to its stop or the run's end).
struct Ctx<'a> {
    sc: &'a Scenario,
    f: &'a FlowSpec,
    k: usize,
    stats: &'a DriverStats,
    o: &'a Outcomes<'a>,
    bottleneck_bps: u64,
    dropped: u64,
    run_end_ns: u64,
    active_end_ns: u64,
    active_ns: u64,
    span: Option<(u64, u64)>,
}

/// Flow `k`'s summary and its active span (monotonic ns), if `o` says it is a traffic flow.
pub(super) fn summary(
    sc: &Scenario,
    k: usize,
    stats: &DriverStats,
    o: &Outcomes<'_>,
) -> Option<Measured> {
    let f = &sc.flows()[k];
    let drops = stats.flow_drops.get(k).copied().unwrap_or_default();
    let run_end_ns = o.end_ns;
    let active_end_ns = f.stop.map_or(run_end_ns, |s| s.as_nanos().min(run_end_ns));
    let c = Ctx {
        sc,
        f,
        k,
        stats,
        o,
        bottleneck_bps: flow_bottleneck_bps(sc, &f.path),
        dropped: drops.iter().sum(),
        run_end_ns,
        active_end_ns,
        active_ns: active_end_ns.saturating_sub(f.start.as_nanos()),
        span: (f.start.as_nanos() < run_end_ns)
            .then(|| (o.t0_ns + f.start.as_nanos(), o.t0_ns + active_end_ns)),
    };
    let mut s = FlowSummary::unmeasured(sc, k, c.bottleneck_bps);
    s.drops = cause_map(drops);
    match o.traffic.get(k)? {
        TrafficOutcome::None => None,
        TrafficOutcome::Udp { sent, received } => udp(&c, s, sent, received),
        TrafficOutcome::Exchanges {
            ex,
            delivered_bytes,
            error,
        } => exchanges(&c, s, ex, *delivered_bytes, error),
        TrafficOutcome::ShortFlows { sent, read } => short_flows_class(&c, s, sent, read),
    }
}

fn udp(
    c: &Ctx<'_>,
    mut s: FlowSummary,
    sent: &UdpSent,
    received: &UdpReceived,
) -> Option<Measured> {
    let sink = &received.sink;
    let delivered = sink.received_bytes();
    let lost_or_received = sink.received() + c.dropped;
    // Finished as the simulator says: the source stopped and every datagram arrived
    // or was dropped.
    let finished = sent.ended && lost_or_received == sent.sent;
    let finish_ns = finished.then(|| {
        sink.last_arrival()
            .map_or(c.f.start.as_nanos(), |t| t.as_nanos())
    });
    s.finished = finished;
    s.finish_s = finish_ns.map(|t| t as f64 / 1e9);
    s.transfer_time_s = finish_ns.map(|t| t.saturating_sub(c.f.start.as_nanos()) as f64 / 1e9);
    s.delivered_bytes = delivered;
    s.app_bytes = Some(sent.sent_bytes);
    s.goodput_bps = goodput_bps(delivered, c.active_ns);
    s.normalized_goodput = normalized_goodput(s.goodput_bps, c.bottleneck_bps);
    s.segments_sent = Some(sent.sent);
    s.bytes_sent = Some(sent.sent_bytes);
    s.retransmitted_bytes = Some(0);
    s.fast_retransmits = Some(0);
    s.window_probes = Some(0);
    s.acks_delivered = Some(0);
    s.data_segments_delivered = sink.received();
    s.traffic = Some(TrafficSummary {
        packets_sent: Some(sent.sent),
        packets_received: Some(sink.received()),
        loss_rate: (lost_or_received > 0).then(|| c.dropped as f64 / lost_or_received as f64),
        one_way_delay_s: Percentiles::of_nanos(sink.delays_ns()),
        jitter_s: Percentiles::of(&mut sink.jitters_s()),
        ..TrafficSummary::default()
    });
    let mut error = [sent.error.clone(), received.error.clone()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>();
    if sent.send_errors > 0 {
        error.push(format!(
            "UDP source: the kernel refused {} datagrams",
            sent.send_errors
        ));
    }
    Some((s, c.span, (!error.is_empty()).then(|| error.join("; "))))
}

fn exchanges(
    c: &Ctx<'_>,
    mut s: FlowSummary,
    ex: &Exchanges,
    delivered_bytes: u64,
    error: &Option<String>,
) -> Option<Measured> {
    // Finished as the simulator says: the client stopped and its last exchange was
    // answered.
    let finished = ex.stopped() && ex.idle();
    s.finished = finished;
    s.finish_s = finished.then(|| c.active_end_ns as f64 / 1e9);
    s.transfer_time_s = finished.then(|| c.active_ns as f64 / 1e9);
    s.delivered_bytes = delivered_bytes;
    s.goodput_bps = goodput_bps(delivered_bytes, c.active_ns);
    s.normalized_goodput = normalized_goodput(s.goodput_bps, c.bottleneck_bps);
    s.data_segments_delivered = c.stats.flow_data_delivered.get(c.k).copied().unwrap_or(0);
    s.traffic = Some(TrafficSummary {
        exchanges: Some(ex.started()),
        exchanges_completed: Some(ex.response_times_ns().len() as u64),
        response_time_s: Percentiles::of_nanos(ex.response_times_ns()),
        ..TrafficSummary::default()
    });
    Some((s, c.span, error.clone()))
}

fn short_flows_class(
    c: &Ctx<'_>,
    mut s: FlowSummary,
    sent: &[ConnSent],
    read: &[ConnRead],
) -> Option<Measured> {
    let completed = traffic::completions(sent, read);
    let summary = short_flows::summarize(&completed, &unloaded_path(c.sc, c.f));
    let delivered: u64 = read.iter().map(|r| r.received_bytes).sum();
    let all_done = completed.iter().all(|c| c.fct_s.is_some())
        && c.f.stop.is_some_and(|st| st.as_nanos() <= c.run_end_ns);
    // The class is active until its last connection's last byte (or the run's end).
    let last_ns = read
        .iter()
        .filter_map(|r| r.last_byte_ns)
        .max()
        .map(|t| t.saturating_sub(c.o.t0_ns));
    let end_ns = if all_done {
        last_ns.unwrap_or(c.active_end_ns).max(c.f.start.as_nanos())
    } else {
        c.run_end_ns
    };
    let span_ns = end_ns.saturating_sub(c.f.start.as_nanos());
    s.finished = all_done;
    s.finish_s = all_done.then(|| end_ns as f64 / 1e9);
    s.transfer_time_s = all_done.then(|| span_ns as f64 / 1e9);
    s.delivered_bytes = delivered;
    s.app_bytes = Some(sent.iter().map(|c| c.written_bytes).sum());
    s.goodput_bps = goodput_bps(delivered, span_ns);
    s.normalized_goodput = normalized_goodput(s.goodput_bps, c.bottleneck_bps);
    s.data_segments_delivered = c.stats.flow_data_delivered.get(c.k).copied().unwrap_or(0);
    s.acks_sent = c.stats.flow_acks_sent.get(c.k).copied().unwrap_or(0);
    s.traffic = Some(summary);
    let errors: Vec<String> = sent.iter().filter_map(|c| c.error.clone()).collect();
    let error = (!errors.is_empty()).then(|| {
        format!(
            "{} of {} connections: {}",
            errors.len(),
            sent.len(),
            errors[0]
        )
    });
    let span = c.span.map(|(a, _)| (a, c.o.t0_ns + end_ns));
    Some((s, span, error))
}
