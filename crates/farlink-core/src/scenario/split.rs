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
use super::tcp::{tcp_over, tcp_spec, TcpSpec};

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
