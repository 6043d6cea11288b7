//! Loss recovery: when to enter and leave recovery and what to retransmit, kept apart from
//! congestion control.
//!
//! Read first: RFC 5681 sections 2 and 3.2 (duplicate ACK, fast retransmit and fast recovery),
//! RFC 6582 (NewReno: `recover`, partial and full ACKs, section 4 after a timeout), RFC 6675
//! (SACK-based recovery: `DupThresh`, `IsLost`, `pipe`, `NextSeg`, `RecoveryPoint`,
//! `HighRxt`, `RescueRxt`), Jacobson 1988 for Tahoe, and quinn's `detect_lost_packets` /
//! ns-3's `TcpRecoveryOps` for the split of roles.
//!
//! This module decides; the sender acts. [`Recovery::on_ack`] looks at what an ACK told the
//! sender and returns a [`RecoveryDecision`] (enter recovery and tell the congestion
//! controller, retransmit the first unacknowledged segment, go back N, leave recovery, leave
//! the timer alone). [`Recovery::next_seg`] is RFC 6675's `NextSeg()`. The window the sender
//! may use during recovery is the controller's window plus [`Recovery::window_extra_bytes`]
//! (Reno and NewReno inflation), or, for SACK, the controller's window against `pipe`.

use std::fmt;
use std::str::FromStr;

use super::cc::Detection;
use super::scoreboard::Scoreboard;
use super::UnknownName;

/// RFC 5681 section 3.2: fast retransmit on "the arrival of 3 duplicate ACKs"; RFC 6675
/// section 2: "DupThresh ... The number of duplicate acknowledgments required to trigger a
/// fast retransmission ... set to 3".
pub const DUP_THRESH: u32 = 3;

/// The loss-recovery algorithm, by its lower-case name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LossRecovery {
    /// Fast retransmit, then slow start from one segment and go-back-N (Jacobson 1988).
    Tahoe,
    /// RFC 5681 fast retransmit and fast recovery; any ACK of new data ends recovery.
    Reno,
    /// RFC 6582: stays in fast recovery through partial ACKs until `recover` is acknowledged.
    NewReno,
    /// RFC 6675 SACK-based loss recovery. Falls back to NewReno if SACK is not negotiated.
    #[default]
    Sack,
    /// RFC 8985 RACK-TLP on top of SACK-based recovery: RACK's time rule finds losses (lost
    /// retransmissions included) instead of `IsLost()`, and the tail loss probe replaces the
    /// retransmission timer at the tail (`rack.rs`). Falls back to NewReno without SACK.
    Rack,
}

impl LossRecovery {
    pub const NAMES: &'static [&'static str] = &["tahoe", "reno", "newreno", "sack", "rack"];

    pub fn name(self) -> &'static str {
        match self {
            LossRecovery::Tahoe => "tahoe",
            LossRecovery::Reno => "reno",
            LossRecovery::NewReno => "newreno",
            LossRecovery::Sack => "sack",
            LossRecovery::Rack => "rack",
        }
    }

    /// Recovery driven by the SACK scoreboard, `pipe` and `NextSeg()` (SACK and RACK).
    pub fn is_sack_based(self) -> bool {
        matches!(self, LossRecovery::Sack | LossRecovery::Rack)
    }
}

impl fmt::Display for LossRecovery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LossRecovery {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "tahoe" => Ok(LossRecovery::Tahoe),
            "reno" => Ok(LossRecovery::Reno),
            "newreno" => Ok(LossRecovery::NewReno),
            "sack" => Ok(LossRecovery::Sack),
            "rack" => Ok(LossRecovery::Rack),
            _ => Err(UnknownName {
                what: "loss recovery",
                name: s.to_owned(),
                expected: Self::NAMES,
            }),
        }
    }
}

/// Where the sender is with respect to loss.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RecoveryState {
    /// No loss being repaired (duplicate ACKs may be counting towards DupThresh).
    #[default]
    Open,
    /// RFC 5681 3.2 fast recovery / RFC 6582 fast recovery / RFC 6675 loss recovery phase.
    FastRecovery,
    /// After a retransmission timeout (or Tahoe's fast retransmit): slow start repairs the
    /// window; until `recover` is acknowledged no fast retransmit starts (RFC 6582 section 4,
    /// RFC 6675 section 5.1).
    TimeoutRecovery,
}

impl fmt::Display for RecoveryState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecoveryState::Open => "open",
            RecoveryState::FastRecovery => "fast recovery",
            RecoveryState::TimeoutRecovery => "timeout recovery",
        })
    }
}

/// What one ACK told the sender, as far as recovery cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckInfo {
    /// The cumulative ACK (HighACK + 1 in RFC 6675's octet terms).
    pub ack: u64,
    /// `SND.MAX`: one after the highest sequence number sent (HighData + 1).
    pub snd_max: u64,
    pub newly_acked_bytes: u64,
    /// A duplicate ACK as RFC 5681 section 2 defines it (with SACK, RFC 6675 section 2: one
    /// that SACKs previously unSACKed data).
    pub is_dupack: bool,
    /// Bytes loss detection newly presumed lost (RACK enters recovery on them alone).
    pub newly_lost_bytes: u64,
    pub smss_bytes: u64,
}

/// The entry into recovery the congestion controller must hear about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub detection: Detection,
    /// Tahoe: restart from the loss window rather than continue from ssthresh.
    pub restart_slow_start: bool,
}

/// What the sender must do after an ACK.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecoveryDecision {
    /// Recovery starts: hand the controller a congestion event.
    pub enter: Option<Entry>,
    /// Retransmit the first unacknowledged segment now, whatever the window.
    pub retransmit_head: bool,
    /// Set `SND.NXT` back to `SND.UNA` (Tahoe; a timeout without SACK).
    pub go_back_n: bool,
    /// Fast recovery ended with this ACK.
    pub exited: bool,
    /// Do not restart the retransmission timer for this ACK (RFC 6582 3.2 step 3 and its
    /// "Impatient" variant: only the first partial ACK resets it).
    pub hold_timer: bool,
}

/// The rule of RFC 6675 `NextSeg()` that chose a retransmission.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NextSegRule {
    /// (1): the lowest unSACKed segment above HighRxt and below the highest SACKed octet that
    /// `IsLost()`; after a timeout, any lost segment above HighRxt.
    Lost,
    /// (3): unSACKed, above HighRxt, below the highest SACKed octet, not (yet) lost.
    Unsacked,
    /// (4): the one rescue retransmission per recovery, of the highest unSACKed segment.
    Rescue,
}

/// RFC 6675 `NextSeg()`'s answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextSeg {
    Retransmit {
        index: usize,
        rule: NextSegRule,
    },
    /// (2): send new data.
    NewData,
    Nothing,
}

/// The loss-recovery state machine of one sender.
#[derive(Clone, Debug)]
pub struct Recovery {
    algorithm: LossRecovery,
    dup_thresh: u32,
    state: RecoveryState,
    /// RFC 5681 / RFC 6675 `DupAcks`.
    dupacks: u32,
    /// RFC 6582 `recover` / RFC 6675 `RecoveryPoint`, as the sequence number *after* the
    /// highest octet sent when recovery started; `None` before any recovery.
    recover: Option<u64>,
    /// Reno/NewReno: cwnd during fast recovery minus ssthresh (RFC 5681 3.2 steps 3 and 4,
    /// RFC 6582 partial-ACK deflation); may go negative after deflation.
    inflation_bytes: i64,
    /// RFC 6582 3.2 step 3: partial ACKs in this recovery (only the first resets the timer).
    partial_acks: u32,
    /// RFC 6675 `HighRxt`, as the sequence number after the highest octet retransmitted.
    high_rxt: u64,
    /// RFC 6675 `RescueRxt`.
    rescue_rxt: Option<u64>,
}

impl Recovery {
    pub fn new(algorithm: LossRecovery, dup_thresh: u32) -> Self {
        Recovery {
            algorithm,
            dup_thresh,
            state: RecoveryState::Open,
            dupacks: 0,
            recover: None,
            inflation_bytes: 0,
            partial_acks: 0,
            high_rxt: 0,
            rescue_rxt: None,
        }
    }

    pub fn algorithm(&self) -> LossRecovery {
        self.algorithm
    }
    pub fn state(&self) -> RecoveryState {
        self.state
    }
    pub fn dupacks(&self) -> u32 {
        self.dupacks
    }
    pub fn dup_thresh(&self) -> u32 {
        self.dup_thresh
    }
    /// RFC 6582 `recover` / RFC 6675 `RecoveryPoint` (exclusive end).
    pub fn recover(&self) -> Option<u64> {
        self.recover
    }
    /// RFC 6675 `HighRxt` (exclusive end).
    pub fn high_rxt(&self) -> u64 {
        self.high_rxt
    }

    /// Added to the controller's window while in Reno/NewReno fast recovery.
    pub fn window_extra_bytes(&self) -> i64 {
        if self.state == RecoveryState::FastRecovery {
            self.inflation_bytes
        } else {
            0
        }
    }

    /// Whether sending is governed by RFC 6675 `pipe` and `NextSeg()` (SACK, in recovery)
    /// rather than by `SND.NXT - SND.UNA` against the window.
    pub fn uses_pipe(&self) -> bool {
        self.algorithm.is_sack_based() && self.state != RecoveryState::Open
    }

    /// RFC 6582 section 3.2 step 2 / RFC 6675 section 5.1: a new recovery may start only once
    /// the previous one's `recover` is cumulatively acknowledged.
    fn recover_acknowledged(&self, ack: u64) -> bool {
        self.recover.is_none_or(|r| ack >= r)
    }

    /// Processes one ACK after the scoreboard has been updated with it.
    pub fn on_ack(&mut self, a: &AckInfo, scoreboard: &Scoreboard) -> RecoveryDecision {
        // With SACK an ACK that SACKs new data counts even if it also advances the cumulative
        // ACK (RFC 6675 section 2); otherwise a cumulative advance resets the count.
        if a.is_dupack {
            self.dupacks += 1;
        } else if a.newly_acked_bytes > 0 {
            self.dupacks = 0;
        }
        match self.state {
            RecoveryState::FastRecovery => self.in_fast_recovery(a),
            RecoveryState::Open | RecoveryState::TimeoutRecovery => {
                if self.state == RecoveryState::TimeoutRecovery && self.recover_acknowledged(a.ack)
                {
                    self.state = RecoveryState::Open;
                }
                self.maybe_enter(a, scoreboard)
            }
        }
    }

    fn maybe_enter(&mut self, a: &AckInfo, scoreboard: &Scoreboard) -> RecoveryDecision {
        let mut d = RecoveryDecision::default();
        match self.algorithm {
            LossRecovery::Tahoe | LossRecovery::Reno | LossRecovery::NewReno => {
                // RFC 5681 3.2 (1)/(2): "When the third duplicate ACK is received".
                if self.dupacks != self.dup_thresh {
                    return d;
                }
                // RFC 6582 3.2 step 2: "the TCP sender first checks the value of recover to
                // see if the Cumulative Acknowledgment field covers more than recover. ... If
                // not, the TCP does not enter fast retransmit and does not reset ssthresh."
                // Reno follows RFC 5681, which has no such check; Tahoe keeps the check (the
                // go-back-N duplicates would otherwise trigger it again, ns-2's "bugfix").
                if self.algorithm != LossRecovery::Reno && !self.recover_acknowledged(a.ack) {
                    return d;
                }
                self.recover = Some(a.snd_max);
                self.partial_acks = 0;
                d.enter = Some(Entry {
                    detection: Detection::DupAcks,
                    restart_slow_start: self.algorithm == LossRecovery::Tahoe,
                });
                // RFC 5681 3.2 (3): "The lost segment starting at SND.UNA MUST be
                // retransmitted".
                d.retransmit_head = true;
                if self.algorithm == LossRecovery::Tahoe {
                    // Tahoe: slow start from one segment, resending everything from SND.UNA.
                    self.state = RecoveryState::TimeoutRecovery;
                    self.inflation_bytes = 0;
                    d.go_back_n = true;
                } else {
                    // RFC 5681 3.2 (3): cwnd is set to ssthresh plus 3*SMSS.
                    self.state = RecoveryState::FastRecovery;
                    self.inflation_bytes = i64::from(self.dup_thresh) * a.smss_bytes as i64;
                }
            }
            LossRecovery::Rack => {
                // RFC 8985 section 6: RACK's marks alone start recovery (Linux's
                // `tcp_time_to_recover` skips the duplicate-ACK count when RACK is on).
                if a.newly_lost_bytes == 0 || !self.recover_acknowledged(a.ack) {
                    return d;
                }
                self.recover = Some(a.snd_max);
                d.enter = Some(Entry {
                    detection: Detection::Sack,
                    restart_slow_start: false,
                });
                // As RFC 6675 (4.3), the first segment presumed lost goes out at once when it
                // is the head; any other, by `NextSeg()`.
                d.retransmit_head = scoreboard
                    .get(0)
                    .is_some_and(|s| s.lost && !s.sacked && !s.retx_in_flight);
                self.high_rxt = a.ack;
                self.rescue_rxt = None;
                self.state = RecoveryState::FastRecovery;
            }
            LossRecovery::Sack => {
                // RFC 6675 section 5: "(1) If DupAcks >= DupThresh, go to step (4)."
                // "(2) If DupAcks < DupThresh but IsLost (HighACK + 1) returns true ... go to
                // step (4)."
                let head_lost = scoreboard.get(0).is_some_and(|s| s.lost && !s.sacked);
                if !(self.dupacks >= self.dup_thresh || head_lost) {
                    // "(3) The TCP MAY transmit previously unsent data segments as per Limited
                    // Transmit": not done; the window rule governs new data outside recovery.
                    return d;
                }
                // RFC 6675 5.1: "a new recovery phase ... MUST NOT be initiated until HighACK
                // is greater than or equal to the new value of RecoveryPoint."
                if !self.recover_acknowledged(a.ack) {
                    return d;
                }
                // "(4.1) RecoveryPoint = HighData".
                self.recover = Some(a.snd_max);
                // "(4.2) ssthresh = cwnd = (FlightSize / 2)": the controller, on `enter`.
                d.enter = Some(Entry {
                    detection: if self.dupacks >= self.dup_thresh {
                        Detection::DupAcks
                    } else {
                        Detection::Sack
                    },
                    restart_slow_start: false,
                });
                // "(4.3) Retransmit the first data segment presumed dropped ... set HighRxt
                // to the highest sequence number in the retransmitted segment." The sender
                // reports it through `on_retransmitted_head`.
                d.retransmit_head = true;
                self.high_rxt = a.ack;
                self.rescue_rxt = None;
                // "(4.4) Run SetPipe ()": kept incrementally by the scoreboard.
                // "(4.5) ... proceed to step (C)": the sender's next `poll_transmit`.
                self.state = RecoveryState::FastRecovery;
            }
        }
        d
    }

    fn in_fast_recovery(&mut self, a: &AckInfo) -> RecoveryDecision {
        let mut d = RecoveryDecision::default();
        let smss = a.smss_bytes as i64;
        match self.algorithm {
            LossRecovery::Reno => {
                if a.newly_acked_bytes > 0 {
                    // RFC 5681 3.2 (6): "When the next ACK arrives that acknowledges
                    // previously unacknowledged data, a TCP MUST set cwnd to ssthresh". A
                    // partial ACK ends recovery too: further holes wait for three more
                    // duplicate ACKs or the timer.
                    self.leave_fast_recovery(&mut d);
                } else if a.is_dupack {
                    // RFC 5681 3.2 (4): "For each additional duplicate ACK received ...,
                    // cwnd MUST be incremented by SMSS."
                    self.inflation_bytes += smss;
                }
            }
            LossRecovery::NewReno => {
                if a.newly_acked_bytes > 0 {
                    let recover = self.recover.expect("in fast recovery");
                    if a.ack >= recover {
                        // RFC 6582 3.2 step 3, full acknowledgment: "set cwnd to ... (2)
                        // ssthresh" and exit fast recovery.
                        self.leave_fast_recovery(&mut d);
                    } else {
                        // RFC 6582 3.2 step 3, partial acknowledgment: "retransmit the first
                        // unacknowledged segment. Deflate the congestion window by the amount
                        // of new data acknowledged by the Cumulative Acknowledgment field. If
                        // the partial ACK acknowledges at least one SMSS of new data, then add
                        // back SMSS bytes to the congestion window. ... Do not exit the fast
                        // recovery procedure."
                        d.retransmit_head = true;
                        self.inflation_bytes -= a.newly_acked_bytes as i64;
                        if a.newly_acked_bytes >= a.smss_bytes {
                            self.inflation_bytes += smss;
                        }
                        // "For the first partial ACK that arrives during fast recovery, also
                        // reset the retransmit timer" (RFC 6582's Impatient variant).
                        self.partial_acks += 1;
                        d.hold_timer = self.partial_acks > 1;
                    }
                } else if a.is_dupack {
                    // RFC 6582 3.2 step 4 (= RFC 5681 3.2 (4)).
                    self.inflation_bytes += smss;
                }
            }
            LossRecovery::Sack | LossRecovery::Rack => {
                // RFC 6675 section 5 "(A) An incoming cumulative ACK for a sequence number
                // greater than RecoveryPoint signals the end of loss recovery".
                let recover = self.recover.expect("in fast recovery");
                if a.ack >= recover {
                    self.leave_fast_recovery(&mut d);
                }
                // "(B) ... Update () ... SetPipe ()": done by the scoreboard.
                // "(C) If cwnd - pipe >= 1 SMSS, the sender SHOULD transmit": the sender.
            }
            LossRecovery::Tahoe => unreachable!("Tahoe has no fast recovery"),
        }
        d
    }

    fn leave_fast_recovery(&mut self, d: &mut RecoveryDecision) {
        self.state = RecoveryState::Open;
        self.inflation_bytes = 0;
        d.exited = true;
    }

    /// The retransmission timer expired: the head is retransmitted, and without SACK the
    /// sender goes back N (the scoreboard knows nothing above the hole).
    pub fn on_timeout(&mut self, snd_una: u64, snd_max: u64) -> RecoveryDecision {
        // RFC 6582 3.2 ("Retransmit timeouts") and section 4: after a retransmit timeout,
        // record the highest sequence number transmitted in `recover`. RFC 6675 section 5.1: "Once an RTO occurs
        // during loss recovery ..., RecoveryPoint MUST be set to HighData ... the loss
        // recovery algorithm ... MUST be terminated."
        self.recover = Some(snd_max);
        self.state = RecoveryState::TimeoutRecovery;
        self.dupacks = 0;
        self.inflation_bytes = 0;
        self.partial_acks = 0;
        // Every unSACKed segment is lost now (the scoreboard marks them); retransmit from the
        // start.
        self.high_rxt = snd_una;
        self.rescue_rxt = None;
        RecoveryDecision {
            retransmit_head: true,
            go_back_n: !self.algorithm.is_sack_based(),
            ..RecoveryDecision::default()
        }
    }

    /// The sender retransmitted the first unacknowledged segment ending at `end` because of
    /// a `retransmit_head` decision (RFC 6675 (4.3): HighRxt is set to its end).
    pub fn on_retransmitted_head(&mut self, end: u64) {
        self.high_rxt = self.high_rxt.max(end);
    }

    /// RFC 6675 section 4 `NextSeg()`. `new_data_allowed`: there is unsent data and the
    /// receiver's window allows a segment of it (rule (2)). `snd_una` is HighACK + 1.
    pub fn next_seg(
        &self,
        scoreboard: &Scoreboard,
        snd_una: u64,
        new_data_allowed: bool,
    ) -> NextSeg {
        if self.algorithm == LossRecovery::Rack {
            return rack_next_seg(scoreboard, new_data_allowed);
        }
        let after_timeout = self.state == RecoveryState::TimeoutRecovery;
        let high_sacked = scoreboard.high_sacked().unwrap_or(snd_una);
        // (1.a) "S2 > HighRxt".
        let first = scoreboard.first_at_or_after(self.high_rxt);
        // (1) "If there exists a smallest unSACKed sequence number 'S2' that meets the
        //     following three criteria ... (1.a) S2 is greater than HighRxt. (1.b) S2 is less
        //     than the highest octet covered by any received SACK. (1.c) IsLost (S2) returns
        //     true." After a timeout every unSACKed segment is lost and (1.b) is not applied:
        //     the whole window is resent in order (RFC 6675 section 5.1, RFC 5681 3.1).
        let mut i = first;
        while let Some(s) = scoreboard.get(i) {
            if !after_timeout && s.start >= high_sacked {
                break;
            }
            if !s.sacked && s.lost {
                return NextSeg::Retransmit {
                    index: i,
                    rule: NextSegRule::Lost,
                };
            }
            i += 1;
        }
        // (2) "If no sequence number 'S2' per rule (1) exists but there exists available
        //     unsent data and the receiver's advertised window allows, the sequence range of
        //     one segment of up to SMSS octets of previously unsent data starting with
        //     sequence number HighData+1 MUST be returned."
        if new_data_allowed {
            return NextSeg::NewData;
        }
        if after_timeout {
            return NextSeg::Nothing;
        }
        // (3) "If the conditions for rules (1) and (2) fail, but there exists an unSACKed
        //     sequence number 'S3' that meets the criteria for detecting loss given in steps
        //     (1.a) and (1.b) above (specifically excluding step (1.c)), then one segment of
        //     up to SMSS octets starting with S3 SHOULD be returned."
        let mut i = first;
        while let Some(s) = scoreboard.get(i) {
            if s.start >= high_sacked {
                break;
            }
            if !s.sacked {
                return NextSeg::Retransmit {
                    index: i,
                    rule: NextSegRule::Unsacked,
                };
            }
            i += 1;
        }
        // (4) "If the conditions for (1)-(3) fail, but there exists outstanding unSACKed
        //     data, we provide the opportunity for a single "rescue" retransmission per entry
        //     into loss recovery. If HighACK is greater than RescueRxt (or RescueRxt is
        //     undefined), then one segment of upto SMSS octets that MUST include the highest
        //     outstanding unSACKed sequence number SHOULD be returned".
        if self.rescue_rxt.is_none_or(|r| snd_una > r) {
            let highest_unsacked = (0..scoreboard.len())
                .rev()
                .find(|&i| scoreboard.get(i).is_some_and(|s| !s.sacked));
            if let Some(index) = highest_unsacked {
                return NextSeg::Retransmit {
                    index,
                    rule: NextSegRule::Rescue,
                };
            }
        }
        NextSeg::Nothing
    }

    /// The sender retransmitted `[_, end)` as `NextSeg()` chose by `rule`.
    pub fn on_next_seg_retransmitted(&mut self, rule: NextSegRule, end: u64) {
        match rule {
            // (C.2) "If any of the data octets sent in (C.1) are below HighData, HighRxt MUST
            // be set to the highest sequence number of the retransmitted segment unless
            // NextSeg () rule (4) was invoked for this transmission."
            NextSegRule::Lost | NextSegRule::Unsacked => self.high_rxt = self.high_rxt.max(end),
            // (4) "... and RescueRxt set to RecoveryPoint. HighRxt MUST NOT be updated."
            NextSegRule::Rescue => self.rescue_rxt = self.recover,
        }
    }
}

/// `NextSeg()` with RACK (RFC 8985 section 6.3, Linux's `tcp_xmit_retransmit_queue`): the
/// lowest segment presumed lost and not retransmitted since, wherever it is (RACK finds lost
/// retransmissions below HighRxt too), else new data. No rules (3) and (4): the tail loss
/// probe does their work.
fn rack_next_seg(scoreboard: &Scoreboard, new_data_allowed: bool) -> NextSeg {
    let lost = scoreboard
        .iter()
        .position(|s| s.lost && !s.sacked && !s.retx_in_flight);
    match lost {
        Some(index) => NextSeg::Retransmit {
            index,
            rule: NextSegRule::Lost,
        },
        None if new_data_allowed => NextSeg::NewData,
        None => NextSeg::Nothing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::segment::SackBlock;
    use crate::time::SimTime;

    const SMSS: u64 = 100;

    fn board(segments: u64) -> Scoreboard {
        let mut sb = Scoreboard::with_capacity(16);
        for i in 0..segments {
            sb.on_sent_new(i * SMSS, (i + 1) * SMSS, SimTime::ZERO);
        }
        sb
    }

    fn dupack(ack: u64, snd_max: u64) -> AckInfo {
        AckInfo {
            ack,
            snd_max,
            newly_acked_bytes: 0,
            is_dupack: true,
            newly_lost_bytes: 0,
            smss_bytes: SMSS,
        }
    }

    fn new_ack(ack: u64, newly: u64, snd_max: u64) -> AckInfo {
        AckInfo {
            ack,
            snd_max,
            newly_acked_bytes: newly,
            is_dupack: false,
            newly_lost_bytes: 0,
            smss_bytes: SMSS,
        }
    }

    #[test]
    fn names_round_trip() {
        for name in LossRecovery::NAMES {
            let r: LossRecovery = name.parse().unwrap();
            assert_eq!(r.to_string(), *name);
        }
        let err = "vegas".parse::<LossRecovery>().unwrap_err();
        assert!(err.to_string().contains("tahoe, reno, newreno, sack"));
    }

    #[test]
    fn third_dupack_enters_fast_recovery_with_three_segments_of_inflation() {
        let sb = board(10);
        let mut r = Recovery::new(LossRecovery::NewReno, DUP_THRESH);
        assert!(r.on_ack(&dupack(0, 1000), &sb).enter.is_none());
        assert!(r.on_ack(&dupack(0, 1000), &sb).enter.is_none());
        let d = r.on_ack(&dupack(0, 1000), &sb);
        assert_eq!(
            d.enter,
            Some(Entry {
                detection: Detection::DupAcks,
                restart_slow_start: false
            })
        );
        assert!(d.retransmit_head);
        assert_eq!(r.state(), RecoveryState::FastRecovery);
        assert_eq!(r.window_extra_bytes(), 3 * SMSS as i64);
        r.on_ack(&dupack(0, 1000), &sb);
        assert_eq!(r.window_extra_bytes(), 4 * SMSS as i64);
    }

    #[test]
    fn newreno_partial_ack_retransmits_and_stays_in_recovery() {
        let sb = board(10);
        let mut r = Recovery::new(LossRecovery::NewReno, DUP_THRESH);
        for _ in 0..5 {
            r.on_ack(&dupack(0, 1000), &sb);
        }
        let d = r.on_ack(&new_ack(300, 300, 1000), &sb);
        assert!(d.retransmit_head && !d.exited && !d.hold_timer);
        assert_eq!(r.state(), RecoveryState::FastRecovery);
        // 5 segments of inflation, deflated by 3, one added back.
        assert_eq!(r.window_extra_bytes(), 3 * SMSS as i64);
        let d = r.on_ack(&new_ack(500, 200, 1000), &sb);
        assert!(
            d.retransmit_head && d.hold_timer,
            "only the first partial ACK resets"
        );
        let d = r.on_ack(&new_ack(1000, 500, 1000), &sb);
        assert!(d.exited && !d.retransmit_head);
        assert_eq!(r.state(), RecoveryState::Open);
        assert_eq!(r.window_extra_bytes(), 0);
    }

    #[test]
    fn reno_partial_ack_ends_recovery() {
        let sb = board(10);
        let mut r = Recovery::new(LossRecovery::Reno, DUP_THRESH);
        for _ in 0..3 {
            r.on_ack(&dupack(0, 1000), &sb);
        }
        let d = r.on_ack(&new_ack(300, 300, 1000), &sb);
        assert!(d.exited && !d.retransmit_head);
        assert_eq!(r.state(), RecoveryState::Open);
    }

    #[test]
    fn newreno_does_not_fast_retransmit_again_below_recover_after_timeout() {
        let sb = board(10);
        let mut r = Recovery::new(LossRecovery::NewReno, DUP_THRESH);
        r.on_timeout(0, 1000);
        for _ in 0..3 {
            assert!(r.on_ack(&dupack(200, 1000), &sb).enter.is_none());
        }
        let mut reno = Recovery::new(LossRecovery::Reno, DUP_THRESH);
        reno.on_timeout(0, 1000);
        let entered = (0..3).any(|_| reno.on_ack(&dupack(200, 1000), &sb).enter.is_some());
        assert!(entered, "RFC 5681 Reno has no recover check");
    }

    #[test]
    fn tahoe_restarts_slow_start_and_goes_back_n() {
        let sb = board(10);
        let mut r = Recovery::new(LossRecovery::Tahoe, DUP_THRESH);
        for _ in 0..2 {
            r.on_ack(&dupack(0, 1000), &sb);
        }
        let d = r.on_ack(&dupack(0, 1000), &sb);
        assert!(d.enter.unwrap().restart_slow_start);
        assert!(d.go_back_n && d.retransmit_head);
        assert_eq!(r.state(), RecoveryState::TimeoutRecovery);
        assert!(r.on_ack(&new_ack(1000, 1000, 1000), &sb).enter.is_none());
        assert_eq!(r.state(), RecoveryState::Open);
    }

    #[test]
    fn sack_enters_when_the_first_segment_is_lost_by_the_scoreboard() {
        let mut sb = board(10);
        let mut lost = Vec::new();
        sb.on_sack(&[SackBlock {
            left: 100,
            right: 400,
        }]);
        sb.detect_losses(DUP_THRESH, SMSS, &mut lost);
        let mut r = Recovery::new(LossRecovery::Sack, DUP_THRESH);
        // One duplicate ACK only, but three segments SACKed above the hole.
        let d = r.on_ack(&dupack(0, 1000), &sb);
        assert_eq!(d.enter.unwrap().detection, Detection::Sack);
        assert!(r.uses_pipe());
    }

    #[test]
    fn next_seg_prefers_lost_then_new_then_unsacked_then_rescue() {
        let mut sb = board(10);
        let mut lost = Vec::new();
        // Holes at segments 0 and 2; 1, 3, 4, 5 SACKed → 0 and 2 lost; 6..9 unSACKed above.
        sb.on_sack(&[
            SackBlock {
                left: 100,
                right: 200,
            },
            SackBlock {
                left: 300,
                right: 600,
            },
        ]);
        sb.detect_losses(DUP_THRESH, SMSS, &mut lost);
        assert_eq!(lost.len(), 2);
        let mut r = Recovery::new(LossRecovery::Sack, DUP_THRESH);
        for _ in 0..3 {
            r.on_ack(&dupack(0, 1000), &sb);
        }
        // The sender retransmits the head (4.3).
        sb.on_retransmitted(0, SimTime::ZERO);
        r.on_retransmitted_head(100);
        let next = r.next_seg(&sb, 0, true);
        assert_eq!(
            next,
            NextSeg::Retransmit {
                index: 2,
                rule: NextSegRule::Lost
            }
        );
        sb.on_retransmitted(2, SimTime::ZERO);
        r.on_next_seg_retransmitted(NextSegRule::Lost, 300);
        assert_eq!(r.next_seg(&sb, 0, true), NextSeg::NewData);
        // No new data: nothing unSACKed below the highest SACK above HighRxt, so rescue.
        assert_eq!(
            r.next_seg(&sb, 0, false),
            NextSeg::Retransmit {
                index: 9,
                rule: NextSegRule::Rescue
            }
        );
        r.on_next_seg_retransmitted(NextSegRule::Rescue, 1000);
        assert_eq!(
            r.next_seg(&sb, 0, false),
            NextSeg::Nothing,
            "one rescue only"
        );
    }

    #[test]
    fn next_seg_rule_three_resends_unsacked_below_the_highest_sack() {
        let mut sb = board(6);
        sb.on_sack(&[SackBlock {
            left: 200,
            right: 300,
        }]);
        let mut r = Recovery::new(LossRecovery::Sack, DUP_THRESH);
        for _ in 0..3 {
            r.on_ack(&dupack(0, 600), &sb);
        }
        r.on_retransmitted_head(100);
        assert_eq!(
            r.next_seg(&sb, 0, false),
            NextSeg::Retransmit {
                index: 1,
                rule: NextSegRule::Unsacked
            }
        );
    }

    #[test]
    fn after_timeout_every_lost_segment_is_resent_in_order() {
        let mut sb = board(4);
        sb.on_sack(&[SackBlock {
            left: 100,
            right: 200,
        }]);
        sb.on_timeout();
        let mut r = Recovery::new(LossRecovery::Sack, DUP_THRESH);
        r.on_timeout(0, 400);
        let order: Vec<usize> = {
            let mut out = Vec::new();
            while let NextSeg::Retransmit { index, rule } = r.next_seg(&sb, 0, false) {
                sb.on_retransmitted(index, SimTime::ZERO);
                r.on_next_seg_retransmitted(rule, sb.get(index).unwrap().end);
                out.push(index);
            }
            out
        };
        assert_eq!(order, vec![0, 2, 3]);
    }
}
