//! TCP Reno over an IS-707 radio hop (seed 004) through the engine: the scenario's `rlp`
//! field, conservation with frames given up, the goodput bound 1 - P_e, idle frames, and
//! determinism. Durations are short enough for a debug build.

use farlink_core::{parse_scenario_json, RunResult};
use serde_json::{json, Value};

use crate::support;
use support::run_json;

/// Seed 004 section III: RH - IAP 1.5 Mbps 200 ms, IAP - MH the RLP hop at 9600 bit/s; TCP
/// Reno, MSS 536, 40-byte ACKs.
fn is707(channel: Option<(f64, f64)>, idle: Value, duration_s: f64, seed: u64) -> Value {
    let mut rlp = json!({"idle_frames": idle});
    if let Some((pe, fd_t)) = channel {
        rlp["pe"] = json!(pe);
        rlp["fd_t"] = json!(fd_t);
    }
    json!({
        "seed": seed,
        "duration_s": duration_s,
        "nodes": ["RH", "IAP", "MH"],
        "links": [
            {"name": "wired", "a": "RH", "b": "IAP", "rate": "1.5Mbps", "delay": "200ms"},
            {"name": "radio", "a": "IAP", "b": "MH", "rate": "9600bps", "delay": "20ms",
             "rlp": rlp}
        ],
        "flows": [{"name": "ftp", "from": "RH", "to": "MH",
                   "tcp": {"mss_bytes": 536, "timestamps": false, "sack": false,
                           "window_scaling": false, "recovery": "reno", "delayed_ack": false,
                           "initial_window_segments": 1, "max_rto": "64s",
                           "receive_buffer_bytes": 10720},
                   "app": {"kind": "unbounded"}}],
        "trace": {"goodput": true, "goodput_interval": "10s"}
    })
}

/// Payload bytes per second over payload bytes the channel could carry: seed 004's goodput.
fn goodput(r: &RunResult) -> f64 {
    let f = &r.summary.flows[0];
    f.delivered_bytes as f64 * 8.0 / r.summary.sim_time_s / 7600.0
}

#[test]
fn lossless_hop_carries_536_of_every_589_frame_bytes() {
    // 576-byte packets are 31 frames (589 payload bytes): at most 536/589 = 0.910 of 7600 bit/s.
    let r = run_json(&is707(None, json!("none"), 300.0, 1));
    let g = goodput(&r);
    assert!(g > 0.86 && g <= 536.0 / 589.0, "{g}");
    let rlp = r.summary.links[1].rlp.as_ref().expect("rlp summary");
    assert_eq!(rlp.fwd.frames_damaged, 0);
    assert_eq!(rlp.fwd.frames_resent, 0);
    assert!(
        rlp.fwd.slot_utilization > 0.95,
        "{}",
        rlp.fwd.slot_utilization
    );
}

#[test]
fn fading_hop_conserves_packets_and_stays_below_one_minus_pe() {
    for idle in [json!("none"), json!(5), json!("unlimited")] {
        for fd_t in [0.01, 1.0] {
            let r = run_json(&is707(Some((0.3, fd_t)), idle.clone(), 2_000.0, 2));
            let g = goodput(&r);
            assert!(g > 0.0 && g < 0.7, "idle {idle} fd_t {fd_t}: {g}");
            let rlp = r.summary.links[1].rlp.as_ref().unwrap();
            let damaged = rlp.fwd.frames_damaged as f64
                / (rlp.fwd.data_frames_sent + rlp.fwd.frames_resent) as f64;
            assert!((damaged - 0.3).abs() < 0.1, "frame error rate {damaged}");
            // The NAKs of the forward direction cross the reverse channel: on the nearly
            // independent channel they are lost at P_e. (On a slow one more are: a round that
            // failed for a lost NAK is retried within the same reverse fade.)
            let nak_lost = rlp.fwd.nak_frames_lost as f64 / rlp.fwd.nak_frames_sent as f64;
            if fd_t == 1.0 {
                assert!((nak_lost - 0.3).abs() < 0.05, "NAK loss {nak_lost}");
            } else {
                assert!(nak_lost > 0.25, "NAK loss {nak_lost}");
            }
            let drops = &r.summary.aggregate.drops;
            assert_eq!(drops["corruption"], 0);
            assert_eq!(
                drops["arq_give_up"],
                rlp.fwd.packets_given_up + rlp.rev.packets_given_up
            );
            if idle == json!("none") {
                assert_eq!(rlp.fwd.idle_frames_sent, 0);
                assert_eq!(rlp.fwd.missing_by_idle, 0);
            } else {
                assert!(rlp.fwd.idle_frames_sent > 0);
            }
        }
    }
}

#[test]
fn idle_frames_help_in_the_correlated_high_loss_regime() {
    // Seed 004 Figures 3 and 4: at f_d T = 0.01 and P_e = 0.3 idle frames raise goodput.
    let (mut without, mut with) = (0.0, 0.0);
    for seed in 1..=3 {
        without += goodput(&run_json(&is707(
            Some((0.3, 0.01)),
            json!("none"),
            3_000.0,
            seed,
        )));
        with += goodput(&run_json(&is707(
            Some((0.3, 0.01)),
            json!("unlimited"),
            3_000.0,
            seed,
        )));
    }
    assert!(
        with > without,
        "with idle frames {with} / 3, without {without} / 3"
    );
}

#[test]
fn same_seed_same_result() {
    let a = run_json(&is707(Some((0.2, 0.1)), json!(3), 500.0, 7));
    let b = run_json(&is707(Some((0.2, 0.1)), json!(3), 500.0, 7));
    let c = run_json(&is707(Some((0.2, 0.1)), json!(3), 500.0, 8));
    assert_eq!(a.summary, b.summary);
    assert_eq!(a.traces.goodput, b.traces.goodput);
    assert_ne!(
        a.summary.flows[0].delivered_bytes,
        c.summary.flows[0].delivered_bytes
    );
}

#[test]
fn bad_rlp_fields_name_their_path() {
    let cases = [
        (
            json!({"idle_frames": "sometimes"}),
            "links[1].rlp.idle_frames",
        ),
        (json!({"nak_rounds": 0}), "links[1].rlp.nak_rounds"),
        (json!({"pe": 0.3}), "links[1].rlp.fd_t"),
        (json!({"pe": 1.5, "fd_t": 0.1}), "links[1].rlp.pe"),
        (json!({"payload_bytes": 30}), "links[1].rlp.payload_bytes"),
        (json!({"window": 3}), "links[1].rlp"),
    ];
    for (rlp, path) in cases {
        let mut v = is707(None, json!("none"), 10.0, 1);
        v["links"][1]["rlp"] = rlp.clone();
        let e = parse_scenario_json(&v.to_string()).expect_err(&rlp.to_string());
        assert!(e.to_string().starts_with(path), "{rlp}: {e}");
    }
    let mut v = is707(Some((0.1, 0.1)), json!("none"), 10.0, 1);
    v["links"][1]["fwd"] = json!({"loss": {"model": "bernoulli", "p": 0.1}});
    let e = parse_scenario_json(&v.to_string()).unwrap_err();
    assert!(e.to_string().starts_with("links[1].fwd.loss"), "{e}");
}
