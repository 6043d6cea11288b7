//! The event queue of the discrete-event engine.
//!
//! This module owns the order in which events happen: a min-heap keyed on `(SimTime, seq)`,
//! where `seq` counts insertions, so events scheduled for the same instant pop in the order they
//! were scheduled (first in, first out), as in SimPy's `(time, priority, eid)` key with a single
//! priority. It knows nothing of what an event means: the payload `E` is the engine's enum
//! (never a boxed trait object), and the queue neither reads a clock nor advances one of its own
//! beyond remembering the time of the last event popped.
//!
//! Memory: the heap stores each event inline beside its 16-byte key (time, sequence number); pushing allocates only when the heap's
//! capacity is exhausted (amortised doubling), so a queue built with [`EventQueue::with_capacity`]
//! at its steady-state size never allocates again.

use crate::time::SimTime;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// One scheduled event. Ordered so that `BinaryHeap` (a max-heap) pops the *earliest* time,
/// and among equal times the *lowest* sequence number.
///
/// The pair `(time, seq)` is kept as one `u128`, the time in the high half: comparing two
/// keys is then one wide comparison without a branch, where the tuple compared the times and
/// branched to the sequence numbers. Every `pop` compares on each level of the heap, so on
/// `examples/stpd_wireless.rs` this is a few instructions off every event (cachegrind). The
/// order is the tuple's exactly: the sequence number is below 2^64.
#[derive(Debug)]
struct Entry<E> {
    key: u128,
    ev: E,
}

impl<E> Entry<E> {
    fn new(at: SimTime, seq: u64, ev: E) -> Self {
        Entry {
            key: (u128::from(at.as_nanos()) << 64) | u128::from(seq),
            ev,
        }
    }

    fn at(&self) -> SimTime {
        SimTime::from_nanos((self.key >> 64) as u64)
    }
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl<E> Eq for Entry<E> {}

impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: the smaller key is the "greater" entry for the max-heap.
        other.key.cmp(&self.key)
    }
}

/// A min-heap of events keyed on `(time, insertion order)`.
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
    events_popped: u64,
    last_popped: SimTime,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue with no capacity reserved.
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty queue with room for `capacity` events before it first allocates.
    pub fn with_capacity(capacity: usize) -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(capacity),
            next_seq: 0,
            events_popped: 0,
            last_popped: SimTime::ZERO,
        }
    }

    /// Reserves room for at least `additional` more events.
    pub fn reserve(&mut self, additional: usize) {
        self.heap.reserve(additional);
    }

    /// Schedules `ev` at `at` and returns its sequence number (unique, increasing).
    ///
    /// Events at the same `at` pop in the order of their `push`.
    ///
    /// # Panics
    /// If `at` is earlier than the last event popped: scheduling into the past would break
    /// causality (and the non-decreasing order of `pop`), so it is always a caller bug.
    // Inlined on purpose: left to itself the compiler keeps `push` out of line in the world's
    // hot path, 2.6 % more instructions per run of `examples/stpd_wireless.rs` (cachegrind).
    #[inline]
    pub fn push(&mut self, at: SimTime, ev: E) -> u64 {
        assert!(
            at >= self.last_popped,
            "event scheduled at {at}, before the current time {}",
            self.last_popped
        );
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry::new(at, seq, ev));
        seq
    }

    /// Removes and returns the earliest event (FIFO among equal times), or `None` when empty.
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let entry = self.heap.pop()?;
        let (at, ev) = (entry.at(), entry.ev);
        self.events_popped += 1;
        self.last_popped = at;
        Some((at, ev))
    }

    /// The time of the earliest event, or `None` when empty.
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(Entry::at)
    }

    /// The number of events waiting.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no event is waiting.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// How many events have been popped since the queue was made.
    pub fn events_popped(&self) -> u64 {
        self.events_popped
    }

    /// How many events have been pushed since the queue was made.
    pub fn events_pushed(&self) -> u64 {
        self.next_seq
    }

    /// The time of the last event popped (`SimTime::ZERO` before the first): the engine's
    /// current time.
    pub fn now(&self) -> SimTime {
        self.last_popped
    }

    /// The number of events the queue can hold without allocating.
    pub fn capacity(&self) -> usize {
        self.heap.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SimDuration;
    use proptest::prelude::*;

    fn t(ns: u64) -> SimTime {
        SimTime::from_nanos(ns)
    }

    #[test]
    fn pops_in_time_order() {
        let mut q = EventQueue::new();
        q.push(t(30), 'c');
        q.push(t(10), 'a');
        q.push(t(20), 'b');
        assert_eq!(q.peek_time(), Some(t(10)));
        assert_eq!(q.len(), 3);
        let log: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(log, vec![(t(10), 'a'), (t(20), 'b'), (t(30), 'c')]);
        assert!(q.is_empty());
        assert_eq!(q.pop(), None);
        assert_eq!(q.peek_time(), None);
        assert_eq!(q.events_popped(), 3);
        assert_eq!(q.events_pushed(), 3);
        assert_eq!(q.now(), t(30));
    }

    #[test]
    fn equal_times_pop_in_scheduling_order() {
        let mut q = EventQueue::new();
        for i in 0..100u32 {
            // Two interleaved instants, each with its own FIFO.
            q.push(t(u64::from(i % 2)), i);
        }
        let log: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        let evens: Vec<u32> = (0..100).step_by(2).collect();
        let odds: Vec<u32> = (1..100).step_by(2).collect();
        assert_eq!(
            log.iter().map(|&(_, e)| e).collect::<Vec<_>>(),
            [evens, odds].concat()
        );
    }

    #[test]
    fn events_scheduled_while_running_keep_fifo_at_the_current_instant() {
        // A timeline in the style of SimPy's tests: an event at t=5 schedules another at t=5;
        // it runs after everything already queued for t=5.
        let mut q = EventQueue::new();
        q.push(t(5), "first");
        q.push(t(5), "second");
        let mut log = Vec::new();
        while let Some((at, ev)) = q.pop() {
            log.push((at.as_nanos(), ev));
            if ev == "first" {
                q.push(at, "spawned");
                q.push(at + SimDuration::from_nanos(1), "later");
            }
        }
        assert_eq!(
            log,
            vec![(5, "first"), (5, "second"), (5, "spawned"), (6, "later")]
        );
    }

    #[test]
    #[should_panic(expected = "before the current time")]
    fn scheduling_into_the_past_panics() {
        let mut q = EventQueue::new();
        q.push(t(10), ());
        q.pop();
        q.push(t(9), ());
    }

    #[test]
    fn reserved_capacity_is_not_exceeded_at_steady_state() {
        let mut q = EventQueue::with_capacity(64);
        let cap = q.capacity();
        assert!(cap >= 64);
        for i in 0..64 {
            q.push(t(i), i);
        }
        for i in 0..10_000u64 {
            let (at, _) = q.pop().unwrap();
            q.push(at + SimDuration::from_nanos(1 + i % 7), i);
        }
        assert_eq!(q.capacity(), cap);
    }

    proptest! {
        #[test]
        fn pops_are_non_decreasing_and_fifo_among_equals(
            times in proptest::collection::vec(0u64..20, 0..300),
        ) {
            let mut q = EventQueue::new();
            for (i, &at) in times.iter().enumerate() {
                q.push(t(at), i);
            }
            let mut prev: Option<(SimTime, usize)> = None;
            let mut n = 0;
            while let Some((at, i)) = q.pop() {
                prop_assert_eq!(at, t(times[i]));
                if let Some((pt, pi)) = prev {
                    prop_assert!(at >= pt);
                    if at == pt {
                        prop_assert!(i > pi, "FIFO broken among equal times");
                    }
                }
                prev = Some((at, i));
                n += 1;
            }
            prop_assert_eq!(n, times.len());
        }

        #[test]
        fn interleaved_push_pop_matches_a_sorted_model(
            ops in proptest::collection::vec((any::<bool>(), 0u64..50), 0..300),
        ) {
            // Model: a Vec kept sorted by (time, seq). Pushes are relative to the current time
            // so that nothing is scheduled in the past.
            let mut q = EventQueue::new();
            let mut model: Vec<(u64, u64)> = Vec::new();
            let mut now = 0u64;
            let mut seq = 0u64;
            for (is_push, dt) in ops {
                if is_push {
                    q.push(t(now + dt), seq);
                    model.push((now + dt, seq));
                    model.sort_unstable();
                    seq += 1;
                } else {
                    let expected = if model.is_empty() { None } else { Some(model.remove(0)) };
                    let got = q.pop().map(|(at, s)| (at.as_nanos(), s));
                    prop_assert_eq!(got, expected);
                    if let Some((at, _)) = got {
                        now = at;
                    }
                }
                prop_assert_eq!(q.len(), model.len());
                prop_assert_eq!(q.peek_time().map(|x| x.as_nanos()), model.first().map(|m| m.0));
            }
        }
    }
}
