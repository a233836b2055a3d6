"""``partial_fit`` of :class:`repro.EMPCA` and :class:`repro.SensiblePCA`: batches of rows in any order.

Each call merges its batch into a :class:`repro._stream.RunningScatter` (the weighted mean and scatter by
Chan et al.'s pairwise rule: exact ``p x p`` up to :data:`repro._stream.MAX_SCATTER_FEATURES` features,
a Frequent Directions sketch above) and refits from it, so memory does not grow with the number of rows
and, where the scatter is exact, the fit after the last batch is the batch fit of all rows to round-off:
the leading eigenpairs of the covariance (``ddof=1`` for EM PCA) and the maximum-likelihood PPCA of
Tipping & Bishop (1999) for sensible PCA (the fixed point the EM converges to). Where sketched, the
covariance used is within ``sketch_error_bound_`` of the true one in spectral norm (and never above it).

The batches are complete rows, arrays or scipy sparse matrices (CSR, CSC; dense and sparse batches may
be mixed): a sparse batch adds its weighted mean and scatter without becoming dense more than one row
block at a time, so the fit equals that of the dense rows. Missing values (NaN) need every row in every
iteration of the EM and are refused with the fix (``fit``, ``fit_blocks`` or a Dask array); per-entry
weights likewise. Above :data:`repro._stream.MAX_SCATTER_FEATURES` features the sketch grows with the
spectrum's tail (:mod:`repro._stream`), so ``sketch_error_bound_`` stays below
:data:`repro._stream.SKETCH_TOL` times the smallest ``explained_variance_`` unless the sketch reaches its
memory cap.
"""

from __future__ import annotations

import math

import numpy as np

from .._dense import _canonical_sign
from .._stream import ready, stream_batch
from .._threads import blas_limited
from .._validation import unscale
from ._common import EMPCAResult, SensiblePCAResult, _unscale_spca
from .sensible import _LOG_2PI, _noise_floor, _warn_low_rank


@blas_limited
def partial_fit_empca(est, X, sample_weight=None):
    """:meth:`repro.EMPCA.partial_fit`: merge the batch, then the leading eigenpairs of the covariance."""
    stream = stream_batch(est, X, sample_weight)
    if not ready(est, stream, 1):
        return est
    k = int(est.n_components)
    values, vectors = stream.top(k)
    denom = stream.weight - 1.0
    hist = {"iteration": np.zeros(1, int), "subspace_change": np.full(1, np.nan)}
    res = EMPCAResult(
        np.ascontiguousarray(_canonical_sign(vectors).T),
        np.maximum(values, 0.0) / denom,
        stream.trace / denom,
        stream.mean.copy(),
        0,
        True,
        hist,
    )
    s = stream.scale
    if s != 1.0:  # batches merged as X / s: the results of X
        res = res._replace(
            explained_variance=unscale(res.explained_variance, s, 2, "variances", underflow=False),
            total_variance=float(unscale(res.total_variance, s, 2, "variances")),
            mean=unscale(res.mean, s, 1, "means"),
        )
    return est._store(res, stream.p)


@blas_limited
def partial_fit_spca(est, X, sample_weight=None):
    """:meth:`repro.SensiblePCA.partial_fit`: merge the batch, then the maximum-likelihood PPCA of the
    covariance (``ddof=0``), the log-likelihood of the rows seen so far."""
    stream = stream_batch(est, X, sample_weight, min_features=2)
    k = int(est.n_components)
    p = stream.p
    if k > p - 1:
        raise ValueError(f"n_components={k} must be at most n_features - 1 = {p - 1} (one noise dimension).")
    if not ready(est, stream, 0, extra=1):
        return est
    W = stream.weight
    values, vectors = stream.top(k)
    values = values / W
    trS = stream.trace / W
    floor = _noise_floor(trS)
    eps = (trS - float(values.sum())) / (p - k)
    if eps < floor:
        _warn_low_rank(k, floor, floor)
        eps = floor
    values = np.maximum(values, eps)
    U = _canonical_sign(vectors)
    C = U * np.sqrt(values - eps)
    logdet = float(np.log(values).sum()) + (p - k) * math.log(eps)
    quad = k + (trS - float(values.sum())) / eps  # tr(Sigma^-1 S), S = the covariance (ddof=0)
    ll = -0.5 * W * (p * _LOG_2PI + logdet + quad)
    hist = {
        "iteration": np.zeros(1, int),
        "log_likelihood": np.array([ll]),
        "noise_variance": np.array([eps]),
    }
    res = SensiblePCAResult(
        np.ascontiguousarray(U.T), C, values, float(eps), stream.mean.copy(), float(ll), 0, True, hist
    )
    if stream.scale != 1.0:  # batches merged as X / s: the density of X (W rows of weight)
        res = _unscale_spca(res, stream.scale, (W, p))
    return est._store(res)
