"""The door of NSPCA (Zass & Shashua 2006): the function form :func:`nspca`, Eq. 3 evaluated by
:func:`nspca_objective`, and the estimator :class:`NSPCA`."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import StrOptions, validate_params

from .._base import NONNEG_REAL, POSITIVE_INT, POSITIVE_REAL, RANDOM_STATE, ProjectionMixin, RealInterval
from .._validation import (
    as_float,
    check_features,
    check_n_components,
    check_random_state,
)
from .algorithm import NSPCAResult, _check_params, _fit_scatter, _scatter, _unit_rows

__all__ = ["NSPCA", "nspca", "nspca_objective"]

#: The penalties of Eq. 3 as scikit-learn's parameter validation checks them.
_PENALTIES = {"alpha": [POSITIVE_REAL], "beta": [NONNEG_REAL]}


# --------------------------------------------------------------------------- function form
@validate_params(
    {
        "X": ["array-like", "sparse matrix"],
        "n_components": [POSITIVE_INT],
        **_PENALTIES,
        "max_iter": [POSITIVE_INT],
        "tol": [NONNEG_REAL],
        "init": [StrOptions({"random"}), "array-like"],
        "random_state": RANDOM_STATE,
        "precomputed": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
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
    X : array_like or scipy sparse matrix, shape (n_samples, n_features)
        Data, rows are samples (centred here; a sparse ``X`` implicitly, never densified, as in
        :meth:`repro.NSPCA.fit`). With ``precomputed=True``: the ``d x d`` matrix ``A`` itself (e.g. a
        correlation matrix), used as given.
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


@validate_params(
    {"X": ["array-like", "sparse matrix"], "U": ["array-like"], **_PENALTIES, "precomputed": ["boolean"]},
    prefer_skip_nested_validation=True,
)
def nspca_objective(X, U, *, alpha: float, beta: float = 0.0, precomputed: bool = False) -> float:
    """Eq. 3 evaluated directly: ``1/2 tr(U'AU) - alpha/4 ||I - U'U||_F^2 - beta 1'U1``.

    ``U`` has the principal vectors as columns (n_features, n_components); ``A`` is the scatter matrix of
    the centred ``X`` (or ``X`` itself when ``precomputed``).

    Parameters
    ----------
    X : array_like or scipy sparse matrix, shape (n_samples, n_features), or (d, d) with ``precomputed=True``
        Data (rows are samples, centred here; a sparse ``X`` never densified), or the scatter matrix ``A``
        itself.
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

        A scipy sparse ``X`` (CSR, CSC, COO and the others, matrices or arrays) is never densified: its
        column means come from the stored entries and ``A = Xc'Xc`` from row blocks of ``X`` densified and
        centred one at a time (:func:`repro._sparse.centred_scatter`); the fit on ``A`` is then the dense
        one. NaN among the stored values is refused (the entries not stored are zeros, not missing).

        A ``dask.array`` stays on the workers (or wherever its scheduler keeps it): one distributed pass
        forms its column means and its ``p x p`` scatter matrix ``A = Xc'Xc``
        (:func:`repro._chunked.dask_covariance`), and the client holds only those, then fits on ``A``
        as for in-memory data. ``p`` is limited by ``repro._chunked.CLIENT_LIMIT_BYTES`` (a clear error
        above it).

        Parameters
        ----------
        X : array_like, scipy sparse matrix or dask.array.Array, shape (n_samples, n_features)
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

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # scipy.sparse: the scatter from densified row blocks, never X
        return tags
