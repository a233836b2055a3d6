"""EM with missing values (Roweis 1997, Sec. 3.2; and the noisy model of Sec. 4 with missing values).

:func:`_em_missing`: generalized e-step per row (least squares on the observed coordinates, kernel
:func:`repro.em_pca._kernels.missing_estep`) and the joint m-step in ``C`` and ``mu`` on the completed data;
``J`` never increases. :func:`_spca_missing_loop`: the exact EM of ``y = mu + C x + v`` given the observed
coordinates of each row (Gaussian posterior e-step, per-column m-step). See :mod:`repro.em_pca` for the
derivations; inputs are validated data sources. The chunk functions (:func:`missing_estep_chunk`,
:func:`missing_final_chunk`, :func:`ppca_missing_chunk`) are each loop's work on one row chunk, run by any
source of :mod:`repro._chunked` (its ``map_sum`` adds their results over the chunks).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from ._common import _chol, _finish_history, _new_history, _ritz, subspace_sin
from ._kernels import missing_estep, ppca_missing_estep
from .sensible import _spca_history


# --------------------------------------------------------------------------- chunk functions
def missing_structure(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR lists of the missing coordinates of each row (sorted): ``(ptr, idx)``, row ``i``'s missing
    columns being ``idx[ptr[i]:ptr[i + 1]]``."""
    rows, cols = np.nonzero(mask)
    ptr = np.zeros(mask.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=mask.shape[0]), out=ptr[1:])
    return ptr, cols.astype(np.int64)


def _missing_prepare(Xb, cache, mu):
    """Completed chunk (missing entries at ``mu``, or the previous fills when cached) and its CSR lists."""
    if cache is not None and "Yfill" in cache:
        return cache["Yfill"], cache["ptr"], cache["idx"]
    Xb = np.asarray(Xb, dtype=np.float64)
    mask = np.isnan(Xb)
    ptr, idx = missing_structure(mask)
    Yfill = np.where(mask, mu, Xb)
    if cache is not None:
        cache.update(Yfill=Yfill, ptr=ptr, idx=idx)
    return Yfill, ptr, idx


def missing_estep_chunk(Xb, cache, C, mu):
    """Generalized e-step (Roweis 1997, Sec. 3.2) on one chunk and the sums the m-step needs.

    Returns ``(sse, sum_i z_i, Z'Z, Y*'Z, sum_i y*_i)`` with ``Y*`` the chunk completed by the new fills.
    """
    Yfill, ptr, idx = _missing_prepare(Xb, cache, mu)
    k = C.shape[1]
    B = Yfill @ C - mu @ C
    Z = np.empty((Yfill.shape[0], k))
    fill_colsum = np.empty(Yfill.shape[1])
    sse = missing_estep(Yfill, B, C, C.T @ C, mu, ptr, idx, Z, fill_colsum)
    return sse, Z.sum(axis=0), Z.T @ Z, Yfill.T @ Z, Yfill.sum(axis=0)


def missing_final_chunk(Xb, cache, C, mu, center, Q):
    """The e-step again at the final ``(C, mu)``; ``(U'U, |Y* - center|^2)`` with ``U = (Y* - center) Q``."""
    Yfill, ptr, idx = _missing_prepare(Xb, cache, mu)
    if cache is None:  # fresh chunk: fills as in the last e-step
        B = Yfill @ C - mu @ C
        Z = np.empty((Yfill.shape[0], C.shape[1]))
        missing_estep(Yfill, B, C, C.T @ C, mu, ptr, idx, Z, np.empty(Yfill.shape[1]))
    D = Yfill - center
    U = D @ Q
    return U.T @ U, float(np.vdot(D, D))


def ppca_missing_chunk(Xb, cache, C, mu, eps, m0):
    """E-step of sensible PCA with missing values on one chunk and the sums of the m-step.

    The chunk is centred by ``m0`` (the observed column means) and ``mu`` is relative to it. Returns
    ``(loglik, Stot, Hmiss, B)``: see :func:`repro.em_pca._kernels.ppca_missing_estep`;
    ``B = Y0' [X 1]`` with ``Y0`` the centred observed entries (missing ones 0), so the m-step of column j
    is ``[c_j; mu_j] = (Stot - Hmiss[j])^-1 B[j]``.
    """
    if cache is not None and "Y0" in cache:
        Y0, rows, ptr, idx = cache["Y0"], cache["rows"], cache["ptr"], cache["idx"]
    else:
        Xb = np.asarray(Xb, dtype=np.float64)
        mask = np.isnan(Xb)
        ptr, idx = missing_structure(mask)
        rows = np.repeat(np.arange(Xb.shape[0]), np.diff(ptr))
        Y0 = np.where(mask, 0.0, Xb - m0)
        if cache is not None:
            cache.update(Y0=Y0, rows=rows, ptr=ptr, idx=idx)
    Yfill = Y0.copy()
    Yfill[rows, idx] = mu[idx]
    k = C.shape[1]
    B = Yfill @ C - mu @ C
    Xt = np.empty((Y0.shape[0], k + 1))
    Stot = np.zeros((k + 1, k + 1))
    Hmiss = np.zeros((Y0.shape[1], k + 1, k + 1))
    ll = ppca_missing_estep(Yfill, B, C, C.T @ C, mu, eps, ptr, idx, Xt, Stot, Hmiss)
    return ll, Stot, Hmiss, Y0.T @ Xt


# --------------------------------------------------------------------------- the EM loops
def _em_missing(source, C0, max_iter, tol, callback):
    """EM PCA with missing entries (Roweis 1997, Sec. 3.2), block-coordinate descent on J (module doc).

    One pass over the source per iteration: per chunk the generalized e-step and the sums ``Y*'Z``, ``Z'Z``,
    ``sum z``, ``sum y*`` (:func:`missing_estep_chunk`); one more pass at the end for the
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


def _spca_missing_loop(source, C0, eps0, max_iter, tol, callback, floor):
    """EM for SPCA with missing values (Sec. 4 model, Sec. 3.2 idea): exact e-step on the observed entries.

    Per row the posterior of ``x`` given ``y_O`` (kernel :func:`repro.em_pca._kernels.ppca_missing_estep`);
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
