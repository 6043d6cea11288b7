//! Bundle links in the engine: the glue between the event queue and the path runtime's
//! [`BundleDriver`]s ([`crate::path`]), and the summaries of bundles and radio hops.
//!
//! Each bundle's driver decides (calls, drops, dials, the supervisor's commands) and applies
//! its commands to both directions; this module turns what the driver wants done later into
//! events on the queue (those beyond the run's end are dropped, their draws already made),
//! records member states and capacity, and arms one lazy timer per bundle.

use super::summary::{
    BundleCalls, BundleDirectionSummary, BundleSummary, RlpDirectionSummary, RlpSummary,
};
use super::{cause_map, Dir, Event, Timer, World};
use crate::links::link::N_DROP_CAUSES;
use crate::path::{dir_index, BundleDriver, BundleEvent, BundleOutput, LinkDir};
use crate::scenario::Hop;
use crate::time::SimTime;

/// A bundle in the engine: its driver and its timer.
#[derive(Debug)]
pub(super) struct BundleRt {
    pub(super) driver: BundleDriver,
    timer: Timer,
}

impl BundleRt {
    pub(super) fn new(driver: BundleDriver) -> BundleRt {
        BundleRt {
            driver,
            timer: Timer::default(),
        }
    }
}

/// The two directions of link `link`, forward first.
fn both_dirs(dirs: &mut [Dir], link: usize) -> [&mut LinkDir; 2] {
    let [fwd, rev] = &mut dirs[link * 2..link * 2 + 2] else {
        unreachable!("every link has two directions")
    };
    [&mut fwd.link, &mut rev.link]
}

/// What drives bundle `b` next: the start, its timer, or an event it scheduled.
#[derive(Clone, Copy)]
enum Step {
    Start,
    Timer,
    Event(BundleEvent),
}

impl World<'_> {
    /// Applies every bundle's first commands (members up, or first dials) at time zero.
    pub(super) fn start_bundles(&mut self) {
        for b in 0..self.bundles.len() {
            self.drive_bundle(b, Step::Start);
        }
    }

    pub(super) fn on_bundle_timer(&mut self, b: usize, gen: u32) {
        if self.bundles[b].timer.fire(gen) {
            self.drive_bundle(b, Step::Timer);
        }
    }

    pub(super) fn on_bundle_event(&mut self, b: usize, event: BundleEvent) {
        self.drive_bundle(b, Step::Event(event));
    }

    /// Lets bundle `b`'s driver act at the current instant, carries out what it hands back,
    /// then re-arms its directions and its timer.
    fn drive_bundle(&mut self, b: usize, step: Step) {
        let now = self.now;
        let end = self.end;
        let rt = &mut self.bundles[b];
        let link = rt.driver.link();
        let dirs = both_dirs(&mut self.dirs, link);
        let (queue, traces, tr) = (&mut self.queue, &mut self.traces, self.tr);
        // Member changes for the members' own links (Multipath TCP's subflows), if any.
        let mut changes = Vec::new();
        let members_carry = !self.member_links.is_empty();
        let mut out = |o: BundleOutput| match o {
            BundleOutput::Schedule { at, event } => {
                if at <= end {
                    queue.push(at, Event::bundle(b as u32, event));
                }
            }
            BundleOutput::MemberState { member, state } => {
                if tr.member_state {
                    traces.member_state.push(now, link as u32, member, state);
                }
            }
            BundleOutput::Capacity {
                members_up,
                capacity_bps,
            } => {
                if tr.capacity {
                    traces
                        .capacity
                        .push(now, link as u32, members_up, capacity_bps);
                }
            }
            BundleOutput::Member { member, change } => {
                if members_carry {
                    changes.push((member, change));
                }
            }
        };
        match step {
            Step::Start => rt.driver.start(now, dirs, &mut out),
            Step::Timer => rt.driver.on_timer(now, dirs, &mut out),
            Step::Event(event) => rt.driver.handle(now, event, dirs, &mut out),
        }
        for forward in [true, false] {
            let d = dir_index(Hop { link, forward });
            self.take_departures(d);
            self.after_link(d);
        }
        for (member, change) in changes {
            self.mptcp_member_change(link, member, change);
        }
        let rt = &mut self.bundles[b];
        rt.timer
            .arm(rt.driver.next_wakeup(), now, &mut self.queue, |gen| {
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
        let rt = self.bundles.iter().find(|b| b.driver.link() == i)?;
        let control = rt.driver.control();
        let stats = control.stats();
        let avail = control.availability(end);
        let observed = avail.observed_ns.max(1) as f64;
        let direction = |forward: bool| -> BundleDirectionSummary {
            let d = dir_index(Hop { link: i, forward });
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
            calls: BundleCalls::from(stats),
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
            let d = dir_index(Hop { link: i, forward });
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
