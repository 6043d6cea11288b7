"""Traces: a trace not switched on says how to switch it on, none is written as an empty file,
and docs/traces.md lists exactly the core's tables and columns."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import farlink
from farlink.cli.app import main
from farlink.results.traces import NOT_IN_ALL, TRACE_NAMES, TraceNotRecorded, switched_on

DOC = Path(__file__).parents[1] / "docs" / "traces.md"


def documented() -> dict[str, list[tuple[str, str]]]:
    tables = {}
    for line in DOC.read_text().splitlines():
        match = re.match(r"\| `(\w+)` \| (.+?) \| .+ \|$", line)
        if match:
            columns = re.findall(r"`(\w+)` \((\w+)\)", match[2])
            tables[match[1]] = columns
    return tables


@pytest.fixture(scope="module")
def everything():
    # iridium-3 has a bundle, so the member_state and capacity tables have rows too.
    return farlink.simulate("iridium-3", duration="20s", sets=["trace={all=true}"])


def test_docs_list_the_cores_tables_and_columns_in_order(everything):
    found = {
        name: [(column, str(array.dtype)) for column, array in table.items()]
        for name, table in everything.traces.items()
    }
    assert documented() == found
    assert set(found) == set(TRACE_NAMES)


def test_a_trace_not_switched_on_says_how_to_switch_it_on():
    result = farlink.simulate("marchese-geo", duration="2s")
    with pytest.raises(TraceNotRecorded, match=r"trace.cwnd=true"):
        result.trace("cwnd")
    with pytest.raises(KeyError):  # a KeyError still, for callers that catch one
        result.trace("cwnd")
    assert "goodput" in result.recorded_traces()
    assert len(result.trace("goodput")["time_ns"]) > 0


def test_all_leaves_the_queue_delay_and_aqm_traces_off_and_says_how_to_ask(everything):
    # The presets' `all = true` runs record what they did before these tables existed.
    assert set(everything.recorded_traces()) == set(TRACE_NAMES) - set(NOT_IN_ALL)
    with pytest.raises(TraceNotRecorded, match=r"trace.queue_delay=true") as err:
        everything.trace("queue_delay")
    assert "all = true" not in str(err.value)


def test_a_trace_switched_on_but_empty_is_returned(everything):
    result = farlink.simulate(
        "stpd-wireless", duration="1s", sets=["trace={drops=true}", "links[1].fwd.loss.p=0"]
    )
    assert result.recorded_traces() == ["drops"]
    assert isinstance(result.trace("drops")["time_ns"], type(everything.trace("cwnd")["time_ns"]))


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        (None, set()),
        ({}, set()),
        ({"all": True}, set(TRACE_NAMES) - set(NOT_IN_ALL)),
        ({"all": True, "cwnd": False}, set(TRACE_NAMES) - set(NOT_IN_ALL) - {"cwnd"}),
        ({"all": True, "queue_delay": True}, set(TRACE_NAMES) - {"aqm"}),
        ({"aqm": True}, {"aqm"}),
        ({"rtt": True}, {"rtt"}),
        ("yes", set()),
    ],
)
def test_switched_on_reads_the_table_as_the_core_does(table, expected):
    assert switched_on({} if table is None else {"trace": table}) == expected


def test_trace_switched_off_writes_no_parquet(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["simulate", "stpd-wireless", "--duration", "1s", "--set", "trace={}", "--out", str(out)]
    assert main(argv) == 0
    assert not list(out.glob("*.parquet"))
    assert (out / "summary.json").is_file()
    argv[-3:-2] = ["trace={rtt=true}"]
    assert main([*argv, "--force"]) == 0
    assert sorted(p.name for p in out.glob("*.parquet")) == ["rtt.parquet"]
    argv[-3:-2] = ["trace={cwnd=true}"]
    assert main(argv) == 0
    assert sorted(p.name for p in out.glob("*.parquet")) == ["cwnd.parquet"]
