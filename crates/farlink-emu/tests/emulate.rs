//! The emulator end to end, on this host. These need CAP_NET_ADMIN and /dev/net/tun (CI runs
//! as root); without them each test says why and passes without running. They run traffic in
//! real time, so `cargo test` leaves them out (`#[ignore]`) and `make test` runs them with
//! `--ignored`, one at a time, after the other emulations: beside those they would share the
//! host's 2 cores with another emulator's driver.

use farlink_core::link::{LinkEvent, Packet};
use farlink_core::path;
use farlink_core::scenario::parse_scenario_json;
use farlink_core::time::{SimDuration, SimTime};
use farlink_emu::{emulate, EmuError, EmuOptions};

/// Why this host cannot run the emulator, if it cannot.
fn cannot_emulate() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let cap = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    if cap & (1 << 12) == 0 {
        return Some("no CAP_NET_ADMIN".into());
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Some("no /dev/net/tun".into());
    }
    None
}

/// One emulation at a time in this test binary: each run takes a share of two small CPUs, and
/// the signal test must see no other run's handlers.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

macro_rules! need_host {
    () => {
        if let Some(why) = cannot_emulate() {
            eprintln!("skipped: {why}");
            return;
        }
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    };
}

/// seed 003's wireless path (preset stpd-wireless) with a bulk transfer of `size`.
fn wireless(size: &str, loss: &str, duration: &str) -> String {
    format!(
        r#"{{
        "name": "stpd-wireless", "seed": 1, "duration": "{duration}",
        "nodes": ["S", "R", "D"],
        "links": [
            {{"name": "S-R", "a": "S", "b": "R", "rate": "10Mbps", "delay": "0.1ms", "queue_pkts": 100}},
            {{"name": "R-D", "a": "R", "b": "D", "rate": "1.5Mbps", "delay": "80ms", "queue_pkts": 30,
              "fwd": {{"loss": {loss}}}}}
        ],
        "flows": [{{"name": "ftp", "from": "S", "to": "D",
                    "tcp": {{"mss_bytes": 960, "recovery": "reno", "cc": "reno"}},
                    "app": {{"kind": "bulk", "size": "{size}"}}}}]
    }}"#
    )
}

#[test]
#[ignore = "real time: make test runs it one at a time with the emulations (--ignored)"]
fn a_short_bulk_transfer_over_the_wireless_path_completes_with_sane_figures() {
    need_host!();
    let sc = parse_scenario_json(&wireless("200KB", r#"{"model": "none"}"#, "20s")).unwrap();
    let r = emulate(&sc, &EmuOptions::default()).unwrap();
    eprintln!("{}", serde_json::to_string_pretty(&r).unwrap());
    let f = &r.flows[0];
    assert!(f.summary.finished, "{f:?}");
    assert_eq!(f.summary.delivered_bytes, 200_000);
    // 200 kB at 1.5 Mbit/s is 1.07 s of serialisation, plus slow start over a 160 ms RTT.
    let t = f.summary.transfer_time_s.unwrap();
    assert!((1.07..8.0).contains(&t), "transfer time {t}");
    assert!(
        f.summary.normalized_goodput > 0.1 && f.summary.normalized_goodput <= 1.0,
        "{f:?}"
    );
    let rtt = f.summary.final_srtt_s.unwrap();
    assert!((0.15..1.0).contains(&rtt), "srtt {rtt}");
    let e = &r.emulator;
    assert!(e.packets_written > 200_000 / 1000, "{e:?}");
    assert!(
        e.departure_error_us.count > 0 && e.departure_error_us.p50 < 10_000.0,
        "{e:?}"
    );
    assert_eq!(e.unroutable_pkts, 0);
    // The slab's first slots were enough: nothing was allocated for packets while running.
    assert_eq!(e.slab_growths, 0);
    // What went into the links came out of them or was dropped with a cause.
    let rd = &r.links[1].fwd;
    let dropped: u64 = rd.drops.values().sum();
    assert_eq!(
        rd.offered_pkts,
        rd.delivered_pkts + dropped + rd.in_flight_pkts
    );
}

#[test]
#[ignore = "real time: make test runs it one at a time with the emulations (--ignored)"]
fn lcg16807_drops_the_same_packet_indices_as_the_simulators_link() {
    need_host!();
    let loss = r#"{"model": "lcg16807", "rate": 0.05, "seed": 7}"#;
    let sc = parse_scenario_json(&wireless("150KB", loss, "30s")).unwrap();
    let opts = EmuOptions {
        record_deliveries: true,
        ..EmuOptions::default()
    };
    let r = emulate(&sc, &opts).unwrap();
    let rd = &r.links[1].fwd;
    let lost = rd.lost_ordinals.clone().unwrap();
    let outcomes = rd.delivered_pkts + rd.drops["corruption"];
    assert!(!lost.is_empty() && outcomes > 100, "{rd:?}");
    // The simulator's own link direction, built from the same scenario by the same builder,
    // given as many packets one by one.
    let mut links = path::build(&sc).unwrap();
    let d = path::dir_index(farlink_core::scenario::Hop {
        link: 1,
        forward: true,
    });
    let dir = &mut links.dirs[d];
    let mut sim_lost = Vec::new();
    let mut now = SimTime::ZERO;
    for k in 0..outcomes {
        dir.offer(
            now,
            Packet {
                id: k,
                size_bytes: 1000,
                ..Packet::default()
            },
        )
        .unwrap();
        while let Some(t) = dir.next_wakeup() {
            now = now.max(t);
            match dir.poll(now) {
                Some(LinkEvent::Dropped { .. }) => sim_lost.push(k),
                Some(LinkEvent::Delivered { .. }) | None => {}
            }
        }
        now += SimDuration::from_millis(1);
    }
    assert_eq!(lost, sim_lost);
}

#[test]
#[ignore = "real time: make test runs it one at a time with the emulations (--ignored)"]
fn a_controller_the_kernel_lacks_is_refused_before_anything_is_made() {
    need_host!();
    let sc = parse_scenario_json(&wireless("10KB", r#"{"model": "none"}"#, "5s")).unwrap();
    let opts = EmuOptions {
        tcp: Some("stpd".into()),
        sender: Some("kernel".into()),
        ..EmuOptions::default()
    };
    match emulate(&sc, &opts) {
        Err(EmuError::Unsupported(msg)) => {
            assert!(msg.contains("stpd") && msg.contains("reno"), "{msg}")
        }
        other => panic!("expected an unsupported error, got {other:?}"),
    }
}

#[test]
#[ignore = "real time: make test runs it one at a time with the emulations (--ignored)"]
fn a_controller_only_farlink_has_runs_on_farlink_s_sender_to_the_kernel_receiver() {
    need_host!();
    let sc = parse_scenario_json(&wireless("100KB", r#"{"model": "none"}"#, "30s")).unwrap();
    let opts = EmuOptions {
        tcp: Some("vegas".into()),
        ..EmuOptions::default()
    };
    let r = emulate(&sc, &opts).unwrap();
    let f = &r.flows[0];
    assert_eq!(
        (f.emulation.sender, f.emulation.congestion.as_str()),
        ("farlink", "vegas")
    );
    assert_eq!(f.emulation.error, None);
    assert!(
        f.summary.finished && f.emulation.verified == Some(true),
        "{f:?}"
    );
    assert_eq!(f.summary.delivered_bytes, 100_000);
    // The links carried the farlink sender's own packets, and it parsed every answer.
    let wire = f
        .emulation
        .wire
        .expect("farlink's sender reports its wire counters");
    assert!(wire.packets_sent > 70 && wire.malformed == 0, "{wire:?}");
}

/// The host's own interfaces, routes and queueing disciplines, as the tools print them.
fn host_network() -> String {
    let run = |cmd: &str, args: &[&str]| {
        let out = std::process::Command::new(cmd).args(args).output();
        match out {
            Ok(o) => String::from_utf8_lossy(&o.stdout).into_owned(),
            Err(e) => format!("{cmd}: {e}"),
        }
    };
    [
        run("ip", &["-o", "link", "show"]),
        run("ip", &["-o", "addr", "show"]),
        run("ip", &["route", "show", "table", "all"]),
        run("ip", &["-6", "route", "show", "table", "all"]),
        run("tc", &["qdisc", "show"]),
    ]
    .join("\n")
}

#[test]
#[ignore = "real time: make test runs it one at a time with the emulations (--ignored)"]
fn the_hosts_interfaces_routes_and_qdiscs_are_the_same_after_a_run() {
    need_host!();
    let before = host_network();
    let sc = parse_scenario_json(&wireless("30KB", r#"{"model": "none"}"#, "10s")).unwrap();
    let r = emulate(&sc, &EmuOptions::default()).unwrap();
    assert!(r.flows[0].summary.finished);
    assert_eq!(host_network(), before);
    let left: Vec<String> = std::fs::read_dir("/run/netns")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.starts_with(&format!("farlink-{}-", r.emulator.run_id)))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
}

#[test]
#[ignore = "real time: make test runs it one at a time with the emulations (--ignored)"]
fn a_namespace_left_by_a_killed_run_is_removed_at_the_next_start() {
    need_host!();
    // What a run killed with SIGKILL leaves: its namespace, and no live lock.
    let stale = "farlink-dead1-S";
    let made = std::process::Command::new("ip")
        .args(["netns", "add", stale])
        .status()
        .unwrap();
    assert!(made.success());
    let sc = parse_scenario_json(&wireless("10KB", r#"{"model": "none"}"#, "10s")).unwrap();
    let r = emulate(&sc, &EmuOptions::default()).unwrap();
    assert!(
        !std::path::Path::new("/run/netns").join(stale).exists(),
        "{stale} is still there"
    );
    // Runs of this process that are alive hold their locks: only the dead one may go.
    assert!(r
        .emulator
        .removed_stale
        .iter()
        .all(|n| !n.contains(&format!("farlink-{:x}", std::process::id()))));
}

/// Whether this process catches `sig` (its bit in /proc/self/status's SigCgt).
fn catches(sig: u32) -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let caught = status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    caught & (1 << (sig - 1)) != 0
}

#[test]
#[ignore = "real time: make test runs it one at a time with the emulations (--ignored)"]
fn a_run_gives_back_the_processs_sigterm_disposition() {
    need_host!();
    const SIGTERM: u32 = 15;
    let before = catches(SIGTERM);
    let sc = parse_scenario_json(&wireless("10KB", r#"{"model": "none"}"#, "10s")).unwrap();
    emulate(&sc, &EmuOptions::default()).unwrap();
    assert_eq!(
        catches(SIGTERM),
        before,
        "SIGTERM would be ignored after a run"
    );
}
