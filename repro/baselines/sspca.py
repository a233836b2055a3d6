"""Structured sparse PCA with one global support (Jenatton, Obozinski & Bach 2009), "SSPCA".

Sparse PCA as a penalized matrix factorization ``X ~ U V'`` (``U``: n x d codes, ``V``: p x d loadings)
with the l1/l2 (group) norm on the *rows* of ``V``, so that all ``d`` components share one support:

    min_{U, V}  (1/2) ||X - U V'||_F^2 + alpha sum_j ||V_j||_2      s.t.  ||u_k||_2 <= 1, k = 1..d.

This is the ``m = 1`` sparsity pattern case of Jenatton et al. (the paper uses general groups; Mattei et
al. 2016 constrain it to globally sparse solutions). Solved by block-coordinate descent:

* ``U`` column by column: ``u_k = P_ball(R_k v_k / ||v_k||^2)`` with ``R_k = X - sum_{l != k} u_l v_l'``,
  the exact minimizer in ``u_k`` (Euclidean projection on the unit ball);
* ``V`` by proximal gradient (FISTA) on the smooth part with step ``1 / ||U'U||_2`` and the proximal
  operator of the group norm, the row-wise group soft-threshold
  ``prox_t(Z)_j = Z_j max(0, 1 - t / ||Z_j||_2)`` (:func:`group_soft_threshold`), to a relative tolerance.

Start: ``U`` the first ``d`` left singular vectors of ``X``, ``V = X'U``. Every step decreases the
objective (monotone, tested). ``alpha`` large enough (``alpha >= max_j ||(X'U)_j||``) gives ``V = 0``.

Ties: the group soft-threshold zeroes a row whose norm is within a relative 1e-12 above the
threshold, as it zeroes one at the threshold, and ``n_selected`` keeps the ``q`` largest rows with
near-ties (1e-12) by index. The search for ``n_selected`` starts at ``alpha_max``, where the largest row
sits exactly at the threshold; before this rule one OpenBLAS kernel kept that row (and a fit of 221 rows
grew from it) where the others dropped it, and mnist-back-rand's search ended on different fits. The
method stays sensitive in another way: the fits of the search are short (``max_iter=30``, ``tol=1e-3``
in Mattei et al.'s Table 2) and the count of selected rows jumps with ``alpha``, so the fit the ``q``
pixels are kept from is a discrete outcome of a bisection, not of the penalty alone.

The tuning parameter: ``SSPCA-CV`` (Mattei et al., Sec. 3.3) chooses ``alpha`` by 5-fold cross-validation
on the reconstruction error of the held-out rows, on a grid of ``alpha / alpha_max`` from 1 down to 1e-3
(geometric, warm starts); the error is summed over the folds and divided by the held-out total sum of
squares (``cv_errors_``, scale-free). How a held-out row is scored (``cv_score``):

* ``"refit"`` (default): the penalty selects a support ``S`` (the non-zero rows of ``V``); unpenalized PCA
  on the training rows of the variables ``S`` gives ``k = min(d, |S|)`` orthonormal loadings ``L``, and the
  held-out rows are reconstructed by projection, error ``||X_test||^2 - ||X_test[:, S] L||^2`` (the
  variables outside ``S`` are reconstructed by 0). The CV then compares *supports*: a spurious variable
  gets an unshrunk loading fitted to training noise, which costs held-out error, so the error is lowest
  near the true support. Decided so because the shrunken loadings of the penalized fit (``"shrunk"``)
  make the held-out error keep falling past the true support (the group penalty shrinks the spurious
  loadings towards 0, so including them costs little, while the smaller penalty shrinks the true ones
  less), and CV then picks too small a penalty: 29-33 variables where 20 are true in Mattei et al.'s
  Table 1 setting (F-score 0.78-0.84 against the published 0.94-1).
* ``"shrunk"``: the held-out rows reconstructed by least squares on the penalized loadings ``V``
  (``U_test = X_test V (V'V)^+``), error ``||X_test - U_test V'||^2``.

Or ``n_selected``: the ``alpha`` whose support has ``n_selected`` rows, found by bisection in ``log alpha``;
when the count jumps over ``n_selected`` the smallest larger support is fitted and its ``n_selected`` rows
of largest norm kept.

Scale: the problem is scale-equivariant (``X -> c X`` gives ``V -> c V``, ``alpha -> c alpha``, ``U``
unchanged), so badly scaled data (largest magnitude outside ``[2^-256, 2^256]``) are fitted as ``X / s``
and the results multiplied back; data with no variance are refused.

The authors' MATLAB code is not used (it does not run here).

References
----------
R. Jenatton, G. Obozinski and F. Bach. Structured sparse principal component analysis. AISTATS 2010
(arXiv:0909.1440, 2009).
P.-A. Mattei, C. Bouveyron and P. Latouche. Globally sparse probabilistic PCA. AISTATS 2016.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import StrOptions, validate_params
from sklearn.utils.validation import check_is_fitted

from .._base import NONNEG_REAL, POSITIVE_INT, RANDOM_STATE, IntInterval, ProjectionMixin, RealInterval
from .._threads import blas_limited
from .._ties import TIE_RTOL, order_tied
from .._validation import (
    check_array,
    check_features,
    check_has_variance,
    check_int,
    check_n_components,
    check_n_features,
    check_random_state,
    check_scale,
    check_vector,
    unscale,
)
from ._sspca_kernels import sspca_run

__all__ = ["CV_SCORES", "SSPCA", "group_soft_threshold", "sspca_fit", "sspca_objective", "sspca_path"]

_GRID = 20  # CV grid size
_GRID_LOW = 1e-3  # smallest alpha / alpha_max on the CV grid
_MAX_BISECT = 40
CV_SCORES = ("refit", "shrunk")
#: The group penalty: a finite real >= 0.
PENALTY = RealInterval(0, np.inf, closed="left")
#: The parameters of the fits on data as given.
_FIT = {
    "X": ["array-like"],
    "n_components": [POSITIVE_INT],
    "max_iter": [POSITIVE_INT],
    "tol": [NONNEG_REAL],
}


@validate_params({"Z": ["array-like"], "t": [PENALTY]}, prefer_skip_nested_validation=True)
def group_soft_threshold(Z, t: float) -> np.ndarray:
    """Proximal operator of ``t sum_j ||V_j||_2`` (rows): ``argmin_V (1/2)||V - Z||_F^2 + t sum_j ||V_j||_2``.

    Row-wise: ``V_j = Z_j max(0, 1 - t / ||Z_j||_2)``. Ties: a row whose norm is within a
    relative 1e-12 (:data:`repro._ties.TIE_RTOL`) above ``t`` becomes zero, as a row at ``t`` does (its
    value would be at most 1e-12 of its norm): whether a row at the threshold is kept is not left to the
    last bits of its norm. (SSPCA's penalty search starts at ``alpha = max_j ||(X'U)_j||``, where the
    largest row sits exactly at the threshold: one OpenBLAS kernel kept it, the fit grew 221 rows, and
    the search went another way than on the kernels that dropped it.)

    Parameters
    ----------
    Z : array_like, shape (n_rows, n_columns)
        The matrix whose rows are shrunk.
    t : float >= 0
        The threshold.

    Returns
    -------
    ndarray, shape (n_rows, n_columns)
        Each row shrunk towards zero by ``t`` in Euclidean norm; rows of norm at most ``t`` become zero.

    See Also
    --------
    sspca_fit : uses it as the proximal step of its V-update.

    Examples
    --------
    >>> from repro.baselines import group_soft_threshold
    >>> group_soft_threshold([[3.0, 4.0], [0.3, 0.4]], 1.0).round(12).tolist()  # norms 5 -> 4, 0.5 -> 0
    [[2.4, 3.2], [0.0, 0.0]]
    """
    Z = check_array(Z, "Z")
    norms = np.sqrt(np.einsum("ij,ij->i", Z, Z))
    scale = np.where(norms > t * (1.0 + TIE_RTOL), 1.0 - t / np.where(norms > 0, norms, 1.0), 0.0)
    return Z * scale[:, None]


@validate_params(
    {"X": ["array-like"], "U": ["array-like"], "V": ["array-like"], "alpha": [PENALTY]},
    prefer_skip_nested_validation=True,
)
def sspca_objective(X, U, V, alpha: float) -> float:
    """``(1/2)||X - U V'||_F^2 + alpha sum_j ||V_j||_2``.

    Parameters
    ----------
    X : ndarray, shape (n_samples, n_features)
        The data as fitted (centre it first).
    U : ndarray, shape (n_samples, n_components)
        Codes.
    V : ndarray, shape (n_features, n_components)
        Loadings; their rows carry the group penalty.
    alpha : float
        The penalty.

    Returns
    -------
    float
        The objective of the SSPCA problem.

    See Also
    --------
    sspca_fit

    References
    ----------
    Jenatton, R., Obozinski, G. & Bach, F. (2010). Structured sparse principal component analysis.
    AISTATS, Eq. (1) with one group per variable (the rows of ``V``).

    Examples
    --------
    >>> import numpy as np
    >>> from repro.baselines import sspca_objective
    >>> X = np.eye(2)
    >>> sspca_objective(X, np.eye(2), np.eye(2), 0.5)  # exact fit, two unit rows: 0 + 0.5 * 2
    1.0
    """
    X = check_array(X, "X")
    U, V = _check_factors(X, check_array(U, "U"), check_array(V, "V"))
    R = X - U @ V.T
    return 0.5 * float(np.einsum("ij,ij->", R, R)) + alpha * float(np.sqrt(np.einsum("ij,ij->i", V, V)).sum())


def _check_factors(X, U, V):
    """``(U, V)`` if their shapes fit ``X ~ U V'``, else a ValueError naming the one that does not."""
    n, p = X.shape
    if U.shape[0] != n:
        raise ValueError(f"U has {U.shape[0]} rows but X has {n} samples; pass U of shape (n_samples, d).")
    if V.shape != (p, U.shape[1]):
        raise ValueError(
            f"V has shape {V.shape} but X has {p} features and U {U.shape[1]} columns; pass V of shape "
            f"(n_features, d) = ({p}, {U.shape[1]})."
        )
    return U, V


#: Outer iterations per kernel call (the history buffer; a longer fit makes several calls, the same iterates).
_CHUNK = 1000


def _init(X, d):
    Uf = np.linalg.svd(X, full_matrices=False)[0]
    U = np.ascontiguousarray(Uf[:, :d])
    V = np.ascontiguousarray(X.T @ U)
    return U, V


def _fit(X, alpha, U, V, max_iter, tol, history=None):
    """The block-coordinate descent from ``(U, V)`` (:func:`repro.baselines._sspca_kernels.sspca_run`, module
    docstring); returns ``(U, V, n_iter)``, new arrays."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    Xt = np.ascontiguousarray(X.T)
    U = np.array(U, dtype=np.float64, order="C")
    V = np.array(V, dtype=np.float64, order="C")
    hist = np.empty(min(max_iter, _CHUNK) + 1)
    n_iter = 0
    while True:
        m = min(max_iter - n_iter, _CHUNK)
        done, converged = sspca_run(X, Xt, U, V, float(alpha), m, float(tol), hist)
        if history is not None:
            history.extend(hist[0 if n_iter == 0 else 1 : done + 1].tolist())
        n_iter += done
        if converged or n_iter >= max_iter:
            return U, V, n_iter


def _alpha_max(X, U):
    XtU = X.T @ U
    return float(np.sqrt(np.einsum("ij,ij->i", XtU, XtU)).max())


@validate_params(
    {**_FIT, "alpha": [PENALTY], "start": [None, tuple, list], "history": [None, list]},
    prefer_skip_nested_validation=True,
)
@blas_limited
def sspca_fit(X, n_components, alpha, *, max_iter=500, tol=1e-6, start=None, history=None):
    """Solve the SSPCA problem for one ``alpha`` on ``X`` as given (no centring).

    Parameters
    ----------
    X : ndarray, shape (n_samples, n_features)
        The data, used as given (centre it first).
    n_components : int
        ``d``, ``1..min(n_samples, n_features)``.
    alpha : float >= 0
        The group penalty.
    max_iter : int, default 500
        Outer (U then V) iterations.
    tol : float, default 1e-6
        Relative decrease of the objective at which the iterations stop.
    start : (U, V), optional
        Warm start (default: the SVD start).
    history : list, optional
        The objective is appended after every outer iteration (for monotonicity checks; that of ``X / s``
        when ``X`` is badly scaled, see the module docstring).

    Returns
    -------
    U : ndarray, shape (n_samples, n_components)
        Codes, columns in the unit ball.
    V : ndarray, shape (n_features, n_components)
        Loadings; the zero rows are the variables left out.
    n_iter : int
        Outer iterations run.

    See Also
    --------
    SSPCA : the estimator, which chooses ``alpha``.
    sspca_path : several ``alpha`` with warm starts.

    References
    ----------
    Jenatton, R., Obozinski, G. & Bach, F. (2010). Structured sparse principal component analysis.
    AISTATS. Mattei, P.-A., Bouveyron, C. & Latouche, P. (2016). AISTATS, Section 3.3.

    Examples
    --------
    >>> import numpy as np
    >>> from repro.gsppca import make_globally_sparse
    >>> X, v = make_globally_sparse(100, 20, 2, 5, sigma=0.1, random_state=0)  # 5 of 20 variables active
    >>> Xc = X - X.mean(axis=0)
    >>> from repro.baselines import sspca_fit, sspca_objective
    >>> history = []
    >>> U, V, n_iter = sspca_fit(Xc, 2, 5.0, history=history)
    >>> np.flatnonzero(np.linalg.norm(V, axis=1)).tolist()  # one support for both components
    [4, 6, 9, 10]
    >>> bool(np.all(np.diff(history) <= 0)), bool(np.isclose(history[-1], sspca_objective(Xc, U, V, 5.0)))
    (True, True)
    """
    X = check_array(X, "X")
    d = check_n_components(n_components, *X.shape)
    if start is not None:
        if len(start) != 2:
            raise ValueError(f"start must be a pair (U, V); got {len(start)} items.")
        U0, V0 = _check_factors(X, check_array(start[0], "start[0]"), check_array(start[1], "start[1]"))
        if U0.shape[1] != d:
            raise ValueError(f"start has {U0.shape[1]} components; n_components is {d}.")
    sc = check_scale(X)
    X = X / sc if sc != 1.0 else X
    if start is None:
        U, V = _init(X, d)
    else:
        U, V = U0.copy(), V0 / sc
    U, V, n_iter = _fit(X, alpha / sc, U, V, max_iter, tol, history)
    return U, unscale(V, sc, 1, "loadings"), n_iter


@validate_params({**_FIT, "alphas": ["array-like"]}, prefer_skip_nested_validation=True)
@blas_limited
def sspca_path(X, n_components, alphas, *, max_iter=500, tol=1e-6):
    """SSPCA along a decreasing sequence of ``alphas`` with warm starts.

    Parameters
    ----------
    X : ndarray, shape (n_samples, n_features)
        The data, used as given (centre it first).
    n_components : int
        ``d``, ``1..min(n_samples, n_features)``.
    alphas : array_like
        The penalties, in the order they are fitted (decreasing, for warm starts that help).
    max_iter, tol : int, float
        As in :func:`sspca_fit`, per ``alpha``.

    Returns
    -------
    list of (U, V)
        One ``(U, V)`` per alpha.

    See Also
    --------
    sspca_fit

    Examples
    --------
    >>> import numpy as np
    >>> from repro.gsppca import make_globally_sparse
    >>> X, v = make_globally_sparse(100, 20, 2, 5, sigma=0.1, random_state=0)  # 5 of 20 variables active
    >>> Xc = X - X.mean(axis=0)
    >>> from repro.baselines import sspca_path
    >>> path = sspca_path(Xc, 2, [50.0, 20.0, 5.0])
    >>> [int((np.linalg.norm(V, axis=1) > 0).sum()) for U, V in path]  # the support grows as alpha falls
    [0, 1, 4]
    """
    X = check_array(X, "X")
    d = check_n_components(n_components, *X.shape)
    alphas = check_vector(alphas, "alphas")
    if np.any(alphas < 0):
        raise ValueError(f"alphas must be >= 0 (penalties); got {float(alphas.min())}.")
    return _sspca_path(X, d, alphas, max_iter, tol)


def _sspca_path(X, d, alphas, max_iter, tol):
    """:func:`sspca_path` on checked input."""
    sc = check_scale(X)
    X = X / sc if sc != 1.0 else X
    U, V = _init(X, d)
    out = []
    for a in alphas:
        U, V, _ = _fit(X, float(a) / sc, U, V, max_iter, tol)
        out.append((U.copy(), unscale(V, sc, 1, "loadings")))
    return out


def _support(V) -> np.ndarray:
    return np.sqrt(np.einsum("ij,ij->i", V, V)) > 0


def _held_out_error(Xte, Xtr, V, d, score, bases=None):
    """Squared error of the held-out rows ``Xte`` (module docstring, ``cv_score``).

    ``bases``: an optional dict, support -> the refit's basis on ``Xtr``, shared by the penalties of one
    fold (neighbouring penalties often select the same rows, whose SVD is then not repeated).
    """
    total = float(np.einsum("ij,ij->", Xte, Xte))
    S = _support(V)
    if not S.any():
        return total
    if score == "refit":
        key = S.tobytes()
        L = None if bases is None else bases.get(key)
        if L is None:
            k = min(d, int(S.sum()), Xtr.shape[0] - 1)
            L = np.linalg.svd(Xtr[:, S], full_matrices=False)[2][:k].T
            if bases is not None:
                bases[key] = L
        P = Xte[:, S] @ L
        return total - float(np.einsum("ij,ij->", P, P))
    Ut = Xte @ V @ np.linalg.pinv(V.T @ V)
    R = Xte - Ut @ V.T
    return float(np.einsum("ij,ij->", R, R))


def _cv_error(X, d, alphas, folds, max_iter, tol, score="refit"):
    """Held-out squared error per ``alpha`` summed over the folds, over the held-out total sum of squares."""
    err = np.zeros(len(alphas))
    total = 0.0
    for test in folds:
        train = np.setdiff1d(np.arange(X.shape[0]), test)
        Xtr = X[train] - X[train].mean(axis=0)
        Xte = X[test] - X[train].mean(axis=0)
        total += float(np.einsum("ij,ij->", Xte, Xte))
        bases: dict = {}
        for j, (_, V) in enumerate(_sspca_path(Xtr, d, alphas, max_iter, tol)):
            err[j] += _held_out_error(Xte, Xtr, V, d, score, bases)
    return err / total


class SSPCA(ProjectionMixin, BaseEstimator):
    """Globally sparse SSPCA (Jenatton et al. 2009, l1/l2 norm on the rows of the loadings).

    Parameters
    ----------
    n_components : int, default 1
        ``d``, the number of components sharing one support.
    alpha : float >= 0, optional
        The penalty. Default: chosen by ``cv``-fold cross-validation on the reconstruction error (SSPCA-CV),
        unless ``n_selected`` is given.
    n_selected : int, optional
        Find the ``alpha`` that selects this many variables (see the module docstring).
    cv : int, default 5
        Folds of the cross-validation (``>= 2``).
    cv_score : "refit" or "shrunk", default "refit"
        How the cross-validation scores a held-out row: on unpenalized PCA refitted on the selected
        variables (selects supports), or on the penalized loadings (module docstring).
    max_iter, tol : int, float
        Outer iterations and relative objective tolerance.
    random_state : None, int or Generator
        The fold assignment of the cross-validation.

    Attributes
    ----------
    components_ : ndarray, shape (n_components, n_features)
        Columns of ``V`` normalized to unit norm (zero rows where a column vanished).
    support_ : ndarray of bool, shape (n_features,)
        The selected variables: the non-zero rows of ``V_``.
    n_selected_ : int
        Their number.
    fit_support_size_ : int
        Non-zero rows of the fitted ``V`` before the ``n_selected`` search kept its ``n_selected`` largest:
        ``n_selected_`` unless the selected count jumped over ``n_selected`` (then the smallest larger
        support found; a value near ``n_features`` says no penalty separated the variables).
    alpha_ : float
        The penalty of the final fit.
    U_, V_ : ndarrays
        Codes ``(n_samples, n_components)`` and loadings ``(n_features, n_components)`` of the final fit.
    cv_alphas_, cv_errors_ : ndarrays (SSPCA-CV only: set when neither ``alpha`` nor ``n_selected`` is given)
        The grid and the held-out squared error over the held-out total sum of squares (scale-free).
    n_iter_ : int
        Outer iterations of the final fit (of the last one tried by the ``n_selected`` search).
    mean_ : ndarray
        Column means of the training data (subtracted by ``transform``).
    n_features_in_ : int
        Number of features seen by ``fit``.
    feature_names_in_ : ndarray of str, shape ``(n_features_in_,)``
        Column names of ``X`` when ``fit`` got a DataFrame with string column names (only then);
        ``transform`` and ``score`` then refuse a DataFrame whose columns differ or are reordered.

    See Also
    --------
    sspca_fit : one ``alpha``, the function form.
    repro.GSPPCA : the globally sparse probabilistic PCA it is compared with.

    Notes
    -----
    ``score(X)`` is minus the mean squared reconstruction error of the rows of ``X`` (centred by ``mean_``)
    by their projection on the span of ``components_`` (higher is better; 0 for an exact reconstruction).

    References
    ----------
    Jenatton, R., Obozinski, G. & Bach, F. (2010). Structured sparse principal component analysis.
    AISTATS. Mattei, P.-A., Bouveyron, C. & Latouche, P. (2016). Globally sparse probabilistic PCA.
    AISTATS, Section 3.3 (SSPCA-CV).

    Examples
    --------
    >>> import numpy as np
    >>> from repro.gsppca import make_globally_sparse
    >>> X, v = make_globally_sparse(100, 20, 2, 5, sigma=0.1, random_state=0)  # 5 of 20 variables active
    >>> Xc = X - X.mean(axis=0)
    >>> from repro.baselines import SSPCA
    >>> est = SSPCA(n_components=2, n_selected=5).fit(X)
    >>> est.n_selected_, np.flatnonzero(est.support_).tolist()
    (5, [4, 6, 9, 10, 14])
    >>> est.components_.shape
    (2, 20)
    """

    _parameter_constraints: ClassVar[dict] = {
        "n_components": [POSITIVE_INT],
        "alpha": [None, PENALTY],
        "n_selected": [None, POSITIVE_INT],
        "cv": [IntInterval(2, None, closed="left")],
        "cv_score": [StrOptions(set(CV_SCORES))],
        "max_iter": [POSITIVE_INT],
        "tol": [NONNEG_REAL],
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self,
        n_components=1,
        *,
        alpha=None,
        n_selected=None,
        cv=5,
        cv_score="refit",
        max_iter=500,
        tol=1e-6,
        random_state=None,
    ):
        self.n_components = n_components
        self.alpha = alpha
        self.n_selected = n_selected
        self.cv = cv
        self.cv_score = cv_score
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    @blas_limited
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit on ``X`` (centred here); returns self.

        Parameters
        ----------
        X : array_like, shape (n_samples, n_features)
            Training data.
        y : None
            Ignored (scikit-learn convention).

        Returns
        -------
        self
            The fitted estimator.
        """
        check_features(self, X)
        X = check_array(X, "X", min_samples=2)
        n, p = X.shape
        d = check_n_components(self.n_components, n, p)
        max_iter, tol = int(self.max_iter), float(self.tol)  # checked by _parameter_constraints
        if self.alpha is not None and self.n_selected is not None:
            raise ValueError("pass either alpha or n_selected, not both.")
        check_has_variance(X, "SSPCA")
        sc = check_scale(X)
        Xs = X / sc if sc != 1.0 else X
        mean = Xs.mean(axis=0)
        Xc = Xs - mean
        U0, V0 = _init(Xc, d)
        amax = _alpha_max(Xc, U0)
        keep = None
        if self.alpha is not None:
            alpha = float(self.alpha) / sc
            U, V, n_iter = _fit(Xc, alpha, U0, V0, max_iter, tol)
            if not _support(V).any():  # an absolute penalty above the data's scale: no component
                raise ValueError(
                    f"alpha={self.alpha} selects no variable of X: the penalty is absolute (scale of X), "
                    f"and alpha >= {float(unscale(amax, sc, 1, 'penalty')):.3g} removes every variable here. "
                    "Use a smaller alpha, n_selected=, or neither (the cross-validated alpha)."
                )
        elif self.n_selected is not None:
            q = check_int(self.n_selected, "n_selected", low=1, high=p)
            alpha, U, V, keep, n_iter = self._search(Xc, d, q, amax, U0, V0, max_iter, tol)
        else:
            k = check_int(self.cv, "cv", low=2, high=n)
            rng = check_random_state(self.random_state)
            folds = np.array_split(rng.permutation(n), k)
            smallest = n - max(f.size for f in folds)  # the fewest rows a fold's fit is trained on
            if d > smallest:
                raise ValueError(
                    f"n_components={d} is too large to cross-validate alpha on X of shape {X.shape} with "
                    f"cv={k}: each fold's fit trains on as few as {smallest} samples, and n_components must "
                    f"be at most that; lower n_components, raise cv (larger training folds, at most "
                    f"n_samples={n}), pass more samples, or give alpha= or n_selected= (no "
                    "cross-validation)."
                )
            alphas = amax * np.geomspace(1.0, _GRID_LOW, _GRID)
            errors = _cv_error(Xc, d, alphas, folds, max_iter, tol, self.cv_score)
            alpha = float(alphas[int(np.argmin(errors))])
            self.cv_alphas_, self.cv_errors_ = unscale(alphas, sc, 1, "penalties"), errors
            U, V, n_iter = _fit(Xc, alpha, U0, V0, max_iter, tol)
        self.fit_support_size_ = int(_support(V).sum())
        if keep is not None:
            V = V * keep[:, None]
        norms = np.linalg.norm(V, axis=0)
        comps = np.where(norms > 0, V / np.where(norms > 0, norms, 1.0), 0.0).T
        self.U_, self.V_ = U, unscale(V, sc, 1, "loadings")
        self.components_ = comps
        self.support_ = _support(V)
        self.n_selected_ = int(self.support_.sum())
        self.alpha_ = float(unscale(alpha, sc, 1, "penalty"))
        self.n_iter_ = int(n_iter)  # iterations of the final fit (of the last one tried by a search)
        self.mean_ = unscale(mean, sc, 1, "means")
        self.n_features_in_ = p
        return self

    def score(self, X, y=None):
        """Minus the mean squared reconstruction error of the rows of ``X`` on ``components_`` (see Notes).

        Parameters
        ----------
        X : array_like, shape (n_samples, n_features)
            Data with the training data's features.
        y : None
            Ignored (scikit-learn convention).

        Returns
        -------
        float
            ``-mean ||x - mean_ - P (x - mean_)||^2`` with ``P`` the projection on the span of ``components_``
            (higher is better; 0 for an exact reconstruction).
        """
        check_is_fitted(self, "components_")
        X = check_n_features(self, X)
        Xc = X - self.mean_
        sc = check_scale(Xc)
        Xc = Xc / sc if sc != 1.0 else Xc
        C = self.components_[np.linalg.norm(self.components_, axis=1) > 0]
        Q = np.linalg.qr(C.T)[0] if C.size else np.zeros((X.shape[1], 0))
        R = Xc - (Xc @ Q) @ Q.T
        err = float(np.einsum("ij,ij->", R, R)) / X.shape[0]
        return -float(unscale(err, sc, 2, "squared errors"))

    @staticmethod
    def _search(Xc, d, q, amax, U0, V0, max_iter, tol):
        """Bisection in ``log alpha`` for ``q`` selected rows; warm starts from the nearest fit.

        Returns ``alpha, U, V, keep, n_iter`` (``n_iter``: iterations of the last fit the search ran).
        """
        last_n_iter = 0
        # alpha_max at the SVD start is not an upper bound: U's columns are not orthogonal and can align
        # once V is sparse, so the row norms of X'U grow (up to sqrt(d) times). Expand until nothing is left.
        lo, hi = math.log(amax * 1e-6), math.log(amax)
        best = None  # (count, alpha, U, V) with the smallest count >= q
        for _ in range(60):
            U, V, last_n_iter = _fit(Xc, math.exp(hi), U0.copy(), V0.copy(), max_iter, tol)
            c = int(_support(V).sum())
            if c >= q and (best is None or c < best[0]):
                best = (c, math.exp(hi), U, V)
            if c == q:
                return math.exp(hi), U, V, None, last_n_iter
            if c < q:
                break
            lo, hi = hi, hi + math.log(4.0)
        state = (U0, V0)
        for _ in range(_MAX_BISECT):
            mid = 0.5 * (lo + hi)
            U, V, last_n_iter = _fit(Xc, math.exp(mid), state[0].copy(), state[1].copy(), max_iter, tol)
            c = int(_support(V).sum())
            if c >= q and (best is None or c < best[0]):
                best = (c, math.exp(mid), U, V)
            if c == q:
                return math.exp(mid), U, V, None, last_n_iter
            if c > q:
                lo = mid
            else:
                hi = mid
            state = (U, V) if c > 0 else state
            if hi - lo < 1e-9:
                break
        if best is None:
            U, V, last_n_iter = _fit(Xc, 0.0, U0, V0, max_iter, tol)
            best = (int(_support(V).sum()), 0.0, U, V)
        _, alpha, U, V = best
        norms = np.linalg.norm(V, axis=1)
        keep = np.zeros(V.shape[0], dtype=bool)
        keep[order_tied(norms)[:q]] = True  # the q largest rows, near-ties (1e-12) by index
        return alpha, U, V, keep, last_n_iter
