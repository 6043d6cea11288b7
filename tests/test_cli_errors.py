"""Every failure a user can cause ends in one ``farlink: error:`` line and exit status 2.

The cases are the classes of hostile input that once escaped as tracebacks or as a library's
own warning text: values of the wrong type where a flag rewrites the document, TOML dates, output
paths the system refuses, encodings, allocations sized by an option.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from farlink.cli.app import main
from farlink.scenario import load_scenario
from support import assert_one_error, run

PRESET = "stpd-wireless"


def preset_text() -> str:
    return (Path(__file__).parents[1] / "python/farlink/scenarios" / f"{PRESET}.toml").read_text()


def scenario_file(tmp_path: Path, text: str, name: str = "s.toml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def edited(tmp_path: Path, old: str, new: str) -> str:
    text = preset_text()
    assert old in text
    return scenario_file(tmp_path, text.replace(old, new, 1))


def flows_as(text: str, flows: str) -> str:
    """The preset with its ``[[flows]]`` tables replaced by ``flows = ...`` at the top."""
    head = text[: text.index("[[flows]]")]
    return head.replace("nodes =", f"flows = {flows}\nnodes =")


APP_BULK = 'to = "D"\napp = "bulk"'


@pytest.mark.parametrize(
    ("edit", "flags", "fragment"),
    [
        (lambda t: t.replace('lossy_link = "R-D"', "lossy_link = 5"), ["--loss", "0.1"],
         "lossy_link"),
        (lambda t: t.replace('lossy_link = "R-D"', "lossy_link = { link = 5 }"), ["--loss", "0.1"],
         "lossy_link.link"),
        (lambda t: t.replace('lossy_link = "R-D"', 'lossy_link = { link = "R-D", direction = 1 }'),
         ["--loss", "0.1"], "lossy_link.direction"),
        (lambda t: t.replace('to = "D"', APP_BULK).replace('[flows.app]\nkind = "unbounded"', ""),
         ["--size", "1KB"], "flows[0].app"),
        (lambda t: flows_as(t, "[5]"), ["--tcp", "sack"], "flows[0]"),
        (lambda t: flows_as(t, "[5]"), ["--size", "1KB"], "flows[0]"),
        (lambda t: flows_as(t, "5"), ["--tcp", "sack"], "flows"),
        (lambda t: flows_as(t, '"ftp"'), ["--size", "1KB"], "flows"),
        (lambda t: t.replace('to = "D"', 'to = "D"\ntcp = "reno"').replace("[flows.tcp]", "[x]"),
         ["--tcp", "cubic"], "flows[0].tcp"),
    ],
)  # fmt: skip
def test_a_flag_rewriting_a_value_of_the_wrong_type_names_its_path(
    capsys, tmp_path, edit, flags, fragment
):
    path = scenario_file(tmp_path, edit(preset_text()))
    code, _, err = run(capsys, "simulate", path, "--duration", "1s", *flags)
    assert_one_error(code, err, fragment)


@pytest.mark.parametrize("links", ["[5]", "3", '["R-D"]'])
@pytest.mark.parametrize("flag", [["--pcap"], ["--loss", "0.1"]])
def test_links_that_are_not_tables_are_one_line(capsys, tmp_path, links, flag):
    text = preset_text()
    head = text[: text.index("[[links]]")]
    tail = text[text.index("[[flows]]") :]
    path = scenario_file(tmp_path, head.replace("nodes =", f"links = {links}\nnodes =") + tail)
    code, _, err = run(capsys, "simulate", path, "--duration", "1s", *flag)
    assert_one_error(code, err, "links")


@pytest.mark.parametrize(
    ("old", "new", "fragment"),
    [
        ("seed = 1", "seed = 07:32:00", "seed"),
        ("seed = 1", "seed = 1979-05-27T07:32:00Z", "seed"),
        ("queue_pkts = 30", "queue_pkts = 1979-05-27", "links[1].queue_pkts"),
        ("p = 0.01", "p = nan", "links[1].fwd.loss.p"),
        ("p = 0.01", "p = inf", "links[1].fwd.loss.p"),
    ],
)
def test_toml_values_json_cannot_carry_are_refused_with_their_path(
    capsys, tmp_path, old, new, fragment
):
    path = edited(tmp_path, old, new)
    code, _, err = run(capsys, "simulate", path, "--duration", "1s")
    assert_one_error(code, err, fragment)


@pytest.mark.parametrize("value", ["1979-05-27", "07:32:00", "1979-05-27T07:32:00"])
def test_a_date_given_with_set_is_refused(capsys, value):
    code, _, err = run(capsys, "simulate", PRESET, "--duration", "1s", "--set", f"seed={value}")
    assert_one_error(code, err, "seed")


def test_out_naming_an_existing_file_is_one_line(capsys, tmp_path):
    target = tmp_path / "afile"
    target.write_text("mine")
    code, _, err = run(capsys, "simulate", PRESET, "--duration", "1s", "--out", str(target))
    assert_one_error(code, err, "--out", str(target))
    assert target.read_text() == "mine"


def test_out_in_a_place_that_cannot_be_created_is_one_line(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, err = run(
        capsys, "simulate", PRESET, "--duration", "1s", "--out", str(blocker / "sub")
    )
    assert_one_error(code, err, "--out")


@pytest.fixture(scope="module")
def capture(tmp_path_factory) -> Path:
    """A capture of a short simulated transfer (the R-D link of the preset)."""
    folder = tmp_path_factory.mktemp("capture")
    code = main(["simulate", PRESET, "--duration", "5s", "--pcap", "--out", str(folder)])
    assert code == 0
    return folder / "R-D.pcap"


def test_fit_out_naming_a_folder_is_one_line(capsys, tmp_path, capture):
    code, _, err = run(capsys, "fit", str(capture), "--out", str(tmp_path))
    assert_one_error(code, err, "--out", "folder")


def test_an_xml_drop_log_with_an_unknown_encoding_is_one_line(capsys, tmp_path):
    log = tmp_path / "drops.xml"
    log.write_bytes(b'<?xml version="1.0" encoding="x-no-such-encoding"?><connections/>')
    code, _, err = run(capsys, "fit-drops", str(log))
    assert_one_error(code, err, "x-no-such-encoding")


def test_stpd_refuses_a_round_trip_beyond_its_stated_limit(capsys):
    from farlink.models import stpd

    code, _, err = run(capsys, "predict", "stpd", "--m", "100000000")
    assert_one_error(code, err, "m must be", str(stpd.MAX_M))


def test_stpd_model_enforces_its_limit():
    from farlink.models import stpd

    assert stpd.poles(3, 0.368, 0.033).shape == (4,)
    with pytest.raises(ValueError, match="from 1 to"):
        stpd.poles(stpd.MAX_M + 1, 0.368, 0.033)


def test_pftk_window_error_names_the_flag_form(capsys):
    code, _, err = run(capsys, "predict", "pftk", "--rtt", "1s", "--loss", "0.01", "--wmax", "10B")
    assert_one_error(code, err)
    assert "use inf" not in err
    assert "none" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["predict", "drop-loss", "--rate", "1e308bps", "--detect", "1e10s"],
    ],
)
def test_no_library_warning_text_reaches_stderr(capsys, argv):
    code, _, err = run(capsys, *argv)
    assert "RuntimeWarning" not in err
    assert all(re.match(r"farlink: (error|warning): ", line) for line in err.splitlines()), err
    assert code in (0, 2)


def test_fit_drops_of_a_log_with_vanishing_exposure_is_one_line(capsys, tmp_path):
    log = tmp_path / "drops.csv"
    log.write_text("modem,time\nA,0\nA,1e-320\nA,2e-320\nA,3e-320\n")
    code, _, err = run(capsys, "fit-drops", str(log))
    assert "RuntimeWarning" not in err
    assert_one_error(code, err)


def test_a_warning_from_a_library_becomes_one_farlink_line(capsys, monkeypatch):
    import warnings

    import farlink.cli.app as cli

    def noisy(*args, **kwargs):
        warnings.warn("first line\nsecond line", RuntimeWarning, stacklevel=1)

    monkeypatch.setattr(cli, "_main", noisy)
    main(["presets"])
    _, err = capsys.readouterr()
    assert err == "farlink: warning: first line second line\n"


def test_an_unexpected_failure_is_one_line_and_not_status_2(capsys, monkeypatch):
    import farlink.cli.app as cli

    def broken(argv):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(cli, "_main", broken)
    code = main(["presets"])
    _, err = capsys.readouterr()
    assert code == cli.EXIT_INTERNAL
    assert err.count("\n") == 1 and err.startswith("farlink: error: internal error")


def test_the_preset_still_loads():
    assert load_scenario(PRESET)["name"] == PRESET


def test_a_sweep_of_a_scenario_holding_a_date_is_refused_before_running(capsys, tmp_path):
    path = edited(tmp_path, "seed = 1", "seed = 07:32:00")
    code, _, err = run(
        capsys, "sweep", path, "--grid", "loss=0.1", "--out", str(tmp_path / "o"), "--no-progress"
    )
    assert_one_error(code, err, "seed")
    assert not (tmp_path / "o").exists()
