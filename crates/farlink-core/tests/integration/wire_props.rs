//! The TCP/IPv4 wire codec (`tcp::wire`): whatever header and payload is encoded parses back
//! unchanged with valid checksums, and no sequence of bytes (arbitrary, or a valid packet
//! truncated or with bytes changed) makes the parser panic.

use farlink_core::tcp::segment::Timestamps;
use farlink_core::tcp::wire::{
    encode_tcp, parse, Packet, ParseError, TcpHeader, WireOptions, WireSackBlock,
};
use proptest::prelude::*;

fn options() -> impl Strategy<Value = WireOptions> {
    (
        proptest::option::of(any::<u16>()),
        proptest::option::of(0u8..=14),
        any::<bool>(),
        proptest::option::of((any::<u32>(), any::<u32>())),
        proptest::collection::vec((any::<u32>(), any::<u32>()), 0..=4),
    )
        .prop_map(|(mss, shift, sack_permitted, ts, sack)| {
            let mut o = WireOptions::default();
            o.mss_bytes = mss;
            o.window_shift = shift;
            o.sack_permitted = sack_permitted;
            o.timestamps = ts.map(|(tsval, tsecr)| Timestamps { tsval, tsecr });
            for (left, right) in sack {
                // Only as many blocks as fit the 40 bytes of options.
                let mut with = o;
                with.push_sack(WireSackBlock { left, right });
                if with.len_bytes() <= 40 {
                    o = with;
                }
            }
            o
        })
}

fn header() -> impl Strategy<Value = TcpHeader> {
    (
        any::<(u16, u16, u32, u32)>(),
        any::<u8>(),
        any::<u16>(),
        options(),
    )
        .prop_map(
            |((src_port, dst_port, seq, ack), flags, window, options)| TcpHeader {
                src_port,
                dst_port,
                seq,
                ack,
                flags,
                window,
                options,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn encode_then_parse_round_trips(
        hdr in header(),
        payload in proptest::collection::vec(any::<u8>(), 0..1500),
        src in any::<[u8; 4]>(),
        dst in any::<[u8; 4]>(),
        id in any::<u16>(),
    ) {
        let mut buf = vec![0u8; 2048];
        let n = encode_tcp(&mut buf, src, dst, id, &hdr, &payload).unwrap();
        match parse(&buf[..n]) {
            Ok(Packet::Tcp { ip, tcp, payload: p }) => {
                prop_assert_eq!(ip.src, src);
                prop_assert_eq!(ip.dst, dst);
                prop_assert_eq!(ip.id, id);
                prop_assert_eq!(tcp, hdr);
                prop_assert_eq!(p, &payload[..]);
            }
            other => prop_assert!(false, "{:?}", other),
        }
        // Any byte changed in the TCP part is caught by a checksum or a length check, or
        // parses to something else: never a panic.
        for at in [0, 9, n / 2, n - 1] {
            let mut bad = buf[..n].to_vec();
            bad[at] ^= 0x5a;
            let _ = parse(&bad);
        }
        let _ = parse(&buf[..n / 2]);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = parse(&bytes);
    }

    #[test]
    fn an_ipv4_prefix_with_arbitrary_rest_never_panics(
        ihl in 0u8..16,
        proto in prop_oneof![Just(6u8), Just(1u8), any::<u8>()],
        rest in proptest::collection::vec(any::<u8>(), 0..120),
    ) {
        // Past the version check, into the header-length, TCP and ICMP paths.
        let mut bytes = vec![0x40 | ihl, 0, 0, 0, 0, 0, 0, 0, 64, proto, 0, 0];
        bytes.extend_from_slice(&rest);
        let total = (bytes.len() as u16).to_be_bytes();
        if bytes.len() > 4 {
            bytes[2] = total[0];
            bytes[3] = total[1];
        }
        match parse(&bytes) {
            Ok(_) | Err(ParseError::IpChecksum) | Err(_) => {}
        }
    }
}

/// The fuzz target's seeds (`fuzz/corpus/wire_parse`) are what they say they are.
#[test]
fn the_fuzz_seeds_parse_as_named() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/wire_parse");
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
    let syn_ack = read("syn-ack-linux");
    let Ok(Packet::Tcp { tcp, .. }) = parse(&syn_ack) else {
        panic!("syn-ack-linux");
    };
    assert_eq!(tcp.options.mss_bytes, Some(1460));
    assert_eq!(tcp.options.window_shift, Some(7));
    assert!(tcp.options.sack_permitted && tcp.options.timestamps.is_some());
    let ack = read("ack-ts-3-sack");
    let Ok(Packet::Tcp { tcp, .. }) = parse(&ack) else {
        panic!("ack-ts-3-sack");
    };
    assert_eq!(tcp.options.sack().len(), 3);
    let rst = read("rst");
    assert!(matches!(parse(&rst), Ok(Packet::Tcp { tcp, .. }) if tcp.flags == 0x14));
    let icmp = read("icmp-port-unreachable");
    assert!(matches!(
        parse(&icmp),
        Ok(Packet::Unreachable { code: 3, .. })
    ));
}
