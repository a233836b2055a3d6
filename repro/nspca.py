"""Non-negative sparse PCA (NSPCA) of Zass & Shashua (2006).

NSPCA maximizes, over non-negative ``U`` (``d x k``, the principal vectors as columns),

    F(U) = 1/2 ||U'X||_F^2 - alpha/4 ||I - U'U||_F^2 - beta 1'U1          (Eq. 3)

where the columns of ``X`` (``d x n``) are the zero-mean samples, so that ``||U'X||^2 = tr(U'AU)`` with the
scatter matrix ``A = X X'`` (**not** divided by n: the paper's alpha and beta are on that scale).
``alpha`` trades variance for orthonormality (a large alpha makes the vectors nearly disjoint, Section 2),
``beta`` is an L1 (= sum, as U >= 0) sparsity penalty (Section 3). The maximization is the coordinate
ascent of Algorithm 1: each entry ``u_rs`` in turn is set to the global non-negative maximizer of the
quartic Eq. 4, found among zero and the non-negative real roots of the cubic Eq. 5. The kernels are in
:mod:`repro.kernels.nspca` (their docstring derives Eq. 4's coefficients).

References
----------
R. Zass and A. Shashua. Nonnegative sparse PCA. NIPS 19, 2006.
C. D. Sigg and J. M. Buhmann. Expectation-maximization for sparse and non-negative PCA. ICML 2008,
Section 5.2 (bisection on beta for a target cardinality).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ._threads import blas_limit
from ._validation import (
    check_array,
    check_int,
    check_random_state,
    check_real,
    check_symmetric,
    warn_not_converged,
)
from .kernels.nspca import nspca_fit as _nspca_fit_kernel

__all__ = [
    "NSPCA",
    "CardinalityNotReached",
    "NSPCACardinalityResult",
    "NSPCAResult",
    "nspca",
    "nspca_for_cardinality",
    "nspca_objective",
]

_BLOCK = 32  # rows per deferred AU update in the sweep kernel (any value gives the same iterates)
_REFRESH = 10  # sweeps between recomputations of the caches A U and U'U


class CardinalityNotReached(ValueError):
    """No beta gave a single NSPCA component with exactly the target number of non-zeros.

    Attributes
    ----------
    target : int
    below, above : int or None
        The nearest cardinalities found below and above the target (None if none was seen).
    seen : list of (beta, cardinality)
        Every fit of the search, for diagnosis.
    """

    def __init__(self, target: int, below, above, seen, alpha: float, rtol: float):
        self.target = target
        self.below = below
        self.above = above
        self.seen = seen
        super().__init__(
            f"no beta gives cardinality {target} (alpha={alpha:g}): nearest found {below} below and {above} "
            f"above after bisection to a relative beta interval of {rtol:g}. The cardinality of NSPCA jumps "
            "with beta at this alpha; a larger alpha (Sigg & Buhmann 2008, Sec. 5.2) or more restarts may "
            "reach it."
        )


class NSPCAResult(NamedTuple):
    """Output of :func:`nspca`.

    Attributes
    ----------
    U : ndarray (n_features, n_components)
        The raw maximizer of Eq. 3 (columns are principal vectors, non-negative, not unit norm).
    objective : ndarray (n_iter + 1,)
        Eq. 3 at the start and after each sweep; non-decreasing.
    overlap : ndarray (n_iter + 1,)
        ``||I - U'U||_F`` at the start and after each sweep.
    l0 : ndarray (n_iter + 1,)
        Number of non-zero entries of U at the start and after each sweep.
    n_iter : int
        Sweeps done.
    converged : bool
    """

    U: np.ndarray
    objective: np.ndarray
    overlap: np.ndarray
    l0: np.ndarray
    n_iter: int
    converged: bool

    @property
    def components(self) -> np.ndarray:
        """Unit-norm principal vectors as rows (an all-zero column of U stays a zero row)."""
        return _unit_rows(self.U)


class NSPCACardinalityResult(NamedTuple):
    """Output of :func:`nspca_for_cardinality`.

    Attributes
    ----------
    component : ndarray (n_features,)
        Unit-norm non-negative loading with exactly ``cardinality`` non-zeros.
    u : ndarray (n_features,)
        The raw NSPCA solution (not unit norm).
    beta : float
        The penalty that produced it.
    variance : float
        ``component' C component`` with ``C = A / (n - 1)`` (``C = A`` for a precomputed matrix).
    cardinality : int
    n_fits : int
        NSPCA fits run by the search (all restarts).
    """

    component: np.ndarray
    u: np.ndarray
    beta: float
    variance: float
    cardinality: int
    n_fits: int


# --------------------------------------------------------------------------- helpers
def _unit_rows(U: np.ndarray) -> np.ndarray:
    W = np.array(U.T, dtype=np.float64)
    norms = np.linalg.norm(W, axis=1)
    nz = norms > 0
    W[nz] /= norms[nz, None]
    return W


def _scatter(X, precomputed: bool, name: str = "X"):
    """Return (A, mean, n_samples) with A = Xc' Xc for data rows, or the given matrix when precomputed."""
    if precomputed:
        A = check_symmetric(X, name)
        return np.ascontiguousarray(A), np.zeros(A.shape[0]), None
    X = check_array(X, name, min_samples=2)
    mean = X.mean(axis=0)
    Xc = X - mean
    return np.ascontiguousarray(Xc.T @ Xc), mean, X.shape[0]


def _check_params(alpha, beta, max_iter, tol):
    alpha = check_real(alpha, "alpha", low=0.0, low_inclusive=False)
    beta = check_real(beta, "beta", low=0.0)
    max_iter = check_int(max_iter, "max_iter", low=1)
    tol = check_real(tol, "tol", low=0.0)
    return alpha, beta, max_iter, tol


def _initial_U(init, d: int, k: int, rng: np.random.Generator) -> np.ndarray:
    if isinstance(init, str):
        if init != "random":
            raise ValueError(f"init must be 'random' or an array of shape ({d}, {k}); got {init!r}.")
        # Uniform non-negative entries, columns scaled to unit norm.
        U0 = rng.random((d, k))
        return np.ascontiguousarray(U0 / np.linalg.norm(U0, axis=0))
    U0 = np.array(init, dtype=np.float64)
    if U0.ndim == 1 and k == 1:
        U0 = U0[:, None]
    if U0.shape != (d, k):
        raise ValueError(f"init must have shape (n_features, n_components) = ({d}, {k}); got {U0.shape}.")
    if not np.isfinite(U0).all():
        raise ValueError("init holds NaN or infinite values.")
    if (U0 < 0).any():
        raise ValueError("init must be non-negative (NSPCA keeps U >= 0); got negative entries.")
    return np.ascontiguousarray(U0)


def _fit_scatter(A, k, alpha, beta, max_iter, tol, init, rng, *, warn=True) -> NSPCAResult:
    d = A.shape[0]
    U0 = _initial_U(init, d, k, rng)
    with blas_limit():
        U, obj, ovl, l0, n_iter, status = _nspca_fit_kernel(
            A, U0, float(alpha), float(beta), int(max_iter), float(tol), min(_BLOCK, d), _REFRESH
        )
    if status < 0:
        flat = -status - 1
        where = (
            f"entry u[{flat // k}, {flat % k}] (row, column)" if flat < d * k else "the objective"
        )
        raise FloatingPointError(
            f"NSPCA: {where} became non-finite in sweep {n_iter} (alpha={alpha:g}, beta={beta:g}, "
            f"max |A| = {np.max(np.abs(A)):.3g}); the coefficients of Eq. 4 overflowed. Rescale X or alpha."
        )
    if status == 0 and warn:
        warn_not_converged("NSPCA", n_iter, tol)
    return NSPCAResult(U, obj, ovl, l0, int(n_iter), bool(status == 1))


# --------------------------------------------------------------------------- function form
def nspca(
    X,
    n_components: int = 1,
    *,
    alpha: float,
    beta: float = 0.0,
    max_iter: int = 3000,
    tol: float = 1e-8,
    init="random",
    random_state=None,
    precomputed: bool = False,
) -> NSPCAResult:
    """Non-negative sparse PCA by coordinate ascent (Zass & Shashua 2006, Algorithm 1).

    Wraps the kernel :func:`repro.kernels.nspca.nspca_fit` (sweeps of Eq. 4/5 updates).

    Parameters
    ----------
    X : array_like, shape (n_samples, n_features)
        Data, rows are samples (centred here). With ``precomputed=True``: the ``d x d`` matrix ``A``
        itself (e.g. a correlation matrix), used as given.
    n_components : int
        k, the number of principal vectors, ``1..n_features``.
    alpha : float > 0
        Orthonormality penalty of Eq. 2/3.
    beta : float >= 0
        Sparsity (L1) penalty of Eq. 3.
    max_iter : int
        Maximum number of sweeps over all ``d k`` entries.
    tol : float
        Stop when a sweep raises Eq. 3 by at most ``tol`` times its magnitude (or changes nothing).
    init : 'random' or array (n_features, n_components)
        Start: non-negative uniform entries with unit-norm columns, or a given non-negative U.
    random_state : None, int or numpy Generator
    precomputed : bool
        Whether ``X`` is the scatter matrix ``A``.

    Returns
    -------
    NSPCAResult
        ``U`` (d x k raw), per-sweep ``objective``, ``overlap``, ``l0``, ``n_iter``, ``converged``.

    Raises
    ------
    ValueError
        Bad input (alpha <= 0, beta < 0, n_components outside 1..d, NaN in X or init, ...).
    FloatingPointError
        An update became non-finite (overflow of the quartic's coefficients).

    References
    ----------
    R. Zass and A. Shashua. Nonnegative sparse PCA. NIPS 19, 2006, Eq. 3-5 and Algorithm 1.
    """
    A, _, _ = _scatter(X, precomputed)
    d = A.shape[0]
    k = check_int(n_components, "n_components", low=1, high=d)
    alpha, beta, max_iter, tol = _check_params(alpha, beta, max_iter, tol)
    rng = check_random_state(random_state)
    return _fit_scatter(A, k, alpha, beta, max_iter, tol, init, rng)


def nspca_objective(X, U, *, alpha: float, beta: float = 0.0, precomputed: bool = False) -> float:
    """Eq. 3 evaluated directly: ``1/2 tr(U'AU) - alpha/4 ||I - U'U||_F^2 - beta 1'U1``.

    ``U`` has the principal vectors as columns (n_features, n_components); ``A`` is the scatter matrix of
    the centred ``X`` (or ``X`` itself when ``precomputed``).
    """
    A, _, _ = _scatter(X, precomputed)
    U = np.asarray(U, dtype=np.float64)
    if U.ndim == 1:
        U = U[:, None]
    if U.shape[0] != A.shape[0]:
        raise ValueError(f"U must have {A.shape[0]} rows (n_features); got shape {U.shape}.")
    G = U.T @ U
    E = np.eye(U.shape[1]) - G
    return float(0.5 * np.sum(U * (A @ U)) - 0.25 * alpha * np.sum(E * E) - beta * U.sum())


# --------------------------------------------------------------------------- estimator
class NSPCA(TransformerMixin, BaseEstimator):
    """Non-negative sparse PCA (Zass & Shashua 2006), a scikit-learn estimator.

    Parameters
    ----------
    n_components : int, default 1
    alpha : float > 0
        Orthonormality penalty (Eq. 3). Its scale is that of ``A = Xc'Xc`` (not divided by n).
    beta : float >= 0, default 0
        Sparsity penalty (Eq. 3).
    max_iter : int, default 3000
        Maximum number of sweeps.
    tol : float, default 1e-8
        Relative objective gain per sweep below which the fit stops.
    init : 'random' or array (n_features, n_components)
    random_state : None, int or numpy Generator

    Attributes
    ----------
    components_ : ndarray (n_components, n_features)
        Unit-norm, non-negative principal vectors as rows, sorted by explained variance (descending).
        A column of U driven to zero (possible for a large beta) stays a zero row.
    U_ : ndarray (n_features, n_components)
        The raw maximizer of Eq. 3 (same order as ``components_``); its columns are not unit norm.
    objective_ : ndarray (n_iter_ + 1,)
        Eq. 3 at the start and after each sweep (non-decreasing).
    overlap_ : ndarray (n_iter_ + 1,)
        ``||I - U'U||_F`` per sweep (Fig. 3a of the paper uses the final value).
    l0_ : ndarray (n_iter_ + 1,)
        ``||U||_0`` per sweep (Fig. 3b uses the final value).
    n_iter_ : int
    converged_ : bool
    mean_ : ndarray (n_features,)
    explained_variance_ : ndarray (n_components,)
        ``w' C w`` for each row ``w`` of ``components_``, ``C = Xc'Xc / (n - 1)``.

    Examples
    --------
    >>> import numpy as np
    >>> from repro.nspca import NSPCA
    >>> X = np.random.default_rng(0).normal(size=(50, 6))
    >>> est = NSPCA(n_components=2, alpha=1e3, random_state=0).fit(X)
    >>> est.components_.shape, bool((est.components_ >= 0).all())
    ((2, 6), True)

    References
    ----------
    R. Zass and A. Shashua. Nonnegative sparse PCA. NIPS 19, 2006.
    """

    def __init__(
        self,
        n_components=1,
        *,
        alpha=1.0,
        beta=0.0,
        max_iter=3000,
        tol=1e-8,
        init="random",
        random_state=None,
    ):
        self.n_components = n_components
        self.alpha = alpha
        self.beta = beta
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.random_state = random_state

    def fit(self, X, y=None):
        """Fit on ``X`` (n_samples, n_features); returns self."""
        A, mean, n = _scatter(X, False)
        d = A.shape[0]
        k = check_int(self.n_components, "n_components", low=1, high=d)
        alpha, beta, max_iter, tol = _check_params(self.alpha, self.beta, self.max_iter, self.tol)
        rng = check_random_state(self.random_state)
        res = _fit_scatter(A, k, alpha, beta, max_iter, tol, self.init, rng)
        W = _unit_rows(res.U)
        var = np.einsum("ij,ij->i", W @ A, W) / (n - 1)
        order = np.argsort(-var, kind="stable")
        self.components_ = W[order]
        self.U_ = np.ascontiguousarray(res.U[:, order])
        self.explained_variance_ = var[order]
        self.objective_ = res.objective
        self.overlap_ = res.overlap
        self.l0_ = res.l0
        self.n_iter_ = res.n_iter
        self.converged_ = res.converged
        self.mean_ = mean
        self.n_features_in_ = d
        return self

    def transform(self, X):
        """Project centred ``X`` on the unit-norm principal vectors: ``(X - mean_) @ components_.T``."""
        check_is_fitted(self, "components_")
        X = check_array(X, "X")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features; the model was fitted with {self.n_features_in_}.")
        return (X - self.mean_) @ self.components_.T


# --------------------------------------------------------------------------- target cardinality
def nspca_for_cardinality(
    X,
    target: int,
    *,
    alpha: float,
    n_restarts: int = 10,
    random_state=None,
    rtol: float = 1e-5,
    max_iter: int = 1000,
    tol: float = 1e-8,
    precomputed: bool = False,
) -> NSPCACardinalityResult:
    """One NSPCA component with exactly ``target`` non-zeros, by bisection on beta.

    As Sigg & Buhmann (2008, Sec. 5.2) ran NSPCA: for each of ``n_restarts`` random starts, beta is
    bracketed (``beta = 0`` is the densest; it is doubled until the cardinality falls below ``target``)
    and bisected until the cardinality equals ``target`` or the bracket's relative length is below
    ``rtol`` (1e-5 in their paper). Each fit is warm-started from the solution at the denser end of the
    bracket. Among the restarts that reach the target, the one with the largest variance is returned.

    Parameters
    ----------
    X : array_like (n_samples, n_features), or (d, d) with ``precomputed=True``
    target : int
        Wanted number of non-zero loadings, ``1..n_features``.
    alpha : float > 0
        Orthonormality (here: unit norm) penalty; it decides which cardinalities are reachable.
    n_restarts : int
        Random starts (Sigg & Buhmann used ten).
    random_state : None, int or numpy Generator
    rtol : float
        Relative length of the beta bracket at which the bisection gives up.
    max_iter, tol : see :func:`nspca`.
    precomputed : bool

    Returns
    -------
    NSPCACardinalityResult

    Raises
    ------
    CardinalityNotReached
        When no restart reaches exactly ``target``; carries the nearest cardinalities found.
    """
    A, _, n = _scatter(X, precomputed)
    d = A.shape[0]
    target = check_int(target, "target", low=1, high=d)
    alpha, _, max_iter, tol = _check_params(alpha, 0.0, max_iter, tol)
    n_restarts = check_int(n_restarts, "n_restarts", low=1)
    rtol = check_real(rtol, "rtol", low=0.0, low_inclusive=False)
    rng = check_random_state(random_state)
    scale = 1.0 if n is None else 1.0 / (n - 1)

    def fit(beta, init):
        res = _fit_scatter(A, 1, alpha, beta, max_iter, tol, init, rng, warn=False)
        u = res.U[:, 0]
        return u, int(np.count_nonzero(u))

    seen: list[tuple[float, int]] = []
    best = None
    n_fits = 0
    for _ in range(n_restarts):
        u0 = _initial_U("random", d, 1, rng)
        u_lo, c_lo = fit(0.0, u0)
        n_fits += 1
        seen.append((0.0, c_lo))
        lo, found = 0.0, None
        if c_lo == target:
            found = (u_lo, 0.0)
        elif c_lo > target:
            # bracket: double beta from the gradient scale until the cardinality drops below target
            hi = max(float(np.max(np.abs(A @ u_lo))), 1e-300)
            u_hi, c_hi = fit(hi, u_lo[:, None])
            n_fits += 1
            seen.append((hi, c_hi))
            doublings = 0
            while c_hi > target and doublings < 200:
                lo, u_lo, c_lo = hi, u_hi, c_hi
                hi *= 2.0
                u_hi, c_hi = fit(hi, u_lo[:, None])
                n_fits += 1
                doublings += 1
                seen.append((hi, c_hi))
            if c_hi == target:
                found = (u_hi, hi)
            while found is None and c_hi < target and (hi - lo) > rtol * hi:
                mid = 0.5 * (lo + hi)
                u_mid, c_mid = fit(mid, u_lo[:, None])
                n_fits += 1
                seen.append((mid, c_mid))
                if c_mid == target:
                    found = (u_mid, mid)
                elif c_mid > target:
                    lo, u_lo, c_lo = mid, u_mid, c_mid
                else:
                    hi, c_hi = mid, c_mid
        if found is not None:
            u, beta = found
            w = u / np.linalg.norm(u)
            var = float(w @ A @ w) * scale
            if best is None or var > best[2]:
                best = (w, u, var, beta)
    if best is None:
        cards = np.array([c for _, c in seen])
        below = int(cards[cards < target].max()) if (cards < target).any() else None
        above = int(cards[cards > target].min()) if (cards > target).any() else None
        raise CardinalityNotReached(target, below, above, seen, alpha, rtol)
    w, u, var, beta = best
    return NSPCACardinalityResult(w, u.copy(), float(beta), var, int(np.count_nonzero(u)), n_fits)
