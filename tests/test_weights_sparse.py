"""Sparse X with sample_weight: the weighted mean and the weighted centred operator stay implicit, and the
fits equal the dense weighted fits and the closed form (the weighted covariance's eigenvectors); per-entry
weights with a sparse X are refused with the reason and the fix; bad weights and bad sparse X refused
naming the argument; no dense copy of X is made."""

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from test_sparse import Guard  # a CSR matrix that refuses a dense copy of its own shape
from test_weights import _abs_close, _weighted_cov

from repro import EMPCA, EMSparsePCA, SensiblePCA, em_sparse_pca_path
from repro._weights import weighted_sparse_factor

FORMATS = {"csr": sp.csr_matrix, "csc": sp.csc_matrix, "coo": sp.coo_matrix, "csr_array": sp.csr_array}


def _counts(n=150, p=9, seed=0, shift=0.0):
    """Poisson counts with a spread of column scales (about half the entries zero), and real weights with
    some zeros."""
    rng = np.random.default_rng(seed)
    X = rng.poisson(0.7, (n, p)).astype(float) * np.linspace(3, 0.5, p)
    X[:, 0] += shift * (X[:, 0] > 0)
    w = rng.integers(0, 4, n) + rng.random(n)
    w[:7] = 0.0
    return X, w


# --------------------------------------------------------------------------- the weighted factor
def test_the_weighted_factor_is_its_dense_twin():
    """``A = diag(r)(X - 1 mu')`` over the rows of positive weight: products, Gram matrix, columns, the
    variances (also after a deflation and on a restriction), against the dense array."""
    X, w = _counts(shift=50.0)  # a column far from the origin: its variance must not cancel
    A, mu, m, W, s = weighted_sparse_factor(sp.csr_matrix(X), w, 1, "EMPCA")
    keep = w > 0
    mu_ref, S = _weighted_cov(X, w, ddof=1)
    D = (X[keep] - mu_ref) * np.sqrt(w[keep] / (w.sum() - 1))[:, None]
    assert (m, s) == (keep.sum(), 1.0) and W == pytest.approx(w.sum(), rel=1e-15)
    np.testing.assert_allclose(mu, mu_ref, rtol=1e-13)
    rng = np.random.default_rng(1)
    Q, U = rng.standard_normal((X.shape[1], 3)), rng.standard_normal((m, 2))
    np.testing.assert_allclose(A @ Q, D @ Q, atol=1e-12)
    np.testing.assert_allclose(A.rmatvec(U), D.T @ U, atol=1e-11)
    np.testing.assert_allclose(A.gram(), S, atol=1e-12 * np.abs(S).max())
    np.testing.assert_allclose(A.column_ss(), np.diag(S), rtol=1e-13)
    np.testing.assert_allclose(A[:, [0, 4]], D[:, [0, 4]], atol=1e-13)
    v = rng.standard_normal(X.shape[1])
    v /= np.linalg.norm(v)
    Dd = D - np.outer(D @ v, v)
    Ad = A.deflate(v)
    np.testing.assert_allclose(Ad.column_ss(), (Dd**2).sum(axis=0), rtol=1e-11)
    np.testing.assert_allclose(
        Ad.restrict([1, 2, 5]).column_ss(), (Dd[:, [1, 2, 5]] ** 2).sum(axis=0), rtol=1e-11
    )
    np.testing.assert_allclose(Ad.scaled(8.0).rmatvec(U) * 8.0, Dd.T @ U, atol=1e-11)
    np.testing.assert_allclose(Ad.gram(), Dd.T @ Dd, atol=1e-12 * np.abs(S).max())


# --------------------------------------------------------------------------- the fits
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_empca_sparse_sample_weight_is_the_dense_weighted_fit_and_the_closed_form(fmt):
    X, w = _counts()
    est = EMPCA(3, tol=1e-13, random_state=0).fit(FORMATS[fmt](X), sample_weight=w)
    dense = EMPCA(3, tol=1e-13, random_state=0).fit(X, sample_weight=w)
    mu, S = _weighted_cov(X, w, ddof=1)
    values, vectors = np.linalg.eigh(S)
    np.testing.assert_allclose(est.explained_variance_, values[::-1][:3], rtol=1e-10)
    _abs_close(est.components_, vectors[:, ::-1][:, :3].T, atol=1e-8)
    np.testing.assert_allclose(est.mean_, mu, rtol=1e-13)
    np.testing.assert_allclose(est.explained_variance_ratio_, values[::-1][:3] / np.trace(S), rtol=1e-10)
    np.testing.assert_allclose(est.components_, dense.components_, atol=1e-10)
    np.testing.assert_allclose(est.explained_variance_, dense.explained_variance_, rtol=1e-12)


@pytest.mark.parametrize("k", [1, 2])
def test_integer_sample_weights_on_sparse_x_equal_repeated_rows(k):
    X, w = _counts()
    w = np.floor(w)
    Xr = sp.csr_matrix(np.repeat(X, w.astype(int), axis=0))
    S = sp.csr_matrix(X)
    a = EMPCA(k, tol=1e-12, random_state=0).fit(S, sample_weight=w)
    b = EMPCA(k, tol=1e-12, random_state=0).fit(Xr)
    np.testing.assert_allclose(a.components_, b.components_, atol=1e-9)
    np.testing.assert_allclose(a.explained_variance_, b.explained_variance_, rtol=1e-10)
    s1 = SensiblePCA(k, random_state=0).fit(S, sample_weight=w)
    s2 = SensiblePCA(k, random_state=0).fit(Xr)
    np.testing.assert_allclose(s1.C_, s2.C_, atol=1e-7)
    assert s1.noise_variance_ == pytest.approx(s2.noise_variance_, rel=1e-9)
    assert s1.log_likelihood_ == pytest.approx(s2.log_likelihood_, rel=1e-10)
    e1 = EMSparsePCA(k, cardinality=3, random_state=0).fit(S, sample_weight=w)
    e2 = EMSparsePCA(k, cardinality=3, random_state=0).fit(Xr)
    np.testing.assert_allclose(e1.components_, e2.components_, atol=1e-9)
    np.testing.assert_allclose(e1.explained_variance_, e2.explained_variance_, rtol=1e-10)


@pytest.mark.parametrize("algorithm", ["em", "accelerated"])
def test_sensible_pca_sparse_sample_weight_is_the_dense_weighted_fit(algorithm):
    X, w = _counts()
    a = SensiblePCA(2, algorithm=algorithm, random_state=0).fit(sp.csc_matrix(X), sample_weight=w)
    b = SensiblePCA(2, algorithm=algorithm, random_state=0).fit(X, sample_weight=w)
    np.testing.assert_allclose(a.C_, b.C_, atol=1e-9)
    np.testing.assert_allclose(a.mean_, b.mean_, rtol=1e-13)
    assert a.noise_variance_ == pytest.approx(b.noise_variance_, rel=1e-10)
    assert a.log_likelihood_ == pytest.approx(b.log_likelihood_, rel=1e-12)


@pytest.mark.parametrize("operator", ["data", "covariance", "auto"])
@pytest.mark.parametrize("nonneg", [False, True])
def test_em_sparse_pca_sparse_sample_weight_is_the_dense_weighted_fit(operator, nonneg):
    X, w = _counts(n=200, p=20, seed=2)
    kw = dict(cardinality=4, nonneg=nonneg, operator=operator, random_state=0)
    a = EMSparsePCA(3, **kw).fit(sp.csr_matrix(X), sample_weight=w)
    b = EMSparsePCA(3, **kw).fit(X, sample_weight=w)
    np.testing.assert_allclose(a.components_, b.components_, atol=1e-10)
    np.testing.assert_allclose(a.explained_variance_, b.explained_variance_, rtol=1e-11)
    np.testing.assert_allclose(a.explained_variance_ratio_, b.explained_variance_ratio_, rtol=1e-11)
    np.testing.assert_allclose(a.mean_, b.mean_, rtol=1e-13)
    assert a.operator_ == b.operator_
    one = EMSparsePCA(1, cardinality=3, certify=True, operator=operator, random_state=0)
    c = one.fit(sp.csr_matrix(X), sample_weight=w)
    d = EMSparsePCA(1, cardinality=3, certify=True, operator=operator, random_state=0).fit(X, sample_weight=w)
    np.testing.assert_allclose(c.components_, d.components_, atol=1e-10)
    np.testing.assert_allclose(c.certified_gap_, d.certified_gap_, atol=1e-12)


def test_em_sparse_pca_path_sparse_sample_weight_is_the_dense_weighted_path():
    X, w = _counts(n=200, p=20, seed=3)
    a = em_sparse_pca_path(sp.csr_matrix(X), [1, 3, 5], sample_weight=w, random_state=0)
    b = em_sparse_pca_path(X, [1, 3, 5], sample_weight=w, random_state=0)
    np.testing.assert_allclose(a.variance_opt, b.variance_opt, rtol=1e-12)
    for u, v in zip(a.components_opt, b.components_opt, strict=True):
        np.testing.assert_allclose(u, v, atol=1e-10)


def test_badly_scaled_sparse_x_with_sample_weight_is_fitted_as_x_over_s():
    X, w = _counts()
    base = EMPCA(2, tol=1e-12, random_state=0).fit(sp.csr_matrix(X), sample_weight=w)
    for s in (1e-150, 1e150):
        est = EMPCA(2, tol=1e-12, random_state=0).fit(sp.csr_matrix(X * s), sample_weight=w)
        np.testing.assert_allclose(est.components_, base.components_, atol=1e-9)
        np.testing.assert_allclose(est.explained_variance_, base.explained_variance_ * s * s, rtol=1e-9)
        e = EMSparsePCA(2, cardinality=3, random_state=0).fit(sp.csr_matrix(X * s), sample_weight=w)
        f = EMSparsePCA(2, cardinality=3, random_state=0).fit(X * s, sample_weight=w)
        np.testing.assert_allclose(e.components_, f.components_, atol=1e-10)
        np.testing.assert_allclose(e.explained_variance_, f.explained_variance_, rtol=1e-10)


@pytest.mark.parametrize(
    "fit",
    [
        lambda X, w: EMPCA(3, random_state=0, max_iter=200).fit(X, sample_weight=w),
        lambda X, w: EMPCA(1, random_state=0, max_iter=200).fit(X, sample_weight=w),
        lambda X, w: SensiblePCA(2, random_state=0, max_iter=200).fit(X, sample_weight=w),
        lambda X, w: EMSparsePCA(2, cardinality=10, random_state=0).fit(X, sample_weight=w),
        lambda X, w: em_sparse_pca_path(X, [5, 20], sample_weight=w, random_state=0),
    ],
    ids=["EMPCA", "EMPCA k=1", "SensiblePCA", "EMSparsePCA", "path"],
)
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # random data: flat spectrum
def test_no_dense_copy_of_x_is_made_with_sample_weight(fit):
    """The guard refuses the full dense array; the peak of new memory stays far below it (1% non-zero,
    20000 x 600: 96 MB dense, a quarter allowed; the stored entries scaled by sqrt(w), copied, are 1.4 MB).
    The EM fits stop at 200 iterations (1,000 to 5,000 here): the peak is reached in the first ones."""
    rng = np.random.default_rng(0)
    n, p = 20000, 600
    X = sp.random(
        n, p, density=0.01, format="csr", random_state=rng, data_rvs=lambda k: rng.poisson(2.0, k) + 1.0
    )
    X.data = np.log1p(X.data)
    G = Guard(X)
    Guard.full = G.shape
    with pytest.raises(AssertionError, match="dense copy"):
        G.toarray()
    w = rng.integers(0, 3, n).astype(float)
    fit(X[: n // 10], w[: n // 10])  # compiles and caches what the measured call runs (a tenth of the rows)
    tracemalloc.start()
    try:
        fit(G, w)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < n * p * 8 / 4, f"peak {peak / 2**20:.1f} MiB"


# --------------------------------------------------------------------------- refused, naming the argument
@pytest.mark.parametrize("make", [EMPCA, EMSparsePCA], ids=lambda c: c.__name__)
def test_entry_weights_with_a_sparse_x_are_refused_with_the_reason_and_the_fix(make):
    X, w = _counts()
    S = sp.csr_matrix(X)
    est = make(2, random_state=0) if make is EMPCA else make(2, cardinality=3, random_state=0)
    for weights in (np.ones(X.shape), sp.csr_matrix(np.ones(X.shape)), S.copy()):
        with pytest.raises(ValueError, match=r"weights \(one per entry\) with a scipy sparse X.*dense array"):
            est.fit(S, weights=weights)
        with pytest.raises(ValueError, match=r"Pass sample_weight \(one weight per row\).*X\.toarray\(\)"):
            est.fit(S, sample_weight=w, weights=weights)
    with pytest.raises(ValueError, match="SensiblePCA takes sample_weight, not per-entry weights"):
        SensiblePCA().fit(S, weights=np.ones(X.shape))


@pytest.mark.parametrize("make", [EMPCA, SensiblePCA, EMSparsePCA], ids=lambda c: c.__name__)
def test_bad_sample_weight_and_bad_sparse_x_are_refused_naming_them(make):
    X, w = _counts(n=40, p=6)
    S = sp.csr_matrix(X)
    est = make(2, random_state=0) if make is not EMSparsePCA else make(2, cardinality=3, random_state=0)
    bad = {
        "sample_weight holds negative": np.r_[-1.0, np.ones(39)],
        "sample_weight holds NaN": np.r_[np.nan, np.ones(39)],
        "sample_weight has 0 positive weight": np.zeros(40),
        "sample_weight has 1 positive weight": np.r_[5.0, np.zeros(39)],
        r"sample_weight has shape \(39,\); expected \(40,\)": np.ones(39),
        "sample_weight sums to 0.5": np.r_[0.25, 0.25, np.zeros(38)],
    }
    if make is SensiblePCA:  # a maximum-likelihood fit (ddof=0): any positive total will do
        del bad["sample_weight sums to 0.5"]
    for message, sw in bad.items():
        with pytest.raises(ValueError, match=message):
            est.fit(S, sample_weight=sw)
    N = S.copy()
    N.data[3] = np.nan
    with pytest.raises(ValueError, match="X is a sparse matrix with NaN among its stored values"):
        est.fit(N, sample_weight=w)
    N.data[3] = np.inf
    with pytest.raises(ValueError, match="X"):
        est.fit(N, sample_weight=w)
    with pytest.raises(ValueError, match="no variance"):
        est.fit(sp.csr_matrix(np.zeros((40, 6))), sample_weight=w)
    with pytest.raises(ValueError, match="X has 1 sample"):
        est.fit(S[:1], sample_weight=[1.0])


def test_rows_of_weight_zero_are_dropped():
    """Rows of weight 0 change nothing, whatever their values (they never enter the factor)."""
    X, w = _counts()
    X2 = X.copy()
    X2[w == 0] = 1e6
    a = EMPCA(2, tol=1e-12, random_state=0).fit(sp.csr_matrix(X), sample_weight=w)
    b = EMPCA(2, tol=1e-12, random_state=0).fit(sp.csr_matrix(X2), sample_weight=w)
    np.testing.assert_allclose(a.components_, b.components_, atol=1e-10)
    np.testing.assert_allclose(a.explained_variance_, b.explained_variance_, rtol=1e-12)
