"""The search's own speed-ups (issue 37, CBCL at k = 11..20), each checked against an exact answer:

- ``top_sum`` / ``_top_sum_skip`` (the per-row sums of the Gershgorin and residual bounds) against the
  sorted sums they replace, to the last bit;
- ``swap_search``'s skip test (a 2 x 2 bound on ``lambda_max`` of the swapped support): the same swaps as a
  NumPy twin of the local search without it, and the bound itself against ``eigvalsh``;
- ``split_reachable`` (the test that skips the split l1 bound): its value never above the split bound's
  minimum over ``theta`` (a fine grid of the NumPy twin);
- the "in" child's reuse of its parent's l1 bound (``bnb_run``'s ``stack_l1``): the search with and without
  it agrees with brute force, signed and ``x >= 0``.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_optimal import _random_cov, brute
from test_optimal_l1 import _as_corr, twin_l1_matrix

from repro.optimal import _kernels as K
from repro.optimal.search import search


# --------------------------------------------------------------------------- top sums
def _sorted_sum(v, t):
    """The reference: the t largest in increasing order, summed left to right (np.sort(v)[n - t:].sum()
    in a Numba kernel)."""
    n = len(v)
    if t <= 0 or n == 0:
        return 0.0
    s = 0.0
    for x in v if t >= n else np.sort(v)[n - t :]:
        s += float(x)
    return s


def test_top_sum_is_the_sorted_sum_to_the_bit():
    rng = np.random.default_rng(3701)
    for trial in range(3000):
        n = int(rng.integers(0, 90))
        v = rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3, n)
        if trial % 3 == 0:
            v = np.round(v, 1)  # ties
        t = int(rng.integers(-1, n + 2))
        assert K.top_sum(v, t) == _sorted_sum(v, t)
        if n:
            q = int(rng.integers(0, n))
            assert K._top_sum_skip(v, q, t) == _sorted_sum(np.delete(v, q), t)


# --------------------------------------------------------------------------- swap search
def _value(C, S, nonneg):
    if nonneg:
        return K.nonneg_lower(C, np.asarray(S, np.int64))[0]
    return float(np.linalg.eigvalsh(C[np.ix_(S, S)])[-1])


def twin_swap(C, S, nonneg, max_passes=3):
    """The local search without the skip test: every swap evaluated, first improvement."""
    S = list(S)
    cur = _value(C, S, nonneg)
    for _ in range(max_passes):
        improved = False
        for a in range(len(S)):
            for j in range(C.shape[0]):
                if j in S:
                    continue
                T = list(S)
                T[a] = j
                v = _value(C, T, nonneg)
                if v > cur * (1.0 + 1e-12):
                    S, cur, improved = T, v, True
        if not improved:
            break
    return S


@pytest.mark.parametrize("nonneg", [False, True])
def test_swap_search_takes_the_same_swaps_as_without_the_skip(nonneg):
    rng = np.random.default_rng(3702 + nonneg)
    for trial in range(40):
        p = int(rng.integers(3, 16))
        C = _random_cov(rng, p)
        if trial % 3 == 0:
            C = _as_corr(C)
        k = int(rng.integers(1, p))
        S = rng.choice(p, k, replace=False).astype(np.int64)
        assert K.swap_search(C, S, nonneg, 3, np.inf).tolist() == twin_swap(C, S, nonneg)


def test_swap_skip_bound_is_an_upper_bound():
    """lambda_max(C_T) <= lambda_max [[lambda_max(C_B), ||C_Bj||], [||C_Bj||, C_jj]] for T = B + j."""
    rng = np.random.default_rng(3703)
    for _ in range(300):
        p = int(rng.integers(2, 12))
        C = _random_cov(rng, p)
        perm = rng.permutation(p)
        m = int(rng.integers(0, p - 1))
        B, j = perm[:m], perm[m]
        d = float(np.linalg.eigvalsh(C[np.ix_(B, B)])[-1]) if m else 0.0
        z = float(np.linalg.norm(C[B, j]))
        bound = float(np.linalg.eigvalsh(np.array([[d, z], [z, C[j, j]]]))[-1])
        T = np.append(B, j)
        assert np.linalg.eigvalsh(C[np.ix_(T, T)])[-1] <= bound * (1 + 1e-12) + 1e-12


# --------------------------------------------------------------------------- the split l1 bound's skip test
@pytest.mark.parametrize("nonneg", [False, True])
def test_split_reachable_never_skips_a_reachable_threshold(nonneg):
    """For random allowed sets, rho and unit vectors v: the test's lower bound (computed from the answer at
    a threshold just above and just below it) is below the split bound at every theta of a fine grid, and
    the test passes every threshold at or above the grid's minimum."""
    rng = np.random.default_rng(3704 + nonneg)
    thetas = np.linspace(0.001, 0.999, 999)
    for trial in range(60):
        p = int(rng.integers(4, 10))
        k = int(rng.integers(2, p))
        C = _random_cov(rng, p)
        if trial % 2:
            C = _as_corr(C)
        m = int(rng.integers(1, k))
        A = rng.permutation(p)[: int(rng.integers(k + 1, p + 1))].astype(np.int64)
        n, r = len(A), k - m
        off = np.abs(C[np.ix_(A, A)] - np.diag(np.diag(C[np.ix_(A, A)])))
        rho = float(rng.uniform(0, off.max()))
        M = twin_l1_matrix(C, A, rho, nonneg)
        inside = np.arange(n) < m
        shifts = (rho * np.diag(np.where(inside, m / t - 1, r / (1 - t) - 1)) for t in thetas)
        grid = min(float(np.linalg.eigvalsh(M + D)[-1]) for D in shifts)
        for v in (np.linalg.eigh(M)[1][:, -1], rng.standard_normal(n)):
            u = v / np.linalg.norm(v)
            q = float(u @ M @ u)
            nI = float(u[:m] @ u[:m])
            lb = q - rho + rho * (np.sqrt(m * nI) + np.sqrt(r * max(1 - nI, 0.0))) ** 2
            assert lb <= grid * (1 + 1e-9) + 1e-12
            assert K.split_reachable(C, A, m, k, rho, nonneg, v.copy(), grid)  # a reachable threshold
            assert K.split_reachable(C, A, m, k, rho, nonneg, v.copy(), lb * (1 + 1e-7) + 1e-9)
            if lb > 1e-6:
                assert not K.split_reachable(C, A, m, k, rho, nonneg, v.copy(), lb * (1 - 1e-6))


# --------------------------------------------------------------------------- the search
def _run(C, k, nonneg, reuse, offered=None):
    """search() without the root heuristics' EM, calling bnb_run with or without the l1 reuse.

    Without: one node per call, each with the open nodes' ``node_l1`` set to ``inf`` first, so no node
    ever reads a parent's l1 bound (every node searches its ``rho``) and the children's entries are
    dropped. The kernel keeps all of its state in the arrays between calls, so this is the search without
    the reuse, run by the signature search() compiled. ``offered`` counts the calls that pushed an "in"
    child with its parent's bound (a bound the search with the reuse takes instead of searching).
    """
    real = K.bnb_run

    def without(*args):
        node_l1, state, max_nodes = args[12], args[14], args[20]  # bnb_run's positional order
        nodes = 0
        while nodes < max_nodes and state[K.SP] + state[K.HEAP_N] > 0:
            node_l1[:] = np.inf
            nodes += real(*args[:20], 1, *args[21:])
            if offered is not None:
                offered.append(bool(np.isfinite(node_l1).any()))
        node_l1[:] = np.inf
        return nodes

    if reuse:
        return search(C, k, nonneg=nonneg, gap=1e-9)
    K.bnb_run = without
    try:
        return search(C, k, nonneg=nonneg, gap=1e-9)
    finally:
        K.bnb_run = real


@pytest.mark.parametrize("nonneg", [False, True])
def test_search_with_l1_reuse_agrees_with_brute_force(nonneg):
    rng = np.random.default_rng(3705 + nonneg)
    offered = []
    for trial in range(10):
        p = int(rng.integers(7, 11))
        k = int(rng.integers(2, p - 1))
        C = _random_cov(rng, p)
        if trial % 2:
            C = _as_corr(C)
        opt = brute(C, k, nonneg)
        on, off = _run(C, k, nonneg, True), _run(C, k, nonneg, False, offered)
        for res in (on, off):
            assert res.proven and res.value == pytest.approx(opt, rel=1e-7)
            assert res.upper_bound >= opt * (1 - 1e-9)
    assert any(offered)  # the two runs differ: there were parents' bounds to reuse
