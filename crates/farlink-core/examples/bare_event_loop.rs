//! The engine's ceiling on this machine: the event queue alone, with no component behind it.
//!
//! Keeps `pending` events in [`farlink_core::sched::EventQueue`] and, for each one popped,
//! pushes one new event a pseudo-random 1–1024 ns later (xorshift64, fixed seed), so the heap
//! has the same push/pop work per event as a simulation with that many timers and packets in
//! flight and nothing else. `make bench` prints its events per second beside the TCP scenario's.
//!
//! ```text
//! cargo run --release -p farlink-core --example bare_event_loop -- [events] [pending] [repeats]
//! ```

use std::time::Instant;

use farlink_core::sched::EventQueue;
use farlink_core::time::{SimDuration, SimTime};

fn run(events: u64, pending: u64) -> (u64, f64) {
    let mut queue: EventQueue<u64> = EventQueue::with_capacity(pending as usize + 1);
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let mut next_delay = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        SimDuration::from_nanos(1 + (state & 1023))
    };
    for i in 0..pending {
        queue.push(SimTime::ZERO + next_delay(), i);
    }
    let started = Instant::now();
    let mut checksum = 0u64;
    for _ in 0..events {
        let Some((at, payload)) = queue.pop() else {
            break;
        };
        checksum = checksum.wrapping_add(payload ^ at.as_nanos());
        queue.push(at + next_delay(), payload);
    }
    (checksum, started.elapsed().as_secs_f64())
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let events = args.first().copied().unwrap_or(50_000_000);
    let pending = args.get(1).copied().unwrap_or(64);
    let repeats = args.get(2).copied().unwrap_or(3).max(1);
    let mut best = f64::INFINITY;
    let mut checksum = 0;
    for _ in 0..repeats {
        let (sum, seconds) = run(events, pending);
        checksum = sum;
        best = best.min(seconds);
    }
    println!(
        "{{\"events\": {events}, \"pending\": {pending}, \"best_wall_s\": {best:.6}, \
         \"events_per_wall_s\": {:.0}, \"checksum\": {checksum}}}",
        events as f64 / best
    );
}
