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
is approximate: MIXTURES["spread-0.1-vs-0.3"] in coverage.json, SD(log)
0.1 against 0.3, covers about 2 points less than its label.

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
the setup of simulate(), K = 5 cells of different scales and ratios):
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
    allows) and covers at least 95 % for K = 5 at every n >= 2 on every
    shape of DISTS (coverage.json).
With one cell the summary is that cell's exact interval.  For K >= 2 the
level returned is `conf` unless the simulation found less (GM_COVERAGE_95:
the lowest over the shapes of DISTS, by the smallest group size over the
cells and K): then it is that simulated level, and the report prints it.
Below 94.5 % are a cell with a single run (78-90 %), n = 2 with K <= 4
(92-94 %) and n = 3 with K <= 3 (90-93 %), all under the mixtures (the
two-mode shape's interval widths, from 1 to 3 runs, say little about its
standard error; the other shapes keep K = 2 .. 4 at or above 92 %).

The simulated coverages (the per-cell HL interval, the GM summary, the
order-statistic median interval, under each shape of DISTS, and the table
GM_COVERAGE_95) are not typed in here: `scripts/ecnproxy stats
--coverage --write` simulates them, seeded and deterministic,
into coverage.json beside this file, which this module reads;
scripts/tests/test_stats.py re-simulates them with fewer replicates and
fails if the committed file is not what the simulation gives (within
Monte-Carlo error).  DISTS has, besides a lognormal, a shifted
exponential, a lognormal with an RTO in one run of five and a strongly
skewed exponential, the mixtures this testbed produces: "two-mode" (80 %
of runs about 1.0, 20 % about 1.3: 10 s and 13 s when a flow draws a 3 s
SYN retransmission) and "syn-lottery" (+ 10 % in 10 % of the runs, + 30 %
in 5 %: a 1 s or 3 s SYN retransmission of a 10 s transfer).  In DISTS
both configurations of a cell share the shape (one is the other scaled),
where the HL interval is exact whatever the shape; and the median
interval is exact for any continuous distribution.  MIXTURES
(mixture_coverage) has the testbed's other case: a handshake delay that
adds seconds rather than scaling, possibly drawn in a different share of
the two configurations' runs.  There the HL interval is approximate: at
n = m = 8 (labelled 95.0 %) it covers what it estimates (the median of
log X - log Y) in 94.5-95.2 % of the replicates, at 4 and 10 within 0.6
points of its label; and it estimates the handshakes' share as well as
the transfers': the transfer ratio itself it covers in only 89.6-89.9 %
(n = 8, 10) where the shares differ.  The report says so next to its intervals, and
prints the transfer-only ratio (handshakes taken out) beside each one.

heterogeneity(cells): whether the cells of a pooled figure agree:
Cochran's Q on the cells' log ratios (or shifts), each weighted by the
inverse square of the standard error above (half-width of its interval
over the normal quantile of its level), against chi-square with K - 1
degrees of freedom (chi2_sf); the cells disagree when p < HET_ALPHA.  Its
false-alarm rate (cells with one common ratio, simulated, in
coverage.json) is higher than HET_ALPHA for small n: the rank intervals'
widths are noisy standard errors; a false alarm only withholds a pooled
figure.

jain(xs): Jain's fairness index (sum x)^2 / (n sum x^2).
"""
import functools
import json
import math
import os
import sys
from math import comb
from statistics import NormalDist

import numpy as np

SEED = 20160601
# simulated coverages (coverage_tables(), `scripts/ecnproxy stats
# --coverage --write`): never typed in by hand
COVERAGE_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "coverage.json")
# the cells of a pooled figure disagree when Cochran's Q has p below this
HET_ALPHA = 0.05
# the level every interval is labelled with; one below it decides nothing
CONF = 0.95
# the grid of GM_COVERAGE_95: smallest group size n (rows) by cells K
GM_NS = (1, 2, 3, 4, 5, 6, 8, 10)
GM_KS = tuple(range(2, 9))
COVERAGE_REPS = 20000


def load_coverage(path=COVERAGE_FILE):
    """coverage.json as written by coverage_tables(); None if absent."""
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def gm_table(cov):
    """{n: (coverage at K = 2 .. 8)} from a coverage_tables() result."""
    return {int(n): tuple(v) for n, v in cov["gm_coverage_95"].items()}


COVERAGE = load_coverage()
# Lowest simulated coverage of gm_ratio's nominal 95 % interval over the
# distributions of DISTS, by the smallest group size n over the cells
# (n = 1: with 2, 3 or 4 in the other group) and the number of cells
# K = 2 .. 8 (coverage.json).  gm_coverage reports entries below 0.945
# instead of 95 % (0.5 points of simulation noise); group sizes between
# rows use the row below, more than 8 cells the last column.
GM_COVERAGE_95 = gm_table(COVERAGE) if COVERAGE else {}


def median(x):
    x = sorted(x)
    n = len(x)
    if n == 0:
        return float("nan")
    return x[n // 2] if n % 2 else (x[n // 2 - 1] + x[n // 2]) / 2


def os_coverage(n, l):
    """Coverage of [x(l), x(n+1-l)] for the median of n values."""
    return sum(comb(n, k) for k in range(l, n - l + 1)) / 2 ** n


def median_level(n, conf=0.95):
    """-> (l, coverage): the order-statistic interval [x(l), x(n+1-l)] of
    n values with the largest l whose coverage is at least conf; l = 1
    (the widest) with its lower coverage if none is (0 for n = 1)."""
    if n < 2:
        return 1, 0.0
    best = 1
    for l in range(1, n // 2 + 1):
        if os_coverage(n, l) >= conf:
            best = l
        else:
            break
    return best, os_coverage(n, best)


def median_ci(x, conf=0.95):
    """-> (median, low, high, coverage)."""
    x = sorted(x)
    n = len(x)
    if n == 0:
        nan = float("nan")
        return nan, nan, nan, 0.0
    l, cov = median_level(n, conf)
    return median(x), x[l - 1], x[n - l], cov


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
    if not GM_COVERAGE_95:
        raise RuntimeError("stats: no %s; make it with `scripts/ecnproxy stats "
                           "--coverage --write`" % COVERAGE_FILE)
    row = GM_COVERAGE_95[max(k for k in GM_COVERAGE_95 if k <= n)]
    sim = row[min(K, 8) - 2]
    return sim if sim < conf - 0.005 else conf


def interval_se(lo, hi, cov):
    """The standard error an interval [lo, hi] of level cov implies: its
    half-width over the normal quantile of (1 + cov) / 2 (the usual
    distribution-free estimate of a Hodges-Lehmann estimator's standard
    error from its rank interval); arrays or numbers."""
    return (hi - lo) / (2 * NormalDist().inv_cdf((1 + cov) / 2))


def _gm_logs(cells, conf, claim=True):
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
        var = var + interval_se(lo, hi, cov) ** 2
    z = NormalDist().inv_cdf((1 + conf) / 2)
    half = z * np.sqrt(var) / K
    nmin = min(min(lx.shape[1], ly.shape[1]) for lx, ly in cells)
    return est, est - half, est + half, gm_coverage(nmin, K, conf) if claim else None


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


def _gamma_q(a, x):
    """Regularized upper incomplete gamma function Q(a, x) (series below
    a + 1, Lentz's continued fraction above; relative error ~1e-14)."""
    if x <= 0:
        return 1.0
    lead = math.exp(-x + a * math.log(x) - math.lgamma(a))
    if x < a + 1:
        ap, term, tot = a, 1.0 / a, 1.0 / a
        for _ in range(10000):
            ap += 1
            term *= x / ap
            tot += term
            if abs(term) < abs(tot) * 1e-16:
                break
        return max(0.0, 1.0 - tot * lead)
    tiny = 1e-300
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = 1 / (d if abs(d) > tiny else tiny)
        c = b + an / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        if abs(d * c - 1) < 1e-16:
            break
    return lead * h


def chi2_sf(x, df):
    """P(X > x) for X ~ chi-square with df degrees of freedom."""
    if df <= 0:
        raise ValueError("chi2_sf: df must be positive")
    return _gamma_q(df / 2, x / 2)


def chi2_isf(p, df):
    """x with chi2_sf(x, df) = p (bisection)."""
    lo, hi = 0.0, 1.0
    while chi2_sf(hi, df) > p:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if chi2_sf(mid, df) > p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def cochran_q(est, se):
    """Cochran's Q of K estimates with standard errors (arrays whose last
    axis is the cells): sum w (est - weighted mean)^2, w = 1 / se^2."""
    est = np.asarray(est, float)
    w = 1 / np.maximum(np.asarray(se, float), 1e-12) ** 2
    mean = (w * est).sum(axis=-1, keepdims=True) / w.sum(axis=-1, keepdims=True)
    return (w * (est - mean) ** 2).sum(axis=-1)


def heterogeneity(cells, log=True, alpha=HET_ALPHA):
    """Do the cells of a pooled figure agree?  cells: [(estimate, low,
    high, coverage)], ratios (log=True: compared as log ratios) or shifts.
    -> {"k", "min", "max" (of the cell estimates), "q", "df", "p",
    "agree"}: Cochran's Q with each cell's standard error from its own
    interval (interval_se), p from chi-square with K - 1 degrees of
    freedom; agree is p >= alpha, True for one cell, None when a cell has
    no interval (a group of one run)."""
    ests = [c[0] for c in cells]
    out = {"k": len(cells), "min": min(ests) if ests else None,
           "max": max(ests) if ests else None, "q": None, "df": len(cells) - 1,
           "p": None, "agree": True}
    if len(cells) < 2:
        return out
    if any(c[3] <= 0 or any(math.isnan(x) for x in c[:3]) for c in cells):
        out["agree"] = None
        return out
    f = math.log if log else float
    th = [f(c[0]) for c in cells]
    se = [interval_se(f(c[1]), f(c[2]), c[3]) for c in cells]
    q = float(cochran_q(th, se))
    p = chi2_sf(q, len(cells) - 1)
    out.update(q=q, p=p, agree=bool(p >= alpha))
    return out


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
    # the 8 MB runs of the paper profile: 1-4 % spread (SD(log) 0.02), and
    # one run in five 30 % slower (10 s and 13 s: a 3 s SYN retransmission)
    "two-mode": lambda rng, s: (np.exp(0.02 * rng.standard_normal(s))
                                * (1 + 0.3 * (rng.random(s) < 0.2))),
    # the same with the handshake lottery's two prizes: + 10 % (1 s of a
    # 10 s transfer) in 10 % of the runs, + 30 % (3 s) in 5 %
    "syn-lottery": lambda rng, s: _lottery(rng, s),
}


def _lottery(rng, s):
    u = rng.random(s)
    return np.exp(0.02 * rng.standard_normal(s)) * (1 + 0.1 * (u < 0.10)
                                                    + 0.3 * (u >= 0.95))


SIM_SCALES = (0.4, 0.9, 1.5, 3.0, 1.7, 0.6, 2.2, 1.2)
SIM_RATIOS = (1.0, 0.8, 1.2, 1.5, 0.7, 1.1, 0.9, 1.3)
# draws behind a population median or Hodges-Lehmann functional
POP_DRAWS = 2000000


@functools.lru_cache(maxsize=None)
def pop_median(dist, seed=SEED):
    """The median of DISTS[dist] (scale 1), from POP_DRAWS seeded draws
    (relative error about 1e-4, far inside any interval simulated)."""
    return float(np.median(DISTS[dist](np.random.default_rng(seed + 1), POP_DRAWS)))


def simulate(dist, n, m=None, K=1, reps=10000, seed=SEED, conf=0.95, ratios=None):
    """Coverage by simulation: K cells of n numerator and m denominator runs
    drawn from DISTS[dist] with the true ratios SIM_RATIOS (or `ratios`),
    `reps` replicates through the code hl_ratio, gm_ratio, median_ci and
    heterogeneity use.  -> dict: hl (share of per-cell intervals covering
    their true ratio), hl_claimed, gm (share of summary intervals covering
    the geometric mean of the true ratios), gm_claimed, med (share of the
    denominators' median intervals covering their population median),
    med_claimed, q_reject (share of replicates whose cells heterogeneity()
    calls disagreeing; with one common ratio, its false-alarm rate)."""
    m = m or n
    ratios = ratios or SIM_RATIOS
    rng = np.random.default_rng(seed)
    draw = DISTS[dist]
    pm = math.log(pop_median(dist))
    cells, hits, mhits, hl_cov = [], [], [], None
    l, med_cov = median_level(m, conf)
    for c in range(K):
        s, r = SIM_SCALES[c % len(SIM_SCALES)], ratios[c % len(ratios)]
        lx = np.log(s * r * draw(rng, (reps, n)))
        ly = np.log(s * draw(rng, (reps, m)))
        _, lo, hi, hl_cov = _hl_logs(lx, ly, conf)
        hits.append(np.mean((lo <= math.log(r)) & (math.log(r) <= hi)))
        ys = np.sort(ly, axis=1)
        if m >= 2:
            mhits.append(np.mean((ys[:, l - 1] <= math.log(s) + pm)
                                 & (math.log(s) + pm <= ys[:, m - l])))
        cells.append((lx, ly))
    _, lo, hi, gm_cov = _gm_logs(cells, conf, claim=bool(GM_COVERAGE_95))
    theta = sum(math.log(ratios[c % len(ratios)]) for c in range(K)) / K
    out = {"hl": float(np.mean(hits)), "hl_claimed": hl_cov,
           "gm": float(np.mean((lo <= theta) & (theta <= hi))), "gm_claimed": gm_cov,
           "med": float(np.mean(mhits)) if mhits else None, "med_claimed": med_cov}
    if K >= 2 and hl_cov > 0:
        parts = [_hl_logs(lx, ly, conf) for lx, ly in cells]
        est = np.stack([p[0] for p in parts], axis=1)
        se = np.stack([interval_se(p[1], p[2], p[3]) for p in parts], axis=1)
        q = cochran_q(est, se)
        out["q_reject"] = float(np.mean(q > chi2_isf(HET_ALPHA, K - 1)))
    return out


# The testbed's other mixture: a handshake delay that adds seconds to a
# transfer rather than scaling it, so the two configurations of a cell no
# longer differ by a factor (and may draw slow handshakes at different
# rates).  base: transfer seconds; sd: SD(log) of the transfer; r: the
# numerator's transfer time over the denominator's; num, den: (added
# seconds, probability) of each configuration's slow handshakes; sd_den:
# the denominator's SD(log) where it differs.
MIXTURES = {
    "3s-handshake-20%": {
        "note": "80 % of runs about 10 s, 20 % about 13 s (a 3 s SYN retransmission) "
                "in both configurations; the numerator's transfer 5 % slower",
        "base": 10.0, "sd": 0.02, "r": 1.05, "num": ((3.0, 0.2),), "den": ((3.0, 0.2),)},
    "handshakes-30%-vs-10%": {
        "note": "1 s or 3 s SYN retransmissions in 30 % of the numerator's runs "
                "(15 % each) and 10 % of the denominator's; transfers equal (10 s)",
        "base": 10.0, "sd": 0.02, "r": 1.0,
        "num": ((1.0, 0.15), (3.0, 0.15)), "den": ((1.0, 0.05), (3.0, 0.05))},
    "handshakes-0%-vs-20%": {
        "note": "no slow handshake in the numerator's runs, a 3 s one in 20 % of the "
                "denominator's; the numerator's transfer 5 % slower",
        "base": 10.0, "sd": 0.02, "r": 1.05, "num": (), "den": ((3.0, 0.2),)},
    "9s-tail-40%": {
        "note": "40 % of runs 9.5 s slower (about 22.5 s and 32 s, as the 3-flow "
                "uploads with a late flow), in both; the numerator's transfer 2 % slower",
        "base": 22.5, "sd": 0.02, "r": 1.02, "num": ((9.5, 0.4),), "den": ((9.5, 0.4),)},
    "spread-0.1-vs-0.3": {
        "note": "no slow handshakes, but the numerator's runs spread less (SD(log) 0.1) "
                "than the denominator's (0.3): not a factor either",
        "base": 10.0, "sd": 0.1, "sd_den": 0.3, "r": 1.0, "num": (), "den": ()},
}
MIX_NS = (4, 8, 10)


def mixture_draw(rng, shape, base, sd, r, extras):
    """Completion times: r * base * exp(sd Z), plus each (seconds, p) of
    extras with its probability (exclusive)."""
    t = r * base * np.exp(sd * rng.standard_normal(shape))
    u = rng.random(shape)
    cum = 0.0
    for add, p in extras:
        t = t + add * ((u >= cum) & (u < cum + p))
        cum += p
    return t


@functools.lru_cache(maxsize=None)
def mixture_truth(name, seed=SEED):
    """-> (Hodges-Lehmann functional: median of log X - log Y, median of
    log X) of MIXTURES[name], from POP_DRAWS seeded draws of each."""
    mx = MIXTURES[name]
    rng = np.random.default_rng(seed + 2)
    x = np.log(mixture_draw(rng, POP_DRAWS, mx["base"], mx["sd"], mx["r"], mx["num"]))
    y = np.log(mixture_draw(rng, POP_DRAWS, mx["base"], mx.get("sd_den", mx["sd"]), 1.0,
                            mx["den"]))
    return float(np.median(x - y)), float(np.median(x))


def mixture_coverage(name, n, reps=10000, seed=SEED, conf=0.95):
    """Coverage under MIXTURES[name] with n runs of each configuration.
    -> dict: hl (share of HL intervals covering the HL functional, what the
    estimate estimates), hl_claimed (its exact level under a pure
    factor), hl_transfer (share covering r, the transfer ratio, which a
    handshake lottery biases), ratio (the HL functional, exp), med and
    med_claimed (the numerator's order-statistic median interval against
    its population median)."""
    mx = MIXTURES[name]
    theta, pmed = mixture_truth(name, seed)
    rng = np.random.default_rng(seed)
    lx = np.log(mixture_draw(rng, (reps, n), mx["base"], mx["sd"], mx["r"], mx["num"]))
    ly = np.log(mixture_draw(rng, (reps, n), mx["base"], mx.get("sd_den", mx["sd"]), 1.0,
                             mx["den"]))
    _, lo, hi, cov = _hl_logs(lx, ly, conf)
    l, mcov = median_level(n, conf)
    xs = np.sort(lx, axis=1)
    lr = math.log(mx["r"])
    return {"hl": float(np.mean((lo <= theta) & (theta <= hi))), "hl_claimed": cov,
            "hl_transfer": float(np.mean((lo <= lr) & (lr <= hi))),
            "ratio": math.exp(theta),
            "med": float(np.mean((xs[:, l - 1] <= pmed) & (pmed <= xs[:, n - l]))),
            "med_claimed": mcov}


def _r4(d):
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in d.items()}


def coverage_tables(reps=COVERAGE_REPS, seed=SEED, log=None):
    """Every simulated coverage the module and the report use (the content
    of coverage.json), seeded and deterministic:
      by_dist[dist][n]: simulate(dist, n, K=5): HL, GM, median interval,
        n = m = 2, 4, 8, 10;
      gm_coverage_95[n]: GM_COVERAGE_95's row, the lowest GM coverage over
        DISTS (and, for n = 1, m = 2, 3, 4) at K = 2 .. 8;
      het_false_alarm[dist][n][K]: heterogeneity()'s rate of "disagree"
        when every cell has the ratio 1.2;
      mixtures[name][n]: mixture_coverage(name, n)."""
    out = {"generated_by": "scripts/ecnproxy stats --coverage --write",
           "seed": seed, "reps": reps, "dists": list(DISTS), "het_alpha": HET_ALPHA,
           "by_dist": {}, "gm_coverage_95": {}, "het_false_alarm": {}, "mixtures": {}}
    for dist in DISTS:
        out["by_dist"][dist] = {}
        for n in (2, 4, 8, 10):
            r = simulate(dist, n, K=5, reps=reps, seed=seed)
            del r["q_reject"], r["gm_claimed"]     # power against SIM_RATIOS; the table's
            out["by_dist"][dist][str(n)] = _r4(r)
        if log:
            log("by_dist %s" % dist)
    for n in GM_NS:
        out["gm_coverage_95"][str(n)] = [round(min(
            simulate(d, n, m, K=K, reps=reps, seed=seed)["gm"]
            for d in DISTS for m in ((2, 3, 4) if n == 1 else (n,))), 4) for K in GM_KS]
        if log:
            log("gm n=%d" % n)
    for dist in DISTS:
        out["het_false_alarm"][dist] = {str(n): {str(K): round(simulate(
            dist, n, K=K, reps=reps, seed=seed, ratios=(1.2,))["q_reject"], 4)
            for K in (2, 4)} for n in (2, 4, 8)}
    for name in MIXTURES:
        out["mixtures"][name] = {str(n): _r4(mixture_coverage(name, n, reps, seed))
                                 for n in MIX_NS}
        out["mixtures"][name]["note"] = MIXTURES[name]["note"]
    return out


def mc_tolerance(p, reps_a, reps_b, z=4.5):
    """How far two independent simulated coverages near p (of reps_a and
    reps_b replicates) may differ by chance: z standard deviations."""
    p = min(max(p, 0.01), 0.99)
    return z * math.sqrt(p * (1 - p) * (1 / reps_a + 1 / reps_b))


def compare_coverage(committed, fresh, z=4.5):
    """Every entry of `fresh` (coverage_tables() with its own reps) that
    differs from `committed` by more than Monte-Carlo error allows (or is
    missing): a list of 'path: committed vs fresh' strings, empty when
    they agree.  Exact quantities (the claimed levels, the HL functional)
    must agree to 1e-3."""
    bad = []
    ra, rb = committed["reps"], fresh["reps"]
    if committed.get("dists") != fresh.get("dists"):
        bad.append("dists: %s vs %s" % (committed.get("dists"), fresh.get("dists")))

    def walk(a, b, path):
        if isinstance(b, dict):
            for k, v in b.items():
                if not isinstance(a, dict) or k not in a:
                    bad.append("%s/%s: missing" % (path, k))
                else:
                    walk(a[k], v, "%s/%s" % (path, k))
        elif isinstance(b, list):
            if not isinstance(a, list) or len(a) != len(b):
                bad.append("%s: %r vs %r" % (path, a, b))
            else:
                for i, (x, y) in enumerate(zip(a, b)):
                    walk(x, y, "%s[%d]" % (path, i))
        elif isinstance(b, float) and isinstance(a, (int, float)):
            exact = path.endswith(("_claimed", "/ratio"))
            tol = 1e-3 if exact else mc_tolerance(a, ra, rb, z)
            if abs(a - b) > tol:
                bad.append("%s: %.4f vs %.4f (tolerance %.4f)" % (path, a, b, tol))
        elif a != b and path not in ("/reps", "/generated_by"):
            bad.append("%s: %r vs %r" % (path, a, b))
    for key in ("by_dist", "gm_coverage_95", "het_false_alarm", "mixtures"):
        walk(committed.get(key), fresh[key], "/" + key)
    return bad


def print_coverage(cov):
    """The tables of a coverage_tables() result, as text."""
    print("Coverage in %% (%d replicates each, seed %d); HL: per-cell interval "
          "(exact level), GM: summary over K = 5 cells, median: order-statistic "
          "interval (exact level)" % (cov["reps"], cov["seed"]))
    print("%-14s %-6s %s" % ("distribution", "", "   ".join("n = %-5s" % n for n in (2, 4, 8, 10))))
    for dist, rows in cov["by_dist"].items():
        for key, lab in (("hl", "HL"), ("gm", "GM"), ("med", "median")):
            print("%-14s %-6s %s" % (dist if key == "hl" else "", lab, "   ".join(
                "%5.1f%-4s" % (100 * r[key], " (%2.0f)" % (100 * r[key + "_claimed"])
                              if key != "gm" else "") for r in rows.values())))
    print("\nGM_COVERAGE_95 (lowest GM coverage over %s), K = %s:" % (
        ", ".join(cov["dists"]), " ".join(str(k) for k in GM_KS)))
    for n, row in cov["gm_coverage_95"].items():
        print("  %2s: %s" % (n, " ".join("%.3f" % x for x in row)))
    print("\nheterogeneity(): share of 'disagree' when all cells share one ratio "
          "(alpha %.2f), K = 2 / 4:" % cov["het_alpha"])
    for dist, rows in cov["het_false_alarm"].items():
        print("  %-14s %s" % (dist, "   ".join("n = %s: %.3f / %.3f" % (n, r["2"], r["4"])
                                               for n, r in rows.items())))
    print("\nmixtures (n = m runs): HL covers its functional / the transfer ratio "
          "(exact level); median interval (exact level)")
    for name, rows in cov["mixtures"].items():
        print("  %s: %s" % (name, rows["note"]))
        for n, r in rows.items():
            if n == "note":
                continue
            print("    n = %-3s HL %.1f / %.1f %% (%.1f), ratio %.4f; median %.1f %% (%.1f)" % (
                n, 100 * r["hl"], 100 * r["hl_transfer"], 100 * r["hl_claimed"], r["ratio"],
                100 * r["med"], 100 * r["med_claimed"]))


def main(argv):
    if not argv or argv[0] != "--coverage":
        print("usage: scripts/ecnproxy stats --coverage [--write] [--reps N]",
              file=sys.stderr)
        return 2
    reps = int(argv[argv.index("--reps") + 1]) if "--reps" in argv else COVERAGE_REPS
    cov = coverage_tables(reps, log=lambda s: print("... " + s, file=sys.stderr))
    print_coverage(cov)
    if "--write" in argv:
        with open(COVERAGE_FILE, "w") as f:
            json.dump(cov, f, indent=1)
            f.write("\n")
        print("wrote %s" % COVERAGE_FILE)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
