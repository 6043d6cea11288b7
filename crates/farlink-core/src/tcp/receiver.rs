//! The data receiver: in-order delivery, out-of-order ranges, delayed ACK, SACK blocks and
//! timestamp echo.
//!
//! Read first: RFC 9293 section 3.10.7.4 (segment acceptance, `RCV.NXT`, `RCV.WND`),
//! RFC 1122 section 4.2.3.2 (delayed ACK: "at least every second full-sized segment", less
//! than 0.5 s), RFC 5681 section 4.2 (immediate ACKs for out-of-order and gap-filling
//! segments), RFC 2018 section 4 (which SACK blocks, in which order), RFC 7323 sections 2.3
//! and 4.3 (window scaling; `TS.Recent` and `Last.ACK.sent`).
//!
//! Linux's quick-ACK mode ([`DelayedAck::On`] `quick_ack`, `tcp_input.c`): the receiver
//! acknowledges every segment at once, for up to 16 ACKs (`TCP_MAX_QUICKACKS`, fewer with a
//! window under 32 segments: `tcp_incr_quickack`), after the connection's first data, after
//! a silence longer than its own RTO (`tcp_event_data_recv`: "sender failed to restart
//! window") and after duplicate or out-of-window data (`tcp_enter_quickack_mode`). Each ACK
//! of data received spends one (`tcp_dec_quickack_mode`). Its own RTO is the one its
//! handshake's round trip set (a receiver sends no data, so it has no other sample): the
//! SYN-ACK's, or for a receiver built established the round trip given to
//! [`Receiver::with_handshake_round_trip`]. Not modelled: the adaptive delayed-ACK timeout
//! (`ato`; the timeout here is fixed) and the compression of SACK-bearing ACKs past the
//! third (`tcp_comp_sack_delay_ns`: at most 1 ms or 5 % of the RTT).
//!
//! Sans-I/O: [`Receiver::on_segment`] takes a segment and returns the ACK to send now, if any;
//! [`Receiver::next_timeout`] is the delayed-ACK deadline and [`Receiver::on_timeout`] the ACK
//! it produces. By default the application reads every in-order byte at once, so the advertised
//! window is the whole receive buffer; out-of-order data lies inside that window and does not
//! shrink it. Bytes handed to the application are counted exactly once, in order
//! ([`Receiver::delivered_bytes`]).
//!
//! An application that reads when it can ([`ReceiverConfig::reads_on_demand`], the relay of a
//! split connection) leaves in-order bytes in the buffer until [`Receiver::read`] takes them;
//! the advertised window is then the buffer less those unread bytes, its right edge never moves
//! left (RFC 9293 3.8.6.2.2: "the receiver ... SHOULD NOT shrink the window") and moves right
//! only by at least min(buffer / 2, SMSS) (RFC 9293 3.8.6.2.2, receiver silly-window
//! avoidance). After a read, [`Receiver::window_update`] sends an unsolicited ACK when the
//! window had fallen to half the buffer or less and can now at least double: the rule of
//! Linux's `tcp_cleanup_rbuf`, which keeps an unconstrained relay from doubling the ACKs.
//!
//! [`Receiver::new`] starts established; [`Receiver::listen`] starts in LISTEN: the SYN
//! makes it agree the options ([`super::handshake::negotiate_at_listener`]) and answer with a
//! SYN-ACK from SYN-RECEIVED, retransmitted on its own timer (initial RTO, doubled on each
//! expiry) and at once on a retransmitted SYN (as Linux does), until a segment acknowledges
//! it: the first data segment, or the sender's pure ACK.

use std::collections::VecDeque;

use super::ecn::{EcnMode, ReceiverEcn};
use super::handshake;
use super::rtt::{RttConfig, RttEstimator};
use super::segment::{
    encode_window, max_sack_blocks, timestamp_clock, Flags, Options, SackBlock, SackBlocks,
    Segment, Timestamps, MAX_SACK_BLOCKS,
};
use super::{Negotiated, State, TcpOptions};
use crate::time::{SimDuration, SimTime};

/// RFC 1122 4.2.3.2: "an ACK should not be excessively delayed; in particular, the delay MUST
/// be less than 0.5 seconds". 200 ms is the BSD value and ns-3's `DelAckTimeout`.
pub const DELAYED_ACK_TIMEOUT: SimDuration = SimDuration::from_millis(200);
/// RFC 1122 4.2.3.2 / RFC 5681 4.2: "an ACK SHOULD be generated for at least every second
/// full-sized segment".
pub const ACK_EVERY_SEGMENTS: u32 = 2;
/// Linux's and ns-3's default receive buffer (`tcp_rmem` default, ns-3 `RcvBufSize`).
pub const DEFAULT_RECEIVE_BUFFER_BYTES: u64 = 131_072;
/// Out-of-order ranges kept before further out-of-order segments are dropped (a bounded
/// reassembly queue, like a kernel's memory limit).
pub const DEFAULT_MAX_OOO_RANGES: usize = 64;
/// Linux's `TCP_MAX_QUICKACKS`: the most ACKs one entry into quick-ACK mode sends at once.
pub const MAX_QUICK_ACKS: u32 = 16;

/// When the receiver acknowledges in-order data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DelayedAck {
    /// An ACK for every segment.
    Off,
    /// An ACK once `every_segments` full-sized segments' worth of bytes is unacknowledged, or
    /// `timeout` after the first unacknowledged in-order segment arrived; with `quick_ack`,
    /// Linux's quick-ACK mode besides (module notes).
    On {
        timeout: SimDuration,
        every_segments: u32,
        quick_ack: bool,
    },
}

impl Default for DelayedAck {
    fn default() -> Self {
        DelayedAck::On {
            timeout: DELAYED_ACK_TIMEOUT,
            every_segments: ACK_EVERY_SEGMENTS,
            quick_ack: false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReceiverConfig {
    /// The options this end offers in its SYN-ACK.
    pub options: TcpOptions,
    pub receive_buffer_bytes: u64,
    pub delayed_ack: DelayedAck,
    /// Bound on the number of out-of-order ranges held; storage is reserved once.
    pub max_ooo_ranges: usize,
    /// The application reads with [`Receiver::read`] (a relay), rather than every in-order
    /// byte at once; unread bytes shrink the advertised window.
    pub reads_on_demand: bool,
    /// ECN ([`crate::tcp::ecn`]); off by default.
    pub ecn: EcnMode,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        ReceiverConfig {
            options: TcpOptions::default(),
            receive_buffer_bytes: DEFAULT_RECEIVE_BUFFER_BYTES,
            delayed_ack: DelayedAck::default(),
            max_ooo_ranges: DEFAULT_MAX_OOO_RANGES,
            reads_on_demand: false,
            ecn: EcnMode::Off,
        }
    }
}

/// Counters of the receiver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    pub segments_received: u64,
    /// Payload bytes received, duplicates included.
    pub bytes_received: u64,
    /// Bytes handed to the application, each exactly once and in order.
    pub delivered_bytes: u64,
    /// Segments entirely below `RCV.NXT` (already delivered).
    pub duplicate_segments: u64,
    /// Segments above `RCV.NXT` (held in the out-of-order ranges).
    pub out_of_order_segments: u64,
    /// Out-of-order segments dropped because `max_ooo_ranges` ranges were held already.
    pub ooo_dropped_segments: u64,
    /// Bytes beyond the right edge of the window, discarded (RFC 9293 3.10.7.4).
    pub beyond_window_bytes: u64,
    pub acks_sent: u64,
    /// ACKs sent because the delayed-ACK timer fired.
    pub delayed_ack_timeouts: u64,
    /// Unsolicited ACKs sent because the application's reads opened the window.
    pub window_updates: u64,
    /// Zero-length window probes answered.
    pub window_probes: u64,
    /// SYN-ACKs sent (a passive open), retransmissions included, and how many of them were
    /// retransmissions (timer expiries and repeated SYNs).
    pub syn_acks_sent: u64,
    pub syn_ack_retransmissions: u64,
}

/// What a receiver keeps from LISTEN until its SYN-ACK is acknowledged ([`Receiver::listen`]).
#[derive(Clone, Debug)]
struct PassiveOpen {
    config: ReceiverConfig,
    /// The SYN-ACK's timer: RFC 6298's initial RTO and backoff, as for a SYN.
    rtt: RttEstimator,
    /// The SYN received, answered again on each retransmission.
    syn: Segment,
    deadline: Option<SimTime>,
    /// When the SYN-ACK was last sent: its acknowledgement times the handshake's round trip
    /// (Karn's rule: only if it was sent once).
    sent_at: SimTime,
}

/// A sans-I/O TCP data receiver.
#[derive(Clone, Debug)]
pub struct Receiver {
    /// LISTEN and SYN-RECEIVED for a receiver built by [`Receiver::listen`], else
    /// ESTABLISHED.
    state: State,
    /// The passive open, until the SYN-ACK is acknowledged.
    opening: Option<Box<PassiveOpen>>,
    negotiated: Negotiated,
    delayed_ack: DelayedAck,
    smss_bytes: u64,
    sack: bool,
    timestamps: bool,
    max_sack_blocks: usize,
    max_ooo_ranges: usize,
    /// The window field announced; the window is `window_field << window_shift` bytes
    /// (RFC 7323 2.3).
    window_field: u16,
    window_shift: u8,
    /// The whole buffer as the window field can announce it (`window_field << window_shift`).
    full_window_bytes: u64,
    reads_on_demand: bool,
    /// Bytes the application has read; `RCV.NXT - read_bytes` wait in the buffer.
    read_bytes: u64,
    /// The right edge of the window last announced (`RCV.NXT + RCV.WND` of the last ACK, as
    /// the sender reads the field), with reads on demand.
    announced_edge: u64,
    rcv_nxt: u64,
    /// Disjoint, non-adjacent `[start, end)` ranges above `RCV.NXT`, ascending.
    ooo: VecDeque<(u64, u64)>,
    /// RFC 2018 section 4: a point inside each of the most recently reported blocks, most
    /// recent first.
    recent_sack_points: [u64; MAX_SACK_BLOCKS],
    recent_sack_len: usize,
    /// RFC 7323 4.3 `TS.Recent` and `Last.ACK.sent`.
    ts_recent: u32,
    last_ack_sent: u64,
    /// In-order bytes received since the last ACK (delayed ACK).
    unacked_bytes: u64,
    delayed_ack_deadline: Option<SimTime>,
    /// Quick-ACK mode: ACKs left to send at once (Linux's `icsk_ack.quick`).
    quick_acks: u32,
    /// When in-order data last arrived (Linux's `lrcvtime`).
    last_in_order_at: Option<SimTime>,
    /// This end's own RTO, which a silence must exceed to restart quick-ACK mode.
    own_rto: SimDuration,
    stats: ReceiverStats,
    ecn: ReceiverEcn,
}

impl Receiver {
    pub fn new(config: &ReceiverConfig, negotiated: &Negotiated) -> Self {
        let shift = negotiated.window_shift;
        // Without window scaling the window field caps the window at 65535 bytes.
        let window_field = encode_window(config.receive_buffer_bytes, shift);
        Receiver {
            state: State::Established,
            opening: None,
            negotiated: *negotiated,
            delayed_ack: config.delayed_ack,
            smss_bytes: u64::from(negotiated.smss_bytes()),
            sack: negotiated.sack,
            timestamps: negotiated.timestamps,
            max_sack_blocks: max_sack_blocks(negotiated.timestamps),
            max_ooo_ranges: config.max_ooo_ranges.max(1),
            window_field,
            window_shift: shift,
            full_window_bytes: u64::from(window_field) << shift,
            reads_on_demand: config.reads_on_demand,
            read_bytes: 0,
            announced_edge: u64::from(window_field) << shift,
            rcv_nxt: 0,
            ooo: VecDeque::with_capacity(config.max_ooo_ranges.max(1)),
            recent_sack_points: [0; MAX_SACK_BLOCKS],
            recent_sack_len: 0,
            ts_recent: 0,
            last_ack_sent: 0,
            unacked_bytes: 0,
            delayed_ack_deadline: None,
            quick_acks: 0,
            last_in_order_at: None,
            // Linux's RTO before any sample (TCP_TIMEOUT_INIT).
            own_rto: RttEstimator::new(RttConfig::default()).rto(),
            stats: ReceiverStats::default(),
            ecn: ReceiverEcn::new(config.ecn, true),
        }
    }

    /// A receiver built established, given the round trip its handshake would have timed and
    /// its timer's rules: they set its own RTO, as the SYN-ACK's sample sets a listening
    /// receiver's (module notes: quick-ACK mode).
    pub fn with_handshake_round_trip(mut self, rtt: RttConfig, round_trip: SimDuration) -> Self {
        let mut est = RttEstimator::new(rtt);
        est.on_sample(round_trip);
        self.own_rto = est.rto();
        self
    }

    /// A receiver waiting for a SYN (LISTEN), offering `config.options`; `syn_ack_rto` times
    /// its SYN-ACK (RFC 6298: initial RTO, doubled on each expiry, within the bounds).
    pub fn listen(config: &ReceiverConfig, syn_ack_rto: RttConfig) -> Self {
        let provisional = Negotiated::without_handshake(
            &config.options,
            &config.options,
            config.receive_buffer_bytes,
        );
        let mut r = Receiver::new(config, &provisional);
        r.state = State::Listen;
        r.ecn = ReceiverEcn::new(config.ecn, false);
        r.opening = Some(Box::new(PassiveOpen {
            config: *config,
            rtt: RttEstimator::new(syn_ack_rto),
            syn: Segment::default(),
            deadline: None,
            sent_at: SimTime::ZERO,
        }));
        r
    }

    pub fn state(&self) -> State {
        self.state
    }
    /// What both ends agreed (before the SYN of a listening receiver: its own offer).
    pub fn negotiated(&self) -> &Negotiated {
        &self.negotiated
    }
    /// `RCV.NXT`: the next byte expected.
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }
    /// Bytes handed to the application, each once and in order.
    pub fn delivered_bytes(&self) -> u64 {
        self.stats.delivered_bytes
    }
    /// The whole receive buffer as the window field announces it, in bytes: the advertised
    /// window of an application that reads at once.
    pub fn window_bytes(&self) -> u64 {
        self.full_window_bytes
    }
    /// Bytes the application has read (with [`ReceiverConfig::reads_on_demand`]; otherwise
    /// every delivered byte).
    pub fn read_bytes(&self) -> u64 {
        self.read_bytes
    }
    /// In-order bytes waiting in the buffer for the application.
    pub fn unread_bytes(&self) -> u64 {
        self.rcv_nxt - self.read_bytes
    }
    /// The window the last ACK announced, in bytes from `RCV.NXT`.
    pub fn announced_window_bytes(&self) -> u64 {
        self.announced_edge.saturating_sub(self.rcv_nxt)
    }

    /// The application reads up to `max_bytes` of the in-order bytes waiting; returns how many.
    /// Follow it with [`Receiver::window_update`].
    pub fn read(&mut self, max_bytes: u64) -> u64 {
        let n = max_bytes.min(self.unread_bytes());
        self.read_bytes += n;
        n
    }

    /// After a read: the unsolicited ACK announcing the opened window, if it is worth one
    /// (see the module notes: the window had fallen to half the buffer or less and at least
    /// doubles).
    pub fn window_update(&mut self, now: SimTime) -> Option<Segment> {
        if !self.reads_on_demand || self.state != State::Established {
            return None;
        }
        let current = self.announced_window_bytes();
        let next = self.next_edge().saturating_sub(self.rcv_nxt);
        if 2 * current <= self.full_window_bytes && next > current && next >= 2 * current {
            self.stats.window_updates += 1;
            return Some(self.ack(now));
        }
        None
    }

    /// The right edge the next ACK announces: the buffer's free space, moved right only by at
    /// least min(buffer / 2, SMSS) (receiver SWS avoidance), never left.
    fn next_edge(&self) -> u64 {
        let free_edge = self.read_bytes + self.full_window_bytes;
        let step = (self.full_window_bytes / 2).min(self.smss_bytes).max(1);
        if free_edge >= self.announced_edge + step {
            free_edge
        } else {
            self.announced_edge
        }
    }
    /// The out-of-order ranges held, ascending.
    pub fn ooo_ranges(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ooo.iter().copied()
    }
    pub fn stats(&self) -> &ReceiverStats {
        &self.stats
    }
    /// The delayed-ACK deadline, if an ACK is being held back; in SYN-RECEIVED the SYN-ACK's
    /// retransmission deadline.
    pub fn next_timeout(&self) -> Option<SimTime> {
        match &self.opening {
            Some(open) => open.deadline,
            None => self.delayed_ack_deadline,
        }
    }

    /// The delayed-ACK timer: the held-back ACK if its deadline has come; in SYN-RECEIVED the
    /// SYN-ACK again, once its timer has expired.
    pub fn on_timeout(&mut self, now: SimTime) -> Option<Segment> {
        if let Some(open) = self.opening.as_mut() {
            if open.deadline.is_none_or(|d| now < d) {
                return None;
            }
            // RFC 6298 (5.5), (5.6) applied to the SYN-ACK.
            open.rtt.back_off();
            self.stats.syn_ack_retransmissions += 1;
            return self.send_syn_ack(now);
        }
        let deadline = self.delayed_ack_deadline?;
        if now < deadline {
            return None;
        }
        self.stats.delayed_ack_timeouts += 1;
        Some(self.ack_data(now))
    }

    /// A segment arrives; returns the ACK (or SYN-ACK) to send now, if any.
    pub fn on_segment(&mut self, now: SimTime, seg: &Segment) -> Option<Segment> {
        self.stats.segments_received += 1;
        if self.state != State::Established || seg.flags.contains(Flags::SYN) {
            return self.on_opening_segment(now, seg);
        }
        self.on_established_segment(now, seg)
    }

    /// A segment before the handshake completed, or any SYN.
    fn on_opening_segment(&mut self, now: SimTime, seg: &Segment) -> Option<Segment> {
        let syn = seg.flags.contains(Flags::SYN) && !seg.flags.contains(Flags::ACK);
        match self.state {
            State::Listen if syn => {
                let open = self.opening.take()?;
                let agreed = handshake::negotiate_at_listener(
                    &open.config.options,
                    open.config.receive_buffer_bytes,
                    seg,
                );
                let stats = self.stats;
                *self = Receiver::new(&open.config, &agreed);
                self.stats = stats;
                self.state = State::SynReceived;
                self.ecn = ReceiverEcn::new(open.config.ecn, false);
                self.ecn.on_syn(seg);
                if let (true, Some(ts)) = (agreed.timestamps, seg.options.timestamps) {
                    self.ts_recent = ts.tsval;
                }
                self.opening = Some(Box::new(PassiveOpen { syn: *seg, ..*open }));
                self.send_syn_ack(now)
            }
            State::SynReceived if syn => {
                // The SYN again: our SYN-ACK (or its answer) was lost, or is late. Linux
                // answers at once and restarts the timer (tcp_check_req).
                self.stats.syn_ack_retransmissions += 1;
                self.send_syn_ack(now)
            }
            State::SynReceived if seg.flags.contains(Flags::ACK) && seg.ack == 0 => {
                // The SYN-ACK is acknowledged: established; data it carries is taken as such.
                // Its round trip is this end's one RTT sample (tcp_synack_rtt_meas).
                self.state = State::Established;
                if let Some(mut open) = self.opening.take() {
                    if self.stats.syn_ack_retransmissions == 0 {
                        open.rtt.on_sample(now.saturating_since(open.sent_at));
                    }
                    self.own_rto = open.rtt.rto();
                }
                if seg.payload_bytes > 0 {
                    self.on_established_segment(now, seg)
                } else {
                    None
                }
            }
            // RFC 9293 3.10.7.4 with RFC 5961 4.2: a SYN on an established connection gets
            // an ACK (the "challenge ACK"), nothing else.
            State::Established => Some(self.ack(now)),
            // Nothing precedes a SYN; a segment without one in LISTEN is not ours to take.
            _ => None,
        }
    }

    /// Sends (again) the SYN-ACK answering the SYN held, and (re)starts its timer; `None`
    /// only outside the passive open.
    fn send_syn_ack(&mut self, now: SimTime) -> Option<Segment> {
        let negotiated = self.negotiated;
        let open = self.opening.as_mut()?;
        self.stats.syn_acks_sent += 1;
        open.deadline = Some(now + open.rtt.rto());
        open.sent_at = now;
        let mut syn_ack = handshake::syn_ack(
            &open.config.options,
            open.config.receive_buffer_bytes,
            &negotiated,
            &open.syn,
            now,
        );
        self.ecn.on_syn_ack(&mut syn_ack);
        Some(syn_ack)
    }

    /// `on_segment` of an established connection.
    fn on_established_segment(&mut self, now: SimTime, seg: &Segment) -> Option<Segment> {
        if seg.payload_bytes == 0 {
            // A zero-window probe (an empty segment below RCV.NXT) is answered at once with the
            // current window (RFC 9293 3.8.6.1); anything else empty is a pure ACK, and no data
            // flows towards the sender, so there is nothing to acknowledge.
            if seg.seq < self.rcv_nxt {
                self.stats.window_probes += 1;
                return Some(self.ack(now));
            }
            return None;
        }
        self.stats.bytes_received += u64::from(seg.payload_bytes);
        self.ecn.on_data_segment(seg);

        // RFC 7323 4.3 (2): "If SEG.TSval >= TS.Recent and SEG.SEQ <= Last.ACK.sent then
        // SEG.TSval is copied to TS.Recent". So with delayed ACKs the earliest unacknowledged
        // segment's TSval is echoed, and out-of-order segments do not update it: the echo
        // times the segment that advanced (or would advance) the left edge.
        if let Some(ts) = seg.options.timestamps {
            if self.timestamps
                && seg.seq <= self.last_ack_sent
                && (ts.tsval.wrapping_sub(self.ts_recent) as i32) >= 0
            {
                self.ts_recent = ts.tsval;
            }
        }

        // RFC 9293 3.10.7.4: keep only what lies inside [RCV.NXT, RCV.NXT + RCV.WND), the
        // window being the buffer's free space (all of it when the application reads at once).
        let right_edge = (self.read_bytes + self.full_window_bytes).max(self.announced_edge);
        let start = seg.seq;
        let end = seg.end_seq().min(right_edge);
        self.stats.beyond_window_bytes += seg.end_seq() - end.max(start);

        if end <= start {
            // Entirely beyond the window. RFC 9293 3.10.7.4: "If an incoming segment is not
            // acceptable, an acknowledgment should be sent in reply".
            self.enter_quick_ack();
            return Some(self.ack_data(now));
        }
        if end <= self.rcv_nxt {
            // A duplicate: acknowledge at once (RFC 9293 3.10.7.4), which also lets the
            // sender see it (RFC 5681 4.2).
            self.stats.duplicate_segments += 1;
            self.enter_quick_ack();
            return Some(self.ack_data(now));
        }
        if start > self.rcv_nxt {
            // RFC 5681 4.2: "A TCP receiver SHOULD send an immediate duplicate ACK when an
            // out-of-order segment arrives."
            self.stats.out_of_order_segments += 1;
            if self.insert_ooo(start, end) {
                self.note_sack_trigger(start);
            } else {
                self.stats.ooo_dropped_segments += 1;
            }
            return Some(self.ack_data(now));
        }

        // Linux's tcp_event_data_recv: quick-ACK mode on the first data and after a silence
        // longer than this end's RTO.
        let silent = self
            .last_in_order_at
            .is_none_or(|t| now.saturating_since(t) > self.own_rto);
        self.last_in_order_at = Some(now);
        if silent {
            self.enter_quick_ack();
        }

        // In order: deliver, then pull in every out-of-order range now contiguous.
        let filled_gap = !self.ooo.is_empty();
        let old_nxt = self.rcv_nxt;
        self.rcv_nxt = end;
        while let Some(&(s, e)) = self.ooo.front() {
            if s > self.rcv_nxt {
                break;
            }
            self.rcv_nxt = self.rcv_nxt.max(e);
            self.ooo.pop_front();
        }
        self.stats.delivered_bytes += self.rcv_nxt - old_nxt;
        if !self.reads_on_demand {
            self.read_bytes = self.rcv_nxt;
        }

        if filled_gap {
            // RFC 5681 4.2: "a TCP receiver SHOULD send an immediate ACK when the incoming
            // segment fills in all or part of a gap in the sequence space."
            return Some(self.ack_data(now));
        }
        match self.delayed_ack {
            DelayedAck::Off => Some(self.ack(now)),
            DelayedAck::On {
                timeout,
                every_segments,
                ..
            } => {
                self.unacked_bytes += self.rcv_nxt - old_nxt;
                if self.unacked_bytes >= u64::from(every_segments) * self.smss_bytes
                    || self.quick_acks > 0
                {
                    Some(self.ack_data(now))
                } else {
                    if self.delayed_ack_deadline.is_none() {
                        self.delayed_ack_deadline = Some(now + timeout);
                    }
                    None
                }
            }
        }
    }

    /// Adds `[start, end)` to the out-of-order ranges, merging with neighbours. False if a new
    /// range was needed and `max_ooo_ranges` are held.
    fn insert_ooo(&mut self, start: u64, end: u64) -> bool {
        // Ranges [i, j) overlap or touch [start, end).
        let i = self.ooo.partition_point(|&(_, e)| e < start);
        let j = self.ooo.partition_point(|&(s, _)| s <= end);
        if i == j {
            if self.ooo.len() == self.max_ooo_ranges {
                return false;
            }
            self.ooo.insert(i, (start, end));
        } else {
            let merged = (start.min(self.ooo[i].0), end.max(self.ooo[j - 1].1));
            self.ooo[i] = merged;
            self.ooo.drain(i + 1..j);
        }
        true
    }

    /// The out-of-order range holding `seq`, if any.
    fn range_holding(&self, seq: u64) -> Option<(u64, u64)> {
        let i = self.ooo.partition_point(|&(_, e)| e <= seq);
        self.ooo.get(i).copied().filter(|&(s, _)| s <= seq)
    }

    /// RFC 2018 section 4: remember the block holding the segment that triggered this ACK as
    /// the most recent one, dropping older points inside the same block.
    fn note_sack_trigger(&mut self, seq: u64) {
        let block = self.range_holding(seq);
        let mut kept = [0u64; MAX_SACK_BLOCKS];
        let mut n = 0;
        kept[n] = seq;
        n += 1;
        for &p in &self.recent_sack_points[..self.recent_sack_len] {
            if n == MAX_SACK_BLOCKS {
                break;
            }
            let other = self.range_holding(p);
            if other.is_some() && other != block {
                kept[n] = p;
                n += 1;
            }
        }
        self.recent_sack_points = kept;
        self.recent_sack_len = n;
    }

    /// RFC 2018 section 4: "The first SACK block ... MUST specify the contiguous block of data
    /// containing the segment which triggered this ACK, unless that segment advanced the
    /// Acknowledgment Number field in the header." "The SACK option SHOULD be filled out by
    /// repeating the most recently reported SACK blocks ... that are not subsets of a SACK
    /// block already included". Remaining room goes to the other held ranges, highest first.
    fn sack_blocks(&self) -> SackBlocks {
        let mut blocks = SackBlocks::default();
        if !self.sack {
            return blocks;
        }
        let add = |blocks: &mut SackBlocks, (left, right): (u64, u64)| {
            let b = SackBlock { left, right };
            if blocks.len() < self.max_sack_blocks && !blocks.as_slice().contains(&b) {
                blocks.push(b);
            }
        };
        for &p in &self.recent_sack_points[..self.recent_sack_len] {
            if let Some(r) = self.range_holding(p) {
                add(&mut blocks, r);
            }
        }
        for &r in self.ooo.iter().rev() {
            add(&mut blocks, r);
        }
        blocks
    }

    /// Quick-ACK mode (re)entered: at least min(16, window / 2 segments, at least 2) ACKs
    /// at once (Linux's `tcp_incr_quickack`); nothing without `quick_ack`.
    fn enter_quick_ack(&mut self) {
        if !matches!(
            self.delayed_ack,
            DelayedAck::On {
                quick_ack: true,
                ..
            }
        ) {
            return;
        }
        let window = if self.reads_on_demand {
            self.announced_window_bytes()
        } else {
            self.full_window_bytes
        };
        let per_window = u32::try_from(window / (2 * self.smss_bytes.max(1))).unwrap_or(u32::MAX);
        let quick = per_window.clamp(2, MAX_QUICK_ACKS);
        self.quick_acks = self.quick_acks.max(quick);
    }

    /// An ACK of data received, which spends one of quick-ACK mode's (Linux's
    /// `tcp_dec_quickack_mode`); ACKs that answer no data (window updates, probes) do not.
    fn ack_data(&mut self, now: SimTime) -> Segment {
        self.quick_acks = self.quick_acks.saturating_sub(1);
        self.ack(now)
    }

    /// Builds an ACK of `RCV.NXT` and resets the delayed-ACK state.
    fn ack(&mut self, now: SimTime) -> Segment {
        self.unacked_bytes = 0;
        self.delayed_ack_deadline = None;
        self.last_ack_sent = self.rcv_nxt;
        self.stats.acks_sent += 1;
        let window_field = if self.reads_on_demand {
            // The field is rounded up to the scale's granularity, as Linux aligns it, so the
            // edge the sender reads never moves left either; the receiver then accepts up to
            // that edge (at most 2^shift - 1 bytes beyond its buffer, the kernel's slack).
            let edge = self.next_edge();
            let unit = 1u64 << self.window_shift;
            let window = edge.saturating_sub(self.rcv_nxt).div_ceil(unit) * unit;
            let field = encode_window(window, self.window_shift);
            self.announced_edge = self.rcv_nxt + (u64::from(field) << self.window_shift);
            field
        } else {
            self.window_field
        };
        let timestamps = self.timestamps.then(|| Timestamps {
            tsval: timestamp_clock(now),
            tsecr: self.ts_recent,
        });
        let mut ack = Segment {
            ecn: Default::default(),
            ace: 0,
            seq: 0,
            ack: self.rcv_nxt,
            flags: Flags::ACK,
            payload_bytes: 0,
            window_field,
            options: Options {
                timestamps,
                sack: self.sack_blocks(),
                ..Options::default()
            },
        };
        self.ecn.on_ack(&mut ack);
        ack
    }

    /// The connection's ECN state (and the count of CE marks received).
    pub fn ecn(&self) -> &ReceiverEcn {
        &self.ecn
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    fn options(sack: bool, timestamps: bool) -> TcpOptions {
        TcpOptions {
            mss_bytes: MSS,
            sack,
            timestamps,
            window_scaling: true,
        }
    }

    fn receiver_with(config: ReceiverConfig) -> Receiver {
        let n = Negotiated::without_handshake(
            &config.options,
            &config.options,
            config.receive_buffer_bytes,
        );
        Receiver::new(&config, &n)
    }

    fn receiver(delayed_ack: DelayedAck) -> Receiver {
        receiver_with(ReceiverConfig {
            options: options(true, false),
            delayed_ack,
            ..ReceiverConfig::default()
        })
    }

    fn data(seq_segment: u64) -> Segment {
        Segment {
            seq: seq_segment * u64::from(MSS),
            flags: Flags::ACK,
            payload_bytes: MSS,
            ..Segment::default()
        }
    }

    fn at(ms: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_millis(ms)
    }

    fn blocks(ack: &Segment) -> Vec<(u64, u64)> {
        ack.options
            .sack
            .as_slice()
            .iter()
            .map(|b| (b.left / u64::from(MSS), b.right / u64::from(MSS)))
            .collect()
    }

    #[test]
    fn in_order_bytes_are_delivered_once() {
        let mut r = receiver(DelayedAck::Off);
        for i in 0..5 {
            let ack = r.on_segment(at(i), &data(i)).unwrap();
            assert_eq!(ack.ack, (i + 1) * u64::from(MSS));
        }
        r.on_segment(at(9), &data(2));
        assert_eq!(r.delivered_bytes(), 5 * u64::from(MSS));
        assert_eq!(r.stats().duplicate_segments, 1);
    }

    #[test]
    fn delayed_ack_acks_every_second_full_segment() {
        let mut r = receiver(DelayedAck::default());
        assert!(r.on_segment(at(0), &data(0)).is_none());
        assert_eq!(r.next_timeout(), Some(at(200)));
        let ack = r
            .on_segment(at(1), &data(1))
            .expect("second segment is acked");
        assert_eq!(ack.ack, 2 * u64::from(MSS));
        assert_eq!(r.next_timeout(), None);
        assert!(r.on_segment(at(2), &data(2)).is_none());
        assert!(r.on_segment(at(3), &data(3)).is_some());
    }

    fn quick(buffer_bytes: u64) -> Receiver {
        receiver_with(ReceiverConfig {
            options: options(true, false),
            receive_buffer_bytes: buffer_bytes,
            delayed_ack: DelayedAck::On {
                timeout: SimDuration::from_millis(40),
                every_segments: 2,
                quick_ack: true,
            },
            ..ReceiverConfig::default()
        })
    }

    /// Segments `from..to` in order at 1 ms spacing from `start_ms`; how many were acked at once.
    fn acked_at_once(r: &mut Receiver, from: u64, to: u64, start_ms: u64) -> usize {
        (from..to)
            .filter(|&k| r.on_segment(at(start_ms + k - from), &data(k)).is_some())
            .count()
    }

    #[test]
    fn quick_ack_mode_acks_the_first_sixteen_segments_each() {
        // Linux: 16 quick ACKs from the first data (a window of 64 segments allows 32).
        let mut r = quick(64 * u64::from(MSS));
        assert_eq!(acked_at_once(&mut r, 0, 16, 0), 16);
        // Then every second segment, as without the mode.
        assert_eq!(acked_at_once(&mut r, 16, 24, 16), 4);
        // Off, the same segments get half as many.
        let mut plain = receiver(DelayedAck::On {
            timeout: SimDuration::from_millis(40),
            every_segments: 2,
            quick_ack: false,
        });
        assert_eq!(acked_at_once(&mut plain, 0, 16, 0), 8);
    }

    #[test]
    fn quick_acks_are_bounded_by_half_the_window_in_segments() {
        // A window of 10 segments: 5 quick ACKs (tcp_incr_quickack: rcv_wnd / (2 * rcv_mss)).
        let mut r = quick(10 * u64::from(MSS));
        assert_eq!(acked_at_once(&mut r, 0, 5, 0), 5);
        assert!(r.on_segment(at(5), &data(5)).is_none());
        // A window under four segments still gets 2.
        let mut r = quick(3 * u64::from(MSS));
        assert_eq!(acked_at_once(&mut r, 0, 3, 0), 2);
    }

    #[test]
    fn a_silence_longer_than_the_receivers_rto_restarts_the_mode() {
        // Built established with a 10 ms round trip: Linux's rule gives 10 ms + 200 ms.
        let rtt = RttConfig {
            rule: super::super::rtt::RtoRule::Linux,
            min_rto: SimDuration::from_millis(200),
            ..RttConfig::default()
        };
        let mut r =
            quick(64 * u64::from(MSS)).with_handshake_round_trip(rtt, SimDuration::from_millis(10));
        assert_eq!(acked_at_once(&mut r, 0, 20, 0), 18);
        // 150 ms of silence is below the RTO: delayed ACKs as before.
        assert_eq!(acked_at_once(&mut r, 20, 24, 170), 2);
        // 300 ms is above it: 16 at once again.
        assert_eq!(acked_at_once(&mut r, 24, 40, 473), 16);
        assert!(r.on_segment(at(489), &data(40)).is_none());
    }

    #[test]
    fn duplicate_data_enters_the_mode() {
        let mut r = quick(64 * u64::from(MSS));
        assert_eq!(acked_at_once(&mut r, 0, 20, 0), 18);
        // A segment already delivered (a spurious retransmission): acked at once, and the
        // next 15 in-order segments too.
        assert!(r.on_segment(at(30), &data(3)).is_some());
        assert_eq!(acked_at_once(&mut r, 20, 35, 31), 15);
        assert!(r.on_segment(at(50), &data(35)).is_none());
    }

    #[test]
    fn a_listening_receiver_takes_its_rto_from_the_syn_ack() {
        let config = ReceiverConfig {
            options: options(true, false),
            receive_buffer_bytes: 64 * u64::from(MSS),
            delayed_ack: DelayedAck::On {
                timeout: SimDuration::from_millis(40),
                every_segments: 2,
                quick_ack: true,
            },
            ..ReceiverConfig::default()
        };
        let rtt = RttConfig {
            rule: super::super::rtt::RtoRule::Linux,
            min_rto: SimDuration::from_millis(200),
            ..RttConfig::default()
        };
        let mut r = Receiver::listen(&config, rtt);
        let syn = Segment {
            flags: Flags::SYN,
            options: Options {
                mss_bytes: Some(MSS as u16),
                sack_permitted: true,
                ..Options::default()
            },
            ..Segment::default()
        };
        assert!(r.on_segment(at(0), &syn).is_some());
        // The SYN-ACK answered after 500 ms: Linux's first sample makes this end's RTO
        // srtt + 2 srtt, 1.5 s.
        let first = Segment { ack: 0, ..data(0) };
        assert!(r.on_segment(at(500), &first).is_some(), "first data: quick");
        assert_eq!(acked_at_once(&mut r, 1, 20, 501), 17);
        // 600 ms of silence is under its RTO (the floor alone would have restarted the mode).
        assert!(r.on_segment(at(1120), &data(20)).is_none());
    }

    #[test]
    fn delayed_ack_timer_acks_a_lone_segment() {
        let mut r = receiver(DelayedAck::default());
        assert!(r.on_segment(at(10), &data(0)).is_none());
        assert_eq!(r.next_timeout(), Some(at(210)));
        assert!(r.on_timeout(at(209)).is_none());
        let ack = r.on_timeout(at(210)).unwrap();
        assert_eq!(ack.ack, u64::from(MSS));
        assert_eq!(r.stats().delayed_ack_timeouts, 1);
        assert_eq!(r.next_timeout(), None);
    }

    #[test]
    fn out_of_order_segment_is_acked_at_once_with_its_block_first() {
        let mut r = receiver(DelayedAck::default());
        assert!(r.on_segment(at(0), &data(0)).is_none());
        let ack = r.on_segment(at(1), &data(2)).expect("immediate dupack");
        assert_eq!(ack.ack, u64::from(MSS));
        assert_eq!(blocks(&ack), vec![(2, 3)]);
        let ack = r.on_segment(at(2), &data(5)).unwrap();
        assert_eq!(blocks(&ack), vec![(5, 6), (2, 3)], "most recent first");
        let ack = r.on_segment(at(3), &data(3)).unwrap();
        assert_eq!(blocks(&ack), vec![(2, 4), (5, 6)]);
    }

    #[test]
    fn gap_filling_segment_is_acked_at_once_and_pulls_in_held_ranges() {
        let mut r = receiver(DelayedAck::default());
        r.on_segment(at(0), &data(1));
        r.on_segment(at(0), &data(2));
        r.on_segment(at(0), &data(4));
        let ack = r.on_segment(at(1), &data(0)).expect("fills a gap");
        assert_eq!(ack.ack, 3 * u64::from(MSS));
        assert_eq!(blocks(&ack), vec![(4, 5)]);
        assert_eq!(r.delivered_bytes(), 3 * u64::from(MSS));
        let ack = r.on_segment(at(2), &data(3)).unwrap();
        assert_eq!(ack.ack, 5 * u64::from(MSS));
        assert!(ack.options.sack.is_empty());
    }

    #[test]
    fn at_most_three_blocks_beside_timestamps() {
        let mut r = receiver_with(ReceiverConfig {
            options: options(true, true),
            ..ReceiverConfig::default()
        });
        let mut last = None;
        for i in [1, 3, 5, 7, 9] {
            last = r.on_segment(at(i), &data(i));
        }
        let ack = last.unwrap();
        assert_eq!(blocks(&ack), vec![(9, 10), (7, 8), (5, 6)]);
        assert_eq!(ack.wire_bytes(), 80);
    }

    #[test]
    fn out_of_order_ranges_are_bounded() {
        let mut r = receiver_with(ReceiverConfig {
            options: options(true, false),
            max_ooo_ranges: 2,
            ..ReceiverConfig::default()
        });
        r.on_segment(at(0), &data(1));
        r.on_segment(at(0), &data(3));
        r.on_segment(at(0), &data(5));
        assert_eq!(r.stats().ooo_dropped_segments, 1);
        r.on_segment(at(0), &data(4));
        assert_eq!(
            r.ooo_ranges().collect::<Vec<_>>(),
            vec![(1000, 2000), (3000, 5000)]
        );
    }

    #[test]
    fn timestamp_echo_follows_the_left_edge() {
        let mut r = receiver_with(ReceiverConfig {
            options: options(true, true),
            delayed_ack: DelayedAck::default(),
            ..ReceiverConfig::default()
        });
        let with_ts = |mut s: Segment, tsval: u32| {
            s.options.timestamps = Some(Timestamps { tsval, tsecr: 0 });
            s
        };
        // Delayed ACK: the echo is the first unacknowledged segment's TSval.
        assert!(r.on_segment(at(0), &with_ts(data(0), 100)).is_none());
        let ack = r.on_segment(at(1), &with_ts(data(1), 101)).unwrap();
        assert_eq!(ack.options.timestamps.unwrap().tsecr, 100);
        // Out of order: not echoed; the ACK still echoes the last in-order segment.
        let ack = r.on_segment(at(2), &with_ts(data(3), 103)).unwrap();
        assert_eq!(ack.options.timestamps.unwrap().tsecr, 100);
        // The retransmission filling the hole is echoed, so its RTT is unambiguous.
        let ack = r.on_segment(at(3), &with_ts(data(2), 110)).unwrap();
        assert_eq!(ack.options.timestamps.unwrap().tsecr, 110);
    }

    #[test]
    fn window_above_64_kib_is_announced_scaled() {
        let r = receiver_with(ReceiverConfig {
            receive_buffer_bytes: 1 << 20,
            ..ReceiverConfig::default()
        });
        assert_eq!(r.window_bytes(), 1 << 20);
        let unscaled = receiver_with(ReceiverConfig {
            options: TcpOptions {
                window_scaling: false,
                ..TcpOptions::default()
            },
            receive_buffer_bytes: 1 << 20,
            ..ReceiverConfig::default()
        });
        assert_eq!(unscaled.window_bytes(), 65_535);
    }

    #[test]
    fn data_beyond_the_window_is_discarded() {
        let mut r = receiver_with(ReceiverConfig {
            options: TcpOptions {
                window_scaling: false,
                mss_bytes: MSS,
                ..TcpOptions::default()
            },
            receive_buffer_bytes: 2500,
            delayed_ack: DelayedAck::Off,
            ..ReceiverConfig::default()
        });
        r.on_segment(at(0), &data(0));
        r.on_segment(at(0), &data(1));
        r.on_segment(at(0), &data(2));
        assert_eq!(r.delivered_bytes(), 3000);
        let far = data(10);
        r.on_segment(at(0), &far);
        assert_eq!(r.stats().beyond_window_bytes, 1000);
        assert_eq!(r.ooo_ranges().count(), 0);
    }

    fn on_demand(buffer: u64) -> Receiver {
        receiver_with(ReceiverConfig {
            options: TcpOptions {
                window_scaling: false,
                ..options(true, false)
            },
            receive_buffer_bytes: buffer,
            delayed_ack: DelayedAck::Off,
            reads_on_demand: true,
            ..ReceiverConfig::default()
        })
    }

    #[test]
    fn unread_bytes_close_the_window_and_a_read_reopens_it() {
        let mut r = on_demand(4000);
        let mut edges = Vec::new();
        for n in 0..4 {
            let ack = r.on_segment(at(n), &data(n)).unwrap();
            edges.push(ack.ack + ack.window_bytes(0));
        }
        assert_eq!(r.unread_bytes(), 4000);
        assert_eq!(r.announced_window_bytes(), 0);
        assert!(
            edges.windows(2).all(|w| w[0] <= w[1]),
            "the edge never moves left"
        );
        // A fifth segment does not fit: discarded, answered with a zero window.
        let ack = r.on_segment(at(5), &data(4)).unwrap();
        assert_eq!((ack.ack, ack.window_bytes(0)), (4000, 0));
        assert_eq!(r.stats().beyond_window_bytes, 1000);
        // Reading less than min(buffer / 2, MSS) opens no window (receiver SWS avoidance).
        assert_eq!(r.read(500), 500);
        assert!(r.window_update(at(6)).is_none());
        assert_eq!(r.read(1500), 1500);
        let update = r.window_update(at(7)).expect("the window reopened");
        assert_eq!((update.ack, update.window_bytes(0)), (4000, 2000));
        assert_eq!(r.stats().window_updates, 1);
        assert_eq!(r.delivered_bytes(), 4000);
        assert_eq!(r.read_bytes(), 2000);
    }

    #[test]
    fn a_window_probe_is_answered_at_once() {
        let mut r = on_demand(2000);
        r.on_segment(at(0), &data(0));
        r.on_segment(at(1), &data(1));
        let probe = Segment {
            seq: 1999,
            flags: Flags::ACK,
            ..Segment::default()
        };
        let ack = r.on_segment(at(2), &probe).expect("answered");
        assert_eq!((ack.ack, ack.window_bytes(0)), (2000, 0));
        assert_eq!(r.stats().window_probes, 1);
    }

    #[test]
    fn an_application_that_reads_at_once_never_sends_window_updates() {
        let mut r = receiver(DelayedAck::Off);
        r.on_segment(at(0), &data(0));
        assert_eq!(r.unread_bytes(), 0);
        assert!(r.window_update(at(1)).is_none());
    }

    #[test]
    fn with_window_scaling_the_announced_edge_never_moves_left() {
        // 300 kB of buffer needs a scale of 3: the field counts 8-byte units.
        let mut r = receiver_with(ReceiverConfig {
            options: options(true, false),
            receive_buffer_bytes: 300_000,
            delayed_ack: DelayedAck::Off,
            reads_on_demand: true,
            ..ReceiverConfig::default()
        });
        let shift = 3;
        let mut last_edge = 300_000;
        let mut closed = false;
        for n in 0..500u64 {
            let seg = data(n);
            let before = r.rcv_nxt();
            let ack = r.on_segment(at(n), &seg).unwrap();
            if seg.seq == before && seg.end_seq() <= last_edge {
                assert_eq!(
                    r.rcv_nxt(),
                    seg.end_seq(),
                    "segment {n} inside the announced edge"
                );
            }
            closed |= r.rcv_nxt() == before;
            let edge = ack.ack + ack.window_bytes(shift);
            assert!(edge >= last_edge, "segment {n}: edge {edge} < {last_edge}");
            last_edge = edge;
            if n % 3 == 0 {
                r.read(777);
            }
        }
        assert!(closed, "the window closed at some point");
    }
}
