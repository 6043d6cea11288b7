//! Queue disciplines: `queue_discipline` and its parameters under `aqm`, on a link (both
//! directions) or in one direction (`fwd`/`rev`, which then overrides the link's: its own
//! discipline, and its own `aqm` table if it gives one; the link's table goes with the link's
//! discipline, so a direction naming its own discipline does not inherit it).

use super::errors::{at, err, only_its_params, variant, ScenarioError, Variant};
use super::quantity::{opt_bytes, opt_duration};
use super::raw::RawAqm;
use crate::links::queue::{
    CoDelParams, Discipline, DualPi2Params, FqCoDelParams, PieParams, RedParams,
};
use crate::time::SimDuration;

/// The disciplines and the `aqm` parameters each takes.
const DISCIPLINES: &[Variant] = &[
    ("droptail", &[]),
    ("codel", &["target", "interval", "ecn"]),
    (
        "fq_codel",
        &[
            "target",
            "interval",
            "ecn",
            "flows",
            "quantum",
            "quantum_bytes",
        ],
    ),
    (
        "pie",
        &[
            "target",
            "tupdate",
            "alpha",
            "beta",
            "max_burst",
            "ecn",
            "mark_ecn_threshold",
        ],
    ),
    (
        "red",
        &[
            "min_th_pkts",
            "max_th_pkts",
            "max_p",
            "weight",
            "gentle",
            "adaptive",
            "mean_packet_bytes",
            "ecn",
        ],
    ),
    (
        "dualpi2",
        &[
            "target",
            "tupdate",
            "alpha",
            "beta",
            "coupling",
            "step_thresh",
            "step_min_bytes",
            "tshift",
            "ecn",
        ],
    ),
];

/// The discipline of a direction at `dp` (e.g. `links[0].fwd`) from its own fields, else the
/// link's at `lp`; drop-tail when neither names one. It runs a plain link's queue, a bundle's
/// MLPPP queue and a radio hop's queue alike.
pub(super) fn discipline(
    lp: &str,
    link: (&Option<String>, &Option<RawAqm>),
    dp: &str,
    dir: (&Option<String>, &Option<RawAqm>),
) -> Result<Discipline, ScenarioError> {
    let (name, name_parent) = match (dir.0, link.0) {
        (Some(n), _) => (n.as_str(), dp),
        (None, Some(n)) => (n.as_str(), lp),
        (None, None) => ("droptail", lp),
    };
    // The link's parameters belong to the link's discipline: a direction naming its own
    // takes only its own.
    let (aqm, aqm_parent) = match (dir.1, link.1) {
        (Some(a), _) => (Some(a), dp),
        (None, Some(a)) if dir.0.is_none() => (Some(a), lp),
        (None, _) => (None, lp),
    };
    let (name, allowed) = variant(
        name_parent,
        "queue_discipline",
        "queue discipline",
        name,
        DISCIPLINES,
    )?;
    let ap = at(aqm_parent, "aqm");
    let empty = RawAqm::default();
    let a = aqm.unwrap_or(&empty);
    if aqm.is_some() && name == "droptail" {
        return err(
            ap,
            "aqm parameters need an active queue: set queue_discipline (\"codel\", \"fq_codel\", \
             \"pie\", \"red\" or \"dualpi2\")",
        );
    }
    only_its_params(&ap, "queue discipline", name, allowed, &a.given())?;
    Ok(match name {
        "codel" => Discipline::CoDel(codel(&ap, a)?),
        "fq_codel" => Discipline::FqCoDel(fq_codel(&ap, a)?),
        "pie" => Discipline::Pie(pie(&ap, a)?),
        "red" => Discipline::Red(red(&ap, a)?),
        "dualpi2" => Discipline::DualPi2(dualpi2(&ap, a)?),
        _ => Discipline::DropTail,
    })
}

fn duration(
    ap: &str,
    a: &RawAqm,
    field: &str,
    default: SimDuration,
) -> Result<SimDuration, ScenarioError> {
    let (plain, bare) = match field {
        "target" => (&a.target, &a.target_s),
        "interval" => (&a.interval, &a.interval_s),
        "tupdate" => (&a.tupdate, &a.tupdate_s),
        "step_thresh" => (&a.step_thresh, &a.step_thresh_s),
        "tshift" => (&a.tshift, &a.tshift_s),
        _ => (&a.max_burst, &a.max_burst_s),
    };
    let bare_name = format!("{field}_s");
    // A zero burst allowance, step threshold or time shift means something (none, mark
    // every queued L4S packet, a plain FIFO); a zero target or interval does not.
    let zero_ok = matches!(field, "max_burst" | "step_thresh" | "tshift");
    let d = opt_duration(ap, (field, plain), (&bare_name, bare), zero_ok)?;
    Ok(d.unwrap_or(default))
}

fn codel(ap: &str, a: &RawAqm) -> Result<CoDelParams, ScenarioError> {
    let d = CoDelParams::default();
    Ok(CoDelParams {
        target: duration(ap, a, "target", d.target)?,
        interval: duration(ap, a, "interval", d.interval)?,
        ecn: a.ecn.unwrap_or(d.ecn),
    })
}

fn fq_codel(ap: &str, a: &RawAqm) -> Result<FqCoDelParams, ScenarioError> {
    let d = FqCoDelParams::default();
    let flows = a.flows.unwrap_or(d.flows);
    if flows == 0 {
        return err(at(ap, "flows"), "expected at least 1 flow queue, got 0");
    }
    let quantum = opt_bytes(
        ap,
        ("quantum", &a.quantum),
        ("quantum_bytes", a.quantum_bytes),
    )?;
    let quantum_bytes = match quantum {
        None => d.quantum_bytes,
        Some((q, path)) => match u32::try_from(q) {
            Ok(q) if q > 0 => q,
            _ => {
                return err(
                    path,
                    format!("expected a quantum of 1 to 2^32-1 bytes, got {q}"),
                )
            }
        },
    };
    Ok(FqCoDelParams {
        flows,
        quantum_bytes,
        codel: codel(ap, a)?,
    })
}

/// A probability-like number in `range`, at `ap.field`.
fn number(
    ap: &str,
    field: &str,
    v: Option<f64>,
    default: f64,
    range: std::ops::RangeInclusive<f64>,
) -> Result<f64, ScenarioError> {
    let x = v.unwrap_or(default);
    if !x.is_finite() || !range.contains(&x) {
        return err(
            at(ap, field),
            format!(
                "expected a number from {} to {}, got {x}",
                range.start(),
                range.end()
            ),
        );
    }
    Ok(x)
}

fn pie(ap: &str, a: &RawAqm) -> Result<PieParams, ScenarioError> {
    let d = PieParams::default();
    Ok(PieParams {
        target: duration(ap, a, "target", d.target)?,
        tupdate: duration(ap, a, "tupdate", d.tupdate)?,
        alpha: number(ap, "alpha", a.alpha, d.alpha, 0.0..=1e3)?,
        beta: number(ap, "beta", a.beta, d.beta, 0.0..=1e3)?,
        max_burst: duration(ap, a, "max_burst", d.max_burst)?,
        ecn: a.ecn.unwrap_or(d.ecn),
        mark_ecn_threshold: number(
            ap,
            "mark_ecn_threshold",
            a.mark_ecn_threshold,
            d.mark_ecn_threshold,
            0.0..=1.0,
        )?,
    })
}

fn dualpi2(ap: &str, a: &RawAqm) -> Result<DualPi2Params, ScenarioError> {
    let d = DualPi2Params::default();
    Ok(DualPi2Params {
        target: duration(ap, a, "target", d.target)?,
        tupdate: duration(ap, a, "tupdate", d.tupdate)?,
        alpha: number(ap, "alpha", a.alpha, d.alpha, 0.0..=1e3)?,
        beta: number(ap, "beta", a.beta, d.beta, 0.0..=1e3)?,
        coupling: number(ap, "coupling", a.coupling, d.coupling, 1.0..=1e3)?,
        step_thresh: duration(ap, a, "step_thresh", d.step_thresh)?,
        step_min_bytes: a.step_min_bytes.unwrap_or(d.step_min_bytes),
        tshift: duration(ap, a, "tshift", d.tshift)?,
        ecn: a.ecn.unwrap_or(d.ecn),
    })
}

fn red(ap: &str, a: &RawAqm) -> Result<RedParams, ScenarioError> {
    let d = RedParams::default();
    let min = number(ap, "min_th_pkts", a.min_th_pkts, d.min_th_pkts, 0.0..=1e9)?;
    let max = number(ap, "max_th_pkts", a.max_th_pkts, d.max_th_pkts, 0.0..=1e9)?;
    if max <= min {
        return err(
            at(ap, "max_th_pkts"),
            format!("expected a maximum threshold above the minimum ({min}), got {max}"),
        );
    }
    let mean_packet_bytes = a.mean_packet_bytes.unwrap_or(d.mean_packet_bytes);
    if mean_packet_bytes == 0 {
        return err(
            at(ap, "mean_packet_bytes"),
            "expected a packet size of at least 1 byte, got 0",
        );
    }
    Ok(RedParams {
        min_th_pkts: min,
        max_th_pkts: max,
        max_p: number(ap, "max_p", a.max_p, d.max_p, 0.0..=1.0)?,
        weight: number(ap, "weight", a.weight, d.weight, 0.0..=1.0)?,
        gentle: a.gentle.unwrap_or(d.gentle),
        adaptive: a.adaptive.unwrap_or(d.adaptive),
        mean_packet_bytes,
        ecn: a.ecn.unwrap_or(d.ecn),
    })
}

/// The discipline as the resolved scenario shows it: its name and every parameter (defaults
/// filled), durations in seconds; `None` for drop-tail, which resolved scenarios have always
/// left implicit.
pub(super) fn resolved(d: &Discipline) -> Option<(&'static str, serde_json::Value)> {
    use serde_json::json;
    let s = |x: SimDuration| x.as_secs_f64();
    let codel = |c: &CoDelParams| json!({"target_s": s(c.target), "interval_s": s(c.interval), "ecn": c.ecn});
    let params = match d {
        Discipline::DropTail => return None,
        Discipline::CoDel(c) => codel(c),
        Discipline::FqCoDel(f) => {
            let mut v = codel(&f.codel);
            v["flows"] = json!(f.flows);
            v["quantum_bytes"] = json!(f.quantum_bytes);
            v
        }
        Discipline::Pie(p) => json!({
            "target_s": s(p.target), "tupdate_s": s(p.tupdate), "alpha": p.alpha,
            "beta": p.beta, "max_burst_s": s(p.max_burst), "ecn": p.ecn,
            "mark_ecn_threshold": p.mark_ecn_threshold,
        }),
        Discipline::Red(r) => json!({
            "min_th_pkts": r.min_th_pkts, "max_th_pkts": r.max_th_pkts, "max_p": r.max_p,
            "weight": r.weight, "gentle": r.gentle, "adaptive": r.adaptive,
            "mean_packet_bytes": r.mean_packet_bytes, "ecn": r.ecn,
        }),
        Discipline::DualPi2(q) => json!({
            "target_s": s(q.target), "tupdate_s": s(q.tupdate), "alpha": q.alpha,
            "beta": q.beta, "coupling": q.coupling, "step_thresh_s": s(q.step_thresh),
            "step_min_bytes": q.step_min_bytes, "tshift_s": s(q.tshift), "ecn": q.ecn,
        }),
    };
    Some((d.name(), params))
}
