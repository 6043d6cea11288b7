//! ST-PD TCP on seed 003's scenarios, beside Reno.
//!
//! The wired path of section 3.5.1 (Figure 3.7: S - R 10 Mbps 0.2 ms, R - D 1.5 Mbps 20 ms,
//! 14 packets at R; Figures 3.8–3.13) and the wireless path of section 4.4.1 (Figure 4.7:
//! 10 Mbps 0.1 ms, 1.5 Mbps 80 ms with random loss, 30 packets at R; Figure 4.8). TCP as ns-2's
//! agents of the seed: 1000-byte packets (960 bytes of payload), an ACK for every segment, an
//! initial window of one segment, neither SACK nor timestamps. Each test prints the figures it
//! checks (`cargo test -p farlink-core --test integration engine_stpd:: -- --nocapture`).

use farlink_core::RunResult;
use serde_json::{json, Value};

use crate::support;
use support::{run_json, stpd_wireless};

const PAYLOAD_BYTES: u64 = 960;

fn ns2_tcp(cc: &str, recovery: &str) -> Value {
    json!({"mss_bytes": PAYLOAD_BYTES, "timestamps": false, "sack": false, "delayed_ack": false,
           "initial_window_segments": 1, "recovery": recovery, "cc": cc})
}

/// Seed 003 Figure 3.7, `buffer` packets at R, 30 s as in section 3.5.1.
fn wired(cc: &str, recovery: &str, buffer: u32) -> Value {
    json!({
        "name": "stpd-wired",
        "duration": "30s",
        "nodes": ["S", "R", "D"],
        "links": [
            {"name": "S-R", "a": "S", "b": "R", "rate": "10Mbps", "delay": "0.2ms", "queue_pkts": 1000},
            {"name": "R-D", "a": "R", "b": "D", "rate": "1.5Mbps", "delay": "20ms", "queue_pkts": buffer}
        ],
        "flows": [{"name": "ftp", "from": "S", "to": "D", "tcp": ns2_tcp(cc, recovery),
                   "app": {"kind": "unbounded"}}],
        "trace": {"cwnd": true, "queue": true}
    })
}

/// Seed 003 Figure 4.7 with Bernoulli loss `p` on R -> D.
fn wireless(cc: &str, recovery: &str, p: f64, duration_s: f64) -> Value {
    let mut v = stpd_wireless(ns2_tcp(cc, recovery), "80ms", p);
    v["duration_s"] = json!(duration_s);
    v
}

/// Mean, minimum and maximum over `[from_ns, to_ns)` of a step function recorded on change.
fn step_stats(times: &[u64], values: &[f64], from_ns: u64, to_ns: u64) -> (f64, f64, f64) {
    let (mut area, mut lo, mut hi) = (0.0, f64::INFINITY, f64::NEG_INFINITY);
    for i in 0..times.len() {
        let start = times[i].max(from_ns);
        let end = times.get(i + 1).copied().unwrap_or(to_ns).min(to_ns);
        if end <= start {
            continue;
        }
        area += values[i] * (end - start) as f64;
        lo = lo.min(values[i]);
        hi = hi.max(values[i]);
    }
    (area / (to_ns - from_ns) as f64, lo, hi)
}

struct Wired {
    cwnd_pkts: (f64, f64, f64),
    queue_pkts: (f64, f64, f64),
    goodput_bps: f64,
    queue_drops: u64,
}

fn wired_figures(r: &RunResult, from_s: f64) -> Wired {
    let t = &r.traces;
    let from = (from_s * 1e9) as u64;
    let to = 30_000_000_000;
    let cwnd: Vec<f64> = t
        .cwnd
        .cwnd_bytes
        .iter()
        .map(|&b| b as f64 / PAYLOAD_BYTES as f64)
        .collect();
    let (qt, qv): (Vec<u64>, Vec<f64>) = (0..t.queue.time_ns.len())
        .filter(|&i| t.queue.link[i] == 1 && t.queue.forward[i])
        .map(|i| (t.queue.time_ns[i], f64::from(t.queue.pkts[i])))
        .unzip();
    let f = &r.summary.flows[0];
    Wired {
        cwnd_pkts: step_stats(&t.cwnd.time_ns, &cwnd, from, to),
        queue_pkts: step_stats(&qt, &qv, from, to),
        goodput_bps: f.goodput_bps,
        queue_drops: r.summary.links[1].fwd.drops["queue_overflow"],
    }
}

#[test]
fn wired_stpd_holds_the_bottleneck_queue_near_one_packet_while_reno_fills_the_buffer() {
    // Section 3.5.1: the pipe holds about 9 packets; "the congestion window size set by ST-PD
    // TCP should hover between the range of 10-12 packets" and the queue at R stays "around
    // one packet level", whatever the buffer; Reno fills the buffer and, with 4 packets,
    // starves the link after each halving (Figures 3.8–3.13). Measured after the first 5 s.
    for buffer in [14, 4] {
        let stpd = wired_figures(&run_json(&wired("stpd", "newreno", buffer)), 5.0);
        let reno = wired_figures(&run_json(&wired("reno", "reno", buffer)), 5.0);
        for (name, w) in [("stpd", &stpd), ("reno", &reno)] {
            println!(
                "wired, buffer {buffer:2}: {name} cwnd mean {:.2} [{:.2} .. {:.2}] pkts, queue at R mean {:.2} [{} .. {}] pkts, goodput {:.3} Mbit/s of payload, {} drops",
                w.cwnd_pkts.0, w.cwnd_pkts.1, w.cwnd_pkts.2, w.queue_pkts.0, w.queue_pkts.1,
                w.queue_pkts.2, w.goodput_bps / 1e6, w.queue_drops
            );
        }
        let (cwnd_mean, cwnd_min, cwnd_max) = stpd.cwnd_pkts;
        assert!(
            (9.5..=12.0).contains(&cwnd_mean),
            "ST-PD cwnd mean {cwnd_mean}"
        );
        assert!(
            cwnd_min >= 9.0 && cwnd_max <= 12.5,
            "ST-PD cwnd {cwnd_min} .. {cwnd_max}"
        );
        let (queue_mean, _, queue_max) = stpd.queue_pkts;
        assert!(
            (0.5..=1.5).contains(&queue_mean),
            "ST-PD queue mean {queue_mean}"
        );
        assert!(queue_max <= 3.0, "ST-PD queue max {queue_max}");
        assert_eq!(stpd.queue_drops, 0);
        // The link stays busy: at least 99 % of the payload rate 1.5 Mbit/s · 960/1000.
        assert!(stpd.goodput_bps > 0.99 * 1.44e6, "{}", stpd.goodput_bps);

        assert_eq!(
            reno.queue_pkts.2,
            f64::from(buffer),
            "Reno fills the buffer"
        );
        assert!(reno.queue_drops > 0);
        assert!(reno.queue_pkts.0 > 2.0 * queue_mean || buffer < 14);
        assert!(reno.goodput_bps < stpd.goodput_bps);
    }
}

#[test]
fn wireless_stpd_keeps_its_goodput_under_random_loss() {
    // Section 4.4.1, Figure 4.8: at p = 0.01 seed 003 reports 94 % for ST-PD and about 30 % for
    // Reno and Tahoe; at p = 0.1, 40 % for ST-PD. Our figures are printed, not fitted: the
    // bands below only say that ST-PD keeps most of the link where Reno loses most of it.
    // ST-PD repairs losses with NewReno's fast retransmit (its window is left alone either
    // way); "reno" is ns-2's TCP Reno. Normalised goodput is payload over the 1.5 Mbit/s
    // bottleneck (at most 0.96); "of the packet rate" divides by 960/1000.
    let mut at_one_percent = (0.0, 0.0);
    for p in [0.001, 0.01, 0.1] {
        let mut row = Vec::new();
        for (cc, recovery) in [("stpd", "newreno"), ("reno", "reno"), ("reno", "newreno")] {
            let r = run_json(&wireless(cc, recovery, p, 300.0));
            let f = &r.summary.flows[0];
            println!(
                "wireless p = {p}: {cc} ({recovery}) normalised goodput {:.3} ({:.3} of the packet rate), {} timeouts, {} fast retransmits",
                f.normalized_goodput,
                f.normalized_goodput * 1000.0 / PAYLOAD_BYTES as f64,
                f.timeouts,
                f.fast_retransmits.unwrap_or(0)
            );
            row.push(f.normalized_goodput);
        }
        assert!(row[0] > row[1] && row[0] > row[2], "p = {p}: {row:?}");
        if p == 0.01 {
            at_one_percent = (row[0], row[1]);
        }
    }
    let (stpd, reno) = at_one_percent;
    assert!(stpd > 0.7, "ST-PD at 1 %: {stpd}");
    assert!(stpd > 2.0 * reno, "ST-PD {stpd} against Reno {reno}");
}

/// The window (real valued, in packets) around the first loss, as (seconds after the loss,
/// cwnd), from `before_s` before it to `after_s` after it.
fn cwnd_around_first_loss(r: &RunResult, before_s: f64, after_s: f64) -> Vec<(f64, f64)> {
    let t = &r.traces;
    let loss = t.drops.time_ns[0] as f64 / 1e9;
    (0..t.cwnd.time_ns.len())
        .map(|i| {
            (
                t.cwnd.time_ns[i] as f64 / 1e9 - loss,
                t.cwnd.cwnd_bytes[i] as f64 / PAYLOAD_BYTES as f64,
            )
        })
        .filter(|&(x, _)| x >= -before_s && x <= after_s)
        .collect()
}

/// Extremes of a sampled signal (local maxima and minima after smoothing out equal steps).
fn turning_points(trace: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    for w in trace.windows(3) {
        let (a, b, c) = (w[0].1, w[1].1, w[2].1);
        if (b > a && b >= c) || (b < a && b <= c) {
            out.push(w[1]);
        }
    }
    out
}

#[test]
fn one_loss_disturbs_the_window_and_the_controller_settles() {
    // Seed 003 section 4.3: a wireless loss disturbs the queue, and the controller settles the
    // disturbance. The check behind the choice of reading of eqs. 4.1–4.11 (docs/stpd.md):
    // the simulated controller stays bounded and settles, which a reading with poles outside
    // the unit circle cannot describe. One packet time at 1.5 Mbit/s is 5.333 ms.
    let packet_time_s = 8000.0 / 1.5e6;

    // The wired path with a single loss (seed 2 gives exactly one in 30 s, at 12.9 s).
    let mut v = wired("stpd", "newreno", 14);
    v["seed"] = json!(2);
    v["links"][1]["fwd"] = json!({"loss": {"model": "bernoulli", "p": 0.0003}});
    v["trace"] = json!({"cwnd": true, "drops": true});
    let r = run_json(&v);
    assert_eq!(r.traces.drops.time_ns.len(), 1, "one loss");
    assert_eq!(r.summary.flows[0].timeouts, 0);
    let trace = cwnd_around_first_loss(&r, 1.0, 3.0);
    let before: Vec<f64> = trace.iter().filter(|p| p.0 < 0.0).map(|p| p.1).collect();
    let (lo, hi) = before
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
    let after = |from: f64, to: f64| {
        trace
            .iter()
            .filter(|p| p.0 >= from && p.0 < to)
            .map(|p| p.1)
            .fold((f64::INFINITY, 0.0f64), |(l, h), x| (l.min(x), h.max(x)))
    };
    let (lo1, hi1) = after(0.0, 0.5);
    let (lo2, hi2) = after(1.0, 3.0);
    let cycle: Vec<f64> = turning_points(&trace)
        .iter()
        .filter(|p| p.0 > 1.0 && p.1 > hi - 0.2)
        .map(|p| p.0)
        .collect();
    let period = (cycle.last().unwrap() - cycle[0]) / (cycle.len() - 1) as f64;
    println!(
        "wired, one loss: cwnd before [{lo:.2} .. {hi:.2}], 0-0.5 s after [{lo1:.2} .. {hi1:.2}], 1-3 s after [{lo2:.2} .. {hi2:.2}] pkts; residual cycle period {:.1} packet times",
        period / packet_time_s
    );
    assert!(lo1 > lo - 1.0 && hi1 < hi + 1.0, "bounded");
    assert!(
        lo2 > lo - 0.1 && hi2 < hi + 0.1,
        "back in the band of before the loss"
    );

    // Section 4.3.3's connection: RTT 16 ms, m = 3 packet times (R - D 4.7 ms here), where the
    // supervisor's gains are about the mean gains k_p = 0.368, k_d = 0.033.
    let mut v = wired("stpd", "newreno", 14);
    v["links"][0]["delay"] = json!("0.1ms");
    v["links"][1]["delay"] = json!("4.7ms");
    v["links"][1]["fwd"] = json!({"loss": {"model": "bernoulli", "p": 0.0003}});
    v["trace"] = json!({"cwnd": true, "drops": true});
    let r = run_json(&v);
    let trace = cwnd_around_first_loss(&r, 0.1, 0.4);
    let settled = trace.last().unwrap().1;
    let extremes: Vec<(f64, f64)> = turning_points(&trace)
        .into_iter()
        .filter(|p| p.0 > 0.0 && (p.1 - settled).abs() > 0.1)
        .collect();
    let shown: Vec<String> = extremes
        .iter()
        .map(|p| format!("{:.1}: {:.2}", p.0 / packet_time_s, p.1))
        .collect();
    println!(
        "m = 3, one loss: extremes (packet times after the loss: cwnd) {}; settled at {settled:.2}",
        shown.join(", ")
    );
    let deviation = |from: f64, to: f64| {
        trace
            .iter()
            .filter(|p| p.0 >= from * packet_time_s && p.0 < to * packet_time_s)
            .map(|p| (p.1 - settled).abs())
            .fold(0.0f64, f64::max)
    };
    let early = deviation(0.0, 20.0);
    let late = deviation(30.0, 75.0);
    println!("m = 3: largest deviation 0-20 packet times {early:.2}, 30-75 packet times {late:.3}");
    assert!(early > 0.5, "the loss disturbs the window");
    assert!(late < 0.2 * early, "and the disturbance dies out");
}

/// Seed 003 Figure 4.18: the GEO T1 hop, here without its two lost packets.
fn geo_t1(cc: &str, recovery: &str) -> Value {
    let mut tcp = ns2_tcp(cc, recovery);
    tcp["receive_buffer"] = json!("1MiB");
    json!({
        "name": "stpd-geo-t1",
        "duration": "60s",
        "nodes": ["S", "R1", "R2", "D"],
        "links": [
            {"name": "S-R1", "a": "S", "b": "R1", "rate": "10Mbps", "delay": "0.2ms", "queue_pkts": 1000},
            {"name": "R1-R2", "a": "R1", "b": "R2", "rate": "1.5Mbps", "delay": "250ms", "queue_pkts": 100},
            {"name": "R2-D", "a": "R2", "b": "D", "rate": "10Mbps", "delay": "0.2ms", "queue_pkts": 1000}
        ],
        "flows": [{"name": "ftp", "from": "S", "to": "D", "tcp": tcp, "app": {"kind": "unbounded"}}],
        "trace": {"cwnd": true}
    })
}

/// Seconds until the window first reaches `pkts` packets, if it does.
fn first_reaches(r: &RunResult, pkts: f64) -> Option<f64> {
    let c = &r.traces.cwnd;
    (0..c.time_ns.len())
        .find(|&i| c.cwnd_bytes[i] as f64 / PAYLOAD_BYTES as f64 >= pkts)
        .map(|i| c.time_ns[i] as f64 / 1e9)
}

#[test]
fn stpd_opens_by_about_one_segment_per_round_trip_at_every_bandwidth_rtt_product() {
    // On an empty queue eq. 3.3 reads 0, err = ref = 1 on every ACK and eq. 3.5 adds k_p per
    // ACK: k_p·M segments per round trip, about 1 with the supervisor's gains (docs/stpd.md,
    // "Opening"), and below 1.82 for any gains that leave the loop stable where it settles.
    // Reno's slow start doubles the window every round trip. Lossless runs of the seed's
    // wired (pipe about 9 packets), wireless (31) and GEO T1 (94) paths; the window is
    // timed to the pipe plus the reference packet.
    let mut wireless_lossless = wireless("stpd", "newreno", 0.0, 60.0);
    wireless_lossless["trace"] = json!({"cwnd": true});
    let cases = [
        (
            "wired",
            9.0,
            wired("stpd", "newreno", 14),
            wired("reno", "reno", 14),
        ),
        ("wireless", 31.0, wireless_lossless.clone(), {
            let mut v = wireless("reno", "reno", 0.0, 60.0);
            v["trace"] = json!({"cwnd": true});
            v
        }),
        (
            "GEO T1",
            94.0,
            geo_t1("stpd", "newreno"),
            geo_t1("reno", "reno"),
        ),
    ];
    for (name, pipe, stpd, reno) in cases {
        let (s, r) = (run_json(&stpd), run_json(&reno));
        let rtt_min = s.summary.flows[0].min_rtt_s.expect("an RTT sample");
        let t_stpd = first_reaches(&s, pipe + 1.0).expect("ST-PD reaches the pipe");
        let t_reno = first_reaches(&r, pipe + 1.0).expect("Reno reaches the pipe");
        let per_round_trip = (pipe + 1.0 - 1.0) / (t_stpd / rtt_min);
        let segments = |x: &RunResult| x.summary.flows[0].delivered_bytes / PAYLOAD_BYTES;
        println!(
            "{name}: RTT_min {:.1} ms; window {} packets at {t_stpd:.2} s for ST-PD ({:.1} round trips, {per_round_trip:.2} segments per round trip), {t_reno:.2} s for Reno; segments delivered ST-PD {}, Reno {}",
            rtt_min * 1e3,
            pipe + 1.0,
            t_stpd / rtt_min,
            segments(&s),
            segments(&r)
        );
        assert!(
            (0.7..1.82).contains(&per_round_trip),
            "{name}: {per_round_trip}"
        );
        assert!(t_reno < t_stpd, "{name}: slow start is faster");
    }
}
