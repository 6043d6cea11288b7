//! Scenario parsing: the schema's defaults and spellings, and one test per error path, each
//! checking the path named and the form expected.

use farlink_core::link::QueueLimit;
use farlink_core::scenario::{AppSpec, Hop, LossSpec};
use farlink_core::tcp::cc::CcConfig;
use farlink_core::tcp::prr::WindowReduction;
use farlink_core::tcp::receiver::DelayedAck;
use farlink_core::tcp::recovery::LossRecovery;
use farlink_core::tcp::rtt::RtoRule;
use farlink_core::time::{SimDuration, SimTime};
use farlink_core::{parse_scenario_json, Scenario, ScenarioError};
use serde_json::{json, Value};

/// A chain S - R - D with one flow; tests edit it.
fn base() -> Value {
    json!({
        "seed": 7,
        "duration": "100s",
        "nodes": ["S", "R", "D"],
        "links": [
            {"name": "S-R", "a": "S", "b": "R", "rate": "10Mbps", "delay": "0.1ms"},
            {"name": "R-D", "a": "R", "b": "D", "rate": "1.5Mbps", "delay": "80ms",
             "queue_pkts": 30, "fwd": {"loss": {"model": "bernoulli", "p": 0.01}}}
        ],
        "lossy_link": "R-D",
        "flows": [
            {"name": "ftp", "from": "S", "to": "D", "app": {"kind": "unbounded"}}
        ]
    })
}

fn parse(v: &Value) -> Result<farlink_core::Scenario, ScenarioError> {
    parse_scenario_json(&v.to_string())
}

/// Applies `edit` to the base scenario and expects an error at `path` whose message contains
/// `fragment`.
#[track_caller]
fn rejects(edit: impl FnOnce(&mut Value), path: &str, fragment: &str) {
    let mut v = base();
    edit(&mut v);
    match parse(&v) {
        Ok(_) => panic!("accepted, expected an error at {path}"),
        Err(e) => {
            assert_eq!(e.path, path, "message: {}", e.message);
            assert!(
                e.message.contains(fragment),
                "at {path}: {:?} does not contain {fragment:?}",
                e.message
            );
            if path.is_empty() {
                assert_eq!(e.to_string(), e.message);
            } else {
                assert_eq!(e.to_string(), format!("{path}: {}", e.message));
            }
            assert!(!e.message.contains(" at line "), "{}", e.message);
        }
    }
}

#[test]
fn base_scenario_parses_with_units_routes_and_defaults() {
    let s = parse(&base()).unwrap();
    assert_eq!(s.seed(), 7);
    assert_eq!(s.duration(), SimDuration::from_secs(100));
    let rd = &s.links()[1];
    assert_eq!(rd.fwd.rate.bps(), 1_500_000);
    assert_eq!(rd.fwd.delay, SimDuration::from_millis(80));
    assert_eq!(rd.fwd.queue, QueueLimit::Packets(30));
    assert_eq!(rd.rev.queue, QueueLimit::Packets(30));
    assert_eq!(rd.fwd.loss, LossSpec::Bernoulli { p: 0.01 });
    assert_eq!(rd.rev.loss, LossSpec::None);
    assert_eq!(s.links()[0].fwd.delay, SimDuration::from_micros(100));
    let f = &s.flows()[0];
    assert_eq!(
        f.path,
        vec![
            Hop {
                link: 0,
                forward: true
            },
            Hop {
                link: 1,
                forward: true
            }
        ]
    );
    assert_eq!(f.start, SimTime::ZERO);
    assert_eq!(f.stop, None);
    assert_eq!(f.app, AppSpec::Unbounded);
    assert_eq!(f.tcp.options.mss_bytes, 1460);
    assert!(matches!(f.tcp.delayed_ack, DelayedAck::On { .. }));
    let ll = s.lossy_link().unwrap();
    assert_eq!((ll.link, ll.forward), (1, true));
}

#[test]
fn bare_numbers_go_under_names_that_carry_the_unit() {
    let mut v = base();
    v["duration_s"] = json!(100);
    v.as_object_mut().unwrap().remove("duration");
    let l = &mut v["links"][1];
    l.as_object_mut().unwrap().remove("rate");
    l.as_object_mut().unwrap().remove("delay");
    l.as_object_mut().unwrap().remove("queue_pkts");
    l["rate_bps"] = json!(1500000);
    l["delay_s"] = json!(0.08);
    l["queue"] = json!("64KiB");
    l["rev"] = json!({"rate": "64kbps", "queue_bytes": 4000});
    v["flows"][0]["tcp"] = json!({
        "mss_bytes": 960, "receive_buffer": "1MiB", "timestamps": false, "sack": false,
        "delayed_ack": false, "min_rto_s": 0.2, "max_rto": "60s", "recovery": "tahoe",
        "growth": "byte-counting", "initial_window_segments": 2
    });
    v["flows"][0]["app"] = json!({"kind": "bulk", "size": "100KB"});
    v["flows"][0]["start_s"] = json!(1.5);
    let s = parse(&v).unwrap();
    let rd = &s.links()[1];
    assert_eq!(rd.fwd.rate.bps(), 1_500_000);
    assert_eq!(rd.fwd.delay, SimDuration::from_millis(80));
    assert_eq!(rd.fwd.queue, QueueLimit::Bytes(65_536));
    assert_eq!(rd.rev.rate.bps(), 64_000);
    assert_eq!(
        rd.rev.delay,
        SimDuration::from_millis(80),
        "inherited from the link"
    );
    assert_eq!(rd.rev.queue, QueueLimit::Bytes(4000));
    let f = &s.flows()[0];
    assert_eq!(f.tcp.options.mss_bytes, 960);
    assert_eq!(f.tcp.receive_buffer_bytes, 1 << 20);
    assert_eq!(f.tcp.delayed_ack, DelayedAck::Off);
    assert_eq!(f.tcp.rtt.min_rto, SimDuration::from_millis(200));
    assert_eq!(f.tcp.rtt.max_rto, SimDuration::from_secs(60));
    assert_eq!(f.tcp.recovery, LossRecovery::Tahoe);
    assert_eq!(f.tcp.initial_window_segments, 2);
    assert_eq!(
        f.app,
        AppSpec::Bulk {
            size_bytes: 100_000
        }
    );
    assert_eq!(f.start, SimTime::from_nanos(1_500_000_000));
}

#[test]
fn every_loss_model_parses() {
    for (loss, name) in [
        (json!({"model": "none"}), "none"),
        (json!({"model": "bernoulli", "p": 0.1}), "bernoulli"),
        (
            json!({"model": "gilbert_elliott", "mean_burst": "40ms", "rate": 0.01}),
            "gilbert_elliott",
        ),
        (
            json!({"model": "gilbert_elliott", "mean_burst_pkts": 8, "rate": 0.01}),
            "gilbert_elliott",
        ),
        (
            json!({"model": "markov_fading", "pe": 0.1, "fd_t": 0.01}),
            "markov_fading",
        ),
        (json!({"model": "lcg16807", "rate": 0.1}), "lcg16807"),
        (
            json!({"model": "drop_list", "packets": [2000, 2001]}),
            "drop_list",
        ),
        (
            json!({"model": "gilbert_packets", "mean_burst_pkts": 8, "rate": 0.01}),
            "gilbert_packets",
        ),
    ] {
        let mut v = base();
        v["links"][1]["fwd"]["loss"] = loss;
        let s = parse(&v).unwrap();
        assert_eq!(s.links()[1].fwd.loss.model_name(), name);
    }
    // 8 packets of 1500 bytes (MSS 1460 + 40) at 1.5 Mb/s: 64 ms bad sojourns.
    let mut v = base();
    v["links"][1]["fwd"]["loss"] =
        json!({"model": "gilbert_elliott", "mean_burst_pkts": 8, "rate": 0.01});
    match &parse(&v).unwrap().links()[1].fwd.loss {
        LossSpec::GilbertElliott(cfg) => assert_eq!(cfg.mean_bad_ns, 64_000_000.0),
        other => panic!("{other:?}"),
    }
}

#[test]
fn telnet_and_trace_switches() {
    let mut v = base();
    v["flows"][0]["app"] = json!({"kind": "telnet", "mean_interval": "500ms", "message_bytes": 40});
    v["flows"][0]["stop"] = json!("50s");
    v["trace"] = json!({"all": true, "rtt": false, "goodput_interval": "1s"});
    v["pcap"] = json!(["R-D"]);
    let s = parse(&v).unwrap();
    assert_eq!(
        s.flows()[0].app,
        AppSpec::Telnet {
            mean_interval: SimDuration::from_millis(500),
            message_bytes: 40
        }
    );
    assert!(s.trace().cwnd && s.trace().queue && !s.trace().rtt);
    assert_eq!(s.trace().goodput_interval, SimDuration::from_secs(1));
    assert_eq!(
        s.pcap(),
        &[farlink_core::scenario::Tap {
            name: "R-D".into(),
            site: farlink_core::scenario::TapSite::Link { link: 1 }
        }]
    );
}

// ----- errors: syntax and types -----

#[test]
fn syntax_error_names_line_and_column() {
    let e = parse_scenario_json("{\"duration\": \"1s\",,}").unwrap_err();
    assert!(e.message.contains("line 1"), "{e}");
    let e = parse_scenario_json(&format!("{} trailing", base())).unwrap_err();
    assert!(e.message.contains("trailing"), "{e}");
}

#[test]
fn unknown_field_is_named() {
    rejects(
        |v| v["links"][1]["fwd"]["los"] = json!({}),
        "links[1].fwd.los",
        "unknown field `los`",
    );
    rejects(|v| v["sede"] = json!(1), "sede", "unknown field `sede`");
}

#[test]
fn missing_required_field() {
    rejects(
        |v| {
            v.as_object_mut().unwrap().remove("nodes");
        },
        "",
        "missing field `nodes`",
    );
    rejects(
        |v| {
            v["flows"][0].as_object_mut().unwrap().remove("app");
        },
        "flows[0]",
        "missing field `app`",
    );
    rejects(
        |v| {
            v.as_object_mut().unwrap().remove("duration");
        },
        "duration",
        "missing",
    );
}

#[test]
fn bad_unit_string_names_the_field_and_the_forms() {
    rejects(
        |v| v["links"][1]["rate"] = json!("1.5MB"),
        "links[1].rate",
        "unknown bit-rate unit 'MB' in '1.5MB': expected a bit rate such as",
    );
    rejects(
        |v| v["links"][0]["delay"] = json!("0.1 fortnights"),
        "links[0].delay",
        "unknown time unit 'fortnights'",
    );
    rejects(
        |v| v["flows"][0]["tcp"] = json!({"receive_buffer": "lots"}),
        "flows[0].tcp.receive_buffer",
        "cannot read size 'lots'",
    );
}

#[test]
fn bare_number_under_a_plain_name_is_refused() {
    rejects(
        |v| v["links"][1]["delay"] = json!(80),
        "links[1].delay",
        "expected a duration as a string with its unit",
    );
    rejects(
        |v| v["links"][1]["rate"] = json!(1500000),
        "links[1].rate",
        "ends in _bps",
    );
}

#[test]
fn string_under_a_unit_name_is_refused() {
    rejects(
        |v| v["links"][1]["delay_s"] = json!("80ms"),
        "links[1].delay_s",
        "expected a number in the unit the field's name ends with",
    );
}

#[test]
fn both_spellings_of_one_quantity_are_refused() {
    rejects(
        |v| v["links"][1]["rate_bps"] = json!(1500000),
        "links[1].rate_bps",
        "give either rate or rate_bps, not both",
    );
    rejects(
        |v| v["links"][1]["queue_bytes"] = json!(30000),
        "links[1].queue_bytes",
        "either in packets (queue_pkts) or in bytes",
    );
}

#[test]
fn missing_rate_names_the_direction() {
    rejects(
        |v| {
            v["links"][0].as_object_mut().unwrap().remove("rate");
            v["links"][0]["fwd"] = json!({"rate": "1Mbps"});
        },
        "links[0].rev.rate",
        "missing: give rate",
    );
}

#[test]
fn negative_and_zero_quantities() {
    rejects(
        |v| v["links"][1]["delay"] = json!("-1ms"),
        "links[1].delay",
        "duration '-1ms' must be positive",
    );
    rejects(
        |v| {
            v["links"][1].as_object_mut().unwrap().remove("delay");
            v["links"][1]["delay_s"] = json!(-0.001);
        },
        "links[1].delay_s",
        "expected a duration of zero or more",
    );
    rejects(
        |v| v["duration"] = json!("0s"),
        "duration",
        "expected a positive duration",
    );
    rejects(
        |v| v["links"][1]["rate"] = json!("0bps"),
        "links[1].rate",
        "must be positive",
    );
    rejects(|v| v["duration"] = json!("1e9s"), "duration", "at most");
    rejects(
        |v| v["links"][1]["queue_pkts"] = json!(-1),
        "links[1].queue_pkts",
        "expected a whole number from 0 to 4294967295, got -1",
    );
}

// ----- errors: loss models -----

#[test]
fn loss_parameter_out_of_range_names_the_parameter() {
    rejects(
        |v| v["links"][1]["fwd"]["loss"]["p"] = json!(1.5),
        "links[1].fwd.loss.p",
        "expected a probability in [0, 1], got 1.5",
    );
    rejects(
        |v| {
            v["links"][1]["fwd"]["loss"] =
                json!({"model": "gilbert_elliott", "mean_burst": "40ms", "rate": 1.0})
        },
        "links[1].fwd.loss.rate",
        "expected a loss rate in (0, 1)",
    );
    rejects(
        |v| {
            v["links"][1]["fwd"]["loss"] = json!({"model": "markov_fading", "pe": 0.1, "fd_t": 0.0})
        },
        "links[1].fwd.loss.fd_t",
        "normalised Doppler",
    );
    rejects(
        |v| {
            v["links"][1]["fwd"]["loss"] = json!({"model": "markov_fading", "pe": 0.0, "fd_t": 0.1})
        },
        "links[1].fwd.loss.pe",
        "frame error rate in (0, 1)",
    );
    rejects(
        |v| v["links"][1]["fwd"]["loss"] = json!({"model": "lcg16807", "rate": 0.1, "seed": 0}),
        "links[1].fwd.loss.seed",
        "expected an LCG seed",
    );
}

#[test]
fn drop_list_numbers_are_checked_with_their_path() {
    let mut v = base();
    v["links"][1]["fwd"]["loss"] = json!({"model": "drop_list", "packets": [3, 9]});
    assert_eq!(
        parse(&v).unwrap().links()[1].fwd.loss,
        LossSpec::DropList {
            packets: vec![3, 9]
        }
    );
    rejects(
        |v| v["links"][1]["fwd"]["loss"] = json!({"model": "drop_list", "packets": [0, 1]}),
        "links[1].fwd.loss.packets",
        "expected packet numbers from 1",
    );
    rejects(
        |v| v["links"][1]["fwd"]["loss"] = json!({"model": "drop_list", "packets": [9, 3]}),
        "links[1].fwd.loss.packets",
        "expected strictly increasing packet numbers, got 3 after 9",
    );
    rejects(
        |v| v["links"][1]["fwd"]["loss"] = json!({"model": "drop_list"}),
        "links[1].fwd.loss.packets",
        "missing: loss model \"drop_list\" needs packets",
    );
    rejects(
        |v| v["links"][1]["fwd"]["loss"] = json!({"model": "drop_list", "packets": [4, 1.5]}),
        "links[1].fwd.loss.packets[1]",
        "expected a whole number of 0 or more, got 1.5",
    );
    rejects(
        |v| v["links"][1]["fwd"]["loss"] = json!({"model": "drop_list", "packets": [1], "p": 0.1}),
        "links[1].fwd.loss.p",
        "not a parameter of loss model \"drop_list\" (it takes: packets)",
    );
}

#[test]
fn gilbert_packets_parameters_are_checked_with_their_path() {
    rejects(
        |v| {
            v["links"][1]["fwd"]["loss"] =
                json!({"model": "gilbert_packets", "mean_burst_pkts": 0.5, "rate": 0.01})
        },
        "links[1].fwd.loss.mean_burst_pkts",
        "expected a mean burst of at least 1 packet",
    );
    rejects(
        |v| {
            v["links"][1]["fwd"]["loss"] =
                json!({"model": "gilbert_packets", "mean_burst_pkts": 8, "rate": 1.5})
        },
        "links[1].fwd.loss.rate",
        "expected a loss rate in (0, 1)",
    );
    rejects(
        |v| v["links"][1]["fwd"]["loss"] = json!({"model": "gilbert_packets", "rate": 0.01}),
        "links[1].fwd.loss.mean_burst_pkts",
        "missing: loss model \"gilbert_packets\" needs mean_burst_pkts",
    );
}

#[test]
fn loss_parameter_type_is_checked_with_its_path() {
    rejects(
        |v| v["links"][1]["fwd"]["loss"]["p"] = json!(true),
        "links[1].fwd.loss.p",
        "expected a probability: a number such as 0.001, or a string such as \"0.1%\"",
    );
    rejects(
        |v| v["links"][1]["fwd"]["loss"]["p"] = json!("a lot"),
        "links[1].fwd.loss.p",
        "cannot read probability 'a lot'",
    );
}

#[test]
fn a_probability_is_written_as_on_the_command_line() {
    let mut v = base();
    v["links"][1]["fwd"]["loss"]["p"] = json!("0.1%");
    assert_eq!(
        parse(&v).unwrap().links()[1].fwd.loss,
        LossSpec::Bernoulli { p: 0.001 }
    );
}

#[test]
fn a_wrong_type_is_named_in_words_not_rust_types() {
    rejects(
        |v| v["flows"][0]["app"] = json!([{"kind": "unbounded"}]),
        "flows[0].app",
        "expected a table (in TOML a [section] or { ... }), got a list (an array; in TOML [[...]] makes one)",
    );
    rejects(
        |v| v["links"][1]["queue_pkts"] = json!("30"),
        "links[1].queue_pkts",
        "got the string \"30\" (a number is written without quotes)",
    );
}

#[test]
fn controller_and_recovery_names_ignore_case() {
    let mut v = base();
    v["flows"][0]["tcp"] = json!({"cc": "CUBIC", "recovery": "NewReno"});
    let s = parse(&v).unwrap();
    assert_eq!(s.flows()[0].tcp.cc.name(), "cubic");
    assert_eq!(s.flows()[0].tcp.recovery.name(), "newreno");
}

#[test]
fn unknown_loss_model_lists_the_known_ones() {
    rejects(
        |v| v["links"][1]["fwd"]["loss"] = json!({"model": "gilbert"}),
        "links[1].fwd.loss.model",
        "unknown loss model \"gilbert\"; expected one of: none, bernoulli, gilbert_elliott, gilbert_packets, markov_fading, lcg16807, drop_list",
    );
}

#[test]
fn loss_parameters_must_belong_to_the_model() {
    rejects(
        |v| v["links"][1]["fwd"]["loss"]["fd_t"] = json!(0.1),
        "links[1].fwd.loss.fd_t",
        "not a parameter of loss model \"bernoulli\" (it takes: p)",
    );
    rejects(
        |v| v["links"][1]["fwd"]["loss"] = json!({"model": "bernoulli"}),
        "links[1].fwd.loss.p",
        "missing: loss model \"bernoulli\" needs p",
    );
    rejects(
        |v| v["links"][1]["fwd"]["loss"] = json!({"model": "gilbert_elliott", "rate": 0.01}),
        "links[1].fwd.loss.mean_burst",
        "needs mean_burst",
    );
}

// ----- errors: topology and names -----

#[test]
fn unknown_node_lists_the_nodes() {
    rejects(
        |v| v["links"][1]["b"] = json!("X"),
        "links[1].b",
        "unknown node \"X\"; expected one of: S, R, D",
    );
    rejects(
        |v| v["flows"][0]["to"] = json!("Y"),
        "flows[0].to",
        "unknown node \"Y\"",
    );
}

#[test]
fn duplicate_names() {
    rejects(
        |v| v["nodes"] = json!(["S", "R", "D", "R"]),
        "nodes[3]",
        "duplicate node name \"R\"",
    );
    rejects(
        |v| v["links"][1]["name"] = json!("S-R"),
        "links[1].name",
        "duplicate link name \"S-R\"",
    );
    rejects(
        |v| {
            let f = v["flows"][0].clone();
            v["flows"].as_array_mut().unwrap().push(f);
        },
        "flows[1].name",
        "duplicate flow name \"ftp\"",
    );
}

#[test]
fn link_to_itself_and_flow_to_itself() {
    rejects(
        |v| v["links"][0]["b"] = json!("S"),
        "links[0].b",
        "two different nodes",
    );
    rejects(
        |v| v["flows"][0]["to"] = json!("S"),
        "flows[0].to",
        "two different nodes",
    );
}

#[test]
fn no_route() {
    rejects(
        |v| {
            v["nodes"] = json!(["S", "R", "D", "Z"]);
            v["flows"][0]["to"] = json!("Z");
            v.as_object_mut().unwrap().remove("lossy_link");
        },
        "flows[0].to",
        "no route from \"S\" to \"Z\"",
    );
}

#[test]
fn flow_times() {
    rejects(
        |v| v["flows"][0]["start"] = json!("100s"),
        "flows[0].start",
        "not before the run ends",
    );
    rejects(
        |v| {
            v["flows"][0]["start"] = json!("10s");
            v["flows"][0]["stop"] = json!("5s");
        },
        "flows[0].stop",
        "not after it starts",
    );
}

// ----- errors: TCP and applications -----

#[test]
fn the_linux_rto_rule_brings_linux_bounds_unless_given() {
    let mut v = base();
    v["flows"][0]["tcp"] = json!({"rto": "Linux", "recovery": "rack"});
    let s = parse(&v).unwrap();
    let t = &s.flows()[0].tcp;
    assert_eq!(t.rtt.rule, RtoRule::Linux);
    assert_eq!(t.recovery, LossRecovery::Rack);
    assert_eq!(t.rtt.min_rto, SimDuration::from_millis(200));
    assert_eq!(t.rtt.max_rto, SimDuration::from_secs(120));
    assert_eq!(t.rtt.initial_rto, SimDuration::from_secs(1));
    // The resolved scenario names the rule and marks the bounds as defaults.
    let resolved = farlink_core::scenario::resolve_scenario_json(&v.to_string()).unwrap();
    let r = serde_json::to_value(&resolved).unwrap();
    assert_eq!(r["flows"][0]["tcp"]["rto"], "linux");
    assert_eq!(r["flows"][0]["tcp"]["min_rto_s"], 0.2);
    let defaults: Vec<&str> = r["defaults"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    assert!(defaults.contains(&"flows[0].tcp.min_rto_s"), "{defaults:?}");
    assert!(!defaults.contains(&"flows[0].tcp.rto"), "{defaults:?}");
    // An explicit bound stays; the default rule is RFC 6298's.
    v["flows"][0]["tcp"] = json!({"rto": "linux", "min_rto": "1s"});
    assert_eq!(
        parse(&v).unwrap().flows()[0].tcp.rtt.min_rto,
        SimDuration::from_secs(1)
    );
    let default = parse(&base()).unwrap();
    assert_eq!(default.flows()[0].tcp.rtt.rule, RtoRule::Rfc6298);
    assert_eq!(
        default.flows()[0].tcp.rtt.min_rto,
        SimDuration::from_secs(1)
    );
}

#[test]
fn the_window_reduction_is_immediate_unless_prr_is_named() {
    let default = parse(&base()).unwrap();
    assert_eq!(
        default.flows()[0].tcp.window_reduction,
        WindowReduction::Immediate
    );
    let mut v = base();
    v["flows"][0]["tcp"] = json!({"cwnd_reduction": "PRR"});
    assert_eq!(
        parse(&v).unwrap().flows()[0].tcp.window_reduction,
        WindowReduction::Prr
    );
    let resolved = farlink_core::scenario::resolve_scenario_json(&v.to_string()).unwrap();
    let r = serde_json::to_value(&resolved).unwrap();
    assert_eq!(r["flows"][0]["tcp"]["cwnd_reduction"], "prr");
    rejects(
        |v| v["flows"][0]["tcp"] = json!({"cwnd_reduction": "halving"}),
        "flows[0].tcp.cwnd_reduction",
        "unknown window reduction \"halving\"; expected one of: immediate, prr",
    );
}

#[test]
fn the_receivers_out_of_order_ranges_are_a_count_or_the_window() {
    let ranges = |tcp: Value| {
        let mut v = base();
        v["flows"][0]["tcp"] = tcp;
        let s = parse(&v).unwrap();
        let resolved = farlink_core::scenario::resolve_scenario_json(&v.to_string()).unwrap();
        let shown =
            serde_json::to_value(&resolved).unwrap()["flows"][0]["tcp"]["max_ooo_ranges"].clone();
        let t = &s.flows()[0].tcp;
        (
            t.max_ooo_ranges,
            t.receiver_config(false).max_ooo_ranges,
            shown,
        )
    };
    assert_eq!(ranges(json!({})), (Some(64), 64, json!(64)));
    assert_eq!(ranges(json!({"max_ooo_ranges": 3})), (Some(3), 3, json!(3)));
    // "window": no count; the receiver holds whatever the window lets in.
    assert_eq!(
        ranges(json!({"max_ooo_ranges": "window", "receive_buffer": "1MiB"})),
        (None, 1 << 20, json!("window"))
    );
    rejects(
        |v| v["flows"][0]["tcp"] = json!({"max_ooo_ranges": 0}),
        "flows[0].tcp.max_ooo_ranges",
        "expected 1 to 1000000 ranges (or \"window\"), got 0",
    );
    rejects(
        |v| v["flows"][0]["tcp"] = json!({"max_ooo_ranges": "all"}),
        "flows[0].tcp.max_ooo_ranges",
        "expected a number of out-of-order ranges or \"window\", got \"all\"",
    );
    rejects(
        |v| v["flows"][0]["tcp"] = json!({"max_ooo_ranges": true}),
        "flows[0].tcp.max_ooo_ranges",
        "a number of out-of-order ranges or \"window\"",
    );
}

#[test]
fn tcp_options_are_checked() {
    rejects(
        |v| v["flows"][0]["tcp"] = json!({"mss_bytes": 12}),
        "flows[0].tcp.mss_bytes",
        "expected an MSS of 64 to 65495 bytes",
    );
    rejects(
        |v| v["flows"][0]["tcp"] = json!({"receive_buffer_bytes": 100}),
        "flows[0].tcp.receive_buffer_bytes",
        "at least the MSS",
    );
    rejects(
        |v| v["flows"][0]["tcp"] = json!({"recovery": "vegas"}),
        "flows[0].tcp.recovery",
        "unknown loss recovery \"vegas\"; expected one of: tahoe, reno, newreno, sack, rack",
    );
    rejects(
        |v| v["flows"][0]["tcp"] = json!({"rto": "bsd"}),
        "flows[0].tcp.rto",
        "unknown RTO rule \"bsd\"; expected one of: rfc6298, linux",
    );
    rejects(
        |v| v["flows"][0]["tcp"] = json!({"cc": "cubik"}),
        "flows[0].tcp.cc",
        "unknown congestion controller \"cubik\"; expected one of: reno",
    );
    rejects(
        |v| v["flows"][0]["tcp"] = json!({"growth": "per-rtt"}),
        "flows[0].tcp.growth",
        "expected one of: per-ack, byte-counting",
    );
    rejects(
        |v| v["flows"][0]["tcp"] = json!({"min_rto": "2s", "max_rto": "1s"}),
        "flows[0].tcp.max_rto",
        "max_rto >= min_rto",
    );
    rejects(
        |v| v["flows"][0]["tcp"] = json!({"initial_window_segments": 0}),
        "flows[0].tcp.initial_window_segments",
        "at least 1",
    );
    rejects(
        |v| v["flows"][0]["tcp"] = json!({"delayed_ack": false, "delayed_ack_timeout": "100ms"}),
        "flows[0].tcp.delayed_ack_timeout",
        "while delayed_ack is false",
    );
    rejects(
        |v| v["flows"][0]["tcp"] = json!({"delayed_ack": false, "quick_ack": true}),
        "flows[0].tcp.quick_ack",
        "while delayed_ack is false",
    );
}

/// The base scenario with its flow's `tcp` table replaced: parsed, and the flow's `tcp` table
/// as the resolved scenario prints it.
fn parsed_and_resolved_tcp(tcp: Value) -> (Scenario, Value) {
    let mut v = base();
    v["flows"][0]["tcp"] = tcp;
    let sc = parse(&v).unwrap();
    let r = serde_json::to_value(
        farlink_core::scenario::resolve_scenario_json(&v.to_string()).unwrap(),
    )
    .unwrap();
    (sc, r["flows"][0]["tcp"].clone())
}

#[test]
fn quick_ack_mode_is_off_unless_asked_for_and_resolved_only_where_on() {
    let resolved = |tcp: Value| {
        let (sc, r) = parsed_and_resolved_tcp(tcp);
        (sc.flows()[0].tcp.delayed_ack, r)
    };
    let (off, r) = resolved(json!({}));
    assert!(matches!(
        off,
        DelayedAck::On {
            quick_ack: false,
            ..
        }
    ));
    assert!(r.get("quick_ack").is_none(), "{r}");
    let (on, r) = resolved(json!({"quick_ack": true, "delayed_ack_timeout": "40ms"}));
    assert!(matches!(
        on,
        DelayedAck::On {
            quick_ack: true,
            ..
        }
    ));
    assert_eq!(r["quick_ack"], true);
    // Turning it off explicitly, or with delayed ACKs, is the default.
    let (_, r) = resolved(json!({"delayed_ack": false, "quick_ack": false}));
    assert!(r.get("quick_ack").is_none(), "{r}");
}

#[test]
fn congestion_controllers_are_selected_by_name() {
    for name in CcConfig::NAMES {
        let mut v = base();
        v["flows"][0]["tcp"] = json!({"cc": name, "growth": "per-ack"});
        let s = parse(&v).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(s.flows()[0].tcp.cc.name(), *name);
    }
    // Only Reno implements RFC 3465 byte counting; the others grow by their own rules.
    rejects(
        |v| v["flows"][0]["tcp"] = json!({"cc": "cubic", "growth": "byte-counting"}),
        "flows[0].tcp.growth",
        "byte-counting growth is implemented for cc \"reno\" only, not \"cubic\"",
    );
}

#[test]
fn fast_convergence_is_cubics_and_bics_and_resolved_only_where_off() {
    let parsed = |tcp: Value| {
        let (sc, r) = parsed_and_resolved_tcp(tcp);
        (sc.flows()[0].tcp.cc, r)
    };
    let (cc, r) = parsed(json!({"cc": "cubic"}));
    assert!(matches!(cc, CcConfig::Cubic(c) if c.fast_convergence));
    assert!(r.get("fast_convergence").is_none(), "{r}");
    let (cc, r) = parsed(json!({"cc": "cubic", "fast_convergence": false}));
    assert!(matches!(cc, CcConfig::Cubic(c) if !c.fast_convergence));
    assert_eq!(r["fast_convergence"], false);
    let (cc, _) = parsed(json!({"cc": "cubic-linux", "fast_convergence": false}));
    assert!(matches!(cc, CcConfig::CubicLinux(c) if !c.fast_convergence));
    let (cc, _) = parsed(json!({"cc": "bic", "fast_convergence": false}));
    assert!(matches!(cc, CcConfig::Bic(c) if !c.fast_convergence));
    rejects(
        |v| v["flows"][0]["tcp"] = json!({"cc": "reno", "fast_convergence": false}),
        "flows[0].tcp.fast_convergence",
        "fast convergence is a rule of cc \"cubic\", \"cubic-linux\" and \"bic\", not \"reno\"",
    );
}

#[test]
fn applications_are_checked() {
    rejects(
        |v| v["flows"][0]["app"] = json!({"kind": "ftp"}),
        "flows[0].app.kind",
        "unknown application kind \"ftp\"; expected one of: bulk, unbounded, telnet",
    );
    rejects(
        |v| v["flows"][0]["app"] = json!({"kind": "bulk"}),
        "flows[0].app.size",
        "missing: a bulk application needs size",
    );
    rejects(
        |v| v["flows"][0]["app"] = json!({"kind": "bulk", "size_bytes": 0}),
        "flows[0].app.size_bytes",
        "positive size",
    );
    rejects(
        |v| v["flows"][0]["app"] = json!({"kind": "unbounded", "size": "1MB"}),
        "flows[0].app.size",
        "not a parameter of application \"unbounded\"",
    );
    rejects(
        |v| v["flows"][0]["app"] = json!({"kind": "telnet"}),
        "flows[0].app.mean_interval",
        "needs mean_interval",
    );
}

// ----- errors: lossy_link, pcap, trace -----

#[test]
fn lossy_link_must_exist_and_carry_data() {
    rejects(
        |v| v["lossy_link"] = json!("R-X"),
        "lossy_link",
        "unknown link \"R-X\"; expected one of: S-R, R-D",
    );
    rejects(
        |v| v["lossy_link"] = json!({"link": "R-D", "direction": "rev"}),
        "lossy_link.direction",
        "direction rev of link \"R-D\" carries no flow's data; the flows' data crosses it in direction fwd",
    );
    rejects(
        |v| v["lossy_link"] = json!({"link": "R-D", "direction": "up"}),
        "lossy_link.direction",
        "expected one of: fwd, rev",
    );
    rejects(
        |v| v["lossy_link"] = json!(3),
        "lossy_link",
        "expected a link name, or an object",
    );
    rejects(
        |v| v["lossy_link"] = json!({"link": "R-D", "dir": "fwd"}),
        "lossy_link.dir",
        "unknown field `dir`",
    );
}

#[test]
fn pcap_and_trace_are_checked() {
    rejects(
        |v| v["pcap"] = json!(["S-R", "Q"]),
        "pcap[1]",
        "unknown link \"Q\"",
    );
    rejects(
        |v| v["trace"] = json!({"cwnd": "yes"}),
        "trace.cwnd",
        "expected a boolean",
    );
    rejects(
        |v| v["trace"] = json!({"goodput_interval": "0s"}),
        "trace.goodput_interval",
        "positive duration",
    );
    rejects(
        |v| v["schema"] = json!(2),
        "schema",
        "reads scenario schema 1",
    );
}

#[test]
fn extra_section_is_ignored() {
    let mut v = base();
    v["extra"] = json!({"model": {"anything": [1, 2, 3]}});
    assert!(parse(&v).is_ok());
}

mod random {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Truncated, spliced or arbitrary text is an error, never a panic.
        #[test]
        fn any_text_is_parsed_or_refused_without_panic(
            cut in 0usize..2000,
            insert in ".{0,12}",
            junk in ".{0,200}",
        ) {
            let text = base().to_string();
            let cut = (0..=cut.min(text.len())).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
            let spliced = format!("{}{insert}{}", &text[..cut], &text[cut..]);
            let _ = parse_scenario_json(&spliced);
            let _ = parse_scenario_json(&text[..cut]);
            prop_assert!(parse_scenario_json(&junk).is_err());
        }
    }
}

#[test]
fn a_scenario_is_an_object_not_an_array_of_its_fields() {
    let err = parse_scenario_json("[7, \"100s\"]").unwrap_err();
    assert_eq!(err.path, "");
    assert!(err.message.contains("expected a JSON object"), "{err}");
    // An empty document still reads as malformed JSON, not as this error.
    let err = parse_scenario_json("   ").unwrap_err();
    assert!(!err.message.contains("expected a JSON object"), "{err}");
}

/// Flow 0's TCP settings of `base()` with `tcp` as its table.
fn flow_tcp(tcp: Value) -> farlink_core::scenario::TcpSpec {
    let mut doc = base();
    doc["flows"][0]["tcp"] = tcp;
    parse_scenario_json(&doc.to_string()).unwrap().flows()[0].tcp
}

#[test]
fn a_controller_named_on_the_command_line_runs_as_the_profile_runs_it() {
    use farlink_core::tcp::cc::WindowGrowth;
    // Under linux, cubic is the kernel's module: its model, over Linux's recovery, replacing
    // the Reno recovery the scenario wrote.
    let linux = flow_tcp(json!({"profile": "linux", "recovery": "reno", "cc": "reno"}));
    let t = linux.with_named_controller("cubic").unwrap();
    assert_eq!(t.cc.name(), "cubic-linux");
    assert_eq!(t.recovery, LossRecovery::Rack);
    // Linux's Reno grows by acknowledged segments.
    let t = flow_tcp(json!({"profile": "linux", "cc": "cubic"}))
        .with_named_controller("reno")
        .unwrap();
    let CcConfig::Reno(r) = t.cc else {
        panic!("not reno: {}", t.cc.name())
    };
    assert!(matches!(r.growth, WindowGrowth::ByteCounting { .. }));
    // rfc: the name itself, and the scenario's recovery, as before profiles.
    let rfc = flow_tcp(json!({"recovery": "reno"}));
    let t = rfc.with_named_controller("cubic").unwrap();
    assert_eq!(t.cc.name(), "cubic");
    assert_eq!(t.recovery, LossRecovery::Reno);
    assert!(rfc.with_named_controller("cubik").is_err());
}
