//! UDP sources and the receiving end's measurements, sans-I/O.
//!
//! A [`UdpSource`] says when it next sends (`poll_at`) and hands out one datagram when woken
//! then (`on_timer`). Constant bit rate: datagram k of payload `packet_bytes` leaves at
//! `start + k * packet_bytes * 8 / rate` (computed from k, so no rounding accumulates). On-off
//! (ns-3's `OnOffApplication`): the source begins with an off period, then alternates on and
//! off periods drawn with their means (exponential, or Pareto with a shape) from its stream
//! `flow:<name>:app`, sending at the rate while on, the k-th datagram of an on period at
//! `on_start + k * packet_bytes * 8 / rate` if that is before the period's end. Nothing is
//! sent at or after `stop`.
//!
//! A [`UdpSink`] counts what arrives and measures each datagram's one-way delay (the sender
//! stamps its send instant) and RFC 3550 section 6.4.1's interarrival jitter: with
//! `D = (R_j - R_i) - (S_j - S_i)` the difference of the transit times of two consecutive
//! arrivals, `J += (|D| - J) / 16`.

use crate::rng::StreamRng;
use crate::scenario::UdpSpec;
use crate::tcp::segment::Segment;
use crate::time::SimTime;

/// A datagram in the engine's packet slab: a `Segment` whose `seq` is the datagram's number
/// and `ack` its send instant (ns), `payload_bytes` its payload. The engine reads these back
/// with [`datagram_of`]; its wire size is [`wire_bytes`].
pub fn datagram_segment(seq: u64, sent_at: SimTime, payload_bytes: u32) -> Segment {
    Segment {
        seq,
        ack: sent_at.as_nanos(),
        payload_bytes,
        ..Segment::default()
    }
}

/// Number, send instant and payload of a datagram carried as [`datagram_segment`] made it.
pub fn datagram_of(seg: &Segment) -> (u64, SimTime, u32) {
    (seg.seq, SimTime::from_nanos(seg.ack), seg.payload_bytes)
}

/// A datagram's bytes on an IPv4 link: IPv4 and UDP headers and the payload.
pub fn wire_bytes(payload_bytes: u32) -> u32 {
    crate::scenario::UDP_HEADER_BYTES + payload_bytes
}

/// A UDP source (see the module docs).
#[derive(Debug)]
pub struct UdpSource {
    spec: UdpSpec,
    /// The current on period's start and end (the whole run for constant bit rate).
    period_start: SimTime,
    period_end: Option<SimTime>,
    /// Datagrams sent in the current period.
    in_period: u64,
    next: Option<SimTime>,
    stop: Option<SimTime>,
    /// The on-off periods' stream.
    rng: Option<StreamRng>,
    sent: u64,
    sent_bytes: u64,
}

impl UdpSource {
    /// A source starting at `start`, stopping at `stop` (if any); `rng` draws its periods
    /// (an on-off source's; ignored for constant bit rate).
    pub fn new(spec: UdpSpec, start: SimTime, stop: Option<SimTime>, rng: StreamRng) -> Self {
        let mut s = UdpSource {
            spec,
            period_start: start,
            period_end: None,
            in_period: 0,
            next: None,
            stop,
            rng: spec.on_off.is_some().then_some(rng),
            sent: 0,
            sent_bytes: 0,
        };
        if spec.on_off.is_some() {
            // ns-3's OnOffApplication begins with an off period.
            s.begin_on_period_after(start);
        } else {
            s.next = Some(start);
        }
        s.stop_check();
        s
    }

    /// When the source next sends; `None` once it never will.
    pub fn poll_at(&self) -> Option<SimTime> {
        self.next
    }

    /// Sends the datagram due at `now`, if one is: its number and payload bytes.
    pub fn on_timer(&mut self, now: SimTime) -> Option<(u64, u32)> {
        self.next.filter(|&t| t <= now)?;
        let seq = self.sent;
        self.sent += 1;
        self.sent_bytes += u64::from(self.spec.packet_bytes);
        self.in_period += 1;
        let at = self.send_time(self.in_period);
        self.next = match self.period_end {
            Some(end) if at >= end => {
                self.begin_on_period_after(end);
                self.next
            }
            _ => Some(at),
        };
        self.stop_check();
        Some((seq, self.spec.packet_bytes))
    }

    pub fn sent(&self) -> u64 {
        self.sent
    }

    pub fn sent_bytes(&self) -> u64 {
        self.sent_bytes
    }

    /// The k-th datagram's instant in the current period.
    fn send_time(&self, k: u64) -> SimTime {
        let bits = u128::from(self.spec.packet_bytes) * 8;
        let ns = u128::from(k) * bits * 1_000_000_000 / u128::from(self.spec.rate.bps().max(1));
        let ns = u64::try_from(ns).unwrap_or(u64::MAX / 4);
        SimTime::from_nanos(self.period_start.as_nanos().saturating_add(ns))
    }

    /// Draws an off period from `from`, then the on period after it, and sends at its start.
    fn begin_on_period_after(&mut self, from: SimTime) {
        let (Some(o), Some(rng)) = (self.spec.on_off, self.rng.as_mut()) else {
            return;
        };
        let off = super::draw::period_ns(rng, o.off_mean.as_nanos() as f64, o.distribution);
        let on = super::draw::period_ns(rng, o.on_mean.as_nanos() as f64, o.distribution);
        let start = from.as_nanos().saturating_add(off);
        self.period_start = SimTime::from_nanos(start);
        self.period_end = Some(SimTime::from_nanos(start.saturating_add(on)));
        self.in_period = 0;
        self.next = Some(self.period_start);
    }

    fn stop_check(&mut self) {
        if let (Some(next), Some(stop)) = (self.next, self.stop) {
            if next >= stop {
                self.next = None;
            }
        }
    }
}

/// The receiving end of a UDP flow (see the module docs).
#[derive(Debug, Default)]
pub struct UdpSink {
    received: u64,
    received_bytes: u64,
    last_arrival: Option<SimTime>,
    /// Transit time (arrival - send) of the previous arrival, ns.
    prev_transit_ns: Option<i128>,
    /// RFC 3550's J, ns.
    jitter_ns: f64,
    /// Per datagram received: its one-way delay, and J after it (from the second on).
    delays_ns: Vec<u64>,
    jitters_ns: Vec<f64>,
}

impl UdpSink {
    /// A datagram sent at `sent_at` with `payload_bytes` arrives at `now`.
    pub fn on_datagram(&mut self, now: SimTime, sent_at: SimTime, payload_bytes: u32) {
        self.received += 1;
        self.received_bytes += u64::from(payload_bytes);
        self.last_arrival = Some(now);
        let transit = i128::from(now.as_nanos()) - i128::from(sent_at.as_nanos());
        self.delays_ns
            .push(now.saturating_since(sent_at).as_nanos());
        if let Some(prev) = self.prev_transit_ns {
            let d = (transit - prev).abs() as f64;
            self.jitter_ns += (d - self.jitter_ns) / 16.0;
            self.jitters_ns.push(self.jitter_ns);
        }
        self.prev_transit_ns = Some(transit);
    }

    pub fn received(&self) -> u64 {
        self.received
    }

    pub fn received_bytes(&self) -> u64 {
        self.received_bytes
    }

    pub fn last_arrival(&self) -> Option<SimTime> {
        self.last_arrival
    }

    /// The jitter estimate now, seconds.
    pub fn jitter_s(&self) -> f64 {
        self.jitter_ns / 1e9
    }

    pub fn delays_ns(&self) -> &[u64] {
        &self.delays_ns
    }

    /// The estimates after each arrival from the second on, seconds.
    pub fn jitters_s(&self) -> Vec<f64> {
        self.jitters_ns.iter().map(|j| j / 1e9).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{OnOffSpec, Sojourn};
    use crate::time::{BitRate, SimDuration};

    fn ms(v: u64) -> SimTime {
        SimTime::from_nanos(v * 1_000_000)
    }

    #[test]
    fn rfc3550_jitter_by_hand() {
        // Four packets sent every 20 ms; transit times 50, 60, 55, 55 ms.
        // D: 10, 5, 0 ms. J: 0 + (10 - 0)/16 = 0.625; 0.625 + (5 - 0.625)/16 = 0.8984375;
        // 0.8984375 + (0 - 0.8984375)/16 = 0.84228515625 ms.
        let mut sink = UdpSink::default();
        for (k, transit) in [50, 60, 55, 55].into_iter().enumerate() {
            let sent = ms(20 * k as u64);
            sink.on_datagram(sent + SimDuration::from_millis(transit), sent, 100);
        }
        let j = sink.jitters_s();
        assert_eq!(j.len(), 3);
        let expect = [0.625e-3, 0.898_437_5e-3, 0.842_285_156_25e-3];
        for (got, want) in j.iter().zip(expect) {
            assert!((got - want).abs() < 1e-15, "{got} != {want}");
        }
        assert_eq!(sink.delays_ns()[1], 60_000_000);
        assert_eq!(sink.received_bytes(), 400);
    }

    fn cbr(rate_bps: u64, packet_bytes: u32) -> UdpSpec {
        UdpSpec {
            rate: BitRate::from_bps(rate_bps),
            packet_bytes,
            on_off: None,
        }
    }

    #[test]
    fn cbr_sends_at_its_rate_until_stop() {
        // 1000-byte payloads at 1 Mbit/s: one every 8 ms; stop at 100 ms: 13 datagrams
        // (0, 8, ..., 96 ms).
        let rng = StreamRng::derive(1, "t");
        let mut s = UdpSource::new(cbr(1_000_000, 1000), ms(0), Some(ms(100)), rng);
        let mut times = Vec::new();
        while let Some(t) = s.poll_at() {
            assert!(s.on_timer(t).is_some());
            times.push(t.as_nanos() / 1_000_000);
        }
        assert_eq!(times, (0..13).map(|k| 8 * k).collect::<Vec<u64>>());
        assert_eq!(s.sent_bytes(), 13_000);
    }

    #[test]
    fn on_off_sends_only_while_on_and_averages_its_duty_cycle() {
        let spec = UdpSpec {
            on_off: Some(OnOffSpec {
                on_mean: SimDuration::from_millis(100),
                off_mean: SimDuration::from_millis(300),
                distribution: Sojourn::Exponential,
            }),
            ..cbr(1_000_000, 125)
        };
        let rng = StreamRng::derive(1, "flow:u:app");
        let end = SimTime::from_nanos(2_000_000_000_000);
        let mut s = UdpSource::new(spec, ms(0), Some(end), rng);
        assert!(s.poll_at().unwrap() > ms(0), "it begins off");
        while let Some(t) = s.poll_at() {
            s.on_timer(t);
        }
        // 2000 s at 1 ms per datagram while on a quarter of the time: about 500,000; the
        // number of on periods (~5000) makes the on time's sd about 1.4 %; allow 5 sigma.
        let sent = s.sent() as f64;
        assert!((sent / 500_000.0 - 1.0).abs() < 0.07, "{sent}");
    }
}
