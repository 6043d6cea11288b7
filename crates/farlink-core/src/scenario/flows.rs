//! Flows: their ends, times, application and route.

use std::collections::BTreeMap;

use super::errors::{at, err, only_its_params, variant, ScenarioError, Variant};
use super::links::Nodes;
use super::mptcp::{transport, Transport};
use super::quantity::{check_name, opt_bytes, opt_duration};
use super::raw::{RawApp, RawFlow, RawTcp};
use super::routes::{shortest_path, Adjacency, Hop};
use super::shutdown::Shutdown;
use super::split::{self, RelaySpec, SegmentSpec};
use super::tcp::{tcp_spec, TcpSpec};
use super::traffic::{self, Carrier, PoissonSpec, RequestResponseSpec, UdpSpec};
use crate::time::{SimDuration, SimTime};

/// Default telnet message size: one keystroke.
pub const DEFAULT_TELNET_MESSAGE_BYTES: u32 = 1;

/// A TCP connection and the application feeding it.
#[derive(Clone, Debug)]
pub struct FlowSpec {
    pub name: String,
    /// Index into [`Scenario::nodes`] of the data sender.
    pub from: usize,
    /// Index of the data receiver.
    pub to: usize,
    pub start: SimTime,
    pub stop: Option<SimTime>,
    pub tcp: TcpSpec,
    pub app: AppSpec,
    /// The data path, sender to receiver; ACKs take it reversed. Through relays: the
    /// connections' paths one after the other.
    pub path: Vec<Hop>,
    /// Relays splitting the connection, in path order (`scenario/split.rs`); empty for one
    /// end-to-end connection.
    pub relays: Vec<RelaySpec>,
    /// With relays, the connections source to first relay, ..., last relay to destination,
    /// each with its own TCP settings; empty without relays.
    pub segments: Vec<SegmentSpec>,
    /// One TCP connection, or Multipath TCP over a bundle's members (`scenario/mptcp.rs`).
    pub transport: Transport,
    /// When a bulk application shuts down its writing half (`app.shutdown`,
    /// `scenario/shutdown.rs`); [`Shutdown::Written`] for every other kind.
    pub shutdown: Shutdown,
}

/// What the application at the sender does.
#[derive(Clone, Debug, PartialEq)]
pub enum AppSpec {
    /// `size_bytes` written at the start; the transfer time runs to the last byte delivered.
    Bulk { size_bytes: u64 },
    /// Always more to send (until `stop`).
    Unbounded,
    /// Messages of `message_bytes` with exponentially distributed gaps of mean `mean_interval`.
    Telnet {
        mean_interval: SimDuration,
        message_bytes: u32,
    },
    /// UDP datagrams at a constant rate, or at a rate while on (`scenario/traffic.rs`).
    Udp(UdpSpec),
    /// Short TCP connections arriving as a Poisson process, each of a drawn size.
    FlowsPoisson(PoissonSpec),
    /// A client's requests and a server's responses, with think times between them.
    RequestResponse(RequestResponseSpec),
}

impl AppSpec {
    pub fn kind(&self) -> &'static str {
        match self {
            AppSpec::Bulk { .. } => "bulk",
            AppSpec::Unbounded => "unbounded",
            AppSpec::Telnet { .. } => "telnet",
            AppSpec::Udp(UdpSpec { on_off: None, .. }) => "udp_cbr",
            AppSpec::Udp(_) => "udp_onoff",
            AppSpec::FlowsPoisson(_) => "flows_poisson",
            AppSpec::RequestResponse(_) => "request_response",
        }
    }

    /// The flow carries UDP datagrams (no TCP connection, no `[flows.tcp]`).
    pub fn is_udp(&self) -> bool {
        matches!(self, AppSpec::Udp(_))
    }

    fn carrier(&self) -> Carrier {
        match self {
            AppSpec::Udp(_) => Carrier::Udp,
            AppSpec::FlowsPoisson(_) | AppSpec::RequestResponse(_) => Carrier::Connections,
            _ => Carrier::Stream,
        }
    }
}

const APP_KINDS: &[Variant] = &[
    ("bulk", &["size", "size_bytes", "shutdown"]),
    ("unbounded", &[]),
    (
        "telnet",
        &[
            "mean_interval",
            "mean_interval_s",
            "message",
            "message_bytes",
        ],
    ),
    ("udp_cbr", &["rate", "rate_bps", "packet_bytes"]),
    (
        "udp_onoff",
        &[
            "rate",
            "rate_bps",
            "packet_bytes",
            "on",
            "on_s",
            "off",
            "off_s",
            "distribution",
            "shape",
        ],
    ),
    ("flows_poisson", &["rate", "rate_per_s", "load", "size"]),
    (
        "request_response",
        &["request", "response", "think", "think_s"],
    ),
];

pub(super) fn app_spec(p: &str, a: &RawApp) -> Result<AppSpec, ScenarioError> {
    let (kind, allowed) = variant(p, "kind", "application kind", &a.kind, APP_KINDS)?;
    let given = [
        ("size", a.size.is_some()),
        ("size_bytes", a.size_bytes.is_some()),
        ("mean_interval", a.mean_interval.is_some()),
        ("mean_interval_s", a.mean_interval_s.is_some()),
        ("message", a.message.is_some()),
        ("message_bytes", a.message_bytes.is_some()),
        ("rate", a.rate.is_some()),
        ("rate_bps", a.rate_bps.is_some()),
        ("rate_per_s", a.rate_per_s.is_some()),
        ("packet_bytes", a.packet_bytes.is_some()),
        ("on", a.on.is_some()),
        ("on_s", a.on_s.is_some()),
        ("off", a.off.is_some()),
        ("off_s", a.off_s.is_some()),
        ("distribution", a.distribution.is_some()),
        ("shape", a.shape.is_some()),
        ("load", a.load.is_some()),
        ("request", a.request.is_some()),
        ("response", a.response.is_some()),
        ("think", a.think.is_some()),
        ("think_s", a.think_s.is_some()),
        ("shutdown", a.shutdown.is_some()),
    ];
    only_its_params(p, "application", kind, allowed, &given)?;
    Ok(match kind {
        "udp_cbr" => AppSpec::Udp(traffic::udp_spec(p, a, false)?),
        "udp_onoff" => AppSpec::Udp(traffic::udp_spec(p, a, true)?),
        "flows_poisson" => AppSpec::FlowsPoisson(traffic::poisson_spec(p, a)?),
        "request_response" => AppSpec::RequestResponse(traffic::request_response_spec(p, a)?),
        "bulk" => {
            let size = traffic::fixed_size(p, &a.size)?.cloned();
            let Some((size_bytes, path)) =
                opt_bytes(p, ("size", &size), ("size_bytes", a.size_bytes))?
            else {
                return err(
                    at(p, "size"),
                    "missing: a bulk application needs size (\"1MB\") or size_bytes",
                );
            };
            if size_bytes == 0 {
                return err(path, "expected a positive size, got 0 bytes");
            }
            AppSpec::Bulk { size_bytes }
        }
        "unbounded" => AppSpec::Unbounded,
        _ => {
            let Some(mean_interval) = opt_duration(
                p,
                ("mean_interval", &a.mean_interval),
                ("mean_interval_s", &a.mean_interval_s),
                false,
            )?
            else {
                return err(
                    at(p, "mean_interval"),
                    "missing: a telnet application needs mean_interval (\"1s\") or mean_interval_s",
                );
            };
            let message_bytes = match opt_bytes(
                p,
                ("message", &a.message),
                ("message_bytes", a.message_bytes.map(u64::from)),
            )? {
                Some((v, path)) => {
                    if v == 0 || v > u64::from(u32::MAX) {
                        return err(path, format!("expected 1 to {} bytes, got {v}", u32::MAX));
                    }
                    v as u32
                }
                None => DEFAULT_TELNET_MESSAGE_BYTES,
            };
            AppSpec::Telnet {
                mean_interval,
                message_bytes,
            }
        }
    })
}

/// Every flow, in order, routed over `adjacency`.
pub(super) fn flows(
    raw: &[RawFlow],
    nodes: &Nodes,
    adjacency: &Adjacency,
    duration: SimDuration,
) -> Result<Vec<FlowSpec>, ScenarioError> {
    let mut flows = Vec::with_capacity(raw.len());
    let mut flow_names = BTreeMap::new();
    for (i, f) in raw.iter().enumerate() {
        let p = format!("flows[{i}]");
        let name = match &f.name {
            Some(n) => {
                check_name(&at(&p, "name"), n)?;
                n.clone()
            }
            None => format!("flow{i}"),
        };
        if flow_names.insert(name.clone(), i).is_some() {
            return err(at(&p, "name"), format!("duplicate flow name \"{name}\""));
        }
        flows.push(flow(&p, f, name, nodes, adjacency, duration)?);
    }
    Ok(flows)
}

/// Flow `f` at `p`, its name already checked.
fn flow(
    p: &str,
    f: &RawFlow,
    name: String,
    nodes: &Nodes,
    adjacency: &Adjacency,
    duration: SimDuration,
) -> Result<FlowSpec, ScenarioError> {
    let from = nodes.get(at(p, "from"), &f.from)?;
    let to = nodes.get(at(p, "to"), &f.to)?;
    if from == to {
        return err(
            at(p, "to"),
            format!(
                "a flow runs between two different nodes, got \"{}\" twice",
                f.to
            ),
        );
    }
    let path = shortest_path(adjacency, from, to).ok_or_else(|| {
        ScenarioError::new(
            at(p, "to"),
            format!(
                "no route from \"{}\" to \"{}\" over the links given",
                f.from, f.to
            ),
        )
    })?;
    let start = opt_duration(p, ("start", &f.start), ("start_s", &f.start_s), true)?
        .unwrap_or(SimDuration::ZERO);
    if start >= duration {
        return err(
            at(p, "start"),
            format!("the flow starts at {start}, not before the run ends at {duration}"),
        );
    }
    let stop = opt_duration(p, ("stop", &f.stop), ("stop_s", &f.stop_s), false)?;
    if let Some(stop) = stop {
        if stop <= start {
            return err(
                at(p, "stop"),
                format!("the flow stops at {stop}, not after it starts at {start}"),
            );
        }
    }
    let empty = RawTcp::default();
    let mut tcp = tcp_spec(&at(p, "tcp"), f.tcp.as_ref().unwrap_or(&empty))?;
    let app = app_spec(&at(p, "app"), &f.app)?;
    let shutdown = Shutdown::parse(&at(p, "app"), f.app.shutdown.as_deref())?;
    traffic::check_flow(p, f, app.kind(), app.carrier(), &mut tcp)?;
    let transport = transport(p, f, &app)?;
    let (relays, segments, path) = split::plan(p, f, &tcp, from, to, nodes.names, adjacency, path)?;
    Ok(FlowSpec {
        name,
        from,
        to,
        start: SimTime::ZERO + start,
        stop: stop.map(|s| SimTime::ZERO + s),
        tcp,
        app,
        path,
        relays,
        segments,
        transport,
        shutdown,
    })
}
