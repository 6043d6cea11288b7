"""Hostile captures (docs/security.md): pcapng read per interface, and captures of very many
connections analysed within a budget, in time linear in their size."""

from __future__ import annotations

import contextlib
import io
import json
import resource
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from farlink import simulate
from farlink.captures.analysis import analyze_capture, read_capture
from farlink.cli.app import main
from farlink.outputs import MANIFEST
from hostile_captures import (
    ethernet,
    interface,
    one_packet_connections_pcap,
    packet,
    section_header,
)


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def sim_records() -> list[tuple[int, bytes]]:
    """(time in ns, raw IPv4 packet) of a short lossy transfer's capture."""
    doc = {
        "name": "hostile-chain",
        "seed": 5,
        "duration": "20s",
        "nodes": ["S", "R", "D"],
        "links": [
            {"name": "S-R", "a": "S", "b": "R", "rate": "10Mbps", "delay": "1ms"},
            {"name": "R-D", "a": "R", "b": "D", "rate": "1Mbps", "delay": "20ms",
             "queue_pkts": 20, "fwd": {"loss": {"model": "bernoulli", "p": 0.02}}},
        ],
        "flows": [{"name": "f", "from": "S", "to": "D", "app": {"kind": "bulk", "size": "60KB"}}],
        "pcap": ["S-R"],
    }  # fmt: skip
    data = simulate(doc).pcap["S-R"]
    out, pos = [], 24
    while pos < len(data):
        sec, ns, incl, _ = struct.unpack_from("<IIII", data, pos)
        out.append((sec * 10**9 + ns, data[pos + 16 : pos + 16 + incl]))
        pos += 16 + incl
    return out


def _reference(tmp_path: Path, recs: list[tuple[int, bytes]]):
    head = struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 101)
    body = b"".join(
        struct.pack("<IIII", t // 10**9, t % 10**9, len(b), len(b)) + b for t, b in recs
    )
    path = tmp_path / "ref.pcap"
    path.write_bytes(head + body)
    return analyze_capture(path)


def test_pcapng_reads_each_packet_by_its_own_interface(sim_records, tmp_path):
    """Three interfaces (Ethernet in ns, raw IP in µs, 802.11 which farlink does not read) and
    a second section in the other byte order: every segment read once, at its own time."""
    _, (ref,) = _reference(tmp_path, sim_records)
    half = len(sim_records) // 2
    blocks = [section_header(), interface(1, tsresol=9), interface(101), interface(105)]
    for k, (t_ns, ip) in enumerate(sim_records[:half]):
        if k % 2:
            blocks.append(packet(0, t_ns, ethernet(ip)))
        else:
            blocks.append(packet(1, t_ns // 1000, ip))
        if k % 5 == 0:
            blocks.append(packet(2, t_ns // 1000, b"\x08\x02" + ip))  # a radio frame: skipped
    # A new section: big-endian, its only interface raw IP in nanoseconds.
    blocks += [section_header(">"), interface(101, tsresol=9, order=">")]
    blocks += [packet(0, t_ns, ip, ">") for t_ns, ip in sim_records[half:]]
    path = tmp_path / "multi.pcapng"
    path.write_bytes(b"".join(blocks))

    cap, (conn,) = analyze_capture(path)
    radio = (half + 4) // 5
    assert cap.interfaces == [1, 101, 105, 101]
    assert cap.skipped["other_link"] == radio and cap.skipped["non_ip"] == 0
    assert cap.records == len(sim_records) + radio
    assert len(cap.warnings) == 1 and f"{radio} on link type 105" in cap.warnings[0]
    assert len(conn.seq["seq"]) == len(ref.seq["seq"])
    assert conn.retransmissions == ref.retransmissions
    assert conn.delivered_bytes == ref.delivered_bytes
    # µs interfaces lose the ns digits, nothing more.
    assert np.allclose(conn.seq["time_s"], ref.seq["time_s"], atol=1.5e-6)

    code, _, err = cli("analyze", str(path), "--out", str(tmp_path / "a"), "--json")
    assert code == 0 and err.count("link type 105") == 1
    # Packets skipped for their link type count toward the bound on records as any other.
    bounded = read_capture(path, max_records=10)
    assert bounded.records == 10 and "stopped after 10 records" in bounded.warnings[0]


def test_a_pcapng_interface_of_a_resolution_no_clock_has_is_a_cut_with_a_warning(
    sim_records, tmp_path
):
    blocks = [section_header(), interface(101)]
    blocks += [packet(0, t // 1000, ip) for t, ip in sim_records[:40]]
    blocks.append(interface(101, tsresol=120))
    blocks += [packet(1, t, ip) for t, ip in sim_records[40:]]
    path = tmp_path / "resol.pcapng"
    path.write_bytes(b"".join(blocks))
    cap = analyze_capture(path)[0]
    assert cap.records == 40 and "finer than any clock" in cap.warnings[0]


def test_a_packet_naming_an_interface_never_described_is_malformed(sim_records, tmp_path):
    blocks = [section_header(), interface(101)]
    blocks += [packet(k % 3 // 2, t // 1000, ip) for k, (t, ip) in enumerate(sim_records)]
    path = tmp_path / "ghost.pcapng"
    path.write_bytes(b"".join(blocks))
    cap = analyze_capture(path)[0]
    ghosts = sum(1 for k in range(len(sim_records)) if k % 3 == 2)
    assert cap.skipped["malformed"] == ghosts and cap.records == len(sim_records)


def test_many_connections_are_analysed_in_time_linear_in_them(tmp_path):
    """300 one-packet connections: before, the figures' legends and a table per connection
    took a minute; now the figures and tables show ten, --json lists all 300."""
    path = tmp_path / "many.pcap"
    path.write_bytes(one_packet_connections_pcap(300))
    started = time.monotonic()
    code, out, err = cli("analyze", str(path), "--out", str(tmp_path / "a"), "--json")
    elapsed_s = time.monotonic() - started
    assert code == 0, err
    assert len(json.loads(out)["connections"]) == 300
    assert "300 connections; the figures and tables show the 10" in err
    assert elapsed_s < 20, elapsed_s
    code, out, err = cli("analyze", str(path), "--out", str(tmp_path / "a"))
    assert code == 0 and out.count("connection 10.") == 10


def test_a_capture_over_the_connection_budget_is_refused_before_analysis(tmp_path, capsys):
    path = tmp_path / "many.pcap"
    path.write_bytes(one_packet_connections_pcap(2000))
    code, out, _ = cli("analyze", str(path), "--estimate", "--json", "--budget-connections", "500")
    estimate = json.loads(out)
    assert code == 0 and estimate["connections"] == 2000 and estimate["tcp_packets"] == 2000
    assert estimate["within_budget"] is False
    out_dir = tmp_path / "a"
    started = time.monotonic()
    code, _, err = cli("analyze", str(path), "--out", str(out_dir), "--budget-connections", "500")
    assert time.monotonic() - started < 10
    assert code == 2 and err.count("\n") == 1, err
    assert "2,000 connections carry data, above the budget of 500" in err
    assert "--budget-connections 2000" in err
    assert not out_dir.exists()
    code, _, err = cli("analyze", str(path), "--budget-connections", "0")
    assert code == 2 and "--budget-connections: expected at least 1" in err


def test_a_killed_analysis_leaves_a_folder_its_rerun_replaces(tmp_path, monkeypatch):
    """The folder is claimed (its manifest written) before the first figure."""
    import farlink.captures.figures as figures

    path = tmp_path / "few.pcap"
    path.write_bytes(one_packet_connections_pcap(3))
    out_dir = tmp_path / "a"

    def killed(connections, folder, **kw):
        (Path(folder) / f"{kw['stem']}-tseq.png").write_bytes(b"half a figure")
        raise KeyboardInterrupt  # as if the process ended here

    with monkeypatch.context() as m:
        m.setattr(figures, "plot_connections", killed)
        code, _, _ = cli("analyze", str(path), "--out", str(out_dir))
    assert code == 130
    assert (out_dir / MANIFEST).exists()
    code, _, err = cli("analyze", str(path), "--out", str(out_dir))
    assert code == 0, err
    assert (out_dir / "few-tseq.png").read_bytes() != b"half a figure"


@pytest.mark.slow
def test_two_hundred_thousand_connections_in_30_s_and_1_gib(tmp_path):
    """The issue's capture: 200,000 one-packet connections (16 MB), refused by the default
    budget in one line, within 30 s and 1 GiB."""
    path = tmp_path / "huge.pcap"
    path.write_bytes(one_packet_connections_pcap(200_000))
    started = time.monotonic()
    farlink = str(Path(sys.executable).parent / "farlink")
    proc = subprocess.run(
        [farlink, "analyze", str(path), "--out", str(tmp_path / "a")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    elapsed_s = time.monotonic() - started
    peak_bytes = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    print(f"200,000 connections: {elapsed_s:.1f} s, peak {peak_bytes / 2**20:.0f} MiB")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "200,000 connections carry data, above the budget" in proc.stderr
    assert elapsed_s < 30 and peak_bytes < 2**30
