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

from .._base import scale_free
from .._rescale import rescaled
from .._threads import blas_limited
from .._validation import check_array, check_int

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


@rescaled(scale_free)
def svd_entropy(X) -> float:
    """Normalized SVD entropy of ``X`` (in ``[0, 1]``; Varshavsky et al. 2006, Eq. 1-2)."""
    X = check_array(X, "X")
    r = min(X.shape)
    if r < 2:
        raise ValueError("X needs at least 2 samples and 2 features for a normalized SVD entropy.")
    if not X.any():
        raise ValueError("X is all zeros: its SVD entropy (Eq. 1-2, eigenvalues over their sum) is 0/0.")
    s = np.linalg.svd(X, compute_uv=False)
    return float(_entropy_from_eigvals(s**2, r))


@blas_limited
@rescaled(scale_free)
def ce_scores(X) -> np.ndarray:
    """Contribution of each feature to the SVD entropy, ``CE_i = E(X) - E(X without feature i)``.

    Parameters
    ----------
    X : array, shape (n_samples, n_features)
        Used as given (no centering).

    Returns
    -------
    ce : ndarray, shape (n_features,)
    """
    X = check_array(X, "X", min_samples=2, min_features=3)
    N, D = X.shape
    E_all = svd_entropy(X)
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


def cesr_select(X, n_features: int) -> np.ndarray:
    """Simple ranking (SR): the ``n_features`` features of largest CE, best first.

    Returns
    -------
    idx : ndarray of int, shape (n_features,)
        Column indices, in decreasing order of ``CE`` (ties by lower index).
    """
    X = check_array(X, "X", min_samples=2, min_features=3)
    m = check_int(n_features, "n_features", low=1, high=X.shape[1])
    ce = ce_scores(X)
    order = np.lexsort((np.arange(ce.size), -ce))
    return order[:m]
