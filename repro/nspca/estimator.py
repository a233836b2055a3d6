"""Non-negative sparse PCA (NSPCA) of Zass & Shashua (2006).

NSPCA maximizes, over non-negative ``U`` (``d x k``, the principal vectors as columns),

    F(U) = 1/2 ||U'X||_F^2 - alpha/4 ||I - U'U||_F^2 - beta 1'U1          (Eq. 3)

where the columns of ``X`` (``d x n``) are the zero-mean samples, so that ``||U'X||^2 = tr(U'AU)`` with the
scatter matrix ``A = X X'`` (**not** divided by n: the paper's alpha and beta are on that scale).
``alpha`` trades variance for orthonormality (a large alpha makes the vectors nearly disjoint, Section 2),
``beta`` is an L1 (= sum, as U >= 0) sparsity penalty (Section 3). The maximization is the coordinate
ascent of Algorithm 1: each entry ``u_rs`` in turn is set to the global non-negative maximizer of the
quartic Eq. 4, found among zero and the non-negative real roots of the cubic Eq. 5. The kernels are in
:mod:`repro.nspca._kernels` (their docstring derives Eq. 4's coefficients).

References
----------
R. Zass and A. Shashua. Nonnegative sparse PCA. NIPS 19, 2006.
C. D. Sigg and J. M. Buhmann. Expectation-maximization for sparse and non-negative PCA. ICML 2008,
Section 5.2 (bisection on beta for a target cardinality).
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import StrOptions

from .._base import NONNEG_REAL, POSITIVE_INT, RANDOM_STATE, ProjectionMixin, RealInterval
from .._threads import blas_limit
from .._validation import (
    as_float,
    check_array,
    check_bool,
    check_features,
    check_has_variance,
    check_int,
    check_n_components,
    check_random_state,
    check_real,
    check_symmetric,
    is_dask,
    warn_not_converged,
)
from ..metrics import min_angle_deg as _min_angle_deg
from ._kernels import nspca_fit as _nspca_fit_kernel

__all__ = [
    "NSPCA",
    "CardinalityNotReached",
    "NSPCACardinalityResult",
    "NSPCAMinAngleResult",
    "NSPCAResult",
    "nspca",
    "nspca_for_cardinality",
    "nspca_for_min_angle",
    "nspca_objective",
]

_BLOCK = 32  # rows per deferred AU update in the sweep kernel (any value gives the same iterates)
_REFRESH = 10  # sweeps between recomputations of the caches A U and U'U
_MAX_DOUBLINGS = 200  # doublings of beta per restart while bracketing a target cardinality


class NSPCAOverflowError(FloatingPointError, ValueError):
    """The coefficients of Eq. 4 overflowed: ``X`` (or ``alpha``) is too large for float64.

    A ``FloatingPointError`` (what it always was) and a ``ValueError`` (what every other bad-input
    error of this library is: the fix is to rescale the input), so either ``except`` clause catches it.
    """


class CardinalityNotReached(ValueError):
    """No beta gave NSPCA components with exactly the target number of non-zeros.

    Parameters
    ----------
    target : int
        The wanted number of non-zeros.
    below, above : int or None
        The nearest cardinalities found below and above ``target``.
    seen : list of (beta, cardinality)
        Every fit of the search.
    alpha : float
        The orthonormality penalty of the search (for the message).
    rtol : float
        The relative bracket length at which the bisection stopped (for the message).
    n_components : int, default 1
        Components fitted jointly (for the message).
    closest : NSPCACardinalityResult, optional
        The nearest fit.

    Attributes
    ----------
    target : int
        The wanted number of non-zeros of ``U`` (all ``n_components`` columns together).
    below, above : int or None
        The nearest cardinalities found below and above the target (None if none was seen).
    seen : list of (beta, cardinality)
        Every fit of the search, for diagnosis.
    closest : NSPCACardinalityResult or None
        The fit :func:`nspca_for_cardinality` returns with ``exact=False``: the nearest cardinality, then the
        best score (its ``exact`` field is False).

    See Also
    --------
    nspca_for_cardinality

    Examples
    --------
    >>> import numpy as np
    >>> from repro import CardinalityNotReached, nspca_for_cardinality
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((60, 8)) + np.linspace(0, 2, 8) * rng.standard_normal((60, 1))
    >>> try:
    ...     nspca_for_cardinality(X, 3, alpha=1e3, random_state=0)
    ... except CardinalityNotReached as err:
    ...     print(err.target, err.below, err.above, err.closest.cardinality)
    3 2 4 4
    """

    def __init__(
        self,
        target: int,
        below,
        above,
        seen,
        alpha: float,
        rtol: float,
        *,
        n_components: int = 1,
        closest=None,
    ):
        self.target = target
        self.below = below
        self.above = above
        self.seen = seen
        self.closest = closest
        what = (
            f"cardinality {target}"
            if n_components == 1
            else f"a joint cardinality ||U||_0 = {target} over {n_components} components"
        )
        super().__init__(
            f"no beta gives {what} (alpha={alpha:g}): nearest found {below} below and {above} "
            f"above after bisection to a relative beta interval of {rtol:g}. The cardinality of NSPCA jumps "
            "with beta at this alpha; a larger alpha (Sigg & Buhmann 2008, Sec. 5.2) or more restarts may "
            "reach it (exact=False returns the nearest)."
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
    components : ndarray (n_components, n_features)
        Unit-norm non-negative loadings as rows, sorted by explained variance (descending); a column of
        ``U`` driven to zero stays a zero row (last).
    U : ndarray (n_features, n_components)
        The raw NSPCA solution (columns not unit norm), columns in the order of ``components``.
    beta : float
        The penalty that produced it.
    variance : float
        ``sum(explained_variance)``; for one component its variance ``w' C w`` (for several, non-orthogonal
        components this sum double counts shared directions: use :func:`repro.metrics.adjusted_variance`).
    cardinality : int
        ``||U||_0``, the non-zeros of all components together.
    n_fits : int
        NSPCA fits run by the search (all restarts).
    explained_variance : ndarray (n_components,)
        ``w' C w`` for each row of ``components``, ``C = A / (n - 1)`` (``C = A`` for a precomputed matrix).
    target : int
        The wanted cardinality.
    exact : bool
        Whether ``cardinality == target``; False only with ``exact=False`` when the target was not reached.
    n_iter : int
        Sweeps of the returned fit.
    """

    components: np.ndarray
    U: np.ndarray
    beta: float
    variance: float
    cardinality: int
    n_fits: int
    explained_variance: np.ndarray
    target: int
    exact: bool
    n_iter: int

    @property
    def component(self) -> np.ndarray:
        """The loading ``(n_features,)`` of a one-component search (``components[0]``)."""
        if len(self.components) != 1:
            raise AttributeError(
                f"'component' is for one component; this result has {len(self.components)}: use 'components'."
            )
        return self.components[0]

    @property
    def u(self) -> np.ndarray:
        """The raw solution ``(n_features,)`` of a one-component search (``U[:, 0]``)."""
        if self.U.shape[1] != 1:
            raise AttributeError(f"'u' is for one component; this result has {self.U.shape[1]}: use 'U'.")
        return self.U[:, 0]


class NSPCAMinAngleResult(NamedTuple):
    """Output of :func:`nspca_for_min_angle`.

    Attributes
    ----------
    components : ndarray (n_components, n_features)
        Unit-norm non-negative loadings as rows, sorted by explained variance (descending).
    U : ndarray (n_features, n_components)
        The raw NSPCA solution, columns in the order of ``components``.
    alpha : float
        The orthonormality penalty that produced it: the smallest alpha of the search that meets the angle.
    angle : float
        Smallest angle between two components, in degrees (:func:`repro.metrics.min_angle_deg`).
    reached : bool
        Whether ``angle >= min_angle_deg``; False only with ``strict=False``.
    explained_variance : ndarray (n_components,)
        ``w' C w`` for each row of ``components``, ``C = A / (n - 1)`` (``C = A`` for a precomputed matrix).
    n_fits : int
        NSPCA fits run by the search.
    n_iter : int
        Sweeps of the returned fit.
    path : ndarray (n_fits, 2)
        ``(alpha, angle)`` of every fit, in the order they were run.
    """

    components: np.ndarray
    U: np.ndarray
    alpha: float
    angle: float
    reached: bool
    explained_variance: np.ndarray
    n_fits: int
    n_iter: int
    path: np.ndarray


# --------------------------------------------------------------------------- helpers
def _unit_rows(U: np.ndarray) -> np.ndarray:
    W = np.array(U.T, dtype=np.float64)
    norms = np.linalg.norm(W, axis=1)
    nz = norms > 0
    W[nz] /= norms[nz, None]
    return W


def _scatter(X, precomputed: bool, name: str = "X"):
    """Return (A, mean, n_samples) with A = Xc' Xc for data rows, or the given matrix when precomputed."""
    if check_bool(precomputed, "precomputed"):
        A = check_symmetric(X, name, psd=True)
        return np.ascontiguousarray(A), np.zeros(A.shape[0]), None
    if is_dask(X):
        return _dask_scatter(X, name)
    X = check_array(X, name, min_samples=2)
    check_has_variance(X, "NSPCA", name)  # A = 0: every orthonormal U is optimal, nothing to find
    with np.errstate(over="ignore", invalid="ignore"):
        mean = X.mean(axis=0)
        Xc = X - mean
        A = Xc.T @ Xc
    if not np.isfinite(A).all():
        raise ValueError(
            f"{name} is too large for float64: its scatter matrix Xc'Xc overflows (max |{name}| = "
            f"{float(np.abs(X).max()):.3g}). NSPCA is not scale-invariant (alpha and beta are on the scale "
            f"of Xc'Xc), so it cannot rescale silently: divide {name} by a constant c, alpha and beta by c^2."
        )
    return np.ascontiguousarray(A), mean, X.shape[0]


def _dask_scatter(X, name: str = "X"):
    """``(A, mean, n)`` of a Dask array as :func:`_scatter` gives them, formed in one distributed pass
    (:func:`repro._chunked.dask_covariance`: the data stay on the workers, the client holds ``A``)."""
    from .._chunked import dask_covariance

    n, mean, A = dask_covariance(X, name)
    if not np.any(np.diag(A) > 0):
        raise ValueError(
            f"{name} has no variance (every column is constant, e.g. all zeros), so NSPCA has no "
            "component to find; check the data."
        )
    return np.ascontiguousarray(A), mean, n


def _check_params(alpha, beta, max_iter, tol):
    alpha = check_real(alpha, "alpha", low=0.0, low_inclusive=False)
    beta = check_real(beta, "beta", low=0.0)
    # The kernel counts in int64: a larger bound is "no bound" and is capped (never reached).
    max_iter = min(check_int(max_iter, "max_iter", low=1), np.iinfo(np.int64).max - 1)
    tol = check_real(tol, "tol", low=0.0)
    return alpha, beta, max_iter, tol


def _initial_U(init, d: int, k: int, rng: np.random.Generator) -> np.ndarray:
    if isinstance(init, str):
        if init != "random":
            raise ValueError(f"init must be 'random' or an array of shape ({d}, {k}); got {init!r}.")
        # Uniform non-negative entries, columns scaled to unit norm.
        U0 = rng.random((d, k))
        return np.ascontiguousarray(U0 / np.linalg.norm(U0, axis=0))
    U0 = np.array(as_float(init, "init"))
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
        where = f"entry u[{flat // k}, {flat % k}] (row, column)" if flat < d * k else "the objective"
        raise NSPCAOverflowError(
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

    Wraps the kernel :func:`repro.nspca._kernels.nspca_fit` (sweeps of Eq. 4/5 updates).

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
        Seed of the random start.
    precomputed : bool
        Whether ``X`` is the scatter matrix ``A``.

    Returns
    -------
    NSPCAResult
        ``U`` (d x k raw), per-sweep ``objective``, ``overlap``, ``l0``, ``n_iter``, ``converged``;
        ``components`` gives the unit-norm rows.

    Raises
    ------
    ValueError
        Bad input (alpha <= 0, beta < 0, n_components outside 1..d, NaN in X or init, ...).
    FloatingPointError
        An update became non-finite (overflow of the quartic's coefficients).

    See Also
    --------
    NSPCA : the estimator form.
    nspca_objective : Eq. 3 evaluated directly.
    nspca_for_cardinality, nspca_for_min_angle : searches over beta and alpha.

    References
    ----------
    R. Zass and A. Shashua. Nonnegative sparse PCA. NIPS 19, 2006, Eq. 3-5 and Algorithm 1.

    Examples
    --------
    >>> import numpy as np
    >>> from repro import nspca
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((60, 8)) + np.linspace(0, 2, 8) * rng.standard_normal((60, 1))
    >>> res = nspca(X, 2, alpha=1e3, beta=1.0, random_state=0)
    >>> res.U.shape, res.converged, bool((res.U >= 0).all())
    ((8, 2), True, True)
    >>> bool(np.all(np.diff(res.objective) >= 0))  # coordinate ascent never lowers Eq. 3
    True
    """
    A, _, n = _scatter(X, precomputed)
    d = A.shape[0]
    k = check_n_components(n_components, n, d)
    alpha, beta, max_iter, tol = _check_params(alpha, beta, max_iter, tol)
    rng = check_random_state(random_state)
    return _fit_scatter(A, k, alpha, beta, max_iter, tol, init, rng)


def nspca_objective(X, U, *, alpha: float, beta: float = 0.0, precomputed: bool = False) -> float:
    """Eq. 3 evaluated directly: ``1/2 tr(U'AU) - alpha/4 ||I - U'U||_F^2 - beta 1'U1``.

    ``U`` has the principal vectors as columns (n_features, n_components); ``A`` is the scatter matrix of
    the centred ``X`` (or ``X`` itself when ``precomputed``).

    Parameters
    ----------
    X : array_like, shape (n_samples, n_features), or (d, d) with ``precomputed=True``
        Data (rows are samples, centred here), or the scatter matrix ``A`` itself.
    U : array_like, shape (n_features, n_components) or (n_features,)
        The principal vectors as columns (not necessarily unit norm).
    alpha : float
        Orthonormality penalty.
    beta : float, default 0.0
        Sparsity penalty.
    precomputed : bool, default False
        Whether ``X`` is the scatter matrix ``A``.

    Returns
    -------
    float
        The value of Eq. 3 at ``U``.

    See Also
    --------
    nspca : its ``objective`` traces this value sweep by sweep.

    References
    ----------
    R. Zass and A. Shashua. Nonnegative sparse PCA. NIPS 19, 2006, Eq. 3.

    Examples
    --------
    >>> import numpy as np
    >>> from repro import nspca_objective
    >>> A = np.diag([4.0, 1.0])
    >>> nspca_objective(A, np.array([1.0, 0.0]), alpha=10.0, beta=0.5, precomputed=True)  # 2 - 0 - 0.5
    1.5
    """
    A, _, _ = _scatter(X, precomputed)
    U = as_float(U, "U")
    if U.ndim == 1:
        U = U[:, None]
    if U.shape[0] != A.shape[0]:
        raise ValueError(f"U must have {A.shape[0]} rows (n_features); got shape {U.shape}.")
    G = U.T @ U
    E = np.eye(U.shape[1]) - G
    return float(0.5 * np.sum(U * (A @ U)) - 0.25 * alpha * np.sum(E * E) - beta * U.sum())


# --------------------------------------------------------------------------- estimator
class NSPCA(ProjectionMixin, BaseEstimator):
    """Non-negative sparse PCA (Zass & Shashua 2006), a scikit-learn estimator.

    Parameters
    ----------
    n_components : int, default 1
        k, the number of principal vectors fitted jointly, ``1..n_features``.
    alpha : float > 0, default 1.0
        Orthonormality penalty (Eq. 3). Its scale is that of ``A = Xc'Xc`` (not divided by n).
    beta : float >= 0, default 0
        Sparsity penalty (Eq. 3).
    max_iter : int, default 3000
        Maximum number of sweeps.
    tol : float, default 1e-8
        Relative objective gain per sweep below which the fit stops.
    init : 'random' or array (n_features, n_components)
        Start: non-negative uniform entries with unit-norm columns, or a given non-negative U.
    random_state : None, int or numpy Generator
        Seed of the random start.

    Attributes
    ----------
    components_ : ndarray (n_components, n_features)
        Unit-norm, non-negative principal vectors as rows, sorted by explained variance (descending).
        A column of U driven to zero (possible for a large beta) stays a zero row.
    U_ : ndarray (n_features, n_components)
        The raw maximizer of Eq. 3 (same order as ``components_``); its columns are not unit norm.
    objective_ : ndarray, shape (``n_iter_ + 1``,)
        Eq. 3 at the start and after each sweep (non-decreasing).
    overlap_ : ndarray, shape (``n_iter_ + 1``,)
        ``||I - U'U||_F`` per sweep (Fig. 3a of the paper uses the final value).
    l0_ : ndarray, shape (``n_iter_ + 1``,)
        ``||U||_0`` per sweep (Fig. 3b uses the final value).
    n_iter_ : int
        Sweeps done.
    converged_ : bool
        Whether the relative gain fell below ``tol`` before ``max_iter`` sweeps.
    mean_ : ndarray (n_features,)
        Column means of the training data (subtracted by ``transform``).
    explained_variance_ : ndarray (n_components,)
        ``w' C w`` for each row ``w`` of ``components_``, ``C = Xc'Xc / (n - 1)``.
    n_features_in_ : int
        Number of features seen by ``fit``.
    feature_names_in_ : ndarray of str, shape ``(n_features_in_,)``
        Column names of ``X`` when ``fit`` got a DataFrame with string column names (only then);
        ``transform`` and ``score`` then refuse a DataFrame whose columns differ or are reordered.

    See Also
    --------
    nspca : the function form (raw ``U`` and per-sweep traces).
    nspca_for_cardinality : beta for an exact number of non-zeros.
    repro.EMSparsePCA : non-negative sparse PCA with a cardinality instead of a penalty.

    References
    ----------
    R. Zass and A. Shashua. Nonnegative sparse PCA. NIPS 19, 2006, Eq. 3 and Algorithm 1.

    Examples
    --------
    >>> import numpy as np
    >>> from repro.nspca import NSPCA
    >>> X = np.random.default_rng(0).normal(size=(50, 6))
    >>> est = NSPCA(n_components=2, alpha=1e3, random_state=0).fit(X)
    >>> est.components_.shape, bool((est.components_ >= 0).all())
    ((2, 6), True)
    >>> est.transform(X).shape
    (50, 2)
    """

    _parameter_constraints: ClassVar[dict] = {
        "n_components": [POSITIVE_INT],
        "alpha": [RealInterval(0, None, closed="neither")],
        "beta": [NONNEG_REAL],
        "max_iter": [POSITIVE_INT],
        "tol": [NONNEG_REAL],
        "init": [StrOptions({"random"}), "array-like"],
        "random_state": RANDOM_STATE,
    }

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

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit on ``X`` (n_samples, n_features); returns self.

        A ``dask.array`` stays on the workers (or wherever its scheduler keeps it): one distributed pass
        forms its column means and its ``p x p`` scatter matrix ``A = Xc'Xc``
        (:func:`repro._chunked.dask_covariance`), and the client holds only those, then fits on ``A``
        as for in-memory data. ``p`` is limited by ``repro._chunked.CLIENT_LIMIT_BYTES`` (a clear error
        above it).

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
        A, mean, n = _scatter(X, False)
        d = A.shape[0]
        k = check_n_components(self.n_components, n, d)
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


# --------------------------------------------------------------------------- searches over beta and alpha
def _ranked(U: np.ndarray, A: np.ndarray, scale: float):
    """Unit-norm columns of ``U`` as rows, their unscaled variances ``w'Aw``, and the variance order.

    Each column is divided by its own (1-D) norm; a zero column stays a zero row.
    """
    W = np.array(U.T, dtype=np.float64)
    for j in range(W.shape[0]):
        norm = np.linalg.norm(U[:, j])
        if norm > 0:
            W[j] = U[:, j] / norm
    var = np.array([float(w @ A @ w) for w in W])
    order = np.argsort(-var, kind="stable")
    return W[order], np.ascontiguousarray(U[:, order]), var[order] * scale


def nspca_for_cardinality(
    X,
    target: int,
    *,
    alpha: float,
    n_components: int = 1,
    n_restarts: int = 10,
    random_state=None,
    rtol: float = 1e-5,
    max_iter: int = 1000,
    tol: float = 1e-8,
    exact: bool = True,
    score=None,
    beta_start: float = 1.0,
    precomputed: bool = False,
) -> NSPCACardinalityResult:
    """NSPCA with exactly ``target`` non-zeros in ``U`` (all components together), by bisection on beta.

    As Sigg & Buhmann (2008, Sec. 5.2) ran NSPCA: for each of ``n_restarts`` random starts, beta is
    bracketed (``beta = 0`` is the densest; from ``beta_start`` times the gradient scale ``max |A U_0|`` of
    the ``beta = 0`` solution ``U_0``, beta is doubled until the cardinality falls below ``target``, at most
    200 times) and bisected until the cardinality equals ``target`` or the bracket's relative length is
    below ``rtol`` (1e-5 in their paper). Each fit is warm-started from the solution at the denser end of
    the bracket. With ``n_components > 1`` the target is the joint cardinality ``||U||_0`` (Sigg & Buhmann,
    Fig. 3 middle: ten components, 200 non-zeros).

    Every fit of the search is a candidate; the one kept has the cardinality nearest to ``target`` and,
    among those, the largest ``score`` (default: the summed variance ``sum_j w_j' C w_j`` of its unit-norm
    columns; for one component the variance). The cardinality of NSPCA jumps with beta, so ``target``
    may be unreachable at a given alpha: then ``exact=True`` raises :class:`CardinalityNotReached` and
    ``exact=False`` returns the nearest fit with ``exact=False`` in the result.

    Round-off: the method is sensitive here. Where ``target`` is unreachable the bisection
    closes on a jump of the cardinality in beta, and the cardinalities of its last fits either side
    (``CardinalityNotReached.below`` / ``above``) are those of fits a relative ``rtol`` from the jump,
    each the end of up to ``max_iter`` coordinate-ascent sweeps whose summation order (the BLAS kernel,
    the per-block ``AU`` update) moves them: they are counts decided near round-off, and compare between
    machines only loosely (asteris2014_fig4 on two environments: only these diagnostics of cardinalities
    NSPCA misses moved, never whether a target was reached). A single coordinate's choice between 0 and
    a local maximum of equal value is a tie with a stated rule (:func:`repro.nspca._kernels.nspca_argmax`).

    Parameters
    ----------
    X : array_like (n_samples, n_features), or (d, d) with ``precomputed=True``
        Data (rows are samples, centred here), or the scatter matrix ``A`` itself.
    target : int
        Wanted number of non-zero entries of ``U``, ``1..n_features * n_components``.
    alpha : float > 0
        Orthonormality penalty of Eq. 3 (for one component: a unit-norm penalty); it decides which
        cardinalities are reachable.
    n_components : int
        k, the number of principal vectors fitted jointly, ``1..n_features``.
    n_restarts : int
        Random starts (Sigg & Buhmann used ten).
    random_state : None, int or numpy Generator
        Seed of the random starts.
    rtol : float > 0
        Relative length of the beta bracket at which the bisection gives up.
    max_iter, tol : int, float
        As in :func:`nspca`.
    exact : bool
        Whether a search that does not reach ``target`` raises (True) or returns the nearest fit (False).
    score : callable or None
        ``score(U) -> float`` on the raw ``U`` (n_features, n_components), larger is better; it chooses
        among fits of the same cardinality (e.g. an adjusted variance for several components).
    beta_start : float > 0
        First positive beta tried, relative to the gradient scale ``max |A U_0|``.
    precomputed : bool
        Whether ``X`` is the scatter matrix ``A``.

    Returns
    -------
    NSPCACardinalityResult
        ``components`` (k, d) ranked by variance, ``U``, ``beta``, ``variance``, ``cardinality``,
        ``exact``, ... (``component`` and ``u`` for one component).

    Raises
    ------
    CardinalityNotReached
        With ``exact=True``, when no fit reaches exactly ``target``; carries the nearest cardinalities
        found and the nearest fit (``closest``).
    ValueError
        Bad input (target outside ``1..d k``, alpha <= 0, rtol <= 0, ...).

    See Also
    --------
    nspca, CardinalityNotReached, repro.EMSparsePCA

    References
    ----------
    R. Zass and A. Shashua. Nonnegative sparse PCA. NIPS 19, 2006.
    C. D. Sigg and J. M. Buhmann. Expectation-maximization for sparse and non-negative PCA. ICML 2008,
    Sec. 5.2.

    Examples
    --------
    >>> import numpy as np
    >>> from repro import nspca_for_cardinality
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((60, 8)) + np.linspace(0, 2, 8) * rng.standard_normal((60, 1))
    >>> res = nspca_for_cardinality(X, 2, alpha=1e3, random_state=0)
    >>> res.cardinality, res.exact, np.flatnonzero(res.component).tolist()
    (2, True, [6, 7])
    """
    A, _, n = _scatter(X, precomputed)
    d = A.shape[0]
    k = check_n_components(n_components, n, d)
    target = check_int(target, "target", low=1, high=d * k)
    alpha, _, max_iter, tol = _check_params(alpha, 0.0, max_iter, tol)
    n_restarts = check_int(n_restarts, "n_restarts", low=1)
    rtol = check_real(rtol, "rtol", low=0.0, low_inclusive=False)
    beta_start = check_real(beta_start, "beta_start", low=0.0, low_inclusive=False)
    exact = check_bool(exact, "exact")
    if score is not None and not callable(score):
        raise ValueError(f"score must be None or a callable score(U) -> float; got {score!r}.")
    rng = check_random_state(random_state)
    scale = 1.0 if n is None else 1.0 / (n - 1)

    seen: list[tuple[float, int]] = []
    best = None  # (key, U, beta, n_iter), key = (|cardinality - target|, -score)

    def fit(beta, init):
        nonlocal best
        res = _fit_scatter(A, k, alpha, beta, max_iter, tol, init, rng, warn=False)
        c = int(np.count_nonzero(res.U))
        seen.append((float(beta), c))
        s = float(score(res.U)) if score is not None else float(_ranked(res.U, A, 1.0)[2].sum())
        key = (abs(c - target), -s)
        if best is None or key < best[0]:
            best = (key, res.U.copy(), float(beta), int(res.n_iter))
        return res.U, c

    for _ in range(n_restarts):
        U_lo, c_lo = fit(0.0, _initial_U("random", d, k, rng))
        if c_lo <= target:  # beta = 0 is the densest: reached, or unreachable from this start
            continue
        lo = 0.0
        hi = max(beta_start * float(np.max(np.abs(A @ U_lo))), 1e-300)
        U_hi, c_hi = fit(hi, U_lo)
        doublings = 0
        while c_hi > target and doublings < _MAX_DOUBLINGS:
            lo, U_lo = hi, U_hi
            hi *= 2.0
            U_hi, c_hi = fit(hi, U_lo)
            doublings += 1
        while c_hi < target and (hi - lo) > rtol * hi:
            mid = 0.5 * (lo + hi)
            U_mid, c_mid = fit(mid, U_lo)
            if c_mid == target:
                break
            if c_mid > target:
                lo, U_lo = mid, U_mid
            else:
                hi, c_hi = mid, c_mid

    _, U, beta, n_iter = best
    W, U, var = _ranked(U, A, scale)
    c = int(np.count_nonzero(U))
    result = NSPCACardinalityResult(
        W, U, beta, float(var.sum()), c, len(seen), var, target, c == target, n_iter
    )
    if exact and c != target:
        cards = np.array([c for _, c in seen])
        below = int(cards[cards < target].max()) if (cards < target).any() else None
        above = int(cards[cards > target].min()) if (cards > target).any() else None
        raise CardinalityNotReached(target, below, above, seen, alpha, rtol, n_components=k, closest=result)
    return result


def nspca_for_min_angle(
    X,
    n_components: int,
    min_angle_deg: float,
    *,
    beta: float = 0.0,
    log10_alpha_range=(3.0, 10.0),
    ratio: float = 1.25,
    random_state=None,
    max_iter: int = 3000,
    tol: float = 1e-8,
    strict: bool = True,
    precomputed: bool = False,
) -> NSPCAMinAngleResult:
    """NSPCA with the smallest ``alpha`` whose components are at least ``min_angle_deg`` degrees apart.

    ``alpha`` trades variance for orthogonality (Zass & Shashua 2006, Sec. 2); Sigg & Buhmann (2008,
    Sec. 5.2, Fig. 3 right) compare quasi-orthogonal components at a minimum angle. The search tries the
    decades ``alpha = 10^e`` for ``e`` from ``log10_alpha_range[0]`` in steps of 1 up to
    ``log10_alpha_range[1]``, stopping at the first that meets the angle, then bisects in ``log(alpha)``
    (geometric means) between it and the decade below until the bracket's ratio is at most ``ratio``.
    Every fit starts from the same random ``U`` (drawn once from ``random_state``), so the angle varies
    with ``alpha`` only. The returned alpha is the smallest alpha of the search that meets the angle, and
    every alpha tried below it does not; if the lowest decade already meets it, that decade is returned
    (widen the range downwards to search further).

    Parameters
    ----------
    X : array_like (n_samples, n_features), or (d, d) with ``precomputed=True``
        Data (rows are samples, centred here), or the scatter matrix ``A`` itself.
    n_components : int
        k, ``2..n_features``.
    min_angle_deg : float
        Wanted smallest angle between two components, in ``(0, 90]`` degrees.
    beta : float >= 0
        Sparsity penalty, fixed during the search (0 in Sigg & Buhmann's Fig. 3 right).
    log10_alpha_range : (float, float)
        Lowest and highest decade exponent of the search.
    ratio : float > 1
        Bisection stops when the bracket ``hi / lo`` is at most this.
    random_state : None, int or numpy Generator
        Seed of the one random start shared by every fit.
    max_iter, tol : int, float
        As in :func:`nspca`.
    strict : bool
        Whether a search whose largest alpha misses the angle raises (True) or returns that fit with
        ``reached=False`` (False).
    precomputed : bool
        Whether ``X`` is the scatter matrix ``A``.

    Returns
    -------
    NSPCAMinAngleResult
        ``components`` (k, d) ranked by variance, ``U``, ``alpha``, ``angle``, ``reached``, ``path``, ...

    Raises
    ------
    ValueError
        Bad input, or (``strict=True``) no alpha of the range meets the angle.

    See Also
    --------
    nspca, repro.metrics.min_angle_deg

    References
    ----------
    R. Zass and A. Shashua. Nonnegative sparse PCA. NIPS 19, 2006, Sec. 2.
    C. D. Sigg and J. M. Buhmann. Expectation-maximization for sparse and non-negative PCA. ICML 2008,
    Sec. 5.2.

    Examples
    --------
    >>> import numpy as np
    >>> from repro import nspca_for_min_angle
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((60, 8)) + np.linspace(0, 2, 8) * rng.standard_normal((60, 1))
    >>> res = nspca_for_min_angle(X, 2, 80.0, random_state=0)
    >>> res.reached, bool(res.angle >= 80.0), res.components.shape
    (True, True, (2, 8))
    """
    A, _, n = _scatter(X, precomputed)
    d = A.shape[0]
    if d < 2:
        raise ValueError("X must have at least 2 features for an angle between components.")
    k = check_n_components(n_components, n, d)
    if k < 2:
        raise ValueError(f"n_components must be at least 2 for an angle between components; got {k}.")
    min_angle = check_real(min_angle_deg, "min_angle_deg", low=0.0, high=90.0, low_inclusive=False)
    _, beta, max_iter, tol = _check_params(1.0, beta, max_iter, tol)
    try:
        e_lo, e_hi = log10_alpha_range
    except (TypeError, ValueError):
        raise ValueError(
            f"log10_alpha_range must be a pair (low, high) of decade exponents; got {log10_alpha_range!r}."
        ) from None
    e_lo = check_real(e_lo, "log10_alpha_range[0]", low=-300.0, high=300.0)
    e_hi = check_real(e_hi, "log10_alpha_range[1]", low=e_lo, high=300.0)
    ratio = check_real(ratio, "ratio", low=1.0, low_inclusive=False)
    strict = check_bool(strict, "strict")
    rng = check_random_state(random_state)
    scale = 1.0 if n is None else 1.0 / (n - 1)
    seed = int(rng.integers(2**31 - 1))
    U0 = _initial_U("random", d, k, np.random.default_rng(seed))
    path: list[tuple[float, float]] = []

    def run(alpha):
        res = _fit_scatter(A, k, float(alpha), beta, max_iter, tol, U0, rng, warn=False)
        ang = _min_angle_deg(res.U.T)
        path.append((float(alpha), ang))
        return res, ang

    def result(res, alpha, ang, reached):
        W, U, var = _ranked(res.U, A, scale)
        return NSPCAMinAngleResult(
            W, U, float(alpha), float(ang), reached, var, len(path), int(res.n_iter), np.array(path)
        )

    lo, hi = None, None
    for e in np.arange(e_lo, e_hi + 0.5):
        alpha = 10.0**e
        res, ang = run(alpha)
        if ang >= min_angle:
            hi, hi_res, hi_ang = alpha, res, ang
            break
        lo = alpha
    if hi is None:
        if strict:
            raise ValueError(
                f"NSPCA components are at most {max(a for _, a in path):.3g} degrees apart for alpha up to "
                f"{path[-1][0]:g}, short of min_angle_deg={min_angle:g}; raise log10_alpha_range[1] "
                "(or lower beta)."
            )
        return result(res, alpha, ang, False)
    while lo is not None and hi / lo > ratio:
        mid = float(np.sqrt(lo * hi))
        res, ang = run(mid)
        if ang >= min_angle:
            hi, hi_res, hi_ang = mid, res, ang
        else:
            lo = mid
    return result(hi_res, hi, hi_ang, True)
