//! The IS-707 radio link protocol (RLP) of seed 004 section II, one direction of a radio hop,
//! as a sans-I/O component: packets are cut into frames of 19 bytes of payload, one frame per
//! 20-ms slot of a 9600 bit/s channel; the receiver notices missing frames from a later data
//! frame, or from an idle frame carrying the sender's V(S), and asks for them with NAKs in a
//! few rounds; after the last round a missing frame is given up and the packet holding it is
//! lost to the layer above (TCP).
//!
//! Read first: seed 004 section II ("TCP/IP packets are fragmented by IS-707 into 24-byte
//! frames (19 bytes of payload) on 9,600 bps links ... a NAK selective repeat ARQ ... The
//! receiver does not acknowledge correct RLP data frames ... partial error recovery through a
//! small number of frame retransmissions"), section III (the 20-ms frame, the Markov fading
//! channel) and `docs/rlp.md` (the mechanics, and every choice where the seed is silent).
//!
//! ```text
//!  offer ─▶ [packets] ─▶ frames ─▶ slot (20 ms) ─▶ channel ─▶ delay ─▶ receiver ─▶ poll (in order)
//!                          ▲ retransmission first                        │ V(R), V(N)
//!                          └──── NAK (reverse channel, may be lost) ◀────┘ rounds 1, 2, 3
//! ```
//!
//! # Mechanics (choices where the seed is silent are marked and argued in `docs/rlp.md`)
//!
//! * **Slots.** Time is cut into slots of one frame time T = 8 frame_bytes / rate (24 bytes at
//!   9600 bit/s: 20 ms), from time zero. In each slot the sender puts at most one frame on the
//!   channel, by priority: a retransmission asked for by a NAK, else the next new data frame,
//!   else an idle frame (when the idle policy allows one), else nothing. A frame sent in slot
//!   [t, t + T) is decided by the channel in that slot (`loss.is_lost(t)`) and, if intact,
//!   reaches the receiver at t + T + `delay`. A damaged frame is an erasure: the receiver sees
//!   nothing.
//! * **Framing.** Each packet starts a new frame (the last frame of a packet may be short on
//!   payload; it still fills a slot). Frames are numbered in sequence; the numbers here do not
//!   wrap (IS-707's 8-bit numbers do; see `docs/rlp.md`).
//! * **Receiver.** V(R) is the next frame it has not yet heard of; V(N) the oldest frame not
//!   yet received nor given up. An intact data frame with SN ≥ V(R) makes every frame in
//!   [V(R), SN) missing; an intact idle frame carrying the sender's V(S) does the same for
//!   [V(R), V(S)). Packets are handed up in order as V(N) passes their last frame (seed 004
//!   section III: the interface reassembles the frames; RLP delivers in sequence).
//! * **NAK rounds.** A missing frame starts round 1. In round r the receiver sends r NAKs, one
//!   per slot of the reverse channel (the IS-707 1-2-3 scheme), then waits `nak_timer` (plus
//!   one slot for each frame asked for ahead of it in the same NAK frame, since the sender
//!   repeats them one per slot in that order); if the frame has not come by then, round r + 1
//!   begins; after the last round's timer the frame is
//!   given up, V(N) moves past it and its packet is dropped with [`DropCause::ArqGiveUp`]. One
//!   NAK control frame carries every frame due a NAK in its slot. NAKs cross the reverse
//!   channel: `nak_loss` decides each NAK slot (in the engine the very channel the other
//!   direction's data frames cross, a [`SharedChannel`]), and a lost NAK is not heard.
//! * **Sender.** Each NAK heard queues one retransmission of its frame, unless one is already
//!   queued. It keeps no timers: there are no acknowledgements.
//! * **Queue.** Packets wait whole in a [`Queue`] (drop-tail by default; the link's
//!   `queue_discipline`, [`RlpLink::with_queue`]) and are framed when the sender needs its next
//!   new data frame, so an AQM decides on each packet as its first frame goes on the air (its
//!   sojourn the time it waited unframed); a packet it drops then is reported at that slot.
//! * **Idle frames** (seed 004 section II) carry V(S). [`IdlePolicy::Unlimited`] sends one in
//!   every slot without data (figures 4, 10-12); [`IdlePolicy::Count`] at most n after the last
//!   data frame (the paper's proposed extension, figure 9); [`IdlePolicy::None`] never.
//!
//! # Speed: no event per empty slot
//!
//! The component only wakes for slots in which it sends something, for arrivals and for NAK
//! timers. An idle frame that would tell the receiver nothing new (an intact frame carrying the
//! current V(S) is already on its way) changes nothing at either end, so it is not drawn: the
//! channel is then advanced lazily to the next frame actually sent, with the closed-form n-step
//! transition of the two-state chain ([`crate::loss::MarkovFading`]). The outcome is
//! statistically the same as drawing every slot, and deterministic per seed. Such idle frames are
//! still counted ([`RlpLink::idle_frames_sent`]).
//!
//! # Memory
//!
//! Every queue is a `VecDeque` of small `Copy` records that grows to its peak and never
//! shrinks: nothing is allocated per packet or per frame in steady state.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::fmt;
use std::rc::Rc;

use crate::error::ConfigError;
use crate::links::arq::Unit;
use crate::links::link::{
    Departure, DropCause, LinkEvent, LinkStats, Packet, QueueLimit, QueueLogs, SojournLog,
};
use crate::links::queue::{DropTail, Queue, Verdict};
use crate::loss::LossModel;
use crate::time::{BitRate, SimDuration, SimTime};

/// The IS-707 frame on the air: 24 bytes (seed 004 section II).
pub const IS707_FRAME_BYTES: u32 = 24;
/// Payload of an IS-707 data frame: 19 bytes (seed 004 section II).
pub const IS707_PAYLOAD_BYTES: u32 = 19;
/// The IS-707 channel rate: 9600 bit/s (seed 004 section II).
pub const IS707_RATE: BitRate = BitRate::from_bps(9600);
/// NAK rounds of IS-707 (1, 2 and 3 NAKs), a "small number" in seed 004 section II.
pub const IS707_NAK_ROUNDS: u32 = 3;
/// Most NAK rounds accepted.
pub const MAX_NAK_ROUNDS: u32 = 8;

/// When the sender sends idle frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdlePolicy {
    /// Never.
    None,
    /// At most this many after the last data frame (seed 004's proposed extension).
    Count(u32),
    /// In every slot without data.
    Unlimited,
}

impl fmt::Display for IdlePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdlePolicy::None => f.write_str("none"),
            IdlePolicy::Count(n) => write!(f, "{n}"),
            IdlePolicy::Unlimited => f.write_str("unlimited"),
        }
    }
}

/// Parameters of one direction of an RLP hop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RlpConfig {
    /// Channel rate: with `frame_bytes` it sets the slot, 8 frame_bytes / rate.
    pub rate: BitRate,
    /// Bytes of a frame on the air (24).
    pub frame_bytes: u32,
    /// Payload bytes of a data frame (19), at most `frame_bytes`.
    pub payload_bytes: u32,
    /// From the end of a frame's slot to its arrival (decoding, processing, propagation); also
    /// the delay of NAKs.
    pub delay: SimDuration,
    /// NAK rounds before a frame is given up, 1 to [`MAX_NAK_ROUNDS`]; round r sends r NAKs.
    pub nak_rounds: u32,
    /// How long the receiver waits after the last NAK of a round.
    pub nak_timer: SimDuration,
    pub idle: IdlePolicy,
    /// Bound of the packets waiting to be framed (the packet being sent not counted).
    pub queue_limit: QueueLimit,
}

impl RlpConfig {
    /// The slot: one frame time.
    pub fn slot(&self) -> SimDuration {
        Self::slot_at(self.rate, self.frame_bytes)
    }

    /// One frame time of `frame_bytes` at `rate` (a zero rate or size counted as 1).
    fn slot_at(rate: BitRate, frame_bytes: u32) -> SimDuration {
        rate.max(BitRate::from_bps(1))
            .transmission_time(frame_bytes.max(1))
    }

    /// The default NAK timer: a NAK's slot ends, it reaches the sender `delay` later, the
    /// retransmission goes in the next slot and arrives a slot plus `delay` after it starts;
    /// two slots more allow for retransmissions of neighbouring frames ahead of it.
    pub fn default_nak_timer(rate: BitRate, frame_bytes: u32, delay: SimDuration) -> SimDuration {
        let slot = Self::slot_at(rate, frame_bytes);
        SimDuration::from_nanos(2 * delay.as_nanos() + 4 * slot.as_nanos())
    }

    /// Seed 004's IS-707 hop: 9600 bit/s, 24-byte frames with 19 bytes of payload, 3 rounds.
    pub fn is707(delay: SimDuration, idle: IdlePolicy, queue_limit: QueueLimit) -> Self {
        RlpConfig {
            rate: IS707_RATE,
            frame_bytes: IS707_FRAME_BYTES,
            payload_bytes: IS707_PAYLOAD_BYTES,
            delay,
            nak_rounds: IS707_NAK_ROUNDS,
            nak_timer: Self::default_nak_timer(IS707_RATE, IS707_FRAME_BYTES, delay),
            idle,
            queue_limit,
        }
    }

    /// Checks the domains; errors name the scenario's field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.rate.bps() == 0 {
            return Err(ConfigError::new(
                "rate_bps",
                "expected a positive rate in bit/s, got 0",
            ));
        }
        if self.frame_bytes == 0 {
            return Err(ConfigError::new(
                "frame_bytes",
                "expected a frame of at least 1 byte, got 0",
            ));
        }
        if self.payload_bytes == 0 || self.payload_bytes > self.frame_bytes {
            return Err(ConfigError::new(
                "payload_bytes",
                format!(
                    "expected a payload of 1 to {} bytes (the frame), got {}",
                    self.frame_bytes, self.payload_bytes
                ),
            ));
        }
        if !(1..=MAX_NAK_ROUNDS).contains(&self.nak_rounds) {
            return Err(ConfigError::new(
                "nak_rounds",
                format!(
                    "expected 1 to {MAX_NAK_ROUNDS} NAK rounds, got {}",
                    self.nak_rounds
                ),
            ));
        }
        if self.nak_timer.as_nanos() == 0 {
            return Err(ConfigError::new(
                "nak_timer",
                "expected a positive NAK timer",
            ));
        }
        Ok(())
    }
}

/// One direction of the air interface shared by two components: the data frames of the
/// direction that sends on it and the NAKs of the other direction's receiver, so that a NAK and
/// a data frame sent in the same slot see the same fade. Both are driven by one engine in
/// simulated-time order, so the channel is asked about non-decreasing times.
#[derive(Debug)]
pub struct SharedChannel<L: LossModel>(Rc<RefCell<L>>);

impl<L: LossModel> SharedChannel<L> {
    pub fn new(loss: L) -> Self {
        SharedChannel(Rc::new(RefCell::new(loss)))
    }
}

impl<L: LossModel> Clone for SharedChannel<L> {
    fn clone(&self) -> Self {
        SharedChannel(Rc::clone(&self.0))
    }
}

impl<L: LossModel> LossModel for SharedChannel<L> {
    fn is_lost(&mut self, now: SimTime) -> bool {
        // Never borrowed elsewhere while this runs: `is_lost` calls nothing back.
        self.0.borrow_mut().is_lost(now)
    }
    fn analytic_loss_rate(&self) -> f64 {
        self.0.borrow().analytic_loss_rate()
    }
    fn analytic_mean_burst_len(&self) -> Option<f64> {
        self.0.borrow().analytic_mean_burst_len()
    }
}

/// Counters since the component was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RlpStats {
    /// Data frames sent for the first time.
    pub data_frames_sent: u64,
    /// Retransmissions.
    pub frames_resent: u64,
    /// Data frames (first or repeat) damaged by the channel.
    pub frames_damaged: u64,
    /// Idle frames sent and drawn (they could tell the receiver something).
    pub idle_frames_drawn: u64,
    /// Idle frames damaged.
    pub idle_frames_damaged: u64,
    /// NAK control frames sent, and lost on the reverse channel.
    pub nak_frames_sent: u64,
    pub nak_frames_lost: u64,
    /// Frames the receiver gave up after its last NAK round.
    pub frames_given_up: u64,
    /// Frames the receiver noticed missing from a data frame, and from an idle frame.
    pub missing_by_data: u64,
    pub missing_by_idle: u64,
    pub units_given_up: u64,
}

/// The receiver's view of a frame in [V(N), V(R)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rx {
    Received,
    GivenUp,
    /// Missing, in NAK round `round` (1-based) with `naks_left` NAKs of it still to send.
    Missing {
        round: u8,
        naks_left: u8,
    },
}

#[derive(Clone, Copy, Debug)]
enum Air {
    Data(u64),
    /// An idle frame carrying V(S).
    Idle(u64),
}

/// One direction of an RLP hop; `L` is the data channel, `N` the reverse channel as the NAKs
/// see it. See the module documentation.
#[derive(Debug)]
pub struct RlpLink<L: LossModel, N: LossModel> {
    cfg: RlpConfig,
    slot_ns: u64,
    loss: L,
    nak_loss: N,
    units: VecDeque<Unit>,
    /// Frames numbered so far.
    total: u64,
    /// V(S): the next new frame.
    vs: u64,
    /// Packets offered and not yet framed (none of their frames sent).
    queue: Queue,
    /// Packets the queue dropped at dequeue, for `out` (reused).
    evicted: VecDeque<LinkEvent>,
    retx: VecDeque<u64>,
    /// An intact frame telling the receiver the current V(S) has been sent.
    vs_conveyed: bool,
    /// Idle frames sent since the last data frame (drawn or not).
    idle_since_data: u64,
    /// Start of the first slot the sender has not used.
    tx_free: SimTime,
    /// The next slot the sender will use, if it has anything to send.
    tx_at: Option<SimTime>,
    /// The end of the last slot that carried data: idle frames are counted from there.
    last_data_end: SimTime,
    idle_counted: u64,
    air: VecDeque<(SimTime, Air)>,
    /// NAKs heard by the sender: (arrival, frame).
    naks: VecDeque<(SimTime, u64)>,
    // ----- receiver -----
    vr: u64,
    vn: u64,
    rx: VecDeque<Rx>,
    /// Frames due a NAK in the next reverse slot.
    nak_due: VecDeque<u64>,
    /// The next reverse slot a NAK frame will use.
    nak_at: Option<SimTime>,
    nak_free: SimTime,
    /// NAK timers (expiry, frame, round), earliest first.
    timers: BinaryHeap<Reverse<(SimTime, u64, u8)>>,
    inside: u64,
    out: VecDeque<LinkEvent>,
    stats: RlpStats,
    link_stats: LinkStats,
    last_now: SimTime,
    /// Packets whose first frame went on the air, not yet taken by [`RlpLink::pop_departure`];
    /// `None` while the log is off.
    departures: Option<VecDeque<Departure>>,
    /// Every packet's wait in the queue until its first frame, while the queue log is on.
    sojourns: SojournLog,
}

/// The queue's logs: each packet's wait unframed, from its offer to the slot of its first
/// frame.
impl<L: LossModel, N: LossModel> QueueLogs for RlpLink<L, N> {
    fn queue_logs(&mut self) -> (&mut SojournLog, &mut Queue) {
        (&mut self.sojourns, &mut self.queue)
    }
}

impl<L: LossModel, N: LossModel> RlpLink<L, N> {
    /// A direction whose packets wait in a drop-tail queue bounded by `cfg.queue_limit`.
    pub fn new(cfg: RlpConfig, loss: L, nak_loss: N) -> Result<Self, ConfigError> {
        let queue = Queue::DropTail(DropTail::new(cfg.queue_limit));
        Self::with_queue(cfg, loss, nak_loss, queue)
    }

    /// A direction whose packets wait in `queue` (made for `cfg.queue_limit`: [`Queue::new`]).
    pub fn with_queue(
        cfg: RlpConfig,
        loss: L,
        nak_loss: N,
        queue: Queue,
    ) -> Result<Self, ConfigError> {
        cfg.validate()?;
        let slot_ns = cfg.slot().as_nanos().max(1);
        Ok(RlpLink {
            cfg,
            slot_ns,
            loss,
            nak_loss,
            units: VecDeque::with_capacity(64),
            total: 0,
            vs: 0,
            queue,
            evicted: VecDeque::new(),
            retx: VecDeque::with_capacity(64),
            vs_conveyed: true,
            idle_since_data: 0,
            tx_free: SimTime::ZERO,
            tx_at: None,
            last_data_end: SimTime::ZERO,
            idle_counted: 0,
            air: VecDeque::with_capacity(64),
            naks: VecDeque::with_capacity(64),
            vr: 0,
            vn: 0,
            rx: VecDeque::with_capacity(256),
            nak_due: VecDeque::with_capacity(64),
            nak_at: None,
            nak_free: SimTime::ZERO,
            timers: BinaryHeap::with_capacity(64),
            inside: 0,
            out: VecDeque::with_capacity(16),
            stats: RlpStats::default(),
            link_stats: LinkStats::default(),
            last_now: SimTime::ZERO,
            departures: None,
            sojourns: SojournLog::default(),
        })
    }

    pub fn config(&self) -> &RlpConfig {
        &self.cfg
    }

    pub fn stats(&self) -> &RlpStats {
        &self.stats
    }

    pub fn link_stats(&self) -> &LinkStats {
        &self.link_stats
    }

    pub fn loss(&self) -> &L {
        &self.loss
    }

    /// Idle frames sent up to `now`, those not drawn included.
    pub fn idle_frames_sent(&self, now: SimTime) -> u64 {
        self.idle_counted + self.idle_in_gap(now.max(self.last_now))
    }

    /// Packets waiting to be framed (none of their frames sent yet).
    pub fn queue_len_pkts(&self) -> usize {
        self.queue.len_pkts()
    }

    pub fn queue_len_bytes(&self) -> u64 {
        self.queue.len_bytes()
    }

    /// Packets inside: not yet delivered or dropped.
    pub fn in_flight_pkts(&self) -> u64 {
        self.inside
    }

    /// Packets offered = delivered + dropped + inside.
    pub fn conservation_holds(&self) -> bool {
        let s = &self.link_stats;
        s.offered_pkts
            == s.delivered_pkts
                + s.dropped_overflow_pkts
                + s.dropped_aqm_pkts
                + self.stats.units_given_up
                + self.inside
    }

    /// Packets dropped with `cause`.
    pub fn dropped_pkts(&self, cause: DropCause) -> u64 {
        match cause {
            DropCause::QueueOverflow => self.link_stats.dropped_overflow_pkts,
            DropCause::ArqGiveUp => self.stats.units_given_up,
            DropCause::Aqm => self.link_stats.dropped_aqm_pkts,
            _ => 0,
        }
    }

    /// Records (or stops recording) each packet as its first frame goes on the air, for packet
    /// taps.
    pub fn set_departure_log(&mut self, on: bool) {
        self.departures = on.then(|| VecDeque::with_capacity(16));
    }

    pub fn pop_departure(&mut self) -> Option<Departure> {
        self.departures.as_mut()?.pop_front()
    }

    /// The sender's V(S), and the receiver's V(R) and V(N).
    pub fn state_variables(&self) -> (u64, u64, u64) {
        (self.vs, self.vr, self.vn)
    }

    /// Offers a packet at `now`; the queue refuses it with `QueueOverflow` when full, or
    /// `Aqm`.
    pub fn offer(&mut self, now: SimTime, pkt: Packet) -> Result<(), DropCause> {
        let now = self.advance(now);
        self.link_stats.offered_pkts += 1;
        self.link_stats.offered_bytes += u64::from(pkt.size_bytes);
        match self.queue.enqueue(now, pkt, &mut self.evicted) {
            Verdict::Queued => {}
            Verdict::Marked => self.link_stats.ce_marked_pkts += 1,
            Verdict::Dropped(cause) => {
                self.count_queue_drop(pkt, cause);
                return Err(cause);
            }
        }
        self.inside += 1;
        self.note_queue();
        self.wake_sender(now);
        Ok(())
    }

    /// Counts a packet the queue dropped.
    fn count_queue_drop(&mut self, pkt: Packet, cause: DropCause) {
        self.link_stats.count_queue_drop(cause, pkt.size_bytes);
    }

    /// Takes the next packet from the queue at `t` and numbers its frames; false if the queue
    /// had none left (its discipline may have dropped what it held: reported at `t`).
    fn frame_next(&mut self, t: SimTime) -> bool {
        let next = self.queue.dequeue(t, &mut self.evicted);
        while let Some(ev) = self.evicted.pop_front() {
            if let LinkEvent::Dropped { pkt, cause, .. } = ev {
                self.count_queue_drop(pkt, cause);
                self.inside -= 1;
                self.out.push_back(LinkEvent::Dropped { at: t, pkt, cause });
            }
        }
        let Some(next) = next else {
            return false;
        };
        self.link_stats.ce_marked_pkts += u64::from(next.marked);
        if self.sojourns.is_on() {
            self.sojourns.push(t, next.enqueued_at.unwrap_or(t));
        }
        let pkt = next.pkt;
        let frames = u64::from(pkt.size_bytes.max(1)).div_ceil(u64::from(self.cfg.payload_bytes));
        self.units.push_back(Unit {
            pkt,
            first: self.total,
            frames: frames as u32,
            reported: false,
            lost: false,
        });
        self.total += frames;
        true
    }

    /// The next packet delivered or dropped at or before `now`, in time order.
    pub fn poll(&mut self, now: SimTime) -> Option<LinkEvent> {
        let now = self.advance(now);
        crate::links::link::pop_due(&mut self.out, now)
    }

    /// The earliest instant the component has something to do.
    pub fn next_wakeup(&self) -> Option<SimTime> {
        let deadlines = [
            self.air.front().map(|a| a.0),
            self.naks.front().map(|n| n.0),
            self.timers.peek().map(|t| t.0 .0),
            self.tx_at,
            self.nak_at,
        ];
        crate::links::link::next_due(&self.out, deadlines)
    }

    // ----- internals -----

    fn slot_at_or_after(&self, t: SimTime) -> SimTime {
        SimTime::from_nanos(t.as_nanos().div_ceil(self.slot_ns) * self.slot_ns)
    }

    fn note_queue(&mut self) {
        let s = &mut self.link_stats;
        s.queue_changes += 1;
        s.max_queue_pkts = s.max_queue_pkts.max(self.queue.len_pkts() as u64);
        s.max_queue_bytes = s.max_queue_bytes.max(self.queue.len_bytes());
    }

    /// Whether the sender has a frame for a slot now.
    fn sender_has_frame(&self) -> bool {
        if !self.retx.is_empty() || self.vs < self.total || self.queue.len_pkts() > 0 {
            return true;
        }
        self.idle_wanted()
    }

    /// Whether the idle policy sends an idle frame in a slot without data.
    fn idle_wanted(&self) -> bool {
        if self.vs_conveyed {
            return false;
        }
        match self.cfg.idle {
            IdlePolicy::None => false,
            IdlePolicy::Count(n) => self.idle_since_data < u64::from(n),
            IdlePolicy::Unlimited => true,
        }
    }

    /// Something to send appeared at `t`: arm the sender's next slot.
    fn wake_sender(&mut self, t: SimTime) {
        if self.tx_at.is_none() && self.sender_has_frame() {
            self.tx_at = Some(self.slot_at_or_after(t).max(self.tx_free));
        }
    }

    fn wake_nak(&mut self, t: SimTime) {
        if self.nak_at.is_none() && !self.nak_due.is_empty() {
            self.nak_at = Some(self.slot_at_or_after(t).max(self.nak_free));
        }
    }

    /// Idle frames the policy sends in the gap since the last data slot, up to `now`.
    fn idle_in_gap(&self, now: SimTime) -> u64 {
        if self.cfg.idle == IdlePolicy::None || now <= self.last_data_end {
            return 0;
        }
        // Slots that started in [last_data_end, now), none of them carrying data.
        let slots = (now.as_nanos() - self.last_data_end.as_nanos()).div_ceil(self.slot_ns);
        match self.cfg.idle {
            IdlePolicy::Count(n) => slots.min(u64::from(n)),
            _ => slots,
        }
    }

    fn advance(&mut self, now: SimTime) -> SimTime {
        debug_assert!(now >= self.last_now, "RLP driven backwards in time");
        let now = self.last_now.max(now);
        self.last_now = now;
        loop {
            let air = self.air.front().map(|a| a.0);
            let nak = self.naks.front().map(|n| n.0);
            let timer = self.timers.peek().map(|t| t.0 .0);
            let Some(t) = crate::links::link::earliest([air, nak, timer, self.tx_at, self.nak_at])
            else {
                break;
            };
            if t > now {
                break;
            }
            // At one instant: arrivals, then NAKs heard, then timers, then the slots.
            if air == Some(t) {
                if let Some((_, a)) = self.air.pop_front() {
                    self.on_air(t, a);
                }
            } else if nak == Some(t) {
                if let Some((_, f)) = self.naks.pop_front() {
                    if !self.retx.contains(&f) {
                        self.retx.push_back(f);
                    }
                    self.wake_sender(t);
                }
            } else if timer == Some(t) {
                if let Some(Reverse((_, f, round))) = self.timers.pop() {
                    self.on_timer(t, f, round);
                }
            } else if self.tx_at == Some(t) {
                self.tx_at = None;
                self.send_slot(t);
            } else {
                self.nak_at = None;
                self.send_nak_slot(t);
            }
        }
        now
    }

    /// The sender's slot starting at `t`.
    fn send_slot(&mut self, t: SimTime) {
        let end = t + SimDuration::from_nanos(self.slot_ns);
        let arrive = end + self.cfg.delay;
        let data = if let Some(f) = self.retx.pop_front() {
            self.stats.frames_resent += 1;
            Some(f)
        } else if self.vs < self.total || (self.queue.len_pkts() > 0 && self.frame_next(t)) {
            let f = self.vs;
            self.vs += 1;
            self.vs_conveyed = false;
            self.stats.data_frames_sent += 1;
            self.on_first_send(t, f);
            Some(f)
        } else {
            None
        };
        match data {
            Some(f) => {
                // Idle frames of the gap before this slot.
                self.idle_counted += self.idle_in_gap(t);
                self.last_data_end = end;
                self.idle_since_data = 0;
                if self.loss.is_lost(t) {
                    self.stats.frames_damaged += 1;
                } else {
                    if f + 1 == self.vs {
                        self.vs_conveyed = true;
                    }
                    self.air.push_back((arrive, Air::Data(f)));
                }
            }
            // The queue's discipline dropped every packet left: the slot goes unused unless
            // the idle policy sends one (the slot was armed for data).
            None if !self.idle_wanted() => return,
            None => {
                // An idle frame that may tell the receiver of frames it has not heard of.
                self.idle_since_data += 1;
                self.stats.idle_frames_drawn += 1;
                if self.loss.is_lost(t) {
                    self.stats.idle_frames_damaged += 1;
                } else {
                    self.vs_conveyed = true;
                    self.air.push_back((arrive, Air::Idle(self.vs)));
                }
            }
        }
        self.tx_free = end;
        self.wake_sender(end);
    }

    fn on_first_send(&mut self, t: SimTime, f: u64) {
        // The packet whose first frame this is leaves the queue.
        let i = self.units.partition_point(|u| u.end() <= f);
        let Some(u) = self.units.get(i).copied() else {
            return;
        };
        if u.first == f {
            if let Some(log) = self.departures.as_mut() {
                log.push_back(Departure { at: t, pkt: u.pkt });
            }
            self.note_queue();
        }
    }

    /// The receiver's NAK slot starting at `t` on the reverse channel.
    fn send_nak_slot(&mut self, t: SimTime) {
        let end = t + SimDuration::from_nanos(self.slot_ns);
        let lost = self.nak_loss.is_lost(t);
        self.stats.nak_frames_sent += 1;
        if lost {
            self.stats.nak_frames_lost += 1;
        }
        let arrive = end + self.cfg.delay;
        let slot = SimDuration::from_nanos(self.slot_ns);
        // The sender repeats the frames of one NAK frame in the order asked, one per slot: the
        // k-th (from 0) needs k slots more than the first.
        let mut expire = end + self.cfg.nak_timer;
        for _ in 0..self.nak_due.len() {
            let Some(f) = self.nak_due.pop_front() else {
                break;
            };
            let Some(idx) = f.checked_sub(self.vn) else {
                continue;
            };
            let Some(Rx::Missing { round, naks_left }) = self.rx.get(idx as usize).copied() else {
                continue;
            };
            if naks_left == 0 {
                continue;
            }
            if !lost {
                self.naks.push_back((arrive, f));
            }
            let left = naks_left - 1;
            self.rx[idx as usize] = Rx::Missing {
                round,
                naks_left: left,
            };
            if left > 0 {
                self.nak_due.push_back(f);
            } else {
                self.timers.push(Reverse((expire, f, round)));
            }
            expire += slot;
        }
        self.nak_free = end;
        self.wake_nak(end);
    }

    /// Frames in [V(R), up_to) are missing: start their first NAK round.
    fn notice_missing(&mut self, t: SimTime, up_to: u64, by_idle: bool) {
        while self.vr < up_to {
            self.rx.push_back(Rx::Missing {
                round: 1,
                naks_left: 1,
            });
            self.nak_due.push_back(self.vr);
            self.vr += 1;
            if by_idle {
                self.stats.missing_by_idle += 1;
            } else {
                self.stats.missing_by_data += 1;
            }
        }
        self.wake_nak(t);
    }

    fn on_air(&mut self, t: SimTime, a: Air) {
        match a {
            Air::Idle(vs) => {
                if vs > self.vr {
                    self.notice_missing(t, vs, true);
                }
            }
            Air::Data(f) => {
                if f < self.vn {
                    return; // a repeat of something received or given up
                }
                if f >= self.vr {
                    self.notice_missing(t, f, false);
                    self.rx.push_back(Rx::Received);
                    self.vr = f + 1;
                } else {
                    let idx = (f - self.vn) as usize;
                    if matches!(self.rx[idx], Rx::Missing { .. }) {
                        self.rx[idx] = Rx::Received;
                    }
                }
                self.advance_vn(t);
            }
        }
    }

    fn on_timer(&mut self, t: SimTime, f: u64, round: u8) {
        let Some(idx) = f.checked_sub(self.vn) else {
            return;
        };
        let Some(Rx::Missing {
            round: r,
            naks_left,
        }) = self.rx.get(idx as usize).copied()
        else {
            return;
        };
        if r != round || naks_left != 0 {
            return;
        }
        if u32::from(round) >= self.cfg.nak_rounds {
            self.rx[idx as usize] = Rx::GivenUp;
            self.stats.frames_given_up += 1;
            let i = self.units.partition_point(|u| u.end() <= f);
            if let Some(u) = self.units.get_mut(i) {
                if u.first <= f {
                    u.lost = true;
                }
            }
            self.advance_vn(t);
        } else {
            let next = round + 1;
            self.rx[idx as usize] = Rx::Missing {
                round: next,
                naks_left: next,
            };
            self.nak_due.push_back(f);
            self.wake_nak(t);
        }
    }

    /// Moves V(N) past frames received or given up, and hands up the packets it completes.
    fn advance_vn(&mut self, t: SimTime) {
        while matches!(self.rx.front(), Some(Rx::Received | Rx::GivenUp)) {
            self.rx.pop_front();
            self.vn += 1;
        }
        while let Some(u) = self.units.front_mut() {
            if u.end() > self.vn {
                break;
            }
            if !u.reported {
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
                    self.link_stats.delivered_pkts += 1;
                    self.link_stats.delivered_bytes += u64::from(u.pkt.size_bytes);
                    self.out
                        .push_back(LinkEvent::Delivered { at: t, pkt: u.pkt });
                }
            }
            // Both ends are done with it once its last frame was sent and V(N) passed it.
            if u.end() <= self.vs {
                self.units.pop_front();
            } else {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests;
