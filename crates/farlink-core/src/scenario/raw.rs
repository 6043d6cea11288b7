//! The scenario document as serde reads it: every field optional where the schema allows,
//! quantities still in the spelling the user chose (`UnitText` for `"80ms"`, `Bare` for
//! `delay_s`). The phases beside this module validate these into the typed specs.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

use crate::units::{self, UnitError};

/// A value written as a string with a unit, parsed by `crate::units` into its base unit.
pub(super) struct UnitText<K>(pub(super) f64, PhantomData<K>);

impl<K> Clone for UnitText<K> {
    fn clone(&self) -> Self {
        UnitText(self.0, PhantomData)
    }
}

pub(super) trait UnitKind {
    const EXPECTING: &'static str;
    fn parse(text: &str) -> Result<f64, UnitError>;
}

pub(super) struct BitRate;
pub(super) struct Duration;
pub(super) struct Size;
pub(super) struct EventRate;

impl UnitKind for BitRate {
    const EXPECTING: &'static str = "a bit rate as a string with its unit, such as \"1.5Mbps\" \
        (a bare number of bit/s goes in the field whose name ends in _bps)";
    fn parse(text: &str) -> Result<f64, UnitError> {
        units::parse_bitrate_bps(text)
    }
}

impl UnitKind for Duration {
    const EXPECTING: &'static str = "a duration as a string with its unit, such as \"80ms\" \
        (a bare number of seconds goes in the field whose name ends in _s)";
    fn parse(text: &str) -> Result<f64, UnitError> {
        units::parse_duration_s(text, true)
    }
}

impl UnitKind for Size {
    const EXPECTING: &'static str = "a size as a string with its unit, such as \"64KiB\" \
        (a bare number of bytes goes in the field whose name ends in _bytes)";
    fn parse(text: &str) -> Result<f64, UnitError> {
        units::parse_size_bytes(text, true)
    }
}

impl UnitKind for EventRate {
    const EXPECTING: &'static str = "an event rate as a string such as \"1/50min\" (a bare \
        number of events per second goes in the field whose name ends in _per_s)";
    fn parse(text: &str) -> Result<f64, UnitError> {
        units::parse_event_rate_per_s(text, true)
    }
}

impl<'de, K: UnitKind> Deserialize<'de> for UnitText<K> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<K>(PhantomData<K>);
        impl<K: UnitKind> Visitor<'_> for V<K> {
            type Value = UnitText<K>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(K::EXPECTING)
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                K::parse(s)
                    .map(|v| UnitText(v, PhantomData))
                    .map_err(|e| E::custom(e.message))
            }
        }
        d.deserialize_str(V(PhantomData))
    }
}

/// A probability: a number, or a string as on the command line (`"0.1%"`, `"5e-4"`).
#[derive(Clone, Copy)]
pub(super) struct Prob(pub(super) f64);

impl<'de> Deserialize<'de> for Prob {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Prob;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a probability: a number such as 0.001, or a string such as \"0.1%\"")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Prob, E> {
                Ok(Prob(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Prob, E> {
                Ok(Prob(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Prob, E> {
                Ok(Prob(v as f64))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Prob, E> {
                units::parse_probability(s)
                    .map(Prob)
                    .map_err(|e| E::custom(e.message))
            }
        }
        d.deserialize_any(V)
    }
}

/// A bare number whose unit is in its field's name (`delay_s`, `rate_bps`).
#[derive(Clone)]
pub(super) struct Bare(pub(super) f64);

impl<'de> Deserialize<'de> for Bare {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Bare;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a number in the unit the field's name ends with (write a string with a \
                     unit under the name without the suffix)",
                )
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Bare, E> {
                Ok(Bare(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Bare, E> {
                Ok(Bare(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Bare, E> {
                Ok(Bare(v as f64))
            }
        }
        d.deserialize_f64(V)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScenario {
    pub(super) schema: Option<u32>,
    pub(super) name: Option<String>,
    #[allow(dead_code)]
    pub(super) description: Option<String>,
    pub(super) seed: Option<u64>,
    pub(super) duration: Option<UnitText<Duration>>,
    pub(super) duration_s: Option<Bare>,
    pub(super) nodes: Vec<String>,
    pub(super) links: Vec<RawLink>,
    #[serde(default)]
    pub(super) flows: Vec<RawFlow>,
    pub(super) lossy_link: Option<RawLossyLink>,
    pub(super) trace: Option<RawTrace>,
    #[serde(default)]
    pub(super) pcap: Vec<serde_json::Value>,
    #[allow(dead_code)]
    pub(super) extra: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLink {
    pub(super) name: Option<String>,
    pub(super) a: String,
    pub(super) b: String,
    pub(super) rate: Option<UnitText<BitRate>>,
    pub(super) rate_bps: Option<Bare>,
    pub(super) delay: Option<UnitText<Duration>>,
    pub(super) delay_s: Option<Bare>,
    pub(super) queue: Option<UnitText<Size>>,
    pub(super) queue_bytes: Option<u64>,
    pub(super) queue_pkts: Option<u32>,
    pub(super) burst: Option<UnitText<Size>>,
    pub(super) burst_bytes: Option<u64>,
    pub(super) peak_rate: Option<UnitText<BitRate>>,
    pub(super) peak_rate_bps: Option<Bare>,
    pub(super) fwd: Option<RawDir>,
    pub(super) rev: Option<RawDir>,
    pub(super) queue_discipline: Option<String>,
    pub(super) aqm: Option<RawAqm>,
    pub(super) schedule: Option<super::schedule::RawSchedule>,
    pub(super) bundle: Option<RawBundle>,
    pub(super) rlp: Option<RawRlp>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRlp {
    pub(super) idle_frames: Option<RawIdle>,
    pub(super) nak_rounds: Option<u32>,
    pub(super) nak_timer: Option<UnitText<Duration>>,
    pub(super) nak_timer_s: Option<Bare>,
    pub(super) frame: Option<UnitText<Size>>,
    pub(super) frame_bytes: Option<u64>,
    pub(super) payload: Option<UnitText<Size>>,
    pub(super) payload_bytes: Option<u64>,
    pub(super) pe: Option<Prob>,
    pub(super) fd_t: Option<f64>,
}

/// A field written as a number or as one of a few names: what the names are is the field's
/// `CountOrNameKind`, which also words the message for a value of neither kind.
pub(super) enum CountOrName<K> {
    Count(u64, PhantomData<K>),
    Name(String, PhantomData<K>),
}

pub(super) trait CountOrNameKind {
    /// What the field takes, e.g. `"none", "unlimited" or a number of idle frames`.
    const EXPECTING: &'static str;
}

/// RLP's idle frames: `"none"`, `"unlimited"` or a number of idle frames.
pub(super) struct IdleFrames;
impl CountOrNameKind for IdleFrames {
    const EXPECTING: &'static str = "\"none\", \"unlimited\" or a number of idle frames";
}

/// The receiver's out-of-order ranges: a number, or `"window"`.
pub(super) struct OooRanges;
impl CountOrNameKind for OooRanges {
    const EXPECTING: &'static str = "a number of out-of-order ranges or \"window\"";
}

pub(super) type RawIdle = CountOrName<IdleFrames>;

impl<K> Clone for CountOrName<K> {
    fn clone(&self) -> Self {
        match self {
            CountOrName::Count(n, _) => CountOrName::Count(*n, PhantomData),
            CountOrName::Name(n, _) => CountOrName::Name(n.clone(), PhantomData),
        }
    }
}

impl<'de, K: CountOrNameKind> Deserialize<'de> for CountOrName<K> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<K>(PhantomData<K>);
        impl<'de, K: CountOrNameKind> Visitor<'de> for V<K> {
            type Value = CountOrName<K>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(K::EXPECTING)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<CountOrName<K>, E> {
                Ok(CountOrName::Count(v, PhantomData))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<CountOrName<K>, E> {
                u64::try_from(v)
                    .map(|v| CountOrName::Count(v, PhantomData))
                    .map_err(|_| E::custom(format!("expected {}, got {v}", K::EXPECTING)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<CountOrName<K>, E> {
                Ok(CountOrName::Name(v.to_owned(), PhantomData))
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBundle {
    pub(super) members: RawMembers,
    pub(super) rate: Option<UnitText<BitRate>>,
    pub(super) rate_bps: Option<Bare>,
    pub(super) delay: Option<UnitText<Duration>>,
    pub(super) delay_s: Option<Bare>,
    pub(super) txqueue_pkts: Option<u32>,
    pub(super) call_drop_rate: Option<UnitText<EventRate>>,
    pub(super) call_drop_rate_per_s: Option<Bare>,
    pub(super) detection_delay: Option<UnitText<Duration>>,
    pub(super) detection_delay_s: Option<Bare>,
    pub(super) dial_time: Option<UnitText<Duration>>,
    pub(super) dial_time_s: Option<Bare>,
    pub(super) dial_failure_prob: Option<Prob>,
    pub(super) t_d: Option<UnitText<Duration>>,
    pub(super) t_d_s: Option<Bare>,
    pub(super) t_f: Option<UnitText<Duration>>,
    pub(super) t_f_s: Option<Bare>,
    pub(super) max_attempts: Option<u32>,
    pub(super) blocked_for: Option<UnitText<Duration>>,
    pub(super) blocked_for_s: Option<Bare>,
    pub(super) primary: Option<bool>,
    pub(super) start: Option<String>,
    pub(super) fragment: Option<bool>,
    pub(super) mp_header: Option<UnitText<Size>>,
    pub(super) mp_header_bytes: Option<u32>,
    pub(super) reassembly_timeout: Option<UnitText<Duration>>,
    pub(super) reassembly_timeout_s: Option<Bare>,
    pub(super) arq: Option<RawArq>,
}

/// `8` or `[MEMBER, ...]`.
pub(super) enum RawMembers {
    Count(u64),
    List(Vec<RawMember>),
}

impl<'de> Deserialize<'de> for RawMembers {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawMembers;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number of members, or a list of member tables")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawMembers, E> {
                Ok(RawMembers::Count(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawMembers, E> {
                u64::try_from(v)
                    .map(RawMembers::Count)
                    .map_err(|_| E::custom(format!("expected a number of members, got {v}")))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<RawMembers, A::Error> {
                Vec::<RawMember>::deserialize(de::value::SeqAccessDeserializer::new(seq))
                    .map(RawMembers::List)
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMember {
    pub(super) name: Option<String>,
    pub(super) rate: Option<UnitText<BitRate>>,
    pub(super) rate_bps: Option<Bare>,
    pub(super) delay: Option<UnitText<Duration>>,
    pub(super) delay_s: Option<Bare>,
    pub(super) txqueue_pkts: Option<u32>,
    pub(super) call_drop_rate: Option<UnitText<EventRate>>,
    pub(super) call_drop_rate_per_s: Option<Bare>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawArq {
    pub(super) mode: String,
    pub(super) frame: Option<UnitText<Size>>,
    pub(super) frame_bytes: Option<u32>,
    pub(super) max_tries: Option<u32>,
    pub(super) window_frames: Option<u32>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDir {
    pub(super) rate: Option<UnitText<BitRate>>,
    pub(super) rate_bps: Option<Bare>,
    pub(super) delay: Option<UnitText<Duration>>,
    pub(super) delay_s: Option<Bare>,
    pub(super) queue: Option<UnitText<Size>>,
    pub(super) queue_bytes: Option<u64>,
    pub(super) queue_pkts: Option<u32>,
    pub(super) burst: Option<UnitText<Size>>,
    pub(super) burst_bytes: Option<u64>,
    pub(super) peak_rate: Option<UnitText<BitRate>>,
    pub(super) peak_rate_bps: Option<Bare>,
    pub(super) loss: Option<RawLoss>,
    pub(super) queue_discipline: Option<String>,
    pub(super) aqm: Option<RawAqm>,
    pub(super) schedule: Option<super::schedule::RawSchedule>,
    pub(super) rate_trace: Option<super::schedule::RawRateTrace>,
}

/// A queue discipline's parameters (`scenario/aqm.rs` says which each takes).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAqm {
    pub(super) target: Option<UnitText<Duration>>,
    pub(super) target_s: Option<Bare>,
    pub(super) interval: Option<UnitText<Duration>>,
    pub(super) interval_s: Option<Bare>,
    pub(super) ecn: Option<bool>,
    pub(super) flows: Option<u32>,
    pub(super) quantum: Option<UnitText<Size>>,
    pub(super) quantum_bytes: Option<u64>,
    pub(super) tupdate: Option<UnitText<Duration>>,
    pub(super) tupdate_s: Option<Bare>,
    pub(super) alpha: Option<f64>,
    pub(super) beta: Option<f64>,
    pub(super) max_burst: Option<UnitText<Duration>>,
    pub(super) max_burst_s: Option<Bare>,
    pub(super) mark_ecn_threshold: Option<f64>,
    pub(super) min_th_pkts: Option<f64>,
    pub(super) max_th_pkts: Option<f64>,
    pub(super) max_p: Option<f64>,
    pub(super) weight: Option<f64>,
    pub(super) gentle: Option<bool>,
    pub(super) adaptive: Option<bool>,
    pub(super) mean_packet_bytes: Option<u32>,
    pub(super) coupling: Option<f64>,
    pub(super) step_thresh: Option<UnitText<Duration>>,
    pub(super) step_thresh_s: Option<Bare>,
    pub(super) step_min_bytes: Option<u64>,
    pub(super) tshift: Option<UnitText<Duration>>,
    pub(super) tshift_s: Option<Bare>,
}

impl RawAqm {
    /// Each parameter's name (either spelling's) and whether it was given.
    pub(super) fn given(&self) -> Vec<(&'static str, bool)> {
        vec![
            ("target", self.target.is_some() || self.target_s.is_some()),
            (
                "interval",
                self.interval.is_some() || self.interval_s.is_some(),
            ),
            ("ecn", self.ecn.is_some()),
            ("flows", self.flows.is_some()),
            ("quantum", self.quantum.is_some()),
            ("quantum_bytes", self.quantum_bytes.is_some()),
            (
                "tupdate",
                self.tupdate.is_some() || self.tupdate_s.is_some(),
            ),
            ("alpha", self.alpha.is_some()),
            ("beta", self.beta.is_some()),
            (
                "max_burst",
                self.max_burst.is_some() || self.max_burst_s.is_some(),
            ),
            ("mark_ecn_threshold", self.mark_ecn_threshold.is_some()),
            ("min_th_pkts", self.min_th_pkts.is_some()),
            ("max_th_pkts", self.max_th_pkts.is_some()),
            ("max_p", self.max_p.is_some()),
            ("weight", self.weight.is_some()),
            ("gentle", self.gentle.is_some()),
            ("adaptive", self.adaptive.is_some()),
            ("mean_packet_bytes", self.mean_packet_bytes.is_some()),
            ("coupling", self.coupling.is_some()),
            (
                "step_thresh",
                self.step_thresh.is_some() || self.step_thresh_s.is_some(),
            ),
            ("step_min_bytes", self.step_min_bytes.is_some()),
            ("tshift", self.tshift.is_some() || self.tshift_s.is_some()),
        ]
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLoss {
    pub(super) model: String,
    pub(super) p: Option<Prob>,
    pub(super) mean_burst: Option<UnitText<Duration>>,
    pub(super) mean_burst_s: Option<Bare>,
    pub(super) mean_burst_pkts: Option<f64>,
    pub(super) rate: Option<Prob>,
    pub(super) pe: Option<Prob>,
    pub(super) fd_t: Option<f64>,
    pub(super) frame: Option<UnitText<Duration>>,
    pub(super) frame_s: Option<Bare>,
    pub(super) seed: Option<u32>,
    pub(super) packets: Option<Vec<u64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFlow {
    pub(super) name: Option<String>,
    pub(super) from: String,
    pub(super) to: String,
    pub(super) start: Option<UnitText<Duration>>,
    pub(super) start_s: Option<Bare>,
    pub(super) stop: Option<UnitText<Duration>>,
    pub(super) stop_s: Option<Bare>,
    pub(super) tcp: Option<RawTcp>,
    pub(super) app: RawApp,
    pub(super) relays: Option<Vec<String>>,
    pub(super) relay_buffer: Option<UnitText<Size>>,
    pub(super) relay_buffer_bytes: Option<u64>,
    pub(super) segments: Option<Vec<RawSegment>>,
    pub(super) transport: Option<String>,
    pub(super) mptcp: Option<RawMptcp>,
}

/// `[flows.mptcp]` (`scenario/mptcp.rs`).
#[derive(Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMptcp {
    pub(super) scheduler: Option<String>,
    pub(super) coupling: Option<String>,
    pub(super) retransmit_timer: Option<bool>,
    pub(super) keep_first_subflow: Option<bool>,
    pub(super) close_resends: Option<String>,
    pub(super) stale_loss_count: Option<u8>,
}

/// One connection of a split flow (`scenario/split.rs`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSegment {
    pub(super) tcp: Option<RawTcp>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTcp {
    pub(super) profile: Option<String>,
    pub(super) mss: Option<UnitText<Size>>,
    pub(super) mss_bytes: Option<u32>,
    pub(super) initial_window_segments: Option<u32>,
    pub(super) receive_buffer: Option<UnitText<Size>>,
    pub(super) receive_buffer_bytes: Option<u64>,
    pub(super) send_buffer: Option<UnitText<Size>>,
    pub(super) send_buffer_bytes: Option<u64>,
    pub(super) window_scaling: Option<bool>,
    pub(super) sack: Option<bool>,
    pub(super) timestamps: Option<bool>,
    pub(super) delayed_ack: Option<bool>,
    pub(super) delayed_ack_timeout: Option<UnitText<Duration>>,
    pub(super) delayed_ack_timeout_s: Option<Bare>,
    pub(super) quick_ack: Option<bool>,
    pub(super) initial_rto: Option<UnitText<Duration>>,
    pub(super) initial_rto_s: Option<Bare>,
    pub(super) min_rto: Option<UnitText<Duration>>,
    pub(super) min_rto_s: Option<Bare>,
    pub(super) max_rto: Option<UnitText<Duration>>,
    pub(super) max_rto_s: Option<Bare>,
    pub(super) rto: Option<String>,
    pub(super) recovery: Option<String>,
    pub(super) cwnd_reduction: Option<String>,
    pub(super) cc: Option<String>,
    pub(super) growth: Option<String>,
    /// CUBIC's and BIC's fast convergence (checked in `scenario/tcp.rs`).
    pub(super) fast_convergence: Option<bool>,
    pub(super) dup_thresh: Option<u32>,
    pub(super) limited_transmit: Option<bool>,
    pub(super) handshake: Option<bool>,
    pub(super) max_ooo_ranges: Option<CountOrName<OooRanges>>,
    /// `true`, `false` or `"accurate"` (checked in `scenario/tcp.rs`).
    pub(super) ecn: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawApp {
    pub(super) kind: String,
    pub(super) size: Option<RawAppSize>,
    pub(super) size_bytes: Option<u64>,
    pub(super) mean_interval: Option<UnitText<Duration>>,
    pub(super) mean_interval_s: Option<Bare>,
    pub(super) message: Option<UnitText<Size>>,
    pub(super) message_bytes: Option<u32>,
    /// The competing-traffic kinds' fields (`scenario/traffic.rs`): a bit rate for UDP, an
    /// arrival rate for `flows_poisson`, so read by the kind.
    pub(super) rate: Option<serde_json::Value>,
    pub(super) rate_bps: Option<Bare>,
    pub(super) rate_per_s: Option<Bare>,
    pub(super) packet_bytes: Option<u32>,
    pub(super) on: Option<UnitText<Duration>>,
    pub(super) on_s: Option<Bare>,
    pub(super) off: Option<UnitText<Duration>>,
    pub(super) off_s: Option<Bare>,
    pub(super) distribution: Option<String>,
    pub(super) shape: Option<Bare>,
    pub(super) load: Option<Bare>,
    pub(super) request: Option<RawAppSize>,
    pub(super) response: Option<RawAppSize>,
    pub(super) think: Option<UnitText<Duration>>,
    pub(super) think_s: Option<Bare>,
    /// A bulk application's `"written"` or `"acknowledged"` (`scenario/shutdown.rs`).
    pub(super) shutdown: Option<String>,
}

/// A bulk transfer's `size = "1MB"`, or a short-flow class's size distribution
/// (`size = { distribution = "exponential", mean = "50kB" }`).
pub(super) enum RawAppSize {
    Fixed(UnitText<Size>),
    Drawn(RawSizeDist),
}

impl<'de> Deserialize<'de> for RawAppSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawAppSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a size as a string with its unit, such as \"64KiB\", or a size \
                     distribution table such as { distribution = \"exponential\", mean = \"50kB\" }",
                )
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<RawAppSize, E> {
                Size::parse(s)
                    .map(|v| RawAppSize::Fixed(UnitText(v, PhantomData)))
                    .map_err(|e| E::custom(e.message))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawAppSize, A::Error> {
                RawSizeDist::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(RawAppSize::Drawn)
            }
        }
        d.deserialize_any(V)
    }
}

/// A size distribution as written (`scenario/traffic.rs` checks it).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSizeDist {
    pub(super) distribution: Option<String>,
    pub(super) mean: Option<UnitText<Size>>,
    pub(super) mean_bytes: Option<Bare>,
    pub(super) shape: Option<Bare>,
    pub(super) sigma: Option<Bare>,
    /// `[[size_bytes, cumulative_probability], ...]`; the front end reads a `cdf = "FILE"`
    /// into this list.
    pub(super) cdf: Option<serde_json::Value>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTrace {
    pub(super) all: Option<bool>,
    pub(super) cwnd: Option<bool>,
    pub(super) seq: Option<bool>,
    pub(super) ack: Option<bool>,
    pub(super) rtt: Option<bool>,
    pub(super) rto: Option<bool>,
    pub(super) queue: Option<bool>,
    pub(super) drops: Option<bool>,
    pub(super) goodput: Option<bool>,
    pub(super) member_state: Option<bool>,
    pub(super) capacity: Option<bool>,
    pub(super) queue_delay: Option<bool>,
    pub(super) aqm: Option<bool>,
    pub(super) goodput_interval: Option<UnitText<Duration>>,
    pub(super) goodput_interval_s: Option<Bare>,
}

/// `"R-D"` or `{"link": "R-D", "direction": "fwd"}`.
pub(super) struct RawLossyLink {
    pub(super) link: String,
    pub(super) direction: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLossyLinkObject {
    pub(super) link: String,
    pub(super) direction: Option<String>,
}

impl<'de> Deserialize<'de> for RawLossyLink {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawLossyLink;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a link name, or an object {\"link\": NAME, \"direction\": \"fwd\" | \"rev\"}",
                )
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<RawLossyLink, E> {
                Ok(RawLossyLink {
                    link: s.to_owned(),
                    direction: None,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawLossyLink, A::Error> {
                let o =
                    RawLossyLinkObject::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(RawLossyLink {
                    link: o.link,
                    direction: o.direction,
                })
            }
        }
        d.deserialize_any(V)
    }
}
