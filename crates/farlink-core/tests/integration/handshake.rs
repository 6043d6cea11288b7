//! The simulated three-way handshake end to end: what it adds to a transfer over a GEO hop,
//! a lost SYN and a lost SYN-ACK on the path, conservation, and the runs without it unchanged.

use serde_json::{json, Value};

use crate::support;
use support::run_json;

/// S - G - D: a 10 Mbps LAN hop and a 2 Mbps GEO hop of 255 ms each way (RTT about 511 ms);
/// `fwd_loss` / `rev_loss` on the GEO hop.
fn geo(handshake: bool, size: &str, fwd_loss: Value, rev_loss: Value) -> Value {
    json!({
        "seed": 3,
        "duration": "120s",
        "nodes": ["S", "G", "D"],
        "links": [
            {"name": "S-G", "a": "S", "b": "G", "rate": "10Mbps", "delay": "0.5ms"},
            {"name": "G-D", "a": "G", "b": "D", "rate": "2Mbps", "delay": "255ms",
             "queue_pkts": 100, "fwd": {"loss": fwd_loss}, "rev": {"loss": rev_loss}}
        ],
        "flows": [{"name": "f", "from": "S", "to": "D",
                   "tcp": {"handshake": handshake},
                   "app": {"kind": "bulk", "size": size}}],
        "trace": {"all": true},
        "pcap": ["G-D"]
    })
}

fn none() -> Value {
    json!({"model": "none"})
}

#[test]
fn the_handshake_adds_one_round_trip_to_a_short_transfer_over_geo() {
    let without = run_json(&geo(false, "30KB", none(), none()));
    let with = run_json(&geo(true, "30KB", none(), none()));
    let (a, b) = (&without.summary.flows[0], &with.summary.flows[0]);
    assert!(a.finished && b.finished);
    assert!(a.handshake.is_none());
    let h = b.handshake.as_ref().unwrap();
    let setup = h.setup_time_s.unwrap();
    // One round trip of the 64-byte SYN and SYN-ACK: 2 x 255.5 ms of propagation and their
    // serialization.
    assert!((0.511..0.513).contains(&setup), "set-up {setup}");
    let grown = b.transfer_time_s.unwrap() - a.transfer_time_s.unwrap();
    assert!(
        (grown - setup).abs() < 0.005,
        "transfer time grew by {grown} s, set-up took {setup} s"
    );
    assert_eq!((h.syn_sent, h.syn_retransmissions), (1, 0));
    assert_eq!((h.syn_acks_sent, h.syn_ack_retransmissions), (1, 0));
    // The handshake's round trip was the first RTT sample.
    assert_eq!(with.traces.rtt.rtt_ns[0], (setup * 1e9).round() as u64);
    // SYN and SYN-ACK are packets like others on the GEO link: 2 more offered.
    let (la, lb) = (&without.summary.links[1], &with.summary.links[1]);
    assert_eq!(lb.fwd.offered_pkts, la.fwd.offered_pkts + 1);
    assert_eq!(lb.rev.offered_pkts, la.rev.offered_pkts + 1);
    // ... and among the taps, first, the SYN with seq 0 and its options.
    let first = &with.taps[0];
    assert!(
        first.data
            && first
                .seg
                .flags
                .contains(farlink_core::tcp::segment::Flags::SYN)
    );
    assert_eq!(first.seg.options.mss_bytes, Some(1460));
    assert!(with.flows[0].handshake && !without.flows[0].handshake);
    assert_eq!(with.flows[0].negotiated, without.flows[0].negotiated);
    // Not data: not in the seq trace.
    assert_eq!(with.traces.seq.seq.len(), without.traces.seq.seq.len());
}

#[test]
fn a_lost_syn_costs_the_initial_rto_and_data_then_starts_with_one_segment_and_rto_3s() {
    // drop_list counts arrivals on the link direction from 1: the SYN is the first.
    let r = run_json(&geo(
        true,
        "30KB",
        json!({"model": "drop_list", "packets": [1]}),
        none(),
    ));
    let f = &r.summary.flows[0];
    assert!(f.finished);
    let h = f.handshake.as_ref().unwrap();
    assert_eq!((h.syn_sent, h.syn_retransmissions), (2, 1));
    let setup = h.setup_time_s.unwrap();
    assert!(
        (1.511..1.513).contains(&setup),
        "1 s + one round trip: {setup}"
    );
    assert_eq!(r.traces.drops.syn, vec![true]);
    assert_eq!(r.traces.drops.ack_packet, vec![false]);
    // RFC 6298 (5.7): the RTO once data starts is 3 s (first entry after the SYN's backoff).
    let rto_at_setup = r
        .traces
        .rto
        .time_ns
        .iter()
        .zip(&r.traces.rto.rto_ns)
        .find(|(t, _)| **t >= (setup * 1e9) as u64)
        .map(|(_, rto)| *rto);
    assert_eq!(rto_at_setup, Some(3_000_000_000));
    // RFC 5681 3.1: one segment first.
    let first_burst = r
        .traces
        .seq
        .time_ns
        .iter()
        .filter(|t| **t == r.traces.seq.time_ns[0])
        .count();
    assert_eq!(first_burst, 1);
}

#[test]
fn a_lost_syn_ack_is_recovered_and_every_packet_is_accounted_for() {
    let r = run_json(&geo(
        true,
        "200KB",
        json!({"model": "bernoulli", "p": 0.02}),
        json!({"model": "drop_list", "packets": [1]}),
    ));
    let f = &r.summary.flows[0];
    assert!(f.finished, "conservation checked at the end of the run");
    assert_eq!(f.delivered_bytes, 200_000);
    let h = f.handshake.as_ref().unwrap();
    assert!(h.syn_ack_retransmissions >= 1, "{h:?}");
    assert!(h.setup_time_s.unwrap() > 1.0);
    let syn_ack_drops = r
        .traces
        .drops
        .syn
        .iter()
        .zip(&r.traces.drops.ack_packet)
        .filter(|(s, a)| **s && **a)
        .count();
    assert_eq!(syn_ack_drops, 1);
    let link = &r.summary.links[1];
    assert_eq!(
        link.rev.offered_pkts,
        link.rev.delivered_pkts + link.rev.drops.values().sum::<u64>() + link.rev.in_flight_pkts
    );
}

#[test]
fn the_same_scenario_and_seed_give_the_same_bytes() {
    let sc = geo(
        true,
        "200KB",
        json!({"model": "bernoulli", "p": 0.02}),
        none(),
    );
    let (a, b) = (run_json(&sc), run_json(&sc));
    assert_eq!(a.traces, b.traces);
    assert_eq!(a.taps, b.taps);
    assert_eq!(
        serde_json::to_string(&a.summary).unwrap(),
        serde_json::to_string(&b.summary).unwrap()
    );
}

#[test]
fn heavy_loss_both_ways_every_controller_and_recovery_conserve_and_finish() {
    for (cc, recovery) in [
        ("reno", "tahoe"),
        ("reno", "reno"),
        ("reno", "newreno"),
        ("cubic", "sack"),
        ("vegas", "sack"),
        ("bbr", "sack"),
        ("westwood", "sack"),
        ("stpd", "newreno"),
    ] {
        for seed in 1..=4 {
            let mut sc = geo(
                true,
                "60KB",
                json!({"model": "bernoulli", "p": 0.25}),
                json!({"model": "bernoulli", "p": 0.25}),
            );
            sc["seed"] = json!(seed);
            sc["duration"] = json!("3000s");
            sc["flows"][0]["tcp"] = json!({"handshake": true, "cc": cc, "recovery": recovery});
            let r = run_json(&sc);
            let f = &r.summary.flows[0];
            assert!(f.finished, "{cc}/{recovery} seed {seed}");
            assert_eq!(f.delivered_bytes, 60_000);
        }
    }
}

#[test]
fn a_telnet_source_completes_the_handshake_with_a_pure_ack() {
    let mut sc = geo(true, "1KB", none(), none());
    sc["flows"][0]["app"] = json!({"kind": "telnet", "mean_interval": "2s"});
    sc["flows"][0]["stop"] = json!("20s");
    let r = run_json(&sc);
    let h = r.summary.flows[0].handshake.clone().unwrap();
    assert_eq!(h.handshake_acks_sent, 1);
    assert!(r.summary.flows[0].finished);
    assert!(
        r.traces.seq.len_bytes.iter().all(|&b| b > 0),
        "no pure ACK in the seq trace"
    );
}
