"""Human units: what the command line and scenario files accept."""

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from farlink import units


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("20.6MB", 20.6e6),
        ("47.9KB", 47.9e3),
        ("47.9kB", 47.9e3),
        ("1448", 1448.0),
        ("1448B", 1448.0),
        ("2MiB", 2 * 1024**2),
        ("1 KiB", 1024.0),
        ("1e3 bytes", 1000.0),
    ],
)
def test_sizes(text, expected):
    assert units.parse_size_bytes(text) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("19s", 19.0), ("250ms", 0.25), ("50min", 3000.0), ("1.5h", 5400.0), ("19", 19.0)],
)
def test_durations(text, expected):
    assert units.parse_duration_s(text) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1/50min", 1 / 3000),
        ("1/50 min", 1 / 3000),
        ("0.02/min", 0.02 / 60),
        ("1.2/h", 1.2 / 3600),
        ("1/3000s", 1 / 3000),
        ("0.001", 0.001),
        ("0", 0.0),
    ],
)
def test_event_rates(text, expected):
    assert units.parse_event_rate_per_s(text) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2400bps", 2400.0), ("2.4kbps", 2400.0), ("128kbps", 128e3), ("1.5Mbps", 1.5e6)],
)
def test_bitrates(text, expected):
    assert units.parse_bitrate_bps(text) == pytest.approx(expected)


@pytest.mark.parametrize(("text", "expected"), [("5e-4", 5e-4), ("0.05%", 5e-4), ("0.5", 0.5)])
def test_probabilities(text, expected):
    assert units.parse_probability(text) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("parser", "text", "fragment"),
    [
        (units.parse_size_bytes, "0MB", "must be positive"),
        (units.parse_size_bytes, "-3KB", "must be positive"),
        (units.parse_size_bytes, "12 parsecs", "unknown size unit 'parsecs'"),
        (units.parse_size_bytes, "MB", "cannot read size"),
        (units.parse_size_bytes, "nan", "cannot read size"),
        (units.parse_duration_s, "10 fortnights", "unknown time unit"),
        (units.parse_event_rate_per_s, "1/0min", "cannot read rate"),
        (units.parse_event_rate_per_s, "1/50parsecs", "cannot read rate"),
        (units.parse_bitrate_bps, "2400", "unknown bit-rate unit"),
        (units.parse_probability, "0", "outside (0, 1)"),
        (units.parse_probability, "1", "outside (0, 1)"),
        (units.parse_probability, "150%", "outside (0, 1)"),
        (units.parse_count, "2.5", "whole number"),
        (units.parse_count, "0", "too small"),
    ],
)
def test_bad_input_names_what_was_given_and_what_is_accepted(parser, text, fragment):
    with pytest.raises(units.UnitError) as info:
        parser(text)
    message = str(info.value)
    assert fragment in message
    assert "expected" in message


@given(
    value=st.floats(1e-3, 1e12),
    unit=st.sampled_from(["B", "KB", "MB", "GB", "KiB", "MiB", "GiB"]),
)
def test_size_round_trip(value, unit):
    factor = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 1024, "MiB": 1024**2}.get(
        unit, 1024**3
    )
    assert units.parse_size_bytes(f"{value!r}{unit}") == pytest.approx(value * factor)


@given(st.text(max_size=20))
def test_size_parser_never_raises_anything_but_unit_error(text):
    try:
        units.parse_size_bytes(text)
    except units.UnitError:
        pass


VECTORS = json.loads((Path(__file__).parent / "data" / "units_vectors.json").read_text())


@pytest.mark.parametrize("case", VECTORS["cases"], ids=lambda c: f"{c['parser']}:{c['input']!r}")
def test_shared_vectors_with_the_rust_parser(case):
    # The Rust core reads scenario quantities with crates/farlink-core/src/units.rs, tested
    # against the same file: both front ends must read every quantity alike.
    parser = getattr(units, case["parser"])
    kwargs = case.get("kwargs", {})
    if "error" in case:
        with pytest.raises(units.UnitError) as info:
            parser(case["input"], **kwargs)
        assert case["error"] in str(info.value)
        assert "expected" in str(info.value)
    else:
        assert parser(case["input"], **kwargs) == pytest.approx(
            case["expected"], rel=1e-12, abs=1e-300
        )
