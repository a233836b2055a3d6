"""Weighted and streamed fits of :class:`repro.EMSparsePCA` and :func:`repro.em_sparse_pca_path`.

Per-entry weights (``weights``, 0 = missing) define ``J = sum_ij w_ij (x_ij - mean_j - z_i a_j)^2`` for
one component ``a`` with ``card(a) <= K`` (and ``a >= 0`` with ``nonneg``); :func:`_sparse_component`
minimizes it by exact block-coordinate descent: per row the weighted least-squares ``z_i``, per column the
weighted least-squares ``(mean_j, a_j)`` and the decrease of ``J`` it brings, of which the ``K`` largest
are kept (``J`` separates over the columns given ``z``, so that is the exact constrained minimizer).
``J`` never increases. With unit weights ``min J = ||X_c||_F^2 - (n - 1) max a'Ca`` over unit ``K``-sparse
``a``: the sparse PCA problem itself, whose fixed points are the top eigenvectors of ``C`` on their
support (what the renormalized EM returns). The hard threshold is the exact minimizer of this ``L0``
problem (Sigg & Buhmann's M-step soft-thresholds, and renormalizes after). Further components are
fitted, one after another, on the weighted residual of the previous ones. No certificate is computed
for this objective (``certified_gap_`` is NaN).

The sparse EM (Sigg & Buhmann 2008) needs the covariance only through products ``C w``, so a weighted
fit runs the unweighted iteration on the weighted covariance (:mod:`repro._weights`: frequency weights,
integer weights = repeated rows), applied through its data factor ``A`` (``A'A = S_w``, the rows of
positive weight centred at the weighted mean and scaled by ``sqrt(w_i / (W - 1))``) or its ``D x D``
matrix, by the cost model of :func:`repro.linalg.choose_operator`. A scipy sparse ``X`` keeps that
factor implicit (:class:`repro._weights.WeightedCentredSparse`: ``A w = (diag(r) X) w - r (mu'w)``,
``r_i = sqrt(w_i / (W - 1))``), never a dense copy, its ``D x D`` matrix (where chosen) summed over
densified row blocks; per-entry weights with a sparse ``X`` are refused with the reason (a weight per
entry is a dense array the shape of ``X``). ``partial_fit`` runs it on the running
scatter of :mod:`repro._stream` (exact ``D x D``, or the Frequent Directions sketch ``B`` through
``B / sqrt(W - 1)``). The certificate (``certify``) and the screening bounds then hold for that
covariance: for a sketched stream, for the sketch, whose covariance is within ``sketch_error_bound_``
of the stream's in spectral norm.
"""

from __future__ import annotations

import math

import numpy as np

from .._base import unscale_fitted
from .._chunked import is_dask
from .._dense import _canonical_sign
from .._stream import ready, stream_batch
from .._threads import blas_limited
from .._validation import (
    check_array,
    check_cardinalities,
    check_has_variance,
    check_n_components,
    check_scale,
    is_sparse,
    warn_not_converged,
)
from .._weights import (
    check_entry_weights,
    check_sample_weight,
    refuse_sparse_entry_weights,
    weighted_data_factor,
    weighted_sparse_factor,
)
from ..linalg import Covariance, _choose_operator
from ._common import DEFAULT_STARTS


def _n_vectors(n_restarts) -> int:
    n_vec = n_restarts if n_restarts is not None else DEFAULT_STARTS
    return int(n_vec) if isinstance(n_vec, (int, np.integer)) else 1


def weighted_covariance(X, sample_weight, operator: str = "auto", n_vectors: int = 1):
    """``(op, mean, m, s)``: the weighted covariance of ``X`` (rows of positive weight ``m``) as an
    operator, the weighted mean, and the power of two ``s`` that badly scaled data were divided by."""
    if isinstance(X, Covariance) or is_dask(X):
        raise ValueError(
            "sample_weight takes an in-memory data matrix X; a Covariance or a Dask array carries no rows to "
            "weight (build the weighted covariance yourself: Covariance.from_matrix(S_w))."
        )
    if is_sparse(X):  # the weighted centring implicit in the factor, never densified
        A, mean, m, _, s = weighted_sparse_factor(X, sample_weight, 1, "EMSparsePCA")
        kind = operator
        if kind == "auto":
            kind = _choose_operator(m, A.shape[1], n_vectors=n_vectors, nnz=A.X.nnz)
        if kind == "covariance":
            return Covariance._trusted(matrix=A.gram(), n_samples=m), mean, m, s
        return Covariance._trusted(data=A, n_samples=m), mean, m, s
    X = check_array(X, "X", allow_nan=True, min_samples=2)
    A, mean, m = weighted_data_factor(X, sample_weight, ddof=1)  # refuses NaN with the fix
    check_has_variance(X, "EMSparsePCA")
    s = check_scale(X)
    if s != 1.0:
        A, mean = A / s, mean / s
    kind = operator if operator != "auto" else _choose_operator(m, X.shape[1], n_vectors=n_vectors)
    if kind == "covariance":
        M = A.T @ A
        op = Covariance._trusted(matrix=0.5 * (M + M.T), n_samples=m)
    else:
        op = Covariance._trusted(data=A, n_samples=m)
    return op, mean, m, s


def fit_sparse_weighted(est, X, sample_weight, weights):
    """:meth:`repro.EMSparsePCA.fit` with ``sample_weight`` (module docstring)."""
    if weights is not None:
        refuse_sparse_entry_weights(X, weights)
        if sample_weight is not None:  # one weight per row times one per entry
            n = np.shape(weights)[0]
            weights = (
                np.asarray(weights, dtype=np.float64)
                * check_sample_weight(sample_weight, n, ddof=None, min_positive=1)[:, None]
            )
        return fit_sparse_entry_weights(est, X, weights)
    op, mean, m, s = weighted_covariance(X, sample_weight, est.operator, _n_vectors(est.n_restarts))
    est._fit_op(op, mean, m - 1, shape=(m, op.n_features))
    unscale_fitted(est, s, 2)
    return est


@blas_limited
def partial_fit_sparse(est, X, sample_weight=None):
    """:meth:`repro.EMSparsePCA.partial_fit`: merge the batch, then the sparse EM on the running scatter."""
    stream = stream_batch(est, X, sample_weight)
    if not ready(est, stream, 1):
        return est
    denom = stream.weight - 1.0
    if stream.exact:
        op = Covariance._trusted(matrix=stream.scatter() / denom, n_samples=stream.n_rows)
    else:
        op = Covariance._trusted(data=stream.factor() / math.sqrt(denom), n_samples=stream.n_rows)
    est._fit_op(op, stream.mean.copy(), min(stream.n_rows - 1, stream.p))
    unscale_fitted(est, stream.scale, 2)  # batches merged as X / s: the results of X
    return est


# --------------------------------------------------------------------------- entry weights
def _row_coefficients(D, w, a):
    """E-step per row: ``z_i = sum_j w_ij a_j d_ij / sum_j w_ij a_j^2`` (0 for a row that sees no ``a``)."""
    num = (w * D) @ a
    den = w @ (a * a)
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def _column_step(X0, w, z, mean, K, nonneg, intercept):
    """M-step under ``card(a) <= K`` (and ``a >= 0``): per column the weighted least-squares ``a_j`` (with
    ``mean_j`` when ``intercept``) and the decrease of ``J`` it brings; the ``K`` largest decreases are kept
    (the problem separates over the columns, so this is the exact constrained minimizer)."""
    if intercept:  # (mean_j, a_j) jointly: centre z and x per column with the column's weights
        sw = w.sum(axis=0)
        zbar = (w.T @ z) / sw
        xbar = (w * X0).sum(axis=0) / sw
        szz = (w.T @ (z * z)) - sw * zbar * zbar
        szx = ((w * X0).T @ z) - sw * zbar * xbar
    else:
        D = X0 - mean
        szz = w.T @ (z * z)
        szx = (w * D).T @ z
    a = np.divide(szx, szz, out=np.zeros_like(szx), where=szz > 1e-300)
    if nonneg:
        a = np.maximum(a, 0.0)
    gain = a * szx  # = szx^2 / szz at the optimum, 0 where clipped
    keep = np.argsort(-gain, kind="stable")[:K]
    out = np.zeros_like(a)
    out[keep] = a[keep]
    if intercept:
        mean = xbar - zbar * out
    return out, mean


def _sparse_component(X0, w, mean, K, nonneg, max_iter, tol, intercept):
    """One weighted sparse component by alternating exact minimization of ``J``; returns
    ``(a, z, mean, J history, n_iter, converged)`` with ``a`` of unit norm."""
    D = np.where(w > 0, X0 - mean, 0.0)
    v = np.linalg.svd(D, full_matrices=False)[2][0]  # the start: the leading direction, thresholded
    v = np.abs(v) if nonneg else v
    a = np.zeros_like(v)
    top = np.argsort(-np.abs(v), kind="stable")[:K]
    a[top] = v[top]
    J_hist = []
    converged = False
    n_iter = 0
    for t in range(1, max_iter + 1):
        n_iter = t
        z = _row_coefficients(X0 - mean, w, a)
        a, mean = _column_step(X0, w, z, mean, K, nonneg, intercept)
        R = X0 - mean - np.outer(z, a)
        J_hist.append(float((w * R * R).sum()))
        if t > 1 and J_hist[-2] - J_hist[-1] <= tol * J_hist[-2]:
            converged = True
            break
    norm = float(np.linalg.norm(a))
    if norm == 0.0:
        raise ValueError("the weighted data have no variance along any allowed direction: nothing to fit.")
    a = _canonical_sign((a / norm)[:, None])[:, 0]
    z = _row_coefficients(X0 - mean, w, a)
    return a, z, mean, np.array(J_hist), n_iter, converged


def fit_sparse_entry_weights(est, X, weights):
    """:meth:`repro.EMSparsePCA.fit` with per-entry ``weights``: the components one after another, each
    minimizing ``J`` of the residual of the previous ones (the first with the mean)."""
    if is_dask(X) or isinstance(X, Covariance):
        raise ValueError("weights take an in-memory data matrix X (the shape of the weights).")
    refuse_sparse_entry_weights(X, weights)
    X = check_array(X, "X", allow_nan=True, min_samples=2)
    X0, w = check_entry_weights(weights, X)
    n, p = X.shape
    L = check_n_components(est.n_components, n, p, high=min(n - 1, p))
    ks = check_cardinalities(est.cardinality if est.cardinality is not None else p, p)
    if ks.size not in (1, L):
        raise ValueError(f"cardinality has {ks.size} entries; give one, or one per component ({L}).")
    ks = np.broadcast_to(ks, (L,))
    mean = (w * X0).sum(axis=0) / w.sum(axis=0)
    R = X0.copy()
    comps, ev, hist, iters = [], [], [], []
    J = 0.0
    for l in range(L):
        start = mean if l == 0 else np.zeros(p)
        a, z, mean_l, J_hist, n_iter, converged = _sparse_component(
            R, w, start, int(ks[l]), bool(est.nonneg), est.max_iter, est.tol, l == 0
        )
        if l == 0:
            mean = mean_l
            R = R - mean
        R = R - np.outer(z, a)
        if not converged:
            warn_not_converged("EMSparsePCA", n_iter, est.tol, "(per-entry weights)")
        comps.append(a)
        ev.append(float(np.var(z, ddof=1)))
        hist.append(J_hist)
        iters.append(n_iter)
        J = float((w * R * R).sum())
    W = np.array(comps)
    ev = np.array(ev)
    w_bar = float(w[w > 0].mean())
    total = float(ev.sum()) + J / ((n - 1) * w_bar)
    est.components_ = W
    est.explained_variance_ = ev
    est.explained_variance_ratio_ = ev / total
    est.n_iter_ = np.array(iters, dtype=np.int64)
    est.history_ = hist
    est.penalty_ = np.full(L, np.nan)
    est.cardinality_ = (W != 0).sum(axis=1)
    est.mean_ = mean
    est.n_features_in_ = p
    est.operator_ = "weights"
    est.certified_gap_ = np.full(L, np.nan)
    est.weighted_error_ = J
    return est
