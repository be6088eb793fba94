"""Bootstrap: means of resamples and percentile intervals.
"""
from __future__ import annotations

import numpy as np

# resamples at most (config bootstrap.samples' schema maximum, the CLIs' --bootstrap): bootstrap_means
# holds an index array of resamples x items, 100,000 x 500 problems = 400 MB; 2e9 would never fit
MAX_BOOTSTRAP = 100_000


def bootstrap_means(values: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Means of n_boot resamples (with replacement) of `values` (1-D) → shape (n_boot,)."""
    values = np.asarray(values, dtype=float)
    if len(values) == 0:
        return np.full(n_boot, np.nan)
    idx = rng.integers(0, len(values), size=(n_boot, len(values)))
    return values[idx].mean(axis=1)


def interval(reps: np.ndarray, confidence: float) -> list[float]:
    """The central `confidence` percentile interval of bootstrap replicates (NaN ignored)."""
    lo, hi = np.nanpercentile(reps, [50 * (1 - confidence), 100 - 50 * (1 - confidence)])
    return [float(lo), float(hi)]
