# SPDX-License-Identifier: GPL-2.0
"""Confidence intervals on known data."""
import math

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


def test_ratio_ci_identical_groups():
    r, lo, hi = stats.ratio_ci([[1.0, 2.0, 3.0]], [[1.0, 2.0, 3.0]])
    assert r == 1.0
    assert lo <= 1.0 <= hi


def test_ratio_ci_separated_and_deterministic():
    a = [[2.0, 2.1, 1.9, 2.05, 1.95]]
    b = [[1.0, 1.05, 0.95, 1.02, 0.98]]
    r1 = stats.ratio_ci(a, b)
    r2 = stats.ratio_ci(a, b)
    assert r1 == r2  # fixed seed
    assert r1[0] == pytest.approx(2.0)
    assert 1.8 < r1[1] <= 2.0 <= r1[2] < 2.2


def test_ratio_ci_stratified_sum_of_medians():
    num = [[1.0, 1.0, 1.0], [10.0, 10.0, 10.0]]
    den = [[2.0, 2.0, 2.0], [20.0, 20.0, 20.0]]
    r, lo, hi = stats.ratio_ci(num, den)
    assert (r, lo, hi) == pytest.approx((0.5, 0.5, 0.5))


def test_ratio_ci_empty_group():
    assert all(math.isnan(v) for v in stats.ratio_ci([[]], [[1.0]]))
