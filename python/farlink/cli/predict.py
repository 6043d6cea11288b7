"""``farlink predict``: the closed-form models (the model engine) from options or a scenario.

Inputs come from the scenario as the core resolves it (:func:`farlink.predict.path_inputs`);
options given replace them. Every throughput is bounded by the path's capacity
(:func:`farlink.predict.path_capacity`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from farlink import units
from farlink.cli.options import (
    CliError,
    DurationOpt,
    JsonFlag,
    OutDirOpt,
    SizeOpt,
    T,
    emit,
    evaluate,
    read,
    warn,
)
from farlink.predict import (
    CALLDROP_BUNDLE_ONLY,
    CALLDROP_DEFAULTS,
    Bounded,
    PathInputs,
    bound,
    bounded_transfer_time_s,
    path_capacity,
    path_inputs,
)
from farlink.reports.terminal import print_json, print_quantities

predict_app = typer.Typer(
    no_args_is_help=True,
    help="Closed-form predictions (the model engine). Throughputs in packets/s and bit/s.",
)


def _predicted(payload: dict[str, Any], out: Path | None) -> dict[str, Any]:
    """A prediction as a result document (docs/results.md), written to ``out`` if given."""
    from farlink.reports.terminal import plain
    from farlink.results.schema import model_document, write_document

    doc = plain(model_document(payload))  # NaN and inf as null, as printed
    if out is not None:
        write_document(doc, out)
    return doc


def _emit_prediction(as_json: bool, title: str, payload: dict[str, Any], out: Path | None) -> None:
    doc = _predicted(payload, out)
    if as_json:
        print_json(doc)
        return
    emit(False, title, payload)
    if out is not None:
        typer.echo(f"wrote {out / 'summary.json'}")


ScenarioArg = Annotated[
    str | None,
    typer.Argument(
        help="A scenario file or preset: its first flow and path give every input (the core's "
        "resolved scenario); options given replace them.",
        show_default=False,
    ),
]
MssOpt = Annotated[str | None, typer.Option(help=f"Segment payload. {SizeOpt} [default: 1448]")]
RttOpt = Annotated[str | None, typer.Option(help=f"Mean RTT {DurationOpt}")]
AckedPerAckOpt = Annotated[
    str | None, typer.Option("--b", help="Segments acknowledged per ACK. [default: 2]")
]
LossRateOpt = Annotated[str | None, typer.Option(help=f"Loss rate p ({units.PROBABILITY_FORMS}).")]
WindowOpt = Annotated[
    str | None,
    typer.Option(help=f"Receiver window limit, or 'none'. {SizeOpt} [default: none]"),
]
LinksOpt = Annotated[str | None, typer.Option(help="Parallel links of --link-rate.")]
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


def _capacity(
    path: PathInputs | None, links: float | None, link_rate: str | None, mss_bytes: float
) -> tuple[float | None, str]:
    """The path's capacity in payload bit/s and what it is, or None when nothing gives it."""
    rate = None if link_rate is None else read("--link-rate", units.parse_bitrate_bps, link_rate)
    return path_capacity(path, links, rate, mss_bytes)


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


def _set_transfer_time(payload: dict[str, Any], model_time_s: float, bounded: Bounded) -> None:
    """The model's transfer time, and the transfer time bounded as the rate is."""
    payload["model_transfer_time_s"] = model_time_s
    payload["transfer_time_s"] = bounded_transfer_time_s(model_time_s, bounded)


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
    mss: MssOpt = None,
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
            warn(
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
    result = evaluate("calldrop", lambda: calldrop_prediction(**inputs))
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
    _set_transfer_time(payload, float(result.transfer_time_s), bounded)
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
    rtt: RttOpt = None,
    loss: LossRateOpt = None,
    t0: Annotated[
        str | None, typer.Option(help=f"Initial timeout T0 {DurationOpt} [default: 1s]")
    ] = None,
    mss: MssOpt = None,
    wmax: WindowOpt = None,
    b: AckedPerAckOpt = None,
    links: LinksOpt = None,
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
    full = evaluate("pftk", lambda: pftk_full_throughput(p, rtt_s, t0_s, b_, wmax_pkts))
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
    rtt: RttOpt = None,
    loss: LossRateOpt = None,
    mss: MssOpt = None,
    b: AckedPerAckOpt = None,
    links: LinksOpt = None,
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
    rtt: RttOpt = None,
    loss: Annotated[
        str | None, typer.Option(help=f"Loss rate p, below 0.5 ({units.PROBABILITY_FORMS}).")
    ] = None,
    t0: Annotated[
        str | None,
        typer.Option(help=f"Initial retransmission timeout T0 {DurationOpt} [default: 1s]"),
    ] = None,
    mss: MssOpt = None,
    wmax: WindowOpt = None,
    b: AckedPerAckOpt = None,
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
    cardwell = evaluate("short", lambda: cardwell_components(**params, w1_pkts=w1))
    sikdar = evaluate("short", lambda: sikdar_components(**params))
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
    _set_transfer_time(payload, float(cardwell.total_s), bounded)
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
    roots = evaluate("stpd", lambda: np.asarray(stpd.poles(m, kp, kd, reading=reading)))
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
    lost = evaluate("drop-loss", lambda: packets_lost_per_call_drop(*inputs.values()))
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
