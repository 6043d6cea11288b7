//! The scenario's error type and the helpers every phase uses to name a place.

use std::fmt;

/// An invalid scenario: where (`links[1].fwd.loss.p`, empty for the document as a whole) and
/// what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    pub path: String,
    pub message: String,
}

impl ScenarioError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        ScenarioError {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for ScenarioError {}

pub(super) fn err<T>(
    path: impl Into<String>,
    message: impl Into<String>,
) -> Result<T, ScenarioError> {
    Err(ScenarioError::new(path, message))
}

/// Joins a parent path and a field.
pub(super) fn at(parent: &str, field: &str) -> String {
    if parent.is_empty() {
        field.to_owned()
    } else {
        format!("{parent}.{field}")
    }
}

/// A tagged variant's name and the parameters it takes (loss models, application kinds).
pub(super) type Variant = (&'static str, &'static [&'static str]);

/// Looks `name` up among `table`'s variants, or names the field and the accepted names.
pub(super) fn variant(
    p: &str,
    field: &str,
    what: &str,
    name: &str,
    table: &[Variant],
) -> Result<Variant, ScenarioError> {
    table
        .iter()
        .find(|(n, _)| *n == name)
        .copied()
        .ok_or_else(|| {
            let names: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
            ScenarioError::new(
                at(p, field),
                format!(
                    "unknown {what} \"{name}\"; expected one of: {}",
                    names.join(", ")
                ),
            )
        })
}

/// Refuses a parameter given to a variant that does not take it, naming what it takes.
pub(super) fn only_its_params(
    p: &str,
    what: &str,
    name: &str,
    allowed: &[&str],
    given: &[(&str, bool)],
) -> Result<(), ScenarioError> {
    match given
        .iter()
        .find(|(param, present)| *present && !allowed.contains(param))
    {
        None => Ok(()),
        Some((param, _)) => {
            let takes = if allowed.is_empty() {
                "no parameters".to_owned()
            } else {
                allowed.join(", ")
            };
            err(
                at(p, param),
                format!("not a parameter of {what} \"{name}\" (it takes: {takes})"),
            )
        }
    }
}
