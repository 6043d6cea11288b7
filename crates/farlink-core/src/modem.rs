//! The modem state machine of seed 000 Figure 7.2 and the bundle supervisor of KUMICS
//! (seed 000 section 7.3), as one sans-I/O component.
//!
//! Read first: seed 000 section 7.1 (the states and their timers), section 7.3 (the primary
//! modem and the secondaries), and section 5.1 (what a call drop is).
//!
//! This module owns the *decisions* of the link-management daemon: when a member is dialled,
//! when it is given up for a while, which member is the primary, and when a member may carry
//! traffic. It owns no randomness and no clock: the caller hands it `now` with every input,
//! reports the outcome of each dial it asked for and each call drop it observed, and asks
//! [`Supervisor::next_wakeup`] when to call [`Supervisor::on_timer`]. The discrete-event engine
//! draws dial outcomes and call drops from seeded streams and feeds them in; the link-management
//! daemon feeds in what real modems answer. Both run this code.
//!
//! ```text
//!             dial ok                    call dropped (detected)
//!  CONNECTING ───────▶ CONNECTED ──────────────────────────────▶ DROPPED ── T_d ──┐
//!     ▲   │ dial failed                                                           │
//!     │   ├──────────▶ FAILED ── T_f ─────────────────────────────────────────────┤
//!     │   └ (Max_Attempts failures in a row) ▶ BLOCKED ── blocked_for (~1 h) ─────┤
//!     └───────────────────────────────────────────────────────────────────────────┘
//!  IDLE: a secondary waiting for the primary (primary option only); not in Figure 7.2.
//! ```
//!
//! # Inputs and outputs
//!
//! Inputs: [`Supervisor::on_call_dropped`] (the daemon *noticed* a call drop: pppd's link
//! failure, not the instant the call was lost), [`Supervisor::on_dial_result`] (the outcome of a
//! dial, tagged with the attempt it answers) and [`Supervisor::on_timer`]. Outputs, taken with
//! [`Supervisor::poll_command`]: [`Command::Dial`] (dial this member; answer with this attempt
//! number), [`Command::Up`] / [`Command::Down`] (the member may / may no longer carry traffic;
//! `Down` of a member whose call is still up means hang it up) and [`Command::State`] (every
//! state change, for the connection database of Figure 7.4 and the traces). The next timer is a
//! query, [`Supervisor::next_wakeup`].
//!
//! # Primary option (seed 000 sections 6.1 and 7.3)
//!
//! With `primary`, the bundle is created by one modem: the primary is dialled first and the
//! secondaries only once it is connected; a secondary waiting for it is `Idle`. When the
//! primary's call drop is noticed, the bundle disappears ("a primary link is a link that its loss
//! causes the whole bundle to be dropped", section 6.1): every connected secondary is hung up,
//! dials in progress are abandoned (their results, when they come, are ignored), and a new
//! primary is selected: the modem "with the best call-drops history" (section 7.3), i.e. the
//! fewest call drops so far, ties to the lowest index, among those not blocked. A primary that
//! exhausts its attempts is blocked and another is selected; if every modem is blocked, the
//! first to leave the blocked state becomes the primary. Without the option every member is
//! independent (the assumption of the chapter 6 model).
//!
//! # Choices where the seed is silent (see `docs/far-links.md`)
//!
//! * `Max_Attempts` counts *consecutive* failed dials (pppd's `maxfail`, default 10); a success
//!   resets it, and so does leaving the blocked state. 0 means no limit (as for pppd).
//! * A member in `Dropped`, `Failed` or `Blocked` whose timer fires while it may not dial (a
//!   secondary whose primary is not connected) becomes `Idle`.
//! * Inputs that do not match the state (a drop of a member not connected, a dial result for
//!   an abandoned or superseded attempt) are ignored: a real daemon sees such races.
//!
//! # What the link-management daemon adds (the simulator never calls these)
//!
//! * [`Supervisor::hold`]: the operator takes a member out of service. A dial in progress is
//!   abandoned (its result, when it comes, is ignored), a call is hung up (`Down`), a timer is
//!   cancelled; the member waits `Idle` and is never dialled, nor chosen as primary, until
//!   [`Supervisor::release`]. Holding the primary tears the bundle down as its call drop
//!   would (section 6.1), since the bundle goes with it.
//! * [`Supervisor::snapshot`] and [`Supervisor::restore`]: the state a restarted daemon resumes
//!   from. Timers are absolute (the daemon's clock is the wall clock), so a modem blocked for
//!   an hour stays blocked for the rest of that hour across a restart; the call-drop history
//!   that chooses the primary, the consecutive failures, the held members and the counters
//!   carry over. A call cannot outlive the daemon that held its port, so a member that was
//!   connected or dialling is dialled again (or waits `Idle` for its primary).

use std::collections::VecDeque;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;
use crate::time::{SimDuration, SimTime};

/// pppd's `holdoff`: "seconds to pause before reconnecting" (pppd 2.4 `main.c`, default 30).
pub const DEFAULT_T_D: SimDuration = SimDuration::from_secs(30);
/// The pause after a failed dial; pppd in `persist` mode applies the same `holdoff`.
pub const DEFAULT_T_F: SimDuration = SimDuration::from_secs(30);
/// pppd's `maxfail`: "max # of unsuccessful connection attempts" (pppd 2.4, default 10).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 10;
/// Seed 000 section 7.1: the blocked modem "stays idle ... for a relatively long period of time
/// (approximately for one hour)".
pub const DEFAULT_BLOCKED_FOR: SimDuration = SimDuration::from_secs(3600);

/// The states of one modem (Figure 7.2, plus `Idle`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModemState {
    /// Not dialling: a secondary waiting for the primary to connect (primary option only).
    Idle,
    /// Dialling the far end; a [`Command::Dial`] is outstanding.
    Connecting,
    /// The call is up and the member is in the bundle.
    Connected,
    /// A call drop was noticed; idle for `t_d`.
    Dropped,
    /// A dial failed; idle for `t_f`.
    Failed,
    /// `max_attempts` dials failed in a row; idle for `blocked_for`.
    Blocked,
}

impl ModemState {
    /// The state's name as Figure 7.2 spells it (lower case).
    pub fn name(self) -> &'static str {
        match self {
            ModemState::Idle => "idle",
            ModemState::Connecting => "connecting",
            ModemState::Connected => "connected",
            ModemState::Dropped => "dropped",
            ModemState::Failed => "failed",
            ModemState::Blocked => "blocked",
        }
    }
}

impl fmt::Display for ModemState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The timers and the attempt bound of Figure 7.2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModemConfig {
    /// Time in `Dropped` before dialling again.
    pub t_d: SimDuration,
    /// Time in `Failed` before dialling again.
    pub t_f: SimDuration,
    /// Consecutive failed dials that block the modem; 0 for no limit.
    pub max_attempts: u32,
    /// Time in `Blocked`.
    pub blocked_for: SimDuration,
}

impl Default for ModemConfig {
    fn default() -> Self {
        ModemConfig {
            t_d: DEFAULT_T_D,
            t_f: DEFAULT_T_F,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            blocked_for: DEFAULT_BLOCKED_FOR,
        }
    }
}

/// A bundle of modems under one supervisor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SupervisorConfig {
    /// Number of modems (members), at least 1.
    pub members: u32,
    pub modem: ModemConfig,
    /// KUMICS's primary modem: its loss drops the bundle (section 7.3).
    pub primary: bool,
    /// Every member starts connected (like TCP connections that start established); otherwise
    /// the supervisor starts dialling at the first instant.
    pub start_connected: bool,
}

/// What the supervisor asks of its environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Dial `member`; report the outcome with [`Supervisor::on_dial_result`] and this attempt.
    Dial { member: u32, attempt: u32 },
    /// `member` is connected: it may carry traffic.
    Up { member: u32 },
    /// `member` may no longer carry traffic; if its call is still up, hang it up.
    Down { member: u32 },
    /// `member` entered `state`.
    State { member: u32, state: ModemState },
}

/// Counters since the supervisor was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SupervisorStats {
    pub dials: u64,
    pub dial_failures: u64,
    /// Entries into `Blocked`.
    pub blocks: u64,
    /// Call drops noticed (of connected members).
    pub call_drops: u64,
    /// Bundles torn down by the loss of their primary.
    pub teardowns: u64,
}

#[derive(Clone, Copy, Debug)]
struct Modem {
    state: ModemState,
    timer: Option<SimTime>,
    /// Consecutive failed dials.
    failures: u32,
    /// The attempt number of the outstanding dial (meaningful while `Connecting`).
    attempt: u32,
    /// Call drops so far: the history the primary is selected on.
    drops: u64,
    /// Out of service on the operator's command ([`Supervisor::hold`]).
    held: bool,
}

/// One member in a [`SupervisorSnapshot`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModemSnapshot {
    pub state: ModemState,
    /// When its `Dropped`, `Failed` or `Blocked` period ends, in the daemon's clock (ns).
    pub timer_ns: Option<u64>,
    pub failures: u32,
    pub drops: u64,
    pub held: bool,
}

/// What a restarted daemon resumes from ([`Supervisor::snapshot`], [`Supervisor::restore`]);
/// serialisable, so the daemon can keep it in its log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SupervisorSnapshot {
    pub modems: Vec<ModemSnapshot>,
    pub primary: Option<u32>,
    pub next_attempt: u32,
    pub stats: SupervisorStats,
}

/// The supervisor of a bundle's modems; see the module documentation.
#[derive(Debug)]
pub struct Supervisor {
    cfg: SupervisorConfig,
    modems: Vec<Modem>,
    primary: Option<u32>,
    next_attempt: u32,
    commands: VecDeque<Command>,
    stats: SupervisorStats,
}

impl Supervisor {
    /// A supervisor for `cfg.members` modems starting at `now`: every member connected
    /// (`start_connected`), or dialling (the primary alone, with the primary option).
    pub fn new(cfg: SupervisorConfig, now: SimTime) -> Result<Self, ConfigError> {
        if cfg.members == 0 {
            return Err(ConfigError::new(
                "members",
                "expected at least 1 member, got 0",
            ));
        }
        let n = cfg.members as usize;
        let idle = Modem {
            state: ModemState::Idle,
            timer: None,
            failures: 0,
            attempt: 0,
            drops: 0,
            held: false,
        };
        let mut s = Supervisor {
            cfg,
            modems: vec![idle; n],
            primary: None,
            next_attempt: 0,
            // Each member emits at most a few commands per input; 4 per member covers a
            // teardown of the whole bundle without growing.
            commands: VecDeque::with_capacity(4 * n + 4),
            stats: SupervisorStats::default(),
        };
        if cfg.start_connected {
            for m in 0..cfg.members {
                s.set_state(m, ModemState::Connected, None);
                s.commands.push_back(Command::Up { member: m });
            }
            if cfg.primary {
                s.primary = Some(0);
            }
        } else if cfg.primary {
            for m in 0..cfg.members {
                s.set_state(m, ModemState::Idle, None);
            }
            s.primary = s.select_primary();
            if let Some(p) = s.primary {
                s.dial(p);
            }
        } else {
            for m in 0..cfg.members {
                s.dial(m);
            }
        }
        let _ = now;
        Ok(s)
    }

    pub fn config(&self) -> &SupervisorConfig {
        &self.cfg
    }

    pub fn stats(&self) -> &SupervisorStats {
        &self.stats
    }

    /// The state of `member`.
    pub fn state(&self, member: u32) -> ModemState {
        self.modems[member as usize].state
    }

    /// The current primary (primary option only).
    pub fn primary(&self) -> Option<u32> {
        self.primary
    }

    /// Members in `Connected`.
    pub fn connected(&self) -> u32 {
        self.modems
            .iter()
            .filter(|m| m.state == ModemState::Connected)
            .count() as u32
    }

    /// The next command, in the order they were decided.
    pub fn poll_command(&mut self) -> Option<Command> {
        self.commands.pop_front()
    }

    /// The earliest timer (end of `Dropped`, `Failed` or `Blocked`), if any.
    pub fn next_wakeup(&self) -> Option<SimTime> {
        self.modems.iter().filter_map(|m| m.timer).min()
    }

    /// The call of `member` was noticed to have dropped at `now`. Ignored unless the member
    /// is connected.
    pub fn on_call_dropped(&mut self, now: SimTime, member: u32) {
        let Some(m) = self.modems.get(member as usize) else {
            return;
        };
        if m.state != ModemState::Connected {
            return;
        }
        self.stats.call_drops += 1;
        self.modems[member as usize].drops += 1;
        self.set_state(member, ModemState::Dropped, Some(now + self.cfg.modem.t_d));
        self.commands.push_back(Command::Down { member });
        if self.cfg.primary && self.primary == Some(member) {
            self.tear_down(member);
        }
    }

    /// The dial of `member` numbered `attempt` succeeded (`ok`) or failed at `now`. Ignored
    /// unless the member is still dialling that attempt.
    pub fn on_dial_result(&mut self, now: SimTime, member: u32, attempt: u32, ok: bool) {
        let Some(m) = self.modems.get(member as usize) else {
            return;
        };
        if m.state != ModemState::Connecting || m.attempt != attempt {
            return;
        }
        if ok {
            self.modems[member as usize].failures = 0;
            self.set_state(member, ModemState::Connected, None);
            self.commands.push_back(Command::Up { member });
            if self.cfg.primary && self.primary == Some(member) {
                // The bundle exists: spawn the secondaries (section 7.3).
                for other in 0..self.cfg.members {
                    let o = &self.modems[other as usize];
                    if o.state == ModemState::Idle && !o.held {
                        self.dial(other);
                    }
                }
            }
            return;
        }
        self.stats.dial_failures += 1;
        let modem = &mut self.modems[member as usize];
        modem.failures += 1;
        let max = self.cfg.modem.max_attempts;
        if max > 0 && modem.failures >= max {
            modem.failures = 0;
            self.stats.blocks += 1;
            self.set_state(
                member,
                ModemState::Blocked,
                Some(now + self.cfg.modem.blocked_for),
            );
            if self.cfg.primary && self.primary == Some(member) {
                // "the corresponding modem is blocked for N minutes and another modem is
                // selected" (section 7.3).
                self.primary = self.select_primary();
                if let Some(p) = self.primary {
                    if self.modems[p as usize].state == ModemState::Idle {
                        self.dial(p);
                    }
                }
            }
        } else {
            self.set_state(member, ModemState::Failed, Some(now + self.cfg.modem.t_f));
        }
    }

    /// Ends every `Dropped`, `Failed` and `Blocked` period due at or before `now`, in member
    /// order: the member dials again, or waits `Idle` for its primary.
    pub fn on_timer(&mut self, now: SimTime) {
        for member in 0..self.cfg.members {
            let modem = &mut self.modems[member as usize];
            match modem.timer {
                Some(at) if at <= now => modem.timer = None,
                _ => continue,
            }
            if self.cfg.primary && self.primary.is_none() {
                // Every modem was blocked: the first free one creates the next bundle.
                self.primary = Some(member);
            }
            if self.may_dial(member) {
                self.dial(member);
            } else {
                self.set_state(member, ModemState::Idle, None);
            }
        }
    }

    /// Takes `member` out of service (see the module documentation): a dial is abandoned, a
    /// call hung up, a timer cancelled. Ignored for an unknown or already held member.
    pub fn hold(&mut self, now: SimTime, member: u32) {
        let Some(m) = self.modems.get_mut(member as usize) else {
            return;
        };
        if m.held {
            return;
        }
        m.held = true;
        let was = m.state;
        self.set_state(member, ModemState::Idle, None);
        if was == ModemState::Connected {
            self.commands.push_back(Command::Down { member });
        }
        if self.cfg.primary && self.primary == Some(member) {
            // With every other member blocked or held there is no primary until a timer
            // ends or a member is released, as after a block in `on_timer`.
            self.tear_down(member);
        }
        let _ = now;
    }

    /// Returns a held `member` to service: it dials at once if it may, or waits `Idle` for
    /// its primary (with the primary option and no primary, it becomes the primary).
    pub fn release(&mut self, now: SimTime, member: u32) {
        let Some(m) = self.modems.get_mut(member as usize) else {
            return;
        };
        if !m.held {
            return;
        }
        m.held = false;
        let _ = now;
        if self.cfg.primary && self.primary.is_none() {
            self.primary = Some(member);
        }
        if self.may_dial(member) {
            self.dial(member);
        }
    }

    /// Whether `member` is held out of service.
    pub fn is_held(&self, member: u32) -> bool {
        self.modems.get(member as usize).is_some_and(|m| m.held)
    }

    /// The state to resume from after a restart.
    pub fn snapshot(&self) -> SupervisorSnapshot {
        SupervisorSnapshot {
            modems: self
                .modems
                .iter()
                .map(|m| ModemSnapshot {
                    state: m.state,
                    timer_ns: m.timer.map(SimTime::as_nanos),
                    failures: m.failures,
                    drops: m.drops,
                    held: m.held,
                })
                .collect(),
            primary: self.primary,
            next_attempt: self.next_attempt,
            stats: self.stats,
        }
    }

    /// A supervisor resumed at `now` from `snap` (see the module documentation). Refused if
    /// the snapshot is of a different number of members or names a primary out of range.
    pub fn restore(
        cfg: SupervisorConfig,
        snap: &SupervisorSnapshot,
        now: SimTime,
    ) -> Result<Self, ConfigError> {
        let mut s = Supervisor::new(
            SupervisorConfig {
                start_connected: false,
                primary: false,
                members: cfg.members,
                ..cfg
            },
            now,
        )?;
        if snap.modems.len() != cfg.members as usize {
            return Err(ConfigError::new(
                "members",
                format!(
                    "the saved state has {} members, the configuration {}",
                    snap.modems.len(),
                    cfg.members
                ),
            ));
        }
        if snap.primary.is_some_and(|p| p >= cfg.members) {
            return Err(ConfigError::new(
                "primary",
                "the saved primary is not a member of this bundle",
            ));
        }
        s.cfg = cfg;
        s.commands.clear();
        s.stats = snap.stats;
        s.next_attempt = snap.next_attempt;
        s.primary = if cfg.primary { snap.primary } else { None };
        for (i, m) in snap.modems.iter().enumerate() {
            s.modems[i] = Modem {
                state: m.state,
                timer: m.timer_ns.map(SimTime::from_nanos),
                failures: m.failures,
                attempt: 0,
                drops: m.drops,
                held: m.held,
            };
        }
        if cfg.primary
            && s.primary.is_none_or(|p| {
                s.modems[p as usize].held || s.modems[p as usize].state == ModemState::Blocked
            })
        {
            s.primary = s.select_primary();
        }
        // Calls did not survive the restart: the primary first, so that its secondaries
        // wait for it.
        let order: Vec<u32> = s
            .primary
            .into_iter()
            .chain((0..cfg.members).filter(|&m| Some(m) != s.primary))
            .collect();
        for m in order {
            let modem = s.modems[m as usize];
            let lost_call = matches!(modem.state, ModemState::Connected | ModemState::Connecting);
            let waiting = modem.state == ModemState::Idle && !modem.held;
            if modem.held {
                s.set_state(m, ModemState::Idle, None);
            } else if lost_call || waiting {
                if s.may_dial(m) {
                    s.dial(m);
                } else {
                    s.set_state(m, ModemState::Idle, None);
                }
            } else {
                // Dropped, Failed, Blocked: the rest of the period, announced again.
                s.set_state(m, modem.state, modem.timer);
            }
        }
        Ok(s)
    }

    /// Whether `member` may dial now: never while held; always without the primary option;
    /// with it, the primary always, a secondary only while the primary is connected.
    fn may_dial(&self, member: u32) -> bool {
        if self.modems[member as usize].held {
            return false;
        }
        if !self.cfg.primary {
            return true;
        }
        match self.primary {
            Some(p) if p == member => true,
            Some(p) => self.modems[p as usize].state == ModemState::Connected,
            None => false,
        }
    }

    /// The primary lost its call: the bundle disappears and a new connection starts.
    fn tear_down(&mut self, old_primary: u32) {
        self.stats.teardowns += 1;
        for m in 0..self.cfg.members {
            if m == old_primary {
                continue;
            }
            match self.modems[m as usize].state {
                ModemState::Connected => {
                    self.set_state(m, ModemState::Idle, None);
                    self.commands.push_back(Command::Down { member: m });
                }
                ModemState::Connecting => self.set_state(m, ModemState::Idle, None),
                // Dropped, Failed and Blocked keep their timers; Idle stays idle.
                _ => {}
            }
        }
        self.primary = self.select_primary();
        if let Some(p) = self.primary {
            if self.modems[p as usize].state == ModemState::Idle {
                self.dial(p);
            }
        }
    }

    /// The modem with the fewest call drops so far, ties to the lowest index, among those
    /// not blocked (section 7.3: "the modem with the best call-drops history").
    fn select_primary(&self) -> Option<u32> {
        self.modems
            .iter()
            .enumerate()
            .filter(|(_, m)| m.state != ModemState::Blocked && !m.held)
            .min_by_key(|(i, m)| (m.drops, *i))
            .map(|(i, _)| i as u32)
    }

    fn dial(&mut self, member: u32) {
        self.next_attempt = self.next_attempt.wrapping_add(1);
        let attempt = self.next_attempt;
        self.modems[member as usize].attempt = attempt;
        self.stats.dials += 1;
        self.set_state(member, ModemState::Connecting, None);
        self.commands.push_back(Command::Dial { member, attempt });
    }

    fn set_state(&mut self, member: u32, state: ModemState, timer: Option<SimTime>) {
        let modem = &mut self.modems[member as usize];
        modem.timer = timer;
        modem.state = state;
        self.commands.push_back(Command::State { member, state });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ModemState::*;

    fn t(s: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_secs(s)
    }

    fn cfg(members: u32, primary: bool, start_connected: bool) -> SupervisorConfig {
        SupervisorConfig {
            members,
            modem: ModemConfig {
                t_d: SimDuration::from_secs(30),
                t_f: SimDuration::from_secs(20),
                max_attempts: 3,
                blocked_for: SimDuration::from_secs(3600),
            },
            primary,
            start_connected,
        }
    }

    fn drain(s: &mut Supervisor) -> Vec<Command> {
        std::iter::from_fn(|| s.poll_command()).collect()
    }

    /// The attempt number of the last `Dial` of `member` among `cmds`.
    #[track_caller]
    fn dialled(cmds: &[Command], member: u32) -> u32 {
        cmds.iter()
            .rev()
            .find_map(|c| match *c {
                Command::Dial { member: m, attempt } if m == member => Some(attempt),
                _ => None,
            })
            .unwrap_or_else(|| panic!("member {member} was not dialled in {cmds:?}"))
    }

    fn states(s: &Supervisor) -> Vec<ModemState> {
        (0..s.config().members).map(|m| s.state(m)).collect()
    }

    #[test]
    fn hold_abandons_a_dial_and_release_dials_again() {
        let mut s = Supervisor::new(cfg(2, false, false), t(0)).unwrap();
        let a0 = dialled(&drain(&mut s), 0);
        s.hold(t(5), 0);
        assert_eq!(
            drain(&mut s),
            vec![Command::State {
                member: 0,
                state: Idle
            }]
        );
        // The abandoned dial's answer comes anyway: ignored.
        s.on_dial_result(t(20), 0, a0, true);
        assert!(drain(&mut s).is_empty());
        assert_eq!(s.state(0), Idle);
        assert!(s.is_held(0));
        s.release(t(30), 0);
        let a1 = dialled(&drain(&mut s), 0);
        assert_ne!(a0, a1);
        assert_eq!(s.state(0), Connecting);
    }

    #[test]
    fn hold_hangs_up_a_call_and_cancels_timers() {
        let mut s = Supervisor::new(cfg(2, false, true), t(0)).unwrap();
        drain(&mut s);
        s.hold(t(10), 1);
        assert_eq!(
            drain(&mut s),
            vec![
                Command::State {
                    member: 1,
                    state: Idle
                },
                Command::Down { member: 1 }
            ]
        );
        s.on_call_dropped(t(20), 0);
        s.hold(t(21), 0);
        drain(&mut s);
        assert_eq!(s.next_wakeup(), None);
        s.on_timer(t(1000));
        assert!(drain(&mut s).is_empty());
        assert_eq!(states(&s), vec![Idle, Idle]);
    }

    #[test]
    fn holding_the_primary_tears_the_bundle_down_and_a_held_member_is_never_primary() {
        let mut s = Supervisor::new(cfg(3, true, true), t(0)).unwrap();
        drain(&mut s);
        assert_eq!(s.primary(), Some(0));
        s.hold(t(10), 0);
        let cmds = drain(&mut s);
        assert!(cmds.contains(&Command::Down { member: 0 }));
        assert!(cmds.contains(&Command::Down { member: 1 }));
        assert_eq!(s.primary(), Some(1));
        let a = dialled(&cmds, 1);
        s.on_dial_result(t(20), 1, a, true);
        let cmds = drain(&mut s);
        // The secondaries are dialled, but not the held member.
        dialled(&cmds, 2);
        assert!(!cmds
            .iter()
            .any(|c| matches!(c, Command::Dial { member: 0, .. })));
        assert_eq!(s.stats().teardowns, 1);
    }

    #[test]
    fn snapshot_restores_history_timers_and_held_members() {
        let mut s = Supervisor::new(cfg(3, true, true), t(0)).unwrap();
        drain(&mut s);
        // The primary (0) drops: member 1 becomes primary, fails three dials and is blocked;
        // member 2 (no drops, against member 0's one) becomes primary; member 0 is held.
        s.on_call_dropped(t(10), 0);
        let mut a = dialled(&drain(&mut s), 1);
        for k in 0..3 {
            s.on_dial_result(t(20 + 30 * k), 1, a, false);
            if k < 2 {
                s.on_timer(t(40 + 30 * k));
                a = dialled(&drain(&mut s), 1);
            }
        }
        assert_eq!((s.state(1), s.primary()), (Blocked, Some(2)));
        s.hold(t(100), 0);
        drain(&mut s);
        let snap = s.snapshot();
        let json = serde_json::to_string(&snap).unwrap();
        let back: SupervisorSnapshot = serde_json::from_str(&json).unwrap();
        assert_eq!(back, snap);
        // The daemon comes back 200 s later: the primary's call did not survive.
        let mut r = Supervisor::restore(*s.config(), &back, t(300)).unwrap();
        let cmds = drain(&mut r);
        assert_eq!(r.primary(), Some(2));
        dialled(&cmds, 2);
        assert_eq!(states(&r), vec![Idle, Blocked, Connecting]);
        assert!(r.is_held(0));
        assert_eq!(r.next_wakeup(), Some(t(80 + 3600)));
        assert_eq!(r.next_wakeup(), s.next_wakeup());
        assert_eq!(r.stats().blocks, 1);
        assert_eq!(r.stats().dials, s.stats().dials + 1);
        assert_eq!(r.snapshot().modems[0].drops, 1);
        // A snapshot of another bundle is refused.
        let err = Supervisor::restore(cfg(2, true, true), &back, t(300)).unwrap_err();
        assert_eq!(err.param, "members");
    }

    #[test]
    fn rejects_an_empty_bundle() {
        assert_eq!(
            Supervisor::new(cfg(0, false, true), t(0))
                .unwrap_err()
                .param,
            "members"
        );
    }

    #[test]
    fn connecting_dial_ok_becomes_connected_and_up() {
        let mut s = Supervisor::new(cfg(2, false, false), t(0)).unwrap();
        let cmds = drain(&mut s);
        assert_eq!(states(&s), vec![Connecting, Connecting]);
        let a0 = dialled(&cmds, 0);
        s.on_dial_result(t(15), 0, a0, true);
        assert_eq!(
            drain(&mut s),
            vec![
                Command::State {
                    member: 0,
                    state: Connected
                },
                Command::Up { member: 0 }
            ]
        );
        assert_eq!(s.connected(), 1);
        assert_eq!(s.next_wakeup(), None);
    }

    #[test]
    fn connected_call_dropped_waits_t_d_then_dials() {
        let mut s = Supervisor::new(cfg(1, false, true), t(0)).unwrap();
        drain(&mut s);
        s.on_call_dropped(t(100), 0);
        assert_eq!(
            drain(&mut s),
            vec![
                Command::State {
                    member: 0,
                    state: Dropped
                },
                Command::Down { member: 0 }
            ]
        );
        assert_eq!(s.next_wakeup(), Some(t(130)));
        s.on_timer(t(129));
        assert_eq!(s.state(0), Dropped, "not yet");
        s.on_timer(t(130));
        assert_eq!(s.state(0), Connecting);
        assert!(matches!(
            drain(&mut s).as_slice(),
            [
                Command::State {
                    state: Connecting,
                    ..
                },
                Command::Dial { member: 0, .. }
            ]
        ));
        assert_eq!(s.stats().call_drops, 1);
    }

    #[test]
    fn connecting_dial_failed_waits_t_f_then_redials() {
        let mut s = Supervisor::new(cfg(1, false, false), t(0)).unwrap();
        let a = dialled(&drain(&mut s), 0);
        s.on_dial_result(t(10), 0, a, false);
        assert_eq!(s.state(0), Failed);
        assert_eq!(s.next_wakeup(), Some(t(30)));
        s.on_timer(t(30));
        assert_eq!(s.state(0), Connecting);
        let b = dialled(&drain(&mut s), 0);
        assert_ne!(a, b, "each dial has its own attempt number");
    }

    #[test]
    fn failed_max_attempts_in_a_row_blocks_for_an_hour() {
        let mut s = Supervisor::new(cfg(1, false, false), t(0)).unwrap();
        let mut now = 0;
        for i in 0..3 {
            let a = dialled(&drain(&mut s), 0);
            now += 10;
            s.on_dial_result(t(now), 0, a, false);
            if i < 2 {
                assert_eq!(s.state(0), Failed);
                now += 20;
                s.on_timer(t(now));
            }
        }
        assert_eq!(s.state(0), Blocked);
        assert_eq!(s.next_wakeup(), Some(t(now + 3600)));
        assert_eq!(s.stats().blocks, 1);
        s.on_timer(t(now + 3600));
        assert_eq!(s.state(0), Connecting);
        // Leaving the blocked state resets the count: two more failures do not block.
        for i in 0..2 {
            let a = dialled(&drain(&mut s), 0);
            s.on_dial_result(t(now + 3610 + 100 * i), 0, a, false);
            assert_eq!(s.state(0), Failed);
            s.on_timer(t(now + 3700 + 100 * i));
        }
    }

    #[test]
    fn a_success_resets_the_failure_count() {
        let mut s = Supervisor::new(cfg(1, false, false), t(0)).unwrap();
        for round in 0..4 {
            let a = dialled(&drain(&mut s), 0);
            s.on_dial_result(t(round * 1000 + 1), 0, a, false);
            s.on_timer(t(round * 1000 + 30));
            let a = dialled(&drain(&mut s), 0);
            s.on_dial_result(t(round * 1000 + 40), 0, a, false);
            s.on_timer(t(round * 1000 + 70));
            let a = dialled(&drain(&mut s), 0);
            s.on_dial_result(t(round * 1000 + 80), 0, a, true);
            assert_eq!(s.state(0), Connected);
            s.on_call_dropped(t(round * 1000 + 500), 0);
            s.on_timer(t(round * 1000 + 530));
        }
        assert_eq!(s.stats().blocks, 0);
    }

    #[test]
    fn unlimited_attempts_never_block() {
        let mut c = cfg(1, false, false);
        c.modem.max_attempts = 0;
        let mut s = Supervisor::new(c, t(0)).unwrap();
        for i in 0..50 {
            let a = dialled(&drain(&mut s), 0);
            s.on_dial_result(t(i * 100 + 10), 0, a, false);
            assert_eq!(s.state(0), Failed);
            s.on_timer(t(i * 100 + 50));
        }
        assert_eq!(s.stats().dial_failures, 50);
    }

    #[test]
    fn stale_inputs_are_ignored() {
        let mut s = Supervisor::new(cfg(2, false, false), t(0)).unwrap();
        let cmds = drain(&mut s);
        let a0 = dialled(&cmds, 0);
        // A drop of a member not connected, a result for the wrong attempt, an unknown member.
        s.on_call_dropped(t(1), 0);
        s.on_dial_result(t(1), 0, a0.wrapping_add(7), true);
        s.on_dial_result(t(1), 9, a0, true);
        s.on_call_dropped(t(1), 9);
        assert!(drain(&mut s).is_empty());
        assert_eq!(states(&s), vec![Connecting, Connecting]);
        s.on_dial_result(t(2), 0, a0, true);
        // A second result for the same attempt changes nothing.
        drain(&mut s);
        s.on_dial_result(t(3), 0, a0, false);
        assert!(drain(&mut s).is_empty());
        assert_eq!(s.state(0), Connected);
    }

    #[test]
    fn primary_is_dialled_first_then_the_secondaries() {
        let mut s = Supervisor::new(cfg(3, true, false), t(0)).unwrap();
        let cmds = drain(&mut s);
        assert_eq!(s.primary(), Some(0));
        assert_eq!(states(&s), vec![Connecting, Idle, Idle]);
        s.on_dial_result(t(15), 0, dialled(&cmds, 0), true);
        let cmds = drain(&mut s);
        assert_eq!(states(&s), vec![Connected, Connecting, Connecting]);
        dialled(&cmds, 1);
        dialled(&cmds, 2);
    }

    #[test]
    fn primary_drop_tears_the_bundle_down_and_a_new_primary_is_chosen() {
        let mut s = Supervisor::new(cfg(4, true, true), t(0)).unwrap();
        drain(&mut s);
        // Member 1 drops once and redials; member 3 is still dialling when the primary goes.
        s.on_call_dropped(t(10), 1);
        s.on_timer(t(40));
        let a1 = dialled(&drain(&mut s), 1);
        s.on_dial_result(t(55), 1, a1, true);
        s.on_call_dropped(t(60), 3);
        s.on_timer(t(90));
        let a3 = dialled(&drain(&mut s), 3);
        s.on_call_dropped(t(100), 0);
        let cmds = drain(&mut s);
        assert_eq!(s.stats().teardowns, 1);
        assert!(cmds.contains(&Command::Down { member: 0 }));
        assert!(cmds.contains(&Command::Down { member: 1 }), "hung up");
        assert!(cmds.contains(&Command::Down { member: 2 }), "hung up");
        assert!(!cmds.contains(&Command::Down { member: 3 }), "was not up");
        // Member 2 has the best history (no drops, lower index than 3): new primary, dialled.
        assert_eq!(s.primary(), Some(2));
        assert_eq!(states(&s), vec![Dropped, Idle, Connecting, Idle]);
        // The abandoned dial of member 3 answers late and is ignored.
        s.on_dial_result(t(101), 3, a3, true);
        assert_eq!(s.state(3), Idle);
        // The old primary's T_d ends before the new primary connects: it waits.
        s.on_timer(t(130));
        assert_eq!(s.state(0), Idle);
        s.on_dial_result(t(140), 2, dialled(&cmds, 2), true);
        assert_eq!(
            states(&s),
            vec![Connecting, Connecting, Connected, Connecting]
        );
    }

    #[test]
    fn secondary_drop_does_not_touch_the_bundle() {
        let mut s = Supervisor::new(cfg(3, true, true), t(0)).unwrap();
        drain(&mut s);
        s.on_call_dropped(t(10), 2);
        assert_eq!(
            drain(&mut s),
            vec![
                Command::State {
                    member: 2,
                    state: Dropped
                },
                Command::Down { member: 2 }
            ]
        );
        assert_eq!(s.primary(), Some(0));
        assert_eq!(s.stats().teardowns, 0);
    }

    #[test]
    fn blocked_primary_hands_over_and_the_first_unblocked_modem_restarts_the_bundle() {
        let mut c = cfg(2, true, false);
        c.modem.max_attempts = 1;
        let mut s = Supervisor::new(c, t(0)).unwrap();
        let a = dialled(&drain(&mut s), 0);
        s.on_dial_result(t(10), 0, a, false);
        assert_eq!(s.state(0), Blocked);
        assert_eq!(s.primary(), Some(1), "another modem is selected");
        let a = dialled(&drain(&mut s), 1);
        s.on_dial_result(t(20), 1, a, false);
        assert_eq!(states(&s), vec![Blocked, Blocked]);
        assert_eq!(s.primary(), None);
        assert_eq!(s.next_wakeup(), Some(t(3610)));
        s.on_timer(t(3610));
        assert_eq!(s.primary(), Some(0));
        assert_eq!(s.state(0), Connecting);
        assert_eq!(s.state(1), Blocked);
    }

    #[test]
    fn secondary_timer_while_primary_is_down_goes_idle_then_dials_when_it_connects() {
        let mut s = Supervisor::new(cfg(2, true, true), t(0)).unwrap();
        drain(&mut s);
        s.on_call_dropped(t(5), 1);
        s.on_call_dropped(t(6), 0);
        let cmds = drain(&mut s);
        // Member 1 has one drop, member 0 one drop as well: tie to the lowest index.
        assert_eq!(s.primary(), Some(0));
        assert_eq!(states(&s), vec![Dropped, Dropped]);
        s.on_timer(t(35));
        assert_eq!(states(&s), vec![Dropped, Idle]);
        s.on_timer(t(36));
        let a = dialled(&drain(&mut s), 0);
        assert!(!cmds.iter().any(|c| matches!(c, Command::Dial { .. })));
        s.on_dial_result(t(50), 0, a, true);
        assert_eq!(states(&s), vec![Connected, Connecting]);
    }

    #[test]
    fn names_follow_figure_7_2() {
        let names: Vec<String> = [Idle, Connecting, Connected, Dropped, Failed, Blocked]
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            names,
            [
                "idle",
                "connecting",
                "connected",
                "dropped",
                "failed",
                "blocked"
            ]
        );
    }
}
