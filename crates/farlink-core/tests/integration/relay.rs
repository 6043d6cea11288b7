//! Split connections: a flow terminated at relays (seed 002's relay entity), the send buffer,
//! and the receiver's back-pressure through its advertised window.

use farlink_core::parse_scenario_json;
use serde_json::{json, Value};

use crate::support;
use support::run_json;

fn parse_error(v: &Value) -> (String, String) {
    match parse_scenario_json(&v.to_string()) {
        Ok(_) => panic!("accepted: {v}"),
        Err(e) => (e.path, e.message),
    }
}

/// S - G over a GEO hop (2 Mbps, 250 ms), G - D a short radio hop (5 Mbps, 10 ms) losing
/// `p` of its packets; a 400 KB transfer, relayed at G when `relays` says so.
fn geo_then_radio(p: f64, relays: &[&str], seed: u64) -> Value {
    json!({
        "seed": seed,
        "duration": "300s",
        "nodes": ["S", "G", "D"],
        "links": [
            {"name": "S-G", "a": "S", "b": "G", "rate": "2Mbps", "delay": "250ms", "queue_pkts": 200},
            {"name": "G-D", "a": "G", "b": "D", "rate": "5Mbps", "delay": "10ms", "queue_pkts": 200,
             "fwd": {"loss": {"model": "bernoulli", "p": p}}}
        ],
        "flows": [{"name": "ftp", "from": "S", "to": "D", "relays": relays,
                   "tcp": {"receive_buffer": "1MiB"},
                   "app": {"kind": "bulk", "size": "400KB"}}]
    })
}

/// A fast first hop and a slow second one, relayed at R with a small buffer.
fn fast_then_slow(relay_buffer_bytes: u64, rev_loss: f64) -> Value {
    json!({
        "duration": "200s",
        "nodes": ["S", "R", "D"],
        "links": [
            {"a": "S", "b": "R", "rate": "10Mbps", "delay": "20ms", "queue_pkts": 500,
             "rev": {"loss": {"model": "bernoulli", "p": rev_loss}}},
            {"a": "R", "b": "D", "rate": "256kbps", "delay": "20ms", "queue_pkts": 500}
        ],
        "flows": [{"name": "f", "from": "S", "to": "D", "relays": ["R"],
                   "relay_buffer_bytes": relay_buffer_bytes,
                   "tcp": {"receive_buffer": "32KiB"},
                   "app": {"kind": "bulk", "size": "300KB"}}]
    })
}

#[test]
fn every_byte_crosses_the_relay_once_and_in_order() {
    let r = run_json(&geo_then_radio(0.02, &["G"], 1));
    let f = &r.summary.flows[0];
    assert!(f.finished, "{f:?}");
    assert_eq!(f.delivered_bytes, 400_000);
    assert_eq!(f.segments.len(), 2);
    assert_eq!(f.segments[0].name, "ftp#0");
    assert_eq!(
        (f.segments[0].from.as_str(), f.segments[0].to.as_str()),
        ("S", "G")
    );
    assert_eq!(
        (f.segments[1].from.as_str(), f.segments[1].to.as_str()),
        ("G", "D")
    );
    for s in &f.segments {
        assert_eq!(s.delivered_bytes, 400_000, "{}", s.name);
    }
    assert_eq!(f.relays.len(), 1);
    assert_eq!(f.relays[0].node, "G");
    assert_eq!(f.relays[0].relayed_bytes, 400_000);
    // End to end: from the source's start to the last byte at D, after the relay got it all.
    assert!(f.finish_s.unwrap() > f.segments[0].finish_s.unwrap());
    assert_eq!(f.finish_s, f.segments[1].finish_s);
    assert!(
        f.segments[1].retransmissions > 0,
        "losses are on the second connection"
    );
    assert_eq!(f.segments[0].retransmissions, 0);
    assert_eq!(
        f.retransmissions,
        f.segments[0].retransmissions + f.segments[1].retransmissions
    );
    // Each connection is its own TCP connection in the traces and pcap.
    assert_eq!(r.flows.len(), 2);
    assert_eq!((r.flows[1].flow, r.flows[1].segment), (0, 1));
    assert_eq!(
        (r.flows[1].from.as_str(), r.flows[1].to.as_str()),
        ("G", "D")
    );
}

#[test]
fn the_relay_shortens_a_transfer_whose_losses_are_on_the_short_hop() {
    // End to end, every loss on the radio hop is recovered over the whole 520 ms round trip
    // and halves a window that takes seconds to regrow; split, the radio connection recovers
    // over 20 ms while the GEO connection, lossless, keeps its window.
    let (mut e2e, mut split) = (0.0, 0.0);
    for seed in 1..=3 {
        let t = |v: &Value| run_json(v).summary.flows[0].transfer_time_s.unwrap();
        e2e += t(&geo_then_radio(0.02, &[], seed));
        split += t(&geo_then_radio(0.02, &["G"], seed));
    }
    assert!(
        split < 0.7 * e2e,
        "split {split:.2} s against end to end {e2e:.2} s over three seeds"
    );
}

#[test]
fn a_full_relay_buffer_closes_the_window_upstream() {
    let small = run_json(&fast_then_slow(4000, 0.0));
    let f = &small.summary.flows[0];
    assert!(f.finished && f.delivered_bytes == 300_000, "{f:?}");
    let relay = &f.relays[0];
    assert!(relay.max_held_bytes <= 4000, "{relay:?}");
    // The relay stopped reading: bytes waited in its receive buffer, up to all of it.
    assert!(relay.max_unread_bytes > 16_384, "{relay:?}");
    assert!(relay.window_updates > 0, "{relay:?}");
    // Held back by the slow hop, the first connection ends shortly before the second.
    let (first, second) = (
        f.segments[0].finish_s.unwrap(),
        f.segments[1].finish_s.unwrap(),
    );
    assert!(first > 0.8 * second, "first {first} s, second {second} s");
    assert_eq!(f.segments[0].timeouts, 0, "flow control, not loss");

    // With room for the whole file the first connection finishes long before the second.
    let big = run_json(&fast_then_slow(1_000_000, 0.0));
    let g = &big.summary.flows[0];
    assert!(g.segments[0].finish_s.unwrap() < 0.2 * g.segments[1].finish_s.unwrap());
    assert!(
        g.relays[0].max_unread_bytes <= 2 * 1460,
        "read as it arrives"
    );
}

#[test]
fn lost_window_updates_do_not_stall_the_transfer() {
    // 30 % of the first connection's ACKs are lost, window updates among them: when the last
    // update before a stall is lost, the persist timer's probe reopens the window.
    let mut probes = 0;
    for seed in 1..=6u64 {
        let mut v = fast_then_slow(3000, 0.3);
        v["seed"] = json!(seed);
        let r = run_json(&v);
        let f = &r.summary.flows[0];
        assert!(
            f.finished && f.delivered_bytes == 300_000,
            "seed {seed}: {f:?}"
        );
        probes += f.segments[0].window_probes.unwrap();
    }
    assert!(probes > 0, "no window was probed");
}

#[test]
fn same_seed_same_result() {
    let a = run_json(&geo_then_radio(0.02, &["G"], 7)).summary;
    let b = run_json(&geo_then_radio(0.02, &["G"], 7)).summary;
    assert_eq!(a, b);
}

#[test]
fn each_connection_takes_its_own_settings() {
    let mut v = geo_then_radio(0.0, &["G"], 1);
    v["flows"][0]["tcp"]["initial_window_segments"] = json!(1);
    v["flows"][0]["segments"] = json!([{"tcp": {"initial_window_segments": 40}}, {}]);
    let r = run_json(&v);
    let f = &r.summary.flows[0];
    // 40 segments leave at once on the GEO connection: 400 KB take far fewer round trips.
    let mut slow = geo_then_radio(0.0, &["G"], 1);
    slow["flows"][0]["tcp"]["initial_window_segments"] = json!(1);
    let s = run_json(&slow);
    assert!(
        f.transfer_time_s.unwrap() + 1.0 < s.summary.flows[0].transfer_time_s.unwrap(),
        "{:?} against {:?}",
        f.transfer_time_s,
        s.summary.flows[0].transfer_time_s
    );
}

#[test]
fn the_send_buffer_bounds_what_is_outstanding() {
    // 16 KiB of send buffer over a 500 ms round trip: at most 16 KiB per round trip.
    let mut v = geo_then_radio(0.0, &[], 1);
    v["flows"][0]["tcp"]["send_buffer"] = json!("16KiB");
    let r = run_json(&v);
    let f = &r.summary.flows[0];
    let rtt = f.min_rtt_s.unwrap();
    let bound = 16_384.0 * 8.0 / rtt;
    assert!(f.goodput_bps < bound, "{} >= {bound}", f.goodput_bps);
    assert!(f.goodput_bps > 0.6 * bound, "{} << {bound}", f.goodput_bps);
}

#[test]
fn relay_errors_name_their_field() {
    let base = geo_then_radio(0.0, &["G"], 1);
    let with = |path: &[&str], value: Value| {
        let mut v = base.clone();
        let mut cur = &mut v["flows"][0];
        for p in &path[..path.len() - 1] {
            cur = &mut cur[*p];
        }
        cur[path[path.len() - 1]] = value;
        parse_error(&v)
    };
    let (p, m) = with(&["relays"], json!(["X"]));
    assert_eq!(p, "flows[0].relays[0]");
    assert!(m.contains("unknown node \"X\""), "{m}");
    let (p, m) = with(&["relays"], json!(["D"]));
    assert_eq!(p, "flows[0].relays[0]");
    assert!(m.contains("end of the flow"), "{m}");
    let (p, m) = with(&["segments"], json!([{}]));
    assert_eq!(p, "flows[0].segments");
    assert!(m.contains("one entry per connection (2"), "{m}");
    let (p, m) = with(
        &["segments"],
        json!([{}, {"tcp": {"initial_window_segments": 0}}]),
    );
    assert_eq!(p, "flows[0].segments[1].tcp.initial_window_segments");
    assert!(m.contains("at least 1"), "{m}");
    let (p, _) = with(&["segments"], json!([{}, {"tcp": {"windoe": 1}}]));
    assert!(p.starts_with("flows[0].segments[1].tcp"), "{p}");
    let (p, m) = with(&["relay_buffer"], json!("100B"));
    assert_eq!(p, "flows[0].relay_buffer");
    assert!(m.contains("at least the MSS"), "{m}");
    let (p, m) = with(&["tcp", "send_buffer_bytes"], json!(10));
    assert_eq!(p, "flows[0].tcp.send_buffer_bytes");
    assert!(m.contains("at least the MSS"), "{m}");

    let mut v = geo_then_radio(0.0, &[], 1);
    v["flows"][0]["relay_buffer"] = json!("1MB");
    let (p, m) = parse_error(&v);
    assert_eq!(
        (p.as_str(), m.as_str()),
        ("flows[0].relay_buffer", "given without relays")
    );
}

#[test]
fn each_connection_is_its_own_tcp_connection_in_the_pcap() {
    let mut v = geo_then_radio(0.0, &["G"], 1);
    v["pcap"] = json!(["S-G", "G-D"]);
    v["flows"][0]["app"] = json!({"kind": "bulk", "size": "20KB"});
    let r = run_json(&v);
    // The taps are listed in the order of the links, so tap k is link k.
    for (link, conn) in [(0u32, 0u32), (1, 1)] {
        assert!(r
            .taps
            .iter()
            .filter(|t| t.link == link)
            .all(|t| t.flow == conn && t.tap == link));
        let pcap = farlink_core::world::write_pcap(&r, link, Vec::new()).unwrap();
        assert!(pcap.len() > 20_000, "link {link}: {} bytes", pcap.len());
    }
}

#[test]
fn a_segment_mss_sets_the_packet_size_of_its_hops() {
    // A burst given in packets is converted with the packet size of the connection crossing
    // the link: 536 + 40 bytes on the relayed radio hop.
    let mut v = geo_then_radio(0.0, &["G"], 1);
    v["links"][1]["fwd"]["loss"] =
        json!({"model": "gilbert_elliott", "mean_burst_pkts": 4, "rate": 0.01});
    v["flows"][0]["segments"] = json!([{}, {"tcp": {"mss_bytes": 536}}]);
    let sc = parse_scenario_json(&v.to_string()).unwrap();
    let small = format!("{:?}", sc.links()[1].fwd.loss);
    v["flows"][0]["segments"] = json!([{}, {}]);
    let sc = parse_scenario_json(&v.to_string()).unwrap();
    let large = format!("{:?}", sc.links()[1].fwd.loss);
    assert_ne!(small, large);
}
