"""The ``farlink`` command: every command group registered, and the one way a run ends.

Every option that carries a quantity takes human units and its help says which. Bad input prints
one line, ``farlink: error: <option>: <what was wrong and the accepted form>``, and exits 2.
Each command lives in the module of its group (``farlink/cli/README.md``) and only reads options
and calls the library.
"""

from __future__ import annotations

import os
import sys
import warnings

import typer

from farlink.cli import calldrops, captures, predict, reproduce, scenario, simulate, sweeps
from farlink.cli.bonding import compare_bonding_command
from farlink.cli.compare import compare_command
from farlink.cli.emulate import emulate_command
from farlink.cli.leo import leo_command
from farlink.cli.options import EXIT_BAD_INPUT, CliError
from farlink.cli.send import send_command
from farlink.cli.trace import trace_app
from farlink.linkmgr.cli import linkmgr_app

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="Predict, simulate and emulate TCP over far links.",
)

app.command("emulate")(emulate_command)
app.command("send")(send_command)
app.command("compare")(compare_command)
app.command("compare-bonding")(compare_bonding_command)
app.command("reproduce")(reproduce.reproduce)
app.command("fit-drops")(calldrops.fit_drops)
app.command("simulate")(simulate.simulate_command)
app.command("presets")(scenario.presets)
app.command("report")(sweeps.report_command)
app.command("analyze")(captures.analyze_command)
app.command("fit")(captures.fit_command)
app.command("demo")(reproduce.demo)
app.command("sweep")(sweeps.sweep_command)
app.command("leo")(leo_command)
app.add_typer(predict.predict_app, name="predict")
app.add_typer(sweeps.results_app, name="results")
app.add_typer(scenario.scenario_app, name="scenario")
app.add_typer(linkmgr_app, name="linkmgr")
app.add_typer(trace_app, name="trace")

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
