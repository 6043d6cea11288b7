//! farlink's TCP sender on a real network: the simulator's [`Sender`] (the same error
//! control, loss detection, loss recovery and congestion controllers) speaking TCP/IPv4 to an
//! unmodified peer, sans-I/O.
//!
//! Read first: RFC 9293 sections 3.5 (the handshake; a RST answering a SYN), 3.6 (closing),
//! 3.10.7 (segment arrival: the acceptability test, RST, the ACK field); RFC 5961 section 3
//! (a RST is taken only at exactly `RCV.NXT`, else a challenge ACK); RFC 2883 (D-SACK: a first
//! block below the cumulative ACK, or inside the second block, reports a duplicate); RFC 1122
//! 4.2.3.9 (ICMP destination unreachable: codes 2 and 3 are hard errors, 0, 1 and 5 soft);
//! then `wire.rs` and `sender.rs`.
//!
//! What this adds to the sender, and nothing more: real sequence numbers (an ISN; the
//! sender's unwrapped numbers from the first data byte map onto the wire by `wire.rs`), the
//! peer's sequence space (it sends nothing but its SYN and FIN, yet every segment
//! acknowledges them), the bytes of the payload (a [`PayloadStream`], so the receiver's digest
//! checks them end to end), the close (FIN once every byte is acknowledged, retransmitted on
//! its own timer; the peer's FIN acknowledged), and the peer's ACKs turned into the segments
//! [`Sender::on_ack`] takes: the cumulative ACK and SACK edges unwrapped, D-SACK blocks
//! counted and left out (the scoreboard has nothing to learn from a duplicate), the window
//! field passed raw (the sender scales it by the shift the SYN-ACK gave). A RST, or a hard
//! ICMP unreachable, ends the connection with a [`WireError`]; segments outside the window
//! are answered with an ACK and otherwise ignored.
//!
//! Time is what the caller says it is: the emulator's real-time driver passes the wall clock,
//! a test its own instants. Nothing here reads a clock or touches a socket.

use super::payload::PayloadStream;
use super::segment::{
    timestamp_clock, Flags, Options, SackBlock, SackBlocks, Segment, Timestamps, MAX_SACK_BLOCKS,
};
use super::sender::{Sender, SenderConfig};
use super::wire::{
    encode_tcp, parse, segment_options, unwrap_seq, wire_ack, Packet, Quoted, TcpHeader,
};
use super::State;
use crate::pcap::Endpoints;
use crate::time::{SimDuration, SimTime};

/// The window this end announces: it receives nothing but the peer's FIN, and offers no
/// scaling beyond shift 0 (`handshake::syn`).
pub const RECEIVE_WINDOW_BYTES: u64 = u16::MAX as u64;

/// FIN transmissions before the close is given up (Linux's `tcp_orphan_retries` is 8; the
/// data's own timer has no such bound, the run's duration bounds it).
pub const MAX_FIN_TRANSMISSIONS: u32 = 9;

/// How a connection on the wire ended badly.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("connection refused by {peer}: RST in answer to the SYN (nothing listens there)")]
    Refused { peer: String },
    #[error("connection reset by {peer}")]
    Reset { peer: String },
    #[error("{peer} unreachable: ICMP destination unreachable ({reason}) from {from}")]
    Unreachable {
        peer: String,
        reason: String,
        from: String,
    },
    #[error("the FIN to {peer} was not acknowledged after {tries} transmissions")]
    CloseTimeout { peer: String, tries: u32 },
}

/// What the connection counted on the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WireStats {
    pub packets_sent: u64,
    pub packets_received: u64,
    /// Packets for another connection (other addresses or ports), or neither TCP nor ICMP.
    pub not_ours: u64,
    /// Packets the parser refused (checksums, lengths).
    pub malformed: u64,
    /// Segments outside the receive window, or acknowledging what was never sent.
    pub out_of_window: u64,
    /// D-SACK blocks (RFC 2883) the peer reported.
    pub dsack_blocks: u64,
    /// ICMP destination unreachable taken as a soft error.
    pub soft_errors: u64,
    pub fin_transmissions: u64,
    /// ACKs sent on their own (the peer's FIN, out-of-window segments, challenge ACKs).
    pub pure_acks_sent: u64,
    /// Data the peer sent, acknowledged and dropped.
    pub peer_payload_bytes: u64,
}

/// How one connection is set up.
#[derive(Clone, Copy, Debug)]
pub struct WireClientConfig {
    /// The sender: options offered, controller, recovery, RTO bounds, the application.
    pub sender: SenderConfig,
    /// This end is `src`, the listener `dst`.
    pub endpoints: Endpoints,
    pub isn: u32,
    /// Seed of the payload's byte stream.
    pub payload_seed: u64,
    /// When the SYN leaves.
    pub start: SimTime,
    /// When an unbounded source stops writing (its stream then ends and closes).
    pub stop: Option<SimTime>,
}

/// The close of the sending side.
#[derive(Clone, Copy, Debug, Default)]
struct Fin {
    transmissions: u32,
    deadline: Option<SimTime>,
    rto: SimDuration,
    due: bool,
    acked: bool,
}

/// One connection to a listener, client side.
#[derive(Debug)]
pub struct WireClient {
    sender: Sender,
    endpoints: Endpoints,
    isn: u32,
    peer_isn: Option<u32>,
    /// `RCV.NXT`, counted from the peer's first data byte.
    rcv_nxt: u64,
    payload: PayloadStream,
    scratch: Vec<u8>,
    start: SimTime,
    started: bool,
    stop: Option<SimTime>,
    fin: Fin,
    peer_fin: bool,
    ack_due: bool,
    /// The peer's last TSval, echoed by the segments sent here (the sender keeps its own).
    ts_recent: u32,
    error: Option<WireError>,
    ip_id: u16,
    established_at: Option<SimTime>,
    first_data_at: Option<SimTime>,
    stats: WireStats,
}

fn addr(ip: [u8; 4], port: u16) -> String {
    let [a, b, c, d] = ip;
    format!("{a}.{b}.{c}.{d}:{port}")
}

/// RFC 792 destination-unreachable codes, and whether RFC 1122 4.2.3.9 makes them fatal to an
/// established connection (2, 3) or only to one still opening (the rest, "soft" errors that
/// may pass). 9, 10 and 13 (administratively prohibited) are fatal too, as in Linux.
fn unreachable_code(code: u8) -> (&'static str, bool) {
    match code {
        0 => ("network unreachable", false),
        1 => ("host unreachable", false),
        2 => ("protocol unreachable", true),
        3 => ("port unreachable", true),
        4 => ("fragmentation needed", false),
        5 => ("source route failed", false),
        9 | 10 => ("administratively prohibited", true),
        13 => ("communication administratively prohibited", true),
        _ => ("other", false),
    }
}

impl WireClient {
    pub fn new(config: &WireClientConfig) -> Self {
        let sender = Sender::connect(&config.sender);
        WireClient {
            sender,
            endpoints: config.endpoints,
            isn: config.isn,
            peer_isn: None,
            rcv_nxt: 0,
            payload: PayloadStream::new(config.payload_seed),
            scratch: vec![0; config.sender.options.mss_bytes as usize],
            start: config.start,
            started: false,
            stop: config.stop,
            fin: Fin::default(),
            peer_fin: false,
            ack_due: false,
            ts_recent: 0,
            error: None,
            ip_id: 0,
            established_at: None,
            first_data_at: None,
            stats: WireStats::default(),
        }
    }

    pub fn sender(&self) -> &Sender {
        &self.sender
    }
    pub fn stats(&self) -> &WireStats {
        &self.stats
    }
    pub fn error(&self) -> Option<&WireError> {
        self.error.as_ref()
    }
    pub fn endpoints(&self) -> &Endpoints {
        &self.endpoints
    }
    /// When the SYN-ACK arrived.
    pub fn established_at(&self) -> Option<SimTime> {
        self.established_at
    }
    /// When the first data segment left.
    pub fn first_data_at(&self) -> Option<SimTime> {
        self.first_data_at
    }
    pub fn peer(&self) -> String {
        addr(self.endpoints.dst_ip, self.endpoints.dst_port)
    }

    /// The RFC 9293 state of the connection.
    pub fn state(&self) -> State {
        if self.error.is_some() {
            return State::Closed;
        }
        match (self.sender.state(), self.fin.transmissions > 0) {
            (State::Established, false) if self.peer_fin => State::CloseWait,
            (State::Established, false) => State::Established,
            (State::Established, true) => match (self.fin.acked, self.peer_fin) {
                (false, false) => State::FinWait1,
                (false, true) => State::Closing,
                (true, false) => State::FinWait2,
                (true, true) => State::TimeWait,
            },
            (s, _) => s,
        }
    }

    /// Both sides closed and the peer's FIN acknowledged, or the connection failed.
    pub fn is_finished(&self) -> bool {
        self.error.is_some() || (self.state() == State::TimeWait && !self.ack_due)
    }

    /// Bytes the application hands over (the transfer's size once known).
    pub fn app_bytes(&self) -> Option<u64> {
        self.sender.app_limit_bytes()
    }

    /// The earliest instant the connection wants to be called again.
    pub fn next_wakeup(&self) -> Option<SimTime> {
        if self.is_finished() {
            return None;
        }
        if !self.started {
            return Some(self.start);
        }
        [
            self.sender.next_wakeup(),
            self.fin.deadline.filter(|_| !self.fin.acked),
            self.stop
                .filter(|_| self.sender.app_limit_bytes().is_none()),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Timers due at `now`: the sender's, the FIN's.
    pub fn on_timeout(&mut self, now: SimTime) {
        if self.is_finished() {
            return;
        }
        self.sender.on_timeout(now);
        if let Some(d) = self.fin.deadline {
            if now >= d && !self.fin.acked {
                if self.fin.transmissions >= MAX_FIN_TRANSMISSIONS {
                    self.error = Some(WireError::CloseTimeout {
                        peer: self.peer(),
                        tries: self.fin.transmissions,
                    });
                    return;
                }
                self.fin.due = true;
                self.fin.deadline = None;
            }
        }
    }

    fn next_ip_id(&mut self) -> u16 {
        let id = self.ip_id;
        self.ip_id = self.ip_id.wrapping_add(1);
        id
    }

    /// The next packet to send at `now`, written into `buf` (room for the MSS and 60 bytes of
    /// headers); its length. Call until `None`.
    pub fn poll_transmit(&mut self, now: SimTime, buf: &mut [u8]) -> Option<usize> {
        if self.is_finished() || now < self.start {
            return None;
        }
        self.started = true;
        if self.stop.is_some_and(|s| now >= s) && self.sender.app_limit_bytes().is_none() {
            self.sender.end_of_data();
        }
        if self.ack_due && self.peer_isn.is_some() {
            self.ack_due = false;
            self.stats.pure_acks_sent += 1;
            let seq = self.sender.snd_max() + u64::from(self.fin.transmissions > 0);
            return self.emit_control(now, buf, seq, Flags::ACK);
        }
        if let Some(t) = self.sender.poll_transmit(now) {
            if t.kind.carries_data() {
                self.first_data_at.get_or_insert(now);
            }
            return self.emit(buf, &t.segment);
        }
        if self.sender.state() != State::Established || !self.sender.is_complete() {
            return None;
        }
        // Every byte acknowledged: close (RFC 9293 3.6), once, then again on the FIN's timer.
        if self.fin.transmissions == 0 || self.fin.due {
            let rto = self.sender.rtt().rto();
            self.fin.rto = if self.fin.transmissions == 0 {
                rto
            } else {
                let max = self.sender.rtt().config().max_rto;
                (self.fin.rto + self.fin.rto).min(max.max(rto))
            };
            self.fin.due = false;
            self.fin.transmissions += 1;
            self.fin.deadline = Some(now + self.fin.rto);
            self.stats.fin_transmissions += 1;
            let seq = self.sender.snd_max();
            return self.emit_control(now, buf, seq, Flags::FIN | Flags::ACK);
        }
        None
    }

    /// A segment without data: an ACK, or the FIN.
    fn emit_control(
        &mut self,
        now: SimTime,
        buf: &mut [u8],
        seq: u64,
        flags: Flags,
    ) -> Option<usize> {
        let negotiated = *self.sender.negotiated();
        let seg = Segment {
            ecn: Default::default(),
            ace: 0,
            seq,
            ack: 0,
            flags,
            payload_bytes: 0,
            window_field: u16::MAX,
            options: Options {
                timestamps: negotiated.timestamps.then(|| Timestamps {
                    tsval: timestamp_clock(now),
                    tsecr: self.ts_recent,
                }),
                ..Options::default()
            },
        };
        self.emit(buf, &seg)
    }

    /// Encodes `seg` (the sender's numbering) into `buf` with this end's ISN, acknowledging
    /// `RCV.NXT` when it carries ACK.
    fn emit(&mut self, buf: &mut [u8], seg: &Segment) -> Option<usize> {
        let peer_isn = self.peer_isn.unwrap_or(0);
        let mut hdr = TcpHeader::from_segment(
            seg,
            self.endpoints.src_port,
            self.endpoints.dst_port,
            self.isn,
            peer_isn,
        );
        if seg.flags.contains(Flags::ACK) {
            hdr.ack = wire_ack(peer_isn, self.rcv_nxt);
        }
        let len = seg.payload_bytes as usize;
        if self.scratch.len() < len {
            self.scratch.resize(len, 0);
        }
        self.payload.fill(seg.seq, &mut self.scratch[..len]);
        let id = self.next_ip_id();
        let n = encode_tcp(
            buf,
            self.endpoints.src_ip,
            self.endpoints.dst_ip,
            id,
            &hdr,
            &self.scratch[..len],
        )
        .ok()?;
        self.stats.packets_sent += 1;
        Some(n)
    }

    /// A packet arrived for this end's address at `now`.
    pub fn on_packet(&mut self, now: SimTime, bytes: &[u8]) {
        self.stats.packets_received += 1;
        if self.error.is_some() {
            return;
        }
        let packet = match parse(bytes) {
            Ok(p) => p,
            Err(_) => {
                self.stats.malformed += 1;
                return;
            }
        };
        let ep = self.endpoints;
        match packet {
            Packet::Tcp { ip, tcp, payload }
                if ip.src == ep.dst_ip
                    && ip.dst == ep.src_ip
                    && tcp.src_port == ep.dst_port
                    && tcp.dst_port == ep.src_port =>
            {
                self.on_segment(now, &tcp, payload.len() as u64);
            }
            Packet::Unreachable { ip, code, quoted } if self.quotes_us(&quoted) => {
                let (reason, hard) = unreachable_code(code);
                if hard || self.sender.state() == State::SynSent {
                    self.error = Some(WireError::Unreachable {
                        peer: quoted.to_string(),
                        reason: format!("code {code}, {reason}"),
                        from: addr(ip.src, 0).trim_end_matches(":0").to_owned(),
                    });
                } else {
                    self.stats.soft_errors += 1;
                }
            }
            _ => self.stats.not_ours += 1,
        }
    }

    fn quotes_us(&self, q: &Quoted) -> bool {
        let ep = &self.endpoints;
        q.src == ep.src_ip
            && q.dst == ep.dst_ip
            && q.src_port == ep.src_port
            && q.dst_port == ep.dst_port
    }

    fn on_segment(&mut self, now: SimTime, tcp: &TcpHeader, payload_len: u64) {
        let flags = tcp.flags();
        let Some(peer_isn) = self.peer_isn else {
            return self.on_segment_syn_sent(now, tcp, flags);
        };
        // RFC 9293 3.10.7.4, first check: the sequence number. The peer's numbers, from its
        // first data byte; only its SYN (at -1) has none.
        let seq = unwrap_seq(self.rcv_nxt, peer_isn, tcp.seq);
        if flags.contains(Flags::SYN) {
            // The SYN-ACK again: our ACK of it was lost. The sender answers it.
            if flags.contains(Flags::ACK) && tcp.seq == peer_isn {
                self.sender.on_ack(now, &self.syn_ack_segment(tcp));
                self.ack_due = true;
            } else {
                self.stats.out_of_window += 1;
            }
            return;
        }
        let acceptable = seq.is_some_and(|s| {
            let wnd_end = self.rcv_nxt + RECEIVE_WINDOW_BYTES;
            if payload_len == 0 {
                s >= self.rcv_nxt && s < wnd_end
            } else {
                s < wnd_end && s + payload_len > self.rcv_nxt
            }
        });
        if flags.contains(Flags::RST) {
            // RFC 5961 3.2: only a RST at exactly RCV.NXT resets; one elsewhere in the window
            // gets a challenge ACK, one outside it nothing.
            if seq == Some(self.rcv_nxt) {
                self.error = Some(WireError::Reset { peer: self.peer() });
            } else if acceptable {
                self.ack_due = true;
            } else {
                self.stats.out_of_window += 1;
            }
            return;
        }
        if !acceptable {
            // "If an incoming segment is not acceptable, an acknowledgment should be sent in
            // reply (unless the RST bit is set ...)".
            self.stats.out_of_window += 1;
            self.ack_due = true;
            return;
        }
        if !flags.contains(Flags::ACK) {
            return;
        }
        let fin_sent = self.fin.transmissions > 0;
        let snd_max = self.sender.snd_max();
        let Some(ack) = unwrap_seq(self.sender.snd_una(), self.isn, tcp.ack)
            .filter(|&a| a <= snd_max + u64::from(fin_sent))
        else {
            // "If the ACK acks something not yet sent (SEG.ACK > SND.NXT) then send an ACK,
            // drop the segment, and return."
            self.stats.out_of_window += 1;
            self.ack_due = true;
            return;
        };
        if fin_sent && ack == snd_max + 1 {
            self.fin.acked = true;
            self.fin.deadline = None;
        }
        let seg = self.ack_segment(tcp, ack.min(snd_max), payload_len, flags);
        self.sender.on_ack(now, &seg);
        // Data from the peer (none from a sink): acknowledged in order and dropped.
        let mut end = seq.unwrap_or(self.rcv_nxt);
        if payload_len > 0 {
            if end <= self.rcv_nxt && end + payload_len > self.rcv_nxt {
                self.stats.peer_payload_bytes += end + payload_len - self.rcv_nxt;
                self.rcv_nxt = end + payload_len;
            }
            self.ack_due = true;
            end += payload_len;
        }
        if flags.contains(Flags::FIN) && end == self.rcv_nxt && !self.peer_fin {
            self.rcv_nxt += 1;
            self.peer_fin = true;
            self.ack_due = true;
        }
    }

    fn on_segment_syn_sent(&mut self, now: SimTime, tcp: &TcpHeader, flags: Flags) {
        // RFC 9293 3.10.7.3: an ACK that does not acknowledge our SYN is unacceptable.
        if flags.contains(Flags::ACK) && tcp.ack != self.isn.wrapping_add(1) {
            self.stats.out_of_window += 1;
            return;
        }
        if flags.contains(Flags::RST) {
            if flags.contains(Flags::ACK) {
                self.error = Some(WireError::Refused { peer: self.peer() });
            }
            return;
        }
        if flags.contains(Flags::SYN | Flags::ACK) && self.sender.state() == State::SynSent {
            self.peer_isn = Some(tcp.seq);
            self.rcv_nxt = 0;
            self.sender.on_ack(now, &self.syn_ack_segment(tcp));
            self.ts_recent_from(tcp);
            self.established_at = Some(now);
        }
    }

    fn ts_recent_from(&mut self, tcp: &TcpHeader) {
        if let Some(ts) = tcp.options.timestamps {
            self.ts_recent = ts.tsval;
        }
    }

    /// The SYN-ACK in the sender's numbering: both first data bytes are 0.
    fn syn_ack_segment(&self, tcp: &TcpHeader) -> Segment {
        Segment {
            ecn: Default::default(),
            ace: 0,
            seq: 0,
            ack: 0,
            flags: Flags::SYN | Flags::ACK,
            payload_bytes: 0,
            window_field: tcp.window,
            options: segment_options(&tcp.options),
        }
    }

    /// An ACK in the sender's numbering: the cumulative ACK `ack`, the SACK blocks unwrapped
    /// with a D-SACK block left out (and counted).
    fn ack_segment(
        &mut self,
        tcp: &TcpHeader,
        ack: u64,
        payload_len: u64,
        flags: Flags,
    ) -> Segment {
        self.ts_recent_from(tcp);
        let snd_una = self.sender.snd_una();
        let snd_max = self.sender.snd_max();
        let isn = self.isn;
        // Unwrapped, in a fixed array: nothing is allocated per ACK.
        let mut blocks = [(0u64, 0u64); MAX_SACK_BLOCKS];
        let mut n = 0;
        for b in tcp.options.sack() {
            if let (Some(l), Some(r)) = (
                unwrap_seq(snd_una, isn, b.left),
                unwrap_seq(snd_una, isn, b.right),
            ) {
                if l < r {
                    blocks[n] = (l, r);
                    n += 1;
                }
            }
        }
        let blocks = &blocks[..n];
        // RFC 2883 section 4: the first block is a D-SACK when it lies below the cumulative
        // ACK or inside the second block.
        let dsack = blocks.first().is_some_and(|&(l, r)| {
            r <= ack || blocks.get(1).is_some_and(|&(l2, r2)| l >= l2 && r <= r2)
        });
        if dsack {
            self.stats.dsack_blocks += 1;
        }
        let mut sack = SackBlocks::default();
        for (i, &(left, right)) in blocks.iter().enumerate() {
            // Past SND.MAX a block reports what was never sent: not believed.
            if (i == 0 && dsack) || right > snd_max {
                continue;
            }
            sack.push(SackBlock { left, right });
        }
        let mut options = segment_options(&tcp.options);
        options.mss_bytes = None;
        options.window_shift = None;
        options.sack_permitted = false;
        options.sack = sack;
        Segment {
            ecn: Default::default(),
            ace: 0,
            seq: 0,
            ack,
            flags: Flags::from_bits(flags.bits() & (Flags::ACK | Flags::FIN).bits()),
            payload_bytes: payload_len as u32,
            window_field: tcp.window,
            options,
        }
    }
}
