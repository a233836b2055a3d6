"""Bounds of the certified optimum specific to ``x >= 0`` (``repro.optimal.dnn``, issue 37
part D): the DNN bound holds against brute force at every cardinality, is exact where the DNN relaxation
is (``p <= 4``), and proves at the root every ``k`` above the non-negative optimum's support."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest

from repro import optimal_sparse_pca
from repro.optimal.dnn import certified_lambda_max, dnn_bound


def _nonneg_opt(C, k=None):
    """``max x'Cx`` over unit ``x >= 0`` with at most ``k`` non-zeros, by brute force: at the optimum ``x``
    is a positive eigenvector of ``C_T`` on its support ``T`` (KKT), so the value is the largest eigenvalue
    of a ``C_T`` with a one-signed top eigenvector, over every ``T``."""
    p = C.shape[0]
    best = -np.inf
    for m in range(1, (k or p) + 1):
        for T in itertools.combinations(range(p), m):
            w, U = np.linalg.eigh(C[np.ix_(T, T)])
            u = U[:, -1]
            if (u > 1e-12).all() or (u < -1e-12).all():
                best = max(best, w[-1])
    return best


def _mixed(seed, p, rank=3):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((p, rank)) * rng.uniform(0.3, 2.0, (1, rank))
    return A @ A.T + 0.05 * np.eye(p)


@pytest.mark.parametrize("seed", range(6))
def test_dnn_bound_holds_against_brute_force(seed):
    C = _mixed(seed, 8)
    b, N = dnn_bound(C)
    assert (N >= 0).all() and np.allclose(N, N.T) and not np.diag(N).any()
    assert b >= np.linalg.eigvalsh(C + N)[-1]
    opt = _nonneg_opt(C)
    assert opt <= b * (1 + 1e-12)  # every cardinality's optimum is at most the unconstrained one
    assert b <= np.linalg.eigvalsh(C)[-1] * (1 + 1e-12) + 1e-12  # never worse than N = 0


@pytest.mark.parametrize("seed", range(5))
def test_dnn_bound_is_exact_up_to_four_features(seed):
    """The DNN relaxation equals the non-negative (completely positive) problem for p <= 4 (Maxfield & Minc
    1962 / Diananda), so the bound found is the brute-force optimum up to the minimization's accuracy."""
    C = _mixed(100 + seed, 4, rank=2)
    b, _ = dnn_bound(C)
    assert b == pytest.approx(_nonneg_opt(C), rel=1e-6)


def test_dnn_bound_door_refuses_bad_input_by_name():
    """The public door checks its matrix and parameters; on a good matrix it returns what the root's
    unchecked room returns."""
    from sklearn.utils._param_validation import InvalidParameterError

    from repro.optimal import dnn_bound as public
    from repro.optimal.dnn import _dnn_bound

    C = _mixed(1, 5)
    b, N = public(C)
    b0, N0 = _dnn_bound(C)
    assert b == b0 and np.array_equal(N, N0)
    for bad, word in (
        (C[:, :4], "square"),
        (C + np.triu(np.ones((5, 5)), 1), "symmetric"),
        (np.where(np.eye(5, dtype=bool), np.nan, C), "NaN"),
    ):
        with pytest.raises(ValueError, match=word) as err:
            public(bad)
        assert "C" in str(err.value)
    with pytest.raises(ValueError, match="betas"):
        public(C, betas=(10.0, -1.0))
    with pytest.raises(InvalidParameterError, match="max_iter"):
        public(C, max_iter=0)


def test_certified_lambda_max_rounds_upward():
    rng = np.random.default_rng(3)
    for _ in range(10):
        A = rng.standard_normal((30, 30))
        M = A + A.T
        lam = np.linalg.eigvalsh(M)[-1]
        assert lam <= certified_lambda_max(M) <= lam + 1e-10 * np.linalg.norm(M)


def test_solve_is_proven_at_the_root_above_the_optimums_support():
    """Where the non-negative optimum without a cardinality constraint has ``s < p`` non-zeros, every
    ``k >= s`` has that optimum (brute force), and the DNN bound at the root proves it with no node."""
    rng = np.random.default_rng(7)
    p = 11
    u = np.zeros(p)
    u[:4] = rng.uniform(0.5, 1.0, 4)
    v = rng.standard_normal(p)
    v[:4] = -np.abs(v[:4])  # a second factor that opposes the first block: x >= 0 cannot use both
    C = 3.0 * np.outer(u, u) + np.outer(v, v) + 0.1 * np.eye(p)
    opt_all = _nonneg_opt(C)
    res = optimal_sparse_pca(C, p - 1, nonneg=True, precomputed=True)
    s = int(np.count_nonzero(res.component))
    assert s < p - 1
    for k in range(s, p + 1):
        r = optimal_sparse_pca(C, k, nonneg=True, precomputed=True)
        assert r.proven and r.value == pytest.approx(opt_all, rel=1e-9)
        assert r.n_nodes == 0, (k, r.n_nodes)
        assert r.upper_bound >= opt_all
    for k in range(1, s):  # below the support the bound does not decide, the search does
        r = optimal_sparse_pca(C, k, nonneg=True, precomputed=True)
        assert r.proven and r.value == pytest.approx(_nonneg_opt(C, k), rel=1e-9)


def test_dnn_bound_is_skipped_where_the_cardinality_binds(monkeypatch):
    """The root computes the DNN bound only for an incumbent that is a KKT point without the cardinality
    constraint (otherwise the bound, at least that problem's optimum, cannot prove it); the answers are
    brute force's either way."""
    from repro.optimal import roots

    calls = []
    real = roots._dnn_bound
    monkeypatch.setattr(roots, "_dnn_bound", lambda C: calls.append(1) or real(C))
    rng = np.random.default_rng(2)
    A = np.abs(rng.standard_normal((9, 2)))  # a positive factor: the non-negative optimum is dense
    C = A @ A.T + 0.05 * np.eye(9)
    for k in (2, 4):
        r = optimal_sparse_pca(C, k, nonneg=True, precomputed=True)
        assert r.proven and r.value == pytest.approx(_nonneg_opt(C, k), rel=1e-9)
    assert not calls
    assert not roots._global_kkt(C / C.max(), np.eye(9)[0])
    x = np.linalg.eigh(C)[1][:, -1]
    assert roots._global_kkt(C, np.abs(x))  # the Perron vector of a positive matrix: dense, KKT


def test_optimum_rows_extend_a_dnn_proof_to_larger_k():
    """``experiments._asteris.optimum_rows``: a ``k`` above one whose optimum reaches the DNN bound takes
    that optimum with no search; each such row equals the search at that ``k``."""
    from experiments._asteris import optimum_rows
    from repro import Covariance

    rng = np.random.default_rng(7)
    p = 11
    u = np.zeros(p)
    u[:4] = rng.uniform(0.5, 1.0, 4)
    v = rng.standard_normal(p)
    v[:4] = -np.abs(v[:4])
    C = 3.0 * np.outer(u, u) + np.outer(v, v) + 0.1 * np.eye(p)
    X = rng.standard_normal((400, p)) @ np.linalg.cholesky(C).T
    rows = optimum_rows(X, range(1, p + 1), dataset="t", lam1=1.0, max_nodes=2000).set_index("cardinality")
    assert rows.proven.all()
    S = Covariance.from_data(X).dense()
    reused = rows.index[rows.opt_nodes == 0]
    assert len(reused) >= 3
    for k in reused:
        ref = optimal_sparse_pca(S, int(k), nonneg=True, precomputed=True)
        assert rows.loc[k, "variance"] == pytest.approx(ref.value, rel=1e-8)
        assert rows.loc[k, "bound"] >= ref.value * (1 - 1e-12)


def test_nonneg_k_above_62():
    """``x >= 0`` with ``k > 62`` is searched like any ``k`` (the leaf enumeration has no 64-bit mask):
    proven where the optimum has few non-zeros (the value is the small-``k`` optimum's); on a positive
    factor the optimum is dense, the answer grows with ``k`` and reaches the Perron value at ``k = p``;
    wide data take such ``k`` too."""
    rng = np.random.default_rng(5)
    p = 66
    u = np.zeros(p)
    u[:4] = rng.uniform(0.5, 1.0, 4)
    w = np.zeros(p)
    w[:4] = rng.uniform(0.5, 1.0, 4)
    w[4:8] = -rng.uniform(0.5, 1.0, 4)  # x >= 0 cannot follow w across both blocks; the rest is noise
    C = 3.0 * np.outer(u, u) + 2.0 * np.outer(w, w) + 0.1 * np.eye(p)
    assert np.linalg.eigvalsh(C)[-1] > _nonneg_opt(C[:8, :8]) * 1.01  # lambda_max alone does not prove it
    small = optimal_sparse_pca(C, 8, nonneg=True, precomputed=True)
    assert small.proven and np.count_nonzero(small.component) < 8
    big = optimal_sparse_pca(C, 64, nonneg=True, precomputed=True, root_em=False)
    assert big.proven and big.status == "optimal"
    assert big.value == pytest.approx(small.value, rel=1e-9)  # opt(8) <= opt(64) <= the DNN bound
    A = np.abs(rng.standard_normal((p, 2)))  # a positive factor: the optimum is dense, beyond 62
    D = A @ A.T + 0.1 * np.eye(p)
    lam = np.linalg.eigvalsh(D)[-1]  # the optimum at k = p (the Perron vector)
    prev = 0.0
    for k in (62, 64, 66):
        r = optimal_sparse_pca(D, k, nonneg=True, precomputed=True, root_em=False, max_nodes=20)
        assert r.value <= lam * (1 + 1e-12) and r.upper_bound >= r.value >= prev * (1 - 1e-12)
        assert np.count_nonzero(r.component) <= k and (r.component >= 0).all()
        prev = r.value
    assert np.count_nonzero(r.component) == p and r.proven and r.value == pytest.approx(lam, rel=1e-12)
    t = time.perf_counter()
    wide = optimal_sparse_pca(rng.standard_normal((10, 120)), 63, nonneg=True, time_limit=1.0)
    assert time.perf_counter() - t <= 1.2  # out of time, the cardinalities below k are skipped
    assert np.count_nonzero(wide.component) <= 63 and wide.upper_bound >= wide.value > 0
