//! Reinjection (RFC 8684 section 3.3.6): when a subflow fails, the data mapped onto it and
//! not yet acknowledged at the connection level (DATA_ACK) is sent again on the others.
//!
//! The queue holds data-sequence ranges, disjoint and merged, in order; the sender takes from
//! it before new data, and skips what a later DATA_ACK covers.

use std::collections::BTreeMap;
use std::ops::Range;

/// Data-sequence ranges waiting to be sent again, disjoint, by start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReinjectQueue {
    ranges: BTreeMap<u64, u64>,
    /// Bytes ever queued (after merging with what was already queued).
    queued_bytes: u64,
}

impl ReinjectQueue {
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues `r` (merged with any range it touches).
    pub fn push(&mut self, r: Range<u64>) {
        if r.is_empty() {
            return;
        }
        let (mut start, mut end) = (r.start, r.end);
        // Ranges that overlap or touch [start, end): merge them in.
        let touching: Vec<(u64, u64)> = self
            .ranges
            .range(..=end)
            .rev()
            .take_while(|(_, &e)| e >= start)
            .map(|(&s, &e)| (s, e))
            .collect();
        let mut already = 0;
        for (s, e) in touching {
            already += e.min(end).saturating_sub(s.max(start));
            self.ranges.remove(&s);
            start = start.min(s);
            end = end.max(e);
        }
        self.queued_bytes += (r.end - r.start) - already;
        self.ranges.insert(start, end);
    }

    /// Takes at most `max_len` bytes from the front, skipping what lies below `data_ack`
    /// (acknowledged meanwhile).
    pub fn pop(&mut self, max_len: u64, data_ack: u64) -> Option<Range<u64>> {
        self.discard_below(data_ack);
        let (&s, &e) = self.ranges.iter().next()?;
        let take_end = e.min(s.saturating_add(max_len.max(1)));
        self.ranges.remove(&s);
        if take_end < e {
            self.ranges.insert(take_end, e);
        }
        Some(s..take_end)
    }

    /// Forgets everything below `data_ack`.
    pub fn discard_below(&mut self, data_ack: u64) {
        while let Some((&s, &e)) = self.ranges.iter().next() {
            if s >= data_ack {
                break;
            }
            self.ranges.remove(&s);
            if e > data_ack {
                self.ranges.insert(data_ack, e);
                break;
            }
        }
    }

    /// Where the next [`pop`](Self::pop) with `data_ack` would start, if anything waits.
    pub fn front_start(&self, data_ack: u64) -> Option<u64> {
        self.ranges
            .iter()
            .find(|(_, &e)| e > data_ack)
            .map(|(&s, _)| s.max(data_ack))
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Bytes waiting.
    pub fn len_bytes(&self) -> u64 {
        self.ranges.iter().map(|(s, e)| e - s).sum()
    }

    /// Bytes ever queued.
    pub fn queued_bytes(&self) -> u64 {
        self.queued_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_ranges_merge_and_pop_in_order() {
        let mut q = ReinjectQueue::new();
        q.push(100..200);
        q.push(150..300);
        q.push(0..50);
        q.push(50..60);
        assert_eq!(q.len_bytes(), 60 + 200);
        assert_eq!(q.queued_bytes(), 260);
        assert_eq!(q.pop(30, 0), Some(0..30));
        assert_eq!(q.pop(100, 0), Some(30..60));
        assert_eq!(q.pop(1000, 0), Some(100..300));
        assert_eq!(q.pop(1000, 0), None);
    }

    #[test]
    fn what_a_data_ack_covers_is_not_sent_again() {
        let mut q = ReinjectQueue::new();
        q.push(0..100);
        q.push(200..300);
        assert_eq!(q.pop(1000, 250), Some(250..300));
        assert!(q.is_empty());
    }
}
