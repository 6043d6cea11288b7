"""A real kernel path in network namespaces: sender S, router M and receiver R.

    S (s0) ---- (m0) M (m1) ---- (r0) R
                 FORWARD drops    INPUT drops
                 tbf on m1 egress

The bottleneck is a tbf on M's interface towards R. Random drops are iptables ``statistic``
rules on data segments (IP length above 100 bytes) of the flow's port: those in M's FORWARD
chain happen before the tbf's queue, those in R's INPUT chain after the bottleneck. The capture
tests (tests/realcap.py) tap it; ``bench/compare_tbf.py`` sets it beside the emulator.

Everything made is named ``farlink-rc<pid>-...``; namespaces left by a process that no longer
exists (one killed before its clean-up ran) are removed when the next run starts, and every
child process gets SIGKILL from the kernel if the process that started it dies
(``PR_SET_PDEATHSIG``). Traffic never leaves the namespaces made here.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# "farlink-rc<pid>-": the project's prefix, then a tag of its own (not hexadecimal, so no other
# part of the project that names namespaces farlink-<hex>-... takes these for its own).
PREFIX = "farlink-rc"
PORT = 5201
# What building the path needs; the capture tests also need tcpdump, tshark and nstat.
PATH_TOOLS = ("ip", "tc", "iptables", "ethtool")


@dataclass(frozen=True)
class Case:
    """One real transfer: congestion control, where drops happen, offloads, addressing."""

    name: str
    cc: str = "cubic"
    drop_before: float = 0.0  # probability per data segment, in M before the tbf and the tap
    drop_after: float = 0.0  # probability per data segment, in R after the tap
    offloads: bool = False  # TSO/GSO/GRO left on (super-segments at both taps)
    rate: str = "20mbit"
    limit_bytes: int = 150_000  # tbf queue: 60 ms at 20 Mbit/s, a standing queue for cubic/reno
    # tbf bucket: large enough to let a 64 KB GSO super-segment through whole (tbf segments a
    # larger one).
    burst: str = "80kb"
    size_bytes: int = 3_000_000
    flows: int = 1
    sack: bool = True
    ipv6: bool = False
    vlan: bool = False  # the M - R link carries 802.1Q tag 42
    any_interface: bool = False  # tap with `tcpdump -i any` (Linux cooked v2) in S, not on m1
    # The tbf on the sender's own interface (s0: a host with a slow uplink) in place of M's; the
    # sender's capture on s0 is then below a local shaper, whose queue is before that tap.
    shaper_at_sender: bool = False
    timeout_s: float = 30.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def missing_capability(tools: tuple[str, ...] = PATH_TOOLS) -> str | None:
    """Why the path cannot be built here (None when it can)."""
    if sys.platform != "linux":
        return "real captures need Linux network namespaces"
    if os.geteuid() != 0:
        return "real captures need root (network namespaces, tc, iptables, tcpdump)"
    absent = [t for t in tools if shutil.which(t) is None]
    if absent:
        return f"missing tools {', '.join(absent)} (make setup installs them as root)"
    probe = f"{PREFIX}probe-{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode:
        return f"cannot create a network namespace: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _die_with_parent() -> None:
    # The child gets SIGKILL when the process that started it dies, however it dies.
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _sh(*args: str, check: bool = True) -> str:
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=20)
    if check and done.returncode:
        what = f"{' '.join(args)}: {done.stderr.strip()}"
        if any(sign in done.stderr for sign in _GONE):
            raise NamespaceGone(what)
        raise RuntimeError(what)
    return done.stdout


def remove_stale() -> None:
    """Delete namespaces named ``farlink-rc<pid>-...`` whose process is gone."""
    for line in _sh("ip", "netns", "list").splitlines():
        name = line.split()[0] if line.split() else ""
        m = re.match(rf"{PREFIX}(\d+)-", name)
        if m and not Path(f"/proc/{m.group(1)}").exists():
            _sh("ip", "netns", "del", name, check=False)


# The sending and receiving programs, run inside the namespaces by the system's Python.
_GONE = ("Cannot open network namespace", "Cannot find device")


class NamespaceGone(RuntimeError):
    """A namespace of the run vanished under it (removed by something else on the machine)."""


class Net:
    """The three namespaces of one run; a context manager that always removes them."""

    def __init__(self, case: Case, tag: str):
        self.case = case
        base = f"{PREFIX}{os.getpid()}-{tag}"
        self.ns = {k: f"{base}-{k}" for k in "smr"}
        self.procs: list[subprocess.Popen] = []
        v6 = case.ipv6
        self.r_addr = "fd00:f1:2::2" if v6 else "10.201.2.2"

    def ex(self, ns: str, *args: str, check: bool = True) -> str:
        return _sh("ip", "netns", "exec", self.ns[ns], *args, check=check)

    def popen(self, ns: str, *args: str, **kw: Any) -> subprocess.Popen:
        p = subprocess.Popen(
            ["ip", "netns", "exec", self.ns[ns], *args],
            preexec_fn=_die_with_parent,
            **kw,
        )
        self.procs.append(p)
        return p

    def __enter__(self) -> Net:
        remove_stale()
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=5)
            for stream in (p.stdin, p.stdout, p.stderr):
                if stream is not None:
                    stream.close()
        for name in self.ns.values():
            _sh("ip", "netns", "del", name, check=False)

    def _build(self) -> None:
        c = self.case
        for name in self.ns.values():
            _sh("ip", "netns", "add", name)
        _sh(
            "ip",
            "link",
            "add",
            "s0",
            "netns",
            self.ns["s"],
            "type",
            "veth",
            "peer",
            "name",
            "m0",
            "netns",
            self.ns["m"],
        )
        _sh(
            "ip",
            "link",
            "add",
            "m1",
            "netns",
            self.ns["m"],
            "type",
            "veth",
            "peer",
            "name",
            "r0",
            "netns",
            self.ns["r"],
        )
        links = {"s": ["s0"], "m": ["m0", "m1"], "r": ["r0"]}
        for ns, devs in links.items():
            self.ex(ns, "ip", "link", "set", "lo", "up")
            for dev in devs:
                self.ex(ns, "ip", "link", "set", dev, "up")
                if not c.offloads:
                    self.ex(
                        ns,
                        "ethtool",
                        "-K",
                        dev,
                        "tso",
                        "off",
                        "gso",
                        "off",
                        "gro",
                        "off",
                        check=False,
                    )
        mr_m, mr_r = "m1", "r0"
        if c.vlan:
            self.ex(
                "m", "ip", "link", "add", "link", "m1", "name", "m1.42", "type", "vlan", "id", "42"
            )
            self.ex(
                "r", "ip", "link", "add", "link", "r0", "name", "r0.42", "type", "vlan", "id", "42"
            )
            self.ex("m", "ip", "link", "set", "m1.42", "up")
            self.ex("r", "ip", "link", "set", "r0.42", "up")
            mr_m, mr_r = "m1.42", "r0.42"
        if c.ipv6:
            for ns in "smr":
                self.ex(ns, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0")
                self.ex(ns, "sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0")
            addrs = [
                ("s", "s0", "fd00:f1:1::1/64"),
                ("m", "m0", "fd00:f1:1::2/64"),
                ("m", mr_m, "fd00:f1:2::1/64"),
                ("r", mr_r, "fd00:f1:2::2/64"),
            ]
            for ns, dev, a in addrs:
                self.ex(ns, "ip", "-6", "addr", "add", a, "dev", dev, "nodad")
            self.ex("s", "ip", "-6", "route", "add", "default", "via", "fd00:f1:1::2")
            self.ex("r", "ip", "-6", "route", "add", "default", "via", "fd00:f1:2::1")
            self.ex("m", "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
        else:
            addrs = [
                ("s", "s0", "10.201.1.1/24"),
                ("m", "m0", "10.201.1.2/24"),
                ("m", mr_m, "10.201.2.1/24"),
                ("r", mr_r, "10.201.2.2/24"),
            ]
            for ns, dev, a in addrs:
                self.ex(ns, "ip", "addr", "add", a, "dev", dev)
            self.ex("s", "ip", "route", "add", "default", "via", "10.201.1.2")
            self.ex("r", "ip", "route", "add", "default", "via", "10.201.2.1")
            self.ex("m", "sysctl", "-qw", "net.ipv4.ip_forward=1")
        shaper_ns, shaper_dev = self.shaper
        self.ex(
            shaper_ns,
            "tc",
            "qdisc",
            "add",
            "dev",
            shaper_dev,
            "root",
            "tbf",
            "rate",
            c.rate,
            "burst",
            c.burst,
            "limit",
            str(c.limit_bytes),
        )
        tables = "ip6tables" if c.ipv6 else "iptables"
        rule = [
            "-p",
            "tcp",
            "--dport",
            str(PORT),
            "-m",
            "length",
            "--length",
            "100:65535",
            "-m",
            "statistic",
            "--mode",
            "random",
        ]
        if c.drop_before:
            self.ex(
                "m",
                tables,
                "-A",
                "FORWARD",
                "-i",
                "m0",
                *rule,
                "--probability",
                f"{c.drop_before:g}",
                "-j",
                "DROP",
            )
        if c.drop_after:
            self.ex(
                "r",
                tables,
                "-A",
                "INPUT",
                *rule,
                "--probability",
                f"{c.drop_after:g}",
                "-j",
                "DROP",
            )

    @property
    def shaper(self) -> tuple[str, str]:
        """The namespace and interface the tbf is on."""
        return ("s", "s0") if self.case.shaper_at_sender else ("m", "m1")

    def queue_drops(self) -> int:
        out = self.ex(self.shaper[0], "tc", "-s", "qdisc", "show", "dev", self.shaper[1])
        m = re.search(r"dropped (\d+)", out)
        return int(m.group(1)) if m else 0

    def drops(self, ns: str, chain: str) -> int:
        tables = "ip6tables" if self.case.ipv6 else "iptables"
        out = self.ex(ns, tables, "-L", chain, "-v", "-x", "-n", check=False)
        return sum(int(line.split()[0]) for line in out.splitlines() if "DROP" in line)


# A sender for a fixed time that samples its own TCP_INFO every `interval` seconds, run inside S
# by the system's Python. Offsets are those of the kernel's struct tcp_info
# (include/uapi/linux/tcp.h), as crates/farlink-emu/src/tcpinfo.rs reads them.
_TIMED_CLIENT = r"""
import json, socket, struct, sys, threading, time
host, port, cc = sys.argv[1], int(sys.argv[2]), sys.argv[4]
seconds, interval = float(sys.argv[3]), float(sys.argv[5])
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
s.connect((host, port))
def info():
    raw = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    u32 = lambda off: struct.unpack_from("I", raw, off)[0]
    return {"rtt_us": u32(68), "min_rtt_us": u32(148), "cwnd_pkts": u32(80), "mss": u32(16),
            "total_retrans": u32(100), "bytes_acked": struct.unpack_from("Q", raw, 120)[0],
            "total_rto": struct.unpack_from("H", raw, 240)[0] if len(raw) >= 242 else None}
t0 = time.monotonic()
samples, stop = [{"time_s": 0.0, **info()}], threading.Event()  # srtt from the handshake
def sample():
    while not stop.wait(interval):
        samples.append({"time_s": time.monotonic() - t0, **info()})
threading.Thread(target=sample, daemon=True).start()
block = b"x" * 65536
while time.monotonic() - t0 < seconds:
    s.send(block)
elapsed = time.monotonic() - t0
stop.set()
end = info()
s.close()
print(json.dumps({"elapsed_s": elapsed, "end": end, "samples": samples}))
"""

_SINK = r"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1)
print("ready", flush=True)
c, _a = s.accept()
while c.recv(1 << 20):
    pass
"""


def timed_transfer(net: Net, cc: str, duration_s: float, interval_s: float = 0.01) -> dict:
    """A bulk transfer from S to R for ``duration_s`` with ``cc``; the sender's TCP_INFO every
    ``interval_s`` (``samples``) and at the end (``end``), and the time it sent for."""
    sink = net.popen(
        "r", sys.executable, "-c", _SINK, net.r_addr, str(PORT), stdout=subprocess.PIPE, text=True
    )
    assert sink.stdout is not None
    sink.stdout.readline()
    args = [net.r_addr, str(PORT), str(duration_s), cc, str(interval_s)]
    client = net.popen(
        "s",
        sys.executable,
        "-c",
        _TIMED_CLIENT,
        *args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        stdout, stderr = client.communicate(timeout=duration_s + 30)
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"transfer did not end in {duration_s + 30} s") from exc
    if client.returncode:
        raise RuntimeError(f"sender failed: {stderr.strip()}")
    return json.loads(stdout)
