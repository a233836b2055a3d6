"""The covariance as an operator for the EM (Sigg & Buhmann 2008, Sec. 3: only ``f = X'X w`` enters the
M-step).

:func:`_prepare` turns validated data (or a :class:`repro.linalg.Covariance`, or a Dask array) into the
working operator: through the data or the ``D x D`` covariance by the cost model of
:func:`repro.linalg.choose_operator`, or :class:`._ObservedData` for missing values; :func:`_rank_and_pc`
gives the numerical rank and the first principal component (the default start).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from .._chunked import DaskSource, check_observed, gram_chunk, is_dask
from .._validation import _all_finite, check_array
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
    _, vecs = Covariance(data=A).eigh(1)
    return vecs[:, 0]


def _quad_rows(op: Covariance, W) -> np.ndarray:
    """``w'Cw`` for the rows of ``W``, each through its support (``N K`` or ``K^2`` flops when K-sparse)."""
    h = np.empty(W.shape[0])
    D = W.shape[1]
    for r, w in enumerate(W):
        S = np.flatnonzero(w)
        if S.size * SPARSE_FRACTION >= D:  # dense: no copy of the support's columns
            h[r] = op.quad(w)
        elif op.matrix is not None:
            h[r] = w[S] @ op.matrix[np.ix_(S, S)] @ w[S]
        else:
            y = op.data[:, S] @ w[S]
            h[r] = y @ y
    return h


def _prepare(X, operator: str, n_vectors: int, name: str = "X", checked: bool = False):
    """The working operator for ``X`` and what the fit needs of it.

    Returns ``(op, mean, n_samples)``: a :class:`repro.linalg.Covariance` (through the data or the
    ``D x D`` matrix, by :func:`repro.linalg.choose_operator` unless ``operator`` forces one) for complete
    data, or an :class:`_ObservedData` for data with missing values (NaN) or a Dask array that the cost
    model keeps as data. ``checked=True``: ``X`` already passed ``check_array`` (NaN allowed).
    """
    if operator not in OPERATORS:
        raise ValueError(f"operator must be one of {OPERATORS}; got {operator!r}.")
    if isinstance(X, Covariance):
        op = X
        if operator == "covariance" and X.matrix is None:
            op = Covariance(matrix=X.dense(), n_samples=X.n_samples)
        elif operator == "data" and X.data is None:
            A, _, _ = _as_data(X)
            op = Covariance(data=A, n_samples=X.n_samples)
        return op, np.zeros(X.n_features), X.n_samples or X.n_features + 1
    if is_dask(X):  # the first pass: statistics and checks (repro._chunked's policy)
        src = DaskSource(X, name, min_samples=2)
        N, D = src.n, src.p
        kind = operator if operator != "auto" else choose_operator(N, D, n_vectors=n_vectors)
        if not src.missing and kind == "covariance":  # one more pass forms the D x D covariance
            (G,) = src.map_sum(gram_chunk, src.mean)
            return Covariance(matrix=0.5 * (G + G.T) / (N - 1), n_samples=N), src.mean, N
        op = _ObservedData(src)
        return op, op.obs_mean, N
    if not checked:
        X = check_array(X, name, min_samples=2, allow_nan=True)
    N, D = X.shape
    if not _all_finite(X):  # one sum decides the usual case; NaN (missing) entries otherwise
        miss = np.isnan(X)
        check_observed(name, np.flatnonzero(miss.all(axis=1)), (~miss).sum(axis=0))
        op = _ObservedData(X)
        return op, op.obs_mean, N
    mean = X.mean(axis=0)
    op = Covariance._from_valid(X, operator=operator, n_vectors=n_vectors, mean=mean)
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
    if op.matrix is not None:
        vals, V = np.linalg.eigh(op.matrix)
        v = V[:, -1].copy()
        top = max(vals[-1], 0.0)
        rank = int(np.sum(vals > 1e-10 * top)) if top > 0 else 0
        return rank, canonical_sign(v)
    rank, pc, left = _numerical_rank_and_pc(op.data, need_rank, SCREEN_RANK)
    op._gram_left = left  # kept for the screened iterations (:class:`_Screen`) on this operator
    return rank, pc


def _top_pc_lanczos(M: np.ndarray) -> tuple[int, np.ndarray]:
    import scipy.sparse.linalg

    D = M.shape[0]
    if not np.trace(M) > 0:
        return 0, np.zeros(D)
    try:
        vals, V = scipy.sparse.linalg.eigsh(M, k=1, which="LA", v0=np.ones(D), tol=0)
    except scipy.sparse.linalg.ArpackError:  # pragma: no cover - falls back to the dense solver
        vals, V = np.linalg.eigh(M)
    v = V[:, -1].copy()
    return (1 if vals[-1] > 0 else 0), canonical_sign(v)


def _leading_pc_op(op) -> np.ndarray:
    if isinstance(op, _ObservedData):
        op = op.imputed_covariance()
    _, vecs = op.eigh(1)
    return vecs[:, 0]
