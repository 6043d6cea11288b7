//! What limited a sender: the time it spent held back by each cause.
//!
//! Each time [`Sender::poll_transmit`](super::sender::Sender::poll_transmit) has nothing more
//! to hand out, the sender names what stops it ([`Limit`]); the time until its next entry
//! point (every one is handed `now`) is counted against that cause. Sans-I/O: the clock is the
//! `now` the sender is given, nothing else.
//!
//! The link is not something a sender sees directly; it shows in the round-trip time. A
//! sender held back by a window while the bottleneck queue never empties has a window larger
//! than the path holds, and the link is the limit. The sign of a queue that never empties (the
//! standing queue of CoDel, the `diff` of Vegas) is that even the smallest RTT sample of a
//! round exceeds the path's smallest: [`LimitClock`] counts a window limit as [`Limit::Link`]
//! when the smallest sample of the last round is more than an eighth above the smallest ever
//! seen (on a 2 Mbit/s path of 600 ms, a standing queue of 75 ms, about 12 packets of 1500
//! bytes). A queue that empties once per round, as under a window smaller than the path's
//! bandwidth-delay product, does not count.

use crate::time::{SimDuration, SimTime};

/// What held a sender back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Limit {
    /// Nothing to send: the application has handed over nothing more (or Nagle holds a short
    /// segment), and nothing is waiting to be retransmitted.
    Application,
    /// The peer's advertised window (a closed window under the persist timer included).
    ReceiveWindow,
    /// The socket send buffer (`SenderConfig::send_buffer_bytes`).
    SendBuffer,
    /// The congestion controller: its window (with recovery's inflation, or against `pipe`)
    /// or its pacing rate.
    CongestionWindow,
    /// A window or the pacing rate, while the RTT shows a standing queue at the bottleneck:
    /// the link is full.
    Link,
}

impl Limit {
    pub const ALL: [Limit; 5] = [
        Limit::Application,
        Limit::ReceiveWindow,
        Limit::SendBuffer,
        Limit::CongestionWindow,
        Limit::Link,
    ];

    /// The name in summaries.
    pub fn name(self) -> &'static str {
        match self {
            Limit::Application => "application",
            Limit::ReceiveWindow => "receive_window",
            Limit::SendBuffer => "send_buffer",
            Limit::CongestionWindow => "congestion_window",
            Limit::Link => "link",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Time spent under each [`Limit`], and the RTT rounds that tell a full link.
#[derive(Clone, Debug, Default)]
pub struct LimitClock {
    /// The last instant accounted for; `None` before the first entry point.
    last: Option<SimTime>,
    /// The cause the time since `last` counts against; `None`: none (opening, or done).
    current: Option<Limit>,
    ns: [u64; 5],
    /// The smallest RTT sample ever, and the smallest of the current and the last round.
    min_rtt: Option<SimDuration>,
    round_min_rtt: Option<SimDuration>,
    last_round_min_rtt: Option<SimDuration>,
    /// The current round ends when the cumulative ACK reaches this.
    round_end: u64,
}

impl LimitClock {
    /// Counts the time up to `now` against the current cause.
    pub fn advance(&mut self, now: SimTime) {
        if let (Some(last), Some(c)) = (self.last, self.current) {
            self.ns[c.index()] += now.saturating_since(last).as_nanos();
        }
        self.last = Some(now);
    }

    /// The cause the time from the last instant counts against.
    pub fn current(&self) -> Option<Limit> {
        self.current
    }

    /// From now on, the sender is held back by `limit` (`None`: by nothing worth counting).
    /// A window or pacing limit under a standing queue counts as [`Limit::Link`].
    pub fn set(&mut self, limit: Option<Limit>) {
        self.current = match limit {
            Some(Limit::Application) | None => limit,
            Some(_) if self.standing_queue() => Some(Limit::Link),
            Some(l) => Some(l),
        };
    }

    /// An RTT sample (Karn's rule applied).
    pub fn on_rtt_sample(&mut self, rtt: SimDuration) {
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        self.round_min_rtt = Some(self.round_min_rtt.map_or(rtt, |m| m.min(rtt)));
    }

    /// An ACK up to `ack` arrived while `SND.MAX` was `snd_max`: a round ends once the data
    /// outstanding when it began is acknowledged.
    pub fn on_ack(&mut self, ack: u64, snd_max: u64) {
        if ack < self.round_end {
            return;
        }
        if self.round_min_rtt.is_some() {
            self.last_round_min_rtt = self.round_min_rtt.take();
        }
        self.round_end = snd_max.max(ack + 1);
    }

    /// The smallest RTT of the last round is more than an eighth above the smallest ever.
    pub fn standing_queue(&self) -> bool {
        match (self.last_round_min_rtt, self.min_rtt) {
            (Some(round), Some(min)) => {
                round.as_nanos() > min.as_nanos().saturating_add(min.as_nanos() / 8)
            }
            _ => false,
        }
    }

    /// Nanoseconds under each cause up to `now` (the open interval included), in
    /// [`Limit::ALL`]'s order.
    pub fn nanos_until(&self, now: SimTime) -> [u64; 5] {
        let mut ns = self.ns;
        if let (Some(last), Some(c)) = (self.last, self.current) {
            ns[c.index()] += now.saturating_since(last).as_nanos();
        }
        ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_millis(ms)
    }
    fn ms(n: u64) -> SimDuration {
        SimDuration::from_millis(n)
    }

    #[test]
    fn time_counts_against_the_cause_set_before_it() {
        let mut c = LimitClock::default();
        c.advance(at(0));
        c.set(Some(Limit::CongestionWindow));
        c.advance(at(30));
        c.set(Some(Limit::Application));
        c.advance(at(100));
        c.set(None);
        c.advance(at(500));
        let ns = c.nanos_until(at(900));
        assert_eq!(ns[Limit::CongestionWindow as usize], ms(30).as_nanos());
        assert_eq!(ns[Limit::Application as usize], ms(70).as_nanos());
        assert_eq!(
            ns.iter().sum::<u64>(),
            ms(100).as_nanos(),
            "nothing while done"
        );
        c.set(Some(Limit::ReceiveWindow));
        assert_eq!(
            c.nanos_until(at(900))[Limit::ReceiveWindow as usize],
            ms(400).as_nanos(),
            "the open interval counts"
        );
    }

    #[test]
    fn a_window_limit_under_a_standing_queue_is_the_link() {
        let mut c = LimitClock::default();
        // Round 1: samples of 600 ms, the path's own.
        c.on_rtt_sample(ms(600));
        c.on_ack(1000, 10_000);
        c.on_rtt_sample(ms(600));
        c.on_ack(10_000, 20_000);
        c.set(Some(Limit::ReceiveWindow));
        assert_eq!(c.current, Some(Limit::ReceiveWindow));
        // A round whose smallest sample is 700 ms: a queue that never emptied.
        c.on_rtt_sample(ms(800));
        c.on_rtt_sample(ms(700));
        c.on_ack(20_000, 30_000);
        assert!(c.standing_queue());
        c.set(Some(Limit::CongestionWindow));
        assert_eq!(c.current, Some(Limit::Link));
        c.set(Some(Limit::Application));
        assert_eq!(c.current, Some(Limit::Application), "nothing to send wins");
        // A round in which one sample saw the empty queue.
        c.on_rtt_sample(ms(900));
        c.on_rtt_sample(ms(610));
        c.on_ack(30_000, 40_000);
        assert!(!c.standing_queue(), "610 ms is within an eighth of 600 ms");
    }
}
