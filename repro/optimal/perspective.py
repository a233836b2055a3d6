"""The perspective (Boolean) bound of the certified optimum: the l1 dual of :mod:`repro.optimal.l1_dual`
with the multipliers of Bertsimas, Cory-Wright & Pauphilet's (2022) perspective constraints added.

**The bound.** Let ``x`` be a unit vector with support ``S``, ``|S| <= k``. Take any symmetric ``V`` with
zero diagonal and ``|V_ij| <= rho`` (``V_ij <= rho``, ``rho >= 0``, when ``x >= 0``), any real ``p x p``
matrix ``W`` (rows ``w_i``, not necessarily symmetric; ``W_s = (W + W') / 2``) and any
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
``sum_j X_ij^2 <= X_ii z_i`` (the perspective of ``x_i^2 sum_j x_j^2 <= x_i^2`` with ``z_i = 1``
on the support), ``0 <= z <= 1``, ``sum z <= k``: ``w_i`` and ``(a_i, b_i)`` are the
multipliers of the ``i``-th rotated second-order cone (its dual cone is ``||w_i||^2 <= 4 a_i b_i``),
``topk(b)`` the support function of ``{0 <= z <= 1, sum z <= k}``. For ``x`` supported in a set ``A``
(a node's allowed features) the same inequality holds with ``lambda_max(M_A)`` (interlacing) and the
same constant ``rho (k - 1) + topk(b)``: the nodes use it exactly as they use the l1 dual's ``C - U``.

**The minimization.** ``g`` is convex and nonsmooth (a largest eigenvalue, a largest entry, a sum of
the ``k`` largest). Each of the three is replaced by its entropic smoothing, an upper bound that tends
to it as ``mu -> 0``: ``mu log tr exp(M / mu)`` (gradient in ``M``: the softmax-weighted
eigenprojector ``P``, the relaxation's ``X``), ``rho`` by ``nu log sum exp(+-V_ij / nu)`` over the
entries above the diagonal (``V_ij`` and 0 with ``x >= 0``), ``nu = mu / (k - 1)``, and ``topk(b)`` by
``min_t k t + mu sum_i log(1 + exp((b_i - t) / mu))`` (``t`` one more variable). The smooth function of
``(V, W, log a, t)`` is minimized by L-BFGS (:func:`_lbfgs`) from the l1 dual's ``U`` with ``W_i = 2
a_i P_i`` (the multipliers that the rank-one ``X = P`` of the l1 relaxation makes tight), ``mu``
decreasing geometrically over stages, each warm-started from the last. One ``eigh`` per function
evaluation. ``W`` keeps its diagonal: ``x'Wx <= sum_i |x_i| ||w_i||`` holds for every row, the
multiplier of the whole row ``sum_j X_ij^2 <= X_ii z_i`` of Bertsimas et al.'s relaxation. Whatever the
iterates, every value returned is ``g`` of one of the evaluated points in floating point, rounded
upward, so it holds whether or not the minimization converged:

* forming ``M``: each entry is at most four floating-point operations on ``C_ij``, ``V_ij``, ``W_ij``,
  ``W_ji`` and ``a_i`` (the halving is exact), so ``|fl(M)_ij - M_ij| <= 5 u (|C_ij| + |V_ij| + |W_s|_ij
  + |a_i| [i = j])`` (``u`` the unit roundoff) and ``lambda_max(M) <= lambda_max(fl(M)) + ||E||_F``;
* ``eigh`` is backward stable, covered by ``8 p u ||fl(M)||_F`` as in
  :func:`repro.optimal.dnn.certified_lambda_max`;
* ``rho`` is the largest entry of the ``V`` used, exactly; each ``b_i`` (a sum of ``p`` squares and a
  division) and their top-``k`` sum are computed to a relative ``(p + k + 4) u``, covered by rounding
  upward by ``2 (p + k + 4) u``; the final sum is rounded upward.

Plain NumPy and SciPy (no Numba): the cost is the ``eigh`` per evaluation.

References
----------
Bertsimas, D., Cory-Wright, R. & Pauphilet, J. (2022). Solving large-scale sparse PCA to certifiable
(near) optimality. JMLR 23(13). d'Aspremont, A., El Ghaoui, L., Jordan, M. I. & Lanckriet, G. R. G.
(2007). A direct formulation for sparse PCA using semidefinite programming. SIAM Review 49(3).
"""

from __future__ import annotations

import time

import numpy as np

from .l1_dual import _rho_of

__all__ = ["perspective_bound", "perspective_value"]

_EPS = np.finfo(np.float64).eps
_A_START = 1e-2  # the start's a_i, relative to lambda_max(C - U0)
_STAGE_FACTOR = 10.0**0.5  # mu falls by this factor from one stage to the next
_MEMORY = 10  # the L-BFGS pairs
_PACE_EIGH = 4.0  # an evaluation's cost in eigh of the start, until measured (3.1-3.3 at p = 274)
_A_FLOOR = 1e-8  # the smallest a_i, relative to lambda_max(C - U0)
_ARMIJO = 1e-4  # the sufficient decrease of the backtracking line search


def _up(v: float) -> float:
    return float(np.nextafter(v, np.inf))


def _form(C: np.ndarray, V: np.ndarray, W: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(fl(M), W_s)``: ``M = C - V - W_s + diag(a)``, made exactly symmetric (``eigh`` reads one
    triangle; the error term of :func:`_certify` covers it)."""
    Ws = 0.5 * (W + W.T)
    M = C - V - Ws + np.diag(a)
    return 0.5 * (M + M.T), Ws


def _certify(
    w_top: float,
    M: np.ndarray,
    C: np.ndarray,
    V: np.ndarray,
    Ws: np.ndarray,
    W: np.ndarray,
    a: np.ndarray,
    k: int,
    nonneg: bool,
) -> tuple[float, float]:
    """``(bound, add)`` of :func:`perspective_value` from the computed top eigenvalue ``w_top`` of
    ``M = fl(C - V - W_s + diag(a))`` (module docstring: the forming, ``eigh``'s backward error,
    ``rho (k - 1)``, ``topk(b)`` and the sums, each rounded upward)."""
    p = C.shape[0]
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
    lam = w_top + (8.0 * p + 2.0) * _EPS * float(np.linalg.norm(M))
    return _up(lam + add + 4.0 * _EPS * (abs(lam) + add)), add


def perspective_value(
    C: np.ndarray, V: np.ndarray, W: np.ndarray, a: np.ndarray, k: int, nonneg: bool = False
) -> tuple[float, np.ndarray, float]:
    """``g(V, W, a)`` of the module docstring, rounded upward: ``(bound, M, add)`` with ``M = fl(C - V -
    W_s + diag(a))`` and ``add`` the constant such that ``lambda_max(M_A) + add`` bounds every support
    inside ``A`` (the forming of ``M``, ``rho (k - 1)`` and ``topk(b)``, each rounded upward).

    ``V`` symmetric with zero diagonal (its ``rho`` is its largest ``|V_ij|``, or ``V_ij`` and at least 0
    with ``nonneg``), ``W`` any real matrix, ``a`` positive where a row of ``W`` is not zero (a zero row
    costs nothing whatever its ``a_i``).
    """
    M, Ws = _form(C, V, W, a)
    w_top = float(np.linalg.eigvalsh(M)[-1]) if C.shape[0] else 0.0
    bound, add = _certify(w_top, M, C, V, Ws, W, a, k, nonneg)
    return bound, M, add


class _Stop(Exception):
    """Raised inside the objective when the time limit has passed."""


def _smoothed(C, k, nonneg, iu, best, clock):
    """The smoothed ``g`` of the module docstring as a function of the packed ``z = (V above the
    diagonal, W, a, t)`` and ``mu``, returning ``(value, gradient)``; every evaluated point is certified
    on the way and the best kept in ``best`` (a dict: ``bound``, ``M``, ``add``, ``evals``)."""
    p = C.shape[0]
    nv = iu[0].size

    def unpack(z):
        V = np.zeros((p, p))
        V[iu] = z[:nv]
        V = V + V.T
        W = z[nv : nv + p * p].reshape(p, p)
        return V, W, z[nv + p * p : nv + p * p + p], float(z[-1])

    def f(z, mu):
        if clock():
            raise _Stop
        V, W, a, t = unpack(z)
        M, Ws = _form(C, V, W, a)
        w, Q = np.linalg.eigh(M)
        best["evals"] += 1
        bound, add = _certify(float(w[-1]), M, C, V, Ws, W, a, k, nonneg)
        if bound < best["bound"]:
            best.update(bound=bound, M=M, add=add)
        # lambda_max: mu log tr exp(M / mu), gradient P (the eigenvectors of non-negligible weight only)
        e = np.exp((w - w[-1]) / mu)
        keep = e > 1e-18
        e = e[keep] / e[keep].sum()
        Qk = Q[:, keep]
        P = (Qk * e) @ Qk.T
        value = float(w[-1]) + mu * float(np.log(np.sum(np.exp((w - w[-1]) / mu))))
        # rho: nu log sum exp over +-V_ij (V_ij and 0 with x >= 0), nu = mu / (k - 1)
        nu = mu / max(k - 1, 1)
        v = z[:nv]
        ent = np.concatenate([v, [0.0]]) if nonneg else np.concatenate([v, -v])
        top = float(ent.max())
        ee = np.exp((ent - top) / nu)
        S = float(ee.sum())
        value += (k - 1) * (top + nu * np.log(S))
        pi = ee / S
        g_rho = pi[:nv] if nonneg else pi[:nv] - pi[nv:]
        # topk(b): k t + mu sum log(1 + exp((b_i - t) / mu))
        r = np.einsum("ij,ij->i", W, W)
        b = r / (4.0 * a)
        s = (b - t) / mu
        value += k * t + mu * float(np.sum(np.logaddexp(0.0, s)))
        sig = 0.5 * (1.0 + np.tanh(0.5 * s))
        gV = -2.0 * P[iu] + (k - 1) * g_rho
        gW = -P + (sig / (2.0 * a))[:, None] * W
        ga = np.diag(P) - sig * r / (4.0 * a * a)
        return value, np.concatenate([gV, gW.ravel(), ga, [k - float(sig.sum())]])

    return f


def _lbfgs(f, z: np.ndarray, n: int, lo: np.ndarray) -> np.ndarray:
    """At most ``n`` evaluations of L-BFGS (Nocedal & Wright, Algorithm 7.4: the two-loop recursion,
    ``_MEMORY`` pairs, a pair kept only where its curvature ``s'y`` is positive) with an Armijo
    backtracking line search from the unit step (the first direction scaled to the length of ``z``'s
    scale) along the path projected onto ``z >= lo`` (``lo`` may be ``-inf``), the variables at their
    bound with the gradient pointing out of it held fixed; returns the lowest point evaluated."""
    fz, g = f(z)
    used = 1
    S: list[np.ndarray] = []
    Y: list[np.ndarray] = []
    while used < n:
        fixed = (z <= lo) & (g > 0.0)
        q = np.where(fixed, 0.0, g)
        alpha = []
        for s_, y_ in zip(reversed(S), reversed(Y), strict=True):
            al = float(s_ @ q) / float(y_ @ s_)
            alpha.append(al)
            q -= al * y_
        if S:
            q *= float(S[-1] @ Y[-1]) / float(Y[-1] @ Y[-1])
        else:
            q *= 1e-3 * max(float(np.abs(z).max()), 1.0) / max(float(np.abs(q).max()), 1e-300)
        for s_, y_, al in zip(S, Y, reversed(alpha), strict=True):
            q += (al - float(y_ @ q) / float(y_ @ s_)) * s_
        d = np.where(fixed, 0.0, -q)
        slope = float(g @ d)
        if not slope < 0.0:  # not a descent direction: start the memory again (none from the gradient:
            if not S:  # a stationary point, nothing left to do)
                return z
            S, Y = [], []
            continue
        step = 1.0
        while used < n:
            zn = np.maximum(z + step * d, lo)
            fn, gn = f(zn)
            used += 1
            if fn <= fz + _ARMIJO * float(g @ (zn - z)):
                break
            step *= 0.5
        else:
            return z if fz <= fn else zn
        s_, y_ = zn - z, gn - g
        if float(s_ @ y_) > 1e-12 * float(np.sqrt((s_ @ s_) * (y_ @ y_))):
            S.append(s_)
            Y.append(y_)
            if len(S) > _MEMORY:
                S.pop(0)
                Y.pop(0)
        z, fz, g = zn, fn, gn
    return z


def perspective_bound(
    C: np.ndarray,
    k: int,
    U0: np.ndarray,
    *,
    nonneg: bool = False,
    iters: int = 1200,
    mu: tuple[float, float] = (1e-2, 1e-4),
    time_limit: float | None = None,
    stats: dict | None = None,
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
        The start: a symmetric, zero-diagonal ``U`` of the l1 dual (``V = U0``); its own l1 point
        (``W = 0``) is evaluated first, so the bound is at most the l1 dual's at ``U0``.
    nonneg : bool, default False
        The bound for ``x >= 0`` (only ``V_ij <= rho`` is required).
    iters : int, default 1200
        Function evaluations of the minimization (one ``eigh`` of a ``p x p`` matrix each), shared
        equally by the stages of ``mu``.
    mu : (float, float), default (1e-2, 1e-4)
        The smoothing parameter's first and last stage, relative to ``lambda_max(C - U0)``; the stages
        fall by ``sqrt(10)`` from one to the next.
    time_limit : float, optional
        Seconds, after which the best bound so far is returned. Each stage's share of the evaluations
        is laid out again, when it starts, over those the time left affords at the pace so far, so
        that a time-limited run still reaches the last ``mu``.
    stats : dict, optional
        Receives ``"eigh"``: the eigendecompositions of ``p x p`` matrices, and ``"stages"``: the
        stages run.

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
    >>> b, M, add = perspective_bound(C, 2, U, iters=100)  # the optimum at k = 2 is 3
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
    counts = {} if stats is None else stats
    counts.update(eigh=1, stages=0)
    Z, z0 = np.zeros((p, p)), np.zeros(p)
    M0, Ws0 = _form(C, V, Z, z0)  # the l1 point: W = 0
    t_eig = time.perf_counter()
    w, Q = np.linalg.eigh(M0) if p else (np.zeros(1), np.zeros((0, 1)))
    t_eig = time.perf_counter() - t_eig
    b0, add0 = _certify(float(w[-1]), M0, C, V, Ws0, Z, z0, k, nonneg)
    best = {"bound": b0, "M": M0, "add": add0, "evals": 1}
    lam = max(abs(float(w[-1])), 1e-300)
    if p < 2 or k < 2 or iters <= 0:
        return best["bound"] * scale, best["M"] * scale, best["add"] * scale
    a = np.full(p, _A_START * lam)
    W = 2.0 * a[:, None] * np.outer(Q[:, -1], Q[:, -1])  # W_i = 2 a_i P_i at the l1 point's X = P
    r = np.einsum("ij,ij->i", W, W) / (4.0 * a)
    iu = np.triu_indices(p, 1)
    z = np.concatenate([V[iu], W.ravel(), a, [float(np.sort(r)[p - min(k, p)])]])
    lo = np.full(z.size, -np.inf)
    lo[iu[0].size + p * p : -1] = _A_FLOOR * lam
    n_st = max(int(np.round(np.log(mu[0] / mu[1]) / np.log(_STAGE_FACTOR))) + 1, 1)
    mus = lam * np.geomspace(mu[0], mu[1], n_st)

    def clock() -> bool:
        return time_limit is not None and time.perf_counter() - t0 >= time_limit

    f = _smoothed(C, k, nonneg, iu, best, clock)
    left = int(iters)
    t_run = time.perf_counter()
    for st, m in enumerate(mus):
        n = left // (n_st - st)
        if time_limit is not None:  # the pace so far (before any: the start's eigh) lays out the time left
            done = best["evals"] - 1
            pace = (time.perf_counter() - t_run) / done if done else _PACE_EIGH * t_eig
            n = min(n, int((time_limit - (time.perf_counter() - t0)) / pace / (n_st - st)))
        if n < 1:
            continue
        before = best["evals"]
        counts["stages"] += 1
        try:
            z = _lbfgs(lambda x, m=float(m): f(x, m), z, n, lo)
        except _Stop:
            break
        finally:
            left -= best["evals"] - before
    counts["eigh"] = best["evals"]
    return best["bound"] * scale, best["M"] * scale, best["add"] * scale
