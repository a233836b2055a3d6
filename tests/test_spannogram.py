"""The spannogram (Asteris, Papailiopoulos & Dimakis 2014) against exact answers.

Brute force: the optimum of ``max x'Ax`` over unit non-negative ``k``-sparse ``x`` is the largest
``lambda_max(A_JJ)`` over supports ``|J| <= k`` whose leading eigenvector has one sign (at an optimum with
support ``J`` the vector is a positive local maximum of the Rayleigh quotient of ``A_JJ``, hence a leading
eigenvector; conversely each such ``J`` gives a feasible value). Signed: the largest ``lambda_max(A_JJ)``.
"""

from __future__ import annotations

import itertools

import naive
import numpy as np
import pytest
from sklearn.base import clone

from repro import (
    Covariance,
    SpannogramPCA,
    rank1_solver,
    rho_d,
    spannogram_bound,
    spannogram_exact,
    spannogram_path,
)
from repro.metrics import certified_fraction
from repro.spannogram import _kernels as K
from repro.spannogram import max_quadratic_halfspaces


def brute_force(A, k, nonneg=True):
    n = A.shape[0]
    best = 0.0
    for r in range(1, k + 1):
        for J in itertools.combinations(range(n), r):
            w, U = np.linalg.eigh(A[np.ix_(J, J)])
            u = U[:, -1]
            if not nonneg or np.all(u >= -1e-12) or np.all(u <= 1e-12):
                best = max(best, float(w[-1]))
    return best


def low_rank(rng, n, d):
    V = rng.standard_normal((n, d))
    return V @ V.T


# --------------------------------------------------------------------------- rank 1
@pytest.mark.parametrize("nonneg", [True, False])
def test_rank1_equals_brute_force(nonneg):
    rng = np.random.default_rng(0)
    for _ in range(8):
        v = rng.standard_normal(7)
        for k in range(1, 8):
            x, val = rank1_solver(v, k, nonneg=nonneg)
            best = brute_force(np.outer(v, v), k, nonneg)
            assert val == pytest.approx(best, rel=1e-12)
            assert (v @ x) ** 2 == pytest.approx(best, rel=1e-12)
            assert np.linalg.norm(x) == pytest.approx(1.0)
            assert np.count_nonzero(x) <= k
            if nonneg:
                assert np.all(x >= 0)


def test_rank1_ties_and_few_positives():
    v = np.array([3.0, 1.0, 2.0, 2.0, 2.0, -1.0])
    x, val = rank1_solver(v, 3)
    assert val == pytest.approx(17.0)  # 9 + 4 + 4: two of the three tied 2's, by index
    np.testing.assert_array_equal(np.flatnonzero(x), [0, 2, 3])
    x, val = rank1_solver(np.array([-5.0, 1.0, 0.0, -0.5]), 4)  # the negative side is better
    assert val == pytest.approx(25.25)
    np.testing.assert_array_equal(np.flatnonzero(x), [0, 3])  # 2 non-zeros, not padded to 4
    assert np.all(x >= 0)
    with pytest.raises(ValueError, match="v is all zeros"):  # every unit vector is optimal: refused
        rank1_solver(np.zeros(3), 2)


# --------------------------------------------------------------------------- kernels vs NumPy twins
def test_rank1_kernel_twin():
    rng = np.random.default_rng(1)
    for a in (np.array([1.0, -2.0, 2.0, 0.5, -2.0, 1.0]), rng.standard_normal(40)):
        for k in (1, 2, 3, 6):
            for nonneg in (True, False):
                x1, x2 = np.empty_like(a), np.empty_like(a)
                r1 = K.rank1_solve(a, k, nonneg, x1, np.empty_like(a))
                r2 = naive.rank1_solve(a, k, nonneg, x2, np.empty_like(a))
                assert r1[0] == pytest.approx(r2[0], rel=1e-14) and r1[1] == r2[1]
                np.testing.assert_allclose(x1, x2, atol=1e-15)


def test_sorted_side_twin():
    rng = np.random.default_rng(2)
    for a in (np.array([2.0, 1.0, 2.0, -3.0, 2.0, 0.0, 1.0]), rng.standard_normal(50)):
        n = a.size
        for kmax in (1, 2, 3, 5, n):
            for nonneg, sgn in ((True, 1.0), (True, -1.0), (False, 1.0)):
                bufs = [np.empty(n, dtype=np.int64), np.empty(n), np.empty(n), np.empty(n, dtype=np.int64)]
                o2 = np.empty(n, dtype=np.int64)
                m1 = K.sorted_side(a, nonneg, sgn, kmax, *bufs)
                m2 = naive.sorted_side(a, nonneg, sgn, kmax, o2, None, None, None)
                assert m1 == m2
                np.testing.assert_array_equal(bufs[0][:m1], o2[:m2])


def _allk(fn, V, C, kmax, nonneg):
    """Run an all-k pass (kernel or twin) from the empty state; returns (best_val, best_f, sample, sign)."""
    bv, bf = np.full(kmax, -np.inf), np.zeros(kmax)
    bs, bg = np.zeros(kmax, dtype=np.int64), np.ones(kmax, dtype=np.int64)
    fn(V, C, kmax, nonneg, bv, bf, bs, bg)
    return bv, bf, bs, bg


@pytest.mark.parametrize("nonneg", [True, False])
def test_allk_pass_twin(nonneg):
    rng = np.random.default_rng(3)
    V = rng.standard_normal((30, 3))
    V[5] = V[7]  # a duplicated row: exact ties in every sample
    C = rng.standard_normal((40, 3))
    C /= np.linalg.norm(C, axis=1, keepdims=True)
    kmax = 30
    outs = [_allk(fn, V, C, kmax, nonneg) for fn in (K.allk_pass, naive.allk_pass)]
    np.testing.assert_allclose(outs[0][0], outs[1][0], rtol=1e-12)
    np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-12)
    np.testing.assert_array_equal(outs[0][2], outs[1][2])


def _hard_case(rng, n, n_samples, one_signed=False):
    """``V`` (n x 3, heavy-tailed row norms, exact ties within and across sides) and unit samples ``C``."""
    V = rng.standard_normal((n, 3)) * rng.lognormal(0.0, 2.0, size=(n, 1))
    if one_signed:  # a leading direction of one sign, as in gene-expression loadings
        V[:, 0] += 2.0 * np.abs(V[:, 0])
    V[5] = V[7]  # exact ties in every sample
    V[14] = V[7]
    V[11] = -V[9]  # ties across the two sides
    V[13] = 0.0
    V[15] = 2.0 * V[7]  # equal direction, larger norm
    C = rng.standard_normal((n_samples, 3))
    C /= np.linalg.norm(C, axis=1, keepdims=True)
    C[3] = C[2]  # a repeated sample: ties across samples
    return V, C


@pytest.mark.parametrize("nonneg", [True, False])
def test_allk_pass_pruned_equals_full(nonneg):
    """The early-stopping pass (rows by decreasing norm) keeps exactly the entries of the sorting pass."""
    rng = np.random.default_rng(31)
    for _ in range(12):
        V, C = _hard_case(rng, int(rng.integers(20, 300)), 40)
        n = V.shape[0]
        for kmax in (1, 2, 5, 17, max(1, n // K.PRUNE_FRACTION), n):
            # the full pass unbounded, its default, passed as allk_pass passes it (the signature it compiled)
            full = lambda *a: K._allk_pass_full(*a, False)  # noqa: E731
            outs = [_allk(fn, V, C, kmax, nonneg) for fn in (K._allk_pass_pruned, full)]
            for got, want in zip(*outs, strict=True):
                np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("nonneg", [True, False])
def test_allk_pass_bounded_equals_plain(nonneg):
    """The sorting pass cut at each side's scatter bound gives the plain pass's result, bit for bit."""
    rng = np.random.default_rng(33)
    for trial in range(10):
        # about half the sides of a sample are cut (measured), more with a one-signed leading direction
        V, C = _hard_case(rng, int(rng.integers(20, 250)), 60, one_signed=trial % 2 == 1)
        n = V.shape[0]
        for kmax in (1, 7, n // 2, n):
            outs = [
                _allk(lambda *a, b=b: K._allk_pass_full(*a, b), V, C, kmax, nonneg) for b in (False, True)
            ]
            for got, want in zip(*outs, strict=True):
                np.testing.assert_array_equal(got, want)
            # in/out: a second batch of samples on top of the first batch's bests
            st = [tuple(x.copy() for x in o) for o in outs]
            for b, o in zip((False, True), st, strict=True):
                K._allk_pass_full(V, C[::-1].copy(), kmax, nonneg, *o, b)
            for got, want in zip(*st, strict=True):
                np.testing.assert_array_equal(got, want)


def test_lambda_max_upper():
    """An upper bound on lambda_1, within (1 + (d - 1) r^16)^(1/16) of it (r = lambda_2 / lambda_1)."""
    rng = np.random.default_rng(34)
    for d in (1, 2, 3, 5):
        B, B2 = np.empty((d, d)), np.empty((d, d))
        for _ in range(50):
            G = rng.standard_normal((d + 2, d)) * rng.lognormal(0.0, 2.0, size=d)
            M = G.T @ G
            w = np.linalg.eigvalsh(M)
            ub = K._lambda_max_upper(M, B, B2)
            r = w[-2] / w[-1] if d > 1 else 0.0
            assert w[-1] * (1 - 1e-12) <= ub <= w[-1] * (1 + (d - 1) * r**16) ** (1 / 16) * (1 + 1e-12)
        assert K._lambda_max_upper(np.zeros((d, d)), B, B2) == 0.0
    # round-off can leave the scatter of one side (V'V - M_+) slightly indefinite: still a bound on |mu|
    M = np.diag([4.0, 1.0, -1e-9])
    assert K._lambda_max_upper(M, np.empty((3, 3)), np.empty((3, 3))) >= 4.0


def test_allk_pass_pruned_twin():
    """Both cut passes behind :func:`allk_pass` (small ``kmax``: pruned; large: bounded) against the twin."""
    rng = np.random.default_rng(32)
    V = rng.standard_normal((1200, 3)) * rng.lognormal(0.0, 1.5, size=(1200, 1))
    C = rng.standard_normal((60, 3))
    C /= np.linalg.norm(C, axis=1, keepdims=True)
    for nonneg in (True, False):
        for kmax in (3, 40, 600, 1200):
            assert K.uses_pruned(V.shape[0], kmax) == (kmax <= 40)
            assert K.uses_bounded(V.shape[0], kmax) == (kmax > 40)
            outs = [_allk(fn, V, C, kmax, nonneg) for fn in (K.allk_pass, naive.allk_pass)]
            np.testing.assert_allclose(outs[0][0], outs[1][0], rtol=1e-12)
            np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-12)


def test_sweep2_twin():
    rng = np.random.default_rng(4)
    for V in (
        rng.standard_normal((9, 2)),
        np.array([[1.0, 0.0], [2.0, 0.0], [1.0, 0.0], [0.0, -1.0], [-1, 1]]),
    ):
        n = V.shape[0]
        v1, p1 = np.empty(n), np.empty(n)
        v2, p2 = np.empty(n), np.empty(n)
        ev = K.sweep2(np.ascontiguousarray(V, dtype=float), n, v1, p1)
        naive.sweep2(V, n, v2, p2)
        np.testing.assert_allclose(v1, v2, rtol=1e-10)
        if n == 9:
            assert ev == n * (n + 1)  # every pair of the n + 1 curves crosses twice on the circle
        for k in range(1, n + 1):  # the angle found attains the value
            c = np.array([np.sin(p1[k - 1]), np.cos(p1[k - 1])])
            a = np.clip(V @ c, 0, None)
            assert np.sum(np.sort(a)[::-1][:k] ** 2) == pytest.approx(v1[k - 1], rel=1e-9)


# --------------------------------------------------------------------------- exact rank d
@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("nonneg", [True, False])
def test_exact_equals_exhaustive_on_rank_d(d, nonneg):
    rng = np.random.default_rng(10 + d)
    for _ in range(3):
        A = low_rank(rng, 7, d)
        for k in (1, 2, 4, 7):
            x, val = spannogram_exact(Covariance.from_matrix(A), k, rank=d, nonneg=nonneg)
            assert val == pytest.approx(brute_force(A, k, nonneg), rel=1e-9)
            assert x @ A @ x == pytest.approx(val, rel=1e-12)
            assert np.count_nonzero(x) <= k and np.linalg.norm(x) == pytest.approx(1.0)
            if nonneg:
                assert np.all(x >= 0)


def test_exact_rank2_ties_exact():
    # collinear and duplicated rows: many curves through one point, ties at every intersection
    V = np.array([[1.0, 1.0], [1.0, 1.0], [2.0, 2.0], [1.0, -1.0], [-1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    A = V @ V.T
    for k in range(1, 8):
        for nonneg in (True, False):
            _, val = spannogram_exact(Covariance.from_matrix(A), k, rank=2, nonneg=nonneg)
            assert val == pytest.approx(brute_force(A, k, nonneg), rel=1e-9)


def test_exact_on_data_of_rank_d():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((40, 2)) @ rng.standard_normal((2, 9))  # centred: rank 2
    A = np.cov(X, rowvar=False)
    for k in (2, 5):
        _, val = spannogram_exact(X, k, rank=2)
        assert val == pytest.approx(brute_force(A, k), rel=1e-8)


def test_rho_d_guarantee_theorem1():
    rng = np.random.default_rng(6)
    for _ in range(3):
        X = rng.standard_normal((30, 8)) @ rng.standard_normal((8, 8))
        A = np.cov(X, rowvar=False)
        lam = np.linalg.eigvalsh(A)
        for k in (2, 4):
            for d in (1, 2):
                _, val = spannogram_exact(X, k, rank=d)
                assert val >= rho_d(lam, k, d) * brute_force(A, k) - 1e-9
    lam = np.array([4.0, 2.0, 1.0, 1.0])
    assert rho_d(lam, 2, 1) == pytest.approx(max(2 / 8, 1 / (1 + 2 * 2 * 2 / 4)))
    assert rho_d(lam, 2, 4) == 1.0


# --------------------------------------------------------------------------- Section 5
def _fibonacci_sphere(m):
    i = np.arange(m) + 0.5
    z = 1 - 2 * i / m
    r = np.sqrt(1 - z * z)
    t = np.pi * (1 + 5**0.5) * i
    return np.column_stack([r * np.cos(t), r * np.sin(t), z])


@pytest.mark.parametrize("d", [2, 3])
def test_section5_equals_dense_search(d):
    rng = np.random.default_rng(20 + d)
    if d == 2:
        t = np.linspace(0, 2 * np.pi, 200001)
        grid = np.column_stack([np.cos(t), np.sin(t)])
    else:
        grid = _fibonacci_sphere(400000)
    for _ in range(6):
        B = rng.standard_normal((d, d))
        Q = B @ B.T
        c0 = rng.standard_normal(d)
        R = rng.standard_normal((5, d))
        R *= np.sign(R @ c0)[:, None]  # c0 feasible
        val, c = max_quadratic_halfspaces(Q, R)
        feas = np.all(grid @ R.T >= 0, axis=1)
        dense = np.einsum("ij,jk,ik->i", grid[feas], Q, grid[feas]).max()
        assert np.all(R @ c >= -1e-9) and np.linalg.norm(c) == pytest.approx(1.0)
        assert c @ Q @ c == pytest.approx(val, rel=1e-10)
        assert val >= dense - 1e-9  # no grid point beats it, and it is attained at a feasible c
        # the grid misses the optimum by its spacing (0.006 rad for d = 3; worse in thin corners)
        assert val == pytest.approx(dense, rel=2e-4 if d == 2 else 5e-3)


# --------------------------------------------------------------------------- Algorithm 3
def test_algorithm3_reaches_exact_as_samples_grow():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((50, 2)) @ rng.standard_normal((2, 25)) + 1e-3 * rng.standard_normal((50, 25))
    ks = [3, 8]
    exact = spannogram_path(X, ks, rank=2, net="exact")
    gaps = []
    for S in (5, 50, 5000):
        p = spannogram_path(X, ks, rank=2, n_samples=S, random_state=0)
        assert np.all(p.variance <= exact.upper_bound + 1e-12)
        gaps.append(np.max((exact.variance - p.variance) / exact.variance))
    assert gaps[-1] < 1e-4
    assert gaps[-1] <= gaps[0]


@pytest.mark.parametrize("nonneg", [True, False])
def test_allk_pass_equals_per_k_runs(nonneg):
    rng = np.random.default_rng(8)
    X = rng.standard_normal((40, 15)) @ rng.standard_normal((15, 15))
    ks = np.arange(1, 16)
    full = spannogram_path(X, ks, rank=3, n_samples=300, nonneg=nonneg, random_state=1)
    for j, k in enumerate(ks):
        one = spannogram_path(X, [k], rank=3, n_samples=300, nonneg=nonneg, random_state=1)
        np.testing.assert_array_equal(one.components[0], full.components[j])
        assert one.upper_bound[0] == pytest.approx(full.upper_bound[j], rel=1e-12)
    assert np.all(full.n_nonzero <= ks)
    if nonneg:
        assert np.all(full.components >= 0)
    np.testing.assert_allclose(np.linalg.norm(full.components, axis=1), 1.0)


# --------------------------------------------------------------------------- the bound
@pytest.mark.parametrize("net", ["grid", "exact", "random"])
def test_bound_above_brute_force_on_full_rank(net):
    rng = np.random.default_rng(9)
    for _ in range(3):
        X = rng.standard_normal((25, 8)) @ rng.standard_normal((8, 8))
        A = np.cov(X, rowvar=False)
        ks = [1, 2, 3, 5, 8]
        rank = 2 if net == "exact" else 3
        ub = spannogram_bound(X, ks, rank=rank, net=net, n_samples=3000, random_state=0)
        ub_spec = spannogram_bound(
            X, ks, rank=rank, net=net, n_samples=3000, random_state=0, spectral_only=True
        )
        lam1 = np.linalg.eigvalsh(A)[-1]
        for j, k in enumerate(ks):
            opt = brute_force(A, k)
            assert ub[j] >= opt - 1e-9
            assert ub_spec[j] >= ub[j] - 1e-9
            assert ub[j] <= lam1 + 1e-9
        assert ub[0] == pytest.approx(np.max(np.diag(A)))  # k = 1: the largest variance, exactly


def test_certified_fraction_any_method():
    rng = np.random.default_rng(11)
    X = rng.standard_normal((60, 10)) @ rng.standard_normal((10, 10))
    A = np.cov(X, rowvar=False)
    k = 4
    # the true optimum of a brute force, and a crude thresholding of the first PC
    best, w_best = -1, None
    for J in itertools.combinations(range(10), k):
        w, U = np.linalg.eigh(A[np.ix_(J, J)])
        u = U[:, -1] * np.sign(U[:, -1].sum())
        if np.all(u >= 0) and w[-1] > best:
            best, w_best = w[-1], np.zeros(10)
            w_best[list(J)] = u
    u1 = np.abs(np.linalg.eigh(A)[1][:, -1])
    thr = np.where(u1 >= np.sort(u1)[-k], u1, 0.0)
    thr /= np.linalg.norm(thr)
    cf = certified_fraction(X, np.vstack([w_best, thr]), k, n_samples=3000)
    assert 0 < cf[1] <= cf[0] <= 1.0 + 1e-12
    ub = spannogram_bound(X, k, n_samples=3000)
    assert cf[0] == pytest.approx(best / ub)
    with pytest.raises(ValueError, match="mix signs"):
        certified_fraction(X, np.r_[1.0, -1.0, np.zeros(8)] / np.sqrt(2), 2)


# --------------------------------------------------------------------------- estimator
def test_estimator_components_properties():
    rng = np.random.default_rng(12)
    X = np.abs(rng.standard_normal((80, 30))) @ np.abs(rng.standard_normal((30, 30)))
    est = SpannogramPCA(4, cardinality=5, n_samples=500, random_state=0).fit(X)
    W = est.components_
    assert W.shape == (4, 30) and np.all(W >= 0)
    np.testing.assert_allclose(np.linalg.norm(W, axis=1), 1.0)
    assert np.all(est.n_nonzero_ <= 5)
    np.testing.assert_allclose(W @ W.T, np.eye(4), atol=1e-12)  # disjoint supports (features removed)
    assert np.all(est.explained_variance_ <= est.upper_bound_ + 1e-9)
    again = clone(est).fit(X)
    np.testing.assert_array_equal(again.components_, W)
    assert est.transform(X).shape == (80, 4)
    mk = SpannogramPCA(3, cardinality=5, n_samples=500, deflation="mackey", random_state=0).fit(X)
    assert np.all(np.count_nonzero(mk.components_, axis=1) <= 5)
    sg = SpannogramPCA(2, cardinality=[3, 6], n_samples=500, nonneg=False, random_state=0).fit(X)
    assert list(np.count_nonzero(sg.components_, axis=1)) == [3, 6]


# --------------------------------------------------------------------------- bad input
def test_bad_input_names_the_argument():
    rng = np.random.default_rng(13)
    X = rng.standard_normal((20, 6))
    with pytest.raises(ValueError, match="cardinality"):
        spannogram_exact(X, 7)
    with pytest.raises(ValueError, match="cardinalities"):
        spannogram_path(X, [0, 2])
    with pytest.raises(ValueError, match="rank"):
        spannogram_path(X, [2], rank=0)
    with pytest.raises(ValueError, match="rank"):
        spannogram_path(X, [2], rank=7)  # rank = n_features = 6 is allowed (A_d = A)
    with pytest.raises(ValueError, match="n_samples"):
        spannogram_path(X, [2], n_samples=0)
    with pytest.raises(ValueError, match="fewer cardinalities"):
        spannogram_path(rng.standard_normal((5, 8000)), np.arange(1, 7000), rank=1)
    with pytest.raises(ValueError, match="net"):
        spannogram_path(X, [2], net="sobol")
    with pytest.raises(ValueError, match="positive semi-definite"):
        spannogram_exact(Covariance.from_matrix(np.diag([1.0, -1.0, 2.0])), 1, rank=1)
    with pytest.raises(ValueError, match="symmetric"):
        spannogram_exact(Covariance.from_matrix(np.array([[1.0, 0.5], [0.0, 1.0]])), 1, rank=1)
    with pytest.raises(ValueError, match="cardinality"):
        SpannogramPCA(cardinality=[2, 3]).fit(X)
