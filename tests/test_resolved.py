"""The resolved scenario: the core fills every default once; Python consumers read it."""

import json
import re
from pathlib import Path

import pytest

from farlink import _core
from farlink.models import pftk_full_throughput
from farlink.scenario import apply_overrides, load_scenario, resolve
from farlink.sweeps.model import model_normalized_goodput, pftk_inputs
from farlink.sweeps.run import plan
from farlink.sweeps.sweep import sweep_from_options

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "farlink"


def test_resolve_fills_defaults_and_marks_them():
    r = resolve(load_scenario("stpd-wireless"))
    assert r["resolved_schema_version"] == 1
    tcp = r["flows"][0]["tcp"]
    assert (tcp["mss_bytes"], tcp["payload_bytes"], tcp["receive_buffer_bytes"]) == (
        960,
        948,
        131072,
    )
    assert "flows[0].tcp.min_rto_s" in r["defaults"]
    assert "flows[0].tcp.mss_bytes" not in r["defaults"]
    assert [(h["link"], h["direction"]) for h in r["flows"][0]["route"]["ack"]] == [
        ("R-D", "rev"),
        ("S-R", "rev"),
    ]
    assert r["links"][1]["fwd"]["loss_rate"] == pytest.approx(0.01)


def test_resolve_raises_the_cores_scenario_error():
    doc = load_scenario("stpd-wireless")
    doc["links"][1]["queue_pkts"] = "many"
    with pytest.raises(_core.ScenarioError) as err:
        resolve(doc)
    assert err.value.path == "links[1].queue_pkts"


def test_model_column_follows_the_scenario_document():
    """MSS, rate and delay changed in the document move the model's inputs as the core says."""
    doc = apply_overrides(load_scenario("stpd-wireless"), loss=0.01)
    base = pftk_inputs(doc)
    changed = apply_overrides(
        doc,
        sets=["flows[0].tcp.mss_bytes=500", "links[1].rate=750kbps", "links[1].delay=200ms"],
    )
    x = pftk_inputs(changed)
    assert base is not None and x is not None
    assert (x.payload_bytes, x.wire_bytes, x.bottleneck_bps) == (488, 540, 750_000)
    # Propagation both ways on both hops, one data packet out and one 52-byte ACK back.
    rtt = 2 * (0.0001 + 0.2) + (540 + 52) * 8 / 10e6 + (540 + 52) * 8 / 750e3
    assert x.rtt_s == pytest.approx(rtt)
    assert x.wmax_pkts == pytest.approx(131072 / 488)
    column = model_normalized_goodput([doc, changed])
    want = min(pftk_full_throughput(0.01, rtt, 1.0, 2, 131072 / 488) * 488, 750e3 / 8 * 488 / 540)
    assert column[1] == pytest.approx(want / (750e3 / 8))
    assert column[0] != pytest.approx(column[1])


def test_model_column_takes_its_defaults_from_the_core(monkeypatch):
    """Were the core's TCP defaults different, the sweep's model column would follow."""
    real = _core.resolve_scenario

    def other_defaults(text: str) -> str:
        resolved = json.loads(real(text))
        tcp = resolved["flows"][0]["tcp"]
        if "flows[0].tcp.min_rto_s" in resolved["defaults"]:
            tcp["min_rto_s"] = 0.2
        if "flows[0].tcp.receive_buffer_bytes" in resolved["defaults"]:
            tcp["receive_buffer_bytes"] = 65536
        return json.dumps(resolved)

    sweep = sweep_from_options("stpd-wireless", grid=["loss=0.05"])
    before = plan(sweep)[0].model
    monkeypatch.setattr(_core, "resolve_scenario", other_defaults)
    after = plan(sweep)[0].model
    x = pftk_inputs(apply_overrides(load_scenario("stpd-wireless"), loss=0.05))
    assert x is not None and (x.t0_s, x.wmax_pkts) == (0.2, 65536 / 948)
    rate = pftk_full_throughput(0.05, x.rtt_s, 0.2, 2, 65536 / 948) * 948
    assert after == pytest.approx(rate / (1.5e6 / 8))
    assert after != pytest.approx(before)


# What a default of the core looks like when written again in Python.
_REDERIVED = [
    (re.compile(r"""get\(['"]a['"]\)\}-\{"""), "the default link name"),
    (re.compile(r"""\b(1460|131072)\b"""), "a TCP default (MSS, receive buffer)"),
    (re.compile(r"""["']rate_bps["']\s+(in|not in)\b"""), "the rate/rate_bps spelling rule"),
    (re.compile(r"""def _route\b|def _link_name\b"""), "routing or link naming"),
]


_CLI_MODULES = sorted(f"cli/{path.name}" for path in (PACKAGE / "cli").glob("*.py"))
_CONSUMERS = ["sweeps/sweep.py", "scenario.py", "demo.py", "sim.py", *_CLI_MODULES]


@pytest.mark.parametrize("name", _CONSUMERS)
def test_consumers_do_not_rederive_the_cores_defaults(name):
    text = (PACKAGE / name).read_text(encoding="utf-8")
    found = [
        f"{name}:{text.count(chr(10), 0, m.start()) + 1}: {what}"
        for pattern, what in _REDERIVED
        for m in pattern.finditer(text)
    ]
    assert not found, found
