//! Simulated Iridium modems on pseudo-terminals, for the daemon to drive without hardware.
//!
//! Pair `k` is an air modem and a ground modem, each a [`Dce`] behind a pty whose slave end is
//! linked as `DIR/air<k>` and `DIR/ground<k>`. The air modem dials; the dial answers after the
//! bundle's dial time and fails with its probability, drawn from the simulator's own stream of
//! that member ([`farlink_core::path::member_stream`]); a successful dial rings the paired
//! ground modem, which answers at once (auto-answer, as the ground station's modems were set).
//! The call carries octets both ways at the member's rate with its one-way delay, and drops
//! after an exponential time of mean 1/β drawn from the member's call-drop stream, so one seed
//! gives the simulator's calls. `time_scale` divides the dial time and every call's duration.
//!
//! Each direction of a call is the simulator's member in that direction
//! ([`super::modemarq::CallDir`] over [`farlink_core::path::member_arq_link`]): the air modem
//! sends on the member's forward link, the ground modem on its reverse one, framed, paced at
//! the member's rate, damaged by its error model (stream `link:<name>:<fwd|rev>:member<k>:loss`)
//! and repaired by its ARQ. A unit whose frame used up its tries is lost (a line on stderr);
//! the counters of every pair are kept in `DIR/modem-sim.json` (rewritten every second).
//!
//! Signal queries (`AT+CSQ`) are answered after `signal_reply`, and 7/4 of it when a handover
//! falls within the wait (every 10 minutes, at a phase drawn per modem: the Iridium
//! inter-satellite handover of seed 000 section 5.1).
//!
//! Faults, by control files in `DIR` (made by a test or an operator, looked at every 100 ms):
//! `air<k>.drop` drops the call now (the file is removed), `air<k>.unplug` closes the modem's
//! port for good (its link is removed), `air<k>.garbage` makes the modem answer every command
//! line with noise while the file exists, `air<k>.mute` makes it answer nothing,
//! `air<k>.handover` makes its next signal reply as late as in a handover (the file is
//! removed). A DTE that closes its port (DTR drops) hangs the call up (`&D2`).

use std::collections::BinaryHeap;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use crate::ppp::dce::{Dce, DceConfig, DceOutput, DialOutcome};
use farlink_core::arq::{ArqLink, ArqLinkConfig};
use farlink_core::loss::{AnyLoss, NoLoss};
use farlink_core::path::{
    draw_call_duration, draw_dial_ok, member_arq_link, member_stream, MemberDraw,
};
use farlink_core::rng::StreamRng;
use farlink_core::scenario::LinkSpec;
use farlink_core::time::BitRate;
use farlink_core::time::{SimDuration, SimTime};
use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::pty::openpty;
use nix::sys::termios::{cfmakeraw, tcgetattr, tcsetattr, SetArg};

use super::modemarq::{CallDir, CallDirStats, CallOutput};
use farlink_emu::clock::monotonic_ns;
use farlink_emu::signals::Signals;

/// The Iridium inter-satellite handover period (seed 000 section 5.1: late replies "separated
/// by multiples of 10 minutes").
const HANDOVER_PERIOD: SimDuration = SimDuration::from_secs(600);
/// How often the control files and closed ports are looked at.
const TICK: SimDuration = SimDuration::from_millis(100);
/// How often the counters file is rewritten.
const STATS_EVERY: SimDuration = SimDuration::from_secs(1);
/// Octets a modem holds for its call before it stops taking more from its DTE (the port's
/// flow control: the DTE's writes then wait in the pty): a second of the Iridium line.
const HOLD_OCTETS: usize = 300;
/// The counters file in `DIR`.
pub const STATS_FILE: &str = "modem-sim.json";

/// How each pair's calls carry octets.
#[derive(Clone, Debug)]
pub enum CallLinks {
    /// Pair `k` is member `k` of bundle link `index` of a scenario (`link`): its rate, delay,
    /// ARQ and error models, drawn from the member's streams of [`SimOptions::seed`].
    Bundle { link: Box<LinkSpec>, index: usize },
    /// An error-free line without ARQ (units as queued, see [`super::modemarq`]).
    Plain { rate_bps: u64, delay: SimDuration },
}

impl CallLinks {
    /// The link carrying pair `k`'s octets, air to ground if `forward`.
    fn build(&self, seed: u64, k: usize, forward: bool) -> Result<ArqLink<AnyLoss>, String> {
        match self {
            CallLinks::Bundle { link, index } => {
                member_arq_link(seed, *index, link, forward, k).map_err(|e| e.to_string())
            }
            CallLinks::Plain { rate_bps, delay } => ArqLink::new(
                ArqLinkConfig {
                    rate: BitRate::from_bps(*rate_bps),
                    delay: *delay,
                    arq: None,
                },
                AnyLoss::None(NoLoss),
            )
            .map_err(|e| e.to_string()),
        }
    }
}

/// What the simulated modems are.
#[derive(Clone, Debug)]
pub struct SimOptions {
    pub modems: usize,
    pub dir: PathBuf,
    /// Divides the dial time and the call durations.
    pub time_scale: f64,
    pub seed: u64,
    /// The bundle link whose member streams are drawn (`link:<name>:member<k>:...`).
    pub link_name: String,
    /// What carries each call's octets.
    pub calls: CallLinks,
    /// β per member (the last one repeats for more modems than the bundle has).
    pub call_drop_rate_per_s: Vec<f64>,
    pub dial_time: SimDuration,
    pub dial_failure_prob: f64,
    /// How long a signal query takes to answer without a handover.
    pub signal_reply: SimDuration,
}

/// Which modem of a pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Side {
    Air,
    Ground,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Air => "air",
            Side::Ground => "ground",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum SimEvent {
    DialDone {
        pair: usize,
        ok: bool,
    },
    CallDrop {
        pair: usize,
        conn: u64,
    },
    ToHost {
        pair: usize,
        side: Side,
        data: Vec<u8>,
    },
}

/// One modem and its pty.
struct Modem {
    dce: Dce,
    master: Option<OwnedFd>,
    link: PathBuf,
    /// Whether the DTE has the port open (the master sees no hang-up).
    dte_open: bool,
    /// Octets for the DTE the master has not taken.
    out: Vec<u8>,
    /// The command line being typed (to see a signal query coming).
    line: Vec<u8>,
}

struct Pair {
    air: Modem,
    ground: Modem,
    /// The call's number, to ignore events of calls already over.
    conn: u64,
    dial_rng: StreamRng,
    drop_rng: StreamRng,
    drop_rate_per_s: f64,
    handover_phase: SimDuration,
    /// The call air to ground, and ground to air.
    fwd: CallDir,
    rev: CallDir,
}

impl Pair {
    fn modem(&mut self, side: Side) -> &mut Modem {
        match side {
            Side::Air => &mut self.air,
            Side::Ground => &mut self.ground,
        }
    }

    /// The direction of the call `side` sends on.
    fn call_from(&mut self, side: Side) -> &mut CallDir {
        match side {
            Side::Air => &mut self.fwd,
            Side::Ground => &mut self.rev,
        }
    }
}

/// What the DTEs of both sides of a pair have written, and what their calls carried.
#[derive(serde::Serialize)]
struct PairStats {
    modem: String,
    air_to_ground: CallDirStats,
    ground_to_air: CallDirStats,
}

/// The contents of [`STATS_FILE`].
#[derive(serde::Serialize)]
struct SimStats {
    pairs: Vec<PairStats>,
    /// Both directions of every pair.
    total: CallDirStats,
}

/// The running simulator.
pub struct ModemSim {
    opts: SimOptions,
    pairs: Vec<Pair>,
    queue: BinaryHeap<std::cmp::Reverse<(SimTime, u64, SimEvent)>>,
    seq: u64,
    start_mono_ns: u64,
    next_tick: SimTime,
    next_stats: SimTime,
    /// The counters last written.
    stats_written: Option<CallDirStats>,
}

fn make_pty(link: &Path) -> Result<(OwnedFd, PathBuf), String> {
    let pty = openpty(None, None).map_err(|e| format!("openpty: {}", e.desc()))?;
    let name = nix::unistd::ttyname(&pty.slave).map_err(|e| format!("ttyname: {}", e.desc()))?;
    // Raw from the start, so nothing the DTE sends before it sets the port up is echoed.
    if let Ok(mut t) = tcgetattr(&pty.slave) {
        cfmakeraw(&mut t);
        let _ = tcsetattr(&pty.slave, SetArg::TCSANOW, &t);
    }
    nix::fcntl::fcntl(
        &pty.master,
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
    )
    .map_err(|e| format!("fcntl: {}", e.desc()))?;
    let _ = std::fs::remove_file(link);
    std::os::unix::fs::symlink(&name, link)
        .map_err(|e| format!("cannot link {}: {e}", link.display()))?;
    // The slave is closed here: the master sees a hang-up until a DTE opens it.
    drop(pty.slave);
    Ok((pty.master, name))
}

impl ModemSim {
    /// Makes the modems and their links in `opts.dir`.
    pub fn new(opts: SimOptions) -> Result<ModemSim, String> {
        if opts.modems == 0 || opts.modems > 64 {
            return Err(format!("--modems: expected 1 to 64, got {}", opts.modems));
        }
        if !(opts.time_scale.is_finite() && opts.time_scale >= 1.0) {
            return Err(format!(
                "--time-scale: expected a number of at least 1, got {}",
                opts.time_scale
            ));
        }
        std::fs::create_dir_all(&opts.dir)
            .map_err(|e| format!("cannot make {}: {e}", opts.dir.display()))?;
        // Every link checked before the first is made: a file of someone else's in the way
        // is refused with nothing replaced.
        for k in 0..opts.modems {
            for side in ["air", "ground"] {
                super::paths::check_pty_link(&opts.dir.join(format!("{side}{k}")))
                    .map_err(|e| format!("--dir: {e}"))?;
            }
        }
        let mut pairs = Vec::with_capacity(opts.modems);
        for k in 0..opts.modems {
            let modem = |side: Side| -> Result<Modem, String> {
                let link = opts.dir.join(format!("{}{k}", side.name()));
                let (master, _) = make_pty(&link)?;
                Ok(Modem {
                    dce: Dce::new(DceConfig::iridium()),
                    master: Some(master),
                    link,
                    dte_open: false,
                    out: Vec::new(),
                    line: Vec::new(),
                })
            };
            let rates = &opts.call_drop_rate_per_s;
            let rate = rates.get(k).or(rates.last()).copied().unwrap_or(0.0);
            let mut phase_rng = StreamRng::derive(opts.seed, &format!("modemsim:air{k}:handover"));
            let phase =
                SimDuration::from_secs_f64(phase_rng.uniform() * HANDOVER_PERIOD.as_secs_f64());
            pairs.push(Pair {
                air: modem(Side::Air)?,
                ground: modem(Side::Ground)?,
                conn: 0,
                dial_rng: member_stream(opts.seed, &opts.link_name, k, MemberDraw::Dial),
                drop_rng: member_stream(opts.seed, &opts.link_name, k, MemberDraw::CallDrop),
                drop_rate_per_s: rate,
                handover_phase: phase,
                fwd: CallDir::new(opts.calls.build(opts.seed, k, true)?),
                rev: CallDir::new(opts.calls.build(opts.seed, k, false)?),
            });
        }
        Ok(ModemSim {
            opts,
            pairs,
            queue: BinaryHeap::new(),
            seq: 0,
            start_mono_ns: monotonic_ns(),
            next_tick: SimTime::ZERO,
            next_stats: SimTime::ZERO,
            stats_written: None,
        })
    }

    fn now(&self) -> SimTime {
        SimTime::from_nanos(monotonic_ns().saturating_sub(self.start_mono_ns))
    }

    fn schedule(&mut self, at: SimTime, e: SimEvent) {
        self.seq += 1;
        self.queue.push(std::cmp::Reverse((at, self.seq, e)));
    }

    fn scaled(&self, d: SimDuration) -> SimDuration {
        SimDuration::from_secs_f64(d.as_secs_f64() / self.opts.time_scale)
    }

    /// Whether a handover of pair `k` falls in [from, to].
    fn handover_within(&self, k: usize, from: SimTime, to: SimTime) -> bool {
        let period = HANDOVER_PERIOD.as_nanos();
        let phase = self.pairs[k].handover_phase.as_nanos();
        let from = from.as_nanos();
        // The first handover at or after `from`.
        let next = if from <= phase {
            phase
        } else {
            phase + (from - phase).div_ceil(period) * period
        };
        next <= to.as_nanos()
    }

    fn fault(&self, k: usize, what: &str) -> bool {
        self.opts.dir.join(format!("air{k}.{what}")).exists()
    }

    /// A one-shot fault: whether its file exists, removing it.
    fn take_fault(&self, k: usize, what: &str) -> bool {
        std::fs::remove_file(self.opts.dir.join(format!("air{k}.{what}"))).is_ok()
    }

    /// Octets the DTE of modem (`k`, `side`) wrote.
    fn on_dte_bytes(&mut self, now: SimTime, k: usize, side: Side, bytes: &[u8]) {
        let in_command = !self.pairs[k].modem(side).dce.call_up();
        if side == Side::Air && in_command && self.fault(k, "mute") {
            return;
        }
        if side == Side::Air && in_command && self.fault(k, "garbage") {
            if bytes.contains(&b'\r') {
                self.emit(
                    now,
                    k,
                    side,
                    b"\r\n\x07#?%garbage&*\r\n".to_vec(),
                    SimDuration::ZERO,
                );
            }
            return;
        }
        // A signal query is answered late (a measurement takes time; longer in a handover).
        let mut delay = SimDuration::ZERO;
        if in_command {
            let m = self.pairs[k].modem(side);
            for &b in bytes {
                if b == b'\r' {
                    let line = String::from_utf8_lossy(&m.line).to_ascii_uppercase();
                    if line.contains("+CSQ") {
                        delay = self.opts.signal_reply;
                    }
                    m.line.clear();
                } else if m.line.len() < 256 {
                    m.line.push(b);
                }
            }
            let forced =
                delay > SimDuration::ZERO && side == Side::Air && self.take_fault(k, "handover");
            if delay > SimDuration::ZERO && (forced || self.handover_within(k, now, now + delay)) {
                delay = SimDuration::from_nanos(delay.as_nanos() / 4 * 7);
            }
        }
        self.pairs[k].modem(side).dce.on_host_bytes(now, bytes);
        self.drain(now, k, side, delay);
    }

    fn emit(&mut self, now: SimTime, k: usize, side: Side, data: Vec<u8>, delay: SimDuration) {
        if delay > SimDuration::ZERO {
            self.schedule(
                now + delay,
                SimEvent::ToHost {
                    pair: k,
                    side,
                    data,
                },
            );
        } else {
            let m = self.pairs[k].modem(side);
            if m.dte_open {
                m.out.extend_from_slice(&data);
            }
        }
    }

    /// Carries out what modem (`k`, `side`) asks for.
    fn drain(&mut self, now: SimTime, k: usize, side: Side, delay: SimDuration) {
        while let Some(o) = self.pairs[k].modem(side).dce.poll() {
            match o {
                DceOutput::ToHost(data) => self.emit(now, k, side, data, delay),
                DceOutput::Dial { .. } => {
                    if side == Side::Ground {
                        // The ground station does not dial out.
                        self.pairs[k]
                            .ground
                            .dce
                            .on_dial_outcome(now, DialOutcome::NoCarrier);
                        continue;
                    }
                    let ok = draw_dial_ok(&mut self.pairs[k].dial_rng, self.opts.dial_failure_prob);
                    let at = now + self.scaled(self.opts.dial_time);
                    self.schedule(at, SimEvent::DialDone { pair: k, ok });
                }
                DceOutput::HangUp => self.end_call(now, k, side),
                // The call's ARQ link paces the octets; the modem's own clock is not used.
                DceOutput::ToPeer { data, .. } => {
                    let mut outs = Vec::new();
                    self.pairs[k]
                        .call_from(side)
                        .send(now, &data, &mut |o| outs.push(o));
                    self.carried(now, k, side, outs);
                }
            }
        }
    }

    /// What the call from `side` of pair `k` carried: octets for the other modem, losses.
    fn carried(&mut self, now: SimTime, k: usize, from: Side, outs: Vec<CallOutput>) {
        let to = match from {
            Side::Air => Side::Ground,
            Side::Ground => Side::Air,
        };
        for o in outs {
            match o {
                CallOutput::Delivered { octets, .. } => {
                    self.pairs[k].modem(to).dce.on_peer_bytes(now, &octets);
                    self.drain(now, k, to, SimDuration::ZERO);
                }
                CallOutput::Lost { at, octets } => eprintln!(
                    "modem-sim: {}{k} to {}{k}: a frame used up its tries at {:.3} s: {octets} octets lost",
                    from.name(),
                    to.name(),
                    at.as_secs_f64()
                ),
            }
        }
    }

    /// Runs both directions of pair `k`'s call to `now`, handing on what they carried.
    fn advance_calls(&mut self, now: SimTime, k: usize) {
        for side in [Side::Air, Side::Ground] {
            let mut outs = Vec::new();
            self.pairs[k]
                .call_from(side)
                .advance(now, &mut |o| outs.push(o));
            self.carried(now, k, side, outs);
        }
    }

    /// Pair `k`'s call is over: what was due is handed on, the rest is lost.
    fn end_calls(&mut self, now: SimTime, k: usize) {
        self.advance_calls(now, k);
        for side in [Side::Air, Side::Ground] {
            let mut outs = Vec::new();
            self.pairs[k]
                .call_from(side)
                .end_call(now, &mut |o| outs.push(o));
            self.carried(now, k, side, outs);
        }
    }

    /// One end hung up: the other end's modem loses its carrier.
    fn end_call(&mut self, now: SimTime, k: usize, from: Side) {
        self.end_calls(now, k);
        self.pairs[k].conn += 1;
        let other = match from {
            Side::Air => Side::Ground,
            Side::Ground => Side::Air,
        };
        self.pairs[k].modem(other).dce.on_call_lost(now);
        self.drain(now, k, other, SimDuration::ZERO);
    }

    fn on_event(&mut self, now: SimTime, e: SimEvent) {
        match e {
            SimEvent::DialDone { pair: k, ok } => {
                let p = &mut self.pairs[k];
                let outcome = if !ok {
                    DialOutcome::NoCarrier
                } else if p.ground.dce.on_incoming_call(now) {
                    DialOutcome::Connected
                } else {
                    DialOutcome::Busy
                };
                p.air.dce.on_dial_outcome(now, outcome);
                if outcome == DialOutcome::Connected && p.air.dce.call_up() {
                    p.conn += 1;
                    let conn = p.conn;
                    if let Some(d) = draw_call_duration(&mut p.drop_rng, p.drop_rate_per_s) {
                        let at = now + self.scaled(d);
                        self.schedule(at, SimEvent::CallDrop { pair: k, conn });
                    }
                } else if outcome == DialOutcome::Connected {
                    // The dial was aborted meanwhile: the ground end hangs up again.
                    p.ground.dce.on_call_lost(now);
                }
                self.drain(now, k, Side::Air, SimDuration::ZERO);
                self.drain(now, k, Side::Ground, SimDuration::ZERO);
            }
            SimEvent::CallDrop { pair: k, conn } => {
                if self.pairs[k].conn == conn {
                    self.drop_call(now, k);
                }
            }
            SimEvent::ToHost {
                pair: k,
                side,
                data,
            } => {
                let m = self.pairs[k].modem(side);
                // A reply overtaken by a call (answered meanwhile) is not sent into it.
                if m.dte_open && !m.dce.call_up() {
                    m.out.extend_from_slice(&data);
                }
            }
        }
    }

    /// The network drops pair `k`'s call: both modems lose their carrier.
    fn drop_call(&mut self, now: SimTime, k: usize) {
        self.end_calls(now, k);
        let p = &mut self.pairs[k];
        p.conn += 1;
        p.air.dce.on_call_lost(now);
        p.ground.dce.on_call_lost(now);
        self.drain(now, k, Side::Air, SimDuration::ZERO);
        self.drain(now, k, Side::Ground, SimDuration::ZERO);
    }

    /// The control files, and whether closed ports were opened.
    fn on_tick(&mut self, now: SimTime) {
        for k in 0..self.pairs.len() {
            let drop_file = self.opts.dir.join(format!("air{k}.drop"));
            if drop_file.exists() {
                let _ = std::fs::remove_file(&drop_file);
                self.drop_call(now, k);
            }
            let unplug = self.opts.dir.join(format!("air{k}.unplug"));
            if unplug.exists() && self.pairs[k].air.master.is_some() {
                let m = &mut self.pairs[k].air;
                m.master = None;
                let _ = std::fs::remove_file(&m.link);
                self.drop_call(now, k);
            }
            for side in [Side::Air, Side::Ground] {
                let m = self.pairs[k].modem(side);
                if m.dte_open {
                    continue;
                }
                let Some(master) = m.master.as_ref() else {
                    continue;
                };
                let mut fds = [PollFd::new(master.as_fd(), PollFlags::POLLIN)];
                let _ = poll(&mut fds, PollTimeout::ZERO);
                let hup = fds[0]
                    .revents()
                    .is_some_and(|r| r.contains(PollFlags::POLLHUP));
                if !hup {
                    // A DTE opened the port: a fresh modem (its settings are the DTE's to
                    // make). A call it answered with no DTE there ends: the new DTE starts in
                    // command mode, and the far end sees the call drop rather than a silent
                    // peer.
                    let had_call = m.dce.call_up();
                    m.dte_open = true;
                    m.line.clear();
                    if had_call {
                        self.drop_call(now, k);
                    }
                    let m = self.pairs[k].modem(side);
                    m.dce = Dce::new(DceConfig::iridium());
                    m.out.clear();
                }
            }
        }
    }

    /// The DTE of (`k`, `side`) closed its port: DTR drops, the call is hung up.
    fn dte_closed(&mut self, now: SimTime, k: usize, side: Side) {
        let m = self.pairs[k].modem(side);
        m.dte_open = false;
        m.out.clear();
        if m.dce.call_up() {
            m.dce.on_call_lost(now);
            while m.dce.poll().is_some() {}
            self.end_call(now, k, side);
        }
    }

    fn next_wakeup(&self, now: SimTime) -> SimTime {
        let mut t = self.next_tick;
        if let Some(std::cmp::Reverse((at, _, _))) = self.queue.peek() {
            t = t.min(*at);
        }
        for p in &self.pairs {
            for m in [&p.air, &p.ground] {
                if let Some(w) = m.dce.next_wakeup() {
                    t = t.min(w);
                }
            }
            for w in [p.fwd.next_wakeup(), p.rev.next_wakeup()]
                .into_iter()
                .flatten()
            {
                t = t.min(w);
            }
        }
        t.max(now)
    }

    /// One turn of the loop: waits for a DTE or an event (at most `max_wait_ms`) and handles
    /// what is due.
    pub fn step(&mut self, max_wait_ms: u64) -> Result<(), String> {
        let mut buf = [0u8; 1024];
        let now = self.now();
        let wake = self.next_wakeup(now);
        let timeout_ms = crate::wake::poll_timeout_ms(now, wake, max_wait_ms);
        let mut ready: Vec<(usize, Side, PollFlags)> = Vec::new();
        {
            let mut fds = Vec::new();
            let mut owners = Vec::new();
            for (k, p) in self.pairs.iter().enumerate() {
                for (side, m) in [(Side::Air, &p.air), (Side::Ground, &p.ground)] {
                    let Some(master) = m.master.as_ref() else {
                        continue;
                    };
                    if !m.dte_open {
                        continue;
                    }
                    // A modem whose call holds enough octets takes no more for now.
                    let held = match side {
                        Side::Air => p.fwd.queued_octets(),
                        Side::Ground => p.rev.queued_octets(),
                    };
                    let mut ev = if m.dce.call_up() && held >= HOLD_OCTETS {
                        PollFlags::empty()
                    } else {
                        PollFlags::POLLIN
                    };
                    if !m.out.is_empty() {
                        ev |= PollFlags::POLLOUT;
                    }
                    fds.push(PollFd::new(master.as_fd(), ev));
                    owners.push((k, side));
                }
            }
            let t = PollTimeout::try_from(timeout_ms as i32).unwrap_or(PollTimeout::MAX);
            match poll(&mut fds, t) {
                Ok(_) | Err(Errno::EINTR) => {}
                Err(e) => return Err(format!("poll: {}", e.desc())),
            }
            for (i, fd) in fds.iter().enumerate() {
                if let Some(r) = fd.revents().filter(|r| !r.is_empty()) {
                    ready.push((owners[i].0, owners[i].1, r));
                }
            }
        }
        let now = self.now();
        for (k, side, rev) in ready {
            if rev.contains(PollFlags::POLLIN) {
                let Some(master) = self.pairs[k].modem(side).master.as_ref() else {
                    continue;
                };
                match nix::unistd::read(master, &mut buf) {
                    Ok(n) if n > 0 => {
                        let data = buf[..n].to_vec();
                        self.on_dte_bytes(now, k, side, &data);
                    }
                    Ok(_) | Err(Errno::EIO) => self.dte_closed(now, k, side),
                    Err(_) => {}
                }
            } else if rev.intersects(PollFlags::POLLHUP | PollFlags::POLLERR) {
                self.dte_closed(now, k, side);
            }
        }
        while let Some(std::cmp::Reverse((at, _, _))) = self.queue.peek() {
            if *at > now {
                break;
            }
            let Some(std::cmp::Reverse((_, _, e))) = self.queue.pop() else {
                break;
            };
            self.on_event(now, e);
        }
        for k in 0..self.pairs.len() {
            self.advance_calls(now, k);
            for side in [Side::Air, Side::Ground] {
                self.pairs[k].modem(side).dce.on_timer(now);
                self.drain(now, k, side, SimDuration::ZERO);
            }
        }
        if now >= self.next_tick {
            self.next_tick = now + TICK;
            self.on_tick(now);
        }
        if now >= self.next_stats {
            self.next_stats = now + STATS_EVERY;
            self.write_stats();
        }
        self.flush_all();
        Ok(())
    }

    fn stats(&self) -> SimStats {
        let pairs: Vec<PairStats> = self
            .pairs
            .iter()
            .enumerate()
            .map(|(k, p)| PairStats {
                modem: format!("air{k}"),
                air_to_ground: p.fwd.stats(),
                ground_to_air: p.rev.stats(),
            })
            .collect();
        let total = pairs.iter().fold(CallDirStats::default(), |t, p| {
            t.plus(&p.air_to_ground).plus(&p.ground_to_air)
        });
        SimStats { pairs, total }
    }

    /// Rewrites [`STATS_FILE`] if a counter moved (whole: written aside, then renamed).
    fn write_stats(&mut self) {
        let s = self.stats();
        if self.stats_written == Some(s.total) {
            return;
        }
        let file = self.opts.dir.join(STATS_FILE);
        let tmp = self.opts.dir.join(format!(".{STATS_FILE}.tmp"));
        let Ok(text) = serde_json::to_string_pretty(&s) else {
            return;
        };
        if std::fs::write(&tmp, text + "\n").is_ok() && std::fs::rename(&tmp, &file).is_ok() {
            self.stats_written = Some(s.total);
        }
    }

    /// The links made, air and ground of each pair.
    pub fn links(&self) -> Vec<PathBuf> {
        self.pairs
            .iter()
            .flat_map(|p| [p.air.link.clone(), p.ground.link.clone()])
            .collect()
    }

    /// Runs until SIGTERM or SIGINT, then removes the links.
    pub(crate) fn run(mut self, signals: &Signals) -> Result<(), String> {
        while !signals.interrupted() {
            self.step(1000)?;
        }
        Ok(())
    }
}

impl Drop for ModemSim {
    fn drop(&mut self) {
        self.write_stats();
        for p in &self.pairs {
            for m in [&p.air, &p.ground] {
                let _ = std::fs::remove_file(&m.link);
            }
        }
    }
}

impl ModemSim {
    fn flush_all(&mut self) {
        for p in &mut self.pairs {
            for m in [&mut p.air, &mut p.ground] {
                if m.out.is_empty() || !m.dte_open {
                    continue;
                }
                let Some(master) = m.master.as_ref() else {
                    continue;
                };
                match nix::unistd::write(master, &m.out) {
                    Ok(n) => {
                        m.out.drain(..n);
                    }
                    Err(Errno::EAGAIN) => {}
                    Err(_) => m.out.clear(),
                }
            }
        }
    }
}

/// Makes the modems and runs them until SIGTERM or SIGINT; `ready` is called once the links
/// exist.
pub fn run(opts: SimOptions, ready: impl FnOnce(&[PathBuf])) -> Result<(), String> {
    let signals = Signals::install().map_err(|e| e.to_string())?;
    let sim = ModemSim::new(opts)?;
    ready(&sim.links());
    sim.run(&signals)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(dir: &Path) -> SimOptions {
        SimOptions {
            modems: 2,
            dir: dir.to_path_buf(),
            time_scale: 1.0,
            seed: 1,
            link_name: "iridium".into(),
            calls: CallLinks::Plain {
                rate_bps: 2400,
                delay: SimDuration::from_millis(500),
            },
            call_drop_rate_per_s: vec![1.0 / 3000.0],
            dial_time: SimDuration::from_millis(14_500),
            dial_failure_prob: 0.0,
            signal_reply: SimDuration::from_secs(4),
        }
    }

    #[test]
    fn makes_linked_ptys_and_finds_handovers_every_ten_minutes() {
        let dir = std::env::temp_dir().join(format!("farlink-modemsim-{}", std::process::id()));
        let sim = ModemSim::new(opts(&dir)).unwrap();
        for name in ["air0", "ground0", "air1", "ground1"] {
            let target = std::fs::read_link(dir.join(name)).unwrap();
            assert!(target.starts_with("/dev/pts"), "{}", target.display());
        }
        let phase = sim.pairs[0].handover_phase;
        let at = SimTime::ZERO + phase;
        let t = |s: u64| at + SimDuration::from_secs(s);
        assert!(sim.handover_within(0, at, at));
        assert!(sim.handover_within(0, t(599), t(600)));
        assert!(!sim.handover_within(0, t(1), t(599)));
        assert_eq!(
            sim.scaled(SimDuration::from_secs(10)),
            SimDuration::from_secs(10)
        );
        drop(sim);
        std::fs::remove_dir_all(&dir).unwrap();
        let mut bad = opts(Path::new("/tmp"));
        bad.time_scale = 0.5;
        assert!(ModemSim::new(bad).is_err());
    }
}
