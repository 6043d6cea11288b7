//! When an MP receiver gives up a missing fragment: RFC 1990 section 4.1's rule on the members'
//! sequence numbers, and a staleness timer for when that rule cannot fire.
//!
//! One implementation for the simulator's [`super::Reassembly`] and the link manager's wire
//! reassembly (`farlink_linkmgr::ppp::mp::Reassembler`).
//!
//! * **Floors**: each member delivers in sequence order, so once every member that may still
//!   deliver something has delivered a number above a missing fragment, it cannot come. A
//!   member out of the bundle does not count, nor one known to have nothing on its way
//!   (`quiet`: its call up and its link idle).
//! * **Timer**: a member whose call was lost before anyone noticed delivers nothing, and its
//!   floor holds everything back. Once the receiver has held fragments it cannot hand up for
//!   `timeout`, it gives the head up. [`stale_timeout`] sizes it to the members' rates.

use crate::time::{BitRate, SimDuration, SimTime};

/// What the rule says about the lowest missing fragment at the head of the receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It may still come.
    Wait,
    /// Every member has delivered something later: it is lost.
    Lost,
    /// The receiver held fragments back for the whole timeout.
    TimedOut,
}

/// The members' floors and the staleness timer of one receiver.
#[derive(Clone, Debug)]
pub struct LossRule {
    /// Per member: every sequence number below it that was sent on this member has arrived or
    /// never will (the next after the last it delivered, or the first sent after it joined).
    floor: Vec<u64>,
    in_bundle: Vec<bool>,
    /// The member has nothing on its way and its call is up: its link layer says so (as the
    /// idle frames of seed 004's RLP do), so its floor holds nothing back.
    quiet: Vec<bool>,
    /// Since when the receiver holds fragments it cannot hand up.
    blocked_since: Option<SimTime>,
    timeout: SimDuration,
}

impl LossRule {
    /// The rule for `members` members, none of them in the bundle yet.
    pub fn new(members: usize, timeout: SimDuration) -> Self {
        LossRule {
            floor: vec![0; members],
            in_bundle: vec![false; members],
            quiet: vec![false; members],
            blocked_since: None,
            timeout,
        }
    }

    pub fn members(&self) -> usize {
        self.floor.len()
    }

    pub fn timeout(&self) -> SimDuration {
        self.timeout
    }

    /// `member` joins the bundle; nothing numbered below `next_seq` will come on it.
    pub fn join(&mut self, member: usize, next_seq: u64) {
        self.in_bundle[member] = true;
        self.floor[member] = next_seq;
    }

    /// `member` leaves the bundle: its floor no longer holds anything back.
    pub fn leave(&mut self, member: usize) {
        self.in_bundle[member] = false;
    }

    pub fn in_bundle(&self, member: usize) -> bool {
        self.in_bundle.get(member).copied().unwrap_or(false)
    }

    /// Whether `member` is known to have nothing on its way (its call up, its link idle).
    pub fn set_quiet(&mut self, member: usize, quiet: bool) {
        self.quiet[member] = quiet;
    }

    /// Unit `seq` arrived on `member`.
    pub fn on_arrival(&mut self, member: usize, seq: u64) {
        if let Some(f) = self.floor.get_mut(member) {
            *f = (*f).max(seq + 1);
        }
    }

    /// The members whose floor is at or below `seq` (those holding it back).
    pub fn holding_back(&self, seq: u64) -> impl Iterator<Item = usize> + '_ {
        (0..self.floor.len())
            .filter(move |&m| self.in_bundle[m] && !self.quiet[m] && self.floor[m] <= seq)
    }

    /// The lowest floor of the members in the bundle that may still deliver something
    /// (`u64::MAX` with none).
    pub fn bundle_floor(&self) -> u64 {
        (0..self.floor.len())
            .filter(|&m| self.in_bundle[m] && !self.quiet[m])
            .map(|m| self.floor[m])
            .min()
            .unwrap_or(u64::MAX)
    }

    /// The verdict at `t` on the head whose lowest missing unit is `lowest_missing`, while the
    /// receiver is `holding` fragments it cannot hand up. Starts the timer if it is not running.
    pub fn verdict(&mut self, t: SimTime, lowest_missing: u64, holding: bool) -> Verdict {
        if lowest_missing < self.bundle_floor() {
            return Verdict::Lost;
        }
        if holding {
            match self.blocked_since {
                Some(since) if t >= since + self.timeout => return Verdict::TimedOut,
                Some(_) => {}
                None => self.blocked_since = Some(t),
            }
        }
        Verdict::Wait
    }

    /// The head moved (handed up or given up), or nothing is held: the timer stops.
    pub fn clear_timer(&mut self) {
        self.blocked_since = None;
    }

    /// When the timer would give the head up, if the receiver is holding fragments back.
    pub fn deadline(&self) -> Option<SimTime> {
        self.blocked_since.map(|s| s + self.timeout)
    }
}

/// A staleness timeout sized to the members: the longest a fragment can legitimately trail a
/// later one. A fragment sent on the slowest member may wait behind `queued_frames` whole
/// frames of `max_frame_bytes` before its own serialisation, then cross `max_delay`; fragments
/// on a faster member can arrive that much earlier. Twice that bound keeps jitter (ARQ
/// retransmissions, flow control) from giving up fragments still on their way.
///
/// A fixed 0.5 s (FreeBSD's ng_ppp) is shorter than one 1500-byte frame at 2400 bit/s (5 s).
pub fn stale_timeout(
    min_rate: BitRate,
    max_frame_bytes: u64,
    queued_frames: u64,
    max_delay: SimDuration,
) -> SimDuration {
    let bits = (queued_frames + 1) * max_frame_bytes * 8;
    let serial_ns = bits.saturating_mul(1_000_000_000) / min_rate.bps().max(1);
    SimDuration::from_nanos(2 * (serial_ns + max_delay.as_nanos()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floors_then_timer() {
        let mut r = LossRule::new(2, SimDuration::from_secs(1));
        r.join(0, 0);
        r.join(1, 0);
        r.on_arrival(0, 5);
        assert_eq!(r.verdict(SimTime::from_nanos(0), 3, true), Verdict::Wait);
        r.on_arrival(1, 4);
        assert_eq!(r.verdict(SimTime::from_nanos(1), 3, true), Verdict::Lost);
        r.clear_timer();
        let t1 = SimTime::from_nanos(1_000_000_000);
        assert_eq!(r.verdict(t1, 7, true), Verdict::Wait);
        assert_eq!(
            r.verdict(t1 + SimDuration::from_secs(1), 7, true),
            Verdict::TimedOut
        );
        r.clear_timer();
        assert_eq!(r.deadline(), None);
    }

    #[test]
    fn timeout_at_2400_bps_exceeds_a_full_fragment() {
        let t = stale_timeout(BitRate::from_bps(2400), 1500, 0, SimDuration::ZERO);
        assert_eq!(t, SimDuration::from_secs(10));
    }
}
