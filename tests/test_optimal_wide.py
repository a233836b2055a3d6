"""The wide-data route of :func:`repro.optimal_sparse_pca` (issue 37, N << p): every screening bound is a
certified upper bound (brute force over the supports that hold each feature), the route agrees with the
covariance route and with brute force, never forms the ``p x p`` covariance, and a stopped search keeps a
certified gap."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest
from scipy.optimize import linprog

from repro import Covariance, optimal_sparse_pca, optimal_sparse_pca_wide
from repro.optimal import estimator as optimal_mod
from repro.optimal.wide import (
    WIDE_MIN_FEATURES,
    _knapsack,
    _thin_eig,
    _top_sum_excluding,
    screening_bounds,
    solve_wide,
    support_value,
    two_by_two_bounds,
)


def _brute_containing(C, kmax, nonneg=False):
    """``out[k - 1, i] = _brute(C, k, nonneg, containing=i)`` for ``k = 1..kmax``, each support evaluated
    once (``_brute`` per feature and ``k`` evaluates a support once per feature it holds, per ``k``)."""
    p = C.shape[0]
    out = np.full((kmax, p), -np.inf)
    for m in range(1, kmax + 1):
        for T in itertools.combinations(range(p), m):
            v = _support_opt(C, list(T), nonneg)
            out[m - 1 :, list(T)] = np.maximum(out[m - 1 :, list(T)], v)
    return out


def _factor(X):
    return (X - X.mean(axis=0)) / np.sqrt(X.shape[0] - 1)


def _wide(seed, n=6, p=14):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, p)) * rng.uniform(0.2, 3.0, p)


def _support_opt(C, T, nonneg):
    """``max x'C x`` over unit ``x`` supported on ``T`` (and ``x > 0`` there when ``nonneg``: at the
    non-negative optimum ``x`` is a positive eigenvector of ``C_T`` on its support ``T``); -inf if none."""
    w, U = np.linalg.eigh(C[np.ix_(T, T)])
    if not nonneg:
        return w[-1]
    u = U[:, -1]
    return w[-1] if (u > 1e-12).all() or (u < -1e-12).all() else -np.inf


def _brute(C, k, nonneg=False, containing=None):
    best = -np.inf
    for m in range(1, k + 1):
        for T in itertools.combinations(range(C.shape[0]), m):
            if containing is None or containing in T:
                best = max(best, _support_opt(C, list(T), nonneg))
    return best


def _solve(X, k, nonneg=False, **kw):
    args = dict(
        nonneg=nonneg, gap=1e-9, time_limit=None, max_nodes=None, eig_limit=40, root_em=False,
        root_spannogram=True, verbose=False,
    )  # fmt: skip
    args.update(kw)
    return solve_wide(X, k, t0=time.perf_counter(), **args)


def test_top_sum_excluding_matches_a_loop():
    rng = np.random.default_rng(0)
    vals = rng.integers(0, 4, size=(9, 3)).astype(float)  # ties included
    for m in (0, 1, 2, 5, 8):
        out = _top_sum_excluding(vals, m)
        for j in range(9):
            for c in range(3):
                rest = np.delete(vals[:, c], j)
                assert out[j, c] == pytest.approx(np.sort(rest)[::-1][:m].sum())


def test_knapsack_is_the_linear_program():
    rng = np.random.default_rng(1)
    for _ in range(20):
        lam = np.sort(rng.exponential(size=5))[::-1]
        cap = rng.uniform(0, 0.6, size=5)
        lp = linprog(-lam, A_ub=np.ones((1, 5)), b_ub=[1.0], bounds=list(zip(np.zeros(5), cap, strict=True)))
        assert _knapsack(lam, cap) == pytest.approx(-lp.fun, rel=1e-9, abs=1e-12)


def test_thin_eig_is_the_covariance_spectrum():
    X = _wide(2)
    G = _factor(X)
    lam, V = _thin_eig(G)
    C = np.cov(X, rowvar=False)
    np.testing.assert_allclose((V * lam) @ V.T, C, atol=1e-10)
    np.testing.assert_allclose(lam, np.linalg.eigvalsh(C)[::-1][: lam.size], rtol=1e-10)


@pytest.mark.parametrize("nonneg", [False, True])
def test_every_screening_bound_is_certified(nonneg):
    """Root and per-feature bounds (trace, eigen-knapsack, 2 x 2) against brute force, on data chosen here
    (12 random problems, k = 1..4)."""
    for seed in range(12):
        X = _wide(100 + seed)
        G = _factor(X)
        C = G.T @ G
        opt = _brute_containing(C, 4, nonneg)  # opt[k - 1, i]: the best support of size <= k holding i
        signed = opt if not nonneg else _brute_containing(C, 4, False)
        for k in (1, 2, 3, 4):
            root, U = screening_bounds(G, k, nonneg=nonneg)
            U2 = two_by_two_bounds(G, np.arange(C.shape[0]), k)
            assert root >= opt[k - 1].max() * (1 - 1e-10)  # every support holds some feature
            for i in range(C.shape[0]):
                assert U[i] >= opt[k - 1, i] * (1 - 1e-10) - 1e-12, (seed, k, i)
                assert U2[i] >= signed[k - 1, i] * (1 - 1e-10), (seed, k, i)


def test_the_knapsack_bound_is_tight_for_one_feature():
    G = _factor(_wide(3))
    _root, U = screening_bounds(G, 1)
    np.testing.assert_allclose(U, np.einsum("ij,ij->j", G, G), rtol=1e-10)


@pytest.mark.parametrize("nonneg", [False, True])
def test_wide_route_agrees_with_brute_force_and_the_covariance_route(nonneg):
    for seed in range(6):
        X = _wide(200 + seed)
        C = np.cov(X, rowvar=False)
        for k in (1, 2, 3, 5):
            res = _solve(X, k, nonneg)
            ref = optimal_sparse_pca(C, k, nonneg=nonneg, precomputed=True, gap=1e-9)
            opt = _brute(C, k, nonneg)
            assert res.proven and res.status == "optimal"
            assert res.value == pytest.approx(opt, rel=1e-7)
            assert ref.value == pytest.approx(opt, rel=1e-7)
            assert res.upper_bound >= opt * (1 - 1e-9)
            x = res.component
            assert np.count_nonzero(x) <= k and np.linalg.norm(x) == pytest.approx(1.0)
            assert x @ C @ x == pytest.approx(res.value, rel=1e-9)
            if nonneg:
                assert (x >= 0).all()


def test_dispatch_never_forms_the_covariance(monkeypatch):
    """Data with n < p and p >= WIDE_MIN_FEATURES: the p x p matrix is never built (``_as_matrix`` is not
    called), and the answer is the covariance route's."""
    rng = np.random.default_rng(5)
    p = WIDE_MIN_FEATURES + 20
    X = rng.standard_normal((8, 3)) @ rng.standard_normal((3, p)) + 0.1 * rng.standard_normal((8, p))
    X[:, :4] *= 3.0
    ref = optimal_sparse_pca(np.cov(X, rowvar=False), 2, precomputed=True)

    def refuse(*_a, **_k):
        raise AssertionError("the p x p covariance was formed")

    monkeypatch.setattr(optimal_mod, "_as_matrix", refuse)
    res = optimal_sparse_pca(X, 2)
    assert res.proven
    assert res.value == pytest.approx(ref.value, rel=1e-6)
    assert "candidates" in res.prunes
    with pytest.raises(ValueError, match="k"):
        optimal_sparse_pca(X, p + 1)


def test_levels_are_each_cardinalitys_result():
    """``levels``: k = 1..k in order, each with its own node count; the returned result counts them all."""
    X = _wide(8, n=6, p=16)
    C = np.cov(X, rowvar=False)
    levels = {}
    res = _solve(X, 4, levels=levels)
    assert sorted(levels) == [1, 2, 3, 4] and res.n_nodes == sum(r.n_nodes for r in levels.values())
    for j, r in levels.items():
        assert r.proven and r.value == pytest.approx(_brute(C, j), rel=1e-7)
        assert np.count_nonzero(r.component) <= j


@pytest.mark.parametrize("nonneg", [False, True])
def test_the_public_wide_route_gives_every_cardinality(nonneg):
    """``repro.optimal_sparse_pca_wide``: cardinality -> result for 1..k, each the brute-force optimum and
    the same as :func:`repro.optimal_sparse_pca` at that k; data times 2^-300 give the same components
    with values times 2^-600 (the door's exact scaling)."""
    X = _wide(9, n=6, p=14)
    C = np.cov(X, rowvar=False)
    levels = optimal_sparse_pca_wide(X, 4, nonneg=nonneg)
    assert sorted(levels) == [1, 2, 3, 4]
    for j, r in levels.items():
        assert r.proven and r.value == pytest.approx(_brute(C, j, nonneg), rel=1e-7)
        assert np.count_nonzero(r.component) <= j and (not nonneg or r.component.min() >= 0)
        ref = optimal_sparse_pca(C, j, nonneg=nonneg, precomputed=True)
        assert r.value == pytest.approx(ref.value, rel=1e-9)
    tiny = optimal_sparse_pca_wide(X * 2.0**-300, 4, nonneg=nonneg)
    for j, r in tiny.items():
        np.testing.assert_allclose(r.component, levels[j].component, atol=1e-9)
        assert r.value / 2.0**-600 == pytest.approx(levels[j].value, rel=1e-9)


def test_the_public_wide_route_refuses_what_it_does_not_take():
    X = _wide(9, n=6, p=14)
    with pytest.raises(ValueError, match=r"X of shape \(14, 6\) has n_samples >= n_features"):
        optimal_sparse_pca_wide(X.T.copy(), 2)
    with pytest.raises(ValueError, match=r"X is a repro\.Covariance"):
        optimal_sparse_pca_wide(Covariance.from_data(X), 2)
    with pytest.raises(ValueError, match=r"k must be in \[1, 14\]; got 15"):
        optimal_sparse_pca_wide(X, 15)
    for bad in ({"nonneg": "no"}, {"gap": -1.0}, {"max_nodes": 1.5}, {"time_limit": np.inf}):
        name = next(iter(bad))
        with pytest.raises(ValueError, match=rf"'{name}' parameter of optimal_sparse_pca_wide must be"):
            optimal_sparse_pca_wide(X, 2, **bad)


def test_support_value_on_the_small_side():
    """``lambda_max(C_S)`` through ``G_S G_S'`` (n x n) when ``|S| > n`` equals the ``|S| x |S|`` one."""
    X = _wide(6, n=4, p=10)
    G = _factor(X)
    S = np.arange(7)
    x, val = support_value(G, S, False)
    C = G.T @ G
    assert val == pytest.approx(np.linalg.eigvalsh(C[np.ix_(S, S)])[-1], rel=1e-10)
    assert x @ C[np.ix_(S, S)] @ x == pytest.approx(val, rel=1e-10)


def test_a_stopped_search_keeps_a_certified_gap():
    """With no nodes and no root heuristics beyond the eigenvector, the bound still holds and ``proven``
    says whether the gap was reached."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((10, 40)) * rng.uniform(0.5, 1.5, 40)
    C = np.cov(X, rowvar=False)
    res = _solve(X, 6, max_nodes=0, root_spannogram=False)
    opt = optimal_sparse_pca(C, 6, precomputed=True).value
    assert res.upper_bound >= opt * (1 - 1e-9)
    assert res.value <= opt * (1 + 1e-9)
    assert res.proven == (res.gap <= 1e-9)
    if not res.proven:
        assert res.status in {"node_limit", "too_many_candidates"}
    small = _solve(X, 6, max_candidates=1, root_spannogram=False)
    assert small.upper_bound >= opt * (1 - 1e-9)
    if small.prunes["candidates"] > 1:
        assert small.status == "too_many_candidates" and not small.proven


@pytest.mark.parametrize("scale", [2.0**-500, 1e-150, 1e150])
def test_badly_scaled_wide_data_give_the_scaled_answer(scale):
    """Wide data are fitted as ``X / s`` (a power of two): the same component and node count, the value
    and bounds times ``s^2``. Before, ``X * 1e-160`` formed its ``n x n`` Gram matrix in subnormal
    numbers and returned 0.94x the optimum with status "optimal"."""
    X = np.random.default_rng(4).standard_normal((20, WIDE_MIN_FEATURES + 20))
    ref = optimal_sparse_pca(X, 3)
    got = optimal_sparse_pca(X * scale, 3)
    assert got.status == ref.status == "optimal"
    if scale == 2.0 ** np.round(np.log2(scale)):  # X / s is X itself: the same search, node for node
        assert got.n_nodes == ref.n_nodes
    np.testing.assert_allclose(got.component, ref.component, rtol=1e-10, atol=1e-14)  # 1e-150: X * c, c ~ 1
    for name in ("value", "upper_bound", "root_bound"):
        np.testing.assert_allclose(getattr(got, name) / scale**2, getattr(ref, name), rtol=1e-10)


@pytest.mark.parametrize(
    ("scale", "reason"), [(1e-160, "too small"), (1e-300, "too small"), (1e160, "too large")]
)
def test_wide_data_whose_variances_float64_cannot_hold_are_refused(scale, reason):
    X = np.random.default_rng(4).standard_normal((20, WIDE_MIN_FEATURES + 20))
    with pytest.raises(ValueError, match=f"X is {reason} for float64"):
        optimal_sparse_pca(X * scale, 3)
