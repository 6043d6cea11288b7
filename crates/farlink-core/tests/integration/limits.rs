//! What limited a flow (`limited_by`, `limited_s` of the flow summary), end to end: a flow
//! capped by the default receive window on a long thin path, a flow over a lossy link, a
//! telnet flow, and a flow whose window overfills the bottleneck queue.

use farlink_core::world::FlowSummary;
use serde_json::{json, Value};

use crate::support;
use support::run_json;

/// S - D over one link of `rate` and one-way `delay`, with a `queue_pkts` buffer, `loss` in
/// the data direction, and one flow.
fn path(rate: &str, delay: &str, queue_pkts: u32, loss: f64, flow: Value) -> Value {
    json!({
        "seed": 1,
        "duration": "60s",
        "nodes": ["S", "D"],
        "links": [{"name": "S-D", "a": "S", "b": "D", "rate": rate, "delay": delay,
                   "queue_pkts": queue_pkts,
                   "fwd": {"loss": {"model": "bernoulli", "p": loss}}}],
        "flows": [flow],
        "trace": {}
    })
}

fn unbounded(tcp: Value) -> Value {
    json!({"name": "f", "from": "S", "to": "D", "tcp": tcp, "app": {"kind": "unbounded"}})
}

/// The simulator counts every cause: `limited_s` is always there, each value too.
fn seconds(f: &FlowSummary, cause: &str) -> f64 {
    f.limited_s.as_ref().unwrap()[cause].unwrap()
}

fn total_s(f: &FlowSummary) -> f64 {
    f.limited_s
        .as_ref()
        .unwrap()
        .values()
        .map(|v| v.unwrap())
        .sum()
}

fn share(f: &FlowSummary, cause: &str) -> f64 {
    seconds(f, cause) / total_s(f)
}

#[test]
fn the_default_receive_window_caps_a_long_thin_path() {
    // 2 Mbit/s and 600 ms: a bandwidth-delay product of 150 KB, above the default 128 KiB
    // receive buffer. The queue never fills, nothing is lost; the receive window binds.
    let r = run_json(&path("2Mbps", "300ms", 100, 0.0, unbounded(json!({}))));
    let f = &r.summary.flows[0];
    assert_eq!(f.retransmissions, 0);
    assert_eq!(f.drops.values().sum::<u64>(), 0);
    assert_eq!(f.limited_by.as_deref(), Some("receive_window"), "{f:?}");
    assert!(share(f, "receive_window") > 0.8, "{:?}", f.limited_s);
    // The count runs from the start to the end of the run.
    let total = total_s(f);
    assert!((total - 60.0).abs() < 1e-6, "{total}");
}

#[test]
fn a_lossy_link_leaves_the_congestion_window_in_charge() {
    let r = run_json(&path(
        "1.5Mbps",
        "80ms",
        30,
        0.02,
        unbounded(json!({"recovery": "reno", "cc": "reno"})),
    ));
    let f = &r.summary.flows[0];
    assert!(f.retransmissions > 0);
    assert_eq!(f.limited_by.as_deref(), Some("congestion_window"), "{f:?}");
}

#[test]
fn a_telnet_flow_waits_on_its_application() {
    let flow = json!({"name": "t", "from": "S", "to": "D",
                      "app": {"kind": "telnet", "mean_interval": "1s", "message_bytes": 100}});
    let r = run_json(&path("384kbps", "20ms", 40, 0.0, flow));
    let f = &r.summary.flows[0];
    assert_eq!(f.limited_by.as_deref(), Some("application"), "{f:?}");
    assert!(share(f, "application") > 0.9, "{:?}", f.limited_s);
}

#[test]
fn a_window_that_overfills_the_queue_is_limited_by_the_link() {
    // Without loss, Reno grows until the 60-packet queue overflows: the queue stands most of
    // the time and the link is full.
    let r = run_json(&path(
        "1.5Mbps",
        "20ms",
        60,
        0.0,
        unbounded(json!({"recovery": "reno", "cc": "reno", "receive_buffer": "1MiB"})),
    ));
    let f = &r.summary.flows[0];
    assert_eq!(f.limited_by.as_deref(), Some("link"), "{f:?}");
}

#[test]
fn a_finished_bulk_transfer_counts_only_its_active_time() {
    let flow =
        json!({"name": "b", "from": "S", "to": "D", "app": {"kind": "bulk", "size": "200KB"}});
    let r = run_json(&path("2Mbps", "50ms", 100, 0.0, flow));
    let f = &r.summary.flows[0];
    let total = total_s(f);
    let active = f.transfer_time_s.unwrap();
    assert!(
        total <= active + 1e-9 && total > 0.9 * active,
        "{total} of {active}"
    );
}
