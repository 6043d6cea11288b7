"""What every command shares: the error for bad input, reading an option, common flags.

Bad input prints one line, ``farlink: error: <option>: <what was wrong and the accepted form>``,
and exits 2 (:func:`farlink.cli.app.main`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from farlink import units
from farlink.reports.terminal import print_json, print_quantities

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


def evaluate(option_names: str, compute: Callable[[], T]) -> T:
    """Run a model, turning its parameter errors into a one-line message."""
    try:
        return compute()
    except ValueError as err:
        raise CliError(f"{option_names}: {err}") from None


def checked(option: str, parser: Callable[[str], float], text: str) -> str:
    """Check a quantity here for a one-line error naming the option; the core reads the text."""
    read(option, parser, text)
    return text


def run_quantities(loss: str | None, duration: str | None, size: str | None) -> dict[str, Any]:
    """``--loss``, ``--duration`` and ``--size`` of a run, checked here for a one-line error
    naming the option: the loss as a number, the others as given, for the core to read."""
    return {
        "loss": None if loss is None else read("--loss", units.parse_error_rate, loss),
        "duration": None
        if duration is None
        else checked("--duration", units.parse_duration_s, duration),
        "size": None if size is None else checked("--size", units.parse_size_bytes, size),
    }


def warn(message: str) -> None:
    typer.echo(f"farlink: warning: {message}", err=True)


def emit(as_json: bool, title: str, payload: dict[str, Any]) -> None:
    """One JSON object, or a table of the payload's quantities (its inputs and model left out)."""
    if as_json:
        print_json(payload)
    else:
        print_quantities(title, {k: v for k, v in payload.items() if k not in ("inputs", "model")})


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


OutDirOpt = Annotated[
    Path | None, typer.Option("--out", help="Also write the result as DIR/summary.json.")
]
ScenarioNameArg = Annotated[str, typer.Argument(help="A scenario TOML file or a preset name.")]
LossOpt = Annotated[
    str | None,
    typer.Option(help="Packet error rate of the scenario's lossy link, data direction, in [0, 1)."),
]
ProfileOpt = Annotated[
    str | None,
    typer.Option(
        help="TCP profile of every flow: rfc (farlink's defaults) or linux (Linux's connection "
        "and sender defaults and its modules' controllers: cubic runs as cubic-linux); fields "
        "the scenario gives win (docs/scenarios.md).",
    ),
]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", help="Set a scenario field: path=value, e.g. links[1].queue_pkts=4."),
]
