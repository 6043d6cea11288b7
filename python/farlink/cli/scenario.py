"""``farlink scenario``: a scenario as the core resolves it, a check of a scenario file, and
``farlink presets``."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from farlink.cli.options import CliError, JsonFlag, ProfileOpt
from farlink.reports.terminal import print_json

scenario_app = typer.Typer(
    no_args_is_help=True,
    help="Scenarios as the core reads them: every default filled, or errors with their place.",
)


def _resolved(scenario: str, sets: list[str] | None, profile: str | None = None) -> dict[str, Any]:
    from farlink.scenario import (
        ScenarioError,
        apply_overrides,
        describe_error,
        load_scenario,
        resolve,
    )

    try:
        return resolve(apply_overrides(load_scenario(scenario), sets=sets or (), profile=profile))
    except ScenarioError as err:
        raise CliError(describe_error(scenario, err, sets=sets or ())) from None


def _text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _count(items: list[Any], noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"


@scenario_app.command("show")
def show(
    scenario: Annotated[str, typer.Argument(help="A scenario TOML file or a preset name.")],
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Set a scenario field: path=value, e.g. links[1].queue_pkts=4."),
    ] = None,
    profile: ProfileOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Print the scenario with every default filled: defaults, what a TCP profile set and
    derived values marked."""
    from farlink.scenario import resolved_rows

    resolved = _resolved(scenario, set_, profile)
    if as_json:
        print_json(resolved)
        return
    table = Table(
        title=f"{scenario}, resolved (format {resolved['resolved_schema_version']})",
        show_header=True,
        title_justify="left",
    )
    table.add_column("field", style="bold")
    table.add_column("value")
    table.add_column("")
    for path, value, origin in resolved_rows(resolved):
        table.add_row(path, _text(value), origin, style="dim" if origin == "derived" else None)
    Console(width=200).print(table)


@scenario_app.command("check")
def check(
    scenario: Annotated[str, typer.Argument(help="A scenario TOML file or a preset name.")],
) -> None:
    """Validate a scenario: 'ok' and what it holds, or the first error with its place."""
    resolved = _resolved(scenario, None)
    typer.echo(
        f"{scenario}: ok ({_count(resolved['nodes'], 'node')}, "
        f"{_count(resolved['links'], 'link')}, {_count(resolved['flows'], 'flow')}; "
        f"{_count(resolved['defaults'], 'field')} taking defaults"
        + (
            f", {_count(resolved['from_profile'], 'field')} set by a TCP profile)"
            if resolved.get("from_profile")
            else ")"
        )
    )


def presets() -> None:
    """List the scenario presets shipped with farlink."""
    from farlink.scenario import list_presets

    for name, description in list_presets():
        typer.echo(f"{name:<24} {description}")
