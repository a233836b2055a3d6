"""Simple thresholding of the first principal component (Cadima & Jolliffe 1995).

Keep the ``K`` entries of the first principal component with the largest magnitudes, set the others
to zero and recompute optimal weights on that support (the leading eigenvector of the covariance
restricted to it). Sigg & Buhmann (2008, Fig. 2 middle) plot it "after renormalization" as a reference.

Ties: magnitudes within a relative 1e-12 of the largest loading (:func:`repro._ties.order_tied`)
tie, and ties at the ``K``-th place go to the lowest index, so two loadings equal in exact arithmetic (a
symmetric pair of variables) are not ordered by the last bits of the eigenvector.

References
----------
J. Cadima and I. T. Jolliffe. Loadings and correlations in the interpretation of principal components.
Journal of Applied Statistics 22(2), 203-214, 1995.
C. D. Sigg and J. M. Buhmann. Expectation-maximization for sparse and non-negative PCA. ICML 2008.
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.utils._param_validation import validate_params

from .._base import POSITIVE_INT, unscale_path
from .._rescale import rescaled
from .._threads import blas_limited
from .._ties import order_tied
from .._validation import check_cardinalities
from ..em_sparse_pca import CardinalityPath
from ..em_sparse_pca.operators import _leading_pc
from ..linalg import Covariance
from ._common import cardinality_path, check_data, data_factor

__all__ = ["simple_thresholding", "thresholding_path"]


@validate_params(
    {
        "X": ["array-like", Covariance],
        "cardinalities": [POSITIVE_INT, "array-like"],
        "renormalize": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def thresholding_path(X, cardinalities, *, renormalize: bool = True) -> CardinalityPath:
    """Simple thresholding for every cardinality in one call (one principal component, reused).

    Parameters
    ----------
    X : array, shape (n_samples, n_features), or :class:`repro.linalg.Covariance`
        Data (centred here; covariance with ddof=1) or a covariance.
    cardinalities : sequence of int
        Each in ``1..n_features``.
    renormalize : bool
        Compute the renormalized loadings (``components_opt``). Without renormalization the thresholded
        PC is only rescaled to unit norm.

    Returns
    -------
    CardinalityPath
        ``components``: the thresholded, unit-norm first PC; ``components_opt``: optimal weights on that
        support. ``n_iter`` is 0.

    See Also
    --------
    simple_thresholding : one cardinality.
    repro.em_sparse_pca_path : the EM path of Sigg & Buhmann (2008) that it is compared with.

    References
    ----------
    Cadima, J. & Jolliffe, I. T. (1995). Loadings and correlations in the interpretation of principal
    components. J. Applied Statistics 22:203-214. Sigg, C. D. & Buhmann, J. M. (2008). ICML,
    Figure 2 (middle), "Thresholding" after renormalization.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 10)) @ np.diag(np.linspace(3, 0.5, 10))
    >>> X[:, :4] += 2 * rng.standard_normal((100, 1))  # four correlated variables
    >>> from repro.baselines import thresholding_path
    >>> path = thresholding_path(X, [1, 2, 3, 4])
    >>> np.count_nonzero(path.components_opt, axis=1).tolist()
    [1, 2, 3, 4]
    >>> bool(np.all(np.diff(path.variance_opt) > 0))
    True
    """
    return _thresholding_path(X, cardinalities, bool(renormalize))


@validate_params(
    {"X": ["array-like", Covariance], "cardinality": [POSITIVE_INT], "renormalize": ["boolean"]},
    prefer_skip_nested_validation=True,
)
def simple_thresholding(X, cardinality: int, *, renormalize: bool = True) -> tuple[np.ndarray, float]:
    """One cardinality of :func:`thresholding_path`.

    Parameters
    ----------
    X : array, shape (n_samples, n_features), or :class:`repro.linalg.Covariance`
        Data (centred here; covariance with ddof=1) or a covariance.
    cardinality : int
        Number of non-zeros, ``1..n_features``.
    renormalize : bool, default True
        Return the optimal weights on the thresholded support (else the thresholded PC at unit norm).

    Returns
    -------
    w : ndarray, shape (n_features,)
        Unit norm, ``cardinality`` non-zeros (renormalized unless ``renormalize=False``).
    variance : float
        ``w'Cw``.

    See Also
    --------
    thresholding_path

    References
    ----------
    Cadima, J. & Jolliffe, I. T. (1995). Loadings and correlations in the interpretation of principal
    components. J. Applied Statistics 22:203-214.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 10)) @ np.diag(np.linspace(3, 0.5, 10))
    >>> X[:, :4] += 2 * rng.standard_normal((100, 1))  # four correlated variables
    >>> from repro.baselines import simple_thresholding
    >>> w, variance = simple_thresholding(X, 3)
    >>> np.flatnonzero(w).tolist(), round(float(np.linalg.norm(w)), 12)
    ([0, 1, 2], 1.0)
    """
    p = _thresholding_path(X, [cardinality], bool(renormalize))
    if renormalize:
        return p.components_opt[0], float(p.variance_opt[0])
    return p.components[0], float(p.variance[0])


@blas_limited
@rescaled(unscale_path, "thresholding_path", check=check_data, covariance=True)
def _thresholding_path(X, cardinalities, renormalize: bool) -> CardinalityPath:
    """:func:`thresholding_path` on checked parameters; ``X`` is checked once, by the decorator."""
    A, _ = data_factor(X)
    D = A.shape[1]
    ks = check_cardinalities(cardinalities, D)
    t0 = time.perf_counter()
    pc = _leading_pc(A)
    order = order_tied(np.abs(pc))  # near-ties at the K-th place (round-off of the PC) by index
    init_time = time.perf_counter() - t0

    def threshold(K):  # the K largest loadings of the PC, at unit norm; no iterations
        S = order[:K]
        w = np.zeros(D)
        w[S] = pc[S]
        return w / np.linalg.norm(w), 0

    return cardinality_path("Thresholding", A, ks, threshold, renormalize=renormalize, init_time=init_time)
