//! Which fields of a resolved scenario took their defaults: every settable leaf of the
//! resolved document that the input document does not give, under either spelling of its
//! quantity, nor through an enclosing table it inherits from.

use serde_json::Value;

/// One step of a path: a field or an index.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// Paths (`--set` grammar) of the leaves of `resolved` that took defaults, sorted by field name at each level.
/// Fields named in `derived` (the resolved document's, which no scenario sets) are passed
/// over, with all below them.
pub(super) fn defaults(input: &Value, resolved: &Value, derived: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    walk(input, derived, resolved, &mut Vec::new(), &mut out);
    out
}

fn walk(
    input: &Value,
    derived: &[&str],
    node: &Value,
    path: &mut Vec<Step>,
    out: &mut Vec<String>,
) {
    match node {
        Value::Object(map) => {
            for (key, value) in map {
                if derived.contains(&key.as_str()) {
                    continue;
                }
                path.push(Step::Key(key.clone()));
                walk(input, derived, value, path, out);
                path.pop();
            }
        }
        // A list of tables is walked element by element; a list of values is one value.
        Value::Array(items) if items.iter().any(Value::is_object) => {
            for (i, item) in items.iter().enumerate() {
                path.push(Step::Index(i));
                walk(input, derived, item, path, out);
                path.pop();
            }
        }
        _ => {
            if !given(input, path) {
                out.push(render(path));
            }
        }
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
    fn a_field_given_in_either_spelling_or_inherited_is_not_a_default() {
        let input = json!({"links": [{"rate": "1Mbps", "fwd": {"queue_pkts": 5}}],
                           "flows": [{"tcp": {"mss": "1000B"}}]});
        let resolved = json!({"links": [{"fwd": {"rate_bps": 1, "delay_s": 0.1, "queue_pkts": 5},
                                         "rev": {"rate_bps": 1, "queue_pkts": 100}}],
                              "flows": [{"tcp": {"mss_bytes": 1000, "min_rto_s": 1.0}}]});
        assert_eq!(
            defaults(&input, &resolved, &[]),
            vec![
                "flows[0].tcp.min_rto_s",
                "links[0].fwd.delay_s",
                "links[0].rev.queue_pkts"
            ]
        );
    }
}
