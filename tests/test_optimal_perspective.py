"""The perspective (Boolean) bound (``repro.optimal.perspective``): every point it evaluates is a valid
upper bound by construction (brute force over every support, on the whole matrix and on a node's allowed
features), at ``k = p`` it is ``lambda_max``, it never ends above the l1 dual it starts from, and the
search that uses it at the root proves the brute-force optimum."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_optimal import _random_cov, brute

from repro.optimal.l1_dual import l1_dual_bound
from repro.optimal.perspective import perspective_bound, perspective_value
from repro.optimal.search import search


def _brute_in(C, A, k, nonneg):
    """The optimum over supports inside ``A`` (brute force on the principal submatrix)."""
    A = np.asarray(A)
    return brute(C[np.ix_(A, A)], min(k, A.size), nonneg)


def _random_point(rng, p, nonneg):
    """A random ``(V, W, a)``: ``V`` symmetric with zero diagonal (any sign: its ``rho`` is whatever it
    needs), ``W`` not symmetric (its diagonal zero or not), ``a`` positive."""
    V = rng.standard_normal((p, p)) * rng.uniform(0.0, 0.5)
    V = 0.5 * (V + V.T)
    np.fill_diagonal(V, 0.0)
    W = rng.standard_normal((p, p)) * rng.uniform(0.0, 0.5)
    if rng.random() < 0.5:  # the diagonal of W is allowed (the whole row's perspective constraint)
        np.fill_diagonal(W, 0.0)
    W[rng.random(p) < 0.3] = 0.0  # rows that cost nothing
    a = rng.uniform(0.05, 1.0, p)
    return V, W, a


@pytest.mark.parametrize("seed", range(8))
def test_every_point_is_a_bound_against_brute_force(seed):
    """``g(V, W, a)`` at random points (not minimized) is at least the brute-force optimum, signed and
    ``x >= 0``, on the whole matrix and restricted to random allowed sets with the same constant."""
    rng = np.random.default_rng(seed)
    p = 8
    C = _random_cov(rng, p)
    for nonneg in (False, True):
        for k in (1, 2, 3, 5, p):
            V, W, a = _random_point(rng, p, nonneg)
            b, M, add = perspective_value(C, V, W, a, k, nonneg)
            assert b >= brute(C, k, nonneg)
            for _ in range(3):
                A = np.sort(rng.choice(p, int(rng.integers(2, p + 1)), replace=False))
                lam = np.linalg.eigvalsh(M[np.ix_(A, A)])[-1]
                assert lam + add >= _brute_in(C, A, k, nonneg)


def test_the_bound_is_tight_where_the_inequalities_are():
    """With ``W = 0``, ``V = 0`` and ``a = 0`` the value is ``lambda_max(C)`` rounded upward only slightly; a
    ``W`` that is not zero adds exactly its top-``k`` ``||w_i||^2 / (4 a_i)`` (the other rows are free)."""
    rng = np.random.default_rng(1)
    p, k = 7, 3
    C = _random_cov(rng, p)
    lam = np.linalg.eigvalsh(C)[-1]
    b0, _, _ = perspective_value(C, np.zeros((p, p)), np.zeros((p, p)), np.zeros(p), k)  # a: any, W = 0
    assert lam <= b0 <= lam * (1 + 1e-12)
    W = np.zeros((p, p))
    W[0, 1] = 2.0  # row 0 costs 4 / (4 a_0) = 1 / a_0; W_s adds +-1 off the diagonal of M
    _, M1, add1 = perspective_value(C, np.zeros((p, p)), W, np.full(p, 0.5), k)
    assert add1 == pytest.approx(2.0, rel=1e-12)
    assert np.array_equal(M1[[0, 1], [1, 0]], C[[0, 1], [1, 0]] - 1.0)


@pytest.mark.parametrize("seed", range(6))
def test_minimized_bound_holds_and_never_ends_above_the_l1_start(seed):
    rng = np.random.default_rng(10 + seed)
    p = 9
    C = _random_cov(rng, p)
    for nonneg in (False, True):
        for k in (2, 4, 6):
            l1, U, _ = l1_dual_bound(C, k, nonneg=nonneg, iters=40)
            b, M, add = perspective_bound(C, k, U, nonneg=nonneg, iters=60)
            opt = brute(C, k, nonneg)
            assert b >= opt
            assert b <= l1 * (1 + 2e-6)  # its start is the l1 point with a_i at 1e-6 of lambda_max
            assert np.linalg.eigvalsh(M)[-1] + add <= b * (1 + 1e-12)


@pytest.mark.parametrize("nonneg", [False, True])
def test_minimized_bound_at_every_k_against_brute_force(nonneg):
    """p = 12 (10 with ``x >= 0``), every ``k``: the minimized bound is at least the brute-force
    optimum, its ``M`` and ``add`` bound every support (the nodes' use), and it is at most the l1 dual
    it starts from."""
    rng = np.random.default_rng(21 + nonneg)
    p = 10 if nonneg else 12  # x >= 0: the brute force enumerates the sub-supports
    C = _random_cov(rng, p)
    for k in range(1, p + 1):
        l1, U, _ = l1_dual_bound(C, k, nonneg=nonneg, iters=30)
        b, M, add = perspective_bound(C, k, U, nonneg=nonneg, iters=150)
        opt = brute(C, k, nonneg)
        assert opt <= b <= l1 * (1 + 1e-9)  # the same l1 point, rounded by each its own way
        assert opt <= np.linalg.eigvalsh(M)[-1] + add <= b
        A = np.sort(rng.choice(p, 7, replace=False))
        assert _brute_in(C, A, k, nonneg) <= np.linalg.eigvalsh(M[np.ix_(A, A)])[-1] + add


def test_at_k_equal_p_it_is_lambda_max():
    """Every unit vector is allowed at ``k = p``: the optimum is ``lambda_max(C)``, and the bound from the
    l1 dual's ``U`` (``rho = 0`` is among its starts) is within its floor of it."""
    rng = np.random.default_rng(4)
    p = 12
    C = _random_cov(rng, p)
    lam = np.linalg.eigvalsh(C)[-1]
    _, U, _ = l1_dual_bound(C, p, iters=20)
    b, _, _ = perspective_bound(C, p, U, iters=30)
    assert lam <= b <= lam * (1 + 2e-6)


def test_it_closes_part_of_the_l1_gap_on_a_factor_instance():
    """A three-factor covariance plus a diagonal (p = 30, k = 8): the perspective rows lower the bound
    below the l1 dual's (measured 0.23% lower; the threshold is 0.1%)."""
    rng = np.random.default_rng(10)
    p, k = 30, int(rng.choice([3, 5, 8]))
    assert k == 8
    F = rng.standard_normal((p, 3)) * [3.0, 2.0, 1.0]
    C = F @ F.T + np.diag(rng.uniform(0.2, 2.0, p))
    l1, U, _ = l1_dual_bound(C, k, iters=150)
    b, _, _ = perspective_bound(C, k, U, iters=150)
    S = np.argsort(-np.abs(np.linalg.eigh(C)[1][:, -1]))[:k]  # a feasible support: its value is below both
    assert np.linalg.eigvalsh(C[np.ix_(S, S)])[-1] <= b < l1 * (1 - 1e-3), (b, l1)


@pytest.mark.parametrize("nonneg", [False, True])
def test_the_search_with_it_proves_the_brute_force_optimum(nonneg):
    rng = np.random.default_rng(5)
    for _ in range(3):
        p = int(rng.integers(7, 11))
        C = _random_cov(rng, p)
        for k in (2, 3, 5):
            res = search(C, k, nonneg=nonneg, gap=1e-9, root_dual=40, root_perspective=40)
            opt = brute(C, k, nonneg)
            assert res.proven and res.value == pytest.approx(opt, rel=1e-9)
            assert res.upper_bound >= opt * (1 - 1e-12) and res.root_bound >= opt


def test_small_cases_exhaustively_are_bounded():
    """Every support of a 5 x 5 matrix at every ``k``, with the minimized point."""
    rng = np.random.default_rng(7)
    C = _random_cov(rng, 5)
    for k in range(1, 6):
        _, U, _ = l1_dual_bound(C, k, iters=20)
        b, M, add = perspective_bound(C, k, U, iters=40)
        for m in range(1, k + 1):
            for S in itertools.combinations(range(5), m):
                S = list(S)
                lam = np.linalg.eigvalsh(C[np.ix_(S, S)])[-1]
                assert lam <= b
                assert lam <= np.linalg.eigvalsh(M[np.ix_(S, S)])[-1] + add


def test_the_root_dual_and_the_perspective_are_taken_when_asked():
    """``optimal_sparse_pca``'s default is ``root_dual=0`` (the same answer as asking for it); with 300
    its root bound is below the one without it on a Wishart covariance; ``root_perspective`` is refused
    below 0 by name and, when given, never leaves the root bound above the l1 dual's."""
    from sklearn.utils._param_validation import InvalidParameterError

    from repro import optimal_sparse_pca

    A = np.random.default_rng(0).standard_normal((60, 30))
    C = A.T @ A / 60
    default = optimal_sparse_pca(C, 4, precomputed=True, max_nodes=0)
    asked = optimal_sparse_pca(C, 4, precomputed=True, max_nodes=0, root_dual=300)
    off = optimal_sparse_pca(C, 4, precomputed=True, max_nodes=0, root_dual=0)
    assert default.root_bound == off.root_bound and default.value == off.value
    assert asked.root_bound < off.root_bound * (1 - 1e-3)
    both = optimal_sparse_pca(C, 4, precomputed=True, max_nodes=0, root_dual=300, root_perspective=50)
    assert both.root_bound <= asked.root_bound and both.value == asked.value
    with pytest.raises(InvalidParameterError, match="root_perspective"):
        optimal_sparse_pca(C, 4, precomputed=True, root_perspective=-1)
