"""The l1 (DSPCA-dual) bound of the exact sparse PCA solver: its NumPy twin, its validity against brute
force at random nodes (signed and non-negative), the Cholesky certificate it rests on, and the searches
it takes part in (brute force with it on and off, its prune counter)."""

from __future__ import annotations

import numpy as np
import pytest
from test_optimal import _node, _random_cov, brute

from repro.optimal import _kernels as K
from repro.optimal.search import search


def twin_l1_matrix(C, A, rho, nonneg):
    """C_A minus U_A, U = C clipped to [-rho, rho] (to (-inf, rho] when nonneg) off the diagonal, 0 on it."""
    M = C[np.ix_(A, A)]
    U = np.minimum(M, rho) if nonneg else np.clip(M, -rho, rho)
    np.fill_diagonal(U, 0.0)
    return M - U


def twin_l1(C, A, k, rho, nonneg):
    """lambda_max(C_A - U_A) + rho (k - 1)."""
    return float(np.linalg.eigvalsh(twin_l1_matrix(C, A, rho, nonneg))[-1] + rho * (k - 1))


def _as_corr(C):
    s = np.sqrt(np.diag(C))
    return C / np.outer(s, s)


@pytest.mark.parametrize("nonneg", [False, True])
def test_l1_bound_twin_and_validity(nonneg):
    """At random nodes and random rho: the kernel's matrix equals the twin's, its bound (one evaluation,
    no search) is the twin's value to the certificate's margin, and every value bounds the node's brute-force
    optimum; with the search, a pruning answer (at most the threshold) is never below that optimum."""
    rng = np.random.default_rng(137 + nonneg)
    n_pruned = 0
    for trial in range(80):
        p = int(rng.integers(5, 10))
        k = int(rng.integers(2, p))
        C = _random_cov(rng, p)
        if trial % 3 == 0:
            C = _as_corr(C)
        I, F, _r = _node(rng, p, k)
        if len(F) < 1:
            continue
        A = np.concatenate((I, F)).astype(np.int64)
        opt = brute(C, k, nonneg, I=tuple(I), F=F)
        tol = 1e-9 * max(1.0, abs(opt))
        off = np.abs(C[np.ix_(A, A)] - np.diag(np.diag(C[np.ix_(A, A)])))
        for rho in (0.0, rng.uniform(0, off.max()), off.max()):
            np.testing.assert_allclose(K.l1_matrix(C, A, rho, nonneg), twin_l1_matrix(C, A, rho, nonneg))
            assert twin_l1(C, A, k, rho, nonneg) >= opt - tol
            v = np.ones(len(A))
            b, r = K.l1_bound(C, A, k, rho, -np.inf, nonneg, v, 1)  # threshold -inf: no pruning, no search
            hi = np.max(np.where(np.eye(len(A)) > 0, -np.inf, C[np.ix_(A, A)] if nonneg else off))
            assert r == min(rho, hi)  # rho past the largest entry changes nothing (nonneg: positive entry)
            tw = twin_l1(C, A, k, r, nonneg)
            assert tw - tol <= b <= tw * (1 + 1e-6) + 1e-9
        # the search: a certified bound either way, and a prune only when the optimum is at most thr
        for frac in (0.9, 1.0, 1.05, 1.3):
            thr = opt * frac
            v = np.ones(len(A))
            b, r = K.l1_bound(C, A, k, -1.0, thr, nonneg, v, 16)
            assert b >= opt - tol and r >= 0.0
            if b <= thr:
                n_pruned += 1
                assert opt <= thr + tol
    assert n_pruned > 0  # the search does prune some of these nodes


def test_below_certificate():
    """``below(M, t)``: true just above lambda_max, false just below it, and for an indefinite matrix too."""
    rng = np.random.default_rng(8)
    for n in (1, 2, 5, 30, 101):
        X = rng.standard_normal((n, n))
        M = X + X.T
        lam = np.linalg.eigvalsh(M)[-1]
        scale = np.abs(lam) + np.abs(M).max()
        # the deadline passed as the bounds pass it (the signature the quick run cached)
        assert K.below(M, lam + 1e-8 * scale, np.inf)
        assert not K.below(M, lam - 1e-8 * scale, np.inf)
        assert not K.below(M, lam, np.inf)  # the margin errs on the safe side
    # a multiple of the identity: lambda_max = 2 exactly
    assert K.below(2.0 * np.eye(4), 2.0 + 1e-9, np.inf) and not K.below(2.0 * np.eye(4), 2.0, np.inf)


def test_l1_root_bound_on_communities_is_tight():
    """On Berk & Bertsimas's Communities (covariance, k = 10) the l1 bound over all features is within 7%
    of the optimum (0.4452 after their scale; 1.7808 after this solver's power-of-two scaling), where the
    trace, Li & Xie's cut and lambda_max give 65% or more."""
    from data_fetch import load_spca_optimal

    C = load_spca_optimal("berk_bertsimas", "communities", correlation=False)
    C = C / 2.0 ** np.round(np.log2(np.max(np.diag(C))))
    k, opt = 10, 1.7807730716828587
    A = np.arange(C.shape[0], dtype=np.int64)
    v = np.ones(len(A))
    b, rho = K.l1_bound(C, A, k, -1.0, -np.inf, False, v, 40)
    assert opt <= b <= 1.07 * opt
    assert twin_l1(C, A, k, rho, False) == pytest.approx(b, rel=1e-6)
    assert min(np.linalg.eigvalsh(C)[-1], np.sort(np.diag(C))[-k:].sum()) > 1.6 * opt


@pytest.mark.parametrize("nonneg", [False, True])
def test_search_with_and_without_l1_agrees_with_brute_force(nonneg):
    """Brute force with the l1 bound (and its branching rule) on and off."""
    rng = np.random.default_rng(71 + nonneg)
    for _ in range(8):
        p = int(rng.integers(6, 10))
        k = int(rng.integers(2, p - 1))
        C = _random_cov(rng, p)
        opt = brute(C, k, nonneg)
        for l1, br in ((0, False), (8, False), (8, True)):
            res = search(C, k, nonneg=nonneg, gap=1e-9, l1_evals=l1, branch_l1=br)
            assert res.proven and res.value == pytest.approx(opt, rel=1e-7)
            assert res.upper_bound >= opt * (1 - 1e-9)
            if l1 == 0:
                assert res.prunes["l1_dual"] == 0


def test_l1_proves_communities_covariance_k10():
    """Berk & Bertsimas's Communities (covariance, p = 101) at k = 10: their asserted 0.4452, proven with
    the l1 bound pruning (9,193 nodes without it, 221 with it, about 200 with its branching rule)."""
    from data_fetch import load_spca_optimal

    C = load_spca_optimal("berk_bertsimas", "communities", correlation=False)
    res = search(C, 10, nonneg=False, gap=1e-6, max_nodes=1000)
    assert res.proven and res.value == pytest.approx(0.4452, rel=1e-3)
    assert res.prunes["l1_dual"] > 0
