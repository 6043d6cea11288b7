//! Explicit Congestion Notification in farlink's TCP: what each end does with the IP header's
//! ECN field and the TCP header's ECE and CWR flags. The sender and receiver each hold one of
//! these and call it where they build and take segments (hooks in `sender.rs` and
//! `receiver.rs`); the response to a mark goes through the congestion controller.
//!
//! Read first: RFC 3168 sections 5 (the IP field), 6.1.1 (negotiation), 6.1.2 (the sender's
//! response), 6.1.3 (the receiver's echo), 6.1.5 (no ECT on retransmissions); RFC 8257
//! (DCTCP) section 3 for `"accurate"`; the AccECN draft (draft-ietf-tcpm-accurate-ecn)
//! section 3.2 for its ACE counter.
//!
//! # Modes (`flows[N].tcp.ecn`)
//!
//! * `false` ([`EcnMode::Off`]): nothing is marked ECT; no ECN flag is sent.
//! * `true` ([`EcnMode::Classic`]), RFC 3168: the SYN carries ECE and CWR, the SYN-ACK ECE
//!   alone; data segments (not pure ACKs, not retransmissions) leave ECT(0); the receiver sets
//!   ECE on every ACK from a CE arrival until a segment with CWR arrives; the sender answers
//!   ECE at most once per window of data (until the ACK passes what was outstanding when it
//!   reduced) through the controller's own congestion response, as for a fast-retransmit
//!   loss but without retransmitting, and sets CWR on its next new segment.
//! * `"accurate"` ([`EcnMode::Accurate`]): data leaves ECT(1); the receiver counts CE
//!   arrivals and every ACK carries the count modulo 8, as AccECN's 3-bit ACE field does (the
//!   AccECN option's byte counters are not modelled: the sender counts marked packets, each
//!   taken as one SMSS, over the bytes an ACK delivered). The sender runs DCTCP's estimator
//!   (RFC 8257 3.3): once per window of data, `alpha = (1 - g) alpha + g F` with g = 1/16 and
//!   F the marked fraction of the window, alpha starting at 1; and once per window in which
//!   marks arrived, `cwnd = cwnd (1 - alpha / 2)` through the controller's proportional
//!   response ([`crate::tcp::cc::CongestionController::on_proportional_reduction`]). More
//!   than 7 marks between two ACKs that arrive wrap the counter and are under-counted, as in
//!   AccECN without its option.
//!
//! Negotiation: both ends take their mode from the same scenario key, so an `"accurate"` SYN
//! is not told apart from an RFC 3168 one on the wire here (real AccECN also sets AE on the
//! SYN); ECN is on when the SYN offered it and the SYN-ACK accepted it (RFC 3168 6.1.1).
//! A reduction for ECN does not enter fast recovery; while a loss recovery is under way,
//! ECE is taken as answered by that recovery's reduction (6.1.2: at most once per window).

use crate::links::link::Ecn;
use crate::tcp::segment::{Flags, Segment};
use crate::tcp::UnknownName;
use std::str::FromStr;

/// `flows[N].tcp.ecn`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum EcnMode {
    #[default]
    Off,
    /// RFC 3168.
    Classic,
    /// ECT(1), an AccECN-style count of CE marks and DCTCP's proportional response.
    Accurate,
}

impl EcnMode {
    pub const NAMES: &'static [&'static str] = &["false", "true", "accurate"];

    pub fn name(self) -> &'static str {
        match self {
            EcnMode::Off => "false",
            EcnMode::Classic => "true",
            EcnMode::Accurate => "accurate",
        }
    }

    /// The codepoint this mode's data segments carry.
    fn ect(self) -> Ecn {
        match self {
            EcnMode::Off => Ecn::NotEct,
            EcnMode::Classic => Ecn::Ect0,
            EcnMode::Accurate => Ecn::Ect1,
        }
    }
}

impl FromStr for EcnMode {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "false" => Ok(EcnMode::Off),
            "true" => Ok(EcnMode::Classic),
            "accurate" => Ok(EcnMode::Accurate),
            _ => Err(UnknownName {
                what: "tcp.ecn",
                name: s.to_string(),
                expected: EcnMode::NAMES,
            }),
        }
    }
}

/// DCTCP's estimation gain g (RFC 8257 section 4.2: 1/16).
pub const DCTCP_GAIN: f64 = 1.0 / 16.0;
/// The ACE field is 3 bits (AccECN section 3.2.2).
const ACE_MODULUS: u8 = 8;

/// What the sender must do about an ACK's congestion echo.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum EcnResponse {
    /// RFC 3168: the controller's own response to a congestion event, without retransmitting.
    Classic,
    /// RFC 8257: cwnd × (1 − alpha / 2); this is alpha / 2.
    Proportional { fraction: f64 },
}

/// The data sender's ECN state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SenderEcn {
    mode: EcnMode,
    /// Negotiated: the SYN-ACK accepted (or, the handshake skipped, the mode is on).
    on: bool,
    /// No new reduction until the cumulative ACK passes this (RFC 3168 6.1.2).
    recover: Option<u64>,
    /// CWR goes on the next new data segment.
    cwr_pending: bool,
    /// The last ACE count seen (accurate).
    last_ace: u8,
    /// DCTCP's observation window: ends when the ACK reaches this (`None` until the first
    /// ACK opens one).
    window_end: Option<u64>,
    window_delivered_bytes: u64,
    window_marked_pkts: u64,
    alpha: f64,
    reductions: u64,
}

impl SenderEcn {
    /// `established`: the handshake is skipped, so ECN is on if the mode is.
    pub fn new(mode: EcnMode, established: bool) -> Self {
        SenderEcn {
            mode,
            on: established && mode != EcnMode::Off,
            recover: None,
            cwr_pending: false,
            last_ace: 0,
            window_end: None,
            window_delivered_bytes: 0,
            window_marked_pkts: 0,
            alpha: 1.0,
            reductions: 0,
        }
    }

    pub fn mode(&self) -> EcnMode {
        self.mode
    }
    /// ECN is in use on the connection.
    pub fn is_on(&self) -> bool {
        self.on
    }
    /// Reductions made for ECN echoes.
    pub fn reductions(&self) -> u64 {
        self.reductions
    }
    /// DCTCP's alpha (accurate).
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// RFC 3168 6.1.1: an ECN-setup SYN carries ECE and CWR.
    pub fn on_syn(&self, syn: &mut Segment) {
        if self.mode != EcnMode::Off {
            syn.flags = syn.flags | Flags::ECE | Flags::CWR;
        }
    }

    /// RFC 3168 6.1.1: an ECN-setup SYN-ACK has ECE and not CWR.
    pub fn on_syn_ack(&mut self, syn_ack: &Segment) {
        self.on = self.mode != EcnMode::Off
            && syn_ack.flags.contains(Flags::ECE)
            && !syn_ack.flags.contains(Flags::CWR);
    }

    /// A data segment leaves: ECT on new data (6.1.5: not on retransmissions), and CWR on the
    /// first new one after a reduction (6.1.2).
    pub fn on_data_segment(&mut self, seg: &mut Segment, retransmission: bool) {
        if !self.on || retransmission {
            return;
        }
        seg.ecn = self.mode.ect();
        if self.cwr_pending && self.mode == EcnMode::Classic {
            seg.flags = seg.flags | Flags::CWR;
            self.cwr_pending = false;
        }
    }

    /// An acceptable ACK, after loss detection moved `snd_una` to `ack`: returns the reduction
    /// to make, if any. `delivered_bytes` is what the ACK newly acknowledged or SACKed,
    /// `snd_max` the highest sequence sent, `in_loss_recovery` whether a loss recovery's
    /// reduction already covers this window.
    pub fn on_ack(
        &mut self,
        seg: &Segment,
        ack: u64,
        snd_max: u64,
        delivered_bytes: u64,
        smss_bytes: u64,
        in_loss_recovery: bool,
    ) -> Option<EcnResponse> {
        if !self.on {
            return None;
        }
        let window_open = self.recover.is_none_or(|r| ack > r);
        match self.mode {
            EcnMode::Off => None,
            EcnMode::Classic => {
                if !seg.flags.contains(Flags::ECE) || !window_open {
                    return None;
                }
                // Answered now, or by the loss recovery under way: either way the receiver
                // must hear CWR, and this window is done.
                self.recover = Some(snd_max);
                self.cwr_pending = true;
                if in_loss_recovery {
                    return None;
                }
                self.reductions += 1;
                Some(EcnResponse::Classic)
            }
            EcnMode::Accurate => {
                let marked = u64::from(seg.ace.wrapping_sub(self.last_ace) % ACE_MODULUS);
                self.last_ace = seg.ace;
                self.window_marked_pkts += marked;
                self.window_delivered_bytes += delivered_bytes;
                match self.window_end {
                    Some(end) if ack < end => {}
                    Some(_) => {
                        self.end_observation_window(smss_bytes);
                        self.window_end = Some(snd_max);
                    }
                    None => self.window_end = Some(snd_max),
                }
                if marked == 0 || !window_open {
                    return None;
                }
                self.recover = Some(snd_max);
                if in_loss_recovery {
                    return None;
                }
                self.reductions += 1;
                Some(EcnResponse::Proportional {
                    fraction: self.alpha / 2.0,
                })
            }
        }
    }

    /// RFC 8257 3.3: `alpha = (1 - g) alpha + g F` over the window just ended.
    fn end_observation_window(&mut self, smss_bytes: u64) {
        if self.window_delivered_bytes == 0 {
            return;
        }
        let marked_bytes = self.window_marked_pkts.saturating_mul(smss_bytes);
        let f = (marked_bytes as f64 / self.window_delivered_bytes as f64).min(1.0);
        self.alpha = (1.0 - DCTCP_GAIN) * self.alpha + DCTCP_GAIN * f;
        self.window_delivered_bytes = 0;
        self.window_marked_pkts = 0;
    }
}

/// The data receiver's ECN state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReceiverEcn {
    mode: EcnMode,
    on: bool,
    /// RFC 3168 6.1.3: ECE on every ACK until CWR arrives.
    echo: bool,
    /// Data segments received with CE (whatever the mode).
    ce_pkts: u64,
}

impl ReceiverEcn {
    /// `established`: the handshake is skipped, so ECN is on if the mode is.
    pub fn new(mode: EcnMode, established: bool) -> Self {
        ReceiverEcn {
            mode,
            on: established && mode != EcnMode::Off,
            echo: false,
            ce_pkts: 0,
        }
    }

    pub fn is_on(&self) -> bool {
        self.on
    }
    /// Data segments that arrived marked CE.
    pub fn ce_pkts(&self) -> u64 {
        self.ce_pkts
    }

    /// The SYN arrived: ECN is on if it is an ECN-setup SYN and this end wants it; the SYN-ACK
    /// then says so with ECE (RFC 3168 6.1.1).
    pub fn on_syn(&mut self, syn: &Segment) {
        self.on = self.mode != EcnMode::Off
            && syn.flags.contains(Flags::ECE)
            && syn.flags.contains(Flags::CWR);
    }

    pub fn on_syn_ack(&self, syn_ack: &mut Segment) {
        if self.on {
            syn_ack.flags = syn_ack.flags | Flags::ECE;
        }
    }

    /// A data segment arrived (6.1.3: CWR ends the echo, a CE in the same segment starts it
    /// again).
    pub fn on_data_segment(&mut self, seg: &Segment) {
        if seg.flags.contains(Flags::CWR) {
            self.echo = false;
        }
        if seg.ecn == Ecn::Ce {
            self.ce_pkts += 1;
            self.echo = true;
        }
    }

    /// An ACK leaves: ECE while echoing (classic), or the ACE count (accurate).
    pub fn on_ack(&self, ack: &mut Segment) {
        if !self.on {
            return;
        }
        match self.mode {
            EcnMode::Off => {}
            EcnMode::Classic => {
                if self.echo {
                    ack.flags = ack.flags | Flags::ECE;
                }
            }
            EcnMode::Accurate => ack.ace = (self.ce_pkts % u64::from(ACE_MODULUS)) as u8,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(ecn: Ecn, flags: Flags) -> Segment {
        Segment {
            payload_bytes: 1000,
            flags: Flags::ACK | flags,
            ecn,
            ..Segment::default()
        }
    }

    #[test]
    fn negotiation_needs_both_ends() {
        let s = SenderEcn::new(EcnMode::Classic, false);
        let mut syn = Segment {
            flags: Flags::SYN,
            ..Segment::default()
        };
        s.on_syn(&mut syn);
        assert!(syn.flags.contains(Flags::ECE | Flags::CWR));
        for (mode, on) in [(EcnMode::Classic, true), (EcnMode::Off, false)] {
            let mut r = ReceiverEcn::new(mode, false);
            r.on_syn(&syn);
            let mut syn_ack = Segment {
                flags: Flags::SYN | Flags::ACK,
                ..Segment::default()
            };
            r.on_syn_ack(&mut syn_ack);
            let mut s = s;
            s.on_syn_ack(&syn_ack);
            assert_eq!((r.is_on(), s.is_on()), (on, on));
        }
        // A SYN without ECE and CWR is not an ECN-setup SYN.
        let mut r = ReceiverEcn::new(EcnMode::Classic, false);
        r.on_syn(&Segment {
            flags: Flags::SYN | Flags::ECE,
            ..Segment::default()
        });
        assert!(!r.is_on());
    }

    #[test]
    fn ect_on_new_data_only_and_cwr_once_after_a_reduction() {
        let mut s = SenderEcn::new(EcnMode::Classic, true);
        let mut seg = data(Ecn::NotEct, Flags::NONE);
        s.on_data_segment(&mut seg, true);
        assert_eq!(seg.ecn, Ecn::NotEct, "6.1.5: no ECT on a retransmission");
        s.on_data_segment(&mut seg, false);
        assert_eq!(seg.ecn, Ecn::Ect0);
        assert!(!seg.flags.contains(Flags::CWR));
        let ece = Segment {
            flags: Flags::ACK | Flags::ECE,
            ..Segment::default()
        };
        assert_eq!(
            s.on_ack(&ece, 1000, 10_000, 1000, 1000, false),
            Some(EcnResponse::Classic)
        );
        let mut next = data(Ecn::NotEct, Flags::NONE);
        s.on_data_segment(&mut next, false);
        assert!(next.flags.contains(Flags::CWR));
        let mut after = data(Ecn::NotEct, Flags::NONE);
        s.on_data_segment(&mut after, false);
        assert!(!after.flags.contains(Flags::CWR));
    }

    #[test]
    fn one_reduction_per_window_of_data() {
        let mut s = SenderEcn::new(EcnMode::Classic, true);
        let ece = Segment {
            flags: Flags::ACK | Flags::ECE,
            ..Segment::default()
        };
        // Reduced at ack 1000 with 10,000 sent: ECE up to and including 10,000 is the same
        // window.
        assert!(s.on_ack(&ece, 1000, 10_000, 1000, 1000, false).is_some());
        for ack in [2000, 5000, 10_000] {
            assert_eq!(s.on_ack(&ece, ack, 12_000, 1000, 1000, false), None);
        }
        assert!(s.on_ack(&ece, 10_001, 20_000, 1000, 1000, false).is_some());
        assert_eq!(s.reductions(), 2);
    }

    #[test]
    fn ece_during_loss_recovery_is_answered_by_it() {
        let mut s = SenderEcn::new(EcnMode::Classic, true);
        let ece = Segment {
            flags: Flags::ACK | Flags::ECE,
            ..Segment::default()
        };
        assert_eq!(s.on_ack(&ece, 1000, 10_000, 1000, 1000, true), None);
        assert_eq!(s.reductions(), 0);
        let mut next = data(Ecn::NotEct, Flags::NONE);
        s.on_data_segment(&mut next, false);
        assert!(
            next.flags.contains(Flags::CWR),
            "the receiver must stop echoing"
        );
        assert_eq!(s.on_ack(&ece, 5000, 10_000, 1000, 1000, false), None);
    }

    #[test]
    fn receiver_echoes_from_ce_until_cwr() {
        let mut r = ReceiverEcn::new(EcnMode::Classic, true);
        let echo = |r: &ReceiverEcn| {
            let mut a = Segment::default();
            r.on_ack(&mut a);
            a.flags.contains(Flags::ECE)
        };
        r.on_data_segment(&data(Ecn::Ect0, Flags::NONE));
        assert!(!echo(&r));
        r.on_data_segment(&data(Ecn::Ce, Flags::NONE));
        assert!(echo(&r));
        r.on_data_segment(&data(Ecn::Ect0, Flags::NONE));
        assert!(echo(&r), "every ACK until CWR");
        r.on_data_segment(&data(Ecn::Ect0, Flags::CWR));
        assert!(!echo(&r));
        r.on_data_segment(&data(Ecn::Ce, Flags::CWR));
        assert!(
            echo(&r),
            "a CE on the CWR segment itself starts the echo again"
        );
        assert_eq!(r.ce_pkts(), 2);
    }

    #[test]
    fn accurate_counts_marks_and_moves_alpha_by_the_marked_fraction() {
        let mut r = ReceiverEcn::new(EcnMode::Accurate, true);
        let mut s = SenderEcn::new(EcnMode::Accurate, true);
        let mut seg = data(Ecn::NotEct, Flags::NONE);
        s.on_data_segment(&mut seg, false);
        assert_eq!(seg.ecn, Ecn::Ect1);
        // Window 1: 10 segments of 1000 bytes, acknowledged one by one, none marked. The
        // first ACK opens the window up to 10,000; by its end 20,000 are sent.
        for i in 1..=10u64 {
            r.on_data_segment(&data(Ecn::Ect1, Flags::NONE));
            let mut ack = Segment::default();
            r.on_ack(&mut ack);
            let snd_max = if i < 10 { 10_000 } else { 20_000 };
            assert_eq!(s.on_ack(&ack, i * 1000, snd_max, 1000, 1000, false), None);
        }
        // alpha = 15/16 after a window with F = 0.
        assert!((s.alpha() - 15.0 / 16.0).abs() < 1e-12);
        // Window 2: 10 more, 9 of them marked (the 3-bit count wraps past 7; one mark per ACK
        // is never lost).
        let mut responses = Vec::new();
        for i in 11..=20u64 {
            let mark = if i > 11 { Ecn::Ce } else { Ecn::Ect1 };
            r.on_data_segment(&data(mark, Flags::NONE));
            let mut ack = Segment::default();
            r.on_ack(&mut ack);
            responses.push(s.on_ack(&ack, i * 1000, 20_000, 1000, 1000, false));
        }
        assert_eq!(r.ce_pkts(), 9);
        // One reduction, on the first marked ACK, by the alpha then held.
        let made: Vec<_> = responses.iter().flatten().collect();
        assert_eq!(
            made,
            [&EcnResponse::Proportional {
                fraction: 15.0 / 32.0
            }]
        );
        // Window 2 ended at 20,000 with F = 0.9.
        let expected = (15.0 / 16.0) * (15.0 / 16.0) + 0.9 / 16.0;
        assert!((s.alpha() - expected).abs() < 1e-12, "{}", s.alpha());
    }

    #[test]
    fn off_does_nothing() {
        let mut s = SenderEcn::new(EcnMode::Off, true);
        let mut seg = data(Ecn::NotEct, Flags::NONE);
        s.on_data_segment(&mut seg, false);
        assert_eq!(seg, data(Ecn::NotEct, Flags::NONE));
        let r = ReceiverEcn::new(EcnMode::Off, true);
        let mut ack = Segment::default();
        r.on_ack(&mut ack);
        assert_eq!(ack, Segment::default());
    }

    #[test]
    fn modes_parse_by_their_scenario_names() {
        for name in EcnMode::NAMES {
            assert_eq!(name.parse::<EcnMode>().unwrap().name(), *name);
        }
        assert!("yes".parse::<EcnMode>().is_err());
    }
}
