//! DualPI2, the Dual-Queue Coupled AQM of RFC 9332 with a PI2 base AQM: an L4S queue for
//! packets whose ECN field is ECT(1) or CE (RFC 9331's identifier) and a Classic queue for the
//! rest, one buffer limit over both, a scheduler between them, and one controller whose output
//! couples the two.
//!
//! Read first: RFC 9332 section 2.4 (the coupling: p_CL = k p', p_C = p'^2), 2.5.1 (the L4S
//! queue's native step AQM beside the coupled probability), 2.5.2 (the Classic PI2 AQM),
//! 4.1 (the classifier: ECT(1) and CE to the L4S queue), 4.2.2 (the scheduler: a time-shifted
//! FIFO), 4.2.3 (overload), and Appendix A (the pseudocode: A.1's parameters and update, A.2's
//! step threshold in time and bytes).
//!
//! What this component does, citing where:
//! * **Classifier** (section 4.1; A.1 `dualpi2_enqueue`): ECT(1) and CE go to the L4S queue,
//!   Not-ECT and ECT(0) to the Classic queue. An arrival that does not fit the link's limit,
//!   counted over both queues (A.1: one `limit` for the dual buffer), is dropped
//!   ([`DropCause::QueueOverflow`]).
//! * **Base controller, PI2** (section 2.5.2; A.1 `dualpi2_update`): every `tupdate`,
//!   `p' += alpha (q - target) + beta (q - q_old)`, clamped to [0, 1], where q is the Classic
//!   queue's delay (the sojourn so far of its head packet, zero when it is empty: A.1's
//!   `cq.time()`). Like PIE's here, the periodic updates are caught up lazily at the next
//!   call: between calls neither queue changes, so the delay each update reads is known.
//! * **Coupling** (section 2.4): the L4S queue's coupled probability p_CL = k p' (capped at 1)
//!   and the Classic probability p_C = p'^2, k = 2 by default (section 2.4: "k = 2").
//! * **L4S queue at dequeue** (section 2.5.1.1; A.2's step): a packet is marked CE if its
//!   sojourn exceeds `step_thresh` while the L4S queue holds more than `step_min_bytes`
//!   (A.2: T_time = 1 ms, T_len = 2 MTU, so a lone packet on a slow link is not marked), else
//!   with probability p_CL (p_L = max(native, p_CL), section 2.5.1.2).
//! * **Classic queue at dequeue** (A.1 `dualpi2_dequeue`): with probability p_C a packet is
//!   dropped, or marked CE if it is ECT(0) and `ecn` is on.
//! * **Overload** (section 4.2.3): while p_C exceeds p_Cmax = min(1/k^2, 1), ECN no longer
//!   shields either queue: a Classic ECT packet chosen with p_C is dropped, and an L4S packet
//!   is dropped with probability p_C (before its marking), so an unresponsive L4S sender
//!   cannot hold the buffer.
//! * **Scheduler** (section 4.2.2, the time-shifted FIFO): the head whose sojourn is the
//!   longest goes first, the L4S head's sojourn counted `tshift` longer; so the L4S queue is
//!   served first unless the Classic head has waited `tshift` longer than it (no starvation).
//!   RFC 9332 A.1 leaves the scheduler's parameter unshown ("NOT SHOWN"); the weighted round
//!   robin it also allows is not built here.
//!
//! Random decisions draw from the queue's own stream (one uniform per decision), so a seed
//! gives the same marks and drops on every machine.

use super::{dropped, fits, AqmEvent, Dequeued, StateLog, TimedFifo, Verdict};
use crate::links::link::{DropCause, Ecn, LinkEvent, Packet, QueueLimit};
use crate::rng::StreamRng;
use crate::time::{SimDuration, SimTime};
use std::collections::VecDeque;

/// DualPI2's parameters and their defaults (RFC 9332 A.1 Figure 2, A.2 for the step).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DualPi2Params {
    /// The Classic queue's delay target (A.1: 15 ms).
    pub target: SimDuration,
    /// The controller's update interval. A.1 derives `Tupdate = min(target, RTT_max / 3)`
    /// (15 ms); the default here is 16 ms, Linux's sch_dualpi2 default, a value of the same
    /// order.
    pub tupdate: SimDuration,
    /// Integral gain, Hz (A.1: `0.1 Tupdate / RTT_max^2` with RTT_max = 100 ms: 0.16 at a
    /// 16 ms Tupdate).
    pub alpha: f64,
    /// Proportional gain, Hz (A.1: `0.3 / RTT_max` with RTT_max = 100 ms: 3; Linux's
    /// sch_dualpi2 defaults to 3.2, 819/256).
    pub beta: f64,
    /// The coupling factor k (section 2.4: 2).
    pub coupling: f64,
    /// The L4S queue's step threshold in sojourn time (A.2's T_time: 1 ms).
    pub step_thresh: SimDuration,
    /// Below this many bytes in the L4S queue the step does not mark (A.2's T_len: 2 MTU,
    /// 3000 bytes).
    pub step_min_bytes: u64,
    /// The time-shifted FIFO's shift given to the L4S queue's head (section 4.2.2).
    pub tshift: SimDuration,
    /// Mark ECT(0) Classic packets instead of dropping them (RFC 3168).
    pub ecn: bool,
}

impl Default for DualPi2Params {
    fn default() -> Self {
        let tupdate = SimDuration::from_millis(16);
        let rtt_max_s = 0.1;
        DualPi2Params {
            target: SimDuration::from_millis(15),
            tupdate,
            alpha: 0.1 * tupdate.as_secs_f64() / (rtt_max_s * rtt_max_s),
            beta: 0.3 / rtt_max_s,
            coupling: 2.0,
            step_thresh: SimDuration::from_millis(1),
            step_min_bytes: 2 * 1500,
            // farlink's choice (the RFC shows none): long against the L4S queue's 1 ms and the
            // Classic target of 15 ms, so the L4S queue keeps its priority in normal operation,
            // and a Classic packet is never held more than 50 ms behind L4S traffic.
            tshift: SimDuration::from_millis(50),
            ecn: true,
        }
    }
}

/// A.1 `dualpi2_update`: the base probability p' after one update that read the Classic
/// queue delay `q_s` (seconds), the previous update having read `q_old_s`; clamped to [0, 1].
pub(crate) fn pi2_update(p: &DualPi2Params, base: f64, q_s: f64, q_old_s: f64) -> f64 {
    let target_s = p.target.as_secs_f64();
    let next = base + p.alpha * (q_s - target_s) + p.beta * (q_s - q_old_s);
    next.clamp(0.0, 1.0)
}

/// Section 2.4: the L4S queue's coupled probability `k p'` (at most 1) and the Classic
/// probability `p'^2`.
pub(crate) fn coupled(k: f64, base: f64) -> (f64, f64) {
    ((k * base).min(1.0), base * base)
}

#[derive(Debug)]
pub struct DualPi2 {
    params: DualPi2Params,
    limit: QueueLimit,
    pub(crate) l4s: TimedFifo,
    pub(crate) classic: TimedFifo,
    rng: StreamRng,
    /// p', the PI2 controller's output.
    base_prob: f64,
    /// The Classic delay the last update read (A.1's `prevq`).
    q_old: SimDuration,
    next_update: SimTime,
    /// p_Cmax = min(1/k^2, 1) (A.1 Figure 2).
    p_c_max: f64,
    /// The changes of p', for the `aqm` trace.
    pub(crate) log: StateLog,
}

impl DualPi2 {
    pub fn new(params: DualPi2Params, limit: QueueLimit, rng: StreamRng) -> Self {
        DualPi2 {
            params,
            limit,
            l4s: TimedFifo::default(),
            classic: TimedFifo::default(),
            rng,
            base_prob: 0.0,
            q_old: SimDuration::ZERO,
            next_update: SimTime::ZERO + params.tupdate,
            p_c_max: (1.0 / (params.coupling * params.coupling)).min(1.0),
            log: StateLog::default(),
        }
    }

    /// p' (for traces and tests).
    pub fn base_prob(&self) -> f64 {
        self.base_prob
    }

    pub(crate) fn len_pkts(&self) -> usize {
        self.l4s.len_pkts() + self.classic.len_pkts()
    }

    pub(crate) fn len_bytes(&self) -> u64 {
        self.l4s.len_bytes() + self.classic.len_bytes()
    }

    /// Every packet out: the L4S line's, then the Classic line's, each head first.
    pub(crate) fn drain(&mut self, mut take: impl FnMut(Packet)) {
        self.l4s.drain(&mut take);
        self.classic.drain(take);
    }

    /// The updates due up to `now`, each reading the Classic head's sojourn at its own instant.
    fn catch_up(&mut self, now: SimTime) {
        while self.next_update <= now {
            let at = self.next_update;
            let q = self
                .classic
                .head_since()
                .map_or(SimDuration::ZERO, |since| at.saturating_since(since));
            let (q_s, q_old_s) = (q.as_secs_f64(), self.q_old.as_secs_f64());
            let before = self.base_prob;
            self.base_prob = pi2_update(&self.params, self.base_prob, q_s, q_old_s);
            if self.log.is_on() && self.base_prob != before {
                self.log
                    .push(at, 0, AqmEvent::BaseProbability, self.base_prob);
            }
            self.q_old = q;
            self.next_update += self.params.tupdate;
        }
    }

    /// Section 4.1: ECT(1) and CE are the L4S identifier.
    fn is_l4s(ecn: Ecn) -> bool {
        matches!(ecn, Ecn::Ect1 | Ecn::Ce)
    }

    pub fn enqueue(&mut self, now: SimTime, pkt: Packet) -> Verdict {
        self.catch_up(now);
        if !fits(
            self.limit,
            self.len_pkts(),
            self.len_bytes(),
            pkt.size_bytes,
        ) {
            return Verdict::Dropped(DropCause::QueueOverflow);
        }
        if Self::is_l4s(pkt.ecn) {
            self.l4s.push(now, pkt);
        } else {
            self.classic.push(now, pkt);
        }
        Verdict::Queued
    }

    /// Section 4.2.2: the L4S queue goes next unless the Classic head has waited `tshift`
    /// longer than the L4S head.
    fn l4s_next(&self, now: SimTime) -> Option<bool> {
        match (self.l4s.head_since(), self.classic.head_since()) {
            (None, None) => None,
            (Some(_), None) => Some(true),
            (None, Some(_)) => Some(false),
            (Some(l), Some(c)) => {
                let l_sojourn = now.saturating_since(l) + self.params.tshift;
                Some(l_sojourn >= now.saturating_since(c))
            }
        }
    }

    pub fn dequeue(&mut self, now: SimTime, evicted: &mut VecDeque<LinkEvent>) -> Option<Dequeued> {
        self.catch_up(now);
        let (p_cl, p_c) = coupled(self.params.coupling, self.base_prob);
        let overload = p_c > self.p_c_max;
        while let Some(l4s) = self.l4s_next(now) {
            let out = if l4s {
                self.dequeue_l4s(now, p_cl, p_c, overload)
            } else {
                self.dequeue_classic(p_c, overload)
            };
            match out {
                Ok(d) => return Some(d),
                Err(pkt) => evicted.push_back(dropped(now, pkt, DropCause::Aqm)),
            }
        }
        None
    }

    /// The L4S head's fate: sent (marked or not), or dropped (`Err`) under overload.
    fn dequeue_l4s(
        &mut self,
        now: SimTime,
        p_cl: f64,
        p_c: f64,
        overload: bool,
    ) -> Result<Dequeued, Packet> {
        let queued_bytes = self.l4s.len_bytes();
        let (mut pkt, since) = self.l4s.pop().expect("the scheduler chose a busy queue");
        if overload && self.rng.uniform() < p_c {
            return Err(pkt);
        }
        let step = now.saturating_since(since) > self.params.step_thresh
            && queued_bytes > self.params.step_min_bytes;
        let mark = step || (p_cl > 0.0 && self.rng.uniform() < p_cl);
        // A packet already CE stays CE; only a new mark counts as this queue's.
        let marked = mark && pkt.ecn == Ecn::Ect1;
        if mark {
            pkt.ecn = Ecn::Ce;
        }
        Ok(Dequeued {
            pkt,
            marked,
            enqueued_at: Some(since),
        })
    }

    /// The Classic head's fate: sent (marked or not), or dropped (`Err`) with p_C.
    fn dequeue_classic(&mut self, p_c: f64, overload: bool) -> Result<Dequeued, Packet> {
        let (mut pkt, since) = self
            .classic
            .pop()
            .expect("the scheduler chose a busy queue");
        if p_c > 0.0 && self.rng.uniform() < p_c {
            if self.params.ecn && !overload && pkt.ecn == Ecn::Ect0 {
                pkt.ecn = Ecn::Ce;
                return Ok(Dequeued {
                    pkt,
                    marked: true,
                    enqueued_at: Some(since),
                });
            }
            return Err(pkt);
        }
        Ok(Dequeued {
            pkt,
            marked: false,
            enqueued_at: Some(since),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> SimTime {
        SimTime::from_nanos(x * 1_000_000)
    }

    fn pkt(id: u64, ecn: Ecn) -> Packet {
        Packet {
            id,
            size_bytes: 1500,
            flow: 0,
            ecn,
        }
    }

    fn dualpi2(params: DualPi2Params) -> DualPi2 {
        DualPi2::new(
            params,
            QueueLimit::Packets(10_000),
            StreamRng::derive(3, "queue:dualpi2:test"),
        )
    }

    /// A queue whose controller never updates, its p' fixed at `base`.
    fn frozen(base: f64) -> DualPi2 {
        let mut q = dualpi2(DualPi2Params {
            tupdate: SimDuration::from_secs(1_000_000),
            ..DualPi2Params::default()
        });
        q.base_prob = base;
        q
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn defaults_are_rfc_9332s() {
        let d = DualPi2Params::default();
        assert_eq!(d.target, SimDuration::from_millis(15));
        assert_eq!(d.tupdate, SimDuration::from_millis(16));
        // A.1: alpha = 0.1 Tupdate / RTT_max^2, beta = 0.3 / RTT_max, RTT_max = 100 ms.
        assert!(close(d.alpha, 0.16), "{}", d.alpha);
        assert!(close(d.beta, 3.0), "{}", d.beta);
        assert_eq!(d.coupling, 2.0);
        assert_eq!(d.step_thresh, SimDuration::from_millis(1));
        assert_eq!(d.step_min_bytes, 3000);
        assert!(close(dualpi2(d).p_c_max, 0.25));
    }

    #[test]
    fn pi2_update_is_proportional_integral_and_clamped() {
        let p = DualPi2Params::default();
        // 25 ms of Classic delay, 0 before: 0.16 x 0.010 + 3 x 0.025 = 0.0766.
        assert!(close(pi2_update(&p, 0.0, 0.025, 0.0), 0.0766));
        // Steady at 25 ms: only the integral term, 0.16 x 0.010 = 0.0016 per update.
        assert!(close(pi2_update(&p, 0.1, 0.025, 0.025), 0.1016));
        // Below target and falling: down, but never below 0; never above 1.
        assert!(close(
            pi2_update(&p, 0.1, 0.005, 0.015),
            0.1 - 0.0016 - 0.03
        ));
        assert_eq!(pi2_update(&p, 0.01, 0.0, 0.015), 0.0);
        assert_eq!(pi2_update(&p, 0.99, 1.0, 0.0), 1.0);
    }

    #[test]
    fn coupling_is_k_times_base_for_l4s_and_its_square_for_classic() {
        let (p_cl, p_c) = coupled(2.0, 0.1);
        assert!(close(p_cl, 0.2) && close(p_c, 0.01));
        let (p_cl, p_c) = coupled(2.0, 0.3);
        assert!(close(p_cl, 0.6) && close(p_c, 0.09));
        // p_CL saturates at 1 from p' = 1/k on.
        let (p_cl, p_c) = coupled(2.0, 0.6);
        assert!(close(p_cl, 1.0) && close(p_c, 0.36));
    }

    #[test]
    fn updates_are_caught_up_at_each_tupdate_from_the_classic_heads_sojourn() {
        let mut q = dualpi2(DualPi2Params::default());
        assert_eq!(q.enqueue(ms(0), pkt(0, Ecn::NotEct)), Verdict::Queued);
        // Nothing due before 16 ms.
        q.enqueue(ms(15), pkt(1, Ecn::Ect1));
        assert_eq!(q.base_prob(), 0.0);
        // At 16 ms the head has waited 16 ms: 0.16 x 0.001 + 3 x 0.016 = 0.04816; at 32 ms,
        // 32 ms: + 0.16 x 0.017 + 3 x 0.016 = 0.09888. The L4S packet plays no part.
        q.enqueue(ms(40), pkt(2, Ecn::NotEct));
        assert!(close(q.base_prob(), 0.09888), "{}", q.base_prob());
    }

    /// Marks and drops of `n` packets of `ecn`, each enqueued and dequeued at once (no
    /// sojourn: the step does not fire), through a queue with p' fixed at `base`.
    fn fractions(base: f64, ecn: Ecn, n: u64) -> (f64, f64) {
        let mut q = frozen(base);
        let mut ev = VecDeque::new();
        let (mut marked, mut dropped) = (0u64, 0u64);
        for i in 0..n {
            q.enqueue(ms(i), pkt(i, ecn));
            match q.dequeue(ms(i), &mut ev) {
                Some(d) if d.marked => {
                    assert_eq!(d.pkt.ecn, Ecn::Ce);
                    marked += 1;
                }
                Some(_) => {}
                None => dropped += 1,
            }
        }
        assert_eq!(dropped as usize, ev.len());
        (marked as f64 / n as f64, dropped as f64 / n as f64)
    }

    #[test]
    fn l4s_packets_are_marked_with_k_p_and_classic_ones_signalled_with_p_squared() {
        let n = 40_000;
        // p' = 0.1: L4S marked with 0.2, never dropped.
        let (m, d) = fractions(0.1, Ecn::Ect1, n);
        assert!(
            (m - 0.2).abs() < 0.01 && d == 0.0,
            "L4S marked {m}, dropped {d}"
        );
        // Classic Not-ECT dropped with 0.01.
        let (m, d) = fractions(0.1, Ecn::NotEct, n);
        assert!(
            m == 0.0 && (d - 0.01).abs() < 0.002,
            "Classic marked {m}, dropped {d}"
        );
        // Classic ECT(0) marked with 0.01 instead.
        let (m, d) = fractions(0.1, Ecn::Ect0, n);
        assert!(
            (m - 0.01).abs() < 0.002 && d == 0.0,
            "ECT(0) marked {m}, dropped {d}"
        );
        // Overload (p_C = 0.36 above p_Cmax = 0.25): ECT(0) is dropped, not marked, and L4S
        // packets are dropped with p_C, the rest marked (p_CL = 1).
        let (m, d) = fractions(0.6, Ecn::Ect0, n);
        assert!(
            m == 0.0 && (d - 0.36).abs() < 0.01,
            "overload ECT(0) {m}, {d}"
        );
        let (m, d) = fractions(0.6, Ecn::Ect1, n);
        assert!(
            (d - 0.36).abs() < 0.01 && close(m + d, 1.0),
            "overload L4S {m}, {d}"
        );
    }

    #[test]
    fn the_l4s_step_marks_a_standing_queue_but_not_a_lone_packet() {
        let mut q = frozen(0.0);
        let mut ev = VecDeque::new();
        // A lone packet that waited 5 ms: below the 3000-byte floor, not marked.
        q.enqueue(ms(0), pkt(0, Ecn::Ect1));
        assert!(!q.dequeue(ms(5), &mut ev).unwrap().marked);
        // Three packets (4500 bytes): the head waited 2 ms > 1 ms, marked; the second
        // finds 3000 bytes queued and is not (3000 is not above the floor), nor the third.
        for i in 1..=3 {
            q.enqueue(ms(10), pkt(i, Ecn::Ect1));
        }
        assert!(q.dequeue(ms(12), &mut ev).unwrap().marked);
        assert!(!q.dequeue(ms(12), &mut ev).unwrap().marked);
        assert!(!q.dequeue(ms(12), &mut ev).unwrap().marked);
        // Below the threshold in time, even a long queue is not marked.
        for i in 4..=10 {
            q.enqueue(ms(20), pkt(i, Ecn::Ect1));
        }
        assert!(!q.dequeue(ms(20), &mut ev).unwrap().marked);
        // A CE arrival goes to the L4S queue and stays CE, not counted as a mark of ours.
        let mut q = frozen(0.0);
        q.enqueue(ms(0), pkt(0, Ecn::Ce));
        assert_eq!(q.l4s.len_pkts(), 1);
        let d = q.dequeue(ms(0), &mut ev).unwrap();
        assert!(!d.marked && d.pkt.ecn == Ecn::Ce);
        assert!(ev.is_empty());
    }

    #[test]
    fn the_time_shifted_fifo_serves_l4s_first_unless_classic_waited_tshift_longer() {
        let mut q = frozen(0.0);
        let mut ev = VecDeque::new();
        q.enqueue(ms(0), pkt(0, Ecn::NotEct));
        q.enqueue(ms(10), pkt(1, Ecn::Ect1));
        q.enqueue(ms(10), pkt(2, Ecn::Ect1));
        // At 20 ms: Classic head 20 ms, L4S head 10 + 50: L4S first.
        assert_eq!(q.dequeue(ms(20), &mut ev).unwrap().pkt.id, 1);
        // At 70 ms: Classic 70, L4S 60 + 50: still L4S.
        q.enqueue(ms(69), pkt(3, Ecn::Ect1));
        assert_eq!(q.dequeue(ms(70), &mut ev).unwrap().pkt.id, 2);
        // The next L4S head joined at 69 ms; at 125 ms Classic has waited 125 ms, L4S
        // 56 + 50 = 106: the Classic head goes.
        assert_eq!(q.dequeue(ms(125), &mut ev).unwrap().pkt.id, 0);
        assert_eq!(q.dequeue(ms(125), &mut ev).unwrap().pkt.id, 3);
        assert!(q.dequeue(ms(125), &mut ev).is_none());
    }

    #[test]
    fn the_limit_bounds_both_queues_together() {
        let mut q = DualPi2::new(
            DualPi2Params::default(),
            QueueLimit::Packets(3),
            StreamRng::derive(3, "queue:dualpi2:test"),
        );
        q.enqueue(ms(0), pkt(0, Ecn::Ect1));
        q.enqueue(ms(0), pkt(1, Ecn::NotEct));
        q.enqueue(ms(0), pkt(2, Ecn::Ect1));
        assert_eq!(
            q.enqueue(ms(0), pkt(3, Ecn::NotEct)),
            Verdict::Dropped(DropCause::QueueOverflow)
        );
        assert_eq!((q.len_pkts(), q.len_bytes()), (3, 4500));
        let mut ids = Vec::new();
        q.drain(|p| ids.push(p.id));
        assert_eq!(ids, [0, 2, 1]);
    }
}
