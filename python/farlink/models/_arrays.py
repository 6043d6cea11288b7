"""Input checking and broadcasting shared by the closed-form models.

Every model takes scalars or NumPy arrays, broadcasts them against each other and returns an array
of the broadcast shape (a NumPy scalar when every input was a scalar). Invalid parameters raise
``ValueError`` naming the parameter and the accepted range, so a sweep over a million points fails
with a message, not with a silent NaN.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]


def broadcast(**named: ArrayLike) -> list[FloatArray]:
    """Convert each argument to float64 and broadcast them to one shape."""
    arrays = [np.asarray(v, dtype=np.float64) for v in named.values()]
    try:
        return list(np.broadcast_arrays(*arrays))
    except ValueError:
        shapes = ", ".join(f"{k}{np.shape(v)}" for k, v in named.items())
        raise ValueError(f"parameters cannot be broadcast together: {shapes}") from None


def require(condition: Any, name: str, expected: str) -> None:
    """Raise ``ValueError`` unless ``condition`` holds everywhere."""
    if not np.all(condition):
        raise ValueError(f"{name} must be {expected}")


def probability(name: str, p: FloatArray) -> None:
    require((p > 0) & (p < 1), name, "a probability strictly between 0 and 1")


def positive(name: str, x: FloatArray) -> None:
    require(x > 0, name, "positive and finite (NaN is not accepted)")
    require(np.isfinite(x), name, "positive and finite (NaN is not accepted)")


def non_negative(name: str, x: FloatArray) -> None:
    require(x >= 0, name, "zero or positive (NaN is not accepted)")
    require(np.isfinite(x), name, "zero or positive and finite")


def window(name: str, w: FloatArray) -> None:
    """Receiver-window limits may be +inf (no limit) but must exceed one packet."""
    require(w >= 1, name, "at least one packet, or unlimited (inf; none on the command line)")


def result(x: FloatArray) -> Any:
    """Return 0-d results as NumPy scalars, others as arrays."""
    return x[()] if x.ndim == 0 else x
