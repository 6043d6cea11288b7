//! Bundle links in the engine: the glue between the world and the sans-I/O bundle components
//! of [`crate::mlppp`] and [`crate::modem`].
//!
//! A link with a `bundle` is, in each direction, a [`BundleDir`] in place of a [`Link`] (both
//! behind [`DirLink`], so the forwarding code does not care which), and one [`BundleControl`]
//! per link for the members' calls, which both directions share. This module owns the
//! randomness the components do not draw themselves, each from its own stream:
//!
//! * call drops: a member's call lasts an exponential time of mean 1/β from the moment it is
//!   up (`link:<name>:member<k>:calldrop`), so drops form a Poisson process of rate β over
//!   its up-time (seed 000 section 5.3); the draw is tagged with the connection, so a call
//!   that ended otherwise (hung up) ignores it;
//! * dial outcomes: each dial fails with `dial_failure_prob` (`link:<name>:member<k>:dial`)
//!   and answers after `dial_time`;
//! * each member's error model per direction (`link:<name>:<fwd|rev>:member<k>:loss`).
//!
//! It applies the control plane's commands to both directions at the instant they are
//! decided, records member states and capacity, and arms one lazy timer per bundle.

use super::summary::{BundleDirectionSummary, BundleSummary, RlpDirectionSummary, RlpSummary};
use super::{cause_map, dir_index, Event, Timer, World};
use crate::link::{Departure, DropCause, Link, LinkEvent, LinkStats, Packet};
use crate::loss::AnyLoss;
use crate::mlppp::{
    BundleControl, BundleDir, BundleDirConfig, ControlCommand, ControlConfig, MemberDirConfig,
};
use crate::modem::SupervisorConfig;
use crate::rlp::{RlpLink, SharedChannel};
use crate::rng::StreamRng;
use crate::scenario::{Hop, LinkSpec, ScenarioError};
use crate::time::{SimDuration, SimTime};
use crate::trace::N_DROP_CAUSES;

/// One direction of a link: a plain link, a bundle's data plane, or one direction of an
/// IS-707 radio hop ([`crate::rlp`]). Plain links stay inline (they are the hot path of most
/// scenarios); the larger, rarer others are boxed once at build.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub(super) enum DirLink {
    Link(Link<AnyLoss>),
    Bundle(Box<BundleDir<AnyLoss>>),
    Rlp(Box<RlpLink<SharedChannel<AnyLoss>, SharedChannel<AnyLoss>>>),
}

impl DirLink {
    pub(super) fn offer(&mut self, now: SimTime, pkt: Packet) -> Result<(), DropCause> {
        match self {
            DirLink::Link(l) => l.offer(now, pkt),
            DirLink::Bundle(b) => b.offer(now, pkt),
            DirLink::Rlp(r) => r.offer(now, pkt),
        }
    }

    pub(super) fn poll(&mut self, now: SimTime) -> Option<LinkEvent> {
        match self {
            DirLink::Link(l) => l.poll(now),
            DirLink::Bundle(b) => b.poll(now),
            DirLink::Rlp(r) => r.poll(now),
        }
    }

    pub(super) fn next_wakeup(&self) -> Option<SimTime> {
        match self {
            DirLink::Link(l) => l.next_wakeup(),
            DirLink::Bundle(b) => b.next_wakeup(),
            DirLink::Rlp(r) => r.next_wakeup(),
        }
    }

    pub(super) fn queue_len_pkts(&self) -> usize {
        match self {
            DirLink::Link(l) => l.queue_len_pkts(),
            DirLink::Bundle(b) => b.queue_len_pkts(),
            DirLink::Rlp(r) => r.queue_len_pkts(),
        }
    }

    pub(super) fn queue_len_bytes(&self) -> u64 {
        match self {
            DirLink::Link(l) => l.queue_len_bytes(),
            DirLink::Bundle(b) => b.queue_len_bytes(),
            DirLink::Rlp(r) => r.queue_len_bytes(),
        }
    }

    pub(super) fn in_flight_pkts(&self) -> u64 {
        match self {
            DirLink::Link(l) => l.in_flight_pkts(),
            DirLink::Bundle(b) => b.in_flight_pkts(),
            DirLink::Rlp(r) => r.in_flight_pkts(),
        }
    }

    pub(super) fn conservation_holds(&self) -> bool {
        match self {
            DirLink::Link(l) => l.conservation_holds(),
            DirLink::Bundle(b) => b.conservation_holds(),
            DirLink::Rlp(r) => r.conservation_holds(),
        }
    }

    pub(super) fn stats(&self) -> &LinkStats {
        match self {
            DirLink::Link(l) => l.stats(),
            DirLink::Bundle(b) => b.stats(),
            DirLink::Rlp(r) => r.link_stats(),
        }
    }

    /// Packets dropped, by drop-cause code.
    pub(super) fn drops_by_cause(&self) -> [u64; N_DROP_CAUSES] {
        match self {
            DirLink::Link(l) => {
                let mut d = [0; N_DROP_CAUSES];
                for cause in DropCause::ALL {
                    d[usize::from(crate::trace::drop_cause_code(cause))] =
                        l.stats().dropped_pkts(cause);
                }
                d
            }
            DirLink::Bundle(b) => b.drops_by_cause(),
            DirLink::Rlp(r) => {
                let mut d = [0; N_DROP_CAUSES];
                for cause in DropCause::ALL {
                    d[usize::from(crate::trace::drop_cause_code(cause))] = r.dropped_pkts(cause);
                }
                d
            }
        }
    }

    pub(super) fn set_departure_log(&mut self, on: bool) {
        match self {
            DirLink::Link(l) => l.set_departure_log(on),
            DirLink::Bundle(b) => b.set_departure_log(on),
            DirLink::Rlp(r) => r.set_departure_log(on),
        }
    }

    pub(super) fn pop_departure(&mut self) -> Option<Departure> {
        match self {
            DirLink::Link(l) => l.pop_departure(),
            DirLink::Bundle(b) => b.pop_departure(),
            DirLink::Rlp(r) => r.pop_departure(),
        }
    }

    pub(super) fn bundle(&self) -> Option<&BundleDir<AnyLoss>> {
        match self {
            DirLink::Bundle(b) => Some(b),
            _ => None,
        }
    }

    pub(super) fn rlp(&self) -> Option<&RlpLink<SharedChannel<AnyLoss>, SharedChannel<AnyLoss>>> {
        match self {
            DirLink::Rlp(r) => Some(r),
            _ => None,
        }
    }

    fn bundle_mut(&mut self) -> Option<&mut BundleDir<AnyLoss>> {
        match self {
            DirLink::Bundle(b) => Some(b),
            _ => None,
        }
    }
}

/// Both directions of radio hop `l` (index `i`), forward first. Each direction of the air
/// interface is one channel (`link:<name>:<dir>:loss`), crossed by that direction's data frames
/// and by the NAKs of the other direction's receiver.
pub(super) fn rlp_dirs(seed: u64, i: usize, l: &LinkSpec) -> Result<[DirLink; 2], ScenarioError> {
    let Some(r) = &l.rlp else {
        return Err(ScenarioError::new(
            format!("links[{i}]"),
            "internal: not a radio hop",
        ));
    };
    let channel = |forward: bool| -> Result<SharedChannel<AnyLoss>, ScenarioError> {
        let d = super::direction_name(forward);
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
        RlpLink::new(r.config(l.direction(forward)), data.clone(), naks.clone())
            .map(|link| DirLink::Rlp(Box::new(link)))
            .map_err(|e| ScenarioError::new(format!("links[{i}].rlp.{}", e.param), e.message))
    };
    Ok([dir(true, &fwd, &rev)?, dir(false, &rev, &fwd)?])
}

/// The data plane of direction `forward` of bundle link `l` (index `i`).
pub(super) fn bundle_dir(
    seed: u64,
    i: usize,
    l: &LinkSpec,
    forward: bool,
) -> Result<DirLink, ScenarioError> {
    let Some(b) = &l.bundle else {
        return Err(ScenarioError::new(
            format!("links[{i}]"),
            "internal: not a bundle",
        ));
    };
    let d = super::direction_name(forward);
    let spec = l.direction(forward);
    let mut losses = Vec::with_capacity(b.members.len());
    for k in 0..b.members.len() {
        let rng = StreamRng::derive(seed, &format!("link:{}:{d}:member{k}:loss", l.name));
        losses.push(
            spec.loss
                .build(rng)
                .map_err(|e| ScenarioError::new(format!("links[{i}].{d}.loss"), e.to_string()))?,
        );
    }
    let cfg = BundleDirConfig {
        members: b
            .members
            .iter()
            .map(|m| MemberDirConfig {
                rate_bps: m.rate_bps,
                delay: m.delay,
                txqueue_pkts: m.txqueue_pkts,
                arq: m.arq,
            })
            .collect(),
        queue_limit: spec.queue,
        fragment: b.fragment,
        mp_header_bytes: b.mp_header_bytes,
        reassembly_timeout: b.reassembly_timeout,
    };
    let dir = BundleDir::new(&cfg, losses)
        .map_err(|e| ScenarioError::new(format!("links[{i}].bundle"), e.to_string()))?;
    Ok(DirLink::Bundle(Box::new(dir)))
}

/// A bundle at run time: its control plane and the draws it needs.
#[derive(Debug)]
pub(super) struct BundleRt {
    /// Index of the link in the scenario.
    pub(super) link: u32,
    pub(super) control: BundleControl,
    timer: Timer,
    /// The two directions, indices into `World::dirs`.
    dirs: [usize; 2],
    drop_rngs: Vec<StreamRng>,
    dial_rngs: Vec<StreamRng>,
    drop_rates_per_s: Vec<f64>,
    dial_time: SimDuration,
    dial_failure_prob: f64,
}

impl BundleRt {
    pub(super) fn new(
        seed: u64,
        i: usize,
        l: &LinkSpec,
    ) -> Result<Option<BundleRt>, ScenarioError> {
        let Some(b) = &l.bundle else {
            return Ok(None);
        };
        let n = b.members.len();
        let control = BundleControl::new(
            ControlConfig {
                supervisor: SupervisorConfig {
                    members: n as u32,
                    modem: b.modem,
                    primary: b.primary,
                    start_connected: b.start_connected,
                },
                detection_delay: b.detection_delay,
                member_rates_bps: b.members.iter().map(|m| m.rate_bps).collect(),
            },
            SimTime::ZERO,
        )
        .map_err(|e| ScenarioError::new(format!("links[{i}].bundle"), e.to_string()))?;
        let stream = |k: usize, what: &str| {
            StreamRng::derive(seed, &format!("link:{}:member{k}:{what}", l.name))
        };
        Ok(Some(BundleRt {
            link: i as u32,
            control,
            timer: Timer::default(),
            dirs: [i * 2, i * 2 + 1],
            drop_rngs: (0..n).map(|k| stream(k, "calldrop")).collect(),
            dial_rngs: (0..n).map(|k| stream(k, "dial")).collect(),
            drop_rates_per_s: b.members.iter().map(|m| m.call_drop_rate_per_s).collect(),
            dial_time: b.dial_time,
            dial_failure_prob: b.dial_failure_prob,
        }))
    }
}

impl World<'_> {
    /// Applies every bundle's first commands (members up, or first dials) at time zero.
    pub(super) fn start_bundles(&mut self) {
        for b in 0..self.bundles.len() {
            self.apply_bundle_commands(b);
        }
    }

    pub(super) fn on_bundle_timer(&mut self, b: usize, gen: u32) {
        if self.bundles[b].timer.fire(gen) {
            let now = self.now;
            self.bundles[b].control.on_timer(now);
            self.apply_bundle_commands(b);
        }
    }

    pub(super) fn on_call_drop(&mut self, b: usize, member: u32, conn: u32) {
        let now = self.now;
        self.bundles[b].control.on_call_drop(now, member, conn);
        self.apply_bundle_commands(b);
    }

    pub(super) fn on_dial_done(&mut self, b: usize, member: u32, attempt: u32, ok: bool) {
        let now = self.now;
        self.bundles[b]
            .control
            .on_dial_result(now, member, attempt, ok);
        self.apply_bundle_commands(b);
    }

    /// Carries out what bundle `b`'s control plane decided, then re-arms its directions and
    /// its timer.
    fn apply_bundle_commands(&mut self, b: usize) {
        let now = self.now;
        let link = self.bundles[b].link;
        let dirs = self.bundles[b].dirs;
        while let Some(cmd) = self.bundles[b].control.poll_command() {
            match cmd {
                ControlCommand::Dial { member, attempt } => {
                    let rt = &mut self.bundles[b];
                    let m = member as usize;
                    let ok = !rt.dial_rngs[m].bernoulli(rt.dial_failure_prob);
                    let at = now + rt.dial_time;
                    if at <= self.end {
                        self.queue.push(
                            at,
                            Event::DialDone {
                                bundle: b as u32,
                                member,
                                attempt,
                                ok,
                            },
                        );
                    }
                }
                ControlCommand::CarrierUp { member, conn } => {
                    for d in dirs {
                        if let Some(dir) = self.dirs[d].link.bundle_mut() {
                            dir.member_up(now, member as usize);
                        }
                    }
                    let rt = &mut self.bundles[b];
                    let m = member as usize;
                    let rate = rt.drop_rates_per_s[m];
                    if rate > 0.0 {
                        let gap_ns = libm::round(rt.drop_rngs[m].exponential(1e9 / rate));
                        // `as` saturates; a draw beyond the run is simply never reached.
                        let at = SimTime::from_nanos(now.as_nanos().saturating_add(gap_ns as u64));
                        if at <= self.end {
                            self.queue.push(
                                at,
                                Event::CallDrop {
                                    bundle: b as u32,
                                    member,
                                    conn,
                                },
                            );
                        }
                    }
                }
                ControlCommand::CarrierLost { member } => {
                    for d in dirs {
                        if let Some(dir) = self.dirs[d].link.bundle_mut() {
                            dir.member_lost(now, member as usize);
                        }
                    }
                }
                ControlCommand::Usable { member, usable } => {
                    for d in dirs {
                        if let Some(dir) = self.dirs[d].link.bundle_mut() {
                            dir.set_usable(now, member as usize, usable);
                        }
                    }
                }
                ControlCommand::State { member, state } => {
                    if self.tr.member_state {
                        self.traces
                            .member_state
                            .push(now, link, member, state.code());
                    }
                }
                ControlCommand::Capacity {
                    members_up,
                    capacity_bps,
                } => {
                    if self.tr.capacity {
                        self.traces
                            .capacity
                            .push(now, link, members_up, capacity_bps);
                    }
                }
            }
        }
        for d in dirs {
            self.take_departures(d);
            self.after_link(d);
        }
        let rt = &mut self.bundles[b];
        rt.timer
            .arm(rt.control.next_wakeup(), now, &mut self.queue, |gen| {
                Event::BundleTimer {
                    bundle: b as u32,
                    gen,
                }
            });
    }
}

impl World<'_> {
    /// The summary of link `i` if it is a bundle, over the run up to `end`.
    pub(super) fn bundle_summary(&self, i: usize, end: SimTime) -> Option<BundleSummary> {
        let spec = self.sc.links()[i].bundle.as_ref()?;
        let rt = self.bundles.iter().find(|b| b.link as usize == i)?;
        let stats = rt.control.stats();
        let avail = rt.control.availability(end);
        let observed = avail.observed_ns.max(1) as f64;
        let direction = |forward: bool| -> BundleDirectionSummary {
            let d = dir_index(Hop { link: i, forward }) as usize;
            let Some(dir) = self.dirs[d].link.bundle() else {
                return BundleDirectionSummary {
                    units_sent: 0,
                    units_arrived: 0,
                    units_lost: cause_map([0; N_DROP_CAUSES]),
                    units_into_the_void: 0,
                    fragmented_pkts: 0,
                    late_units: 0,
                    reassembly_timeouts: 0,
                    arq_frames_sent: 0,
                    arq_frames_resent: 0,
                    arq_frames_damaged: 0,
                    arq_frames_given_up: 0,
                };
            };
            let u = dir.unit_stats();
            let r = dir.reassembly_stats();
            let mut arq = [0u64; 4];
            for a in dir.member_arq_stats() {
                if spec.arq_mode.is_some() {
                    arq[0] += a.frames_sent;
                    arq[1] += a.frames_resent;
                    arq[2] += a.frames_damaged;
                    arq[3] += a.frames_given_up;
                }
            }
            BundleDirectionSummary {
                units_sent: u.units_sent,
                units_arrived: u.units_arrived,
                units_lost: cause_map(u.units_lost),
                units_into_the_void: u.units_into_the_void,
                fragmented_pkts: u.fragmented_pkts,
                late_units: r.late_units,
                reassembly_timeouts: r.timeouts,
                arq_frames_sent: arq[0],
                arq_frames_resent: arq[1],
                arq_frames_damaged: arq[2],
                arq_frames_given_up: arq[3],
            }
        };
        let member_up_ns: u64 = avail.member_up_ns.iter().sum();
        Some(BundleSummary {
            members: spec.members.iter().map(|m| m.name.clone()).collect(),
            primary: spec.primary,
            arq: spec.arq_mode.map(|m| m.name()),
            fragment: spec.fragment,
            call_drops: stats.call_drops,
            drops_noticed: stats.supervisor.call_drops,
            hangups: stats.hangups,
            teardowns: stats.supervisor.teardowns,
            dials: stats.supervisor.dials,
            dial_failures: stats.supervisor.dial_failures,
            blocks: stats.supervisor.blocks,
            outages: avail.outages,
            all_up_fraction: avail.all_up_ns as f64 / observed,
            any_up_fraction: avail.any_up_ns as f64 / observed,
            mean_members_up: member_up_ns as f64 / observed,
            member_uptime: avail
                .member_up_ns
                .iter()
                .map(|&ns| ns as f64 / observed)
                .collect(),
            fwd: direction(true),
            rev: direction(false),
        })
    }
}

impl World<'_> {
    /// The summary of link `i` if it is a radio hop with RLP, over the run up to `end`.
    pub(super) fn rlp_summary(&self, i: usize, end: SimTime) -> Option<RlpSummary> {
        let spec = self.sc.links()[i].rlp.as_ref()?;
        let direction = |forward: bool| -> Option<RlpDirectionSummary> {
            let d = dir_index(Hop { link: i, forward }) as usize;
            let r = self.dirs[d].link.rlp()?;
            let s = r.stats();
            let slots = end.as_nanos() / r.config().slot().as_nanos().max(1);
            Some(RlpDirectionSummary {
                data_frames_sent: s.data_frames_sent,
                frames_resent: s.frames_resent,
                frames_damaged: s.frames_damaged,
                idle_frames_sent: r.idle_frames_sent(end),
                idle_frames_drawn: s.idle_frames_drawn,
                idle_frames_damaged: s.idle_frames_damaged,
                nak_frames_sent: s.nak_frames_sent,
                nak_frames_lost: s.nak_frames_lost,
                missing_by_data: s.missing_by_data,
                missing_by_idle: s.missing_by_idle,
                frames_given_up: s.frames_given_up,
                packets_given_up: s.units_given_up,
                slot_utilization: if slots > 0 {
                    (s.data_frames_sent + s.frames_resent) as f64 / slots as f64
                } else {
                    0.0
                },
            })
        };
        let fwd = direction(true)?;
        let cfg = spec.config(self.sc.links()[i].direction(true));
        Some(RlpSummary {
            idle_frames: spec.idle.to_string(),
            nak_rounds: spec.nak_rounds,
            nak_timer_s: cfg.nak_timer.as_secs_f64(),
            fwd,
            rev: direction(false)?,
        })
    }
}
