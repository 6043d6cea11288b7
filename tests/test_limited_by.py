"""What limited each flow, and the per-interval lines of ``farlink simulate``."""

import json

import pytest

from farlink import simulate
from farlink.sim import flow_rows, interval_rows
from support import run

# 2 Mbit/s and 600 ms: a bandwidth-delay product of 150 KB, above the default receive buffer of
# 128 KiB; the 100-packet queue never fills.
LONG_THIN = """
name = "long-thin"
seed = 1
duration = "30s"
nodes = ["S", "D"]

[[links]]
name = "S-D"
a = "S"
b = "D"
rate = "2Mbps"
delay = "300ms"
queue_pkts = 100

[[flows]]
name = "bulk"
from = "S"
to = "D"
app = { kind = "unbounded" }
"""


def line_of(out: str, flow: str) -> str:
    return next(line for line in out.splitlines() if f" {flow} " in line)


def test_the_default_receive_window_is_named(capsys, tmp_path):
    path = tmp_path / "long-thin.toml"
    path.write_text(LONG_THIN)
    code, out, err = run(capsys, "simulate", str(path), "--out", str(tmp_path / "out"))
    assert code == 0, err
    assert "limited by" in out
    assert "receive window" in line_of(out, "bulk")
    flow = simulate(path, sets=["trace={}"]).summary["flows"][0]
    assert flow["limited_by"] == "receive_window"
    assert flow["drops"]["queue_overflow"] == 0


def test_a_lossy_link_is_limited_by_the_congestion_window(capsys, tmp_path):
    code, out, err = run(
        capsys, "simulate", "stpd-wireless", "--loss", "0.02", "--duration", "30s",
        "--set", "trace={}", "--out", str(tmp_path),
    )  # fmt: skip
    assert code == 0, err
    assert "congestion window" in line_of(out, "ftp")


def test_a_telnet_flow_is_limited_by_its_application(capsys, tmp_path):
    code, out, err = run(
        capsys, "simulate", "stpd-telnet", "--duration", "20s", "--set", "trace={}",
        "--out", str(tmp_path),
    )  # fmt: skip
    assert code == 0, err
    assert "application" in line_of(out, "telnet")
    rows = {r["flow"]: r for r in flow_rows(simulate("stpd-telnet", duration="20s"))}
    assert rows["telnet"]["limited_by"] == "application"
    assert rows["telnet"]["limited_share"] > 0.8


def test_interval_lines_add_up_to_the_delivered_bytes(capsys, tmp_path):
    code, out, err = run(
        capsys, "simulate", "stpd-telnet", "--duration", "10s", "--interval", "1s",
        "--set", "trace={}", "--out", str(tmp_path), "--json",
    )  # fmt: skip
    assert code == 0, err
    result = json.loads(out)
    intervals = result["intervals"]
    for flow in result["flows"]:
        mine = [r for r in intervals if r["flow"] == flow["name"]]
        assert len(mine) == 10
        assert all(r["end_s"] - r["start_s"] == pytest.approx(1.0) for r in mine)
        assert all(r["cwnd_bytes"] > 0 for r in mine)
        delivered_bits = sum(r["goodput_bps"] * (r["end_s"] - r["start_s"]) for r in mine)
        assert delivered_bits == pytest.approx(flow["delivered_bytes"] * 8)
    # The table form prints the same lines.
    code, out, err = run(
        capsys, "simulate", "stpd-telnet", "--duration", "10s", "--interval", "1s",
        "--set", "trace={}", "--out", str(tmp_path),
    )  # fmt: skip
    assert code == 0, err
    assert "cwnd_bytes" in out


def test_interval_lines_of_a_split_flow_follow_its_connections():
    result = simulate(
        "marchese-geo-stp", duration="20s",
        sets=["trace={goodput=true,cwnd=true}", 'trace.goodput_interval="2s"'],
    )  # fmt: skip
    rows = interval_rows(result)
    flow = result.summary["flows"][0]
    delivered_bits = sum(r["goodput_bps"] * (r["end_s"] - r["start_s"]) for r in rows)
    assert delivered_bits == pytest.approx(flow["delivered_bytes"] * 8)


def test_a_bad_interval_is_one_line(capsys):
    code, _, err = run(capsys, "simulate", "stpd-wireless", "--interval", "often")
    assert code == 2
    assert err.count("\n") == 1 and "--interval" in err
