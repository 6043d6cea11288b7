//! Drop-tail: first in, first out, and an arrival that does not fit the limit is dropped
//! (ns-2's DropTail, Linux's `pfifo`/`bfifo`, ns-3's default `FifoQueueDisc`). Every link's
//! default. The line is a `VecDeque` of `Copy` handles with capacity reserved for the limit
//! (in packets, or the byte limit over 40-byte packets; capped at 65,536), so the steady state
//! allocates nothing. While its log is on ([`super::Queue::set_log`]), a second line holds each
//! packet's arrival instant (drop-tail drops only arrivals, so the two lines stay in step).

use super::{fits, Verdict};
use crate::links::link::{
    DropCause, Packet, QueueLimit, MAX_RESERVED_PKTS, MIN_PACKET_BYTES_FOR_RESERVE,
};
use crate::time::SimTime;
use std::collections::VecDeque;

#[derive(Debug)]
pub struct DropTail {
    limit: QueueLimit,
    pkts: VecDeque<Packet>,
    bytes: u64,
    /// Each waiting packet's arrival, in the same order, while the log is on.
    times: Option<VecDeque<SimTime>>,
}

impl DropTail {
    pub fn new(limit: QueueLimit) -> Self {
        let cap = match limit {
            QueueLimit::Packets(n) => u64::from(n),
            QueueLimit::Bytes(b) => b / MIN_PACKET_BYTES_FOR_RESERVE + 1,
        }
        .min(MAX_RESERVED_PKTS);
        DropTail {
            limit,
            pkts: VecDeque::with_capacity(cap as usize),
            bytes: 0,
            times: None,
        }
    }

    /// Keeps each packet's arrival (or not); set before the first packet, so that the two
    /// lines hold the same packets.
    pub(crate) fn set_times(&mut self, on: bool) {
        debug_assert!(
            self.pkts.is_empty(),
            "the arrival log is set before any packet"
        );
        self.times = on.then(|| VecDeque::with_capacity(self.pkts.capacity()));
    }

    #[inline]
    pub fn enqueue(&mut self, now: SimTime, pkt: Packet) -> Verdict {
        if !fits(self.limit, self.pkts.len(), self.bytes, pkt.size_bytes) {
            return Verdict::Dropped(DropCause::QueueOverflow);
        }
        self.pkts.push_back(pkt);
        self.bytes += u64::from(pkt.size_bytes);
        if let Some(times) = &mut self.times {
            times.push_back(now);
        }
        Verdict::Queued
    }

    /// The head, and its arrival while the log is on.
    #[inline]
    pub fn dequeue(&mut self) -> Option<(Packet, Option<SimTime>)> {
        let pkt = self.pkts.pop_front()?;
        self.bytes -= u64::from(pkt.size_bytes);
        let since = self.times.as_mut().and_then(VecDeque::pop_front);
        Some((pkt, since))
    }

    #[inline]
    pub fn len_pkts(&self) -> usize {
        self.pkts.len()
    }

    #[inline]
    pub fn len_bytes(&self) -> u64 {
        self.bytes
    }

    pub(crate) fn capacity(&self) -> usize {
        self.pkts.capacity()
    }
}
