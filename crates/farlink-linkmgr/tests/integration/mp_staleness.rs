//! What the MP reassembly's staleness timer costs at Iridium rates, measured.
//!
//! Two members at 2400 bit/s, 0.5 s one-way delay; each 1500-byte packet is split over both
//! (one 750-byte fragment each, sent when both members are idle). Every fifth fragment on
//! member 1 is retransmitted by its link layer, so it arrives one fragment time (2.5 s) late;
//! from packet 30 on member 1's call is lost without anyone noticing, so its fragments never
//! come. We count the packets given up although all their fragments were on their way (the
//! cost of a timer too short) and the time the receiver stalls once member 1 is silent (the
//! cost of a timer too long), for FreeBSD's fixed 0.5 s and for `stale_timeout` sized to the
//! members' rate.

use farlink_core::mlppp::loss_rule::stale_timeout;
use farlink_core::time::{BitRate, SimDuration, SimTime};
use farlink_linkmgr::ppp::mp::{Fragmenter, MpHeader, Reassembler, ReassemblerConfig, SeqFormat};

const RATE_BPS: u64 = 2400;
const PACKET_BYTES: usize = 1500;
/// MP header, protocol field, flag and FCS around each fragment.
const FRAME_OVERHEAD_BYTES: usize = 4 + 2 + 1 + 2 + 2;
const PACKETS: usize = 40;
const SILENT_FROM: usize = 30;
const DELAY: SimDuration = SimDuration::from_millis(500);

struct Outcome {
    false_give_ups: usize,
    delivered: usize,
    /// From the arrival of member 0's half of the first packet whose other half never comes
    /// to the moment the receiver gives that packet up.
    stall: SimDuration,
    /// Timer expiries over the run (once member 1 has held the receiver back for a whole
    /// timeout it is presumed silent and no longer holds the following packets back).
    timeouts: u64,
    held_at_end: usize,
}

fn run(timeout: SimDuration) -> Outcome {
    let mut r = Reassembler::new(ReassemblerConfig {
        members: 2,
        format: SeqFormat::Long,
        mrru: 1600,
        max_fragments: 128,
        timeout,
    });
    r.join(0);
    r.join(1);
    let mut f = Fragmenter::new(0);
    let frag_ns = |bytes: usize| (bytes as u64 * 8) * 1_000_000_000 / RATE_BPS;
    // (arrival time, member, header, payload)
    let mut arrivals: Vec<(SimTime, usize, MpHeader, Vec<u8>)> = Vec::new();
    let mut free = [SimTime::ZERO; 2];
    let mut silent_head = None;
    for k in 0..PACKETS {
        let dispatch = free[0].max(free[1]);
        let payload = vec![k as u8; PACKET_BYTES];
        f.split(&payload, 2, |m, h, d| {
            let mut busy = SimDuration::from_nanos(frag_ns(d.len() + FRAME_OVERHEAD_BYTES));
            if m == 1 && k % 5 == 4 {
                busy = busy + busy; // one retransmission
            }
            free[m] = dispatch + busy;
            let at = dispatch + busy + DELAY;
            if m == 1 && k >= SILENT_FROM {
                return;
            }
            if k == SILENT_FROM {
                silent_head = Some(at);
            }
            arrivals.push((at, m, h, d.to_vec()));
        });
    }
    arrivals.sort_by_key(|a| (a.0, a.1));
    let mut delivered = Vec::new();
    let mut first_give_up_after_silence = None;
    let mut i = 0;
    let mut now = SimTime::ZERO;
    loop {
        let next_arrival = arrivals.get(i).map(|a| a.0);
        let next = [next_arrival, r.deadline()].into_iter().flatten().min();
        let Some(t) = next else { break };
        now = now.max(t);
        while i < arrivals.len() && arrivals[i].0 <= now {
            let (_, m, h, d) = &arrivals[i];
            r.on_fragment(*m, *h, d);
            i += 1;
        }
        let before = r.stats().timeouts + r.stats().lost_pkts;
        r.release(now, |p| delivered.push(p[0] as usize));
        let head_arrived = silent_head.is_some_and(|h| now >= h);
        if head_arrived && r.stats().timeouts + r.stats().lost_pkts > before {
            first_give_up_after_silence.get_or_insert(now);
        }
    }
    let false_give_ups = (0..SILENT_FROM).filter(|k| !delivered.contains(k)).count();
    let stall = first_give_up_after_silence
        .expect("the silent packets are given up")
        .saturating_since(silent_head.expect("packet SILENT_FROM sent"));
    Outcome {
        false_give_ups,
        delivered: delivered.len(),
        stall,
        timeouts: r.stats().timeouts,
        held_at_end: r.held_fragments(),
    }
}

#[test]
fn rate_sized_timer_gives_up_nothing_on_its_way_and_stalls_one_timeout() {
    let sized = stale_timeout(
        BitRate::from_bps(RATE_BPS),
        (PACKET_BYTES / 2 + FRAME_OVERHEAD_BYTES) as u64,
        1,
        DELAY,
    );
    let fixed = SimDuration::from_millis(500);
    let a = run(sized);
    let b = run(fixed);
    eprintln!(
        "timeout {:.2} s: {} of {SILENT_FROM} packets given up on their way, {} delivered, \
         stall after silence {:.2} s, {} timer expiries",
        sized.as_secs_f64(),
        a.false_give_ups,
        a.delivered,
        a.stall.as_secs_f64(),
        a.timeouts
    );
    eprintln!(
        "timeout {:.2} s: {} of {SILENT_FROM} packets given up on their way, {} delivered, \
         stall after silence {:.2} s, {} timer expiries",
        fixed.as_secs_f64(),
        b.false_give_ups,
        b.delivered,
        b.stall.as_secs_f64(),
        b.timeouts
    );
    // Sized to the rate: nothing on its way is given up, and a silent member costs one timer.
    assert_eq!(a.false_give_ups, 0);
    assert_eq!(a.stall, sized);
    // One expiry when the silence begins; the packets after it go by the sequence rule, but
    // the very last, which nothing on member 0 follows, waits for the timer again.
    assert_eq!(a.timeouts, 2);
    assert_eq!(a.held_at_end, 0);
    // Every packet with a retransmitted fragment is lost to the fixed 0.5 s.
    assert_eq!(b.false_give_ups, SILENT_FROM / 5);
    assert_eq!(b.stall, fixed);
    // After the silence, member 0's fragments alone complete nothing (each packet lacks its
    // member-1 half), so nothing after SILENT_FROM is handed up.
    assert_eq!(a.delivered, SILENT_FROM);
}
