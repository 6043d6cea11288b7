"""The real-systems surfaces under hostile input: event logs, link-manager configurations,
pcapng interfaces, captures of many connections, and raw HTTP to the dashboard.

Each case is generated from a seed (``FARLINK_FUZZ_SEED``, 17 by default) and its number, so a
failure names what reproduces it. Every command runs in a child process under the limits of
``tests/test_cli_fuzz.py`` (2 GiB of address space, a time limit) and must end as that fuzzer
asks: exit 0 (stderr only ``farlink: warning:`` lines) or exit 2 with exactly one
``farlink: error:`` line; never a traceback, a crash or a hang. Besides, every case checks the
rule of docs/security.md on what it wrote: a file the case made that farlink did not write is
untouched, and nothing appears outside the case's folder (``/dev/null-journal``).

``make test`` runs ``FARLINK_FUZZ_SURFACE_CASES`` (2) cases of each surface (each reads its log
with three of the six commands, in about 25 s in all) and 40 raw requests; ``make fuzz-cli``
(part of ``make fuzz``) runs hundreds from a new seed.
"""

from __future__ import annotations

import contextlib
import os
import random
import socket
import sqlite3
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from farlink.linkmgr.synthetic import LogWriter
from hostile_captures import (
    ethernet,
    interface,
    one_packet_connections_pcap,
    packet,
    section_header,
)
from test_cli_fuzz import Outcome, _limits, judge_lines

SEED = int(os.environ.get("FARLINK_FUZZ_SEED", "17"))
CASES = int(os.environ.get("FARLINK_FUZZ_SURFACE_CASES", "2"))
REQUESTS = int(os.environ.get("FARLINK_FUZZ_SURFACE_REQUESTS", "40"))
TIME_LIMIT_S = float(os.environ.get("FARLINK_FUZZ_CASE_SECONDS", "10"))
FARLINK = str(Path(sys.executable).with_name("farlink"))
PRECIOUS = b"a file of someone else's\n"


def run(argv: list[str], folder: Path, time_limit_s: float = TIME_LIMIT_S) -> Outcome:
    try:
        done = subprocess.run(
            [FARLINK, *argv], capture_output=True, text=True, timeout=time_limit_s,
            preexec_fn=_limits, cwd=folder, errors="replace",
        )  # fmt: skip
    except subprocess.TimeoutExpired as err:
        return Outcome(None, "", (err.stderr or b"").decode(errors="replace")[-500:])
    return Outcome(done.returncode, done.stdout, done.stderr)


def expect(outcome: Outcome, what: str) -> None:
    problem = judge_lines(outcome, warnings_first=True)
    assert problem is None, f"{what}: {problem}"


@contextlib.contextmanager
def nothing_else_touched(folder: Path):
    """A file of someone else's in ``folder`` stays as it was; /dev/null-journal is not made."""
    precious = folder / "precious.txt"
    precious.write_bytes(PRECIOUS)
    journal = Path("/dev/null-journal")
    had_journal = journal.exists()
    yield precious
    assert precious.read_bytes() == PRECIOUS, "farlink replaced a file it did not write"
    assert journal.exists() == had_journal, "farlink wrote /dev/null-journal"


def cases(surface: str) -> list[random.Random]:
    """One random stream per case, seeded by the seed, the surface and the case number."""
    return [random.Random(f"{SEED}-{surface}-{k}") for k in range(CASES)]


def case_ids(surface: str) -> list[str]:
    return [f"seed{SEED}-{surface}-{k}" for k in range(CASES)]


# --------------------------------------------------------------------------------------------
# Event logs

HOSTILE_TEXT = [
    "[" * 5000 + "]" * 5000, "{" * 40, '{"reply_s": ' * 50, "x" * 100_000, "", "\x00", "nan",
    '{"reply_s": 1e999, "handover": "yes"}', "[1, 2", '"' + "\\" * 999,
]  # fmt: skip
HOSTILE_VALUES: list[object] = [
    None, -1, 2**63 - 1, 1e308, float("nan"), float("-inf"), "seven", b"\xff\xfe", 0.5, 255, 256,
]  # fmt: skip


def event_log(folder: Path, rng: random.Random) -> Path:
    """A short valid log, then one to three hostile changes to its rows or its bytes."""
    path = folder / "log.sqlite"
    with LogWriter(path, ["A", "B"], started_unix_s=1e6) as w:
        t = 1e6
        for k in range(30):
            t += rng.uniform(0, 20)
            m = rng.randrange(2)
            kind = rng.choice(["state", "dial", "dial_result", "drop", "signal", "tx_bytes"])
            state = rng.choice(["connecting", "connected", "dropped"]) if kind == "state" else None
            detail = '{"reply_s": 0.4, "handover": false}' if kind == "signal" else None
            w.event(t, kind, m, state=state, value=float(k), detail=detail)
    with sqlite3.connect(path) as db:
        for _ in range(rng.randint(1, 3)):
            table = rng.choice(["events", "events", "meta"])
            if table == "meta":
                key = rng.choice(["modems", "role", "schema_version", "started_unix_s"])
                value = rng.choice([*HOSTILE_TEXT, "[]", '["A"]', "2"])
                db.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
            else:
                column = rng.choice(["detail", "modem", "value", "t_unix_s", "kind", "state"])
                value = rng.choice(HOSTILE_TEXT if column == "detail" else HOSTILE_VALUES)
                row = rng.randint(1, 30)
                with contextlib.suppress(sqlite3.IntegrityError):  # NOT NULL kept by SQLite
                    db.execute(f"UPDATE events SET {column} = ? WHERE id = ?", (value, row))
    if rng.random() < 0.2:
        data = bytearray(path.read_bytes())
        for _ in range(rng.randint(1, 20)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        path.write_bytes(bytes(data[: rng.randint(100, len(data))]))
    return path


LOG_COMMANDS = [
    ["linkmgr", "uptime", "{log}"], ["linkmgr", "uptime", "{log}", "--json"],
    ["linkmgr", "log", "{log}", "--csv"], ["linkmgr", "log", "{log}", "--xml"],
    ["fit-drops", "{log}"],
    ["linkmgr", "log", "{log}", "--csv", "--out", "precious.txt"],
]  # fmt: skip


@pytest.mark.parametrize("rng", cases("log"), ids=case_ids("log"))
def test_event_logs(rng, tmp_path):
    log = event_log(tmp_path, rng)
    with nothing_else_touched(tmp_path):
        for command in rng.sample(LOG_COMMANDS, 3):
            argv = [a.replace("{log}", str(log)) for a in command]
            expect(run(argv, tmp_path), " ".join(command))


# --------------------------------------------------------------------------------------------
# Link-manager configurations

PATHS = [
    "precious.txt", "/dev/null", "/dev/zero", ".", "..", "fifo", "link-to-precious", "new.sqlite",
    "sub/none/x", "", "x" * 300, "\u00e9\u0000", "precious.txt-wal",
]  # fmt: skip


def configuration(folder: Path, rng: random.Random) -> tuple[Path, str]:
    os.mkfifo(folder / "fifo")
    (folder / "link-to-precious").symlink_to("precious.txt")
    fields = {
        "role": rng.choice(['"air"', '"ground"', '"sky"', "3"]),
        "log": f'"{rng.choice(PATHS)}"' if rng.random() < 0.9 else '"log.sqlite"',
        "control": f'"{rng.choice(PATHS)}"',
        "primary": rng.choice(["true", "false", '"yes"']),
    }
    if rng.random() < 0.3:
        del fields[rng.choice(list(fields))]
    members = "".join(
        f'\n[[members]]\nname = "m{k}"\ndevice = "{rng.choice(PATHS)}"\n'
        for k in range(rng.choice([0, 1, 2, 70]))
    )
    text = "".join(f"{k} = {v}\n" for k, v in fields.items()) + members
    if rng.random() < 0.2:
        cut = rng.randrange(len(text) + 1)
        text = text[:cut] + rng.choice(["[", '"', "\x00", "=", "\n[timers]\nt_d = -1\n"])
    path = folder / "cfg.toml"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    return path, text


@pytest.mark.parametrize("rng", cases("config"), ids=case_ids("config"))
def test_link_manager_configurations(rng, tmp_path):
    with nothing_else_touched(tmp_path):
        config, text = configuration(tmp_path, rng)
        # An accepted configuration runs the daemon until it is stopped: still running at the
        # time limit with nothing on stderr is a pass.
        outcome = run(["linkmgr", "run", str(config)], tmp_path, time_limit_s=4)
        if outcome.code is None and not outcome.stderr.strip():
            return
        expect(outcome, text[:300])


# --------------------------------------------------------------------------------------------
# pcapng interfaces


def hostile_pcapng(rng: random.Random) -> bytes:
    """Sections, interfaces of any link type and resolution, packets naming any interface,
    in either byte order, sometimes with a block's bytes changed."""
    tcp = struct.pack("!HHIIHHHH", 5000, 80, 1, 0, 0x5018, 1000, 0, 0) + b"d" * 40
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0, 64, 6, 0, b"\1" * 4, b"\2" * 4)
    blocks, order, interfaces = [], "<", 0
    for _ in range(rng.randint(1, 60)):
        roll = rng.random()
        if roll < 0.05 or not blocks:
            order = rng.choice("<>")
            blocks.append(section_header(order))
            interfaces = 0
        elif roll < 0.2:
            linktype = rng.choice([1, 101, 113, 228, 276, 0, 105, 147, 65535])
            resol = rng.choice([None, 6, 9, 0, 18, 19, 127, 0x80 | 10, 0xFF])
            blocks.append(interface(linktype, resol, order))
            interfaces += 1
        else:
            iface = rng.randrange(interfaces + 2)
            junk = rng.randbytes(rng.randint(1, 80))
            frame = rng.choice([ip + tcp, ethernet(ip + tcp), b"", junk])
            ticks = rng.choice([0, 2**63, rng.randrange(2**64), 1_700_000_000 * 10**6])
            blocks.append(packet(iface, ticks, frame, order))
    data = bytearray(b"".join(blocks))
    if rng.random() < 0.3:
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data)


@pytest.mark.parametrize("rng", cases("pcapng"), ids=case_ids("pcapng"))
def test_pcapng_interfaces(rng, tmp_path):
    path = tmp_path / "c.pcapng"
    path.write_bytes(hostile_pcapng(rng))
    with nothing_else_touched(tmp_path):
        expect(run(["analyze", str(path), "--json", "--out", "out"], tmp_path), "analyze")
        expect(run(["analyze", str(path), "--out", "precious.txt"], tmp_path), "analyze --out")


# --------------------------------------------------------------------------------------------
# Captures of many connections


@pytest.mark.parametrize("rng", cases("many"), ids=case_ids("many"))
def test_many_connection_captures(rng, tmp_path):
    count = rng.choice([1, 50, 500, 3000, 30_000])
    path = tmp_path / "many.pcap"
    data = one_packet_connections_pcap(count, payload_bytes=rng.choice([0, 1, 1400]))
    path.write_bytes(data[: rng.choice([len(data), len(data) * 2 // 3])])
    budget = rng.choice([None, "1", "100", "5000"])
    flags = ["--budget-connections", budget] if budget else []
    flags += ["--estimate"] if rng.random() < 0.3 else []
    with nothing_else_touched(tmp_path):
        argv = ["analyze", str(path), "--json", "--out", "out", *flags]
        # A run within the default budget takes up to about 15 s on a busy 2-core machine.
        expect(run(argv, tmp_path, time_limit_s=max(TIME_LIMIT_S, 60)), " ".join(argv[3:]))


# --------------------------------------------------------------------------------------------
# Raw HTTP to the dashboard

METHODS = [b"GET", b"POST", b"HEAD", b"OPTIONS", b"BREW", b"G\x00T", b"", b"GET GET"]
TARGETS = [
    b"/", b"/metrics", b"/api/state", b"/events", b"http://x/", b"*", b"//x", b"/%00", b"/\x00",
    b"/?token=%ff", b"/" + b"a" * 9000, b"/../../etc/passwd", b"/?" + b"&" * 5000,
]  # fmt: skip
VERSIONS = [b"HTTP/1.1", b"HTTP/1.0", b"HTTP/2.0", b"HTTP/9", b"", b"http/1.1"]
HEADERS: list[Callable[[random.Random], bytes]] = [
    lambda r: b"Host: x\r\n",
    lambda r: b"X-Big: " + b"b" * r.choice([10, 9000, 100_000]) + b"\r\n",
    lambda r: b"X-Many: c\r\n" * r.choice([10, 200, 20_000]),
    lambda r: b"Content-Length: " + r.choice([b"5", b"-1", b"99999999999", b"x"]) + b"\r\n",
    lambda r: b"Transfer-Encoding: chunked\r\n",
    lambda r: b"Authorization: Bearer " + r.choice([b"s3cret", b"", b"\xff" * 10]) + b"\r\n",
    lambda r: b"Bad Header\r\n",
    lambda r: b": empty-name\r\n",
    lambda r: r.randbytes(r.randint(1, 64)) + b"\r\n",
]


def raw_request(rng: random.Random) -> bytes:
    line = b" ".join([rng.choice(METHODS), rng.choice(TARGETS), rng.choice(VERSIONS)])
    headers = b"".join(rng.choice(HEADERS)(rng) for _ in range(rng.randint(0, 4)))
    body = rng.choice([b"", b"hello", b"0\r\n\r\n", rng.randbytes(rng.choice([1, 1000]))])
    request = line + b"\r\n" + headers + b"Connection: close\r\n\r\n" + body
    if rng.random() < 0.15:
        request = rng.randbytes(rng.randint(1, 3000))
    return request


def exchange(port: int, payload: bytes, wait_s: float = 3.0) -> bytes:
    """Send ``payload``; what comes back within ``wait_s`` (a stream of events never ends)."""
    data, deadline = b"", time.monotonic() + wait_s
    with socket.create_connection(("127.0.0.1", port), timeout=wait_s) as sock:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(payload)
        with contextlib.suppress(ConnectionResetError, TimeoutError, OSError):
            while time.monotonic() < deadline and (chunk := sock.recv(65536)):
                data += chunk
    return data


@pytest.mark.parametrize("token", [None, "s3cret"])
def test_raw_http_to_the_dashboard(tmp_path, token):
    """Each reply is an HTTP answer below 500 whose body holds none of the request's bytes
    beyond what the page itself says, or the connection is closed; the server keeps serving and
    logs only one-line `farlink: dashboard:` lines."""
    log = tmp_path / "log.sqlite"
    with LogWriter(log, ["A"], started_unix_s=1e6) as w:
        w.event(1e6, "daemon", detail="start")
    rng = random.Random(f"{SEED}-http-{token}")
    err_path = tmp_path / "stderr.txt"
    argv = [FARLINK, "linkmgr", "dashboard", str(log), "--listen", "127.0.0.1:0"]
    argv += ["--token", token] if token else []
    with err_path.open("w") as err_file:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err_file, text=True)
        try:
            port = int(proc.stdout.readline().rsplit(":", 1)[1].split("/")[0])
            for number in range(REQUESTS):
                request = raw_request(rng)
                reply = exchange(port, request)
                what = f"seed {SEED} request {number}: {request[:80]!r}"
                if reply:
                    status = reply.split(b" ", 2)[1][:1] if reply.startswith(b"HTTP/") else b""
                    assert status and status in b"1234", (what, reply[:200])
                    if status == b"4":
                        assert len(reply) < 2048, (what, reply[:300])
                assert proc.poll() is None, what
            with contextlib.closing(socket.create_connection(("127.0.0.1", port), 10)):
                pass
        finally:
            proc.terminate()
            proc.wait(10)
            proc.stdout.close()
    lines = err_path.read_text(errors="replace").splitlines()
    stray = [line for line in lines if not line.startswith("farlink: dashboard: ")]
    assert not stray, stray[:5]


def test_the_judges_of_this_module_catch_what_they_must(tmp_path):
    with pytest.raises(AssertionError, match="replaced a file"):
        with nothing_else_touched(tmp_path) as precious:
            precious.write_bytes(b"changed")
    expect(Outcome(2, "", "farlink: error: x\n"), "one line")
    with pytest.raises(AssertionError):
        expect(Outcome(70, "", "farlink: internal error\n"), "exit 70")
    # A case is its seed and number: the same bytes every time.
    assert hostile_pcapng(random.Random(1)) == hostile_pcapng(random.Random(1))
    assert raw_request(random.Random(2)) == raw_request(random.Random(2))
