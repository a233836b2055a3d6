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

from .._jit import njit
from .._ties import TIE_RTOL

__all__ = ["bordered_max_eig", "deleted_argmax", "deleted_eigh", "deleted_max_eig"]

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
    value solved is the one :func:`deleted_max_eig` returns. Ties: values within
    ``TIE_RTOL * |lam_1|`` (:data:`repro._ties.TIE_RTOL`, 1e-12) of the largest tie, and ties go to the
    first position, so the answer is ``repro._ties.argmax_tied(deleted_max_eig(...), scale=|lam_1|)``
    (the skipped candidates lie a margin far above that tolerance below the best); a removal that round-off
    alone ranks (two duplicated variables) no longer depends on the last bits. On the backward steps of a
    361-pixel CBCL covariance most candidates are skipped. With a non-finite input every candidate is
    solved and ``np.argmax`` decides.

    Parameters
    ----------
    lam, V, candidates : ndarray
        As in :func:`deleted_max_eig` (at least one candidate).

    Returns
    -------
    int
        ``t`` such that removing ``candidates[t]`` keeps ``lambda_max`` largest (the first ``t`` within
        the tie tolerance of the largest).

    Examples
    --------
    >>> import numpy as np
    >>> from repro.baselines._gspca_kernels import deleted_argmax, deleted_max_eig
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
    vals = np.full(n, -np.inf)  # the solved candidates' values (the skipped ones cannot tie)
    for k in range(n):
        t = order[k]
        if best_t >= 0 and lam[0] - gap * w1[t] + margin < best:
            break  # this bound and every later one (larger V_i1^2) are below the best value
        mu = _deleted_one(lam, V, candidates[t])
        if np.isnan(mu):  # not seen with finite input; np.argmax's rule (first NaN) without guessing
            return np.argmax(deleted_max_eig(lam, V, candidates))
        vals[t] = mu
        if mu > best:
            best = mu
            best_t = t
    floor = best - TIE_RTOL * abs(lam[0])  # ties: the first position within the tolerance
    for t in range(n):
        if vals[t] >= floor:
            return t
    return best_t


_EPS = np.finfo(np.float64).eps  # the same constant as repro.optimal._kernels


@njit
def _model_root(a, bb, cc, lo, hi):
    # The root in (lo, hi) of a x^2 - bb x + cc (the two-pole model times its denominators), or the
    # midpoint when there is none: both roots formed without cancellation.
    if a == 0.0:
        if bb != 0.0:
            return cc / bb
        return 0.5 * (lo + hi)
    disc = bb * bb - 4.0 * a * cc
    if disc < 0.0:
        return 0.5 * (lo + hi)
    q = 0.5 * (bb + math.copysign(math.sqrt(disc), bb))
    x1 = q / a
    x2 = cc / q if q != 0.0 else x1
    if lo < x2 < hi:
        return x2
    if lo < x1 < hi:
        return x1
    return 0.5 * (lo + hi)


@njit
def _deletion_root(p, w, k, out_delta, col):
    # Root k (0-based) of sum_j w_j / (p_j - mu) = 0 in (p[k+1], p[k]), p descending, w > 0.
    # Writes p_j - mu to out_delta[col, :], computed from the nearer pole so that it keeps its
    # relative accuracy, and returns mu.
    n = p.shape[0]
    gap = p[k] - p[k + 1]
    half = 0.5 * gap
    f_mid = 0.0
    for j in range(n):
        f_mid += w[j] / ((p[j] - p[k + 1]) - half)
    if f_mid >= 0.0:  # the root is in the lower half: measure from the lower pole
        origin = p[k + 1]
        lo, hi, tau = 0.0, half, half
    else:
        origin = p[k]
        lo, hi, tau = -half, 0.0, -half
    dl = p[k + 1] - origin
    du = p[k] - origin
    if f_mid == 0.0:
        for j in range(n):
            out_delta[col, j] = (p[j] - origin) - tau
        return origin + tau
    # start: the root of the two nearest poles plus the rest of f frozen at the midpoint
    c0 = f_mid - w[k] / (du - tau) - w[k + 1] / (dl - tau)
    b1 = w[k + 1]
    b2 = w[k]
    bb = c0 * (dl + du) + b1 + b2
    cc = c0 * dl * du + b1 * du + b2 * dl
    start = _model_root(c0, bb, cc, lo, hi)
    if lo < start < hi:
        tau = start
    for _ in range(100):
        psi = 0.0
        dpsi = 0.0
        phi = 0.0
        dphi = 0.0
        for j in range(k + 1, n):
            t = 1.0 / ((p[j] - origin) - tau)
            psi += w[j] * t
            dpsi += w[j] * t * t
        for j in range(k + 1):
            t = 1.0 / ((p[j] - origin) - tau)
            phi += w[j] * t
            dphi += w[j] * t * t
        f = psi + phi
        if f == 0.0:
            break
        if f < 0.0:
            lo = tau
        else:
            hi = tau
        if abs(f) <= 8.0 * _EPS * (phi - psi) * n:
            break
        # model: a + b1 / (dl - x) + b2 / (du - x), matching psi and phi in value and slope at tau
        b1 = dpsi * (dl - tau) * (dl - tau)
        b2 = dphi * (du - tau) * (du - tau)
        a = f - b1 / (dl - tau) - b2 / (du - tau)
        bb = a * (dl + du) + b1 + b2
        cc = a * dl * du + b1 * du + b2 * dl
        new = _model_root(a, bb, cc, lo, hi)
        if not (lo < new < hi):
            new = 0.5 * (lo + hi)
        step = abs(new - tau)
        tau = new
        if step <= 2.0 * _EPS * abs(tau) or hi - lo <= 2.0 * _EPS * max(abs(lo), abs(hi)):
            break
    for j in range(n):
        out_delta[col, j] = (p[j] - origin) - tau
    return origin + tau


@njit
def deleted_eigh(lam, V, i):
    """Eigendecomposition of ``V diag(lam) V'`` without row and column ``i``, updated from ``(lam, V)``.

    The eigenvalues of the submatrix are the roots of ``sum_j V_ij^2 / (lam_j - mu) = 0``, one between
    each pair of consecutive ``lam_j`` (Cauchy interlacing), and the eigenvector of a root ``mu`` is
    ``V (diag(lam) - mu)^-1 V[i, :]'`` without its entry ``i`` (zero there): the backward greedy step of
    GSPCA updates its decomposition in ``O(m^2)`` per root and one ``(m - 1) x m x (m - 1)`` product
    instead of a fresh ``eigh``. As in LAPACK's divide and conquer (``dlaed2``/``dlaed3``), weights
    ``|V_ij| <= 8 eps`` and pairs of eigenvalues closer than ``8 eps max|lam|`` (after a rotation that
    moves one's weight onto the other) are deflated: those ``lam_j`` stay eigenvalues with their
    eigenvectors; each root is found from its nearer pole (safeguarded two-pole rational iteration),
    and the weights are recomputed from the roots (Loewner's formula, Gu & Eisenstat 1994) so that the
    eigenvectors stay orthogonal to working precision.

    Parameters
    ----------
    lam : ndarray (m,)
        Eigenvalues, descending (``m >= 2``).
    V : ndarray (m, m)
        The corresponding orthonormal eigenvectors as columns.
    i : int
        The row and column to delete, ``0 <= i < m``.

    Returns
    -------
    lam_new : ndarray (m - 1,)
        Eigenvalues of the submatrix, descending.
    V_new : ndarray (m - 1, m - 1)
        Its orthonormal eigenvectors as columns (rows in the submatrix's order).

    Examples
    --------
    >>> import numpy as np
    >>> from repro.baselines._gspca_kernels import deleted_eigh
    >>> C = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    >>> lam, V = np.linalg.eigh(C)
    >>> lam_new, V_new = deleted_eigh(lam[::-1].copy(), np.ascontiguousarray(V[:, ::-1]), 1)
    >>> bool(np.allclose(lam_new, np.linalg.eigvalsh(C[np.ix_([0, 2], [0, 2])])[::-1]))
    True
    >>> bool(np.allclose((V_new * lam_new) @ V_new.T, C[np.ix_([0, 2], [0, 2])]))
    True
    """
    m = lam.shape[0]
    # the rows of the submatrix: V without row i; its columns are rotated where poles deflate
    W = np.empty((m - 1, m))
    rr = 0
    for row in range(m):
        if row != i:
            W[rr, :] = V[row, :]
            rr += 1
    d = lam.copy()
    z = V[i, :].copy()
    scale = max(abs(lam[0]), abs(lam[m - 1]))
    tol = 8.0 * _EPS * scale
    keep = np.zeros(m, dtype=np.bool_)  # True: a pole of the secular equation
    for c in range(m):
        keep[c] = abs(z[c]) > 8.0 * _EPS
    # close poles: rotate the weight of the earlier one onto the later one (LAPACK dlaed2)
    prev = -1
    for c in range(m):
        if not keep[c]:
            continue
        if prev >= 0:
            r = math.hypot(z[prev], z[c])
            s = z[prev] / r
            co = z[c] / r
            if abs((d[prev] - d[c]) * co * s) <= tol:
                for row in range(m - 1):
                    a = W[row, prev]
                    b = W[row, c]
                    W[row, prev] = co * a - s * b
                    W[row, c] = s * a + co * b
                dp = d[prev] * co * co + d[c] * s * s
                d[c] = d[prev] * s * s + d[c] * co * co
                d[prev] = dp
                z[prev] = 0.0
                z[c] = r
                keep[prev] = False
        prev = c
    n = 0
    for c in range(m):
        if keep[c]:
            n += 1
    idx = np.empty(n, dtype=np.int64)
    t = 0
    for c in range(m):
        if keep[c]:
            idx[t] = c
            t += 1
    p = np.empty(n)
    w = np.empty(n)
    total = 0.0
    for t in range(n):
        p[t] = d[idx[t]]
        w[t] = z[idx[t]] * z[idx[t]]
        total += w[t]
    # new eigenvalues: the n - 1 roots, then the deflated lam_j
    vals = np.empty(m - 1)
    delta = np.empty((max(n - 1, 0), n))  # delta[k, j] = p_j - root_k
    for k in range(n - 1):
        vals[k] = _deletion_root(p, w, k, delta, k)
    ncol = n - 1
    for c in range(m):
        if not keep[c]:
            vals[ncol] = d[c]
            ncol += 1
    order = np.argsort(-vals, kind="mergesort")
    # coefficients of each new eigenvector in the columns of W (row q: the q-th largest eigenvalue)
    Yt = np.zeros((m - 1, m))
    if n >= 2:
        # Loewner: the weights for which the computed roots are exact
        prod = np.full(n, total)
        for k in range(n - 1):
            for j in range(n):
                jp = k + 1 if j <= k else k
                prod[j] *= -delta[k, j] / (p[jp] - p[j])
        zh = np.empty(n)
        for j in range(n):
            zh[j] = math.copysign(math.sqrt(max(prod[j], 0.0)), z[idx[j]])
    pos = np.empty(m - 1, dtype=np.int64)
    for q in range(m - 1):
        pos[order[q]] = q
    for k in range(n - 1):
        q = pos[k]
        for j in range(n):
            Yt[q, idx[j]] = zh[j] / delta[k, j]
    ncol = n - 1
    for c in range(m):
        if not keep[c]:
            Yt[pos[ncol], c] = 1.0
            ncol += 1
    X = np.dot(W, Yt.T)
    # unit columns (the roots' coefficient vectors are not normalized above)
    norm2 = np.zeros(m - 1)
    for row in range(m - 1):
        for q in range(m - 1):
            norm2[q] += X[row, q] * X[row, q]
    for q in range(m - 1):
        norm2[q] = 1.0 / math.sqrt(norm2[q])
    for row in range(m - 1):
        for q in range(m - 1):
            X[row, q] *= norm2[q]
    lam_out = np.empty(m - 1)
    for q in range(m - 1):
        lam_out[q] = vals[order[q]]
    return lam_out, X
