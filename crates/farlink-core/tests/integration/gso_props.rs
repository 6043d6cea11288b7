//! Offloaded TCP (`tcp::gso`): a GSO super-segment split into MSS-sized packets gives packets
//! whose lengths and IPv4/IPv6 and TCP checksums an independent parser (etherparse) finds
//! valid, and coalescing them gives back the super-segment's bytes; hostile headers and
//! arbitrary bytes give errors, never a panic.

use etherparse::{Ipv4HeaderSlice, Ipv6HeaderSlice, TcpHeaderSlice};
use farlink_core::tcp::gso::{
    Coalesced, Coalescer, GsoError, Segmenter, VnetHdr, GSO_NONE, GSO_TCPV4, GSO_TCPV6,
    VIRTIO_NET_HDR_F_NEEDS_CSUM, VNET_HDR_BYTES,
};
use farlink_core::tcp::wire::{checksum_of, ones_complement_add};
use proptest::prelude::*;

const ACK: u8 = 0x10;
const PSH: u8 = 0x08;
const FIN: u8 = 0x01;
const ECE: u8 = 0x40;
const CWR: u8 = 0x80;

/// A super-segment as Linux's TCP hands it to a device with TSO: IP lengths for the whole,
/// IPv4 header checksum valid, the TCP checksum field holding the pseudo-header's sum.
#[derive(Clone, Debug)]
struct Spec {
    v6: bool,
    src: [u8; 16],
    dst: [u8; 16],
    ports: (u16, u16),
    seq: u32,
    ack: u32,
    window: u16,
    id: u16,
    ttl: u8,
    tos: u8,
    options: Vec<u8>,
    flags: u8,
    mss: u16,
    payload: Vec<u8>,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        (any::<bool>(), any::<[u8; 16]>(), any::<[u8; 16]>()),
        (
            any::<(u16, u16)>(),
            any::<u32>(),
            any::<u32>(),
            any::<u16>(),
        ),
        (any::<u16>(), 1u8.., any::<u8>()),
        (0usize..=10).prop_flat_map(|words| proptest::collection::vec(any::<u8>(), words * 4)),
        (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
        prop_oneof![1u16..=16, 500u16..=1460, 1461u16..=9000],
        (1usize..=12_000).prop_flat_map(|n| proptest::collection::vec(any::<u8>(), n)),
    )
        .prop_map(
            |(
                (v6, src, dst),
                (ports, seq, ack, window),
                (id, ttl, tos),
                options,
                f,
                mss,
                payload,
            )| {
                let mut flags = ACK;
                for (on, bit) in [(f.0, ECE), (f.1, CWR), (f.2, PSH), (f.3, FIN)] {
                    if on {
                        flags |= bit;
                    }
                }
                Spec {
                    v6,
                    src,
                    dst,
                    ports,
                    seq,
                    ack,
                    window,
                    id,
                    ttl,
                    tos,
                    options,
                    flags,
                    mss,
                    payload,
                }
            },
        )
}

fn fold_u64(mut sum: u64) -> u32 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u32
}

fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// The virtio_net_hdr and the packet, as the kernel would give them.
fn build(s: &Spec) -> (VnetHdr, Vec<u8>) {
    let ip_len = if s.v6 { 40 } else { 20 };
    let tcp_len = 20 + s.options.len() + s.payload.len();
    let mut p = vec![0u8; ip_len + tcp_len];
    if s.v6 {
        p[0] = 0x60 | (s.tos >> 4);
        p[1] = s.tos << 4;
        p[4..6].copy_from_slice(&(tcp_len as u16).to_be_bytes());
        p[6] = 6;
        p[7] = s.ttl;
        p[8..24].copy_from_slice(&s.src);
        p[24..40].copy_from_slice(&s.dst);
    } else {
        p[0] = 0x45;
        p[1] = s.tos;
        let total = p.len() as u16;
        p[2..4].copy_from_slice(&total.to_be_bytes());
        p[4..6].copy_from_slice(&s.id.to_be_bytes());
        p[6] = 0x40; // DF
        p[8] = s.ttl;
        p[9] = 6;
        p[12..16].copy_from_slice(&s.src[..4]);
        p[16..20].copy_from_slice(&s.dst[..4]);
        let c = checksum_of(ones_complement_add(0, &p[..20]));
        p[10..12].copy_from_slice(&c.to_be_bytes());
    }
    let t = ip_len;
    p[t..t + 2].copy_from_slice(&s.ports.0.to_be_bytes());
    p[t + 2..t + 4].copy_from_slice(&s.ports.1.to_be_bytes());
    p[t + 4..t + 8].copy_from_slice(&s.seq.to_be_bytes());
    p[t + 8..t + 12].copy_from_slice(&s.ack.to_be_bytes());
    p[t + 12] = (((20 + s.options.len()) / 4) << 4) as u8;
    p[t + 13] = s.flags;
    p[t + 14..t + 16].copy_from_slice(&s.window.to_be_bytes());
    p[t + 20..t + 20 + s.options.len()].copy_from_slice(&s.options);
    p[t + 20 + s.options.len()..].copy_from_slice(&s.payload);
    let addrs = if s.v6 { &p[8..40] } else { &p[12..20] };
    let pseudo = ones_complement_add(
        ones_complement_add(0, addrs),
        &(tcp_len as u32).to_be_bytes(),
    ) + 6;
    p[t + 16..t + 18].copy_from_slice(&fold(pseudo).to_be_bytes());
    let hdr = VnetHdr {
        flags: VIRTIO_NET_HDR_F_NEEDS_CSUM,
        gso_type: if s.v6 { GSO_TCPV6 } else { GSO_TCPV4 },
        hdr_len: (t + 20 + s.options.len()) as u16,
        gso_size: s.mss,
        csum_start: t as u16,
        csum_offset: 16,
    };
    (hdr, p)
}

fn split(hdr: VnetHdr, p: &[u8]) -> Vec<Vec<u8>> {
    let seg = Segmenter::new(hdr, p).expect("a well-formed super-segment");
    let mut buf = vec![0u8; 65_536];
    (0..seg.count())
        .map(|i| {
            let n = seg.segment(i, &mut buf).expect("segment");
            buf[..n].to_vec()
        })
        .collect()
}

fn coalesce(packets: &[Vec<u8>]) -> Vec<(Vec<u8>, u32)> {
    let mut c = Coalescer::new();
    let mut out = Vec::new();
    let mut take = |o: Coalesced<'_>| out.push((o.bytes.to_vec(), o.segments));
    for p in packets {
        c.push(p, &mut take).expect("push");
    }
    c.flush(&mut take);
    out
}

/// The TCP header, payload, and whether both checksums hold, by etherparse.
fn check_packet(p: &[u8], v6: bool) -> (u32, u8, usize) {
    let (tcp_at, tcp) = if v6 {
        let ip = Ipv6HeaderSlice::from_slice(p).expect("IPv6 header");
        assert_eq!(
            usize::from(ip.payload_length()) + 40,
            p.len(),
            "IPv6 length"
        );
        let tcp = TcpHeaderSlice::from_slice(&p[40..]).expect("TCP header");
        let payload = &p[40 + tcp.slice().len()..];
        let want = tcp.calc_checksum_ipv6(&ip, payload).unwrap();
        assert_eq!(tcp.checksum(), want, "TCP checksum (IPv6)");
        (40, tcp)
    } else {
        let ip = Ipv4HeaderSlice::from_slice(p).expect("IPv4 header");
        assert_eq!(usize::from(ip.total_len()), p.len(), "IPv4 total length");
        assert_eq!(
            ip.header_checksum(),
            ip.to_header().calc_header_checksum(),
            "IPv4 header checksum"
        );
        let tcp = TcpHeaderSlice::from_slice(&p[20..]).expect("TCP header");
        let payload = &p[20 + tcp.slice().len()..];
        let want = tcp.calc_checksum_ipv4(&ip, payload).unwrap();
        assert_eq!(tcp.checksum(), want, "TCP checksum (IPv4)");
        (20, tcp)
    };
    let payload = p.len() - tcp_at - tcp.slice().len();
    (tcp.sequence_number(), p[tcp_at + 13], payload)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn split_packets_are_valid_mss_sized_and_in_sequence(s in spec()) {
        let (hdr, p) = build(&s);
        let segs = split(hdr, &p);
        let mss = usize::from(s.mss);
        prop_assert_eq!(segs.len(), s.payload.len().div_ceil(mss));
        let mut payload = Vec::new();
        let mut ids = Vec::new();
        for (i, seg) in segs.iter().enumerate() {
            let (seq, flags, n) = check_packet(seg, s.v6);
            let last = i + 1 == segs.len();
            prop_assert!(n == mss || (last && n <= mss && n > 0), "payload {} of mss {}", n, mss);
            prop_assert_eq!(seq, s.seq.wrapping_add((i * mss) as u32));
            prop_assert_eq!(flags & (PSH | FIN), if last { s.flags & (PSH | FIN) } else { 0 });
            prop_assert_eq!(flags & CWR, if i == 0 { s.flags & CWR } else { 0 });
            prop_assert_eq!(flags & (ACK | ECE), s.flags & (ACK | ECE));
            payload.extend_from_slice(&seg[seg.len() - n..]);
            if !s.v6 {
                ids.push(u16::from_be_bytes([seg[4], seg[5]]));
            }
        }
        prop_assert_eq!(payload, s.payload.clone());
        for (i, id) in ids.iter().enumerate() {
            prop_assert_eq!(*id, s.id.wrapping_add(i as u16));
        }
    }

    #[test]
    fn split_then_coalesce_gives_the_same_bytes(s in spec()) {
        let (hdr, p) = build(&s);
        let segs = split(hdr, &p);
        let out = coalesce(&segs);
        prop_assert_eq!(out.len(), 1, "one flow in order makes one super-segment");
        let (bytes, n) = &out[0];
        prop_assert_eq!(*n as usize, segs.len());
        let got = VnetHdr::parse(bytes).unwrap();
        if segs.len() == 1 {
            // A lone packet goes as it came out of the split: checksums complete, no GSO.
            prop_assert_eq!(got, VnetHdr::default());
            prop_assert_eq!(&bytes[VNET_HDR_BYTES..], &segs[0][..]);
        } else {
            prop_assert_eq!(got, hdr);
            prop_assert_eq!(&bytes[VNET_HDR_BYTES..], &p[..]);
        }
    }

    #[test]
    fn a_lost_segment_ends_the_super_segment_before_it(s in spec(), gap in any::<prop::sample::Index>()) {
        let (hdr, p) = build(&s);
        let mut segs = split(hdr, &p);
        prop_assume!(segs.len() >= 3);
        let lost = 1 + gap.index(segs.len() - 2);
        segs.remove(lost);
        let out = coalesce(&segs);
        prop_assert_eq!(out.len(), 2);
        prop_assert_eq!(out[0].1 as usize, lost);
        prop_assert_eq!(out[0].1 + out[1].1, segs.len() as u32);
    }

    #[test]
    fn the_wide_checksum_sum_equals_rfc_1071_word_by_word(
        bytes in proptest::collection::vec(any::<u8>(), 0..2000),
        start in any::<u32>(),
    ) {
        // The definition: 16-bit big-endian words, an odd last byte padded, end-around carry.
        let mut sum = u64::from(start);
        for w in bytes.chunks(2) {
            sum += u64::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]));
        }
        prop_assert_eq!(checksum_of(ones_complement_add(start, &bytes)), checksum_of(fold_u64(sum)));
    }

    #[test]
    fn hostile_headers_and_bytes_never_panic(
        hdr in any::<[u8; VNET_HDR_BYTES]>(),
        body in proptest::collection::vec(any::<u8>(), 0..3000),
    ) {
        let h = VnetHdr::parse(&hdr).unwrap();
        if let Ok(seg) = Segmenter::new(h, &body) {
            let mut buf = vec![0u8; 4096];
            for i in 0..seg.count().min(64) {
                let _ = seg.segment(i, &mut buf);
            }
        }
        let mut c = Coalescer::new();
        let mut sink = |_: Coalesced<'_>| {};
        let _ = c.push(&body, &mut sink);
        let _ = c.push(&body, &mut sink);
        c.flush(&mut sink);
    }

    #[test]
    fn a_corrupted_super_segment_gives_an_error_or_valid_lengths(
        s in spec(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        hdr_len in any::<u16>(),
        gso_size in any::<u16>(),
    ) {
        let (mut hdr, mut p) = build(&s);
        for (at, byte) in edits {
            let i = at.index(p.len().min(80));
            p[i] = byte;
        }
        hdr.hdr_len = hdr_len;
        hdr.gso_size = gso_size;
        match Segmenter::new(hdr, &p) {
            Ok(seg) => {
                let mut buf = vec![0u8; 65_536];
                let mut payload = 0;
                for i in 0..seg.count() {
                    let n = seg.segment(i, &mut buf).unwrap();
                    prop_assert!(n <= p.len());
                    payload += n;
                }
                prop_assert!(payload >= p.len());
            }
            Err(e) => {
                let known = matches!(e, GsoError::HdrLenPastEnd { .. } | GsoError::GsoSize
                    | GsoError::Malformed(_) | GsoError::NotTcp(_) | GsoError::GsoType(_));
                prop_assert!(known, "{}", e);
            }
        }
    }
}

/// An IPv4 super-segment from 10.10.10.10:40000 to 11.11.11.11:5001 for the example tests,
/// with what each test varies.
fn fixed_v4(options: Vec<u8>, flags: u8, mss: u16, payload: Vec<u8>) -> Spec {
    Spec {
        v6: false,
        src: [10; 16],
        dst: [11; 16],
        ports: (40000, 5001),
        seq: 1,
        ack: 2,
        window: 512,
        id: 7,
        ttl: 64,
        tos: 0,
        options,
        flags,
        mss,
        payload,
    }
}

#[test]
fn hostile_headers_are_named_errors() {
    let s = fixed_v4(
        vec![1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2],
        ACK,
        1448,
        vec![0xab; 5000],
    );
    let (hdr, p) = build(&s);
    let bad = |h: VnetHdr, p: &[u8]| Segmenter::new(h, p).unwrap_err();
    assert_eq!(bad(VnetHdr { gso_size: 0, ..hdr }, &p), GsoError::GsoSize);
    assert!(matches!(
        bad(
            VnetHdr {
                hdr_len: p.len() as u16 + 1,
                ..hdr
            },
            &p
        ),
        GsoError::HdrLenPastEnd { .. }
    ));
    assert_eq!(
        bad(VnetHdr { gso_type: 3, ..hdr }, &p),
        GsoError::GsoType(3)
    );
    let mut udp = p.clone();
    udp[9] = 17;
    assert_eq!(bad(hdr, &udp), GsoError::NotTcp(17));
    assert!(matches!(
        bad(
            VnetHdr {
                gso_type: GSO_TCPV6,
                ..hdr
            },
            &p
        ),
        GsoError::Malformed(_)
    ));
    assert!(matches!(
        bad(hdr, &p[..p.len() - 1]),
        GsoError::Malformed(_)
    ));
    let plain = VnetHdr {
        gso_type: GSO_NONE,
        csum_start: 20,
        csum_offset: u16::MAX,
        ..hdr
    };
    assert!(matches!(bad(plain, &p), GsoError::ChecksumPastEnd { .. }));
    assert!(matches!(
        VnetHdr::parse(&[0; 4]),
        Err(GsoError::ShortHeader(4))
    ));
}

#[test]
fn a_partial_checksum_without_gso_is_completed() {
    let s = fixed_v4(vec![], ACK | PSH, 1448, vec![0x5a; 700]);
    let (hdr, p) = build(&s);
    let plain = VnetHdr {
        gso_type: GSO_NONE,
        gso_size: 0,
        ..hdr
    };
    let seg = Segmenter::new(plain, &p).unwrap();
    assert!(!seg.is_gso());
    assert_eq!(seg.count(), 1);
    let mut buf = vec![0u8; 2048];
    let n = seg.segment(0, &mut buf).unwrap();
    check_packet(&buf[..n], false);
    assert!(matches!(
        seg.segment(1, &mut buf),
        Err(GsoError::NoSegment { .. })
    ));
    assert!(matches!(
        seg.segment(0, &mut buf[..100]),
        Err(GsoError::OutputTooSmall { .. })
    ));
}

#[test]
fn segments_of_two_flows_interleaved_are_not_joined() {
    let mk = |port: u16, seq: u32| {
        let s = Spec {
            ports: (port, 5001),
            seq,
            ..fixed_v4(vec![], ACK, 1000, vec![1; 3000])
        };
        let (h, p) = build(&s);
        split(h, &p)
    };
    let (a, b) = (mk(40000, 1), mk(40001, 1));
    let mixed: Vec<Vec<u8>> = a
        .iter()
        .zip(&b)
        .flat_map(|(x, y)| [x.clone(), y.clone()])
        .collect();
    let out = coalesce(&mixed);
    assert_eq!(out.len(), 6);
    // The same packets flow by flow: one super-segment each.
    let grouped: Vec<Vec<u8>> = a.iter().chain(&b).cloned().collect();
    let out = coalesce(&grouped);
    assert_eq!(out.iter().map(|o| o.1).collect::<Vec<_>>(), vec![3, 3]);
}
