"""EM with missing values (Roweis 1997, Sec. 3.2; and the noisy model of Sec. 4 with missing values).

:func:`_em_missing`: generalized e-step per row (least squares on the observed coordinates, kernel
:func:`repro.em_pca._kernels.missing_estep`) and the joint m-step in ``C`` and ``mu`` on the completed data;
``J`` never increases. :func:`_spca_missing_loop`: the exact EM of ``y = mu + C x + v`` given the observed
coordinates of each row (Gaussian posterior e-step, per-column m-step). See :mod:`repro.em_pca` for the
derivations; inputs are validated data sources.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from .._chunked import missing_estep_chunk, missing_final_chunk, ppca_missing_chunk
from ._common import _chol, _finish_history, _new_history, _ritz, subspace_sin
from .sensible import _spca_history


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
