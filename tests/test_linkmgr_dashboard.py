"""The dashboard over HTTP: metrics in Prometheus' format, the token, live updates, hostile input.

Each server is a real ``farlink linkmgr dashboard`` process on a free port; all traffic goes to
127.0.0.1. The server bound off loopback (0.0.0.0) is one with a token, reached through loopback.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from farlink.cli.app import main
from farlink.linkmgr.dashboard import DashboardError, parse_listen, serve
from farlink.linkmgr.synthetic import SyntheticBundle, synthetic_log
from farlink.linkmgr.uptime import uptime_report
from linkmgr_support import T0, running_dashboard, states_log
from support import WALL_CLOCK

pytestmark = WALL_CLOCK

STATES = ("idle", "connecting", "connected", "dropped", "failed", "blocked")
TOKEN = "s3cret-token"


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes, dict[str, str]]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as err:
        return err.code, err.read(), dict(err.headers)


@pytest.fixture(scope="module")
def run_log(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("dash")
    spec = SyntheticBundle(duration_s=2 * 3600, signal_every_s=30, bytes_every_s=5)
    return synthetic_log(folder / "run.sqlite", spec, seed=4)


def test_metrics_parse_as_prometheus_text_and_match_the_log(run_log):
    report = uptime_report(run_log)
    with running_dashboard(run_log) as url:
        status, body, headers = get(url + "metrics")
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain; version=")
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    assert families and all(name.startswith("farlink_") for name in families)
    modems = [m.modem for m in report.members]
    for name in ("farlink_modem_up", "farlink_modem_uptime_ratio", "farlink_modem_drops"):
        samples = [s for s in families[name].samples if not s.name.endswith("_created")]
        assert sorted(s.labels["modem"] for s in samples) == sorted(modems), name
    state = families["farlink_modem_state"].samples
    assert sorted(s.labels["modem"] for s in state) == sorted(modems)
    drops = {s.labels["modem"]: s.value for s in families["farlink_modem_drops"].samples}
    assert drops == {m.modem: m.drops for m in report.members}
    (all_up,) = families["farlink_bundle_uptime_all_ratio"].samples
    (any_up,) = families["farlink_bundle_uptime_any_ratio"].samples
    assert all_up.value == pytest.approx(report.all_up_fraction)
    assert any_up.value == pytest.approx(report.any_up_fraction)


def test_page_and_state_describe_the_bundle(run_log):
    with running_dashboard(run_log) as url:
        status, page, headers = get(url)
        assert status == 200 and b"farlink link manager" in page
        assert "default-src 'self'" in headers["Content-Security-Policy"]
        status, body, _ = get(url + "api/state")
    state = json.loads(body)
    report = uptime_report(run_log)
    assert state["all_up_fraction"] == pytest.approx(report.all_up_fraction)
    assert [m["name"] for m in state["members"]] == [m.modem for m in report.members]
    assert state["throughput"], "the synthetic run counts bytes"


def test_off_loopback_without_a_token_it_refuses_to_start(run_log, capsys):
    code = main(["linkmgr", "dashboard", str(run_log), "--listen", "0.0.0.0:0"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "needs --token" in err
    with pytest.raises(DashboardError, match="needs --token"):
        serve(run_log, "0.0.0.0:0", None)


@pytest.mark.parametrize("listen", ["8750", "localhost:", ":80", "127.0.0.1:99999", "a:b"])
def test_a_bad_listen_address_is_one_line(run_log, capsys, listen):
    code = main(["linkmgr", "dashboard", str(run_log), "--listen", listen])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--listen" in err


def test_parse_listen_takes_ipv6_in_brackets():
    assert parse_listen("[::1]:8750") == ("::1", 8750)
    assert parse_listen("0.0.0.0:0") == ("0.0.0.0", 0)


def test_off_loopback_every_request_needs_the_token(run_log):
    with running_dashboard(run_log, "0.0.0.0:0", TOKEN) as url:
        for path in ("", "metrics", "api/state", "events", "dashboard.js", "nowhere"):
            status, _, headers = get(url + path)
            assert status == 401, path
            assert headers.get("WWW-Authenticate", "").startswith("Bearer")
        assert get(url + "metrics?token=wrong")[0] == 401
        assert get(url + "metrics?token=%ff%00")[0] == 401
        assert get(url + "metrics", {"Authorization": "Bearer \u00e9\u00e9"})[0] == 401
        assert get(url + "metrics", {"Authorization": "Bearer wrong"})[0] == 401
        assert get(url + "metrics", {"Authorization": f"Bearer {TOKEN}"})[0] == 200
        status, page, _ = get(url + f"?token={TOKEN}")
        assert status == 200
        assert f"dashboard.js?token={TOKEN}".encode() in page  # the page's own requests carry it


def _sse_messages(response, count: int) -> list[dict]:
    messages, fields = [], {}
    while len(messages) < count:
        line = response.readline().decode().rstrip("\n")
        if line.startswith("data: "):
            fields["data"] = line[6:]
        elif line.startswith("id: "):
            fields["id"] = int(line[4:])
        elif not line and "data" in fields:
            messages.append({"id": fields["id"], **json.loads(fields["data"])})
            fields = {}
    return messages


def test_server_sent_events_follow_the_log_as_it_grows(tmp_path):
    names = ["A", "B"]
    writer = states_log(tmp_path / "live.sqlite", names, ["connected", "connected"])
    with running_dashboard(tmp_path / "live.sqlite") as url:
        with urllib.request.urlopen(url + "events", timeout=30) as stream:
            (first,) = _sse_messages(stream, 1)
            assert [m["state"] for m in first["members"]] == ["connected", "connected"]
            writer.event(T0 + 400, "drop", 1, detail="carrier lost")
            writer.event(T0 + 400, "state", 1, state="dropped")
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                (update,) = _sse_messages(stream, 1)
                if update["members"][1]["state"] == "dropped":
                    break
            assert update["id"] > first["id"]
            assert update["members"][1]["state"] == "dropped"
            assert update["members"][1]["drops"] == 1
    writer.close()


GARBAGE = [
    b"\x00\xff\xfe garbage \r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nthis header has no colon\r\n\r\n",
    b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"b" * 70000 + b"\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n\r\n",
    b"GET / HTTP/7.3\r\nHost: x\r\n\r\n",
    b"G\xc3\x28T / HTTP/1.1\r\nHost: x\r\n\r\n",
    b"POST /api/state HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\nabc",
    b"DELETE / HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /%ff%fe/../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /nowhere?token=%ff%00&x=%zz HTTP/1.1\r\nHost: x\r\n\r\n",
]


def _raw(port: int, payload: bytes) -> bytes:
    """Send ``payload`` on a fresh connection; return what comes back up to the headers' end.

    A server that answers an oversized request before reading all of it closes a socket with
    unread data, which the kernel turns into a reset; what arrived before the reset counts.
    """
    data = b""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        try:
            sock.sendall(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass
        try:
            while b"\r\n\r\n" not in data:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                data += chunk
        except ConnectionResetError:
            pass
    return data


@pytest.mark.parametrize("token", [None, TOKEN])
def test_malformed_requests_get_4xx_and_never_stop_the_server(run_log, token):
    listen = "0.0.0.0:0" if token else "127.0.0.1:0"
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    with running_dashboard(run_log, listen, token) as url:
        port = int(url.rsplit(":", 1)[1].rstrip("/"))
        for payload in GARBAGE:
            reply = _raw(port, payload)
            status = reply.split(b" ", 2)[1] if reply.startswith(b"HTTP/1.") else b""
            assert status[:1] == b"4", (payload[:60], reply[:200])
            assert get(url + "metrics", auth)[0] == 200  # still serving


def test_serve_runs_in_a_thread_of_its_caller_and_stops_when_asked(run_log):
    import threading

    ready: list[str] = []
    stop = threading.Event()
    failed: list[BaseException] = []

    def target() -> None:
        try:
            serve(run_log, "127.0.0.1:0", None, on_ready=ready.append, stop=stop)
        except BaseException as exc:  # reported below, in the test's thread
            failed.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not ready and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        assert ready, failed
        status, body, _ = get(ready[0] + "api/state")
        assert status == 200 and json.loads(body)["id"] > 0
    finally:
        stop.set()
        thread.join(30)
    assert not thread.is_alive() and not failed


def test_the_feed_tails_by_event_id_to_the_same_state_as_one_read(tmp_path):
    import asyncio

    from farlink.linkmgr.dashboard import LogFeed
    from farlink.linkmgr.synthetic import LogWriter
    from farlink.linkmgr.uptime import read_tracker
    from farlink.linkmgr.view import snapshot

    whole = synthetic_log(tmp_path / "whole.sqlite", SyntheticBundle(duration_s=3600), seed=3)
    with sqlite3.connect(whole) as db:
        rows = db.execute(
            "SELECT t_unix_s, kind, modem, state, value, detail FROM events ORDER BY id"
        ).fetchall()
        names = json.loads(db.execute("SELECT value FROM meta WHERE key='modems'").fetchone()[0])
    growing = tmp_path / "growing.sqlite"
    writer = LogWriter(growing, names, started_unix_s=rows[0][0])
    feed = LogFeed(growing)

    async def follow() -> list[bool]:
        grew = []
        for start in range(0, len(rows), 997):  # pieces that end anywhere in the sequence
            writer.begin_batch()  # one transaction per piece keeps the test fast
            for t, kind, modem, state, value, detail in rows[start : start + 997]:
                writer.event(t, kind, modem, state=state, value=value, detail=detail)
            writer.end_batch()
            grew.append(await feed.catch_up())
        grew.append(await feed.catch_up())  # nothing new
        return grew

    grew = asyncio.run(follow())
    writer.close()
    feed.close()
    assert all(grew[:-1]) and not grew[-1]
    assert feed.version == len(grew) - 1
    expected = snapshot(read_tracker(whole), "x")
    assert snapshot(feed.tracker, "x") == expected


def test_odd_details_never_break_the_page_data(tmp_path):
    from farlink.linkmgr.synthetic import LogWriter
    from farlink.linkmgr.uptime import read_tracker
    from farlink.linkmgr.view import snapshot

    path = tmp_path / "odd.sqlite"
    with LogWriter(path, ["</script><b>x", "B"], started_unix_s=T0) as w:
        w.event(T0, "daemon", detail="start")
        w.event(T0 + 1, "signal", 0, value=3, detail='{"reply_s": Infinity, "handover": 1}')
        w.event(T0 + 2, "signal", 1, value=2, detail="not json")
        w.event(T0 + 3, "error", 1, detail="\x00 garbage \u202e")
        w.event(T0 + 4, "state", 1, state="a state nobody knows")
    data = snapshot(read_tracker(path))
    text = json.dumps(data, allow_nan=False)  # raises on NaN or infinity
    assert data["members"][0]["reply_s"] is None
    assert data["members"][1]["color"] != data["colors"]["idle"]
    from farlink.linkmgr.page import html

    page = html(text, None)
    assert "</script><b>" not in page  # the name cannot end the data's script element


def test_a_log_that_turns_unreadable_is_shown_as_an_error_and_then_recovers(tmp_path):
    import asyncio

    from farlink.linkmgr.dashboard import LogFeed

    path = tmp_path / "log.sqlite"
    states_log(path, ["A"], ["connected"]).close()
    feed = LogFeed(path)

    async def steps() -> list[str | None]:
        seen = []
        await feed.catch_up()
        seen.append(json.loads(feed.state_json())["error"])
        with sqlite3.connect(path) as db:
            db.execute("INSERT INTO events (t_unix_s, t_daemon_s, kind) VALUES (1e999, 0, 'x')")
        await feed.catch_up()
        seen.append(json.loads(feed.state_json())["error"])
        with sqlite3.connect(path) as db:
            db.execute("DELETE FROM events WHERE kind = 'x'")
        await feed.catch_up()
        seen.append(json.loads(feed.state_json())["error"])
        return seen

    first, broken, mended = asyncio.run(steps())
    feed.close()
    assert first is None and mended is None
    assert "log.sqlite" in broken and "not a finite number" in broken


# What a hostile client sends, and a piece of it that must never come back in the answer.
HOSTILE = [
    (b"GET http://evil.example/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", b"evil"),
    (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", b"aaaaaaaa"),
    (b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 5_000_000 + b"\r\n\r\n", b"bbbbbbbb"),
    (b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X-Many: c\r\n" * 100_000 + b"\r\n", b"X-Many"),
    (b"GET /\x00nul HTTP/1.1\r\nHost: x\r\n\r\n", b"nul"),
    (b"GET / HTTP/1.1\r\nHost: x\r\nX-Ctl: d\x01\x02dd\r\n\r\n", b"\x01\x02dd"),
    (b"\x16\x03\x01\x02\x00\x01" + b"Z" * 25_600 + b"\r\n\r\n", b"ZZZZZZZZ"),
]


def _exchange(port: int, payload: bytes, wait_s: float = 20) -> bytes:
    """Send ``payload`` on a fresh connection; everything that comes back until the server
    closes it (or resets it, having answered before reading all of an oversized request)."""
    data = b""
    with socket.create_connection(("127.0.0.1", port), timeout=wait_s) as sock:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(payload)
        with contextlib.suppress(ConnectionResetError, TimeoutError):
            while chunk := sock.recv(65536):
                data += chunk
    return data


@contextlib.contextmanager
def _dashboard_in_thread(log: Path, token: str | None = None, **kw) -> Iterator[int]:
    import threading

    stop, ready = threading.Event(), []
    listen = "0.0.0.0:0" if token else "127.0.0.1:0"
    t = threading.Thread(
        target=serve,
        args=(log, listen, token),
        kwargs={"on_ready": ready.append, "stop": stop, **kw},
        daemon=True,
    )
    t.start()
    deadline = time.monotonic() + 30
    while not ready and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ready, "the dashboard did not start"
    try:
        yield int(ready[0].split(":")[2].split("/")[0])
    finally:
        stop.set()
        t.join(10)


@pytest.mark.parametrize("token", [None, TOKEN])
def test_hostile_requests_get_a_fixed_4xx_and_one_log_line_each(run_log, tmp_path, token):
    """Before, each of these printed a traceback, and a 400 echoed the request's bytes."""
    err_path = tmp_path / "stderr.txt"
    argv = [sys.executable, "-c", "import sys; from farlink.cli.app import main; sys.exit(main())",
            "linkmgr", "dashboard", str(run_log), "--listen", "127.0.0.1:0"]  # fmt: skip
    argv += ["--token", token] if token else []
    with err_path.open("w") as err_file:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err_file, text=True)
        try:
            line = proc.stdout.readline()
            port = int(line.rsplit(":", 1)[1].split("/")[0])
            for payload, echo in HOSTILE:
                reply = _exchange(port, payload)
                assert reply[:10] in (b"HTTP/1.1 4", b"HTTP/1.0 4"), (payload[:40], reply[:200])
                assert echo not in reply and len(reply) < 2048, (payload[:40], reply[:400])
            auth = {"Authorization": f"Bearer {token}"} if token else {}
            assert get(f"http://127.0.0.1:{port}/metrics", auth)[0] == 200
        finally:
            proc.terminate()
            proc.wait(10)
            proc.stdout.close()
    lines = err_path.read_text().splitlines()
    assert "Traceback" not in "\n".join(lines)
    assert len(lines) >= len(HOSTILE) - 1 and all(
        line.startswith("farlink: dashboard: 4") for line in lines
    ), lines


def test_the_token_is_checked_before_the_path_or_the_query(run_log):
    with _dashboard_in_thread(run_log, TOKEN) as port:
        for target in (b"/nowhere", b"/?x=%zz%00&token=wrong", b"/metrics?" + b"q=1&" * 1000):
            head = b"GET " + target + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            reply = _exchange(port, head)
            assert reply.startswith(b"HTTP/1.1 401"), (target[:40], reply[:100])


def test_slow_and_idle_clients_are_closed_after_the_bound(run_log):
    """50 clients that open a connection and send a request head a byte at a time (or
    nothing): each is closed once the bound passes, and the dashboard serves meanwhile."""
    head_s = 1.5
    with _dashboard_in_thread(run_log, request_head_s=head_s) as port:
        socks = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(50)]
        started = time.monotonic()
        open_ = set(range(50))
        while open_ and time.monotonic() - started < head_s + 5:
            for i in list(open_):
                try:
                    if i % 2:  # half dribble a header, half stay silent
                        socks[i].sendall(b"G" if time.monotonic() - started < 0.2 else b"x")
                    socks[i].setblocking(False)
                    if socks[i].recv(4096) == b"":
                        open_.discard(i)
                except BlockingIOError:
                    pass
                except (BrokenPipeError, ConnectionResetError):
                    open_.discard(i)
            assert get(f"http://127.0.0.1:{port}/metrics")[0] == 200
            time.sleep(0.2)
        elapsed_s = time.monotonic() - started
        for s in socks:
            s.close()
    assert not open_, f"{len(open_)} slow clients still held after {elapsed_s:.1f} s"
    assert elapsed_s >= head_s - 0.2
