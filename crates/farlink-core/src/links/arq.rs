//! A link with optional link-layer ARQ, as a sans-I/O component: one member of a bundle (or
//! any radio hop) that cuts each packet into frames of a set payload, sends them back to back at
//! its rate, lets an error model corrupt frames at the receiving end, and repairs them by
//! go-back-N or selective repeat with a bounded number of tries per frame.
//!
//! Read first: seed 000 section 4.1.6 (go-back-N under TCP, Figures 4.3 and 4.4; "if the ARQ
//! algorithm used has a predefined maximum number of retransmissions, then the ARQ recovery
//! failure may result in a TCP packet loss"); Bertsekas and Gallager, *Data Networks*, 2nd ed.,
//! section 2.4 (go-back-N and selective repeat); seed 004 section II (a NAK-based selective
//! repeat that gives up after a few tries).
//!
//! This module owns what happens to a packet ("unit": a packet or an MLPPP fragment) between
//! the moment it is handed to the member and the moment the receiving end hands it up whole
//! (delivered, in order) or discards it: [`DropCause::ArqGiveUp`] when one of its frames used up
//! its tries, [`DropCause::Corruption`] when the link has no ARQ and the unit was hit. It never
//! reads a clock and never schedules anything: the caller hands it `now`, takes the due
//! [`LinkEvent`]s from [`ArqLink::poll`] and asks [`ArqLink::next_wakeup`] when to call again.
//! It does not bound its own queue: the caller admits units while [`ArqLink::backlog_pkts`] is
//! below its limit (the Linux transmit queue of a member, seed 000 section 4.1.6).
//!
//! ```text
//!  offer ─▶ [units] ─▶ frames ─▶ serializer (rate) ─▶ air (delay) ─▶ error model ─▶ receiver
//!                       ▲                                                         │ in order
//!                       └──── ACK / NAK after `delay` (error-free feedback) ◀─────┘ ─▶ poll
//! ```
//!
//! # Protocol (choices where the seeds are silent; see `docs/far-links.md`)
//!
//! * Frames carry `frame_bytes` of the unit (the last one what is left); a unit of 1500 bytes at
//!   2400 bit/s is clocked in exactly 5 s whatever the frame size, as in section 4.1.6.
//!   Framing overhead is not modelled (the 2400 bit/s is the user rate).
//! * The error model decides each frame at the instant its last bit reaches the receiver. A
//!   corrupted frame is *received damaged*, so the receiver always knows it (a NAK, not a
//!   timer). Feedback (ACK, NAK, and the sender's notice that it gave a frame up) takes exactly
//!   `delay` and is never lost, as in seed 004's "perfect feedback channel".
//! * **Go-back-N**: the receiver accepts only the frame it expects; a damaged expected frame is
//!   NAKed, everything after it is discarded until it comes again, so several errors in one
//!   window cost one rollback (section 4.1.6). The sender keeps at most `window_frames`
//!   unacknowledged; on a NAK it goes back to the damaged frame after the frame on the wire.
//! * **Selective repeat**: the receiver keeps frames out of order, NAKs each damaged one, and
//!   hands units up in order; the sender resends only NAKed frames, before new ones.
//! * **Bounded tries**: a frame received damaged `max_tries` times is given up. The sender
//!   tells the receiver (the notice takes `delay`, in order with the frames), both move past
//!   it, and the unit it belongs to is discarded when the receiver reaches its end, with cause
//!   `ArqGiveUp`; TCP sees the loss. `max_tries = 1` sends every frame once.
//! * Without ARQ each unit is one frame, and a damaged unit is dropped as `Corruption`.
//! * **Events at one instant**: arrivals at the receiver, then feedback at the sender, then the
//!   end of a serialization (the next frame starts at that instant).
//!
//! # Memory
//!
//! Units, frames, the air and the feedback are `VecDeque`s of small `Copy` records with
//! capacity reserved for a window's worth; they grow only to their peak and never shrink.

use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;

use crate::error::ConfigError;
use crate::links::link::{DropCause, LinkEvent, Packet};
use crate::loss::LossModel;
use crate::time::{BitRate, SimDuration, SimTime};

/// The repair discipline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArqMode {
    GoBackN,
    SelectiveRepeat,
}

impl ArqMode {
    /// Names as scenarios spell them.
    pub const NAMES: [&'static str; 2] = ["go-back-n", "selective-repeat"];

    pub fn name(self) -> &'static str {
        match self {
            ArqMode::GoBackN => "go-back-n",
            ArqMode::SelectiveRepeat => "selective-repeat",
        }
    }
}

impl fmt::Display for ArqMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ArqMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "go-back-n" => Ok(ArqMode::GoBackN),
            "selective-repeat" => Ok(ArqMode::SelectiveRepeat),
            other => Err(format!(
                "unknown ARQ mode \"{other}\"; expected one of: {}",
                ArqMode::NAMES.join(", ")
            )),
        }
    }
}

/// The ARQ of one link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArqConfig {
    pub mode: ArqMode,
    /// Payload bytes per frame, at least 1.
    pub frame_bytes: u32,
    /// Damaged receptions of one frame before it is given up, 1 to 255.
    pub max_tries: u32,
    /// Frames the sender may have unacknowledged, at least 1.
    pub window_frames: u32,
}

impl ArqConfig {
    /// The frames sent in one frame time plus a round trip, 1 + ceil(2 delay / t_frame): the
    /// go-back-N window that keeps the line busy without errors (Bertsekas and Gallager 2.4),
    /// and the frames one go-back-N rollback costs.
    pub fn round_trip_frames(rate: BitRate, delay: SimDuration, frame_bytes: u32) -> u32 {
        let t_frame = rate
            .max(BitRate::from_bps(1))
            .transmission_time(frame_bytes.max(1))
            .as_nanos()
            .max(1);
        let rt = (2 * u128::from(delay.as_nanos())).div_ceil(u128::from(t_frame));
        u32::try_from(rt.saturating_add(1)).unwrap_or(u32::MAX)
    }

    /// The default window: the round-trip frames for go-back-N; for selective repeat that many
    /// per try, so a frame that needs every try never stalls the line.
    pub fn default_window(
        mode: ArqMode,
        rate: BitRate,
        delay: SimDuration,
        frame_bytes: u32,
        max_tries: u32,
    ) -> u32 {
        let rt = Self::round_trip_frames(rate, delay, frame_bytes);
        match mode {
            ArqMode::GoBackN => rt,
            ArqMode::SelectiveRepeat => rt.saturating_mul(max_tries.max(1)),
        }
    }

    /// Checks the domains; errors name the scenario's field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.frame_bytes == 0 {
            return Err(ConfigError::new(
                "frame_bytes",
                "expected a frame payload of at least 1 byte, got 0",
            ));
        }
        if !(1..=255).contains(&self.max_tries) {
            return Err(ConfigError::new(
                "max_tries",
                format!("expected 1 to 255 tries per frame, got {}", self.max_tries),
            ));
        }
        if self.window_frames == 0 {
            return Err(ConfigError::new(
                "window_frames",
                "expected a window of at least 1 frame, got 0",
            ));
        }
        Ok(())
    }
}

/// Probability that a unit of `frames` frames is given up when each try of a frame is damaged
/// independently with probability `p_frame` and a frame has `max_tries` tries:
/// 1 − (1 − p^k)^n.
pub fn residual_unit_loss(p_frame: f64, max_tries: u32, frames: u32) -> f64 {
    let pk = libm::pow(p_frame, f64::from(max_tries));
    1.0 - libm::pow(1.0 - pk, f64::from(frames))
}

/// Mean transmissions per frame of selective repeat with `max_tries` tries and independent
/// damage with probability `p_frame`: (1 − p^k) / (1 − p) (k for p = 1).
pub fn selective_repeat_transmissions(p_frame: f64, max_tries: u32) -> f64 {
    if p_frame >= 1.0 {
        return f64::from(max_tries);
    }
    (1.0 - libm::pow(p_frame, f64::from(max_tries))) / (1.0 - p_frame)
}

/// Parameters of an [`ArqLink`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArqLinkConfig {
    /// Serialization rate; positive.
    pub rate: BitRate,
    /// One-way propagation delay; also the feedback delay.
    pub delay: SimDuration,
    /// `None`: no ARQ (each unit is one frame; a damaged one is dropped as `Corruption`).
    pub arq: Option<ArqConfig>,
}

/// Counters since the link was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArqStats {
    pub units_offered: u64,
    pub units_delivered: u64,
    /// Units dropped as `Corruption` (no ARQ).
    pub units_corrupted: u64,
    /// Units dropped as `ArqGiveUp`.
    pub units_given_up: u64,
    /// Units handed back by [`ArqLink::clear`].
    pub units_cleared: u64,
    /// Frame transmissions, first ones and repeats.
    pub frames_sent: u64,
    pub frames_resent: u64,
    /// Frames received damaged.
    pub frames_damaged: u64,
    /// Frames given up.
    pub frames_given_up: u64,
    /// Bytes put on the line, repeats included.
    pub bytes_sent: u64,
}

/// A packet cut into frames `[first, first + frames)` of a link layer's sequence space (this
/// ARQ's and IS-707 RLP's).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Unit {
    pub(crate) pkt: Packet,
    pub(crate) first: u64,
    pub(crate) frames: u32,
    /// Handed up or discarded at the receiving end.
    pub(crate) reported: bool,
    /// One of its frames was given up.
    pub(crate) lost: bool,
}

impl Unit {
    /// The frame after its last.
    pub(crate) fn end(&self) -> u64 {
        self.first + u64::from(self.frames)
    }
}

/// Sender state of a frame in `[base, high)`.
#[derive(Clone, Copy, Debug, Default)]
struct FrameRec {
    damaged: u32,
    acked: bool,
    given_up: bool,
}

#[derive(Clone, Copy, Debug)]
enum Air {
    Frame(u64),
    /// The sender gave this frame up.
    Skip(u64),
}

#[derive(Clone, Copy, Debug)]
enum Feedback {
    /// Go-back-N: every frame before this one arrived. Selective repeat: this frame arrived.
    Ack(u64),
    /// This frame arrived damaged.
    Nak(u64),
}

#[derive(Clone, Copy, Debug)]
struct InService {
    done: SimTime,
    fseq: u64,
    /// The frame's first transmission.
    first: bool,
}

/// A link with optional ARQ; see the module documentation. `L` decides each frame.
#[derive(Debug)]
pub struct ArqLink<L: LossModel> {
    cfg: ArqLinkConfig,
    loss: L,
    units: VecDeque<Unit>,
    frames: VecDeque<FrameRec>,
    /// Frames numbered so far (the first frame of the next unit offered).
    total: u64,
    /// Oldest frame the sender still needs (not acknowledged, not given up).
    base: u64,
    /// First frame never sent.
    high: u64,
    /// Go-back-N: the next frame to send (at most `high`).
    next: u64,
    /// Selective repeat: NAKed frames to send again, oldest first.
    retx: VecDeque<u64>,
    in_service: Option<InService>,
    air: VecDeque<(SimTime, Air)>,
    feedback: VecDeque<(SimTime, Feedback)>,
    /// Receiver: the oldest frame not yet received (or skipped).
    r_expected: u64,
    /// Selective repeat receiver: frames from `r_expected` on: 0 missing, 1 received, 2 skipped.
    r_got: VecDeque<u8>,
    /// Units whose last frame has not finished its first transmission.
    backlog: usize,
    /// Units not yet reported.
    inside: u64,
    out: VecDeque<LinkEvent>,
    stats: ArqStats,
    last_now: SimTime,
}

impl<L: LossModel> ArqLink<L> {
    /// A link with configuration `cfg` deciding frames with `loss`.
    pub fn new(cfg: ArqLinkConfig, loss: L) -> Result<Self, ConfigError> {
        if cfg.rate.bps() == 0 {
            return Err(ConfigError::new(
                "rate_bps",
                "expected a positive rate in bit/s, got 0",
            ));
        }
        let window = match cfg.arq {
            Some(a) => {
                a.validate()?;
                a.window_frames as usize
            }
            None => 1,
        };
        let frame_bytes = cfg.arq.map_or(1500, |a| a.frame_bytes);
        let air = (ArqConfig::round_trip_frames(cfg.rate, cfg.delay, frame_bytes) as usize)
            .min(window.max(16))
            .clamp(16, 65_536);
        Ok(ArqLink {
            cfg,
            loss,
            units: VecDeque::with_capacity(16),
            frames: VecDeque::with_capacity((window + 1).min(65_536)),
            total: 0,
            base: 0,
            high: 0,
            next: 0,
            retx: VecDeque::with_capacity(16),
            in_service: None,
            air: VecDeque::with_capacity(air + 1),
            feedback: VecDeque::with_capacity(air + 1),
            r_expected: 0,
            r_got: VecDeque::with_capacity((window + 1).min(65_536)),
            backlog: 0,
            inside: 0,
            out: VecDeque::with_capacity(16),
            stats: ArqStats::default(),
            last_now: SimTime::ZERO,
        })
    }

    pub fn config(&self) -> &ArqLinkConfig {
        &self.cfg
    }

    pub fn stats(&self) -> &ArqStats {
        &self.stats
    }

    pub fn loss(&self) -> &L {
        &self.loss
    }

    /// Units offered whose last frame has not finished its first transmission: the packets in
    /// the member's transmit queue, the one being sent included.
    pub fn backlog_pkts(&self) -> usize {
        self.backlog
    }

    /// Units inside the link: not yet delivered or dropped.
    pub fn in_flight_units(&self) -> u64 {
        self.inside
    }

    /// Whether every unit offered is delivered, dropped, cleared or inside.
    pub fn conservation_holds(&self) -> bool {
        let s = &self.stats;
        s.units_offered
            == s.units_delivered
                + s.units_corrupted
                + s.units_given_up
                + s.units_cleared
                + self.inside
    }

    /// Hands `pkt` to the link at `now`. Always accepted: the caller bounds the backlog.
    pub fn offer(&mut self, now: SimTime, pkt: Packet) {
        let now = self.advance(now);
        let frames = match self.cfg.arq {
            Some(a) => u64::from(pkt.size_bytes)
                .div_ceil(u64::from(a.frame_bytes))
                .max(1) as u32,
            None => 1,
        };
        self.units.push_back(Unit {
            pkt,
            first: self.total,
            frames,
            reported: false,
            lost: false,
        });
        self.total += u64::from(frames);
        self.backlog += 1;
        self.inside += 1;
        self.stats.units_offered += 1;
        self.try_start(now);
    }

    /// The next event due at or before `now`, in time order.
    pub fn poll(&mut self, now: SimTime) -> Option<LinkEvent> {
        let now = self.advance(now);
        crate::links::link::pop_due(&mut self.out, now)
    }

    /// The earliest instant the link has something to do, or `None` when it is empty.
    pub fn next_wakeup(&self) -> Option<SimTime> {
        let deadlines = [
            self.air.front().map(|a| a.0),
            self.feedback.front().map(|f| f.0),
            self.in_service.map(|s| s.done),
        ];
        crate::links::link::next_due(&self.out, deadlines)
    }

    /// The call carrying the link is gone at `now`: every unit not yet delivered or dropped is
    /// handed to `lost` (in order), and the link starts afresh. Events already due stay due.
    pub fn clear(&mut self, now: SimTime, mut lost: impl FnMut(Packet)) {
        self.advance(now);
        for u in self.units.iter().filter(|u| !u.reported) {
            lost(u.pkt);
            self.stats.units_cleared += 1;
            self.inside -= 1;
        }
        self.units.clear();
        self.frames.clear();
        self.retx.clear();
        self.air.clear();
        self.feedback.clear();
        self.r_got.clear();
        self.in_service = None;
        self.base = self.total;
        self.high = self.total;
        self.next = self.total;
        self.r_expected = self.total;
        self.backlog = 0;
    }

    // ----- internals -----

    fn observe(&mut self, now: SimTime) -> SimTime {
        debug_assert!(
            now >= self.last_now,
            "ARQ link driven backwards in time: {now} after {}",
            self.last_now
        );
        self.last_now = self.last_now.max(now);
        self.last_now
    }

    /// Runs every internal event due at or before `now`, in time order.
    fn advance(&mut self, now: SimTime) -> SimTime {
        let now = self.observe(now);
        loop {
            let air = self.air.front().map(|a| a.0);
            let fb = self.feedback.front().map(|f| f.0);
            let tx = self.in_service.map(|s| s.done);
            let Some(t) = crate::links::link::earliest([air, fb, tx]) else {
                break;
            };
            if t > now {
                break;
            }
            if air == Some(t) {
                if let Some((_, item)) = self.air.pop_front() {
                    self.on_air(t, item);
                }
            } else if fb == Some(t) {
                if let Some((_, f)) = self.feedback.pop_front() {
                    self.on_feedback(t, f);
                    self.try_start(t);
                }
            } else {
                self.on_tx_done(t);
            }
        }
        now
    }

    /// Index into `units` of the unit holding frame `fseq`.
    fn unit_of(&self, fseq: u64) -> Option<usize> {
        let i = self.units.partition_point(|u| u.end() <= fseq);
        (i < self.units.len() && self.units[i].first <= fseq).then_some(i)
    }

    fn frame_bytes(&self, fseq: u64) -> u32 {
        let Some(i) = self.unit_of(fseq) else {
            return 0;
        };
        let u = &self.units[i];
        match self.cfg.arq {
            Some(a) => {
                let offset = (fseq - u.first) * u64::from(a.frame_bytes);
                (u64::from(u.pkt.size_bytes).saturating_sub(offset)).min(u64::from(a.frame_bytes))
                    as u32
            }
            None => u.pkt.size_bytes,
        }
    }

    /// Starts the next frame if the serializer is free and one may go.
    fn try_start(&mut self, t: SimTime) {
        if self.in_service.is_some() {
            return;
        }
        let fseq = match self.cfg.arq {
            None => (self.high < self.total).then_some(self.high),
            Some(a) => match a.mode {
                ArqMode::GoBackN => (self.next < self.total
                    && self.next < self.base + u64::from(a.window_frames))
                .then_some(self.next),
                ArqMode::SelectiveRepeat => self.retx.pop_front().or_else(|| {
                    (self.high < self.total && self.high < self.base + u64::from(a.window_frames))
                        .then_some(self.high)
                }),
            },
        };
        let Some(fseq) = fseq else {
            return;
        };
        let first = fseq >= self.high;
        if first {
            self.high = fseq + 1;
            if self.cfg.arq.is_some() {
                self.frames.push_back(FrameRec::default());
            }
        } else {
            self.stats.frames_resent += 1;
        }
        if matches!(self.cfg.arq, Some(a) if a.mode == ArqMode::GoBackN) {
            self.next = fseq + 1;
        }
        let bytes = self.frame_bytes(fseq);
        self.stats.frames_sent += 1;
        self.stats.bytes_sent += u64::from(bytes);
        self.in_service = Some(InService {
            done: t + self.cfg.rate.transmission_time(bytes),
            fseq,
            first,
        });
    }

    fn on_tx_done(&mut self, t: SimTime) {
        let Some(s) = self.in_service.take() else {
            return;
        };
        self.air.push_back((t + self.cfg.delay, Air::Frame(s.fseq)));
        if s.first {
            if let Some(i) = self.unit_of(s.fseq) {
                if self.units[i].end() == s.fseq + 1 {
                    self.backlog -= 1;
                }
            }
        }
        self.try_start(t);
    }

    /// Something reaches the receiving end at `t`.
    fn on_air(&mut self, t: SimTime, item: Air) {
        let back = t + self.cfg.delay;
        match item {
            Air::Frame(fseq) => {
                let damaged = self.loss.is_lost(t);
                if damaged {
                    self.stats.frames_damaged += 1;
                }
                let Some(a) = self.cfg.arq else {
                    // One frame per unit, in order: it is the oldest unit.
                    let Some(u) = self.units.pop_front() else {
                        return;
                    };
                    debug_assert_eq!(u.first, fseq);
                    self.inside -= 1;
                    if damaged {
                        self.stats.units_corrupted += 1;
                        self.out.push_back(LinkEvent::Dropped {
                            at: t,
                            pkt: u.pkt,
                            cause: DropCause::Corruption,
                        });
                    } else {
                        self.stats.units_delivered += 1;
                        self.out
                            .push_back(LinkEvent::Delivered { at: t, pkt: u.pkt });
                    }
                    return;
                };
                match a.mode {
                    ArqMode::GoBackN => {
                        if fseq != self.r_expected {
                            return; // discarded: an earlier frame is missing, or a repeat
                        }
                        if damaged {
                            self.feedback.push_back((back, Feedback::Nak(fseq)));
                        } else {
                            self.r_expected += 1;
                            self.feedback
                                .push_back((back, Feedback::Ack(self.r_expected)));
                            self.deliver_ready(t);
                        }
                    }
                    ArqMode::SelectiveRepeat => {
                        if fseq < self.r_expected {
                            return;
                        }
                        let idx = (fseq - self.r_expected) as usize;
                        while self.r_got.len() <= idx {
                            self.r_got.push_back(0);
                        }
                        if self.r_got[idx] != 0 {
                            return;
                        }
                        if damaged {
                            self.feedback.push_back((back, Feedback::Nak(fseq)));
                        } else {
                            self.r_got[idx] = 1;
                            self.feedback.push_back((back, Feedback::Ack(fseq)));
                            self.advance_receiver(t);
                        }
                    }
                }
            }
            Air::Skip(fseq) => match self.cfg.arq.map(|a| a.mode) {
                Some(ArqMode::GoBackN) if fseq >= self.r_expected => {
                    self.r_expected = fseq + 1;
                    self.deliver_ready(t);
                }
                Some(ArqMode::SelectiveRepeat) if fseq >= self.r_expected => {
                    let idx = (fseq - self.r_expected) as usize;
                    while self.r_got.len() <= idx {
                        self.r_got.push_back(0);
                    }
                    self.r_got[idx] = 2;
                    self.advance_receiver(t);
                }
                _ => {}
            },
        }
    }

    /// Selective repeat: moves `r_expected` past every frame received or skipped.
    fn advance_receiver(&mut self, t: SimTime) {
        while matches!(self.r_got.front(), Some(&g) if g != 0) {
            self.r_got.pop_front();
            self.r_expected += 1;
        }
        self.deliver_ready(t);
    }

    /// Hands up (or discards) every unit whose frames are all behind `r_expected`, in order.
    fn deliver_ready(&mut self, t: SimTime) {
        for u in self.units.iter_mut() {
            if u.reported {
                continue;
            }
            if u.end() > self.r_expected {
                break;
            }
            u.reported = true;
            self.inside -= 1;
            if u.lost {
                self.stats.units_given_up += 1;
                self.out.push_back(LinkEvent::Dropped {
                    at: t,
                    pkt: u.pkt,
                    cause: DropCause::ArqGiveUp,
                });
            } else {
                self.stats.units_delivered += 1;
                self.out
                    .push_back(LinkEvent::Delivered { at: t, pkt: u.pkt });
            }
        }
        self.prune();
    }

    /// Forgets units both ends are done with.
    fn prune(&mut self) {
        while matches!(self.units.front(), Some(u) if u.reported && u.end() <= self.base) {
            self.units.pop_front();
        }
    }

    /// Feedback reaches the sender at `t`.
    fn on_feedback(&mut self, t: SimTime, f: Feedback) {
        let Some(a) = self.cfg.arq else {
            return;
        };
        match (a.mode, f) {
            (ArqMode::GoBackN, Feedback::Ack(n)) => {
                while self.base < n.min(self.high) {
                    self.frames.pop_front();
                    self.base += 1;
                }
                self.next = self.next.max(self.base);
            }
            (ArqMode::GoBackN, Feedback::Nak(f)) => {
                if f < self.base || f >= self.high {
                    return;
                }
                // Every frame before `f` arrived.
                while self.base < f {
                    self.frames.pop_front();
                    self.base += 1;
                }
                let Some(rec) = self.frames.front_mut() else {
                    return;
                };
                rec.damaged += 1;
                if rec.damaged >= a.max_tries {
                    self.frames.pop_front();
                    self.base = f + 1;
                    self.give_up(t, f);
                }
                // Go back: everything after the damaged frame was discarded.
                self.next = self.base;
            }
            (ArqMode::SelectiveRepeat, Feedback::Ack(f)) => {
                if f < self.base || f >= self.high {
                    return;
                }
                self.frames[(f - self.base) as usize].acked = true;
                self.slide();
            }
            (ArqMode::SelectiveRepeat, Feedback::Nak(f)) => {
                if f < self.base || f >= self.high {
                    return;
                }
                let rec = &mut self.frames[(f - self.base) as usize];
                if rec.acked || rec.given_up {
                    return;
                }
                rec.damaged += 1;
                if rec.damaged >= a.max_tries {
                    rec.given_up = true;
                    self.give_up(t, f);
                    self.slide();
                } else {
                    self.retx.push_back(f);
                }
            }
        }
        self.prune();
    }

    /// Selective repeat: moves `base` past frames acknowledged or given up.
    fn slide(&mut self) {
        while matches!(self.frames.front(), Some(r) if r.acked || r.given_up) {
            self.frames.pop_front();
            self.base += 1;
        }
    }

    fn give_up(&mut self, t: SimTime, fseq: u64) {
        self.stats.frames_given_up += 1;
        if let Some(i) = self.unit_of(fseq) {
            self.units[i].lost = true;
        }
        self.air.push_back((t + self.cfg.delay, Air::Skip(fseq)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loss::{Bernoulli, DropList, NoLoss};
    use crate::rng::StreamRng;
    use proptest::prelude::*;

    const BPS_2400: BitRate = BitRate::from_bps(2400);

    /// Damages exactly the frames whose arrival index (0, 1, 2, ... over the channel's life) is
    /// listed: scenario loss `drop_list`, which numbers arrivals from 1.
    fn scripted(damaged: &[u64]) -> DropList {
        DropList::new(damaged.iter().map(|n| n + 1).collect()).expect("increasing indices")
    }

    const MS: u64 = 1_000_000;

    fn t_ms(ms: u64) -> SimTime {
        SimTime::from_nanos(ms * MS)
    }

    fn pkt(id: u64, size_bytes: u32) -> Packet {
        Packet {
            id,
            size_bytes,
            ..Packet::default()
        }
    }

    /// The Iridium member of the presets: 2400 bit/s, 0.5 s one way, 27-byte frames (90 ms).
    fn iridium(mode: Option<ArqMode>, max_tries: u32, window: Option<u32>) -> ArqLinkConfig {
        let delay = SimDuration::from_millis(500);
        ArqLinkConfig {
            rate: BPS_2400,
            delay,
            arq: mode.map(|mode| ArqConfig {
                mode,
                frame_bytes: 27,
                max_tries,
                window_frames: window.unwrap_or_else(|| {
                    ArqConfig::default_window(mode, BPS_2400, delay, 27, max_tries)
                }),
            }),
        }
    }

    fn run_to_empty<L: LossModel>(link: &mut ArqLink<L>) -> Vec<LinkEvent> {
        let mut out = Vec::new();
        while let Some(w) = link.next_wakeup() {
            let now = w.max(link.last_now);
            while let Some(e) = link.poll(now) {
                out.push(e);
            }
        }
        out
    }

    #[test]
    fn round_trip_frames_and_default_windows() {
        // 27-byte frames at 2400 bit/s last 90 ms; a 1 s round trip holds 11.1 of them.
        let d = SimDuration::from_millis(500);
        assert_eq!(ArqConfig::round_trip_frames(BPS_2400, d, 27), 13);
        assert_eq!(
            ArqConfig::default_window(ArqMode::GoBackN, BPS_2400, d, 27, 3),
            13
        );
        assert_eq!(
            ArqConfig::default_window(ArqMode::SelectiveRepeat, BPS_2400, d, 27, 3),
            39
        );
        assert_eq!(
            ArqConfig::round_trip_frames(BPS_2400, SimDuration::ZERO, 27),
            1
        );
    }

    #[test]
    fn residual_loss_and_transmissions_formulas() {
        assert!((residual_unit_loss(0.1, 2, 1) - 0.01).abs() < 1e-15);
        assert!((residual_unit_loss(0.0, 3, 56)).abs() < 1e-15);
        assert!((selective_repeat_transmissions(0.0, 3) - 1.0).abs() < 1e-15);
        assert!((selective_repeat_transmissions(0.5, 2) - 1.5).abs() < 1e-15);
        assert_eq!(selective_repeat_transmissions(1.0, 4), 4.0);
    }

    #[test]
    fn rejects_bad_parameters() {
        let mut c = iridium(Some(ArqMode::GoBackN), 3, None);
        c.rate = BitRate::from_bps(0);
        assert_eq!(ArqLink::new(c, NoLoss).unwrap_err().param, "rate_bps");
        for (frame, tries, window, param) in [
            (0, 3, 13, "frame_bytes"),
            (27, 0, 13, "max_tries"),
            (27, 256, 13, "max_tries"),
            (27, 3, 0, "window_frames"),
        ] {
            let mut c = iridium(Some(ArqMode::GoBackN), 3, None);
            c.arq = Some(ArqConfig {
                mode: ArqMode::GoBackN,
                frame_bytes: frame,
                max_tries: tries,
                window_frames: window,
            });
            assert_eq!(ArqLink::new(c, NoLoss).unwrap_err().param, param);
        }
        assert_eq!("go-back-n".parse::<ArqMode>(), Ok(ArqMode::GoBackN));
        assert!("stop-and-wait".parse::<ArqMode>().is_err());
    }

    #[test]
    fn without_errors_a_1500_byte_packet_takes_5_s_plus_propagation() {
        // Seed 000 section 4.1.6: 1500 * 8 / 2400 = 5 s of clocking, with or without ARQ.
        for mode in [None, Some(ArqMode::GoBackN), Some(ArqMode::SelectiveRepeat)] {
            let mut link = ArqLink::new(iridium(mode, 3, None), NoLoss).unwrap();
            link.offer(SimTime::ZERO, pkt(7, 1500));
            assert_eq!(link.backlog_pkts(), 1);
            let out = run_to_empty(&mut link);
            assert_eq!(
                out,
                vec![LinkEvent::Delivered {
                    at: t_ms(5_500),
                    pkt: pkt(7, 1500)
                }],
                "{mode:?}"
            );
            assert_eq!(link.backlog_pkts(), 0);
            assert!(link.conservation_holds());
            assert_eq!(link.stats().bytes_sent, 1500);
        }
    }

    #[test]
    fn backlog_frees_when_the_last_frame_is_first_sent() {
        let mut link = ArqLink::new(iridium(Some(ArqMode::GoBackN), 3, None), NoLoss).unwrap();
        link.offer(SimTime::ZERO, pkt(0, 270)); // 10 frames, 0.9 s
        link.offer(SimTime::ZERO, pkt(1, 270));
        assert_eq!(link.backlog_pkts(), 2);
        assert!(link.poll(t_ms(899)).is_none());
        assert_eq!(link.backlog_pkts(), 2);
        assert!(link.poll(t_ms(900)).is_none());
        assert_eq!(link.backlog_pkts(), 1);
        assert_eq!(link.in_flight_units(), 2);
        // Unit 0 arrives at 1.4 s; unit 1's last frame is sent at 1.8 s.
        assert!(link.poll(t_ms(1800)).is_some());
        assert_eq!(link.backlog_pkts(), 0);
        assert_eq!(link.in_flight_units(), 1);
    }

    #[test]
    fn go_back_n_one_damaged_frame_costs_a_rollback_of_the_window() {
        // Frame 0 is damaged. Its NAK reaches the sender at 0.09 + 0.5 + 0.5 = 1.09 s, while
        // frame 12 is on the line (1.08 to 1.17 s); the sender then goes back to frame 0 and
        // sends frames 0 to 12 again: 13 repeats, and the packet ends 1.17 s late.
        let mut link =
            ArqLink::new(iridium(Some(ArqMode::GoBackN), 3, None), scripted(&[0])).unwrap();
        link.offer(SimTime::ZERO, pkt(1, 1500));
        let out = run_to_empty(&mut link);
        assert_eq!(
            out,
            vec![LinkEvent::Delivered {
                at: t_ms(1_170 + 5_000 + 500),
                pkt: pkt(1, 1500)
            }]
        );
        assert_eq!(link.stats().frames_resent, 13);
        assert_eq!(link.stats().frames_sent, 56 + 13);
        assert_eq!(link.stats().frames_damaged, 1);
    }

    #[test]
    fn go_back_n_errors_in_one_window_cost_one_rollback() {
        // Frames 0 and 2 damaged in the same window: frame 2 is discarded unread after the
        // error on frame 0, so one rollback repairs both (section 4.1.6).
        let mut link =
            ArqLink::new(iridium(Some(ArqMode::GoBackN), 3, None), scripted(&[0, 2])).unwrap();
        link.offer(SimTime::ZERO, pkt(1, 1500));
        let out = run_to_empty(&mut link);
        assert_eq!(out[0].at(), t_ms(1_170 + 5_000 + 500));
        assert_eq!(link.stats().frames_resent, 13);
    }

    #[test]
    fn selective_repeat_one_damaged_frame_costs_one_frame_time() {
        // The NAK of frame 0 arrives at 1.09 s; frame 0 goes again after frame 12 (1.17 to
        // 1.26 s) and the other 55 frames follow, so the packet ends one frame time late.
        let mut link = ArqLink::new(
            iridium(Some(ArqMode::SelectiveRepeat), 3, None),
            scripted(&[0]),
        )
        .unwrap();
        link.offer(SimTime::ZERO, pkt(1, 1500));
        let out = run_to_empty(&mut link);
        assert_eq!(
            out,
            vec![LinkEvent::Delivered {
                at: t_ms(5_090 + 500),
                pkt: pkt(1, 1500)
            }]
        );
        assert_eq!(link.stats().frames_resent, 1);
    }

    #[test]
    fn selective_repeat_hands_units_up_in_order() {
        // The last frame of unit 0 is damaged; unit 1 (one frame) arrives whole meanwhile but
        // waits for unit 0.
        let mut link = ArqLink::new(
            iridium(Some(ArqMode::SelectiveRepeat), 3, None),
            scripted(&[1]),
        )
        .unwrap();
        link.offer(SimTime::ZERO, pkt(0, 54)); // frames 0, 1
        link.offer(SimTime::ZERO, pkt(1, 27)); // frame 2
        let out = run_to_empty(&mut link);
        let ids: Vec<u64> = out
            .iter()
            .map(|e| match e {
                LinkEvent::Delivered { pkt, .. } => pkt.id,
                LinkEvent::Dropped { .. } => panic!("nothing is given up"),
            })
            .collect();
        assert_eq!(ids, vec![0, 1]);
        // Frame 1 arrives damaged at 0.68 s, its NAK at 1.18 s; sent again 1.18 to 1.27 s.
        assert_eq!(out[0].at(), t_ms(1_770));
        assert_eq!(out[1].at(), t_ms(1_770));
    }

    #[test]
    fn a_frame_out_of_tries_loses_its_packet_and_the_next_one_goes_through() {
        for mode in [ArqMode::GoBackN, ArqMode::SelectiveRepeat] {
            // Two tries; frame 0 of unit 0 is damaged twice (arrivals 0 and, after the repeat,
            // the first arrival of frame 0 again).
            let damaged: &[u64] = match mode {
                // Go-back-N: arrivals 0..12 are frames 0..12, then frame 0 again is arrival 13.
                ArqMode::GoBackN => &[0, 13],
                // Selective repeat: frames 0..12 arrive first, then frame 0 again (it was sent
                // after frame 12).
                ArqMode::SelectiveRepeat => &[0, 13],
            };
            let mut link = ArqLink::new(iridium(Some(mode), 2, None), scripted(damaged)).unwrap();
            link.offer(SimTime::ZERO, pkt(0, 1500));
            link.offer(SimTime::ZERO, pkt(1, 100));
            let out = run_to_empty(&mut link);
            assert_eq!(out.len(), 2, "{mode:?}: {out:?}");
            assert!(
                matches!(out[0], LinkEvent::Dropped { pkt, cause: DropCause::ArqGiveUp, .. } if pkt.id == 0),
                "{mode:?}: {out:?}"
            );
            assert!(
                matches!(out[1], LinkEvent::Delivered { pkt, .. } if pkt.id == 1),
                "{mode:?}: {out:?}"
            );
            assert_eq!(link.stats().frames_given_up, 1);
            assert_eq!(link.stats().units_given_up, 1);
            assert!(link.conservation_holds());
            assert_eq!(link.in_flight_units(), 0);
        }
    }

    #[test]
    fn one_try_sends_each_frame_once() {
        let loss = Bernoulli::new(0.3, StreamRng::derive(5, "arq/once")).unwrap();
        let mut link =
            ArqLink::new(iridium(Some(ArqMode::SelectiveRepeat), 1, None), loss).unwrap();
        for i in 0..40 {
            link.offer(SimTime::ZERO, pkt(i, 100));
        }
        run_to_empty(&mut link);
        let s = link.stats();
        assert_eq!(s.frames_resent, 0);
        assert_eq!(s.frames_sent, 40 * 4);
        assert_eq!(s.units_delivered + s.units_given_up, 40);
        assert!(s.units_given_up > 0);
    }

    #[test]
    fn without_arq_a_damaged_packet_is_corruption() {
        let mut link = ArqLink::new(iridium(None, 1, None), scripted(&[1])).unwrap();
        for i in 0..3 {
            link.offer(SimTime::ZERO, pkt(i, 300));
        }
        let out = run_to_empty(&mut link);
        assert!(matches!(
            out[1],
            LinkEvent::Dropped {
                cause: DropCause::Corruption,
                ..
            }
        ));
        assert_eq!(out[2].at(), t_ms(3_000 + 500));
        assert_eq!(link.stats().units_corrupted, 1);
        assert!(link.conservation_holds());
    }

    #[test]
    fn clear_hands_back_everything_not_yet_reported() {
        for mode in [None, Some(ArqMode::GoBackN), Some(ArqMode::SelectiveRepeat)] {
            let mut link = ArqLink::new(iridium(mode, 3, None), NoLoss).unwrap();
            for i in 0..3 {
                link.offer(SimTime::ZERO, pkt(i, 300)); // 1 s each
            }
            // At 1.6 s unit 0 has arrived (1.5 s); units 1 and 2 are inside.
            let mut got = Vec::new();
            while let Some(e) = link.poll(t_ms(1_600)) {
                got.push(e);
            }
            assert_eq!(got.len(), 1, "{mode:?}");
            let mut lost = Vec::new();
            link.clear(t_ms(1_600), |p| lost.push(p.id));
            assert_eq!(lost, vec![1, 2], "{mode:?}");
            assert_eq!(link.next_wakeup(), None);
            assert_eq!((link.backlog_pkts(), link.in_flight_units()), (0, 0));
            assert!(link.conservation_holds());
            // It works afresh.
            link.offer(t_ms(2_000), pkt(9, 27));
            assert_eq!(
                run_to_empty(&mut link),
                vec![LinkEvent::Delivered {
                    at: t_ms(2_000 + 90 + 500),
                    pkt: pkt(9, 27)
                }]
            );
        }
    }

    #[test]
    fn selective_repeat_give_up_rate_and_efficiency_match_the_formulas() {
        // Independent frame damage p = 0.05, 2 tries, 20-frame units: each unit is lost with
        // 1 − (1 − 0.0025)^20 = 4.88 %; a frame needs (1 − p²)/(1 − p) = 1.05 transmissions.
        let p = 0.05;
        let loss = Bernoulli::new(p, StreamRng::derive(11, "arq/sr")).unwrap();
        let mut link =
            ArqLink::new(iridium(Some(ArqMode::SelectiveRepeat), 2, None), loss).unwrap();
        let n = 4000u64;
        let mut now = SimTime::ZERO;
        for i in 0..n {
            while link.backlog_pkts() >= 3 {
                now = link.next_wakeup().unwrap().max(now);
                while link.poll(now).is_some() {}
            }
            link.offer(now, pkt(i, 540));
        }
        run_to_empty(&mut link);
        let s = *link.stats();
        assert_eq!(s.units_delivered + s.units_given_up, n);
        let want = residual_unit_loss(p, 2, 20);
        let got = s.units_given_up as f64 / n as f64;
        let sd = (want * (1.0 - want) / n as f64).sqrt();
        assert!((got - want).abs() < 5.0 * sd, "loss {got} vs {want}");
        let tx = s.frames_sent as f64 / (20 * n) as f64;
        let want_tx = selective_repeat_transmissions(p, 2);
        assert!(
            (tx - want_tx).abs() < 0.01,
            "transmissions {tx} vs {want_tx}"
        );
    }

    #[test]
    fn go_back_n_costs_a_window_per_error() {
        // Without a try bound in practice (255 tries), each damaged frame costs the N = 13
        // frames of a rollback: slots per frame ≈ (1 + (N − 1) p) / (1 − p) (the model of
        // farlink.models.iridium.go_back_n_service_time_s).
        let p = 0.02;
        let loss = Bernoulli::new(p, StreamRng::derive(12, "arq/gbn")).unwrap();
        let mut link = ArqLink::new(iridium(Some(ArqMode::GoBackN), 255, None), loss).unwrap();
        let n = 1500u64;
        for i in 0..n {
            link.offer(SimTime::ZERO, pkt(i, 270));
        }
        let out = run_to_empty(&mut link);
        let last = out.last().unwrap().at().as_secs_f64() - 0.5;
        let slots = last / 0.09 / (10 * n) as f64;
        let want = (1.0 + 12.0 * p) / (1.0 - p);
        assert!((slots - want).abs() / want < 0.05, "{slots} vs {want}");
        assert_eq!(link.stats().units_given_up, 0);
    }

    #[test]
    fn steady_state_does_not_grow_buffers() {
        let loss = Bernoulli::new(0.02, StreamRng::derive(3, "arq/mem")).unwrap();
        let mut link =
            ArqLink::new(iridium(Some(ArqMode::SelectiveRepeat), 3, None), loss).unwrap();
        let mut now = SimTime::ZERO;
        let mut caps = None;
        for i in 0..6000u64 {
            while link.backlog_pkts() >= 3 {
                now = link.next_wakeup().unwrap().max(now);
                while link.poll(now).is_some() {}
            }
            link.offer(now, pkt(i, 1500));
            if i == 1000 {
                caps = Some(link.capacities());
            }
        }
        assert_eq!(Some(link.capacities()), caps);
    }

    impl<L: LossModel> ArqLink<L> {
        fn capacities(&self) -> [usize; 7] {
            [
                self.units.capacity(),
                self.frames.capacity(),
                self.retx.capacity(),
                self.air.capacity(),
                self.feedback.capacity(),
                self.r_got.capacity(),
                self.out.capacity(),
            ]
        }
    }

    proptest! {
        #[test]
        fn every_unit_is_reported_once_in_order_and_conserved(
            ops in proptest::collection::vec((0u64..4_000, 1u32..700), 1..60),
            mode in 0u8..3,
            p in 0.0f64..0.4,
            tries in 1u32..4,
            window in 1u32..30,
            clear_at in proptest::option::of(0usize..60),
        ) {
            let mode = match mode { 0 => None, 1 => Some(ArqMode::GoBackN), _ => Some(ArqMode::SelectiveRepeat) };
            let mut cfg = iridium(mode, tries, Some(window));
            cfg.delay = SimDuration::from_millis(120);
            let loss = Bernoulli::new(p, StreamRng::derive(9, "arq/prop")).unwrap();
            let mut link = ArqLink::new(cfg, loss).unwrap();
            let mut now = SimTime::ZERO;
            let mut out = Vec::new();
            let mut cleared = Vec::new();
            for (i, (dt, size)) in ops.iter().enumerate() {
                now += SimDuration::from_millis(*dt);
                while let Some(e) = link.poll(now) { out.push(e); }
                if clear_at == Some(i) {
                    link.clear(now, |p| cleared.push(p.id));
                }
                link.offer(now, pkt(i as u64, *size));
                prop_assert!(link.conservation_holds());
            }
            out.extend(run_to_empty(&mut link));
            prop_assert!(link.conservation_holds());
            prop_assert_eq!(link.in_flight_units(), 0);
            prop_assert_eq!(link.backlog_pkts(), 0);
            let mut ids: Vec<u64> = out.iter().map(|e| match e {
                LinkEvent::Delivered { pkt, .. } | LinkEvent::Dropped { pkt, .. } => pkt.id,
            }).collect();
            // In order, each once.
            prop_assert!(ids.windows(2).all(|w| w[0] < w[1]), "{:?}", ids);
            let mut last = SimTime::ZERO;
            for e in &out {
                prop_assert!(e.at() >= last);
                last = e.at();
            }
            ids.extend(cleared);
            ids.sort_unstable();
            prop_assert_eq!(ids, (0..ops.len() as u64).collect::<Vec<_>>());
        }
    }
}
