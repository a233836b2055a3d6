"""The public forms of the sparse / non-negative EM (Sigg & Buhmann 2008): :class:`EMSparsePCA`,
:func:`em_sparse_pca`, :func:`em_sparse_pca_path` and the path record :class:`CardinalityPath`.

``X`` and the parameters are validated once here, at the public boundary (:func:`_check_params`), the
validated array turned into the working operator (:func:`_prepare`), and that operator goes inward to the
algorithm (:mod:`.algorithm`), which does not check it again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import StrOptions, validate_params

from .. import _shortcuts
from .._base import POSITIVE_INT, RANDOM_STATE, ProjectionMixin, RealInterval, unscale_fitted, unscale_path
from .._chunked import DaskSource, check_client_matrix, check_observed, client_fits, gram_chunk, is_dask
from .._rescale import rescaled
from .._sparse import centred_rows, column_stats, sparse_door
from .._threads import blas_limited
from .._validation import (
    _all_finite,
    _check_array,
    as_float,
    check_array,
    check_bool,
    check_cardinalities,
    check_cardinality,
    check_features,
    check_has_variance,
    check_int,
    check_n_components,
    check_random_state,
    check_real,
    check_scale,
    is_sparse,
    warn_not_converged,
)
from ..linalg import OPERATORS, Covariance, _choose_operator
from ._common import _ORTHOGONALITY, DEFAULT_STARTS, _Settings
from ._kernels import MAX_ITER
from .algorithm import _fit, _quad_rows, _rank_and_pc, _resolve_restarts, _solve_component
from .missing import _ObservedData
from .operators import _as_data, _CentredData, _SearchCovariance
from .weights import fit_sparse_weighted, partial_fit_sparse, weighted_covariance

_INITS = ("auto", "pc", "random")  # the named starts (``init``)


@dataclass
class CardinalityPath:
    """One leading sparse component per cardinality, as a sparse-PCA method sweeps ``K``.

    Shared by :func:`em_sparse_pca_path` and the baselines (thresholding, PathSPCA, SPCA).

    Attributes
    ----------
    method : str
        The method's label in tables and figure legends (e.g. ``"emPCA"``, ``"PathSPCA"``).
    cardinalities : ndarray of int, shape (n_k,)
        The cardinalities ``K``, in the order they were asked for.
    components : ndarray, shape (n_k, n_features)
        Unit-norm loadings as the method found them (row ``j`` for ``cardinalities[j]``).
    variance : ndarray, shape (n_k,)
        ``w'Cw`` with ``C`` the sample covariance (``ddof=1``) of the input.
    components_opt, variance_opt : ndarray, shapes (n_k, n_features), (n_k,)
        After renormalization on the support (optimal weights for the sparsity pattern); equal to the
        plain ones for methods that are optimal on their support by construction, NaN when not computed.
    n_iter : ndarray of int, shape (n_k,)
        Iterations of the kept run (EM iterations, SPCA alternations, greedy steps).
    n_iter_total : ndarray of int, shape (n_k,)
        Iterations spent for that ``K`` over all restarts (the cost driver).
    time : ndarray, shape (n_k,)
        Wall-clock seconds it cost to produce that ``K`` (renormalization included), given the shared
        work in ``init_time``. For forward-greedy methods (PathSPCA) it is cumulative: the time of
        steps ``1..K``.
    init_time : float
        Seconds of work shared by all ``K`` (e.g. the first principal component).

    See Also
    --------
    em_sparse_pca_path, repro.baselines.thresholding_path, repro.baselines.pathspca,
    repro.baselines.spca_zou_path, repro.spannogram_path

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 10)) @ np.diag(np.linspace(3, 0.5, 10))
    >>> X[:, :4] += 2 * rng.standard_normal((100, 1))  # four correlated variables
    >>> from repro import em_sparse_pca_path
    >>> path = em_sparse_pca_path(X, [1, 2, 3], random_state=0)
    >>> len(path), path.cardinalities.tolist(), path.components.shape
    (3, [1, 2, 3], (3, 10))
    >>> path.to_frame()[["cardinality", "nnz"]].values.tolist()
    [[1, 1], [2, 2], [3, 3]]
    """

    method: str
    cardinalities: np.ndarray
    components: np.ndarray
    variance: np.ndarray
    components_opt: np.ndarray
    variance_opt: np.ndarray
    n_iter: np.ndarray
    time: np.ndarray
    init_time: float = 0.0
    n_iter_total: np.ndarray = field(default=None)

    def __post_init__(self):
        if self.n_iter_total is None:
            self.n_iter_total = np.asarray(self.n_iter).copy()

    def __len__(self) -> int:
        return len(self.cardinalities)

    def to_frame(self):
        """A tidy ``pandas.DataFrame``: one row per cardinality.

        Returns
        -------
        pandas.DataFrame
            Columns ``method``, ``cardinality``, ``nnz``, ``variance``, ``variance_opt``, ``n_iter``,
            ``n_iter_total`` and ``time``.
        """
        import pandas as pd

        return pd.DataFrame(
            {
                "method": self.method,
                "cardinality": self.cardinalities,
                "nnz": (self.components != 0).sum(axis=1),
                "variance": self.variance,
                "variance_opt": self.variance_opt,
                "n_iter": self.n_iter,
                "n_iter_total": self.n_iter_total,
                "time": self.time,
            }
        )


class EMSparsePCA(ProjectionMixin, BaseEstimator):
    """Sparse and/or non-negative PCA by constrained EM (Sigg & Buhmann 2008).

    Finds ``n_components`` loadings, one after another, each with at most ``cardinality`` non-zeros
    and, with ``nonneg=True``, no negative entry; used like scikit-learn's PCA: ``fit(X)``, then
    ``components_``, ``explained_variance_``, ``transform``. ``certify=True`` (or a number of seconds)
    also proves how far each component is from the best one of its cardinality (``certified_gap_``).
    ``X`` may hold missing values (NaN), be a ``dask.array``, or be a :class:`repro.linalg.Covariance`
    (a given covariance matrix: ``Covariance.from_matrix(C)``).

    Parameters
    ----------
    n_components : int, default 1
        Number of components, computed one after another (Section 4).
    cardinality : int, sequence of int, or None
        Non-zeros per component (one for all, or one per component); ``None`` = no sparsity constraint.
    nonneg : bool, default False
        Non-negative loadings (Eq. 17).
    n_restarts : int or None
        Starts per component, the best (largest variance) kept. ``None``: 5 for ``init="auto"``, 10 for
        random starts (Sec. 5.2 uses the best of ten), 1 for the principal-component start.
    init : None, "auto", "pc", "random", or ndarray of shape (n_features,) or (n_components, n_features)
        Start. ``None`` or ``"auto"``: the first principal component of the (deflated) data (both signs
        with ``nonneg``) plus random starts (non-negative ones with ``nonneg``), ``n_restarts`` in all, run
        as one block; this beats both the paper's single PC start for sparse PCA (Sec. 3.1) and its random
        starts for non-negative PCA (Sec. 3.2) on small brute-force problems (see the tests). ``"pc"``:
        only the principal component (the paper's sparse PCA; both signs with ``nonneg``). ``"random"``:
        random unit vectors. A start that collapses to the zero vector is replaced by a new random one
        (up to 50 times). With missing values the principal component is that of the data with missing
        entries set to the column means.
    renormalize : {"refine", True, False}, default "refine"
        ``True``: "emPCAopt", optimal weights on the found support (Sec. 5.1): the leading eigenvector of
        the covariance restricted to the support (the non-negative EM on the support when ``nonneg``), for
        the support of every restart, the best kept. ``"refine"`` (the default): emPCAopt, plus
        truncated-power steps (a step from ``w``: the support of the ``K`` largest entries of ``C w``,
        with optimal weights on it): one from every start, then, from the best of those and emPCAopt's
        result, steps kept only while the variance rises, so the result is never below emPCAopt's (not
        with missing values or ``orthogonality="quasi"``, where it is ``True``). ``False``: the paper's
        plain emPCA (the experiments that reproduce its figures pass it explicitly).
        Why this default: on standardized CBCL faces and Armstrong leukemia (K = 10, 50, 100, sparse and
        non-negative) the EM's own soft-thresholded loadings explain 0.69-0.92 of the variance that the
        authors' nsprcomp (which always renormalizes) explains; renormalized, at least as much in 11 of
        the 12 cases; refined, in all 12 (CBCL K = 100 non-negative: 73.36 against nsprcomp's 73.22 and
        emPCAopt's 73.17: the soft-thresholded EM converges to a support that is a fixed point of the
        soft threshold but not the best at its size). On small problems solved by brute force (12
        features, K = 4, rank 3 plus noise, eight data sets) emPCAopt reaches 0.984 (sparse) and 0.970
        (non-negative) of the optimum at worst, refined the optimum on all (see the tests). The cost is
        one eigenproblem per distinct support, one eigenproblem per start (its step reuses the EM's first
        product ``C w0``), and 0-3 refinement steps: 4-15% of a fit on those data.
        With ``"refine"`` a restart also stops once its support has stayed the same for 3 iterations at
        ``|w(t+1)' w(t)| > 1 - 1e-4`` (not with missing values, nor without a cardinality or sign
        constraint): renormalization keeps only a run's support and the refinement then improves on it, so
        iterating on to ``tol`` would mostly polish weights that are replaced (``n_iter_`` and
        ``history_`` describe the shortened run). ``True`` is the paper's emPCAopt as published: the EM
        runs to ``tol`` and its converged support is renormalized (the early stop changed that result by
        up to 5% of the variance on leukemia, both ways).
    orthogonality : {"deflation", "disjoint", "quasi"}
        ``"deflation"``: ``X <- X (I - ww')`` after each component (Eq. 18), plus, when ``nonneg``, disjoint
        supports (Eq. 19: non-negative orthogonal components cannot share a feature). ``"disjoint"``: only
        Eq. 19. ``"quasi"``: no deflation; the M-step QP gets the penalty ``alpha w'VV'w`` (Eq. 20) with
        ``alpha = penalty * h`` (so ``penalty`` is scale free), tuned to ``min_angle_deg`` when given.
    min_angle_deg : float or None
        Minimum angle (degrees) to every earlier component for ``orthogonality="quasi"`` (Sec. 5.2 uses 85).
        The penalty is then the smallest found (x10 steps, then bisection in log) that meets it.
    penalty : float
        The (initial) relative quasi-orthogonality penalty ``alpha / h``.
    tol : float
        Convergence: ``|w(t+1)' w(t)| > 1 - tol``.
    max_iter : int, default 1000
        Largest number of EM iterations per start; reaching it gives a ConvergenceWarning.
    random_state : None, int or np.random.Generator
        Seeds the random starts.
    operator : {"auto", "data", "covariance"}
        How the covariance is applied (:func:`repro.linalg.choose_operator`): ``"auto"`` iterates on the
        ``D x D`` covariance when the cost model says it pays (``n_samples`` well above ``n_features``),
        otherwise on the data. Same iterates to round-off either way. Data with missing values always
        iterate on the data. A single component with ``renormalize`` True or ``"refine"`` on complete data
        where the covariance pays (``N > D``, ``N D^2 / 2`` at least 2.5e7 multiply-adds, ``cardinality`` at
        most ``0.3 D``, column scales within ``2^40`` of each other) searches on the covariance formed in
        float32 (half the cost of the float64 one, which then dominates the fit; entries within about 1e-7 of
        the float64 ones, far below a sample covariance's sampling error), and only the support it finds is
        kept: its weights, the variance and its ratio are computed in float64 from the data (``history_``, the
        EM's own values, carries the float32 rounding, about 1e-7 relative). On standardized CBCL faces (K =
        1..361) it finds the float64 search's support in all fits but exact ties; fits with ``K <= 50`` take
        0.75-0.85x the time there.

    certify : {"auto", True, False} or float, default "auto"
        Compare the component with the certified optimum of :func:`repro.optimal_sparse_pca` (one
        component, a cardinality, ``renormalize`` True or "refine", no missing values) and keep the better
        one. ``"auto"``: only where a proof costs about as much as the EM (at most
        ``CERTIFY_MAX_FEATURES`` = 16 features; at most ``CERTIFY_MAX_NODES`` nodes, so the result does not
        depend on the machine): with 12 features the EM's defaults alone reached 0.990 of the optimum in the
        worst of 30 random problems, the solver took 0.6x the EM's time; with 30-100 features it took
        40-2500x. ``True``: on any size, until proven (Ctrl-C stops the proof and keeps its certified gap).
        A number: on any size, for at most that many seconds (``certified_gap_`` then says how far the
        proof got). ``False``: the EM alone (the papers' experiments).

    callback : callable or None, default None
        Called after every EM iteration of a component's restarts (run together as one block) as
        ``callback(t, W)``: ``t`` the block's iterations so far, ``W`` the ``n_restarts x n_features``
        iterates (read them, do not change them); its return value is ignored. With a callback every
        iteration is one Python round instead of a whole-run kernel call, so the iterates are the same to
        round-off and the time per iteration is what a caller times between two calls (e.g. a benchmark).
        The refinement on the found support and the quasi-orthogonal components after the first are not
        reported.

    Attributes
    ----------
    components_ : ndarray, shape (n_components, n_features)
        Unit-norm loadings (rows).
    explained_variance_ : ndarray, shape (n_components,)
        ``w'Cw`` with ``C`` the sample covariance (ddof=1) of the training data (not deflated). With
        missing values, ``C`` is the covariance of the data completed by the E-step of the first component
        (missing entries filled with ``mean_ + y w_1``).
    explained_variance_ratio_ : ndarray, shape (n_components,)
        ``explained_variance_ / tr(C)`` (the same completed ``C`` with missing values).
    n_iter_ : ndarray of int, shape (n_components,)
        EM iterations of the kept run of each component.
    history_ : list of ndarray
        Per component, the reconstruction error ``||Xc - Xc w w'||_F^2 / (n - 1) = tr(C_l) - w'C_l w``
        of every iterate of the kept run (start first, ``C_l`` the data the component was fitted on); with
        missing values the squared error on the observed entries, over ``n - 1``.
    penalty_ : ndarray, shape (n_components,)
        Relative quasi-orthogonality penalty used per component (0 for the first and when not quasi).
    cardinality_ : ndarray of int, shape (n_components,)
        Non-zeros of each component (at most its ``cardinality``).
    mean_ : ndarray, shape (n_features,)
        Column means (with missing values: estimated jointly with the first component).
    n_features_in_ : int
        Number of features seen by ``fit``.
    feature_names_in_ : ndarray of str, shape ``(n_features_in_,)``
        Column names of ``X`` when ``fit`` got a DataFrame with string column names (only then);
        ``transform`` and ``score`` then refuse a DataFrame whose columns differ or are reordered.
    operator_ : str
        The operator used: ``"data"``, ``"covariance"`` or ``"missing"`` (the generalized E-step).
    certified_gap_ : ndarray, shape (n_components,)
        Per component, ``(upper bound - value) / value`` proven by the exact solver (0: optimal), NaN where
        ``certify`` did not run.

    See Also
    --------
    em_sparse_pca : the function form (also on a covariance).
    em_sparse_pca_path : the first component for every cardinality.
    repro.EMPCA : the unconstrained EM (Roweis 1997).
    repro.NSPCA, repro.SpannogramPCA : the non-negative sparse methods it is compared with.

    Notes
    -----
    The restarts of a component run together as one block (:func:`repro.em_sparse_pca.algorithm._em_block`):
    on a ``D x D`` covariance, or through the data (screened when there are few samples), every restart's
    whole EM run (Algorithms 1-2, Eqs. 13, 14, 17) is one Numba kernel call
    (:func:`repro.em_sparse_pca._kernels.em_rows_matrix`, :func:`repro.em_sparse_pca._kernels.em_rows_data`);
    otherwise each iteration is one matrix-matrix product with the covariance operator for all active
    restarts, then the kernel :func:`repro.em_sparse_pca._kernels.em_update_block` per restart. Missing
    values are handled by Roweis' generalized E-step (Roweis 1998, Sec. 4, in the zero-noise limit); a
    ``dask.array`` costs one pass over the data per EM iteration, or one pass to form the covariance when
    the cost model prefers it.

    References
    ----------
    C. D. Sigg and J. M. Buhmann. Expectation-maximization for sparse and non-negative PCA. ICML 2008,
    Algorithms 1-2, Eqs. 13-20.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 10)) @ np.diag(np.linspace(3, 0.5, 10))
    >>> X[:, :4] += 2 * rng.standard_normal((100, 1))  # four correlated variables
    >>> from repro import EMSparsePCA
    >>> est = EMSparsePCA(n_components=2, cardinality=3, random_state=0).fit(X)
    >>> est.cardinality_.tolist(), np.round(np.linalg.norm(est.components_, axis=1), 12).tolist()
    ([3, 3], [1.0, 1.0])
    >>> nn = EMSparsePCA(n_components=2, cardinality=3, nonneg=True, random_state=0).fit(X)
    >>> bool((nn.components_ >= 0).all()), int(np.count_nonzero(nn.components_[0] * nn.components_[1]))
    (True, 0)

    Without a cardinality it is PCA: the variances are the leading eigenvalues.

    >>> pca = EMSparsePCA(n_components=2, random_state=0).fit(X)
    >>> bool(np.allclose(pca.explained_variance_, np.linalg.eigvalsh(np.cov(X, rowvar=False))[::-1][:2]))
    True
    """

    _parameter_constraints: ClassVar[dict] = {
        "n_components": [POSITIVE_INT],
        "cardinality": [None, POSITIVE_INT, "array-like"],
        "nonneg": ["boolean"],
        "n_restarts": [None, POSITIVE_INT],
        "init": [None, StrOptions(set(_INITS)), "array-like"],
        "renormalize": ["boolean", StrOptions({"refine"})],
        "orthogonality": [StrOptions(set(_ORTHOGONALITY))],
        "min_angle_deg": [None, RealInterval(0, 90, closed="right")],
        "penalty": [RealInterval(0, None, closed="neither")],
        "tol": [RealInterval(0, 1, closed="right")],
        "max_iter": [POSITIVE_INT],
        "random_state": RANDOM_STATE,
        "operator": [StrOptions(set(OPERATORS))],
        "certify": ["boolean", StrOptions({"auto"}), RealInterval(0, None, closed="neither")],
        "callback": [None, callable],
    }

    def __init__(
        self,
        n_components=1,
        *,
        cardinality=None,
        nonneg=False,
        n_restarts=None,
        init=None,
        renormalize="refine",
        orthogonality="deflation",
        min_angle_deg=None,
        penalty=1.0,
        tol=1e-8,
        max_iter=1000,
        random_state=None,
        operator="auto",
        certify="auto",
        callback=None,
    ):
        self.n_components = n_components
        self.cardinality = cardinality
        self.nonneg = nonneg
        self.n_restarts = n_restarts
        self.init = init
        self.renormalize = renormalize
        self.orthogonality = orthogonality
        self.min_angle_deg = min_angle_deg
        self.penalty = penalty
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.operator = operator
        self.certify = certify
        self.callback = callback

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN marks a missing entry (Roweis' generalized E-step)
        tags.input_tags.sparse = True  # scipy.sparse: the centring implicit, never densified
        return tags

    def transform(self, X):
        """Project ``X`` on the loadings, ``(X - mean_) @ components_.T``; NaN entries are missing.

        A row with missing entries is first completed by its least-squares fit on the observed ones
        (``mean_ + components_' z`` with ``z`` the least-squares coordinates, Roweis' E-step), then
        projected, so complete rows give exactly the plain projection.

        Parameters
        ----------
        X : array_like, shape (n_samples, n_features)
            Data; NaN marks a missing entry.

        Returns
        -------
        ndarray, shape (n_samples, n_components)
            The projections.
        """
        from sklearn.utils.validation import check_is_fitted

        from .._validation import check_n_features

        check_is_fitted(self, "components_")
        if is_dask(X):  # a lazy Dask array, computed chunk by chunk where the data are
            return DaskSource(X, "X", first_pass=False).map_rows(self.transform)
        if is_sparse(X):  # X W' - 1 (mean_' W'), never densified
            return centred_rows(check_n_features(self, X, sparse=True), self.mean_, self.components_.T)
        X = check_n_features(self, X, allow_nan=True)
        W = self.components_
        Xc = X - self.mean_
        miss = np.isnan(Xc)
        if miss.any():
            Xc = Xc.copy()
            for i in np.flatnonzero(miss.any(axis=1)):
                obs = ~miss[i]
                z = np.linalg.lstsq(W[:, obs].T, Xc[i, obs], rcond=None)[0]
                Xc[i, ~obs] = W[:, ~obs].T @ z
        return Xc @ W.T

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None, weights=None):
        """Fit on ``X`` (n_samples, n_features; NaN marks a missing entry; a ``dask.array`` is read in
        chunks); returns self.

        Parameters
        ----------
        X : array_like or dask.array.Array, shape (n_samples, n_features)
            Training data; NaN marks a missing entry.
        y : None
            Ignored (scikit-learn convention).
        sample_weight : array_like, shape (n_samples,), optional
            Frequency weights of the rows: the fit on the weighted covariance (in-memory X without NaN,
            or a scipy sparse X; see :mod:`repro.em_sparse_pca.weights`).
        weights : array_like, shape (n_samples, n_features), optional
            Per-entry weights, 0 = missing: each component minimizes the weighted squared error of its
            rank-one fit under the cardinality (see :mod:`repro.em_sparse_pca.weights`). Dense X only:
            refused with a scipy sparse X (a weight per entry is a dense array the shape of X).

        Returns
        -------
        self
            The fitted estimator.
        """
        check_features(self, X)
        self._stream = None  # a later partial_fit starts a new stream
        if sample_weight is not None or weights is not None:
            return fit_sparse_weighted(self, X, sample_weight, weights)
        s, finite, power = 1.0, None, 2
        if isinstance(X, Covariance):  # its backing array / s, s a power of two: C = s**power op (exact)
            X, s, power = X.rescaled()
        elif is_sparse(X):  # kept sparse: the centring implicit in the operator (X / s exactly)
            X, s = sparse_door(X, "EMSparsePCA")
        elif not is_dask(X):
            X, finite = _check_array(X, "X", min_samples=2, allow_nan=True)  # as _valid_data, NaN found out
            check_has_variance(X, "EMSparsePCA")
            s = check_scale(X)  # badly scaled data: fit X / s, scale the variances back (exact, s = 2^e)
            if s != 1.0:
                X = X / s
        n_vec = self.n_restarts if self.n_restarts is not None else DEFAULT_STARTS
        n_vec = int(n_vec) if isinstance(n_vec, (int, np.integer)) else 1
        # one component whose weights are recomputed on its support: the search may use float32 products
        search32 = 0
        if self.n_components == 1 and _check_renormalize(self.renormalize) in (True, "refine"):
            card = np.ravel(np.asarray(self.cardinality if self.cardinality is not None else 0))
            if card.size == 1 and np.issubdtype(card.dtype, np.integer) and card[0] > 0:
                search32 = int(card[0])  # (a bad cardinality is refused with its reason by the fit below)
        op, mean, n = _prepare(X, self.operator, n_vec, checked=True, search32=search32, finite=finite)
        self._fit_op(op, mean, n - 1, shape=None if isinstance(X, Covariance) else X.shape)
        unscale_fitted(self, s, power)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None, sample_weight=None):
        """Merge a batch of rows into the running mean and scatter and refit the sparse EM on that
        covariance (see :mod:`repro.em_sparse_pca.weights`): any order and size of batches.

        Parameters
        ----------
        X : array_like or scipy sparse matrix, shape (n_batch, n_features)
            Complete rows, with the columns of the first batch (dense and sparse batches may be mixed).
        y : None
            Ignored (scikit-learn convention).
        sample_weight : array_like, shape (n_batch,), optional
            Frequency weights of the rows.

        Returns
        -------
        self
            Fitted once two rows have been seen; ``n_samples_seen_`` and ``sketch_error_bound_``
            (0 while the scatter is exact) are set after every call.
        """
        return partial_fit_sparse(self, X, sample_weight)

    def _fit_data(self, A, mean, rank_bound):
        """Fit on a data factor ``A`` with ``A'A = C`` (used by :func:`fit_function_form`)."""
        self._fit_op(Covariance._trusted(data=np.ascontiguousarray(A, dtype=np.float64)), mean, rank_bound)
        return self

    @blas_limited
    def _fit_op(self, op, mean, rank_bound, shape=None):
        """The fit on the operator ``op``; ``shape``: the user's ``X``'s, named in the errors."""
        D = op.n_features
        L, ks, orth, min_angle, penalty, tol, max_iter, init = _check_params(
            self.get_params(), D, min(rank_bound, D), shape
        )
        rng = check_random_state(self.random_state)
        comps = _fit(
            op,
            L,
            ks,
            nonneg=bool(self.nonneg),
            init=init,
            n_restarts=self.n_restarts,
            renormalize=_check_renormalize(self.renormalize),
            orthogonality=orth,
            min_angle_deg=min_angle,
            penalty=penalty,
            tol=tol,
            max_iter=max_iter,
            rng=rng,
            callback=self.callback,
        )
        W = np.array([c.w for c in comps])
        missing = isinstance(op, _ObservedData)
        self.certified_gap_ = np.full(L, np.nan)
        if _wants_certificate(self.certify, L, D, ks, missing, _check_renormalize(self.renormalize)):
            k0 = int(ks[0])
            W[0], self.certified_gap_[0] = _certify_first(op, W[0], k0, bool(self.nonneg), self.certify)
        if missing:
            mean = comps[0].mean if comps[0].mean is not None else mean
            ev, tr = op.completed_variance(W, W[0], mean)
            total = np.full(L, tr)
        else:
            ev = _quad_rows(op, W)
            total = np.full(L, op.trace())
        self.components_ = W
        self.explained_variance_ = ev
        self.explained_variance_ratio_ = np.divide(ev, total, out=np.zeros(L), where=total > 0)
        self.n_iter_ = np.array([c.n_iter for c in comps], dtype=np.int64)
        # Reconstruction error tr(C_l) - h of every iterate, C_l the operator the component was fitted on.
        self.history_ = [c.op.trace() - c.history for c in comps]
        self.penalty_ = np.array([c.rho for c in comps])
        self.cardinality_ = (W != 0).sum(axis=1)
        self.mean_ = np.asarray(mean, dtype=np.float64)
        self.n_features_in_ = D
        self.operator_ = "missing" if missing else op.operator
        return self


CERTIFY_MAX_FEATURES = 16
CERTIFY_MAX_NODES = 5000


def _wants_certificate(certify, L, D, ks, missing, renormalize) -> bool:
    """Whether ``certify`` applies: one component with a cardinality, re-normalized, no missing values."""
    if isinstance(certify, np.bool_):
        certify = bool(certify)
    if isinstance(certify, (bool, str)) and certify not in ("auto", True, False):
        raise ValueError(f'certify must be "auto", True, False or a time limit in seconds; got {certify!r}.')
    limit = _certify_limit(certify)
    if limit is not None:
        if not limit > 0:
            raise ValueError(f"certify as a time limit must be positive seconds; got {certify!r}.")
        certify = True  # a time limit: on any size (the limit goes to the search)
    if certify is False or L != 1 or missing or renormalize not in (True, "refine") or int(ks[0]) >= D:
        return False
    return certify is True or D <= CERTIFY_MAX_FEATURES


def _certify_limit(certify) -> float | None:
    """The time limit in seconds that ``certify`` gives (a number, not a boolean), else None."""
    return float(certify) if isinstance(certify, Real) and not isinstance(certify, (bool, np.bool_)) else None


def _certify_first(op, w, k, nonneg, certify):
    """The better of ``w`` and the exact solver's component on ``op``, and the certified relative gap."""
    from ..optimal.search import search  # at call time: repro.optimal uses this family at its root

    C = np.asarray(op.dense(), dtype=np.float64)
    if not np.max(np.diag(C)) > 0:  # no variance
        return w, np.nan
    limit = _certify_limit(certify)
    max_nodes = CERTIFY_MAX_NODES if isinstance(certify, str) else None
    res = search(C, k, nonneg=nonneg, gap=1e-6, max_nodes=max_nodes, time_limit=limit)
    mine = float(w @ C @ w)
    if res.value > mine:
        w, mine = res.component, res.value
    return w, max(res.upper_bound - mine, 0.0) / mine if mine > 0 else np.inf


def _check_renormalize(renormalize):
    if isinstance(renormalize, str):
        if renormalize != "refine":
            raise ValueError(f"renormalize must be True, False or 'refine'; got {renormalize!r}.")
        return renormalize
    if not isinstance(renormalize, (bool, np.bool_)):
        raise ValueError(f"renormalize must be True, False or 'refine'; got {renormalize!r}.")
    return bool(renormalize)


def _valid_sparse(X):
    """The check of a scipy sparse ``X`` for the sparse EM: ``(X, s)``, kept sparse."""
    return sparse_door(X, "em_sparse_pca_path")


def _valid_data(X) -> np.ndarray:
    """The one check of an array ``X`` in a public call (NaN: missing entries)."""
    return check_array(X, "X", min_samples=2, allow_nan=True)


@validate_params(
    {"X": ["array-like", "sparse matrix", Covariance], "n_components": [POSITIVE_INT]},
    prefer_skip_nested_validation=False,  # the estimator validates the other parameters
)
def em_sparse_pca(X, n_components=1, **params):
    """Function form of :class:`EMSparsePCA`.

    ``X`` is a data matrix (n_samples, n_features) or a :class:`repro.linalg.Covariance` (e.g. a given
    correlation matrix, factored so the EM can run on it). Keyword parameters as for :class:`EMSparsePCA`.

    Parameters
    ----------
    X : array, shape (n_samples, n_features), dask.array, or Covariance
        Data (centred here; NaN: missing) or a covariance.
    n_components : int, default 1
        Number of components.
    **params
        The other parameters of :class:`EMSparsePCA` (``cardinality``, ``nonneg``, ``init``, ...).

    Returns
    -------
    components : ndarray, shape (n_components, n_features)
        Unit-norm loadings as rows.
    explained_variance : ndarray, shape (n_components,)
        ``w'Cw`` of each component.

    See Also
    --------
    EMSparsePCA, em_sparse_pca_path

    References
    ----------
    C. D. Sigg and J. M. Buhmann. Expectation-maximization for sparse and non-negative PCA. ICML 2008,
    Algorithms 1-2.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 10)) @ np.diag(np.linspace(3, 0.5, 10))
    >>> X[:, :4] += 2 * rng.standard_normal((100, 1))  # four correlated variables
    >>> from repro import Covariance, em_sparse_pca
    >>> W, variance = em_sparse_pca(X, 1, cardinality=3, random_state=0)
    >>> W_cov, variance_cov = em_sparse_pca(Covariance.from_data(X), 1, cardinality=3, random_state=0)
    >>> int(np.count_nonzero(W)), bool(np.allclose(variance, variance_cov))  # the data or its covariance
    (3, True)
    """
    est = EMSparsePCA(n_components, **params)
    if isinstance(X, Covariance):
        est._validate_params()  # what fit's _fit_context does: e.g. nonneg="no" is refused, not true
        X, s, power = X.rescaled()  # C = s**power op: products of data near 1e160 would overflow
        op, mean, n = _prepare(X, est.operator, 1)
        est._fit_op(op, mean, min(n - 1, op.n_features))
        unscale_fitted(est, s, power)
    else:
        est.fit(X)
    return est.components_, est.explained_variance_


@validate_params(
    {
        "X": ["array-like", "sparse matrix", Covariance],
        "cardinalities": ["array-like", Integral],
        "nonneg": ["boolean"],
        "renormalize": ["boolean", StrOptions({"refine"})],
        "init": [None, StrOptions({*_INITS, "warm"}), "array-like"],
        "n_restarts": [None, POSITIVE_INT],
        "tol": [RealInterval(0, 1, closed="right")],
        "max_iter": [POSITIVE_INT],
        "random_state": RANDOM_STATE,
        "operator": [StrOptions(set(OPERATORS))],
        "sample_weight": [None, "array-like"],
    },
    prefer_skip_nested_validation=True,
)
@blas_limited
@rescaled(unscale_path, "em_sparse_pca_path", check=_valid_data, covariance=True, sparse=_valid_sparse)
def em_sparse_pca_path(
    X,
    cardinalities,
    *,
    nonneg=False,
    renormalize=True,
    init=None,
    n_restarts=None,
    tol=1e-8,
    max_iter=1000,
    random_state=None,
    operator="auto",
    sample_weight=None,
) -> CardinalityPath:
    """The first sparse (non-negative) component for every cardinality in one call.

    The starts are computed once and reused for every ``K`` (Sec. 3.1: "as initialization is independent
    of K, w(1) can be cached"): the first principal component and the same random starts (drawn once
    from ``random_state``) -- so each ``K`` gives exactly what :class:`EMSparsePCA` gives for that ``K``
    with the same arguments. ``init="warm"`` instead starts each ``K`` (in increasing order) from the
    previous ``K``'s solution: fewer iterations, but possibly a different local optimum.

    Parameters
    ----------
    X : array, shape (n_samples, n_features) (NaN: missing), dask.array, or Covariance
        Data (centred here) or a covariance.
    cardinalities : sequence of int
        Each in ``1..n_features``; any order (results follow the given order).
    nonneg, n_restarts, tol, max_iter, random_state, operator
        As for :class:`EMSparsePCA`.
    sample_weight : array_like, shape (n_samples,), optional
        Frequency weights of the rows of a data matrix ``X``: the path of the weighted covariance.
    renormalize : {True, False, "refine"}
        Also compute the renormalized ("emPCAopt") loadings and variances; NaN otherwise. ``"refine"``:
        renormalized and refined as :class:`EMSparsePCA` does by default.
    init : None, "auto", "pc", "random", "warm" or ndarray (n_features,)
        The start, as for :class:`EMSparsePCA`, or ``"warm"`` (see above).

    Returns
    -------
    CardinalityPath
        ``components`` are the EM loadings, ``components_opt`` the renormalized ones; ``time`` per ``K``
        excludes the shared start (``init_time``).

    See Also
    --------
    EMSparsePCA : several components at one cardinality.
    repro.baselines.pathspca, repro.baselines.thresholding_path : the paths it is compared with.

    References
    ----------
    C. D. Sigg and J. M. Buhmann. Expectation-maximization for sparse and non-negative PCA. ICML 2008,
    Section 3.1 and Figure 2 ("emPCA" and "emPCAopt").

    Examples
    --------
    On this small instance the renormalized EM component of cardinality 3 is the best of all 120 supports:

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 10)) @ np.diag(np.linspace(3, 0.5, 10))
    >>> X[:, :4] += 2 * rng.standard_normal((100, 1))  # four correlated variables
    >>> from itertools import combinations
    >>> from repro import em_sparse_pca_path
    >>> path = em_sparse_pca_path(X, [1, 2, 3, 4], random_state=0)
    >>> [int(np.count_nonzero(w)) for w in path.components_opt]
    [1, 2, 3, 4]
    >>> C = np.cov(X, rowvar=False)
    >>> best = max(np.linalg.eigvalsh(C[np.ix_(S, S)])[-1] for S in combinations(range(10), 3))
    >>> bool(np.isclose(path.variance_opt[2], best))
    True
    """
    t0 = time.perf_counter()
    warm = isinstance(init, str) and init == "warm"
    n_vec = n_restarts if isinstance(n_restarts, (int, np.integer)) else DEFAULT_STARTS
    if sample_weight is not None:  # the weighted covariance of the rows (an array checked by the decorator)
        X = weighted_covariance(X, sample_weight, operator, int(n_vec))[0]
    op, _, _ = _prepare(X, operator, int(n_vec), checked=True)  # an array was checked by the decorator
    D = op.n_features
    ks = check_cardinalities(cardinalities, D)
    init_c = _check_init(None if warm else init, D, 1)
    tol = check_real(tol, "tol", low=0.0, high=1.0, low_inclusive=False)
    max_iter = check_int(max_iter, "max_iter", low=1)
    rng = check_random_state(random_state)
    nonneg = check_bool(nonneg, "nonneg")
    renorm = _check_renormalize(renormalize)
    kind = init_c[0] if isinstance(init_c, np.ndarray) else (init_c or "auto")
    R = _resolve_restarts(n_restarts, kind if isinstance(kind, str) else "array")

    rank, pc = _rank_and_pc(op, need_rank=False)
    if rank == 0:
        raise ValueError("X has no variance (every column is constant); there is no component to find.")
    seeds = rng.integers(0, 2**63 - 1, size=R)
    excluded = np.zeros(D, dtype=bool)
    init_time = time.perf_counter() - t0

    n = ks.size
    comps = np.zeros((n, D))
    comps_opt = np.full((n, D), np.nan)
    var = np.empty(n)
    var_opt = np.full(n, np.nan)
    n_iter = np.empty(n, dtype=np.int64)
    n_total = np.empty(n, dtype=np.int64)
    times = np.empty(n)
    order = np.argsort(ks, kind="stable") if warm else np.arange(n)
    prev = None
    for j in order:
        t1 = time.perf_counter()
        start_rngs = [np.random.default_rng(int(sd)) for sd in seeds]
        this_kind = kind if (prev is None or not warm) else prev
        s = _Settings(nonneg, this_kind, R, renorm, tol, max_iter, support_stop=False)
        c = _solve_component(
            op, int(ks[j]), s, excluded, start_rngs if prev is None or not warm else start_rngs[:1], pc
        )
        if c.status == MAX_ITER:
            warn_not_converged("em_sparse_pca_path", max_iter, tol, f"(cardinality {ks[j]})")
        comps[j], var[j] = c.w_em, c.h_em
        if renormalize:
            comps_opt[j], var_opt[j] = c.w, c.h
        if isinstance(op, _ObservedData):  # report what EMSparsePCA reports: the completed data's variance
            var[j] = op.completed_variance(c.w_em[None, :], c.w_em, c.mean_em)[0][0]
            if renormalize:
                var_opt[j] = op.completed_variance(c.w[None, :], c.w, c.mean)[0][0]
        n_iter[j], n_total[j] = c.n_iter, c.n_iter_total
        prev = c.w_em
        times[j] = time.perf_counter() - t1
    return CardinalityPath(
        method="emPCA (nn)" if nonneg else "emPCA",
        cardinalities=ks,
        components=comps,
        variance=var,
        components_opt=comps_opt,
        variance_opt=var_opt,
        n_iter=n_iter,
        time=times,
        init_time=init_time,
        n_iter_total=n_total,
    )


# -------------------------------------------------------------- the checks and the working operator
def _check_params(est_params: dict, D: int, N_rank_bound: int, shape=None):
    p = est_params
    L = check_n_components(
        p["n_components"],
        N_rank_bound + 1,
        D,
        high=max(N_rank_bound, 1),
        why="the rank of the covariance: n_samples - 1 for centred data, at most n_features",
        shape=shape,
    )
    ks = check_cardinality(p["cardinality"], D, L)
    orth = p["orthogonality"]
    if orth not in _ORTHOGONALITY:
        raise ValueError(f"orthogonality must be one of {_ORTHOGONALITY}; got {orth!r}.")
    min_angle = p["min_angle_deg"]
    if min_angle is not None:
        if orth != "quasi":
            raise ValueError("min_angle_deg is used only with orthogonality='quasi'.")
        min_angle = check_real(min_angle, "min_angle_deg", low=0.0, high=90.0, low_inclusive=False)
    penalty = check_real(p["penalty"], "penalty", low=0.0, low_inclusive=False)
    tol = check_real(p["tol"], "tol", low=0.0, high=1.0, low_inclusive=False)
    max_iter = check_int(p["max_iter"], "max_iter", low=1)
    init = _check_init(p["init"], D, L)
    if p["n_restarts"] is not None:
        check_int(p["n_restarts"], "n_restarts", low=1)
    return L, ks, orth, min_angle, penalty, tol, max_iter, init



def _check_init(init, D: int, L: int):
    if init is None or (isinstance(init, str) and init in _INITS):
        return init
    if isinstance(init, str):
        raise ValueError(f"init must be None, 'auto', 'pc', 'random' or an array; got {init!r}.")
    arr = as_float(init, "init")
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != D or arr.shape[0] not in (1, L):
        raise ValueError(
            f"init must have shape ({D},) or ({L}, {D}) (one start per component); got {np.shape(init)}."
        )
    if not np.isfinite(arr).all():
        raise ValueError("init holds NaN or infinite values.")
    norms = np.linalg.norm(arr, axis=1)
    if (norms == 0).any():
        raise ValueError("init holds a zero vector; a start must be a non-zero direction.")
    return arr / norms[:, None]


def _prepare(
    X, operator: str, n_vectors: int, name: str = "X", checked: bool = False, search32: int = 0, finite=None
):
    """The working operator for ``X`` and what the fit needs of it.

    Returns ``(op, mean, n_samples)``: a :class:`repro.linalg.Covariance` (through the data or the
    ``D x D`` matrix, by :func:`repro.linalg.choose_operator` unless ``operator`` forces one) for complete
    data, or an :class:`_ObservedData` for data with missing values (NaN) or a Dask array that the cost
    model keeps as data. ``checked=True``: ``X`` already passed ``check_array`` (NaN allowed); ``finite``:
    whether that check found every entry finite (``None``: one more pass finds out).
    ``search32``: 0 (no), or the cardinality ``K`` of a single component with renormalization: where the
    cost model picks the covariance and :meth:`_SearchCovariance.applies`, a :class:`_SearchCovariance`
    instead of the float64 matrix.
    """
    if operator not in OPERATORS:
        raise ValueError(f"operator must be one of {OPERATORS}; got {operator!r}.")
    if isinstance(X, Covariance):
        op = X
        if operator == "covariance" and X.matrix is None:
            op = Covariance._trusted(matrix=X.dense(), n_samples=X.n_samples)
        elif operator == "data" and X.data is None:
            A, _, _ = _as_data(X)
            op = Covariance._trusted(data=A, n_samples=X.n_samples)
        return op, np.zeros(X.n_features), X.n_samples or X.n_features + 1
    if is_dask(X):  # the first pass: statistics and checks (repro._chunked's policy)
        src = DaskSource(X, name, min_samples=2)
        N, D = src.n, src.p
        kind = operator if operator != "auto" else _choose_operator(N, D, n_vectors=n_vectors)
        if kind == "covariance" and operator == "auto" and not client_fits(D):
            kind = "data"  # the D x D matrix would not fit the client: iterate on the chunks instead
        if not src.missing and kind == "covariance":  # one more pass forms the D x D covariance
            check_client_matrix(D, name)
            (G,) = src.map_sum(gram_chunk, src.mean)
            return Covariance._derived(0.5 * (G + G.T) / (N - 1), n_samples=N), src.mean, N
        op = _ObservedData(src)
        return op, op.obs_mean, N
    if is_sparse(X):  # validated at the door: the implicit centred operator, never a dense copy
        mean = column_stats(X)[0]
        op = Covariance._from_sparse(X, operator=operator, n_vectors=n_vectors, mean=mean)
        return op, mean, X.shape[0]
    if not checked:
        X = check_array(X, name, min_samples=2, allow_nan=True)
    N, D = X.shape
    if finite is None:
        finite = _all_finite(X)  # one sum decides the usual case
    if not finite:  # NaN (missing) entries
        miss = np.isnan(X)
        check_observed(name, np.flatnonzero(miss.all(axis=1)), (~miss).sum(axis=0))
        op = _ObservedData(X)
        return op, op.obs_mean, N
    mean = X.mean(axis=0)
    if operator == "auto" and not _shortcuts.enabled:  # the EM through the data, as Eq. 13 writes it
        operator = "data"
    kind = operator if operator != "auto" else _choose_operator(N, D, n_vectors=n_vectors)
    if search32 and kind == "covariance" and _SearchCovariance.pays(N, D, search32):
        exact = _CentredData(X, mean)  # the column norms; no float64 copy of the centred data
        if _SearchCovariance.applies(exact, search32):
            return _SearchCovariance.from_exact(exact), mean, N
    op = Covariance._from_valid(X, operator=kind, n_vectors=n_vectors, mean=mean)
    return op, mean, N

