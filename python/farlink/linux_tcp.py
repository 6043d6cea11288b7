"""Linux's TCP as farlink scenario settings, read from the core's ``linux`` TCP profile
(``[flows.tcp] profile = "linux"``, ``--profile linux``; the core's ``scenario/profile.rs``
holds the one list, each field with the kernel source it follows). Comparisons of farlink's
sender against the kernel's (``make validate-emu``, the wire fidelity table of ``make
validate-wire``) and ``farlink fit`` read it here as fields or ``--set`` lines, so that "matched
to Linux" means one thing.

The sender's timer and loss detection (:data:`LINUX_SENDER`):

* RTO = srtt + 4 · rttvar floored at 200 ms (``tcp_rto_min``), Linux's estimator
  (``tcp_rtt_estimator``, ``tcp_set_rto``): ``rto = "linux"``, ``min_rto = "200ms"``;
* RACK-TLP (RFC 8985), Linux's loss detection by default since 4.18: ``recovery = "rack"``;
* Proportional Rate Reduction (RFC 6937, ``tcp_cwnd_reduction``, Linux's since 3.2): in
  recovery the window comes down over a round trip, each ACK releasing a share of what it
  delivered, rather than to ssthresh at once: ``cwnd_reduction = "prr"`` (BBR, which sets
  its own window in recovery, is left alone in both).

The connection's defaults (:data:`LINUX_CONNECTION`), Linux's out of the box:

* initial window 10 segments (RFC 6928, ``TCP_INIT_CWND``), initial RTO 1 s (``TCP_TIMEOUT_INIT``);
* SACK, timestamps, window scaling on (``tcp_sack``, ``tcp_timestamps``, ``tcp_window_scaling``);
* delayed ACKs: every second full segment or after the delayed-ACK timer, which starts at 40 ms
  (``TCP_ATO_MIN``; Linux's timer adapts, farlink's stays there), with Linux's quick-ACK mode:
  every segment acknowledged at once for up to 16 ACKs after the first data, after a silence
  longer than the receiver's RTO (a timeout's, say) and after duplicate data
  (``tcp_incr_quickack``, ``tcp_event_data_recv``): ``quick_ack = true``;
* the receiver keeps every out-of-order segment its receive memory holds (``tcp_data_queue_ofo``
  prunes only when ``sk_rcvbuf`` is exceeded), not a fixed number of ranges:
  ``max_ooo_ranges = "window"`` (farlink's default keeps 64 and drops out-of-order segments past
  them, which a window with more holes than that, on a long path after slow start, reaches).

The controllers (:func:`linux_cc_fields`):

* Reno's growth: Linux grows cwnd by the segments an ACK acknowledges (``tcp_slow_start`` and
  ``tcp_cong_avoid_ai`` count acknowledged segments), so with delayed ACKs it still doubles per
  round trip in slow start and adds one segment per round trip after; RFC 5681's per-ACK
  growth, farlink's default, adds half as much: ``growth = "byte-counting"``;
* CUBIC is ``cubic-linux``, the kernel's ``tcp_cubic.c`` arithmetic with HyStart, not RFC
  9438's ``cubic``: on a short path the two differ by whole multiples in how fast the window
  grows (docs/congestion-control.md).
"""

from __future__ import annotations

import json

from farlink._core import TCP_PROFILES

__all__ = [
    "LINUX_CC_NAMES",
    "LINUX_CONNECTION",
    "LINUX_SENDER",
    "LINUX_SOURCES",
    "linux_cc_fields",
    "linux_cc_name",
    "linux_cc_sets",
    "linux_sets",
    "profile_recovery",
]

_LINUX = TCP_PROFILES["linux"]

LINUX_SENDER: dict[str, str | int | bool] = {
    key: value for key, value, _, part, _ in _LINUX["fields"] if part == "sender"
}
"""The sender's timer and loss detection, as ``[flows.tcp]`` fields (module notes)."""

LINUX_CONNECTION: dict[str, str | int | bool] = {
    key: value for key, value, _, part, _ in _LINUX["fields"] if part == "connection"
}
"""The connection's defaults on Linux, as ``[flows.tcp]`` fields (module notes)."""

LINUX_SOURCES: dict[str, str] = {key: source for key, _, _, _, source in _LINUX["fields"]}
"""What each field follows in the kernel's source, by field."""

LINUX_CC_NAMES: dict[str, str] = dict(_LINUX["models"])
"""farlink's model of a Linux module's own arithmetic, by the module's name (module notes; the
core's list, which the emulator reads too)."""


def profile_recovery(profile: str) -> str | None:
    """The loss recovery of TCP profile ``profile``, which a controller named on the command
    line runs over (None: the profile has none of its own). Raises KeyError for a name that is
    not a profile."""
    return TCP_PROFILES[profile]["recovery"]


def linux_cc_name(cc: str) -> str:
    """The farlink controller that models Linux's module ``cc``."""
    return LINUX_CC_NAMES.get(cc, cc)


def linux_cc_fields(cc: str) -> dict[str, str]:
    """``[flows.tcp]`` fields naming the controller that models Linux's ``cc``, with Linux's
    growth rule where farlink's controller has a choice (Reno: byte counting)."""
    fields = {"cc": linux_cc_name(cc)}
    growth = _LINUX["growth"].get(fields["cc"])
    if growth is not None:
        fields["growth"] = growth
    return fields


def linux_cc_sets(cc: str, flow: int = 0) -> list[str]:
    """``--set`` assignments naming the controller that models Linux's ``cc`` for flow
    ``flow``, with Linux's growth rule (:func:`linux_cc_fields`)."""
    return [f'flows[{flow}].tcp.{key}="{value}"' for key, value in linux_cc_fields(cc).items()]


def linux_sets(flow: int = 0, cc: str | None = None) -> list[str]:
    """``--set`` assignments giving flow ``flow`` Linux's connection defaults and sender, and,
    with ``cc``, that controller with Linux's growth rule."""
    fields = {**LINUX_CONNECTION, **LINUX_SENDER}
    sets = [f"flows[{flow}].tcp.{key}={json.dumps(value)}" for key, value in fields.items()]
    return sets + (linux_cc_sets(cc, flow) if cc else [])
