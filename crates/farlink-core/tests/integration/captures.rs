//! Where a scenario captures (`pcap`: a link, a link end, a node) and the address map written
//! beside each capture.

use std::collections::BTreeSet;

use etherparse::{Ipv4HeaderSlice, TcpHeaderSlice};
use farlink_core::trace::TapRecord;
use farlink_core::world::{address_map, write_pcap};
use farlink_core::{parse_scenario_json, RunResult};
use serde_json::{json, Value};

use crate::support;
use support::run_json;

fn fnv64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// S - R - D with 5 % loss on R -> D; flow "up" S -> D, "local" S -> R, "down" D -> S.
fn three_flows() -> Value {
    json!({
        "duration": "8s",
        "nodes": ["S", "R", "D"],
        "links": [
            {"name": "S-R", "a": "S", "b": "R", "rate": "10Mbps", "delay": "1ms"},
            {"name": "R-D", "a": "R", "b": "D", "rate": "1Mbps", "delay": "40ms",
             "queue_pkts": 20, "fwd": {"loss": {"model": "bernoulli", "p": 0.05}}}
        ],
        "flows": [
            {"name": "up", "from": "S", "to": "D", "app": {"kind": "bulk", "size": "200KB"}},
            {"name": "local", "from": "S", "to": "R", "app": {"kind": "bulk", "size": "20KB"}},
            {"name": "down", "from": "D", "to": "S", "start": "0.5s",
             "tcp": {"timestamps": false, "window_scaling": false},
             "app": {"kind": "bulk", "size": "50KB"}}
        ],
        "pcap": ["R-D"]
    })
}

/// A capture's name, length in bytes and FNV-1a-64.
type Golden = (&'static str, usize, u64);

/// The scenarios whose captures were recorded before taps could be placed, and the length
/// and FNV-1a-64 of each capture as the writer produced them then.
fn legacy() -> Vec<(Value, Vec<Golden>)> {
    let three = three_flows();
    let mut two = three.clone();
    two["flows"][0]["tcp"] = json!({"handshake": true});
    two["pcap"] = json!(["S-R", "R-D", "S-R"]);
    let relay = json!({
        "seed": 3,
        "duration": "300s",
        "nodes": ["S", "G", "D"],
        "links": [
            {"name": "S-G", "a": "S", "b": "G", "rate": "2Mbps", "delay": "250ms",
             "queue_pkts": 200},
            {"name": "G-D", "a": "G", "b": "D", "rate": "5Mbps", "delay": "10ms",
             "queue_pkts": 200, "fwd": {"loss": {"model": "bernoulli", "p": 0.01}}}
        ],
        "flows": [{"name": "ftp", "from": "S", "to": "D", "relays": ["G"],
                   "tcp": {"receive_buffer": "1MiB"},
                   "app": {"kind": "bulk", "size": "100KB"}}],
        "pcap": ["G-D", "S-G"]
    });
    vec![
        (three, vec![GOLDEN_THREE]),
        (two, GOLDEN_TWO.to_vec()),
        (relay, GOLDEN_RELAY.to_vec()),
    ]
}

const GOLDEN_THREE: Golden = ("R-D", 274_096, 0xbd3a_f104_dcd7_77d0);
const GOLDEN_TWO: [Golden; 2] = [
    ("S-R", 309_932, 0xb5ca_1a5b_7285_26e0),
    ("R-D", 273_344, 0xc860_eec5_659a_e9da),
];
const GOLDEN_RELAY: [Golden; 2] = [
    ("G-D", 107_392, 0x3cad_e049_b151_d130),
    ("S-G", 107_392, 0xe81f_22ce_91b0_c35d),
];

#[test]
fn a_link_named_alone_gives_the_same_bytes_as_before() {
    for (v, golden) in legacy() {
        let r = run_json(&v);
        let got: Vec<(String, usize, u64)> = (0..r.tap_sites.len() as u32)
            .map(|i| {
                let bytes = write_pcap(&r, i, Vec::new()).unwrap();
                (
                    r.tap_sites[i as usize].name.clone(),
                    bytes.len(),
                    fnv64(&bytes),
                )
            })
            .collect();
        let want: Vec<(String, usize, u64)> = golden
            .iter()
            .map(|&(n, len, h)| (n.to_owned(), len, h))
            .collect();
        assert_eq!(got, want, "{v}");
    }
}

fn with_taps(taps: Value) -> RunResult {
    let mut v = three_flows();
    v["pcap"] = taps;
    run_json(&v)
}

fn records(r: &RunResult, tap: u32) -> Vec<&TapRecord> {
    r.taps.iter().filter(|t| t.tap == tap).collect()
}

#[test]
fn a_node_tap_sees_what_the_node_sends_and_receives_on_all_its_links() {
    let r = with_taps(json!([{"node": "R"}, "S-R", "R-D"]));
    assert_eq!(r.tap_sites[0].name, "node-R");
    let node = records(&r, 0);
    // On S-R (R is end b) it sees arrivals forward and departures back; on R-D (R is end a)
    // departures forward and arrivals back: each link, both directions.
    let mut seen: BTreeSet<(u32, bool)> = BTreeSet::new();
    seen.extend(node.iter().map(|t| (t.link, t.forward)));
    assert_eq!(
        seen,
        BTreeSet::from([(0, false), (0, true), (1, false), (1, true)])
    );
    // What leaves R on a link is what that link's own tap sees leave on that direction.
    let departing = |tap: u32, link: u32, forward: bool| {
        records(&r, tap)
            .into_iter()
            .filter(|t| t.link == link && t.forward == forward)
            .count()
    };
    assert_eq!(departing(0, 1, true), departing(2, 1, true));
    assert_eq!(departing(0, 0, false), departing(1, 0, false));
    // Data and ACKs of each flow through R, both ways.
    for flow in [0, 2] {
        for data in [true, false] {
            assert!(node.iter().any(|t| t.flow == flow && t.data == data));
        }
    }
    // Flow "local" ends at R: only its data arrives, only its ACKs leave.
    assert!(node
        .iter()
        .filter(|t| t.flow == 1)
        .all(|t| t.link == 0 && t.forward == t.data));
    let bytes = write_pcap(&r, 0, Vec::new()).unwrap();
    assert!(bytes.len() > write_pcap(&r, 2, Vec::new()).unwrap().len());
}

#[test]
fn a_tap_at_the_far_end_sees_what_the_lossy_link_delivered() {
    let r = with_taps(json!([{"link": "R-D", "at": "a"}, {"link": "R-D", "at": "b"}]));
    assert_eq!(
        (r.tap_sites[0].name.as_str(), r.tap_sites[1].name.as_str()),
        ("R-D@a", "R-D@b")
    );
    let data_fwd = |tap: u32| {
        records(&r, tap)
            .iter()
            .filter(|t| t.forward && t.data)
            .count() as u64
    };
    let fwd = &r.summary.links[1].fwd;
    assert!(fwd.drops["corruption"] > 0);
    // At b, only what arrived: fewer data packets than left a, by the link's losses.
    assert!(data_fwd(1) < data_fwd(0), "{} {}", data_fwd(1), data_fwd(0));
    let acks_fwd = records(&r, 1)
        .iter()
        .filter(|t| t.forward && !t.data)
        .count() as u64;
    assert_eq!(data_fwd(1) + acks_fwd, fwd.delivered_pkts);
    // Each end sees both directions: one leaving, the other arriving.
    for tap in [0, 1] {
        let both: BTreeSet<bool> = records(&r, tap).iter().map(|t| t.forward).collect();
        assert_eq!(both.len(), 2);
    }
    // Time order within every capture although directions interleave.
    for tap in [0, 1] {
        let bytes = write_pcap(&r, tap, Vec::new()).unwrap();
        let times: Vec<u64> = pcap_packets(&bytes).iter().map(|p| p.0).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
    }
}

/// (time in ns, packet) of each record of a capture.
fn pcap_packets(bytes: &[u8]) -> Vec<(u64, Vec<u8>)> {
    let le32 = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    let mut out = Vec::new();
    let mut at = 24;
    while at < bytes.len() {
        let caplen = le32(at + 8) as usize;
        let t = u64::from(le32(at)) * 1_000_000_000 + u64::from(le32(at + 4));
        out.push((t, bytes[at + 16..at + 16 + caplen].to_vec()));
        at += 16 + caplen;
    }
    out
}

#[test]
fn the_address_map_names_every_address_and_flow_in_the_capture() {
    let r = with_taps(json!(["R-D", {"node": "S"}, {"link": "S-R", "at": "b"}]));
    for tap in 0..3u32 {
        let map = address_map(&r, tap).unwrap();
        assert_eq!(
            map.capture,
            format!("{}.pcap", r.tap_sites[tap as usize].name)
        );
        assert_eq!(map.addresses.len(), 3);
        let bytes = write_pcap(&r, tap, Vec::new()).unwrap();
        let packets = pcap_packets(&bytes);
        assert!(!packets.is_empty());
        for (_, p) in &packets {
            let ip = Ipv4HeaderSlice::from_slice(p).unwrap();
            let tcp = TcpHeaderSlice::from_slice(&p[20..]).unwrap();
            let (src, dst) = (
                ip.source_addr().to_string(),
                ip.destination_addr().to_string(),
            );
            assert!(map.addresses.contains_key(&src), "{src}");
            assert!(map.addresses.contains_key(&dst), "{dst}");
            // Exactly one flow has this 4-tuple, one way or the other, and its ends are
            // the nodes the addresses stand for.
            let four = (src, tcp.source_port(), dst, tcp.destination_port());
            let flows: Vec<_> = map
                .flows
                .iter()
                .filter(|f| {
                    let fwd = (
                        f.sender.address.clone(),
                        f.sender.port,
                        f.receiver.address.clone(),
                        f.receiver.port,
                    );
                    let back = (fwd.2.clone(), fwd.3, fwd.0.clone(), fwd.1);
                    four == fwd || four == back
                })
                .collect();
            assert_eq!(flows.len(), 1, "{four:?}");
            let f = flows[0];
            assert_eq!(map.addresses[&f.sender.address], f.sender.node);
            assert_eq!(map.addresses[&f.receiver.address], f.receiver.node);
            assert!(f.packets > 0);
        }
    }
    let map = address_map(&r, 0).unwrap();
    let names: Vec<&str> = map.flows.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["up", "local", "down"]);
    assert_eq!(map.flows[2].direction, "D -> S");
    assert_eq!(map.flows[1].packets, 0, "flow local does not cross R-D");
    let tap = serde_json::to_value(&map.tap).unwrap();
    assert_eq!(tap["link"], "R-D");
    assert_eq!(tap["at"], "departures");
    let tap = serde_json::to_value(&address_map(&r, 1).unwrap().tap).unwrap();
    assert_eq!(tap["node"], "S");
    assert!(tap.get("link").is_none());
}

fn tap_error(taps: Value) -> String {
    let mut v = three_flows();
    v["pcap"] = taps;
    match parse_scenario_json(&v.to_string()) {
        Ok(_) => panic!("accepted: {}", v["pcap"]),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_bad_tap_is_refused_with_its_path() {
    for (taps, want) in [
        (
            json!(["X-Y"]),
            "pcap[0]: unknown link \"X-Y\"; expected one of: S-R, R-D",
        ),
        (
            json!(["R-D", {"link": "R-D", "at": "c"}]),
            "pcap[1].at: unknown end \"c\"; expected \"a\" (R) or \"b\" (D)",
        ),
        (
            json!([{"link": "Q", "at": "a"}]),
            "pcap[0].link: unknown link \"Q\"; expected one of: S-R, R-D",
        ),
        (
            json!([{"node": "Q"}]),
            "pcap[0].node: unknown node \"Q\"; expected one of: S, R, D",
        ),
        (
            json!([{"link": "R-D"}]),
            "pcap[0]: missing at: name the link's end to capture at, \"a\" or \"b\" \
             (or write the link's name alone for its departures)",
        ),
        (
            json!([{"node": "R", "link": "R-D", "at": "a"}]),
            "pcap[0]: a tap names a link end or a node, not both: give link and at, or node",
        ),
        (
            json!([{"node": "R", "side": "a"}]),
            "pcap[0].side: unknown field `side`; a tap takes link and at, or node",
        ),
        (json!([{"node": 3}]), "pcap[0].node: expected a string"),
        (
            json!([7]),
            "pcap[0]: expected a link's name (\"R-D\"), {link = \"R-D\", at = \"a\"} or \
             {node = \"R\"}",
        ),
        (
            json!([{"node": "R", "at": "a"}]),
            "pcap[0].at: a node tap takes no at; it sees all the node's links",
        ),
        (
            json!([{"at": "a"}]),
            "pcap[0]: at needs a link: {link = \"R-D\", at = \"a\"}",
        ),
    ] {
        let got = tap_error(taps);
        assert_eq!(got, want);
        assert!(!got.contains('\n'));
    }
}

#[test]
fn a_tap_named_twice_is_refused_and_a_repeated_tap_counts_once() {
    let mut v = three_flows();
    v["nodes"] = json!(["S", "R", "D", "node-R"]);
    v["links"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "node-R", "a": "R", "b": "node-R", "rate": "1Mbps", "delay": "1ms"}));
    v["pcap"] = json!(["node-R", {"node": "R"}]);
    let e = parse_scenario_json(&v.to_string()).unwrap_err().to_string();
    assert_eq!(
        e,
        "pcap[1]: a second capture named \"node-R\"; tap names must differ"
    );
    let r = with_taps(json!([{"node": "D"}, {"node": "D"}, {"link": "R-D", "at": "b"}]));
    assert_eq!(r.tap_sites.len(), 2);
    // D has one link, R-D, at end b: the node tap and the link-end tap see the same.
    let strip = |tap: u32| -> Vec<_> {
        records(&r, tap)
            .iter()
            .map(|t| (t.at, t.forward, t.flow, t.data))
            .collect()
    };
    assert_eq!(strip(0), strip(1));
}
