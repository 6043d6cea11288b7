//! The competing-traffic application kinds (issue 30): UDP constant bit rate and on-off
//! sources, and classes of short TCP flows arriving as a Poisson process with drawn sizes.
//! Checked here into the specs `crate::apps` runs.

use super::errors::{at, err, ScenarioError};
use super::quantity::{duration_from, one_of, rate_from};
use super::raw::{Bare, RawApp, RawAppSize, RawFlow, RawSizeDist, Size, UnitText};
use super::tcp::TcpSpec;
use crate::time::{BitRate, SimDuration};
use crate::units;

/// IPv4 and UDP headers around a datagram's payload.
pub const UDP_HEADER_BYTES: u32 = 20 + 8;
/// The largest UDP payload accepted: a datagram that fits an IPv4 packet.
pub const MAX_UDP_PAYLOAD_BYTES: u32 = 65_507;

/// A UDP source: datagrams of `packet_bytes` of payload at `rate` (payload bits per second,
/// as iperf3's `-b` and ns-3's `OnOffApplication` count it), always or only while on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UdpSpec {
    pub rate: BitRate,
    pub packet_bytes: u32,
    /// `None`: constant bit rate (`udp_cbr`).
    pub on_off: Option<OnOffSpec>,
}

/// The on and off periods of an on-off source, each drawn with its mean.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OnOffSpec {
    pub on_mean: SimDuration,
    pub off_mean: SimDuration,
    pub distribution: Sojourn,
}

/// How a period's length is drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Sojourn {
    Exponential,
    /// Pareto with this shape (> 1, so that the mean exists) and the scale that gives the mean.
    Pareto {
        shape: f64,
    },
}

/// A class of short TCP flows: connections arriving as a Poisson process, each of a drawn
/// size, each with its own handshake.
#[derive(Clone, Debug, PartialEq)]
pub struct PoissonSpec {
    pub arrivals: Arrivals,
    pub size: SizeDist,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arrivals {
    /// Connections per second.
    PerSecond(f64),
    /// A fraction of the route's bottleneck rate: connections per second = load x bottleneck
    /// bit/s / (8 x mean size in bytes).
    Load(f64),
}

/// A client's requests and a server's responses over two persistent TCP connections (one each
/// way), each request sent a think time after the previous response arrived.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestResponseSpec {
    pub request: SizeDist,
    pub response: SizeDist,
    /// The mean of the exponential think time; zero: the next request at once.
    pub think_mean: SimDuration,
}

/// A distribution of flow sizes, in bytes (a drawn size is rounded, at least 1 byte).
#[derive(Clone, Debug, PartialEq)]
pub enum SizeDist {
    /// Always this size (`size = "50kB"`).
    Fixed {
        bytes: u64,
    },
    Exponential {
        mean_bytes: f64,
    },
    /// Pareto with `shape` (> 1) and the scale giving `mean_bytes`.
    Pareto {
        mean_bytes: f64,
        shape: f64,
    },
    /// Lognormal with `mean_bytes` and the underlying normal's standard deviation `sigma`.
    Lognormal {
        mean_bytes: f64,
        sigma: f64,
    },
    /// An empirical CDF: sizes in bytes, non-decreasing, with their cumulative probabilities,
    /// non-decreasing, the last 1; linear between points (as the data-center studies' CDF
    /// files are used).
    Cdf {
        points: Vec<(f64, f64)>,
    },
}

impl SizeDist {
    /// The distribution's mean, bytes.
    pub fn mean_bytes(&self) -> f64 {
        match self {
            SizeDist::Fixed { bytes } => *bytes as f64,
            SizeDist::Exponential { mean_bytes }
            | SizeDist::Pareto { mean_bytes, .. }
            | SizeDist::Lognormal { mean_bytes, .. } => *mean_bytes,
            SizeDist::Cdf { points } => {
                // Piecewise linear CDF: uniform within each segment; a jump at the first point.
                let (mut mean, mut prev) = (points[0].0 * points[0].1, points[0]);
                for &(x, p) in &points[1..] {
                    mean += (p - prev.1) * (x + prev.0) / 2.0;
                    prev = (x, p);
                }
                mean
            }
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            SizeDist::Fixed { .. } => "fixed",
            SizeDist::Exponential { .. } => "exponential",
            SizeDist::Pareto { .. } => "pareto",
            SizeDist::Lognormal { .. } => "lognormal",
            SizeDist::Cdf { .. } => "cdf",
        }
    }
}

fn positive(path: &str, v: Option<&Bare>, what: &str) -> Result<Option<f64>, ScenarioError> {
    match v {
        Some(b) if !(b.0.is_finite() && b.0 > 0.0) => {
            err(path, format!("expected a positive {what}, got {}", b.0))
        }
        Some(b) => Ok(Some(b.0)),
        None => Ok(None),
    }
}

/// A Pareto shape: above 1, so that the mean the distribution is given by exists.
fn pareto_shape(path: &str, shape: Option<&Bare>) -> Result<f64, ScenarioError> {
    match shape {
        None => err(
            path,
            "missing: a pareto distribution needs shape (above 1, e.g. 1.5)",
        ),
        Some(b) if !(b.0.is_finite() && b.0 > 1.0) => err(
            path,
            format!(
                "expected a shape above 1 (the mean exists only then), got {}",
                b.0
            ),
        ),
        Some(b) => Ok(b.0),
    }
}

/// `udp_cbr` and `udp_onoff`.
pub(super) fn udp_spec(p: &str, a: &RawApp, on_off: bool) -> Result<UdpSpec, ScenarioError> {
    let rate_bps = match (&a.rate, &a.rate_bps) {
        (Some(_), Some(_)) => {
            return err(at(p, "rate_bps"), "give either rate or rate_bps, not both")
        }
        (Some(serde_json::Value::String(text)), None) => units::parse_bitrate_bps(text)
            .map_err(|e| ScenarioError::new(at(p, "rate"), e.message))?,
        (Some(other), None) => {
            return err(
                at(p, "rate"),
                format!(
                    "expected a bit rate as a string with its unit, such as \"5Mbps\" (a bare \
                     number of bit/s goes in rate_bps), got {other}"
                ),
            )
        }
        (None, Some(b)) => b.0,
        (None, None) => {
            return err(
                at(p, "rate"),
                "missing: a UDP application needs rate (\"5Mbps\") or rate_bps",
            )
        }
    };
    let rate = rate_from(&at(p, "rate"), rate_bps)?;
    let Some(packet_bytes) = a.packet_bytes else {
        return err(
            at(p, "packet_bytes"),
            "missing: a UDP application needs packet_bytes (its datagrams' payload)",
        );
    };
    if packet_bytes == 0 || packet_bytes > MAX_UDP_PAYLOAD_BYTES {
        return err(
            at(p, "packet_bytes"),
            format!("expected 1 to {MAX_UDP_PAYLOAD_BYTES} bytes of payload, got {packet_bytes}"),
        );
    }
    let on_off = if on_off {
        let period = |name: &str, plain, bare| -> Result<SimDuration, ScenarioError> {
            one_of(p, (name, plain), (&format!("{name}_s"), bare))?
                .map(|(s, path)| duration_from(&path, s, false))
                .transpose()?
                .ok_or_else(|| {
                    ScenarioError::new(
                        at(p, name),
                        format!("missing: an on-off source needs {name} (its mean duration, \"1s\") or {name}_s"),
                    )
                })
        };
        let on_mean = period("on", &a.on, &a.on_s)?;
        let off_mean = period("off", &a.off, &a.off_s)?;
        let distribution = match a.distribution.as_deref().unwrap_or("exponential") {
            "exponential" => {
                if a.shape.is_some() {
                    return err(at(p, "shape"), "not a parameter of the exponential distribution (only pareto takes a shape)");
                }
                Sojourn::Exponential
            }
            "pareto" => Sojourn::Pareto {
                shape: pareto_shape(&at(p, "shape"), a.shape.as_ref())?,
            },
            other => {
                return err(
                    at(p, "distribution"),
                    format!(
                        "unknown distribution \"{other}\"; expected one of: exponential, pareto"
                    ),
                )
            }
        };
        Some(OnOffSpec {
            on_mean,
            off_mean,
            distribution,
        })
    } else {
        None
    };
    Ok(UdpSpec {
        rate,
        packet_bytes,
        on_off,
    })
}

/// `flows_poisson`.
pub(super) fn poisson_spec(p: &str, a: &RawApp) -> Result<PoissonSpec, ScenarioError> {
    let per_s = match (&a.rate, &a.rate_per_s) {
        (Some(_), Some(_)) => return err(at(p, "rate_per_s"), "give either rate or rate_per_s, not both"),
        (Some(serde_json::Value::String(text)), None) => Some(
            units::parse_event_rate_per_s(text, false)
                .map_err(|e| ScenarioError::new(at(p, "rate"), e.message))?,
        ),
        (Some(serde_json::Value::Number(n)), None) => n.as_f64(),
        (Some(other), None) => {
            return err(
                at(p, "rate"),
                format!("expected connections per second, a number or a string such as \"20/s\", got {other}"),
            )
        }
        (None, Some(b)) => Some(b.0),
        (None, None) => None,
    };
    let arrivals = match (per_s, &a.load) {
        (Some(_), Some(_)) => return err(at(p, "load"), "give either rate or load, not both"),
        (Some(r), None) => {
            if !(r.is_finite() && r > 0.0 && r <= 1e6) {
                return err(at(p, "rate"), format!("expected 0 to 1e6 connections per second (above 0), got {r}"));
            }
            Arrivals::PerSecond(r)
        }
        (None, Some(l)) => {
            if !(l.0.is_finite() && l.0 > 0.0 && l.0 <= 10.0) {
                return err(at(p, "load"), format!("expected a fraction of the bottleneck's rate above 0 (at most 10), got {}", l.0));
            }
            Arrivals::Load(l.0)
        }
        (None, None) => {
            return err(
                at(p, "rate"),
                "missing: flows_poisson needs rate (connections per second) or load (a fraction of the route's bottleneck)",
            )
        }
    };
    let size = drawn_size(p, "size", &a.size)?;
    Ok(PoissonSpec { arrivals, size })
}

/// `request_response`.
pub(super) fn request_response_spec(
    p: &str,
    a: &RawApp,
) -> Result<RequestResponseSpec, ScenarioError> {
    let think_mean = one_of(p, ("think", &a.think), ("think_s", &a.think_s))?
        .map(|(s, path)| duration_from(&path, s, true))
        .transpose()?
        .ok_or_else(|| {
            ScenarioError::new(
                at(p, "think"),
                "missing: request_response needs think (the mean think time, \"5s\", or \"0s\") or think_s",
            )
        })?;
    Ok(RequestResponseSpec {
        request: drawn_size(p, "request", &a.request)?,
        response: drawn_size(p, "response", &a.response)?,
        think_mean,
    })
}

/// A size that may be drawn: one size (`"50kB"`) or a distribution table.
fn drawn_size(p: &str, field: &str, v: &Option<RawAppSize>) -> Result<SizeDist, ScenarioError> {
    match v {
        Some(RawAppSize::Drawn(d)) => size_dist(&at(p, field), d),
        Some(RawAppSize::Fixed(s)) => {
            let bytes = s.0.round();
            if !(1.0..=(1u64 << 62) as f64).contains(&bytes) {
                return err(
                    at(p, field),
                    format!("expected a size of at least 1 byte, got {}", s.0),
                );
            }
            Ok(SizeDist::Fixed {
                bytes: bytes as u64,
            })
        }
        None => err(
            at(p, field),
            format!(
                "missing: {field} is a size (\"50kB\") or a distribution, such as \
                 {{ distribution = \"exponential\", mean = \"50kB\" }} or {{ cdf = \"FILE\" }}"
            ),
        ),
    }
}

fn size_dist(p: &str, d: &RawSizeDist) -> Result<SizeDist, ScenarioError> {
    if let Some(cdf) = &d.cdf {
        let extra = [
            ("distribution", d.distribution.is_some()),
            ("mean", d.mean.is_some()),
            ("mean_bytes", d.mean_bytes.is_some()),
            ("shape", d.shape.is_some()),
            ("sigma", d.sigma.is_some()),
        ];
        if let Some((name, _)) = extra.iter().find(|(_, given)| *given) {
            return err(
                at(p, name),
                "a size given by its cdf takes no other parameter",
            );
        }
        return cdf_points(&at(p, "cdf"), cdf).map(|points| SizeDist::Cdf { points });
    }
    let mean_bytes = match one_of(p, ("mean", &d.mean), ("mean_bytes", &d.mean_bytes))? {
        Some((m, path)) if !(m.is_finite() && m >= 1.0) => {
            return err(path, format!("expected a mean of at least 1 byte, got {m}"))
        }
        Some((m, _)) => m,
        None => {
            return err(
                at(p, "mean"),
                "missing: a size distribution needs mean (\"50kB\") or mean_bytes",
            )
        }
    };
    let kind = d.distribution.as_deref().unwrap_or("exponential");
    let refuse = |name: &str| {
        err(
            at(p, name),
            format!("not a parameter of the {kind} distribution"),
        )
    };
    match kind {
        "exponential" => {
            if d.shape.is_some() {
                return refuse("shape");
            }
            if d.sigma.is_some() {
                return refuse("sigma");
            }
            Ok(SizeDist::Exponential { mean_bytes })
        }
        "pareto" => {
            if d.sigma.is_some() {
                return refuse("sigma");
            }
            Ok(SizeDist::Pareto {
                mean_bytes,
                shape: pareto_shape(&at(p, "shape"), d.shape.as_ref())?,
            })
        }
        "lognormal" => {
            if d.shape.is_some() {
                return refuse("shape");
            }
            let Some(sigma) = positive(&at(p, "sigma"), d.sigma.as_ref(), "sigma")? else {
                return err(at(p, "sigma"), "missing: a lognormal distribution needs sigma (the underlying normal's standard deviation, e.g. 1.0)");
            };
            Ok(SizeDist::Lognormal { mean_bytes, sigma })
        }
        other => err(
            at(p, "distribution"),
            format!("unknown distribution \"{other}\"; expected one of: exponential, pareto, lognormal (or a cdf)"),
        ),
    }
}

/// The CDF's points: sizes non-decreasing and at least 1 byte, probabilities non-decreasing in
/// [0, 1], the last 1.
fn cdf_points(p: &str, v: &serde_json::Value) -> Result<Vec<(f64, f64)>, ScenarioError> {
    let rows = match v {
        serde_json::Value::Array(rows) => rows,
        serde_json::Value::String(file) => {
            return err(
                p,
                format!(
                    "the file \"{file}\" is read by farlink's front end (farlink simulate, \
                     farlink.simulate); the core takes the points, [[size_bytes, probability], ...]"
                ),
            )
        }
        other => {
            return err(
                p,
                format!("expected a file name or [[size_bytes, probability], ...], got {other}"),
            )
        }
    };
    let mut points: Vec<(f64, f64)> = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        let pair = row.as_array().filter(|r| r.len() == 2);
        let pair = pair.and_then(|r| Some((r[0].as_f64()?, r[1].as_f64()?)));
        let Some((size, prob)) = pair else {
            return err(
                format!("{p}[{i}]"),
                format!("expected [size_bytes, probability], got {row}"),
            );
        };
        let last = points.last().copied();
        if !(size.is_finite() && size >= 1.0) || last.is_some_and(|(s, _)| size < s) {
            return err(
                format!("{p}[{i}]"),
                format!("expected sizes non-decreasing from at least 1 byte, got {size}"),
            );
        }
        if !(0.0..=1.0).contains(&prob) || last.is_some_and(|(_, q)| prob < q) {
            return err(
                format!("{p}[{i}]"),
                format!("expected probabilities non-decreasing within 0 to 1, got {prob}"),
            );
        }
        points.push((size, prob));
    }
    match points.last() {
        None => err(p, "expected at least one point"),
        Some(&(_, q)) if q != 1.0 => err(
            p,
            format!("the last cumulative probability must be 1, got {q}"),
        ),
        _ => Ok(points),
    }
}

/// A bulk transfer's fixed size: a distribution is an error there.
pub(super) fn fixed_size<'a>(
    p: &str,
    size: &'a Option<RawAppSize>,
) -> Result<Option<&'a UnitText<Size>>, ScenarioError> {
    match size {
        None => Ok(None),
        Some(RawAppSize::Fixed(s)) => Ok(Some(s)),
        Some(RawAppSize::Drawn(_)) => err(
            at(p, "size"),
            "a bulk application's size is one size, such as \"1MB\" (a distribution belongs to flows_poisson)",
        ),
    }
}

/// How a flow's application uses TCP, for [`check_flow`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Carrier {
    /// One connection (or one per relay segment): bulk, unbounded, telnet.
    Stream,
    /// UDP datagrams, no connection.
    Udp,
    /// Several connections side by side (a short-flow class, request/response).
    Connections,
}

/// What a competing-traffic flow (application `kind`) may not have: a UDP flow no
/// `[flows.tcp]` and no relays; one of several connections no relays, and each of its
/// connections opens with a handshake (`tcp.handshake` set, refused if the flow's settings turn
/// it off).
pub(super) fn check_flow(
    p: &str,
    f: &RawFlow,
    kind: &str,
    carrier: Carrier,
    tcp: &mut TcpSpec,
) -> Result<(), ScenarioError> {
    let (udp, poisson) = (carrier == Carrier::Udp, carrier == Carrier::Connections);
    if carrier == Carrier::Stream {
        return Ok(());
    }
    if udp && f.tcp.is_some() {
        return err(
            at(p, "tcp"),
            format!("a UDP flow ({kind}) has no TCP settings: remove [flows.tcp]"),
        );
    }
    if f.relays.is_some() || f.segments.is_some() {
        let field = if f.relays.is_some() {
            "relays"
        } else {
            "segments"
        };
        return err(
            at(p, field),
            format!("a {kind} flow runs end to end: relays are for one TCP transfer"),
        );
    }
    if poisson {
        if f.tcp.as_ref().and_then(|t| t.handshake) == Some(false) {
            return err(
                at(&at(p, "tcp"), "handshake"),
                "each connection of a flows_poisson or request_response flow opens with its handshake: leave tcp.handshake on",
            );
        }
        tcp.handshake = true;
    }
    Ok(())
}
