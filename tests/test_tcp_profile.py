"""TCP profiles (`[flows.tcp] profile`, `--profile`): `linux` is Linux's connection and sender in
one word, the same scenario as farlink.linux_tcp's `--set` lines, and `rfc` changes nothing."""

import json

import pytest

from farlink import _core, simulate
from farlink.cli.app import main
from farlink.linux_tcp import (
    LINUX_CC_NAMES,
    LINUX_CONNECTION,
    LINUX_SENDER,
    LINUX_SOURCES,
    linux_sets,
)
from farlink.scenario import apply_overrides, load_scenario, resolve, resolved_rows
from farlink.sweeps.sweep import point_doc, sweep_from_options


def _without_profile(resolved: dict) -> dict:
    """The resolved scenario less what says where values came from, and the profile's name."""
    out = {k: v for k, v in resolved.items() if k not in ("defaults", "from_profile")}
    out["flows"] = [{**f, "tcp": {k: v for k, v in f["tcp"].items() if k != "profile"}}
                    for f in resolved["flows"]]  # fmt: skip
    return out


@pytest.mark.parametrize("cc", ["cubic", "reno", "bbr", "cubic-linux"])
def test_the_linux_profile_resolves_as_linux_sets_did(cc):
    doc = load_scenario("stpd-wireless")
    profiled = resolve(apply_overrides(doc, tcp=cc, loss=0.01, profile="linux"))
    spelled = resolve(apply_overrides(doc, tcp=cc, loss=0.01, sets=linux_sets(0, cc)))
    assert profiled["flows"][0]["tcp"]["profile"] == "linux"
    assert _without_profile(profiled) == _without_profile(spelled)
    # The preset's Reno recovery gives way to Linux's with a controller named on the command
    # line, as it does to the --set lines.
    assert profiled["flows"][0]["tcp"]["recovery"] == "rack"


def test_rfc_is_the_document_unchanged():
    doc = load_scenario("stpd-wireless")
    for tcp in (None, "cubic", "reno"):
        plain = _core.resolve_scenario(json.dumps(apply_overrides(doc, tcp=tcp)))
        rfc = _core.resolve_scenario(json.dumps(apply_overrides(doc, tcp=tcp, profile="rfc")))
        assert rfc == plain
        assert "from_profile" not in json.loads(rfc)


def test_a_profiled_run_is_the_spelled_out_run():
    kwargs = {"tcp": "cubic", "loss": 0.01, "duration": "20s", "sets": ["trace={}"]}
    profiled = simulate("stpd-wireless", profile="linux", **kwargs)
    spelled = simulate("stpd-wireless", **{**kwargs, "sets": [*linux_sets(0, "cubic"), "trace={}"]})
    rfc = simulate("stpd-wireless", **kwargs)
    flow = profiled.summary["flows"][0]
    assert flow == spelled.summary["flows"][0]
    assert profiled.scenario["flows"][0]["tcp"]["profile"] == "linux"
    assert flow != rfc.summary["flows"][0]


def test_fields_given_beside_the_profile_win():
    doc = load_scenario("stpd-wireless")
    sets = ['flows[0].tcp.min_rto="1s"', 'flows[0].tcp.cc="cubic"', "flows[0].tcp.sack=false"]
    r = resolve(apply_overrides(doc, profile="linux", sets=sets))
    tcp = r["flows"][0]["tcp"]
    assert tcp["min_rto_s"] == 1.0 and tcp["sack"] is False
    # cc names a Linux module under the profile: its model runs, and the profile says so.
    assert tcp["cc"] == "cubic-linux"
    assert "flows[0].tcp.cc" in r["from_profile"]
    assert "flows[0].tcp.min_rto_s" not in r["from_profile"] + r["defaults"]
    # Written in the preset, Reno recovery wins too (only --tcp replaces it).
    assert tcp["recovery"] == "reno"


def test_linux_tcp_reads_the_cores_profile():
    fields = _core.TCP_PROFILES["linux"]["fields"]
    assert [key for key, *_ in fields] == [*LINUX_CONNECTION, *LINUX_SENDER]
    assert LINUX_CC_NAMES == {"cubic": "cubic-linux"}
    assert all("(" in source for source in LINUX_SOURCES.values()), "each names its source"
    assert _core.TCP_PROFILES["rfc"] == {"fields": (), "models": (), "growth": {}, "recovery": None}


def test_scenario_show_marks_what_the_profile_set():
    r = resolve(apply_overrides(load_scenario("stpd-wireless"), tcp="cubic", profile="linux"))
    origins = {path: origin for path, _, origin in resolved_rows(r)}
    assert origins["flows[0].tcp.profile"] == ""
    assert origins["flows[0].tcp.rto"] == "profile"
    assert origins["flows[0].tcp.cc"] == "profile"
    assert origins["flows[0].tcp.mss_bytes"] == ""
    assert origins["flows[0].tcp.max_rto_s"] == "default"
    assert "from_profile" not in origins


MINIMAL = """
duration = "10s"
nodes = ["S", "D"]
[[links]]
a = "S"
b = "D"
rate = "1Mbps"
delay = "10ms"
[[flows]]
from = "S"
to = "D"
app = { kind = "unbounded" }
[flows.tcp]
profile = "linux"
"""


def test_cli_show_and_check_count_the_profiles_fields(capsys, tmp_path):
    path = tmp_path / "linux.toml"
    path.write_text(MINIMAL)
    assert main(["scenario", "show", str(path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    # Linux's thirteen fields and Reno's growth.
    assert len(shown["from_profile"]) == 14
    assert main(["scenario", "check", str(path)]) == 0
    assert "14 fields set by a TCP profile" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args",
    [
        ["simulate", "stpd-wireless", "--profile", "bsd"],
        ["scenario", "show", "stpd-wireless", "--profile", "bsd"],
    ],
)
def test_an_unknown_profile_is_refused_in_one_line(capsys, args):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    expected = "--profile: unknown TCP profile 'bsd'; expected one of: rfc, linux"
    assert err == f"farlink: error: {expected}"


def test_an_unknown_profile_in_a_scenario_is_refused_at_its_field(capsys, tmp_path):
    assert main(["simulate", "stpd-wireless", "--set", 'flows[0].tcp.profile="bsd"']) == 2
    err = capsys.readouterr().err.strip()
    assert "flows[0].tcp.profile" in err and "expected one of: rfc, linux" in err
    assert "\n" not in err


def test_a_sweep_takes_the_profile_as_an_option_or_an_axis():
    fixed = sweep_from_options("stpd-wireless", fixed={"profile": "linux", "tcp": "cubic"})
    doc = point_doc(fixed, fixed.points()[0].params)
    assert doc["flows"][0]["tcp"]["profile"] == "linux"
    assert doc["flows"][0]["tcp"]["recovery"] == "rack"
    axis = sweep_from_options("stpd-wireless", grid=["profile=rfc,linux"])
    profiles = [point_doc(axis, p.params)["flows"][0]["tcp"].get("profile") for p in axis.points()]
    assert profiles == ["rfc", "linux"]
    with pytest.raises(Exception, match="expected a TCP profile"):
        sweep_from_options("stpd-wireless", fixed={"profile": "bsd"})


def test_the_docs_list_every_linux_field_with_its_source():
    from pathlib import Path

    text = (Path(__file__).parents[1] / "docs" / "congestion-control.md").read_text()
    rows = {
        cells[0].strip("`"): cells[2].replace("`", "")
        for line in text.splitlines()
        if line.startswith("| `")
        and len(cells := [c.strip() for c in line.strip("|").split("|")]) == 3
    }
    for key, source in LINUX_SOURCES.items():
        assert key in rows, f"{key} not in congestion-control.md's table"
        assert source in rows[key], f"{key}: {rows[key]!r} does not give {source!r}"
