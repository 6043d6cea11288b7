//! How the congestion window comes down in SACK-based recovery: at once to ssthresh (RFC 5681
//! 3.2, RFC 6675, farlink's default) or by Proportional Rate Reduction (RFC 6937, what Linux
//! does: `tcp_cwnd_reduction` in `net/ipv4/tcp_input.c`).
//!
//! With the window set to ssthresh at once, an entry into recovery with half the window's
//! worth of data still in flight sends nothing until pipe has fallen below ssthresh, then
//! everything it may in a burst. PRR spreads the reduction over the round trip instead: while
//! pipe is above ssthresh, each ACK releases the share `ssthresh / RecoverFS` of what it
//! delivered (so the recovery sends about ssthresh in one round); once pipe is below, each ACK
//! releases what it delivered plus one segment (slow-start reduction bound, PRR-SSRB), up to
//! ssthresh.
//!
//! The arithmetic is Linux's, in segments: `RecoverFS` is the window before the reduction
//! (`tp->prior_cwnd`), the delivered count is the segments each ACK newly acknowledged or
//! SACKed, the extra segment of PRR-SSRB only when the ACK advanced SND.UNA and found no new
//! loss, and the ACK that starts recovery always releases at least the fast retransmit. The
//! window PRR gives after an ACK is pipe then plus the segments released (`tcp_snd_cwnd_set(tp,
//! tcp_packets_in_flight(tp) + sndcnt)`); the sender sends while pipe stays below it, as with
//! any window. Controllers that set their own window in recovery (BBR's packet conservation,
//! Linux's `cong_control` hook) are left alone.

use std::str::FromStr;

use super::UnknownName;

/// How the window comes down on entering SACK-based recovery, by its lower-case name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum WindowReduction {
    /// `"immediate"`: cwnd = ssthresh as recovery begins (RFC 5681 3.2, RFC 6675).
    #[default]
    Immediate,
    /// `"prr"`: Proportional Rate Reduction (RFC 6937) with Linux's arithmetic (module notes).
    Prr,
}

impl WindowReduction {
    pub const NAMES: &'static [&'static str] = &["immediate", "prr"];

    pub fn name(self) -> &'static str {
        match self {
            WindowReduction::Immediate => "immediate",
            WindowReduction::Prr => "prr",
        }
    }
}

impl FromStr for WindowReduction {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "immediate" => Ok(WindowReduction::Immediate),
            "prr" => Ok(WindowReduction::Prr),
            _ => Err(UnknownName {
                what: "window reduction",
                name: s.to_owned(),
                expected: Self::NAMES,
            }),
        }
    }
}

/// What one ACK (or RACK's timer) told PRR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrrAck {
    /// Bytes newly acknowledged or SACKed (RFC 6937 `DeliveredData`).
    pub delivered_bytes: u64,
    /// The ACK advanced SND.UNA.
    pub snd_una_advanced: bool,
    /// The ACK (or the timer) marked segments lost.
    pub newly_lost: bool,
    /// RFC 6675 pipe once the ACK has been taken in.
    pub pipe_bytes: u64,
}

/// One recovery episode's PRR state, in segments as Linux counts them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prr {
    smss_bytes: u64,
    /// `RecoverFS`: the window before the reduction (Linux's `prior_cwnd`), at least one.
    recover_fs_segments: u64,
    ssthresh_segments: u64,
    /// `prr_delivered`, `prr_out`.
    delivered_segments: u64,
    out_segments: u64,
    /// The window the last ACK left: pipe then plus the segments it released.
    window_bytes: u64,
}

impl Prr {
    /// Recovery begins: `prior_cwnd_bytes` is the window before the controller's reduction,
    /// `ssthresh_bytes` the one it set. Until the first ACK the window is the controller's.
    pub fn start(prior_cwnd_bytes: u64, ssthresh_bytes: u64, smss_bytes: u64) -> Self {
        let smss = smss_bytes.max(1);
        Prr {
            smss_bytes: smss,
            recover_fs_segments: (prior_cwnd_bytes / smss).max(1),
            ssthresh_segments: ssthresh_bytes / smss,
            delivered_segments: 0,
            out_segments: 0,
            window_bytes: ssthresh_bytes,
        }
    }

    /// The window PRR allows now (bytes).
    pub fn window_bytes(&self) -> u64 {
        self.window_bytes
    }

    /// A data segment (new or a retransmission) left during the recovery.
    pub fn on_sent(&mut self) {
        self.out_segments += 1;
    }

    /// An ACK during the recovery (the one that starts it included): `tcp_cwnd_reduction`.
    /// An ACK that delivered nothing leaves the window as it was.
    pub fn on_ack(&mut self, ack: &PrrAck) {
        if ack.delivered_bytes == 0 {
            return;
        }
        let smss = self.smss_bytes;
        let delivered = ack.delivered_bytes.div_ceil(smss);
        self.delivered_segments += delivered;
        let pipe = ack.pipe_bytes.div_ceil(smss);
        let mut send = if pipe > self.ssthresh_segments {
            // Proportional part: ceil(ssthresh · prr_delivered / RecoverFS) − prr_out.
            (self.ssthresh_segments * self.delivered_segments)
                .div_ceil(self.recover_fs_segments)
                .saturating_sub(self.out_segments)
        } else {
            // PRR-SSRB: what was delivered (at least this ACK's), one more on clean progress,
            // never past ssthresh.
            let mut s = self
                .delivered_segments
                .saturating_sub(self.out_segments)
                .max(delivered);
            if ack.snd_una_advanced && !ack.newly_lost {
                s += 1;
            }
            s.min(self.ssthresh_segments - pipe)
        };
        // The fast retransmit goes out whatever the arithmetic says.
        if self.out_segments == 0 {
            send = send.max(1);
        }
        self.window_bytes = ack.pipe_bytes + send * smss;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn ack(delivered_segments: u64, pipe_segments: u64, advanced: bool) -> PrrAck {
        PrrAck {
            delivered_bytes: delivered_segments * MSS,
            snd_una_advanced: advanced,
            newly_lost: false,
            pipe_bytes: pipe_segments * MSS,
        }
    }

    /// Sends what the window allows, as the sender does: while pipe + 1 segment fits.
    fn send_all(prr: &mut Prr, pipe_segments: &mut u64) -> u64 {
        let mut sent = 0;
        while prr.window_bytes() >= (*pipe_segments + 1) * MSS {
            prr.on_sent();
            *pipe_segments += 1;
            sent += 1;
        }
        sent
    }

    #[test]
    fn names_parse_and_an_unknown_one_lists_the_known() {
        assert_eq!("prr".parse::<WindowReduction>(), Ok(WindowReduction::Prr));
        assert_eq!(
            "immediate".parse::<WindowReduction>(),
            Ok(WindowReduction::Immediate)
        );
        let e = "halving".parse::<WindowReduction>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown window reduction \"halving\"; expected one of: immediate, prr"
        );
    }

    #[test]
    fn one_loss_in_twenty_sends_half_a_window_spread_over_the_round() {
        // After RFC 6937's example: cwnd 20, one segment lost, ssthresh 10. Each of the 19
        // ACKs that follow SACKs one segment; PRR sends on every other one (the fast
        // retransmit first), never a burst, and brings pipe down to ssthresh, not below, by
        // the end of the round.
        let mut prr = Prr::start(20 * MSS, 10 * MSS, MSS);
        let mut pipe = 19; // 20 out, the first SACK arrived, the head is lost: 20 − 1 − 0
        let mut total = 0;
        let mut per_ack = Vec::new();
        for _ in 0..19 {
            prr.on_ack(&ack(1, pipe, false));
            let sent = send_all(&mut prr, &mut pipe);
            per_ack.push(sent);
            total += sent;
            pipe -= 1; // the next SACK
        }
        assert_eq!(per_ack[0], 1, "the fast retransmit leaves on the first ACK");
        assert!(per_ack.iter().all(|&s| s <= 1), "no burst: {per_ack:?}");
        assert_eq!(total, 9, "{per_ack:?}");
        assert_eq!(pipe + 1, 10, "pipe at ssthresh after the last ACK");
        assert_eq!(prr.window_bytes(), 10 * MSS);
    }

    #[test]
    fn below_ssthresh_each_ack_releases_what_it_delivered_and_one_more() {
        // Heavy loss: pipe has fallen to 3 with ssthresh 10. An ACK advancing SND.UNA by two
        // segments with no new loss releases 2 + 1 = 3; the same ACK with a new loss, 2.
        let mut prr = Prr::start(20 * MSS, 10 * MSS, MSS);
        prr.on_sent(); // the fast retransmit
        prr.on_ack(&ack(2, 3, true));
        assert_eq!(prr.window_bytes(), (3 + 3) * MSS);
        let mut lossy = Prr::start(20 * MSS, 10 * MSS, MSS);
        lossy.on_sent();
        lossy.on_ack(&PrrAck {
            newly_lost: true,
            ..ack(2, 3, true)
        });
        assert_eq!(lossy.window_bytes(), (3 + 2) * MSS);
        // Never above ssthresh: pipe 9 allows one segment whatever was delivered.
        let mut near = Prr::start(20 * MSS, 10 * MSS, MSS);
        near.on_sent();
        near.on_ack(&ack(5, 9, true));
        assert_eq!(near.window_bytes(), 10 * MSS);
    }

    #[test]
    fn an_ack_that_delivers_nothing_changes_nothing() {
        let mut prr = Prr::start(20 * MSS, 10 * MSS, MSS);
        let before = prr;
        prr.on_ack(&ack(0, 12, false));
        assert_eq!(prr, before);
    }
}
