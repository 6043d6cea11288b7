//! Drop-tail: first in, first out, and an arrival that does not fit the limit is dropped
//! (ns-2's DropTail, Linux's `pfifo`/`bfifo`, ns-3's default `FifoQueueDisc`). Every link's
//! default. The line is a `VecDeque` of `Copy` handles with capacity reserved for the limit
//! (in packets, or the byte limit over 40-byte packets; capped at 65,536), so the steady state
//! allocates nothing.

use super::{fits, Verdict};
use crate::links::link::{
    DropCause, Packet, QueueLimit, MAX_RESERVED_PKTS, MIN_PACKET_BYTES_FOR_RESERVE,
};
use std::collections::VecDeque;

#[derive(Debug)]
pub struct DropTail {
    limit: QueueLimit,
    pkts: VecDeque<Packet>,
    bytes: u64,
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
        }
    }

    #[inline]
    pub fn enqueue(&mut self, pkt: Packet) -> Verdict {
        if !fits(self.limit, self.pkts.len(), self.bytes, pkt.size_bytes) {
            return Verdict::Dropped(DropCause::QueueOverflow);
        }
        self.pkts.push_back(pkt);
        self.bytes += u64::from(pkt.size_bytes);
        Verdict::Queued
    }

    #[inline]
    pub fn dequeue(&mut self) -> Option<Packet> {
        let pkt = self.pkts.pop_front()?;
        self.bytes -= u64::from(pkt.size_bytes);
        Some(pkt)
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
