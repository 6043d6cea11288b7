//! Queue disciplines: what waits in front of a link's serializer, behind one interface.
//!
//! A [`Queue`] takes packets offered while the serializer is busy ([`Queue::enqueue`], whose
//! [`Verdict`] says whether the packet was queued, queued with its ECN field set to CE, or
//! dropped and why) and hands the next packet to send when the serializer frees
//! ([`Queue::dequeue`]). An active queue manager may also drop packets other than the one
//! offered (CoDel at dequeue, FQ-CoDel from the fattest flow when full): those go to the
//! `evicted` outbox the caller passes, as [`LinkEvent::Dropped`] at the call's instant, and the
//! caller reports them in time order. Like the links, a queue never reads a clock: every call
//! carries `now`. Every discipline's timers (PIE's and RED's periodic updates) are caught up
//! lazily at the next call, exactly, since what they read does not change between calls.
//!
//! Disciplines, each in its own file, citing the rules it codes:
//! * `droptail`: first in, first out; an arrival that does not fit the limit is dropped.
//! * `codel`: CoDel (RFC 8289), sojourn-time control law at dequeue.
//! * `fq_codel`: FQ-CoDel (RFC 8290), deficit round robin over per-flow CoDel queues.
//! * `pie`: PIE (RFC 8033), a drop probability driven by the queue delay, at enqueue.
//! * `red`: RED (Floyd and Jacobson 1993), with the gentle variant and Adaptive RED (Floyd,
//!   Gummadi and Shenker 2001).
//! * `dualpi2`: DualPI2 (RFC 9332), an L4S queue and a Classic queue coupled by one PI2
//!   controller.
//!
//! Every discipline honours the link's [`QueueLimit`] as its hard bound, as Linux's qdiscs and
//! ns-3's queue discs do (`limit`); an arrival beyond it is a [`DropCause::QueueOverflow`]. An
//! AQM decision is a [`DropCause::Aqm`], or a CE mark when the packet is ECN-capable.
//!
//! The dispatch is an enum, not a trait object: the drop-tail arm, every link's default, stays
//! inline in the link, and the AQM arms are boxed so a drop-tail link is no larger.

mod codel;
mod droptail;
mod dualpi2;
mod fq_codel;
mod pie;
mod red;

pub use codel::{CoDel, CoDelParams};
pub use droptail::DropTail;
pub use dualpi2::{DualPi2, DualPi2Params};
pub use fq_codel::{FqCoDel, FqCoDelParams};
pub use pie::{Pie, PieParams};
pub use red::{Red, RedParams};

use super::link::{DropCause, Ecn, LinkEvent, Packet, QueueLimit};
use crate::rng::StreamRng;
use crate::time::{BitRate, SimTime};
use std::collections::VecDeque;

/// What became of a packet offered to a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Queued as it was.
    Queued,
    /// Queued, its ECN field set to CE (an AQM's congestion signal to an ECN-capable sender).
    Marked,
    /// Not queued.
    Dropped(DropCause),
}

/// A packet handed to the serializer, and whether the queue set its ECN field to CE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dequeued {
    pub pkt: Packet,
    pub marked: bool,
    /// When it joined the queue: every discipline that timestamps its packets says it;
    /// drop-tail only while its log is on ([`Queue::set_log`]).
    pub enqueued_at: Option<SimTime>,
}

/// What a change of a discipline's control state was ([`AqmChange::event`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum AqmEvent {
    /// CoDel (or one of FQ-CoDel's flow queues) entered its dropping state; the value is its
    /// drop count then.
    DroppingEntered = 0,
    /// CoDel left its dropping state; the value is its drop count then.
    DroppingLeft = 1,
    /// PIE's drop probability after a periodic update that changed it.
    DropProbability = 2,
    /// RED's average queue length, in packets, after an arrival that changed it.
    AverageQueue = 3,
    /// DualPI2's base probability p' (RFC 9332 A.1) after a periodic update that changed it.
    BaseProbability = 4,
}

impl AqmEvent {
    /// Names by code, for the `aqm` trace's readers.
    pub const NAMES: [&'static str; 5] = [
        "dropping_entered",
        "dropping_left",
        "drop_probability",
        "average_queue",
        "base_probability",
    ];
}

/// A change of a discipline's control state, for the `aqm` trace: when, in which of its
/// queues (FQ-CoDel's flow queue; 0 for the single-queue disciplines), what, and the value
/// after it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AqmChange {
    pub at: SimTime,
    pub queue: u32,
    pub event: AqmEvent,
    pub value: f64,
}

/// The changes of a discipline's control state not yet taken, kept only while the log is on
/// (off, the default, it holds nothing and each change costs one branch).
#[derive(Debug, Default)]
pub(crate) struct StateLog(Option<VecDeque<AqmChange>>);

impl StateLog {
    #[inline]
    pub(crate) fn is_on(&self) -> bool {
        self.0.is_some()
    }

    fn set(&mut self, on: bool) {
        self.0 = on.then(|| VecDeque::with_capacity(16));
    }

    #[cold]
    pub(crate) fn push(&mut self, at: SimTime, queue: u32, event: AqmEvent, value: f64) {
        if let Some(log) = &mut self.0 {
            log.push_back(AqmChange {
                at,
                queue,
                event,
                value,
            });
        }
    }

    fn pop(&mut self) -> Option<AqmChange> {
        self.0.as_mut()?.pop_front()
    }
}

/// Which discipline a link direction's queue runs, with its parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Discipline {
    DropTail,
    CoDel(CoDelParams),
    FqCoDel(FqCoDelParams),
    Pie(PieParams),
    Red(RedParams),
    DualPi2(DualPi2Params),
}

impl Discipline {
    /// The name the scenario's `queue_discipline` spells it with.
    pub fn name(&self) -> &'static str {
        match self {
            Discipline::DropTail => "droptail",
            Discipline::CoDel(_) => "codel",
            Discipline::FqCoDel(_) => "fq_codel",
            Discipline::Pie(_) => "pie",
            Discipline::Red(_) => "red",
            Discipline::DualPi2(_) => "dualpi2",
        }
    }
}

/// A link direction's queue; see the module documentation.
#[derive(Debug)]
pub enum Queue {
    DropTail(DropTail),
    CoDel(Box<CoDel>),
    FqCoDel(Box<FqCoDel>),
    Pie(Box<Pie>),
    Red(Box<Red>),
    DualPi2(Box<DualPi2>),
}

impl Queue {
    /// A queue running `discipline` under `limit`, in front of a serializer of `rate` (RED
    /// needs it to age its average over idle spells); `rng` draws the random decisions of the
    /// disciplines that make them (PIE, RED).
    pub fn new(discipline: Discipline, limit: QueueLimit, rate: BitRate, rng: StreamRng) -> Self {
        match discipline {
            Discipline::DropTail => Queue::DropTail(DropTail::new(limit)),
            Discipline::CoDel(p) => Queue::CoDel(Box::new(CoDel::new(p, limit))),
            Discipline::FqCoDel(p) => Queue::FqCoDel(Box::new(FqCoDel::new(p, limit))),
            Discipline::Pie(p) => Queue::Pie(Box::new(Pie::new(p, limit, rng))),
            Discipline::Red(p) => Queue::Red(Box::new(Red::new(p, limit, rate, rng))),
            Discipline::DualPi2(p) => Queue::DualPi2(Box::new(DualPi2::new(p, limit, rng))),
        }
    }

    /// Offers `pkt` at `now`; packets the discipline drops in its place go to `evicted`.
    #[inline]
    pub fn enqueue(
        &mut self,
        now: SimTime,
        pkt: Packet,
        evicted: &mut VecDeque<LinkEvent>,
    ) -> Verdict {
        match self {
            Queue::DropTail(q) => q.enqueue(now, pkt),
            Queue::CoDel(q) => q.enqueue(now, pkt),
            Queue::FqCoDel(q) => q.enqueue(now, pkt, evicted),
            Queue::Pie(q) => q.enqueue(now, pkt),
            Queue::Red(q) => q.enqueue(now, pkt),
            Queue::DualPi2(q) => q.enqueue(now, pkt),
        }
    }

    /// The next packet for the serializer at `now`, if any; packets dropped on the way go to
    /// `evicted`.
    #[inline]
    pub fn dequeue(&mut self, now: SimTime, evicted: &mut VecDeque<LinkEvent>) -> Option<Dequeued> {
        match self {
            Queue::DropTail(q) => q.dequeue().map(|(pkt, enqueued_at)| Dequeued {
                pkt,
                marked: false,
                enqueued_at,
            }),
            Queue::CoDel(q) => q.dequeue(now, evicted),
            Queue::FqCoDel(q) => q.dequeue(now, evicted),
            Queue::Pie(q) => q.dequeue(now),
            Queue::Red(q) => q.dequeue(now),
            Queue::DualPi2(q) => q.dequeue(now, evicted),
        }
    }

    /// Packets waiting.
    #[inline]
    pub fn len_pkts(&self) -> usize {
        match self {
            Queue::DropTail(q) => q.len_pkts(),
            Queue::CoDel(q) => q.fifo.len_pkts(),
            Queue::FqCoDel(q) => q.len_pkts(),
            Queue::Pie(q) => q.fifo.len_pkts(),
            Queue::Red(q) => q.fifo.len_pkts(),
            Queue::DualPi2(q) => q.len_pkts(),
        }
    }

    /// Bytes waiting.
    #[inline]
    pub fn len_bytes(&self) -> u64 {
        match self {
            Queue::DropTail(q) => q.len_bytes(),
            Queue::CoDel(q) => q.fifo.len_bytes(),
            Queue::FqCoDel(q) => q.len_bytes(),
            Queue::Pie(q) => q.fifo.len_bytes(),
            Queue::Red(q) => q.fifo.len_bytes(),
            Queue::DualPi2(q) => q.len_bytes(),
        }
    }

    /// Takes every waiting packet out, in the order it would have been served within each
    /// line (the link went down and drops what it holds: [`crate::links::schedule`]). The
    /// discipline's control state (CoDel's dropping state, PIE's probability, RED's average)
    /// is left as it was; an idle spell ages it as any other would.
    pub fn drain(&mut self, mut take: impl FnMut(Packet)) {
        match self {
            Queue::DropTail(q) => {
                while let Some((pkt, _)) = q.dequeue() {
                    take(pkt);
                }
            }
            Queue::CoDel(q) => q.fifo.drain(take),
            Queue::FqCoDel(q) => q.drain(take),
            Queue::Pie(q) => q.fifo.drain(take),
            Queue::Red(q) => q.fifo.drain(take),
            Queue::DualPi2(q) => q.drain(take),
        }
    }

    /// Turns the queue's logs on or off, before the first packet (off, the default, they cost
    /// one branch where they would record): `times`, each packet's arrival, so that drop-tail too says when a packet
    /// it hands over joined ([`Dequeued::enqueued_at`]; the other disciplines keep it anyway);
    /// `changes`, the discipline's control-state changes, taken by [`Queue::pop_change`].
    pub fn set_log(&mut self, times: bool, changes: bool) {
        match self {
            Queue::DropTail(q) => q.set_times(times),
            Queue::CoDel(q) => q.log.set(changes),
            Queue::FqCoDel(q) => q.log.set(changes),
            Queue::Pie(q) => q.log.set(changes),
            Queue::Red(q) => q.log.set(changes),
            Queue::DualPi2(q) => q.log.set(changes),
        }
    }

    /// The oldest control-state change not yet taken, while the log of changes is on.
    #[inline]
    pub fn pop_change(&mut self) -> Option<AqmChange> {
        match self {
            Queue::DropTail(_) => None,
            Queue::CoDel(q) => q.log.pop(),
            Queue::FqCoDel(q) => q.log.pop(),
            Queue::Pie(q) => q.log.pop(),
            Queue::Red(q) => q.log.pop(),
            Queue::DualPi2(q) => q.log.pop(),
        }
    }

    /// The capacity the waiting line holds without growing (drop-tail; for its tests).
    pub fn capacity(&self) -> usize {
        match self {
            Queue::DropTail(q) => q.capacity(),
            _ => 0,
        }
    }
}

/// Whether `bytes` more bytes and one more packet fit `limit` beside `pkts` packets and
/// `queued_bytes` bytes waiting (the drop-tail rule every discipline keeps as its hard bound).
#[inline]
pub(crate) fn fits(limit: QueueLimit, pkts: usize, queued_bytes: u64, bytes: u32) -> bool {
    match limit {
        QueueLimit::Packets(n) => pkts < n as usize,
        QueueLimit::Bytes(b) => queued_bytes + u64::from(bytes) <= b,
    }
}

/// An AQM's congestion signal to `pkt`: a CE mark if it is ECN-capable (RFC 3168 section 5:
/// a router "sets the CE codepoint ... instead of dropping the packet"), else a drop.
#[inline]
pub(crate) fn signal(pkt: &mut Packet) -> bool {
    if pkt.ecn.is_ect() {
        pkt.ecn = Ecn::Ce;
        true
    } else {
        false
    }
}

/// A first-in first-out line of packets with the instant each joined it: what CoDel, PIE and
/// RED keep, and each of FQ-CoDel's flow queues.
#[derive(Debug, Default)]
pub(crate) struct TimedFifo {
    pkts: VecDeque<(Packet, SimTime)>,
    bytes: u64,
}

impl TimedFifo {
    pub(crate) fn len_pkts(&self) -> usize {
        self.pkts.len()
    }

    pub(crate) fn len_bytes(&self) -> u64 {
        self.bytes
    }

    pub(crate) fn push(&mut self, now: SimTime, pkt: Packet) {
        self.bytes += u64::from(pkt.size_bytes);
        self.pkts.push_back((pkt, now));
    }

    /// The instant the head joined, if any.
    pub(crate) fn head_since(&self) -> Option<SimTime> {
        self.pkts.front().map(|&(_, at)| at)
    }

    /// The head and the instant it joined.
    pub(crate) fn pop(&mut self) -> Option<(Packet, SimTime)> {
        let (pkt, at) = self.pkts.pop_front()?;
        self.bytes -= u64::from(pkt.size_bytes);
        Some((pkt, at))
    }

    /// Every packet out, head first.
    pub(crate) fn drain(&mut self, mut take: impl FnMut(Packet)) {
        while let Some((pkt, _)) = self.pop() {
            take(pkt);
        }
    }
}

/// A dropped packet as the link reports it.
#[inline]
pub(crate) fn dropped(at: SimTime, pkt: Packet, cause: DropCause) -> LinkEvent {
    LinkEvent::Dropped { at, pkt, cause }
}

#[cfg(test)]
mod tests;
