"""Evaluation measures used across the papers' figures.

Loadings are passed as rows, the scikit-learn ``components_`` layout: ``W`` of shape
``(n_components, n_features)`` or a single vector ``(n_features,)``. Covariances are a
:class:`repro.linalg.Covariance` or a symmetric matrix.

**Argument order**: the data or the covariance first, then the loadings, in every measure of a fit
(``explained_variance(C, W)``, ``adjusted_variance(C, W)``, ``certified_fraction(X, W, k)``), as
scikit-learn's functions take ``X`` first. The loadings-first order is refused with the new one where the
shapes tell it apart: a 1-D first argument (one loading vector), a :class:`repro.linalg.Covariance`
second, or a non-square first with a square second of matching size. Two square matrices of the same
size cannot be told apart: the first is the covariance.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils._param_validation import validate_params

from ._base import NONNEG_REAL, POSITIVE_INT, IntInterval
from ._validation import as_float, check_array, unscale
from .linalg import Covariance, as_covariance, span_variances

__all__ = [
    "adjusted_variance",
    "cardinality",
    "certified_fraction",
    "cumulative_variance",
    "explained_variance",
    "fscore_selection",
    "jaccard_score",
    "min_angle_deg",
    "overlap",
    "qr_adjusted_variance",
]

#: The parameters of the measures of a fit: a covariance (or data) first, then loadings as rows. Their
#: values (shapes, NaN, symmetry) are checked once inside, by the conversion that reads them.
_C_W = {"C": ["array-like", Covariance], "W": ["array-like"]}


def _loadings_first(C, W) -> bool:
    """Whether ``(C, W)`` is a call in the loadings-first order (module docstring: the rule)."""
    if isinstance(C, Covariance):
        return False
    if isinstance(W, Covariance):
        return True
    c, w = np.shape(C), np.shape(W)
    if len(c) == 1:
        return True
    return len(c) == 2 and len(w) == 2 and c[0] != c[1] and w[0] == w[1] and c[1] == w[0]


def _check_order(C, W, name: str, first: str = "C") -> None:
    """Refuse a loadings-first call of ``name`` with the order it takes."""
    if _loadings_first(C, W):
        got = "a Covariance" if isinstance(W, Covariance) else f"shape {np.shape(W)}"
        raise ValueError(
            f"{name} takes the {'covariance' if first == 'C' else 'data'} first, then the loadings: "
            f"{name}({first}, W) with W of shape (n_components, n_features); this call passes loadings of "
            f"shape {np.shape(C)} first and {got} second (the loadings-first order, no longer accepted). "
            "Swap the two arguments."
        )


def _variances(compute, C, W) -> np.ndarray:
    """``compute(W, op)`` on ``C = s**power op`` scaled into the safe range of float64, times ``s**power``.

    Quadratic forms of a covariance of data near 1e160 overflow and near 1e-160 underflow; the measures
    here are homogeneous of degree one in ``C``, so they are computed on the scaled operator and scaled
    back, refusing values float64 cannot hold (rather than inf, NaN or a silent 0).
    """
    op, s, power = as_covariance(C).rescaled()
    return unscale(compute(_rows(W, op.n_features), op), s, power, "variances", "C", underflow=False)


def _rows(W, n_features: int | None = None) -> np.ndarray:
    W = as_float(W, "W")
    if W.ndim == 1:
        W = W[None, :]
    W = check_array(W, "W")
    if n_features is not None and W.shape[1] != n_features:
        raise ValueError(
            f"W has {W.shape[1]} features but the covariance has {n_features}; pass loadings as rows "
            "(n_components, n_features)."
        )
    return W


@validate_params(_C_W, prefer_skip_nested_validation=True)
def explained_variance(C, W) -> np.ndarray:
    """``w' C w`` for each row ``w`` of ``W`` (the variance of the projection on ``w``).

    This is the objective of sparse PCA for unit-norm ``w``; no normalization is applied here.

    Parameters
    ----------
    C : Covariance or array_like, shape (n_features, n_features)
        The covariance, as a :class:`repro.linalg.Covariance` or a symmetric matrix.
    W : array_like, shape (n_components, n_features) or (n_features,)
        Loadings as rows (the ``components_`` layout) or a single loading vector.

    Returns
    -------
    ndarray, shape (n_components,)
        ``w' C w`` per row.

    See Also
    --------
    cumulative_variance, adjusted_variance, qr_adjusted_variance

    References
    ----------
    Sigg, C. D. & Buhmann, J. M. (2008). Expectation-maximization for sparse and non-negative PCA.
    ICML. Eq. 1 (the variance ``w' C w`` that sparse PCA maximizes).

    Examples
    --------
    >>> import numpy as np
    >>> from repro.metrics import explained_variance
    >>> C = np.diag([3.0, 2.0, 1.0])
    >>> explained_variance(C, np.eye(3)[:2])
    array([3., 2.])
    >>> print(round(float(explained_variance(C, np.ones(3) / np.sqrt(3))[0]), 6))
    2.0
    """
    _check_order(C, W, "explained_variance")
    return _variances(_quad, C, W)


def _quad(W, C) -> np.ndarray:
    return np.atleast_1d(C.quad(W.T))


@validate_params(_C_W, prefer_skip_nested_validation=True)
def cumulative_variance(C, W) -> np.ndarray:
    """Running sum of :func:`explained_variance` over the rows: ``sum_{j<=i} w_j' C w_j``.

    The naive cumulative variance; it over-counts when components are not orthogonal (see
    :func:`adjusted_variance`).

    Parameters
    ----------
    C : Covariance or array_like, shape (n_features, n_features)
        The covariance, as a :class:`repro.linalg.Covariance` or a symmetric matrix.
    W : array_like, shape (n_components, n_features) or (n_features,)
        Loadings as rows (the ``components_`` layout) or a single loading vector.

    Returns
    -------
    ndarray, shape (n_components,)
        Entry ``i`` is the sum of ``w_j' C w_j`` over the rows ``j <= i``.

    See Also
    --------
    explained_variance, adjusted_variance

    Examples
    --------
    >>> import numpy as np
    >>> from repro.metrics import cumulative_variance
    >>> W = np.array([[1.0, 0.0], [1.0, 0.0]])  # the same direction twice: counted twice
    >>> cumulative_variance(np.diag([2.0, 1.0]), W)
    array([2., 4.])
    """
    _check_order(C, W, "cumulative_variance")
    return np.cumsum(_variances(_quad, C, W))


@validate_params(_C_W, prefer_skip_nested_validation=True)
def adjusted_variance(C, W) -> np.ndarray:
    """Cumulative variance explained by the span of the first ``i`` rows, for every ``i``.

    Shen & Huang (2008), Section 2.3: with ``V_i`` the first ``i`` loadings as columns, the data are
    projected onto their span, ``X_i = X V_i (V_i'V_i)^{-1} V_i'``, and the explained variance is
    ``tr(X_i'X_i) / (n - 1) = tr((V_i'V_i)^{-1} V_i' C V_i)``. It equals the plain cumulative
    variance for orthonormal loadings and never double-counts shared directions for others.

    Parameters
    ----------
    C : Covariance or array_like, shape (n_features, n_features)
        The covariance, as a :class:`repro.linalg.Covariance` or a symmetric matrix.
    W : array_like, shape (n_components, n_features) or (n_features,)
        Loadings as rows (the ``components_`` layout) or a single loading vector.

    Returns
    -------
    ndarray, shape (n_components,)
        Entry ``i - 1`` is the variance explained by the span of the first ``i`` rows; non-decreasing.

    See Also
    --------
    cumulative_variance, qr_adjusted_variance

    References
    ----------
    Shen, H. & Huang, J. Z. (2008). Sparse principal component analysis via regularized low rank
    matrix approximation. J. Multivariate Analysis 99:1015-1034, Section 2.3.

    Examples
    --------
    >>> import numpy as np
    >>> from repro.metrics import adjusted_variance
    >>> W = np.array([[1.0, 0.0], [1.0, 0.0]])  # a repeated direction adds nothing
    >>> adjusted_variance(np.diag([2.0, 1.0]), W)
    array([2., 2.])
    """
    _check_order(C, W, "adjusted_variance")
    C = as_covariance(C)
    return span_variances(_rows(W, C.n_features), C)


@validate_params(_C_W, prefer_skip_nested_validation=True)
def qr_adjusted_variance(C, W) -> np.ndarray:
    """Per-component adjusted variance of Zou, Hastie & Tibshirani (2006), Section 3.4.

    The scores ``Z = X V`` are decomposed ``Z = Q R``; component ``j`` is credited ``R_jj^2 / (n-1)``,
    the variance of its score after regressing out the earlier ones. In covariance form ``R`` is the
    Cholesky factor of ``V' C V``. Returns per-component values (``np.cumsum`` gives the total).

    Parameters
    ----------
    C : Covariance or array_like, shape (n_features, n_features)
        The covariance, as a :class:`repro.linalg.Covariance` or a symmetric matrix.
    W : array_like, shape (n_components, n_features) or (n_features,)
        Loadings as rows (the ``components_`` layout) or a single loading vector.

    Returns
    -------
    ndarray, shape (n_components,)
        ``R_jj^2 / (n - 1)`` per component (zero for a component in the span of the earlier ones).

    See Also
    --------
    adjusted_variance

    References
    ----------
    Zou, H., Hastie, T. & Tibshirani, R. (2006). Sparse principal component analysis. J. Computational
    and Graphical Statistics 15:265-286, Section 3.4.

    Examples
    --------
    >>> import numpy as np
    >>> from repro.metrics import qr_adjusted_variance
    >>> W = np.array([[1.0, 0.0], [1.0, 1.0]]) / np.array([[1.0], [np.sqrt(2.0)]])
    >>> print(np.round(qr_adjusted_variance(np.diag([2.0, 1.0]), W), 6))
    [2.  0.5]
    """
    _check_order(C, W, "qr_adjusted_variance")
    return _variances(_qr_adjusted, C, W)


def _qr_adjusted(W, C) -> np.ndarray:
    M = C.gram(W.T)
    out = np.empty(W.shape[0])
    # Sequential Gram-Schmidt in the C inner product: robust to rank deficiency, unlike cholesky.
    R2 = M.copy()
    for j in range(W.shape[0]):
        out[j] = max(R2[j, j], 0.0)
        if out[j] > 1e-300:
            r = R2[j, j:].copy()
            R2[j:, j:] -= np.outer(r, r) / out[j]
    return out


@validate_params({"W": ["array-like"], "tol": [NONNEG_REAL]}, prefer_skip_nested_validation=True)
def cardinality(W, tol: float = 0.0) -> np.ndarray:
    """Number of entries with ``|w_i| > tol`` in each row.

    Parameters
    ----------
    W : array_like, shape (n_components, n_features) or (n_features,)
        Loadings as rows (the ``components_`` layout) or a single loading vector.
    tol : float, default 0.0
        Entries of absolute value at most ``tol`` count as zero (a negative ``tol`` is refused: it would
        count exact zeros as non-zeros).

    Returns
    -------
    ndarray of int, shape (n_components,)
        The number of non-zeros of each row.

    Examples
    --------
    >>> from repro.metrics import cardinality
    >>> cardinality([[0.6, 0.0, 0.8], [1e-9, 1.0, 0.0]], tol=1e-6).tolist()
    [2, 1]
    """
    return np.count_nonzero(np.abs(_rows(W)) > tol, axis=1)


@validate_params({"W": ["array-like"]}, prefer_skip_nested_validation=True)
def overlap(W) -> float:
    """Departure from orthonormality ``||I - U'U||_F`` with ``U`` the loadings as columns.

    Zass & Shashua (2006), Figure 3(a). Zero exactly when the rows of ``W`` are orthonormal.

    Parameters
    ----------
    W : array_like, shape (n_components, n_features) or (n_features,)
        Loadings as rows (the ``components_`` layout) or a single loading vector.

    Returns
    -------
    float
        The Frobenius norm ``||I - W W'||_F``.

    See Also
    --------
    min_angle_deg

    References
    ----------
    Zass, R. & Shashua, A. (2006). Nonnegative sparse PCA. NIPS 19, Figure 3(a) (the orthonormality
    term ``||I - U'U||^2`` of Eq. 1).

    Examples
    --------
    >>> import numpy as np
    >>> from repro.metrics import overlap
    >>> overlap(np.eye(3)[:2])
    0.0
    >>> print(round(overlap([[1.0, 0.0], [0.6, 0.8]]), 6))
    0.848528
    """
    W = _rows(W)
    return float(np.linalg.norm(np.eye(W.shape[0]) - W @ W.T))


@validate_params({"W": ["array-like"]}, prefer_skip_nested_validation=True)
def min_angle_deg(W) -> float:
    """Smallest angle, in degrees, between the lines spanned by two rows of ``W``.

    ``arccos(max_{i != j} |w_i' w_j| / (||w_i|| ||w_j||))``, in ``[0, 90]``: rows need not be unit norm,
    and opposite signs count as parallel (the angle between the lines, as for the minimum angle of
    quasi-orthogonal components, Sigg & Buhmann 2008, Eq. 20 and Sec. 5.2). A zero row is orthogonal
    to every row; with fewer than two rows the result is 90.

    Parameters
    ----------
    W : array_like, shape (n_components, n_features) or (n_features,)
        Loadings as rows (the ``components_`` layout) or a single loading vector.

    Returns
    -------
    float
        The smallest pairwise angle, in degrees, in ``[0, 90]``.

    See Also
    --------
    overlap

    References
    ----------
    Sigg, C. D. & Buhmann, J. M. (2008). Expectation-maximization for sparse and non-negative PCA.
    ICML, Eq. 20 and Section 5.2.

    Examples
    --------
    >>> from repro.metrics import min_angle_deg
    >>> print(round(min_angle_deg([[1.0, 0.0], [1.0, 1.0]]), 6))
    45.0
    >>> min_angle_deg([[1.0, 0.0], [0.0, -2.0]])
    90.0
    """
    W = np.array(_rows(W), dtype=np.float64)
    norms = np.linalg.norm(W, axis=1)
    W[norms > 0] /= norms[norms > 0, None]
    if len(W) < 2:
        return 90.0
    G = np.abs(W @ W.T)
    np.fill_diagonal(G, 0.0)
    return float(np.degrees(np.arccos(np.clip(G.max(), 0.0, 1.0))))


@validate_params(
    {"labels_true": ["array-like"], "labels_pred": ["array-like"]}, prefer_skip_nested_validation=True
)
def jaccard_score(labels_true, labels_pred) -> float:
    """Pair-counting Jaccard index of two clusterings (Sigg & Buhmann 2008, Figure 4).

    ``n11 / (n11 + n10 + n01)`` where ``n11`` counts the pairs of samples grouped together in both
    clusterings and ``n10``, ``n01`` those grouped together in only one. Invariant to relabelling.

    Parameters
    ----------
    labels_true, labels_pred : array_like, shape (n_samples,)
        Two cluster labellings of the same samples.

    Returns
    -------
    float
        The Jaccard index in ``[0, 1]``; 1.0 when neither clustering groups any pair.

    References
    ----------
    Sigg, C. D. & Buhmann, J. M. (2008). Expectation-maximization for sparse and non-negative PCA.
    ICML, Figure 4 (clustering by non-negative PCA, scored by the Jaccard index).

    Examples
    --------
    >>> from repro.metrics import jaccard_score
    >>> jaccard_score([0, 0, 1, 1], [1, 1, 0, 0])
    1.0
    >>> print(round(jaccard_score([0, 0, 0, 1], [0, 0, 1, 1]), 4))
    0.25
    """
    a = np.asarray(labels_true)
    b = np.asarray(labels_pred)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(
            f"labels_true and labels_pred must be 1-D of equal length; got {a.shape} and {b.shape}."
        )
    # Ordered pairs from the contingency table n_ij, the integer arithmetic of scikit-learn's
    # pair_confusion_matrix without its per-call input checks (Sigg Fig. 4 scores 16,200 labellings):
    # together in both 2 * n11 = sum n_ij^2 - n, in `a` only sum_i a_i^2 - sum n_ij^2, in `b` only likewise.
    _, ai = np.unique(a, return_inverse=True)
    _, bi = np.unique(b, return_inverse=True)
    nb = int(bi.max(initial=-1)) + 1
    cont = np.bincount(ai.ravel() * nb + bi.ravel()).astype(np.int64)
    sum_sq = int(cont @ cont)
    row = np.bincount(ai.ravel()).astype(np.int64)
    col = np.bincount(bi.ravel()).astype(np.int64)
    n11 = np.int64(sum_sq - a.size)
    n10 = np.int64(int(row @ row) - sum_sq)
    n01 = np.int64(int(col @ col) - sum_sq)
    denom = n11 + n01 + n10
    return 1.0 if denom == 0 else float(n11 / denom)


@validate_params(
    {
        "selected": ["array-like"],
        "relevant": ["array-like"],
        "n_features": [None, IntInterval(0, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def fscore_selection(selected, relevant, n_features: int | None = None) -> float:
    """F-score (harmonic mean of precision and recall) of a variable selection.

    Parameters
    ----------
    selected, relevant : array_like
        Either boolean masks of length ``n_features`` or integer index sets.
    n_features : int, optional
        When given, the length that boolean masks must have.

    Returns
    -------
    float
        ``2 P R / (P + R)`` with precision ``P`` and recall ``R``; 0.0 when no selected variable is
        relevant.

    References
    ----------
    Mattei, P.-A., Bouveyron, C. & Latouche, P. (2016). Globally sparse probabilistic PCA. AISTATS,
    Section 3.2 and Figure 2 (the F-score of the selected variables).

    Examples
    --------
    >>> from repro.metrics import fscore_selection
    >>> print(round(fscore_selection([0, 1, 2], [1, 2, 3, 4]), 4))
    0.5714
    >>> fscore_selection([True, True, False], [True, True, False], n_features=3)
    1.0
    """
    sel = _as_index_set(selected, n_features, "selected")
    rel = _as_index_set(relevant, n_features, "relevant")
    tp = len(sel & rel)
    if tp == 0:
        return 0.0
    precision = tp / len(sel)
    recall = tp / len(rel)
    return 2 * precision * recall / (precision + recall)


def _as_index_set(v, n_features, name) -> set[int]:
    arr = np.asarray(v)
    if arr.dtype == bool:
        if n_features is not None and arr.size != n_features:
            raise ValueError(f"{name} mask has length {arr.size}; expected n_features={n_features}.")
        return set(np.flatnonzero(arr).tolist())
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must be a boolean mask or integer indices; got dtype {arr.dtype}.")
    if arr.size and arr.min() < 0:
        raise ValueError(
            f"{name} holds negative indices ({int(arr.min())}); pass feature indices 0..n_features-1 "
            "(a negative index would name another feature than the one counted from the start)."
        )
    if arr.size and n_features is not None and arr.max() >= n_features:
        raise ValueError(
            f"{name} holds index {int(arr.max())}, out of range for n_features={n_features}; pass feature "
            f"indices 0..{n_features - 1}."
        )
    return set(arr.ravel().tolist())


@validate_params(
    {
        "X": ["array-like", "sparse matrix", Covariance],
        "components": ["array-like"],
        "cardinality": [None, POSITIVE_INT, "array-like"],
        "rank": [POSITIVE_INT],
        "n_samples": [POSITIVE_INT],
        "nonneg": ["boolean"],
    },
    prefer_skip_nested_validation=False,  # **kwargs go to spannogram_bound, which validates them
)
def certified_fraction(
    X, components, cardinality=None, *, rank: int = 3, n_samples: int = 10000, nonneg: bool = True, **kwargs
) -> np.ndarray:
    """A certificate for any method's sparse components: ``w'Aw / bound_k`` (Asteris et al. 2014).

    The bound is :func:`repro.spannogram.spannogram_bound` (default: a deterministic net, so the
    certificate is rigorous): the unknown optimum ``max x'Ax`` over unit ``k``-sparse (non-negative)
    ``x`` is at most ``bound_k``, so a component ``w`` reaches at least ``w'Aw / bound_k`` of it,
    whichever method (EM, NSPCA, thresholding, the spannogram) produced it.

    Parameters
    ----------
    X : array or scipy sparse matrix (n_samples, n_features), or Covariance
        The data (centred inside; a sparse matrix through :meth:`repro.Covariance.from_data`, never
        densified) or covariance ``A`` the components were fitted on.
    components : ndarray (n_components, n_features) or (n_features,)
        Unit-norm loadings (rows); with ``nonneg=True`` they must be non-negative (or non-positive).
    cardinality : int, sequence of int, or None
        ``k`` per component; ``None``: each component's own number of non-zeros.
    rank, n_samples, nonneg, **kwargs
        Passed to :func:`repro.spannogram.spannogram_bound` (``net``, ``random_state``, ...).

    Returns
    -------
    ndarray (n_components,)
        Certified fraction of the optimum, in ``(0, 1]`` for a unit-norm feasible component.

    See Also
    --------
    repro.spannogram_bound, repro.SpannogramPCA

    References
    ----------
    Asteris, M., Papailiopoulos, D. & Dimakis, A. G. (2014). Nonnegative sparse PCA with provable
    guarantees. ICML, Theorem 2 and Section 5 (the data-dependent upper bound that places a solution
    within a fraction of the unknown optimum).

    Examples
    --------
    >>> import numpy as np
    >>> from repro.metrics import certified_fraction
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((50, 6)) @ np.diag([3.0, 2.0, 1.0, 1.0, 1.0, 1.0])
    >>> w = np.zeros(6)
    >>> w[0] = 1.0
    >>> f = certified_fraction(X, w, cardinality=2, net="random", random_state=0)
    >>> bool(0.0 < f[0] <= 1.0)
    True
    """
    from .spannogram import spannogram_bound
    from .spannogram._common import _scaled_cov

    _check_order(X, components, "certified_fraction", first="X")
    cov = _scaled_cov(X, method="certified_fraction").cov  # X / s: the ratio does not depend on s
    W = _rows(components, cov.n_features)
    norms = np.linalg.norm(W, axis=1)
    if np.any(np.abs(norms - 1.0) > 1e-6):
        raise ValueError("components must have unit-norm rows; divide each row by its norm first.")
    if nonneg and np.any((W.max(axis=1) > 0) & (W.min(axis=1) < 0)):
        raise ValueError(
            "components mix signs, so the non-negative bound does not apply; pass nonneg=False for signed "
            "sparse components."
        )
    nnz = np.count_nonzero(W, axis=1)
    ks = nnz if cardinality is None else np.broadcast_to(np.atleast_1d(cardinality), nnz.shape)
    ks = np.asarray(ks, dtype=np.int64)
    if np.any(nnz > ks):
        raise ValueError(
            f"a component has more non-zeros ({nnz.max()}) than its cardinality; pass the right cardinality."
        )
    bounds = np.atleast_1d(spannogram_bound(cov, ks, rank=rank, n_samples=n_samples, nonneg=nonneg, **kwargs))
    return np.atleast_1d(cov.quad(W.T)) / bounds
