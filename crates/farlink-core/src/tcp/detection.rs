//! Loss detection: what an ACK, or the expiry of the retransmission timer, tells the sender
//! *happened*, before loss recovery (`recovery.rs`) and the congestion controller (`cc/`)
//! decide *what to do* about it.
//!
//! Read first: RFC 5681 section 2 (the duplicate ACK), RFC 6675 sections 2–4 (`Update()`,
//! `IsLost()`, the SACK definition of a duplicate), RFC 6298 section 3 (Karn's rule) and
//! RFC 7323 section 4 (RTT from timestamps). The split follows quinn-proto's
//! `detect_lost_packets` (the sent-packet record answers which packets are now acknowledged
//! and which lost, and hands both on) and ns-3's `TcpRecoveryOps` (recovery only reacts to
//! what detection found).
//!
//! [`LossDetector::on_ack`] takes one ACK into the [`Scoreboard`] (SACK blocks, then the
//! cumulative ACK, then RFC 6675 `IsLost()` when loss recovery is SACK-based) and returns an
//! [`AckOutcome`]: the bytes newly acknowledged and SACKed, the bytes newly presumed lost,
//! whether the ACK is a duplicate, and the RTT sample it gives. The segments it newly
//! acknowledged and newly presumed lost are in [`LossDetector::acked`] and
//! [`LossDetector::lost`] until the next ACK, for the controller's batch.
//!
//! Two losses are not inferred from an ACK alone and are reported here when the sender acts:
//! without SACK, the segment at `SND.UNA` is presumed lost once recovery decides to
//! retransmit it ([`LossDetector::presume_head_lost`]); on a timeout every unSACKed segment
//! is ([`LossDetector::on_timeout`]).
//!
//! The detector holds no sequence space and no timer: it reads the scoreboard and the
//! sender's `SND.UNA` / `SND.MAX` as they were before the ACK. A rule that needs more (a
//! RACK-style time threshold for lost retransmissions, an ST-PD error control that reacts to
//! losses without telling the controller) belongs here and changes the outcome, not the
//! sender's glue.
//!
//! With `rack` loss recovery ([`LossDetector::with_rack`]) RFC 8985's time-based rule
//! (`rack.rs`) takes the place of `IsLost()`: every delivery updates the RACK state, and an
//! ACK marks lost what was sent before the most recently sent delivered segment and is
//! overdue; what is not yet overdue is in [`AckOutcome::rack_wait`], the reordering timer
//! the sender runs ([`LossDetector::on_rack_timer`]).

use super::cc::{Acked, Lost};
use super::rack::{Delivered, Rack, ReoContext};
use super::scoreboard::Scoreboard;
use super::segment::{timestamp_clock, Flags, Segment, TIMESTAMP_TICK};
use crate::time::{SimDuration, SimTime};

/// The sender's state just before an ACK, as far as detection needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BeforeAck {
    /// `SND.UNA` and `SND.MAX` before the ACK.
    pub snd_una: u64,
    pub snd_max: u64,
    /// The ACK announced another window than the last one (RFC 5681's condition (e)).
    pub window_changed: bool,
    /// In fast or timeout recovery, and the smoothed RTT: RACK's reordering window reads them.
    pub in_recovery: bool,
    pub srtt: Option<SimDuration>,
}

/// What one ACK told the sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckOutcome {
    /// The cumulative ACK.
    pub ack: u64,
    /// Bytes the cumulative ACK newly covers.
    pub newly_acked_bytes: u64,
    /// Bytes newly covered by SACK blocks (RFC 6675 `Update()`).
    pub newly_sacked_bytes: u64,
    /// Bytes newly presumed lost by RFC 6675 `IsLost()` (SACK-based recovery only).
    pub newly_lost_bytes: u64,
    /// A duplicate ACK: RFC 5681 section 2, or with SACK-based recovery and SACK blocks
    /// present, RFC 6675 section 2 (it SACKs previously unSACKed data).
    pub duplicate: bool,
    /// The RTT sample (RFC 6298 section 3, Karn's rule; RFC 7323 4.1 with timestamps).
    pub rtt_sample: Option<SimDuration>,
    /// RACK: the time until the earliest segment RACK will presume lost unless delivered
    /// first (the reordering timer); `None` without RACK or when none is waiting.
    pub rack_wait: Option<SimDuration>,
}

/// Loss detection of one sender, with the per-ACK lists it hands on reserved once.
#[derive(Clone, Debug)]
pub struct LossDetector {
    /// RFC 6675 `IsLost()` and the SACK definition of a duplicate apply (SACK-based loss
    /// recovery, SACK negotiated).
    sack_based: bool,
    dup_thresh: u32,
    smss_bytes: u64,
    /// Timestamps were negotiated: an echoed TSval times an ACK Karn's rule leaves ambiguous.
    timestamps: bool,
    /// RFC 8985 RACK in place of `IsLost()` (`rack` loss recovery).
    rack: Option<Rack>,
    /// The segments the last ACK newly acknowledged and newly presumed lost.
    pub(super) acked: Vec<Acked>,
    pub(super) lost: Vec<Lost>,
}

impl LossDetector {
    pub fn new(
        sack_based: bool,
        dup_thresh: u32,
        smss_bytes: u64,
        timestamps: bool,
        capacity_segments: usize,
    ) -> Self {
        LossDetector {
            sack_based,
            dup_thresh,
            smss_bytes,
            timestamps,
            rack: None,
            acked: Vec::with_capacity(capacity_segments),
            lost: Vec::with_capacity(capacity_segments),
        }
    }

    /// RACK (RFC 8985) decides losses instead of RFC 6675 `IsLost()`.
    pub fn with_rack(mut self) -> Self {
        self.rack = Some(Rack::default());
        self
    }
    pub fn uses_rack(&self) -> bool {
        self.rack.is_some()
    }

    /// The segments the last ACK newly acknowledged, oldest first.
    pub fn acked(&self) -> &[Acked] {
        &self.acked
    }
    /// The segments newly presumed lost since the last ACK began (by that ACK, and by
    /// [`LossDetector::presume_head_lost`]).
    pub fn lost(&self) -> &[Lost] {
        &self.lost
    }

    /// Takes one acceptable ACK (`SND.UNA <= SEG.ACK <= SND.MAX`) into the scoreboard and
    /// says what it told.
    // Inlined into its one caller, `Sender::on_ack`: out of line, the call and the outcome it
    // returns cost 2.0 M instructions more on `examples/stpd_wireless.rs` (cachegrind).
    #[inline]
    pub fn on_ack(
        &mut self,
        now: SimTime,
        seg: &Segment,
        before: BeforeAck,
        scoreboard: &mut Scoreboard,
    ) -> AckOutcome {
        let ack = seg.ack;
        // RFC 6675 Update(): record the SACK blocks (and with RACK, each delivery).
        let blocks = seg.options.sack.as_slice();
        let newly_sacked_bytes = match self.rack.as_mut() {
            Some(rack) => scoreboard.on_sack_with(blocks, |s| rack.on_delivered(now, s.into())),
            None => scoreboard.on_sack(blocks),
        };

        // The cumulative ACK.
        self.acked.clear();
        self.lost.clear();
        let cumulative = scoreboard.on_cumulative_ack(ack, &mut self.acked);
        let newly_acked_bytes = ack - before.snd_una;
        debug_assert_eq!(cumulative.newly_acked_bytes, newly_acked_bytes);

        // RACK (RFC 8985 6.2 steps 2-5), or RFC 6675 IsLost(), applied to the scoreboard.
        let mut rack_wait = None;
        let newly_lost_bytes = if let Some(rack) = self.rack.as_mut() {
            for a in self.acked.iter().filter(|a| !a.was_sacked) {
                rack.on_delivered(now, Delivered::from(a));
            }
            let ctx = reo_context(&before, self.dup_thresh, self.smss_bytes);
            let (lost, wait) = rack.detect_loss(now, &ctx, scoreboard, &mut self.lost);
            rack_wait = wait;
            lost
        } else if self.sack_based {
            scoreboard.detect_losses(self.dup_thresh, self.smss_bytes, &mut self.lost)
        } else {
            0
        };

        // RTT. RFC 6298 section 3 (Karn): no sample from an ACK of a retransmitted segment;
        // RFC 7323 4.1: with timestamps the echoed TSval times the segment that advanced the
        // left edge, retransmission or not. The segment's own send time is exact to the
        // nanosecond and preferred; timestamps (1 ms ticks) resolve the ambiguous case.
        let rtt_sample = if newly_acked_bytes == 0 {
            None
        } else if let Some(sent) = cumulative.rtt_sent_time {
            Some(now - sent)
        } else if let (true, Some(ts)) = (self.timestamps, seg.options.timestamps) {
            let ticks = timestamp_clock(now).wrapping_sub(ts.tsecr);
            Some(SimDuration::from_nanos(
                u64::from(ticks) * TIMESTAMP_TICK.as_nanos(),
            ))
        } else {
            None
        };

        // RFC 5681 section 2, DUPLICATE ACKNOWLEDGMENT: "(a) the receiver of the ACK has
        // outstanding data, (b) the incoming acknowledgment carries no data, (c) the SYN and
        // FIN bits are both off, (d) the acknowledgment number is equal to the greatest
        // acknowledgment received on the given connection (TCP.UNA from [RFC793]) and (e) the
        // advertised window in the incoming acknowledgment equals the advertised window in
        // the last incoming acknowledgment." RFC 6675 section 2: with SACK, "a segment that
        // arrives carrying a SACK block that identifies previously unacknowledged and
        // un-SACKed octets between HighACK and HighData".
        let duplicate = if self.sack_based && !seg.options.sack.is_empty() {
            newly_sacked_bytes > 0
        } else {
            before.snd_max > before.snd_una
                && newly_acked_bytes == 0
                && seg.payload_bytes == 0
                && !seg.flags.contains(Flags::SYN)
                && !seg.flags.contains(Flags::FIN)
                && !before.window_changed
        };

        AckOutcome {
            ack,
            newly_acked_bytes,
            newly_sacked_bytes,
            newly_lost_bytes,
            duplicate,
            rtt_sample,
            rack_wait,
        }
    }

    /// RACK's reordering timer expired (RFC 8985 6.3, `RACK_detect_loss_and_arm_timer`):
    /// detects losses again with no ACK. [`LossDetector::lost`] then holds what it found;
    /// returns their bytes and the time until the next segment is due.
    pub fn on_rack_timer(
        &mut self,
        now: SimTime,
        before: BeforeAck,
        scoreboard: &mut Scoreboard,
    ) -> (u64, Option<SimDuration>) {
        self.acked.clear();
        self.lost.clear();
        let ctx = reo_context(&before, self.dup_thresh, self.smss_bytes);
        match self.rack.as_ref() {
            Some(rack) => rack.detect_loss(now, &ctx, scoreboard, &mut self.lost),
            None => (0, None),
        }
    }

    /// Recovery decided to retransmit the segment at `SND.UNA` on an ACK. Without SACK-based
    /// recovery, the duplicate ACKs (or the partial ACK) alone presume it lost: marks it, adds
    /// it to [`LossDetector::lost`] and returns its bytes. With SACK-based recovery `IsLost()`
    /// alone decides, and nothing changes. 0 if it was already presumed lost, or nothing is
    /// outstanding.
    pub fn presume_head_lost(&mut self, scoreboard: &mut Scoreboard) -> u64 {
        if self.sack_based {
            return 0;
        }
        let Some(head) = scoreboard.get(0).copied() else {
            return 0;
        };
        if head.lost {
            return 0;
        }
        scoreboard.mark_lost(0);
        self.lost.push(Lost {
            seq: head.start,
            bytes: head.len_bytes(),
            sent_time: head.last_sent,
        });
        head.len_bytes()
    }

    /// The retransmission timer expired: every unSACKed segment is presumed lost and no
    /// retransmission counts as in flight any more (RFC 6675 section 5.1, RFC 5681 3.1).
    /// Returns the bytes presumed lost, already-lost ones included: the FlightSize less
    /// what is SACKed.
    pub fn on_timeout(&mut self, scoreboard: &mut Scoreboard, flight_size_bytes: u64) -> u64 {
        let lost_bytes = flight_size_bytes - scoreboard.sacked_bytes();
        scoreboard.on_timeout();
        lost_bytes
    }
}

/// What RACK's reordering window reads of the sender's state.
fn reo_context(before: &BeforeAck, dup_thresh: u32, smss_bytes: u64) -> ReoContext {
    ReoContext {
        in_recovery: before.in_recovery,
        srtt: before.srtt,
        dup_thresh,
        smss_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::segment::SackBlock;

    const SMSS: u64 = 1000;

    fn at(ms: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_millis(ms)
    }

    /// A scoreboard of `n` full segments, segment `i` sent at `i` ms.
    fn board(n: u64) -> Scoreboard {
        let mut sb = Scoreboard::with_capacity(16);
        for i in 0..n {
            sb.on_sent_new(i * SMSS, (i + 1) * SMSS, at(i));
        }
        sb
    }

    fn detector(sack_based: bool) -> LossDetector {
        LossDetector::new(sack_based, 3, SMSS, false, 16)
    }

    fn ack(n: u64) -> Segment {
        Segment {
            ack: n * SMSS,
            flags: Flags::ACK,
            ..Segment::default()
        }
    }

    fn sack(n: u64, from: u64, to: u64) -> Segment {
        let mut a = ack(n);
        a.options.sack.push(SackBlock {
            left: from * SMSS,
            right: to * SMSS,
        });
        a
    }

    fn before(una: u64, max: u64) -> BeforeAck {
        BeforeAck {
            snd_una: una * SMSS,
            snd_max: max * SMSS,
            window_changed: false,
            in_recovery: false,
            srtt: None,
        }
    }

    #[test]
    fn an_ack_of_new_data_acknowledges_and_gives_a_sample() {
        let mut sb = board(4);
        let mut d = detector(true);
        let o = d.on_ack(at(100), &ack(2), before(0, 4), &mut sb);
        assert_eq!(o.newly_acked_bytes, 2 * SMSS);
        assert!(!o.duplicate);
        // The newest segment covered (sent at 1 ms) times the ACK.
        assert_eq!(o.rtt_sample, Some(at(100) - at(1)));
        assert_eq!(d.acked().len(), 2);
        assert!(d.lost().is_empty());
    }

    #[test]
    fn the_same_ack_again_is_a_duplicate_unless_it_changes_the_window() {
        let mut sb = board(4);
        let mut d = detector(false);
        d.on_ack(at(100), &ack(1), before(0, 4), &mut sb);
        let o = d.on_ack(at(101), &ack(1), before(1, 4), &mut sb);
        assert!(o.duplicate);
        assert_eq!((o.newly_acked_bytes, o.rtt_sample), (0, None));
        let moved = BeforeAck {
            window_changed: true,
            ..before(1, 4)
        };
        assert!(!d.on_ack(at(102), &ack(1), moved, &mut sb).duplicate);
        // Nothing outstanding: a repeated ACK is no duplicate.
        let mut empty = board(0);
        assert!(
            !d.on_ack(at(103), &ack(0), before(0, 0), &mut empty)
                .duplicate
        );
    }

    #[test]
    fn with_sack_only_new_sack_information_makes_a_duplicate() {
        let mut sb = board(6);
        let mut d = detector(true);
        let o = d.on_ack(at(100), &sack(0, 1, 2), before(0, 6), &mut sb);
        assert!(o.duplicate);
        assert_eq!(o.newly_sacked_bytes, SMSS);
        let again = d.on_ack(at(101), &sack(0, 1, 2), before(0, 6), &mut sb);
        assert!(!again.duplicate, "the same block twice tells nothing new");
    }

    #[test]
    fn dup_thresh_sacked_segments_above_a_hole_presume_it_lost() {
        let mut sb = board(6);
        let mut d = detector(true);
        for (k, top) in [2u64, 3].into_iter().enumerate() {
            let o = d.on_ack(at(100 + k as u64), &sack(0, 1, top), before(0, 6), &mut sb);
            assert_eq!(o.newly_lost_bytes, 0, "{} SACKed above", top - 1);
        }
        let o = d.on_ack(at(102), &sack(0, 1, 4), before(0, 6), &mut sb);
        assert_eq!(o.newly_lost_bytes, SMSS);
        assert_eq!(d.lost().len(), 1);
        assert_eq!(d.lost()[0].seq, 0);
        assert!(sb.get(0).unwrap().lost);
        // Already lost: the next ACK does not report it again.
        let o = d.on_ack(at(103), &sack(0, 1, 5), before(0, 6), &mut sb);
        assert_eq!(o.newly_lost_bytes, 0);
        assert!(d.lost().is_empty());
    }

    #[test]
    fn without_sack_based_recovery_no_ack_presumes_a_loss() {
        let mut sb = board(6);
        let mut d = detector(false);
        let o = d.on_ack(at(100), &sack(0, 1, 5), before(0, 6), &mut sb);
        assert_eq!(o.newly_lost_bytes, 0);
        assert!(
            o.duplicate,
            "RFC 5681's definition: the SACK blocks are not read"
        );
        assert_eq!(d.presume_head_lost(&mut sb), SMSS);
        assert_eq!(d.lost().len(), 1);
        assert_eq!(d.presume_head_lost(&mut sb), 0, "once");
        // With SACK-based recovery the scoreboard decides, not the retransmission.
        let mut sb = board(6);
        let mut d = detector(true);
        d.on_ack(at(100), &sack(0, 1, 2), before(0, 6), &mut sb);
        assert_eq!(d.presume_head_lost(&mut sb), 0);
        assert!(!sb.get(0).unwrap().lost);
    }

    #[test]
    fn karn_no_sample_from_a_retransmission_without_timestamps() {
        let mut sb = board(2);
        sb.on_retransmitted(0, at(50));
        let mut d = detector(false);
        let o = d.on_ack(at(100), &ack(1), before(0, 2), &mut sb);
        assert_eq!(o.rtt_sample, None);
        // With timestamps, the echoed TSval times it.
        let mut sb = board(2);
        sb.on_retransmitted(0, at(50));
        let mut d = LossDetector::new(false, 3, SMSS, true, 16);
        let mut a = ack(1);
        a.options.timestamps = Some(crate::tcp::segment::Timestamps {
            tsval: 0,
            tsecr: timestamp_clock(at(50)),
        });
        let o = d.on_ack(at(100), &a, before(0, 2), &mut sb);
        assert_eq!(o.rtt_sample, Some(SimDuration::from_millis(50)));
    }

    #[test]
    fn a_timeout_presumes_every_unsacked_byte_lost() {
        let mut sb = board(5);
        let mut d = detector(true);
        d.on_ack(at(100), &sack(0, 2, 3), before(0, 5), &mut sb);
        assert_eq!(d.on_timeout(&mut sb, 5 * SMSS), 4 * SMSS);
        assert_eq!(sb.pipe_bytes(), 0);
        assert!(sb.iter().all(|s| s.lost || s.sacked));
    }
}
