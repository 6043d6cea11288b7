//! Two bundle endpoints ([`farlink_linkmgr::ppp::bond::Bond`]) wired back to back through
//! simulated serial members in virtual time: each member direction clocks octets at its rate,
//! delays them, may corrupt them, and loses everything in flight when its call drops.
//!
//! The packets carried are self-describing (number and a checksum-like fill), so the tests
//! check that what arrives is intact, in order and never duplicated, and measure what a drop
//! mid-fragment costs.

use std::collections::VecDeque;

use farlink_core::rng::StreamRng;
use farlink_core::time::{BitRate, SimDuration, SimTime};
use farlink_linkmgr::ppp::bond::{Bond, BondConfig, BondEvent};
use farlink_linkmgr::ppp::ipcp::IpcpConfig;
use farlink_linkmgr::ppp::lcp::LcpConfig;

const DELAY: SimDuration = SimDuration::from_millis(300);

/// One direction of one member's call.
struct Wire {
    rate_bps: u64,
    free_at: SimTime,
    in_flight: VecDeque<(SimTime, Vec<u8>)>,
    up: bool,
    /// Probability that a chunk of octets has one octet damaged.
    corrupt: f64,
    rng: StreamRng,
    /// Every octet put on the line, as sent.
    sent: Vec<u8>,
}

impl Wire {
    fn new(rate_bps: u64, corrupt: f64, name: &str) -> Self {
        Wire {
            rate_bps,
            free_at: SimTime::ZERO,
            in_flight: VecDeque::new(),
            up: true,
            corrupt,
            rng: StreamRng::derive(1990, name),
            sent: Vec::new(),
        }
    }

    fn send(&mut self, now: SimTime, mut octets: Vec<u8>) {
        if !self.up || octets.is_empty() {
            return;
        }
        let ns = octets.len() as u64 * 8 * 1_000_000_000 / self.rate_bps;
        self.free_at = self.free_at.max(now) + SimDuration::from_nanos(ns);
        self.sent.extend_from_slice(&octets);
        if self.corrupt > 0.0 && self.rng.bernoulli(self.corrupt) {
            let i = (self.rng.next_u64() % octets.len() as u64) as usize;
            octets[i] ^= 0x10;
        }
        self.in_flight.push_back((self.free_at + DELAY, octets));
    }

    fn cut(&mut self) {
        self.up = false;
        self.in_flight.clear();
    }
}

fn config(members: usize, rate_bps: u64, side: u8) -> BondConfig {
    let mut lcp = LcpConfig::multilink(0x5eed_0000 + u32::from(side));
    lcp.endpoint = Some((1, vec![side]));
    let peer = 3 - side;
    let mut c = BondConfig::new(
        vec![BitRate::from_bps(rate_bps); members],
        lcp,
        IpcpConfig::new([10, 9, 0, side], Some([10, 9, 0, peer])),
    );
    c.max_delay = DELAY;
    c
}

fn packet(k: u32, len: usize) -> Vec<u8> {
    let mut p = vec![0u8; len];
    p[..4].copy_from_slice(&k.to_be_bytes());
    for (i, b) in p.iter_mut().enumerate().skip(4) {
        *b = (k as usize).wrapping_mul(31).wrapping_add(i) as u8;
    }
    p
}

fn check(p: &[u8]) -> u32 {
    let k = u32::from_be_bytes([p[0], p[1], p[2], p[3]]);
    assert_eq!(p, packet(k, p.len()), "packet {k} damaged");
    k
}

/// A scripted change to the members.
#[derive(Clone, Copy)]
enum Script {
    /// Member's call drops; each end notices (member_down) after its own delay, or never.
    Drop {
        at: SimTime,
        member: usize,
        notice_a: Option<SimDuration>,
        notice_b: Option<SimDuration>,
    },
    /// Member's call is back at both ends.
    Redial { at: SimTime, member: usize },
}

struct Pair {
    a: Bond,
    b: Bond,
    a_to_b: Vec<Wire>,
    b_to_a: Vec<Wire>,
    now: SimTime,
    notices: Vec<(SimTime, bool, usize)>,
    /// Steps taken at the current instant (a bond asking to be woken in the past forever
    /// would spin here).
    same_instant: u32,
    events_a: Vec<(SimTime, BondEvent)>,
    events_b: Vec<(SimTime, BondEvent)>,
}

impl Pair {
    fn new(members: usize, rate_bps: u64, corrupt: f64) -> Pair {
        let wires = |dir: &str| {
            (0..members)
                .map(|m| Wire::new(rate_bps, corrupt, &format!("{dir}{m}")))
                .collect()
        };
        let mut p = Pair {
            a: Bond::new(config(members, rate_bps, 1)),
            b: Bond::new(config(members, rate_bps, 2)),
            a_to_b: wires("ab"),
            b_to_a: wires("ba"),
            now: SimTime::ZERO,
            notices: Vec::new(),
            same_instant: 0,
            events_a: Vec::new(),
            events_b: Vec::new(),
        };
        for m in 0..members {
            p.a.member_up(m, SimTime::ZERO);
            p.b.member_up(m, SimTime::ZERO);
        }
        p
    }

    fn next_event(&self) -> Option<SimTime> {
        let arrivals = self
            .a_to_b
            .iter()
            .chain(&self.b_to_a)
            .filter_map(|w| w.in_flight.front().map(|x| x.0));
        let notices = self.notices.iter().map(|n| n.0);
        [self.a.next_wakeup(), self.b.next_wakeup()]
            .into_iter()
            .flatten()
            .chain(arrivals)
            .chain(notices)
            .min()
    }

    /// Advances to `until` or the next event before it, whichever is first.
    fn step(&mut self, until: SimTime) {
        let t = self.next_event().map_or(until, |t| t.min(until));
        if t <= self.now {
            self.same_instant += 1;
            assert!(self.same_instant < 1000, "no progress at {}", self.now);
        } else {
            self.same_instant = 0;
        }
        self.now = self.now.max(t);
        let now = self.now;
        let due: Vec<_> = self
            .notices
            .iter()
            .copied()
            .filter(|n| n.0 <= now)
            .collect();
        self.notices.retain(|n| n.0 > now);
        for (_, at_a, m) in due {
            if at_a {
                self.a.member_down(m, now);
            } else {
                self.b.member_down(m, now);
            }
        }
        for m in 0..self.a_to_b.len() {
            while self.a_to_b[m].in_flight.front().is_some_and(|x| x.0 <= now) {
                let (_, o) = self.a_to_b[m].in_flight.pop_front().unwrap();
                self.b.on_member_octets(m, now, &o);
            }
            while self.b_to_a[m].in_flight.front().is_some_and(|x| x.0 <= now) {
                let (_, o) = self.b_to_a[m].in_flight.pop_front().unwrap();
                self.a.on_member_octets(m, now, &o);
            }
        }
        if self.a.next_wakeup().is_some_and(|w| w <= now) {
            self.a.on_timer(now);
        }
        if self.b.next_wakeup().is_some_and(|w| w <= now) {
            self.b.on_timer(now);
        }
        for m in 0..self.a_to_b.len() {
            let mut o = Vec::new();
            if self.a.transmit(m, now, &mut o) > 0 {
                self.a_to_b[m].send(now, o);
            }
            let mut o = Vec::new();
            if self.b.transmit(m, now, &mut o) > 0 {
                self.b_to_a[m].send(now, o);
            }
        }
        while let Some(e) = self.a.poll_event() {
            self.events_a.push((now, e));
        }
        while let Some(e) = self.b.poll_event() {
            self.events_b.push((now, e));
        }
    }

    fn apply(&mut self, s: Script) {
        match s {
            Script::Drop {
                member,
                notice_a,
                notice_b,
                ..
            } => {
                self.a_to_b[member].cut();
                self.b_to_a[member].cut();
                if let Some(d) = notice_a {
                    self.notices.push((self.now + d, true, member));
                }
                if let Some(d) = notice_b {
                    self.notices.push((self.now + d, false, member));
                }
            }
            Script::Redial { member, .. } => {
                self.a_to_b[member].up = true;
                self.b_to_a[member].up = true;
                self.a.member_up(member, self.now);
                self.b.member_up(member, self.now);
            }
        }
    }
}

struct Outcome {
    delivered: Vec<(SimTime, u32)>,
    sent: u32,
    pair: Pair,
}

impl Outcome {
    /// The longest time between two deliveries (or the start of sending and the first).
    fn longest_gap(&self, from: SimTime) -> SimDuration {
        let mut last = from;
        let mut gap = SimDuration::ZERO;
        for &(t, _) in &self.delivered {
            gap = gap.max(t.saturating_since(last));
            last = t;
        }
        gap
    }
}

/// Sends `count` packets of `len` octets from A to B as fast as A's queue takes them (up to
/// `window` octets queued), with `script` applied, until everything sent is delivered or
/// given up and the reverse direction's acknowledgement-sized packets flow too.
fn run(
    members: usize,
    rate_bps: u64,
    corrupt: f64,
    count: u32,
    len: usize,
    script: &[Script],
) -> Outcome {
    let mut pair = Pair::new(members, rate_bps, corrupt);
    let deadline = SimTime::ZERO + SimDuration::from_secs(3600);
    while !(pair.a.ip_is_up() && pair.b.ip_is_up()) {
        pair.step(deadline);
        assert!(
            pair.now < SimTime::ZERO + SimDuration::from_secs(60),
            "IPCP never opened"
        );
    }
    let start = pair.now;
    let mut script: VecDeque<Script> = script.iter().copied().collect();
    let mut sent = 0;
    let mut delivered = Vec::new();
    let mut acks = 0u32;
    let mut progress = (0u64, start);
    let quiet_for = pair.b.stale_timeout() + pair.b.stale_timeout() + SimDuration::from_secs(5);
    let window = 3 * len;
    loop {
        while sent < count && pair.a.queued_bytes() + len < window {
            assert!(pair.a.send_ip(pair.now, &packet(sent, len)));
            sent += 1;
        }
        let next_script = script.front().map(|s| match *s {
            Script::Drop { at, .. } | Script::Redial { at, .. } => {
                start + at.saturating_since(SimTime::ZERO)
            }
        });
        let until = next_script.unwrap_or(deadline);
        pair.step(until);
        if next_script.is_some_and(|t| pair.now >= t) {
            let s = script.pop_front().unwrap();
            pair.apply(s);
        }
        let now = pair.now;
        let mut got = Vec::new();
        pair.b.drain_ip(|p| got.push(check(p)));
        for k in got {
            delivered.push((now, k));
            // A small packet back for each, as TCP's ACKs would be.
            if pair.b.send_ip(now, &packet(1_000_000 + acks, 52)) {
                acks += 1;
            }
        }
        pair.a.drain_ip(|p| {
            check(p);
        });
        let b = pair.b.stats().reassembly;
        let accounted = delivered.len() as u64 + b.lost_pkts + b.timeouts + b.overflows;
        if accounted != progress.0 {
            progress = (accounted, pair.now);
        }
        // Done: everything accounted for, or nothing more for two staleness timeouts.
        let stuck = pair.now >= progress.1 + quiet_for;
        if sent == count && (accounted >= u64::from(count) || stuck) && script.is_empty() {
            break;
        }
        assert!(pair.now < deadline, "the run did not end");
    }
    Outcome {
        delivered,
        sent,
        pair,
    }
}

fn assert_in_order_once(o: &Outcome) {
    for w in o.delivered.windows(2) {
        assert!(w[0].1 < w[1].1, "{} then {}", w[0].1, w[1].1);
    }
}

#[test]
fn a_lossless_bundle_delivers_everything_in_order_over_every_member() {
    let o = run(4, 2400, 0.0, 60, 1500, &[]);
    assert_eq!(o.delivered.len(), 60);
    assert_in_order_once(&o);
    for m in 0..4 {
        let s = o.pair.a.member_stats(m);
        assert!(
            s.fragments > 50,
            "member {m} carried {} fragments",
            s.fragments
        );
    }
    // Capacity: 4 × 2400 bit/s = 1200 octets/s; the IP octets delivered per second between
    // the first and last delivery, against it.
    let first = o.delivered[0].0;
    let last = o.delivered.last().unwrap().0;
    let secs = last.saturating_since(first).as_secs_f64();
    let rate = 59.0 * 1500.0 / secs;
    let ratio = rate / 1200.0;
    eprintln!(
        "lossless 4 × 2400 bit/s: {rate:.0} IP octets/s, {:.1} % of the line",
        100.0 * ratio
    );
    assert!(ratio > 0.9 && ratio < 1.0, "ratio {ratio}");
    let b = o.pair.b.stats();
    assert_eq!(b.reassembly.lost_pkts + b.reassembly.timeouts, 0);
}

#[test]
fn corrupted_frames_lose_their_packets_and_nothing_else() {
    // One chunk of octets in a hundred damaged: about one packet in ten has a bad fragment.
    let o = run(3, 9600, 0.01, 200, 1000, &[]);
    assert_in_order_once(&o);
    let b = o.pair.b.stats();
    let bad: u64 = (0..3).map(|m| o.pair.b.member_stats(m).bad_frames).sum();
    assert!(bad > 0);
    let given_up = b.reassembly.lost_pkts + b.reassembly.timeouts;
    assert!(given_up > 0);
    assert!(o.delivered.len() as u32 + given_up as u32 >= 200 - 1);
    eprintln!(
        "corruption: {} delivered, {} given up, {bad} bad frames",
        o.delivered.len(),
        given_up
    );
    assert!(o.delivered.len() > 150, "{} delivered", o.delivered.len());
}

#[test]
fn a_call_drop_mid_fragment_noticed_at_both_ends_costs_no_timer() {
    let drop_at = SimTime::ZERO + SimDuration::from_millis(10_300);
    let o = run(
        4,
        2400,
        0.0,
        40,
        1500,
        &[
            Script::Drop {
                at: drop_at,
                member: 2,
                notice_a: Some(SimDuration::ZERO),
                notice_b: Some(SimDuration::ZERO),
            },
            Script::Redial {
                at: drop_at + SimDuration::from_secs(20),
                member: 2,
            },
        ],
    );
    assert_in_order_once(&o);
    let b = o.pair.b.stats();
    let cut: u64 = o.pair.b.member_stats(2).cut_frames + o.pair.a.member_stats(2).cut_frames;
    assert!(cut > 0, "the call dropped between frames");
    assert_eq!(b.reassembly.timeouts, 0);
    assert!(b.reassembly.lost_pkts >= 1);
    assert_eq!(o.delivered.len() as u64 + b.reassembly.lost_pkts, 40);
    // Member 2 came back and carried fragments again.
    assert!(
        o.pair
            .events_b
            .iter()
            .filter(|e| e.1 == BondEvent::MemberJoined(2))
            .count()
            == 2
    );
    let gap = o.longest_gap(SimTime::ZERO + SimDuration::from_secs(1));
    eprintln!("drop noticed at both ends: longest gap between deliveries {gap}");
    // What the drop cost is the line time of the packets it cut (two at most, as the sender
    // queues three) and of the next one: about 3 × 1.67 s on the three members left, plus
    // the delay; not the staleness timer.
    assert!(gap < SimDuration::from_millis(5300), "gap {gap}");
}

#[test]
fn a_call_drop_the_receiver_never_notices_is_given_up_by_the_timer() {
    let drop_at = SimTime::ZERO + SimDuration::from_millis(10_300);
    let o = run(
        4,
        2400,
        0.0,
        40,
        1500,
        &[Script::Drop {
            at: drop_at,
            member: 1,
            // The sender's daemon sees NO CARRIER within a second; the receiver never learns.
            notice_a: Some(SimDuration::from_secs(1)),
            notice_b: None,
        }],
    );
    assert_in_order_once(&o);
    let b = o.pair.b.stats();
    let timeout = o.pair.b.stale_timeout();
    assert!(b.reassembly.timeouts >= 1, "{b:?}");
    // Only what the sender put on the member before it noticed is lost.
    assert!(o.delivered.len() >= 36, "{} delivered", o.delivered.len());
    assert_eq!(o.sent, 40);
    let gap = o.longest_gap(SimTime::ZERO + SimDuration::from_secs(1));
    eprintln!(
        "drop the receiver never notices: stale timeout {timeout}, longest gap {gap}, \
         {} timer expiries",
        b.reassembly.timeouts
    );
    assert!(gap <= timeout + SimDuration::from_secs(6), "gap {gap}");
}

#[test]
fn both_ends_negotiate_multilink_and_ipcp() {
    let mut p = Pair::new(2, 2400, 0.0);
    while !(p.a.ip_is_up() && p.b.ip_is_up()) {
        p.step(SimTime::ZERO + SimDuration::from_secs(60));
        assert!(p.now < SimTime::ZERO + SimDuration::from_secs(60));
    }
    let ip_up = p
        .events_a
        .iter()
        .find_map(|(_, e)| match e {
            BondEvent::IpUp { local, peer } => Some((*local, *peer)),
            _ => None,
        })
        .unwrap();
    assert_eq!(ip_up, ([10, 9, 0, 1], [10, 9, 0, 2]));
    let opened = p
        .events_b
        .iter()
        .find_map(|(_, e)| match e {
            BondEvent::MemberOpened { negotiated, .. } => Some(negotiated.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(opened.peer_mrru, Some(1500));
    assert_eq!(opened.peer_endpoint, Some((1, vec![1])));
    assert!(p.events_a.iter().any(|e| e.1 == BondEvent::BundleUp));
    // Longer than the peer's MRRU: the peer could not reassemble it.
    let now = p.now;
    assert!(!p.a.send_ip(now, &packet(0, 1501)));
    assert!(p.a.send_ip(now, &packet(1, 1500)));
    assert_eq!(p.a.stats().too_long_drops, 1);
}

fn vector(key: &str) -> Vec<u8> {
    let doc: serde_json::Value =
        serde_json::from_str(include_str!("../../../../tests/data/ppp_vectors.json")).unwrap();
    let s = doc["bond"][key].as_str().unwrap();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn the_first_frames_on_the_wire_are_the_ones_scapy_builds() {
    let mut p = Pair::new(2, 2400, 0.0);
    while !(p.a.ip_is_up() && p.b.ip_is_up()) {
        p.step(SimTime::ZERO + SimDuration::from_secs(60));
        assert!(p.now < SimTime::ZERO + SimDuration::from_secs(60));
    }
    let wire: Vec<&[u8]> = p.a_to_b.iter().map(|w| &w.sent[..]).collect();
    let lcp = vector("lcp_request_wire_hex");
    assert!(
        wire[0].starts_with(&lcp),
        "LCP's first request, as scapy frames it"
    );
    let ipcp = vector("ipcp_request_wire_hex");
    assert!(
        wire.iter().any(|w| contains(w, &ipcp)),
        "IPCP's request in one MP fragment, as scapy frames it"
    );
}

#[test]
fn a_dead_call_with_no_traffic_is_found_by_lcp_echoes() {
    let mut p = Pair::new(4, 2400, 0.0);
    let t = |s: u64| SimTime::ZERO + SimDuration::from_secs(s);
    while p.now < t(5) {
        p.step(t(5));
    }
    assert!(p.a.ip_is_up() && p.b.ip_is_up());
    // Member 0's call dies silently; the other three stay idle but alive.
    p.a_to_b[0].cut();
    p.b_to_a[0].cut();
    while p.now < t(120) {
        p.step(t(120));
    }
    let timeouts = |ev: &[(SimTime, BondEvent)]| -> Vec<(usize, SimTime)> {
        ev.iter()
            .filter_map(|(at, e)| match e {
                BondEvent::EchoTimeout(m) => Some((*m, *at)),
                _ => None,
            })
            .collect()
    };
    for ev in [&p.events_a, &p.events_b] {
        let got = timeouts(ev);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, 0);
        // Three echoes 10 s apart after 10 s of silence, then the verdict: 40 s.
        let after = got[0].1.saturating_since(t(5));
        assert!(after > SimDuration::from_secs(30) && after <= SimDuration::from_secs(46));
    }
}
