"""Link schedules and mahimahi traces as files: read into a scenario, and written out.

The core reads no files. A scenario's ``schedule = { file = "FILE" }`` (a CSV with the columns
``farlink leo`` writes: ``at_s``, ``delay_s``, ``rate_bps``, ``up``, optionally ``loss``; other
columns such as ``satellite`` are ignored) and ``rate = { trace = "FILE" }`` (mahimahi's format:
one line per delivery opportunity of 1504 bytes, its millisecond) are read here and handed to the
core inline: ``schedule.rows`` (``file`` kept) and ``rate_trace.opportunities_ms``. A path in a
scenario file is relative to that file's folder; one given any other way (``--set``, a document
built in Python) is relative to the current folder. docs/schedules.md.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from farlink._core import ScenarioError

__all__ = [
    "MAHIMAHI_OPPORTUNITY_BYTES",
    "export_opportunities",
    "inline_files",
    "opportunities_from_steps",
    "read_mahimahi",
    "read_schedule_csv",
    "write_mahimahi",
]

MAHIMAHI_OPPORTUNITY_BYTES = 1504
"""The bytes of one delivery opportunity (mahimahi's ``LinkQueue::PACKET_SIZE``)."""

_REQUIRED = ("at_s", "delay_s", "rate_bps", "up")


def _error(path: str, message: str) -> ScenarioError:
    err = ScenarioError(f"{path}: {message}")
    err.path, err.message = path, message
    return err


def _number(text: str, where: str, column: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ScenarioError(f"{where}: {column}: expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise ScenarioError(f"{where}: {column}: expected a finite number, got {text!r}")
    return value


def read_schedule_csv(path: Path) -> list[dict[str, Any]]:
    """The rows of a schedule CSV as the core's schedule rows (``at_s``, ``delay_s``,
    ``rate_bps``, ``up``, ``loss`` where the file has it). ``ScenarioError`` names the file and
    line of anything unreadable."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ScenarioError(f"{path}: cannot read the schedule file ({err.strerror})") from None
    reader = csv.DictReader(text.splitlines())
    missing = [c for c in _REQUIRED if c not in (reader.fieldnames or [])]
    if missing:
        raise ScenarioError(
            f"{path}:1: expected the columns {', '.join(_REQUIRED)} (and optionally loss), "
            f"missing {', '.join(missing)}"
        )
    rows = []
    for line, record in enumerate(reader, start=2):
        where = f"{path}:{line}"
        up = record["up"].strip().lower()
        if up not in ("0", "1", "true", "false"):
            raise ScenarioError(f"{where}: up: expected 1 or 0 (or true, false), got {up!r}")
        row: dict[str, Any] = {
            "at_s": _number(record["at_s"], where, "at_s"),
            "delay_s": _number(record["delay_s"], where, "delay_s"),
            "rate_bps": _number(record["rate_bps"], where, "rate_bps"),
            "up": up in ("1", "true"),
        }
        if record.get("loss") not in (None, ""):
            row["loss"] = _number(record["loss"], where, "loss")
        rows.append(row)
    if not rows:
        raise ScenarioError(f"{path}: the schedule has no rows")
    return rows


def read_mahimahi(path: Path) -> list[int]:
    """The delivery opportunities of a mahimahi trace, in ms, as the file lists them: one
    non-negative integer a line, non-decreasing, the last above 0 (what ``mm-link`` checks)."""
    try:
        text = path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as err:
        why = err.strerror if isinstance(err, OSError) else "not ASCII text"
        raise ScenarioError(f"{path}: cannot read the mahimahi trace ({why})") from None
    out: list[int] = []
    for line, raw in enumerate(text.splitlines(), start=1):
        value = raw.strip()
        if not value.isdigit():
            raise ScenarioError(
                f"{path}:{line}: expected a whole number of milliseconds, got {raw!r}"
            )
        ms = int(value)
        if out and ms < out[-1]:
            raise ScenarioError(
                f"{path}:{line}: timestamps must be non-decreasing ({ms} after {out[-1]})"
            )
        out.append(ms)
    if not out or out[-1] == 0:
        raise ScenarioError(f"{path}: a mahimahi trace needs timestamps lasting above 0 ms")
    return out


def write_mahimahi(path: Path, opportunities_ms: Iterable[int]) -> None:
    """Writes opportunities as mahimahi reads them: one millisecond a line."""
    path.write_text("".join(f"{int(ms)}\n" for ms in opportunities_ms), encoding="ascii")


def opportunities_from_steps(steps: list[tuple[float, float]], duration_s: float) -> list[int]:
    """mahimahi opportunities offering a piecewise-constant rate: ``steps`` are
    ``(from_s, rate_bps)`` in time order (0 while down). An opportunity is placed at the first
    whole millisecond at or after the instant the rate has offered another 1504 bytes since the
    last one, so over any span the trace offers what the rate does, to within one opportunity
    and 1 ms. The last line is at ``duration_s`` (mahimahi repeats a trace at its last line).
    """
    # In integers: time in ns, credit in bit-nanoseconds per second (bits x 1e9).
    need_full = MAHIMAHI_OPPORTUNITY_BYTES * 8 * 10**9
    out: list[int] = []
    credit = 0
    end_ns_all = round(duration_s * 1e9)
    bounds = [round(s * 1e9) for s, _ in steps[1:]] + [end_ns_all]
    for (start_s, rate_bps), end_ns in zip(steps, bounds, strict=True):
        t, end_ns, rate = round(start_s * 1e9), min(end_ns, end_ns_all), round(rate_bps)
        if end_ns <= t or rate <= 0:
            continue
        while True:
            dt = -(-(need_full - credit) // rate)  # ceil
            if t + dt > end_ns:
                credit += (end_ns - t) * rate
                break
            t += dt
            credit = 0
            out.append(-(-t // 10**6))
    last_ms = round(duration_s * 1000)
    out = [ms for ms in out if ms <= last_ms]
    if not out or out[-1] != last_ms:
        # mahimahi's period is the last timestamp: the trace's end must be there. This
        # adds one opportunity (1504 bytes) at the very end of the span.
        out.append(last_ms)
    return out


def _resolve(base: Path, name: Any, path: str) -> Path:
    if not isinstance(name, str) or not name:
        raise _error(path, "expected a file name (a string)")
    p = Path(name).expanduser()
    return p if p.is_absolute() else base / p


def _inline_schedule(table: dict[str, Any], key_path: str, base: Path) -> None:
    sched = table.get("schedule")
    if isinstance(sched, dict) and "file" in sched and "rows" not in sched:
        file = _resolve(base, sched["file"], f"{key_path}.schedule.file")
        sched["rows"] = read_schedule_csv(file)
        sched["file"] = str(file)


def _inline_rate_trace(table: dict[str, Any], key_path: str, base: Path) -> None:
    rate = table.get("rate")
    if not isinstance(rate, dict):
        return
    if set(rate) != {"trace"}:
        raise _error(f"{key_path}.rate", 'expected a rate ("10Mbps") or { trace = "FILE" }')
    file = _resolve(base, rate["trace"], f"{key_path}.rate.trace")
    del table["rate"]
    table["rate_trace"] = {"file": str(file), "opportunities_ms": read_mahimahi(file)}


def inline_files(doc: dict[str, Any], base: Path) -> dict[str, Any]:
    """``doc`` with every schedule file and mahimahi trace it names read in (paths relative to
    ``base``), in place; returns it. A reference already read in is left alone."""
    links = doc.get("links")
    if not isinstance(links, list):
        return doc
    for i, link in enumerate(links):
        if not isinstance(link, dict):
            continue
        where = f"links[{i}]"
        _inline_schedule(link, where, base)
        if isinstance(link.get("rate"), dict):
            raise _error(
                f"{where}.rate",
                "a mahimahi trace drives one direction: give it as fwd.rate or rev.rate",
            )
        for key in ("fwd", "rev"):
            direction = link.get(key)
            if isinstance(direction, dict):
                _inline_schedule(direction, f"{where}.{key}", base)
                _inline_rate_trace(direction, f"{where}.{key}", base)
    return doc


def _quiet_flows(doc: dict[str, Any]) -> None:
    """Every flow made a telnet source of one byte every 10 s: the run lasts its duration (a
    bulk transfer could end it early) and costs few events, and a bundle's call drops and
    redials, drawn apart from the traffic, are those of the scenario's own run."""
    for flow in doc.get("flows", []):
        if isinstance(flow, dict):
            flow["app"] = {"kind": "telnet", "mean_interval": "10s", "message_bytes": 1}


def _only_direction(link: dict[str, Any], direction: str) -> None:
    """The link's schedule on ``direction`` alone, so the capacity trace is that direction's."""
    other = "rev" if direction == "fwd" else "fwd"
    shared = link.pop("schedule", None)
    if shared is not None:
        link.setdefault(direction, {}).setdefault("schedule", shared)
    if isinstance(link.get(other), dict):
        link[other].pop("schedule", None)


def export_opportunities(
    doc: dict[str, Any], link: str, direction: str, duration_s: float | None
) -> list[int]:
    """mahimahi delivery opportunities that carry what ``direction`` (``fwd`` or ``rev``) of
    ``link`` (a name or an index) carries: its mahimahi trace as read (cycled to
    ``duration_s`` if given), else its rate over ``duration_s`` (default: the scenario's
    duration) as the simulator runs it: a fixed rate, a schedule's rate while up, or a bundle's
    capacity, members up and down with their call drops and redials as the scenario's seed draws
    them. Raises ``ScenarioError`` naming what is wrong."""
    import copy

    from farlink.scenario import resolve, to_core_json

    if direction not in ("fwd", "rev"):
        raise ScenarioError(f"--direction: expected fwd or rev, got {direction!r}")
    doc = inline_files(copy.deepcopy(doc), Path.cwd())
    resolved = resolve(doc)
    names = [entry["name"] for entry in resolved["links"]]
    index = int(link) if link.isdigit() else (names.index(link) if link in names else -1)
    if not 0 <= index < len(names):
        raise ScenarioError(f"--link: no link {link!r}; the scenario's links: {', '.join(names)}")
    raw = doc["links"][index]
    trace = (raw.get(direction) or {}).get("rate_trace")
    if trace is not None:
        ms = list(trace["opportunities_ms"])
        return ms if duration_s is None else _cycled(ms, duration_s)
    duration_s = resolved["duration_s"] if duration_s is None else duration_s
    ends = resolved["links"][index][direction]
    bundle = "bundle" in raw
    scheduled = "schedule" in raw or "schedule" in (raw.get(direction) or {})
    if not (bundle or scheduled):
        return opportunities_from_steps([(0.0, float(ends["rate_bps"]))], duration_s)
    from farlink.sim import simulate

    run_doc = copy.deepcopy(doc)
    run_doc["duration_s"] = duration_s
    run_doc.pop("duration", None)
    run_doc.setdefault("trace", {})
    if isinstance(run_doc["trace"], dict):
        run_doc["trace"]["capacity"] = True
    _quiet_flows(run_doc)
    if scheduled:
        _only_direction(run_doc["links"][index], direction)
    to_core_json(run_doc)  # refused here, with its path, rather than inside the run
    capacity = simulate(run_doc).trace("capacity")
    mine = capacity["link"] == index
    times_s = capacity["time_ns"][mine] / 1e9
    rates = capacity["capacity_bps"][mine].astype(float)
    steps = list(zip(times_s.tolist(), rates.tolist(), strict=True))
    if not steps or steps[0][0] > 0:
        # Before the first change: a bundle dialling has no capacity yet.
        steps.insert(0, (0.0, 0.0 if bundle else float(ends["rate_bps"])))
    return opportunities_from_steps(steps, duration_s)


def _cycled(ms: list[int], duration_s: float) -> list[int]:
    """``ms`` repeated as mahimahi repeats it (period: its last timestamp) up to
    ``duration_s``, the last line at ``duration_s``."""
    period, last_ms = ms[-1], round(duration_s * 1000)
    out: list[int] = []
    base = 0
    while base < last_ms:
        out.extend(base + m for m in ms if base + m <= last_ms)
        base += period
    if not out or out[-1] != last_ms:
        out.append(last_ms)
    return out
