//! Tests of the bundle: reassembly (unit and property tests against reordering and loss), one
//! direction's data plane, and the control plane.

use super::*;
use crate::links::arq::ArqMode;
use crate::loss::{Bernoulli, NoLoss};
use crate::modem::ModemConfig;
use crate::rng::StreamRng;
use proptest::prelude::*;

const MS: u64 = 1_000_000;

fn t_ms(ms: u64) -> SimTime {
    SimTime::from_nanos(ms * MS)
}

fn pkt(id: u64, size_bytes: u32) -> Packet {
    Packet {
        id,
        size_bytes,
        ..Packet::default()
    }
}

fn ids(events: &[LinkEvent]) -> Vec<(u64, Option<DropCause>)> {
    events
        .iter()
        .map(|e| match *e {
            LinkEvent::Delivered { pkt, .. } => (pkt.id, None),
            LinkEvent::Dropped { pkt, cause, .. } => (pkt.id, Some(cause)),
        })
        .collect()
}

fn drain_reasm(r: &mut Reassembly) -> Vec<LinkEvent> {
    std::iter::from_fn(|| r.pop_event()).collect()
}

// ----- reassembly -----

#[test]
fn member_state_codes_follow_their_names() {
    for (code, name) in MemberState::NAMES.iter().enumerate() {
        let s = [
            MemberState::Idle,
            MemberState::Connecting,
            MemberState::Connected,
            MemberState::CallLost,
            MemberState::Dropped,
            MemberState::Failed,
            MemberState::Blocked,
        ][code];
        assert_eq!((s.code() as usize, s.name()), (code, *name));
    }
    assert_eq!(MemberState::from(ModemState::Blocked), MemberState::Blocked);
}

#[test]
fn reassembly_hands_packets_up_in_sequence_order() {
    let mut r = Reassembly::new(2, SimDuration::from_secs(60));
    r.join(0, 0);
    r.join(1, 0);
    r.push(pkt(10, 100), 0, 1);
    r.push(pkt(11, 100), 1, 1);
    r.on_arrival(1, 1);
    r.release(t_ms(5));
    assert!(
        drain_reasm(&mut r).is_empty(),
        "packet 10 is still on its way"
    );
    r.on_arrival(0, 0);
    r.release(t_ms(7));
    assert_eq!(ids(&drain_reasm(&mut r)), vec![(10, None), (11, None)]);
    assert_eq!(r.pending_pkts(), 0);
    assert_eq!(r.deadline(), None);
}

#[test]
fn reassembly_puts_fragments_together() {
    let mut r = Reassembly::new(3, SimDuration::from_secs(60));
    for m in 0..3 {
        r.join(m, 0);
    }
    r.push(pkt(1, 1500), 0, 3);
    r.on_arrival(2, 2);
    r.on_arrival(0, 0);
    r.release(t_ms(1));
    assert!(drain_reasm(&mut r).is_empty());
    r.on_arrival(1, 1);
    r.on_arrival(1, 1); // a repeat changes nothing
    r.release(t_ms(2));
    assert_eq!(ids(&drain_reasm(&mut r)), vec![(1, None)]);
}

#[test]
fn a_missing_fragment_is_given_up_once_every_member_has_passed_it() {
    let mut r = Reassembly::new(2, SimDuration::from_secs(60));
    r.join(0, 0);
    r.join(1, 0);
    r.push(pkt(1, 100), 0, 1); // on member 0, lost
    r.push(pkt(2, 100), 1, 1); // on member 1
    r.push(pkt(3, 100), 2, 1); // on member 0
    r.on_lost(0, DropCause::ArqGiveUp);
    r.on_arrival(1, 1);
    r.release(t_ms(1));
    // Member 0 has delivered nothing yet: seq 0 could still come.
    assert!(drain_reasm(&mut r).is_empty());
    r.on_arrival(0, 2);
    r.release(t_ms(2));
    assert_eq!(
        ids(&drain_reasm(&mut r)),
        vec![(1, Some(DropCause::ArqGiveUp)), (2, None), (3, None)]
    );
    assert_eq!(r.stats().dropped_pkts[2], 1);
}

#[test]
fn a_silent_member_holds_reassembly_back_until_it_leaves() {
    // Member 1's call dropped unnoticed: what was sent to it never comes, and it delivers
    // nothing, so its floor stays put until it leaves the bundle.
    let mut r = Reassembly::new(2, SimDuration::from_secs(60));
    r.join(0, 0);
    r.join(1, 0);
    for s in 0..4 {
        r.push(pkt(s, 100), s, 1);
    }
    r.on_lost(1, DropCause::CallDrop);
    r.on_lost(3, DropCause::CallDrop);
    r.on_arrival(0, 0);
    r.on_arrival(0, 2);
    r.release(t_ms(1_000));
    assert_eq!(ids(&drain_reasm(&mut r)), vec![(0, None)]);
    assert_eq!(r.deadline(), Some(t_ms(61_000)));
    r.leave(1);
    r.release(t_ms(30_000));
    assert_eq!(
        ids(&drain_reasm(&mut r)),
        vec![(1, Some(DropCause::CallDrop)), (2, None)]
    );
    // Seq 3 could still come on member 0 as far as the receiver knows, and nothing waits
    // behind it, so no timer runs; the next arrival on member 0 settles it.
    assert_eq!(r.deadline(), None);
    r.push(pkt(4, 100), 4, 1);
    r.on_arrival(0, 4);
    r.release(t_ms(31_000));
    assert_eq!(
        ids(&drain_reasm(&mut r)),
        vec![(3, Some(DropCause::CallDrop)), (4, None)]
    );
}

#[test]
fn an_idle_member_with_its_call_up_holds_nothing_back() {
    let mut r = Reassembly::new(2, SimDuration::from_secs(60));
    r.join(0, 0);
    r.join(1, 0);
    r.push(pkt(1, 100), 0, 1); // on member 0, lost
    r.push(pkt(2, 100), 1, 1); // on member 1
    r.on_lost(0, DropCause::ArqGiveUp);
    r.on_arrival(1, 1);
    r.release(t_ms(1));
    assert!(
        drain_reasm(&mut r).is_empty(),
        "member 0 could still deliver seq 0"
    );
    r.set_quiet(0, true);
    r.release(t_ms(2));
    assert_eq!(
        ids(&drain_reasm(&mut r)),
        vec![(1, Some(DropCause::ArqGiveUp)), (2, None)]
    );
}

#[test]
fn the_timer_gives_up_a_fragment_still_on_its_way() {
    let mut r = Reassembly::new(2, SimDuration::from_secs(10));
    r.join(0, 0);
    r.join(1, 0);
    r.push(pkt(1, 100), 0, 1); // slow, on member 0
    r.push(pkt(2, 100), 1, 1);
    r.on_arrival(1, 1);
    r.release(t_ms(2_000));
    assert_eq!(r.deadline(), Some(t_ms(12_000)));
    r.release(t_ms(11_999));
    assert!(drain_reasm(&mut r).is_empty());
    r.release(t_ms(12_000));
    assert_eq!(
        ids(&drain_reasm(&mut r)),
        vec![(1, Some(DropCause::ReassemblyTimeout)), (2, None)]
    );
    assert_eq!(r.stats().timeouts, 1);
    // The slow fragment arrives after all: discarded.
    r.on_arrival(0, 0);
    r.release(t_ms(13_000));
    assert!(drain_reasm(&mut r).is_empty());
    assert_eq!(r.stats().late_units, 1);
}

#[test]
fn with_no_member_left_nothing_can_come() {
    let mut r = Reassembly::new(1, SimDuration::from_secs(60));
    r.join(0, 0);
    r.push(pkt(1, 100), 0, 1);
    r.on_lost(0, DropCause::CallDrop);
    r.leave(0);
    r.release(t_ms(1));
    assert_eq!(
        ids(&drain_reasm(&mut r)),
        vec![(1, Some(DropCause::CallDrop))]
    );
}

// ----- one direction -----

fn dir_cfg(n: usize, rate_bps: u64, delay_ms: u64, arq: Option<ArqMode>) -> BundleDirConfig {
    let delay = SimDuration::from_millis(delay_ms);
    BundleDirConfig {
        members: (0..n)
            .map(|_| MemberDirConfig {
                rate: BitRate::from_bps(rate_bps),
                delay,
                txqueue_pkts: DEFAULT_TXQUEUE_PKTS,
                arq: arq.map(|mode| ArqConfig {
                    mode,
                    frame_bytes: 27,
                    max_tries: 3,
                    window_frames: ArqConfig::default_window(
                        mode,
                        BitRate::from_bps(rate_bps),
                        delay,
                        27,
                        3,
                    ),
                }),
            })
            .collect(),
        queue_limit: QueueLimit::Packets(100),
        fragment: false,
        mp_header_bytes: 0,
        reassembly_timeout: SimDuration::from_secs(60),
    }
}

fn up_dir<L: LossModel>(cfg: &BundleDirConfig, losses: Vec<L>) -> BundleDir<L> {
    let mut d = BundleDir::new(cfg, losses).unwrap();
    for i in 0..cfg.members.len() {
        d.member_up(SimTime::ZERO, i);
        d.set_usable(SimTime::ZERO, i, true);
    }
    d
}

fn no_loss(n: usize) -> Vec<NoLoss> {
    vec![NoLoss; n]
}

/// Runs the direction as the engine does until nothing is left before `until`.
fn run_until<L: LossModel>(d: &mut BundleDir<L>, until: SimTime) -> Vec<LinkEvent> {
    let mut out = Vec::new();
    while let Some(w) = d.next_wakeup() {
        if w > until {
            break;
        }
        let now = w.max(d.clock);
        while let Some(e) = d.poll(now) {
            out.push(e);
        }
    }
    out
}

#[test]
fn rejects_bad_configurations() {
    assert_eq!(
        BundleDir::<NoLoss>::new(&dir_cfg(0, 2400, 500, None), vec![])
            .unwrap_err()
            .param,
        "members"
    );
    let mut c = dir_cfg(2, 2400, 500, None);
    c.members[1].txqueue_pkts = 0;
    assert_eq!(
        BundleDir::new(&c, no_loss(2)).unwrap_err().param,
        "txqueue_pkts"
    );
    assert_eq!(
        BundleDir::new(&dir_cfg(2, 2400, 500, None), no_loss(1))
            .unwrap_err()
            .param,
        "members"
    );
}

#[test]
fn round_robin_fills_each_members_transmit_queue() {
    let cfg = dir_cfg(3, 2400, 500, None);
    let mut d = up_dir(&cfg, no_loss(3));
    for i in 0..10 {
        d.offer(SimTime::ZERO, pkt(i, 1500)).unwrap();
    }
    // Three members of three packets each; the tenth waits in the MLPPP queue.
    assert_eq!(
        (0..3).map(|i| d.member_backlog_pkts(i)).collect::<Vec<_>>(),
        vec![3, 3, 3]
    );
    assert_eq!(d.queue_len_pkts(), 1);
    let out = run_until(&mut d, t_ms(100_000));
    assert_eq!(
        ids(&out),
        (0..10).map(|i| (i, None)).collect::<Vec<_>>(),
        "in order"
    );
    // Seed 000 section 4.1.6: the third packet on a member waits for the two ahead of it,
    // 3 × 5 s of clocking, then 0.5 s of propagation.
    assert_eq!(out[8].at(), t_ms(15_500));
    // The tenth left the MLPPP queue at 5 s, when member 0 freed a slot, and was sent last.
    assert_eq!(out[9].at(), t_ms(20_500));
    assert!(d.conservation_holds());
    assert_eq!(d.in_flight_pkts(), 0);
}

#[test]
fn a_full_mlppp_queue_overflows() {
    let mut cfg = dir_cfg(1, 2400, 500, None);
    cfg.queue_limit = QueueLimit::Packets(2);
    let mut d = up_dir(&cfg, no_loss(1));
    let results: Vec<_> = (0..6)
        .map(|i| d.offer(SimTime::ZERO, pkt(i, 100)))
        .collect();
    assert_eq!(results[..5], [Ok(()), Ok(()), Ok(()), Ok(()), Ok(())]);
    assert_eq!(results[5], Err(DropCause::QueueOverflow));
    assert_eq!(d.drops_by_cause()[0], 1);
    assert_eq!(d.stats().max_queue_pkts, 2);
    assert!(d.conservation_holds());
}

/// One 2400 bit/s member (5 s a 1500-byte packet) whose MLPPP queue runs `queue`, offered 20
/// packets of `ecn` at once: what came out of it.
fn standing_queue_through(
    queue: Queue,
    ecn: crate::links::link::Ecn,
) -> (BundleDir<NoLoss>, Vec<LinkEvent>) {
    let cfg = dir_cfg(1, 2400, 500, None);
    let mut d = BundleDir::with_queue(&cfg, no_loss(1), queue).unwrap();
    d.member_up(SimTime::ZERO, 0);
    d.set_usable(SimTime::ZERO, 0, true);
    for i in 0..20 {
        let p = Packet {
            ecn,
            ..pkt(i, 1500)
        };
        d.offer(SimTime::ZERO, p).unwrap();
    }
    let out = run_until(&mut d, t_ms(1_000_000));
    assert!(d.conservation_holds());
    assert_eq!(d.in_flight_pkts(), 0);
    // Every packet comes out once, those delivered in order.
    let mut seen: Vec<u64> = ids(&out).iter().map(|x| x.0).collect();
    let delivered: Vec<u64> = ids(&out)
        .iter()
        .filter(|x| x.1.is_none())
        .map(|x| x.0)
        .collect();
    assert!(delivered.windows(2).all(|w| w[0] < w[1]), "{delivered:?}");
    seen.sort_unstable();
    assert_eq!(seen, (0..20).collect::<Vec<_>>());
    (d, out)
}

#[test]
fn an_aqm_on_the_mlppp_queue_drops_or_marks_the_standing_queue() {
    use crate::links::link::{drop_cause_code, Ecn};
    use crate::links::queue::{CoDelParams, Discipline};
    let codel = || {
        Queue::new(
            Discipline::CoDel(CoDelParams::default()),
            QueueLimit::Packets(100),
            BitRate::from_bps(2400),
            StreamRng::derive(1, "test:queue"),
        )
    };
    // Drop-tail: all 20 delivered, the last after 20 x 5 s of clocking.
    let (_, out) = standing_queue_through(
        Queue::DropTail(DropTail::new(QueueLimit::Packets(100))),
        Ecn::NotEct,
    );
    assert!(out.iter().all(|e| matches!(e, LinkEvent::Delivered { .. })));
    // CoDel: the sojourns of seconds are far above its 5 ms target, so it drops at dequeue
    // (reported at the dequeue's instant, a slot freeing every 5 s) until one packet is left.
    let (d, out) = standing_queue_through(codel(), Ecn::NotEct);
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
        aqm.iter().all(|at| at.as_nanos() % (5_000 * MS) == 0),
        "{aqm:?}"
    );
    assert_eq!(
        d.drops_by_cause()[usize::from(drop_cause_code(DropCause::Aqm))],
        aqm.len() as u64
    );
    assert_eq!(d.stats().dropped_aqm_pkts, aqm.len() as u64);
    // The same packets ECN-capable: marked CE, none dropped, and delivered carrying the mark.
    let (d, out) = standing_queue_through(codel(), Ecn::Ect0);
    let ce = out
        .iter()
        .filter(|e| matches!(e, LinkEvent::Delivered { pkt, .. } if pkt.ecn == Ecn::Ce))
        .count() as u64;
    assert_eq!(out.len(), 20);
    assert!(out.iter().all(|e| matches!(e, LinkEvent::Delivered { .. })));
    assert_eq!(d.stats().ce_marked_pkts, ce);
    // Marked packets stay queued, so the queue stands longer than when they are dropped and
    // CoDel signals at least as often.
    assert!(ce >= aqm.len() as u64, "{ce} marks, {} drops", aqm.len());
}

#[test]
fn fragmentation_splits_over_free_members_and_not_when_loaded() {
    let mut cfg = dir_cfg(4, 2400, 500, None);
    cfg.fragment = true;
    cfg.mp_header_bytes = 4;
    let mut d = up_dir(&cfg, no_loss(4));
    // Idle bundle: the packet goes as four fragments of 375 + 4 bytes, in parallel.
    d.offer(SimTime::ZERO, pkt(1, 1500)).unwrap();
    assert_eq!(d.unit_stats().fragmented_pkts, 1);
    assert_eq!(d.unit_stats().units_sent, 4);
    // No member is idle now: the next packets go whole, round robin.
    d.offer(SimTime::ZERO, pkt(2, 1500)).unwrap();
    d.offer(SimTime::ZERO, pkt(3, 1500)).unwrap();
    assert_eq!(d.unit_stats().units_sent, 6);
    assert_eq!((d.member_backlog_pkts(0), d.member_backlog_pkts(1)), (2, 2));
    let out = run_until(&mut d, t_ms(100_000));
    // 379 bytes at 2400 bit/s: 1.26333 s, plus 0.5 s.
    let frag = BitRate::from_bps(2400).transmission_time(379);
    assert_eq!(
        out[0].at(),
        SimTime::ZERO + frag + SimDuration::from_millis(500)
    );
    let whole = BitRate::from_bps(2400).transmission_time(1504);
    assert_eq!(
        out[1].at(),
        SimTime::ZERO + frag + whole + SimDuration::from_millis(500)
    );
    assert_eq!(ids(&out), vec![(1, None), (2, None), (3, None)]);
    assert_eq!(d.unit_stats().fragmented_pkts, 1);
    assert!(d.conservation_holds());
}

#[test]
fn a_call_drop_loses_what_the_member_holds_and_the_void_until_noticed() {
    let cfg = dir_cfg(2, 2400, 500, None);
    let mut d = up_dir(&cfg, no_loss(2));
    for i in 0..4 {
        d.offer(SimTime::ZERO, pkt(i, 300)).unwrap(); // 1 s each; 0, 2 on member 0; 1, 3 on 1
    }
    // Member 1's call drops at 0.5 s: packets 1 and 3 are lost.
    d.member_lost(t_ms(500), 1);
    // Until the drop is noticed at 30.5 s, member 1 still takes its share: into the void.
    let mut t = 600;
    for i in 4..8 {
        d.offer(t_ms(t), pkt(i, 300)).unwrap();
        t += 1_000;
    }
    let early = run_until(&mut d, t_ms(30_000));
    // Only packet 0 can be handed up: packet 1's loss is not yet known (member 1 is silent).
    assert_eq!(ids(&early), vec![(0, None)]);
    d.set_usable(t_ms(30_500), 1, false);
    let out = run_until(&mut d, t_ms(100_000));
    let cd = Some(DropCause::CallDrop);
    // Packet 7, the last one, was lost in the void too; member 0 has nothing more on its way
    // (its link layer says it is idle), so nothing can still come.
    assert_eq!(
        ids(&out),
        vec![
            (1, cd),
            (2, None),
            (3, cd),
            (4, None),
            (5, cd),
            (6, None),
            (7, cd)
        ]
    );
    assert_eq!(out[0].at(), t_ms(30_500));
    assert_eq!(d.unit_stats().units_into_the_void, 2);
    assert_eq!(d.drops_by_cause()[3], 4);
    assert!(d.conservation_holds());
    assert_eq!(d.in_flight_pkts(), 0);
    // Everything now goes to member 0.
    d.offer(t_ms(100_000), pkt(8, 300)).unwrap();
    assert_eq!(d.member_backlog_pkts(0), 1);
}

#[test]
fn every_member_down_keeps_packets_in_the_bounded_mlppp_queue() {
    let mut cfg = dir_cfg(2, 2400, 500, None);
    cfg.queue_limit = QueueLimit::Packets(5);
    let mut d = BundleDir::new(&cfg, no_loss(2)).unwrap();
    let mut overflow = 0;
    for i in 0..1000u64 {
        if d.offer(t_ms(i * 1000), pkt(i, 1500)).is_err() {
            overflow += 1;
        }
        assert!(d.queue_len_pkts() <= 5);
    }
    assert_eq!(overflow, 995);
    assert_eq!(d.next_wakeup(), None, "nothing to do without members");
    // A member comes up: the queue drains through it.
    d.member_up(t_ms(1_000_000), 0);
    d.set_usable(t_ms(1_000_000), 0, true);
    let out = run_until(&mut d, t_ms(2_000_000));
    assert_eq!(out.len(), 5);
    assert!(d.conservation_holds());
}

#[test]
fn arq_members_deliver_in_order_across_the_bundle() {
    let cfg = dir_cfg(3, 2400, 500, Some(ArqMode::SelectiveRepeat));
    let losses = (0..3)
        .map(|i| Bernoulli::new(0.05, StreamRng::derive(4, &format!("m{i}"))).unwrap())
        .collect();
    let mut d = up_dir(&cfg, losses);
    let mut now = SimTime::ZERO;
    let mut out = Vec::new();
    for i in 0..300 {
        while d.usable_members() > 0 && (0..3).all(|m| d.member_backlog_pkts(m) >= 3) {
            now = d.next_wakeup().unwrap().max(now);
            while let Some(e) = d.poll(now) {
                out.push(e);
            }
        }
        d.offer(now, pkt(i, 600)).unwrap();
    }
    out.extend(run_until(&mut d, SimTime::MAX));
    let got = ids(&out);
    assert_eq!(got.len(), 300);
    assert!(got.windows(2).all(|w| w[0].0 < w[1].0));
    let given_up = got.iter().filter(|g| g.1.is_some()).count();
    assert!(
        got.iter()
            .all(|g| g.1.is_none() || g.1 == Some(DropCause::ArqGiveUp)),
        "{got:?}"
    );
    // 23 frames per unit, p^3 = 1.25e-4 per frame: about 0.3 % of units.
    assert!(given_up < 10, "{given_up}");
    assert!(d.conservation_holds());
}

#[test]
fn departures_are_logged_when_packets_leave_the_mlppp_queue() {
    let cfg = dir_cfg(1, 2400, 500, None);
    let mut d = up_dir(&cfg, no_loss(1));
    d.set_departure_log(true);
    for i in 0..4 {
        d.offer(SimTime::ZERO, pkt(i, 300)).unwrap();
    }
    run_until(&mut d, t_ms(10_000));
    let deps: Vec<(u64, u64)> = std::iter::from_fn(|| d.pop_departure())
        .map(|x| (x.at.as_nanos() / MS, x.pkt.id))
        .collect();
    // Three fit in the transmit queue at once; the fourth when the first is sent.
    assert_eq!(deps, vec![(0, 0), (0, 1), (0, 2), (1_000, 3)]);
}

#[test]
fn steady_state_does_not_grow_buffers() {
    // Eight ARQ members under load, with a call drop and a return every few minutes: after
    // the first drop cycle no queue, reassembly buffer or member buffer grows.
    let cfg = dir_cfg(8, 2400, 500, Some(ArqMode::SelectiveRepeat));
    let losses = (0..8)
        .map(|i| Bernoulli::new(0.013, StreamRng::derive(6, &format!("mem{i}"))).unwrap())
        .collect();
    let mut d = up_dir(&cfg, losses);
    let caps = |d: &BundleDir<Bernoulli>| {
        let mut c = vec![
            d.queue.capacity(),
            d.reasm.pending.capacity(),
            d.reasm.out.capacity(),
            d.scratch.capacity(),
        ];
        c.extend(d.members.iter().map(|m| m.void.capacity()));
        c
    };
    let mut now = SimTime::ZERO;
    let mut snapshot = None;
    for i in 0..6_000u64 {
        while d.queue_len_pkts() >= 20 {
            now = d.next_wakeup().unwrap().max(now);
            while d.poll(now).is_some() {}
        }
        let _ = d.offer(now, pkt(i, 1500));
        if i % 500 == 250 {
            let m = (i / 500) as usize % 8;
            d.member_lost(now, m);
            d.set_usable(now + SimDuration::from_secs(30), m, false);
            d.member_up(now + SimDuration::from_secs(75), m);
            d.set_usable(now + SimDuration::from_secs(75), m, true);
            now += SimDuration::from_secs(75);
        }
        if i == 2_000 {
            snapshot = Some(caps(&d));
        }
    }
    assert_eq!(Some(caps(&d)), snapshot);
    assert!(d.conservation_holds());
}

// ----- control plane -----

fn control_cfg(n: u32, primary: bool, start_connected: bool) -> ControlConfig {
    ControlConfig {
        supervisor: SupervisorConfig {
            members: n,
            modem: ModemConfig::default(),
            primary,
            start_connected,
        },
        detection_delay: SimDuration::from_secs(30),
        member_rates: vec![BitRate::from_bps(2400); n as usize],
    }
}

fn commands(c: &mut BundleControl) -> Vec<ControlCommand> {
    std::iter::from_fn(|| c.poll_command()).collect()
}

#[test]
fn control_brings_members_up_and_reports_capacity_once() {
    let mut c = BundleControl::new(control_cfg(2, false, true), SimTime::ZERO).unwrap();
    let cmds = commands(&mut c);
    assert!(cmds.contains(&ControlCommand::CarrierUp { member: 0, conn: 1 }));
    assert!(cmds.contains(&ControlCommand::CarrierUp { member: 1, conn: 2 }));
    assert!(cmds.contains(&ControlCommand::Usable {
        member: 1,
        usable: true
    }));
    let caps: Vec<_> = cmds
        .iter()
        .filter(|c| matches!(c, ControlCommand::Capacity { .. }))
        .collect();
    assert_eq!(
        caps,
        vec![&ControlCommand::Capacity {
            members_up: 2,
            capacity_bps: 4800
        }]
    );
    assert_eq!(c.next_wakeup(), None);
}

#[test]
fn a_call_drop_is_noticed_after_the_detection_delay() {
    let mut c = BundleControl::new(control_cfg(2, false, true), SimTime::ZERO).unwrap();
    commands(&mut c);
    c.on_call_drop(t_ms(1_000), 1, 2);
    assert_eq!(
        commands(&mut c),
        vec![
            ControlCommand::CarrierLost { member: 1 },
            ControlCommand::State {
                member: 1,
                state: MemberState::CallLost
            }
        ]
    );
    // A second draw for the same call, or one for another call, is ignored.
    c.on_call_drop(t_ms(1_500), 1, 2);
    c.on_call_drop(t_ms(1_500), 0, 99);
    assert!(commands(&mut c).is_empty());
    assert_eq!(c.next_wakeup(), Some(t_ms(31_000)));
    c.on_timer(t_ms(31_000));
    let cmds = commands(&mut c);
    assert_eq!(
        cmds,
        vec![
            ControlCommand::State {
                member: 1,
                state: MemberState::Dropped
            },
            ControlCommand::Usable {
                member: 1,
                usable: false
            },
            ControlCommand::Capacity {
                members_up: 1,
                capacity_bps: 2400
            }
        ]
    );
    // T_d = 30 s later it dials.
    assert_eq!(c.next_wakeup(), Some(t_ms(61_000)));
    c.on_timer(t_ms(61_000));
    let cmds = commands(&mut c);
    let Some(&ControlCommand::Dial { member: 1, attempt }) = cmds
        .iter()
        .find(|c| matches!(c, ControlCommand::Dial { .. }))
    else {
        panic!("{cmds:?}")
    };
    c.on_dial_result(t_ms(75_000), 1, attempt, true);
    let cmds = commands(&mut c);
    assert!(cmds.contains(&ControlCommand::CarrierUp { member: 1, conn: 3 }));
    assert_eq!(c.stats().call_drops, 1);
    assert_eq!(c.stats().supervisor.call_drops, 1);
    // Availability: both up 0–31 s and 75–100 s, one up 31–75 s.
    let a = c.availability(t_ms(100_000));
    assert_eq!(a.all_up_ns, 56_000 * MS);
    assert_eq!(a.any_up_ns, 100_000 * MS);
    assert_eq!(a.member_up_ns, vec![100_000 * MS, 56_000 * MS]);
    assert_eq!(a.outages, 0);
}

#[test]
fn losing_the_primary_hangs_up_the_secondaries() {
    let mut c = BundleControl::new(control_cfg(3, true, true), SimTime::ZERO).unwrap();
    commands(&mut c);
    c.on_call_drop(t_ms(1_000), 0, 1);
    commands(&mut c);
    c.on_timer(t_ms(31_000));
    let cmds = commands(&mut c);
    for m in [1, 2] {
        assert!(cmds.contains(&ControlCommand::CarrierLost { member: m }));
        assert!(cmds.contains(&ControlCommand::Usable {
            member: m,
            usable: false
        }));
    }
    assert!(cmds.contains(&ControlCommand::Capacity {
        members_up: 0,
        capacity_bps: 0
    }));
    assert_eq!(c.stats().hangups, 2);
    assert_eq!(c.stats().supervisor.teardowns, 1);
    // Member 1 (no drops) is the new primary and dials at once.
    assert!(cmds
        .iter()
        .any(|c| matches!(c, ControlCommand::Dial { member: 1, .. })));
    assert_eq!(c.availability(t_ms(40_000)).outages, 1);
}

/// Drives a control plane as the engine does: exponential call drops of rate `beta` per
/// second while a call is up, dials answering after `dial_s` and failing with probability `q`.
fn drive_control(c: &mut BundleControl, beta: f64, dial_s: f64, q: f64, until: SimTime, seed: u64) {
    let n = c.supervisor().config().members as usize;
    let mut rng = StreamRng::derive(seed, "test/control");
    let mut drop_at: Vec<Option<(SimTime, u32)>> = vec![None; n];
    let mut dial_at: Vec<Option<(SimTime, u32, bool)>> = vec![None; n];
    let mut now = SimTime::ZERO;
    loop {
        while let Some(cmd) = c.poll_command() {
            match cmd {
                ControlCommand::CarrierUp { member, conn } => {
                    let gap = SimDuration::from_secs_f64(rng.exponential(1.0 / beta));
                    drop_at[member as usize] = Some((now + gap, conn));
                }
                ControlCommand::Dial { member, attempt } => {
                    let ok = !rng.bernoulli(q);
                    dial_at[member as usize] =
                        Some((now + SimDuration::from_secs_f64(dial_s), attempt, ok));
                }
                _ => {}
            }
        }
        let next_drop = (0..n).filter_map(|m| drop_at[m].map(|d| (d.0, m))).min();
        let next_dial = (0..n).filter_map(|m| dial_at[m].map(|d| (d.0, m))).min();
        let next_timer = c.next_wakeup();
        let t = [next_drop.map(|d| d.0), next_dial.map(|d| d.0), next_timer]
            .into_iter()
            .flatten()
            .min()
            .unwrap();
        if t > until {
            break;
        }
        now = t;
        if next_timer == Some(t) {
            c.on_timer(t);
        } else if let Some((at, m)) = next_drop.filter(|d| d.0 == t) {
            let (_, conn) = drop_at[m].take().unwrap();
            c.on_call_drop(at, m as u32, conn);
        } else if let Some((at, m)) = next_dial.filter(|d| d.0 == t) {
            let (_, attempt, ok) = dial_at[m].take().unwrap();
            c.on_dial_result(at, m as u32, attempt, ok);
        }
    }
}

#[test]
fn availability_of_independent_members_matches_the_alternating_renewal_formula() {
    // Each member is up (in the KUMICS log's sense) for an exponential time of mean 1/β plus
    // the detection delay, then down for T_d + the dial time; so it is up with probability
    // A = (1/β + T_det) / (1/β + T_det + T_d + t_dial), and all eight with A^8: the formula
    // the dial time of the presets is fitted with (docs/far-links.md).
    let beta = 1.0 / 3000.0;
    let (t_det, t_d, dial) = (30.0, 30.0, 14.5);
    let mut cfg = control_cfg(8, false, true);
    cfg.supervisor.modem.t_d = SimDuration::from_secs(30);
    let mut c = BundleControl::new(cfg, SimTime::ZERO).unwrap();
    let until = SimTime::ZERO + SimDuration::from_secs(20_000 * 3600);
    drive_control(&mut c, beta, dial, 0.0, until, 1);
    let a = c.availability(until);
    let up = (1.0 / beta + t_det) / (1.0 / beta + t_det + t_d + dial);
    let all = a.all_up_ns as f64 / a.observed_ns as f64;
    assert!((all - up.powi(8)).abs() < 0.004, "{all} vs {}", up.powi(8));
    let member = a.member_up_ns[3] as f64 / a.observed_ns as f64;
    assert!((member - up).abs() < 0.002, "{member} vs {up}");
    assert_eq!(a.outages, 0);
}

#[test]
fn failed_dials_and_blocking_lengthen_the_redial() {
    // With dials failing half the time, a redial takes on average one extra failure
    // (T_f + dial), and some modems end up blocked.
    let mut cfg = control_cfg(4, false, true);
    cfg.supervisor.modem.max_attempts = 3;
    let mut c = BundleControl::new(cfg, SimTime::ZERO).unwrap();
    let until = SimTime::ZERO + SimDuration::from_secs(2_000 * 3600);
    drive_control(&mut c, 1.0 / 3000.0, 14.5, 0.5, until, 2);
    let s = c.stats().supervisor;
    assert!(s.blocks > 0);
    let fail_share = s.dial_failures as f64 / s.dials as f64;
    assert!((fail_share - 0.5).abs() < 0.03, "{fail_share}");
    let a = c.availability(until);
    assert!(
        a.any_up_ns < a.observed_ns,
        "some hours with every modem blocked or redialling"
    );
}

// ----- properties -----

/// One fragment's fate in the reassembly property test.
#[derive(Clone, Copy, Debug)]
struct Frag {
    member: usize,
    /// Extra delay on top of the member's FIFO order, ms.
    jitter: u64,
    lost: bool,
}

fn frag_strategy(members: usize) -> impl Strategy<Value = Frag> {
    (0..members, 0u64..5_000, proptest::bool::weighted(0.15)).prop_map(|(member, jitter, lost)| {
        Frag {
            member,
            jitter,
            lost,
        }
    })
}

proptest! {
    /// Packets of 1 to 4 fragments spread over members that each deliver in order but with
    /// their own delays (so fragments and packets arrive out of order across members), some
    /// fragments lost. With a timer longer than any delay: every packet is resolved once, in
    /// sequence order; a packet is delivered exactly when all its fragments arrived; a packet
    /// is given up only for a fragment really lost, with that fragment's cause.
    #[test]
    fn reassembly_against_reordering_and_loss(
        packets in proptest::collection::vec(
            (1usize..5).prop_flat_map(|k| proptest::collection::vec(frag_strategy(3), k)),
            1..40),
        gap_ms in 0u64..2_000,
    ) {
        let members = 3;
        let mut r = Reassembly::new(members, SimDuration::from_secs(3_600));
        for m in 0..members {
            r.join(m, 0);
        }
        // Sending times and arrival times: each member is FIFO (an arrival is never before
        // the previous arrival on the same member).
        let mut seq = 0u64;
        let mut last_arrival = vec![0u64; members];
        let mut events: Vec<(u64, u64, usize, bool)> = Vec::new(); // (time, seq, member, lost)
        let mut truth = Vec::new(); // per packet: all fragments arrive
        for (p, frags) in packets.iter().enumerate() {
            let sent = p as u64 * gap_ms;
            r.push(pkt(p as u64, 100), seq, frags.len() as u32);
            let mut whole = true;
            for f in frags {
                let arrive = (sent + 100 + f.jitter).max(last_arrival[f.member]);
                last_arrival[f.member] = arrive;
                events.push((arrive, seq, f.member, f.lost));
                whole &= !f.lost;
                seq += 1;
            }
            truth.push(whole);
        }
        events.sort_by_key(|e| (e.0, e.1));
        let mut out = Vec::new();
        for &(time, s, member, lost) in &events {
            if lost {
                r.on_lost(s, DropCause::Corruption);
            } else {
                r.on_arrival(member, s);
            }
            r.release(t_ms(time));
            out.extend(drain_reasm(&mut r));
        }
        // Losses at the tail can only be inferred by the timer, or once the members leave.
        if let Some(deadline) = r.deadline() {
            r.release(deadline);
            out.extend(drain_reasm(&mut r));
        }
        for m in 0..members {
            r.leave(m);
        }
        r.release(t_ms(10_000_000));
        out.extend(drain_reasm(&mut r));
        let got = ids(&out);
        prop_assert_eq!(got.len(), packets.len(), "{:?}", got);
        for (i, (id, cause)) in got.iter().enumerate() {
            prop_assert_eq!(*id, i as u64);
            if truth[i] {
                prop_assert_eq!(*cause, None);
            } else {
                prop_assert!(matches!(cause, Some(DropCause::Corruption) | Some(DropCause::ReassemblyTimeout)), "{:?}", cause);
            }
        }
        prop_assert_eq!(r.pending_pkts(), 0);
        // Only losses nothing later could reveal (at the tail of some member) need the timer.
        prop_assert!(r.stats().timeouts <= packets.len() as u64);
    }

    /// One direction under random traffic, member call drops, departures and returns, with or
    /// without ARQ and fragmentation, members of different delays: conservation at every step,
    /// packets resolved once each and in the order they were accepted.
    #[test]
    fn bundle_direction_conserves_and_keeps_order(
        ops in proptest::collection::vec((0u64..3_000, 1u32..1500, 0u8..12, 0usize..3), 1..80),
        arq in 0u8..3,
        fragment in any::<bool>(),
        p in 0.0f64..0.2,
    ) {
        let mode = match arq { 0 => None, 1 => Some(ArqMode::GoBackN), _ => Some(ArqMode::SelectiveRepeat) };
        let mut cfg = dir_cfg(3, 9_600, 100, mode);
        for (i, m) in cfg.members.iter_mut().enumerate() {
            m.delay = SimDuration::from_millis(50 + 300 * i as u64);
        }
        cfg.fragment = fragment;
        cfg.mp_header_bytes = 4;
        cfg.queue_limit = QueueLimit::Packets(6);
        cfg.reassembly_timeout = SimDuration::from_secs(20);
        let losses = (0..3)
            .map(|i| Bernoulli::new(p, StreamRng::derive(8, &format!("prop/{i}"))).unwrap())
            .collect();
        let mut d = up_dir(&cfg, losses);
        let mut carrier = [true; 3];
        let mut now = SimTime::ZERO;
        let mut out = Vec::new();
        let mut accepted = Vec::new();
        for (i, (dt, size, action, m)) in ops.into_iter().enumerate() {
            now += SimDuration::from_millis(dt);
            while let Some(e) = d.poll(now) { out.push(e); }
            match action {
                0 if carrier[m] => { d.member_lost(now, m); carrier[m] = false; }
                1 => d.set_usable(now, m, false),
                2 if !carrier[m] => { d.member_up(now, m); carrier[m] = true; d.set_usable(now, m, true); }
                3 => d.set_usable(now, m, carrier[m]),
                _ => {}
            }
            if d.offer(now, pkt(i as u64, size)).is_ok() {
                accepted.push(i as u64);
            }
            prop_assert!(d.conservation_holds());
        }
        // Drain the MLPPP queue through member 0, then bring everything down: the rest must
        // resolve.
        let end = now + SimDuration::from_secs(5);
        out.extend(run_until(&mut d, end));
        if !carrier[0] { d.member_up(end, 0); }
        d.set_usable(end, 0, true);
        let later = end + SimDuration::from_secs(600);
        out.extend(run_until(&mut d, later));
        prop_assert_eq!(d.queue_len_pkts(), 0);
        for m in 0..3 { d.set_usable(later, m, false); }
        out.extend(run_until(&mut d, SimTime::MAX));
        prop_assert!(d.conservation_holds());
        prop_assert_eq!(d.in_flight_pkts(), 0);
        let got: Vec<u64> = ids(&out).into_iter().map(|g| g.0).collect();
        prop_assert_eq!(got, accepted);
    }
}

#[test]
fn a_huge_transmit_queue_bound_reserves_nothing_up_front() {
    // txqueue_pkts = u32::MAX used to reserve 4 G slots (103 GB) per member and abort.
    let mut c = dir_cfg(8, 2400, 500, None);
    for m in &mut c.members {
        m.txqueue_pkts = u32::MAX;
    }
    let mut d = up_dir(&c, no_loss(8));
    for id in 0..50 {
        assert!(d.offer(SimTime::ZERO, pkt(id, 100)).is_ok());
    }
    let delivered = run_until(&mut d, t_ms(60_000));
    assert_eq!(delivered.len(), 50);
}
