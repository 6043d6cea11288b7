"""Human units: what the command line and scenario files accept."""

import importlib.util
import json
import re
import tomllib
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
    [
        ("2400bps", 2400.0),
        ("2.4kbps", 2400.0),
        ("128kbps", 128e3),
        ("1.5Mbps", 1.5e6),
        ("10mbit", 10e6),
        # Bytes per second are eight bits each: these were read as bit/s before.
        ("2MBps", 16e6),
        ("2MB/s", 16e6),
        ("250kBps", 2e6),
    ],
)
def test_bitrates(text, expected):
    assert units.parse_bitrate_bps(text) == pytest.approx(expected)


def test_a_size_in_bits_is_refused_naming_both_readings():
    # "--size 5Mb" was read as five megabytes, eight times the five megabits written.
    with pytest.raises(units.UnitError) as info:
        units.parse_size_bytes("5Mb")
    message = str(info.value)
    assert "megabits" in message
    assert "5MB for 5 megabytes" in message


def test_a_rate_in_capitals_is_refused_naming_both_readings():
    with pytest.raises(units.UnitError) as info:
        units.parse_bitrate_bps("2MBPS")
    assert "write 2Mbps for megabits or 2MBps for megabytes per second" in str(info.value)


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


def _vectors_of(parser):
    return {c["input"]: c for c in VECTORS["cases"] if c["parser"] == parser}


RATE_PREFIXES = ["", "k", "K", "m", "M", "g", "G"]
SIZE_PREFIXES = [*RATE_PREFIXES, "Ki", "Mi", "Gi"]


def test_the_vectors_list_every_case_sensitive_pair():
    # Where the case of one letter turns bits into bytes, both spellings are vectors, for
    # every prefix, and they are read differently.
    rates = _vectors_of("parse_bitrate_bps")
    sizes = _vectors_of("parse_size_bytes")
    wanted = [(rates, f"2{p}b{s}", f"2{p}B{s}") for p in RATE_PREFIXES for s in ("ps", "/s")]
    wanted += [(sizes, f"2{p}b", f"2{p}B") for p in SIZE_PREFIXES]
    for table, bits, byts in wanted:
        assert table[bits]["means"] == "bits" and table[bits]["pair"] == byts
        assert table[byts]["means"] == "bytes" and table[byts]["pair"] == bits
        assert table[bits].get("expected") != table[byts].get("expected")
    for prefix in ["", "K", "M", "G"]:
        for suffix in ("PS", "/S"):
            assert rates[f"2{prefix}B{suffix}"]["means"] == "ambiguous"
            assert "error" in rates[f"2{prefix}B{suffix}"]
    for case in VECTORS["cases"]:
        if "pair" in case:
            other = _vectors_of(case["parser"])[case["pair"]]
            assert other["pair"] == case["input"]
            assert other["input"].lower() == case["input"].lower()


def _meaning(unit: str, base: str) -> str:
    """What a base spelled so means to a reader: words in any case, the letter by its case.

    Decided from the spelling alone, independently of the parser's tables.
    """
    if base.lower().startswith("byte"):
        return "bytes"
    if base.lower().startswith("bit") or base.startswith("b"):
        return "bits"
    return "either" if not any(c.islower() for c in unit) else "bytes"


def _cased(base: str, upper: list[bool]) -> str:
    return "".join(c.upper() if up else c for c, up in zip(base, upper, strict=False))


@given(
    value=st.floats(1e-3, 1e6),
    prefix=st.sampled_from(RATE_PREFIXES),
    base=st.sampled_from(["bps", "b/s", "bit/s", "bits/s", "bit", "bits", "byte/s", "bytes/s"]),
    upper=st.lists(st.booleans(), min_size=7, max_size=7),
    space=st.sampled_from(["", " "]),
)
def test_no_byte_rate_is_ever_read_as_bits(value, prefix, base, upper, space):
    factor = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9}[prefix.lower()]
    base = _cased(base, upper)
    unit = prefix + base
    text = f"{value!r}{space}{unit}"
    meaning = _meaning(unit, base)
    if meaning == "either":
        with pytest.raises(units.UnitError, match=r"bits or .*bytes per second"):
            units.parse_bitrate_bps(text)
        return
    want = value * factor * (8.0 if meaning == "bytes" else 1.0)
    assert units.parse_bitrate_bps(text) == pytest.approx(want, rel=1e-12)


@given(
    value=st.floats(1e-3, 1e6),
    prefix=st.sampled_from(SIZE_PREFIXES),
    base=st.sampled_from(["b", "bit", "bits", "byte", "bytes"]),
    upper=st.lists(st.booleans(), min_size=5, max_size=5),
)
def test_no_size_in_bits_is_ever_read_as_bytes(value, prefix, base, upper):
    factor = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "ki": 1024.0, "mi": 1024.0**2}.get(
        prefix.lower(), 1024.0**3
    )
    base = _cased(base, upper)
    text = f"{value!r}{prefix}{base}"
    if _meaning(prefix + base, base) == "bits":
        with pytest.raises(units.UnitError, match=r"bits .*bytes"):
            units.parse_size_bytes(text)
    else:
        assert units.parse_size_bytes(text) == pytest.approx(value * factor, rel=1e-12)


def test_the_units_page_is_the_one_the_vectors_generate():
    # docs/units.md is written by tools/units_table.py from the vectors; a vector added or
    # changed without rewriting the page fails here.
    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("units_table", root / "tools" / "units_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    committed = (root / "docs" / "units.md").read_text(encoding="utf-8")
    assert committed == module.page(), "run `python tools/units_table.py --write`"


def _old_reading(kind: str, text: str) -> float | None:
    """How the parsers read a quantity before case mattered (units compared lower-cased)."""
    match = re.fullmatch(r"\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*(\S*?)\s*", text)
    if match is None:
        return None
    unit = match.group(2).lower()
    if kind == "rate":
        unit = unit.replace("bit/s", "bps").replace("b/s", "bps")
        factors = {"bps": 1.0, "kbps": 1e3, "mbps": 1e6, "gbps": 1e9}
    else:
        factors = {"b": 1.0, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 1024.0, "mib": 1024.0**2}
        factors |= {"gib": 1024.0**3, "byte": 1.0, "bytes": 1.0}
    factor = factors.get(unit)
    return None if factor is None else float(match.group(1)) * factor


def _strings(node):
    if isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)
    elif isinstance(node, str):
        yield node


def test_every_preset_quantity_reads_as_before():
    # Only spellings whose meaning was wrong change; every rate and size in the presets is
    # written as the unambiguous Mbps, kbps, bps, KB, MB, KiB, MiB and reads the same value.
    seen = 0
    for path in sorted((Path(units.__file__).parent / "scenarios").glob("*.toml")):
        for text in _strings(tomllib.loads(path.read_text(encoding="utf-8"))):
            for kind, parser in (
                ("rate", units.parse_bitrate_bps),
                ("size", units.parse_size_bytes),
            ):
                before = _old_reading(kind, text)
                if before is not None and re.search(r"[a-zA-Z]", text):
                    assert parser(text) == before, (path.name, text)
                    seen += 1
    assert seen > 50


def test_a_rate_in_bytes_per_second_reaches_the_engine_times_eight():
    from farlink.sim import simulate

    result = simulate("stpd-wireless", duration="1s", sets=['links[1].rate="250kBps"', "trace={}"])
    assert result.summary["links"][1]["fwd"]["rate_bps"] == 2_000_000


def test_a_size_in_bits_on_the_command_line_is_one_line_and_exit_2(capsys):
    from farlink.cli.app import main

    code = main(["predict", "short", "--size", "5Mb", "--rtt", "600ms", "--loss", "0.01"])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("farlink: error: --size: ")
    assert "5Mb" in err and "megabits" in err and "5MB" in err
