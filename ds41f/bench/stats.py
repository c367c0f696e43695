"""Statistics of the bench: means with Student-t 95% intervals, Welch comparisons, when to stop sampling.

Pure Python (no SciPy on the controller): the t quantile comes from the regularized incomplete beta
function by bisection, which also serves Welch's non-integer degrees of freedom.
"""

from __future__ import annotations

import math


def mean(xs):
    return sum(xs) / len(xs)


def stdev(xs):
    """Sample standard deviation (n - 1); 0 for fewer than two samples."""
    if len(xs) < 2:
        return 0.0
    m = mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def _betacf(a, b, x):
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-14:
            break
    return h


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t, df):
    x = df / (df + t * t)
    tail = 0.5 * betainc(df / 2.0, 0.5, x)
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p, df):
    """The p quantile of Student's t with df (possibly fractional) degrees of freedom."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must be in (0, 1)")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def ci95(xs):
    """(mean, half-width of the 95% interval); the half-width is inf below two samples."""
    m = mean(xs)
    if len(xs) < 2:
        return m, math.inf
    return m, t_quantile(0.975, len(xs) - 1) * stdev(xs) / math.sqrt(len(xs))


def precise_enough(xs, precision, min_samples, max_samples):
    """Stop sampling a point: at the cap, or past the minimum once the 95% interval is within precision of the mean."""
    if len(xs) >= max_samples:
        return True
    if len(xs) < max(min_samples, 2):
        return False
    m, half = ci95(xs)
    return m != 0 and half / abs(m) <= precision


def welch(current, reference):
    """Change of the current mean against the reference, in percent of the reference, with Welch's 95% interval.

    Returns (change_pct, half_width_pct, dof). With fewer than two samples on a side the interval is inf.
    """
    m1, m0 = mean(current), mean(reference)
    if m0 == 0:
        raise ValueError("the reference mean is 0")
    change = (m1 - m0) / m0 * 100.0
    n1, n0 = len(current), len(reference)
    if n1 < 2 or n0 < 2:
        return change, math.inf, None
    v1, v0 = stdev(current) ** 2 / n1, stdev(reference) ** 2 / n0
    se = math.sqrt(v1 + v0)
    if se == 0:
        return change, 0.0, math.inf
    dof = (v1 + v0) ** 2 / (v1 ** 2 / (n1 - 1) + v0 ** 2 / (n0 - 1)) if (v1 or v0) else math.inf
    return change, t_quantile(0.975, dof) * se / abs(m0) * 100.0, dof


def welch_published(current, value, ci95_pct=None, samples=None):
    """Change of the current mean against a published figure, with a Welch 95% interval.

    A figure published with its interval (``ci95_pct`` of the mean from ``samples`` samples) contributes its
    standard error; one without is taken as exact, so the interval is the current run's own (Student t).
    Returns (change_pct, half_width_pct, dof) like :func:`welch`.
    """
    if value == 0:
        raise ValueError("the published figure is 0")
    m1, n1 = mean(current), len(current)
    change = (m1 - value) / value * 100.0
    if n1 < 2:
        return change, math.inf, None
    v1 = stdev(current) ** 2 / n1
    v0, dof0 = 0.0, math.inf
    if ci95_pct is not None and samples and samples >= 2:
        v0 = (value * ci95_pct / 100.0 / t_quantile(0.975, samples - 1)) ** 2
        dof0 = samples - 1
    se = math.sqrt(v1 + v0)
    if se == 0:
        return change, 0.0, math.inf
    terms = v1 ** 2 / (n1 - 1) + (v0 ** 2 / dof0 if v0 else 0.0)
    dof = (v1 + v0) ** 2 / terms if terms else math.inf
    t = 1.959964 if dof > 1000 else t_quantile(0.975, dof)  # past 1000 dof the t quantile is the normal one
    return change, t * se / abs(value) * 100.0, dof


def regression(change_pct, half_width_pct, tolerance_pct):
    """Significantly slower (the whole interval below zero) and by more than the tolerance."""
    return change_pct + half_width_pct < 0 and change_pct < -tolerance_pct
