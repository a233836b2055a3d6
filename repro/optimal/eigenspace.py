"""The l1-relaxation bound over a top eigenspace (Dey, Mazumder & Wang, 2022), on ``C`` or on the l1 dual's
``C - U``.

**The bound.** Let ``x`` be a unit vector with at most ``k`` non-zeros, so that ``x`` lies in
``T = {||x||_2 <= 1, ||x||_1 <= sqrt(k)}`` (``x >= 0`` too when asked). Take any symmetric ``U`` with zero
diagonal in the l1 dual's cone (``|U_ij| <= rho``; ``U_ij <= rho``, ``rho >= 0`` when ``x >= 0``:
:mod:`repro.optimal.l1_dual`; ``U = 0`` is Dey et al.'s own setting), ``M = C - U``, and any real
``p x r`` matrix ``B``. Then

    ``x'Cx = x'(M - BB')x + ||B'x||^2 + x'Ux <= lambda_max(M - BB') + phi(B) + rho (k - 1)``,
    ``phi(B) = max_{x in T} ||B'x||^2``.

With ``B = V_r diag(lambda_j - lambda_{r+1})^{1/2}`` from the top ``r`` eigenpairs of ``M``,
``lambda_max(M - BB') = lambda_{r+1}(M)``: this is Dey et al.'s bound ``lambda_{r+1} + max_{x in T}
sum_j (lambda_j - lambda_{r+1}) (v_j'x)^2`` (their l1 relaxation of sparse PCA restricted to the top
eigenspace, the rest bounded by ``lambda_{r+1}``). Where they solve the convex maximization ``phi`` by a
mixed-integer program over a piecewise-linear model of the squares, here it is a maximization over the unit
sphere of ``R^r``: ``phi(B) = max_{||u|| = 1} h(Bu)^2`` with ``h`` the support function of ``T``,

    ``h(z) = min_{t >= 0} ||soft(z, t)||_2 + sqrt(k) t``

(``T`` is the intersection of two balls: the infimal convolution of ``||.||_2`` and ``sqrt(k) ||.||_inf``,
split at the clip of ``z`` at ``t``; with ``x >= 0``, ``h(max(z, 0))``). Any ``t`` gives an upper value of
``h``. The sphere is searched by branch and bound over the faces of the cube ``[-1, 1]^r`` (one face per
sign pair when ``h`` is even): on a cell, a box ``Q`` of a face, ``u = c / ||c||`` with ``c`` in ``Q``.
Writing ``c = sum_v l_v c_v`` over the vertices, ``h(Bc) <= sum_v l_v h(Bc_v)`` (``h`` is convex) ``<=
Phi sum_v l_v ||c_v||`` with ``Phi = max_v h(Bc_v) / ||c_v||`` (the values at the cell's corner points),
and ``||c|| >= e'c`` for the unit centre ``e``, so ``h(Bu) <= Phi max_v ||c_v|| / e'c_v`` on the cell, an
excess that shrinks as the square of the cell's size (also ``max_v h(Bc_v) / min_Q ||c||``, the smaller
taken); the cell with the largest upper value is halved until the upper value is within
``tol`` of the best point found, or the budget of cells is spent (the bound then is the largest upper value
left, still valid). Its cost grows as ``2^(r - 1)`` evaluations of ``h`` a cell: ``r`` is small.

**Certification.** Every term is rounded upward: ``lambda_max(M - BB')`` from the computed top eigenvalue of
``fl(fl(C - U) - fl(BB'))`` plus the Frobenius norm of the forming errors (at most ``(r + 2) u`` times
``|C| + |U| + |B||B|'``, ``u`` the unit roundoff) and the backward error of the eigensolver
(``8 p u ||.||_F``, as :func:`repro.optimal.dnn.certified_lambda_max`); ``h(Bc)`` from the computed
``z = fl(Bc)``, plus ``r u ||B||_F ||c||`` (``h`` is 1-Lipschitz in the 2-norm), its value at the chosen
``t`` computed directly and enlarged by ``(p + 8) u``; the cell's ratio and square enlarged by ``8 u``.

References
----------
Dey, S. S., Mazumder, R. & Wang, G. (2022). Using l1-relaxation and integer programming to obtain dual
bounds for sparse PCA. Operations Research 70(3), 1914-1932.
"""

from __future__ import annotations

import heapq
import itertools

import numpy as np
import scipy.linalg

from .l1_dual import _rho_of

__all__ = ["eigenspace_bound", "l1_ball_support"]

_EPS = np.finfo(np.float64).eps


def _up(v: float) -> float:
    return float(np.nextafter(v, np.inf))


def l1_ball_support(Z: np.ndarray, k: int, nonneg: bool = False) -> np.ndarray:
    """Upper values of ``h(z) = max_{x in T} z'x`` for each column ``z`` of ``Z`` (``T`` of the module
    docstring), rounded upward: ``||soft(z, t)||_2 + sqrt(k) t`` at the ``t`` that minimizes it (found from
    the sorted ``|z|``; the value is then computed directly at that ``t``, so any error in finding it only
    loosens the bound)."""
    Z = np.asarray(Z, dtype=float)
    Z = Z[:, None] if Z.ndim == 1 else Z
    A = np.maximum(Z, 0.0) if nonneg else np.abs(Z)
    p = A.shape[0]
    s = _up(np.sqrt(float(k)))  # sqrt is correctly rounded: the next float is above sqrt(k)
    S = -np.sort(-A, axis=0)
    cs, cs2 = np.cumsum(S, axis=0), np.cumsum(S * S, axis=0)
    j = np.arange(1, p + 1, dtype=float)[:, None]
    lo = np.vstack([S[1:], np.zeros((1, S.shape[1]))])
    m = cs / j
    q = np.maximum(cs2 / j - m * m, 0.0)
    # on [S_(j+1), S_(j)] exactly j entries exceed t: the stationary point of sqrt(sum (S_i - t)^2) + s t
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(j > s * s, m - s * np.sqrt(q / np.maximum(j - s * s, 1e-300)), lo)
    t = np.clip(np.nan_to_num(t, nan=0.0), lo, S)
    g = np.sqrt(np.maximum(cs2 - 2.0 * t * cs + j * t * t, 0.0)) + s * t  # only to choose t
    best = np.where(g.min(axis=0) < np.sqrt(cs2[-1]), t[np.argmin(g, axis=0), np.arange(S.shape[1])], 0.0)
    val = np.sqrt(np.sum(np.maximum(A - best, 0.0) ** 2, axis=0)) + s * best
    return val * (1.0 + (p + 8) * _EPS)


def _sphere_max(B: np.ndarray, k: int, nonneg: bool, tol: float, max_cells: int) -> tuple[float, float, int]:
    """``(upper, lower, cells)``: an upper value of ``max_{||u|| = 1} h(Bu)`` (rounding included), the best
    ``h(Bu)`` at a point found, and the cells evaluated (module docstring)."""
    r = B.shape[1]
    slack = (r + 1) * _EPS * float(np.linalg.norm(B))  # |fl(Bc) - Bc| <= r u |B||c| (to first order)
    if r == 1:  # the sphere is {1, -1}
        v = float(l1_ball_support(B[:, 0], k, nonneg)[0])
        v = max(v, float(l1_ball_support(-B[:, 0], k, nonneg)[0])) if nonneg else v
        return _up(v + slack), v, 1
    corners = np.array(list(itertools.product((0.0, 1.0), repeat=r - 1)))
    lower = 0.0
    cells = 0

    def upper_values(boxes):
        nonlocal lower, cells
        Cs = []
        for f, sg, lo, hi in boxes:
            Cs.append(np.insert(lo + corners * (hi - lo), f, sg, axis=1))
        Call = np.vstack(Cs)
        hv = l1_ball_support(B @ Call.T, k, nonneg)
        norms = np.linalg.norm(Call, axis=1)
        lower = max(lower, float(np.max(hv / norms)))
        cells += len(boxes)
        nv = len(corners)
        out = []
        for i, (_f, _sg, lo, hi) in enumerate(boxes):
            h_v, n_v, c_v = hv[i * nv : (i + 1) * nv], norms[i * nv : (i + 1) * nv], Cs[i]
            # (a) h(Bc) <= max_v h(Bc_v) (convexity) and ||c|| >= its minimum on the box (c_f = +-1)
            d = np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(np.abs(lo), np.abs(hi)))
            a = (float(h_v.max()) + slack * np.sqrt(r)) / np.sqrt(1.0 + float(np.sum(d * d)))
            # (b) c = sum l_v c_v: h(Bc) <= sum l_v ||c_v|| phi_v <= Phi sum l_v ||c_v||, while
            # ||c|| >= e'c = sum l_v e'c_v (e the unit centre): the ratio is at most max ||c_v|| / e'c_v,
            # 1 + O(diameter^2) where (a) loses O(diameter)
            e = c_v.mean(axis=0)
            dots = c_v @ (e / np.linalg.norm(e))
            if np.all(dots > 0):
                b = (float(np.max(h_v / n_v)) + slack) * float(np.max(n_v / dots)) * (1.0 + 8.0 * _EPS)
                a = min(a * (1.0 + 8.0 * _EPS), b)
            out.append(a * (1.0 + 8.0 * _EPS))
        return out

    signs = (1.0, -1.0) if nonneg else (1.0,)  # h is even without x >= 0: half the sphere covers it
    start = [(f, sg, -np.ones(r - 1), np.ones(r - 1)) for f in range(r) for sg in signs]
    heap = []
    for n, (box, v) in enumerate(zip(start, upper_values(start), strict=True)):
        heapq.heappush(heap, (-v, n, box))
    n = len(heap)
    while cells < max_cells and -heap[0][0] > lower * (1.0 + tol):
        batch = [heapq.heappop(heap) for _ in range(min(16, len(heap)))]
        kids = []
        for _v, _n, (f, sg, lo, hi) in batch:
            i = int(np.argmax(hi - lo))
            mid = 0.5 * (lo[i] + hi[i])
            for a, b in ((lo[i], mid), (mid, hi[i])):
                lo2, hi2 = lo.copy(), hi.copy()
                lo2[i], hi2[i] = a, b
                kids.append((f, sg, lo2, hi2))
        for box, v in zip(kids, upper_values(kids), strict=True):
            n += 1
            heapq.heappush(heap, (-v, n, box))
    return -heap[0][0], lower, cells


def eigenspace_bound(
    C: np.ndarray,
    k: int,
    U: np.ndarray | None = None,
    *,
    r: int = 3,
    nonneg: bool = False,
    tol: float = 1e-4,
    max_cells: int = 20000,
) -> tuple[float, dict]:
    """A certified upper bound on ``max x'Cx``, ``||x|| = 1``, ``|x|_0 <= k`` (and ``x >= 0`` with
    ``nonneg``): ``lambda_{r+1}(M) + phi(B) + rho (k - 1)`` with ``M = C - U`` and ``B`` from the top ``r``
    eigenpairs of ``M`` (module docstring).

    Parameters
    ----------
    C : ndarray (p, p)
        Symmetric matrix.
    k : int
        The cardinality.
    U : ndarray (p, p), optional
        A symmetric, zero-diagonal point of the l1 dual (:func:`repro.optimal.l1_dual.l1_dual_bound`);
        None: ``U = 0``, Dey, Mazumder & Wang's bound.
    r : int, default 3
        The dimension of the eigenspace (0: ``lambda_max(M) + rho (k - 1)``, the l1 dual's value).
    nonneg : bool, default False
        The bound for ``x >= 0``.
    tol : float, default 1e-4
        The relative tolerance of the search over the sphere (the bound holds at any tolerance).
    max_cells : int, default 20000
        Its budget of cells (each ``2^(r - 1)`` evaluations of the support function).

    Returns
    -------
    bound : float
        The certified bound.
    info : dict
        ``"lambda"``: the certified ``lambda_max(M - BB')``; ``"phi"``: the certified ``phi(B)``;
        ``"phi_found"``: the best ``h(Bu)^2`` at a point (``phi`` is at least it, up to rounding);
        ``"rho"``, ``"cells"``.

    Examples
    --------
    >>> import numpy as np
    >>> from repro.optimal.eigenspace import eigenspace_bound
    >>> C = np.diag([3.0, 2.0, 1.0])  # every k: the optimum is 3
    >>> b, info = eigenspace_bound(C, 2, r=2)  # above the optimum by at most tol = 1e-4 of it
    >>> bool(3.0 <= b <= 3.0 * (1 + 1e-4))
    True
    """
    C = 0.5 * (np.asarray(C, dtype=float) + np.asarray(C, dtype=float).T)
    p = C.shape[0]
    U = np.zeros_like(C) if U is None else 0.5 * (np.asarray(U, dtype=float) + np.asarray(U, dtype=float).T)
    U = U.copy()
    np.fill_diagonal(U, 0.0)
    rho = _rho_of(U, nonneg)
    M = C - U
    r = int(min(max(r, 0), p - 1))
    if r > 0:
        w, V = scipy.linalg.eigh(M, subset_by_index=(p - r - 1, p - 1), check_finite=False)
        B = V[:, 1:] * np.sqrt(np.maximum(w[1:] - w[0], 0.0))
    else:
        B = np.zeros((p, 0))
    BB = B @ B.T
    R = M - BB
    R = 0.5 * (R + R.T)
    mag = np.abs(C) + np.abs(U) + np.abs(B) @ np.abs(B).T
    form = (r + 3) * _EPS * float(np.linalg.norm(mag))
    top = scipy.linalg.eigh(R, eigvals_only=True, subset_by_index=(p - 1, p - 1), check_finite=False)
    top = float(top[0])
    lam = _up(top + form + (8.0 * p + 2.0) * _EPS * float(np.linalg.norm(R)))
    if r > 0:
        hmax, hfound, cells = _sphere_max(B, k, nonneg, tol, max_cells)
        phi = _up(hmax * hmax * (1.0 + 4.0 * _EPS))
    else:
        hfound, cells, phi = 0.0, 0, 0.0
    tail = _up(rho * (k - 1) * (1.0 + 2.0 * _EPS))
    total = lam + phi + tail
    bound = _up(total + 4.0 * _EPS * (abs(lam) + phi + tail))
    info = {"lambda": lam, "phi": phi, "phi_found": hfound * hfound, "rho": rho, "cells": cells}
    return bound, info
