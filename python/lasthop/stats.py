"""The one percentile definition of lasthop: nearest rank, as in the Rust core.

The ``q``-th percentile of ``n`` samples is the smallest sample such that at least ``q`` % of the
samples are less than or equal to it::

    rank = ceil(q / 100 · n), clamped to 1 … n        percentile = sorted[rank − 1]

so it is always one of the samples (no interpolation): ``q = 0`` gives the minimum, ``q = 100`` the
maximum, and no samples give ``None``. The rank is computed in float64 as ``q / 100.0 * n``, exactly
as the core's ``stats::percentile`` does, so Python and Rust
agree to the sample even where that product rounds up (``q = 99.9``, ``n = 1000`` gives rank 1000:
``99.9 / 100 * 1000`` is ``999.0000000000001``).

The flows table's ``latency_p99_ms``, the experiments' rows and the report's time series all use it.
One bound keeps a long run's memory flat: the core keeps a flow's latencies (and RTT samples) one by
one up to 65,536 of them (``stats::samples::EXACT_SAMPLES``); past that its percentiles come from an
HDR histogram with three significant digits (within 0.1 % of this definition, never above the exact
maximum; the mean, maximum and counts stay exact). A flow with that many samples in its measurement
window gets ``percentiles_exact = false`` in ``flows.parquet``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is imported where it is used: `lasthop run` needs none of it to start
    import numpy as np
    import numpy.typing as npt

__all__ = ["binned_percentiles", "jain", "percentile", "percentiles", "rank_index"]

Samples = Any
"""Anything numpy takes as a 1-D array of numbers (``numpy.typing.ArrayLike``)."""


def rank_index(n: npt.ArrayLike, q: float) -> npt.NDArray[np.int64]:
    """The 0-based index into ``n`` sorted samples of their ``q``-th percentile (elementwise for an
    array of sample counts, each ≥ 1)."""
    import numpy as np

    counts = np.asarray(n, dtype=np.int64)
    rank = np.ceil(q / 100.0 * counts.astype(np.float64))
    return np.clip(rank, 1, counts).astype(np.int64) - 1


def percentile(samples: Samples, q: float) -> float | None:
    """The nearest-rank ``q``-th percentile (0 ≤ q ≤ 100) of ``samples`` (in any order); ``None``
    when there are none."""
    return percentiles(samples, (q,))[0]


def percentiles(samples: Samples, qs: Sequence[float]) -> list[float | None]:
    """:func:`percentile` for each of ``qs``, sorting once."""
    import numpy as np

    values = np.sort(np.asarray(samples, dtype=np.float64).ravel())
    if values.size == 0:
        return [None for _ in qs]
    return [float(values[int(rank_index(values.size, q))]) for q in qs]


def binned_percentiles(bins: npt.NDArray[np.int64], values: npt.NDArray[np.float64], nbins: int,
                       qs: tuple[float, ...]) -> list[npt.NDArray[np.float64]]:
    """Per bin ``0 … nbins − 1`` (``bins[i]`` is the bin of ``values[i]``; negative bins are left out),
    the ``q``-th percentile of each of ``qs``, nearest rank; NaN for empty bins."""
    import numpy as np

    keep = bins >= 0
    bins, values = bins[keep], values[keep]
    out = [np.full(nbins, np.nan) for _ in qs]
    if values.size == 0:
        return out
    order = np.lexsort((values, bins))
    v = values[order]
    counts = np.bincount(bins, minlength=nbins)[:nbins]
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    nz = counts > 0
    for arr, q in zip(out, qs):
        arr[nz] = v[starts[nz] + rank_index(counts[nz], q)]
    return out


def jain(values: Sequence[float]) -> float | None:
    """Jain's fairness index (Σx)² / (n · Σx²) of non-negative values: 1 when all are equal, 1/n when one
    takes everything; ``None`` when there is nothing to share (no values, or all zero)."""
    sq = sum(x * x for x in values)
    return sum(values) ** 2 / (len(values) * sq) if sq > 0 else None
