"""The ``[flows.tcp]`` table of the scenario ``farlink fit`` writes, for each TCP profile.

``profile = "rfc"``: farlink's own TCP (RFC 6298's timer, SACK recovery), the capture's payload
as the MSS with timestamps off, and the shortest wait before a timeout the capture shows as
``min_rto_s``.

``profile = "linux"``: what a Linux sender is, in one line, ``profile = "linux"`` (the core's
TCP profile, :mod:`farlink.linux_tcp`), and beside it, winning over it, what the capture shows;
the comment beside each line says what it came from:

* the receiver's MSS option, timestamps, SACK and window scaling as the two SYNs negotiated
  them (:mod:`farlink.captures.handshake`), so the simulated segments carry the captured
  payload (the MSS option less 12 bytes with timestamps, RFC 7323 section 4.3);
* the receive buffer as the largest window the receiver advertised (Linux grows its buffer as
  the transfer goes; farlink's receiver has a fixed one, so the largest is what never limited
  the captured sender);
* delayed ACKs when the receiver's advancing ACKs acknowledged more than one segment each
  (median); without them the profile's delayed-ACK timer and quick-ACK mode do not apply;
* the controller ``--tcp`` names, a Linux module whose model the profile runs (``cubic`` as
  ``cubic-linux``).

The rest is the profile's: Linux's initial window (a tap near the receiver sees the first ACK
before the whole first flight, so the capture does not show it), initial RTO, timer, loss
detection and window reduction, and Reno's growth by acknowledged segments.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from farlink._core import TCP_PROFILES
from farlink.linux_tcp import LINUX_CONNECTION, linux_cc_name

if TYPE_CHECKING:
    from farlink.captures.fit import PathFit

__all__ = ["PROFILES", "tcp_lines"]

PROFILES: tuple[str, ...] = tuple(TCP_PROFILES)
"""The TCP profiles a fitted flow can have (the core's)."""

TIMESTAMP_OPTION_BYTES = 12  # RFC 7323's option with its padding, out of every segment's MSS
# A receiver whose median advancing ACK covers more than this many segments delays its ACKs:
# 1 is an ACK per segment, 2 RFC 1122's every second segment.
DELAYING_SEGMENTS_PER_ACK = 1.5


def tcp_lines(fit: PathFit, profile: str, tcp: str | None) -> list[str]:
    """The lines of the fitted flow's ``[flows.tcp]`` table (module notes)."""
    if profile not in PROFILES:
        raise ValueError(f"profile: expected one of {', '.join(PROFILES)}, got {profile!r}")
    if profile == "linux":
        return _linux_lines(fit, tcp)
    settings: dict[str, str] = {}
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
    rows: list[tuple[str, object, str]] = [
        (
            "profile",
            "linux",
            "Linux's connection and sender defaults (farlink.linux_tcp); the lines below win",
        )
    ]
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
        for key, shown, what in (
            ("sack", shake.sack, "both SYNs carried SACK-permitted"),
            ("window_scaling", shake.window_scaling, "both SYNs carried it"),
        ):
            rows.append((key, shown, f"{captured} {what}" if shown else f"{captured} not agreed"))
    window = shake.receive_window_bytes if shake else None
    if window:
        rows.append(("receive_buffer_bytes", window, f"{captured} the largest window advertised"))
    per_ack = fit.segments_per_ack
    if per_ack is not None:
        rows.append(
            (
                "delayed_ack",
                per_ack > DELAYING_SEGMENTS_PER_ACK,
                f"{captured} an advancing ACK covered {per_ack:g} segments (median)",
            )
        )
    if tcp is not None:
        model = linux_cc_name(tcp)
        note = f"named by --tcp; the profile runs {model}" if model != tcp else "named by --tcp"
        rows.append(("cc", tcp, note))
    return [f"{key} = {json.dumps(value)}    # {note}" for key, value, note in rows]
