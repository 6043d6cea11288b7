"""farlink's own TCP sender to a real listener: ``farlink.send.send(host, port, ...) -> dict``.

The sender ``emulate --sender farlink`` runs (``farlink_core::tcp::wire_client``), here to any
listener reachable from a namespace farlink made (or the host's), through a TUN device of its
own (the Rust module ``farlink_emu::send``; docs/wire.md, "farlink send"). The flow is described
as a one-flow scenario so that ``--tcp`` and ``--set tcp.FIELD=VALUE`` are checked by the same
code as every scenario's TCP table.

Needs CAP_NET_ADMIN and ``/dev/net/tun``; raises ``_core.EmulatorError`` (``kind``: ``usage``,
``unsupported``, ``system``, ``internal``) when it cannot run, and ``ScenarioError`` for TCP
settings the core refuses. A connection that fails (refused, reset, unreachable, no answer to
the SYN) is not raised: the report's ``error`` says why.
"""

from __future__ import annotations

import json
import socket
from typing import Any

from farlink import _core
from farlink.scenario import apply_overrides, to_core_json

__all__ = ["flow_document", "resolve_host", "send"]

# How long the SYN may go unanswered: the initial RTO of 1 s backed off four times (1 + 2 + 4
# + 8 s), so a listener behind a slow or lossy path still gets several tries.
HANDSHAKE_TIMEOUT_S = 15.0


class SendError(ValueError):
    """A bad argument of ``send`` (the message names it)."""


def resolve_host(host: str) -> str:
    """The IPv4 address of ``host`` (a dotted quad or a name)."""
    try:
        infos = socket.getaddrinfo(host, None, family=socket.AF_INET, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as err:
        raise SendError(f"HOST: cannot resolve {host!r} to an IPv4 address ({err})") from None
    return str(infos[0][4][0])


def flow_document(
    tcp: str, size: str, *, seed: int | None = None, sets: list[str] | tuple[str, ...] = ()
) -> dict[str, Any]:
    """The one-flow scenario whose ``flows[0]`` is the send: ``tcp`` is ``CC`` or
    ``CC,RECOVERY``; ``sets`` are ``tcp.FIELD=VALUE``. Its link is never used (the path is the
    real one); it only makes the document a scenario the core checks."""
    cc, _, recovery = tcp.partition(",")
    options: dict[str, Any] = {"cc": cc.strip()}
    if recovery.strip():
        options["recovery"] = recovery.strip()
    doc = {
        "name": "send",
        # Never reached: a send lasts as long as its transfer (or until Ctrl-C).
        "duration": "100000s",
        "nodes": ["farlink", "listener"],
        "links": [
            {"name": "path", "a": "farlink", "b": "listener", "rate": "1Gbps", "delay": "0s"}
        ],
        "flows": [
            {
                "name": "send",
                "from": "farlink",
                "to": "listener",
                "app": {"kind": "bulk", "size": size},
                "tcp": options,
            }
        ],
    }
    flow_sets = []
    for assignment in sets:
        if not assignment.startswith("tcp."):
            raise SendError(f"--set {assignment!r}: send takes tcp.FIELD=VALUE only")
        flow_sets.append(f"flows[0].{assignment}")
    return apply_overrides(doc, seed=seed, sets=flow_sets)


def send(
    host: str,
    port: int,
    *,
    tcp: str = "reno",
    size: str = "1MB",
    netns: str | None = None,
    seed: int | None = None,
    sets: list[str] | tuple[str, ...] = (),
    handshake_timeout_s: float = HANDSHAKE_TIMEOUT_S,
) -> dict[str, Any]:
    """Send ``size`` bytes of farlink's payload stream (seeded by ``seed``) to ``host:port``.

    Returns the report: ``transfer_time_s``, ``goodput_bps``, ``retransmissions``,
    ``timeouts``, ``bytes_acked``, ``sha256`` and ``digest_fnv1a64`` of the bytes sent,
    ``interrupted`` (Ctrl-C or SIGTERM), ``error`` (why the connection failed, or None).
    """
    if not 1 <= port <= 65535:
        raise SendError(f"PORT: {port} is not a TCP port (1 to 65535)")
    doc = flow_document(tcp, size, seed=seed, sets=sets)
    options = {
        "host": resolve_host(host),
        "port": port,
        "netns": netns,
        "handshake_timeout_s": handshake_timeout_s,
    }
    return json.loads(_core.send(to_core_json(doc), json.dumps(options)))
