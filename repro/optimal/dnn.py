"""Bounds of the certified optimum specific to ``x >= 0`` (:func:`repro.optimal_sparse_pca` with
``nonneg=True``).

**The doubly non-negative (DNN) bound.** For any symmetric ``N >= 0`` (entrywise) and unit ``x >= 0``,
``x'Nx >= 0``, so ``x'Cx <= x'(C + N)x <= lambda_max(C + N)``: a bound on the non-negative optimum at
every cardinality (and on every support). Its best ``N`` is the dual of the DNN relaxation
``max <C, Y>, Y PSD, Y >= 0, tr Y = 1``. Where the non-negative optimum without a cardinality constraint
has few non-zeros (LRS: 11 of 93 bands), the relaxation is tight, and every ``k`` at or above that support
is proven at the root. ``N`` is found by L-BFGS-B on the smoothed largest eigenvalue
``(1/beta) log tr exp(beta (C + N))`` (gradient: the softmax-weighted eigenprojector) for increasing
``beta``; whatever ``N`` it returns, the bound is ``lambda_max(C + N)`` computed in float64 and rounded
upward (``eigvalsh`` is backward stable: the computed eigenvalue is exact for a matrix within
``c p eps ||M||`` of ``M``), so it is certified whether or not the minimization converged.

Plain NumPy/SciPy (no Numba): its cost is ``eigh`` of ``p x p`` per iteration, once per matrix (cached).
"""

from __future__ import annotations

import hashlib

import numpy as np
from sklearn.utils._param_validation import validate_params

from .._base import POSITIVE_INT
from .._validation import check_symmetric

__all__ = ["DNN_MAX_FEATURES", "certified_lambda_max", "dnn_bound"]

DNN_MAX_FEATURES = 200
"""Largest matrix the root computes the DNN bound for (an ``eigh`` per iteration, up to ``max_iter``
iterations: measured 0.5 s at p = 93 on LRS)."""

_CACHE: dict[str, tuple[float, np.ndarray]] = {}  # one entry: the figures solve one matrix at many k


def _smoothed(z, C, iu, beta):
    p = C.shape[0]
    N = np.zeros((p, p))
    N[iu] = z
    w, V = np.linalg.eigh(C + N + N.T)
    e = np.exp(beta * (w - w[-1]))
    s = float(e.sum())
    G = (V * (e / s)) @ V.T
    return w[-1] + np.log(s) / beta, 2.0 * G[iu]


def certified_lambda_max(M: np.ndarray) -> float:
    """``lambda_max`` of symmetric ``M``, rounded upward by the backward error of ``eigvalsh``.

    Parameters
    ----------
    M : ndarray (p, p)
        A symmetric matrix.

    Returns
    -------
    float
        An upper bound on the largest eigenvalue of ``M``.

    Examples
    --------
    >>> import numpy as np
    >>> from repro.optimal.dnn import certified_lambda_max
    >>> b = certified_lambda_max(np.array([[2.0, 1.0], [1.0, 2.0]]))
    >>> bool(3.0 <= b < 3.0 + 1e-12)
    True
    """
    p = M.shape[0]
    lam = float(np.linalg.eigvalsh(M)[-1])
    return lam + 8.0 * p * np.finfo(float).eps * float(np.linalg.norm(M))


@validate_params(
    {
        "C": ["array-like"],
        "betas": ["array-like"],
        "max_iter": [POSITIVE_INT],
    },
    prefer_skip_nested_validation=True,
)
def dnn_bound(C, *, betas=(10.0, 1e2, 1e3, 1e4, 1e5), max_iter: int = 300) -> tuple[float, np.ndarray]:
    """An upper bound on ``max x'Cx`` over unit ``x >= 0`` (any support): ``lambda_max(C + N)``, ``N >= 0``.

    The door of :func:`_dnn_bound` (module docstring): ``C`` is checked (a finite, symmetric, square
    matrix; a ``ValueError`` names it otherwise), and so are the smoothing parameters (positive, finite).

    Parameters
    ----------
    C : array_like (p, p)
        Symmetric matrix (a covariance, or any symmetric matrix: the bound needs no semi-definiteness).
    betas : sequence of float, default (10, 1e2, 1e3, 1e4, 1e5)
        The smoothing parameters, in turn (each warm-started from the last).
    max_iter : int, default 300
        L-BFGS-B iterations in all (at least one per smoothing parameter).

    Returns
    -------
    bound : float
        ``lambda_max(C + N)`` rounded upward (:func:`certified_lambda_max`): certified for any ``N >= 0``.
    N : ndarray (p, p)
        The symmetric, entrywise non-negative matrix with zero diagonal used.

    Examples
    --------
    >>> import numpy as np
    >>> from repro.optimal import dnn_bound
    >>> C = np.array([[1.0, -1.0], [-1.0, 1.0]])  # lambda_max 2; with x >= 0 the optimum is 1 (x = e_1)
    >>> b, N = dnn_bound(C)
    >>> bool(abs(b - 1.0) < 1e-6), bool((N >= 0).all())
    (True, True)
    """
    C = check_symmetric(C, "C")
    b = np.asarray(betas, dtype=float).ravel()
    if b.size == 0 or not np.all(np.isfinite(b)) or np.any(b <= 0):
        raise ValueError(f"betas must be a non-empty sequence of positive finite numbers; got {betas!r}.")
    return _dnn_bound(C, betas=tuple(float(v) for v in b), max_iter=int(max_iter))


def _dnn_bound(
    C: np.ndarray, *, betas=(10.0, 1e2, 1e3, 1e4, 1e5), max_iter: int = 300
) -> tuple[float, np.ndarray]:
    """:func:`dnn_bound` on a matrix the library checked (the root's: unchecked here), cached for one
    matrix (the figures solve one matrix at many ``k``)."""
    from scipy.optimize import minimize

    C = np.asarray(C, dtype=float)
    key = hashlib.sha1(C.tobytes() + repr((C.shape, tuple(betas), max_iter)).encode()).hexdigest()
    if key in _CACHE:
        b, N = _CACHE[key]
        return b, N.copy()
    p = C.shape[0]
    scale = float(np.max(np.abs(np.diag(C)))) if p else 0.0
    scale = scale if scale > 0 else 1.0
    C = C / scale  # the smoothing parameters assume a unit scale; N and the bound are scaled back
    iu = np.triu_indices(p, 1)
    z = np.zeros(iu[0].size)
    best = certified_lambda_max(C)
    bestN = np.zeros((p, p))
    if p > 1:
        per = max(max_iter // len(betas), 1)
        for beta in betas:
            r = minimize(
                _smoothed, z, args=(C, iu, float(beta)), jac=True, method="L-BFGS-B",
                bounds=[(0.0, None)] * z.size, options={"maxiter": per},
            )  # fmt: skip
            z = np.maximum(r.x, 0.0)
            N = np.zeros((p, p))
            N[iu] = z
            N = N + N.T
            b = certified_lambda_max(C + N)
            if b < best:
                best, bestN = b, N
    best, bestN = best * scale, bestN * scale
    best = float(np.nextafter(best, np.inf))  # the product's rounding
    _CACHE.clear()
    _CACHE[key] = (best, bestN)
    return best, bestN.copy()
