"""The band of a timing verdict: at least 15%, wider where the row's value moved more between full runs.

``call_timing`` widens its band to ``NOISE_Z`` run-to-run standard deviations of the row's log value,
measured on the committed full runs (``experiments/runner/timing_noise.py``). A value within that noise
of the threshold is "too close to call"; plainly met or missed goals are still decided.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from experiments import bench_em_pca
from experiments.runner import claims as ledger
from experiments.runner import timing_noise as tn
from experiments.runner._common import FIGURES_DIR


def test_band_is_the_larger_of_margin_and_run_noise():
    assert ledger.call_timing([0.8, 0.82, 0.84], 1.0).band == pytest.approx(0.15)
    wide = ledger.call_timing([0.8, 0.82, 0.84], 1.0, noise=0.1)
    assert wide.band == pytest.approx(math.expm1(2 * 0.1))  # 22%
    assert ledger.call_timing([0.8], 1.0, noise=0.01).band == pytest.approx(0.15)  # floor
    with pytest.raises(ValueError, match="noise"):
        ledger.call_timing([0.8], 1.0, noise=-0.1)
    with pytest.raises(ValueError, match="noise"):
        ledger.call_timing([0.8], 1.0, noise=float("nan"))


@pytest.mark.parametrize("lower", [True, False])
def test_value_inside_the_noise_band_is_too_close_and_plain_ones_are_decided(lower):
    sigma = 0.1  # band exp(0.2) - 1 = 22%
    good, bad = (0.84, 1.19) if lower else (1.19, 0.84)  # 16-19% from the goal: inside 22%, outside 15%
    assert ledger.call_timing([good] * 5, 1.0, lower_is_better=lower).state == "met"
    assert ledger.call_timing([bad] * 5, 1.0, lower_is_better=lower).state == "missed"
    assert ledger.call_timing([good] * 5, 1.0, lower_is_better=lower, noise=sigma).state == "too close"
    assert ledger.call_timing([bad] * 5, 1.0, lower_is_better=lower, noise=sigma).state == "too close"
    plain_good, plain_bad = (0.5, 2.0) if lower else (2.0, 0.5)
    assert ledger.call_timing([plain_good] * 5, 1.0, lower_is_better=lower, noise=sigma).state == "met"
    assert ledger.call_timing([plain_bad] * 5, 1.0, lower_is_better=lower, noise=sigma).state == "missed"


def test_timing_row_and_evaluate_use_the_rows_measured_noise(monkeypatch):
    monkeypatch.setattr(ledger, "_noise_table", lambda: {("exp", "noisy"): 0.1})
    assert ledger.run_noise("exp", "noisy") == 0.1 and ledger.run_noise("exp", "other") == 0.0
    with ledger.timing_row("exp", "noisy"):
        assert ledger.call_timing([0.84] * 3, 1.0).state == "too close"
        assert ledger.call_timing([0.84] * 3, 1.0, noise=0.0).state == "met"  # an explicit noise wins
    assert ledger.call_timing([0.84] * 3, 1.0).state == "met"  # outside a row: the 15% floor

    def check(df):
        call = ledger.call_timing(df.ratio, 1.0)
        return ledger.Outcome(call.text(), call.verdict)

    df = pd.DataFrame({"ratio": [0.84, 0.83, 0.85]})
    rows = ledger.evaluate(
        "exp",
        [ledger.Claim("noisy", "a", "", check, True), ledger.Claim("other", "b", "", check, True)],
        df,
        quick=False,
    )
    assert list(rows.verdict) == [ledger.TOO_CLOSE, ledger.REPRODUCED]


def _per_iteration_at(ratio: float) -> pd.DataFrame:
    path = FIGURES_DIR / "bench_em_pca.csv"
    if not path.exists():
        pytest.skip("no committed bench_em_pca.csv")
    df = pd.read_csv(path, low_memory=False)
    rows = (df.part == "per_iteration") & (df["shape"] == "100000 x 1000")
    rng = np.random.default_rng(0)
    df.loc[rows, "ratio_samples"] = " ".join(
        f"{ratio * (1 + 0.01 * rng.standard_normal()):.4f}" for _ in range(5)
    )
    return df


def test_real_check_gives_too_close_inside_its_rows_noise_band():
    """bench_em_pca's 100000 x 1000 goal (<= 1.3x) with the row's committed run-to-run noise."""
    row = "per-iteration-100000 x 1000"
    claim = next(c for c in bench_em_pca.CLAIMS if c.id == row)
    band = max(0.15, math.expm1(ledger.NOISE_Z * ledger.run_noise("bench_em_pca", row)))
    inside = 1.3 / (1 + 0.15) * 0.995  # met under the 15% floor, inside the row's wider band
    if band <= 0.16:
        pytest.skip("the committed table gives this row no more than the 15% floor")
    with ledger.timing_row("bench_em_pca", row):
        assert claim.check(_per_iteration_at(inside)).verdict == ledger.TOO_CLOSE
        assert claim.check(_per_iteration_at(0.8)).verdict == ledger.REPRODUCED
        assert claim.check(_per_iteration_at(2.5)).verdict == ledger.NOT_REPRODUCED
    assert claim.check(_per_iteration_at(inside)).verdict == ledger.REPRODUCED  # the floor alone


def _hist(values, experiment="e", row="r"):
    return pd.DataFrame(
        {
            "experiment": experiment,
            "id": row,
            "reproduced": [" ".join(f"{v}x (quartiles 0-9 of 3)," for v in np.atleast_1d(x)) for x in values],
        }
    )


def test_measure_is_the_sd_of_the_log_over_the_last_runs():
    runs = [1.0, 1.2] * 5  # 10 runs; the last WINDOW count
    got = tn.measure(_hist(runs)).iloc[0]
    want = np.std(np.log(runs[-tn.WINDOW :]), ddof=1)
    assert got.source == "row" and got.sigma == pytest.approx(want, abs=1e-4) and got.runs == tn.WINDOW


def test_measure_pools_values_and_drops_runs_of_another_form():
    # two values per run in the last 6 runs (one steady, one alternating); an older one-value run is dropped
    runs = [[5.0]] + [[1.0, 2.0], [1.0, 2.4]] * 3
    got = tn.measure(_hist(runs)).iloc[0]
    sd2 = np.std(np.log([2.0, 2.4] * 3), ddof=1)
    assert got.runs == 6 and got["values"] == 2
    assert got.sigma == pytest.approx(math.sqrt((0.0 + sd2**2) / 2), abs=1e-4)


def test_measure_gives_short_histories_the_pooled_noise():
    h = pd.concat([_hist([1.0, 1.1] * 4, row="long"), _hist([1.0, 3.0], row="short")])
    t = tn.measure(h, rows=[("e", "new")]).set_index("id")
    assert t.loc["short", "source"] == "pooled"
    assert t.loc["short", "sigma"] == pytest.approx(t.loc["long", "sigma"])
    assert t.loc["new", "source"] == "pooled" and t.loc["new", "runs"] == 0  # a row without a recorded run
    assert t.loc["new", "sigma"] == pytest.approx(t.loc["long", "sigma"])


def test_exponent_rows_measure_the_decided_growth_factor():
    row = next(iter(tn.EXPONENT_ROWS))
    text = [f"exponent {e:+.2f} (quartiles 0..1 of 9)" for e in [-0.5, -0.4] * 3]
    h = pd.DataFrame({"experiment": row[0], "id": row[1], "reproduced": text})
    want = np.std(np.array([-0.5, -0.4] * 3) * math.log(2), ddof=1)
    assert tn.measure(h).sigma.iloc[0] == pytest.approx(want, abs=1e-4)


def test_row_patterns_read_the_decided_values():
    assert tn.row_values("x", "y", "a: 0.87x (quartiles 0.83-0.89 of 3); b 2.0x (quartiles 1-3 of 3)") == [
        0.87,
        2.0,
    ]
    assert tn.row_values("sigg2008_timing", "nn-time-ratio", "NSPCA 3.16 s (sd 2.54): ratio 150.9; x") == [
        150.9
    ]
    assert tn.row_values(
        "bench_nspca", "fit-under-1s", "(2e+07, 0e+00) 0.79 s (quartiles 0.69-0.98 of 5)"
    ) == [0.79]


def test_committed_noise_table_covers_every_timing_row_of_the_ledger():
    if not tn.TABLE.exists() or not (FIGURES_DIR / "claims").exists():
        pytest.skip("no committed noise table or ledger")
    frames = [
        pd.read_csv(f, dtype=str, keep_default_na=False) for f in (FIGURES_DIR / "claims").glob("*.csv")
    ]
    led = pd.concat(frames, ignore_index=True)
    timing = set(map(tuple, led[led.machine_dependent == "True"][["experiment", "id"]].to_numpy()))
    table = pd.read_csv(tn.TABLE, dtype={"experiment": str, "id": str}, keep_default_na=False)
    assert set(zip(table.experiment, table.id, strict=True)) == timing
    assert (table.sigma >= 0).all() and np.isfinite(table.sigma).all()


# --------------------------------------------------------------------------- paired rows (call_paired)
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
def test_paired_call_decides_plain_values_and_calls_the_edge_too_close(lower):
    goal, rng = 1.3, np.random.default_rng(1)
    jitter = np.exp(0.02 * rng.standard_normal(15))  # 2% spread between pairs
    good, bad = (0.8, 2.0) if lower else (2.0, 0.8)
    assert ledger.call_paired(good * jitter, goal, lower_is_better=lower).state == "met"
    assert ledger.call_paired(bad * jitter, goal, lower_is_better=lower).state == "missed"
    edge = goal / 1.15 if lower else goal * 1.15  # the margin's edge: the interval straddles it
    assert ledger.call_paired(edge * jitter, goal, lower_is_better=lower).state == "too close"
    # a good median whose interval reaches the edge is too close: the interval decides, not the median
    wide = np.array([0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0, 1.14, 1.2]) if lower else None
    if lower:
        assert np.median(wide) < edge and ledger.call_paired(wide, goal).state == "too close"


def test_paired_call_ignores_the_history_band_and_needs_nine_pairs(monkeypatch):
    monkeypatch.setattr(ledger, "_noise_table", lambda: {("e", "r"): 0.5})  # a 172% history band
    x = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99, 1.0]
    with ledger.timing_row("e", "r"):
        assert ledger.call_timing(x, 1.3).state == "too close"
        call = ledger.call_paired(x, 1.3)
    assert call.state == "met" and call.band == pytest.approx(0.15) and call.interval == "ci"
    assert call.text(".2f", "x") == "1.00x (95% CI 0.99-1.01, 9 pairs)"
    assert "95% confidence interval" in call.band_text()
    with pytest.raises(ValueError, match="at least 9"):
        ledger.call_paired(x[:8], 1.3)
    with pytest.raises(ValueError, match="threshold"):
        ledger.call_paired(x, 0.0)


def test_paired_text_is_read_back_by_the_noise_history():
    text = ledger.call_paired([1.0] * 9, 1.3).text(".2f", "x")
    assert tn.row_values("bench_em_pca", "fit-vs-randomized-decaying", f"r / EMPCA time: {text}") == [1.0]
