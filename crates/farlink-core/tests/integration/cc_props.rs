//! Property tests of every registered congestion controller (`CcConfig::NAMES`, so a new one
//! is covered as soon as it is registered): under any sequence of sent segments, ACK batches,
//! ACK echoes, congestion events, timeouts, spurious-congestion undos and RTT samples — RTTs of
//! zero and of hours included (an Iridium RTT of 20 s is ordinary), ACKs in and out of
//! recovery, consistent bookkeeping or arbitrary numbers — a controller never panics, its
//! window is never zero and never above 2^40 bytes, and ssthresh (in the metrics and in every
//! reduction) is never below two segments.

use farlink_core::tcp::cc::{
    AckBatch, AckEcho, Acked, CcConfig, CongestionController, CongestionEvent, ControllerInit,
    Detection, Lost, SentPacket,
};
use farlink_core::tcp::rtt::{RttConfig, RttEstimator};
use farlink_core::time::{SimDuration, SimTime};
use proptest::prelude::*;

/// A generous bound: no controller may exceed 1 TiB of window.
const CAP_BYTES: u64 = 1 << 40;
const HOUR_NS: u64 = 3_600_000_000_000;

#[derive(Clone, Debug)]
enum Op {
    /// New segments handed to the network.
    Send {
        segments: u64,
    },
    /// An ACK after `dt_ns`: `segments` newly cumulatively acknowledged (0: a duplicate),
    /// `sacked` newly SACKed, an RTT sample or none.
    Ack {
        dt_ns: u64,
        segments: u64,
        sacked_segments: u64,
        partial_bytes: u64,
        rtt_ns: Option<u64>,
        in_recovery: bool,
        /// Arbitrary in-flight figures instead of the bookkeeping's.
        garbage_in_flight: Option<(u64, u64)>,
        lost_segments: u64,
    },
    /// The segment an ACK answers (ST-PD's echo), with its time.
    Echo {
        dt_ns: u64,
        rtt_ns: u64,
        duplicate: bool,
        ambiguous: bool,
    },
    /// A loss detected by duplicate ACKs or SACK.
    Loss {
        dt_ns: u64,
        sack: bool,
        tahoe: bool,
        flight_bytes: Option<u64>,
    },
    /// The retransmission timer expired.
    Timeout {
        dt_ns: u64,
        repeated: bool,
        flight_bytes: Option<u64>,
    },
    Spurious,
}

fn rtt_ns() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        1u64..1_000_000,                       // under a millisecond
        1_000_000u64..2_000_000_000,           // 1 ms .. 2 s
        Just(20_000_000_000u64),               // an Iridium 20 s
        (1u64..=48).prop_map(|h| h * HOUR_NS), // hours
        Just(u64::MAX / 4),                    // absurd
    ]
}

fn dt_ns() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        1u64..1_000_000_000,
        (1u64..=10).prop_map(|h| h * HOUR_NS),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (1u64..=64).prop_map(|segments| Op::Send { segments }),
        8 => (
            dt_ns(),
            0u64..=8,
            0u64..=4,
            0u64..=2000,
            proptest::option::of(rtt_ns()),
            any::<bool>(),
            proptest::option::weighted(0.2, (0u64..1 << 34, 0u64..1 << 34)),
            0u64..=3,
        )
            .prop_map(
                |(dt_ns, segments, sacked_segments, partial_bytes, rtt_ns, in_recovery, g, l)| {
                    Op::Ack {
                        dt_ns,
                        segments,
                        sacked_segments,
                        partial_bytes,
                        rtt_ns,
                        in_recovery,
                        garbage_in_flight: g,
                        lost_segments: l,
                    }
                }
            ),
        2 => (dt_ns(), rtt_ns(), any::<bool>(), any::<bool>()).prop_map(
            |(dt_ns, rtt_ns, duplicate, ambiguous)| Op::Echo {
                dt_ns,
                rtt_ns,
                duplicate,
                ambiguous,
            }
        ),
        2 => (
            dt_ns(),
            any::<bool>(),
            prop::bool::weighted(0.1),
            proptest::option::weighted(0.3, 0u64..1 << 40),
        )
            .prop_map(|(dt_ns, sack, tahoe, flight_bytes)| Op::Loss {
                dt_ns,
                sack,
                tahoe,
                flight_bytes,
            }),
        1 => (
            dt_ns(),
            any::<bool>(),
            proptest::option::weighted(0.3, 0u64..1 << 40)
        )
            .prop_map(|(dt_ns, repeated, flight_bytes)| Op::Timeout {
                dt_ns,
                repeated,
                flight_bytes,
            }),
        1 => Just(Op::Spurious),
    ]
}

/// The sender's side of the bookkeeping, just enough to hand controllers consistent batches.
struct Model {
    now: SimTime,
    smss: u64,
    snd_una: u64,
    snd_max: u64,
    rtt: RttEstimator,
}

impl Model {
    fn advance(&mut self, dt_ns: u64) {
        // Stay far from u64 overflow of SimTime (584 years).
        let ns = self.now.as_nanos().saturating_add(dt_ns).min(u64::MAX / 2);
        self.now = SimTime::from_nanos(ns);
    }
    fn flight(&self) -> u64 {
        self.snd_max - self.snd_una
    }
}

#[track_caller]
fn check(cc: &dyn CongestionController, smss: u64, what: &str) {
    let w = cc.window();
    assert!(w > 0, "{}: window 0 after {what}", cc.name());
    assert!(w <= CAP_BYTES, "{}: window {w} after {what}", cc.name());
    let m = cc.metrics();
    assert!(
        m.cwnd_bytes > 0 && m.cwnd_bytes <= CAP_BYTES,
        "{}: metrics cwnd {} after {what}",
        cc.name(),
        m.cwnd_bytes
    );
    assert!(
        m.ssthresh_bytes >= 2 * smss,
        "{}: ssthresh {} < 2 segments of {smss} after {what}",
        cc.name(),
        m.ssthresh_bytes
    );
}

fn run(name: &str, smss: u64, iw_segments: u64, ops: &[Op]) {
    let cfg: CcConfig = name.parse().unwrap();
    let mut cc = cfg.build(&ControllerInit {
        smss_bytes: smss,
        initial_window_bytes: iw_segments * smss,
    });
    check(cc.as_ref(), smss, "construction");
    let mut m = Model {
        now: SimTime::ZERO,
        smss,
        snd_una: 0,
        snd_max: 0,
        rtt: RttEstimator::new(RttConfig::default()),
    };
    let mut acked = Vec::new();
    let mut lost = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let what = format!("op {i} {op:?}");
        match *op {
            Op::Send { segments } => {
                for _ in 0..segments {
                    let sent = SentPacket {
                        seq: m.snd_max,
                        bytes: m.smss,
                        retransmission: false,
                    };
                    m.snd_max += m.smss;
                    cc.on_packet_sent(m.now, &sent, m.flight());
                }
            }
            Op::Ack {
                dt_ns,
                segments,
                sacked_segments,
                partial_bytes,
                rtt_ns,
                in_recovery,
                garbage_in_flight,
                lost_segments,
            } => {
                m.advance(dt_ns);
                let prior = m.flight();
                acked.clear();
                lost.clear();
                let mut newly = 0;
                for _ in 0..segments {
                    if m.snd_una + m.smss > m.snd_max {
                        break;
                    }
                    m.snd_una += m.smss;
                    newly += m.smss;
                    acked.push(Acked {
                        end_seq: m.snd_una,
                        bytes: m.smss,
                        sent_time: SimTime::ZERO,
                        retransmitted: false,
                        was_sacked: false,
                    });
                }
                if partial_bytes > 0 && m.snd_una + partial_bytes <= m.snd_max {
                    m.snd_una += partial_bytes;
                    newly += partial_bytes;
                    acked.push(Acked {
                        end_seq: m.snd_una,
                        bytes: partial_bytes,
                        sent_time: SimTime::ZERO,
                        retransmitted: true,
                        was_sacked: true,
                    });
                }
                for k in 0..lost_segments {
                    lost.push(Lost {
                        seq: m.snd_una + k * m.smss,
                        bytes: m.smss,
                        sent_time: SimTime::ZERO,
                    });
                }
                let sample = rtt_ns.map(SimDuration::from_nanos);
                if let Some(r) = sample {
                    m.rtt.on_sample(r);
                }
                let (prior_in_flight, in_flight) = garbage_in_flight.unwrap_or((prior, m.flight()));
                let batch = AckBatch {
                    acked: &acked,
                    lost: &lost,
                    newly_acked_bytes: newly,
                    newly_sacked_bytes: sacked_segments * m.smss,
                    prior_in_flight_bytes: prior_in_flight,
                    in_flight_bytes: in_flight,
                    in_recovery,
                    rtt_sample: sample,
                    smss_bytes: m.smss,
                };
                cc.on_ack_batch(m.now, &batch, &m.rtt);
            }
            Op::Echo {
                dt_ns,
                rtt_ns,
                duplicate,
                ambiguous,
            } => {
                m.advance(dt_ns);
                cc.on_ack_echo(
                    m.now,
                    &AckEcho {
                        rtt: SimDuration::from_nanos(rtt_ns),
                        duplicate,
                        ambiguous,
                    },
                );
            }
            Op::Loss {
                dt_ns,
                sack,
                tahoe,
                flight_bytes,
            } => {
                m.advance(dt_ns);
                let r = cc.on_congestion_event(
                    m.now,
                    &CongestionEvent {
                        detection: if sack {
                            Detection::Sack
                        } else {
                            Detection::DupAcks
                        },
                        flight_size_bytes: flight_bytes.unwrap_or(m.flight()),
                        lost_bytes: m.smss,
                        smss_bytes: m.smss,
                        restart_slow_start: tahoe,
                        repeated_timeout: false,
                        during_fast_recovery: false,
                    },
                );
                assert!(
                    r.cwnd_bytes > 0 && r.cwnd_bytes <= CAP_BYTES,
                    "{what}: {r:?}"
                );
                assert!(r.ssthresh_bytes >= 2 * smss, "{what}: {r:?}");
            }
            Op::Timeout {
                dt_ns,
                repeated,
                flight_bytes,
            } => {
                m.advance(dt_ns);
                let flight = flight_bytes.unwrap_or(m.flight());
                let r = cc.on_congestion_event(
                    m.now,
                    &CongestionEvent {
                        detection: Detection::RetransmissionTimeout,
                        flight_size_bytes: flight,
                        lost_bytes: flight,
                        smss_bytes: m.smss,
                        restart_slow_start: true,
                        repeated_timeout: repeated,
                        during_fast_recovery: false,
                    },
                );
                m.rtt.back_off();
                assert!(
                    r.cwnd_bytes > 0 && r.cwnd_bytes <= CAP_BYTES,
                    "{what}: {r:?}"
                );
                assert!(r.ssthresh_bytes >= 2 * smss, "{what}: {r:?}");
            }
            Op::Spurious => cc.on_spurious_congestion(m.now),
        }
        check(cc.as_ref(), smss, &what);
    }
}

fn smss() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(1u64),
        2u64..=100,
        Just(536),
        Just(960),
        Just(1460),
        Just(8960)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    #[test]
    fn every_controller_keeps_a_sane_window(
        smss in smss(),
        iw_segments in 1u64..=100,
        ops in prop::collection::vec(op(), 1..160),
    ) {
        for name in CcConfig::NAMES {
            run(name, smss, iw_segments, &ops);
        }
    }

    /// Long steady runs: many ACKs at one RTT, with a loss now and then, reach the large
    /// windows where overflow and cap bugs live.
    #[test]
    fn long_runs_at_any_rtt_stay_bounded(
        smss in smss(),
        rtt_ns in rtt_ns(),
        rounds in 1usize..40,
        loss_every in 2usize..20,
    ) {
        let mut ops = Vec::new();
        for r in 0..rounds {
            ops.push(Op::Send { segments: 64 });
            for _ in 0..32 {
                ops.push(Op::Ack {
                    dt_ns: rtt_ns / 32,
                    segments: 2,
                    sacked_segments: 0,
                    partial_bytes: 0,
                    rtt_ns: Some(rtt_ns),
                    in_recovery: false,
                    garbage_in_flight: None,
                    lost_segments: 0,
                });
            }
            if r % loss_every == loss_every - 1 {
                ops.push(Op::Loss { dt_ns: 0, sack: false, tahoe: false, flight_bytes: None });
            }
        }
        for name in CcConfig::NAMES {
            run(name, smss, 10, &ops);
        }
    }
}

#[test]
fn every_registered_controller_is_exercised() {
    // The property tests above iterate over the registry; make sure it holds what this issue
    // added, so that a silently emptied registry cannot make them vacuous.
    for name in ["reno", "vegas", "hybla", "westwood", "cubic", "bic"] {
        assert!(CcConfig::NAMES.contains(&name), "{name} not registered");
    }
}
