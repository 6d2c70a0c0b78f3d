# SPDX-License-Identifier: GPL-2.0
"""Confidence intervals on known data, and their coverage by simulation."""
import itertools
import math
from math import comb

import numpy as np
import pytest

from analysis import stats


def test_median():
    assert stats.median([3, 1, 2]) == 2
    assert stats.median([4, 1, 3, 2]) == 2.5
    assert math.isnan(stats.median([]))


def test_coverage_known_values():
    # P(2 <= B <= 8), B ~ Bin(10, 1/2) = 1 - 2 * (1 + 10) / 1024
    assert stats.os_coverage(10, 2) == pytest.approx(1 - 22 / 1024)
    assert stats.os_coverage(6, 1) == pytest.approx(1 - 2 / 64)
    assert stats.os_coverage(5, 1) == pytest.approx(1 - 2 / 32)


def test_median_ci_n10():
    x = [10, 1, 9, 2, 8, 3, 7, 4, 6, 5]
    med, lo, hi, cov = stats.median_ci(x)
    assert med == 5.5
    assert (lo, hi) == (2, 9)  # ranks 2 and 9
    assert cov == pytest.approx(0.978515625)


def test_median_ci_n20():
    # the textbook interval for n = 20: ranks 6 and 15 (coverage 95.9 %)
    x = list(range(1, 21))
    med, lo, hi, cov = stats.median_ci(x)
    assert (lo, hi) == (6, 15)
    assert cov == pytest.approx(0.9586, abs=1e-4)


def test_median_ci_small_n_reports_real_coverage():
    med, lo, hi, cov = stats.median_ci([3.0, 1.0, 2.0])
    assert (med, lo, hi) == (2.0, 1.0, 3.0)
    assert cov == pytest.approx(0.75)
    assert stats.median_ci([4.0])[3] == 0.0


def test_p95_is_an_order_statistic():
    assert stats.p95([3.0, 1.0, 2.0]) == (3.0, 3)          # n < 20: the largest
    assert stats.p95(list(range(1, 11))) == (10, 10)
    assert stats.p95(list(range(1, 20))) == (19, 19)
    assert stats.p95(list(range(1, 21))) == (19, 19)        # ceil(0.95 * 20) = 19
    assert stats.p95(list(range(1, 41))) == (38, 38)
    assert stats.os_quantile([5, 1, 4, 2, 3], 0.5) == (3, 3)
    v, r = stats.p95([])
    assert math.isnan(v) and r == 0


def test_mw_counts_known_values():
    # Gaussian binomials [4 choose 2]_q and [6 choose 3]_q
    assert stats.mw_counts(2, 2) == (1, 1, 2, 1, 1)
    assert stats.mw_counts(3, 3) == (1, 1, 2, 3, 3, 3, 3, 2, 1, 1)
    assert stats.mw_counts(1, 4) == (1, 1, 1, 1, 1)
    assert stats.mw_counts(0, 3) == (1,)
    c = stats.mw_counts(30, 30)
    assert sum(c) == comb(60, 30) and c == c[::-1]


@pytest.mark.parametrize("n,m", [(2, 3), (3, 4), (4, 4), (2, 6), (5, 3)])
def test_mw_counts_brute_force(n, m):
    # U = number of (x, y) pairs with x after y, over all orderings
    counts = [0] * (n * m + 1)
    for xs in itertools.combinations(range(n + m), n):
        ys = [p for p in range(n + m) if p not in xs]
        counts[sum(x > y for x in xs for y in ys)] += 1
    assert stats.mw_counts(n, m) == tuple(counts)


def test_hl_level_matches_tables():
    # two-sided 5 % critical values of U: n = m = 5: 2, 6: 5, 8: 13, 10: 23
    # (the interval is [D(crit+1), D(nm-crit)])
    assert stats.hl_level(5, 5)[0] == 3
    assert stats.hl_level(6, 6)[0] == 6
    assert stats.hl_level(8, 8)[0] == 14
    k, cov = stats.hl_level(10, 10)
    assert k == 24 and cov == pytest.approx(1 - 2 * sum(stats.mw_counts(10, 10)[:24])
                                            / comb(20, 10))
    assert cov >= 0.95
    # too few runs for 95 %: the widest interval and its true level
    assert stats.hl_level(2, 2) == (1, pytest.approx(2 / 3))
    assert stats.hl_level(2, 3) == (1, pytest.approx(0.8))
    assert stats.hl_level(3, 3) == (1, pytest.approx(0.9))
    assert stats.hl_level(4, 4) == (1, pytest.approx(1 - 2 / 70))


def test_hl_ratio_hand_example():
    # ratios x/y: 2/1, 2/2, 4/1, 4/2 = 2, 1, 4, 2: median 2, [min, max] = [1, 4]
    r, lo, hi, cov = stats.hl_ratio([2.0, 4.0], [1.0, 2.0])
    assert (r, lo, hi) == pytest.approx((2.0, 1.0, 4.0))
    assert cov == pytest.approx(2 / 3)
    # identical samples: 1, an interval around it, never of zero width
    r, lo, hi, cov = stats.hl_ratio([1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0])
    assert r == pytest.approx(1.0) and lo < 1 < hi
    assert cov == pytest.approx(1 - 2 / 70)


def test_hl_ratio_is_scale_equivariant_and_separates():
    a = [2.0, 2.1, 1.9, 2.05, 1.95, 2.02]
    b = [1.0, 1.05, 0.95, 1.02, 0.98, 1.01]
    r, lo, hi, cov = stats.hl_ratio(a, b)
    assert 1.8 < lo <= r <= hi < 2.2 and cov >= 0.95
    r2, lo2, hi2, _ = stats.hl_ratio([10 * x for x in a], [10 * x for x in b])
    assert (r2, lo2, hi2) == pytest.approx((r, lo, hi))
    ri, loi, hii, _ = stats.hl_ratio(b, a)
    assert (ri, loi, hii) == pytest.approx((1 / r, 1 / hi, 1 / lo))


def test_hl_ratio_bad_input():
    for num, den in (([], [1.0]), ([1.0], []), ([0.0, 1.0], [1.0]), ([-1.0], [1.0])):
        r, lo, hi, cov = stats.hl_ratio(num, den)
        assert math.isnan(r) and math.isnan(lo) and cov == 0.0


def test_gm_ratio_geometric_mean():
    # per-cell HL ratios 2 and 8 (every pairwise ratio equal): geometric mean 4
    num = [[2.0, 2.0, 2.0], [8.0, 8.0, 8.0]]
    den = [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    r, lo, hi, cov = stats.gm_ratio(num, den)
    assert (r, lo, hi) == pytest.approx((4.0, 4.0, 4.0))
    # the estimate is the geometric mean of the per-cell estimates
    num = [[1.0, 1.3, 1.1, 1.2], [3.0, 2.5, 2.9, 3.3], [0.5, 0.6, 0.55, 0.52]]
    den = [[1.0, 1.1, 0.9, 1.05], [2.0, 2.2, 1.9, 2.1], [0.6, 0.7, 0.65, 0.61]]
    per = [stats.hl_ratio(x, y)[0] for x, y in zip(num, den)]
    r, lo, hi, cov = stats.gm_ratio(num, den)
    assert r == pytest.approx(math.prod(per) ** (1 / 3))
    assert lo < r < hi and cov == 0.95
    # one cell: that cell's exact interval
    assert stats.gm_ratio(num[:1], den[:1]) == pytest.approx(stats.hl_ratio(num[0], den[0]))
    assert math.isnan(stats.gm_ratio([[1.0], []], [[1.0], [1.0]])[0])
    assert math.isnan(stats.gm_ratio([], [])[0])


def test_gm_ratio_reports_simulated_level_when_short():
    assert stats.gm_ratio([[1.0, 1.1], [2.0, 2.1]], [[1.0, 1.2], [2.2, 2.0]])[3] == \
        pytest.approx(0.929)
    assert stats.gm_coverage(2, 5) == 0.95
    assert stats.gm_coverage(7, 5) == 0.95      # row n = 6
    assert stats.gm_coverage(1, 3) < 0.95
    assert stats.gm_coverage(2, 40) == 0.95


def test_goal_verdict_both_directions():
    # at least: the whole interval at or above the goal is met
    assert stats.goal_verdict(0.99, 1.02, at_least=0.99) == "met"
    assert stats.goal_verdict(0.90, 0.989, at_least=0.99) == "NOT met"
    assert stats.goal_verdict(0.98, 1.00, at_least=0.99) == "undecided"
    # at most: the whole interval at or below the goal is met
    assert stats.goal_verdict(1.0, 1.2, at_most=1.2) == "met"
    assert stats.goal_verdict(1.21, 3.0, at_most=1.2) == "NOT met"
    assert stats.goal_verdict(1.1, 1.3, at_most=1.2) == "undecided"
    with pytest.raises(ValueError):
        stats.goal_verdict(1, 2)
    with pytest.raises(ValueError):
        stats.goal_verdict(1, 2, at_least=1, at_most=2)


def test_gm_shift_known_values():
    # one cell: the median of the pairwise differences, with zeros allowed
    v, lo, hi, cov = stats.gm_shift([[0, 1, 2]], [[10, 11, 12]])
    assert v == -10 and lo <= v <= hi and cov == pytest.approx(0.9)
    # two cells: the mean of the per-cell shifts
    v, lo, hi, cov = stats.gm_shift([[0, 1, 2, 3], [5, 6, 7, 8]],
                                    [[1, 2, 3, 4], [2, 3, 4, 5]])
    assert v == pytest.approx((-1 + 3) / 2) and lo < v < hi
    assert math.isnan(stats.gm_shift([[]], [[1]])[0])
    assert math.isnan(stats.gm_shift([[1, float("nan")]], [[1]])[0])


@pytest.mark.parametrize("n", [4, 8])
def test_gm_shift_coverage_by_simulation(n):
    # a location model with skewed noise (counts are not normal), K = 4
    # cells of different levels and shifts: the interval covers the mean
    # shift as often as it claims (4000 replicates: MC SD 0.0034)
    rng = np.random.default_rng(7)
    shifts, levels = (-3.0, 0.0, 2.0, -10.0), (5.0, 50.0, 20.0, 100.0)
    theta = sum(shifts) / len(shifts)
    hits, claimed = 0, None
    for _ in range(4000):
        num = [lv + sh + rng.exponential(4.0, n) for lv, sh in zip(levels, shifts)]
        den = [lv + rng.exponential(4.0, n) for lv in levels]
        _, lo, hi, claimed = stats.gm_shift(num, den)
        hits += lo <= theta <= hi
    assert hits / 4000 >= claimed - 0.015


def test_jain():
    assert stats.jain([1, 1, 1, 1]) == pytest.approx(1.0)
    assert stats.jain([1, 0, 0, 0]) == pytest.approx(0.25)
    assert stats.jain([1, 2]) == pytest.approx(9 / 10)
    assert stats.jain([5.0, 5.0]) == pytest.approx(1.0)
    assert math.isnan(stats.jain([0, 0]))


# Coverage by simulation, through the code the report uses.  10000
# replicates: the Monte Carlo SD of a coverage near 95 % is 0.0022, so the
# tolerance 0.01 is 4.5 SDs (and the seed is fixed).
REPS = 10000
TOL = 0.01


@pytest.mark.parametrize("dist", ["lognormal", "shifted-exp"])
@pytest.mark.parametrize("n", [4, 8, 10])
def test_coverage_at_least_claimed(dist, n):
    s = stats.simulate(dist, n, K=5, reps=REPS)
    assert s["hl_claimed"] >= 0.95 and s["gm_claimed"] == 0.95
    assert s["hl"] >= s["hl_claimed"] - TOL
    assert s["gm"] >= s["gm_claimed"] - TOL


@pytest.mark.parametrize("dist", ["lognormal", "shifted-exp"])
def test_true_coverage_n2_matches_simulation(dist):
    s = stats.simulate(dist, 2, K=2, reps=REPS)
    assert s["hl_claimed"] == pytest.approx(2 / 3)
    assert s["hl"] == pytest.approx(s["hl_claimed"], abs=0.02)    # MC SD 0.0047
    assert s["gm_claimed"] < 0.95
    assert s["gm"] == pytest.approx(s["gm_claimed"], abs=0.015)
    s = stats.simulate(dist, 2, K=5, reps=REPS)
    assert s["gm"] >= s["gm_claimed"] - TOL


def test_unequal_groups_coverage():
    s = stats.simulate("lognormal", 3, 4, K=5, reps=REPS)
    assert s["hl_claimed"] == pytest.approx(1 - 2 / 35)   # the widest: 94.3 %
    assert s["hl"] >= s["hl_claimed"] - TOL
    assert s["gm"] >= s["gm_claimed"] - TOL
