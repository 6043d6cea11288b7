"""``farlink linkmgr``: the link-management daemon and the simulated modems."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from farlink.linkmgr.run import DEFAULT_PRESET

EXIT_FAILED = 1
MAX_MODEMS = 64

linkmgr_app = typer.Typer(
    no_args_is_help=True,
    help="The link manager: a daemon running a bundle of dial-up modems (seed 000 ch. 7), "
    "and simulated Iridium modems to run it against (docs/linkmgr.md).",
)


def _fail(err: Exception) -> None:
    """A configuration or option error is bad input (exit 2); anything else a failure (1)."""
    from farlink.cli import CliError

    if getattr(err, "kind", None) == "config":
        raise CliError(str(err)) from None
    typer.echo(f"farlink: error: linkmgr: {err}", err=True)
    raise typer.Exit(EXIT_FAILED) from None


@linkmgr_app.command("run")
def run_command(
    config: Annotated[Path, typer.Argument(help="The daemon's configuration (TOML).")],
) -> None:
    """Run the daemon: dial (air) or answer (ground) every member, notice call drops, redial,
    block failing modems, log every event; until SIGTERM or Ctrl-C."""
    from farlink import _core
    from farlink.linkmgr.run import run_daemon

    try:
        run_daemon(config)
    except _core.LinkMgrError as err:
        _fail(err)


@linkmgr_app.command("modem-sim")
def modem_sim_command(
    modems: Annotated[int, typer.Option(help="Modem pairs (air and ground), 1 to 64.")] = 8,
    directory: Annotated[
        Path,
        typer.Option("--dir", help="Folder for the links DIR/air<k> and DIR/ground<k>."),
    ] = Path("farlink-modems"),
    time_scale: Annotated[
        float,
        typer.Option(help="Divide dial times and call durations by this (at least 1)."),
    ] = 1.0,
    seed: Annotated[int | None, typer.Option(help="Seed of the random streams.")] = None,
    preset: Annotated[
        str, typer.Option(help="Scenario (preset or file) whose bundle the modems follow.")
    ] = DEFAULT_PRESET,
    signal_reply: Annotated[
        float,
        typer.Option(help="Seconds a signal query (AT+CSQ) takes to answer (seed 000: 4)."),
    ] = 4.0,
) -> None:
    """Simulated Iridium modems on pseudo-terminals: dials, call drops and delays drawn as the
    simulator draws them; until SIGTERM or Ctrl-C. Prints each link's path when ready."""
    from farlink import _core
    from farlink.cli import CliError
    from farlink.linkmgr.run import run_modem_sim
    from farlink.scenario import ScenarioError, describe_error

    if not 1 <= modems <= MAX_MODEMS:
        raise CliError(f"--modems: expected 1 to {MAX_MODEMS}, got {modems}")
    if seed is not None and not 0 <= seed < 2**64:
        raise CliError(f"--seed: expected a whole number from 0 to 2^64-1, got {seed}")
    try:
        run_modem_sim(
            modems,
            directory,
            time_scale=time_scale,
            seed=seed,
            preset=preset,
            signal_reply_s=signal_reply,
        )
    except ScenarioError as err:
        raise CliError(describe_error(preset, err)) from None
    except _core.LinkMgrError as err:
        _fail(err)
