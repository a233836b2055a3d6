"""The one timing rule (``claims.call_timing``): a band stated by the claim, the run's own interval.

A timing verdict is *met* or *missed* only when the whole within-run interval of the median clears the
band around the threshold, else *too close to call*. The interval is the distribution-free 95%
confidence interval of the median from 6 repeats on (checked here by brute force and on skewed draws),
the range of fewer repeats, or the central 95% of bootstrap replicates.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from experiments.runner import claims as ledger


@pytest.mark.parametrize("n", [6, 9, 10, 15, 21, 40])
def test_median_ci_is_the_widest_order_statistic_pair_with_95_percent_coverage(n):
    """Brute force: (x_(j), x_(n+1-j)) covers with 1 - 2 P(Bin(n, 1/2) < j); j the largest >= 95%."""
    cov = [1 - 2 * sum(math.comb(n, i) for i in range(j)) / 2.0**n for j in range(1, n // 2 + 1)]
    j = max(j for j, c in enumerate(cov, start=1) if c >= 0.95)
    x = np.random.default_rng(n).permutation(np.arange(1.0, n + 1))
    assert ledger.median_ci(x) == (float(j), float(n + 1 - j))
    # empirical coverage on a skewed distribution (lognormal, median 1): at least 95% up to sampling error
    rng = np.random.default_rng(0)
    draws = np.exp(rng.standard_normal((4000, n)))
    ends = np.array([ledger.median_ci(d) for d in draws])
    covered = np.mean((ends[:, 0] <= 1.0) & (ends[:, 1] >= 1.0))
    assert covered >= cov[j - 1] - 0.015


def test_median_ci_refuses_too_few_samples():
    with pytest.raises(ValueError, match="at least 6"):
        ledger.median_ci([1.0, 1.1, 1.2, 1.0, 0.9])


@pytest.mark.parametrize("lower", [True, False])
def test_the_interval_decides_and_the_edge_is_too_close(lower):
    goal, rng = 1.3, np.random.default_rng(1)
    jitter = np.exp(0.02 * rng.standard_normal(15))  # 2% spread between pairs
    good, bad = (0.8, 2.0) if lower else (2.0, 0.8)
    assert ledger.call_timing(good * jitter, goal, lower_is_better=lower).state == "met"
    assert ledger.call_timing(bad * jitter, goal, lower_is_better=lower).state == "missed"
    edge = goal / 1.15 if lower else goal * 1.15  # the band's edge: the interval straddles it
    assert ledger.call_timing(edge * jitter, goal, lower_is_better=lower).state == "too close"
    # a good median whose interval reaches the edge is too close: the interval decides, not the median
    wide = np.array([0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0, 1.14, 1.2])
    if lower:
        assert np.median(wide) < edge and ledger.call_timing(wide, goal).state == "too close"


def test_fewer_than_six_repeats_are_decided_on_their_range():
    # the median 0.82 is 18% below 1 but the range reaches 0.90, inside the 15% band (edge 0.87)
    call = ledger.call_timing([0.80, 0.82, 0.90], 1.0)
    assert call.state == "too close" and call.interval == "range"
    assert call.coverage == pytest.approx(0.75)  # 1 - 2**(1 - 3)
    assert (call.low, call.high) == (0.80, 0.90)
    assert "range of the 3 repeats (75% interval" in call.band_text()
    assert ledger.call_timing([0.80, 0.82, 0.84], 1.0).state == "met"
    # one value (a count, an analytic slope) is its own interval: the band alone decides
    assert ledger.call_timing([0.86], 1.0).state == "met"
    assert ledger.call_timing([0.88], 1.0).state == "too close"
    assert ledger.call_timing([1.16], 1.0).state == "missed"


def test_the_band_is_the_claims_own():
    x = [0.80, 0.81, 0.82, 0.83, 0.84, 0.85, 0.86]
    assert ledger.call_timing(x, 1.0).state == "met"  # CI inside 1 / 1.15
    assert ledger.call_timing(x, 1.0, margin=0.3).state == "too close"  # a wider stated band: 1 / 1.3
    assert ledger.call_timing(x, 1.0).band == pytest.approx(0.15)
    with pytest.raises(ValueError, match="margin"):
        ledger.call_timing(x, 1.0, margin=-0.1)


def test_bootstrap_replicates_are_decided_on_their_central_95_percent():
    rng = np.random.default_rng(3)
    boot = 60.0 * np.exp(0.2 * rng.standard_normal(400))  # 95% of them within about 40-89
    lo, hi = np.percentile(boot, [2.5, 97.5])
    call = ledger.call_timing(boot, 120.0, bootstrap=True)
    assert call.interval == "bootstrap" and (call.low, call.high) == (lo, hi)
    assert call.state == "met"  # 89 < 120 / 1.15
    # the same replicates as plain repeats: the interval of their median is far narrower
    plain = ledger.call_timing(boot, 120.0)
    assert plain.interval == "ci" and plain.high - plain.low < (hi - lo) / 5
    assert ledger.call_timing(boot, 80.0, bootstrap=True).state == "too close"


def test_paired_call_needs_nine_pairs_and_is_the_same_rule():
    x = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99, 1.0]
    call = ledger.call_paired(x, 1.3)
    assert call == ledger.call_timing(x, 1.3)
    assert call.state == "met" and call.band == pytest.approx(0.15) and call.interval == "ci"
    assert call.text(".2f", "x") == "1.00x (95% CI 0.99-1.01 of 9)"
    assert "95% confidence interval" in call.band_text()
    with pytest.raises(ValueError, match="at least 9"):
        ledger.call_paired(x[:8], 1.3)
    with pytest.raises(ValueError, match="threshold"):
        ledger.call_paired(x, 0.0)
    with pytest.raises(ValueError, match="samples"):
        ledger.call_timing([np.nan], 1.0)
