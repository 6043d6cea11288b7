//! The TCP/IPv4 wire parser (`tcp::wire::parse`) on arbitrary bytes: it never panics, and a
//! TCP segment it accepts encodes back to the same header and payload.

#![no_main]

use farlink_core::tcp::wire::{encode_tcp, parse, Packet};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(Packet::Tcp { ip, tcp, payload }) = parse(data) {
        let mut buf = vec![0u8; 65_536];
        if let Ok(n) = encode_tcp(&mut buf, ip.src, ip.dst, ip.id, &tcp, payload) {
            match parse(&buf[..n]) {
                Ok(Packet::Tcp {
                    tcp: again,
                    payload: p,
                    ..
                }) => {
                    assert_eq!(again, tcp);
                    assert_eq!(p, payload);
                }
                other => panic!("re-encoded segment does not parse: {other:?}"),
            }
        }
    }
});
