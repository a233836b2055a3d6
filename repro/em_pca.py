"""EM algorithms for PCA and for sensible PCA (SPCA) of Roweis (1997).

Conventions
-----------
Data are ``(n_samples, n_features)`` = ``(n, p)``: one sample per row, i.e. Roweis' ``p x n`` matrix ``Y``
transposed. The paper's ``C`` (``p x k``) is kept as is; its latent states ``X`` (``k x n`` in the paper) are
rows here, ``Z = X'`` (``n x k``). With ``Y`` centred:

EM PCA (zero-noise limit, Sec. 3)
    e-step ``X = (C'C)^-1 C'Y``, m-step ``C_new = Y X'(XX')^-1``. With ``C = QR`` (thin QR) and one pass over
    the data computing ``U = Y Q``, ``A = Y'U`` and ``G = U'U`` the two steps are ``Z = U R^-T`` and
    ``C_new = A G^-1 R`` (substitute ``Z`` into the m-step). Each iteration costs two products
    (``O(knp)``) plus ``O(pk^2)``; the ``p x p`` covariance is never formed. The same pass gives the
    Rayleigh-Ritz values ``eig(G)/(n-1)`` (the eigenvalue guesses of Fig. 1) and the reconstruction error
    ``(|Y|^2 - tr G)/n``. After convergence the subspace is rotated to ordered eigenvectors: with
    ``G = V diag(g) V'``, ``components_ = (Q V)'`` and ``explained_variance_ = g/(n-1)`` (the remark after the
    algorithm in Sec. 3), eigenvalues of the sample covariance with ``ddof=1`` as in scikit-learn.

    Convergence: the sine of the largest principal angle between the subspaces of successive ``C``,
    ``|(I - Q_new Q_new')Q|_2``, below ``tol``. EM PCA is subspace iteration on the sample covariance
    (Roweis Sec. 5), so it converges at rate ``lambda_{k+1}/lambda_k`` per iteration.

Missing values (Sec. 3.2)
    NaN marks a missing entry. The model is ``y = mu + C x`` and the EM minimizes
    ``J(mu, C, X, Y_missing) = |Y* - 1 mu' - Z C'|_F^2`` by exact block-coordinate descent:

    * generalized e-step, per row: ``x* = argmin |C_O x - (y_O - mu_O)|`` over its observed coordinates O,
      and the missing coordinates filled with ``y*_m = mu_m + C_m x*`` (zero residual there). This is the
      paper's "unique pair (x*, y*) minimizing |C x* - y*|"; kernel
      :func:`repro.kernels.em_pca.missing_estep` (one k x k solve per row).
    * m-step on the completed data ``Y*``, jointly in ``C`` and ``mu`` (``mu`` is the coefficient of a
      constant latent 1): ``C_new = Yc*' Zc (Zc'Zc)^-1`` with ``Yc*``, ``Zc`` the column-centred completed
      data and latents, and ``mu_new = mean(Y*) - C_new mean(Z)``.

    ``mu`` starts at the column means over observed entries and the missing entries at those means.
    ``J`` (= the squared error over observed entries after each e-step, ``history_["reconstruction_error"]``)
    never increases. With nothing missing, the iterates of ``span C`` are exactly those of the complete-data
    algorithm. ``mean_`` is the column mean of the final completed data, and ``components_`` /
    ``explained_variance_`` diagonalize the completed data's covariance inside the fitted subspace.
    Missing values are not imputed before fitting: the fills are re-estimated by every e-step.
    Caveat: ``J`` has no noise model, so with weak low-rank structure and many missing entries its
    infimum can be approached with fills (and the completed-data variance) growing without bound while the
    observed error keeps decreasing: the known overfitting of unregularized PCA with missing values (Ilin &
    Raiko 2010). The EM then does not converge and warns; with clear structure it converges in tens of
    iterations (see ``experiments/roweis1997_missing_data.py``).

Sensible PCA (Sec. 4)
    ``y = mu + C x + v``, ``v ~ N(0, eps I)``. e-step ``beta = C'(CC' + eps I)^-1 = M^-1 C'`` with
    ``M = C'C + eps I`` (the matrix inversion lemma of footnote 6, so no p x p matrix),
    ``mu_x = beta Y``, ``Sigma_x = n eps M^-1 + mu_x mu_x'`` (``n(I - beta C) = n eps M^-1``); m-step
    ``C_new = Y mu_x' Sigma_x^-1`` and ``eps_new = tr(YY' - C_new mu_x Y')/(n p)`` (the OCR'd text prints
    ``/n^2``; dividing by ``n p`` is the maximum-likelihood update of Tipping & Bishop 1999, Eq. 28,
    simplified with the new ``C``). In the one-pass form ``U = Y C``, ``A = Y'U``, ``G = U'U``:
    ``Y mu_x' = A M^-1`` and ``mu_x mu_x' = M^-1 G M^-1``.
    Its fixed point is the closed-form maximum-likelihood PPCA (:func:`ppca_closed_form`): with
    ``l_1 >= ... >= l_p`` the eigenvalues of the sample covariance normalized by ``n`` (ML, ``ddof=0``),
    ``eps = mean(l_{k+1..p})`` and ``C = U_k (L_k - eps I)^{1/2} R``. All SensiblePCA variances are ML
    (``ddof=0``).

    The EM as printed converges slowly in the column scales and ``eps`` (rate ``1 - 2 eps (l_j - eps)/l_j^2``)
    and not at all as ``eps -> 0``; a stopping rule on the step size then stops far from the fixed point.
    Hence (``algorithm="accelerated"``, the default): after the e-step and m-step, whose new ``C`` spans
    ``S C``, the likelihood is maximized exactly over the scales and ``eps`` within that span (the closed
    form on the k x k Ritz problem: an ECM step, the likelihood still never decreases); ``algorithm="em"``
    keeps the paper's iteration. Both stop on the distance to the fixed point (the residual of the
    stationarity equations ``S C = C (C'C + eps I)`` and ``eps = (tr S - tr C'C)/p``, plus for the
    accelerated form the Ritz residual and the Aitken-extrapolated change of ``eps``), not on the last step.
    When the centred data lie in k or fewer dimensions the ML ``eps`` is 0 and the likelihood unbounded:
    ``eps`` is kept at the floor ``1e-13 tr(S)`` and a :class:`LowRankWarning` says so; data with zero
    variance are refused. With missing values, the e-step is the Gaussian posterior of ``x`` given the
    observed coordinates of each row and the m-step solves for ``(c_j, mu_j)`` per column over the rows
    observing it (the exact EM of the noisy model; with nothing missing it is the paper's EM, iterate by
    iterate).

Data larger than memory: every iteration is one pass over the rows followed by O(pk^2) work, so the same
iteration runs on any data source of :mod:`repro._chunked` (the one data layer, shared with
:mod:`repro.em_sparse_pca`): an in-memory array (centred once into a copy up to 64 MiB, walked by centred
row blocks of 4 MiB above, so a large array is never copied), row blocks (:meth:`EMPCA.fit_blocks` /
:func:`em_pca_blocks`) or a Dask array passed to ``fit`` (one task per row chunk and iteration: e-step and
the sums ``Y'YQ``, ``Q'Y'YQ`` or their missing-value versions, then a small reduction), after one pass for
the mean, in ``O(kp + chunk)`` memory per worker. ``transform`` and ``score`` of a Dask array read it chunk
by chunk too.

EM PCA at k > 1 (default): the oversampled block EM with a Rayleigh-Ritz step (``n_oversamples="auto"``,
k + min(k, 10) columns): the top k Ritz vectors converge at rate ``lambda_{k+s+1}/lambda_k`` instead of
Roweis' ``lambda_{k+1}/lambda_k``. ``n_oversamples=0`` is Roweis' iteration (the paper's figures use k = 1,
where it is the default).

References
----------
S. Roweis. EM algorithms for PCA and SPCA. NIPS 10, 1997 (pp. 626-632).
M. E. Tipping and C. M. Bishop. Probabilistic principal component analysis. JRSS B 61(3), 1999.
X.-L. Meng and D. B. Rubin. Maximum likelihood estimation via the ECM algorithm. Biometrika 80(2), 1993.
A. Ilin and T. Raiko. Practical approaches to principal component analysis in the presence of missing
values. JMLR 11, 2010.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import scipy.linalg
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ._base import with_expected_failures
from ._chunked import (
    BlockSource,
    DaskSource,
    DenseSource,
    as_source,
    is_dask,
    missing_estep_chunk,
    missing_final_chunk,
    ppca_missing_chunk,
)
from ._chunked import missing_structure as _missing_structure
from ._rescale import rescaled
from ._threads import blas_limited
from ._validation import (
    _head,
    as_float,
    check_array,
    check_int,
    check_latent,
    check_n_components,
    check_n_features,
    check_random_state,
    check_real,
    unscale,
    warn_not_converged,
)
from .kernels.em_pca import missing_estep as _missing_estep
from .kernels.em_pca import rank1_mstep as _rank1_mstep
from .linalg import Covariance, canonical_sign

__all__ = [
    "EMPCA",
    "EMPCAResult",
    "LowRankWarning",
    "SensiblePCA",
    "SensiblePCAResult",
    "em_pca",
    "em_pca_blocks",
    "ppca_closed_form",
    "sensible_pca",
    "sensible_pca_blocks",
    "subspace_sin",
]

_LOG_2PI = math.log(2.0 * math.pi)


# =========================================================================== results
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


# =========================================================================== small helpers
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
    k = check_n_components(n_components, n, p)
    high = min(n - 1, p - 1) if spca else min(n - 1, p)
    if k > high:
        why = (
            "SensiblePCA needs at least one discarded dimension with positive variance for the noise level"
            if spca
            else "centring removes one dimension, so the data span at most n_samples - 1 directions"
        )
        raise ValueError(
            f"n_components={k} is too large for X of shape ({n}, {p}): it must be at most {high} ({why})."
        )
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


# =========================================================================== EM PCA loops
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


def _em_complete(source, C0, max_iter, tol, callback, k=None):
    """EM PCA on complete data (Roweis 1997, Sec. 3), any k; ``source`` provides the passes.

    ``C0`` may have more columns than the ``k`` components wanted (oversampling): the EM then runs on all
    of them and convergence is measured on the span of the top-k Rayleigh-Ritz vectors of each pass.
    Returns an orthonormal basis of the final (top-k) subspace and its Gram matrix ``(YQ)'(YQ)``.
    """
    n, ss = source.n, source.ss
    k_fit = C0.shape[1]
    k = k_fit if k is None else k
    C = C0
    Q, R = np.linalg.qr(C)
    hist = _new_history()
    change = math.nan
    Qk_prev = None
    n_iter = 0
    converged = False
    while True:
        A, G = source.products(Q)  # U = Y Q; A = Y'U; G = U'U
        g, V = _ritz(G)
        lam = g[:k] / (n - 1)
        Ck = C
        if k < k_fit:  # oversampled: follow the top-k Ritz subspace
            if not g[k - 1] > 1e-13 * g[0]:
                _chol(
                    np.zeros((1, 1)), "Y'Y restricted to the top-k Ritz subspace"
                )  # raises, as for k = k_fit
            Ck = Qk = Q @ V[:, :k]
            if Qk_prev is not None:
                change = _sin_orth(Qk_prev, Qk)
                hist["subspace_change"].append(change)
            Qk_prev = Qk
        hist["reconstruction_error"].append(max(ss - float(g[:k].sum()), 0.0) / n)
        hist["eigenvalues"].append(lam)
        if callback is not None and callback(n_iter, Ck, lam):
            converged = True
            break
        if change < tol:
            converged = True
            break
        if n_iter >= max_iter:
            break
        if k < k_fit:
            # oversampled block EM: span C_new = span A; orthonormalize A directly (no G^-1, so oversampled
            # columns beyond the rank of the data are harmless: the Rayleigh-Ritz step ranks them last)
            C_new = A
        else:
            # m-step C_new = Y X'(XX')^-1 = A G^-1 R  (e-step X = (C'C)^-1 C'Y = R^-1 Q'Y)
            C_new = A @ scipy.linalg.cho_solve(_chol(G, "Y'Y restricted to the current subspace"), R)
        Q_new, R = np.linalg.qr(C_new)
        if k == k_fit:
            change = _sin_orth(Q, Q_new)
            hist["subspace_change"].append(change)
        C, Q = C_new, Q_new
        n_iter += 1
    if k < k_fit:
        return Q @ V[:, :k], np.diag(g[:k]), n_iter, converged, _finish_history(hist)
    return Q, G, n_iter, converged, _finish_history(hist)


def _em_rank1(source, c0, max_iter, tol, callback):
    """EM PCA with k = 1 on complete in-memory data (a :class:`repro._chunked.DenseSource`): per iteration
    two BLAS products (over the centred copy, or block by block for a large array) and one O(p) kernel."""
    n, p, ss = source.n, source.p, source.ss
    r = float(np.linalg.norm(c0))
    q = np.ascontiguousarray(c0 / r)
    q_new = np.empty(p)
    u = np.empty(n)
    a = np.empty(p)
    errs, eigs, changes = [], [], [math.nan]
    change = math.nan
    n_iter = 0
    converged = False
    while True:
        g = source.rank1(q, u, a)
        lam = g / (n - 1)
        errs.append(max(ss - g, 0.0) / n)
        eigs.append(lam)
        if callback is not None and callback(n_iter, (q * r)[:, None], np.array([lam])):
            converged = True
            break
        if change < tol:
            converged = True
            break
        if n_iter >= max_iter:
            break
        if not g > 0.0:
            raise ValueError("the data have zero variance along the current direction; cannot continue.")
        # m-step: C_new = a r / g (Roweis 1997, Sec. 3, with x = u / r)
        r, change = _rank1_mstep(a, g, r, q, q_new)
        changes.append(change)
        q, q_new = q_new, q
        n_iter += 1
    hist = {
        "iteration": np.arange(len(errs)),
        "subspace_change": np.array(changes[: len(errs)], dtype=float),
        "reconstruction_error": np.array(errs, dtype=float),
        "eigenvalues": np.array(eigs, dtype=float)[:, None],
    }
    return q[:, None], np.array([[g]]), n_iter, converged, hist


def _em_missing(source, C0, max_iter, tol, callback):
    """EM PCA with missing entries (Roweis 1997, Sec. 3.2), block-coordinate descent on J (module doc).

    One pass over the source per iteration: per chunk the generalized e-step and the sums ``Y*'Z``, ``Z'Z``,
    ``sum z``, ``sum y*`` (:func:`repro._chunked.missing_estep_chunk`); one more pass at the end for the
    Rayleigh-Ritz step on the completed data. Returns ``(Q, G, mean, total_variance_times_(n-1), n_iter,
    converged, history)`` where ``G`` is the Gram matrix of the completed, centred data projected on the
    orthonormal basis ``Q``.
    """
    n = source.n
    mu = source.obs_mean.copy()
    # Scale for the change of the completed-data mean: total observed standard deviation.
    obs_var = source.obs_m2 / np.maximum(source.obs_count - 1, 1)
    scale = math.sqrt(max(float(obs_var.sum()), 1e-300))
    C = np.ascontiguousarray(C0)
    hist = _new_history()
    change = math.nan
    ybar_prev = None
    n_iter = 0
    converged = False
    while True:
        # generalized e-step (kernel) and the sums of the m-step, one pass
        sse, zsum, ZtZraw, YtZ, ysum = source.map_sum(missing_estep_chunk, C, mu)
        ybar = ysum / n
        zbar = zsum / n
        ZtZ = ZtZraw - n * np.outer(zbar, zbar)
        _, R = np.linalg.qr(C)
        lam = _ritz(R @ ZtZ @ R.T)[0] / (n - 1)  # variances of the reconstructions C z
        hist["reconstruction_error"].append(sse / n)
        hist["eigenvalues"].append(lam)
        if ybar_prev is not None:
            change = max(change, float(np.linalg.norm(ybar - ybar_prev)) / scale)
            hist["subspace_change"][-1] = change
        ybar_prev = ybar
        if callback is not None and callback(n_iter, C, lam):
            converged = True
            break
        if change < tol:
            converged = True
            break
        if n_iter >= max_iter:
            break
        # m-step on the completed data, jointly in C and mu: Yc*' Zc (Zc'Zc)^-1, mu = ybar - C zbar
        A = YtZ - n * np.outer(ybar, zbar)
        C_new = scipy.linalg.cho_solve(_chol(ZtZ, "The latent scatter Z'Z"), A.T).T
        change = subspace_sin(C, C_new)
        hist["subspace_change"].append(change)
        C = np.ascontiguousarray(C_new)
        mu = ybar - C @ zbar
        n_iter += 1
    # Rayleigh-Ritz on the completed data (fills of the last e-step) inside span C.
    Q = np.linalg.qr(C)[0]
    G, total = source.map_sum(missing_final_chunk, C, mu, ybar, Q)
    return Q, G, ybar, float(total), n_iter, converged, _finish_history(hist)


def _rotate(Q: np.ndarray, G: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Ordered eigenvectors and eigenvalues in span Q from ``G = (YQ)'(YQ)`` (Sec. 3, closing remark)."""
    g, V = _ritz(G)
    W = canonical_sign(Q @ V)
    return np.ascontiguousarray(W.T), np.maximum(g, 0.0) / (n - 1)


# =========================================================================== badly scaled data
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


def _unscale_ppca(res, s: float, shape):
    C, eps, mean = res
    eps = float(unscale(eps, s, 2, "variances", underflow=False))
    return unscale(C, s, 1, "loadings"), eps, unscale(mean, s, 1, "means")


# =========================================================================== EM PCA: public functions
@blas_limited
@rescaled(_unscale_empca, "EMPCA")
def em_pca(
    X,
    n_components: int = 1,
    *,
    max_iter: int = 1000,
    tol: float = 1e-6,
    random_state=None,
    init=None,
    callback: Callable | None = None,
    n_oversamples: int | str = "auto",
) -> EMPCAResult:
    """Leading principal components by the EM algorithm of Roweis (1997), with missing values (NaN).

    Parameters
    ----------
    X : array_like or dask.array.Array, shape (n_samples, n_features)
        Data; NaN marks a missing entry (Sec. 3.2 generalized e-step, kernel
        :func:`repro.kernels.em_pca.missing_estep`). Every row and column needs one observed entry. A Dask
        array is read once per iteration, one task per row chunk (e-step and accumulation), missing values
        included; integer and boolean dtypes are cast, complex and object ones refused, unknown chunk sizes
        learnt in the first pass and chunks along the features joined per task: see :mod:`repro._chunked`.
    n_components : int
        ``k``, in ``1..min(n_samples - 1, n_features)``.
    max_iter : int
        Largest number of m-steps; reaching it without convergence gives a ConvergenceWarning.
    tol : float
        Stop when the sine of the largest principal angle between successive subspaces is below ``tol``
        (with missing values, also the change of the completed-data mean relative to the total standard
        deviation). ``tol=0`` runs exactly ``max_iter`` iterations (Fig. 2 runs exactly 20).
    random_state : None, int or np.random.Generator
        Draws the initial ``C`` (standard normal entries) when ``init`` is None.
    init : array_like, shape (n_components, n_features), optional
        Initial ``C'`` (rows linearly independent).
    callback : callable, optional
        ``callback(t, C, eigenvalues)`` after the e-step of iteration ``t`` (t = 0 is the initial condition):
        ``C`` (n_features, n_components) is the current EM matrix (do not modify), ``eigenvalues`` the
        Rayleigh-Ritz eigenvalue guesses in span C. Returning True stops the EM (counted as converged).
        With ``n_oversamples > 0``, ``C`` is instead the orthonormal basis of the top-k Ritz vectors.
    n_oversamples : int or "auto", default "auto"
        Not in the paper (0 = Roweis' algorithm). Run the EM on ``k + n_oversamples`` columns (capped at
        ``min(n_samples - 1, n_features)``) with a Rayleigh-Ritz step in every pass (the Ritz vectors of
        ``G = (YQ)'(YQ)``), return the top ``k`` Ritz vectors, and measure convergence on their span. EM is
        subspace iteration, so the top k then converge at rate ``lambda_{k+s+1}/lambda_k`` instead of
        ``lambda_{k+1}/lambda_k``, for ``(k+s)/k`` times the cost per iteration: worth it when the spectrum
        decays slowly past k. ``"auto"``: ``min(k, 10)`` for ``k > 1`` on complete data, 0 (Roweis'
        iteration, the rank-one kernel) for ``k = 1`` or with missing values (the missing-value model has
        exactly k columns). Pass 0 for the paper's iteration at any k.

    Returns
    -------
    EMPCAResult

    Notes
    -----
    Complete data, ``k = 1``: each iteration is ``u = Y q``, ``a = Y'u`` (BLAS) and the O(p) kernel
    :func:`repro.kernels.em_pca.rank1_mstep`. Any ``k``: two BLAS-3 products and O(pk^2) work.
    Data whose largest magnitude is outside ``[2^-256, 2^256]`` (e.g. ``X * 1e-160``) are fitted as
    ``X / s`` with ``s`` a power of two and the variances multiplied back (PCA is scale-equivariant);
    constant data (no variance) are refused.

    References
    ----------
    S. Roweis. EM algorithms for PCA and SPCA. NIPS 10, 1997, Sec. 3 and 3.2.
    """
    return _em_pca_on(
        as_source(X, "X"), n_components, max_iter, tol, random_state, init, callback, n_oversamples
    )


@blas_limited
def em_pca_blocks(
    blocks,
    n_components: int = 1,
    *,
    max_iter: int = 1000,
    tol: float = 1e-6,
    random_state=None,
    init=None,
    callback: Callable | None = None,
    n_oversamples: int | str = "auto",
) -> EMPCAResult:
    """:func:`em_pca` for data larger than memory, read as row blocks once per EM iteration.

    Parameters
    ----------
    blocks : callable or re-iterable
        ``blocks()`` returns a fresh iterable of 2-D arrays (rows of the data, same number of columns),
        e.g. ``lambda: (X[i:i + 10000] for i in range(0, n, 10000))`` on a ``np.memmap``; or a list/tuple of
        arrays. NaN entries are missing values (the e-step per block, as for a Dask array).
    n_components, max_iter, tol, random_state, init, callback, n_oversamples
        As in :func:`em_pca`.

    Returns
    -------
    EMPCAResult
        The batch answer to round-off: each iteration accumulates ``A = sum_b Y_b'(Y_b Q)`` and
        ``G = sum_b (Y_b Q)'(Y_b Q)`` over the blocks, then the same ``O(pk^2)`` update. Memory
        ``O(kp + block)``; one extra pass for the mean.
    """
    source = BlockSource(blocks)
    return _em_pca_on(source, n_components, max_iter, tol, random_state, init, callback, n_oversamples)


def _em_setup(n, p, n_components, max_iter, tol, random_state, init, callback, n_oversamples, missing=False):
    """Check the EM PCA arguments and draw the start; returns ``(k, max_iter, tol, C0)``."""
    k, max_iter, tol = _check_common(n_components, max_iter, tol, n, p)
    _check_callback(callback)
    s = _check_oversamples(n_oversamples, k, n, p, missing)
    return k, max_iter, tol, _initial_C(init, p, k, check_random_state(random_state), s)


def _em_pca_on(source, n_components, max_iter, tol, random_state, init, callback, n_oversamples):
    """EM PCA on data held by a source (in memory, row blocks, Dask); returns an EMPCAResult."""
    n, p = source.n, source.p
    k, max_iter, tol, C0 = _em_setup(
        n, p, n_components, max_iter, tol, random_state, init, callback, n_oversamples, source.missing
    )
    if source.missing:
        Q, G, mean, total, n_iter, converged, hist = _em_missing(source, C0, max_iter, tol, callback)
        return _em_finish(Q, G, n, total, mean, n_iter, converged, hist, tol)
    if isinstance(source, DenseSource) and C0.shape[1] == 1:  # k = 1, no oversampling: the fused kernel
        Q, G, n_iter, converged, hist = _em_rank1(source, C0[:, 0], max_iter, tol, callback)
    else:
        Q, G, n_iter, converged, hist = _em_complete(source, C0, max_iter, tol, callback, k)
    return _em_finish(Q, G, n, source.ss, source.mean, n_iter, converged, hist, tol)


def _em_finish(Q, G, n, total, mean, n_iter, converged, hist, tol) -> EMPCAResult:
    if not converged:
        warn_not_converged("EMPCA", n_iter, tol, "EM PCA converges at rate lambda_{k+1}/lambda_k.")
    W, ev = _rotate(Q, G, n)
    return EMPCAResult(W, ev, total / (n - 1), mean, n_iter, converged, hist)


# =========================================================================== EM PCA: estimator
class EMPCA(TransformerMixin, BaseEstimator):
    """PCA by the EM algorithm of Roweis (1997): a few eigenvectors of large data, with missing values.

    Parameters
    ----------
    n_components : int, default 1
        Number of leading components ``k`` (``1..min(n_samples - 1, n_features)``).
    max_iter : int, default 1000
        Largest number of EM iterations (m-steps).
    tol : float, default 1e-6
        Convergence threshold on the sine of the largest principal angle between successive subspaces.
    random_state : None, int or np.random.Generator
        Seeds the random initial ``C``.
    init : array_like (n_components, n_features), optional
        Explicit initial ``C'``.
    callback : callable, optional
        See :func:`em_pca`.
    n_oversamples : int or "auto", default "auto"
        Extra EM columns with a Rayleigh-Ritz step (not in the paper): ``min(k, 10)`` for ``k > 1`` on
        complete data; 0 = Roweis' algorithm (the default for ``k = 1`` and with missing values); see
        :func:`em_pca`.

    Attributes
    ----------
    components_ : ndarray, shape (n_components, n_features)
        Unit-norm, orthogonal, ordered by decreasing eigenvalue.
    explained_variance_ : ndarray, shape (n_components,)
        Eigenvalues of the sample covariance (``ddof=1``).
    explained_variance_ratio_ : ndarray, shape (n_components,)
    mean_ : ndarray, shape (n_features,)
        Column means (of the completed data when values are missing).
    n_iter_ : int
    converged_ : bool
    history_ : dict of ndarray
        Per iteration (0 = initial condition): ``subspace_change``, ``reconstruction_error``,
        ``eigenvalues``; see :class:`EMPCAResult`.

    Examples
    --------
    >>> import numpy as np
    >>> from repro.em_pca import EMPCA
    >>> X = np.random.default_rng(0).standard_normal((200, 30)) * np.linspace(3, 1, 30)
    >>> EMPCA(n_components=2, random_state=0).fit(X).components_.shape
    (2, 30)

    References
    ----------
    S. Roweis. EM algorithms for PCA and SPCA. NIPS 10, 1997.
    """

    def __init__(
        self,
        n_components: int = 1,
        *,
        max_iter: int = 1000,
        tol: float = 1e-6,
        random_state=None,
        init=None,
        callback=None,
        n_oversamples: int | str = "auto",
    ):
        self.n_components = n_components
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.init = init
        self.callback = callback
        self.n_oversamples = n_oversamples

    def _store(self, res: EMPCAResult, n_features: int):
        self.components_ = res.components
        self.explained_variance_ = res.explained_variance
        self.explained_variance_ratio_ = res.explained_variance / res.total_variance
        self.mean_ = res.mean
        self.n_iter_ = res.n_iter
        self.converged_ = res.converged
        self.history_ = res.history
        self.n_features_in_ = n_features
        self.n_components_ = res.components.shape[0]
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # NaN marks a missing value (Sec. 3.2); an explicit oversampled EM runs on complete data only
        # ("auto" falls back to Roweis' iteration when X has missing values).
        oversampled = isinstance(self.n_oversamples, numbers.Integral) and self.n_oversamples > 0
        tags.input_tags.allow_nan = not oversampled
        if oversampled:
            why = (
                "fit refuses NaN with n_oversamples > 0 (complete data only), but transform still takes "
                "NaN as missing entries of new rows (least-squares coordinates), which the check forbids"
            )
            return with_expected_failures(tags, {"check_estimators_nan_inf": why})
        return tags

    def fit(self, X, y=None):
        """Fit on ``X`` (n_samples, n_features), an array or a Dask array; NaN entries are missing values."""
        res = em_pca(X, **self.get_params())  # the parameters are the function's keywords
        return self._store(res, res.components.shape[1])

    def fit_blocks(self, blocks):
        """Fit on row blocks read once per iteration (see :func:`em_pca_blocks`). Returns self."""
        res = em_pca_blocks(blocks, **self.get_params())  # the parameters are the function's keywords
        return self._store(res, res.components.shape[1])

    def transform(self, X):
        """Coordinates in the principal subspace, shape (n_samples, n_components).

        Complete rows are projected, ``(x - mean_) @ components_.T``; a row with NaN gets the least-squares
        coordinates of its observed entries (the generalized e-step).
        """
        check_is_fitted(self, "components_")
        if is_dask(X):  # one pass, chunk by chunk; the result (n_samples, n_components) in memory
            return DaskSource(X, "X", first_pass=False).map_rows(self.transform)
        X = check_array(X, "X", allow_nan=True)
        check_n_features(self, X)
        mask = np.isnan(X)
        if not mask.any():
            return (X - self.mean_) @ self.components_.T
        empty = np.flatnonzero(mask.all(axis=1))
        if empty.size:
            raise ValueError(f"X has row(s) {_head(empty)} with every entry missing: no coordinates.")
        C = np.ascontiguousarray(self.components_.T)
        ptr, idx = _missing_structure(mask)
        Yfill = np.where(mask, self.mean_, X)
        B = (Yfill - self.mean_) @ C
        Z = np.empty((X.shape[0], C.shape[1]))
        _missing_estep(Yfill, B, C, C.T @ C, self.mean_, ptr, idx, Z, np.empty(X.shape[1]))
        return Z

    def inverse_transform(self, Z):
        """Reconstructions ``Z @ components_ + mean_``, shape (n_samples, n_features)."""
        check_is_fitted(self, "components_")
        Z = check_latent(Z, self.components_.shape[0])
        return Z @ self.components_ + self.mean_


# =========================================================================== sensible PCA
_EPS_FLOOR = 1e-13  # smallest noise variance, relative to the total ML variance tr(S) (module docstring)


class LowRankWarning(UserWarning):
    """The centred data (nearly) lie in ``n_components`` dimensions: the ML noise variance is 0.

    The PPCA likelihood is then unbounded (``eps -> 0``); the fitted model keeps ``eps`` at its floor
    ``1e-13 tr(S)`` and is the maximum-likelihood model under that constraint.
    """


def _warn_user(msg: str, category=UserWarning) -> None:
    """Warn, pointing at the first frame outside this package (as ``warn_not_converged``)."""
    import os
    import sys
    import warnings

    pkg = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(0), 1
    while frame is not None and frame.f_code.co_filename.startswith(pkg):
        frame, level = frame.f_back, level + 1
    warnings.warn(msg, category, stacklevel=level)


def _noise_floor(trS: float, what: str = "X") -> float:
    if not trS > 0.0:
        raise ValueError(
            f"{what} has zero variance (every sample equal after centring): the Gaussian model N(mean, CC' + "
            "eps I) has no maximum-likelihood fit with eps > 0. Check the data (e.g. an all-zero matrix)."
        )
    return _EPS_FLOOR * trS


def _warn_low_rank(k: int, eps: float, floor: float) -> None:
    _warn_user(
        f"The centred data lie (to within {floor:.3g}) in at most n_components={k} dimensions: the ML noise "
        f"variance is 0 and the likelihood is unbounded. noise_variance_ is clamped to the floor {eps:.3g} "
        "(1e-13 of the total variance): the model is the maximum-likelihood one under eps >= floor, and "
        "score / sample describe a nearly singular Gaussian. Ask for fewer components.",
        LowRankWarning,
    )


def _restricted_ml(t: np.ndarray, trS: float, p: int, floor: float) -> tuple[np.ndarray, float, bool]:
    """ML scales and noise of PPCA with ``C`` restricted to a k-dimensional subspace.

    ``t`` (descending) are the Ritz values of ``S`` in the subspace, ``trS = tr S``. The likelihood depends on
    ``C`` through ``T = Q'SQ`` only, and is maximal for ``C'C`` with eigenvalues ``d2_j = max(t_j - eps, 0)``
    and ``eps = (tr S - sum_{j<=m} t_j)/(p - m)``, m the number of ``t_j`` above it (Tipping & Bishop 1999,
    Sec. 3.2, applied to the subspace). Returns ``(d2, eps, clamped)``; ``eps >= floor``.
    """
    k = t.size
    m = k
    while True:
        eps = (trS - float(t[:m].sum())) / (p - m)
        if m == 0 or t[m - 1] > eps:
            break
        m -= 1
    clamped = eps < floor
    eps = max(eps, floor)
    return np.maximum(t - eps, 0.0), eps, clamped


@rescaled(_unscale_ppca, "ppca_closed_form")
def ppca_closed_form(X, n_components: int) -> tuple[np.ndarray, float, np.ndarray]:
    """Closed-form maximum-likelihood PPCA (Tipping & Bishop 1999, Eqs. 7-8), the fixed point of SPCA.

    Parameters
    ----------
    X : array_like, shape (n_samples, n_features)
    n_components : int

    Returns
    -------
    C : ndarray, shape (n_features, n_components)
        ``U_k (L_k - eps I)^{1/2}`` (rotation ``R = I``; columns with canonical signs).
    noise_variance : float
        ``eps = mean(l_{k+1}, ..., l_p)`` with ``l`` the eigenvalues of the ML sample covariance
        ``Xc'Xc / n`` (``ddof=0``; zeros beyond the rank of the data count), never below the floor
        ``1e-13 tr(S)``. When the centred data lie in ``k`` or fewer dimensions (e.g. ``k = n_samples - 1``)
        the ML ``eps`` is 0 (computed as a round-off value, possibly negative) and the likelihood is
        unbounded: ``eps`` is then clamped to the floor, the columns use ``max(l_j - eps, 0)``, and a
        :class:`LowRankWarning` says so. The result is then the ML model under ``eps >= floor``.
    mean : ndarray, shape (n_features,)

    Raises
    ------
    ValueError
        When ``X`` has zero variance (e.g. all zeros): no Gaussian with ``eps > 0`` fits it.
    """
    X = check_array(X, "X", min_samples=2, min_features=2)
    n, p = X.shape
    k, _, _ = _check_common(n_components, 1, 0.0, n, p, spca=True)
    cov = Covariance.from_data(X, ddof=0)
    trS = float(cov.trace())
    floor = _noise_floor(trS)
    values, U = cov.eigh(k)
    eps = (trS - float(values.sum())) / (p - k)
    if eps < floor:
        _warn_low_rank(k, floor, floor)
        eps = floor
    C = U * np.sqrt(np.maximum(values - eps, 0.0))
    return C, float(eps), X.mean(axis=0)


def _spca_loglik(n, p, t, d2, eps, trS) -> float:
    """Total log-likelihood of the restricted-ML model (quad term simplified: ``t_j = d2_j + eps``)."""
    keep = d2 > 0
    var = d2 + eps
    quad = float(np.sum(t[keep] / var[keep])) + (trS - float(t[keep].sum())) / eps
    logdet = float(np.log(var[keep]).sum()) + (p - int(keep.sum())) * math.log(eps)
    return -0.5 * n * (p * _LOG_2PI + logdet + quad)


def _spca_fast_loop(source, C0, k, max_iter, tol, callback, floor):
    """Accelerated SPCA EM: Roweis' e/m-step for the subspace, then the exact ML scales and noise in it.

    Returns ``(W, d2, eps, loglik, n_iter, converged, clamped, hist)`` with ``W`` (p x k) orthonormal
    directions; ``C = W diag(sqrt(d2))``.
    """
    n, p = source.n, source.p
    trS = source.ss / n
    Q = np.linalg.qr(C0)[0]
    lls, epss, changes, resids = [], [], [math.nan], []
    W_prev = None
    eps_step = 0.0
    n_iter = 0
    converged = False
    while True:
        A, G = source.products(Q)  # U = Y Q; A = Y'U = n S Q; G = U'U = n Q'SQ
        g, V = _ritz(G)
        t = np.maximum(g[:k], 0.0) / n
        d2, eps, clamped = _restricted_ml(t, trS, p, floor)
        W = Q @ V[:, :k]
        D = np.sqrt(d2)
        # Residual of the Ritz pairs, |S W - W diag(t)|_F / |t|: 0 exactly when span W is an invariant
        # subspace, where the restricted ML model satisfies the stationarity equation S C = C (C'C + eps I)
        # of the full likelihood (its columns are W diag(D)); unlike that equation it also vanishes only
        # for an invariant span when some scales are 0 (C = 0 is a stationary point too).
        R = (A @ V[:, :k]) / n - W * t
        top = float(np.linalg.norm(t))
        resid = float(np.linalg.norm(R)) / top if top > 0 else 0.0
        # eps depends on the smallest retained Ritz values, whose residuals are tiny in that norm when the
        # noise is small: also require the distance of eps to its limit, estimated from its last change
        # and the observed linear rate (Aitken), to be below tol relative to eps.
        if epss:
            step = abs(eps - epss[-1])
            rate = min(step / eps_step, 0.99) if eps_step > 0 else 0.0
            eps_step = step
            resid = max(resid, step / eps / (1.0 - rate))
        if W_prev is not None:
            keep = d2 > 0
            changes.append(_sin_orth(W_prev[:, keep], W[:, keep]) if keep.any() else 0.0)
        W_prev = W
        lls.append(_spca_loglik(n, p, t, d2, eps, trS))
        epss.append(eps)
        resids.append(resid)
        if callback is not None and callback(n_iter, W * D, eps):
            converged = True
            break
        if resid < tol:
            converged = True
            break
        if n_iter >= max_iter:
            break
        # e-step + m-step of Sec. 4 at C = W D: C_new = Y mu_x' Sigma_x^-1 spans S C = A V D / n (D > 0); the
        # scales of C_new are replaced by the exact ML ones in the next pass, so only its span is kept:
        # Q = orth(A) (the same span without dividing by tiny scales).
        Q = np.linalg.qr(A)[0]
        n_iter += 1
    hist = _spca_history(lls, epss, changes, resids)
    return W, d2, eps, lls[-1], n_iter, converged, clamped, hist


def _spca_em_loop(source, C0, eps0, max_iter, tol, callback, floor):
    """Roweis' EM for SPCA (Sec. 4), one-pass form; returns (C, eps, loglik, n_iter, conv, clamped, hist)."""
    n, p, ss = source.n, source.p, source.ss
    trS = ss / n
    k = C0.shape[1]
    C, eps = C0, eps0
    lls, epss, changes, resids = [], [], [math.nan], []
    n_iter = 0
    converged = False
    eye = np.eye(k)
    while True:
        A, G = source.products(C)  # U = Y C; A = Y'U = n S C; G = U'U = n C'SC
        CtC = C.T @ C
        M = CtC + eps * eye
        cf = _chol(M, "C'C + eps I")
        Minv = scipy.linalg.cho_solve(cf, eye)
        logdetM = 2.0 * float(np.log(np.diag(cf[0])).sum())
        # log N(Y; 0, CC' + eps I) by the inversion lemma and the determinant lemma (footnote 6)
        quad = (ss - float(np.sum(Minv * G))) / eps
        ll = -0.5 * n * (p * _LOG_2PI + (p - k) * math.log(eps) + logdetM) - 0.5 * quad
        # stationarity of the likelihood: S C = C M and eps = (tr S - tr C'C) / p (Tipping & Bishop 1999)
        SC = A / n
        top = float(np.linalg.norm(SC))
        resid = float(np.linalg.norm(SC - C @ M)) / top if top > 0 else 0.0
        if eps > floor:
            resid = max(resid, abs(trS - float(np.trace(CtC)) - p * eps) / (p * eps))
        lls.append(ll)
        epss.append(eps)
        resids.append(resid)
        if callback is not None and callback(n_iter, C, eps):
            converged = True
            break
        if resid < tol:
            converged = True
            break
        if n_iter >= max_iter:
            break
        P = A @ Minv  # Y mu_x'                      (e-step: mu_x = beta Y, beta = M^-1 C')
        # m-step C_new = Y mu_x' Sigma_x^-1 with Sigma_x = n eps M^-1 + M^-1 G M^-1 = M^-1 (n eps M + G) M^-1,
        # so C_new = A (n eps M + G)^-1 M: no second inverse of M (safe when eps is tiny).
        H = n * eps * M + G
        try:
            C_new = A @ scipy.linalg.cho_solve(scipy.linalg.cho_factor(H, lower=True, check_finite=False), M)
        except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
            C_new = A @ (np.linalg.pinv(H, hermitian=True) @ M)
        eps_new = max((ss - float(np.sum(C_new * P))) / (n * p), floor)  # tr(YY' - C_new mu_x Y')/(np)
        changes.append(subspace_sin(C, C_new))
        C, eps = C_new, eps_new
        n_iter += 1
    hist = _spca_history(lls, epss, changes, resids)
    return C, eps, lls[-1], n_iter, converged, eps <= floor, hist


def _spca_history(lls, epss, changes, resids) -> dict:
    """The per-iteration record of a sensible PCA loop (``SensiblePCA.history_``)."""
    return {
        "iteration": np.arange(len(lls)),
        "log_likelihood": np.array(lls),
        "noise_variance": np.array(epss),
        "subspace_change": np.array(changes[: len(lls)], dtype=float),
        "residual": np.array(resids),
    }


def _spca_missing_loop(source, C0, eps0, max_iter, tol, callback, floor):
    """EM for SPCA with missing values (Sec. 4 model, Sec. 3.2 idea): exact e-step on the observed entries.

    Per row the posterior of ``x`` given ``y_O`` (kernel :func:`repro.kernels.em_pca.ppca_missing_estep`);
    the m-step solves, per column j, for ``(c_j, mu_j)`` jointly over the rows observing j, and
    ``eps = (sum_obs y^2 - sum_j [c_j; mu_j]' B_j) / n_observed``. The observed-data likelihood never
    decreases. Stopping: the largest relative change of C's subspace, column scales and eps, divided by
    ``1 - rate`` with the linear rate estimated from two successive changes (Aitken), below ``tol``.
    Returns ``(C, eps, loglik, mean, n_iter, converged, clamped, hist)``.
    """
    p = source.p
    k = C0.shape[1]
    m0 = source.obs_mean
    n_obs = float(source.obs_count.sum())
    ss_obs = float(source.obs_m2.sum())
    C, eps, mu = np.ascontiguousarray(C0), eps0, np.zeros(p)
    lls, epss, changes, resids = [], [], [math.nan], []
    prev_change = 0.0
    measure = math.inf
    n_iter = 0
    converged = False
    while True:
        ll, Stot, Hmiss, B = source.map_sum(ppca_missing_chunk, C, mu, eps, m0)
        lls.append(float(ll))
        epss.append(eps)
        resids.append(measure)
        if callback is not None and callback(n_iter, C, eps):
            converged = True
            break
        if measure < tol:
            converged = True
            break
        if n_iter >= max_iter:
            break
        H = Stot[None, :, :] - Hmiss
        theta = np.linalg.solve(H, B[:, :, None])[:, :, 0]
        C_new = np.ascontiguousarray(theta[:, :k])
        mu = theta[:, k].copy()
        eps_new = max((ss_obs - float(np.sum(theta * B))) / n_obs, floor)
        d2_new = np.linalg.eigvalsh(C_new.T @ C_new)
        d2 = np.linalg.eigvalsh(C.T @ C)
        change = max(
            subspace_sin(C, C_new),
            abs(eps_new - eps) / eps_new,
            float(np.max(np.abs(d2_new - d2) / np.maximum(d2_new, eps_new))),
        )
        rate = min(change / prev_change, 0.99) if prev_change > 0 else 0.0
        measure = change / (1.0 - rate)
        prev_change = change
        changes.append(subspace_sin(C, C_new))
        C, eps = C_new, eps_new
        n_iter += 1
    hist = _spca_history(lls, epss, changes, resids)
    return C, eps, lls[-1], m0 + mu, n_iter, converged, eps <= floor, hist


def _spca_result_from_C(C, eps, ll, mean, n_iter, converged, hist) -> SensiblePCAResult:
    U, d, _ = np.linalg.svd(C, full_matrices=False)
    U = canonical_sign(U)
    W = np.ascontiguousarray(U.T)
    return SensiblePCAResult(W, U * d, d * d + eps, float(eps), mean, float(ll), n_iter, converged, hist)


def _spca_init(init, p, k, ss, n, rng, extra=0):
    C0 = _initial_C(init, p, k, rng, extra)
    scale = ss / (n * p)
    if init is None:
        C0 = C0 * math.sqrt(scale)
    return C0, max(scale, 1e-300)


_SPCA_ALGORITHMS = ("accelerated", "em")


@blas_limited
@rescaled(_unscale_spca, "SensiblePCA")
def sensible_pca(
    X,
    n_components: int = 1,
    *,
    algorithm: str = "accelerated",
    max_iter: int = 5000,
    tol: float = 1e-8,
    random_state=None,
    init=None,
    callback: Callable | None = None,
) -> SensiblePCAResult:
    """Sensible PCA (Roweis 1997, Sec. 4): EM for ``C`` and the global noise level ``eps``.

    Parameters
    ----------
    X : array_like or dask.array.Array, shape (n_samples, n_features)
        Data; NaN marks a missing entry. With missing values the EM of Sec. 4 runs with the generalized
        e-step of Sec. 3.2 made exact for the noisy model: per row the posterior of ``x`` given the
        observed coordinates, ``N(M_O^-1 C_O'(y_O - mu_O), eps M_O^-1)`` with ``M_O = C_O'C_O + eps I``,
        and per column the m-step of ``(c_j, mu_j)`` over the rows observing it (the EM for PPCA with
        missing data, Tipping & Bishop 1999, App. 4.1 / Ilin & Raiko 2010); ``algorithm`` is then ignored
        (the accelerated step needs complete rows) and ``tol`` applies to the Aitken-extrapolated change
        of the parameters. A Dask array is read once per iteration, one task per row chunk.
    n_components : int
        ``k`` in ``1..min(n_samples - 1, n_features - 1)``.
    algorithm : {"accelerated", "em"}, default "accelerated"
        ``"em"``: Roweis' EM as printed (e-step Eq. 2, m-step of Sec. 4), from a random start. Its subspace
        converges like EM PCA (rate ``l_{k+1}/l_k``), but the column scales and ``eps`` converge at rate
        ``1 - 2 eps (l_j - eps)/l_j^2``: thousands of iterations when the noise is small relative to the
        signal (6,201 for k = 5 on the CBCL faces at ``tol=1e-5``), and none at all as ``eps -> 0``.
        ``"accelerated"`` (default): each iteration is the same e-step and m-step, whose new ``C`` spans
        ``S C`` (S the ML sample covariance), followed by an exact conditional maximization of the
        likelihood over the scales of ``C`` within that span and over ``eps`` (closed form in the k x k Ritz
        problem, :func:`ppca_closed_form` restricted to the subspace). The likelihood still never decreases
        (an ECM algorithm), the cost per iteration is the same two products over the data, and the scales
        and ``eps`` are exact for the current subspace, so the iterations are those of EM PCA: a few tens
        (34 for k = 5 on CBCL at ``tol=1e-5``, 0.06 s; 82 at ``tol=1e-8``), independent of the noise level.
    max_iter : int
    tol : float
        Stop when the relative residual of the likelihood's stationarity equations is below ``tol``:
        ``|S C - C (C'C + eps I)|_F / |S C|_F`` (for ``"em"`` also ``|tr S - tr C'C - p eps| / (p eps)``),
        which vanish exactly at the ML fixed point (Tipping & Bishop 1999, Sec. 3.2). This measures the
        distance to the fixed point, not the last step: a slowly moving EM does not stop early. Round-off
        limits it to about ``1e-16 tr(S) / l_1``.
    random_state, init
        Initial ``C`` (standard normal scaled by the mean variance per coordinate, or ``init`` transposed);
        initial ``eps`` (``"em"``) = mean variance per coordinate.
    callback : callable, optional
        ``callback(t, C, eps)`` after the e-step of iteration t; True stops.

    Returns
    -------
    SensiblePCAResult

    Warns
    -----
    ConvergenceWarning
        When ``max_iter`` is reached before ``tol``.
    LowRankWarning
        When the ML noise variance is 0 (the centred data lie in k or fewer dimensions): ``eps`` is clamped
        to ``1e-13 tr(S)`` and the result is the ML model under that constraint (:func:`ppca_closed_form`
        does the same).

    Raises
    ------
    ValueError
        For data with zero variance (e.g. all zeros).

    Notes
    -----
    Cost ``O(knp)`` per iteration: the inversion lemma gives ``beta = (C'C + eps I)^-1 C'`` and only
    ``tr(YY')`` (not ``YY'``) enters the noise update (footnote 6).

    References
    ----------
    S. Roweis. EM algorithms for PCA and SPCA. NIPS 10, 1997, Sec. 4.
    M. E. Tipping and C. M. Bishop. Probabilistic principal component analysis. JRSS B, 1999.
    X.-L. Meng and D. B. Rubin. Maximum likelihood estimation via the ECM algorithm. Biometrika 80, 1993.
    """
    source = as_source(X, "X", min_features=2)
    return _sensible_pca_on(source, n_components, algorithm, max_iter, tol, random_state, init, callback)


@blas_limited
def sensible_pca_blocks(
    blocks,
    n_components: int = 1,
    *,
    algorithm: str = "accelerated",
    max_iter: int = 5000,
    tol: float = 1e-8,
    random_state=None,
    init=None,
    callback: Callable | None = None,
) -> SensiblePCAResult:
    """:func:`sensible_pca` over row blocks read once per iteration (see :func:`em_pca_blocks`)."""
    source = BlockSource(blocks)
    return _sensible_pca_on(source, n_components, algorithm, max_iter, tol, random_state, init, callback)


def _sensible_pca_on(source, n_components, algorithm, max_iter, tol, random_state, init, callback):
    """The sensible-PCA EM on a data source (in memory, row blocks, Dask): checks, start, loop, result."""
    n, p = source.n, source.p
    k, max_iter, tol = _check_common(n_components, max_iter, tol, n, p, spca=True)
    if algorithm not in _SPCA_ALGORITHMS:
        raise ValueError(f"algorithm must be one of {_SPCA_ALGORITHMS}; got {algorithm!r}.")
    _check_callback(callback)
    floor = _noise_floor(source.ss / n)
    rng = check_random_state(random_state)
    C0, eps0 = _spca_init(init, p, k, source.ss, n, rng)
    if source.missing:
        C, eps, ll, mean, n_iter, converged, clamped, hist = _spca_missing_loop(
            source, C0, eps0, max_iter, tol, callback, floor
        )
        res = _spca_result_from_C(C, eps, ll, mean, n_iter, converged, hist)
    elif algorithm == "em":
        C, eps, ll, n_iter, converged, clamped, hist = _spca_em_loop(
            source, C0, eps0, max_iter, tol, callback, floor
        )
        res = _spca_result_from_C(C, eps, ll, source.mean, n_iter, converged, hist)
    else:
        W, d2, eps, ll, n_iter, converged, clamped, hist = _spca_fast_loop(
            source, C0, k, max_iter, tol, callback, floor
        )
        W = canonical_sign(W)
        res = SensiblePCAResult(
            np.ascontiguousarray(W.T),
            W * np.sqrt(d2),
            d2 + eps,
            float(eps),
            source.mean,
            float(ll),
            n_iter,
            converged,
            hist,
        )
    if clamped:
        _warn_low_rank(k, res.noise_variance, floor)
    if not converged:
        warn_not_converged(
            "SensiblePCA",
            n_iter,
            tol,
            ""
            if algorithm != "em"
            else "Roweis' EM is slow when the noise is small; "
            "algorithm='accelerated' reaches the same fixed point in far fewer iterations.",
        )
    return res


class SensiblePCA(TransformerMixin, BaseEstimator):
    """Sensible PCA (Roweis 1997, Sec. 4): the Gaussian model ``N(mean, CC' + eps I)`` fitted by EM.

    Its principal subspace is that of PCA; unlike PCA it is a density, so it can score new data
    (:meth:`score_samples`) and generate data (:meth:`sample`). The fitted parameters are the
    maximum-likelihood ones (:func:`ppca_closed_form`), reached by EM in ``O(knp)`` per iteration.

    Parameters
    ----------
    n_components : int, default 1
        ``k`` in ``1..min(n_samples - 1, n_features - 1)``.
    algorithm : {"accelerated", "em"}, default "accelerated"
        ``"accelerated"``: Roweis' e-step and m-step followed by the exact ML scales and noise within the new
        subspace (an ECM algorithm; iterations of EM PCA, a few tens: 34 for k = 5 on the CBCL faces at
        ``tol=1e-5``, 0.06 s). ``"em"``: the paper's EM as printed (6,201 iterations there, 7 s; it stalls as
        the noise goes to 0). Both stop at the ML fixed point; see :func:`sensible_pca`.
    max_iter : int, default 5000
    tol : float, default 1e-8
        On the relative residual of the likelihood's stationarity equations (the distance to the ML fixed
        point, see :func:`sensible_pca`).
    random_state : None, int or np.random.Generator
    init : array_like (n_components, n_features), optional

    Attributes
    ----------
    components_ : ndarray, shape (n_components, n_features)
        Orthonormal principal directions, ordered.
    C_ : ndarray, shape (n_features, n_components)
        The paper's ``C`` in the rotation ``components_.T * sqrt(explained_variance_ - noise_variance_)``.
    explained_variance_ : ndarray, shape (n_components,)
        Model variances ``|c_j|^2 + eps``: at the ML fixed point the leading eigenvalues of the sample
        covariance normalized by n (``ddof=0``, maximum likelihood).
    noise_variance_ : float
        The global noise level ``eps`` (ML, ``ddof=0``).
    mean_ : ndarray, shape (n_features,)
    log_likelihood_ : float
        Total training log-likelihood.
    n_iter_, converged_, history_
        As in :class:`EMPCA`; ``history_`` has ``log_likelihood``, ``noise_variance``, ``subspace_change``
        and ``residual`` (the stopping measure of each iteration).

    Warns
    -----
    ConvergenceWarning
        When ``max_iter`` is reached before the ML fixed point (``converged_`` is then False).
    LowRankWarning
        When the centred data lie in ``n_components`` or fewer dimensions (ML noise variance 0): the noise
        variance is kept at its floor (see :func:`sensible_pca`).

    References
    ----------
    S. Roweis. EM algorithms for PCA and SPCA. NIPS 10, 1997.
    """

    def __init__(
        self,
        n_components: int = 1,
        *,
        algorithm: str = "accelerated",
        max_iter: int = 5000,
        tol: float = 1e-8,
        random_state=None,
        init=None,
    ):
        self.n_components = n_components
        self.algorithm = algorithm
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.init = init

    def _store(self, res: SensiblePCAResult):
        self.components_ = res.components
        self.C_ = res.C
        self.explained_variance_ = res.explained_variance
        self.noise_variance_ = res.noise_variance
        self.mean_ = res.mean
        self.log_likelihood_ = res.log_likelihood
        self.n_iter_ = res.n_iter
        self.converged_ = res.converged
        self.history_ = res.history
        self.n_features_in_ = res.components.shape[1]
        self.n_components_ = res.components.shape[0]
        return self

    def fit(self, X, y=None):
        """Fit on ``X`` (n_samples, n_features), an array or a Dask array; NaN entries are missing values."""
        return self._store(sensible_pca(X, **self.get_params()))  # the parameters are its keywords

    def fit_blocks(self, blocks):
        """Fit on row blocks read once per iteration (see :func:`em_pca_blocks`). Returns self."""
        return self._store(sensible_pca_blocks(blocks, **self.get_params()))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN marks a missing entry (fit, transform and score)
        return tags

    def _check_X(self, X):
        check_is_fitted(self, "C_")
        X = check_array(X, "X", allow_nan=True)
        check_n_features(self, X)
        return X

    def _observed(self, X):
        """Per row with missing entries: (row index, observed mask) (complete rows are not listed)."""
        miss = np.isnan(X)
        return [(i, ~miss[i]) for i in np.flatnonzero(miss.any(axis=1))]

    def _M(self):
        k = self.C_.shape[1]
        return self.C_.T @ self.C_ + self.noise_variance_ * np.eye(k)

    def transform(self, X):
        """Posterior means ``E[x | y] = (C'C + eps I)^-1 C'(y - mean)`` (Eq. 2b), shape (n_samples, k).

        Not the PCA projection (Sec. 4): the posterior mean shrinks towards 0 by ``(L - eps)/L``. NaN
        entries are missing: such a row gets the posterior mean given its observed entries only.
        """
        if is_dask(X):  # one pass, chunk by chunk
            check_is_fitted(self, "C_")
            return DaskSource(X, "X", first_pass=False).map_rows(self.transform)
        X = self._check_X(X)
        holes = self._observed(X)
        D = np.where(np.isnan(X), 0.0, X - self.mean_)
        Z = scipy.linalg.cho_solve(_chol(self._M(), "C'C + eps I"), (D @ self.C_).T).T
        k, eps = self.C_.shape[1], self.noise_variance_
        for i, obs in holes:  # the posterior of x given the observed entries of the row only
            Co = self.C_[obs]
            Z[i] = np.linalg.solve(Co.T @ Co + eps * np.eye(k), Co.T @ D[i, obs])
        return Z

    def inverse_transform(self, Z):
        """``mean + C z`` for latent rows ``Z`` (n_samples, k)."""
        check_is_fitted(self, "C_")
        Z = check_latent(Z, self.C_.shape[1])
        return Z @ self.C_.T + self.mean_

    def score_samples(self, X):
        """Log-density of each row under ``N(mean_, CC' + eps I)``, shape (n_samples,); for a row with
        missing entries (NaN), the marginal density of its observed entries.

        Woodbury: ``(CC' + eps I)^-1 = (I - C M^-1 C')/eps``; determinant lemma:
        ``log|CC' + eps I| = (p - k) log eps + log|M|`` with ``M = C'C + eps I``. O(pk) per sample after an
        O(pk^2) set-up; no p x p matrix.
        """
        if is_dask(X):  # one pass, chunk by chunk
            check_is_fitted(self, "C_")
            return DaskSource(X, "X", first_pass=False).map_rows(self.score_samples)
        X = self._check_X(X)
        p = X.shape[1]
        k = self.C_.shape[1]
        eps = self.noise_variance_
        cf = _chol(self._M(), "C'C + eps I")
        holes = self._observed(X)
        D = np.where(np.isnan(X), 0.0, X - self.mean_)
        T = D @ self.C_
        MT = scipy.linalg.cho_solve(cf, T.T).T
        quad = (np.einsum("ij,ij->i", D, D) - np.einsum("ij,ij->i", T, MT)) / eps
        logdet = (p - k) * math.log(eps) + 2.0 * float(np.log(np.diag(cf[0])).sum())
        out = -0.5 * (p * _LOG_2PI + logdet + quad)
        for i, obs in holes:  # the marginal density of the observed entries, N(mean_o, C_o C_o' + eps I)
            Co, d = self.C_[obs], D[i, obs]
            po = int(obs.sum())
            cfo = _chol(Co.T @ Co + eps * np.eye(k), "C_o'C_o + eps I")
            t = Co.T @ d
            q = (d @ d - t @ scipy.linalg.cho_solve(cfo, t)) / eps
            ld = (po - k) * math.log(eps) + 2.0 * float(np.log(np.diag(cfo[0])).sum())
            out[i] = -0.5 * (po * _LOG_2PI + ld + q)
        return out

    def score(self, X, y=None):
        """Mean log-likelihood per sample of ``X``."""
        return float(np.mean(self.score_samples(X)))

    def get_covariance(self):
        """The model covariance ``CC' + eps I`` (n_features x n_features; dense, O(p^2) memory)."""
        check_is_fitted(self, "C_")
        return self.C_ @ self.C_.T + self.noise_variance_ * np.eye(self.C_.shape[0])

    def sample(self, n_samples: int = 1, random_state=None):
        """Draw "fantasy" data ``mean + C x + v``, ``x ~ N(0, I)``, ``v ~ N(0, eps I)`` (n_samples, p)."""
        check_is_fitted(self, "C_")
        n_samples = check_int(n_samples, "n_samples", low=1)
        rng = check_random_state(random_state)
        p, k = self.C_.shape
        Z = rng.standard_normal((n_samples, k))
        V = rng.standard_normal((n_samples, p)) * math.sqrt(self.noise_variance_)
        return Z @ self.C_.T + V + self.mean_
