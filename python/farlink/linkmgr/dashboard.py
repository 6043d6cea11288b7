"""The link manager's web dashboard: a page, live updates and Prometheus metrics over HTTP.

:func:`serve` (what ``farlink linkmgr dashboard`` and the daemon call) tails an event log by event
id and serves, with aiohttp:

* ``/``: the page (:mod:`farlink.linkmgr.page`): each member's state in the colours of
  :data:`~farlink.linkmgr.view.STATE_COLORS`, signal bars, the primary, uptime with all members
  and with at least one, the state timeline with call drops, the bundle's throughput;
* ``/events``: server-sent events, one ``snapshot`` message (the page's JSON, id = the log's last
  event id) whenever the log grows, a comment line every :data:`KEEPALIVE_S` otherwise;
* ``/api/state``: the same JSON once;
* ``/metrics``: Prometheus text (:mod:`farlink.linkmgr.metrics`).

Access. By default it listens on loopback only. Bound to any other address it needs a token, and
refuses to start without one (:class:`DashboardError`); with a token, every request must carry it,
whatever address it comes from, as ``Authorization: Bearer TOKEN`` or ``?token=TOKEN`` (the page
passes the token it was opened with on to its own requests, since a browser's EventSource cannot
set headers). A wrong or missing token gets 401, checked before the request is routed or its
query read for anything else.

Limits (docs/security.md): a request line (the URL) of at most :data:`MAX_LINE_BYTES`, at most
:data:`MAX_HEADERS` headers of at most :data:`MAX_FIELD_BYTES` each, no body above
:data:`MAX_BODY_BYTES`; a connection that has not sent a whole request head within
:data:`REQUEST_HEAD_S` of opening (or of its last answer) is closed, so slow or idle clients
cannot hold connections. A malformed request gets a 4xx whose body is a fixed sentence (never
the request's bytes) and one line on standard error (:class:`_Handler`); nothing a client sends
stops the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import json
import logging
import os
import socket
import sys
import threading
from collections.abc import Callable
from http import HTTPStatus
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_runner import GracefulExit

from farlink.linkmgr import page
from farlink.linkmgr.eventlog import EventLog, EventLogError
from farlink.linkmgr.metrics import CONTENT_TYPE, metrics_text
from farlink.linkmgr.tracker import Tracker
from farlink.linkmgr.view import snapshot

__all__ = [
    "DEFAULT_LISTEN",
    "DashboardError",
    "LogFeed",
    "check_access",
    "make_app",
    "parse_listen",
    "serve",
]

DEFAULT_LISTEN = "127.0.0.1:8750"
POLL_S = 0.5
"""How often the log is read for new events."""
KEEPALIVE_S = 15.0
"""A comment line on the event stream this often keeps proxies from closing it."""
STOP_POLL_S = 0.2
_BATCH = 5000  # events folded between two yields to the event loop while catching up
MAX_LINE_BYTES = 8190
"""The longest request line (method, URL, version) read: the page's own URLs are short."""
MAX_FIELD_BYTES = 8190
"""The longest header (name and value) read."""
MAX_HEADERS = 64
"""The most headers a request may carry (a browser sends about 15)."""
MAX_BODY_BYTES = 64 * 1024
"""The largest request body read (the dashboard takes no body)."""
REQUEST_HEAD_S = 15.0
"""How long a connection may take to send a whole request head, from its opening or from its
last answer; past it, the connection is closed (a slow or idle client holds none for longer).
A stream of server-sent events, once asked for, is not bounded by it."""
LISTEN_FORMS = "ADDR:PORT, e.g. 127.0.0.1:8750, [::1]:8750 or 0.0.0.0:8750 (port 0: any free)"


class DashboardError(ValueError):
    """A dashboard that must not or cannot start; the message says why."""


def parse_listen(text: str) -> tuple[str, int]:
    """Split ``ADDR:PORT`` (IPv6 in brackets) into the host and the port."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise DashboardError(f"--listen: {text!r} is not {LISTEN_FORMS}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    port = int(port_text)
    if port > 65535:
        raise DashboardError(f"--listen: port {port} is above 65535")
    return host, port


def is_loopback(host: str) -> bool:
    """True when every address ``host`` names is a loopback address."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError as exc:
        raise DashboardError(f"--listen: cannot resolve {host!r} ({exc})") from None
    return all(ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback for info in infos)


def check_access(host: str, token: str | None) -> None:
    """Refuse a listening address off loopback without a token."""
    if token is not None and not token.strip():
        raise DashboardError("--token: the token is empty")
    if token is None and not is_loopback(host):
        raise DashboardError(
            f"--listen: {host} is not a loopback address; a dashboard reachable from other "
            "machines needs --token (every request must then carry it)"
        )


class LogFeed:
    """The log tailed by event id, folded into a tracker; wakes waiters when it grows."""

    def __init__(self, path: str | os.PathLike[str], poll_s: float = POLL_S) -> None:
        self.path = Path(path)
        self.poll_s = poll_s
        self.tracker = Tracker()
        self.error: str | None = None
        self.version = 0
        self._log: EventLog | None = None
        self._json: bytes | None = None
        self._changed = asyncio.Event()

    def _open(self) -> EventLog:
        if self._log is None:
            self._log = EventLog(self.path)
            self.tracker.rename(self._log.modem_names)
        return self._log

    async def catch_up(self) -> bool:
        """Fold the events written since the last call; True if there were any.

        Waiters are woken when the log grew or when it turned unreadable or readable again (the
        page shows the error).
        """
        grew = False
        error_before = self.error
        try:
            log = self._open()
            while True:
                events = log.events(self.tracker.last_id, _BATCH)
                if not events:
                    break
                self.tracker.apply_all(events)
                grew = True
                await asyncio.sleep(0)
            if grew:
                self.tracker.rename(log.modem_names)
            self.error = None
        except EventLogError as exc:
            self.error = str(exc)
            if self._log is not None:
                self._log.close()
                self._log = None
        if grew or self.error != error_before:
            self.version += 1
            self._json = None
            self._changed.set()
            self._changed = asyncio.Event()
        return grew

    async def run(self) -> None:
        while True:
            await self.catch_up()
            await asyncio.sleep(self.poll_s)

    async def wait_change(self, timeout_s: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout_s)

    def state_json(self) -> bytes:
        if self._json is None:
            data = snapshot(self.tracker, self.path.name)
            data["role"] = None if self._log is None else self._log.meta.get("role")
            data["error"] = self.error
            self._json = json.dumps(data, separators=(",", ":"), allow_nan=False).encode()
        return self._json

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


FEED = web.AppKey("feed", LogFeed)
TOKEN = web.AppKey("token", str)


def _authorised(request: web.Request, token: str) -> bool:
    try:
        offered = request.query.get("token")
    except (ValueError, UnicodeError):  # a query that cannot be read carries no token
        return False
    header = request.headers.get("Authorization", "")
    if offered is None and header[:7].lower() == "bearer ":
        offered = header[7:].strip()
    if offered is None:
        return False
    return hmac.compare_digest(offered.encode("utf-8", "replace"), token.encode("utf-8"))


@web.middleware
async def _guard(request: web.Request, handler: Callable) -> web.StreamResponse:
    token = request.app.get(TOKEN)
    if token and not _authorised(request, token):
        raise web.HTTPUnauthorized(
            text="401: this dashboard needs its token (Authorization: Bearer TOKEN or ?token=)\n",
            headers={"WWW-Authenticate": 'Bearer realm="farlink"'},
        )
    response = await handler(request)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "no-referrer")
    return response


async def _index(request: web.Request) -> web.Response:
    feed = request.app[FEED]
    return web.Response(
        text=page.html(feed.state_json().decode(), request.query.get("token")),
        content_type="text/html",
        headers={"Content-Security-Policy": page.CSP, "Cache-Control": "no-store"},
    )


async def _script(request: web.Request) -> web.Response:
    return web.Response(text=page.SCRIPT, content_type="application/javascript")


async def _style(request: web.Request) -> web.Response:
    return web.Response(text=page.STYLE, content_type="text/css")


async def _state(request: web.Request) -> web.Response:
    return web.Response(
        body=request.app[FEED].state_json(),
        content_type="application/json",
        headers={"Cache-Control": "no-store"},
    )


async def _metrics(request: web.Request) -> web.Response:
    body = metrics_text(request.app[FEED].tracker)
    response = web.Response(body=body)
    response.headers["Content-Type"] = CONTENT_TYPE
    return response


async def _events(request: web.Request) -> web.StreamResponse:
    feed = request.app[FEED]
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-store",
            "X-Accel-Buffering": "no",
        }
    )
    await response.prepare(request)
    sent = -1
    with contextlib.suppress(ConnectionError):
        await response.write(b"retry: 2000\n\n")
        while True:
            if feed.version != sent:
                sent = feed.version
                message = b"id: %d\nevent: snapshot\ndata: %s\n\n" % (
                    feed.tracker.last_id,
                    feed.state_json(),
                )
                await response.write(message)
            else:
                await response.write(b": keep-alive\n\n")
            await feed.wait_change(KEEPALIVE_S)
    return response


_log = logging.getLogger("farlink.linkmgr.dashboard")


def _one_line_log() -> logging.Logger:
    """The server's logger: one line on standard error per request it could not serve (the
    status, the client and the kind of fault; never the client's bytes nor a traceback)."""
    if not _log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("farlink: dashboard: %(message)s"))
        _log.addHandler(handler)
        _log.propagate = False
        _log.setLevel(logging.INFO)
    return _log


class _Handler(RequestHandler):
    """aiohttp's connection handler with its error answer replaced: a fixed sentence per
    status (aiohttp's own puts the parser's message, the request's bytes, in the body) and one
    line logged (aiohttp's logs a traceback)."""

    def handle_error(
        self,
        request: Any,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        kind = type(exc).__name__ if exc is not None else "no detail"
        peer = getattr(request, "remote", None) or "a client"
        # A 5xx is farlink's fault: FARLINK_DEBUG=1 shows where, as the command line does.
        trace = exc if status >= 500 and os.environ.get("FARLINK_DEBUG") else None
        _one_line_log().warning("%d for a request from %s (%s)", status, peer, kind, exc_info=trace)
        if request.writer.output_size > 0:  # an answer had begun: the connection is broken
            raise ConnectionError("an answer was under way; the connection is closed")
        phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else ""
        text = f"{status} {phrase}: the request could not be read or served\n"
        response = web.Response(status=status, text=text, content_type="text/plain")
        response.force_close()
        return response


class _Server(web.Server):
    def __call__(self) -> RequestHandler:
        return _Handler(self, loop=self._loop, **self._kwargs)


class _Runner(web.AppRunner):
    """An application runner whose connections are :class:`_Handler`s, held to the limits of
    the module notes."""

    def __init__(
        self, app: web.Application, *, request_head_s: float = REQUEST_HEAD_S, **kwargs: Any
    ) -> None:
        limits = {
            "max_line_size": MAX_LINE_BYTES,
            "max_field_size": MAX_FIELD_BYTES,
            "max_headers": MAX_HEADERS,
            # Armed when a connection opens and after each answer, never reset by bytes
            # that arrive: a request head must be whole within it.
            "keepalive_timeout": request_head_s,
            "lingering_time": 1.0,
            "logger": _one_line_log(),
            "access_log": None,
        }
        super().__init__(app, **limits, **kwargs)

    async def _make_server(self) -> web.Server:
        made = await super()._make_server()
        return _Server(
            made.request_handler,
            request_factory=made.request_factory,
            handler_cancellation=made.handler_cancellation,
            loop=made._loop,
            **made._kwargs,
        )


def make_app(log_path: str | os.PathLike[str], token: str | None = None, *, poll_s: float = POLL_S):
    """The aiohttp application; the log is tailed while the application runs."""
    app = web.Application(middlewares=[_guard], client_max_size=MAX_BODY_BYTES)
    feed = LogFeed(log_path, poll_s)
    app[FEED] = feed
    if token:
        app[TOKEN] = token
    app.router.add_get("/", _index)
    app.router.add_get("/dashboard.js", _script)
    app.router.add_get("/dashboard.css", _style)
    app.router.add_get("/api/state", _state)
    app.router.add_get("/events", _events)
    app.router.add_get("/metrics", _metrics)

    async def tail(app: web.Application):
        await feed.catch_up()
        task = asyncio.create_task(feed.run())
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        feed.close()

    app.cleanup_ctx.append(tail)
    return app


def _url(host: str, port: int, token: str | None) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/" + ("?token=TOKEN" if token else "")


async def _serve(
    log_path: Path,
    host: str,
    port: int,
    token: str | None,
    on_ready: Callable[[str], None] | None,
    stop: threading.Event | None,
    request_head_s: float,
) -> None:
    app = make_app(log_path, token)
    # Signal handlers can only be set from the main thread; a daemon may serve from another.
    in_main = threading.current_thread() is threading.main_thread()
    runner = _Runner(
        app, request_head_s=request_head_s, handle_signals=in_main, shutdown_timeout=1.0
    )
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, reuse_address=True)
        try:
            await site.start()
        except OSError as exc:
            reason = exc.strerror or exc
            raise DashboardError(f"--listen: cannot listen on {host}:{port} ({reason})") from None
        server = site._server  # aiohttp keeps the bound sockets there; port 0 is resolved
        bound = server.sockets[0].getsockname()[1] if server is not None else port
        url = _url(host, bound, token)
        if on_ready is not None:
            on_ready(url)
        if stop is None:
            await asyncio.Event().wait()
        while not stop.is_set():  # a caller in another thread asks to stop
            await asyncio.sleep(STOP_POLL_S)
    finally:
        await runner.cleanup()


def serve(
    log_path: str | os.PathLike[str],
    listen: str = DEFAULT_LISTEN,
    token: str | None = None,
    *,
    on_ready: Callable[[str], None] | None = None,
    stop: threading.Event | None = None,
    request_head_s: float = REQUEST_HEAD_S,
) -> None:
    """Serve the dashboard of ``log_path`` until interrupted (Ctrl-C, SIGTERM) or ``stop`` is set.

    A daemon may call it from a thread of its own (signals are then left to the daemon, and it
    ends the dashboard by setting ``stop``).

    Args:
        log_path: the event log (it must exist and be an event log).
        listen: ``ADDR:PORT``; loopback by default.
        token: required off loopback; when given, every request must carry it.
        on_ready: called with the page's address once listening (default: print it).
        stop: set it (from any thread) to stop serving; serve then returns.
        request_head_s: how long a connection may take to send a request head
            (:data:`REQUEST_HEAD_S`).

    Raises:
        DashboardError: a bad ``listen``, a missing token off loopback, a port in use.
        EventLogError: the log is not readable as an event log.
    """
    host, port = parse_listen(listen)
    check_access(host, token)
    path = Path(log_path)
    EventLog(path).close()  # a bad file is refused before anything listens
    if on_ready is None:

        def on_ready(url: str) -> None:
            print(f"dashboard at {url}", flush=True)

    with contextlib.suppress(KeyboardInterrupt, GracefulExit):
        asyncio.run(_serve(path, host, port, token, on_ready, stop, request_head_s))


def serve_in_thread(
    log_path: str | os.PathLike[str],
    listen: str,
    token: str | None,
    stop: threading.Event,
    say: Callable[[str], None],
    wait_s: float,
) -> threading.Thread:
    """:func:`serve` in a thread of its own (a daemon's, the demo's), until ``stop`` is set.
    Returns once it listens (``say`` is given its address); a failure to start within
    ``wait_s`` raises :class:`DashboardError`."""
    ready = threading.Event()
    failure: list[BaseException] = []

    def on_ready(url: str) -> None:
        say(f"dashboard at {url}")
        ready.set()

    def run() -> None:
        try:
            serve(log_path, listen, token, on_ready=on_ready, stop=stop)
        except Exception as err:  # reported by the caller, which waits for it
            failure.append(err)
            ready.set()

    t = threading.Thread(target=run, name="dashboard", daemon=True)
    t.start()
    if not ready.wait(wait_s):
        stop.set()
        raise DashboardError(f"not listening after {wait_s:.0f} s")
    if failure:
        raise DashboardError(str(failure[0]))
    return t
