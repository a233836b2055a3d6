"""Sensible PCA (Roweis 1997, Sec. 4): the EM and accelerated (ECM) iterations of the noisy model.

``y = mu + C x + v``, ``v ~ N(0, eps I)``: e-step ``beta = M^-1 C'`` with ``M = C'C + eps I`` (footnote 6),
m-step ``C_new = Y mu_x' Sigma_x^-1``, ``eps_new = tr(YY' - C_new mu_x Y')/(n p)``; the restricted
maximum-likelihood step on the Ritz problem (:func:`_restricted_ml`, Tipping & Bishop 1999, Eqs. 7-8) and
the noise floor ``1e-13 tr(S)`` with :class:`LowRankWarning`. Inputs are validated data sources.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from .._dense import _canonical_sign
from ._common import SensiblePCAResult, _chol, _initial_C, _ritz, _sin_orth, subspace_sin

_LOG_2PI = math.log(2.0 * math.pi)
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


def _spca_result_from_C(C, eps, ll, mean, n_iter, converged, hist) -> SensiblePCAResult:
    U, d, _ = np.linalg.svd(C, full_matrices=False)
    U = _canonical_sign(U)
    W = np.ascontiguousarray(U.T)
    return SensiblePCAResult(W, U * d, d * d + eps, float(eps), mean, float(ll), n_iter, converged, hist)


def _spca_init(init, p, k, ss, n, rng, extra=0):
    C0 = _initial_C(init, p, k, rng, extra)
    scale = ss / (n * p)
    if init is None:
        C0 = C0 * math.sqrt(scale)
    return C0, max(scale, 1e-300)


_SPCA_ALGORITHMS = ("accelerated", "em")
