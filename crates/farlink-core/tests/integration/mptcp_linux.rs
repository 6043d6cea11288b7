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

#[test]
fn a_members_close_sends_the_whole_queue_again_the_live_subflows_data_too() {
    // Without the timer, so that only the close differs: member 0's call drops early and the
    // drop is noticed 5 s later, when its subflow is closed. Linux's close (the default with
    // its scheduler) rewinds the send queue to the DATA_ACK: member 1's data that is in flight,
    // or already at the receiver out of order, goes again and arrives twice; RFC 8684's
    // reinjection sends only what the closed subflow carried, which never arrived.
    let run = |close: Option<&str>| {
        let mut mptcp =
            json!({"scheduler": "linux", "coupling": "none", "retransmit_timer": false});
        if let Some(c) = close {
            mptcp["close_resends"] = json!(c);
        }
        let mut sc = silent_member("400KB", mptcp);
        sc["links"][0]["bundle"]["detection_delay"] = json!("5s");
        run_json(&sc)
    };
    let (default, queue, subflow) = (run(None), run(Some("queue")), run(Some("subflow")));
    let (d, q, s) = (
        &default.summary.flows[0],
        &queue.summary.flows[0],
        &subflow.summary.flows[0],
    );
    for x in [d, q, s] {
        assert!(x.finished, "{x:?}");
        assert_eq!(x.delivered_bytes, 400_000);
        assert!(
            !x.subflows[0].down_intervals_s.is_empty(),
            "{:?}",
            x.subflows[0]
        );
    }
    assert_eq!(
        d.transfer_time_s, q.transfer_time_s,
        "queue is linux's default"
    );
    let (qm, sm) = (q.mptcp.as_ref().unwrap(), s.mptcp.as_ref().unwrap());
    assert_eq!(sm.duplicate_bytes, 0, "{sm:?}");
    assert!(qm.duplicate_bytes > 20_000, "{qm:?}");
    assert!(
        qm.reinjected_bytes > sm.reinjected_bytes + 20_000,
        "{qm:?} {sm:?}"
    );
}

#[test]
fn a_kept_subflow_on_a_dead_member_goes_stale_and_the_queue_goes_on_the_others() {
    // Member 0's subflow is kept through its drop (as the emulator leaves the kernel's first
    // subflow) and the send buffers do not bound, so member 1 always has data outstanding: the
    // connection-level timer finds no idle subflow for the head, and the DATA_ACK waits on
    // member 0's dead call. Silent over more than four expiries while member 1 hears ACKs,
    // member 0's subflow is marked stale and the whole send queue goes again on member 1
    // (copies of member 1's own queue included); with `stale_loss_count = 0`, farlink's
    // default, it never is, and only the timer's head retransmissions move member 0's data.
    let run = |stale_loss_count: Option<u8>| {
        let mut mptcp =
            json!({"scheduler": "linux", "coupling": "none", "keep_first_subflow": true});
        if let Some(n) = stale_loss_count {
            mptcp["stale_loss_count"] = json!(n);
        }
        let mut sc = silent_member("400KB", mptcp);
        sc["links"][0]["bundle"]["detection_delay"] = json!("2s");
        sc["flows"][0]["tcp"]
            .as_object_mut()
            .unwrap()
            .remove("send_buffer");
        run_json(&sc)
    };
    let (stale, never) = (run(Some(4)), run(None));
    let (f, g) = (&stale.summary.flows[0], &never.summary.flows[0]);
    for x in [f, g] {
        assert!(x.finished, "{x:?}");
        assert_eq!(x.delivered_bytes, 400_000);
        assert_eq!(x.subflows[0].established, 1, "kept: {:?}", x.subflows[0]);
        assert!(!x.subflows[0].down_intervals_s.is_empty());
    }
    let (fm, gm) = (f.mptcp.as_ref().unwrap(), g.mptcp.as_ref().unwrap());
    // Marked once: it stays stale until it hears an ACK, after its member's redial.
    assert_eq!(fm.stale_subflows, Some(1), "{fm:?}");
    assert_eq!(gm.stale_subflows, Some(0), "{gm:?}");
    assert!(gm.timer_retransmissions.unwrap() > 0, "{gm:?}");
    // The rewound queue went on member 1, a copy of what it held already included.
    assert!(fm.duplicate_bytes > 100_000, "{fm:?}");
    assert!(gm.duplicate_bytes < 10_000, "{gm:?}");
    let sent1 = |r: &farlink_core::RunResult| r.summary.flows[0].subflows[1].bytes_sent;
    assert!(
        sent1(&stale) > sent1(&never) + 100_000,
        "{} {}",
        sent1(&stale),
        sent1(&never)
    );
    // The timer off, nothing counts.
    let mut sc = silent_member(
        "100KB",
        json!({"scheduler": "linux", "keep_first_subflow": true, "retransmit_timer": false}),
    );
    sc["flows"][0]["tcp"]
        .as_object_mut()
        .unwrap()
        .remove("send_buffer");
    let off = run_json(&sc);
    assert_eq!(
        off.summary.flows[0].mptcp.as_ref().unwrap().stale_subflows,
        None
    );
}
