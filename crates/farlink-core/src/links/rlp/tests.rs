//! Unit and property tests of the IS-707 RLP component. Timelines use 20-ms slots and a
//! 20-ms delay, so a frame sent in the slot starting at t arrives at t + 40 ms.

use super::*;
use crate::loss::{Bernoulli, DropList, NoLoss};
use crate::rng::StreamRng;
use proptest::prelude::*;

/// Damages exactly the frames whose arrival index (0, 1, 2, ... over the channel's life) is
/// listed: scenario loss `drop_list`, which numbers arrivals from 1.
fn scripted(damaged: &[u64]) -> DropList {
    DropList::new(damaged.iter().map(|n| n + 1).collect()).expect("increasing indices")
}

fn t_ms(ms: u64) -> SimTime {
    SimTime::from_nanos(ms * 1_000_000)
}

fn pkt(id: u64, size_bytes: u32) -> Packet {
    Packet {
        id,
        size_bytes,
        ..Packet::default()
    }
}

fn cfg(idle: IdlePolicy) -> RlpConfig {
    RlpConfig::is707(SimDuration::from_millis(20), idle, QueueLimit::Packets(50))
}

fn run_to_empty<L: LossModel, N: LossModel>(link: &mut RlpLink<L, N>) -> Vec<LinkEvent> {
    let mut out = Vec::new();
    while let Some(w) = link.next_wakeup() {
        let now = w.max(link.last_now);
        while let Some(e) = link.poll(now) {
            out.push(e);
        }
    }
    out
}

fn id(e: &LinkEvent) -> u64 {
    match *e {
        LinkEvent::Delivered { pkt, .. } | LinkEvent::Dropped { pkt, .. } => pkt.id,
    }
}

#[test]
fn is707_slot_payload_and_defaults() {
    let c = cfg(IdlePolicy::None);
    // 24 bytes at 9600 bit/s: 20 ms; 19 bytes of payload per slot is 7600 bit/s net.
    assert_eq!(c.slot(), SimDuration::from_millis(20));
    assert_eq!(
        f64::from(c.payload_bytes) * 8.0 / c.slot().as_secs_f64(),
        7600.0
    );
    assert_eq!(c.nak_timer, SimDuration::from_millis(120));
    for (bad, param) in [
        (
            RlpConfig {
                rate: BitRate::from_bps(0),
                ..c
            },
            "rate_bps",
        ),
        (
            RlpConfig {
                payload_bytes: 25,
                ..c
            },
            "payload_bytes",
        ),
        (RlpConfig { nak_rounds: 0, ..c }, "nak_rounds"),
        (
            RlpConfig {
                nak_timer: SimDuration::ZERO,
                ..c
            },
            "nak_timer",
        ),
    ] {
        assert_eq!(bad.validate().unwrap_err().param, param);
    }
}

#[test]
fn a_536_byte_segment_is_31_frames_and_takes_31_slots() {
    // 536 + 40 bytes of headers = 576 bytes = 31 frames of 19 bytes ("about 30", seed 004).
    let mut link = RlpLink::new(cfg(IdlePolicy::None), NoLoss, NoLoss).unwrap();
    link.offer(t_ms(5), pkt(1, 576)).unwrap();
    let out = run_to_empty(&mut link);
    // First slot at 20 ms (slot-aligned), last slot ends at 20 + 31 * 20 ms, plus 20 ms.
    assert_eq!(
        out,
        vec![LinkEvent::Delivered {
            at: t_ms(20 + 620 + 20),
            pkt: pkt(1, 576)
        }]
    );
    assert_eq!(link.stats().data_frames_sent, 31);
    assert_eq!(link.state_variables(), (31, 31, 31));
    assert!(link.conservation_holds());
}

#[test]
fn a_frame_lost_is_noticed_on_the_next_data_frame_and_nak_repairs_it() {
    // Frame 0 lost in slot [0, 20); frame 1 arrives at 60 ms: frame 0 is missing; the NAK
    // goes in [60, 80) and arrives at 100; the repeat goes in [100, 120) and arrives at 140.
    let mut link = RlpLink::new(cfg(IdlePolicy::None), scripted(&[0]), NoLoss).unwrap();
    link.offer(SimTime::ZERO, pkt(1, 38)).unwrap();
    let out = run_to_empty(&mut link);
    assert_eq!(
        out,
        vec![LinkEvent::Delivered {
            at: t_ms(140),
            pkt: pkt(1, 38)
        }]
    );
    let s = link.stats();
    assert_eq!(
        (s.missing_by_data, s.nak_frames_sent, s.frames_resent),
        (1, 1, 1)
    );
}

#[test]
fn without_idle_frames_a_lost_last_frame_waits_for_the_next_packet() {
    let mut link = RlpLink::new(cfg(IdlePolicy::None), scripted(&[0]), NoLoss).unwrap();
    link.offer(SimTime::ZERO, pkt(1, 19)).unwrap();
    assert!(run_to_empty(&mut link).is_empty());
    assert_eq!(link.in_flight_pkts(), 1);
    assert!(link.conservation_holds());
    // A packet five seconds later reveals the loss: frame 1 in [5000, 5020) arrives at 5040.
    link.offer(t_ms(5_000), pkt(2, 19)).unwrap();
    let out = run_to_empty(&mut link);
    assert_eq!(out.len(), 2);
    assert_eq!((id(&out[0]), out[0].at()), (1, t_ms(5_120)));
    assert_eq!((id(&out[1]), out[1].at()), (2, t_ms(5_120)));
}

#[test]
fn an_idle_frame_reveals_a_lost_last_frame() {
    // Frame 0 lost in [0, 20); the idle frame of [20, 40) carries V(S) = 1 and arrives at 60.
    for idle in [IdlePolicy::Unlimited, IdlePolicy::Count(1)] {
        let mut link = RlpLink::new(cfg(idle), scripted(&[0]), NoLoss).unwrap();
        link.offer(SimTime::ZERO, pkt(1, 19)).unwrap();
        let out = run_to_empty(&mut link);
        assert_eq!(
            out,
            vec![LinkEvent::Delivered {
                at: t_ms(140),
                pkt: pkt(1, 19)
            }],
            "{idle}"
        );
        assert_eq!(link.stats().missing_by_idle, 1);
        assert_eq!(link.stats().idle_frames_drawn, 1);
    }
}

#[test]
fn a_bounded_number_of_idle_frames_can_all_be_lost() {
    // Two idle frames, both damaged: the receiver never hears of frame 0.
    let mut link = RlpLink::new(cfg(IdlePolicy::Count(2)), scripted(&[0, 1, 2]), NoLoss).unwrap();
    link.offer(SimTime::ZERO, pkt(1, 19)).unwrap();
    assert!(run_to_empty(&mut link).is_empty());
    assert_eq!(link.stats().idle_frames_drawn, 2);
    assert_eq!(link.stats().idle_frames_damaged, 2);
    // Idle frames not drawn (nothing new to tell) are still counted as sent.
    assert_eq!(link.idle_frames_sent(t_ms(1_000)), 2);
}

#[test]
fn idle_frames_after_an_intact_last_frame_are_counted_not_drawn() {
    let mut link = RlpLink::new(cfg(IdlePolicy::Unlimited), NoLoss, NoLoss).unwrap();
    link.offer(SimTime::ZERO, pkt(1, 19)).unwrap();
    let out = run_to_empty(&mut link);
    assert_eq!(out[0].at(), t_ms(40));
    assert_eq!(link.stats().idle_frames_drawn, 0);
    // Slots [20, 40) ... [980, 1000) are idle: 49 idle frames.
    assert_eq!(link.idle_frames_sent(t_ms(1_000)), 49);
    link.offer(t_ms(1_000), pkt(2, 19)).unwrap();
    run_to_empty(&mut link);
    // The data slot [1000, 1020) is not idle; [1020, 1040) is (the run went on to 1040).
    assert_eq!(link.idle_frames_sent(t_ms(1_040)), 50);
}

#[test]
fn three_rounds_of_one_two_and_three_naks_then_the_frame_is_given_up() {
    // Packet 1 is frame 0, packet 2 frame 1. Every copy of frame 0 is damaged (channel calls 0,
    // 2, 3, 4, 5, 6, 7). Round 1: NAK [60, 80), timer to 200. Round 2: NAKs [200, 220) and
    // [220, 240), timer to 360. Round 3: NAKs [360, 380), [380, 400), [400, 420), timer to
    // 540: frame 0 is given up, packet 1 dropped and packet 2 handed up at 540 ms.
    let mut link = RlpLink::new(
        cfg(IdlePolicy::None),
        scripted(&[0, 2, 3, 4, 5, 6, 7]),
        NoLoss,
    )
    .unwrap();
    link.offer(SimTime::ZERO, pkt(1, 19)).unwrap();
    link.offer(SimTime::ZERO, pkt(2, 19)).unwrap();
    let out = run_to_empty(&mut link);
    assert_eq!(
        out,
        vec![
            LinkEvent::Dropped {
                at: t_ms(540),
                pkt: pkt(1, 19),
                cause: DropCause::ArqGiveUp
            },
            LinkEvent::Delivered {
                at: t_ms(540),
                pkt: pkt(2, 19)
            }
        ]
    );
    let s = link.stats();
    assert_eq!(s.nak_frames_sent, 6);
    assert_eq!(s.frames_resent, 6);
    assert_eq!(s.frames_given_up, 1);
    assert_eq!(link.dropped_pkts(DropCause::ArqGiveUp), 1);
    assert!(link.conservation_holds());
    assert_eq!(link.in_flight_pkts(), 0);
}

#[test]
fn a_lost_nak_costs_a_round() {
    // The first NAK (reverse call 0) is lost: round 1 times out at 200; round 2's first NAK in
    // [200, 220) reaches the sender at 240; the repeat in [240, 260) arrives at 280.
    let mut link = RlpLink::new(cfg(IdlePolicy::None), scripted(&[0]), scripted(&[0])).unwrap();
    link.offer(SimTime::ZERO, pkt(1, 38)).unwrap();
    let out = run_to_empty(&mut link);
    assert_eq!(out[0].at(), t_ms(280));
    assert_eq!(link.stats().nak_frames_lost, 1);
    // Both NAKs of round 2 were heard, but the repeat was queued once.
    assert_eq!(link.stats().frames_resent, 2);
}

#[test]
fn packets_are_handed_up_in_order() {
    // Packet 1's second frame (call 1) is lost; packet 2 arrives whole before the repair but
    // waits: frame 2 arrives at 80 and reveals frame 1; NAK [80, 100) arrives 120; repeat
    // [120, 140) arrives 160; both are handed up at 160.
    let mut link = RlpLink::new(cfg(IdlePolicy::None), scripted(&[1]), NoLoss).unwrap();
    link.offer(SimTime::ZERO, pkt(1, 38)).unwrap();
    link.offer(SimTime::ZERO, pkt(2, 19)).unwrap();
    let out = run_to_empty(&mut link);
    assert_eq!(out.iter().map(id).collect::<Vec<_>>(), vec![1, 2]);
    assert!(out.iter().all(|e| e.at() == t_ms(160)));
}

#[test]
fn a_full_queue_refuses_packets() {
    let c = RlpConfig::is707(
        SimDuration::from_millis(20),
        IdlePolicy::None,
        QueueLimit::Packets(2),
    );
    let mut link = RlpLink::new(c, NoLoss, NoLoss).unwrap();
    for i in 0..3 {
        link.offer(SimTime::ZERO, pkt(i, 100)).unwrap();
    }
    // The first packet's first frame goes in the slot at time zero, so two wait and the
    // fourth overflows.
    link.poll(SimTime::ZERO);
    assert_eq!(link.queue_len_pkts(), 2);
    assert_eq!(
        link.offer(SimTime::ZERO, pkt(3, 100)),
        Err(DropCause::QueueOverflow)
    );
    assert!(link.conservation_holds());
    assert_eq!(run_to_empty(&mut link).len(), 3);
    assert!(link.conservation_holds());
}

#[test]
fn residual_loss_with_independent_errors_matches_the_round_structure() {
    // Independent errors p on the data and the NAK channel, one-frame packets so that the
    // rounds of different frames never share a slot. A frame is given up when its first copy
    // is damaged and every round fails; round r fails when none of its r NAK-and-repeat pairs
    // gets through, with probability (1 - (1 - p)^2)^r (a repeat asked for twice goes once,
    // but then both NAKs were heard and the round's outcome rests on that one repeat; with
    // p = 0.2 the difference is inside the tolerance, see the bound below).
    let p = 0.2_f64;
    let fail = |r: i32| (1.0 - (1.0 - p) * (1.0 - p)).powi(r);
    let want = p * fail(1) * fail(2) * fail(3);
    let loss = Bernoulli::new(p, StreamRng::derive(3, "rlp/data")).unwrap();
    let nak = Bernoulli::new(p, StreamRng::derive(3, "rlp/nak")).unwrap();
    let mut link = RlpLink::new(cfg(IdlePolicy::Unlimited), loss, nak).unwrap();
    let n = 60_000u64;
    let mut now = SimTime::ZERO;
    for i in 0..n {
        while link.queue_len_pkts() >= 10 {
            now = link.next_wakeup().unwrap().max(now);
            while link.poll(now).is_some() {}
        }
        link.offer(now, pkt(i, 19)).unwrap();
    }
    run_to_empty(&mut link);
    let s = *link.stats();
    assert_eq!(link.link_stats().delivered_pkts + s.units_given_up, n);
    let got = s.frames_given_up as f64 / n as f64;
    let sd = (want / n as f64).sqrt();
    assert!((got - want).abs() < 5.0 * sd, "given up {got} vs {want}");
}

proptest! {
    #[test]
    fn every_packet_is_reported_once_in_order_and_conserved(
        ops in proptest::collection::vec((0u64..400, 1u32..600), 1..40),
        p in 0.0f64..0.6,
        q in 0.0f64..0.6,
        idle in 0u8..3,
        rounds in 1u32..4,
    ) {
        let idle = match idle { 0 => IdlePolicy::None, 1 => IdlePolicy::Count(3), _ => IdlePolicy::Unlimited };
        let mut c = cfg(idle);
        c.nak_rounds = rounds;
        let loss = Bernoulli::new(p, StreamRng::derive(9, "rlp/prop/data")).unwrap();
        let nak = Bernoulli::new(q, StreamRng::derive(9, "rlp/prop/nak")).unwrap();
        let mut link = RlpLink::new(c, loss, nak).unwrap();
        let mut now = SimTime::ZERO;
        let mut out = Vec::new();
        let mut refused = Vec::new();
        for (i, (dt, size)) in ops.iter().enumerate() {
            now += SimDuration::from_millis(*dt);
            while let Some(e) = link.poll(now) { out.push(e); }
            if link.offer(now, pkt(i as u64, *size)).is_err() {
                refused.push(i as u64);
            }
            prop_assert!(link.conservation_holds());
        }
        out.extend(run_to_empty(&mut link));
        prop_assert!(link.conservation_holds());
        let ids: Vec<u64> = out.iter().map(id).collect();
        prop_assert!(ids.windows(2).all(|w| w[0] < w[1]), "{:?}", ids);
        let mut last = SimTime::ZERO;
        for e in &out {
            prop_assert!(e.at() >= last);
            last = e.at();
        }
        let reported = ids.len() as u64 + refused.len() as u64;
        if idle == IdlePolicy::Unlimited {
            // Some idle frame gets through in the end: nothing stays inside.
            prop_assert_eq!(link.in_flight_pkts(), 0);
            prop_assert_eq!(reported, ops.len() as u64);
        } else {
            prop_assert_eq!(reported + link.in_flight_pkts(), ops.len() as u64);
        }
        // Without damage every packet is delivered.
        if p == 0.0 {
            let all_delivered = out.iter().all(|e| matches!(e, LinkEvent::Delivered { .. }));
            prop_assert!(all_delivered);
        }
    }
}

#[test]
fn departures_are_logged_once_per_packet_at_its_first_frame() {
    let mut link = RlpLink::new(cfg(IdlePolicy::None), scripted(&[0]), NoLoss).unwrap();
    link.set_departure_log(true);
    link.offer(t_ms(5), pkt(1, 38)).unwrap();
    link.offer(t_ms(5), pkt(2, 19)).unwrap();
    run_to_empty(&mut link);
    let mut got = Vec::new();
    while let Some(d) = link.pop_departure() {
        got.push((d.at, d.pkt.id));
    }
    // Packet 1's frames go in the slots at 20 and 40 ms, packet 2's at 60 ms; the repeat of
    // frame 0 is not a departure.
    assert_eq!(got, vec![(t_ms(20), 1), (t_ms(60), 2)]);
}

#[test]
fn data_frames_see_the_fading_channel_at_its_frame_error_rate() {
    // Packets offered with gaps, so the channel is advanced lazily over idle slots between
    // frames: the damaged share of data frames is still P_e. The chain's correlation
    // lambda = q - p widens the standard error by sqrt((1 + lambda) / (1 - lambda)).
    use crate::loss::{MarkovFading, MarkovFadingConfig};
    let pe = 0.3;
    let mk = |name: &str| {
        MarkovFading::new(
            MarkovFadingConfig::is707(pe, 0.1),
            StreamRng::derive(21, name),
        )
        .unwrap()
    };
    let loss = mk("rlp/fading/data");
    let lambda = loss.transitions().lambda();
    let mut link = RlpLink::new(cfg(IdlePolicy::Count(2)), loss, mk("rlp/fading/nak")).unwrap();
    let mut now = SimTime::ZERO;
    for i in 0..20_000u64 {
        // One to three frames, then 0 to 0.7 s of silence.
        link.offer(now, pkt(i, 19 * (1 + (i % 3) as u32))).unwrap();
        now += SimDuration::from_millis(100 * (i % 8));
        while link.poll(now).is_some() {}
    }
    run_to_empty(&mut link);
    let s = *link.stats();
    let n = (s.data_frames_sent + s.frames_resent) as f64;
    let got = s.frames_damaged as f64 / n;
    let sd = (pe * (1.0 - pe) / n * (1.0 + lambda) / (1.0 - lambda)).sqrt();
    assert!(
        (got - pe).abs() < 5.0 * sd,
        "damaged share {got} vs {pe} (sd {sd})"
    );
    assert!(link.conservation_holds());
}

#[test]
fn a_shared_channel_is_one_process_seen_by_both_handles() {
    // Calls 1 and 2 are damaged: whichever handle asks, the script advances once per call.
    let mut a = SharedChannel::new(scripted(&[1, 2]));
    let mut b = a.clone();
    let t = SimTime::ZERO;
    assert_eq!(
        [a.is_lost(t), b.is_lost(t), a.is_lost(t), b.is_lost(t)],
        [false, true, true, false]
    );
}

/// 30 packets of 576 bytes (31 slots, 620 ms each) offered at once to a hop whose queue runs
/// `queue`: every packet reported once, and the link's counts.
fn through_queue(queue: Queue, ecn: crate::links::link::Ecn) -> (Vec<LinkEvent>, LinkStats) {
    let mut link = RlpLink::with_queue(cfg(IdlePolicy::None), NoLoss, NoLoss, queue).unwrap();
    for i in 0..30 {
        let p = Packet { ecn, ..pkt(i, 576) };
        link.offer(t_ms(0), p).unwrap();
    }
    let out = run_to_empty(&mut link);
    // Reported in time order: a drop at framing may come before an earlier packet arrives.
    assert!(out.windows(2).all(|w| w[0].at() <= w[1].at()));
    let delivered: Vec<u64> = out
        .iter()
        .filter(|e| matches!(e, LinkEvent::Delivered { .. }))
        .map(id)
        .collect();
    assert!(delivered.windows(2).all(|w| w[0] < w[1]), "{delivered:?}");
    let mut ids: Vec<u64> = out.iter().map(id).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..30).collect::<Vec<_>>());
    assert!(link.conservation_holds());
    assert_eq!((link.in_flight_pkts(), link.queue_len_pkts()), (0, 0));
    (out, *link.link_stats())
}

#[test]
fn an_aqm_on_the_radio_hops_queue_drops_or_marks_as_packets_are_framed() {
    use crate::links::link::Ecn;
    use crate::links::queue::{CoDelParams, Discipline};
    let codel = || {
        Queue::new(
            Discipline::CoDel(CoDelParams::default()),
            QueueLimit::Packets(50),
            IS707_RATE,
            StreamRng::derive(1, "test:queue"),
        )
    };
    // Drop-tail: all delivered.
    let (out, _) = through_queue(
        Queue::DropTail(DropTail::new(QueueLimit::Packets(50))),
        Ecn::NotEct,
    );
    assert!(out.iter().all(|e| matches!(e, LinkEvent::Delivered { .. })));
    // CoDel: the packets wait whole for seconds, far above its 5 ms target, so it drops at
    // the slots where packets are framed (multiples of the 20 ms slot).
    let (out, stats) = through_queue(codel(), Ecn::NotEct);
    let aqm: Vec<SimTime> = out
        .iter()
        .filter_map(|e| match *e {
            LinkEvent::Dropped {
                at,
                cause: DropCause::Aqm,
                ..
            } => Some(at),
            _ => None,
        })
        .collect();
    assert!(!aqm.is_empty());
    assert!(
        aqm.iter().all(|at| at.as_nanos() % 20_000_000 == 0),
        "{aqm:?}"
    );
    assert_eq!(stats.dropped_aqm_pkts, aqm.len() as u64);
    // ECN-capable: marked instead, delivered with CE.
    let (out, stats) = through_queue(codel(), Ecn::Ect0);
    assert!(out.iter().all(|e| matches!(e, LinkEvent::Delivered { .. })));
    let ce = out
        .iter()
        .filter(|e| matches!(e, LinkEvent::Delivered { pkt, .. } if pkt.ecn == Ecn::Ce))
        .count() as u64;
    assert!(ce > 0);
    assert_eq!(stats.ce_marked_pkts, ce);
}
