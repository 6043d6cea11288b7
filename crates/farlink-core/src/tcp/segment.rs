//! The TCP segment as the simulator carries it: a small `Copy` value, no heap.
//!
//! Read first: RFC 9293 section 3.1 (header format), RFC 7323 sections 2 and 3 (window scale
//! and timestamps options), RFC 2018 section 3 (SACK option), RFC 6691 (MSS and options).
//!
//! The segment carries what the endpoints and links need and what a pcap writer needs to write
//! a real header: sequence and acknowledgement numbers, flags, payload length, the raw 16-bit
//! window field and the options. [`Segment::wire_bytes`] is the size on an IPv4 link, with the
//! options laid out in one canonical, 4-byte aligned way (see [`Options::len_bytes`]) that the
//! pcap writer must reproduce.

use std::ops::BitOr;

use crate::links::link::Ecn;
use crate::time::{SimDuration, SimTime};

/// IPv4 header without options (RFC 791 section 3.1).
pub const IPV4_HEADER_BYTES: u32 = 20;
/// TCP header without options (RFC 9293 section 3.1, data offset 5).
pub const TCP_HEADER_BYTES: u32 = 20;
/// TCP options occupy at most 40 bytes: the data offset is 4 bits of 32-bit words, 15 × 4 − 20
/// (RFC 9293 section 3.1).
pub const MAX_OPTIONS_BYTES: u32 = 40;
/// Timestamps option, kind 8 length 10, preceded by two NOPs (RFC 7323 appendix A layout).
pub const TIMESTAMPS_OPTION_BYTES: u32 = 12;
/// MSS option, kind 2 length 4 (RFC 9293 section 3.2).
pub const MSS_OPTION_BYTES: u32 = 4;
/// Window scale option, kind 3 length 3, preceded by one NOP (RFC 7323 section 2.2).
pub const WINDOW_SCALE_OPTION_BYTES: u32 = 4;
/// SACK-permitted option, kind 4 length 2, preceded by two NOPs (RFC 2018 section 2).
pub const SACK_PERMITTED_OPTION_BYTES: u32 = 4;
/// SACK option header: two NOPs, kind 5, length (RFC 2018 section 3); each block adds 8 bytes.
pub const SACK_OPTION_BASE_BYTES: u32 = 4;
/// Bytes per SACK block: two 32-bit edges (RFC 2018 section 3).
pub const SACK_BLOCK_BYTES: u32 = 8;
/// At most four SACK blocks fit in the option space, three beside timestamps (RFC 2018
/// section 3).
pub const MAX_SACK_BLOCKS: usize = 4;

/// The TCP flags this simulator uses, as bits of the header's flags byte (RFC 9293 3.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flags(u8);

impl Flags {
    pub const NONE: Flags = Flags(0);
    pub const FIN: Flags = Flags(0x01);
    pub const SYN: Flags = Flags(0x02);
    /// Reset; only on the wire (`wire.rs`), the simulated endpoints never send it.
    pub const RST: Flags = Flags(0x04);
    /// Push; only on the wire.
    pub const PSH: Flags = Flags(0x08);
    pub const ACK: Flags = Flags(0x10);
    /// ECN-Echo (RFC 3168 section 6.1).
    pub const ECE: Flags = Flags(0x40);
    /// Congestion Window Reduced (RFC 3168 section 6.1).
    pub const CWR: Flags = Flags(0x80);

    /// The flags of a header's flags byte, as read off the wire.
    pub const fn from_bits(bits: u8) -> Flags {
        Flags(bits)
    }

    /// The header's flags byte.
    pub const fn bits(self) -> u8 {
        self.0
    }
    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl BitOr for Flags {
    type Output = Flags;
    fn bitor(self, o: Flags) -> Flags {
        Flags(self.0 | o.0)
    }
}

/// One SACK block: the bytes `[left, right)` received out of order (RFC 2018 section 3: "Left
/// Edge" is the first sequence number of the block, "Right Edge" the one after its last).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SackBlock {
    pub left: u64,
    pub right: u64,
}

impl SackBlock {
    pub fn len_bytes(&self) -> u64 {
        self.right - self.left
    }
}

/// Up to [`MAX_SACK_BLOCKS`] SACK blocks, most recent first (RFC 2018 section 4), in a fixed
/// array.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SackBlocks {
    blocks: [SackBlock; MAX_SACK_BLOCKS],
    len: u8,
}

impl SackBlocks {
    /// Appends a block; returns false (and drops it) when all slots are taken.
    pub fn push(&mut self, block: SackBlock) -> bool {
        if usize::from(self.len) == MAX_SACK_BLOCKS {
            return false;
        }
        self.blocks[usize::from(self.len)] = block;
        self.len += 1;
        true
    }
    pub fn as_slice(&self) -> &[SackBlock] {
        &self.blocks[..usize::from(self.len)]
    }
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn clear(&mut self) {
        self.len = 0;
    }
}

/// One tick of the timestamp clock. RFC 7323 section 5.4 puts the tick between 1 ms and 1 s;
/// we take 1 ms, as Linux did before it moved to microseconds.
pub const TIMESTAMP_TICK: SimDuration = SimDuration::from_millis(1);

/// The timestamp clock (RFC 7323 section 5.4) at `now`: ticks since the start of the run,
/// modulo 2^32 as on the wire.
pub fn timestamp_clock(now: SimTime) -> u32 {
    (now.as_nanos() / TIMESTAMP_TICK.as_nanos()) as u32
}

/// The timestamps option (RFC 7323 section 3.2): `TSval` of the sender's timestamp clock and
/// `TSecr`, the echo of the peer's most recent relevant `TSval`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Timestamps {
    pub tsval: u32,
    pub tsecr: u32,
}

/// The options a segment carries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Options {
    /// MSS option; SYN segments only (RFC 9293 3.7.1).
    pub mss_bytes: Option<u16>,
    /// Window scale shift count; SYN segments only (RFC 7323 section 2.2).
    pub window_shift: Option<u8>,
    /// SACK-permitted; SYN segments only (RFC 2018 section 2).
    pub sack_permitted: bool,
    pub timestamps: Option<Timestamps>,
    pub sack: SackBlocks,
}

impl Options {
    /// Bytes of options on the wire, in the canonical layout: every option is padded in front
    /// with NOPs to a 4-byte boundary, in the order MSS, window scale, SACK-permitted,
    /// timestamps, SACK. So timestamps take 12 bytes, SACK 4 + 8·n, and the total is always a
    /// multiple of 4 (the data offset counts 32-bit words, RFC 9293 3.1).
    pub fn len_bytes(&self) -> u32 {
        let n = canonical_options_len(
            self.mss_bytes.is_some(),
            self.window_shift.is_some(),
            self.sack_permitted,
            self.timestamps.is_some(),
            self.sack.len(),
        );
        debug_assert!(n <= MAX_OPTIONS_BYTES, "options overflow: {n} bytes");
        n
    }
}

/// Bytes of the options present, in the canonical layout [`Options::len_bytes`] describes
/// (the wire codec's `WireOptions` counts with it too).
#[inline]
pub const fn canonical_options_len(
    mss: bool,
    window_scale: bool,
    sack_permitted: bool,
    timestamps: bool,
    sack_blocks: usize,
) -> u32 {
    let mut n = 0;
    if mss {
        n += MSS_OPTION_BYTES;
    }
    if window_scale {
        n += WINDOW_SCALE_OPTION_BYTES;
    }
    if sack_permitted {
        n += SACK_PERMITTED_OPTION_BYTES;
    }
    if timestamps {
        n += TIMESTAMPS_OPTION_BYTES;
    }
    if sack_blocks > 0 {
        n += SACK_OPTION_BASE_BYTES + SACK_BLOCK_BYTES * sack_blocks as u32;
    }
    n
}

/// How many SACK blocks fit beside the other options of an ACK (RFC 2018 section 3): 4 alone,
/// 3 with timestamps.
pub const fn max_sack_blocks(timestamps: bool) -> usize {
    let ts = if timestamps {
        TIMESTAMPS_OPTION_BYTES
    } else {
        0
    };
    let n = ((MAX_OPTIONS_BYTES - ts - SACK_OPTION_BASE_BYTES) / SACK_BLOCK_BYTES) as usize;
    if n < MAX_SACK_BLOCKS {
        n
    } else {
        MAX_SACK_BLOCKS
    }
}

/// A TCP segment in an IPv4 packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Segment {
    /// Sequence number of the first payload byte (unwrapped, see the module docs of `tcp`).
    pub seq: u64,
    /// Acknowledgement number: the next byte expected; meaningful when `flags` has ACK.
    pub ack: u64,
    pub flags: Flags,
    pub payload_bytes: u32,
    /// The raw 16-bit window field. The window in bytes is `window_field << shift`
    /// (RFC 7323 section 2.3); see [`Segment::window_bytes`].
    pub window_field: u16,
    pub options: Options,
    /// The IP header's ECN field (RFC 3168 section 5): ECT as the sender set it, CE once a
    /// queue marked it ([`crate::tcp::ecn`]).
    pub ecn: Ecn,
    /// AccECN's ACE counter (CE-marked packets received, modulo 8), on ACKs of an
    /// `"accurate"` connection; 0 otherwise. On the wire it takes the AE, CWR and ECE bits.
    pub ace: u8,
}

impl Segment {
    /// The sequence number after the last payload byte (SYN and FIN are not counted; the
    /// simulator does not send them yet).
    pub fn end_seq(&self) -> u64 {
        self.seq + u64::from(self.payload_bytes)
    }

    /// Bytes on an IPv4 link: IP header + TCP header + options + payload.
    pub fn wire_bytes(&self) -> u32 {
        IPV4_HEADER_BYTES + TCP_HEADER_BYTES + self.options.len_bytes() + self.payload_bytes
    }

    /// The advertised window in bytes. RFC 7323 section 2.2: the window field of a SYN is never
    /// scaled.
    pub fn window_bytes(&self, shift: u8) -> u64 {
        if self.flags.contains(Flags::SYN) {
            u64::from(self.window_field)
        } else {
            u64::from(self.window_field) << shift
        }
    }
}

/// The window field announcing `window_bytes` with `shift` (RFC 7323 section 2.3): the window
/// shifted right, saturating at 65535. The peer reads back a multiple of 2^shift, never more
/// than was offered.
pub fn encode_window(window_bytes: u64, shift: u8) -> u16 {
    u16::try_from(window_bytes >> shift).unwrap_or(u16::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_is_small_and_copy() {
        fn assert_copy<T: Copy>() {}
        assert_copy::<Segment>();
        assert!(std::mem::size_of::<Segment>() <= 128);
    }

    #[test]
    fn bare_data_segment_is_40_bytes_of_headers() {
        let s = Segment {
            payload_bytes: 1460,
            flags: Flags::ACK,
            ..Segment::default()
        };
        assert_eq!(s.wire_bytes(), 1500);
    }

    #[test]
    fn timestamps_add_12_bytes_and_sack_blocks_8_each() {
        let mut s = Segment {
            payload_bytes: 1448,
            ..Segment::default()
        };
        s.options.timestamps = Some(Timestamps { tsval: 1, tsecr: 2 });
        assert_eq!(s.wire_bytes(), 1500);
        let mut ack = Segment::default();
        ack.options.timestamps = Some(Timestamps::default());
        for i in 0..3 {
            assert!(ack.options.sack.push(SackBlock {
                left: i * 10,
                right: i * 10 + 5
            }));
        }
        assert_eq!(ack.options.len_bytes(), 12 + 4 + 24);
        assert_eq!(ack.options.len_bytes(), MAX_OPTIONS_BYTES);
        assert_eq!(ack.wire_bytes(), 80);
    }

    #[test]
    fn sack_block_count_fits_option_space() {
        assert_eq!(max_sack_blocks(false), 4);
        assert_eq!(max_sack_blocks(true), 3);
        let mut blocks = SackBlocks::default();
        for _ in 0..MAX_SACK_BLOCKS {
            assert!(blocks.push(SackBlock::default()));
        }
        assert!(!blocks.push(SackBlock::default()));
        assert_eq!(blocks.len(), 4);
    }

    #[test]
    fn syn_options_are_word_aligned() {
        let mut syn = Segment {
            flags: Flags::SYN,
            ..Segment::default()
        };
        syn.options.mss_bytes = Some(1460);
        syn.options.window_shift = Some(7);
        syn.options.sack_permitted = true;
        syn.options.timestamps = Some(Timestamps::default());
        assert_eq!(syn.options.len_bytes(), 24);
        assert_eq!(syn.options.len_bytes() % 4, 0);
    }

    #[test]
    fn window_scaling_round_trips_down_to_the_scale_granularity() {
        let field = encode_window(1_000_000, 5);
        assert_eq!(field, (1_000_000u64 >> 5) as u16);
        let s = Segment {
            flags: Flags::ACK,
            window_field: field,
            ..Segment::default()
        };
        let back = s.window_bytes(5);
        assert!(back <= 1_000_000 && 1_000_000 - back < 32);
        assert_eq!(encode_window(1 << 30, 0), u16::MAX);
        let syn = Segment {
            flags: Flags::SYN,
            window_field: 100,
            ..Segment::default()
        };
        assert_eq!(syn.window_bytes(5), 100, "SYN windows are never scaled");
    }

    #[test]
    fn flags_combine_and_test() {
        let f = Flags::SYN | Flags::ACK;
        assert!(f.contains(Flags::ACK) && f.contains(Flags::SYN));
        assert!(!f.contains(Flags::FIN));
        assert_eq!(f.bits(), 0x12);
    }
}
