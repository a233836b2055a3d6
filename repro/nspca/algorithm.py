"""Algorithm 1 of Zass & Shashua (2006): the scatter matrix ``A`` of the centred data, the start, and the
coordinate ascent on Eq. 3 (sweeps of the Eq. 4/5 entry updates, kernel
:func:`repro.nspca._kernels.nspca_fit`), with the results and errors of a run."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from sklearn.utils._param_validation import validate_params

from .. import _shortcuts
from .._base import NONNEG_REAL, RealInterval
from .._sparse import centred_scatter
from .._threads import blas_limit
from .._validation import (
    as_float,
    check_array,
    check_bool,
    check_has_variance,
    check_int,
    check_real,
    check_symmetric,
    is_dask,
    is_sparse,
    warn_not_converged,
)
from ._kernels import nspca_fit as _nspca_fit_kernel
from ._kernels import nspca_sweep as _nspca_sweep_kernel

__all__ = [
    "CardinalityNotReached",
    "NSPCACardinalityResult",
    "NSPCAMinAngleResult",
    "NSPCAResult",
    "nspca_sweep",
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
    """Return (A, mean, n_samples) with A = Xc' Xc for data rows (a scipy sparse X: from its stored
    entries and row blocks, :func:`repro._sparse.centred_scatter`), or the given matrix when precomputed."""
    if check_bool(precomputed, "precomputed"):
        A = check_symmetric(X, name, psd=True)
        return np.ascontiguousarray(A), np.zeros(A.shape[0]), None
    if is_dask(X):
        return _dask_scatter(X, name)
    if is_sparse(X):  # from row blocks densified one at a time, never a dense copy of X
        X, n, mean, A = centred_scatter(X, "NSPCA", name)
    else:
        X = check_array(X, name, min_samples=2)
        check_has_variance(X, "NSPCA", name)  # A = 0: every orthonormal U is optimal, nothing to find
        n = X.shape[0]
        with np.errstate(over="ignore", invalid="ignore"):
            mean = X.mean(axis=0)
            Xc = X - mean
            A = Xc.T @ Xc
    if not np.isfinite(A).all():
        top = float(abs(X).max())  # the stored values' of a sparse X
        raise ValueError(
            f"{name} is too large for float64: its scatter matrix Xc'Xc overflows (max |{name}| = "
            f"{top:.3g}). NSPCA is not scale-invariant (alpha and beta are on the scale "
            f"of Xc'Xc), so it cannot rescale silently: divide {name} by a constant c, alpha and beta by c^2."
        )
    return np.ascontiguousarray(A), mean, n


def _dask_scatter(X, name: str = "X"):
    """``(A, mean, n)`` of a Dask array as :func:`_scatter` gives them, formed in one distributed pass
    (:func:`repro._chunked.dask_covariance`: the data stay on the workers, the client holds ``A``)."""
    from .._chunked import _dask_covariance

    n, mean, A = _dask_covariance(X, name)
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
    # deferred and sparse updates of A U, caches renewed every _REFRESH sweeps: exact shortcuts (the same
    # iterates to round-off); off, each update reaches A U at once and the caches are renewed every sweep
    block, refresh, max_sparse = (min(_BLOCK, d), _REFRESH, -1) if _shortcuts.enabled else (1, 1, 0)
    with blas_limit():
        U, obj, ovl, l0, n_iter, status = _nspca_fit_kernel(
            A, U0, float(alpha), float(beta), int(max_iter), float(tol), block, refresh, max_sparse
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


@validate_params(
    {
        "A": [np.ndarray],
        "U": [np.ndarray],
        "AU": [np.ndarray],
        "G": [np.ndarray],
        "alpha": [RealInterval(0, None, closed="neither")],
        "beta": [NONNEG_REAL],
    },
    prefer_skip_nested_validation=True,
)
def nspca_sweep(A, U, AU, G, *, alpha, beta=0.0) -> None:
    """One sweep of Algorithm 1 over every entry of ``U``, in place: one step of :func:`nspca`.

    Public so that a benchmark can time a sweep on its own; it trusts its input (the kernel
    :func:`repro.nspca._kernels.nspca_sweep`, with the deferred updates of ``AU`` in blocks of 32 rows, as
    :func:`nspca` runs it).

    Parameters
    ----------
    A : ndarray, shape (d, d), C-contiguous float64
        The scatter matrix ``Xc'Xc``.
    U : ndarray, shape (d, k), float64
        Non-negative principal vectors as columns; updated in place.
    AU, G : ndarray, shapes (d, k) and (k, k), float64
        The caches ``A @ U`` and ``U'U`` on entry; kept equal to them (to round-off) on exit.
    alpha : float > 0
        Orthonormality penalty of Eq. 3.
    beta : float >= 0
        Sparsity penalty of Eq. 3.

    Examples
    --------
    >>> import numpy as np
    >>> from repro.nspca import nspca_sweep
    >>> A = np.diag([4.0, 1.0])
    >>> U = np.array([[0.5], [0.5]])
    >>> AU, G = A @ U, U.T @ U
    >>> nspca_sweep(A, U, AU, G, alpha=4.0)
    >>> U.ravel().round(6).tolist()  # u_00 -> sqrt(1.75), the maximizer of Eq. 4; then u_10 -> 0
    [1.322876, 0.0]
    """
    _nspca_sweep_kernel(A, U, AU, G, float(alpha), float(beta), min(_BLOCK, A.shape[0]))
