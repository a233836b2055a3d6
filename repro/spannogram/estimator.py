"""The spannogram for non-negative sparse PCA, with guarantees (Asteris, Papailiopoulos & Dimakis 2014).

The non-negative ``k``-sparse principal component maximizes ``x'Ax`` over ``S_k = {||x|| = 1, ||x||_0 <= k,
x >= 0}`` (Eq. 2). The spannogram solves it exactly on ``A_d = V V'``, the rank-``d`` truncation of ``A``
(``V = U_d L_d^(1/2)``, Eq. 7), through ``max_x ||V'x||^2 = max_{c in S^d} max_x ((Vc)'x)^2`` (Eq. 13): for a
fixed ``c`` the inner problem is the rank-1 problem of Section 3.1, solved by the ``k`` largest positive
entries of ``Vc`` or of ``-Vc`` (Prop. 3.1).

What is here
------------
* :func:`rank1_solver` -- Prop. 3.1 by selection in O(n) (kernel
  :func:`repro.spannogram._kernels.rank1_solve`).
* :func:`spannogram_exact` -- the exact rank-``d`` algorithm. ``rank=2``: a kinetic sweep of the angle
  (:func:`repro.spannogram._kernels.sweep2`) that keeps the curves sorted and updates the top-``k`` set one
  swap per intersection, O(n^2 log n) for all ``n(n+1)`` events, and takes the closed-form maximum of
  ``c'S_I c`` on every arc between events (beyond the paper, which re-solves every candidate in O(n)).
  ``rank >= 3``: Algorithm 1 with Algorithm 2 as printed -- a candidate ``c`` at each intersection of ``d``
  of the ``n + 1`` curves (the rows of ``V`` and a zero row), the ambiguous-set expansion of tied entries,
  and for each candidate support the exact solver of Section 5 (:func:`max_quadratic_halfspaces`).
* :class:`SpannogramPCA` / :func:`spannogram_path` -- Algorithm 3 (random ``c``, or a deterministic net), for
  every cardinality in one pass (:func:`repro.spannogram._kernels.allk_pass`).
* :func:`spannogram_bound` -- a data-dependent upper bound on the unknown optimum (the shaded areas of
  Figs. 4-6), for all ``k`` in the same pass, and :func:`rho_d`, the a-priori factor of Theorem 1 (Eq. 4).

The upper bound (derived here; the paper's supplement is not available)
------------------------------------------------------------------------
Write ``A = A_d + R`` with ``R`` PSD, ``||R|| = lambda_{d+1}``. For the optimum ``x*``,
``OPT = x*'A_d x* + x*'R x* <= OPT_d + r_k`` with ``r_k = min(lambda_{d+1}, sum of the k largest diagonal
entries of R)`` (for ``|I| <= k``, ``x'Rx <= lambda_max(R_II) <= tr(R_II)``). ``OPT_d = max_c f_k(c)`` with
``f_k(c)`` the rank-1 value (Eq. 13). If ``x_d`` attains ``OPT_d`` and ``c_d = V'x_d / ||V'x_d||``, every
``c`` gives ``f_k(c) >= (c'V'x_d)^2 = OPT_d (c'c_d)^2``, so ``OPT_d <= max_i f_k(c_i) / cos^2(theta)`` where
``theta`` is the angle from ``+-c_d`` to the nearest sample. Hence::

    OPT <= min( lambda_1,  sum_{top k} A_ii,  max_i f_k(c_i) / cos^2(theta) + r_k ).

* ``net="exact"`` (rank 2, the sweep): ``theta = 0`` -- rigorous.
* ``net="grid"``: the samples are a grid on the faces ``c_j = 1`` of the cube ``[-1, 1]^d`` (``f_k(c) =
  f_k(-c)``, so half the cube suffices), spacing ``h``: every direction lies within ``sin(theta) <= delta =
  h sqrt(d - 1) / 2`` of a grid point -- rigorous (a deterministic net).
* ``net="random"`` (the paper's Algorithm 3): for the fixed unknown ``c_d`` and ``N`` independent uniform
  samples, ``P(theta > t) = (1 - I_{sin^2 t}((d-1)/2, 1/2))^N`` (two antipodal caps); ``theta`` is set so this
  is ``failure_probability`` (default ``1/n``, as in Theorem 2) -- the bound holds for each ``k`` with
  probability at least ``1 - failure_probability`` over the samples.

Every bound is rounded upward by ``8 (n + m) eps`` (of itself and of ``lambda_1``; ``m`` the rows of the
data) for the rounding of the float64 eigenpairs and sums, so a bound that is tight in exact arithmetic
(``rank(A) <= d``, the rank-2 sweep) stays above the optimum in floating point. The random net's bound
remains a probabilistic one: it can fall below the optimum with probability ``failure_probability``
(measured: 2 of 80 fits at ``p = 1/12`` on rank-3 data with 12 features, by up to 3e-4 relative);
``net="grid"`` or ``"exact"`` for a certificate.

Because the bound does not depend on which method produced ``x``, ``x'Ax / bound`` certifies any method's
output (:func:`repro.metrics.certified_fraction`).

References
----------
M. Asteris, D. Papailiopoulos and A. Dimakis. Nonnegative sparse PCA with provable guarantees. ICML 2014.
D. Papailiopoulos, A. Dimakis and S. Korokythakis. Sparse PCA through low-rank approximations. ICML 2013
(the signed spannogram, ``nonneg=False``).
L. Mackey. Deflation methods for sparse PCA. NIPS 21, 2008 (Schur complement deflation).
"""

from __future__ import annotations

import itertools
import math
import numbers
import time
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import scipy.linalg
import scipy.special
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import StrOptions

from .._base import POSITIVE_INT, RANDOM_STATE, ProjectionMixin
from .._threads import blas_limited
from .._validation import (
    check_array,
    check_bool,
    check_cardinalities,
    check_cardinality,
    check_features,
    check_has_variance,
    check_int,
    check_n_components,
    check_psd,
    check_random_state,
    check_real,
    check_scale,
    check_vector,
    is_dask,
    unscale,
)
from ..em_sparse_pca import CardinalityPath
from ._kernels import allk_pass, rank1_solve, sorted_side, sweep2
from ..linalg import Covariance

__all__ = [
    "SpannogramPCA",
    "SpannogramPath",
    "max_quadratic_halfspaces",
    "rank1_solver",
    "rho_d",
    "spannogram_bound",
    "spannogram_exact",
    "spannogram_path",
]

_NETS = ("random", "grid", "exact")
_MAX_EXACT_CANDIDATES = 2_000_000  # intersection points Algorithm 2 may visit for rank >= 3
_MAX_PATH_ENTRIES = 50_000_000  # components stored by a path (400 MB)


# --------------------------------------------------------------------------- input
def _as_cov(X, name: str = "X") -> Covariance:
    """A :class:`Covariance` from data (rows are samples, centred) or a given one (a matrix must be PSD)."""
    if isinstance(X, Covariance):
        if X.data is None and not getattr(X, "_psd_checked", False):  # derived ones: not yet checked
            check_psd(X.matrix, name)
        return X
    return Covariance.from_data(check_array(X, name, min_samples=2), name=name)


@dataclass
class _Scaled:
    """A covariance ``A / f`` scaled into the safe range of float64, and how to undo it on a variance.

    ``A = f * A_scaled`` with ``f = s ** power``: ``s`` a power of two (exact), ``power`` 2 when the data
    were divided by ``s``, 1 when a given matrix was. Loadings are unchanged by the scaling.
    """

    cov: Covariance
    s: float = 1.0
    power: int = 2
    name: str = "X"

    def variances(self, values):
        """Variances of the scaled problem as variances of ``A``; refuses what float64 cannot hold."""
        return unscale(values, self.s, self.power, "variances", self.name, underflow=False)


def _scaled_cov(X, name: str = "X", method: str = "the spannogram") -> _Scaled:
    """:func:`_as_cov` on ``X / s`` (``s`` a power of two) when ``X`` lies outside ``[2^-256, 2^256]``.

    Squares of entries near 1e-160 underflow and near 1e160 overflow, so the eigenpairs, the rank-1
    values and the bound of unscaled data were wrong there (an all-zero component at 1e80, a worse one at
    1e-100); the spannogram is scale-equivariant (loadings unchanged, variances times ``s^2``), so it runs
    on the scaled data and the variances are scaled back (refused when float64 cannot hold them). Data or
    a covariance with no variance at all are refused: every unit vector is then optimal, with value 0.
    """
    if is_dask(X):  # one distributed pass forms the p x p covariance; X stays on the workers
        from .._chunked import dask_covariance

        n, _, A = dask_covariance(X, name)
        X = Covariance._derived(A / (n - 1), n_samples=n)
    if isinstance(X, Covariance):
        cov, s, power = _as_cov(X, name).rescaled()
        if not np.any(cov.diag() > 0):
            raise ValueError(
                f"{name} has no variance (a zero covariance), so {method} has no component to find."
            )
        return _Scaled(cov, s, power, name)
    X = check_array(X, name, min_samples=2)
    check_has_variance(X, method, name)
    s = check_scale(X, name)
    cov = Covariance.from_data(X / s if s != 1.0 else X, name=name)
    if not np.any(cov.diag() > 0):  # constant up to round-off of the mean
        raise ValueError(
            f"{name} has no variance (every column is constant), so {method} has no component to find."
        )
    return _Scaled(cov, s, 2, name)


def _check_rank(rank, cov: Covariance) -> int:
    """``d`` in ``1..rank(A)`` at most: ``n_samples - 1`` (centred data) and ``n_features``."""
    n_s = cov.data.shape[0] if cov.data is not None else cov.n_features + 1
    high = min(n_s - 1, cov.n_features)
    if high < 1:
        raise ValueError("X is too small: the spannogram needs at least 2 samples.")
    return check_int(rank, "rank", low=1, high=high)


@dataclass
class _LowRank:
    V: np.ndarray  # (n, d), A_d = V V'
    values: np.ndarray  # lambda_1..lambda_d
    lam_next: float  # lambda_{d+1} (0 when A has rank <= d)
    resid_diag: np.ndarray  # diag(A - A_d) >= 0
    diag: np.ndarray  # diag(A)
    n_rows: int = 0  # rows of the data behind A (0 for a given matrix): for the rounding margin


def _low_rank(cov: Covariance, d: int, support=None) -> _LowRank:
    """``V = U_d L_d^(1/2)`` (Alg. 1, lines 1-2) and what the bound needs, optionally on a feature subset."""
    if support is not None:
        if cov.data is not None:
            cov = Covariance(data=np.ascontiguousarray(cov.data[:, support]), n_samples=cov.n_samples)
        else:
            cov = Covariance._derived(cov.matrix[np.ix_(support, support)], n_samples=cov.n_samples)
    n_max = cov.n_features if cov.data is None else min(cov.n_features, cov.data.shape[0])
    for want in range(
        min(d + 1, n_max), 0, -1
    ):  # the data may have rank <= d: lambda_{d+1} = 0, and fewer columns
        try:
            vals, U = cov.eigh(want)
            break
        except ValueError:  # want exceeds the numerical rank of the data (Gram route)
            continue
    else:
        vals, U = np.zeros(0), np.zeros((cov.n_features, 0))
    vals = np.clip(vals, 0.0, None)
    lam_next = float(vals[d]) if vals.size > d else 0.0
    dd = min(d, vals.size)
    V = np.ascontiguousarray(U[:, :dd] * np.sqrt(vals[:dd]))
    if V.shape[1] < d:
        V = np.ascontiguousarray(np.hstack([V, np.zeros((V.shape[0], d - V.shape[1]))]))
    diag = cov.diag()
    resid = np.clip(diag - np.einsum("ij,ij->i", V, V), 0.0, None)
    return _LowRank(V, vals[:dd], lam_next, resid, diag, 0 if cov.data is None else cov.data.shape[0])


# --------------------------------------------------------------------------- rank 1 (Sec. 3.1)
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
    X : array (n_samples, n_features) or Covariance
        Data (centred here) or a covariance (``Covariance.from_matrix`` for a given PSD matrix).
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


# --------------------------------------------------------------------------- nets (Algorithm 3)
def _grid_net(d: int, n_samples: int) -> tuple[np.ndarray, float]:
    """Points on the faces ``c_j = 1`` of ``[-1, 1]^d`` (normalized) and ``delta >= sin(theta)``.

    Any unit ``u`` (up to sign) scaled to the cube, ``p = u / ||u||_inf``, lies on a face ``p_j = 1`` within
    ``delta`` (the half-diagonal of a grid cell) of a grid point ``g``; as ``||p||, ||g|| >= 1``, the angle
    between them has ``sin <= ||p - g|| / ||g|| <= delta``.
    """
    if d == 1:
        return np.ones((1, 1)), 0.0
    per_face = max(n_samples // d, 1)
    m = max(int(np.floor(per_face ** (1.0 / (d - 1)) + 1e-9)), 2)
    g = np.linspace(-1.0, 1.0, m)
    h = g[1] - g[0]
    grids = np.stack(np.meshgrid(*([g] * (d - 1)), indexing="ij"), axis=-1).reshape(-1, d - 1)
    pts = []
    for j in range(d):
        P = np.empty((grids.shape[0], d))
        P[:, j] = 1.0
        P[:, [i for i in range(d) if i != j]] = grids
        pts.append(P)
    C = np.vstack(pts)
    C /= np.linalg.norm(C, axis=1, keepdims=True)
    return np.ascontiguousarray(C), h * np.sqrt(d - 1) / 2.0


def _random_net(d: int, n_samples: int, rng) -> np.ndarray:
    C = rng.standard_normal((n_samples, d))  # Alg. 3, line 5
    nrm = np.linalg.norm(C, axis=1, keepdims=True)
    nrm[nrm == 0] = 1.0
    return np.ascontiguousarray(C / nrm)  # line 6


def _cos2_random(d: int, n_samples: int, failure_probability: float) -> float:
    """``cos^2 theta`` with ``P(no sample within theta of +-c_d) = failure_probability``."""
    if d == 1:
        return 1.0
    # two antipodal caps of angle t cover the fraction I_{sin^2 t}((d-1)/2, 1/2) of the sphere
    frac = -math.expm1(math.log(failure_probability) / n_samples)  # 1 - p^(1/N)
    s2 = float(scipy.special.betaincinv((d - 1) / 2.0, 0.5, min(frac, 1.0)))
    return max(1.0 - s2, 0.0)


# --------------------------------------------------------------------------- the all-k pass
@dataclass
class _Pass:
    ks: np.ndarray  # 1..kmax
    val: np.ndarray  # best ||V'x_k||^2 (on A_d)
    f: np.ndarray  # best rank-1 value max_i f_k(c_i)
    sample: np.ndarray
    sign: np.ndarray
    C: np.ndarray
    cos2: float  # net factor of the bound


def _run_pass(V, kmax, nonneg, net, n_samples, rng, failure_probability) -> _Pass:
    n, d = V.shape
    if net == "grid":
        C, delta = _grid_net(d, n_samples)
        cos2 = 1.0 - delta * delta
    else:
        C = _random_net(d, n_samples, rng)
        p = 1.0 / n if failure_probability is None else failure_probability
        cos2 = _cos2_random(d, C.shape[0], p)
    val = np.full(kmax, -np.inf)
    f = np.zeros(kmax)
    sample = np.zeros(kmax, dtype=np.int64)
    sign = np.ones(kmax, dtype=np.int64)
    allk_pass(V, C, kmax, nonneg, val, f, sample, sign)
    return _Pass(np.arange(1, kmax + 1), val, f, sample, sign, C, cos2)


def _x_from_pass(V, c, k, nonneg, sign):
    """Rebuild the candidate of :func:`allk_pass` for sample ``c``, side ``sign`` and cardinality ``k``."""
    a = V @ c
    n = a.size
    order = np.empty(n, dtype=np.int64)
    p = sorted_side(a, nonneg, float(sign), k, order, np.empty(n), np.empty(n), np.empty(n, dtype=np.int64))
    idx = order[:p]
    x = np.zeros(n)
    if idx.size == 0:
        return x
    y = a[idx] if not nonneg else sign * a[idx]
    x[idx] = y / np.linalg.norm(y)
    return x


def _bound(lr: _LowRank, opt_d_upper: np.ndarray, ks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The upper bound for each ``k`` in ``ks`` (see the module docstring) and its spectral-only form."""
    lam1 = float(lr.values[0]) if lr.values.size else 0.0
    top_diag = np.cumsum(np.sort(lr.diag)[::-1])[ks - 1]
    top_res = np.cumsum(np.sort(lr.resid_diag)[::-1])[ks - 1]
    spectral = opt_d_upper + lr.lam_next  # Theorem 1's route: OPT <= OPT_d + lambda_{d+1}
    full = np.minimum.reduce(
        [np.full(ks.size, lam1), top_diag, opt_d_upper + np.minimum(lr.lam_next, top_res)]
    )
    # Rounded upward: every term is computed in float64 (eigenvalues and V to about m eps lambda_1,
    # sums of squares to about m eps of themselves, for m the larger side of the data), so a bound that
    # is tight in exact arithmetic (rank(A) <= d, a rank-2 sweep) can fall an ulp or more below the
    # optimum. The margin, 8 (n + m) eps of the bound plus of lambda_1, covers that with room: about 1e-11
    # relative for 12582 features.
    n, m = lr.V.shape[0], max(lr.n_rows, lr.V.shape[0])
    tau = 8.0 * (n + m) * np.finfo(np.float64).eps
    return full * (1.0 + tau) + tau * lam1, np.minimum(spectral, lam1) * (1.0 + tau) + tau * lam1


# --------------------------------------------------------------------------- path
@dataclass
class SpannogramPath(CardinalityPath):
    """A :class:`repro.em_sparse_pca.CardinalityPath` with the spannogram's certificate.

    Extra attributes
    ----------------
    upper_bound : ndarray (n_k,)
        Upper bound on the unknown optimum ``OPT_k`` (module docstring); rigorous for ``net`` "grid" and
        "exact", with probability ``1 - failure_probability`` per ``k`` for "random".
    upper_bound_spectral : ndarray (n_k,)
        The bound with ``lambda_{d+1}`` alone for the residual (the route of Theorem 1's proof).
    n_nonzero : ndarray of int (n_k,)
        Non-zeros of each component: fewer than ``k`` when ``Vc`` has fewer positive entries.
    rank, n_samples : int
    net : str
    """

    upper_bound: np.ndarray = field(default=None)
    upper_bound_spectral: np.ndarray = field(default=None)
    n_nonzero: np.ndarray = field(default=None)
    rank: int = 0
    n_samples: int = 0
    net: str = "random"

    def to_frame(self):
        df = super().to_frame()
        df["n_nonzero"] = self.n_nonzero
        df["upper_bound"] = self.upper_bound
        df["upper_bound_spectral"] = self.upper_bound_spectral
        df["certified_fraction"] = self.variance / self.upper_bound
        return df


def _check_net(net):
    if net not in _NETS:
        raise ValueError(f"net must be one of {_NETS}; got {net!r}.")
    return net


def _check_fp(p):
    if p is None:
        return None
    return check_real(p, "failure_probability", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)


@blas_limited
def spannogram_path(
    X,
    cardinalities,
    *,
    rank: int = 3,
    n_samples: int = 10000,
    nonneg: bool = True,
    random_state=None,
    net: str = "random",
    failure_probability: float | None = None,
) -> SpannogramPath:
    """Algorithm 3 for every cardinality in one pass, with the data-dependent upper bound.

    ``V`` comes from the ``rank + 1`` leading eigenpairs of the covariance (:class:`repro.linalg.Covariance`,
    through the Gram matrix when ``n_samples < n_features``: the ``n x n`` matrix is never formed). Each
    sample ``c`` is sorted once and every ``k = 1..max(cardinalities)`` is scored from prefix sums
    (:func:`repro.spannogram._kernels.allk_pass`), so the curve costs what the largest ``k`` alone costs
    (which grows with that ``k``: on the 12582 leukemia genes, every ``k`` up to 12582 took about 14x the
    CPU time of ``k = 50``, see :mod:`experiments.bench_spannogram`). Each ``k`` gets exactly the vector
    Algorithm 3 run for that ``k`` alone on the same samples returns.

    Parameters
    ----------
    X : array (n_samples, n_features) or Covariance
        Data (centred here) or a covariance (``Covariance.from_matrix`` for a given PSD matrix).
    cardinalities : int or sequence of int, each in 1..n_features
        The cardinalities ``k`` to return a component for.
    rank : int, default 3
        ``d``, the rank of the approximation ``A_d``.
    n_samples : int >= 1
        Samples ``c`` (``O(eps^-d log n)`` in Theorem 2; 1e4 for ``d = 3``, ``eps = 0.1``, as the authors).
        With ``net="grid"`` the largest cube-face grid with at most this many points.
    nonneg : bool, default True
        Non-negative components; ``False``: signed sparse PCA.
    random_state : None, int or Generator
        Seed of the samples (``net="random"``).
    net : {"random", "grid", "exact"}
        "random": the paper's Gaussian samples. "grid": a deterministic net (rigorous bound). "exact": the
        exact rank-2 sweep (``rank`` must be 2).
    failure_probability : float or None
        For ``net="random"``: the bound fails with at most this probability (default ``1/n``).

    Returns
    -------
    SpannogramPath
        One unit vector per requested cardinality (so ask for a grid when ``n`` is large: 12582 genes x all
        12582 cardinalities would be 1.3 GB; more than 5e7 stored entries are refused).

    See Also
    --------
    SpannogramPCA : several components, one after another.
    spannogram_bound : the upper bound alone.
    repro.metrics.certified_fraction : the certificate for another method's components.

    References
    ----------
    Asteris, M., Papailiopoulos, D. & Dimakis, A. G. (2014). Nonnegative sparse PCA with provable
    guarantees. ICML, Algorithm 3, Theorem 2 and Figures 4-6.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 10)) @ np.diag(np.linspace(3, 0.5, 10))
    >>> X[:, :4] += 2 * rng.standard_normal((100, 1))  # four correlated variables
    >>> from repro import spannogram_path
    >>> path = spannogram_path(X, [2, 4], n_samples=2000, random_state=0)
    >>> path.n_nonzero.tolist(), bool((path.components >= 0).all())
    ([2, 4], True)
    >>> bool(np.all(path.variance <= path.upper_bound))  # the optimum lies between the two
    True
    """
    t0 = time.perf_counter()
    sc = _scaled_cov(X, method="spannogram_path")
    cov = sc.cov
    d = _check_rank(rank, cov)
    ks = check_cardinalities(cardinalities, cov.n_features)
    S = check_int(n_samples, "n_samples", low=1)
    net = _check_net(net)
    fp = _check_fp(failure_probability)
    if net == "exact" and d != 2:
        raise ValueError(f"net='exact' is the rank-2 sweep; got rank={d}. Use rank=2 or net='grid'.")
    rng = check_random_state(random_state)
    nonneg = check_bool(nonneg, "nonneg")
    if ks.size * cov.n_features > _MAX_PATH_ENTRIES:
        raise ValueError(
            f"cardinalities asks for {ks.size} components of {cov.n_features} features "
            f"({8 * ks.size * cov.n_features / 1e9:.1f} GB); pass fewer cardinalities (a grid: the pass "
            "still scores every k up to the largest) or use spannogram_bound for the bound of every k."
        )
    lr = _low_rank(cov, d)
    kmax = int(ks.max())
    init_time = time.perf_counter() - t0
    t1 = time.perf_counter()
    n = cov.n_features
    comps = np.zeros((ks.size, n))
    if net == "exact":
        val, phi = _exact2(lr.V, kmax, nonneg)
        opt_upper = val[ks - 1]
        for j, k in enumerate(ks):
            comps[j] = _x_at(lr.V, np.array([np.sin(phi[k - 1]), np.cos(phi[k - 1])]), int(k), nonneg)
        S_used = 0
    else:
        ps = _run_pass(lr.V, kmax, nonneg, net, S, rng, fp)
        opt_upper = ps.f[ks - 1] / ps.cos2
        for j, k in enumerate(ks):
            if np.isfinite(ps.val[k - 1]):
                comps[j] = _x_from_pass(lr.V, ps.C[ps.sample[k - 1]], int(k), nonneg, ps.sign[k - 1])
        S_used = ps.C.shape[0]
    var = np.atleast_1d(cov.quad(comps.T)) if ks.size else np.zeros(0)
    elapsed = time.perf_counter() - t1
    ub, ub_spec = _bound(lr, opt_upper, ks)
    ub, ub_spec = np.maximum(ub, var), np.maximum(ub_spec, var)
    var, ub, ub_spec = sc.variances(var), sc.variances(ub), sc.variances(ub_spec)
    nnz = np.count_nonzero(comps, axis=1)
    return SpannogramPath(
        method="Spannogram" if nonneg else "Spannogram (signed)",
        cardinalities=ks,
        components=comps,
        variance=var,
        components_opt=comps,
        variance_opt=var,
        n_iter=np.full(ks.size, S_used, dtype=np.int64),
        time=np.full(ks.size, elapsed / max(ks.size, 1)),
        init_time=init_time,
        upper_bound=ub,
        upper_bound_spectral=ub_spec,
        n_nonzero=nnz,
        rank=d,
        n_samples=S_used,
        net=net,
    )


@blas_limited
def spannogram_bound(
    X,
    cardinality,
    *,
    rank: int = 3,
    n_samples: int = 10000,
    nonneg: bool = True,
    net: str = "grid",
    random_state=None,
    failure_probability: float | None = None,
    spectral_only: bool = False,
) -> np.ndarray | float:
    """Upper bound on ``OPT_k = max x'Ax`` over unit non-negative ``k``-sparse ``x`` (Figs. 4-6, shaded).

    ``OPT <= min(lambda_1, sum_{top k} A_ii, max_i f_k(c_i) / cos^2(theta) + min(lambda_{d+1}, sum_{top k}
    (A - A_d)_ii))``, derived in the module docstring. Rigorous for ``net="grid"`` (default; a deterministic
    net with ``sin(theta) <= h sqrt(d-1)/2``) and ``net="exact"`` (rank 2, ``theta = 0``); for
    ``net="random"`` it holds with probability at least ``1 - failure_probability`` (default ``1/n``) for
    each ``k``. ``spectral_only=True`` gives the weaker form with ``lambda_{d+1}`` as the residual
    (Theorem 1's route).

    Parameters
    ----------
    X : array (n_samples, n_features) or Covariance
        Data (centred here) or a covariance (``Covariance.from_matrix`` for a given PSD matrix).
    cardinality : int or sequence of int
        One ``k`` (returns a float) or several (returns an array); all come from one pass.
    rank, n_samples, nonneg, net, random_state, failure_probability : int, int, bool, str, int, float
        As in :func:`spannogram_path` (but ``net="grid"`` by default, so that the bound is rigorous).
    spectral_only : bool, default False
        Use ``lambda_{d+1}`` alone for the residual (the weaker bound of Theorem 1's proof).

    Returns
    -------
    float or ndarray
        The upper bound on ``OPT_k`` for each requested ``k``.

    See Also
    --------
    spannogram_path, repro.metrics.certified_fraction

    References
    ----------
    Asteris, M., Papailiopoulos, D. & Dimakis, A. G. (2014). Nonnegative sparse PCA with provable
    guarantees. ICML, Theorem 2 and Section 5 ("data dependent bounds"; the shaded areas of Figures 4-6).

    Examples
    --------
    The unknown optimum lies between the variance a method reaches and the bound, which is at most the
    trivial bound ``lambda_1``:

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 10)) @ np.diag(np.linspace(3, 0.5, 10))
    >>> X[:, :4] += 2 * rng.standard_normal((100, 1))  # four correlated variables
    >>> from repro import spannogram_bound, spannogram_path
    >>> bound = spannogram_bound(X, 2, n_samples=2000)
    >>> reached = spannogram_path(X, [2], n_samples=2000, random_state=0).variance[0]
    >>> bool(reached <= bound <= np.linalg.eigvalsh(np.cov(X, rowvar=False))[-1])
    True
    """
    sc = _scaled_cov(X, method="spannogram_bound")
    cov = sc.cov
    d = _check_rank(rank, cov)
    scalar = np.ndim(cardinality) == 0
    ks = check_cardinalities(cardinality, cov.n_features)
    S = check_int(n_samples, "n_samples", low=1)
    net = _check_net(net)
    fp = _check_fp(failure_probability)
    if net == "exact" and d != 2:
        raise ValueError(f"net='exact' is the rank-2 sweep; got rank={d}. Use rank=2 or net='grid'.")
    nonneg, spectral_only = check_bool(nonneg, "nonneg"), check_bool(spectral_only, "spectral_only")
    lr = _low_rank(cov, d)
    kmax = int(ks.max())
    if net == "exact":
        val, _ = _exact2(lr.V, kmax, nonneg)
        upper = val[ks - 1]
    else:
        ps = _run_pass(lr.V, kmax, nonneg, net, S, check_random_state(random_state), fp)
        upper = ps.f[ks - 1] / ps.cos2
    full, spec = _bound(lr, upper, ks)
    out = sc.variances(spec if spectral_only else full)
    return float(out[0]) if scalar else out


# --------------------------------------------------------------------------- estimator
_DEFLATIONS = ("remove", "mackey")


class SpannogramPCA(ProjectionMixin, BaseEstimator):
    """Non-negative (or signed) sparse PCA by the spannogram, Algorithm 3 (Asteris et al. 2014).

    Each component is the best of ``n_samples`` rank-1 solutions on ``A_d`` (kernel
    :func:`repro.spannogram._kernels.allk_pass`), with its certificate ``upper_bound_``.

    Parameters
    ----------
    n_components : int, default 1
        Components computed one after another (Sec. 7).
    cardinality : int, sequence of int, or None
        ``k`` for every component, or one per component. ``None`` (default): no sparsity constraint
        (``k = n_features``), the non-negative (or plain) principal component, as for
        :class:`repro.EMSparsePCA`: the one choice that fits any data without knowing its size; pass the
        cardinality you want for a sparse component.
    rank : int or "auto", default "auto"
        ``d``. ``"auto"``: 3 (the paper's experiments), or the rank the data can have when it is lower
        (``min(n_samples - 1, n_features)``). An int is used as given and refused when it exceeds that
        rank (never lowered silently); with ``deflation="remove"`` a later component whose remaining
        features are fewer than ``d`` uses their number.
    n_samples : int
        Samples ``c`` per component (1e4 for ``d = 3``, ``eps = 0.1``).
    nonneg : bool
        ``False``: the signed sparse PC (Papailiopoulos et al. 2013).
    random_state : None, int or Generator
        Seed of the samples (``net="random"``).
    net : {"random", "grid", "exact"}
        See :func:`spannogram_path` ("exact" needs ``rank=2``).
    deflation : {"remove", "mackey"}
        ``"remove"``: the features active in a component are removed before the next (as for Fig. 3), so
        non-negative components are orthogonal (disjoint supports). ``"mackey"``: Schur complement
        deflation ``A <- A - Aww'A / (w'Aw)`` (Mackey 2008), features kept.

    Attributes
    ----------
    components_ : ndarray (n_components, n_features)
        Unit-norm sparse loadings as rows, at most ``cardinality`` non-zeros each, non-negative when
        ``nonneg``; with ``deflation="remove"`` their supports are disjoint.
    explained_variance_ : ndarray (n_components,)
        ``w'Cw`` on the (undeflated) sample covariance of ``X``.
    upper_bound_ : ndarray (n_components,)
        Upper bound on the optimum of each component's problem (on the matrix it was computed from):
        rigorous for ``net`` "grid" and "exact", with probability ``1 - 1/n_features`` for "random"
        (the paper's Theorem 2; see the module docstring).
    n_nonzero_ : ndarray of int (n_components,)
        Non-zeros of each component: fewer than its cardinality when the best sample's ``Vc`` has fewer
        positive entries.
    mean_ : ndarray (n_features,)
        Column means of the training data (subtracted by ``transform``).
    n_features_in_ : int
        Number of features seen by ``fit``.
    feature_names_in_ : ndarray of str, shape ``(n_features_in_,)``
        Column names of ``X`` when ``fit`` got a DataFrame with string column names (only then);
        ``transform`` and ``score`` then refuse a DataFrame whose columns differ or are reordered.

    See Also
    --------
    spannogram_path : one component for every cardinality.
    repro.EMSparsePCA : the EM method the paper compares with.

    References
    ----------
    Asteris, M., Papailiopoulos, D. & Dimakis, A. G. (2014). Nonnegative sparse PCA with provable
    guarantees. ICML, Algorithm 3 and Section 7 (several components).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 10)) @ np.diag(np.linspace(3, 0.5, 10))
    >>> X[:, :4] += 2 * rng.standard_normal((100, 1))  # four correlated variables
    >>> from repro import SpannogramPCA
    >>> est = SpannogramPCA(n_components=2, cardinality=3, n_samples=2000, random_state=0).fit(X)
    >>> bool((est.n_nonzero_ <= 3).all()), bool((est.components_ >= 0).all())
    (True, True)
    >>> int(np.count_nonzero(est.components_[0] * est.components_[1]))  # disjoint supports
    0
    >>> bool(np.all(est.explained_variance_ <= est.upper_bound_))
    True
    """

    _parameter_constraints: ClassVar[dict] = {
        "n_components": [POSITIVE_INT],
        "cardinality": [None, POSITIVE_INT, "array-like"],
        "rank": [POSITIVE_INT, StrOptions({"auto"})],
        "n_samples": [POSITIVE_INT],
        "nonneg": ["boolean"],
        "random_state": RANDOM_STATE,
        "net": [StrOptions(set(_NETS))],
        "deflation": [StrOptions(set(_DEFLATIONS))],
    }

    def __init__(
        self,
        n_components=1,
        *,
        cardinality=None,
        rank="auto",
        n_samples=10000,
        nonneg=True,
        random_state=None,
        net="random",
        deflation="remove",
    ):
        self.n_components = n_components
        self.cardinality = cardinality
        self.rank = rank
        self.n_samples = n_samples
        self.nonneg = nonneg
        self.random_state = random_state
        self.net = net
        self.deflation = deflation

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit on data ``X`` (n_samples, n_features); returns self.

        Data outside ``[2^-256, 2^256]`` are fitted as ``X / s`` (``s`` a power of two) and the variances
        scaled back; data with no variance, and variances float64 cannot hold, are refused.

        A ``dask.array`` stays on the workers (or wherever its scheduler keeps it): one distributed pass
        forms its column means and ``p x p`` covariance (:func:`repro._chunked.dask_covariance`), and the
        client holds only those and runs the spannogram on the covariance. ``p`` is limited by
        ``repro._chunked.CLIENT_LIMIT_BYTES`` (a clear error above it).

        Parameters
        ----------
        X : array_like or dask.array.Array, shape (n_samples, n_features)
            Training data.
        y : None
            Ignored (scikit-learn convention).

        Returns
        -------
        self
            The fitted estimator.
        """
        check_features(self, X)
        from .._chunked import dask_covariance

        if is_dask(X):
            n, mean, A = dask_covariance(X, "X")
            self._fit_cov(Covariance._derived(A / (n - 1), n_samples=n))
            self.mean_ = mean
            return self
        X = check_array(X, "X", min_samples=2)
        for name, value in (("n_components", self.n_components), ("cardinality", self.cardinality)):
            entries = np.atleast_1d(value).tolist() if value is not None else []
            top = max(entries) if entries and all(isinstance(v, numbers.Real) for v in entries) else 0
            if top > X.shape[1]:  # the message scikit-learn's check_fit2d_1feature expects
                raise ValueError(
                    f"X has {X.shape[1]} feature(s) (shape={X.shape}) but {name}={value} needs at least "
                    f"{top}; lower {name} or pass more features."
                )
        sc = _scaled_cov(X, method="SpannogramPCA")
        self._fit_cov(sc.cov)
        self.explained_variance_ = sc.variances(self.explained_variance_)
        self.upper_bound_ = sc.variances(self.upper_bound_)
        self.mean_ = (X / sc.s).mean(axis=0) * sc.s  # the sum of entries near 1.8e308 overflows
        return self

    @blas_limited
    def _fit_cov(self, cov: Covariance):
        D = cov.n_features
        n_all = cov.data.shape[0] if cov.data is not None else (cov.n_samples or D + 1)
        L = check_n_components(
            self.n_components,
            n_all,
            D,
            high=max(min(n_all - 1, D), 1),
            why="centring removes one dimension, so the data span at most n_samples - 1 directions",
        )
        limit = max(min(n_all - 1, D), 1)
        rank = min(3, limit) if isinstance(self.rank, str) else int(self.rank)
        if rank > limit:  # what spannogram_bound refuses too (never lowered silently)
            raise ValueError(
                f"X has {D} feature(s) and {n_all} samples, so its covariance has rank at most "
                f"min(n_samples - 1, n_features) = {limit}: rank={self.rank} is more than that. Pass "
                f"rank <= {limit}, or rank='auto'."
            )
        ks = check_cardinality(self.cardinality, D, L)
        rng = check_random_state(self.random_state)
        active = np.ones(D, dtype=bool)
        work = cov
        W = np.zeros((L, D))
        ub = np.zeros(L)
        for j in range(L):
            if self.deflation == "remove":
                idx = np.flatnonzero(active)
                sub = cov.restrict(idx)
            else:
                idx = np.arange(D)
                sub = work
            # what is left is round-off (a constant column's centring, a Schur complement of rank 0)
            if idx.size == 0 or not np.any(sub.diag() > 1e-13 * cov.trace()):
                left = "no feature is left" if idx.size == 0 else "what is left has no variance"
                how = "features of earlier components removed" if self.deflation == "remove" else "Schur"
                raise ValueError(
                    f"n_components={L} is too many: after {j} component(s) {left} (deflation="
                    f"{self.deflation!r}, {how}). Lower n_components"
                    + (
                        " or the cardinality, or use deflation='mackey'."
                        if self.deflation == "remove"
                        else "."
                    )
                )
            k = int(min(ks[j], idx.size))
            n_rows = sub.data.shape[0] if sub.data is not None else sub.n_features + 1
            d = min(rank, min(sub.n_features, n_rows - 1))  # few features left after deflation: lower d
            path = spannogram_path(
                sub, [k], rank=d, n_samples=self.n_samples, nonneg=self.nonneg, random_state=rng, net=self.net
            )
            w = np.zeros(D)
            w[idx] = path.components[0]
            W[j] = w
            ub[j] = path.upper_bound[0]
            if self.deflation == "remove":
                active &= w == 0
            else:
                work = work.deflate(w, method="schur")
        self.components_ = W
        self.explained_variance_ = np.atleast_1d(cov.quad(W.T))
        self.upper_bound_ = ub
        self.n_nonzero_ = np.count_nonzero(W, axis=1)
        self.n_features_in_ = D
        return self
