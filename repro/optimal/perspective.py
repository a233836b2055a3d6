"""The perspective (Boolean) bound of the certified optimum: the l1 dual of :mod:`repro.optimal.l1_dual`
with the multipliers of Bertsimas, Cory-Wright & Pauphilet's (2022) perspective constraints added.

**The bound.** Let ``x`` be a unit vector with support ``S``, ``|S| <= k``. Take any symmetric ``V`` with
zero diagonal and ``|V_ij| <= rho`` (``V_ij <= rho``, ``rho >= 0``, when ``x >= 0``), any real ``p x p``
matrix ``W`` with zero diagonal (rows ``w_i``, not necessarily symmetric; ``W_s = (W + W') / 2``) and any
``a > 0``. Since ``x'Wx = x'W_s x``,

    ``x'Cx = x'(C - V - W_s)x + x'Vx + x'Wx``.

* ``x'Vx <= rho sum_{i != j} |x_i||x_j| <= rho (k - 1)`` (:mod:`repro.optimal.l1_dual`);
* ``x'Wx = sum_{i in S} x_i (w_i . x) <= sum_{i in S} |x_i| ||w_i||`` (Cauchy-Schwarz, ``||x|| = 1``)
  ``<= sum_{i in S} (a_i x_i^2 + ||w_i||^2 / (4 a_i))`` (``2 t s <= a t^2 + s^2 / a``)
  ``<= x' diag(a) x + topk(b)``, ``b_i = ||w_i||^2 / (4 a_i)``: at most ``k`` non-negative terms are at
  most the sum of the ``k`` largest.

So, with ``M = C - V - W_s + diag(a)``,

    ``x'Cx <= g(V, W, a) = lambda_max(M) + rho (k - 1) + topk_i(||w_i||^2 / (4 a_i))``

for every such ``(V, W, a)``. ``W = 0`` is the l1 bound (``a -> 0``). It is the Lagrangian dual of the
Boolean relaxation ``max <C, X>``, ``X`` PSD, ``tr X = 1``, ``sum_{i != j} |X_ij| <= k - 1``,
``sum_{j != i} X_ij^2 <= X_ii z_i`` (the perspective of ``x_i^2 sum_{j != i} x_j^2 <= x_i^2`` with
``z_i = 1`` on the support), ``0 <= z <= 1``, ``sum z <= k``: ``w_i`` and ``(a_i, b_i)`` are the
multipliers of the ``i``-th rotated second-order cone (its dual cone is ``||w_i||^2 <= 4 a_i b_i``),
``topk(b)`` the support function of ``{0 <= z <= 1, sum z <= k}``. For ``x`` supported in a set ``A``
(a node's allowed features) the same inequality holds with ``lambda_max(M_A)`` (interlacing) and the
same constant ``rho (k - 1) + topk(b)``: the nodes use it exactly as they use the l1 dual's ``C - U``.

**The minimization.** From the l1 dual's ``(U, rho)`` (``V = U``, ``W = 0``), ``V`` takes the l1 dual's
projected gradient step on Nesterov's smoothing ``mu log tr exp(M / mu)`` (gradient: the
softmax-weighted eigenprojector ``P``); each row ``w_i`` a gradient step of length at most ``2 a_i``
(``1 / L`` of ``b_i`` in ``w_i``) on ``-P_i + [i in top k] w_i / (2 a_i)``; and ``a_i`` the minimizer of
the linearized ``a_i P_ii + ||w_i||^2 / (4 a_i)``, ``||w_i|| / (2 sqrt(P_ii))`` (at least a floor). One
``eigh`` per iteration. Whatever the iterates, every value returned is ``g`` of one of them evaluated
in floating point and rounded upward, so it holds whether or not the minimization converged:

* forming ``M``: each entry is at most four floating-point operations on ``C_ij``, ``V_ij``, ``W_ij``,
  ``W_ji`` and ``a_i`` (the halving is exact), so ``|fl(M)_ij - M_ij| <= 5 u (|C_ij| + |V_ij| + |W_s|_ij
  + |a_i| [i = j])`` (``u`` the unit roundoff) and ``lambda_max(M) <= lambda_max(fl(M)) + ||E||_F``;
* ``eigh`` is backward stable, covered by ``8 p u ||fl(M)||_F`` as in
  :func:`repro.optimal.dnn.certified_lambda_max`;
* ``rho`` is the largest entry of the ``V`` used, exactly; each ``b_i`` (a sum of ``p`` squares and a
  division) and their top-``k`` sum are computed to a relative ``(p + k + 4) u``, covered by rounding
  upward by ``2 (p + k + 4) u``; the final sum is rounded upward.

Plain NumPy (no Numba): the cost is the ``eigh`` per iteration.

References
----------
Bertsimas, D., Cory-Wright, R. & Pauphilet, J. (2022). Solving large-scale sparse PCA to certifiable
(near) optimality. JMLR 23(13). d'Aspremont, A., El Ghaoui, L., Jordan, M. I. & Lanckriet, G. R. G.
(2007). A direct formulation for sparse PCA using semidefinite programming. SIAM Review 49(3).
"""

from __future__ import annotations

import time

import numpy as np

from .l1_dual import _project, _rho_of

__all__ = ["perspective_bound", "perspective_value"]

_EPS = np.finfo(np.float64).eps
_STEP = 4.0  # the step in units of mu, as the l1 dual's
_A_FLOOR = 1e-6  # the smallest a_i, relative to lambda_max: a row with w_i = 0 costs nothing


def _up(v: float) -> float:
    return float(np.nextafter(v, np.inf))


def perspective_value(
    C: np.ndarray, V: np.ndarray, W: np.ndarray, a: np.ndarray, k: int, nonneg: bool = False
) -> tuple[float, np.ndarray, float]:
    """``g(V, W, a)`` of the module docstring, rounded upward: ``(bound, M, add)`` with ``M = fl(C - V -
    W_s + diag(a))`` and ``add`` the constant such that ``lambda_max(M_A) + add`` bounds every support
    inside ``A`` (the forming of ``M``, ``rho (k - 1)`` and ``topk(b)``, each rounded upward).

    ``V`` symmetric with zero diagonal (its ``rho`` is its largest ``|V_ij|``, or ``V_ij`` and at least 0
    with ``nonneg``), ``W`` any real matrix with zero diagonal, ``a`` positive where a row of ``W`` is
    not zero (a zero row costs nothing whatever its ``a_i``).
    """
    p = C.shape[0]
    Ws = 0.5 * (W + W.T)
    M = C - V - Ws + np.diag(a)
    M = 0.5 * (M + M.T)  # exactly symmetric (eigh reads one triangle); the error term covers it
    mag = np.abs(C) + np.abs(V) + np.abs(Ws) + np.diag(np.abs(a))
    form = 6.0 * _EPS * float(np.linalg.norm(mag))
    rho = _rho_of(V, nonneg)
    r = np.einsum("ij,ij->i", W, W)
    with np.errstate(divide="ignore"):
        b = np.where(r > 0, r / (4.0 * np.where(r > 0, a, 1.0)), 0.0)
    if np.any((r > 0) & ~(a > 0)):
        b = np.where((r > 0) & ~(a > 0), np.inf, b)
    kk = min(k, p)
    top = float(np.sum(np.partition(b, p - kk)[p - kk :])) if p else 0.0
    top = _up(top * (1.0 + 2.0 * (p + k + 4) * _EPS))
    add = _up(form + rho * (k - 1) + top)
    add = _up(add * (1.0 + 4.0 * _EPS))
    lam = float(np.linalg.eigvalsh(M)[-1]) + (8.0 * p + 2.0) * _EPS * float(np.linalg.norm(M))
    return _up(lam + add + 4.0 * _EPS * (abs(lam) + add)), M, add


def perspective_bound(
    C: np.ndarray,
    k: int,
    U0: np.ndarray,
    *,
    nonneg: bool = False,
    iters: int = 200,
    mu: tuple[float, float] = (1e-2, 1e-3),
    time_limit: float | None = None,
) -> tuple[float, np.ndarray, float]:
    """A certified upper bound on ``max x'Cx``, ``||x|| = 1``, ``|x|_0 <= k`` (and ``x >= 0`` with
    ``nonneg``): the perspective bound ``g(V, W, a)`` at the best point found (module docstring), from the
    l1 dual's ``U0`` (:func:`repro.optimal.l1_dual.l1_dual_bound`).

    Parameters
    ----------
    C : ndarray (p, p)
        Symmetric matrix.
    k : int
        The cardinality.
    U0 : ndarray (p, p)
        The start: a symmetric, zero-diagonal ``U`` of the l1 dual (``V = U0``, ``W = 0``).
    nonneg : bool, default False
        The bound for ``x >= 0`` (only ``V_ij <= rho`` is required).
    iters : int, default 200
        Iterations (one ``eigh`` of a ``p x p`` matrix each).
    mu : (float, float), default (1e-2, 1e-3)
        The smoothing parameter's first and last value, relative to ``lambda_max(C - U0)``, decreased
        geometrically over the iterations.
    time_limit : float, optional
        Seconds, after which the best bound so far is returned.

    Returns
    -------
    bound : float
        The certified bound.
    M : ndarray (p, p)
        ``fl(C - V - W_s + diag(a))`` at the best point.
    add : float
        Its constant: ``lambda_max(M_A) + add`` bounds every support inside ``A``, rounding included.

    Examples
    --------
    >>> import numpy as np
    >>> from repro.optimal.l1_dual import l1_dual_bound
    >>> from repro.optimal.perspective import perspective_bound
    >>> C = np.array([[2.0, 1.0, 1.0], [1.0, 2.0, 0.0], [1.0, 0.0, 2.0]])
    >>> _, U, _ = l1_dual_bound(C, 2)
    >>> b, M, add = perspective_bound(C, 2, U)  # the optimum at k = 2 is 3
    >>> bool(3.0 <= b < 3.3)
    True
    """
    t0 = time.perf_counter()
    C = 0.5 * (np.asarray(C, dtype=float) + np.asarray(C, dtype=float).T)
    p = C.shape[0]
    scale = float(np.max(np.abs(np.diag(C)))) if p else 0.0
    scale = 2.0 ** np.round(np.log2(scale)) if scale > 0 else 1.0  # a power of 2: exact either way
    C = C / scale
    V = np.asarray(U0, dtype=float) / scale
    V = 0.5 * (V + V.T)
    np.fill_diagonal(V, 0.0)
    rho = _rho_of(V, nonneg)
    W = np.zeros((p, p))
    lam = abs(float(np.linalg.eigvalsh(C - V)[-1])) if p else 1.0
    floor = _A_FLOOR * max(lam, 1e-300)
    a = np.full(p, floor)
    best, bestM, bestadd = perspective_value(C, V, W, a, k, nonneg)
    if p < 2 or k < 2 or iters <= 0:
        return best * scale, bestM * scale, bestadd * scale
    mus = lam * np.geomspace(mu[0], mu[1], iters)
    kk = min(k, p)
    for it in range(iters):
        if time_limit is not None and time.perf_counter() - t0 >= time_limit:
            break
        m = float(mus[it])
        Ws = 0.5 * (W + W.T)
        w, Q = np.linalg.eigh(C - V - Ws + np.diag(a))
        e = np.exp((w - w[-1]) / m)
        P = (Q * (e / e.sum())) @ Q.T
        P = 0.5 * (P + P.T)
        G = P.copy()
        np.fill_diagonal(G, 0.0)
        step = m * _STEP
        V, rho = _project(V + step * G, rho - step * (k - 1), nonneg)
        r = np.einsum("ij,ij->i", W, W)
        b = r / (4.0 * a)
        T = np.zeros(p, bool)
        T[np.argpartition(-b, kk - 1)[:kk]] = True
        c = np.where(T, 1.0 / (4.0 * a), 0.0)
        gW = -G + 2.0 * c[:, None] * W
        W = W - np.minimum(step, 2.0 * a)[:, None] * gW
        np.fill_diagonal(W, 0.0)
        r = np.einsum("ij,ij->i", W, W)
        a = np.maximum(np.sqrt(r / (4.0 * np.maximum(np.diag(P), 1e-12))), floor)
        f, M, add = perspective_value(C, V, W, a, k, nonneg)
        if f < best:
            best, bestM, bestadd = f, M, add
    return best * scale, bestM * scale, bestadd * scale
