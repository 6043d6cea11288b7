//! Competing traffic (issue 30): UDP sources beside TCP on the same links and queues, short
//! TCP flows arriving as a Poisson process, their figures in the summary, and the scenario's
//! refusals. Durations short enough for a debug build.

use crate::support;

use farlink_core::parse_scenario_json;
use serde_json::{json, Value};
use support::run_json;

/// S - R 100 Mbit/s 1 ms, R - D 10 Mbit/s 20 ms with a drop-tail queue of 100 packets; a bulk
/// TCP flow (unbounded, from 0 s) and `extra` flows.
fn dumbbell(duration: &str, extra: Vec<Value>) -> Value {
    let mut flows = vec![json!({"name": "bulk", "from": "S", "to": "D",
        "tcp": {"receive_buffer": "4MiB"}, "app": {"kind": "unbounded"}})];
    flows.extend(extra);
    json!({
        "duration": duration,
        "seed": 7,
        "nodes": ["S", "R", "D"],
        "links": [
            {"name": "S-R", "a": "S", "b": "R", "rate": "100Mbps", "delay": "1ms", "queue_pkts": 1000},
            {"name": "R-D", "a": "R", "b": "D", "rate": "10Mbps", "delay": "20ms", "queue_pkts": 100}
        ],
        "flows": flows,
        "trace": {}
    })
}

fn flow<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap()
}

fn summary(v: &Value) -> Value {
    serde_json::to_value(&run_json(v).summary).unwrap()
}

#[test]
fn a_5_mbps_cbr_leaves_a_bulk_tcp_flow_about_5_mbps_of_10() {
    let cbr = json!({"name": "cbr", "from": "S", "to": "D",
        "app": {"kind": "udp_cbr", "rate": "5Mbps", "packet_bytes": 1000}});
    let s = summary(&dumbbell("60s", vec![cbr]));
    let (tcp, udp) = (flow(&s, "bulk"), flow(&s, "cbr"));
    let tcp_bps = tcp["goodput_bps"].as_f64().unwrap();
    assert!((tcp_bps / 5e6 - 1.0).abs() < 0.10, "TCP {tcp_bps}");
    // The CBR keeps close to its rate: only what overflows the shared queue is lost.
    let udp_bps = udp["goodput_bps"].as_f64().unwrap();
    assert!(udp_bps > 4.5e6 && udp_bps <= 5.0e6, "UDP {udp_bps}");
    assert_eq!(udp["app"], "udp_cbr");
    let loss = udp["loss_rate"].as_f64().unwrap();
    assert!((0.0..0.1).contains(&loss), "{loss}");
    // 20 + 1 ms of propagation and a queue of at most 100 packets at 10 Mbit/s (120 ms).
    let owd = &udp["one_way_delay_s"];
    let (p50, p99) = (owd["p50"].as_f64().unwrap(), owd["p99"].as_f64().unwrap());
    assert!(p50 > 0.021 && p99 < 0.021 + 0.125 && p50 <= p99, "{owd}");
    assert!(udp["jitter_s"]["p99"].as_f64().unwrap() > 0.0);
    assert_eq!(
        udp["packets_sent"].as_u64().unwrap(),
        60 * 5_000_000 / 8000 + 1,
        "5 Mbit/s of 1000-byte payloads, at 0 s to 60 s inclusive (the run's last instant runs)"
    );
    // Alone, the TCP flow would fill the link: the CBR took its half.
    let alone = summary(&dumbbell("60s", vec![]));
    let alone_bps = flow(&alone, "bulk")["goodput_bps"].as_f64().unwrap();
    assert!(alone_bps > 9.0e6, "{alone_bps}");
    // No key of the traffic figures on a TCP flow, and no fairness index for one long flow.
    assert!(tcp.get("loss_rate").is_none() && alone["aggregate"].get("jain_index").is_none());
}

#[test]
fn a_udp_datagram_is_conserved_and_counted_on_the_link() {
    let cbr = json!({"name": "cbr", "from": "S", "to": "D", "stop": "2s",
        "app": {"kind": "udp_cbr", "rate": "20Mbps", "packet_bytes": 1250}});
    let mut sc = dumbbell("5s", vec![cbr]);
    sc["flows"].as_array_mut().unwrap().remove(0);
    let s = summary(&sc);
    let udp = flow(&s, "cbr");
    // 20 Mbit/s offered to a 10 Mbit/s link for 2 s: about half is dropped at R's queue.
    let sent = udp["packets_sent"].as_u64().unwrap();
    let got = udp["packets_received"].as_u64().unwrap();
    let dropped = udp["drops"]["queue_overflow"].as_u64().unwrap();
    assert_eq!(sent, 4000);
    assert_eq!(got + dropped, sent, "everything arrived or was dropped");
    let loss = udp["loss_rate"].as_f64().unwrap();
    assert!((loss - 0.5).abs() < 0.05, "{loss}");
    assert_eq!(udp["finished"], true);
    let link = &s["links"][1]["fwd"];
    assert_eq!(link["delivered_pkts"].as_u64().unwrap(), got);
}

#[test]
fn on_off_sources_send_about_their_duty_cycle() {
    let onoff = json!({"name": "voice", "from": "S", "to": "D",
        "app": {"kind": "udp_onoff", "rate": "64kbps", "packet_bytes": 160,
                "on": "1s", "off": "1.5s", "distribution": "pareto", "shape": 1.5}});
    let mut sc = dumbbell("600s", vec![onoff]);
    sc["flows"].as_array_mut().unwrap().remove(0);
    let s = summary(&sc);
    let bps = flow(&s, "voice")["goodput_bps"].as_f64().unwrap();
    // 64 kbit/s for 40 % of the time; Pareto 1.5 periods converge slowly: within 35 %.
    assert!((bps / 25_600.0 - 1.0).abs() < 0.35, "{bps}");
    assert_eq!(flow(&s, "voice")["loss_rate"], 0.0);
}

#[test]
fn short_flows_arrive_complete_and_report_their_completion_times() {
    let class = json!({"name": "web", "from": "S", "to": "D",
        "app": {"kind": "flows_poisson", "load": 0.3,
                "size": {"distribution": "exponential", "mean": "20kB"}}});
    let mut sc = dumbbell("30s", vec![class]);
    sc["flows"].as_array_mut().unwrap().remove(0);
    let r = run_json(&sc);
    let s = serde_json::to_value(&r.summary).unwrap();
    let web = flow(&s, "web");
    // 0.3 x 10 Mbit/s over 160 kbit per flow: 18.75 per second, about 560 in 30 s.
    let arrived = web["flows_arrived"].as_u64().unwrap();
    assert!((arrived as f64 / 562.5 - 1.0).abs() < 0.15, "{arrived}");
    let finished = web["flows_finished"].as_u64().unwrap();
    assert!(finished + 5 >= arrived, "{finished} of {arrived}");
    let fct = &web["fct_s"];
    let p50 = fct["p50"].as_f64().unwrap();
    // At least the handshake and one way: 42 ms.
    assert!(p50 > 0.063 && p50 < 1.0, "{fct}");
    assert!(fct["p99"].as_f64().unwrap() >= fct["p90"].as_f64().unwrap());
    let slow = &web["slowdown"];
    assert!(slow["p50"].as_f64().unwrap() >= 0.95, "{slow}");
    let buckets = fct["by_size"].as_array().unwrap();
    let counted: u64 = buckets.iter().map(|b| b["flows"].as_u64().unwrap()).sum();
    assert_eq!(counted, arrived);
    // Every connection simulated its handshake, each one its own connection.
    assert_eq!(r.flows.len() as u64, arrived);
    assert!(r
        .flows
        .iter()
        .all(|c| c.handshake && c.name.starts_with("web#")));
}

#[test]
fn two_long_flows_get_a_fairness_index() {
    let second = json!({"name": "bulk2", "from": "S", "to": "D",
        "tcp": {"receive_buffer": "4MiB"}, "app": {"kind": "unbounded"}});
    let s = summary(&dumbbell("30s", vec![second]));
    let j = s["aggregate"]["jain_index"].as_f64().unwrap();
    assert!(j > 0.8 && j <= 1.0, "{j}");
}

#[test]
fn the_same_seed_gives_the_same_traffic() {
    let extra = vec![
        json!({"name": "voice", "from": "S", "to": "D",
            "app": {"kind": "udp_onoff", "rate": "64kbps", "packet_bytes": 160, "on": "1s", "off": "1s"}}),
        json!({"name": "web", "from": "S", "to": "D",
            "app": {"kind": "flows_poisson", "rate": 5, "size": {"distribution": "lognormal", "mean": "30kB", "sigma": 1.0}}}),
    ];
    let sc = dumbbell("10s", extra);
    assert_eq!(summary(&sc), summary(&sc));
    let mut other = sc.clone();
    other["seed"] = json!(8);
    assert_ne!(summary(&sc)["flows"][2], summary(&other)["flows"][2]);
}

fn refusal(app: Value, tcp: Option<Value>) -> String {
    let mut f = json!({"from": "S", "to": "D", "app": app});
    if let Some(t) = tcp {
        f["tcp"] = t;
    }
    let sc = json!({"duration": "1s", "nodes": ["S", "D"],
        "links": [{"a": "S", "b": "D", "rate": "1Mbps", "delay": "1ms"}], "flows": [f]});
    parse_scenario_json(&sc.to_string())
        .unwrap_err()
        .to_string()
}

#[test]
fn bad_traffic_is_refused_naming_the_field() {
    let e = refusal(
        json!({"kind": "udp_cbr", "rate": "1Mbps", "packet_bytes": 100}),
        Some(json!({"mss": "1000B"})),
    );
    assert!(e.starts_with("flows[0].tcp: a UDP flow"), "{e}");
    let e = refusal(json!({"kind": "udp_cbr", "rate": "1Mbps"}), None);
    assert!(e.starts_with("flows[0].app.packet_bytes: missing"), "{e}");
    let e = refusal(
        json!({"kind": "udp_onoff", "rate": "1Mbps", "packet_bytes": 100, "on": "1s", "off": "1s",
               "distribution": "pareto", "shape": 1.0}),
        None,
    );
    assert!(
        e.starts_with("flows[0].app.shape: expected a shape above 1"),
        "{e}"
    );
    let e = refusal(
        json!({"kind": "flows_poisson", "rate": 3, "load": 0.5,
               "size": {"distribution": "exponential", "mean": "1kB"}}),
        None,
    );
    assert!(e.starts_with("flows[0].app.load: give either"), "{e}");
    let e = refusal(json!({"kind": "flows_poisson", "rate": 3}), None);
    assert!(e.starts_with("flows[0].app.size: missing"), "{e}");
    let e = refusal(
        json!({"kind": "request_response", "request": "1kB", "response": "1kB"}),
        None,
    );
    assert!(e.starts_with("flows[0].app.think: missing"), "{e}");
    let e = refusal(
        json!({"kind": "request_response", "request": "1kB", "think": "1s",
               "response": {"distribution": "pareto", "mean": "1kB"}}),
        None,
    );
    assert!(e.starts_with("flows[0].app.response.shape: missing"), "{e}");
    let e = refusal(
        json!({"kind": "flows_poisson", "rate": 3, "size": {"cdf": [[100, 0.5], [50, 1.0]]}}),
        None,
    );
    assert!(
        e.starts_with("flows[0].app.size.cdf[1]: expected sizes non-decreasing"),
        "{e}"
    );
    let e = refusal(
        json!({"kind": "flows_poisson", "rate": 3, "size": {"cdf": "sizes.csv"}}),
        None,
    );
    assert!(e.contains("read by farlink's front end"), "{e}");
    let e = refusal(json!({"kind": "bulk", "size": {"mean": "1kB"}}), None);
    assert!(
        e.starts_with("flows[0].app.size: a bulk application's size"),
        "{e}"
    );
    let e = refusal(
        json!({"kind": "flows_poisson", "rate": 3, "size": {"mean": "1kB"}}),
        Some(json!({"handshake": false})),
    );
    assert!(e.starts_with("flows[0].tcp.handshake"), "{e}");
}

#[test]
fn a_short_flows_goodput_grid_ends_with_it() {
    // Light load on an empty 10 Mbit/s path: every connection is done within a second. Their
    // goodput rows (every 100 ms) stop there, not at the run's end 30 s later.
    let class = json!({"name": "web", "from": "S", "to": "D",
        "app": {"kind": "flows_poisson", "rate": 2, "size": {"distribution": "exponential", "mean": "5kB"}}});
    let mut sc = dumbbell("30s", vec![class]);
    sc["flows"].as_array_mut().unwrap().remove(0);
    sc["trace"] = json!({"goodput": true});
    let r = run_json(&sc);
    let g = &r.traces.goodput;
    assert!(!r.flows.is_empty() && !g.time_ns.is_empty());
    for c in &r.flows {
        let last_ns = (0..g.flow.len())
            .filter(|&i| g.flow[i] == c.id)
            .map(|i| g.time_ns[i])
            .max()
            .unwrap_or(0);
        let start_ns = c.start.as_nanos();
        assert!(
            last_ns < start_ns + 2_000_000_000,
            "{}: last row at {last_ns} ns",
            c.name
        );
    }
}

#[test]
fn the_budget_counts_a_classs_connections() {
    // 100 connections a second for 10,000 s: a million connections, each its own sender and
    // receiver to the end of the run, more than the default 2 GiB.
    let class = |rate: f64| {
        json!({"name": "web", "from": "S", "to": "D",
            "app": {"kind": "flows_poisson", "rate": rate, "size": {"mean": "1kB"}}})
    };
    let memory = |rate: f64| {
        let mut sc = dumbbell("10000s", vec![class(rate)]);
        sc["flows"].as_array_mut().unwrap().remove(0);
        let sc = parse_scenario_json(&sc.to_string()).unwrap();
        farlink_core::world::budget::estimate(&sc).memory_bytes
    };
    assert!(
        memory(100.0) > 2.0 * 1024.0 * 1024.0 * 1024.0,
        "{}",
        memory(100.0)
    );
    assert!(memory(0.01) < 64.0 * 1024.0 * 1024.0, "{}", memory(0.01));
}

#[test]
fn request_response_exchanges_wait_for_each_answer_and_think() {
    let rr = json!({"name": "rr", "from": "S", "to": "D", "stop": "50s",
        "app": {"kind": "request_response", "request": "300B", "response": "20kB", "think": "1s"}});
    let mut sc = dumbbell("60s", vec![rr]);
    sc["flows"].as_array_mut().unwrap().remove(0);
    let r = run_json(&sc);
    let s = serde_json::to_value(&r.summary).unwrap();
    let f = flow(&s, "rr");
    // 50 s of a 1 s mean think time and a short exchange: about 45 exchanges.
    let done = f["exchanges_completed"].as_u64().unwrap();
    assert!((30..=60).contains(&done), "{done}");
    assert_eq!(
        f["exchanges"].as_u64().unwrap(),
        done,
        "none left outstanding after the stop"
    );
    // A request and its 20 kB answer take at least a round trip (42 ms) and the answer's
    // 16 ms at 10 Mbit/s.
    let p50 = f["response_time_s"]["p50"].as_f64().unwrap();
    assert!(p50 > 0.058 && p50 < 0.5, "{p50}");
    // 300 bytes one way and 20 kB back per exchange, nothing else.
    assert_eq!(f["delivered_bytes"].as_u64().unwrap(), done * 20_300);
    // Both connections ended once the client stopped: the run ends before its duration.
    assert_eq!(s["all_finished"], true);
    assert!(s["sim_time_s"].as_f64().unwrap() < 51.0);
    let names: Vec<&str> = r.flows.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["rr#0", "rr#1"]);
    assert_eq!(
        (r.flows[1].from.as_str(), r.flows[1].to.as_str()),
        ("D", "S")
    );
}
