"""One result shape: what `simulate --json` prints, summary.json holds and `Result.summary` is.

Checked against docs/result.schema.json on real runs of several presets and real predictions.
"""

import json
from pathlib import Path

import jsonschema
import pytest

from farlink import _core
from farlink.cli.app import main
from farlink.results import schema as result_schema
from farlink.scenario import load_scenario
from farlink.sim import simulate

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "docs" / "result.schema.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def check(doc):
    errors = sorted(VALIDATOR.iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])


def test_the_schema_is_a_valid_json_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["properties"]["schema_version"]["const"] == result_schema.RESULT_SCHEMA_VERSION


# Presets of every kind: a dumbbell, several flows, a split connection, an RLP radio hop and an
# Iridium bundle with call drops, each short.
PRESETS = [
    ("stpd-wireless", "5s"),
    ("stpd-fixed-bottleneck", "30s"),
    ("marchese-geo-stp", "5s"),
    ("is707", "20s"),
    ("iridium-3", "5min"),
]


@pytest.mark.parametrize(("preset", "duration"), PRESETS)
def test_simulate_json_is_summary_json_and_matches_the_schema(capsys, tmp_path, preset, duration):
    code = main(["simulate", preset, "--duration", duration, "--json", "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    printed = json.loads(out)
    stored = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    # One shape: the document printed is the one stored, unchanged.
    assert printed == stored
    check(stored)
    assert stored["engine"] == "sim" and stored["scenario"] == preset
    # The aggregate sits at the top level with transfer_time_s (summary.json nested it under
    # "aggregate" and left transfer_time_s out before schema 2).
    assert "aggregate" not in stored
    assert "transfer_time_s" in stored and "normalized_goodput" in stored


def test_the_document_carries_the_cores_figures_unchanged():
    doc = load_scenario("stpd-wireless")
    doc["duration"] = "5s"
    core = json.loads(_core.run_scenario(json.dumps(doc))["summary"])
    result = simulate("stpd-wireless", duration="5s")
    check(result.summary)
    for key, value in core["aggregate"].items():
        assert result.summary[key] == value, key
    assert result.summary["flows"] == core["flows"]
    assert result.summary["links"] == core["links"]
    assert result.summary["seed"] == core["seed"]


def test_transfer_time_is_the_last_bulk_transfers():
    result = simulate("stpd-wireless", size="200KB", duration="60s", sets=["trace={}"])
    flows = result.summary["flows"]
    assert all(f["transfer_time_s"] is not None for f in flows)
    assert result.summary["transfer_time_s"] == max(f["transfer_time_s"] for f in flows)
    unfinished = simulate("stpd-wireless", duration="1s", sets=["trace={}"]).summary
    assert unfinished["transfer_time_s"] is None


def test_to_parquet_writes_the_document(tmp_path):
    result = simulate("stpd-wireless", duration="2s", sets=["trace={}"])
    result.to_parquet(tmp_path)
    assert json.loads((tmp_path / "summary.json").read_text()) == result.summary


PREDICTIONS = [
    ["calldrop", "--size", "20.6MB"],
    ["calldrop", "--size", "1MB", "--wmax", "none"],
    ["pftk", "--rtt", "600ms", "--loss", "1e-3"],
    ["mathis", "--rtt", "600ms", "--loss", "1e-3"],
    ["short", "--size", "50KB", "--rtt", "600ms", "--loss", "0.01"],
    ["stpd"],
    ["iridium-rtt", "--arq-time", "1.5s"],
    ["drop-loss", "--detect", "10s", "--segment", "1.5KB", "--wmax", "22.5KB"],
]


@pytest.mark.parametrize("argv", PREDICTIONS, ids=lambda a: " ".join(a))
def test_predictions_are_result_documents(capsys, tmp_path, argv):
    code = main(["predict", *argv, "--json", "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    printed = json.loads(out)
    assert printed == json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    check(printed)
    assert printed["engine"] == "model" and printed["model"] == argv[0]
    if "throughput_bps" in printed:
        assert printed["goodput_bps"] == printed["throughput_bps"]


def test_an_old_nested_summary_does_not_pass():
    old = {"schema_version": 1, "aggregate": {"goodput_bps": 1.0}, "flows": [], "links": []}
    assert list(VALIDATOR.iter_errors(old))


def test_the_doc_describes_every_field_of_the_schema():
    text = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    for name in SCHEMA["properties"]:
        assert f"`{name}`" in text, name


def test_simulates_flow_keys_are_accepted_as_emulate_gives_them_null_included():
    # emulate fills simulate's flow keys from the kernel, null where it cannot say
    # (docs/emulator.md): the schema takes both, and simulate's numbers.
    flow = SCHEMA["$defs"]["flow"]["properties"]
    sim_flow = simulate("stpd-wireless", duration="5s", sets=["trace={}"]).summary["flows"][0]
    emulated = {
        "segments_sent": None,
        "fast_retransmits": None,
        "min_rtt_s": None,
        "limited_by": None,
        "limited_s": {
            "application": 0.0,
            "receive_window": 0.4,
            "send_buffer": 0.0,
            "congestion_window": 7.2,
            "link": None,
        },
    }
    for key, value in emulated.items():
        jsonschema.validate(value, flow[key])
        jsonschema.validate(sim_flow[key], flow[key])
    jsonschema.validate(None, SCHEMA["properties"]["fast_retransmits"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"application": 1.0}, flow["limited_s"])


@pytest.mark.parametrize(
    ("preset", "sets"),
    [("marchese-geo-stp", []), ("iridium-3", ["flows[0].tcp.handshake=true"])],
)
def test_the_schema_describes_every_key_of_the_cores_flow_summary(preset, sets):
    # The schema's flow is the core's FlowSummary: no key of it goes undescribed (a split
    # connection's relays and segments, a handshake included).
    described = set(SCHEMA["$defs"]["flow"]["properties"])
    flows = simulate(preset, duration="5s", sets=["trace={}", *sets]).summary["flows"]
    assert any(f["relays"] or "handshake" in f for f in flows)
    for flow in flows:
        for f in [flow, *flow["segments"]]:
            assert set(f) <= described, set(f) - described
