"""Numba kernels of greedy sparse PCA (GSPCA, Moghaddam, Weiss & Avidan 2006): candidate eigenvalues.

Greedy search needs, for every candidate variable, the largest eigenvalue of a principal submatrix that
differs from the current one by one row and column. With the current submatrix ``C_SS = V diag(lam) V'``
(``lam`` descending) both are secular equations, solved per candidate in O(m) per iteration:

* forward (add ``j``): the bordered matrix ``[[C_SS, c], [c', a]]`` is similar to
  ``[[diag(lam), z], [z', a]]`` with ``z = V'c``; its eigenvalues above ``lam`` solve
  ``mu - a - sum_i z_i^2 / (mu - lam_i) = 0`` (Golub 1973; Moghaddam et al. 2006, Sec. 3, the rank-one
  "bordered" update of the eigenvalue bounds).
* backward (remove ``i``): the eigenvalues of ``C_SS`` without row and column ``i`` solve
  ``sum_j V_ij^2 / (lam_j - mu) = 0`` and interlace ``lam`` (Cauchy), so the largest lies in
  ``[lam_2, lam_1]``.

Both are written in the offset ``delta`` from the nearest pole so that candidates whose eigenvalue is
within round-off of ``lam_1`` are still ranked correctly. Weights below ``1e-300`` count as zero: the
corresponding ``lam_j`` is then itself an eigenvalue of the new matrix.
"""

from __future__ import annotations

import math

import numpy as np

from . import njit

__all__ = ["bordered_max_eig", "deleted_argmax", "deleted_max_eig"]

_TINY = 1e-300


@njit
def _bordered_one(lam, z, a):
    # Largest eigenvalue of [[diag(lam), z], [z', a]], lam descending (m >= 1).
    m = lam.shape[0]
    j1 = -1
    for i in range(m):
        if z[i] * z[i] > _TINY:
            j1 = i
            break
    if j1 < 0:
        return max(lam[0], a)
    lj = lam[j1]
    zz = z[j1] * z[j1]
    # delta = mu - lam_j1 > 0 solves h(delta) = lj + delta - a - sum_i z_i^2 / (delta + e_i), e_i = lj - lam_i
    # h is increasing and concave: Newton from the left (h <= 0) rises monotonically to the root.
    half = 0.5 * (lj - a)
    root = math.sqrt(half * half + zz)
    # start: top eigenvalue of the 2 x 2 principal submatrix [[lj, z_j1], [z_j1, a]] (a lower bound)
    delta = zz / (half + root) if half > 0.0 else root - half
    for _ in range(200):
        h = lj + delta - a
        dh = 1.0
        for i in range(j1, m):
            zi2 = z[i] * z[i]
            if zi2 > _TINY:
                t = delta + (lj - lam[i])
                h -= zi2 / t
                dh += zi2 / (t * t)
        if h >= 0.0:
            break
        step = -h / dh
        delta += step
        if step <= 1e-16 * delta:
            break
    mu = lj + delta
    # eigenvalues lam_i with z_i = 0 (i < j1) are eigenvalues of the bordered matrix too
    if j1 > 0 and lam[0] > mu:
        return lam[0]
    return mu


@njit
def bordered_max_eig(lam, Z, a):
    """Largest eigenvalue of each bordered matrix ``[[diag(lam), Z[:, j]], [Z[:, j]', a[j]]]``.

    Parameters
    ----------
    lam : ndarray (m,)
        Eigenvalues of the current submatrix ``C_SS``, descending.
    Z : ndarray (m, n_cand)
        ``V' C[S, candidates]`` (``V`` the eigenvectors of ``C_SS`` as columns).
    a : ndarray (n_cand,)
        ``C[j, j]`` for each candidate.

    Returns
    -------
    ndarray (n_cand,)
        ``lambda_max(C[S + j, S + j])`` for each candidate j (forward greedy step).
    """
    n = Z.shape[1]
    out = np.empty(n)
    z = np.empty(lam.shape[0])
    for j in range(n):
        for i in range(lam.shape[0]):
            z[i] = Z[i, j]
        out[j] = _bordered_one(lam, z, a[j])
    return out


@njit
def _deleted_one(lam, V, i):
    # Largest eigenvalue of V diag(lam) V' without row/column i (m >= 2), lam descending.
    m = lam.shape[0]
    w1 = V[i, 0] * V[i, 0]
    if w1 <= _TINY or lam[0] == lam[1]:
        return lam[0]  # eigenvector 1 survives the deletion, or lam_1 is repeated (interlacing)
    # next pole with non-zero weight
    j2 = -1
    for j in range(1, m):
        if V[i, j] * V[i, j] > _TINY:
            j2 = j
            break
    best_zero = lam[1]  # lam_j with zero weight stay eigenvalues; lam_2 is the largest candidate
    if j2 < 0:
        return best_zero
    if j2 == 1:
        best_zero = -np.inf
    d2 = lam[0] - lam[j2]
    if d2 <= 0.0:
        return lam[0]
    # mu = lam_1 - delta with delta in (0, d2) solving
    # phi(delta) = w1 / delta + sum_{j >= j2} w_j / (delta - d_j) = 0, d_j = lam_1 - lam_j; phi decreasing.
    w2 = V[i, j2] * V[i, j2]
    lo = 0.0
    hi = d2
    delta = w1 * d2 / (w1 + w2)  # the root when only the two nearest poles count
    for _ in range(200):
        phi = w1 / delta
        dphi = -w1 / (delta * delta)
        for j in range(j2, m):
            wj = V[i, j] * V[i, j]
            if wj > _TINY:
                t = delta - (lam[0] - lam[j])
                phi += wj / t
                dphi -= wj / (t * t)
        if phi > 0.0:
            lo = delta
        elif phi < 0.0:
            hi = delta
        else:
            break
        new = delta - phi / dphi
        if not (lo < new < hi):
            new = 0.5 * (lo + hi)
        if abs(new - delta) <= 1e-15 * delta or hi - lo <= 1e-15 * hi:
            delta = new
            break
        delta = new
    mu = lam[0] - delta
    return max(mu, best_zero)


@njit
def deleted_max_eig(lam, V, candidates):
    """Largest eigenvalue of ``C_SS`` with one variable removed, for each listed position.

    Parameters
    ----------
    lam : ndarray (m,)
        Eigenvalues of ``C_SS``, descending (``m >= 2``).
    V : ndarray (m, m)
        The corresponding eigenvectors as columns.
    candidates : ndarray (n_cand,) of int64
        Positions (0..m-1 within S) to try removing.

    Returns
    -------
    ndarray (n_cand,)
        ``lambda_max`` of ``C_SS`` without row and column ``candidates[t]`` (backward greedy step).
    """
    out = np.empty(candidates.shape[0])
    for t in range(candidates.shape[0]):
        out[t] = _deleted_one(lam, V, candidates[t])
    return out


@njit
def deleted_argmax(lam, V, candidates):
    """The position in ``candidates`` whose removal keeps ``lambda_max`` largest: ``argmax`` of
    :func:`deleted_max_eig`, the same index, without solving every candidate's secular equation.

    Removing variable ``i`` leaves ``lambda_max <= lam_1 - (lam_1 - lam_2) V_i1^2`` (for a unit ``x`` with
    ``x_i = 0``, ``x' C x <= lam_2 + (lam_1 - lam_2)(x'v_1)^2`` and ``(x'v_1)^2 <= 1 - V_i1^2``). The
    candidates are solved in increasing ``V_i1^2`` (decreasing bound) until the bound, plus a margin far
    above the solver's round-off, falls below the best value found: none of the rest can reach it. Each
    value solved is the one :func:`deleted_max_eig` returns, and ties go to the first position as in
    ``np.argmax``, so the answer is the same; on the backward steps of a 361-pixel CBCL covariance most
    candidates are skipped. With a non-finite input every candidate is solved and ``np.argmax`` decides.

    Parameters
    ----------
    lam, V, candidates : ndarray
        As in :func:`deleted_max_eig` (at least one candidate).

    Returns
    -------
    int
        ``t`` such that removing ``candidates[t]`` keeps ``lambda_max`` largest (first such ``t``).

    Examples
    --------
    >>> import numpy as np
    >>> from repro.kernels.gspca import deleted_argmax, deleted_max_eig
    >>> lam, V = np.linalg.eigh(np.array([[2.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 1.0]]))
    >>> lam, V = lam[::-1].copy(), np.ascontiguousarray(V[:, ::-1])
    >>> cand = np.arange(3, dtype=np.int64)
    >>> int(deleted_argmax(lam, V, cand)), int(np.argmax(deleted_max_eig(lam, V, cand)))
    (2, 2)
    """
    n = candidates.shape[0]
    m = lam.shape[0]
    finite = True
    for i in range(m):
        if not np.isfinite(lam[i]):
            finite = False
        for j in range(m):
            if not np.isfinite(V[i, j]):
                finite = False
    if not finite:
        return np.argmax(deleted_max_eig(lam, V, candidates))
    gap = lam[0] - lam[1]
    # the solver's error is a few m * eps of |lam_1| + (lam_1 - lam_m); 1e-8 of it leaves a wide margin
    margin = 1e-8 * (abs(lam[0]) + (lam[0] - lam[m - 1]))
    w1 = np.empty(n)
    for t in range(n):
        w1[t] = V[candidates[t], 0] * V[candidates[t], 0]
    order = np.argsort(w1, kind="mergesort")
    best = -np.inf
    best_t = -1
    for k in range(n):
        t = order[k]
        if best_t >= 0 and lam[0] - gap * w1[t] + margin < best:
            break  # this bound and every later one (larger V_i1^2) are below the best value
        mu = _deleted_one(lam, V, candidates[t])
        if np.isnan(mu):  # not seen with finite input; np.argmax's rule (first NaN) without guessing
            return np.argmax(deleted_max_eig(lam, V, candidates))
        if mu > best or (mu == best and t < best_t):
            best = mu
            best_t = t
    return best_t
