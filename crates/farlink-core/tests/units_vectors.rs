//! The unit parsers against the vectors shared with the Python front end
//! (`tests/data/units_vectors.json` at the repository root; `tests/test_units.py` reads the
//! same file for `python/farlink/units.py`).

use farlink_core::units;
use serde_json::Value;

const VECTORS: &str = include_str!("../../../tests/data/units_vectors.json");

fn kwarg_bool(case: &Value, name: &str, default: bool) -> bool {
    case.get("kwargs")
        .and_then(|k| k.get(name))
        .and_then(Value::as_bool)
        .unwrap_or(default)
}

fn run(case: &Value) -> Result<f64, units::UnitError> {
    let input = case["input"].as_str().expect("input is a string");
    match case["parser"].as_str().expect("parser is a string") {
        "parse_size_bytes" => units::parse_size_bytes(input, kwarg_bool(case, "allow_zero", false)),
        "parse_duration_s" => units::parse_duration_s(input, kwarg_bool(case, "allow_zero", false)),
        "parse_event_rate_per_s" => {
            units::parse_event_rate_per_s(input, kwarg_bool(case, "allow_zero", true))
        }
        "parse_bitrate_bps" => units::parse_bitrate_bps(input),
        "parse_probability" => units::parse_probability(input),
        "parse_count" => {
            let minimum = case
                .get("kwargs")
                .and_then(|k| k.get("minimum"))
                .and_then(Value::as_i64)
                .unwrap_or(1);
            units::parse_count(input, i128::from(minimum)).map(|v| v as f64)
        }
        other => panic!("unknown parser {other} in the vectors"),
    }
}

#[test]
fn every_shared_vector_passes() {
    let doc: Value = serde_json::from_str(VECTORS).expect("the vector file is JSON");
    assert_eq!(doc["schema"], 1);
    let cases = doc["cases"].as_array().expect("cases");
    assert!(cases.len() > 50);
    let mut failures = Vec::new();
    for case in cases {
        let got = run(case);
        match (
            case.get("expected").and_then(Value::as_f64),
            case.get("error"),
        ) {
            (Some(want), None) => match got {
                Ok(v) if v == want || (v - want).abs() <= 1e-12 * want.abs() => {}
                other => failures.push(format!("{case}: got {other:?}")),
            },
            (None, Some(fragment)) => {
                let fragment = fragment.as_str().expect("error fragment");
                match got {
                    Err(e) if e.message.contains(fragment) && e.message.contains("expected") => {}
                    other => failures.push(format!("{case}: got {other:?}")),
                }
            }
            _ => failures.push(format!("{case}: needs exactly one of expected / error")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
