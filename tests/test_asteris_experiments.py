"""Asteris et al. (2014) experiments: --quick runs end to end, and the claim checks read the sentence."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from quickrun import check_outputs

from experiments import (
    asteris2014_fig3,
    asteris2014_fig4,
    asteris2014_fig5,
    asteris2014_fig6,
    bench_spannogram,
)
from experiments.runner.claims import NOT_REPRODUCED, PARTIAL, REPRODUCED

CBCL = "cbcl_faces/CBCL_Face.mat"
LEUK = (
    "leukemia_armstrong_mll/MLL.names",
    "leukemia_armstrong_mll/MLL_train.data",
    "leukemia_armstrong_mll/MLL_test.data",
)
LRS = ("uci_lrs/lrs.data", "uci_lrs/lrs.names")


def _curve_checks(df):
    sp = df[df.method == "Spannogram"]
    assert (sp.nnz <= sp.cardinality).all()
    ok = df[df.certified.notna()]
    assert (ok.certified <= 1 + 1e-9).all() and (ok.certified > 0).all()  # value <= bound, for every method
    assert (sp.bound <= sp.bound_spectral + 1e-9).all()
    assert (sp.bound_normalized <= 1 + 1e-9).all()


@pytest.mark.data(CBCL)
def test_fig3_quick(tmp_path):
    assert asteris2014_fig3.main(["--quick", "--out", str(tmp_path)]) == 0
    df, _ = check_outputs(tmp_path, "asteris2014_fig3", asteris2014_fig3)
    comp = df[df.method.isin(["Spannogram", "EM"])]
    assert (comp.value >= 0).all() and (comp.nnz <= asteris2014_fig3.K).all()
    for _, g in comp.groupby("method"):
        W = g.pivot(index="component", columns="pixel", values="value").to_numpy()
        np.testing.assert_allclose(W @ W.T, np.eye(len(W)), atol=1e-10)  # orthogonal (disjoint supports)


@pytest.mark.data(CBCL)
def test_fig4_quick(tmp_path):
    assert asteris2014_fig4.main(["--quick", "--out", str(tmp_path)]) == 0
    df, _ = check_outputs(tmp_path, "asteris2014_fig4", asteris2014_fig4)
    assert {"Spannogram", "EM", "EM (PC start)", "NSPCA"} == set(df.method)
    _curve_checks(df)


@pytest.mark.data(*LEUK)
def test_fig5_quick(tmp_path):
    assert asteris2014_fig5.main(["--quick", "--out", str(tmp_path)]) == 0
    df, _ = check_outputs(tmp_path, "asteris2014_fig5", asteris2014_fig5)
    _curve_checks(df)


@pytest.mark.data(*LRS)
def test_fig6_quick(tmp_path):
    assert asteris2014_fig6.main(["--quick", "--out", str(tmp_path)]) == 0
    df, _ = check_outputs(tmp_path, "asteris2014_fig6", asteris2014_fig6)
    _curve_checks(df)


@pytest.mark.data(CBCL, *LEUK)
def test_bench_quick(tmp_path):
    assert bench_spannogram.main(["--quick", "--out", str(tmp_path)]) == 0
    df, _ = check_outputs(tmp_path, "bench_spannogram", bench_spannogram)
    assert (df[df.part == "exact"].rel_error.abs() < 1e-8).all()


def _frame(span, em, cert):
    ks = np.arange(1, len(span) + 1)
    rows = [
        {"method": "Spannogram", "cardinality": k, "variance": v, "certified": c, "bound_spectral": v / c,
         "bound_normalized": 0.5, "rho_d": 0.5}
        for k, v, c in zip(ks, span, cert, strict=True)
    ]  # fmt: skip
    rows += [
        {"method": "EM", "cardinality": k, "variance": v, "variance_plain": 0.9 * v}
        for k, v in zip(ks, em, strict=True)
    ]
    return pd.DataFrame(rows)


def test_claim_checks_can_fail():
    same = _frame([1.0, 2.0, 3.0], [1.0, 2.0, 2.99], [0.9, 0.6, 0.5])
    worse = _frame([1.0, 2.0, 3.0], [0.8, 2.0, 3.0], [0.9, 0.3, 0.5])
    assert asteris2014_fig4.check_similar(same).verdict == REPRODUCED
    assert asteris2014_fig4.check_similar(worse).verdict != REPRODUCED
    assert asteris2014_fig4.check_at_least(2, 0.58)(same).verdict == REPRODUCED
    assert asteris2014_fig4.check_at_least(2, 0.58)(worse).verdict == NOT_REPRODUCED
    assert asteris2014_fig4.check_at_least(3, 0.52)(same).verdict == PARTIAL
    assert asteris2014_fig4.check_certified_range(same).verdict == REPRODUCED
    assert asteris2014_fig4.check_certified_range(worse).verdict == NOT_REPRODUCED
