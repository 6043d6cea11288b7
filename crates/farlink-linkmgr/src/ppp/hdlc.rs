//! RFC 1662 HDLC-like framing for asynchronous serial links: the encoder, a streaming decoder
//! with a bounded buffer, and the address/control/protocol fields of RFC 1661 section 2.
//!
//! Read first: RFC 1662 sections 3 (frame format, flag sequence, abort), 4 (octet-stuffed
//! framing: the control escape 0x7D, the flag 0x7E and the Async-Control-Character-Map), and
//! appendix C (the FCS); RFC 1661 sections 2 (protocol field), 6.5 and 6.6 (protocol and
//! address-and-control field compression, never applied to LCP).
//!
//! ```text
//!  7E | FF 03 | protocol (1-2) | information | FCS (2 or 4) | 7E
//!       ^ omitted with ACFC  ^ 1 octet with PFC when < 0x100
//!  between the flags: 7E, 7D and every control character in the ACCM sent as 7D, octet ^ 0x20
//! ```
//!
//! The decoder takes whatever chunks a serial port hands over and calls back with each frame
//! (its content between address and FCS, FCS checked) or what was wrong with it. Its buffer is
//! allocated once, sized by the MRU it is given; a longer frame is counted and discarded to the
//! next flag, so input never makes it grow.

use thiserror::Error;

use super::fcs::{
    fcs16_trailer, fcs16_update, fcs32_trailer, fcs32_update, FCS16_GOOD, FCS16_INIT, FCS32_GOOD,
    FCS32_INIT,
};

pub const FLAG: u8 = 0x7e;
pub const ESCAPE: u8 = 0x7d;
pub const ALL_STATIONS: u8 = 0xff;
pub const UI: u8 = 0x03;
/// The Async-Control-Character-Map before LCP has negotiated one: every control character
/// escaped (RFC 1662 section 7.1).
pub const DEFAULT_ACCM: u32 = 0xffff_ffff;
/// The default Maximum-Receive-Unit (RFC 1661 section 6.1).
pub const DEFAULT_MRU: usize = 1500;
/// Largest header (address, control, two protocol octets) plus the largest FCS.
pub const MAX_OVERHEAD: usize = 4 + 4;
/// LCP's protocol number; its frames never use ACFC or PFC (RFC 1661 section 6.5, 6.6).
pub const PROTO_LCP: u16 = 0xc021;

/// Which frame check sequence a direction uses (RFC 1570's FCS-Alternatives select FCS-32).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FcsKind {
    #[default]
    Fcs16,
    Fcs32,
}

impl FcsKind {
    pub fn octets(self) -> usize {
        match self {
            FcsKind::Fcs16 => 2,
            FcsKind::Fcs32 => 4,
        }
    }
}

/// How the sending direction frames (what the peer acknowledged it can receive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxOptions {
    /// Control characters (bit n: octet n) the peer asked us to escape.
    pub accm: u32,
    /// Address-and-Control-Field-Compression: omit FF 03.
    pub acfc: bool,
    /// Protocol-Field-Compression: one octet for protocols below 0x100.
    pub pfc: bool,
    pub fcs: FcsKind,
}

impl Default for TxOptions {
    fn default() -> Self {
        TxOptions {
            accm: DEFAULT_ACCM,
            acfc: false,
            pfc: false,
            fcs: FcsKind::Fcs16,
        }
    }
}

fn needs_escape(b: u8, accm: u32) -> bool {
    b == FLAG || b == ESCAPE || (b < 0x20 && accm & (1u32 << b) != 0)
}

fn push_stuffed(out: &mut Vec<u8>, bytes: &[u8], accm: u32) {
    for &b in bytes {
        if needs_escape(b, accm) {
            out.push(ESCAPE);
            out.push(b ^ 0x20);
        } else {
            out.push(b);
        }
    }
}

/// The unstuffed frame content (address to end of information, no FCS) for `protocol` and
/// `info`, appended to `out`.
pub fn frame_content(opts: &TxOptions, protocol: u16, info: &[u8], out: &mut Vec<u8>) {
    let lcp = protocol == PROTO_LCP;
    if !opts.acfc || lcp {
        out.extend_from_slice(&[ALL_STATIONS, UI]);
    }
    if opts.pfc && !lcp && protocol < 0x100 {
        out.push(protocol as u8);
    } else {
        out.extend_from_slice(&protocol.to_be_bytes());
    }
    out.extend_from_slice(info);
}

/// Appends the frame carrying `info` as `protocol` to `out`, flags, stuffing and FCS included.
/// `scratch` is reused between calls to avoid allocating per frame.
pub fn encode_frame(
    opts: &TxOptions,
    protocol: u16,
    info: &[u8],
    scratch: &mut Vec<u8>,
    out: &mut Vec<u8>,
) {
    scratch.clear();
    frame_content(opts, protocol, info, scratch);
    out.push(FLAG);
    push_stuffed(out, scratch, opts.accm);
    match opts.fcs {
        FcsKind::Fcs16 => push_stuffed(out, &fcs16_trailer(scratch), opts.accm),
        FcsKind::Fcs32 => push_stuffed(out, &fcs32_trailer(scratch), opts.accm),
    }
    out.push(FLAG);
}

/// What was wrong with a frame the decoder discarded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum FrameError {
    #[error("frame check sequence does not match")]
    BadFcs,
    #[error("frame longer than the MRU allows")]
    TooLong,
    #[error("frame aborted by the sender (7D 7E)")]
    Aborted,
    #[error("frame shorter than its frame check sequence")]
    TooShort,
    #[error("protocol field malformed (must be odd in its last octet, even in its first)")]
    BadProtocol,
    #[error("address and control fields are neither FF 03 nor omitted")]
    BadHeader,
}

/// How the receiving direction decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxOptions {
    /// Control characters that intervening equipment may insert: received unescaped, they are
    /// removed (RFC 1662 section 4.2).
    pub accm: u32,
    pub fcs: FcsKind,
    /// Largest information field accepted; the buffer holds this plus [`MAX_OVERHEAD`].
    pub mru: usize,
}

impl Default for RxOptions {
    fn default() -> Self {
        RxOptions {
            accm: DEFAULT_ACCM,
            fcs: FcsKind::Fcs16,
            mru: DEFAULT_MRU,
        }
    }
}

/// Counters of a [`Decoder`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DecoderStats {
    pub frames: u64,
    pub bad_fcs: u64,
    pub too_long: u64,
    pub aborted: u64,
    pub too_short: u64,
    /// Octets before the first flag, and control characters removed by the ACCM rule.
    pub discarded_octets: u64,
}

/// The streaming decoder of one serial link.
#[derive(Debug)]
pub struct Decoder {
    opts: RxOptions,
    buf: Vec<u8>,
    cap: usize,
    /// A flag has been seen: octets belong to a frame.
    synced: bool,
    escaped: bool,
    overflow: bool,
    stats: DecoderStats,
}

impl Decoder {
    pub fn new(opts: RxOptions) -> Self {
        let cap = opts.mru + MAX_OVERHEAD;
        Decoder {
            opts,
            buf: Vec::with_capacity(cap),
            cap,
            synced: false,
            escaped: false,
            overflow: false,
            stats: DecoderStats::default(),
        }
    }

    pub fn stats(&self) -> &DecoderStats {
        &self.stats
    }

    /// The largest number of octets the decoder ever holds.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Octets held of the frame in progress.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Changes the options from the next frame on (after LCP negotiation); the buffer keeps
    /// the size of the larger MRU seen, allocated here, never by input.
    pub fn set_options(&mut self, opts: RxOptions) {
        self.cap = opts.mru + MAX_OVERHEAD;
        if self.buf.capacity() < self.cap {
            self.buf.reserve_exact(self.cap - self.buf.len());
        }
        self.opts = opts;
    }

    /// Feeds a chunk of received octets; `sink` gets each frame's content (address to end of
    /// information, FCS checked and removed) or the reason it was discarded, in order.
    pub fn push(&mut self, chunk: &[u8], mut sink: impl FnMut(Result<&[u8], FrameError>)) {
        for &b in chunk {
            if b == FLAG {
                self.end_frame(&mut sink);
                continue;
            }
            if !self.synced {
                self.stats.discarded_octets += 1;
                continue;
            }
            if b < 0x20 && self.opts.accm & (1u32 << b) != 0 {
                self.stats.discarded_octets += 1;
                continue;
            }
            if b == ESCAPE {
                self.escaped = true;
                continue;
            }
            let v = if std::mem::take(&mut self.escaped) {
                b ^ 0x20
            } else {
                b
            };
            if self.overflow {
                continue;
            }
            if self.buf.len() == self.cap {
                self.overflow = true;
                continue;
            }
            self.buf.push(v);
        }
    }

    fn end_frame(&mut self, sink: &mut impl FnMut(Result<&[u8], FrameError>)) {
        let was_synced = std::mem::replace(&mut self.synced, true);
        let escaped = std::mem::take(&mut self.escaped);
        let overflow = std::mem::take(&mut self.overflow);
        if !was_synced {
            self.buf.clear();
            return;
        }
        let result = if escaped {
            self.stats.aborted += 1;
            Err(FrameError::Aborted)
        } else if overflow {
            self.stats.too_long += 1;
            Err(FrameError::TooLong)
        } else if self.buf.is_empty() {
            // Back-to-back flags (or a shared flag): no frame.
            return;
        } else {
            self.check()
        };
        match result {
            Ok(n) => sink(Ok(&self.buf[..n])),
            Err(e) => sink(Err(e)),
        }
        self.buf.clear();
    }

    /// The content length of the buffered frame, if its FCS is right.
    fn check(&mut self) -> Result<usize, FrameError> {
        let fcs_len = self.opts.fcs.octets();
        if self.buf.len() <= fcs_len {
            self.stats.too_short += 1;
            return Err(FrameError::TooShort);
        }
        let good = match self.opts.fcs {
            FcsKind::Fcs16 => fcs16_update(FCS16_INIT, &self.buf) == FCS16_GOOD,
            FcsKind::Fcs32 => fcs32_update(FCS32_INIT, &self.buf) == FCS32_GOOD,
        };
        if !good {
            self.stats.bad_fcs += 1;
            return Err(FrameError::BadFcs);
        }
        self.stats.frames += 1;
        Ok(self.buf.len() - fcs_len)
    }
}

/// A decoded frame: its protocol and information field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    pub protocol: u16,
    pub info: &'a [u8],
}

/// Splits a frame's content (as the decoder hands it over) into protocol and information,
/// accepting compressed address/control and protocol fields.
pub fn parse_content(content: &[u8]) -> Result<Frame<'_>, FrameError> {
    let rest = match content {
        [ALL_STATIONS, UI, rest @ ..] => rest,
        [ALL_STATIONS, ..] => return Err(FrameError::BadHeader),
        _ => content,
    };
    match rest {
        [p, info @ ..] if p & 1 == 1 => Ok(Frame {
            protocol: u16::from(*p),
            info,
        }),
        [hi, lo, info @ ..] if hi & 1 == 0 && lo & 1 == 1 => Ok(Frame {
            protocol: u16::from_be_bytes([*hi, *lo]),
            info,
        }),
        _ => Err(FrameError::BadProtocol),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(dec: &mut Decoder, bytes: &[u8]) -> Vec<Result<Vec<u8>, FrameError>> {
        let mut v = Vec::new();
        dec.push(bytes, |r| v.push(r.map(<[u8]>::to_vec)));
        v
    }

    #[test]
    fn lcp_is_never_compressed() {
        let opts = TxOptions {
            acfc: true,
            pfc: true,
            ..TxOptions::default()
        };
        let mut c = Vec::new();
        frame_content(&opts, PROTO_LCP, b"x", &mut c);
        assert_eq!(c, [0xff, 0x03, 0xc0, 0x21, b'x']);
        c.clear();
        frame_content(&opts, 0x0021, b"x", &mut c);
        assert_eq!(c, [0x21, b'x']);
    }

    #[test]
    fn round_trip_with_every_octet_split_anywhere() {
        let info: Vec<u8> = (0..=255).collect();
        let mut out = Vec::new();
        encode_frame(
            &TxOptions::default(),
            0x003d,
            &info,
            &mut Vec::new(),
            &mut out,
        );
        for split in 0..out.len() {
            let mut dec = Decoder::new(RxOptions::default());
            let mut got = decode_all(&mut dec, &out[..split]);
            got.extend(decode_all(&mut dec, &out[split..]));
            assert_eq!(got.len(), 1);
            let content = got[0].clone().unwrap();
            let f = parse_content(&content).unwrap();
            assert_eq!((f.protocol, f.info), (0x003d, &info[..]));
        }
    }

    #[test]
    fn errors_are_reported_and_the_next_frame_still_decodes() {
        let mut good = Vec::new();
        encode_frame(
            &TxOptions::default(),
            0x0021,
            b"abc",
            &mut Vec::new(),
            &mut good,
        );
        let mut corrupt = good.clone();
        corrupt[3] ^= 0x01;
        let mut dec = Decoder::new(RxOptions {
            mru: 8,
            ..RxOptions::default()
        });
        let mut input = b"noise".to_vec();
        input.extend_from_slice(&corrupt);
        input.extend_from_slice(&[FLAG, 0x41, 0x42, ESCAPE, FLAG]);
        input.extend_from_slice(&[FLAG, 0x41, FLAG]);
        input.push(FLAG);
        input.extend(std::iter::repeat_n(0x41, 100));
        input.extend_from_slice(&good);
        let got = decode_all(&mut dec, &input);
        assert_eq!(
            got.iter()
                .map(|r| r.as_ref().err().copied())
                .collect::<Vec<_>>(),
            [
                Some(FrameError::BadFcs),
                Some(FrameError::Aborted),
                Some(FrameError::TooShort),
                Some(FrameError::TooLong),
                None
            ]
        );
        assert_eq!(dec.stats().discarded_octets, 5);
        assert!(dec.buffered() == 0 && dec.capacity() == 16);
    }

    #[test]
    fn control_characters_inserted_on_the_line_are_removed() {
        let mut out = Vec::new();
        encode_frame(
            &TxOptions::default(),
            0x0021,
            b"\x11\x13data",
            &mut Vec::new(),
            &mut out,
        );
        // XON/XOFF inserted by a modem's software flow control, unescaped.
        out.insert(4, 0x11);
        out.insert(7, 0x13);
        let mut dec = Decoder::new(RxOptions::default());
        let got = decode_all(&mut dec, &out);
        let content = got[0].clone().unwrap();
        assert_eq!(parse_content(&content).unwrap().info, b"\x11\x13data");
    }

    #[test]
    fn header_errors() {
        assert_eq!(
            parse_content(&[0xff, 0x05, 0x00, 0x21]),
            Err(FrameError::BadHeader)
        );
        assert_eq!(parse_content(&[0x00, 0x20]), Err(FrameError::BadProtocol));
        assert_eq!(parse_content(&[0x02]), Err(FrameError::BadProtocol));
        assert_eq!(parse_content(&[]), Err(FrameError::BadProtocol));
    }
}
