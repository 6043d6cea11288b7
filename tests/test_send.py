"""`farlink send`: farlink's sender to a real listener in a namespace the test makes, the bytes
checked by the listener's own SHA-256; its errors in one line; no device left behind, also when
the sender is killed (docs/wire.md, "farlink send")."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from support import FARLINK_ARGV, REAL_TIME, assert_one_error, needs_namespaces, run

pytestmark = REAL_TIME

LISTENER_ADDR = "10.77.0.1"
SIZE_BYTES = 1_000_000
# Generous bounds for a loaded machine; a transfer on the namespace's own device takes ms.
STEP_TIMEOUT_S = 60.0

# Reads one connection to EOF and prints the byte count and SHA-256; with "stall", accepts and
# never reads (the sender then waits on a closed window until it is killed).
LISTENER = r"""
import hashlib, socket, sys, time
addr, mode = sys.argv[1], sys.argv[2]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
s.bind((addr, 0))
s.listen(1)
print(s.getsockname()[1], flush=True)
c, _ = s.accept()
print("accepted", flush=True)
if mode == "stall":
    time.sleep(120)
h, n = hashlib.sha256(), 0
while True:
    b = c.recv(65536)
    if not b:
        break
    h.update(b)
    n += len(b)
print(n, h.hexdigest(), flush=True)
"""


def ip(*args: str) -> str:
    return subprocess.run(
        ["ip", *args], check=True, capture_output=True, text=True, timeout=10
    ).stdout


class ListenerNamespace:
    """A namespace of the test's own (`farlink-sendt<pid>-<n>`) with an address on its
    loopback device and a Python listener on it; `close` ends the listener and removes the
    namespace."""

    count = 0

    def __init__(self, mode: str = "read") -> None:
        ListenerNamespace.count += 1
        self.name = f"farlink-sendt{os.getpid()}-{ListenerNamespace.count}"
        ip("netns", "add", self.name)
        ip("-n", self.name, "link", "set", "lo", "up")
        ip("-n", self.name, "addr", "add", f"{LISTENER_ADDR}/32", "dev", "lo")
        self.listener = subprocess.Popen(
            ["ip", "netns", "exec", self.name, sys.executable, "-c", LISTENER, LISTENER_ADDR, mode],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.port = int(self.listener.stdout.readline())

    def devices(self) -> list[str]:
        out = ip("-n", self.name, "-o", "link", "show")
        return [line.split(":")[1].strip() for line in out.splitlines()]

    def result(self) -> tuple[int, str]:
        out, _ = self.listener.communicate(timeout=STEP_TIMEOUT_S)
        count, digest = out.split()[-2:]
        return int(count), digest

    def close(self) -> None:
        if self.listener.poll() is None:
            self.listener.kill()
        self.listener.communicate(timeout=10)
        subprocess.run(["ip", "netns", "delete", self.name], capture_output=True, timeout=10)


@pytest.fixture
def listener_ns():
    made: list[ListenerNamespace] = []

    def make(mode: str = "read") -> ListenerNamespace:
        made.append(ListenerNamespace(mode))
        return made[-1]

    yield make
    for ns in made:
        ns.close()
        assert ns.name not in ip("netns", "list")


@needs_namespaces("farlink send")
@pytest.mark.parametrize("cc", ["stpd", "reno"])
def test_the_listener_reads_exactly_the_bytes_sent(capsys, listener_ns, cc):
    ns = listener_ns()
    code, out, err = run(
        capsys,
        "send", LISTENER_ADDR, ns.port, "--netns", ns.name, "--tcp", cc,
        "--size", "1MB", "--json",
    )  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert report["bytes_acked"] == SIZE_BYTES
    assert report["transfer_time_s"] > 0 and report["goodput_bps"] > 0
    assert report["error"] is None and not report["interrupted"]
    assert ns.result() == (SIZE_BYTES, report["sha256"])
    assert ns.devices() == ["lo"]


@needs_namespaces("farlink send")
def test_a_closed_port_is_one_line(capsys, listener_ns):
    ns = listener_ns()
    closed = ns.port + 1 if ns.port < 65535 else ns.port - 1
    code, _, err = run(capsys, "send", LISTENER_ADDR, closed, "--netns", ns.name, "--size", "10KB")
    assert_one_error(code, err, "connection refused", f"{LISTENER_ADDR}:{closed}")
    assert ns.devices() == ["lo"]


@needs_namespaces("farlink send")
def test_a_listener_elsewhere_needs_forwarding_and_a_route(capsys, listener_ns):
    # Without forwarding `send` refuses before it starts; a namespace of the test's own may
    # forward, and with no route to HOST its kernel answers the SYN with an ICMP unreachable.
    ns = listener_ns()
    code, _, err = run(capsys, "send", "10.99.0.1", 80, "--netns", ns.name, "--size", "10KB")
    assert_one_error(code, err, "HOST", "does not forward")
    ip("netns", "exec", ns.name, "sysctl", "-qw", "net.ipv4.ip_forward=1")
    code, _, err = run(capsys, "send", "10.99.0.1", 80, "--netns", ns.name, "--size", "10KB")
    assert_one_error(code, err, "unreachable", "network unreachable")
    assert ns.devices() == ["lo"]


@needs_namespaces("farlink send")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_stopped_or_killed_sender_leaves_no_device(listener_ns, sig):
    ns = listener_ns("stall")
    proc = subprocess.Popen(
        [*FARLINK_ARGV, "send", LISTENER_ADDR, str(ns.port), "--netns", ns.name, "--size", "10MB"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # Mid-transfer: the listener has accepted and reads nothing, so the window closes.
        assert ns.listener.stdout.readline().strip() == "accepted"
        assert any(d.startswith("farlink") for d in ns.devices())
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=STEP_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    if sig == signal.SIGTERM:
        assert proc.returncode == 130, err
    else:
        assert proc.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 10
    while ns.devices() != ["lo"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ns.devices() == ["lo"]


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["no-such-host.invalid", "80"], ["HOST", "cannot resolve"]),
        (["127.0.0.1", "80"], ["HOST", "loopback"]),
        (["10.77.0.1", "0"], ["PORT", "not a TCP port"]),
        (["10.77.0.1", "80", "--netns", "other"], ["--netns", "not a namespace farlink made"]),
        (["10.77.0.1", "80", "--tcp", "nosuch"], ["--tcp"]),
        (["10.77.0.1", "80", "--set", "links[0].rate=1"], ["--set", "tcp.FIELD=VALUE"]),
        (["10.77.0.1", "80", "--size", "lots"], ["--size"]),
    ],
)
def test_bad_input_is_one_line(capsys, args, fragments):
    code, _, err = run(capsys, "send", *args)
    assert_one_error(code, err, *fragments)
