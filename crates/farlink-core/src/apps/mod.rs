//! What flows carry: the applications at the ends of a flow, each sans-I/O (handed `now`,
//! saying when it next wants to act with `poll_at`), driven by the engine in `world/` (and,
//! later, by the emulator's wall clock).
//!
//! - `stream`: the application at each end of a TCP connection: a bulk transfer of N bytes,
//!   an unbounded source, telnet keystrokes at exponential gaps, a relay's writes.
//! - `udp`: UDP sources (constant bit rate, on-off with exponential or Pareto periods) and the
//!   receiving end's measurements (loss, one-way delay, RFC 3550 interarrival jitter).
//! - `short_flows`: a class of short TCP flows: Poisson arrivals and drawn sizes, planned
//!   once from their own streams; their completion times, slowdowns and size buckets.
//! - `exchange`: a request/response flow's exchanges: request and response sizes, think times,
//!   response times.
//! - `draw`: the distributions drawn from (exponential, Pareto, lognormal, empirical CDF).
//! - `metrics`: percentiles, Jain's fairness index, the serialisable traffic summary.
//!
//! Streams (`StreamRng::derive(seed, name)`), stable: `flow:<name>:app` (telnet gaps, on-off
//! periods), `flow:<name>:arrivals`, `flow:<name>:sizes`.

pub mod draw;
pub mod exchange;
pub mod metrics;
pub mod short_flows;
pub(crate) mod stream;
pub mod udp;

use serde_json::{json, Value};

use crate::scenario::{
    AppSpec, Arrivals, PoissonSpec, RequestResponseSpec, SizeDist, Sojourn, UdpSpec,
};

/// A UDP application as the resolved scenario shows it.
pub(crate) fn resolved_udp(kind: &str, u: &UdpSpec) -> Value {
    let mut v = json!({
        "kind": kind,
        "rate_bps": u.rate.bps(),
        "packet_bytes": u.packet_bytes,
    });
    if let Some(o) = u.on_off {
        v["on_s"] = json!(o.on_mean.as_secs_f64());
        v["off_s"] = json!(o.off_mean.as_secs_f64());
        match o.distribution {
            Sojourn::Exponential => v["distribution"] = json!("exponential"),
            Sojourn::Pareto { shape } => {
                v["distribution"] = json!("pareto");
                v["shape"] = json!(shape);
            }
        }
    }
    v
}

/// A short-flow class as the resolved scenario shows it.
pub(crate) fn resolved_poisson(c: &PoissonSpec) -> Value {
    let mut v = json!({"kind": "flows_poisson", "size": resolved_size(&c.size)});
    match c.arrivals {
        Arrivals::PerSecond(r) => v["rate_per_s"] = json!(r),
        Arrivals::Load(l) => v["load"] = json!(l),
    }
    v
}

/// A request/response flow as the resolved scenario shows it.
pub(crate) fn resolved_request_response(c: &RequestResponseSpec) -> Value {
    json!({
        "kind": "request_response",
        "request": resolved_size(&c.request),
        "response": resolved_size(&c.response),
        "think_s": c.think_mean.as_secs_f64(),
    })
}

fn resolved_size(size: &SizeDist) -> Value {
    match size {
        SizeDist::Fixed { bytes } => json!({"bytes": bytes}),
        SizeDist::Exponential { mean_bytes } => {
            json!({"distribution": "exponential", "mean_bytes": mean_bytes})
        }
        SizeDist::Pareto { mean_bytes, shape } => {
            json!({"distribution": "pareto", "mean_bytes": mean_bytes, "shape": shape})
        }
        SizeDist::Lognormal { mean_bytes, sigma } => {
            json!({"distribution": "lognormal", "mean_bytes": mean_bytes, "sigma": sigma})
        }
        SizeDist::Cdf { points } => json!({
            "cdf": points.iter().map(|&(s, p)| json!([s, p])).collect::<Vec<_>>()
        }),
    }
}

/// A UDP flow's packets for the budget's estimate: (packets, active seconds, the source's
/// own events).
pub(crate) fn budget_packets(u: &UdpSpec, window_s: f64) -> (f64, f64, f64) {
    let on_fraction = u.on_off.map_or(1.0, |o| {
        let (on, off) = (o.on_mean.as_secs_f64(), o.off_mean.as_secs_f64());
        on / (on + off).max(1e-12)
    });
    let packets = u.rate.as_bps_f64() * window_s * on_fraction / (8.0 * f64::from(u.packet_bytes));
    (packets, window_s, packets)
}

/// What a connection of a short-flow class holds to the run's end (its sender, receiver and
/// application; measured: 10,000 connections of `bench/bench_short_flows.py` took about 20 KiB
/// each), rounded up.
const SHORT_FLOW_CONNECTION_BYTES: f64 = 32.0 * 1024.0;
/// What a UDP flow's sink keeps per datagram received: its delay and the jitter after it.
const UDP_SAMPLE_BYTES: f64 = 16.0;

/// Memory an application holds beyond the engine's for the budget's estimate, from the
/// packets and application events [`budget_packets`] or [`short_flow_packets`] gave.
pub(crate) fn budget_memory_bytes(app: &AppSpec, packets: f64, app_events: f64) -> f64 {
    match app {
        AppSpec::Udp(_) => packets * UDP_SAMPLE_BYTES,
        AppSpec::FlowsPoisson(_) => app_events * SHORT_FLOW_CONNECTION_BYTES,
        // An exchange's time is kept for the percentiles.
        AppSpec::RequestResponse(_) => app_events * 16.0,
        _ => 0.0,
    }
}

/// A request/response flow's packets for the budget's estimate: at most one exchange per
/// think time (or per 10 ms with none), each its request's and response's segments and ACKs,
/// within what the route carries (`by_rate`); one event per request.
pub(crate) fn exchange_packets(
    c: &RequestResponseSpec,
    by_rate: f64,
    mss_bytes: f64,
    window_s: f64,
) -> (f64, f64, f64) {
    let exchanges = window_s / c.think_mean.as_secs_f64().max(0.01);
    let segments =
        (c.request.mean_bytes() / mss_bytes).ceil() + (c.response.mean_bytes() / mss_bytes).ceil();
    let packets = (exchanges * 2.0 * segments).min(2.0 * by_rate.max(segments)) + 10.0;
    (packets, window_s, exchanges)
}

/// A short-flow class's packets for the budget's estimate: each connection's data and
/// ACKs, its handshake; and one event per arrival.
pub(crate) fn short_flow_packets(
    c: &PoissonSpec,
    bottleneck_bps: f64,
    mss_bytes: f64,
    window_s: f64,
) -> (f64, f64, f64) {
    let per_s = short_flows::arrival_rate_per_s(c, bottleneck_bps as u64);
    let flows = per_s * window_s;
    let per_flow = 2.0 * (c.size.mean_bytes() / mss_bytes).ceil() + 6.0;
    (flows * per_flow, window_s, flows)
}
