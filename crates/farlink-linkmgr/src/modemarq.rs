//! One direction of a simulated modem's call: the octets its DTE wrote, cut into link-layer
//! frames and carried to the peer modem by the core's ARQ ([`farlink_core::arq::ArqLink`]),
//! built by [`farlink_core::path::member_arq_link`] from the same scenario member and stream
//! as the simulator's member, so one seed damages the same frames.
//!
//! A modem's octet stream has no packet boundaries, so the modem makes them as a radio modem
//! does: when its serializer is free it takes what the DTE has queued, up to one frame's
//! payload (the ARQ's `frame_bytes`; 27 octets, one Iridium TDMA frame, in the presets), and
//! sends it as one unit. A unit is offered at the instant the previous one leaves the
//! serializer (the link is stepped from wakeup to wakeup, each offer at the instant the line
//! frees), never earlier than its octets came from the DTE, so the ARQ link alone paces the
//! call at the member's rate (one clock of serialization) and a busy line never idles between
//! frames. Repeats go before new frames (selective repeat) and the line's rate is the user
//! rate (the ARQ does not model framing), so without errors octets arrive as a plain paced
//! line would deliver them, each at most one frame time later. Without ARQ in the scenario a
//! unit is what is queued, up to [`PLAIN_UNIT_BYTES`] (the packet the scenario's loss
//! applies to).
//!
//! A unit whose frame used up its tries is lost whole: the octets never reach the peer. The
//! PPP layer above sees a frame with a bad FCS (or two frames run together) and discards it,
//! as over a real modem whose ARQ gave up.

use std::collections::VecDeque;

use farlink_core::arq::{ArqLink, ArqStats};
use farlink_core::link::{DropCause, LinkEvent, Packet};
use farlink_core::loss::AnyLoss;
use farlink_core::time::SimTime;
use serde::Serialize;

/// Octets per unit of a member without ARQ: a full-size packet, the unit whose loss the
/// scenario's error model gives.
pub const PLAIN_UNIT_BYTES: usize = 1500;

/// What one direction of a modem's calls carried, across calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CallDirStats {
    /// Octets the DTE wrote into a call.
    pub octets_in: u64,
    /// Octets handed to the peer modem.
    pub octets_delivered: u64,
    /// Octets in units the ARQ gave up (or, without ARQ, units damaged).
    pub octets_lost_arq: u64,
    /// Octets queued or on their way when the call ended.
    pub octets_lost_call: u64,
    /// Units lost to the ARQ (or damaged without ARQ).
    pub units_lost_arq: u64,
    pub frames_sent: u64,
    pub frames_resent: u64,
    pub frames_damaged: u64,
    pub frames_given_up: u64,
}

impl CallDirStats {
    fn absorb_arq(&mut self, s: &ArqStats) {
        self.frames_sent = s.frames_sent;
        self.frames_resent = s.frames_resent;
        self.frames_damaged = s.frames_damaged;
        self.frames_given_up = s.frames_given_up;
    }

    /// The sum of two directions' (or pairs') counters.
    pub fn plus(&self, o: &CallDirStats) -> CallDirStats {
        CallDirStats {
            octets_in: self.octets_in + o.octets_in,
            octets_delivered: self.octets_delivered + o.octets_delivered,
            octets_lost_arq: self.octets_lost_arq + o.octets_lost_arq,
            octets_lost_call: self.octets_lost_call + o.octets_lost_call,
            units_lost_arq: self.units_lost_arq + o.units_lost_arq,
            frames_sent: self.frames_sent + o.frames_sent,
            frames_resent: self.frames_resent + o.frames_resent,
            frames_damaged: self.frames_damaged + o.frames_damaged,
            frames_given_up: self.frames_given_up + o.frames_given_up,
        }
    }
}

/// What came out of the far end of a call direction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallOutput {
    /// Octets reached the peer modem at `at`.
    Delivered { at: SimTime, octets: Vec<u8> },
    /// A unit of `octets` octets was lost at `at` (its frame used up its tries).
    Lost { at: SimTime, octets: usize },
}

/// One direction of a modem pair's call; see the module documentation.
#[derive(Debug)]
pub struct CallDir {
    link: ArqLink<AnyLoss>,
    unit_bytes: usize,
    /// Octets the DTE wrote that are in no unit yet.
    queued: VecDeque<u8>,
    /// The octets of the units inside the link, oldest first (the link reports units in the
    /// order they were offered).
    inside: VecDeque<(u64, Vec<u8>)>,
    next_id: u64,
    stats: CallDirStats,
}

impl CallDir {
    /// A direction sending over `link` (no call yet).
    pub fn new(link: ArqLink<AnyLoss>) -> CallDir {
        let unit_bytes = link
            .config()
            .arq
            .map_or(PLAIN_UNIT_BYTES, |a| a.frame_bytes as usize);
        CallDir {
            link,
            unit_bytes,
            queued: VecDeque::new(),
            inside: VecDeque::new(),
            next_id: 0,
            stats: CallDirStats::default(),
        }
    }

    /// Payload octets per unit.
    pub fn unit_bytes(&self) -> usize {
        self.unit_bytes
    }

    /// Octets the DTE wrote that are not yet on the line.
    pub fn queued_octets(&self) -> usize {
        self.queued.len()
    }

    pub fn stats(&self) -> CallDirStats {
        let mut s = self.stats;
        s.absorb_arq(self.link.stats());
        s
    }

    /// When [`CallDir::advance`] has something to do.
    pub fn next_wakeup(&self) -> Option<SimTime> {
        self.link.next_wakeup()
    }

    /// The DTE wrote `octets` into the call at `now`.
    pub fn send(&mut self, now: SimTime, octets: &[u8], out: &mut impl FnMut(CallOutput)) {
        self.advance(now, out);
        self.queued.extend(octets);
        self.stats.octets_in += octets.len() as u64;
        self.fill(now);
    }

    /// Runs the link to `now` from wakeup to wakeup, handing a new unit to the serializer at
    /// each instant it frees, and hands out what reached the far end.
    pub fn advance(&mut self, now: SimTime, out: &mut impl FnMut(CallOutput)) {
        loop {
            let next = self.link.next_wakeup().filter(|&w| w <= now);
            let t = next.unwrap_or(now);
            while let Some(ev) = self.link.poll(t) {
                self.on_event(ev, out);
            }
            self.fill(t);
            if next.is_none() {
                break;
            }
        }
    }

    /// The call ended at `now`: queued octets and units on their way are lost.
    pub fn end_call(&mut self, now: SimTime, out: &mut impl FnMut(CallOutput)) {
        self.advance(now, out);
        let mut lost = 0u64;
        self.link.clear(now, |_| {});
        for (_, octets) in self.inside.drain(..) {
            lost += octets.len() as u64;
        }
        lost += self.queued.len() as u64;
        self.queued.clear();
        self.stats.octets_lost_call += lost;
    }

    /// Offers the next unit if the serializer has nothing of its own to send.
    fn fill(&mut self, t: SimTime) {
        if self.queued.is_empty() || self.link.backlog_pkts() > 0 {
            return;
        }
        let n = self.queued.len().min(self.unit_bytes);
        let octets: Vec<u8> = self.queued.drain(..n).collect();
        let id = self.next_id;
        self.next_id += 1;
        self.link.offer(
            t,
            Packet {
                id,
                size_bytes: n as u32,
                ..Packet::default()
            },
        );
        self.inside.push_back((id, octets));
    }

    fn take_unit(&mut self, id: u64) -> Vec<u8> {
        match self.inside.front() {
            Some((front, _)) if *front == id => self.inside.pop_front().map(|u| u.1),
            _ => {
                // Units are reported in order; anything older was cleared with its call.
                let i = self.inside.iter().position(|u| u.0 == id);
                i.and_then(|i| self.inside.remove(i)).map(|u| u.1)
            }
        }
        .unwrap_or_default()
    }

    fn on_event(&mut self, ev: LinkEvent, out: &mut impl FnMut(CallOutput)) {
        match ev {
            LinkEvent::Delivered { at, pkt } => {
                let octets = self.take_unit(pkt.id);
                self.stats.octets_delivered += octets.len() as u64;
                out(CallOutput::Delivered { at, octets });
            }
            LinkEvent::Dropped { at, pkt, cause } => {
                let octets = self.take_unit(pkt.id).len();
                if matches!(cause, DropCause::ArqGiveUp | DropCause::Corruption) {
                    self.stats.units_lost_arq += 1;
                    self.stats.octets_lost_arq += octets as u64;
                    out(CallOutput::Lost { at, octets });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use farlink_core::arq::{ArqConfig, ArqLinkConfig, ArqMode};
    use farlink_core::loss::{Bernoulli, NoLoss};
    use farlink_core::rng::StreamRng;
    use farlink_core::time::{BitRate, SimDuration};

    const RATE_BPS: u64 = 2400;
    const DELAY: SimDuration = SimDuration::from_millis(500);

    fn link(p: f64, max_tries: u32) -> ArqLink<AnyLoss> {
        let loss = if p > 0.0 {
            AnyLoss::Bernoulli(Bernoulli::new(p, StreamRng::derive(7, "test:loss")).unwrap())
        } else {
            AnyLoss::None(NoLoss)
        };
        ArqLink::new(
            ArqLinkConfig {
                rate: BitRate::from_bps(RATE_BPS),
                delay: DELAY,
                arq: Some(ArqConfig {
                    mode: ArqMode::SelectiveRepeat,
                    frame_bytes: 27,
                    max_tries,
                    window_frames: 64,
                }),
            },
            loss,
        )
        .unwrap()
    }

    /// Runs `dir` until it is idle, the DTE writing `chunk` octets every `every` for `total`.
    fn run(dir: &mut CallDir, total: usize, chunk: usize, every: SimDuration) -> Vec<CallOutput> {
        let mut outs = Vec::new();
        let data: Vec<u8> = (0..total).map(|i| (i * 7 % 251) as u8).collect();
        let mut t = SimTime::ZERO;
        for c in data.chunks(chunk) {
            dir.send(t, c, &mut |o| outs.push(o));
            // The loop wakes at the link's wakeups between writes, as modem-sim's does.
            while let Some(w) = dir.next_wakeup().filter(|&w| w < t + every) {
                dir.advance(w, &mut |o| outs.push(o));
            }
            t += every;
        }
        while let Some(w) = dir.next_wakeup() {
            dir.advance(w, &mut |o| outs.push(o));
        }
        outs
    }

    fn delivered(outs: &[CallOutput]) -> Vec<(SimTime, Vec<u8>)> {
        outs.iter()
            .filter_map(|o| match o {
                CallOutput::Delivered { at, octets } => Some((*at, octets.clone())),
                CallOutput::Lost { .. } => None,
            })
            .collect()
    }

    #[test]
    fn without_errors_octets_arrive_whole_in_order_at_the_paced_line_time() {
        let mut dir = CallDir::new(link(0.0, 3));
        let total = 3000;
        // The DTE writes faster than the line: octets queue and frames go back to back.
        let outs = run(&mut dir, total, 100, SimDuration::from_millis(50));
        let got = delivered(&outs);
        let bytes: Vec<u8> = got.iter().flat_map(|(_, o)| o.clone()).collect();
        let sent: Vec<u8> = (0..total).map(|i| (i * 7 % 251) as u8).collect();
        assert_eq!(bytes, sent);
        // Each octet i left a plain line paced at the rate at (i + 1) * 8 / rate; here it
        // arrives with its frame, within one frame time of that, never before it.
        let line = BitRate::from_bps(RATE_BPS);
        let frame_ns = line.transmission_time(27).as_nanos();
        let mut i = 0u32;
        for (at, octets) in &got {
            for _ in octets {
                let plain = SimTime::ZERO + line.transmission_time(i + 1) + DELAY;
                assert!(*at >= plain, "octet {i} at {at} before {plain}");
                assert!(
                    at.as_nanos() - plain.as_nanos() < frame_ns,
                    "octet {i} late"
                );
                i += 1;
            }
        }
        // One clock: the last octet arrives when the line rate says.
        let last = got.last().unwrap().0;
        assert_eq!(
            last,
            SimTime::ZERO + line.transmission_time(total as u32) + DELAY
        );
        let s = dir.stats();
        assert_eq!(s.frames_resent + s.frames_damaged + s.units_lost_arq, 0);
        assert_eq!(s.frames_sent, (total as u64).div_ceil(27));
        assert_eq!(s.octets_delivered, total as u64);
    }

    #[test]
    fn a_slow_writer_gets_its_octets_after_one_octet_time_and_the_delay() {
        let mut dir = CallDir::new(link(0.0, 3));
        // 10 octets every second: each write is one short unit on an idle line.
        let outs = run(&mut dir, 50, 10, SimDuration::from_secs(1));
        let got = delivered(&outs);
        assert_eq!(got.len(), 5);
        for (k, (at, octets)) in got.iter().enumerate() {
            assert_eq!(octets.len(), 10);
            let sent = SimTime::ZERO + SimDuration::from_secs(k as u64);
            let line = BitRate::from_bps(RATE_BPS);
            assert_eq!(*at, sent + line.transmission_time(10) + DELAY);
        }
    }

    #[test]
    fn a_seeded_error_rate_gives_the_expected_retries_and_losses() {
        let p = 0.3;
        let tries = 2;
        let mut dir = CallDir::new(link(p, tries));
        let total = 27 * 4000;
        let outs = run(&mut dir, total, 270, SimDuration::from_millis(100));
        let s = dir.stats();
        let frames = (total / 27) as f64;
        // Every try of a frame is damaged with p; a frame is given up after `tries` damaged.
        let damaged = frames * (p + p * p);
        let given_up = frames * p.powi(tries as i32);
        assert_eq!(s.frames_sent, s.frames_resent + frames as u64);
        assert!(
            (s.frames_damaged as f64 - damaged).abs() < 4.0 * damaged.sqrt(),
            "{s:?}"
        );
        assert!(
            (s.frames_given_up as f64 - given_up).abs() < 4.0 * given_up.sqrt(),
            "{s:?}"
        );
        assert_eq!(s.frames_resent, s.frames_damaged - s.frames_given_up);
        // Full frames: each unit is one frame, so units lost are frames given up.
        assert_eq!(s.units_lost_arq, s.frames_given_up);
        assert_eq!(s.octets_lost_arq, 27 * s.units_lost_arq);
        assert_eq!(s.octets_delivered + s.octets_lost_arq, total as u64);
        let lost: usize = outs
            .iter()
            .map(|o| match o {
                CallOutput::Lost { octets, .. } => *octets,
                CallOutput::Delivered { .. } => 0,
            })
            .sum();
        assert_eq!(lost as u64, s.octets_lost_arq);
        // What arrives is the stream with the lost units cut out, in order.
        let bytes: Vec<u8> = delivered(&outs).into_iter().flat_map(|(_, o)| o).collect();
        assert_eq!(bytes.len() as u64, s.octets_delivered);
    }

    #[test]
    fn a_call_that_ends_loses_what_is_queued_and_on_its_way_and_the_next_starts_clean() {
        let mut dir = CallDir::new(link(0.0, 3));
        let mut outs = Vec::new();
        dir.send(SimTime::ZERO, &[1u8; 270], &mut |o| outs.push(o));
        let mid = SimTime::ZERO + SimDuration::from_millis(400);
        dir.end_call(mid, &mut |o| outs.push(o));
        assert!(outs.is_empty());
        assert_eq!(dir.stats().octets_lost_call, 270);
        assert_eq!(dir.queued_octets(), 0);
        let later = SimTime::ZERO + SimDuration::from_secs(10);
        dir.send(later, &[2u8; 27], &mut |o| outs.push(o));
        while let Some(w) = dir.next_wakeup() {
            dir.advance(w, &mut |o| outs.push(o));
        }
        assert_eq!(
            delivered(&outs),
            vec![(later + SimDuration::from_millis(90) + DELAY, vec![2u8; 27])]
        );
    }
}
