"""`flows[N].app.shutdown`: when a bulk sender shuts down its writing half (docs/scenarios.md).
What the emulator does with it is tested in farlink-emu's `sockets` unit tests (loopback)."""

import json

from farlink.scenario import apply_overrides, load_scenario
from support import assert_one_error, run

ACKNOWLEDGED = 'flows[0].app.shutdown="acknowledged"'


def test_the_resolved_scenario_shows_acknowledged_and_leaves_the_default_out(capsys):
    code, out, err = run(capsys, "scenario", "show", "iridium-4", "--json", "--set", ACKNOWLEDGED)
    assert code == 0, err
    assert json.loads(out)["flows"][0]["app"]["shutdown"] == "acknowledged"
    code, out, err = run(capsys, "scenario", "show", "iridium-4", "--json")
    assert code == 0, err
    assert "shutdown" not in json.loads(out)["flows"][0]["app"]


def test_a_new_size_keeps_the_shutdown():
    doc = apply_overrides(load_scenario("iridium-4"), sets=[ACKNOWLEDGED])
    resized = apply_overrides(doc, size="100KB")
    assert resized["flows"][0]["app"] == {
        "kind": "bulk",
        "size": "100KB",
        "shutdown": "acknowledged",
    }


def test_a_bad_shutdown_is_one_line_naming_its_place(capsys):
    code, _, err = run(
        capsys, "scenario", "show", "iridium-4", "--set", 'flows[0].app.shutdown="closed"'
    )
    assert_one_error(code, err, "flows[0].app.shutdown", '"written" or "acknowledged"', "closed")
