"""The covariance as an operator for the EM (Sigg & Buhmann 2008, Sec. 3: only ``f = X'X w`` enters the
M-step).

:func:`_prepare` turns validated data (or a :class:`repro.linalg.Covariance`, or a Dask array) into the
working operator: through the data or the ``D x D`` covariance by the cost model of
:func:`repro.linalg.choose_operator`, or :class:`._ObservedData` for missing values; :func:`_rank_and_pc`
gives the numerical rank and the first principal component (the default start).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from .._chunked import DaskSource, check_client_matrix, check_observed, client_fits, gram_chunk, is_dask
from .._linalg_kernels import centred_float32, centred_scaled, lanczos_top
from .._sparse import DENSE_EIGH_MAX, CentredSparse, column_stats
from .._validation import _all_finite, check_array, is_sparse
from ..linalg import OPERATORS, SPARSE_FRACTION, Covariance, canonical_sign, choose_operator
from .missing import _ObservedData
from .screening import SCREEN_RANK


def _as_data(X, name: str = "X") -> tuple[np.ndarray, np.ndarray, int]:
    """Return ``(A, mean, n_samples)`` with ``A'A = C``, the sample covariance (ddof=1).

    ``X`` is a data matrix (rows are samples) or a :class:`repro.linalg.Covariance`; a covariance
    given only as a matrix is factored ``C = U L U'`` -> ``A = L^(1/2) U'`` so the EM can run on it.
    """
    if isinstance(X, Covariance):
        if X.data is not None:
            A = np.ascontiguousarray(X.data, dtype=np.float64)
        else:
            vals, vecs = np.linalg.eigh(X.matrix)
            A = np.ascontiguousarray((vecs * np.sqrt(np.clip(vals, 0.0, None))).T)
        return A, np.zeros(X.n_features), (X.n_samples or A.shape[0] + 1)
    X = check_array(X, name, min_samples=2)
    cov = Covariance.from_data(X)
    return cov.data, X.mean(axis=0), X.shape[0]


def _numerical_rank_and_pc(A: np.ndarray, need_rank: bool = True, n_left: int = 0):
    """Numerical rank of ``A`` and the leading right singular vector (through the smaller Gram matrix).

    With ``need_rank=False`` and ``N < D`` only the top eigenpairs of the Gram matrix are computed and the
    rank is reported as 0 or 1 (as :func:`_rank_and_pc` does). With ``n_left`` (and ``N < D``) also returns
    the ``n_left`` leading eigenvectors of ``A A'`` (``N x n_left``, orthonormal), else None."""
    N, D = A.shape
    left = None
    if N < D:
        G = A @ A.T
        q = min(n_left, N)
        if need_rank:
            vals, U = np.linalg.eigh(G)
        else:
            vals, U = scipy.linalg.eigh(G, subset_by_index=[N - max(q, 1), N - 1])
        if q:
            left = np.ascontiguousarray(U[:, ::-1][:, :q])
        u = U[:, -1]
        v = A.T @ u
        nv = np.linalg.norm(v)
        v = v / nv if nv > 0 else np.zeros(D)
    else:
        G = A.T @ A
        vals, V = np.linalg.eigh(G)
        v = V[:, -1].copy()
    top = max(vals[-1], 0.0)
    rank = int(np.sum(vals > 1e-10 * top)) if top > 0 else 0
    return rank, canonical_sign(v), left


def fit_function_form(est, X) -> tuple[np.ndarray, np.ndarray]:
    """Fit an estimator with a ``_fit_data(A, mean, dof)`` method on data or a :class:`Covariance`.

    Shared by the function forms (``em_sparse_pca``, ``spca_zou``); returns ``(components_,
    explained_variance_)``.
    """
    if isinstance(X, Covariance):
        A, mean, n = _as_data(X)
        est._fit_data(A, mean, min(n - 1, A.shape[0]))
    else:
        est.fit(X)
    return est.components_, est.explained_variance_


def _leading_pc(A: np.ndarray) -> np.ndarray:
    """Leading eigenvector of ``A'A`` (through ``A A'`` when ``N < D``), canonical sign."""
    _, vecs = Covariance._trusted(data=A).eigh(1)
    return vecs[:, 0]


def _quad_rows(op: Covariance, W) -> np.ndarray:
    """``w'Cw`` for the rows of ``W``, each through its support (``N K`` or ``K^2`` flops when K-sparse)."""
    op = getattr(op, "exact", op)  # a _SearchCovariance: through the float64 data
    h = np.empty(W.shape[0])
    D = W.shape[1]
    for r, w in enumerate(W):
        S = np.flatnonzero(w)
        if S.size * SPARSE_FRACTION >= D:  # dense: no copy of the support's columns
            h[r] = op.quad(w)
        elif op.matrix is not None:
            h[r] = w[S] @ op.matrix[np.ix_(S, S)] @ w[S]
        else:
            y = op._columns(S) @ w[S]
            h[r] = y @ y
    return h


#: The float32 search covariance (:class:`_SearchCovariance`) is formed when forming the float64 one would
#: cost at least this many multiply-adds (``N D^2 / 2``: about 2 ms at BLAS peak on one core); below it the
#: saving is smaller than the copy it needs.
SEARCH32_MIN_FLOPS = 2.5e7
#: ... and when the cardinality is at most this fraction of the features: the float64 weights of the
#: found support cost ``N K^2 / 2`` (its covariance), against the ``N D^2 / 4`` the float32 matrix saves;
#: measured on CBCL faces (D = 361): 1.2-1.3x faster at K = 10-50, about 1.0x at K = 120, 0.6-0.9x at
#: K = 180-250.
SEARCH32_MAX_SUPPORT = 0.3
#: ... and when every non-zero column norm of the scaled centred data is within this factor of the largest
#: (so that no product of two columns comes near float32's underflow after scaling by a power of two).
SEARCH32_MAX_RANGE = 2.0**40


class _CentredData(Covariance):
    """The sample covariance of complete data ``X`` (``N x D``, validated) through its scaled centred data
    ``A = (X - mean) / sqrt(N - 1)``, for the float32 search (:class:`_SearchCovariance`), without the
    ``N x D`` float64 array ``A``: one pass over ``X`` gives the column norms
    (:func:`repro._linalg_kernels.centred_scaled`), a second the float32 copy of ``A / s``
    (:meth:`float32`), and the weights of the support the search finds need only its columns
    (:meth:`_columns`: ``N K``), each entry computed as the full array would hold it. ``data`` forms that
    array on first use (nothing on the search's path asks for it: the copy and the third pass for the
    norms cost a CBCL fit (2429 x 361) 1.4 ms of about 11)."""

    def __init__(self, X: np.ndarray, mean: np.ndarray):
        N, D = X.shape
        self._X, self._mean, self._c = X, mean, float(np.sqrt(N - 1))
        self._full = self._last = None
        self.matrix = None
        self.n_features, self.n_samples = D, N
        self._diag = np.empty(D)
        centred_scaled(X, mean, self._c, np.empty((0, 0)), self._diag)  # the column norms alone

    @property
    def data(self) -> np.ndarray:
        if self._full is None:
            self._full = Covariance._from_valid(self._X, operator="data", mean=self._mean).data
        return self._full

    def _gather(self, idx) -> np.ndarray:
        """A new array of the columns ``idx`` (``N x len(idx)``, C-contiguous)."""
        if self._full is not None:
            return super()._gather(idx)
        return (self._X[:, idx] - self._mean[idx]) / self._c

    def _columns(self, idx) -> np.ndarray:
        """The columns ``idx``, for reading only: the last support's are kept (the weights of the found
        support and its variance ask for the same columns)."""
        idx = np.asarray(idx)
        key = idx.tobytes()
        if self._last is None or self._last[0] != key:
            self._last = key, self._gather(idx)
        return self._last[1]

    def quad(self, W):
        """``w'Cw`` through the non-zero columns of a vector ``w``; columns ``W`` as the base class."""
        if np.ndim(W) != 1:
            return super().quad(W)
        S = np.flatnonzero(W)
        y = self._columns(S) @ W[S]
        return float(y @ y)

    def float32(self, scale: float) -> np.ndarray:
        """``A * scale`` rounded to float32 (``scale`` a power of two), as ``np.multiply(A, scale,
        out=float32 array)`` gives it."""
        out = np.empty(self._X.shape, dtype=np.float32)
        centred_float32(self._X, self._mean, self._c, scale, out)
        return out


class _SearchCovariance(Covariance):
    """The sample covariance for a single component's search: every product through ``M~``, the
    covariance formed in float32 (``A32' A32``, ``A32`` the scaled centred data divided by a power of two
    and rounded to float32, stored as float64): half the cost of the float64 ``A'A``, which dominates a fit
    when ``N >> D``. ``exact`` is the float64 data factor (a :class:`_CentredData`), for the weights of the
    result (see :func:`repro.em_sparse_pca.components._exact_weights`), its variance and the trace.

    ``M~`` differs from ``C`` by about ``sqrt(N) * 6e-8 * ||a_i|| ||a_j||`` per entry (the rounding of the
    data and float32 sums), far below the sampling error of a sample covariance (``~ 1 / sqrt(N)`` in the
    same units) for any ``N`` below about 1e7. The EM, the first principal component (the default start),
    the renormalization of each restart's support and the truncated-power steps of ``"refine"`` all run on
    ``M~``, so they choose among supports whose variances are known to about 1e-7; the support chosen then
    gets its optimal weights from the float64 data. The result is exact for its support; the search can
    differ from the float64 one only where two supports tie to about 1e-7 (on standardized CBCL faces,
    K = 1..361, sparse and non-negative, emPCAopt and refined: the same support in 614 of 616 fits, the
    other two an exact tie between single features of unit variance). ``history_`` (the EM's own
    ``w'Cw``) carries that relative error of 1e-7.
    """

    def __init__(self, matrix, exact: Covariance):
        self._set(None, matrix, exact.n_samples)
        self.exact = exact

    @staticmethod
    def pays(N: int, D: int, K: int) -> bool:
        """Whether the float32 search pays for cardinality ``K`` on ``N x D`` data (by shape alone)."""
        return N > D and N * D * D / 2 >= SEARCH32_MIN_FLOPS and K <= SEARCH32_MAX_SUPPORT * D

    @classmethod
    def applies(cls, exact: Covariance, K: int) -> bool:
        """Whether the float32 search pays and is safe for cardinality ``K`` on the data-backed ``exact``
        (``N x D``)."""
        if not cls.pays(exact.n_samples, exact.n_features, K):
            return False
        norms = exact.column_norms()
        nz = norms[norms > 0]
        return nz.size > 0 and nz.max() <= SEARCH32_MAX_RANGE * nz.min()

    @classmethod
    def from_exact(cls, exact: _CentredData) -> _SearchCovariance:
        # s, a power of two >= the largest column norm: every entry of A / s and of A32'A32 is in [-1, 1]
        s = 2.0 ** math.frexp(float(exact.column_norms().max()))[1]
        A32 = exact.float32(1.0 / s)
        G = A32.T @ A32  # float32 syrk
        M = G.astype(np.float64)
        M += M.T
        M *= 0.5 * s * s
        return cls(M, exact)

    def diag(self):
        return self.exact.diag()

    def deflate(self, w, method="projection"):  # pragma: no cover - single components only (see _prepare)
        raise NotImplementedError("the float32 search covariance serves single components only")


def _prepare(
    X, operator: str, n_vectors: int, name: str = "X", checked: bool = False, search32: int = 0, finite=None
):
    """The working operator for ``X`` and what the fit needs of it.

    Returns ``(op, mean, n_samples)``: a :class:`repro.linalg.Covariance` (through the data or the
    ``D x D`` matrix, by :func:`repro.linalg.choose_operator` unless ``operator`` forces one) for complete
    data, or an :class:`_ObservedData` for data with missing values (NaN) or a Dask array that the cost
    model keeps as data. ``checked=True``: ``X`` already passed ``check_array`` (NaN allowed); ``finite``:
    whether that check found every entry finite (``None``: one more pass finds out).
    ``search32``: 0 (no), or the cardinality ``K`` of a single component with renormalization: where the
    cost model picks the covariance and :meth:`_SearchCovariance.applies`, a :class:`_SearchCovariance`
    instead of the float64 matrix.
    """
    if operator not in OPERATORS:
        raise ValueError(f"operator must be one of {OPERATORS}; got {operator!r}.")
    if isinstance(X, Covariance):
        op = X
        if operator == "covariance" and X.matrix is None:
            op = Covariance._trusted(matrix=X.dense(), n_samples=X.n_samples)
        elif operator == "data" and X.data is None:
            A, _, _ = _as_data(X)
            op = Covariance._trusted(data=A, n_samples=X.n_samples)
        return op, np.zeros(X.n_features), X.n_samples or X.n_features + 1
    if is_dask(X):  # the first pass: statistics and checks (repro._chunked's policy)
        src = DaskSource(X, name, min_samples=2)
        N, D = src.n, src.p
        kind = operator if operator != "auto" else choose_operator(N, D, n_vectors=n_vectors)
        if kind == "covariance" and operator == "auto" and not client_fits(D):
            kind = "data"  # the D x D matrix would not fit the client: iterate on the chunks instead
        if not src.missing and kind == "covariance":  # one more pass forms the D x D covariance
            check_client_matrix(D, name)
            (G,) = src.map_sum(gram_chunk, src.mean)
            return Covariance._derived(0.5 * (G + G.T) / (N - 1), n_samples=N), src.mean, N
        op = _ObservedData(src)
        return op, op.obs_mean, N
    if is_sparse(X):  # validated at the door: the implicit centred operator, never a dense copy
        mean = column_stats(X)[0]
        op = Covariance._from_sparse(X, operator=operator, n_vectors=n_vectors, mean=mean)
        return op, mean, X.shape[0]
    if not checked:
        X = check_array(X, name, min_samples=2, allow_nan=True)
    N, D = X.shape
    if finite is None:
        finite = _all_finite(X)  # one sum decides the usual case
    if not finite:  # NaN (missing) entries
        miss = np.isnan(X)
        check_observed(name, np.flatnonzero(miss.all(axis=1)), (~miss).sum(axis=0))
        op = _ObservedData(X)
        return op, op.obs_mean, N
    mean = X.mean(axis=0)
    kind = operator if operator != "auto" else choose_operator(N, D, n_vectors=n_vectors)
    if search32 and kind == "covariance" and _SearchCovariance.pays(N, D, search32):
        exact = _CentredData(X, mean)  # the column norms; no float64 copy of the centred data
        if _SearchCovariance.applies(exact, search32):
            return _SearchCovariance.from_exact(exact), mean, N
    op = Covariance._from_valid(X, operator=kind, n_vectors=n_vectors, mean=mean)
    return op, mean, N


def _rank_and_pc(op, need_rank: bool = True) -> tuple[int, np.ndarray]:
    """Numerical rank of the operator and its leading eigenvector (canonical sign); for data with missing
    values, of the covariance with missing entries set to the mean.

    With ``need_rank=False`` (one component: only "is there any variance" matters) the rank is reported as
    0 or 1 and a ``D x D`` matrix gets only its leading eigenpair (Lanczos, to machine precision), not a
    full eigendecomposition.
    """
    if isinstance(op, _ObservedData):
        op = op.imputed_covariance()
    if op.matrix is not None and not need_rank and op.n_features > 50:
        return _top_pc_lanczos(op.matrix)
    if isinstance(op.data, CentredSparse) and min(op.data.shape) > DENSE_EIGH_MAX:
        # Lanczos on the operator (neither A'A nor AA' formed); the rank is then its bound
        # min(N - 1, D): a deflation past the true rank is refused when no variance is left
        vals, V = op.data.top_eigh(1)
        N, D = op.data.shape
        rank = (min(N - 1, D) if need_rank else 1) if vals[0] > 0 else 0
        return rank, canonical_sign(V[:, 0])
    if op.matrix is not None:
        vals, V = np.linalg.eigh(op.matrix)
        v = V[:, -1].copy()
        top = max(vals[-1], 0.0)
        rank = int(np.sum(vals > 1e-10 * top)) if top > 0 else 0
        return rank, canonical_sign(v)
    rank, pc, left = _numerical_rank_and_pc(op.data, need_rank, SCREEN_RANK)
    op._gram_left = left  # kept for the screened iterations (:class:`_Screen`) on this operator
    return rank, pc


#: Most Lanczos steps of :func:`_top_pc_lanczos` before ARPACK takes over (CBCL faces: 10 steps).
PC_LANCZOS_STEPS = 100


def _top_pc_lanczos(M: np.ndarray) -> tuple[int, np.ndarray]:
    """Leading eigenvector of the ``D x D`` covariance ``M`` (positive semi-definite up to round-off), as
    ARPACK's ``eigsh(M, k=1, which="LA", v0=ones, tol=0)`` gives it.

    Lanczos with full reorthogonalization from the all-ones start (:func:`repro._linalg_kernels.lanczos_top`)
    to a residual ``r`` of ``4 eps ||M||_F``, accepted when its Ritz value ``theta`` is certified the largest
    eigenvalue by the trace: the eigenvalues of ``M`` are at least ``-delta`` (``delta``: ``1e-5`` of the
    largest diagonal entry, far above the float32 search matrix's round-off), so with ``2 theta >= tr(M) +
    2 r + D delta`` no other eigenvalue exceeds the one within ``r`` of ``theta``. That holds when the first
    component explains about half the variance or more (CBCL faces, standardized: 191 of 361; 10 steps,
    0.33 ms against ARPACK's 0.72 ms, the same vector to 2e-16). Otherwise, or without convergence in
    :data:`PC_LANCZOS_STEPS` steps, ARPACK, as before (which also restarts when the Krylov space of the start
    is invariant, e.g. when the leading eigenvector is orthogonal to the all-ones vector)."""
    import scipy.sparse.linalg

    D = M.shape[0]
    tr = float(np.trace(M))
    if not tr > 0:
        return 0, np.zeros(D)
    M = np.ascontiguousarray(M, dtype=np.float64)
    v = np.empty(D)
    theta, res, _ = lanczos_top(M, np.ones(D), PC_LANCZOS_STEPS, 4.0 * np.finfo(float).eps, v)
    delta = 1e-5 * float(np.max(np.diag(M)))
    if not (res >= 0.0 and 2.0 * theta >= tr + 2.0 * res + D * delta):
        try:
            vals, V = scipy.sparse.linalg.eigsh(M, k=1, which="LA", v0=np.ones(D), tol=0)
        except scipy.sparse.linalg.ArpackError:  # pragma: no cover - falls back to the dense solver
            vals, V = np.linalg.eigh(M)
        theta, v = vals[-1], V[:, -1].copy()
    return (1 if theta > 0 else 0), canonical_sign(v)


def _leading_pc_op(op) -> np.ndarray:
    if isinstance(op, _ObservedData):
        op = op.imputed_covariance()
    _, vecs = op.eigh(1)
    return vecs[:, 0]
