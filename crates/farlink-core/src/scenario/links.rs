//! Links: nodes at both ends, rate, delay and queue per direction; bundles and radio hops
//! are resolved by their own phases. Loss models wait for the flows (`loss.rs`).

use std::collections::BTreeMap;

use super::aqm;
use super::bundles::{self, BundleSpec};
use super::errors::{at, err, ScenarioError};
use super::loss::LossSpec;
use super::quantity::{check_name, one_of, opt_bytes, opt_duration, rate_from};
use super::raw::{Bare, BitRate, Duration, RawDir, RawLink, RawLoss, Size, UnitText};
use super::rlp::{self, RlpSpec};
use super::schedule;
use crate::links::link::{QueueLimit, TokenBucket};
use crate::links::queue::Discipline;
use crate::links::schedule::{RateTrace, Schedule};
use crate::time::{self, SimDuration};

/// The default queue bound when a link gives none (ns-3's default `MaxSize` of 100 packets).
pub const DEFAULT_QUEUE_PKTS: u32 = 100;

/// A duplex link between two nodes.
#[derive(Clone, Debug)]
pub struct LinkSpec {
    pub name: String,
    /// Index into [`Scenario::nodes`] of end `a`; the forward direction runs a -> b.
    pub a: usize,
    pub b: usize,
    pub fwd: DirectionSpec,
    pub rev: DirectionSpec,
    /// The link is a multilink PPP bundle; then each direction's `rate` is the sum of the
    /// members' rates, `delay` the largest member delay, `queue` the MLPPP queue and `loss`
    /// each member's error model.
    pub bundle: Option<BundleSpec>,
    /// The link is an IS-707 radio hop in both directions (see [`crate::rlp`]).
    pub rlp: Option<RlpSpec>,
}

impl LinkSpec {
    pub fn direction(&self, forward: bool) -> &DirectionSpec {
        if forward {
            &self.fwd
        } else {
            &self.rev
        }
    }
}

/// One direction of a link: serializer, propagation, queue at the sending end, loss.
#[derive(Clone, Debug)]
pub struct DirectionSpec {
    /// With a bucket, its token rate (the sustained rate).
    pub rate: time::BitRate,
    pub delay: SimDuration,
    pub queue: QueueLimit,
    /// A token-bucket shaper in front of the serializer (plain links only).
    pub bucket: Option<TokenBucket>,
    /// The queue's discipline (a plain link's, a bundle's MLPPP queue, a radio hop's queue;
    /// drop-tail by default).
    pub discipline: Discipline,
    pub loss: LossSpec,
    /// Rate, delay, loss and up/down over time (plain links only).
    pub schedule: Option<Schedule>,
    /// mahimahi's delivery opportunities in place of the rate (plain links only).
    pub rate_trace: Option<RateTrace>,
}

pub(super) struct DirParts {
    pub rate: Option<time::BitRate>,
    pub delay: Option<SimDuration>,
    pub queue: Option<QueueLimit>,
    /// Filled per direction, from its own bucket fields and the link's.
    pub bucket: Option<TokenBucket>,
    /// Filled per direction, from its own `queue_discipline` and `aqm` and the link's.
    pub discipline: Discipline,
    /// Filled per direction, from its own schedule or the link's, and its rate trace.
    pub schedule: Option<Schedule>,
    pub rate_trace: Option<RateTrace>,
}

/// A token bucket's fields as written on a link or in one direction, each with its path.
pub(super) struct BucketParts {
    burst: Option<(u64, String)>,
    peak: Option<(time::BitRate, String)>,
}

impl BucketParts {
    fn read(
        parent: &str,
        burst: &Option<UnitText<Size>>,
        burst_bytes: Option<u64>,
        peak_rate: &Option<UnitText<BitRate>>,
        peak_rate_bps: &Option<Bare>,
    ) -> Result<BucketParts, ScenarioError> {
        let burst = opt_bytes(parent, ("burst", burst), ("burst_bytes", burst_bytes))?;
        if let Some((0, path)) = &burst {
            return err(path, "expected a bucket of at least 1 byte, got 0");
        }
        let peak = one_of(
            parent,
            ("peak_rate", peak_rate),
            ("peak_rate_bps", peak_rate_bps),
        )?
        .map(|(v, path)| rate_from(&path, v).map(|r| (r, path)))
        .transpose()?;
        Ok(BucketParts { burst, peak })
    }

    /// The path of the first field given, if any.
    fn first_path(&self) -> Option<&str> {
        let burst = self.burst.as_ref().map(|b| b.1.as_str());
        burst.or(self.peak.as_ref().map(|p| p.1.as_str()))
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn dir_parts(
    parent: &str,
    rate: &Option<UnitText<BitRate>>,
    rate_bps: &Option<Bare>,
    delay: &Option<UnitText<Duration>>,
    delay_s: &Option<Bare>,
    queue: &Option<UnitText<Size>>,
    queue_bytes: Option<u64>,
    queue_pkts: Option<u32>,
) -> Result<DirParts, ScenarioError> {
    let rate = one_of(parent, ("rate", rate), ("rate_bps", rate_bps))?
        .map(|(v, path)| rate_from(&path, v))
        .transpose()?;
    let delay = opt_duration(parent, ("delay", delay), ("delay_s", delay_s), true)?;
    let bytes = opt_bytes(parent, ("queue", queue), ("queue_bytes", queue_bytes))?;
    let queue = match (bytes, queue_pkts) {
        (Some((_, path)), Some(_)) => {
            return err(
                path,
                "give the queue bound either in packets (queue_pkts) or in bytes, not both",
            )
        }
        (Some((b, _)), None) => Some(QueueLimit::Bytes(b)),
        (None, Some(n)) => Some(QueueLimit::Packets(n)),
        (None, None) => None,
    };
    Ok(DirParts {
        rate,
        delay,
        queue,
        bucket: None,
        discipline: Discipline::DropTail,
        schedule: None,
        rate_trace: None,
    })
}

pub(super) fn link_names(links: &[LinkSpec]) -> String {
    links
        .iter()
        .map(|l| l.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The scenario's nodes, by name.
pub(super) struct Nodes<'r> {
    pub names: &'r [String],
    index: BTreeMap<&'r str, usize>,
}

impl<'r> Nodes<'r> {
    /// At least one node; names valid and distinct.
    pub fn new(names: &'r [String]) -> Result<Self, ScenarioError> {
        if names.is_empty() {
            return err("nodes", "expected at least one node");
        }
        let mut index = BTreeMap::new();
        for (i, n) in names.iter().enumerate() {
            let path = format!("nodes[{i}]");
            check_name(&path, n)?;
            if index.insert(n.as_str(), i).is_some() {
                return err(path, format!("duplicate node name \"{n}\""));
            }
        }
        Ok(Nodes { names, index })
    }

    /// The index of node `name`, given at `path`.
    pub fn get(&self, path: String, name: &str) -> Result<usize, ScenarioError> {
        self.index
            .get(name)
            .copied()
            .ok_or_else(|| node_err(path, name, self.names))
    }
}

/// An unknown node's error, naming the nodes there are.
pub(super) fn node_err(path: String, name: &str, nodes: &[String]) -> ScenarioError {
    ScenarioError::new(
        path,
        format!(
            "unknown node \"{name}\"; expected one of: {}",
            nodes.join(", ")
        ),
    )
}

/// A link validated but for its loss models, which may need the flows' packet sizes.
pub(super) struct PendingLink<'r> {
    pub name: String,
    pub a: usize,
    pub b: usize,
    /// Per direction (fwd, rev): rate, delay and queue (all present), the loss model as
    /// written and its path.
    pub dirs: [(DirParts, Option<&'r RawLoss>, String); 2],
    pub bundle: Option<BundleSpec>,
    pub rlp: Option<RlpSpec>,
}

/// Link names to indices.
pub(super) type LinkIndex = BTreeMap<String, usize>;

/// Every link, in order, and the index of their names.
pub(super) fn links<'r>(
    raw: &'r [RawLink],
    nodes: &Nodes,
) -> Result<(Vec<PendingLink<'r>>, LinkIndex), ScenarioError> {
    let mut pending = Vec::with_capacity(raw.len());
    let mut link_index = BTreeMap::new();
    for (i, l) in raw.iter().enumerate() {
        let p = format!("links[{i}]");
        let a = nodes.get(at(&p, "a"), &l.a)?;
        let b = nodes.get(at(&p, "b"), &l.b)?;
        if a == b {
            return err(
                at(&p, "b"),
                format!("a link joins two different nodes, got \"{}\" twice", l.b),
            );
        }
        let name = match &l.name {
            Some(n) => {
                check_name(&at(&p, "name"), n)?;
                n.clone()
            }
            None => default_link_name(&l.a, &l.b),
        };
        if link_index.insert(name.clone(), i).is_some() {
            return err(
                at(&p, "name"),
                format!("duplicate link name \"{name}\" (give each link a distinct name)"),
            );
        }
        pending.push(link(&p, l, name, a, b)?);
    }
    Ok((pending, link_index))
}

/// The name of a link that gives none.
pub fn default_link_name(a: &str, b: &str) -> String {
    format!("{a}-{b}")
}

/// One link at `p`, its ends and name already checked.
fn link<'r>(
    p: &str,
    l: &'r RawLink,
    name: String,
    a: usize,
    b: usize,
) -> Result<PendingLink<'r>, ScenarioError> {
    let common = dir_parts(
        p,
        &l.rate,
        &l.rate_bps,
        &l.delay,
        &l.delay_s,
        &l.queue,
        l.queue_bytes,
        l.queue_pkts,
    )?;
    let bundle = match &l.bundle {
        Some(rb) => {
            bundles::no_rate_or_delay_of_its_own(p, l)?;
            Some(bundles::bundle_spec(&at(p, "bundle"), rb)?)
        }
        None => None,
    };
    let rlp = match &l.rlp {
        Some(_) if bundle.is_some() => {
            return err(
                at(p, "rlp"),
                "a link is either a bundle or a radio hop with RLP, not both",
            )
        }
        Some(r) => Some(rlp::rlp_spec(&at(p, "rlp"), r)?),
        None => None,
    };
    let common_bucket =
        BucketParts::read(p, &l.burst, l.burst_bytes, &l.peak_rate, &l.peak_rate_bps)?;
    let shared = Shared {
        path: p,
        raw: l,
        parts: &common,
        bucket: &common_bucket,
        schedule: l.schedule.as_ref().map(|s| (s, at(p, "schedule"))),
        bundle: bundle.as_ref(),
        no_bucket: if bundle.is_some() {
            Some("a bundle's members have serializers of their own")
        } else if rlp.is_some() {
            Some("a radio hop sends in frame slots of its own")
        } else {
            None
        },
    };
    let fwd = direction(p, "fwd", l.fwd.as_ref(), &shared)?;
    let rev = direction(p, "rev", l.rev.as_ref(), &shared)?;
    Ok(PendingLink {
        name,
        a,
        b,
        dirs: [fwd, rev],
        bundle,
        rlp,
    })
}

/// What a link's directions inherit from it.
struct Shared<'a> {
    path: &'a str,
    raw: &'a RawLink,
    parts: &'a DirParts,
    bucket: &'a BucketParts,
    /// The link's schedule as written, for both directions, and its path.
    schedule: Option<(&'a schedule::RawSchedule, String)>,
    bundle: Option<&'a BundleSpec>,
    /// Why the link takes no token bucket, if it takes none.
    no_bucket: Option<&'static str>,
}

/// Direction `key` of the link at `p`: its own rate, delay, queue and bucket, else the link's,
/// else the bundle's (members' rates summed, the largest member delay), else the default queue
/// and no bucket.
fn direction<'r>(
    p: &str,
    key: &str,
    d: Option<&'r RawDir>,
    shared: &Shared,
) -> Result<(DirParts, Option<&'r RawLoss>, String), ScenarioError> {
    let (common, bundle) = (shared.parts, shared.bundle);
    let dp = at(p, key);
    let empty = RawDir::default();
    let raw = d.unwrap_or(&empty);
    let own = dir_parts(
        &dp,
        &raw.rate,
        &raw.rate_bps,
        &raw.delay,
        &raw.delay_s,
        &raw.queue,
        raw.queue_bytes,
        raw.queue_pkts,
    )?;
    let (sched, trace) = schedule::direction(
        &dp,
        raw,
        shared.schedule.as_ref(),
        shared.no_bucket,
        &own,
        common,
    )?;
    let first = sched.as_ref().and_then(|s| s.rows().first());
    // A rate trace is the direction's rate: its mean stands for it in the resolved scenario.
    let rate = trace
        .as_ref()
        .map(RateTrace::mean_rate)
        .or(own.rate)
        .or(common.rate)
        .or(first.map(|r| r.rate).filter(|r| r.bps() > 0))
        .or(bundle.map(BundleSpec::capacity));
    let delay = own
        .delay
        .or(common.delay)
        .or(first.map(|r| r.delay))
        .or(bundle.and_then(|b| b.members.iter().map(|m| m.delay).max()));
    if rate.is_none() {
        return err(
            at(&dp, "rate"),
            "missing: give rate (\"1.5Mbps\") or rate_bps on the link or in this direction",
        );
    }
    if delay.is_none() {
        return err(
            at(&dp, "delay"),
            "missing: give delay (\"80ms\") or delay_s on the link or in this direction",
        );
    }
    let own_bucket = BucketParts::read(
        &dp,
        &raw.burst,
        raw.burst_bytes,
        &raw.peak_rate,
        &raw.peak_rate_bps,
    )?;
    let bucket = token_bucket(key, &own_bucket, shared, rate)?;
    let discipline = aqm::discipline(
        shared.path,
        (&shared.raw.queue_discipline, &shared.raw.aqm),
        &dp,
        (&raw.queue_discipline, &raw.aqm),
    )?;
    if bucket.is_some() && (sched.is_some() || trace.is_some()) {
        return err(
            at(&dp, "schedule"),
            "a schedule or a rate trace drives a plain serializer; this direction has a token \
             bucket (burst)",
        );
    }
    let parts = DirParts {
        rate,
        delay,
        bucket,
        discipline,
        schedule: sched,
        rate_trace: trace,
        queue: Some(
            own.queue
                .or(common.queue)
                .unwrap_or(QueueLimit::Packets(DEFAULT_QUEUE_PKTS)),
        ),
    };
    Ok((parts, d.and_then(|x| x.loss.as_ref()), at(&dp, "loss")))
}

/// Direction `key`'s token bucket from its own fields, else the link's: `None` without
/// `burst`; refused where the link takes none, for a peak rate without a burst, and for a peak
/// below the token rate `rate` (as tbf refuses it).
fn token_bucket(
    key: &str,
    own: &BucketParts,
    shared: &Shared,
    rate: Option<time::BitRate>,
) -> Result<Option<TokenBucket>, ScenarioError> {
    if let Some(why) = shared.no_bucket {
        if let Some(path) = shared.bucket.first_path().or(own.first_path()) {
            return err(
                path,
                format!("a token bucket (burst, peak_rate) shapes a plain link; {why}"),
            );
        }
        return Ok(None);
    }
    let burst = own.burst.as_ref().or(shared.bucket.burst.as_ref());
    let peak = own.peak.as_ref().or(shared.bucket.peak.as_ref());
    let Some(&(burst_bytes, _)) = burst else {
        return match peak {
            Some((_, path)) => err(
                path,
                format!(
                    "a peak rate needs a token bucket: give burst (\"80kB\") or burst_bytes on \
                     the link or in {key}"
                ),
            ),
            None => Ok(None),
        };
    };
    if let (Some((p, path)), Some(r)) = (peak, rate) {
        if p < &r {
            return err(
                path,
                format!(
                    "expected a peak rate of at least the token rate ({} bit/s, the rate of \
                     {key}), got {} bit/s",
                    r.bps(),
                    p.bps()
                ),
            );
        }
    }
    Ok(Some(TokenBucket {
        burst_bytes,
        peak: peak.map(|p| p.0),
    }))
}
