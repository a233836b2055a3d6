"""The exact spannogram (Asteris, Papailiopoulos & Dimakis 2014): the rank-1 solver of Sec. 3.1 (Prop. 3.1),
the solver of Sec. 5 for a quadratic over half-spaces, Algorithms 1-2 on ``A_d`` (rank 2 by the kinetic
sweep), and the a-priori factor of Theorem 1 (Eq. 4)."""

from __future__ import annotations

import itertools
import math

import numpy as np
from sklearn.utils._param_validation import validate_params

from .._base import NONNEG_REAL, POSITIVE_INT
from .._threads import blas_limited
from .._validation import (
    check_bool,
    check_int,
    check_scale,
    check_vector,
    unscale,
)
from ..linalg import Covariance
from ._common import _MAX_EXACT_CANDIDATES, _check_rank, _low_rank, _scaled_cov
from ._kernels import rank1_solve, sweep2

__all__ = ["max_quadratic_halfspaces", "rank1_solver", "rank2_sweep", "rho_d", "spannogram_exact"]


# --------------------------------------------------------------------------- rank 1 (Sec. 3.1)
@validate_params(
    {"v": ["array-like"], "cardinality": [POSITIVE_INT], "nonneg": ["boolean"]},
    prefer_skip_nested_validation=True,
)
def rank1_solver(v, cardinality, *, nonneg: bool = True) -> tuple[np.ndarray, float]:
    """The non-negative ``k``-sparse principal component of the rank-1 matrix ``v v'`` (Prop. 3.1).

    Wraps :func:`repro.spannogram._kernels.rank1_solve`: the ``k`` largest positive entries of ``v`` or of
    ``-v``, whichever has the larger ``||v_I||^2`` (Eq. 9), found by selection in O(n). Ties at the ``k``-th
    value are broken by index; every choice gives the same value. With ``nonneg=False`` the support is the
    ``k`` largest ``|v_i|`` (the signed rank-1 problem).

    Parameters
    ----------
    v : array_like, shape (n,)
        The vector of the rank-1 matrix ``v v'``.
    cardinality : int, 1..n
        ``k``, the largest number of non-zeros.
    nonneg : bool, default True
        Non-negative (Prop. 3.1) or signed support selection.

    Returns
    -------
    x : ndarray, shape (n,)
        Unit norm, at most ``k`` non-zeros (fewer when ``v`` has fewer positive entries on its better side),
        ``x >= 0`` if ``nonneg``. ``v = 0`` is refused (every unit vector then gives 0).
    value : float
        ``(v'x)^2 = ||v_I||^2``.

    See Also
    --------
    spannogram_exact, spannogram_path

    References
    ----------
    Asteris, M., Papailiopoulos, D. & Dimakis, A. G. (2014). Nonnegative sparse PCA with provable
    guarantees. ICML, Section 3.1, Proposition 3.1 and Eq. 9.

    Examples
    --------
    >>> from repro import rank1_solver
    >>> x, value = rank1_solver([3.0, -1.0, 2.0, -4.0], 2)  # -v's side: 4^2 + 1^2 > 3^2 + 2^2
    >>> x.round(6).tolist(), round(value, 12)
    ([0.0, 0.242536, 0.0, 0.970143], 17.0)
    >>> x, value = rank1_solver([3.0, -1.0, 2.0, -4.0], 2, nonneg=False)
    >>> x.round(6).tolist(), round(value, 12)
    ([0.6, 0.0, 0.0, -0.8], 25.0)
    """
    v = check_vector(v, "v")
    k = check_int(cardinality, "cardinality", low=1, high=v.size)
    if not v.any():
        raise ValueError(
            "v is all zeros: every unit vector gives the value 0, so there is no component to find."
        )
    s = check_scale(v[None, :], "v")  # ||v_I||^2 of entries beyond 1e154 overflows, below 1e-154 underflows
    if s != 1.0:
        v = v / s
    x = np.empty_like(v)
    value, _ = rank1_solve(v, k, check_bool(nonneg, "nonneg"), x, np.empty_like(v))
    return x, float(unscale(value, s, 2, "value ||v_I||^2", "v", underflow=False))


# --------------------------------------------------------------------------- Section 5
@validate_params(
    {"Q": ["array-like"], "R": ["array-like"], "tol": [NONNEG_REAL]},
    prefer_skip_nested_validation=True,
)
def max_quadratic_halfspaces(Q, R, *, tol: float = 1e-10) -> tuple[float, np.ndarray | None]:
    """Solve ``(P_d)``: ``max c'Qc`` over unit ``c`` in ``R^d`` with ``R c >= 0`` (Asteris et al., Sec. 5).

    If the leading eigenvector ``u_1`` of ``Q`` (or ``-u_1``) is feasible it is optimal. Otherwise some
    constraint is active at an optimum, so for each row ``r_i`` of ``R`` the problem is restricted to the
    ``(d-1)``-dimensional subspace ``r_i'c = 0`` (orthonormal basis ``N``: ``Q -> N'QN``, ``R -> RN``) and
    solved recursively; in one dimension the candidates are the two unit vectors. O(k^d) subproblems for
    ``k`` constraints.

    Parameters
    ----------
    Q : ndarray (d, d), symmetric
    R : ndarray (m, d)
    tol : float
        Feasibility tolerance, relative to ``||R||`` row norms.

    Returns
    -------
    value : float
        The maximum (``-inf`` if no unit vector is feasible).
    c : ndarray (d,) or None
    """
    Q = np.asarray(Q, dtype=np.float64)
    R = np.asarray(R, dtype=np.float64).reshape(-1, Q.shape[0])
    norms = np.linalg.norm(R, axis=1)
    keep = norms > tol * max(1.0, float(norms.max(initial=0.0)))
    R = R[keep] / norms[keep, None]
    return _pd(0.5 * (Q + Q.T), R, tol)


def _pd(Q, R, tol):
    d = Q.shape[0]
    if d == 1:
        best, arg = -np.inf, None
        for s in (1.0, -1.0):
            c = np.array([s])
            if R.size == 0 or np.all(R[:, 0] * s >= -tol):
                if Q[0, 0] > best:
                    best, arg = float(Q[0, 0]), c
        return best, arg
    w, U = np.linalg.eigh(Q)
    u = U[:, -1]
    for s in (1.0, -1.0):
        if R.size == 0 or np.all(R @ (s * u) >= -tol):
            return float(w[-1]), s * u
    best, arg = -np.inf, None
    for i in range(R.shape[0]):
        r = R[i]
        # orthonormal basis of r' c = 0
        _, _, Vt = np.linalg.svd(r[None, :])
        N = Vt[1:].T
        RN = np.delete(R, i, axis=0) @ N
        nrm = np.linalg.norm(RN, axis=1)
        RN = RN[nrm > tol] / nrm[nrm > tol, None]
        val, y = _pd(N.T @ Q @ N, RN, tol)
        if y is not None and val > best:
            best, arg = val, N @ y
    return best, arg


# --------------------------------------------------------------------------- exact rank d
def _exact2(V, kmax: int, nonneg: bool) -> tuple[np.ndarray, np.ndarray]:
    """``OPT_2`` for ``k = 1..kmax`` and an angle attaining each, by the sweep kernel."""
    W = V if nonneg else np.vstack([V, -V])  # signed: top-k |Vc| = top-k positive of [Vc; -Vc]
    val = np.empty(kmax)
    phi = np.empty(kmax)
    sweep2(np.ascontiguousarray(W, dtype=np.float64), kmax, val, phi)
    return np.clip(val, 0.0, None), phi


@validate_params(
    {"V": ["array-like"], "kmax": [POSITIVE_INT], "nonneg": ["boolean"]},
    prefer_skip_nested_validation=True,
)
def rank2_sweep(V, kmax, *, nonneg=True) -> tuple[np.ndarray, np.ndarray]:
    """The exact rank-2 spannogram on a given ``V`` (n, 2): ``OPT_2`` for every ``k = 1..kmax`` at once.

    One step of :func:`spannogram_exact` (``rank=2``), public so that a benchmark can time it on its own:
    the kinetic sweep of the kernel :func:`repro.spannogram._kernels.sweep2`, which trusts its input
    (``V`` float64 with ``kmax <= n``; no other check).

    Parameters
    ----------
    V : array_like, shape (n, 2)
        ``A_2 = V V'``.
    kmax : int, 1..n
        The largest cardinality.
    nonneg : bool, default True
        Non-negative (Eq. 13) or signed supports.

    Returns
    -------
    values : ndarray, shape (kmax,)
        ``OPT_2 = max ||V'x||^2`` over unit (non-negative) ``k``-sparse ``x``, for ``k = 1..kmax``.
    angles : ndarray, shape (kmax,)
        An angle ``phi`` with ``c = (sin phi, cos phi)`` attaining each.

    Examples
    --------
    >>> import numpy as np
    >>> from repro.spannogram import rank2_sweep
    >>> values, _ = rank2_sweep(np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]]), 1)
    >>> values.round(12).tolist()  # the largest ||V_i||^2
    [4.0]
    """
    return _exact2(np.asarray(V, dtype=np.float64), int(kmax), bool(nonneg))


def _candidate_supports(V, k, nonneg, tol=1e-9):
    """Algorithm 2: candidate supports at the intersections of ``d`` of the ``n + 1`` curves."""
    n, d = V.shape
    W = V if nonneg else np.vstack([V, -V])
    m = W.shape[0]
    Vh = np.vstack([W, np.zeros((1, d))])
    scale = max(float(np.abs(W).max(initial=0.0)), 1e-300)
    out = set()
    for sub in itertools.combinations(range(m + 1), d):
        if d == 1:
            cs = [np.array([1.0])]
        else:
            M = Vh[sub[0]] - Vh[list(sub[1:])]
            _, s, Vt = np.linalg.svd(M)
            if s.size < d - 1 or s[-1] <= 1e-12 * scale:
                continue  # degenerate intersection (parallel rows): not a vertex
            cs = [Vt[-1]]
        for c in cs:
            for alpha in (1.0, -1.0):
                v = alpha * (W @ c)
                pos = np.flatnonzero(v >= -tol * scale)
                if pos.size <= k:
                    out.add(frozenset(int(i) for i in pos))
                    continue
                t = np.sort(v[pos])[::-1][k - 1]
                sure = [int(i) for i in pos if v[i] > t + tol * scale]
                amb = [int(i) for i in pos if abs(v[i] - t) <= tol * scale]
                r = k - len(sure)
                for extra in itertools.combinations(amb, r):
                    out.add(frozenset(sure + list(extra)))
    if not nonneg:
        out = {frozenset(i % n for i in s) for s in out}
    return out


def _exact_general(V, k: int, nonneg: bool) -> tuple[np.ndarray, float]:
    """Algorithm 1: solve (16) on every candidate support of Algorithm 2; the best ``x`` and ``||V'x||^2``."""
    n = V.shape[0]
    best, best_x = -np.inf, np.zeros(n)
    for S in _candidate_supports(V, k, nonneg):
        if not S:
            continue
        idx = np.array(sorted(S))
        VI = V[idx]
        Q = VI.T @ VI
        if nonneg:
            _, c = max_quadratic_halfspaces(Q, VI)
            if c is None:
                continue
            y = np.clip(VI @ c, 0.0, None)
        else:
            y = VI @ np.linalg.eigh(Q)[1][:, -1]
        ny = np.linalg.norm(y)
        if ny == 0:
            continue
        x = np.zeros(n)
        x[idx] = y / ny
        obj = float(np.sum((V.T @ x) ** 2))
        if obj > best:
            best, best_x = obj, x
    return best_x, max(best, 0.0)


def _x_at(V, c, k, nonneg):
    a = V @ c
    x = np.empty_like(a)
    rank1_solve(a, k, nonneg, x, np.empty_like(a))
    return x


@validate_params(
    {
        "X": ["array-like", "sparse matrix", Covariance],
        "cardinality": [POSITIVE_INT],
        "rank": [POSITIVE_INT],
        "nonneg": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
@blas_limited
def spannogram_exact(X, cardinality, *, rank: int = 2, nonneg: bool = True) -> tuple[np.ndarray, float]:
    """The exact non-negative (or signed) ``k``-sparse principal component of ``A_d`` (Algorithms 1-2).

    Exact for ``A`` itself when ``rank(A) <= d`` (Sec. 1, "exact solution for low-rank matrices"), and
    otherwise within the factor ``rho_d`` of Theorem 1 (Eq. 4).

    ``rank=1``: Prop. 3.1 on the leading eigenvector. ``rank=2``: the kinetic sweep
    (:func:`repro.spannogram._kernels.sweep2`), O(n^2 log n), e.g. about a minute for the 12582 leukemia
    genes. ``rank>=3``: Algorithm 2's ``binom(n+1, d)`` intersections with the ambiguous-set expansion and
    Section 5's solver per support, O(n^{d+1} + n^d k^d) -- for small ``n`` (refused above 2e6 candidates).

    Parameters
    ----------
    X : array or scipy sparse matrix (n_samples, n_features), or Covariance
        Data (centred here; a sparse matrix through :meth:`repro.Covariance.from_data`, never densified)
        or a covariance (``Covariance.from_matrix`` for a given PSD matrix).
    cardinality : int, 1..n_features
        ``k``, the largest number of non-zeros.
    rank : int, default 2
        ``d``, the rank of the approximation ``A_d`` that is solved exactly.
    nonneg : bool
        ``False``: the signed sparse PC (supports from the ``k`` largest ``|entries|``, Papailiopoulos et
        al. 2013).

    Returns
    -------
    x : ndarray (n_features,)
        Unit norm, ``x >= 0`` if ``nonneg``, at most ``k`` non-zeros.
    value : float
        ``x'Ax`` (the variance along ``x``; equals ``x'A_d x``, the maximized objective, when rank(A) <= d).

    See Also
    --------
    spannogram_path : Algorithm 3 (sampled), every cardinality at once.
    rho_d : the approximation factor when ``rank(A) > d``.

    References
    ----------
    Asteris, M., Papailiopoulos, D. & Dimakis, A. G. (2014). Nonnegative sparse PCA with provable
    guarantees. ICML, Algorithms 1-2 and Theorem 1.

    Examples
    --------
    A rank-2 matrix with non-negative entries is solved exactly; by Perron-Frobenius its optimum is the
    largest ``lambda_max(A[S, S])`` over all supports ``|S| = 3``, found here by brute force:

    >>> import numpy as np
    >>> from itertools import combinations
    >>> from repro import Covariance, spannogram_exact
    >>> W = np.abs(np.random.default_rng(0).standard_normal((8, 2)))
    >>> A = W @ W.T
    >>> x, value = spannogram_exact(Covariance.from_matrix(A), 3, rank=2)
    >>> best = max(np.linalg.eigvalsh(A[np.ix_(S, S)])[-1] for S in combinations(range(8), 3))
    >>> bool(np.isclose(value, best)), int(np.count_nonzero(x)), bool((x >= 0).all())
    (True, 3, True)
    """
    sc = _scaled_cov(X, method="spannogram_exact")
    cov = sc.cov
    d = _check_rank(rank, cov)
    k = check_int(cardinality, "cardinality", low=1, high=cov.n_features)
    lr = _low_rank(cov, d)
    nonneg = check_bool(nonneg, "nonneg")
    if d == 1:
        x = _x_at(lr.V, np.ones(1), k, nonneg)
    elif d == 2:
        _, phi = _exact2(lr.V, k, nonneg)
        x = _x_at(lr.V, np.array([np.sin(phi[k - 1]), np.cos(phi[k - 1])]), k, nonneg)
    else:
        m = cov.n_features * (1 if nonneg else 2) + 1
        if math.comb(m, d) > _MAX_EXACT_CANDIDATES:
            raise ValueError(
                f"rank={d} on {cov.n_features} features visits binom({m}, {d}) = {math.comb(m, d):.3g} "
                "intersections; use rank=2 (the O(n^2 log n) sweep) or SpannogramPCA (Algorithm 3)."
            )
        x, _ = _exact_general(lr.V, k, nonneg)
    return x, float(sc.variances(cov.quad(x)))


# --------------------------------------------------------------------------- Theorem 1
@validate_params(
    {"eigenvalues": ["array-like"], "cardinality": [POSITIVE_INT], "rank": [POSITIVE_INT]},
    prefer_skip_nested_validation=True,
)
def rho_d(eigenvalues, cardinality, rank) -> float:
    """The a-priori approximation factor of Theorem 1 (Eq. 4): ``max{k / 2n, 1 / (1 + 2 (n/k) l_{d+1}/l_1)}``.

    Parameters
    ----------
    eigenvalues : array_like
        The spectrum of ``A`` (all ``n`` eigenvalues, any order; its length is ``n``).
    cardinality : int
        ``k``, ``1..n``.
    rank : int
        ``d`` (``lambda_{d+1} = 0`` when ``d >= n``).

    Returns
    -------
    float in (0, 1]
        The guaranteed fraction of the optimum that the rank-``d`` spannogram reaches.

    See Also
    --------
    spannogram_exact, spannogram_bound

    References
    ----------
    Asteris, M., Papailiopoulos, D. & Dimakis, A. G. (2014). Nonnegative sparse PCA with provable
    guarantees. ICML, Theorem 1, Eq. 4.

    Examples
    --------
    >>> from repro import rho_d
    >>> rho_d([4.0, 1.0, 0.0, 0.0], 2, 1)  # max(2/8, 1 / (1 + 2 * 2 * 1/4))
    0.5
    >>> rho_d([4.0, 1.0, 0.0, 0.0], 2, 2)  # rank(A) = 2 <= d: exact
    1.0
    """
    lam = np.sort(check_vector(eigenvalues, "eigenvalues"))[::-1]
    n = lam.size
    k = check_int(cardinality, "cardinality", low=1, high=n)
    d = check_int(rank, "rank", low=1)
    if lam[0] <= 0:
        raise ValueError("eigenvalues must have a positive largest value.")
    nxt = max(float(lam[d]), 0.0) if d < n else 0.0
    return float(max(k / (2.0 * n), 1.0 / (1.0 + 2.0 * (n / k) * nxt / lam[0])))
