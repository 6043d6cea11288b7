"""A scenario document as the JSON the core reads, refusing what JSON cannot carry.

TOML has values JSON has not: dates and times (``seed = 07:32:00``, ``--set seed=1979-05-27``),
and floats NaN and ±inf that ``json.dumps`` would write as tokens no JSON parser accepts. Each is
refused here with the path of the value, as the core's own validation names its places.
"""

from __future__ import annotations

import datetime
import json
import math
from typing import Any

from farlink.scenario import ScenarioError

__all__ = ["check_document", "document_json"]


def _path(parent: str, step: str | int) -> str:
    if isinstance(step, int):
        return f"{parent}[{step}]"
    return f"{parent}.{step}" if parent else step


def _check(value: Any, where: str) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _check(item, _path(where, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check(item, _path(where, index))
    elif isinstance(value, (datetime.date, datetime.time)):
        # datetime.datetime is a datetime.date too.
        raise ScenarioError(
            f"{where or 'scenario'}: {value.isoformat()} is a TOML date or time, which no field "
            'of a scenario takes (write durations as strings such as "7h32min", seeds as '
            "integers)"
        )
    elif isinstance(value, float) and not math.isfinite(value):
        raise ScenarioError(f"{where or 'scenario'}: {value} is not a finite number")
    elif not isinstance(value, (str, int, float, bool)) and value is not None:
        raise ScenarioError(f"{where or 'scenario'}: a {type(value).__name__} is not a value")


def check_document(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` unchanged; :class:`ScenarioError` names the first value JSON cannot carry."""
    _check(doc, "")
    return doc


def document_json(doc: dict[str, Any]) -> str:
    """``doc`` as JSON text for the core; :class:`ScenarioError` names any value JSON lacks."""
    return json.dumps(check_document(doc), allow_nan=False)
