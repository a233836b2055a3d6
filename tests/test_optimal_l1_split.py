"""The split l1 bound (``repro.optimal._kernels.l1_split_bound``: the fixed-in features' l1 charge kept apart
from the free ones'): its NumPy twin, its validity against brute force at random nodes (signed and
non-negative), that it never exceeds the plain l1 bound at the same ``rho``, and searches with it on and
off against brute force, with its prune counter."""

from __future__ import annotations

import numpy as np
import pytest
from test_optimal import _node, _random_cov, brute
from test_optimal_l1 import _as_corr, twin_l1, twin_l1_matrix

from repro.optimal import _kernels as K
from repro.optimal.search import search


def twin_split(C, A, m, k, rho, theta, nonneg):
    """lambda_max(C_A - U_A + rho D), D = m/theta - 1 on the first m of A, (k-m)/(1-theta) - 1 after."""
    M = twin_l1_matrix(C, A, rho, nonneg)
    d = np.where(np.arange(len(A)) < m, m / theta - 1.0, (k - m) / (1.0 - theta) - 1.0)
    return float(np.linalg.eigvalsh(M + rho * np.diag(d))[-1])


def _start(n):
    """The solver's Lanczos start without symmetry (all ones can lie in an invariant subspace)."""
    return 1.0 + 0.5 * np.sin(np.arange(n) + 1.0)


@pytest.mark.parametrize("nonneg", [False, True])
def test_split_bound_twin_and_validity(nonneg):
    """At random nodes with a fixed-in set, random rho and theta: the twin bounds the brute-force optimum
    of the node; at theta = m / k it equals the plain l1 bound; the kernel's search returns a certified
    value (its twin at the returned theta to the certificate's margin, at most the plain bound) and prunes
    only nodes whose optimum is at most the threshold."""
    rng = np.random.default_rng(3707 + nonneg)
    n_pruned = n_tighter = 0
    for trial in range(80):
        p = int(rng.integers(5, 10))
        k = int(rng.integers(2, p))
        C = _random_cov(rng, p)
        if trial % 3 == 0:
            C = _as_corr(C)
        I, F, _r = _node(rng, p, k)
        m = len(I)
        if m == 0 or len(F) < 1:
            continue
        A = np.concatenate((I, F)).astype(np.int64)
        opt = brute(C, k, nonneg, I=tuple(I), F=F)
        tol = 1e-9 * max(1.0, abs(opt))
        off = np.abs(C[np.ix_(A, A)] - np.diag(np.diag(C[np.ix_(A, A)])))
        for rho in (0.0, rng.uniform(0, off.max()), off.max()):
            for theta in (0.05, m / k, rng.uniform(0.01, 0.99), 0.95):
                assert twin_split(C, A, m, k, rho, theta, nonneg) >= opt - tol
            plain = twin_l1(C, A, k, rho, nonneg)
            assert twin_split(C, A, m, k, rho, m / k, nonneg) == pytest.approx(plain, rel=1e-9, abs=1e-12)
            v = _start(len(A))
            b, th = K.l1_split_bound(C, A, m, k, rho, -np.inf, nonneg, v, 12)
            tw = twin_split(C, A, m, k, rho, th, nonneg)
            assert 0.0 < th < 1.0
            assert opt - tol <= tw and tw - tol <= b <= tw * (1 + 1e-6) + 1e-9
            assert b <= plain * (1 + 1e-6) + 1e-9  # the search starts at the plain bound's theta
            n_tighter += b < plain * (1 - 1e-6)
        for frac in (0.9, 1.0, 1.05, 1.3):
            thr = opt * frac
            v = _start(len(A))
            b, _th = K.l1_split_bound(C, A, m, k, off.max() / 2, thr, nonneg, v, 12)
            assert b >= opt - tol
            if b <= thr:
                n_pruned += 1
                assert opt <= thr + tol
    assert n_pruned > 0 and n_tighter > 0  # it prunes, and moving theta does tighten the bound


@pytest.mark.parametrize("nonneg", [False, True])
def test_search_with_and_without_split_agrees_with_brute_force(nonneg):
    """Brute force with the split bound on and off; off, its counter stays 0."""
    rng = np.random.default_rng(3717 + nonneg)
    for _ in range(10):
        p = int(rng.integers(7, 11))
        k = int(rng.integers(2, p - 1))
        C = _random_cov(rng, p)
        opt = brute(C, k, nonneg)
        for split in (False, True):
            res = search(C, k, nonneg=nonneg, gap=1e-9, l1_split=split)
            assert res.proven and res.value == pytest.approx(opt, rel=1e-7)
            assert res.upper_bound >= opt * (1 - 1e-9)
            if not split:
                assert res.prunes["l1_split"] == 0


def test_split_bound_prunes_arrhythmia_k5():
    """Berk & Bertsimas's Arrhythmia (covariance, p = 274) at k = 5: proven with and without the split
    bound, to the same value; with it the bound prunes and the search needs fewer nodes (139 -> 67 when
    measured)."""
    from data_fetch import load_spca_optimal

    C = load_spca_optimal("berk_bertsimas", "arrhythmia", correlation=False)
    off = search(C, 5, nonneg=False, gap=1e-6, max_nodes=1000, l1_split=False)
    on = search(C, 5, nonneg=False, gap=1e-6, max_nodes=1000)
    assert off.proven and on.proven and on.value == pytest.approx(off.value, rel=1e-9)
    assert on.prunes["l1_split"] > 0 and on.n_nodes < off.n_nodes
