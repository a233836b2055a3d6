"""Numba kernels for EM sparse and non-negative PCA (Sigg & Buhmann 2008).

``kth_largest``
    Quickselect (Hoare partition, median-of-three pivot) on a work buffer: the k-th largest of the
    first ``n`` entries in O(n) expected time, in place, no allocation.
``mstep_threshold``
    The threshold ``s_(K+1)`` of Algorithm 2: the (K+1)-th largest magnitude (Eq. 14), or positive
    value (Eq. 17), among the features not excluded (Eq. 19); 0 when at most ``K`` are candidates.
``mstep_cut``
    The threshold with ties broken exactly: when ``s_K = s_(K+1)`` the tied features of lowest index
    fill the ``K`` places and the threshold drops to the next smaller value, so exactly ``K`` entries
    stay non-zero whenever ``K`` candidates exist (Algorithm 2 as printed would zero them all).
    Near-ties are left to the computed values, on purpose: the cut is inside the EM's
    iteration, a near-tie at the ``K``-th place moves with every iterate, and a tolerance there would be
    another M-step than Algorithm 2. Exact ties (duplicated features give bit-identical ``f`` entries:
    the same products of the same numbers) are the ones the data make, and they are broken by index. A
    fixed point whose ``K``-th and ``(K+1)``-th magnitudes agree to round-off is a point where the method
    itself is sensitive; none of the project's experiments moved there between OpenBLAS kernels.
``constrained_mstep``
    The constrained M-step: soft threshold at the cut, then ``w <- w / ||w||_2``.
``em_update``
    Everything of one EM iteration but the two BLAS products, in three passes over ``D``: the
    threshold (with the previous iteration's as a hint, so the selection runs on a few candidates),
    the squared norm, then normalization fused with the convergence measure ``|w(t+1)' w(t)|``.
``em_update_block``
    :func:`em_update` on each active row of a block of restarts (``R x D``): the restarts of one
    component run together, their products are one matrix-matrix product, this kernel does the rest.

``support_of``, ``gather_matvec``, ``gather_rmatvec``
    A sparse iterate through its support: its indices; ``X w`` and chosen entries of ``X'y`` from the
    transposed data (``X w`` from the row-major data: :func:`repro._linalg_kernels.support_matvec`).
``screen_reference``, ``em_update_screened``
    The screened iterations on data with ``N << D``: only the entries of ``X'y`` a bound cannot rule out
    of the top ``K + 1`` are computed (see :func:`em_update_screened`).
``em_rows_matrix``, ``em_rows_data``
    Whole EM runs: every listed restart iterated to its end (the stops, the support-stable stop, the
    first products) in one call, through a ``D x D`` covariance or through the data (screened or not);
    Python is entered again only to redraw a collapsed start or to grow the history.

The per-iteration kernels allocate nothing (buffers are passed in); the whole-run kernels allocate their
scratch once per call, and their dense products (``np.dot`` in Numba) run on the BLAS that SciPy ships.
The per-iteration loop (``repro.em_sparse_pca``, for the other operators) calls NumPy's BLAS.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from .._linalg_kernels import support_matvec

__all__ = [
    "constrained_mstep",
    "em_rows_data",
    "em_rows_matrix",
    "em_update",
    "em_update_block",
    "em_update_screened",
    "gather_matvec",
    "gather_rmatvec",
    "kth_largest",
    "mstep_cut",
    "mstep_threshold",
    "screen_reference",
    "support_of",
    "top_support",
]

# Status codes of an EM run (used by repro.em_sparse_pca).
CONVERGED = 0
MAX_ITER = 1
COLLAPSED = 2

# A hint h for the threshold gathers the candidates above HINT_FACTOR * h.
HINT_FACTOR = 0.9


@njit
def kth_largest(a, n, k):
    """Return the ``k``-th largest (1-based) of ``a[:n]``; ``a`` is reordered in place.

    Hoare-partition quickselect with a median-of-three pivot (the classic ``select`` of Press et al.,
    Numerical Recipes, Sec. 8.5): O(n) expected, no allocation.

    Parameters
    ----------
    a : float64 array, shape (>= n,)
        Work buffer; its first ``n`` entries are the values. Destroyed.
    n : int
    k : int, 1 <= k <= n
    """
    # The k-th largest is the element of 0-based rank n - k in ascending order.
    r = n - k
    lo = 0
    hi = n - 1
    while True:
        if hi <= lo + 1:
            if hi == lo + 1 and a[hi] < a[lo]:
                a[lo], a[hi] = a[hi], a[lo]
            return a[r]
        mid = (lo + hi) >> 1
        a[mid], a[lo + 1] = a[lo + 1], a[mid]
        if a[lo] > a[hi]:
            a[lo], a[hi] = a[hi], a[lo]
        if a[lo + 1] > a[hi]:
            a[lo + 1], a[hi] = a[hi], a[lo + 1]
        if a[lo] > a[lo + 1]:
            a[lo], a[lo + 1] = a[lo + 1], a[lo]
        # Now a[lo] <= a[lo+1] = pivot <= a[hi] (sentinels for the scans below).
        i = lo + 1
        j = hi
        pivot = a[lo + 1]
        while True:
            i += 1
            while a[i] < pivot:
                i += 1
            j -= 1
            while a[j] > pivot:
                j -= 1
            if j < i:
                break
            a[i], a[j] = a[j], a[i]
        a[lo + 1] = a[j]
        a[j] = pivot
        if j >= r:
            hi = j - 1
        if j <= r:
            lo = i


#: :func:`top_support` selects its threshold through a sample once it has at least this many candidates
#: (and at least ``8 K``); below that the quickselect over all of them is as fast.
SAMPLE_MIN = 4096
#: Entries of that sample (evenly spaced over the candidates).
SAMPLE_SIZE = 512


@njit
def _kth_by_sample(work, m, k):
    """The ``k``-th largest of ``work[:m]`` through a sample, or -1.0 when the sample misjudged it.

    ``SAMPLE_SIZE`` evenly spaced entries give a bound ``lb``: their ``kk``-th largest, ``kk`` the
    sample's expected count above the ``k``-th largest plus three standard deviations and four. The
    entries ``>= lb`` are compacted to the front of ``work`` (in place, one pass); when there are at least
    ``k`` of them the ``k``-th largest of all is theirs (every entry above it is ``>= lb``), found by
    :func:`kth_largest` on those few. Otherwise ``work`` no longer holds the values and -1.0 says so."""
    ns = SAMPLE_SIZE
    s = np.empty(ns)
    for i in range(ns):
        s[i] = work[(i * m) // ns]
    mu = k * ns / m
    kk = min(ns, int(mu + 3.0 * np.sqrt(mu)) + 4)
    lb = kth_largest(s, ns, kk)
    c = 0
    for i in range(m):
        a = work[i]
        if a >= lb:
            work[c] = a
            c += 1
    if c < k:
        return -1.0
    return kth_largest(work, c, k)


@njit
def top_support(f, K, nonneg, excluded, work, idx):
    """The support of a truncated-power step: the indices of the ``K`` largest magnitudes of ``f``
    (largest positive entries when ``nonneg``; ``excluded`` left out; only non-zero candidates), in
    increasing order, into ``idx``; returns how many (``min(K, candidates)``). Ties at the ``K``-th value
    go to the lower indices. ``work`` (``>= len(f)``) is scratch. O(D): one pass for the candidates'
    magnitudes, the ``K``-th of them (through a sample, :func:`_kth_by_sample`, when there are many:
    4-5x faster than :func:`kth_largest` on all 12,582 of the leukemia data), one pass to count the
    entries above it and one to collect."""
    D = f.shape[0]
    m = _gather(f, nonneg, excluded, 0.0, work)[0]
    if m <= K:
        n = 0
        for i in range(D):
            if not excluded[i] and (f[i] > 0.0 if nonneg else f[i] != 0.0):
                idx[n] = i
                n += 1
        return n
    thr = -1.0
    if m >= SAMPLE_MIN and 8 * K <= m:
        thr = _kth_by_sample(work, m, K)
        if thr < 0.0:  # the sample's bound left fewer than K: select among every candidate
            _gather(f, nonneg, excluded, 0.0, work)
    if thr < 0.0:
        thr = kth_largest(work, m, K)
    above = 0
    for i in range(D):
        if not excluded[i] and (f[i] if nonneg else abs(f[i])) > thr:
            above += 1
    ties = K - above  # entries equal to thr to take, lowest indices first
    n = 0
    for i in range(D):
        if excluded[i]:
            continue
        a = f[i] if nonneg else abs(f[i])
        if a > thr or (a == thr and ties > 0):
            if a == thr:
                ties -= 1
            idx[n] = i
            n += 1
    return n


@njit
def _gather(wstar, nonneg, excluded, lb, work):
    """Copy the candidate magnitudes above ``lb`` into ``work``; return (count above lb, count above 0)."""
    m_all = 0
    m = 0
    for i in range(wstar.shape[0]):
        if excluded[i]:
            continue
        v = wstar[i]
        a = v if nonneg else abs(v)
        if a > 0.0:
            m_all += 1
            if a > lb:
                work[m] = a
                m += 1
    return m, m_all


@njit
def mstep_threshold(wstar, K, nonneg, excluded, work, hint):
    """The threshold ``s_(K+1)`` of Algorithm 2 (Sigg & Buhmann 2008), found by selection in O(D).

    Algorithm 2's loop "add (s_k - s_(k+1)) to elements 1..k for k = 1..K" sums to
    ``w_i = s_i - s_(K+1)`` on the K largest magnitudes ``s``: a soft threshold at the (K+1)-th largest.
    With ``nonneg`` (Eq. 17) only positive entries are candidates; excluded features (Eq. 19) never are.

    Parameters
    ----------
    wstar : float64 array, shape (D,)
    K : int
    nonneg : bool
    excluded : bool array, shape (D,)
    work : float64 array, shape (D,)
        Scratch buffer.
    hint : float
        A guess of the threshold (e.g. the previous EM iteration's); only candidates above
        ``HINT_FACTOR * hint`` are selected from, unless fewer than ``K + 1`` are, when all are used. Any
        value gives the same result; ``0`` means no hint.

    Returns
    -------
    thr : float
        ``s_(K+1)``, or 0.0 when at most ``K`` candidates exist.
    """
    return _select(wstar, K, nonneg, excluded, work, hint)[0]


@njit
def _select(wstar, K, nonneg, excluded, work, hint):
    """``(s_(K+1), s_K)`` among the candidates (``(0, 0)`` when at most ``K`` exist).

    Quickselect leaves ``work[r+1:m]`` (``r = m - K - 1``) holding the K largest candidates, so ``s_K``
    is their minimum: O(K) more, and a tie ``s_K = s_(K+1)`` is detected without another pass over D.
    """
    lb = HINT_FACTOR * hint if hint > 0.0 else 0.0
    m, m_all = _gather(wstar, nonneg, excluded, lb, work)
    if K >= m_all:
        return 0.0, 0.0
    if m < K + 1:  # the hint was too high: use every candidate
        m, m_all = _gather(wstar, nonneg, excluded, 0.0, work)
    thr = kth_largest(work, m, K + 1)
    s_k = work[m - K]
    for i in range(m - K + 1, m):
        if work[i] < s_k:
            s_k = work[i]
    return thr, s_k


@njit
def mstep_cut(wstar, K, nonneg, excluded, work, hint):
    """The threshold of :func:`mstep_threshold` with ties at the boundary broken exactly.

    Returns ``(thr, top, n_tie)``: an entry with magnitude ``a`` is kept (as ``a - thr``) when ``a > top``,
    and the first ``n_tie`` entries (lowest index) with ``a == top`` are kept too. Without a tie
    (``s_K > s_(K+1)``) this is ``(s_(K+1), s_(K+1), 0)``, Algorithm 2 exactly. With a tie
    (``s_K = s_(K+1)``), ``top = s_K``, ``n_tie = K - #{a > s_K}`` and ``thr`` is the largest candidate
    magnitude below ``s_K`` (0 if none): the K kept entries are the K largest, ties taken by index, and
    all K are non-zero. Algorithm 2 as printed gives the K-th entry ``s_K - s_(K+1) = 0`` there, so two
    identical features with ``K = 1`` collapse the M-step to the zero vector.
    """
    thr, s_k = _select(wstar, K, nonneg, excluded, work, hint)
    if thr == 0.0:  # at most K candidates: keep every positive one
        return 0.0, 0.0, 0
    if s_k > thr:  # no tie (the usual case): Algorithm 2 as printed
        return thr, thr, 0
    n_gt = 0
    below = 0.0
    for i in range(wstar.shape[0]):
        if excluded[i]:
            continue
        v = wstar[i]
        a = v if nonneg else abs(v)
        if a > thr:
            n_gt += 1
        elif a < thr and a > below:
            below = a
    if n_gt >= K:
        return thr, thr, 0
    return below, thr, K - n_gt


@njit
def _cut(v, thr, top, nonneg, left):
    """Entry of the thresholded vector and the tie places left after it (see :func:`mstep_cut`)."""
    a = v if nonneg else abs(v)
    if a > top or (a == top and left > 0 and a > 0.0):
        if not a > top:
            left -= 1
        r = a - thr
        if not nonneg and v < 0.0:
            r = -r
        return r, left
    return 0.0, left


@njit
def constrained_mstep(wstar, K, nonneg, excluded, out, work):
    """Project the unconstrained M-step solution and normalize it (Sigg & Buhmann 2008, Alg. 2, Eq. 17).

    The solution of Eq. 14 with the l1 bound set implicitly by the cardinality ``K`` is the soft
    threshold of ``w*`` at ``s_(K+1)`` (:func:`mstep_threshold`), times ``sign(w*_i)``; with ``nonneg``
    negative entries are zero first (Eq. 17); excluded features are zero (Eq. 19).

    Parameters
    ----------
    wstar : float64 array, shape (D,)
        Unconstrained M-step solution ``f / h`` (Eq. 13); any positive multiple gives the same ``out``.
    K : int
        Cardinality; ``K >= D`` means no sparsity constraint.
    nonneg : bool
    excluded : bool array, shape (D,)
        Features forced to zero.
    out : float64 array, shape (D,)
        Receives the unit-norm result (all zeros when nothing is left).
    work : float64 array, shape (D,)
        Scratch buffer.

    Returns
    -------
    norm : float
        ``||w||_2`` before normalization; 0.0 when the projection is the zero vector (collapse).
    """
    D = wstar.shape[0]
    thr, top, left = mstep_cut(wstar, K, nonneg, excluded, work, 0.0)
    s = 0.0
    for i in range(D):
        r = 0.0
        if not excluded[i]:
            r, left = _cut(wstar[i], thr, top, nonneg, left)
        out[i] = r
        s += r * r
    norm = np.sqrt(s)
    if norm > 0.0:
        inv = 1.0 / norm
        for i in range(D):
            out[i] *= inv
    return norm


@njit
def em_update(f, K, nonneg, excluded, w, work, state):
    """The O(D) part of one EM iteration (Sigg & Buhmann 2008, Alg. 2), in three passes.

    ``f = X'y`` is the caller's BLAS product. The M-step ``w* = f / y'y`` (Eq. 13) is only rescaled by
    the normalization, so ``f`` is thresholded directly: ``w(t+1) = T(f) / ||T(f)||`` with ``T`` the
    soft threshold at :func:`mstep_cut` (hinted by the previous threshold, ``state[0]``), and
    ``|w(t+1)' w(t)|`` is accumulated while ``w`` is overwritten.

    Parameters
    ----------
    f : float64 array, shape (D,)
        ``X'y``; not modified.
    K, nonneg, excluded
        As in :func:`constrained_mstep`.
    w : float64 array, shape (D,)
        ``w(t)`` (unit norm) on entry, ``w(t+1)`` on exit (zeros after a collapse).
    work : float64 array, shape (D,)
        Scratch buffer.
    state : float64 array, shape (1,)
        ``state[0]``: the previous threshold on entry (0: none), this one (``s_(K+1)``) on exit.

    Returns
    -------
    norm : float
        ``||T(f)||_2`` (0.0: collapse to the zero vector).
    cosine : float
        ``|w(t+1)' w(t)|`` (0.0 after a collapse).
    """
    D = f.shape[0]
    thr, top, n_tie = mstep_cut(f, K, nonneg, excluded, work, state[0])
    state[0] = top
    s = 0.0
    if n_tie == 0:  # the usual case, without the tie bookkeeping: keep a > top, as a - thr
        for i in range(D):
            if excluded[i]:
                continue
            v = f[i]
            a = v if nonneg else abs(v)
            if a > top:
                r = a - thr
                s += r * r
    else:
        left = n_tie
        for i in range(D):
            if not excluded[i]:
                r, left = _cut(f[i], thr, top, nonneg, left)
                s += r * r
    norm = np.sqrt(s)
    if not norm > 0.0:
        for i in range(D):
            w[i] = 0.0
        return 0.0, 0.0
    inv = 1.0 / norm
    c = 0.0
    if n_tie == 0:
        for i in range(D):
            r = 0.0
            if not excluded[i]:
                v = f[i]
                a = v if nonneg else abs(v)
                if a > top:
                    r = (a - thr) * inv
                    if not nonneg and v < 0.0:
                        r = -r
            c += r * w[i]
            w[i] = r
    else:
        left = n_tie
        for i in range(D):
            r = 0.0
            if not excluded[i]:
                r, left = _cut(f[i], thr, top, nonneg, left)
                r *= inv
            c += r * w[i]
            w[i] = r
    return norm, abs(c)


@njit
def em_update_block(F, K, nonneg, excluded, W, work, state, rows, norms, cosines):
    """:func:`em_update` for a block of restarts run together.

    Parameters
    ----------
    F : float64 array, shape (m, D)
        Row ``j`` is ``C w`` (any positive multiple) for the restart ``rows[j]``; not modified.
    K, nonneg, excluded
        As in :func:`constrained_mstep`.
    W : float64 array, shape (R, D)
        All restarts' iterates (rows, unit norm); the rows named in ``rows`` are updated in place.
    work : float64 array, shape (D,)
    state : float64 array, shape (R,)
        Per restart, the previous threshold (the hint of :func:`mstep_threshold`).
    rows : int64 array, shape (m,)
        The active restarts (those not converged or collapsed).
    norms, cosines : float64 arrays, shape (>= m,)
        Receive :func:`em_update`'s two results per active restart.
    """
    for j in range(rows.shape[0]):
        r = rows[j]
        n, c = em_update(F[j], K, nonneg, excluded, W[r], work, state[r : r + 1])
        norms[j] = n
        cosines[j] = c


# --------------------------------------------------------------------------- screened iterations (N << D)
# Status of :func:`em_update_screened`: the bound did not settle the threshold, a full product is needed.
NEED_FULL = -1
_EPS = 2.220446049250313e-16


@njit
def support_of(w, idx):
    """Write the indices of the non-zeros of ``w`` (increasing) into ``idx``; return how many."""
    n = 0
    for i in range(w.shape[0]):
        if w[i] != 0.0:
            idx[n] = i
            n += 1
    return n


@njit
def gather_matvec(At, idx, n, w, y):
    """``y = X[:, idx[:n]] @ w[idx[:n]]`` from the transposed data ``At = X'`` (``D x N``, C-contiguous):
    ``X w`` through the support of a sparse ``w`` (``N n`` flops on contiguous rows)."""
    for i in range(At.shape[1]):
        y[i] = 0.0
    for t in range(n):
        j = idx[t]
        wj = w[j]
        for i in range(At.shape[1]):
            y[i] += At[j, i] * wj


@njit
def gather_rmatvec(At, idx, n, y, out):
    """``out[:n] = X[:, idx[:n]].T @ y`` from ``At = X'``: the entries ``idx`` of ``X'y`` alone (``N n``
    flops on contiguous rows). Each entry is summed in sample order; four entries at a time, so the four
    sums run as independent chains instead of one long dependent one."""
    N = At.shape[1]
    t = 0
    while t + 4 <= n:
        j0, j1, j2, j3 = idx[t], idx[t + 1], idx[t + 2], idx[t + 3]
        s0 = s1 = s2 = s3 = 0.0
        for i in range(N):
            yi = y[i]
            s0 += At[j0, i] * yi
            s1 += At[j1, i] * yi
            s2 += At[j2, i] * yi
            s3 += At[j3, i] * yi
        out[t], out[t + 1], out[t + 2], out[t + 3] = s0, s1, s2, s3
        t += 4
    while t < n:
        j = idx[t]
        s = 0.0
        for i in range(N):
            s += At[j, i] * y[i]
        out[t] = s
        t += 1


@njit
def _mag(v, nonneg):
    return v if nonneg else abs(v)


@njit
def screen_reference(f, nonneg, excluded, top, ref):
    """After a full product ``f = X'y`` (and :func:`em_update` on it, whose threshold is ``top``): the
    indices of the candidates with magnitude ``>= top`` (at least ``K + 1`` of them) into ``ref``; returns
    how many, 0 when ``top <= 0`` (at most ``K`` candidates: nothing to screen with)."""
    if not top > 0.0:
        return 0
    n = 0
    for i in range(f.shape[0]):
        if not excluded[i] and _mag(f[i], nonneg) >= top:
            ref[n] = i
            n += 1
    return n


@njit
def _interval(f0j, ej, half, nonneg):
    """Bounds of the candidate magnitude of ``f_j`` in ``[f0j + ej - half, f0j + ej + half]``."""
    c = f0j + ej
    if nonneg:
        return c - half, c + half
    a = abs(c)
    return max(a - half, 0.0), a + half


@njit
def em_update_screened(
    At, colnorm, K, nonneg, excluded, w, supp, ns, y, y0, f0, ref, nref, state, cand, fc, nomask, work,
    max_cand, Ut, B, cr, dy, cvec,
):  # fmt: skip
    """One EM iteration's M-step from ``y = X w`` without the full product ``X'y``, when a bound settles it.

    ``f0 = X'y0`` is the last full product (``y0`` its E-step), ``dy = y - y0``. For every feature,
    ``f_j - f0_j = a_j'dy`` (``a_j`` the column). With ``U`` (``Ut``: ``q x N``) orthonormal columns (the
    leading eigenvectors of ``X X'``, ``q`` may be 0) and ``B = X'U`` (``D x q``) it splits exactly into
    ``e_j = B_j'(U'dy)`` and ``a_j'(I - UU')dy``, bounded by Cauchy-Schwarz by
    ``cr_j ||(I - UU')dy||`` with ``cr_j = ||(I - UU')a_j||`` (``= ||a_j||`` when ``q = 0``); all widened by
    the round-off of the products and of these terms. So ``f_j`` lies in ``[lb_j, ub_j]``. The ``(K+1)``-th
    largest lower bound over the reference set ``ref`` (the top ``K + 1`` of ``f0``), ``tau``, is at most
    the threshold ``s_(K+1)`` of ``f``; a feature with ``ub_j < tau`` is below the threshold and thresholds
    to zero whatever its value (a first O(D) pass rules most out by the coarser ``||a_j|| ||dy||``, which
    is never smaller). Only the others (the candidates, at most ``max_cand``) get ``f_j`` computed exactly
    (``N`` flops each), and Algorithm 2 on them gives exactly the M-step on the full ``f``: the same
    threshold, the same kept entries, the same ``w(t+1)``.

    Returns ``(ns_new, norm, cosine)`` as :func:`em_update` (``w``, its support ``supp[:ns_new]`` and the
    threshold ``state[0]`` updated), or ``(NEED_FULL, 0, 0)`` with nothing changed when the bound does not
    settle it: too many candidates, a threshold that is not positive, or a tie at the K-th place (whose
    tie-break needs the largest value below the tie, which may lie outside the candidates).
    ``dy`` (``N``) and ``cvec`` (``q``) are scratch buffers.
    """
    D, N = At.shape
    q = Ut.shape[0]
    if nref < K + 1:
        return NEED_FULL, 0.0, 0.0
    r2 = 0.0
    ny = 0.0
    ny0 = 0.0
    for i in range(N):
        d = y[i] - y0[i]
        dy[i] = d
        r2 += d * d
        ny += y[i] * y[i]
        ny0 += y0[i] * y0[i]
    d = np.sqrt(r2)
    g = 8.0 * (N + q + 2) * _EPS  # a generous relative round-off bound of every inner product here
    ro = g * (np.sqrt(ny) + np.sqrt(ny0))  # |computed - exact| of f_j and f0_j, per unit ||a_j||
    rad = d * (1.0 + g) + ro  # the plain bound, per unit ||a_j||
    cc = 0.0
    for k in range(q):
        s = 0.0
        for i in range(N):
            s += Ut[k, i] * dy[i]
        cvec[k] = s
        cc += s * s
    rad_res = np.sqrt(max(r2 - cc, 0.0) + g * r2)
    # the coarse radius is at least |e_j| + the refined half-width (Cauchy-Schwarz in R^2, plus margins)
    rad_pre = d * (1.0 + 3.0 * np.sqrt(g) + 2.0 * g) + ro
    # tau: the (K+1)-th largest lower bound over the reference set (<= the same over all features).
    for t in range(nref):
        j = ref[t]
        ej = 0.0
        for k in range(q):
            ej += B[j, k] * cvec[k]
        half = cr[j] * rad_res + colnorm[j] * (g * d + ro) if q > 0 else colnorm[j] * rad
        work[t] = _interval(f0[j], ej, half, nonneg)[0]
    tau = kth_largest(work, nref, K + 1)
    if not tau > 0.0:
        return NEED_FULL, 0.0, 0.0
    m = 0
    for j in range(D):
        if excluded[j]:
            continue
        if _mag(f0[j], nonneg) + colnorm[j] * rad_pre < tau:
            continue
        if q > 0:
            ej = 0.0
            for k in range(q):
                ej += B[j, k] * cvec[k]
            half = cr[j] * rad_res + colnorm[j] * (g * d + ro)
        else:
            ej = 0.0
            half = colnorm[j] * rad
        if _interval(f0[j], ej, half, nonneg)[1] >= tau:
            if m == max_cand:
                return NEED_FULL, 0.0, 0.0
            cand[m] = j
            m += 1
    gather_rmatvec(At, cand, m, y, fc)
    thr, s_k = _select(fc[:m], K, nonneg, nomask[:m], work, state[0])
    if not thr > 0.0 or not s_k > thr:
        return NEED_FULL, 0.0, 0.0
    s = 0.0
    for t in range(m):
        a = _mag(fc[t], nonneg)
        if a > thr:
            r = a - thr
            s += r * r
    norm = np.sqrt(s)
    inv = 1.0 / norm
    c = 0.0
    for t in range(m):  # the cosine with the old iterate, in index order as em_update sums it
        v = fc[t]
        a = _mag(v, nonneg)
        if a > thr:
            r = (a - thr) * inv
            if not nonneg and v < 0.0:
                r = -r
            c += r * w[cand[t]]
            fc[t] = r
        else:
            fc[t] = 0.0
    for t in range(ns):
        w[supp[t]] = 0.0
    n_new = 0
    for t in range(m):
        if fc[t] != 0.0:
            j = cand[t]
            w[j] = fc[t]
            supp[n_new] = j
            n_new += 1
    state[0] = thr
    return n_new, norm, abs(c)


@njit
def screened_products(At, W, rows, supp, ns, Y, h, sparse_fraction):
    """``Y[r] = X w_r`` through the support for the sparse rows ``r`` of ``rows`` (``ns[r] * sparse_fraction
    < D``) and ``h[j] = ||Y[r]||^2``; returns a mask of the dense rows, left to the caller (BLAS)."""
    D = At.shape[0]
    dense = np.zeros(rows.shape[0], dtype=np.bool_)
    for j in range(rows.shape[0]):
        r = rows[j]
        if ns[r] * sparse_fraction < D:
            gather_matvec(At, supp[r], ns[r], W[r], Y[r])
            s = 0.0
            for i in range(Y.shape[1]):
                s += Y[r, i] * Y[r, i]
            h[j] = s
        else:
            dense[j] = True
    return dense


# --------------------------------------------------------------------------- whole EM runs in one call
# Return codes of :func:`em_rows_matrix` and :func:`em_rows_data` (with the row concerned).
RUN_DONE = 0  # every listed row has a final status (CONVERGED or MAX_ITER)
RUN_COLLAPSE = 1  # the row collapsed (w'Cw = 0, or an M-step to the zero vector): the caller redraws it
RUN_GROW = 2  # the row's history is full: the caller grows ``hist``


@njit
def _dot(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


@njit
def _recorded(hist, r, it, h):
    """``hist[r, it[r]] = h``; False when ``h`` is not positive (the row collapsed)."""
    hist[r, it[r]] = h
    return h > 0.0


@njit
def _same_support(old, n_old, new, n_new):
    if n_old != n_new:
        return False
    for t in range(n_new):
        if old[t] != new[t]:
            return False
    return True


@njit
def _end_iteration(r, norm, c, same, it, status, stable, tol, max_iter, stop_cos, patience):
    """After an iteration of row ``r``: count it, apply the stops; returns True when the row collapsed."""
    it[r] += 1
    if not norm > 0.0:
        return True
    conv = c > 1.0 - tol
    if patience > 0:  # the support-stable stop
        stable[r] = stable[r] + 1 if same else 0
        if stable[r] >= patience and c > stop_cos:
            conv = True
    if conv:
        status[r] = CONVERGED
    elif it[r] >= max_iter:
        status[r] = MAX_ITER
    return False


@njit
def em_rows_matrix(
    M, K, nonneg, excluded, W, rows, state, supp, ns, it, status, stable, hist, first, pending, tol, max_iter,
    stop_cos, patience, sparse_fraction,
):  # fmt: skip
    """Whole EM runs (Sigg & Buhmann 2008, Alg. 1-2) of the rows of a block on a covariance matrix ``M``.

    Each row ``r`` of ``rows`` with ``status[r] < 0`` is iterated to its end: ``f = M w`` (through the
    support, ``D K`` flops, when ``ns[r] * sparse_fraction < D``), ``h = w'f`` into ``hist[r, it[r]]``,
    :func:`em_update` on ``f``, then the stops: ``|w(t+1)' w(t)| > 1 - tol`` (CONVERGED), ``max_iter``
    iterations (MAX_ITER), and with ``patience > 0`` the support-stable stop (the support unchanged for
    ``patience`` iterations in a row and ``|w(t+1)' w(t)| > stop_cos``). The first product of a row with
    ``pending[r]`` is copied into ``first[r]``. Python is entered once per block, not once per iteration.

    Parameters
    ----------
    M : float64 array, shape (D, D)
        The covariance (symmetric).
    K, nonneg, excluded
        As in :func:`constrained_mstep`.
    W : float64 array, shape (R, D)
        The iterates (unit rows), updated in place.
    rows : int64 array
        The rows to run, in order.
    state : float64 array, shape (R,)
        Per row, the previous threshold (:func:`em_update`'s hint).
    supp, ns : int64 arrays, shapes (R, D) and (R,)
        Per row, the support of ``W[r]`` (increasing indices) and its size; kept up to date.
    it, status, stable : int64 arrays, shape (R,)
        Iterations, status (-1 running, else CONVERGED / MAX_ITER; never set to COLLAPSED here) and the
        iterations in a row with an unchanged support.
    hist : float64 array, shape (R, T)
        ``hist[r, t]``: ``w'Cw`` of row ``r`` before iteration ``t``.
    first : float64 array, shape (R, D) or (0, D)
        Receives the first product of the rows with ``pending[r]``; ``pending`` is cleared.
    pending : bool array, shape (R,)
    tol, max_iter, stop_cos, patience
        The stops (``patience = 0``: no support-stable stop).
    sparse_fraction : int
        A row goes through its support when ``ns[r] * sparse_fraction < D``.

    Returns
    -------
    code : int
        RUN_DONE, RUN_COLLAPSE (row ``r`` collapsed: ``h <= 0`` with ``it[r]`` unchanged, or a zero M-step
        after ``it[r]`` was counted) or RUN_GROW (``hist`` has no column ``it[r]``).
    r : int
        The row concerned (-1 with RUN_DONE).
    """
    D = M.shape[0]
    f = np.empty(D)
    work = np.empty(D)
    new = np.empty(D, dtype=np.int64)
    for j in range(rows.shape[0]):
        r = rows[j]
        w = W[r]
        while status[r] < 0:
            if it[r] >= hist.shape[1]:
                return RUN_GROW, r
            n = ns[r]
            if n * sparse_fraction < D:  # C w = sum over the support of w_j C[j, :]
                for i in range(D):
                    f[i] = 0.0
                for t in range(n):
                    s = supp[r, t]
                    ws = w[s]
                    for i in range(D):
                        f[i] += ws * M[s, i]
                h = 0.0
                for t in range(n):
                    h += w[supp[r, t]] * f[supp[r, t]]
            else:
                f[:] = np.dot(M, w)
                h = _dot(w, f)
            if not _recorded(hist, r, it, h):
                return RUN_COLLAPSE, r
            if pending[r]:
                first[r, :] = f
                pending[r] = False
            norm, c = em_update(f, K, nonneg, excluded, w, work, state[r : r + 1])
            n_new = support_of(w, new)
            same = _same_support(supp[r], n, new, n_new)
            supp[r, :n_new] = new[:n_new]
            ns[r] = n_new
            if _end_iteration(r, norm, c, same, it, status, stable, tol, max_iter, stop_cos, patience):
                return RUN_COLLAPSE, r
    return RUN_DONE, -1


@njit
def em_rows_data(
    A, At, colnorm, K, nonneg, excluded, W, rows, state, supp, ns, Y, Y0, F0, ref, nref, Ut, B, cr, max_cand,
    it, status, stable, hist, first, pending, tol, max_iter, stop_cos, patience, sparse_fraction, screen,
    counts,
):  # fmt: skip
    """:func:`em_rows_matrix` through the data ``A = X`` (``N x D``, C-contiguous; ``At = A.T``), screened
    (``screen``, for ``N < D``) or not.

    Per iteration of row ``r``: ``y = X w`` through the support when ``ns[r] * sparse_fraction < D``
    (:func:`gather_matvec` on ``At`` when screened, :func:`support_matvec` on ``A`` otherwise; else BLAS),
    ``h = ||y||^2``, then, screened, the M-step by :func:`em_update_screened` from the row's last full
    product ``F0[r]`` (reference ``ref[r, :nref[r]]``, E-step ``Y0[r]``); when the bound does not settle
    it, there is no reference yet, or without screening: the full product ``f = X'y``, :func:`em_update`
    on it and (screened) a new reference (:func:`screen_reference`). Screened, ``y`` and ``f`` are
    ``Y[r]`` and ``F0[r]``; without screening ``Y[0]`` and ``F0[0]`` (one row each suffices) and ``ref``,
    ``Y0``, ``Ut``, ``B``, ``cr``, ``colnorm`` are not read. ``Ut``, ``B``, ``cr``, ``max_cand``: the bound's
    terms as in :func:`em_update_screened`. ``counts`` (int64, 2) accumulates the screened and the full
    iterations. Everything else, the stops and the return value are those of :func:`em_rows_matrix`.
    """
    D, N = At.shape
    q = Ut.shape[0]
    work = np.empty(D)
    cand = np.empty(D, dtype=np.int64)
    fc = np.empty(D)
    nomask = np.zeros(D, dtype=np.bool_)
    old = np.empty(D, dtype=np.int64)
    dy = np.empty(N)
    cvec = np.empty(q)
    for j in range(rows.shape[0]):
        r = rows[j]
        w = W[r]
        ry = r if screen else 0
        y = Y[ry]
        f = F0[ry]
        while status[r] < 0:
            if it[r] >= hist.shape[1]:
                return RUN_GROW, r
            n = ns[r]
            if n * sparse_fraction >= D:
                y[:] = np.dot(A, w)
            elif screen:
                gather_matvec(At, supp[r], n, w, y)
            else:
                support_matvec(A, supp[r], n, w, y)
            if not _recorded(hist, r, it, _dot(y, y)):
                return RUN_COLLAPSE, r
            old[:n] = supp[r, :n]
            n_new = NEED_FULL
            norm = c = 0.0
            if screen and nref[r] > 0:
                n_new, norm, c = em_update_screened(
                    At, colnorm, K, nonneg, excluded, w, supp[r], n, y, Y0[r], f, ref[r], nref[r],
                    state[r : r + 1], cand, fc, nomask, work, max_cand, Ut, B, cr, dy, cvec,
                )  # fmt: skip
            if n_new != NEED_FULL:
                counts[0] += 1
            else:
                counts[1] += 1
                f[:] = np.dot(y, A)
                if pending[r]:
                    first[r, :] = f
                norm, c = em_update(f, K, nonneg, excluded, w, work, state[r : r + 1])
                n_new = support_of(w, supp[r])
                if screen:
                    Y0[r, :] = y
                    nref[r] = screen_reference(f, nonneg, excluded, state[r], ref[r])
            pending[r] = False
            ns[r] = n_new
            same = _same_support(old, n, supp[r], n_new)
            if _end_iteration(r, norm, c, same, it, status, stable, tol, max_iter, stop_cos, patience):
                return RUN_COLLAPSE, r
    return RUN_DONE, -1
