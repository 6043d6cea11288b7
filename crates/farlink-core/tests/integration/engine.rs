//! The engine end to end: scenarios in, summaries, traces and taps out.
//!
//! Validation cases with named tolerance bands (the rates a lossless chain reaches, fairness
//! on a dumbbell, the Mathis et al. estimate under random loss), exact results for a bulk
//! transfer, determinism, conservation under stress, and the traces' and taps' shape. Every
//! scenario is small enough for a debug build.

use farlink_core::link::{DROP_CAUSE_CORRUPTION, DROP_CAUSE_QUEUE_OVERFLOW};
use farlink_core::time::BitRate;
use farlink_core::{parse_scenario_json, run};
use serde_json::{json, Value};

use crate::support;
use support::{run_json, stpd_wireless};

/// "1000-byte packets" as seed 003 means them: 960 bytes of payload + 40 of headers, no
/// timestamps; NewReno; the default 128 KiB receive buffer (136 packets, more than the 61
/// the stpd path holds with its buffer).
fn tcp_1000_byte_packets() -> Value {
    json!({"mss_bytes": 960, "timestamps": false, "sack": false, "recovery": "newreno"})
}

/// Seed 003's wireless scenario (Figure 4.7): S - R 10 Mbps 0.1 ms, R - D 1.5 Mbps 80 ms,
/// 30 packets at R, Bernoulli loss `p` on R -> D.
fn stpd(p: f64, duration_s: f64) -> Value {
    let mut v = stpd_wireless(tcp_1000_byte_packets(), "80ms", p);
    v["duration_s"] = json!(duration_s);
    v
}

/// S - R 10 Mbps 0.2 ms, R - D 1.5 Mbps 20 ms, large queues, no loss.
fn chain(app: Value) -> Value {
    json!({
        "duration": "30s",
        "nodes": ["S", "R", "D"],
        "links": [
            {"a": "S", "b": "R", "rate": "10Mbps", "delay": "0.2ms", "queue_pkts": 1000},
            {"a": "R", "b": "D", "rate": "1.5Mbps", "delay": "20ms", "queue_pkts": 1000}
        ],
        "flows": [{"name": "f", "from": "S", "to": "D", "tcp": tcp_1000_byte_packets(), "app": app}]
    })
}

#[test]
fn lossless_chain_reaches_the_bottleneck_rate() {
    let r = run_json(&chain(json!({"kind": "unbounded"})));
    let f = &r.summary.flows[0];
    assert_eq!(f.bottleneck_bps, 1_500_000);
    // At most 960/1000 of the rate is payload.
    assert!(
        f.normalized_goodput > 0.9 && f.normalized_goodput < 0.96,
        "normalised goodput {}",
        f.normalized_goodput
    );
    assert_eq!(f.retransmissions, 0);
    assert_eq!(f.timeouts, 0);
    assert_eq!(r.summary.aggregate.drops.values().sum::<u64>(), 0);
    assert_eq!(r.summary.sim_time_s, 30.0);
    assert!(!f.finished);
    assert_eq!(f.transfer_time_s, None);
}

#[test]
fn bulk_transfer_time_and_bytes_are_exact() {
    // Three full segments fit the initial window: they leave S back to back, queue at R, and
    // the last one reaches D after tx(S-R) + 0.2 ms + 3 tx(R-D) + 20 ms, to the nanosecond.
    let r = run_json(&chain(json!({"kind": "bulk", "size_bytes": 3 * 960})));
    let f = &r.summary.flows[0];
    let expected_ns = BitRate::from_bps(10_000_000)
        .transmission_time(1000)
        .as_nanos()
        + 200_000
        + 3 * BitRate::from_bps(1_500_000)
            .transmission_time(1000)
            .as_nanos()
        + 20_000_000;
    assert!(f.finished);
    assert_eq!(f.delivered_bytes, 2880);
    assert_eq!(f.app_bytes, Some(2880));
    let got_ns = (f.transfer_time_s.unwrap() * 1e9).round() as u64;
    assert_eq!(got_ns, expected_ns);
    // The run ends as soon as the last byte is delivered.
    assert_eq!(r.summary.sim_time_s, f.finish_s.unwrap());
    assert!(r.summary.all_finished);

    // A larger transfer over a lossy hop: every byte exactly once, whatever the losses.
    let mut v = stpd(0.02, 600.0);
    v["flows"][0]["app"] = json!({"kind": "bulk", "size": "1MB"});
    let r = run_json(&v);
    let f = &r.summary.flows[0];
    assert!(f.finished, "1 MB in 600 s at 2 % loss");
    assert_eq!(f.delivered_bytes, 1_000_000);
    assert!(f.retransmissions > 0);
    assert!(f.transfer_time_s.unwrap() > 1_000_000.0 * 8.0 / 1.5e6);
}

#[test]
fn dumbbell_flows_share_the_bottleneck_roughly_fairly() {
    // Equal paths and a bottleneck buffer of several times the pipe (60 packets against about
    // 8). With a buffer of 30 the shares of this deterministic drop-tail dumbbell swing between
    // 0.3 and 0.6 with the second flow's start time: the traffic phase effects of Floyd and
    // Jacobson (1992), which nothing random breaks here.
    let v = json!({
        "duration": "60s",
        "nodes": ["S1", "S2", "R1", "R2", "D1", "D2"],
        "links": [
            {"a": "S1", "b": "R1", "rate": "10Mbps", "delay": "1ms", "queue_pkts": 1000},
            {"a": "S2", "b": "R1", "rate": "10Mbps", "delay": "1ms", "queue_pkts": 1000},
            {"name": "bottleneck", "a": "R1", "b": "R2", "rate": "1.5Mbps", "delay": "20ms",
             "queue_pkts": 60},
            {"a": "R2", "b": "D1", "rate": "10Mbps", "delay": "1ms", "queue_pkts": 1000},
            {"a": "R2", "b": "D2", "rate": "10Mbps", "delay": "1ms", "queue_pkts": 1000}
        ],
        "flows": [
            {"name": "a", "from": "S1", "to": "D1", "tcp": tcp_1000_byte_packets(),
             "app": {"kind": "unbounded"}},
            {"name": "b", "from": "S2", "to": "D2", "start": "0.5s", "tcp": tcp_1000_byte_packets(),
             "app": {"kind": "unbounded"}}
        ]
    });
    let r = run_json(&v);
    let s = &r.summary;
    let (a, b) = (s.flows[0].goodput_bps, s.flows[1].goodput_bps);
    let share = a / (a + b);
    assert!((0.35..=0.65).contains(&share), "share of flow a: {share}");
    // Jain's fairness index (x1 + x2)^2 / (2 (x1^2 + x2^2)).
    let jain = (a + b).powi(2) / (2.0 * (a * a + b * b));
    assert!(jain > 0.9, "Jain index {jain}");
    assert_eq!(s.aggregate.bottleneck_bps, Some(1_500_000));
    let total = s.aggregate.normalized_goodput.unwrap();
    assert!(
        total > 0.85 && total < 0.96,
        "aggregate normalised goodput {total}"
    );
    assert!(
        s.aggregate.drops["queue_overflow"] > 0,
        "the bottleneck queue overflows"
    );
}

#[test]
fn bernoulli_loss_goodput_is_within_a_factor_two_of_mathis() {
    // Mathis, Semke, Mahdavi and Ott (1997): B = MSS / RTT * sqrt(3 / (2 b p)), with b = 1
    // (delayed ACKs off) and RTT the path's base round trip (propagation both ways plus the
    // serialization of a data packet and of an ACK on each hop). Queueing adds little: at
    // p = 0.01 the window seldom reaches the 31-packet pipe.
    let p = 0.01;
    let mut v = stpd(p, 200.0);
    v["flows"][0]["tcp"]["delayed_ack"] = json!(false);
    let r = run_json(&v);
    let f = &r.summary.flows[0];
    let rtt_s = 2.0 * (0.1e-3 + 80e-3)
        + (BitRate::from_bps(10_000_000)
            .transmission_time(1000)
            .as_nanos()
            + BitRate::from_bps(1_500_000)
                .transmission_time(1000)
                .as_nanos()
            + BitRate::from_bps(1_500_000)
                .transmission_time(40)
                .as_nanos()
            + BitRate::from_bps(10_000_000)
                .transmission_time(40)
                .as_nanos()) as f64
            * 1e-9;
    let mathis_bps = 960.0 * 8.0 / rtt_s * (3.0 / (2.0 * p)).sqrt();
    let ratio = f.goodput_bps / mathis_bps;
    assert!(
        (0.5..=2.0).contains(&ratio),
        "goodput {} bit/s vs Mathis {mathis_bps} bit/s (ratio {ratio})",
        f.goodput_bps
    );
    // The measured loss rate on the hop is close to p.
    let rd = &r.summary.links[1].fwd;
    let observed =
        rd.drops["corruption"] as f64 / (rd.delivered_pkts + rd.drops["corruption"]) as f64;
    assert!((observed - p).abs() < 0.004, "observed loss {observed}");
    assert_eq!(rd.analytic_loss_rate, p);
}

#[test]
fn same_seed_gives_identical_results_and_another_seed_differs() {
    let mut v = stpd(0.02, 30.0);
    v["trace"] = json!({"all": true});
    v["pcap"] = json!(["R-D"]);
    let one = run_json(&v);
    let two = run_json(&v);
    assert_eq!(one.summary, two.summary);
    assert_eq!(
        serde_json::to_string(&one.summary).unwrap(),
        serde_json::to_string(&two.summary).unwrap()
    );
    assert_eq!(one.traces, two.traces);
    assert_eq!(one.taps, two.taps);

    v["seed"] = json!(2);
    let other = run_json(&v);
    assert_ne!(
        one.summary.flows[0].delivered_bytes,
        other.summary.flows[0].delivered_bytes
    );
    assert_ne!(one.traces.drops, other.traces.drops);

    // Traces and taps never change the simulation itself.
    v["seed"] = json!(1);
    v.as_object_mut().unwrap().remove("trace");
    v.as_object_mut().unwrap().remove("pcap");
    let quiet = run_json(&v);
    assert_eq!(quiet.summary, one.summary);
    assert_eq!(quiet.traces, Default::default());
    assert!(quiet.taps.is_empty());
}

#[test]
fn conservation_holds_under_heavy_loss_and_queue_overflow() {
    // Every loss model, lossy ACK directions, two-packet queues, and all three applications.
    let v = json!({
        "seed": 99,
        "duration": "120s",
        "nodes": ["A", "B", "R", "D"],
        "links": [
            {"a": "A", "b": "R", "rate": "10Mbps", "delay": "1ms", "queue_pkts": 2,
             "fwd": {"loss": {"model": "lcg16807", "rate": 0.1}},
             "rev": {"loss": {"model": "bernoulli", "p": 0.2}}},
            {"a": "B", "b": "R", "rate": "2Mbps", "delay": "5ms", "queue_bytes": 3000,
             "fwd": {"loss": {"model": "markov_fading", "pe": 0.2, "fd_t": 0.01}},
             "rev": {"loss": {"model": "gilbert_packets", "mean_burst_pkts": 4, "rate": 0.1}}},
            {"a": "R", "b": "D", "rate": "512kbps", "delay": "100ms", "queue_pkts": 2,
             "fwd": {"loss": {"model": "gilbert_elliott", "mean_burst_pkts": 8, "rate": 0.2}},
             "rev": {"loss": {"model": "bernoulli", "p": 0.3}}}
        ],
        "flows": [
            {"name": "bulk", "from": "A", "to": "D", "app": {"kind": "bulk", "size": "200KB"},
             "tcp": {"max_rto": "8s"}},
            {"name": "reno", "from": "B", "to": "D",
             "tcp": {"recovery": "reno", "sack": false, "growth": "byte-counting"},
             "app": {"kind": "unbounded"}, "stop": "90s"},
            {"name": "tahoe", "from": "D", "to": "A", "tcp": {"recovery": "tahoe", "timestamps": false},
             "app": {"kind": "unbounded"}},
            {"name": "telnet", "from": "A", "to": "B",
             "app": {"kind": "telnet", "mean_interval": "300ms", "message": "20B"}}
        ],
        "trace": {"drops": true, "seq": true}
    });
    let r = run_json(&v);
    let s = &r.summary;
    for l in &s.links {
        for d in [&l.fwd, &l.rev] {
            let dropped: u64 = d.drops.values().sum();
            assert_eq!(
                d.offered_pkts,
                d.delivered_pkts + dropped + d.in_flight_pkts,
                "{}",
                l.name
            );
        }
    }
    let drops = &s.aggregate.drops;
    assert!(
        drops["queue_overflow"] > 0 && drops["corruption"] > 0,
        "{drops:?}"
    );
    let traced = &r.traces.drops;
    assert_eq!(traced.time_ns.len() as u64, drops.values().sum::<u64>());
    assert_eq!(
        traced
            .cause
            .iter()
            .filter(|&&c| c == DROP_CAUSE_QUEUE_OVERFLOW)
            .count() as u64,
        drops["queue_overflow"]
    );
    assert_eq!(
        traced
            .cause
            .iter()
            .filter(|&&c| c == DROP_CAUSE_CORRUPTION)
            .count() as u64,
        drops["corruption"]
    );
    for f in &s.flows {
        assert!(f.delivered_bytes > 0, "{}: nothing delivered", f.name);
        if let Some(written) = f.app_bytes {
            assert!(f.delivered_bytes <= written, "{}", f.name);
        }
        assert!(f.segments_sent.unwrap() > 0);
    }
    assert!(s.flows[0].retransmissions > 0);
    assert!(s.flows.iter().map(|f| f.timeouts).sum::<u64>() > 0);
}

#[test]
fn telnet_flow_gets_every_message_delivered() {
    let v = json!({
        "duration": "60s",
        "nodes": ["C", "S"],
        "links": [{"a": "C", "b": "S", "rate": "64kbps", "delay": "250ms"}],
        "flows": [{"name": "telnet", "from": "C", "to": "S", "stop": "20s",
                   "app": {"kind": "telnet", "mean_interval": "200ms", "message_bytes": 10}}]
    });
    let r = run_json(&v);
    let f = &r.summary.flows[0];
    assert!(f.finished);
    let written = f.app_bytes.unwrap();
    assert_eq!(f.delivered_bytes, written);
    assert_eq!(written % 10, 0);
    // About 20 s / 200 ms = 100 messages (Poisson: sd 10).
    let messages = written / 10;
    assert!((60..=140).contains(&messages), "{messages} messages");
    // The run stops once the last message is in, well before 60 s.
    assert!(r.summary.sim_time_s < 21.0, "{}", r.summary.sim_time_s);
}

#[test]
fn unbounded_flow_with_a_stop_drains_and_finishes() {
    let mut v = chain(json!({"kind": "unbounded"}));
    v["flows"][0]["stop"] = json!("5s");
    let r = run_json(&v);
    let f = &r.summary.flows[0];
    assert!(f.finished);
    assert_eq!(Some(f.delivered_bytes), f.app_bytes);
    assert!(
        f.finish_s.unwrap() > 5.0 && f.finish_s.unwrap() < 7.0,
        "{:?}",
        f.finish_s
    );
    assert!(f.normalized_goodput > 0.85, "{}", f.normalized_goodput);
}

#[test]
fn traces_record_on_change_and_taps_record_departures() {
    let mut v = stpd(0.02, 20.0);
    v["trace"] = json!({"all": true, "goodput_interval": "500ms"});
    v["pcap"] = json!(["R-D"]);
    let r = run_json(&v);
    let s = &r.summary;
    let f = &s.flows[0];
    let t = &r.traces;

    // Times never go back, and every column has the length of its time column.
    let monotone = |ts: &[u64]| ts.windows(2).all(|w| w[0] <= w[1]);
    assert!(monotone(&t.cwnd.time_ns) && monotone(&t.seq.time_ns) && monotone(&t.ack.time_ns));
    assert!(monotone(&t.rtt.time_ns) && monotone(&t.rto.time_ns) && monotone(&t.drops.time_ns));
    assert_eq!(t.cwnd.ssthresh_bytes.len(), t.cwnd.time_ns.len());
    assert_eq!(t.seq.retransmission.len(), t.seq.time_ns.len());

    // seq: every data segment sent, retransmissions flagged.
    assert_eq!(Some(t.seq.time_ns.len() as u64), f.segments_sent);
    assert_eq!(
        t.seq.retransmission.iter().filter(|&&x| x).count() as u64,
        f.retransmissions
    );
    // cwnd: on change only, so consecutive rows differ.
    assert!(t.cwnd.time_ns.len() > 10);
    for i in 1..t.cwnd.time_ns.len() {
        let row = |i: usize| {
            (
                t.cwnd.cwnd_bytes[i],
                t.cwnd.ssthresh_bytes[i],
                t.cwnd.effective_cwnd_bytes[i],
            )
        };
        assert_ne!(row(i - 1), row(i));
    }
    assert!(
        t.cwnd.ssthresh_bytes.iter().any(|&x| x < u64::MAX),
        "a loss reduced ssthresh"
    );
    // ack: strictly increasing SND.UNA.
    assert!(t.ack.ack.windows(2).all(|w| w[0] < w[1]));
    assert!(!t.rtt.rtt_ns.is_empty());
    assert!(
        t.rtt.rtt_ns.iter().all(|&x| x >= 160_000_000),
        "at least the propagation RTT"
    );
    assert!(t.rto.rto_ns.iter().all(|&x| x >= 1_000_000_000));
    // queue: within the limit at R, and back to its last value.
    let at_r: Vec<u32> = (0..t.queue.time_ns.len())
        .filter(|&i| t.queue.link[i] == 1 && t.queue.forward[i])
        .map(|i| t.queue.pkts[i])
        .collect();
    assert!(!at_r.is_empty() && at_r.iter().all(|&q| q <= 30));
    assert_eq!(
        u64::from(*at_r.iter().max().unwrap()),
        s.links[1].fwd.max_queue_pkts
    );
    // goodput: one sample per 500 ms from 0 to 20 s, ending at the bytes delivered.
    assert_eq!(t.goodput.time_ns.len(), 41);
    assert_eq!(t.goodput.time_ns[40], 20_000_000_000);
    assert_eq!(
        *t.goodput.delivered_bytes.last().unwrap(),
        f.delivered_bytes
    );
    assert!(t.goodput.delivered_bytes.windows(2).all(|w| w[0] <= w[1]));

    // Taps: the packets leaving R-D's queues in either direction, data one way, ACKs back.
    assert_eq!(r.tap_sites.len(), 1);
    assert_eq!(r.tap_sites[0].links.len(), 1);
    assert_eq!(
        (
            r.tap_sites[0].links[0].a.as_str(),
            r.tap_sites[0].links[0].b.as_str()
        ),
        ("R", "D")
    );
    let l = &s.links[1];
    let fwd_taps = r.taps.iter().filter(|x| x.forward).count() as u64;
    let rev_taps = r.taps.iter().filter(|x| !x.forward).count() as u64;
    let started =
        |d: &farlink_core::world::DirectionSummary| d.offered_pkts - d.drops["queue_overflow"];
    assert!(fwd_taps <= started(&l.fwd) && fwd_taps + 31 >= started(&l.fwd));
    assert!(rev_taps <= started(&l.rev) && rev_taps + 1 >= started(&l.rev));
    assert!(r
        .taps
        .iter()
        .all(|x| x.link == 1 && x.flow == 0 && x.data == x.forward));
    assert!(r.taps.windows(2).all(|w| w[0].at <= w[1].at));
    assert!(r
        .taps
        .iter()
        .filter(|x| x.data)
        .all(|x| x.seg.payload_bytes == 960));
    // Back-to-back data departures are at least one transmission time apart.
    let data_times: Vec<u64> = r
        .taps
        .iter()
        .filter(|x| x.data)
        .map(|x| x.at.as_nanos())
        .collect();
    let tx = BitRate::from_bps(1_500_000)
        .transmission_time(1000)
        .as_nanos();
    assert!(data_times.windows(2).all(|w| w[1] - w[0] >= tx));
    assert_eq!(r.flows[0].from, "S");
    assert_eq!(r.flows[0].negotiated.mss_bytes, 960);
}

mod random {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Any scenario the parser accepts runs to a result, and every one it refuses is an
        /// error naming a path: nothing panics, and conservation holds.
        #[test]
        fn random_scenarios_run_or_are_refused_without_panic(
            rate_bps in prop_oneof![1 => Just(0u64), 2 => 1u64..2_000, 8 => 2_000u64..50_000_000],
            delay_us in 0u64..300_000,
            queue in prop_oneof![Just(json!({"queue_pkts": 0})), (0u32..50).prop_map(|n| json!({"queue_pkts": n})),
                                  (0u64..20_000).prop_map(|b| json!({"queue_bytes": b}))],
            p in prop_oneof![1 => Just(-0.1f64), 12 => 0.0f64..0.5, 1 => Just(1.0f64), 1 => Just(1.5f64)],
            mss in prop_oneof![1 => Just(10u32), 12 => 64u32..3_000, 1 => Just(65_495u32), 1 => Just(70_000u32)],
            recovery in prop::sample::select(vec!["tahoe", "reno", "newreno", "sack", "sack", "newreno", "cubic"]),
            sack in any::<bool>(),
            timestamps in any::<bool>(),
            delayed_ack in any::<bool>(),
            app in prop_oneof![
                Just(json!({"kind": "unbounded"})),
                (0u64..200_000).prop_map(|n| json!({"kind": "bulk", "size_bytes": n})),
                (1u64..500).prop_map(|ms| json!({"kind": "telnet", "mean_interval_s": ms as f64 / 1000.0})),
            ],
            duration_ms in 1u64..10_000,
        ) {
            let mut link = json!({"a": "A", "b": "B", "rate_bps": rate_bps, "delay_s": delay_us as f64 * 1e-6,
                                  "fwd": {"loss": {"model": "bernoulli", "p": p}},
                                  "rev": {"loss": {"model": "gilbert_elliott", "mean_burst_pkts": 3, "rate": 0.05}}});
            for (k, v) in queue.as_object().unwrap() {
                link[k] = v.clone();
            }
            let v = json!({
                "duration_s": duration_ms as f64 / 1000.0,
                "nodes": ["A", "B"],
                "links": [link],
                "flows": [{"from": "A", "to": "B", "app": app,
                           "tcp": {"mss_bytes": mss, "recovery": recovery, "sack": sack,
                                   "timestamps": timestamps, "delayed_ack": delayed_ack}}],
                "trace": {"all": true},
                "pcap": ["A-B"]
            });
            match parse_scenario_json(&v.to_string()) {
                Err(e) => prop_assert!(!e.path.is_empty() && !e.message.is_empty(), "{e}"),
                Ok(s) => {
                    let r = run(&s);
                    prop_assert!(r.is_ok(), "{:?}", r.err());
                }
            }
        }
    }
}

#[test]
fn drop_list_loses_exactly_the_listed_arrivals_of_one_direction() {
    // Seed 003 sec. 4.4.2: the 2000th and 2001st packets over the GEO hop are corrupted, no
    // other. With no queue overflow upstream, the k-th arrival at D is the k-th data segment R
    // sent, so the lost sequence numbers are those of the 2000th and 2001st segments in the
    // seq trace (the flow sends no retransmission before them).
    let v = json!({
        "seed": 1,
        "duration": "40s",
        "nodes": ["S", "R", "D"],
        "links": [
            {"a": "S", "b": "R", "rate": "10Mbps", "delay": "0.2ms"},
            {"a": "R", "b": "D", "rate": "1.5Mbps", "delay": "250ms", "queue_pkts": 200,
             "fwd": {"loss": {"model": "drop_list", "packets": [2000, 2001]}}}
        ],
        "flows": [{"from": "S", "to": "D", "app": {"kind": "unbounded"},
                   "tcp": tcp_1000_byte_packets()}],
        "trace": {"drops": true, "seq": true}
    });
    let r = run_json(&v);
    let drops = &r.traces.drops;
    assert_eq!(drops.cause, vec![DROP_CAUSE_CORRUPTION; 2]);
    assert!(drops.forward.iter().all(|&f| f) && drops.link == vec![1, 1]);
    let seq = &r.traces.seq;
    assert!(!seq.retransmission[..2001].iter().any(|&x| x));
    assert_eq!(drops.seq, vec![seq.seq[1999], seq.seq[2000]]);
    assert_eq!(r.summary.links[1].fwd.analytic_loss_rate, 0.0);
    assert_eq!(r.summary.links[1].fwd.loss_model, "drop_list");
}
