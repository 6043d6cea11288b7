//! Two bundle endpoints ([`farlink_linkmgr::ppp::bond::Bond`], the daemons' data plane) joined by
//! simulated modem calls ([`farlink_linkmgr::modemarq::CallDir`], modem-sim's), in
//! virtual time: octets cross in ARQ frames that an error model damages; a frame damaged on
//! every try loses its octets from the middle of a PPP frame. The receiving bond must count
//! the broken frames, give the fragments up by its rules and go on delivering intact packets.

use farlink_core::arq::{ArqConfig, ArqLink, ArqLinkConfig, ArqMode};
use farlink_core::loss::{AnyLoss, Bernoulli, NoLoss};
use farlink_core::rng::StreamRng;
use farlink_core::time::{BitRate, SimDuration, SimTime};
use farlink_linkmgr::modemarq::{CallDir, CallOutput};
use farlink_linkmgr::ppp::bond::{Bond, BondConfig};
use farlink_linkmgr::ppp::ipcp::IpcpConfig;
use farlink_linkmgr::ppp::lcp::LcpConfig;

const RATE_BPS: u64 = 2400;
const DELAY: SimDuration = SimDuration::from_millis(500);
const MEMBERS: usize = 2;

fn call(p: f64, name: &str) -> CallDir {
    let loss = if p > 0.0 {
        AnyLoss::Bernoulli(Bernoulli::new(p, StreamRng::derive(12, name)).unwrap())
    } else {
        AnyLoss::None(NoLoss)
    };
    let link = ArqLink::new(
        ArqLinkConfig {
            rate: BitRate::from_bps(RATE_BPS),
            delay: DELAY,
            arq: Some(ArqConfig {
                mode: ArqMode::SelectiveRepeat,
                frame_bytes: 27,
                max_tries: 3,
                window_frames: 36,
            }),
        },
        loss,
    )
    .unwrap();
    CallDir::new(link)
}

fn bond(side: u8) -> Bond {
    let mut lcp = LcpConfig::multilink(0x0a70_0000 + u32::from(side));
    lcp.endpoint = Some((1, vec![side]));
    let mut c = BondConfig::new(
        vec![BitRate::from_bps(RATE_BPS); MEMBERS],
        lcp,
        IpcpConfig::new([10, 7, 0, side], Some([10, 7, 0, 3 - side])),
    );
    c.max_delay = DELAY;
    let mut b = Bond::new(c);
    for m in 0..MEMBERS {
        b.member_up(m, SimTime::ZERO);
    }
    b
}

fn packet(k: u32, len: usize) -> Vec<u8> {
    let mut p = vec![0u8; len];
    p[..4].copy_from_slice(&k.to_be_bytes());
    for (i, b) in p.iter_mut().enumerate().skip(4) {
        *b = (k as usize).wrapping_mul(29).wrapping_add(i) as u8;
    }
    p
}

/// The packet's number, after checking every octet of it.
fn check(p: &[u8]) -> u32 {
    let k = u32::from_be_bytes([p[0], p[1], p[2], p[3]]);
    assert_eq!(p, packet(k, p.len()), "packet {k} damaged");
    k
}

#[test]
fn octets_the_arq_gave_up_are_bad_frames_the_bundle_drops_and_it_carries_on() {
    // One frame in five damaged a to b: about one frame in 125 used up its three tries.
    let (mut a, mut b) = (bond(1), bond(2));
    let mut a_to_b: Vec<CallDir> = (0..MEMBERS).map(|m| call(0.2, &format!("ab{m}"))).collect();
    let mut b_to_a: Vec<CallDir> = (0..MEMBERS).map(|m| call(0.0, &format!("ba{m}"))).collect();
    let (count, len) = (60u32, 700usize);
    let mut now = SimTime::ZERO;
    let end = SimTime::ZERO + SimDuration::from_secs(1800);
    let (mut sent, mut delivered) = (0u32, Vec::new());
    let mut arrivals_a: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut arrivals_b: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut quiet_since = now;
    loop {
        while a.ip_is_up() && b.ip_is_up() && sent < count && a.queued_bytes() + len < 3 * len {
            assert!(a.send_ip(now, &packet(sent, len)));
            sent += 1;
        }
        for m in 0..MEMBERS {
            let mut out = Vec::new();
            if a.transmit(m, now, &mut out) > 0 {
                a_to_b[m].send(now, &out, &mut |o| {
                    if let CallOutput::Delivered { octets, .. } = o {
                        arrivals_b.push((m, octets));
                    }
                });
            }
            let mut out = Vec::new();
            if b.transmit(m, now, &mut out) > 0 {
                b_to_a[m].send(now, &out, &mut |o| {
                    if let CallOutput::Delivered { octets, .. } = o {
                        arrivals_a.push((m, octets));
                    }
                });
            }
        }
        let wakeups = a_to_b
            .iter()
            .chain(&b_to_a)
            .map(CallDir::next_wakeup)
            .chain([a.next_wakeup(), b.next_wakeup()]);
        let next = wakeups.flatten().min().unwrap_or(end).max(now);
        if next >= end {
            break;
        }
        now = next;
        for m in 0..MEMBERS {
            a_to_b[m].advance(now, &mut |o| {
                if let CallOutput::Delivered { octets, .. } = o {
                    arrivals_b.push((m, octets));
                }
            });
            b_to_a[m].advance(now, &mut |o| {
                if let CallOutput::Delivered { octets, .. } = o {
                    arrivals_a.push((m, octets));
                }
            });
        }
        for (m, octets) in arrivals_b.drain(..) {
            b.on_member_octets(m, now, &octets);
        }
        for (m, octets) in arrivals_a.drain(..) {
            a.on_member_octets(m, now, &octets);
        }
        a.on_timer(now);
        b.on_timer(now);
        let before = delivered.len();
        b.drain_ip(|p| delivered.push(check(p)));
        a.drain_ip(|p| {
            check(p);
        });
        let r = b.stats().reassembly;
        let accounted = delivered.len() as u64 + r.lost_pkts + r.timeouts + r.overflows;
        if delivered.len() > before {
            quiet_since = now;
        }
        if sent == count && accounted >= u64::from(count) {
            break;
        }
        // Nothing delivered for three staleness timeouts: the bundle stalled.
        let stall = b.stale_timeout() + b.stale_timeout() + b.stale_timeout();
        assert!(now < quiet_since + stall, "stalled at {now}: {delivered:?}");
    }
    assert_eq!(sent, count, "IPCP never opened over the lossy calls");
    for w in delivered.windows(2) {
        assert!(w[0] < w[1], "{} then {}", w[0], w[1]);
    }
    let arq = a_to_b.iter().fold(
        Default::default(),
        |t: farlink_linkmgr::modemarq::CallDirStats, c| t.plus(&c.stats()),
    );
    let bad: u64 = (0..MEMBERS).map(|m| b.member_stats(m).bad_frames).sum();
    let r = b.stats().reassembly;
    eprintln!(
        "{} of {count} delivered; {} frames given up ({} octets), {bad} bad PPP frames, \
         {} packets given up by reassembly ({} by its timer); {} frames damaged, {} sent again",
        delivered.len(),
        arq.frames_given_up,
        arq.octets_lost_arq,
        r.lost_pkts,
        r.timeouts,
        arq.frames_damaged,
        arq.frames_resent,
    );
    assert!(arq.frames_given_up > 0 && arq.frames_resent > 0, "{arq:?}");
    // The octets the ARQ gave up broke PPP frames, which the receiving bond counted as bad.
    assert!(bad > 0);
    assert!(r.lost_pkts + r.timeouts > 0);
    // The rest came through, intact (checked above), and the last packets too: it recovered.
    assert!(delivered.len() as u32 >= count / 2, "{delivered:?}");
    assert!(delivered.iter().any(|&k| k >= count - 5), "{delivered:?}");
}
