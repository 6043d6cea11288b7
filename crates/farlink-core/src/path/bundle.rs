//! [`BundleDriver`]: a bundle's control plane at run time, driven by whoever owns the clock.
//!
//! A bundle link is, in each direction, a [`crate::links::mlppp::BundleDir`] (its data plane), and one
//! [`BundleControl`] for the members' calls, which both directions share. The driver owns the
//! randomness the components do not draw themselves, each from its own stream:
//!
//! * call drops: a member's call lasts an exponential time of mean 1/β from the moment it is
//!   up (`link:<name>:member<k>:calldrop`), so drops form a Poisson process of rate β over
//!   its up-time (seed 000 section 5.3); the draw is tagged with the connection, so a call
//!   that ended otherwise (hung up) ignores it;
//! * dial outcomes: each dial fails with `dial_failure_prob` (`link:<name>:member<k>:dial`)
//!   and answers after `dial_time`.
//!
//! It applies the control plane's commands to both directions at the instant they are decided
//! and hands its caller what the caller must do: wake it at an instant with a
//! [`BundleEvent`], and record member states and capacity ([`BundleOutput`]). It never reads a
//! clock: every entry point takes `now`.

use super::dir::LinkDir;
use crate::links::mlppp::{BundleControl, ControlCommand, ControlConfig};
use crate::modem::SupervisorConfig;
use crate::rng::StreamRng;
use crate::scenario::{LinkSpec, ScenarioError};
use crate::time::{SimDuration, SimTime};

/// Something the driver wants handed back to it at an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BundleEvent {
    /// The call of member `member` (connection `conn`) drops.
    CallDrop { member: u32, conn: u32 },
    /// Member `member`'s dial (attempt `attempt`) answers.
    DialDone { member: u32, attempt: u32, ok: bool },
}

/// What the driver tells its caller, in the order it was decided.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BundleOutput {
    /// Call [`BundleDriver::handle`] with `event` at `at` (a caller whose run ends earlier may
    /// forget it: the draw behind it is already made).
    Schedule { at: SimTime, event: BundleEvent },
    /// Member `member` entered the modem state of code `state`.
    MemberState { member: u32, state: u8 },
    /// The bundle's capacity changed.
    Capacity { members_up: u32, capacity_bps: u64 },
    /// The driver applied `change` to member `member` of both directions: a caller that
    /// carries traffic over the members one by one (Multipath TCP's subflows) applies it
    /// to its own member links too.
    Member { member: u32, change: MemberChange },
}

/// What happened to a member's link, as the driver applied it to the bundle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemberChange {
    /// Its call is up (`BundleDir::member_up`).
    CarrierUp,
    /// Its call dropped; what it held is lost (`BundleDir::member_lost`).
    CarrierLost,
    /// MLPPP may (or may no longer) send to it (`BundleDir::set_usable`): the drop was noticed,
    /// or the member is back.
    Usable(bool),
}

/// The draws a bundle member makes, each from its own stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemberDraw {
    /// How long each call lasts (`link:<name>:member<k>:calldrop`).
    CallDrop,
    /// Whether each dial succeeds (`link:<name>:member<k>:dial`).
    Dial,
}

/// The stream of draw `what` of member `k` of the bundle link `link_name`: the simulator's
/// and every other consumer's (the link manager's simulated modems), so one seed gives the
/// same calls everywhere.
pub fn member_stream(seed: u64, link_name: &str, k: usize, what: MemberDraw) -> StreamRng {
    let what = match what {
        MemberDraw::CallDrop => "calldrop",
        MemberDraw::Dial => "dial",
    };
    StreamRng::derive(seed, &format!("link:{link_name}:member{k}:{what}"))
}

/// Whether a dial succeeds: it fails with `failure_prob` (one draw whatever the probability).
pub fn draw_dial_ok(rng: &mut StreamRng, failure_prob: f64) -> bool {
    !rng.bernoulli(failure_prob)
}

/// How long a call lasts at call-drop rate `rate_per_s` (exponential, so drops are Poisson
/// over the up-time, seed 000 section 5.3), rounded to the nanosecond; `None` (and no draw)
/// without call drops (a rate that is not above 0). A draw beyond `u64` nanoseconds saturates: it is never reached.
pub fn draw_call_duration(rng: &mut StreamRng, rate_per_s: f64) -> Option<SimDuration> {
    if rate_per_s.is_nan() || rate_per_s <= 0.0 {
        return None;
    }
    let gap_ns = libm::round(rng.exponential(1e9 / rate_per_s));
    // `as` saturates.
    Some(SimDuration::from_nanos(gap_ns as u64))
}

/// A bundle at run time: its control plane and the draws it needs.
#[derive(Debug)]
pub struct BundleDriver {
    /// Index of the link in the scenario.
    link: u32,
    control: BundleControl,
    drop_rngs: Vec<StreamRng>,
    dial_rngs: Vec<StreamRng>,
    drop_rates_per_s: Vec<f64>,
    dial_time: SimDuration,
    dial_failure_prob: f64,
}

impl BundleDriver {
    /// The driver of link `l` (index `i`) if it is a bundle.
    pub fn new(seed: u64, i: usize, l: &LinkSpec) -> Result<Option<BundleDriver>, ScenarioError> {
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
                member_rates: b.members.iter().map(|m| m.rate).collect(),
            },
            SimTime::ZERO,
        )
        .map_err(|e| ScenarioError::new(format!("links[{i}].bundle"), e.to_string()))?;
        Ok(Some(BundleDriver {
            link: i as u32,
            control,
            drop_rngs: (0..n)
                .map(|k| member_stream(seed, &l.name, k, MemberDraw::CallDrop))
                .collect(),
            dial_rngs: (0..n)
                .map(|k| member_stream(seed, &l.name, k, MemberDraw::Dial))
                .collect(),
            drop_rates_per_s: b.members.iter().map(|m| m.call_drop_rate_per_s).collect(),
            dial_time: b.dial_time,
            dial_failure_prob: b.dial_failure_prob,
        }))
    }

    /// Index of the bundle's link in the scenario; its directions are
    /// [`super::dir_index`] of it.
    pub fn link(&self) -> usize {
        self.link as usize
    }

    pub fn control(&self) -> &BundleControl {
        &self.control
    }

    /// When the control plane next wants [`on_timer`](Self::on_timer).
    pub fn next_wakeup(&self) -> Option<SimTime> {
        self.control.next_wakeup()
    }

    /// The first commands (members up, or first dials), at the start of the run.
    pub fn start(
        &mut self,
        now: SimTime,
        dirs: [&mut LinkDir; 2],
        out: &mut impl FnMut(BundleOutput),
    ) {
        self.apply(now, dirs, out);
    }

    /// The control plane's own timer (a drop noticed, a modem timer) is due.
    pub fn on_timer(
        &mut self,
        now: SimTime,
        dirs: [&mut LinkDir; 2],
        out: &mut impl FnMut(BundleOutput),
    ) {
        self.control.on_timer(now);
        self.apply(now, dirs, out);
    }

    /// An event this driver scheduled is due.
    pub fn handle(
        &mut self,
        now: SimTime,
        event: BundleEvent,
        dirs: [&mut LinkDir; 2],
        out: &mut impl FnMut(BundleOutput),
    ) {
        match event {
            BundleEvent::CallDrop { member, conn } => {
                self.control.on_call_drop(now, member, conn);
            }
            BundleEvent::DialDone {
                member,
                attempt,
                ok,
            } => self.control.on_dial_result(now, member, attempt, ok),
        }
        self.apply(now, dirs, out);
    }

    /// Carries out what the control plane decided, on both directions at once.
    fn apply(&mut self, now: SimTime, dirs: [&mut LinkDir; 2], out: &mut impl FnMut(BundleOutput)) {
        let [fwd, rev] = dirs;
        while let Some(cmd) = self.control.poll_command() {
            match cmd {
                ControlCommand::Dial { member, attempt } => {
                    let m = member as usize;
                    let ok = draw_dial_ok(&mut self.dial_rngs[m], self.dial_failure_prob);
                    out(BundleOutput::Schedule {
                        at: now + self.dial_time,
                        event: BundleEvent::DialDone {
                            member,
                            attempt,
                            ok,
                        },
                    });
                }
                ControlCommand::CarrierUp { member, conn } => {
                    for dir in [&mut *fwd, &mut *rev] {
                        if let Some(b) = dir.bundle_mut() {
                            b.member_up(now, member as usize);
                        }
                    }
                    out(BundleOutput::Member {
                        member,
                        change: MemberChange::CarrierUp,
                    });
                    let m = member as usize;
                    let rate = self.drop_rates_per_s[m];
                    if let Some(gap) = draw_call_duration(&mut self.drop_rngs[m], rate) {
                        let at = SimTime::from_nanos(now.as_nanos().saturating_add(gap.as_nanos()));
                        out(BundleOutput::Schedule {
                            at,
                            event: BundleEvent::CallDrop { member, conn },
                        });
                    }
                }
                ControlCommand::CarrierLost { member } => {
                    for dir in [&mut *fwd, &mut *rev] {
                        if let Some(b) = dir.bundle_mut() {
                            b.member_lost(now, member as usize);
                        }
                    }
                    out(BundleOutput::Member {
                        member,
                        change: MemberChange::CarrierLost,
                    });
                }
                ControlCommand::Usable { member, usable } => {
                    for dir in [&mut *fwd, &mut *rev] {
                        if let Some(b) = dir.bundle_mut() {
                            b.set_usable(now, member as usize, usable);
                        }
                    }
                    out(BundleOutput::Member {
                        member,
                        change: MemberChange::Usable(usable),
                    });
                }
                ControlCommand::State { member, state } => out(BundleOutput::MemberState {
                    member,
                    state: state.code(),
                }),
                ControlCommand::Capacity {
                    members_up,
                    capacity_bps,
                } => out(BundleOutput::Capacity {
                    members_up,
                    capacity_bps,
                }),
            }
        }
    }
}
