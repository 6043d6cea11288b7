//! What the kernel is given of a scenario's TCP settings: the congestion controllers it has,
//! and, per flow, the settings applied (and how) and those it cannot take (and why).

use std::collections::BTreeMap;

use farlink_core::scenario::{FlowSpec, TcpSpec};
use farlink_core::tcp::receiver::DelayedAck;

use crate::settings::FlowSettings;

/// The congestion controllers this kernel offers.
pub(crate) fn kernel_controllers() -> Vec<String> {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// Which of flow `f`'s TCP settings the kernel was given, and which it could not take.
/// `ns_tcp` is the TCP settings whose sysctls the flow's namespaces got (the first flow's).
pub(crate) fn flow_settings(
    f: &FlowSpec,
    ns_tcp: &TcpSpec,
    congestion: &str,
    mtu: u32,
) -> FlowSettings {
    let t = &f.tcp;
    let mut applied = BTreeMap::new();
    let mut not_applied = BTreeMap::new();
    let mut put = |ok: bool, key: &str, text: String| {
        if ok {
            applied.insert(key.to_owned(), text);
        } else {
            not_applied.insert(key.to_owned(), text);
        }
    };
    put(true, "congestion", format!("TCP_CONGESTION {congestion}"));
    put(
        true,
        "mss_bytes",
        format!(
            "TUN MTU {mtu}: MSS {}, less 12 bytes a segment with timestamps",
            mtu - 40
        ),
    );
    put(
        true,
        "receive_buffer_bytes",
        format!("SO_RCVBUF {} on the listener", t.receive_buffer_bytes),
    );
    match t.send_buffer_bytes {
        Some(b) => put(true, "send_buffer_bytes", format!("SO_SNDBUF {b}")),
        None => put(
            true,
            "send_buffer_bytes",
            "kernel autotuning (unbounded)".into(),
        ),
    }
    for (key, mine, ns) in [
        ("sack", t.options.sack, ns_tcp.options.sack),
        (
            "timestamps",
            t.options.timestamps,
            ns_tcp.options.timestamps,
        ),
        (
            "window_scaling",
            t.options.window_scaling,
            ns_tcp.options.window_scaling,
        ),
    ] {
        if mine == ns {
            put(
                true,
                key,
                format!("net.ipv4.tcp_{key} = {}", u8::from(mine)),
            );
        } else {
            put(
                false,
                key,
                "the namespace's sysctl is the first flow's".into(),
            );
        }
    }
    if t.dup_thresh == ns_tcp.dup_thresh {
        put(
            true,
            "dup_thresh",
            format!("net.ipv4.tcp_reordering = {}", t.dup_thresh),
        );
    } else {
        put(
            false,
            "dup_thresh",
            "the namespace's sysctl is the first flow's".into(),
        );
    }
    put(
        true,
        "initial_window_segments",
        format!("route initcwnd {}", t.initial_window_segments),
    );
    put(
        true,
        "min_rto",
        format!(
            "route rto_min {}ms",
            t.rtt.min_rto.as_nanos().div_ceil(1_000_000)
        ),
    );
    match t.delayed_ack {
        DelayedAck::Off => put(true, "delayed_ack", "route quickack 1".into()),
        DelayedAck::On { quick_ack, .. } => {
            put(
                false,
                "delayed_ack_timeout",
                "the kernel's delayed-ACK timer is its own (adaptive, 40 ms to 200 ms)".into(),
            );
            if !quick_ack {
                put(
                    false,
                    "quick_ack",
                    "the kernel's receiver always has its quick-ACK mode".into(),
                );
            }
        }
    }
    // Not settable: the kernel runs its own rule, named beside the scenario's so that a reader
    // sees whether the two agree (farlink.linux_tcp's settings name Linux's).
    put(
        false,
        "recovery",
        format!(
            "the kernel's own (RACK-TLP with SACK, NewReno without); the scenario's \"{}\" is \
             farlink's",
            t.recovery.name()
        ),
    );
    put(
        false,
        "cwnd_reduction",
        format!(
            "the kernel's own (PRR, tcp_cwnd_reduction, which \"prr\" models; none under \
             BBR); the scenario's \"{}\" is farlink's",
            t.window_reduction.name()
        ),
    );
    put(
        false,
        "rto",
        format!(
            "the kernel's own (tcp_rtt_estimator, which \"linux\" models); the scenario's \
             \"{}\" is farlink's",
            t.rtt.rule.name()
        ),
    );
    put(
        false,
        "initial_rto",
        format!(
            "the kernel's 1000 ms (TCP_TIMEOUT_INIT); the scenario's {} ms",
            t.rtt.initial_rto.as_nanos() / 1_000_000
        ),
    );
    put(false, "max_rto", "the kernel's 120 s".into());
    put(false, "limited_transmit", "always on in the kernel".into());
    put(false, "max_ooo_ranges", ooo_ranges_note(t));
    put(
        false,
        "handshake",
        "the kernel always connects; transfer time runs from the first write".into(),
    );
    FlowSettings {
        applied,
        not_applied,
    }
}

/// The kernel receiver's out-of-order queue beside the scenario's `max_ooo_ranges`: both
/// engines' receivers on a real path are the kernel's.
pub(crate) fn ooo_ranges_note(t: &TcpSpec) -> String {
    let scenario = t
        .max_ooo_ranges
        .map_or_else(|| "\"window\"".to_owned(), |n| n.to_string());
    format!(
        "the kernel's own: its out-of-order queue is bounded by the socket's receive memory, \
         not by a count (\"window\" models it); the scenario's {scenario}"
    )
}
