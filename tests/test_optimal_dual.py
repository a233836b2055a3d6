"""The l1 (DSPCA-dual) bound with its ``U`` optimized (:mod:`repro.optimal.l1_dual`).

References: brute force on small matrices (the exact optimum, signed and non-negative), the value of every
``k``-sparse vector the tests can find (truncated eigenvectors, the EM from several starts), the clipped
``U`` at the starting ``rho`` (the minimization starts there and keeps its best iterate), and, for the
rounding, ``C = a I + b J`` at ``k = p`` whose optimum ``lambda_max(C) = a + b p`` is known exactly in
rational arithmetic.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from test_optimal import _random_cov, brute
from test_optimal_any_k import _instance, _lower_bounds

from repro.optimal import _kernels as K
from repro.optimal.dnn import certified_lambda_max
from repro.optimal.l1_dual import _clipped, clipped_l1_bound, l1_dual_bound
from repro.optimal.search import search


def _check_dual_point(C, k, nonneg, b, U, rho):
    """``U`` is a dual point of the bound (symmetric, zero diagonal, in its cone) and gives ``b``."""
    assert np.array_equal(U, U.T) and not np.any(np.diag(U))
    assert rho >= 0
    assert (U.max() if nonneg else np.abs(U).max()) <= rho
    again = certified_lambda_max(C - U) + rho * (k - 1)
    assert again == pytest.approx(b, rel=1e-9)


@pytest.mark.parametrize("nonneg", [False, True])
def test_at_least_brute_force(nonneg):
    rng = np.random.default_rng(11 + nonneg)
    for _ in range(12):
        p = int(rng.integers(4, 9))
        k = int(rng.integers(1, p + 1))
        C = _random_cov(rng, p)
        b, U, rho = l1_dual_bound(C, k, nonneg=nonneg, iters=60)
        assert b >= brute(C, k, nonneg)
        _check_dual_point(C, k, nonneg, b, U, rho)


@pytest.mark.parametrize("kind", ["wishart", "spiked", "mixed"])
@pytest.mark.parametrize("nonneg", [False, True])
def test_at_least_every_sparse_vector_found(kind, nonneg):
    rng = np.random.default_rng(3)
    C = _instance(kind, 40, rng)
    for k in (2, 5, 12):
        b, _U, _rho = l1_dual_bound(C, k, nonneg=nonneg, iters=80)
        assert b >= max(_lower_bounds(C, k, nonneg, rng))


@pytest.mark.parametrize("nonneg", [False, True])
def test_at_most_the_clipped_bound_it_starts_from(nonneg):
    """The minimization starts at the clipped ``U`` of ``rho0`` and keeps its best iterate; on Wishart
    covariances it closes most of the gap the clipped bound leaves above the root's incumbent."""
    rng = np.random.default_rng(7)
    A = rng.standard_normal((120, 60))
    C = A.T @ A / 120
    for k in (3, 8):
        for rho0 in (0.0, 0.05, 0.2):
            M = C - _clipped(C, rho0, nonneg)
            start = float(np.linalg.eigvalsh(M)[-1]) + rho0 * (k - 1)
            b, _U, _rho = l1_dual_bound(C, k, nonneg=nonneg, iters=40, rho0=rho0)
            assert b <= start * (1 + 1e-12)
        clipped, _ = clipped_l1_bound(C, k, nonneg=nonneg)
        b, U, rho = l1_dual_bound(C, k, nonneg=nonneg, iters=150)
        assert b <= clipped
        _check_dual_point(C, k, nonneg, b, U, rho)
        value = search(C, k, nonneg=nonneg, gap=1e-6, max_nodes=0).value
        assert b >= value
        assert b - value <= 0.6 * (clipped - value)


def test_certificate_covers_the_rounding():
    """At ``k = p`` the optimum of ``C = a I + b J`` is ``a + b p`` exactly (every unit vector is allowed),
    and every dual point's ``f`` is at least it. The eigenvalue as computed falls below it by a few units
    of roundoff on most of these instances (the uncertified minimum, ``certify=False``, is below the true
    optimum: a false bound); the certified bound never is."""
    rng = np.random.default_rng(0)
    under = 0
    for _ in range(12):
        p = int(rng.integers(20, 60))
        a, b = float(rng.uniform(0.1, 1)), float(rng.uniform(0.1, 1))
        C = np.full((p, p), b)
        C[np.diag_indices(p)] = a + b
        exact = Fraction(a) + Fraction(b) * p
        raw, _, _ = l1_dual_bound(C, p, iters=20, certify=False)
        under += Fraction(raw) < exact
        bound, _, _ = l1_dual_bound(C, p, iters=20)
        assert Fraction(bound) >= exact
        assert bound <= float(exact) * (1 + 1e-12)  # and it is tight: the slack is a few roundoffs
    assert under >= 3  # the adversary bites: without the certificate this test fails


def test_scale_and_k_one():
    """The bound scales with ``C`` (a power of two is exact) and is the largest diagonal entry at k = 1."""
    rng = np.random.default_rng(2)
    C = _random_cov(rng, 10)
    b, _, _ = l1_dual_bound(C, 1, iters=30)
    assert np.max(np.diag(C)) <= b <= np.max(np.diag(C)) * (1 + 1e-9)
    b1, _, _ = l1_dual_bound(C, 4, iters=30)
    b2, _, _ = l1_dual_bound(C * 1e-200, 4, iters=30)
    assert b2 == pytest.approx(b1 * 1e-200, rel=1e-6)
    assert b2 >= brute(C, 4) * 1e-200


@pytest.mark.parametrize("nonneg", [False, True])
def test_inherited_by_the_nodes_against_brute_force(nonneg):
    """The root's ``U`` over a node's allowed features bounds every support inside them (interlacing), and
    the search with it (``root_dual``) proves the brute-force optimum."""
    rng = np.random.default_rng(21 + nonneg)
    for _ in range(8):
        p = int(rng.integers(6, 10))
        k = int(rng.integers(2, p))
        C = _random_cov(rng, p)
        b, U, rho = l1_dual_bound(C, k, nonneg=nonneg, iters=60)
        DM = np.ascontiguousarray(C - U)
        add = rho * (k - 1) + 1e-15 * (np.linalg.norm(DM) + b)
        for _ in range(4):
            A = np.sort(rng.choice(p, int(rng.integers(k + 1, p + 1)), replace=False)).astype(np.int64)
            opt = brute(C, k, nonneg, F=A)
            assert K.dual_value(DM, add, A, np.inf) >= opt
            v = np.ones(A.size)
            assert K.dual_bound(DM, add, A, opt * (1 - 1e-9), v) == np.inf  # never prunes the optimum
        res = search(C, k, nonneg=nonneg, gap=1e-9, root_dual=60)
        assert res.proven and res.value == pytest.approx(brute(C, k, nonneg), rel=1e-7)
        assert res.upper_bound >= brute(C, k, nonneg)


def test_root_dual_prunes_nodes_and_tightens_the_root():
    """On an unstructured covariance the optimized root bound is below the clipped one, and nodes are
    pruned by it (counted with the l1 bound); the optimum is the same."""
    rng = np.random.default_rng(4)
    A = rng.standard_normal((80, 40))
    C = A.T @ A / 80
    off = search(C, 6, nonneg=False, gap=1e-9)
    on = search(C, 6, nonneg=False, gap=1e-9, root_dual=150)
    assert on.proven and off.proven
    assert on.value == pytest.approx(off.value, rel=1e-9)
    assert on.root_bound < off.root_bound
    assert on.n_nodes <= off.n_nodes


def test_step_grows_as_the_iterations_shrink():
    from repro.optimal.l1_dual import _step

    assert _step(300) == _step(1000) == 4.0
    assert _step(1) == 16.0
    steps = [_step(n) for n in (300, 200, 100, 50, 30, 20, 10)]
    assert steps == sorted(steps) and steps[3] == pytest.approx(4.0 * np.sqrt(6.0))


def test_time_limited_run_lays_its_schedule_out_in_the_time_left(monkeypatch):
    """A clock that advances one second per reading: after two iterations the run knows its pace and spreads
    the rest of the schedule over the iterations its time limit affords, so it ends at the last ``mu``
    (without the re-planning it would stop at about a fifth of its 300-iteration schedule)."""
    import repro.optimal.l1_dual as L

    clock = iter(range(10**6))
    monkeypatch.setattr(L.time, "perf_counter", lambda: float(next(clock)))
    rng = np.random.default_rng(4)
    C = _random_cov(rng, 8)
    for k in (2, 5):
        stats = {}
        b, U, rho = L.l1_dual_bound(C, k, iters=300, rho0=0.1, time_limit=60.0, stats=stats)
        assert 20 <= stats["iters"] < 100
        assert stats["mu_last"] == pytest.approx(1e-3, rel=1e-9)
        assert stats["eigh"] == stats["iters"] + 2  # the start, each iteration, the last iterate
        assert b >= brute(C, k)
        _check_dual_point(C, k, False, b, U, rho)


def test_fewer_iterations_with_the_longer_step_close_more_of_the_gap():
    """At 30 iterations the step of ``_step(30)`` ends lower than the 300-iteration step of 4 (Wishart
    p = 120): the measurement behind ``_step``, at a size a test affords."""
    import repro.optimal.l1_dual as L

    A = np.random.default_rng(0).standard_normal((240, 120))
    C = A.T @ A / 240
    short = [L.l1_dual_bound(C, k, iters=30)[0] for k in (5, 10)]
    orig = L._step
    try:
        L._step = lambda n: 4.0
        fixed = [L.l1_dual_bound(C, k, iters=30)[0] for k in (5, 10)]
    finally:
        L._step = orig
    assert all(s < f for s, f in zip(short, fixed, strict=True))


def test_the_start_leaves_most_of_a_time_limit_to_the_iterations(monkeypatch):
    """With the clock of the test above, a 20 s limit: the golden-section start (24 evaluations, one clock
    reading each) stops at a quarter of it, and the iterations run in the rest (with the whole limit to
    itself, the start would have spent it all and left none)."""
    import repro.optimal.l1_dual as L

    clock = iter(range(10**6))
    monkeypatch.setattr(L.time, "perf_counter", lambda: float(next(clock)))
    rng = np.random.default_rng(6)
    C = _random_cov(rng, 8)
    stats = {}
    b, U, rho = L.l1_dual_bound(C, 3, iters=300, time_limit=20.0, stats=stats)
    assert stats["iters"] >= 5
    assert b >= brute(C, 3)
    _check_dual_point(C, 3, False, b, U, rho)
