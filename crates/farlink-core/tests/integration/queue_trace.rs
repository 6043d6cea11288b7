//! The queue log behind the `queue_delay` and `aqm` traces, on links built by hand: each
//! packet's logged wait is the time between its offer and the start of its serialization, for
//! every discipline; CoDel logs its dropping state entered and left; the logs stay off (empty)
//! unless switched on.

use farlink_core::link::{Link, LinkConfig, Packet, QueueLimit, QueueLogs};
use farlink_core::links::queue::{
    AqmEvent, CoDelParams, Discipline, DualPi2Params, FqCoDelParams, PieParams, Queue, RedParams,
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

/// Offers packet i at `offers[i]` (an AQM may drop it at once) and runs the link dry; the
/// logged waits in order.
fn waits(l: &mut Link, offers: &[u64]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for (i, &at) in offers.iter().enumerate() {
        while l.next_wakeup().is_some_and(|w| w <= t(at)) {
            let w = l.next_wakeup().unwrap();
            while l.poll(w).is_some() {}
        }
        let _ = l.offer(t(at), pkt(i as u64));
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
        Discipline::DualPi2(DualPi2Params::default()),
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

#[test]
fn fq_codel_logs_each_flow_queues_dropping_state_apart() {
    // The standing queue of the CoDel test, its packets alternating between flows 0 and 1:
    // each flow queue's CoDel enters (and leaves) its own dropping state, the row naming it.
    let mut l = link(Discipline::FqCoDel(FqCoDelParams::default()));
    l.set_queue_log(false, true);
    let mut offers = vec![0; 30];
    offers.extend((1..=250).map(|k| k * TX_NS));
    waits(&mut l, &offers);
    let changes: Vec<_> = std::iter::from_fn(|| l.pop_aqm_change()).collect();
    for queue in [0, 1] {
        let mine: Vec<_> = changes.iter().filter(|c| c.queue == queue).collect();
        assert_eq!(
            mine.first().map(|c| c.event),
            Some(AqmEvent::DroppingEntered),
            "flow queue {queue}: {changes:?}"
        );
        assert!(mine.windows(2).all(|w| w[0].event != w[1].event));
    }
    assert!(changes.iter().all(|c| c.queue < 2));
}

#[test]
fn pie_and_red_log_their_probability_and_average() {
    let offers: Vec<u64> = (0..200).map(|k| k * TX_NS / 2).collect(); // twice the rate
    let mut pie = link(Discipline::Pie(PieParams::default()));
    pie.set_queue_log(false, true);
    waits(&mut pie, &offers);
    let p: Vec<_> = std::iter::from_fn(|| pie.pop_aqm_change()).collect();
    assert!(!p.is_empty());
    assert!(p.iter().all(|c| c.event == AqmEvent::DropProbability));
    // Updates every 15 ms, on its grid, each a change, the probability in [0, 1].
    assert!(p.iter().all(|c| c.at.as_nanos() % 15_000_000 == 0));
    assert!(p.iter().all(|c| (0.0..=1.0).contains(&c.value)));
    assert!(p
        .windows(2)
        .all(|w| w[0].value != w[1].value && w[0].at < w[1].at));
    let mut red = link(Discipline::Red(RedParams::default()));
    red.set_queue_log(false, true);
    waits(&mut red, &offers);
    let r: Vec<_> = std::iter::from_fn(|| red.pop_aqm_change()).collect();
    assert!(r.iter().all(|c| c.event == AqmEvent::AverageQueue));
    // The average rises while the queue grows (one arrival in two finds it longer).
    assert!(r.last().unwrap().value > r[0].value);
    let mut dualpi2 = link(Discipline::DualPi2(DualPi2Params::default()));
    dualpi2.set_queue_log(false, true);
    waits(&mut dualpi2, &offers);
    let d: Vec<_> = std::iter::from_fn(|| dualpi2.pop_aqm_change()).collect();
    assert!(!d.is_empty());
    assert!(d.iter().all(|c| c.event == AqmEvent::BaseProbability));
    // p' on its 16 ms grid, each a change, rising while the Classic queue grows past 15 ms.
    assert!(d.iter().all(|c| c.at.as_nanos() % 16_000_000 == 0));
    assert!(d.iter().all(|c| (0.0..=1.0).contains(&c.value)));
    assert!(d.last().unwrap().value > d[0].value);
}
