"""The kernels of :mod:`repro._sparse_kernels` against their twins in ``tests/naive.py`` and scipy.

Tolerances: the products sum in scipy's order, so they equal scipy's product exactly; the twins sum in
another order, so an entry may differ by the round-off of the sum of magnitudes it adds up:
``|K - T| <= 4 m eps (|X| |W|)`` entrywise, ``m`` the most stored entries of a row.
"""

from __future__ import annotations

import naive
import numpy as np
import pytest
import scipy.sparse as sp

import repro._sparse as S
from repro import _sparse_kernels as K

EPS = np.finfo(float).eps


def _matrix(n, p, density, seed, fmt="csr", index_dtype=np.int32, duplicates=False):
    rng = np.random.default_rng(seed)
    X = sp.random(n, p, density=density, format="coo", random_state=rng, data_rvs=rng.standard_normal)
    X = X.tocsr() if fmt == "csr" else X.tocsc()
    if duplicates:  # each non-empty row's first entry stored twice (non-canonical), as a user may hand over
        counts = np.diff(X.indptr)
        starts = X.indptr[:-1][counts > 0]
        order = np.argsort(np.concatenate([np.arange(X.nnz), starts]), kind="stable")
        indptr = np.concatenate([[0], np.cumsum(counts + (counts > 0))])
        data = np.concatenate([X.data, X.data[starts]])[order]
        indices = np.concatenate([X.indices, X.indices[starts]])[order]
        X = sp.csr_matrix((data, indices, indptr), shape=X.shape)
    X.indices = X.indices.astype(index_dtype)
    X.indptr = X.indptr.astype(index_dtype)
    return X


def _bound(X, W):
    """``4 m eps |X| |W|``: round-off of the sums of ``X W`` in any order (``m`` stored per row, at most)."""
    A = abs(X).tocsr()
    m = np.diff(A.indptr).max(initial=0)
    return 4 * max(m, 1) * EPS * (A @ np.abs(W))


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("k", [1, 3, 30])
def test_matmat_rows_equals_scipy_and_twin(seed, k):
    X = _matrix(300, 200, 0.05, seed)
    W = np.random.default_rng(seed + 10).standard_normal((200, k))
    out = np.full((300, k), np.nan)
    K.matmat_rows(X.indptr, X.indices, X.data, W, out, 0, 300)
    np.testing.assert_array_equal(out, X @ W)  # scipy's order: identical
    twin = naive.compressed_matmat(X.indptr, X.indices, X.data, W)
    assert np.all(np.abs(out - twin) <= _bound(X, W))


@pytest.mark.parametrize("seed", [0, 1])
def test_rmatmat_rows_equals_scipy_and_twin(seed):
    X = _matrix(300, 200, 0.05, seed)
    Y = np.random.default_rng(seed + 20).standard_normal((300, 7))
    acc = np.full((200, 7), np.nan)
    K.rmatmat_rows(X.indptr, X.indices, X.data, Y, acc, 0, 300)
    np.testing.assert_array_equal(acc, X.T @ Y)
    twin = naive.compressed_rmatmat(X.indptr, X.indices, X.data, Y, 200)
    assert np.all(np.abs(acc - twin) <= _bound(X.T, Y))


def test_fixed_case_by_hand():
    X = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 0.0], [0.0, -3.0, 0.5]]))
    W = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    np.testing.assert_array_equal(S.sparse_matmat(X, W), [[11.0, 14.0], [0.0, 0.0], [-6.5, -9.0]])
    Y = np.array([[1.0], [7.0], [2.0]])
    np.testing.assert_array_equal(S.sparse_rmatmat(X, Y), [[1.0], [-6.0], [3.0]])
    np.testing.assert_array_equal(S.sparse_columns(X, [2, 0]), [[2.0, 1.0], [0.0, 0.0], [0.5, 0.0]])


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_wrappers_equal_scipy_exactly(fmt, index_dtype):
    X = _matrix(250, 120, 0.08, 6, fmt=fmt, index_dtype=index_dtype)
    rng = np.random.default_rng(7)
    W, Y, w, y = (rng.standard_normal(s) for s in ((120, 5), (250, 5), 120, 250))
    got = [S.sparse_matmat(X, W), S.sparse_rmatmat(X, Y), S.sparse_matmat(X, w), S.sparse_rmatmat(X, y)]
    for g, r in zip(got, [X @ W, X.T @ Y, X @ w, X.T @ y], strict=True):
        assert g.shape == r.shape and g.dtype == np.float64
        np.testing.assert_array_equal(g, r)  # scipy's order of summation: bit for bit
    F = np.asfortranarray(W)  # any layout in, the same answer
    np.testing.assert_array_equal(S.sparse_matmat(X, F), X @ W)


def test_empty_rows_duplicates_and_empty_matrix():
    X = _matrix(60, 40, 0.05, 8, duplicates=True)
    X.data[:3] = 0.0  # stored zeros
    W = np.random.default_rng(9).standard_normal((40, 3))
    assert X.nnz and not X.has_canonical_format
    np.testing.assert_array_equal(S.sparse_matmat(X, W), X @ W)
    np.testing.assert_array_equal(S.sparse_columns(X, [0, 5, 39]), X[:, [0, 5, 39]].toarray())
    Z = sp.csr_matrix((5, 4))
    np.testing.assert_array_equal(S.sparse_matmat(Z, np.ones((4, 2))), np.zeros((5, 2)))
    np.testing.assert_array_equal(S.sparse_rmatmat(Z, np.ones((5, 2))), np.zeros((4, 2)))


@pytest.mark.parametrize("seed", [0, 1])
def test_gather_columns_equals_toarray_and_twin(seed):
    X = _matrix(200, 80, 0.1, seed)
    idx = np.random.default_rng(seed).choice(80, 12, replace=False)
    got = S.sparse_columns(X, idx)
    np.testing.assert_array_equal(got, X[:, idx].toarray())
    np.testing.assert_array_equal(got, naive.gather_columns(X.indptr, X.indices, X.data, idx))
    assert got.flags.c_contiguous
    # repeated columns and CSC go through scipy, with the same answer
    np.testing.assert_array_equal(S.sparse_columns(X, [3, 3, 1]), X[:, [3, 3, 1]].toarray())
    np.testing.assert_array_equal(S.sparse_columns(X.tocsc(), idx), X[:, idx].toarray())


@pytest.mark.parametrize("seed", [0, 1])
def test_column_sums_equal_the_twin(seed):
    X = _matrix(300, 90, 0.05, seed)
    centre = np.random.default_rng(seed).standard_normal(90)
    got = K.column_sums(X.indices, X.data, centre, 90)
    twin = naive.column_sums(X.indices, X.data, centre, 90)
    np.testing.assert_array_equal(got[0], twin[0])
    m = np.bincount(X.indices, minlength=90)
    scale = np.bincount(X.indices, weights=np.abs(X.data), minlength=90)
    assert np.all(np.abs(got[1] - twin[1]) <= 4 * m * EPS * scale)
    scale2 = np.bincount(X.indices, weights=(X.data - centre[X.indices]) ** 2, minlength=90)
    assert np.all(np.abs(got[2] - twin[2]) <= 4 * m * EPS * scale2)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_column_stats_equal_the_dense_columns(fmt):
    X = _matrix(150, 30, 0.2, 11, fmt=fmt)
    D = X.toarray()
    mean, m2 = S.column_stats(X)
    np.testing.assert_allclose(mean, D.mean(axis=0), rtol=1e-13, atol=1e-16)
    np.testing.assert_allclose(m2, ((D - D.mean(axis=0)) ** 2).sum(axis=0), rtol=1e-12, atol=1e-14)


def test_other_dtypes_fall_back_to_scipy():
    X = _matrix(50, 20, 0.2, 12).astype(np.float32)
    W = np.ones((20, 2))
    np.testing.assert_allclose(S.sparse_matmat(X, W), X @ W, rtol=1e-6)
    np.testing.assert_allclose(S.sparse_columns(X, [1, 2]), X[:, [1, 2]].toarray())


def test_dense_arrays_pass_through():
    A = np.arange(12.0).reshape(4, 3)
    W, Y = np.ones((3, 2)), np.ones((4, 2))
    np.testing.assert_array_equal(S.sparse_matmat(A, W), A @ W)
    np.testing.assert_array_equal(S.sparse_rmatmat(A, Y), A.T @ Y)
    np.testing.assert_array_equal(S.centred_rows(A, np.ones(3), W), (A - 1.0) @ W)
