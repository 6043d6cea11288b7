//! Properties of the PPP codecs: encode then decode gives back what was sent, however the
//! octets are chunked; garbage never panics and never grows the decoder past its MRU bound;
//! MP fragmentation and reassembly give back every packet in order.

use farlink_core::time::{SimDuration, SimTime};
use farlink_linkmgr::ppp::hdlc::{self, Decoder, FcsKind, RxOptions, TxOptions};
use farlink_linkmgr::ppp::mp::{self, Fragmenter, Reassembler, ReassemblerConfig, SeqFormat};
use proptest::prelude::*;

fn fcs_strategy() -> impl Strategy<Value = FcsKind> {
    prop_oneof![Just(FcsKind::Fcs16), Just(FcsKind::Fcs32)]
}

proptest! {
    #[test]
    fn hdlc_round_trip(
        frames in prop::collection::vec(
            (prop_oneof![Just(0x0021u16), Just(0x003d), Just(0xc021), Just(0x8021)],
             prop::collection::vec(any::<u8>(), 0..300)),
            1..6),
        accm in any::<u32>(), acfc: bool, pfc: bool, fcs in fcs_strategy(),
        chunk in 1usize..64,
    ) {
        let tx = TxOptions { accm, acfc, pfc, fcs };
        let mut wire = Vec::new();
        let mut scratch = Vec::new();
        for (p, info) in &frames {
            hdlc::encode_frame(&tx, *p, info, &mut scratch, &mut wire);
        }
        // Receiving with the ACCM the sender honoured removes nothing legitimate.
        let mut dec = Decoder::new(RxOptions { accm, fcs, mru: 300 });
        let mut got = Vec::new();
        for c in wire.chunks(chunk) {
            dec.push(c, |r| {
                let f = hdlc::parse_content(r.unwrap()).unwrap();
                got.push((f.protocol, f.info.to_vec()));
            });
        }
        prop_assert_eq!(got, frames);
    }

    #[test]
    fn hdlc_garbage_is_bounded(
        garbage in prop::collection::vec(any::<u8>(), 0..4000),
        mru in 0usize..200, fcs in fcs_strategy(), chunk in 1usize..128,
    ) {
        let mut dec = Decoder::new(RxOptions { accm: 0xffff_ffff, fcs, mru });
        for c in garbage.chunks(chunk) {
            dec.push(c, |r| {
                if let Ok(content) = r {
                    assert!(content.len() <= mru + hdlc::MAX_OVERHEAD);
                    let _ = hdlc::parse_content(content);
                }
            });
            prop_assert!(dec.buffered() <= dec.capacity());
            prop_assert_eq!(dec.capacity(), mru + hdlc::MAX_OVERHEAD);
        }
    }

    #[test]
    fn mp_split_and_reassemble_in_any_interleaving(
        packets in prop::collection::vec(prop::collection::vec(any::<u8>(), 1..100), 1..30),
        members in 1usize..5,
        short: bool,
        first_seq in 0u64..5000,
        order in prop::collection::vec(any::<prop::sample::Index>(), 200),
    ) {
        let format = if short { SeqFormat::Short } else { SeqFormat::Long };
        let mut f = Fragmenter::new(first_seq);
        // Per member, the fragments in the order it carries them.
        let mut lanes: Vec<Vec<Vec<u8>>> = vec![Vec::new(); members];
        for p in &packets {
            f.split(p, members, |i, h, d| {
                let mut info = Vec::new();
                mp::encode_header(h, format, &mut info);
                info.extend_from_slice(d);
                lanes[i].push(info);
            });
        }
        let mut r = Reassembler::new(ReassemblerConfig {
            members, format, mrru: 100, max_fragments: 1024,
            timeout: SimDuration::from_secs(3600),
        });
        for m in 0..members { r.join(m); }
        let mut pos = vec![0usize; members];
        let mut got = Vec::new();
        let mut k = 0;
        // Interleave the members arbitrarily; each delivers in its own order.
        while pos.iter().zip(&lanes).any(|(p, l)| *p < l.len()) {
            let live: Vec<usize> = (0..members).filter(|&m| pos[m] < lanes[m].len()).collect();
            let m = live[order[k % order.len()].index(live.len())];
            k += 1;
            let (h, d) = mp::decode_header(&lanes[m][pos[m]], format).unwrap();
            r.on_fragment(m, h, d);
            pos[m] += 1;
            r.release(SimTime::ZERO, |p| got.push(p.to_vec()));
        }
        prop_assert_eq!(got, packets);
        prop_assert_eq!(r.held_fragments(), 0);
    }

    #[test]
    fn mp_reassembler_fed_garbage_stays_bounded(
        frags in prop::collection::vec(
            (0usize..4, prop::collection::vec(any::<u8>(), 0..40)), 0..400),
        short: bool,
    ) {
        let format = if short { SeqFormat::Short } else { SeqFormat::Long };
        let mut r = Reassembler::new(ReassemblerConfig {
            members: 3, format, mrru: 64, max_fragments: 16,
            timeout: SimDuration::from_secs(1),
        });
        for m in 0..3 { r.join(m); }
        for (i, (m, info)) in frags.iter().enumerate() {
            if let Ok((h, d)) = mp::decode_header(info, format) {
                r.on_fragment(*m, h, d);
            }
            let now = SimTime::ZERO + SimDuration::from_millis(100 * i as u64);
            r.release(now, |p| assert!(p.len() <= 64));
            prop_assert!(r.held_fragments() <= 17);
        }
    }
}

proptest! {
    #[test]
    fn lcp_fed_garbage_never_panics_and_keeps_a_timer_while_negotiating(
        packets in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 0..40),
        codes in prop::collection::vec(1u8..12, 40),
    ) {
        use farlink_linkmgr::ppp::lcp::{Lcp, LcpConfig, LcpState};
        let mut l = Lcp::new(LcpConfig::multilink(0x1234_5678));
        l.open(SimTime::ZERO);
        for (i, mut p) in packets.into_iter().enumerate() {
            // Half the packets get a valid code and length so they reach the option parser.
            if i % 2 == 0 && p.len() >= 4 {
                p[0] = codes[i];
                let n = p.len() as u16;
                p[2..4].copy_from_slice(&n.to_be_bytes());
            }
            let now = SimTime::ZERO + SimDuration::from_millis(100 * i as u64);
            l.on_packet(now, &p);
            l.on_timer(now);
            while l.poll().is_some() {}
            if matches!(l.state(), LcpState::ReqSent | LcpState::AckRcvd | LcpState::AckSent
                | LcpState::Closing | LcpState::Stopping) {
                prop_assert!(l.next_wakeup().is_some());
            }
        }
    }
}

proptest! {
    #[test]
    fn simulated_modem_fed_garbage_never_panics(
        chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..200), 0..30),
        outcomes in prop::collection::vec(0u8..5, 30),
    ) {
        use farlink_linkmgr::ppp::dce::{Dce, DceConfig, DceOutput, DialOutcome};
        let mut d = Dce::new(DceConfig::iridium());
        for (i, c) in chunks.iter().enumerate() {
            let now = SimTime::ZERO + SimDuration::from_millis(700 * i as u64);
            d.on_host_bytes(now, c);
            d.on_timer(now);
            match outcomes[i] {
                0 => d.on_dial_outcome(now, DialOutcome::Connected),
                1 => d.on_dial_outcome(now, DialOutcome::Busy),
                2 => d.on_call_lost(now),
                3 => d.on_peer_bytes(now, c),
                _ => {}
            }
            while let Some(o) = d.poll() {
                if let DceOutput::ToPeer { at, data } = o {
                    prop_assert!(at >= now && !data.is_empty());
                }
            }
        }
    }
}
