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

/// TWO_HOPS with flow 0's `tcp` table replaced by `tcp` (JSON text).
fn with_tcp(tcp: &str) -> String {
    let mut doc: Value = serde_json::from_str(TWO_HOPS).unwrap();
    doc["flows"][0]["tcp"] = serde_json::from_str(tcp).unwrap();
    doc.to_string()
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap()).collect())
        .unwrap_or_default()
}

#[test]
fn the_linux_profile_is_its_fields_written_out() {
    // Every field of the profile, and the controller its cubic module names, written out.
    let mut written = serde_json::Map::new();
    for f in farlink_core::scenario::LINUX_FIELDS {
        written.insert(f.key.into(), serde_json::from_str(f.value).unwrap());
    }
    written.insert("cc".into(), "cubic-linux".into());
    let spelled = resolve(&with_tcp(&Value::Object(written).to_string()));
    let profiled = resolve(&with_tcp(r#"{"profile": "linux", "cc": "cubic"}"#));
    let mut tcp = profiled["flows"][0]["tcp"].clone();
    assert_eq!(tcp["profile"], "linux");
    tcp.as_object_mut().unwrap().remove("profile");
    assert_eq!(tcp, spelled["flows"][0]["tcp"]);
    assert_eq!(tcp["min_rto_s"], 0.2);
    assert_eq!(tcp["max_rto_s"], 120.0, "Linux's rule brings TCP_RTO_MAX");
    assert_eq!(tcp["recovery"], "rack");
    assert_eq!(tcp["quick_ack"], true);
    assert_eq!(tcp["max_ooo_ranges"], "window");
    // What the profile set is listed as its, not as defaults.
    let from_profile = strings(&profiled["from_profile"]);
    let defaults = strings(&profiled["defaults"]);
    for f in farlink_core::scenario::LINUX_FIELDS {
        let path = format!("flows[0].tcp.{}", f.resolved);
        assert!(from_profile.contains(&path.as_str()), "{path}");
        assert!(!defaults.contains(&path.as_str()), "{path}");
    }
    assert!(
        from_profile.contains(&"flows[0].tcp.cc"),
        "cubic became cubic-linux"
    );
    assert!(defaults.contains(&"flows[0].tcp.max_rto_s"));
    assert!(spelled.get("from_profile").is_none());
}

#[test]
fn fields_given_beside_a_profile_win_and_rfc_prints_nothing_new() {
    let r = resolve(&with_tcp(
        r#"{"profile": "linux", "min_rto_s": 1.0, "recovery": "sack", "growth": "per-ack"}"#,
    ));
    let tcp = &r["flows"][0]["tcp"];
    assert_eq!(tcp["min_rto_s"], 1.0);
    assert_eq!(tcp["recovery"], "sack");
    assert_eq!(tcp["growth"], "per-ack");
    assert_eq!(tcp["rto"], "linux");
    assert!(!strings(&r["from_profile"]).contains(&"flows[0].tcp.min_rto_s"));
    // Linux's Reno grows by acknowledged segments unless told otherwise.
    let reno = resolve(&with_tcp(r#"{"profile": "linux"}"#));
    assert_eq!(reno["flows"][0]["tcp"]["growth"], "byte-counting");
    assert!(strings(&reno["from_profile"]).contains(&"flows[0].tcp.growth"));
    // `rfc` written out is the document without it, but for the field it names.
    let rfc = resolve(&with_tcp(r#"{"profile": "rfc", "mss": "1000B"}"#));
    let plain = resolve(TWO_HOPS);
    assert_eq!(rfc["flows"], plain["flows"]);
    assert_eq!(rfc["defaults"], plain["defaults"]);
    assert!(rfc.get("from_profile").is_none());
}

#[test]
fn a_split_flows_segments_inherit_its_profile() {
    let text = r#"{
        "duration": "10s",
        "nodes": ["S", "R", "D"],
        "links": [{"a": "S", "b": "R", "rate": "10Mbps", "delay": "10ms"},
                  {"a": "R", "b": "D", "rate": "1Mbps", "delay": "250ms"}],
        "flows": [{"from": "S", "to": "D", "relays": ["R"], "app": {"kind": "unbounded"},
                   "tcp": {"profile": "linux", "cc": "cubic"},
                   "segments": [{}, {"tcp": {"cc": "bbr", "profile": "rfc"}}]}]
    }"#;
    let r = resolve(text);
    let segments = &r["flows"][0]["segments"];
    assert_eq!(segments[0]["tcp"]["cc"], "cubic-linux");
    assert_eq!(segments[0]["tcp"]["recovery"], "rack");
    assert_eq!(segments[1]["tcp"]["cc"], "bbr");
    assert_eq!(
        segments[1]["tcp"]["recovery"], "sack",
        "its own rfc profile"
    );
    // Segments are derived (DERIVED_FIELDS): their fields are listed on the flow's table.
    assert!(strings(&r["from_profile"]).contains(&"flows[0].tcp.rto"));
}

#[test]
fn an_unknown_profile_is_refused_at_its_field() {
    let e = resolve_scenario_json(&with_tcp(r#"{"profile": "bsd"}"#)).unwrap_err();
    assert_eq!(e.path, "flows[0].tcp.profile");
    assert_eq!(
        e.message,
        "unknown TCP profile \"bsd\"; expected one of: rfc, linux"
    );
}

#[test]
fn a_multipath_flow_lists_close_resends_and_stale_loss_count_only_off_their_defaults() {
    let with = |mptcp: &str| {
        resolve(&format!(
            r#"{{"duration": "10s", "nodes": ["A", "B"],
                "links": [{{"a": "A", "b": "B", "bundle": {{"members": 2, "rate": "2400bps",
                           "delay": "0.5s"}}}}],
                "flows": [{{"from": "A", "to": "B", "app": {{"kind": "unbounded"}},
                           "transport": "mptcp", "mptcp": {mptcp}}}]}}"#
        ))["flows"][0]["mptcp"]
            .clone()
    };
    // The defaults (queue with linux, subflow with the others; 0) leave the resolved flow as
    // it was before the keys existed.
    for plain in [
        with("{}"),
        with(r#"{"close_resends": "queue", "stale_loss_count": 0}"#),
        with(r#"{"scheduler": "minrtt", "close_resends": "subflow"}"#),
    ] {
        assert!(plain.get("close_resends").is_none(), "{plain}");
        assert!(plain.get("stale_loss_count").is_none(), "{plain}");
        assert_eq!(plain["keep_first_subflow"], false);
    }
    let off = with(r#"{"close_resends": "subflow", "stale_loss_count": 4}"#);
    assert_eq!(off["close_resends"], "subflow");
    assert_eq!(off["stale_loss_count"], 4);
    let minrtt = with(r#"{"scheduler": "minrtt", "close_resends": "queue"}"#);
    assert_eq!(minrtt["close_resends"], "queue");
}
