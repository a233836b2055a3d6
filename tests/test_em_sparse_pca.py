"""EM for sparse and non-negative PCA (Sigg & Buhmann 2008) against exact answers: eigh, a generic QP
solver for the M-steps (Eqs. 14, 17, 20), brute force, the NumPy twins of the kernels, and its own
independent runs for the path."""

import itertools
import math
import warnings

import naive
import numpy as np
import pytest
import scipy.optimize
from sklearn.base import clone

from repro._linalg_kernels import support_matvec
from repro._validation import ConvergenceWarning
from repro.em_sparse_pca import (
    CardinalityPath,
    EMSparsePCA,
    em_sparse_pca,
    em_sparse_pca_path,
    penalized_mstep,
    renormalize_on_support,
)
from repro.em_sparse_pca import _kernels as kern
from repro.em_sparse_pca.quasi import _alg2_l1_bound
from repro.linalg import Covariance, canonical_sign, renormalize


def _data(seed, n=40, p=12, shift=2.0):
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((p, p)) * np.linspace(2.0, 0.3, p)
    return rng.standard_normal((n, p)) @ M + shift


def _pcs(X, k):
    vals, vecs = np.linalg.eigh(np.cov(X, rowvar=False))
    return vals[::-1][:k], vecs[:, ::-1][:, :k].T


def _same_up_to_sign(A, B, atol):
    A, B = np.atleast_2d(A), np.atleast_2d(B)
    signs = np.sign(np.sum(A * B, axis=1))
    np.testing.assert_allclose(A * signs[:, None], B, atol=atol)


def _positive_data(seed, n=60, p=8):
    """Features sharing a positive factor: the first PC lies in the positive orthant."""
    rng = np.random.default_rng(seed)
    f = rng.standard_normal((n, 1))
    return f @ rng.uniform(0.5, 2.0, (1, p)) + 0.3 * rng.standard_normal((n, p))


# --------------------------------------------------------------------------- kernels vs NumPy twins
def _random_wstar(rng, D, ties=False):
    v = rng.standard_normal(D)
    if ties:
        v = np.round(v, 1)
    return v


def test_kth_largest_matches_twin():
    fixed = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0, 5.0])
    for k in range(1, fixed.size + 1):
        assert kern.kth_largest(fixed.copy(), fixed.size, k) == naive.kth_largest(fixed, fixed.size, k)
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(1, 60))
        a = np.round(rng.standard_normal(n + 5), int(rng.integers(0, 3)))  # ties, extra tail
        k = int(rng.integers(1, n + 1))
        assert kern.kth_largest(a.copy(), n, k) == naive.kth_largest(a, n, k)


@pytest.mark.parametrize("nonneg", [False, True])
def test_top_support_matches_twin(nonneg):
    """The truncated-power step's support: the K largest magnitudes (positive entries when nonneg), ties
    to the lower index, excluded and zero entries never taken, in increasing order."""
    rng = np.random.default_rng(8)
    for _ in range(300):
        D = int(rng.integers(1, 40))
        f = np.round(rng.standard_normal(D), int(rng.integers(0, 3)))  # ties and zeros
        excluded = rng.random(D) < 0.2
        K = int(rng.integers(1, D + 2))
        i1, i2 = np.full(D, -1), np.full(D, -1)
        n1 = kern.top_support(f, K, nonneg, excluded, np.empty(D), i1)
        n2 = naive.top_support(f, K, nonneg, excluded, None, i2)
        assert n1 == n2 and np.array_equal(i1[:n1], i2[:n2])
        assert n1 <= K and np.all(np.diff(i1[:n1]) > 0) and not excluded[i1[:n1]].any()
    i = np.empty(6, dtype=np.int64)
    assert (
        kern.top_support(
            np.array([1.0, -3.0, 2.0, 2.0, 0.0, 2.0]), 3, nonneg, np.zeros(6, bool), np.empty(6), i
        )
        == 3
    )
    # signed: -3, then the first two 2s (ties go to the lower index)
    assert i[:3].tolist() == ([2, 3, 5] if nonneg else [1, 2, 3])


@pytest.mark.parametrize("nonneg", [False, True])
def test_top_support_sampled_matches_twin(nonneg):
    """With many candidates the K-th magnitude is found through a sample (kern._kth_by_sample): the same
    support as the twin, with ties, exclusions and zeros, and where the sample misjudges the bound (the
    sampled positions hold the largest values, so fewer than K entries reach it) the full selection."""
    rng = np.random.default_rng(9)
    D = 3 * kern.SAMPLE_MIN
    for _ in range(40):
        f = np.round(rng.standard_normal(D), int(rng.integers(1, 4)))
        f[rng.random(D) < 0.05] = 0.0
        excluded = rng.random(D) < 0.1
        K = int(rng.choice([1, 10, 100, D // 8, D // 8 + 1]))
        i1, i2 = np.full(D, -1), np.full(D, -1)
        n1 = kern.top_support(f, K, nonneg, excluded, np.empty(D), i1)
        n2 = naive.top_support(f, K, nonneg, excluded, None, i2)
        assert n1 == n2 == K and np.array_equal(i1[:n1], i2[:n2])
    # adversarial: the sampled positions carry the largest values
    m = 2 * kern.SAMPLE_MIN
    f = rng.random(m)
    pos = (np.arange(kern.SAMPLE_SIZE) * m) // kern.SAMPLE_SIZE
    f[pos] = 10.0 + rng.random(pos.size)
    work = f.copy()
    assert kern._kth_by_sample(work, m, 100) == -1.0  # the bound let through fewer than 100
    for K in (100, 1000):
        i1, i2 = np.full(m, -1), np.full(m, -1)
        excl = np.zeros(m, bool)
        n1 = kern.top_support(f, K, nonneg, excl, np.empty(m), i1)
        assert n1 == naive.top_support(f, K, nonneg, excl, None, i2) and np.array_equal(i1[:n1], i2[:n1])


@pytest.mark.parametrize("nonneg", [False, True])
def test_constrained_mstep_matches_algorithm2_twin(nonneg):
    fixed = np.array([0.5, -2.0, 1.5, 0.0, -0.25, 3.0, 1.5])
    cases = [(fixed, K, np.zeros(7, bool)) for K in range(1, 9)]
    cases.append((fixed, 2, np.array([0, 0, 0, 0, 0, 1, 0], bool)))
    rng = np.random.default_rng(11)
    for _ in range(150):
        D = int(rng.integers(1, 40))
        cases.append(
            (
                _random_wstar(rng, D, ties=bool(rng.integers(2))),
                int(rng.integers(1, D + 2)),
                rng.random(D) < 0.2,
            )
        )
    for wstar, K, ex in cases:
        D = wstar.size
        out_k, out_n = np.empty(D), np.empty(D)
        nk = kern.constrained_mstep(wstar.copy(), K, nonneg, ex, out_k, np.empty(D))
        nn = naive.constrained_mstep(wstar.copy(), K, nonneg, ex, out_n, np.empty(D))
        np.testing.assert_allclose(nk, nn, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(out_k, out_n, rtol=1e-12, atol=1e-14)
        assert np.count_nonzero(out_k) <= K
        assert not out_k[ex].any()
        if nonneg:
            assert (out_k >= 0).all()
        if nk > 0:
            np.testing.assert_allclose(np.linalg.norm(out_k), 1.0, rtol=1e-12)


def test_mstep_threshold_matches_twin_for_any_hint():
    fixed = np.array([0.5, -2.0, 1.5, 0.0, -0.25, 3.0, 1.5])
    for K in range(1, 9):
        for nonneg in (False, True):
            for hint in (0.0, 0.1, 1.5, 10.0):
                ex = np.zeros(7, bool)
                got = kern.mstep_threshold(fixed, K, nonneg, ex, np.empty(7), hint)
                assert got == naive.mstep_threshold(fixed, K, nonneg, ex, None, hint)
    rng = np.random.default_rng(13)
    for _ in range(200):
        D = int(rng.integers(1, 50))
        v = _random_wstar(rng, D, ties=bool(rng.integers(2)))
        K, nonneg = int(rng.integers(1, D + 2)), bool(rng.integers(2))
        ex = rng.random(D) < 0.2
        hint = float(rng.choice([0.0, rng.uniform(0, 3)]))
        got = kern.mstep_threshold(v, K, nonneg, ex, np.empty(D), hint)
        assert got == naive.mstep_threshold(v, K, nonneg, ex, None, hint)


def test_em_update_matches_twin():
    fixed_f = np.array([2.0, -1.0, 0.5, 3.0, -0.5, 0.0])
    fixed_w = np.full(6, 1 / np.sqrt(6))
    cases = [
        (fixed_f, fixed_w, 3, False, np.zeros(6, bool), 0.0),
        (fixed_f, fixed_w, 2, True, np.zeros(6, bool), 1.0),
    ]
    cases.append((-np.abs(fixed_f), fixed_w, 2, True, np.zeros(6, bool), 0.0))  # collapse
    rng = np.random.default_rng(3)
    for trial in range(60):
        D = int(rng.integers(2, 30))
        w = rng.standard_normal(D)
        cases.append(
            (
                rng.standard_normal(D) * 5,
                w / np.linalg.norm(w),
                int(rng.integers(1, D + 1)),
                bool(trial % 2),
                rng.random(D) < 0.1,
                float(rng.choice([0.0, rng.uniform(0, 5)])),
            )
        )
    for f, w, K, nonneg, ex, hint in cases:
        D = f.size
        wk, wn = w.copy(), w.copy()
        sk, sn = np.array([hint]), np.array([hint])
        rk = kern.em_update(f, K, nonneg, ex, wk, np.empty(D), sk)
        rn = naive.em_update(f, K, nonneg, ex, wn, np.empty(D), sn)
        np.testing.assert_allclose(rk, rn, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(wk, wn, rtol=1e-12, atol=1e-14)
        assert sk[0] == sn[0]


# --------------------------------------------------------------------------- M-steps vs a generic QP solver
def _qp_l1(wstar, B, nonneg):
    """min ||w - w*||^2 s.t. ||w||_1 <= B (and w >= 0): SLSQP on w = p - q, p, q >= 0."""
    D = wstar.size
    if nonneg:
        fun = lambda p: np.sum((p - wstar) ** 2)  # noqa: E731
        jac = lambda p: 2 * (p - wstar)  # noqa: E731
        cons = [{"type": "ineq", "fun": lambda p: B - p.sum(), "jac": lambda p: -np.ones(D)}]
        res = scipy.optimize.minimize(
            fun,
            np.zeros(D),
            jac=jac,
            bounds=[(0, None)] * D,
            constraints=cons,
            method="SLSQP",
            options={"ftol": 1e-15, "maxiter": 500},
        )
        return res.x
    fun = lambda z: np.sum((z[:D] - z[D:] - wstar) ** 2)  # noqa: E731

    def jac(z):
        g = 2 * (z[:D] - z[D:] - wstar)
        return np.concatenate([g, -g])

    cons = [{"type": "ineq", "fun": lambda z: B - z.sum(), "jac": lambda z: -np.ones(2 * D)}]
    res = scipy.optimize.minimize(
        fun,
        np.zeros(2 * D),
        jac=jac,
        bounds=[(0, None)] * (2 * D),
        constraints=cons,
        method="SLSQP",
        options={"ftol": 1e-15, "maxiter": 500},
    )
    return res.x[:D] - res.x[D:]


@pytest.mark.parametrize("nonneg", [False, True])
def test_cardinality_step_solves_the_l1_qp_of_eq14(nonneg):
    """Algorithm 2's soft threshold at s_(K+1) is the minimizer of Eq. 14 for the bound it implies."""
    rng = np.random.default_rng(5 + nonneg)
    for _ in range(12):
        D = int(rng.integers(3, 9))
        wstar = rng.standard_normal(D)
        K = int(rng.integers(1, D))
        allowed = np.ones(D, bool)
        B = _alg2_l1_bound(wstar, K, nonneg, allowed)
        out = np.empty(D)
        norm = kern.constrained_mstep(wstar, K, nonneg, ~allowed, out, np.empty(D))
        if norm == 0:  # nonneg with no positive entry: the QP's answer is 0 too
            np.testing.assert_allclose(_qp_l1(wstar, B, nonneg), 0.0, atol=1e-7)
            continue
        w_qp = _qp_l1(wstar, B, nonneg)
        np.testing.assert_allclose(out * norm, w_qp, atol=1e-6)


def _brute_nonneg_l1(wstar, B):
    """Every KKT candidate of min ||w - w*||^2 s.t. w >= 0, 1'w <= B, over all supports; best feasible."""
    D = wstar.size
    best, best_val = np.zeros(D), float(wstar @ wstar)
    for r in range(1, D + 1):
        for S in itertools.combinations(range(D), r):
            S = list(S)
            for lam in (0.0, (wstar[S].sum() - B) / len(S)):
                if lam < 0:
                    continue
                w = np.zeros(D)
                w[S] = wstar[S] - lam
                if (w < -1e-12).any() or w.sum() > B * (1 + 1e-12) + 1e-12:
                    continue
                val = float(np.sum((w - wstar) ** 2))
                if val < best_val - 1e-14:
                    best, best_val = w, val
    return best


def test_nonneg_cardinality_step_equals_brute_force():
    rng = np.random.default_rng(17)
    for _ in range(25):
        D = int(rng.integers(2, 8))
        wstar = rng.standard_normal(D) + 0.3
        K = int(rng.integers(1, D + 1))
        B = _alg2_l1_bound(wstar, K, True, np.ones(D, bool))
        out = np.empty(D)
        norm = kern.constrained_mstep(wstar, K, True, np.zeros(D, bool), out, np.empty(D))
        np.testing.assert_allclose(out * norm, _brute_nonneg_l1(wstar, B), atol=1e-12)
        assert np.count_nonzero(out) <= K


def _qp_penalized(b, V, rho, B, nonneg, allowed):
    """Eq. 20's QP with a generic solver (trust-constr would do; SLSQP is enough at this size)."""
    D = b.size
    P = np.eye(D) + rho * V @ V.T
    split = not nonneg

    def unpack(z):
        return z[:D] - z[D:] if split else z

    def fun(z):
        w = unpack(z)
        return float(w @ P @ w - 2 * b @ w)

    def jac(z):
        g = 2 * (P @ unpack(z)) - 2 * b
        return np.concatenate([g, -g]) if split else g

    n = 2 * D if split else D
    bounds = [(0, 0) if not allowed[i % D] else (0, None) for i in range(n)]
    cons = []
    if B is not None:
        cons = [{"type": "ineq", "fun": lambda z: B - z.sum(), "jac": lambda z: -np.ones(n)}]
    res = scipy.optimize.minimize(
        fun,
        np.zeros(n),
        jac=jac,
        bounds=bounds,
        constraints=cons,
        method="SLSQP",
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    return unpack(res.x)


@pytest.mark.parametrize(("nonneg", "with_l1"), [(True, False), (True, True), (False, True), (False, False)])
def test_penalized_mstep_equals_generic_qp(nonneg, with_l1):
    rng = np.random.default_rng(23 + 2 * nonneg + with_l1)
    for _ in range(8):
        D, l = int(rng.integers(4, 9)), int(rng.integers(1, 3))
        b = rng.standard_normal(D)
        V = np.abs(rng.standard_normal((D, l))) if nonneg else rng.standard_normal((D, l))
        V /= np.linalg.norm(V, axis=0)
        rho = float(10 ** rng.uniform(-1, 2))
        allowed = rng.random(D) > 0.15
        B = float(rng.uniform(0.2, 1.0) * np.abs(b).sum()) if with_l1 else None
        w, _, _ = penalized_mstep(b, V, rho, l1_bound=B, nonneg=nonneg, allowed=allowed)
        w_ref = _qp_penalized(b, V, rho, B, nonneg, allowed)
        P = np.eye(D) + rho * V @ V.T
        assert w @ P @ w - 2 * b @ w <= w_ref @ P @ w_ref - 2 * b @ w_ref + 1e-9
        np.testing.assert_allclose(w, w_ref, atol=1e-5)
        assert not w[~allowed].any()
        if nonneg:
            assert (w >= 0).all()
        if with_l1:
            assert np.abs(w).sum() <= B * (1 + 1e-9)


def test_penalized_mstep_with_zero_penalty_limit_is_algorithm2():
    rng = np.random.default_rng(2)
    D = 15
    b = rng.standard_normal(D)
    V = rng.standard_normal((D, 2))
    for nonneg in (False, True):
        for K in (1, 4, 9):
            B = _alg2_l1_bound(b, K, nonneg, np.ones(D, bool))
            w, _, _ = penalized_mstep(b, V, 1e-12, l1_bound=B, nonneg=nonneg)
            out = np.empty(D)
            norm = kern.constrained_mstep(b, K, nonneg, np.zeros(D, bool), out, np.empty(D))
            np.testing.assert_allclose(w, out * norm, atol=1e-9)


# --------------------------------------------------------------------------- degenerate cases: PCA
@pytest.mark.parametrize(("n", "p"), [(50, 10), (12, 30)])
@pytest.mark.parametrize("cardinality", [None, "D"])
def test_unconstrained_equals_eigh_pca(n, p, cardinality):
    X = _data(n + p, n=n, p=p)
    k = 3
    card = p if cardinality == "D" else None
    est = EMSparsePCA(k, cardinality=card, tol=1e-15, max_iter=5000).fit(X)
    vals, vecs = _pcs(X, k)
    np.testing.assert_allclose(est.explained_variance_, vals, rtol=1e-10)
    _same_up_to_sign(est.components_, vecs, atol=1e-7)
    np.testing.assert_allclose(est.components_ @ est.components_.T, np.eye(k), atol=1e-10)
    np.testing.assert_allclose(est.explained_variance_ratio_, vals / np.trace(np.cov(X, rowvar=False)))
    np.testing.assert_allclose(est.transform(X), (X - X.mean(0)) @ est.components_.T)


def test_unconstrained_from_random_start_converges_to_pc():
    X = _data(4)
    est = EMSparsePCA(1, init="random", n_restarts=2, tol=1e-15, max_iter=20000, random_state=0).fit(X)
    _, vecs = _pcs(X, 1)
    _same_up_to_sign(est.components_, vecs, atol=1e-6)


def test_nonneg_equals_pc_when_pc_is_positive():
    X = _positive_data(0)
    _, vecs = _pcs(X, 1)
    assert (np.sign(vecs) == np.sign(vecs[0, 0])).all()
    est = EMSparsePCA(1, nonneg=True, tol=1e-15, max_iter=20000, random_state=1).fit(X)
    _same_up_to_sign(est.components_, vecs, atol=1e-6)
    assert (est.components_ >= 0).all()


def test_collapsing_start_is_replaced_not_returned():
    """Non-negative EM from the negated positive PC collapses to 0 (Sec. 3.2); a new random start is used."""
    X = _positive_data(1)
    _, vecs = _pcs(X, 1)
    pc = np.abs(vecs[0])
    est = EMSparsePCA(1, nonneg=True, init=-pc, tol=1e-14, max_iter=20000, random_state=0).fit(X)
    w = est.components_[0]
    assert np.linalg.norm(w) == pytest.approx(1.0)
    np.testing.assert_allclose(w, pc, atol=1e-6)
    # and with the "pc" init both signs are tried: same answer
    est2 = EMSparsePCA(1, nonneg=True, init="pc", tol=1e-14, max_iter=20000).fit(X)
    np.testing.assert_allclose(est2.components_[0], pc, atol=1e-6)


# --------------------------------------------------------------------------- constraints as properties
@pytest.mark.parametrize("nonneg", [False, True])
@pytest.mark.parametrize("renorm", [False, True])
def test_outputs_satisfy_constraints(nonneg, renorm):
    X = _data(9, n=30, p=20)
    ks = [3, 5, 2, 7]
    est = EMSparsePCA(4, cardinality=ks, nonneg=nonneg, renormalize=renorm, random_state=2).fit(X)
    W = est.components_
    assert W.shape == (4, 20)
    np.testing.assert_allclose(np.linalg.norm(W, axis=1), 1.0, rtol=1e-12)
    assert ((W != 0).sum(axis=1) <= ks).all()
    np.testing.assert_array_equal(est.cardinality_, (W != 0).sum(axis=1))
    C = np.cov(X, rowvar=False)
    np.testing.assert_allclose(est.explained_variance_, np.einsum("ij,jk,ik->i", W, C, W), rtol=1e-10)
    if nonneg:
        assert (W >= 0).all()
        # orthogonal non-negative components have disjoint supports (Eq. 19)
        S = W != 0
        assert not (S[:, None, :] & S[None, :, :])[~np.eye(4, dtype=bool)].any()
        np.testing.assert_allclose(W @ W.T, np.eye(4), atol=1e-12)


def test_sparse_deflation_is_eq18_projection():
    """Component 2 is component 1 of the data projected on the complement of component 1 (Eq. 18)."""
    X = _data(10, n=40, p=15)
    est = EMSparsePCA(2, cardinality=4, tol=1e-12, init="pc", operator="data").fit(X)
    w1 = est.components_[0]
    Xc = X - X.mean(0)
    Xd = Xc - np.outer(Xc @ w1, w1)
    w2, _ = em_sparse_pca(Xd, 1, cardinality=4, tol=1e-12, init="pc", operator="data")
    _same_up_to_sign(est.components_[1], w2[0], atol=1e-9)
    assert np.count_nonzero(est.components_[1]) <= 4


def test_disjoint_orthogonality_for_signed_components():
    X = _data(12, n=40, p=15)
    est = EMSparsePCA(3, cardinality=4, orthogonality="disjoint").fit(X)
    S = est.components_ != 0
    assert (S.sum(axis=0) <= 1).all()
    np.testing.assert_allclose(est.components_ @ est.components_.T, np.eye(3), atol=1e-12)


@pytest.mark.parametrize("cardinality", [None, 6])
def test_quasi_orthogonality_meets_the_minimum_angle(cardinality):
    X = _positive_data(3, n=80, p=14)
    angle = 70.0
    est = EMSparsePCA(
        3, nonneg=True, cardinality=cardinality, orthogonality="quasi", min_angle_deg=angle, random_state=0
    ).fit(X)
    W = est.components_
    assert (W >= 0).all()
    np.testing.assert_allclose(np.linalg.norm(W, axis=1), 1.0)
    if cardinality is not None:
        assert ((W != 0).sum(axis=1) <= cardinality).all()
    cos = W @ W.T
    off = cos[~np.eye(3, dtype=bool)]
    assert (off <= np.cos(np.deg2rad(angle)) + 1e-9).all()
    # the penalty was needed (the positive PC is the unpenalized answer for every component)
    assert est.penalty_[0] == 0 and (est.penalty_[1:] > 0).all()
    # the first component is the plain non-negative one
    first = EMSparsePCA(1, nonneg=True, cardinality=cardinality, random_state=0).fit(X)
    np.testing.assert_allclose(W[0], first.components_[0])


def test_quasi_unreachable_angle_warns():
    """A dense positive first component with every entry above cos(88 deg) leaves no non-negative vector
    at 88 degrees from it: the search gives up with a warning instead of looping."""
    X = _positive_data(3, n=80, p=14)
    first = EMSparsePCA(1, nonneg=True, random_state=0).fit(X).components_[0]
    assert first.min() > np.cos(np.deg2rad(88.0))  # the premise
    with pytest.warns(ConvergenceWarning, match="minimum angle"):
        EMSparsePCA(2, nonneg=True, orthogonality="quasi", min_angle_deg=88.0, random_state=0).fit(X)


def test_quasi_penalty_is_the_smallest_meeting_the_angle():
    """Bisection: a penalty a bit smaller than the one found violates the angle."""
    X = _positive_data(5, n=80, p=10)
    angle = 60.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = EMSparsePCA(2, nonneg=True, orthogonality="quasi", min_angle_deg=angle, random_state=0).fit(X)
    rho = est.penalty_[1]
    assert est.components_[0] @ est.components_[1] <= np.cos(np.deg2rad(angle)) + 1e-12
    looser = EMSparsePCA(2, nonneg=True, orthogonality="quasi", penalty=rho / 3, random_state=0).fit(X)
    W = looser.components_
    assert W[0] @ W[1] > np.cos(np.deg2rad(angle))


# --------------------------------------------------------------------------- Proposition 3.2
def _em_trace(X, K, nonneg, w0, n_iter):
    """The EM iterates with the l1 bound of every M-step (plain NumPy; Algorithm 2)."""
    Xc = X - X.mean(0)
    w = w0 / np.linalg.norm(w0)
    out = []
    for _ in range(n_iter):
        y = Xc @ w
        h = y @ y
        wstar = Xc.T @ y / h
        B = _alg2_l1_bound(wstar, K, nonneg, np.ones(w.size, bool))
        new = np.empty(w.size)
        kern.constrained_mstep(wstar, K, nonneg, np.zeros(w.size, bool), new, np.empty(w.size))
        out.append((w, h, B))
        w = new
    return out


@pytest.mark.parametrize("nonneg", [False, True])
def test_reconstruction_error_is_monotone_without_cardinality(nonneg):
    for seed in range(6):
        X = _data(seed, n=30, p=12)
        est = EMSparsePCA(
            1, nonneg=nonneg, init="random", n_restarts=1, tol=1e-13, max_iter=500, random_state=seed
        ).fit(X)
        err = est.history_[0]
        assert err.size >= 2
        assert (np.diff(err) <= 1e-10 * err[0]).all()


def test_prop32_holds_when_its_premise_holds_and_can_fail_otherwise():
    """Prop. 3.2's argument needs the previous iterate feasible for the next M-step, ||w(t)||_1 <= B(t).
    With a cardinality the bound B(t) is set anew by K at every step; whenever the premise holds the
    error does not increase, and there are cases where it fails and the error does increase."""
    held = violated_without_premise = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        X = _data(seed, n=25, p=12)
        K = int(rng.integers(1, 12))
        nonneg = bool(seed % 2)
        w0 = rng.standard_normal(12)
        w0 = np.abs(w0) if nonneg else w0
        steps = _em_trace(X, K, nonneg, w0, 40)
        for (w, h, B), (_, h_next, _) in itertools.pairwise(steps[1:]):  # from the first feasible iterate
            if np.abs(w).sum() <= B * (1 + 1e-12):
                held += 1
                assert h_next >= h * (1 - 1e-10)  # variance up = reconstruction error down
            elif h_next < h * (1 - 1e-8):
                violated_without_premise += 1
    assert held > 50
    assert violated_without_premise > 0


def test_history_is_the_reconstruction_error():
    X = _data(21, n=30, p=10)
    est = EMSparsePCA(1, cardinality=4, tol=1e-12, renormalize=False).fit(X)
    Xc = X - X.mean(0)
    w = est.components_[0]
    err = np.sum((Xc - np.outer(Xc @ w, w)) ** 2) / (X.shape[0] - 1)
    np.testing.assert_allclose(est.history_[0][-1], err, rtol=1e-10)
    assert est.history_[0].size == est.n_iter_[0] + 1


# --------------------------------------------------------------------------- renormalization (emPCAopt)
def test_renormalize_is_the_leading_eigvec_on_the_support():
    X = _data(31, n=40, p=15)
    plain = EMSparsePCA(1, cardinality=5).fit(X)
    opt = EMSparsePCA(1, cardinality=5, renormalize=True).fit(X)
    w_ref, v_ref = renormalize(Covariance.from_data(X), plain.components_[0])
    np.testing.assert_allclose(opt.components_[0], w_ref, atol=1e-10)
    np.testing.assert_allclose(opt.explained_variance_[0], v_ref, rtol=1e-10)
    assert opt.explained_variance_[0] >= plain.explained_variance_[0] * (1 - 1e-12)
    # through the Gram matrix when the support is larger than the number of samples
    Xw = _data(32, n=8, p=30)
    A = Covariance.from_data(Xw).data
    w = np.zeros(30)
    w[:20] = 1.0
    a, va = renormalize_on_support(A, w)
    b, vb = renormalize(Covariance.from_data(Xw), w)
    np.testing.assert_allclose(a, b, atol=1e-10)
    np.testing.assert_allclose(va, vb, rtol=1e-10)


def test_nonneg_renormalize_improves_on_the_support():
    X = _data(33, n=40, p=15)
    plain = EMSparsePCA(1, cardinality=6, nonneg=True, renormalize=False, random_state=4).fit(X)
    opt = EMSparsePCA(1, cardinality=6, nonneg=True, renormalize=True, random_state=4).fit(X)
    S_plain, S_opt = plain.components_[0] != 0, opt.components_[0] != 0
    assert not (S_opt & ~S_plain).any()
    assert (opt.components_ >= 0).all()
    assert opt.explained_variance_[0] >= plain.explained_variance_[0] * (1 - 1e-12)


# --------------------------------------------------------------------------- the path
@pytest.mark.parametrize(("nonneg", "n", "p"), [(False, 30, 14), (False, 10, 25), (True, 30, 14)])
def test_path_equals_independent_runs(nonneg, n, p):
    X = _data(41 + p, n=n, p=p)
    ks = [1, 3, 6, p]
    path = em_sparse_pca_path(X, ks, nonneg=nonneg, renormalize=True, random_state=5)
    assert isinstance(path, CardinalityPath) and len(path) == len(ks)
    for j, K in enumerate(ks):
        est = EMSparsePCA(1, cardinality=K, nonneg=nonneg, renormalize=False, random_state=5).fit(X)
        np.testing.assert_allclose(path.components[j], est.components_[0], atol=1e-12)
        np.testing.assert_allclose(path.variance[j], est.explained_variance_[0], rtol=1e-12)
        assert path.n_iter[j] == est.n_iter_[0]
        opt = EMSparsePCA(1, cardinality=K, nonneg=nonneg, renormalize=True, random_state=5, certify=False)
        opt.fit(X)
        np.testing.assert_allclose(path.components_opt[j], opt.components_[0], atol=1e-12)
        np.testing.assert_allclose(path.variance_opt[j], opt.explained_variance_[0], rtol=1e-12)
    assert (path.variance_opt >= path.variance * (1 - 1e-12)).all()
    assert (path.time >= 0).all() and path.init_time >= 0
    df = path.to_frame()
    assert list(df["cardinality"]) == ks and (df["nnz"] <= df["cardinality"]).all()


def test_warm_path_starts_from_the_previous_solution():
    X = _data(45, n=30, p=14)
    ks = [2, 4, 7]
    path = em_sparse_pca_path(X, ks, init="warm", renormalize=False, random_state=1)
    first = EMSparsePCA(1, cardinality=2, renormalize=False, random_state=1).fit(X)
    np.testing.assert_allclose(path.components[0], first.components_[0], atol=1e-12)
    for j in (1, 2):
        est = EMSparsePCA(1, cardinality=ks[j], init=path.components[j - 1], renormalize=False).fit(X)
        np.testing.assert_allclose(path.components[j], est.components_[0], atol=1e-12)
        assert np.count_nonzero(path.components[j]) <= ks[j]
    assert np.isnan(path.variance_opt).all()


# --------------------------------------------------------------------------- API behaviour
def test_identical_random_state_gives_identical_output():
    X = _data(51, n=30, p=12)
    kw = dict(nonneg=True, cardinality=5, n_restarts=4)
    a = EMSparsePCA(2, random_state=7, **kw).fit(X)
    b = EMSparsePCA(2, random_state=7, **kw).fit(X)
    c = EMSparsePCA(2, random_state=np.random.default_rng(7), **kw).fit(X)
    np.testing.assert_array_equal(a.components_, b.components_)
    np.testing.assert_array_equal(a.components_, c.components_)
    pa = em_sparse_pca_path(X, [2, 5], nonneg=True, random_state=3)
    pb = em_sparse_pca_path(X, [2, 5], nonneg=True, random_state=3)
    np.testing.assert_array_equal(pa.components, pb.components)


def test_more_restarts_never_worse():
    X = _data(52, n=30, p=12)
    v1 = EMSparsePCA(1, nonneg=True, cardinality=4, n_restarts=1, random_state=3).fit(X).explained_variance_
    v8 = EMSparsePCA(1, nonneg=True, cardinality=4, n_restarts=8, random_state=3).fit(X).explained_variance_
    assert v8[0] >= v1[0] - 1e-12  # restarts 0 of both runs draw the same start


def test_covariance_input_equals_data_input():
    X = _data(53, n=40, p=10)
    kw = dict(cardinality=4, tol=1e-13, random_state=2)
    w_data, v_data = em_sparse_pca(X, 2, **kw)
    w_cov, v_cov = em_sparse_pca(Covariance.from_matrix(np.cov(X, rowvar=False)), 2, **kw)
    _same_up_to_sign(w_cov, w_data, atol=1e-7)
    np.testing.assert_allclose(v_cov, v_data, rtol=1e-9)
    p1 = em_sparse_pca_path(Covariance.from_matrix(np.cov(X, rowvar=False)), [3], tol=1e-13, random_state=2)
    p2 = em_sparse_pca_path(X, [3], tol=1e-13, random_state=2)
    np.testing.assert_allclose(p1.variance, p2.variance, rtol=1e-9)


def test_sklearn_clone_and_params():
    est = EMSparsePCA(2, cardinality=[3, 4], nonneg=True)
    c = clone(est)
    assert c.get_params() == est.get_params()
    X = _data(54)
    Z = c.fit_transform(X)
    assert Z.shape == (X.shape[0], 2)


def test_convergence_warning_at_max_iter():
    X = _data(55)
    with pytest.warns(ConvergenceWarning):
        EMSparsePCA(1, cardinality=4, init="random", max_iter=1, random_state=0).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        EMSparsePCA(1, cardinality=4).fit(X)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(cardinality=0), "cardinality"),
        (dict(cardinality=13), "cardinality"),
        (dict(n_components=2, cardinality=[1, 2, 3]), "cardinality"),
        (dict(n_components=40), "n_components"),
        (dict(orthogonality="nope"), "orthogonality"),
        (dict(min_angle_deg=85), "min_angle_deg"),
        (dict(orthogonality="quasi", min_angle_deg=120), "min_angle_deg"),
        (dict(init=np.ones(5)), "init"),
        (dict(init="bogus"), "init"),
        (dict(init=np.zeros(12)), "init"),
        (dict(tol=0.0), "tol"),
        (dict(n_restarts=0), "n_restarts"),
    ],
)
def test_bad_parameters_raise(kwargs, match):
    X = _data(60, n=30, p=12)
    with pytest.raises(ValueError, match=match):
        EMSparsePCA(**kwargs).fit(X)


def test_bad_input_raises():
    X = _data(61, n=30, p=12)
    Xn = X.copy()
    Xn[3, :] = np.nan
    with pytest.raises(ValueError, match=r"row\(s\) 3 with every entry missing"):
        EMSparsePCA(cardinality=3).fit(Xn)
    Xn = X.copy()
    Xn[:, 5] = np.nan
    with pytest.raises(ValueError, match=r"column\(s\) 5 with every entry missing"):
        EMSparsePCA(cardinality=3).fit(Xn)
    with pytest.raises(ValueError, match="operator"):
        EMSparsePCA(cardinality=3, operator="gram").fit(X)
    with pytest.raises(ValueError, match="n_components"):  # rank 3 data, 5 components
        rng = np.random.default_rng(0)
        Xr = rng.standard_normal((30, 3)) @ rng.standard_normal((3, 12))
        EMSparsePCA(5).fit(Xr)
    with pytest.raises(ValueError, match="n_components"):  # more disjoint components than features
        EMSparsePCA(7, nonneg=True, cardinality=2, random_state=0).fit(X)
    with pytest.raises(ValueError, match="cardinalities"):
        em_sparse_pca_path(X, [0, 3])
    with pytest.raises(ValueError, match="cardinalities"):
        em_sparse_pca_path(X, [13])
    with pytest.raises(ValueError, match="no variance"):
        EMSparsePCA(cardinality=2).fit(np.ones((5, 4)))
    est = EMSparsePCA(cardinality=3).fit(X)
    with pytest.raises(ValueError, match="features"):
        est.transform(X[:, :5])


# --------------------------------------------------------------------------- operators, blocks, ties
def _ops(X):
    return Covariance.from_data(X, operator="data"), Covariance.from_data(X, operator="covariance")


@pytest.mark.parametrize(("nonneg", "n", "p"), [(False, 60, 12), (True, 60, 12), (False, 10, 25)])
def test_covariance_operator_gives_the_data_operators_iterates(nonneg, n, p):
    """Iterating on the D x D covariance equals iterating through the data: same iterates to round-off."""
    from repro.em_sparse_pca.algorithm import _em_block

    X = _data(70 + p, n=n, p=p)
    op_d, op_c = _ops(X)
    assert op_d.operator == "data" and op_c.operator == "covariance"
    W0 = np.abs(np.random.default_rng(3).standard_normal((4, p)))
    W0 /= np.linalg.norm(W0, axis=1, keepdims=True)
    ex = np.zeros(p, bool)
    # Fixed iteration counts (tol never met): the iterates themselves. Round-off grows slowly with T
    # because the soft threshold subtracts nearly equal numbers (a - s_(K+1)) for entries near it.
    for T, atol in ((1, 1e-13), (7, 1e-11), (40, 1e-7)):
        a = _em_block(op_d, W0, 5, nonneg, ex, 1e-300, T)
        b = _em_block(op_c, W0, 5, nonneg, ex, 1e-300, T)
        for ra, rb in zip(a, b, strict=True):
            # (a run can still stop early once |w(t+1)'w(t)| rounds above 1)
            m = min(ra.history.size, rb.history.size)
            np.testing.assert_allclose(ra.history[:m], rb.history[:m], rtol=1e-11)
            if ra.n_iter == rb.n_iter:
                np.testing.assert_allclose(ra.w, rb.w, atol=atol)
            else:  # both at the fixed point
                assert T == 40
                np.testing.assert_allclose(ra.w, rb.w, atol=1e-7)
    kw = dict(cardinality=5, nonneg=nonneg, random_state=1, tol=1e-12)
    fd = EMSparsePCA(2, operator="data", **kw).fit(X)
    fc = EMSparsePCA(2, operator="covariance", **kw).fit(X)
    assert (fd.operator_, fc.operator_) == ("data", "covariance")
    np.testing.assert_allclose(fd.components_, fc.components_, atol=1e-9)
    np.testing.assert_allclose(fd.explained_variance_, fc.explained_variance_, rtol=1e-11)
    pd_ = em_sparse_pca_path(X, [2, 5], nonneg=nonneg, random_state=1, operator="data")
    pc_ = em_sparse_pca_path(X, [2, 5], nonneg=nonneg, random_state=1, operator="covariance")
    np.testing.assert_allclose(pd_.variance_opt, pc_.variance_opt, rtol=1e-11)
    auto = EMSparsePCA(1, **kw).fit(X)
    assert auto.operator_ == ("covariance" if n > p else "data")


@pytest.mark.parametrize("nonneg", [False, True])
def test_block_restarts_equal_sequential_restarts(nonneg):
    """Restarts run as one block (D x R products, per-row kernel, converged rows leave) give each row the
    run it would have alone, and the NumPy twin's run."""
    from repro.em_sparse_pca.algorithm import _em, _em_block

    X = _data(80, n=50, p=14)
    C = np.cov(X, rowvar=False)
    rng = np.random.default_rng(8)
    W0 = rng.standard_normal((6, 14))
    if nonneg:
        W0 = np.abs(W0)
    W0 /= np.linalg.norm(W0, axis=1, keepdims=True)
    ex = np.zeros(14, bool)
    for op in _ops(X):
        block = _em_block(op, W0, 4, nonneg, ex, 1e-10, 500)
        assert len({r.n_iter for r in block}) > 1  # rows stop at different iterations
        for r, w0 in zip(block, W0, strict=True):
            alone = _em(op, w0, 4, nonneg, ex, 1e-10, 500)
            np.testing.assert_allclose(r.w, alone.w, atol=1e-12)
            assert r.n_iter == alone.n_iter and r.status == alone.status
            w_ref, it_ref = naive.em_sparse_pca_run(C, w0, 4, nonneg, ex, 1e-10, 500)
            np.testing.assert_allclose(r.w, w_ref, atol=1e-9)
            assert abs(r.n_iter - it_ref) <= 1
    # the estimator keeps the best row of the block: the best of the sequential runs
    est = EMSparsePCA(
        1, cardinality=4, nonneg=nonneg, init="random", n_restarts=6, renormalize=False, random_state=2
    ).fit(X)
    seeds = np.random.default_rng(2).integers(0, 2**63 - 1, size=6)
    best = -np.inf
    for sd in seeds:
        g = np.random.default_rng(int(sd))
        w0 = g.standard_normal(14)
        w0 = np.abs(w0) if nonneg else w0
        w, _ = naive.em_sparse_pca_run(C, w0 / np.linalg.norm(w0), 4, nonneg, ex, 1e-8, 1000)
        best = max(best, float(w @ C @ w))
    np.testing.assert_allclose(est.explained_variance_[0], best, rtol=1e-8)


def test_em_update_block_matches_twin():
    rng = np.random.default_rng(9)
    R, D = 5, 20
    F = np.round(rng.standard_normal((3, D)), 1)  # with ties
    W = rng.standard_normal((R, D))
    W /= np.linalg.norm(W, axis=1, keepdims=True)
    rows = np.array([0, 2, 4])
    ex = rng.random(D) < 0.1
    for nonneg in (False, True):
        Wk, Wn = W.copy(), W.copy()
        sk, sn = np.zeros(R), np.zeros(R)
        nk, ck, nn, cn = np.empty(3), np.empty(3), np.empty(3), np.empty(3)
        kern.em_update_block(F, 4, nonneg, ex, Wk, np.empty(D), sk, rows, nk, ck)
        naive.em_update_block(F, 4, nonneg, ex, Wn, np.empty(D), sn, rows, nn, cn)
        np.testing.assert_allclose(Wk, Wn, atol=1e-14)
        np.testing.assert_allclose(nk, nn, rtol=1e-13)
        np.testing.assert_allclose(ck, cn, rtol=1e-13, atol=1e-15)
        np.testing.assert_array_equal(sk, sn)


def test_ties_in_the_threshold_are_broken_exactly():
    """Exactly duplicated columns: K = 1 keeps one of the pair, K = 3 on two copies keeps 3 (issue 9)."""
    X = _data(90, n=40, p=6)
    X2 = np.hstack([X, X])
    for nonneg in (False, True):
        for operator in ("data", "covariance"):
            for K in (1, 2, 3, 5):
                est = EMSparsePCA(1, cardinality=K, nonneg=nonneg, operator=operator, random_state=0).fit(X2)
                assert np.count_nonzero(est.components_[0]) == K
                assert np.isfinite(est.explained_variance_).all()
    # the M-step itself: a tie at the K-th place keeps the lowest index, all K entries non-zero
    out = np.empty(4)
    n = kern.constrained_mstep(np.array([2.0, 1.0, 2.0, 0.5]), 1, False, np.zeros(4, bool), out, np.empty(4))
    assert n > 0 and np.count_nonzero(out) == 1 and out[0] == 1.0
    kern.constrained_mstep(np.array([3.0, 1.0, 1.0, 0.5]), 2, False, np.zeros(4, bool), out, np.empty(4))
    np.testing.assert_allclose(out, np.array([2.5, 0.5, 0.0, 0.0]) / np.hypot(2.5, 0.5))


def _brute_force_optimum(C, K):
    return max(np.linalg.eigvalsh(C[np.ix_(S, S)])[-1] for S in itertools.combinations(range(C.shape[0]), K))


def _brute_force_nonneg_optimum(C, K):
    """max w'Cw over unit w >= 0 with at most K non-zeros, exactly: at the optimum, w restricted to its
    support T is an eigenvector of C[T, T] with all entries positive (KKT on the face of the orthant), so
    the optimum is the largest eigenvalue, over every T with |T| <= K, whose eigenvector has one sign."""
    best = 0.0
    for k in range(1, K + 1):
        for T in itertools.combinations(range(C.shape[0]), k):
            vals, vecs = np.linalg.eigh(C[np.ix_(T, T)])
            for j in range(k):
                v = vecs[:, j] * np.sign(vecs[:, j].sum())
                if (v > 0).all():
                    best = max(best, vals[j])
    return best


def _rank3_data(seed, n=40, p=12):
    g = np.random.default_rng(seed)
    return g.standard_normal((n, 3)) @ g.standard_normal((3, p)) + 0.3 * g.standard_normal((n, p))


def test_brute_force_nonneg_optimum_is_exact():
    # against a dense grid of the non-negative unit sphere on 3 features (K = 3: no cardinality bound)
    C = np.cov(_rank3_data(0, p=3), rowvar=False)
    t = np.linspace(0, np.pi / 2, 301)
    a, b = np.meshgrid(t, t)
    W = np.stack([np.cos(a) * np.cos(b), np.sin(a) * np.cos(b), np.sin(b)], -1).reshape(-1, 3)
    grid = np.einsum("ij,jk,ik->i", W, C, W).max()
    opt = _brute_force_nonneg_optimum(C, 3)
    assert grid <= opt * (1 + 1e-12) and grid >= opt * (1 - 1e-4)


def _brute_force_ratios(nonneg, **params):
    ratios = []
    for seed in range(8):
        X = _rank3_data(seed)
        C = np.cov(X, rowvar=False)
        opt = _brute_force_nonneg_optimum(C, 4) if nonneg else _brute_force_optimum(C, 4)
        est = EMSparsePCA(1, cardinality=4, nonneg=nonneg, random_state=seed, **params).fit(X)
        w = est.components_[0]
        assert np.count_nonzero(w) <= 4 and (not nonneg or (w >= 0).all())
        assert est.explained_variance_[0] <= opt * (1 + 1e-12)
        ratios.append(est.explained_variance_[0] / opt)
    return np.array(ratios)


@pytest.mark.parametrize("nonneg", [False, True])
def test_defaults_against_brute_force(nonneg):
    """Issue 23: 12 features, K = 4, data of rank 3 plus noise, eight data sets; the defaults against the
    exact optimum over every support: at least 0.999 of it on every set (measured: the optimum on all 16).
    emPCAopt alone (renormalize=True) reaches 0.9837 (sparse) and 0.9696 (non-negative) at worst, and
    more random starts (100) do not help: its misses are fixed points of the soft-thresholded EM; the
    truncated-power steps of renormalize="refine" (one from every start, then from the best) leave them."""
    assert _brute_force_ratios(nonneg, certify=False).min() >= 0.999  # the EM alone (no exact solver)
    assert _brute_force_ratios(nonneg, renormalize=True, certify=False).min() < 0.99  # not trivial


def _refine_data(seed):
    g = np.random.default_rng(seed)
    return g.standard_normal((40, 3)) @ g.standard_normal((3, 20)) + 0.3 * g.standard_normal((40, 20))


@pytest.mark.parametrize(
    ("seed", "nonneg", "better"), [(12, False, True), (26, True, True), (3, False, False)]
)
def test_refine_is_never_worse_and_moves_the_support(seed, nonneg, better):
    """The default renormalize="refine": truncated-power steps after emPCAopt, each kept only when it
    raises w'Cw. Never below emPCAopt; above it on these seeds (1.042x, 1.015x; 9 of 120 such cases
    found over seeds 0-59); the result is feasible and optimal on its own support."""
    X = _refine_data(seed)
    C = np.cov(X, rowvar=False)
    opt = EMSparsePCA(1, cardinality=5, nonneg=nonneg, renormalize=True, random_state=0).fit(X)
    ref = EMSparsePCA(1, cardinality=5, nonneg=nonneg, random_state=0).fit(X)
    w, h = ref.components_[0], ref.explained_variance_[0]
    assert h >= opt.explained_variance_[0] * (1 - 1e-12)
    assert (h > opt.explained_variance_[0] * (1 + 1e-3)) == better
    assert np.count_nonzero(w) <= 5 and abs(np.linalg.norm(w) - 1) < 1e-12
    np.testing.assert_allclose(h, w @ C @ w, rtol=1e-10)
    S = np.flatnonzero(w)
    if nonneg:
        assert (w >= 0).all()
        assert h >= _brute_force_nonneg_optimum(C[np.ix_(S, S)], S.size) * (1 - 1e-7)
    else:
        np.testing.assert_allclose(h, np.linalg.eigvalsh(C[np.ix_(S, S)])[-1], rtol=1e-10)


def test_renormalize_is_checked():
    X = _refine_data(0)
    with pytest.raises(ValueError, match="'renormalize' parameter of EMSparsePCA must be"):
        EMSparsePCA(1, cardinality=3, renormalize="yes").fit(X)
    with pytest.raises(ValueError, match="renormalize"):
        em_sparse_pca_path(X, [3], renormalize=None)


# --------------------------------------------------------------------------- missing values
def _planted(seed, nonneg, n=200, p=30):
    rng = np.random.default_rng(seed)
    v = np.zeros(p)
    v[[2, 7, 11, 19, 25]] = [1.0, -0.8, 0.6, 0.9, -0.7]
    v = np.abs(v) if nonneg else v
    v /= np.linalg.norm(v)
    y = 3.0 * (np.abs(rng.standard_normal((n, 1))) if nonneg else rng.standard_normal((n, 1)))
    X = y * v + 0.5 * rng.standard_normal((n, p)) + rng.standard_normal(p)
    Xm = X.copy()
    Xm[rng.random(X.shape) < 0.2] = np.nan
    return X, Xm, v


@pytest.mark.parametrize("nonneg", [False, True])
def test_missing_value_em_equals_complete_data_em_when_nothing_is_missing(nonneg):
    from repro.em_sparse_pca.algorithm import _em_block
    from repro.em_sparse_pca.missing import _ObservedData

    X = _data(95, n=50, p=12)
    obs, cov = _ObservedData(X), Covariance.from_data(X, operator="data")
    W0 = np.abs(np.random.default_rng(1).standard_normal((3, 12)))
    W0 /= np.linalg.norm(W0, axis=1, keepdims=True)
    a = _em_block(obs, W0, 4, nonneg, np.zeros(12, bool), 1e-10, 300)
    b = _em_block(cov, W0, 4, nonneg, np.zeros(12, bool), 1e-10, 300)
    for ra, rb in zip(a, b, strict=True):
        np.testing.assert_allclose(ra.w, rb.w, atol=1e-10)
        np.testing.assert_allclose(ra.history, rb.history, rtol=1e-10)
        np.testing.assert_allclose(ra.mean, X.mean(axis=0), atol=1e-12)
    # renormalization: an eigenvector on the support for complete data, the EM on the support here (tight tol)
    kw = dict(cardinality=4, nonneg=nonneg, random_state=3, renormalize=True, tol=1e-15, max_iter=20000)
    full = EMSparsePCA(2, **kw).fit(X)
    est = EMSparsePCA(2, **kw)
    est._fit_op(_ObservedData(X), X.mean(axis=0), X.shape[0] - 1)
    assert est.operator_ == "missing"
    np.testing.assert_allclose(est.components_, full.components_, atol=1e-7)
    np.testing.assert_allclose(est.explained_variance_, full.explained_variance_, rtol=1e-8)
    np.testing.assert_allclose(est.explained_variance_ratio_, full.explained_variance_ratio_, rtol=1e-8)
    np.testing.assert_allclose(est.mean_, full.mean_, atol=1e-12)


@pytest.mark.parametrize("nonneg", [False, True])
def test_missing_values_recover_a_planted_sparse_component(nonneg):
    X, Xm, v = _planted(7, nonneg)
    assert 0.18 < np.isnan(Xm).mean() < 0.22
    est = EMSparsePCA(1, cardinality=5, nonneg=nonneg, renormalize=False, random_state=0).fit(Xm)
    w = est.components_[0]
    np.testing.assert_array_equal(np.flatnonzero(w), np.flatnonzero(v))
    assert abs(w @ v) > 0.995
    assert np.abs(est.mean_ - X.mean(axis=0)).max() < 0.15  # the mean is estimated from 80% of the data
    err = est.history_[0]
    assert np.isfinite(err).all() and err[-1] <= err[0]
    # the path on the same data: each K as the estimator gives it
    path = em_sparse_pca_path(Xm, [3, 5], nonneg=nonneg, random_state=0)
    np.testing.assert_allclose(
        path.components_opt[1],
        EMSparsePCA(1, cardinality=5, nonneg=nonneg, renormalize=True, random_state=0).fit(Xm).components_[0],
        atol=1e-12,
    )
    np.testing.assert_allclose(path.components[1], w, atol=1e-12)
    np.testing.assert_allclose(path.variance[1], est.explained_variance_[0], rtol=1e-12)


def test_missing_values_unconstrained_equals_empca():
    from repro import EMPCA

    _, Xm, _ = _planted(8, False, n=120)
    w = EMSparsePCA(1, tol=1e-13, max_iter=5000, random_state=0).fit(Xm).components_[0]
    v = EMPCA(1, tol=1e-12, max_iter=5000).fit(Xm).components_[0]
    assert abs(w @ v) / np.linalg.norm(v) > 1 - 1e-8
    est = EMSparsePCA(2, cardinality=5, random_state=0).fit(Xm)
    assert (np.count_nonzero(est.components_, axis=1) <= 5).all() and np.isfinite(
        est.explained_variance_
    ).all()
    assert est.explained_variance_[0] > est.explained_variance_[1] > 0
    with pytest.raises(ValueError, match="quasi"):
        EMSparsePCA(2, cardinality=5, orthogonality="quasi").fit(Xm)


# --------------------------------------------------------------------------- Dask
@pytest.mark.parametrize("nonneg", [False, True])
def test_dask_fits_equal_in_memory_fits(nonneg):
    da = pytest.importorskip("dask.array")
    dask = pytest.importorskip("dask")
    _, Xm, _ = _planted(9, nonneg, n=90, p=30)
    kw = dict(cardinality=5, nonneg=nonneg, random_state=0, renormalize=True)
    ref = EMSparsePCA(2, **kw).fit(Xm)
    for chunks in [(90, 30), (13, 30), (25, 8)]:  # the last one chunked along the features too
        with dask.config.set(scheduler="synchronous"):
            est = EMSparsePCA(2, **kw).fit(da.from_array(Xm, chunks=chunks))
        np.testing.assert_allclose(est.components_, ref.components_, atol=1e-9)
        np.testing.assert_allclose(est.explained_variance_, ref.explained_variance_, rtol=1e-9)
        np.testing.assert_allclose(est.mean_, ref.mean_, atol=1e-12)
    p_ref = em_sparse_pca_path(Xm, [3, 5], nonneg=nonneg, random_state=0)
    p_da = em_sparse_pca_path(da.from_array(Xm, chunks=(20, 30)), [3, 5], nonneg=nonneg, random_state=0)
    np.testing.assert_allclose(p_da.components_opt, p_ref.components_opt, atol=1e-9)
    # complete data: the covariance in one pass (auto here) or the data chunk by chunk
    X = np.where(np.isnan(Xm), 0.0, Xm)
    kw["renormalize"] = False  # (renormalized through the EM on the support on chunks: equal only to its tol)
    ref = EMSparsePCA(1, **kw).fit(X)
    for operator in ("auto", "data"):
        est = EMSparsePCA(1, operator=operator, **kw).fit(da.from_array(X, chunks=(20, 30)))
        assert est.operator_ == ("covariance" if operator == "auto" else "missing")
        np.testing.assert_allclose(est.components_, ref.components_, atol=1e-8)
        np.testing.assert_allclose(est.explained_variance_, ref.explained_variance_, rtol=1e-9)


def test_dask_reads_each_chunk_once_per_iteration(monkeypatch):
    da = pytest.importorskip("dask.array")
    from repro._chunked import DaskSource

    _, Xm, _ = _planted(10, False, n=90, p=30)
    calls = []
    real = DaskSource._parts  # builds the tasks of one pass

    def counting(self, fn, args, indexed=False, combine=None):
        calls.append(self.n_chunks)
        return real(self, fn, args, indexed, combine)

    monkeypatch.setattr(DaskSource, "_parts", counting)
    est = EMSparsePCA(1, cardinality=5, init="pc", renormalize=False, random_state=0)
    est.fit(da.from_array(Xm, chunks=(20, 30)))
    # one pass per EM iteration (all restarts together), plus the set-up passes (statistics, start, final
    # variances) and the final products of the block
    assert len(calls) <= est.n_iter_[0] + 6
    assert set(calls) == {5}


def test_dask_bad_input():
    da = pytest.importorskip("dask.array")
    _, Xm, _ = _planted(11, False, n=60, p=30)
    Xm[[4, 17]] = np.nan
    with pytest.raises(ValueError, match=r"row\(s\) 4, 17 with every entry missing"):
        EMSparsePCA(1, cardinality=3).fit(da.from_array(Xm, chunks=(10, 30)))
    X = np.nan_to_num(Xm)
    with pytest.raises(ValueError, match="dtype complex128"):
        EMSparsePCA(1, cardinality=3).fit(da.from_array(X.astype(complex), chunks=(10, 30)))
    dX = da.from_array(X, chunks=(10, 30))
    sub = dX[dX[:, 0] > -np.inf]  # unknown chunk sizes: computed, then fitted
    a = EMSparsePCA(1, cardinality=3, random_state=0).fit(sub).components_
    b = EMSparsePCA(1, cardinality=3, random_state=0).fit(X).components_
    np.testing.assert_allclose(a, b, atol=1e-9)
    Xi = np.round(X * 10).astype(np.int64)
    a = EMSparsePCA(1, cardinality=3, random_state=0).fit(da.from_array(Xi, chunks=(10, 30))).components_
    b = EMSparsePCA(1, cardinality=3, random_state=0).fit(Xi).components_
    np.testing.assert_allclose(a, b, atol=1e-9)


def test_transform_with_missing_entries_completes_then_projects():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((60, 8)) @ np.diag([3.0, 2.5, 1, 1, 1, 0.5, 0.5, 0.2])
    est = EMSparsePCA(2, cardinality=4, random_state=0).fit(X)
    Z = est.transform(X)
    np.testing.assert_allclose(Z, (X - est.mean_) @ est.components_.T, atol=1e-12)
    # a row whose missing entries are its own least-squares reconstruction transforms the same
    W = est.components_
    x = est.mean_ + W.T @ np.array([1.5, -0.7])
    holed = x.copy()
    holed[[0, 5]] = np.nan
    np.testing.assert_allclose(est.transform(holed[None, :]), est.transform(x[None, :]), atol=1e-10)


# --------------------------------------------------------------------------- N << D: screening, support
def _wide(seed, n=24, p=300, nonneg=False):
    """Wide data (n < p, n >= 16: the screened iteration applies), a few strong correlated blocks."""
    rng = np.random.default_rng(seed)
    f = rng.standard_normal((n, 3))
    L = np.zeros((3, p))
    for k in range(3):
        idx = rng.choice(p, 20, replace=False)
        L[k, idx] = rng.uniform(0.5, 2.0, 20) * (1.0 if nonneg else rng.choice([-1.0, 1.0], 20))
    return f @ L + rng.standard_normal((n, p))


def _refinement(A, q):
    """The refinement arguments of ``em_update_screened``: ``U'`` (q leading eigenvectors of ``A A'``),
    ``B = A'U``, ``cr = ||(I - UU')a_j||`` (``q = 0``: none, ``cr = ||a_j||``), and two scratch buffers."""
    N, D = A.shape
    colnorm = np.sqrt(np.einsum("ij,ij->j", A, A))
    if q == 0:
        return (np.empty((0, N)), np.empty((D, 0)), colnorm, np.empty(N), np.empty(0))
    U = np.linalg.eigh(A @ A.T)[1][:, ::-1][:, :q]
    B = A.T @ U
    cr = np.sqrt(np.maximum(colnorm**2 - (B * B).sum(1), 0.0) + 1e-12 * colnorm**2)
    return (np.ascontiguousarray(U.T), np.ascontiguousarray(B), cr, np.empty(N), np.empty(q))


def _screen_state(A, K, nonneg, ex, w_ref, w):
    """A screened step's inputs: the reference (full product at ``w_ref``) and the iterate ``w``."""
    D = A.shape[1]
    y0 = A @ w_ref
    f0 = A.T @ y0
    st = np.zeros(1)
    wr = w_ref.copy()
    kern.em_update(f0, K, nonneg, ex, wr, np.empty(D), st)
    ref = np.empty(D, np.int64)
    nref = kern.screen_reference(f0, nonneg, ex, st[0], ref)
    supp = np.empty(D, np.int64)
    ns = kern.support_of(w, supp)
    return y0, f0, ref, nref, supp, ns, st


def test_screened_step_kernels_match_twins():
    """The kernels of the screened iteration against their NumPy twins; when the bound settles a step it is
    exactly Algorithm 2 on the full product X'y (same support, threshold, iterate to round-off), and it
    settles most steps near convergence."""
    rng = np.random.default_rng(11)
    settled = 0
    for trial in range(24):
        nonneg = bool(trial % 2)
        A = Covariance.from_data(_wide(trial, nonneg=nonneg)).data
        N, D = A.shape
        K = int(rng.integers(2, 20))
        ex = rng.random(D) < (0.1 if trial % 3 == 0 else 0.0)
        w = np.abs(rng.standard_normal(D)) if nonneg else rng.standard_normal(D)
        w[ex] = 0.0
        w /= np.linalg.norm(w)
        st = np.zeros(1)
        for _ in range(int(rng.integers(3, 12))):  # the reference: an iterate along the way
            kern.em_update(A.T @ (A @ w), K, nonneg, ex, w, np.empty(D), st)
        w_ref = w.copy()
        for _ in range(int(rng.integers(1, 4))):
            kern.em_update(A.T @ (A @ w), K, nonneg, ex, w, np.empty(D), st)
        y0, f0, ref, nref, supp, ns, st_ref = _screen_state(A, K, nonneg, ex, w_ref, w)
        # twins of the helpers
        idx_n = np.empty(D, np.int64)
        assert kern.support_of(w, supp) == naive.support_of(w, idx_n) == ns
        np.testing.assert_array_equal(supp[:ns], idx_n[:ns])
        ref_n = np.empty(D, np.int64)
        assert nref == naive.screen_reference(f0, nonneg, ex, st_ref[0], ref_n) >= K + 1
        np.testing.assert_array_equal(ref[:nref], ref_n[:nref])
        y, y_n = np.empty(N), np.empty(N)
        kern.gather_matvec(A.T, supp, ns, w, y)
        naive.gather_matvec(A.T, supp, ns, w, y_n)
        np.testing.assert_allclose(y, y_n, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(y, A @ w, rtol=1e-13, atol=1e-13)
        support_matvec(np.ascontiguousarray(A), supp, ns, w, y)
        naive.support_matvec(A, supp, ns, w, y_n)
        np.testing.assert_allclose(y, y_n, rtol=1e-13, atol=1e-13)
        out, out_n = np.empty(D), np.empty(D)
        kern.gather_rmatvec(A.T, ref, nref, y, out)
        naive.gather_rmatvec(A.T, ref, nref, y, out_n)
        np.testing.assert_allclose(out[:nref], out_n[:nref], rtol=1e-12, atol=1e-13)
        # the screened step against the plain step on the full product
        wk, wn = w.copy(), w.copy()
        sk, sn = st.copy(), st.copy()
        suppk = supp.copy()
        colnorm = np.sqrt(np.einsum("ij,ij->j", A, A))
        got = kern.em_update_screened(
            A.T, colnorm, K, nonneg, ex, wk, suppk, ns, y, y0, f0, ref, nref, sk, np.empty(D, np.int64),
            np.empty(D), np.zeros(D, bool), np.empty(D), D, *_refinement(A, (0, 4, 8)[trial % 3]),
        )  # fmt: skip
        want = naive.em_update_screened(A.T, colnorm, K, nonneg, ex, wn, None, ns, y, y0, f0, ref, nref, sn)
        if got[0] == kern.NEED_FULL:
            np.testing.assert_array_equal(wk, w)  # nothing changed
            continue
        settled += 1
        assert got[0] == want[0] == K
        np.testing.assert_array_equal(suppk[: got[0]], np.flatnonzero(wn))
        np.testing.assert_array_equal(wk != 0, wn != 0)
        np.testing.assert_allclose(wk, wn, atol=1e-12)
        np.testing.assert_allclose(got[1:], want[1:], rtol=1e-11)
        np.testing.assert_allclose(sk, sn, rtol=1e-11)
    assert settled >= 12


def test_screened_step_refuses_what_the_bound_cannot_settle():
    """Too many candidates (a far reference, or max_cand too small) or a tie at the K-th place: NEED_FULL
    and nothing changed."""
    A = Covariance.from_data(_wide(5)).data
    D = A.shape[1]
    K = 5
    ex = np.zeros(D, bool)
    w_far = np.random.default_rng(0).standard_normal(D)
    w_far /= np.linalg.norm(w_far)
    w = np.zeros(D)
    w[:K] = 1 / np.sqrt(K)
    colnorm = np.sqrt(np.einsum("ij,ij->j", A, A))
    bufs = (np.empty(D, np.int64), np.empty(D), np.zeros(D, bool), np.empty(D))
    y0, f0, ref, nref, supp, ns, st = _screen_state(A, K, False, ex, w_far, w)
    wk = w.copy()
    got = kern.em_update_screened(
        A.T, colnorm, K, False, ex, wk, supp, ns, A @ w, y0, f0, ref, nref, st.copy(), *bufs, K + 1,
        *_refinement(A, 4),
    )  # fmt: skip
    assert got[0] == kern.NEED_FULL
    np.testing.assert_array_equal(wk, w)
    # two identical columns on top: K = 1 ties at the K-th place (refused), K = 2 does not (settled)
    B = np.hstack([A[:, :1], A])
    Dt = B.shape[1]
    none = np.zeros(Dt, bool)
    cn = np.sqrt(np.einsum("ij,ij->j", B, B))
    for K, expect_full in ((1, True), (2, False)):
        wt = np.zeros(Dt)
        wt[0] = 1.0
        y = B @ wt
        f = B.T @ y
        st = np.zeros(1)
        kern.em_update(f, K, False, none, wt.copy(), np.empty(Dt), st)
        ref = np.empty(Dt, np.int64)
        nref = kern.screen_reference(f, False, none, st[0], ref)
        supp = np.zeros(Dt, np.int64)
        got = kern.em_update_screened(
            B.T, cn, K, False, none, wt.copy(), supp, 1, y, y, f, ref, nref, st.copy(),
            np.empty(Dt, np.int64), np.empty(Dt), np.zeros(Dt, bool), np.empty(Dt), Dt, *_refinement(B, 0),
        )  # fmt: skip
        assert (got[0] == kern.NEED_FULL) == expect_full


@pytest.mark.parametrize("nonneg", [False, True])
def test_screened_block_gives_the_plain_iterates(nonneg):
    """The screened block (N < D) against the plain block on the same operator: the same runs (supports,
    iteration counts, statuses; iterates and variances to round-off), with excluded features and on a
    deflated operator, and most iterations actually screened."""
    import sys

    from repro.em_sparse_pca.algorithm import _em_block
    from repro.em_sparse_pca.operators import _leading_pc

    screening = sys.modules["repro.em_sparse_pca.algorithm"]  # where the screening threshold lives
    X = _wide(21, nonneg=nonneg)
    op = Covariance.from_data(X)
    D = op.n_features
    rng = np.random.default_rng(4)
    W0 = rng.standard_normal((5, D))
    if nonneg:
        W0 = np.abs(W0)
    W0 /= np.linalg.norm(W0, axis=1, keepdims=True)
    screens = []
    orig = screening._Screen.__init__

    def keep(self, *a):
        orig(self, *a)
        screens.append(self)

    for K, ex, o in (
        (6, np.zeros(D, bool), op),
        (10, rng.random(D) < 0.2, op),
        (4, np.zeros(D, bool), op.deflate(_leading_pc(op.data))),
    ):
        W = W0.copy()
        W[:, ex] = 0.0
        W /= np.linalg.norm(W, axis=1, keepdims=True)
        screening._Screen.__init__ = keep
        try:
            a = _em_block(o, W, K, nonneg, ex, 1e-10, 500)
        finally:
            screening._Screen.__init__ = orig
        b = _em_block(o, W, K, nonneg, ex, 1e-10, 500, screen=False)
        for ra, rb in zip(a, b, strict=True):
            assert (ra.n_iter, ra.status) == (rb.n_iter, rb.status)
            np.testing.assert_array_equal(ra.w != 0, rb.w != 0)
            np.testing.assert_allclose(ra.w, rb.w, atol=1e-10)
            np.testing.assert_allclose(ra.history, rb.history, rtol=1e-10)
            assert not ra.w[ex].any()
    assert len(screens) == 3
    for sc in screens:  # most iterations settled by the bound, without the full product
        assert sc.n_screened > sc.n_full
    # the estimator: the same component either way
    kw = dict(cardinality=8, nonneg=nonneg, renormalize=True, random_state=3)
    fit_s = EMSparsePCA(2, **kw).fit(X)
    saved = screening.SCREEN_MIN_SAMPLES
    screening.SCREEN_MIN_SAMPLES = 10**9
    try:
        fit_p = EMSparsePCA(2, **kw).fit(X)
    finally:
        screening.SCREEN_MIN_SAMPLES = saved
    np.testing.assert_allclose(fit_s.components_, fit_p.components_, atol=1e-10)
    np.testing.assert_allclose(fit_s.explained_variance_, fit_p.explained_variance_, rtol=1e-11)
    np.testing.assert_array_equal(fit_s.n_iter_, fit_p.n_iter_)


@pytest.mark.parametrize("shape", [(24, 300), (80, 20)])
@pytest.mark.parametrize("nonneg", [False, True])
def test_em_on_the_support_equals_the_em_with_the_rest_excluded(shape, nonneg):
    """The renormalization EM on the support's own operator (N x K columns or the K x K block) gives the
    runs of the EM on the full operator with every other feature excluded: the same iteration counts and
    statuses, iterates and variances to round-off; for data and matrix operators and deflated ones."""
    from repro.em_sparse_pca.algorithm import _em, _em_block, _em_on_support
    from repro.em_sparse_pca.operators import _leading_pc

    n, p = shape
    X = _wide(31, n=n, p=p, nonneg=nonneg) if n < p else _data(31, n=n, p=p)
    rng = np.random.default_rng(6)
    base = Covariance.from_data(X)
    ops = [base, Covariance.from_data(X, operator="covariance"), base.deflate(_leading_pc(base.data))]
    tried = 0
    for op in ops:
        D = op.n_features
        for K in (3, 7):
            ex = rng.random(D) < 0.15
            W0 = rng.standard_normal((3, D))
            if nonneg:
                W0 = np.abs(W0)
            W0[:, ex] = 0
            W0 /= np.linalg.norm(W0, axis=1, keepdims=True)
            for run in _em_block(op, W0, K, nonneg, ex, 1e-8, 1000):
                if run.status == kern.COLLAPSED:
                    continue
                w = run.w if nonneg else np.abs(run.w)  # a start with mixed signs for the signed case
                old = _em(op, w, D, nonneg, ex | (w == 0), 1e-10, 1000)
                new = _em_on_support(op, w, nonneg, 1e-10, 1000)
                assert (new.n_iter, new.status) == (old.n_iter, old.status)
                np.testing.assert_array_equal(new.w != 0, old.w != 0)
                np.testing.assert_allclose(new.w, old.w, atol=1e-12)
                np.testing.assert_allclose(new.history, old.history, rtol=1e-12)
                np.testing.assert_allclose(new.h, old.h, rtol=1e-12)
                tried += 1
    assert tried >= 12


# --------------------------------------------------------------------------- support-stable stop (issue 23)
@pytest.mark.parametrize("operator", ["covariance", "data"])
@pytest.mark.parametrize("nonneg", [False, True])
def test_support_stop_and_first_products(operator, nonneg):
    from repro.em_sparse_pca.algorithm import SUPPORT_PATIENCE, _em_block

    # data-backed with N < D: the screened iterations; N > D: the covariance or the plain data products
    X = _data(61, n=20, p=60) if operator == "data" else _data(61, n=80, p=20)
    op = Covariance.from_data(X, operator=operator)
    C = np.cov(X, rowvar=False)
    D, K = X.shape[1], 5
    W0 = np.abs(np.random.default_rng(0).standard_normal((4, D)))
    W0 /= np.linalg.norm(W0, axis=1)[:, None]
    exc = np.zeros(D, dtype=bool)
    first = np.empty_like(W0)
    full = _em_block(op, W0, K, nonneg, exc, 1e-12, 500)
    stop = _em_block(op, W0, K, nonneg, exc, 1e-12, 500, support_stop="stop", first=first)
    # the first products are C w0 (NumPy twin)
    np.testing.assert_allclose(first, W0 @ C, rtol=1e-10, atol=1e-12)
    for f, s in zip(full, stop, strict=True):
        # the stopped run is the full run's prefix: same iterates up to its stop
        assert s.n_iter <= f.n_iter
        np.testing.assert_allclose(s.history, f.history[: s.n_iter + 1], rtol=1e-9)
        if s.n_iter < f.n_iter:  # stopped by the support rule: a support unchanged for the patience
            assert SUPPORT_PATIENCE < s.n_iter
            assert s.status == kern.CONVERGED
    # the stop rule shortens at least one run here (so the comparisons above are not vacuous)
    assert sum(s.n_iter for s in stop) < sum(f.n_iter for f in full)


def test_renormalize_true_is_the_converged_emPCAopt():
    # renormalize=True is the paper's emPCAopt: the EM to tol, then optimal weights on its support; the
    # support-stable stop (refine only) must not change it
    from repro.em_sparse_pca.algorithm import _em_block

    X = _data(62, n=80, p=24)
    C = np.cov(X, rowvar=False)
    K = 6
    est = EMSparsePCA(n_components=1, cardinality=K, renormalize=True, init="pc", n_restarts=1).fit(X)
    op = Covariance.from_data(X)
    w0 = np.linalg.eigh(C)[1][:, -1]
    (run,) = _em_block(op, w0[None, :], K, False, np.zeros(24, dtype=bool), est.tol, 10_000)
    S = np.flatnonzero(run.w)
    vecs = np.linalg.eigh(C[np.ix_(S, S)])[1]
    assert est.n_iter_ == run.n_iter
    np.testing.assert_allclose(abs(est.components_[0][S] @ vecs[:, -1]), 1.0, atol=1e-9)


def _run_rows(kind, A, W0, K, nonneg, ex, tol, max_iter, stop_cos, patience, T=256):
    """The whole-run kernel ``kind`` ("matrix" on ``A'A``, "screened" or "data" on ``A``) from the rows
    ``W0``, with
    the driver's protocol: ``RUN_GROW`` grows the history, ``RUN_COLLAPSE`` marks the row collapsed (status
    2). Returns ``(W, it, status, hist, first, counts)``."""
    N, D = A.shape
    R = W0.shape[0]
    W = W0.copy()
    supp, ns = np.empty((R, D), np.int64), np.zeros(R, np.int64)
    for r in range(R):
        ns[r] = kern.support_of(W[r], supp[r])
    it, status, stable = np.zeros(R, np.int64), np.full(R, -1, np.int64), np.zeros(R, np.int64)
    state, hist, first = np.zeros(R), np.empty((R, T)), np.full((R, D), np.nan)
    pending, counts = np.ones(R, bool), np.zeros(2, np.int64)
    Ut, B, cr, _, _ = _refinement(A, 3)
    colnorm = np.sqrt(np.einsum("ij,ij->j", A, A))
    Y, Y0, F0 = np.empty((R, N)), np.empty((R, N)), np.empty((R, D))
    ref, nref = np.empty((R, D), np.int64), np.zeros(R, np.int64)
    active = np.arange(R)
    while active.size:
        if kind == "matrix":
            code, r = kern.em_rows_matrix(
                A.T @ A, K, nonneg, ex, W, active, state, supp, ns, it, status, stable, hist, first, pending,
                tol, max_iter, stop_cos, patience, 4,
            )  # fmt: skip
        else:
            code, r = kern.em_rows_data(
                A, A.T, colnorm, K, nonneg, ex, W, active, state, supp, ns, Y, Y0, F0, ref, nref, Ut, B,
                cr, D // 4, it, status, stable, hist, first, pending, tol, max_iter, stop_cos, patience, 4,
                kind == "screened", counts,
            )  # fmt: skip
        if code == kern.RUN_GROW:
            assert it[r] == hist.shape[1]
            hist = np.concatenate([hist, np.empty_like(hist)], 1)
        elif code == kern.RUN_COLLAPSE:
            status[r] = 2
        active = active[status[active] < 0]
    return W, it, status, hist, first, counts


@pytest.mark.parametrize("kind", ["matrix", "screened", "data"])
@pytest.mark.parametrize("nonneg", [False, True])
@pytest.mark.parametrize("patience", [0, 3])
def test_whole_run_kernels_match_the_twin(kind, nonneg, patience):
    """em_rows_matrix and em_rows_data (screened or not) against the NumPy twin (naive.em_rows): the same
    iteration counts, statuses and supports, iterates, histories and first products to round-off; with
    excluded features, the support-stable stop, a history that must grow (T = 4) and a start that
    collapses (w'Cw = 0)."""
    A = _wide(31, n=20, p=120, nonneg=nonneg) / np.sqrt(19.0)
    A -= A.mean(axis=0)
    D = A.shape[1]
    rng = np.random.default_rng(5)
    ex = rng.random(D) < 0.1
    ex[:2] = False
    A[:, 0] = 0.0  # a feature without variance: the start e_0 has w'Cw = 0 and collapses at once
    W0 = np.abs(rng.standard_normal((5, D))) if nonneg else rng.standard_normal((5, D))
    W0[:, ex] = 0.0
    W0[1] = 0.0
    W0[1, 1] = 1.0  # a sparse start
    W0[4] = 0.0
    W0[4, 0] = 1.0
    W0 /= np.linalg.norm(W0, axis=1, keepdims=True)
    C = A.T @ A
    for K, tol, max_iter, T in ((8, 1e-12, 300, 256), (15, 1e-6, 3, 4), (8, 1e-10, 200, 4)):
        stop_cos = 1.0 - 1e-4 if patience else 0.0
        W, it, st, hist, first, counts = _run_rows(
            kind, A, W0, K, nonneg, ex, tol, max_iter, stop_cos, patience, T
        )
        Wn, itn, stn, histn, firstn = naive.em_rows(C, W0, K, nonneg, ex, tol, max_iter, stop_cos, patience)
        np.testing.assert_array_equal(st, stn)
        ok = st != 2
        np.testing.assert_array_equal(it[ok], itn[ok])
        np.testing.assert_array_equal(W[ok] != 0, Wn[ok] != 0)
        np.testing.assert_allclose(W[ok], Wn[ok], atol=1e-10)
        for r in np.flatnonzero(ok):
            np.testing.assert_allclose(hist[r, : it[r]], histn[r][: it[r]], rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(first[:4], firstn[:4], rtol=1e-10, atol=1e-12)
        assert not W[ok][:, ex].any()
        assert st[4] == 2
        if kind == "screened" and max_iter > 3:
            assert counts[0] > counts[1]  # most iterations settled by the bound
        if kind == "data":
            assert counts[0] == 0 and counts[1] == it[ok].sum()  # no screening: a full product per iteration


# --------------------------------------------------------------------------- the float32 search covariance
def _tall(seed, n=2000, p=160, scale=None):
    """Data large enough for the float32 search (N D^2 / 2 >= SEARCH32_MIN_FLOPS), N > D."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 6)) @ rng.standard_normal((6, p)) + 0.5 * rng.standard_normal((n, p))
    if scale is not None:
        X = X * scale
    return X


def _fit_both(X, **kw):
    """The same fit with the float32 search (the default where it applies) and with it switched off."""
    from repro.em_sparse_pca import operators

    on = EMSparsePCA(1, random_state=0, **kw).fit(X)
    applies = operators._SearchCovariance.applies
    try:
        operators._SearchCovariance.applies = classmethod(lambda cls, exact, K: False)
        off = EMSparsePCA(1, random_state=0, **kw).fit(X)
    finally:
        operators._SearchCovariance.applies = applies
    return on, off


@pytest.mark.parametrize("nonneg", [False, True])
@pytest.mark.parametrize("renorm", [True, "refine"])
def test_float32_search_same_support_exact_weights(nonneg, renorm):
    # the search on the float32 covariance finds the float64 search's support, and the returned weights
    # and variance are the float64 ones on it: the leading eigenvector of C[S, S] (sparse) or the
    # non-negative EM's fixed point on S, with w'Cw of the exact sample covariance
    X = _tall(3)
    C = np.cov(X, rowvar=False)
    from repro.em_sparse_pca import estimator, operators

    op, _, _ = estimator._prepare(X, "auto", 5, search32=10)
    assert isinstance(op, operators._SearchCovariance)
    assert np.abs(op.matrix - C).max() < 1e-5 * np.abs(C).max()  # float32 sums: about 1e-7
    assert np.abs(op.matrix - C).max() > 0  # it is the float32 one
    for K in (1, 5, 20, 48):  # up to SEARCH32_MAX_SUPPORT * D = 48
        on, off = _fit_both(X, cardinality=K, nonneg=nonneg, renormalize=renorm)
        w, w_off = on.components_[0], off.components_[0]
        S = np.flatnonzero(w)
        assert np.array_equal(S, np.flatnonzero(w_off)), K
        assert on.explained_variance_[0] == pytest.approx(w @ C @ w, rel=1e-12)
        if not nonneg:
            vals, vecs = np.linalg.eigh(C[np.ix_(S, S)])
            assert on.explained_variance_[0] == pytest.approx(vals[-1], rel=1e-12)
            assert np.abs(np.abs(w[S]) - np.abs(vecs[:, -1])).max() < 1e-10  # not M~'s (off by ~1e-8)
            assert np.abs(w - w_off).max() < 1e-10
        else:
            assert (w >= 0).all()
            assert on.explained_variance_[0] >= off.explained_variance_[0] * (1 - 1e-9)
        assert on.operator_ == "covariance"


def test_centred_data_without_its_copy_is_the_data_operator():
    # the float32 search's exact operator computes the columns it is asked for: the same numbers as the
    # float64 centred copy (bit for bit), and everything else as the data-backed Covariance
    from repro.em_sparse_pca import operators

    X = _tall(6, n=300, p=40) + 7.0
    mean = X.mean(axis=0)
    ref = Covariance._from_valid(X, operator="data", mean=mean)
    lazy = operators._CentredData(X, mean)
    idx = np.array([3, 0, 17, 39])
    assert np.array_equal(lazy._columns(idx), ref.data[:, idx])
    assert np.array_equal(lazy.restrict(idx).data, ref.restrict(idx).data)
    assert np.array_equal(lazy.submatrix(idx), ref.submatrix(idx))
    w = np.zeros(40)
    w[idx] = [0.5, -0.2, 0.7, 0.1]
    assert lazy.quad(w) == pytest.approx(ref.quad(w), rel=1e-14)
    W = np.random.default_rng(0).standard_normal((40, 3))
    np.testing.assert_allclose(lazy.quad(W), ref.quad(W), rtol=1e-14)  # columns: through the whole data
    np.testing.assert_allclose(lazy.column_norms(), ref.column_norms(), rtol=1e-14)
    assert lazy.trace() == pytest.approx(ref.trace(), rel=1e-14)
    assert lazy._full is not None and np.array_equal(lazy.data, ref.data)  # formed by the W product
    assert np.array_equal(lazy._columns(idx), ref.data[:, idx])
    s = 2.0 ** math.frexp(float(lazy.column_norms().max()))[1]
    want = np.empty(X.shape, dtype=np.float32)
    np.multiply(ref.data, 1.0 / s, out=want, casting="same_kind")
    assert np.array_equal(lazy.float32(1.0 / s), want)


def test_top_pc_by_lanczos_is_the_leading_eigenvector(monkeypatch):
    # the float32 search's first start: Lanczos from the ones vector where the trace certifies it, ARPACK
    # where it does not converge or is not certified
    import scipy.sparse.linalg

    from repro.em_sparse_pca import algorithm

    arpack = []
    eigsh = scipy.sparse.linalg.eigsh
    monkeypatch.setattr(scipy.sparse.linalg, "eigsh", lambda *a, **k: arpack.append(1) or eigsh(*a, **k))
    rng = np.random.default_rng(7)
    for p, spike in ((60, 8.0), (200, 8.0), (60, 0.3)):
        f = rng.standard_normal((p + 20, 1)) * spike
        X = f @ rng.standard_normal((1, p)) + rng.standard_normal((p + 20, 5)) @ rng.standard_normal((5, p))
        M = np.cov(X, rowvar=False)
        vals, vecs = np.linalg.eigh(M)
        dominant = 2 * vals[-1] > vals.sum()
        n_before = len(arpack)
        rank, v = algorithm._top_pc_lanczos(M)
        assert rank == 1 and len(arpack) == n_before + (0 if dominant else 1)
        np.testing.assert_allclose(v, canonical_sign(vecs[:, -1]), atol=1e-9)
        if dominant:
            monkeypatch.setattr(algorithm, "PC_LANCZOS_STEPS", 2)  # not converged: ARPACK's answer
            rank2, v2 = algorithm._top_pc_lanczos(M)
            monkeypatch.setattr(algorithm, "PC_LANCZOS_STEPS", 100)
            assert rank2 == 1 and len(arpack) == n_before + 1 and np.abs(v2 - v).max() < 1e-9
    assert len(arpack) == 3
    # every feature also negated: the leading eigenvector is orthogonal to the ones start (the Krylov space
    # of that start is {0}); not certified, so ARPACK, which restarts, finds it
    Z = rng.standard_normal((200, 30)) @ rng.standard_normal((30, 30))
    M = np.cov(np.hstack([Z, -Z]), rowvar=False)
    rank, v = algorithm._top_pc_lanczos(M)
    assert rank == 1
    assert abs(abs(v @ np.linalg.eigh(M)[1][:, -1]) - 1.0) < 1e-9
    assert algorithm._top_pc_lanczos(np.zeros((60, 60)))[0] == 0


def test_float32_search_only_where_it_applies():
    from repro.em_sparse_pca import estimator, operators

    X = _tall(4)
    assert isinstance(estimator._prepare(X, "auto", 5, search32=10)[0], operators._SearchCovariance)
    # not asked (several components, no renormalization): the float64 covariance
    assert type(estimator._prepare(X, "auto", 5, search32=0)[0]) is Covariance
    # a large cardinality: the float64 weights of its support would cost more than float32 saves
    assert type(estimator._prepare(X, "auto", 5, search32=49)[0]) is Covariance
    on, off = _fit_both(X, cardinality=60)
    assert np.array_equal(on.components_, off.components_)  # bit for bit: the float64 path
    # through the data (forced, or N <= D), or too small to pay: no float32 covariance
    assert estimator._prepare(X, "data", 5, search32=10)[0].matrix is None
    assert estimator._prepare(X.T[:, :300], "auto", 5, search32=10)[0].matrix is None
    assert type(estimator._prepare(X[:300, :40], "auto", 5, search32=10)[0]) is Covariance
    # columns on scales 2^40 apart (float32 products of the smallest would underflow): float64
    Y = X.copy()
    Y[:, 0] *= 1e-13
    assert type(estimator._prepare(Y, "auto", 5, search32=10)[0]) is Covariance
    # a constant column does not count against the range
    Y = X.copy()
    Y[:, 0] = 3.0
    assert isinstance(estimator._prepare(Y, "auto", 5, search32=10)[0], operators._SearchCovariance)


@pytest.mark.parametrize("scale", [1e-30, 1e30])
def test_float32_search_scale_equivariant(scale):
    # dividing by a power of two before rounding to float32: data far outside float32's range fits the same
    X = _tall(5)
    a = EMSparsePCA(1, cardinality=12, random_state=0).fit(X)
    b = EMSparsePCA(1, cardinality=12, random_state=0).fit(X * scale)
    assert np.array_equal(np.flatnonzero(a.components_[0]), np.flatnonzero(b.components_[0]))
    assert np.abs(a.components_ - b.components_).max() < 1e-10
    assert b.explained_variance_[0] == pytest.approx(a.explained_variance_[0] * scale**2, rel=1e-10)
