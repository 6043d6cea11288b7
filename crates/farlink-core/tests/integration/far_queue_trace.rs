//! The `queue_delay` and `aqm` traces of a far link's own queue: a bundle's MLPPP queue (in
//! front of the members' transmit queues) and a radio hop's queue (where packets wait whole
//! before RLP frames them). A row names its queue by `link` and `forward`, as for a plain link:
//! a link direction has one queue a discipline runs, whatever the kind of link.
//!
//! What the traces must show: under a window larger than the path holds, drop-tail's sojourn
//! grows with the standing queue; CoDel's stays near its target once it has the queue in hand.
//! "Near" is the target plus about one packet's time on the link: CoDel leaves a queue alone
//! while it holds at most one packet's worth behind its head (RFC 8289 section 5.5,
//! `maxpacket`), and at 2400 bit/s a member takes 5 s to send a 1500-byte packet, an IS-707
//! hop 0.62 s for a 576-byte one.

use farlink_core::RunResult;
use serde_json::{json, Value};

use crate::support;
use support::run_json;

const S: u64 = 1_000_000_000;

/// The `iridium-4` preset (python/farlink/scenarios/iridium-4.toml: four 2400 bit/s Iridium
/// members, 0.5 s, selective-repeat ARQ, transmit queues of 3, an MLPPP queue of 100, BIC)
/// for `duration`, its MLPPP queue running `discipline`, with a 200 KB window instead of the
/// preset's 22 KB: the preset's window holds its standing queue in the members' transmit
/// queues, a large one builds it in the MLPPP queue.
fn iridium_4(discipline: &str, duration: &str) -> Value {
    let frame_loss = json!({"model": "bernoulli", "p": 0.013});
    json!({
        "seed": 1, "duration": duration, "nodes": ["Summit", "Kansas"],
        "links": [{
            "name": "iridium", "a": "Summit", "b": "Kansas", "queue_pkts": 100,
            "queue_discipline": discipline,
            "fwd": {"loss": frame_loss}, "rev": {"loss": frame_loss},
            "bundle": {
                "members": 4, "rate": "2400bps", "delay": "0.5s", "txqueue_pkts": 3,
                "call_drop_rate": "1/50min", "detection_delay": "30s", "t_d": "30s",
                "dial_time": "14.5s", "t_f": "30s", "max_attempts": 10, "blocked_for": "1h",
                "primary": false, "start": "connected", "fragment": false,
                "reassembly_timeout": "60s",
                "arq": {"mode": "selective-repeat", "frame": "27B", "max_tries": 3}
            }
        }],
        "flows": [{
            "name": "ftp", "from": "Summit", "to": "Kansas",
            "tcp": {"mss_bytes": 1460, "receive_buffer": "200KB",
                    "initial_window_segments": 3, "recovery": "sack", "cc": "bic"},
            "app": {"kind": "unbounded"}
        }],
        "trace": {"queue_delay": true, "aqm": true, "queue": true}
    })
}

/// The `is707` preset (python/farlink/scenarios/is707.toml: a 1.5 Mbit/s, 200 ms wired link,
/// then the IS-707 hop at 9600 bit/s, frame error rate 0.1, Reno with MSS 536) for
/// `duration`, the radio hop's queue running `discipline`, with a 100-segment window instead
/// of the preset's 20, which never fills the queue.
fn is707(discipline: &str, duration: &str) -> Value {
    json!({
        "seed": 1, "duration": duration, "nodes": ["RH", "IAP", "MH"],
        "links": [
            {"name": "wired", "a": "RH", "b": "IAP", "rate": "1.5Mbps", "delay": "200ms",
             "queue_pkts": 100},
            {"name": "radio", "a": "IAP", "b": "MH", "rate": "9600bps", "delay": "20ms",
             "queue_pkts": 100, "queue_discipline": discipline,
             "rlp": {"frame_bytes": 24, "payload_bytes": 19, "nak_rounds": 3,
                     "idle_frames": "none", "pe": 0.1, "fd_t": 0.1}}
        ],
        "flows": [{
            "name": "ftp", "from": "RH", "to": "MH",
            "tcp": {"mss_bytes": 536, "timestamps": false, "sack": false,
                    "window_scaling": true, "recovery": "reno", "cc": "reno",
                    "delayed_ack": false, "initial_window_segments": 1, "max_rto": "64s",
                    "receive_buffer_bytes": 53600},
            "app": {"kind": "unbounded"}
        }],
        "trace": {"queue_delay": true, "aqm": true, "queue": true}
    })
}

/// Link `link`'s `forward` direction's rows of the `queue_delay` trace: (time, sojourn) in ns.
fn sojourns(r: &RunResult, link: u32, forward: bool) -> Vec<(u64, u64)> {
    let t = &r.traces.queue_delay;
    (0..t.time_ns.len())
        .filter(|&i| t.link[i] == link && t.forward[i] == forward)
        .map(|i| (t.time_ns[i], t.sojourn_ns[i]))
        .collect()
}

/// The median and the maximum sojourn, in s, of the rows in `[from_s, to_s)`.
fn median_and_max_s(rows: &[(u64, u64)], from_s: u64, to_s: u64) -> (f64, f64) {
    let mut q: Vec<u64> = rows
        .iter()
        .filter(|(at, _)| (from_s * S..to_s * S).contains(at))
        .map(|&(_, s)| s)
        .collect();
    assert!(!q.is_empty(), "no rows in [{from_s}, {to_s}) s");
    q.sort_unstable();
    (q[q.len() / 2] as f64 / 1e9, q[q.len() - 1] as f64 / 1e9)
}

/// Every packet that left link `link`'s `forward` queue has a row, in time order: the rows
/// are the packets offered less those the queue dropped and those still in it at the end
/// (the last row of the `queue` trace).
fn assert_a_row_per_packet_through_the_queue(r: &RunResult, link: u32, forward: bool) {
    let rows = sojourns(r, link, forward);
    assert!(
        rows.windows(2).all(|w| w[0].0 <= w[1].0),
        "rows out of order"
    );
    let l = &r.summary.links[link as usize];
    let d = if forward { &l.fwd } else { &l.rev };
    let q = &r.traces.queue;
    let left = (0..q.time_ns.len())
        .rev()
        .find(|&i| q.link[i] == link && q.forward[i] == forward)
        .map_or(0, |i| u64::from(q.pkts[i]));
    let dropped = d.drops["queue_overflow"] + d.drops["aqm"];
    assert_eq!(rows.len() as u64, d.offered_pkts - dropped - left, "{d:?}");
}

/// Rows of the `aqm` trace for link `link`'s `forward` direction: (event code, value).
fn aqm_events(r: &RunResult, link: u32, forward: bool) -> Vec<(u8, f64)> {
    let a = &r.traces.aqm;
    (0..a.time_ns.len())
        .filter(|&i| a.link[i] == link && a.forward[i] == forward)
        .map(|i| (a.event[i], a.value[i]))
        .collect()
}

#[test]
fn codel_bounds_the_sojourn_in_a_bundles_mlppp_queue_where_droptail_grows() {
    let tail = run_json(&iridium_4("droptail", "600s"));
    let codel = run_json(&iridium_4("codel", "600s"));
    // Both directions of the bundle are traced (the ACKs cross the reverse MLPPP queue).
    for r in [&tail, &codel] {
        assert_a_row_per_packet_through_the_queue(r, 0, true);
        assert_a_row_per_packet_through_the_queue(r, 0, false);
    }
    let (tail_rows, codel_rows) = (sojourns(&tail, 0, true), sojourns(&codel, 0, true));
    // After 120 s of warm-up (slow start over an 18 s round trip), in two halves.
    let (tail_early, _) = median_and_max_s(&tail_rows, 120, 360);
    let (tail_late, _) = median_and_max_s(&tail_rows, 360, 600);
    let (codel_early, codel_early_max) = median_and_max_s(&codel_rows, 120, 360);
    let (codel_late, codel_late_max) = median_and_max_s(&codel_rows, 360, 600);
    println!(
        "iridium-4, 200 KB window, MLPPP queue sojourn median (max) in s, 120-360 s then \
         360-600 s: drop-tail {tail_early:.1}, {tail_late:.1}; CoDel {codel_early:.2} \
         ({codel_early_max:.2}), {codel_late:.2} ({codel_late_max:.2})"
    );
    // Drop-tail's standing queue grows toward its 100 packets (500 s at 9600 bit/s).
    assert!(tail_late > 1.5 * tail_early && tail_late > 30.0);
    // CoDel's stays under one member's packet time (5 s) plus its 5 ms target throughout.
    assert!(codel_early_max < 5.005 && codel_late_max < 5.005);
    assert!(codel_late < 0.1 * tail_late);
    // The aqm trace holds CoDel's dropping state on the bundle's queue, entered first.
    let events = aqm_events(&codel, 0, true);
    assert_eq!(events.first().map(|e| e.0), Some(0), "{events:?}");
    assert!(events.iter().any(|e| e.0 == 1), "{events:?}");
    assert!(codel.summary.links[0].fwd.drops["aqm"] > 0);
    assert!(
        aqm_events(&tail, 0, true).is_empty(),
        "drop-tail has no state"
    );
}

#[test]
fn codel_bounds_the_sojourn_in_a_radio_hops_queue_where_droptail_grows() {
    let tail = run_json(&is707("droptail", "400s"));
    let codel = run_json(&is707("codel", "400s"));
    for r in [&tail, &codel] {
        assert_a_row_per_packet_through_the_queue(r, 1, true);
        assert_a_row_per_packet_through_the_queue(r, 1, false);
        // The wired link's queue is traced as before, beside the radio hop's.
        assert!(!sojourns(r, 0, true).is_empty());
    }
    let (tail_rows, codel_rows) = (sojourns(&tail, 1, true), sojourns(&codel, 1, true));
    let (tail_early, _) = median_and_max_s(&tail_rows, 60, 200);
    let (tail_late, _) = median_and_max_s(&tail_rows, 200, 340);
    let (codel_median, codel_max) = median_and_max_s(&codel_rows, 60, 400);
    println!(
        "is707, 100-segment window, radio hop queue sojourn median in s, 60-200 s then \
         200-340 s: drop-tail {tail_early:.2}, {tail_late:.2}; CoDel 60-400 s {codel_median:.2} \
         (max {codel_max:.2})"
    );
    assert!(tail_late > 1.3 * tail_early && tail_late > 10.0);
    // A 576-byte packet is 31 frames of 20 ms (0.62 s); a packet waits for the one before
    // it, longer by the frames NAKed again (a frame error rate of 0.1).
    assert!(codel_median < 2.0 * 0.62, "{codel_median}");
    assert!(codel_max < 4.0 * 0.62, "{codel_max}");
    assert!(codel_median < 0.1 * tail_late);
    let events = aqm_events(&codel, 1, true);
    assert_eq!(events.first().map(|e| e.0), Some(0), "{events:?}");
}
