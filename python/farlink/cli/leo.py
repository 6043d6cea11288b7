"""``farlink leo``: a link schedule from orbital geometry (docs/leo.md)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from farlink import units
from farlink.cli.options import DEFAULT_OUT, CliError, DurationOpt, ForceFlag, JsonFlag, emit, read

Opt = typer.Option


def _place(option: str, text: str):
    """``LAT,LON[,ALT]``: degrees north and east, altitude in metres (``m`` allowed)."""
    from farlink.leo import Place

    parts = [p.strip() for p in text.split(",")]
    try:
        lat, lon = float(parts[0]), float(parts[1])
        alt = 0.0 if len(parts) < 3 else float(parts[2].removesuffix("m"))
    except (ValueError, IndexError):
        raise CliError(
            f"{option}: cannot read {text!r}: expected LAT,LON[,ALT_m] in degrees "
            "north and east, e.g. 72.58,-38.46,3216"
        ) from None
    if len(parts) > 3 or not (-90 <= lat <= 90 and -180 <= lon <= 360 and -1e3 <= alt <= 1e5):
        raise CliError(
            f"{option}: {text!r} is not a place: expected LAT,LON[,ALT_m], latitude in "
            "[-90, 90], longitude in [-180, 360], altitude in [-1000, 100000] m"
        )
    return Place(option.lstrip("-"), lat, lon, alt)


def _capacity(text: str):
    """``100Mbit/s``, ``uniform:50Mbit/s,150Mbit/s`` or ``lognormal:100Mbit/s,0.5``."""
    from farlink.leo import Capacity

    kind, _, rest = text.partition(":") if ":" in text else ("constant", "", text)
    values = [v.strip() for v in rest.split(",")]
    forms = (
        f"expected RATE, uniform:LOW,HIGH or lognormal:MEDIAN,SIGMA (rates {units.BITRATE_FORMS})"
    )
    if kind not in ("constant", "uniform", "lognormal") or len(values) != (
        1 if kind == "constant" else 2
    ):
        raise CliError(f"--capacity: cannot read {text!r}: {forms}")
    a = read("--capacity", units.parse_bitrate_bps, values[0])
    if kind == "uniform":
        b = read("--capacity", units.parse_bitrate_bps, values[1])
    elif kind == "lognormal":
        try:
            b = float(values[1])
        except ValueError:
            raise CliError(f"--capacity: sigma {values[1]!r} is not a number: {forms}") from None
    else:
        b = 0.0
    try:
        return Capacity(kind, a, b)
    except ValueError as err:
        raise CliError(f"--capacity: {err}") from None


def _epoch(text: str | None, default: datetime) -> datetime:
    if text is None:
        return default
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise CliError(
            f"--epoch: cannot read {text!r}: expected an ISO time such as 2024-01-01T00:00:00Z"
        ) from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _optional(policy, slot, min_elevation, capacity, terminal, ground) -> dict:
    """The preset's values the options given replace (LeoConfig fields)."""
    changes: dict = {}
    if policy is not None:
        from farlink.leo.schedule import POLICIES

        if policy not in POLICIES:
            raise CliError(f"--policy: expected one of {', '.join(POLICIES)}, got {policy!r}")
        changes["policy"] = policy
    if slot is not None:
        changes["slot_s"] = read("--slot", units.parse_duration_s, slot)
    if min_elevation is not None:
        if not -90 < min_elevation < 90:
            raise CliError(f"--min-elevation: expected degrees in (-90, 90), got {min_elevation}")
        changes["min_elevation_deg"] = min_elevation
    if capacity is not None:
        changes["capacity"] = _capacity(capacity)
    if terminal is not None:
        changes["terminal"] = _place("--terminal", terminal)
    if ground is not None:
        changes["ground"] = _place("--ground", ground)
    return changes


def leo_command(
    preset: Annotated[str, Opt(help="starlink-like or iridium-leo (docs/leo.md, sources).")] = (
        "starlink-like"
    ),
    duration: Annotated[str, Opt(help=f"Length of the schedule {DurationOpt}")] = "10min",
    out: Annotated[
        Path | None, Opt(help="CSV file to write (default farlink-out/leo-PRESET.csv).")
    ] = None,
    step: Annotated[str, Opt(help=f"Delay sampling step {DurationOpt}")] = "1s",
    policy: Annotated[
        str | None,
        Opt(
            help="slots (re-chosen every --slot), highest (the highest satellite, always) or "
            "sticky (kept until it sets); default: the preset's (docs/leo.md)."
        ),
    ] = None,
    slot: Annotated[str | None, Opt(help=f"Slot of the slots policy {DurationOpt}")] = None,
    min_elevation: Annotated[
        float | None, Opt(help="Minimum elevation, degrees (default: the preset's).")
    ] = None,
    outage: Annotated[str, Opt(help=f"Outage after each hand-off {DurationOpt}")] = "0s",
    processing: Annotated[str, Opt(help=f"Processing delay added one way {DurationOpt}")] = "0s",
    capacity: Annotated[
        str | None,
        Opt(
            help="RATE, uniform:LOW,HIGH or lognormal:MEDIAN,SIGMA, "
            "one draw per serving period (default: the preset's rate)."
        ),
    ] = None,
    seed: Annotated[int, Opt(help="Seed of the capacity draws.")] = 1,
    terminal: Annotated[str | None, Opt(help="LAT,LON[,ALT_m] of the terminal.")] = None,
    ground: Annotated[str | None, Opt(help="LAT,LON[,ALT_m] of the ground station.")] = None,
    tle: Annotated[
        Path | None,
        Opt(
            help="Satellites from this TLE file (sgp4) instead of the "
            "preset's constellation; bent-pipe path."
        ),
    ] = None,
    epoch: Annotated[
        str | None,
        Opt(
            help="Start of the schedule, UTC ISO time (default "
            "2024-01-01T00:00:00Z, or the TLEs' latest epoch)."
        ),
    ] = None,
    force: ForceFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Write a link schedule (CSV: at_s, delay_s, rate_bps, up, satellite) from orbital geometry."""
    from farlink.leo import PRESETS, build_schedule, config_of_preset, read_tles
    from farlink.outputs import OutputError, OutputFolder

    if preset not in PRESETS:
        raise CliError(f"--preset: expected one of {', '.join(PRESETS)}, got {preset!r}")
    changes: dict = {
        "duration_s": read("--duration", units.parse_duration_s, duration),
        "step_s": read("--step", units.parse_duration_s, step),
        "outage_s": read("--outage", lambda s: units.parse_duration_s(s, allow_zero=True), outage),
        "processing_s": read(
            "--processing", lambda s: units.parse_duration_s(s, allow_zero=True), processing
        ),
        "seed": seed,
    }
    if seed < 0:
        raise CliError(f"--seed: expected a whole number >= 0, got {seed}")
    changes.update(_optional(policy, slot, min_elevation, capacity, terminal, ground))
    default_epoch = datetime(2024, 1, 1, tzinfo=UTC)
    if tle is not None:
        try:
            tles = read_tles(tle)
        except ValueError as err:
            raise CliError(f"--tle: {err}") from None
        changes.update(tles=tles, shell=None, path="bent-pipe")
        default_epoch = tles.latest_epoch()
    changes["epoch"] = _epoch(epoch, default_epoch)
    try:
        schedule = build_schedule(config_of_preset(preset, **changes))
    except ValueError as err:
        raise CliError(f"leo: {err}") from None
    path = out if out is not None else DEFAULT_OUT / f"leo-{preset}.csv"
    if path.is_dir():
        raise OutputError(f"--out: {path} is a folder; name the CSV file to write")
    path = OutputFolder(path.parent, force=force).write_text(path.name, schedule.to_csv())
    emit(as_json, f"leo {preset}", {"preset": preset, "file": str(path), **schedule.summary})
