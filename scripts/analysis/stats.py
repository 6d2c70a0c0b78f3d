# SPDX-License-Identifier: GPL-2.0
"""Medians and their confidence intervals.

median_ci(x): distribution-free CI for the median from order statistics:
the interval [x(l), x(n+1-l)] (1-based ranks) with the largest l whose
coverage P(l <= B <= n-l), B ~ Binomial(n, 1/2), is at least `conf`.  With
fewer than 6 values no such interval reaches 95 %: the result is then
[min, max] with its real (lower) coverage, which the report prints.

ratio_ci(num_groups, den_groups): percentile bootstrap (fixed seed) of
sum(median(num_i)) / sum(median(den_i)), every group resampled on its own
(stratified).  With one group each, that is the ratio of two medians.
"""
from math import comb

import numpy as np

SEED = 20160601
N_BOOT = 4000


def median(x):
    x = sorted(x)
    n = len(x)
    if n == 0:
        return float("nan")
    return x[n // 2] if n % 2 else (x[n // 2 - 1] + x[n // 2]) / 2


def os_coverage(n, l):
    """Coverage of [x(l), x(n+1-l)] for the median of n values."""
    return sum(comb(n, k) for k in range(l, n - l + 1)) / 2 ** n


def median_ci(x, conf=0.95):
    """-> (median, low, high, coverage)."""
    x = sorted(x)
    n = len(x)
    if n == 0:
        nan = float("nan")
        return nan, nan, nan, 0.0
    if n == 1:
        return x[0], x[0], x[0], 0.0
    best = 1
    for l in range(1, n // 2 + 1):
        if os_coverage(n, l) >= conf:
            best = l
        else:
            break
    cov = os_coverage(n, best)
    return median(x), x[best - 1], x[n - best], cov


def ratio_ci(num_groups, den_groups, conf=0.95, n_boot=N_BOOT, seed=SEED):
    """-> (ratio, low, high) of sum of medians, stratified bootstrap."""
    num_groups = [np.asarray(g, float) for g in num_groups]
    den_groups = [np.asarray(g, float) for g in den_groups]
    if not num_groups or any(len(g) == 0 for g in num_groups + den_groups):
        nan = float("nan")
        return nan, nan, nan
    point = (sum(np.median(g) for g in num_groups)
             / sum(np.median(g) for g in den_groups))
    rng = np.random.default_rng(seed)

    def boot(groups):
        tot = np.zeros(n_boot)
        for g in groups:
            idx = rng.integers(0, len(g), size=(n_boot, len(g)))
            tot += np.median(g[idx], axis=1)
        return tot

    r = boot(num_groups) / boot(den_groups)
    a = (1 - conf) / 2
    lo, hi = np.quantile(r, [a, 1 - a])
    return float(point), float(lo), float(hi)
