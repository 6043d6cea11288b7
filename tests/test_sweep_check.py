"""A sweep's grid is checked whole before the first run: a path or value the core refuses is one
line naming the point, the field and the paths that come close, and no run starts."""

from __future__ import annotations

import pytest

from farlink import _core
from farlink.sweeps.check import check_points, paths_near
from farlink.sweeps.sweep import sweep_from_options
from support import run


def test_an_unknown_grid_path_names_the_paths_near_it_and_runs_nothing(capsys, tmp_path):
    out = tmp_path / "sweep"
    code, stdout, err = run(
        capsys, "sweep", "stpd-wireless", "--grid", "cc=reno,cubic", "--out", str(out),
        "--no-progress",
    )  # fmt: skip
    assert code == 2 and stdout == ""
    assert err.count("\n") == 1 and err.startswith("farlink: error: "), err
    assert "flows[0].tcp.cc" in err and "tcp" in err and "unknown field" in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("grid", "fragment"),
    [
        ("links[1].queue_pkts=4,-5", "links[1].queue_pkts"),
        ("flows[0].tcp.cc=reno,nonsense", "nonsense"),
        ("links[1].rate=1Mbps,fast", "links[1].rate"),
    ],
)
def test_a_bad_value_at_any_point_stops_the_sweep_before_its_first_run(
    capsys, tmp_path, grid, fragment
):
    out = tmp_path / "sweep"
    code, _, err = run(capsys, "sweep", "stpd-wireless", "--grid", grid, "--out", str(out),
                       "--no-progress")  # fmt: skip
    assert code == 2 and err.count("\n") == 1, err
    assert fragment in err and "no run was started" in err
    assert not out.exists()


def test_every_point_of_a_good_grid_passes():
    sweep = sweep_from_options(
        "stpd-wireless", grid=["loss=0.001,0.01", "tcp=reno,cubic"], fixed={"duration": "1s"}
    )
    assert check_points(sweep) == 4


def test_paths_near_finds_the_same_name_deeper():
    doc = {"flows": [{"tcp": {"cc": "reno", "recovery": "reno"}}], "links": [{"rate": "1Mbps"}]}
    assert paths_near(doc, "cc") == ["flows[0].tcp.cc"]
    assert paths_near(doc, "links[0].rat") == ["links[0].rate"]


def test_the_core_check_accepts_what_it_runs_and_refuses_what_it_refuses():
    with pytest.raises(_core.ScenarioError) as err:
        _core.resolve_scenario('{"cc": 1}')
    assert err.value.path == "cc"
