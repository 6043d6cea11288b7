"""Sets of sequence-number ranges kept as sorted, disjoint ``[start, end)`` intervals: what the
loss estimate and the RTO inference track of the bytes a capture has shown."""

from __future__ import annotations

from bisect import bisect_left

__all__ = ["merge_interval"]


def merge_interval(intervals: list[tuple[int, int]], s: int, e: int) -> None:
    """Merge ``[s, e)`` into the sorted, disjoint ``intervals`` (touching ones are joined)."""
    i = bisect_left(intervals, (s,))
    if i and intervals[i - 1][1] >= s:
        i -= 1
        s = intervals[i][0]
    j = i
    while j < len(intervals) and intervals[j][0] <= e:
        e = max(e, intervals[j][1])
        j += 1
    intervals[i:j] = [(s, e)]
