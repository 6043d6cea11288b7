//! What the kernel is given of a scenario's TCP settings: the congestion controllers it has,
//! and, per flow, the settings applied (and how) and those it cannot take (and why).

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
    let mut s = FlowSettings::default();
    s.apply("congestion", format!("TCP_CONGESTION {congestion}"));
    socket_settings(&mut s, &f.tcp, mtu);
    namespace_settings(&mut s, &f.tcp, ns_tcp);
    route_settings(&mut s, &f.tcp);
    kernel_rules(&mut s, &f.tcp);
    s
}

/// What the device and the sockets set: the MSS (by the TUN's MTU), the buffers.
fn socket_settings(s: &mut FlowSettings, t: &TcpSpec, mtu: u32) {
    s.apply(
        "mss_bytes",
        format!(
            "TUN MTU {mtu}: MSS {}, less 12 bytes a segment with timestamps",
            mtu - 40
        ),
    );
    s.apply(
        "receive_buffer_bytes",
        format!("SO_RCVBUF {} on the listener", t.receive_buffer_bytes),
    );
    s.apply(
        "send_buffer_bytes",
        match t.send_buffer_bytes {
            Some(b) => format!("SO_SNDBUF {b}"),
            None => "kernel autotuning (unbounded)".into(),
        },
    );
}

/// The namespace's sysctls, which are the first flow's: taken where this flow agrees.
fn namespace_settings(s: &mut FlowSettings, t: &TcpSpec, ns_tcp: &TcpSpec) {
    const FIRST_FLOWS: &str = "the namespace's sysctl is the first flow's";
    let o = (t.options, ns_tcp.options);
    for (key, mine, ns) in [
        ("sack", o.0.sack, o.1.sack),
        ("timestamps", o.0.timestamps, o.1.timestamps),
        ("window_scaling", o.0.window_scaling, o.1.window_scaling),
    ] {
        if mine == ns {
            s.apply(key, format!("net.ipv4.tcp_{key} = {}", u8::from(mine)));
        } else {
            s.refuse(key, FIRST_FLOWS.into());
        }
    }
    if t.dup_thresh == ns_tcp.dup_thresh {
        s.apply(
            "dup_thresh",
            format!("net.ipv4.tcp_reordering = {}", t.dup_thresh),
        );
    } else {
        s.refuse("dup_thresh", FIRST_FLOWS.into());
    }
}

/// What the route to the peer sets (`initcwnd`, `rto_min`, `quickack`), and the delayed ACKs
/// it cannot.
fn route_settings(s: &mut FlowSettings, t: &TcpSpec) {
    s.apply(
        "initial_window_segments",
        format!("route initcwnd {}", t.initial_window_segments),
    );
    s.apply(
        "min_rto",
        format!(
            "route rto_min {}ms",
            t.rtt.min_rto.as_nanos().div_ceil(1_000_000)
        ),
    );
    match t.delayed_ack {
        DelayedAck::Off => s.apply("delayed_ack", "route quickack 1".into()),
        DelayedAck::On { quick_ack, .. } => {
            s.refuse(
                "delayed_ack_timeout",
                "the kernel's delayed-ACK timer is its own (adaptive, 40 ms to 200 ms)".into(),
            );
            if !quick_ack {
                s.refuse(
                    "quick_ack",
                    "the kernel's receiver always has its quick-ACK mode".into(),
                );
            }
        }
    }
}

/// Not settable: the kernel runs its own rule, named beside the scenario's so that a reader
/// sees whether the two agree (farlink.linux_tcp's settings name Linux's).
fn kernel_rules(s: &mut FlowSettings, t: &TcpSpec) {
    s.refuse(
        "recovery",
        format!(
            "the kernel's own (RACK-TLP with SACK, NewReno without); the scenario's \"{}\" is \
             farlink's",
            t.recovery.name()
        ),
    );
    s.refuse(
        "cwnd_reduction",
        format!(
            "the kernel's own (PRR, tcp_cwnd_reduction, which \"prr\" models; none under \
             BBR); the scenario's \"{}\" is farlink's",
            t.window_reduction.name()
        ),
    );
    s.refuse(
        "rto",
        format!(
            "the kernel's own (tcp_rtt_estimator, which \"linux\" models); the scenario's \
             \"{}\" is farlink's",
            t.rtt.rule.name()
        ),
    );
    s.refuse(
        "initial_rto",
        format!(
            "the kernel's 1000 ms (TCP_TIMEOUT_INIT); the scenario's {} ms",
            t.rtt.initial_rto.as_nanos() / 1_000_000
        ),
    );
    s.refuse("max_rto", "the kernel's 120 s".into());
    s.refuse("limited_transmit", "always on in the kernel".into());
    s.refuse("max_ooo_ranges", ooo_ranges_note(t));
    s.refuse(
        "handshake",
        "the kernel always connects; transfer time runs from the first write".into(),
    );
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
