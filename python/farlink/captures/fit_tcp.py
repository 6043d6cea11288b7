"""The ``[flows.tcp]`` table of the scenario ``farlink fit`` writes, for each kind of sender.

``sender = "rfc"``: farlink's own TCP (RFC 6298's timer, SACK recovery), the capture's payload
as the MSS with timestamps off, and the shortest wait before a timeout the capture shows as
``min_rto_s``.

``sender = "linux"``: what a Linux sender is (:mod:`farlink.linux_tcp`), each setting taken
from the capture where the capture shows it and from Linux's defaults where it does not; the
comment beside each line says which:

* the receiver's MSS option, timestamps, SACK and window scaling as the two SYNs negotiated
  them (:mod:`farlink.captures.handshake`), so the simulated segments carry the captured
  payload (the MSS option less 12 bytes with timestamps, RFC 7323 section 4.3);
* the receive buffer as the largest window the receiver advertised (Linux grows its buffer as
  the transfer goes; farlink's receiver has a fixed one, so the largest is what never limited
  the captured sender);
* delayed ACKs when the receiver's advancing ACKs acknowledged more than one segment each
  (median), with Linux's 40 ms timer, which a capture shows only where nothing else released
  an ACK;
* Linux's initial window (a tap near the receiver sees the first ACK before the whole first
  flight, so the capture does not show it), initial RTO, timer and loss detection
  (:data:`~farlink.linux_tcp.LINUX_SENDER`) and, for Reno, its growth by acknowledged
  segments (:func:`~farlink.linux_tcp.linux_cc_fields`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from farlink.linux_tcp import LINUX_CONNECTION, LINUX_SENDER, linux_cc_fields

if TYPE_CHECKING:
    from farlink.captures.fit import PathFit

__all__ = ["SENDER_SETTINGS", "tcp_lines"]

SENDER_SETTINGS: dict[str, dict[str, str]] = {
    "rfc": {},
    "linux": dict(LINUX_SENDER),
}
"""The timer and loss detection each ``sender`` writes (beyond ``rfc``: farlink's defaults,
with the capture's shortest timeout wait as ``min_rto_s``)."""

TIMESTAMP_OPTION_BYTES = 12  # RFC 7323's option with its padding, out of every segment's MSS
# A receiver whose median advancing ACK covers more than this many segments delays its ACKs:
# 1 is an ACK per segment, 2 RFC 1122's every second segment.
DELAYING_SEGMENTS_PER_ACK = 1.5


def tcp_lines(fit: PathFit, sender: str, tcp: str | None) -> list[str]:
    """The lines of the fitted flow's ``[flows.tcp]`` table (module notes)."""
    if sender not in SENDER_SETTINGS:
        raise ValueError(f"sender: expected one of {', '.join(SENDER_SETTINGS)}, got {sender!r}")
    if sender == "linux":
        return _linux_lines(fit, tcp)
    settings = dict(SENDER_SETTINGS[sender])
    if fit.min_rto_s:
        settings["min_rto_s"] = f"{fit.min_rto_s:.6f}"
    if tcp is not None:
        settings["cc"] = tcp
    return [
        f"mss_bytes = {fit.mss_bytes}",
        "timestamps = false           # the MSS above is the payload the capture carried",
        *(
            f"{key} = {value if key.endswith('_s') else json.dumps(value)}"
            + ("      # the shortest wait before a timeout seen" if key == "min_rto_s" else "")
            for key, value in settings.items()
        ),
    ]


def _linux_lines(fit: PathFit, tcp: str | None) -> list[str]:
    shake = fit.handshake
    captured = "from the capture:"
    linux = "Linux's default (farlink.linux_tcp):"
    rows: list[tuple[str, object, str]] = []
    timestamps = shake.timestamps if shake else bool(LINUX_CONNECTION["timestamps"])
    option = fit.mss_bytes + (TIMESTAMP_OPTION_BYTES if timestamps else 0)
    rows.append(
        (
            "mss_bytes",
            option,
            f"{captured} segments of {fit.mss_bytes} bytes"
            + (" plus timestamps" if timestamps else ""),
        )
    )
    if shake:
        said = "both ends sent timestamps" if timestamps else "not both ends sent timestamps"
        rows.append(("timestamps", timestamps, f"{captured} {said}"))
    else:
        rows.append(("timestamps", timestamps, f"{linux} no handshake nor data in the capture"))
    for key, shown, what in (
        ("sack", shake.sack if shake else None, "both SYNs carried SACK-permitted"),
        ("window_scaling", shake.window_scaling if shake else None, "both SYNs carried it"),
    ):
        if shown is None:
            rows.append((key, LINUX_CONNECTION[key], f"{linux} the capture does not show it"))
        else:
            rows.append((key, shown, f"{captured} {what}" if shown else f"{captured} not agreed"))
    window = shake.receive_window_bytes if shake else None
    if window:
        rows.append(("receive_buffer_bytes", window, f"{captured} the largest window advertised"))
    per_ack = fit.segments_per_ack
    if per_ack is None:
        rows.append(("delayed_ack", LINUX_CONNECTION["delayed_ack"], f"{linux} no ACK seen"))
    else:
        delays = per_ack > DELAYING_SEGMENTS_PER_ACK
        rows.append(
            (
                "delayed_ack",
                delays,
                f"{captured} an advancing ACK covered {per_ack:g} segments (median)",
            )
        )
    if rows[-1][1]:
        rows.append(
            ("delayed_ack_timeout", LINUX_CONNECTION["delayed_ack_timeout"], f"{linux} TCP_ATO_MIN")
        )
        rows.append(
            ("quick_ack", LINUX_CONNECTION["quick_ack"], f"{linux} its receiver's quick-ACK mode")
        )
    # Not from the capture: at a tap near the receiver the ACK of the first segment can cross
    # before the rest of the first flight has.
    rows.append(
        (
            "initial_window_segments",
            LINUX_CONNECTION["initial_window_segments"],
            f"{linux} TCP_INIT_CWND",
        )
    )
    rows.append(("initial_rto", LINUX_CONNECTION["initial_rto"], f"{linux} TCP_TIMEOUT_INIT"))
    rows.append(
        (
            "max_ooo_ranges",
            LINUX_CONNECTION["max_ooo_ranges"],
            f"{linux} its receiver holds what its memory allows",
        )
    )
    rows += [
        (key, value, f"{linux} its timer, loss detection") for key, value in LINUX_SENDER.items()
    ]
    for key, value in linux_cc_fields(tcp or "reno").items():
        if key == "cc" and value != (tcp or "reno"):
            note = f"named by --tcp ({tcp}): {linux} the module's own arithmetic"
        elif key == "cc":
            note = "named by --tcp" if tcp else "farlink's default: the capture does not show it"
        else:
            note = f"{linux} how it grows cwnd"
        rows.append((key, value, note))
    return [f"{key} = {json.dumps(value)}    # {note}" for key, value, note in rows]
