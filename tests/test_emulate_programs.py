"""A program as the emulator's workload is measured as the built-in transfer is: a server
listening where it likes (IPv4 or IPv6), the program's connections read through sock_diag, its
output kept off the JSON document; and `simulate`'s other flow keys in every emulation. These
make network namespaces and TUN devices (CI runs as root); without CAP_NET_ADMIN or
/dev/net/tun they are skipped, saying which."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from support import FARLINK_ARGV, REAL_TIME, needs_namespaces

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "docs" / "result.schema.json").read_text(encoding="utf-8"))
PY = sys.executable
PARITY_KEYS = (
    "segments_sent",
    "min_rtt_s",
    "fast_retransmits",
    "limited_by",
    "limited_s",
    "data_segments_delivered",
    "acks_sent",
)

pytestmark = [REAL_TIME, needs_namespaces("emulator")]


def farlink(*args: str, timeout_s: float = 120):
    return subprocess.run([*FARLINK_ARGV, *args], capture_output=True, text=True, timeout=timeout_s)


def check_schema(doc):
    """The keys shared with simulate, each against the schema's definition of it."""
    flow_props = SCHEMA["$defs"]["flow"]["properties"]
    for flow in doc["flows"]:
        for key in PARITY_KEYS:
            jsonschema.validate(flow[key], flow_props[key])
    for key in ("fast_retransmits", "data_segments_delivered"):
        jsonschema.validate(doc[key], SCHEMA["properties"][key])


@pytest.mark.skipif(
    shutil.which("iperf3") is None, reason="iperf3 missing (make setup installs it)"
)
def test_iperf3_against_its_own_server_is_measured_as_iperf3_measures_it(tmp_path):
    # One 10-s iperf3 run (13 s in all) checks the server on a port and family of its own,
    # the program's connections measured, and standard output kept for the document: a shorter
    # test would have the connection set-up's round trips weigh on the comparison.
    client_log = tmp_path / "client.json"
    client = f"iperf3 -c $FARLINK_PEER -p $FARLINK_PORT -t 10 -J --logfile {client_log}"
    run = farlink("emulate", "stpd-wireless", "--server", "iperf3 -s", "--json",
                  "--out", str(tmp_path / "run"), "--", "sh", "-c", client)  # fmt: skip
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)  # the document alone: the programs' output went elsewhere
    check_schema(doc)
    printed = (tmp_path / "run" / "command-stdout.txt").read_text(encoding="utf-8")
    assert "Server listening on 5201" in printed
    # iperf3 listens on [::]:5201; the command was told that port, over IPv4.
    assert doc["command"]["port"] == 5201
    iperf = json.loads(client_log.read_text(encoding="utf-8"))["end"]
    received_bps = iperf["sum_received"]["bits_per_second"]
    (flow,) = doc["flows"]
    assert abs(flow["goodput_bps"] - received_bps) <= 0.05 * received_bps, (flow, received_bps)
    assert flow["delivered_bytes"] >= iperf["sum_received"]["bytes"]
    assert flow["retransmissions"] >= iperf["sum_sent"]["retransmits"] > 0
    assert flow["transfer_time_s"] is not None and flow["finished"]
    # The control connection moved a few hundred bytes and does not set the time; the data
    # connection does.
    conns = doc["command"]["connections"]
    assert [c["transfer"] for c in conns] == [False, True], conns
    assert all(c["ended"] for c in conns)
    assert flow["min_rtt_s"] >= 0.160 and flow["segments_sent"] > flow["retransmissions"]


def test_a_server_on_a_port_of_its_own_on_ipv6_serves_the_client(tmp_path):
    (tmp_path / "blob").write_bytes(bytes(range(256)) * 200)
    # http.server binds to [::] (dual-stack) when given no address; a listener on loopback,
    # which the client cannot reach, is not the one the client is told.
    server = (
        f"{PY} -m http.server 9000 --bind 127.0.0.1 -d {tmp_path} & "
        f"exec {PY} -m http.server 8000 -d {tmp_path}"
    )
    client = (
        "import os, urllib.request; "
        "url = f\"http://{os.environ['FARLINK_PEER']}:{os.environ['FARLINK_PORT']}/blob\"; "
        "body = urllib.request.urlopen(url, timeout=60).read(); "
        f"open({str(tmp_path / 'got')!r}, 'wb').write(body); print('got', len(body))"
    )
    run = farlink("emulate", "stpd-wireless", "--json", "--server", server,
                  "--", PY, "-c", client)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "got").read_bytes() == (tmp_path / "blob").read_bytes()
    # Without --out, the client's output went to standard error.
    assert "got 51200" in run.stderr
    doc = json.loads(run.stdout)
    assert doc["command"]["port"] == 8000
    (flow,) = doc["flows"]
    # The reply is what the client's connection received.
    assert flow["delivered_bytes"] >= 51_200 and flow["goodput_bps"] > 0


def test_a_server_that_ends_before_listening_is_one_line_naming_what_listened():
    run = farlink("emulate", "stpd-wireless", "--server", "exit 3", "--", "true")
    assert run.returncode == 2
    assert run.stderr.startswith("farlink: error: the --server command ended (status 3)")
    assert "listening in its namespace: nothing" in run.stderr
    assert run.stderr.count("\n") == 1


def test_a_controller_the_kernel_lacks_is_refused_for_a_command_naming_it_and_the_fix():
    run = farlink("emulate", "iridium-4", "--", "true")
    assert run.returncode == 2
    assert '"bic"' in run.stderr and "--tcp cubic" in run.stderr
    assert "--sender farlink" in run.stderr and run.stderr.count("\n") == 1


def test_an_emulation_has_the_flow_keys_simulate_has(tmp_path):
    run = farlink("emulate", "stpd-wireless", "--tcp", "cubic", "--size", "300KB", "--loss",
                  "0.03", "--json", "--out", str(tmp_path))  # fmt: skip
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    check_schema(doc)
    (flow,) = doc["flows"]
    assert all(k in flow for k in PARITY_KEYS), [k for k in PARITY_KEYS if k not in flow]
    segments = -(-300_000 // 960)
    # Every segment reached the receiver at least once; the links delivered no more than
    # the kernel sent, and no more data than R-D's forward direction carried in all.
    r_d = next(link for link in doc["links"] if link["name"] == "R-D")
    assert segments <= flow["data_segments_delivered"] <= flow["segments_sent"]
    assert flow["data_segments_delivered"] <= r_d["fwd"]["delivered_pkts"]
    assert 0 < flow["acks_sent"] <= r_d["rev"]["offered_pkts"]
    # Two 80-ms hops each way and a 0.1-ms one: no RTT below 160 ms.
    assert 0.160 <= flow["min_rtt_s"] < 1.0
    # 3 % loss over ~313 segments: some recoveries, each with a retransmission at least.
    assert 1 <= flow["fast_retransmits"] <= flow["retransmissions"]
    assert doc["fast_retransmits"] == flow["fast_retransmits"]
    assert doc["data_segments_delivered"] == flow["data_segments_delivered"]
    limited = flow["limited_s"]
    assert limited["link"] is None and flow["limited_by"] in limited
    counted_s = sum(v for v in limited.values() if v is not None)
    # The chronographs cover the transfer (and the last ACK's round trip after it).
    assert flow["transfer_time_s"] * 0.95 <= counted_s <= flow["transfer_time_s"] + 1.0
