"""Scenario files and presets: read TOML, apply overrides, hand JSON to the core.

The schema and its validation live in the Rust core (``farlink-core/src/scenario.rs``, documented
field by field in ``docs/scenarios.md``): this module only finds the document, edits it as the
command line asks and reports TOML syntax errors with their line. Presets are TOML files shipped
in ``farlink/scenarios/``; each value cites the seed section it comes from.
"""

from __future__ import annotations

import copy
import re
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = [
    "RECOVERY_NAMES",
    "ScenarioError",
    "apply_overrides",
    "list_presets",
    "load_scenario",
    "set_path",
]

RECOVERY_NAMES = ("tahoe", "reno", "newreno", "sack")
"""``--tcp`` names that select loss recovery; other names select the congestion controller,
over SACK-based recovery."""


class ScenarioError(ValueError):
    """A scenario that cannot be read or edited; the message names the place."""


def _preset_dir():
    return resources.files("farlink") / "scenarios"


def list_presets() -> list[tuple[str, str]]:
    """(name, description) of every preset, sorted by name."""
    presets = []
    for entry in sorted(_preset_dir().iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            doc = tomllib.loads(entry.read_text(encoding="utf-8"))
            presets.append((entry.name.removesuffix(".toml"), str(doc.get("description", ""))))
    return presets


def load_scenario(name_or_path: str | Path) -> dict[str, Any]:
    """Read a scenario from a TOML file, or a preset by name (``farlink presets`` lists them)."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as err:
            raise ScenarioError(f"{path}: cannot read the scenario file ({err.strerror})") from None
        source = str(path)
    else:
        preset = _preset_dir() / f"{name_or_path}.toml"
        if not preset.is_file():
            names = ", ".join(name for name, _ in list_presets())
            raise ScenarioError(
                f"{name_or_path!r} is neither a scenario file nor a preset (presets: {names})"
            )
        text = preset.read_text(encoding="utf-8")
        source = f"preset {name_or_path}"
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ScenarioError(f"{source}: {err}") from None


_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _steps(path: str) -> list[str | int]:
    steps: list[str | int] = []
    for part in path.split("."):
        matched = _STEP.findall(part)
        if not part or "".join(f"{k}[{i}]" if i else k for k, i in matched) != part:
            raise ScenarioError(f"--set {path!r}: expected a path like links[1].fwd.loss.p")
        for key, index in matched:
            if key:
                steps.append(int(key) if key.isdigit() else key)
            else:
                steps.append(int(index))
    return steps


def _parse_value(text: str) -> Any:
    """A TOML value (``0.01``, ``true``, ``"80ms"``, ``[1, 2]``), or else the bare text."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def set_path(doc: dict[str, Any], path: str, value: Any) -> None:
    """Set ``doc`` at ``path`` (``links[1].fwd.loss.p`` or ``flows.0.tcp.sack``).

    Missing tables on the way are created; a list index must exist.
    """
    steps = _steps(path)
    node: Any = doc
    for depth, step in enumerate(steps[:-1]):
        where = path if depth == 0 else f"{path} (at {steps[depth]!r})"
        if isinstance(step, int):
            if not isinstance(node, list) or not -len(node) <= step < len(node):
                raise ScenarioError(f"--set {where}: no list element {step} there")
            node = node[step]
        else:
            if not isinstance(node, dict):
                raise ScenarioError(f"--set {where}: {step!r} is not a table here")
            node = node.setdefault(step, {})
    last = steps[-1]
    if isinstance(last, int):
        if not isinstance(node, list) or not -len(node) <= last < len(node):
            raise ScenarioError(f"--set {path}: no list element {last} there")
        node[last] = value
    elif isinstance(node, dict):
        node[last] = value
    else:
        raise ScenarioError(f"--set {path}: {last!r} is not a table here")


def _table_list(doc: dict[str, Any], key: str, option: str) -> list[dict[str, Any]]:
    """``doc[key]`` as the list of tables an option rewrites; a path-qualified refusal else."""
    items = doc.get(key, [])
    if not isinstance(items, list):
        raise ScenarioError(
            f"{key}: expected an array of tables ([[{key}]]), got {_kind(items)} "
            f"(needed by {option})"
        )
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ScenarioError(
                f"{key}[{i}]: expected a table ([[{key}]]), got {_kind(item)} (needed by {option})"
            )
    return items


def _kind(value: Any) -> str:
    """How a TOML value reads to a person: ``the integer 5``, ``a string``, ``an array``."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return f"a {type(value).__name__}"


def _lossy_direction(doc: dict[str, Any]) -> tuple[dict[str, Any], str]:
    lossy = doc.get("lossy_link")
    if lossy is None:
        raise ScenarioError("--loss: the scenario names no lossy_link to apply it to")
    if isinstance(lossy, str):
        name, direction = lossy, "fwd"
    elif isinstance(lossy, dict):
        name, direction = lossy.get("link"), lossy.get("direction", "fwd")
        if not isinstance(name, str):
            raise ScenarioError(
                f"lossy_link.link: expected a link name, got {_kind(name)} (needed by --loss)"
            )
        if direction not in ("fwd", "rev"):
            raise ScenarioError(
                f'lossy_link.direction: expected "fwd" or "rev", got {_kind(direction)}'
            )
    else:
        raise ScenarioError(
            f"lossy_link: expected a link name or a table {{ link, direction }}, got "
            f"{_kind(lossy)} (needed by --loss)"
        )
    for i, link in enumerate(_table_list(doc, "links", "--loss")):
        if link.get("name", f"{link.get('a')}-{link.get('b')}") == name:
            if not isinstance(link.get(direction, {}), dict):
                raise ScenarioError(
                    f"links[{i}].{direction}: expected a table, got {_kind(link[direction])} "
                    "(needed by --loss)"
                )
            return link, direction
    raise ScenarioError(f"--loss: lossy_link {name!r} is not one of the scenario's links")


def _flow_table(flow: dict[str, Any], i: int, key: str, option: str) -> dict[str, Any]:
    """``flows[i].<key>`` as a table (created when absent) for ``option`` to rewrite."""
    table = flow.setdefault(key, {})
    if not isinstance(table, dict):
        raise ScenarioError(
            f"flows[{i}].{key}: expected a table, got {_kind(table)} (needed by {option})"
        )
    return table


def _set_tcp(doc: dict[str, Any], tcp: str) -> None:
    for i, flow in enumerate(_table_list(doc, "flows", "--tcp")):
        options = _flow_table(flow, i, "tcp", "--tcp")
        if tcp in RECOVERY_NAMES:
            options["recovery"] = tcp
        else:
            # A controller named on the command line runs over SACK-based recovery (the
            # core falls back to NewReno when the scenario switches SACK off).
            options["cc"] = tcp
            options["recovery"] = "sack"


def _set_size(doc: dict[str, Any], size: str) -> None:
    for i, flow in enumerate(_table_list(doc, "flows", "--size")):
        if "app" in flow and _flow_table(flow, i, "app", "--size").get("kind") in (
            "bulk",
            "unbounded",
        ):
            flow["app"] = {"kind": "bulk", "size": size}


def apply_overrides(
    doc: dict[str, Any],
    *,
    tcp: str | None = None,
    loss: float | None = None,
    duration: str | None = None,
    size: str | None = None,
    seed: int | None = None,
    sets: list[str] | tuple[str, ...] = (),
) -> dict[str, Any]:
    """Return a copy of ``doc`` with the command line's overrides applied, ``--set`` last."""
    doc = copy.deepcopy(doc)
    if tcp is not None:
        _set_tcp(doc, tcp)
    if loss is not None:
        link, direction = _lossy_direction(doc)
        link.setdefault(direction, {})["loss"] = {"model": "bernoulli", "p": loss}
    if duration is not None:
        doc.pop("duration_s", None)
        doc["duration"] = duration
    if size is not None:
        _set_size(doc, size)
    if seed is not None:
        doc["seed"] = seed
    for assignment in sets:
        path, sep, value = assignment.partition("=")
        if not sep or not path.strip():
            raise ScenarioError(f"--set {assignment!r}: expected path=value")
        set_path(doc, path.strip(), _parse_value(value.strip()))
    return doc
