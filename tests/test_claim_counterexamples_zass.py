"""Every Zass & Shashua claim check, and the NSPCA benchmark's, refuses data built to contradict it.

Each counter-example is a copy of the committed full-run CSV in ``figures/`` with the part the sentence
speaks of reversed or swapped (or, for the timings, a small synthetic frame): its check must not answer
"reproduced". Where cheap, a positive control shows the same check can answer "reproduced", so a check that
always fails would not pass here either.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from experiments import _zass, zass2006_fig2, zass2006_fig3, zass2006_fig4, zass2006_fig5
from experiments.benchmarks import nspca as bench_nspca
from experiments.runner._common import FIGURES_DIR
from experiments.runner.claims import NOT_REPRODUCED, REPRODUCED, TOO_CLOSE


def _verdict(module, claim_id, df):
    claim = {c.id: c for c in [*getattr(module, "CLAIMS", []), *getattr(module, "GOALS", [])]}[claim_id]
    return claim.check(df).verdict


def _committed(name):
    path = FIGURES_DIR / f"{name}.csv"
    if not path.exists():
        pytest.skip(f"no committed {path.name}")
    return pd.read_csv(path, low_memory=False)


@pytest.fixture(scope="module")
def fig2():
    return _committed("zass2006_fig2")


@pytest.fixture(scope="module")
def fig3():
    return _committed("zass2006_fig3")


@pytest.fixture(scope="module")
def fig4():
    df = _committed("zass2006_fig4")
    return df[df.kind == "auc"].copy()  # the claims read only the AUC rows


@pytest.fixture(scope="module")
def fig5():
    return _committed("zass2006_fig5")


def _set(df, row, col, value):
    out = df.copy()
    out.loc[(out.kind == "summary") & (out.row == row), col] = value
    return out


def _get(df, row, col):
    return df.loc[(df.kind == "summary") & (df.row == row), col].iloc[0]


def _swap(df, r1, r2, col):
    return _set(_set(df, r1, col, _get(df, r2, col)), r2, col, _get(df, r1, col))


# --------------------------------------------------------------------------- Fig. 2
def test_fig2_overlap_drops_refuses_rising_overlap(fig2):
    assert _verdict(zass2006_fig2, "overlap-drops-with-alpha", _swap(fig2, "a", "b", "overlap_unit")) == (
        NOT_REPRODUCED
    )


def test_fig2_holistic_refuses_holistic_parts(fig2):
    df = _set(fig2, "b", "holistic", _get(fig2, "a", "holistic"))
    assert _verdict(zass2006_fig2, "holistic-vanishes", df) == NOT_REPRODUCED


def test_fig2_sparser_with_alpha_refuses_denser_or_dropped_pixels(fig2):
    assert _verdict(zass2006_fig2, "sparser-with-alpha", _swap(fig2, "a", "b", "l0")) == NOT_REPRODUCED
    # sparser, but because whole pixels were dropped, not because the factors stopped sharing them
    dropped = _set(fig2, "b", "coverage", _get(fig2, "a", "coverage") // 2)
    assert _verdict(zass2006_fig2, "sparser-with-alpha", dropped) != REPRODUCED


def test_fig2_sparser_with_beta_refuses_denser(fig2):
    assert _verdict(zass2006_fig2, "sparser-with-beta", _swap(fig2, "a", "c", "l0")) == NOT_REPRODUCED


def test_fig2_overlap_remains_refuses_parts_like_overlap(fig2):
    df = _set(fig2, "c", "overlap_unit", _get(fig2, "b", "overlap_unit"))
    assert _verdict(zass2006_fig2, "overlap-remains-with-beta", df) == NOT_REPRODUCED
    # the raw overlap of (c) is as large as (a)'s: it must not rescue the verdict
    assert _get(fig2, "c", "overlap") > 0.5 * _get(fig2, "a", "overlap")


def test_fig2_overlap_remains_is_the_midpoint_rule(fig2):
    """The rule from the sentence: (c) nearer the overlapping (a) than the part-based (b). Just above the
    midpoint reproduces, just below does not, whatever the raw reading says."""
    a, b = _get(fig2, "a", "overlap_unit"), _get(fig2, "b", "overlap_unit")
    mid = 0.5 * (a + b)
    above = _set(fig2, "c", "overlap_unit", mid + 1e-3 * (a - b))
    below = _set(fig2, "c", "overlap_unit", mid - 1e-3 * (a - b))
    assert _verdict(zass2006_fig2, "overlap-remains-with-beta", above) == REPRODUCED
    assert _verdict(zass2006_fig2, "overlap-remains-with-beta", below) == NOT_REPRODUCED
    assert _verdict(zass2006_fig2, "overlap-remains-with-beta", _set(fig2, "c", "overlap_unit", a)) == (
        REPRODUCED
    )


def test_fig2_within_a_refuses_replaced_pixels(fig2):
    df = fig2.copy()
    m = df.kind == "match"
    df.loc[m, "efficiency"] = 0.3  # (c) keeps weak pixels of its (a) factor, not its strongest
    assert _verdict(zass2006_fig2, "beta-drops-within-a", df) == NOT_REPRODUCED
    df = fig2.copy()
    df.loc[m, "inside_energy"] = df.loc[m, "a_pixel_share"]  # no more inside (a) than chance
    assert _verdict(zass2006_fig2, "beta-drops-within-a", df) == NOT_REPRODUCED


def test_fig2_local_max_refuses_unconverged_or_decreasing(fig2):
    ok = _zass.COORD_RTOL
    assert _verdict(zass2006_fig2, "converges-to-local-max", _set(fig2, "b", "max_coord_gain", 100 * ok)) == (
        NOT_REPRODUCED
    )
    assert _verdict(zass2006_fig2, "converges-to-local-max", _set(fig2, "a", "max_obj_drop", 1e-6)) == (
        NOT_REPRODUCED
    )


# --------------------------------------------------------------------------- Fig. 3
def _reverse_over(df, panel, x, col):
    """The curve of ``col`` against ``x`` in ``panel`` turned around (value of the last grid point first)."""
    out = df.copy()
    out[col] = out[col].astype(float)
    sub = out.panel == panel
    xs = np.sort(out.loc[sub, x].unique())
    mean = out[sub].groupby(x)[col].mean()
    out.loc[sub, col] = out.loc[sub, x].map(dict(zip(xs, mean.loc[xs[::-1]].to_numpy(), strict=True)))
    return out


def test_fig3_curves_refuse_reversed(fig3):
    assert _verdict(
        zass2006_fig3, "overlap-decreases-with-alpha", _reverse_over(fig3, "a", "alpha", "overlap")
    ) == (NOT_REPRODUCED)
    assert _verdict(zass2006_fig3, "l0-decreases-with-beta", _reverse_over(fig3, "b", "beta", "l0")) == (
        NOT_REPRODUCED
    )


def test_fig3_local_max_refuses_a_stalled_fit(fig3):
    df = fig3.copy()
    df.loc[df.index[0], "max_coord_gain"] = 1e-5
    assert _verdict(zass2006_fig3, "converges-to-local-max", df) != REPRODUCED
    df = fig3.copy()
    df["max_obj_drop"] = 1e-6
    assert _verdict(zass2006_fig3, "converges-to-local-max", df) == NOT_REPRODUCED


def test_fig3_disjoint_refuses_supports_that_do_not_separate(fig3):
    rising = _reverse_over(fig3, "a", "alpha", "shared_energy")  # sharing grows as the overlap falls
    assert _verdict(zass2006_fig3, "disjoint-when-orthonormal", rising) == NOT_REPRODUCED
    flat = fig3.copy()
    flat["shared_energy"] = 0.99
    assert _verdict(zass2006_fig3, "disjoint-when-orthonormal", flat) == NOT_REPRODUCED
    # the energy off the dominant factor falling to zero (bounded by the overlap) must not rescue it
    flat["nondominant_energy"] = 1e-3 * flat["overlap_unit"]
    assert _verdict(zass2006_fig3, "disjoint-when-orthonormal", flat) == NOT_REPRODUCED
    # positive control: sharing that falls to near zero with the overlap
    prop = fig3.copy()
    a = prop.panel == "a"
    prop.loc[a, "shared_energy"] = 0.9 * prop.loc[a, "overlap_unit"] / prop.loc[a, "overlap_unit"].max()
    assert _verdict(zass2006_fig3, "disjoint-when-orthonormal", prop) == REPRODUCED


# --------------------------------------------------------------------------- Fig. 4
def _auc(df, label, value):
    out = df.copy()
    out.loc[out.label == label, "auc"] = value
    return out


def test_fig4_best_roc_refuses_worse_nspca_and_accepts_better(fig4):
    best = zass2006_fig4._nspca_label(*zass2006_fig4.BEST)
    others = fig4[fig4.label.isin(["NMF", "PCA", "GSPCA"])].auc
    assert _verdict(zass2006_fig4, "nspca-best-roc", _auc(fig4, best, others.min() - 0.01)) == NOT_REPRODUCED
    assert _verdict(zass2006_fig4, "nspca-best-roc", _auc(fig4, best, others.max() + 0.01)) == REPRODUCED


def test_fig4_alpha_beta_refuses_falling_roc_and_accepts_rising(fig4):
    lab = zass2006_fig4._nspca_label
    falling = {(2e7, 0.0): 0.97, (5e8, 0.0): 0.95, (2e7, 2e6): 0.95, (5e8, 2e6): 0.93}
    rising = {(2e7, 0.0): 0.93, (5e8, 0.0): 0.95, (2e7, 2e6): 0.95, (5e8, 2e6): 0.97}
    for values, want in ((falling, NOT_REPRODUCED), (rising, REPRODUCED)):
        df = fig4
        for setting, v in values.items():
            df = _auc(df, lab(*setting), v)
        assert _verdict(zass2006_fig4, "roc-improves-with-alpha-beta", df) == want


# --------------------------------------------------------------------------- Fig. 5
def _swap_methods(df, m1, m2):
    out = df.copy()
    out["method"] = out["method"].replace({m1: m2, m2: m1})
    return out


def test_fig5_below_sparse_refuses_nspca_on_top(fig5):
    assert (
        _verdict(zass2006_fig5, "constrained-below-pca", _swap_methods(fig5, "NSPCA", "GSPCA")) != REPRODUCED
    )
    # NSPCA above every sparse method (but still below PCA): the PCA half alone must not rescue it
    top = fig5.copy()
    best = top[top.method.isin(zass2006_fig5.SPARSE_METHODS)].groupby("n_components").cumulative_pct.max()
    pca = top[top.method == "PCA"].set_index("n_components").cumulative_pct
    ns = top.method == "NSPCA"
    top.loc[ns, "cumulative_pct"] = top.loc[ns, "n_components"].map((best + pca) / 2)
    assert _verdict(zass2006_fig5, "constrained-below-pca", top) == NOT_REPRODUCED


def test_fig5_competitive_refuses_widening_gap(fig5):
    df = fig5.copy()
    ns = df.method == "NSPCA"
    df.loc[ns, "cumulative_pct"] -= 3.0 * (df.loc[ns, "n_components"] - 1)  # falls behind as components grow
    assert _verdict(zass2006_fig5, "nspca-competitive", df) == NOT_REPRODUCED


def test_fig5_zou_refuses_another_value(fig5):
    df = fig5.copy()
    df.loc[df.method == "SPCA", "cumulative_qr_pct"] -= 3.0
    assert _verdict(zass2006_fig5, "spca-pitprops-75.8", df) == NOT_REPRODUCED


# --------------------------------------------------------------------------- bench_nspca (synthetic timings)
def _sweeps(seconds_of, ref_of, reps=9, noise=0.02, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for rep in range(reps):
        for d in (361, 1024, 2048, 4096):
            for k in (5, 10, 20):
                t, r = seconds_of(d, k), ref_of(d, k)
                t *= np.exp(noise * rng.standard_normal())
                rows.append(
                    {
                        "kind": "sweep",
                        "source": "CBCL" if d == 361 else "gaussian",
                        "d": d,
                        "k": k,
                        "rep": rep,
                        "seconds": t,
                        "ref_seconds": r,
                        "ratio": t / r,
                    }
                )
    return pd.DataFrame(rows)


def _gemm(d, k):
    return 1e-10 * d * d * k


def test_bench_scaling_refuses_cubic_cost_and_accepts_d2k():
    cubic = _sweeps(lambda d, k: 3e-10 * d**3 * k / 361, _gemm)  # ratio grows like d
    assert _verdict(bench_nspca, "sweep-is-O(d^2 k)", cubic) == NOT_REPRODUCED
    quad_k = _sweeps(lambda d, k: 3e-10 * d * d * k * k, _gemm)  # time grows like k^2
    assert _verdict(bench_nspca, "sweep-is-O(d^2 k)", quad_k) != REPRODUCED
    ok = _sweeps(lambda d, k: 3 * _gemm(d, k), _gemm)
    assert _verdict(bench_nspca, "sweep-is-O(d^2 k)", ok) == REPRODUCED


def test_bench_ratio_goal_refuses_slow_sweeps():
    assert _verdict(bench_nspca, "sweep-ratio-goal", _sweeps(lambda d, k: 8 * _gemm(d, k), _gemm)) == (
        NOT_REPRODUCED
    )
    assert (
        _verdict(bench_nspca, "sweep-ratio-goal", _sweeps(lambda d, k: 5 * _gemm(d, k), _gemm)) == TOO_CLOSE
    )
    assert (
        _verdict(bench_nspca, "sweep-ratio-goal", _sweeps(lambda d, k: 2 * _gemm(d, k), _gemm)) == REPRODUCED
    )


def _fits(seconds):
    rows = []
    for rep in range(5):
        for (a, b), s in zip(bench_nspca.FIG2_SETTINGS, seconds, strict=True):
            rows.append(
                {
                    "kind": "fit",
                    "alpha": a,
                    "beta": b,
                    "rep": rep,
                    "seconds": s * (1 + 0.01 * rep),
                    "ratio_pca": 10.0,
                    "n_iter": 100,
                }
            )
    return pd.DataFrame(rows)


def test_bench_fit_refuses_slow_fits():
    assert _verdict(bench_nspca, "fit-under-1s", _fits([3.0, 2.0, 4.0])) == NOT_REPRODUCED
    assert _verdict(bench_nspca, "fit-under-1s", _fits([0.98, 0.2, 0.1])) == TOO_CLOSE
    assert _verdict(bench_nspca, "fit-under-1s", _fits([0.5, 0.2, 0.1])) == REPRODUCED


def test_fig3_disjoint_note_tests_the_small_weight_cause(fig3):
    """The note's cause ('small weights a finite alpha leaves') is computed and can go either way."""
    a = fig3.panel == "a"
    small = fig3.copy()
    small.loc[a, "shared_energy_rel0.1"] = 0.02
    small.loc[a, "shared_energy_rel0.01"] = 0.3
    assert "the sharing that remains is in small weights" in zass2006_fig3._check_disjoint(small).note
    big = fig3.copy()
    big.loc[a, "shared_energy_rel0.1"] = 0.6
    big.loc[a, "shared_energy_rel0.01"] = 0.7
    out = zass2006_fig3._check_disjoint(big)
    assert "not only in small weights" in out.note and "0.600 -> 0.600" in out.reproduced
    U = np.zeros((6, 2))
    U[:3, 0], U[3:, 1], U[2, 1] = 1.0, 1.0, 0.05  # one pixel shared at 5% of its largest weight
    assert _zass.support_sharing(U)[0] > 0.15 and _zass.support_sharing(U, 0.1)[0] == 0.0
    assert _zass.support_sharing(U, 0.01)[0] == _zass.support_sharing(U)[0]
