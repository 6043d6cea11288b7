//! Loss models of link directions, attached to the links once the flows are known: a model
//! given in packets (`mean_burst_pkts`) needs the packet interval of its direction.

use super::errors::{at, err, only_its_params, variant, ScenarioError, Variant};
use super::flows::FlowSpec;
use super::links::{DirectionSpec, LinkSpec, PendingLink};
use super::quantity::opt_duration;
use super::raw::RawLoss;
use super::routes::Hop;
use crate::error::ConfigError;
use crate::loss::{
    AnyLoss, Bernoulli, DropList, GilbertElliott, GilbertElliottConfig, GilbertPackets,
    Lcg16807Loss, LossModel, MarkovFading, MarkovFadingConfig, NoLoss, IS707_FRAME,
};
use crate::rng::StreamRng;
use crate::time::{BitRate, SimDuration};

/// The packet size used for `mean_burst_pkts` on a direction no flow's data crosses.
pub const DEFAULT_NOMINAL_PACKET_BYTES: u32 = 1500;

/// A loss model and its parameters, resolved and checked.
#[derive(Clone, Debug, PartialEq)]
pub enum LossSpec {
    None,
    Bernoulli {
        p: f64,
    },
    GilbertElliott(GilbertElliottConfig),
    /// Stepped per packet: overall rate and mean burst in packets.
    GilbertPackets {
        rate: f64,
        mean_burst_pkts: f64,
    },
    MarkovFading(MarkovFadingConfig),
    Lcg16807 {
        rate: f64,
        seed: u32,
    },
    /// Arrival numbers (from 1, strictly increasing) of the packets to lose.
    DropList {
        packets: Vec<u64>,
    },
}

impl LossSpec {
    /// The model's name as the scenario spells it.
    pub fn model_name(&self) -> &'static str {
        match self {
            LossSpec::None => "none",
            LossSpec::Bernoulli { .. } => "bernoulli",
            LossSpec::GilbertElliott(_) => "gilbert_elliott",
            LossSpec::GilbertPackets { .. } => "gilbert_packets",
            LossSpec::MarkovFading(_) => "markov_fading",
            LossSpec::Lcg16807 { .. } => "lcg16807",
            LossSpec::DropList { .. } => "drop_list",
        }
    }

    /// Builds the model, drawing from `rng` (unused by `none`, `lcg16807` and `drop_list`).
    pub fn build(&self, rng: StreamRng) -> Result<AnyLoss, ConfigError> {
        Ok(match self {
            LossSpec::None => NoLoss.into(),
            LossSpec::Bernoulli { p } => Bernoulli::new(*p, rng)?.into(),
            LossSpec::GilbertElliott(cfg) => GilbertElliott::new(*cfg, rng)?.into(),
            LossSpec::GilbertPackets {
                rate,
                mean_burst_pkts,
            } => GilbertPackets::new(*rate, *mean_burst_pkts, rng)?.into(),
            LossSpec::MarkovFading(cfg) => MarkovFading::new(*cfg, rng)?.into(),
            LossSpec::Lcg16807 { rate, seed } => {
                Lcg16807Loss::from_error_rate(*rate, *seed)?.into()
            }
            LossSpec::DropList { packets } => DropList::new(packets.clone())?.into(),
        })
    }

    /// The model's long-run loss rate.
    pub fn analytic_loss_rate(&self) -> f64 {
        self.build(StreamRng::derive(0, "analytic"))
            .map(|m| m.analytic_loss_rate())
            .unwrap_or(f64::NAN)
    }
}

/// The parameters each loss model takes.
const LOSS_MODELS: &[Variant] = &[
    ("none", &[]),
    ("bernoulli", &["p"]),
    (
        "gilbert_elliott",
        &["mean_burst", "mean_burst_s", "mean_burst_pkts", "rate"],
    ),
    ("gilbert_packets", &["mean_burst_pkts", "rate"]),
    ("markov_fading", &["pe", "fd_t", "frame", "frame_s"]),
    ("lcg16807", &["rate", "seed"]),
    ("drop_list", &["packets"]),
];

pub(super) fn loss_spec(
    p: &str,
    r: &RawLoss,
    packet_interval: SimDuration,
) -> Result<LossSpec, ScenarioError> {
    let (model, allowed) = variant(p, "model", "loss model", &r.model, LOSS_MODELS)?;
    let given = [
        ("p", r.p.is_some()),
        ("mean_burst", r.mean_burst.is_some()),
        ("mean_burst_s", r.mean_burst_s.is_some()),
        ("mean_burst_pkts", r.mean_burst_pkts.is_some()),
        ("rate", r.rate.is_some()),
        ("pe", r.pe.is_some()),
        ("fd_t", r.fd_t.is_some()),
        ("frame", r.frame.is_some()),
        ("frame_s", r.frame_s.is_some()),
        ("seed", r.seed.is_some()),
        ("packets", r.packets.is_some()),
    ];
    only_its_params(p, "loss model", model, allowed, &given)?;
    let need = |param: &str, v: Option<f64>| -> Result<f64, ScenarioError> {
        v.ok_or_else(|| {
            ScenarioError::new(
                at(p, param),
                format!("missing: loss model \"{model}\" needs {param}"),
            )
        })
    };
    // Map a component's parameter name back to the scenario's field.
    let field = |param: &'static str| -> &'static str {
        match param {
            "loss_rate" | "ler" => "rate",
            "frame_error_rate" => "pe",
            "mean_bad_ns" | "mean_good_ns" => "mean_burst",
            other => other,
        }
    };
    let config_err = |e: ConfigError| ScenarioError::new(at(p, field(e.param)), e.message);
    let spec = match model {
        "none" => LossSpec::None,
        "bernoulli" => LossSpec::Bernoulli { p: need("p", r.p.map(|v| v.0))? },
        "gilbert_elliott" => {
            let rate = need("rate", r.rate.map(|v| v.0))?;
            let time = opt_duration(
                p,
                ("mean_burst", &r.mean_burst),
                ("mean_burst_s", &r.mean_burst_s),
                false,
            )?;
            let cfg = match (time, r.mean_burst_pkts) {
                (Some(_), Some(_)) => {
                    return err(
                        at(p, "mean_burst_pkts"),
                        "give the mean burst either as a duration or in packets, not both",
                    )
                }
                (Some(t), None) => GilbertElliottConfig::from_burst_time(t, rate),
                (None, Some(n)) => GilbertElliottConfig::from_burst_packets(n, rate, packet_interval),
                (None, None) => {
                    return err(
                        at(p, "mean_burst"),
                        "missing: loss model \"gilbert_elliott\" needs mean_burst (a duration, or mean_burst_s) or mean_burst_pkts",
                    )
                }
            }
            .map_err(config_err)?;
            LossSpec::GilbertElliott(cfg)
        }
        "gilbert_packets" => LossSpec::GilbertPackets {
            rate: need("rate", r.rate.map(|v| v.0))?,
            mean_burst_pkts: need("mean_burst_pkts", r.mean_burst_pkts)?,
        },
        "markov_fading" => {
            let frame = opt_duration(p, ("frame", &r.frame), ("frame_s", &r.frame_s), false)?
                .unwrap_or(IS707_FRAME);
            LossSpec::MarkovFading(MarkovFadingConfig {
                frame_error_rate: need("pe", r.pe.map(|v| v.0))?,
                fd_t: need("fd_t", r.fd_t)?,
                frame,
            })
        }
        "lcg16807" => LossSpec::Lcg16807 {
            rate: need("rate", r.rate.map(|v| v.0))?,
            seed: r.seed.unwrap_or(Lcg16807Loss::EMULATOR_SEED),
        },
        "drop_list" => LossSpec::DropList {
            packets: r.packets.clone().ok_or_else(|| {
                ScenarioError::new(
                    at(p, "packets"),
                    "missing: loss model \"drop_list\" needs packets (a list of arrival numbers from 1)",
                )
            })?,
        },
        _ => return err(at(p, "model"), "internal: model listed but not built"),
    };
    // Build once with a throwaway stream: the components check their own domains.
    spec.build(StreamRng::derive(0, "scenario/validate"))
        .map_err(config_err)?;
    Ok(spec)
}

/// The links with their loss models, now that the packet sizes on each direction are known;
/// a radio hop's RLP is checked against each direction's rate and delay.
pub(super) fn attach(
    pending: Vec<PendingLink<'_>>,
    flows: &[FlowSpec],
) -> Result<Vec<LinkSpec>, ScenarioError> {
    let mut links = Vec::with_capacity(pending.len());
    for (i, l) in pending.into_iter().enumerate() {
        let mut specs = Vec::with_capacity(2);
        for (d, (parts, raw_loss, loss_path)) in l.dirs.iter().enumerate() {
            let (Some(rate), Some(delay), Some(queue)) = (parts.rate, parts.delay, parts.queue)
            else {
                return err(format!("links[{i}]"), "internal: direction incomplete");
            };
            let interval = unit_interval(&l, i, d == 0, rate, flows);
            let loss = direction_loss(&l, i, *raw_loss, loss_path, interval)?;
            specs.push(DirectionSpec {
                rate,
                delay,
                queue,
                bucket: parts.bucket,
                discipline: parts.discipline,
                loss,
            });
        }
        let rev = specs.pop();
        let fwd = specs.pop();
        let (Some(fwd), Some(rev)) = (fwd, rev) else {
            return err(format!("links[{i}]"), "internal: two directions expected");
        };
        if let Some(r) = &l.rlp {
            for d in [&fwd, &rev] {
                r.config(d).validate().map_err(|e| {
                    let field = match e.param {
                        "rate_bps" => "rate".to_owned(),
                        other => format!("rlp.{other}"),
                    };
                    ScenarioError::new(format!("links[{i}].{field}"), e.message)
                })?;
            }
        }
        links.push(LinkSpec {
            name: l.name,
            a: l.a,
            b: l.b,
            fwd,
            rev,
            bundle: l.bundle,
            rlp: l.rlp,
        });
    }
    Ok(links)
}

/// The time one unit of the loss model takes on direction `forward` of link `i`: the
/// largest full-sized data packet of the flows crossing it (or a nominal 1500 bytes); on a
/// bundle a frame (with ARQ) or a packet with its multilink header on the slowest member; on
/// a radio hop a frame slot.
fn unit_interval(
    l: &PendingLink<'_>,
    i: usize,
    forward: bool,
    rate: BitRate,
    flows: &[FlowSpec],
) -> SimDuration {
    let packet_bytes = flows
        .iter()
        .filter_map(|f| f.full_packet_bytes_on(Hop { link: i, forward }))
        .max()
        .unwrap_or(DEFAULT_NOMINAL_PACKET_BYTES);
    match &l.bundle {
        Some(b) => {
            let unit = b.members[0]
                .arq
                .map_or(packet_bytes + b.mp_header_bytes, |a| a.frame_bytes);
            let slowest = b.members.iter().map(|m| m.rate).min();
            slowest
                .unwrap_or(BitRate::from_bps(1))
                .transmission_time(unit)
        }
        None => match &l.rlp {
            Some(r) => rate.transmission_time(r.frame_bytes),
            None => rate.transmission_time(packet_bytes),
        },
    }
}

/// The loss model of one direction of link `i`: as written at `loss_path`, or the radio
/// hop's channel given once in `rlp` for both directions, or none.
fn direction_loss(
    l: &PendingLink<'_>,
    i: usize,
    raw_loss: Option<&RawLoss>,
    loss_path: &str,
    interval: SimDuration,
) -> Result<LossSpec, ScenarioError> {
    Ok(match (raw_loss, l.rlp.and_then(|r| r.channel)) {
        (Some(_), Some(_)) => {
            return err(
                loss_path,
                format!("links[{i}].rlp gives this channel (pe, fd_t); give it once"),
            )
        }
        (Some(r), None) => loss_spec(loss_path, r, interval)?,
        (None, Some((pe, fd_t))) => {
            let spec = LossSpec::MarkovFading(MarkovFadingConfig {
                frame_error_rate: pe,
                fd_t,
                frame: interval,
            });
            spec.build(StreamRng::derive(0, "scenario/validate"))
                .map_err(|e| {
                    let field = if e.param == "frame_error_rate" {
                        "pe"
                    } else {
                        e.param
                    };
                    ScenarioError::new(format!("links[{i}].rlp.{field}"), e.message)
                })?;
            spec
        }
        (None, None) => LossSpec::None,
    })
}
