//! Arbitrary text into every parser of `farlink_core::units`: none panics, every refusal has
//! a message that quotes the input, and every value accepted lies in the parser's domain.

#![no_main]

use farlink_core::units::{
    parse_bitrate_bps, parse_count, parse_duration_s, parse_event_rate_per_s, parse_probability,
    parse_size_bytes, py_repr, UnitError,
};
use libfuzzer_sys::fuzz_target;

/// The minimums `parse_count` is asked for.
const MINIMUMS: [i128; 6] = [i128::MIN, -1, 0, 1, 64, i128::MAX];

fuzz_target!(|data: &[u8]| {
    // The input is the text itself, so that seeds are readable; invalid UTF-8 never reaches
    // the parsers (their callers hold `str`).
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let repr = py_repr(text);
    assert!(repr.len() >= 2, "{repr}");
    assert!(
        !repr.chars().any(|c| c == '\n' || c == '\r' || c == '\t'),
        "repr keeps a control character: {repr}"
    );

    // Values follow Python's float arithmetic, so a huge number times its unit may be +inf,
    // as in Python; NaN and negative values never get through.
    let non_negative = |r: Result<f64, UnitError>, zero_ok: bool| {
        match r {
            Ok(v) => {
                assert!(!v.is_nan() && v >= 0.0, "{text:?} gave {v}");
                assert!(zero_ok || v > 0.0, "{text:?} gave zero");
            }
            Err(e) => assert!(!e.message.is_empty(), "{text:?}: empty message"),
        };
    };
    for allow_zero in [false, true] {
        non_negative(parse_size_bytes(text, allow_zero), allow_zero);
        non_negative(parse_duration_s(text, allow_zero), allow_zero);
        non_negative(parse_event_rate_per_s(text, allow_zero), allow_zero);
    }
    non_negative(parse_bitrate_bps(text), false);
    match parse_probability(text) {
        Ok(p) => assert!(p > 0.0 && p < 1.0, "{text:?} gave {p}"),
        Err(e) => assert!(!e.message.is_empty()),
    }
    for minimum in MINIMUMS {
        match parse_count(text, minimum) {
            Ok(n) => assert!(n >= minimum, "{text:?} gave {n} < {minimum}"),
            Err(e) => assert!(e.message.contains(&repr), "{:?} lacks {repr}", e.message),
        }
    }
});
