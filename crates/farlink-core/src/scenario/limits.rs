//! Physical ranges: a pass over a validated [`Scenario`] that refuses every number that would
//! make a run's work or memory unbounded while describing nothing physical.
//!
//! Validation proper (`scenario.rs`) checks that each value means something (a positive rate,
//! a probability in [0, 1]); this pass checks that it is in the range a far link can have,
//! and the relations between values that decide how often timers fire. Each refusal names the
//! field as the rest of validation does (`flows[0].tcp.max_rto: ...`). The ranges and their
//! reasons are listed in `docs/scenarios.md` ("Limits"); what a scenario costs as a whole (its
//! events, trace rows and memory) is the run budget's business ([`crate::world::budget`]).
//!
//! Ranges elsewhere, checked where the value is read: durations at most
//! [`super::MAX_DURATION_S`], rates at most [`super::MAX_RATE_BPS`], bundles of 1 to
//! [`crate::links::mlppp::MAX_MEMBERS`] members, the MSS in [`super::MSS_RANGE_BYTES`], receive
//! buffers at most [`super::MAX_RECEIVE_BUFFER_BYTES`], f_d T from
//! [`crate::loss::MIN_FD_T`] to [`crate::loss::MAX_FD_T`], `min_rto <= max_rto`.

use super::{AppSpec, FlowSpec, LinkSpec, Scenario, ScenarioError, TcpSpec};
use crate::links::link::QueueLimit;
use crate::tcp::receiver::DelayedAck;
use crate::time::SimDuration;

/// The shortest sampling or message interval: a microsecond. Finer than any far link's packet
/// time (a 1500-byte packet takes 1.2 us at 10 Gbit/s), and a bound on rows per simulated
/// second (a million per flow) that the run budget then weighs against the duration.
pub const MIN_INTERVAL: SimDuration = SimDuration::from_micros(1);
/// The shortest retransmission timeout (`initial_rto`, `min_rto`, `max_rto`): a millisecond.
/// RFC 6298 asks for 1 s, Linux uses 200 ms; below a millisecond no path of farlink's has a
/// round trip, so a timer that short could only fire without cause, over and over.
pub const MIN_RTO: SimDuration = SimDuration::from_millis(1);
/// The shortest delayed-ACK timeout and RLP NAK timer: a microsecond (see [`MIN_INTERVAL`]).
pub const MIN_PROTOCOL_TIMER: SimDuration = MIN_INTERVAL;
/// The shortest dial of a bundle member: a millisecond. A call set-up takes seconds; a dial
/// of zero that fails at once would redial for ever at one instant.
pub const MIN_DIAL_TIME: SimDuration = SimDuration::from_millis(1);
/// The largest queue in packets (link queues, a bundle's MLPPP queue): a million. Router
/// buffers hold thousands to a few hundred thousand packets; each packet held costs memory.
pub const MAX_QUEUE_PKTS: u32 = 1_000_000;
/// The largest queue in bytes: 1 GiB, a million full-sized packets (see [`MAX_QUEUE_PKTS`]).
pub const MAX_QUEUE_BYTES: u64 = 1 << 30;
/// The largest transmit queue of a bundle member: a million packets (a modem's holds a few).
pub const MAX_TXQUEUE_PKTS: u32 = 1_000_000;
/// The largest initial window: 65,535 segments, far above any the RFCs allow (RFC 6928: 10)
/// yet each one is a packet in flight at the start.
pub const MAX_INITIAL_WINDOW_SEGMENTS: u32 = 65_535;

/// Checks the ranges and relations of `sc`; the first value outside them is the error.
pub(super) fn check(sc: &Scenario) -> Result<(), ScenarioError> {
    if sc.trace.goodput_interval < MIN_INTERVAL {
        return Err(below(
            "trace.goodput_interval",
            sc.trace.goodput_interval,
            MIN_INTERVAL,
        ));
    }
    for (i, link) in sc.links.iter().enumerate() {
        check_link(&format!("links[{i}]"), link)?;
    }
    for (i, flow) in sc.flows.iter().enumerate() {
        let p = format!("flows[{i}]");
        check_app(&p, flow)?;
        if flow.segments.is_empty() {
            check_tcp(&format!("{p}.tcp"), &flow.tcp, sc.round_trip(&flow.path))?;
        } else {
            for (k, seg) in flow.segments.iter().enumerate() {
                let sp = format!("{p}.segments[{k}].tcp");
                check_tcp(&sp, &seg.tcp, sc.round_trip(&seg.path))?;
            }
        }
    }
    Ok(())
}

fn check_link(p: &str, link: &LinkSpec) -> Result<(), ScenarioError> {
    // Both directions usually share the link's bound; name the direction only if they differ.
    let same = link.fwd.queue == link.rev.queue;
    for (dir, spec) in [("fwd", &link.fwd), ("rev", &link.rev)] {
        let base = if same {
            p.to_owned()
        } else {
            format!("{p}.{dir}")
        };
        match spec.queue {
            QueueLimit::Packets(n) if n > MAX_QUEUE_PKTS => {
                return Err(ScenarioError::new(
                    format!("{base}.queue_pkts"),
                    format!("expected at most {MAX_QUEUE_PKTS} packets, got {n}"),
                ));
            }
            QueueLimit::Bytes(b) if b > MAX_QUEUE_BYTES => {
                return Err(ScenarioError::new(
                    format!("{base}.queue"),
                    format!("expected at most {MAX_QUEUE_BYTES} bytes (1 GiB), got {b}"),
                ));
            }
            _ => {}
        }
    }
    if let Some(rlp) = &link.rlp {
        if let Some(t) = rlp.nak_timer {
            if t < MIN_PROTOCOL_TIMER {
                return Err(below(&format!("{p}.rlp.nak_timer"), t, MIN_PROTOCOL_TIMER));
            }
        }
    }
    if let Some(b) = &link.bundle {
        let bp = format!("{p}.bundle");
        let all_same = b
            .members
            .windows(2)
            .all(|w| w[0].txqueue_pkts == w[1].txqueue_pkts);
        for (k, m) in b.members.iter().enumerate() {
            if m.txqueue_pkts > MAX_TXQUEUE_PKTS {
                let path = if all_same {
                    format!("{bp}.txqueue_pkts")
                } else {
                    format!("{bp}.members[{k}].txqueue_pkts")
                };
                return Err(ScenarioError::new(
                    path,
                    format!(
                        "expected at most {MAX_TXQUEUE_PKTS} packets, got {}",
                        m.txqueue_pkts
                    ),
                ));
            }
        }
        let dials = b.members.iter().any(|m| m.call_drop_rate_per_s > 0.0) || !b.start_connected;
        if dials && b.dial_time < MIN_DIAL_TIME {
            return Err(below(
                &format!("{bp}.dial_time"),
                b.dial_time,
                MIN_DIAL_TIME,
            ));
        }
    }
    Ok(())
}

fn check_app(p: &str, flow: &FlowSpec) -> Result<(), ScenarioError> {
    if let AppSpec::Telnet { mean_interval, .. } = flow.app {
        if mean_interval < MIN_INTERVAL {
            return Err(below(
                &format!("{p}.app.mean_interval"),
                mean_interval,
                MIN_INTERVAL,
            ));
        }
    }
    Ok(())
}

fn check_tcp(p: &str, tcp: &TcpSpec, rtt: SimDuration) -> Result<(), ScenarioError> {
    let rto = &tcp.rtt;
    for (field, value) in [
        ("initial_rto", rto.initial_rto),
        ("min_rto", rto.min_rto),
        ("max_rto", rto.max_rto),
    ] {
        if value < MIN_RTO {
            return Err(below(&format!("{p}.{field}"), value, MIN_RTO));
        }
    }
    // A cap below the round trip times out every segment before its ACK can return: the
    // timer would fire once per max_rto for the whole run and nothing would be delivered
    // except by spurious retransmissions.
    if rto.max_rto < rtt {
        return Err(ScenarioError::new(
            format!("{p}.max_rto"),
            format!(
                "expected at least the path's round-trip propagation delay ({}), got {}",
                human(rtt),
                human(rto.max_rto)
            ),
        ));
    }
    if let DelayedAck::On { timeout, .. } = tcp.delayed_ack {
        if timeout < MIN_PROTOCOL_TIMER {
            return Err(below(
                &format!("{p}.delayed_ack_timeout"),
                timeout,
                MIN_PROTOCOL_TIMER,
            ));
        }
    }
    if tcp.initial_window_segments > MAX_INITIAL_WINDOW_SEGMENTS {
        return Err(ScenarioError::new(
            format!("{p}.initial_window_segments"),
            format!(
                "expected at most {MAX_INITIAL_WINDOW_SEGMENTS} segments, got {}",
                tcp.initial_window_segments
            ),
        ));
    }
    Ok(())
}

fn below(path: &str, got: SimDuration, min: SimDuration) -> ScenarioError {
    ScenarioError::new(
        path,
        format!("expected at least {}, got {}", human(min), human(got)),
    )
}

/// A duration in the largest unit that writes it whole (`1ms`, `250us`, `7ns`), as a scenario
/// would spell it.
fn human(d: SimDuration) -> String {
    let ns = d.as_nanos();
    match ns {
        0 => "0s".to_owned(),
        _ if ns % 1_000_000_000 == 0 => format!("{}s", ns / 1_000_000_000),
        _ if ns % 1_000_000 == 0 => format!("{}ms", ns / 1_000_000),
        _ if ns % 1_000 == 0 => format!("{}us", ns / 1_000),
        _ => format!("{ns}ns"),
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::parse_scenario_json;
    use serde_json::{json, Value};

    fn base() -> Value {
        json!({
            "duration": "10s",
            "nodes": ["S", "D"],
            "links": [{"a": "S", "b": "D", "rate": "1Mbps", "delay": "50ms"}],
            "flows": [{"from": "S", "to": "D", "app": {"kind": "bulk", "size": "100KB"}}]
        })
    }

    fn refused(edit: impl FnOnce(&mut Value)) -> String {
        let mut v = base();
        edit(&mut v);
        parse_scenario_json(&v.to_string())
            .map(|_| "accepted".to_owned())
            .unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn the_base_scenario_is_accepted() {
        assert_eq!(refused(|_| {}), "accepted");
    }

    #[test]
    fn intervals_finer_than_a_microsecond_are_refused() {
        let e = refused(|v| v["trace"] = json!({"goodput": true, "goodput_interval": "1ns"}));
        assert!(
            e.starts_with("trace.goodput_interval: expected at least 1us"),
            "{e}"
        );
        let e =
            refused(|v| v["flows"][0]["app"] = json!({"kind": "telnet", "mean_interval": "1ns"}));
        assert!(
            e.starts_with("flows[0].app.mean_interval: expected at least"),
            "{e}"
        );
    }

    #[test]
    fn retransmission_timers_are_held_to_the_path_time_scale() {
        let e = refused(|v| v["flows"][0]["tcp"] = json!({"min_rto": "1ns", "max_rto": "1ns"}));
        assert!(
            e.starts_with("flows[0].tcp.initial_rto") || e.contains("min_rto"),
            "{e}"
        );
        let e = refused(|v| v["flows"][0]["tcp"] = json!({"initial_rto": "1us"}));
        assert!(
            e.starts_with("flows[0].tcp.initial_rto: expected at least 1ms"),
            "{e}"
        );
        // The round trip is 100 ms.
        let e = refused(|v| v["flows"][0]["tcp"] = json!({"min_rto": "10ms", "max_rto": "50ms"}));
        assert!(
            e.starts_with("flows[0].tcp.max_rto: expected at least the path's"),
            "{e}"
        );
        assert_eq!(
            refused(|v| v["flows"][0]["tcp"] = json!({"min_rto": "10ms", "max_rto": "100ms"})),
            "accepted"
        );
        let e = refused(|v| v["flows"][0]["tcp"] = json!({"delayed_ack_timeout": "1ns"}));
        assert!(e.starts_with("flows[0].tcp.delayed_ack_timeout"), "{e}");
    }

    #[test]
    fn queues_beyond_a_million_packets_or_a_gibibyte_are_refused() {
        let e = refused(|v| v["links"][0]["queue_pkts"] = json!(4_294_967_295u64));
        assert!(
            e.starts_with("links[0].queue_pkts: expected at most 1000000"),
            "{e}"
        );
        let e = refused(|v| v["links"][0]["fwd"] = json!({"queue": "2GiB"}));
        assert!(e.starts_with("links[0].fwd.queue: expected at most"), "{e}");
    }

    #[test]
    fn a_bundle_member_transmit_queue_is_bounded() {
        let e = refused(|v| {
            v["links"][0] = json!({"a": "S", "b": "D", "bundle": {
                "members": 2, "rate": "2400bps", "delay": "500ms", "txqueue_pkts": 4_294_967_295u64}});
            v["flows"][0]["tcp"] = json!({"max_rto": "64s"});
        });
        assert!(
            e.starts_with("links[0].bundle.txqueue_pkts: expected at most"),
            "{e}"
        );
    }

    #[test]
    fn an_instant_dial_is_refused_when_members_dial() {
        let e = refused(|v| {
            v["links"][0] = json!({"a": "S", "b": "D", "bundle": {
                "members": 2, "rate": "2400bps", "delay": "500ms",
                "call_drop_rate": "1/50min", "dial_time": "1us"}});
        });
        assert!(
            e.starts_with("links[0].bundle.dial_time: expected at least 1ms"),
            "{e}"
        );
    }

    #[test]
    fn an_absurd_doppler_is_refused_quickly_with_its_path() {
        let e = refused(|v| {
            v["links"][0]["fwd"] =
                json!({"loss": {"model": "markov_fading", "pe": 0.1, "fd_t": 1e12}})
        });
        assert!(e.starts_with("links[0].fwd.loss.fd_t: expected"), "{e}");
    }
}
