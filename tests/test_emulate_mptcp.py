"""The kernel's Multipath TCP in the emulator (``--transport mptcp``): one address and one path
per member of the bundle, each member a link of its own, ``IPPROTO_MPTCP`` sockets, the bytes
verified, and each member's subflow in the flow's ``subflows``. These make network namespaces
and TUN devices, and need the kernel's MPTCP (``net.mptcp.enabled``); without them they are
skipped, saying which."""

import json
import platform
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from farlink.bonding import speed_up
from farlink.cli.app import main
from farlink.emulate import emulate
from farlink.scenario import load_scenario
from support import REAL_TIME, needs_namespaces

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[1] / "docs" / "result.schema.json").read_text(
        encoding="utf-8"
    )
)
MPTCP_ENABLED = Path("/proc/sys/net/mptcp/enabled")


def _kernel_has_mptcp() -> bool:
    try:
        return MPTCP_ENABLED.read_text(encoding="utf-8").strip() == "1"
    except OSError:
        return False


def _kernel_counts_timeouts() -> bool:
    """Whether this kernel's TCP_INFO has tcpi_total_rto (Linux 6.7 on)."""
    major, minor = (int(x) for x in platform.release().split(".")[:2])
    return (major, minor) >= (6, 7)


pytestmark = [
    REAL_TIME,
    needs_namespaces("emulator"),
    pytest.mark.skipif(
        not _kernel_has_mptcp(), reason="no kernel Multipath TCP (net.mptcp.enabled is not 1)"
    ),
]


def faster_iridium_4(speedup: float) -> dict:
    """iridium-4 with every member ``speedup`` times faster and nearer (rates up, delays and the
    bundle's timers down), BIC's successor CUBIC (BIC is gone from Linux), no call drops."""
    doc = speed_up(load_scenario("iridium-4"), speedup)
    doc["links"][0]["bundle"]["call_drop_rate_per_s"] = 0
    doc["flows"][0]["tcp"]["cc"] = "cubic"
    return doc


def test_a_verified_transfer_by_kernel_mptcp_uses_every_member_of_iridium_4():
    doc = faster_iridium_4(20)
    # The kernel adds subflows only while the sender may still write: a join completing after
    # the sender has written its last byte and shut down is reset (docs/multipath.md). A 16 KB
    # send buffer keeps the writer busy for seconds after the joins' handshakes (~0.5 s); with
    # the kernel's autotuned buffer the last write raced the fourth join's SYN-ACK.
    doc["flows"][0]["tcp"]["send_buffer"] = "16KB"
    result = emulate(doc, transport="mptcp", size="100KB", seed=2, duration="60s")
    (flow,) = result.summary["flows"]
    assert flow["finished"], flow
    assert flow["delivered_bytes"] == 100_000
    assert flow["verified"] is True, flow
    subflows = flow["subflows"]
    assert [s["route"] for s in subflows] == [f"iridium/member{k}" for k in range(4)]
    for s in subflows:
        assert s["established"] == 1 and s["bytes"] > 0, s
        assert s["down_intervals_s"] == [], s
        # The kernel's count of the subflow's timeouts (tcpi_total_rto, Linux 6.7 on).
        if _kernel_counts_timeouts():
            assert isinstance(s["timeouts"], int) and s["timeouts"] >= 0, s
        else:
            assert s["timeouts"] is None, s
    # Each byte reached the receiver over some member (copies reinjected by the kernel too).
    assert sum(s["bytes"] for s in subflows) >= 100_000
    # The receiving application's reads, in time order, the last at the finish with every byte.
    goodput = result.trace("goodput")
    assert len(goodput["time_ns"]) > 1 and set(goodput["flow"]) == {0}
    assert np.all(np.diff(goodput["time_ns"].astype(np.int64)) > 0)
    assert np.all(np.diff(goodput["delivered_bytes"].astype(np.int64)) > 0)
    assert goodput["delivered_bytes"][-1] == 100_000
    assert goodput["time_ns"][-1] / 1e9 == pytest.approx(flow["finish_s"], abs=1e-6)
    # The bundle's member states, as the simulator's: every member's call came up.
    states = result.trace("member_state")
    assert set(states["member"]) == {0, 1, 2, 3}


def four_equal_megabit_members(delay: str, receive_buffer: str) -> dict:
    """iridium-4's bundle as four equal members of 1 Mbit/s, ``delay`` each way, no ARQ, no
    loss, a transmit queue of 10 packets, and the flow's ``receive_buffer``."""
    doc = faster_iridium_4(1)
    bundle = doc["links"][0]["bundle"]
    bundle.update(rate="1Mbps", delay=delay, txqueue_pkts=10)
    bundle.pop("arq")
    for d in ("fwd", "rev"):
        doc["links"][0][d] = {"loss": {"model": "none"}}
    doc["flows"][0]["tcp"]["receive_buffer"] = receive_buffer
    return doc


def test_four_equal_members_carry_at_least_85_percent_of_their_summed_rate():
    # A transmit queue of about one round trip: what limits the transfer is MPTCP's use of
    # the four paths.
    doc = four_equal_megabit_members(delay="50ms", receive_buffer="4MB")
    result = emulate(doc, transport="mptcp", size="3MB", duration="60s")
    (flow,) = result.summary["flows"]
    assert flow["finished"] and flow["verified"], flow
    assert flow["bottleneck_bps"] == 4_000_000
    assert flow["normalized_goodput"] >= 0.85, flow["normalized_goodput"]


@pytest.mark.skipif(shutil.which("mptcpize") is None, reason="no mptcpize (make setup installs it)")
def test_a_program_runs_over_multipath_tcp_under_mptcpize_and_uses_every_member():
    # A program that opens a plain TCP socket: under `mptcpize run` the kernel makes it a
    # Multipath TCP one, and the sink it reaches listens on IPPROTO_MPTCP.
    send = (
        "import os, socket; s = socket.create_connection((os.environ['FARLINK_PEER'], "
        "int(os.environ['FARLINK_PORT']))); s.sendall(b'x' * 1_000_000); s.close()"
    )
    result = emulate(
        four_equal_megabit_members(delay="20ms", receive_buffer="2MB"),
        transport="mptcp",
        command=[sys.executable, "-c", send],
        duration="30s",
    )
    (flow,) = result.summary["flows"]
    assert flow["delivered_bytes"] == 1_000_000, flow
    routes = [(s["route"], s["established"]) for s in flow["subflows"]]
    assert routes == [(f"iridium/member{k}", 1) for k in range(4)], routes
    assert all(s["bytes"] > 0 for s in flow["subflows"]), flow["subflows"]


def test_an_mptcp_flow_on_farlink_s_sender_is_one_line_naming_the_field(capsys):
    # iridium-4's controller is BIC, which this kernel lacks: farlink's sender would carry it.
    args = ["emulate", "iridium-4", "--transport", "mptcp", "--size", "10KB"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("farlink: error:") and "\n" not in err, err
    assert "flows[0].tcp.cc" in err and "cubic" in err, err


def test_compare_bonding_emulate_fills_the_kernel_side_for_both_bondings():
    from farlink.bonding import compare_bonding

    doc = faster_iridium_4(20)
    doc["seed"] = 2
    result = compare_bonding(doc, size="50KB", seeds=1, emulate=True, tcp="cubic")
    assert result["emulate"].startswith("run:") and "cubic" in result["emulate"]
    for bonding in ("mlppp", "mptcp"):
        (run,) = result[bonding]["emulate"]["runs"]
        assert run["seed"] == 2 and run["finished"] and run["verified"], run
        # Its stalls read from the emulator's goodput and member_state traces: no drop, none.
        assert run["call_drops"] == 0 and run["stall_after_drop_s"] == []
        assert result[bonding]["emulate"]["mean"]["transfer_time_s"] == run["transfer_time_s"]
    assert result["mlppp"]["emulate"]["runs"][0]["subflows"] == []
    assert len(result["mptcp"]["emulate"]["runs"][0]["subflows"]) == 4
