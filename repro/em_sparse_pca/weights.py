"""Weighted and streamed fits of :class:`repro.EMSparsePCA` and :func:`repro.em_sparse_pca_path`.

The sparse EM (Sigg & Buhmann 2008) needs the covariance only through products ``C w``, so a weighted
fit runs the unweighted iteration on the weighted covariance (:mod:`repro._weights`: frequency weights,
integer weights = repeated rows), applied through its data factor ``A`` (``A'A = S_w``, the rows of
positive weight centred at the weighted mean and scaled by ``sqrt(w_i / (W - 1))``) or its ``D x D``
matrix, by the cost model of :func:`repro.linalg.choose_operator`; ``partial_fit`` runs it on the running
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
from .._stream import ready, stream_batch
from .._validation import check_array, check_has_variance, check_scale
from .._weights import weighted_data_factor
from ..linalg import Covariance, choose_operator
from .restarts import DEFAULT_STARTS


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
    X = check_array(X, "X", allow_nan=True, min_samples=2)
    A, mean, m = weighted_data_factor(X, sample_weight, ddof=1)  # refuses NaN with the fix
    check_has_variance(X, "EMSparsePCA")
    s = check_scale(X)
    if s != 1.0:
        A, mean = A / s, mean / s
    kind = operator if operator != "auto" else choose_operator(m, X.shape[1], n_vectors=n_vectors)
    if kind == "covariance":
        M = A.T @ A
        op = Covariance._trusted(matrix=0.5 * (M + M.T), n_samples=m)
    else:
        op = Covariance._trusted(data=A, n_samples=m)
    return op, mean, m, s


def fit_sparse_weighted(est, X, sample_weight, weights):
    """:meth:`repro.EMSparsePCA.fit` with ``sample_weight`` (module docstring)."""
    if weights is not None:
        raise ValueError(
            "EMSparsePCA takes sample_weight; per-entry weights are not implemented for the sparse EM "
            "(NaN marks a missing entry; EMPCA(...).fit(X, weights=...) fits weighted entries without "
            "a cardinality)."
        )
    op, mean, m, s = weighted_covariance(X, sample_weight, est.operator, _n_vectors(est.n_restarts))
    est._fit_op(op, mean, m - 1, shape=(m, op.n_features))
    unscale_fitted(est, s, 2)
    return est


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
    return est
