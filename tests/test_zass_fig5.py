"""Zass & Shashua (2006) Figure 5 (Pit Props): --quick run end to end, and its PathSPCA deflation helper."""

from __future__ import annotations

import numpy as np
import pytest
from quickrun import check_outputs, quick_run

from experiments import zass2006_fig5
from repro.baselines.pathspca import pathspca
from repro.linalg import Covariance


@pytest.mark.data("pitprops/pitprops.RData")
def test_fig5_quick(tmp_path):
    out = quick_run(zass2006_fig5, tmp_path)
    df, _ = check_outputs(out, "zass2006_fig5", zass2006_fig5)
    assert set(df.method) == set(zass2006_fig5.METHODS)
    assert (df.groupby("method").n_components.max() == 6).all()
    last = df[df.n_components == 6].set_index("method")
    # Every cardinality-constrained method spends Zou et al.'s 7+4+4+1+1+1 = 18 non-zeros.
    for m in ("SPCA", "GSPCA", "emPCA", "PathSPCA"):
        assert last.loc[m, "cumulative_cardinality"] == 18
    np.testing.assert_allclose(
        df[df.method == "PCA"].cumulative_pct.iloc[:3], [32.45, 50.74, 65.19], atol=0.05
    )
    assert (df[df.method == "NSPCA"].min_loading >= 0).all()
    for _, g in df.groupby("method"):
        assert np.all(np.diff(g.sort_values("n_components").cumulative_variance) >= -1e-9)
        assert (g.cumulative_variance <= 13.0 + 1e-9).all()


def _corr(d, seed):
    Z = np.random.default_rng(seed).standard_normal((60, d)) @ np.random.default_rng(
        seed + 1
    ).standard_normal((d, d))
    return np.corrcoef(Z, rowvar=False)


def test_pathspca_components_first_matches_pathspca_and_deflates():
    R = _corr(9, 0)
    cards = (4, 3, 2)
    W = zass2006_fig5.pathspca_components(R, cards)
    assert W.shape == (3, 9)
    np.testing.assert_array_equal(np.count_nonzero(W, axis=1), cards)
    np.testing.assert_allclose(np.linalg.norm(W, axis=1), 1.0)
    start = int(np.argmax(np.abs(np.linalg.eigh(R)[1][:, -1])))
    first = pathspca(Covariance.from_matrix(R), [4], start=start).components[0]
    np.testing.assert_allclose(W[0], first)
    # Projection deflation: the second component is computed on (I - w1 w1') R (I - w1 w1').
    P = np.eye(9) - np.outer(W[0], W[0])
    R2 = P @ R @ P
    start2 = int(np.argmax(np.abs(np.linalg.eigh(R2)[1][:, -1])))
    second = pathspca(Covariance.from_matrix(R2), [3], start=start2).components[0]
    np.testing.assert_allclose(W[1], second, atol=1e-10)
