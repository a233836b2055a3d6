"""Zass & Shashua (2006) experiments and the NSPCA benchmark, end to end in --quick mode."""

from __future__ import annotations

import numpy as np
import pytest
from quickrun import check_outputs

from experiments import bench_nspca, zass2006_fig2, zass2006_fig3, zass2006_fig4


@pytest.mark.data("cbcl_faces/CBCL_Face.mat")
def test_fig2_quick(tmp_path):
    assert zass2006_fig2.main(["--quick", "--out", str(tmp_path)]) == 0
    df, _ = check_outputs(tmp_path, "zass2006_fig2", zass2006_fig2)
    fac = df[df.kind == "factor"]
    assert set(fac.row) == set("abcdef")
    assert (fac.groupby(["row", "factor"]).size() == 361).all()
    nspca = fac[fac.method == "NSPCA"]
    assert (nspca.value >= 0).all()
    norms = fac.groupby(["row", "factor"])["value"].apply(lambda v: np.linalg.norm(v))
    np.testing.assert_allclose(norms[norms > 0], 1.0, rtol=1e-8)
    g = fac[fac.row == "f"]
    assert ((g.value != 0).groupby(g.factor).sum() == 55).all()
    summ = df[df.kind == "summary"].set_index("row")
    assert summ.loc["b", "overlap"] < summ.loc["a", "overlap"]
    assert {"center", "unit-center"} <= set(df[df.kind == "scaling"].preprocessing)


@pytest.mark.data("cbcl_faces/CBCL_Face.mat")
def test_fig3_quick(tmp_path):
    assert zass2006_fig3.main(["--quick", "--out", str(tmp_path)]) == 0
    df, _ = check_outputs(tmp_path, "zass2006_fig3", zass2006_fig3)
    assert set(df.panel) == {"a", "b"}
    assert (df.l0 <= 3610).all() and (df.overlap >= 0).all()


@pytest.mark.data("cbcl_faces/training.pkl")
def test_fig4_quick(tmp_path):
    assert zass2006_fig4.main(["--quick", "--out", str(tmp_path)]) == 0
    df, _ = check_outputs(tmp_path, "zass2006_fig4", zass2006_fig4)
    auc = df[df.kind == "auc"]
    assert set(auc.method) == {"NSPCA", "PCA", "NMF", "GSPCA"}
    assert ((auc.auc > 0.5) & (auc.auc <= 1.0)).all()
    assert (auc.n_test == 6977 - 3000).all()
    roc = df[df.kind == "roc"]
    assert roc.fpr.between(0, 1).all() and roc.tpr.between(0, 1).all()


@pytest.mark.data("cbcl_faces/CBCL_Face.mat")
def test_bench_quick(tmp_path):
    assert bench_nspca.main(["--quick", "--out", str(tmp_path)]) == 0
    df, _ = check_outputs(tmp_path, "bench_nspca", bench_nspca)
    assert set(df.kind) == {"sweep", "fit"}
    assert (df.ratio > 0).all()
    assert df[df.kind == "fit"].converged.all()
