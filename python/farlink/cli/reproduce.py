"""``farlink reproduce`` and ``farlink demo``: the seeds' tables and figures beside farlink's."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from farlink.cli.options import DEFAULT_OUT, CliError, ForceFlag, JsonFlag
from farlink.reports.terminal import print_json


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
        raise CliError(f"unknown reproduction {id!r}; known: {', '.join(known)}")
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
