"""partial_fit with scipy sparse batches: the exact running mean and scatter from sparse batches (mixed
with dense ones or not, of any size, one row included) equal the batch fit; a sparse batch is densified
one row block at a time at most; bad sparse batches refused naming the argument."""

import numpy as np
import pytest
import scipy.sparse as sp

import repro._stream
from repro import EMPCA, EMSparsePCA, SensiblePCA
from repro._stream import RunningScatter


def _counts(n=160, p=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.poisson(0.8, (n, p)).astype(float) * np.linspace(3, 0.5, p)
    X[:, 0] += 100.0 * (X[:, 0] > 0)  # a column far from the origin: the merge must not cancel
    return X


def _batches(n, rng):
    order = rng.permutation(n)
    cuts = np.sort(rng.choice(np.arange(1, n), size=rng.integers(3, 15), replace=False))
    return np.split(order, cuts)


FORMATS = (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array)


def _stream(est, X, batches, w=None, kinds=None):
    """Feed the batches, each as the kind ``kinds[i]`` (None: dense; else a scipy.sparse constructor)."""
    for i, b in enumerate(batches):
        kind = None if kinds is None else kinds[i % len(kinds)]
        batch = X[b] if kind is None else kind(X[b])
        est.partial_fit(batch, sample_weight=None if w is None else w[b])
    return est


def test_running_scatter_of_sparse_batches_is_the_two_pass_scatter():
    X = _counts()
    w = np.random.default_rng(1).random(X.shape[0])
    w[::7] = 0.0
    st = RunningScatter(X.shape[1])
    for i, b in enumerate(np.array_split(np.arange(X.shape[0]), 9)):
        st.add(sp.csr_matrix(X[b]) if i % 3 else sp.csc_matrix(X[b]), w[b])
    mu = w @ X / w.sum()
    S = ((X - mu) * w[:, None]).T @ (X - mu)
    np.testing.assert_allclose(st.mean, mu, rtol=1e-14)
    np.testing.assert_allclose(st.scatter(), S, rtol=1e-10, atol=1e-12 * np.abs(S).max())
    assert st.trace == pytest.approx(np.trace(S), rel=1e-12)
    assert st.n_rows == X.shape[0] and st.weight == pytest.approx(w.sum(), rel=1e-14)


@pytest.mark.parametrize("kinds", [FORMATS, (None, sp.csr_matrix)], ids=["sparse", "mixed"])
def test_sparse_batches_in_any_order_equal_the_batch_fit(kinds):
    X = _counts()
    rng = np.random.default_rng(0)
    ref = EMPCA(3, tol=1e-13, random_state=0).fit(X)
    sref = SensiblePCA(3, tol=1e-12, random_state=0).fit(X)
    eref = EMSparsePCA(2, cardinality=3, certify=False, random_state=0).fit(X)
    for _ in range(10):
        batches = _batches(X.shape[0], rng)
        e = _stream(EMPCA(3), X, batches, kinds=kinds)
        np.testing.assert_allclose(e.components_, ref.components_, atol=1e-9)
        np.testing.assert_allclose(e.explained_variance_, ref.explained_variance_, rtol=1e-10)
        np.testing.assert_allclose(e.mean_, ref.mean_, rtol=1e-13)
        assert e.n_samples_seen_ == X.shape[0] and e.sketch_error_bound_ == 0.0
        s = _stream(SensiblePCA(3), X, batches, kinds=kinds)
        np.testing.assert_allclose(s.C_, sref.C_, atol=1e-8)
        assert s.log_likelihood_ == pytest.approx(sref.log_likelihood_, rel=1e-12)
        q = _stream(EMSparsePCA(2, cardinality=3, certify=False, random_state=0), X, batches, kinds=kinds)
        np.testing.assert_allclose(q.components_, eref.components_, atol=1e-9)
        np.testing.assert_allclose(q.explained_variance_, eref.explained_variance_, rtol=1e-10)


def test_weighted_sparse_batches_equal_the_weighted_fit():
    X = _counts()
    w = np.random.default_rng(2).integers(0, 4, X.shape[0]).astype(float)
    batches = np.array_split(np.random.default_rng(3).permutation(X.shape[0]), 11)
    ref = EMPCA(2, tol=1e-13, random_state=0).fit(sp.csr_matrix(X), sample_weight=w)
    est = _stream(EMPCA(2), X, batches, w, kinds=(sp.csr_matrix,))
    np.testing.assert_allclose(est.components_, ref.components_, atol=1e-9)
    np.testing.assert_allclose(est.explained_variance_, ref.explained_variance_, rtol=1e-10)


def test_sparse_rows_one_at_a_time():
    X = _counts(n=60, p=6)
    rows = [[i] for i in range(60)]
    ref = EMPCA(2, tol=1e-13, random_state=0).fit(X)
    est = _stream(EMPCA(2), X, rows, kinds=(sp.csr_matrix, sp.csc_matrix))
    assert np.linalg.svd(est.components_ @ ref.components_.T, compute_uv=False).min() > 1 - 1e-12
    empty = sp.csr_matrix((1, 6))  # a row with nothing stored: the zero row
    a = EMPCA(2).partial_fit(sp.csr_matrix(X)).partial_fit(empty)
    b = EMPCA(2, tol=1e-13, random_state=0).fit(np.r_[X, np.zeros((1, 6))])
    np.testing.assert_allclose(a.components_, b.components_, atol=1e-9)


def test_a_sparse_batch_is_densified_one_row_block_at_a_time(monkeypatch):
    """With blocks of 8 rows, no dense array of more than 8 rows of the batch is made, and the result is
    the same as with the batch in one block."""
    X = _counts(n=100)
    monkeypatch.setattr(repro._stream, "BLOCK_BYTES", 8 * 8 * X.shape[1])
    made = []
    orig = sp.csr_matrix.toarray

    def toarray(self, *args, **kwargs):
        made.append(self.shape[0])
        return orig(self, *args, **kwargs)

    monkeypatch.setattr(sp.csr_matrix, "toarray", toarray)
    st = RunningScatter(X.shape[1])
    st.add(sp.csr_matrix(X), np.ones(100))
    assert made and max(made) == 8
    ref = RunningScatter(X.shape[1])
    ref.add(X, np.ones(100))
    np.testing.assert_allclose(st.scatter(), ref.scatter(), rtol=1e-12, atol=1e-12 * np.abs(ref.S).max())


def test_sparse_batches_through_the_sketch_equal_the_dense_batches(monkeypatch):
    """Above MAX_SCATTER_FEATURES the sketch is fed the same rows in the same order (row blocks, then the
    merge's row), so sparse batches give the dense batches' sketch to round-off."""
    monkeypatch.setattr(repro._stream, "MAX_SCATTER_FEATURES", 10)
    monkeypatch.setattr(repro._stream, "BLOCK_BYTES", 8 * 7 * 40)
    rng = np.random.default_rng(0)
    X = rng.poisson(0.5, (400, 40)).astype(float) * np.linspace(4, 0.2, 40)
    batches = np.array_split(rng.permutation(400), 5)
    a = _stream(EMPCA(2), X, batches, kinds=(sp.csr_matrix,))
    b = _stream(EMPCA(2), X, batches)
    assert not a._stream.exact and a._stream.ell == b._stream.ell
    np.testing.assert_allclose(a.components_, b.components_, atol=1e-9)
    assert a.sketch_error_bound_ == pytest.approx(b.sketch_error_bound_, rel=1e-9, abs=1e-12)


# --------------------------------------------------------------------------- bad sparse batches
@pytest.mark.parametrize("make", [EMPCA, SensiblePCA, EMSparsePCA], ids=lambda c: c.__name__)
def test_bad_sparse_batches_are_refused_naming_the_argument(make):
    X = _counts(n=40)
    est = make(2) if make is not EMSparsePCA else make(2, cardinality=3, random_state=0)
    est.partial_fit(sp.csr_matrix(X[:10]))
    with pytest.raises(ValueError, match=r"X has 7 features, but \w+ is expecting 8"):
        est.partial_fit(sp.csr_matrix(X[:5, :-1]))
    with pytest.raises(ValueError, match=r"X has 7 features, but \w+ is expecting 8"):
        est.partial_fit(X[:5, :-1])  # a dense batch with other columns after sparse ones
    N = sp.csr_matrix(X[:5])
    N.data[0] = np.nan
    with pytest.raises(ValueError, match="X is a sparse matrix with NaN among its stored values"):
        est.partial_fit(N)
    N.data[0] = np.inf
    with pytest.raises(ValueError, match="X"):
        est.partial_fit(N)
    first = sp.csr_matrix(X[:5])
    first.data[1] = np.nan
    with pytest.raises(ValueError, match="X is a sparse matrix with NaN among its stored values"):
        make(2).partial_fit(first)  # the first batch too
    S = sp.csr_matrix(X[:3])
    with pytest.raises(ValueError, match="sample_weight holds negative"):
        est.partial_fit(S, sample_weight=[1.0, -1.0, 1.0])
    with pytest.raises(ValueError, match="sample_weight holds NaN"):
        est.partial_fit(S, sample_weight=[1.0, np.nan, 1.0])
    with pytest.raises(ValueError, match="sample_weight has 0 positive weight"):
        est.partial_fit(S, sample_weight=np.zeros(3))
    with pytest.raises(ValueError, match=r"sample_weight has shape \(2,\); expected \(3,\)"):
        est.partial_fit(S, sample_weight=np.ones(2))
    assert est.n_samples_seen_ == 10  # the refused batches changed nothing
    with pytest.raises(ValueError, match="n_components=9 must be at most n_features=8"):
        EMPCA(9).partial_fit(sp.csr_matrix(X))
