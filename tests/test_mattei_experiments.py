"""Mattei, Bouveyron & Latouche (2016) experiments and the GSPPCA benchmark, end to end in --quick mode."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from quickrun import check_outputs

from experiments import (
    bench_gsppca,
    mattei2016_fig1,
    mattei2016_fig2,
    mattei2016_fig3,
    mattei2016_table1,
    mattei2016_table2,
)
from repro.metrics import adjusted_variance

GOLUB = "leukemia_golub/golub.RData"
MNIST = ("mnist/train-images-idx3-ubyte.gz", "mnist/train-labels-idx1-ubyte.gz")


def test_fig1_quick(tmp_path):
    assert mattei2016_fig1.main(["--quick", "--out", str(tmp_path)]) == 0
    df, _ = check_outputs(tmp_path, "mattei2016_fig1", mattei2016_fig1)
    for _, g in df.groupby("replicate"):
        g = g.sort_values("rank")
        assert sorted(g.variable) == list(range(mattei2016_fig1.P))
        assert np.all(np.diff(g.u) <= 1e-12)  # sorted by u
        assert g.v_true.sum() == mattei2016_fig1.Q


def test_fig2_quick(tmp_path):
    assert mattei2016_fig2.main(["--quick", "--out", str(tmp_path)]) == 0
    df, _ = check_outputs(tmp_path, "mattei2016_fig2", mattei2016_fig2)
    assert set(df.scenario) == set(mattei2016_fig2.SCENARIOS)
    assert df.fscore.between(0, 1).all()


def test_table1_quick(tmp_path):
    assert mattei2016_table1.main(["--quick", "--out", str(tmp_path)]) == 0
    df, _ = check_outputs(tmp_path, "mattei2016_table1", mattei2016_table1)
    assert set(df.method) == {"GSPPCA", "SSPCA-CV"}
    assert "published" in (tmp_path / "mattei2016_table1.md").read_text()


@pytest.mark.data(GOLUB)
def test_fig3_quick(tmp_path):
    assert mattei2016_fig3.main(["--quick", "--out", str(tmp_path)]) == 0
    df, _ = check_outputs(tmp_path, "mattei2016_fig3", mattei2016_fig3)
    assert (df.n_selected == df.q).all()
    for _, g in df.groupby("method"):  # more genes never explain less
        assert np.all(np.diff(g.sort_values("q").explained_percent) >= -1e-9) or g.method.iloc[0].startswith(
            "S"
        )


def test_explained_percent_is_adjusted_variance():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 12))
    X -= X.mean(axis=0)
    S = np.array([0, 3, 4, 7, 9])
    _, _, Vt = np.linalg.svd(X[:, S], full_matrices=False)
    W = np.zeros((3, 12))
    W[:, S] = Vt[:3]
    C = X.T @ X / 29
    expected = 100 * adjusted_variance(W, C)[-1] / np.trace(C)
    assert mattei2016_fig3.explained_percent(X, S, 3) == pytest.approx(expected, rel=1e-10)


@pytest.mark.data(*MNIST)
def test_table2_quick(tmp_path):
    assert mattei2016_table2.main(["--quick", "--out", str(tmp_path)]) == 0
    df, _ = check_outputs(tmp_path, "mattei2016_table2", mattei2016_table2)
    sel = df[df.method.isin(mattei2016_table2.METHODS)]
    assert (sel.groupby(["dataset", "method"]).value.sum() == mattei2016_table2.Q).all()
    frac = mattei2016_table2.on_digit(df)
    assert frac.on_digit.between(0, 1).all()


@pytest.mark.data(GOLUB, *MNIST)
def test_bench_quick(tmp_path):
    assert bench_gsppca.main(["--quick", "--out", str(tmp_path)]) == 0
    df, rows = check_outputs(tmp_path, "bench_gsppca", bench_gsppca)
    assert set(df.part) == {"iteration", "path", "fit"}
    assert (df.max_u_diff < 1e-8).all()  # the plain implementation computes the same iterations
    md = rows.set_index("id").machine_dependent
    assert md[["fit-10x-plain", "path-reuses-work"]].all()  # the timings
    assert not md[["gsppca-r-selection", "gsppca-r-evidence"]].any()  # selections, not timings


def test_coherence_brute_force():
    rng = np.random.default_rng(3)
    sel = rng.random(784) < 0.3
    img = sel.reshape(28, 28)
    shares = []
    for i, j in zip(*np.nonzero(img), strict=True):
        nb = [(a, b) for a in (i - 1, i, i + 1) for b in (j - 1, j, j + 1) if (a, b) != (i, j)]
        nb = [(a, b) for a, b in nb if 0 <= a < 28 and 0 <= b < 28]
        shares.append(np.mean([img[a, b] for a, b in nb]))
    assert mattei2016_table2.coherence(sel) == pytest.approx(np.mean(shares), rel=1e-12)
    block = np.zeros((28, 28), bool)
    block[:3, :3] = True  # a corner block: corner pixel 3/3, edge pixels 3/5 or 5/5 ...
    assert 0.5 < mattei2016_table2.coherence(block.ravel()) < 1.0
    lone = np.zeros(784, bool)
    lone[[0, 100, 300]] = True
    assert mattei2016_table2.coherence(lone) == 0.0


def _fig3_frame(global_minus_local, spread=1.0):
    """A Fig. 3 frame: local methods at 10, 10.5, 11 %; the global ones at the best local plus a margin."""
    rows = []
    for q, margin in zip([10, 20, 50, 100, 200, 300, 500, 1000], global_minus_local, strict=True):
        local = [10.0, 10.0 + spread / 2, 10.0 + spread]
        for m, v in zip(mattei2016_fig3.LOCAL, local, strict=True):
            rows.append(dict(method=m, q=q, explained_percent=v, truncated=False))
        for m in mattei2016_fig3.GLOBAL:
            rows.append(dict(method=m, q=q, explained_percent=max(local) + margin, truncated=False))
    return pd.DataFrame(rows)


def test_fig3_gain_and_significance_checks_can_fail():
    from experiments.runner.claims import NOT_REPRODUCED, PARTIAL, REPRODUCED

    ahead = _fig3_frame([6.0, 7.0, 8.0, 6.5, 9.0, 7.5, 8.5, 10.0])
    mixed = _fig3_frame([1.0, -0.5, 0.8, -0.2, 0.3, -0.9, 0.4, -0.1])
    small = _fig3_frame([2.0, 2.5, 1.5, 3.0, 2.2, 1.8, 2.6, 2.4])
    assert mattei2016_fig3._check_significant(ahead).verdict == REPRODUCED
    assert mattei2016_fig3._check_significant(mixed).verdict == NOT_REPRODUCED
    assert mattei2016_fig3._check_global(ahead).verdict == REPRODUCED
    assert mattei2016_fig3._check_global(small).verdict == PARTIAL  # above everywhere, but not by 5 points
    assert mattei2016_fig3._check_global(mixed).verdict == NOT_REPRODUCED
