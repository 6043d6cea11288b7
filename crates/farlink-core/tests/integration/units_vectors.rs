//! The unit parsers against the vectors shared with the Python front end
//! (`tests/data/units_vectors.json` at the repository root; `tests/test_units.py` reads the
//! same file for `python/farlink/units.py`).

use farlink_core::units;
use serde_json::Value;

const VECTORS: &str = include_str!("../../../../tests/data/units_vectors.json");

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

mod bits_and_bytes {
    //! Every case spelling of every rate and size unit: a spelling that means bytes is never
    //! read as bits, and one that means bits never as bytes. What a spelling means is decided
    //! here from the spelling alone, independently of the parser's tables.
    use farlink_core::units;
    use proptest::prelude::*;

    /// Prefixes as a person may write them, with their factors.
    const PREFIXES: &[(&str, f64)] = &[
        ("", 1.0),
        ("k", 1e3),
        ("K", 1e3),
        ("m", 1e6),
        ("M", 1e6),
        ("g", 1e9),
        ("G", 1e9),
    ];
    const BINARY: &[(&str, f64)] = &[("Ki", 1024.0), ("Mi", 1_048_576.0), ("Gi", 1_073_741_824.0)];
    const RATE_BASES: &[&str] = &[
        "bps", "b/s", "bit/s", "bits/s", "bit", "bits", "byte/s", "bytes/s",
    ];
    const SIZE_BASES: &[&str] = &["b", "bit", "bits", "byte", "bytes"];

    #[derive(Debug, PartialEq)]
    enum Meaning {
        Bits,
        Bytes,
        /// A single-letter `B` in a unit written all in capitals.
        EitherInCapitals,
    }

    /// What a base spelled with this case means to a reader: the words say it in any case,
    /// the single letter by its case.
    fn meaning(unit: &str, base: &str) -> Meaning {
        let lower = base.to_ascii_lowercase();
        if lower.starts_with("byte") {
            Meaning::Bytes
        } else if lower.starts_with("bit") || base.starts_with('b') {
            Meaning::Bits
        } else if !unit.bytes().any(|c| c.is_ascii_lowercase()) {
            Meaning::EitherInCapitals
        } else {
            Meaning::Bytes
        }
    }

    /// `base` with each letter's case chosen by the bits of `mask`.
    fn with_case(base: &str, mask: u16) -> String {
        base.chars()
            .enumerate()
            .map(|(i, c)| {
                if mask >> i & 1 == 1 {
                    c.to_ascii_uppercase()
                } else {
                    c
                }
            })
            .collect()
    }

    fn close(got: f64, want: f64) -> bool {
        (got - want).abs() <= 1e-12 * want.abs()
    }

    proptest! {
        #[test]
        fn no_byte_rate_is_read_as_bits(
            value in 1e-3f64..1e6,
            prefix in proptest::sample::select(PREFIXES),
            base in proptest::sample::select(RATE_BASES),
            mask in any::<u16>(),
            space in proptest::sample::select(&["", " "][..]),
        ) {
            let (prefix, factor) = prefix;
            let base = with_case(base, mask);
            let unit = format!("{prefix}{base}");
            let text = format!("{value}{space}{unit}");
            let got = units::parse_bitrate_bps(&text);
            match meaning(&unit, &base) {
                Meaning::Bits => prop_assert!(close(got.clone().unwrap(), value * factor), "{text}: {got:?}"),
                Meaning::Bytes => prop_assert!(close(got.clone().unwrap(), value * factor * 8.0), "{text}: {got:?}"),
                Meaning::EitherInCapitals => {
                    let message = got.unwrap_err().message;
                    prop_assert!(message.contains("bits") && message.contains("bytes"), "{message}");
                }
            }
        }

        #[test]
        fn no_size_in_bits_is_read_as_bytes(
            value in 1e-3f64..1e6,
            prefix in proptest::sample::select([PREFIXES, BINARY].concat()),
            base in proptest::sample::select(SIZE_BASES),
            mask in any::<u16>(),
        ) {
            let (prefix, factor) = prefix;
            let base = with_case(base, mask);
            let unit = format!("{prefix}{base}");
            let text = format!("{value}{unit}");
            let got = units::parse_size_bytes(&text, false);
            match meaning(&unit, &base) {
                Meaning::Bits => {
                    let message = got.unwrap_err().message;
                    prop_assert!(message.contains("bits") && message.contains("bytes"), "{message}");
                }
                _ => prop_assert!(close(got.clone().unwrap(), value * factor), "{text}: {got:?}"),
            }
        }
    }
}
