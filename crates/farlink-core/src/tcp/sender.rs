//! The data sender: send sequence space, retransmission timer, and the glue between error
//! control, loss recovery and congestion control.
//!
//! Read first: RFC 9293 sections 3.3.1 and 3.10.7.4 (`SND.UNA`, `SND.NXT`, `SND.WND`, the window
//! update rule), RFC 6298 section 5 (the timer rules (5.1)–(5.7), quoted where applied) and
//! section 3 (Karn's rule), RFC 5681 sections 2 and 3 (duplicate ACKs, FlightSize, the
//! sending rule "min of cwnd and rwnd"), RFC 6928 (initial window), RFC 7323 section 4 (RTT
//! from timestamps), RFC 1122 4.2.3.4 (sender silly-window avoidance). Then `recovery.rs` and
//! `cc/mod.rs`.
//!
//! Sequence space: `SND.UNA` (oldest unacknowledged), `SND.NXT` (next to send) and `SND.MAX`
//! (one after the highest ever sent). They differ only when the sender goes back N after a
//! timeout without SACK (`SND.NXT` returns to `SND.UNA`, as in BSD).
//!
//! Sans-I/O: [`Sender::poll_transmit`] hands out the next segment the sender may send now and
//! what kind it is, a [`Transmission`] (call it until `None`); [`Sender::on_ack`] takes an ACK
//! (what it told is `detection.rs`'s to say, what to do `recovery.rs`'s); [`Sender::next_timeout`] and
//! [`Sender::on_timeout`] run the retransmission timer. [`Sender::new`] starts established
//! with a [`Negotiated`] value the caller computed; [`Sender::connect`] starts in SYN-SENT:
//! `poll_transmit` hands out the SYN (again after each expiry of its timer), `on_ack` takes
//! the SYN-ACK and agrees the options from it (`handshake.rs`), and the first segment after
//! it, data or a pure ACK, completes the handshake. Once established the two are the same
//! sender: one comparison in `poll_transmit` and `on_ack` is all the handshake costs.

use super::cc::{
    AckBatch, AckEcho, Acked, CcConfig, CongestionController, CongestionEvent, ControllerInit,
    Detection, Reduction, SentPacket,
};
use super::detection::{AckOutcome, BeforeAck, LossDetector};
use super::ecn::{EcnMode, EcnResponse, SenderEcn};
use super::handshake::{self, RTO_AFTER_SYN_LOSS};
use super::limits::{Limit, LimitClock};
use super::pacer::Pacer;
use super::prr::{Prr, PrrAck, WindowReduction};
use super::rack;
use super::recovery::{
    AckInfo, LossRecovery, NextSeg, NextSegRule, Recovery, RecoveryDecision, RecoveryState,
    DUP_THRESH,
};
use super::rtt::{RttConfig, RttEstimator};
use super::scoreboard::Scoreboard;
use super::segment::{timestamp_clock, Flags, Options, Segment, Timestamps};
use super::timers::{Timer, Timers};
use super::{Negotiated, State, TcpOptions};
use crate::time::{SimDuration, SimTime};

/// RFC 6928 section 2: an initial window of up to ten segments (IW10), the default of Linux
/// and ns-3. RFC 5681 3.1 (RFC 3390) allows 2 to 4; 1 is the original.
pub const DEFAULT_INITIAL_WINDOW_SEGMENTS: u32 = 10;
/// Scoreboard entries reserved up front: 1024 segments of 1448 bytes is 1.4 MB in flight.
/// Beyond that the scoreboard grows once and keeps its storage.
pub const DEFAULT_SCOREBOARD_CAPACITY_SEGMENTS: usize = 1024;

/// What the application gives the sender to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppSource {
    /// `total_bytes` handed over at the start ([`Sender::push_bytes`] adds more).
    Bulk { total_bytes: u64 },
    /// Always more data to send.
    Unbounded,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SenderConfig {
    /// The options this end offers in its SYN.
    pub options: TcpOptions,
    pub initial_window_segments: u32,
    pub recovery: LossRecovery,
    pub congestion_control: CcConfig,
    pub rtt: RttConfig,
    pub app: AppSource,
    /// RFC 5681 / RFC 6675 DupThresh.
    pub dup_thresh: u32,
    /// RFC 3042 Limited Transmit: on each of the first two duplicate ACKs, send one new segment
    /// beyond the congestion window, so a small window can still collect DupThresh duplicates
    /// and recover by fast retransmit rather than by timeout. On by default, as in Linux and
    /// ns-3.
    pub limited_transmit: bool,
    /// How the window comes down in SACK-based recovery ([`crate::tcp::prr`]): at once to
    /// ssthresh (the default) or by Proportional Rate Reduction, as Linux does.
    pub window_reduction: WindowReduction,
    pub scoreboard_capacity_segments: usize,
    /// The socket send buffer: bytes written and not yet acknowledged that the sender holds.
    /// An application that keeps it full (a bulk transfer) can have at most this much
    /// outstanding, whatever the windows. `None`: unbounded.
    pub send_buffer_bytes: Option<u64>,
    /// The Nagle algorithm (RFC 896, RFC 1122 4.2.3.4): while data is outstanding, a segment
    /// shorter than the SMSS waits until everything is acknowledged or a full segment can go,
    /// unless the application has closed its stream ([`Sender::end_of_data`]). Off by default
    /// (a bulk source writes everything at once; the interactive source sends each message);
    /// on for a relay's outgoing connection, which is written in pieces.
    pub nagle: bool,
    /// ECN ([`crate::tcp::ecn`]); off by default.
    pub ecn: EcnMode,
}

impl Default for SenderConfig {
    fn default() -> Self {
        SenderConfig {
            options: TcpOptions::default(),
            initial_window_segments: DEFAULT_INITIAL_WINDOW_SEGMENTS,
            recovery: LossRecovery::default(),
            congestion_control: CcConfig::default(),
            rtt: RttConfig::default(),
            app: AppSource::Unbounded,
            dup_thresh: DUP_THRESH,
            limited_transmit: true,
            window_reduction: WindowReduction::default(),
            scoreboard_capacity_segments: DEFAULT_SCOREBOARD_CAPACITY_SEGMENTS,
            send_buffer_bytes: None,
            nagle: false,
            ecn: EcnMode::Off,
        }
    }
}

/// Counters of the sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Data segments sent, retransmissions included.
    pub segments_sent: u64,
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: u64,
    pub retransmitted_segments: u64,
    pub retransmitted_bytes: u64,
    /// Retransmission timer expiries.
    pub timeouts: u64,
    /// Fast retransmits (entries into recovery on duplicate ACKs or SACK, Tahoe's included).
    pub fast_retransmits: u64,
    /// Entries into fast recovery (Reno, NewReno, SACK).
    pub fast_recoveries: u64,
    /// Bytes cumulatively acknowledged.
    pub bytes_acked: u64,
    pub acks_received: u64,
    pub dupacks_received: u64,
    /// Zero-window probes sent by the persist timer.
    pub window_probes: u64,
    /// SYNs sent (an active open), retransmissions included, and how many of them were
    /// retransmissions.
    pub syn_sent: u64,
    pub syn_retransmissions: u64,
    /// Pure ACKs that answered the peer's SYN-ACK (data, when there is some, carries the ACK
    /// instead).
    pub handshake_acks_sent: u64,
    /// Tail loss probes sent (RFC 8985 TLP, `rack` recovery).
    pub loss_probes: u64,
}

/// Why a segment is sent again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Retransmit {
    /// The first unacknowledged segment, presumed lost by DupThresh duplicate ACKs or the
    /// SACK scoreboard (RFC 5681 3.2, RFC 6675 (4.3)), or by a partial ACK (RFC 6582 3.2).
    Fast,
    /// The first unacknowledged segment after the retransmission timer expired
    /// (RFC 6298 (5.4)).
    Timeout,
    /// Going back N from `SND.NXT` after a timeout or Tahoe's fast retransmit, without
    /// SACK: the receiver may hold the segment already.
    GoBackN,
    /// Chosen by RFC 6675 `NextSeg()` during SACK-based recovery, by this rule.
    NextSeg(NextSegRule),
}

/// What kind of segment [`Sender::poll_transmit`] hands out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TransmissionKind {
    /// The SYN of an active open, first or again after its timer expired.
    Syn { retransmission: bool },
    /// The pure ACK that answers the peer's SYN-ACK when no data can carry it.
    HandshakeAck,
    /// A zero-window probe of the persist timer (no data).
    WindowProbe,
    /// Data never sent before; `limited_transmit`: only RFC 3042 let it out.
    NewData { limited_transmit: bool },
    /// Data sent before.
    Retransmission(Retransmit),
    /// RFC 8985 7.3's tail loss probe: new data (`retransmission` false) or the highest
    /// unSACKed segment again.
    LossProbe { retransmission: bool },
}

impl TransmissionKind {
    /// A data segment (new or again), counted in the sender's segment statistics.
    pub fn carries_data(self) -> bool {
        matches!(
            self,
            TransmissionKind::NewData { .. }
                | TransmissionKind::Retransmission(_)
                | TransmissionKind::LossProbe { .. }
        )
    }
    pub fn is_retransmission(self) -> bool {
        matches!(
            self,
            TransmissionKind::Retransmission(_)
                | TransmissionKind::LossProbe {
                    retransmission: true
                }
        )
    }
}

/// One segment the sender hands out, and what it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmission {
    pub segment: Segment,
    pub kind: TransmissionKind,
}

/// What a sender in SYN-SENT keeps until the SYN-ACK arrives ([`Sender::connect`]).
#[derive(Debug)]
struct ActiveOpen {
    /// The configuration the established sender is built from, with the options agreed.
    config: SenderConfig,
    /// When the first SYN left, and how many were sent.
    first_sent: Option<SimTime>,
    syn_transmissions: u32,
    /// The next `poll_transmit` sends the SYN (at the start, and after each expiry).
    syn_due: bool,
}

/// A sans-I/O TCP data sender.
#[derive(Debug)]
pub struct Sender {
    /// SYN-SENT until the SYN-ACK arrives ([`Sender::connect`]), else ESTABLISHED.
    state: State,
    /// The active open, while in SYN-SENT.
    opening: Option<Box<ActiveOpen>>,
    /// The peer's SYN-ACK awaits our ACK: the next segment carries it, or a pure ACK does.
    ack_owed: bool,
    /// When the SYN-ACK arrived (a sender built by [`Sender::connect`]).
    established_at: Option<SimTime>,
    negotiated: Negotiated,
    smss_bytes: u64,
    window_shift: u8,
    timestamps: bool,
    snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    /// `SND.WND` in bytes, and `SND.WL2`, the ACK that last updated it (RFC 9293 3.10.7.4).
    snd_wnd: u64,
    snd_wl2: u64,
    /// The application has handed over bytes `[0, app_limit_bytes)`.
    app_limit_bytes: u64,
    /// [`SenderConfig::send_buffer_bytes`]; `u64::MAX` when unbounded.
    send_buffer_bytes: u64,
    /// The writer has more data, but a send buffer beyond this sender's (a Multipath TCP
    /// connection's, shared by its subflows) is full: nothing to send counts as
    /// [`Limit::SendBuffer`] ([`Sender::set_writer_blocked`]).
    writer_blocked: bool,
    /// [`SenderConfig::nagle`], until the application closes its stream.
    nagle: bool,
    /// Persist expiries since the window last opened: the probe interval doubles each time.
    persist_backoff: u32,
    /// The persist timer expired: the next `poll_transmit` sends a probe.
    probe_due: bool,
    /// The peer's last TSval, echoed in our TSecr (RFC 7323 4.3).
    ts_recent: u32,
    scoreboard: Scoreboard,
    recovery: Recovery,
    /// RFC 3042 Limited Transmit ([`SenderConfig::limited_transmit`]).
    limited_transmit: bool,
    /// New data sent beyond the window by Limited Transmit since the duplicate ACKs began
    /// counting: RFC 5681 3.2 step 2 leaves it out of the FlightSize that sets ssthresh.
    limited_transmit_sent_bytes: u64,
    /// The FlightSize that set ssthresh when the current fast recovery began: a timeout
    /// before the recovery ends counts no more than that ([`Sender::on_timeout`]).
    recovery_flight_size_bytes: u64,
    /// [`SenderConfig::window_reduction`], and the current recovery's PRR state when it is
    /// `Prr` (SACK-based recovery under a controller that leaves its window to the sender).
    window_reduction: WindowReduction,
    prr: Option<Prr>,
    cc: Box<dyn CongestionController>,
    rtt: RttEstimator,
    /// Every deadline: the retransmission timer (RFC 6298 section 5), the persist timer
    /// (RFC 9293 3.8.6.1: runs while the peer's window holds back new data and nothing is
    /// outstanding, so a lost window update cannot stall the connection), RACK-TLP's probe
    /// (RFC 8985 7.2) and reordering (6.3) timers, the pacing release.
    timers: Timers,
    /// RACK-TLP (`rack` recovery only): the probe the probe timer asks for, and the end of the
    /// outstanding probe's episode (`TLP.end_seq`).
    loss_probe_due: bool,
    tlp_end_seq: Option<u64>,
    /// The first unacknowledged segment must go out next, whatever the window (fast
    /// retransmit, partial ACK, RFC 6298 (5.4)), and why.
    retransmit_head: Option<Retransmit>,
    /// Timer expiries since the cumulative ACK last advanced; more than one means the
    /// segment the timer retransmitted timed out again (RFC 5681 3.1 holds ssthresh).
    timeouts_without_progress: u32,
    last_reduction: Option<Reduction>,
    /// The end of the segment the last ACK was matched to ([`AckEcho`]): a duplicate ACK
    /// answers the next segment above it.
    echo_end: u64,
    /// Pacing: when the next segment may leave, when the controller paces
    /// ([`CongestionController::pacing_rate`]). While the last `poll_transmit` held a
    /// segment back for it, [`Timer::Pacing`] runs to its release instant.
    pacer: Pacer,
    /// Loss detection: what each ACK and timeout told, and the per-ACK lists of segments
    /// newly acknowledged and newly lost that the controller's batch hands on.
    detection: LossDetector,
    /// Time spent limited by each cause (summaries: what limited the flow).
    limits: LimitClock,
    stats: SenderStats,
    ecn: SenderEcn,
}

impl Sender {
    pub fn new(config: &SenderConfig, negotiated: &Negotiated) -> Self {
        let smss_bytes = u64::from(negotiated.smss_bytes());
        // SACK-based recovery needs the SACK option on both ends; otherwise NewReno, as
        // real stacks do.
        let recovery = match config.recovery {
            LossRecovery::Sack | LossRecovery::Rack if !negotiated.sack => LossRecovery::NewReno,
            r => r,
        };
        let init = ControllerInit {
            smss_bytes,
            initial_window_bytes: u64::from(config.initial_window_segments.max(1)) * smss_bytes,
        };
        let app_limit_bytes = match config.app {
            AppSource::Bulk { total_bytes } => total_bytes,
            AppSource::Unbounded => u64::MAX,
        };
        let mut cc = config.congestion_control.build(&init);
        // The headers of a data segment (what `on_data_sent` builds): IP, TCP, timestamps.
        let header_probe = Segment {
            options: Options {
                timestamps: negotiated
                    .timestamps
                    .then_some(Timestamps { tsval: 0, tsecr: 0 }),
                ..Options::default()
            },
            ..Segment::default()
        };
        cc.on_wire_overhead(u64::from(header_probe.wire_bytes()));
        Sender {
            state: State::Established,
            opening: None,
            ack_owed: false,
            established_at: None,
            negotiated: *negotiated,
            smss_bytes,
            window_shift: negotiated.window_shift,
            timestamps: negotiated.timestamps,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            snd_wnd: negotiated.initial_peer_window_bytes,
            snd_wl2: 0,
            app_limit_bytes,
            send_buffer_bytes: config.send_buffer_bytes.unwrap_or(u64::MAX),
            writer_blocked: false,
            nagle: config.nagle,
            persist_backoff: 0,
            probe_due: false,
            ts_recent: 0,
            scoreboard: Scoreboard::with_capacity(config.scoreboard_capacity_segments),
            recovery: Recovery::new(recovery, config.dup_thresh),
            limited_transmit: config.limited_transmit,
            limited_transmit_sent_bytes: 0,
            recovery_flight_size_bytes: 0,
            window_reduction: config.window_reduction,
            prr: None,
            cc,
            rtt: RttEstimator::new(config.rtt),
            timers: Timers::default(),
            loss_probe_due: false,
            tlp_end_seq: None,
            retransmit_head: None,
            timeouts_without_progress: 0,
            last_reduction: None,
            echo_end: 0,
            pacer: Pacer::default(),
            detection: {
                let d = LossDetector::new(
                    recovery.is_sack_based(),
                    config.dup_thresh,
                    smss_bytes,
                    negotiated.timestamps,
                    config.scoreboard_capacity_segments,
                );
                if recovery == LossRecovery::Rack {
                    d.with_rack()
                } else {
                    d
                }
            },
            limits: LimitClock::default(),
            stats: SenderStats::default(),
            ecn: SenderEcn::new(config.ecn, true),
        }
    }

    /// A sender that opens the connection: in SYN-SENT, its first `poll_transmit` sends the
    /// SYN offering `config.options`; it is established once the SYN-ACK arrives, with the
    /// options both ends offered ([`handshake::negotiate_at_connector`]). The SYN is timed
    /// like data (RFC 6298: initial RTO, doubled on each expiry, within the minimum and
    /// maximum RTO) and retransmitted until the SYN-ACK comes.
    pub fn connect(config: &SenderConfig) -> Self {
        // Until the SYN-ACK says otherwise, a sender with only its own offer and a closed
        // peer window: nothing but the SYN can leave.
        let provisional = Negotiated::without_handshake(&config.options, &config.options, 0);
        let mut s = Sender::new(config, &provisional);
        s.state = State::SynSent;
        s.ecn = SenderEcn::new(config.ecn, false);
        s.opening = Some(Box::new(ActiveOpen {
            config: *config,
            first_sent: None,
            syn_transmissions: 0,
            syn_due: true,
        }));
        s
    }

    pub fn state(&self) -> State {
        self.state
    }
    /// What both ends agreed; for a sender still in SYN-SENT, only its own offer.
    pub fn negotiated(&self) -> &Negotiated {
        &self.negotiated
    }
    /// When the SYN-ACK arrived; `None` for a sender built established or still in SYN-SENT.
    pub fn established_at(&self) -> Option<SimTime> {
        self.established_at
    }
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }
    pub fn snd_nxt(&self) -> u64 {
        self.snd_nxt
    }
    pub fn snd_max(&self) -> u64 {
        self.snd_max
    }
    /// The peer's advertised window, in bytes.
    pub fn snd_wnd_bytes(&self) -> u64 {
        self.snd_wnd
    }
    /// SMSS: payload bytes of a full-sized segment.
    pub fn smss_bytes(&self) -> u64 {
        self.smss_bytes
    }
    /// RFC 5681 FlightSize: sent and not yet cumulatively acknowledged.
    pub fn flight_size_bytes(&self) -> u64 {
        self.snd_max - self.snd_una
    }
    /// Bytes the sender counts as in the network: RFC 6675 `pipe` with SACK-based recovery,
    /// `SND.NXT - SND.UNA` otherwise.
    pub fn in_flight_bytes(&self) -> u64 {
        if self.recovery.algorithm().is_sack_based() {
            self.scoreboard.pipe_bytes()
        } else {
            self.snd_nxt - self.snd_una
        }
    }
    /// The controller's congestion window.
    pub fn cwnd_bytes(&self) -> u64 {
        self.cc.window()
    }
    /// The window the sender sends against: the controller's, plus Reno/NewReno inflation
    /// during fast recovery, or PRR's during a SACK-based recovery that reduces by it.
    pub fn effective_cwnd_bytes(&self) -> u64 {
        if let Some(prr) = &self.prr {
            return prr.window_bytes();
        }
        let cwnd = self.cc.window().min(i64::MAX as u64) as i64;
        (cwnd + self.recovery.window_extra_bytes()).max(0) as u64
    }
    pub fn cc(&self) -> &dyn CongestionController {
        self.cc.as_ref()
    }
    /// Puts `cc` in place of the controller the configuration built: a Multipath TCP
    /// subflow's coupled controller (`crate::mptcp::coupled`), which shares state with the
    /// other subflows' and so cannot come from a `CcConfig`. Call once established (a
    /// connecting sender rebuilds its controller from its configuration on the SYN-ACK).
    pub fn set_controller(&mut self, mut cc: Box<dyn CongestionController>) {
        cc.on_wire_overhead(self.cc_wire_overhead_bytes());
        self.cc = cc;
    }
    /// The headers of a data segment (what `on_data_sent` builds): IP, TCP, timestamps.
    fn cc_wire_overhead_bytes(&self) -> u64 {
        let probe = Segment {
            options: Options {
                timestamps: self.timestamps.then_some(Timestamps { tsval: 0, tsecr: 0 }),
                ..Options::default()
            },
            ..Segment::default()
        };
        u64::from(probe.wire_bytes())
    }
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }
    pub fn recovery(&self) -> &Recovery {
        &self.recovery
    }
    pub fn recovery_state(&self) -> RecoveryState {
        self.recovery.state()
    }
    pub fn scoreboard(&self) -> &Scoreboard {
        &self.scoreboard
    }
    /// The controller's last reduction, for traces.
    pub fn last_reduction(&self) -> Option<Reduction> {
        self.last_reduction
    }
    pub fn stats(&self) -> &SenderStats {
        &self.stats
    }
    /// The earliest of the retransmission, persist, probe and reordering timers' deadlines.
    pub fn next_timeout(&self) -> Option<SimTime> {
        self.timers.next_timeout()
    }
    /// When a segment held back by pacing may leave: `Some` only while the last
    /// [`Sender::poll_transmit`] returned `None` because of the pacing rate. The world wakes
    /// the sender then (as for [`Sender::next_timeout`]); controllers that do not pace never
    /// set it.
    pub fn next_send_time(&self) -> Option<SimTime> {
        self.timers.get(Timer::Pacing)
    }
    /// The earliest of every timer: [`Sender::next_timeout`] and the pacing release.
    pub fn next_wakeup(&self) -> Option<SimTime> {
        self.timers.next_deadline()
    }
    /// A bulk transfer whose every byte is acknowledged.
    pub fn is_complete(&self) -> bool {
        self.app_limit_bytes != u64::MAX && self.snd_una == self.app_limit_bytes
    }

    /// The application hands over `bytes` more to send (no effect on an unbounded source).
    pub fn push_bytes(&mut self, bytes: u64) {
        if self.app_limit_bytes != u64::MAX {
            self.app_limit_bytes += bytes;
        }
    }

    /// The application will hand over nothing more: an unbounded source ends at `SND.MAX`
    /// (what it has sent so far), a bulk source keeps the bytes already handed over. What is
    /// outstanding is still recovered; [`Sender::is_complete`] turns true once it is
    /// acknowledged.
    pub fn end_of_data(&mut self) {
        // Nothing more will fill a short last segment: send it (Linux pushes with Nagle off
        // on close).
        self.nagle = false;
        if self.app_limit_bytes == u64::MAX {
            self.app_limit_bytes = self.snd_max;
        }
    }

    /// The writer above this sender has data but a send buffer of its own is full (a
    /// Multipath TCP connection's, which only the DATA_ACK empties): until it is not, the time
    /// this sender has nothing to send counts against the send buffer, not the application
    /// (Linux's `tcpi_sndbuf_limited`).
    pub fn set_writer_blocked(&mut self, now: SimTime, blocked: bool) {
        if self.writer_blocked == blocked {
            return;
        }
        self.limits.advance(now);
        self.writer_blocked = blocked;
        // Idle for want of data: the same idleness, under its new name.
        if matches!(
            self.limits.current(),
            Some(Limit::Application | Limit::SendBuffer)
        ) {
            self.limits.set(self.limit_now());
        }
    }

    /// Bytes the application has handed over; `None` while the source is unbounded.
    pub fn app_limit_bytes(&self) -> Option<u64> {
        (self.app_limit_bytes != u64::MAX).then_some(self.app_limit_bytes)
    }

    /// The next segment to send now, if any, and what kind of transmission it is. Call until
    /// it returns `None`.
    pub fn poll_transmit(&mut self, now: SimTime) -> Option<Transmission> {
        self.limits.advance(now);
        let out = if self.state != State::Established || self.ack_owed {
            self.poll_opening(now)
        } else {
            self.poll_data(now)
        };
        if out.is_none() {
            self.limits.set(self.limit_now());
        }
        out
    }

    /// The handshake's part of `poll_transmit`: the SYN when due in SYN-SENT; once
    /// established, the ACK the SYN-ACK is owed, carried by the first data segment if one may
    /// leave, else alone.
    fn poll_opening(&mut self, now: SimTime) -> Option<Transmission> {
        if self.state == State::SynSent {
            let open = self.opening.as_mut()?;
            if !open.syn_due {
                return None;
            }
            open.syn_due = false;
            open.syn_transmissions += 1;
            open.first_sent.get_or_insert(now);
            self.stats.syn_sent += 1;
            let retransmission = open.syn_transmissions > 1;
            if retransmission {
                self.stats.syn_retransmissions += 1;
            }
            let mut syn = handshake::syn(&open.config.options, now);
            self.ecn.on_syn(&mut syn);
            // RFC 6298 (5.1), the SYN being timed like data.
            self.start_rto_if_stopped(now);
            return Some(Transmission {
                segment: syn,
                kind: TransmissionKind::Syn { retransmission },
            });
        }
        self.ack_owed = false;
        if let Some(t) = self.poll_data(now) {
            return Some(t);
        }
        self.stats.handshake_acks_sent += 1;
        // SND.MAX as the sequence number: never below the receiver's RCV.NXT, so the receiver
        // does not take it for a window probe.
        Some(Transmission {
            segment: self.pure_ack(now, self.snd_max),
            kind: TransmissionKind::HandshakeAck,
        })
    }

    /// A segment without data or SYN at sequence number `seq`: the ACK that completes the
    /// handshake, or a window probe. Its window field says the most it can: the far end sends
    /// no data, so it has no use for this side's window.
    fn pure_ack(&self, now: SimTime, seq: u64) -> Segment {
        Segment {
            ecn: Default::default(),
            ace: 0,
            seq,
            ack: 0,
            flags: Flags::ACK,
            payload_bytes: 0,
            window_field: u16::MAX,
            options: Options {
                timestamps: self.timestamps.then(|| Timestamps {
                    tsval: timestamp_clock(now),
                    tsecr: self.ts_recent,
                }),
                ..Options::default()
            },
        }
    }

    /// `poll_transmit` of an established connection.
    fn poll_data(&mut self, now: SimTime) -> Option<Transmission> {
        self.update_persist(now);
        if self.probe_due {
            self.probe_due = false;
            return self.window_probe(now);
        }
        // Pacing: a pacing controller's segments leave no earlier than the pacer allows,
        // whatever they are (retransmissions included).
        let held = self.pacer.holds_until(self.cc.pacing_rate(), now);
        self.timers.set_or_stop(Timer::Pacing, held);
        if held.is_some() {
            return None;
        }
        // RFC 5681 3.2 (3), RFC 6582 3.2 step 3, RFC 6675 (4.3) and RFC 6298 (5.4): "Retransmit
        // the earliest segment that has not been acknowledged", whatever the window.
        if let Some(why) = self.retransmit_head.take() {
            if !self.scoreboard.is_empty() {
                let t = self.retransmit(0, now, why);
                self.recovery.on_retransmitted_head(t.segment.end_seq());
                return Some(t);
            }
        }
        if std::mem::take(&mut self.loss_probe_due) {
            if let Some(t) = self.loss_probe(now) {
                return Some(t);
            }
        }
        let new_len = self.new_data_len();
        if self.recovery.uses_pipe() {
            // RFC 6675 (C): "If cwnd - pipe >= 1 SMSS, the sender SHOULD transmit one or more
            // segments as follows: (C.1) The scoreboard MUST be queried via NextSeg ()". (SACK
            // recovery inflates nothing: the window is the controller's, or PRR's.)
            if self.effective_cwnd_bytes() < self.scoreboard.pipe_bytes() + self.smss_bytes {
                return None;
            }
            let next = self
                .recovery
                .next_seg(&self.scoreboard, self.snd_una, new_len.is_some());
            return match (next, new_len) {
                (NextSeg::Retransmit { index, rule }, _) => {
                    let t = self.retransmit(index, now, Retransmit::NextSeg(rule));
                    self.recovery
                        .on_next_seg_retransmitted(rule, t.segment.end_seq());
                    Some(t)
                }
                (NextSeg::NewData, Some(len)) => Some(self.send_new(len, now, false)),
                _ => None,
            };
        }
        // RFC 5681 3.1: the sender "MUST NOT send data with a sequence number higher than the
        // sum of the highest acknowledged sequence number and the minimum of cwnd and rwnd."
        let limit = self.snd_una + self.effective_cwnd_bytes().min(self.snd_wnd);
        if self.snd_nxt < self.snd_max {
            // Going back N after a timeout (or Tahoe's fast retransmit): resend from SND.NXT.
            let index = self.scoreboard.first_at_or_after(self.snd_nxt);
            let seg = *self.scoreboard.get(index)?;
            if seg.end > limit {
                return None;
            }
            return Some(self.retransmit(index, now, Retransmit::GoBackN));
        }
        let len = new_len?;
        if self.snd_max + len > limit + self.limited_transmit_bytes() {
            return None;
        }
        let limited_transmit = self.snd_max + len > limit;
        if limited_transmit {
            // Only Limited Transmit lets this segment out.
            self.limited_transmit_sent_bytes += len;
        }
        let t = self.send_new(len, now, limited_transmit);
        // RFC 8985 7.2: the probe timer restarts "after transmitting new data".
        if self.detection.uses_rack() {
            self.arm_probe_timer(now);
        }
        Some(t)
    }

    /// What holds the sender back once `poll_transmit` has nothing more to hand out; `None`
    /// while opening. A transfer whose every byte is acknowledged is held back by its
    /// application (a telnet source between messages); the caller ends the count where the
    /// application's activity ends.
    fn limit_now(&self) -> Option<Limit> {
        if self.state != State::Established {
            return None;
        }
        if self.timers.is_running(Timer::Pacing) {
            return Some(Limit::CongestionWindow);
        }
        if self.timers.is_running(Timer::Persist) {
            return Some(Limit::ReceiveWindow);
        }
        let remaining = self.app_limit_bytes - self.snd_max;
        if self.recovery.uses_pipe() {
            if self.cc.window() < self.scoreboard.pipe_bytes() + self.smss_bytes {
                return Some(Limit::CongestionWindow);
            }
        } else if self.snd_nxt < self.snd_max {
            // Going back N, held by the window.
            return Some(self.window_limit());
        }
        if remaining == 0 {
            return Some(if self.writer_blocked {
                Limit::SendBuffer
            } else {
                Limit::Application
            });
        }
        let len = remaining.min(self.smss_bytes);
        if self.nagle && len < self.smss_bytes && self.snd_max > self.snd_una {
            return Some(Limit::Application);
        }
        if self.snd_max + len > self.snd_una + self.snd_wnd.min(self.send_buffer_bytes) {
            return Some(if self.send_buffer_bytes < self.snd_wnd {
                Limit::SendBuffer
            } else {
                Limit::ReceiveWindow
            });
        }
        Some(self.window_limit())
    }

    /// The smaller of the congestion window (with recovery's inflation) and the peer's.
    fn window_limit(&self) -> Limit {
        if self.effective_cwnd_bytes() <= self.snd_wnd {
            Limit::CongestionWindow
        } else {
            Limit::ReceiveWindow
        }
    }

    /// Nanoseconds the sender has spent held back by each cause up to `now`, in
    /// [`Limit::ALL`]'s order (`limits.rs`).
    pub fn limited_nanos(&self, now: SimTime) -> [u64; 5] {
        self.limits.nanos_until(now)
    }

    /// Whether the peer's window alone holds back the next new segment while nothing is
    /// outstanding: then no ACK will come unless a window update does.
    fn window_blocked(&self) -> bool {
        let remaining = self.app_limit_bytes - self.snd_max;
        remaining > 0
            && self.snd_una == self.snd_max
            && self.snd_max + remaining.min(self.smss_bytes) > self.snd_una + self.snd_wnd
    }

    /// Starts the persist timer when the window blocks the sender, stops it when it does not.
    /// The interval is the RTO, doubled on each expiry without the window opening, at most
    /// the maximum RTO (RFC 9293 3.8.6.1, RFC 1122 4.2.2.17).
    fn update_persist(&mut self, now: SimTime) {
        if !self.window_blocked() {
            self.timers.stop(Timer::Persist);
            self.persist_backoff = 0;
            return;
        }
        if !self.timers.is_running(Timer::Persist) {
            let rto = self.rtt.rto().as_nanos();
            let max = self.rtt.config().max_rto.as_nanos();
            let interval = rto
                .checked_shl(self.persist_backoff.min(32))
                .unwrap_or(u64::MAX)
                .min(max.max(rto));
            self.timers
                .set(Timer::Persist, now + SimDuration::from_nanos(interval));
        }
    }

    /// A zero-window probe: an empty segment one byte below `SND.UNA`, which the receiver must
    /// answer with an ACK carrying its window (what Linux's `tcp_xmit_probe_skb` sends).
    fn window_probe(&mut self, now: SimTime) -> Option<Transmission> {
        if self.snd_una == 0 {
            // Nothing was ever acknowledged, so the window is the initial one, never zero.
            return None;
        }
        self.stats.window_probes += 1;
        Some(Transmission {
            segment: self.pure_ack(now, self.snd_una - 1),
            kind: TransmissionKind::WindowProbe,
        })
    }

    /// RFC 3042 section 2: while no recovery is under way, each of the first two duplicate
    /// ACKs lets one new segment go out, "provided that ... the amount of outstanding data
    /// would remain less than or equal to the congestion window plus 2 segments"; the
    /// congestion window itself is not changed, and the segments do not count in the
    /// FlightSize that sets ssthresh ([`Sender::on_ack`], RFC 5681 3.2 step 2).
    ///
    /// Tahoe included. Its go-back-N after a fast retransmit re-sends segments still in
    /// flight, and their duplicates come back as duplicate ACKs after the cumulative ACK has
    /// passed `recover`; when the Limited Transmit segments also counted in FlightSize, each
    /// such spurious fast retransmit kept ssthresh at three segments and the next go-back-N
    /// produced three duplicates again, a loop (`docs/validation-notes.md`).
    fn limited_transmit_bytes(&self) -> u64 {
        if !self.limited_transmit || self.recovery.state() != RecoveryState::Open {
            return 0;
        }
        let dupacks = u64::from(self.recovery.dupacks().min(2));
        dupacks * self.smss_bytes
    }

    /// The length of the next new segment, if the application has data and the peer's window
    /// takes it. RFC 1122 4.2.3.4 (sender SWS avoidance): a full segment, or the application's
    /// last bytes; never a segment cut short by the window.
    fn new_data_len(&self) -> Option<u64> {
        let remaining = self.app_limit_bytes - self.snd_max;
        if remaining == 0 {
            return None;
        }
        let len = remaining.min(self.smss_bytes);
        if self.nagle && len < self.smss_bytes && self.snd_max > self.snd_una {
            return None;
        }
        let room = self.snd_wnd.min(self.send_buffer_bytes);
        (self.snd_max + len <= self.snd_una + room).then_some(len)
    }

    fn send_new(&mut self, len: u64, now: SimTime, limited_transmit: bool) -> Transmission {
        let start = self.snd_max;
        self.scoreboard.on_sent_new(start, start + len, now);
        self.snd_max = start + len;
        self.snd_nxt = self.snd_max;
        Transmission {
            segment: self.on_data_sent(now, start, len, false),
            kind: TransmissionKind::NewData { limited_transmit },
        }
    }

    fn retransmit(&mut self, index: usize, now: SimTime, why: Retransmit) -> Transmission {
        let seg = *self
            .scoreboard
            .get(index)
            .expect("retransmitting a segment held");
        self.scoreboard.on_retransmitted(index, now);
        if self.snd_nxt == seg.start {
            self.snd_nxt = seg.end;
        }
        self.stats.retransmitted_segments += 1;
        self.stats.retransmitted_bytes += seg.len_bytes();
        let segment = self.on_data_sent(now, seg.start, seg.len_bytes(), true);
        if seg.start == self.snd_una
            && !self.timers.is_running(Timer::Reordering)
            && self.rtt.config().rule.restarts_on_head_retransmission()
        {
            self.restart_rto(now);
        }
        Transmission {
            segment,
            kind: TransmissionKind::Retransmission(why),
        }
    }

    fn on_data_sent(&mut self, now: SimTime, seq: u64, len: u64, retransmission: bool) -> Segment {
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += len;
        let sent = SentPacket {
            seq,
            bytes: len,
            retransmission,
        };
        let in_flight = self.in_flight_bytes();
        self.cc.on_packet_sent(now, &sent, in_flight);
        if let Some(prr) = &mut self.prr {
            prr.on_sent();
        }
        // RFC 6298 (5.1): "Every time a packet containing data is sent (including a
        // retransmission), if the timer is not running, start it running so that it will
        // expire after RTO seconds (for the current value of RTO)."
        self.start_rto_if_stopped(now);
        let mut seg = Segment {
            ecn: Default::default(),
            ace: 0,
            seq,
            ack: 0,
            flags: Flags::ACK,
            payload_bytes: u32::try_from(len).expect("segment longer than 4 GB"),
            // No data flows back; announce the largest window the field holds.
            window_field: u16::MAX,
            options: Options {
                timestamps: self.timestamps.then(|| Timestamps {
                    tsval: timestamp_clock(now),
                    tsecr: self.ts_recent,
                }),
                ..Options::default()
            },
        };
        self.ecn.on_data_segment(&mut seg, retransmission);
        self.pacer.on_sent(self.cc.pacing_rate(), now, &seg);
        seg
    }

    /// An ACK arrives (or, during the handshake, the SYN-ACK). In order: the window update,
    /// loss detection (what the ACK told), loss recovery (what to do), the congestion
    /// controller, the retransmission timer.
    pub fn on_ack(&mut self, now: SimTime, seg: &Segment) {
        self.limits.advance(now);
        if self.state != State::Established || seg.flags.contains(Flags::SYN) {
            self.on_syn_ack(now, seg);
            return;
        }
        if !seg.flags.contains(Flags::ACK) {
            return;
        }
        let ack = seg.ack;
        // RFC 9293 3.10.7.4: "If the ACK is a duplicate (SEG.ACK < SND.UNA), it can be
        // ignored. If the ACK acks something not yet sent (SEG.ACK > SND.NXT) then send an ACK,
        // drop the segment". (SND.MAX here: data sent before going back N counts as sent.)
        if ack < self.snd_una || ack > self.snd_max {
            return;
        }
        self.stats.acks_received += 1;
        if let (true, Some(ts)) = (self.timestamps, seg.options.timestamps) {
            self.ts_recent = ts.tsval;
        }
        let prior_in_flight = self.in_flight_bytes();
        let window_changed = self.update_window(seg);

        // Loss detection says what the ACK told: acknowledged, SACKed, lost, duplicate, RTT.
        let before = self.before_ack(window_changed);
        let outcome = self
            .detection
            .on_ack(now, seg, before, &mut self.scoreboard);
        self.take_outcome(&outcome);

        // Loss recovery decides what to do about it.
        let was_in_fast_recovery = self.recovery.state() == RecoveryState::FastRecovery;
        let decision = self.recovery.on_ack(
            &AckInfo {
                ack,
                snd_max: self.snd_max,
                newly_acked_bytes: outcome.newly_acked_bytes,
                is_dupack: outcome.duplicate,
                newly_lost_bytes: outcome.newly_lost_bytes,
                smss_bytes: self.smss_bytes,
            },
            &self.scoreboard,
        );
        self.act_on(now, &decision);
        self.respond_to_ecn(now, seg, &outcome);

        // The controller hears which segment the ACK answers, then about the ACK in one batch.
        if let Some(echo) = self.ack_echo(now, ack, outcome.newly_acked_bytes, outcome.duplicate) {
            self.cc.on_ack_echo(now, &echo);
        }
        let batch = AckBatch {
            acked: self.detection.acked(),
            lost: self.detection.lost(),
            newly_acked_bytes: outcome.newly_acked_bytes,
            newly_sacked_bytes: outcome.newly_sacked_bytes,
            prior_in_flight_bytes: prior_in_flight,
            in_flight_bytes: self.in_flight_bytes(),
            in_recovery: was_in_fast_recovery
                || self.recovery.state() == RecoveryState::FastRecovery,
            rtt_sample: outcome.rtt_sample,
            smss_bytes: self.smss_bytes,
        };
        self.cc.on_ack_batch(now, &batch, &self.rtt);
        self.reduce_window(PrrAck {
            delivered_bytes: outcome.newly_acked_bytes + outcome.newly_sacked_bytes,
            snd_una_advanced: outcome.newly_acked_bytes > 0,
            newly_lost: outcome.newly_lost_bytes > 0,
            pipe_bytes: self.scoreboard.pipe_bytes(),
        });

        if self.snd_una == self.snd_max {
            // RFC 6298 (5.2): "When all outstanding data has been acknowledged, turn off the
            // retransmission timer."
            self.timers.stop(Timer::Retransmission);
        } else if outcome.newly_acked_bytes > 0 && !decision.hold_timer {
            // RFC 6298 (5.3): "When an ACK is received that acknowledges new data, restart the
            // retransmission timer so that it will expire after RTO seconds (for the current
            // value of RTO)."
            self.restart_rto(now);
        }
        if self.detection.uses_rack() {
            self.after_ack_rack(now, ack, outcome.newly_acked_bytes, outcome.rack_wait);
        }
    }

    /// Detection's view of the sender just before an ACK (or RACK's timer).
    fn before_ack(&self, window_changed: bool) -> BeforeAck {
        BeforeAck {
            snd_una: self.snd_una,
            snd_max: self.snd_max,
            window_changed,
            in_recovery: self.recovery.state() != RecoveryState::Open,
            srtt: self.rtt.srtt(),
        }
    }

    /// RACK-TLP's timers after an ACK: the reordering timer RACK asked for, the end of a
    /// probe's episode (RFC 8985 7.4: the ACK covers `TLP.end_seq`), and the probe timer
    /// restarted when the ACK acknowledged new data (7.2).
    fn after_ack_rack(
        &mut self,
        now: SimTime,
        ack: u64,
        newly_acked_bytes: u64,
        rack_wait: Option<SimDuration>,
    ) {
        self.timers
            .set_or_stop(Timer::Reordering, rack_wait.map(|w| now + w));
        if self.tlp_end_seq.is_some_and(|end| ack >= end)
            || self.recovery.state() != RecoveryState::Open
        {
            self.tlp_end_seq = None;
        }
        // (Arming in recovery stops the timer.)
        if newly_acked_bytes > 0 || self.recovery.state() != RecoveryState::Open {
            self.arm_probe_timer(now);
        }
    }

    /// RFC 8985 7.2: starts (or restarts) the probe timer when a probe may be sent: data
    /// outstanding, an SRTT, no recovery under way, no probe outstanding, no segment waiting
    /// for its retransmission. The probe never waits past the retransmission timer: it takes
    /// its place (Linux's `tcp_schedule_loss_probe`), and the RTO is rearmed when it leaves.
    fn arm_probe_timer(&mut self, now: SimTime) {
        self.timers.stop(Timer::Probe);
        let Some(srtt) = self.rtt.srtt() else {
            return;
        };
        let waiting_retransmission = self
            .scoreboard
            .iter()
            .any(|s| s.lost && !s.sacked && !s.retx_in_flight);
        if self.snd_max == self.snd_una
            || self.recovery.state() != RecoveryState::Open
            || self.tlp_end_seq.is_some()
            || waiting_retransmission
        {
            return;
        }
        let one_segment = self.flight_size_bytes() <= self.smss_bytes;
        let at = now + rack::probe_timeout(srtt, one_segment);
        let at = match self.timers.get(Timer::Retransmission) {
            Some(rto) => at.min(rto),
            None => at,
        };
        self.timers.set(Timer::Probe, at);
    }

    /// RFC 8985 7.3 `TLP_send_probe()`: one segment of new data if the receiver's window
    /// allows (the congestion window is not asked), else the highest unSACKed segment again.
    fn loss_probe(&mut self, now: SimTime) -> Option<Transmission> {
        let t = if let Some(len) = self.new_data_len() {
            let mut t = self.send_new(len, now, false);
            t.kind = TransmissionKind::LossProbe {
                retransmission: false,
            };
            t
        } else {
            let index = (0..self.scoreboard.len())
                .rev()
                .find(|&i| self.scoreboard.get(i).is_some_and(|s| !s.sacked))?;
            let mut t = self.retransmit(index, now, Retransmit::Timeout);
            t.kind = TransmissionKind::LossProbe {
                retransmission: true,
            };
            t
        };
        self.stats.loss_probes += 1;
        self.tlp_end_seq = Some(self.snd_max);
        // 7.3: "TCP_RTO_restart()".
        self.restart_rto(now);
        Some(t)
    }

    /// RFC 9293 3.10.7.4 window update: "If SND.UNA =< SEG.ACK =< SND.NXT, the send window
    /// should be updated. If (SND.WL1 < SEG.SEQ or (SND.WL1 = SEG.SEQ and SND.WL2 =<
    /// SEG.ACK)), set SND.WND <- SEG.WND". The peer sends no data, so SEG.SEQ never changes.
    /// Returns whether the ACK announced another window than the one held.
    fn update_window(&mut self, seg: &Segment) -> bool {
        let window = seg.window_bytes(self.window_shift);
        let changed = window != self.snd_wnd;
        if seg.ack >= self.snd_wl2 {
            self.snd_wnd = window;
            self.snd_wl2 = seg.ack;
        }
        changed
    }

    /// The sequence space, statistics, RTT estimator and limit clock take in what detection
    /// found.
    fn take_outcome(&mut self, outcome: &AckOutcome) {
        self.snd_una = outcome.ack;
        self.snd_nxt = self.snd_nxt.max(outcome.ack);
        if outcome.newly_acked_bytes > 0 {
            self.stats.bytes_acked += outcome.newly_acked_bytes;
            self.timeouts_without_progress = 0;
        }
        if let Some(r) = outcome.rtt_sample {
            self.rtt.on_sample_at(r, outcome.ack, self.snd_max);
            self.limits.on_rtt_sample(r);
        }
        self.limits.on_ack(outcome.ack, self.snd_max);
        if outcome.duplicate {
            self.stats.dupacks_received += 1;
        }
    }

    /// Carries out recovery's decision on an ACK: the retransmission of the head, going back
    /// N, and on entering recovery the controller's congestion event.
    fn act_on(&mut self, now: SimTime, decision: &RecoveryDecision) {
        if decision.retransmit_head {
            self.retransmit_head = Some(Retransmit::Fast);
            self.detection.presume_head_lost(&mut self.scoreboard);
        }
        if decision.go_back_n {
            self.snd_nxt = self.snd_una;
        }
        if let Some(entry) = decision.enter {
            self.stats.fast_retransmits += 1;
            if self.recovery.state() == RecoveryState::FastRecovery {
                self.stats.fast_recoveries += 1;
            }
            let lost_bytes = self.detection.lost().iter().map(|l| l.bytes).sum();
            // RFC 5681 3.2 step 2: ssthresh from equation (4) on the third duplicate ACK, and
            // "When [RFC3042] is in use, additional data sent in limited transmit MUST NOT be
            // included in this calculation."
            let flight_size_bytes = self
                .flight_size_bytes()
                .saturating_sub(self.limited_transmit_sent_bytes);
            self.recovery_flight_size_bytes = flight_size_bytes;
            let event = CongestionEvent {
                detection: entry.detection,
                flight_size_bytes,
                lost_bytes,
                smss_bytes: self.smss_bytes,
                restart_slow_start: entry.restart_slow_start,
                repeated_timeout: false,
                during_fast_recovery: false,
            };
            let prior_cwnd_bytes = self.cc.window();
            let reduction = self.cc.on_congestion_event(now, &event);
            self.last_reduction = Some(reduction);
            self.prr = (self.window_reduction == WindowReduction::Prr
                && self.recovery.uses_pipe()
                && self.recovery.state() == RecoveryState::FastRecovery
                && !self.cc.sets_recovery_window())
            .then(|| Prr::start(prior_cwnd_bytes, reduction.ssthresh_bytes, self.smss_bytes));
        }
        if self.recovery.dupacks() == 0 || decision.enter.is_some() {
            // The duplicate ACKs stopped (or were acted on): a later run starts afresh.
            self.limited_transmit_sent_bytes = 0;
        }
    }

    /// The ACK's congestion echo ([`crate::tcp::ecn`]): the controller reduces without
    /// entering recovery, at most once per window of data.
    fn respond_to_ecn(&mut self, now: SimTime, seg: &Segment, outcome: &AckOutcome) {
        let Some(response) = self.ecn.on_ack(
            seg,
            self.snd_una,
            self.snd_max,
            outcome.newly_acked_bytes + outcome.newly_sacked_bytes,
            self.smss_bytes,
            self.recovery.state() != RecoveryState::Open,
        ) else {
            return;
        };
        let classic = CongestionEvent {
            detection: Detection::Ecn,
            flight_size_bytes: self.flight_size_bytes(),
            lost_bytes: 0,
            smss_bytes: self.smss_bytes,
            restart_slow_start: false,
            repeated_timeout: false,
            during_fast_recovery: false,
        };
        let reduction = match response {
            EcnResponse::Classic => None,
            EcnResponse::Proportional { fraction } => {
                self.cc.on_proportional_reduction(now, fraction)
            }
        }
        .unwrap_or_else(|| self.cc.on_congestion_event(now, &classic));
        self.last_reduction = Some(reduction);
    }

    /// The connection's ECN state.
    pub fn ecn(&self) -> &SenderEcn {
        &self.ecn
    }

    /// PRR takes in what an ACK delivered (Linux's `tcp_cwnd_reduction`, after the recovery
    /// decision); it ends with the recovery.
    fn reduce_window(&mut self, ack: PrrAck) {
        if self.recovery.state() != RecoveryState::FastRecovery {
            self.prr = None;
        }
        if let Some(prr) = &mut self.prr {
            prr.on_ack(&ack);
        }
    }

    /// A segment with SYN, or anything in SYN-SENT. The SYN-ACK of our SYN establishes the
    /// connection; a copy arriving later (the receiver did not hear our ACK and sent its
    /// SYN-ACK again) is answered with an ACK. Anything else is ignored.
    fn on_syn_ack(&mut self, now: SimTime, seg: &Segment) {
        if !handshake::is_syn_ack(seg) {
            return;
        }
        if self.state == State::Established {
            self.ack_owed = true;
            return;
        }
        let Some(open) = self.opening.take() else {
            return;
        };
        let negotiated = handshake::negotiate_at_connector(&open.config.options, seg);
        let retransmitted = open.syn_transmissions > 1;
        let mut config = open.config;
        if retransmitted {
            // RFC 5681 3.1: "if the SYN or SYN/ACK is lost, the initial window used by a
            // sender after a correctly transmitted SYN MUST be one segment".
            config.initial_window_segments = 1;
        }
        let mut rtt = self.rtt.clone();
        match open.first_sent {
            // RFC 6298 (2.2): the handshake's round trip is the first measurement; Karn's
            // rule: none when the SYN was sent more than once (which copy was answered is
            // unknown).
            Some(sent) if !retransmitted => rtt.on_sample(now - sent),
            // RFC 6298 (5.7): data starts with RTO = 3 s after a retransmitted SYN (as
            // Linux's tcp_init_metrics does whenever the handshake gave no sample).
            _ => rtt.reset_rto(RTO_AFTER_SYN_LOSS),
        }
        let mut established = Sender::new(&config, &negotiated);
        established.rtt = rtt;
        established.stats = self.stats;
        // What the application did meanwhile: bytes written, its stream closed.
        established.app_limit_bytes = self.app_limit_bytes;
        established.nagle = self.nagle;
        if let (true, Some(ts)) = (negotiated.timestamps, seg.options.timestamps) {
            established.ts_recent = ts.tsval;
        }
        established.established_at = Some(now);
        established.ack_owed = true;
        established.ecn = SenderEcn::new(config.ecn, false);
        established.ecn.on_syn_ack(seg);
        *self = established;
    }

    /// The segment this ACK answers (see [`AckEcho`]), after the scoreboard took the ACK in.
    fn ack_echo(
        &mut self,
        now: SimTime,
        ack: u64,
        newly_acked: u64,
        is_dupack: bool,
    ) -> Option<AckEcho> {
        if newly_acked > 0 {
            self.echo_end = self.echo_end.max(ack);
            // The segment that filled the hole (or simply arrived): sent last among those
            // covered that no SACK had reported (those already made their own ACKs).
            let newest = |a: &&Acked| a.sent_time;
            let acked = self.detection.acked();
            let seg = acked
                .iter()
                .filter(|a| !a.was_sacked)
                .max_by_key(newest)
                .or_else(|| acked.iter().max_by_key(newest))?;
            return Some(AckEcho {
                rtt: now - seg.sent_time,
                duplicate: false,
                ambiguous: seg.retransmitted,
            });
        }
        if !is_dupack {
            return None;
        }
        // The first unacknowledged segment is missing (its arrival would have moved the ACK):
        // the duplicate answers the next segment above the last one matched.
        let head_end = self.scoreboard.get(0)?.end;
        let index = self
            .scoreboard
            .first_at_or_after(self.echo_end.max(head_end));
        let seg = *self.scoreboard.get(index)?;
        self.echo_end = seg.end;
        Some(AckEcho {
            rtt: now - seg.last_sent,
            duplicate: true,
            // After a timeout the sender goes back N: copies of segments the receiver already
            // holds come back as duplicates too, and the match above no longer holds.
            ambiguous: seg.transmissions > 1
                || self.recovery.state() == RecoveryState::TimeoutRecovery,
        })
    }

    /// The retransmission timer: acts if its deadline has come.
    pub fn on_timeout(&mut self, now: SimTime) {
        self.limits.advance(now);
        if self.state == State::SynSent {
            self.on_syn_timeout(now);
            return;
        }
        // In `Timer`'s order; each looked up after the one before has acted (RACK's timer may
        // stop the probe timer).
        if self.timers.is_expired(Timer::Persist, now) {
            self.timers.stop(Timer::Persist);
            self.persist_backoff = self.persist_backoff.saturating_add(1);
            self.probe_due = true;
        }
        if self.timers.is_expired(Timer::Reordering, now) {
            self.on_rack_timer(now);
        }
        if self.timers.is_expired(Timer::Probe, now) {
            // RFC 8985 7.3: the probe leaves with the next `poll_transmit`.
            self.timers.stop(Timer::Probe);
            self.loss_probe_due = true;
            return;
        }
        if !self.timers.is_expired(Timer::Retransmission, now) {
            return;
        }
        self.timers.stop(Timer::Probe);
        self.timers.stop(Timer::Reordering);
        self.tlp_end_seq = None;
        self.stats.timeouts += 1;
        self.limited_transmit_sent_bytes = 0;
        self.prr = None;
        let repeated_timeout = self.timeouts_without_progress > 0;
        self.timeouts_without_progress += 1;
        // A timeout that ends a fast recovery still in progress (its `recover` not yet
        // acknowledged) belongs to the loss episode the recovery already answered. FlightSize
        // has then grown by data the recovery sent past the holes: SACK (and Reno/NewReno
        // inflation) keeps new data flowing while a lost retransmission holds SND.UNA (on a
        // GEO path with a 100-packet queue, from 294 to about 515 segments in 3.6 s), and is
        // no measure of what the path held. As RFC 5681 3.2 step 2 leaves Limited Transmit
        // data out, that data is left out here: FlightSize counts no more than when the
        // recovery began. RFC 5681 3.1 bounds ssthresh from above ("no more than" equation
        // (4)); Linux's tcp_enter_loss likewise recomputes ssthresh only if "it has not yet
        // been made inside this window" (from Open/Disorder, or once the episode's high_seq
        // is acknowledged), else keeps the recovery's.
        let during_fast_recovery = self.recovery.state() == RecoveryState::FastRecovery;
        let flight_size_bytes = if during_fast_recovery {
            self.flight_size_bytes()
                .min(self.recovery_flight_size_bytes)
        } else {
            self.flight_size_bytes()
        };
        // Every unSACKed segment is presumed lost.
        let flight_now_bytes = self.flight_size_bytes();
        let lost_bytes = self
            .detection
            .on_timeout(&mut self.scoreboard, flight_now_bytes);
        // RFC 5681 3.1: ssthresh = max (FlightSize / 2, 2*SMSS) (held on a repeated timeout)
        // and cwnd = LW, decided by the controller.
        let event = CongestionEvent {
            detection: Detection::RetransmissionTimeout,
            flight_size_bytes,
            lost_bytes,
            smss_bytes: self.smss_bytes,
            restart_slow_start: true,
            repeated_timeout,
            during_fast_recovery,
        };
        self.last_reduction = Some(self.cc.on_congestion_event(now, &event));
        // Recovery restarts from SND.UNA: (5.4) "Retransmit the earliest segment that has not
        // been acknowledged by the TCP receiver", and without SACK go back N.
        let decision = self.recovery.on_timeout(self.snd_una, self.snd_max);
        if decision.go_back_n {
            self.snd_nxt = self.snd_una;
        }
        if decision.retransmit_head {
            self.retransmit_head = Some(Retransmit::Timeout);
        }
        // (5.5) "The host MUST set RTO <- RTO * 2 ("back off the timer")."
        self.rtt.back_off();
        // (5.6) "Start the retransmission timer, such that it expires after RTO seconds (for
        // the value of RTO after the doubling operation outlined in 5.5)."
        self.restart_rto(now);
        // (5.7), the SYN case: `on_syn_ack`.
    }

    /// RACK's reordering timer (RFC 8985 6.3): losses found with no ACK start recovery as
    /// an ACK's would.
    fn on_rack_timer(&mut self, now: SimTime) {
        self.timers.stop(Timer::Reordering);
        let before = self.before_ack(false);
        let (lost_bytes, wait) = self
            .detection
            .on_rack_timer(now, before, &mut self.scoreboard);
        self.timers
            .set_or_stop(Timer::Reordering, wait.map(|w| now + w));
        if lost_bytes == 0 {
            return;
        }
        self.timers.stop(Timer::Probe);
        let decision = self.recovery.on_ack(
            &AckInfo {
                ack: self.snd_una,
                snd_max: self.snd_max,
                newly_acked_bytes: 0,
                is_dupack: false,
                newly_lost_bytes: lost_bytes,
                smss_bytes: self.smss_bytes,
            },
            &self.scoreboard,
        );
        self.act_on(now, &decision);
        if decision.enter.is_some() {
            // Linux's `tcp_rack_reo_timeout` starts the reduction as if one segment had been
            // delivered.
            self.reduce_window(PrrAck {
                delivered_bytes: self.smss_bytes,
                snd_una_advanced: false,
                newly_lost: false,
                pipe_bytes: self.scoreboard.pipe_bytes(),
            });
        }
    }

    /// The SYN's timer in SYN-SENT: (5.4)-(5.6) applied to the SYN; not a data timeout.
    fn on_syn_timeout(&mut self, now: SimTime) {
        if !self.timers.is_expired(Timer::Retransmission, now) {
            return;
        }
        if let Some(open) = self.opening.as_mut() {
            open.syn_due = true;
            self.rtt.back_off();
            self.restart_rto(now);
        }
    }

    /// (Re)starts the retransmission timer to expire after RTO (RFC 6298 (5.3), (5.6)).
    #[inline]
    fn restart_rto(&mut self, now: SimTime) {
        self.timers.set(Timer::Retransmission, now + self.rtt.rto());
    }

    /// RFC 6298 (5.1): starts the retransmission timer if it is not running.
    #[inline]
    fn start_rto_if_stopped(&mut self, now: SimTime) {
        if !self.timers.is_running(Timer::Retransmission) {
            self.restart_rto(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::limits::Limit;
    use crate::tcp::rtt::RtoRule;
    use crate::tcp::segment::SackBlock;

    const MSS: u32 = 1000;

    fn options(sack: bool, timestamps: bool) -> TcpOptions {
        TcpOptions {
            mss_bytes: MSS,
            sack,
            timestamps,
            window_scaling: true,
        }
    }

    fn sender_with(config: SenderConfig, peer_buffer_bytes: u64) -> Sender {
        let n = Negotiated::without_handshake(&config.options, &config.options, peer_buffer_bytes);
        Sender::new(&config, &n)
    }

    fn sender(recovery: LossRecovery, timestamps: bool) -> Sender {
        sender_with(
            SenderConfig {
                options: options(true, timestamps),
                recovery,
                ..SenderConfig::default()
            },
            1 << 20,
        )
    }

    fn at(ms: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_millis(ms)
    }

    fn drain(s: &mut Sender, now: SimTime) -> Vec<Segment> {
        std::iter::from_fn(|| s.poll_transmit(now).map(|t| t.segment)).collect()
    }

    fn ack_of(ack: u64, s: &Sender) -> Segment {
        Segment {
            ack,
            flags: Flags::ACK,
            window_field: (s.snd_wnd_bytes() >> s.window_shift) as u16,
            ..Segment::default()
        }
    }

    /// A duplicate ACK of `ack` carrying one SACK block [left, right).
    fn sack_of(ack: u64, left: u64, right: u64, s: &Sender) -> Segment {
        let mut a = ack_of(ack, s);
        a.options.sack.push(SackBlock { left, right });
        a
    }

    fn seg(n: u64) -> u64 {
        n * u64::from(MSS)
    }

    #[test]
    fn initial_window_is_ten_segments_by_default() {
        let mut s = sender(LossRecovery::NewReno, false);
        let sent = drain(&mut s, at(0));
        assert_eq!(sent.len(), 10);
        assert!(sent.iter().all(|x| x.payload_bytes == MSS));
        assert_eq!(sent[3].seq, seg(3));
        assert_eq!(s.snd_max(), seg(10));
        assert_eq!(s.next_timeout(), Some(at(1000)), "initial RTO 1 s");
    }

    #[test]
    fn initial_window_can_be_one_to_four_segments() {
        for iw in 1..=4 {
            let mut s = sender_with(
                SenderConfig {
                    options: options(false, false),
                    initial_window_segments: iw,
                    ..SenderConfig::default()
                },
                1 << 20,
            );
            assert_eq!(drain(&mut s, at(0)).len(), iw as usize);
        }
    }

    #[test]
    fn peer_window_limits_sending() {
        let mut s = sender_with(
            SenderConfig {
                options: options(false, false),
                ..SenderConfig::default()
            },
            3500,
        );
        assert_eq!(
            drain(&mut s, at(0)).len(),
            3,
            "no segment cut short by the window"
        );
    }

    #[test]
    fn bulk_source_sends_exactly_its_bytes() {
        let mut s = sender_with(
            SenderConfig {
                options: options(false, false),
                app: AppSource::Bulk { total_bytes: 2500 },
                ..SenderConfig::default()
            },
            1 << 20,
        );
        let sent = drain(&mut s, at(0));
        let lens: Vec<u32> = sent.iter().map(|x| x.payload_bytes).collect();
        assert_eq!(lens, vec![1000, 1000, 500]);
        s.on_ack(at(100), &ack_of(2500, &s));
        assert!(s.is_complete());
        assert_eq!(s.next_timeout(), None, "RFC 6298 (5.2)");
        s.push_bytes(10);
        assert!(!s.is_complete());
        assert_eq!(drain(&mut s, at(101)).len(), 1);
    }

    #[test]
    fn end_of_data_turns_an_unbounded_source_into_what_was_sent() {
        let mut s = sender(LossRecovery::NewReno, false);
        assert_eq!(s.app_limit_bytes(), None);
        drain(&mut s, at(0));
        s.end_of_data();
        assert_eq!(s.app_limit_bytes(), Some(seg(10)));
        s.on_ack(at(100), &ack_of(seg(10), &s));
        assert!(
            drain(&mut s, at(100)).is_empty(),
            "nothing new after the end of data"
        );
        assert!(s.is_complete());
    }

    #[test]
    fn ack_of_new_data_takes_an_rtt_sample_and_restarts_the_timer() {
        let mut s = sender(LossRecovery::NewReno, false);
        drain(&mut s, at(0));
        s.on_ack(at(300), &ack_of(seg(2), &s));
        assert_eq!(s.rtt().srtt(), Some(SimDuration::from_millis(300)));
        assert_eq!(s.next_timeout(), Some(at(300 + 1000)));
        assert_eq!(s.cwnd_bytes(), seg(11), "slow start, one SMSS per ACK");
    }

    #[test]
    fn timeout_retransmits_the_head_with_one_segment_and_doubles_rto() {
        let mut s = sender(LossRecovery::NewReno, false);
        drain(&mut s, at(0));
        s.on_timeout(at(999));
        assert_eq!(s.stats().timeouts, 0, "not yet");
        s.on_timeout(at(1000));
        assert_eq!(s.stats().timeouts, 1);
        assert_eq!(s.cwnd_bytes(), seg(1));
        assert_eq!(s.cc().metrics().ssthresh_bytes, seg(5));
        let sent = drain(&mut s, at(1000));
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].seq, 0);
        assert_eq!(s.next_timeout(), Some(at(3000)));
        s.on_timeout(at(3000));
        assert_eq!(s.next_timeout(), Some(at(7000)));
        assert_eq!(
            s.cc().metrics().ssthresh_bytes,
            seg(5),
            "repeated timeout holds ssthresh"
        );
    }

    #[test]
    fn karn_no_rtt_sample_from_a_retransmitted_segment() {
        let mut s = sender(LossRecovery::NewReno, false);
        drain(&mut s, at(0));
        s.on_timeout(at(1000));
        drain(&mut s, at(1000));
        s.on_ack(at(1100), &ack_of(seg(10), &s));
        assert_eq!(s.rtt().srtt(), None);
        assert_eq!(
            s.rtt().rto(),
            SimDuration::from_secs(2),
            "backed-off RTO kept"
        );
    }

    #[test]
    fn timestamps_give_an_rtt_sample_from_a_retransmission() {
        let mut s = sender(LossRecovery::NewReno, true);
        drain(&mut s, at(0));
        s.on_timeout(at(1000));
        let rtx = drain(&mut s, at(1000));
        // With timestamps a segment carries 1000 - 12 bytes (RFC 6691).
        assert_eq!(s.smss_bytes(), 988);
        let mut ack = ack_of(s.snd_max(), &s);
        ack.options.timestamps = Some(Timestamps {
            tsval: 7,
            tsecr: rtx[0].options.timestamps.unwrap().tsval,
        });
        s.on_ack(at(1250), &ack);
        assert_eq!(s.rtt().srtt(), Some(SimDuration::from_millis(250)));
    }

    #[test]
    fn three_dupacks_trigger_fast_retransmit_and_window_inflation() {
        let mut s = sender(LossRecovery::NewReno, false);
        drain(&mut s, at(0));
        s.on_ack(at(100), &ack_of(seg(1), &s));
        drain(&mut s, at(100));
        for i in 0..3 {
            s.on_ack(at(101 + i), &ack_of(seg(1), &s));
        }
        assert_eq!(s.recovery_state(), RecoveryState::FastRecovery);
        assert_eq!(s.stats().fast_retransmits, 1);
        let flight = seg(12 - 1);
        assert_eq!(s.cwnd_bytes(), flight / 2);
        assert_eq!(s.effective_cwnd_bytes(), flight / 2 + seg(3));
        let sent = drain(&mut s, at(104));
        assert_eq!(sent[0].seq, seg(1), "the head first");
        assert_eq!(sent.len(), 1, "inflated window still below FlightSize");
    }

    #[test]
    fn limited_transmit_sends_one_new_segment_per_early_duplicate_ack() {
        for (enabled, expected_new) in [(true, [1usize, 1]), (false, [0, 0])] {
            let mut s = sender_with(
                SenderConfig {
                    options: options(true, false),
                    recovery: LossRecovery::NewReno,
                    limited_transmit: enabled,
                    ..SenderConfig::default()
                },
                1 << 20,
            );
            drain(&mut s, at(0));
            s.on_ack(at(100), &ack_of(seg(1), &s));
            drain(&mut s, at(100));
            let cwnd = s.cwnd_bytes();
            for (i, expected) in expected_new.iter().enumerate() {
                s.on_ack(at(101 + i as u64), &ack_of(seg(1), &s));
                let sent = drain(&mut s, at(101 + i as u64));
                assert_eq!(
                    sent.len(),
                    *expected,
                    "limited transmit {enabled}, dupack {i}"
                );
                assert!(sent.iter().all(|g| g.seq >= seg(12)), "new data only");
                assert_eq!(s.cwnd_bytes(), cwnd, "RFC 3042: cwnd unchanged");
            }
            s.on_ack(at(103), &ack_of(seg(1), &s));
            assert_eq!(s.recovery_state(), RecoveryState::FastRecovery);
        }
    }

    #[test]
    fn limited_transmit_data_is_left_out_of_the_ssthresh_flight_size() {
        // RFC 5681 3.2 step 2: the two segments Limited Transmit sent on the first two
        // duplicate ACKs do not raise ssthresh; it is the same as without them.
        for recovery in [LossRecovery::NewReno, LossRecovery::Sack] {
            let mut ssthresh = Vec::new();
            for enabled in [true, false] {
                let mut s = sender_with(
                    SenderConfig {
                        options: options(recovery == LossRecovery::Sack, false),
                        recovery,
                        limited_transmit: enabled,
                        ..SenderConfig::default()
                    },
                    1 << 20,
                );
                drain(&mut s, at(0));
                // Segment 0 arrives (cwnd 11, segments 1..12 out); segment 1 is lost.
                s.on_ack(at(100), &ack_of(seg(1), &s));
                drain(&mut s, at(100));
                assert_eq!(s.snd_max(), seg(12));
                for k in 0..3u64 {
                    let a = if recovery == LossRecovery::Sack {
                        sack_of(seg(1), seg(2), seg(3 + k), &s)
                    } else {
                        ack_of(seg(1), &s)
                    };
                    s.on_ack(at(101 + k), &a);
                    if k < 2 {
                        let sent = drain(&mut s, at(101 + k));
                        assert_eq!(sent.len(), usize::from(enabled), "dupack {k}");
                    }
                }
                assert_eq!(s.recovery_state(), RecoveryState::FastRecovery);
                let extra = if enabled { 2 } else { 0 };
                assert_eq!(s.flight_size_bytes(), seg(11 + extra));
                ssthresh.push(s.cc().metrics().ssthresh_bytes);
            }
            assert_eq!(ssthresh, vec![seg(11) / 2; 2], "{recovery}");
        }
    }

    #[test]
    fn sack_recovery_sends_by_pipe() {
        let mut s = sender(LossRecovery::Sack, false);
        drain(&mut s, at(0));
        // Segment 0 lost; 1..4 SACKed one by one.
        for i in 1..4 {
            s.on_ack(at(100 + i), &sack_of(0, seg(1), seg(i + 1), &s));
        }
        assert_eq!(s.recovery_state(), RecoveryState::FastRecovery);
        // cwnd = 5 segments; pipe = 10 - 3 SACKed - 1 lost = 6 segments.
        assert_eq!(s.cwnd_bytes(), seg(5));
        assert_eq!(s.scoreboard().pipe_bytes(), seg(6));
        let sent = drain(&mut s, at(104));
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].seq, 0);
    }

    /// Segments sent after each of the SACKs of segments 1..20 of a window of 20 whose first
    /// segment was lost, under window reduction `reduction`.
    fn sent_per_sack(reduction: WindowReduction) -> Vec<usize> {
        let mut s = sender_with(
            SenderConfig {
                options: options(true, false),
                initial_window_segments: 20,
                window_reduction: reduction,
                ..SenderConfig::default()
            },
            1 << 20,
        );
        assert_eq!(drain(&mut s, at(0)).len(), 20);
        (1..20)
            .map(|i| {
                s.on_ack(at(100 + i), &sack_of(0, seg(1), seg(i + 1), &s));
                drain(&mut s, at(100 + i)).len()
            })
            .collect()
    }

    #[test]
    fn prr_spreads_the_reduction_where_immediate_waits_then_sends() {
        // Limited Transmit sends a new segment on each of the first two SACKs; the third starts
        // recovery with ssthresh = 10 segments and 18 in pipe.
        let immediate = sent_per_sack(WindowReduction::Immediate);
        let prr = sent_per_sack(WindowReduction::Prr);
        // Immediate: the fast retransmit, then silence until pipe falls below 10, then one
        // segment per SACK.
        assert_eq!(
            immediate,
            [1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1]
        );
        // PRR (RFC 6937): ssthresh / RecoverFS = 1/2 of what each SACK delivered while pipe
        // is above ssthresh, so a segment on every other SACK from the start, as many in all
        // (eight from the third SACK on), and none once pipe has come down to ssthresh.
        assert_eq!(
            prr,
            [1, 1, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0]
        );
        assert_eq!(
            prr[2..].iter().sum::<usize>(),
            immediate[2..].iter().sum::<usize>()
        );
    }

    #[test]
    fn prr_leaves_a_controller_that_sets_its_own_recovery_window_alone() {
        for reduction in [WindowReduction::Immediate, WindowReduction::Prr] {
            let mut s = sender_with(
                SenderConfig {
                    options: options(true, false),
                    congestion_control: "bbr".parse().unwrap(),
                    window_reduction: reduction,
                    ..SenderConfig::default()
                },
                1 << 20,
            );
            // BBR paces its first window out.
            let mut sent = 0;
            for ms in 0..100 {
                sent += drain(&mut s, at(ms)).len();
            }
            assert!(sent >= 5, "{sent}");
            for i in 1..4 {
                s.on_ack(at(100 + i), &sack_of(0, seg(1), seg(i + 1), &s));
            }
            assert_eq!(s.recovery_state(), RecoveryState::FastRecovery);
            assert!(s.prr.is_none());
        }
    }

    #[test]
    fn linux_rule_restarts_the_timer_when_the_head_is_resent_and_rfc6298_does_not() {
        for (rule, deadline_ms) in [(RtoRule::Rfc6298, 1000), (RtoRule::Linux, 1104)] {
            let mut s = sender_with(
                SenderConfig {
                    options: options(true, false),
                    recovery: LossRecovery::Sack,
                    rtt: RttConfig {
                        rule,
                        ..RttConfig::default()
                    },
                    ..SenderConfig::default()
                },
                1 << 20,
            );
            drain(&mut s, at(0));
            // Segment 0 lost, 1..4 SACKed: no ACK of new data, so the timer started with
            // the first segment (initial RTO 1 s) still runs when the head is resent at 104.
            for i in 1..4 {
                s.on_ack(at(100 + i), &sack_of(0, seg(1), seg(i + 1), &s));
            }
            let sent = drain(&mut s, at(104));
            assert_eq!(sent[0].seq, 0, "{}", rule.name());
            assert_eq!(s.next_timeout(), Some(at(deadline_ms)), "{}", rule.name());
            // A resend that is not of the head leaves the timer alone under either rule.
            s.on_ack(at(105), &sack_of(0, seg(1), seg(5), &s));
            drain(&mut s, at(105));
            assert_eq!(s.next_timeout(), Some(at(deadline_ms)), "{}", rule.name());
        }
    }

    #[test]
    fn a_timeout_during_fast_recovery_keeps_the_recovery_ssthresh() {
        let mut s = sender(LossRecovery::Sack, false);
        drain(&mut s, at(0));
        // Segment 0 lost; 1..10 SACKed one by one: recovery starts at the third (ssthresh
        // = 10/2 segments), and as `pipe` falls new data goes out past the hole.
        for i in 1..10 {
            s.on_ack(at(100 + i), &sack_of(0, seg(1), seg(i + 1), &s));
            drain(&mut s, at(100 + i));
        }
        assert_eq!(s.recovery_state(), RecoveryState::FastRecovery);
        assert_eq!(s.cc().metrics().ssthresh_bytes, seg(5));
        assert!(
            s.flight_size_bytes() > seg(12),
            "FlightSize grew to {} during recovery",
            s.flight_size_bytes()
        );
        // The retransmission of segment 0 is lost too: the timer fires in recovery. Its
        // FlightSize / 2 would raise ssthresh above the recovery's; it is kept instead.
        let deadline = s.next_timeout().unwrap();
        s.on_timeout(deadline);
        assert_eq!(s.stats().timeouts, 1);
        assert_eq!(s.cwnd_bytes(), seg(1));
        assert_eq!(s.cc().metrics().ssthresh_bytes, seg(5));
        assert_eq!(s.recovery_state(), RecoveryState::TimeoutRecovery);
    }

    #[test]
    fn sack_not_negotiated_falls_back_to_newreno() {
        let s = sender_with(
            SenderConfig {
                options: options(false, false),
                recovery: LossRecovery::Sack,
                ..SenderConfig::default()
            },
            1 << 20,
        );
        assert_eq!(s.recovery().algorithm(), LossRecovery::NewReno);
    }

    #[test]
    fn every_ack_duplicates_included_is_matched_to_the_segment_that_triggered_it() {
        let mut s = sender(LossRecovery::NewReno, false);
        drain(&mut s, at(0));
        // Segment 0 arrives: the ACK of new data answers it.
        s.on_ack(at(100), &ack_of(seg(1), &s));
        assert_eq!(
            s.ack_echo(at(100), seg(1), 0, false),
            None,
            "a bare window update answers nothing"
        );
        drain(&mut s, at(100));
        // Segment 1 is lost: each duplicate answers the next segment above the hole.
        for k in 2..6 {
            let now = at(100 + k);
            let echo = s.ack_echo(now, seg(1), 0, true).unwrap();
            assert_eq!(echo.rtt, now - at(0));
            assert!(echo.duplicate && !echo.ambiguous);
            assert_eq!(s.echo_end, seg(k + 1));
        }
        // The ACK that covers the hole answers the latest segment it covers.
        let mut t = sender(LossRecovery::NewReno, false);
        drain(&mut t, at(0));
        t.on_ack(at(100), &ack_of(seg(1), &t));
        drain(&mut t, at(100));
        t.detection.acked.clear();
        t.scoreboard
            .on_cumulative_ack(seg(4), &mut t.detection.acked);
        let echo = t.ack_echo(at(200), seg(4), seg(3), false).unwrap();
        assert_eq!(echo.rtt, at(200) - at(0));
        assert!(!echo.duplicate && !echo.ambiguous);
        assert_eq!(t.echo_end, seg(4));
        // After a timeout, duplicates are not trusted to name their segment.
        s.on_timeout(at(1100));
        let echo = s.ack_echo(at(1200), seg(1), 0, true).unwrap();
        assert!(echo.ambiguous);
    }

    #[test]
    fn a_pacing_controller_holds_segments_until_their_pacing_time() {
        let mut s = sender_with(
            SenderConfig {
                options: options(true, false),
                congestion_control: CcConfig::Bbr(Default::default()),
                ..SenderConfig::default()
            },
            1 << 20,
        );
        let rate = s.cc().pacing_rate().unwrap().bps();
        let first = s.poll_transmit(at(0)).unwrap().segment;
        assert_eq!(s.next_send_time(), None, "nothing held back yet");
        assert!(s.poll_transmit(at(0)).is_none(), "paced");
        let gap_ns = (u64::from(first.wire_bytes()) * 8 * 1_000_000_000).div_ceil(rate);
        let due = at(0) + SimDuration::from_nanos(gap_ns);
        assert_eq!(s.next_send_time(), Some(due));
        assert_eq!(s.next_wakeup(), Some(due), "before the RTO");
        assert_eq!(s.next_timeout(), Some(at(1000)), "the RTO itself unchanged");
        let just_before = SimTime::from_nanos(due.as_nanos() - 1);
        assert!(s.poll_transmit(just_before).is_none());
        let second = s.poll_transmit(due).unwrap().segment;
        assert_eq!(second.seq, first.end_seq());
    }

    #[test]
    fn controllers_that_do_not_pace_send_their_window_at_once() {
        let mut s = sender(LossRecovery::Sack, false);
        assert_eq!(drain(&mut s, at(0)).len(), 10);
        assert_eq!(s.next_send_time(), None);
        assert_eq!(s.next_wakeup(), s.next_timeout());
    }

    #[test]
    fn acks_outside_the_send_space_are_ignored() {
        let mut s = sender(LossRecovery::NewReno, false);
        drain(&mut s, at(0));
        s.on_ack(at(1), &ack_of(seg(11), &s));
        assert_eq!(s.snd_una(), 0);
        assert_eq!(s.stats().acks_received, 0);
    }

    #[test]
    fn the_send_buffer_bounds_the_outstanding_bytes() {
        let mut s = sender_with(
            SenderConfig {
                options: options(false, false),
                send_buffer_bytes: Some(3500),
                ..SenderConfig::default()
            },
            1 << 20,
        );
        assert_eq!(
            drain(&mut s, at(0)).len(),
            3,
            "3 full segments fit in 3500 bytes"
        );
        s.on_ack(at(100), &ack_of(seg(1), &s));
        assert_eq!(drain(&mut s, at(100)).len(), 1);
    }

    fn kinds(s: &mut Sender, now: SimTime) -> Vec<TransmissionKind> {
        std::iter::from_fn(|| s.poll_transmit(now).map(|t| t.kind)).collect()
    }

    #[test]
    fn poll_transmit_says_what_it_sends() {
        use TransmissionKind::*;
        let fresh = NewData {
            limited_transmit: false,
        };
        // NewReno without SACK: new data, Limited Transmit, the fast retransmit of the head,
        // then after a timeout the head and going back N.
        let mut s = sender(LossRecovery::NewReno, false);
        assert_eq!(kinds(&mut s, at(0)), vec![fresh; 10]);
        s.on_ack(at(100), &ack_of(seg(1), &s));
        assert_eq!(kinds(&mut s, at(100)), vec![fresh; 2]);
        s.on_ack(at(101), &ack_of(seg(1), &s));
        assert_eq!(
            kinds(&mut s, at(101)),
            vec![NewData {
                limited_transmit: true
            }]
        );
        s.on_ack(at(102), &ack_of(seg(1), &s));
        s.on_ack(at(103), &ack_of(seg(1), &s));
        assert_eq!(
            kinds(&mut s, at(103)),
            vec![Retransmission(Retransmit::Fast)]
        );
        let deadline = s.next_timeout().unwrap();
        s.on_timeout(deadline);
        assert_eq!(
            kinds(&mut s, deadline),
            vec![Retransmission(Retransmit::Timeout)]
        );
        let ack = s.snd_una() + s.smss_bytes();
        s.on_ack(deadline + SimDuration::from_millis(100), &ack_of(ack, &s));
        let after = kinds(&mut s, deadline + SimDuration::from_millis(100));
        assert_eq!(after, vec![Retransmission(Retransmit::GoBackN); 2]);
        assert!(after
            .iter()
            .all(|k| k.carries_data() && k.is_retransmission()));

        // SACK: the head on entering recovery, then what NextSeg() chooses.
        let mut s = sender(LossRecovery::Sack, false);
        drain(&mut s, at(0));
        // Segments 0 and 1 lost, 2..6 SACKed.
        for i in 2..7 {
            s.on_ack(at(100 + i), &sack_of(0, seg(2), seg(i + 1), &s));
        }
        assert_eq!(
            kinds(&mut s, at(107))[..2],
            [
                Retransmission(Retransmit::Fast),
                Retransmission(Retransmit::NextSeg(NextSegRule::Lost))
            ]
        );

        // The persist timer's probe.
        let mut s = sender(LossRecovery::Sack, false);
        drain(&mut s, at(0));
        let mut closed = ack_of(seg(10), &s);
        closed.window_field = 0;
        s.on_ack(at(100), &closed);
        assert!(kinds(&mut s, at(100)).is_empty());
        let probe_at = s.next_timeout().unwrap();
        s.on_timeout(probe_at);
        let probe = kinds(&mut s, probe_at);
        assert_eq!(probe, vec![WindowProbe]);
        assert!(!probe[0].carries_data());

        // The handshake: the SYN, again after its timer, and the pure ACK of the SYN-ACK.
        let config = SenderConfig {
            options: options(true, false),
            initial_window_segments: 1,
            ..SenderConfig::default()
        };
        let mut s = Sender::connect(&config);
        assert_eq!(
            kinds(&mut s, at(0)),
            vec![Syn {
                retransmission: false
            }]
        );
        s.on_timeout(at(1000));
        let syn = s.poll_transmit(at(1000)).unwrap();
        assert_eq!(
            syn.kind,
            Syn {
                retransmission: true
            }
        );
        let mut receiver = crate::tcp::receiver::Receiver::listen(
            &crate::tcp::receiver::ReceiverConfig {
                options: options(true, false),
                ..Default::default()
            },
            RttConfig::default(),
        );
        let syn_ack = receiver.on_segment(at(1100), &syn.segment).unwrap();
        s.on_ack(at(1200), &syn_ack);
        assert_eq!(kinds(&mut s, at(1200)), vec![fresh]);
        s.on_ack(at(1300), &syn_ack);
        assert_eq!(kinds(&mut s, at(1300)), vec![HandshakeAck]);
    }

    #[test]
    fn the_sender_names_what_holds_it_back() {
        // The peer's window of 3 segments binds; then the congestion window after a timeout.
        let mut s = sender_with(
            SenderConfig {
                options: options(false, false),
                app: AppSource::Bulk {
                    total_bytes: seg(20),
                },
                ..SenderConfig::default()
            },
            seg(3),
        );
        drain(&mut s, at(0));
        s.on_ack(at(100), &ack_of(seg(1), &s));
        drain(&mut s, at(100));
        let ns = |s: &Sender, t| s.limited_nanos(at(t));
        let i = |l: Limit| l as usize;
        assert_eq!(
            ns(&s, 150)[i(Limit::ReceiveWindow)],
            SimDuration::from_millis(150).as_nanos()
        );
        s.on_timeout(s.next_timeout().unwrap());
        let t = s.next_timeout().unwrap();
        drain(&mut s, at(1100));
        let before = ns(&s, 1100)[i(Limit::CongestionWindow)];
        assert_eq!(
            ns(&s, 1300)[i(Limit::CongestionWindow)] - before,
            SimDuration::from_millis(200).as_nanos(),
            "one segment of cwnd after the timeout"
        );
        assert!(t > at(1300), "no timer event in between");
        // Everything handed over is sent: the application holds the sender back.
        let mut s = sender_with(
            SenderConfig {
                options: options(false, false),
                app: AppSource::Bulk {
                    total_bytes: seg(3),
                },
                ..SenderConfig::default()
            },
            1 << 20,
        );
        drain(&mut s, at(0));
        assert_eq!(
            ns(&s, 500),
            [SimDuration::from_millis(500).as_nanos(), 0, 0, 0, 0],
            "all of it: application"
        );
    }

    #[test]
    fn a_closed_window_is_probed_by_the_persist_timer() {
        let mut s = sender(LossRecovery::Sack, false);
        drain(&mut s, at(0));
        // Everything acknowledged, and the window closed.
        let mut closed = ack_of(seg(10), &s);
        closed.window_field = 0;
        s.on_ack(at(100), &closed);
        assert!(drain(&mut s, at(100)).is_empty());
        let first = s.next_timeout().expect("the persist timer runs");
        s.on_timeout(first);
        let probe = drain(&mut s, first);
        assert_eq!(probe.len(), 1);
        assert_eq!((probe[0].seq, probe[0].payload_bytes), (seg(10) - 1, 0));
        assert_eq!(s.stats().window_probes, 1);
        assert_eq!(
            s.stats().timeouts,
            0,
            "a probe is not a retransmission timeout"
        );
        // Unanswered, the next probe waits twice as long.
        let second = s.next_timeout().unwrap();
        assert_eq!(
            (second - first).as_nanos(),
            (first - at(100)).as_nanos() * 2
        );
        // The window opens: sending resumes, the timer stops.
        let mut open = ack_of(seg(10), &s);
        open.window_field = u16::MAX;
        s.on_ack(second, &open);
        assert!(!drain(&mut s, second).is_empty());
        assert!(s.next_timeout().is_some_and(|t| t > second), "now the RTO");
    }

    #[test]
    fn nagle_holds_a_short_segment_while_data_is_outstanding() {
        let mut s = sender_with(
            SenderConfig {
                options: options(false, false),
                app: AppSource::Bulk { total_bytes: 1500 },
                nagle: true,
                ..SenderConfig::default()
            },
            1 << 20,
        );
        assert_eq!(drain(&mut s, at(0)).len(), 1, "the 500-byte rest waits");
        s.push_bytes(500);
        let next = drain(&mut s, at(1));
        assert_eq!(next.len(), 1, "now a full segment");
        assert_eq!(next[0].payload_bytes, 1000);
        s.push_bytes(300);
        assert!(drain(&mut s, at(2)).is_empty());
        s.end_of_data();
        assert_eq!(drain(&mut s, at(3))[0].payload_bytes, 300, "closed: pushed");
    }

    #[test]
    fn a_probe_and_a_retransmission_timer_due_together_send_the_probe_first() {
        // `arm_probe_timer` caps the probe at the retransmission timer, so the two are often
        // due at one instant: the probe goes, and no timeout is taken (RFC 8985 7.3 restarts
        // the retransmission timer when the probe leaves), as `Timer`'s order says.
        let mut s = sender(LossRecovery::Rack, false);
        drain(&mut s, at(0));
        s.on_ack(at(100), &ack_of(seg(1), &s));
        assert!(s.timers.is_running(Timer::Probe), "RACK-TLP arms the probe");
        let due = at(700);
        s.timers.set(Timer::Probe, due);
        s.timers.set(Timer::Retransmission, due);
        assert_eq!(s.next_timeout(), Some(due));
        s.on_timeout(due);
        assert_eq!(s.stats().timeouts, 0, "the retransmission timer waits");
        assert_eq!(
            kinds(&mut s, due)[..1],
            [TransmissionKind::LossProbe {
                retransmission: false
            }]
        );
        assert_eq!(s.stats().loss_probes, 1);
        assert_eq!(s.next_timeout(), Some(due + s.rtt().rto()), "restarted");
    }
}
