"""The demo's TCP transfer: a sender and a receiver of ``size`` deterministic bytes, each run in
its own namespace (``python -m farlink.linkmgr.transfer send|receive ...``), the receiver
checking every byte against the same stream.

The receiver prints one JSON line when it is done: ``{"bytes": n, "verified": bool,
"end_unix_s": t}`` (``verified``: all ``size`` bytes came and equal the sender's).
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import sys
import time

CHUNK_BYTES = 4096


def payload(size: int, seed: int) -> bytes:
    """The bytes sent: the same for the same size and seed."""
    return random.Random(seed).randbytes(size)


def send(host: str, port: int, size: int, seed: int, timeout_s: float) -> None:
    data = payload(size, seed)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            s = socket.create_connection(
                (host, port), timeout=max(1.0, deadline - time.monotonic())
            )
            break
        except OSError:
            # The bundle or the receiver not up yet: the kernel's SYN retries are slow
            # (1, 3, 7 s...), so try again at once with a fresh connection.
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    with s:
        s.settimeout(max(1.0, deadline - time.monotonic()))
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        s.recv(1)  # the receiver closes once it has everything


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
    s.add_argument("host")
    r = sub.add_parser("receive")
    for q in (s, r):
        q.add_argument("--port", type=int, required=True)
        q.add_argument("--size", type=int, required=True)
        q.add_argument("--seed", type=int, default=1)
        q.add_argument("--timeout", type=float, required=True)
    a = p.parse_args(argv)
    try:
        if a.role == "send":
            send(a.host, a.port, a.size, a.seed, a.timeout)
        else:
            receive(a.port, a.size, a.seed, a.timeout)
    except OSError as err:
        print(f"transfer: {a.role}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
