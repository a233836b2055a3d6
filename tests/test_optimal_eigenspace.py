"""The l1-relaxation bound over a top eigenspace (``repro.optimal.eigenspace``): the support function of
``{||x||_2 <= 1, ||x||_1 <= sqrt(k)}`` against its closed forms and a brute-force maximization over the
set's vertices; the bound against brute force over every support (signed and non-negative, every ``k``,
``U = 0`` and the l1 dual's ``U``), ``lambda_max`` at ``k = p``, and the exact optimum where the inequalities
are tight (``k = 1`` on a rank-``r`` matrix)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_optimal import _random_cov, brute

from repro.optimal.eigenspace import eigenspace_bound, l1_ball_support
from repro.optimal.l1_dual import l1_dual_bound


def _support_by_bisection(z, k, nonneg):
    """``max z'x`` over ``T`` by its optimality condition: ``x = soft(a, t) / ||soft(a, t)||`` at the ``t``
    where ``||x||_1 = sqrt(k)`` (the ratio ``||soft||_1 / ||soft||_2`` falls with ``t``), or ``t = 0`` when
    ``a`` itself is inside; the value at a feasible point (a lower value of the maximum)."""
    a = np.maximum(z, 0.0) if nonneg else np.abs(z)
    if not a.any():
        return 0.0

    def at(t):
        x = np.maximum(a - t, 0.0)
        return float(a @ x) / max(np.linalg.norm(x), np.sum(x) / np.sqrt(k))

    if np.sum(a) <= np.sqrt(k) * np.linalg.norm(a):
        return at(0.0)
    lo, hi = 0.0, float(a.max())
    for _ in range(200):
        t = 0.5 * (lo + hi)
        x = np.maximum(a - t, 0.0)
        lo, hi = (t, hi) if np.sum(x) > np.sqrt(k) * np.linalg.norm(x) else (lo, t)
    return max(at(lo), at(hi))


@pytest.mark.parametrize("nonneg", [False, True])
def test_support_function_closed_forms_and_scan(nonneg):
    rng = np.random.default_rng(5)
    for _ in range(20):
        p = int(rng.integers(2, 12))
        z = rng.standard_normal(p) * rng.uniform(0.1, 5.0)
        a = np.maximum(z, 0.0) if nonneg else np.abs(z)
        # k = 1: the l1 ball inside the 2-ball, a vertex: max |z_i|; k >= p: the 2-ball, ||z||
        assert l1_ball_support(z, 1, nonneg)[0] == pytest.approx(a.max(), rel=1e-12)
        assert l1_ball_support(z, p, nonneg)[0] == pytest.approx(np.linalg.norm(a), rel=1e-12)
        for k in range(1, p + 1):
            h = float(l1_ball_support(z, k, nonneg)[0])
            assert h >= _support_by_bisection(z, k, nonneg)  # an upper value of the maximum
            assert h <= _support_by_bisection(z, k, nonneg) * (1 + 1e-6) + 1e-12  # and close to it


@pytest.mark.parametrize("nonneg", [False, True])
@pytest.mark.parametrize("with_u", [False, True])
def test_at_least_brute_force_every_k(nonneg, with_u):
    rng = np.random.default_rng(21 + 2 * nonneg + with_u)
    for _ in range(4):
        p = int(rng.integers(4, 10))
        C = _random_cov(rng, p)
        for k in range(1, p + 1):
            U = l1_dual_bound(C, k, nonneg=nonneg, iters=20)[1] if with_u else None
            opt = brute(C, k, nonneg)
            for r in (0, 1, 2, 3):
                b, info = eigenspace_bound(C, k, U, r=r, nonneg=nonneg, tol=1e-3)
                assert b >= opt
                assert info["phi"] >= info["phi_found"]


def test_at_least_brute_force_p16():
    """The largest brute-force size, every ``k``: on a spiked covariance, where the top eigenspace matters."""
    rng = np.random.default_rng(4)
    p = 16
    v = np.zeros(p)
    v[:5] = 1.0 / np.sqrt(5)
    A = rng.standard_normal((40, p))
    C = A.T @ A / 40 + 3.0 * np.outer(v, v)
    for k in range(1, p + 1):
        opt = brute(C, k)
        b, _info = eigenspace_bound(C, k, r=2, tol=1e-3)
        assert opt <= b


def test_at_k_equal_p_it_is_lambda_max():
    rng = np.random.default_rng(9)
    for p in (5, 9, 14):
        C = _random_cov(rng, p)
        lam = float(np.linalg.eigvalsh(C)[-1])
        for r in (0, 1, 2, 3):
            b, _info = eigenspace_bound(C, p, r=r, tol=1e-7, max_cells=20000)
            assert lam <= b <= lam * (1 + 1e-6)


@pytest.mark.parametrize("nonneg", [False, True])
def test_exact_at_k_one_on_a_rank_r_matrix(nonneg):
    """At ``k = 1``, ``T`` is the l1 ball and ``phi`` its largest ``L_ii``; with ``rank C = r`` the rest is 0:
    the bound is ``max C_ii`` (the optimum at ``k = 1``) to the search's tolerance."""
    rng = np.random.default_rng(2)
    for r in (1, 2, 3):
        F = rng.standard_normal((10, r))
        C = F @ F.T
        if nonneg:
            C = np.abs(C)  # no longer of rank r: then only the inequality
        b, _info = eigenspace_bound(C, 1, r=r, nonneg=nonneg, tol=1e-8, max_cells=20000)
        assert b >= C.diagonal().max()
        if not nonneg:
            assert b == pytest.approx(C.diagonal().max(), rel=1e-6)


def test_search_budget_keeps_a_valid_bound():
    """Stopped after its first cells, the bound is the largest upper value left: larger, still valid."""
    rng = np.random.default_rng(13)
    C = _random_cov(rng, 9)
    for k in (2, 4):
        full, _ = eigenspace_bound(C, k, r=3, tol=1e-8, max_cells=100000)
        short, info = eigenspace_bound(C, k, r=3, tol=1e-8, max_cells=1)
        assert short >= full >= brute(C, k)
        assert info["cells"] <= 1 + 3 * 16 * 2


def test_r_zero_is_the_l1_dual_value():
    rng = np.random.default_rng(1)
    C = _random_cov(rng, 12)
    bd, U, _rho = l1_dual_bound(C, 4, iters=40)
    b, _info = eigenspace_bound(C, 4, U, r=0)
    assert b == pytest.approx(bd, rel=1e-10)


def test_support_enumeration_of_small_sets():
    """On ``p = 3`` the bound with ``r = 2`` is at least the optimum of every support (each enumerated)."""
    C = np.array([[2.0, 1.0, 0.5], [1.0, 2.0, -0.3], [0.5, -0.3, 1.0]])
    for k in (1, 2, 3):
        opt = max(
            float(np.linalg.eigvalsh(C[np.ix_(S, S)])[-1])
            for m in range(1, k + 1)
            for S in itertools.combinations(range(3), m)
        )
        assert eigenspace_bound(C, k, r=2)[0] >= opt
