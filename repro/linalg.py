"""Linear algebra shared by every method: preprocessing, the covariance operator, eigenpairs, deflation.

Conventions
-----------
* Data matrices are ``(n_samples, n_features)``; loadings handed to these helpers are column vectors
  ``(n_features,)`` or ``(n_features, k)``. (Estimators store ``components_`` as rows; they transpose.)
* The sample covariance is ``C = Xc' Xc / (n - ddof)`` with ``ddof=1`` by default, the normalization of
  ``numpy.cov`` and of scikit-learn's ``explained_variance_``. Papers that use ``X'X`` (no division) differ
  by a constant factor that leaves every loading unchanged; experiments say which they use.
* When ``n_samples < n_features`` (gene expression: 72 x 12582) the ``D x D`` matrix is never formed:
  products go through the data and eigenpairs through the ``N x N`` Gram matrix ``Xc Xc'``.

The operator chosen by shape
----------------------------
An iterative method (EM) applies ``C`` to a block ``W`` of ``R`` vectors many times. Through the data an
application costs ``2 N D R`` flops; through the ``D x D`` matrix it costs ``D^2 R`` after forming ``C``
once (``N D^2`` flops, but a BLAS-3 product that runs several times faster per flop than the
matrix-vector products of the iteration). :func:`choose_operator` is the one rule (a cost model, see
there); ``Covariance.from_data(X, operator="auto")`` applies it, ``"data"`` or ``"covariance"`` force
a choice. Methods ask :meth:`Covariance.products` for ``W C`` and the quadratic forms of the rows of a
block, whatever the operator.

Data beyond memory (Dask arrays, row blocks) is read by the EM methods' data layer, :mod:`repro._chunked`;
the ``D x D`` covariance of chunked data is formed in one pass there and wrapped with ``Covariance(matrix=)``.

A scipy sparse ``X`` (CSR or CSC) backs the operator without a dense copy: ``data`` is then a
:class:`repro._sparse.CentredSparse`, the centring implicit in every product (``X W - 1 (mu' W)``), the
``D x D`` matrix formed only when a method asks for it (:meth:`Covariance.dense`), eigenpairs by Lanczos
on the operator above :data:`repro._sparse.DENSE_EIGH_MAX`.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
import scipy.linalg
import scipy.linalg.lapack
from sklearn.utils._param_validation import Interval, validate_params

from . import _shortcuts
from ._dense import (
    _canonical_sign,
    _projection_deflate,
    _schur_deflate,
    canonical_sign,
    center,
    projection_deflate,
    schur_deflate,
    standardize,
)
from ._linalg_kernels import centred_scaled, lanczos_top, support_matvec
from ._sparse import DENSE_EIGH_MAX, CentredSparse
from ._validation import (
    _max_abs,
    _scale_for,
    check_array,
    check_bool,
    check_covariance_args,
    check_int,
    check_scale,
    check_sparse,
    check_symmetric,
    check_vector,
    is_sparse,
    unscale,
)

__all__ = [
    "OPERATORS",
    "Covariance",
    "as_covariance",
    "canonical_sign",
    "center",
    "choose_operator",
    "leading_eigenpairs",
    "projection_deflate",
    "renormalize",
    "schur_deflate",
    "span_variances",
    "standardize",
]


# --------------------------------------------------------------------------- the operator rule
OPERATORS = ("auto", "data", "covariance")
_COUNT = Interval(Integral, 1, None, closed="left")  # a count of samples, features, vectors, eigenpairs
#: Forming ``C = X'X`` (BLAS 3) runs this many times faster per flop than the matrix-vector products of an
#: iteration (BLAS 2); measured 8-20x on the benchmark data, the smaller value is used (conservative).
BLAS3_GAIN = 8.0
#: Iterations assumed for one EM run when the caller has no estimate (the sparse EM on the benchmark data
#: takes 20-2000; 50 is a low guess so the covariance is chosen only when it pays off soon).
DEFAULT_ITERATIONS = 50
#: From this many vectors on, :meth:`Covariance.products` uses one matrix-matrix product (see there).
BLOCK_MIN_ROWS = 16
#: A row of a block with fewer than ``n_features / SPARSE_FRACTION`` non-zeros is applied through its support.
SPARSE_FRACTION = 4
#: Through the row-major data the support's entries of each row are gathered, which reads about
#: ``min(K, D / 8)`` cache lines of the row (8 doubles each) at a flop per cycle or so, against ``D / 8``
#: lines at BLAS speed for the dense product: the support pays only when it is this much smaller than ``D``.
#: (Measured on 200000 x 1000, one thread, gathered ``X w`` over the dense one: K = 10 0.19x, 20 0.46x,
#: 30 0.86x, 40 1.07x, 50 1.38x.)
SPARSE_DATA_FRACTION = 32


@validate_params(
    {
        "n_samples": [_COUNT], "n_features": [_COUNT], "n_vectors": [_COUNT], "n_iter": [_COUNT],
        "nnz": [None, Interval(Integral, 0, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)  # fmt: skip
def choose_operator(
    n_samples: int,
    n_features: int,
    *,
    n_vectors: int = 1,
    n_iter: int = DEFAULT_ITERATIONS,
    nnz: int | None = None,
) -> str:
    """The cheaper way to apply a sample covariance ``n_iter`` times to ``n_vectors`` vectors.

    Cost model in flops (``N`` samples, ``D`` features, ``R`` vectors, ``T`` iterations):

    * ``"data"``: ``T * 2 N D R`` (``X w`` then ``X' y``);
    * ``"covariance"``: ``N D^2 / BLAS3_GAIN + T * D^2 R`` (form ``C`` once, then ``C w``).

    The covariance wins when ``D < 2N`` and the iterations amortize its formation; ``N < D`` always
    keeps the data (``C`` would be larger than ``X`` and each product dearer). Sparse data (``nnz``
    stored entries) cost ``T * 2 nnz R`` through the data, and forming ``C`` from their densified row
    blocks costs what it costs for dense data.

    Parameters
    ----------
    n_samples, n_features : int
        The shape ``(N, D)`` of the data.
    n_vectors : int, default 1
        Vectors per product (``R``; the number of components updated together).
    n_iter : int, default DEFAULT_ITERATIONS
        Expected number of products (``T``).
    nnz : int, optional
        The stored entries of sparse data (``None``: dense, ``N D``).

    Returns
    -------
    {"data", "covariance"}
        The operator with the smaller modelled cost.

    See Also
    --------
    Covariance.from_data

    Examples
    --------
    >>> from repro.linalg import choose_operator
    >>> choose_operator(100000, 100)  # many samples, few features: form C once
    'covariance'
    >>> choose_operator(72, 12582)  # gene expression, N << D: keep the data
    'data'
    """
    N, D, R, T = float(n_samples), float(n_features), float(max(n_vectors, 1)), float(max(n_iter, 1))
    cost_data = T * 2.0 * (N * D if nnz is None else float(nnz)) * R
    cost_cov = N * D * D / BLAS3_GAIN + T * D * D * R
    return "covariance" if cost_cov < cost_data else "data"


#: :func:`choose_operator` unchecked, for the library's own callers (their shapes come from validated arrays).
_choose_operator = choose_operator.__wrapped__


# --------------------------------------------------------------------------- covariance operator
class Covariance:
    """A sample covariance ``C`` (``n_features x n_features``) as an operator.

    Build it with :meth:`from_data` (keeps the centred data; ``C`` is formed only on request) or
    :meth:`from_matrix` (a given covariance or correlation matrix, e.g. Pit Props).

    Parameters
    ----------
    data : ndarray, shape (n_samples, n_features), optional
        Scaled centred data ``Z`` with ``C = Z' Z``; exactly one of ``data`` and ``matrix`` is given.
    matrix : ndarray, shape (n_features, n_features), optional
        A symmetric positive semi-definite matrix.
    n_samples : int, optional
        Number of samples behind the estimate, where known.

    Attributes
    ----------
    n_features : int
    n_samples : int or None
        Number of samples behind the estimate (``None`` if unknown for a given matrix).
    data : ndarray (n_samples, n_features) or None
        The centred data scaled so that ``C = data' data`` (i.e. ``Xc / sqrt(n - ddof)``).
    matrix : ndarray (n_features, n_features) or None
        The matrix, when given or once formed by :meth:`dense`.

    See Also
    --------
    as_covariance, choose_operator, leading_eigenpairs

    Notes
    -----
    What is derived from ``data`` is computed once and kept (:meth:`dense`, :meth:`diag`,
    :meth:`column_norms`, and what an EM method keeps for its screening bound), so ``data`` must not be
    modified in place afterwards; build a new operator instead.

    The operator is what the EM methods iterate on: ``C w`` through the data costs ``2 N D`` flops,
    through the matrix ``D^2`` (Sigg & Buhmann 2008, Section 3: the ``D >> N`` case works on ``X``).

    Examples
    --------
    >>> import numpy as np
    >>> from repro import Covariance
    >>> X = np.random.default_rng(0).standard_normal((50, 4))
    >>> C = Covariance.from_data(X)
    >>> C.shape, C.uses_data
    ((4, 4), True)
    >>> bool(np.allclose(C.dense(), np.cov(X, rowvar=False)))
    True
    >>> w = np.array([1.0, 0.0, 0.0, 0.0])
    >>> bool(np.isclose(C.quad(w), np.var(X[:, 0], ddof=1)))
    True
    """

    def __init__(self, *, data=None, matrix=None, n_samples=None):
        self._set(*check_covariance_args(data, matrix), n_samples)
        self._psd_checked = matrix is not None  # check_covariance_args found the matrix PSD

    def _set(self, data, matrix, n_samples):
        self.data, self.matrix = data, matrix
        self.n_features = int((data if data is not None else matrix).shape[1])
        self.n_samples = n_samples

    @classmethod
    def _trusted(cls, *, data=None, matrix=None, n_samples=None) -> Covariance:
        """Wrap an array the library built itself from validated input (finite float64; a symmetric
        ``matrix``), skipping :func:`check_covariance_args`' passes over it (a finite test of the whole
        data, the symmetry test of a matrix): internal use only."""
        self = cls.__new__(cls)
        self._set(data, matrix, n_samples)
        return self

    # ----- construction
    @classmethod
    def from_data(
        cls,
        X,
        *,
        center: bool = True,
        ddof: int = 1,
        name: str = "X",
        operator: str = "data",
        n_vectors: int = 1,
        n_iter: int = DEFAULT_ITERATIONS,
    ) -> Covariance:
        """Sample covariance of ``X`` (rows are samples), centred unless ``center=False``.

        ``X`` may be a scipy sparse matrix (CSR, CSC; other formats converted to CSR once): the operator
        then goes through ``X`` itself with the centring implicit, never a dense copy of it
        (``operator="covariance"`` forms the ``D x D`` matrix from densified row blocks).

        Parameters
        ----------
        operator : {"data", "covariance", "auto"}
            ``"data"`` (default) keeps the scaled centred data and applies ``C`` through it;
            ``"covariance"`` forms the ``D x D`` matrix once and keeps only it; ``"auto"`` picks by
            :func:`choose_operator` with ``n_vectors`` and ``n_iter``. Either way ``C`` is the same
            matrix and products agree to round-off.
        n_vectors, n_iter : int
            The expected use, for ``operator="auto"``: vectors per product and number of products.
        """
        if operator not in OPERATORS:
            raise ValueError(f"operator must be one of {OPERATORS}; got {operator!r}.")
        center = check_bool(center, "center")
        if is_sparse(X):
            return cls._from_sparse(
                check_sparse(X, name, min_samples=ddof + 1),
                center=center,
                ddof=ddof,
                operator=operator,
                n_vectors=n_vectors,
                n_iter=n_iter,
            )
        X = check_array(X, name, min_samples=ddof + 1)
        return cls._from_valid(
            X, center=center, ddof=ddof, operator=operator, n_vectors=n_vectors, n_iter=n_iter, name=name
        )

    @classmethod
    def _from_valid(
        cls,
        X,
        *,
        center=True,
        ddof=1,
        operator="data",
        n_vectors=1,
        n_iter=DEFAULT_ITERATIONS,
        mean=None,
        name="X",
    ) -> Covariance:
        """:meth:`from_data` on an array that passed ``check_array`` (C-contiguous float64, finite);
        ``mean``: its column means when the caller has them. Finite data whose centring (or, for the
        matrix, whose products) overflow float64 are refused with that reason."""
        n, d = X.shape
        if center and mean is None:
            mean = X.mean(axis=0)
        if operator == "auto":
            operator = _choose_operator(n, d, n_vectors=n_vectors, n_iter=n_iter)
        if operator == "covariance":  # one centred copy, then X'X (BLAS syrk), scaled in place
            Xc = X - mean if center else X
            M = Xc.T @ Xc
            M += M.T
            M *= 0.5 / (n - ddof)
            if not np.isfinite(M).all():
                raise _overflow(X, name)
            return cls._trusted(matrix=M, n_samples=n)
        # One new array, (X - mean) / sqrt(n - ddof), and diag(C) from the same pass (a finite diagonal
        # shows every entry finite, so the constructor's test of the array is needed only otherwise)
        if not center:
            A = np.array(X, dtype=np.float64, order="C")
            np.divide(A, np.sqrt(n - ddof), out=A)
            return cls(data=A, n_samples=n)
        A, diag = np.empty((n, d)), np.empty(d)
        centred_scaled(X, np.asarray(mean, dtype=np.float64), float(np.sqrt(n - ddof)), A, diag)
        if not np.isfinite(diag).all() and not np.isfinite(A).all():
            raise _overflow(X, name)
        op = cls._trusted(data=A, n_samples=n)
        op._diag = diag
        return op

    @classmethod
    def _from_sparse(
        cls, X, *, center=True, ddof=1, operator="data", n_vectors=1, n_iter=DEFAULT_ITERATIONS, mean=None
    ) -> Covariance:
        """:meth:`from_data` on a validated sparse matrix (CSR or CSC float64): through the implicit
        factor :class:`repro._sparse.CentredSparse`, or its ``D x D`` matrix (``"covariance"``; ``"auto"``
        by :func:`choose_operator` with the stored entries ``nnz``)."""
        n, d = X.shape
        if mean is None and center:  # summed as X / s (s a power of two): entries near 1e308 overflow a sum
            top = max(float(X.data.max()), -float(X.data.min())) if X.nnz else 0.0
            s = _scale_for(top)
            mean = np.asarray((X / s if s != 1.0 else X).sum(axis=0), dtype=np.float64).ravel() / n * s
        elif mean is None:
            mean = np.zeros(d)
        factor = CentredSparse(X, mean, float(np.sqrt(n - ddof)))
        if operator == "auto":
            operator = _choose_operator(n, d, n_vectors=n_vectors, n_iter=n_iter, nnz=X.nnz)
        if operator == "covariance":
            return cls._trusted(matrix=factor.gram(), n_samples=n)
        return cls._trusted(data=factor, n_samples=n)

    @classmethod
    def from_matrix(cls, C, *, n_samples: int | None = None, name: str = "C") -> Covariance:
        """Wrap a symmetric positive semi-definite matrix."""
        op = cls._derived(check_symmetric(C, name, psd=True), n_samples=n_samples)
        op._psd_checked = True  # so that a method taking it does not check it again
        return op

    @classmethod
    def _derived(cls, matrix, *, n_samples: int | None = None) -> Covariance:
        """Wrap a matrix the library derived from a checked covariance (a deflation, a principal
        submatrix, a Gram matrix): checked finite and symmetric, not again for semi-definiteness (it is
        PSD up to round-off by construction, and that test costs an eigenvalue problem). Internal use."""
        self = cls.__new__(cls)
        self._set(*check_covariance_args(None, matrix, psd=False), n_samples)
        return self

    # ----- products
    @property
    def shape(self) -> tuple[int, int]:
        return (self.n_features, self.n_features)

    @property
    def uses_data(self) -> bool:
        """True when products go through the data (never forming C)."""
        return self.matrix is None

    def matvec(self, W: np.ndarray) -> np.ndarray:
        """``C @ W`` for ``W`` of shape (n_features,) or (n_features, k).

        Parameters
        ----------
        W : ndarray, shape (n_features,) or (n_features, k)
            A vector or vectors as columns.

        Returns
        -------
        ndarray, shape of ``W``
            ``C @ W``.
        """
        if self.matrix is not None:
            return self.matrix @ W
        return self.data.T @ (self.data @ W)

    __matmul__ = matvec

    @property
    def operator(self) -> str:
        """``"data"`` or ``"covariance"``: what products go through."""
        return "data" if self.matrix is None else "covariance"

    def products(self, W: np.ndarray, rows=None) -> tuple[np.ndarray, np.ndarray]:
        """``W C`` and the quadratic forms ``w_j' C w_j`` for the rows ``w_j`` of a block ``W``.

        The interface every EM method uses, whatever the operator: ``2 N D R`` flops through the data,
        ``D^2 R`` through the matrix. A row with fewer than ``D / SPARSE_FRACTION`` non-zeros through the
        matrix, or ``D / SPARSE_DATA_FRACTION`` through the data (a sparse EM iterate with ``K`` of them),
        costs ``D K`` or ``N (D + K)``: only the support enters, gathered from the data without a copy
        (:func:`repro._linalg_kernels.support_matvec`). From ``BLOCK_MIN_ROWS`` rows on it is one
        matrix-matrix product
        (BLAS 3); below, one matrix-vector product per row into preallocated rows, which measured faster
        per row on the benchmark machine (OpenBLAS, one thread: blocks of 2-10 rows cost 1.0-2.6x the
        matrix-vector products per row on both 2429 x 361 and 72 x 12582).

        Parameters
        ----------
        W : ndarray, shape (R, n_features)
            A block of ``R`` vectors as rows.
        rows : ignored
            The block's row labels, for operators that keep per-row state (the missing-value operator of
            :mod:`repro.em_sparse_pca`); a covariance has none.

        Returns
        -------
        F : ndarray, shape (R, n_features)
            ``W C`` (row ``j`` is ``C w_j``).
        h : ndarray, shape (R,)
            ``w_j' C w_j``.
        """
        return self._products(W, True)

    def _products(self, W, want_F: bool):
        """:meth:`products`; with ``want_F=False`` through the data only ``h`` (the same values) and
        ``F = None``, without the ``N D`` product ``X'y`` per row."""
        W = np.asarray(W, dtype=np.float64)
        R = W.shape[0]
        if R >= BLOCK_MIN_ROWS or isinstance(self.data, CentredSparse):  # sparse data: one product
            if self.matrix is not None:
                F = W @ self.matrix
                return F, np.einsum("ij,ij->i", W, F)
            if isinstance(self.data, CentredSparse):  # Y = A W', F = (A'Y)'
                Y = self.data @ W.T
                return (self.data.rmatvec(Y).T if want_F else None), np.einsum("ij,ij->j", Y, Y)
            Y = W @ self.data.T
            return (Y @ self.data if want_F else None), np.einsum("ij,ij->i", Y, Y)
        M, A, D = self.matrix, self.data, self.n_features
        F = np.empty((R, D)) if want_F or M is not None else None
        h = np.empty(R)
        frac = (SPARSE_FRACTION if M is not None else SPARSE_DATA_FRACTION) if _shortcuts.enabled else D + 1
        y = np.empty(A.shape[0]) if A is not None else None
        row_major = A is not None and A.flags.c_contiguous  # what the support's gather reads
        for r in range(R):
            w = W[r]
            nz = np.flatnonzero(w)
            sparse = nz.size * frac < D  # (an exact shortcut: off, frac = D + 1, never)
            if M is not None:
                if sparse:  # C w = sum over the support of w_j C[j, :]: D K flops
                    np.dot(w[nz], M[nz], out=F[r])
                    h[r] = w[nz] @ F[r, nz]
                else:
                    np.dot(M, w, out=F[r])
                    h[r] = w @ F[r]
            else:
                if sparse and row_major:  # X w through the support's columns, not copied: N K flops
                    support_matvec(A, nz, nz.size, w, y)
                else:
                    np.dot(A, w, out=y)
                h[r] = y @ y
                if want_F:
                    np.dot(A.T, y, out=F[r])
        return F, h

    def quad_rows(self, W: np.ndarray) -> np.ndarray:
        """``w_j' C w_j`` for the rows of a block ``W``: the ``h`` of :meth:`products`, the same values,
        without ``W C`` when the products go through the data (``N K`` flops for a ``K``-sparse row
        instead of ``N (D + K)``).

        Parameters
        ----------
        W : ndarray, shape (R, n_features)
            A block of ``R`` vectors as rows.

        Returns
        -------
        ndarray, shape (R,)
            ``w_j' C w_j``.

        Examples
        --------
        >>> import numpy as np
        >>> from repro import Covariance
        >>> C = Covariance.from_data(np.random.default_rng(0).standard_normal((50, 4)))
        >>> W = np.eye(4)[:2]
        >>> bool(np.array_equal(C.quad_rows(W), C.products(W)[1]))
        True
        """
        return self._products(W, False)[1]

    def quad(self, W: np.ndarray) -> np.ndarray | float:
        """``w' C w`` for a vector, or the diagonal of ``W' C W`` for columns ``W``.

        Parameters
        ----------
        W : ndarray, shape (n_features,) or (n_features, k)
            A vector or vectors as columns.

        Returns
        -------
        float or ndarray, shape (k,)
            ``w' C w``, or one value per column.
        """
        if self.matrix is not None:
            CW = self.matrix @ W
            return float(W @ CW) if W.ndim == 1 else np.einsum("ij,ij->j", W, CW)
        Y = self.data @ W
        return float(Y @ Y) if W.ndim == 1 else np.einsum("ij,ij->j", Y, Y)

    def gram(self, W: np.ndarray) -> np.ndarray:
        """``W' C W`` for columns ``W`` (k x k).

        Parameters
        ----------
        W : ndarray, shape (n_features, k)
            Vectors as columns.

        Returns
        -------
        ndarray, shape (k, k)
            ``W' C W``.
        """
        if self.matrix is not None:
            return W.T @ (self.matrix @ W)
        Y = self.data @ W
        return Y.T @ Y

    def dense(self) -> np.ndarray:
        """The ``n_features x n_features`` matrix (formed once and kept).

        Returns
        -------
        ndarray, shape (n_features, n_features)
            ``C`` (the kept matrix: do not modify it).
        """
        if self.matrix is None:
            self.matrix = self.data.T @ self.data
        return self.matrix

    def submatrix(self, idx) -> np.ndarray:
        """``C[idx][:, idx]`` without forming ``C``.

        Parameters
        ----------
        idx : array_like of int
            Feature indices.

        Returns
        -------
        ndarray, shape (len(idx), len(idx))
            ``C[idx][:, idx]``.
        """
        idx = np.asarray(idx)
        if self.matrix is not None:
            return self.matrix[np.ix_(idx, idx)]
        S = self._columns(idx)
        return S.T @ S

    def restrict(self, idx) -> Covariance:
        """The covariance of the features ``idx`` alone, ``C[idx][:, idx]``, as an operator: through the
        data's columns ``data[:, idx]`` (``N x K``) or the matrix ``C[idx][:, idx]`` (``K x K``), whichever
        backs this one (the matrix when both do), so its products cost ``N K`` or ``K^2`` instead of
        ``N D`` or ``D^2``.

        Parameters
        ----------
        idx : array_like of int
            Feature indices.

        Returns
        -------
        Covariance
            The operator of ``C[idx][:, idx]``.
        """
        idx = np.asarray(idx)
        if self.matrix is not None:
            return Covariance._trusted(
                matrix=np.ascontiguousarray(self.matrix[np.ix_(idx, idx)]), n_samples=self.n_samples
            )
        if isinstance(self.data, CentredSparse):  # still sparse: X[:, idx]
            return Covariance._trusted(data=self.data.restrict(idx), n_samples=self.n_samples)
        return Covariance._trusted(data=self._gather(idx), n_samples=self.n_samples)

    def _gather(self, idx) -> np.ndarray:
        """A new array of the data's columns ``idx`` (``N x len(idx)``, C-contiguous): what :meth:`restrict`
        keeps (internal)."""
        return np.ascontiguousarray(self.data[:, idx])

    def _columns(self, idx) -> np.ndarray:
        """The data's columns ``idx`` (``N x len(idx)``), for reading: what :meth:`submatrix` and the
        renormalization of a support use (internal)."""
        return self.data[:, idx]

    def column_norms(self) -> np.ndarray:
        """``sqrt(diag(C))``: the norms of the data's columns (computed once and kept).

        Returns
        -------
        ndarray, shape (n_features,)
            ``sqrt(diag(C))`` (the kept array: do not modify it).
        """
        if getattr(self, "_column_norms", None) is None:
            self._column_norms = np.sqrt(np.maximum(self.diag(), 0.0))
        return self._column_norms

    def diag(self) -> np.ndarray:
        """The variances, ``diag(C)`` (through the data: one pass, computed once and kept).

        Returns
        -------
        ndarray, shape (n_features,)
            ``diag(C)`` (a copy).
        """
        if self.matrix is not None:
            return np.diag(self.matrix).copy()
        if getattr(self, "_diag", None) is None:
            if isinstance(self.data, CentredSparse):
                self._diag = self.data.column_ss()
            else:
                self._diag = np.einsum("ij,ij->j", self.data, self.data)
        return self._diag.copy()

    def trace(self) -> float:
        """Total variance ``tr(C)``.

        Returns
        -------
        float
            ``tr(C)``.
        """
        return float(self.diag().sum())

    def rescaled(self) -> tuple[Covariance, float, int]:
        """This operator divided into the safe range of float64: ``(op, s, power)`` with ``C = s**power op``.

        Quadratic forms, eigenvalues and bounds of ``op`` times ``s**power`` are those of ``C``
        (:func:`repro._validation.unscale` refuses what float64 cannot hold), loadings are the same.

        Returns
        -------
        op : Covariance
            ``self`` for ordinarily scaled operators, else one on the backing array divided by ``s``.
        s : float
            The power of two of :func:`repro._validation.check_scale` for the backing array (1.0 inside
            ``[2^-256, 2^256]``).
        power : int
            2 when the data back the operator, 1 for a given matrix.
        """
        what = "data" if self.data is not None else "matrix"  # the data when both: the matrix may be inf
        if isinstance(self.data, CentredSparse):
            s = _scale_for(self.data.max_abs())
            op = self if s == 1.0 else Covariance._trusted(data=self.data.scaled(s), n_samples=self.n_samples)
            return op, s, 2
        backing = self.data if self.data is not None else self.matrix
        s = check_scale(backing, what) if backing.size else 1.0
        if s == 1.0:
            return self, 1.0, 2
        return Covariance(**{what: backing / s}, n_samples=self.n_samples), s, 2 if what == "data" else 1

    # ----- spectral
    def eigh(self, k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Leading ``k`` eigenpairs in descending order (all when ``k`` is None).

        Through the Gram matrix ``data data'`` when ``n_samples < n_features``, so the cost is
        ``O(min(N, D)^2 max(N, D))``. Eigenvectors are columns with the canonical sign of
        :func:`canonical_sign`.

        Parameters
        ----------
        k : int, optional
            Number of eigenpairs, at most the rank bound ``min(n_samples, n_features)`` through the data.

        Returns
        -------
        values : ndarray, shape (k,)
            Eigenvalues, descending.
        vectors : ndarray, shape (n_features, k)
            Unit eigenvectors as columns.
        """
        D = self.n_features
        rank_bound = D if self.matrix is not None else min(D, self.data.shape[0])
        k = rank_bound if k is None else check_int(k, "k", low=1, high=rank_bound)
        return self._eigh(k)

    def _eigh(self, k: int, start: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`eigh` for a valid ``k``; with ``start`` (``k = 1``: a vector near the leading eigenvector,
        e.g. the loadings being renormalized) through :func:`_top_eigvec` (Lanczos from it, certified),
        the same eigenpair to round-off."""
        D = self.n_features
        # Products of entries beyond 1e154 overflow and below 1e-154 underflow: decompose the operator
        # of data / s (or matrix / s), s a power of two (exact), and scale the eigenvalues back.
        op, s, power = self.rescaled()
        if op.matrix is None and isinstance(op.data, CentredSparse) and min(op.data.shape) > DENSE_EIGH_MAX:
            values, vectors = op.data.top_eigh(k, start)  # Lanczos on the operator: no N x N, no D x D
        elif op.matrix is not None or op.data.shape[0] >= D:
            M = op.dense()
            values, vectors = _top_eigh(M, k) if start is None else _top_eigvec(M, start)
        else:
            G = op.data @ op.data.T
            values, U = _top_eigh(G, k) if start is None else _top_eigvec(G, op.data @ start)
            if values[-1] <= 1e-12 * max(values[0], 1e-300):
                raise ValueError(f"k={k} exceeds the numerical rank of the data; ask for fewer eigenpairs.")
            vectors = op.data.T @ (U / np.sqrt(values))
        if s != 1.0:  # a positive leading eigenvalue float64 cannot hold is refused with the reason
            what = "data" if power == 2 else "matrix"
            unscale(values[:1], s, power, "eigenvalues", what, underflow=False)
            values = unscale(values, s, power, "eigenvalues", what)
        return values, _canonical_sign(vectors)

    def deflate(self, w, method: str = "projection") -> Covariance:
        """Remove the direction ``w`` (unit norm), returning a new operator.

        ``method="projection"``: ``(I - ww') C (I - ww')`` (Sigg & Buhmann 2008, Eq. 18);
        ``method="schur"``: ``C - C w w' C / (w' C w)`` (Mackey 2008, Schur complement deflation).
        Data-backed operators stay data-backed: projection maps ``X -> X (I - ww')`` and Schur maps
        ``X -> (I - q q') X`` with ``q = X w / ||X w||``, which yield exactly those covariances.

        Parameters
        ----------
        w : array_like, shape (n_features,)
            Unit-norm direction to remove.
        method : {"projection", "schur"}, default "projection"
            The deflation (see above).

        Returns
        -------
        Covariance
            The deflated operator (``self`` is left as it is).
        """
        w = check_vector(w, "w", self.n_features)
        if method not in ("projection", "schur"):
            raise ValueError(f"method must be 'projection' or 'schur'; got {method!r}.")
        return self._deflate(w, method)

    def _deflate(self, w: np.ndarray, method: str) -> Covariance:
        """:meth:`deflate` of a unit float64 ``w`` of ``n_features`` entries and a known ``method``,
        unchecked: the library's own deflations (a fitted component)."""
        if isinstance(self.data, CentredSparse):  # one more rank-one correction of the implicit factor
            return Covariance._trusted(data=self.data.deflate(w, method), n_samples=self.n_samples)
        if self.matrix is not None and self.data is None:
            fn = _projection_deflate if method == "projection" else _schur_deflate
            return Covariance._derived(fn(self.matrix, w), n_samples=self.n_samples)
        X = self.data
        Xw = X @ w
        if method == "projection":
            new = X - np.outer(Xw, w)
        else:
            norm2 = Xw @ Xw
            if norm2 <= 0:
                return Covariance(data=X.copy(), n_samples=self.n_samples)
            new = X - np.outer(Xw, Xw @ X) / norm2
        return Covariance(data=new, n_samples=self.n_samples)


def _overflow(X: np.ndarray, name: str) -> ValueError:
    """The error for finite data whose covariance float64 cannot hold."""
    return ValueError(
        f"{name} is finite but its centred values or their products overflow float64 (largest magnitude "
        f"{_max_abs(X):.3g}), so its covariance cannot be formed; divide {name} by a power of two first "
        f"(e.g. {name} / 2.0**600), which divides the covariance by its square."
    )


@validate_params({"C": [Covariance, "array-like"], "name": [str]}, prefer_skip_nested_validation=True)
def as_covariance(C, name: str = "C") -> Covariance:
    """Accept a :class:`Covariance` or a symmetric matrix and return a :class:`Covariance`.

    Parameters
    ----------
    C : Covariance or array_like, shape (n_features, n_features)
        Returned as is when a :class:`Covariance`; otherwise checked for symmetry and wrapped.
    name : str, default "C"
        The argument's name in error messages.

    Returns
    -------
    Covariance

    See Also
    --------
    Covariance.from_matrix

    Examples
    --------
    >>> from repro.linalg import as_covariance
    >>> C = as_covariance([[2.0, 1.0], [1.0, 2.0]])
    >>> C.shape, C.uses_data
    ((2, 2), False)
    """
    if isinstance(C, Covariance):
        return C
    return Covariance.from_matrix(C, name=name)


@validate_params({"W": ["array-like"], "C": [Covariance]}, prefer_skip_nested_validation=True)
def span_variances(W: np.ndarray, C: Covariance) -> np.ndarray:
    """Variance of ``C`` in the span of the first ``i`` rows of ``W``, for every ``i``.

    ``tr((V_i'V_i)^{-1} V_i' C V_i)`` with ``V_i`` the first ``i`` rows as columns (the adjusted
    variance of Shen & Huang 2008, :func:`repro.metrics.adjusted_variance`; the default ``score`` of
    the estimators). Computed on ``C`` scaled into the safe range of float64 (:meth:`Covariance.rescaled`)
    and scaled back; values float64 cannot hold are refused naming ``C``.

    Parameters
    ----------
    W : ndarray, shape (n_components, n_features)
        Loadings as rows (any norms; their spans are what counts).
    C : Covariance
        The covariance whose variance is measured.

    Returns
    -------
    ndarray, shape (n_components,)
        Non-decreasing; equals the cumulative ``w_j' C w_j`` for orthonormal rows.

    Examples
    --------
    >>> import numpy as np
    >>> from repro.linalg import Covariance, span_variances
    >>> C = Covariance.from_matrix(np.diag([3.0, 2.0, 1.0]))
    >>> span_variances(np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 0.0]]), C).round(12).tolist()  # e1 + e2, e2
    [2.5, 5.0]
    """
    return _span_variances(np.asarray(W, dtype=np.float64), C)


def _span_variances(W: np.ndarray, C: Covariance) -> np.ndarray:
    """:func:`span_variances` of a float64 ``W`` (rows of ``n_features``), unchecked (the estimators'
    ``score``)."""
    op, s, power = C.rescaled()
    V = W.T
    G = V.T @ V
    M = op.gram(V)
    out = np.empty(W.shape[0])
    for i in range(1, W.shape[0] + 1):
        out[i - 1] = np.trace(np.linalg.lstsq(G[:i, :i], M[:i, :i], rcond=None)[0])
    return unscale(out, s, power, "variances", "C", underflow=False)


@validate_params({"C": [Covariance, "array-like"], "k": [None, _COUNT]}, prefer_skip_nested_validation=True)
def leading_eigenpairs(C, k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Leading eigenpairs (descending) of a symmetric matrix or a :class:`Covariance`.

    Parameters
    ----------
    C : Covariance or array_like, shape (n_features, n_features)
        The symmetric matrix.
    k : int, optional
        Number of eigenpairs; all of them by default.

    Returns
    -------
    values : ndarray, shape (k,)
        Eigenvalues in descending order.
    vectors : ndarray, shape (n_features, k)
        Unit eigenvectors as columns, each signed by :func:`canonical_sign`.

    See Also
    --------
    canonical_sign, Covariance.eigh

    Examples
    --------
    >>> import numpy as np
    >>> from repro import leading_eigenpairs
    >>> values, vectors = leading_eigenpairs(np.array([[2.0, 1.0], [1.0, 2.0]]), k=1)
    >>> print(np.round(values, 6), np.round(vectors[:, 0], 6))
    [3.] [0.707107 0.707107]
    """
    return as_covariance(C).eigh(k)


def _top_eigh(A: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` leading eigenpairs of the symmetric ``A`` (descending): ``scipy.linalg.eigh`` with
    ``subset_by_index`` (LAPACK ``dsyevr``), or the full decomposition where that returns fewer pairs than
    asked (:func:`_top_eigh_full`). Every caller passes a float64 matrix built here from validated input."""
    n = A.shape[0]
    values, vectors = scipy.linalg.eigh(A, subset_by_index=[n - k, n - 1], check_finite=False)
    if vectors.shape[1] != k:
        return _top_eigh_full(A, k)
    return values[::-1].copy(), np.ascontiguousarray(vectors[:, ::-1])


def _top_eigh_full(A: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_top_eigh` by the full decomposition (``dsyevd``, NumPy's driver). ``dsyevr`` asked for the
    top ``k`` eigenpairs can report success with none: it did for a 16 x 16 covariance whose top
    eigenvalue is 5 nine times over (to round-off), and ``scipy.linalg.eigh(subset_by_index=...)``, the
    same driver, then returns an empty array."""
    values, vectors = np.linalg.eigh(A)
    n = A.shape[0]
    return values[n - k :][::-1].copy(), np.ascontiguousarray(vectors[:, n - k :][:, ::-1])


#: Smallest order for which :func:`_top_eigvec` runs Lanczos (below it ``dsyevr`` is as fast: 9-15 us at
#: n = 10, where 7-9 Lanczos steps took 16-20 us; at n = 50 and 100 ``dsyevr`` took 64 and 400-630 us,
#: Lanczos 33-39 and 69-83 us, measured on the K x K covariances of a sparse EM's supports).
LANCZOS_MIN = 32
#: Most Lanczos steps of :func:`_top_eigvec` before it gives the problem to ``dsyevr``.
LANCZOS_STEPS = 40
_POTRF = scipy.linalg.lapack.get_lapack_funcs("potrf", (np.empty((1, 1)),))
_EPS = float(np.finfo(np.float64).eps)


def _top_eigvec(A: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The leading eigenpair of the symmetric ``A`` as :func:`_top_eigh` with ``k = 1`` returns it, from a
    ``start`` near the leading eigenvector: Lanczos (:func:`repro._linalg_kernels.lanczos_top`) to a
    residual of ``4 eps ||A||_F``, then a certificate that no eigenvalue exceeds the Ritz value ``theta``
    by more than ``delta = 4 residual + 16 n eps ||A||_F``: the Cholesky factorization of
    ``(theta + delta) I - A`` exists (a start nearly orthogonal to the leading eigenvector gives a smaller
    Ritz value, which this refuses). Otherwise, and for ``n < LANCZOS_MIN``, ``dsyevr``. The value is the
    largest eigenvalue to within ``delta`` (``dsyevr``'s is to about ``n eps ||A||``), the vector its
    eigenvector to within ``delta`` over the gap, as ``dsyevr``'s."""
    n = A.shape[0]
    if n >= LANCZOS_MIN and A.dtype == np.float64 and A.flags.c_contiguous and _shortcuts.enabled:
        x = np.empty(n)
        v0 = np.ascontiguousarray(start, dtype=np.float64)
        theta, res, _ = lanczos_top(A, v0, LANCZOS_STEPS, 4.0 * _EPS, x)
        anorm = float(np.sqrt(np.vdot(A, A)))
        if res >= 0.0 and theta > 0.0 and np.isfinite(anorm):
            B = -A
            B.flat[:: n + 1] += theta + 4.0 * res + 16.0 * n * _EPS * anorm
            _, info = _POTRF(B, lower=1, clean=0, overwrite_a=1)
            if info == 0:
                return np.array([theta]), x[:, None]
    return _top_eigh(A, 1)


# --------------------------------------------------------------------------- renormalization
@validate_params({"C": [Covariance, "array-like"], "w": ["array-like"]}, prefer_skip_nested_validation=True)
def renormalize(C, w) -> tuple[np.ndarray, float]:
    """Optimal unit weights on the support of ``w``: the leading eigenvector of ``C[S, S]``.

    This is the "variational renormalization" of Moghaddam et al. (2006) used by Sigg & Buhmann (2008)
    for emPCAopt and SPCAopt. The sign is chosen so the result points the same way as ``w``.

    Parameters
    ----------
    C : Covariance or array_like, shape (n_features, n_features)
        The covariance.
    w : array_like, shape (n_features,)
        A vector whose non-zeros define the support ``S``; its values only fix the sign.

    Returns
    -------
    w_new : ndarray, shape (n_features,)
        Unit norm, zero outside ``S = {i : w_i != 0}``.
    variance : float
        ``w_new' C w_new``, the largest eigenvalue of ``C[S, S]``.

    See Also
    --------
    repro.EMSparsePCA : its ``renormalize=True`` applies this to every component.

    References
    ----------
    Moghaddam, B., Weiss, Y. & Avidan, S. (2006). Spectral bounds for sparse PCA: exact and greedy
    algorithms. NIPS 18 (variational renormalization). Sigg, C. D. & Buhmann, J. M. (2008). ICML,
    Section 2 and Figure 2 ("opt": variance after recomputing optimal weights on the support).

    Examples
    --------
    >>> import numpy as np
    >>> from repro import renormalize
    >>> C = np.array([[2.0, 1.0, 0.5], [1.0, 2.0, 0.5], [0.5, 0.5, 1.0]])
    >>> w_new, variance = renormalize(C, np.array([0.9, 0.1, 0.0]))
    >>> print(np.round(w_new, 6), round(variance, 6))
    [0.707107 0.707107 0.      ] 3.0
    """
    C = as_covariance(C)
    w = check_vector(w, "w", C.n_features)
    support = np.flatnonzero(w)
    if support.size == 0:
        raise ValueError("w is the zero vector; it has no support to renormalize on.")
    return _renormalize_support(C, support, w[support])


def _renormalize_support(C: Covariance, support: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, float]:
    """:func:`renormalize` given the support (increasing, non-empty) and the loadings on it (non-zero),
    without the checks or the passes over all features that find the support: for the library's own
    callers, which know both (a truncated-power step gets its support from the selection)."""
    # Lanczos from the loadings being renormalized (certified; dsyevr otherwise)
    if C.uses_data:  # through the smaller of C[S, S] and the Gram matrix of the support's columns
        values, vectors = Covariance._trusted(data=C._columns(support), n_samples=C.n_samples)._eigh(1, start)
    else:
        values, vectors = _top_eigvec(C.submatrix(support), start)
    v = vectors[:, 0]
    if v @ start < 0:
        v = -v
    out = np.zeros(C.n_features)
    out[support] = v
    return out, float(values[0])
