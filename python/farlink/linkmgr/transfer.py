"""The demo's TCP transfer: a sender and a receiver of ``size`` deterministic bytes, each run in
its own namespace (``python -m farlink.linkmgr.transfer send|receive ...``), the receiver
checking every byte against the same stream.

The receiver prints one JSON line when it is done: ``{"bytes": n, "verified": bool,
"end_unix_s": t}`` (``verified``: all ``size`` bytes came and equal the sender's).

``send-stream`` and ``receive-stream`` keep a transfer going for ``--duration`` seconds instead
(``make validate-linkmgr``): the sender writes an endless deterministic stream until then and
closes; the receiver checks every byte as it comes. A connection the bundle broke is replaced by
a new one whose stream starts over; the receiver's line then counts ``connections`` > 1, and adds
``start_unix_s`` (its first byte).
"""

from __future__ import annotations

import argparse
import json
import random
import select
import socket
import sys
import time

CHUNK_BYTES = 4096
STREAM_SNDBUF_BYTES = 64 * 1024
"""The stream sender's socket buffer: what it wrote is on the wire within about half a minute
at 8 x 2400 bit/s, so the stream ends soon after its duration."""
RECONNECT_PAUSE_S = 0.2


def payload(size: int, seed: int) -> bytes:
    """The bytes sent: the same for the same size and seed."""
    return random.Random(seed).randbytes(size)


def send(host: str, port: int, size: int, seed: int, timeout_s: float) -> None:
    data = payload(size, seed)
    deadline = time.monotonic() + timeout_s
    s = _connect(host, port, deadline)
    with s:
        s.settimeout(max(1.0, deadline - time.monotonic()))
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        s.recv(1)  # the receiver closes once it has everything


def _connect(host: str, port: int, deadline: float) -> socket.socket:
    while True:
        try:
            return socket.create_connection(
                (host, port), timeout=max(1.0, deadline - time.monotonic())
            )
        except OSError:
            # The bundle or the receiver not up yet: the kernel's SYN retries are slow
            # (1, 3, 7 s...), so try again at once with a fresh connection.
            if time.monotonic() > deadline:
                raise
            time.sleep(RECONNECT_PAUSE_S)


class Stream:
    """The endless byte stream of ``seed``, drawn in blocks of :data:`CHUNK_BYTES`."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)
        self._pending = bytearray()

    def take(self, n: int) -> bytes:
        while len(self._pending) < n:
            self._pending += self._rng.randbytes(CHUNK_BYTES)
        out = bytes(self._pending[:n])
        del self._pending[:n]
        return out


def send_stream(host: str, port: int, seed: int, duration_s: float, timeout_s: float) -> None:
    """Writes the stream for ``duration_s``, starting over on a fresh connection whenever the
    bundle breaks one, then closes and waits for the receiver to close."""
    end = time.monotonic() + duration_s
    while time.monotonic() < end:
        s = _connect(host, port, end + timeout_s)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, STREAM_SNDBUF_BYTES)
        s.settimeout(timeout_s)
        stream = Stream(seed)
        with s:
            try:
                while time.monotonic() < end:
                    s.sendall(stream.take(CHUNK_BYTES))
                s.shutdown(socket.SHUT_WR)
                s.recv(1)  # the receiver closes once it has everything
                return
            except OSError as err:
                print(f"transfer: send-stream: {err}; connecting again", file=sys.stderr)


def receive_stream(port: int, seed: int, timeout_s: float) -> None:
    """Checks the stream until the sender closes; a new connection replaces the current one
    (its stream starts over). Gives up after ``timeout_s`` without a byte."""
    got = 0
    verified = True
    connections = 0
    start: float | None = None
    with socket.create_server(("0.0.0.0", port)) as srv:
        srv.setblocking(False)
        conn: socket.socket | None = None
        stream = Stream(seed)
        last = time.monotonic()
        try:
            while True:
                ready, _, _ = select.select([srv] + ([conn] if conn else []), [], [], 1.0)
                if srv in ready:
                    if conn is not None:
                        conn.close()
                    conn, _ = srv.accept()
                    conn.setblocking(True)
                    connections += 1
                    stream = Stream(seed)
                    last = time.monotonic()
                if conn is not None and conn in ready:
                    chunk = conn.recv(CHUNK_BYTES)
                    if not chunk:
                        break
                    if start is None:
                        start = time.time()
                    verified = verified and chunk == stream.take(len(chunk))
                    got += len(chunk)
                    last = time.monotonic()
                elif time.monotonic() - last > timeout_s:
                    raise TimeoutError(f"no byte for {timeout_s:.0f} s")
        finally:
            if conn is not None:
                conn.close()
    result = {
        "bytes": got,
        "verified": verified and got > 0,
        "connections": connections,
        "start_unix_s": start,
        "end_unix_s": time.time(),
    }
    print(json.dumps(result), flush=True)


def receive(port: int, size: int, seed: int, timeout_s: float) -> None:
    expected = payload(size, seed)
    with socket.create_server(("0.0.0.0", port)) as srv:
        srv.settimeout(timeout_s)
        conn, _ = srv.accept()
        with conn:
            conn.settimeout(timeout_s)
            got = bytearray()
            while True:
                chunk = conn.recv(CHUNK_BYTES)
                if not chunk:
                    break
                got += chunk
            end = time.time()
    result = {"bytes": len(got), "verified": bytes(got) == expected, "end_unix_s": end}
    print(json.dumps(result), flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m farlink.linkmgr.transfer")
    sub = p.add_subparsers(dest="role", required=True)
    s = sub.add_parser("send")
    r = sub.add_parser("receive")
    ss = sub.add_parser("send-stream")
    rs = sub.add_parser("receive-stream")
    for q in (s, ss):
        q.add_argument("host")
    for q in (s, r, ss, rs):
        q.add_argument("--port", type=int, required=True)
        q.add_argument("--seed", type=int, default=1)
        q.add_argument("--timeout", type=float, required=True)
    for q in (s, r):
        q.add_argument("--size", type=int, required=True)
    ss.add_argument("--duration", type=float, required=True)
    a = p.parse_args(argv)
    try:
        if a.role == "send":
            send(a.host, a.port, a.size, a.seed, a.timeout)
        elif a.role == "receive":
            receive(a.port, a.size, a.seed, a.timeout)
        elif a.role == "send-stream":
            send_stream(a.host, a.port, a.seed, a.duration, a.timeout)
        else:
            receive_stream(a.port, a.seed, a.timeout)
    except OSError as err:
        print(f"transfer: {a.role}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
