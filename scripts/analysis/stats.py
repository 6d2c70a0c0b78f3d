# SPDX-License-Identifier: GPL-2.0
"""Medians, ratios and percentiles, with intervals whose coverage is what
they say (or, where no interval can reach the level asked for, with the
level they do reach).

median_ci(x): distribution-free CI for the median from order statistics:
the interval [x(l), x(n+1-l)] (1-based ranks) with the largest l whose
coverage P(l <= B <= n-l), B ~ Binomial(n, 1/2), is at least `conf`.  With
fewer than 6 values no such interval reaches 95 %: the result is then
[min, max] with its real (lower) coverage, which the report prints.

os_quantile(x, q), p95(x): the sample quantile as the order statistic it
is, x(ceil(q n)): for the 95th percentile that is the largest value for
every n < 20 (no interval is attached: n = 4 or 10 runs say nothing about
a 95th percentile beyond "the slowest run").

hl_ratio(num, den): ratio of two configurations in one cell (independent
samples, completion times: positive, right-skewed).  The Hodges-Lehmann
estimator on logs: the n*m differences D = log(x_i) - log(y_j), sorted; the
point estimate is exp(median D), the interval [exp D(k), exp D(nm+1-k)].
If the two configurations' times differ by a constant factor (a shift of
the logs, any distribution), #{D < true log ratio} has the null
distribution of the Mann-Whitney U statistic, so the interval covers with
probability exactly 1 - 2 P(U <= k-1); k is the largest for which that is
>= conf, from the exact distribution of U (mw_counts: the coefficients of
the Gaussian binomial [n+m choose n]_q, integer arithmetic, no scipy).  When
even k = 1, [min D, max D], falls short (n = m = 2: 1 - 2/6 = 66.7 %; n = 2,
m = 3: 80 %; n = m = 3: 90 %), that widest interval is returned with its
true coverage, which the report prints next to it.  If the two
configurations differ in spread as well (not a pure factor), the interval
is approximate: simulated with SD(log) 0.1 against 0.3, n = m = 4 covers
95.1 % instead of 97.1 %, n = m = 8 93.5 % instead of 95.0 %.

gm_ratio(num_groups, den_groups): summary across the cells of one
direction x cross setting (loads 1, 2, 3, 5 and the series): the geometric
mean of the per-cell Hodges-Lehmann ratios, i.e. the mean of K log ratios.
Its interval is a normal interval on that mean whose standard error
combines the cells' own distribution-free intervals: each cell's standard
error is the half-width of its exact interval over the normal quantile of
that interval's true coverage (the usual distribution-free estimate of a
Hodges-Lehmann estimator's standard error from its rank-based interval),
SE = sqrt(sum se_c^2) / K, interval exp(mean +- z SE), z the normal
quantile of conf.  Why this and not the alternatives (all simulated with
the setup of the table below):
  - the stratified percentile bootstrap (the previous ratio_ci, of sums of
    cell medians) resamples 2 or 4 values per cell: the resampled medians
    take a handful of values and the intervals are too short, 68 % (K = 1)
    and 77 % (K = 5) at n = 2, 93 % at n = 4, K = 1 (lognormal, SD(log)
    0.16), and zero-width intervals appear;
  - a Welch t interval with the cells' sample variances of the logs,
    around the Hodges-Lehmann estimates, undercovers: 94.0-94.4 %
    (lognormal) and 92.9-93.6 % (0.2 + Exp(1)) at n = 4 to 10, K = 5,
    because the sample variance describes the mean, not the HL estimator,
    and is itself skewed for skewed data;
  - the interval-width standard error keeps the cells' robustness (an
    outlying run widens its cell's interval only as far as its rank
    allows) and covers at least 95 % for K = 5 at every n >= 2 on all four
    test distributions (table).
With one cell the summary is that cell's exact interval.  For K >= 2 the
level returned is `conf` unless the simulation found less (GM_COVERAGE_95:
the lowest over the four distributions of DISTS, by the smallest group
size over the cells and K): then it is that simulated level, and the
report prints it.  Below 94.5 % are only n = 2 with K = 2 (93 %) and a
cell with a single run with K <= 4 (85-93 %).

Simulated coverage in % (20000 replicates each, seed SEED; `python3 -m
analysis.stats` in scripts/ reprints it and the table GM_COVERAGE_95).  HL:
the per-cell interval (n = m runs each; share covering, mean over the 5
cells), its exact level in parentheses; GM: the summary over K = 5 cells
with true ratios 1.0, 0.8, 1.2, 1.5, 0.7, nominal 95 %:

  distribution (scale 1)        n = m = 2   4      8      10
  (exact HL level)                (66.7)  (97.1) (95.0) (95.7)
  lognormal, SD(log) 0.16     HL   66.7    97.1   95.0   95.7
                              GM   97.3    98.6   96.2   96.1
  0.6 + 0.4 Exp(1)            HL   66.8    97.1   95.1   95.7
                              GM   96.9    98.6   96.9   96.5
  lognormal + 0.8 w.p. 0.2    HL   66.7    97.2   95.0   95.7
  (an RTO in one run of 5)    GM   96.9    98.0   97.3   97.6
  0.2 + Exp(1)                HL   66.8    97.1   95.1   95.7
                              GM   97.0    98.2   96.1   95.6

The lowest GM coverage over these four at K = 2 .. 8 cells: n = 2:
92.9-97.8 %, n = 3 .. 10: 95.4-98.3 %; n = 15 .. 30 (5000 replicates):
94.7-97.3 %.

jain(xs): Jain's fairness index (sum x)^2 / (n sum x^2).
"""
import functools
import math
from math import comb
from statistics import NormalDist

import numpy as np

SEED = 20160601

# Lowest simulated coverage of gm_ratio's nominal 95 % interval over the
# four distributions of DISTS, by the smallest group size n over the cells
# (n = 1: with 2, 3 or 4 in the other group) and the number of cells
# K = 2 .. 8; 20000 replicates each (print_coverage_table).  gm_coverage
# reports entries below 0.945 instead of 95 % (0.5 points of simulation
# noise); group sizes between rows use the row below, more than 8 cells
# the last column.
GM_COVERAGE_95 = {
    1: (0.854, 0.904, 0.932, 0.945, 0.948, 0.950, 0.953),
    2: (0.929, 0.951, 0.961, 0.969, 0.973, 0.976, 0.978),
    3: (0.955, 0.966, 0.973, 0.974, 0.977, 0.979, 0.979),
    4: (0.971, 0.976, 0.978, 0.980, 0.982, 0.982, 0.983),
    5: (0.962, 0.969, 0.970, 0.972, 0.972, 0.973, 0.974),
    6: (0.958, 0.964, 0.962, 0.964, 0.965, 0.967, 0.966),
    8: (0.955, 0.957, 0.959, 0.961, 0.961, 0.962, 0.961),
    10: (0.954, 0.958, 0.956, 0.956, 0.957, 0.958, 0.959),
}


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


def os_rank(n, q):
    """1-based rank ceil(q n) of the order statistic that is the sample
    q-quantile (the inverse of the empirical distribution function)."""
    return min(n, max(1, math.ceil(round(q * n, 9))))


def os_quantile(x, q):
    """-> (x(ceil(q n)), rank); (nan, 0) for no values."""
    x = sorted(x)
    if not x:
        return float("nan"), 0
    r = os_rank(len(x), q)
    return x[r - 1], r


def p95(x):
    """-> (95th percentile, its rank): the largest value for n < 20."""
    return os_quantile(x, 0.95)


@functools.lru_cache(maxsize=None)
def mw_counts(n, m):
    """Exact null distribution of the Mann-Whitney U statistic of samples of
    n and m: a tuple c, c[u] = number of the comb(n+m, n) equally likely
    orderings with U = u (u = 0 .. n m).  The coefficients of the Gaussian
    binomial prod_{i=1..n} (1 - q^(m+i)) / (1 - q^i), as power series
    truncated at degree n m (exact: the result is a polynomial of that
    degree and each step only looks at lower degrees)."""
    if n < 0 or m < 0:
        raise ValueError("negative sample size")
    N = n * m
    c = [1] + [0] * N
    for i in range(1, n + 1):
        a = m + i
        for j in range(N, a - 1, -1):     # times (1 - q^a)
            c[j] -= c[j - a]
        for j in range(i, N + 1):         # over (1 - q^i)
            c[j] += c[j - i]
    return tuple(c)


def hl_level(n, m, conf=0.95):
    """-> (k, coverage): the interval [D(k), D(nm+1-k)] of the n m sorted
    differences with the largest k whose coverage 1 - 2 P(U <= k-1) is at
    least conf; k = 1 (the widest) with its lower coverage if none is."""
    if n < 1 or m < 1:
        return 0, 0.0
    c = mw_counts(n, m)
    tot = comb(n + m, n)
    best, cum = None, 0
    for k in range(1, (n * m + 1) // 2 + 1):
        cum += c[k - 1]
        cov = 1 - 2 * cum / tot
        if cov >= conf - 1e-12:
            best = (k, cov)
        else:
            break
    return best or (1, 1 - 2 * c[0] / tot)


def _hl_logs(lx, ly, conf):
    """Vectorised core of hl_ratio: lx (R, n), ly (R, m) logs of R
    independent replicates -> (estimate, low, high) arrays of shape (R,)
    on the log scale, and the interval's coverage."""
    lx = np.asarray(lx, float)
    ly = np.asarray(ly, float)
    R, n = lx.shape
    m = ly.shape[1]
    k, cov = hl_level(n, m, conf)
    d = (lx[:, :, None] - ly[:, None, :]).reshape(R, n * m)
    d.sort(axis=1)
    return np.median(d, axis=1), d[:, k - 1], d[:, n * m - k], cov


def _logs(x):
    x = np.asarray(list(x), float)
    if x.size == 0 or not np.all(x > 0) or not np.all(np.isfinite(x)):
        return None
    return np.log(x)


def hl_ratio(num, den, conf=0.95):
    """-> (ratio, low, high, coverage) of num over den (positive values):
    Hodges-Lehmann estimate on logs and its exact interval."""
    lx, ly = _logs(num), _logs(den)
    nan = float("nan")
    if lx is None or ly is None:
        return nan, nan, nan, 0.0
    est, lo, hi, cov = _hl_logs(lx[None, :], ly[None, :], conf)
    return float(np.exp(est[0])), float(np.exp(lo[0])), float(np.exp(hi[0])), cov


def gm_coverage(n, K, conf=0.95):
    """The level gm_ratio claims for K cells whose smallest group has n
    values: conf, or the simulated level where that is lower (for
    conf = 0.95 only; other levels were not simulated and are nominal)."""
    if K <= 1 or conf != 0.95 or n < 1:
        return conf
    row = GM_COVERAGE_95[max(k for k in GM_COVERAGE_95 if k <= n)]
    sim = row[min(K, 8) - 2]
    return sim if sim < conf - 0.005 else conf


def _gm_logs(cells, conf):
    """Vectorised core of gm_ratio: cells = [(lx (R, n_c), ly (R, m_c))]
    -> (estimate, low, high) arrays on the log scale and the claimed
    coverage."""
    K = len(cells)
    parts = [_hl_logs(lx, ly, conf) for lx, ly in cells]
    if K == 1:
        return parts[0]
    est = sum(p[0] for p in parts) / K
    var = 0
    for _, lo, hi, cov in parts:
        if cov <= 0:      # n = m = 1: no interval at all
            nan = np.full(est.shape, np.nan)
            return est, nan, nan, 0.0
        var = var + ((hi - lo) / (2 * NormalDist().inv_cdf((1 + cov) / 2))) ** 2
    z = NormalDist().inv_cdf((1 + conf) / 2)
    half = z * np.sqrt(var) / K
    nmin = min(min(lx.shape[1], ly.shape[1]) for lx, ly in cells)
    return est, est - half, est + half, gm_coverage(nmin, K, conf)


def gm_ratio(num_groups, den_groups, conf=0.95):
    """-> (ratio, low, high, coverage): geometric mean over the cells of the
    per-cell Hodges-Lehmann ratios num_groups[i] / den_groups[i], with the
    interval of the module docstring.  One cell: hl_ratio."""
    nan = float("nan")
    cells = []
    for g, h in zip(num_groups, den_groups):
        lx, ly = _logs(g), _logs(h)
        if lx is None or ly is None:
            return nan, nan, nan, 0.0
        cells.append((lx[None, :], ly[None, :]))
    if not cells or len(num_groups) != len(den_groups):
        return nan, nan, nan, 0.0
    est, lo, hi, cov = _gm_logs(cells, conf)
    return float(np.exp(est[0])), float(np.exp(lo[0])), float(np.exp(hi[0])), cov


def gm_shift(num_groups, den_groups, conf=0.95):
    """-> (shift, low, high, coverage): the mean over the cells of the
    per-cell Hodges-Lehmann shifts num_groups[i] - den_groups[i] (the
    median of all pairwise differences) and its interval, combined as
    gm_ratio() combines log ratios but on the values themselves: for
    counts or shares that can be 0, where a ratio cannot be taken.  The
    coverage is gm_ratio()'s (the same procedure on a location model)."""
    nan = float("nan")
    cells = []
    for g, h in zip(num_groups, den_groups):
        x = np.asarray(list(g), float)
        y = np.asarray(list(h), float)
        if x.size == 0 or y.size == 0 or not (np.all(np.isfinite(x)) and
                                              np.all(np.isfinite(y))):
            return nan, nan, nan, 0.0
        cells.append((x[None, :], y[None, :]))
    if not cells or len(num_groups) != len(den_groups):
        return nan, nan, nan, 0.0
    est, lo, hi, cov = _gm_logs(cells, conf)
    return float(est[0]), float(lo[0]), float(hi[0]), cov


def goal_verdict(lo, hi, at_least=None, at_most=None):
    """A goal judged on a whole interval [lo, hi]: "met" when all of it
    meets the goal (value >= at_least, or <= at_most), "NOT met" when
    none of it does, "undecided" otherwise."""
    if (at_least is None) == (at_most is None):
        raise ValueError("goal_verdict: give at_least or at_most")
    if at_least is not None:
        ok, bad = lo >= at_least, hi < at_least
    else:
        ok, bad = hi <= at_most, lo > at_most
    if ok:
        return "met"
    if bad:
        return "NOT met"
    return "undecided"


def jain(xs):
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 when all are equal,
    1/n when one takes everything."""
    xs = [float(x) for x in xs]
    sq = sum(x * x for x in xs)
    return sum(xs) ** 2 / (len(xs) * sq) if sq else float("nan")


# Completion-time shapes for the simulations (scale 1; multiplied by a
# cell's scale and, for the numerator, its true ratio: a pure factor).
DISTS = {
    # the measured runs: SD of log completion time about 0.16
    "lognormal": lambda rng, s: np.exp(0.16 * rng.standard_normal(s)),
    # a floor plus an exponential queueing/loss tail
    "shifted-exp": lambda rng, s: 0.6 + 0.4 * rng.standard_exponential(s),
    # bimodal: one run in five loses a round trip to an RTO
    "rto": lambda rng, s: (np.exp(0.16 * rng.standard_normal(s))
                           + 0.8 * (rng.random(s) < 0.2)),
    # strongly skewed
    "exp": lambda rng, s: 0.2 + rng.standard_exponential(s),
}
SIM_SCALES = (0.4, 0.9, 1.5, 3.0, 1.7, 0.6, 2.2, 1.2)
SIM_RATIOS = (1.0, 0.8, 1.2, 1.5, 0.7, 1.1, 0.9, 1.3)


def simulate(dist, n, m=None, K=1, reps=10000, seed=SEED, conf=0.95):
    """Coverage by simulation: K cells of n numerator and m denominator runs
    drawn from DISTS[dist] with the true ratios SIM_RATIOS, `reps`
    replicates through the code hl_ratio and gm_ratio use.  -> dict:
    hl (share of per-cell intervals covering their true ratio), hl_claimed,
    gm (share of summary intervals covering the geometric mean of the true
    ratios), gm_claimed."""
    m = m or n
    rng = np.random.default_rng(seed)
    draw = DISTS[dist]
    cells, hits, hl_cov = [], [], None
    for c in range(K):
        s, r = SIM_SCALES[c % len(SIM_SCALES)], SIM_RATIOS[c % len(SIM_RATIOS)]
        lx = np.log(s * r * draw(rng, (reps, n)))
        ly = np.log(s * draw(rng, (reps, m)))
        _, lo, hi, hl_cov = _hl_logs(lx, ly, conf)
        hits.append(np.mean((lo <= math.log(r)) & (math.log(r) <= hi)))
        cells.append((lx, ly))
    _, lo, hi, gm_cov = _gm_logs(cells, conf)
    theta = sum(math.log(SIM_RATIOS[c % len(SIM_RATIOS)]) for c in range(K)) / K
    return {"hl": float(np.mean(hits)), "hl_claimed": hl_cov,
            "gm": float(np.mean((lo <= theta) & (theta <= hi))), "gm_claimed": gm_cov}


def print_coverage_table(reps=20000, ns=(1, 2, 3, 4, 5, 6, 8, 10), ks=range(2, 9)):
    """The simulations behind the docstring's table and GM_COVERAGE_95."""
    for dist in DISTS:
        for n in (2, 4, 8, 10):
            s = simulate(dist, n, K=5, reps=reps)
            print("%-12s n=%-2d HL %.3f (claimed %.3f)  GM(K=5) %.3f" % (
                dist, n, s["hl"], s["hl_claimed"], s["gm"]))
    print("lowest GM coverage over %s:" % ", ".join(DISTS))
    for n in ns:
        print("n=%-2d " % n + " ".join("K=%d %.3f" % (K, min(
            simulate(d, n, m, K=K, reps=reps)["gm"]
            for d in DISTS for m in ((2, 3, 4) if n == 1 else (n,)))) for K in ks))


if __name__ == "__main__":
    print_coverage_table()
