//! A link direction's schedule (`schedule`, on the link or in a direction) and mahimahi rate
//! trace (`rate_trace`, in a direction), checked into [`crate::links::schedule`]'s types.
//!
//! The core reads no files: `schedule = { file = "FILE" }` and `rate = { trace = "FILE" }`
//! are read by the front end (`farlink.scenario`), which hands the core the rows
//! (`schedule.rows`, keeping `file`) and the opportunities (`rate_trace.opportunities_ms`).

use std::fmt;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::errors::{at, err, ScenarioError};
use super::quantity::{duration_from, one_of, rate_from};
use super::raw::{Bare, BitRate, Duration, Prob, UnitText};
use crate::links::schedule::{DelayShape, DownPolicy, RateTrace, Schedule, ScheduleRow};
use crate::time::{self, SimDuration};

/// One row as written: every value but `at` may be left out (then the previous row's holds;
/// the first row's come from the direction).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRow {
    at: Option<UnitText<Duration>>,
    at_s: Option<Bare>,
    rate: Option<UnitText<BitRate>>,
    rate_bps: Option<Bare>,
    delay: Option<UnitText<Duration>>,
    delay_s: Option<Bare>,
    loss: Option<Prob>,
    up: Option<bool>,
}

/// A schedule as a table.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScheduleTable {
    rows: Option<Vec<RawRow>>,
    /// Where the front end read the rows from (kept for the reader; the core reads no file).
    file: Option<String>,
    repeat: Option<bool>,
    down: Option<String>,
    interpolate_delay: Option<bool>,
}

/// `schedule = [ rows ]` or `schedule = { rows, repeat, down, interpolate_delay }`.
pub(super) enum RawSchedule {
    Rows(Vec<RawRow>),
    Table(RawScheduleTable),
}

impl<'de> Deserialize<'de> for RawSchedule {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawSchedule;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "an array of rows ({ at = \"0s\", rate = \"10Mbps\", delay = \"50ms\" }) or a \
                     table { rows = [...], repeat, down, interpolate_delay } or { file = \"FILE\" }",
                )
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<RawSchedule, A::Error> {
                Vec::deserialize(SeqAccessDeserializer::new(seq)).map(RawSchedule::Rows)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawSchedule, A::Error> {
                RawScheduleTable::deserialize(MapAccessDeserializer::new(map))
                    .map(RawSchedule::Table)
            }
        }
        d.deserialize_any(V)
    }
}

/// `rate_trace = { file, opportunities_ms = [...] }`: mahimahi's delivery opportunities.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRateTrace {
    file: Option<String>,
    opportunities_ms: Vec<u64>,
}

/// The schedule at `path` (`None` if absent), its first row's missing values from `rate` and
/// `delay` (the direction's own, if it gives them).
pub(super) fn schedule(
    path: &str,
    raw: Option<&RawSchedule>,
    rate: Option<time::BitRate>,
    delay: Option<SimDuration>,
) -> Result<Option<Schedule>, ScenarioError> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    let (rows, table) = match raw {
        RawSchedule::Rows(rows) => (rows.as_slice(), None),
        RawSchedule::Table(t) => match &t.rows {
            Some(rows) => (rows.as_slice(), Some(t)),
            None if t.file.is_some() => {
                return err(
                    at(path, "file"),
                    "a schedule file is read by farlink's front end (farlink simulate, \
                     farlink.scenario), which hands its rows to the core as schedule.rows",
                )
            }
            None => return err(at(path, "rows"), "missing: give the schedule's rows"),
        },
    };
    let rows_path = if table.is_some() {
        at(path, "rows")
    } else {
        path.to_owned()
    };
    let mut out: Vec<ScheduleRow> = Vec::with_capacity(rows.len());
    for (i, r) in rows.iter().enumerate() {
        let rp = format!("{rows_path}[{i}]");
        out.push(row(&rp, r, out.last(), rate, delay)?);
    }
    let down = match table.and_then(|t| t.down.as_deref()) {
        None | Some("hold") => DownPolicy::Hold,
        Some("drop") => DownPolicy::Drop,
        Some(other) => {
            return err(
                at(path, "down"),
                format!("expected \"hold\" or \"drop\", got \"{other}\""),
            )
        }
    };
    let shape = if table.and_then(|t| t.interpolate_delay).unwrap_or(false) {
        DelayShape::Linear
    } else {
        DelayShape::Step
    };
    let repeat = table.and_then(|t| t.repeat).unwrap_or(false);
    // Rows the front end read from a CSV are its lines after the header: say which.
    let file = table.and_then(|t| t.file.as_deref());
    Schedule::new(out, repeat, shape, down)
        .map(Some)
        .map_err(|e| match (e.row, file) {
            (Some(i), Some(f)) => ScenarioError::new(
                format!("{rows_path}[{i}]"),
                format!("{} (line {} of {f})", e.message, i + 2),
            ),
            (Some(i), None) => ScenarioError::new(format!("{rows_path}[{i}]"), e.message),
            (None, _) => ScenarioError::new(rows_path.clone(), e.message),
        })
}

/// Row `r` at `rp`, completed from the row before it or, for the first, from the direction.
fn row(
    rp: &str,
    r: &RawRow,
    before: Option<&ScheduleRow>,
    rate: Option<time::BitRate>,
    delay: Option<SimDuration>,
) -> Result<ScheduleRow, ScenarioError> {
    let Some((at_s, at_path)) = one_of(rp, ("at", &r.at), ("at_s", &r.at_s))? else {
        return err(at(rp, "at"), "missing: give at (\"15s\") or at_s");
    };
    let at_d = duration_from(&at_path, at_s, true)?;
    let rate = match one_of(rp, ("rate", &r.rate), ("rate_bps", &r.rate_bps))? {
        // Zero: nothing leaves while the row holds (a stopped serializer).
        Some((0.0, _)) => time::BitRate::from_bps(0),
        Some((v, p)) => rate_from(&p, v)?,
        None => match before.map(|b| b.rate).or(rate) {
            Some(r) => r,
            None => {
                return err(
                    at(rp, "rate"),
                    "missing: the first row needs a rate when the direction gives none",
                )
            }
        },
    };
    let delay = match one_of(rp, ("delay", &r.delay), ("delay_s", &r.delay_s))? {
        Some((v, p)) => duration_from(&p, v, true)?,
        None => match before.map(|b| b.delay).or(delay) {
            Some(d) => d,
            None => {
                return err(
                    at(rp, "delay"),
                    "missing: the first row needs a delay when the direction gives none",
                )
            }
        },
    };
    Ok(ScheduleRow {
        at: at_d,
        rate,
        delay,
        loss: r.loss.map_or(before.map_or(0.0, |b| b.loss), |p| p.0),
        up: r.up.or(before.map(|b| b.up)).unwrap_or(true),
    })
}

/// The rate trace at `path`, if any.
pub(super) fn rate_trace(
    path: &str,
    raw: Option<&RawRateTrace>,
) -> Result<Option<RateTrace>, ScenarioError> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    let _ = &raw.file;
    RateTrace::new(raw.opportunities_ms.clone())
        .map(Some)
        .map_err(|e| match e.row {
            Some(i) => ScenarioError::new(format!("{path}.opportunities_ms[{i}]"), e.message),
            None => ScenarioError::new(format!("{path}.opportunities_ms"), e.message),
        })
}

/// Direction `dp`'s schedule (its own, else the link's) and rate trace; refused on a bundle
/// or a radio hop (`no_plain`: why the link is not a plain one), and a rate trace beside
/// schedule rows that give a rate. The first row takes the direction's rate and delay where
/// it gives none.
pub(super) fn direction(
    dp: &str,
    raw: &super::raw::RawDir,
    link: Option<&(&RawSchedule, String)>,
    no_plain: Option<&str>,
    own: &super::links::DirParts,
    common: &super::links::DirParts,
) -> Result<(Option<Schedule>, Option<RateTrace>), ScenarioError> {
    let (raw_sched, sched_path) = match (&raw.schedule, link) {
        (Some(s), _) => (Some(s), at(dp, "schedule")),
        (None, Some((s, p))) => (Some(*s), p.clone()),
        (None, None) => (None, String::new()),
    };
    let trace_path = at(dp, "rate_trace");
    if let Some(why) = no_plain {
        if raw_sched.is_some() {
            return err(sched_path, format!("a schedule drives a plain link; {why}"));
        }
        if raw.rate_trace.is_some() {
            return err(
                trace_path,
                format!("a rate trace drives a plain link; {why}"),
            );
        }
    }
    let trace = rate_trace(&trace_path, raw.rate_trace.as_ref())?;
    if trace.is_some() && own.rate.is_some() {
        return err(
            at(dp, "rate"),
            "a direction with a rate trace takes its rate from the trace; give it no rate",
        );
    }
    if trace.is_some() && raw_sched.is_some_and(sets_rate) {
        return err(
            sched_path,
            "a direction with a rate trace takes its rate from the trace's opportunities; \
             give its schedule no rate",
        );
    }
    let rate = own
        .rate
        .or(common.rate)
        .or(trace.as_ref().map(RateTrace::mean_rate));
    let delay = own.delay.or(common.delay);
    let sched = schedule(&sched_path, raw_sched, rate, delay)?;
    Ok((sched, trace))
}

/// Whether some row of `s` gives a rate.
fn sets_rate(s: &RawSchedule) -> bool {
    let rows = match s {
        RawSchedule::Rows(r) => r.as_slice(),
        RawSchedule::Table(t) => t.rows.as_deref().unwrap_or(&[]),
    };
    rows.iter()
        .any(|r| r.rate.is_some() || r.rate_bps.is_some())
}
