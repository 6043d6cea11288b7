//! TCP/IPv4 on the wire: the bytes of a segment, both ways, sans-I/O.
//!
//! Read first: RFC 791 section 3.1 (IPv4 header), RFC 9293 sections 3.1 (TCP header, option
//! syntax: kind 0 ends the list, kind 1 is one byte, every other kind has a length byte that
//! counts itself and the kind) and 3.4 (sequence numbers), RFC 1071 (the Internet checksum),
//! RFC 7323 (window scale, timestamps), RFC 2018 (SACK), RFC 792 (ICMP destination
//! unreachable quotes the IP header and the first 8 bytes of the offending datagram).
//!
//! Two users: the pcap writer (`crate::pcap`), which writes simulated segments as a capture,
//! and farlink's own sender on a real network (`super::wire_client`), which sends real
//! packets and reads a real kernel's answers. The encoder lays the options out in one
//! canonical, 4-byte aligned way ([`WireOptions::len_bytes`], the same layout
//! [`super::segment::Options::len_bytes`] counts); the parser takes any layout a real stack
//! sends, checks every length against the bytes it has, and never panics: malformed input is
//! a [`ParseError`].
//!
//! The header values here are the raw 32-bit ones; the mapping to the sans-I/O endpoints'
//! unwrapped sequence numbers (first data byte 0) is [`wire_seq`], [`wire_ack`] and
//! [`unwrap_seq`].

use std::fmt;

use super::segment::{
    canonical_options_len, Flags, Options, SackBlocks, Segment, Timestamps, IPV4_HEADER_BYTES,
    MAX_OPTIONS_BYTES, MAX_SACK_BLOCKS, TCP_HEADER_BYTES,
};

/// IP protocol numbers (IANA): TCP and ICMP.
pub const PROTO_TCP: u8 = 6;
pub const PROTO_ICMP: u8 = 1;
/// The TTL of the packets written (Linux's default, `net.ipv4.ip_default_ttl`).
pub const TTL: u8 = 64;
/// RFC 791: the Don't Fragment flag, set as Linux sets it on TCP (path MTU discovery).
pub const IP_DONT_FRAGMENT: u16 = 0x4000;
/// RFC 791: the More Fragments flag and the fragment offset mask.
const IP_MORE_FRAGMENTS: u16 = 0x2000;
const IP_FRAGMENT_OFFSET: u16 = 0x1fff;

/// Option kinds (RFC 9293 3.2, RFC 7323, RFC 2018).
pub const OPT_EOL: u8 = 0;
pub const OPT_NOP: u8 = 1;
pub const OPT_MSS: u8 = 2;
pub const OPT_WINDOW_SCALE: u8 = 3;
pub const OPT_SACK_PERMITTED: u8 = 4;
pub const OPT_SACK: u8 = 5;
pub const OPT_TIMESTAMPS: u8 = 8;

/// ICMP type 3, destination unreachable (RFC 792).
pub const ICMP_DEST_UNREACHABLE: u8 = 3;

/// The largest IPv4 packet: the 16-bit total length.
pub const MAX_PACKET_BYTES: usize = u16::MAX as usize;

/// One SACK block with its raw 32-bit edges.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct WireSackBlock {
    pub left: u32,
    pub right: u32,
}

/// The options of a TCP header as they are on the wire (SACK edges raw).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct WireOptions {
    pub mss_bytes: Option<u16>,
    pub window_shift: Option<u8>,
    pub sack_permitted: bool,
    pub timestamps: Option<Timestamps>,
    sack: [WireSackBlock; MAX_SACK_BLOCKS],
    sack_len: u8,
}

impl WireOptions {
    /// The SACK blocks, in the order they came.
    pub fn sack(&self) -> &[WireSackBlock] {
        &self.sack[..usize::from(self.sack_len)]
    }

    /// Appends a SACK block; false (and nothing kept) when all four slots are taken.
    pub fn push_sack(&mut self, block: WireSackBlock) -> bool {
        if usize::from(self.sack_len) == MAX_SACK_BLOCKS {
            return false;
        }
        self.sack[usize::from(self.sack_len)] = block;
        self.sack_len += 1;
        true
    }

    /// Bytes in the canonical layout ([`Options::len_bytes`]'s): every option padded in front
    /// with NOPs to a 4-byte boundary, in the order MSS, window scale, SACK-permitted,
    /// timestamps, SACK.
    pub fn len_bytes(&self) -> u32 {
        canonical_options_len(
            self.mss_bytes.is_some(),
            self.window_shift.is_some(),
            self.sack_permitted,
            self.timestamps.is_some(),
            usize::from(self.sack_len),
        )
    }
}

/// A TCP header with raw 32-bit sequence and acknowledgement numbers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TcpHeader {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    /// The flags byte (FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10, ...).
    pub flags: u8,
    pub window: u16,
    pub options: WireOptions,
}

impl TcpHeader {
    /// The header carrying `seg` from a connection end whose ISN is `isn_local` to a peer
    /// whose ISN is `isn_remote`: sequence numbers, acknowledgement and SACK edges mapped by
    /// [`wire_seq`] and [`wire_ack`]; without ACK the acknowledgement field is 0.
    pub fn from_segment(
        seg: &Segment,
        src_port: u16,
        dst_port: u16,
        isn_local: u32,
        isn_remote: u32,
    ) -> TcpHeader {
        let mut options = WireOptions {
            mss_bytes: seg.options.mss_bytes,
            window_shift: seg.options.window_shift,
            sack_permitted: seg.options.sack_permitted,
            timestamps: seg.options.timestamps,
            ..WireOptions::default()
        };
        for b in seg.options.sack.as_slice() {
            options.push_sack(WireSackBlock {
                left: wire_ack(isn_remote, b.left),
                right: wire_ack(isn_remote, b.right),
            });
        }
        TcpHeader {
            src_port,
            dst_port,
            seq: wire_seq(isn_local, seg.seq, seg.flags.contains(Flags::SYN)),
            ack: if seg.flags.contains(Flags::ACK) {
                wire_ack(isn_remote, seg.ack)
            } else {
                0
            },
            flags: seg.flags.bits(),
            window: seg.window_field,
            options,
        }
    }

    /// Bytes of the header with its options.
    pub fn len_bytes(&self) -> u32 {
        TCP_HEADER_BYTES + self.options.len_bytes()
    }

    pub fn flags(&self) -> Flags {
        Flags::from_bits(self.flags)
    }
}

/// The 32-bit sequence number on the wire of an unwrapped one: `isn + 1 + seq` modulo 2^32,
/// or `isn + seq` for a segment with SYN (the SYN itself occupies the ISN, RFC 9293 3.4).
pub fn wire_seq(isn: u32, seq: u64, syn: bool) -> u32 {
    // Truncating `seq` keeps it modulo 2^32, which is what the sum needs.
    let offset = if syn { 0 } else { 1 };
    isn.wrapping_add(offset).wrapping_add(seq as u32)
}

/// The 32-bit acknowledgement number (or SACK edge) on the wire: `peer_isn + 1 + ack` modulo
/// 2^32, `ack` counted from the peer's first data byte.
pub fn wire_ack(peer_isn: u32, ack: u64) -> u32 {
    peer_isn.wrapping_add(1).wrapping_add(ack as u32)
}

/// The inverse of [`wire_ack`] near `reference`: the unwrapped number, counted from the first
/// data byte after `isn`, whose wire value is `wire` and which is within 2^31 of `reference`
/// (RFC 9293 3.4's modular comparison). `None` when that would lie before the ISN's SYN
/// (below -1).
pub fn unwrap_seq(reference: u64, isn: u32, wire: u32) -> Option<u64> {
    let rel = wire.wrapping_sub(isn).wrapping_sub(1);
    let delta = i64::from(rel.wrapping_sub(reference as u32) as i32);
    let value = i128::from(reference) + i128::from(delta);
    u64::try_from(value).ok()
}

/// RFC 1071 one's-complement sum of `bytes` as big-endian 16-bit words (an odd last byte is
/// padded with a zero), added to `sum`; the carries are folded back into 16 bits, not
/// complemented. The offload path sums every byte of 64 KiB super-segments, so the bulk is
/// taken as it lies in memory, four bytes at a time into a 64-bit accumulator, and the folded
/// result put into network order once: RFC 1071 2(B) and 2(C), the sum is independent of byte
/// order and may be computed in wider words, and gives the same value. The accumulator cannot
/// overflow for anything shorter than 2^32 words.
pub fn ones_complement_add(sum: u32, bytes: &[u8]) -> u32 {
    let mut quads = bytes.chunks_exact(4);
    let mut native = 0u64;
    for q in &mut quads {
        native += u64::from(u32::from_ne_bytes([q[0], q[1], q[2], q[3]]));
    }
    let mut acc = u64::from(sum) + u64::from(u16::from_be(fold_u64(native)));
    let mut words = quads.remainder().chunks_exact(2);
    for w in &mut words {
        acc += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        acc += u64::from(*last) << 8;
    }
    u32::from(fold_u64(acc))
}

/// End-around carries of a one's-complement sum, to 16 bits.
fn fold_u64(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Folds the carries of a one's-complement sum and complements it: the checksum field.
pub fn checksum_of(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// RFC 791 3.1: version 4, IHL 5 (no options), DSCP 0, DF, TTL 64, with its header checksum,
/// into the first 20 bytes of `ip`.
pub fn write_ipv4_header(
    ip: &mut [u8],
    src: [u8; 4],
    dst: [u8; 4],
    protocol: u8,
    total: u16,
    id: u16,
) {
    ip[0] = 0x45;
    ip[1] = 0; // DSCP 0, not ECN-capable
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip[4..6].copy_from_slice(&id.to_be_bytes());
    ip[6..8].copy_from_slice(&IP_DONT_FRAGMENT.to_be_bytes());
    ip[8] = TTL;
    ip[9] = protocol;
    ip[10..12].fill(0);
    ip[12..16].copy_from_slice(&src);
    ip[16..20].copy_from_slice(&dst);
    let checksum = checksum_of(ones_complement_add(0, &ip[..20]));
    ip[10..12].copy_from_slice(&checksum.to_be_bytes());
}

/// Sets the ECN field (the low two bits of the second byte, RFC 3168 section 5) of the IPv4
/// header at the start of `ip` to `ecn`, updating the header checksum incrementally (RFC 1624
/// equation 3: HC' = ~(~HC + ~m + m'), m the 16-bit word holding the field). A queue marking
/// CE on a packet in flight does this, as a router does.
pub fn set_ipv4_ecn(ip: &mut [u8], ecn: u8) {
    let old_word = u16::from_be_bytes([ip[0], ip[1]]);
    ip[1] = (ip[1] & !0b11) | (ecn & 0b11);
    let new_word = u16::from_be_bytes([ip[0], ip[1]]);
    let old_checksum = u16::from_be_bytes([ip[10], ip[11]]);
    let mut sum = u32::from(!old_checksum) + u32::from(!old_word) + u32::from(new_word);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
}

/// The TCP pseudo-header's sum (RFC 9293 3.1): addresses, protocol, TCP length.
fn pseudo_header_sum(src: [u8; 4], dst: [u8; 4], tcp_len: u32) -> u32 {
    let mut pseudo = [0u8; 12];
    pseudo[0..4].copy_from_slice(&src);
    pseudo[4..8].copy_from_slice(&dst);
    pseudo[9] = PROTO_TCP;
    pseudo[10..12].copy_from_slice(&(tcp_len as u16).to_be_bytes());
    ones_complement_add(0, &pseudo)
}

/// RFC 9293 3.1: `hdr` with its options into `tcp` (exactly [`TcpHeader::len_bytes`] long),
/// checksummed over the pseudo-header for a segment of `tcp_len` bytes (header and payload)
/// and over `payload`, the payload's bytes. A payload of zeros may be left out (`&[]`) while
/// `tcp_len` still counts it: zeros add nothing to the sum (what the pcap writer does).
pub fn write_tcp_header(
    tcp: &mut [u8],
    src_ip: [u8; 4],
    dst_ip: [u8; 4],
    hdr: &TcpHeader,
    payload: &[u8],
    tcp_len: u32,
) {
    tcp[0..2].copy_from_slice(&hdr.src_port.to_be_bytes());
    tcp[2..4].copy_from_slice(&hdr.dst_port.to_be_bytes());
    tcp[4..8].copy_from_slice(&hdr.seq.to_be_bytes());
    tcp[8..12].copy_from_slice(&hdr.ack.to_be_bytes());
    let words = (tcp.len() / 4) as u8;
    tcp[12] = words << 4;
    tcp[13] = hdr.flags;
    tcp[14..16].copy_from_slice(&hdr.window.to_be_bytes());
    tcp[16..18].fill(0); // checksum, filled below
    tcp[18..20].fill(0); // urgent pointer
    let written = write_options(&mut tcp[20..], &hdr.options);
    debug_assert_eq!(written, tcp.len() - 20);
    let sum = ones_complement_add(
        ones_complement_add(pseudo_header_sum(src_ip, dst_ip, tcp_len), tcp),
        payload,
    );
    tcp[16..18].copy_from_slice(&checksum_of(sum).to_be_bytes());
}

/// The options in the canonical layout of [`WireOptions::len_bytes`]; returns the bytes
/// written.
fn write_options(out: &mut [u8], options: &WireOptions) -> usize {
    let mut n = 0;
    let mut put = |bytes: &[u8]| {
        out[n..n + bytes.len()].copy_from_slice(bytes);
        n += bytes.len();
    };
    if let Some(mss) = options.mss_bytes {
        let [hi, lo] = mss.to_be_bytes();
        put(&[OPT_MSS, 4, hi, lo]);
    }
    if let Some(shift) = options.window_shift {
        put(&[OPT_NOP, OPT_WINDOW_SCALE, 3, shift]);
    }
    if options.sack_permitted {
        put(&[OPT_NOP, OPT_NOP, OPT_SACK_PERMITTED, 2]);
    }
    if let Some(ts) = options.timestamps {
        put(&[OPT_NOP, OPT_NOP, OPT_TIMESTAMPS, 10]);
        put(&ts.tsval.to_be_bytes());
        put(&ts.tsecr.to_be_bytes());
    }
    if options.sack_len > 0 {
        let len = 2 + 8 * options.sack_len;
        put(&[OPT_NOP, OPT_NOP, OPT_SACK, len]);
        for block in options.sack() {
            put(&block.left.to_be_bytes());
            put(&block.right.to_be_bytes());
        }
    }
    n
}

/// Why a packet could not be encoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    #[error("TCP options of {0} bytes exceed 40")]
    OptionsTooLong(u32),
    #[error("a packet of {0} bytes does not fit an IPv4 total length")]
    TooLong(usize),
    #[error("a buffer of {have} bytes cannot hold a packet of {need}")]
    BufferTooSmall { have: usize, need: usize },
}

/// Writes a whole IPv4/TCP packet into `buf`: header `hdr` and `payload`, from `src` to `dst`,
/// IP identification `id`. Returns its length.
pub fn encode_tcp(
    buf: &mut [u8],
    src: [u8; 4],
    dst: [u8; 4],
    id: u16,
    hdr: &TcpHeader,
    payload: &[u8],
) -> Result<usize, EncodeError> {
    let options = hdr.options.len_bytes();
    if options > MAX_OPTIONS_BYTES {
        return Err(EncodeError::OptionsTooLong(options));
    }
    let ip_len = IPV4_HEADER_BYTES as usize;
    let tcp_header = hdr.len_bytes() as usize;
    let total = ip_len + tcp_header + payload.len();
    if total > MAX_PACKET_BYTES {
        return Err(EncodeError::TooLong(total));
    }
    if buf.len() < total {
        return Err(EncodeError::BufferTooSmall {
            have: buf.len(),
            need: total,
        });
    }
    write_ipv4_header(&mut buf[..ip_len], src, dst, PROTO_TCP, total as u16, id);
    let (head, rest) = buf[ip_len..total].split_at_mut(tcp_header);
    rest.copy_from_slice(payload);
    write_tcp_header(
        head,
        src,
        dst,
        hdr,
        payload,
        (tcp_header + payload.len()) as u32,
    );
    Ok(total)
}

/// Why bytes are not a packet this parser accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("{what}: {have} bytes, need {need}")]
    Truncated {
        what: &'static str,
        have: usize,
        need: usize,
    },
    #[error("IP version {0}, not 4")]
    NotIpv4(u8),
    #[error("IPv4 header length {0} bytes, below 20")]
    BadHeaderLength(usize),
    #[error("IPv4 total length {total} outside the header ({header}) and the bytes read ({have})")]
    BadTotalLength {
        total: usize,
        header: usize,
        have: usize,
    },
    #[error("a fragment (offset {offset}, more fragments {more}); fragments are not reassembled")]
    Fragment { offset: u16, more: bool },
    #[error("bad IPv4 header checksum")]
    IpChecksum,
    #[error("TCP data offset {0} bytes, below 20 or past the segment")]
    BadDataOffset(usize),
    #[error("bad TCP checksum")]
    TcpChecksum,
    #[error("TCP option kind {kind} at byte {at}: length {len} does not fit")]
    BadOption { kind: u8, at: usize, len: usize },
}

/// The IPv4 header fields a reader needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4Header {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub protocol: u8,
    pub id: u16,
    pub ttl: u8,
    /// Header bytes (IHL × 4).
    pub header_bytes: usize,
    pub total_bytes: usize,
}

/// What an ICMP destination-unreachable message quotes of the datagram it answers (RFC 792:
/// its IP header and first 8 bytes, for TCP the ports and the sequence number).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quoted {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub protocol: u8,
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
}

/// A parsed packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packet<'a> {
    Tcp {
        ip: Ipv4Header,
        tcp: TcpHeader,
        payload: &'a [u8],
    },
    /// ICMP destination unreachable (type 3) quoting a TCP segment.
    Unreachable {
        ip: Ipv4Header,
        code: u8,
        quoted: Quoted,
    },
    /// Any other IPv4 packet (another protocol, another ICMP message).
    Other { ip: Ipv4Header },
}

fn take<'a>(bytes: &'a [u8], n: usize, what: &'static str) -> Result<&'a [u8], ParseError> {
    bytes.get(..n).ok_or(ParseError::Truncated {
        what,
        have: bytes.len(),
        need: n,
    })
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The IPv4 header of `bytes` and the datagram it delimits (`total_bytes` long). With
/// `check`, the header checksum must hold and the datagram must be whole.
fn parse_ipv4(bytes: &[u8], check: bool) -> Result<(Ipv4Header, &[u8]), ParseError> {
    let fixed = take(bytes, 20, "IPv4 header")?;
    let version = fixed[0] >> 4;
    if version != 4 {
        return Err(ParseError::NotIpv4(version));
    }
    let header_bytes = usize::from(fixed[0] & 0x0f) * 4;
    if header_bytes < 20 {
        return Err(ParseError::BadHeaderLength(header_bytes));
    }
    let header = take(bytes, header_bytes, "IPv4 header with options")?;
    let total_bytes = usize::from(be16(header, 2));
    let datagram = if check {
        if total_bytes < header_bytes || total_bytes > bytes.len() {
            return Err(ParseError::BadTotalLength {
                total: total_bytes,
                header: header_bytes,
                have: bytes.len(),
            });
        }
        if checksum_of(ones_complement_add(0, header)) != 0 {
            return Err(ParseError::IpChecksum);
        }
        &bytes[..total_bytes]
    } else {
        // A quoted header: its datagram was cut after 8 bytes of payload.
        bytes
    };
    let frag = be16(header, 6);
    let ip = Ipv4Header {
        src: [header[12], header[13], header[14], header[15]],
        dst: [header[16], header[17], header[18], header[19]],
        protocol: header[9],
        id: be16(header, 4),
        ttl: header[8],
        header_bytes,
        total_bytes,
    };
    if check && (frag & (IP_MORE_FRAGMENTS | IP_FRAGMENT_OFFSET)) != 0 {
        return Err(ParseError::Fragment {
            offset: frag & IP_FRAGMENT_OFFSET,
            more: frag & IP_MORE_FRAGMENTS != 0,
        });
    }
    Ok((ip, datagram))
}

/// Parses the options area of a TCP header. Unknown kinds are skipped; a known kind with an
/// unexpected length is ignored (as Linux's `tcp_parse_options` does); a length that does not
/// fit the area is an error.
fn parse_options(area: &[u8]) -> Result<WireOptions, ParseError> {
    let mut o = WireOptions::default();
    let mut at = 0;
    while at < area.len() {
        let kind = area[at];
        match kind {
            OPT_EOL => break,
            OPT_NOP => {
                at += 1;
                continue;
            }
            _ => {}
        }
        let len = match area.get(at + 1) {
            Some(&l) => usize::from(l),
            None => return Err(ParseError::BadOption { kind, at, len: 0 }),
        };
        if len < 2 || at + len > area.len() {
            return Err(ParseError::BadOption { kind, at, len });
        }
        let body = &area[at + 2..at + len];
        match (kind, len) {
            (OPT_MSS, 4) => o.mss_bytes = Some(be16(body, 0)),
            (OPT_WINDOW_SCALE, 3) => o.window_shift = Some(body[0]),
            (OPT_SACK_PERMITTED, 2) => o.sack_permitted = true,
            (OPT_TIMESTAMPS, 10) => {
                o.timestamps = Some(Timestamps {
                    tsval: be32(body, 0),
                    tsecr: be32(body, 4),
                })
            }
            (OPT_SACK, _) if (len - 2) % 8 == 0 && len > 2 => {
                for block in body.chunks_exact(8) {
                    o.push_sack(WireSackBlock {
                        left: be32(block, 0),
                        right: be32(block, 4),
                    });
                }
            }
            _ => {}
        }
        at += len;
    }
    Ok(o)
}

/// The fixed TCP header fields and the options of `seg` (a TCP segment, header first), and
/// its data offset.
fn parse_tcp_header(seg: &[u8], whole: bool) -> Result<(TcpHeader, usize), ParseError> {
    let fixed = take(seg, 20, "TCP header")?;
    let offset = usize::from(fixed[12] >> 4) * 4;
    if offset < 20 || offset > seg.len() {
        return Err(ParseError::BadDataOffset(offset));
    }
    let options = if whole {
        parse_options(&seg[20..offset])?
    } else {
        WireOptions::default()
    };
    Ok((
        TcpHeader {
            src_port: be16(fixed, 0),
            dst_port: be16(fixed, 2),
            seq: be32(fixed, 4),
            ack: be32(fixed, 8),
            flags: fixed[13],
            window: be16(fixed, 14),
            options,
        },
        offset,
    ))
}

/// Parses one IPv4 packet: a TCP segment (both checksums checked), an ICMP destination
/// unreachable quoting a TCP segment, or anything else as [`Packet::Other`]. Never panics.
pub fn parse(bytes: &[u8]) -> Result<Packet<'_>, ParseError> {
    let (ip, datagram) = parse_ipv4(bytes, true)?;
    let body = &datagram[ip.header_bytes..];
    match ip.protocol {
        PROTO_TCP => {
            let (tcp, offset) = parse_tcp_header(body, true)?;
            let sum =
                ones_complement_add(pseudo_header_sum(ip.src, ip.dst, body.len() as u32), body);
            if checksum_of(sum) != 0 {
                return Err(ParseError::TcpChecksum);
            }
            Ok(Packet::Tcp {
                ip,
                tcp,
                payload: &body[offset..],
            })
        }
        PROTO_ICMP => {
            let icmp = take(body, 8, "ICMP header")?;
            if icmp[0] != ICMP_DEST_UNREACHABLE {
                return Ok(Packet::Other { ip });
            }
            let code = icmp[1];
            let (inner, _) = parse_ipv4(&body[8..], false)?;
            let quoted_tcp = take(&body[8 + inner.header_bytes..], 8, "quoted TCP header")?;
            if inner.protocol != PROTO_TCP {
                return Ok(Packet::Other { ip });
            }
            Ok(Packet::Unreachable {
                ip,
                code,
                quoted: Quoted {
                    src: inner.src,
                    dst: inner.dst,
                    protocol: inner.protocol,
                    src_port: be16(quoted_tcp, 0),
                    dst_port: be16(quoted_tcp, 2),
                    seq: be32(quoted_tcp, 4),
                },
            })
        }
        _ => Ok(Packet::Other { ip }),
    }
}

/// An ICMP destination unreachable (RFC 792) from `src` to `dst` answering `offending` (an IP
/// datagram, of which its IP header and first 8 bytes are quoted): what a router or host
/// sends back. Returns the length written into `buf`.
pub fn encode_unreachable(
    buf: &mut [u8],
    src: [u8; 4],
    dst: [u8; 4],
    code: u8,
    offending: &[u8],
) -> Result<usize, EncodeError> {
    let header = offending
        .first()
        .map_or(20, |b| usize::from(b & 0x0f) * 4)
        .max(20);
    let quoted = offending.len().min(header + 8);
    let total = 20 + 8 + quoted;
    if buf.len() < total {
        return Err(EncodeError::BufferTooSmall {
            have: buf.len(),
            need: total,
        });
    }
    write_ipv4_header(&mut buf[..20], src, dst, PROTO_ICMP, total as u16, 0);
    let icmp = &mut buf[20..total];
    icmp[0] = ICMP_DEST_UNREACHABLE;
    icmp[1] = code;
    icmp[2..8].fill(0);
    icmp[8..].copy_from_slice(&offending[..quoted]);
    let sum = checksum_of(ones_complement_add(0, icmp));
    icmp[2..4].copy_from_slice(&sum.to_be_bytes());
    Ok(total)
}

/// The SACK blocks of `options` as the endpoints' [`SackBlocks`], each edge unwrapped by `f`
/// (blocks `f` rejects are left out).
pub fn sack_blocks(
    options: &WireOptions,
    mut f: impl FnMut(WireSackBlock) -> Option<(u64, u64)>,
) -> SackBlocks {
    let mut out = SackBlocks::default();
    for b in options.sack() {
        if let Some((left, right)) = f(*b) {
            out.push(super::segment::SackBlock { left, right });
        }
    }
    out
}

/// The options of a received header as the endpoints' [`Options`], without SACK blocks
/// (which need unwrapping, [`sack_blocks`]).
pub fn segment_options(options: &WireOptions) -> Options {
    Options {
        mss_bytes: options.mss_bytes,
        window_shift: options.window_shift,
        sack_permitted: options.sack_permitted,
        timestamps: options.timestamps,
        ..Options::default()
    }
}

impl fmt::Display for Quoted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d] = self.dst;
        write!(f, "{a}.{b}.{c}.{d}:{}", self.dst_port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecn_set_in_place_keeps_the_checksum_right() {
        let mut ip = [0u8; 20];
        write_ipv4_header(&mut ip, [10, 0, 0, 1], [10, 0, 0, 2], 6, 1500, 0x1234);
        for ecn in [0b10, 0b11, 0b01, 0b00] {
            set_ipv4_ecn(&mut ip, ecn);
            assert_eq!(ip[1] & 0b11, ecn);
            // A header with its checksum sums to all ones (RFC 791 3.1), as one written anew.
            assert_eq!(checksum_of(ones_complement_add(0, &ip)), 0, "ecn {ecn:#b}");
            let mut fresh = ip;
            fresh[10..12].fill(0);
            let c = checksum_of(ones_complement_add(0, &fresh));
            assert_eq!(c.to_be_bytes(), [ip[10], ip[11]]);
        }
    }

    fn header() -> TcpHeader {
        let mut options = WireOptions {
            timestamps: Some(Timestamps {
                tsval: 7,
                tsecr: 0xdead_beef,
            }),
            ..WireOptions::default()
        };
        options.push_sack(WireSackBlock {
            left: 0xffff_fff0,
            right: 10,
        });
        TcpHeader {
            src_port: 5001,
            dst_port: 49152,
            seq: 1,
            ack: 0xffff_ffff,
            flags: 0x10,
            window: 512,
            options,
        }
    }

    #[test]
    fn a_segment_round_trips_with_valid_checksums() {
        let mut buf = [0u8; 2048];
        let payload: Vec<u8> = (0..101).map(|i| i as u8).collect();
        let n = encode_tcp(
            &mut buf,
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            9,
            &header(),
            &payload,
        )
        .unwrap();
        assert_eq!(n, 20 + 20 + 12 + 12 + 101);
        match parse(&buf[..n]).unwrap() {
            Packet::Tcp {
                ip,
                tcp,
                payload: p,
            } => {
                assert_eq!(ip.src, [10, 0, 0, 1]);
                assert_eq!(ip.id, 9);
                assert_eq!(tcp, header());
                assert_eq!(p, &payload[..]);
            }
            other => panic!("{other:?}"),
        }
        // An independent parser agrees on the checksums.
        let sliced = etherparse::SlicedPacket::from_ip(&buf[..n]).unwrap();
        let Some(etherparse::TransportSlice::Tcp(tcp)) = sliced.transport else {
            panic!("not TCP");
        };
        let etherparse::NetSlice::Ipv4(ip) = sliced.net.unwrap() else {
            panic!("not IPv4");
        };
        let expect = tcp
            .to_header()
            .calc_checksum_ipv4(&ip.header().to_header(), tcp.payload())
            .unwrap();
        assert_eq!(tcp.checksum(), expect);
    }

    #[test]
    fn a_flipped_bit_fails_a_checksum() {
        let mut buf = [0u8; 256];
        let n = encode_tcp(&mut buf, [10, 0, 0, 1], [10, 0, 0, 2], 1, &header(), b"abc").unwrap();
        buf[n - 1] ^= 0x40;
        assert_eq!(parse(&buf[..n]), Err(ParseError::TcpChecksum));
        buf[n - 1] ^= 0x40;
        buf[8] ^= 1;
        assert_eq!(parse(&buf[..n]), Err(ParseError::IpChecksum));
    }

    #[test]
    fn linux_option_layouts_parse() {
        // A Linux SYN-ACK's options: MSS, SACK-permitted, timestamps, NOP, window scale 7.
        let opts = [
            2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 5, 0, 0, 0, 9, 1, 3, 3, 7,
        ];
        let o = parse_options(&opts).unwrap();
        assert_eq!(o.mss_bytes, Some(1460));
        assert!(o.sack_permitted);
        assert_eq!(o.timestamps, Some(Timestamps { tsval: 5, tsecr: 9 }));
        assert_eq!(o.window_shift, Some(7));
        // Unknown kinds are skipped, EOL ends the list.
        let o = parse_options(&[30, 4, 1, 2, 2, 4, 0, 100, 0, 2, 4, 1, 1]).unwrap();
        assert_eq!(o.mss_bytes, Some(100));
        assert_eq!(
            parse_options(&[2, 9, 0]).unwrap_err(),
            ParseError::BadOption {
                kind: 2,
                at: 0,
                len: 9
            }
        );
        assert!(parse_options(&[8]).is_err());
        assert!(parse_options(&[5, 1]).is_err());
    }

    #[test]
    fn unwrapping_follows_the_reference_across_the_wrap() {
        let isn = u32::MAX - 10;
        for seq in [0u64, 5, 11, 12, 1 << 32, (1 << 32) + 7, 5_000_000_000] {
            let wire = wire_ack(isn, seq);
            assert_eq!(unwrap_seq(seq, isn, wire), Some(seq));
            assert_eq!(unwrap_seq(seq.saturating_sub(1000), isn, wire), Some(seq));
            assert_eq!(unwrap_seq(seq + 1000, isn, wire), Some(seq));
        }
        // The SYN's own number is one below the first data byte: not a data number.
        assert_eq!(unwrap_seq(0, isn, isn.wrapping_sub(5)), None);
    }

    #[test]
    fn an_unreachable_quotes_the_segment_it_answers() {
        let mut seg = [0u8; 256];
        let n = encode_tcp(&mut seg, [10, 0, 0, 1], [10, 0, 0, 2], 1, &header(), b"xyz").unwrap();
        let mut buf = [0u8; 256];
        let m = encode_unreachable(&mut buf, [10, 0, 0, 2], [10, 0, 0, 1], 3, &seg[..n]).unwrap();
        match parse(&buf[..m]).unwrap() {
            Packet::Unreachable { code, quoted, .. } => {
                assert_eq!(code, 3);
                assert_eq!(quoted.src, [10, 0, 0, 1]);
                assert_eq!((quoted.src_port, quoted.dst_port), (5001, 49152));
                assert_eq!(quoted.seq, 1);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn truncations_and_bad_lengths_are_errors() {
        let mut buf = [0u8; 256];
        let n = encode_tcp(&mut buf, [10, 0, 0, 1], [10, 0, 0, 2], 1, &header(), b"abc").unwrap();
        for cut in 0..n {
            assert!(parse(&buf[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad = buf;
        bad[0] = 0x44; // IHL 16 bytes
        assert_eq!(parse(&bad[..n]), Err(ParseError::BadHeaderLength(16)));
        let mut bad = buf;
        bad[0] = 0x65;
        assert_eq!(parse(&bad[..n]), Err(ParseError::NotIpv4(6)));
    }
}
