//! Which fields of a resolved scenario took their defaults: every settable leaf of the
//! resolved document that the input document does not give, under either spelling of its
//! quantity, nor through an enclosing table it inherits from; and which of them a TCP
//! profile set instead (`scenario/profile.rs`), with a `cc` the profile replaced by its model.

use std::str::FromStr;

use serde_json::{Map, Value};

use super::profile::TcpProfile;

/// One step of a path: a field or an index.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// Paths (`--set` grammar) of the leaves of a resolved scenario by where their value came
/// from, each sorted by field name at each level.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Origins {
    /// Took farlink's default.
    pub(super) defaults: Vec<String>,
    /// Set by the TCP profile of their table.
    pub(super) from_profile: Vec<String>,
}

/// Where each leaf of `resolved` came from, `input` being the document it was resolved from.
/// Fields named in `derived` (the resolved document's, which no scenario sets) are passed
/// over, with all below them.
pub(super) fn origins(input: &Value, resolved: &Value, derived: &[&str]) -> Origins {
    let mut out = Origins::default();
    walk(input, derived, resolved, None, &mut Vec::new(), &mut out);
    out
}

fn walk(
    input: &Value,
    derived: &[&str],
    node: &Value,
    parent: Option<&Map<String, Value>>,
    path: &mut Vec<Step>,
    out: &mut Origins,
) {
    match node {
        Value::Object(map) => {
            for (key, value) in map {
                if derived.contains(&key.as_str()) {
                    continue;
                }
                path.push(Step::Key(key.clone()));
                walk(input, derived, value, Some(map), path, out);
                path.pop();
            }
        }
        // A list of tables is walked element by element; a list of values is one value.
        Value::Array(items) if items.iter().any(Value::is_object) => {
            for (i, item) in items.iter().enumerate() {
                path.push(Step::Index(i));
                walk(input, derived, item, None, path, out);
                path.pop();
            }
        }
        _ => {
            let profile = parent.and_then(|table| profile_of(path, table));
            let given = given(input, path);
            if !given && profile.is_some_and(|(p, table)| sets(p, path, table)) {
                out.from_profile.push(render(path));
            } else if !given {
                out.defaults.push(render(path));
            } else if profile.is_some_and(|(p, table)| replaced_cc(p, input, path, table)) {
                out.from_profile.push(render(path));
            }
        }
    }
}

/// The profile of a leaf's table, if the table is a flow's TCP (`flows[i].tcp`; a split
/// flow's segments are derived) under a profile other than the default.
fn profile_of<'t>(
    path: &[Step],
    table: &'t Map<String, Value>,
) -> Option<(TcpProfile, &'t Map<String, Value>)> {
    let [.., Step::Key(tcp), Step::Key(_)] = path else {
        return None;
    };
    if tcp != "tcp" {
        return None;
    }
    let profile = TcpProfile::from_str(table.get("profile")?.as_str()?).ok()?;
    (!profile.is_rfc()).then_some((profile, table))
}

/// Whether `profile` set the leaf at `path` of TCP table `table`: one of its fields holding a
/// value (delayed ACKs switched off have no timer), or the growth it gives the controller.
fn sets(profile: TcpProfile, path: &[Step], table: &Map<String, Value>) -> bool {
    let Some(Step::Key(key)) = path.last() else {
        return false;
    };
    let holds = table.get(key.as_str()).is_some_and(|v| !v.is_null());
    let field = profile.fields().iter().any(|f| f.resolved == key);
    let growth = key == "growth"
        && table
            .get("cc")
            .and_then(Value::as_str)
            .and_then(|cc| profile.growth(cc))
            .is_some();
    holds && (field || growth)
}

/// Whether the input named a controller (`cc`) that `profile` replaced by its model of it.
fn replaced_cc(
    profile: TcpProfile,
    input: &Value,
    path: &[Step],
    table: &Map<String, Value>,
) -> bool {
    if !matches!(path.last(), Some(Step::Key(k)) if k == "cc") {
        return false;
    }
    let written = lookup(input, path).and_then(Value::as_str);
    let runs = table.get("cc").and_then(Value::as_str);
    match (written, runs) {
        (Some(written), Some(runs)) => {
            let written = written.to_ascii_lowercase();
            profile.controller(&written) != written && runs != written
        }
        _ => false,
    }
}

fn render(path: &[Step]) -> String {
    let mut s = String::new();
    for step in path {
        match step {
            Step::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Step::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

fn lookup<'v>(input: &'v Value, path: &[Step]) -> Option<&'v Value> {
    path.iter().try_fold(input, |v, step| match step {
        Step::Key(k) => v.get(k.as_str()),
        Step::Index(i) => v.get(*i),
    })
}

/// The spellings a field can have in the input: `delay_s` is also `delay`, `queue_pkts` is
/// also `queue` and `queue_bytes`.
fn spellings(key: &str) -> Vec<String> {
    if key.starts_with("queue") {
        return ["queue", "queue_pkts", "queue_bytes"]
            .map(String::from)
            .to_vec();
    }
    let mut names = vec![key.to_owned()];
    for suffix in ["_per_s", "_bps", "_bytes", "_pkts", "_s"] {
        if let Some(stem) = key.strip_suffix(suffix) {
            names.push(stem.to_owned());
            break;
        }
    }
    names
}

/// Whether the input gives the field at `path` itself or through a table it inherits from.
fn given(input: &Value, path: &[Step]) -> bool {
    let Some((Step::Key(key), parent)) = path.split_last() else {
        return true;
    };
    let at = |parent: &[Step]| {
        lookup(input, parent).is_some_and(|table| {
            spellings(key)
                .iter()
                .any(|k| table.get(k.as_str()).is_some())
        })
    };
    if at(parent) {
        return true;
    }
    let keys: Vec<&str> = parent
        .iter()
        .map(|s| match s {
            Step::Key(k) => k.as_str(),
            Step::Index(_) => "[]",
        })
        .collect();
    match keys.as_slice() {
        // A direction inherits its link's rate, delay and queue; a bundle's or a radio hop's
        // direction takes its rate and delay from its members or slot.
        ["links", "[]", "fwd" | "rev"] => {
            let link = &parent[..2];
            at(link)
                || (matches!(key.as_str(), "rate_bps" | "delay_s")
                    && lookup(input, link).is_some_and(|l| l.get("bundle").is_some()))
        }
        // A direction's AQM parameters are its link's `aqm` table's, unless the direction
        // names its own discipline (it then takes none of the link's: `scenario/aqm.rs`).
        ["links", "[]", "fwd" | "rev", "aqm"] => {
            let own_discipline =
                lookup(input, &parent[..3]).is_some_and(|d| d.get("queue_discipline").is_some());
            let mut link_aqm = parent[..2].to_vec();
            link_aqm.push(Step::Key("aqm".into()));
            !own_discipline && at(&link_aqm)
        }
        // A loss model named in full counts as given, parameters defaulted or not, except
        // `lcg16807`'s seed and `markov_fading`'s frame, which have defaults of their own; a
        // radio hop's channel given in `rlp` is the loss of both directions.
        ["links", "[]", "fwd" | "rev", "loss"] => {
            let link = &parent[..2];
            let written = lookup(input, parent).is_some();
            (written && !matches!(key.as_str(), "seed" | "frame_s"))
                || lookup(input, link)
                    .and_then(|l| l.get("rlp"))
                    .is_some_and(|r| r.get("pe").is_some())
        }
        // A member inherits its bundle's values.
        ["links", "[]", "bundle", "members", "[]"] => at(&parent[..3]),
        // ARQ windows are computed per member unless the bundle's arq gives one.
        ["links", "[]", "bundle"] if key == "arq" => true,
        // A segment of a split flow inherits the flow's TCP.
        ["flows", "[]", "segments", "[]", "tcp"] => {
            let mut flow_tcp = parent[..2].to_vec();
            flow_tcp.push(Step::Key("tcp".into()));
            at(&flow_tcp)
        }
        // `lossy_link = "R-D"` names the link; its direction then defaults to fwd.
        ["lossy_link"] => {
            let written = lookup(input, parent);
            key == "link" && written.is_some_and(Value::is_string)
        }
        // `trace.all` sets every trace at once.
        ["trace"] => lookup(input, parent).is_some_and(|t| t.get("all").is_some()),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_directions_aqm_parameter_given_on_its_link_is_not_a_default() {
        // `target = "5ms"` equals the default, and was given all the same.
        let input = json!({"links": [{"queue_discipline": "codel", "aqm": {"target": "5ms"},
                                      "rev": {"queue_discipline": "codel"}}]});
        let aqm = json!({"target_s": 0.005, "interval_s": 0.1});
        let resolved = json!({"links": [{"fwd": {"aqm": aqm}, "rev": {"aqm": aqm}}]});
        assert_eq!(
            origins(&input, &resolved, &[]).defaults,
            [
                "links[0].fwd.aqm.interval_s",
                "links[0].rev.aqm.interval_s",
                "links[0].rev.aqm.target_s",
            ]
        );
    }

    #[test]
    fn a_field_given_in_either_spelling_or_inherited_is_not_a_default() {
        let input = json!({"links": [{"rate": "1Mbps", "fwd": {"queue_pkts": 5}}],
                           "flows": [{"tcp": {"mss": "1000B"}}]});
        let resolved = json!({"links": [{"fwd": {"rate_bps": 1, "delay_s": 0.1, "queue_pkts": 5},
                                         "rev": {"rate_bps": 1, "queue_pkts": 100}}],
                              "flows": [{"tcp": {"mss_bytes": 1000, "min_rto_s": 1.0}}]});
        assert_eq!(
            origins(&input, &resolved, &[]),
            Origins {
                defaults: vec![
                    "flows[0].tcp.min_rto_s".into(),
                    "links[0].fwd.delay_s".into(),
                    "links[0].rev.queue_pkts".into()
                ],
                from_profile: vec![],
            }
        );
    }

    #[test]
    fn fields_a_profile_set_are_its_not_defaults() {
        let input = json!({"flows": [{"tcp": {"profile": "linux", "cc": "Cubic",
                                              "delayed_ack": false, "min_rto_s": 1.0}}]});
        let resolved = json!({"flows": [{"tcp": {
            "profile": "linux", "mss_bytes": 1460, "delayed_ack": false,
            "delayed_ack_timeout_s": null, "min_rto_s": 1.0, "rto": "linux",
            "max_rto_s": 120.0, "cc": "cubic-linux", "growth": "per-ack"}}]});
        assert_eq!(
            origins(&input, &resolved, &[]),
            Origins {
                defaults: vec![
                    // Delayed ACKs switched off: no timer, Linux's or other.
                    "flows[0].tcp.delayed_ack_timeout_s".into(),
                    // Only Reno has Linux's growth rule.
                    "flows[0].tcp.growth".into(),
                    // Follows from Linux's rule as farlink's defaults do.
                    "flows[0].tcp.max_rto_s".into(),
                    "flows[0].tcp.mss_bytes".into(),
                ],
                from_profile: vec!["flows[0].tcp.cc".into(), "flows[0].tcp.rto".into()],
            }
        );
    }
}
