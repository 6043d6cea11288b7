//! Quantities in either spelling (`"80ms"` or `delay_s`), checked and converted to the
//! engine's types, and names.

use super::errors::{at, err, ScenarioError};
use super::raw::{Bare, EventRate, UnitText};
use crate::time::{BitRate, SimDuration};
use crate::units;

/// The longest duration accepted anywhere (about 3.2 years): keeps every sum of simulated
/// times far inside the u64 nanoseconds of [`SimTime`].
pub const MAX_DURATION_S: f64 = 1e8;
/// The largest link rate accepted, 10 Tbit/s.
pub const MAX_RATE_BPS: f64 = 1e13;

/// One of two spellings of a quantity, in its base unit (`None` if neither was given).
pub(super) fn one_of<K>(
    parent: &str,
    plain: (&str, &Option<UnitText<K>>),
    bare: (&str, &Option<Bare>),
) -> Result<Option<(f64, String)>, ScenarioError> {
    match (plain.1, bare.1) {
        (Some(_), Some(_)) => err(
            at(parent, bare.0),
            format!("give either {} or {}, not both", plain.0, bare.0),
        ),
        (Some(v), None) => Ok(Some((v.0, at(parent, plain.0)))),
        (None, Some(v)) => Ok(Some((v.0, at(parent, bare.0)))),
        (None, None) => Ok(None),
    }
}

/// A duration in seconds checked and converted to nanoseconds.
pub(super) fn duration_from(
    path: &str,
    seconds: f64,
    allow_zero: bool,
) -> Result<SimDuration, ScenarioError> {
    if !seconds.is_finite() || seconds < 0.0 || (seconds == 0.0 && !allow_zero) {
        let what = if allow_zero {
            "a duration of zero or more"
        } else {
            "a positive duration"
        };
        return err(path, format!("expected {what}, got {seconds} s"));
    }
    if seconds > MAX_DURATION_S {
        return err(
            path,
            format!("expected a duration of at most {MAX_DURATION_S} s, got {seconds} s"),
        );
    }
    Ok(SimDuration::from_secs_f64(seconds))
}

pub(super) fn opt_duration<K>(
    parent: &str,
    plain: (&str, &Option<UnitText<K>>),
    bare: (&str, &Option<Bare>),
    allow_zero: bool,
) -> Result<Option<SimDuration>, ScenarioError> {
    one_of(parent, plain, bare)?
        .map(|(s, path)| duration_from(&path, s, allow_zero))
        .transpose()
}

pub(super) fn rate_from(path: &str, bps: f64) -> Result<BitRate, ScenarioError> {
    if !(0.5..=MAX_RATE_BPS).contains(&bps) {
        return err(
            path,
            format!("expected a bit rate of at least 1 bit/s and at most {MAX_RATE_BPS} bit/s, got {bps}"),
        );
    }
    Ok(BitRate::from_bps(bps.round() as u64))
}

/// A size in bytes from the plain (string) or `_bytes` (integer) spelling.
pub(super) fn opt_bytes<K>(
    parent: &str,
    plain: (&str, &Option<UnitText<K>>),
    bare: (&str, Option<u64>),
) -> Result<Option<(u64, String)>, ScenarioError> {
    match (plain.1, bare.1) {
        (Some(_), Some(_)) => err(
            at(parent, bare.0),
            format!("give either {} or {}, not both", plain.0, bare.0),
        ),
        (Some(v), None) => {
            let path = at(parent, plain.0);
            let bytes = v.0.round();
            if !(0.0..=u64::MAX as f64 / 2.0).contains(&bytes) {
                return err(path, format!("expected a size in bytes, got {}", v.0));
            }
            Ok(Some((bytes as u64, path)))
        }
        (None, Some(v)) => Ok(Some((v, at(parent, bare.0)))),
        (None, None) => Ok(None),
    }
}

/// An event rate per second from `"1/50min"` or a bare `_per_s` number.
pub(super) fn opt_event_rate(
    parent: &str,
    plain: (&str, &Option<UnitText<EventRate>>),
    bare: (&str, &Option<Bare>),
) -> Result<Option<f64>, ScenarioError> {
    one_of(parent, plain, bare)?
        .map(|(v, path)| {
            if v.is_finite() && (0.0..=1e6).contains(&v) {
                Ok(v)
            } else {
                err(
                    path,
                    format!("expected a rate of 0 to 1e6 events per second, got {v}"),
                )
            }
        })
        .transpose()
}

/// A name: non-empty, no control characters.
pub(super) fn check_name(path: &str, name: &str) -> Result<(), ScenarioError> {
    if name.trim().is_empty() || name.chars().any(char::is_control) {
        return err(
            path,
            format!(
                "expected a non-empty name without control characters, got {}",
                units::py_repr(name)
            ),
        );
    }
    Ok(())
}
