//! Split connections: a flow whose TCP is terminated at relay nodes on its way (seed 002's
//! relay entity and satellite transport; a performance-enhancing proxy in today's words).
//!
//! ```text
//! FLOW += {
//!   "relays": ["GW1", "GW2"],        nodes where the connection is split, in path order
//!   "relay_buffer": "1MiB" | "relay_buffer_bytes",   bytes each relay holds between its two
//!                                    connections (default DEFAULT_RELAY_BUFFER_BYTES)
//!   "segments": [{"tcp": TCP}, ...]  optional, one per connection (relays + 1): each field
//!                                    given replaces the flow's "tcp" field for that connection
//! }
//! ```
//!
//! Each connection is routed on its own (fewest hops from its sender to its receiver); the
//! flow's path is their concatenation. A quantity given in either spelling in a segment
//! (`receive_buffer` or `receive_buffer_bytes`) replaces both spellings of the flow's.

use super::errors::{at, err, ScenarioError};
use super::flows::FlowSpec;
use super::links::node_err;
use super::quantity::opt_bytes;
use super::raw::{RawFlow, RawTcp};
use super::routes::{shortest_path, Hop};
use super::tcp::{tcp_spec, TcpSpec};

/// Default bytes a relay holds between its connections: Linux's default send buffer
/// (`tcp_wmem` default, 16 KiB) is far below a satellite hop's bandwidth-delay product, so the
/// default is the default receive buffer of farlink's TCP, 128 KiB, which the relay's outgoing
/// connection can fill.
pub const DEFAULT_RELAY_BUFFER_BYTES: u64 = crate::tcp::receiver::DEFAULT_RECEIVE_BUFFER_BYTES;

/// A relay: where a flow's connection is split.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelaySpec {
    /// Index into [`super::Scenario::nodes`].
    pub node: usize,
    /// Bytes read from the incoming connection and not yet acknowledged on the outgoing one.
    pub buffer_bytes: u64,
}

/// One TCP connection of a split flow.
#[derive(Clone, Debug)]
pub struct SegmentSpec {
    /// Nodes of its sender and receiver.
    pub from: usize,
    pub to: usize,
    pub tcp: TcpSpec,
    /// Its data path; ACKs take it reversed.
    pub path: Vec<Hop>,
}

/// A flow's relays, its connections, and its whole data path.
type Split = (Vec<RelaySpec>, Vec<SegmentSpec>, Vec<Hop>);

/// The split of flow `f` (at `p`, `flows[i]`): its relays, its connections and the flow's whole
/// data path. Without relays: nothing, and `path` unchanged.
#[allow(clippy::too_many_arguments)]
pub(super) fn plan(
    p: &str,
    f: &RawFlow,
    tcp: &TcpSpec,
    from: usize,
    to: usize,
    nodes: &[String],
    adjacency: &[Vec<(usize, bool, usize)>],
    path: Vec<Hop>,
) -> Result<Split, ScenarioError> {
    let relay_names = f.relays.as_deref().unwrap_or(&[]);
    let buffer = opt_bytes(
        p,
        ("relay_buffer", &f.relay_buffer),
        ("relay_buffer_bytes", f.relay_buffer_bytes),
    )?;
    if relay_names.is_empty() {
        if let Some((_, path)) = buffer {
            return err(path, "given without relays");
        }
        if f.segments.is_some() {
            return err(at(p, "segments"), "given without relays");
        }
        return Ok((Vec::new(), Vec::new(), path));
    }
    let mss = u64::from(tcp.options.mss_bytes);
    let buffer_bytes = match buffer {
        Some((v, path)) if v < mss => {
            return err(
                path,
                format!("expected a relay buffer of at least the MSS ({mss} bytes), got {v}"),
            )
        }
        Some((v, _)) => v,
        None => DEFAULT_RELAY_BUFFER_BYTES,
    };

    let mut relays = Vec::with_capacity(relay_names.len());
    for (j, name) in relay_names.iter().enumerate() {
        let rp = format!("{p}.relays[{j}]");
        let Some(node) = nodes.iter().position(|n| n == name) else {
            return Err(node_err(rp, name, nodes));
        };
        if node == from || node == to {
            return err(
                rp,
                format!("relay \"{name}\" is an end of the flow; a relay sits between them"),
            );
        }
        if relays.iter().any(|r: &RelaySpec| r.node == node) {
            return err(rp, format!("relay \"{name}\" given twice"));
        }
        relays.push(RelaySpec { node, buffer_bytes });
    }

    let n = relays.len() + 1;
    let raw_segments = f.segments.as_deref().unwrap_or(&[]);
    if f.segments.is_some() && raw_segments.len() != n {
        return err(
            at(p, "segments"),
            format!(
                "expected one entry per connection ({n}: {} relays + 1), got {}",
                relays.len(),
                raw_segments.len()
            ),
        );
    }
    let ends: Vec<usize> = std::iter::once(from)
        .chain(relays.iter().map(|r| r.node))
        .chain(std::iter::once(to))
        .collect();
    let empty = RawTcp::default();
    let flow_tcp = f.tcp.as_ref().unwrap_or(&empty);
    let mut segments = Vec::with_capacity(n);
    let mut whole = Vec::new();
    for k in 0..n {
        let (a, b) = (ends[k], ends[k + 1]);
        let seg_path = shortest_path(adjacency, a, b).ok_or_else(|| {
            let field = if k < relays.len() {
                format!("{p}.relays[{k}]")
            } else {
                at(p, "to")
            };
            ScenarioError::new(
                field,
                format!(
                    "no route from \"{}\" to \"{}\" over the links given",
                    nodes[a], nodes[b]
                ),
            )
        })?;
        let seg_tcp = match raw_segments.get(k).and_then(|s| s.tcp.as_ref()) {
            Some(over) => tcp_spec(&format!("{p}.segments[{k}].tcp"), &tcp_over(flow_tcp, over))?,
            None => *tcp,
        };
        whole.extend_from_slice(&seg_path);
        segments.push(SegmentSpec {
            from: a,
            to: b,
            tcp: seg_tcp,
            path: seg_path,
        });
    }
    Ok((relays, segments, whole))
}

/// `over`'s fields where given, else `base`'s; a quantity's two spellings go together.
fn tcp_over(base: &RawTcp, over: &RawTcp) -> RawTcp {
    fn one<T: Clone>(over: &Option<T>, base: &Option<T>) -> Option<T> {
        over.clone().or_else(|| base.clone())
    }
    fn pair<A: Clone, B: Clone>(
        over: (&Option<A>, &Option<B>),
        base: (&Option<A>, &Option<B>),
    ) -> (Option<A>, Option<B>) {
        if over.0.is_some() || over.1.is_some() {
            (over.0.clone(), over.1.clone())
        } else {
            (base.0.clone(), base.1.clone())
        }
    }
    let (mss, mss_bytes) = pair((&over.mss, &over.mss_bytes), (&base.mss, &base.mss_bytes));
    let (receive_buffer, receive_buffer_bytes) = pair(
        (&over.receive_buffer, &over.receive_buffer_bytes),
        (&base.receive_buffer, &base.receive_buffer_bytes),
    );
    let (send_buffer, send_buffer_bytes) = pair(
        (&over.send_buffer, &over.send_buffer_bytes),
        (&base.send_buffer, &base.send_buffer_bytes),
    );
    let delayed_ack = one(&over.delayed_ack, &base.delayed_ack);
    // A segment that turns delayed ACKs off does not inherit the flow's timeout for them, nor
    // its quick-ACK mode.
    let quick_ack = if over.delayed_ack == Some(false) {
        over.quick_ack
    } else {
        one(&over.quick_ack, &base.quick_ack)
    };
    let (delayed_ack_timeout, delayed_ack_timeout_s) = if over.delayed_ack == Some(false) {
        (
            over.delayed_ack_timeout.clone(),
            over.delayed_ack_timeout_s.clone(),
        )
    } else {
        pair(
            (&over.delayed_ack_timeout, &over.delayed_ack_timeout_s),
            (&base.delayed_ack_timeout, &base.delayed_ack_timeout_s),
        )
    };
    let (initial_rto, initial_rto_s) = pair(
        (&over.initial_rto, &over.initial_rto_s),
        (&base.initial_rto, &base.initial_rto_s),
    );
    let (min_rto, min_rto_s) = pair(
        (&over.min_rto, &over.min_rto_s),
        (&base.min_rto, &base.min_rto_s),
    );
    let (max_rto, max_rto_s) = pair(
        (&over.max_rto, &over.max_rto_s),
        (&base.max_rto, &base.max_rto_s),
    );
    // Window growth is a parameter of the controller: a segment naming its own controller
    // does not inherit the flow's growth rule.
    let growth = if over.cc.is_some() {
        over.growth.clone()
    } else {
        one(&over.growth, &base.growth)
    };
    RawTcp {
        mss,
        mss_bytes,
        initial_window_segments: one(&over.initial_window_segments, &base.initial_window_segments),
        receive_buffer,
        receive_buffer_bytes,
        send_buffer,
        send_buffer_bytes,
        window_scaling: one(&over.window_scaling, &base.window_scaling),
        sack: one(&over.sack, &base.sack),
        timestamps: one(&over.timestamps, &base.timestamps),
        delayed_ack,
        delayed_ack_timeout,
        delayed_ack_timeout_s,
        quick_ack,
        initial_rto,
        initial_rto_s,
        min_rto,
        min_rto_s,
        max_rto,
        max_rto_s,
        rto: one(&over.rto, &base.rto),
        recovery: one(&over.recovery, &base.recovery),
        cwnd_reduction: one(&over.cwnd_reduction, &base.cwnd_reduction),
        cc: one(&over.cc, &base.cc),
        growth,
        dup_thresh: one(&over.dup_thresh, &base.dup_thresh),
        limited_transmit: one(&over.limited_transmit, &base.limited_transmit),
        handshake: one(&over.handshake, &base.handshake),
        max_ooo_ranges: one(&over.max_ooo_ranges, &base.max_ooo_ranges),
    }
}

impl FlowSpec {
    /// Wire bytes of the largest full-sized data packet the flow sends across `hop` (its own
    /// MSS, or the MSS of each of its connections that crosses it); `None` if its data does
    /// not cross `hop`.
    pub fn full_packet_bytes_on(&self, hop: Hop) -> Option<u32> {
        if self.segments.is_empty() {
            return self
                .path
                .contains(&hop)
                .then(|| self.tcp.full_packet_bytes());
        }
        self.segments
            .iter()
            .filter(|s| s.path.contains(&hop))
            .map(|s| s.tcp.full_packet_bytes())
            .max()
    }
}
