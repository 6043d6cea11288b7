//! A flow's transport: one TCP connection (`transport = "tcp"`, the default) or Multipath TCP
//! (`transport = "mptcp"`), one subflow per member of the bundle link on its route, each over
//! that member alone, with `[flows.mptcp]`'s `scheduler`, `coupling`, `retransmit_timer`,
//! `keep_first_subflow`, `close_resends` and `stale_loss_count` (`crate::mptcp`).

use super::errors::{at, err, ScenarioError};
use super::flows::{AppSpec, FlowSpec};
use super::links::LinkSpec;
use super::raw::RawFlow;
use crate::mptcp::linux::CloseResends;

/// `[flows.mptcp] stale_loss_count` when not given: 0, no subflow is ever marked stale, where
/// Linux's `net.mptcp.stale_loss_cnt` is 4 (`crate::mptcp::linux::STALE_LOSS_CNT`). A stale
/// mark rewinds the whole send queue, up to the connection-level window, onto the other
/// subflows' queues; Linux's subflows queue what their autotuned send buffers hold (16 KB at
/// first, `tcp_sndbuf_expand` growing it with the window), farlink's without `tcp.send_buffer`
/// without bound, so that a rewind here copies far more than Linux's would. With 4, 2 MB over
/// iridium-4 without call drops and a 1 MB window carry 0.56 of the members' summed rate
/// instead of 0.881: the four subflows hear their first ACKs some 7 s into the transfer, one
/// of them later than the others, and is marked stale at 7.4 s, the megabyte in flight copied.
/// The count itself runs whatever the setting, as in Linux (a subflow counting silent
/// expiries leaves the timer's interval to the others).
pub const DEFAULT_STALE_LOSS_COUNT: u8 = 0;
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
    /// What a subflow's close sends again (`[flows.mptcp] close_resends`; default
    /// [`CloseResends::default_for`] the scheduler: Linux's rewind of the whole send queue with
    /// `linux`).
    pub close_resends: CloseResends,
    /// Linux's `net.mptcp.stale_loss_cnt` (`[flows.mptcp] stale_loss_count`, default
    /// [`DEFAULT_STALE_LOSS_COUNT`]; 0: no subflow is ever marked stale): a subflow silent over
    /// more expiries of the connection-level timer than this is left out of the scheduling
    /// and the send queue rewound (`crate::mptcp::linux::StaleState`).
    pub stale_loss_count: u8,
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
            let close_resends = match &m.close_resends {
                Some(s) => s.parse().map_err(|e: crate::tcp::UnknownName| {
                    ScenarioError::new(at(&mp, "close_resends"), e.to_string())
                })?,
                None => CloseResends::default_for(scheduler),
            };
            Ok(Transport::Mptcp(MptcpSpec {
                scheduler,
                coupling,
                retransmit_timer: m.retransmit_timer.unwrap_or(true),
                keep_first_subflow: m.keep_first_subflow.unwrap_or(false),
                close_resends,
                stale_loss_count: m.stale_loss_count.unwrap_or(DEFAULT_STALE_LOSS_COUNT),
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
