//! A pcap writer: simulated segments as a capture that Wireshark, tshark, tcpdump and tcptrace
//! open like a real one (sequence numbers, ACKs, windows, SACK and timestamps options, both
//! checksums), so their TCP stream graphs work on simulated runs.
//!
//! Read first: the libpcap file format (the `pcap-savefile(5)` manual page and
//! draft-ietf-opsawg-pcap), the link-layer header types registry (`pcap-linktype(7)`),
//! RFC 791 section 3.1 (IPv4 header), RFC 9293 sections 3.1 and 3.4 (TCP header, sequence
//! numbers), RFC 1071 (the Internet checksum), RFC 7323 and RFC 2018 (options).
//!
//! # Format
//!
//! Classic libpcap, little-endian, magic `0xa1b23c4d` (nanosecond timestamps, so the
//! simulator's nanosecond clock is kept exactly), version 2.4, link type
//! [`LINKTYPE_RAW`] (101): each record is a bare IPv4 packet with no link-layer header.
//! Link type 101 rather than `LINKTYPE_IPV4` (228) because every reader knows it: libpcap maps
//! it to `DLT_RAW`, which tcpdump, tcptrace and Wireshark all decode (checked with tcpdump
//! 4.99, tcptrace 6.6.7 and tshark 4.0), while 228 is recent and unknown to older tools such
//! as tcptrace. It allows IPv4 or IPv6 (told apart by
//! the version nibble); this writer only writes IPv4, which is all 228 would add.
//! Timestamps are the simulated time after a configurable origin, by default
//! 2000-01-01T00:00:00Z (see [`PcapConfig::time_origin_unix_secs`]).
//!
//! # What is written
//!
//! Per segment: a 20-byte IPv4 header (no options; identification counting up per direction,
//! DF set, TTL 64, protocol 6, header checksum), a TCP header with the options laid out
//! exactly as [`Options::len_bytes`] counts them, and the payload as zero bytes (the simulated
//! payload has no content). So the IP total length always equals [`Segment::wire_bytes`].
//! With [`Capture::HeadersOnly`] only the headers are captured (`caplen < len`, as
//! `tcpdump -s` does); the lengths and checksums still describe the full packet.
//!
//! # Sequence numbers
//!
//! The simulator counts sequence numbers from the first data byte (0), unwrapped in a `u64`.
//! On the wire a connection's first data byte is `ISN + 1`, because the SYN occupies the ISN
//! (RFC 9293 section 3.4), and the field is 32 bits. So [`PcapWriter::write_segment`] writes
//! `isn_local + 1 + seq` modulo 2^32 as the sequence number and, when the segment has ACK,
//! `isn_remote + 1 + ack` as the acknowledgement number (the next byte expected in the peer's
//! sequence space); SACK block edges are in the peer's space too and map like the ACK. A
//! segment with SYN carries its sequence number in the SYN itself: its header holds
//! `isn_local + seq`, so a SYN with `seq` 0 carries the ISN and a first data byte 0 still
//! lands on `ISN + 1`. Without ACK the acknowledgement field is 0.
//!
//! The simulation starts connections ESTABLISHED, without a handshake; Wireshark then does not
//! know the window scale (it shows the raw window field) nor the options agreed. Call
//! [`PcapWriter::write_handshake`] first to write a synthetic SYN, SYN-ACK and ACK carrying the
//! options each end offers.
//!
//! # Addresses and ports
//!
//! [`NodeAddresses`] gives each node name a stable private address in `10.0.0.0/16`, picked
//! by FNV-1a of the name and moved deterministically on a collision; [`flow_ports`] gives each
//! flow id its ports. See their documentation.
//!
//! Nothing here reads a clock; a packet allocates nothing but, for the first packet of a
//! direction, its IP identification counter. Identical calls give identical bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};

use crate::links::link::Ecn;

use crate::tcp::segment::{
    encode_window, timestamp_clock, Flags, Options, Segment, Timestamps, IPV4_HEADER_BYTES,
    MAX_OPTIONS_BYTES, TCP_HEADER_BYTES,
};
use crate::tcp::wire::{
    checksum_of, ones_complement_add, set_ipv4_ecn, write_ipv4_header, write_tcp_header, TcpHeader,
    PROTO_TCP,
};
use crate::tcp::{Negotiated, TcpOptions};
use crate::time::SimTime;

/// The magic number of a classic pcap file with nanosecond timestamps.
pub const PCAP_MAGIC_NANOS: u32 = 0xa1b2_3c4d;
/// The file format version written: 2.4, the only one in use.
pub const PCAP_VERSION: (u16, u16) = (2, 4);
/// `LINKTYPE_RAW`: each record is a raw IPv4 or IPv6 packet, no link-layer header.
pub const LINKTYPE_RAW: u32 = 101;
/// The snapshot length announced for full captures: the largest IPv4 packet.
pub const DEFAULT_SNAPLEN: u32 = 65_535;
/// Bytes of the file's global header.
pub const GLOBAL_HEADER_BYTES: usize = 24;
/// Bytes of each record's header.
pub const RECORD_HEADER_BYTES: usize = 16;
/// The largest IPv4 + TCP header this writer produces: no IP options, 40 bytes of TCP options.
pub const MAX_HEADERS_BYTES: u32 = IPV4_HEADER_BYTES + TCP_HEADER_BYTES + MAX_OPTIONS_BYTES;

const NS_PER_S: u64 = 1_000_000_000;

/// Addresses and ports of one direction of a connection: the segment goes from `src` to `dst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Endpoints {
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
    pub src_port: u16,
    pub dst_port: u16,
}

impl Endpoints {
    /// The other direction of the same connection.
    pub fn reversed(&self) -> Endpoints {
        Endpoints {
            src_ip: self.dst_ip,
            dst_ip: self.src_ip,
            src_port: self.dst_port,
            dst_port: self.src_port,
        }
    }
}

/// How much of each packet goes into the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Capture {
    /// The whole packet, payload as zeros: tools that count bytes see every byte.
    #[default]
    Full,
    /// The IP and TCP headers only (`caplen < len`, as `tcpdump -s`): small files; the
    /// original length and the checksums still describe the whole packet.
    HeadersOnly,
}

impl Capture {
    /// The snapshot length announced in the global header.
    pub fn snaplen(self) -> u32 {
        match self {
            Capture::Full => DEFAULT_SNAPLEN,
            Capture::HeadersOnly => MAX_HEADERS_BYTES,
        }
    }
}

/// 2000-01-01T00:00:00Z in Unix seconds: the default [`PcapConfig::time_origin_unix_secs`].
pub const DEFAULT_TIME_ORIGIN_UNIX_SECS: u32 = 946_684_800;

/// How a [`PcapWriter`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PcapConfig {
    pub capture: Capture,
    /// The Unix time, in seconds, of simulated time zero: each record's timestamp is this plus
    /// the simulated time. The default, midnight of 2000-01-01 UTC, shows the simulated time as
    /// the time of day (`tcpdump` prints `00:00:01.5` at 1.5 s) while keeping every timestamp
    /// nonzero: tcptrace takes a zero timestamp for "unset" and misreports the first packet
    /// and the elapsed time of a capture that starts at the epoch. Wireshark's default time
    /// column, seconds since the first packet, does not depend on it.
    pub time_origin_unix_secs: u32,
}

impl Default for PcapConfig {
    fn default() -> Self {
        PcapConfig {
            capture: Capture::Full,
            time_origin_unix_secs: DEFAULT_TIME_ORIGIN_UNIX_SECS,
        }
    }
}

pub use crate::tcp::wire::{wire_ack, wire_seq};

/// A deterministic initial sequence number for one direction of a connection: FNV-1a of its
/// addresses and ports. Any ISN works; this one needs no state and differs between
/// connections, as real ISNs do, so the 32-bit wrap is exercised.
pub fn default_isn(endpoints: &Endpoints) -> u32 {
    let mut bytes = [0u8; 12];
    bytes[0..4].copy_from_slice(&endpoints.src_ip);
    bytes[4..8].copy_from_slice(&endpoints.dst_ip);
    bytes[8..10].copy_from_slice(&endpoints.src_port.to_be_bytes());
    bytes[10..12].copy_from_slice(&endpoints.dst_port.to_be_bytes());
    fnv1a_32(&bytes)
}

/// What one end offers in its SYN, for [`PcapWriter::write_handshake`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SynOffer {
    /// MSS option value (RFC 9293 3.7.1).
    pub mss_bytes: u16,
    /// Window scale option shift count, `None` for no option (RFC 7323 section 2).
    pub window_shift: Option<u8>,
    /// SACK-permitted option (RFC 2018 section 2).
    pub sack_permitted: bool,
    /// Timestamps option (RFC 7323 section 3).
    pub timestamps: bool,
    /// This end's receive window in bytes; its SYN announces it unscaled, saturated at 65535.
    pub window_bytes: u64,
}

impl SynOffer {
    /// What an end with these options and this receive buffer offers. The shift is the one
    /// [`Negotiated::without_handshake`] picks for the buffer, so a data receiver's offer
    /// announces the shift its ACKs' window fields are encoded with.
    pub fn from_tcp_options(options: &TcpOptions, receive_buffer_bytes: u64) -> SynOffer {
        let shift =
            Negotiated::without_handshake(options, options, receive_buffer_bytes).window_shift;
        SynOffer {
            mss_bytes: u16::try_from(options.mss_bytes).unwrap_or(u16::MAX),
            window_shift: options.window_scaling.then_some(shift),
            sack_permitted: options.sack,
            timestamps: options.timestamps,
            window_bytes: receive_buffer_bytes,
        }
    }

    fn syn_window_field(&self) -> u16 {
        encode_window(self.window_bytes, 0)
    }
}

/// Writes a classic pcap file of raw IPv4 packets into any [`Write`].
///
/// It writes small pieces per packet; give it a `BufWriter` around a file, or a `Vec<u8>`.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
    config: PcapConfig,
    /// The next IP identification of each direction.
    next_ip_id: BTreeMap<Endpoints, u16>,
    packets: u64,
}

impl<W: Write> PcapWriter<W> {
    /// A writer with the default [`PcapConfig`] (full packets); writes the global header.
    pub fn new(out: W) -> io::Result<Self> {
        Self::with_config(out, PcapConfig::default())
    }

    /// A writer as `config` says; writes the global header.
    pub fn with_config(mut out: W, config: PcapConfig) -> io::Result<Self> {
        let mut header = [0u8; GLOBAL_HEADER_BYTES];
        header[0..4].copy_from_slice(&PCAP_MAGIC_NANOS.to_le_bytes());
        header[4..6].copy_from_slice(&PCAP_VERSION.0.to_le_bytes());
        header[6..8].copy_from_slice(&PCAP_VERSION.1.to_le_bytes());
        // thiszone (GMT offset) and sigfigs are 0: timestamps are plain UTC-style seconds.
        header[16..20].copy_from_slice(&config.capture.snaplen().to_le_bytes());
        header[20..24].copy_from_slice(&LINKTYPE_RAW.to_le_bytes());
        out.write_all(&header)?;
        Ok(PcapWriter {
            out,
            config,
            next_ip_id: BTreeMap::new(),
            packets: 0,
        })
    }

    /// Writes `seg`, sent at `at` from `endpoints.src` to `endpoints.dst`. `isn_local` is the
    /// initial sequence number of the sender of `seg`, `isn_remote` that of its peer; see the
    /// module documentation for the mapping. The record's timestamp is `at` after
    /// [`PcapConfig::time_origin_unix_secs`].
    ///
    /// Fails with [`io::ErrorKind::InvalidInput`], writing nothing, when the packet would not
    /// fit an IPv4 total length (65535 bytes), the options exceed 40 bytes, or the timestamp
    /// is past 2^32 seconds; otherwise only when the underlying writer fails.
    pub fn write_segment(
        &mut self,
        at: SimTime,
        endpoints: &Endpoints,
        seg: &Segment,
        isn_local: u32,
        isn_remote: u32,
    ) -> io::Result<()> {
        let options_bytes = seg.options.len_bytes();
        if options_bytes > MAX_OPTIONS_BYTES {
            return Err(invalid(format!(
                "TCP options of {options_bytes} bytes exceed {MAX_OPTIONS_BYTES}"
            )));
        }
        let headers_bytes = IPV4_HEADER_BYTES + TCP_HEADER_BYTES + options_bytes;
        let total = u64::from(headers_bytes) + u64::from(seg.payload_bytes);
        let total = u16::try_from(total).map_err(|_| {
            invalid(format!(
                "a packet of {total} bytes does not fit an IPv4 total length"
            ))
        })?;
        let ts_sec = u32::try_from(at.as_nanos() / NS_PER_S)
            .ok()
            .and_then(|s| s.checked_add(self.config.time_origin_unix_secs))
            .ok_or_else(|| invalid(format!("time {at} is past the 32-bit seconds of pcap")))?;
        let ts_nsec = (at.as_nanos() % NS_PER_S) as u32;

        let ip_id = self.next_ip_id.entry(*endpoints).or_insert(0);
        let id = *ip_id;
        *ip_id = ip_id.wrapping_add(1);

        let headers_bytes = headers_bytes as usize;
        let captured = match self.config.capture {
            Capture::Full => u32::from(total),
            Capture::HeadersOnly => headers_bytes as u32,
        };
        let mut buf = [0u8; RECORD_HEADER_BYTES + MAX_HEADERS_BYTES as usize];
        let (record, packet) = buf.split_at_mut(RECORD_HEADER_BYTES);
        record[0..4].copy_from_slice(&ts_sec.to_le_bytes());
        record[4..8].copy_from_slice(&ts_nsec.to_le_bytes());
        record[8..12].copy_from_slice(&captured.to_le_bytes());
        record[12..16].copy_from_slice(&u32::from(total).to_le_bytes());

        let (ip, tcp) = packet.split_at_mut(IPV4_HEADER_BYTES as usize);
        write_ipv4_header(ip, endpoints.src_ip, endpoints.dst_ip, PROTO_TCP, total, id);
        if seg.ecn != Ecn::NotEct {
            set_ipv4_ecn(ip, seg.ecn as u8);
        }
        let header = TcpHeader::from_segment(
            seg,
            endpoints.src_port,
            endpoints.dst_port,
            isn_local,
            isn_remote,
        );
        // The payload is zeros, which add nothing to the checksum.
        write_tcp_header(
            &mut tcp[..headers_bytes - IPV4_HEADER_BYTES as usize],
            endpoints.src_ip,
            endpoints.dst_ip,
            &header,
            &[],
            u32::from(total) - IPV4_HEADER_BYTES,
        );

        self.out
            .write_all(&buf[..RECORD_HEADER_BYTES + headers_bytes])?;
        if self.config.capture == Capture::Full {
            write_zeros(&mut self.out, seg.payload_bytes as usize)?;
        }
        self.packets += 1;
        Ok(())
    }

    /// Writes `packet`, a whole IPv4 packet as it crossed a real interface (the emulator's TUN
    /// devices), seen at `at`; with [`Capture::HeadersOnly`] only as many bytes as the longest
    /// IPv4 and TCP headers.
    ///
    /// Fails with [`io::ErrorKind::InvalidInput`], writing nothing, for a packet longer than
    /// an IPv4 total length or a timestamp past 2^32 seconds.
    pub fn write_packet(&mut self, at: SimTime, packet: &[u8]) -> io::Result<()> {
        let len = u16::try_from(packet.len()).map_err(|_| {
            invalid(format!(
                "a packet of {} bytes does not fit an IPv4 total length",
                packet.len()
            ))
        })?;
        let ts_sec = u32::try_from(at.as_nanos() / NS_PER_S)
            .ok()
            .and_then(|s| s.checked_add(self.config.time_origin_unix_secs))
            .ok_or_else(|| invalid(format!("time {at} is past the 32-bit seconds of pcap")))?;
        let captured = u32::from(len).min(self.config.capture.snaplen());
        let mut record = [0u8; RECORD_HEADER_BYTES];
        record[0..4].copy_from_slice(&ts_sec.to_le_bytes());
        record[4..8].copy_from_slice(&((at.as_nanos() % NS_PER_S) as u32).to_le_bytes());
        record[8..12].copy_from_slice(&captured.to_le_bytes());
        record[12..16].copy_from_slice(&u32::from(len).to_le_bytes());
        self.out.write_all(&record)?;
        self.out.write_all(&packet[..captured as usize])?;
        self.packets += 1;
        Ok(())
    }

    /// Writes a synthetic three-way handshake at `at`: SYN from `client.src` with the
    /// client's offer, SYN-ACK with the server's (each option only if the SYN offered it too,
    /// as RFC 7323 2.2 / 3.2 and RFC 2018 require), and the client's ACK. `client` is the
    /// client → server direction. Sequence numbers follow the module's mapping, so the data
    /// written afterwards with the same ISNs continues the connection; the timestamps option
    /// values come from [`timestamp_clock`] at `at` and echo each other. All three carry the
    /// timestamp `at`, so tools measure a handshake RTT of zero.
    pub fn write_handshake(
        &mut self,
        at: SimTime,
        client: &Endpoints,
        isn_client: u32,
        isn_server: u32,
        client_offer: &SynOffer,
        server_offer: &SynOffer,
    ) -> io::Result<()> {
        let tsval = timestamp_clock(at);
        let syn = Segment {
            flags: Flags::SYN,
            window_field: client_offer.syn_window_field(),
            options: Options {
                mss_bytes: Some(client_offer.mss_bytes),
                window_shift: client_offer.window_shift,
                sack_permitted: client_offer.sack_permitted,
                timestamps: client_offer
                    .timestamps
                    .then_some(Timestamps { tsval, tsecr: 0 }),
                ..Options::default()
            },
            ..Segment::default()
        };
        let scaling = client_offer.window_shift.is_some() && server_offer.window_shift.is_some();
        let timestamps = client_offer.timestamps && server_offer.timestamps;
        let syn_ack = Segment {
            flags: Flags::SYN | Flags::ACK,
            window_field: server_offer.syn_window_field(),
            options: Options {
                mss_bytes: Some(server_offer.mss_bytes),
                window_shift: server_offer.window_shift.filter(|_| scaling),
                sack_permitted: server_offer.sack_permitted && client_offer.sack_permitted,
                timestamps: timestamps.then_some(Timestamps {
                    tsval,
                    tsecr: tsval,
                }),
                ..Options::default()
            },
            ..Segment::default()
        };
        let client_shift = client_offer.window_shift.filter(|_| scaling).unwrap_or(0);
        let ack = Segment {
            flags: Flags::ACK,
            window_field: encode_window(client_offer.window_bytes, client_shift),
            options: Options {
                timestamps: timestamps.then_some(Timestamps {
                    tsval,
                    tsecr: tsval,
                }),
                ..Options::default()
            },
            ..Segment::default()
        };
        let server = client.reversed();
        self.write_segment(at, client, &syn, isn_client, isn_server)?;
        self.write_segment(at, &server, &syn_ack, isn_server, isn_client)?;
        self.write_segment(at, client, &ack, isn_client, isn_server)
    }

    /// Packets written so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Flushes the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The underlying writer, e.g. the bytes so far of a `Vec<u8>`.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// The underlying writer (not flushed).
    pub fn into_inner(self) -> W {
        self.out
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

fn write_zeros(out: &mut impl Write, mut n: usize) -> io::Result<()> {
    const ZEROS: [u8; 1024] = [0; 1024];
    while n > 0 {
        let k = n.min(ZEROS.len());
        out.write_all(&ZEROS[..k])?;
        n -= k;
    }
    Ok(())
}

/// Sets the identification of the IPv4 header `ip` (20 bytes, as [`PcapWriter`] writes them)
/// and its checksum with it: a capture put together from pieces numbers its packets in the
/// order of the file.
pub(crate) fn set_ipv4_id(ip: &mut [u8], id: u16) {
    ip[4..6].copy_from_slice(&id.to_be_bytes());
    ip[10..12].fill(0);
    let checksum = checksum_of(ones_complement_add(0, &ip[..20]));
    ip[10..12].copy_from_slice(&checksum.to_be_bytes());
}

/// 32-bit FNV-1a (offset basis 0x811c9dc5, prime 0x01000193): a small, fixed hash whose value
/// for a given input never changes across Rust versions or platforms, unlike `std`'s hasher.
pub fn fnv1a_32(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in bytes {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// Node addresses are `10.0.x.y` with `y` in 1..=254 (no address ends in .0 or .255, which
/// look like network and broadcast addresses): this many.
pub const NODE_ADDRESS_SLOTS: u32 = 256 * 254;

fn slot_address(slot: u32) -> [u8; 4] {
    [10, 0, (slot / 254) as u8, (slot % 254 + 1) as u8]
}

fn preferred_slot(name: &str) -> u32 {
    fnv1a_32(name.as_bytes()) % NODE_ADDRESS_SLOTS
}

/// The address a node name gets when no other name of the scenario collides with it:
/// `10.0.x.y` at slot `fnv1a_32(name) mod 65024`, slot `s` being `x = s / 254`,
/// `y = s % 254 + 1`.
pub fn preferred_node_address(name: &str) -> [u8; 4] {
    slot_address(preferred_slot(name))
}

/// Stable private IPv4 addresses for a set of node names.
///
/// Each name gets [`preferred_node_address`] unless it is taken; collisions are resolved by
/// taking the names in byte-wise sorted order and moving a name whose slot is taken to the next
/// free slot (wrapping). So the addresses depend only on the set of names, never on the order
/// they are listed in; adding a name can move only a name that collides with it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeAddresses {
    by_name: BTreeMap<String, [u8; 4]>,
}

impl NodeAddresses {
    /// Assigns addresses to `names` (duplicates count once).
    ///
    /// # Panics
    /// With more than [`NODE_ADDRESS_SLOTS`] distinct names.
    pub fn new<I, S>(names: I) -> NodeAddresses
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let names: BTreeSet<String> = names.into_iter().map(|s| s.as_ref().to_owned()).collect();
        assert!(
            names.len() <= NODE_ADDRESS_SLOTS as usize,
            "{} node names do not fit 10.0.0.0/16",
            names.len()
        );
        let mut taken = BTreeSet::new();
        let mut by_name = BTreeMap::new();
        for name in names {
            let mut slot = preferred_slot(&name);
            while !taken.insert(slot) {
                slot = (slot + 1) % NODE_ADDRESS_SLOTS;
            }
            by_name.insert(name, slot_address(slot));
        }
        NodeAddresses { by_name }
    }

    /// The address of `name`, if it was given.
    pub fn get(&self, name: &str) -> Option<[u8; 4]> {
        self.by_name.get(name).copied()
    }

    /// Names and addresses, names in sorted order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, [u8; 4])> {
        self.by_name.iter().map(|(n, a)| (n.as_str(), *a))
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

/// The port of every data receiver (the "server" of a flow).
///
/// A port in the dynamic range, which IANA assigns to no service, so that no Wireshark
/// dissector claims it by default and the zero payload shows as plain `data` (tshark 4.0),
/// where iperf's 5001 or 5201 may be decoded as iperf by newer Wireshark versions.
pub const DATA_RECEIVER_PORT: u16 = 50_001;
/// First port of the IANA dynamic range (RFC 6335 section 6), where data senders' ports start.
pub const FIRST_DYNAMIC_PORT: u16 = 49_152;
/// How many distinct sender ports [`flow_ports`] hands out before wrapping.
pub const SENDER_PORTS: u32 = 16_384;

/// `(sender port, receiver port)` of flow `flow_id`: the sender (the flow's "client") takes
/// `49152 + flow_id mod 16384`, skipping nothing, and the receiver listens on
/// [`DATA_RECEIVER_PORT`]. Two flows between the same pair of nodes share a 4-tuple only when
/// their ids differ by a multiple of 16384.
pub fn flow_ports(flow_id: u32) -> (u16, u16) {
    let sender = FIRST_DYNAMIC_PORT + (flow_id % SENDER_PORTS) as u16;
    (sender, DATA_RECEIVER_PORT)
}

/// The sender → receiver [`Endpoints`] of flow `flow_id` between two node addresses; the ACK
/// direction is its [`Endpoints::reversed`].
pub fn flow_endpoints(flow_id: u32, sender_ip: [u8; 4], receiver_ip: [u8; 4]) -> Endpoints {
    let (src_port, dst_port) = flow_ports(flow_id);
    Endpoints {
        src_ip: sender_ip,
        dst_ip: receiver_ip,
        src_port,
        dst_port,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raw_packet_is_one_record_with_its_length_and_timestamp() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        let packet = [0x45u8; 60];
        w.write_packet(SimTime::from_nanos(1_500_000_007), &packet)
            .unwrap();
        let out = w.into_inner();
        let rec = &out[GLOBAL_HEADER_BYTES..];
        let word = |o: usize| u32::from_le_bytes(rec[o..o + 4].try_into().unwrap());
        assert_eq!(word(0), DEFAULT_TIME_ORIGIN_UNIX_SECS + 1);
        assert_eq!((word(4), word(8), word(12)), (500_000_007, 60, 60));
        assert_eq!(&rec[RECORD_HEADER_BYTES..], &packet[..]);
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        assert!(w.write_packet(SimTime::ZERO, &[0u8; 70_000]).is_err());
        assert_eq!(w.into_inner().len(), GLOBAL_HEADER_BYTES, "nothing written");
    }
    use crate::tcp::segment::{max_sack_blocks, SackBlock};
    use proptest::prelude::*;

    const A: [u8; 4] = [10, 0, 1, 2];
    const B: [u8; 4] = [10, 0, 200, 7];
    const AB: Endpoints = Endpoints {
        src_ip: A,
        dst_ip: B,
        src_port: 49_153,
        dst_port: DATA_RECEIVER_PORT,
    };

    // --- A small, independent reader of what the writer produced. ---

    fn le32(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }
    fn be16(b: &[u8], at: usize) -> u16 {
        u16::from_be_bytes([b[at], b[at + 1]])
    }
    fn be32(b: &[u8], at: usize) -> u32 {
        u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
    }

    #[derive(Debug)]
    struct Record {
        ts_sec: u32,
        ts_nsec: u32,
        orig_len: u32,
        captured: Vec<u8>,
    }

    impl Record {
        /// The whole packet: what was captured, then zeros up to the original length (the
        /// payload is zeros, so this is the packet even when only headers were captured).
        fn packet(&self) -> Vec<u8> {
            let mut p = self.captured.clone();
            p.resize(self.orig_len as usize, 0);
            p
        }
    }

    #[derive(Debug, PartialEq, Eq)]
    struct GlobalHeader {
        magic: u32,
        version: (u16, u16),
        thiszone: u32,
        sigfigs: u32,
        snaplen: u32,
        linktype: u32,
    }

    fn read_pcap(bytes: &[u8]) -> (GlobalHeader, Vec<Record>) {
        assert!(bytes.len() >= 24, "no global header");
        let header = GlobalHeader {
            magic: le32(bytes, 0),
            version: (
                u16::from_le_bytes([bytes[4], bytes[5]]),
                u16::from_le_bytes([bytes[6], bytes[7]]),
            ),
            thiszone: le32(bytes, 8),
            sigfigs: le32(bytes, 12),
            snaplen: le32(bytes, 16),
            linktype: le32(bytes, 20),
        };
        let mut records = Vec::new();
        let mut at = 24;
        while at < bytes.len() {
            assert!(bytes.len() - at >= 16, "truncated record header");
            let caplen = le32(bytes, at + 8) as usize;
            let r = Record {
                ts_sec: le32(bytes, at),
                ts_nsec: le32(bytes, at + 4),
                orig_len: le32(bytes, at + 12),
                captured: bytes[at + 16..at + 16 + caplen].to_vec(),
            };
            assert!(r.captured.len() as u32 <= r.orig_len);
            records.push(r);
            at += 16 + caplen;
        }
        assert_eq!(at, bytes.len());
        (header, records)
    }

    #[derive(Debug)]
    struct Packet {
        version_ihl: u8,
        tos: u8,
        total_len: u16,
        id: u16,
        flags_fragment: u16,
        ttl: u8,
        protocol: u8,
        src: [u8; 4],
        dst: [u8; 4],
        src_port: u16,
        dst_port: u16,
        seq: u32,
        ack: u32,
        data_offset_words: u8,
        reserved_and_flags: u16,
        window: u16,
        urgent: u16,
        options: Vec<u8>,
        payload: Vec<u8>,
    }

    /// The folded one's-complement sum of `bytes`, summed in 64 bits and folded at the end
    /// (the writer folds in 32 bits): a correct checksum makes the sum over the checksummed
    /// bytes 0xffff (RFC 1071 section 1, "to check a checksum").
    fn folded_sum(bytes: &[u8]) -> u16 {
        let mut acc: u64 = 0;
        for (i, &b) in bytes.iter().enumerate() {
            acc += if i % 2 == 0 {
                u64::from(b) << 8
            } else {
                u64::from(b)
            };
        }
        while acc >> 16 != 0 {
            acc = (acc & 0xffff) + (acc >> 16);
        }
        acc as u16
    }

    fn parse(p: &[u8]) -> Packet {
        let ihl = usize::from(p[0] & 0x0f) * 4;
        assert_eq!(ihl, 20);
        assert_eq!(folded_sum(&p[..ihl]), 0xffff, "IPv4 header checksum");
        let total_len = be16(p, 2);
        assert_eq!(usize::from(total_len), p.len());
        let tcp = &p[ihl..];
        let data_offset_words = tcp[12] >> 4;
        let tcp_header_len = usize::from(data_offset_words) * 4;
        // Pseudo-header: source, destination, zero, protocol, TCP length (RFC 9293 3.1).
        let mut pseudo = Vec::new();
        pseudo.extend_from_slice(&p[12..20]);
        pseudo.push(0);
        pseudo.push(p[9]);
        pseudo.extend_from_slice(&(tcp.len() as u16).to_be_bytes());
        pseudo.extend_from_slice(tcp);
        assert_eq!(folded_sum(&pseudo), 0xffff, "TCP checksum");
        Packet {
            version_ihl: p[0],
            tos: p[1],
            total_len,
            id: be16(p, 4),
            flags_fragment: be16(p, 6),
            ttl: p[8],
            protocol: p[9],
            src: p[12..16].try_into().unwrap(),
            dst: p[16..20].try_into().unwrap(),
            src_port: be16(tcp, 0),
            dst_port: be16(tcp, 2),
            seq: be32(tcp, 4),
            ack: be32(tcp, 8),
            data_offset_words,
            reserved_and_flags: be16(tcp, 12) & 0x0fff,
            window: be16(tcp, 14),
            urgent: be16(tcp, 18),
            options: tcp[20..tcp_header_len].to_vec(),
            payload: tcp[tcp_header_len..].to_vec(),
        }
    }

    /// Checks the packet with etherparse: it parses, its checksums agree with etherparse's
    /// own computation, and the options decode to what `seg` carries.
    fn etherparse_check(p: &[u8], seg: &Segment, isn_local: u32, isn_remote: u32) {
        use etherparse::{Ipv4HeaderSlice, TcpHeaderSlice, TcpOptionElement as E};
        let ip = Ipv4HeaderSlice::from_slice(p).expect("IPv4 header parses");
        assert_eq!(ip.total_len(), u16::try_from(seg.wire_bytes()).unwrap());
        assert_eq!(ip.header_checksum(), ip.to_header().calc_header_checksum());
        assert!(ip.dont_fragment() && !ip.more_fragments());
        let tcp = TcpHeaderSlice::from_slice(&p[20..]).expect("TCP header parses");
        let payload = &p[20 + tcp.slice().len()..];
        assert_eq!(payload.len(), seg.payload_bytes as usize);
        assert_eq!(
            tcp.checksum(),
            tcp.calc_checksum_ipv4(&ip, payload).unwrap()
        );
        let syn = seg.flags.contains(Flags::SYN);
        assert_eq!(tcp.syn(), syn);
        assert_eq!(tcp.ack(), seg.flags.contains(Flags::ACK));
        assert_eq!(tcp.fin(), seg.flags.contains(Flags::FIN));
        assert_eq!(tcp.sequence_number(), wire_seq(isn_local, seg.seq, syn));
        if tcp.ack() {
            assert_eq!(tcp.acknowledgment_number(), wire_ack(isn_remote, seg.ack));
        }
        assert_eq!(tcp.window_size(), seg.window_field);

        let mut expected = Vec::new();
        let o = &seg.options;
        if let Some(mss) = o.mss_bytes {
            expected.push(E::MaximumSegmentSize(mss));
        }
        if let Some(shift) = o.window_shift {
            expected.extend([E::Noop, E::WindowScale(shift)]);
        }
        if o.sack_permitted {
            expected.extend([E::Noop, E::Noop, E::SelectiveAcknowledgementPermitted]);
        }
        if let Some(ts) = o.timestamps {
            expected.extend([E::Noop, E::Noop, E::Timestamp(ts.tsval, ts.tsecr)]);
        }
        if let [first, rest @ ..] = o.sack.as_slice() {
            let edge =
                |b: &SackBlock| (wire_ack(isn_remote, b.left), wire_ack(isn_remote, b.right));
            let mut more = [None; 3];
            for (slot, b) in more.iter_mut().zip(rest) {
                *slot = Some(edge(b));
            }
            expected.extend([
                E::Noop,
                E::Noop,
                E::SelectiveAcknowledgement(edge(first), more),
            ]);
        }
        let got: Vec<E> = tcp
            .options_iterator()
            .map(|o| o.expect("option parses"))
            .collect();
        assert_eq!(got, expected);
    }

    fn ts(tsval: u32, tsecr: u32) -> Option<Timestamps> {
        Some(Timestamps { tsval, tsecr })
    }

    fn data_segment(seq: u64, payload_bytes: u32) -> Segment {
        Segment {
            seq,
            ack: 0,
            flags: Flags::ACK,
            payload_bytes,
            window_field: u16::MAX,
            options: Options {
                timestamps: ts(1234, 5678),
                ..Options::default()
            },
            ..Segment::default()
        }
    }

    fn sack_ack() -> Segment {
        let mut seg = Segment {
            ack: 10 * 1448,
            flags: Flags::ACK,
            window_field: 2048,
            options: Options {
                timestamps: ts(0xdead_beef, 7),
                ..Options::default()
            },
            ..Segment::default()
        };
        for (l, r) in [(14, 16), (12, 13), (17, 20)] {
            assert!(seg.options.sack.push(SackBlock {
                left: l * 1448,
                right: r * 1448,
            }));
        }
        seg
    }

    fn write(config: PcapConfig, f: impl FnOnce(&mut PcapWriter<Vec<u8>>)) -> Vec<u8> {
        let mut w = PcapWriter::with_config(Vec::new(), config).unwrap();
        f(&mut w);
        w.into_inner()
    }

    #[test]
    fn global_header_fields() {
        let bytes = PcapWriter::new(Vec::new()).unwrap().into_inner();
        assert_eq!(bytes.len(), GLOBAL_HEADER_BYTES);
        // Little-endian magic: a reader sees 4d 3c b2 a1 and knows byte order and nanoseconds.
        assert_eq!(&bytes[..4], &[0x4d, 0x3c, 0xb2, 0xa1]);
        let (h, records) = read_pcap(&bytes);
        assert_eq!(
            h,
            GlobalHeader {
                magic: 0xa1b2_3c4d,
                version: (2, 4),
                thiszone: 0,
                sigfigs: 0,
                snaplen: 65_535,
                linktype: 101,
            }
        );
        assert!(records.is_empty());

        let config = PcapConfig {
            capture: Capture::HeadersOnly,
            ..PcapConfig::default()
        };
        let bytes = PcapWriter::with_config(Vec::new(), config)
            .unwrap()
            .into_inner();
        assert_eq!(
            read_pcap(&bytes).0.snaplen,
            80,
            "snaplen of a headers-only capture"
        );
    }

    #[test]
    fn data_segment_round_trips() {
        // An ISN near 2^32 so that the sequence number wraps on the wire.
        let (isn_a, isn_b) = (0xffff_fff0, 77);
        let seg = data_segment(5 * 1448, 1448);
        let at = SimTime::from_nanos(3_123_456_789);
        let bytes = write(PcapConfig::default(), |w| {
            w.write_segment(at, &AB, &seg, isn_a, isn_b).unwrap();
        });
        let (_, records) = read_pcap(&bytes);
        let [r] = &records[..] else {
            panic!("one record expected")
        };
        assert_eq!(r.ts_sec, DEFAULT_TIME_ORIGIN_UNIX_SECS + 3);
        assert_eq!(r.ts_nsec, 123_456_789);
        assert_eq!(r.orig_len, 1500);
        assert_eq!(r.captured.len(), 1500);
        assert_eq!(seg.wire_bytes(), 1500);

        let p = parse(&r.packet());
        assert_eq!(p.version_ihl, 0x45);
        assert_eq!(p.tos, 0);
        assert_eq!(p.total_len, 1500);
        assert_eq!(p.id, 0);
        assert_eq!(p.flags_fragment, 0x4000, "DF, offset 0");
        assert_eq!(p.ttl, 64);
        assert_eq!(p.protocol, 6);
        assert_eq!((p.src, p.dst), (A, B));
        assert_eq!((p.src_port, p.dst_port), (49_153, DATA_RECEIVER_PORT));
        // 0xfffffff0 + 1 + 7240 modulo 2^32.
        assert_eq!(p.seq, 7240 - 15);
        assert_eq!(p.ack, isn_b + 1);
        assert_eq!(p.data_offset_words, 8, "20 + 12 bytes of timestamps");
        assert_eq!(p.reserved_and_flags, 0x010, "ACK only");
        assert_eq!(p.window, u16::MAX);
        assert_eq!(p.urgent, 0);
        assert_eq!(
            p.options,
            [1, 1, 8, 10, 0, 0, 0x04, 0xd2, 0, 0, 0x16, 0x2e],
            "NOP NOP TS(1234, 5678)"
        );
        assert_eq!(p.payload.len(), 1448);
        assert!(p.payload.iter().all(|&b| b == 0));
        etherparse_check(&r.packet(), &seg, isn_a, isn_b);
    }

    #[test]
    fn pure_ack_with_sack_blocks_and_timestamps_round_trips() {
        let (isn_a, isn_b) = (1000, 0xffff_ff00);
        let seg = sack_ack();
        let bytes = write(PcapConfig::default(), |w| {
            // The ACK flows B -> A: B is local, A (the data sender) is remote.
            w.write_segment(SimTime::ZERO, &AB.reversed(), &seg, isn_b, isn_a)
                .unwrap();
        });
        let (_, records) = read_pcap(&bytes);
        let r = &records[0];
        assert_eq!((r.ts_sec, r.ts_nsec), (DEFAULT_TIME_ORIGIN_UNIX_SECS, 0));
        assert_eq!(r.orig_len, seg.wire_bytes());
        assert_eq!(seg.wire_bytes(), 80);
        let p = parse(&r.packet());
        assert_eq!(u32::from(p.total_len), seg.wire_bytes());
        assert_eq!((p.src, p.dst), (B, A));
        assert_eq!((p.src_port, p.dst_port), (DATA_RECEIVER_PORT, 49_153));
        assert_eq!(p.seq, isn_b.wrapping_add(1));
        assert_eq!(p.ack, isn_a + 1 + 10 * 1448);
        assert_eq!(p.data_offset_words, 15);
        assert_eq!(p.window, 2048);
        assert!(p.payload.is_empty());
        let edge = |n: u32| (isn_a + 1 + n * 1448).to_be_bytes();
        let mut expected = vec![1, 1, 8, 10, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 7];
        expected.extend([1, 1, 5, 26]);
        for n in [14, 16, 12, 13, 17, 20] {
            expected.extend(edge(n));
        }
        assert_eq!(p.options, expected);
        etherparse_check(&r.packet(), &seg, isn_b, isn_a);
    }

    #[test]
    fn four_sack_blocks_fit_without_timestamps() {
        let mut seg = Segment {
            ack: 1,
            flags: Flags::ACK,
            ..Segment::default()
        };
        for i in 0..max_sack_blocks(false) as u64 {
            assert!(seg.options.sack.push(SackBlock {
                left: 10 * i + 2,
                right: 10 * i + 5,
            }));
        }
        let bytes = write(PcapConfig::default(), |w| {
            w.write_segment(SimTime::ZERO, &AB, &seg, 5, 9).unwrap();
        });
        let (_, records) = read_pcap(&bytes);
        let p = parse(&records[0].packet());
        assert_eq!(p.data_offset_words, 14, "20 + 4 + 4 * 8 bytes");
        assert_eq!(&p.options[..4], &[1, 1, 5, 34]);
        assert_eq!(u32::from(p.total_len), seg.wire_bytes());
        etherparse_check(&records[0].packet(), &seg, 5, 9);
    }

    #[test]
    fn handshake_carries_the_offers_and_continues_into_data() {
        let (isn_c, isn_s) = (0xffff_ffff, 0x1234_5678);
        let client = SynOffer {
            mss_bytes: 1460,
            window_shift: Some(7),
            sack_permitted: true,
            timestamps: true,
            window_bytes: 1 << 22,
        };
        let server = SynOffer {
            mss_bytes: 1400,
            window_shift: Some(3),
            sack_permitted: true,
            timestamps: true,
            window_bytes: 40_000,
        };
        let at = SimTime::from_nanos(2_500_000);
        let first = data_segment(0, 100);
        let bytes = write(PcapConfig::default(), |w| {
            w.write_handshake(at, &AB, isn_c, isn_s, &client, &server)
                .unwrap();
            w.write_segment(at, &AB, &first, isn_c, isn_s).unwrap();
        });
        let (_, records) = read_pcap(&bytes);
        assert_eq!(records.len(), 4);
        let p: Vec<Packet> = records.iter().map(|r| parse(&r.packet())).collect();
        let tsval = 2; // 2.5 ms of a 1 ms clock

        let syn = &p[0];
        assert_eq!((syn.src, syn.dst), (A, B));
        assert_eq!(syn.reserved_and_flags, 0x002);
        assert_eq!(syn.seq, isn_c, "the SYN carries the ISN");
        assert_eq!(syn.ack, 0, "no ACK flag, no acknowledgement number");
        assert_eq!(
            syn.window,
            u16::MAX,
            "SYN windows are unscaled and saturate"
        );
        assert_eq!(syn.data_offset_words, 11);
        assert_eq!(
            syn.options,
            [2, 4, 0x05, 0xb4, 1, 3, 3, 7, 1, 1, 4, 2, 1, 1, 8, 10, 0, 0, 0, tsval, 0, 0, 0, 0]
        );

        let syn_ack = &p[1];
        assert_eq!((syn_ack.src, syn_ack.dst), (B, A));
        assert_eq!(syn_ack.reserved_and_flags, 0x012);
        assert_eq!(syn_ack.seq, isn_s);
        assert_eq!(syn_ack.ack, isn_c.wrapping_add(1));
        assert_eq!(syn_ack.window, 40_000);
        assert_eq!(
            syn_ack.options,
            [
                2, 4, 0x05, 0x78, 1, 3, 3, 3, 1, 1, 4, 2, 1, 1, 8, 10, 0, 0, 0, tsval, 0, 0, 0,
                tsval
            ]
        );

        let ack = &p[2];
        assert_eq!(ack.reserved_and_flags, 0x010);
        assert_eq!(ack.seq, isn_c.wrapping_add(1));
        assert_eq!(ack.ack, isn_s + 1);
        assert_eq!(
            ack.window,
            ((1u32 << 22) >> 7) as u16,
            "scaled by the client's shift"
        );
        assert_eq!(ack.options, [1, 1, 8, 10, 0, 0, 0, tsval, 0, 0, 0, tsval]);

        let data = &p[3];
        assert_eq!(
            data.seq,
            isn_c.wrapping_add(1),
            "first data byte is ISN + 1"
        );
        assert_eq!(data.ack, isn_s + 1);
        // IP identifications count per direction: A->B 0, 1, 2; B->A 0.
        assert_eq!(p.iter().map(|x| x.id).collect::<Vec<_>>(), [0, 0, 1, 2]);
    }

    #[test]
    fn handshake_answers_only_what_the_syn_offered() {
        let client = SynOffer {
            mss_bytes: 536,
            window_shift: None,
            sack_permitted: false,
            timestamps: false,
            window_bytes: 100_000,
        };
        let server = SynOffer::from_tcp_options(&TcpOptions::default(), 1 << 20);
        assert_eq!(server.window_shift, Some(5));
        let bytes = write(PcapConfig::default(), |w| {
            w.write_handshake(SimTime::ZERO, &AB, 1, 2, &client, &server)
                .unwrap();
        });
        let (_, records) = read_pcap(&bytes);
        let p: Vec<Packet> = records.iter().map(|r| parse(&r.packet())).collect();
        assert_eq!(p[0].options, [2, 4, 0x02, 0x18]);
        assert_eq!(p[1].options, [2, 4, 0x05, 0xb4], "MSS only");
        assert_eq!(p[1].window, u16::MAX);
        assert!(p[2].options.is_empty());
        assert_eq!(
            p[2].window,
            u16::MAX,
            "no scaling: 100000 saturates the field"
        );
    }

    #[test]
    fn ip_identification_counts_per_direction_and_wraps() {
        let seg = data_segment(0, 10);
        let bytes = write(PcapConfig::default(), |w| {
            for _ in 0..3 {
                w.write_segment(SimTime::ZERO, &AB, &seg, 0, 0).unwrap();
            }
            w.write_segment(SimTime::ZERO, &AB.reversed(), &seg, 0, 0)
                .unwrap();
            let other_flow = Endpoints {
                src_port: 49_154,
                ..AB
            };
            w.write_segment(SimTime::ZERO, &other_flow, &seg, 0, 0)
                .unwrap();
        });
        let (_, records) = read_pcap(&bytes);
        let ids: Vec<u16> = records.iter().map(|r| parse(&r.packet()).id).collect();
        assert_eq!(ids, [0, 1, 2, 0, 0]);

        let mut w = PcapWriter::new(io::sink()).unwrap();
        w.next_ip_id.insert(AB, u16::MAX);
        w.write_segment(SimTime::ZERO, &AB, &seg, 0, 0).unwrap();
        assert_eq!(w.next_ip_id[&AB], 0);
    }

    /// A mixed capture: handshake, data with a retransmission, SACK ACKs.
    fn mixed(config: PcapConfig) -> Vec<u8> {
        write(config, |w| {
            let offer = SynOffer::from_tcp_options(&TcpOptions::default(), 1 << 20);
            w.write_handshake(SimTime::ZERO, &AB, 42, 4242, &offer, &offer)
                .unwrap();
            for i in 0..4u64 {
                let t = SimTime::from_nanos(1_000_000 * i + 17);
                w.write_segment(t, &AB, &data_segment(i * 1448, 1448), 42, 4242)
                    .unwrap();
            }
            let t = SimTime::from_nanos(1_999_999_999);
            w.write_segment(t, &AB.reversed(), &sack_ack(), 4242, 42)
                .unwrap();
            w.write_segment(t, &AB, &data_segment(1448, 1448), 42, 4242)
                .unwrap();
        })
    }

    #[test]
    fn identical_input_gives_identical_bytes() {
        let config = PcapConfig::default();
        let one = mixed(config);
        assert_eq!(one, mixed(config));
        let (_, records) = read_pcap(&one);
        assert_eq!(records.len(), 9);
        for r in &records {
            parse(&r.packet());
        }
    }

    #[test]
    fn nanosecond_timestamps_split_into_seconds_and_nanoseconds() {
        let config = PcapConfig {
            time_origin_unix_secs: 0,
            ..PcapConfig::default()
        };
        let times = [0, 999_999_999, 1_000_000_000, 86_400_000_000_001];
        let bytes = write(config, |w| {
            for t in times {
                w.write_segment(SimTime::from_nanos(t), &AB, &sack_ack(), 0, 0)
                    .unwrap();
            }
        });
        let (_, records) = read_pcap(&bytes);
        let split: Vec<(u32, u32)> = records.iter().map(|r| (r.ts_sec, r.ts_nsec)).collect();
        assert_eq!(split, [(0, 0), (0, 999_999_999), (1, 0), (86_400, 1)]);
    }

    #[test]
    fn headers_only_capture_keeps_lengths_and_checksums() {
        let config = PcapConfig {
            capture: Capture::HeadersOnly,
            ..PcapConfig::default()
        };
        let bytes = mixed(config);
        let (_, short) = read_pcap(&bytes);
        let (_, full) = read_pcap(&mixed(PcapConfig::default()));
        assert_eq!(short.len(), full.len());
        for (s, f) in short.iter().zip(&full) {
            assert_eq!(s.orig_len, f.orig_len);
            assert_eq!((s.ts_sec, s.ts_nsec), (f.ts_sec, f.ts_nsec));
            let p = parse(&s.packet());
            let headers = 20 + usize::from(p.data_offset_words) * 4;
            assert_eq!(s.captured.len(), headers);
            assert!(s.captured.len() as u32 <= config.capture.snaplen());
            assert_eq!(
                s.packet(),
                f.captured,
                "same packet once the zeros are restored"
            );
        }
    }

    #[test]
    fn rejects_what_does_not_fit_and_writes_nothing() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        let too_long = data_segment(0, 65_535 - 40 - 12 + 1);
        let err = w
            .write_segment(SimTime::ZERO, &AB, &too_long, 0, 0)
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        let late = SimTime::from_nanos(u64::from(u32::MAX) * NS_PER_S);
        let err = w.write_segment(late, &AB, &sack_ack(), 0, 0).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(w.packets(), 0);
        assert_eq!(w.get_ref().len(), GLOBAL_HEADER_BYTES);
        assert!(w.next_ip_id.is_empty(), "no identification used up");
        // The largest packet fits.
        let largest = data_segment(0, 65_535 - 40 - 12);
        w.write_segment(SimTime::ZERO, &AB, &largest, 0, 0).unwrap();
        let (_, records) = read_pcap(w.get_ref());
        assert_eq!(parse(&records[0].packet()).total_len, 65_535);
    }

    #[test]
    fn sequence_mapping_wraps_and_counts_the_syn() {
        assert_eq!(wire_seq(7, 0, false), 8);
        assert_eq!(wire_seq(7, 0, true), 7);
        assert_eq!(wire_seq(u32::MAX, 0, false), 0);
        assert_eq!(wire_seq(u32::MAX, 1 << 32, false), 0, "modulo 2^32");
        assert_eq!(wire_seq(0, (1 << 32) + 5, false), 6);
        assert_eq!(wire_ack(u32::MAX - 1, 3), 2);
    }

    #[test]
    fn fnv1a_matches_published_vectors() {
        assert_eq!(fnv1a_32(b""), 0x811c_9dc5);
        assert_eq!(fnv1a_32(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a_32(b"foobar"), 0xbf9c_f968);
    }

    #[test]
    fn node_addresses_are_private_stable_and_unique() {
        assert_eq!(slot_address(0), [10, 0, 0, 1]);
        assert_eq!(slot_address(253), [10, 0, 0, 254]);
        assert_eq!(slot_address(254), [10, 0, 1, 1]);
        assert_eq!(slot_address(NODE_ADDRESS_SLOTS - 1), [10, 0, 255, 254]);
        // Pinned: addresses must not change between versions, or old captures stop matching.
        let slot = fnv1a_32(b"ground") % NODE_ADDRESS_SLOTS;
        assert_eq!(preferred_node_address("ground"), slot_address(slot));

        // Two names with the same preferred slot.
        let names: Vec<String> = (0..5000).map(|i| format!("node{i}")).collect();
        let mut seen = BTreeMap::new();
        let (a, b) = names
            .iter()
            .find_map(|n| {
                seen.insert(preferred_slot(n), n.clone())
                    .map(|earlier| (earlier, n.clone()))
            })
            .expect("a collision among 5000 names");
        let (first, second) = if a < b { (a, b) } else { (b, a) };
        let plan = NodeAddresses::new([&second, &first, &second]);
        assert_eq!(plan.len(), 2, "duplicates count once");
        assert_eq!(plan.get(&first), Some(preferred_node_address(&first)));
        let moved = (preferred_slot(&first) + 1) % NODE_ADDRESS_SLOTS;
        assert_eq!(plan.get(&second), Some(slot_address(moved)));
        assert_eq!(
            plan,
            NodeAddresses::new([&first, &second]),
            "order does not matter"
        );

        let all = NodeAddresses::new(&names);
        let distinct: BTreeSet<[u8; 4]> = all.iter().map(|(_, a)| a).collect();
        assert_eq!(distinct.len(), names.len());
        assert!(distinct
            .iter()
            .all(|a| a[0] == 10 && a[1] == 0 && (1..=254).contains(&a[3])));
        assert_eq!(all.get("unknown"), None);
    }

    #[test]
    fn flows_get_distinct_sender_ports() {
        assert_eq!(flow_ports(0), (49_152, DATA_RECEIVER_PORT));
        assert_eq!(flow_ports(16_383), (65_535, DATA_RECEIVER_PORT));
        assert_eq!(flow_ports(16_384), flow_ports(0));
        let e = flow_endpoints(3, A, B);
        assert_eq!(
            e,
            Endpoints {
                src_ip: A,
                dst_ip: B,
                src_port: 49_155,
                dst_port: DATA_RECEIVER_PORT,
            }
        );
        assert_eq!(e.reversed().reversed(), e);
        assert_ne!(default_isn(&e), default_isn(&e.reversed()));
    }

    fn arb_segment() -> impl Strategy<Value = Segment> {
        let syn_options = (
            proptest::option::of(any::<u16>()),
            proptest::option::of(0u8..=14),
            any::<bool>(),
            proptest::option::of(any::<(u32, u32)>()),
        )
            .prop_map(|(mss, shift, sack_permitted, ts)| Options {
                mss_bytes: mss,
                window_shift: shift,
                sack_permitted,
                timestamps: ts.map(|(tsval, tsecr)| Timestamps { tsval, tsecr }),
                ..Options::default()
            });
        let ack_options = (
            proptest::option::of(any::<(u32, u32)>()),
            proptest::collection::vec((any::<u64>(), 1u64..100_000), 0..=4),
        )
            .prop_map(|(ts, blocks)| {
                let timestamps = ts.map(|(tsval, tsecr)| Timestamps { tsval, tsecr });
                let mut options = Options {
                    timestamps,
                    ..Options::default()
                };
                for (left, len) in blocks
                    .into_iter()
                    .take(max_sack_blocks(timestamps.is_some()))
                {
                    let left = left >> 1;
                    options.sack.push(SackBlock {
                        left,
                        right: left + len,
                    });
                }
                options
            });
        let flags = prop_oneof![
            Just(Flags::SYN),
            Just(Flags::SYN | Flags::ACK),
            Just(Flags::ACK),
            Just(Flags::ACK | Flags::FIN),
            Just(Flags::NONE),
        ];
        (
            flags,
            any::<u64>(),
            any::<u64>(),
            0u32..3000,
            any::<u16>(),
            syn_options,
            ack_options,
        )
            .prop_map(
                |(flags, seq, ack, payload_bytes, window_field, syn, other)| Segment {
                    seq,
                    ack,
                    flags,
                    payload_bytes,
                    window_field,
                    options: if flags.contains(Flags::SYN) {
                        syn
                    } else {
                        other
                    },
                    ..Segment::default()
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn any_segment_parses_back_with_valid_checksums(
            seg in arb_segment(),
            isn_local in any::<u32>(),
            isn_remote in any::<u32>(),
            at in 0u64..(1 << 50),
            ip in any::<([u8; 4], [u8; 4], u16, u16)>(),
        ) {
            let endpoints = Endpoints {
                src_ip: ip.0,
                dst_ip: ip.1,
                src_port: ip.2,
                dst_port: ip.3,
            };
            let bytes = write(PcapConfig::default(), |w| {
                w.write_segment(SimTime::from_nanos(at), &endpoints, &seg, isn_local, isn_remote)
                    .unwrap();
            });
            let (_, records) = read_pcap(&bytes);
            let packet = records[0].packet();
            prop_assert_eq!(packet.len() as u32, seg.wire_bytes());
            let p = parse(&packet);
            prop_assert_eq!((p.src, p.dst, p.src_port, p.dst_port), ip);
            prop_assert_eq!(u32::from(p.reserved_and_flags), u32::from(seg.flags.bits()));
            prop_assert_eq!(p.options.len() as u32, seg.options.len_bytes());
            if !seg.flags.contains(Flags::ACK) {
                prop_assert_eq!(p.ack, 0);
            }
            etherparse_check(&packet, &seg, isn_local, isn_remote);
        }
    }
}
