//! Offloaded TCP on the wire, sans-I/O: the `virtio_net_hdr` a TUN device opened with
//! `IFF_VNET_HDR` puts in front of every packet, the split of a GSO super-segment into
//! MSS-sized IP packets (the kernel's software GSO), and the GRO-style coalescing of in-order
//! segments of one TCP flow into one super-segment a receiving kernel accepts.
//!
//! Read first: the virtio specification 1.2, section 5.1.6 (`struct virtio_net_hdr`: flags,
//! gso_type, hdr_len, gso_size, csum_start, csum_offset; `VIRTIO_NET_HDR_F_NEEDS_CSUM` means
//! "the checksum at csum_start + csum_offset is a partial one: sum from csum_start to the end
//! and store it there"); RFC 791 3.1 and RFC 8200 3 (the IPv4 and IPv6 headers); RFC 9293 3.1
//! (the TCP header and its pseudo-header); RFC 1071 (the Internet checksum); RFC 3168 6.1.2
//! (CWR on the first segment of a split only). Linux's TCP segmentation (`tcp_gso_segment`)
//! and GRO (`tcp_gro_receive`) are the behaviour matched: sequence numbers and IPv4 ids
//! advanced per segment, PSH and FIN on the last segment only, and a coalesced packet's TCP
//! checksum field holding the pseudo-header's sum for the receiver to finish or trust.
//!
//! The link models carry packets one at a time (queue limits, losses and departure instants
//! are per packet), so what enters them is what [`Segmenter`] cuts; [`Coalescer`] joins only
//! what leaves them together. Nothing here reads a clock or does I/O; every length is checked
//! against the bytes there are, and malformed or hostile headers give a [`GsoError`], never a
//! panic.
//!
//! The header's 16-bit fields are in the host's byte order: a TUN device uses the "legacy"
//! virtio layout, native-endian, unless told otherwise (`TUNSETVNETLE`, which farlink never
//! sets).

use super::segment::Flags;
use super::wire::{checksum_of, ones_complement_add, MAX_PACKET_BYTES, PROTO_TCP};

/// `sizeof(struct virtio_net_hdr)`: the header without `num_buffers`, the size a TUN device
/// uses unless `TUNSETVNETHDRSZ` says otherwise.
pub const VNET_HDR_BYTES: usize = 10;
/// `flags`: the checksum at `csum_start + csum_offset` is to be completed.
pub const VIRTIO_NET_HDR_F_NEEDS_CSUM: u8 = 1;
/// `gso_type` values (virtio 1.2 5.1.6): none, TCP over IPv4, TCP over IPv6, and the ECN bit.
pub const GSO_NONE: u8 = 0;
pub const GSO_TCPV4: u8 = 1;
pub const GSO_TCPV6: u8 = 4;
pub const GSO_ECN: u8 = 0x80;
/// The largest packet either way: IPv4's 16-bit total length (IPv6 jumbograms are not taken).
pub const MAX_SUPER_SEGMENT_BYTES: usize = MAX_PACKET_BYTES;

const IPV4_MIN_HEADER: usize = 20;
const IPV6_HEADER: usize = 40;
const TCP_MIN_HEADER: usize = 20;
/// Offset of the checksum inside the TCP header (RFC 9293 3.1).
const TCP_CHECKSUM_AT: usize = 16;
/// TCP flag bits (RFC 9293 3.1, RFC 3168 6.1): those the segments carry from `Flags`, the
/// three they never set here.
const FIN: u8 = Flags::FIN.bits();
const SYN: u8 = Flags::SYN.bits();
const RST: u8 = Flags::RST.bits();
const PSH: u8 = Flags::PSH.bits();
const ACK: u8 = Flags::ACK.bits();
const URG: u8 = 0x20;
const ECE: u8 = 0x40;
const CWR: u8 = 0x80;

/// What was wrong with a header or a packet.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GsoError {
    #[error("virtio_net_hdr needs {VNET_HDR_BYTES} bytes, {0} given")]
    ShortHeader(usize),
    #[error("gso_type {0:#04x} is not one farlink takes (none, TCPv4, TCPv6)")]
    GsoType(u8),
    #[error("gso_size 0 on a GSO packet")]
    GsoSize,
    #[error("hdr_len {hdr_len} past the end of a {len}-byte packet")]
    HdrLenPastEnd { hdr_len: usize, len: usize },
    #[error("checksum at {start}+{offset} outside a {len}-byte packet")]
    ChecksumPastEnd {
        start: usize,
        offset: usize,
        len: usize,
    },
    #[error("GSO of a packet that is not TCP (IP protocol {0})")]
    NotTcp(u8),
    #[error("malformed packet: {0}")]
    Malformed(&'static str),
    #[error("packet of {0} bytes, more than {MAX_SUPER_SEGMENT_BYTES}")]
    TooLong(usize),
    #[error("segment {index} of {count}")]
    NoSegment { index: usize, count: usize },
    #[error("segment of {need} bytes into a {have}-byte buffer")]
    OutputTooSmall { need: usize, have: usize },
}

/// `struct virtio_net_hdr` (virtio 1.2 5.1.6), without `num_buffers`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VnetHdr {
    pub flags: u8,
    pub gso_type: u8,
    /// Bytes of headers (IP and TCP) at the front; Linux writes its linear part's length
    /// here, which may be more, so it is a bound, and the headers' own lengths are what count.
    pub hdr_len: u16,
    /// Payload bytes of each segment but the last.
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl VnetHdr {
    /// The header at the front of `bytes`.
    pub fn parse(bytes: &[u8]) -> Result<VnetHdr, GsoError> {
        let b = bytes
            .get(..VNET_HDR_BYTES)
            .ok_or(GsoError::ShortHeader(bytes.len()))?;
        let u16_at = |i: usize| u16::from_ne_bytes([b[i], b[i + 1]]);
        Ok(VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: u16_at(2),
            gso_size: u16_at(4),
            csum_start: u16_at(6),
            csum_offset: u16_at(8),
        })
    }

    /// Writes the header into the first [`VNET_HDR_BYTES`] of `out`.
    pub fn write(&self, out: &mut [u8]) -> Result<(), GsoError> {
        let have = out.len();
        let b = out
            .get_mut(..VNET_HDR_BYTES)
            .ok_or(GsoError::OutputTooSmall {
                need: VNET_HDR_BYTES,
                have,
            })?;
        b[0] = self.flags;
        b[1] = self.gso_type;
        b[2..4].copy_from_slice(&self.hdr_len.to_ne_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_ne_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_ne_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_ne_bytes());
        Ok(())
    }
}

/// The IP and TCP headers of a packet, checked against its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TcpView {
    v6: bool,
    /// Bytes of the IP header, and of both headers.
    ip_bytes: usize,
    headers_bytes: usize,
    seq: u32,
    flags: u8,
}

impl TcpView {
    fn payload_bytes(&self, pkt: &[u8]) -> usize {
        pkt.len() - self.headers_bytes
    }
}

/// The IP header of `pkt` (IPv4 without fragmentation, or IPv6 whose next header is TCP) and
/// the TCP header behind it; lengths must match the bytes exactly.
fn parse_tcp(pkt: &[u8]) -> Result<TcpView, GsoError> {
    let version = pkt.first().ok_or(GsoError::Malformed("empty packet"))? >> 4;
    let (v6, ip_bytes) = match version {
        4 => {
            if pkt.len() < IPV4_MIN_HEADER {
                return Err(GsoError::Malformed("IPv4 header cut short"));
            }
            let ihl = usize::from(pkt[0] & 0x0f) * 4;
            if ihl < IPV4_MIN_HEADER || ihl > pkt.len() {
                return Err(GsoError::Malformed("IPv4 header length"));
            }
            if usize::from(u16::from_be_bytes([pkt[2], pkt[3]])) != pkt.len() {
                return Err(GsoError::Malformed("IPv4 total length is not the packet's"));
            }
            // More fragments, or a fragment offset: a piece of a datagram, not a segment.
            if u16::from_be_bytes([pkt[6], pkt[7]]) & 0x3fff != 0 {
                return Err(GsoError::Malformed("IPv4 fragment"));
            }
            if pkt[9] != PROTO_TCP {
                return Err(GsoError::NotTcp(pkt[9]));
            }
            (false, ihl)
        }
        6 => {
            if pkt.len() < IPV6_HEADER {
                return Err(GsoError::Malformed("IPv6 header cut short"));
            }
            if usize::from(u16::from_be_bytes([pkt[4], pkt[5]])) + IPV6_HEADER != pkt.len() {
                return Err(GsoError::Malformed(
                    "IPv6 payload length is not the packet's",
                ));
            }
            // Extension headers are not taken: Linux's TSO emits none on TCP.
            if pkt[6] != PROTO_TCP {
                return Err(GsoError::NotTcp(pkt[6]));
            }
            (true, IPV6_HEADER)
        }
        _ => return Err(GsoError::Malformed("IP version")),
    };
    let tcp = &pkt[ip_bytes..];
    if tcp.len() < TCP_MIN_HEADER {
        return Err(GsoError::Malformed("TCP header cut short"));
    }
    let doff = usize::from(tcp[12] >> 4) * 4;
    if doff < TCP_MIN_HEADER || doff > tcp.len() {
        return Err(GsoError::Malformed("TCP data offset"));
    }
    Ok(TcpView {
        v6,
        ip_bytes,
        headers_bytes: ip_bytes + doff,
        seq: u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]),
        flags: tcp[13],
    })
}

/// The TCP pseudo-header's sum (RFC 9293 3.1; RFC 8200 8.1 for IPv6) for a TCP segment of
/// `tcp_len` bytes in the packet `pkt`, not folded.
fn pseudo_header_sum(pkt: &[u8], v: &TcpView, tcp_len: usize) -> u32 {
    let (addrs, len_word) = if v.v6 {
        (&pkt[8..40], (tcp_len as u32).to_be_bytes())
    } else {
        (&pkt[12..20], (tcp_len as u32).to_be_bytes())
    };
    let sum = ones_complement_add(0, addrs);
    let sum = ones_complement_add(sum, &len_word);
    sum.wrapping_add(u32::from(PROTO_TCP))
}

/// Folds a one's-complement sum to 16 bits, not complemented.
fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Fills in the IPv4 header checksum of `pkt` (header of `ip_bytes`).
fn set_ipv4_checksum(pkt: &mut [u8], ip_bytes: usize) {
    pkt[10..12].fill(0);
    let c = checksum_of(ones_complement_add(0, &pkt[..ip_bytes]));
    pkt[10..12].copy_from_slice(&c.to_be_bytes());
}

/// Sets the IP length field of `pkt` for its length now.
fn set_ip_length(pkt: &mut [u8], v6: bool) {
    let len = if v6 {
        pkt.len() - IPV6_HEADER
    } else {
        pkt.len()
    } as u16;
    pkt[if v6 { 4 } else { 2 }..][..2].copy_from_slice(&len.to_be_bytes());
}

/// One packet the kernel handed over behind a `virtio_net_hdr`, cut into the IP packets the
/// links carry: a GSO super-segment into MSS-sized TCP/IP packets, anything else into itself
/// with a checksum left to complete completed.
#[derive(Debug)]
pub struct Segmenter<'a> {
    pkt: &'a [u8],
    hdr: VnetHdr,
    /// `Some` for a GSO super-segment.
    tcp: Option<TcpView>,
    mss: usize,
    count: usize,
}

impl<'a> Segmenter<'a> {
    /// Checks `hdr` against `pkt` (the bytes after it).
    pub fn new(hdr: VnetHdr, pkt: &'a [u8]) -> Result<Segmenter<'a>, GsoError> {
        if pkt.len() > MAX_SUPER_SEGMENT_BYTES {
            return Err(GsoError::TooLong(pkt.len()));
        }
        if usize::from(hdr.hdr_len) > pkt.len() {
            return Err(GsoError::HdrLenPastEnd {
                hdr_len: usize::from(hdr.hdr_len),
                len: pkt.len(),
            });
        }
        let gso = hdr.gso_type & !GSO_ECN;
        if gso == GSO_NONE {
            if hdr.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM != 0 {
                let (start, offset) = (usize::from(hdr.csum_start), usize::from(hdr.csum_offset));
                if start + offset + 2 > pkt.len() {
                    return Err(GsoError::ChecksumPastEnd {
                        start,
                        offset,
                        len: pkt.len(),
                    });
                }
            }
            return Ok(Segmenter {
                pkt,
                hdr,
                tcp: None,
                mss: pkt.len(),
                count: 1,
            });
        }
        if gso != GSO_TCPV4 && gso != GSO_TCPV6 {
            return Err(GsoError::GsoType(hdr.gso_type));
        }
        if hdr.gso_size == 0 {
            return Err(GsoError::GsoSize);
        }
        let v = parse_tcp(pkt)?;
        if v.v6 != (gso == GSO_TCPV6) {
            return Err(GsoError::Malformed("gso_type names the other IP version"));
        }
        let mss = usize::from(hdr.gso_size);
        Ok(Segmenter {
            pkt,
            hdr,
            tcp: Some(v),
            mss,
            count: v.payload_bytes(pkt).div_ceil(mss).max(1),
        })
    }

    /// How many packets it makes.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Whether it was a GSO super-segment.
    pub fn is_gso(&self) -> bool {
        self.tcp.is_some()
    }

    /// Writes packet `index` into `out`; returns its length.
    pub fn segment(&self, index: usize, out: &mut [u8]) -> Result<usize, GsoError> {
        if index >= self.count {
            return Err(GsoError::NoSegment {
                index,
                count: self.count,
            });
        }
        let Some(v) = self.tcp else {
            return self.plain(out);
        };
        let payload = &self.pkt[v.headers_bytes..];
        let from = index * self.mss;
        let chunk = &payload[from..payload.len().min(from + self.mss)];
        let len = v.headers_bytes + chunk.len();
        let have = out.len();
        let seg = out
            .get_mut(..len)
            .ok_or(GsoError::OutputTooSmall { need: len, have })?;
        seg[..v.headers_bytes].copy_from_slice(&self.pkt[..v.headers_bytes]);
        seg[v.headers_bytes..].copy_from_slice(chunk);
        set_ip_length(seg, v.v6);
        if !v.v6 {
            let id = u16::from_be_bytes([seg[4], seg[5]]).wrapping_add(index as u16);
            seg[4..6].copy_from_slice(&id.to_be_bytes());
            set_ipv4_checksum(seg, v.ip_bytes);
        }
        let tcp_at = v.ip_bytes;
        let seq = v.seq.wrapping_add(from as u32);
        seg[tcp_at + 4..tcp_at + 8].copy_from_slice(&seq.to_be_bytes());
        let mut flags = v.flags;
        if index + 1 < self.count {
            flags &= !(FIN | PSH);
        }
        if index > 0 {
            flags &= !CWR;
        }
        seg[tcp_at + 13] = flags;
        seg[tcp_at + TCP_CHECKSUM_AT..tcp_at + TCP_CHECKSUM_AT + 2].fill(0);
        let sum = pseudo_header_sum(seg, &v, len - tcp_at);
        let c = checksum_of(ones_complement_add(sum, &seg[tcp_at..]));
        seg[tcp_at + TCP_CHECKSUM_AT..tcp_at + TCP_CHECKSUM_AT + 2]
            .copy_from_slice(&c.to_be_bytes());
        Ok(len)
    }

    /// The one packet of a header without GSO, its partial checksum (if any) completed.
    fn plain(&self, out: &mut [u8]) -> Result<usize, GsoError> {
        let len = self.pkt.len();
        let have = out.len();
        let seg = out
            .get_mut(..len)
            .ok_or(GsoError::OutputTooSmall { need: len, have })?;
        seg.copy_from_slice(self.pkt);
        if self.hdr.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM != 0 {
            let start = usize::from(self.hdr.csum_start);
            let at = start + usize::from(self.hdr.csum_offset);
            // The field holds the pseudo-header's sum; the sum from `start` on includes it.
            let mut c = checksum_of(ones_complement_add(0, &seg[start..]));
            // RFC 768: a UDP checksum computed as zero is sent as all ones; for TCP the two
            // are the same value in one's complement.
            if c == 0 {
                c = 0xffff;
            }
            seg[at..at + 2].copy_from_slice(&c.to_be_bytes());
        }
        Ok(len)
    }
}

/// The super-segment being built.
#[derive(Clone, Copy, Debug)]
struct Open {
    view: TcpView,
    /// Payload bytes of the first segment: the `gso_size` of the whole.
    mss: usize,
    next_seq: u32,
    segments: u32,
    /// Bytes of the packet so far (after the `virtio_net_hdr`).
    len: usize,
    /// A short segment, PSH or FIN has ended it.
    closed: bool,
}

/// A packet ready for a TUN device opened with `IFF_VNET_HDR`: the header, then the packet.
#[derive(Debug)]
pub struct Coalesced<'a> {
    pub bytes: &'a [u8],
    /// IP packets it carries.
    pub segments: u32,
}

/// Joins in-order TCP segments of one flow, handed one after another, into GRO-style
/// super-segments (`gso_type` TCPv4/v6, `gso_size` the first segment's payload,
/// `VIRTIO_NET_HDR_F_NEEDS_CSUM` with the pseudo-header's sum in the checksum field, as
/// Linux's GRO leaves a merged packet), and puts every other packet behind a header that
/// asks nothing (its own checksums are valid). A segment joins when it is the next in
/// sequence, its headers equal the first's but for lengths, IPv4 id, sequence number, PSH, FIN
/// and checksums, its payload is at most the first's, and the one before it was full and
/// without PSH or FIN.
#[derive(Debug)]
pub struct Coalescer {
    buf: Vec<u8>,
    open: Option<Open>,
}

impl Default for Coalescer {
    fn default() -> Self {
        Coalescer::new()
    }
}

impl Coalescer {
    pub fn new() -> Coalescer {
        Coalescer {
            buf: vec![0; VNET_HDR_BYTES + MAX_SUPER_SEGMENT_BYTES],
            open: None,
        }
    }

    /// Adds one IP packet (checksums valid). What cannot take it is handed to `out` first;
    /// a packet that cannot start a super-segment is handed on at once.
    pub fn push(
        &mut self,
        pkt: &[u8],
        out: &mut impl FnMut(Coalesced<'_>),
    ) -> Result<(), GsoError> {
        if pkt.len() > MAX_SUPER_SEGMENT_BYTES {
            return Err(GsoError::TooLong(pkt.len()));
        }
        let view = parse_tcp(pkt).ok();
        if let (Some(open), Some(v)) = (self.open, view) {
            if self.joins(&open, &v, pkt) {
                self.append(open, &v, pkt);
                return Ok(());
            }
        }
        self.flush(out);
        let body = &mut self.buf[VNET_HDR_BYTES..VNET_HDR_BYTES + pkt.len()];
        body.copy_from_slice(pkt);
        match view.filter(|v| starts(v, pkt)) {
            Some(v) => {
                let mss = v.payload_bytes(pkt);
                self.open = Some(Open {
                    view: v,
                    mss,
                    next_seq: v.seq.wrapping_add(mss as u32),
                    segments: 1,
                    len: pkt.len(),
                    closed: false,
                });
            }
            None => {
                VnetHdr::default().write(&mut self.buf)?;
                out(Coalesced {
                    bytes: &self.buf[..VNET_HDR_BYTES + pkt.len()],
                    segments: 1,
                });
            }
        }
        Ok(())
    }

    /// Hands what is open to `out`.
    pub fn flush(&mut self, out: &mut impl FnMut(Coalesced<'_>)) {
        let Some(open) = self.open.take() else {
            return;
        };
        let v = open.view;
        let end = VNET_HDR_BYTES + open.len;
        let hdr = if open.segments == 1 {
            // Alone, it goes as it came, its checksums complete.
            VnetHdr::default()
        } else {
            let pkt = &mut self.buf[VNET_HDR_BYTES..end];
            set_ip_length(pkt, v.v6);
            if !v.v6 {
                set_ipv4_checksum(pkt, v.ip_bytes);
            }
            let at = v.ip_bytes + TCP_CHECKSUM_AT;
            let partial = fold(pseudo_header_sum(pkt, &v, open.len - v.ip_bytes));
            pkt[at..at + 2].copy_from_slice(&partial.to_be_bytes());
            VnetHdr {
                flags: VIRTIO_NET_HDR_F_NEEDS_CSUM,
                gso_type: if v.v6 { GSO_TCPV6 } else { GSO_TCPV4 },
                hdr_len: v.headers_bytes as u16,
                gso_size: open.mss as u16,
                csum_start: v.ip_bytes as u16,
                csum_offset: TCP_CHECKSUM_AT as u16,
            }
        };
        // The buffer always holds the header's bytes.
        let _ = hdr.write(&mut self.buf);
        out(Coalesced {
            bytes: &self.buf[..end],
            segments: open.segments,
        });
    }

    fn joins(&self, open: &Open, v: &TcpView, pkt: &[u8]) -> bool {
        let payload = v.payload_bytes(pkt);
        let first = &self.buf[VNET_HDR_BYTES..VNET_HDR_BYTES + open.view.headers_bytes];
        !open.closed
            && v.v6 == open.view.v6
            && v.ip_bytes == open.view.ip_bytes
            && v.headers_bytes == open.view.headers_bytes
            && payload > 0
            && payload <= open.mss
            && open.len + payload <= MAX_SUPER_SEGMENT_BYTES
            && v.seq == open.next_seq
            && v.flags & CWR == 0
            && v.flags & !(PSH | FIN) == open.view.flags & !(PSH | FIN | CWR)
            && same_headers(first, pkt, v)
    }

    fn append(&mut self, mut open: Open, v: &TcpView, pkt: &[u8]) {
        let payload = &pkt[v.headers_bytes..];
        let at = VNET_HDR_BYTES + open.len;
        self.buf[at..at + payload.len()].copy_from_slice(payload);
        open.len += payload.len();
        open.next_seq = open.next_seq.wrapping_add(payload.len() as u32);
        open.segments += 1;
        let ends = v.flags & (PSH | FIN);
        self.buf[VNET_HDR_BYTES + v.ip_bytes + 13] |= ends;
        open.closed = ends != 0 || payload.len() < open.mss;
        self.open = Some(open);
    }
}

/// Whether `pkt` may be the first segment of a super-segment: data, and ACK (with ECE or CWR
/// perhaps) its only other flags.
fn starts(v: &TcpView, pkt: &[u8]) -> bool {
    let others = v.flags & !(ECE | CWR);
    others == ACK && v.payload_bytes(pkt) > 0 && v.flags & (FIN | SYN | RST | PSH | URG) == 0
}

/// Whether the headers of `pkt` equal `first` but for the fields that differ between segments
/// of one super-segment.
fn same_headers(first: &[u8], pkt: &[u8], v: &TcpView) -> bool {
    let ip = v.ip_bytes;
    let ip_same = if v.v6 {
        first[..4] == pkt[..4] && first[6..ip] == pkt[6..ip]
    } else {
        // Total length (2..4), id (4..6) and checksum (10..12) differ.
        first[..2] == pkt[..2] && first[6..10] == pkt[6..10] && first[12..ip] == pkt[12..ip]
    };
    let h = v.headers_bytes;
    // Ports; acknowledgment and data offset; window; urgent pointer and options. Not the
    // sequence number (4..8), the flags (13) or the checksum (16..18).
    ip_same
        && first[ip..ip + 4] == pkt[ip..ip + 4]
        && first[ip + 8..ip + 13] == pkt[ip + 8..ip + 13]
        && first[ip + 14..ip + 16] == pkt[ip + 14..ip + 16]
        && first[ip + 18..h] == pkt[ip + 18..h]
}
