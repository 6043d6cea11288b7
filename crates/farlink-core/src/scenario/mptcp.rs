//! A flow's transport: one TCP connection (`transport = "tcp"`, the default) or Multipath TCP
//! (`transport = "mptcp"`), one subflow per member of the bundle link on its route, each over
//! that member alone, with `[flows.mptcp]`'s `scheduler`, `coupling` and `retransmit_timer`
//! (`crate::mptcp`).

use super::errors::{at, err, ScenarioError};
use super::flows::{AppSpec, FlowSpec};
use super::links::LinkSpec;
use super::raw::RawFlow;
use crate::mptcp::{Coupling, SchedulerKind};

/// The transports, by name.
pub const TRANSPORTS: &[&str] = &["tcp", "mptcp"];

/// How a flow's bytes cross its route.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Transport {
    #[default]
    Tcp,
    Mptcp(MptcpSpec),
}

/// A Multipath TCP flow's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MptcpSpec {
    pub scheduler: SchedulerKind,
    pub coupling: Coupling,
    /// Linux's connection-level retransmission timer (`crate::mptcp::linux`): on unless
    /// `[flows.mptcp] retransmit_timer = false`.
    pub retransmit_timer: bool,
    /// Member 0's subflow (the connection's first) stays open through its member's drops, as
    /// the emulator leaves it to the kernel's retransmissions (`[flows.mptcp]
    /// keep_first_subflow`, default false: closed once the drop is noticed, like the others).
    pub keep_first_subflow: bool,
    /// Index into the flow's path of the bundle hop whose members carry one subflow each
    /// (found once the links are known: [`locate_bundles`]).
    pub bundle_hop: usize,
}

/// Flow `f`'s transport at `p`.
pub(super) fn transport(p: &str, f: &RawFlow, app: &AppSpec) -> Result<Transport, ScenarioError> {
    let name = f.transport.as_deref().unwrap_or("tcp");
    match name {
        "tcp" => {
            if f.mptcp.is_some() {
                return err(at(p, "mptcp"), "only for a flow with transport = \"mptcp\"");
            }
            Ok(Transport::Tcp)
        }
        "mptcp" => {
            if !matches!(app, AppSpec::Bulk { .. } | AppSpec::Unbounded) {
                return err(
                    at(p, "transport"),
                    format!(
                        "Multipath TCP carries bulk and unbounded applications, not {}",
                        app.kind()
                    ),
                );
            }
            if f.relays.is_some() || f.segments.is_some() {
                return err(
                    at(p, "transport"),
                    "a Multipath TCP flow cannot be split at relays",
                );
            }
            let m = f.mptcp.clone().unwrap_or_default();
            let mp = at(p, "mptcp");
            let scheduler = match &m.scheduler {
                Some(s) => s.parse().map_err(|e: crate::tcp::UnknownName| {
                    ScenarioError::new(at(&mp, "scheduler"), e.to_string())
                })?,
                None => SchedulerKind::default(),
            };
            let coupling = match &m.coupling {
                Some(s) => s.parse().map_err(|e: crate::tcp::UnknownName| {
                    ScenarioError::new(at(&mp, "coupling"), e.to_string())
                })?,
                None => Coupling::default(),
            };
            Ok(Transport::Mptcp(MptcpSpec {
                scheduler,
                coupling,
                retransmit_timer: m.retransmit_timer.unwrap_or(true),
                keep_first_subflow: m.keep_first_subflow.unwrap_or(false),
                bundle_hop: 0,
            }))
        }
        other => err(
            at(p, "transport"),
            format!(
                "unknown transport \"{other}\"; expected one of: {}",
                TRANSPORTS.join(", ")
            ),
        ),
    }
}

/// Finds, for each Multipath TCP flow, the bundle link on its route whose members carry its
/// subflows: exactly one hop of the route must be a bundle.
pub(super) fn locate_bundles(
    links: &[LinkSpec],
    flows: &mut [FlowSpec],
) -> Result<(), ScenarioError> {
    for (i, f) in flows.iter_mut().enumerate() {
        let Transport::Mptcp(spec) = &mut f.transport else {
            continue;
        };
        let bundles: Vec<usize> = (0..f.path.len())
            .filter(|&k| links[f.path[k].link].bundle.is_some())
            .collect();
        match bundles[..] {
            [k] => spec.bundle_hop = k,
            [] => {
                return err(
                    format!("flows[{i}].transport"),
                    "Multipath TCP runs one subflow per member of a bundle link; the flow's route crosses none",
                )
            }
            _ => {
                return err(
                    format!("flows[{i}].transport"),
                    "the flow's route crosses more than one bundle link; Multipath TCP here takes its subflows from one",
                )
            }
        }
    }
    // The members carry the subflows on links of their own: a TCP flow striped over the same
    // members by MLPPP would not compete with them for the modems.
    for (j, f) in flows.iter().enumerate() {
        if f.transport != Transport::Tcp {
            continue;
        }
        let shared = flows
            .iter()
            .enumerate()
            .find_map(|(i, g)| match g.transport {
                Transport::Mptcp(spec) => {
                    let link = g.path[spec.bundle_hop].link;
                    f.path.iter().any(|h| h.link == link).then_some((i, link))
                }
                Transport::Tcp => None,
            });
        if let Some((i, link)) = shared {
            return err(
                format!("flows[{j}].transport"),
                format!(
                    "the flow crosses bundle link \"{}\", whose members carry the Multipath TCP subflows of flows[{i}]; give it transport = \"mptcp\" too",
                    links[link].name
                ),
            );
        }
    }
    Ok(())
}
