"""The emulate engine from the command line: a short bulk transfer, bad options, the clean-up
after Ctrl-C and after a run killed with SIGKILL. These make network namespaces and TUN devices
(CI runs as root); without CAP_NET_ADMIN or /dev/net/tun they are skipped, saying which."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from farlink import units
from farlink.cli.app import main
from farlink.emulate import emulate
from farlink.sim import simulate
from support import REAL_TIME, needs_namespaces

NETNS = Path("/run/netns")
SCHEMA = json.loads(
    (Path(__file__).resolve().parents[1] / "docs" / "result.schema.json").read_text(
        encoding="utf-8"
    )
)


pytestmark = [REAL_TIME, needs_namespaces("emulator")]


def farlink_process(*args: str, capture: bool = True) -> subprocess.Popen:
    stream = subprocess.PIPE if capture else subprocess.DEVNULL
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from farlink.cli.app import main; sys.exit(main())",
            *args,
        ],
        stdout=stream,
        stderr=stream,
        text=True,
    )


def namespaces_of(pid: int) -> list[str]:
    """The namespaces a farlink process made (its run ids start with its pid in hex)."""
    prefix = f"farlink-{pid:x}"
    return sorted(n.name for n in NETNS.glob("farlink-*") if n.name.startswith(prefix))


def wait_for_namespaces(pid: int, timeout_s: float = 20.0) -> list[str]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = namespaces_of(pid)
        if len(found) == 2:
            return found
        time.sleep(0.05)
    raise AssertionError(f"process {pid} made no namespaces in {timeout_s} s")


def remove(names: list[str]) -> None:
    for name in names:
        subprocess.run(["ip", "netns", "delete", name], capture_output=True, check=False)


def test_a_short_bulk_transfer_over_the_wireless_path(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["emulate", "stpd-wireless", "--size", "100KB", "--duration", "20s"]
    # cubic-linux, farlink's model of the kernel's cubic, runs as the kernel's own module.
    assert main([*args, "--tcp", "cubic-linux", "--json", "--out", str(out)]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["delivered_bytes"] == 100_000
    assert 0.5 < payload["transfer_time_s"] < 10
    assert 0.05 < payload["normalized_goodput"] <= 1.0
    assert set(payload["drops"]) >= {"queue_overflow", "corruption"}
    error = payload["emulator"]["departure_error_us"]
    assert 0 < error["p50"] <= error["p99"] <= error["max"]
    assert payload["emulator"]["packets_written"] > 100
    (flow,) = payload["flows"]
    assert flow["finished"] and flow["congestion"] == "cubic"
    assert flow["retransmissions"] >= 0 and flow["timeouts"] >= 0
    settings = flow["kernel_settings"]
    assert settings["applied"]["congestion"] == "TCP_CONGESTION cubic"
    assert settings["applied"]["initial_window_segments"].startswith("route initcwnd")
    assert "recovery" in settings["not_applied"]
    assert "cwnd_reduction" in settings["not_applied"]
    assert (out / "summary.json").exists() and (out / "tcp_info.parquet").exists()
    # One flow summary for both engines: simulate's keys (the handshake aside, which only the
    # simulator models), then the emulation's own; the result schema describes every one.
    simulated = simulate("stpd-wireless", size="100KB", duration="20s", sets=["trace={}"])
    sim_keys = set(simulated.summary["flows"][0]) - {"handshake"}
    own = {"congestion", "setup_time_s", "kernel_settings", "error", "sender", "verified"}
    assert set(flow) == sim_keys | own, set(flow) ^ (sim_keys | own)
    assert set(flow) <= set(SCHEMA["$defs"]["flow"]["properties"])
    assert flow["finish_s"] is not None and flow["finish_s"] >= flow["transfer_time_s"]


@pytest.mark.parametrize(
    ("preset", "size", "far_link"),
    [("iridium-4", "6KB", "iridium"), ("is707", "4KB", "radio")],
)
def test_bundles_and_radio_hops_carry_kernel_tcp(preset, size, far_link):
    result = emulate(preset, tcp="reno", size=size, duration="60s")
    (flow,) = result.summary["flows"]
    assert flow["finished"], flow
    assert flow["delivered_bytes"] == units.parse_size_bytes(size)
    assert 0.1 < flow["normalized_goodput"] <= 1.0, flow
    (link,) = [link for link in result.summary["links"] if link["name"] == far_link]
    fwd = link["fwd"]
    assert fwd["delivered_pkts"] > 0
    accounted = fwd["delivered_pkts"] + sum(fwd["drops"].values()) + fwd["in_flight_pkts"]
    assert fwd["offered_pkts"] == accounted, fwd
    if far_link == "iridium":
        # The bundle's call counters, under the keys of simulate's bundle summary.
        calls = ("call_drops", "drops_noticed", "hangups", "teardowns", "dials", "dial_failures")
        assert set(link["bundle"]) == {*calls, "blocks"}, link["bundle"]


def test_captures_at_both_ends_are_read_by_analyze(tmp_path, capsys):
    args = ["emulate", "stpd-wireless", "--size", "50KB", "--duration", "20s"]
    assert main([*args, "--pcap", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    for node in ("S", "D"):
        capture = str(tmp_path / f"{node}.pcap")
        assert main(["analyze", capture, "--json", "--out", str(tmp_path / node)]) == 0
        (conn,) = json.loads(capsys.readouterr().out)["connections"]
        assert conn["delivered_bytes"] == 50_000, conn


def test_a_controller_the_kernel_lacks_is_one_line_naming_those_it_has(capsys):
    # Without --sender kernel, farlink's own sender would run it (tests/test_emulate_wire.py).
    args = ["emulate", "stpd-wireless", "--tcp", "stpd", "--sender", "kernel", "--size", "10KB"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("farlink: error: --tcp:") and "\n" not in err
    assert "stpd" in err and "reno" in err


@pytest.mark.parametrize(
    ("sets", "field"),
    [
        (['flows[0].app={kind="telnet", mean_interval="1s"}'], "flows[0].app"),
    ],
)
def test_what_the_emulator_cannot_run_yet_is_one_line_naming_the_field(capsys, sets, field):
    args = ["emulate", "iridium-4", "--size", "10KB"]
    assert main([*args, *(a for s in sets for a in ("--set", s))]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("farlink: error:") and "\n" not in err and field in err, err


def test_without_cap_net_admin_it_says_so_in_one_line_and_exits_2():
    proc = subprocess.run(
        ["setpriv", "--inh-caps=-net_admin", "--bounding-set=-net_admin", "--",
         sys.executable, "-c", "import sys; from farlink.cli.app import main; sys.exit(main())",
         "emulate", "stpd-wireless", "--size", "10KB"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "CAP_NET_ADMIN" in proc.stderr


# The shell's status for a process a signal ended: 128 plus the signal (SIGTERM is what a
# service manager or `kill` sends, and must not read as Ctrl-C).
@pytest.mark.parametrize(("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_ends_the_run_removes_its_namespaces_and_keeps_the_result(tmp_path, sig, status):
    proc = farlink_process("emulate", "stpd-wireless", "--duration", "60s", "--json",
                           "--out", str(tmp_path))  # fmt: skip
    try:
        made = wait_for_namespaces(proc.pid)
        time.sleep(1.0)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
        remove(namespaces_of(proc.pid))
    assert proc.returncode == status, err
    assert json.loads(out)["interrupted"] is True
    assert not any((NETNS / n).exists() for n in made)


def test_namespaces_of_a_run_killed_with_sigkill_are_removed_at_the_next_start():
    proc = farlink_process("emulate", "stpd-wireless", "--duration", "60s", capture=False)
    made: list[str] = []
    try:
        made = wait_for_namespaces(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        assert all((NETNS / n).exists() for n in made), "a killed run cannot clean up"
        again = farlink_process("emulate", "stpd-wireless", "--size", "10KB", "--json")
        _, err = again.communicate(timeout=60)
        assert again.returncode == 0, err
        assert not any((NETNS / n).exists() for n in made)
    finally:
        proc.kill()
        remove(made)


def test_a_token_bucket_lets_kernel_tcp_past_the_links_rate_for_a_burst():
    # 60 kB fit the 80 KiB bucket of a 20 Mbit/s link with 1 ms each way: kernel TCP crosses
    # it faster than 20 Mbit/s (normalised goodput above 1), which a plain link never allows.
    def run(direction: dict) -> float:
        doc = {
            "duration": "20s",
            "nodes": ["S", "D"],
            "links": [{"a": "S", "b": "D", "rate": "20Mbps", "delay": "1ms", "fwd": direction}],
            "flows": [{"from": "S", "to": "D", "app": {"kind": "bulk", "size": "60kB"}}],
        }
        (flow,) = emulate(doc, sender="kernel").summary["flows"]
        assert flow["finished"], flow
        return flow["normalized_goodput"]

    assert run({"burst": "80KiB"}) > 1.2
    assert run({}) <= 1.0
