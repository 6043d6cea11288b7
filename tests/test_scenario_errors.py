"""Scenario errors a person can act on: FILE:LINE: path: message, in words, not Rust types."""

import pytest

from farlink import simulate
from farlink.cli.app import main

SCENARIO = """\
duration = "2s"
nodes = ["S", "D"]

[[links]]
a = "S"
b = "D"
rate = "1Mbps"
delay = "10ms"
queue_pkts = {queue}

[links.fwd.loss]
model = "bernoulli"
p = {p}

[[flows]]
from = "S"
to = "D"
{app}
"""
APP = '[flows.app]\nkind = "bulk"\nsize = "20KB"\n'


def write(tmp_path, queue="30", p="0.01", app=APP):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.format(queue=queue, p=p, app=app), encoding="utf-8")
    return path


def error_of(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert err.count("\n") == 1, err
    return err.removeprefix("farlink: error: ").rstrip("\n")


def test_error_names_file_line_and_path(capsys, tmp_path):
    path = write(tmp_path, queue="-5")
    assert error_of(capsys, "simulate", path) == (
        f"{path}:9: links[0].queue_pkts: expected a whole number from 0 to 4294967295, got -5"
    )
    assert error_of(capsys, "scenario", "check", path).startswith(f"{path}:9: links[0].queue_pkts")


def test_a_value_set_on_the_command_line_is_named_as_the_command_lines(capsys, tmp_path):
    path = write(tmp_path)
    message = error_of(capsys, "simulate", path, "--set", "flows[0].tcp.mss_bytes=10")
    assert message.startswith("--set flows[0].tcp.mss_bytes: expected an MSS of 64 to")
    # The file gives this one (line 9); the command line replaced it, so the file is not blamed.
    message = error_of(capsys, "simulate", path, "--set", "links[0].queue_pkts=-5")
    assert message.startswith("--set links[0].queue_pkts: expected a whole number")
    message = error_of(capsys, "scenario", "show", path, "--set", 'links[0]={a="S"}')
    assert message.startswith("--set links[0]")


def test_a_field_the_file_lacks_points_at_its_nearest_table(capsys, tmp_path):
    path = write(tmp_path, app='[flows.app]\nkind = "bulk"\n')
    assert error_of(capsys, "simulate", path) == (
        f'{path}:18: flows[0].app.size: missing: a bulk application needs size ("1MB") '
        "or size_bytes"
    )


def test_probability_with_percent_in_a_file(tmp_path):
    result = simulate(str(write(tmp_path, p='"0.1%"')))
    assert result.summary["flows"][0]["transfer_time_s"] is not None


def test_nan_names_its_path(capsys, tmp_path):
    path = write(tmp_path, p="nan")
    assert error_of(capsys, "simulate", path) == (
        f"{path}:13: links[0].fwd.loss.p: expected a finite number, got nan "
        "(nan and inf are not accepted)"
    )


def test_array_where_a_table_belongs_says_so(capsys, tmp_path):
    path = write(tmp_path, app='[[flows.app]]\nkind = "bulk"\nsize = "20KB"\n')
    message = error_of(capsys, "simulate", path)
    assert message.startswith(f"{path}:18: flows[0].app: expected a table")
    assert "got a list (an array; in TOML [[...]] makes one)" in message
    assert "struct" not in message and "Raw" not in message


@pytest.mark.parametrize("name", ["BBR", "Cubic", "SACK"])
def test_controller_and_recovery_names_ignore_case(capsys, tmp_path, name):
    code = main(["simulate", str(write(tmp_path)), "--tcp", name, "--json"])
    _, err = capsys.readouterr()
    assert code == 0, err


def test_toml_syntax_error_reads_file_line_column(capsys, tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text('duration = "1s"\nnodes = = 1\n', encoding="utf-8")
    message = error_of(capsys, "simulate", path)
    assert message == f"{path}:2:9: Invalid value"


def test_a_sweep_over_loss_of_an_invalid_scenario_is_one_line(capsys, tmp_path):
    path = write(tmp_path, queue="-5")
    text = path.read_text(encoding="utf-8").replace(
        'nodes = ["S", "D"]', 'nodes = ["S", "D"]\nlossy_link = "S-D"'
    )
    path.write_text(text, encoding="utf-8")
    message = error_of(
        capsys, "sweep", path, "--grid", "loss=0.1", "--out", tmp_path / "out", "--no-progress"
    )
    assert message.endswith(
        "links[0].queue_pkts: expected a whole number from 0 to 4294967295, got -5"
    )


def test_one_scenario_error_class_for_the_core_and_the_package(tmp_path):
    """``farlink.ScenarioError`` catches what the core refuses and what the package refuses."""
    import farlink
    from farlink import _core, scenario

    assert farlink.ScenarioError is _core.ScenarioError is scenario.ScenarioError
    assert issubclass(farlink.ScenarioError, ValueError)

    # Refused by the core: a field, with its path and message.
    with pytest.raises(farlink.ScenarioError) as core_err:
        simulate(str(write(tmp_path, queue="-5")))
    assert core_err.value.path == "links[0].queue_pkts"
    assert core_err.value.message.startswith("expected a whole number")

    # Refused by the package before the core sees it: no field, the place is in the text.
    with pytest.raises(farlink.ScenarioError) as read_err:
        simulate(str(tmp_path / "missing.toml"))
    assert read_err.value.path is None and read_err.value.message is None
    assert "missing.toml" in str(read_err.value)

    # A field the package checks itself carries its path like the core's.
    with pytest.raises(farlink.ScenarioError) as nan_err:
        simulate(str(write(tmp_path, p="nan")))
    assert nan_err.value.path == "links[0].fwd.loss.p"
