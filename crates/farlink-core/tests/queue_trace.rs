//! The queue log behind the `queue_delay` and `aqm` traces, on links built by hand: each
//! packet's logged wait is the time between its offer and the start of its serialization, for
//! every discipline; CoDel logs its dropping state entered and left; the logs stay off (empty)
//! unless switched on.

use farlink_core::link::{Link, LinkConfig, Packet, QueueLimit};
use farlink_core::links::queue::{
    AqmEvent, CoDelParams, Discipline, FqCoDelParams, PieParams, Queue, RedParams,
};
use farlink_core::rng::StreamRng;
use farlink_core::time::{BitRate, SimDuration, SimTime};

const RATE: BitRate = BitRate::from_bps(1_000_000);
const PKT_BYTES: u32 = 1000;
/// 1000 bytes at 1 Mbit/s.
const TX_NS: u64 = 8_000_000;

fn link(discipline: Discipline) -> Link {
    let cfg = LinkConfig {
        rate: RATE,
        delay: SimDuration::from_millis(10),
        queue_limit: QueueLimit::Packets(100),
        bucket: None,
    };
    let queue = Queue::new(
        discipline,
        cfg.queue_limit,
        RATE,
        StreamRng::derive(1, "queue_trace"),
    );
    Link::with_queue(cfg, farlink_core::loss::NoLoss, queue).unwrap()
}

fn pkt(id: u64) -> Packet {
    Packet {
        id,
        size_bytes: PKT_BYTES,
        flow: (id % 2) as u16,
        ..Packet::default()
    }
}

fn t(ns: u64) -> SimTime {
    SimTime::from_nanos(ns)
}

/// Offers packet i at `offers[i]` and runs the link dry; the logged waits in order.
fn waits(l: &mut Link, offers: &[u64]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for (i, &at) in offers.iter().enumerate() {
        while l.next_wakeup().is_some_and(|w| w <= t(at)) {
            let w = l.next_wakeup().unwrap();
            while l.poll(w).is_some() {}
        }
        l.offer(t(at), pkt(i as u64)).unwrap();
        while let Some(s) = l.pop_sojourn() {
            out.push((s.at.as_nanos(), s.sojourn.as_nanos()));
        }
    }
    while let Some(w) = l.next_wakeup() {
        while l.poll(w).is_some() {}
        while let Some(s) = l.pop_sojourn() {
            out.push((s.at.as_nanos(), s.sojourn.as_nanos()));
        }
    }
    out
}

#[test]
fn each_wait_is_dequeue_less_enqueue_for_every_discipline() {
    // Three packets at 0, 1 ms and 2 ms: the first finds the serializer idle (no wait), the
    // second starts when the first ends (8 ms; waited 7 ms), the third at 16 ms (waited 14 ms);
    // a fourth at 30 ms finds the serializer idle again (the third ended at 24 ms).
    let offers = [0, 1_000_000, 2_000_000, 30_000_000];
    let expected = vec![
        (0, 0),
        (TX_NS, TX_NS - 1_000_000),
        (2 * TX_NS, 2 * TX_NS - 2_000_000),
        (30_000_000, 0),
    ];
    for discipline in [
        Discipline::DropTail,
        Discipline::CoDel(CoDelParams::default()),
        Discipline::FqCoDel(FqCoDelParams::default()),
        Discipline::Pie(PieParams::default()),
        Discipline::Red(RedParams::default()),
    ] {
        let mut l = link(discipline);
        assert_eq!(
            waits(&mut l, &offers),
            vec![],
            "{discipline:?}: off by default"
        );
        let mut l = link(discipline);
        l.set_queue_log(true, false);
        let got = waits(&mut l, &offers);
        // FQ-CoDel serves the two flows (ids 1 and 2 are flows 1 and 0) round robin, still one
        // after the other here; the waits are the same.
        assert_eq!(got, expected, "{}", discipline.name());
    }
}

#[test]
fn drop_tail_waits_follow_the_fifo_formula_under_a_burst() {
    // 50 packets at once: packet k starts at k transmission times, having waited that long.
    let mut l = link(Discipline::DropTail);
    l.set_queue_log(true, true);
    let got = waits(&mut l, &[0; 50]);
    let expected: Vec<(u64, u64)> = (0..50).map(|k| (k * TX_NS, k * TX_NS)).collect();
    assert_eq!(got, expected);
    assert_eq!(l.pop_aqm_change(), None, "drop-tail has no control state");
}

#[test]
fn codel_logs_its_dropping_state_entered_and_left() {
    // A standing queue: 30 packets at once, then one every 8 ms (the link's rate) for 2 s
    // keeps 29 waiting (232 ms, above the 5 ms target for more than the 100 ms interval);
    // then nothing, and the queue drains below target.
    let mut l = link(Discipline::CoDel(CoDelParams::default()));
    l.set_queue_log(false, true);
    let mut offers = vec![0; 30];
    offers.extend((1..=250).map(|k| k * TX_NS));
    waits(&mut l, &offers);
    let changes: Vec<_> = std::iter::from_fn(|| l.pop_aqm_change()).collect();
    assert!(changes.len() >= 2, "{changes:?}");
    assert_eq!(changes[0].event, AqmEvent::DroppingEntered);
    assert_eq!(changes[0].value, 1.0, "the first entry starts at count 1");
    // At least 100 ms (the interval) after the standing queue formed.
    assert!(changes[0].at >= t(100_000_000), "{:?}", changes[0]);
    assert!(changes.iter().any(|c| c.event == AqmEvent::DroppingLeft));
    // Entered and left alternate, in time order.
    for pair in changes.windows(2) {
        assert!(pair[0].at <= pair[1].at);
        assert_ne!(pair[0].event, pair[1].event);
    }
    assert_eq!(l.pop_sojourn(), None, "the wait log was left off");
}
