"""`farlink scenario show` and `farlink scenario check`."""

import json

from support import assert_one_error, run


def test_show_json_is_the_resolved_scenario(capsys):
    code, out, err = run(capsys, "scenario", "show", "iridium-3", "--json")
    assert code == 0, err
    resolved = json.loads(out)
    assert resolved["resolved_schema_version"] == 1
    bundle = resolved["links"][0]["bundle"]
    assert [m["rate_bps"] for m in bundle["members"]] == [2400] * 3
    assert resolved["links"][0]["fwd"]["rate_bps"] == 7200
    assert "flows[0].tcp.min_rto_s" in resolved["defaults"]


def test_show_marks_defaults_and_follows_set(capsys):
    code, out, err = run(
        capsys, "scenario", "show", "stpd-wireless", "--set", "flows[0].tcp.min_rto=200ms"
    )
    assert code == 0, err
    lines = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") > 2}
    assert "default" in lines["flows[0].tcp.max_rto_s"]
    assert "0.2" in lines["flows[0].tcp.min_rto_s"]
    assert "default" not in lines["flows[0].tcp.min_rto_s"]
    assert "derived" in lines["flows[0].base_rtt_s"]


def test_show_names_the_linux_rto_and_rack_and_marks_linux_bounds_as_defaults(capsys):
    code, out, err = run(
        capsys,
        "scenario",
        "show",
        "stpd-wireless",
        "--json",
        "--set",
        "flows[0].tcp.rto=linux",
        "--set",
        "flows[0].tcp.recovery=rack",
    )
    assert code == 0, err
    resolved = json.loads(out)
    tcp = resolved["flows"][0]["tcp"]
    assert (tcp["rto"], tcp["recovery"]) == ("linux", "rack")
    assert (tcp["min_rto_s"], tcp["max_rto_s"]) == (0.2, 120.0)
    assert "flows[0].tcp.min_rto_s" in resolved["defaults"]
    assert "flows[0].tcp.rto" not in resolved["defaults"]
    code, out, err = run(
        capsys, "scenario", "show", "stpd-wireless", "--set", "flows[0].tcp.rto=bsd"
    )
    assert_one_error(code, err, "flows[0].tcp.rto", 'unknown RTO rule "bsd"', "rfc6298, linux")


def test_check_says_ok_or_names_the_place(capsys, tmp_path):
    code, out, err = run(capsys, "scenario", "check", "stpd-wireless")
    assert code == 0 and out.startswith("stpd-wireless: ok (3 nodes, 2 links, 1 flow;"), err
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'duration = "10s"\nnodes = ["A", "B"]\n[[links]]\na = "A"\nb = "C"\n'
        'rate = "1Mbps"\ndelay = "1ms"\n',
        encoding="utf-8",
    )
    code, out, err = run(capsys, "scenario", "check", bad)
    assert code == 2 and out == ""
    assert err.startswith("farlink: error: ") and 'links[0].b: unknown node "C"' in err
    assert err.count("\n") == 1
