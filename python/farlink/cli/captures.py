"""``farlink analyze`` and ``farlink fit``: captures read like a simulation, a path fitted."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
import typer

from farlink import units
from farlink.cli.options import DEFAULT_OUT, CliError, DurationOpt, ForceFlag, JsonFlag, emit, read
from farlink.reports.terminal import print_json, print_quantities

if TYPE_CHECKING:
    from farlink.captures.simulated import SimulatedRun


# What `analyze` takes on by default (`--budget-connections`): each connection's analysis
# costs about 0.7 ms (analysis and summary, 20,000 one-packet connections in 15 s on the
# project's 2-core machine), so the default keeps a run within seconds to tens of seconds;
# reading and grouping the packets before the check are linear and cheap beside it.
DEFAULT_BUDGET_CONNECTIONS = 20_000
# Connections drawn in the figures and printed as tables (those that sent the most data): a
# figure's legend with hundreds of entries is unreadable and matplotlib places it in time
# quadratic in them; --json lists every connection.
SHOWN_CONNECTIONS = 10


def analyze_command(
    capture: Annotated[Path, typer.Argument(help="A capture: pcap (µs or ns) or pcapng.")],
    drops: Annotated[
        Path | None,
        typer.Option(help="Call-drop log (CSV or KUMICS XML) drawn on the time-sequence figure."),
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Folder for the figures.")] = None,
    min_rto: Annotated[
        str | None,
        typer.Option(
            help=f"A hint, not the rule: the sender's least RTO {DurationOpt} Linux uses 200ms. "
            "Timeouts are inferred from the capture; one sooner than this is not counted."
        ),
    ] = None,
    sim: Annotated[
        str | None,
        typer.Option(
            "--sim",
            help="A scenario file or preset to simulate and draw beside the capture.",
        ),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="With --sim: set a scenario field, path=value."),
    ] = None,
    seed: Annotated[int | None, typer.Option(help="With --sim: master seed of the run.")] = None,
    link_rate: Annotated[
        str | None,
        typer.Option(
            help=f"Normalise goodput to this link rate ({units.BITRATE_FORMS}), as seed 004 "
            "Figures 10-12 do."
        ),
    ] = None,
    budget_connections: Annotated[
        int | None,
        typer.Option(
            "--budget-connections",
            help=f"Most connections carrying data to analyse (default "
            f"{DEFAULT_BUDGET_CONNECTIONS:,}, about 0.7 ms each); a capture with more is "
            "refused before any is analysed.",
        ),
    ] = None,
    estimate_only: Annotated[
        bool,
        typer.Option(
            "--estimate",
            help="Read the capture, print its connections and the budget; no analysis.",
        ),
    ] = False,
    force: ForceFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Analyse the TCP connections of a capture: retransmissions, RTT, timeouts, goodput.

    With --sim, a simulation of the scenario is analysed the same way and drawn in the same
    figures, and its numbers are printed beside the capture's. Figures and tables show the
    connections that sent the most data; --json lists every one.
    """
    from farlink.captures.analysis import CaptureError, data_connections, read_capture
    from farlink.captures.figures import plot_connections
    from farlink.outputs import OutputFolder, safe_name

    min_rto_s = None if min_rto is None else read("--min-rto", units.parse_duration_s, min_rto)
    rate_bps = (
        None if link_rate is None else read("--link-rate", units.parse_bitrate_bps, link_rate)
    )
    if sim is None and (set_ or seed is not None):
        raise CliError("--set: --set and --seed need --sim")
    budget = DEFAULT_BUDGET_CONNECTIONS if budget_connections is None else budget_connections
    if budget < 1:
        raise CliError(f"--budget-connections: expected at least 1, got {budget}")
    try:
        cap = read_capture(capture)
    except CaptureError as err:
        raise CliError(str(err)) from None
    _warn_capture(cap.warnings)
    groups = data_connections(cap.packets)
    if estimate_only:
        emit(as_json, f"analyze {capture} --estimate", _analyze_estimate(cap, groups, budget))
        return
    _check_connections(capture, cap, len(groups), budget)
    shown = _most_data(groups, SHOWN_CONNECTIONS)
    summaries, kept = _analyze_groups(capture, cap, groups, shown, min_rto_s, rate_bps)
    if len(groups) > len(kept):
        _warn_capture(
            [
                f"{capture}: {len(groups):,} connections; the figures and tables show the "
                f"{len(kept)} that sent the most data (--json lists every one)"
            ]
        )
    drops_s = None if drops is None else _log_drops_s(drops, cap.start_unix_s)
    simulated = None if sim is None else _simulate_beside(sim, set_ or (), seed, min_rto_s)
    stem = safe_name(capture.stem, "capture")
    folder = OutputFolder(out if out is not None else DEFAULT_OUT / "analyze" / stem, force=force)
    folder.claim_folder()
    drawn = kept + (simulated.connections if simulated else [])
    before = folder.listing()
    written = plot_connections(
        drawn,
        folder.path,
        stem=stem,
        drops_s=drops_s,
        sim_drops_s=simulated.drops_s if simulated else None,
        link_rate_bps=rate_bps,
    )
    folder.record_written(before)
    payload = {
        "capture": str(capture),
        "format": cap.format,
        "linktype": cap.linktype,
        "packets": cap.records,
        "tcp_packets": len(cap.packets),
        "skipped": cap.skipped,
        "bytes_ignored": cap.bytes_ignored,
        "warnings": cap.warnings,
        "link_rate_bps": rate_bps,
        "out": str(folder.path),
    }
    sim_payload = None
    if simulated:
        sim_payload = {
            "scenario": simulated.scenario,
            "seed": simulated.seed,
            "call_drop_times_s": simulated.drops_s.tolist(),
            "connections": [c.summary(rate_bps) for c in simulated.connections],
        }
    if as_json:
        print_json(
            {
                **payload,
                "connections": summaries,
                **({"simulation": sim_payload} if sim_payload else {}),
                "figures": [str(p) for p in written],
            }
        )
        return
    print_quantities(
        f"analyze {capture}",
        {k: v for k, v in payload.items() if k != "warnings" and v is not None},
    )
    printed = [s for i, s in enumerate(summaries) if i in shown]
    if sim_payload:
        _print_side_by_side(printed + sim_payload["connections"], rate_bps)
    else:
        for s in printed:
            print_quantities(
                f"connection {s['connection']}",
                {k: v for k, v in s.items() if k not in ("goodput_windows", "timeout_times_s")},
            )
    for path in written:
        typer.echo(f"wrote {path}")


def _analyze_groups(
    capture: Path,
    cap: Any,
    groups: list[Any],
    shown: set[int],
    min_rto_s: float | None,
    rate_bps: float | None,
) -> tuple[list[dict[str, Any]], list[Any]]:
    """Every connection's summary, and the connections of ``shown`` whole. One connection's
    series are alive at a time: memory grows with the summaries, not with the series."""
    from farlink.captures.address_map import connection_labeler
    from farlink.captures.analysis import iter_connections

    label = connection_labeler(capture)
    summaries, kept = [], []
    for i, conn in enumerate(
        iter_connections(groups, start_s=cap.start_s, source=cap.source, min_rto_s=min_rto_s)
    ):
        conn = label(conn)
        summaries.append(conn.summary(rate_bps))
        if i in shown:
            kept.append(conn)
    return summaries, kept


def _check_connections(capture: Path, cap: Any, connections: int, budget: int) -> None:
    """Refuse a capture with no connection to analyse, or with more than the budget."""
    if not connections:
        skipped = ", ".join(f"{v} {k.replace('_', '-')}" for k, v in cap.skipped.items() if v)
        raise CliError(
            f"{capture}: no TCP connection carrying data in {cap.records} packets"
            + (f" (skipped {skipped})" if skipped else "")
        )
    if connections > budget:
        raise CliError(
            f"{capture}: {connections:,} connections carry data, above the budget of "
            f"{budget:,} (about 0.7 ms each); add --budget-connections {connections} to "
            "analyse them all"
        )


def _most_data(groups: list[Any], count: int) -> set[int]:
    """The indices of the ``count`` connections that sent the most data (ties: the first)."""
    order = sorted(range(len(groups)), key=lambda i: (-groups[i].sent_bytes, i))
    return set(order[:count])


def _analyze_estimate(cap: Any, groups: list[Any], budget: int) -> dict[str, Any]:
    """``analyze --estimate``: what the capture holds and whether its analysis is within the
    budget, from the packets read and grouped (cheap), with no connection analysed."""
    return {
        "capture": cap.source,
        "format": cap.format,
        "packets": cap.records,
        "tcp_packets": len(cap.packets),
        "connections": len(groups),
        "budget_connections": budget,
        "within_budget": len(groups) <= budget,
    }


def _warn_capture(warnings: list[str] | tuple[str, ...]) -> None:
    """What every command that reads a capture says about it: one line per warning."""
    for warning in warnings:
        print(f"farlink: warning: {warning}", file=sys.stderr)


def _log_drops_s(drops: Path, capture_start_unix_s: float) -> np.ndarray:
    """The drop times of a call-drop log on the capture's clock."""
    from farlink.calldrops.log import DropLogError, drop_times_on_clock, read_drop_log

    try:
        log = read_drop_log(drops)
    except DropLogError as err:
        raise CliError(f"--drops: {err}") from None
    return drop_times_on_clock(log, capture_start_unix_s)


def _simulate_beside(
    scenario: str, sets: list[str] | tuple[str, ...], seed: int | None, min_rto_s: float | None
) -> SimulatedRun:
    """``--sim``: the scenario run and analysed like the capture."""
    from farlink import _core
    from farlink.captures.simulated import simulate_for_analysis
    from farlink.scenario import ScenarioError

    try:
        run = simulate_for_analysis(scenario, sets=sets, seed=seed, min_rto_s=min_rto_s)
    except ScenarioError as err:
        raise CliError(f"--sim: {err}") from None
    except _core.ConservationError as err:
        raise CliError(f"conservation check failed (please report this scenario): {err}") from None
    if not run.connections:
        raise CliError(f"--sim: {scenario}: the simulation sent no data")
    return run


# The rows of the side-by-side table of `farlink analyze --sim`.
_SIDE_BY_SIDE = (
    "duration_s",
    "data_segments",
    "delivered_bytes",
    "goodput_bps",
    "retransmissions",
    "timeouts",
    "dupacks",
    "rtt_method",
    "rtt_samples",
    "rtt_min_s",
    "rtt_median_s",
    "rtt_max_s",
    "max_outstanding_bytes",
)


def _print_side_by_side(summaries: list[dict[str, Any]], link_rate_bps: float | None) -> None:
    from farlink.reports.terminal import print_rows

    rows = [(key, *(s[key] for s in summaries)) for key in _SIDE_BY_SIDE]
    field, what = ("mean_normalized", "/ rate") if link_rate_bps else ("mean_bps", "bit/s")
    for window in summaries[0]["goodput_windows"]:
        rows.append(
            (
                f"goodput {window} mean {what}",
                *(s["goodput_windows"][window].get(field) for s in summaries),
            )
        )
    print_rows(["", *(s["connection"] for s in summaries)], rows)


def fit_command(
    capture: Annotated[Path, typer.Argument(help="A pcap or pcapng capture of a TCP transfer.")],
    drops: Annotated[
        Path | None, typer.Option(help="Call-drop log (CSV or KUMICS XML) to fit beta from.")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Scenario file to write (TOML; default farlink-out/fit-CAPTURE.toml)."),
    ] = None,
    tcp: Annotated[
        str | None,
        typer.Option(
            help="The captured sender's congestion controller (reno, cubic, bbr, ...), written "
            "into the fitted flow; the capture does not show it. Default: farlink's (reno)."
        ),
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(
            help="The fitted flow's TCP profile: rfc (RFC 6298, SACK recovery; farlink's "
            'default) or linux (profile = "linux", Linux\'s connection and sender defaults, '
            "with the options the capture shows beside it)."
        ),
    ] = None,
    sender: Annotated[
        str | None,
        typer.Option(help="The same as --profile (its older name)."),
    ] = None,
    rtt: Annotated[
        str | None,
        typer.Option(
            help=f"The path's least RTT {DurationOpt} in place of the capture's: a capture taken "
            "at the receiver without TCP timestamps cannot show it (the fit then refuses)."
        ),
    ] = None,
    force: ForceFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Estimate loss rate, RTT and beta from a capture and a drop log; write a scenario."""
    from farlink.captures.fit import (
        LOSS_RATE_MEANINGS,
        PROFILES,
        checked_scenario_toml,
        fit_path,
    )
    from farlink.outputs import OutputError, OutputFolder, safe_name

    name = safe_name(f"fit-{capture.stem}")
    for option, given in (("--profile", profile), ("--sender", sender)):
        if given is not None and given not in PROFILES:
            raise CliError(f"{option}: expected one of {', '.join(PROFILES)}, got {given!r}")
    if profile is not None and sender is not None and profile != sender:
        raise CliError(
            f"--sender {sender} and --profile {profile}: --sender is --profile's older name; "
            "give one"
        )
    profile = profile or sender or "rfc"
    rtt_s = None if rtt is None else read("--rtt", units.parse_duration_s, rtt)
    if rtt_s is not None and rtt_s <= 0:
        raise CliError(f"--rtt: the path's least RTT must be above zero, got {rtt!r}")
    try:
        fitted = fit_path(capture, drops, rtt_s=rtt_s)
        _warn_capture(fitted.warnings)
        text = checked_scenario_toml(fitted, name=name, tcp=tcp, profile=profile)
    except ValueError as err:  # CaptureError and DropLogError too
        if str(err).startswith("tcp: "):
            raise CliError(f"--{err}") from None
        raise CliError(f"fit: {err}") from None
    path = out if out is not None else DEFAULT_OUT / f"{name}.toml"
    if path.is_dir():
        raise OutputError(f"--out: {path} is a folder; name the scenario file to write (.toml)")
    path = OutputFolder(path.parent, force=force).write_text(path.name, text)
    # "sender" is kept beside "profile" for readers of --sender's output.
    payload = {
        **fitted.to_dict(),
        "profile": profile,
        "sender": profile,
        "tcp": tcp,
        "scenario": str(path),
    }
    if as_json:
        print_json({**payload, "loss_rate_meanings": LOSS_RATE_MEANINGS})
        return
    emit(as_json, f"fit {capture}", payload)
    for name, meaning in LOSS_RATE_MEANINGS.items():
        typer.echo(f"{name}: {meaning}")
