"""Shared pieces of the EM PCA family (Roweis 1997): results, subspace angles, argument checks, starts.

Conventions as in :mod:`repro.em_pca`: data ``(n, p)`` one sample per row, the paper's ``C`` (``p x k``) kept
as is, latent states as rows ``Z = X'``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import scipy.linalg
from sklearn.utils._param_validation import StrOptions, validate_params

from .._base import NONNEG_REAL, POSITIVE_INT, RANDOM_STATE, IntInterval
from .._dense import _canonical_sign
from .._validation import as_float, check_int, check_n_components, check_real, unscale


class EMPCAResult(NamedTuple):
    """Result of :func:`em_pca`.

    Attributes
    ----------
    components : ndarray, shape (n_components, n_features)
        Orthonormal eigenvector estimates, ordered by decreasing eigenvalue (canonical signs).
    explained_variance : ndarray, shape (n_components,)
        Eigenvalue estimates (sample covariance, ``ddof=1``).
    total_variance : float
        Trace of the sample covariance (``ddof=1``), for ``explained_variance_ratio_``.
    mean : ndarray, shape (n_features,)
    n_iter : int
        Number of m-steps performed.
    converged : bool
    history : dict of ndarray
        ``iteration`` (0..n_iter, 0 = initial condition), ``subspace_change`` (sine of the largest principal
        angle between the subspaces of iterations t-1 and t; NaN at 0), ``reconstruction_error`` (mean over
        samples of the squared reconstruction error of the e-step at iteration t, over observed entries when
        values are missing), ``eigenvalues`` (n_iter + 1, n_components) Rayleigh-Ritz eigenvalue guesses.
    """

    components: np.ndarray
    explained_variance: np.ndarray
    total_variance: float
    mean: np.ndarray
    n_iter: int
    converged: bool
    history: dict


class SensiblePCAResult(NamedTuple):
    """Result of :func:`sensible_pca`.

    Attributes
    ----------
    components : ndarray, shape (n_components, n_features)
        Orthonormal principal directions (left singular vectors of ``C``), ordered, canonical signs.
    C : ndarray, shape (n_features, n_components)
        The paper's loading matrix in the rotation ``C = components' diag(sqrt(explained_variance - eps))``.
    explained_variance : ndarray, shape (n_components,)
        Model variances along the components, ``|c_j|^2 + eps`` (ML, ``ddof=0``).
    noise_variance : float
        The global noise level ``eps``.
    mean : ndarray, shape (n_features,)
    log_likelihood : float
        Total log-likelihood of the training data at the returned parameters.
    n_iter : int
    converged : bool
    history : dict of ndarray
        ``iteration``, ``log_likelihood`` (total; of the observed entries with missing values;
        non-decreasing), ``noise_variance``, ``subspace_change`` (sine of the largest angle between the
        retained subspaces of iterations t-1 and t) and ``residual`` (the stopping measure, see
        :func:`sensible_pca`).
    """

    components: np.ndarray
    C: np.ndarray
    explained_variance: np.ndarray
    noise_variance: float
    mean: np.ndarray
    log_likelihood: float
    n_iter: int
    converged: bool
    history: dict


#: scikit-learn's constraints of the parameters of EM PCA (Sec. 3), shared by :class:`repro.EMPCA` and its
#: function forms; bounds that depend on the data are checked where the data are known.
EM_PCA_PARAMS = {
    "n_components": [POSITIVE_INT],
    "max_iter": [POSITIVE_INT],
    "tol": [NONNEG_REAL],
    "random_state": RANDOM_STATE,
    "init": [None, "array-like"],
    "callback": [None, callable],
    "n_oversamples": [IntInterval(0, None, closed="left"), StrOptions({"auto"})],
}
#: ... and of sensible PCA (Sec. 4), shared by :class:`repro.SensiblePCA` and its function forms.
SENSIBLE_PCA_PARAMS = {
    "n_components": [POSITIVE_INT],
    "algorithm": [StrOptions({"accelerated", "em"})],
    "max_iter": [POSITIVE_INT],
    "tol": [NONNEG_REAL],
    "random_state": RANDOM_STATE,
    "init": [None, "array-like"],
    "callback": [None, callable],
}


@validate_params({"A": ["array-like"], "B": ["array-like"]}, prefer_skip_nested_validation=True)
def subspace_sin(A, B) -> float:
    """Sine of the largest principal angle between the column spans of ``A`` and ``B``.

    Parameters
    ----------
    A, B : ndarray, shape (p, k) or (p,)
        Bases (need not be orthonormal); equal numbers of columns.

    Returns
    -------
    float
        ``|(I - Q_B Q_B') Q_A|_2`` in [0, 1]: 0 for the same subspace, 1 when some direction of one is
        orthogonal to the other.
    """
    A = as_float(A, "A")
    B = as_float(B, "B")
    A = A.reshape(A.shape[0], -1)
    B = B.reshape(B.shape[0], -1)
    if A.shape != B.shape:
        raise ValueError(f"A and B must have the same shape; got {A.shape} and {B.shape}.")
    return _sin_orth(np.linalg.qr(A)[0], np.linalg.qr(B)[0])


def _sin_orth(Q1: np.ndarray, Q2: np.ndarray) -> float:
    """``|Q1 - Q2 (Q2'Q1)|_2`` for orthonormal bases: exact for tiny angles (no ``sqrt(1 - cos^2)``)."""
    D = Q1 - Q2 @ (Q2.T @ Q1)
    if D.shape[1] == 1:
        return float(min(np.linalg.norm(D), 1.0))
    top = np.linalg.eigvalsh(D.T @ D)[-1]
    return float(min(math.sqrt(max(top, 0.0)), 1.0))


def _chol(G: np.ndarray, what: str) -> np.ndarray:
    try:
        return scipy.linalg.cho_factor(G, lower=True, check_finite=False)
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        raise ValueError(
            f"{what} is singular: the centred data have rank below n_components (e.g. duplicate or constant "
            "samples); ask for fewer components."
        ) from None


def _ritz(G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenpairs of a small symmetric matrix, descending."""
    g, V = np.linalg.eigh(G)
    return g[::-1].copy(), V[:, ::-1].copy()


def _check_common(n_components, max_iter, tol, n, p, *, spca: bool = False):
    high = min(n - 1, p - 1) if spca else min(n - 1, p)
    why = (
        "SensiblePCA needs at least one discarded dimension with positive variance for the noise level"
        if spca
        else "centring removes one dimension, so the data span at most n_samples - 1 directions"
    )
    k = check_n_components(n_components, n, p, high=high, why=why)
    max_iter = check_int(max_iter, "max_iter", low=1)
    tol = check_real(tol, "tol", low=0.0)
    return k, max_iter, tol


def _check_oversamples(n_oversamples, k: int, n: int, p: int, missing: bool = False) -> int:
    """Extra EM columns, capped so that ``k + s <= min(n - 1, p)``; "auto": ``min(k, 10)`` for k > 1 on
    complete data, else 0 (Roweis' iteration)."""
    if isinstance(n_oversamples, str) and n_oversamples == "auto":
        s = 0 if (k == 1 or missing) else min(k, 10)
    else:
        if isinstance(n_oversamples, str):
            raise ValueError(f"n_oversamples must be 'auto' or an int >= 0; got {n_oversamples!r}.")
        s = check_int(n_oversamples, "n_oversamples", low=0)
        if s and missing:
            raise ValueError("n_oversamples must be 0 when X has missing values (NaN).")
    return min(s, min(n - 1, p) - k)


def _initial_C(init, p: int, k: int, rng: np.random.Generator, extra: int = 0) -> np.ndarray:
    """``C0`` (p x (k + extra)): ``init`` transposed (extra columns random), or standard normal entries."""
    if init is None:
        return rng.standard_normal((p, k + extra))
    C0 = as_float(init, "init")
    if C0.ndim == 1:
        C0 = C0[None, :]
    if C0.shape != (k, p):
        raise ValueError(f"init must have shape (n_components, n_features) = ({k}, {p}); got {C0.shape}.")
    if not np.isfinite(C0).all():
        raise ValueError("init holds NaN or infinite values.")
    s = np.linalg.svd(C0, compute_uv=False)
    if s[-1] <= 1e-12 * max(s[0], 1e-300):
        raise ValueError("init must have linearly independent rows (rank n_components).")
    if extra:
        return np.ascontiguousarray(np.c_[C0.T, rng.standard_normal((p, extra))])
    return np.ascontiguousarray(C0.T)


def _check_callback(callback):
    if callback is not None and not callable(callback):
        raise ValueError(f"callback must be callable or None; got {callback!r}.")


def _new_history():
    return {"subspace_change": [math.nan], "reconstruction_error": [], "eigenvalues": []}


def _finish_history(h: dict) -> dict:
    out = {
        "iteration": np.arange(len(h["reconstruction_error"])),
        "subspace_change": np.array(h["subspace_change"][: len(h["reconstruction_error"])], dtype=float),
        "reconstruction_error": np.array(h["reconstruction_error"], dtype=float),
        "eigenvalues": np.array(h["eigenvalues"], dtype=float),
    }
    return out


def _rotate(Q: np.ndarray, G: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Ordered eigenvectors and eigenvalues in span Q from ``G = (YQ)'(YQ)`` (Sec. 3, closing remark)."""
    g, V = _ritz(G)
    W = _canonical_sign(Q @ V)
    return np.ascontiguousarray(W.T), np.maximum(g, 0.0) / (n - 1)


def _unscale_empca(res: EMPCAResult, s: float, shape) -> EMPCAResult:
    """An EMPCAResult of ``X / s`` as that of ``X`` (see :func:`repro._validation.check_scale`)."""
    h = dict(res.history)
    h["reconstruction_error"] = unscale(h["reconstruction_error"], s, 2, "squared errors")
    h["eigenvalues"] = unscale(h["eigenvalues"], s, 2, "variances")
    return res._replace(
        explained_variance=unscale(res.explained_variance, s, 2, "variances", underflow=False),
        total_variance=float(unscale(res.total_variance, s, 2, "variances")),
        mean=unscale(res.mean, s, 1, "means"),
        history=h,
    )


def _unscale_spca(res: SensiblePCAResult, s: float, shape) -> SensiblePCAResult:
    """A SensiblePCAResult of ``X / s`` as that of ``X``: the density of ``X`` is ``s^-p`` that of ``X/s``."""
    n, p = shape
    h = dict(res.history)
    h["log_likelihood"] = h["log_likelihood"] - n * p * math.log(s)
    h["noise_variance"] = unscale(h["noise_variance"], s, 2, "variances")
    return res._replace(
        C=unscale(res.C, s, 1, "loadings"),
        explained_variance=unscale(res.explained_variance, s, 2, "variances", underflow=False),
        noise_variance=float(unscale(res.noise_variance, s, 2, "variances", underflow=False)),
        mean=unscale(res.mean, s, 1, "means"),
        log_likelihood=res.log_likelihood - n * p * math.log(s),
        history=h,
    )
