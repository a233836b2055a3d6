"""Numba kernel of globally sparse SSPCA (Jenatton, Obozinski & Bach 2010), :mod:`repro.baselines.sspca`.

``sspca_run``
    The block-coordinate descent of :func:`repro.baselines.sspca_fit` from a start ``(U, V)``: per outer
    iteration the loadings ``V`` by monotone FISTA on the smooth part with the row-wise group
    soft-threshold as proximal step (step ``1 / ||U'U||_2``, at most 50 steps to a relative objective
    change of ``tol / 10``), then the codes ``U`` column by column (``u_k = P_ball(R_k v_k / ||v_k||^2)``),
    then the objective ``(1/2)||X - UV'||_F^2 + alpha sum_j ||V_j||_2``; it stops at a relative decrease
    of at most ``tol`` or after ``max_iter`` iterations. The same steps as the NumPy functions it replaced
    (kept as the twin in ``tests/naive.py``), without a Python call per step: a fit of SSPCA-CV (Mattei et
    al. 2016, Table 1: 100 x 100, ``d = 10``) makes about 1,500 outer iterations of a few microseconds of
    arithmetic each.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from .._ties import TIE_RTOL

__all__ = ["sspca_run"]

#: FISTA steps per V-update and the factor of ``tol`` they stop at (as the NumPy version had them).
V_STEPS = 50
V_TOL_FACTOR = 0.1


@njit
def _objective(X, U, V, alpha):
    """``(1/2)||X - U V'||_F^2 + alpha sum_j ||V_j||_2``."""
    n, p = X.shape
    UVt = np.dot(U, np.ascontiguousarray(V.T))  # BLAS: the n p d products
    s = 0.0
    for i in range(n):
        for j in range(p):
            r = X[i, j] - UVt[i, j]
            s += r * r
    return 0.5 * s + alpha * _row_norm_sum(V)


@njit
def _row_norm_sum(V):
    t = 0.0
    for j in range(V.shape[0]):
        s = 0.0
        for k in range(V.shape[1]):
            s += V[j, k] * V[j, k]
        t += np.sqrt(s)
    return t


@njit
def _gram(A, G):
    """``G = A'A`` (columns of ``A``)."""
    m, d = A.shape
    for a in range(d):
        for b in range(a, d):
            s = 0.0
            for i in range(m):
                s += A[i, a] * A[i, b]
            G[a, b] = s
            G[b, a] = s


@njit
def _row_col(A, j, G, k):
    """``(A G)[j, k]`` (``G`` d x d)."""
    s = 0.0
    for m in range(G.shape[0]):
        s += A[j, m] * G[m, k]
    return s


@njit
def _v_objective(W, G, XtU, alpha):
    """The objective in ``V = W`` for fixed ``U``, up to a constant: ``(1/2) <W, W G> - <W, X'U> + alpha
    sum_j ||W_j||_2``."""
    p, d = W.shape
    q = 0.0
    lin = 0.0
    for j in range(p):
        for k in range(d):
            q += W[j, k] * _row_col(W, j, G, k)
            lin += W[j, k] * XtU[j, k]
    return 0.5 * q - lin + alpha * _row_norm_sum(W)


@njit
def _prox_step(Y, G, XtU, L, t, out):
    """``out = prox_{t/L}(Y - (Y G - X'U) / L)``: the gradient step and the row-wise group soft-threshold.

    A row whose norm is within a relative ``TIE_RTOL`` (1e-12) above the threshold becomes zero, as one at
    the threshold does (:func:`repro.baselines.sspca.group_soft_threshold`)."""
    p, d = Y.shape
    thr = t / L
    cut = thr * (1.0 + TIE_RTOL)
    for j in range(p):
        nz = 0.0
        for k in range(d):
            z = Y[j, k] - (_row_col(Y, j, G, k) - XtU[j, k]) / L
            out[j, k] = z
            nz += z * z
        nz = np.sqrt(nz)
        scale = 1.0 - thr / nz if nz > cut else 0.0
        for k in range(d):
            out[j, k] *= scale


@njit
def _v_step(Xt, U, V, alpha, max_inner, tol, G, XtU, Y, Vn):
    """Monotone FISTA on ``V`` with ``U`` fixed (a plain proximal step when momentum fails), in place."""
    p, d = V.shape
    _gram(U, G)
    L = np.linalg.eigvalsh(G)[-1]
    if not L > 0.0:
        V[:] = 0.0
        return
    XtU[:] = np.dot(Xt, U)
    Y[:] = V
    t = 1.0
    f_old = _v_objective(V, G, XtU, alpha)
    for _ in range(max_inner):
        _prox_step(Y, G, XtU, L, alpha, Vn)
        f_new = _v_objective(Vn, G, XtU, alpha)
        if f_new > f_old:  # monotone FISTA: fall back on a plain proximal step from V
            _prox_step(V, G, XtU, L, alpha, Vn)
            f_new = _v_objective(Vn, G, XtU, alpha)
            Y[:] = Vn
            t = 1.0
        else:
            t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
            c = (t - 1.0) / t_new
            for j in range(p):
                for k in range(d):
                    Y[j, k] = Vn[j, k] + c * (Vn[j, k] - V[j, k])
            t = t_new
        change = abs(f_old - f_new)
        V[:] = Vn
        f_old = f_new
        if change <= tol * max(1.0, abs(f_new)):
            break


@njit
def _u_step(X, U, V, XV, G):
    """``U`` column by column in place: ``u_k = P_ball(R_k v_k / ||v_k||^2)``, ``R_k v_k = X v_k -
    sum_{l != k} u_l (v_l'v_k)`` with the columns already updated."""
    n, d = U.shape
    XV[:] = np.dot(X, V)
    _gram(V, G)
    u = np.empty(n)
    for k in range(d):
        vk2 = G[k, k]
        if vk2 <= 0.0:
            continue
        nu = 0.0
        for i in range(n):
            r = XV[i, k] - _row_col(U, i, G, k) + U[i, k] * vk2
            u[i] = r / vk2
            nu += u[i] * u[i]
        den = max(1.0, np.sqrt(nu))
        for i in range(n):
            U[i, k] = u[i] / den


@njit
def sspca_run(X, Xt, U, V, alpha, max_iter, tol, hist):
    """SSPCA's block-coordinate descent from ``(U, V)`` (updated in place; module docstring).

    Parameters
    ----------
    X : float64 array, shape (n, p), C-contiguous
    Xt : float64 array, shape (p, n), C-contiguous
        ``X.T``.
    U : float64 array, shape (n, d), C-contiguous
    V : float64 array, shape (p, d), C-contiguous
    alpha : float
    max_iter : int
    tol : float
    hist : float64 array, shape (max_iter + 1,)
        Receives the objective at the start and after every outer iteration.

    Returns
    -------
    n_iter : int
        The outer iterations run (``hist[:n_iter + 1]`` is filled).
    converged : bool
        Whether the tolerance stopped them (else ``max_iter`` did).
    """
    p, d = V.shape
    n = U.shape[0]
    G = np.empty((d, d))
    XtU = np.empty((p, d))
    Y = np.empty((p, d))
    Vn = np.empty((p, d))
    XV = np.empty((n, d))
    f_old = _objective(X, U, V, alpha)
    hist[0] = f_old
    for it in range(1, max_iter + 1):
        _v_step(Xt, U, V, alpha, V_STEPS, tol * V_TOL_FACTOR, G, XtU, Y, Vn)
        _u_step(X, U, V, XV, G)
        f = _objective(X, U, V, alpha)
        hist[it] = f
        if abs(f_old - f) <= tol * max(1.0, abs(f)):
            return it, True
        f_old = f
    return max_iter, False
