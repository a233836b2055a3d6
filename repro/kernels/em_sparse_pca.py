"""Numba kernels for EM sparse and non-negative PCA (Sigg & Buhmann 2008).

``kth_largest``
    Quickselect (Hoare partition, median-of-three pivot) on a work buffer: the k-th largest of the
    first ``n`` entries in O(n) expected time, in place, no allocation.
``mstep_threshold``
    The threshold ``s_(K+1)`` of Algorithm 2: the (K+1)-th largest magnitude (Eq. 14), or positive
    value (Eq. 17), among the features not excluded (Eq. 19); 0 when at most ``K`` are candidates.
``constrained_mstep``
    The constrained M-step: soft threshold at ``s_(K+1)``, then ``w <- w / ||w||_2``.
``em_update``
    Everything of one EM iteration but the two BLAS products, in three passes over ``D``: the
    threshold (with the previous iteration's as a hint, so the selection runs on a few candidates),
    the squared norm, then normalization fused with the convergence measure ``|w(t+1)' w(t)|``.

All buffers are passed in; nothing is allocated. The EM loop itself (``repro.em_sparse_pca``) calls
NumPy's BLAS for ``X w`` and ``X'y`` with ``out=`` buffers and these kernels for the rest, so the
products run on the same BLAS as any reference measurement.
"""

from __future__ import annotations

import numpy as np

from . import njit

__all__ = ["constrained_mstep", "em_update", "kth_largest", "mstep_threshold"]

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
    lb = HINT_FACTOR * hint if hint > 0.0 else 0.0
    m, m_all = _gather(wstar, nonneg, excluded, lb, work)
    if K >= m_all:
        return 0.0
    if m < K + 1:  # the hint was too high: use every candidate
        m, m_all = _gather(wstar, nonneg, excluded, 0.0, work)
    return kth_largest(work, m, K + 1)


@njit
def _soft(v, thr, nonneg):
    """``sign(v) (|v| - thr)_+`` (or ``(v - thr)_+`` when ``nonneg``)."""
    if nonneg:
        return v - thr if v > thr else 0.0
    a = abs(v)
    if a > thr:
        return a - thr if v > 0.0 else thr - a
    return 0.0


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
    thr = mstep_threshold(wstar, K, nonneg, excluded, work, 0.0)
    s = 0.0
    for i in range(D):
        r = 0.0 if excluded[i] else _soft(wstar[i], thr, nonneg)
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
    soft threshold at :func:`mstep_threshold` (hinted by the previous threshold, ``state[0]``), and
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
        ``state[0]``: the previous threshold on entry (0: none), this one on exit.

    Returns
    -------
    norm : float
        ``||T(f)||_2`` (0.0: collapse to the zero vector).
    cosine : float
        ``|w(t+1)' w(t)|`` (0.0 after a collapse).
    """
    D = f.shape[0]
    thr = mstep_threshold(f, K, nonneg, excluded, work, state[0])
    state[0] = thr
    s = 0.0
    for i in range(D):
        if not excluded[i]:
            r = _soft(f[i], thr, nonneg)
            s += r * r
    norm = np.sqrt(s)
    if not norm > 0.0:
        for i in range(D):
            w[i] = 0.0
        return 0.0, 0.0
    inv = 1.0 / norm
    c = 0.0
    for i in range(D):
        r = 0.0 if excluded[i] else _soft(f[i], thr, nonneg) * inv
        c += r * w[i]
        w[i] = r
    return norm, abs(c)
