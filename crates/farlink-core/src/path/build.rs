//! Builds every link direction and bundle driver of a validated scenario, for either engine.

use super::bundle::BundleDriver;
use super::dir::LinkDir;
use crate::links::arq::ArqLink;
use crate::links::link::{Link, LinkConfig};
use crate::links::mlppp::{BundleDir, BundleDirConfig, MemberDirConfig};
use crate::links::queue::Queue;
use crate::links::rlp::{RlpLink, SharedChannel};
use crate::links::schedule::Timed;
use crate::loss::AnyLoss;
use crate::rng::StreamRng;
use crate::scenario::{Hop, LinkSpec, MemberSpec, Scenario, ScenarioError};

/// The links of a scenario at run time.
#[derive(Debug)]
pub struct PathLinks {
    /// Both directions of every link, indexed by [`dir_index`]: link `i` forward at `2i`,
    /// reverse at `2i + 1`.
    pub dirs: Vec<LinkDir>,
    /// One driver per bundle link, in the order of the scenario's links.
    pub bundles: Vec<BundleDriver>,
}

/// The index in [`PathLinks::dirs`] of a hop's link direction.
pub fn dir_index(hop: Hop) -> usize {
    hop.link * 2 + usize::from(!hop.forward)
}

/// `fwd` or `rev`, as in stream names and summaries.
pub fn direction_name(forward: bool) -> &'static str {
    if forward {
        "fwd"
    } else {
        "rev"
    }
}

/// Builds every link direction of `sc` and a driver for each of its bundles. Each component
/// draws from its own stream, derived from the scenario's seed and the component's stable name
/// (`link:<name>:<fwd|rev>:loss`, ...), so both engines draw the same losses for one seed.
pub fn build(sc: &Scenario) -> Result<PathLinks, ScenarioError> {
    let seed = sc.seed();
    let mut dirs = Vec::with_capacity(sc.links().len() * 2);
    let mut bundles = Vec::new();
    for (i, l) in sc.links().iter().enumerate() {
        bundles.extend(BundleDriver::new(seed, i, l)?);
        let mut radio = match l.rlp {
            Some(_) => rlp_dirs(seed, i, l)?.map(Some),
            None => [None, None],
        };
        for forward in [true, false] {
            let link = if l.bundle.is_some() {
                bundle_dir(seed, i, l, forward)?
            } else if let Some(dir) = radio[usize::from(!forward)].take() {
                dir
            } else {
                plain_dir(seed, i, l, forward)?
            };
            dirs.push(link);
        }
    }
    Ok(PathLinks { dirs, bundles })
}

/// Direction `forward` of plain link `l` (index `i`).
fn plain_dir(seed: u64, i: usize, l: &LinkSpec, forward: bool) -> Result<LinkDir, ScenarioError> {
    let spec = l.direction(forward);
    let d = direction_name(forward);
    let rng = StreamRng::derive(seed, &format!("link:{}:{d}:loss", l.name));
    let loss: AnyLoss = spec
        .loss
        .build(rng)
        .map_err(|e| ScenarioError::new(format!("links[{i}].{d}.loss"), e.to_string()))?;
    let cfg = LinkConfig {
        rate: spec.rate,
        delay: spec.delay,
        queue_limit: spec.queue,
        bucket: spec.bucket,
    };
    // The queue's own stream (PIE's and RED's draws), apart from the loss model's.
    let queue_rng = StreamRng::derive(seed, &format!("link:{}:{d}:queue", l.name));
    let queue = Queue::new(spec.discipline, spec.queue, spec.rate, queue_rng);
    let mut link = Link::with_queue(cfg, loss, queue)
        .map_err(|e| ScenarioError::new(format!("links[{i}].{d}"), e.to_string()))?;
    if spec.schedule.is_some() || spec.rate_trace.is_some() {
        // A stream of its own, so the direction's loss model draws as it does without one.
        let rng = StreamRng::derive(seed, &format!("link:{}:{d}:schedule", l.name));
        link.set_timed(Timed::new(
            spec.schedule.clone(),
            spec.rate_trace.clone(),
            rng,
        ));
    }
    Ok(LinkDir::Link(link))
}

/// Both directions of radio hop `l` (index `i`), forward first. Each direction of the air
/// interface is one channel (`link:<name>:<dir>:loss`), crossed by that direction's data frames
/// and by the NAKs of the other direction's receiver.
fn rlp_dirs(seed: u64, i: usize, l: &LinkSpec) -> Result<[LinkDir; 2], ScenarioError> {
    let Some(r) = &l.rlp else {
        return Err(ScenarioError::new(
            format!("links[{i}]"),
            "internal: not a radio hop",
        ));
    };
    let channel = |forward: bool| -> Result<SharedChannel<AnyLoss>, ScenarioError> {
        let d = direction_name(forward);
        let loss = l
            .direction(forward)
            .loss
            .build(StreamRng::derive(
                seed,
                &format!("link:{}:{d}:loss", l.name),
            ))
            .map_err(|e| ScenarioError::new(format!("links[{i}].{d}.loss"), e.to_string()))?;
        Ok(SharedChannel::new(loss))
    };
    let (fwd, rev) = (channel(true)?, channel(false)?);
    let dir = |forward: bool, data: &SharedChannel<AnyLoss>, naks: &SharedChannel<AnyLoss>| {
        let spec = l.direction(forward);
        // The queue's own stream, named as a plain link's queue is.
        let d = direction_name(forward);
        let rng = StreamRng::derive(seed, &format!("link:{}:{d}:queue", l.name));
        let queue = Queue::new(spec.discipline, spec.queue, spec.rate, rng);
        RlpLink::with_queue(r.config(spec), data.clone(), naks.clone(), queue)
            .map(|link| LinkDir::Rlp(Box::new(link)))
            .map_err(|e| ScenarioError::new(format!("links[{i}].rlp.{}", e.param), e.message))
    };
    Ok([dir(true, &fwd, &rev)?, dir(false, &rev, &fwd)?])
}

/// The data plane of direction `forward` of bundle link `l` (index `i`).
fn bundle_dir(seed: u64, i: usize, l: &LinkSpec, forward: bool) -> Result<LinkDir, ScenarioError> {
    let Some(b) = &l.bundle else {
        return Err(ScenarioError::new(
            format!("links[{i}]"),
            "internal: not a bundle",
        ));
    };
    let spec = l.direction(forward);
    let losses = (0..b.members.len())
        .map(|k| member_loss(seed, i, l, forward, k))
        .collect::<Result<Vec<_>, _>>()?;
    let cfg = BundleDirConfig {
        members: b.members.iter().map(member_dir_config).collect(),
        queue_limit: spec.queue,
        fragment: b.fragment,
        mp_header_bytes: b.mp_header_bytes,
        reassembly_timeout: b.reassembly_timeout,
    };
    // The MLPPP queue's own stream, named as a plain link's queue is.
    let rng = StreamRng::derive(
        seed,
        &format!("link:{}:{}:queue", l.name, direction_name(forward)),
    );
    let queue = Queue::new(spec.discipline, spec.queue, spec.rate, rng);
    let dir = BundleDir::with_queue(&cfg, losses, queue)
        .map_err(|e| ScenarioError::new(format!("links[{i}].bundle"), e.to_string()))?;
    Ok(LinkDir::Bundle(Box::new(dir)))
}

/// One direction of bundle member `m` (both directions share its settings).
pub fn member_dir_config(m: &MemberSpec) -> MemberDirConfig {
    MemberDirConfig {
        rate: m.rate,
        delay: m.delay,
        txqueue_pkts: m.txqueue_pkts,
        arq: m.arq,
    }
}

/// The error model of member `k` of bundle link `l` (index `i`) in direction `forward`, drawing
/// from `link:<name>:<fwd|rev>:member<k>:loss`; `k` may lie beyond the bundle's members (a
/// stream of its own, the direction's model).
pub fn member_loss(
    seed: u64,
    i: usize,
    l: &LinkSpec,
    forward: bool,
    k: usize,
) -> Result<AnyLoss, ScenarioError> {
    let d = direction_name(forward);
    let rng = StreamRng::derive(seed, &format!("link:{}:{d}:member{k}:loss", l.name));
    l.direction(forward)
        .loss
        .build(rng)
        .map_err(|e| ScenarioError::new(format!("links[{i}].{d}.loss"), e.to_string()))
}

/// Member `k` of bundle link `l` (index `i`) alone, in direction `forward`, as a link of its
/// own (a Multipath TCP subflow's path): its rate, delay, transmit queue and ARQ, the
/// direction's queue bound (as its own interface's), no multilink header, nothing to
/// reorder, and [`member_loss`]'s error model, so it draws as that member does under MLPPP.
/// Both engines build their member links here.
pub fn member_link_dir(
    seed: u64,
    i: usize,
    l: &LinkSpec,
    forward: bool,
    k: usize,
) -> Result<LinkDir, ScenarioError> {
    let Some(b) = &l.bundle else {
        return Err(ScenarioError::new(
            format!("links[{i}]"),
            "internal: not a bundle",
        ));
    };
    let cfg = BundleDirConfig {
        members: vec![member_dir_config(&b.members[k])],
        queue_limit: l.direction(forward).queue,
        fragment: false,
        mp_header_bytes: 0,
        reassembly_timeout: b.reassembly_timeout,
    };
    let loss = member_loss(seed, i, l, forward, k)?;
    // The member's own interface queue runs the direction's discipline, on a stream of its own.
    let d = direction_name(forward);
    let rng = StreamRng::derive(seed, &format!("link:{}:{d}:member{k}:queue", l.name));
    let spec = l.direction(forward);
    let queue = Queue::new(spec.discipline, spec.queue, b.members[k].rate, rng);
    let dir = BundleDir::with_queue(&cfg, vec![loss], queue)
        .map_err(|e| ScenarioError::new(format!("links[{i}].bundle"), e.to_string()))?;
    Ok(LinkDir::Bundle(Box::new(dir)))
}

/// The frames of member `k` of bundle link `l` (index `i`) in direction `forward` as the
/// simulator sends them: its rate, delay and ARQ (the last member's for a `k` beyond the
/// bundle) and [`member_loss`]'s error model, so one seed damages the same frames wherever the
/// same units are offered at the same instants (the link manager's simulated modem `k`).
pub fn member_arq_link(
    seed: u64,
    i: usize,
    l: &LinkSpec,
    forward: bool,
    k: usize,
) -> Result<ArqLink<AnyLoss>, ScenarioError> {
    let Some(m) = l
        .bundle
        .as_ref()
        .and_then(|b| b.members.get(k).or(b.members.last()))
    else {
        return Err(ScenarioError::new(
            format!("links[{i}]"),
            "internal: not a bundle",
        ));
    };
    ArqLink::new(
        member_dir_config(m).link_config(),
        member_loss(seed, i, l, forward, k)?,
    )
    .map_err(|e| ScenarioError::new(format!("links[{i}].bundle"), e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::links::link::{LinkEvent, Packet};
    use crate::loss::{Bernoulli, LossModel};
    use crate::scenario::parse_scenario_json;
    use crate::time::SimTime;
    use serde_json::json;

    /// Which of `n` one-frame units `link` loses, each offered when the previous is out.
    fn lost_units(link: &mut ArqLink<AnyLoss>, n: u64) -> Vec<bool> {
        let mut lost = Vec::new();
        let mut now = SimTime::ZERO;
        for id in 0..n {
            link.offer(
                now,
                Packet {
                    id,
                    size_bytes: 27,
                    ..Packet::default()
                },
            );
            while lost.len() as u64 <= id {
                now = link.next_wakeup().unwrap();
                while let Some(e) = link.poll(now) {
                    lost.push(matches!(e, LinkEvent::Dropped { .. }));
                }
            }
        }
        lost
    }

    #[test]
    fn a_member_link_draws_its_frame_errors_from_the_members_stream() {
        let doc = json!({
            "seed": 41,
            "duration": "100s",
            "nodes": ["S", "D"],
            "links": [{"name": "sat", "a": "S", "b": "D",
                "fwd": {"loss": {"model": "bernoulli", "p": 0.5}},
                "rev": {"loss": {"model": "bernoulli", "p": 0.2}},
                "bundle": {"members": 2, "rate": "2400bps", "delay": "500ms",
                    "arq": {"mode": "selective-repeat", "frame": "27B", "max_tries": 1}}}],
            "flows": [{"from": "S", "to": "D", "app": {"kind": "bulk", "size": "10KB"}}],
        });
        let sc = parse_scenario_json(&doc.to_string()).unwrap();
        let l = &sc.links()[0];
        let members = &l.bundle.as_ref().unwrap().members;
        // Member 1, and member 5 beyond the bundle (the last member's settings, its own stream).
        for (k, forward, p) in [(1, true, 0.5), (1, false, 0.2), (5, true, 0.5)] {
            let mut link = member_arq_link(41, 0, l, forward, k).unwrap();
            assert_eq!(*link.config(), member_dir_config(&members[1]).link_config());
            let d = direction_name(forward);
            let name = format!("link:sat:{d}:member{k}:loss");
            let mut draws = Bernoulli::new(p, StreamRng::derive(41, &name)).unwrap();
            let expected: Vec<bool> = (0..200).map(|_| draws.is_lost(SimTime::ZERO)).collect();
            // One try a frame: a unit is lost exactly when its frame's draw damaged it.
            assert_eq!(lost_units(&mut link, 200), expected, "{name}");
        }
        assert!(member_arq_link(41, 0, &sc.links()[0], true, 0).is_ok());
    }
}
