"""Link schedules and mahimahi traces in the emulator, in real time (docs/schedules.md): kernel
TCP through a 12 Mbit/s mahimahi trace, and the kernel's smoothed RTT across a delay schedule's
steps. These make network namespaces and TUN devices; without CAP_NET_ADMIN or /dev/net/tun
they are skipped, saying which."""

from pathlib import Path

import numpy as np
import pytest

from farlink.emulate import emulate
from support import REAL_TIME, needs_namespaces

pytestmark = [REAL_TIME, needs_namespaces("emulator")]


def test_a_constant_12_mbit_trace_carries_12_mbit_of_kernel_tcp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("12mbit.trace").write_text("".join(f"{ms}\n" for ms in range(1, 1001)))
    doc = {
        "duration": "10s",
        "nodes": ["S", "D"],
        "links": [
            {
                "a": "S",
                "b": "D",
                "rate": "100Mbps",
                "delay": "20ms",
                "fwd": {"rate": {"trace": "12mbit.trace"}, "queue_pkts": 200},
            }
        ],
        "flows": [{"from": "S", "to": "D", "app": {"kind": "unbounded"}}],
    }
    result = emulate(doc, sender="kernel")
    fwd = result.summary["links"][0]["fwd"]
    ip_bps = fwd["delivered_bytes"] * 8 / result.summary["sim_time_s"]
    assert ip_bps == pytest.approx(12e6, rel=0.03)
    error = result.summary["emulator"]["departure_error_us"]
    assert error["count"] > 9000


def test_the_kernels_smoothed_rtt_steps_with_a_delay_schedule():
    # 50 ms each way, 300 ms from 3 s, 50 ms again from 6 s; a 64 KiB receive window keeps
    # the 1000-packet queue short, so the RTT is the path's: 102 ms, 602 ms, 102 ms.
    doc = {
        "duration": "9s",
        "nodes": ["S", "D"],
        "links": [
            {
                "a": "S",
                "b": "D",
                "rate": "10Mbps",
                "delay": "50ms",
                "queue_pkts": 1000,
                "schedule": [
                    {"at": "0s"},
                    {"at": "3s", "delay": "300ms"},
                    {"at": "6s", "delay": "50ms"},
                ],
            }
        ],
        "flows": [
            {
                "from": "S",
                "to": "D",
                "app": {"kind": "unbounded"},
                "tcp": {"receive_buffer": "64KiB"},
            }
        ],
    }
    result = emulate(doc, sender="kernel")
    info = result.trace("tcp_info")
    t, srtt_ms = np.asarray(info["time_s"]), np.asarray(info["rtt_us"]) / 1e3

    def at(s: float) -> float:
        return float(srtt_ms[np.searchsorted(t, s) - 1])

    def settled(s: float) -> float:
        # The median of the samples (every 10 ms) over the half second before `s`. A single
        # reading is at the mercy of one late ACK: the kernel moves its estimate by 1/8 of
        # each sample's error, so one ACK held back 100 ms on a busy host reads 12.5 ms high
        # for a few samples (115 ms was read once at 8.9 s, with another emulation beside).
        window = (t > s - 0.5) & (t <= s)
        return float(np.median(srtt_ms[window]))

    assert 102 <= settled(2.9) < 110
    assert 602 <= settled(5.9) < 615
    assert 102 <= settled(8.9) < 110
    # The kernel's estimate moves within a second of each step (it samples once an RTT).
    assert at(4.0) > 350
    assert at(7.0) < 150
    assert result.summary["links"][0]["fwd"]["drops"]["queue_overflow"] == 0
