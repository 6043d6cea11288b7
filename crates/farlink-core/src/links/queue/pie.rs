//! PIE, Proportional Integral controller Enhanced (RFC 8033): a drop probability updated every
//! `tupdate` from the queue delay's distance to `target` (proportional, `alpha`) and its
//! change since the last update (integral, `beta`), applied to arrivals at random.
//!
//! The queue delay is the sojourn of the last packet dequeued (the timestamp form, RFC 8033
//! section 5.2 and Linux's default), zero while the queue is empty. The updates are caught up
//! at each enqueue and dequeue: between two calls the queue, hence the delay the updates read,
//! does not change, so the lazy updates are the periodic ones exactly. ECN (section 5.1): an
//! ECN-capable arrival chosen for a drop is marked CE instead while the probability is at most
//! `mark_ecn_threshold` (10 %), and dropped above it.

use super::{fits, signal, AqmEvent, Dequeued, StateLog, TimedFifo, Verdict};
use crate::links::link::{DropCause, Packet, QueueLimit};
use crate::rng::StreamRng;
use crate::time::{SimDuration, SimTime};

/// PIE's parameters (RFC 8033 section 5: QDELAY_REF 15 ms, T_UPDATE 15 ms, alpha 0.125 Hz,
/// beta 1.25 Hz, MAX_BURST 150 ms; section 5.1: ECN marking up to 10 %).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PieParams {
    pub target: SimDuration,
    pub tupdate: SimDuration,
    /// Per second of delay error (the RFC's units: probability per second).
    pub alpha: f64,
    pub beta: f64,
    pub max_burst: SimDuration,
    pub ecn: bool,
    pub mark_ecn_threshold: f64,
}

impl Default for PieParams {
    fn default() -> Self {
        PieParams {
            target: SimDuration::from_millis(15),
            tupdate: SimDuration::from_millis(15),
            alpha: 0.125,
            beta: 1.25,
            max_burst: SimDuration::from_millis(150),
            ecn: true,
            mark_ecn_threshold: 0.1,
        }
    }
}

#[derive(Debug)]
pub struct Pie {
    params: PieParams,
    limit: QueueLimit,
    pub(crate) fifo: TimedFifo,
    rng: StreamRng,
    drop_prob: f64,
    /// The delay the last update read (`qdelay_old_`).
    qdelay_old: SimDuration,
    /// The current delay estimate: the last dequeued packet's sojourn.
    qdelay: SimDuration,
    burst_allowance: SimDuration,
    next_update: SimTime,
    /// Largest packet seen: section 4.1's "2 * MEAN_PKTSIZE" floor uses it.
    max_packet_bytes: u64,
    /// The drop probability after each update that changed it.
    pub(crate) log: StateLog,
}

/// RFC 8033 section 4.2: the proportional-integral step, scaled down while the probability is
/// small so that it is not overshot (the auto-tuning table), and capped at 2 % above 10 %.
pub(crate) fn pie_step(p: &PieParams, drop_prob: f64, qdelay_s: f64, qdelay_old_s: f64) -> f64 {
    let target_s = p.target.as_secs_f64();
    let mut step = p.alpha * (qdelay_s - target_s) + p.beta * (qdelay_s - qdelay_old_s);
    step /= match drop_prob {
        x if x < 0.000_001 => 2048.0,
        x if x < 0.000_01 => 512.0,
        x if x < 0.000_1 => 128.0,
        x if x < 0.001 => 32.0,
        x if x < 0.01 => 8.0,
        x if x < 0.1 => 2.0,
        _ => 1.0,
    };
    if drop_prob >= 0.1 && step > 0.02 {
        step = 0.02;
    }
    step
}

impl Pie {
    pub fn new(params: PieParams, limit: QueueLimit, rng: StreamRng) -> Self {
        Pie {
            params,
            limit,
            fifo: TimedFifo::default(),
            rng,
            drop_prob: 0.0,
            qdelay_old: SimDuration::ZERO,
            qdelay: SimDuration::ZERO,
            burst_allowance: params.max_burst,
            next_update: SimTime::ZERO + params.tupdate,
            max_packet_bytes: 0,
            log: StateLog::default(),
        }
    }

    /// The drop probability (for traces and tests).
    pub fn drop_prob(&self) -> f64 {
        self.drop_prob
    }

    /// Section 4.2, the periodic update, for every `tupdate` boundary up to `now`.
    fn catch_up(&mut self, now: SimTime) {
        while self.next_update <= now {
            let before = self.drop_prob;
            self.update();
            if self.log.is_on() && self.drop_prob != before {
                let (at, p) = (self.next_update, self.drop_prob);
                self.log.push(at, 0, AqmEvent::DropProbability, p);
            }
            self.next_update += self.params.tupdate;
        }
    }

    fn update(&mut self) {
        let p = &self.params;
        let (cur, old) = (self.qdelay.as_secs_f64(), self.qdelay_old.as_secs_f64());
        self.drop_prob += pie_step(p, self.drop_prob, cur, old);
        // Section 4.2: decay while the queue stays empty.
        if self.qdelay == SimDuration::ZERO && self.qdelay_old == SimDuration::ZERO {
            self.drop_prob *= 0.98;
        }
        self.drop_prob = self.drop_prob.clamp(0.0, 1.0);
        // Section 4.4, burst tolerance: full again once the queue is calm, else spent.
        let half = SimDuration::from_nanos(p.target.as_nanos() / 2);
        if self.drop_prob == 0.0 && self.qdelay < half && self.qdelay_old < half {
            self.burst_allowance = p.max_burst;
        } else {
            self.burst_allowance = SimDuration::from_nanos(
                self.burst_allowance
                    .as_nanos()
                    .saturating_sub(p.tupdate.as_nanos()),
            );
        }
        self.qdelay_old = self.qdelay;
    }

    /// Section 4.1, `drop_early`: whether to drop (or mark) an arrival.
    fn drop_early(&mut self, size_bytes: u32) -> bool {
        let half = SimDuration::from_nanos(self.params.target.as_nanos() / 2);
        if self.burst_allowance > SimDuration::ZERO {
            return false;
        }
        if self.qdelay_old < half && self.drop_prob < 0.2 {
            return false;
        }
        let max_packet = self.max_packet_bytes.max(u64::from(size_bytes));
        if self.fifo.len_bytes() <= 2 * max_packet {
            return false;
        }
        self.rng.uniform() < self.drop_prob
    }

    pub fn enqueue(&mut self, now: SimTime, mut pkt: Packet) -> Verdict {
        self.catch_up(now);
        let q = &self.fifo;
        if !fits(self.limit, q.len_pkts(), q.len_bytes(), pkt.size_bytes) {
            return Verdict::Dropped(DropCause::QueueOverflow);
        }
        let mut verdict = Verdict::Queued;
        if self.drop_early(pkt.size_bytes) {
            let markable = self.params.ecn && self.drop_prob <= self.params.mark_ecn_threshold;
            if markable && signal(&mut pkt) {
                verdict = Verdict::Marked;
            } else {
                return Verdict::Dropped(DropCause::Aqm);
            }
        }
        self.max_packet_bytes = self.max_packet_bytes.max(u64::from(pkt.size_bytes));
        self.fifo.push(now, pkt);
        verdict
    }

    pub fn dequeue(&mut self, now: SimTime) -> Option<Dequeued> {
        self.catch_up(now);
        let out = self.fifo.pop();
        self.qdelay = match out {
            Some((_, since)) if self.fifo.len_pkts() > 0 => now.saturating_since(since),
            // The queue is empty after this one: no standing delay to act on.
            _ => SimDuration::ZERO,
        };
        out.map(|(pkt, since)| Dequeued {
            pkt,
            marked: false,
            enqueued_at: Some(since),
        })
    }
}
