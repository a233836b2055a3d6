"""scipy.sparse input: every estimator that takes it equals its dense fit on the same data, never densifies
X (a guard matrix refuses to become dense; tracemalloc bounds the peak), and the rest refuse it clearly."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

import repro
from repro import EMPCA, NSPCA, Covariance, EMSparsePCA, OptimalSparsePCA, SensiblePCA, em_sparse_pca_path
from repro._sparse import CentredSparse, SparseSource, centred_ss, row_centred_ss
from repro.linalg import choose_operator
from repro.metrics import certified_fraction
from repro.spannogram import spannogram_bound


def _counts(n=240, p=30, seed=0, density=None):
    """log1p of Poisson counts with a few correlated features (about 30% non-zero), as a dense array."""
    rng = np.random.default_rng(seed)
    lam = np.linspace(0.6, 0.1, p)
    X = rng.poisson(lam, size=(n, p)).astype(float)
    X[:, :4] += rng.poisson(1.0, size=(n, 1))
    if density is not None:
        X *= rng.random((n, p)) < density
    return np.log1p(X)


class Guard(sp.csr_matrix):
    """A CSR matrix that refuses to become a dense array of its own shape (row blocks and columns may)."""

    full: tuple = ()

    def toarray(self, *args, **kwargs):
        if self.shape == Guard.full:
            raise AssertionError("a dense copy of X was made")
        return super().toarray(*args, **kwargs)

    def todense(self, *args, **kwargs):
        if self.shape == Guard.full:
            raise AssertionError("a dense copy of X was made")
        return super().todense(*args, **kwargs)

    def __array__(self, *args, **kwargs):
        raise AssertionError("X was converted with np.asarray")


def _guard(X):
    G = Guard(sp.csr_matrix(X))
    Guard.full = G.shape
    return G


FORMATS = {"csr": sp.csr_matrix, "csc": sp.csc_matrix, "coo": sp.coo_matrix, "csr_array": sp.csr_array}


# --------------------------------------------------------------------------- the implicit factor
def test_centred_factor_equals_its_dense_twin():
    """A = (X - 1 mu') / c - U V' applied both ways, its Gram matrices, columns and diagonal, against the
    dense array it stands for."""
    X = _counts(60, 9)
    rng = np.random.default_rng(1)
    mu, c = X.mean(axis=0), np.sqrt(59.0)
    U, V = rng.standard_normal((60, 2)), rng.standard_normal((9, 2))
    A = (X - mu) / c - U @ V.T
    for fmt in ("csr", "csc"):
        F = CentredSparse(FORMATS[fmt](X), mu, c, U, V)
        W, Y = rng.standard_normal((9, 3)), rng.standard_normal((60, 3))
        np.testing.assert_allclose(F @ W, A @ W, atol=1e-13)
        np.testing.assert_allclose(F.T @ Y, A.T @ Y, atol=1e-13)
        np.testing.assert_allclose(F.T @ F, A.T @ A, atol=1e-13)
        np.testing.assert_allclose(F @ F.T, A @ A.T, atol=1e-13)
        np.testing.assert_allclose(F[:, [4, 1]], A[:, [4, 1]], atol=1e-14)
        np.testing.assert_allclose(F.column_ss(), (A * A).sum(axis=0), atol=1e-13)
        np.testing.assert_allclose(F.restrict([2, 5]) @ W[[2, 5]], A[:, [2, 5]] @ W[[2, 5]], atol=1e-13)
        w = W[:, 0] / np.linalg.norm(W[:, 0])
        np.testing.assert_allclose((F.deflate(w) @ W), (A - np.outer(A @ w, w)) @ W, atol=1e-13)
        q = A @ w / np.linalg.norm(A @ w)
        np.testing.assert_allclose(F.deflate(w, "schur").T @ Y, (A - np.outer(q, q @ A)).T @ Y, atol=1e-13)
        vals, _ = F.top_eigh(2)
        ref = np.linalg.eigvalsh(A.T @ A)[::-1][:2]
        np.testing.assert_allclose(vals, ref, rtol=1e-12)


def test_centred_sums_of_squares_have_no_cancellation():
    """Column and row sums of squares about a large mean, against the dense centred sums (a formula
    sum x^2 - n mu^2 would lose every digit here)."""
    X = sp.random(50, 7, density=0.4, format="csr", random_state=3)
    X.data += 1e8
    D = X.toarray()
    mean = D.mean(axis=0)
    np.testing.assert_allclose(centred_ss(X, mean), ((D - mean) ** 2).sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(row_centred_ss(X, mean), ((D - mean) ** 2).sum(axis=1), rtol=1e-12)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_the_sums_over_chunks_of_entries_equal_the_dense_sums(monkeypatch, fmt):
    """Chunks of 7 stored entries (columns and rows split across chunks): means, centred sums of squares,
    row norms and the constant-column test against the dense array."""
    import repro._sparse as rs

    monkeypatch.setattr(rs, "ENTRY_CHUNK", 7)
    D = _counts(40, 9, density=0.5)
    D[:, 3] = 2.5  # a constant column that stores every entry
    X = FORMATS[fmt](D)
    mean, m2 = rs.column_stats(X)
    np.testing.assert_allclose(mean, D.mean(axis=0), rtol=1e-13)
    np.testing.assert_allclose(m2, ((D - D.mean(axis=0)) ** 2).sum(axis=0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(row_centred_ss(X, mean), ((D - mean) ** 2).sum(axis=1), rtol=1e-12)
    assert not rs._all_constant(X)
    C = np.zeros((30, 4))
    C[:, 1], C[:, 2] = 3.0, 0.0
    assert rs._all_constant(FORMATS[fmt](C))
    C[5, 0] = 1.0
    assert not rs._all_constant(FORMATS[fmt](C))


def test_the_source_products_equal_the_dense_ones():
    X = _counts(80, 12)
    src = SparseSource(sp.csr_matrix(X))
    Y = X - X.mean(axis=0)
    Q = np.linalg.qr(np.random.default_rng(0).standard_normal((12, 3)))[0]
    A, G = src.products(Q)
    np.testing.assert_allclose(A, Y.T @ (Y @ Q), atol=1e-12)
    np.testing.assert_allclose(G, (Y @ Q).T @ (Y @ Q), atol=1e-12)
    assert src.ss == pytest.approx(float((Y * Y).sum()), rel=1e-13)
    assert not src.missing


def test_the_operator_rule_counts_stored_entries():
    # 10^5 x 100: the covariance wins by shape alone; at 1% non-zero the products through the data are
    # 100 times cheaper and win
    assert choose_operator(10**5, 100) == "covariance"
    assert choose_operator(10**5, 100, nnz=10**5) == "data"


# --------------------------------------------------------------------------- equal to the dense fits
@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("k", [1, 3])
def test_empca_equals_the_dense_fit(fmt, k):
    X = _counts()
    dense = EMPCA(k, random_state=0).fit(X)
    est = EMPCA(k, random_state=0).fit(FORMATS[fmt](X))
    np.testing.assert_allclose(est.components_, dense.components_, atol=1e-9)
    np.testing.assert_allclose(est.explained_variance_, dense.explained_variance_, rtol=1e-10)
    np.testing.assert_allclose(est.explained_variance_ratio_, dense.explained_variance_ratio_, rtol=1e-10)
    np.testing.assert_allclose(est.mean_, dense.mean_, atol=1e-14)
    np.testing.assert_allclose(est.transform(FORMATS[fmt](X)), dense.transform(X), atol=1e-9)
    assert est.score(FORMATS[fmt](X)) == pytest.approx(dense.score(X), rel=1e-10)


def test_empca_converges_to_the_eigenvectors_of_the_covariance():
    """The sparse fit against the closed form (numpy.linalg.eigh of np.cov), not only the dense EM."""
    X = _counts(300, 20)
    est = EMPCA(2, random_state=0, tol=1e-10).fit(sp.csr_matrix(X))
    vals, vecs = np.linalg.eigh(np.cov(X, rowvar=False))
    np.testing.assert_allclose(est.explained_variance_, vals[::-1][:2], rtol=1e-9)
    np.testing.assert_allclose(np.abs(est.components_ @ vecs[:, ::-1][:, :2]), np.eye(2), atol=1e-6)


@pytest.mark.parametrize("algorithm", ["accelerated", "em"])
def test_sensible_pca_equals_the_dense_fit(algorithm):
    X = _counts()
    kw = dict(algorithm=algorithm, random_state=0, max_iter=20000)
    dense = SensiblePCA(2, **kw).fit(X)
    est = SensiblePCA(2, **kw).fit(sp.csc_matrix(X))
    np.testing.assert_allclose(est.components_, dense.components_, atol=1e-8)
    assert est.noise_variance_ == pytest.approx(dense.noise_variance_, rel=1e-10)
    np.testing.assert_allclose(est.transform(sp.csr_matrix(X)), dense.transform(X), atol=1e-8)
    np.testing.assert_allclose(est.score_samples(sp.csr_matrix(X)), dense.score_samples(X), rtol=1e-11)
    assert est.score(sp.csr_matrix(X)) == pytest.approx(dense.score(X), rel=1e-11)


@pytest.mark.parametrize("operator", ["auto", "data", "covariance"])
@pytest.mark.parametrize("nonneg", [False, True])
def test_em_sparse_pca_equals_the_dense_fit(operator, nonneg):
    X = _counts()
    kw = dict(cardinality=5, nonneg=nonneg, operator=operator, random_state=0)
    dense = EMSparsePCA(3, **kw).fit(X)
    est = EMSparsePCA(3, **kw).fit(sp.csr_matrix(X))
    np.testing.assert_allclose(est.components_, dense.components_, atol=1e-9)
    np.testing.assert_allclose(est.explained_variance_, dense.explained_variance_, rtol=1e-10)
    np.testing.assert_array_equal(est.cardinality_, dense.cardinality_)
    np.testing.assert_allclose(est.transform(sp.csr_matrix(X)), dense.transform(X), atol=1e-9)
    assert est.score(sp.csc_matrix(X)) == pytest.approx(dense.score(X), rel=1e-10)
    for h, g in zip(est.history_, dense.history_, strict=True):
        np.testing.assert_allclose(h, g, rtol=1e-9, atol=1e-12)


def test_em_sparse_pca_path_equals_the_dense_path():
    X = _counts()
    dense = em_sparse_pca_path(X, [1, 3, 6], random_state=0)
    path = em_sparse_pca_path(sp.csr_matrix(X), [1, 3, 6], random_state=0)
    np.testing.assert_allclose(path.variance_opt, dense.variance_opt, rtol=1e-10)
    np.testing.assert_allclose(path.components_opt, dense.components_opt, atol=1e-9)


def test_em_sparse_pca_certifies_on_sparse_input():
    X = _counts(200, 12)
    dense = EMSparsePCA(1, cardinality=3, certify=True, random_state=0).fit(X)
    est = EMSparsePCA(1, cardinality=3, certify=True, random_state=0).fit(sp.csr_matrix(X))
    np.testing.assert_allclose(est.components_, dense.components_, atol=1e-10)
    assert est.certified_gap_[0] == pytest.approx(dense.certified_gap_[0], abs=1e-9)


def test_the_covariance_operator_and_what_takes_it():
    """Covariance.from_data of sparse data against the dense one; the optimum, the certificate and the
    spannogram bound on it (and on the sparse matrix itself) against the dense data."""
    X = _counts(150, 10)
    Xs = sp.csr_matrix(X)
    C, ref = Covariance.from_data(Xs), Covariance.from_data(X)
    assert C.uses_data
    np.testing.assert_allclose(C.diag(), ref.diag(), rtol=1e-13)
    W = np.random.default_rng(0).standard_normal((3, 10))
    for a, b in zip(C.products(W), ref.products(W), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(C.eigh(2)[0], ref.eigh(2)[0], rtol=1e-12)
    w = np.eye(10)[0]
    np.testing.assert_allclose(C.deflate(w).dense(), ref.deflate(w).dense(), atol=1e-13)
    np.testing.assert_allclose(C.deflate(w, "schur").dense(), ref.deflate(w, "schur").dense(), atol=1e-13)
    np.testing.assert_allclose(C.dense(), np.cov(X, rowvar=False), atol=1e-13)
    assert Covariance.from_data(Xs, operator="covariance").operator == "covariance"
    a = OptimalSparsePCA(cardinality=3).fit(C)
    b = OptimalSparsePCA(cardinality=3).fit(ref)
    np.testing.assert_allclose(a.components_, b.components_, atol=1e-10)
    comp = b.components_
    np.testing.assert_allclose(certified_fraction(Xs, comp, 3), certified_fraction(X, comp, 3), rtol=1e-10)
    np.testing.assert_allclose(certified_fraction(C, comp, 3), certified_fraction(X, comp, 3), rtol=1e-10)
    assert spannogram_bound(Xs, 3) == pytest.approx(spannogram_bound(X, 3), rel=1e-10)


# --------------------------------------------------------------------------- never densified
@pytest.mark.parametrize(
    "fit",
    [
        lambda X: EMPCA(3, random_state=0, max_iter=200).fit(X).transform(X),
        lambda X: EMPCA(1, random_state=0, max_iter=200).fit(X),
        lambda X: SensiblePCA(2, random_state=0, max_iter=200).fit(X).score(X),
        lambda X: EMSparsePCA(2, cardinality=10, random_state=0).fit(X).transform(X),
        lambda X: em_sparse_pca_path(X, [5, 20], random_state=0),
        lambda X: spannogram_bound(X, 5, n_samples=200, net="random", random_state=0),
        lambda X: repro.GSPPCA(2, ranking="vem", max_iter=10, random_state=0).fit(X).score(X),
        lambda X: NSPCA(2, alpha=1e3, max_iter=50, random_state=0).fit(X).transform(X),
        lambda X: repro.SpannogramPCA(2, cardinality=10, n_samples=200, random_state=0).fit(X).score(X),
    ],
    ids=[
        "EMPCA",
        "EMPCA k=1",
        "SensiblePCA",
        "EMSparsePCA",
        "path",
        "spannogram_bound",
        "GSPPCA",
        "NSPCA",
        "SpannogramPCA",
    ],
)
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # random data: flat spectrum
def test_no_dense_copy_of_x_is_made(fit):
    """The guard refuses the full dense array; the peak of new memory stays far below it (1% non-zero,
    20000 x 600: the dense array is 96 MB, the peak allowed a quarter of it; what is allocated is
    N x k products, N x K columns, row blocks of 4 MiB and the 600 x 600 matrices of the start). The EM
    fits stop at 200 iterations (from 625-1534 to convergence): the peak is reached in the first ones, and
    one N-vector kept per iteration would still pass the allowed quarter."""
    rng = np.random.default_rng(0)
    n, p = 20000, 600
    X = sp.random(
        n, p, density=0.01, format="csr", random_state=rng, data_rvs=lambda k: rng.poisson(2.0, k) + 1.0
    )
    X.data = np.log1p(X.data)
    G = _guard(X)
    with pytest.raises(AssertionError, match="dense copy"):
        G.toarray()  # the guard itself
    with pytest.raises(AssertionError, match=r"np\.asarray"):
        np.asarray(G)
    fit(X[: n // 10])  # compiles and caches what the measured call runs (a tenth of the rows)
    tracemalloc.start()
    try:
        fit(G)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < n * p * 8 / 4, f"peak {peak / 2**20:.1f} MiB"


# --------------------------------------------------------------------------- bad and odd input
def test_nan_and_inf_among_the_stored_values_are_refused_saying_what_is_supported():
    X = sp.csr_matrix(_counts(40, 6))
    X.data[3] = np.nan
    for est in (EMPCA(1), SensiblePCA(1), EMSparsePCA(1, cardinality=2)):
        with pytest.raises(ValueError, match=r"NaN among its stored values.*dense input only"):
            est.fit(X)
    X.data[3] = np.inf
    with pytest.raises(ValueError, match="infinite"):
        EMPCA(1).fit(X)


def test_explicit_zeros_duplicates_and_int_dtypes_change_nothing():
    Xd = np.rint(np.expm1(_counts(80, 8)))  # integer counts
    ref = EMSparsePCA(2, cardinality=3, random_state=0).fit(Xd)
    ref_pca = EMPCA(2, random_state=0).fit(Xd)
    coo = sp.coo_matrix(Xd)
    stored_zeros = sp.csr_matrix((np.r_[coo.data, 0.0, 0.0], (np.r_[coo.row, 0, 5], np.r_[coo.col, 7, 2])))
    halves = sp.coo_matrix(
        (np.r_[coo.data / 2, coo.data / 2], (np.r_[coo.row, coo.row], np.r_[coo.col, coo.col]))
    )
    ints = sp.csr_matrix(Xd.astype(np.int64))
    assert stored_zeros.nnz == coo.nnz + 2
    for X in (stored_zeros, halves, ints):
        est = EMSparsePCA(2, cardinality=3, random_state=0).fit(X)
        np.testing.assert_allclose(est.components_, ref.components_, atol=1e-10)
        np.testing.assert_allclose(
            EMPCA(2, random_state=0).fit(X).components_, ref_pca.components_, atol=1e-9
        )
    assert halves.nnz == 2 * coo.nnz  # the caller's matrix is not modified by summing its duplicates


def test_empty_rows_and_columns_fit_as_the_dense_data_do():
    X = _counts(100, 10)
    X[[3, 50]] = 0.0  # empty rows
    X[:, [2, 7]] = 0.0  # empty columns: no variance, zero loadings
    for est_cls, kw in ((EMPCA, {}), (EMSparsePCA, {"cardinality": 4}), (SensiblePCA, {})):
        dense = est_cls(2, random_state=0, **kw).fit(X)
        est = est_cls(2, random_state=0, **kw).fit(sp.csr_matrix(X))
        np.testing.assert_allclose(est.components_, dense.components_, atol=1e-9)
        np.testing.assert_allclose(est.transform(sp.csr_matrix(X)), dense.transform(X), atol=1e-9)


def test_no_variance_and_too_small_data_are_refused():
    with pytest.raises(ValueError, match="no variance"):
        EMPCA(1).fit(sp.csr_matrix(np.zeros((10, 4))))
    with pytest.raises(ValueError, match="no variance"):
        EMSparsePCA(1, cardinality=2).fit(sp.csr_matrix(np.ones((10, 4))))
    with pytest.raises(ValueError, match="minimum of 2"):
        EMPCA(1).fit(sp.csr_matrix(np.ones((1, 4))))
    with pytest.raises(ValueError, match="Complex data not supported"):
        EMPCA(1).fit(sp.csr_matrix(np.eye(4) * 1j))


def test_badly_scaled_sparse_data_are_fitted_as_x_over_s():
    X = _counts(100, 8)
    for scale in (1e-150, 1e150):  # outside [2^-256, 2^256]: fitted as X / s
        dense = EMSparsePCA(1, cardinality=3, random_state=0).fit(X * scale)
        est = EMSparsePCA(1, cardinality=3, random_state=0).fit(sp.csr_matrix(X) * scale)
        np.testing.assert_allclose(est.components_, dense.components_, atol=1e-10)
        assert est.explained_variance_[0] == pytest.approx(dense.explained_variance_[0], rel=1e-10)
        ev = EMPCA(1, random_state=0).fit(sp.csr_matrix(X) * scale).explained_variance_[0]
        assert ev == pytest.approx(EMPCA(1, random_state=0).fit(X * scale).explained_variance_[0], rel=1e-10)


def test_transform_checks_the_columns_of_sparse_rows():
    X = sp.csr_matrix(_counts(50, 6))
    est = EMPCA(2, random_state=0).fit(X)
    with pytest.raises(ValueError, match="6 features"):
        est.transform(sp.csr_matrix(np.ones((3, 5))))


def test_methods_without_sparse_input_say_why_and_what_to_pass():
    X = sp.csr_matrix(_counts(40, 6))
    calls = {
        "SPCAZou": lambda: repro.baselines.SPCAZou(1, cardinality=2).fit(X),
        "GSPCA": lambda: repro.baselines.GSPCA(1, cardinality=2).fit(X),
        "OptimalSparsePCA": lambda: OptimalSparsePCA(cardinality=2).fit(X),
    }
    for name, call in calls.items():
        with pytest.raises(ValueError, match=r"scipy sparse matrix.*does not take.*X\.toarray\(\)"):
            call()
            pytest.fail(f"{name} accepted a sparse matrix")


def test_transform_of_the_projection_estimators_takes_sparse_rows():
    """The baselines refuse a sparse fit, but their transform is a projection: sparse rows give
    X W' - 1 (mean_' W'), never densified."""
    X = _counts(60, 6)
    est = repro.baselines.GSPCA(2, cardinality=3).fit(X)
    np.testing.assert_allclose(est.transform(_guard(X)), est.transform(X), atol=1e-12)
