//! When a bulk application shuts down its writing half (`flows[N].app.shutdown`).
//!
//! `"written"` (the default): as soon as its last byte is written, as a program that sends a
//! file and closes does. `"acknowledged"`: once the peer has acknowledged every byte, as a
//! program that keeps the connection open until it has its peer's reply does. The two differ
//! for the kernel's Multipath TCP in the emulator: its path manager adds subflows only while
//! the connection is open for writing, and resets a join that completes after the shutdown.

use super::errors::{at, err, ScenarioError};

/// When the bulk application shuts down its writing half.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Shutdown {
    /// As soon as the last byte is written.
    #[default]
    Written,
    /// Once every byte written has been acknowledged by the peer.
    Acknowledged,
}

impl Shutdown {
    /// The scenario's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Shutdown::Written => "written",
            Shutdown::Acknowledged => "acknowledged",
        }
    }

    /// `app.shutdown` at `p` (the application's path); absent: [`Shutdown::Written`].
    pub(super) fn parse(p: &str, given: Option<&str>) -> Result<Shutdown, ScenarioError> {
        match given {
            None | Some("written") => Ok(Shutdown::Written),
            Some("acknowledged") => Ok(Shutdown::Acknowledged),
            Some(other) => err(
                at(p, "shutdown"),
                format!("expected \"written\" or \"acknowledged\", got \"{other}\""),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_is_written_and_each_name_reads_back() {
        assert_eq!(
            Shutdown::parse("flows[0].app", None).unwrap(),
            Shutdown::Written
        );
        for s in [Shutdown::Written, Shutdown::Acknowledged] {
            assert_eq!(Shutdown::parse("flows[0].app", Some(s.name())).unwrap(), s);
        }
    }

    #[test]
    fn another_value_is_refused_at_its_path() {
        let e = Shutdown::parse("flows[1].app", Some("closed")).unwrap_err();
        assert_eq!(e.path, "flows[1].app.shutdown");
        assert!(
            e.message.contains("\"written\" or \"acknowledged\""),
            "{}",
            e.message
        );
    }

    /// A one-flow scenario whose application is `app` (JSON).
    fn with_app(app: &str) -> String {
        format!(
            r#"{{"duration": "10s", "nodes": ["S", "D"],
                "links": [{{"a": "S", "b": "D", "rate": "1Mbps", "delay": "10ms"}}],
                "flows": [{{"from": "S", "to": "D", "app": {app}}}]}}"#
        )
    }

    #[test]
    fn a_bulk_flow_keeps_its_shutdown_and_the_resolved_scenario_names_only_the_other() {
        use crate::scenario::{parse_scenario_json, resolve_scenario_json};
        let cases = [
            (
                r#"{"kind": "bulk", "size": "1MB"}"#,
                Shutdown::Written,
                None,
            ),
            (
                r#"{"kind": "bulk", "size": "1MB", "shutdown": "written"}"#,
                Shutdown::Written,
                None,
            ),
            (
                r#"{"kind": "bulk", "size": "1MB", "shutdown": "acknowledged"}"#,
                Shutdown::Acknowledged,
                Some("acknowledged"),
            ),
        ];
        for (app, shutdown, echoed) in cases {
            let text = with_app(app);
            assert_eq!(
                parse_scenario_json(&text).unwrap().flows()[0].shutdown,
                shutdown
            );
            let resolved = resolve_scenario_json(&text).unwrap();
            let app = &resolved.flows[0].app;
            assert_eq!(
                app.get("shutdown").and_then(|v| v.as_str()),
                echoed,
                "{app}"
            );
        }
    }

    #[test]
    fn a_bad_value_or_another_kind_is_refused_in_one_line() {
        use crate::scenario::parse_scenario_json;
        let bad = parse_scenario_json(&with_app(
            r#"{"kind": "bulk", "size": "1MB", "shutdown": "later"}"#,
        ))
        .unwrap_err();
        assert_eq!(bad.path, "flows[0].app.shutdown");
        assert!(bad.message.contains("got \"later\""), "{}", bad.message);
        let other =
            parse_scenario_json(&with_app(r#"{"kind": "unbounded", "shutdown": "written"}"#))
                .unwrap_err();
        assert_eq!(other.path, "flows[0].app.shutdown");
        assert!(
            other.message.contains("not a parameter"),
            "{}",
            other.message
        );
    }
}
