"""Bench statistics against known values (Student t table, a hand-worked Welch example)."""

import math

import pytest

from ds41f.bench import stats


@pytest.mark.parametrize("df, expected", [(1, 12.706), (2, 4.303), (5, 2.571), (10, 2.228), (30, 2.042),
                                          (120, 1.980)])
def test_t_quantile_matches_the_table(df, expected):
    assert stats.t_quantile(0.975, df) == pytest.approx(expected, abs=1e-3)


def test_t_quantile_takes_fractional_dof_and_is_symmetric():
    assert stats.t_quantile(0.975, 5) < stats.t_quantile(0.975, 4.5) < stats.t_quantile(0.975, 4)
    assert stats.t_quantile(0.025, 7) == pytest.approx(-stats.t_quantile(0.975, 7))


def test_ci95():
    m, half = stats.ci95([10.0, 12.0, 11.0, 13.0])
    assert m == 11.5 and half == pytest.approx(3.182446 * math.sqrt(5 / 3) / 2, rel=1e-5)
    assert stats.ci95([5.0])[1] == math.inf


def test_welch_worked_example():
    # means 100 and 110; variances 2/3 each; se = sqrt(2/3/4 * 2); dof 6
    change, half, dof = stats.welch([100, 101, 99, 100], [110, 111, 109, 110])
    assert change == pytest.approx(-100 / 11)
    assert dof == pytest.approx(6.0)
    assert half == pytest.approx(2.446912 * math.sqrt(1 / 3) / 110 * 100, rel=1e-5)


def test_precision_targeted_sampling_stops_at_the_target_or_the_cap():
    tight = [100.0, 100.1, 99.9]
    loose = [100.0, 130.0, 70.0]
    assert stats.precise_enough(tight, 0.02, 3, 10)
    assert not stats.precise_enough(tight[:2], 0.02, 3, 10)  # the minimum comes first
    assert not stats.precise_enough(loose, 0.02, 3, 10)
    assert stats.precise_enough(loose * 4, 0.02, 3, 10)  # the cap


def test_regression_needs_significance_and_the_tolerance():
    assert stats.regression(-5.0, 1.0, 3.0)
    assert not stats.regression(-5.0, 6.0, 3.0)  # the interval reaches zero
    assert not stats.regression(-2.0, 0.5, 3.0)  # significant but within the tolerance
    assert not stats.regression(4.0, 1.0, 3.0)
