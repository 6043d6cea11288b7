//! Sans-I/O TCP for the packet-level simulator: a data sender and a data receiver.
//!
//! Read first:
//! - RFC 793 / RFC 9293 (sequence space, `SND.UNA`, `SND.NXT`, window update rules, state names),
//! - RFC 1122 4.2.3.2 (delayed ACK), RFC 5681 (congestion control, duplicate ACKs, fast
//!   retransmit and fast recovery), RFC 6582 (NewReno), RFC 2018 and RFC 6675 (SACK and
//!   SACK-based loss recovery), RFC 6298 (retransmission timer), RFC 7323 (window scaling and
//!   timestamps), RFC 3465 (appropriate byte counting), RFC 6928 (initial window),
//!   RFC 6691 (MSS and options).
//!
//! What this layer owns, in roles that never reach into one another (the seam of the
//! design; see `README.md` in this directory):
//! - error control: [`sender::Sender`] owns the send sequence space, the [`scoreboard`] and the
//!   retransmission timer with the [`rtt::RttEstimator`]; [`receiver::Receiver`] owns in-order
//!   delivery, the out-of-order ranges, delayed ACK, SACK blocks and timestamp echo;
//! - loss detection: [`detection::LossDetector`] says what an ACK or a timeout told the sender
//!   (acknowledged, SACKed, lost, duplicate, RTT sample) as an [`detection::AckOutcome`];
//! - loss recovery: [`recovery::Recovery`] decides *that* the sender enters or leaves recovery
//!   and *what* to retransmit (Tahoe, Reno, NewReno, SACK);
//! - congestion control: a [`cc::CongestionController`] decides the window; it is handed
//!   read-only views and returns its decisions, it never touches sender state.
//!
//! Nothing here reads a clock or does I/O: every entry point takes `now`, outputs are returned
//! segments, and each endpoint reports the next instant it wants to be woken
//! (`next_timeout()`).
//!
//! Sequence numbers are unwrapped `u64` byte offsets of the connection, counted from the first
//! data byte (0). A pcap writer maps them to the 32-bit wire field as `isn + 1 + seq` modulo
//! 2^32; nothing inside the simulator needs modular sequence arithmetic.

pub mod cc;
pub mod detection;
pub mod ecn;
pub mod gso;
pub mod handshake;
pub mod limits;
pub mod pacer;
pub mod payload;
pub mod prr;
pub mod rack;
pub mod receiver;
pub mod recovery;
pub mod rtt;
pub mod scoreboard;
pub mod segment;
pub mod sender;
pub mod timers;
pub mod wire;
pub mod wire_client;

use std::fmt;

/// The connection states of RFC 793 section 3.2 (RFC 9293 3.3.2), spelled as the RFC spells them
/// in `Display`.
///
/// Endpoints built with `Sender::new` / `Receiver::new` start in [`State::Established`] from a
/// [`Negotiated`] value the engine computed ([`Negotiated::without_handshake`]); built with
/// `Sender::connect` / `Receiver::listen` they go through the three-way handshake
/// (`SynSent`, `Listen`, `SynReceived`; [`handshake`]) and agree on the [`Negotiated`] value
/// from the options the SYN and SYN-ACK carry. The close is not simulated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    Closed,
    Listen,
    SynSent,
    SynReceived,
    Established,
    FinWait1,
    FinWait2,
    CloseWait,
    Closing,
    LastAck,
    TimeWait,
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            State::Closed => "CLOSED",
            State::Listen => "LISTEN",
            State::SynSent => "SYN-SENT",
            State::SynReceived => "SYN-RECEIVED",
            State::Established => "ESTABLISHED",
            State::FinWait1 => "FIN-WAIT-1",
            State::FinWait2 => "FIN-WAIT-2",
            State::CloseWait => "CLOSE-WAIT",
            State::Closing => "CLOSING",
            State::LastAck => "LAST-ACK",
            State::TimeWait => "TIME-WAIT",
        })
    }
}

/// The TCP options one endpoint offers in its SYN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpOptions {
    /// The MSS option value: the largest segment payload this end accepts, options excluded
    /// (RFC 879, RFC 6691). 1460 = an Ethernet MTU of 1500 less 20 + 20 bytes of headers.
    pub mss_bytes: u32,
    /// SACK-permitted option (RFC 2018 section 2).
    pub sack: bool,
    /// Timestamps option (RFC 7323 section 3).
    pub timestamps: bool,
    /// Window scale option (RFC 7323 section 2).
    pub window_scaling: bool,
}

impl Default for TcpOptions {
    /// What Linux and ns-3 offer by default: SACK, timestamps and window scaling.
    fn default() -> Self {
        TcpOptions {
            mss_bytes: 1460,
            sack: true,
            timestamps: true,
            window_scaling: true,
        }
    }
}

/// The outcome of the three-way handshake for the data direction (sender → receiver): what both
/// ends agreed on. Both endpoints are built from the same value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Negotiated {
    /// min of both MSS options (RFC 9293 3.7.1).
    pub mss_bytes: u32,
    /// Both offered SACK-permitted (RFC 2018 section 2).
    pub sack: bool,
    /// Both sent the timestamps option on their SYN (RFC 7323 section 3.2).
    pub timestamps: bool,
    /// `Rcv.Wind.Shift` of the data receiver = `Snd.Wind.Shift` of the data sender
    /// (RFC 7323 section 2.2); 0 when either side did not offer window scaling.
    pub window_shift: u8,
    /// The receive window the data receiver announced in its SYN-ACK, in bytes (unscaled, as
    /// RFC 7323 2.2 requires for SYN segments).
    pub initial_peer_window_bytes: u64,
}

/// RFC 7323 section 2.3: the shift count is at most 14.
pub const MAX_WINDOW_SHIFT: u8 = 14;

impl Negotiated {
    /// The handshake skipped: compute what a SYN / SYN-ACK exchange between these two ends would
    /// have agreed. `receive_buffer_bytes` is the data receiver's buffer, from which it picks
    /// its window shift (RFC 7323 section 2.3: the smallest shift that lets the buffer be
    /// announced).
    pub fn without_handshake(
        sender: &TcpOptions,
        receiver: &TcpOptions,
        receive_buffer_bytes: u64,
    ) -> Negotiated {
        let window_shift = if sender.window_scaling && receiver.window_scaling {
            window_shift_for(receive_buffer_bytes)
        } else {
            0
        };
        Negotiated {
            mss_bytes: sender.mss_bytes.min(receiver.mss_bytes),
            sack: sender.sack && receiver.sack,
            timestamps: sender.timestamps && receiver.timestamps,
            window_shift,
            initial_peer_window_bytes: receive_buffer_bytes.min(u64::from(u16::MAX)),
        }
    }

    /// SMSS, the payload of a full-sized data segment: the MSS less the options every data
    /// segment carries (RFC 6691 section 2; with timestamps 1460 − 12 = 1448, as in Linux).
    pub fn smss_bytes(&self) -> u32 {
        let per_segment_options = if self.timestamps {
            segment::TIMESTAMPS_OPTION_BYTES
        } else {
            0
        };
        self.mss_bytes - per_segment_options
    }
}

/// RFC 7323 section 2.3: the smallest shift that lets a receive buffer of this size be announced
/// in the 16-bit window field, at most [`MAX_WINDOW_SHIFT`].
pub fn window_shift_for(receive_buffer_bytes: u64) -> u8 {
    let mut shift = 0u8;
    while shift < MAX_WINDOW_SHIFT && (receive_buffer_bytes >> shift) > u64::from(u16::MAX) {
        shift += 1;
    }
    shift
}

/// A lower-case algorithm name that matches nothing known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownName {
    /// What was being named, e.g. "loss recovery".
    pub what: &'static str,
    /// The name given.
    pub name: String,
    /// The names accepted.
    pub expected: &'static [&'static str],
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown {} \"{}\"; expected one of: {}",
            self.what,
            self.name,
            self.expected.join(", ")
        )
    }
}

impl std::error::Error for UnknownName {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_shift_is_the_smallest_that_fits_the_buffer() {
        let opts = TcpOptions::default();
        assert_eq!(
            Negotiated::without_handshake(&opts, &opts, 65_535).window_shift,
            0
        );
        assert_eq!(
            Negotiated::without_handshake(&opts, &opts, 65_536).window_shift,
            1
        );
        assert_eq!(
            Negotiated::without_handshake(&opts, &opts, 1 << 20).window_shift,
            5
        );
        assert_eq!(
            Negotiated::without_handshake(&opts, &opts, 1 << 40).window_shift,
            MAX_WINDOW_SHIFT
        );
    }

    #[test]
    fn options_need_both_ends() {
        let a = TcpOptions::default();
        let b = TcpOptions {
            mss_bytes: 536,
            sack: false,
            timestamps: false,
            window_scaling: false,
        };
        let n = Negotiated::without_handshake(&a, &b, 1 << 20);
        assert_eq!(n.mss_bytes, 536);
        assert!(!n.sack && !n.timestamps);
        assert_eq!(n.window_shift, 0);
        assert_eq!(n.smss_bytes(), 536);
        let n = Negotiated::without_handshake(&a, &a, 1 << 20);
        assert_eq!(n.smss_bytes(), 1448);
    }

    #[test]
    fn state_displays_rfc_spelling() {
        assert_eq!(State::SynSent.to_string(), "SYN-SENT");
        assert_eq!(State::Established.to_string(), "ESTABLISHED");
    }
}
