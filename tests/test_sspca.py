"""SSPCA with one global support (Jenatton et al. 2009): the proximal step against its definition, monotone
descent, limits of the penalty, target cardinality, cross-validation, bad input."""

from __future__ import annotations

import naive
import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.base import clone

from repro.baselines import SSPCA, group_soft_threshold, sspca_fit, sspca_objective
from repro.baselines import _sspca_kernels as kern
from repro.baselines.sspca import _fit, _init
from repro.metrics import fscore_selection


def model_data(n, p, d, q, sigma, seed):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((p, d))
    v = np.zeros(p, dtype=bool)
    v[rng.choice(p, q, replace=False)] = True
    X = rng.standard_normal((n, d)) @ (W * v[:, None]).T + sigma * rng.standard_normal((n, p))
    return X - X.mean(axis=0), v


@pytest.mark.parametrize("t", [0.0, 0.3, 1.0, 2.5])
def test_prox_equals_its_definition(t):
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((6, 3))
    Z[2] *= 0.1  # a row below the threshold
    P = group_soft_threshold(Z, t)
    for z, v in zip(Z, P, strict=True):

        def obj(x, z=z):
            return 0.5 * np.sum((x - z) ** 2) + t * np.linalg.norm(x)

        # The definition, minimized numerically from several starts (the objective is convex).
        best = min(
            (
                minimize(
                    obj, x0, method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 20000}
                )
                for x0 in (z, 0 * z + 1e-3)
            ),
            key=lambda r: r.fun,
        )
        assert obj(v) <= best.fun + 1e-10
        np.testing.assert_allclose(v, best.x, atol=1e-4)
        # Optimality: zero row iff ||z|| <= t; otherwise v - z + t v / ||v|| = 0.
        if np.linalg.norm(z) <= t:
            assert np.all(v == 0)
        else:
            np.testing.assert_allclose(v - z + t * v / np.linalg.norm(v), 0.0, atol=1e-12)


def test_kernel_steps_match_twin():
    """The kernel's objective, U-step and V-step (a few FISTA steps) against the NumPy functions they
    replaced (tests/naive.py), on the same inputs, to round-off."""
    rng = np.random.default_rng(11)
    for n, p, d, alpha in [(30, 20, 3, 2.0), (20, 40, 5, 0.5), (50, 10, 1, 8.0), (15, 15, 4, 0.0)]:
        X, _ = model_data(n, p, d, max(1, p // 3), 0.4, int(rng.integers(100)))
        U, V = _init(X, d)
        V = V + 0.1 * rng.standard_normal(V.shape)
        assert kern._objective(X, U, V, alpha) == pytest.approx(
            naive._sspca_objective(X, U, V, alpha), rel=1e-13
        )
        G, XV = np.empty((d, d)), np.empty((n, d))
        U1 = U.copy()
        kern._u_step(X, U1, V, XV, G)
        np.testing.assert_allclose(U1, naive._sspca_u_step(X, U.copy(), V), rtol=1e-12, atol=1e-13)
        for steps in (1, 2, 5):
            V1 = V.copy()
            bufs = [np.empty((p, d)) for _ in range(3)]
            kern._v_step(np.ascontiguousarray(X.T), U, V1, alpha, steps, 0.0, np.empty((d, d)), *bufs)
            np.testing.assert_allclose(V1, naive._sspca_v_step(X, U, V.copy(), alpha, steps, 0.0), atol=1e-11)


@pytest.mark.parametrize("alpha", [0.5, 3.0, 20.0])
def test_kernel_run_matches_twin(alpha):
    """Whole fits: the same number of outer iterations, objectives and factors as the NumPy twin, and a fit
    longer than one kernel call (the history chunked) the same as one call."""
    X, _ = model_data(40, 30, 3, 8, 0.3, 2)
    U0, V0 = _init(X, 3)
    h1, h2 = [], []
    U1, V1, n1 = _fit(X, alpha, U0, V0, 200, 1e-8, h1)
    U2, V2, n2 = naive.sspca_run(X, alpha, U0.copy(), V0.copy(), 200, 1e-8, h2)
    assert n1 == n2 and len(h1) == len(h2) == n1 + 1
    np.testing.assert_allclose(h1, h2, rtol=1e-11)
    np.testing.assert_allclose(U1, U2, atol=1e-8)
    np.testing.assert_allclose(V1, V2, atol=1e-8)
    h3 = []
    from repro.baselines import sspca as mod

    chunk = mod._CHUNK
    try:
        mod._CHUNK = 3
        U3, V3, n3 = _fit(X, alpha, U0, V0, 200, 1e-8, h3)
    finally:
        mod._CHUNK = chunk
    assert n3 == n1 and h3 == h1 and np.array_equal(U3, U1) and np.array_equal(V3, V1)
    h4 = []
    assert _fit(X, alpha, U0, V0, 2, 0.0, h4)[2] == 2 and len(h4) == 3  # max_iter stops it


def test_objective_never_increases_and_constraints_hold():
    X, _ = model_data(40, 30, 3, 8, 0.3, 1)
    hist = []
    U, V, _ = sspca_fit(X, 3, 5.0, history=hist, tol=1e-10)
    assert np.all(np.diff(hist) <= 1e-9 * np.abs(hist[1:]))
    assert np.all(np.linalg.norm(U, axis=0) <= 1 + 1e-12)
    assert hist[-1] == pytest.approx(sspca_objective(X, U, V, 5.0))


def test_penalty_limits():
    X, _ = model_data(30, 20, 3, 6, 0.3, 2)
    # alpha = 0: best rank-d approximation (unit-norm U, V = X'U), error = sum of the trailing s^2.
    U, V, _ = sspca_fit(X, 3, 0.0, tol=1e-13, max_iter=5000)
    s = np.linalg.svd(X, compute_uv=False)
    assert np.sum((X - U @ V.T) ** 2) == pytest.approx(np.sum(s[3:] ** 2), rel=1e-6)
    # alpha above max_j ||(X'U)_j|| at the SVD start: V = 0.
    Uf = np.linalg.svd(X, full_matrices=False)[0][:, :3]
    amax = np.linalg.norm(X.T @ Uf, axis=1).max()
    _, V, _ = sspca_fit(X, 3, amax * 1.001)
    assert not V.any()


def test_rows_at_the_threshold_are_zero_whatever_the_last_bits():
    """a row within 1e-12 (relative) above the threshold ties with it and becomes zero, in the NumPy
    prox, the kernel and the twin. At alpha = alpha_max (where the search for n_selected starts) the largest
    row of X'U sits exactly at the threshold: the fit is V = 0, also a last bit below."""
    for f in (1.0, 1 - 1e-15, 1 - 1e-13):
        np.testing.assert_array_equal(
            group_soft_threshold([[3.0, 4.0], [0.3, 0.4]], 5.0 * f), np.zeros((2, 2))
        )
        np.testing.assert_array_equal(
            naive._group_soft_threshold(np.array([[3.0, 4.0]]), 5.0 * f), np.zeros((1, 2))
        )
    assert group_soft_threshold([[3.0, 4.0]], 5.0 * (1 - 1e-9))[0, 0] > 0  # beyond the tie: shrunk, kept
    rng = np.random.default_rng(5)
    X = rng.standard_normal((30, 12)) @ rng.standard_normal((12, 12))
    X -= X.mean(axis=0)
    U0, V0 = _init(X, 3)
    amax = float(np.sqrt(np.einsum("ij,ij->i", V0, V0)).max())
    for f in (1.0, 1 - 1e-15, 1 - 4e-16, 1 + 1e-15):
        _, V, _ = _fit(X, amax * f, U0.copy(), V0.copy(), 30, 1e-6)
        assert not V.any(), f


def test_n_selected_and_global_support():
    X, v = model_data(60, 40, 4, 10, 0.2, 3)
    m = SSPCA(4, n_selected=10).fit(X + 2.0)
    assert m.n_selected_ == 10 == m.support_.sum()
    assert np.all(m.components_[:, ~m.support_] == 0)  # one support for every component
    assert fscore_selection(m.support_, v) == 1.0
    np.testing.assert_allclose(np.linalg.norm(m.components_, axis=1), 1.0)
    # the support of the fit the selection was kept from: n_selected when a penalty gives it exactly, the
    # smallest larger support found when the count jumps over it (then the largest rows are kept)
    assert m.fit_support_size_ >= m.n_selected_
    counts = {}
    for q in range(1, 16):
        mq = SSPCA(4, n_selected=q).fit(X)
        assert mq.n_selected_ == q and mq.fit_support_size_ >= q
        counts[q] = mq.fit_support_size_
    assert any(c == q for q, c in counts.items()) and any(c > q for q, c in counts.items())
    ma = SSPCA(4, alpha=1.0).fit(X)
    assert ma.fit_support_size_ == ma.n_selected_  # no search, nothing kept


def test_cv_selects_the_relevant_variables():
    X, v = model_data(80, 40, 3, 10, 0.3, 4)
    m = SSPCA(3, random_state=0).fit(X)
    assert m.cv_errors_.shape == m.cv_alphas_.shape
    assert m.alpha_ == m.cv_alphas_[np.argmin(m.cv_errors_)]
    assert fscore_selection(m.support_, v) >= 0.8
    m2 = clone(m).fit(X)
    np.testing.assert_array_equal(m2.support_, m.support_)


def test_bad_input():
    X, _ = model_data(20, 10, 2, 4, 0.3, 5)
    with pytest.raises(ValueError, match="n_components"):
        SSPCA(11).fit(X)
    with pytest.raises(ValueError, match="n_selected"):
        SSPCA(2, n_selected=11).fit(X)
    with pytest.raises(ValueError, match="alpha"):
        SSPCA(2, alpha=-1.0).fit(X)
    with pytest.raises(ValueError, match="either alpha or n_selected"):
        SSPCA(2, alpha=1.0, n_selected=3).fit(X)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SSPCA(2, alpha=1.0).fit(bad)


def test_refit_cv_error_is_the_projection_error_of_a_pca_refit():
    """The "refit" held-out error equals a direct PCA on the selected training columns, by hand."""
    from repro.baselines.sspca import _held_out_error

    X, v = model_data(30, 12, 2, 4, 0.3, 7)
    Xtr, Xte = X[:20] - X[:20].mean(0), X[20:] - X[:20].mean(0)
    V = np.zeros((12, 2))
    V[v] = 1.0
    _, _, Vt = np.linalg.svd(Xtr[:, v], full_matrices=False)
    P = Vt[:2].T @ Vt[:2]
    recon = np.zeros_like(Xte)
    recon[:, v] = Xte[:, v] @ P
    assert _held_out_error(Xte, Xtr, V, 2, "refit") == pytest.approx(np.sum((Xte - recon) ** 2), rel=1e-12)
    Vs = V * 0.5  # shrinkage does not change the refit error, only the support does
    assert _held_out_error(Xte, Xtr, Vs, 2, "refit") == _held_out_error(Xte, Xtr, V, 2, "refit")
    assert _held_out_error(Xte, Xtr, np.zeros((12, 2)), 2, "refit") == pytest.approx(np.sum(Xte**2))


def test_refit_cv_selects_supports_where_the_shrunk_cv_over_selects():
    """Issue 19: in Mattei et al.'s Table 1 setting the CV on shrunken loadings picks too many variables."""
    X, v = model_data(50, 100, 10, 20, 0.6, 11)
    refit = SSPCA(10, random_state=0).fit(X)
    shrunk = SSPCA(10, cv_score="shrunk", random_state=0).fit(X)
    assert fscore_selection(refit.support_, v) == 1.0
    assert shrunk.n_selected_ > 25


@pytest.mark.parametrize("factor", [2.0**996, 2.0**-996, 1e300, 1e-300])
def test_scale_equivariance_and_no_variance(factor):
    """Exact for a power-of-two factor; for 1e+-300 (X * 1e300 / s is X times a factor that is not a power of
    two, so the iterates round differently) to the solver's own accuracy (objective tolerance 1e-6)."""
    exact = np.frexp(factor)[0] == 0.5
    atol, rtol = (1e-9, 1e-7) if exact else (5e-3, 5e-3)
    X, _ = model_data(30, 15, 2, 5, 0.3, 8)
    m = SSPCA(2, random_state=0).fit(X)
    mf = SSPCA(2, random_state=0).fit(X * factor)
    np.testing.assert_array_equal(mf.support_, m.support_)
    np.testing.assert_allclose(mf.components_, m.components_, atol=atol)
    assert mf.alpha_ / factor == pytest.approx(m.alpha_, rel=1e-9)
    np.testing.assert_allclose(mf.V_ / factor, m.V_, rtol=rtol, atol=atol * np.abs(m.V_).max())
    U, V, _ = sspca_fit(X * factor, 2, m.alpha_ * factor)
    assert np.isfinite(U).all() and np.isfinite(V).all()
    np.testing.assert_allclose(
        V / factor, sspca_fit(X, 2, m.alpha_)[1], rtol=rtol, atol=atol * np.abs(V / factor).max()
    )
    for bad in (np.zeros((10, 5)), np.full((10, 5), 2.0), np.ones((10, 5)) * factor):
        with pytest.raises(ValueError, match="X has no variance"):
            SSPCA(2).fit(bad)


def test_default_construction_and_score():
    X, _ = model_data(30, 15, 2, 5, 0.3, 9)
    m = SSPCA(random_state=0).fit(X)
    assert m.n_components == 1 and m.cv_score == "refit" and m.components_.shape == (1, 15)
    m = SSPCA(2, alpha=0.5).fit(X)
    Xn = X[:7] + 0.1
    C = m.components_
    Q = np.linalg.qr(C.T)[0]
    R = (Xn - m.mean_) - (Xn - m.mean_) @ Q @ Q.T
    assert m.score(Xn) == pytest.approx(-np.sum(R**2) / 7, rel=1e-12)
    with pytest.raises(ValueError, match=r"alpha=1000000\.0 selects no variable"):  # not a model of zeros
        SSPCA(2, alpha=1e6).fit(X)
    with pytest.raises(ValueError, match="cv_score"):
        SSPCA(2, cv_score="held-out").fit(X)
