//! The sender's timers in one table: every deadline the [`super::sender::Sender`] keeps, named
//! by [`Timer`], set and stopped by name, the earliest read in one place (the shape of quinn's
//! `connection/timer.rs`: a fixed array indexed by the timer's name).
//!
//! The table only keeps instants; what an expiry does stays with the sender
//! ([`super::sender::Sender::on_timeout`], and `poll_transmit` for [`Timer::Pacing`]).

use crate::time::SimTime;

/// The sender's timers, in the order the sender acts on those due at the same instant.
///
/// [`super::sender::Sender::on_timeout`] looks at them in this order: the persist timer first
/// (it only marks a window probe due), then RACK's reordering timer (whose losses may start
/// recovery and so stop the probe timer), then the probe timer (a probe due ends the call:
/// a retransmission timer due at the same instant waits for the next call, as the probe
/// rearms it), then the retransmission timer. The pacing release comes last: the world calls
/// `on_timeout` and then `poll_transmit`, which is where a paced segment leaves.
/// [`Timers::next`] breaks ties between timers due at the same instant in the same order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Timer {
    /// The persist timer (RFC 9293 3.8.6.1): runs while the peer's window holds back new
    /// data and nothing is outstanding.
    Persist = 0,
    /// RACK's reordering timer (RFC 8985 6.3; `rack` recovery only).
    Reordering = 1,
    /// The tail-loss probe timer (RFC 8985 7.2; `rack` recovery only).
    Probe = 2,
    /// The retransmission timer (RFC 6298 section 5); in SYN-SENT it times the SYN.
    Retransmission = 3,
    /// When a segment held back by pacing may leave: running only while the last
    /// `poll_transmit` returned nothing because of the pacing rate.
    Pacing = 4,
}

impl Timer {
    /// Every timer, in [`Timer`]'s order.
    pub const ALL: [Timer; 5] = [
        Timer::Persist,
        Timer::Reordering,
        Timer::Probe,
        Timer::Retransmission,
        Timer::Pacing,
    ];
}

/// One deadline per [`Timer`], `None` while the timer is stopped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timers {
    at: [Option<SimTime>; 5],
}

impl Timers {
    /// Starts (or restarts) `timer` to expire at `at`.
    #[inline]
    pub fn set(&mut self, timer: Timer, at: SimTime) {
        self.at[timer as usize] = Some(at);
    }

    /// Sets `timer` to `at`, or stops it when `at` is `None`.
    #[inline]
    pub fn set_or_stop(&mut self, timer: Timer, at: Option<SimTime>) {
        self.at[timer as usize] = at;
    }

    /// Stops `timer`.
    #[inline]
    pub fn stop(&mut self, timer: Timer) {
        self.at[timer as usize] = None;
    }

    /// When `timer` expires; `None` while it is stopped.
    #[inline]
    pub fn get(&self, timer: Timer) -> Option<SimTime> {
        self.at[timer as usize]
    }

    #[inline]
    pub fn is_running(&self, timer: Timer) -> bool {
        self.at[timer as usize].is_some()
    }

    /// Whether `timer` runs and its deadline has come at `now`.
    #[inline]
    pub fn is_expired(&self, timer: Timer, now: SimTime) -> bool {
        matches!(self.at[timer as usize], Some(d) if now >= d)
    }

    /// The timers expired at `now`, in [`Timer`]'s order.
    pub fn expired(&self, now: SimTime) -> impl Iterator<Item = Timer> + '_ {
        Timer::ALL
            .into_iter()
            .filter(move |&t| self.is_expired(t, now))
    }

    /// The earliest running timer and its deadline; of timers due at the same instant, the
    /// first in [`Timer`]'s order.
    pub fn next(&self) -> Option<(Timer, SimTime)> {
        let mut best: Option<(Timer, SimTime)> = None;
        for timer in Timer::ALL {
            if let Some(at) = self.get(timer) {
                if best.is_none_or(|(_, b)| at < b) {
                    best = Some((timer, at));
                }
            }
        }
        best
    }

    /// The earliest deadline of every timer but [`Timer::Pacing`]: what `on_timeout` acts on.
    // Pairwise rather than an iterator's `min`: the world asks after every transmission, and
    // the iterator's loop cost some 60 instructions a call where this costs a few (cachegrind
    // on `examples/stpd_wireless.rs`).
    #[inline]
    pub fn next_timeout(&self) -> Option<SimTime> {
        let [persist, reordering, probe, retransmission, _] = self.at;
        earliest(
            earliest(retransmission, persist),
            earliest(probe, reordering),
        )
    }

    /// The earliest deadline of all: when the sender next wants to be woken.
    #[inline]
    pub fn next_deadline(&self) -> Option<SimTime> {
        earliest(self.next_timeout(), self.at[Timer::Pacing as usize])
    }
}

/// The earlier of two deadlines, either of which may be unset.
#[inline]
fn earliest(a: Option<SimTime>, b: Option<SimTime>) -> Option<SimTime> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SimDuration;

    fn at(ms: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_millis(ms)
    }

    #[test]
    fn an_empty_table_has_nothing_due() {
        let t = Timers::default();
        assert_eq!(t.next(), None);
        assert_eq!(t.next_deadline(), None);
        assert_eq!(t.next_timeout(), None);
        assert_eq!(t.expired(at(1_000_000)).count(), 0);
    }

    #[test]
    fn set_stop_and_get_address_one_timer_each() {
        let mut t = Timers::default();
        t.set(Timer::Probe, at(30));
        t.set(Timer::Retransmission, at(200));
        assert_eq!(t.get(Timer::Probe), Some(at(30)));
        assert_eq!(t.get(Timer::Retransmission), Some(at(200)));
        assert!(!t.is_running(Timer::Persist));
        t.stop(Timer::Probe);
        assert_eq!(t.get(Timer::Probe), None);
        assert_eq!(t.next(), Some((Timer::Retransmission, at(200))));
        t.set_or_stop(Timer::Retransmission, None);
        assert_eq!(t.next(), None);
    }

    #[test]
    fn the_earliest_wins_and_ties_go_in_the_order_the_sender_acts() {
        let mut t = Timers::default();
        t.set(Timer::Pacing, at(10));
        t.set(Timer::Retransmission, at(10));
        t.set(Timer::Probe, at(10));
        t.set(Timer::Persist, at(11));
        assert_eq!(t.next(), Some((Timer::Probe, at(10))));
        t.set(Timer::Reordering, at(10));
        assert_eq!(t.next(), Some((Timer::Reordering, at(10))));
        t.set(Timer::Persist, at(10));
        assert_eq!(t.next(), Some((Timer::Persist, at(10))));
        t.set(Timer::Pacing, at(9));
        assert_eq!(t.next(), Some((Timer::Pacing, at(9))));
    }

    #[test]
    fn pacing_wakes_the_sender_but_is_no_timeout() {
        let mut t = Timers::default();
        t.set(Timer::Pacing, at(5));
        t.set(Timer::Retransmission, at(200));
        assert_eq!(t.next_timeout(), Some(at(200)));
        assert_eq!(t.next_deadline(), Some(at(5)));
    }

    #[test]
    fn next_timeout_and_next_deadline_agree_with_next() {
        // Every combination of the five timers running or not, with distinct and equal
        // deadlines: the pairwise minimum is the scan's.
        for mask in 0u32..32 {
            for equal in [false, true] {
                let mut t = Timers::default();
                for (i, timer) in Timer::ALL.into_iter().enumerate() {
                    if mask & (1 << i) != 0 {
                        let ms = if equal { 7 } else { 50 - 10 * i as u64 };
                        t.set(timer, at(ms));
                    }
                }
                assert_eq!(t.next_deadline(), t.next().map(|(_, d)| d), "{mask:05b}");
                let mut no_pacing = t;
                no_pacing.stop(Timer::Pacing);
                assert_eq!(t.next_timeout(), no_pacing.next().map(|(_, d)| d));
            }
        }
    }

    #[test]
    fn expired_lists_the_due_timers_in_order() {
        let mut t = Timers::default();
        t.set(Timer::Retransmission, at(100));
        t.set(Timer::Persist, at(100));
        t.set(Timer::Probe, at(101));
        t.set(Timer::Reordering, at(99));
        let due: Vec<Timer> = t.expired(at(100)).collect();
        assert_eq!(
            due,
            [Timer::Persist, Timer::Reordering, Timer::Retransmission]
        );
        assert!(t.is_expired(Timer::Reordering, at(99)));
        assert!(!t.is_expired(Timer::Probe, at(100)));
    }
}
