//! What to record: traces and pcap taps.

use super::errors::{err, ScenarioError};
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
            goodput_interval: DEFAULT_GOODPUT_INTERVAL,
        }
    }
}

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
        goodput_interval,
    })
}

/// `pcap`: the links to tap, each once, by index.
pub(super) fn pcap_links(
    raw: &[String],
    link_index: &LinkIndex,
    links: &[LinkSpec],
) -> Result<Vec<usize>, ScenarioError> {
    let mut pcap_links = Vec::with_capacity(raw.len());
    for (i, name) in raw.iter().enumerate() {
        let Some(&link) = link_index.get(name) else {
            return err(
                format!("pcap[{i}]"),
                format!(
                    "unknown link \"{name}\"; expected one of: {}",
                    link_names(links)
                ),
            );
        };
        if !pcap_links.contains(&link) {
            pcap_links.push(link);
        }
    }
    Ok(pcap_links)
}
