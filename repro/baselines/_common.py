"""What the baselines share: their input, checked once at the door, and the path of one component.

A public baseline function validates its parameters (``validate_params``) and its ``X`` once, through
:func:`check_data` (the ``check=`` of :func:`repro._rescale.rescaled`, which then divides badly scaled data
by a power of two); the computation below it receives that array and builds its covariance factor with
:func:`data_factor`, which does not check it again. The methods that give one component per cardinality
(thresholding, SPCA) report it through :func:`cardinality_path`, as the EM of Sigg & Buhmann does.
"""

from __future__ import annotations

import time

import numpy as np

from .._validation import check_array, refuse_dask
from ..em_sparse_pca import CardinalityPath, renormalize_on_support
from ..em_sparse_pca.operators import _as_data
from ..linalg import Covariance

__all__ = ["cardinality_path", "check_data", "data_factor"]


def check_data(X) -> np.ndarray:
    """The one check of data rows ``X``: a finite float64 array with at least two samples."""
    return check_array(X, "X", min_samples=2)


def data_factor(X) -> tuple[np.ndarray, np.ndarray]:
    """``(A, mean)`` with ``A'A = C``, the sample covariance (ddof=1), of data checked by :func:`check_data`
    or of a :class:`repro.linalg.Covariance` (factored when given as a matrix; mean zeros).

    ``A = (X - mean) / sqrt(n - 1)``, the same array as ``Covariance.from_data(X).data``, built without a
    second pass over ``X`` to check it. A Dask array (passed through by :func:`repro._rescale.rescaled`)
    is refused with the reason.
    """
    if isinstance(X, Covariance):
        A, mean, _ = _as_data(X)
        return A, mean
    refuse_dask(X)
    mean = X.mean(axis=0)
    return Covariance._from_valid(X, mean=mean).data, mean


def cardinality_path(method: str, A, ks, solve, *, renormalize: bool, init_time: float, order=None):
    """The :class:`repro.em_sparse_pca.CardinalityPath` of a one-component method on the factor ``A``
    (``A'A = C``): ``solve(K)`` returns the unit-norm loadings of cardinality ``K`` and the iterations they
    took, for each ``K`` of ``ks`` in the order ``order`` (default: as given). Each call is timed with what
    follows it: the variance ``w'Cw`` and, with ``renormalize``, the optimal weights on the support of ``w``
    (``components_opt``, else NaN)."""
    n, D = ks.size, A.shape[1]
    comps = np.zeros((n, D))
    comps_opt = np.full((n, D), np.nan)
    var = np.empty(n)
    var_opt = np.full(n, np.nan)
    n_iter = np.empty(n, dtype=np.int64)
    times = np.empty(n)
    for j in range(n) if order is None else order:
        t1 = time.perf_counter()
        w, n_iter[j] = solve(int(ks[j]))
        comps[j] = w
        Aw = A @ w
        var[j] = float(Aw @ Aw)
        if renormalize:
            comps_opt[j], var_opt[j] = renormalize_on_support(A, w)
        times[j] = time.perf_counter() - t1
    return CardinalityPath(
        method=method,
        cardinalities=ks,
        components=comps,
        variance=var,
        components_opt=comps_opt,
        variance_opt=var_opt,
        n_iter=n_iter,
        time=times,
        init_time=init_time,
    )
