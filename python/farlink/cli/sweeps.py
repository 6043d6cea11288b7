"""``farlink sweep``, ``farlink results`` and ``farlink report``: a grid of runs and its results."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from farlink.cli.budget import BudgetEventsOpt, BudgetMemoryOpt, budget_options
from farlink.cli.options import (
    DEFAULT_OUT,
    CliError,
    DurationOpt,
    ForceFlag,
    JsonFlag,
    SizeOpt,
    run_quantities,
)

results_app = typer.Typer(
    no_args_is_help=True,
    help="Read a sweep's results: SQL over the dataset, means and intervals across seeds.",
)


def sweep_command(
    base: Annotated[
        str, typer.Argument(help="A sweep file (TOML), or a scenario file or preset to sweep.")
    ],
    grid: Annotated[
        list[str] | None,
        typer.Option(
            "--grid",
            help="An axis, AXIS=v1,v2,...: tcp, loss, duration, size, profile or a --set path "
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
    profile: Annotated[
        str | None,
        typer.Option(help="Every point: TCP profile, rfc or linux (docs/scenarios.md)."),
    ] = None,
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
    from farlink.outputs import safe_name
    from farlink.reports.terminal import print_sweep_report
    from farlink.sweeps import run
    from farlink.sweeps import sweep as sw
    from farlink.sweeps.check import check_points

    fixed = {
        "tcp": tcp,
        **run_quantities(loss, duration, size),
        "profile": profile,
    }
    budget = tuple(budget_options(budget_events, budget_memory).values())
    executor = _sweep_executor(workers, dask_local, dask)
    try:
        definition = sw.sweep_from_options(
            base, grid=grid or (), fixed=fixed, sets=set_ or (), seeds=seeds, seed=seed,
            metrics=metric or (),
        )  # fmt: skip
        folder = out if out is not None else DEFAULT_OUT / "sweep" / safe_name(definition.name)
        check_points(definition)  # every point through the core's validation, before any run
        report = run.run_sweep(
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

    from farlink.sweeps import executors

    if sum(x is not None for x in (workers, dask_local, dask)) > 1:
        raise CliError("--workers: give one of --workers, --dask-local and --dask")
    for option, count in (("--workers", workers), ("--dask-local", dask_local)):
        if count is not None and count < 1:
            raise CliError(f"{option}: expected at least 1, got {count}")
    if dask_local is None and dask is None:
        return executors.ProcessPool(workers)
    if find_spec("distributed") is None:
        option = "--dask" if dask else "--dask-local"
        raise CliError(f"{option}: needs Dask (pip install 'dask[distributed]')")
    return executors.DaskCluster(address=dask, local_workers=dask_local)


@results_app.command("query")
def results_query(
    directory: Annotated[Path, typer.Argument(help="The sweep's --out folder.")],
    sql: Annotated[str, typer.Argument(help="SQL over the view 'results' (DuckDB).")],
    as_json: JsonFlag = False,
) -> None:
    """Run SQL over a sweep's dataset, e.g. "SELECT loss, avg(timeouts) FROM results GROUP BY 1"."""
    from farlink.reports.terminal import print_rows
    from farlink.sweeps import dataset
    from farlink.sweeps import sweep as sw

    try:
        columns, rows = dataset.query(directory, sql)
    except sw.SweepError as err:
        raise CliError(str(err)) from None
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
    from farlink.reports.terminal import print_sweep_summary
    from farlink.sweeps import dataset
    from farlink.sweeps import sweep as sw

    try:
        summary = dataset.summarize(directory, metrics=metric or None, confidence=confidence)
    except sw.SweepError as err:
        raise CliError(str(err)) from None
    print_sweep_summary(summary, as_json)


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
    from farlink.outputs import OutputError, OutputFolder
    from farlink.reports.html import ReportError, write_report
    from farlink.sweeps import sweep as sw

    target = out if out is not None else directory / "report.html"
    if target.is_dir():
        raise OutputError(f"--out: {target} is a folder; name the HTML file to write")
    folder = OutputFolder(target.parent, force=force)
    (target,) = folder.claim(target.name)
    try:
        path = write_report(directory, target, traces=trace or ())
        folder.record([path])
    except sw.SweepError as err:
        raise CliError(str(err)) from None
    except ReportError as err:
        raise CliError(f"--trace: {err}") from None
    typer.echo(f"wrote {path}")
