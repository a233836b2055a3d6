"""The node orders of the certified optimum's search (depth first, best bound, best bound with dives):
every order proves the brute-force optimum on small problems, a full pool falls back to depth first
without losing a node, the global bound of a stopped search is never below a ``k``-sparse vector found
without the solver, the time limit holds at p = 2,000, and the progress line prints the live bound.

References: brute force over every support (signed and ``x >= 0``), ``lambda_max(C)`` at ``k = p``, the
values of EM restarts and truncated eigenvectors (:func:`test_optimal_any_k._lower_bounds`), and a sorted
list for the heap of open nodes.
"""

from __future__ import annotations

import itertools
import re
import time

import numpy as np
import pytest
from test_optimal import brute
from test_optimal_any_k import _instance, _lower_bounds

from repro.optimal import _kernels as K
from repro.optimal import search as search_mod
from repro.optimal.search import search

ORDERS = ("depth", "best", "hybrid")


def _solve(C, k, nonneg, order, **kw):
    kw.setdefault("gap", 1e-9)
    return search(C, k, nonneg=nonneg, order=order, **kw)


def test_the_heap_pops_the_largest_bound_first_and_ties_by_the_latest():
    rng = np.random.default_rng(0)
    for trial in range(200):
        n = int(rng.integers(1, 60))
        bound = np.round(rng.standard_normal(n), 1)  # ties
        if trial % 5 == 0:
            bound[rng.integers(0, n)] = -np.inf  # a pruned node (the chain's screening)
        seq = rng.permutation(n).astype(np.int64)
        heap = np.zeros(n, np.int64)
        size = 0
        half = n // 2
        for s in range(half):
            size = K.heap_push(heap, size, s, bound, seq)
        heap[half:n] = np.arange(half, n)  # the rest appended, then the order restored at once
        size = n
        K.heapify(heap, size, bound, seq)
        got = []
        while size:
            s, size = K.heap_pop(heap, size, bound, seq)
            got.append(s)
        want = sorted(range(n), key=lambda s: (-bound[s], -seq[s]))
        assert got == want


@pytest.mark.parametrize("nonneg", [False, True])
@pytest.mark.parametrize("order", ORDERS)
def test_every_order_proves_the_brute_force_optimum_at_every_k(nonneg, order):
    """p <= 16, every k: the value is brute force's, proven; the bound is above it. With the root dual
    (its node bounds and the split bound at its point) and with a pool of 3 open nodes (the depth-first
    fallback of a full pool) too."""
    rng = np.random.default_rng(11 if nonneg else 12)
    for p in (9, 13):
        C = _instance("mixed" if nonneg else "wishart", p, rng)
        for k in range(1, p + 1):
            ref = brute(C, k, nonneg)
            runs = [
                _solve(C, k, nonneg, order, chain_after=None),
                _solve(C, k, nonneg, order, root_dual=30, max_open=3, chain_after=None),
            ]
            for r in runs:
                assert r.proven, (p, k, r.status)
                assert r.value == pytest.approx(ref, rel=1e-9, abs=1e-12), (p, k)
                assert r.upper_bound >= ref * (1 - 1e-12)
                assert np.count_nonzero(r.component) <= k
                assert not nonneg or (r.component >= 0).all()


def test_decide_few_finds_the_brute_force_optimum_of_forced_in_nodes():
    """A signed node that may add 1, 2 or 3 features (forced-in and forced-out features drawn at random, p
    <= 16): :func:`~repro.optimal._kernels.decide_few` leaves the incumbent at the node's brute-force
    optimum when it starts below it (every support evaluated or bounded below the incumbent), and
    unchanged when it starts above; with a gap, within it."""
    rng = np.random.default_rng(31)
    for trial in range(60):
        p = int(rng.integers(6, 17))
        C = _instance("wishart", p, rng)
        r = 1 + trial % 3
        m = int(rng.integers(0, min(p - r - 1, 6) + 1))
        perm = rng.permutation(p)
        I = np.sort(perm[:m]).astype(np.int64)
        n_out = int(rng.integers(0, p - m - r))
        F = np.sort(perm[m + n_out :]).astype(np.int64)
        k = m + r
        ref = brute(C, k, False, I=list(I), F=list(F))
        for start, gap in ((-np.inf, 0.0), (0.5 * ref, 0.0), (ref * (1 + 1e-6), 0.0), (-np.inf, 0.05)):
            inc_val = np.array([start, -np.inf])
            inc_x = np.zeros(p)
            assert K.decide_few(C, I, F, r, gap, inc_val, inc_x)
            if start >= ref:
                assert inc_val[0] == start
                continue
            assert inc_val[0] >= ref / (1 + gap) * (1 - 1e-12), (trial, gap)
            assert inc_val[0] <= ref * (1 + 1e-12)
            S = np.flatnonzero(inc_x)
            assert set(I) <= set(S) <= set(I) | set(F) and S.size <= k
            x = inc_x / np.linalg.norm(inc_x)
            assert x @ C @ x == pytest.approx(inc_val[0], rel=1e-10)


@pytest.mark.parametrize("order", ORDERS)
def test_k_equal_p_is_lambda_max(order):
    rng = np.random.default_rng(4)
    for p in (8, 16):
        C = _instance("wishart", p, rng)
        lam = np.linalg.eigvalsh(C)[-1]
        r = _solve(C, p, False, order, root_dual=20)
        assert r.proven and r.value == pytest.approx(lam, rel=1e-10)
        assert r.upper_bound >= lam * (1 - 1e-12)
    C = _instance("positive", 12, rng)  # x >= 0: the Perron vector
    lam = np.linalg.eigvalsh(C)[-1]
    r = _solve(C, 12, True, order)
    assert r.proven and r.value == pytest.approx(lam, rel=1e-10)


@pytest.mark.parametrize("nonneg", [False, True])
def test_a_stopped_search_keeps_a_bound_above_every_sparse_vector_found(nonneg):
    """Node limits that stop each order early (the pool full or not): the bound of the open nodes, after
    the re-bounding at the stop, is at least the value of every ``k``-sparse vector the EM restarts and
    the truncated eigenvectors find, and at least the answer's own value."""
    rng = np.random.default_rng(21)
    C = _instance("wishart", 40, rng)
    for k in (4, 8):
        lows = _lower_bounds(C, k, nonneg, rng)
        for order in ORDERS:
            for max_nodes, max_open in ((5, None), (40, None), (60, 4)):
                kw = {"max_nodes": max_nodes, "max_open": max_open, "root_dual": 20}
                r = _solve(C, k, nonneg, order, gap=1e-6, **kw)
                assert r.upper_bound >= max(lows) * (1 - 1e-12), (k, order, max_nodes)
                assert r.upper_bound >= r.value
                assert r.value <= r.upper_bound and np.count_nonzero(r.component) <= k


def test_best_bound_order_lowers_the_global_bound_below_the_roots():
    """Where the root dual leaves a gap, the best-bound order's global bound after some nodes is below
    the root's (the depth-first order keeps the root's until the root's children are decided), and it is
    still above every sparse vector found without the solver."""
    rng = np.random.default_rng(2)
    C = _instance("wishart", 40, rng)
    k = 6
    low = max(_lower_bounds(C, k, False, rng))
    r = _solve(C, k, False, "best", gap=1e-6, max_nodes=80, root_dual=40, chain_after=None)
    assert r.upper_bound >= low * (1 - 1e-12)
    if not r.proven:
        assert r.upper_bound < r.root_bound


@pytest.mark.parametrize("order", ORDERS)
def test_the_progress_line_prints_the_live_global_bound(order, capsys, monkeypatch):
    """``verbose``: each progress line's bound is a certified bound (at least the optimum: brute force
    here) and, in the best-bound order, never rises; the final bound is at most the last line's. A line
    every 0.05 s of a 1.5 s limit (at least one after the root dual's quarter of it)."""
    rng = np.random.default_rng(7)
    C = _instance("wishart", 60, rng)
    search(C, 6, nonneg=False, gap=1e-6, max_nodes=30, order=order)  # compiled before the clock
    capsys.readouterr()
    monkeypatch.setattr(search_mod, "PROGRESS_EVERY", 0.05)
    r = search(C, 6, nonneg=False, gap=1e-9, time_limit=1.5, order=order, verbose=True, root_dual=20)
    lines = [ln for ln in capsys.readouterr().err.splitlines() if " nodes (" in ln]
    assert lines
    bounds = [float(re.search(r"bound ([0-9.e+-]+),", ln).group(1)) for ln in lines]
    low = max(_lower_bounds(C, 6, False, rng))
    assert all(b >= low * (1 - 1e-9) for b in bounds)  # the lines print 6 digits
    if order == "best":
        assert all(b2 <= b1 * (1 + 1e-6) for b1, b2 in itertools.pairwise(bounds))
    assert r.upper_bound <= bounds[-1] * (1 + 1e-5)


def test_time_limit_holds_at_p_2000(monkeypatch):
    """p = 2,000, ``root_dual=300``, 4 s, the search as the door calls it (its root heuristics): it
    returns within the limit plus the re-bounding's allowance (10%, at least 0.1 s) and 0.5 s, except
    that the root's one eigendecomposition (timed as the search makes it), where it runs, is never cut
    (it runs where its estimate fits half the limit; else the root takes Lanczos). Before, a 30 s
    limit returned after 42-61 s (the root dual's start, an ``eigvalsh`` when re-bounding the root). The
    door's own check of the matrix (``check_psd``, before the search) is not part of this budget."""
    from repro.optimal.roots import _em_support, _spannogram_root

    rng = np.random.default_rng(0)
    p = 2000
    A = rng.standard_normal((p // 4, p))
    C = A.T @ A / (p // 4) + 0.5 * np.eye(p)  # unstructured, full rank
    kw = {"nonneg": False, "gap": 1e-6, "em_start": _em_support, "spannogram": _spannogram_root}
    for rd in (0, 20):  # compiled, with and without a dual point (the kernels' two specializations)
        search(C[:40, :40], 5, max_nodes=1, root_dual=rd, **kw)  # open nodes left: the re-bounding too
    eigh, spent_eigh = np.linalg.eigh, []

    def timed_eigh(M, *a, **kw):
        t = time.perf_counter()
        out = eigh(M, *a, **kw)
        if M.shape[0] == p:
            spent_eigh.append(time.perf_counter() - t)
        return out

    monkeypatch.setattr(np.linalg, "eigh", timed_eigh)
    limit = 4.0
    t = time.perf_counter()
    r = search(C, 10, time_limit=limit, root_dual=300, **kw)
    spent = time.perf_counter() - t
    t_eig = spent_eigh[0] if spent_eigh else 0.0  # the root's, where it ran (else Lanczos at the root)
    allowance = max(search_mod.REBOUND_SHARE * limit, 0.1) + 0.5
    assert spent <= max(limit, 1.5 * t_eig) + allowance, (spent, spent_eigh)
    assert r.status == "time_limit" and r.upper_bound >= r.value > 0
