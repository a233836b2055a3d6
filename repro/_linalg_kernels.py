"""Numba kernels of dense linear algebra: the leading eigenpair of a small symmetric matrix from a good
start (Lanczos), the scaled centred data's column norms and float32 copy without its float64 copy, and
two products with the data read in place (centred on the fly; through a support).

``lanczos_top``
    Lanczos with full reorthogonalization (twice, classical Gram-Schmidt) from ``v0``: after step ``j`` the
    tridiagonal ``T_j`` (``alpha``, ``beta``) gives the largest Ritz pair ``(theta, Q_j y)``, whose residual
    ``||A x - theta x||`` is exactly ``beta_j |y_j|`` (the classical Lanczos identity). It stops when that
    residual is at most ``tol * ||A||_F``, or when the Krylov space is invariant (``beta_j`` negligible).
    From the loadings of a converged sparse EM run (the start the renormalization of
    :mod:`repro.em_sparse_pca` gives it) it converges in 7-9 steps on the ``K x K`` covariances of CBCL
    faces and leukemia (``K = 50, 100``), against LAPACK ``dsyevr``'s full tridiagonal reduction. A Krylov
    method finds the largest eigenvalue only if the start is not orthogonal to its eigenvector; the caller
    (:func:`repro.linalg._top_eigvec`) certifies that ``theta`` is the largest (a Cholesky factorization of
    ``(theta + delta) I - A``) and falls back to ``dsyevr`` otherwise.
``centred_scaled``
    ``A = (X - mean) / c`` and its squared column norms in one pass over ``X`` (NumPy's ``np.subtract``,
    ``np.divide`` and ``einsum`` for the norms took three): the data operator of
    :meth:`repro.linalg.Covariance.from_data`, every entry as NumPy computes it; or the norms alone.
``centred_float32``
    With the norms alone from ``centred_scaled``: ``A * scale`` rounded to float32, in one pass over ``X``
    without the ``N x D`` float64 array ``A``: every entry as NumPy computes it
    (``np.subtract``, then ``np.divide``, then ``np.multiply`` into a float32 array), so the float32 copy
    equals the one made through ``A`` bit for bit. The float32 search covariance of
    :mod:`repro.em_sparse_pca` forms ``A32' A32`` from it and needs of ``A`` only a few columns.
``centred_rank1_pass``
    The data pass of the rank-one EM PCA on a large in-memory array without a centred copy
    (:meth:`repro._chunked.DenseSource.rank1`): for each row, ``u_i = (x_i - mean)' q`` and
    ``a += (x_i - mean) u_i`` while the row is in the L1 cache, so ``X`` is read from memory once per
    iteration (the two BLAS products read it twice). Compiled with reassociation
    (``fastmath={"reassoc", "contract"}``) so the row's dot product vectorizes; its results differ from the
    ordered sums by round-off only (tested against the NumPy twin).
``support_matvec``
    ``X w`` for a sparse ``w`` through the columns of its support, read in place from the row-major data
    (:meth:`repro.linalg.Covariance.products` and the data-backed EM runs of :mod:`repro.em_sparse_pca`).
"""

from __future__ import annotations

import numpy as np

from ._jit import njit

_EPS = np.finfo(np.float64).eps


@njit
def lanczos_top(A, v0, max_steps, tol, out):
    """Largest Ritz pair of the symmetric ``A`` (n x n, C-contiguous) from ``v0`` (n,): writes the unit Ritz
    vector into ``out`` and returns ``(theta, residual, steps)``; ``residual < 0`` when ``max_steps`` steps
    did not reach ``tol * ||A||_F`` (``out`` is then the last Ritz vector) or ``v0`` is zero."""
    n = A.shape[0]
    m = min(max_steps, n)
    nv = np.sqrt(np.dot(v0, v0))
    if not nv > 0.0 or m < 1:
        return 0.0, -1.0, 0
    Q = np.zeros((m + 1, n))
    for i in range(n):
        Q[0, i] = v0[i] / nv
    anorm = np.sqrt(np.sum(A * A))
    alpha = np.zeros(m)
    beta = np.zeros(m)
    theta = 0.0
    res = -1.0
    for j in range(m):
        w = np.dot(A, Q[j])
        a = np.dot(w, Q[j])
        alpha[j] = a
        for i in range(n):
            w[i] -= a * Q[j, i]
        if j > 0:
            for i in range(n):
                w[i] -= beta[j - 1] * Q[j - 1, i]
        for _ in range(2):  # full reorthogonalization against Q[0..j], twice
            c = np.dot(Q[: j + 1], w)
            w -= np.dot(c, Q[: j + 1])
        b = np.sqrt(np.dot(w, w))
        beta[j] = b
        T = np.zeros((j + 1, j + 1))
        for i in range(j + 1):
            T[i, i] = alpha[i]
            if i > 0:
                T[i, i - 1] = beta[i - 1]
                T[i - 1, i] = beta[i - 1]
        ev, Y = np.linalg.eigh(T)
        theta = ev[j]
        r = b * abs(Y[j, j])
        if r <= tol * anorm or b <= _EPS * anorm or j == m - 1:
            x = np.dot(Y[:, j], Q[: j + 1])
            x /= np.sqrt(np.dot(x, x))
            out[:] = x
            res = r if (r <= tol * anorm or b <= _EPS * anorm) else -1.0
            return theta, res, j + 1
        for i in range(n):
            Q[j + 1, i] = w[i] / b
    return theta, res, m


@njit
def centred_scaled(X, mean, c, out, sumsq):
    """``out[i, j] = a_ij = (X[i, j] - mean[j]) / c`` and ``sumsq[j] = sum_i a_ij^2`` (the rows in order);
    ``out`` of shape ``(0, 0)``: the sums only."""
    n, d = X.shape
    store = out.shape[0] == n
    for j in range(d):
        sumsq[j] = 0.0
    for i in range(n):
        for j in range(d):
            a = (X[i, j] - mean[j]) / c
            if store:
                out[i, j] = a
            sumsq[j] += a * a


@njit
def centred_float32(X, mean, c, scale, out):
    """``out[i, j] = float32(((X[i, j] - mean[j]) / c) * scale)`` (``out``: float32, ``N x D``)."""
    n, d = X.shape
    for i in range(n):
        for j in range(d):
            out[i, j] = ((X[i, j] - mean[j]) / c) * scale


@njit
def support_matvec(A, idx, n, w, y):
    """``y = X[:, idx[:n]] @ w[idx[:n]]`` from the data ``A = X`` (``N x D``, C-contiguous), in place and
    without copying the support's columns: ``X w`` for a sparse ``w`` in ``N n`` flops, reading at most what
    the dense product reads (``np.dot(A[:, idx], ...)`` copies ``N n`` entries first, which costs more than
    the dense product once ``N`` is large)."""
    for i in range(A.shape[0]):
        s = 0.0
        for t in range(n):
            j = idx[t]
            s += A[i, j] * w[j]
        y[i] = s


@njit(fastmath={"reassoc", "contract"})
def centred_rank1_pass(X, mean, q, u, a):
    """``u = (X - mean) q``, ``a = (X - mean)' u`` (in place) and return ``u'u``, reading each row of ``X``
    (``n x p``, C-contiguous) from memory once; the centring is done on the fly, no copy."""
    n, p = X.shape
    for j in range(p):
        a[j] = 0.0
    g = 0.0
    for i in range(n):
        s = 0.0
        for j in range(p):
            s += (X[i, j] - mean[j]) * q[j]
        u[i] = s
        g += s * s
        for j in range(p):
            a[j] += (X[i, j] - mean[j]) * s
    return g
