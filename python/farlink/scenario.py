"""Scenario files and presets: read TOML, apply overrides, hand JSON to the core.

The schema and its validation live in the Rust core (``farlink-core/src/scenario.rs``, documented
field by field in ``docs/scenarios.md``): this module only finds the document, edits it as the
command line asks and reports TOML syntax errors with their line. Presets are TOML files shipped
in ``farlink/scenarios/``; each value cites the seed section it comes from.
"""

from __future__ import annotations

import copy
import datetime
import json
import math
import re
import tomllib
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from farlink._core import DERIVED_FIELDS, ScenarioError
from farlink.schedules import inline_files
from farlink.traffic import read_size_cdfs

__all__ = [
    "RECOVERY_NAMES",
    "ScenarioError",
    "apply_overrides",
    "describe_error",
    "list_presets",
    "load_scenario",
    "resolve",
    "resolved_rows",
    "scenario_source",
    "set_path",
    "to_core_json",
]

RECOVERY_NAMES = ("tahoe", "reno", "newreno", "sack", "rack")
# Loss recoveries that are also a congestion-control module's name (Linux's tcp_cong.c).
LINUX_MODULE_NAMES = ("reno",)
"""``--tcp`` names that select loss recovery; other names select the congestion controller,
over SACK-based recovery."""


def _field_error(path: str, message: str) -> ScenarioError:
    """A ScenarioError about one field of the document, with its place as the core gives it."""
    err = ScenarioError(f"{path}: {message}")
    err.path, err.message = path, message
    return err


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


def scenario_source(name_or_path: str | Path) -> tuple[str, str]:
    """Where a scenario comes from and its TOML text: ``(file name, text)``.

    A preset's file name is its path inside the package.
    """
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        try:
            return str(path), path.read_text(encoding="utf-8")
        except OSError as err:
            raise ScenarioError(f"{path}: cannot read the scenario file ({err.strerror})") from None
    preset = _preset_dir() / f"{name_or_path}.toml"
    if not preset.is_file():
        names = ", ".join(name for name, _ in list_presets())
        raise ScenarioError(
            f"{name_or_path!r} is neither a scenario file nor a preset (presets: {names})"
        )
    return str(preset), preset.read_text(encoding="utf-8")


_TOML_POSITION = re.compile(r"^(?P<message>.*) \(at line (?P<line>\d+), column (?P<column>\d+)\)$")


def load_scenario(name_or_path: str | Path) -> dict[str, Any]:
    """Read a scenario from a TOML file, or a preset by name (``farlink presets`` lists them).

    A TOML syntax error reads ``FILE:LINE:COLUMN: message``. A size CDF file
    (``size = { cdf = "FILE" }``) is read into its points (:mod:`farlink.traffic`).
    """
    source, text = scenario_source(name_or_path)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        found = _TOML_POSITION.match(str(err))
        if found is None:
            raise ScenarioError(f"{source}: {err}") from None
        raise ScenarioError(
            f"{source}:{found['line']}:{found['column']}: {found['message']}"
        ) from None
    # Schedule files and mahimahi traces it names, and a short-flow class's size CDF file,
    # relative to its own folder (docs/schedules.md, docs/traffic.md).
    doc = inline_files(doc, Path(source).parent)
    return read_size_cdfs(doc, Path(source).parent)


def describe_error(name_or_path: str | Path, err: Exception, *, sets: Sequence[str] = ()) -> str:
    """A scenario error as ``FILE:LINE: path: message`` for a scenario read from a file.

    ``err`` is a ``ScenarioError``: one about a field (``path`` set) is placed at the line of
    the file's TOML that gives it (a value the file does not give, set on the command line, has
    no line); any other (``path`` None) already names its place in its message. A field that
    one of ``sets`` (``--set`` assignments) replaced is the command line's, not the file's:
    ``--set path: message``.
    """
    path, message = getattr(err, "path", None), getattr(err, "message", None)
    if path is not None and message is not None and _set_by(path, sets):
        return f"--set {path}: {message}"
    if isinstance(name_or_path, dict) or path is None or message is None:
        return str(err)
    try:
        source, text = scenario_source(name_or_path)
    except ScenarioError:
        return str(err)
    from farlink import _core

    line = _core.toml_line(text, path) if path else None
    where = f"{source}:{line}" if line is not None else source
    return f"{where}: {path}: {message}" if path else f"{where}: {message}"


def _set_by(path: str, sets: Sequence[str]) -> bool:
    """Whether a ``--set`` assignment among ``sets`` gave the field at ``path`` (or a table
    holding it)."""
    try:
        field = _steps(path)
        for assignment in sets:
            target = _steps(assignment.partition("=")[0].strip())
            if field[: len(target)] == target:
                return True
    except ScenarioError:
        return False
    return False


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
    # Link names as the core gives them (a link without one is named after its ends); a
    # scenario the core refuses raises its ScenarioError here, as the run would.
    links = _table_list(doc, "links", "--loss")
    names = [link["name"] for link in resolve(doc)["links"]]
    for i, (link, link_name) in enumerate(zip(links, names, strict=True)):
        if link_name == name:
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
    from farlink._core import TCP_PROFILES

    for i, flow in enumerate(_table_list(doc, "flows", "--tcp")):
        options = _flow_table(flow, i, "tcp", "--tcp")
        # A profile the core does not know is refused by the core, at its field.
        profile_recovery = TCP_PROFILES.get(str(options.get("profile", "rfc")), {}).get("recovery")
        # Names are case-insensitive, as in the core. Under a profile with a recovery of its
        # own (Linux's) a name is a module's, so "reno" is Linux's Reno, not Reno recovery.
        name = tcp.lower()
        if name in RECOVERY_NAMES and not (profile_recovery and name in LINUX_MODULE_NAMES):
            options["recovery"] = tcp
        else:
            # A controller named on the command line runs over its profile's loss recovery
            # (Linux's RACK-TLP), else over SACK-based recovery (the core falls back to NewReno
            # when the scenario switches SACK off).
            options["cc"] = tcp
            options["recovery"] = profile_recovery or "sack"


def _set_profile(doc: dict[str, Any], profile: str) -> None:
    from farlink._core import TCP_PROFILES

    if profile not in TCP_PROFILES:
        raise ScenarioError(
            f"--profile: unknown TCP profile {profile!r}; expected one of: "
            + ", ".join(TCP_PROFILES)
        )
    for i, flow in enumerate(_table_list(doc, "flows", "--profile")):
        _flow_table(flow, i, "tcp", "--profile")["profile"] = profile


def _set_size(doc: dict[str, Any], size: str) -> None:
    for i, flow in enumerate(_table_list(doc, "flows", "--size")):
        if "app" in flow and _flow_table(flow, i, "app", "--size").get("kind") in (
            "bulk",
            "unbounded",
        ):
            # The application's other choice, when its shutdown comes, is not the size's.
            kept = {k: v for k, v in flow["app"].items() if k == "shutdown"}
            flow["app"] = {"kind": "bulk", "size": size, **kept}


def _set_transport(doc: dict[str, Any], transport: str) -> None:
    """Every flow's transport: ``tcp`` (one connection, MLPPP's bundle as it is) or ``mptcp``
    (one subflow per member of the bundle on its route); the core refuses other names at
    ``flows[i].transport``. ``tcp`` drops a flow's ``[flows.mptcp]`` table, which only an
    ``mptcp`` flow may have."""
    for flow in _table_list(doc, "flows", "--transport"):
        flow["transport"] = transport
        if transport == "tcp":
            flow.pop("mptcp", None)


def apply_overrides(
    doc: dict[str, Any],
    *,
    tcp: str | None = None,
    loss: float | None = None,
    duration: str | None = None,
    size: str | None = None,
    seed: int | None = None,
    sets: list[str] | tuple[str, ...] = (),
    profile: str | None = None,
    transport: str | None = None,
) -> dict[str, Any]:
    """Return a copy of ``doc`` with the command line's overrides applied, ``--set`` last.

    ``profile`` is every flow's TCP profile (``"rfc"`` or ``"linux"``: ``[flows.tcp] profile``,
    docs/scenarios.md); it comes first, so that ``tcp`` names a controller under it (``cubic``
    runs as ``cubic-linux`` under ``linux``, over Linux's recovery).
    """
    doc = copy.deepcopy(doc)
    if profile is not None:
        _set_profile(doc, profile)
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
    if transport is not None:
        _set_transport(doc, transport)
    for assignment in sets:
        path, sep, value = assignment.partition("=")
        if not sep or not path.strip():
            raise ScenarioError(f"--set {assignment!r}: expected path=value")
        set_path(doc, path.strip(), _parse_value(value.strip()))
    return doc


def resolve(doc: dict[str, Any]) -> dict[str, Any]:
    """The scenario as the core resolves it: every default filled, and listed in ``defaults``.

    Link names, each flow's route (data and ACK hops), each link direction's rate, delay, queue
    and analytic loss rate (``loss_rate``, and ``packet_loss_rate`` after link-layer ARQ), each
    flow's TCP settings, base RTT and bottleneck: the format is documented in
    ``docs/scenarios.md`` ("The resolved scenario") and ``farlink-core/src/scenario/resolved.rs``.
    Anything a model, a report or the command line needs about a scenario is read from here,
    never derived again in Python. Raises ``ScenarioError`` (``path``, ``message``) for a
    scenario the core refuses.
    """
    from farlink import _core

    return json.loads(_core.resolve_scenario(to_core_json(doc)))


def _unjsonable(node: Any, path: str) -> tuple[str, str] | None:
    """The path of the first value in ``node`` that JSON cannot carry, and what to say of it;
    None if there is none. TOML has such values: NaN and infinity, dates and times."""
    if isinstance(node, float):
        if math.isfinite(node):
            return None
        return path, f"expected a finite number, got {node} (nan and inf are not accepted)"
    if isinstance(node, (datetime.date, datetime.time)):  # a datetime is a date too
        return path, (
            f"{node.isoformat()} is a TOML date or time, which no field of a scenario takes "
            '(write durations as strings such as "7h32min", seeds as integers)'
        )
    if isinstance(node, dict):
        steps = [(f"{path}.{k}" if path else str(k), v) for k, v in node.items()]
    elif isinstance(node, list):
        steps = [(f"{path}[{i}]", v) for i, v in enumerate(node)]
    elif node is None or isinstance(node, (str, int, bool)):
        return None
    else:
        return path, f"a {type(node).__name__} is not a value"
    return next((x for p, v in steps if (x := _unjsonable(v, p)) is not None), None)


def check_document(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` unchanged; :class:`ScenarioError` names the first value JSON cannot carry."""
    found = _unjsonable(doc, "")
    if found is not None:
        path, message = found
        if not path:
            raise ScenarioError(f"scenario: {message}")
        raise _field_error(path, message)
    return doc


def to_core_json(doc: dict[str, Any]) -> str:
    """The document as the JSON text the core reads, refusing with its path a value JSON cannot
    carry (NaN and infinity, TOML dates and times) before the core sees an unreadable document.
    Schedule files and mahimahi traces still named by path are read in (farlink.schedules).
    """
    # Files named after loading (--set, a document built in code): relative to this folder.
    doc = inline_files(copy.deepcopy(doc), Path.cwd())
    return json.dumps(check_document(doc), allow_nan=False)


# Fields of the resolved scenario the core derives rather than reads, less the bookkeeping
# ones that `resolved_rows` leaves out.
_BOOKKEEPING = ("defaults", "from_profile", "resolved_schema_version", "scenario_schema")
_DERIVED = set(DERIVED_FIELDS) - set(_BOOKKEEPING)


def resolved_rows(resolved: dict[str, Any]) -> list[tuple[str, Any, str]]:
    """The resolved scenario as ``(path, value, origin)`` rows in document order.

    ``origin`` is ``"default"`` for a path the core filled, ``"profile"`` for one the flow's TCP
    profile set (``profile = "linux"``: its fields, and a ``cc`` it ran its model of),
    ``"derived"`` for a value the core computed (routes, rates, loss rates, RTTs), else ``""``
    (given by the document). A route is one row per direction, its hops written ``link fwd``.
    """
    defaults = set(resolved.get("defaults", ()))
    from_profile = set(resolved.get("from_profile", ()))
    rows: list[tuple[str, Any, str]] = []

    def walk(node: Any, path: str, derived: bool) -> None:
        if isinstance(node, dict) and "link" in node and "direction" in node and derived:
            rows.append((path, f"{node['link']} {node['direction']}", "derived"))
        elif isinstance(node, dict):
            for key, value in node.items():
                if not path and key in _BOOKKEEPING:
                    continue
                walk(value, f"{path}.{key}" if path else key, derived or key in _DERIVED)
        elif isinstance(node, list) and any(isinstance(v, dict) for v in node):
            if derived and all(isinstance(v, dict) and "link" in v for v in node):
                hops = ", ".join(f"{v['link']} {v['direction']}" for v in node)
                rows.append((path, hops, "derived"))
                return
            for i, value in enumerate(node):
                walk(value, f"{path}[{i}]", derived)
        else:
            origin = "derived" if derived else ""
            if not derived and path in defaults:
                origin = "default"
            elif not derived and path in from_profile:
                origin = "profile"
            rows.append((path, node, origin))

    walk(resolved, "", False)
    return rows
