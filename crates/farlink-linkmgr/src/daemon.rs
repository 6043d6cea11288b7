//! The link-management daemon: the core's `modem::Supervisor` driven over real serial ports
//! with the wall clock (seed 000 chapter 7, KUMICS).
//!
//! One thread, one `poll` loop. Each member is a serial port with its AT dialogue
//! ([`crate::ppp::at`]); the supervisor decides when each member dials, waits, is
//! blocked or is the primary, and the loop carries its commands out on the ports: `Dial` is
//! `ATD` (on the ground end: wait for the modem to answer a call), `Down` hangs up (`+++`, then
//! `ATH`), `Up` hands the port to the data plane. What the ports answer comes back to the
//! supervisor as dial results and call drops: `NO CARRIER`, a carrier (DCD) that falls, a port
//! that vanishes. While a member is in command mode its signal is polled (`AT+CSQ`) and a late
//! reply marks a handover (seed 000 section 5.1). Everything is logged ([`super::eventlog`]),
//! and the supervisor's state is saved at every change, so a daemon killed and started again
//! resumes where it was.
//!
//! The clock handed to the supervisor is nanoseconds of `CLOCK_MONOTONIC` since this process
//! started; saved timers are carried across a restart through the wall clock.

use std::os::fd::RawFd;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::ppp::at::{AtDialogue, AtEvent, AtOutput, DialFailure};
use farlink_core::modem::{Command, ModemState, Supervisor, SupervisorConfig, SupervisorSnapshot};
use farlink_core::time::{SimDuration, SimTime};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use super::config::{LinkMgrConfig, Role};
use super::control::{ControlServer, Request};
use super::eventlog::{Event, EventLog};
use super::plane::{DataPlane, PlaneStats};
use super::serial::SerialPort;
use crate::error::LinkMgrError;
use farlink_emu::clock::monotonic_ns;
use farlink_emu::signals::Signals;

/// How often the loop wakes at the least: carrier (DCD) checks, byte counts, a port to reopen.
const TICK: SimDuration = SimDuration::from_millis(250);
/// How often the byte counts are sampled for the log (when they change).
const STATS_EVERY: SimDuration = SimDuration::from_secs(1);

/// Where a member's port and modem are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// No port open (not yet, or it vanished).
    NoPort,
    /// The profile's init commands are on their way.
    Init,
    /// Initialised, in command mode or in a call.
    Ready,
    /// The modem failed its init or stopped answering: initialise again before using it.
    Stale,
}

/// One modem of the bundle.
struct Member {
    name: String,
    port: Option<SerialPort>,
    at: AtDialogue,
    phase: Phase,
    /// Octets for the port that it has not taken yet.
    out: Vec<u8>,
    last_write: SimTime,
    /// The supervisor's dial to make once the modem is ready (its attempt number).
    want_dial: Option<u32>,
    /// The dial on its way (`ATD` sent, or on the ground end: waiting for a call).
    dialling: Option<u32>,
    /// The port belongs to the data plane.
    in_plane: bool,
    /// When the signal query on its way was sent.
    signal_sent: Option<SimTime>,
    next_signal: SimTime,
    /// The last carrier (DCD) seen, where the port has modem lines.
    carrier: Option<bool>,
}

/// Everything the loop owns.
pub struct Daemon {
    cfg: LinkMgrConfig,
    sup: Supervisor,
    members: Vec<Member>,
    log: EventLog,
    plane: Option<Box<dyn DataPlane>>,
    start_mono_ns: u64,
    primary: Option<u32>,
    last_stats: PlaneStats,
    next_stats: SimTime,
    /// The operators' commands (`hold`, `release`), if the configuration has a socket.
    control: Option<ControlServer>,
}

/// Seconds since 1970 now.
fn unix_now_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn failure_code(f: DialFailure) -> &'static str {
    match f {
        DialFailure::NoCarrier => "NO CARRIER",
        DialFailure::Busy => "BUSY",
        DialFailure::NoAnswer => "NO ANSWER",
        DialFailure::NoDialtone => "NO DIALTONE",
        DialFailure::Error => "ERROR",
        DialFailure::Timeout => "timeout",
    }
}

/// The saved supervisor state with its timers moved from the clock of the daemon that saved it
/// (which started at `old_epoch_unix_s`) to this one's (started at `new_epoch_unix_s`); a timer
/// already over ends at once.
pub fn rebase(
    mut snap: SupervisorSnapshot,
    old_epoch_unix_s: f64,
    new_epoch_unix_s: f64,
) -> SupervisorSnapshot {
    for m in &mut snap.modems {
        if let Some(t) = m.timer_ns {
            let at_unix = old_epoch_unix_s + t as f64 * 1e-9;
            let ns = ((at_unix - new_epoch_unix_s) * 1e9).max(0.0);
            m.timer_ns = Some(ns as u64);
        }
    }
    snap
}

impl Daemon {
    /// Opens the log, resumes from its last snapshot if it has one, and sets the supervisor
    /// going. `plane`: the data plane, if one is configured.
    pub fn new(cfg: LinkMgrConfig, plane: Option<Box<dyn DataPlane>>) -> Result<Daemon, String> {
        let start_mono_ns = monotonic_ns();
        let epoch_unix_s = unix_now_s();
        // Before the log: a second daemon on this configuration is refused untouched.
        let control = cfg
            .control
            .as_deref()
            .map(ControlServer::bind)
            .transpose()?;
        let names: Vec<String> = cfg.members.iter().map(|m| m.name.clone()).collect();
        let config_json = cfg.to_json().to_string();
        let (mut log, saved) = EventLog::open(&cfg.log, cfg.role.name(), &names, &config_json)?;
        let sup_cfg = SupervisorConfig {
            members: cfg.members.len() as u32,
            modem: cfg.timers,
            primary: cfg.primary,
            start_connected: false,
        };
        let now = SimTime::ZERO;
        let mut resumed = false;
        let mut restore_error = None;
        let sup = match saved {
            Some((snap, old_epoch)) => {
                match Supervisor::restore(sup_cfg, &rebase(snap, old_epoch, epoch_unix_s), now) {
                    Ok(s) => {
                        resumed = true;
                        s
                    }
                    Err(e) => {
                        restore_error = Some(format!(
                            "the saved state does not fit this configuration ({e}): starting afresh"
                        ));
                        Supervisor::new(sup_cfg, now).map_err(|e| e.to_string())?
                    }
                }
            }
            None => Supervisor::new(sup_cfg, now).map_err(|e| e.to_string())?,
        };
        log.event(
            0.0,
            &Event::new("daemon").detail(if resumed { "resume" } else { "start" }),
        )?;
        if let Some(e) = restore_error {
            log.event(0.0, &Event::new("error").detail(&e))?;
        }
        let members = cfg
            .members
            .iter()
            .map(|m| Member {
                name: m.name.clone(),
                port: None,
                at: AtDialogue::new(cfg.profile.clone()),
                phase: Phase::NoPort,
                out: Vec::new(),
                last_write: SimTime::ZERO,
                want_dial: None,
                dialling: None,
                in_plane: false,
                signal_sent: None,
                next_signal: SimTime::ZERO,
                carrier: None,
            })
            .collect();
        let n = cfg.members.len();
        let mut d = Daemon {
            cfg,
            sup,
            members,
            log,
            plane,
            start_mono_ns,
            primary: None,
            last_stats: PlaneStats {
                member_tx_bytes: vec![0; n],
                member_rx_bytes: vec![0; n],
                ..PlaneStats::default()
            },
            next_stats: SimTime::ZERO,
            control,
        };
        for m in 0..n {
            d.open_port(now, m);
        }
        d.apply(now)?;
        Ok(d)
    }

    fn now(&self) -> SimTime {
        SimTime::from_nanos(monotonic_ns().saturating_sub(self.start_mono_ns))
    }

    fn log(&mut self, now: SimTime, e: Event<'_>) -> Result<(), String> {
        self.log.event(now.as_secs_f64(), &e)
    }

    /// Opens member `m`'s port and starts initialising its modem; a failure is logged and
    /// the member stays without a port (its dials fail until the port comes back).
    fn open_port(&mut self, now: SimTime, m: usize) -> bool {
        let dev = self.cfg.members[m].device.clone();
        match SerialPort::open(&dev, self.cfg.profile.baud, self.cfg.flow_control) {
            Ok(port) => {
                let member = &mut self.members[m];
                member.carrier = port.carrier();
                member.port = Some(port);
                member.out.clear();
                member.at = AtDialogue::new(self.cfg.profile.clone());
                member.at.init(now);
                member.phase = Phase::Init;
                true
            }
            Err(e) => {
                let _ = self.log(now, Event::new("error").modem(m as u32).detail(&e));
                false
            }
        }
    }

    /// The port of member `m` is gone: what was on it ends, and it is looked for again at its
    /// next dial.
    fn port_gone(&mut self, now: SimTime, m: usize, why: &str) -> Result<(), String> {
        let member = &mut self.members[m];
        if member.port.is_none() {
            return Ok(());
        }
        let detail = format!("port gone: {}: {why}", member.name);
        member.port = None;
        member.phase = Phase::NoPort;
        member.out.clear();
        member.signal_sent = None;
        let online = member.at.is_online();
        member.at = AtDialogue::new(self.cfg.profile.clone());
        self.log(now, Event::new("error").modem(m as u32).detail(&detail))?;
        self.plane_down(now, m);
        if online {
            self.log(now, Event::new("drop").modem(m as u32).detail("port gone"))?;
            self.sup.on_call_dropped(now, m as u32);
        }
        if let Some(a) = self.members[m].dialling.take() {
            self.dial_result(now, m, a, false, "port gone")?;
        }
        if let Some(a) = self.members[m].want_dial.take() {
            self.dial_result(now, m, a, false, "port gone")?;
        }
        Ok(())
    }

    fn plane_down(&mut self, now: SimTime, m: usize) {
        if std::mem::take(&mut self.members[m].in_plane) {
            if let Some(p) = self.plane.as_mut() {
                p.member_down(m as u32, now);
            }
            // The data plane may have written up to now: "+++" needs its guard of silence.
            self.members[m].last_write = now;
        }
    }

    fn dial_result(
        &mut self,
        now: SimTime,
        m: usize,
        attempt: u32,
        ok: bool,
        code: &str,
    ) -> Result<(), String> {
        self.log(
            now,
            Event::new("dial_result")
                .modem(m as u32)
                .value(if ok { 1.0 } else { 0.0 })
                .detail(code),
        )?;
        self.sup.on_dial_result(now, m as u32, attempt, ok);
        Ok(())
    }

    /// Carries out the supervisor's commands, logs them, saves its state if it changed.
    fn apply(&mut self, now: SimTime) -> Result<(), String> {
        let mut changed = false;
        while let Some(cmd) = self.sup.poll_command() {
            match cmd {
                Command::State { member, state } => {
                    changed = true;
                    self.log(now, Event::new("state").modem(member).state(state.name()))?;
                    if !matches!(state, ModemState::Connecting | ModemState::Connected) {
                        self.abandon_dial(now, member as usize);
                    }
                }
                Command::Dial { member, attempt } => {
                    self.log(now, Event::new("dial").modem(member).value(attempt as f64))?;
                    self.request_dial(now, member as usize, attempt)?;
                }
                Command::Up { member } => {
                    let m = member as usize;
                    if let (Some(plane), Some(port)) =
                        (self.plane.as_mut(), self.members[m].port.as_ref())
                    {
                        plane.member_up(member, port.raw_fd(), now);
                        self.members[m].in_plane = true;
                    }
                }
                Command::Down { member } => {
                    let m = member as usize;
                    self.plane_down(now, m);
                    if self.members[m].at.is_online() {
                        let last = self.members[m].last_write;
                        self.members[m].at.hang_up(now, last);
                    }
                }
            }
        }
        let primary = self.sup.primary();
        if self.cfg.primary && primary != self.primary {
            self.primary = primary;
            let mut e = Event::new("primary");
            e.modem = primary;
            self.log(now, e)?;
        }
        if changed {
            self.log.snapshot(&self.sup.snapshot())?;
        }
        Ok(())
    }

    /// The supervisor wants member `m` dialled: now if its modem is ready, once it is
    /// otherwise; a member without a port looks for it first.
    fn request_dial(&mut self, now: SimTime, m: usize, attempt: u32) -> Result<(), String> {
        self.members[m].want_dial = Some(attempt);
        match self.members[m].phase {
            Phase::NoPort => {
                if !self.open_port(now, m) {
                    self.members[m].want_dial = None;
                    return self.dial_result(now, m, attempt, false, "port gone");
                }
            }
            Phase::Stale => {
                self.members[m].at.init(now);
                self.members[m].phase = Phase::Init;
            }
            Phase::Init | Phase::Ready => {}
        }
        self.start_dial(now, m);
        Ok(())
    }

    /// Makes the wanted dial if the modem is free for it. The ground end's "dial" is waiting
    /// for its modem to answer a call (auto-answer): nothing to send, and signal queries go on.
    fn start_dial(&mut self, now: SimTime, m: usize) {
        let role = self.cfg.role;
        let member = &mut self.members[m];
        let free = member.at.is_idle() || (role == Role::Ground && !member.at.is_online());
        if member.phase != Phase::Ready || !free {
            return;
        }
        let Some(a) = member.want_dial.take() else {
            return;
        };
        member.dialling = Some(a);
        if role == Role::Air {
            member.at.dial(now);
        }
    }

    /// Member `m` may no longer be dialling (held, torn down with its primary): abort a dial
    /// on its way.
    fn abandon_dial(&mut self, now: SimTime, m: usize) {
        let member = &mut self.members[m];
        member.want_dial = None;
        if member.dialling.take().is_some() && self.cfg.role == Role::Air {
            let last = member.last_write;
            member.at.hang_up(now, last);
        }
    }

    /// What member `m`'s dialogue says.
    fn on_at_event(&mut self, now: SimTime, m: usize, e: AtEvent) -> Result<(), String> {
        let mu = m as u32;
        match e {
            AtEvent::Ready => {
                self.members[m].phase = Phase::Ready;
                self.members[m].next_signal = now;
                self.start_dial(now, m);
            }
            AtEvent::Connected { rate_bps } => {
                let code = match rate_bps {
                    Some(r) => format!("CONNECT {r}"),
                    None => "CONNECT".to_string(),
                };
                self.members[m].last_write = now;
                self.members[m].signal_sent = None;
                // A call answered during the init: the modem works, whatever was left of it.
                if self.members[m].phase != Phase::NoPort {
                    self.members[m].phase = Phase::Ready;
                }
                let member = &mut self.members[m];
                match member.dialling.take().or_else(|| member.want_dial.take()) {
                    Some(a) => self.dial_result(now, m, a, true, &code)?,
                    None => {
                        // A call the supervisor did not ask for (answered while waiting out
                        // T_d, or after a dial was abandoned): not ours to keep.
                        self.log(
                            now,
                            Event::new("error")
                                .modem(mu)
                                .detail(&format!("{code} without a dial: hung up")),
                        )?;
                        self.members[m].at.hang_up(now, now);
                    }
                }
            }
            AtEvent::DialFailed(f) => {
                if let Some(a) = self.members[m].dialling.take() {
                    self.dial_result(now, m, a, false, failure_code(f))?;
                }
            }
            AtEvent::HungUp | AtEvent::Ring => {}
            AtEvent::CarrierLost => self.call_lost(now, m, "no carrier")?,
            AtEvent::Signal(bars) => {
                if let Some(sent) = self.members[m].signal_sent.take() {
                    let reply = now.saturating_since(sent);
                    let handover = reply >= self.cfg.profile.handover_reply;
                    let detail = serde_json::json!({
                        "reply_s": reply.as_secs_f64(),
                        "handover": handover,
                    })
                    .to_string();
                    self.log(
                        now,
                        Event::new("signal")
                            .modem(mu)
                            .value(f64::from(bars))
                            .detail(&detail),
                    )?;
                    self.members[m].next_signal = sent + self.cfg.profile.signal_interval;
                }
            }
            AtEvent::Error { command, reply } => {
                let detail = format!("the modem answered {reply:?} to {command}");
                self.log(now, Event::new("error").modem(mu).detail(&detail))?;
                self.modem_failed(now, m, "ERROR")?;
            }
            AtEvent::Timeout { command } => {
                let hanging_up = command == "+++" || command == "ATH";
                let detail = if hanging_up {
                    format!("no answer to {command}: the port is closed to drop DTR")
                } else {
                    format!("no answer to {command}")
                };
                self.log(now, Event::new("error").modem(mu).detail(&detail))?;
                if hanging_up {
                    // The modem may still hold the call: dropping DTR (closing the port, HUPCL)
                    // is the hang-up that does not need its answer; the next dial reopens it.
                    self.plane_down(now, m);
                    let member = &mut self.members[m];
                    member.port = None;
                    member.phase = Phase::NoPort;
                    member.out.clear();
                    member.at = AtDialogue::new(self.cfg.profile.clone());
                }
                self.modem_failed(now, m, "timeout")?;
            }
        }
        self.start_dial(now, m);
        Ok(())
    }

    /// The modem answered nonsense or nothing: it must be initialised again, and a dial it
    /// was to make fails.
    fn modem_failed(&mut self, now: SimTime, m: usize, code: &str) -> Result<(), String> {
        let member = &mut self.members[m];
        member.signal_sent = None;
        member.next_signal = now + self.cfg.profile.signal_interval;
        if member.phase == Phase::Init || member.phase == Phase::Ready {
            member.phase = Phase::Stale;
        }
        for a in [member.want_dial.take(), member.dialling.take()]
            .into_iter()
            .flatten()
        {
            self.dial_result(now, m, a, false, code)?;
        }
        Ok(())
    }

    /// Member `m`'s call is gone, noticed `how`.
    fn call_lost(&mut self, now: SimTime, m: usize, how: &str) -> Result<(), String> {
        self.plane_down(now, m);
        self.members[m].next_signal = now + self.cfg.profile.signal_interval;
        if self.sup.state(m as u32) == ModemState::Connected {
            self.log(now, Event::new("drop").modem(m as u32).detail(how))?;
            self.sup.on_call_dropped(now, m as u32);
        }
        Ok(())
    }

    /// Moves the dialogue's outputs: octets to the port's queue, events to the loop.
    fn drain_dialogue(&mut self, now: SimTime, m: usize) -> Result<(), String> {
        while let Some(o) = self.members[m].at.poll() {
            match o {
                AtOutput::Write(w) => self.members[m].out.extend_from_slice(&w),
                AtOutput::Event(e) => self.on_at_event(now, m, e)?,
            }
        }
        self.flush(now, m)
    }

    /// Writes what the port takes of member `m`'s queue.
    fn flush(&mut self, now: SimTime, m: usize) -> Result<(), String> {
        let member = &mut self.members[m];
        let Some(port) = member.port.as_ref() else {
            member.out.clear();
            return Ok(());
        };
        if member.out.is_empty() {
            return Ok(());
        }
        match port.write(&member.out) {
            Ok(n) => {
                member.out.drain(..n);
                if n > 0 {
                    member.last_write = now;
                }
                Ok(())
            }
            Err(e) => self.port_gone(now, m, &e),
        }
    }

    /// Reads member `m`'s port (in command mode, or in a call the data plane does not hold).
    fn read_port(&mut self, now: SimTime, m: usize) -> Result<(), String> {
        let mut buf = [0u8; 512];
        loop {
            let Some(port) = self.members[m].port.as_ref() else {
                return Ok(());
            };
            match port.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => {
                    self.members[m].at.on_bytes(now, &buf[..n]);
                    self.drain_dialogue(now, m)?;
                }
                Err(e) => return self.port_gone(now, m, &e),
            }
        }
    }

    /// The periodic work: timers of the dialogues and the supervisor, carriers, signal
    /// queries, byte counts.
    fn on_timers(&mut self, now: SimTime) -> Result<(), String> {
        for m in 0..self.members.len() {
            self.members[m].at.on_timer(now);
            self.drain_dialogue(now, m)?;
            self.check_carrier(now, m)?;
            self.maybe_query_signal(now, m)?;
        }
        if self.sup.next_wakeup().is_some_and(|t| t <= now) {
            self.sup.on_timer(now);
        }
        if let Some(p) = self.plane.as_mut() {
            if p.next_wakeup().is_some_and(|t| t <= now) {
                p.on_timer(now);
            }
        }
        if now >= self.next_stats {
            self.next_stats = now + STATS_EVERY;
            self.log_stats(now)?;
        }
        Ok(())
    }

    fn check_carrier(&mut self, now: SimTime, m: usize) -> Result<(), String> {
        let Some(port) = self.members[m].port.as_ref() else {
            return Ok(());
        };
        let carrier = port.carrier();
        let was = std::mem::replace(&mut self.members[m].carrier, carrier);
        if was == Some(true) && carrier == Some(false) && self.members[m].at.is_online() {
            self.members[m].at.on_carrier_lost(now);
            // The dialogue reports `CarrierLost`; the drop is noticed by the carrier.
            while let Some(o) = self.members[m].at.poll() {
                if let AtOutput::Write(w) = o {
                    self.members[m].out.extend_from_slice(&w);
                }
            }
            self.call_lost(now, m, "carrier lost")?;
        }
        Ok(())
    }

    /// When member `m`'s next signal query is due, if one may be made: in command mode with
    /// nothing else outstanding (the ground end: also while waiting for a call).
    fn signal_due(&self, m: usize) -> Option<SimTime> {
        let member = &self.members[m];
        let waiting_call = self.cfg.role == Role::Ground || member.dialling.is_none();
        let may = self.cfg.profile.signal_interval > SimDuration::ZERO
            && member.phase == Phase::Ready
            && member.at.is_idle()
            && member.want_dial.is_none()
            && waiting_call
            && member.signal_sent.is_none();
        may.then_some(member.next_signal)
    }

    fn maybe_query_signal(&mut self, now: SimTime, m: usize) -> Result<(), String> {
        if self.signal_due(m).is_some_and(|t| t <= now) {
            let member = &mut self.members[m];
            member.at.query_signal(now);
            member.signal_sent = Some(now);
            self.drain_dialogue(now, m)?;
        }
        Ok(())
    }

    fn log_stats(&mut self, now: SimTime) -> Result<(), String> {
        let Some(p) = self.plane.as_ref() else {
            return Ok(());
        };
        let s = p.stats();
        let mut rows: Vec<(Option<u32>, &str, f64)> = Vec::new();
        for (m, (&tx, &rx)) in s.member_tx_bytes.iter().zip(&s.member_rx_bytes).enumerate() {
            if self.last_stats.member_tx_bytes.get(m) != Some(&tx) {
                rows.push((Some(m as u32), "tx_bytes", tx as f64));
            }
            if self.last_stats.member_rx_bytes.get(m) != Some(&rx) {
                rows.push((Some(m as u32), "rx_bytes", rx as f64));
            }
        }
        if s.bundle_tx_bytes != self.last_stats.bundle_tx_bytes {
            rows.push((None, "tx_bytes", s.bundle_tx_bytes as f64));
        }
        if s.bundle_rx_bytes != self.last_stats.bundle_rx_bytes {
            rows.push((None, "rx_bytes", s.bundle_rx_bytes as f64));
        }
        for (modem, kind, value) in rows {
            let mut e = Event::new(kind).value(value);
            e.modem = modem;
            self.log(now, e)?;
        }
        self.last_stats = s;
        Ok(())
    }

    /// When the loop must wake next.
    fn next_wakeup(&self, now: SimTime) -> SimTime {
        let mut t = now + TICK;
        let mut consider = |w: Option<SimTime>| {
            if let Some(w) = w {
                t = t.min(w);
            }
        };
        for (i, m) in self.members.iter().enumerate() {
            consider(m.at.next_wakeup());
            consider(self.signal_due(i));
        }
        consider(self.sup.next_wakeup());
        consider(self.plane.as_ref().and_then(|p| p.next_wakeup()));
        t.max(now)
    }

    /// One turn of the loop: waits for a port, the data plane or a timer (at most
    /// `max_wait_ms`), and handles what is due.
    pub fn step(&mut self, max_wait_ms: u64) -> Result<(), String> {
        let now = self.now();
        let wake = self.next_wakeup(now);
        let timeout_ms = crate::wake::poll_timeout_ms(now, wake, max_wait_ms);
        let mut ready: Vec<(usize, PollFlags)> = Vec::new();
        let mut plane_ready: Vec<RawFd> = Vec::new();
        let mut control_ready = false;
        {
            let mut owners: Vec<Option<usize>> = Vec::new();
            let mut fds: Vec<PollFd<'_>> = Vec::new();
            for (i, m) in self.members.iter().enumerate() {
                let Some(port) = m.port.as_ref() else {
                    continue;
                };
                let mut ev = PollFlags::empty();
                if !m.in_plane {
                    ev |= PollFlags::POLLIN;
                }
                if !m.out.is_empty() {
                    ev |= PollFlags::POLLOUT;
                }
                fds.push(PollFd::new(port.borrow(), ev));
                owners.push(Some(i));
            }
            let plane_fds: Vec<RawFd> = self.plane.as_ref().map(|p| p.fds()).unwrap_or_default();
            let borrowed: Vec<std::os::fd::BorrowedFd<'_>> =
                plane_fds.iter().map(|&fd| borrow_raw(fd)).collect();
            for b in &borrowed {
                fds.push(PollFd::new(*b, PollFlags::POLLIN));
                owners.push(None);
            }
            let first_control = fds.len();
            if let Some(c) = self.control.as_ref() {
                for fd in c.fds() {
                    fds.push(PollFd::new(fd, PollFlags::POLLIN));
                }
            }
            let t = PollTimeout::try_from(timeout_ms as i32).unwrap_or(PollTimeout::MAX);
            match poll(&mut fds, t) {
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(format!("poll: {}", e.desc())),
            }
            let first_plane = owners.len() - plane_fds.len();
            for (k, fd) in fds.iter().enumerate() {
                let Some(rev) = fd.revents().filter(|r| !r.is_empty()) else {
                    continue;
                };
                if k >= first_control {
                    control_ready = true;
                    continue;
                }
                match owners[k] {
                    Some(i) => ready.push((i, rev)),
                    None => plane_ready.push(plane_fds[k - first_plane]),
                }
            }
        }
        let now = self.now();
        for &(m, rev) in &ready {
            if rev.intersects(PollFlags::POLLIN) {
                self.read_port(now, m)?;
            }
            if rev.intersects(PollFlags::POLLOUT) {
                self.flush(now, m)?;
            }
            if rev.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL)
                && !rev.contains(PollFlags::POLLIN)
            {
                self.port_gone(now, m, "hung up")?;
            }
        }
        if let Some(p) = self.plane.as_mut() {
            for &fd in &plane_ready {
                p.on_ready(fd, now);
            }
        }
        if control_ready {
            self.serve_control(now)?;
        }
        self.on_timers(now)?;
        while let Some((member, how)) = self.plane.as_mut().and_then(|p| p.take_member_lost()) {
            let m = member as usize;
            if m < self.members.len() {
                if how == "no carrier" {
                    // The modem said so: it is back in command mode, nothing to hang up.
                    self.members[m].at.on_carrier_lost(now);
                    while self.members[m].at.poll().is_some() {}
                }
                // Otherwise the modem may still be in the call: the supervisor's `Down`
                // hangs it up.
                self.call_lost(now, m, &how)?;
            }
        }
        self.apply(now)
    }

    /// Answers the operators' requests that came in on the control socket.
    fn serve_control(&mut self, now: SimTime) -> Result<(), String> {
        let Some(mut control) = self.control.take() else {
            return Ok(());
        };
        let mut failure = None;
        control.service(|request| match self.operator(now, request) {
            Ok(answer) => answer,
            Err(e) => {
                failure = Some(e);
                "error: the daemon failed".into()
            }
        });
        self.control = Some(control);
        failure.map_or(Ok(()), Err)
    }

    /// Carries out an operator's request and logs it; its answer, `ok ...` or `error: ...`.
    /// `Err`: the log could not be written.
    fn operator(
        &mut self,
        now: SimTime,
        request: Result<Request, String>,
    ) -> Result<String, String> {
        let request = match request {
            Ok(r) => r,
            Err(e) => return Ok(format!("error: {e}")),
        };
        let (Request::Hold(modem) | Request::Release(modem)) = &request;
        let Some(m) = self.member_named(modem) else {
            let names: Vec<&str> = self.members.iter().map(|m| m.name.as_str()).collect();
            return Ok(format!(
                "error: no member {modem:?}; expected a name ({}) or a number from 0 to {}",
                names.join(", "),
                names.len() - 1
            ));
        };
        let name = self.members[m].name.clone();
        let mu = m as u32;
        let held = self.sup.is_held(mu);
        let (kind, answer) = match request {
            Request::Hold(_) if held => return Ok(format!("ok {name} already held")),
            Request::Release(_) if !held => return Ok(format!("ok {name} not held")),
            Request::Hold(_) => {
                self.sup.hold(now, mu);
                ("hold", format!("ok {name} held"))
            }
            Request::Release(_) => {
                self.sup.release(now, mu);
                ("release", format!("ok {name} released"))
            }
        };
        self.log(now, Event::new(kind).modem(mu).detail("operator"))?;
        self.apply(now)?;
        // A member held while idle changes no state: its hold is saved all the same.
        self.log.snapshot(&self.sup.snapshot())?;
        Ok(answer)
    }

    /// Member `modem`: by name, else by its number in the log.
    fn member_named(&self, modem: &str) -> Option<usize> {
        self.members
            .iter()
            .position(|m| m.name == modem)
            .or_else(|| {
                modem
                    .parse::<usize>()
                    .ok()
                    .filter(|&i| i < self.members.len())
            })
    }

    /// The supervisor (for tests and the caller's inspection).
    pub fn supervisor(&self) -> &Supervisor {
        &self.sup
    }

    /// Logs the stop. Closing the ports (dropping the daemon) drops DTR: a modem set to
    /// `&D2` hangs its call up.
    pub fn stop(&mut self) -> Result<(), String> {
        let now = self.now();
        self.log(now, Event::new("daemon").detail("stop"))
    }

    /// Runs until SIGTERM or SIGINT.
    pub(crate) fn run(mut self, signals: &Signals) -> Result<(), String> {
        while !signals.interrupted() {
            self.step(1000)?;
        }
        self.stop()
    }
}

/// Borrows a descriptor the data plane owns, for one poll.
fn borrow_raw(fd: RawFd) -> std::os::fd::BorrowedFd<'static> {
    // SAFETY: the data plane keeps `fd` open while it returns it from `fds()`, and the
    // borrow does not outlive the poll it is made for.
    #[allow(unsafe_code)]
    unsafe {
        std::os::fd::BorrowedFd::borrow_raw(fd)
    }
}

/// Runs the daemon on `cfg` until SIGTERM or SIGINT. A log that cannot be opened or
/// belongs to another schema is the configuration's fault ([`LinkMgrError::Config`]).
pub fn run(cfg: LinkMgrConfig, plane: Option<Box<dyn DataPlane>>) -> Result<(), LinkMgrError> {
    let signals = Signals::install().map_err(|e| LinkMgrError::System(e.to_string()))?;
    let daemon = Daemon::new(cfg, plane).map_err(LinkMgrError::Config)?;
    daemon.run(&signals).map_err(LinkMgrError::System)
}

#[cfg(test)]
mod tests {
    use super::*;
    use farlink_core::modem::{ModemSnapshot, SupervisorStats};

    #[test]
    fn rebase_carries_a_timer_across_a_restart_through_the_wall_clock() {
        let snap = SupervisorSnapshot {
            modems: vec![
                ModemSnapshot {
                    state: ModemState::Blocked,
                    timer_ns: Some(3_600_000_000_000),
                    failures: 0,
                    drops: 2,
                    held: false,
                },
                ModemSnapshot {
                    state: ModemState::Dropped,
                    timer_ns: Some(10_000_000_000),
                    failures: 0,
                    drops: 1,
                    held: false,
                },
            ],
            primary: None,
            next_attempt: 7,
            stats: SupervisorStats::default(),
        };
        // The old daemon started at 1000 s; this one at 1600 s.
        let r = rebase(snap, 1000.0, 1600.0);
        assert_eq!(r.modems[0].timer_ns, Some(3_000_000_000_000));
        assert_eq!(r.modems[1].timer_ns, Some(0), "already over: at once");
        assert_eq!(r.next_attempt, 7);
    }

    /// A data plane that only reads its members' ports for `NO CARRIER`, recording what the
    /// daemon hands it.
    struct WatchingPlane {
        seen: std::rc::Rc<std::cell::RefCell<Vec<(u32, bool)>>>,
        up: Vec<(u32, RawFd)>,
        lost: Vec<(u32, String)>,
    }

    impl DataPlane for WatchingPlane {
        fn member_up(&mut self, member: u32, fd: RawFd, _now: SimTime) {
            self.seen.borrow_mut().push((member, true));
            self.up.push((member, fd));
        }
        fn member_down(&mut self, member: u32, _now: SimTime) {
            self.seen.borrow_mut().push((member, false));
            self.up.retain(|&(m, _)| m != member);
        }
        fn fds(&self) -> Vec<RawFd> {
            self.up.iter().map(|&(_, fd)| fd).collect()
        }
        fn on_ready(&mut self, fd: RawFd, _now: SimTime) {
            let mut buf = [0u8; 256];
            let n = nix::unistd::read(borrow_raw(fd), &mut buf).unwrap_or(0);
            if buf[..n].windows(10).any(|w| w == b"NO CARRIER") {
                if let Some(&(m, _)) = self.up.iter().find(|&&(_, f)| f == fd) {
                    self.lost.push((m, "no carrier".into()));
                }
            }
        }
        fn next_wakeup(&self) -> Option<SimTime> {
            None
        }
        fn on_timer(&mut self, _now: SimTime) {}
        fn stats(&self) -> PlaneStats {
            PlaneStats::default()
        }
        fn take_member_lost(&mut self) -> Option<(u32, String)> {
            self.lost.pop()
        }
    }

    #[test]
    fn the_loop_hands_calls_to_the_data_plane_and_takes_its_drops_back() {
        use crate::config;
        use crate::modemsim::{CallLinks, ModemSim, SimOptions};

        let dir = std::env::temp_dir().join(format!("farlink-daemon-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut sim = ModemSim::new(SimOptions {
            modems: 3,
            dir: dir.clone(),
            time_scale: 1.0,
            seed: 1,
            link_name: "iridium".into(),
            calls: CallLinks::Plain {
                rate_bps: 2400,
                delay: SimDuration::from_millis(10),
            },
            call_drop_rate_per_s: vec![0.0],
            dial_time: SimDuration::from_millis(50),
            dial_failure_prob: 0.0,
            signal_reply: SimDuration::from_millis(50),
        })
        .unwrap();
        let members: String = (0..3)
            .map(|k| format!("[[members]]\ndevice = \"air{k}\"\n"))
            .collect();
        let text = format!(
            "log = \"log.sqlite\"\n{members}[profile]\nguard_time = \"0.1s\"\n\
             [timers]\nt_d = \"0.1s\"\n"
        );
        let cfg = config::parse("t.toml", &text, &dir).unwrap();
        let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let plane = WatchingPlane {
            seen: seen.clone(),
            up: Vec::new(),
            lost: Vec::new(),
        };
        let mut d = Daemon::new(cfg, Some(Box::new(plane))).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let mut turn = |d: &mut Daemon| {
            assert!(std::time::Instant::now() < deadline, "gave up: {seen:?}");
            sim.step(5).unwrap();
            d.step(5).unwrap();
        };
        while d.supervisor().connected() < 3 {
            turn(&mut d);
        }
        let mut ups: Vec<(u32, bool)> = seen.borrow().clone();
        ups.sort();
        assert_eq!(ups, [(0, true), (1, true), (2, true)]);
        // The network drops member 1's call: the data plane, which holds its port, sees
        // `NO CARRIER`; the daemon takes it as a drop, takes the port back and redials.
        std::fs::write(dir.join("air1.drop"), b"").unwrap();
        while d.supervisor().stats().call_drops == 0 || d.supervisor().connected() < 3 {
            turn(&mut d);
        }
        let after: Vec<(u32, bool)> = seen.borrow()[3..].to_vec();
        assert_eq!(after, [(1, false), (1, true)]);
        assert_eq!(d.supervisor().stats().dials, 4);
        assert_eq!(d.supervisor().stats().dial_failures, 0);
        d.stop().unwrap();
        drop(d);
        drop(sim);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
