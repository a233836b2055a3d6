"""CE + SR: feature filtering by contribution to the SVD entropy (Varshavsky et al. 2006).

The SVD entropy of a data matrix with singular values ``s_j`` is

    E = -1/log(r) sum_j V_j log V_j,      V_j = s_j^2 / sum_k s_k^2,

``r`` the number of singular values (``min(n_samples, n_features)``). The contribution of feature ``i``
is the drop of entropy when it is left out, ``CE_i = E(X) - E(X without column i)``; simple ranking (SR)
keeps the ``m`` features of largest ``CE``.

Leaving out column ``x_i`` changes the Gram matrix by a rank-one term, ``X X' - x_i x_i'`` (``N x N``),
so when ``N < D`` the ``D`` leave-one-out spectra are ``D`` small symmetric eigenvalue problems, solved in
batches; when ``N >= D`` they are the spectra of the principal submatrices of ``X'X`` without row and
column ``i``.

The entropy is computed on ``X`` as given; the paper's preprocessing (if any) is the caller's.

References
----------
R. Varshavsky, A. Gottlieb, M. Linial and D. Horn. Novel unsupervised feature filtering of biological
data. Bioinformatics 22(14), e507-e513, 2006.
C. D. Sigg and J. M. Buhmann. Expectation-maximization for sparse and non-negative PCA. ICML 2008, Sec. 5.3.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils._param_validation import validate_params

from .._base import POSITIVE_INT, scale_free
from .._rescale import rescaled
from .._threads import blas_limited
from .._validation import check_array, check_int, refuse_dask

__all__ = ["ce_scores", "cesr_select", "svd_entropy"]

_BATCH_BYTES = 32 * 2**20  # memory for one batch of stacked small matrices


def _entropy_from_eigvals(lam: np.ndarray, r: int) -> np.ndarray:
    """Normalized entropy of each row of eigenvalues ``lam`` (= squared singular values), ``r`` values."""
    lam = np.clip(lam, 0.0, None)
    tot = lam.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        V = np.where(tot > 0, lam / tot, 0.0)
        t = np.where(V > 0, V * np.log(V), 0.0)
    return -t.sum(axis=-1) / np.log(r)


def _check_entropy_data(X) -> np.ndarray:
    return check_array(X, "X")


def _check_ranking_data(X) -> np.ndarray:
    return check_array(X, "X", min_samples=2, min_features=3)


@validate_params({"X": ["array-like"]}, prefer_skip_nested_validation=True)
@rescaled(scale_free, check=_check_entropy_data)
def svd_entropy(X) -> float:
    """Normalized SVD entropy of ``X`` (in ``[0, 1]``; Varshavsky et al. 2006, Eq. 1-2).

    Parameters
    ----------
    X : array_like, shape (n_samples, n_features)
        Used as given (no centering); at least 2 samples and 2 features, not all zeros.

    Returns
    -------
    float
        ``-1/log(r) sum_j V_j log V_j`` with ``V_j = s_j^2 / sum_k s_k^2``: 0 for a rank-one matrix, 1
        when all ``r`` singular values are equal.

    See Also
    --------
    ce_scores

    References
    ----------
    Varshavsky, R., Gottlieb, A., Linial, M. & Horn, D. (2006). Novel unsupervised feature filtering of
    biological data. Bioinformatics 22:e507-e513, Eq. 1-2.

    Examples
    --------
    >>> import numpy as np
    >>> from repro.baselines import svd_entropy
    >>> print(round(svd_entropy(np.eye(3)), 12), round(svd_entropy(np.ones((3, 4))), 12))
    1.0 0.0
    """
    refuse_dask(X)  # passed through by rescaled, for the functions that read one by chunks
    return _svd_entropy(X)


def _svd_entropy(X: np.ndarray) -> float:
    """:func:`svd_entropy` of a checked array."""
    r = min(X.shape)
    if r < 2:
        raise ValueError("X needs at least 2 samples and 2 features for a normalized SVD entropy.")
    if not X.any():
        raise ValueError("X is all zeros: its SVD entropy (Eq. 1-2, eigenvalues over their sum) is 0/0.")
    s = np.linalg.svd(X, compute_uv=False)
    return float(_entropy_from_eigvals(s**2, r))


@validate_params({"X": ["array-like"]}, prefer_skip_nested_validation=True)
@blas_limited
@rescaled(scale_free, check=_check_ranking_data)
def ce_scores(X) -> np.ndarray:
    """Contribution of each feature to the SVD entropy, ``CE_i = E(X) - E(X without feature i)``.

    Parameters
    ----------
    X : array, shape (n_samples, n_features)
        Used as given (no centering).

    Returns
    -------
    ce : ndarray, shape (n_features,)
        ``CE_i``: positive for a feature that raises the entropy (carries its own direction), negative
        for one that lowers it.

    See Also
    --------
    svd_entropy, cesr_select

    References
    ----------
    Varshavsky, R., Gottlieb, A., Linial, M. & Horn, D. (2006). Novel unsupervised feature filtering of
    biological data. Bioinformatics 22:e507-e513 (the contribution to the entropy, CE).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = np.outer(rng.standard_normal(20), np.ones(6))  # six copies of one signal ...
    >>> X[:, 4:] = rng.standard_normal((20, 2))  # ... and two independent features
    >>> from repro.baselines import ce_scores
    >>> ce = ce_scores(X)
    >>> (ce[4:] > 0).tolist(), (ce[:4] < 0).tolist()
    ([True, True], [True, True, True, True])
    """
    refuse_dask(X)
    return _ce_scores(X)


def _ce_scores(X: np.ndarray) -> np.ndarray:
    """:func:`ce_scores` of a checked array (at least 2 samples and 3 features)."""
    N, D = X.shape
    E_all = _svd_entropy(X)
    ce = np.empty(D)
    if N <= D - 1:
        # Eigenvalues of X X' - x_i x_i' (N x N), r = N values each.
        G = X @ X.T
        r = N
        batch = max(1, _BATCH_BYTES // (8 * N * N))
        for start in range(0, D, batch):
            cols = X[:, start : start + batch].T  # (b, N)
            M = G[None, :, :] - cols[:, :, None] * cols[:, None, :]
            lam = np.linalg.eigvalsh(M)
            ce[start : start + batch] = E_all - _entropy_from_eigvals(lam, r)
    else:
        # Eigenvalues of X'X without row and column i ((D-1) x (D-1)), r = D - 1 values each.
        C = X.T @ X
        r = D - 1
        batch = max(1, _BATCH_BYTES // (8 * r * r))
        idx_all = np.arange(D)
        for start in range(0, D, batch):
            ids = idx_all[start : start + batch]
            keep = np.array([np.delete(idx_all, i) for i in ids])  # (b, D-1)
            M = C[keep[:, :, None], keep[:, None, :]]
            lam = np.linalg.eigvalsh(M)
            ce[start : start + batch] = E_all - _entropy_from_eigvals(lam, r)
    return ce


@validate_params({"X": ["array-like"], "n_features": [POSITIVE_INT]}, prefer_skip_nested_validation=True)
@blas_limited
@rescaled(scale_free, check=_check_ranking_data)
def cesr_select(X, n_features: int) -> np.ndarray:
    """Simple ranking (SR): the ``n_features`` features of largest CE, best first.

    Parameters
    ----------
    X : array_like, shape (n_samples, n_features_total)
        Used as given (no centering); at least 2 samples and 3 features.
    n_features : int
        How many features to keep, ``1..n_features_total``.

    Returns
    -------
    idx : ndarray of int, shape (n_features,)
        Column indices, in decreasing order of ``CE`` (ties by lower index).

    See Also
    --------
    ce_scores

    References
    ----------
    Varshavsky, R., Gottlieb, A., Linial, M. & Horn, D. (2006). Novel unsupervised feature filtering of
    biological data. Bioinformatics 22:e507-e513 (simple ranking, SR). Sigg, C. D. & Buhmann, J. M.
    (2008). ICML, Section 5.3 and Figure 4 ("CE + SR").

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = np.outer(rng.standard_normal(20), np.ones(6))  # six copies of one signal ...
    >>> X[:, 4:] = rng.standard_normal((20, 2))  # ... and two independent features
    >>> from repro.baselines import cesr_select
    >>> sorted(cesr_select(X, 2).tolist())
    [4, 5]
    """
    refuse_dask(X)
    m = check_int(n_features, "n_features", low=1, high=X.shape[1])
    ce = _ce_scores(X)
    order = np.lexsort((np.arange(ce.size), -ce))
    return order[:m]
