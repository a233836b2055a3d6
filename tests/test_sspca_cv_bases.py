"""SSPCA's cross-validation shares the refit's SVD between penalties that select the same rows."""

from __future__ import annotations

import numpy as np

from repro.baselines import sspca as sspca_module
from repro.baselines.sspca import _cv_error, _held_out_error


def test_shared_bases_give_the_same_errors(monkeypatch):
    """The held-out errors with the per-fold cache of bases are those computed afresh for every penalty,
    bit for bit, and the cache is used (fewer SVDs than penalties x folds on a path where neighbouring
    penalties select the same rows)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 15))
    X[:, :4] += 2.0 * rng.normal(size=(40, 1))
    alphas = np.geomspace(30.0, 0.3, 12)
    folds = np.array_split(rng.permutation(40), 4)
    calls = []
    svd = np.linalg.svd

    def counting_svd(*args, **kwargs):
        calls.append(1)
        return svd(*args, **kwargs)

    monkeypatch.setattr(sspca_module.np.linalg, "svd", counting_svd)
    shared = _cv_error(X, 2, alphas, folds, 500, 1e-6)
    n_shared = len(calls)

    def afresh(Xte, Xtr, V, d, score, bases=None):
        return _held_out_error(Xte, Xtr, V, d, score)

    monkeypatch.setattr(sspca_module, "_held_out_error", afresh)
    calls.clear()
    fresh = _cv_error(X, 2, alphas, folds, 500, 1e-6)
    np.testing.assert_array_equal(shared, fresh)
    assert n_shared < len(calls)
