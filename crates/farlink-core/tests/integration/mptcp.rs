//! Multipath TCP through the simulator (`transport = "mptcp"`, `src/world/mptcp.rs`): one
//! subflow per member of an Iridium bundle like the `iridium-4` preset, through call drops and
//! redials, against the members' summed capacity without them; scenario errors.

use farlink_core::parse_scenario_json;
use serde_json::{json, Value};

use crate::support;
use support::run_json;

/// `iridium-4`'s bundle and TCP (seed 000 Table 6.2): four 2400 bit/s members, 0.5 s,
/// selective-repeat ARQ over 27-byte frames damaged with probability 1.3 %, a transmit queue of
/// 3; call drops at `call_drop_rate`, noticed after 30 s, redialled in 14.5 s.
fn iridium_4(size: &str, call_drop_rate: &str, transport: Value, duration: &str) -> Value {
    let frame_loss = json!({"model": "bernoulli", "p": 0.013});
    let mut flow = json!({
        "name": "ftp", "from": "Summit", "to": "Kansas",
        "tcp": {"mss_bytes": 1460, "receive_buffer": "22.0KB", "initial_window_segments": 3,
                "recovery": "sack", "cc": "bic"},
        "app": {"kind": "bulk", "size": size}
    });
    for (k, v) in transport.as_object().unwrap() {
        flow[k] = v.clone();
    }
    json!({
        "seed": 1,
        "duration": duration,
        "nodes": ["Summit", "Kansas"],
        "links": [{"name": "iridium", "a": "Summit", "b": "Kansas", "queue_pkts": 100,
                   "fwd": {"loss": frame_loss}, "rev": {"loss": frame_loss},
                   "bundle": {"members": 4, "rate": "2400bps", "delay": "0.5s",
                              "txqueue_pkts": 3, "call_drop_rate": call_drop_rate,
                              "detection_delay": "30s", "t_d": "30s", "dial_time": "14.5s",
                              "primary": false, "start": "connected",
                              "arq": {"mode": "selective-repeat", "frame": "27B",
                                      "max_tries": 3}}}],
        "flows": [flow],
        "trace": {"goodput": true}
    })
}

fn mptcp(scheduler: &str, coupling: &str) -> Value {
    json!({"transport": "mptcp", "mptcp": {"scheduler": scheduler, "coupling": coupling}})
}

#[test]
fn a_megabyte_crosses_call_drops_and_each_dropped_subflow_comes_back() {
    // One call drop per member every 5 minutes on average: several during the ~15-minute
    // transfer. The engine's conservation checks (every byte read once, in order, at the
    // connection level and on each subflow) run at the end of every run.
    let r = run_json(&iridium_4("1MB", "1/5min", mptcp("minrtt", "lia"), "2h"));
    let f = &r.summary.flows[0];
    assert!(f.finished, "{f:?}");
    assert_eq!(f.delivered_bytes, 1_000_000);
    assert_eq!(f.subflows.len(), 4);
    let m = f.mptcp.as_ref().unwrap();
    assert_eq!((m.scheduler, m.coupling), ("minrtt", "lia"));
    let finish = f.finish_s.unwrap();
    // A member that went down during the transfer and was up again before its end: a new
    // subflow over it, which then carried data.
    let back: Vec<_> = f
        .subflows
        .iter()
        .filter(|s| {
            s.down_intervals_s
                .iter()
                .any(|d| d[0] > 0.0 && d[1] < finish)
        })
        .collect();
    assert!(
        !back.is_empty(),
        "no member dropped and came back: {:?}",
        f.subflows
    );
    for s in &back {
        assert!(s.established >= 2, "{s:?}");
    }
    assert!(
        m.reinjected_bytes > 0,
        "a dropped subflow's data is sent again: {m:?}"
    );
    let carried: u64 = f.subflows.iter().map(|s| s.bytes).sum();
    assert!(carried >= 1_000_000, "{carried}");
    // The subflows delivered the file and the copies the connection level threw away (a
    // closed subflow's late bytes are dropped before they count as copies).
    assert!(
        m.duplicate_bytes <= carried - 1_000_000,
        "{m:?} of {carried}"
    );
}

#[test]
fn without_call_drops_four_subflows_fill_the_four_members() {
    // 2 MB over four equal members and no call drops. The receive buffer is one Linux's
    // autotuning would give (the connection level's grows with the subflows', mptcp_rcv_space_
    // adjust), not the preset's 22 KB: with 22 KB shared by four subflows whose round trips are
    // seconds apart, the connection waits on its slowest subflow for the next in-order byte
    // (head-of-line blocking), and the goodput is that of the window, not of the transport
    // (the next test).
    let mut sc = iridium_4("2MB", "0", mptcp("minrtt", "lia"), "3h");
    sc["flows"][0]["tcp"]["receive_buffer"] = json!("1MB");
    let r = run_json(&sc);
    let f = &r.summary.flows[0];
    assert!(f.finished, "{f:?}");
    assert_eq!(f.bottleneck_bps, 9600);
    assert!(
        f.normalized_goodput >= 0.85,
        "goodput {} bit/s of 9600: {:.3}",
        f.goodput_bps,
        f.normalized_goodput
    );
    for s in &f.subflows {
        assert_eq!(s.established, 1, "{s:?}");
        assert!(s.down_intervals_s.is_empty(), "{s:?}");
        // Each member carries a share: minrtt fills every window that has room.
        assert!(s.bytes > 2_000_000 / 8, "{s:?}");
    }
}

#[test]
fn a_small_shared_window_is_held_back_by_the_slowest_subflow() {
    // The preset's 22 KB, now one window for the four subflows (RFC 8684 3.3.4): data waits
    // out of order at the connection level for a byte on a subflow behind a longer queue.
    let small = run_json(&iridium_4("1MB", "0", mptcp("minrtt", "lia"), "3h"));
    let mut sc = iridium_4("1MB", "0", mptcp("minrtt", "lia"), "3h");
    sc["flows"][0]["tcp"]["receive_buffer"] = json!("1MB");
    let large = run_json(&sc);
    let (s, l) = (&small.summary.flows[0], &large.summary.flows[0]);
    let held = s.mptcp.as_ref().unwrap().max_out_of_order_bytes;
    assert!(held > 0 && held <= 22_000, "the window bounds it: {held}");
    assert!(
        s.goodput_bps < l.goodput_bps,
        "{} vs {}",
        s.goodput_bps,
        l.goodput_bps
    );
}

#[test]
fn every_scheduler_and_coupling_delivers_the_file() {
    for (scheduler, coupling) in [
        ("roundrobin", "olia"),
        ("redundant", "balia"),
        ("minrtt", "none"),
        ("linux", "lia"),
    ] {
        let r = run_json(&iridium_4(
            "200KB",
            "1/5min",
            mptcp(scheduler, coupling),
            "2h",
        ));
        let f = &r.summary.flows[0];
        assert!(f.finished, "{scheduler} {coupling}: {f:?}");
        assert_eq!(f.delivered_bytes, 200_000);
        let m = f.mptcp.as_ref().unwrap();
        if scheduler == "redundant" {
            assert!(m.duplicate_bytes > 0, "copies on every subflow: {m:?}");
        }
    }
}

#[test]
fn the_same_seed_gives_the_same_multipath_run() {
    let sc = iridium_4("300KB", "1/5min", mptcp("minrtt", "lia"), "1h");
    let a = serde_json::to_string(&run_json(&sc).summary).unwrap();
    let b = serde_json::to_string(&run_json(&sc).summary).unwrap();
    assert_eq!(a, b);
}

#[test]
fn scenario_errors_name_the_field() {
    let bad = |transport: Value| {
        parse_scenario_json(&iridium_4("1MB", "0", transport, "1h").to_string())
            .unwrap_err()
            .to_string()
    };
    let e = bad(json!({"transport": "quic"}));
    assert!(
        e.contains("flows[0].transport") && e.contains("tcp, mptcp"),
        "{e}"
    );
    let e = bad(json!({"transport": "mptcp", "mptcp": {"scheduler": "fastest"}}));
    assert!(
        e.contains("flows[0].mptcp.scheduler") && e.contains("minrtt"),
        "{e}"
    );
    let e = bad(json!({"transport": "mptcp", "mptcp": {"coupling": "cubic"}}));
    assert!(
        e.contains("flows[0].mptcp.coupling") && e.contains("lia, olia, balia, none"),
        "{e}"
    );
    let e = bad(json!({"mptcp": {"coupling": "lia"}}));
    assert!(
        e.contains("flows[0].mptcp") && e.contains("transport = \"mptcp\""),
        "{e}"
    );
    // A route without a bundle.
    let mut plain = iridium_4("1MB", "0", mptcp("minrtt", "lia"), "1h");
    plain["links"][0].as_object_mut().unwrap().remove("bundle");
    plain["links"][0]["rate"] = json!("9600bps");
    plain["links"][0]["delay"] = json!("0.5s");
    let e = parse_scenario_json(&plain.to_string())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("flows[0].transport") && e.contains("bundle"),
        "{e}"
    );
}

#[test]
fn the_goodput_trace_is_the_connection_levels_under_the_flows_own_id() {
    let r = run_json(&iridium_4("200KB", "1/5min", mptcp("minrtt", "lia"), "1h"));
    let g = &r.traces.goodput;
    // Only the flow's own connection (id 0) has rows; its subflows' bytes count there.
    assert!(!g.flow.is_empty());
    assert!(g.flow.iter().all(|&f| f == 0), "{:?}", g.flow);
    assert!(g.delivered_bytes.windows(2).all(|w| w[0] <= w[1]));
    // The grid's last point before the last byte: never more than the file (copies that
    // subflows delivered twice are not counted).
    let last = *g.delivered_bytes.last().unwrap();
    assert!(last > 0 && last <= 200_000, "{last}");
}

#[test]
fn with_simulated_handshakes_every_subflow_opens_with_its_own() {
    let mut sc = iridium_4("300KB", "1/5min", mptcp("minrtt", "lia"), "2h");
    sc["flows"][0]["tcp"]["handshake"] = json!(true);
    let r = run_json(&sc);
    let f = &r.summary.flows[0];
    assert!(f.finished, "{f:?}");
    assert_eq!(f.delivered_bytes, 300_000);
    // One SYN per subflow opened, first ones and reopened ones alike; each connection's
    // handshake is in the pcap writer's list of connections.
    let opened: u32 = f.subflows.iter().map(|s| s.established).sum();
    let handshakes = r.flows.iter().filter(|c| c.handshake).count() as u32;
    assert!(opened >= 4, "{:?}", f.subflows);
    assert!(
        handshakes >= opened,
        "{handshakes} connections with a handshake, {opened} opened"
    );
    assert!(r.flows.iter().all(|c| c.flow == 0));
    assert!(r.flows.iter().any(|c| c.name == "ftp/member0"));
}

#[test]
fn an_unbounded_source_ends_at_its_stop_with_every_byte_read() {
    let mut sc = iridium_4("1MB", "1/5min", mptcp("minrtt", "lia"), "1h");
    sc["flows"][0]["app"] = json!({"kind": "unbounded"});
    sc["flows"][0]["stop"] = json!("10min");
    let r = run_json(&sc);
    let f = &r.summary.flows[0];
    assert_eq!(f.app, "unbounded");
    assert!(f.finished, "{f:?}");
    let written = f.app_bytes.unwrap();
    assert_eq!(f.delivered_bytes, written);
    assert!(f.finish_s.unwrap() >= 600.0);
    // Over the ten minutes, most of the members' 9600 bit/s despite the drops.
    assert!(written > 600 * 9600 / 8 / 2, "{written}");
}

#[test]
fn a_tcp_flow_cannot_share_the_members_of_multipath_subflows() {
    let mut sc = iridium_4("1MB", "0", mptcp("minrtt", "lia"), "1h");
    let mut other = sc["flows"][0].clone();
    other["name"] = json!("other");
    other.as_object_mut().unwrap().remove("transport");
    other.as_object_mut().unwrap().remove("mptcp");
    sc["flows"].as_array_mut().unwrap().push(other);
    let e = parse_scenario_json(&sc.to_string())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("flows[1].transport") && e.contains("flows[0]"),
        "{e}"
    );
}

/// Two members of very different rates, no ARQ and no call drops: a 64 kbit/s member of 50 ms
/// and a 4800 bit/s member of 300 ms, each behind a queue of 10 packets; 500 KB by Multipath
/// TCP (minimum RTT first, uncoupled) with a 1 MB connection window and the send buffer
/// `send_buffer` (`None`: unbounded).
fn unequal_pair(send_buffer: Option<&str>) -> Value {
    let mut tcp = json!({"mss_bytes": 1460, "receive_buffer": "1MB", "recovery": "sack",
                         "cc": "reno"});
    if let Some(b) = send_buffer {
        tcp["send_buffer"] = json!(b);
    }
    json!({
        "seed": 1,
        "duration": "1h",
        "nodes": ["A", "B"],
        "links": [{"name": "pair", "a": "A", "b": "B", "queue_pkts": 10,
                   "bundle": {"members": [{"name": "fast", "rate": "64kbps", "delay": "50ms"},
                                          {"name": "slow", "rate": "4800bps", "delay": "300ms"}],
                              "txqueue_pkts": 3, "primary": false, "start": "connected"}}],
        "flows": [{"name": "ftp", "from": "A", "to": "B", "tcp": tcp,
                   "app": {"kind": "bulk", "size": "500KB"},
                   "transport": "mptcp",
                   "mptcp": {"scheduler": "minrtt", "coupling": "none"}}]
    })
}

#[test]
fn a_shared_send_buffer_starves_the_fast_subflow_behind_the_slow_one() {
    // Unbounded (the default), the fast member carries what the slow one cannot and the
    // connection comes near the members' sum.
    let free = run_json(&unequal_pair(None));
    let f = &free.summary.flows[0];
    assert!(f.finished, "{f:?}");
    assert_eq!(f.bottleneck_bps, 68_800);
    assert!(
        f.normalized_goodput > 0.85,
        "unbounded: {:.3} of the sum",
        f.normalized_goodput
    );
    assert_eq!(f.limited_s.as_ref().unwrap()["send_buffer"], Some(0.0));
    // 32 KB for the whole connection, as Linux's MPTCP socket keeps one: more than the fast
    // member's path holds (its queue and round trip, about 16 KB), so minimum RTT first puts
    // data on the slow member too. A byte leaves the buffer only once the DATA_ACK covers it:
    // the segments waiting on the slow member hold it full, and the fast member idles (its time
    // counted against the send buffer) until the slow one delivers. The connection falls far
    // below the sum.
    let held = run_json(&unequal_pair(Some("32KB")));
    let h = &held.summary.flows[0];
    assert!(h.finished, "{h:?}");
    assert_eq!(h.delivered_bytes, 500_000);
    assert!(
        h.subflows[1].bytes > 10 * 1460,
        "the slow member carried data: {:?}",
        h.subflows
    );
    assert!(
        h.normalized_goodput < 0.6 * f.normalized_goodput,
        "32 KB: {:.3} of the sum, unbounded {:.3}",
        h.normalized_goodput,
        f.normalized_goodput
    );
    let buffer_s = h.limited_s.as_ref().unwrap()["send_buffer"].unwrap();
    let transfer_s = h.transfer_time_s.unwrap();
    assert!(
        buffer_s > 0.3 * transfer_s,
        "subflows idle for the send buffer {buffer_s:.1} s of {transfer_s:.1} s: {:?}",
        h.limited_s
    );
}
