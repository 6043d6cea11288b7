//! The error a component returns when one of its parameters is out of its domain.
//!
//! This module owns only the shape of that error: the parameter's name as a scenario spells it,
//! and what was expected. The scenario layer prefixes the path of the component (for example
//! `links[0].loss.p: expected a probability in [0, 1], got 1.5`).

use std::fmt;

/// A parameter out of its domain. `param` is the parameter's name as written in a scenario
/// (`"p"`, `"frame_error_rate"`, `"rate_bps"`, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub param: &'static str,
    pub message: String,
}

impl ConfigError {
    pub fn new(param: &'static str, message: impl Into<String>) -> Self {
        ConfigError {
            param,
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.param, self.message)
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_parameter_then_message() {
        let e = ConfigError::new("rate_bps", "expected a positive rate, got 0");
        assert_eq!(e.to_string(), "rate_bps: expected a positive rate, got 0");
    }
}
