//! What to record: traces and pcap taps.

use super::errors::{at, err, ScenarioError};
use super::links::{link_names, LinkIndex, LinkSpec};
use super::quantity::opt_duration;
use super::raw::RawTrace;
use crate::time::SimDuration;

/// Default goodput sampling interval of the trace.
pub const DEFAULT_GOODPUT_INTERVAL: SimDuration = SimDuration::from_millis(100);

/// Which traces to record. Each costs nothing when off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceConfig {
    pub cwnd: bool,
    pub seq: bool,
    pub ack: bool,
    pub rtt: bool,
    pub rto: bool,
    pub queue: bool,
    pub drops: bool,
    pub goodput: bool,
    /// State changes of bundle members.
    pub member_state: bool,
    /// Bundle capacity (members MLPPP may use) over time.
    pub capacity: bool,
    /// Every packet's wait in a link direction's queue; not switched on by `all` (see
    /// [`trace_config`]).
    pub queue_delay: bool,
    /// The queue disciplines' control-state changes; not switched on by `all`.
    pub aqm: bool,
    pub goodput_interval: SimDuration,
}

impl Default for TraceConfig {
    fn default() -> Self {
        TraceConfig {
            cwnd: false,
            seq: false,
            ack: false,
            rtt: false,
            rto: false,
            queue: false,
            drops: false,
            goodput: false,
            member_state: false,
            capacity: false,
            queue_delay: false,
            aqm: false,
            goodput_interval: DEFAULT_GOODPUT_INTERVAL,
        }
    }
}

impl TraceConfig {
    /// Every trace on.
    pub fn all() -> Self {
        TraceConfig {
            cwnd: true,
            seq: true,
            ack: true,
            rtt: true,
            rto: true,
            queue: true,
            drops: true,
            goodput: true,
            member_state: true,
            capacity: true,
            queue_delay: true,
            aqm: true,
            goodput_interval: DEFAULT_GOODPUT_INTERVAL,
        }
    }
}

/// The `trace` table. `all` is the default of every switch but `queue_delay` and `aqm`, which
/// are asked for by name: a row per packet and hop (or per AQM state change), and the presets'
/// `all = true` runs stay as they were before these traces existed.
pub(super) fn trace_config(t: &RawTrace) -> Result<TraceConfig, ScenarioError> {
    let all = t.all.unwrap_or(false);
    let goodput_interval = opt_duration(
        "trace",
        ("goodput_interval", &t.goodput_interval),
        ("goodput_interval_s", &t.goodput_interval_s),
        false,
    )?
    .unwrap_or(DEFAULT_GOODPUT_INTERVAL);
    Ok(TraceConfig {
        cwnd: t.cwnd.unwrap_or(all),
        seq: t.seq.unwrap_or(all),
        ack: t.ack.unwrap_or(all),
        rtt: t.rtt.unwrap_or(all),
        rto: t.rto.unwrap_or(all),
        queue: t.queue.unwrap_or(all),
        drops: t.drops.unwrap_or(all),
        goodput: t.goodput.unwrap_or(all),
        member_state: t.member_state.unwrap_or(all),
        capacity: t.capacity.unwrap_or(all),
        queue_delay: t.queue_delay.unwrap_or(false),
        aqm: t.aqm.unwrap_or(false),
        goodput_interval,
    })
}

/// Where a pcap tap sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TapSite {
    /// `pcap = ["R-D"]`: packets as they leave either end of the link (both directions, at
    /// the instant their first bit is sent).
    Link { link: usize },
    /// `{link = "R-D", at = "a"}`: packets as they leave end `a` (forward) and as they arrive
    /// at it (reverse), so what a probe on that end's interface would see; `at = "b"` the same
    /// at end `b`. An arrival is after the link's loss, a departure before it.
    LinkEnd { link: usize, at_b: bool },
    /// `{node = "R"}`: everything the node sends and receives on all its links.
    Node { node: usize },
}

/// One pcap tap: where it sits and the name of its capture (`<name>.pcap`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tap {
    pub name: String,
    pub site: TapSite,
}

impl Tap {
    /// Whether the tap records a packet as it leaves on direction `forward` of `link`.
    pub fn sees_departure(&self, links: &[LinkSpec], link: usize, forward: bool) -> bool {
        match self.site {
            TapSite::Link { link: l } => l == link,
            TapSite::LinkEnd { link: l, at_b } => l == link && forward != at_b,
            TapSite::Node { node } => {
                let l = &links[link];
                node == if forward { l.a } else { l.b }
            }
        }
    }

    /// Whether the tap records a packet as it arrives on direction `forward` of `link`.
    pub fn sees_arrival(&self, links: &[LinkSpec], link: usize, forward: bool) -> bool {
        match self.site {
            TapSite::Link { .. } => false,
            TapSite::LinkEnd { link: l, at_b } => l == link && forward == at_b,
            TapSite::Node { node } => {
                let l = &links[link];
                node == if forward { l.b } else { l.a }
            }
        }
    }

    /// Whether the tap records anything on `link`.
    pub fn touches(&self, links: &[LinkSpec], link: usize) -> bool {
        [true, false]
            .iter()
            .any(|&f| self.sees_departure(links, link, f) || self.sees_arrival(links, link, f))
    }
}

/// `pcap`: the taps, each once. A string names a link (departures, both directions); a table
/// names a link end (`{link, at}`) or a node (`{node}`).
pub(super) fn pcap_taps(
    raw: &[serde_json::Value],
    nodes: &[String],
    link_index: &LinkIndex,
    links: &[LinkSpec],
) -> Result<Vec<Tap>, ScenarioError> {
    let mut taps: Vec<Tap> = Vec::with_capacity(raw.len());
    for (i, value) in raw.iter().enumerate() {
        let p = format!("pcap[{i}]");
        let tap = tap(&p, value, nodes, link_index, links)?;
        if let Some(other) = taps.iter().find(|t| t.name == tap.name) {
            if other.site == tap.site {
                continue;
            }
            return err(
                p,
                format!(
                    "a second capture named \"{}\"; tap names must differ",
                    tap.name
                ),
            );
        }
        taps.push(tap);
    }
    Ok(taps)
}

fn link_of(
    p: &str,
    name: &str,
    link_index: &LinkIndex,
    links: &[LinkSpec],
) -> Result<usize, ScenarioError> {
    link_index.get(name).copied().ok_or_else(|| {
        ScenarioError::new(
            p,
            format!(
                "unknown link \"{name}\"; expected one of: {}",
                link_names(links)
            ),
        )
    })
}

fn tap(
    p: &str,
    value: &serde_json::Value,
    nodes: &[String],
    link_index: &LinkIndex,
    links: &[LinkSpec],
) -> Result<Tap, ScenarioError> {
    use serde_json::Value;
    const EXPECTED: &str = "expected a link's name (\"R-D\"), {link = \"R-D\", at = \"a\"} \
                            or {node = \"R\"}";
    let table = match value {
        Value::String(name) => {
            let link = link_of(p, name, link_index, links)?;
            return Ok(Tap {
                name: name.clone(),
                site: TapSite::Link { link },
            });
        }
        Value::Object(table) => table,
        _ => return err(p, EXPECTED),
    };
    if let Some(key) = table
        .keys()
        .find(|k| !matches!(k.as_str(), "link" | "at" | "node"))
    {
        return err(
            at(p, key),
            format!("unknown field `{key}`; a tap takes link and at, or node"),
        );
    }
    let text = |field: &str| -> Result<Option<&str>, ScenarioError> {
        match table.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(_) => err(at(p, field), "expected a string"),
        }
    };
    match (text("link")?, text("at")?, text("node")?) {
        (Some(_), _, Some(_)) => err(
            p,
            "a tap names a link end or a node, not both: give link and at, or node",
        ),
        (Some(name), Some(end), None) => {
            let link = link_of(&at(p, "link"), name, link_index, links)?;
            let at_b = match end {
                "a" => false,
                "b" => true,
                _ => {
                    let l = &links[link];
                    return err(
                        at(p, "at"),
                        format!(
                            "unknown end \"{end}\"; expected \"a\" ({}) or \"b\" ({})",
                            nodes[l.a], nodes[l.b]
                        ),
                    );
                }
            };
            Ok(Tap {
                name: format!("{name}@{end}"),
                site: TapSite::LinkEnd { link, at_b },
            })
        }
        (Some(_), None, None) => err(
            p,
            "missing at: name the link's end to capture at, \"a\" or \"b\" \
             (or write the link's name alone for its departures)",
        ),
        (None, Some(_), None) => err(p, "at needs a link: {link = \"R-D\", at = \"a\"}"),
        (None, _, Some(name)) => {
            if table.contains_key("at") {
                return err(
                    at(p, "at"),
                    "a node tap takes no at; it sees all the node's links",
                );
            }
            let node = nodes.iter().position(|n| n == name).ok_or_else(|| {
                ScenarioError::new(
                    at(p, "node"),
                    format!(
                        "unknown node \"{name}\"; expected one of: {}",
                        nodes.join(", ")
                    ),
                )
            })?;
            Ok(Tap {
                name: format!("node-{name}"),
                site: TapSite::Node { node },
            })
        }
        (None, None, None) => err(p, EXPECTED),
    }
}
