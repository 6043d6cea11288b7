//! RED, Random Early Detection (Floyd and Jacobson, "Random Early Detection Gateways for
//! Congestion Avoidance", IEEE/ACM ToN 1(4), 1993; "FJ93" below): an exponentially weighted
//! average of the queue length decides, at each arrival, whether to drop (or mark) it, with a
//! probability rising linearly from 0 at `min_th` to `max_p` at `max_th`, spread evenly over
//! arrivals by the count since the last drop.
//!
//! * **Gentle** (Floyd, "Recommendation on using the gentle_ variant of RED", 2000): between
//!   `max_th` and 2 `max_th` the probability rises from `max_p` to 1 instead of jumping to 1.
//! * **Adaptive** (Floyd, Gummadi and Shenker, "Adaptive RED", 2001, figure 2): every 0.5 s,
//!   `max_p` grows additively while the average is above the middle of the thresholds' range
//!   and shrinks multiplicatively while below, so the average settles there.
//!
//! Thresholds count packets, as ns-3's RedQueueDisc does in its default packet mode. ECN: an
//! ECN-capable arrival chosen by the probabilistic rule is marked CE instead (RFC 3168
//! section 7); in the forced region (above `max_th`, or 2 `max_th` when gentle) it is dropped,
//! as ns-3's `UseHardDrop` and Linux's `harddrop` do.

use super::{fits, signal, AqmEvent, Dequeued, StateLog, TimedFifo, Verdict};
use crate::links::link::{DropCause, Packet, QueueLimit};
use crate::rng::StreamRng;
use crate::time::{BitRate, SimDuration, SimTime};

/// RED's parameters; the defaults are ns-3's RedQueueDisc's (MinTh 5, MaxTh 15, LInterm 50,
/// QW 0.002, MeanPktSize 500, gentle on).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RedParams {
    pub min_th_pkts: f64,
    pub max_th_pkts: f64,
    pub max_p: f64,
    /// The average's weight w_q.
    pub weight: f64,
    pub gentle: bool,
    pub adaptive: bool,
    /// The packet size that sets the idle decay's "typical transmission time" (FJ93 sec. 11).
    pub mean_packet_bytes: u32,
    pub ecn: bool,
}

impl Default for RedParams {
    fn default() -> Self {
        RedParams {
            min_th_pkts: 5.0,
            max_th_pkts: 15.0,
            max_p: 0.02,
            weight: 0.002,
            gentle: true,
            adaptive: false,
            mean_packet_bytes: 500,
            ecn: true,
        }
    }
}

/// Adaptive RED's period (ARED figure 2).
const ADAPT_INTERVAL: SimDuration = SimDuration::from_millis(500);

#[derive(Debug)]
pub struct Red {
    params: RedParams,
    limit: QueueLimit,
    pub(crate) fifo: TimedFifo,
    rng: StreamRng,
    avg: f64,
    /// Packets since the last drop or mark (FJ93's `count`; -1 below min_th).
    count: i64,
    /// When the queue last went empty (FJ93's `q_time`), while it is.
    idle_since: Option<SimTime>,
    /// The typical transmission time of FJ93's idle decay, in seconds.
    typical_tx_s: f64,
    max_p: f64,
    next_adapt: SimTime,
    /// The average after each arrival that changed it.
    pub(crate) log: StateLog,
}

/// FJ93 section 4: the average after an arrival that finds `q` packets waiting.
pub(crate) fn red_average(avg: f64, weight: f64, q: f64) -> f64 {
    (1.0 - weight) * avg + weight * q
}

/// FJ93 section 4 with the gentle variant: the initial probability p_b for average `avg`, or
/// `None` in the forced-drop region.
pub(crate) fn red_pb(p: &RedParams, max_p: f64, avg: f64) -> Option<f64> {
    let (min, max) = (p.min_th_pkts, p.max_th_pkts);
    if avg < min {
        Some(0.0)
    } else if avg < max {
        Some(max_p * (avg - min) / (max - min))
    } else if p.gentle && avg < 2.0 * max {
        Some(max_p + (1.0 - max_p) * (avg - max) / max)
    } else {
        None
    }
}

impl Red {
    pub fn new(params: RedParams, limit: QueueLimit, rate: BitRate, rng: StreamRng) -> Self {
        let typical_tx_s = rate
            .transmission_time(params.mean_packet_bytes)
            .as_secs_f64();
        Red {
            params,
            limit,
            fifo: TimedFifo::default(),
            rng,
            avg: 0.0,
            count: -1,
            idle_since: Some(SimTime::ZERO),
            typical_tx_s,
            max_p: params.max_p,
            next_adapt: SimTime::ZERO + ADAPT_INTERVAL,
            log: StateLog::default(),
        }
    }

    /// The average queue length (for traces and tests).
    pub fn average(&self) -> f64 {
        self.avg
    }

    /// ARED figure 2, at every period boundary up to `now` (the average changes only at
    /// arrivals, so the lazy catch-up is exact).
    fn adapt(&mut self, now: SimTime) {
        while self.params.adaptive && self.next_adapt <= now {
            let (min, max) = (self.params.min_th_pkts, self.params.max_th_pkts);
            let (low, high) = (min + 0.4 * (max - min), min + 0.6 * (max - min));
            if self.avg > high && self.max_p <= 0.5 {
                self.max_p += (self.max_p / 4.0).min(0.01);
            } else if self.avg < low && self.max_p >= 0.01 {
                self.max_p *= 0.9;
            }
            self.next_adapt += ADAPT_INTERVAL;
        }
    }

    /// FJ93 section 4 (and section 11 for the idle decay): the average at an arrival.
    fn update_average(&mut self, now: SimTime) {
        let q = self.fifo.len_pkts() as f64;
        match self.idle_since.take() {
            Some(since) if self.fifo.len_pkts() == 0 => {
                // m = idle time / typical transmission time; avg = (1 - w_q)^m avg.
                let m = now.saturating_since(since).as_secs_f64() / self.typical_tx_s;
                self.avg *= (1.0 - self.params.weight).powf(m);
            }
            _ => self.avg = red_average(self.avg, self.params.weight, q),
        }
    }

    pub fn enqueue(&mut self, now: SimTime, mut pkt: Packet) -> Verdict {
        self.adapt(now);
        let before = self.avg;
        self.update_average(now);
        if self.log.is_on() && self.avg != before {
            self.log.push(now, 0, AqmEvent::AverageQueue, self.avg);
        }
        let q = &self.fifo;
        if !fits(self.limit, q.len_pkts(), q.len_bytes(), pkt.size_bytes) {
            return Verdict::Dropped(DropCause::QueueOverflow);
        }
        let mut verdict = Verdict::Queued;
        match red_pb(&self.params, self.max_p, self.avg) {
            Some(pb) if pb <= 0.0 => self.count = -1,
            Some(pb) => {
                self.count += 1;
                // p_a = p_b / (1 - count p_b): drops spread evenly between min and max.
                let denom = 1.0 - self.count as f64 * pb;
                let pa = if denom <= pb { 1.0 } else { pb / denom };
                if self.rng.uniform() < pa {
                    self.count = 0;
                    if self.params.ecn && signal(&mut pkt) {
                        verdict = Verdict::Marked;
                    } else {
                        return Verdict::Dropped(DropCause::Aqm);
                    }
                }
            }
            None => {
                self.count = 0;
                return Verdict::Dropped(DropCause::Aqm);
            }
        }
        self.fifo.push(now, pkt);
        verdict
    }

    pub fn dequeue(&mut self, now: SimTime) -> Option<Dequeued> {
        self.adapt(now);
        let (pkt, since) = self.fifo.pop()?;
        if self.fifo.len_pkts() == 0 {
            self.idle_since = Some(now);
        }
        Some(Dequeued {
            pkt,
            marked: false,
            enqueued_at: Some(since),
        })
    }
}
