//! What the engine's integration tests share: running a scenario written as JSON, and the
//! scenarios more than one test file builds on.
//!
//! Each test file is its own crate and compiles this module with `mod support;`, using only
//! part of it; the rest would otherwise warn as dead code in that crate.
#![allow(dead_code)]

use farlink_core::{parse_scenario_json, run, RunResult};
use serde_json::{json, Value};

/// Parses and runs `v`; a scenario the parser refuses or a run that fails fails the test with
/// the error's message.
pub fn run_json(v: &Value) -> RunResult {
    let scenario = parse_scenario_json(&v.to_string()).unwrap_or_else(|e| panic!("{e}"));
    run(&scenario).unwrap_or_else(|e| panic!("{e}"))
}

/// Seed 003's wireless path (Figure 4.7): S - R 10 Mbps 0.1 ms, R - D 1.5 Mbps `one_way` with
/// 30 packets at R and Bernoulli loss `p` on R -> D (the lossy link), one unbounded flow `ftp`
/// from S to D running `tcp`; seed 1. There is no duration: each test sets the one it needs.
pub fn stpd_wireless(tcp: Value, one_way: &str, p: f64) -> Value {
    json!({
        "name": "stpd-wireless",
        "seed": 1,
        "nodes": ["S", "R", "D"],
        "links": [
            {"name": "S-R", "a": "S", "b": "R", "rate": "10Mbps", "delay": "0.1ms", "queue_pkts": 1000},
            {"name": "R-D", "a": "R", "b": "D", "rate": "1.5Mbps", "delay": one_way, "queue_pkts": 30,
             "fwd": {"loss": {"model": "bernoulli", "p": p}}}
        ],
        "lossy_link": "R-D",
        "flows": [{"name": "ftp", "from": "S", "to": "D", "tcp": tcp, "app": {"kind": "unbounded"}}]
    })
}

/// Flow `f`'s goodput from `from_ns` to the end of the run, in bit/s: the bytes its cumulative
/// ACK covered (the `ack` trace) over that time.
pub fn steady_goodput_bps(r: &RunResult, f: u32, from_ns: u64) -> f64 {
    let t = &r.traces.ack;
    let acks = || {
        t.time_ns
            .iter()
            .zip(&t.flow)
            .zip(&t.ack)
            .filter(move |((_, fl), _)| **fl == f)
            .map(|((at, _), ack)| (*at, *ack))
    };
    let first = acks().find(|(at, _)| *at >= from_ns).unwrap();
    let last = acks().next_back().unwrap();
    (last.1 - first.1) as f64 * 8.0 / ((r.summary.sim_time_s * 1e9 - first.0 as f64) / 1e9)
}
