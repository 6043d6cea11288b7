//! CoDel, Controlled Delay (RFC 8289): a queue whose packets' sojourn times stay above
//! `target` for at least `interval` enters a dropping state, dropping (or CE-marking) at the
//! head at intervals that shrink as interval/sqrt(count) until a sojourn falls below target.
//! Every decision is taken at dequeue, on the sojourn of the packet leaving.
//!
//! The state machine ([`CoDelState`]) works on any [`TimedFifo`], so FQ-CoDel runs one per
//! flow queue. ECN: where the packet is ECN-capable and `ecn` is on, the packet that would be
//! dropped is marked CE and sent instead, and the drop schedule advances as for a drop (as
//! Linux's `codel_dequeue` does; RFC 8289 section 5 leaves marking to the implementation).

use super::{dropped, fits, signal, AqmEvent, Dequeued, StateLog, TimedFifo, Verdict};
use crate::links::link::{DropCause, LinkEvent, Packet, QueueLimit};
use crate::time::{SimDuration, SimTime};
use std::collections::VecDeque;

/// CoDel's parameters (RFC 8289 section 4.4: target 5 ms, interval 100 ms).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoDelParams {
    /// The acceptable standing queue delay.
    pub target: SimDuration,
    /// The sliding window over which the sojourn must stay above target, on the order of a
    /// worst-case round trip.
    pub interval: SimDuration,
    /// Mark ECN-capable packets CE instead of dropping them.
    pub ecn: bool,
}

impl Default for CoDelParams {
    fn default() -> Self {
        CoDelParams {
            target: SimDuration::from_millis(5),
            interval: SimDuration::from_millis(100),
            ecn: true,
        }
    }
}

/// The per-queue state of RFC 8289 section 5.
#[derive(Clone, Debug, Default)]
pub(crate) struct CoDelState {
    /// When the sojourn first went above target, plus interval (`first_above_time_`; `None`
    /// for the RFC's 0).
    first_above_time: Option<SimTime>,
    /// When the next drop is due while dropping (`drop_next_`).
    drop_next: SimTime,
    /// Drops (and marks) since entering the dropping state (`count_`).
    count: u32,
    /// `count_` when the dropping state was last entered (`lastcount_`).
    last_count: u32,
    /// In the dropping state (`dropping_`).
    dropping: bool,
    /// The largest packet seen (`maxpacket_`, section 5.2: updated at enqueue).
    max_packet_bytes: u64,
}

/// The head of a queue and whether CoDel may drop it (RFC 8289 section 5.5, `dodequeue_result`),
/// with the instant it joined the queue.
struct Head {
    pkt: Option<Packet>,
    since: SimTime,
    ok_to_drop: bool,
}

/// RFC 8289 section 5.7, `control_law`: the next drop, interval/sqrt(count) after `t`. Not
/// Linux's Newton-step reciprocal square root, which approximates it; the f64 square root
/// is correctly rounded (IEEE 754), so the same on every machine.
pub(crate) fn control_law(t: SimTime, interval: SimDuration, count: u32) -> SimTime {
    let ns = interval.as_nanos() as f64 / f64::from(count.max(1)).sqrt();
    t + SimDuration::from_nanos(ns as u64)
}

impl CoDelState {
    /// Section 5.2: the largest packet seen, kept at enqueue.
    pub(crate) fn on_enqueue(&mut self, pkt: &Packet) {
        self.max_packet_bytes = self.max_packet_bytes.max(u64::from(pkt.size_bytes));
    }

    /// Whether the dropping state is on (for traces and tests).
    pub(crate) fn dropping(&self) -> bool {
        self.dropping
    }

    /// Logs the dropping state's change, if it changed from `was_dropping` in a dequeue at
    /// `now` (one dequeue enters or leaves it at most once), for queue `queue`.
    #[inline]
    pub(crate) fn log_change(
        &self,
        was_dropping: bool,
        now: SimTime,
        queue: u32,
        log: &mut StateLog,
    ) {
        if self.dropping != was_dropping {
            let event = if self.dropping {
                AqmEvent::DroppingEntered
            } else {
                AqmEvent::DroppingLeft
            };
            log.push(now, queue, event, f64::from(self.count));
        }
    }

    /// Section 5.5, `dodequeue`: takes the head and says whether its sojourn has been above
    /// target for an interval.
    fn do_dequeue(&mut self, now: SimTime, p: &CoDelParams, q: &mut TimedFifo) -> Head {
        let Some((pkt, since)) = q.pop() else {
            self.first_above_time = None;
            return Head {
                pkt: None,
                since: now,
                ok_to_drop: false,
            };
        };
        let sojourn = now.saturating_since(since);
        let mut ok_to_drop = false;
        // "queue is below target or has at most one packet's worth": leave the watch.
        if sojourn < p.target || q.len_bytes() <= self.max_packet_bytes {
            self.first_above_time = None;
        } else {
            match self.first_above_time {
                None => self.first_above_time = Some(now + p.interval),
                Some(t) if now >= t => ok_to_drop = true,
                Some(_) => {}
            }
        }
        Head {
            pkt: Some(pkt),
            since,
            ok_to_drop,
        }
    }

    /// Section 5.6, `dequeue`: the packet to send from `q` at `now`; those dropped go to
    /// `evicted`.
    pub(crate) fn dequeue(
        &mut self,
        now: SimTime,
        p: &CoDelParams,
        q: &mut TimedFifo,
        evicted: &mut VecDeque<LinkEvent>,
    ) -> Option<Dequeued> {
        let mut r = self.do_dequeue(now, p, q);
        if self.dropping {
            if !r.ok_to_drop {
                // Sojourn below target: leave the dropping state.
                self.dropping = false;
            }
            while self.dropping && now >= self.drop_next {
                let mut pkt = r.pkt?;
                self.count += 1;
                if p.ecn && signal(&mut pkt) {
                    self.drop_next = control_law(self.drop_next, p.interval, self.count);
                    return Some(Dequeued {
                        pkt,
                        marked: true,
                        enqueued_at: Some(r.since),
                    });
                }
                evicted.push_back(dropped(now, pkt, DropCause::Aqm));
                r = self.do_dequeue(now, p, q);
                if r.ok_to_drop {
                    // Schedule the next drop from the last one's time, not from now
                    // (section 5.6), so the rate rises as sqrt(count).
                    self.drop_next = control_law(self.drop_next, p.interval, self.count);
                } else {
                    self.dropping = false;
                }
            }
        } else if r.ok_to_drop {
            let mut pkt = r.pkt?;
            let marked = p.ecn && signal(&mut pkt);
            if marked {
                r.pkt = Some(pkt);
            } else {
                evicted.push_back(dropped(now, pkt, DropCause::Aqm));
                r = self.do_dequeue(now, p, q);
            }
            self.dropping = true;
            // Section 5.6: re-entering soon after leaving resumes near the last drop rate
            // ("delta"), else starts again at one drop an interval.
            let delta = self.count.saturating_sub(self.last_count);
            self.count = 1;
            if delta > 1
                && now.saturating_since(self.drop_next).as_nanos()
                    < p.interval.as_nanos().saturating_mul(16)
            {
                self.count = delta;
            }
            self.drop_next = control_law(now, p.interval, self.count);
            self.last_count = self.count;
            return r.pkt.map(|pkt| Dequeued {
                pkt,
                marked,
                enqueued_at: Some(r.since),
            });
        }
        r.pkt.map(|pkt| Dequeued {
            pkt,
            marked: false,
            enqueued_at: Some(r.since),
        })
    }
}

/// A single CoDel queue under the link's limit.
#[derive(Debug)]
pub struct CoDel {
    params: CoDelParams,
    limit: QueueLimit,
    pub(crate) fifo: TimedFifo,
    state: CoDelState,
    pub(crate) log: StateLog,
}

impl CoDel {
    pub fn new(params: CoDelParams, limit: QueueLimit) -> Self {
        CoDel {
            params,
            limit,
            fifo: TimedFifo::default(),
            state: CoDelState::default(),
            log: StateLog::default(),
        }
    }

    /// Section 5.2, `enqueue`: timestamp and queue, or tail-drop beyond the limit.
    pub fn enqueue(&mut self, now: SimTime, pkt: Packet) -> Verdict {
        let q = &self.fifo;
        if !fits(self.limit, q.len_pkts(), q.len_bytes(), pkt.size_bytes) {
            return Verdict::Dropped(DropCause::QueueOverflow);
        }
        self.state.on_enqueue(&pkt);
        self.fifo.push(now, pkt);
        Verdict::Queued
    }

    pub fn dequeue(&mut self, now: SimTime, evicted: &mut VecDeque<LinkEvent>) -> Option<Dequeued> {
        let was_dropping = self.state.dropping;
        let out = self
            .state
            .dequeue(now, &self.params, &mut self.fifo, evicted);
        if self.log.is_on() {
            self.state.log_change(was_dropping, now, 0, &mut self.log);
        }
        out
    }

    /// Whether CoDel is in its dropping state.
    pub fn dropping(&self) -> bool {
        self.state.dropping()
    }
}
