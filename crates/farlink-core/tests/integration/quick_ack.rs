//! The receiver's quick-ACK mode (`quick_ack`, Linux's) in whole runs: the receiver's own RTO
//! comes from the path's round trip, so on a long path the round trips of slow start are not
//! silences that restart the mode, and with or without a handshake the count is the same.

use crate::support;

use serde_json::{json, Value};

/// ACKs the receiver sent for a lossless 300 kB bulk transfer over 20 Mbit/s with `one_way`
/// delay each way, Linux's timer rules, delayed ACKs of 40 ms, `tcp` besides.
fn acks_sent(one_way: &str, tcp: Value) -> u64 {
    let mut t = json!({"rto": "linux", "delayed_ack_timeout": "40ms", "receive_buffer": "1MiB"});
    for (k, v) in tcp.as_object().unwrap() {
        t[k] = v.clone();
    }
    let v = json!({
        "duration": "60s",
        "nodes": ["S", "D"],
        "links": [{"name": "S-D", "a": "S", "b": "D", "rate": "20Mbps", "delay": one_way,
                   "queue_pkts": 1000}],
        "flows": [{"from": "S", "to": "D", "tcp": t,
                   "app": {"kind": "bulk", "size_bytes": 300_000}}]
    });
    let r = support::run_json(&v);
    let f = &r.summary.flows[0];
    assert!(f.finished && f.retransmissions == 0, "lossless: {f:?}");
    f.acks_sent
}

#[test]
fn on_a_geo_path_only_the_first_data_gets_quick_acks() {
    // 300 ms each way: the receiver's RTO is srtt + 2 srtt = 1.8 s (Linux's first sample), above
    // every silence of slow start (a round trip, 600 ms), so the 16 quick ACKs of the first
    // data are all there is: 16 segments acked one by one instead of in 8 pairs, 8 ACKs more,
    // or 7 where a flight's pairs then end on an odd segment that the timer acks. Were the
    // RTO floor (200 ms) the bound, each of the transfer's 5 round trips would restart the
    // mode.
    for handshake in [false, true] {
        let plain = acks_sent("300ms", json!({"handshake": handshake}));
        let quick = acks_sent("300ms", json!({"handshake": handshake, "quick_ack": true}));
        assert!(
            (plain + 7..=plain + 8).contains(&quick),
            "handshake {handshake}: {quick} against {plain}"
        );
    }
}

#[test]
fn off_by_default_and_on_a_short_path_only_the_first_data_too() {
    // The default is off; on a 5 ms path no silence of a lossless transfer reaches the
    // receiver's RTO (srtt + 200 ms), so again only the first data's 16 quick ACKs.
    let plain = acks_sent("5ms", json!({}));
    assert_eq!(plain, acks_sent("5ms", json!({"quick_ack": false})));
    let quick = acks_sent("5ms", json!({"quick_ack": true}));
    assert!(
        (plain + 7..=plain + 8).contains(&quick),
        "{quick} against {plain}"
    );
}
