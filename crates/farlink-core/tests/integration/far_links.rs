//! Bundle links end to end: multilink PPP over Iridium-like members with ARQ, call drops and
//! redials (seed 000 chapters 3, 5 and 7), through the engine.
//!
//! Conservation is checked by every run (a violation is an error, and these tests unwrap the
//! result); the tests here add what only a whole run shows: a bulk transfer across call drops,
//! a bundle that stays down for hours, the RTT TCP sees on a loaded bundle, the traces of the
//! members' states, and the scenario errors of a bundle.

use farlink_core::link::{DROP_CAUSE_ARQ_GIVE_UP, DROP_CAUSE_CALL_DROP, DROP_CAUSE_NAMES};
use farlink_core::parse_scenario_json;
use farlink_core::trace::MEMBER_STATE_NAMES;
use serde_json::{json, Value};

use crate::support;
use support::run_json;

/// A Greenland–Kansas bundle like the `iridium-*` presets: `n` members of 2400 bit/s, 0.5 s,
/// selective-repeat ARQ over 27-byte frames damaged with probability 1.3 %, a transmit queue
/// of 3, an MLPPP queue of 100; `bundle` entries override.
fn iridium(n: u32, duration: &str, app: Value, tcp: Value, bundle: Value) -> Value {
    let mut b = json!({
        "members": n, "rate": "2400bps", "delay": "0.5s", "txqueue_pkts": 3,
        "call_drop_rate": "1/50min", "detection_delay": "30s", "dial_time": "14.5s",
        "arq": {"mode": "selective-repeat", "frame": "27B", "max_tries": 3}
    });
    for (k, v) in bundle.as_object().unwrap() {
        b[k] = v.clone();
    }
    let frame_loss = json!({"model": "bernoulli", "p": 0.013});
    json!({
        "seed": 1,
        "duration": duration,
        "nodes": ["G", "K"],
        "links": [{"name": "iridium", "a": "G", "b": "K", "queue_pkts": 100,
                   "fwd": {"loss": frame_loss}, "rev": {"loss": frame_loss}, "bundle": b}],
        "flows": [{"name": "ftp", "from": "G", "to": "K", "tcp": tcp, "app": app}],
        "trace": {"rtt": true, "rto": true, "drops": true, "member_state": true,
                  "capacity": true, "queue": true}
    })
}

/// Table 6.1's TCP: MSS 1448 (1460 with timestamps), W_max 47.9 KB; CUBIC as the presets.
fn table_6_1_tcp() -> Value {
    json!({"mss_bytes": 1460, "receive_buffer": "47.9KB", "initial_window_segments": 3,
           "cc": "cubic"})
}

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    s / n.max(1) as f64
}

#[test]
fn eight_member_bundle_with_call_drops_delivers_a_bulk_transfer() {
    // 5.62 MB, the second file of seed 000 Table 6.1 (46 minutes measured, 51 predicted), at
    // the Greenland call-drop rate of 1/50 min per member: several drops during the transfer.
    let r = run_json(&iridium(
        8,
        "3h",
        json!({"kind": "bulk", "size": "5.62MB"}),
        table_6_1_tcp(),
        json!({}),
    ));
    let f = &r.summary.flows[0];
    assert!(f.finished, "{f:?}");
    assert_eq!(f.delivered_bytes, 5_620_000);
    let b = r.summary.links[0].bundle.as_ref().unwrap();
    assert!(b.calls.call_drops >= 3, "{b:?}");
    let drops = &r.summary.aggregate.drops;
    assert_eq!(
        drops.keys().map(String::as_str).collect::<Vec<_>>(),
        {
            let mut names = DROP_CAUSE_NAMES.to_vec();
            names.sort_unstable();
            names
        },
        "every cause listed"
    );
    assert!(drops["call_drop"] > 0, "{drops:?}");
    assert!(
        f.timeouts > 0,
        "a call drop leads to a timeout (seed 000 5.2)"
    );
    // The drop trace carries the new causes.
    let causes = &r.traces.drops.cause;
    assert!(causes.contains(&DROP_CAUSE_CALL_DROP));
    // Per direction, the link's drop map agrees with the trace.
    let fwd = &r.summary.links[0].fwd;
    let traced = causes
        .iter()
        .zip(&r.traces.drops.forward)
        .filter(|(_, &f)| f)
        .count() as u64;
    assert_eq!(fwd.drops.values().sum::<u64>(), traced);
    // Transfer time within a third of the field's 46 minutes.
    let minutes = f.transfer_time_s.unwrap() / 60.0;
    assert!((31.0..61.0).contains(&minutes), "{minutes} min");
}

#[test]
fn rtt_on_a_loaded_iridium_bundle_is_that_of_section_4_1_6() {
    // No call drops: the RTT TCP measures once the window (47.9 KB, Table 6.1) is in the
    // queues. Seed 000 4.1.6 and Figure 4.6: about 20 s (19.5 s by its arithmetic, 21 s
    // measured with 6 modems, 19 s in Table 6.1).
    let r = run_json(&iridium(
        8,
        "1h",
        json!({"kind": "unbounded"}),
        table_6_1_tcp(),
        json!({"call_drop_rate": "0/min"}),
    ));
    let rtt = &r.traces.rtt;
    // Skip the first ten minutes (slow start from an empty bundle).
    let loaded: Vec<f64> = rtt
        .time_ns
        .iter()
        .zip(&rtt.rtt_ns)
        .filter(|(&t, _)| t > 600_000_000_000)
        .map(|(_, &x)| x as f64 / 1e9)
        .collect();
    assert!(loaded.len() > 500, "{}", loaded.len());
    let m = mean(loaded.iter().copied());
    assert!((15.0..25.0).contains(&m), "mean RTT {m} s");
    // ARQ makes the RTT vary: retransmitted frames delay their packet by a round trip.
    let sd = (mean(loaded.iter().map(|x| (x - m) * (x - m)))).sqrt();
    assert!(sd > 0.3, "sd {sd}");
    // The goodput is near the bundle's rate less headers and repeats: 8 × 2400 × 1448/1504
    // × (1 − 0.013) = 18.2 kbit/s.
    let g = r.summary.flows[0].goodput_bps;
    assert!((16_000.0..18_300.0).contains(&g), "goodput {g}");
    // The RTO follows the RTT (RFC 6298): above the mean RTT.
    let rto = r.traces.rto.rto_ns.last().copied().unwrap() as f64 / 1e9;
    assert!(rto > m, "rto {rto} s");
}

#[test]
fn a_bundle_down_for_hours_neither_hangs_nor_grows() {
    // Every dial fails: the members cycle connecting, failed, and blocked for an hour, for
    // six hours, while TCP keeps retransmitting into a bundle with no member.
    let r = run_json(&iridium(
        8,
        "6h",
        json!({"kind": "bulk", "size": "1MB"}),
        table_6_1_tcp(),
        json!({"start": "dialing", "dial_failure_prob": 1.0, "primary": true}),
    ));
    let s = &r.summary;
    assert!(!s.all_finished);
    assert_eq!(s.flows[0].delivered_bytes, 0);
    let b = s.links[0].bundle.as_ref().unwrap();
    assert_eq!(b.any_up_fraction, 0.0);
    assert!(b.calls.blocks >= 8, "{b:?}");
    let fwd = &s.links[0].fwd;
    assert!(fwd.max_queue_pkts <= 100);
    assert!(fwd.in_flight_pkts <= 100);
    // Bounded work: timers and retransmissions only (max RTO 64 s).
    assert!(s.events < 20_000, "{} events", s.events);
    assert!(r.traces.member_state.time_ns.len() < 5_000);
    assert!(s.flows[0].timeouts > 100);
}

#[test]
fn all_members_drop_and_stay_down_then_the_run_ends_cleanly() {
    // Every call drops within minutes and no redial ever succeeds.
    let r = run_json(&iridium(
        4,
        "5h",
        json!({"kind": "unbounded"}),
        table_6_1_tcp(),
        json!({"call_drop_rate": "1/2min", "dial_failure_prob": 1.0, "max_attempts": 3}),
    ));
    let b = r.summary.links[0].bundle.as_ref().unwrap();
    assert!(b.outages >= 1);
    assert!(b.any_up_fraction < 0.2, "{b:?}");
    assert!(r.summary.links[0].fwd.max_queue_pkts <= 100);
    assert!(r.summary.events < 50_000, "{}", r.summary.events);
}

#[test]
fn member_states_and_capacity_are_traced() {
    let r = run_json(&iridium(
        3,
        "3h",
        json!({"kind": "unbounded"}),
        table_6_1_tcp(),
        json!({"call_drop_rate": "1/20min"}),
    ));
    let ms = &r.traces.member_state;
    assert!(ms
        .state
        .iter()
        .all(|&s| (s as usize) < MEMBER_STATE_NAMES.len()));
    let code = |name: &str| MEMBER_STATE_NAMES.iter().position(|n| *n == name).unwrap() as u8;
    // Member 0: connected at 0, then every call drop runs call_lost → dropped (30 s later)
    // → connecting (30 s later) → connected (14.5 s later).
    let rows: Vec<(u64, u8)> = ms
        .member
        .iter()
        .zip(&ms.time_ns)
        .zip(&ms.state)
        .filter(|((&m, _), _)| m == 0)
        .map(|((_, &t), &s)| (t, s))
        .collect();
    assert_eq!(rows[0], (0, code("connected")));
    let cycle = [
        code("call_lost"),
        code("dropped"),
        code("connecting"),
        code("connected"),
    ];
    let mut full_cycles = 0;
    for w in rows[1..].chunks_exact(4) {
        assert_eq!(w.iter().map(|r| r.1).collect::<Vec<_>>(), cycle);
        assert_eq!(w[1].0 - w[0].0, 30_000_000_000);
        assert_eq!(w[2].0 - w[1].0, 30_000_000_000);
        assert_eq!(w[3].0 - w[2].0, 14_500_000_000);
        full_cycles += 1;
    }
    assert!(full_cycles >= 1);
    // Capacity: 7200 bit/s at 0; falls by 2400 when a drop is noticed, back when redialled.
    let cap = &r.traces.capacity;
    assert_eq!(
        (cap.time_ns[0], cap.capacity_bps[0], cap.members_up[0]),
        (0, 7200, 3)
    );
    for (&up, &bps) in cap.members_up.iter().zip(&cap.capacity_bps) {
        assert_eq!(u64::from(up) * 2400, bps);
    }
    let b = r.summary.links[0].bundle.as_ref().unwrap();
    assert!(b.all_up_fraction < 1.0 && b.all_up_fraction > 0.8, "{b:?}");
}

#[test]
fn losing_the_primary_takes_the_bundle_down() {
    let r = run_json(&iridium(
        4,
        "4h",
        json!({"kind": "unbounded"}),
        table_6_1_tcp(),
        json!({"primary": true, "call_drop_rate": "1/20min"}),
    ));
    let b = r.summary.links[0].bundle.as_ref().unwrap();
    assert!(b.calls.teardowns >= 1, "{b:?}");
    assert!(b.calls.hangups >= b.calls.teardowns);
    assert!(b.outages >= b.calls.teardowns);
    assert!(b.any_up_fraction < 1.0);
}

#[test]
fn go_back_n_and_fragmentation_conserve_too() {
    for (mode, fragment) in [
        ("go-back-n", false),
        ("go-back-n", true),
        ("selective-repeat", true),
    ] {
        let r = run_json(&iridium(
            3,
            "1h",
            json!({"kind": "bulk", "size": "200KB"}),
            json!({"mss_bytes": 1460, "receive_buffer": "16.1KB"}),
            json!({"fragment": fragment, "call_drop_rate": "1/10min",
                   "arq": {"mode": mode, "frame": "27B", "max_tries": 2}}),
        ));
        let f = &r.summary.flows[0];
        assert!(f.finished, "{mode} {fragment}: {f:?}");
        let b = r.summary.links[0].bundle.as_ref().unwrap();
        assert_eq!(b.arq, Some(mode));
        if fragment {
            assert!(b.fwd.fragmented_pkts > 0, "{mode}: {b:?}");
        }
        let gave_up = r.traces.drops.cause.contains(&DROP_CAUSE_ARQ_GIVE_UP);
        assert_eq!(gave_up, r.summary.aggregate.drops["arq_give_up"] > 0);
    }
}

#[test]
fn reassembly_timeouts_are_accounted_for() {
    // Fragments over a fast and a slow member, with a reassembly timer just longer than the
    // skew between them: a fragment whose frames need repeats on the slow member misses the
    // timer, its packet is given up while it is still on its way, and it is discarded when it
    // arrives. Every packet is still accounted for (the run checks it).
    let mut v = iridium(
        2,
        "1h",
        json!({"kind": "bulk", "size": "60KB"}),
        json!({"mss_bytes": 536, "receive_buffer": "8KB"}),
        json!({"fragment": true, "reassembly_timeout": "1s", "call_drop_rate": "0/min",
               "members": [{"delay": "0.1s"}, {"delay": "0.95s"}]}),
    );
    v["links"][0]["bundle"]
        .as_object_mut()
        .unwrap()
        .remove("delay");
    let r = run_json(&v);
    let f = &r.summary.flows[0];
    assert!(f.delivered_bytes > 10_000, "{f:?}");
    let drops = &r.summary.aggregate.drops;
    assert!(drops["reassembly_timeout"] > 0, "{drops:?}");
    let b = r.summary.links[0].bundle.as_ref().unwrap();
    assert!(b.fwd.reassembly_timeouts > 0);
    assert!(b.fwd.late_units > 0);
    assert!(b.fwd.fragmented_pkts > 0);
}

#[test]
fn same_seed_same_run_other_seed_differs() {
    let sc = iridium(
        4,
        "1h",
        json!({"kind": "unbounded"}),
        table_6_1_tcp(),
        json!({"call_drop_rate": "1/10min", "dial_failure_prob": 0.3}),
    );
    let a = run_json(&sc);
    let b = run_json(&sc);
    assert_eq!(a.summary, b.summary);
    assert_eq!(a.traces, b.traces);
    let mut other = sc.clone();
    other["seed"] = json!(2);
    assert_ne!(run_json(&other).traces.member_state, a.traces.member_state);
}

#[test]
fn plain_links_report_the_new_causes_as_zero() {
    let r = run_json(&json!({
        "duration": "10s", "nodes": ["S", "D"],
        "links": [{"a": "S", "b": "D", "rate": "1Mbps", "delay": "10ms"}],
        "flows": [{"from": "S", "to": "D", "app": {"kind": "bulk", "size": "100KB"}}]
    }));
    let l = &r.summary.links[0];
    assert!(l.bundle.is_none());
    assert_eq!(l.fwd.drops["call_drop"], 0);
    assert_eq!(l.fwd.drops["arq_give_up"], 0);
    assert_eq!(r.summary.aggregate.drops.len(), DROP_CAUSE_NAMES.len());
}

#[test]
fn bundle_errors_name_their_place() {
    let base = || iridium(2, "1h", json!({"kind": "unbounded"}), json!({}), json!({}));
    type Edit = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(Edit, &str, &str)> = vec![
        (
            Box::new(|v| v["links"][0]["rate"] = json!("1Mbps")),
            "links[0].rate",
            "takes its rate from its members",
        ),
        (
            Box::new(|v| v["links"][0]["fwd"]["delay"] = json!("1s")),
            "links[0].fwd.delay",
            "takes its delay",
        ),
        (
            Box::new(|v| v["links"][0]["bundle"]["members"] = json!(0)),
            "links[0].bundle.members",
            "expected 1 to 64 members",
        ),
        (
            Box::new(|v| v["links"][0]["bundle"]["members"] = json!(65)),
            "links[0].bundle.members",
            "expected 1 to 64",
        ),
        (
            Box::new(|v| {
                v["links"][0]["bundle"]["members"] = json!([{"rate": "2400bps"}, {"rate": 5}])
            }),
            "links[0].bundle.members[1].rate",
            "bit rate as a string",
        ),
        (
            Box::new(|v| v["links"][0]["bundle"]["members"] = json!([{"colour": 1}])),
            "links[0].bundle.members[0].colour",
            "unknown field",
        ),
        (
            Box::new(|v| v["links"][0]["bundle"]["call_drop_rate"] = json!("fast")),
            "links[0].bundle.call_drop_rate",
            "cannot read rate",
        ),
        (
            Box::new(|v| v["links"][0]["bundle"]["dial_failure_prob"] = json!(1.5)),
            "links[0].bundle.dial_failure_prob",
            "probability",
        ),
        (
            Box::new(|v| {
                v["links"][0]["bundle"]
                    .as_object_mut()
                    .unwrap()
                    .remove("dial_time");
            }),
            "links[0].bundle.dial_time",
            "missing",
        ),
        (
            Box::new(|v| v["links"][0]["bundle"]["arq"]["mode"] = json!("stop-and-wait")),
            "links[0].bundle.arq.mode",
            "go-back-n, selective-repeat",
        ),
        (
            Box::new(|v| v["links"][0]["bundle"]["arq"]["max_tries"] = json!(0)),
            "links[0].bundle.arq.max_tries",
            "1 to 255",
        ),
        (
            Box::new(|v| {
                v["links"][0]["bundle"]["arq"]
                    .as_object_mut()
                    .unwrap()
                    .remove("frame");
            }),
            "links[0].bundle.arq.frame",
            "missing",
        ),
        (
            Box::new(|v| v["links"][0]["bundle"]["start"] = json!("later")),
            "links[0].bundle.start",
            "connected, dialing",
        ),
        (
            Box::new(|v| v["links"][0]["bundle"]["txqueue_pkts"] = json!(0)),
            "links[0].bundle.txqueue_pkts",
            "at least 1",
        ),
        (
            Box::new(|v| {
                v["links"][0]["bundle"]
                    .as_object_mut()
                    .unwrap()
                    .remove("rate");
            }),
            "links[0].bundle.rate",
            "missing",
        ),
    ];
    for (edit, path, message) in cases {
        let mut v = base();
        edit(&mut v);
        let e = parse_scenario_json(&v.to_string()).unwrap_err();
        assert_eq!(e.path, path, "{e}");
        assert!(e.message.contains(message), "{path}: {e}");
    }
    // Members may be listed with their own rates; the bundle's capacity is their sum.
    let mut v = base();
    v["links"][0]["bundle"]["members"] =
        json!([{"name": "Kansas", "rate": "2400bps"}, {"name": "Nebraska", "rate": "4800bps"}]);
    let sc = parse_scenario_json(&v.to_string()).unwrap();
    let l = &sc.links()[0];
    assert_eq!(l.fwd.rate.bps(), 7200);
    assert_eq!(l.bundle.as_ref().unwrap().members[1].name, "Nebraska");
}
