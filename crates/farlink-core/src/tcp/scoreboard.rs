//! The sender's record of every segment sent and not yet cumulatively acknowledged: the
//! retransmission queue and the SACK scoreboard in one.
//!
//! Read first: RFC 6675 sections 2–4 (scoreboard, `Update()`, `IsLost()`, `SetPipe()`),
//! RFC 2018 section 5 (what a SACK block may and may not tell the sender), RFC 6298 section 3
//! (Karn's rule, which needs to know which segments were retransmitted).
//!
//! Entries are whole segments as they were first sent; retransmissions keep the same
//! boundaries, so the scoreboard works in segments where RFC 6675 speaks of octets. A SACK
//! block marks an entry only if it covers the entry entirely. The storage is a `VecDeque`
//! reserved once; steady state allocates nothing.
//!
//! `pipe` (RFC 6675 `SetPipe()`) is kept incrementally: every change of an entry removes its
//! old contribution and adds its new one, so reading it costs nothing.

use std::collections::VecDeque;

use super::cc::{Acked, Lost};
use super::segment::SackBlock;
use crate::time::SimTime;

/// One segment in flight or awaiting its cumulative ACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentSegment {
    pub start: u64,
    pub end: u64,
    pub first_sent: SimTime,
    pub last_sent: SimTime,
    /// Times sent; above 1 means retransmitted (Karn's rule).
    pub transmissions: u32,
    /// Covered by a SACK block (RFC 6675 "SACKed").
    pub sacked: bool,
    /// Presumed lost (RFC 6675 `IsLost()`, a fast retransmit, or a timeout): its original
    /// transmission no longer counts in `pipe`.
    pub lost: bool,
    /// Retransmitted since it was last presumed lost, or retransmitted by NextSeg rules (3)
    /// and (4): the retransmission counts in `pipe` (RFC 6675 `SetPipe()` (b)).
    pub retx_in_flight: bool,
}

impl SentSegment {
    pub fn len_bytes(&self) -> u64 {
        self.end - self.start
    }

    /// RFC 6675 `SetPipe()`: "(a) If IsLost (S1) returns false: Pipe is incremented by 1
    /// octet. (b) If S1 <= HighRxt: Pipe is incremented by 1 octet." SACKed octets count
    /// nothing.
    fn pipe_bytes(&self) -> u64 {
        if self.sacked {
            return 0;
        }
        let original = if self.lost { 0 } else { self.len_bytes() };
        let retransmission = if self.retx_in_flight {
            self.len_bytes()
        } else {
            0
        };
        original + retransmission
    }
}

/// What a cumulative ACK removed from the scoreboard.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CumulativeAck {
    pub newly_acked_bytes: u64,
    /// Some newly acknowledged segment had been sent more than once.
    pub retransmitted_acked: bool,
    /// Karn's rule: when no newly acknowledged segment was ever retransmitted, the send time
    /// of the newest one not SACKed before (the one whose arrival most likely triggered this
    /// ACK). `None` if the ACK is ambiguous.
    pub rtt_sent_time: Option<SimTime>,
}

#[derive(Clone, Debug)]
pub struct Scoreboard {
    segments: VecDeque<SentSegment>,
    pipe_bytes: u64,
    sacked_bytes: u64,
    /// The sequence number after the highest SACKed octet (RFC 6675's "highest octet covered
    /// by any received SACK" + 1); `None` when nothing above the cumulative ACK is SACKed.
    high_sacked: Option<u64>,
}

impl Scoreboard {
    pub fn with_capacity(segments: usize) -> Self {
        Scoreboard {
            segments: VecDeque::with_capacity(segments),
            pipe_bytes: 0,
            sacked_bytes: 0,
            high_sacked: None,
        }
    }

    pub fn len(&self) -> usize {
        self.segments.len()
    }
    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }
    pub fn get(&self, index: usize) -> Option<&SentSegment> {
        self.segments.get(index)
    }
    pub fn iter(&self) -> impl Iterator<Item = &SentSegment> + '_ {
        self.segments.iter()
    }
    /// RFC 6675 `pipe`, in bytes.
    pub fn pipe_bytes(&self) -> u64 {
        self.pipe_bytes
    }
    /// Bytes above the cumulative ACK covered by SACK blocks.
    pub fn sacked_bytes(&self) -> u64 {
        self.sacked_bytes
    }
    pub fn high_sacked(&self) -> Option<u64> {
        self.high_sacked
    }

    /// Index of the first entry whose start is at or after `seq`.
    pub fn first_at_or_after(&self, seq: u64) -> usize {
        self.segments.partition_point(|s| s.start < seq)
    }

    /// Index of the entry that starts exactly at `seq`.
    pub fn index_starting_at(&self, seq: u64) -> Option<usize> {
        let i = self.first_at_or_after(seq);
        (self.segments.get(i)?.start == seq).then_some(i)
    }

    /// Records a segment of new data, `[start, end)`, sent at `now`.
    pub fn on_sent_new(&mut self, start: u64, end: u64, now: SimTime) {
        debug_assert!(self.segments.back().is_none_or(|s| s.end == start));
        let seg = SentSegment {
            start,
            end,
            first_sent: now,
            last_sent: now,
            transmissions: 1,
            sacked: false,
            lost: false,
            retx_in_flight: false,
        };
        self.pipe_bytes += seg.pipe_bytes();
        self.segments.push_back(seg);
    }

    /// Records a retransmission of entry `index` at `now`.
    pub fn on_retransmitted(&mut self, index: usize, now: SimTime) {
        self.update(index, |s| {
            s.transmissions += 1;
            s.last_sent = now;
            s.retx_in_flight = true;
        });
    }

    /// Removes every entry the cumulative ACK `ack` covers (trimming one it covers in part)
    /// and appends them to `acked`.
    pub fn on_cumulative_ack(&mut self, ack: u64, acked: &mut Vec<Acked>) -> CumulativeAck {
        let mut out = CumulativeAck::default();
        let mut rtt_candidate = None;
        while let Some(front) = self.segments.front().copied() {
            if front.start >= ack {
                break;
            }
            if front.end > ack {
                // Covered in part: keep the tail.
                let covered = ack - front.start;
                self.update(0, |s| s.start = ack);
                if front.sacked {
                    self.sacked_bytes -= covered;
                }
                out.newly_acked_bytes += covered;
                out.retransmitted_acked |= front.transmissions > 1;
                break;
            }
            self.segments.pop_front();
            self.pipe_bytes -= front.pipe_bytes();
            if front.sacked {
                self.sacked_bytes -= front.len_bytes();
            }
            out.newly_acked_bytes += front.len_bytes();
            out.retransmitted_acked |= front.transmissions > 1;
            if !front.sacked {
                rtt_candidate = Some(front.last_sent);
            }
            acked.push(Acked {
                end_seq: front.end,
                bytes: front.len_bytes(),
                sent_time: front.last_sent,
                retransmitted: front.transmissions > 1,
                was_sacked: front.sacked,
            });
        }
        if !out.retransmitted_acked {
            out.rtt_sent_time = rtt_candidate;
        }
        if self.high_sacked.is_some_and(|h| h <= ack) {
            self.high_sacked = None;
        }
        out
    }

    /// RFC 6675 `Update()`: marks every entry a block covers entirely as SACKed. Returns the
    /// bytes newly SACKed. Blocks at or below the cumulative ACK (D-SACK, RFC 2883) and blocks
    /// that no longer cover what they covered (reneging) change nothing.
    pub fn on_sack(&mut self, blocks: &[SackBlock]) -> u64 {
        self.on_sack_with(blocks, |_| {})
    }

    /// [`Scoreboard::on_sack`], with `delivered` seeing each entry newly SACKed as it was
    /// before the mark (RACK's record of deliveries).
    pub fn on_sack_with(
        &mut self,
        blocks: &[SackBlock],
        mut delivered: impl FnMut(&SentSegment),
    ) -> u64 {
        let mut newly = 0;
        for block in blocks {
            let mut i = self.segments.partition_point(|s| s.end <= block.left);
            while let Some(seg) = self.segments.get(i).copied() {
                if seg.start >= block.right {
                    break;
                }
                if !seg.sacked && seg.start >= block.left && seg.end <= block.right {
                    delivered(&seg);
                    self.update(i, |s| s.sacked = true);
                    self.sacked_bytes += seg.len_bytes();
                    newly += seg.len_bytes();
                    self.high_sacked = Some(self.high_sacked.map_or(seg.end, |h| h.max(seg.end)));
                }
                i += 1;
            }
        }
        newly
    }

    /// RFC 6675 `IsLost()` applied to the whole scoreboard: an unSACKed entry is lost when
    /// "DupThresh discontiguous SACKed sequences have arrived above" it or "more than
    /// (DupThresh - 1) * SMSS bytes with sequence numbers greater than" it have been SACKed.
    /// Entries newly presumed lost are marked and appended to `lost`; returns their bytes.
    ///
    /// Walks down from the highest SACKed entry. The counts above an entry only grow as one
    /// walks down, so the first entry found already lost has every unSACKed entry below it
    /// lost too, and the walk stops there.
    pub fn detect_losses(&mut self, dup_thresh: u32, smss_bytes: u64, lost: &mut Vec<Lost>) -> u64 {
        let Some(high) = self.high_sacked else {
            return 0;
        };
        let mut i = self.segments.partition_point(|s| s.start < high);
        let mut sacked_above_segments = 0u32;
        let mut sacked_above_bytes = 0u64;
        let mut newly = 0;
        let byte_threshold = u64::from(dup_thresh.saturating_sub(1)) * smss_bytes;
        while i > 0 {
            i -= 1;
            let seg = self.segments[i];
            if seg.sacked {
                sacked_above_segments += 1;
                sacked_above_bytes += seg.len_bytes();
                continue;
            }
            if seg.lost {
                break;
            }
            if sacked_above_segments >= dup_thresh || sacked_above_bytes > byte_threshold {
                self.update(i, |s| s.lost = true);
                newly += seg.len_bytes();
                lost.push(Lost {
                    seq: seg.start,
                    bytes: seg.len_bytes(),
                    sent_time: seg.last_sent,
                });
            }
        }
        newly
    }

    /// Presumes entry `index` lost (a fast retransmit without SACK information).
    pub fn mark_lost(&mut self, index: usize) {
        self.update(index, |s| s.lost = true);
    }

    /// Presumes entry `index` lost again by time (RACK): its retransmission, if one is out,
    /// no longer counts in `pipe` and it is due for another.
    pub fn mark_lost_again(&mut self, index: usize) {
        self.update(index, |s| {
            s.lost = true;
            s.retx_in_flight = false;
        });
    }

    /// A retransmission timeout: every unSACKed entry is presumed lost and no retransmission
    /// is in flight any more (RFC 6675 section 5.1 keeps the SACK information; RFC 5681 3.1).
    /// `pipe` becomes zero.
    pub fn on_timeout(&mut self) {
        for i in 0..self.segments.len() {
            if !self.segments[i].sacked {
                self.update(i, |s| {
                    s.lost = true;
                    s.retx_in_flight = false;
                });
            }
        }
        debug_assert_eq!(self.pipe_bytes, 0);
    }

    /// Changes entry `index` and keeps `pipe` in step.
    fn update(&mut self, index: usize, change: impl FnOnce(&mut SentSegment)) {
        let seg = &mut self.segments[index];
        self.pipe_bytes -= seg.pipe_bytes();
        change(seg);
        self.pipe_bytes += seg.pipe_bytes();
    }

    /// Recomputes `pipe` from scratch (for tests and debug checks).
    pub fn pipe_bytes_recomputed(&self) -> u64 {
        self.segments.iter().map(SentSegment::pipe_bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMSS: u64 = 100;

    fn board(segments: u64) -> Scoreboard {
        let mut sb = Scoreboard::with_capacity(16);
        for i in 0..segments {
            sb.on_sent_new(i * SMSS, (i + 1) * SMSS, SimTime::from_nanos(i));
        }
        sb
    }

    fn block(from_segment: u64, to_segment: u64) -> SackBlock {
        SackBlock {
            left: from_segment * SMSS,
            right: to_segment * SMSS,
        }
    }

    #[test]
    fn pipe_counts_everything_sent_until_sacked() {
        let mut sb = board(10);
        assert_eq!(sb.pipe_bytes(), 10 * SMSS);
        assert_eq!(sb.on_sack(&[block(2, 4)]), 2 * SMSS);
        assert_eq!(sb.pipe_bytes(), 8 * SMSS);
        assert_eq!(sb.on_sack(&[block(2, 4)]), 0, "already SACKed");
        assert_eq!(sb.high_sacked(), Some(4 * SMSS));
        assert_eq!(sb.pipe_bytes(), sb.pipe_bytes_recomputed());
    }

    #[test]
    fn three_sacked_segments_above_make_a_hole_lost() {
        let mut sb = board(10);
        let mut lost = Vec::new();
        sb.on_sack(&[block(1, 3)]);
        assert_eq!(
            sb.detect_losses(3, SMSS, &mut lost),
            0,
            "two above: not yet"
        );
        sb.on_sack(&[block(1, 4)]);
        assert_eq!(sb.detect_losses(3, SMSS, &mut lost), SMSS);
        assert_eq!(lost.len(), 1);
        assert_eq!(lost[0].seq, 0);
        assert!(sb.get(0).unwrap().lost);
        // pipe: segment 0 lost (0), 1..4 SACKed (0), 4..10 in flight.
        assert_eq!(sb.pipe_bytes(), 6 * SMSS);
        assert_eq!(sb.pipe_bytes(), sb.pipe_bytes_recomputed());
    }

    #[test]
    fn a_retransmission_counts_in_pipe_until_acknowledged() {
        let mut sb = board(5);
        let mut lost = Vec::new();
        sb.on_sack(&[block(1, 4)]);
        sb.detect_losses(3, SMSS, &mut lost);
        sb.on_retransmitted(0, SimTime::from_nanos(100));
        assert_eq!(
            sb.pipe_bytes(),
            2 * SMSS,
            "segment 4 and the retransmission"
        );
        let mut acked = Vec::new();
        let cum = sb.on_cumulative_ack(4 * SMSS, &mut acked);
        assert_eq!(cum.newly_acked_bytes, 4 * SMSS);
        assert!(cum.retransmitted_acked);
        assert_eq!(cum.rtt_sent_time, None, "Karn: ambiguous");
        assert_eq!(acked.len(), 4);
        assert_eq!(sb.pipe_bytes(), SMSS);
        assert_eq!(sb.sacked_bytes(), 0);
        assert_eq!(sb.high_sacked(), None);
    }

    #[test]
    fn rtt_sample_comes_from_the_newest_segment_not_sacked_before() {
        let mut sb = board(4);
        sb.on_sack(&[block(2, 3)]);
        let mut acked = Vec::new();
        let cum = sb.on_cumulative_ack(3 * SMSS, &mut acked);
        assert_eq!(cum.rtt_sent_time, Some(SimTime::from_nanos(1)));
    }

    #[test]
    fn partial_ack_trims_the_front_entry() {
        let mut sb = board(2);
        let mut acked = Vec::new();
        let cum = sb.on_cumulative_ack(SMSS + 30, &mut acked);
        assert_eq!(cum.newly_acked_bytes, SMSS + 30);
        assert_eq!(sb.get(0).unwrap().start, SMSS + 30);
        assert_eq!(sb.pipe_bytes(), 70);
    }

    #[test]
    fn timeout_marks_all_unsacked_lost_and_empties_pipe() {
        let mut sb = board(6);
        sb.on_sack(&[block(3, 4)]);
        sb.on_retransmitted(0, SimTime::from_nanos(50));
        sb.on_timeout();
        assert_eq!(sb.pipe_bytes(), 0);
        assert!(sb.iter().filter(|s| !s.sacked).all(|s| s.lost));
        assert!(sb.get(3).unwrap().sacked && !sb.get(3).unwrap().lost);
    }

    #[test]
    fn partial_sack_block_does_not_mark_a_segment() {
        let mut sb = board(3);
        assert_eq!(
            sb.on_sack(&[SackBlock {
                left: 150,
                right: 300
            }]),
            SMSS
        );
        assert!(!sb.get(1).unwrap().sacked);
        assert!(sb.get(2).unwrap().sacked);
    }
}
