//! Human units for scenario files: `1.5Mbps`, `80ms`, `64KiB`, `1/50min`, `5e-4`.
//!
//! This module owns the reading of a quantity written as text into a float in the base unit its
//! function's name carries (bytes, seconds, bit/s, events per second). It is the Rust twin of
//! `python/farlink/units.py` and must stay identical to it: the same inputs are accepted, they
//! give the same `f64` (the same IEEE operations in the same order: `value * factor`, or
//! `count / (number * factor)` for event rates), and errors carry the same messages. Both are
//! tested against the shared vectors in `tests/data/units_vectors.json` at the repository root.
//!
//! The grammar (Python's regular expression `\s*(NUMBER)\s*([^\d\s].*?)?\s*`, matched whole):
//! optional white space, a decimal number `[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?`, optional
//! white space, an optional unit that starts with neither a digit nor white space and holds no
//! line break, optional white space. Sizes and rates are decimal (`KB` = 1000 bytes, `kbps` =
//! 1000 bit/s) unless written with a binary prefix (`KiB` = 1024 bytes). Unit letters are case
//! insensitive except where case changes the meaning: `B` is a byte and `b` a bit, so `2MBps`
//! is 16 Mbit/s while `2Mbps`, `2mbps` and `2Mbit` are 2 Mbit/s; a rate in capitals (`2MBPS`)
//! could be either and is refused; a size in bits (`5Mb`) is refused rather than converted.
//! `docs/units.md` tabulates every spelling. `1/50min` is one event per 50 minutes, 1/3000 per
//! second.
//!
//! Known differences from the Python parser, all on inputs no scenario should contain: Python's
//! `\d` and `float()` also accept non-ASCII decimal digits (Arabic-Indic and so on), and its
//! `\s` also counts U+001C..U+001F as white space; here digits are ASCII and white space is
//! Rust's `char::is_whitespace`. `parse_count` reads integers up to 2^127 where Python's are
//! unbounded.
//!
//! No I/O, no clock, no allocation beyond the error message.

use std::fmt;

/// The accepted forms of a size, as the error messages quote them.
pub const SIZE_FORMS: &str = "a size in bytes such as 20.6MB, 47.9KB, 1448B, 1448 or 2MiB \
     (KB/MB/GB decimal, KiB/MiB/GiB binary; B is a byte, b a bit)";
/// The accepted forms of a duration.
pub const DURATION_FORMS: &str = "a duration such as 19s, 250ms, 50min, 1.5h or 19 (seconds)";
/// The accepted forms of an event rate.
pub const EVENT_RATE_FORMS: &str =
    "a rate such as 1/50min, 0.02/min, 1.2/h, 1/3000s or 0.001 (per second)";
/// The accepted forms of a bit rate.
pub const BITRATE_FORMS: &str = "a bit rate such as 2400bps, 128kbps, 1.5Mbps, 2Mbit/s or \
     10mbit, or bytes per second such as 250kBps or 2MB/s (b is a bit, B a byte; decimal \
     prefixes)";
/// The accepted forms of a probability.
pub const PROBABILITY_FORMS: &str =
    "a probability strictly between 0 and 1, such as 5e-4, 0.01 or 0.05%";

/// A quantity that could not be read; the message names the input and the accepted forms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitError {
    pub message: String,
}

impl UnitError {
    fn new(message: String) -> Self {
        UnitError { message }
    }
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for UnitError {}

/// Decimal and binary prefixes of sizes and rates (lower case) and their factors. Prefix case
/// never changes the meaning here (`kB` = `KB`; nobody means millibytes by `mB`), so it is
/// compared lower-cased; the case of `B`/`b` is what tells bytes from bits.
const PREFIX_FACTORS: &[(&str, f64, &str, &str)] = &[
    // (prefix, factor, canonical spelling, name)
    ("ki", 1024.0, "Ki", "kibi"),
    ("mi", 1_048_576.0, "Mi", "mebi"),
    ("gi", 1_073_741_824.0, "Gi", "gibi"),
    ("k", 1e3, "K", "kilo"),
    ("m", 1e6, "M", "mega"),
    ("g", 1e9, "G", "giga"),
    ("", 1.0, "", ""),
];

/// What a size or rate unit's base (after its prefix) counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Base {
    Bits,
    Bytes,
    /// `BPS` or `B/S`: written in capitals, the case of `B` says nothing.
    Ambiguous,
}

/// A unit split into its prefix (factor, canonical spelling, name) and its base.
struct Unit {
    /// Length in bytes of the prefix as written.
    prefix_len: usize,
    factor: f64,
    canonical_prefix: &'static str,
    prefix_name: &'static str,
    base: Base,
}

/// Reads the base of a size (`per_second` false: `B`, `byte(s)`, `b`, `bit(s)`) or of a rate
/// (`per_second` true: `Bps`, `B/s`, `byte(s)/s`, `bps`, `b/s`, `bit(s)/s`, and `bit(s)` alone
/// as `tc` writes `kbit`). The words are read in any case; the single letter decides by its
/// case, `B` bytes and `b` bits.
fn base_of(rest: &str, per_second: bool, whole_unit_is_capitals: bool) -> Option<Base> {
    let lower = rest.to_ascii_lowercase();
    let letter = |c: char| {
        if c == 'b' {
            Base::Bits
        } else if per_second && whole_unit_is_capitals {
            Base::Ambiguous
        } else {
            Base::Bytes
        }
    };
    let first = rest.chars().next()?;
    if per_second {
        match lower.as_str() {
            "bit" | "bits" | "bit/s" | "bits/s" => Some(Base::Bits),
            "byte/s" | "bytes/s" => Some(Base::Bytes),
            "bps" | "b/s" => Some(letter(first)),
            _ => None,
        }
    } else {
        match lower.as_str() {
            "bit" | "bits" => Some(Base::Bits),
            "byte" | "bytes" => Some(Base::Bytes),
            "b" => Some(letter(first)),
            _ => None,
        }
    }
}

/// Splits a size or rate unit into prefix and base, trying the longest prefix first (`Kib` is
/// `Ki` + `b`, not `K` + `ib`).
fn read_unit(unit: &str, per_second: bool) -> Option<Unit> {
    // Only ASCII spells a unit; checking so keeps the Python twin's reading identical.
    if !unit.is_ascii() {
        return None;
    }
    let capitals = unit.bytes().any(|b| b.is_ascii_alphabetic())
        && !unit.bytes().any(|b| b.is_ascii_lowercase());
    for &(prefix, factor, canonical_prefix, prefix_name) in PREFIX_FACTORS {
        let Some(head) = unit.get(..prefix.len()) else {
            continue;
        };
        if head.to_ascii_lowercase() != prefix {
            continue;
        }
        // Rates take decimal prefixes only.
        if per_second && prefix.ends_with('i') {
            continue;
        }
        if let Some(base) = base_of(&unit[prefix.len()..], per_second, capitals) {
            return Some(Unit {
                prefix_len: prefix.len(),
                factor,
                canonical_prefix,
                prefix_name,
                base,
            });
        }
    }
    None
}

/// Time units (lower case, and `µs` with the micro sign U+00B5) and their factors to seconds.
const DURATION_FACTORS: &[(&str, f64)] = &[
    ("", 1.0),
    ("ns", 1e-9),
    ("us", 1e-6),
    ("\u{b5}s", 1e-6),
    ("ms", 1e-3),
    ("s", 1.0),
    ("sec", 1.0),
    ("min", 60.0),
    ("h", 3600.0),
    ("hr", 3600.0),
    ("d", 86400.0),
];

fn lookup(table: &[(&str, f64)], key: &str) -> Option<f64> {
    table.iter().find(|(k, _)| *k == key).map(|&(_, f)| f)
}

/// Python's `repr()` of a string, for messages identical to the Python parser's: single
/// quotes unless the text holds a single quote and no double quote; backslash escapes for
/// the quote, backslash, `\t`, `\n`, `\r` and other control characters.
pub fn py_repr(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || (0x7f..0xa0).contains(&(c as u32)) => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// The length in bytes of the longest prefix of `s` matching
/// `[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?`, or `None` if no prefix matches.
fn number_prefix_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_digits = i - int_start;
    if int_digits > 0 {
        if i < b.len() && b[i] == b'.' {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
        }
    } else {
        // `\.\d+`
        if i < b.len() && b[i] == b'.' && i + 1 < b.len() && b[i + 1].is_ascii_digit() {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
        } else {
            return None;
        }
    }
    // Optional exponent, taken only if complete.
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let exp_start = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > exp_start {
            i = j;
        }
    }
    Some(i)
}

/// Splits `text` into a finite number and a unit suffix, as Python's `_split` does.
fn split<'a>(text: &'a str, what: &str, forms: &str) -> Result<(f64, &'a str), UnitError> {
    split_number(text, what, forms).map(|(value, _, unit)| (value, unit))
}

/// As `split`, also handing back the number as written (for messages that suggest a
/// spelling).
fn split_number<'a>(
    text: &'a str,
    what: &str,
    forms: &str,
) -> Result<(f64, &'a str, &'a str), UnitError> {
    let cannot = || {
        UnitError::new(format!(
            "cannot read {what} {}: expected {forms}",
            py_repr(text)
        ))
    };
    let rest = text.trim_start();
    let n = number_prefix_len(rest).ok_or_else(cannot)?;
    let number = &rest[..n];
    let unit = rest[n..].trim();
    if let Some(first) = unit.chars().next() {
        // The unit starts with neither a digit nor white space (the latter holds after the
        // trim) and, like Python's `.`, cannot span a line break.
        if first.is_ascii_digit() || unit.contains('\n') {
            return Err(cannot());
        }
    }
    let value: f64 = number.parse().map_err(|_| cannot())?;
    if !value.is_finite() {
        return Err(cannot());
    }
    Ok((value, number, unit))
}

/// Python's `float()` on a string: surrounding white space, `_` between digits, `inf`,
/// `infinity` and `nan` in any case, with an optional sign.
fn py_float(text: &str) -> Option<f64> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    let cleaned = strip_digit_underscores(t)?;
    cleaned.parse::<f64>().ok()
}

/// Removes `_` that stand between two ASCII digits (PEP 515); `None` for any other `_`.
fn strip_digit_underscores(t: &str) -> Option<String> {
    if !t.contains('_') {
        return Some(t.to_owned());
    }
    let b = t.as_bytes();
    let mut out = String::with_capacity(t.len());
    for (i, c) in t.char_indices() {
        if c == '_' {
            let before = i > 0 && b[i - 1].is_ascii_digit();
            let after = i + 1 < b.len() && b[i + 1].is_ascii_digit();
            if !(before && after) {
                return None;
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// Reads a size in bytes: `20.6MB` → 20.6e6, `2MiB` → 2097152, `1448` → 1448. Zero is
/// accepted only with `allow_zero`. A size written in bits (`5Mb`, `64kbit`) is refused with
/// both readings named: sizes here are byte counts, and `b` for `B` is a typing slip far more
/// often than a size meant in bits, so converting would hide an error eight times over.
pub fn parse_size_bytes(text: &str, allow_zero: bool) -> Result<f64, UnitError> {
    let (value, number, unit) = split_number(text, "size", SIZE_FORMS)?;
    let factor = if unit.is_empty() {
        1.0
    } else {
        let read = read_unit(unit, false).ok_or_else(|| {
            UnitError::new(format!(
                "unknown size unit {} in {}: expected {SIZE_FORMS}",
                py_repr(unit),
                py_repr(text)
            ))
        })?;
        if read.base != Base::Bytes {
            let name = read.prefix_name;
            return Err(UnitError::new(format!(
                "size {} is in {name}bits (b is a bit, B a byte): write {number}{}B for \
                 {number} {name}bytes, or the size in bytes: expected {SIZE_FORMS}",
                py_repr(text),
                read.canonical_prefix,
            )));
        }
        read.factor
    };
    let size = value * factor;
    if size < 0.0 || (size == 0.0 && !allow_zero) {
        return Err(UnitError::new(format!(
            "size {} must be positive: expected {SIZE_FORMS}",
            py_repr(text)
        )));
    }
    Ok(size)
}

/// Reads a duration in seconds: `250ms` → 0.25, `50min` → 3000, `19` → 19. Zero is accepted
/// only with `allow_zero`.
pub fn parse_duration_s(text: &str, allow_zero: bool) -> Result<f64, UnitError> {
    let (value, unit) = split(text, "duration", DURATION_FORMS)?;
    let key = if unit == "\u{b5}s" {
        unit.to_owned()
    } else {
        unit.to_lowercase()
    };
    let factor = lookup(DURATION_FACTORS, &key).ok_or_else(|| {
        UnitError::new(format!(
            "unknown time unit {} in {}: expected {DURATION_FORMS}",
            py_repr(unit),
            py_repr(text)
        ))
    })?;
    let duration = value * factor;
    if duration < 0.0 || (duration == 0.0 && !allow_zero) {
        return Err(UnitError::new(format!(
            "duration {} must be positive: expected {DURATION_FORMS}",
            py_repr(text)
        )));
    }
    Ok(duration)
}

/// Reads an event rate in events per second: `1/50min` → 1/3000, `0.02/min` → 1/3000,
/// `0.001` → 0.001. `N/<duration>` is N events per that duration (seed 000 writes call-drop
/// rates so, Table 5.3); `/<unit>` alone is one per unit. Zero is accepted only with
/// `allow_zero` (the Python default is `True`).
pub fn parse_event_rate_per_s(text: &str, allow_zero: bool) -> Result<f64, UnitError> {
    let raw = text.trim();
    let cannot = || {
        UnitError::new(format!(
            "cannot read rate {}: expected {EVENT_RATE_FORMS}",
            py_repr(text)
        ))
    };
    let rate = if let Some((count_text, period_text)) = raw.split_once('/') {
        let count = if count_text.trim().is_empty() {
            1.0
        } else {
            py_float(count_text).ok_or_else(cannot)?
        };
        // "0.02/min" has no number before the unit: one such period.
        let bare = bare_unit(period_text);
        let (number, unit) = match bare {
            Some(unit) => (1.0, unit),
            None => split(period_text, "rate", EVENT_RATE_FORMS).map_err(|_| cannot())?,
        };
        let factor = lookup(DURATION_FACTORS, &unit.to_lowercase());
        match factor {
            Some(factor) if number > 0.0 && count.is_finite() => count / (number * factor),
            _ => return Err(cannot()),
        }
    } else {
        let (rate, unit) = split(raw, "rate", EVENT_RATE_FORMS)?;
        if !matches!(unit, "" | "/s" | "hz" | "Hz") {
            return Err(UnitError::new(format!(
                "unknown rate unit {} in {}: expected {EVENT_RATE_FORMS}",
                py_repr(unit),
                py_repr(text)
            )));
        }
        rate
    };
    if rate < 0.0 || (rate == 0.0 && !allow_zero) {
        return Err(UnitError::new(format!(
            "rate {} must be positive: expected {EVENT_RATE_FORMS}",
            py_repr(text)
        )));
    }
    Ok(rate)
}

/// Python's `re.fullmatch(r"\s*([^\d\s.+-].*?)\s*", period_text)`: a unit with no number in
/// front of it.
fn bare_unit(period_text: &str) -> Option<&str> {
    let unit = period_text.trim();
    let first = unit.chars().next()?;
    if first.is_ascii_digit() || matches!(first, '.' | '+' | '-') || unit.contains('\n') {
        return None;
    }
    Some(unit)
}

/// Reads a rate in bit/s: `2400bps` → 2400, `1.5Mbps` → 1.5e6, `2Mbit/s` → 2e6, and bytes
/// per second times eight: `2MBps` → 16e6, `250kB/s` → 2e6. `b` is a bit and `B` a byte;
/// `BPS` in capitals could be either and is refused, naming both. A bare number is not a
/// rate (its unit would be ambiguous).
pub fn parse_bitrate_bps(text: &str) -> Result<f64, UnitError> {
    let (value, number, unit) = split_number(text, "bit rate", BITRATE_FORMS)?;
    let read = read_unit(unit, true).ok_or_else(|| {
        UnitError::new(format!(
            "unknown bit-rate unit {} in {}: expected {BITRATE_FORMS}",
            py_repr(unit),
            py_repr(text)
        ))
    })?;
    let factor = match read.base {
        Base::Bits => read.factor,
        Base::Bytes => read.factor * 8.0,
        Base::Ambiguous => {
            let name = read.prefix_name;
            // The prefix as written: in capitals, like the rest of the unit.
            let prefix = &unit[..read.prefix_len];
            return Err(UnitError::new(format!(
                "bit rate {} is ambiguous (in capitals B may be a bit or a byte): write \
                 {number}{prefix}bps for {name}bits or {number}{prefix}Bps for {name}bytes per \
                 second: expected {BITRATE_FORMS}",
                py_repr(text),
            )));
        }
    };
    let rate = value * factor;
    if rate <= 0.0 {
        return Err(UnitError::new(format!(
            "bit rate {} must be positive: expected {BITRATE_FORMS}",
            py_repr(text)
        )));
    }
    Ok(rate)
}

/// Reads a probability strictly inside (0, 1): `5e-4` → 0.0005, `0.05%` → 0.0005.
pub fn parse_probability(text: &str) -> Result<f64, UnitError> {
    let (mut value, unit) = split(text, "probability", PROBABILITY_FORMS)?;
    if unit == "%" {
        value /= 100.0;
    } else if !unit.is_empty() {
        return Err(UnitError::new(format!(
            "cannot read probability {}: expected {PROBABILITY_FORMS}",
            py_repr(text)
        )));
    }
    if !(0.0 < value && value < 1.0) {
        return Err(UnitError::new(format!(
            "probability {} is outside (0, 1): expected {PROBABILITY_FORMS}",
            py_repr(text)
        )));
    }
    Ok(value)
}

/// Reads a whole number no smaller than `minimum` (Python's `int()`: sign, surrounding white
/// space and `_` between digits allowed).
pub fn parse_count(text: &str, minimum: i128) -> Result<i128, UnitError> {
    let cannot = || {
        UnitError::new(format!(
            "cannot read {}: expected a whole number >= {minimum}",
            py_repr(text)
        ))
    };
    let t = text.trim();
    let cleaned = strip_digit_underscores(t).ok_or_else(cannot)?;
    let digits = cleaned.trim_start_matches(['+', '-']);
    if digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || cleaned.len() - digits.len() > 1
    {
        return Err(cannot());
    }
    let value: i128 = cleaned.parse().map_err(|_| cannot())?;
    if value < minimum {
        return Err(UnitError::new(format!(
            "{} is too small: expected a whole number >= {minimum}",
            py_repr(text)
        )));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_prefix_follows_the_python_pattern() {
        assert_eq!(number_prefix_len("1.5Mbps"), Some(3));
        assert_eq!(number_prefix_len(".5s"), Some(2));
        assert_eq!(number_prefix_len("5."), Some(2));
        assert_eq!(number_prefix_len("1e3 bytes"), Some(3));
        assert_eq!(number_prefix_len("1e+ms"), Some(1), "incomplete exponent");
        assert_eq!(number_prefix_len("-2E-3"), Some(5));
        assert_eq!(number_prefix_len("."), None);
        assert_eq!(number_prefix_len("MB"), None);
        assert_eq!(number_prefix_len("+"), None);
    }

    #[test]
    fn messages_match_the_python_parser() {
        assert_eq!(
            parse_size_bytes("12 parsecs", false).unwrap_err().message,
            format!("unknown size unit 'parsecs' in '12 parsecs': expected {SIZE_FORMS}")
        );
        assert_eq!(
            parse_bitrate_bps("2400").unwrap_err().message,
            format!("unknown bit-rate unit '' in '2400': expected {BITRATE_FORMS}")
        );
        assert_eq!(
            parse_count("0", 1).unwrap_err().message,
            "'0' is too small: expected a whole number >= 1"
        );
    }

    #[test]
    fn repr_quotes_like_python() {
        assert_eq!(py_repr("abc"), "'abc'");
        assert_eq!(py_repr("it's"), "\"it's\"");
        assert_eq!(py_repr("a\"b'c"), "'a\"b\\'c'");
        assert_eq!(py_repr("x\ny"), "'x\\ny'");
    }

    #[test]
    fn python_float_accepts_underscores_between_digits_only() {
        assert_eq!(py_float(" 1_000 "), Some(1000.0));
        assert_eq!(py_float("1__0"), None);
        assert_eq!(py_float("_1"), None);
        assert!(py_float("inf").unwrap().is_infinite());
        assert!(py_float("NaN").unwrap().is_nan());
    }
}
