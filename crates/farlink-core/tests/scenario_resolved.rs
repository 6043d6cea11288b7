//! The resolved scenario: every default filled and marked, routes, rates, loss rates, RTTs.

use farlink_core::scenario::resolve_scenario_json;
use serde_json::Value;

fn resolve(text: &str) -> Value {
    serde_json::to_value(resolve_scenario_json(text).unwrap()).unwrap()
}

const TWO_HOPS: &str = r#"{
    "duration": "10s",
    "nodes": ["S", "R", "D"],
    "links": [
        {"a": "S", "b": "R", "rate": "10Mbps", "delay": "10ms"},
        {"name": "air", "a": "R", "b": "D", "rate_bps": 1000000, "delay": "50ms",
         "queue_pkts": 20, "fwd": {"loss": {"model": "bernoulli", "p": 0.01}}}
    ],
    "flows": [{"from": "S", "to": "D", "tcp": {"mss": "1000B"}, "app": {"kind": "unbounded"}}],
    "lossy_link": "air"
}"#;

#[test]
fn defaults_are_filled_and_listed() {
    let r = resolve(TWO_HOPS);
    assert_eq!(r["resolved_schema_version"], 1);
    assert_eq!(r["links"][0]["name"], "S-R");
    let tcp = &r["flows"][0]["tcp"];
    assert_eq!(tcp["mss_bytes"], 1000);
    assert_eq!(tcp["payload_bytes"], 988);
    assert_eq!(tcp["receive_buffer_bytes"], 131072);
    assert_eq!(tcp["min_rto_s"], 1.0);
    assert_eq!(tcp["cc"], "reno");
    assert_eq!(tcp["recovery"], "sack");
    let defaults: Vec<&str> = r["defaults"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for d in [
        "flows[0].tcp.min_rto_s",
        "flows[0].tcp.receive_buffer_bytes",
        "links[0].fwd.queue_pkts",
        "links[1].rev.loss.model",
        "lossy_link.direction",
    ] {
        assert!(defaults.contains(&d), "{d} not in {defaults:?}");
    }
    for given in [
        "flows[0].tcp.mss_bytes",
        "links[1].fwd.queue_pkts",
        "links[1].rev.rate_bps",
        "links[1].fwd.loss.p",
        "lossy_link.link",
    ] {
        assert!(!defaults.contains(&given), "{given} in {defaults:?}");
    }
}

#[test]
fn route_rates_loss_and_base_rtt() {
    let r = resolve(TWO_HOPS);
    let f = &r["flows"][0];
    let hops: Vec<(&str, &str)> = f["route"]["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["link"].as_str().unwrap(),
                h["direction"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(hops, [("S-R", "fwd"), ("air", "fwd")]);
    assert_eq!(f["route"]["ack"][0]["link"], "air");
    assert_eq!(f["route"]["ack"][0]["direction"], "rev");
    assert_eq!(f["bottleneck_bps"], 1_000_000);
    assert_eq!(f["bottleneck_link"], "air");
    assert_eq!(r["links"][1]["fwd"]["loss_rate"], 0.01);
    // Propagation 2 (10 + 50) ms; 1040 bytes at 10 and 1 Mbit/s; a 52-byte ACK back.
    let want = 0.12 + 1040.0 * 8.0 * (1e-7 + 1e-6) + 52.0 * 8.0 * (1e-7 + 1e-6);
    let got = f["base_rtt_s"].as_f64().unwrap();
    assert!((got - want).abs() < 1e-9, "{got} != {want}");
}

#[test]
fn a_bundle_gives_its_members_and_their_sum() {
    let r = resolve(
        r#"{"duration": "10s", "nodes": ["A", "B"],
            "links": [{"a": "A", "b": "B", "bundle": {"members": 3, "rate": "2400bps",
                       "delay": "0.5s", "arq": {"mode": "selective-repeat", "frame": "100B"}},
                       "fwd": {"loss": {"model": "bernoulli", "p": 0.1}}}],
            "flows": [{"from": "A", "to": "B", "app": {"kind": "unbounded"}}]}"#,
    );
    let l = &r["links"][0];
    assert_eq!(l["link_type"], "bundle");
    assert_eq!(l["fwd"]["rate_bps"], 7200);
    assert_eq!(l["bundle"]["members"].as_array().unwrap().len(), 3);
    assert_eq!(l["bundle"]["members"][2]["rate_bps"], 2400);
    // 1504 bytes in 16 frames of 100, each lost after 3 tries with probability 1e-3.
    let want = 1.0 - (1.0 - 1e-3f64).powi(16);
    let got = l["fwd"]["packet_loss_rate"].as_f64().unwrap();
    assert!((got - want).abs() < 1e-12, "{got} != {want}");
    assert_eq!(r["flows"][0]["bottleneck_bps"], 7200);
}

#[test]
fn an_invalid_scenario_is_refused_as_the_parser_refuses_it() {
    let e = resolve_scenario_json(r#"{"duration": "1s", "nodes": [], "links": []}"#).unwrap_err();
    assert_eq!(e.path, "nodes");
}
