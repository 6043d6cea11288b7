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

/// serde's words for a value of the wrong type (`invalid value: integer `-5`, expected u32`,
/// `invalid type: sequence, expected struct RawApp`) in a person's words: what to write and
/// what was found, without Rust's type names. Other messages are returned unchanged.
pub(super) fn plain_words(message: &str) -> String {
    let Some((found, expected)) = message.rsplit_once(", expected ") else {
        return message.to_owned();
    };
    let Some(found) = found
        .strip_prefix("invalid value: ")
        .or_else(|| found.strip_prefix("invalid type: "))
    else {
        return message.to_owned();
    };
    let expected = match expected {
        "u8" => "a whole number from 0 to 255".to_owned(),
        "u32" => format!("a whole number from 0 to {}", u32::MAX),
        "u64" => "a whole number of 0 or more".to_owned(),
        "i64" => "a whole number".to_owned(),
        "f64" => "a number".to_owned(),
        "a sequence" => "a list (an array, [...])".to_owned(),
        other if other.starts_with("struct ") => {
            "a table (in TOML a [section] or { ... })".to_owned()
        }
        other => other.to_owned(),
    };
    let found = match found {
        "sequence" => "a list (an array)".to_owned(),
        "map" => "a table".to_owned(),
        "null" => "nothing".to_owned(),
        other => {
            // `integer `-5``, `floating point `1.5``, `string "x"`, `boolean `true``.
            let value = other
                .split_once(' ')
                .map_or(other, |(kind, rest)| match kind {
                    "integer" | "boolean" => rest,
                    "floating" => rest.strip_prefix("point ").unwrap_or(rest),
                    _ => other,
                })
                .trim_matches('`');
            let number_wanted = expected.contains("number");
            if let (Some(text), true) = (other.strip_prefix("string "), number_wanted) {
                format!("the string {text} (a number is written without quotes)")
            } else {
                value.to_owned()
            }
        }
    };
    format!("expected {expected}, got {found}")
}

/// Fields that hold a table (or, for `lossy_link`, a name or a table). serde would read a list
/// there as the table's fields in order, silently or with a message in Rust's words.
const TABLE_FIELDS: &[&str] = &[
    "fwd",
    "rev",
    "bundle",
    "rlp",
    "loss",
    "arq",
    "tcp",
    "app",
    "trace",
    "lossy_link",
];

/// The first list (array) in `doc` where a table belongs, as an error at its path.
pub(super) fn list_where_a_table_belongs(doc: &serde_json::Value) -> Option<ScenarioError> {
    fn walk(v: &serde_json::Value, path: &str) -> Option<ScenarioError> {
        match v {
            serde_json::Value::Object(map) => map.iter().find_map(|(key, value)| {
                let here = at(path, key);
                match value {
                    _ if key == "extra" && path.is_empty() => None,
                    serde_json::Value::Array(_) if TABLE_FIELDS.contains(&key.as_str()) => {
                        Some(ScenarioError::new(
                            here,
                            "expected a table (in TOML a [section] or { ... }), got a list (an \
                             array; in TOML [[...]] makes one)",
                        ))
                    }
                    _ => walk(value, &here),
                }
            }),
            serde_json::Value::Array(items) => items
                .iter()
                .enumerate()
                .find_map(|(i, item)| walk(item, &format!("{path}[{i}]"))),
            _ => None,
        }
    }
    walk(doc, "")
}
