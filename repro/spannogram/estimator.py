"""The door of the spannogram: :class:`SpannogramPCA`, several components by Algorithm 3 one after another
(Asteris et al. 2014, Sec. 7), with feature removal or Schur complement deflation."""

from __future__ import annotations

import numbers
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import StrOptions

from .._base import POSITIVE_INT, RANDOM_STATE, ProjectionMixin
from .._threads import blas_limited
from .._validation import (
    check_array,
    check_cardinality,
    check_features,
    check_n_components,
    check_random_state,
    is_dask,
    is_sparse,
)
from ..linalg import Covariance
from ._common import _NETS, _scaled_cov
from .sampled import spannogram_path

__all__ = ["SpannogramPCA"]


# --------------------------------------------------------------------------- estimator
_DEFLATIONS = ("remove", "mackey")


class SpannogramPCA(ProjectionMixin, BaseEstimator):
    """Non-negative (or signed) sparse PCA by the spannogram, Algorithm 3 (Asteris et al. 2014).

    Each component is the best of ``n_samples`` rank-1 solutions on ``A_d`` (kernel
    :func:`repro.spannogram._kernels.allk_pass`), with its certificate ``upper_bound_``.

    Parameters
    ----------
    n_components : int, default 1
        Components computed one after another (Sec. 7).
    cardinality : int, sequence of int, or None
        ``k`` for every component, or one per component. ``None`` (default): no sparsity constraint
        (``k = n_features``), the non-negative (or plain) principal component, as for
        :class:`repro.EMSparsePCA`: the one choice that fits any data without knowing its size; pass the
        cardinality you want for a sparse component.
    rank : int or "auto", default "auto"
        ``d``. ``"auto"``: 3 (the paper's experiments), or the rank the data can have when it is lower
        (``min(n_samples - 1, n_features)``). An int is used as given and refused when it exceeds that
        rank (never lowered silently); with ``deflation="remove"`` a later component whose remaining
        features are fewer than ``d`` uses their number.
    n_samples : int
        Samples ``c`` per component (1e4 for ``d = 3``, ``eps = 0.1``).
    nonneg : bool
        ``False``: the signed sparse PC (Papailiopoulos et al. 2013).
    random_state : None, int or Generator
        Seed of the samples (``net="random"``).
    net : {"random", "grid", "exact"}
        See :func:`spannogram_path` ("exact" needs ``rank=2``).
    deflation : {"remove", "mackey"}
        ``"remove"``: the features active in a component are removed before the next (as for Fig. 3), so
        non-negative components are orthogonal (disjoint supports). ``"mackey"``: Schur complement
        deflation ``A <- A - Aww'A / (w'Aw)`` (Mackey 2008), features kept.

    Attributes
    ----------
    components_ : ndarray (n_components, n_features)
        Unit-norm sparse loadings as rows, at most ``cardinality`` non-zeros each, non-negative when
        ``nonneg``; with ``deflation="remove"`` their supports are disjoint.
    explained_variance_ : ndarray (n_components,)
        ``w'Cw`` on the (undeflated) sample covariance of ``X``.
    upper_bound_ : ndarray (n_components,)
        Upper bound on the optimum of each component's problem (on the matrix it was computed from):
        rigorous for ``net`` "grid" and "exact", with probability ``1 - 1/n_features`` for "random"
        (the paper's Theorem 2; see the module docstring).
    n_nonzero_ : ndarray of int (n_components,)
        Non-zeros of each component: fewer than its cardinality when the best sample's ``Vc`` has fewer
        positive entries.
    mean_ : ndarray (n_features,)
        Column means of the training data (subtracted by ``transform``).
    n_features_in_ : int
        Number of features seen by ``fit``.
    feature_names_in_ : ndarray of str, shape ``(n_features_in_,)``
        Column names of ``X`` when ``fit`` got a DataFrame with string column names (only then);
        ``transform`` and ``score`` then refuse a DataFrame whose columns differ or are reordered.

    See Also
    --------
    spannogram_path : one component for every cardinality.
    repro.EMSparsePCA : the EM method the paper compares with.

    References
    ----------
    Asteris, M., Papailiopoulos, D. & Dimakis, A. G. (2014). Nonnegative sparse PCA with provable
    guarantees. ICML, Algorithm 3 and Section 7 (several components).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 10)) @ np.diag(np.linspace(3, 0.5, 10))
    >>> X[:, :4] += 2 * rng.standard_normal((100, 1))  # four correlated variables
    >>> from repro import SpannogramPCA
    >>> est = SpannogramPCA(n_components=2, cardinality=3, n_samples=2000, random_state=0).fit(X)
    >>> bool((est.n_nonzero_ <= 3).all()), bool((est.components_ >= 0).all())
    (True, True)
    >>> int(np.count_nonzero(est.components_[0] * est.components_[1]))  # disjoint supports
    0
    >>> bool(np.all(est.explained_variance_ <= est.upper_bound_))
    True
    """

    _parameter_constraints: ClassVar[dict] = {
        "n_components": [POSITIVE_INT],
        "cardinality": [None, POSITIVE_INT, "array-like"],
        "rank": [POSITIVE_INT, StrOptions({"auto"})],
        "n_samples": [POSITIVE_INT],
        "nonneg": ["boolean"],
        "random_state": RANDOM_STATE,
        "net": [StrOptions(set(_NETS))],
        "deflation": [StrOptions(set(_DEFLATIONS))],
    }

    def __init__(
        self,
        n_components=1,
        *,
        cardinality=None,
        rank="auto",
        n_samples=10000,
        nonneg=True,
        random_state=None,
        net="random",
        deflation="remove",
    ):
        self.n_components = n_components
        self.cardinality = cardinality
        self.rank = rank
        self.n_samples = n_samples
        self.nonneg = nonneg
        self.random_state = random_state
        self.net = net
        self.deflation = deflation

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit on data ``X`` (n_samples, n_features); returns self.

        Data outside ``[2^-256, 2^256]`` are fitted as ``X / s`` (``s`` a power of two) and the variances
        scaled back; data with no variance, and variances float64 cannot hold, are refused.

        A scipy sparse ``X`` (CSR, CSC, COO and the others, matrices or arrays) is never densified: the
        covariance is the operator of :meth:`repro.Covariance.from_data` through ``X`` itself, the
        centring implicit (its eigenpairs from the smaller Gram matrix, or by Lanczos when both sizes
        exceed 2048; ``deflation="remove"`` keeps the remaining columns of ``X``, ``"mackey"`` adds a
        rank-one correction per component). NaN among the stored values is refused (the entries not
        stored are zeros, not missing).

        A ``dask.array`` stays on the workers (or wherever its scheduler keeps it): one distributed pass
        forms its column means and ``p x p`` covariance (:func:`repro._chunked.dask_covariance`), and the
        client holds only those and runs the spannogram on the covariance. ``p`` is limited by
        ``repro._chunked.CLIENT_LIMIT_BYTES`` (a clear error above it).

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
        from .._chunked import _dask_covariance

        if is_dask(X):
            n, mean, A = _dask_covariance(X, "X")
            self._fit_cov(Covariance._derived(A / (n - 1), n_samples=n))
            self.mean_ = mean
            return self
        sparse = is_sparse(X)
        if sparse:  # checked, refused without variance, X / s when badly scaled, never densified
            sc = _scaled_cov(X, method="SpannogramPCA")
            X = sc.cov.data  # the centred factor: X's shape
        else:
            X = check_array(X, "X", min_samples=2)
        for name, value in (("n_components", self.n_components), ("cardinality", self.cardinality)):
            entries = np.atleast_1d(value).tolist() if value is not None else []
            top = max(entries) if entries and all(isinstance(v, numbers.Real) for v in entries) else 0
            if top > X.shape[1]:  # the message scikit-learn's check_fit2d_1feature expects
                raise ValueError(
                    f"X has {X.shape[1]} feature(s) (shape={X.shape}) but {name}={value} needs at least "
                    f"{top}; lower {name} or pass more features."
                )
        if sparse:  # the factor's column means are those of X / s (s a power of two: exact)
            mean = sc.cov.data.mean * sc.s
        else:
            sc = _scaled_cov(X, method="SpannogramPCA", check_input=False)
            mean = (X / sc.s).mean(axis=0) * sc.s  # the sum of entries near 1.8e308 overflows
        self._fit_cov(sc.cov)
        self.explained_variance_ = sc.variances(self.explained_variance_)
        self.upper_bound_ = sc.variances(self.upper_bound_)
        self.mean_ = mean
        return self

    @blas_limited
    def _fit_cov(self, cov: Covariance):
        D = cov.n_features
        n_all = cov.data.shape[0] if cov.data is not None else (cov.n_samples or D + 1)
        L = check_n_components(
            self.n_components,
            n_all,
            D,
            high=max(min(n_all - 1, D), 1),
            why="centring removes one dimension, so the data span at most n_samples - 1 directions",
        )
        limit = max(min(n_all - 1, D), 1)
        rank = min(3, limit) if isinstance(self.rank, str) else int(self.rank)
        if rank > limit:  # what spannogram_bound refuses too (never lowered silently)
            raise ValueError(
                f"X has {D} feature(s) and {n_all} samples, so its covariance has rank at most "
                f"min(n_samples - 1, n_features) = {limit}: rank={self.rank} is more than that. Pass "
                f"rank <= {limit}, or rank='auto'."
            )
        ks = check_cardinality(self.cardinality, D, L)
        rng = check_random_state(self.random_state)
        active = np.ones(D, dtype=bool)
        work = cov
        W = np.zeros((L, D))
        ub = np.zeros(L)
        for j in range(L):
            if self.deflation == "remove":
                idx = np.flatnonzero(active)
                sub = cov.restrict(idx)
            else:
                idx = np.arange(D)
                sub = work
            # what is left is round-off (a constant column's centring, a Schur complement of rank 0)
            if idx.size == 0 or not np.any(sub.diag() > 1e-13 * cov.trace()):
                left = "no feature is left" if idx.size == 0 else "what is left has no variance"
                how = "features of earlier components removed" if self.deflation == "remove" else "Schur"
                raise ValueError(
                    f"n_components={L} is too many: after {j} component(s) {left} (deflation="
                    f"{self.deflation!r}, {how}). Lower n_components"
                    + (
                        " or the cardinality, or use deflation='mackey'."
                        if self.deflation == "remove"
                        else "."
                    )
                )
            k = int(min(ks[j], idx.size))
            n_rows = sub.data.shape[0] if sub.data is not None else sub.n_features + 1
            d = min(rank, min(sub.n_features, n_rows - 1))  # few features left after deflation: lower d
            path = spannogram_path(
                sub, [k], rank=d, n_samples=self.n_samples, nonneg=self.nonneg, random_state=rng, net=self.net
            )
            w = np.zeros(D)
            w[idx] = path.components[0]
            W[j] = w
            ub[j] = path.upper_bound[0]
            if self.deflation == "remove":
                active &= w == 0
            else:
                work = work.deflate(w, method="schur")
        self.components_ = W
        self.explained_variance_ = np.atleast_1d(cov.quad(W.T))
        self.upper_bound_ = ub
        self.n_nonzero_ = np.count_nonzero(W, axis=1)
        self.n_features_in_ = D
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # scipy.sparse: the covariance operator through X, never densified
        return tags
