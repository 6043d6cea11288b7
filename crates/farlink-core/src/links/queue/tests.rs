//! The disciplines' rules against figures worked by hand from their RFCs, and the properties
//! every discipline keeps: no packet lost without a verdict, no reordering within a flow.

use super::codel::control_law;
use super::pie::pie_step;
use super::red::{red_average, red_pb};
use super::*;
use crate::links::link::{Ecn, Link, LinkConfig};
use crate::loss::NoLoss;
use crate::time::SimDuration;
use proptest::prelude::*;

fn ms(x: u64) -> SimTime {
    SimTime::from_nanos(x * 1_000_000)
}

fn pkt(id: u64, flow: u16, size_bytes: u32, ecn: Ecn) -> Packet {
    Packet {
        id,
        size_bytes,
        flow,
        ecn,
    }
}

fn rng() -> StreamRng {
    StreamRng::derive(7, "queue:test")
}

fn queue(d: Discipline, limit_pkts: u32) -> Queue {
    Queue::new(
        d,
        QueueLimit::Packets(limit_pkts),
        BitRate::from_bps(10_000_000),
        rng(),
    )
}

#[test]
fn codel_control_law_is_interval_over_sqrt_count() {
    // RFC 8289 section 5.7: t + interval / sqrt(count).
    let i = SimDuration::from_millis(100);
    assert_eq!(control_law(ms(0), i, 1), ms(100));
    assert_eq!(control_law(ms(0), i, 4), ms(50));
    assert_eq!(
        control_law(ms(10), i, 2).as_nanos(),
        10_000_000 + 70_710_678
    );
    assert_eq!(control_law(ms(0), i, 100), ms(10));
}

/// Fills a queue with `n` packets of 1000 bytes at time 0, then takes one every 10 ms (a
/// 0.8 Mbit/s serializer) until it is empty: the instants of the drops (ms) and of the marks.
fn codel_drain(d: Discipline, n: u64, ecn: Ecn) -> (Vec<u64>, Vec<u64>) {
    let mut q = queue(d, 10_000);
    let mut ev = VecDeque::new();
    for i in 0..n {
        assert_eq!(
            q.enqueue(ms(0), pkt(i, 0, 1000, ecn), &mut ev),
            Verdict::Queued
        );
    }
    let (mut drops, mut marks) = (Vec::new(), Vec::new());
    let mut t = 10;
    while q.len_pkts() > 0 {
        let out = q.dequeue(ms(t), &mut ev);
        drops.extend(ev.drain(..).map(|e| e.at().as_nanos() / 1_000_000));
        if out.is_some_and(|d| d.marked) {
            marks.push(t);
        }
        t += 10;
    }
    (drops, marks)
}

#[test]
fn codel_drops_after_an_interval_above_target_then_faster_as_sqrt_count() {
    // Sojourn at the dequeue at t ms is t ms, above the 5 ms target from the first dequeue
    // (10 ms): first_above_time = 10 + 100 = 110 ms. At 110 ms the packet is dropped and the
    // dropping state entered, count 1, drop_next = 110 + 100 = 210. At 210: count 2,
    // drop_next = 210 + 100/sqrt 2 = 280.7, so the next at 290; count 3, drop_next = 280.7 +
    // 57.7 = 338.4: at 340; count 4, 338.4 + 50 = 388.4: at 390; count 5, 388.4 + 44.7 = 433.1:
    // at 440.
    let (drops, marks) = codel_drain(Discipline::CoDel(CoDelParams::default()), 60, Ecn::NotEct);
    assert_eq!(&drops[..5], &[110, 210, 290, 340, 390]);
    assert_eq!(drops[5], 440);
    assert!(marks.is_empty());
}

#[test]
fn codel_marks_ect_packets_at_the_same_instants_instead_of_dropping() {
    let (drops, marks) = codel_drain(Discipline::CoDel(CoDelParams::default()), 60, Ecn::Ect0);
    assert!(drops.is_empty());
    assert_eq!(&marks[..5], &[110, 210, 290, 340, 390]);
    // With marking off, ECT packets are dropped like any other.
    let p = CoDelParams {
        ecn: false,
        ..CoDelParams::default()
    };
    let (drops, marks) = codel_drain(Discipline::CoDel(p), 60, Ecn::Ect0);
    assert_eq!(&drops[..3], &[110, 210, 290]);
    assert!(marks.is_empty());
}

#[test]
fn codel_leaves_a_queue_below_target_or_of_one_packet_alone() {
    // Four packets taken 1 ms apart: sojourns of at most 4 ms, below 5 ms.
    let mut q = queue(Discipline::CoDel(CoDelParams::default()), 100);
    let mut ev = VecDeque::new();
    for round in 0..100u64 {
        for i in 0..4 {
            q.enqueue(
                ms(round * 10),
                pkt(round * 4 + i, 0, 1000, Ecn::NotEct),
                &mut ev,
            );
        }
        for i in 1..=4 {
            assert!(q.dequeue(ms(round * 10 + i), &mut ev).is_some());
        }
    }
    assert!(ev.is_empty());
    // One packet at a time, however long it waited: never dropped (bytes <= maxpacket).
    for i in 0..50 {
        q.enqueue(
            ms(2_000 + i * 200),
            pkt(1_000 + i, 0, 1000, Ecn::NotEct),
            &mut ev,
        );
        assert!(q.dequeue(ms(2_000 + i * 200 + 150), &mut ev).is_some());
    }
    assert!(ev.is_empty());
}

#[test]
fn fq_codel_serves_flows_by_bytes_not_packets() {
    // Flow 1 sends 1500-byte packets, flow 2 500-byte ones, both backlogged: deficit round
    // robin with a 1514-byte quantum gives each about the same bytes (RFC 8290 section 4.2).
    let mut q = queue(Discipline::FqCoDel(FqCoDelParams::default()), 10_000);
    let mut ev = VecDeque::new();
    for i in 0..300 {
        q.enqueue(ms(0), pkt(i, 1, 1500, Ecn::NotEct), &mut ev);
        q.enqueue(ms(0), pkt(1_000 + i, 2, 500, Ecn::NotEct), &mut ev);
    }
    let mut bytes = [0u64; 3];
    // Taken at once, so CoDel sees no sojourn and only the scheduler decides.
    for _ in 0..200 {
        let d = q.dequeue(ms(0), &mut ev).unwrap();
        bytes[usize::from(d.pkt.flow)] += u64::from(d.pkt.size_bytes);
    }
    let ratio = bytes[1] as f64 / bytes[2] as f64;
    assert!((0.9..1.1).contains(&ratio), "{bytes:?}");
}

#[test]
fn fq_codel_serves_a_new_sparse_flow_before_the_backlog() {
    let mut q = queue(Discipline::FqCoDel(FqCoDelParams::default()), 10_000);
    let mut ev = VecDeque::new();
    for i in 0..50 {
        q.enqueue(ms(0), pkt(i, 1, 1500, Ecn::NotEct), &mut ev);
    }
    for _ in 0..5 {
        q.dequeue(ms(1), &mut ev).unwrap();
    }
    q.enqueue(ms(2), pkt(99, 7, 100, Ecn::NotEct), &mut ev);
    assert_eq!(q.dequeue(ms(2), &mut ev).unwrap().pkt.id, 99);
}

#[test]
fn fq_codel_overflow_drops_from_the_fattest_flow() {
    // Limit 10: flow 1 holds 8, flow 2 two; flow 2's next arrival is kept and flow 1's head
    // goes (RFC 8290 section 4.1).
    let mut q = queue(Discipline::FqCoDel(FqCoDelParams::default()), 10);
    let mut ev = VecDeque::new();
    for i in 0..8 {
        q.enqueue(ms(0), pkt(i, 1, 1000, Ecn::NotEct), &mut ev);
    }
    for i in 0..2 {
        q.enqueue(ms(0), pkt(100 + i, 2, 1000, Ecn::NotEct), &mut ev);
    }
    assert!(ev.is_empty());
    assert_eq!(
        q.enqueue(ms(1), pkt(102, 2, 1000, Ecn::NotEct), &mut ev),
        Verdict::Queued
    );
    let dropped: Vec<(u64, DropCause)> = ev
        .iter()
        .map(|e| match *e {
            LinkEvent::Dropped { pkt, cause, .. } => (pkt.id, cause),
            LinkEvent::Delivered { .. } => unreachable!(),
        })
        .collect();
    assert_eq!(dropped, vec![(0, DropCause::QueueOverflow)]);
    assert_eq!(q.len_pkts(), 10);
}

#[test]
fn pie_step_is_scaled_by_the_probability_it_adds_to() {
    // RFC 8033 section 4.2 with alpha 0.125, beta 1.25, target 15 ms: a delay of 30 ms that
    // was 15 ms at the last update gives 0.125 (0.015) + 1.25 (0.015) = 0.020625 ...
    let p = PieParams::default();
    let raw = 0.125 * 0.015 + 1.25 * 0.015;
    let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
    // ... divided by 2048 below a probability of 1e-6, by 2 below 10 %, and capped at 2 %
    // above 10 %.
    assert!(close(pie_step(&p, 0.0, 0.030, 0.015), raw / 2048.0));
    assert!(close(pie_step(&p, 0.000_005, 0.030, 0.015), raw / 512.0));
    assert!(close(pie_step(&p, 0.005, 0.030, 0.015), raw / 8.0));
    assert!(close(pie_step(&p, 0.05, 0.030, 0.015), raw / 2.0));
    assert!(close(pie_step(&p, 0.2, 0.030, 0.015), 0.02));
    // A delay below target and falling lowers the probability.
    assert!(pie_step(&p, 0.2, 0.010, 0.012) < 0.0);
}

#[test]
fn pie_raises_its_probability_under_a_standing_queue_and_decays_when_empty() {
    // 100 packets waiting, one taken every 2 ms: a standing delay near 200 ms, far above
    // 15 ms; after the 150 ms burst allowance the probability climbs, and an empty queue
    // decays it by 2 % an update.
    let mut pie = Pie::new(PieParams::default(), QueueLimit::Packets(1000), rng());
    for i in 0..100 {
        pie.enqueue(ms(0), pkt(i, 0, 1000, Ecn::NotEct));
    }
    let mut t = 0;
    let mut id = 100;
    while t < 2_000 {
        t += 2;
        pie.dequeue(ms(t));
        pie.enqueue(ms(t), pkt(id, 0, 1000, Ecn::NotEct));
        id += 1;
    }
    let high = pie.drop_prob();
    assert!(high > 0.05, "{high}");
    while pie.fifo.len_pkts() > 0 {
        pie.dequeue(ms(t));
    }
    pie.dequeue(ms(t + 15)); // the empty queue's delay is 0 at the next update ...
    pie.dequeue(ms(t + 30)); // ... and at the one after: decay from there
    let before = pie.drop_prob();
    pie.dequeue(ms(t + 45));
    let after = pie.drop_prob();
    assert!(after < before, "{before} -> {after}");
}

#[test]
fn red_average_and_its_gentle_region() {
    // FJ93 section 4: avg <- (1 - w) avg + w q.
    assert!((red_average(0.0, 0.002, 10.0) - 0.02).abs() < 1e-15);
    assert!((red_average(5.0, 0.5, 15.0) - 10.0).abs() < 1e-15);
    let p = RedParams::default(); // min 5, max 15, max_p 0.02, gentle
    let pb = |avg| red_pb(&p, p.max_p, avg);
    assert_eq!(pb(4.9), Some(0.0));
    assert!((pb(10.0).unwrap() - 0.01).abs() < 1e-15);
    // Gentle: from max_p at max_th to 1 at 2 max_th, 0.02 + 0.98 (7.5 / 15) at 22.5.
    assert!((pb(15.0).unwrap() - 0.02).abs() < 1e-15);
    assert!((pb(22.5).unwrap() - 0.51).abs() < 1e-12);
    assert_eq!(pb(30.0), None);
    let harsh = RedParams { gentle: false, ..p };
    assert_eq!(red_pb(&harsh, harsh.max_p, 15.0), None);
}

#[test]
fn red_drops_early_in_proportion_and_marks_ect() {
    // A queue held at 10 packets (avg -> 10 with w = 0.2): p_b = 0.01, and FJ93's count
    // (section 7) makes the gaps between drops uniform on 1..1/p_b = 100, 50.5 on average:
    // about 396 early drops in 20,000 arrivals, never a forced one.
    let params = RedParams {
        weight: 0.2,
        ..RedParams::default()
    };
    for (ecn, want_marks) in [(Ecn::NotEct, false), (Ecn::Ect0, true)] {
        let mut red = Red::new(
            params,
            QueueLimit::Packets(1000),
            BitRate::from_bps(10_000_000),
            rng(),
        );
        for i in 0..10 {
            red.enqueue(ms(0), pkt(i, 0, 1000, ecn));
        }
        let (mut drops, mut marks) = (0, 0);
        for i in 0..20_000u64 {
            let t = ms(1 + i);
            match red.enqueue(t, pkt(100 + i, 0, 1000, ecn)) {
                Verdict::Dropped(DropCause::Aqm) => drops += 1,
                Verdict::Dropped(c) => panic!("{c:?}"),
                Verdict::Marked => {
                    marks += 1;
                    red.dequeue(t);
                }
                Verdict::Queued => {
                    red.dequeue(t);
                }
            }
        }
        let early = drops + marks;
        assert!((330..460).contains(&early), "{early}");
        assert_eq!(marks > 0, want_marks);
        assert_eq!(drops > 0, !want_marks);
    }
}

/// Every discipline with its defaults, for the properties below.
fn every_discipline() -> Vec<Discipline> {
    vec![
        Discipline::DropTail,
        Discipline::CoDel(CoDelParams::default()),
        Discipline::FqCoDel(FqCoDelParams {
            flows: 4,
            ..FqCoDelParams::default()
        }),
        Discipline::Pie(PieParams {
            max_burst: SimDuration::ZERO,
            ..PieParams::default()
        }),
        Discipline::Red(RedParams {
            min_th_pkts: 2.0,
            max_th_pkts: 6.0,
            weight: 0.2,
            ..RedParams::default()
        }),
        Discipline::DualPi2(DualPi2Params::default()),
    ]
}

proptest! {
    #[test]
    fn no_loss_without_a_verdict_and_no_reordering_within_a_flow(
        ops in proptest::collection::vec(
            (0u64..20_000_000, 1u32..1500, 0u16..6, any::<bool>(), 0u8..3), 1..300),
        limit in 1u32..40,
        which in 0usize..6,
    ) {
        // Each op: a gap, a packet (size, flow, ECT?) offered, then 0-2 dequeues. Packets
        // dequeued, dropped by verdict, dropped in the outbox and still queued add up to
        // those offered, each once; per flow, those dequeued come out in offering order.
        let d = every_discipline()[which];
        let mut q = queue(d, limit);
        let mut ev = VecDeque::new();
        let mut now = SimTime::ZERO;
        let mut seen = std::collections::BTreeSet::new();
        let mut last_out = [None::<u64>; 6];
        let mut check_out = |out: Option<Dequeued>, seen: &mut std::collections::BTreeSet<u64>| -> Result<(), TestCaseError> {
            if let Some(o) = out {
                prop_assert!(seen.insert(o.pkt.id), "packet {} out twice", o.pkt.id);
                let f = usize::from(o.pkt.flow);
                prop_assert!(last_out[f].is_none_or(|l| l < o.pkt.id), "flow {} reordered", f);
                last_out[f] = Some(o.pkt.id);
                // Marked at dequeue (CoDel) or already at enqueue (RED, PIE): CE either way.
                prop_assert!(!o.marked || o.pkt.ecn == Ecn::Ce);
            }
            Ok(())
        };
        for (i, &(gap, size, flow, ect, deq)) in ops.iter().enumerate() {
            now += SimDuration::from_nanos(gap);
            // Flows 3 to 5 are L4S senders (DualPI2 queues them apart: a flow keeps one class).
            let ecn = match (flow, ect) {
                (3.., _) => Ecn::Ect1,
                (_, true) => Ecn::Ect0,
                _ => Ecn::NotEct,
            };
            if let Verdict::Dropped(_) = q.enqueue(now, pkt(i as u64, flow, size, ecn), &mut ev) {
                prop_assert!(seen.insert(i as u64));
            }
            for _ in 0..deq {
                let out = q.dequeue(now, &mut ev);
                check_out(out, &mut seen)?;
            }
            for e in ev.drain(..) {
                if let LinkEvent::Dropped { pkt, .. } = e {
                    prop_assert!(seen.insert(pkt.id), "packet {} dropped twice", pkt.id);
                }
            }
            prop_assert!(q.len_pkts() <= limit as usize);
        }
        while q.len_pkts() > 0 {
            now += SimDuration::from_millis(3);
            let out = q.dequeue(now, &mut ev);
            check_out(out, &mut seen)?;
            for e in ev.drain(..) {
                if let LinkEvent::Dropped { pkt, .. } = e {
                    prop_assert!(seen.insert(pkt.id));
                }
            }
        }
        prop_assert_eq!(q.len_bytes(), 0);
        prop_assert_eq!(seen.len(), ops.len());
    }

    #[test]
    fn a_link_with_any_discipline_conserves_and_reports_in_time_order(
        ops in proptest::collection::vec((0u64..2_000_000, 1u32..1500, 0u16..4, any::<bool>()), 1..300),
        limit in 1u32..30,
        which in 0usize..6,
    ) {
        let cfg = LinkConfig {
            rate: BitRate::from_bps(2_000_000),
            delay: SimDuration::from_millis(7),
            queue_limit: QueueLimit::Packets(limit),
            bucket: None,
        };
        let qd = Queue::new(every_discipline()[which], cfg.queue_limit, cfg.rate, rng());
        let mut link = Link::with_queue(cfg, NoLoss, qd).unwrap();
        let mut now = SimTime::ZERO;
        let mut events = Vec::new();
        let mut refused = 0u64;
        for (i, &(gap, size, flow, ect)) in ops.iter().enumerate() {
            now += SimDuration::from_nanos(gap);
            while let Some(e) = link.poll(now) {
                events.push(e);
            }
            let ecn = if ect { Ecn::Ect0 } else { Ecn::NotEct };
            if link.offer(now, pkt(i as u64, flow, size, ecn)).is_err() {
                refused += 1;
            }
            prop_assert!(link.conservation_holds());
        }
        while let Some(w) = link.next_wakeup() {
            now = now.max(w);
            while let Some(e) = link.poll(now) {
                events.push(e);
            }
        }
        prop_assert!(link.conservation_holds());
        prop_assert_eq!(link.in_flight_pkts(), 0);
        prop_assert_eq!(events.len() as u64 + refused, ops.len() as u64);
        for w in events.windows(2) {
            prop_assert!(w[0].at() <= w[1].at());
        }
        let s = link.stats();
        prop_assert_eq!(s.offered_pkts, s.delivered_pkts + s.dropped_overflow_pkts + s.dropped_aqm_pkts);
        let ce = events.iter().filter(|e| matches!(e, LinkEvent::Delivered { pkt, .. } if pkt.ecn == Ecn::Ce)).count();
        prop_assert_eq!(ce as u64, s.ce_marked_pkts);
    }
}
