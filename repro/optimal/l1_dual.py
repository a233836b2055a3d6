"""The l1 (DSPCA-dual) bound of the certified optimum with its ``U`` optimized, not clipped.

For unit ``x`` with at most ``k`` non-zeros and any symmetric ``U`` with zero diagonal,
``x'Cx = x'(C - U)x + x'Ux``. The first term is at most ``lambda_max(C - U)``. With
``rho = max_{i != j} |U_ij|``, ``x'Ux <= rho sum_{i != j} |x_i||x_j| = rho (||x||_1^2 - 1) <= rho (k - 1)``
(Cauchy-Schwarz on the support: ``||x||_1^2 <= k``). So

    ``x'Cx <= f(U) = lambda_max(C - U) + (k - 1) max_{i != j} |U_ij|``  for every such ``U``;

with ``x >= 0`` every ``x_i x_j`` is non-negative, so only the positive parts count:
``rho = max(0, max_{i != j} U_ij)``, and ``U`` may be as negative as it likes (``rho = 0`` is the doubly
non-negative bound ``lambda_max(C + N)``, ``N >= 0``). The kernels' :func:`repro.optimal._kernels.l1_bound`
takes ``U = clip(C, -rho, rho)`` and searches ``rho`` alone; the minimum of ``f`` over every ``U`` is the
dual of d'Aspremont et al.'s (2007) semidefinite relaxation ``max <C, X>``, ``tr X = 1``,
``sum_{i != j} |X_ij| <= k - 1``, ``X`` PSD, which the clipped ``U`` only approaches.

:func:`l1_dual_bound` minimizes ``f`` over ``(U, rho)`` in the cone ``|U_ij| <= rho`` (``U_ij <= rho``
with ``x >= 0``) by accelerated projected gradient on Nesterov's smoothing of the largest eigenvalue,
``mu log tr exp((C - U) / mu)`` (gradient in ``U``: minus the softmax-weighted eigenprojector; the
projection onto the cone is a clip at the ``rho`` found by one sort), as in d'Aspremont et al.'s
first-order method, from the clipped ``U`` at the best ``rho`` of a short search. ``mu`` falls
geometrically over the iterations the run has (under a time limit, those its pace affords), and the step,
4 to 16 times ``mu``, is the longer the fewer they are (:func:`_step`). It needs one ``eigh`` per
iteration. Whatever the iterates, the bound is ``f`` of one of them evaluated in floating point and
rounded upward, so it holds whether or not the minimization converged:

* ``fl(C - U) = C - U + E`` with ``|E_ij| <= u |C_ij - U_ij|``, so ``lambda_max(C - U) <=
  lambda_max(fl(C - U)) + ||E||_F``;
* ``eigh`` is backward stable: the computed largest eigenvalue is exact for a matrix within
  ``c p u ||M||_F`` of ``M`` (``u`` the unit roundoff), covered by ``8 p u ||M||_F``
  (:func:`repro.optimal.dnn.certified_lambda_max`'s allowance);
* ``rho`` is the largest entry of the ``U`` used, exactly (a clip and a maximum round nothing), and the
  final sum is rounded upward.

Plain NumPy (no Numba): the cost is the ``eigh`` per iteration.
"""

from __future__ import annotations

import time

import numpy as np

__all__ = ["clipped_l1_bound", "l1_dual_bound"]

_EPS = np.finfo(np.float64).eps
_STEP = 4.0  # the step in units of mu (1 / L) from _STEP_AT iterations on; every iterate is checked
_STEP_AT = 300
_START_SHARE = 0.25  # of a time limit, at most, for the golden-section start: the iterations get the rest
_STEP_MAX = 16.0


def _step(n: int) -> float:
    """The gradient step in units of ``mu`` for a run of ``n`` iterations: 4 from 300 iterations (it was
    measured faster than 1, and than 8 to 32 at p = 200 and 500), ``4 sqrt(300 / n)`` below, at most 16
    (with the schedule of ``mu`` compressed into fewer iterations, the longer steps were measured faster:
    at 100 iterations on p = 500 and at 30 on p = 200)."""
    return float(min(_STEP * np.sqrt(max(_STEP_AT / max(n, 1), 1.0)), _STEP_MAX))


def _rho_of(U: np.ndarray, nonneg: bool) -> float:
    """The ``rho`` that ``U`` (zero diagonal) needs: its largest off-diagonal ``|U_ij|`` (``U_ij``, at least
    0, when ``nonneg``)."""
    if U.shape[0] < 2:
        return 0.0
    return max(float(U.max()), 0.0) if nonneg else float(np.abs(U).max())


def _certified(w_top: float, M: np.ndarray, rho: float, k: int) -> float:
    """``f`` rounded upward from the computed top eigenvalue ``w_top`` of ``M = fl(C - U)`` (module
    docstring: the forming of ``M``, the backward error of ``eigh``, the last sum)."""
    p = M.shape[0]
    nrm = float(np.linalg.norm(M))
    lam = w_top + (8.0 * p + 2.0) * _EPS * nrm
    val = lam + rho * (k - 1)
    return float(np.nextafter(val + 4.0 * _EPS * (abs(lam) + rho * (k - 1)), np.inf))


def _clipped(C: np.ndarray, rho: float, nonneg: bool) -> np.ndarray:
    """``U = clip(C, -rho, rho)`` off the diagonal (``min(C, rho)`` when ``nonneg``), zero on it."""
    U = np.minimum(C, rho) if nonneg else np.clip(C, -rho, rho)
    np.fill_diagonal(U, 0.0)
    return U


def _project(A: np.ndarray, s: float, nonneg: bool) -> tuple[np.ndarray, float]:
    """The Euclidean projection of ``(A, s)`` (``A`` symmetric, zero diagonal; the metric
    ``||U||_F^2 + rho^2``) onto ``{|U_ij| <= rho}`` (``{U_ij <= rho, rho >= 0}`` when ``nonneg``): ``rho``
    solves ``rho - s = sum_{i != j} (|A_ij| - rho)_+`` (clipped at 0), and ``U`` is ``A`` clipped at it."""
    p = A.shape[0]
    off = ~np.eye(p, dtype=bool)
    a = A[off] if nonneg else np.abs(A[off])
    a = a[a > max(s, 0.0)]  # only entries above the root's lower bound max(s, 0) can be clipped
    if a.size:
        a = -np.sort(-a)
        cs = np.cumsum(a)
        j = np.arange(1, a.size + 1)
        t = (s + cs) / (1.0 + j)  # the root if exactly the j largest entries exceed it
        nxt = np.append(a[1:], -np.inf)
        ok = (a > t) & (t >= nxt)
        rho = float(t[np.argmax(ok)]) if ok.any() else float(s)
    else:
        rho = float(s)
    rho = max(rho, 0.0)
    U = np.minimum(A, rho) if nonneg else np.clip(A, -rho, rho)
    np.fill_diagonal(U, 0.0)
    return U, rho


def clipped_l1_bound(
    C: np.ndarray, k: int, *, nonneg: bool = False, evals: int = 24, deadline: float = np.inf
) -> tuple[float, float]:
    """The l1 bound with the clipped ``U`` at the best ``rho`` of a golden-section search on
    ``[0, max |C_ij|]`` (``evals`` eigenvalue computations, fewer past ``deadline`` on
    ``time.perf_counter``; the function of ``rho`` need not be convex, so the search may stop at a local
    minimum). Returns ``(bound, rho)``, the bound certified as in the module docstring."""
    C = np.asarray(C, dtype=float)
    p = C.shape[0]
    off = C[~np.eye(p, dtype=bool)]
    hi = max(float(off.max()) if nonneg else float(np.abs(off).max()), 0.0) if p > 1 else 0.0

    def f(r):
        M = C - _clipped(C, r, nonneg)
        return _certified(float(np.linalg.eigvalsh(M)[-1]), M, r, k)

    if p < 2 or k < 2:  # rho costs nothing at k = 1: U = C off the diagonal leaves max C_jj
        return f(hi), hi

    g = (np.sqrt(5.0) - 1.0) / 2.0
    lo_, hi_ = 0.0, hi
    best = (f(0.0), 0.0)
    x1, x2 = hi_ - g * (hi_ - lo_), lo_ + g * (hi_ - lo_)
    f1, f2 = f(x1), f(x2)
    for v, r in ((f1, x1), (f2, x2)):
        best = min(best, (v, r))
    for _ in range(max(evals - 3, 0)):
        if time.perf_counter() >= deadline:
            break
        if f1 <= f2:
            hi_, x2, f2 = x2, x1, f1
            x1 = hi_ - g * (hi_ - lo_)
            f1 = f(x1)
            best = min(best, (f1, x1))
        else:
            lo_, x1, f1 = x1, x2, f2
            x2 = lo_ + g * (hi_ - lo_)
            f2 = f(x2)
            best = min(best, (f2, x2))
    return best


def l1_dual_bound(
    C: np.ndarray,
    k: int,
    *,
    nonneg: bool = False,
    iters: int = 200,
    rho0: float | None = None,
    U0: np.ndarray | None = None,
    mu: tuple[float, float] = (1e-1, 1e-3),
    time_limit: float | None = None,
    certify: bool = True,
    stats: dict | None = None,
) -> tuple[float, np.ndarray, float]:
    """A certified upper bound on ``max x'Cx``, ``||x|| = 1``, ``|x|_0 <= k`` (and ``x >= 0`` with
    ``nonneg``): ``lambda_max(C - U) + rho (k - 1)`` at the best ``U`` found (module docstring).

    Parameters
    ----------
    C : ndarray (p, p)
        Symmetric matrix.
    k : int
        The cardinality.
    nonneg : bool, default False
        The bound for ``x >= 0`` (only ``U_ij <= rho`` is required).
    iters : int, default 200
        Iterations (one ``eigh`` of a ``p x p`` matrix each).
    rho0, U0 : optional
        The start: ``U0`` (clipped into its cone) or, by default, the clipped ``U`` at ``rho0``, by default
        the best ``rho`` of :func:`clipped_l1_bound` (within a quarter of ``time_limit``). The start is an
        iterate: the bound is at most its.
    mu : (float, float), default (1e-1, 1e-3)
        The smoothing parameter's first and last value, relative to ``lambda_max(C)``, decreased
        geometrically over the iterations.
    time_limit : float, optional
        Seconds, after which the best bound so far is returned. After the first two iterations, the
        schedule of ``mu`` (and the step) is laid out again over the iterations the time left affords at
        their pace, so that a time-limited run still ends at the last ``mu`` instead of stopping early in
        the schedule.
    certify : bool, default True
        Round ``lambda_max`` upward (False: the computed eigenvalue as it is, for tests of the rounding
        only; then the result is not certified).
    stats : dict, optional
        Receives ``"eigh"``: the eigendecompositions of ``p x p`` matrices (the start's included, the
        golden-section search's eigenvalues not), ``"iters"``: the iterations run, and ``"mu_last"``: the
        last smoothing parameter used, relative to ``lambda_max(C)`` (``mu[1]`` when the schedule ran out).

    Returns
    -------
    bound : float
        The certified bound.
    U : ndarray (p, p)
        The symmetric, zero-diagonal ``U`` that gave it.
    rho : float
        Its ``rho`` (the largest off-diagonal ``|U_ij|``, or ``U_ij`` with ``nonneg``).

    Examples
    --------
    >>> import numpy as np
    >>> from repro.optimal.l1_dual import l1_dual_bound
    >>> C = np.array([[2.0, 1.0, 1.0], [1.0, 2.0, 0.0], [1.0, 0.0, 2.0]])
    >>> b, U, rho = l1_dual_bound(C, 1)  # k = 1: the largest diagonal entry, 2
    >>> bool(2.0 <= b < 2.0 + 1e-3)
    True
    """
    t0 = time.perf_counter()
    C = np.asarray(C, dtype=float)
    C = 0.5 * (C + C.T)
    p = C.shape[0]
    scale = float(np.max(np.abs(np.diag(C)))) if p else 0.0
    scale = 2.0 ** np.round(np.log2(scale)) if scale > 0 else 1.0  # a power of 2: exact either way
    C = C / scale

    counts = {"eigh": 0, "iters": 0} if stats is None else stats
    counts.update(eigh=0, iters=0)

    def value(M, rho):
        w, V = np.linalg.eigh(M)
        counts["eigh"] += 1
        if certify:
            return _certified(float(w[-1]), M, rho, k), w, V
        return float(w[-1]) + rho * (k - 1), w, V

    if U0 is not None:
        U = np.asarray(U0, dtype=float) / scale
        U = 0.5 * (U + U.T)
        np.fill_diagonal(U, 0.0)
        rho = _rho_of(U, nonneg)
    else:
        if rho0 is None:
            end = np.inf if time_limit is None else t0 + _START_SHARE * time_limit
            rho = clipped_l1_bound(C, k, nonneg=nonneg, deadline=end)[1]
        else:
            rho = max(float(rho0) / scale, 0.0)
        U = _clipped(C, rho, nonneg)
    M = C - U
    best, w, V = value(M, rho)
    bestU, bestrho = U.copy(), rho
    if p < 2 or k < 2 or iters <= 0:
        return best * scale, bestU * scale, bestrho * scale
    lam_ref = max(abs(float(w[-1])), 1e-300)
    mus = lam_ref * np.geomspace(mu[0], mu[1], iters)
    step_mu = _step(iters)
    x_prev, t_prev = U.copy(), rho
    x, t = U, rho
    theta = 1.0
    f_last = np.inf
    t_loop = time.perf_counter()
    for it in range(iters):
        now = time.perf_counter()
        if time_limit is not None and now - t0 >= time_limit:
            break
        if time_limit is not None and it == 2:  # the pace is known: the rest of the schedule in the time left
            n_left = int((time_limit - (now - t0)) / ((now - t_loop) / 2.0))
            if n_left < iters - it:
                n_left = max(n_left, 1)
                mus = np.concatenate([mus[:it], np.geomspace(mus[it], mus[-1], n_left)])
                step_mu = _step(it + n_left)
        if it >= mus.size:
            break
        counts["iters"] += 1
        m = float(mus[it])
        counts["mu_last"] = m / lam_ref
        # the extrapolated point (FISTA); any U is a valid dual point with its own rho (module docstring)
        theta_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * theta * theta))
        beta = (theta - 1.0) / theta_new
        Y = x + beta * (x - x_prev)
        s = t + beta * (t - t_prev)
        M = C - Y
        ry = _rho_of(Y, nonneg)
        f, w, V = value(M, ry)
        if f < best:
            best, bestU, bestrho = f, Y.copy(), ry
        e = np.exp((w - w[-1]) / m)
        smooth = float(w[-1]) + m * np.log(e.sum()) + s * (k - 1)
        G = (V * (e / e.sum())) @ V.T  # the gradient of the smoothed lambda_max(C - Y) in C - Y
        G = 0.5 * (G + G.T)  # exactly symmetric, and so every iterate (eigh reads one triangle)
        np.fill_diagonal(G, 0.0)
        step = m * step_mu  # 1 / L: the smoothed lambda_max has a 1 / mu Lipschitz gradient (Frobenius norm)
        x_prev, t_prev = x, t
        x, t = _project(Y + step * G, s - step * (k - 1), nonneg)
        if smooth > f_last:  # adaptive restart (O'Donoghue & Candes): the momentum overshot
            theta = 1.0
            x_prev, t_prev = x, t
        else:
            theta = theta_new
        f_last = smooth
    M = C - x
    r = _rho_of(x, nonneg)
    f, _w, _V = value(M, r)
    if f < best:
        best, bestU, bestrho = f, x.copy(), r
    return best * scale, bestU * scale, bestrho * scale
