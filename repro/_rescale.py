"""Fitting badly scaled data as ``X / s``: the :func:`rescaled` decorator of the data-level functions.

It sits above :mod:`repro._validation` (whose scale checks it uses) and :mod:`repro.linalg` (a given
:class:`~repro.linalg.Covariance` is passed through, or rescaled where the function asks), so that
validation depends on nothing in the library.
"""

from __future__ import annotations

import functools

import numpy as np

from ._validation import _max_abs, _scale_for, check_array, check_has_variance, is_dask, is_sparse
from .linalg import Covariance

__all__ = ["rescaled"]


def rescaled(unscale_result, method: str | None = None, *, check=None, covariance: bool = False, sparse=None):
    """Decorate a function of data ``X`` (first argument) so badly scaled data are fitted as ``X / s``.

    The wrapper validates ``X`` (NaN allowed; the function applies its own rules; a
    :class:`repro.linalg.Covariance` is passed through as it is), refuses data with no variance when
    ``method`` is given, and when :func:`check_scale` asks for it calls the function on
    ``X / s`` and returns ``unscale_result(result, s, X.shape)``. Ordinarily scaled data are passed
    through unchanged (``s = 1``), so results on them are exactly those of the undecorated function.
    A ``callback`` of the function sees the rescaled quantities.

    ``check``: the public function's own validation of an array ``X`` (``check(X)`` returns the validated
    array or raises). It is then the one check of ``X`` in the call: run here, before the scale is read,
    and the function receives the validated array (or ``X / s``) and must not check it again. Without
    it a float64 array is left to the function's own checks and other arrays are checked generically.

    ``covariance``: a :class:`repro.linalg.Covariance` backed by data is rescaled too (the function gets
    :meth:`repro.linalg.Covariance.rescaled`'s operator on the data ``/ s``; ``shape`` is then None): its
    dense form or products would overflow for data near 1e160. A given matrix is passed through.

    ``sparse``: the function's check of a scipy sparse ``X`` (``sparse(X)`` returns ``(X, s)``, e.g.
    :func:`repro._sparse.sparse_door`), for the functions that fit sparse matrices without densifying;
    without it a sparse ``X`` goes to ``check``, which refuses it with the reason.
    """

    def deco(func):
        @functools.wraps(func)
        def wrapper(X, *args, **kwargs):
            if isinstance(X, Covariance) and covariance:
                op, s, power = X.rescaled()
                if s != 1.0 and power == 2:
                    return unscale_result(func(op, *args, **kwargs), s, None)
            if isinstance(X, Covariance) or is_dask(X):  # chunked data: read by the function
                return func(X, *args, **kwargs)
            if sparse is not None and is_sparse(X):  # checked, never densified; X / s exactly
                arr, s = sparse(X)
                out = func(arr, *args, **kwargs)
                return out if s == 1.0 else unscale_result(out, s, arr.shape)
            if check is not None:  # the function's validation, once, here
                arr = check(X)
            else:  # a float64 array is checked by the function itself (no second pass here)
                float_array = isinstance(X, np.ndarray) and X.dtype == np.float64
                arr = X if float_array else check_array(X, "X", allow_nan=True)
            top = _max_abs(arr) if arr.ndim == 2 and arr.size else np.inf
            if not np.isfinite(top):
                return func(arr, *args, **kwargs)  # its own checks give the reason
            if method is not None:
                check_has_variance(arr, method)
            s = _scale_for(top)
            if s == 1.0:
                return func(arr, *args, **kwargs)
            return unscale_result(func(arr / s, *args, **kwargs), s, arr.shape)

        return wrapper

    return deco
