//! Pacing: when the next segment may leave, for a congestion controller that paces
//! ([`super::cc::CongestionController::pacing_rate`], BBR's `pacing_gain × BtlBw`).
//!
//! The rule is Linux's fq pacing of one flow, one segment at a time: a segment sent at `t`
//! at rate `r` lets the next leave at `t + wire bytes × 8 / r`, rounded up to the
//! nanosecond; there is no burst allowance (quinn's `connection/pacing.rs` is a token bucket
//! with one; this pacer is the bucket of depth one segment). Every segment counts, whatever it
//! is (retransmissions and probes included), and a controller that does not pace is never
//! held. The rate is the controller's: the pacer is handed it on each question and keeps
//! only the release instant.

use crate::tcp::segment::Segment;
use crate::time::{BitRate, SimTime};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pacer {
    /// The earliest time the next segment may leave while the controller paces.
    release_at: SimTime,
}

impl Pacer {
    /// `Some(release instant)` if a segment may not leave at `now` under `rate`; `None` if it
    /// may (always when the controller does not pace: `rate` is `None`).
    #[inline]
    pub fn holds_until(&self, rate: Option<BitRate>, now: SimTime) -> Option<SimTime> {
        (rate.is_some() && now < self.release_at).then_some(self.release_at)
    }

    /// `seg` left at `now`: the next may leave once its wire bytes have gone out at `rate`.
    /// Nothing changes when the controller does not pace.
    #[inline]
    pub fn on_sent(&mut self, rate: Option<BitRate>, now: SimTime, seg: &Segment) {
        if let Some(rate) = rate {
            let gap = rate
                .max(BitRate::from_bps(1))
                .transmission_time(seg.wire_bytes());
            // Bounded so that an absurdly low rate cannot overflow the clock.
            let gap_ns = gap.as_nanos().min(u64::MAX / 4);
            self.release_at = SimTime::from_nanos(now.as_nanos().saturating_add(gap_ns));
        }
    }

    /// The earliest time the next segment may leave (in the past once it may).
    pub fn release_at(&self) -> SimTime {
        self.release_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SimDuration;

    fn data(payload_bytes: u32) -> Segment {
        Segment {
            payload_bytes,
            ..Segment::default()
        }
    }

    #[test]
    fn a_controller_that_does_not_pace_is_never_held() {
        let mut p = Pacer::default();
        p.on_sent(None, SimTime::ZERO, &data(1448));
        assert_eq!(p.release_at(), SimTime::ZERO);
        assert_eq!(p.holds_until(None, SimTime::ZERO), None);
    }

    #[test]
    fn the_next_segment_waits_for_this_ones_wire_bytes_at_the_rate() {
        let mut p = Pacer::default();
        let seg = data(960);
        let rate = BitRate::from_bps(1_000_000);
        let t0 = SimTime::ZERO + SimDuration::from_millis(5);
        p.on_sent(Some(rate), t0, &seg);
        // 1000 wire bytes (960 + 40 of headers) at 1 Mbit/s: 8 ms.
        let due = t0 + rate.transmission_time(seg.wire_bytes());
        assert_eq!(seg.wire_bytes(), 1000);
        assert_eq!(due, t0 + SimDuration::from_millis(8));
        assert_eq!(p.holds_until(Some(rate), t0), Some(due));
        let just_before = SimTime::from_nanos(due.as_nanos() - 1);
        assert_eq!(p.holds_until(Some(rate), just_before), Some(due));
        assert_eq!(p.holds_until(Some(rate), due), None);
        // A controller that stops pacing is not held by what it paced before.
        assert_eq!(p.holds_until(None, t0), None);
    }

    #[test]
    fn the_gap_rounds_up_to_the_nanosecond() {
        let mut p = Pacer::default();
        // 40 bytes = 320 bits at 3 bit/ns... 3e9 bit/s: 106.67 ns, so 107.
        p.on_sent(
            Some(BitRate::from_bps(3_000_000_000)),
            SimTime::ZERO,
            &data(0),
        );
        assert_eq!(p.release_at(), SimTime::from_nanos(107));
    }

    #[test]
    fn a_rate_of_zero_counts_as_one_bit_per_second_and_cannot_overflow_the_clock() {
        let mut p = Pacer::default();
        p.on_sent(Some(BitRate::from_bps(0)), SimTime::ZERO, &data(1000));
        // 1040 bytes at 1 bit/s.
        assert_eq!(p.release_at(), SimTime::from_nanos(8320 * 1_000_000_000));
        let late = SimTime::from_nanos(u64::MAX - 1);
        p.on_sent(Some(BitRate::from_bps(1)), late, &data(1000));
        assert_eq!(p.release_at(), SimTime::from_nanos(u64::MAX));
    }
}
