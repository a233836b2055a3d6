"""Mattei, Bouveyron & Latouche (2016) experiments and the GSPPCA benchmark, end to end in --quick mode."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from quickrun import check_outputs, quick_run

from experiments import (
    mattei2016_fig1,
    mattei2016_fig2,
    mattei2016_fig3,
    mattei2016_table1,
    mattei2016_table2,
)
from experiments.benchmarks import gsppca as bench_gsppca
from repro.metrics import adjusted_variance

GOLUB = "leukemia_golub/golub.RData"
MNIST = ("mnist/train-images-idx3-ubyte.gz", "mnist/train-labels-idx1-ubyte.gz")


def test_fig1_quick(tmp_path):
    out = quick_run(mattei2016_fig1, tmp_path)
    df, _ = check_outputs(out, "mattei2016_fig1", mattei2016_fig1)
    for _, g in df.groupby("replicate"):
        g = g.sort_values("rank")
        assert sorted(g.variable) == list(range(mattei2016_fig1.P))
        assert np.all(np.diff(g.u) <= 1e-12)  # sorted by u
        assert g.v_true.sum() == mattei2016_fig1.Q


def test_fig2_quick(tmp_path):
    out = quick_run(mattei2016_fig2, tmp_path)
    df, _ = check_outputs(out, "mattei2016_fig2", mattei2016_fig2)
    assert set(df.scenario) == set(mattei2016_fig2.SCENARIOS)
    assert df.fscore.between(0, 1).all()


def test_table1_quick(tmp_path):
    out = quick_run(mattei2016_table1, tmp_path)
    df, _ = check_outputs(out, "mattei2016_table1", mattei2016_table1)
    assert set(df.method) == {"GSPPCA", "SSPCA-CV"}
    assert "published" in (out / "mattei2016_table1.md").read_text()


@pytest.mark.data(GOLUB)
def test_fig3_quick(tmp_path):
    out = quick_run(mattei2016_fig3, tmp_path)
    df, _ = check_outputs(out, "mattei2016_fig3", mattei2016_fig3)
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
    expected = 100 * adjusted_variance(C, W)[-1] / np.trace(C)
    assert mattei2016_fig3.explained_percent(X, S, 3) == pytest.approx(expected, rel=1e-10)


@pytest.mark.data(*MNIST)
def test_table2_sspca_claim_is_untestable_when_no_penalty_separates_the_pixels():
    """The SSPCA back-image check judges the selection only when it is one SSPCA makes: kept from a fit
    that selected fewer than every pixel; from an all-pixel fit it is untestable here, saying why."""
    T = mattei2016_table2
    rng = np.random.default_rng(0)
    rows = []
    for ds in ("mnist-basic", "mnist-back-image"):
        for method in (*T.METHODS, "mean seven"):
            sel = np.zeros(784)
            sel[rng.choice(784, T.Q, replace=False)] = 1.0
            for k, v in enumerate(sel):
                rows.append({"dataset": ds, "method": method, "pixel": k, "value": v, "fit_q": 784.0})
    df = pd.DataFrame(rows)
    out = T._check_sspca_back_image(df)
    # our limitation, not the paper's failure: its own verdict word, never "not reproduced" (issue 36)
    assert out.verdict == "untestable here" and "untestable" in out.note and "784 of 784" in out.reproduced
    df.loc[df.method == "SSPCA", "fit_q"] = 249.0
    out = T._check_sspca_back_image(df)
    assert "untestable" not in out.note and out.verdict == "reproduced"  # random pixels: off the digit


def test_table2_quick(tmp_path):
    out = quick_run(mattei2016_table2, tmp_path)
    df, _ = check_outputs(out, "mattei2016_table2", mattei2016_table2)
    sel = df[df.method.isin(mattei2016_table2.METHODS)]
    assert (sel.groupby(["dataset", "method"]).value.sum() == mattei2016_table2.Q).all()
    frac = mattei2016_table2.on_digit(df)
    assert frac.on_digit.between(0, 1).all()


@pytest.mark.data(GOLUB, *MNIST)
def test_bench_quick(tmp_path):
    out = quick_run(bench_gsppca, tmp_path)
    df, rows = check_outputs(out, "bench_gsppca", bench_gsppca)
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
    # issue 36: the rule tests a size. A margin of +0.01 point at every q is ahead everywhere (a plain
    # Wilcoxon gives its smallest p) but is no 'very suboptimal' local choice: not reproduced as such
    tiny = _fig3_frame([0.01] * 8)
    out = mattei2016_fig3._check_significant(tiny)
    assert out.verdict == PARTIAL
    assert "against 0: p = 0.0039" in out.reproduced
    # a loss just under a tenth of the global's variance at every q does not pass; well above it does
    under = _fig3_frame([1.2] * 8)  # 1.2 / 12.2 = 9.8%
    assert mattei2016_fig3._check_significant(under).verdict == PARTIAL
    over = _fig3_frame([1.6] * 8)  # 1.6 / 12.6 = 12.7%
    assert mattei2016_fig3._check_significant(over).verdict == REPRODUCED
    assert mattei2016_fig3._check_global(ahead).verdict == REPRODUCED
    assert mattei2016_fig3._check_global(small).verdict == PARTIAL  # above everywhere, but not by 5 points
    assert mattei2016_fig3._check_global(mixed).verdict == NOT_REPRODUCED


def _table2_frame(spec):
    """A Table 2 frame from ``{(dataset, method): (pixels on the digit, scattered)}``, 200 pixels each.

    The "mean seven" is 1 on the block of rows 0-9, columns 0-19 (exactly the ``Q = 200`` most inked pixels)
    and 0 elsewhere. A compact selection takes its on-digit pixels row by row from that block and the rest
    row by row from rows 12-27 (two blobs, coherence near 1); a scattered one takes them from checkerboards
    of the same regions (every selected pixel's neighbours are half selected at most).
    """
    img = np.zeros((28, 28))
    img[:10, :20] = 1.0
    top = np.flatnonzero(img.ravel())
    rows_, cols_ = np.indices((28, 28))
    bottom = np.flatnonzero((rows_ >= 12).ravel())
    checker = ((rows_ + cols_) % 2 == 0).ravel()
    rows = [
        {"dataset": "mnist-basic", "method": "mean seven", "pixel": k, "value": v, "recreated": False}
        for k, v in enumerate(img.ravel())
    ]
    for (dataset, method), (n_on, scattered) in spec.items():
        on, off = (top[checker[top]], bottom[checker[bottom]]) if scattered else (top, bottom)
        sel = np.zeros(784)
        sel[on[:n_on]] = 1.0
        sel[off[: mattei2016_table2.Q - n_on]] = 1.0
        rows += [
            {"dataset": dataset, "method": method, "pixel": k, "value": v, "recreated": True, "capped": False}
            for k, v in enumerate(sel)
        ]
    return pd.DataFrame(rows)


def test_table2_thresholds_are_the_documented_ones():
    doc = mattei2016_table2.__doc__
    assert mattei2016_table2.ON_DIGIT_MIN == 0.5 and "ON_DIGIT_MIN = 0.5" in doc
    assert mattei2016_table2.SCATTER_GAP == 0.1 and "SCATTER_GAP = 0.1" in doc
    assert mattei2016_table2.D_SMALL == (1, 5) and "``d = 1`` and ``d = 5``" in doc
    od = mattei2016_table2.on_digit(_table2_frame({("mnist-basic", "SPCA"): (100, True)}))
    assert od.on_digit.item() == 0.5 and od.q.item() == 200  # the frame builder's fractions are exact


def test_table2_basic_check_can_be_partly_or_fail():
    """mnist-basic: 'a little more erratic' (SPCA's coherence lowest) and 'all interpretable' (>= 0.5)."""
    from experiments.runner.claims import NOT_REPRODUCED, PARTIAL, REPRODUCED

    def verdict(spca, sspca, gsppca):
        methods = mattei2016_table2.METHODS
        spec = {("mnist-basic", m): v for m, v in zip(methods, (spca, sspca, gsppca), strict=True)}
        return mattei2016_table2._check_basic(_table2_frame(spec)).verdict

    assert verdict((100, True), (150, False), (200, False)) == REPRODUCED  # 0.5 is enough: ">="
    assert verdict((99, True), (150, False), (200, False)) == PARTIAL  # SPCA 0.495: not interpretable
    assert verdict((150, False), (150, False), (200, False)) == PARTIAL  # all readable, none erratic
    assert verdict((150, True), (150, True), (200, False)) == PARTIAL  # SPCA not below SSPCA's coherence
    assert verdict((200, False), (80, True), (200, False)) == NOT_REPRODUCED
    coh = (
        mattei2016_table2.on_digit(
            _table2_frame({("mnist-basic", "SPCA"): (100, True), ("mnist-basic", "SSPCA"): (100, False)})
        )
        .set_index("method")
        .coherence
    )
    assert coh["SPCA"] <= 0.5 < 0.8 < coh["SSPCA"]  # the builder's two shapes are far apart


def test_table2_sspca_back_image_check_can_fail():
    """'SSPCA's selection does not appear interpretable' = on-digit fraction below 0.5 (no partly branch)."""
    from experiments.runner.claims import NOT_REPRODUCED, REPRODUCED

    def verdict(n_on):
        spec = {("mnist-back-image", m): (n_on if m == "SSPCA" else 200, False) for m in ("SSPCA", "GSPPCA")}
        return mattei2016_table2._check_sspca_back_image(_table2_frame(spec)).verdict

    assert verdict(99) == REPRODUCED
    assert verdict(100) == NOT_REPRODUCED  # exactly 0.5: interpretable by the same proxy as every row
    assert verdict(180) == NOT_REPRODUCED
    assert mattei2016_table2._check_sspca_back_image(_table2_frame({})).verdict == NOT_REPRODUCED


def test_table2_small_d_check_can_be_partly_or_fail():
    """'GSPPCA with a small d: poorly interpretable' in both readings (d = 1, d = 5); partly for one."""
    from experiments.runner.claims import NOT_REPRODUCED, PARTIAL, REPRODUCED

    def verdict(d1, d5):
        spec = {
            ("mnist-back-image", "GSPPCA"): (190, False),
            ("mnist-back-image", "GSPPCA (d = 1)"): (d1, False),
            ("mnist-back-image", "GSPPCA (d = 5)"): (d5, False),
        }
        return mattei2016_table2._check_small_d(_table2_frame(spec)).verdict

    assert verdict(40, 99) == REPRODUCED
    assert verdict(40, 100) == PARTIAL
    assert verdict(120, 30) == PARTIAL
    assert verdict(100, 160) == NOT_REPRODUCED


def test_table2_sweep_note_reads_the_recorded_sweep(tmp_path):
    """The SSPCA note states what the recorded penalty sweep found: no count between 1 and 783, or some."""
    T = mattei2016_table2
    cols = dict(alpha=1.0, converged=True, max_abs_u_cos=0.99, cpu_seconds=1.0)
    none = pd.DataFrame(
        [dict(alpha_ratio=r, selected=c, selected_min_along_fit=c, **cols) for r, c in ((0.5, 784), (2.0, 0))]
    )
    none.to_csv(tmp_path / "a.csv", index=False)
    note = T._sweep_note(tmp_path / "a.csv")
    assert "none between 1 and 783" in note and "no penalty of the SSPCA objective reaches 200" in note
    some = none.assign(selected=[150, 0], selected_min_along_fit=[150, 0])
    some.to_csv(tmp_path / "b.csv", index=False)
    assert "1 penalties select between 1 and 200" in T._sweep_note(tmp_path / "b.csv")
    assert "no sweep" in T._sweep_note(tmp_path / "missing.csv")


def test_fig2_r_note_reads_the_recorded_gsppca_r_runs(tmp_path):
    """The Fig. 2 note reports GSPPCA.R's F-scores and whether raising its cap changed them."""
    from experiments import mattei2016_fig2 as F

    def runs(f_hi, f5000):
        rows = []
        for sigma, f in ((0.05, 1.0), (1.0, f_hi)):
            for r in range(3):
                capped = sigma == 0.05
                rows.append(dict(n=50, p=150, q=20, sigma=sigma, run=r, fscore=f, capped=capped,
                                 fscore_nit5000=f5000 if capped else f))  # fmt: skip
        return pd.DataFrame(rows)

    runs(1.0, 1.0).to_csv(tmp_path / "flat.csv", index=False)
    note = F._r_note(tmp_path / "flat.csv")
    assert "does not fall with the noise" in note and "cap is not the cause" in note
    assert "cap in 3 of 6 runs" in note
    runs(0.8, 0.9).to_csv(tmp_path / "falls.csv", index=False)
    note = F._r_note(tmp_path / "falls.csv")
    assert "falls with the noise here" in note and "the cap contributes" in note
