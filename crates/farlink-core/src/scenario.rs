//! The scenario: the single input of a simulation, read from JSON and validated into typed
//! values with every error naming its place (`links[1].fwd.loss.p: ...`).
//!
//! This module owns the scenario's schema, its defaults, the resolution of names into indices,
//! static routing, and all validation. It must not run anything: [`crate::world`] builds the
//! components from a [`Scenario`] and runs them. The Python front end reads TOML (with presets),
//! applies command-line overrides by editing the document, and hands JSON to
//! [`parse_scenario_json`].
//!
//! # Quantities
//!
//! A quantity with a dimension is written either as a **string with its unit** under the plain
//! name (`"rate": "1.5Mbps"`, `"delay": "80ms"`, `"size": "64KiB"`), read by
//! [`crate::units`] exactly as the Python front end reads it, or as a **bare number under a
//! name that carries the unit** (`"rate_bps": 1500000`, `"delay_s": 0.08`,
//! `"size_bytes": 65536`). Giving both spellings of one quantity is an error, and so is a bare
//! number under a plain name (`"delay": 80` would be ambiguous). Sizes are rounded to the
//! nearest byte, rates to the nearest bit/s and durations to the nearest nanosecond; a
//! duration may not exceed [`MAX_DURATION_S`]. Probabilities and dimensionless parameters are
//! numbers.
//!
//! # Schema (version 1)
//!
//! Field by field, with defaults, in `docs/scenarios.md`.
//!
//! ```text
//! {
//!   "name": "stpd-wireless",          optional, free text (also "description", "schema": 1)
//!   "seed": 1,                        optional u64, default 1: the master seed
//!   "duration": "100s",               required (or duration_s): the simulated stop time
//!   "nodes": ["S", "R", "D"],         required, unique non-empty names
//!   "links": [ LINK, ... ],           required
//!   "flows": [ FLOW, ... ],           optional, default []
//!   "lossy_link": "R-D",              optional: LINK name, or {"link": "R-D", "direction": "fwd"}
//!   "trace": TRACE,                   optional, default: no traces
//!   "pcap": [ TAP, ... ],             optional: where to capture packets, one pcap per TAP
//!   "extra": ...                      optional, anything: ignored (for other engines)
//! }
//! TAP = "R-D"                        a link: packets leaving either end (both directions)
//!     | {"link": "R-D", "at": "b"}    a link end: packets leaving and arriving at end a or b
//!     | {"node": "R"}                 a node: all it sends and receives on all its links
//! LINK = {
//!   "name": "R-D",                    optional, default "<a>-<b>"; unique
//!   "a": "R", "b": "D",               the two nodes; "fwd" is a -> b, "rev" is b -> a
//!   "rate": "1.5Mbps" | "rate_bps",   both directions (required here or in fwd/rev)
//!   "delay": "80ms" | "delay_s",      one-way propagation delay (required here or in fwd/rev)
//!   "queue_pkts": 30 | "queue_bytes": 64000 | "queue": "64KiB"
//!                                     drop-tail queue at the sending end of each direction;
//!                                     default 100 packets
//!   "burst": "80kB" | "burst_bytes",  optional: a token bucket of this depth (Linux tbf);
//!                                     rate is then its token rate (not with bundle or rlp)
//!   "peak_rate": "1Gbps" | "peak_rate_bps"   optional, with burst: the rate a packet holding
//!                                     its tokens is sent at (default: in no time); >= rate
//!   "fwd": DIR, "rev": DIR            optional per-direction overrides
//!   "bundle": BUNDLE                  optional: the link is a multilink PPP bundle (then no
//!                                     rate or delay here or in fwd/rev; queue* bound the
//!                                     MLPPP queue in front of the members; fwd/rev loss is
//!                                     each member's frame (or packet) error model)
//!   "rlp": RLP                        optional: the link is an IS-707 radio hop (not with
//!                                     bundle); rate and frame set the slot, delay runs from
//!                                     a slot's end to the frame's arrival; fwd/rev loss
//!                                     decides each frame slot of that direction (and its
//!                                     NAKs cross the other direction's channel)
//! }
//! RLP = {"idle_frames": "none" | "unlimited" | 5, "nak_rounds": 3,
//!        "nak_timer": "120ms" | "nak_timer_s" (default from the slot and delay),
//!        "frame": "24B" | "frame_bytes", "payload": "19B" | "payload_bytes",
//!        "pe": 0.1, "fd_t": 0.01     optional, together: both directions' channel is the
//!                                     Markov fading model on the slot (then no fwd/rev loss)}
//! BUNDLE = {                          see docs/scenarios.md and docs/far-links.md
//!   "members": 8 | [MEMBER, ...],     1 to 64 members
//!   "rate", "delay" (or _bps, _s),    per member, unless every MEMBER gives its own
//!   "txqueue_pkts": 3,                per member, the packet being sent included
//!   "call_drop_rate": "1/50min" | "call_drop_rate_per_s"   Poisson per member, default 0
//!   "detection_delay": "30s",         call drop to the moment it is noticed
//!   "dial_time": "14.5s",             required if members ever dial
//!   "dial_failure_prob": 0.0,
//!   "t_d": "30s", "t_f": "30s", "max_attempts": 10, "blocked_for": "1h"   (or *_s)
//!   "primary": false, "start": "connected" | "dialing",
//!   "fragment": false, "mp_header_bytes": 4, "reassembly_timeout": "60s",
//!   "arq": {"mode": "go-back-n" | "selective-repeat", "frame": "27B" | "frame_bytes",
//!           "max_tries": 3, "window_frames": (default from the round trip)}
//! }
//! MEMBER = {"name", "rate", "delay", "txqueue_pkts", "call_drop_rate"} (each optional)
//! DIR = { rate, delay, queue, burst, peak_rate as above (override the link's), "loss": LOSS }
//! LOSS = {"model": "none"}
//!      | {"model": "bernoulli", "p": 0.01}
//!      | {"model": "gilbert_elliott", "mean_burst": "40ms" | "mean_burst_s" | "mean_burst_pkts": 8,
//!         "rate": 0.01}
//!      | {"model": "gilbert_packets", "mean_burst_pkts": 8, "rate": 0.01}   stepped per packet
//!      | {"model": "markov_fading", "pe": 0.1, "fd_t": 0.01, "frame": "20ms" (default, or frame_s)}
//!      | {"model": "lcg16807", "rate": 0.1, "seed": 1 (default)}
//!      | {"model": "drop_list", "packets": [2000, 2001]}   arrival numbers from 1, increasing
//! FLOW = {
//!   "name": "ftp",                    optional, default "flow<i>"; unique
//!   "from": "S", "to": "D",           data flows from -> to; ACKs return on the reverse path
//!   "start": "0s" | "start_s",        default 0
//!   "stop": "60s" | "stop_s",         optional: the application writes nothing after it
//!   "tcp": TCP,                       optional
//!   "app": APP,                       required
//!   "relays": ["R1"], "relay_buffer": "128KiB", "segments": [{"tcp": TCP}, ...]
//!                                     optional: a split connection (scenario/split.rs)
//!   "transport": "tcp",               tcp | mptcp: one subflow per member of the bundle link
//!                                     on the route, each over that member alone
//!   "mptcp": {"scheduler": "linux",   linux | minrtt | roundrobin | redundant
//!             "coupling": "lia",      lia | olia | balia | none (scenario/mptcp.rs)
//!             "retransmit_timer": true,  Linux's connection-level timer (mptcp/linux.rs)
//!             "keep_first_subflow": false,  member 0's subflow kept through its drops
//!             "close_resends": "queue",  subflow | queue: what a subflow's close sends again
//!                                     (default: queue with linux, subflow with the others)
//!             "stale_loss_count": 0}  silent timer expiries before a subflow is stale (0:
//!                                     never; Linux's default is 4)
//! }
//! TCP = {                             every field optional; defaults after RFCs / Linux
//!   "profile": "rfc",                 rfc | linux: the defaults of the fields not given
//!                                     (scenario/profile.rs: Linux's, cc a module's name)
//!   "mss": "1460B" | "mss_bytes": 1460,          MSS option (64..=65495)
//!   "initial_window_segments": 10,
//!   "receive_buffer": "128KiB" | "receive_buffer_bytes": 131072,
//!   "send_buffer": "64KiB" | "send_buffer_bytes",  default unbounded
//!   "window_scaling": true, "sack": true, "timestamps": true,
//!   "delayed_ack": true, "delayed_ack_timeout": "200ms" | "delayed_ack_timeout_s",
//!   "initial_rto": "1s", "min_rto": "1s", "max_rto": "64s"     (or *_s),
//!   "recovery": "sack",               tahoe | reno | newreno | sack | rack (RFC 8985 RACK-TLP)
//!   "cwnd_reduction": "immediate",    immediate (cwnd = ssthresh as SACK-based recovery begins,
//!                                     RFC 6675) | prr (RFC 6937 Proportional Rate Reduction,
//!                                     Linux's; not for BBR, which sets its own)
//!   "rto": "rfc6298",                 rfc6298 | linux (Linux's estimator; min_rto 200ms, max_rto
//!                                     120s unless given)
//!   "cc": "reno",                     congestion controller by name (tcp::cc::CcConfig::NAMES:
//!                                     reno | vegas | hybla | westwood | cubic |
//!                                     cubic-linux | bic | ...)
//!   "growth": "per-ack",              per-ack | byte-counting (Reno's window growth; the
//!                                     others accept per-ack only)
//!   "dup_thresh": 3,
//!   "limited_transmit": true,         RFC 3042 (on by default, as in Linux and ns-3)
//!   "handshake": false,               simulate the SYN / SYN-ACK exchange (tcp::handshake);
//!                                     off: the connection starts established
//!   "max_ooo_ranges": 64              the receiver's out-of-order ranges, or "window" (no
//!                                     count: the receive window bounds them, as in Linux)
//! }
//! APP = {"kind": "bulk", "size": "1MB" | "size_bytes": 1000000}
//!     | {"kind": "unbounded"}
//!     | {"kind": "telnet", "mean_interval": "1s" | "mean_interval_s",
//!        "message": "40B" | "message_bytes": 40 (default 1)}
//! TRACE = {"all", "cwnd", "seq", "ack", "rtt", "rto", "queue", "drops", "goodput",
//!          "member_state", "capacity": bool, "goodput_interval": "100ms" | "goodput_interval_s",
//!          "queue_delay", "aqm": bool (not switched on by "all")}
//! ```
//!
//! # Choices
//!
//! * **Routing** is static: each flow's data takes a path with the fewest hops (breadth-first
//!   search over the links in the order they are listed, so ties go to the link listed
//!   first); its ACKs take exactly the reverse path, through the same links.
//! * **`lossy_link`** names the link direction whose loss the command line's `--loss P`
//!   replaces: the front end writes `links[i].<direction>.loss = {"model": "bernoulli",
//!   "p": P}` for the link named. The direction defaults to `fwd` and must carry the data of at
//!   least one flow.
//! * **`mean_burst_pkts`** of the Gilbert–Elliott model is converted to time with the packet
//!   interval of the direction: the transmission time of the largest full-sized data packet
//!   (MSS + 40 bytes of headers) of the flows whose data crosses it, or of 1500 bytes if none
//!   does (seed 003's "average error burst of 8 packets").

//!
//! # Where things are
//!
//! [`parse_scenario_json`] reads the document into the serde types of `raw.rs`, then
//! [`validate`] runs the phases in order, each returning a validated type: the document's
//! header here, nodes and links (`links.rs`, with `bundles.rs` and `rlp.rs` for the two kinds
//! of special link), flows (`flows.rs`, `tcp.rs`, `split.rs`, routed by `routes.rs`), the
//! links' loss models once the flows' packet sizes are known (`loss.rs`), then `lossy_link`
//! (`routes.rs`) and what to record (`trace.rs`). Each phase holds the errors of its fields,
//! their defaults and the type that carries them on. `quantity.rs` reads the two spellings of
//! a quantity; `errors.rs` holds [`ScenarioError`].

mod aqm;
mod bundles;
mod defaults;
mod errors;
mod flows;
mod limits;
mod links;
mod loss;
mod mptcp;
mod profile;
mod quantity;
mod raw;
pub mod resolved;
mod rlp;
mod routes;
mod schedule;
mod shutdown;
mod split;
mod tcp;
mod trace;
mod traffic;

pub use bundles::{
    BundleSpec, MemberSpec, DEFAULT_ARQ_MAX_TRIES, DEFAULT_DETECTION_DELAY,
    DEFAULT_REASSEMBLY_TIMEOUT,
};
pub use errors::ScenarioError;
pub use flows::{AppSpec, FlowSpec, DEFAULT_TELNET_MESSAGE_BYTES};
pub use links::{default_link_name, DirectionSpec, LinkSpec, DEFAULT_QUEUE_PKTS};
pub use loss::{LossSpec, DEFAULT_NOMINAL_PACKET_BYTES};
pub use mptcp::{MptcpSpec, Transport, TRANSPORTS};
pub use profile::{ProfileField, ProfilePart, TcpProfile, LINUX_FIELDS, LINUX_RENO_GROWTH_SOURCE};
pub use quantity::{MAX_DURATION_S, MAX_RATE_BPS};
pub use resolved::{Resolved, DERIVED_FIELDS, RESOLVED_SCHEMA_VERSION};
pub use rlp::RlpSpec;
pub use routes::{Hop, LossyLink};
pub use shutdown::Shutdown;
pub use split::{RelaySpec, SegmentSpec, DEFAULT_RELAY_BUFFER_BYTES};
pub use tcp::{TcpSpec, DEFAULT_MSS_BYTES, MAX_RECEIVE_BUFFER_BYTES, MSS_RANGE_BYTES};
pub use trace::{Tap, TapSite, TraceConfig, DEFAULT_GOODPUT_INTERVAL};
pub use traffic::{
    Arrivals, OnOffSpec, PoissonSpec, RequestResponseSpec, SizeDist, Sojourn, UdpSpec,
    MAX_UDP_PAYLOAD_BYTES, UDP_HEADER_BYTES,
};

use crate::time::SimDuration;
use errors::err;
use raw::RawScenario;

/// The schema version this module reads.
pub const SCHEMA_VERSION: u32 = 1;

// ---------------------------------------------------------------------------------------------
// The validated scenario
// ---------------------------------------------------------------------------------------------

/// A validated scenario; build it with [`parse_scenario_json`].
#[derive(Clone, Debug)]
pub struct Scenario {
    pub(crate) name: Option<String>,
    pub(crate) seed: u64,
    pub(crate) duration: SimDuration,
    pub(crate) nodes: Vec<String>,
    pub(crate) links: Vec<LinkSpec>,
    pub(crate) flows: Vec<FlowSpec>,
    pub(crate) lossy_link: Option<LossyLink>,
    pub(crate) trace: TraceConfig,
    pub(crate) pcap: Vec<Tap>,
}

impl Scenario {
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// The simulated stop time (from zero).
    pub fn duration(&self) -> SimDuration {
        self.duration
    }
    pub fn nodes(&self) -> &[String] {
        &self.nodes
    }
    pub fn links(&self) -> &[LinkSpec] {
        &self.links
    }
    pub fn flows(&self) -> &[FlowSpec] {
        &self.flows
    }
    /// The link direction whose loss `--loss` overrides, if the scenario names one.
    pub fn lossy_link(&self) -> Option<&LossyLink> {
        self.lossy_link.as_ref()
    }
    pub fn trace(&self) -> &TraceConfig {
        &self.trace
    }
    /// The pcap taps, in the order of the scenario's `pcap`, each once.
    pub fn pcap(&self) -> &[Tap] {
        &self.pcap
    }
    /// The round-trip propagation delay of a path: its hops' delays there and back.
    pub fn round_trip(&self, path: &[Hop]) -> SimDuration {
        path.iter()
            .map(|h| {
                let l = &self.links[h.link];
                l.direction(h.forward).delay + l.direction(!h.forward).delay
            })
            .fold(SimDuration::ZERO, |a, b| a + b)
    }
    /// The same scenario with another master seed (for replications).
    pub fn with_seed(mut self, seed: u64) -> Scenario {
        self.seed = seed;
        self
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------

/// Reads and validates a scenario from JSON. Every error names the path of the offending value
/// and what was expected; nothing here panics on any input.
pub fn parse_scenario_json(text: &str) -> Result<Scenario, ScenarioError> {
    // serde's derived structs also accept a JSON array of their fields in declaration order;
    // a scenario is only ever an object with named fields.
    if let Some(first) = text.trim_start().chars().next() {
        if first != '{' {
            return Err(ScenarioError::new(
                "",
                format!("expected a JSON object (the scenario), found `{first}` at its start"),
            ));
        }
    }
    // A list where a table belongs would be read by serde as the table's fields in order.
    if let Ok(doc) = serde_json::from_str::<serde_json::Value>(text) {
        if let Some(e) = errors::list_where_a_table_belongs(&doc) {
            return Err(e);
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let raw: RawScenario = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = error_path(e.path());
        let inner = e.into_inner();
        let mut message = inner.to_string();
        // A data error is located by its path; the JSON's line and column would point into a
        // document the user never wrote (the front end's translation of a TOML file).
        if inner.classify() == serde_json::error::Category::Data {
            let suffix = format!(" at line {} column {}", inner.line(), inner.column());
            if let Some(stripped) = message.strip_suffix(&suffix) {
                message = stripped.to_owned();
            }
        }
        ScenarioError::new(path, errors::plain_words(&message))
    })?;
    de.end()
        .map_err(|e| ScenarioError::new("", e.to_string()))?;
    validate(raw).and_then(|sc| limits::check(&sc).map(|()| sc))
}

/// Reads and validates a scenario from JSON, and writes it out resolved: every default filled
/// and marked, routes, rates, loss rates and base RTTs (see [`resolved`]). Fails as
/// [`parse_scenario_json`] does.
pub fn resolve_scenario_json(text: &str) -> Result<Resolved, ScenarioError> {
    let scenario = parse_scenario_json(text)?;
    // The document parsed as a scenario, so it parses as JSON.
    let input: serde_json::Value =
        serde_json::from_str(text).map_err(|e| ScenarioError::new("", e.to_string()))?;
    Ok(Resolved::new(&scenario, &input))
}

/// The path of a serde error in the grammar of `--set` paths: field names and `[index]`es
/// (`links[1].fwd.loss.p`), empty for the document as a whole. It stops before the first
/// segment that cannot be written so, in practice the name of an unknown field that is empty
/// or holds `.`, `[`, `]`, white space or a control character, or is all digits (it would
/// read as an index): the error then names the object holding it, and the message (serde's
/// "unknown field `...`") names the key.
fn error_path(path: &serde_path_to_error::Path) -> String {
    let mut out = String::new();
    for segment in path.iter() {
        match segment {
            serde_path_to_error::Segment::Seq { index } => {
                out.push_str(&format!("[{index}]"));
            }
            serde_path_to_error::Segment::Map { key } if is_path_field(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            _ => break,
        }
    }
    out
}

/// Whether `key` can stand as a field of a path (see [`error_path`]).
fn is_path_field(key: &str) -> bool {
    !key.is_empty()
        && !key.bytes().all(|b| b.is_ascii_digit())
        && !key
            .chars()
            .any(|c| matches!(c, '.' | '[' | ']') || c.is_whitespace() || c.is_control())
}

/// The phases in order; the first error ends the validation.
fn validate(raw: RawScenario) -> Result<Scenario, ScenarioError> {
    if let Some(v) = raw.schema {
        if v != SCHEMA_VERSION {
            return err(
                "schema",
                format!("this core reads scenario schema {SCHEMA_VERSION}, got {v}"),
            );
        }
    }
    let duration = quantity::opt_duration(
        "",
        ("duration", &raw.duration),
        ("duration_s", &raw.duration_s),
        false,
    )?
    .ok_or_else(|| {
        ScenarioError::new(
            "duration",
            "missing: give the simulated stop time as duration (\"100s\") or duration_s",
        )
    })?;
    let nodes = links::Nodes::new(&raw.nodes)?;
    let (pending, link_index) = links::links(&raw.links, &nodes)?;
    let adjacency = routes::adjacency(raw.nodes.len(), &pending);
    let mut flows = flows::flows(&raw.flows, &nodes, &adjacency, duration)?;
    let links = loss::attach(pending, &flows)?;
    mptcp::locate_bundles(&links, &mut flows)?;
    let lossy_link = routes::lossy_link(raw.lossy_link.as_ref(), &link_index, &links, &flows)?;
    let pcap = trace::pcap_taps(&raw.pcap, &raw.nodes, &link_index, &links)?;
    let trace = trace::trace_config(raw.trace.as_ref().unwrap_or(&Default::default()))?;
    Ok(Scenario {
        name: raw.name,
        seed: raw.seed.unwrap_or(1),
        duration,
        nodes: raw.nodes,
        links,
        flows,
        lossy_link,
        trace,
        pcap,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::links::link::QueueLimit;
    use crate::tcp::recovery::LossRecovery;
    use crate::tcp::TcpOptions;

    const MINIMAL: &str = r#"{
        "duration": "10s",
        "nodes": ["S", "D"],
        "links": [{"a": "S", "b": "D", "rate": "1Mbps", "delay": "10ms"}],
        "flows": [{"from": "S", "to": "D", "app": {"kind": "unbounded"}}]
    }"#;

    #[test]
    fn minimal_scenario_gets_defaults() {
        let s = parse_scenario_json(MINIMAL).unwrap();
        assert_eq!(s.seed(), 1);
        assert_eq!(s.duration(), SimDuration::from_secs(10));
        let l = &s.links()[0];
        assert_eq!(l.name, "S-D");
        assert_eq!(l.fwd.rate.bps(), 1_000_000);
        assert_eq!(l.rev.delay, SimDuration::from_millis(10));
        assert_eq!(l.fwd.queue, QueueLimit::Packets(DEFAULT_QUEUE_PKTS));
        assert_eq!(l.fwd.loss, LossSpec::None);
        let f = &s.flows()[0];
        assert_eq!(f.name, "flow0");
        assert_eq!(
            f.path,
            vec![Hop {
                link: 0,
                forward: true
            }]
        );
        assert_eq!(f.tcp.options, TcpOptions::default());
        assert_eq!(f.tcp.rtt.max_rto, SimDuration::from_secs(64));
        assert_eq!(f.tcp.recovery, LossRecovery::Sack);
        assert_eq!(s.trace(), &TraceConfig::default());
    }

    #[test]
    fn unknown_field_that_cannot_be_a_path_is_reported_at_its_object() {
        let with_key = |key: &str| {
            let mut v: serde_json::Value = serde_json::from_str(MINIMAL).unwrap();
            v["links"][0][key] = serde_json::json!(1);
            parse_scenario_json(&v.to_string()).unwrap_err()
        };
        // A plain unknown name is part of the path, as before.
        assert_eq!(with_key("colour").path, "links[0].colour");
        // Names that would make a malformed or misleading path are not.
        for key in ["", "a.b", "fwd[0]", "x]", "two words", "line\nbreak", "7"] {
            let e = with_key(key);
            assert_eq!(e.path, "links[0]", "key {key:?}");
            assert!(e.message.contains("unknown field"), "{e}");
        }
        let e = parse_scenario_json(r#"{"": 1, "duration": "1s"}"#).unwrap_err();
        assert_eq!(e.path, "");
        assert!(e.message.starts_with("unknown field ``"), "{e}");
    }
}
