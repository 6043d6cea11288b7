"""The emulator's offload path (``--offload``: TUN devices with IFF_VNET_HDR and TSO): real kernel
TCP hands the driver super-segments, the links still carry MSS-sized packets one by one (queue,
loss), and what they deliver is written back coalesced; the bytes arrive intact. These make
network namespaces and TUN devices (CI runs as root); without them they are skipped, saying
which."""

import json
import math

from farlink.cli.app import main
from farlink.emulate import emulate
from support import REAL_TIME, needs_namespaces

pytestmark = [REAL_TIME, needs_namespaces("emulator offload path")]

MTU = 1500
# Per packet the kernel sends: IPv4 and TCP headers with the timestamps option.
PAYLOAD_PER_PACKET = MTU - 40 - 12


def fast_path(loss: float | None) -> dict:
    link = {"name": "S-D", "a": "S", "b": "D", "rate": "1Gbps", "delay": "2ms",
            "queue_pkts": 2000}  # fmt: skip
    if loss is not None:
        link["fwd"] = {"loss": {"model": "bernoulli", "p": loss}}
    return {
        "name": "offload-test",
        "seed": 7,
        "duration": "30s",
        "nodes": ["S", "D"],
        "links": [link],
        "flows": [
            {"name": "bulk", "from": "S", "to": "D",
             "tcp": {"mss_bytes": MTU - 40, "cc": "cubic", "receive_buffer": "8MiB",
                     "send_buffer": "8MiB"},
             "app": {"kind": "bulk", "size": "20MB"}},
        ],
    }  # fmt: skip


def carried(result_summary: dict) -> tuple[dict, dict, dict]:
    (flow,) = result_summary["flows"]
    (link,) = result_summary["links"]
    return flow, link["fwd"], result_summary["emulator"]


def test_kernel_tcp_through_the_offload_path_arrives_intact_in_mss_sized_packets():
    flow, fwd, emu = carried(emulate(fast_path(None), tcp="cubic", offload=True).summary)
    assert flow["finished"] and flow["verified"], flow
    assert flow["delivered_bytes"] == 20_000_000
    assert emu["io_path"] == "offload"
    off = emu["offload"]
    assert off["header_errors"] == 0 and emu["write_errors"] == 0, emu
    # The kernel handed over super-segments, and the driver wrote some back coalesced.
    assert off["super_segments_read"] > 0 and off["reads"] < emu["packets_read"], off
    assert off["super_segments_written"] > 0, off
    assert off["packets_coalesced"] <= emu["packets_written"]
    # The link carried packets of at most one MTU: as many as the payload needs, at least.
    assert fwd["delivered_bytes"] <= fwd["delivered_pkts"] * MTU, fwd
    assert fwd["delivered_pkts"] >= math.ceil(20_000_000 / PAYLOAD_PER_PACKET), fwd
    accounted = fwd["delivered_pkts"] + sum(fwd["drops"].values()) + fwd["in_flight_pkts"]
    assert fwd["offered_pkts"] == accounted, fwd


def test_the_loss_model_draws_once_per_packet_under_offload():
    p = 0.01
    flow, fwd, emu = carried(emulate(fast_path(p), tcp="cubic", offload=True).summary)
    assert flow["finished"] and flow["verified"], flow
    assert emu["offload"]["super_segments_read"] > 0
    lost = fwd["drops"]["corruption"]
    outcomes = fwd["delivered_pkts"] + lost  # packets that reached the loss model
    # Binomial(outcomes, p): within six standard deviations of its mean. A draw per
    # super-segment instead would lose whole reads, some forty packets at a time, and leave far
    # fewer outcomes than MSS-sized packets carried.
    sd = math.sqrt(outcomes * p * (1 - p))
    assert abs(lost - outcomes * p) <= 6 * sd, (lost, outcomes)
    assert outcomes >= math.ceil(20_000_000 / PAYLOAD_PER_PACKET)
    assert flow["retransmissions"] >= lost * 0.5, flow


def test_the_command_line_option_says_which_path_ran(tmp_path, capsys):
    args = ["emulate", "stpd-wireless", "--size", "200KB", "--duration", "30s", "--loss", "0"]
    assert main([*args, "--offload", "--json", "--out", str(tmp_path / "on")]) == 0
    on = json.loads(capsys.readouterr().out)
    assert main([*args, "--json", "--out", str(tmp_path / "off")]) == 0
    off = json.loads(capsys.readouterr().out)
    assert on["emulator"]["io_path"] == "offload" and "offload" in on["emulator"]
    assert off["emulator"]["io_path"] == "per_packet" and "offload" not in off["emulator"]
    for doc in (on, off):
        (flow,) = doc["flows"]
        assert flow["verified"] and doc["delivered_bytes"] == 200_000, flow
