//! Each link's packets, both directions, with a bundle's calls and a radio hop's RLP give-ups
//! (`simulate`'s keys), from the link models the driver ran.

use std::collections::BTreeMap;

use farlink_core::path::{self, LinkDir, PathLinks};
use farlink_core::scenario::{Hop, Scenario};
use farlink_core::world::{cause_map, BundleCalls};
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct Direction {
    pub offered_pkts: u64,
    pub delivered_pkts: u64,
    pub delivered_bytes: u64,
    pub drops: BTreeMap<String, u64>,
    /// Packets the queue's AQM marked CE (in their real IPv4 header) instead of dropping.
    pub ce_marked: u64,
    pub max_queue_pkts: u64,
    /// Packets inside the link when the run ended.
    pub in_flight_pkts: u64,
    /// Loss-model outcome ordinals of the packets lost on this direction (recorded on request).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_ordinals: Option<Vec<u64>>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Link {
    pub name: String,
    pub a: String,
    pub b: String,
    pub fwd: Direction,
    pub rev: Direction,
    /// A bundle's control plane: call drops and redials (simulate's keys).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bundle: Option<BundleCalls>,
    /// A radio hop's RLP give-ups, per direction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rlp: Option<RlpGiveUps>,
}

/// Frames and packets a radio hop's RLP gave up on, per direction (simulate's keys).
#[derive(Clone, Debug, Serialize)]
pub struct RlpGiveUps {
    pub fwd: RlpDirGiveUps,
    pub rev: RlpDirGiveUps,
}

#[derive(Clone, Debug, Serialize)]
pub struct RlpDirGiveUps {
    pub frames_given_up: u64,
    pub packets_given_up: u64,
}

fn direction(dir: &LinkDir, lost: Option<&Vec<u64>>) -> Direction {
    let st = dir.stats();
    Direction {
        offered_pkts: st.offered_pkts,
        delivered_pkts: st.delivered_pkts,
        delivered_bytes: st.delivered_bytes,
        drops: cause_map(dir.drops_by_cause()),
        ce_marked: dir.ce_marked_pkts(),
        max_queue_pkts: st.max_queue_pkts,
        in_flight_pkts: dir.in_flight_pkts(),
        lost_ordinals: lost.cloned(),
    }
}

/// Both directions of radio hop `link`'s RLP give-ups; `None` for a link without RLP.
fn rlp_give_ups(dirs: &[LinkDir], link: usize) -> Option<RlpGiveUps> {
    let given_up = |forward: bool| {
        dirs[path::dir_index(Hop { link, forward })]
            .rlp()
            .map(|r| RlpDirGiveUps {
                frames_given_up: r.stats().frames_given_up,
                packets_given_up: r.stats().units_given_up,
            })
    };
    given_up(true)
        .zip(given_up(false))
        .map(|(fwd, rev)| RlpGiveUps { fwd, rev })
}

/// Every link of the scenario as the driver's models left it; `lost`, per direction, the
/// ordinals of its losses where they were recorded.
pub(super) fn links(sc: &Scenario, run: &PathLinks, lost: Option<&Vec<Vec<u64>>>) -> Vec<Link> {
    let nodes = sc.nodes();
    let dirs = &run.dirs;
    sc.links()
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let d = |forward: bool| {
                let x = path::dir_index(Hop { link: i, forward });
                direction(&dirs[x], lost.map(|v| &v[x]))
            };
            let bundle = run
                .bundles
                .iter()
                .find(|b| b.link() == i)
                .map(|b| BundleCalls::from(b.control().stats()));
            Link {
                name: l.name.clone(),
                a: nodes[l.a].clone(),
                b: nodes[l.b].clone(),
                fwd: d(true),
                rev: d(false),
                bundle,
                rlp: rlp_give_ups(dirs, i),
            }
        })
        .collect()
}
