//! DualPI2 (RFC 9332) in a whole run: on the 10 Mbit/s, 50 ms (one way) bottleneck with a
//! 1000-packet buffer, an L4S flow (`ecn = "accurate"`: ECT(1) and DCTCP's proportional
//! response, Reno only in farlink) beside Classic flows (no ECN) that start with it. The L4S flow's packets wait in
//! the L4S queue, held near its 1 ms step; the Classic flow's in the Classic queue, held near
//! the PI2 controller's 15 ms target; the coupling (p_CL = 2 p', p_C = p'^2) gives both a
//! share.
//!
//! Each flow's queue delay is read from its own RTT samples less its smallest one: only the
//! bottleneck's queue builds here, and each flow's packets wait in one of its two queues.

use farlink_core::RunResult;
use serde_json::{json, Value};

use crate::support;
use support::{run_json, steady_goodput_bps};

const MSS_BYTES: u64 = 1448;
/// Steady state starts here, after slow start.
const WARM_NS: u64 = 10_000_000_000;

/// The bottleneck `R - D` running DualPI2 with its defaults, flow `i` from its own `S<i>` over a
/// 1 ms access link running `tcps[i]`, every flow unbounded and started at once.
fn dumbbell(tcps: &[Value]) -> Value {
    let mut nodes = vec![json!("R"), json!("D")];
    let mut links = vec![json!({
        "name": "bottleneck", "a": "R", "b": "D", "rate": "10Mbps", "delay": "50ms",
        "queue_pkts": 1000, "queue_discipline": "dualpi2",
    })];
    let mut flows = Vec::new();
    for (i, tcp) in tcps.iter().enumerate() {
        let s = format!("S{i}");
        nodes.push(json!(s));
        links.push(json!({"a": s, "b": "R", "rate": "1Gbps", "delay": "1ms", "queue_pkts": 1000}));
        flows.push(
            json!({"name": format!("f{i}"), "from": s, "to": "D", "tcp": tcp,
                          "app": {"kind": "unbounded"}}),
        );
    }
    json!({"duration": "40s", "seed": 1, "nodes": nodes, "links": links, "flows": flows,
           "trace": {"rtt": true, "ack": true}})
}

fn tcp(cc: &str, ecn: Value) -> Value {
    json!({"cc": cc, "mss_bytes": MSS_BYTES, "receive_buffer": "8MiB", "ecn": ecn})
}

/// The queue delay of flows `fs` (their samples pooled, each less its own flow's smallest)
/// after the warm-up, in ms: median, 95th percentile and mean.
fn queue_delay_ms(r: &RunResult, fs: &[u32]) -> (f64, f64, f64) {
    let t = &r.traces.rtt;
    let samples = |f: u32| {
        t.time_ns
            .iter()
            .zip(&t.flow)
            .zip(&t.rtt_ns)
            .filter(move |((_, fl), _)| **fl == f)
            .map(|((at, _), rtt)| (*at, *rtt))
    };
    let mut q = Vec::new();
    for &f in fs {
        let base = samples(f).map(|(_, rtt)| rtt).min().unwrap();
        q.extend(
            samples(f)
                .filter(|(at, _)| *at > WARM_NS)
                .map(|(_, rtt)| rtt - base),
        );
    }
    q.sort_unstable();
    let pick = |x: f64| q[((q.len() - 1) as f64 * x) as usize] as f64 / 1e6;
    let mean = q.iter().sum::<u64>() as f64 / q.len() as f64 / 1e6;
    (pick(0.5), pick(0.95), mean)
}

#[test]
fn one_l4s_flow_holds_about_1_ms_beside_a_classic_flow_and_both_get_a_share() {
    for classic_cc in ["cubic", "reno"] {
        let r = run_json(&dumbbell(&[
            tcp("reno", json!("accurate")),
            tcp(classic_cc, json!(false)),
        ]));
        let (l_med, l_p95, l_mean) = queue_delay_ms(&r, &[0]);
        let (c_med, c_p95, c_mean) = queue_delay_ms(&r, &[1]);
        let (l_bps, c_bps) = (
            steady_goodput_bps(&r, 0, WARM_NS),
            steady_goodput_bps(&r, 1, WARM_NS),
        );
        let drops = &r.summary.aggregate.drops;
        let l4s = &r.summary.flows[0];
        eprintln!(
            "dualpi2, L4S reno/accurate beside classic {classic_cc}: L4S queue median \
             {l_med:.2} ms, p95 {l_p95:.2}, mean {l_mean:.2}, {:.2} Mbit/s; classic median \
             {c_med:.1} ms, p95 {c_p95:.1}, mean {c_mean:.1}, {:.2} Mbit/s; CE marks {:?}, \
             drops {drops:?}",
            l_bps / 1e6,
            c_bps / 1e6,
            l4s.ce_marked,
        );
        // The L4S queue: about its 1 ms step (one 1500-byte packet takes 1.2 ms at 10 Mbit/s).
        assert!(l_med <= 1.5, "L4S median queue delay {l_med} ms");
        assert!(l_p95 <= 3.0, "L4S p95 queue delay {l_p95} ms");
        // The Classic queue: one flow's sawtooth peaks about the 15 ms target (drop-tail
        // would fill the 1000 packets, 1.2 s); its halving (0.7 for CUBIC) of a ~40-packet
        // window empties the queue, so the median is below target.
        assert!((10.0..=30.0).contains(&c_p95), "classic p95 {c_p95} ms");
        assert!(
            c_mean > 3.0 * l_mean,
            "classic mean {c_mean}, L4S {l_mean} ms"
        );
        // Both get a share, and together fill the link.
        let (lo, hi) = (l_bps.min(c_bps), l_bps.max(c_bps));
        assert!(lo > 0.2 * hi, "shares {l_bps} and {c_bps} bit/s");
        assert!(l_bps + c_bps > 8e6, "together {} bit/s", l_bps + c_bps);
        // The L4S flow is held by marks, never a loss; the Classic flow by the AQM's drops,
        // not the buffer's overflow.
        assert!(l4s.ce_marked.unwrap() > 0);
        assert_eq!(l4s.retransmissions, 0);
        assert!(drops["aqm"] > 0);
        assert_eq!(drops["queue_overflow"], 0);
    }
}

#[test]
fn with_four_classic_flows_the_classic_queue_averages_near_target_and_shares_are_coupled() {
    // Four Reno flows halve a quarter of the window each, so the Classic queue no longer
    // empties at every loss and the PI2 controller's integral holds its mean near 15 ms; the
    // coupling (p_CL = 2 p', p_C = p'^2) gives the L4S flow about a Classic flow's share.
    let mut tcps = vec![tcp("reno", json!("accurate"))];
    tcps.extend((0..4).map(|_| tcp("reno", json!(false))));
    let r = run_json(&dumbbell(&tcps));
    let (l_med, l_p95, _) = queue_delay_ms(&r, &[0]);
    let (c_med, c_p95, c_mean) = queue_delay_ms(&r, &[1, 2, 3, 4]);
    let l_bps = steady_goodput_bps(&r, 0, WARM_NS);
    let c_bps = (1..5)
        .map(|f| steady_goodput_bps(&r, f, WARM_NS))
        .sum::<f64>()
        / 4.0;
    eprintln!(
        "dualpi2, L4S reno/accurate beside four classic reno: L4S queue median {l_med:.2} ms, \
         p95 {l_p95:.2}, {:.2} Mbit/s; classic median {c_med:.1} ms, p95 {c_p95:.1}, mean \
         {c_mean:.1}, {:.2} Mbit/s a flow",
        l_bps / 1e6,
        c_bps / 1e6,
    );
    assert!(l_med <= 1.5, "L4S median queue delay {l_med} ms");
    assert!((7.5..=22.5).contains(&c_mean), "classic mean {c_mean} ms");
    let ratio = l_bps / c_bps;
    assert!((0.5..=2.0).contains(&ratio), "L4S / classic share {ratio}");
}

#[test]
fn dualpi2_is_validated_with_its_paths() {
    let bad = |aqm: Value| {
        let mut s = dumbbell(&[tcp("reno", json!(false))]);
        s["links"][0]["aqm"] = aqm;
        match farlink_core::parse_scenario_json(&s.to_string()) {
            Ok(_) => panic!("accepted {s}"),
            Err(e) => e.to_string(),
        }
    };
    let e = bad(json!({"coupling": 0.5}));
    assert!(e.contains("links[0].aqm.coupling"), "{e}");
    let e = bad(json!({"interval": "100ms"}));
    assert!(e.contains("links[0].aqm.interval"), "{e}");
    let e = bad(json!({"tupdate": "0ms"}));
    assert!(e.contains("links[0].aqm.tupdate"), "{e}");
}
