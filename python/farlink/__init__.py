"""farlink: predict, simulate and emulate TCP over far links.

Three engines answer for one scenario: ``model`` (closed-form models, :mod:`farlink.models`),
``sim`` (the packet-level engine of the Rust core) and ``emulate`` (real kernel TCP through the
same link models in real time).
"""

from farlink._core import __version__
from farlink.results import Result
from farlink.sim import simulate

__all__ = ["Result", "__version__", "simulate"]
