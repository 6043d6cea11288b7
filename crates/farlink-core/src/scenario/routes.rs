//! Static routing, and the link direction `--loss` overrides.

use super::errors::{err, ScenarioError};
use super::flows::FlowSpec;
use super::links::{link_names, LinkIndex, LinkSpec, PendingLink};
use super::raw::RawLossyLink;

/// Per node, (link, forward, neighbour) in link order.
pub(super) type Adjacency = Vec<Vec<(usize, bool, usize)>>;

/// The adjacency of `nodes` nodes joined by `links`.
pub(super) fn adjacency(nodes: usize, links: &[PendingLink<'_>]) -> Adjacency {
    let mut adjacency: Adjacency = vec![Vec::new(); nodes];
    for (i, l) in links.iter().enumerate() {
        adjacency[l.a].push((i, true, l.b));
        adjacency[l.b].push((i, false, l.a));
    }
    adjacency
}

/// The link direction `--loss` overrides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LossyLink {
    /// Index into [`Scenario::links`].
    pub link: usize,
    pub forward: bool,
}

/// One hop of a path: a link and the direction it is crossed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hop {
    pub link: usize,
    pub forward: bool,
}

impl Hop {
    pub fn reversed(self) -> Hop {
        Hop {
            link: self.link,
            forward: !self.forward,
        }
    }
}

/// Fewest hops from `from` to `to`; neighbours are visited in link order, so the first path
/// found among equals is the one through the links listed first.
pub(super) fn shortest_path(
    adjacency: &[Vec<(usize, bool, usize)>],
    from: usize,
    to: usize,
) -> Option<Vec<Hop>> {
    let mut came_by: Vec<Option<(usize, Hop)>> = vec![None; adjacency.len()];
    let mut seen = vec![false; adjacency.len()];
    let mut frontier = std::collections::VecDeque::new();
    seen[from] = true;
    frontier.push_back(from);
    while let Some(n) = frontier.pop_front() {
        if n == to {
            break;
        }
        for &(link, forward, next) in &adjacency[n] {
            if !seen[next] {
                seen[next] = true;
                came_by[next] = Some((n, Hop { link, forward }));
                frontier.push_back(next);
            }
        }
    }
    if !seen[to] {
        return None;
    }
    let mut path = Vec::new();
    let mut n = to;
    while n != from {
        let (prev, hop) = came_by[n]?;
        path.push(hop);
        n = prev;
    }
    path.reverse();
    Some(path)
}

/// `lossy_link`: a link direction that carries some flow's data.
pub(super) fn lossy_link(
    raw: Option<&RawLossyLink>,
    link_index: &LinkIndex,
    links: &[LinkSpec],
    flows: &[FlowSpec],
) -> Result<Option<LossyLink>, ScenarioError> {
    Ok(match raw {
        None => None,
        Some(r) => {
            let (link_path, dir_path) = match r.direction {
                None => ("lossy_link".to_owned(), "lossy_link".to_owned()),
                Some(_) => (
                    "lossy_link.link".to_owned(),
                    "lossy_link.direction".to_owned(),
                ),
            };
            let Some(&link) = link_index.get(&r.link) else {
                return err(
                    link_path,
                    format!(
                        "unknown link \"{}\"; expected one of: {}",
                        r.link,
                        link_names(links)
                    ),
                );
            };
            let forward = match r.direction.as_deref() {
                None | Some("fwd") => true,
                Some("rev") => false,
                Some(other) => {
                    return err(
                        dir_path,
                        format!("unknown direction \"{other}\"; expected one of: fwd, rev"),
                    )
                }
            };
            let carries = |fw: bool| {
                flows
                    .iter()
                    .any(|f| f.path.contains(&Hop { link, forward: fw }))
            };
            if !carries(forward) {
                let (this, other) = if forward {
                    ("fwd", "rev")
                } else {
                    ("rev", "fwd")
                };
                let hint = if carries(!forward) {
                    format!("; the flows' data crosses it in direction {other}")
                } else {
                    String::new()
                };
                return err(
                    dir_path,
                    format!(
                        "direction {this} of link \"{}\" carries no flow's data{hint}",
                        r.link
                    ),
                );
            }
            Some(LossyLink { link, forward })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortest_path_prefers_fewer_hops_then_the_first_link() {
        // A - B - C and a direct A - C listed last: the direct link wins on hops.
        let adj = {
            let links = [(0usize, 1usize), (1, 2), (0, 2), (0, 2)];
            let mut adj = vec![Vec::new(); 3];
            for (i, &(a, b)) in links.iter().enumerate() {
                adj[a].push((i, true, b));
                adj[b].push((i, false, a));
            }
            adj
        };
        assert_eq!(
            shortest_path(&adj, 0, 2),
            Some(vec![Hop {
                link: 2,
                forward: true
            }])
        );
        assert_eq!(
            shortest_path(&adj, 2, 1),
            Some(vec![Hop {
                link: 1,
                forward: false
            }])
        );
    }
}
