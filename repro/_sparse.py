"""Sparse input (``scipy.sparse`` CSR or CSC): the centred data as an implicit operator, never densified.

The EM methods need only the products of the centred data with a few vectors (Roweis 1997, Sec. 3: ``Y W``
and ``Y'U``; Sigg & Buhmann 2008, Sec. 3: ``X'X w``), and centring a sparse matrix would make it dense. So
the centring stays implicit: with ``mu`` the column means,

* ``Y W = X W - 1 (mu' W)`` and ``Y'U = X'U - mu (1'U)``: one sparse product each (``nnz`` multiply-adds
  per column of ``W`` or ``U``), and a rank-one correction;
* the scatter ``Y'Y = X'X - n mu mu'`` is applied as that operator (``Y'(Y w)``), never formed, unless a
  method asks for the ``D x D`` matrix (then from row blocks of ``X`` densified and centred one block of
  :data:`BLOCK_BYTES` at a time, so the sums are those of the dense computation);
* the centred sums of squares per column are ``sum over stored (x - mu)^2 + (n - stored) mu^2`` (no
  cancellation: the same sums as over the dense centred column).

:class:`CentredSparse` is the factor ``A = (X - 1 mu') / c - U V'`` (``c = sqrt(n - ddof)``; ``U V'``:
the rank-one corrections of the deflations applied so far, ``N x m`` and ``D x m``) behind a
:class:`repro.linalg.Covariance` built from sparse data (``Covariance.from_data``), which
:class:`repro.EMSparsePCA`, the certificates and the optimum iterate on. :class:`SparseSource` is the data
source of :class:`repro.EMPCA` and :class:`repro.SensiblePCA` (:mod:`repro._chunked`'s interface: ``n``,
``p``, ``mean``, ``ss``, :meth:`SparseSource.products`). Neither ever allocates a dense ``N x D`` array;
the largest dense arrays they make are ``N x k`` (products with ``k`` vectors), ``N x K`` (the columns of
a support) and one row block.

The products with thin dense blocks run on the Numba kernels of :mod:`repro._sparse_kernels`
(:func:`sparse_matmat`, :func:`sparse_rmatmat`), which sum in scipy's order, so they equal scipy's
products bit for bit.

This module imports :mod:`repro._validation` and its kernels;
:mod:`repro.linalg` and :mod:`repro._chunked` use it.
"""

from __future__ import annotations

import numpy as np

from . import _sparse_kernels as _k
from ._validation import _scale_for, check_has_variance, check_sparse, is_sparse

__all__ = [
    "BLOCK_BYTES",
    "DENSE_EIGH_MAX",
    "CentredSparse",
    "SparseSource",
    "centred_rows",
    "centred_scatter",
    "centred_ss",
    "check_sparse",
    "column_stats",
    "is_sparse",
    "row_centred_ss",
    "sparse_columns",
    "sparse_door",
    "sparse_matmat",
    "sparse_rmatmat",
]

#: Row blocks densified at a time (bytes) where a ``D x D`` or ``N x N`` matrix is formed.
BLOCK_BYTES = 4 * 2**20
#: Eigenpairs of a sparse operator come from its ``D x D`` (or ``N x N``) matrix when ``min(N, D)`` is at
#: most this; above, from ARPACK's Lanczos on the operator (``scipy.sparse.linalg.eigsh``, to machine
#: precision), which never forms either matrix.
DENSE_EIGH_MAX = 2048


#: The per-column sums over the stored entries run over this many entries at a time, so their temporaries
#: (column indices, deviations) stay at a few MiB instead of a multiple of the matrix.
ENTRY_CHUNK = 2**19


def _compressed(X):
    """``(indptr, indices, data)`` of a CSR or CSC ``X``, or None where the kernels do not apply (values
    not float64, another format, a dense array: the callers then use ``X @ W``)."""
    if getattr(X, "format", None) not in ("csr", "csc") or X.dtype != np.float64:
        return None
    return X.indptr, X.indices, X.data


def _gather(arrs, W, n_rows: int) -> np.ndarray:
    """``M W`` for the compressed rows ``arrs`` of ``M`` (``n_rows`` rows) and ``W`` (2-D, C order)."""
    out = np.empty((n_rows, W.shape[1]))
    _k.matmat_rows(*arrs, W, out, 0, n_rows)
    return out


def _scatter(arrs, Y, n_cols: int) -> np.ndarray:
    """``M' Y`` for the compressed rows ``arrs`` of ``M`` (``n_cols`` columns) and ``Y`` (2-D, C order)."""
    out = np.empty((n_cols, Y.shape[1]))
    _k.rmatmat_rows(*arrs, Y, out, 0, arrs[0].size - 1)
    return out


def sparse_matmat(X, W) -> np.ndarray:
    """``X @ W`` of a CSR or CSC ``X`` (``n x p``) and a dense ``W`` (``p`` or ``p x k``), as an ndarray:
    the kernels of :mod:`repro._sparse_kernels` (CSR: row by row, as scipy's ``csr_matvecs``; CSC: the
    scatter over its columns, as scipy's ``csc_matvecs``), in scipy's order of summation; scipy's product
    for one vector
    (its ``csr_matvec`` takes 0.43x the time of the block kernel at ``k = 1``) and values other than
    float64."""
    arrs = _compressed(X)
    if arrs is None or np.ndim(W) == 1 or np.shape(W)[1] == 1:
        return np.asarray(X @ W, dtype=np.float64)
    n = X.shape[0]
    W = np.ascontiguousarray(W, dtype=np.float64)
    return _gather(arrs, W, n) if X.format == "csr" else _scatter(arrs, W, n)


def sparse_rmatmat(X, Y) -> np.ndarray:
    """``X.T @ Y`` of a CSR or CSC ``X`` (``n x p``) and a dense ``Y`` (``n`` or ``n x k``), as an ndarray
    (CSR: the scatter over its rows; CSC: column by column), in scipy's order; scipy's product
    for one vector and values other than float64, as :func:`sparse_matmat`."""
    arrs = _compressed(X)
    if arrs is None or np.ndim(Y) == 1 or np.shape(Y)[1] == 1:
        return np.asarray(X.T @ Y, dtype=np.float64)
    p = X.shape[1]
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    return _scatter(arrs, Y, p) if X.format == "csr" else _gather(arrs, Y, p)


def sparse_columns(X, idx) -> np.ndarray:
    """``X[:, idx].toarray()`` of a CSR or CSC ``X`` as a new C-order float64 array; for CSR (distinct
    columns) in one pass over the stored entries (:func:`repro._sparse_kernels.gather_columns`) without
    the intermediate sparse matrix."""
    idx = np.asarray(idx, dtype=np.intp)
    arrs = _compressed(X)
    if arrs is None or X.format != "csr" or np.unique(idx).size != idx.size:
        return np.ascontiguousarray(X[:, idx].toarray(), dtype=np.float64)
    position = np.full(X.shape[1], -1, dtype=np.int64)
    position[idx] = np.arange(idx.size)
    out = np.zeros((X.shape[0], idx.size))
    _k.gather_columns(*arrs, position, out)
    return out


def _entry_chunks(X):
    """``(columns, values)`` of the stored entries of a CSR or CSC matrix, :data:`ENTRY_CHUNK` at a time."""
    for a in range(0, X.nnz, ENTRY_CHUNK):
        b = min(a + ENTRY_CHUNK, X.nnz)
        if X.format == "csr":
            cols = X.indices[a:b]
        else:  # the column of entry e is the last c with indptr[c] <= e
            cols = np.searchsorted(X.indptr, np.arange(a, b), side="right") - 1
        yield cols, X.data[a:b]


def _per_column(X, fn) -> np.ndarray:
    """``sum over the stored entries of column j of fn(columns, values)``, for every column j."""
    p = X.shape[1]
    out = np.zeros(p)
    for cols, vals in _entry_chunks(X):
        out += np.bincount(cols, weights=fn(cols, vals), minlength=p)
    return out


def _stored(X) -> np.ndarray:
    """The stored entries per column (counted in chunks: ``np.bincount`` of all the int32 indices at once
    would make an int64 copy of them)."""
    if X.format == "csc":
        return np.diff(X.indptr)
    return _per_column(X, lambda cols, vals: np.ones(vals.size))


def _column_pass(X, centre):
    """``(stored, sum, sum of (x - centre_j)^2)`` per column over the stored entries of a float64 CSR
    ``X`` in one pass (:func:`repro._sparse_kernels.column_sums`); None for other matrices."""
    if X.format != "csr" or _compressed(X) is None:
        return None
    return _k.column_sums(X.indices, X.data, np.asarray(centre, dtype=np.float64), X.shape[1])


def column_stats(X) -> tuple[np.ndarray, np.ndarray]:
    """``(mean, m2)``: the column means and centred sums of squares (:func:`centred_ss`) of a sparse ``X``
    (CSR or CSC)."""
    first = _column_pass(X, np.zeros(X.shape[1]))
    total = _per_column(X, lambda cols, vals: vals) if first is None else first[1]
    mean = total / X.shape[0]
    return mean, centred_ss(X, mean)


def centred_ss(X, mean: np.ndarray) -> np.ndarray:
    """``m2_j = sum over the stored entries of (x - mean_j)^2 + (n - stored_j) mean_j^2``: the sums of
    squares of the dense columns centred at ``mean``, without cancellation (stored zeros count as stored
    entries, correctly)."""
    sums = _column_pass(X, mean)
    if sums is None:
        stored = _stored(X)
        m2 = _per_column(X, lambda cols, vals: (vals - mean[cols]) ** 2)
    else:
        stored, _, m2 = sums
    return m2 + (X.shape[0] - stored) * mean * mean


def _all_constant(X) -> bool:
    """Whether every column of a sparse ``X`` is constant (its unstored entries are zeros): a column is
    when it stores nothing, or stores one value only and that value is 0 or fills the column."""
    n, p = X.shape
    first = np.zeros(p)
    for cols, vals in _entry_chunks(X):  # some stored value of each column (the last write wins)
        first[cols] = vals
    mismatch = _per_column(X, lambda cols, vals: (vals != first[cols]).astype(np.float64))
    stored = _stored(X)
    constant = (stored == 0) | ((mismatch == 0) & ((stored == n) | (first == 0)))
    return bool(constant.all())


def _max_abs_values(X) -> float:
    """``max |stored value|`` without an ``|X.data|`` temporary (0 when nothing is stored)."""
    return max(float(X.data.max()), -float(X.data.min())) if X.nnz else 0.0


def sparse_door(X, method: str, name: str = "X", *, min_samples: int = 2, min_features: int = 1):
    """The one check of a sparse ``X`` for a fit: :func:`repro._validation.check_sparse`, refusal of data
    without variance, and the power of two ``s`` to divide it by (1.0 for ordinarily scaled data, as
    :func:`repro._validation.check_scale` for arrays). Returns ``(X, s)``."""
    X = check_sparse(X, name, min_samples=min_samples, min_features=min_features)
    if X.shape[0] >= 2 and _all_constant(X):
        check_has_variance(np.zeros((2, 1)), method, name)  # the one wording of that refusal
    s = _scale_for(_max_abs_values(X))
    return (X if s == 1.0 else X / s), s


def centred_scatter(X, method: str, name: str = "X"):
    """``(X, n, mean, A)`` of a sparse ``X`` for the methods that work on the ``p x p`` scatter
    ``A = Y'Y`` of the centred data ``Y = X - 1 mu'`` (NSPCA): ``X`` checked (:func:`check_sparse`, at
    least 2 samples) and refused without variance as :func:`sparse_door` refuses it, but not rescaled (a
    method whose penalties are on the scale of ``A`` cannot divide ``X`` silently); ``mean`` from the
    stored entries; ``A`` summed over row blocks of ``X`` densified and centred one at a time
    (:meth:`CentredSparse.gram`), never a dense copy of ``X``. Values float64 cannot hold are left
    infinite in ``A``, for the caller to refuse with its reason."""
    X = check_sparse(X, name, min_samples=2)
    if _all_constant(X):
        check_has_variance(np.zeros((2, 1)), method, name)  # the one wording of that refusal
    with np.errstate(over="ignore", invalid="ignore"):
        mean = column_stats(X)[0]
        A = CentredSparse(X, mean, 1.0).gram()
    return X, X.shape[0], mean, A


class _Transposed:
    """``A'`` of a :class:`CentredSparse` ``A``: ``A' @ Y`` and ``A' @ A`` (the ``D x D`` Gram matrix)."""

    def __init__(self, factor: CentredSparse):
        self.factor = factor
        self.shape = factor.shape[::-1]

    def __matmul__(self, Y):
        if Y is self.factor:
            return self.factor.gram()
        return self.factor.rmatvec(Y)


class _Flags:
    c_contiguous = False
    f_contiguous = False


class CentredSparse:
    """The scaled centred data ``A = (X - 1 mu') / c - U V'`` of a sparse ``X``, as an operator.

    ``A @ W`` and ``A.T @ Y`` are sparse products with a rank-one correction each (the centring), and the
    ``U V'`` of the deflations; ``A[:, idx]`` gives the columns ``idx`` as a dense ``N x K`` array;
    :meth:`gram` the ``D x D`` matrix ``A'A`` from densified row blocks. What array code reads of a data
    factor (``shape``, ``ndim``, ``dtype``, ``flags``: not contiguous, so no kernel reads it as an array)
    is there, so a :class:`repro.linalg.Covariance` can hold it as its ``data``.

    Parameters
    ----------
    X : scipy sparse CSR or CSC matrix, float64 (validated)
    mean : ndarray, shape (n_features,)
        The column means (zeros: no centring).
    c : float
        The scale ``sqrt(n - ddof)``.
    U, V : ndarray, shape (n_samples, m) and (n_features, m), optional
        The deflations' corrections (none by default).
    """

    ndim = 2
    dtype = np.dtype(np.float64)
    flags = _Flags()

    def __init__(self, X, mean, c: float, U=None, V=None):
        n, p = X.shape
        self.X, self.mean, self.c = X, np.asarray(mean, dtype=np.float64), float(c)
        self.U = np.zeros((n, 0)) if U is None else U
        self.V = np.zeros((p, 0)) if V is None else V
        self.shape = (n, p)
        self._diag = None

    @property
    def T(self) -> _Transposed:
        return _Transposed(self)

    @property
    def size(self) -> int:
        return self.shape[0] * self.shape[1]

    # ----- products
    def __matmul__(self, W):
        if isinstance(W, _Transposed):
            return self.left_gram()
        W = np.asarray(W, dtype=np.float64)
        out = sparse_matmat(self.X, W)
        out -= self.mean @ W  # the centring: 1 (mu' W), broadcast over the rows
        out /= self.c
        if self.V.shape[1]:
            out -= self.U @ (self.V.T @ W)
        return out

    def rmatvec(self, Y):
        """``A' Y`` for ``Y`` of shape (n_samples,) or (n_samples, k)."""
        Y = np.asarray(Y, dtype=np.float64)
        out = sparse_rmatmat(self.X, Y)
        out -= np.multiply.outer(self.mean, Y.sum(axis=0))  # mu (1'Y)
        out /= self.c
        if self.U.shape[1]:
            out -= self.V @ (self.U.T @ Y)
        return out

    def _row_blocks(self):
        """The rows of ``A`` as dense blocks of about :data:`BLOCK_BYTES` (one block alive at a time)."""
        n, p = self.shape
        step = max(1, int(BLOCK_BYTES // (8 * max(p, 1))))
        X = self.X if self.X.format == "csr" else self.X.tocsr()
        for i in range(0, n, step):
            B = X[i : i + step].toarray()
            B -= self.mean
            B /= self.c
            if self.V.shape[1]:
                B -= self.U[i : i + step] @ self.V.T
            yield B

    def gram(self) -> np.ndarray:
        """``A'A`` (``D x D``, symmetric), summed over densified row blocks as the dense product is."""
        p = self.shape[1]
        M = np.zeros((p, p))
        for B in self._row_blocks():
            M += B.T @ B
        return 0.5 * (M + M.T)

    def left_gram(self) -> np.ndarray:
        """``A A'`` (``N x N``): ``A (A' E)`` for blocks ``E`` of the identity's columns."""
        n = self.shape[0]
        G = np.empty((n, n))
        step = max(1, int(BLOCK_BYTES // (8 * max(self.shape[1], 1))))
        for i in range(0, n, step):
            E = np.zeros((n, min(step, n - i)))
            E[np.arange(i, i + E.shape[1]), np.arange(E.shape[1])] = 1.0
            G[:, i : i + E.shape[1]] = self @ self.rmatvec(E)
        return 0.5 * (G + G.T)

    def __getitem__(self, key):
        """``A[:, idx]``: the columns ``idx`` as a new dense ``N x K`` array (only this form of indexing)."""
        if not (isinstance(key, tuple) and len(key) == 2 and key[0] == slice(None)):
            raise TypeError("a sparse data factor is indexed by columns only: A[:, idx]")
        idx = np.atleast_1d(np.asarray(key[1]))
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        B = sparse_columns(self.X, idx)
        B -= self.mean[idx]
        B /= self.c
        if self.V.shape[1]:
            B -= self.U @ self.V[idx].T
        return np.ascontiguousarray(B)

    def restrict(self, idx) -> CentredSparse:
        """The factor of the columns ``idx`` alone, still sparse (``X[:, idx]``)."""
        idx = np.asarray(idx)
        sub = CentredSparse(self.X[:, idx], self.mean[idx], self.c, self.U, self.V[idx])
        if self._diag is not None:
            sub._diag = self._diag[idx]
        return sub

    def column_ss(self) -> np.ndarray:
        """``diag(A'A)``: the centred sums of squares per column over ``c^2`` (computed once, kept)."""
        if self._diag is None:
            if self.V.shape[1]:  # d_j - 2 v_j'(U'a_j) + v_j'(U'U) v_j, a_j the undeflated column
                base = CentredSparse(self.X, self.mean, self.c)
                UtA = base.rmatvec(self.U).T  # m x D
                d = base.column_ss() - 2.0 * np.einsum("jm,mj->j", self.V, UtA)
                d += np.einsum("jm,mk,jk->j", self.V, self.U.T @ self.U, self.V)
                self._diag = np.maximum(d, 0.0)
            else:
                self._diag = centred_ss(self.X, self.mean) / (self.c * self.c)
        return self._diag

    def scaled(self, s: float) -> CentredSparse:
        """The factor of ``X / s`` (``s`` a power of two: exact)."""
        return CentredSparse(self.X / s, self.mean / s, self.c, self.U / s, self.V)

    def max_abs(self) -> float:
        """The largest magnitude of the data and its means (what the scale of the products depends on)."""
        return max(_max_abs_values(self.X), float(np.max(np.abs(self.mean))) if self.mean.size else 0.0)

    # ----- deflation
    def deflate(self, w, method: str = "projection") -> CentredSparse:
        """``A (I - ww')`` (projection) or ``(I - qq') A`` with ``q = A w / |A w|`` (Schur): one more
        rank-one correction, ``u = A w, v = w`` or ``u = q, v = A'q``."""
        if method == "projection":
            u, v = self @ w, w
        else:
            y = self @ w
            norm = float(np.sqrt(y @ y))
            if norm <= 0:
                return CentredSparse(self.X, self.mean, self.c, self.U, self.V)
            u = y / norm
            v = self.rmatvec(u)
        return CentredSparse(
            self.X, self.mean, self.c, np.column_stack([self.U, u]), np.column_stack([self.V, v])
        )

    # ----- spectral
    def top_eigh(self, k: int, start=None) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` leading eigenpairs of ``A'A`` by ARPACK's Lanczos on the operator (``tol=0``: to
        machine precision), descending; ``start`` (``D``,) a starting vector."""
        import scipy.sparse.linalg as sla

        p = self.shape[1]
        op = sla.LinearOperator((p, p), matvec=lambda v: self.rmatvec(self @ np.ravel(v)), dtype=np.float64)
        v0 = np.ones(p) if start is None else np.asarray(start, dtype=np.float64)
        vals, vecs = sla.eigsh(op, k=k, which="LA", v0=v0, tol=0)
        order = np.argsort(vals)[::-1]
        return vals[order], np.ascontiguousarray(vecs[:, order])


class SparseSource:
    """A sparse matrix (CSR or CSC, validated) as the data source of the EM PCA family.

    The interface of :class:`repro._chunked.DenseSource` that complete data use: ``n``, ``p``, ``mean``,
    ``ss`` (the centred sum of squares), ``missing`` (False: sparse input has no missing entries) and
    :meth:`products` (``Y'YQ``, ``(YQ)'(YQ)`` with the centring implicit), :meth:`gram`.
    """

    kind = "sparse"
    missing = False
    n_missing = 0

    def __init__(self, X, name: str = "X"):
        self.name = name
        self.n, self.p = X.shape
        self.mean, m2 = column_stats(X)
        self.ss = float(m2.sum())
        self.factor = CentredSparse(X, self.mean, 1.0)
        self.obs_count, self.obs_mean, self.obs_m2 = np.full(self.p, float(self.n)), self.mean, m2

    def products(self, Q):
        """``(Y'YQ, (YQ)'(YQ))`` of the centred data ``Y = X - 1 mu'``."""
        U = self.factor @ Q
        return self.factor.rmatvec(U), U.T @ U

    def gram(self, Q):
        """``(YQ)'(YQ)`` alone."""
        U = self.factor @ Q
        return U.T @ U


def row_centred_ss(X, mean: np.ndarray) -> np.ndarray:
    """``|x_i - mean|^2`` of every sparse row: the stored entries' ``(x - mean_j)^2`` plus ``mean_j^2``
    over the row's unstored columns (``|mean|^2`` minus those of its stored columns)."""
    X = X.tocsr() if X.format != "csr" else X
    n = X.shape[0]
    dev2, mu2 = np.zeros(n), np.zeros(n)
    step = max(1, ENTRY_CHUNK * n // max(X.nnz, 1))  # rows of about ENTRY_CHUNK stored entries
    for a in range(0, n, step):
        B = X[a : a + step]
        rows = np.repeat(np.arange(B.shape[0]), np.diff(B.indptr))
        m = mean[B.indices]
        dev2[a : a + B.shape[0]] = np.bincount(rows, weights=(B.data - m) ** 2, minlength=B.shape[0])
        mu2[a : a + B.shape[0]] = np.bincount(rows, weights=m * m, minlength=B.shape[0])
    return dev2 + (float(mean @ mean) - mu2)


def centred_rows(X, mean: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``(X - mean) @ W`` of sparse rows ``X`` (n x p) and a dense ``W`` (p x k): ``X W - mean W``."""
    out = sparse_matmat(X, W)
    out -= mean @ W
    return out
