//! What Linux's Multipath TCP adds, through the simulator (`src/mptcp/linux.rs`): the
//! connection-level retransmission timer and the default scheduler, which queues data on a
//! subflow beyond its window.

use serde_json::{json, Value};

use crate::support;
use support::run_json;

/// Two 64 kbit/s members, 50 ms each way; member 0 drops its call early (a drop every 10 s on
/// average, the other member none) and the drop is noticed only after 60 s, so its subflow is
/// silent for a minute before it is closed; a 32 KB send buffer for the connection.
fn silent_member(size: &str, mptcp: Value) -> Value {
    json!({
        "seed": 1,
        "duration": "1h",
        "nodes": ["A", "B"],
        "links": [{"name": "pair", "a": "A", "b": "B", "queue_pkts": 20,
                   "bundle": {"members": [{"name": "m0", "rate": "64kbps", "delay": "50ms",
                                           "call_drop_rate": "1/10s"},
                                          {"name": "m1", "rate": "64kbps", "delay": "50ms",
                                           "call_drop_rate": "0/1h"}],
                              "txqueue_pkts": 3, "primary": false, "start": "connected",
                              "detection_delay": "60s", "t_d": "30s", "dial_time": "10s"}}],
        "flows": [{"name": "ftp", "from": "A", "to": "B",
                   "tcp": {"mss_bytes": 1460, "receive_buffer": "1MB", "send_buffer": "32KB",
                           "recovery": "sack", "cc": "reno"},
                   "app": {"kind": "bulk", "size": size},
                   "transport": "mptcp", "mptcp": mptcp}],
        "trace": {"goodput": true}
    })
}

/// The bytes the application read from `from_s` to `to_s` (the goodput trace's grid).
fn read_between(r: &farlink_core::RunResult, from_s: f64, to_s: f64) -> u64 {
    let g = &r.traces.goodput;
    let at = |t: f64| {
        g.time_ns
            .iter()
            .zip(&g.delivered_bytes)
            .take_while(|(ns, _)| (**ns as f64) / 1e9 <= t)
            .map(|(_, b)| *b)
            .last()
            .unwrap_or(0)
    };
    at(to_s) - at(from_s)
}

#[test]
fn the_connection_timer_resends_a_silent_subflows_head_on_the_idle_one() {
    let size = 400_000;
    let run = |timer: bool| {
        run_json(&silent_member(
            "400KB",
            json!({"scheduler": "linux", "coupling": "none", "retransmit_timer": timer}),
        ))
    };
    let with = run(true);
    let without = run(false);
    let f = &with.summary.flows[0];
    let g = &without.summary.flows[0];
    for x in [f, g] {
        // Every byte once and in order: the engine checks that at the end of every run.
        assert!(x.finished, "{x:?}");
        assert_eq!(x.delivered_bytes, size);
    }
    // Member 0's call drops within the first seconds and is noticed 60 s later (the run
    // without the timer lasts that long).
    let noticed = g.subflows[0].down_intervals_s[0][0];
    let dropped = noticed - 60.0;
    assert!(dropped < 10.0, "dropped at {dropped} s");
    // Without the timer the data waiting on the dead call holds the DATA_ACK, and with it the
    // send buffer, until the drop is noticed: nothing more is read for the minute.
    let stalled = read_between(&without, dropped + 5.0, noticed);
    assert_eq!(stalled, 0, "read while the subflow was silent, no timer");
    assert!(g.transfer_time_s.unwrap() > noticed - 1.0);
    // With it the head of the unacknowledged data goes again on member 1 once that one has
    // nothing outstanding, the DATA_ACK moves, and the transfer goes on over member 1: it
    // ends before the drop is even noticed.
    let m = f.mptcp.as_ref().unwrap();
    assert!(m.timer_retransmissions.unwrap() > 0, "{m:?}");
    assert!(m.duplicate_bytes <= m.reinjected_bytes, "{m:?}");
    let read = read_between(&with, dropped + 5.0, noticed);
    assert!(
        read > 100_000,
        "{read} bytes read while member 0 was silent, with the timer"
    );
    assert!(
        f.transfer_time_s.unwrap() < noticed,
        "{:?}",
        f.transfer_time_s
    );
    assert_eq!(g.mptcp.as_ref().unwrap().timer_retransmissions, None);
}

#[test]
fn linux_scheduler_queues_beyond_the_window_what_a_dead_call_then_holds() {
    // Without the timer, so that only the scheduler differs: Linux's pushes whole bursts into
    // the subflow whose queue drains soonest, whatever its window; farlink's `minrtt` maps a
    // segment only where the window has room. When member 0's call dies, what waits on it is
    // what its window held (minrtt) or what its send queue held (linux): more, and all of it
    // reinjected once the drop is noticed.
    let run = |scheduler: &str| {
        run_json(&silent_member(
            "400KB",
            json!({"scheduler": scheduler, "coupling": "none", "retransmit_timer": false}),
        ))
    };
    let linux = run("linux");
    let minrtt = run("minrtt");
    let (l, w) = (&linux.summary.flows[0], &minrtt.summary.flows[0]);
    assert!(l.finished && w.finished);
    let (lr, wr) = (
        l.mptcp.as_ref().unwrap().reinjected_bytes,
        w.mptcp.as_ref().unwrap().reinjected_bytes,
    );
    assert!(lr > wr, "reinjected: linux {lr}, minrtt {wr}");
}

#[test]
fn the_first_subflow_can_be_kept_through_its_members_drop() {
    // As the emulator leaves it to the kernel: member 0's subflow is not closed when its drop
    // is noticed, nothing is reinjected from it, and it carries on after the redial.
    let mut sc = silent_member(
        "400KB",
        json!({"scheduler": "linux", "coupling": "none", "keep_first_subflow": true}),
    );
    sc["links"][0]["bundle"]["detection_delay"] = json!("2s");
    let kept = run_json(&sc);
    let f = &kept.summary.flows[0];
    assert!(f.finished, "{f:?}");
    assert_eq!(f.delivered_bytes, 400_000);
    let s0 = &f.subflows[0];
    assert!(!s0.down_intervals_s.is_empty(), "{s0:?}");
    assert_eq!(s0.established, 1, "never reopened: {s0:?}");
    // Closed on the drop (the default), the member's subflow is replaced after the redial.
    sc["flows"][0]["mptcp"]["keep_first_subflow"] = json!(false);
    let closed = run_json(&sc);
    let c = &closed.summary.flows[0];
    assert!(c.finished);
    assert!(c.subflows[0].established >= 2, "{:?}", c.subflows[0]);
}
