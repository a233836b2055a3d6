"""Numba kernels of NSPCA (Zass & Shashua 2006): coordinate ascent on the entries of U (Algorithm 1).

Objective (Eq. 3), with ``A = X X'`` the d x d scatter matrix of the zero-mean data (not divided by n)::

    F(U) = 1/2 tr(U'AU) - alpha/4 ||I - U'U||_F^2 - beta 1'U1,      U >= 0  (d x k)

As a function of one entry ``x = u_rs`` (row s of column u_r) it is the quartic of Eq. 4,
``f(x) = -alpha/4 x^4 + c2/2 x^2 + c1 x + const``. Derivation (checked against the paper's c1, c2):

* ``1/2 tr(U'AU)`` contributes ``1/2 a_ss x^2 + x sum_{i != s} a_si u_ri``.
* ``||I - U'U||^2 = sum_p (1 - |u_p|^2)^2 + sum_{p != q} (u_p'u_q)^2``. With ``m = sum_{i != s} u_ri^2`` the
  term ``p = r`` is ``(1 - m - x^2)^2 = x^4 - 2(1 - m) x^2 + const``; with ``b_q = sum_{j != s} u_rj u_qj``
  the pairs ``(r, q), (q, r)`` give ``2 sum_{q != r} (x u_qs + b_q)^2
  = 2 x^2 sum_{q != r} u_qs^2 + 4 x sum_{q != r} u_qs b_q + const``.
* Times ``-alpha/4`` and collecting powers of x:

      c2 = a_ss + alpha - alpha sum_{i != s} u_ri^2 - alpha sum_{i != r} u_is^2
      c1 = sum_{i != s} a_si u_ri - alpha sum_{i != r} sum_{j != s} u_rj u_ij u_is - beta

  which is the paper's Eq. 4 (u_is = entry s of column i). Its derivative is the cubic of Eq. 5,
  ``-alpha x^3 + c2 x + c1 = 0``.

Caches (Section 4: "each update is done in O(d)"): ``AU = A U`` (d x k) and ``G = U'U`` (k x k). Then
``sum_{i != s} a_si u_ri = AU[s, r] - a_ss u_rs``, ``m = G[r, r] - u_rs^2`` and
``sum_{i != r} u_is b_i = sum_{i != r} u_is G[r, i] - u_rs sum_{i != r} u_is^2``: c1 and c2 cost O(k).
After a change ``delta`` of ``u_rs``: ``AU[:, r] += delta A[:, s]`` (O(d)) and row/column r of G (O(k)).

Sweep order: rows s in the outer loop, columns r in the inner loop. Changing entries of row s only moves
``AU[:, r]`` of their own column, so the updates of one row are independent in AU; the O(d) updates of
``AU`` for a block of ``block`` consecutive rows are therefore deferred and applied as one matrix product
``AU += A[:, blk] @ Delta`` (BLAS-3), while the rows inside the block see them through a small
``block x k`` correction. The result is the sequential coordinate ascent of Algorithm 1 (to round-off),
at the speed of a dense product: a sweep costs ``O(d^2 k)`` flops, like one ``A @ U``.

Overflow: the cubic is solved and the quartic compared in the scaled variable ``y = x / sigma`` with
``sigma = max(sqrt(|c2|/alpha), cbrt(|c1|/alpha))``, where both scaled coefficients lie in [-1, 1].
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import njit
from .._ties import TIE_RTOL

__all__ = [
    "nspca_argmax",
    "nspca_fit",
    "nspca_objective",
    "nspca_sweep",
    "solve_depressed_cubic",
]

_TWO_PI_3 = 2.0 * math.pi / 3.0


@njit
def _cbrt(x):
    return np.cbrt(x)


@njit
def _polish(y, P, Q):
    # Two safeguarded Newton steps on g(y) = y^3 + P y + Q: keep a step only if |g| decreases.
    g = y * (y * y + P) + Q
    for _ in range(2):
        dg = 3.0 * y * y + P
        if dg == 0.0 or g == 0.0:
            break
        y_new = y - g / dg
        g_new = y_new * (y_new * y_new + P) + Q
        if abs(g_new) < abs(g):
            y = y_new
            g = g_new
        else:
            break
    return y


@njit
def solve_depressed_cubic(P, Q):
    """Real roots of ``y^3 + P y + Q = 0`` (the form of Eq. 5 after dividing by ``-alpha``).

    Closed form: Cardano's formula in its cancellation-free variant when there is one real root
    (discriminant ``(Q/2)^2 + (P/3)^3 > 0``), the trigonometric (Viete) form when there are three,
    then two safeguarded Newton steps per root. The coefficients are first scaled so that
    ``max(sqrt|P|, cbrt|Q|) = 1``, so no intermediate over- or underflows.

    Returns
    -------
    (n, y0, y1, y2) : (int, float, float, float)
        The number of distinct real roots returned (1 to 3) and the roots in ascending order;
        unused slots are NaN. A repeated root is returned once.
    """
    nan = np.nan
    if not (math.isfinite(P) and math.isfinite(Q)):
        return 0, nan, nan, nan
    sigma = max(math.sqrt(abs(P)), _cbrt(abs(Q)))
    if sigma == 0.0:
        return 1, 0.0, nan, nan
    Ps = P / sigma / sigma
    Qs = Q / sigma / sigma / sigma
    D = 0.25 * Qs * Qs + (Ps / 3.0) ** 3
    if abs(D) <= 1e-14 and Ps < 0.0:
        # D = 0 to round-off (both terms are O(1) after scaling): a double root -3Q/(2P) and 3Q/P
        yd = _polish(-1.5 * Qs / Ps, Ps, Qs)
        ys = _polish(3.0 * Qs / Ps, Ps, Qs)
        if abs(ys - yd) <= 1e-7:
            return 1, yd * sigma, nan, nan
        if ys < yd:
            return 2, ys * sigma, yd * sigma, nan
        return 2, yd * sigma, ys * sigma, nan
    if D > 0.0:
        # One real root. t = the larger-magnitude Cardano term; the other is -P/(3t) (their product).
        sq = math.sqrt(D)
        if Qs >= 0.0:
            t = -_cbrt(0.5 * Qs + sq)
        else:
            t = _cbrt(-0.5 * Qs + sq)
        y = t - Ps / (3.0 * t) if t != 0.0 else 0.0
        y = _polish(y, Ps, Qs)
        return 1, y * sigma, nan, nan
    # Three real roots (Ps < 0): y_k = 2 sqrt(-P/3) cos(theta/3 - 2 pi k / 3).
    m = 2.0 * math.sqrt(-Ps / 3.0)
    arg = 3.0 * Qs / (Ps * m)
    arg = min(1.0, max(-1.0, arg))
    theta = math.acos(arg) / 3.0
    y0 = _polish(m * math.cos(theta), Ps, Qs)
    y1 = _polish(m * math.cos(theta - _TWO_PI_3), Ps, Qs)
    y2 = _polish(m * math.cos(theta - 2.0 * _TWO_PI_3), Ps, Qs)
    # ascending order
    if y0 > y1:
        y0, y1 = y1, y0
    if y1 > y2:
        y1, y2 = y2, y1
    if y0 > y1:
        y0, y1 = y1, y0
    # collapse repeated roots (D == 0): equal up to round-off of the unit-scaled problem
    tol = 1e-7
    if y1 - y0 <= tol and y2 - y1 <= tol:
        return 1, y1 * sigma, nan, nan
    if y1 - y0 <= tol:
        return 2, 0.5 * (y0 + y1) * sigma, y2 * sigma, nan
    if y2 - y1 <= tol:
        return 2, y0 * sigma, 0.5 * (y1 + y2) * sigma, nan
    return 3, y0 * sigma, y1 * sigma, y2 * sigma


@njit
def _quartic_scaled(y, Ps, Qs):
    # f(sigma y) / (alpha sigma^4) = -y^4/4 - Ps y^2/2 - Qs y  with Ps = -c2/(alpha sigma^2),
    # Qs = -c1/(alpha sigma^3): Eq. 4 up to a positive factor, so it has the same maximizer.
    y2 = y * y
    return -0.25 * y2 * y2 - 0.5 * Ps * y2 - Qs * y


@njit
def _tie(y, Ps, Qs):
    # Values of -y^4/4 - Ps y^2/2 - Qs y closer than this tie: TIE_RTOL of the terms' size, the
    # scale of the cancellation that makes the value (a local maximum level with x = 0 is a value of 0 made
    # of terms of size y^4).
    y2 = y * y
    return TIE_RTOL * (0.25 * y2 * y2 + 0.5 * abs(Ps) * y2 + abs(Qs) * abs(y))


@njit
def _argmax_robust(c1, c2, alpha, x_cur):
    # Eq. 4 maximized in the scaled variable y = x / sigma, sigma = max(sqrt(|c2|/alpha), cbrt(|c1|/alpha)),
    # formed without overflow; candidates are 0 and the positive roots from the closed-form solver.
    sigma = max(math.sqrt(abs(c2)) / math.sqrt(alpha), np.cbrt(abs(c1)) / np.cbrt(alpha))
    if not math.isfinite(sigma):
        return np.nan
    if sigma == 0.0:
        return 0.0  # f = -alpha/4 x^4
    Ps = -((c2 / sigma) / sigma) / alpha
    Qs = -(((c1 / sigma) / sigma) / sigma) / alpha
    n, r0, r1, r2 = solve_depressed_cubic(Ps, Qs)
    best_y = 0.0
    best_f = 0.0  # f(0)
    for i in range(n):
        y = r0 if i == 0 else (r1 if i == 1 else r2)
        if y > 0.0:
            fy = _quartic_scaled(y, Ps, Qs)
            if fy > best_f + _tie(y, Ps, Qs):
                best_f = fy
                best_y = y
    y_cur = x_cur / sigma
    slack = _tie(max(y_cur, best_y), Ps, Qs) if (y_cur == 0.0) != (best_y == 0.0) else 0.0
    if math.isfinite(y_cur) and _quartic_scaled(y_cur, Ps, Qs) >= best_f - slack:
        return x_cur
    return best_y * sigma


@njit
def _largest_root(p, q, x_hint):
    # Largest real root of g(x) = x^3 + p x + q, known to be >= 0. For x >= xm = sqrt(max(-p, 0)/3) g is
    # increasing and convex, so Newton from any start there with g >= 0 decreases monotonically to the root.
    xm = math.sqrt(max(-p, 0.0) / 3.0)
    x = x_hint
    if not (x >= xm and x * (x * x + p) + q >= 0.0):
        # for x >= ub: x^2 >= -2p and x^3 >= -2q, so g(x) >= x^3 - x^3/2 - x^3/2 = 0
        x = max(math.sqrt(max(-2.0 * p, 0.0)), np.cbrt(max(-2.0 * q, 0.0)))
    for _ in range(100):
        gx = x * (x * x + p) + q
        if gx <= 0.0:
            break
        x_new = x - gx / (3.0 * x * x + p)
        if not x_new < x:
            break
        x = x_new
    return x


@njit
def nspca_argmax(c1, c2, alpha, x_cur):
    """Global maximizer over ``x >= 0`` of Eq. 4, ``f(x) = -alpha/4 x^4 + c2/2 x^2 + c1 x``.

    Algorithm 1 evaluates ``f`` at zero and at the non-negative real roots of Eq. 5,
    ``f'(x) = -alpha x^3 + c2 x + c1 = 0``. With ``p = -c2/alpha``, ``q = -c1/alpha`` the roots are those of
    ``g(x) = x^3 + p x + q`` and only the largest can be a non-negative maximizer (by Descartes' rule:
    ``c1 > 0`` gives one positive root, the maximizer; ``c1 < 0`` gives none or two, of which the larger
    is the local maximum and competes with ``x = 0``; ``c1 = 0`` gives ``sqrt(c2/alpha)`` if ``c2 > 0``).
    That root is found by monotone Newton steps from ``x_cur`` or from an upper bound; coefficients so
    large or small that ``p`` or ``q`` could overflow go to the scaled closed form
    (:func:`solve_depressed_cubic`). The current value ``x_cur`` is kept unless a candidate is strictly
    better, so that coordinate ascent never decreases the objective and never cycles between ties.

    Ties: where the choice is between 0 and a positive value (the entry's support), values
    within ``TIE_RTOL`` (1e-12) of the size of the quartic's terms tie, so a local maximum level with
    ``f(0)`` (the switching point of an entry) is not decided by the last bits: the tie goes to ``x_cur``,
    else to 0. A move between two positive values keeps the exact comparison.

    Returns
    -------
    float
        The maximizer, or NaN when ``c1``, ``c2`` or ``alpha`` is not finite.
    """
    if not (math.isfinite(c1) and math.isfinite(c2) and math.isfinite(alpha)) or alpha <= 0.0:
        return np.nan
    p = -c2 / alpha
    q = -c1 / alpha
    ap = abs(p)
    aq = abs(q)
    if not (ap < 1e100 and aq < 1e150) or (0.0 < ap < 1e-100) or (0.0 < aq < 1e-150):
        return _argmax_robust(c1, c2, alpha, x_cur)
    # h(x) = f(x) / alpha = -x^4/4 - p x^2/2 - q x  (h(0) = 0)
    best = 0.0
    if q < 0.0 or (q == 0.0 and p < 0.0):
        best = _largest_root(p, q, x_cur)  # f increasing on [0, root]: beats 0
    elif p < 0.0 and 4.0 * p * p * p + 27.0 * q * q < 0.0:
        r = _largest_root(p, q, x_cur)  # three real roots, two positive: local max r vs 0
        if -0.25 * r**4 - 0.5 * p * r * r - q * r > _tie(r, p, q):
            best = r
    if x_cur != best:
        hc = -0.25 * x_cur**4 - 0.5 * p * x_cur * x_cur - q * x_cur
        # a switch between 0 and a positive value (the support) needs more than a tie; a move along x > 0
        # any strict improvement, as before
        slack = _tie(max(x_cur, best), p, q) if (x_cur == 0.0) != (best == 0.0) else 0.0
        if hc >= -0.25 * best**4 - 0.5 * p * best * best - q * best - slack:
            return x_cur
    return best


@njit
def _default_max_sparse(block, k):
    # Changed rows of a block up to which the per-row AU update is used (measured on CBCL, d = 361,
    # block = 32; docs/notes/2026-11-28-performance.md): at k = 1 it beats the panel product (a gemv) even
    # when every row changed; at k = 10 it is even up to block // 8 rows and 1.8x slower for every block.
    if k == 1:
        return block
    return block // 8


@njit
def nspca_sweep(A, U, AU, G, alpha, beta, block, max_sparse=-1):
    """One sweep of Algorithm 1 over all entries of ``U`` (rows s outer, columns r inner), in place.

    Parameters
    ----------
    A : ndarray (d, d), C-contiguous
        Scatter matrix ``X X'`` of the zero-mean data (columns of X are samples).
    U : ndarray (d, k)
        Current non-negative principal vectors as columns; updated in place.
    AU : ndarray (d, k)
        Cache ``A @ U`` on entry; kept equal to it (to round-off) on exit.
    G : ndarray (k, k)
        Cache ``U' @ U`` on entry; kept equal to it on exit.
    alpha, beta : float
        Penalties of Eq. 3.
    block : int
        Rows whose AU updates are deferred into one matrix product (any value >= 1 gives the same result).
    max_sparse : int, optional
        A block in which at most this many rows changed updates ``AU`` from those rows only (``AU[:, r] +=
        delta_rs A[s, :]`` per changed entry, reading only their rows of ``A``); a block with more changed
        rows uses the matrix product ``AU += A[:, blk] @ Delta``. The default -1 means ``block`` at one
        component and ``block // 8`` at more (measured: docs/notes/2026-11-28-performance.md); 0 is the
        matrix product always. Both give the same iterates up to the summation order of ``AU``.

    Returns
    -------
    (status, n_changed) : (int, int)
        ``status`` is -1 when every update was finite, else the flat index ``s * k + r`` of the first entry
        whose update was not finite (the sweep stops there). ``n_changed`` counts the entries that moved.
    """
    d, k = U.shape
    Aflat = A.reshape(-1)
    Delta = np.zeros((block, k))
    Lc = np.zeros((block, k))  # in-block correction: AU_true[s] = AU[s] + Lc[s - b0]
    delta = np.zeros(k)
    changed = np.empty(block, dtype=np.int64)  # block-relative rows that changed, in order
    if max_sparse < 0:
        max_sparse = _default_max_sparse(block, k)
    n_changed = 0
    for b0 in range(0, d, block):
        b1 = min(d, b0 + block)
        nb = b1 - b0
        n_rows = 0
        for s in range(b0, b1):
            a_ss = A[s, s]
            row_changed = False
            for r in range(k):
                x_old = U[s, r]
                # Eq. 4 coefficients from the caches, O(k)
                rs2 = 0.0  # sum_{i != r} u_is^2
                cr = 0.0  # sum_{i != r} u_is G[r, i]
                for i in range(k):
                    if i != r:
                        ui = U[s, i]
                        rs2 += ui * ui
                        cr += ui * G[r, i]
                s1 = AU[s, r] + Lc[s - b0, r] - a_ss * x_old  # sum_{i != s} a_si u_ri
                m = G[r, r] - x_old * x_old  # sum_{i != s} u_ri^2
                cross = cr - x_old * rs2  # sum_{i != r} sum_{j != s} u_rj u_ij u_is
                c1 = s1 - alpha * cross - beta
                c2 = a_ss + alpha - alpha * m - alpha * rs2
                x_new = nspca_argmax(c1, c2, alpha, x_old)
                if not math.isfinite(x_new):
                    return s * k + r, n_changed
                dx = x_new - x_old
                delta[r] = dx
                if dx != 0.0:
                    n_changed += 1
                    row_changed = True
                    U[s, r] = x_new
                    for i in range(k):
                        if i != r:
                            G[r, i] += dx * U[s, i]
                            G[i, r] = G[r, i]
                    G[r, r] += x_new * x_new - x_old * x_old
            if row_changed:
                changed[n_rows] = s - b0
                n_rows += 1
                for r in range(k):
                    Delta[s - b0, r] = delta[r]
                for t in range(s - b0 + 1, nb):  # only rows still to come in this block
                    a_ts = A[b0 + t, s]
                    if a_ts != 0.0:
                        for r in range(k):
                            Lc[t, r] += a_ts * delta[r]
            for r in range(k):
                delta[r] = 0.0
        if 0 < n_rows <= max_sparse:
            # few rows changed: AU += A[:, s] Delta[s]' (A symmetric: A[:, s] = A[s, :]) per changed row s,
            # reading only those rows of A instead of the whole panel
            for j in range(n_rows):
                t = changed[j]
                s = b0 + t
                if k == 1:
                    dl = Delta[t, 0]
                    for i in range(d):
                        AU[i, 0] += dl * A[s, i]
                else:
                    for i in range(d):
                        a_si = A[s, i]
                        for r in range(k):
                            AU[i, r] += a_si * Delta[t, r]
                Delta[t, :] = 0.0
            Lc[:nb] = 0.0
        elif n_rows > 0:
            # AU += A[:, b0:b1] @ Delta  (A symmetric: A[:, blk] = A[blk, :]')
            panel = Aflat[b0 * d : b1 * d].reshape((nb, d))
            AU += np.dot(panel.T, Delta[:nb])
            Delta[:nb] = 0.0
            Lc[:nb] = 0.0
    return -1, n_changed


@njit
def nspca_objective(U, AU, G, alpha, beta):
    """Eq. 3 from the caches: ``1/2 tr(U'AU) - alpha/4 ||I - U'U||_F^2 - beta sum(U)``."""
    d, k = U.shape
    var = 0.0
    l1 = 0.0
    for s in range(d):
        for r in range(k):
            var += U[s, r] * AU[s, r]
            l1 += U[s, r]
    pen = 0.0
    for p in range(k):
        for q in range(k):
            e = (1.0 if p == q else 0.0) - G[p, q]
            pen += e * e
    return 0.5 * var - 0.25 * alpha * pen - beta * l1


@njit
def nspca_fit(A, U0, alpha, beta, max_iter, tol, block, refresh, max_sparse=-1):
    """Run sweeps of Algorithm 1 from ``U0`` until the objective's relative gain is at most ``tol``.

    The caches ``AU = A U`` and ``G = U'U`` are recomputed from scratch every ``refresh`` sweeps
    (one matrix product) so that round-off cannot accumulate over long runs. ``max_sparse`` chooses the
    ``AU`` update of each block of rows, as in :func:`nspca_sweep`.

    Returns
    -------
    U : ndarray (d, k)
    objective : ndarray (n_iter + 1,)
        Eq. 3 at the start and after each sweep (non-decreasing up to round-off).
    overlap : ndarray (n_iter + 1,)
        ``||I - U'U||_F`` at the start and after each sweep.
    l0 : ndarray (n_iter + 1,) of int64
        Number of non-zero entries of U at the start and after each sweep.
    n_iter : int
    status : int
        1 converged, 0 reached ``max_iter``, -(1 + flat index) when an entry became non-finite.
    """
    d, k = U0.shape
    U = U0.copy()
    AU = np.dot(A, U)
    G = np.dot(U.T, U)
    # History buffers grow by doubling: max_iter may be huge (10**13 = "until converged").
    cap = min(max_iter + 1, 1024)
    obj = np.empty(cap)
    ovl = np.empty(cap)
    l0 = np.empty(cap, dtype=np.int64)
    obj[0] = nspca_objective(U, AU, G, alpha, beta)
    ovl[0] = _overlap(G)
    l0[0] = _count_nonzero(U)
    status = 0
    it = 0
    while it < max_iter:
        bad, n_changed = nspca_sweep(A, U, AU, G, alpha, beta, block, max_sparse)
        it += 1
        if bad >= 0:
            status = -(1 + bad)
            break
        if refresh > 0 and it % refresh == 0:
            AU[:, :] = np.dot(A, U)
            G[:, :] = np.dot(U.T, U)
        if it >= cap:
            cap = 2 * cap
            obj2 = np.empty(cap)
            ovl2 = np.empty(cap)
            l02 = np.empty(cap, dtype=np.int64)
            obj2[:it] = obj[:it]
            ovl2[:it] = ovl[:it]
            l02[:it] = l0[:it]
            obj, ovl, l0 = obj2, ovl2, l02
        obj[it] = nspca_objective(U, AU, G, alpha, beta)
        ovl[it] = _overlap(G)
        l0[it] = _count_nonzero(U)
        if not math.isfinite(obj[it]):
            status = -(1 + d * k)
            break
        if n_changed == 0 or abs(obj[it] - obj[it - 1]) <= tol * max(abs(obj[it]), 1e-300):
            status = 1
            break
    return U, obj[: it + 1].copy(), ovl[: it + 1].copy(), l0[: it + 1].copy(), it, status


@njit
def _overlap(G):
    k = G.shape[0]
    pen = 0.0
    for p in range(k):
        for q in range(k):
            e = (1.0 if p == q else 0.0) - G[p, q]
            pen += e * e
    return math.sqrt(pen)


@njit
def _count_nonzero(U):
    c = 0
    for v in U.ravel():
        if v != 0.0:
            c += 1
    return c
