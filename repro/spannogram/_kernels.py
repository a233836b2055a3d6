"""Numba kernels for the spannogram (Asteris, Papailiopoulos & Dimakis 2014).

``rank1_solve``
    The rank-1 solver of Section 3.1 (Prop. 3.1): the support is the ``k`` largest positive entries of
    ``a`` or of ``-a`` (``|a|`` in the signed mode), found by selection in O(n); ties at the k-th value
    are broken by index (every choice gives the same value ``||a_I||^2``). Near-ties: two
    variables whose rows of ``V`` are equal in exact arithmetic can differ in their last bits (``V``
    comes from an eigendecomposition), so which of them enters a candidate can follow round-off; the
    candidate's value does not (it changes by round-off), and the best value over the samples is compared
    exactly, first sample first, so a reported support can name the other of two equivalent variables.
``sorted_side`` / ``allk_pass``
    Algorithm 3 for every cardinality at once: per sample ``c`` the vector ``a = V c`` is sorted once (a
    distribution sort on the top bits of the values, O(n) expected; for few ``k``, a selection by the same
    buckets); prefix sums of ``a_i V_i`` (a d-vector) and ``a_i^2`` give ``||V'x_k||^2 = ||sum a_i V_i||^2 /
    sum a_i^2`` for the candidate ``x_k = a_{I_k} / ||a_{I_k}||`` of every ``k`` in O(n d). For few ``k``
    (:func:`uses_pruned`) the rows are visited by decreasing norm, each side keeps its ``kmax`` best in a
    heap, and a sample stops as soon as no later row can enter (``|a_i| <= ||V_i||``): same result, a
    fraction of the rows. For many ``k`` on many rows (:func:`uses_bounded`, non-negative mode) a side is
    sorted only as deep as a prefix can still beat a best value: every candidate of the side is worth at
    most ``lambda_max`` of the side's ``d x d`` scatter, and the bests, taken as suffix minima over ``k``,
    are nondecreasing; same result, about a third of the sorting on gene-expression data.
``sweep2``
    The exact rank-2 spannogram by a kinetic sort: the ``n + 1`` curves ``v_i(phi) = V_i1 sin(phi) +
    V_i2 cos(phi)`` (row ``n`` the zero curve) are kept sorted while ``phi`` runs over ``[0, 2 pi)``; every
    pairwise intersection is one swap of two adjacent curves (an indexed binary heap gives the next one in
    O(log n)), so all O(n^2) events cost O(n^2 log n) time and O(n) memory. Between two events the top-k
    positive set is fixed, ``f_k(phi) = c(phi)' S_k c(phi)`` with ``S_k`` its 2 x 2 scatter, and its maximum
    over the arc is closed form; the maximum over all arcs is ``max_c f_k(c) = OPT_2`` (Eq. 13), exactly.

No kernel allocates per sample or per event; no RNG.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from ..em_sparse_pca._kernels import kth_largest

__all__ = ["allk_pass", "rank1_solve", "sorted_side", "sweep2"]

TWO_PI = 2.0 * np.pi


# --------------------------------------------------------------------------- rank 1 (Sec. 3.1)
@njit
def _side_value(a, k, sgn, signed, work):
    """Threshold and counts of the k largest positive ``sgn * a`` (or ``|a|``): returns (t, n_pos).

    ``t`` is the k-th largest positive value (0.0 when at most k are positive: take all of them).
    """
    n = a.shape[0]
    p = 0
    for i in range(n):
        v = abs(a[i]) if signed else sgn * a[i]
        if v > 0.0:
            work[p] = v
            p += 1
    if p <= k:
        return 0.0, p
    return kth_largest(work, p, k), p


@njit
def _fill_side(a, k, sgn, signed, t, x):
    """Write ``x`` (unnormalized) for one side: entries above ``t``, then ties at ``t`` by index."""
    n = a.shape[0]
    x[:] = 0.0
    taken = 0
    value = 0.0
    for i in range(n):
        v = abs(a[i]) if signed else sgn * a[i]
        if v > t and v > 0.0:
            x[i] = a[i] if signed else v
            value += v * v
            taken += 1
    for i in range(n):
        if taken >= k:
            break
        v = abs(a[i]) if signed else sgn * a[i]
        if v == t and v > 0.0:
            x[i] = a[i] if signed else v
            value += v * v
            taken += 1
    return value, taken


@njit
def rank1_solve(a, k, nonneg, x, work):
    """Solve ``max (a'x)^2`` over unit ``x`` with at most ``k`` non-zeros (``x >= 0`` if ``nonneg``).

    Asteris et al. (2014), Prop. 3.1 and Eq. 9: the support is ``I_k^+(a)`` or ``I_k^+(-a)`` and
    ``x_I = +-a_I / ||a_I||``; with ``nonneg=False`` it is the ``k`` largest ``|a_i|`` and
    ``x_I = a_I / ||a_I||``.

    Parameters
    ----------
    a : float64 (n,)
    k : int, 1 <= k <= n
    nonneg : bool
    x : float64 (n,), output: the unit solution (all zeros when ``a`` has no usable entry)
    work : float64 (n,), scratch

    Returns
    -------
    value : float
        ``||a_I||^2 = (a'x)^2``.
    nnz : int
        Non-zeros of ``x`` (fewer than ``k`` when fewer entries are positive).
    """
    if not nonneg:
        t, _ = _side_value(a, k, 1.0, True, work)
        value, nnz = _fill_side(a, k, 1.0, True, t, x)
    else:
        tp, _ = _side_value(a, k, 1.0, False, work)
        tn, _ = _side_value(a, k, -1.0, False, work)
        # the positive side into x, the negative side into work (its scratch use is over); keep the better
        vp, np_ = _fill_side(a, k, 1.0, False, tp, x)
        vn, nn = _fill_side(a, k, -1.0, False, tn, work)
        if vn > vp:
            x[:] = work
            value, nnz = vn, nn
        else:
            value, nnz = vp, np_
    if value > 0.0:
        s = 1.0 / np.sqrt(value)
        for i in range(x.shape[0]):
            x[i] *= s
    return value, nnz


# --------------------------------------------------------------------------- Algorithm 3, all k
@njit
def _bucket_sort(vals, idx, m, order, work):
    """Write ``idx[:m]`` ordered by (``vals`` descending, index ascending) into ``order``; ``vals > 0``.

    A distribution sort in O(m) expected time: the bit pattern of a positive double is monotone in its value,
    so its top bits (exponent and leading mantissa bits: a logarithmic scale, suited to heavy-tailed loadings)
    give about ``m`` buckets; each bucket is then insertion-sorted. ``work`` (float64, >= 2m) is scratch.
    Replaces a comparison sort, whose O(m log m) dominated the all-k pass.
    """
    if m == 0:
        return
    bits = vals[:m].view(np.int64)
    kmin = bits[0]
    kmax = bits[0]
    for j in range(1, m):
        b = bits[j]
        if b < kmin:
            kmin = b
        if b > kmax:
            kmax = b
    shift = 0
    while ((kmax - kmin) >> shift) > 2 * m:
        shift += 1
    nb = ((kmax - kmin) >> shift) + 1
    cnt = np.zeros(nb + 1, dtype=np.int64)
    for j in range(m):
        cnt[((kmax - bits[j]) >> shift) + 1] += 1  # bucket 0 holds the largest values
    for b in range(nb):
        cnt[b + 1] += cnt[b]
    tv = work[:m]
    for j in range(m):
        b = (kmax - bits[j]) >> shift
        q = cnt[b]
        cnt[b] = q + 1
        order[q] = idx[j]
        tv[q] = vals[j]
    # insertion sort of the whole array: only elements within a bucket are out of order
    for j in range(1, m):
        v = tv[j]
        i = order[j]
        q = j - 1
        while q >= 0 and (tv[q] < v or (tv[q] == v and order[q] > i)):
            tv[q + 1] = tv[q]
            order[q + 1] = order[q]
            q -= 1
        tv[q + 1] = v
        order[q + 1] = i


@njit
def sorted_side(a, nonneg, sgn, kmax, order, vals, work, idx):
    """The ``kmax`` largest positive ``sgn * a`` (or non-zero ``|a|``), largest first, into ``order``.

    Returns how many were written (fewer when fewer are positive). The order is (value descending, index
    ascending), exactly. When fewer than all positive entries are wanted, a histogram of the values' top bits
    (the buckets of :func:`_bucket_sort`) keeps only the buckets holding the ``kmax`` largest, ties included,
    and only those are sorted: O(n) either way. Shared by :func:`allk_pass` and the reconstruction of the
    kept vectors, so both pick the same support.
    """
    n = a.shape[0]
    p = 0
    for i in range(n):  # branch-free compaction: the sign of a_i is a coin flip, a branch mispredicts
        v = abs(a[i]) if not nonneg else sgn * a[i]
        vals[p] = v
        idx[p] = i
        p += v > 0.0
    m = p
    if p > kmax:
        # selection by the same buckets: keep the buckets that hold the kmax largest (ties included)
        bits = vals[:p].view(np.int64)
        kmin = bits[0]
        ktop = bits[0]
        for j in range(1, p):
            b = bits[j]
            if b < kmin:
                kmin = b
            if b > ktop:
                ktop = b
        shift = 0
        while ((ktop - kmin) >> shift) > p:
            shift += 1
        nb = ((ktop - kmin) >> shift) + 1
        cnt = np.zeros(nb, dtype=np.int64)
        for j in range(p):
            cnt[(ktop - bits[j]) >> shift] += 1  # bucket 0 holds the largest values
        bstar = 0
        tot = cnt[0]
        while tot < kmax:
            bstar += 1
            tot += cnt[bstar]
        m = 0
        for j in range(p):
            if ((ktop - bits[j]) >> shift) <= bstar:
                vals[m] = vals[j]
                idx[m] = idx[j]
                m += 1
    _bucket_sort(vals, idx, m, order, work)
    return min(m, kmax)


@njit
def _beats(va, ia, vb, ib):
    """Order of :func:`sorted_side`: value descending, then index ascending."""
    return va > vb or (va == vb and ia < ib)


@njit
def _swap2(v, ix, i, j):
    v[i], v[j] = v[j], v[i]
    ix[i], ix[j] = ix[j], ix[i]


@njit
def _score_side(a_sorted, rows, m, Vp, kmax, sgn, s, best_val, best_f, best_sample, best_sign, u):
    """Prefix sums over the ``m`` sorted entries (values ``a_sorted``, rows ``rows`` of ``Vp``); fold in."""
    d = Vp.shape[1]
    u[:] = 0.0
    s2 = 0.0
    val = 0.0
    for k in range(kmax):
        if k < m:
            ai = a_sorted[k]
            r = rows[k]
            s2 += ai * ai
            nu = 0.0
            for j in range(d):
                u[j] += ai * Vp[r, j]
                nu += u[j] * u[j]
            val = nu / s2
        if val > best_val[k]:
            best_val[k] = val
            best_sample[k] = s
            best_sign[k] = 1 if sgn > 0 else -1
        if s2 > best_f[k]:
            best_f[k] = s2


@njit(inline="always")  # inlined into the scan loop
def _offer(hv, hi, m, val, i, kmax):
    """Offer the entry (``val``, index ``i``) to a heap of the ``kmax`` best, worst at the root.

    ``hv``/``hi`` are one side's heap arrays, ``m`` its size; the caller offers only entries that beat
    the root once the heap is full. Returns the new size.
    """
    if m < kmax:  # filling: append, and heapify once full (O(kmax) in all)
        hv[m] = val
        hi[m] = i
        m += 1
        if m == kmax:
            for q in range((m >> 1) - 1, -1, -1):
                _sift_worst(hv, hi, q, m)
        return m
    hv[0] = val
    hi[0] = i
    _sift_worst(hv, hi, 0, kmax)
    return kmax


@njit
def _allk_pass_pruned(V, C, kmax, nonneg, best_val, best_f, best_sample, best_sign):
    """:func:`allk_pass` for ``kmax`` small next to ``n``: rows visited by decreasing norm, stopped early.

    ``|a_i| = |V_i c| <= ||V_i||`` for a unit ``c``, so once a side holds ``kmax`` entries and the next
    row's norm is below the worst of them, no later row can enter. Each side keeps its ``kmax`` best entries
    in a heap with the worst at the root (O(log kmax) per entry that enters), so the threshold is always the
    current ``kmax``-th best and the scan stops as soon as every side is settled. On gene-expression data
    (heavy-tailed norms of ``V``'s rows) a sample then reads a few hundred of 12582 rows for ``kmax = 10``
    and about 2000 for ``kmax = 180``. (Earlier the sides were buffers cut to their ``kmax``
    best only when full, so the threshold lagged and the scan read far more rows.) The kept entries and
    their order (value descending, index ascending, as :func:`sorted_side`), hence every value, are those
    of the full pass (:func:`_allk_pass_full`).
    """
    n, d = V.shape
    S = C.shape[0]
    norms = np.empty(n)
    for i in range(n):
        acc = 0.0
        for j in range(d):
            acc += V[i, j] * V[i, j]
        norms[i] = np.sqrt(acc)
    perm = np.argsort(-norms)
    Vp = np.empty((n, d))
    nrm = np.empty(n)
    for r in range(n):
        Vp[r] = V[perm[r]]
        # margin for the round-off of the dot product and of ||c|| = 1 (both far below 1e-12 relative)
        nrm[r] = norms[perm[r]] * (1.0 + 1e-12)
    n_sides = 2 if nonneg else 1
    hv0 = np.empty(kmax)
    hi0 = np.empty(kmax, dtype=np.int64)
    hv1 = np.empty(kmax)
    hi1 = np.empty(kmax, dtype=np.int64)
    sa = np.empty(kmax)
    u = np.empty(d)
    order = np.empty(kmax, dtype=np.int64)
    rows = np.empty(kmax, dtype=np.int64)
    bw = np.empty(2 * kmax)
    inv = np.empty(n, dtype=np.int64)
    for r in range(n):
        inv[perm[r]] = r
    for s in range(S):
        c0 = C[s, 0]
        # per side: entries enter only if they beat the root (tv, ti) of its heap once it is full (0 / n
        # before: any positive value); the signed mode has one side (side 1 never takes an entry)
        n0 = 0
        n1 = 0
        tv0 = 0.0
        ti0 = n
        tv1 = 0.0 if nonneg else np.inf
        ti1 = n
        stop = -1.0  # rows with a norm below ``stop`` cannot enter any side
        thr = 0.0  # min(tv0, tv1): most rows fail this one test, which spares the sign's branch
        for r in range(n):
            if nrm[r] < stop:
                break
            acc = Vp[r, 0] * c0
            for j in range(1, d):
                acc += Vp[r, j] * C[s, j]
            val = abs(acc)
            if val < thr or val == 0.0:
                continue
            if acc > 0.0 or not nonneg:
                if val > tv0 or (val == tv0 and perm[r] < ti0):
                    n0 = _offer(hv0, hi0, n0, val, perm[r], kmax)
                    if n0 == kmax:
                        tv0 = hv0[0]
                        ti0 = hi0[0]
                        thr = min(tv0, tv1)
                        if n1 == kmax or not nonneg:
                            stop = thr
            else:
                if val > tv1 or (val == tv1 and perm[r] < ti1):
                    n1 = _offer(hv1, hi1, n1, val, perm[r], kmax)
                    if n1 == kmax:
                        tv1 = hv1[0]
                        ti1 = hi1[0]
                        thr = min(tv0, tv1)
                        if n0 == kmax:
                            stop = thr
        for side in range(n_sides):
            if side == 0:
                hv, hi, m = hv0, hi0, n0
            else:
                hv, hi, m = hv1, hi1, n1
            if m == 0:
                continue
            # a distribution sort by (value descending, index ascending): order[:m] the indices, bw[:m]
            # the values (a heap sort here cost a third of the pass at kmax = 180 on leukemia)
            _bucket_sort(hv, hi, m, order, bw)
            sgn = 1.0 if side == 0 else -1.0
            for q in range(m):
                r = inv[order[q]]
                rows[q] = r
                if nonneg:
                    sa[q] = sgn * bw[q]
                else:  # the signed mode sums a_i V_i with the sign of a_i
                    acc = 0.0
                    for j in range(d):
                        acc += Vp[r, j] * C[s, j]
                    sa[q] = acc
            _score_side(sa, rows, m, Vp, kmax, sgn, s, best_val, best_f, best_sample, best_sign, u)


@njit
def _sift_worst(v, ix, i, size):
    """Sift down in a heap whose root is its worst entry (order of :func:`_beats`)."""
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        c = left
        if left + 1 < size and _beats(v[left], ix[left], v[left + 1], ix[left + 1]):
            c = left + 1
        if not _beats(v[i], ix[i], v[c], ix[c]):
            break
        _swap2(v, ix, i, c)
        i = c


# the pruned pass serves kmax <= n / PRUNE_FRACTION when n >= PRUNE_MIN_ROWS: on the leukemia V (12582 x 3,
# 1e4 samples, CPU time, heap version) it took 0.57 / 1.07 / 1.87 / 3.40 s at kmax = n/48,
# n/24, n/12, n/6 against 1.81 / 1.91 / 2.19 / 2.70 s for the sorting pass; on CBCL (361 x 3, light-tailed
# row norms) the sorting pass was faster at every kmax >= 7
PRUNE_FRACTION = 12
PRUNE_MIN_ROWS = 1000


@njit
def uses_pruned(n, kmax):
    """Whether :func:`allk_pass` runs the early-stopping pass for ``n`` rows and ``kmax``."""
    return kmax * PRUNE_FRACTION <= n and n >= PRUNE_MIN_ROWS


@njit
def uses_bounded(n, kmax):
    """Whether :func:`allk_pass`'s sorting pass cuts each side at the depth of its scatter bound (``nonneg``).

    On the leukemia ``V`` (12582 x 3, heavy-tailed row norms; 1000 samples, ``kmax = n``) the bound cuts a
    side to a median depth of about 760 of its ~6300 entries (31% of them on average: one side in six
    still needs every entry), and the pass took 0.65x the CPU time of the plain one; on CBCL (361 x 3) it
    cuts almost nothing and its cost (a ``d x d`` scatter per sample) made the pass slower.
    """
    return n >= PRUNE_MIN_ROWS and kmax * PRUNE_FRACTION > n


@njit
def allk_pass(V, C, kmax, nonneg, best_val, best_f, best_sample, best_sign):
    """Algorithm 3 of Asteris et al. (2014) for every ``k = 1..kmax`` in one pass over the samples.

    For each row ``c`` of ``C`` (unit vectors), ``a = V c``; for each side (``+a`` and ``-a`` when
    ``nonneg``; ``|a|`` otherwise) the entries are taken in decreasing order and, with ``u_k = sum_{j<=k}
    a_(j) V_(j)`` and ``s_k = sum_{j<=k} a_(j)^2``, the candidate ``x_k = a_{I_k} / sqrt(s_k)`` has
    ``||V' x_k||^2 = ||u_k||^2 / s_k`` (the objective of Alg. 3's output line) and rank-1 value
    ``(c'V'x_k)^2 = s_k`` (the inner maximum of Eq. 13, used by the bound). Past the last positive entry
    (``k > p``) the candidate is ``x_p``, with fewer non-zeros. Where :func:`uses_pruned` (``kmax <= n /
    PRUNE_FRACTION``, ``n >= PRUNE_MIN_ROWS``) the rows are visited by decreasing norm and each sample stops
    early (:func:`_allk_pass_pruned`); otherwise, where :func:`uses_bounded`, each side is sorted and scored
    only to the depth its scatter bound leaves (:func:`_allk_pass_full`); the result is the same.

    Parameters
    ----------
    V : float64 (n, d)
    C : float64 (S, d), unit rows
    kmax : int
    nonneg : bool
    best_val, best_f : float64 (kmax,), in/out
        Best ``||V'x_k||^2`` and best ``s_k`` over the samples so far (start at -inf / 0).
    best_sample, best_sign : int64 (kmax,), in/out
        Sample index and side (+1 / -1; +1 when signed) of ``best_val``.
    """
    if uses_pruned(V.shape[0], kmax):
        _allk_pass_pruned(V, C, kmax, nonneg, best_val, best_f, best_sample, best_sign)
        return
    bounded = uses_bounded(V.shape[0], kmax)
    _allk_pass_full(V, C, kmax, nonneg, best_val, best_f, best_sample, best_sign, bounded)


@njit
def _lambda_max_upper(M, B, B2):
    """An upper bound on the largest eigenvalue of the symmetric ``d x d`` matrix ``M`` (PSD up to round-off).

    ``t ||(M / t)^8||_F^(1/8)`` with ``t = trace(M)``: ``||B^8||_F = (sum_j mu_j^16)^(1/2) >= max_j |mu_j|^8``
    for symmetric ``B``, so the value is at least ``lambda_max(M)`` (and at least ``max |eigenvalue|`` when
    round-off left ``M`` slightly indefinite), and at most ``(1 + (d - 1) (lambda_2 / lambda_1)^16)^(1/16)``
    times it (1.003 at ``d = 3`` and a ratio of 0.8). ``B`` and ``B2`` are ``d x d`` scratch; three
    products of ``d x d`` matrices, no eigendecomposition.
    """
    d = M.shape[0]
    t = 0.0
    for j in range(d):
        t += M[j, j]
    if not t > 0.0:
        return 0.0
    for j in range(d):
        for q in range(d):
            B[j, q] = M[j, q] / t
    for _ in range(3):
        for j in range(d):
            for q in range(d):
                acc = 0.0
                for r in range(d):
                    acc += B[j, r] * B[r, q]
                B2[j, q] = acc
        B[:, :] = B2
    fro = 0.0
    for j in range(d):
        for q in range(d):
            fro += B[j, q] * B[j, q]
    return t * np.sqrt(fro) ** 0.125


@njit
def _settle(best_val, best_f, g, top):
    """``g[k] = min(best_val[k], best_f[k], g[k + 1])`` for ``k < top``: the suffix minimum of the bests."""
    for k in range(top - 1, -1, -1):
        h = min(best_val[k], best_f[k])
        g[k] = min(h, g[k + 1])


@njit
def _first_at_least(g, kmax, v):
    """The first ``k`` in ``0..kmax`` with ``g[k] >= v`` (``g`` nondecreasing, ``g[kmax] = inf``)."""
    lo = 0
    hi = kmax
    while lo < hi:
        mid = (lo + hi) >> 1
        if g[mid] >= v:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit
def _project(VT, c, a):
    """``a = V c`` from ``VT = V'`` (contiguous rows): column by column, so the loop vectorizes.

    The sums run in the order of the row-wise loops of the other passes (``0 + v_0 c_0 + v_1 c_1 + ...``),
    so ``a`` is the same to the last bit.
    """
    d, n = VT.shape
    c0 = c[0]
    for i in range(n):
        a[i] = 0.0 + VT[0, i] * c0
    for j in range(1, d):
        cj = c[j]
        for i in range(n):
            a[i] += VT[j, i] * cj


@njit(fastmath={"reassoc", "contract"})
def _positive_scatter(VT, a, Mp):
    """``Mp``, the sum of ``V_i V_i'`` over the rows with ``a_i > 0``; ``VT = V'``.

    Reassociation lets the sums vectorize (3x faster at ``d = 3``); ``Mp`` only feeds the bound of
    :func:`_allk_pass_full`, whose margin (``8 (d + 1) n eps trace(V'V)``) covers any order of summation.
    """
    d, n = VT.shape
    if d == 3:  # one pass, six reductions
        m00 = m01 = m02 = m11 = m12 = m22 = 0.0
        for i in range(n):
            w = 1.0 if a[i] > 0.0 else 0.0
            v0 = VT[0, i]
            v1 = VT[1, i]
            v2 = VT[2, i]
            w0 = w * v0
            w1 = w * v1
            w2 = w * v2
            m00 += w0 * v0
            m01 += w0 * v1
            m02 += w0 * v2
            m11 += w1 * v1
            m12 += w1 * v2
            m22 += w2 * v2
        Mp[0, 0], Mp[0, 1], Mp[0, 2], Mp[1, 1], Mp[1, 2], Mp[2, 2] = m00, m01, m02, m11, m12, m22
        Mp[1, 0], Mp[2, 0], Mp[2, 1] = m01, m02, m12
        return
    for j in range(d):
        for q in range(j, d):
            acc = 0.0
            for i in range(n):
                w = 1.0 if a[i] > 0.0 else 0.0
                acc += w * VT[j, i] * VT[q, i]
            Mp[j, q] = acc
            Mp[q, j] = acc


@njit
def _allk_pass_full(V, C, kmax, nonneg, best_val, best_f, best_sample, best_sign, bounded=False):
    """:func:`allk_pass` by sorting every sample's side (:func:`sorted_side`).

    With ``bounded`` (non-negative mode only) a side is sorted and scored only as deep as one of its
    prefixes can still change a best value. For the side ``I = {i: sgn a_i > 0}`` of a sample, every
    ``k`` has ``s_k <= ||V_{I_k}' x_k||^2 <= lambda_max(V_{I_k}' V_{I_k}) <= lambda_max(M)``, ``M = V_I'
    V_I`` (``I_k`` is a subset of ``I`` and the scatter grows with the set). ``best_f`` is nondecreasing
    in ``k`` (every sample's ``s_k`` is), so ``g[k] = min_{k' >= k} min(best_val[k'], best_f[k'])`` is
    nondecreasing, and the side is scored only for ``k < K0``, the first ``k`` with ``g[k] >= L``, ``L``
    an upper bound on ``lambda_max(M)`` (:func:`_lambda_max_upper`, raised by ``1e-8`` relative and by
    ``8 (d + 1) n eps trace(V'V)``, which covers the round-off of ``M``, of the bound and of the prefix
    sums). Every skipped prefix would have failed the strict ``>`` of both updates, so the result is that
    of the plain pass, bit for bit. ``M_+`` is summed over the rows with ``a_i > 0``
    (:func:`_positive_scatter`); ``M_- = V'V - M_+`` (it includes the rows with ``a_i = 0``: a larger
    matrix, still a bound).
    """
    n, d = V.shape
    S = C.shape[0]
    a = np.empty(n)
    vals = np.empty(n)
    work = np.empty(n)
    idx = np.empty(n, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    sa = np.empty(n)
    u = np.empty(d)
    n_sides = 2 if nonneg else 1
    bounded = bounded and nonneg
    Mt = np.zeros((d, d))
    Mp = np.zeros((d, d))
    M = np.empty((d, d))
    B = np.empty((d, d))
    B2 = np.empty((d, d))
    g = np.empty(kmax + 1)
    g[kmax] = np.inf
    tau = 0.0
    if bounded:
        for i in range(n):
            for j in range(d):
                for q in range(d):
                    Mt[j, q] += V[i, j] * V[i, q]
        for j in range(d):
            tau += Mt[j, j]
        tau *= 8.0 * (d + 1) * n * np.finfo(np.float64).eps
        _settle(best_val, best_f, g, kmax)
    VT = np.ascontiguousarray(V.T)
    for s in range(S):
        _project(VT, C[s], a)
        if bounded:
            _positive_scatter(VT, a, Mp)
        for side in range(n_sides):
            sgn = 1.0 if side == 0 else -1.0
            depth = kmax
            if bounded:
                if side == 0:
                    M[:, :] = Mp
                else:
                    for j in range(d):
                        for q in range(d):
                            M[j, q] = Mt[j, q] - Mp[j, q]
                depth = _first_at_least(g, kmax, _lambda_max_upper(M, B, B2) * (1.0 + 1e-8) + tau)
                if depth == 0:
                    continue
            p = sorted_side(a, nonneg, sgn, depth, order, vals, work, idx)
            if p == 0:
                continue
            for q in range(p):
                sa[q] = a[order[q]]
            _score_side(sa, order, p, V, depth, sgn, s, best_val, best_f, best_sample, best_sign, u)
            if bounded:
                _settle(best_val, best_f, g, depth)


# --------------------------------------------------------------------------- exact rank 2 (Sec. 4.1)
@njit
def _cross_time(W, u, l, now):
    """Next angle ``>= now`` at which curve ``u`` (above) falls below curve ``l``; inf if never."""
    a = W[u, 0] - W[l, 0]
    b = W[u, 1] - W[l, 1]
    if a == 0.0 and b == 0.0:
        return np.inf
    # a sin(phi) + b cos(phi) = R sin(phi + beta): + to - at phi + beta = pi (mod 2 pi)
    t = np.pi - np.arctan2(b, a)
    r = (t - now) % TWO_PI
    if r > TWO_PI - 1e-10:  # crossed a round-off ago: the pair is out of order now
        r = 0.0
    return now + r


@njit
def _heap_up(heap, where, key, i):
    while i > 0:
        parent = (i - 1) >> 1
        if key[heap[parent]] <= key[heap[i]]:
            break
        heap[parent], heap[i] = heap[i], heap[parent]
        where[heap[parent]] = parent
        where[heap[i]] = i
        i = parent


@njit
def _heap_down(heap, where, key, i, size):
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        child = left
        if left + 1 < size and key[heap[left + 1]] < key[heap[left]]:
            child = left + 1
        if key[heap[i]] <= key[heap[child]]:
            break
        heap[child], heap[i] = heap[i], heap[child]
        where[heap[child]] = child
        where[heap[i]] = i
        i = child


@njit
def _set_key(heap, where, key, p, t, size):
    old = key[p]
    key[p] = t
    if t < old:
        _heap_up(heap, where, key, where[p])
    else:
        _heap_down(heap, where, key, where[p], size)


@njit
def _arc_max(S00, S01, S11, a, b):
    """Max of ``c' S c`` with ``c = (sin phi, cos phi)`` over ``phi`` in ``[a, b]``; returns (value, phi)."""
    m0 = 0.5 * (S00 + S11)
    hc = 0.5 * (S11 - S00)
    rho = np.sqrt(hc * hc + S01 * S01)
    psi = np.arctan2(S01, hc)
    phi_star = (0.5 * psi) % np.pi
    t = a + ((phi_star - a) % np.pi)
    if t <= b:
        return m0 + rho, t
    ga = S00 * np.sin(a) ** 2 + 2.0 * S01 * np.sin(a) * np.cos(a) + S11 * np.cos(a) ** 2
    gb = S00 * np.sin(b) ** 2 + 2.0 * S01 * np.sin(b) * np.cos(b) + S11 * np.cos(b) ** 2
    if gb > ga:
        return gb, b
    return ga, a


@njit
def _close(S, cstart, best_val, best_phi, k, t):
    """Close the arc of cardinality ``k`` (1-based) at ``t``: fold its maximum into the best."""
    j = k - 1
    val, phi = _arc_max(S[j, 0], S[j, 1], S[j, 2], cstart[j], t)
    if val > best_val[j]:
        best_val[j] = val
        best_phi[j] = phi
    cstart[j] = t


@njit
def _add(S, j, W, i, sgn):
    S[j, 0] += sgn * W[i, 0] * W[i, 0]
    S[j, 1] += sgn * W[i, 0] * W[i, 1]
    S[j, 2] += sgn * W[i, 1] * W[i, 1]


@njit
def sweep2(V, kmax, best_val, best_phi):
    """Exact ``max_{c in S^1} f_k(c)`` for ``k = 1..kmax``: the rank-2 nonnegative spannogram.

    ``f_k(c)`` is the sum of squares of the ``k`` largest positive entries of ``V c``; by Eq. 13 its maximum
    over the circle is ``OPT_2 = max ||V'x||^2`` over unit non-negative ``k``-sparse ``x``. The circle is
    swept with ``c(phi) = (sin phi, cos phi)``, ``phi in [0, 2 pi)`` (both signs of Sec. 4.1's ``Phi``); see
    the module docstring. Ties (several curves through one point, duplicate rows) are processed as a
    sequence of zero-length arcs, each evaluated exactly at its angle, so they cost nothing in exactness.

    Parameters
    ----------
    V : float64 (n, 2)
    kmax : int, 1..n
    best_val, best_phi : float64 (kmax,), outputs
        The maximum of ``f_k`` and an angle attaining it.

    Returns
    -------
    n_events : int
        Swaps processed (about ``n^2 + n`` for generic ``V``: every pair of the ``n + 1`` curves crosses
        twice on the circle).
    """
    n = V.shape[0]
    m = n + 1
    W = np.zeros((m, 2))
    W[:n] = V
    zero = n
    # initial order at phi = 0: by cos-coefficient, ties by the derivative (sin-coefficient), descending
    keyv = np.empty(m)
    for i in range(m):
        keyv[i] = -W[i, 1]
    ordr = np.argsort(keyv, kind="mergesort")
    # fix ties by derivative: bubble within equal-value groups (rare)
    i = 0
    while i < m:
        j = i
        while j + 1 < m and W[ordr[j + 1], 1] == W[ordr[i], 1]:
            j += 1
        if j > i:
            grp = ordr[i : j + 1].copy()
            dk = np.empty(j - i + 1)
            for q in range(j - i + 1):
                dk[q] = -W[grp[q], 0]
            o2 = np.argsort(dk, kind="mergesort")
            for q in range(j - i + 1):
                ordr[i + q] = grp[o2[q]]
        i = j + 1
    pos = np.empty(m, dtype=np.int64)
    for p in range(m):
        pos[ordr[p]] = p
    z = pos[zero]  # positives are positions 0..z-1
    S = np.zeros((kmax, 3))
    for k in range(1, kmax + 1):
        for p in range(min(k, z)):
            _add(S, k - 1, W, ordr[p], 1.0)
    cstart = np.zeros(kmax)
    best_val[:] = -np.inf
    best_phi[:] = 0.0
    # indexed heap of the m-1 adjacent pairs (pair p = positions p, p+1)
    npairs = m - 1
    key = np.empty(npairs)
    heap = np.empty(npairs, dtype=np.int64)
    where = np.empty(npairs, dtype=np.int64)
    for p in range(npairs):
        key[p] = _cross_time(W, ordr[p], ordr[p + 1], 0.0)
        heap[p] = p
        where[p] = p
    for p in range((npairs >> 1) - 1, -1, -1):
        _heap_down(heap, where, key, p, npairs)
    n_events = 0
    while npairs > 0:
        p = heap[0]
        t = key[p]
        if t >= TWO_PI:
            break
        n_events += 1
        u = ordr[p]
        lo = ordr[p + 1]
        ordr[p] = lo
        ordr[p + 1] = u
        pos[lo] = p
        pos[u] = p + 1
        if u != zero and lo != zero:
            if p + 1 < z and p + 1 <= kmax:  # both positive: the top-(p+1) set swaps u for lo
                _close(S, cstart, best_val, best_phi, p + 1, t)
                _add(S, p, W, u, -1.0)
                _add(S, p, W, lo, 1.0)
        elif u == zero:  # lo turns positive at position p: every set of size >= p+1 gains it
            z = p + 1
            for k in range(p + 1, kmax + 1):
                _close(S, cstart, best_val, best_phi, k, t)
                _add(S, k - 1, W, lo, 1.0)
        else:  # u turns negative (it was at position p): every set of size >= p+1 loses it
            z = p
            for k in range(p + 1, kmax + 1):
                _close(S, cstart, best_val, best_phi, k, t)
                _add(S, k - 1, W, u, -1.0)
        # the swapped pair crosses again half a turn later; its neighbours get new partners
        _set_key(heap, where, key, p, t + np.pi, npairs)
        if p > 0:
            _set_key(heap, where, key, p - 1, _cross_time(W, ordr[p - 1], ordr[p], t), npairs)
        if p + 1 < npairs:
            _set_key(heap, where, key, p + 1, _cross_time(W, ordr[p + 1], ordr[p + 2], t), npairs)
    for k in range(1, kmax + 1):
        _close(S, cstart, best_val, best_phi, k, TWO_PI)
    return n_events
