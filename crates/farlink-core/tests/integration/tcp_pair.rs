//! Two TCP endpoints joined by a virtual-time path: behaviour tests of the sans-I/O TCP.
//!
//! The harness (after quinn's `Pair`) holds a sender and a receiver, a fixed one-way delay
//! each way, an optional serialisation rate on the data direction, and a scripted loss list
//! that drops given transmissions of given data sequence numbers (after ns-3's
//! `TcpSeqErrorModel`). Time jumps to the next arrival or timer; the number of steps is
//! bounded so that a livelock fails instead of hanging.

use std::collections::VecDeque;

use farlink_core::tcp::cc::{CcConfig, RenoConfig};
use farlink_core::tcp::receiver::{DelayedAck, Receiver, ReceiverConfig};
use farlink_core::tcp::recovery::{LossRecovery, RecoveryState};
use farlink_core::tcp::segment::Segment;
use farlink_core::tcp::sender::{AppSource, Sender, SenderConfig};
use farlink_core::tcp::{Negotiated, TcpOptions};
use farlink_core::time::{SimDuration, SimTime};

const ONE_WAY_MS: u64 = 50;
const RTT: SimDuration = SimDuration::from_millis(2 * ONE_WAY_MS);

struct Setup {
    sender: SenderConfig,
    receiver: ReceiverConfig,
    one_way_delay: SimDuration,
    /// Serialisation rate of the data direction; `None` for an infinitely fast link.
    rate_bps: Option<u64>,
    /// Scripted losses, by segment index (sequence number / SMSS): each entry drops one
    /// transmission of that segment; list an index twice to drop two transmissions.
    drop_segments: Vec<u64>,
    /// Scripted reordering: the first transmission of each listed segment index arrives this
    /// much later than its place in the queue would have it.
    delay_segments: Vec<(u64, SimDuration)>,
    max_steps: u64,
}

impl Setup {
    fn new(recovery: LossRecovery, options: TcpOptions, app: AppSource) -> Setup {
        Setup {
            sender: SenderConfig {
                options,
                recovery,
                app,
                ..SenderConfig::default()
            },
            receiver: ReceiverConfig {
                options,
                ..ReceiverConfig::default()
            },
            one_way_delay: SimDuration::from_millis(ONE_WAY_MS),
            rate_bps: Some(10_000_000),
            drop_segments: Vec::new(),
            delay_segments: Vec::new(),
            max_steps: 100_000,
        }
    }

    fn bulk(recovery: LossRecovery, sack: bool, total_bytes: u64) -> Setup {
        let options = TcpOptions {
            sack,
            timestamps: false,
            ..TcpOptions::default()
        };
        Setup::new(recovery, options, AppSource::Bulk { total_bytes })
    }

    fn drop(mut self, segments: &[u64]) -> Setup {
        self.drop_segments.extend_from_slice(segments);
        self
    }

    fn delay(mut self, segment: u64, by: SimDuration) -> Setup {
        self.delay_segments.push((segment, by));
        self
    }

    fn build(self) -> Pair {
        let negotiated = Negotiated::without_handshake(
            &self.sender.options,
            &self.receiver.options,
            self.receiver.receive_buffer_bytes,
        );
        let sender = Sender::new(&self.sender, &negotiated);
        let smss = sender.smss_bytes();
        Pair {
            now: SimTime::ZERO,
            one_way_delay: self.one_way_delay,
            rate_bps: self.rate_bps,
            link_free_at: SimTime::ZERO,
            sender,
            receiver: Receiver::new(&self.receiver, &negotiated),
            to_receiver: VecDeque::new(),
            to_sender: VecDeque::new(),
            drops: self.drop_segments.iter().map(|i| i * smss).collect(),
            delays: self
                .delay_segments
                .iter()
                .map(|&(i, by)| (i * smss, by))
                .collect(),
            steps: 0,
            max_steps: self.max_steps,
            log: Log::default(),
        }
    }
}

/// What the harness saw, for the assertions.
#[derive(Default)]
struct Log {
    /// (time, seq) of every data transmission.
    sent: Vec<(SimTime, u64)>,
    /// (time, seq) of every retransmission.
    retransmitted: Vec<(SimTime, u64)>,
    dropped: u64,
    delivered_segments: u64,
    /// (time, new state, snd_una at the change).
    recovery: Vec<(SimTime, RecoveryState, u64)>,
    timeouts: Vec<SimTime>,
    max_flight_bytes: u64,
}

struct Pair {
    now: SimTime,
    one_way_delay: SimDuration,
    rate_bps: Option<u64>,
    link_free_at: SimTime,
    sender: Sender,
    receiver: Receiver,
    to_receiver: VecDeque<(SimTime, Segment)>,
    to_sender: VecDeque<(SimTime, Segment)>,
    drops: Vec<u64>,
    delays: Vec<(u64, SimDuration)>,
    steps: u64,
    max_steps: u64,
    log: Log,
}

impl Pair {
    fn smss(&self) -> u64 {
        self.sender.smss_bytes()
    }

    fn seq_of(&self, segment: u64) -> u64 {
        segment * self.smss()
    }

    /// Hands everything the sender may send now to the data link.
    fn transmit(&mut self) {
        while let Some(seg) = self.sender.poll_transmit(self.now).map(|t| t.segment) {
            let seen_before = self.log.sent.iter().any(|&(_, s)| s == seg.seq);
            if seen_before {
                self.log.retransmitted.push((self.now, seg.seq));
            }
            self.log.sent.push((self.now, seg.seq));
            let flight = self.sender.snd_max() - self.sender.snd_una();
            self.log.max_flight_bytes = self.log.max_flight_bytes.max(flight);
            if let Some(i) = self.drops.iter().position(|&s| s == seg.seq) {
                self.drops.remove(i);
                self.log.dropped += 1;
                continue;
            }
            let start = self.now.max(self.link_free_at);
            let serialisation = match self.rate_bps {
                Some(rate) => {
                    SimDuration::from_nanos(u64::from(seg.wire_bytes()) * 8 * 1_000_000_000 / rate)
                }
                None => SimDuration::ZERO,
            };
            self.link_free_at = start + serialisation;
            let mut arrival = self.link_free_at + self.one_way_delay;
            if let Some(i) = self.delays.iter().position(|&(s, _)| s == seg.seq) {
                arrival += self.delays.remove(i).1;
            }
            // Kept in arrival order: a delayed segment lets later ones overtake it.
            let at = self.to_receiver.partition_point(|&(t, _)| t <= arrival);
            self.to_receiver.insert(at, (arrival, seg));
        }
    }

    fn next_event(&self) -> Option<SimTime> {
        [
            self.to_receiver.front().map(|&(t, _)| t),
            self.to_sender.front().map(|&(t, _)| t),
            self.sender.next_timeout(),
            self.receiver.next_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// One event time; false when nothing is scheduled.
    fn step(&mut self) -> bool {
        self.transmit();
        let Some(next) = self.next_event() else {
            return false;
        };
        assert!(next >= self.now, "time went backwards");
        self.now = next;
        self.steps += 1;
        assert!(
            self.steps <= self.max_steps,
            "no end after {} steps at {} (livelock?)",
            self.max_steps,
            self.now
        );
        let back = self.now + self.one_way_delay;
        while self
            .to_receiver
            .front()
            .is_some_and(|&(t, _)| t <= self.now)
        {
            let (_, seg) = self.to_receiver.pop_front().unwrap();
            self.log.delivered_segments += 1;
            if let Some(ack) = self.receiver.on_segment(self.now, &seg) {
                self.to_sender.push_back((back, ack));
            }
        }
        if let Some(ack) = self.receiver.on_timeout(self.now) {
            self.to_sender.push_back((back, ack));
        }
        let before = self.sender.recovery_state();
        while self.to_sender.front().is_some_and(|&(t, _)| t <= self.now) {
            let (_, ack) = self.to_sender.pop_front().unwrap();
            self.sender.on_ack(self.now, &ack);
            self.note_recovery_change();
        }
        let timeouts = self.sender.stats().timeouts;
        self.sender.on_timeout(self.now);
        if self.sender.stats().timeouts > timeouts {
            self.log.timeouts.push(self.now);
        }
        if self.sender.recovery_state() != before {
            self.note_recovery_change();
        }
        self.transmit();
        true
    }

    fn note_recovery_change(&mut self) {
        let state = self.sender.recovery_state();
        let last = self
            .log
            .recovery
            .last()
            .map_or(RecoveryState::Open, |&(_, s, _)| s);
        if last != state {
            self.log
                .recovery
                .push((self.now, state, self.sender.snd_una()));
        }
    }

    fn drive_until(&mut self, done: impl Fn(&Pair) -> bool) {
        while !done(self) {
            assert!(
                self.step(),
                "idle at {} before the condition held",
                self.now
            );
        }
    }

    /// Runs a bulk transfer to completion and checks conservation.
    fn run_to_completion(&mut self) {
        self.drive_until(|p| p.sender.is_complete());
        assert_eq!(
            self.log.sent.len() as u64,
            self.log.delivered_segments + self.log.dropped + self.to_receiver.len() as u64,
            "every data segment delivered, dropped or in flight"
        );
    }

    fn entries_into(&self, state: RecoveryState) -> Vec<(SimTime, u64)> {
        self.log
            .recovery
            .iter()
            .filter(|&&(_, s, _)| s == state)
            .map(|&(t, _, una)| (t, una))
            .collect()
    }
}

const ALL: [LossRecovery; 4] = [
    LossRecovery::Tahoe,
    LossRecovery::Reno,
    LossRecovery::NewReno,
    LossRecovery::Sack,
];

#[test]
fn lossless_bulk_transfer_delivers_exactly_n_bytes_in_order() {
    let total = 1_000_003;
    for recovery in ALL {
        for timestamps in [false, true] {
            let options = TcpOptions {
                timestamps,
                ..TcpOptions::default()
            };
            let mut p =
                Setup::new(recovery, options, AppSource::Bulk { total_bytes: total }).build();
            p.run_to_completion();
            assert_eq!(p.receiver.delivered_bytes(), total, "{recovery}");
            assert_eq!(p.receiver.rcv_nxt(), total);
            assert_eq!(p.receiver.stats().duplicate_segments, 0);
            assert_eq!(p.receiver.stats().out_of_order_segments, 0);
            assert_eq!(p.sender.stats().retransmitted_segments, 0);
            assert_eq!(p.sender.stats().timeouts, 0);
            assert_eq!(p.sender.stats().bytes_acked, total);
            assert_eq!(p.sender.snd_una(), total);
            assert!(p.log.recovery.is_empty());
        }
    }
}

#[test]
fn one_loss_is_repaired_by_fast_retransmit_without_timeout() {
    for recovery in ALL {
        let mut p = Setup::bulk(recovery, recovery == LossRecovery::Sack, 300_000)
            .drop(&[40])
            .build();
        p.run_to_completion();
        let s = p.sender.stats();
        assert_eq!(s.timeouts, 0, "{recovery}");
        assert_eq!(s.fast_retransmits, 1, "{recovery}");
        assert_eq!(p.log.retransmitted[0].1, p.seq_of(40), "{recovery}");
        assert_eq!(s.retransmitted_segments, 1, "{recovery}");
        assert_eq!(p.receiver.delivered_bytes(), 300_000);
        if recovery != LossRecovery::Tahoe {
            assert_eq!(s.fast_recoveries, 1, "{recovery}");
            // Left with the ACK that covers the whole window sent before the loss.
            assert_eq!(p.entries_into(RecoveryState::Open).len(), 1);
        }
    }
}

#[test]
fn tahoe_slow_starts_from_one_segment_after_fast_retransmit() {
    let mut p = Setup::bulk(LossRecovery::Tahoe, false, 300_000)
        .drop(&[40])
        .build();
    p.drive_until(|p| p.sender.stats().fast_retransmits == 1);
    assert_eq!(p.sender.cwnd_bytes(), p.smss());
    assert_eq!(p.sender.recovery_state(), RecoveryState::TimeoutRecovery);
    p.run_to_completion();
}

#[test]
fn two_losses_in_one_window_newreno_recovers_both_through_a_partial_ack() {
    let mut p = Setup::bulk(LossRecovery::NewReno, false, 300_000)
        .drop(&[30, 34])
        .build();
    p.run_to_completion();
    let s = p.sender.stats();
    assert_eq!(s.timeouts, 0);
    assert_eq!(s.fast_recoveries, 1, "one recovery episode for both losses");
    assert_eq!(s.retransmitted_segments, 2);
    let retx: Vec<u64> = p.log.retransmitted.iter().map(|&(_, s)| s).collect();
    assert_eq!(retx, vec![p.seq_of(30), p.seq_of(34)]);
    // The second hole is repaired one RTT after the first, on the partial ACK.
    let gap = p.log.retransmitted[1].0 - p.log.retransmitted[0].0;
    assert!(gap.as_nanos() >= RTT.as_nanos(), "partial ACK after {gap}");
    let entered = p.entries_into(RecoveryState::FastRecovery);
    let left = p.entries_into(RecoveryState::Open);
    assert_eq!((entered.len(), left.len()), (1, 1));
    assert!((left[0].0 - entered[0].0).as_nanos() >= 2 * RTT.as_nanos());
    assert_eq!(p.receiver.delivered_bytes(), 300_000);
}

#[test]
fn two_losses_in_one_window_reno_leaves_recovery_on_the_partial_ack() {
    let mut p = Setup::bulk(LossRecovery::Reno, false, 300_000)
        .drop(&[30, 34])
        .build();
    p.drive_until(|p| p.sender.stats().fast_recoveries == 1);
    let recover = p.sender.recovery().recover().unwrap();
    p.drive_until(|p| p.sender.recovery_state() != RecoveryState::FastRecovery);
    // Reno leaves fast recovery on the first ACK of new data although it does not cover
    // `recover`: the segment after the second hole is still unacknowledged.
    assert_eq!(p.sender.snd_una(), p.seq_of(34));
    assert!(p.sender.snd_una() < recover);
    assert_eq!(p.sender.recovery_state(), RecoveryState::Open);
    p.run_to_completion();
    let s = p.sender.stats();
    // The second hole then needs three more duplicate ACKs or the timer. Here the data sent on
    // the inflated window brings them, so Reno halves a second time, where NewReno halved
    // once.
    assert_eq!((s.fast_recoveries, s.timeouts), (2, 0), "{s:?}");
    assert_eq!(s.retransmitted_segments, 2);
    assert_eq!(p.receiver.delivered_bytes(), 300_000);
}

#[test]
fn two_losses_in_one_window_sack_retransmits_both_within_one_rtt() {
    let mut p = Setup::bulk(LossRecovery::Sack, true, 300_000)
        .drop(&[30, 34])
        .build();
    p.run_to_completion();
    let s = p.sender.stats();
    assert_eq!(s.timeouts, 0);
    assert_eq!(s.fast_recoveries, 1);
    assert_eq!(s.retransmitted_segments, 2);
    // Both holes are retransmitted within the same round trip: RFC 6675 sends nothing more
    // until cwnd - pipe >= 1 SMSS, and the second hole goes first then. Here cwnd is 12.5
    // segments (25 outstanding without the two Limited Transmit segments, RFC 5681 3.2) and the
    // duplicate ACKs of the first slow-start burst leave pipe at 12, half a segment short, so
    // the opportunity comes with the next burst's, late in the round trip...
    let gap = p.log.retransmitted[1].0 - p.log.retransmitted[0].0;
    assert!(gap.as_nanos() < RTT.as_nanos(), "second hole after {gap}");
    // ...and recovery ends when that retransmission is acknowledged, within two RTTs.
    let entered = p.entries_into(RecoveryState::FastRecovery);
    let left = p.entries_into(RecoveryState::Open);
    assert_eq!((entered.len(), left.len()), (1, 1));
    let took = left[0].0 - entered[0].0;
    assert!(took.as_nanos() < RTT.as_nanos() * 2, "recovery took {took}");
    assert_eq!(p.receiver.delivered_bytes(), 300_000);
}

#[test]
fn whole_window_lost_times_out_backs_off_and_karn_keeps_srtt() {
    for recovery in [LossRecovery::NewReno, LossRecovery::Sack] {
        let mut setup = Setup::bulk(recovery, recovery == LossRecovery::Sack, 400_000);
        // A 20-segment receive window: segments 60..80 are one whole window.
        setup.receiver.receive_buffer_bytes = 20 * 1460;
        // Every segment of the window, and the first retransmission of its first segment.
        let lost: Vec<u64> = (60..80).chain([60]).collect();
        let mut p = setup.drop(&lost).build();
        p.drive_until(|p| p.sender.stats().timeouts == 1);
        assert_eq!(
            p.sender.stats().fast_retransmits,
            0,
            "{recovery}: no duplicate ACKs"
        );
        let srtt = p.sender.rtt().srtt().expect("sampled before the loss");
        let t1 = p.log.timeouts[0];
        assert_eq!(
            p.sender.rtt().rto(),
            SimDuration::from_secs(2),
            "min RTO 1 s, doubled"
        );
        assert_eq!(p.sender.cwnd_bytes(), p.smss());
        p.drive_until(|p| p.sender.stats().timeouts == 2);
        let t2 = p.log.timeouts[1];
        assert_eq!(
            t2 - t1,
            SimDuration::from_secs(2),
            "{recovery}: backoff doubles"
        );
        assert_eq!(
            p.sender.next_timeout(),
            Some(t2 + SimDuration::from_secs(4))
        );
        // The second retransmission gets through; its ACK is ambiguous without timestamps.
        let first_lost = p.seq_of(60);
        p.drive_until(|p| p.sender.snd_una() > first_lost);
        assert_eq!(p.sender.rtt().srtt(), Some(srtt), "{recovery}: Karn's rule");
        assert_eq!(
            p.sender.rtt().backoffs(),
            2,
            "backed-off RTO kept until a sample"
        );
        p.run_to_completion();
        assert_eq!(p.sender.stats().timeouts, 2);
        assert_eq!(p.receiver.delivered_bytes(), 400_000);
    }
}

#[test]
fn delayed_ack_acks_every_second_segment_and_the_timer_acks_a_lone_one() {
    let options = TcpOptions {
        timestamps: false,
        ..TcpOptions::default()
    };
    // Eleven segments: IW10 gives five ACKs of two segments, then one lone segment.
    let total = 11 * 1460;
    let mut p = Setup::new(
        LossRecovery::Sack,
        options,
        AppSource::Bulk { total_bytes: total },
    )
    .build();
    p.run_to_completion();
    let r = p.receiver.stats();
    assert_eq!(r.acks_sent, 6);
    assert_eq!(r.delayed_ack_timeouts, 1);
    // The lone segment's ACK waited the 200 ms delayed-ACK timeout.
    let last_sent = p.log.sent.last().unwrap().0;
    let waited = p.now - last_sent;
    assert!(waited.as_nanos() >= (RTT + SimDuration::from_millis(200)).as_nanos());
    // Over a longer transfer: about one ACK per two segments.
    let mut p = Setup::new(
        LossRecovery::Sack,
        options,
        AppSource::Bulk {
            total_bytes: 400 * 1460,
        },
    )
    .build();
    p.run_to_completion();
    let acks = p.receiver.stats().acks_sent;
    assert!((200..=205).contains(&acks), "{acks} ACKs for 400 segments");
}

#[test]
fn window_scaling_lets_the_window_exceed_64_kib() {
    let run = |window_scaling: bool| {
        let options = TcpOptions {
            window_scaling,
            ..TcpOptions::default()
        };
        let mut setup = Setup::new(
            LossRecovery::Sack,
            options,
            AppSource::Bulk {
                total_bytes: 4_000_000,
            },
        );
        setup.receiver.receive_buffer_bytes = 1 << 20;
        // A GEO hop: 600 ms round trip at 10 Mb/s (a 750 kB bandwidth-delay product).
        setup.one_way_delay = SimDuration::from_millis(300);
        let mut p = setup.build();
        p.run_to_completion();
        assert_eq!(p.receiver.delivered_bytes(), 4_000_000);
        (p.log.max_flight_bytes, p.now)
    };
    let (scaled_flight, scaled_time) = run(true);
    let (unscaled_flight, unscaled_time) = run(false);
    assert!(scaled_flight > 65_535, "flight {scaled_flight}");
    assert!(unscaled_flight <= 65_535, "flight {unscaled_flight}");
    assert!(
        scaled_time.as_nanos() * 2 < unscaled_time.as_nanos(),
        "{scaled_time} vs {unscaled_time}"
    );
}

/// Unbounded sender, 1 MiB receive window, no serialisation delay: every round trip's ACKs
/// arrive together, so the window after k round trips is exact.
fn growth_pair(growth: RenoConfig) -> Pair {
    let options = TcpOptions {
        timestamps: false,
        ..TcpOptions::default()
    };
    let mut setup = Setup::new(LossRecovery::Sack, options, AppSource::Unbounded);
    setup.sender.congestion_control = CcConfig::Reno(growth);
    setup.receiver.receive_buffer_bytes = 1 << 20;
    setup.receiver.delayed_ack = DelayedAck::default();
    setup.rate_bps = None;
    setup.build()
}

fn cwnd_segments_after_rounds(p: &mut Pair, rounds: u64) -> f64 {
    let t = SimTime::ZERO + SimDuration::from_millis(rounds * 2 * ONE_WAY_MS + 10);
    p.drive_until(|p| p.now >= t);
    p.sender.cwnd_bytes() as f64 / p.smss() as f64
}

#[test]
fn slow_start_with_delayed_acks_grows_1_5x_per_ack_and_2x_by_byte_counting() {
    let mut per_ack = growth_pair(RenoConfig::default());
    let mut abc = growth_pair(RenoConfig::byte_counting());
    let rounds = 4;
    let w_per_ack = cwnd_segments_after_rounds(&mut per_ack, rounds);
    let w_abc = cwnd_segments_after_rounds(&mut abc, rounds);
    assert_eq!(w_abc, 160.0, "10 · 2^4");
    let factor = (w_per_ack / 10.0).powf(1.0 / rounds as f64);
    assert!((1.45..=1.55).contains(&factor), "per-ACK factor {factor}");
    let ratio = w_abc / w_per_ack;
    let expected = (2.0f64 / 1.5).powi(rounds as i32);
    assert!(
        (ratio / expected - 1.0).abs() < 0.06,
        "{ratio} vs {expected}"
    );
}

#[test]
fn congestion_avoidance_with_delayed_acks_grows_half_a_segment_per_ack_rule_and_one_by_abc() {
    // Congestion avoidance from the start: ssthresh = the initial window of 10 segments
    // (1460 bytes each, no timestamps).
    let ssthresh_bytes = 10 * 1460;
    let mut per_ack = growth_pair(RenoConfig {
        initial_ssthresh_bytes: ssthresh_bytes,
        ..RenoConfig::default()
    });
    let mut abc = growth_pair(RenoConfig {
        initial_ssthresh_bytes: ssthresh_bytes,
        ..RenoConfig::byte_counting()
    });
    assert_eq!(per_ack.smss(), 1460);
    let rounds = 10;
    let grown_per_ack = cwnd_segments_after_rounds(&mut per_ack, rounds) - 10.0;
    let grown_abc = cwnd_segments_after_rounds(&mut abc, rounds) - 10.0;
    // ABC: one SMSS per window acknowledged; per ACK: SMSS²/cwnd per ACK, one ACK per two
    // segments, so half as much.
    assert!((9.0..=10.0).contains(&grown_abc), "ABC grew {grown_abc}");
    let ratio = grown_abc / grown_per_ack;
    assert!((1.8..=2.2).contains(&ratio), "ABC/per-ACK growth {ratio}");
}

#[test]
fn a_lost_fast_retransmission_times_out_in_recovery_and_keeps_its_ssthresh() {
    for recovery in [LossRecovery::NewReno, LossRecovery::Sack] {
        // Segment 30 and its fast retransmission are both lost: the duplicate ACKs (or SACKs)
        // keep new data flowing past the hole until the timer fires, still in fast recovery.
        let mut p = Setup::bulk(recovery, recovery == LossRecovery::Sack, 600_000)
            .drop(&[30, 30])
            .build();
        p.drive_until(|p| p.sender.stats().fast_recoveries == 1);
        let recovery_ssthresh = p.sender.cc().metrics().ssthresh_bytes;
        let entry_flight = p.sender.flight_size_bytes();
        let mut flight_at_timeout = 0;
        while p.sender.stats().timeouts == 0 {
            assert_eq!(
                p.sender.recovery_state(),
                RecoveryState::FastRecovery,
                "{recovery}"
            );
            flight_at_timeout = p.sender.flight_size_bytes();
            assert!(p.step(), "{recovery}: idle before the timeout");
        }
        // FlightSize grew while the hole stayed open: RFC 5681's FlightSize / 2 now would be
        // above the reduction already made for this loss.
        assert!(
            flight_at_timeout / 2 > recovery_ssthresh,
            "{recovery}: FlightSize {flight_at_timeout} (at entry {entry_flight}), ssthresh \
             {recovery_ssthresh}"
        );
        assert_eq!(
            p.sender.cc().metrics().ssthresh_bytes,
            recovery_ssthresh,
            "{recovery}: the timeout keeps the recovery's ssthresh"
        );
        assert_eq!(p.sender.cwnd_bytes(), p.smss(), "{recovery}: loss window");
        p.run_to_completion();
        assert_eq!(p.sender.stats().timeouts, 1, "{recovery}");
        assert_eq!(p.receiver.delivered_bytes(), 600_000, "{recovery}");
    }
}

/// The index of the last segment of a bulk transfer of `total` bytes.
fn last_segment(p: &Pair, total: u64) -> u64 {
    total.div_ceil(p.smss()) - 1
}

#[test]
fn rack_marks_a_lost_retransmission_lost_without_a_timeout() {
    // Segment 30 and its first retransmission are lost. SACK recovery waits for the timer
    // (the test above); RACK sees segments sent after the retransmission delivered.
    let mut p = Setup::bulk(LossRecovery::Rack, true, 600_000)
        .drop(&[30, 30])
        .build();
    p.run_to_completion();
    let s = p.sender.stats();
    assert_eq!(s.timeouts, 0);
    let seq = p.seq_of(30);
    let resent = p
        .log
        .retransmitted
        .iter()
        .filter(|&&(_, q)| q == seq)
        .count();
    assert_eq!(resent, 2, "the retransmission itself was sent again");
    assert_eq!(s.fast_recoveries, 1, "one recovery repaired both");
    assert_eq!(p.receiver.delivered_bytes(), 600_000);
}

#[test]
fn tlp_repairs_a_tail_loss_without_a_timeout() {
    for recovery in [LossRecovery::Sack, LossRecovery::Rack] {
        // Whole segments: the probe (the last one again) takes as long as any other, so its
        // SACK cannot pass for one of the original (RFC 8985 6.2 step 2's min_RTT test).
        let probe = Setup::bulk(recovery, true, 1).build();
        let total = 200 * probe.smss();
        let last = last_segment(&probe, total);
        let mut p = Setup::bulk(recovery, true, total)
            .drop(&[last - 2, last - 1, last])
            .build();
        p.run_to_completion();
        let s = p.sender.stats();
        assert_eq!(p.receiver.delivered_bytes(), total, "{recovery}");
        if recovery == LossRecovery::Sack {
            // Nothing comes back after the tail: only the timer finds it.
            assert_eq!(s.timeouts, 1, "{recovery}");
            assert_eq!(s.loss_probes, 0);
        } else {
            assert_eq!(s.timeouts, 0, "{recovery}");
            assert_eq!(s.loss_probes, 1);
            assert_eq!(
                s.fast_recoveries, 1,
                "the probe's SACK let RACK start fast recovery"
            );
            assert_eq!(s.retransmitted_segments, 3, "the probe and the two holes");
        }
    }
}

#[test]
fn reordering_within_the_reordering_window_is_not_retransmitted_by_rack() {
    // Segment 20 arrives two segment times late (seen as reordering: RACK.reord), then
    // segment 60 arrives 10 ms late, overtaken by more than DupThresh segments; RACK's
    // window, min_RTT / 4 (about 25 ms), covers it.
    let total = 400_000;
    for recovery in [LossRecovery::Sack, LossRecovery::Rack] {
        let mut p = Setup::bulk(recovery, true, total)
            .delay(20, SimDuration::from_micros(2_500))
            .delay(60, SimDuration::from_millis(10))
            .build();
        p.run_to_completion();
        let s = p.sender.stats();
        assert_eq!(s.timeouts, 0, "{recovery}");
        if recovery == LossRecovery::Sack {
            assert!(s.retransmitted_segments > 0, "DupThresh SACKs: spurious");
        } else {
            assert_eq!(s.retransmitted_segments, 0, "{recovery}");
            assert_eq!(s.fast_recoveries, 0, "{recovery}");
        }
        assert_eq!(p.receiver.delivered_bytes(), total, "{recovery}");
    }
}
