//! Link schedules: a link direction's rate, delay, loss rate and up/down state as functions of
//! time, and mahimahi's trace-driven serializer (delivery opportunities), both driven by `now`.
//!
//! A [`Schedule`] is a list of rows, each from its instant `at` on: the serializer's rate, the
//! one-way delay, a loss rate and whether the direction is up. Rate, loss and up/down are
//! piecewise constant; the delay is too, or linear between rows
//! ([`DelayShape::Linear`]). Without `repeat` the last row holds for ever; with it the rows
//! repeat with a period equal to the last row's `at` (the last row then only closes the cycle:
//! its delay is the target a linear delay moves to, its other values are not used).
//!
//! How [`crate::links::link::Link`] applies it (its module documentation has the rest):
//!
//! * **Rate**: a packet's last bit leaves when the integral of the rate since its first bit
//!   reaches its size in bits (the rate may change during a packet). Time down counts as rate
//!   zero, so a held packet resumes where it stopped. With a constant schedule this is exactly
//!   the fixed-rate serializer's ceil(8 S 1e9 / R) ns.
//! * **Delay** is read at the instant a packet's last bit leaves. A delay that falls would let
//!   a packet overtake the one ahead of it; it never does: a packet reaches the far end at
//!   `max(done + delay(done), arrival of the packet ahead)`, as on a real path, where the
//!   queue of a relay in between keeps its order.
//! * **Loss**: a packet is lost with the loss rate of the instant its last bit leaves, drawn
//!   from the direction's schedule stream, on top of the direction's own loss model.
//! * **Down** ([`DownPolicy`]): `Hold` stops the serializer (nothing leaves, the queue fills
//!   and overflows as usual) until the direction is up again; `Drop` drops the packet being
//!   serialized and every waiting packet at the instant the direction goes down, and every
//!   packet offered while it is down (cause `call_drop`: the direction's call, as it were, is
//!   lost). Packets already on the wire arrive either way.
//!
//! A [`RateTrace`] replaces the serializer by mahimahi's `mm-link` (src/frontend/link_queue.cc
//! of mahimahi): each line of its file is a millisecond at which [`MAHIMAHI_OPPORTUNITY_BYTES`]
//! bytes may leave; the file repeats with a period of its last timestamp. At an opportunity the
//! packet at the head of the queue sends as many of its bytes as are left in it and, once
//! whole, leaves at that opportunity's instant; the bytes left go to the next packet in the
//! queue, so several small packets go in one opportunity and a large one spans several. Bytes
//! of an opportunity that finds the queue empty are lost, and a packet arriving at an
//! opportunity's very instant waits for the next one (mahimahi serves the opportunities due
//! before it enqueues an arrival).

use std::collections::VecDeque;

use crate::links::link::Packet;
use crate::rng::StreamRng;
use crate::time::{BitRate, SimDuration, SimTime};

/// The bytes of one mahimahi delivery opportunity (`LinkQueue::PACKET_SIZE`, the largest TUN
/// payload mahimahi reads).
pub const MAHIMAHI_OPPORTUNITY_BYTES: u32 = 1504;

/// What a direction that goes down does with what it carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DownPolicy {
    /// The serializer stops; the queue keeps what it holds and what fits.
    Hold,
    /// What is waiting or being serialized is dropped when it goes down, and what is offered
    /// while it is down.
    Drop,
}

impl DownPolicy {
    pub fn name(self) -> &'static str {
        match self {
            DownPolicy::Hold => "hold",
            DownPolicy::Drop => "drop",
        }
    }
}

/// How the delay moves between two rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DelayShape {
    Step,
    Linear,
}

/// One row of a schedule: from `at` on (until the next row).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScheduleRow {
    pub at: SimDuration,
    /// The serializer's rate; zero sends nothing.
    pub rate: BitRate,
    pub delay: SimDuration,
    /// Probability that a packet leaving now is lost, in [0, 1].
    pub loss: f64,
    pub up: bool,
}

/// A direction's schedule; see the module documentation.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    rows: Vec<ScheduleRow>,
    /// With `repeat`: the last row's `at`.
    period: Option<SimDuration>,
    delay_shape: DelayShape,
    down: DownPolicy,
}

/// Why a schedule cannot be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleError {
    /// The row it is about, if one.
    pub row: Option<usize>,
    pub message: String,
}

impl Schedule {
    /// A schedule of `rows` (the first at 0, `at` strictly increasing; with `repeat` at least
    /// two rows, the last closing the cycle).
    pub fn new(
        rows: Vec<ScheduleRow>,
        repeat: bool,
        delay_shape: DelayShape,
        down: DownPolicy,
    ) -> Result<Schedule, ScheduleError> {
        let fail = |row: Option<usize>, message: String| Err(ScheduleError { row, message });
        let Some(first) = rows.first() else {
            return fail(None, "expected at least one row".into());
        };
        if first.at != SimDuration::ZERO {
            return fail(
                Some(0),
                format!(
                    "the first row must be at 0 s (the run's start), got {} s",
                    first.at.as_secs_f64()
                ),
            );
        }
        for (i, w) in rows.windows(2).enumerate() {
            if w[1].at <= w[0].at {
                return fail(
                    Some(i + 1),
                    format!(
                        "rows must be in increasing order of at: {} s after {} s",
                        w[1].at.as_secs_f64(),
                        w[0].at.as_secs_f64()
                    ),
                );
            }
        }
        for (i, r) in rows.iter().enumerate() {
            if !(0.0..=1.0).contains(&r.loss) {
                return fail(
                    Some(i),
                    format!("expected a loss rate in [0, 1], got {}", r.loss),
                );
            }
        }
        let period = if repeat {
            if rows.len() < 2 {
                return fail(
                    None,
                    "a repeating schedule needs at least two rows (the last one's at is the \
                     period)"
                        .into(),
                );
            }
            rows.last().map(|r| r.at)
        } else {
            None
        };
        Ok(Schedule {
            rows,
            period,
            delay_shape,
            down,
        })
    }

    pub fn rows(&self) -> &[ScheduleRow] {
        &self.rows
    }

    pub fn repeats(&self) -> bool {
        self.period.is_some()
    }

    pub fn delay_shape(&self) -> DelayShape {
        self.delay_shape
    }

    pub fn down_policy(&self) -> DownPolicy {
        self.down
    }

    /// The rows in force within one cycle (all but the closing one when repeating).
    fn cycle_rows(&self) -> usize {
        self.rows.len() - usize::from(self.period.is_some())
    }

    /// The index of the row in force at `t`, the start of the cycle holding `t` and the
    /// instant the row ends (`None`: never).
    fn locate(&self, t: SimTime) -> (usize, u64, Option<u64>) {
        let t_ns = t.as_nanos();
        let (base, within) = match self.period {
            Some(p) => {
                let p = p.as_nanos();
                (t_ns - t_ns % p, t_ns % p)
            }
            None => (0, t_ns),
        };
        let n = self.cycle_rows();
        let i = self.rows[..n].partition_point(|r| r.at.as_nanos() <= within) - 1;
        let end = match (self.rows.get(i + 1), self.period) {
            (Some(next), _) => Some(base + next.at.as_nanos()),
            (None, _) => None,
        };
        (i, base, end)
    }

    /// The row in force at `t`.
    pub fn row_at(&self, t: SimTime) -> &ScheduleRow {
        &self.rows[self.locate(t).0]
    }

    pub fn is_up(&self, t: SimTime) -> bool {
        self.row_at(t).up
    }

    /// The one-way delay at `t`: the row's, or linear towards the next row's.
    pub fn delay_at(&self, t: SimTime) -> SimDuration {
        let (i, base, end) = self.locate(t);
        let row = &self.rows[i];
        match (self.delay_shape, end, self.rows.get(i + 1)) {
            (DelayShape::Linear, Some(end), Some(next)) => {
                let start = base + row.at.as_nanos();
                let (d0, d1) = (row.delay.as_nanos() as i128, next.delay.as_nanos() as i128);
                let span = i128::from(end - start);
                let into = i128::from(t.as_nanos() - start);
                SimDuration::from_nanos((d0 + (d1 - d0) * into / span) as u64)
            }
            _ => row.delay,
        }
    }

    /// The first instant after `t` at which a row begins, `None` if none does.
    pub fn next_change_after(&self, t: SimTime) -> Option<SimTime> {
        self.locate(t).2.map(SimTime::from_nanos)
    }

    /// The first instant at or after `t` at which the direction is down, `None` if never.
    pub fn next_down_from(&self, t: SimTime) -> Option<SimTime> {
        if !self.rows.iter().any(|r| !r.up) {
            return None;
        }
        let mut at = t;
        // At most one cycle of rows to walk: some row of every cycle is down.
        for _ in 0..=self.rows.len() {
            if !self.is_up(at) {
                return Some(at);
            }
            at = self.next_change_after(at)?;
        }
        None
    }

    /// The first instant at or after `t` at which the direction is up, `None` if never.
    pub fn next_up_from(&self, t: SimTime) -> Option<SimTime> {
        let mut at = t;
        for _ in 0..=self.rows.len() {
            if self.is_up(at) {
                return Some(at);
            }
            at = self.next_change_after(at)?;
        }
        None
    }

    /// The instant the last bit of `bits` leaves a serializer that starts at `start`, the rate
    /// integrated over the rows (zero while down); `None` if it never does (the schedule ends
    /// down or at rate zero, or a whole cycle sends nothing).
    pub fn finish(&self, start: SimTime, bits: u64) -> Option<SimTime> {
        if bits == 0 {
            return Some(start);
        }
        let mut at = start.as_nanos();
        let mut left = u128::from(bits) * 1_000_000_000; // bit-nanoseconds per bit/s
        let mut idle_since: Option<u64> = None;
        loop {
            let (i, _, end) = self.locate(SimTime::from_nanos(at));
            let row = &self.rows[i];
            let rate = if row.up {
                u128::from(row.rate.bps())
            } else {
                0
            };
            if rate > 0 {
                idle_since = None;
                let need_ns = left.div_ceil(rate);
                match end {
                    Some(e) if u128::from(e - at) < need_ns => {
                        left -= u128::from(e - at) * rate;
                    }
                    _ => {
                        return u64::try_from(u128::from(at) + need_ns)
                            .ok()
                            .map(SimTime::from_nanos)
                    }
                }
            } else {
                // A whole cycle without a bit sent: it never will be.
                let since = *idle_since.get_or_insert(at);
                if self.period.is_some_and(|p| at - since >= p.as_nanos()) {
                    return None;
                }
            }
            at = end?;
        }
    }

    /// Every instant in `[0, until]` at which the rate or the up state changes, with the
    /// values from then on (the first at 0), as the capacity trace records them.
    pub fn rate_steps(&self, until: SimTime) -> Vec<(SimTime, BitRate, bool)> {
        let mut steps: Vec<(SimTime, BitRate, bool)> = Vec::new();
        let mut at = Some(SimTime::ZERO);
        while let Some(t) = at.filter(|&t| t <= until) {
            let r = self.row_at(t);
            if steps
                .last()
                .is_none_or(|&(_, rate, up)| (rate, up) != (r.rate, r.up))
            {
                steps.push((t, r.rate, r.up));
            }
            at = self.next_change_after(t);
        }
        steps
    }
}

/// mahimahi's delivery opportunities (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateTrace {
    /// Each opportunity's instant in the file, in ms, non-decreasing.
    ms: Vec<u64>,
    /// The last timestamp: the file repeats with this period.
    period_ms: u64,
}

impl RateTrace {
    /// A trace of opportunities at `ms` (non-decreasing, at least one, the last above 0: the
    /// conditions mahimahi's `LinkQueue` checks).
    pub fn new(ms: Vec<u64>) -> Result<RateTrace, ScheduleError> {
        let Some(&last) = ms.last() else {
            return Err(ScheduleError {
                row: None,
                message: "expected at least one delivery opportunity".into(),
            });
        };
        if let Some(i) = ms.windows(2).position(|w| w[1] < w[0]) {
            return Err(ScheduleError {
                row: Some(i + 1),
                message: format!(
                    "timestamps must be non-decreasing: {} ms after {} ms",
                    ms[i + 1],
                    ms[i]
                ),
            });
        }
        if last == 0 {
            return Err(ScheduleError {
                row: None,
                message: "the trace must last a nonzero time (its last timestamp is 0)".into(),
            });
        }
        Ok(RateTrace {
            ms,
            period_ms: last,
        })
    }

    pub fn opportunities_ms(&self) -> &[u64] {
        &self.ms
    }

    /// The mean rate the opportunities offer.
    pub fn mean_rate(&self) -> BitRate {
        let bits = self.ms.len() as u64 * u64::from(MAHIMAHI_OPPORTUNITY_BYTES) * 8;
        BitRate::from_bps(bits * 1000 / self.period_ms)
    }

    /// The instant of opportunity number `k` counted from the run's start over the cycles.
    pub fn instant(&self, k: u64) -> SimTime {
        let n = self.ms.len() as u64;
        let ms = (k / n) * self.period_ms + self.ms[(k % n) as usize];
        SimTime::from_nanos(ms * 1_000_000)
    }

    /// The number of the first opportunity strictly after `t`.
    pub fn first_after(&self, t: SimTime) -> u64 {
        let n = self.ms.len() as u64;
        let period_ns = self.period_ms * 1_000_000;
        let cycle = t.as_nanos() / period_ns;
        let within = t.as_nanos() % period_ns;
        let i = self.ms.partition_point(|&m| m * 1_000_000 <= within) as u64;
        cycle * n + i
    }
}

/// Where a trace-driven serializer stands: the next opportunity not yet used and the bytes
/// left in the last one used.
#[derive(Clone, Copy, Debug, Default)]
pub struct TraceCursor {
    next: u64,
    left_bytes: u32,
    last_used: Option<SimTime>,
}

impl TraceCursor {
    /// Serializes `size_bytes` starting at `at` (`back_to_back`: the packet follows the one
    /// before it in the queue without a gap, so it may use what that one left of its last
    /// opportunity); returns the instant its last byte leaves, `None` if never. `up_from(t)`
    /// is the first instant at or after `t` the direction is up (`None`: never again);
    /// opportunities while it is down are not used.
    pub fn serve(
        &mut self,
        trace: &RateTrace,
        at: SimTime,
        size_bytes: u32,
        back_to_back: bool,
        up_from: impl Fn(SimTime) -> Option<SimTime>,
    ) -> Option<SimTime> {
        let mut left = size_bytes;
        let carries = back_to_back && self.last_used == Some(at) && self.left_bytes > 0;
        if carries {
            let used = left.min(self.left_bytes);
            self.left_bytes -= used;
            left -= used;
            if left == 0 {
                return Some(at);
            }
        } else {
            self.next = self.next.max(trace.first_after(at));
        }
        loop {
            let when = trace.instant(self.next);
            let up = up_from(when)?;
            if up > when {
                // Down: the first opportunity at or after it is up again.
                let before = SimTime::from_nanos(up.as_nanos() - 1);
                self.next = self.next.max(trace.first_after(before));
                continue;
            }
            self.next += 1;
            let used = left.min(MAHIMAHI_OPPORTUNITY_BYTES);
            left -= used;
            if left == 0 {
                self.left_bytes = MAHIMAHI_OPPORTUNITY_BYTES - used;
                self.last_used = Some(when);
                return Some(when);
            }
        }
    }
}

/// What a scheduled link direction keeps beside a plain [`crate::links::link::Link`]: its
/// schedule, its trace-driven serializer, the stream its schedule's losses are drawn from,
/// and the packets a `down = "drop"` outage took, until they are polled.
#[derive(Debug)]
pub struct Timed {
    schedule: Option<Schedule>,
    trace: Option<RateTrace>,
    cursor: TraceCursor,
    rng: StreamRng,
    /// When the last packet reaches the far end: none arrives before it (a falling delay
    /// never reorders).
    last_arrival: SimTime,
    /// The packet in service is dropped at its end instant: the direction goes down then.
    doomed: bool,
    casualties: VecDeque<(SimTime, Packet)>,
}

impl Timed {
    /// A direction driven by `schedule` (rate, delay, loss, up/down) and `trace` (its rate
    /// from mahimahi's opportunities instead of the schedule's or the fixed one), drawing
    /// its losses from `rng`.
    pub fn new(schedule: Option<Schedule>, trace: Option<RateTrace>, rng: StreamRng) -> Timed {
        Timed {
            schedule,
            trace,
            cursor: TraceCursor::default(),
            rng,
            last_arrival: SimTime::ZERO,
            doomed: false,
            casualties: VecDeque::new(),
        }
    }

    pub fn schedule(&self) -> Option<&Schedule> {
        self.schedule.as_ref()
    }

    pub fn trace(&self) -> Option<&RateTrace> {
        self.trace.as_ref()
    }

    fn drops_when_down(&self) -> bool {
        self.schedule
            .as_ref()
            .is_some_and(|s| s.down == DownPolicy::Drop)
    }

    /// Whether a packet offered at `now` is dropped at once: down, under `down = "drop"`.
    pub fn refuses(&self, now: SimTime) -> bool {
        self.drops_when_down() && self.schedule.as_ref().is_some_and(|s| !s.is_up(now))
    }

    /// A packet of `size_bytes` going into service at `at` (`back_to_back` after the one
    /// before it): the instants its first and last bits leave; the last is `SimTime::MAX`
    /// if it never leaves, or the instant the direction goes down if it is dropped then.
    pub fn serve(
        &mut self,
        at: SimTime,
        size_bytes: u32,
        back_to_back: bool,
        fixed: BitRate,
    ) -> (SimTime, SimTime) {
        let done = match (&self.trace, &self.schedule) {
            (Some(trace), sched) => self.cursor.serve(trace, at, size_bytes, back_to_back, |t| {
                sched.as_ref().map_or(Some(t), |s| s.next_up_from(t))
            }),
            (None, Some(s)) => s.finish(at, u64::from(size_bytes) * 8),
            (None, None) => Some(at + fixed.transmission_time(size_bytes)),
        };
        let done = done.unwrap_or(SimTime::MAX);
        self.doomed = false;
        if self.drops_when_down() {
            if let Some(down) = self.schedule.as_ref().and_then(|s| s.next_down_from(at)) {
                if down < done {
                    self.doomed = true;
                    return (at, down);
                }
            }
        }
        (at, done)
    }

    /// The packet in service ends at `done`: the instant it reaches the far end (never
    /// before the packet ahead of it), or `None` if the direction went down and took it.
    pub fn leave(&mut self, done: SimTime, fixed_delay: SimDuration) -> Option<SimTime> {
        if self.doomed {
            return None;
        }
        let delay = self
            .schedule
            .as_ref()
            .map_or(fixed_delay, |s| s.delay_at(done));
        self.last_arrival = self.last_arrival.max(done + delay);
        Some(self.last_arrival)
    }

    /// Records `pkt` as dropped by an outage at `at`.
    pub fn drop_at(&mut self, at: SimTime, pkt: Packet) {
        self.casualties.push_back((at, pkt));
    }

    /// Whether a packet reaching the far end at `at` is lost by the schedule's loss rate then
    /// (one draw only where the rate is above 0).
    pub fn lost(&mut self, at: SimTime) -> bool {
        let p = self.schedule.as_ref().map_or(0.0, |s| s.row_at(at).loss);
        p > 0.0 && self.rng.bernoulli(p)
    }

    /// The earliest outage drop not yet polled.
    pub fn next_casualty(&self) -> Option<SimTime> {
        self.casualties.front().map(|&(at, _)| at)
    }

    /// The earliest outage drop if it is due by `now` and not after `wire_front`.
    pub fn pop_casualty(
        &mut self,
        now: SimTime,
        wire_front: Option<SimTime>,
    ) -> Option<(SimTime, Packet)> {
        let at = self.next_casualty()?;
        if at <= now && wire_front.is_none_or(|w| at <= w) {
            self.casualties.pop_front()
        } else {
            None
        }
    }

    /// Packets dropped by an outage and not polled yet.
    pub fn casualties_pending(&self) -> u64 {
        self.casualties.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::links::link::{DropCause, Link, LinkConfig, LinkEvent, QueueLimit};
    use crate::loss::NoLoss;

    fn row(at_ms: u64, rate_bps: u64, delay_ms: u64, up: bool) -> ScheduleRow {
        ScheduleRow {
            at: SimDuration::from_millis(at_ms),
            rate: BitRate::from_bps(rate_bps),
            delay: SimDuration::from_millis(delay_ms),
            loss: 0.0,
            up,
        }
    }

    fn ms(v: u64) -> SimTime {
        SimTime::from_nanos(v * 1_000_000)
    }

    #[test]
    fn rows_are_checked() {
        let bad = Schedule::new(
            vec![row(5, 1, 1, true)],
            false,
            DelayShape::Step,
            DownPolicy::Hold,
        );
        assert_eq!(bad.unwrap_err().row, Some(0));
        let bad = Schedule::new(
            vec![row(0, 1, 1, true), row(0, 1, 1, true)],
            false,
            DelayShape::Step,
            DownPolicy::Hold,
        );
        assert_eq!(bad.unwrap_err().row, Some(1));
        let bad = Schedule::new(
            vec![row(0, 1, 1, true)],
            true,
            DelayShape::Step,
            DownPolicy::Hold,
        );
        assert!(bad.unwrap_err().message.contains("two rows"));
    }

    #[test]
    fn a_constant_schedule_serializes_as_the_fixed_rate_does() {
        let s = Schedule::new(
            vec![row(0, 1_500_000, 10, true)],
            false,
            DelayShape::Step,
            DownPolicy::Hold,
        )
        .unwrap();
        let fixed = BitRate::from_bps(1_500_000).transmission_time(1000);
        assert_eq!(s.finish(ms(3), 8000), Some(ms(3) + fixed));
    }

    #[test]
    fn the_rate_is_integrated_across_rows_and_down_time_counts_as_zero() {
        // 8000 bit/s for 1 s, down for 1 s, then 16000 bit/s: 12000 bits started at 0.5 s send
        // 4000 by 1 s, nothing until 2 s, the other 8000 by 2.5 s.
        let s = Schedule::new(
            vec![
                row(0, 8000, 0, true),
                row(1000, 8000, 0, false),
                row(2000, 16000, 0, true),
            ],
            false,
            DelayShape::Step,
            DownPolicy::Hold,
        )
        .unwrap();
        assert_eq!(s.finish(ms(500), 12_000), Some(ms(2500)));
        // Ending down: never.
        let s = Schedule::new(
            vec![row(0, 8000, 0, true), row(1000, 8000, 0, false)],
            false,
            DelayShape::Step,
            DownPolicy::Hold,
        )
        .unwrap();
        assert_eq!(s.finish(ms(500), 12_000), None);
    }

    #[test]
    fn a_repeating_schedule_cycles_on_its_last_row() {
        let s = Schedule::new(
            vec![
                row(0, 1000, 50, true),
                row(10, 1000, 300, true),
                row(20, 0, 0, true),
            ],
            true,
            DelayShape::Step,
            DownPolicy::Hold,
        )
        .unwrap();
        assert_eq!(s.delay_at(ms(5)), SimDuration::from_millis(50));
        assert_eq!(s.delay_at(ms(15)), SimDuration::from_millis(300));
        assert_eq!(s.delay_at(ms(20)), SimDuration::from_millis(50));
        assert_eq!(s.delay_at(ms(45)), SimDuration::from_millis(50));
        assert_eq!(s.next_change_after(ms(15)), Some(ms(20)));
        assert_eq!(s.next_change_after(ms(20)), Some(ms(30)));
        let linear =
            Schedule::new(s.rows.clone(), true, DelayShape::Linear, DownPolicy::Hold).unwrap();
        assert_eq!(linear.delay_at(ms(5)), SimDuration::from_millis(175));
        assert_eq!(linear.delay_at(ms(15)), SimDuration::from_millis(150));
    }

    #[test]
    fn the_next_down_instant_is_found_across_cycles() {
        let s = Schedule::new(
            vec![
                row(0, 1000, 0, true),
                row(10, 1000, 0, false),
                row(12, 0, 0, true),
            ],
            true,
            DelayShape::Step,
            DownPolicy::Drop,
        )
        .unwrap();
        assert_eq!(s.next_down_from(ms(0)), Some(ms(10)));
        assert_eq!(s.next_down_from(ms(11)), Some(ms(11)));
        assert_eq!(s.next_down_from(ms(12)), Some(ms(22)));
        let steps = s.rate_steps(ms(24));
        assert_eq!(
            steps.iter().map(|&(t, _, up)| (t, up)).collect::<Vec<_>>(),
            vec![
                (ms(0), true),
                (ms(10), false),
                (ms(12), true),
                (ms(22), false),
                (ms(24), true)
            ]
        );
    }

    #[test]
    fn mahimahi_opportunities_carry_bytes_over_and_share_them() {
        // Opportunities at 1, 2, 3 ms, repeating every 3 ms.
        let trace = RateTrace::new(vec![1, 2, 3]).unwrap();
        assert_eq!(trace.instant(3), ms(4));
        assert_eq!(trace.first_after(ms(1)), 1);
        assert_eq!(trace.first_after(SimTime::from_nanos(500_000)), 0);
        let mut c = TraceCursor::default();
        let up = |t| Some(t);
        // A packet arriving at 1 ms waits for 2 ms (mahimahi burns the 1 ms one first).
        assert_eq!(c.serve(&trace, ms(1), 1000, false, up), Some(ms(2)));
        // The next one from the queue uses the 504 bytes left at 2 ms and 496 at 3 ms.
        assert_eq!(c.serve(&trace, ms(2), 1000, true, up), Some(ms(3)));
        // Then 100 bytes fit in what 3 ms has left.
        assert_eq!(c.serve(&trace, ms(3), 100, true, up), Some(ms(3)));
        // A packet arriving later to an idle link does not use an old opportunity's rest.
        assert_eq!(c.serve(&trace, ms(3), 100, false, up), Some(ms(4)));
        // 3000 bytes span two opportunities and part of a third.
        assert_eq!(c.serve(&trace, ms(10), 3100, false, up), Some(ms(13)));
        assert_eq!(trace.mean_rate().bps(), 1504 * 8 * 1000);
    }

    fn link_with(schedule: Schedule) -> Link<NoLoss> {
        let mut link = Link::new(
            LinkConfig {
                rate: BitRate::from_bps(10_000_000),
                delay: SimDuration::from_millis(50),
                queue_limit: QueueLimit::Packets(1000),
                bucket: None,
            },
            NoLoss,
        )
        .unwrap();
        link.set_timed(Timed::new(
            Some(schedule),
            None,
            StreamRng::derive(1, "test"),
        ));
        link
    }

    /// Offers a 1500-byte packet every `gap_us` from 0 to `until_ms`, polling as an engine
    /// does; returns every event in order.
    fn drive(link: &mut Link<NoLoss>, gap_us: u64, until_ms: u64) -> Vec<LinkEvent> {
        let mut out = Vec::new();
        let mut id = 0;
        let mut next_offer = SimTime::ZERO;
        loop {
            let wake = link.next_wakeup();
            let offer_due = next_offer <= ms(until_ms);
            let now = match (wake, offer_due) {
                (Some(w), true) => w.min(next_offer),
                (Some(w), false) => w,
                (None, true) => next_offer,
                (None, false) => break,
            };
            out.extend(std::iter::from_fn(|| link.poll(now)));
            if offer_due && now == next_offer {
                if let Err(cause) = link.offer(
                    now,
                    Packet {
                        id,
                        size_bytes: 1500,
                        ..Packet::default()
                    },
                ) {
                    out.push(LinkEvent::Dropped {
                        at: now,
                        pkt: Packet {
                            id,
                            size_bytes: 1500,
                            ..Packet::default()
                        },
                        cause,
                    });
                }
                id += 1;
                next_offer += SimDuration::from_micros(gap_us);
            }
        }
        out
    }

    #[test]
    fn a_delay_stepping_down_never_reorders_packets() {
        // 50 ms, 300 ms from 1 s, 50 ms again from 2 s: the packets that leave just after 2 s
        // would arrive 250 ms before those that left just before it; they wait for them.
        let s = Schedule::new(
            vec![
                row(0, 10_000_000, 50, true),
                row(1000, 10_000_000, 300, true),
                row(2000, 10_000_000, 50, true),
            ],
            false,
            DelayShape::Step,
            DownPolicy::Hold,
        )
        .unwrap();
        let mut link = link_with(s);
        let events = drive(&mut link, 2000, 3000);
        let ids: Vec<u64> = events
            .iter()
            .map(|e| match e {
                LinkEvent::Delivered { pkt, .. } => pkt.id,
                LinkEvent::Dropped { .. } => panic!("nothing is dropped: {e:?}"),
            })
            .collect();
        assert!(ids.len() > 1400);
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "reordered");
        // Each packet takes 1.2 ms to serialize; its one-way time is the delay of the instant
        // it left, or more where it waited for the one ahead.
        let one_way = |id: u64| {
            let at = events.iter().find_map(|e| match e {
                LinkEvent::Delivered { at, pkt } if pkt.id == id => Some(*at),
                _ => None,
            });
            at.unwrap().as_nanos() - id * 2_000_000
        };
        assert_eq!(one_way(100), 51_200_000);
        assert_eq!(one_way(600), 301_200_000);
        // Left at 2.0012 s, after the step down: held behind the last 300 ms packet.
        assert!(one_way(1000) > 250_000_000);
        assert_eq!(one_way(1400), 51_200_000);
        assert!(link.conservation_holds());
    }

    #[test]
    fn an_outage_under_drop_empties_whatever_queue_the_link_has() {
        use crate::links::queue::{
            CoDelParams, Discipline, DualPi2Params, FqCoDelParams, PieParams, Queue, RedParams,
        };
        // Offered every 1 ms to a 6 Mbit/s link (2 ms a packet), so the queue stands when the
        // link goes down at 1.001 s: every waiting packet is dropped then, by any discipline.
        let rows = vec![
            row(0, 6_000_000, 50, true),
            row(1001, 6_000_000, 50, false),
            row(1500, 6_000_000, 50, true),
        ];
        let disciplines = [
            Discipline::DropTail,
            Discipline::CoDel(CoDelParams::default()),
            Discipline::FqCoDel(FqCoDelParams::default()),
            Discipline::Pie(PieParams::default()),
            Discipline::Red(RedParams::default()),
            Discipline::DualPi2(DualPi2Params::default()),
        ];
        for discipline in disciplines {
            let name = discipline.name();
            let schedule =
                Schedule::new(rows.clone(), false, DelayShape::Step, DownPolicy::Drop).unwrap();
            let cfg = LinkConfig {
                rate: BitRate::from_bps(6_000_000),
                delay: SimDuration::from_millis(50),
                queue_limit: QueueLimit::Packets(1000),
                bucket: None,
            };
            let queue = Queue::new(
                discipline,
                cfg.queue_limit,
                cfg.rate,
                StreamRng::derive(2, "q"),
            );
            let mut link = Link::with_queue(cfg, NoLoss, queue).unwrap();
            link.set_timed(Timed::new(
                Some(schedule),
                None,
                StreamRng::derive(1, "test"),
            ));
            let events = drive(&mut link, 1000, 2000);
            let at_outage = events
                .iter()
                .filter(|e| {
                    matches!(e, LinkEvent::Dropped { cause: DropCause::CallDrop, at, .. }
                        if at.as_nanos() == 1_001_000_000)
                })
                .count();
            assert!(at_outage > 10, "{name}: {at_outage} dropped at the outage");
            assert_eq!(link.queue_len_bytes(), 0, "{name}");
            // Nothing offered before the outage arrives after it.
            assert!(
                events.iter().all(|e| match e {
                    LinkEvent::Delivered { at, pkt } =>
                        at.as_nanos() < 1_100_000_000 || pkt.id > 1001,
                    _ => true,
                }),
                "{name}"
            );
            assert_eq!(
                events.len(),
                2001,
                "{name}: every packet offered has its event"
            );
            assert!(link.conservation_holds(), "{name}");
        }
    }

    #[test]
    fn an_outage_holds_or_drops_what_the_link_carries() {
        let rows = vec![
            row(0, 10_000_000, 50, true),
            row(1001, 10_000_000, 50, false),
            row(1500, 10_000_000, 50, true),
        ];
        let hold = Schedule::new(rows.clone(), false, DelayShape::Step, DownPolicy::Hold).unwrap();
        let mut link = link_with(hold);
        let events = drive(&mut link, 2000, 2000);
        assert!(events
            .iter()
            .all(|e| matches!(e, LinkEvent::Delivered { .. })));
        // Nothing leaves in the outage: the packet in service at 1.001 s resumes at 1.5 s.
        let arrivals: Vec<u64> = events.iter().map(|e| e.at().as_nanos()).collect();
        assert!(!arrivals
            .iter()
            .any(|&a| a > 1_051_000_000 && a < 1_550_000_000));
        assert!(arrivals.contains(&1_550_200_000));
        assert_eq!(events.len(), 1001);
        assert!(link.conservation_holds());

        let drop = Schedule::new(rows, false, DelayShape::Step, DownPolicy::Drop).unwrap();
        let mut link = link_with(drop);
        let events = drive(&mut link, 2000, 2000);
        let dropped: Vec<&LinkEvent> = events
            .iter()
            .filter(|e| matches!(e, LinkEvent::Dropped { .. }))
            .collect();
        // The packet in service at 1.001 s (offered at 1 s), dropped then, and the 249
        // offered during the outage.
        assert_eq!(dropped.len(), 250);
        assert!(matches!(
            dropped[0],
            LinkEvent::Dropped { at, pkt, .. } if at.as_nanos() == 1_001_000_000 && pkt.id == 500
        ));
        assert!(dropped.iter().all(|e| matches!(
            e,
            LinkEvent::Dropped { cause: DropCause::CallDrop, at, .. }
                if at.as_nanos() >= 1_000_000_000 && at.as_nanos() < 1_500_000_000
        )));
        assert_eq!(link.stats().dropped_pkts(DropCause::CallDrop), 250);
        assert!(link.conservation_holds());
    }
}
