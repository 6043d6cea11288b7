"""farlink: predict, simulate and emulate TCP over far links.

Three engines answer for one scenario: ``model`` (closed-form models, :mod:`farlink.models`),
``sim`` (the packet-level engine of the Rust core) and ``emulate`` (real kernel TCP through the
same link models in real time).

Every fault of a scenario (a file that cannot be read, a field the core refuses, a bad
override) raises :class:`ScenarioError`, a ``ValueError``; ``err.path`` names the field at
fault, when one is.
"""

from farlink._core import ScenarioError, __version__
from farlink.results.result import Result
from farlink.sim import simulate

__all__ = ["Result", "ScenarioError", "__version__", "simulate"]
