"""Weighted fits: sample weights against the weighted covariance's eigenvectors and repeated rows,
per-entry weights against an independent optimizer on small problems and, with 0/1 weights, against the
missing-value fits; bad weights refused naming the argument."""

import itertools

import numpy as np
import pytest
import scipy.optimize

from repro import EMPCA, EMSparsePCA, SensiblePCA, em_sparse_pca_path
from repro.em_pca.weights import weighted_objective


def _data(n=80, p=7, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) * np.linspace(3, 0.5, p) + 10.0
    return X, rng.integers(0, 4, n).astype(float)


def _weighted_cov(X, w, ddof):
    mu = w @ X / w.sum()
    D = X - mu
    return mu, (D * w[:, None]).T @ D / (w.sum() - ddof)


def _abs_close(A, B, atol):
    np.testing.assert_allclose(np.abs(A), np.abs(B), atol=atol)


# --------------------------------------------------------------------------- sample weights
def test_empca_sample_weight_is_the_weighted_covariance_eigenvectors():
    X, w = _data()
    w = w + np.random.default_rng(1).random(w.size)  # real, not only integer, weights
    est = EMPCA(3, tol=1e-13, random_state=0).fit(X, sample_weight=w)
    mu, S = _weighted_cov(X, w, ddof=1)
    values, vectors = np.linalg.eigh(S)
    np.testing.assert_allclose(est.explained_variance_, values[::-1][:3], rtol=1e-10)
    _abs_close(est.components_, vectors[:, ::-1][:, :3].T, atol=1e-8)
    np.testing.assert_allclose(est.mean_, mu, rtol=1e-12)
    np.testing.assert_allclose(est.explained_variance_ratio_, values[::-1][:3] / np.trace(S), rtol=1e-10)


@pytest.mark.parametrize("k", [1, 3])
def test_integer_sample_weights_equal_repeated_rows(k):
    X, w = _data()
    Xr = np.repeat(X, w.astype(int), axis=0)
    a = EMPCA(k, tol=1e-12, random_state=0).fit(X, sample_weight=w)
    b = EMPCA(k, tol=1e-12, random_state=0).fit(Xr)
    np.testing.assert_allclose(a.components_, b.components_, atol=1e-9)
    np.testing.assert_allclose(a.explained_variance_, b.explained_variance_, rtol=1e-10)
    assert a.score(X, sample_weight=w) == pytest.approx(b.score(Xr), rel=1e-12)
    s1 = SensiblePCA(k, random_state=0).fit(X, sample_weight=w)
    s2 = SensiblePCA(k, random_state=0).fit(Xr)
    np.testing.assert_allclose(s1.C_, s2.C_, atol=1e-7)
    assert s1.noise_variance_ == pytest.approx(s2.noise_variance_, rel=1e-9)
    assert s1.log_likelihood_ == pytest.approx(s2.log_likelihood_, rel=1e-10)
    assert s1.score(X, sample_weight=w) == pytest.approx(s2.score(Xr), rel=1e-10)
    e1 = EMSparsePCA(k, cardinality=3, random_state=0).fit(X, sample_weight=w)
    e2 = EMSparsePCA(k, cardinality=3, random_state=0).fit(Xr)
    np.testing.assert_allclose(e1.components_, e2.components_, atol=1e-10)
    np.testing.assert_allclose(e1.explained_variance_, e2.explained_variance_, rtol=1e-10)
    assert e1.score(X, sample_weight=w) == pytest.approx(e2.score(Xr), rel=1e-12)


def test_sensible_pca_sample_weight_is_the_weighted_ml_model():
    X, w = _data(p=6)
    est = SensiblePCA(2, tol=1e-12, random_state=0).fit(X, sample_weight=w)
    mu, S = _weighted_cov(X, w, ddof=0)
    values = np.linalg.eigvalsh(S)[::-1]
    assert est.noise_variance_ == pytest.approx(values[2:].mean(), rel=1e-10)
    np.testing.assert_allclose(est.explained_variance_, values[:2], rtol=1e-10)
    Sigma = est.get_covariance()
    logpdf = -0.5 * (6 * np.log(2 * np.pi) + np.linalg.slogdet(Sigma)[1])
    logpdf = logpdf - 0.5 * np.einsum("ij,jk,ik->i", X - mu, np.linalg.inv(Sigma), X - mu)
    assert est.log_likelihood_ == pytest.approx(float(w @ logpdf), rel=1e-10)


def test_path_sample_weight_equals_repeated_rows():
    X, w = _data(p=9)
    Xr = np.repeat(X, w.astype(int), axis=0)
    a = em_sparse_pca_path(X, [1, 3, 5], sample_weight=w, random_state=0)
    b = em_sparse_pca_path(Xr, [1, 3, 5], random_state=0)
    np.testing.assert_allclose(a.variance_opt, b.variance_opt, rtol=1e-10)
    np.testing.assert_allclose(a.components_opt, b.components_opt, atol=1e-10)


def test_zero_weight_rows_are_dropped():
    X, w = _data()
    keep = w > 0
    a = EMPCA(2, tol=1e-12, random_state=0).fit(X, sample_weight=keep.astype(float))
    b = EMPCA(2, tol=1e-12, random_state=0).fit(X[keep])
    np.testing.assert_allclose(a.components_, b.components_, atol=1e-9)


# --------------------------------------------------------------------------- per-entry weights
def _brute_force_J(X, w, k, starts=20, seed=0):
    """The smallest ``J`` an independent optimizer (L-BFGS over mu, C, Z) finds from many starts."""
    n, p = X.shape
    X0 = np.where(w > 0, X, 0.0)
    rng = np.random.default_rng(seed)

    def f(theta):
        mu, C, Z = theta[:p], theta[p : p + p * k].reshape(p, k), theta[p + p * k :].reshape(n, k)
        R = w * (X0 - mu - Z @ C.T)
        g_mu = -2 * R.sum(axis=0)
        grad = np.r_[g_mu, (-2 * R.T @ Z).ravel(), (-2 * R @ C).ravel()]
        return float((R * (X0 - mu - Z @ C.T)).sum()), grad

    best = np.inf
    for _ in range(starts):
        theta = rng.standard_normal(p + p * k + n * k)
        options = {"maxiter": 5000, "gtol": 1e-10}
        r = scipy.optimize.minimize(f, theta, jac=True, method="L-BFGS-B", options=options)
        best = min(best, r.fun)
    return best


def test_entry_weights_reach_the_brute_force_optimum():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((12, 4)) @ np.diag([3, 2, 1, 0.5]) + rng.standard_normal((1, 4))
    w = rng.uniform(0.1, 2.0, X.shape)
    w[rng.random(X.shape) < 0.2] = 0.0
    est = EMPCA(1, tol=1e-12, max_iter=20000).fit(X, weights=w)
    assert est.weighted_error_ <= _brute_force_J(X, w, 1) * (1 + 1e-8)
    J = est.history_["weighted_error"]
    assert (np.diff(J) <= 1e-12 * J[0]).all()  # never increases


def test_entry_weights_objective_and_stationarity():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((40, 6)) @ np.diag([4, 3, 1, 1, 0.5, 0.5])
    w = rng.uniform(0.5, 3.0, X.shape)
    est = EMPCA(2, tol=1e-13, max_iter=50000).fit(X, weights=w)
    V = est.components_
    # the latents of the fitted model: the weighted least-squares coordinates of each row
    Z = np.array([np.linalg.solve((V * w[i]) @ V.T, (V * w[i]) @ (X[i] - est.mean_)) for i in range(40)])
    assert est.weighted_error_ == pytest.approx(weighted_objective(X, w, est.mean_, Z, V), rel=1e-10)
    R = w * (X - est.mean_ - Z @ V)
    scale = np.abs(w * X).sum()
    assert np.abs(R.sum(axis=0)).max() < 1e-8 * scale  # d J / d mean = 0
    assert np.abs(R.T @ Z).max() < 1e-8 * scale * np.abs(Z).max()  # d J / d C = 0


def test_zero_one_entry_weights_equal_the_missing_value_fit():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 2)) @ rng.standard_normal((2, 10)) + 0.1 * rng.standard_normal((200, 10))
    hidden = rng.random(X.shape) < 0.2
    holes = np.where(hidden, np.nan, X)
    a = EMPCA(2, tol=1e-12, max_iter=20000, random_state=0).fit(holes)
    b = EMPCA(2, tol=1e-12, max_iter=20000).fit(holes, weights=(~hidden).astype(float))
    cos = np.linalg.svd(a.components_ @ b.components_.T, compute_uv=False)
    assert cos.min() > 1 - 1e-10
    np.testing.assert_allclose(a.mean_, b.mean_, atol=1e-8)
    assert a.explained_variance_ratio_.sum() == pytest.approx(b.explained_variance_ratio_.sum(), rel=1e-6)


def test_row_constant_entry_weights_equal_sample_weights():
    X, w = _data()
    w = w + 0.5
    W = np.repeat(w[:, None], X.shape[1], axis=1)
    a = EMPCA(2, tol=1e-13, max_iter=20000).fit(X, weights=W)
    b = EMPCA(2, tol=1e-13, random_state=0).fit(X, sample_weight=w)
    # the same subspace and fitted matrix (each rotated to its own principal axes within it)
    assert np.linalg.svd(a.components_ @ b.components_.T, compute_uv=False).min() > 1 - 1e-12
    fitted = [e.inverse_transform(e.transform(X)) for e in (a, b)]
    np.testing.assert_allclose(fitted[0], fitted[1], atol=1e-8)
    Z = (X - b.mean_) @ b.components_.T
    assert a.weighted_error_ == pytest.approx(weighted_objective(X, W, b.mean_, Z, b.components_), rel=1e-10)


def test_sparse_entry_weights_unit_weights_are_the_sparse_pca_optimum():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((100, 10)) * np.linspace(3, 1, 10)
    X[:, :4] += 2 * rng.standard_normal((100, 1))
    a = EMSparsePCA(cardinality=3, tol=1e-12).fit(X, weights=np.ones_like(X))
    b = EMSparsePCA(cardinality=3, random_state=0).fit(X)
    C = np.cov(X, rowvar=False)
    best = max(np.linalg.eigvalsh(C[np.ix_(S, S)])[-1] for S in itertools.combinations(range(10), 3))
    np.testing.assert_allclose(a.components_, b.components_, atol=1e-6)
    assert float(a.components_[0] @ C @ a.components_[0]) == pytest.approx(best, rel=1e-10)


@pytest.mark.parametrize("nonneg", [False, True])
def test_sparse_entry_weights_reach_the_brute_force_optimum(nonneg):
    rng = np.random.default_rng(5)
    X = rng.standard_normal((15, 5)) * [3, 2.5, 1, 0.7, 0.5]
    X[:, :2] += 2 * np.abs(rng.standard_normal((15, 1)))
    w = rng.uniform(0.2, 2.0, X.shape)
    w[rng.random(X.shape) < 0.15] = 0.0
    est = EMSparsePCA(cardinality=2, nonneg=nonneg, tol=1e-12, max_iter=3000).fit(X, weights=w)
    assert est.cardinality_[0] <= 2 and (not nonneg or (est.components_ >= 0).all())
    assert (np.diff(est.history_[0]) <= 1e-12 * est.history_[0][0]).all()  # J never increases
    if nonneg:
        return  # the brute force below is over unconstrained signs
    X0 = np.where(w > 0, X, 0.0)
    wmean = (w * X0).sum(axis=0) / w.sum(axis=0)
    outside = (w * (X0 - wmean) ** 2).sum(axis=0)  # a column off the support: its mean only
    best = min(
        _brute_force_J(X[:, list(S)], w[:, list(S)], 1, starts=3)
        + outside[[j for j in range(5) if j not in S]].sum()
        for S in itertools.combinations(range(5), 2)
    )
    assert est.weighted_error_ <= best * (1 + 1e-8)


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "weight, match",
    [
        (-np.ones(80), "sample_weight holds negative"),
        (np.r_[np.nan, np.ones(79)], "sample_weight holds NaN"),
        (np.zeros(80), "sample_weight has 0 positive weight"),
        (np.ones(79), r"sample_weight has shape \(79,\)"),
        (np.ones((80, 2)), r"sample_weight has shape \(80, 2\)"),
        (np.full(80, 0.01), "sample_weight sums to 0.8"),
    ],
)
@pytest.mark.parametrize("cls", [EMPCA, EMSparsePCA])
def test_bad_sample_weight(cls, weight, match):
    X, _ = _data()
    with pytest.raises(ValueError, match=match):
        cls().fit(X, sample_weight=weight)


def test_sample_weight_with_nan_in_x_points_to_entry_weights():
    X, w = _data()
    X[0, 0] = np.nan
    for est in (EMPCA(), SensiblePCA(), EMSparsePCA()):
        with pytest.raises(ValueError, match=r"sample_weight with missing values.*weights="):
            est.fit(X, sample_weight=w + 1)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda w: -w, "weights holds negative"),
        (lambda w: np.where(w > 1, np.nan, w), "weights holds NaN"),
        (lambda w: 0 * w, "weights is all zero"),
        (lambda w: w[:, :-1], r"weights has shape \(80, 6\)"),
        (lambda w: np.where(np.arange(80)[:, None] == 3, 0.0, w), r"every entry of row\(s\) 3 of X"),
    ],
)
def test_bad_entry_weights(make, match):
    X, _ = _data()
    w = np.random.default_rng(0).uniform(0.5, 2.0, X.shape)
    with pytest.raises(ValueError, match=match):
        EMPCA().fit(X, weights=make(w))


def test_entry_weights_and_nan():
    X, _ = _data()
    w = np.ones_like(X)
    X[2, 3] = np.nan
    with pytest.raises(ValueError, match="NaN at entries of positive weight"):
        EMPCA().fit(X, weights=w)
    w[2, 3] = 0.0  # a missing entry of weight 0 is fine
    assert np.isfinite(EMPCA().fit(X, weights=w).components_).all()


def test_entry_weights_refused_where_the_model_has_none():
    X, _ = _data()
    with pytest.raises(ValueError, match="SensiblePCA takes sample_weight, not per-entry weights"):
        SensiblePCA().fit(X, weights=np.ones_like(X))
    with pytest.raises(ValueError, match="weights is all zero"):
        EMSparsePCA().fit(X, weights=np.zeros_like(X))


@pytest.mark.parametrize("make", [EMPCA, SensiblePCA, EMSparsePCA], ids=lambda c: c.__name__)
def test_a_sparse_X_with_sample_weight_batches_or_a_weighted_score_is_the_dense_X(make):
    """A sparse X with sample_weight, in partial_fit or in a weighted score gives what X.toarray() gives
    (never the weights silently dropped); per-entry weights with it are refused with the reason."""
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    X = rng.poisson(0.5, (60, 8)).astype(float) * np.linspace(2, 0.5, 8)
    S = sp.csr_matrix(X)
    w = rng.integers(0, 3, 60) + rng.random(60)

    def new():
        return make(2, random_state=0) if make is not EMSparsePCA else make(2, cardinality=3, random_state=0)

    a, b = new().fit(S, sample_weight=w), new().fit(X, sample_weight=w)
    np.testing.assert_allclose(np.abs(a.components_), np.abs(b.components_), atol=1e-8)
    assert a.score(S, sample_weight=w) == pytest.approx(b.score(X, sample_weight=w), rel=1e-10)
    c, d = new().partial_fit(S[:30]).partial_fit(X[30:]), new().partial_fit(X)
    np.testing.assert_allclose(c.mean_, d.mean_, rtol=1e-13)
    np.testing.assert_allclose(np.abs(c.components_), np.abs(d.components_), atol=1e-8)
    if make is not SensiblePCA:
        with pytest.raises(ValueError, match=r"weights \(one per entry\) with a scipy sparse X"):
            new().fit(S, weights=np.ones_like(X))
