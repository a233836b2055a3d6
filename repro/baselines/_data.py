"""The input of the baselines that take data rows or a covariance: checked once at the door, then trusted.

A public baseline function validates its parameters (``validate_params``) and its ``X`` once, through
:func:`check_data` (the ``check=`` of :func:`repro._rescale.rescaled`, which then divides badly scaled data
by a power of two); the computation below it receives that array and builds its covariance factor with
:func:`data_factor`, which does not check it again.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_array, refuse_dask
from ..em_sparse_pca.operators import _as_data
from ..linalg import Covariance

__all__ = ["check_data", "data_factor"]


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
