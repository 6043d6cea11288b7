//! A multilink PPP bundle (RFC 1990) as sans-I/O components: the data plane of one direction
//! ([`BundleDir`]: distribution over members, per-member transmit queues, ARQ, fragmentation,
//! sequence numbers and reassembly) and the control plane of the bundle ([`BundleControl`]:
//! the modem supervisor of [`crate::modem`], the physical state of each call, the delay before a
//! call drop is noticed, and the bundle's capacity over time).
//!
//! Read first: RFC 1990 sections 3 and 4 (the multilink header, sequence numbers, and the
//! receiver's rule that a fragment is lost once every member has delivered a later one); seed
//! 000 chapter 3 (MLPPP over Iridium), section 4.1.6 (round-robin distribution, the Linux
//! transmit queue of 3 packets per modem, "under high loads MLPPP does not fragment"), section
//! 5.2 (what a call drop destroys, and the time before the upper layers notice, "at least of
//! the order of 30 seconds" in the deployed system) and chapter 7 (the modem state machine).
//!
//! This module owns what happens to a packet between the moment it is offered to a bundle link
//! and the moment the far end's MLPPP hands it up or gives it up, and which members may carry
//! it. It draws nothing at random and reads no clock: the engine draws call drops (Poisson per
//! member, rate β) and dial outcomes from seeded streams and feeds them to [`BundleControl`],
//! then applies the control plane's [`ControlCommand`]s to both directions' [`BundleDir`]s.
//! The link-management daemon applies the same commands to real modems.
//!
//! ```text
//!          ┌─ member 0: txqueue (3) ─▶ serializer ─▶ ARQ / air ─┐
//! offer ─▶ [MLPPP queue] ─ round robin ─▶ member 1 ...          ├─▶ reassembly (in MP order) ─▶ poll
//!          └─ member N-1 ...                                    ┘
//! ```
//!
//! # Semantics of a direction ([`BundleDir`])
//!
//! * **Distribution** is round robin over the members MLPPP may use (`usable`) that have room in
//!   their transmit queue (`txqueue_pkts`, the packet being sent included), as Linux's
//!   `ppp_mp_explode` does; a packet no member can take waits in the MLPPP queue (bounded
//!   like a link's queue, and like a link's run by a [`Queue`] discipline: drop-tail unless
//!   the link's `queue_discipline` names an AQM, [`BundleDir::with_queue`]), and overflows as
//!   `QueueOverflow`. This queue is where a loaded bundle's standing queue builds (each
//!   member's transmit queue holds `txqueue_pkts`), so an AQM here governs the members' delay;
//!   a packet it drops at dequeue is reported by [`BundleDir::poll`] at that instant.
//! * **Fragmentation** (optional) splits a packet into as many fragments as there are idle
//!   members at that instant (one each, sizes differing by at most a byte), if two or more are
//!   idle; otherwise the packet goes whole, so a loaded bundle sends whole packets, as section
//!   4.1.6 observes. Every unit (packet or fragment) carries
//!   `mp_header_bytes` of multilink header and one sequence number.
//! * **Reassembly** hands packets up in sequence order. A packet is delivered once all its
//!   fragments are in; it is given up when a missing fragment's number is below every member's
//!   floor (RFC 1990 section 4.1: each member delivers in order, so once every member has
//!   delivered something later the fragment cannot come; a member whose call is up and whose
//!   link has nothing on its way does not count, as its link layer announces it idle, like
//!   the idle frames of seed 004's RLP), or when the receiver has held
//!   fragments it cannot hand up for `reassembly_timeout`. The cause is why the fragment was
//!   really lost (the engine knows), or `ReassemblyTimeout` if it was still on its way. A
//!   fragment arriving after its packet was given up is discarded.
//! * **A call drop** ([`BundleDir::member_lost`]) loses everything the member holds (`CallDrop`).
//!   Until the drop is noticed the member stays usable: packets sent to it are clocked into
//!   the void at its rate and lost (`CallDrop`), T_L · R bytes as in section 5.2, and its
//!   silence holds reassembly back (its floor does not move). Once noticed
//!   ([`BundleDir::set_usable`] false) it leaves the bundle.
//!
//! # Conservation
//!
//! Every packet offered is delivered, dropped with a cause, or inside (MLPPP queue, members,
//! reassembly, or an event not yet polled): [`BundleDir::conservation_holds`]. Every unit sent
//! to a member arrives, is lost with a cause, or is inside the member.

use std::collections::VecDeque;

pub mod loss_rule;
use loss_rule::{LossRule, Verdict};

use crate::error::ConfigError;
use crate::links::arq::{ArqConfig, ArqLink, ArqLinkConfig, ArqStats};
use crate::links::link::{
    drop_cause_code, Departure, DropCause, LinkEvent, LinkStats, Packet, QueueLimit, QueueLogs,
    SojournLog, N_DROP_CAUSES,
};
use crate::links::queue::{DropTail, Queue, Verdict as QueueVerdict};
use crate::loss::LossModel;
use crate::modem::{Command, ModemState, Supervisor, SupervisorConfig, SupervisorStats};
use crate::time::{BitRate, SimDuration, SimTime};

/// Linux 2.6's transmit queue per modem, the packet being sent included (seed 000 4.1.6).
pub const DEFAULT_TXQUEUE_PKTS: u32 = 3;
/// RFC 1990 section 3: the long sequence number fragment format, 4 bytes (flags and a 24-bit
/// sequence number); the PPP protocol field is part of the PPP framing, not modelled on any
/// link.
pub const DEFAULT_MP_HEADER_BYTES: u32 = 4;
/// The most members a bundle may have (a fragment mask is 64 bits).
pub const MAX_MEMBERS: u32 = 64;
/// Storage reserved up front for a member's transmit queue; a larger `txqueue_pkts` grows it
/// as packets actually queue, so a huge bound costs nothing until it is used.
const MAX_RESERVED_TXQUEUE_PKTS: usize = 1024;

// ---------------------------------------------------------------------------------------------
// Member states as traced
// ---------------------------------------------------------------------------------------------

/// The state of a member as the traces record it: the modem's state (Figure 7.2), plus
/// `CallLost` between a call drop and the moment it is noticed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemberState {
    Idle,
    Connecting,
    Connected,
    /// The call is gone but nobody has noticed: MLPPP still sends to the member.
    CallLost,
    Dropped,
    Failed,
    Blocked,
}

impl MemberState {
    /// Names by trace code.
    pub const NAMES: [&'static str; 7] = [
        "idle",
        "connecting",
        "connected",
        "call_lost",
        "dropped",
        "failed",
        "blocked",
    ];

    /// The trace code, an index into [`MemberState::NAMES`].
    pub fn code(self) -> u8 {
        match self {
            MemberState::Idle => 0,
            MemberState::Connecting => 1,
            MemberState::Connected => 2,
            MemberState::CallLost => 3,
            MemberState::Dropped => 4,
            MemberState::Failed => 5,
            MemberState::Blocked => 6,
        }
    }

    pub fn name(self) -> &'static str {
        Self::NAMES[self.code() as usize]
    }
}

impl From<ModemState> for MemberState {
    fn from(s: ModemState) -> Self {
        match s {
            ModemState::Idle => MemberState::Idle,
            ModemState::Connecting => MemberState::Connecting,
            ModemState::Connected => MemberState::Connected,
            ModemState::Dropped => MemberState::Dropped,
            ModemState::Failed => MemberState::Failed,
            ModemState::Blocked => MemberState::Blocked,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reassembly
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
struct Pending {
    pkt: Packet,
    first: u64,
    frags: u32,
    /// Bit i: fragment `first + i` is in.
    arrived: u64,
    /// Why a fragment of it will never come, first known.
    cause: Option<DropCause>,
}

fn full_mask(frags: u32) -> u64 {
    if frags >= 64 {
        u64::MAX
    } else {
        (1u64 << frags) - 1
    }
}

/// Counters of a [`Reassembly`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReassemblyStats {
    pub delivered_pkts: u64,
    /// Packets given up, by drop-cause code.
    pub dropped_pkts: [u64; N_DROP_CAUSES],
    /// Units that arrived (or were lost) after their packet was handed up or given up.
    pub late_units: u64,
    /// Given up by the timer rather than by the sequence-number rule.
    pub timeouts: u64,
}

/// The receiving end of MLPPP: packets in sequence order, fragments put together, losses
/// inferred from the members' sequence numbers (RFC 1990 section 4.1) or a timer.
///
/// The sending side registers each packet with [`Reassembly::push`] when it is dispatched
/// (its fragments have consecutive sequence numbers, increasing from packet to packet); the
/// members report what arrives ([`Reassembly::on_arrival`]) and, where the engine knows it,
/// why a unit will never come ([`Reassembly::on_lost`], which only annotates: the receiver
/// still has to infer the loss).
#[derive(Debug)]
pub struct Reassembly {
    pending: VecDeque<Pending>,
    /// The members' floors and the staleness timer (shared with the wire reassembly).
    rule: LossRule,
    /// Fragments in of packets not yet handed up.
    buffered: u64,
    out: VecDeque<LinkEvent>,
    stats: ReassemblyStats,
}

impl Reassembly {
    /// Reassembly for `members` members, none of them in the bundle yet.
    pub fn new(members: usize, timeout: SimDuration) -> Self {
        Reassembly {
            pending: VecDeque::with_capacity(64),
            rule: LossRule::new(members, timeout),
            buffered: 0,
            out: VecDeque::with_capacity(16),
            stats: ReassemblyStats::default(),
        }
    }

    pub fn stats(&self) -> &ReassemblyStats {
        &self.stats
    }

    /// Packets registered and not yet handed up or given up (events not yet popped excluded).
    pub fn pending_pkts(&self) -> usize {
        self.pending.len()
    }

    /// Events not yet popped.
    pub fn queued_events(&self) -> usize {
        self.out.len()
    }

    /// A packet dispatched as fragments `first .. first + frags` (1 to 64).
    pub fn push(&mut self, pkt: Packet, first: u64, frags: u32) {
        debug_assert!((1..=64).contains(&frags));
        debug_assert!(self
            .pending
            .back()
            .is_none_or(|p| p.first + u64::from(p.frags) <= first));
        self.pending.push_back(Pending {
            pkt,
            first,
            frags,
            arrived: 0,
            cause: None,
        });
    }

    /// `member` joins the bundle; nothing numbered below `next_seq` will come on it.
    pub fn join(&mut self, member: usize, next_seq: u64) {
        self.rule.join(member, next_seq);
    }

    /// `member` leaves the bundle: its floor no longer holds anything back.
    pub fn leave(&mut self, member: usize) {
        self.rule.leave(member);
    }

    /// Whether `member` is known to have nothing on its way (its call up, its link idle).
    pub fn set_quiet(&mut self, member: usize, quiet: bool) {
        self.rule.set_quiet(member, quiet);
    }

    fn find(&self, seq: u64) -> Option<usize> {
        let i = self
            .pending
            .partition_point(|p| p.first + u64::from(p.frags) <= seq);
        (i < self.pending.len() && self.pending[i].first <= seq).then_some(i)
    }

    /// Unit `seq` arrived on `member`. Call [`Reassembly::release`] afterwards.
    pub fn on_arrival(&mut self, member: usize, seq: u64) {
        self.rule.on_arrival(member, seq);
        match self.find(seq) {
            Some(i) => {
                let p = &mut self.pending[i];
                let bit = 1u64 << (seq - p.first);
                if p.arrived & bit == 0 {
                    p.arrived |= bit;
                    self.buffered += 1;
                }
            }
            None => self.stats.late_units += 1,
        }
    }

    /// Unit `seq` will never arrive, because of `cause`.
    pub fn on_lost(&mut self, seq: u64, cause: DropCause) {
        match self.find(seq) {
            Some(i) => {
                self.pending[i].cause.get_or_insert(cause);
            }
            None => self.stats.late_units += 1,
        }
    }

    /// Hands up or gives up every packet it can at `t`, in sequence order.
    pub fn release(&mut self, t: SimTime) {
        while let Some(p) = self.pending.front().copied() {
            let full = full_mask(p.frags);
            if p.arrived == full {
                self.pop(t, None);
                continue;
            }
            let lowest_missing = p.first + u64::from((!p.arrived).trailing_zeros());
            match self.rule.verdict(t, lowest_missing, self.buffered > 0) {
                Verdict::Lost => {
                    self.pop(t, Some(p.cause.unwrap_or(DropCause::ReassemblyTimeout)));
                    continue;
                }
                Verdict::TimedOut => {
                    self.stats.timeouts += 1;
                    self.pop(t, Some(p.cause.unwrap_or(DropCause::ReassemblyTimeout)));
                    continue;
                }
                Verdict::Wait => {}
            }
            break;
        }
        if self.buffered == 0 {
            self.rule.clear_timer();
        }
    }

    fn pop(&mut self, t: SimTime, dropped: Option<DropCause>) {
        let Some(p) = self.pending.pop_front() else {
            return;
        };
        self.buffered -= u64::from(p.arrived.count_ones());
        self.rule.clear_timer();
        match dropped {
            None => {
                self.stats.delivered_pkts += 1;
                self.out
                    .push_back(LinkEvent::Delivered { at: t, pkt: p.pkt });
            }
            Some(cause) => {
                self.stats.dropped_pkts[usize::from(drop_cause_code(cause))] += 1;
                self.out.push_back(LinkEvent::Dropped {
                    at: t,
                    pkt: p.pkt,
                    cause,
                });
            }
        }
    }

    /// When the timer would give the head up, if the receiver is holding fragments back.
    pub fn deadline(&self) -> Option<SimTime> {
        self.rule.deadline()
    }

    /// The oldest event not yet taken, if any.
    pub fn pop_event(&mut self) -> Option<LinkEvent> {
        self.out.pop_front()
    }

    fn next_event_at(&self) -> Option<SimTime> {
        self.out.front().map(LinkEvent::at)
    }
}

// ---------------------------------------------------------------------------------------------
// One direction of a bundle
// ---------------------------------------------------------------------------------------------

/// One member in one direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemberDirConfig {
    pub rate: BitRate,
    pub delay: SimDuration,
    /// Packets the member holds before it is full, the one being sent included (at least 1).
    pub txqueue_pkts: u32,
    pub arq: Option<ArqConfig>,
}

impl MemberDirConfig {
    /// The member's frames: its rate, delay and ARQ.
    pub fn link_config(&self) -> ArqLinkConfig {
        ArqLinkConfig {
            rate: self.rate,
            delay: self.delay,
            arq: self.arq,
        }
    }
}

/// One direction of a bundle.
#[derive(Clone, Debug, PartialEq)]
pub struct BundleDirConfig {
    pub members: Vec<MemberDirConfig>,
    /// The MLPPP queue in front of the members.
    pub queue_limit: QueueLimit,
    pub fragment: bool,
    pub mp_header_bytes: u32,
    pub reassembly_timeout: SimDuration,
}

/// Unit counters of a direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BundleDirStats {
    /// Units (packets or fragments) handed to members.
    pub units_sent: u64,
    pub units_arrived: u64,
    /// Units lost, by drop-cause code.
    pub units_lost: [u64; N_DROP_CAUSES],
    /// Packets sent as more than one fragment.
    pub fragmented_pkts: u64,
    /// Units clocked into a call that had dropped unnoticed.
    pub units_into_the_void: u64,
}

#[derive(Debug)]
struct Member<L: LossModel> {
    link: ArqLink<L>,
    rate: BitRate,
    txqueue: usize,
    /// The call is up.
    carrier: bool,
    /// MLPPP may send to it.
    usable: bool,
    /// Units clocked into a dead call, each lost when its serialization ends.
    void: VecDeque<(SimTime, Packet)>,
    void_free_at: SimTime,
}

impl<L: LossModel> Member<L> {
    fn can_accept(&self) -> bool {
        self.usable
            && if self.carrier {
                self.link.backlog_pkts() < self.txqueue
            } else {
                self.void.len() < self.txqueue
            }
    }

    fn next_event(&self) -> Option<SimTime> {
        match (self.link.next_wakeup(), self.void.front().map(|v| v.0)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn inside(&self) -> u64 {
        self.link.in_flight_units() + self.void.len() as u64
    }
}

/// One direction of a bundle; see the module documentation. Members start down: the control
/// plane's first commands bring them up.
#[derive(Debug)]
pub struct BundleDir<L: LossModel> {
    members: Vec<Member<L>>,
    /// The MLPPP queue.
    queue: Queue,
    /// Packets the queue dropped at dequeue, not yet reported by `poll`.
    evicted: VecDeque<LinkEvent>,
    fragment: bool,
    mp_header_bytes: u32,
    rr: usize,
    next_seq: u64,
    reasm: Reassembly,
    stats: LinkStats,
    drops: [u64; N_DROP_CAUSES],
    unit_stats: BundleDirStats,
    departures: Option<VecDeque<Departure>>,
    /// Every packet's wait in the MLPPP queue, while the queue log is on.
    sojourns: SojournLog,
    /// Members with room, for fragmentation (reused).
    scratch: Vec<usize>,
    clock: SimTime,
}

/// The MLPPP queue's logs: each packet's wait until a member's transmit queue takes it (zero
/// for a packet a member took at once); the members' transmit queues are not in them.
impl<L: LossModel> QueueLogs for BundleDir<L> {
    fn queue_logs(&mut self) -> (&mut SojournLog, &mut Queue) {
        (&mut self.sojourns, &mut self.queue)
    }
}

impl<L: LossModel> BundleDir<L> {
    /// A direction with `cfg`, member `i` deciding its frames (or packets) with `losses[i]`,
    /// its MLPPP queue drop-tail.
    pub fn new(cfg: &BundleDirConfig, losses: Vec<L>) -> Result<Self, ConfigError> {
        Self::with_queue(cfg, losses, Queue::DropTail(DropTail::new(cfg.queue_limit)))
    }

    /// A direction whose MLPPP queue is `queue` (made for `cfg.queue_limit`: [`Queue::new`]).
    pub fn with_queue(
        cfg: &BundleDirConfig,
        losses: Vec<L>,
        queue: Queue,
    ) -> Result<Self, ConfigError> {
        let n = cfg.members.len();
        if n == 0 || n > MAX_MEMBERS as usize {
            return Err(ConfigError::new(
                "members",
                format!("expected 1 to {MAX_MEMBERS} members, got {n}"),
            ));
        }
        if losses.len() != n {
            return Err(ConfigError::new(
                "members",
                format!("{n} members but {} error models", losses.len()),
            ));
        }
        let mut members = Vec::with_capacity(n);
        for (m, loss) in cfg.members.iter().zip(losses) {
            if m.txqueue_pkts == 0 {
                return Err(ConfigError::new(
                    "txqueue_pkts",
                    "expected a transmit queue of at least 1 packet, got 0",
                ));
            }
            let link = ArqLink::new(m.link_config(), loss)?;
            members.push(Member {
                link,
                rate: m.rate,
                txqueue: m.txqueue_pkts as usize,
                carrier: false,
                usable: false,
                void: VecDeque::with_capacity(
                    (m.txqueue_pkts as usize).min(MAX_RESERVED_TXQUEUE_PKTS),
                ),
                void_free_at: SimTime::ZERO,
            });
        }
        Ok(BundleDir {
            members,
            queue,
            evicted: VecDeque::new(),
            fragment: cfg.fragment,
            mp_header_bytes: cfg.mp_header_bytes,
            rr: 0,
            next_seq: 0,
            reasm: Reassembly::new(n, cfg.reassembly_timeout),
            stats: LinkStats::default(),
            drops: [0; N_DROP_CAUSES],
            unit_stats: BundleDirStats::default(),
            departures: None,
            sojourns: SojournLog::default(),
            scratch: Vec::with_capacity(n),
            clock: SimTime::ZERO,
        })
    }

    /// Packet-level counters, in the shape of a plain link's (its `dropped_*` fields hold queue
    /// overflows and corruption; [`BundleDir::drops_by_cause`] has every cause).
    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    /// Packets dropped, by drop-cause code.
    pub fn drops_by_cause(&self) -> [u64; N_DROP_CAUSES] {
        self.drops
    }

    pub fn unit_stats(&self) -> &BundleDirStats {
        &self.unit_stats
    }

    pub fn reassembly_stats(&self) -> &ReassemblyStats {
        self.reasm.stats()
    }

    /// ARQ counters of each member, in member order.
    pub fn member_arq_stats(&self) -> impl Iterator<Item = &ArqStats> {
        self.members.iter().map(|m| m.link.stats())
    }

    /// The error model of member `i`.
    pub fn member_loss(&self, i: usize) -> Option<&L> {
        self.members.get(i).map(|m| m.link.loss())
    }

    pub fn member_count(&self) -> usize {
        self.members.len()
    }

    /// Members MLPPP may send to.
    pub fn usable_members(&self) -> usize {
        self.members.iter().filter(|m| m.usable).count()
    }

    /// The sum of the rates of the members MLPPP may send to.
    pub fn capacity_bps(&self) -> u64 {
        self.members
            .iter()
            .filter(|m| m.usable)
            .map(|m| m.rate.bps())
            .sum()
    }

    /// Packets waiting in the MLPPP queue.
    pub fn queue_len_pkts(&self) -> usize {
        self.queue.len_pkts()
    }

    pub fn queue_len_bytes(&self) -> u64 {
        self.queue.len_bytes()
    }

    /// Packets held by member `i`'s transmit queue (the one being sent included).
    pub fn member_backlog_pkts(&self, i: usize) -> usize {
        self.members.get(i).map_or(0, |m| {
            if m.carrier {
                m.link.backlog_pkts()
            } else {
                m.void.len()
            }
        })
    }

    /// Packets inside: in the MLPPP queue, on their way, waiting for reassembly, or handed up
    /// or given up but not yet polled.
    pub fn in_flight_pkts(&self) -> u64 {
        (self.queue.len_pkts() + self.reasm.pending_pkts() + self.reasm.queued_events()) as u64
    }

    /// Whether every packet offered is delivered, dropped with a cause, or inside, and every
    /// unit sent to a member arrived, was lost, or is inside a member.
    pub fn conservation_holds(&self) -> bool {
        let dropped: u64 = self.drops.iter().sum();
        let packets =
            self.stats.offered_pkts == self.stats.delivered_pkts + dropped + self.in_flight_pkts();
        let u = &self.unit_stats;
        let inside: u64 = self.members.iter().map(Member::inside).sum();
        let units = u.units_sent == u.units_arrived + u.units_lost.iter().sum::<u64>() + inside;
        let members = self.members.iter().all(|m| m.link.conservation_holds());
        packets && units && members
    }

    /// Turns the departure log on or off: packets are logged when they leave the MLPPP queue
    /// for a member.
    pub fn set_departure_log(&mut self, on: bool) {
        self.departures = on.then(|| VecDeque::with_capacity(16));
    }

    pub fn pop_departure(&mut self) -> Option<Departure> {
        self.departures.as_mut()?.pop_front()
    }

    /// The earliest instant this direction has something to do.
    pub fn next_wakeup(&self) -> Option<SimTime> {
        let members = self.members.iter().filter_map(Member::next_event).min();
        let evicted = self.evicted.front().map(LinkEvent::at);
        [
            self.reasm.next_event_at(),
            members,
            self.reasm.deadline(),
            evicted,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Offers `pkt` at `now`: to a member at once if one has room and nothing waits, else to the
    /// MLPPP queue; `Err(cause)` if that refuses it (`QueueOverflow` when full, `Aqm`; the
    /// packet is then dropped and counted).
    pub fn offer(&mut self, now: SimTime, pkt: Packet) -> Result<(), DropCause> {
        let now = self.advance(now);
        self.stats.offered_pkts += 1;
        self.stats.offered_bytes += u64::from(pkt.size_bytes);
        if self.queue.len_pkts() == 0 && self.dispatch(now, pkt) {
            if self.sojourns.is_on() {
                self.sojourns.push(now, now);
            }
            self.note_quiet();
            return Ok(());
        }
        match self.queue.enqueue(now, pkt, &mut self.evicted) {
            QueueVerdict::Queued => {}
            QueueVerdict::Marked => self.stats.ce_marked_pkts += 1,
            QueueVerdict::Dropped(cause) => {
                self.count_queue_drop(pkt, cause);
                return Err(cause);
            }
        }
        self.note_queue_change();
        Ok(())
    }

    /// Counts a packet the MLPPP queue dropped.
    fn count_queue_drop(&mut self, pkt: Packet, cause: DropCause) {
        self.stats.count_queue_drop(cause, pkt.size_bytes);
        self.drops[usize::from(drop_cause_code(cause))] += 1;
    }

    /// The next packet handed up or given up at or before `now`, in time order.
    pub fn poll(&mut self, now: SimTime) -> Option<LinkEvent> {
        let now = self.advance(now);
        // A packet the queue dropped at dequeue goes first if it is the earliest.
        if let Some(at) = self.evicted.front().map(LinkEvent::at) {
            if at <= now && self.reasm.next_event_at().is_none_or(|r| at <= r) {
                return self.evicted.pop_front();
            }
        }
        if self.reasm.next_event_at()? > now {
            return None;
        }
        let ev = self.reasm.pop_event()?;
        match ev {
            LinkEvent::Delivered { pkt, .. } => {
                self.stats.delivered_pkts += 1;
                self.stats.delivered_bytes += u64::from(pkt.size_bytes);
            }
            LinkEvent::Dropped { pkt, cause, .. } => {
                self.drops[usize::from(drop_cause_code(cause))] += 1;
                if cause == DropCause::Corruption {
                    self.stats.dropped_corruption_pkts += 1;
                    self.stats.dropped_corruption_bytes += u64::from(pkt.size_bytes);
                }
            }
        }
        Some(ev)
    }

    /// Member `i`'s call is up at `now` (it carries nothing yet; [`BundleDir::set_usable`]
    /// lets MLPPP use it).
    pub fn member_up(&mut self, now: SimTime, i: usize) {
        let now = self.advance(now);
        self.flush_void(i);
        if let Some(m) = self.members.get_mut(i) {
            m.carrier = true;
        }
        self.refill(now);
        self.note_quiet();
        self.reasm.release(now);
    }

    /// Member `i`'s call dropped at `now`: everything it holds is lost (`CallDrop`). Until the
    /// drop is noticed, packets MLPPP still sends to it are clocked into the void.
    pub fn member_lost(&mut self, now: SimTime, i: usize) {
        let now = self.advance(now);
        let Some(m) = self.members.get_mut(i) else {
            return;
        };
        let (reasm, stats) = (&mut self.reasm, &mut self.unit_stats);
        m.link.clear(now, |u| {
            stats.units_lost[usize::from(drop_cause_code(DropCause::CallDrop))] += 1;
            reasm.on_lost(u.id, DropCause::CallDrop);
        });
        m.carrier = false;
        m.void_free_at = now;
        self.refill(now);
        self.note_quiet();
        self.reasm.release(now);
    }

    /// Whether MLPPP may send to member `i` from `now` on. Leaving loses what the member still
    /// holds (`CallDrop`); joining takes packets from the MLPPP queue at once.
    pub fn set_usable(&mut self, now: SimTime, i: usize, usable: bool) {
        let now = self.advance(now);
        if i >= self.members.len() || self.members[i].usable == usable {
            return;
        }
        if usable {
            self.members[i].usable = true;
            self.reasm.join(i, self.next_seq);
            self.refill(now);
        } else {
            self.members[i].usable = false;
            self.flush_void(i);
            let (reasm, stats, m) = (&mut self.reasm, &mut self.unit_stats, &mut self.members[i]);
            m.link.clear(now, |u| {
                stats.units_lost[usize::from(drop_cause_code(DropCause::CallDrop))] += 1;
                reasm.on_lost(u.id, DropCause::CallDrop);
            });
            self.reasm.leave(i);
        }
        self.note_quiet();
        self.reasm.release(now);
    }

    // ----- internals -----

    fn note_queue_change(&mut self) {
        self.stats.queue_changes += 1;
        let (pkts, bytes) = (self.queue.len_pkts() as u64, self.queue.len_bytes());
        self.stats.max_queue_pkts = self.stats.max_queue_pkts.max(pkts);
        self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(bytes);
    }

    /// Loses every unit member `i` was clocking into the void.
    fn flush_void(&mut self, i: usize) {
        let Some(m) = self.members.get_mut(i) else {
            return;
        };
        while let Some((_, u)) = m.void.pop_front() {
            self.unit_stats.units_lost[usize::from(drop_cause_code(DropCause::CallDrop))] += 1;
            self.reasm.on_lost(u.id, DropCause::CallDrop);
        }
    }

    /// Runs every member event due at or before `now`, in time order, refilling members from
    /// the MLPPP queue and releasing reassembled packets at each instant.
    fn advance(&mut self, now: SimTime) -> SimTime {
        debug_assert!(
            now >= self.clock,
            "bundle driven backwards in time: {now} after {}",
            self.clock
        );
        let now = now.max(self.clock);
        loop {
            let members = self.members.iter().filter_map(Member::next_event).min();
            let Some(t) = [members, self.reasm.deadline()].into_iter().flatten().min() else {
                break;
            };
            if t > now {
                break;
            }
            let t = t.max(self.clock);
            self.clock = t;
            for i in 0..self.members.len() {
                let m = &mut self.members[i];
                while matches!(m.void.front(), Some(&(done, _)) if done <= t) {
                    if let Some((_, u)) = m.void.pop_front() {
                        self.unit_stats.units_lost
                            [usize::from(drop_cause_code(DropCause::CallDrop))] += 1;
                        self.reasm.on_lost(u.id, DropCause::CallDrop);
                    }
                }
                while let Some(ev) = m.link.poll(t) {
                    match ev {
                        LinkEvent::Delivered { pkt, .. } => {
                            self.unit_stats.units_arrived += 1;
                            self.reasm.on_arrival(i, pkt.id);
                        }
                        LinkEvent::Dropped { pkt, cause, .. } => {
                            self.unit_stats.units_lost[usize::from(drop_cause_code(cause))] += 1;
                            self.reasm.on_lost(pkt.id, cause);
                        }
                    }
                }
            }
            self.refill(t);
            self.note_quiet();
            self.reasm.release(t);
        }
        self.clock = now;
        now
    }

    /// Tells reassembly which members have nothing on their way over a live call.
    fn note_quiet(&mut self) {
        for (i, m) in self.members.iter().enumerate() {
            self.reasm.set_quiet(
                i,
                m.carrier && m.void.is_empty() && m.link.in_flight_units() == 0,
            );
        }
    }

    /// Moves packets from the MLPPP queue to members while any has room. The queue's
    /// discipline decides at each dequeue (an AQM may drop packets on the way: counted here,
    /// reported by `poll`).
    fn refill(&mut self, t: SimTime) {
        while self.queue.len_pkts() > 0 && self.members.iter().any(Member::can_accept) {
            let before = self.evicted.len();
            let next = self.queue.dequeue(t, &mut self.evicted);
            for i in before..self.evicted.len() {
                if let LinkEvent::Dropped { pkt, cause, .. } = self.evicted[i] {
                    self.count_queue_drop(pkt, cause);
                }
            }
            let Some(next) = next else {
                break;
            };
            self.stats.ce_marked_pkts += u64::from(next.marked);
            if self.sojourns.is_on() {
                self.sojourns.push(t, next.enqueued_at.unwrap_or(t));
            }
            let sent = self.dispatch(t, next.pkt);
            debug_assert!(sent, "a member with room refused a packet");
            self.note_queue_change();
        }
    }

    /// Sends `pkt` to the member(s) with room, round robin; false if none has room. With
    /// fragmentation, a packet is split over the members that are idle (nothing in their
    /// transmit queue) when there are two or more, as Linux's `ppp_mp_explode` splits over the
    /// channels free at that instant; otherwise it goes whole.
    fn dispatch(&mut self, t: SimTime, pkt: Packet) -> bool {
        let n = self.members.len();
        self.scratch.clear();
        if self.fragment {
            for k in 0..n {
                let i = (self.rr + k) % n;
                if self.members[i].can_accept() && self.member_backlog_pkts(i) == 0 {
                    self.scratch.push(i);
                }
            }
            if self.scratch.len() < 2 {
                self.scratch.clear();
            }
        }
        if self.scratch.is_empty() {
            if let Some(i) = (0..n)
                .map(|k| (self.rr + k) % n)
                .find(|&i| self.members[i].can_accept())
            {
                self.scratch.push(i);
            }
        }
        if self.scratch.is_empty() {
            return false;
        }
        let k = self.scratch.len().min(pkt.size_bytes.max(1) as usize);
        let first = self.next_seq;
        self.next_seq += k as u64;
        self.reasm.push(pkt, first, k as u32);
        if k > 1 {
            self.unit_stats.fragmented_pkts += 1;
        }
        let (base, extra) = (pkt.size_bytes / k as u32, pkt.size_bytes % k as u32);
        for j in 0..k {
            let i = self.scratch[j];
            let size = base + u32::from((j as u32) < extra) + self.mp_header_bytes;
            let unit = Packet {
                id: first + j as u64,
                size_bytes: size,
                ..pkt
            };
            self.unit_stats.units_sent += 1;
            let m = &mut self.members[i];
            if m.carrier {
                m.link.offer(t, unit);
            } else {
                let done = t.max(m.void_free_at) + m.rate.transmission_time(size);
                m.void_free_at = done;
                m.void.push_back((done, unit));
                self.unit_stats.units_into_the_void += 1;
            }
        }
        self.rr = (self.scratch[k - 1] + 1) % n;
        if let Some(log) = &mut self.departures {
            log.push_back(Departure { at: t, pkt });
        }
        true
    }
}

// ---------------------------------------------------------------------------------------------
// The control plane
// ---------------------------------------------------------------------------------------------

/// The control plane of a bundle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControlConfig {
    pub supervisor: SupervisorConfig,
    /// Time from a call drop to the moment the link layer notices it (T_L of section 5.2).
    pub detection_delay: SimDuration,
    /// Each member's rate, for the bundle's capacity.
    pub member_rates: Vec<BitRate>,
}

/// What the control plane asks of the engine (or of the daemon).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlCommand {
    /// Dial `member`; report the outcome with [`BundleControl::on_dial_result`].
    Dial { member: u32, attempt: u32 },
    /// `member`'s call is up (connection number `conn`): both directions' member links start
    /// afresh ([`BundleDir::member_up`]); draw its next call drop and report it with
    /// [`BundleControl::on_call_drop`] and `conn`.
    CarrierUp { member: u32, conn: u32 },
    /// `member`'s call is gone: both directions lose what it holds ([`BundleDir::member_lost`]).
    CarrierLost { member: u32 },
    /// MLPPP may (or may no longer) use `member` ([`BundleDir::set_usable`]).
    Usable { member: u32, usable: bool },
    /// `member` entered `state` (for traces and the connection database).
    State { member: u32, state: MemberState },
    /// The members MLPPP may use and their summed rate changed.
    Capacity { members_up: u32, capacity_bps: u64 },
}

/// Time-weighted availability of a bundle (the KUMICS reliability figures of seed 000
/// Figure 7.14 and seed 001 slides 17–19).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Availability {
    /// Nanoseconds with every member usable, with at least one, and member-nanoseconds usable.
    pub all_up_ns: u64,
    pub any_up_ns: u64,
    pub member_up_ns: Vec<u64>,
    /// Times the bundle lost its last usable member.
    pub outages: u64,
    pub observed_ns: u64,
}

/// Counters of the control plane.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ControlStats {
    /// Calls lost (the Poisson call drops fed in, of members whose call was up).
    pub call_drops: u64,
    /// Calls hung up by the supervisor (secondaries of a bundle whose primary dropped).
    pub hangups: u64,
    pub supervisor: SupervisorStats,
}

#[derive(Clone, Copy, Debug)]
struct MemberCtl {
    carrier: bool,
    usable: bool,
    conn: u32,
    /// When the current call drop will be noticed.
    detect_at: Option<SimTime>,
}

/// The control plane of a bundle: a [`Supervisor`] plus what it cannot see (the physical state
/// of each call and the delay before a drop is noticed); see the module documentation.
#[derive(Debug)]
pub struct BundleControl {
    sup: Supervisor,
    members: Vec<MemberCtl>,
    rates: Vec<BitRate>,
    detection_delay: SimDuration,
    next_conn: u32,
    commands: VecDeque<ControlCommand>,
    stats: ControlStats,
    avail: Availability,
    last_change: SimTime,
    traced_capacity: Option<(u32, u64)>,
}

impl BundleControl {
    /// The control plane at `now`; its first commands bring the members up or start dialling.
    pub fn new(cfg: ControlConfig, now: SimTime) -> Result<Self, ConfigError> {
        let n = cfg.supervisor.members as usize;
        if cfg.member_rates.len() != n {
            return Err(ConfigError::new(
                "members",
                format!("{n} members but {} rates", cfg.member_rates.len()),
            ));
        }
        let sup = Supervisor::new(cfg.supervisor, now)?;
        let mut c = BundleControl {
            sup,
            members: vec![
                MemberCtl {
                    carrier: false,
                    usable: false,
                    conn: 0,
                    detect_at: None,
                };
                n
            ],
            rates: cfg.member_rates,
            detection_delay: cfg.detection_delay,
            next_conn: 0,
            commands: VecDeque::with_capacity(8 * n + 8),
            stats: ControlStats::default(),
            avail: Availability {
                member_up_ns: vec![0; n],
                ..Availability::default()
            },
            last_change: now,
            traced_capacity: None,
        };
        c.translate(now);
        Ok(c)
    }

    pub fn stats(&self) -> ControlStats {
        ControlStats {
            supervisor: *self.sup.stats(),
            ..self.stats
        }
    }

    pub fn supervisor(&self) -> &Supervisor {
        &self.sup
    }

    /// The next command, in the order decided.
    pub fn poll_command(&mut self) -> Option<ControlCommand> {
        self.commands.pop_front()
    }

    /// The earliest instant the control plane wants to be woken.
    pub fn next_wakeup(&self) -> Option<SimTime> {
        let detect = self.members.iter().filter_map(|m| m.detect_at).min();
        match (self.sup.next_wakeup(), detect) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// `member`'s call (connection `conn`) dropped at `now`. Ignored if that call is no longer
    /// up (the drop was drawn for a call that ended otherwise).
    pub fn on_call_drop(&mut self, now: SimTime, member: u32, conn: u32) {
        let Some(m) = self.members.get_mut(member as usize) else {
            return;
        };
        if !m.carrier || m.conn != conn {
            return;
        }
        m.carrier = false;
        m.detect_at = Some(now + self.detection_delay);
        self.stats.call_drops += 1;
        self.commands
            .push_back(ControlCommand::CarrierLost { member });
        self.commands.push_back(ControlCommand::State {
            member,
            state: MemberState::CallLost,
        });
    }

    /// The dial of `member` numbered `attempt` succeeded (`ok`) or failed at `now`.
    pub fn on_dial_result(&mut self, now: SimTime, member: u32, attempt: u32, ok: bool) {
        self.sup.on_dial_result(now, member, attempt, ok);
        self.translate(now);
    }

    /// Notices the call drops due at `now` and runs the supervisor's timers.
    pub fn on_timer(&mut self, now: SimTime) {
        for member in 0..self.members.len() {
            if matches!(self.members[member].detect_at, Some(at) if at <= now) {
                self.members[member].detect_at = None;
                self.sup.on_call_dropped(now, member as u32);
                self.translate(now);
            }
        }
        if matches!(self.sup.next_wakeup(), Some(at) if at <= now) {
            self.sup.on_timer(now);
            self.translate(now);
        }
    }

    /// The availability from the start to `now`.
    pub fn availability(&self, now: SimTime) -> Availability {
        let mut a = self.avail.clone();
        let dt = now.saturating_since(self.last_change).as_nanos();
        let up = self.members.iter().filter(|m| m.usable).count();
        if up == self.members.len() {
            a.all_up_ns += dt;
        }
        if up > 0 {
            a.any_up_ns += dt;
        }
        for (i, m) in self.members.iter().enumerate() {
            if m.usable {
                a.member_up_ns[i] += dt;
            }
        }
        a.observed_ns += dt;
        a
    }

    /// Turns the supervisor's commands into the engine's.
    fn translate(&mut self, now: SimTime) {
        self.account(now);
        while let Some(c) = self.sup.poll_command() {
            match c {
                Command::Dial { member, attempt } => {
                    self.commands
                        .push_back(ControlCommand::Dial { member, attempt });
                }
                Command::State { member, state } => {
                    self.commands.push_back(ControlCommand::State {
                        member,
                        state: state.into(),
                    });
                }
                Command::Up { member } => {
                    self.next_conn = self.next_conn.wrapping_add(1);
                    let conn = self.next_conn;
                    let m = &mut self.members[member as usize];
                    m.carrier = true;
                    m.usable = true;
                    m.conn = conn;
                    m.detect_at = None;
                    self.commands
                        .push_back(ControlCommand::CarrierUp { member, conn });
                    self.commands.push_back(ControlCommand::Usable {
                        member,
                        usable: true,
                    });
                }
                Command::Down { member } => {
                    let m = &mut self.members[member as usize];
                    m.detect_at = None;
                    if m.carrier {
                        // Hung up by the supervisor (the bundle's primary is gone).
                        m.carrier = false;
                        self.stats.hangups += 1;
                        self.commands
                            .push_back(ControlCommand::CarrierLost { member });
                    }
                    if m.usable {
                        m.usable = false;
                        self.commands.push_back(ControlCommand::Usable {
                            member,
                            usable: false,
                        });
                    }
                }
            }
        }
        self.note_capacity();
    }

    /// Adds the time since the last change to the availability counters.
    fn account(&mut self, now: SimTime) {
        let dt = now.saturating_since(self.last_change).as_nanos();
        if dt == 0 {
            return;
        }
        let up = self.members.iter().filter(|m| m.usable).count();
        if up == self.members.len() {
            self.avail.all_up_ns += dt;
        }
        if up > 0 {
            self.avail.any_up_ns += dt;
        }
        for (i, m) in self.members.iter().enumerate() {
            if m.usable {
                self.avail.member_up_ns[i] += dt;
            }
        }
        self.avail.observed_ns += dt;
        self.last_change = now;
    }

    /// Emits `Capacity` (and counts an outage) if the usable members changed.
    fn note_capacity(&mut self) {
        let up = self.members.iter().filter(|m| m.usable).count() as u32;
        let bps = self
            .members
            .iter()
            .zip(&self.rates)
            .filter(|(m, _)| m.usable)
            .map(|(_, r)| *r)
            .sum::<BitRate>()
            .bps();
        if self.traced_capacity == Some((up, bps)) {
            return;
        }
        if up == 0 && matches!(self.traced_capacity, Some((u, _)) if u > 0) {
            self.avail.outages += 1;
        }
        self.traced_capacity = Some((up, bps));
        self.commands.push_back(ControlCommand::Capacity {
            members_up: up,
            capacity_bps: bps,
        });
    }
}

#[cfg(test)]
mod tests;
