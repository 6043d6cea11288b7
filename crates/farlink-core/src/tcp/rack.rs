//! RACK-TLP (RFC 8985): time-based loss detection and the tail loss probe, for the `rack`
//! loss recovery (SACK-based recovery with RACK in place of RFC 6675 `IsLost()`).
//!
//! Read first: RFC 8985 sections 6 (RACK: steps 1–5, `RACK_sent_after`, `RACK_reo_wnd`,
//! `RACK_detect_loss`) and 7 (TLP: `TLP_calc_PTO`, `TLP_send_probe`). Linux's version is
//! net/ipv4/tcp_recovery.c (`tcp_rack_mark_lost`, `tcp_rack_detect_loss`,
//! `tcp_rack_advance`) and tcp_output.c (`tcp_schedule_loss_probe`, `tcp_send_loss_probe`).
//!
//! RACK: a segment is lost once a segment sent after it has been delivered (ACKed or SACKed)
//! and a reordering window `reo_wnd` has passed beyond one RTT since it was sent. Because it
//! compares send times, not sequence numbers, a lost retransmission is found the same way as
//! a lost original. `reo_wnd` is min_RTT / 4 (bounded by SRTT), 0 in recovery or once
//! DupThresh segments are SACKed while no reordering has been seen; its D-SACK adaptation
//! (RFC 8985 6.2 step 4, `reo_wnd_mult`) is not done: the multiplier stays 1.
//!
//! TLP: when the sender is not in recovery, a probe timeout PTO = 2·SRTT (plus
//! [`WORST_CASE_DELAYED_ACK`] when one segment is in flight, at least [`MIN_PTO`], never past
//! the retransmission timer) sends one segment (new data if the receiver's window allows, else
//! the highest unSACKed one) so that the ACK it draws lets RACK find a tail loss instead of
//! the retransmission timer. The sender (`sender.rs`) keeps the timer; this module computes it.
//! RFC 8985 7.4's detection of a loss the probe alone repaired (which would reduce the window)
//! is not done.

use super::cc::{Acked, Lost};
use super::scoreboard::{Scoreboard, SentSegment};
use crate::time::{SimDuration, SimTime};

/// RFC 8985 7.2: "WCDelAckT stands for worst case delayed ACK timer ... RECOMMENDED to be
/// 200ms".
pub const WORST_CASE_DELAYED_ACK: SimDuration = SimDuration::from_millis(200);
/// Linux's floor on the PTO (`tcp_schedule_loss_probe`: "msecs_to_jiffies(10)").
pub const MIN_PTO: SimDuration = SimDuration::from_millis(10);
/// RFC 8985 6.2 step 4: `reo_wnd = RACK.reo_wnd_mult * RACK.min_RTT / 4`.
const REO_WND_MIN_RTT_SHIFT: u32 = 2;

/// A segment newly delivered (ACKed or SACKed), as RACK needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivered {
    pub end_seq: u64,
    /// `S.xmit_ts`: its last transmission.
    pub sent_time: SimTime,
    pub retransmitted: bool,
}

impl From<&SentSegment> for Delivered {
    fn from(s: &SentSegment) -> Self {
        Delivered {
            end_seq: s.end,
            sent_time: s.last_sent,
            retransmitted: s.transmissions > 1,
        }
    }
}

impl From<&Acked> for Delivered {
    fn from(a: &Acked) -> Self {
        Delivered {
            end_seq: a.end_seq,
            sent_time: a.sent_time,
            retransmitted: a.retransmitted,
        }
    }
}

/// RFC 8985's per-connection RACK state.
#[derive(Clone, Debug, Default)]
pub struct Rack {
    /// `RACK.xmit_ts` and `RACK.end_seq`: the most recently sent segment delivered.
    xmit_ts: Option<SimTime>,
    end_seq: u64,
    /// `RACK.rtt`: the RTT of that segment's delivery.
    rtt: SimDuration,
    /// `RACK.min_RTT`.
    min_rtt: Option<SimDuration>,
    /// `RACK.fack`: the highest end sequence delivered.
    fack: u64,
    /// `RACK.reord`: reordering seen on this connection.
    reord: bool,
}

/// What the sender's state says about the reordering window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReoContext {
    pub in_recovery: bool,
    pub srtt: Option<SimDuration>,
    pub dup_thresh: u32,
    pub smss_bytes: u64,
}

/// `RACK_sent_after(t1, seq1, t2, seq2)`: sent later, or at the same time with a higher end.
fn sent_after(t1: SimTime, seq1: u64, t2: SimTime, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

impl Rack {
    /// RFC 8985 6.2 steps 2 and 3 for one newly delivered segment.
    pub fn on_delivered(&mut self, now: SimTime, s: Delivered) {
        let rtt = now - s.sent_time;
        // Step 2: "If Segment.retransmitted is TRUE and ... Now() - Segment.xmit_ts <
        // RACK.min_RTT": the ACK answers the original, not the retransmission; ignore it.
        if s.retransmitted && self.min_rtt.is_some_and(|m| rtt < m) {
            return;
        }
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        if self
            .xmit_ts
            .is_none_or(|t| sent_after(s.sent_time, s.end_seq, t, self.end_seq))
        {
            self.xmit_ts = Some(s.sent_time);
            self.end_seq = s.end_seq;
            self.rtt = rtt;
        }
        // Step 3: delivered below the highest delivered without having been retransmitted:
        // the network reordered it.
        if s.end_seq > self.fack {
            self.fack = s.end_seq;
        } else if s.end_seq < self.fack && !s.retransmitted {
            self.reord = true;
        }
    }

    /// `RACK_reo_wnd()` (RFC 8985 6.2 step 4), with `reo_wnd_mult` = 1.
    pub fn reo_wnd(&self, ctx: &ReoContext, sacked_bytes: u64) -> SimDuration {
        if !self.reord {
            let dup_thresh_sacked =
                sacked_bytes > u64::from(ctx.dup_thresh.saturating_sub(1)) * ctx.smss_bytes;
            if ctx.in_recovery || dup_thresh_sacked {
                return SimDuration::ZERO;
            }
        }
        let quarter = SimDuration::from_nanos(
            self.min_rtt.map_or(0, SimDuration::as_nanos) >> REO_WND_MIN_RTT_SHIFT,
        );
        ctx.srtt.map_or(quarter, |s| quarter.min(s))
    }

    /// `RACK_detect_loss()` (RFC 8985 6.2 step 5): marks lost every unSACKed segment sent
    /// before the most recently sent delivered one whose time (one RACK.rtt plus reo_wnd
    /// after it was sent) has come; a retransmission found lost no longer counts in `pipe`.
    /// Appends them to `lost`; returns their bytes and, if a segment is not yet due, how long
    /// until the earliest is (the reordering timer).
    pub fn detect_loss(
        &self,
        now: SimTime,
        ctx: &ReoContext,
        scoreboard: &mut Scoreboard,
        lost: &mut Vec<Lost>,
    ) -> (u64, Option<SimDuration>) {
        let Some(rack_ts) = self.xmit_ts else {
            return (0, None);
        };
        let reo_wnd = self.reo_wnd(ctx, scoreboard.sacked_bytes());
        let mut newly = 0;
        let mut wait: Option<SimDuration> = None;
        for i in 0..scoreboard.len() {
            let s = *scoreboard.get(i).expect("index below len");
            // SACKed, or already lost and waiting for its retransmission.
            if s.sacked || (s.lost && !s.retx_in_flight) {
                continue;
            }
            if !sent_after(rack_ts, self.end_seq, s.last_sent, s.end) {
                continue;
            }
            let due = s.last_sent + self.rtt + reo_wnd;
            if due <= now {
                scoreboard.mark_lost_again(i);
                newly += s.len_bytes();
                lost.push(Lost {
                    seq: s.start,
                    bytes: s.len_bytes(),
                    sent_time: s.last_sent,
                });
            } else {
                let remaining = due - now;
                wait = Some(wait.map_or(remaining, |w| w.max(remaining)));
            }
        }
        (newly, wait)
    }
}

/// RFC 8985 7.2 `TLP_calc_PTO()` with Linux's floor: 2·SRTT, plus the worst-case delayed ACK
/// when a single segment is in flight, at least [`MIN_PTO`].
pub fn probe_timeout(srtt: SimDuration, one_segment_in_flight: bool) -> SimDuration {
    let mut pto = SimDuration::from_nanos(2 * srtt.as_nanos());
    if one_segment_in_flight {
        pto = pto + WORST_CASE_DELAYED_ACK;
    }
    pto.max(MIN_PTO)
}
