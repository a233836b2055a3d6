"""PathSPCA: the approximate greedy forward path of d'Aspremont, Bach & El Ghaoui (2008).

With ``C = A'A`` (``a_i`` the columns of a factor ``A``; here the scaled centred data, so ``C`` is the
sample covariance), the approximate greedy search (their Algorithm 2, "PathSPCA") is

1. ``I_1 = {argmax_i C_ii}``;
2. ``x_k`` = leading eigenvector of ``sum_{j in I_k} a_j a_j'`` (equivalently ``x_k = A_I v / ||A_I v||``
   with ``v`` the leading eigenvector of ``C[I_k, I_k]``);
3. ``i_k = argmax_{i not in I_k} (x_k' a_i)^2``, ``I_(k+1) = I_k + {i_k}``.

The loadings for cardinality ``k`` are ``v`` on ``I_k`` (optimal weights for that pattern, so no
renormalization is needed) and the variance is ``lambda_max(C[I_k, I_k])``. Each step costs one product
``C[:, I] v`` -- through the data (``A'(A_I v)``, O(ND)) when ``N < D``, so memory stays O(ND) and the
``D x D`` matrix is never formed -- plus the leading eigenpair of ``C[I, I]`` (``k x k``) or, once ``k``
exceeds ``N``, of the ``N x N`` Gram matrix ``A_I A_I'`` (updated by a rank-one term per step).

Ties. Both ``argmax`` steps break ties by the lowest index among the values within a relative
:data:`repro._ties.TIE_RTOL` (1e-12) of the maximum (of ``max_i C_ii`` for the start, of the largest score
``(x_k' a_i)^2`` for a step), not by whichever value round-off made larger. The authors' code
(``PartialPathCov.m`` asks for a covariance with decreasing diagonal and starts at variable 1; its
``PythonPathSPCA.py`` takes ``argmax``) returns the first of exactly equal values: the same rule on exact
ties. The method itself is sensitive here: on a correlation matrix every ``C_ii`` is 1, the start is an
arbitrary variable (the first one, by this rule), and the path depends on it and so on the column order --
Communities (correlation, Berk & Bertsimas) k = 10: 7.187 from variable 0, 7.422 from 1, 7.545 from 2;
Pit Props k = 5: 3.406 from variable 0, 2.895 from 2.

References
----------
A. d'Aspremont, F. Bach and L. El Ghaoui. Optimal solutions for sparse principal component analysis.
JMLR 9, 1269-1294, 2008 (arXiv 0707.0705, "Full regularization path for sparse principal component
analysis", ICML 2007).
"""

from __future__ import annotations

import time

import numpy as np
import scipy.linalg
from sklearn.utils._param_validation import validate_params

from .. import _shortcuts
from .._base import POSITIVE_INT, IntInterval, unscale_path
from .._rescale import rescaled
from .._threads import blas_limited
from .._ties import argmax_tied
from .._validation import check_cardinalities, check_int
from ..em_sparse_pca import CardinalityPath
from ..linalg import Covariance
from ._common import check_data, data_factor

__all__ = ["pathspca"]


@validate_params(
    {
        "X": ["array-like", Covariance],
        "cardinalities": [None, POSITIVE_INT, "array-like"],
        "max_cardinality": [None, POSITIVE_INT],
        "start": [None, IntInterval(0, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def pathspca(
    X, cardinalities=None, *, max_cardinality: int | None = None, start: int | None = None
) -> CardinalityPath:
    """The PathSPCA greedy path up to the largest requested cardinality, in one call.

    Parameters
    ----------
    X : array, shape (n_samples, n_features), or :class:`repro.linalg.Covariance`
        Data (centred here; covariance with ddof=1) or a covariance.
    cardinalities : sequence of int, optional
        Cardinalities to report (each in ``1..n_features``). Default ``1..max_cardinality``.
    max_cardinality : int, optional
        Default ``max(cardinalities)``, or ``n_features`` when neither is given.
    start : int, optional
        Index of the first variable. Default: the largest variance ``argmax_i C_ii`` (the algorithm's
        rule; values within a relative 1e-12 of the largest tie, and ties go to the lowest index). On
        standardized data every ``C_ii`` is 1 (up to round-off) and this rule picks the first variable, an
        arbitrary one: the path depends on the column order.

    Returns
    -------
    CardinalityPath
        ``components == components_opt`` (PathSPCA's weights are optimal on their pattern);
        ``n_iter`` is ``K`` (greedy steps); ``time[j]`` is the cumulative time of the greedy steps
        ``1..cardinalities[j]`` -- what it costs PathSPCA to produce that ``K`` -- and ``init_time`` the
        shared set-up.

    See Also
    --------
    repro.baselines.gspca_path : the exact greedy forward (and backward) search.
    repro.em_sparse_pca_path : the EM path of Sigg & Buhmann (2008), compared with PathSPCA in Fig. 2.

    References
    ----------
    d'Aspremont, A., Bach, F. & El Ghaoui, L. (2008). Optimal solutions for sparse principal component
    analysis. JMLR 9:1269-1294, Algorithm 2 (approximate greedy search).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 10)) @ np.diag(np.linspace(3, 0.5, 10))
    >>> X[:, :4] += 2 * rng.standard_normal((100, 1))  # four correlated variables
    >>> from repro.baselines import pathspca
    >>> path = pathspca(X, [1, 2, 3, 4])
    >>> [np.flatnonzero(w).tolist() for w in path.components]
    [[0], [0, 1], [0, 1, 2], [0, 1, 2, 3]]
    >>> bool(np.allclose(path.components, path.components_opt))  # optimal weights on each pattern
    True
    """
    return _pathspca(X, cardinalities, max_cardinality, start)


@blas_limited
@rescaled(unscale_path, "pathspca", check=check_data, covariance=True)
def _pathspca(X, cardinalities, max_cardinality, start) -> CardinalityPath:
    """:func:`pathspca` on checked parameters; ``X`` is checked once, by the decorator (the bounds that
    depend on ``n_features`` here)."""
    A, _ = data_factor(X)
    D = A.shape[1]
    if cardinalities is None:
        kmax = D if max_cardinality is None else check_int(max_cardinality, "max_cardinality", low=1, high=D)
        ks = np.arange(1, kmax + 1)
    else:
        ks = check_cardinalities(cardinalities, D)
        kmax = int(ks.max())
        if max_cardinality is not None:
            kmax = max(kmax, check_int(max_cardinality, "max_cardinality", low=1, high=D))
    if start is not None:
        start = check_int(start, "start", low=0, high=D - 1)
    res = _greedy_path(A, kmax, start)
    idx = ks - 1
    comps = res["components"][idx]
    var = res["variance"][idx]
    return CardinalityPath(
        method="PathSPCA",
        cardinalities=ks.astype(np.int64),
        components=comps,
        variance=var,
        components_opt=comps.copy(),
        variance_opt=var.copy(),
        n_iter=ks.astype(np.int64),
        time=res["cumtime"][idx],
        init_time=res["init_time"],
    )


def _greedy_path(A: np.ndarray, kmax: int, start: int | None = None) -> dict:
    """Run the approximate greedy search for ``k = 1..kmax`` on the factor ``A`` (``C = A'A``)."""
    N, D = A.shape
    t0 = time.perf_counter()
    # N >= D: C (D x D) is cheaper to multiply than the data; else the data and, past k = N, the Gram
    # matrix of the pattern (exact shortcuts, off with repro._shortcuts.off(): C as the paper writes it)
    use_cov = N >= D or not _shortcuts.enabled
    Cfull = A.T @ A if use_cov else None
    diag = np.diag(Cfull).copy() if use_cov else np.einsum("ij,ij->j", A, A)
    init_time = time.perf_counter() - t0

    comps = np.zeros((kmax, D))
    var = np.empty(kmax)
    cumtime = np.empty(kmax)
    in_set = np.zeros(D, dtype=bool)
    subset: list[int] = []
    m = kmax if use_cov else min(kmax, N)
    S = np.zeros((m, m))  # C[I, I], grown one row and column a step while k <= m
    G = None  # A_I A_I', used once k > N (N < D only)
    elapsed = 0.0
    # I_1: the largest variance, near-ties (a correlation matrix's diagonal) to the lowest index
    i_next = argmax_tied(diag) if start is None else int(start)
    for k in range(1, kmax + 1):
        t1 = time.perf_counter()
        i = i_next
        # Grow the pattern by i.
        if k <= m:
            if use_cov:
                S[k - 1, : k - 1] = S[: k - 1, k - 1] = Cfull[subset, i]
            else:
                col = A[:, subset].T @ A[:, i] if subset else np.empty(0)
                S[k - 1, : k - 1] = S[: k - 1, k - 1] = col
            S[k - 1, k - 1] = diag[i]
        subset.append(i)
        in_set[i] = True
        idx = np.array(subset)
        # Leading eigenpair for the pattern I_k.
        if use_cov or k <= N:
            lam, v = _top_eigh(S[:k, :k])
            u = A[:, idx] @ v if not use_cov else None
        else:
            if G is None:
                AI = A[:, idx]
                G = AI @ AI.T
            else:
                G += np.outer(A[:, i], A[:, i])
            lam, x = _top_eigh(G)
            v = A[:, idx].T @ x
            v /= np.linalg.norm(v)
            u = x * np.sqrt(max(lam, 0.0))
        if v[np.argmax(np.abs(v))] < 0:
            v = -v
            if u is not None:
                u = -u
        comps[k - 1, idx] = v
        var[k - 1] = lam
        # Next variable: argmax_i (x' a_i)^2 over i not in I, with x proportional to A_I v.
        if k < kmax:
            z = Cfull[:, idx] @ v if use_cov else A.T @ u
            score = z * z
            score[in_set] = -np.inf
            i_next = argmax_tied(score)  # near-ties (round-off of z) to the lowest index
        elapsed += time.perf_counter() - t1
        cumtime[k - 1] = elapsed
    return {"components": comps, "variance": var, "cumtime": cumtime, "init_time": init_time}


def _top_eigh(M: np.ndarray) -> tuple[float, np.ndarray]:
    n = M.shape[0]
    vals, vecs = scipy.linalg.eigh(M, subset_by_index=[n - 1, n - 1])
    return float(vals[0]), vecs[:, 0]
