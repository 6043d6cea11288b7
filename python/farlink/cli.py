"""The ``farlink`` command.

Every option that carries a quantity takes human units and its help says which. Bad input prints
one line, ``farlink: error: <option>: <what was wrong and the accepted form>``, and exits 2.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import numpy as np
import typer

from farlink import units
from farlink.compare_cli import compare_command
from farlink.emulate_cli import emulate_command
from farlink.predict import (
    CALLDROP_BUNDLE_ONLY,
    CALLDROP_DEFAULTS,
    WIRE_OVERHEAD_BYTES,
    Bounded,
    PathInputs,
    bound,
    path_inputs,
)
from farlink.report import print_json, print_quantities

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="Predict, simulate and emulate TCP over far links.",
)
predict_app = typer.Typer(
    no_args_is_help=True,
    help="Closed-form predictions (the model engine). Throughputs in packets/s and bit/s.",
)
app.add_typer(predict_app, name="predict")
app.command("emulate")(emulate_command)
app.command("compare")(compare_command)

T = TypeVar("T")
EXIT_BAD_INPUT = 2
DEFAULT_OUT = Path("farlink-out")


class CliError(Exception):
    """Bad input on the command line; the message names the option."""


def read(option: str, parser: Callable[[str], T], text: str) -> T:
    """Parse one option's text, turning a unit error into a message naming the option."""
    try:
        return parser(text)
    except units.UnitError as err:
        raise CliError(f"{option}: {err}") from None


def _evaluate(option_names: str, compute: Callable[[], T]) -> T:
    """Run a model, turning its parameter errors into a one-line message."""
    try:
        return compute()
    except ValueError as err:
        raise CliError(f"{option_names}: {err}") from None


JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON object instead of a table.")]
ForceFlag = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Replace existing files farlink did not write (docs/security.md); without it, "
        "only files in the folder's .farlink-manifest.json are replaced.",
    ),
]
SizeOpt = f"Size ({units.SIZE_FORMS})."
DurationOpt = f"({units.DURATION_FORMS})."
BudgetEventsOpt = Annotated[
    str | None,
    typer.Option(
        "--budget-events",
        help="Most events the run may take (default 1e9, a few minutes), e.g. 5e9.",
    ),
]
BudgetMemoryOpt = Annotated[
    str | None,
    typer.Option(
        "--budget-memory",
        help=f"Most memory the run may hold, traces included (default 2GiB). {SizeOpt}",
    ),
]
BudgetDiskOpt = Annotated[
    str | None,
    typer.Option(
        "--budget-disk",
        help=f"Most disk the run's traces may fill in its folder (default 16GiB). {SizeOpt}",
    ),
]


OutDirOpt = Annotated[
    Path | None, typer.Option("--out", help="Also write the result as DIR/summary.json.")
]


def _predicted(payload: dict[str, Any], out: Path | None) -> dict[str, Any]:
    """A prediction as a result document (docs/results.md), written to ``out`` if given."""
    from farlink.report import plain
    from farlink.result_schema import model_document, write_document

    doc = plain(model_document(payload))  # NaN and inf as null, as printed
    if out is not None:
        write_document(doc, out)
    return doc


def _emit_prediction(as_json: bool, title: str, payload: dict[str, Any], out: Path | None) -> None:
    doc = _predicted(payload, out)
    if as_json:
        print_json(doc)
        return
    _emit(False, title, payload)
    if out is not None:
        typer.echo(f"wrote {out / 'summary.json'}")


def _emit(as_json: bool, title: str, payload: dict[str, Any]) -> None:
    if as_json:
        print_json(payload)
    else:
        print_quantities(title, {k: v for k, v in payload.items() if k not in ("inputs", "model")})


ScenarioArg = Annotated[
    str | None,
    typer.Argument(
        help="A scenario file or preset: its first flow and path give every input (the core's "
        "resolved scenario); options given replace them.",
        show_default=False,
    ),
]
LinkRateOpt = Annotated[
    str | None,
    typer.Option(
        help="Bit rate of one link (one bundle member): with --links, the capacity that bounds "
        "the prediction. From the scenario if one is given."
    ),
]


def _scenario_inputs(scenario: str | None) -> PathInputs | None:
    """The models' inputs from a scenario, or None without one."""
    if scenario is None:
        return None
    from farlink.scenario import ScenarioError, describe_error, load_scenario, resolve

    try:
        resolved = resolve(load_scenario(scenario))
    except ScenarioError as err:
        raise CliError(describe_error(scenario, err)) from None
    try:
        return path_inputs(resolved)
    except ValueError as err:
        raise CliError(f"{scenario}: {err}") from None


def _pick(
    option: str,
    text: str | None,
    parser: Callable[[str], T],
    scenario_value: T | None,
    default: str | None = None,
) -> T:
    """An input: the option given, else the scenario's value, else the built-in default."""
    if text is not None:
        return read(option, parser, text)
    if scenario_value is not None:
        return scenario_value
    if default is None:
        raise CliError(
            f"{option}: missing: give {option}, or a scenario whose first flow gives it "
            "(a bulk transfer gives its size)"
            if option == "--size"
            else f"{option}: missing: give {option} or a scenario to read it from"
        )
    return read(option, parser, default)


def _loss_of(text: str | None, path: PathInputs | None, default: str | None = None) -> float:
    p = _pick("--loss", text, units.parse_probability, path.p if path else None, default)
    if not 0 < p < 1:
        raise CliError(
            f"--loss: the scenario's data path loses no packets after ARQ (p = {p:g}); the "
            "models need a loss rate in (0, 1): give --loss"
        )
    return p


def _warn(message: str) -> None:
    typer.echo(f"farlink: warning: {message}", err=True)


def _capacity(
    path: PathInputs | None, links: float | None, link_rate: str | None, mss_bytes: float
) -> tuple[float | None, str]:
    """The path's capacity in payload bit/s and what it is, or None when nothing gives it."""
    if link_rate is None and path is not None and links in (None, path.n_links):
        return path.capacity_bps, f"bottleneck {path.bottleneck}"
    rate = None if link_rate is None else read("--link-rate", units.parse_bitrate_bps, link_rate)
    if rate is None and path is not None:
        rate = path.link_rate_bps
    if rate is None:
        return None, "unknown (give --link-rate or a scenario)"
    n = links if links is not None else 1
    share = mss_bytes / (mss_bytes + WIRE_OVERHEAD_BYTES)
    return n * rate * share, f"{n:g} x {rate:g} bit/s"


def _bounded_payload(
    payload: dict[str, Any], mss_bytes: float, capacity: tuple[float | None, str]
) -> Bounded:
    """Bound the payload's throughput by the capacity; add what the bound did."""
    bounded = bound(payload["throughput_bps"], capacity[0])
    payload["model_throughput_bps"] = bounded.model_throughput_bps
    payload["throughput_bps"] = bounded.throughput_bps
    payload["throughput_pkts_per_s"] = bounded.throughput_bps / (mss_bytes * 8)
    payload["capacity_bps"] = bounded.capacity_bps
    payload["capacity"] = capacity[1]
    payload["capacity_binds"] = bounded.binds
    return bounded


def _emit_bounded(
    as_json: bool, title: str, payload: dict[str, Any], bounded: Bounded, out: Path | None
) -> None:
    _emit_prediction(as_json, title, payload, out)
    if as_json:
        return
    if bounded.binds:
        typer.echo(
            f"bounded by the path's capacity: {bounded.throughput_bps:,.0f} bit/s of payload "
            f"({payload['capacity']}); the model alone gives {bounded.model_throughput_bps:,.0f}"
        )
    elif bounded.capacity_bps is None:
        typer.echo(f"not bounded: the path's capacity is {payload['capacity']}")


@predict_app.command("calldrop")
def predict_calldrop(
    scenario: ScenarioArg = None,
    size: Annotated[
        str | None, typer.Option(help=f"File size (the scenario's bulk size). {SizeOpt}")
    ] = None,
    links: Annotated[
        str | None, typer.Option(help="Members in the bundle (n). [default: 8]")
    ] = None,
    link_rate: LinkRateOpt = None,
    rtt: Annotated[
        str | None, typer.Option(help=f"Mean loaded RTT {DurationOpt} [default: 19s]")
    ] = None,
    loss: Annotated[
        str | None,
        typer.Option(
            help=f"Packet loss rate p left by the ARQ ({units.PROBABILITY_FORMS}). [default: 5e-4]"
        ),
    ] = None,
    drop_rate: Annotated[
        str | None,
        typer.Option(
            help=f"Call-drop rate per member, beta ({units.EVENT_RATE_FORMS}). [default: 1/50min]"
        ),
    ] = None,
    t0: Annotated[
        str | None,
        typer.Option(help=f"Initial retransmission timeout T0 {DurationOpt} [default: 60s]"),
    ] = None,
    mss: Annotated[
        str | None, typer.Option(help=f"Segment payload. {SizeOpt} [default: 1448]")
    ] = None,
    wmax: Annotated[
        str | None,
        typer.Option(help=f"Receiver window limit, or 'none'. {SizeOpt} [default: 47.9KB]"),
    ] = None,
    b: Annotated[
        str | None,
        typer.Option("--b", help="Segments acknowledged per ACK (2: delayed ACK). [default: 2]"),
    ] = None,
    as_json: JsonFlag = False,
    out: OutDirOpt = None,
) -> None:
    """Transfer time over an n-member bundle with Poisson call drops (seed 000 eq. 36).

    Without a scenario, defaults are the Greenland-Kansas 8-modem bundle of seed 000 Table 6.1
    (2.4 kbit/s members); with one, its first flow and its bottleneck give every input.
    """
    from farlink.models import calldrop_prediction

    path = _scenario_inputs(scenario)
    d = CALLDROP_DEFAULTS if path is None else dict.fromkeys(CALLDROP_DEFAULTS)
    n_links = _pick("--links", links, units.parse_count, path and path.n_links, d["links"])
    if path is None and n_links != 8:
        given = {"rtt": rtt, "wmax": wmax, "t0": t0}
        kept = [f"--{k} {CALLDROP_DEFAULTS[k]}" for k in CALLDROP_BUNDLE_ONLY if given[k] is None]
        if kept:
            _warn(
                f"{', '.join(kept)} are the 8-modem bundle's (seed 000 Table 6.1), not those of "
                f"{n_links} link{'s' if n_links != 1 else ''}: give them, or name a scenario "
                f"(farlink predict calldrop iridium-{n_links})"
            )
    size_bytes = _pick("--size", size, units.parse_size_bytes, path and path.size_bytes)
    mss_bytes = _pick("--mss", mss, units.parse_size_bytes, path and path.mss_bytes, d["mss"])
    inputs = {
        "size_bytes": size_bytes,
        "n_links": n_links,
        "rtt_s": _pick("--rtt", rtt, units.parse_duration_s, path and path.rtt_s, d["rtt"]),
        "p": _loss_of(loss, path, d["loss"]),
        "beta_per_s": _pick(
            "--drop-rate",
            drop_rate,
            units.parse_event_rate_per_s,
            path and path.beta_per_s,
            d["drop_rate"],
        ),
        "t0_s": _pick("--t0", t0, units.parse_duration_s, path and path.t0_s, d["t0"]),
        "mss_bytes": mss_bytes,
        "wmax_bytes": _window_of(wmax if path is not None else wmax or d["wmax"], path),
        "b": _pick("--b", b, units.parse_count, path and path.b, d["b"]),
    }
    capacity = _capacity(path, n_links, link_rate or d["link_rate"], mss_bytes)
    result = _evaluate("calldrop", lambda: calldrop_prediction(**inputs))
    payload = {
        "model": "calldrop",
        "inputs": inputs,
        "transfer_time_s": result.transfer_time_s,
        "transfer_time_min": result.transfer_time_s / 60,
        "throughput_pkts_per_s": result.throughput_pkts_per_s,
        "throughput_bps": result.throughput_bps,
        "no_timeout_throughput_pkts_per_s": result.no_timeout_throughput_pkts_per_s,
        "bundle_drop_rate_per_s": result.bundle_drop_rate_per_s,
        "mean_timeout_sequence_s": result.mean_timeout_sequence_s,
        "segments": result.segments,
        "window_limited": result.window_limited,
        "timeout_dominated": result.timeout_dominated,
    }
    bounded = _bounded_payload(payload, mss_bytes, capacity)
    payload["model_transfer_time_s"] = float(result.transfer_time_s)
    payload["transfer_time_s"] = size_bytes * 8 / bounded.throughput_bps
    payload["transfer_time_min"] = payload["transfer_time_s"] / 60
    _emit_bounded(as_json, "calldrop (seed 000 eq. 36)", payload, bounded, out)


def _window(text: str) -> float:
    if text.strip().lower() in ("none", "inf", "unlimited"):
        return float("inf")
    return read("--wmax", units.parse_size_bytes, text)


def _window_of(text: str | None, path: PathInputs | None) -> float:
    """--wmax given, else the scenario's receive buffer, else no limit."""
    if text is not None:
        return _window(text)
    return path.wmax_bytes if path is not None else float("inf")


@predict_app.command("pftk")
def predict_pftk(
    scenario: ScenarioArg = None,
    rtt: Annotated[str | None, typer.Option(help=f"Mean RTT {DurationOpt}")] = None,
    loss: Annotated[
        str | None, typer.Option(help=f"Loss rate p ({units.PROBABILITY_FORMS}).")
    ] = None,
    t0: Annotated[
        str | None, typer.Option(help=f"Initial timeout T0 {DurationOpt} [default: 1s]")
    ] = None,
    mss: Annotated[
        str | None, typer.Option(help=f"Segment payload. {SizeOpt} [default: 1448]")
    ] = None,
    wmax: Annotated[
        str | None,
        typer.Option(help=f"Receiver window limit, or 'none'. {SizeOpt} [default: none]"),
    ] = None,
    b: Annotated[
        str | None, typer.Option("--b", help="Segments acknowledged per ACK. [default: 2]")
    ] = None,
    links: Annotated[str | None, typer.Option(help="Parallel links of --link-rate.")] = None,
    link_rate: LinkRateOpt = None,
    as_json: JsonFlag = False,
    out: OutDirOpt = None,
) -> None:
    """Padhye et al.: full model, approximation (eq. 14) and no-timeout throughput (eq. 29)."""
    from farlink.models import (
        mathis_throughput,
        pftk_approx_throughput,
        pftk_full_throughput,
        pftk_no_timeout_throughput,
    )

    path = _scenario_inputs(scenario)
    rtt_s = _pick("--rtt", rtt, units.parse_duration_s, path and path.rtt_s)
    p = _loss_of(loss, path)
    t0_s = _pick("--t0", t0, units.parse_duration_s, path and path.t0_s, "1s")
    mss_bytes = _pick("--mss", mss, units.parse_size_bytes, path and path.mss_bytes, "1448")
    wmax_bytes = _window_of(wmax, path)
    b_ = _pick("--b", b, units.parse_count, path and path.b, "2")
    n_links = None if links is None else read("--links", units.parse_count, links)
    capacity = _capacity(path, n_links, link_rate, mss_bytes)
    wmax_pkts = wmax_bytes / mss_bytes
    full = _evaluate("pftk", lambda: pftk_full_throughput(p, rtt_s, t0_s, b_, wmax_pkts))
    payload = {
        "model": "pftk",
        "inputs": {"rtt_s": rtt_s, "p": p, "t0_s": t0_s, "mss_bytes": mss_bytes, "b": b_},
        "throughput_pkts_per_s": full,
        "throughput_bps": full * mss_bytes * 8,
        "approx_throughput_pkts_per_s": pftk_approx_throughput(p, rtt_s, t0_s, b_, wmax_pkts),
        "no_timeout_throughput_pkts_per_s": pftk_no_timeout_throughput(p, rtt_s, b_, wmax_pkts),
        "mathis_throughput_pkts_per_s": mathis_throughput(p, rtt_s, b_),
        "wmax_pkts": wmax_pkts,
    }
    bounded = _bounded_payload(payload, mss_bytes, capacity)
    _emit_bounded(as_json, "pftk (Padhye et al. 2000)", payload, bounded, out)


@predict_app.command("mathis")
def predict_mathis(
    scenario: ScenarioArg = None,
    rtt: Annotated[str | None, typer.Option(help=f"Mean RTT {DurationOpt}")] = None,
    loss: Annotated[
        str | None, typer.Option(help=f"Loss rate p ({units.PROBABILITY_FORMS}).")
    ] = None,
    mss: Annotated[
        str | None, typer.Option(help=f"Segment payload. {SizeOpt} [default: 1448]")
    ] = None,
    b: Annotated[
        str | None, typer.Option("--b", help="Segments acknowledged per ACK. [default: 2]")
    ] = None,
    links: Annotated[str | None, typer.Option(help="Parallel links of --link-rate.")] = None,
    link_rate: LinkRateOpt = None,
    as_json: JsonFlag = False,
    out: OutDirOpt = None,
) -> None:
    """Mathis et al.: B = sqrt(3/(2bp)) / RTT, no timeouts, no window limit."""
    from farlink.models import mathis_throughput

    path = _scenario_inputs(scenario)
    rtt_s = _pick("--rtt", rtt, units.parse_duration_s, path and path.rtt_s)
    p = _loss_of(loss, path)
    mss_bytes = _pick("--mss", mss, units.parse_size_bytes, path and path.mss_bytes, "1448")
    b_ = _pick("--b", b, units.parse_count, path and path.b, "2")
    n_links = None if links is None else read("--links", units.parse_count, links)
    capacity = _capacity(path, n_links, link_rate, mss_bytes)
    rate = mathis_throughput(p, rtt_s, b_)
    payload = {
        "model": "mathis",
        "inputs": {"rtt_s": rtt_s, "p": p, "mss_bytes": mss_bytes, "b": b_},
        "throughput_pkts_per_s": rate,
        "throughput_bps": rate * mss_bytes * 8,
    }
    bounded = _bounded_payload(payload, mss_bytes, capacity)
    _emit_bounded(as_json, "mathis (Mathis et al. 1997)", payload, bounded, out)


@predict_app.command("short")
def predict_short(
    scenario: ScenarioArg = None,
    size: Annotated[
        str | None, typer.Option(help=f"Transfer size (the scenario's bulk size). {SizeOpt}")
    ] = None,
    rtt: Annotated[str | None, typer.Option(help=f"Mean RTT {DurationOpt}")] = None,
    loss: Annotated[
        str | None, typer.Option(help=f"Loss rate p, below 0.5 ({units.PROBABILITY_FORMS}).")
    ] = None,
    t0: Annotated[
        str | None,
        typer.Option(help=f"Initial retransmission timeout T0 {DurationOpt} [default: 1s]"),
    ] = None,
    mss: Annotated[
        str | None, typer.Option(help=f"Segment payload. {SizeOpt} [default: 1448]")
    ] = None,
    wmax: Annotated[
        str | None,
        typer.Option(help=f"Receiver window limit, or 'none'. {SizeOpt} [default: none]"),
    ] = None,
    b: Annotated[
        str | None, typer.Option("--b", help="Segments acknowledged per ACK. [default: 2]")
    ] = None,
    initial_window: Annotated[
        str, typer.Option(help="Initial window w1 in segments (Cardwell).")
    ] = "1",
    syn_timeout: Annotated[str, typer.Option(help=f"Initial SYN timeout T_s {DurationOpt}")] = "3s",
    delack: Annotated[
        str, typer.Option(help=f"Mean delayed-ACK wait for the first segment {DurationOpt}")
    ] = "100ms",
    links: Annotated[str | None, typer.Option(help="Parallel links of --link-rate.")] = None,
    link_rate: LinkRateOpt = None,
    as_json: JsonFlag = False,
    out: OutDirOpt = None,
) -> None:
    """Latency of a short transfer: Cardwell et al. and Sikdar et al. (seed 000 eqs. 15-23).

    Both include connection set-up with SYN losses, slow start with delayed ACKs and the
    correlated-loss assumption of the text; see docs/models.md for the corrections to the seed.
    The latency is at least the size over the path's capacity.
    """
    from farlink.models import cardwell_components, sikdar_components

    path = _scenario_inputs(scenario)
    mss_bytes = _pick("--mss", mss, units.parse_size_bytes, path and path.mss_bytes, "1448")
    size_bytes = _pick("--size", size, units.parse_size_bytes, path and path.size_bytes)
    params = {
        "size_pkts": float(np.ceil(size_bytes / mss_bytes)),
        "p": _loss_of(loss, path),
        "rtt_s": _pick("--rtt", rtt, units.parse_duration_s, path and path.rtt_s),
        "t0_s": _pick("--t0", t0, units.parse_duration_s, path and path.t0_s, "1s"),
        "b": _pick("--b", b, units.parse_count, path and path.b, "2"),
        "wmax_pkts": _window_of(wmax, path) / mss_bytes,
        "ts_s": read("--syn-timeout", units.parse_duration_s, syn_timeout),
        "delack_s": read("--delack", lambda t: units.parse_duration_s(t, allow_zero=True), delack),
    }
    w1 = read("--initial-window", units.parse_count, initial_window)
    n_links = None if links is None else read("--links", units.parse_count, links)
    capacity = _capacity(path, n_links, link_rate, mss_bytes)
    cardwell = _evaluate("short", lambda: cardwell_components(**params, w1_pkts=w1))
    sikdar = _evaluate("short", lambda: sikdar_components(**params))
    payload = {
        "model": "short",
        "inputs": {**params, "size_bytes": size_bytes, "mss_bytes": mss_bytes, "w1_pkts": w1},
        "transfer_time_s": cardwell.total_s,
        "cardwell_latency_s": cardwell.total_s,
        "cardwell_handshake_s": cardwell.handshake_s,
        "cardwell_slow_start_s": cardwell.slow_start_s,
        "cardwell_loss_recovery_s": cardwell.loss_recovery_s,
        "cardwell_congestion_avoidance_s": cardwell.congestion_avoidance_s,
        "cardwell_delayed_ack_s": cardwell.delayed_ack_s,
        "sikdar_latency_s": sikdar.total_s,
        "sikdar_no_loss_s": sikdar.no_loss_s,
        "sikdar_single_loss_s": sikdar.single_loss_s,
        "sikdar_multi_loss_s": sikdar.multi_loss_s,
        "sikdar_single_loss_timeout_share": sikdar.single_loss_timeout_share,
        "segments": params["size_pkts"],
        "throughput_bps": size_bytes * 8 / float(cardwell.total_s),
    }
    bounded = _bounded_payload(payload, mss_bytes, capacity)
    payload["model_transfer_time_s"] = float(cardwell.total_s)
    payload["transfer_time_s"] = size_bytes * 8 / bounded.throughput_bps
    _emit_bounded(
        as_json, "short (Cardwell et al. 2000; Sikdar et al. 2003)", payload, bounded, out
    )


@predict_app.command("stpd")
def predict_stpd(
    m: Annotated[
        int, typer.Option("--m", help="Round trip in packet times (seed 003 section 4.3).")
    ] = 3,
    kp: Annotated[float, typer.Option("--kp", help="Proportional gain k_p.")] = 0.368,
    kd: Annotated[float, typer.Option("--kd", help="Derivative gain k_d.")] = 0.033,
    loss: Annotated[
        str, typer.Option(help=f"Packet error probability ({units.PROBABILITY_FORMS}).")
    ] = "0.01",
    reading: Annotated[
        str,
        typer.Option(help="Reading of eqs. 4.1-4.11: published, printed or window (docs/stpd.md)."),
    ] = "published",
    as_json: JsonFlag = False,
    out: OutDirOpt = None,
) -> None:
    """The ST-PD transient model (seed 003 section 4.3): poles and normalised throughput.

    Defaults are the operating point of section 4.3.3 (m = 3, k_p = 0.368, k_d = 0.033), whose
    published poles are -0.5023, 0.8031 +/- 0.4155i and 0.8961.
    """
    from farlink.models import stpd

    if reading not in stpd.READINGS:
        raise CliError(f"--reading: {reading!r} is not one of {', '.join(stpd.READINGS)}")
    if m < 1:
        raise CliError("--m: expected a whole number of packet times >= 1")
    p = read("--loss", units.parse_probability, loss)
    roots = _evaluate("stpd", lambda: np.asarray(stpd.poles(m, kp, kd, reading=reading)))
    payload = {
        "model": "stpd",
        "inputs": {"m": m, "kp": kp, "kd": kd, "p": p, "reading": reading},
        "poles": [[float(z.real), float(z.imag)] for z in roots],
        "spectral_radius": float(np.max(np.abs(roots))),
        "stable": bool(stpd.is_stable(m, kp, kd, reading=reading)),
        "normalized_throughput": stpd.normalised_throughput(p, m, kp, kd, reading=reading),
    }
    doc = _predicted(payload, out)
    if as_json:
        print_json(doc)
        return
    rows = {f"pole {i + 1}": f"{re:+.4f} {im:+.4f}i" for i, (re, im) in enumerate(payload["poles"])}
    print_quantities(
        "stpd transient model (seed 003 section 4.3)",
        {**rows, **{k: v for k, v in payload.items() if k not in ("model", "inputs", "poles")}},
    )
    if out is not None:
        typer.echo(f"wrote {out / 'summary.json'}")


@predict_app.command("iridium-rtt")
def predict_iridium_rtt(
    packet: Annotated[str, typer.Option(help=f"Packet size. {SizeOpt}")] = "1500B",
    rate: Annotated[str, typer.Option(help=f"Member rate ({units.BITRATE_FORMS}).")] = "2400bps",
    queue: Annotated[str, typer.Option(help="Transmit queue per member Q_P, packets.")] = "3",
    arq_time: Annotated[
        str | None, typer.Option(help=f"Mean ARQ time per packet {DurationOpt}")
    ] = None,
    frame_size: Annotated[str | None, typer.Option(help=f"Go-back-N ARQ frame. {SizeOpt}")] = None,
    frame_error_rate: Annotated[
        str | None, typer.Option(help="Go-back-N frame error rate in [0, 1).")
    ] = None,
    prop: Annotated[str, typer.Option(help=f"One-way propagation {DurationOpt}")] = "0.5s",
    as_json: JsonFlag = False,
    out: OutDirOpt = None,
) -> None:
    """Loaded RTT of an Iridium bundle, RTT = Q_P T_MP (seed 000 section 4.1.6).

    Give the ARQ's share either as --arq-time or as a go-back-N channel with --frame-size and
    --frame-error-rate; with neither, the channel is error-free (T_MP = clocking time).
    """
    from farlink.models import clocking_time_s, go_back_n_service_time_s, loaded_rtt_s

    packet_bytes = read("--packet", units.parse_size_bytes, packet)
    rate_bps = read("--rate", units.parse_bitrate_bps, rate)
    queue_pkts = read("--queue", units.parse_count, queue)
    prop_s = read("--prop", lambda t: units.parse_duration_s(t, allow_zero=True), prop)
    clocking = clocking_time_s(packet_bytes, rate_bps)
    if arq_time is not None and (frame_size or frame_error_rate):
        raise CliError("--arq-time: give either --arq-time or --frame-size/--frame-error-rate")
    if arq_time is not None:
        service = clocking + read("--arq-time", units.parse_duration_s, arq_time)
    elif frame_size is not None or frame_error_rate is not None:
        if frame_size is None or frame_error_rate is None:
            raise CliError("--frame-size: go-back-N needs both --frame-size and --frame-error-rate")
        frame_bytes = read("--frame-size", units.parse_size_bytes, frame_size)
        fer = read("--frame-error-rate", _unit_interval, frame_error_rate)
        service = go_back_n_service_time_s(packet_bytes, rate_bps, frame_bytes, fer, prop_s)
    else:
        service = clocking
    payload = {
        "model": "iridium-rtt",
        "inputs": {"packet_bytes": packet_bytes, "rate_bps": rate_bps, "queue_pkts": queue_pkts},
        "rtt_s": loaded_rtt_s(service, queue_pkts),
        "service_time_s": service,
        "clocking_time_s": clocking,
    }
    _emit_prediction(as_json, "iridium-rtt (seed 000 section 4.1.6)", payload, out)


def _unit_interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise units.UnitError(f"cannot read {text!r}: expected a number in [0, 1)") from None
    if not 0 <= value < 1:
        raise units.UnitError(f"{text!r} is outside [0, 1)")
    return value


@predict_app.command("drop-loss")
def predict_drop_loss(
    detect: Annotated[str, typer.Option(help=f"Time to notice a drop T_L {DurationOpt}")] = "30s",
    rate: Annotated[str, typer.Option(help=f"Member rate ({units.BITRATE_FORMS}).")] = "2400bps",
    modem_buffer: Annotated[str, typer.Option(help=f"Modem buffer B_M. {SizeOpt}")] = "4.5KB",
    serial_buffer: Annotated[
        str, typer.Option(help=f"Serial card buffer B_S. {SizeOpt}")
    ] = "1.5KB",
    segment: Annotated[str, typer.Option(help=f"Segment size P. {SizeOpt}")] = "1.5KB",
    wmax: Annotated[str, typer.Option(help=f"TCP window limit. {SizeOpt}")] = "47.9KB",
    as_json: JsonFlag = False,
    out: OutDirOpt = None,
) -> None:
    """Packets lost by one call drop, (T_L R + 2 B_M + B_S) / P (seed 000 section 5.2)."""
    from farlink.models import packets_lost_per_call_drop

    inputs = {
        "detect_s": read("--detect", lambda t: units.parse_duration_s(t, allow_zero=True), detect),
        "rate_bps": read("--rate", units.parse_bitrate_bps, rate),
        "modem_buffer_bytes": read(
            "--modem-buffer", lambda t: units.parse_size_bytes(t, allow_zero=True), modem_buffer
        ),
        "serial_buffer_bytes": read(
            "--serial-buffer", lambda t: units.parse_size_bytes(t, allow_zero=True), serial_buffer
        ),
        "segment_bytes": read("--segment", units.parse_size_bytes, segment),
    }
    segment_bytes = inputs["segment_bytes"]
    lost = _evaluate("drop-loss", lambda: packets_lost_per_call_drop(*inputs.values()))
    wmax_bytes = read("--wmax", units.parse_size_bytes, wmax)
    payload = {
        "model": "drop-loss",
        "inputs": {**inputs, "wmax_bytes": wmax_bytes},
        "packets_lost": lost,
        "bytes_lost": lost * segment_bytes,
        # RFC 6675 recovery cannot repair the loss of half a window or more (seed 000 section 5.2).
        "sack_times_out": lost * segment_bytes > wmax_bytes / 2,
    }
    _emit_prediction(as_json, "drop-loss (seed 000 section 5.2)", payload, out)


@app.command("reproduce")
def reproduce(
    id: Annotated[str | None, typer.Argument(help="Reproduction id; see --list.")] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the reproductions.")] = False,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Folder for figures and JSON (default farlink-out; its reproduce/ subfolder "
            "for one id, the folder itself with --all)."
        ),
    ] = None,
    all_: Annotated[
        bool, typer.Option("--all", help="Run every fast reproduction and write --doc.")
    ] = False,
    include_slow: Annotated[
        bool, typer.Option("--include-slow", help="With --all: the slow simulations too.")
    ] = False,
    doc: Annotated[
        Path | None,
        typer.Option(help="With --all: Markdown to write (OUT/../validation-reproductions.md)."),
    ] = None,
    force: ForceFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Print a published table or figure of the seeds beside farlink's."""
    from farlink import reproduce as registry
    from farlink.outputs import OutputFolder
    from farlink.reproduce.terminal import print_verdict

    if all_ or include_slow or doc is not None:
        if id is not None or not all_:
            raise CliError("--all: give either an ID or --all (--include-slow, --doc need --all)")
        _reproduce_all(out or DEFAULT_OUT / "reproduce", include_slow, doc, as_json, force)
        return
    out = out or DEFAULT_OUT
    if list_ or id is None:
        for entry in registry.entries():
            typer.echo(f"{entry.id:<24} {entry.engine:<6} {entry.title} [{entry.source}]")
        return
    known = [entry.id for entry in registry.entries()]
    if id not in known:
        raise CliError(f"ID: unknown reproduction {id!r}; known: {', '.join(known)}")
    folder = OutputFolder(out / "reproduce", force=force)
    folder.claim_folder()
    before = folder.listing()
    try:
        rep = registry.run(id, folder.path)
    finally:
        folder.record_written(before)
    if as_json:
        print_json(rep.to_dict())
    else:
        print_verdict(rep, folder.path / f"{id}.json")


def _reproduce_all(
    out: Path, include_slow: bool, doc: Path | None, as_json: bool, force: bool
) -> None:
    from farlink.outputs import OutputError, OutputFolder
    from farlink.reproduce.doc import run_all, write_markdown

    def done(o) -> None:
        if not as_json:
            rows = "failed: " + str(o.error) if o.reproduction is None else len(o.reproduction.rows)
            typer.echo(f"{o.entry.id:<24} {o.entry.engine:<6} {o.seconds:6.1f} s  rows {rows}")

    doc = doc if doc is not None else out.parent / "validation-reproductions.md"
    if doc.is_dir():
        raise OutputError(f"--doc: {doc} is a folder; name the Markdown file to write")
    folder = OutputFolder(out, force=force)
    folder.claim_folder()
    doc_folder = OutputFolder(doc.parent, "--doc", force=force)
    (doc,) = doc_folder.claim(doc.name)
    before = folder.listing()
    try:
        outcomes = run_all(out, include_slow=include_slow, on_done=done)
    finally:
        folder.record_written(before)
    command = f"farlink reproduce --all{' --include-slow' * include_slow} --out {out} --doc {doc}"
    write_markdown(outcomes, doc, command)
    doc_folder.record([doc])
    if as_json:
        found = [o.reproduction.to_dict() if o.reproduction else {"id": o.entry.id,
                 "error": o.error} for o in outcomes]  # fmt: skip
        print_json({"doc": str(doc), "reproductions": found})
    else:
        typer.echo(f"wrote {doc}")
    if any(o.reproduction is None for o in outcomes):
        raise typer.Exit(1)


@app.command("fit-drops")
def fit_drops(
    log: Annotated[Path, typer.Argument(help="Call-drop log: CSV (modem,time) or KUMICS XML.")],
    confidence: Annotated[float, typer.Option(help="Confidence level of the interval.")] = 0.95,
    bins: Annotated[int, typer.Option(help="Chi-square bins (seed 000 uses 15).")] = 15,
    alpha: Annotated[float, typer.Option(help="Significance level of the test.")] = 0.05,
    as_json: JsonFlag = False,
) -> None:
    """Fit the per-member call-drop rate beta and test the exponential (seed 000 section 5.3)."""
    from farlink.dropfit import fit_drop_log
    from farlink.droplog import DropLogError, read_drop_log

    try:
        drops = read_drop_log(log)
    except DropLogError as err:
        raise CliError(f"LOG: {err}") from None
    fit = _evaluate(
        "fit-drops",
        lambda: fit_drop_log(drops, confidence=confidence, bins=bins, alpha=alpha),
    )
    payload = {"log": str(log), "modems": list(drops.modems), **fit.to_dict()}
    if fit.beta_per_s > 0:
        payload["beta_one_per_min"] = 1 / (fit.beta_per_s * 60)
    _emit(as_json, f"fit-drops {log}", payload)


@app.command("simulate")
def simulate_command(
    scenario: Annotated[str, typer.Argument(help="A scenario TOML file or a preset name.")],
    tcp: Annotated[
        str | None,
        typer.Option(
            help="Loss recovery (tahoe, reno, newreno, sack) or a controller "
            "(vegas, hybla, westwood, cubic, bic, bbr, stpd: these run over SACK recovery).",
        ),
    ] = None,
    loss: Annotated[
        str | None,
        typer.Option(
            help="Packet error rate of the scenario's lossy link, data direction, in [0, 1)."
        ),
    ] = None,
    duration: Annotated[str | None, typer.Option(help=f"Simulated time {DurationOpt}")] = None,
    size: Annotated[
        str | None, typer.Option(help=f"Make every flow a bulk transfer of this size. {SizeOpt}")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Master seed of the run.")] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Set a scenario field: path=value, e.g. links[1].queue_pkts=4."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Folder for summary, traces and captures.")
    ] = None,
    pcap: Annotated[
        bool,
        typer.Option("--pcap", help="Write captures of the links the scenario taps (all if none)."),
    ] = False,
    budget_events: BudgetEventsOpt = None,
    budget_memory: BudgetMemoryOpt = None,
    budget_disk: BudgetDiskOpt = None,
    estimate_only: Annotated[
        bool,
        typer.Option("--estimate", help="Print what the run would cost and the budget; no run."),
    ] = False,
    interval: Annotated[
        str | None,
        typer.Option(
            help="Also print, per flow, the goodput and the congestion window of every interval "
            f"of this length (switches the goodput and cwnd traces on). {DurationOpt}"
        ),
    ] = None,
    force: ForceFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Simulate a scenario on the packet-level engine (Rust core).

    Writes into --out, by default farlink-out/sim/NAME (NAME: the scenario's name made safe for
    a file system). Prints the aggregate figures, then one line per flow: goodput,
    retransmissions, timeouts and what limited its sender most of the time (application,
    receive window, send buffer, congestion window or link) with its share of the time.

    The run is held to a budget (docs/scenarios.md, "Run budget"): one estimated over it is
    refused, one that outgrows it stops with what it has. Traces stream into the folder as the
    run records them, so memory stays bounded and the budget counts them as disk. On a terminal
    a progress line shows on stderr; Ctrl-C stops the run and keeps its partial result.
    """
    from farlink import _core
    from farlink.budget import estimate_payload, refusal_options
    from farlink.outputs import OutputFolder, safe_name
    from farlink.scenario import (
        ScenarioError,
        apply_overrides,
        describe_error,
        load_scenario,
        resolve,
    )
    from farlink.sim import ProgressLine, estimate, interval_rows, simulate, write_run
    from farlink.traces import switched_on

    sets = list(set_ or ())
    if interval is not None:
        _checked("--interval", units.parse_duration_s, interval)
        sets += [
            "trace.goodput=true",
            "trace.cwnd=true",
            f'trace.goodput_interval="{interval}"',
        ]

    line = ProgressLine(sys.stderr) if sys.stderr.isatty() else None
    try:
        doc = load_scenario(scenario)
        if pcap and not doc.get("pcap"):
            doc["pcap"] = [link["name"] for link in resolve(doc)["links"]]
        overrides = {
            "tcp": tcp,
            "loss": None if loss is None else read("--loss", _loss_rate, loss),
            "duration": None
            if duration is None
            else _checked("--duration", units.parse_duration_s, duration),
            "size": None if size is None else _checked("--size", units.parse_size_bytes, size),
            "seed": seed,
            "sets": sets,
        }
        budget = _budget(budget_events, budget_memory)
        budget["budget_disk_bytes"] = (
            None
            if budget_disk is None
            else int(read("--budget-disk", units.parse_size_bytes, budget_disk))
        )
        if estimate_only:
            cost = estimate(doc, **overrides, streamed=True, stream_pcap=pcap)
            _emit(as_json, "simulate --estimate", estimate_payload(cost, *budget.values()))
            return
        doc = apply_overrides(doc, **overrides)
        name = str(doc.get("name") or Path(scenario).stem)
        target = out if out is not None else DEFAULT_OUT / "sim" / safe_name(name)
        streamed = _trace_folder(target, force, [f"{t}.parquet" for t in switched_on(doc)])
        if target.exists():
            streamed()  # a file farlink may not replace is refused before the run
        result = simulate(doc, **budget, progress=line, trace_dir=streamed, stream_pcap=pcap)
    except ScenarioError as err:
        raise CliError(describe_error(scenario, err)) from None
    except _core.BudgetError as err:
        raise CliError(f"{scenario}: {err} ({refusal_options(err)})") from None
    except _core.ConservationError as err:
        raise CliError(f"conservation check failed (please report this scenario): {err}") from None
    finally:
        if line is not None:
            line.close()
    folder = OutputFolder(target, force=force)
    written = write_run(result, folder, pcap=pcap)
    partial = result.summary.get("partial")
    intervals = interval_rows(result) if interval is not None else None
    if as_json:
        # The result document itself: the same object summary.json holds (docs/results.md).
        extra = {} if intervals is None else {"intervals": intervals}
        print_json({**result.summary, **extra})
    else:
        _print_simulation(name, result, folder.path, partial, intervals, written)
    if partial is not None:
        _stopped_early(partial)


def _print_simulation(
    name: str,
    result: Any,
    folder: Path,
    partial: str | None,
    intervals: list[dict[str, Any]] | None,
    written: list[Path],
) -> None:
    """The text output of ``simulate``: the headline figures, one row per flow, the intervals,
    the files written."""
    from farlink.report import print_rows
    from farlink.sim import flow_rows, headline

    payload = {**headline(result), "scenario": name, "out": str(folder)}
    if partial is not None:
        payload["partial"] = partial
    print_quantities(f"simulate {name} (seed {result.summary['seed']})", payload)
    print_rows(
        ["flow", "goodput_bps", "retransmits", "timeouts", "limited by", "share"],
        [
            (
                r["flow"],
                r["goodput_bps"],
                r["retransmissions"],
                r["timeouts"],
                r["limited_by"] or "-",
                "-" if r["limited_share"] is None else f"{r['limited_share']:.0%}",
            )
            for r in flow_rows(result)
        ],
    )
    if intervals is not None:
        print_rows(
            ["flow", "start_s", "end_s", "goodput_bps", "cwnd_bytes"],
            [tuple(r.values()) for r in intervals],
        )
    for path in written:
        typer.echo(f"wrote {path}")


def _trace_folder(target: Path, force: bool, names: list[str]) -> Callable[..., Path]:
    """The folder ``simulate`` streams its traces (and captures) into, made on the first call
    only (a run refused before it starts creates nothing), with the files the run writes there
    claimed: ``names``, the traces, and the names each call gives (captures), recorded in its
    manifest as they are about to be written, and ``summary.json``, written once it is over."""
    from farlink.outputs import OutputFolder

    made: list[OutputFolder] = []

    def folder(*more: str) -> Path:
        if not made:
            f = OutputFolder(target, force=force)
            f.claim("summary.json")
            f.record(f.claim(*names))
            made.append(f)
        if more:
            made[0].record(made[0].claim(*more))
        return made[0].path

    return folder


def _budget(events: str | None, memory: str | None) -> dict[str, int | None]:
    """The run budget options as ``simulate`` takes them; None keeps the default."""
    from farlink.budget import parse_event_count

    return {
        "budget_events": None
        if events is None
        else read("--budget-events", parse_event_count, events),
        "budget_memory_bytes": None
        if memory is None
        else int(read("--budget-memory", units.parse_size_bytes, memory)),
    }


def _stopped_early(partial: str) -> None:
    """A run stopped before its end: exit 130 for an interrupt, 2 for its budget."""
    from farlink.budget import EXIT_INTERRUPTED, stop_line

    line, interrupted = stop_line(partial)
    print(line, file=sys.stderr)
    raise typer.Exit(EXIT_INTERRUPTED if interrupted else EXIT_BAD_INPUT)


def _checked(option: str, parser: Callable[[str], float], text: str) -> str:
    """Check a quantity here for a one-line error naming the option; the core reads the text."""
    read(option, parser, text)
    return text


def _loss_rate(text: str) -> float:
    try:
        value = float(text.removesuffix("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise units.UnitError(
            f"cannot read {text!r}: expected a packet error rate in [0, 1)"
        ) from None
    if not 0 <= value < 1:
        raise units.UnitError(f"{text!r} is outside [0, 1): expected a packet error rate in [0, 1)")
    return value


@app.command("presets")
def presets() -> None:
    """List the scenario presets shipped with farlink."""
    from farlink.scenario import list_presets

    for name, description in list_presets():
        typer.echo(f"{name:<24} {description}")


@app.command("report")
def report_command(
    directory: Annotated[Path, typer.Argument(help="The sweep's --out folder.")],
    out: Annotated[
        Path | None, typer.Option(help="The HTML file to write (default DIR/report.html).")
    ] = None,
    trace: Annotated[
        list[str] | None,
        typer.Option(
            "--trace",
            help="Re-run this run (run_key or point_id, or a prefix) with its seed and plot its "
            "cwnd, RTT, RTO and queues. Repeat for more.",
        ),
    ] = None,
    force: ForceFlag = False,
) -> None:
    """Write a self-contained HTML report of a sweep: figures with confidence bands, tables."""
    from farlink import sweep as sw
    from farlink.outputs import OutputError, OutputFolder
    from farlink.report_html import ReportError, write_report

    target = out if out is not None else directory / "report.html"
    if target.is_dir():
        raise OutputError(f"--out: {target} is a folder; name the HTML file to write")
    folder = OutputFolder(target.parent, force=force)
    (target,) = folder.claim(target.name)
    try:
        path = write_report(directory, target, traces=trace or ())
        folder.record([path])
    except sw.SweepError as err:
        raise CliError(f"DIR: {err}") from None
    except ReportError as err:
        raise CliError(f"--trace: {err}") from None
    typer.echo(f"wrote {path}")


@app.command("analyze")
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
    force: ForceFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Analyse the TCP connections of a capture: retransmissions, RTT, timeouts, goodput.

    With --sim, a simulation of the scenario is analysed the same way and drawn in the same
    figures, and its numbers are printed beside the capture's.
    """
    from farlink.capture import CaptureError, analyze_capture, plot_connections
    from farlink.outputs import OutputFolder, safe_name

    min_rto_s = None if min_rto is None else read("--min-rto", units.parse_duration_s, min_rto)
    rate_bps = (
        None if link_rate is None else read("--link-rate", units.parse_bitrate_bps, link_rate)
    )
    if sim is None and (set_ or seed is not None):
        raise CliError("--set: --set and --seed need --sim")
    try:
        cap, connections = analyze_capture(capture, min_rto_s=min_rto_s)
    except CaptureError as err:
        raise CliError(f"CAPTURE: {err}") from None
    _warn_capture(cap.warnings)
    if not connections:
        skipped = ", ".join(f"{v} {k.replace('_', '-')}" for k, v in cap.skipped.items() if v)
        raise CliError(
            f"CAPTURE: {capture}: no TCP connection carrying data in {cap.records} packets"
            + (f" (skipped {skipped})" if skipped else "")
        )
    drops_s = None if drops is None else _log_drops_s(drops, cap.start_unix_s)
    simulated = None if sim is None else _simulate_beside(sim, set_ or (), seed, min_rto_s)
    stem = safe_name(capture.stem, "capture")
    folder = OutputFolder(out if out is not None else DEFAULT_OUT / "analyze" / stem, force=force)
    folder.claim_folder()
    drawn = connections + (simulated["connections"] if simulated else [])
    before = folder.listing()
    written = plot_connections(
        drawn,
        folder.path,
        stem=stem,
        drops_s=drops_s,
        sim_drops_s=simulated["drops_s"] if simulated else None,
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
    summaries = [c.summary(rate_bps) for c in connections]
    sim_payload = None
    if simulated:
        sim_payload = {
            "scenario": simulated["scenario"],
            "seed": simulated["seed"],
            "call_drop_times_s": simulated["drops_s"].tolist(),
            "connections": [c.summary(rate_bps) for c in simulated["connections"]],
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
    if sim_payload:
        _print_side_by_side(summaries + sim_payload["connections"], rate_bps)
    else:
        for s in summaries:
            print_quantities(
                f"connection {s['connection']}",
                {k: v for k, v in s.items() if k not in ("goodput_windows", "timeout_times_s")},
            )
    for path in written:
        typer.echo(f"wrote {path}")


def _warn_capture(warnings: list[str] | tuple[str, ...]) -> None:
    """What every command that reads a capture says about it: one line per warning."""
    for warning in warnings:
        print(f"farlink: warning: CAPTURE: {warning}", file=sys.stderr)


def _log_drops_s(drops: Path, capture_start_unix_s: float) -> np.ndarray:
    """The drop times of a call-drop log on the capture's clock."""
    from farlink.droplog import DropLogError, read_drop_log

    try:
        log = read_drop_log(drops)
    except DropLogError as err:
        raise CliError(f"--drops: {err}") from None
    times = np.sort(np.concatenate([np.asarray(t, float) for t in log.drop_times_s.values()]))
    # A log on the wall clock is placed on the capture's clock; a relative log is kept.
    return times - capture_start_unix_s if times.size and times[0] > 1e8 else times


def _simulate_beside(
    scenario: str, sets: list[str] | tuple[str, ...], seed: int | None, min_rto_s: float | None
) -> dict[str, Any]:
    """Run ``scenario`` with the traces the analysis needs; its connections and call drops."""
    from dataclasses import replace

    from farlink import _core
    from farlink.capture import analyze_result, call_drop_times_s
    from farlink.scenario import ScenarioError, apply_overrides, load_scenario
    from farlink.sim import simulate

    try:
        doc = apply_overrides(load_scenario(scenario), seed=seed, sets=sets)
        trace = doc.get("trace") if isinstance(doc.get("trace"), dict) else {}
        if not trace.get("all"):
            # Only what the figures need: the sender's segments, ACKs, RTT, member states.
            doc["trace"] = {**trace, "seq": True, "ack": True, "rtt": True, "member_state": True}
        result = simulate(doc)
    except ScenarioError as err:
        raise CliError(f"--sim: {err}") from None
    except _core.ConservationError as err:
        raise CliError(f"conservation check failed (please report this scenario): {err}") from None
    connections = [
        replace(c, name=f"sim {c.name}") for c in analyze_result(result, min_rto_s=min_rto_s)
    ]
    if not connections:
        raise CliError(f"--sim: {scenario}: the simulation sent no data")
    return {
        "scenario": str(result.scenario.get("name") or scenario),
        "seed": result.summary["seed"],
        "connections": connections,
        "drops_s": call_drop_times_s(result),
    }


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
    from farlink.report import print_rows

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


@app.command("fit")
def fit_command(
    capture: Annotated[Path, typer.Argument(help="A pcap or pcapng capture of a TCP transfer.")],
    drops: Annotated[
        Path | None, typer.Option(help="Call-drop log (CSV or KUMICS XML) to fit beta from.")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Scenario file to write (TOML; default farlink-out/fit-CAPTURE.toml)."),
    ] = None,
    force: ForceFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Estimate loss rate, RTT and beta from a capture and a drop log; write a scenario."""
    from farlink.capture import CaptureError
    from farlink.droplog import DropLogError
    from farlink.fitpath import checked_scenario_toml, fit_path
    from farlink.outputs import OutputError, OutputFolder, safe_name

    name = safe_name(f"fit-{capture.stem}")
    try:
        fitted = fit_path(capture, drops)
        _warn_capture(fitted.warnings)
        text = checked_scenario_toml(fitted, name=name)
    except (CaptureError, DropLogError, ValueError) as err:
        raise CliError(f"fit: {err}") from None
    path = out if out is not None else DEFAULT_OUT / f"{name}.toml"
    if path.is_dir():
        raise OutputError(f"--out: {path} is a folder; name the scenario file to write (.toml)")
    path = OutputFolder(path.parent, force=force).write_text(path.name, text)
    payload = {**fitted.to_dict(), "scenario": str(path)}
    if as_json:
        print_json({**payload, "loss_rate_meanings": LOSS_RATE_MEANINGS})
        return
    _emit(as_json, f"fit {capture}", payload)
    for name, meaning in LOSS_RATE_MEANINGS.items():
        typer.echo(f"{name}: {meaning}")


LOSS_RATE_MEANINGS = {
    "loss_rate": "copies lost after the tap (seen sent, never acknowledged: the needed "
    "retransmissions of data the tap saw) / data segments seen at the tap",
    "loss_rate_before_tap": "copies lost before the tap (needed retransmissions of data the tap "
    "never saw, timer firings it never saw) / data segments that reached that part; a lower "
    "bound",
    "scenario_loss_p": "both together, the loss of the fitted scenario's one link",
    "loss_rate_upper_bound": "every retransmission / first transmissions, spurious resends "
    "(go-back-N after a timeout, a resend crossing its ACK) included",
}


@app.command("demo")
def demo(
    out: Annotated[Path, typer.Option(help="Folder for the table and figure.")] = DEFAULT_OUT,
    force: ForceFlag = False,
) -> None:
    """The main job: the Greenland-Kansas 8-modem Iridium bundle of seed 000."""
    from farlink.demo import run_demo
    from farlink.outputs import OutputFolder

    folder = OutputFolder(out, force=force)
    folder.claim("demo-greenland-8.png", "demo-greenland-8.json")
    reproductions = OutputFolder(out / "reproduce", force=force)
    reproductions.claim_folder()
    before = folder.listing(), reproductions.listing()
    try:
        run_demo(folder.path)
    finally:
        folder.record_written(before[0])
        reproductions.record_written(before[1])


results_app = typer.Typer(
    no_args_is_help=True,
    help="Read a sweep's results: SQL over the dataset, means and intervals across seeds.",
)
app.add_typer(results_app, name="results")


@app.command("sweep")
def sweep_command(
    base: Annotated[
        str, typer.Argument(help="A sweep file (TOML), or a scenario file or preset to sweep.")
    ],
    grid: Annotated[
        list[str] | None,
        typer.Option(
            "--grid",
            help="An axis, AXIS=v1,v2,...: tcp, loss, duration, size or a --set path "
            "(links[1].queue_pkts=4,14,30). Repeat for more axes; points are their product.",
        ),
    ] = None,
    seeds: Annotated[
        int | None, typer.Option(help="Replications per point (default 1 or the file's).")
    ] = None,
    seed: Annotated[
        int | None, typer.Option(help="The sweep's seed, root of every run's seed (default 1).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Folder of the results (default farlink-out/sweep/NAME).")
    ] = None,
    tcp: Annotated[str | None, typer.Option(help="Every point: loss recovery or CC.")] = None,
    loss: Annotated[
        str | None, typer.Option(help="Every point: error rate of the lossy link, in [0, 1).")
    ] = None,
    duration: Annotated[
        str | None, typer.Option(help=f"Every point: simulated time {DurationOpt}")
    ] = None,
    size: Annotated[
        str | None, typer.Option(help=f"Every point: flows become bulk transfers. {SizeOpt}")
    ] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="Every point: path=value.")
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option("--metric", help="A metric to summarise, or a summary path kept as a column."),
    ] = None,
    workers: Annotated[
        int | None, typer.Option(help="Processes of the local pool (default: one per core).")
    ] = None,
    dask_local: Annotated[
        int | None,
        typer.Option("--dask-local", help="Run on a new Dask LocalCluster of N workers."),
    ] = None,
    dask: Annotated[
        str | None,
        typer.Option("--dask", help="Run on the Dask scheduler at ADDRESS (or scheduler file)."),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Run a changed sweep in an existing --out.")
    ] = False,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="Run again the runs recorded as failed.")
    ] = False,
    progress: Annotated[bool, typer.Option(help="Show a progress bar on stderr.")] = True,
    budget_events: BudgetEventsOpt = None,
    budget_memory: BudgetMemoryOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Run a scenario over a grid of points x seeds; one Parquet row per run (docs/sweeps.md).

    Runs already in --out are kept and not run again; exit status 1 if any run failed. Each
    run is held to the run budget (docs/scenarios.md); a run over it is a failed run.
    """
    from farlink import sweep as sw
    from farlink.outputs import safe_name
    from farlink.report import print_sweep_report
    from farlink.sweep_check import check_points

    fixed = {
        "tcp": tcp,
        "loss": None if loss is None else read("--loss", _loss_rate, loss),
        "duration": None
        if duration is None
        else _checked("--duration", units.parse_duration_s, duration),
        "size": None if size is None else _checked("--size", units.parse_size_bytes, size),
    }
    budget = tuple(_budget(budget_events, budget_memory).values())
    executor = _sweep_executor(workers, dask_local, dask)
    try:
        definition = sw.sweep_from_options(
            base, grid=grid or (), fixed=fixed, sets=set_ or (), seeds=seeds, seed=seed,
            metrics=metric or (),
        )  # fmt: skip
        folder = out if out is not None else DEFAULT_OUT / "sweep" / safe_name(definition.name)
        check_points(definition)  # every point through the core's validation, before any run
        report = sw.run_sweep(
            definition, folder, executor=executor, force=force, retry_failed=retry_failed,
            progress=progress, budget=budget,
        )  # fmt: skip
    except sw.SweepError as err:
        raise CliError(str(err)) from None
    except sw.SweepAborted as err:
        typer.echo(f"farlink: error: the sweep stopped: {err}; runs written are kept, "
                   "run it again to resume", err=True)  # fmt: skip
        raise typer.Exit(1) from None
    print_sweep_report(definition, report, as_json)
    if report.failed:
        raise typer.Exit(1)


def _sweep_executor(workers: int | None, dask_local: int | None, dask: str | None):
    from importlib.util import find_spec

    from farlink import sweep as sw

    if sum(x is not None for x in (workers, dask_local, dask)) > 1:
        raise CliError("--workers: give one of --workers, --dask-local and --dask")
    for option, count in (("--workers", workers), ("--dask-local", dask_local)):
        if count is not None and count < 1:
            raise CliError(f"{option}: expected at least 1, got {count}")
    if dask_local is None and dask is None:
        return sw.ProcessPool(workers)
    if find_spec("distributed") is None:
        option = "--dask" if dask else "--dask-local"
        raise CliError(f"{option}: needs Dask (pip install 'dask[distributed]')")
    return sw.DaskCluster(address=dask, local_workers=dask_local)


@results_app.command("query")
def results_query(
    directory: Annotated[Path, typer.Argument(help="The sweep's --out folder.")],
    sql: Annotated[str, typer.Argument(help="SQL over the view 'results' (DuckDB).")],
    as_json: JsonFlag = False,
) -> None:
    """Run SQL over a sweep's dataset, e.g. "SELECT loss, avg(timeouts) FROM results GROUP BY 1"."""
    from farlink import sweep as sw
    from farlink.report import print_rows

    try:
        columns, rows = sw.query(directory, sql)
    except sw.SweepError as err:
        raise CliError(f"DIR: {err}" if not str(err).startswith("SQL") else str(err)) from None
    print_rows(columns, rows, as_json)


@results_app.command("summary")
def results_summary(
    directory: Annotated[Path, typer.Argument(help="The sweep's --out folder.")],
    metric: Annotated[
        list[str] | None, typer.Option("--metric", help="A metric column (repeat for more).")
    ] = None,
    confidence: Annotated[float, typer.Option(help="Level of the Student-t interval.")] = 0.95,
    as_json: JsonFlag = False,
) -> None:
    """Mean and confidence interval across seeds, per point and metric; failed runs listed."""
    from farlink import sweep as sw
    from farlink.report import print_sweep_summary

    try:
        summary = sw.summarize(directory, metrics=metric or None, confidence=confidence)
    except sw.SweepError as err:
        raise CliError(str(err)) from None
    print_sweep_summary(summary, as_json)


import farlink.cli_scenario  # noqa: E402, F401  (registers `farlink scenario`)

EXIT_INTERNAL = 70  # sysexits' EX_SOFTWARE: a bug in farlink, not the user's input


def _one_line(text: object) -> str:
    """A message on one line: a library's multi-line text joined, never split over lines."""
    return " ".join(str(text).split())


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Every warning raised while a command runs, NumPy's included, as one ``farlink:`` line."""
    print(f"farlink: warning: {_one_line(message)}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the command; every failure ends in one ``farlink: error:`` line.

    Bad input (options, scenario and capture files, output paths the system refuses) exits with
    status 2; a failure only a bug in farlink can cause exits with 70 and asks for a report
    (``FARLINK_DEBUG=1`` prints its traceback instead).
    """
    from farlink.outputs import OutputError

    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = _show_warning
        try:
            return _main(argv)
        except (CliError, OutputError) as err:
            return _error(err)
        except OSError as err:
            # A path the system refused that no command turned into its own message.
            where = f"{err.filename}: " if err.filename else ""
            return _error(f"{where}{err.strerror or err}")
        except MemoryError:
            return _error("out of memory: the input asks for more than this machine can hold")
        except Exception as err:
            if os.environ.get("FARLINK_DEBUG"):
                raise
            print(
                f"farlink: error: internal error, please report it with the command line: "
                f"{type(err).__name__}: {_one_line(err)} (FARLINK_DEBUG=1 shows where)",
                file=sys.stderr,
            )
            return EXIT_INTERNAL


def _error(message: object) -> int:
    print(f"farlink: error: {_one_line(message)}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _main(argv: list[str] | None) -> int:
    command = typer.main.get_command(app)
    try:
        status = command.main(args=argv, prog_name="farlink", standalone_mode=False)
    except typer.TyperException as err:
        # Typer's usage errors (unknown option, missing argument, bad value) carry the context
        # of the command that failed; print them on one line like our own errors.
        ctx = getattr(err, "ctx", None)
        if type(err).__name__ == "NoArgsIsHelpError":
            return 0  # the help has been printed already
        where = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        return _error(f"{err.format_message()}{where}")
    except typer.Exit as err:
        return int(err.exit_code)
    except typer.Abort:
        print("farlink: aborted", file=sys.stderr)
        return 130
    # Without standalone mode, click returns the code of a `typer.Exit` raised by a command.
    return status if isinstance(status, int) else 0
