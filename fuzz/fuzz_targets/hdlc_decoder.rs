//! Arbitrary octets from a serial line into the RFC 1662 decoder and the MP reassembler: nothing
//! panics, the decoder never holds more than its MRU bound, every frame it hands up passed its
//! FCS and fits the bound, and the reassembler never holds more than its fragment cap (plus the
//! one that just arrived) nor hands up a packet beyond its MRRU.

#![no_main]

use farlink_linkmgr::ppp::hdlc::{self, Decoder, FcsKind, RxOptions, MAX_OVERHEAD};
use farlink_linkmgr::ppp::mp::{self, Reassembler, ReassemblerConfig, SeqFormat};
use farlink_core::time::{SimDuration, SimTime};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first octets choose the set-up; the rest is the line, cut into chunks at every
    // position a set-up octet names.
    let [setup, mru_octet, chunk_octet, line @ ..] = data else {
        return;
    };
    let fcs = if setup & 1 == 0 { FcsKind::Fcs16 } else { FcsKind::Fcs32 };
    let format = if setup & 2 == 0 { SeqFormat::Long } else { SeqFormat::Short };
    let accm = if setup & 4 == 0 { 0 } else { 0xffff_ffff };
    let mru = usize::from(*mru_octet) * 8;
    let chunk = usize::from(*chunk_octet).max(1);
    let mut dec = Decoder::new(RxOptions { accm, fcs, mru });
    let mut reasm = Reassembler::new(ReassemblerConfig {
        members: 3,
        format,
        mrru: 256,
        max_fragments: 32,
        timeout: SimDuration::from_secs(2),
    });
    for m in 0..3 {
        reasm.join(m);
    }
    for (i, c) in line.chunks(chunk).enumerate() {
        let now = SimTime::ZERO + SimDuration::from_millis(250 * i as u64);
        dec.push(c, |r| {
            let Ok(content) = r else { return };
            assert!(content.len() <= mru + MAX_OVERHEAD);
            if let Ok(f) = hdlc::parse_content(content) {
                if f.protocol == mp::PROTO_MP {
                    if let Ok((h, payload)) = mp::decode_header(f.info, format) {
                        reasm.on_fragment(i % 3, h, payload);
                    }
                }
            }
        });
        assert!(dec.buffered() <= dec.capacity());
        reasm.release(now, |p| assert!(p.len() <= 256));
        assert!(reasm.held_fragments() <= 33);
    }
});
