"""Greedy sparse PCA (GSPCA) of Moghaddam, Weiss & Avidan (2006): bi-directional greedy search.

For a cardinality ``K`` the sparse principal component is the leading eigenvector of the principal
submatrix ``C[S, S]`` whose largest eigenvalue is maximal over supports ``|S| = K`` (their "variational
renormalization": on a fixed support the optimal loadings are that eigenvector). GSPCA searches ``S``
greedily in both directions and keeps, for each ``K``, the better of the two:

* forward selection: start from the largest variance ``C_jj`` and add, one at a time, the variable that
  maximizes ``lambda_max`` of the grown submatrix;
* backward elimination: start from all variables and remove, one at a time, the variable whose removal
  keeps ``lambda_max`` largest.

Every candidate's eigenvalue is computed exactly, in O(m) per secular-equation iteration from the
current eigendecomposition (the kernels beside this module, :mod:`repro.baselines._gspca_kernels`: the
bordered-matrix update for forward steps, the interlacing deletion formula for backward steps), so a step
costs one ``m x m`` eigh plus ``O(m^2)`` per candidate set, and the whole path ``K = 1..D`` costs
``O(D^4)`` as in the paper. A backward step does not take a fresh eigh: the eigendecomposition of the
submatrix left by the removal is updated from the current one
(:func:`repro.baselines._gspca_kernels.deleted_eigh`, its roots and one matrix product). Several
components are obtained by deflation of ``C`` (projection deflation by default).

Ties: every choice -- the forward start ``argmax_j C_jj``, each forward and backward step, and
the pick between the two searches' supports -- treats eigenvalues within a relative 1e-12 (of
``lambda_1`` of the current submatrix; :data:`repro._ties.TIE_RTOL`) as equal, and breaks the tie by the
lowest index (the forward support between the two searches), not by the last bits of a product. The
method is itself sensitive where such ties are exact: on a correlation matrix the start is then the
first variable, and of two duplicated variables the first is added (or removed) first.

References
----------
B. Moghaddam, Y. Weiss and S. Avidan. Spectral bounds for sparse PCA: exact and greedy algorithms.
NIPS 18, 2006, Sections 3-4.
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import StrOptions, validate_params

from .._base import POSITIVE_INT, ProjectionMixin, unscale_fitted
from .._dense import _canonical_sign, _projection_deflate, _schur_deflate
from .._threads import blas_limit
from .._ties import TIE_RTOL, argmax_tied
from .._validation import (
    check_cardinality,
    check_features,
    check_has_variance,
    check_int,
    check_n_components,
    check_scale,
    check_symmetric,
    unscale,
)
from ..linalg import Covariance
from ._common import check_data
from ._gspca_kernels import bordered_max_eig, deleted_argmax, deleted_eigh

__all__ = ["GSPCA", "GSPCAPath", "GSPCAResult", "gspca", "gspca_path"]

_DIRECTIONS = ("both", "forward", "backward")
_DEFLATIONS = ("projection", "schur")
#: The parameters gspca and gspca_path share with the estimator.
_SEARCH = {
    "X": ["array-like", Covariance],
    "direction": [StrOptions(set(_DIRECTIONS))],
    "precomputed": ["boolean"],
}


class GSPCAPath(NamedTuple):
    """Greedy solutions for every cardinality ``1..K`` of one component.

    Attributes
    ----------
    variance : ndarray (K,)
        ``lambda_max(C[S_k, S_k])`` of the chosen support of each cardinality ``k = 1..K``.
    components : ndarray (K, n_features)
        Unit-norm loadings (leading eigenvector on the support, canonical sign), one row per ``k``.
    supports : list of ndarray
        Sorted variable indices of each support.
    forward_variance, backward_variance : ndarray (K,)
        The two searches' values (NaN where a direction was not run).

    See Also
    --------
    gspca_path : the function that returns it.

    References
    ----------
    Moghaddam, B., Weiss, Y. & Avidan, S. (2006). Spectral bounds for sparse PCA: exact and greedy
    algorithms. NIPS 18, Section 4 (bi-directional greedy search).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 10)) @ np.diag(np.linspace(3, 0.5, 10))
    >>> X[:, :4] += 2 * rng.standard_normal((100, 1))  # four correlated variables
    >>> from repro.baselines import gspca_path
    >>> path = gspca_path(X, 3)
    >>> path.components.shape, [S.tolist() for S in path.supports]
    ((3, 10), [[0], [0, 1], [0, 1, 2]])
    """

    variance: np.ndarray
    components: np.ndarray
    supports: list
    forward_variance: np.ndarray
    backward_variance: np.ndarray


class GSPCAResult(NamedTuple):
    """Output of :func:`gspca`.

    Attributes
    ----------
    components : ndarray (n_components, n_features)
        Unit-norm sparse loadings as rows.
    variance : ndarray (n_components,)
        ``w' C_i w`` on the deflated matrix ``C_i`` each component was found on.
    supports : list of ndarray
        Sorted variable indices of each component's support.

    See Also
    --------
    gspca : the function that returns it.

    References
    ----------
    Moghaddam, B., Weiss, Y. & Avidan, S. (2006). Spectral bounds for sparse PCA: exact and greedy
    algorithms. NIPS 18.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 10)) @ np.diag(np.linspace(3, 0.5, 10))
    >>> X[:, :4] += 2 * rng.standard_normal((100, 1))  # four correlated variables
    >>> from repro.baselines import gspca
    >>> res = gspca(X, 3, n_components=2)
    >>> res.components.shape, [S.tolist() for S in res.supports]
    ((2, 10), [[0, 1, 2], [0, 1, 3]])
    """

    components: np.ndarray
    variance: np.ndarray
    supports: list


# --------------------------------------------------------------------------- greedy searches
def _top_eigh_all(M: np.ndarray):
    lam, V = np.linalg.eigh(M)
    return lam[::-1].copy(), np.ascontiguousarray(V[:, ::-1])


def _forward(C: np.ndarray, K: int):
    """Forward selection up to cardinality K: values (K,) and the order in which variables entered."""
    D = C.shape[0]
    diag = np.diag(C).copy()
    order = [argmax_tied(diag)]  # near-ties (a correlation matrix: every C_jj = 1) to the lowest index
    values = np.empty(K)
    values[0] = diag[order[0]]
    in_S = np.zeros(D, dtype=bool)
    in_S[order[0]] = True
    for m in range(1, K):
        S = np.array(order)
        lam, V = _top_eigh_all(C[np.ix_(S, S)])
        cand = np.flatnonzero(~in_S)
        Z = np.ascontiguousarray(V.T @ C[np.ix_(S, cand)])
        mu = bordered_max_eig(lam, Z, np.ascontiguousarray(diag[cand]))
        t = argmax_tied(mu, scale=abs(lam[0]))  # eigenvalues within 1e-12 |lambda_1| tie: lowest index
        j = int(cand[t])
        order.append(j)
        in_S[j] = True
        values[m] = mu[t]
    return values, order


def _backward(C: np.ndarray, K: int):
    """Backward elimination from all variables down to cardinality K.

    Returns values indexed by cardinality (array of length D + 1, NaN below K) and the removal order.
    """
    D = C.shape[0]
    values = np.full(D + 1, np.nan)
    S = list(range(D))
    removed = []
    lam, V = _top_eigh_all(C)
    values[D] = lam[0]
    for m in range(D, K, -1):
        if m == 1:
            break
        t = int(deleted_argmax(lam, V, np.arange(m, dtype=np.int64)))  # = argmax of deleted_max_eig
        removed.append(S.pop(t))
        lam, V = deleted_eigh(lam, V, t)  # the submatrix's eigendecomposition, updated (no fresh eigh)
        values[m - 1] = lam[0]
    return values, removed


def _beats(a: float, b: float) -> bool:
    """Whether value ``a`` beats ``b`` by more than a tie: values within a relative
    :data:`repro._ties.TIE_RTOL` of each other (two searches ending on supports of equal value, up to
    round-off) tie, and a tie keeps the forward support, as exact ties always did. A NaN never beats."""
    return bool(a > b + TIE_RTOL * max(abs(a), abs(b)))


def _leading_on(C: np.ndarray, S: np.ndarray) -> tuple[np.ndarray, float]:
    lam, V = _top_eigh_all(C[np.ix_(S, S)])
    w = np.zeros(C.shape[0])
    w[S] = V[:, 0]
    return _canonical_sign(w), float(lam[0])


def _path_dense(C: np.ndarray, K: int, direction: str) -> GSPCAPath:
    D = C.shape[0]
    fwd_val = np.full(K, np.nan)
    bwd_val = np.full(K, np.nan)
    fwd_order: list[int] = []
    bwd_removed: list[int] = []
    if direction in ("both", "forward"):
        fwd_val, fwd_order = _forward(C, K)
    if direction in ("both", "backward"):
        vals, bwd_removed = _backward(C, 1)
        bwd_val = vals[1 : K + 1]
    supports, comps, var = [], np.zeros((K, D)), np.empty(K)
    for k in range(1, K + 1):
        use_fwd = direction == "forward" or (
            direction == "both" and not _beats(bwd_val[k - 1], fwd_val[k - 1])
        )
        if use_fwd:
            S = np.sort(np.array(fwd_order[:k]))
        else:
            # the support of size k is what remains after removing D - k variables
            gone = set(bwd_removed[: D - k])
            S = np.array([i for i in range(D) if i not in gone])
        w, lam = _leading_on(C, S)
        supports.append(S)
        comps[k - 1] = w
        var[k - 1] = lam
    return GSPCAPath(var, comps, supports, fwd_val, bwd_val)


def _single_dense(C: np.ndarray, K: int, direction: str):
    """One component of cardinality K (backward elimination stops at K)."""
    D = C.shape[0]
    if K == D:  # the one support of size D: the leading eigenvector, whatever the search direction
        S = np.arange(D)
        w, lam = _leading_on(C, S)
        return w, lam, S
    best = None
    if direction in ("both", "forward"):
        vals, order = _forward(C, K)
        best = (vals[-1], np.sort(np.array(order)))
    if direction in ("both", "backward"):
        vals, removed = _backward(C, K)
        gone = set(removed)
        S = np.array([i for i in range(D) if i not in gone])
        if best is None or _beats(vals[K], best[0]):
            best = (vals[K], S)
    S = best[1]
    w, lam = _leading_on(C, S)
    return w, lam, S


# --------------------------------------------------------------------------- input handling
def _as_matrix(X, precomputed: bool) -> tuple[np.ndarray, np.ndarray, float]:
    """Return ``(C, mean, s)`` from data rows (sample covariance, ddof=1), a Covariance, or a given matrix:
    the one check of ``X`` of a call (:func:`_data_matrix` for data rows)."""
    if isinstance(X, Covariance):
        op, s, power = X.rescaled()  # data near 1e160 behind it: their covariance overflows before scaling
        if power == 2:  # the data / s: variances times s^2, as for data rows
            return np.array(op.dense(), dtype=np.float64), np.zeros(X.n_features), s
        return np.array(X.dense(), dtype=np.float64), np.zeros(X.n_features), 1.0
    if precomputed:
        C = check_symmetric(X, "X", psd=True)
        return C, np.zeros(C.shape[0]), 1.0
    return _data_matrix(check_data(X))


def _data_matrix(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """``(C, mean, s)`` of checked data rows: ``C`` the covariance of ``X / s`` with ``s`` the power of two
    of :func:`repro._validation.check_scale` (1 for ordinarily scaled data). GSPCA is scale-equivariant
    (supports and loadings unchanged, variances times ``s^2``), and ``X * 1e160`` would overflow ``C``."""
    check_has_variance(X, "GSPCA")
    s = check_scale(X)
    Xs = X / s if s != 1.0 else X
    C = Covariance._from_valid(Xs).dense()
    return np.array(C), Xs.mean(axis=0) * s, s  # the sum of X near 1.8e308 overflows


def _deflate(C: np.ndarray, w: np.ndarray, deflation: str) -> np.ndarray:
    return _projection_deflate(C, w) if deflation == "projection" else _schur_deflate(C, w)


# --------------------------------------------------------------------------- public API
@validate_params({**_SEARCH, "max_cardinality": [None, POSITIVE_INT]}, prefer_skip_nested_validation=True)
def gspca_path(
    X, max_cardinality: int | None = None, *, direction: str = "both", precomputed: bool = False
) -> GSPCAPath:
    """Greedy sparse PCA solutions of every cardinality ``1..max_cardinality`` in one call.

    The forward pass runs once up to ``max_cardinality``; the backward pass once from all variables down
    to one (Moghaddam et al. 2006, "bi-directional greedy search"); each cardinality keeps the better.

    Parameters
    ----------
    X : array_like (n_samples, n_features), a :class:`repro.linalg.Covariance`, or a ``(d, d)`` matrix
        with ``precomputed=True``.
    max_cardinality : int, optional
        Largest cardinality K (default: all ``n_features``).
    direction : {'both', 'forward', 'backward'}
        Which searches to run; both (GSPCA) by default, each cardinality keeping the better.
    precomputed : bool
        Whether ``X`` is the covariance matrix itself.

    Returns
    -------
    GSPCAPath
        ``variance``, ``components`` and ``supports`` for every ``k = 1..K``, and each direction's values.

    See Also
    --------
    gspca : components of one cardinality, several by deflation.
    repro.baselines.pathspca : the approximate greedy path of d'Aspremont et al. (2008).

    References
    ----------
    Moghaddam, B., Weiss, Y. & Avidan, S. (2006). Spectral bounds for sparse PCA: exact and greedy
    algorithms. NIPS 18, Sections 3-4.

    Examples
    --------
    On this small instance the greedy support of cardinality 3 is the best of all 120 supports:

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 10)) @ np.diag(np.linspace(3, 0.5, 10))
    >>> X[:, :4] += 2 * rng.standard_normal((100, 1))  # four correlated variables
    >>> from itertools import combinations
    >>> from repro.baselines import gspca_path
    >>> path = gspca_path(X, 4)
    >>> [S.tolist() for S in path.supports]
    [[0], [0, 1], [0, 1, 2], [0, 1, 2, 3]]
    >>> C = np.cov(X, rowvar=False)
    >>> best = max(np.linalg.eigvalsh(C[np.ix_(S, S)])[-1] for S in combinations(range(10), 3))
    >>> bool(np.isclose(path.variance[2], best))
    True
    """
    C, _, s = _as_matrix(X, precomputed)
    D = C.shape[0]
    K = D if max_cardinality is None else check_int(max_cardinality, "max_cardinality", low=1, high=D)
    with blas_limit():  # many small eigh calls: BLAS threads only add contention
        path = _path_dense(C, K, direction)
    return path._replace(
        variance=unscale(path.variance, s, 2, "variances", underflow=False),
        forward_variance=unscale(path.forward_variance, s, 2, "variances"),
        backward_variance=unscale(path.backward_variance, s, 2, "variances"),
    )


@validate_params(
    {
        **_SEARCH,
        "cardinality": [POSITIVE_INT, "array-like"],
        "n_components": [POSITIVE_INT],
        "deflation": [StrOptions(set(_DEFLATIONS))],
    },
    prefer_skip_nested_validation=True,
)
def gspca(
    X,
    cardinality,
    n_components: int = 1,
    *,
    direction: str = "both",
    deflation: str = "projection",
    precomputed: bool = False,
) -> GSPCAResult:
    """GSPCA components with the given cardinality (per component), found one after another by deflation.

    Parameters
    ----------
    X : array_like (n_samples, n_features), a :class:`repro.linalg.Covariance`, or a ``(d, d)`` matrix
        with ``precomputed=True``.
    cardinality : int or sequence of int
        Non-zeros of each component, ``1..n_features``.
    n_components : int, default 1
        Number of components, found one after another.
    direction : {'both', 'forward', 'backward'}
        Bi-directional (GSPCA) by default.
    deflation : {'projection', 'schur'}
        ``(I - ww') C (I - ww')`` or ``C - Cww'C / w'Cw`` between components.
    precomputed : bool
        Whether ``X`` is the covariance matrix itself.

    Returns
    -------
    GSPCAResult
        ``components`` (n_components, n_features) unit-norm rows, ``variance`` on the deflated matrices,
        ``supports``.

    See Also
    --------
    GSPCA : the estimator form.
    gspca_path : every cardinality of one component.
    repro.linalg.projection_deflate, repro.linalg.schur_deflate

    References
    ----------
    B. Moghaddam, Y. Weiss and S. Avidan. Spectral bounds for sparse PCA: exact and greedy algorithms.
    NIPS 18, 2006, Section 4.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 10)) @ np.diag(np.linspace(3, 0.5, 10))
    >>> X[:, :4] += 2 * rng.standard_normal((100, 1))  # four correlated variables
    >>> from repro.baselines import gspca
    >>> res = gspca(X, 3, n_components=2)
    >>> [S.tolist() for S in res.supports], np.linalg.norm(res.components, axis=1).round(12).tolist()
    ([[0, 1, 2], [0, 1, 3]], [1.0, 1.0])
    """
    n = None if precomputed or isinstance(X, Covariance) else np.shape(X)[0]
    C, _, s = _as_matrix(X, precomputed)
    D = C.shape[0]
    k = check_n_components(n_components, n, D)
    comps, var, supports = _gspca(C, check_cardinality(cardinality, D, k), direction, deflation)
    return GSPCAResult(comps, unscale(var, s, 2, "variances", underflow=False), supports)


def _gspca(C: np.ndarray, Ks: np.ndarray, direction: str, deflation: str):
    """:func:`gspca` on a checked matrix ``C``, one cardinality per component in ``Ks``: the components,
    their variances on the deflated matrices and their supports."""
    k, D = len(Ks), C.shape[0]
    comps = np.zeros((k, D))
    var = np.empty(k)
    supports = []
    Ci = C
    with blas_limit():  # many small eigh calls: BLAS threads only add contention
        for i in range(k):
            w, lam, S = _single_dense(Ci, int(Ks[i]), direction)
            comps[i], var[i] = w, lam
            supports.append(S)
            if i + 1 < k:
                Ci = _deflate(Ci, w, deflation)
    return comps, var, supports


class GSPCA(ProjectionMixin, BaseEstimator):
    """Greedy sparse PCA (Moghaddam, Weiss & Avidan 2006), a scikit-learn estimator.

    Parameters
    ----------
    n_components : int, default 1
        Number of components, found one after another by deflation.
    cardinality : int, sequence of int, or None
        Non-zero loadings of each component. ``None`` (default): no sparsity constraint, so each
        component is the leading eigenvector of the (deflated) covariance, as for
        :class:`repro.EMSparsePCA`; the one value valid for every data set without knowing its number of
        features. Pass the cardinality you want for sparse components.
    direction : {'both', 'forward', 'backward'}, default 'both'
        Which greedy searches to run; each cardinality keeps the better.
    deflation : {'projection', 'schur'}, default 'projection'
        How the covariance is deflated between components (see :func:`gspca`).

    Attributes
    ----------
    components_ : ndarray (n_components, n_features)
        Unit-norm sparse loadings as rows.
    supports_ : list of ndarray
        Sorted variable indices of each component's support.
    explained_variance_ : ndarray (n_components,)
        ``w' C w`` of each component on the sample covariance ``C`` (ddof=1) of the training data.
    mean_ : ndarray (n_features,)
        Column means of the training data (subtracted by ``transform``).
    n_iter_ : int
        Number of components (the search is not iterative).
    n_features_in_ : int
        Number of features seen by ``fit``.
    feature_names_in_ : ndarray of str, shape ``(n_features_in_,)``
        Column names of ``X`` when ``fit`` got a DataFrame with string column names (only then);
        ``transform`` and ``score`` then refuse a DataFrame whose columns differ or are reordered.

    See Also
    --------
    gspca : the function form (also on a covariance).
    gspca_path : every cardinality of one component.

    References
    ----------
    B. Moghaddam, Y. Weiss and S. Avidan. Spectral bounds for sparse PCA: exact and greedy algorithms.
    NIPS 18, 2006, Section 4.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 10)) @ np.diag(np.linspace(3, 0.5, 10))
    >>> X[:, :4] += 2 * rng.standard_normal((100, 1))  # four correlated variables
    >>> from repro.baselines import GSPCA
    >>> est = GSPCA(n_components=2, cardinality=3).fit(X)
    >>> [S.tolist() for S in est.supports_], est.transform(X).shape
    ([[0, 1, 2], [0, 1, 3]], (100, 2))
    """

    _parameter_constraints: ClassVar[dict] = {
        "n_components": [POSITIVE_INT],
        "cardinality": [None, POSITIVE_INT, "array-like"],
        "direction": [StrOptions(set(_DIRECTIONS))],
        "deflation": [StrOptions(set(_DEFLATIONS))],
    }

    def __init__(self, n_components=1, *, cardinality=None, direction="both", deflation="projection"):
        self.n_components = n_components
        self.cardinality = cardinality
        self.direction = direction
        self.deflation = deflation

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit on ``X`` (n_samples, n_features); returns self.

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
        X = check_data(X)
        k = check_n_components(self.n_components, *X.shape)
        C, mean, s = _data_matrix(X)  # C of X / s for badly scaled X (see _data_matrix)
        Ks = check_cardinality(self.cardinality, X.shape[1], k)
        comps, _, supports = _gspca(C, Ks, self.direction, self.deflation)
        self.components_ = comps
        self.supports_ = supports
        self.explained_variance_ = np.einsum("ij,ij->i", comps @ C, comps)
        unscale_fitted(self, s)
        self.mean_ = mean
        self.n_iter_ = len(supports)
        self.n_features_in_ = X.shape[1]
        return self
