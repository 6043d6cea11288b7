//! [`LinkDir`]: one direction of a link, whichever kind it is, behind one interface.

use crate::links::link::{drop_cause_code, N_DROP_CAUSES};
use crate::links::link::{Departure, DropCause, Link, LinkEvent, LinkStats, Packet};
use crate::links::link::{QueueLogs, SojournLog};
use crate::links::mlppp::BundleDir;
use crate::links::queue::Queue;
use crate::links::rlp::{RlpLink, SharedChannel};
use crate::loss::AnyLoss;
use crate::time::SimTime;

/// A radio hop direction with both of its channels shared with the other direction.
pub type RadioDir = RlpLink<SharedChannel<AnyLoss>, SharedChannel<AnyLoss>>;

/// One direction of a link: a plain link, a bundle's data plane, or one direction of an
/// IS-707 radio hop ([`crate::links::rlp`]). An enum rather than a trait object: every call on the
/// per-packet path is a match, never a virtual call, and nothing is boxed per packet. Plain
/// links stay inline (they are the hot path of most scenarios); the larger, rarer others are
/// boxed once at build.
///
/// Whoever owns the clock drives it: [`offer`](Self::offer) a packet at `now` (refused with
/// its cause, or taken), [`poll`](Self::poll) at [`next_wakeup`](Self::next_wakeup) until it
/// returns `None`, each event carrying its own instant.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum LinkDir {
    Link(Link<AnyLoss>),
    Bundle(Box<BundleDir<AnyLoss>>),
    Rlp(Box<RadioDir>),
}

/// The one queue a discipline runs in the direction: a plain link's queue, a bundle's MLPPP
/// queue, a radio hop's queue before RLP frames its packets.
impl QueueLogs for LinkDir {
    #[inline]
    fn queue_logs(&mut self) -> (&mut SojournLog, &mut Queue) {
        match self {
            LinkDir::Link(l) => l.queue_logs(),
            LinkDir::Bundle(b) => b.queue_logs(),
            LinkDir::Rlp(r) => r.queue_logs(),
        }
    }
}

impl LinkDir {
    pub fn offer(&mut self, now: SimTime, pkt: Packet) -> Result<(), DropCause> {
        match self {
            LinkDir::Link(l) => l.offer(now, pkt),
            LinkDir::Bundle(b) => b.offer(now, pkt),
            LinkDir::Rlp(r) => r.offer(now, pkt),
        }
    }

    pub fn poll(&mut self, now: SimTime) -> Option<LinkEvent> {
        match self {
            LinkDir::Link(l) => l.poll(now),
            LinkDir::Bundle(b) => b.poll(now),
            LinkDir::Rlp(r) => r.poll(now),
        }
    }

    pub fn next_wakeup(&self) -> Option<SimTime> {
        match self {
            LinkDir::Link(l) => l.next_wakeup(),
            LinkDir::Bundle(b) => b.next_wakeup(),
            LinkDir::Rlp(r) => r.next_wakeup(),
        }
    }

    pub fn queue_len_pkts(&self) -> usize {
        match self {
            LinkDir::Link(l) => l.queue_len_pkts(),
            LinkDir::Bundle(b) => b.queue_len_pkts(),
            LinkDir::Rlp(r) => r.queue_len_pkts(),
        }
    }

    pub fn queue_len_bytes(&self) -> u64 {
        match self {
            LinkDir::Link(l) => l.queue_len_bytes(),
            LinkDir::Bundle(b) => b.queue_len_bytes(),
            LinkDir::Rlp(r) => r.queue_len_bytes(),
        }
    }

    /// Packets taken and neither delivered nor dropped yet.
    pub fn in_flight_pkts(&self) -> u64 {
        match self {
            LinkDir::Link(l) => l.in_flight_pkts(),
            LinkDir::Bundle(b) => b.in_flight_pkts(),
            LinkDir::Rlp(r) => r.in_flight_pkts(),
        }
    }

    /// Offered packets equal delivered + dropped + inside.
    pub fn conservation_holds(&self) -> bool {
        match self {
            LinkDir::Link(l) => l.conservation_holds(),
            LinkDir::Bundle(b) => b.conservation_holds(),
            LinkDir::Rlp(r) => r.conservation_holds(),
        }
    }

    pub fn stats(&self) -> &LinkStats {
        match self {
            LinkDir::Link(l) => l.stats(),
            LinkDir::Bundle(b) => b.stats(),
            LinkDir::Rlp(r) => r.link_stats(),
        }
    }

    /// Packets the queue marked CE.
    pub fn ce_marked_pkts(&self) -> u64 {
        self.stats().ce_marked_pkts
    }

    /// Packets dropped, by drop-cause code ([`crate::links::link::drop_cause_code`]).
    pub fn drops_by_cause(&self) -> [u64; N_DROP_CAUSES] {
        match self {
            LinkDir::Link(l) => {
                let mut d = [0; N_DROP_CAUSES];
                for cause in DropCause::ALL {
                    d[usize::from(drop_cause_code(cause))] = l.stats().dropped_pkts(cause);
                }
                d
            }
            LinkDir::Bundle(b) => b.drops_by_cause(),
            LinkDir::Rlp(r) => {
                let mut d = [0; N_DROP_CAUSES];
                for cause in DropCause::ALL {
                    d[usize::from(drop_cause_code(cause))] = r.dropped_pkts(cause);
                }
                d
            }
        }
    }

    /// Whether packets leaving the queue are logged for [`pop_departure`](Self::pop_departure).
    pub fn set_departure_log(&mut self, on: bool) {
        match self {
            LinkDir::Link(l) => l.set_departure_log(on),
            LinkDir::Bundle(b) => b.set_departure_log(on),
            LinkDir::Rlp(r) => r.set_departure_log(on),
        }
    }

    pub fn pop_departure(&mut self) -> Option<Departure> {
        match self {
            LinkDir::Link(l) => l.pop_departure(),
            LinkDir::Bundle(b) => b.pop_departure(),
            LinkDir::Rlp(r) => r.pop_departure(),
        }
    }

    pub fn bundle(&self) -> Option<&BundleDir<AnyLoss>> {
        match self {
            LinkDir::Bundle(b) => Some(b),
            _ => None,
        }
    }

    pub fn bundle_mut(&mut self) -> Option<&mut BundleDir<AnyLoss>> {
        match self {
            LinkDir::Bundle(b) => Some(b),
            _ => None,
        }
    }

    pub fn rlp(&self) -> Option<&RadioDir> {
        match self {
            LinkDir::Rlp(r) => Some(r),
            _ => None,
        }
    }
}
