"""Numba kernels of the certified optimum (:mod:`repro.optimal`): the node bounds and the node loop.

The problem is ``max x'Cx`` over unit ``x`` with at most ``k`` non-zeros (and ``x >= 0`` when ``nonneg``),
``C`` positive semi-definite. A node fixes a set ``I`` of variables in, a set out, and leaves ``F`` free;
``r = k - |I|`` variables may still enter. Every bound below is an upper bound on the value of every
support ``S`` with ``I <= S <= I + F`` and ``|S| <= k`` (derivations in :mod:`repro.optimal.estimator`,
checked against brute force in ``tests/test_optimal.py``):

* trace: ``tr C_S <= sum_I C_ii + (r largest C_jj, j in F)``;
* Li & Xie's cut: ``lambda_max(C_S) <= lambda_max(C_I) + (r largest C_jj, j in F)`` (C PSD);
* the 2 x 2 bound: with ``h`` the top eigenvector of ``C_I`` in the factor space, ``a_j`` the part of
  feature ``j`` along ``h`` and ``b_j`` the rest, ``lambda_max(C_S) <= lambda_max [[l1 + A, B], [B, l2 + D]]``
  where ``A, B, D`` are the ``r`` largest ``a_j^2``, ``|a_j| b_j`` and ``b_j^2`` (each taken separately);
* Gershgorin (Berk & Bertsimas): the largest row sum of ``|C_S|`` (of ``max(C_S, 0)`` when ``nonneg``);
* the angle bound: the 2 x 2 bound with one choice of the ``r`` features for both directions,
  maximized over the angle between them on a certified partition of ``[0, pi/2]``;
* the multi-direction bound: the 2 x 2 bound with every direction of ``C_I`` kept apart
  (``lambda_max`` of a ``(q + 1) x (q + 1)`` matrix, ``q`` the rank of ``C_I``);
* the eigen-knapsack bound: with ``C = sum_j lam_j v_j v_j'``, ``x'Cx = sum_q (lam_q - lam_{q+1}) P_q``
  where the mass ``P_q`` of ``x`` on the top ``q`` eigenvectors is at most 1 and at most the squared
  Frobenius norm of their rows in ``S`` (``I`` plus the ``r`` largest free rows);
* ``lambda_max(C_A)`` over the allowed features ``A = I + F`` (when ``|A|`` is at most ``eig_limit``);
* the l1 (DSPCA-dual) bound: ``lambda_max(C_A - U_A) + rho (k - 1)`` for any ``U`` with zero diagonal and
  ``|U_ij| <= rho`` (``||x||_1^2 <= k``), ``U`` the clipped ``C``, ``rho`` searched per node from the
  parent's; its value certified by a Cholesky factorization (:func:`l1_bound`, :func:`below`); the same
  bound at the root's optimized ``U`` restricted to ``A`` (:func:`dual_bound`, interlacing).

A free variable whose 2 x 2 bound with it forced in is below the incumbent is fixed out of the subtree.
The cardinality chain (:func:`chain_bounds`): with a certified bound ``U`` on the optimum at ``k - 1``,
every support holding ``j`` is at most ``lambda_max [[U, g_j], [g_j, C_jj]]`` (``g_j^2`` the ``k - 1``
largest ``C_ij^2``), and a feature below the incumbent is fixed out of every node.
A node that survives every bound branches on the free feature with the largest weight in the top
eigenvector of the l1 relaxation ``C_A - U_A`` (``branch_l1``; else the one best aligned with ``C_I``).
The node loop (:func:`bnb_run`) takes the open nodes depth first, or best bound first from a heap of
bounded size (:func:`heap_push`, :func:`heap_pop`) that falls back to depth first when it is full.
"""

from __future__ import annotations

import time

import numpy as np
from numba import objmode

from .._jit import njit
from .._linalg_kernels import lanczos_top

# Prune counters (indices into ``counts``); names in BOUND_NAMES.
STALE = 0  # the parent's bound fell below an incumbent found after the parent was branched
TRACE = 1
LIXIE = 2
TWO_BY_TWO = 3
GERSHGORIN = 4
LAMBDA_A = 5
NODE_INCUMBENT = 6  # the bound exceeded the incumbent until the node's own completion raised it
LEAF = 7  # a node whose support is decided (evaluated exactly)
FIXED_OUT = 8  # free variables fixed out by their forced-in bound
RESIDUAL = 9  # the 2 x 2 bound with the residual parts bounded by Gershgorin
KNAPSACK = 10  # the eigen-knapsack bound
MULTI = 11  # the 2 x 2 bound along every direction of C_I
ANGLE = 12  # the 2 x 2 bound maximized over the angle with one choice of features
L1 = 13  # the l1 (DSPCA-dual) bound over the allowed features (clipped U, or the root's optimized U)
L1_SPLIT = 14  # the l1 bound with the fixed-in features' l1 charge apart (l1_split_bound)
CHAIN_OUT = 15  # features fixed out of every open node by the cardinality chain (chain_bounds)
CHAIN_NODES = 16  # nodes of the chain's searches at k - 1, k - 2, ... (included in the node count)
N_COUNTS = 17
NO_DEADLINE = np.inf  # the default ``deadline`` of the kernels: never stop on the clock
LEAF_BUDGET = 20_000  # sub-supports one non-negative leaf may enumerate (then its bound is kept instead)
BOUND_NAMES = (
    "stale",
    "trace",
    "li_xie",
    "two_by_two",
    "gershgorin",
    "lambda_allowed",
    "node_incumbent",
    "leaf",
    "fixed_out",
    "residual_gershgorin",
    "eigen_knapsack",
    "multi_direction",
    "angle",
    "l1_dual",
    "l1_split",
    "chain_fixed_out",
    "chain_nodes",
)


@njit(nogil=False)
def now():
    """``time.perf_counter()`` from compiled code (about 0.5 us a call): the kernels that can run long
    (the node loop, a leaf's enumeration, the Cholesky certificate) compare it with their ``deadline``,
    a ``perf_counter`` reading, so that a ``time_limit`` holds inside one call. It holds the GIL (an
    object-mode block reads the clock), so it is the one kernel here compiled without ``nogil``. While
    ``CTRL_C[0]`` is set (a Ctrl-C that :mod:`repro.optimal.search` holds) it reads ``inf``: every kernel
    with a deadline stops as at its time limit, its arrays whole."""
    with objmode(t="float64"):
        t = _clock()
    return t


#: Set by :func:`repro.optimal.search._ctrl_c_held` while a Ctrl-C waits for the compiled code to return.
CTRL_C = [False]


def _clock() -> float:
    return np.inf if CTRL_C[0] else time.perf_counter()


@njit
def top_sum(v, t):
    """Sum of the ``t`` largest entries of ``v`` (all of them when ``t >= len(v)``, 0 when ``t <= 0``).

    The ``t`` largest are summed in increasing order, as ``np.sort(v)[n - t:].sum()`` does (the same
    float); for ``t`` small next to ``n`` (every bound's per-row sums at a wide node) they are selected by
    insertion into a sorted buffer instead of sorting ``v`` (on CBCL, p = 361, the Gershgorin and residual
    bounds of a shallow node took 6.5 ms each with the sort)."""
    return _top_sum_skip(v, -1, t)


@njit
def _top_sum_skip(v, skip, t):
    """:func:`top_sum` of ``v`` without its entry ``skip`` (``-1``: none), with no copy of ``v``."""
    n = v.shape[0] - (1 if 0 <= skip < v.shape[0] else 0)
    if t <= 0 or n <= 0:
        return 0.0
    if t >= n:
        s = 0.0
        for q in range(v.shape[0]):
            if q != skip:
                s += v[q]
        return s
    if 4 * t >= n:
        w = np.empty(n)
        u = 0
        for q in range(v.shape[0]):
            if q != skip:
                w[u] = v[q]
                u += 1
        w = np.sort(w)
        return w[n - t :].sum()
    buf = np.empty(t)  # the t largest so far, increasing
    filled = 0
    for q in range(v.shape[0]):
        if q == skip:
            continue
        x = v[q]
        if filled < t:
            u = filled
            while u > 0 and buf[u - 1] > x:
                buf[u] = buf[u - 1]
                u -= 1
            buf[u] = x
            filled += 1
        elif x > buf[0]:
            u = 0
            while u + 1 < t and buf[u + 1] < x:
                buf[u] = buf[u + 1]
                u += 1
            buf[u] = x
    return buf.sum()


@njit
def _kth_largest(v, t):
    """The ``t``-th largest entry of ``v`` (``-inf`` when ``t`` is out of ``1..len(v)``)."""
    n = v.shape[0]
    if t <= 0 or t > n:
        return -np.inf
    return np.sort(v)[n - t]


@njit
def trace_bound(diag, I, F, r):
    """``sum_I C_ii`` plus the ``r`` largest free diagonal entries: bounds ``tr C_S >= lambda_max(C_S)``."""
    s = 0.0
    for i in I:
        s += diag[i]
    return s + top_sum(diag[F], r)


@njit
def lixie_bound(lam1, diag, F, r):
    """Li & Xie's cut: ``lambda_max(C_I)`` plus the ``r`` largest free diagonal entries (``C`` PSD)."""
    return lam1 + top_sum(diag[F], r)


@njit
def gershgorin_bound(W, I, F, r):
    """Largest row sum of ``W_S`` over every ``S`` of the node (``W = |C|``, or ``max(C, 0)`` when x >= 0).

    A row ``i`` in ``I`` sums its entries on ``I`` and its ``r`` largest on ``F``; a free row ``i`` takes
    itself, ``I`` and the ``r - 1`` largest of the other free entries (``W >= 0``, so fewer is smaller).
    """
    nf = F.shape[0]
    best = -np.inf
    row = np.empty(nf)
    for i in I:
        s = 0.0
        for j in I:
            s += W[i, j]
        for t in range(nf):
            row[t] = W[i, F[t]]
        s += top_sum(row, r)
        if s > best:
            best = s
    for q in range(nf):
        i = F[q]
        s = W[i, i]
        for j in I:
            s += W[i, j]
        for t in range(nf):
            row[t] = W[i, F[t]]
        s += _top_sum_skip(row, q, r - 1)
        if s > best:
            best = s
    return best


def eigen_tables(w, V):
    """The eigen-knapsack's tables from ``C``'s eigendecomposition (``np.linalg.eigh``'s ``w, V``): the
    eigenvalues in decreasing order, clipped at 0, with one more entry 0 at the end, and the squared
    eigenvectors by rows, ``V2T[j, i] = v_j[i]^2``."""
    lam = np.append(np.maximum(w[::-1], 0.0), 0.0)
    V2T = np.ascontiguousarray((V[:, ::-1] ** 2).T)
    return lam, V2T


@njit
def knapsack_bound(lam, V2T, I, F, r, thr, max_terms=32):
    """The eigen-knapsack bound on ``x'Cx`` over unit ``x`` supported on ``I`` plus ``r`` of ``F``.

    With ``C <= sum_j lam_j v_j v_j'`` (eigenvalues decreasing, clipped at 0) and ``t_j = (v_j'x)^2``,
    Abel summation gives ``x'Cx <= sum_q (lam_q - lam_{q+1}) P_q`` with the prefix masses
    ``P_q = sum_{j <= q} t_j = ||V_q'x||^2`` (``V_q`` the top ``q`` eigenvectors) and non-negative
    weights. For ``x`` supported on ``S``, ``||x|| = 1``:
    ``P_q <= ||V_q[S, :]||_2^2 <= ||V_q[S, :]||_F^2 = sum_{i in S} R_i(q)`` with
    ``R_i(q) = sum_{j <= q} v_j[i]^2``,
    at most ``U_q = sum_{i in I} R_i(q) + (r largest R_i(q), i in F)``; and ``P_q <= 1``. So the bound is
    ``sum_q (lam_q - lam_{q+1}) min(1, U_q)`` (the largest eigenvalues filled first, each prefix capped;
    it is at most the plain knapsack with per-eigenvector caps ``t_j <= ||v_j[I]||^2 + top_r v_j[F]^2``,
    since ``U_q`` is at most their sum). After ``q`` prefixes, ``b + (1 - P_q) lam_{q+1}`` is already a
    bound: the loop stops once it is at most ``thr``, once ``P_q`` reaches 1, or after ``max_terms``
    prefixes (each costs a pass over ``F``). Holds for ``x >= 0`` too.
    """
    d = min(V2T.shape[0], max_terms)
    m = I.shape[0]
    nf = F.shape[0]
    slack = 1e-12 * lam[0]
    RI = 0.0
    RF = np.zeros(nf)
    P = 0.0
    b = 0.0
    for q in range(d):
        if b + (1.0 - P) * lam[q] <= thr:
            return b + (1.0 - P) * lam[q] + slack
        row = V2T[q]
        for t in range(m):
            RI += row[I[t]]
        for t in range(nf):
            RF[t] += row[F[t]]
        Pq = min(1.0, RI + top_sum(RF, r))
        if Pq > P:
            b += lam[q] * (Pq - P)
            P = Pq
        if P >= 1.0:
            return b + slack
    return b + (1.0 - P) * lam[d] + slack


@njit
def lam_max_2x2(a, b, d):
    """Largest eigenvalue of the symmetric ``[[a, b], [b, d]]``."""
    return 0.5 * (a + d) + np.sqrt(0.25 * (a - d) ** 2 + b * b)


@njit
def split_along(C, diag, I, F, u1, lam1):
    """``a_j^2``, ``|a_j| b_j``, ``b_j^2`` of each free feature: its part along the top direction of ``C_I``.

    In a factor ``C = G'G``, ``h = G_I u1 / sqrt(lam1)``; ``a_j = g_j'h = C_{j,I} u1 / sqrt(lam1)`` and
    ``b_j^2 = C_jj - a_j^2`` (the squared norm of the rest of ``g_j``).
    """
    a = np.abs(signed_along(C, I, F, u1, lam1))
    a2 = a * a
    b2 = np.maximum(diag[F] - a2, 0.0)
    ab = a * np.sqrt(b2)
    return a2, ab, b2


@njit
def two_by_two_bound(lam1, lam2, a2, ab, b2, r):
    """``lambda_max [[lam1 + A, B], [B, lam2 + D]]`` with A, B, D the ``r`` largest of a2, ab, b2."""
    return lam_max_2x2(lam1 + top_sum(a2, r), top_sum(ab, r), lam2 + top_sum(b2, r))


@njit
def multi_bound(C, diag, I, F, wI, VI, r):
    """The 2 x 2 bound along every direction of ``C_I`` at once: ``lambda_max(D + T)``, ``(q+1) x (q+1)``.

    In a factor ``C = G'G`` let ``h_t = G_I u_t / sqrt(l_t)`` be the ``q`` directions of ``C_I`` with
    ``l_t > 0`` and write a unit ``y = sum_t c_t h_t + s w`` (``w`` unit, orthogonal to them, ``s >= 0``).
    Then ``y'G_I G_I'y <= sum_t l_t c_t^2 + l_{q+1} s^2`` (the ``h_t`` are eigenvectors of ``G_I G_I'``;
    ``l_{q+1}`` its largest eigenvalue off them, 0 when ``q = |I|``) and, for free ``j``,
    ``(g_j'y)^2 <= (u_j'z)^2`` with ``z = (|c|, s) >= 0`` unit and ``u_j = (|a_j1|, .., |a_jq|, b_j)``,
    ``a_jt = C_{j,I} u_t / sqrt(l_t)``, ``b_j^2 = C_jj - sum_t a_jt^2``. So ``lambda_max(C_S)`` is at most
    ``max z'(D + sum_{j in R} u_j u_j')z <= lambda_max(D + T)`` with ``D = diag(l_1, .., l_q, l_{q+1})``
    and ``T_st`` the sum of the ``r`` largest ``u_js u_jt`` over ``F`` (entries >= 0, ``z >= 0``).
    ``wI, VI``: the eigenpairs of ``C_I`` (increasing).
    """
    m = I.shape[0]
    nf = F.shape[0]
    tol = 1e-12 * max(wI[m - 1], 1e-300)
    q = 0
    for t in range(m):
        if wI[t] > tol:
            q += 1
    U = np.empty((nf, q + 1))
    for qq in range(q):
        col = m - 1 - qq
        sq = np.sqrt(wI[col])
        for f in range(nf):
            j = F[f]
            acc = 0.0
            for t in range(m):
                acc += C[j, I[t]] * VI[t, col]
            U[f, qq] = abs(acc) / sq
    for f in range(nf):
        rest = diag[F[f]]
        for qq in range(q):
            rest -= U[f, qq] * U[f, qq]
        U[f, q] = np.sqrt(max(rest, 0.0))
    E = np.zeros((q + 1, q + 1))
    for qq in range(q):
        E[qq, qq] = wI[m - 1 - qq]
    E[q, q] = max(wI[m - 1 - q], 0.0) if q < m else 0.0
    prod = np.empty(nf)
    for a in range(q + 1):
        for c in range(a, q + 1):
            for f in range(nf):
                prod[f] = U[f, a] * U[f, c]
            v = top_sum(prod, r)
            E[a, c] += v
            if c != a:
                E[c, a] += v
    return np.linalg.eigvalsh(E)[q]


@njit
def _theta_piece(l1, l2, a, b, r, ca, sb, buf):
    """``l1 ca^2 + l2 sb^2 + (sum of the r largest (a_j ca + b_j sb)^2)``."""
    for t in range(a.shape[0]):
        v = a[t] * ca + b[t] * sb
        buf[t] = v * v
    return l1 * ca * ca + l2 * sb * sb + top_sum(buf, r)


@njit
def angle_bound(l1, l2, a, b, r, thr, budget=64):
    """The 2 x 2 bound with the same ``r`` features along both directions: a certified maximum over the angle.

    In the 2 x 2 bound's notation (``y = c h + s w``, ``c = cos(theta)``, ``s = sin(theta)``,
    ``theta`` in ``[0, pi/2]``), ``y'G_S G_S'y <= f(theta) = l1 c^2 + l2 s^2 + max_R sum_{j in R}
    (a_j c + b_j s)^2`` with ``a_j = |g_j'h| >= 0``, ``b_j >= 0`` and ``R`` the ``r`` free features
    (the 2 x 2 bound relaxes this further by choosing ``R`` apart for each entry). On
    ``[theta_a, theta_b]`` every term grows with ``c`` and with ``s``, so ``f`` is at most its value with
    ``c = cos(theta_a)`` and ``s = sin(theta_b)``. The interval ``[0, pi/2]`` is cut in 8 and each piece
    whose bound exceeds ``thr`` is halved, ``budget`` evaluations at most; the largest piece bound is
    returned (a bound on ``lambda_max(C_S)``; at most ``thr`` when every piece got there).
    """
    n = a.shape[0]
    buf = np.empty(n)
    cap = 2 * budget + 16
    lo = np.empty(cap)
    hi = np.empty(cap)
    val = np.empty(cap)
    npieces = 8
    h = 0.5 * np.pi / npieces
    for t in range(npieces):
        lo[t] = t * h
        hi[t] = (t + 1) * h if t < npieces - 1 else 0.5 * np.pi
        val[t] = _theta_piece(l1, l2, a, b, r, np.cos(lo[t]), np.sin(hi[t]), buf)
    evals = npieces
    while evals + 2 <= budget:
        worst = 0
        for t in range(1, npieces):
            if val[t] > val[worst]:
                worst = t
        if val[worst] <= thr:
            break
        mid = 0.5 * (lo[worst] + hi[worst])
        lo[npieces] = mid
        hi[npieces] = hi[worst]
        val[npieces] = _theta_piece(l1, l2, a, b, r, np.cos(mid), np.sin(hi[worst]), buf)
        hi[worst] = mid
        val[worst] = _theta_piece(l1, l2, a, b, r, np.cos(lo[worst]), np.sin(mid), buf)
        npieces += 1
        evals += 2
    best = val[0]
    for t in range(1, npieces):
        if val[t] > best:
            best = val[t]
    return best * (1.0 + 1e-12)


@njit
def signed_along(C, I, F, u1, lam1):
    """The signed ``a_j = C_{j,I} u1 / sqrt(lam1)`` of each free feature."""
    nf = F.shape[0]
    a = np.empty(nf)
    sq = np.sqrt(lam1)
    for q in range(nf):
        j = F[q]
        s = 0.0
        for t in range(I.shape[0]):
            s += C[j, I[t]] * u1[t]
        a[q] = s / sq
    return a


@njit
def residual_bound(C, F, a, a2, b2, lam1, lam2, r):
    """The 2 x 2 bound with the residuals taken together: ``lambda_max [[l1 + al^2, al be], [., l2 + be^2]]``.

    For ``y = c h + s w``, ``G_R'y = c a_R + s z`` with ``z = G_R'w`` (``w`` orthogonal to ``h``), and
    ``||z||^2 <= lambda_max(C_R - a_R a_R')`` (the residual Gram matrix). So ``||G_R'y|| <= c al + s be``
    with ``al^2`` the ``r`` largest ``a_j^2`` and ``be^2`` a bound on the residual's sparse eigenvalue:
    the smaller of its ``r`` largest diagonal entries ``b_j^2`` and its Gershgorin row sums (the ``r - 1``
    largest ``|C_jl - a_j a_l|`` of each free row).
    """
    nf = F.shape[0]
    row = np.empty(nf - 1)
    g = -np.inf
    for q in range(nf):
        j = F[q]
        t = 0
        for u in range(nf):
            if u != q:
                row[t] = abs(C[j, F[u]] - a[q] * a[u])
                t += 1
        v = b2[q] + top_sum(row, r - 1)
        if v > g:
            g = v
    be2 = min(g, top_sum(b2, r))
    al2 = top_sum(a2, r)
    return lam_max_2x2(lam1 + al2, np.sqrt(al2 * be2), lam2 + be2)


@njit
def _top_minus(v, r, sorted_top, kth):
    """Per entry ``j``: the sum of the ``r - 1`` largest of ``v`` without ``v_j`` (from the top-r sum)."""
    n = v.shape[0]
    out = np.empty(n)
    if r - 1 <= 0:
        out[:] = 0.0
        return out
    top_r1 = sorted_top - kth  # the r - 1 largest when v_j is not among the r largest
    for q in range(n):
        if v[q] >= kth:
            out[q] = sorted_top - v[q]
        else:
            out[q] = top_r1
    return out


@njit
def forced_in_bounds(lam1, lam2, a2, ab, b2, dF, r):
    """For each free ``j``: a bound on every support of the node that contains ``j``.

    The smaller of the 2 x 2 bound with ``j`` among the ``r`` entries and Li & Xie's cut from
    ``I + {j}`` (``lambda_max(C_{I+j})`` bounded by its own 2 x 2 bound, plus the ``r - 1`` largest
    other free diagonal entries).
    """
    n = a2.shape[0]
    out = np.empty(n)
    if n == 0:
        return out
    ta = top_sum(a2, r)
    tab = top_sum(ab, r)
    tb = top_sum(b2, r)
    td = top_sum(dF, r)
    ra = _top_minus(a2, r, ta, _kth_largest(a2, r))
    rab = _top_minus(ab, r, tab, _kth_largest(ab, r))
    rb = _top_minus(b2, r, tb, _kth_largest(b2, r))
    rd = _top_minus(dF, r, td, _kth_largest(dF, r))
    for q in range(n):
        forced = lam_max_2x2(lam1 + a2[q] + ra[q], ab[q] + rab[q], lam2 + b2[q] + rb[q])
        alone = lam_max_2x2(lam1 + a2[q], ab[q], lam2 + b2[q]) + rd[q]
        out[q] = min(forced, alone)
    return out


@njit
def chain_bounds(C, W, R, k, U):
    """For each feature ``j`` of ``R``: a bound on every support ``S`` in ``R`` with ``|S| <= k`` that holds
    ``j``, given a certified bound ``U`` on the optimum at ``k - 1`` (the cardinality chain).

    Write unit ``x = (y, t)`` with ``y`` on ``S - j`` (at most ``k - 1`` features, so ``y'C_{S-j} y <= U
    ||y||^2``) and ``t = x_j``: ``x'Cx = y'Cy + 2 t u'y + C_jj t^2`` with ``u = C_{S-j, j}``, and
    ``|u'y| <= ||u|| ||y|| <= g_j ||y||``, ``g_j^2`` the ``k - 1`` largest ``W_ij^2`` over ``i`` in ``R -
    j`` (``W = |C|``; for ``x >= 0``, ``W = max(C, 0)``: ``t u'y <= t sum_i max(u_i, 0) y_i``). So ``x'Cx
    <= [||y||, |t|] [[U, g_j], [g_j, C_jj]] [||y||, |t|]' <= lambda_max [[U, g_j], [g_j, C_jj]]``
    (``||y||^2 + t^2 = 1``). A feature whose bound is at most the incumbent is in no support that beats it.
    """
    n = R.shape[0]
    out = np.empty(n)
    row = np.empty(max(n - 1, 1))
    for q in range(n):
        j = R[q]
        t = 0
        for u in range(n):
            if u != q:
                w = W[R[u], j]
                row[t] = w * w
                t += 1
        g2 = top_sum(row[: n - 1], k - 1)
        out[q] = lam_max_2x2(U, np.sqrt(g2), C[j, j])
    return out


_EPS = np.finfo(np.float64).eps


@njit
def l1_matrix(C, A, rho, nonneg):
    """``C_A - U_A`` for the l1 bound: ``U`` is ``C`` clipped to ``[-rho, rho]`` off the diagonal, 0 on it
    (``min(C, rho)`` off the diagonal when ``nonneg``), so the off-diagonal entries of the result are
    ``C`` soft-thresholded at ``rho`` (``max(C - rho, 0)`` when ``nonneg``) and the diagonal is ``C``'s."""
    n = A.shape[0]
    M = np.empty((n, n))
    for a in range(n):
        ia = A[a]
        for b in range(n):
            c = C[ia, A[b]]
            if a == b:
                M[a, b] = c
            elif c > rho:
                M[a, b] = c - rho
            elif c < -rho and not nonneg:
                M[a, b] = c + rho
            else:
                M[a, b] = 0.0
    return M


@njit
def cholesky_allowance(n, t, dm):
    """The ``delta`` of :func:`below`'s certificate for an ``n x n`` matrix ``M`` with ``max |M_ii| = dm``
    at level ``t``: a completed factorization of ``(t - delta) I - M`` proves ``lambda_max(M) <= t``."""
    return 2.0 * n * (n + 1) * _EPS * (abs(t) + dm) + 1e-300


@njit
def below(M, t, deadline=NO_DEADLINE):
    """True when ``lambda_max(M) <= t`` is certified: a Cholesky factorization of ``(t - delta) I - M``
    completes with positive pivots (stopped at the first pivot that is not).

    Rounding (Higham, Accuracy and Stability, Thm. 10.3): a completed floating-point factorization of
    ``B`` is exact for ``B + E`` with ``|E_ij| <= g |L||L'|_ij <= g (1 + g) max_i B_ii``,
    ``g = (n + 1) u / (1 - (n + 1) u)``, so ``lambda_min(B) >= -n g (1 + g) max_i B_ii``. With
    ``delta = 2 n (n + 1) u (|t| + max |M_ii|)``, at least that, ``(t - delta) I - M + delta I`` is PSD.
    Past ``deadline`` (read every 16 columns) it gives up: False, no certificate (safe: no bound is
    claimed).
    """
    n = M.shape[0]
    dm = 0.0
    for i in range(n):
        dm = max(dm, abs(M[i, i]))
    s = t - cholesky_allowance(n, t, dm)
    L = np.zeros((n, n))
    for j in range(n):
        if j % 16 == 15 and deadline < np.inf and now() >= deadline:
            return False
        d = s - M[j, j]
        for q in range(j):
            d -= L[j, q] * L[j, q]
        if not d > 0.0:
            return False
        ljj = np.sqrt(d)
        L[j, j] = ljj
        for i in range(j + 1, n):
            v = -M[i, j]
            for q in range(j):
                v -= L[i, q] * L[j, q]
            L[i, j] = v / ljj
    return True


@njit
def _l1_estimate(C, A, rho, k, nonneg, v, steps):
    """Lanczos's largest Ritz value of ``l1_matrix(C, A, rho)`` from ``v`` (overwritten with the Ritz
    vector) plus ``rho (k - 1)``: at most the bound at ``rho`` (a Ritz value is at most ``lambda_max``)."""
    M = l1_matrix(C, A, rho, nonneg)
    out = np.empty(A.shape[0])
    theta, _res, _steps = lanczos_top(M, v, steps, 1e-10, out)
    v[:] = out
    return theta + rho * (k - 1), M


@njit
def l1_bound(C, A, k, rho0, thr, nonneg, v, evals=8, steps=30, deadline=NO_DEADLINE):
    """The l1 (DSPCA-dual) bound over the allowed features ``A``, with ``rho`` searched from ``rho0``.

    For unit ``x`` supported on ``S`` (``S`` in ``A``, ``|S| <= k``) and any symmetric ``U`` with zero
    diagonal and ``|U_ij| <= rho``: ``x'Cx = x'(C - U)x + x'Ux``, ``x'(C - U)x <= lambda_max(C_A - U_A)``
    and ``x'Ux <= rho sum_{i != j} |x_i||x_j| = rho (||x||_1^2 - 1) <= rho (|S| - 1)`` (Cauchy-Schwarz:
    ``||x||_1^2 <= |S|``). So ``x'Cx <= lambda_max(C_A - U_A) + rho (k - 1)`` for every ``rho >= 0``;
    ``U`` is ``C`` clipped at ``rho`` (:func:`l1_matrix`; it is the weak dual of d'Aspremont et al.'s
    DSPCA relaxation). For ``x >= 0`` only ``U_ij <= rho`` is needed (``x_i x_j >= 0``).

    ``rho`` is searched (a pattern search from ``rho0`` on ``[0, min(max |C_ij|, thr / (k - 1))]``,
    ``evals`` Lanczos estimates, each from the last Ritz vector ``v``, which is left holding the best
    rho's) until the estimate is below ``thr``; only the final value is certified, by :func:`below`.
    Returns ``(bound, rho)``: ``bound <= thr`` when the node is pruned, else a certified bound a little
    above the estimate, or ``inf`` when that certificate fails (Lanczos not converged).
    """
    n = A.shape[0]
    hi = 0.0
    for a in range(n):
        for b in range(a + 1, n):
            c = C[A[a], A[b]]
            hi = max(hi, c if nonneg else abs(c))
    if k > 1 and thr > 0.0:
        hi = min(hi, thr / (k - 1))
    rho = min(max(rho0, 0.0), hi)
    best, M = _l1_estimate(C, A, rho, k, nonneg, v, steps)
    bv = v.copy()
    h = 0.25 * rho if rho > 0.0 else 0.25 * hi
    used = 1
    while used < evals and best > thr * (1.0 - 1e-9) and h > 1e-4 * hi:
        if deadline < np.inf and now() >= deadline:
            break
        moved = False
        for sgn in (1.0, -1.0):
            cand = rho + sgn * h
            if cand < 0.0 or cand > hi or used >= evals:
                continue
            w = bv.copy()
            f, Mc = _l1_estimate(C, A, cand, k, nonneg, w, steps)
            used += 1
            if f < best:
                best, rho, M, bv = f, cand, Mc, w
                moved = True
                break
        if not moved:
            h *= 0.5
    v[:] = bv
    # rounding: C - U formed in floating point moves each |U_ij| by at most u (|C_ij| + rho), worth
    # u (max |C_ij| + rho) k in x'Ux; the slack covers it and the subtraction
    cmax = 0.0
    for a in range(n):
        cmax = max(cmax, abs(C[A[a], A[a]]))
    slack = 8.0 * _EPS * (abs(best) + k * (rho + cmax))
    if best < thr - slack:
        if below(M, thr - rho * (k - 1) - slack, deadline):
            return thr, rho
    level = (best - rho * (k - 1)) * (1.0 + 1e-7) + 1e-12 * abs(best)
    if below(M, level, deadline):
        return level + rho * (k - 1) + slack, rho
    if now() >= deadline:
        return np.inf, rho
    # Lanczos missed the top eigenvalue (a start orthogonal to its eigenvector): the full spectrum
    lam = np.linalg.eigvalsh(M)[n - 1]
    level = lam * (1.0 + 1e-7) + 1e-12 * (abs(lam) + cmax)
    if below(M, level, deadline):
        return level + rho * (k - 1) + slack, rho
    return np.inf, rho


@njit
def dual_bound(DM, add, A, thr, v, steps=30, deadline=NO_DEADLINE, value=False, ritz=None):
    """The root's optimized l1 dual point at a node: ``lambda_max(DM_A) + add``, certified.

    ``DM`` is ``fl(C - U)`` for a symmetric ``U`` with zero diagonal in the l1 bound's cone (from
    :func:`repro.optimal.l1_dual.l1_dual_bound` at the root) and ``add`` is that point's
    ``rho (k - 1)`` plus an allowance for the rounding of ``DM`` (at least ``u ||DM||_F``: the error of
    the matrix is at most that in the 2-norm, and a principal submatrix's error is a submatrix of it);
    or the perspective point's ``M`` and constant (:mod:`repro.optimal.perspective`: the same form).
    A support ``S`` inside the allowed set ``A`` has ``x'Cx <= lambda_max((C - U)_S) + rho (k - 1)
    <= lambda_max((C - U)_A) + rho (k - 1)`` (the l1 bound's argument, then interlacing), so the value
    bounds every support of the node. Lanczos from ``v`` (unchanged) estimates it; only when the
    estimate is below ``thr`` is ``thr`` certified (:func:`below`), else ``inf`` (no claim: the
    estimate is below ``lambda_max``). Returns ``thr`` when the node is pruned, else ``inf``; with
    ``value``, else the estimate raised by ``1e-7`` of it and certified (:func:`below`) plus ``add``, or
    ``inf`` when that certificate fails after a second Lanczos run of ``3 steps`` from the first's Ritz
    vector (Lanczos not converged). ``ritz`` (optional): receives the Ritz
    vector (the branching feature of the best-bound orders: the one the point's bound leans on most).
    """
    n = A.shape[0]
    M = _sub(DM, A)
    out = np.empty(n)
    theta, _res, _steps = lanczos_top(M, v, steps, 1e-10, out)
    if ritz is not None:
        ritz[:] = out
    if theta + add < thr and below(M, thr - add, deadline):
        return thr
    if value:
        level = theta + 1e-7 * abs(theta) + 1e-300
        if below(M, level, deadline):
            return level + add
        # the estimate missed by more than 1e-7 of it (the dual point's spectrum is clustered at its
        # top: on Wishart p = 200, k = 10, 0.3% between the first two eigenvalues, dozens within 0.5%):
        # once more from the Ritz vector, further
        theta, _res, _steps = lanczos_top(M, out.copy(), 3 * steps, 1e-12, out)
        if ritz is not None:
            ritz[:] = out
        level = theta + 1e-7 * abs(theta) + 1e-300
        if (deadline == np.inf or now() < deadline) and below(M, level, deadline):
            return level + add
    return np.inf


@njit
def _theta_search(M, m, k, rho, thr, add0, v, evals, steps, deadline):
    """The pattern search over ``theta`` of :func:`l1_split_bound` and :func:`dual_split_bound`: from
    ``theta = m / k``, at most ``evals`` Lanczos estimates of ``lambda_max(M + rho D(theta))``, stopped
    once ``best + add0`` reaches ``thr``. Each estimate starts from the last Ritz vector plus a little of
    every direction (the shift moves weight onto the fixed-in or the free block, which a Krylov space from
    a vector in an invariant subspace of ``M`` would not see). Returns ``(best, theta, M + rho D)``; ``v``
    is overwritten with the best Ritz vector."""
    n = M.shape[0]
    r = k - m
    theta = m / k
    best, Ms = _split_estimate(M, m, r, rho, theta, v, steps)
    bv = v.copy()
    h = 0.5 * min(theta, 1.0 - theta)
    used = 1
    lo = 1e-3
    while used < evals and best + add0 > thr * (1.0 - 1e-9) and h > 1e-3:
        if deadline < np.inf and now() >= deadline:
            break
        moved = False
        for sgn in (-1.0, 1.0):
            cand = theta + sgn * h
            if cand < lo or cand > 1.0 - lo or used >= evals:
                continue
            w = bv.copy()
            for q in range(n):
                w[q] += 0.01 * (1.0 + 0.5 * np.sin(q + 1.0)) / np.sqrt(n)
            f, Mc = _split_estimate(M, m, r, rho, cand, w, steps)
            used += 1
            if f < best:
                best, theta, Ms, bv = f, cand, Mc, w
                moved = True
                break
        if not moved:
            h *= 0.5
    v[:] = bv
    return best, theta, Ms


@njit
def dual_split_bound(DM, rho, add0, A, m, k, thr, v, evals=6, steps=30, deadline=NO_DEADLINE, value=False):
    """:func:`l1_split_bound` at the root's optimized dual point: ``lambda_max(DM_A + rho D(theta)) +
    add0``, ``A`` with its ``m`` fixed-in features first.

    ``DM = fl(C - U)`` for a ``U`` of the l1 cone with its ``rho`` (:func:`dual_bound`), and ``add0`` the
    allowance for the rounding of ``DM`` (``dual_add - rho (k - 1)``). :func:`l1_split_bound`'s argument
    needs only ``U_ii = 0`` and ``|U_ij| <= rho`` (``U_ij <= rho`` when ``x >= 0``), so it holds at this
    ``U`` too: ``x'Cx <= x'(C - U + rho D)x`` for the node's supports, ``D`` diagonal with ``a - 1`` on
    the fixed-in features and ``b - 1`` on the free ones, ``a = m / theta``, ``b = (k - m) / (1 -
    theta)``. At ``theta = m / k`` it is :func:`dual_bound`'s value; the pattern search over ``theta``
    (``evals`` Lanczos estimates from ``v``, overwritten) moves the l1 charge between the two blocks, which
    a bound of the allowed set alone cannot (an "in" child has its parent's allowed set). Returns
    ``thr`` when it certifies ``thr`` (the node is pruned), else, with ``value``, the certified value at
    the best ``theta`` found, else ``inf``; ``inf`` also when a certificate fails.
    """
    n = A.shape[0]
    r = k - m
    M = _sub(DM, A)
    best, theta, Ms = _theta_search(M, m, k, rho, thr, add0, v, evals, steps, deadline)
    cmax = 0.0
    for q in range(n):
        cmax = max(cmax, abs(M[q, q]))
    da, db = split_shift(m, r, theta)
    # the shifted diagonal's rounding (u (|M_ii| + rho |d_i|) each) and the final sum's
    slack = 8.0 * _EPS * (abs(best) + cmax + rho * (abs(da) + abs(db)) + add0)
    if best + add0 < thr - slack and below(Ms, thr - add0 - slack, deadline):
        return thr
    if value:
        level = best + 1e-7 * abs(best) + 1e-300
        if below(Ms, level, deadline):
            return level + add0 + slack
    return np.inf


@njit
def dual_value(DM, add, A, deadline=NO_DEADLINE):
    """:func:`dual_bound`'s value certified (no threshold): for a node re-bounded when a search stops;
    ``inf`` when the certificate fails. Lanczos's estimate raised by ``1e-7`` of it is certified first
    (:func:`below`, which reads ``deadline``); only when that fails and time is left, the full spectrum
    (an ``eigvalsh`` of ``p = 2,000`` took 9 s past a time limit)."""
    M = _sub(DM, A)
    n = A.shape[0]
    v = np.empty(n)
    for t in range(n):
        v[t] = 1.0 + 0.5 * np.sin(t + 1.0)
    out = np.empty(n)
    theta, _res, _steps = lanczos_top(M, v, 60, 1e-12, out)
    level = theta + 1e-7 * abs(theta) + 1e-300
    if theta >= 0.0 and below(M, level, deadline):
        return level + add
    if now() >= deadline:
        return np.inf
    lam = np.linalg.eigvalsh(M)[n - 1]
    level = lam * (1.0 + 1e-7) + 1e-12 * abs(lam) + 1e-300
    if lam >= 0.0 and below(M, level, deadline):
        return level + add
    return np.inf


@njit
def split_shift(m, r, theta):
    """The diagonal shifts ``(a - 1, b - 1)`` of the split l1 bound at ``theta``: ``a = m / theta`` on the
    fixed-in features, ``b = r / (1 - theta)`` on the free ones (``m / a + r / b = 1``)."""
    return m / theta - 1.0, r / (1.0 - theta) - 1.0


@njit
def _split_estimate(M, m, r, rho, theta, v, steps):
    """Lanczos's largest Ritz value of ``M + rho diag(a - 1 on the first m, b - 1 after)`` from ``v``
    (overwritten with the Ritz vector): at most the split bound at ``theta``."""
    n = M.shape[0]
    Ms = M.copy()
    da, db = split_shift(m, r, theta)
    for i in range(n):
        Ms[i, i] += rho * (da if i < m else db)
    out = np.empty(n)
    theta_r, _res, _steps = lanczos_top(Ms, v, steps, 1e-10, out)
    v[:] = out
    return theta_r, Ms


@njit
def split_reachable(C, A, m, k, rho, nonneg, v, thr):
    """False when :func:`l1_split_bound` cannot reach ``thr`` at any ``theta``: a test of ``O(|A|^2)``.

    For any unit ``v`` (here the l1 relaxation's Ritz vector, fixed-in part first), ``lambda_max(M +
    rho D(theta)) >= v'Mv + rho (||v_I||^2 (a - 1) + ||v_F||^2 (b - 1))`` (a Rayleigh quotient), with
    ``M = C_A - U_A``, ``a = m / theta``, ``b = r / (1 - theta)``. Its minimum over ``theta`` in ``(0, 1)``
    is ``v'Mv - rho + rho (sqrt(m) ||v_I|| + sqrt(r) ||v_F||)^2`` (``min_t P / t + Q / (1 - t) =
    (sqrt(P) + sqrt(Q))^2``), so when that exceeds ``thr`` no ``theta`` prunes the node and the split
    bound is skipped (measured on CBCL, p = 361: it cost as much as the rest of a shallow node).
    """
    n = A.shape[0]
    nv = 0.0
    nI = 0.0
    for a in range(n):
        nv += v[a] * v[a]
        if a < m:
            nI += v[a] * v[a]
    if not nv > 0.0:
        return True
    M = l1_matrix(C, A, rho, nonneg)
    q = 0.0
    for a in range(n):
        s = 0.0
        for b in range(n):
            s += M[a, b] * v[b]
        q += v[a] * s
    q /= nv
    nI /= nv
    nF = max(1.0 - nI, 0.0)
    r = k - m
    lb = q - rho + rho * (np.sqrt(m * nI) + np.sqrt(r * nF)) ** 2
    return lb <= thr * (1.0 + 1e-9) + 1e-12 * abs(thr)


@njit
def l1_split_bound(C, A, m, k, rho, thr, nonneg, v, evals=6, steps=30, certify=True, deadline=NO_DEADLINE):
    """The l1 bound with the fixed-in features apart: ``A`` lists the ``m`` fixed-in features first.

    With ``U`` as in :func:`l1_bound` (zero diagonal, ``|U_ij| <= rho``; ``U_ij <= rho`` when ``x >= 0``),
    ``x'Ux <= rho (||x||_1^2 - ||x||^2)``. Split ``x = x_I + x_F``: ``x_I`` has at most ``m`` non-zeros and
    ``x_F`` at most ``r = k - m``, so for any ``a, b > 0`` with ``m / a + r / b = 1`` (Cauchy-Schwarz with
    weights) ``||x||_1^2 = (||x_I||_1 + ||x_F||_1)^2 <= (m / a + r / b)(a ||x_I||^2 + b ||x_F||^2)
    = a ||x_I||^2 + b ||x_F||^2``. Hence ``x'Cx = x'(C - U)x + x'Ux <= x'(C_A - U_A + rho D)x <=
    lambda_max(C_A - U_A + rho D)``, ``D`` diagonal with ``a - 1`` on ``I`` and ``b - 1`` on ``F``; the
    parametrization ``a = m / theta``, ``b = r / (1 - theta)``, ``theta`` in ``(0, 1)``, covers every
    pair. ``theta = m / k`` gives ``a = b = k``: :func:`l1_bound`'s value; other ``theta`` move the
    ``l1`` charge between the fixed-in block and the free one, which the plain bound (a function of the
    allowed set only) cannot, so forcing a feature in can tighten it. The value is convex in ``theta``
    (``lambda_max`` is convex and nondecreasing in the diagonal, ``a`` and ``b`` are convex in
    ``theta``): a pattern search from ``m / k`` of ``evals`` Lanczos estimates, the final one certified
    by :func:`below`. Returns ``(bound, theta)``, ``bound <= thr`` when pruned, ``inf`` when the
    certificate fails.
    """
    n = A.shape[0]
    r = k - m
    M = l1_matrix(C, A, rho, nonneg)
    best, theta, Ms = _theta_search(M, m, k, rho, thr, 0.0, v, evals, steps, deadline)
    cmax = 0.0
    for q in range(n):
        cmax = max(cmax, abs(C[A[q], A[q]]))
    da, db = split_shift(m, r, theta)
    slack = 8.0 * _EPS * (abs(best) + (k + 1) * (rho + cmax) + rho * (abs(da) + abs(db)))
    if best < thr - slack and below(Ms, thr - slack, deadline):
        return thr, theta
    if not certify:
        return np.inf, theta
    level = best * (1.0 + 1e-7) + 1e-12 * (abs(best) + cmax)
    if below(Ms, level, deadline):
        return level + slack, theta
    if now() >= deadline:
        return np.inf, theta
    lam = np.linalg.eigvalsh(Ms)[n - 1]  # Lanczos missed the top eigenvalue
    level = lam * (1.0 + 1e-7) + 1e-12 * (abs(lam) + cmax)
    if below(Ms, level, deadline):
        return level + slack, theta
    return np.inf, theta


@njit
def _sub(C, S):
    m = S.shape[0]
    M = np.empty((m, m))
    for a in range(m):
        for b in range(m):
            M[a, b] = C[S[a], S[b]]
    return M


@njit
def signed_value(C, S):
    """``lambda_max(C_S)`` and its unit eigenvector (on ``S``)."""
    w, V = np.linalg.eigh(_sub(C, S))
    return w[-1], V[:, -1].copy()


@njit
def _subset_value(C, S, keep, best, bx):
    """One subset of :func:`nonneg_value`: ``S[keep]``'s one-signed eigenvector of largest eigenvalue above
    ``best`` (Perron's first), recorded in ``bx`` (on ``S``). Returns ``(best, expand)``: ``expand`` is False
    when no subset of ``S[keep]`` can beat ``best`` (``lambda_max`` at most it) or the top eigenvector is
    one-signed (then it is the subset's optimum, and bounds every smaller subset's)."""
    m = S.shape[0]
    n = 0
    for t in range(m):
        if keep[t]:
            n += 1
    pos = np.empty(n, np.int64)
    T = np.empty(n, np.int64)
    n = 0
    for t in range(m):
        if keep[t]:
            pos[n] = t
            T[n] = S[t]
            n += 1
    M = _sub(C, T)
    w, V = np.linalg.eigh(M)
    if w[n - 1] <= best:
        return best, False
    perron = False
    for e in range(n - 1, -1, -1):
        if w[e] <= best:
            break
        v = V[:, e]
        tol = 1e-12 * np.max(np.abs(v))
        if np.all(v >= -tol) or np.all(v <= tol):
            x = np.abs(v)
            x /= np.sqrt(np.sum(x * x))
            val = x @ M @ x
            if val > best:
                best = val
                bx[:] = 0.0
                for t in range(n):
                    bx[pos[t]] = x[t]
            if e == n - 1:
                perron = True
            break
    return best, not perron and n > 1


@njit
def nonneg_value(C, S, floor, budget=200_000, deadline=NO_DEADLINE):
    """``max x'Cx`` over unit ``x >= 0`` supported in ``S``, exactly, when it exceeds ``floor``.

    At the optimum, ``x`` restricted to its support ``T`` is a positive eigenvector of ``C_T`` (KKT), so
    the value is the largest eigenvalue with a one-signed eigenvector over the subsets ``T`` of ``S``.
    The subsets are enumerated depth first, each once (a subset is ``S`` less an increasing sequence of
    positions; its children remove one more position after the last, the last position first), and a
    subset whose ``lambda_max`` is at most the best so far is pruned with all of its own subsets; a
    one-signed top eigenvector (Perron) ends a branch. Any ``|S|``: the state is the removed sequence and
    one child pointer per depth. Where ``S`` itself does not decide it, the enumeration of its subsets
    starts from the better of that and :func:`nonneg_lower`'s feasible value on ``S``, so a leaf cut short
    by its budget keeps at least the projected power iteration's value. Returns ``(value, x on S,
    complete)``; ``value <= floor`` (and ``x`` zero) when nothing beats ``floor``; ``complete`` is
    False when ``budget`` subsets were examined before the enumeration ended, or when ``deadline``
    passed (then ``value`` is only a lower bound).
    """
    m = S.shape[0]
    bx = np.zeros(m)
    keep = np.ones(m, np.bool_)
    removed = np.empty(m + 1, np.int64)  # removed[d]: the position whose removal made the depth-d subset
    nxt = np.empty(m + 1, np.int64)  # the next child (a position to remove) of the depth-d subset
    best, expand = _subset_value(C, S, keep, floor, bx)
    seen = 1
    if not expand:  # S itself decided (at most the floor, or Perron: at least the projected value)
        return best, bx, True
    lo, xl = nonneg_lower(C, S)  # a feasible start: the subsets are pruned against it from the first
    if lo > best:
        best = lo
        bx[:] = xl
    d = 0
    removed[0] = -1
    nxt[0] = m - 1
    while d >= 0:
        t = nxt[d]
        if t <= removed[d]:  # every child done: back to the parent, the position restored
            if d > 0:
                keep[removed[d]] = True
            d -= 1
            continue
        nxt[d] = t - 1
        if seen >= budget or (seen % 8 == 0 and deadline < np.inf and now() >= deadline):
            return best, bx, False
        seen += 1
        keep[t] = False
        best, expand = _subset_value(C, S, keep, best, bx)
        if expand:
            d += 1
            removed[d] = t
            nxt[d] = m - 1
        else:
            keep[t] = True
    return best, bx, True


@njit
def nonneg_lower(C, S, n_iter=30):
    """A feasible non-negative value on ``S``: projected power steps from the clipped top eigenvector."""
    M = _sub(C, S)
    _w, V = np.linalg.eigh(M)
    v = V[:, -1].copy()
    if np.sum(np.maximum(v, 0.0)) < np.sum(np.maximum(-v, 0.0)):
        v = -v
    x = np.maximum(v, 0.0)
    nx = np.sqrt(np.sum(x * x))
    if nx == 0.0:
        x[:] = 0.0
        x[np.argmax(np.diag(M))] = 1.0
    else:
        x /= nx
    for _ in range(n_iter):  # C PSD: each projected power step raises x'Cx
        y = np.maximum(M @ x, 0.0)
        ny = np.sqrt(np.sum(y * y))
        if ny == 0.0:
            break
        x = y / ny
    return x @ M @ x, x


@njit
def _evaluate(C, S, nonneg, exact, inc_val, inc_x, deadline=NO_DEADLINE):
    """Evaluate support ``S``; update the incumbent (``inc_val[0]``, full-length ``inc_x``) when it improves.

    A non-negative support whose enumeration runs out of its budget records ``lambda_max(C_S)`` in
    ``inc_val[1]`` (the largest bound of the supports left undecided, part of the certified bound).
    """
    if S.shape[0] == 0:
        return
    if nonneg:
        if exact:
            val, x, complete = nonneg_value(C, S, inc_val[0], LEAF_BUDGET, deadline)
            if not complete:
                inc_val[1] = max(inc_val[1], signed_value(C, S)[0])
        else:
            val, x = nonneg_lower(C, S)
    else:
        val, x = signed_value(C, S)
    if val > inc_val[0]:
        inc_val[0] = val
        inc_x[:] = 0.0
        for t in range(S.shape[0]):
            inc_x[S[t]] = x[t]


#: The most features a signed node of the best-bound orders may still add for :func:`decide_few` to
#: decide it by enumeration (one eigendecomposition of ``k - 1`` features for each way to add all but
#: the last, and for each last one a test of ``O(k)``: about ``|F|^2 / 2`` of ``k - 1`` features at
#: ``r = 3``). 2: with 3, Wishart p = 200, k = 5 was proven in 39 nodes instead of 191, but Arrhythmia
#: (p = 274), k = 15 spent 7x the CPU on the same 2,000 nodes (with 2, as much as with 1).
FEW = 2


@njit
def _add_last(C, T, F, q0, gap, inc_val, inc_x, deadline):
    """The supports ``T + F[q]`` for ``q >= q0``: each evaluated unless the 2 x 2 test bounds it below
    the incumbent (times ``1 + gap``). With ``C_{T+j} = [[C_T, u], [u', C_jj]]``, ``u = C_{T,j}``, a unit
    ``(y, t)`` has ``y'C_T y + 2 t u'y + C_jj t^2 <= l ||y||^2 + 2 |t| ||u|| ||y|| + C_jj t^2``, ``l =
    lambda_max(C_T)``, so ``lambda_max(C_{T+j}) <= lambda_max [[l, ||u||], [||u||, C_jj]]``; the test
    skips a support only when that bound, raised by ``1e-9`` of it (the rounding of ``l`` from ``eigh``
    and of the 2 x 2's sum: far below it at these sizes), is at most the threshold."""
    n = T.shape[0]
    lt = np.linalg.eigvalsh(_sub(C, T))[n - 1] if n > 0 else 0.0
    S = np.empty(n + 1, np.int64)
    S[:n] = T
    thr = inc_val[0] + gap * abs(inc_val[0])
    for q in range(q0, F.shape[0]):
        j = F[q]
        u2 = 0.0
        for t in range(n):
            u2 += C[T[t], j] * C[T[t], j]
        bound = lam_max_2x2(lt, np.sqrt(u2), C[j, j])
        if bound * (1.0 + 1e-9) + 1e-300 <= thr:
            continue
        S[n] = j
        _evaluate(C, S, False, True, inc_val, inc_x, deadline)
        thr = inc_val[0] + gap * abs(inc_val[0])


@njit
def _add_two(C, T, F, q0, gap, inc_val, inc_x, deadline):
    """The supports ``T + {F[q1], F[q2]}`` for ``q0 <= q1 < q2`` (each ``T + F[q1]`` by
    :func:`_add_last`). Returns False past ``deadline`` (read before each ``q1``)."""
    n = T.shape[0]
    T1 = np.empty(n + 1, np.int64)
    T1[:n] = T
    for q1 in range(q0, F.shape[0] - 1):
        if deadline < np.inf and now() >= deadline:
            return False
        T1[n] = F[q1]
        _add_last(C, T1, F, q1 + 1, gap, inc_val, inc_x, deadline)
    return True


@njit
def decide_few(C, I, F, r, gap, inc_val, inc_x, deadline=NO_DEADLINE):
    """Decide a signed node that may add ``r <= 3`` of the free features ``F`` to its fixed-in ``I`` (and
    has more than ``r`` free): every support of the node is ``I`` plus ``r`` of ``F`` or a subset of one
    (``C`` PSD: a subset's ``lambda_max`` is at most its superset's), so the node is done when each ``I``
    plus ``r`` features of ``F`` (increasing positions) is evaluated or bounded below the incumbent by
    :func:`_add_last`'s test on its last feature; the incumbent is updated in place. Returns False, with
    the node not decided, past ``deadline`` (the incumbents found stay)."""
    m = I.shape[0]
    if r == 1:
        _add_last(C, I, F, 0, gap, inc_val, inc_x, deadline)
        return True
    if r == 2:
        return _add_two(C, I, F, 0, gap, inc_val, inc_x, deadline)
    T = np.empty(m + 1, np.int64)
    T[:m] = I
    for q1 in range(F.shape[0] - 2):
        T[m] = F[q1]
        if not _add_two(C, T, F, q1 + 1, gap, inc_val, inc_x, deadline):
            return False
    return True


@njit
def _node(
    C, W, diag, lam, V2T, k, nonneg, gap, eig_limit, status, pb, prho, pvec, pl1, inc_val, inc_x, counts,
    l1_evals, branch_l1, l1_split, deadline, dual_M, dual_add, dual_rho, tight,
):  # fmt: skip
    """One node of the branch and bound: its bounds against the incumbent (the first at most it prunes),
    its completion, and the free feature it branches on.

    ``status`` (1 in, -1 out, 0 free per feature; a copy) and ``pvec`` (the Lanczos start by feature; a
    copy) are updated in place: the features fixed out, the l1 relaxation's Ritz vector. ``pb``,
    ``prho``, ``pl1``: the parent's bound, l1 ``rho`` and, for an "in" child, its certified l1 bound (the
    same allowed set; else ``inf``). Returns ``(j, b, rho, bl)``: ``j = -1`` when the node is closed
    (pruned or a leaf), else the feature to branch on, ``b`` the node's certified bound (its children's
    until they are processed), ``rho`` and ``bl`` its l1 ``rho`` and certified l1 bound. ``tight`` (the
    best-bound orders): ``b`` also holds the parent's bound and the certified value of the root's dual
    point over the allowed features (one Cholesky more per node: what those orders sort by), the node
    branches on the free feature with the largest weight in that point's Ritz vector, and a signed node
    with at most ``FEW`` features left to add is decided by enumeration (:func:`decide_few`). Depth-first
    order keeps
    the rules it had (its node counts are those of the published benchmarks).
    """
    b = pb
    rho = prho
    bl = np.inf
    thr = inc_val[0] + gap * abs(inc_val[0])
    if pb <= thr:
        counts[STALE] += 1
        return -1, b, rho, bl
    I = np.nonzero(status == 1)[0]
    F = np.nonzero(status == 0)[0]
    m = I.shape[0]
    nf = F.shape[0]
    r = k - m
    if r <= 0:
        counts[LEAF] += 1
        _evaluate(C, I, nonneg, True, inc_val, inc_x, deadline)
        return -1, b, rho, bl
    if m + nf <= k:
        counts[LEAF] += 1
        _evaluate(C, np.concatenate((I, F)), nonneg, True, inc_val, inc_x, deadline)
        return -1, b, rho, bl
    if tight and r <= FEW and not nonneg:
        # at most FEW features to add: the node's supports are decided by enumeration, each support
        # skipped when the 2 x 2 test bounds it below the incumbent (decide_few); the bounds' combs of
        # "out" children at small r kept the global bound of the best-bound orders at the root's (on
        # Wishart p = 200, k = 5 the proof took 1,409 nodes with r = 1 decided, 191 with r <= 2)
        if decide_few(C, I, F, r, gap, inc_val, inc_x, deadline):
            counts[LEAF] += 1
            return -1, b, rho, bl
    dF = diag[F]
    b = trace_bound(diag, I, F, r)
    if b <= thr:
        counts[TRACE] += 1
        return -1, b, rho, bl
    lam1 = 0.0
    lam2 = 0.0
    wI = np.zeros(1)
    VI = np.zeros((1, 1))
    have_split = False
    if m > 0:
        wI, VI = np.linalg.eigh(_sub(C, I))
        lam1 = max(wI[m - 1], 0.0)
        if m > 1:
            lam2 = max(wI[m - 2], 0.0)
        b = min(b, lixie_bound(lam1, diag, F, r))
        if b <= thr:
            counts[LIXIE] += 1
            return -1, b, rho, bl
        if lam1 > 0.0:
            a2, ab, b2 = split_along(C, diag, I, F, VI[:, m - 1].copy(), lam1)
            have_split = True
            b = min(b, two_by_two_bound(lam1, lam2, a2, ab, b2, r))
            if b <= thr:
                counts[TWO_BY_TWO] += 1
                return -1, b, rho, bl
            sa = signed_along(C, I, F, VI[:, m - 1].copy(), lam1)
            b = min(b, residual_bound(C, F, sa, a2, b2, lam1, lam2, r))
            if b <= thr:
                counts[RESIDUAL] += 1
                return -1, b, rho, bl
    if have_split:
        b = min(b, angle_bound(lam1, lam2, np.sqrt(a2), np.sqrt(b2), r, thr))
        if b <= thr:
            counts[ANGLE] += 1
            return -1, b, rho, bl
    if m > 1 and lam1 > 0.0:
        b = min(b, multi_bound(C, diag, I, F, wI, VI, r))
        if b <= thr:
            counts[MULTI] += 1
            return -1, b, rho, bl
    b = min(b, knapsack_bound(lam, V2T, I, F, r, thr))
    if b <= thr:
        counts[KNAPSACK] += 1
        return -1, b, rho, bl
    b = min(b, gershgorin_bound(W, I, F, r))
    if b <= thr:
        counts[GERSHGORIN] += 1
        return -1, b, rho, bl
    if m + nf <= eig_limit:
        A = np.concatenate((I, F))
        b = min(b, np.linalg.eigvalsh(_sub(C, A))[m + nf - 1])
        if b <= thr:
            counts[LAMBDA_A] += 1
            return -1, b, rho, bl
    # the node's incumbent: I plus the r free features most aligned with it
    if have_split:
        score = a2
    else:
        score = dF.copy()
    order = np.argsort(-score)
    S = np.concatenate((I, F[order[:r]]))
    _evaluate(C, S, nonneg, False, inc_val, inc_x)
    thr = inc_val[0] + gap * abs(inc_val[0])
    if b <= thr:
        counts[NODE_INCUMBENT] += 1
        return -1, b, rho, bl
    if have_split:
        fb = forced_in_bounds(lam1, lam2, a2, ab, b2, dF, r)
        keep = fb > thr
        n_out = nf - np.sum(keep)
        if n_out > 0:
            pl1 = np.inf  # a smaller allowed set: the parent's l1 bound no longer the node's
            counts[FIXED_OUT] += n_out
            for q in range(nf):
                if not keep[q]:
                    status[F[q]] = -1
            F = F[keep]
            score = score[keep]
            nf = F.shape[0]
            if nf == 0 or m + nf <= k:
                counts[LEAF] += 1
                _evaluate(C, np.concatenate((I, F)), nonneg, True, inc_val, inc_x, deadline)
                return -1, b, rho, bl
            # the node's own bounds over the smaller free set
            a2 = a2[keep]
            ab = ab[keep]
            b2 = b2[keep]
            dF = dF[keep]
            b = min(b, lixie_bound(lam1, diag, F, r), two_by_two_bound(lam1, lam2, a2, ab, b2, r))
            if b <= thr:
                counts[TWO_BY_TWO] += 1
                return -1, b, rho, bl
    rho = prho
    bl = np.inf
    if l1_evals > 0:
        A = np.concatenate((I, F))
        v = np.empty(m + nf)
        for t in range(m + nf):
            v[t] = pvec[A[t]]
        if not np.sum(v * v) > 0.0:  # the root: a start with no symmetry (ones can miss the top)
            for t in range(m + nf):
                v[t] = 1.0 + 0.5 * np.sin(t + 1.0)
        dvec = np.zeros(0)
        if dual_M is not None and (pl1 == np.inf or tight):
            # an "in" child has its parent's allowed set, so its parent's value: with tight only the
            # Ritz vector is new (the branching feature)
            dvec = np.empty(m + nf)
            b = min(b, dual_bound(dual_M, dual_add, A, thr, v, 30, deadline, tight and pl1 == np.inf, dvec))
            if b <= thr:
                counts[L1] += 1  # the l1 bound at the root's optimized U
                return -1, b, rho, bl
        if dual_M is not None and dual_rho >= 0.0 and m > 0 and l1_split:
            vs = v.copy()
            add0 = dual_add - dual_rho * (k - 1)
            bs = dual_split_bound(dual_M, dual_rho, add0, A, m, k, thr, vs, l1_evals, 30, deadline, tight)
            b = min(b, bs)
            if b <= thr:
                counts[L1_SPLIT] += 1  # the split l1 bound at the root's optimized U
                return -1, b, rho, bl
        if pl1 < np.inf:  # the parent's allowed set, so its certified l1 bound (and rho, v)
            bl = pl1
        else:
            evals = l1_evals if prho >= 0.0 else 4 * l1_evals
            bl, rho = l1_bound(C, A, k, prho, thr, nonneg, v, evals, 30, deadline)
        b = min(b, bl)
        if b <= thr:
            counts[L1] += 1
            return -1, b, rho, bl
        if l1_split and m > 0 and split_reachable(C, A, m, k, rho, nonneg, v, thr):
            vs = v.copy()
            bs, _theta = l1_split_bound(C, A, m, k, rho, thr, nonneg, vs, l1_evals, 30, False, deadline)
            b = min(b, bs)
            if b <= thr:
                counts[L1_SPLIT] += 1
                return -1, b, rho, bl
        pvec[:] = 0.0
        for t in range(m + nf):
            pvec[A[t]] = v[t]
        if branch_l1:
            vf = np.abs(v[m:])
            score = vf
            if tight and dvec.shape[0] == m + nf:
                # the dual point's Ritz vector: the "out" child drops the feature its bound leans on most
                # (the clipped U's vector chose features whose removal left the bound unchanged)
                score = np.abs(dvec[m:])
    j = F[np.argmax(score)]
    if tight:
        b = min(b, pb)  # the parent's bound holds for the child's supports (a subset of them)
    return j, b, rho, bl


@njit
def _outranks(bound, seq, a, b):
    """Whether open node ``a`` comes before ``b`` in the best-bound order: the larger bound first, and
    between equal bounds the later (``seq``: a sibling pair inherits one bound, and the "in" child, pushed
    last, goes first as in depth-first order)."""
    return bound[a] > bound[b] or (bound[a] == bound[b] and seq[a] > seq[b])


@njit
def _sift_down(heap, n, bound, seq, q):
    while True:
        c = 2 * q + 1
        if c >= n:
            return
        if c + 1 < n and _outranks(bound, seq, heap[c + 1], heap[c]):
            c += 1
        if not _outranks(bound, seq, heap[c], heap[q]):
            return
        heap[q], heap[c] = heap[c], heap[q]
        q = c


@njit
def heap_push(heap, n, slot, bound, seq):
    """Add ``slot`` to the binary heap ``heap[:n]`` of open nodes (best first); returns the new size."""
    q = n
    heap[q] = slot
    while q > 0:
        par = (q - 1) // 2
        if not _outranks(bound, seq, heap[q], heap[par]):
            break
        heap[q], heap[par] = heap[par], heap[q]
        q = par
    return n + 1


@njit
def heap_pop(heap, n, bound, seq):
    """The best open node of ``heap[:n]`` and the new size."""
    top = heap[0]
    n -= 1
    if n > 0:
        heap[0] = heap[n]
        _sift_down(heap, n, bound, seq, 0)
    return top, n


@njit
def heapify(heap, n, bound, seq):
    """Restore the heap order of ``heap[:n]`` after bounds changed outside the node loop (the chain's
    screening, a re-bounding)."""
    for q in range(n // 2 - 1, -1, -1):
        _sift_down(heap, n, bound, seq, q)


#: The node orders of :func:`bnb_run`.
DEPTH, BEST, HYBRID = 0, 1, 2
#: ``state`` of :func:`bnb_run`: the depth-first stack's size, the heap's, the free pool slots', the
#: next sequence number.
SP, HEAP_N, N_FREE, SEQ = 0, 1, 2, 3


@njit
def bnb_run(
    C, W, lam, V2T, k, nonneg, gap, eig_limit, node_status, node_bound, node_rho, node_vec, node_l1,
    node_seq, state, heap, free, inc_val, inc_x, counts, max_nodes, order=DEPTH, l1_evals=8,
    branch_l1=True, l1_split=True, deadline=NO_DEADLINE, dual_M=None, dual_add=0.0, dual_rho=-1.0,
):  # fmt: skip
    """Process up to ``max_nodes`` nodes of the branch and bound; the state lives in the arrays.

    Open nodes are rows of ``node_*``: ``node_status[t]`` (1 in, -1 out, 0 free per feature),
    ``node_bound[t]`` (a certified bound on the node's supports: its parent's), ``node_rho[t]`` (the
    parent's l1 ``rho``; negative: none yet), ``node_vec[t]`` (the parent's l1 eigenvector: the Lanczos
    start), ``node_l1[t]`` (the parent's certified l1 bound when the node is its parent's "in" child,
    the same allowed set; else ``inf``), ``node_seq[t]`` (the order of pushes). The first ``p + 2``
    rows are a depth-first stack of ``state[SP]`` nodes (depth first, at most ``p + 1`` are open); the
    rest are a pool whose ``state[HEAP_N]`` open slots ``heap`` keeps as a binary heap, largest bound
    first, with ``state[N_FREE]`` free slots in ``free``. The stack is always taken first.

    ``order``: ``DEPTH`` puts both children on the stack; ``BEST`` (best bound) puts both in the pool,
    and when it has no room for them, on the stack, so that the node's subtree is searched depth first
    in bounded memory; ``HYBRID`` puts the "out" child in the pool (the stack when it is full) and the
    "in" child on the stack: each node taken from the pool starts a dive that ends at the first closed
    node. ``BEST`` and ``HYBRID`` keep the tighter bounds of :func:`_node` (``tight``). The incumbent
    (``inc_val[0]``, ``inc_x``) and the prune ``counts`` are updated in place. Returns the nodes
    processed (a stale node taken from the pool or the stack counts as one, as before).

    ``deadline`` (a ``perf_counter`` reading): the loop stops before a node that would start after it,
    and past it a node's certificates give up (the bound is not used: the node branches) and a leaf's
    enumeration stops (its ``lambda_max`` is kept in ``inc_val[1]``, as for an exhausted budget): every
    bound still holds. ``dual_M`` (optional): the root's optimized l1 dual matrix ``fl(C - U)`` with its
    ``dual_add`` (:func:`dual_bound`), tried at every node before the l1 bound's own search; ``dual_rho``
    (when not negative): that point's ``rho``, for the split bound at it (:func:`dual_split_bound`,
    nodes with fixed-in features, with ``l1_split``).
    """
    p = C.shape[0]
    D = p + 2
    diag = np.empty(p)
    for i in range(p):
        diag[i] = C[i, i]
    tight = order != DEPTH
    nodes = 0
    while nodes < max_nodes:
        if deadline < np.inf and now() >= deadline:
            break
        if state[SP] > 0:
            state[SP] -= 1
            s = state[SP]
        elif state[HEAP_N] > 0:
            s, state[HEAP_N] = heap_pop(heap, state[HEAP_N], node_bound, node_seq)
            free[state[N_FREE]] = s
            state[N_FREE] += 1
        else:
            break
        status = node_status[s].copy()
        pvec = node_vec[s].copy()
        nodes += 1
        j, b, rho, bl = _node(
            C, W, diag, lam, V2T, k, nonneg, gap, eig_limit, status, node_bound[s], node_rho[s], pvec,
            node_l1[s], inc_val, inc_x, counts, l1_evals, branch_l1, l1_split, deadline, dual_M, dual_add,
            dual_rho, tight,
        )  # fmt: skip
        if j < 0:
            continue
        both = order == BEST and state[N_FREE] >= 2
        for c in range(2):  # the "out" child first: on the stack the "in" child is taken first
            if both or (order == HYBRID and c == 0 and state[N_FREE] >= 1):
                state[N_FREE] -= 1
                t = free[state[N_FREE]]
            else:
                t = state[SP]
                state[SP] += 1
            node_status[t, :] = status
            node_status[t, j] = 2 * c - 1
            node_bound[t] = b
            node_rho[t] = rho
            node_vec[t, :] = pvec
            node_l1[t] = bl if c == 1 else np.inf
            node_seq[t] = state[SEQ]
            state[SEQ] += 1
            if t >= D:
                state[HEAP_N] = heap_push(heap, state[HEAP_N], t, node_bound, node_seq)
    return nodes



@njit
def greedy_support(C, k, nonneg, deadline=NO_DEADLINE):
    """Forward selection: add the feature that raises the value most (``lambda_max``, or the non-negative
    lower bound), ``k`` times, or until ``deadline``. Returns the support."""
    p = C.shape[0]
    chosen = np.zeros(p, np.bool_)
    S = np.empty(0, np.int64)
    for step in range(min(k, p)):
        if step > 0 and deadline < np.inf and now() >= deadline:
            break
        best = -np.inf
        bj = -1
        for j in range(p):
            if chosen[j]:
                continue
            T = np.append(S, j)
            if nonneg:
                v, _x = nonneg_lower(C, T, 10)
            else:
                v, _x = signed_value(C, T)
            if v > best:
                best = v
                bj = j
        chosen[bj] = True
        S = np.append(S, bj)
    return S


@njit
def swap_search(C, S, nonneg, max_passes=3, deadline=NO_DEADLINE):
    """Local search: swap one feature of ``S`` for one outside while the value rises (first improvement).

    A swap of ``S[a]`` for ``j`` is evaluated only when a cheap bound lets it improve: with ``B`` the
    support without ``S[a]``, ``C_T = [[C_B, u], [u', C_jj]]``, ``u = C_{B,j}``, and for unit ``(y, t)``
    ``y'C_B y + 2 t u'y + C_jj t^2 <= d ||y||^2 + 2 |t| ||u|| ||y|| + C_jj t^2`` (``d = lambda_max(C_B)``),
    so ``lambda_max(C_T)`` (at least the non-negative value) is at most ``lambda_max [[d, ||u||], [||u||,
    C_jj]]``; below the current value (with a ``1e-9`` margin for rounding) the swap cannot be taken, so
    the search takes the same swaps as without the test (on CBCL, p = 361, it skips nearly every
    candidate: the root's swap passes took 1.5 s of a 7 s solve at k = 15). Past ``deadline`` (read
    before each feature's swaps) it returns the support it has."""
    p = C.shape[0]
    S = S.copy()
    k = S.shape[0]
    if nonneg:
        cur, _x = nonneg_lower(C, S)
    else:
        cur, _x = signed_value(C, S)
    inside = np.zeros(p, np.bool_)
    for i in S:
        inside[i] = True
    B = np.empty(max(k - 1, 0), np.int64)
    for _ in range(max_passes):
        improved = False
        for a in range(k):
            if deadline < np.inf and now() >= deadline:
                return S
            t = 0
            for q in range(k):
                if q != a:
                    B[t] = S[q]
                    t += 1
            d = np.linalg.eigvalsh(_sub(C, B))[k - 2] if k > 1 else 0.0
            for j in range(p):
                if inside[j]:
                    continue
                z2 = 0.0
                for q in range(k - 1):
                    z2 += C[B[q], j] * C[B[q], j]
                c = C[j, j]
                if 0.5 * (d + c) + np.sqrt(0.25 * (d - c) ** 2 + z2) <= cur * (1.0 - 1e-9):
                    continue
                T = S.copy()
                T[a] = j
                if nonneg:
                    v, _x = nonneg_lower(C, T)
                else:
                    v, _x = signed_value(C, T)
                if v > cur * (1.0 + 1e-12):
                    inside[S[a]] = False
                    inside[j] = True
                    S = T
                    cur = v
                    improved = True
        if not improved:
            break
    return S


@njit
def node_bound(
    C,
    W,
    lam,
    V2T,
    status,
    k,
    nonneg,
    eig_limit,
    inc,
    rho0=-1.0,
    l1_evals=16,
    deadline=NO_DEADLINE,
    dual_M=None,
    dual_add=0.0,
):
    """The smallest of the node's bounds (no early exit), with the free features whose forced-in bound is
    at most ``inc`` fixed out first: a certified bound for an open node when a search stops. The l1 bound
    searches ``rho`` from ``rho0`` (``l1_evals`` estimates; 0: not used); ``dual_M``, ``dual_add``: the
    root's optimized l1 dual point (:func:`dual_value`)."""
    I = np.nonzero(status == 1)[0]
    F = np.nonzero(status == 0)[0]
    m = I.shape[0]
    r = k - m
    if r <= 0 or m + F.shape[0] <= k:
        S = np.concatenate((I, F)) if r > 0 else I
        if S.shape[0] == 0:
            return 0.0
        return signed_value(C, S)[0]  # >= the non-negative value
    diag = np.diag(C).copy()
    b = trace_bound(diag, I, F, r)
    if m > 0:
        wI, VI = np.linalg.eigh(_sub(C, I))
        lam1 = max(wI[m - 1], 0.0)
        lam2 = max(wI[m - 2], 0.0) if m > 1 else 0.0
        if lam1 > 0.0:
            u1 = VI[:, m - 1].copy()
            a2, ab, b2 = split_along(C, diag, I, F, u1, lam1)
            keep = forced_in_bounds(lam1, lam2, a2, ab, b2, diag[F], r) > inc
            F = F[keep]
            if m + F.shape[0] <= k:
                return signed_value(C, np.concatenate((I, F)))[0]
            a2, ab, b2 = a2[keep], ab[keep], b2[keep]
            sa = signed_along(C, I, F, u1, lam1)
            b = min(
                b,
                two_by_two_bound(lam1, lam2, a2, ab, b2, r),
                residual_bound(C, F, sa, a2, b2, lam1, lam2, r),
                multi_bound(C, diag, I, F, wI, VI, r),
                angle_bound(lam1, lam2, np.sqrt(a2), np.sqrt(b2), r, -np.inf),
            )
        b = min(b, lixie_bound(lam1, diag, F, r), trace_bound(diag, I, F, r))
    b = min(b, gershgorin_bound(W, I, F, r), knapsack_bound(lam, V2T, I, F, r, -np.inf))
    A = np.concatenate((I, F))
    if m + F.shape[0] <= max(eig_limit, 2 * k):
        b = min(b, np.linalg.eigvalsh(_sub(C, A))[-1])
    # each Lanczos-based bound starts only before the deadline (one costs about 0.3 s at p = 2,000)
    if dual_M is not None and now() < deadline:
        b = min(b, dual_value(dual_M, dual_add, A, deadline))
    if l1_evals > 0 and now() < deadline:
        v = np.empty(A.shape[0])
        for t in range(A.shape[0]):
            v[t] = 1.0 + 0.5 * np.sin(t + 1.0)
        bl, rho = l1_bound(C, A, k, rho0, -np.inf, nonneg, v, l1_evals, 30, deadline)
        b = min(b, bl)
        if m > 0 and now() < deadline:
            b = min(b, l1_split_bound(C, A, m, k, rho, -np.inf, nonneg, v, l1_evals, 30, True, deadline)[0])
    return b
