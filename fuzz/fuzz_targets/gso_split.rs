//! A `virtio_net_hdr` and a packet into `tcp::gso`: splitting never panics, every packet it
//! cuts is no longer than the super-segment, and the coalescer takes whatever comes.

#![no_main]

use farlink_core::tcp::gso::{Coalesced, Coalescer, Segmenter, VnetHdr};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(hdr) = VnetHdr::parse(data) else {
        return;
    };
    let pkt = &data[farlink_core::tcp::gso::VNET_HDR_BYTES..];
    let mut buf = vec![0u8; 65_536];
    let mut coalescer = Coalescer::new();
    let mut sink = |_: Coalesced<'_>| {};
    if let Ok(seg) = Segmenter::new(hdr, pkt) {
        for i in 0..seg.count().min(256) {
            let n = seg.segment(i, &mut buf).expect("a checked super-segment cuts");
            assert!(n <= pkt.len());
            let _ = coalescer.push(&buf[..n], &mut sink);
        }
    }
    let _ = coalescer.push(pkt, &mut sink);
    coalescer.flush(&mut sink);
});
