"""The public forms of the EM PCA family (Roweis 1997): :class:`EMPCA`, :class:`SensiblePCA`,
:func:`em_pca`, :func:`sensible_pca` and :func:`ppca_closed_form`.

``X`` is validated once here, at the public boundary (by the :func:`repro._rescale.rescaled` wrapper, which
also fits badly scaled data as ``X / s``), and the validated array goes inward to the data source and the
loops (:mod:`.blocks`, :mod:`.solvers`, :mod:`.missing`, :mod:`.sensible`), which do not check it again.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import ClassVar

import numpy as np
import scipy.linalg
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils._param_validation import validate_params
from sklearn.utils.validation import check_is_fitted

from .._base import (
    POSITIVE_INT,
    ComponentNamesMixin,
    ReconstructionMixin,
    VarianceScoreMixin,
    with_expected_failures,
)
from .._chunked import DaskSource, DenseSource, is_dask
from .._rescale import rescaled
from .._sparse import SparseSource, centred_rows, row_centred_ss, sparse_door
from .._threads import blas_limited
from .._validation import (
    _head,
    check_array,
    check_features,
    check_int,
    check_latent,
    check_n_features,
    check_random_state,
    is_sparse,
    unscale,
)
from .._weights import weighted_average
from ..linalg import Covariance
from ._common import (
    EM_PCA_PARAMS,
    SENSIBLE_PCA_PARAMS,
    EMPCAResult,
    SensiblePCAResult,
    _check_common,
    _chol,
    _unscale_empca,
    _unscale_spca,
)
from ._kernels import missing_estep as _missing_estep
from .blocks import _em_pca_on, _sensible_pca_on, em_pca_blocks, sensible_pca_blocks
from .missing import missing_structure as _missing_structure
from .sensible import _LOG_2PI, _noise_floor, _warn_low_rank
from .streaming import partial_fit_empca, partial_fit_spca
from .weights import fit_empca_weighted, fit_spca_weighted


# --------------------------------------------------------------------------- the one check of X
def _valid_data(X) -> np.ndarray:
    """The check of an array ``X`` for EM PCA (NaN: missing entries), run once by the decorator."""
    return check_array(X, "X", allow_nan=True, min_samples=2)


def _valid_spca(X) -> np.ndarray:
    """The check of an array ``X`` for sensible PCA (one discarded dimension: two features at least)."""
    return check_array(X, "X", allow_nan=True, min_samples=2, min_features=2)


def _valid_complete(X) -> np.ndarray:
    """The check of an array ``X`` for the closed form (complete data)."""
    return check_array(X, "X", min_samples=2, min_features=2)


def _valid_sparse(X):
    """The check of a scipy sparse ``X`` for EM PCA: ``(X, s)``, kept sparse (no missing entries)."""
    return sparse_door(X, "EMPCA")


def _valid_sparse_spca(X):
    """The check of a scipy sparse ``X`` for sensible PCA (two features at least)."""
    return sparse_door(X, "SensiblePCA", min_features=2)


def _source_of(X, min_features: int = 1):
    """The data source of a validated array or sparse matrix, or of a Dask array (checked in its first
    pass)."""
    if is_dask(X):
        return DaskSource(X, "X", min_samples=2, min_features=min_features)
    if is_sparse(X):  # the centring implicit in the products, never densified
        return SparseSource(X, "X")
    return DenseSource(X, "X")


def _unscale_ppca(res, s: float, shape):
    C, eps, mean = res
    eps = float(unscale(eps, s, 2, "variances", underflow=False))
    return unscale(C, s, 1, "loadings"), eps, unscale(mean, s, 1, "means")


@validate_params(
    {"X": ["array-like", "sparse matrix"], **EM_PCA_PARAMS}, prefer_skip_nested_validation=True
)
@blas_limited
@rescaled(_unscale_empca, "EMPCA", check=_valid_data, sparse=_valid_sparse)
def em_pca(
    X,
    n_components: int = 1,
    *,
    max_iter: int = 1000,
    tol: float = 1e-6,
    random_state=None,
    init=None,
    callback: Callable | None = None,
    n_oversamples: int | str = "auto",
) -> EMPCAResult:
    """Leading principal components by the EM algorithm of Roweis (1997), with missing values (NaN).

    Parameters
    ----------
    X : array_like or dask.array.Array, shape (n_samples, n_features)
        Data; NaN marks a missing entry (Sec. 3.2 generalized e-step, kernel
        :func:`repro.em_pca._kernels.missing_estep`). Every row and column needs one observed entry. A Dask
        array is read once per iteration, one task per row chunk (e-step and accumulation), missing values
        included; integer and boolean dtypes are cast, complex and object ones refused, unknown chunk sizes
        learnt in the first pass and chunks along the features joined per task: see :mod:`repro._chunked`.
    n_components : int
        ``k``, in ``1..min(n_samples - 1, n_features)``.
    max_iter : int
        Largest number of m-steps; reaching it without convergence gives a ConvergenceWarning.
    tol : float
        Stop when the sine of the largest principal angle between successive subspaces is below ``tol``
        (with missing values, also the change of the completed-data mean relative to the total standard
        deviation). ``tol=0`` runs exactly ``max_iter`` iterations (Fig. 2 runs exactly 20).
    random_state : None, int or np.random.Generator
        Draws the initial ``C`` (standard normal entries) when ``init`` is None.
    init : array_like, shape (n_components, n_features), optional
        Initial ``C'`` (rows linearly independent).
    callback : callable, optional
        ``callback(t, C, eigenvalues)`` after the e-step of iteration ``t`` (t = 0 is the initial condition):
        ``C`` (n_features, n_components) is the current EM matrix (do not modify), ``eigenvalues`` the
        Rayleigh-Ritz eigenvalue guesses in span C. Returning True stops the EM (counted as converged).
        With ``n_oversamples > 0``, ``C`` is instead the orthonormal basis of the top-k Ritz vectors.
    n_oversamples : int or "auto", default "auto"
        Not in the paper (0 = Roweis' algorithm). Run the EM on ``k + n_oversamples`` columns (capped at
        ``min(n_samples - 1, n_features)``) with a Rayleigh-Ritz step in every pass (the Ritz vectors of
        ``G = (YQ)'(YQ)``), return the top ``k`` Ritz vectors, and measure convergence on their span. EM is
        subspace iteration, so the top k then converge at rate ``lambda_{k+s+1}/lambda_k`` instead of
        ``lambda_{k+1}/lambda_k``, for ``(k+s)/k`` times the cost per iteration: worth it when the spectrum
        decays slowly past k. ``"auto"``: ``min(k, 10)`` for ``k > 1`` on complete data, 0 (Roweis'
        iteration, the rank-one kernel) for ``k = 1`` or with missing values (the missing-value model has
        exactly k columns). Pass 0 for the paper's iteration at any k. The oversampled iteration also
        uses momentum (Xu et al. 2018) and, on complete arrays above 64 MiB, float32 products in its
        early passes (over the data, or over ``Y'Y`` formed in float32 once when the passes still to
        come would cost more; its last two passes are float64): see :mod:`repro.em_pca`.

    Returns
    -------
    EMPCAResult
        ``components`` (k, n_features) and ``explained_variance`` (the leading eigenpairs of the sample
        covariance), ``mean``, ``n_iter``, ``converged`` and the per-iteration ``history``.

    See Also
    --------
    EMPCA : the estimator form.
    em_pca_blocks : data read as row blocks.
    sensible_pca : the noisy model of Sec. 4.

    Notes
    -----
    Complete data, ``k = 1``: each iteration is ``u = Y q``, ``a = Y'u`` (BLAS) and the O(p) kernel
    :func:`repro.em_pca._kernels.rank1_mstep`. Any ``k``: two BLAS-3 products and O(pk^2) work.
    Data whose largest magnitude is outside ``[2^-256, 2^256]`` (e.g. ``X * 1e-160``) are fitted as
    ``X / s`` with ``s`` a power of two and the variances multiplied back (PCA is scale-equivariant);
    constant data (no variance) are refused.

    References
    ----------
    S. Roweis. EM algorithms for PCA and SPCA. NIPS 10, 1997, Sec. 3 (Eqs. 1-2) and 3.2.

    Examples
    --------
    The EM finds the leading eigenpairs of the sample covariance:

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 30)) * np.linspace(3, 1, 30)
    >>> from repro import em_pca
    >>> res = em_pca(X, 2, random_state=0)
    >>> values, vectors = np.linalg.eigh(np.cov(X, rowvar=False))
    >>> res.converged, bool(np.allclose(res.explained_variance, values[::-1][:2]))
    (True, True)
    >>> np.abs(res.components @ vectors[:, ::-1][:, :2]).round(6).tolist()  # the eigenvectors up to sign
    [[1.0, 0.0], [0.0, 1.0]]
    """
    return _em_pca_on(_source_of(X), n_components, max_iter, tol, random_state, init, callback, n_oversamples)


class EMPCA(ComponentNamesMixin, VarianceScoreMixin, ReconstructionMixin, TransformerMixin, BaseEstimator):
    """PCA by the EM algorithm of Roweis (1997): a few eigenvectors of large data, with missing values.

    Parameters
    ----------
    n_components : int, default 1
        Number of leading components ``k`` (``1..min(n_samples - 1, n_features)``).
    max_iter : int, default 1000
        Largest number of EM iterations (m-steps).
    tol : float, default 1e-6
        Convergence threshold on the sine of the largest principal angle between successive subspaces.
    random_state : None, int or np.random.Generator
        Seeds the random initial ``C``.
    init : array_like (n_components, n_features), optional
        Explicit initial ``C'``.
    callback : callable, optional
        See :func:`em_pca`.
    n_oversamples : int or "auto", default "auto"
        Extra EM columns with a Rayleigh-Ritz step (not in the paper): ``min(k, 10)`` for ``k > 1`` on
        complete data; 0 = Roweis' algorithm (the default for ``k = 1`` and with missing values); see
        :func:`em_pca`.

    Attributes
    ----------
    components_ : ndarray, shape (n_components, n_features)
        Unit-norm, orthogonal, ordered by decreasing eigenvalue.
    explained_variance_ : ndarray, shape (n_components,)
        Eigenvalues of the sample covariance (``ddof=1``).
    explained_variance_ratio_ : ndarray, shape (n_components,)
        ``explained_variance_`` over the total variance (the trace of the sample covariance).
    mean_ : ndarray, shape (n_features,)
        Column means (of the completed data when values are missing).
    n_iter_ : int
        EM iterations (m-steps) run.
    converged_ : bool
        Whether ``tol`` was met before ``max_iter``.
    history_ : dict of ndarray
        Per iteration (0 = initial condition): ``subspace_change``, ``reconstruction_error``,
        ``eigenvalues``; see :class:`EMPCAResult`.
    n_components_ : int
        Number of components fitted.
    n_features_in_ : int
        Number of features seen by ``fit``.
    feature_names_in_ : ndarray of str, shape ``(n_features_in_,)``
        Column names of ``X`` when ``fit`` got a DataFrame with string column names (only then);
        ``transform`` and ``score`` then refuse a DataFrame whose columns differ or are reordered.

    See Also
    --------
    em_pca : the function form.
    SensiblePCA : the density model of Sec. 4.
    repro.EMSparsePCA : the same EM with cardinality and sign constraints (Sigg & Buhmann 2008).

    References
    ----------
    S. Roweis. EM algorithms for PCA and SPCA. NIPS 10, 1997, Sec. 3 and 3.2 (missing values).

    Examples
    --------
    >>> import numpy as np
    >>> from repro.em_pca import EMPCA
    >>> X = np.random.default_rng(0).standard_normal((200, 30)) * np.linspace(3, 1, 30)
    >>> EMPCA(n_components=2, random_state=0).fit(X).components_.shape
    (2, 30)

    With 20% of the entries missing (NaN), the EM recovers the principal subspace of the complete data:

    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 2)) @ rng.standard_normal((2, 10))  # rank 2 ...
    >>> X += 0.1 * rng.standard_normal((200, 10))  # ... plus noise
    >>> holes = X.copy()
    >>> holes[rng.random(X.shape) < 0.2] = np.nan
    >>> full = EMPCA(n_components=2, random_state=0).fit(X)
    >>> est = EMPCA(n_components=2, random_state=0).fit(holes)
    >>> np.linalg.svd(est.components_ @ full.components_.T, compute_uv=False).round(3).tolist()  # cosines
    [1.0, 1.0]
    """

    _parameter_constraints: ClassVar[dict] = dict(EM_PCA_PARAMS)

    def __init__(
        self,
        n_components: int = 1,
        *,
        max_iter: int = 1000,
        tol: float = 1e-6,
        random_state=None,
        init=None,
        callback=None,
        n_oversamples: int | str = "auto",
    ):
        self.n_components = n_components
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.init = init
        self.callback = callback
        self.n_oversamples = n_oversamples

    def _store(self, res: EMPCAResult, n_features: int):
        self.components_ = res.components
        self.explained_variance_ = res.explained_variance
        self.explained_variance_ratio_ = res.explained_variance / res.total_variance
        self.mean_ = res.mean
        self.n_iter_ = res.n_iter
        self.converged_ = res.converged
        self.history_ = res.history
        self.n_features_in_ = n_features
        self.n_components_ = res.components.shape[0]
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # NaN marks a missing value (Sec. 3.2); an explicit oversampled EM runs on complete data only
        # ("auto" falls back to Roweis' iteration when X has missing values).
        oversampled = isinstance(self.n_oversamples, numbers.Integral) and self.n_oversamples > 0
        tags.input_tags.allow_nan = not oversampled
        tags.input_tags.sparse = True  # scipy.sparse: the centring implicit, never densified
        if oversampled:
            why = (
                "fit refuses NaN with n_oversamples > 0 (complete data only), but transform still takes "
                "NaN as missing entries of new rows (least-squares coordinates), which the check forbids"
            )
            return with_expected_failures(tags, {"check_estimators_nan_inf": why})
        return tags

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None, weights=None):
        """Fit on ``X`` (n_samples, n_features), an array or a Dask array; NaN entries are missing values.

        Parameters
        ----------
        X : array_like or dask.array.Array, shape (n_samples, n_features)
            Training data; NaN marks a missing entry.
        y : None
            Ignored (scikit-learn convention).
        sample_weight : array_like, shape (n_samples,), optional
            Frequency weights of the rows (2 counts a row twice): the eigenvectors of the weighted
            covariance (see :mod:`repro.em_pca.weights`); in-memory X without NaN, or a scipy sparse X
            (the weighted centring implicit, never densified).
        weights : array_like, shape (n_samples, n_features), optional
            Per-entry weights, 0 = missing (e.g. inverse variances): minimizes
            ``sum_ij w_ij (x_ij - mean_j - z_i'c_j)^2``; sets ``weighted_error_``. Dense X only: with a
            scipy sparse X they are refused (a weight per entry is a dense array the shape of X; pass
            sample_weight, or X.toarray()).

        Returns
        -------
        self
            The fitted estimator.
        """
        check_features(self, X)
        self._stream = None  # a later partial_fit starts a new stream
        if sample_weight is not None or weights is not None:
            return fit_empca_weighted(self, X, sample_weight, weights)
        res = em_pca(X, **self.get_params())  # the parameters are the function's keywords
        return self._store(res, res.components.shape[1])

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None, sample_weight=None):
        """Merge a batch of rows into the running mean and scatter and refit from them (see
        :mod:`repro.em_pca.streaming`): any order and size of batches, memory independent of the rows.

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
            Fitted once the rows seen suffice for ``n_components``; ``n_samples_seen_`` and
            ``sketch_error_bound_`` (0 while the scatter is exact) are set after every call.
        """
        return partial_fit_empca(self, X, sample_weight)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_blocks(self, blocks):
        """Fit on row blocks read once per iteration (see :func:`em_pca_blocks`). Returns self.

        Parameters
        ----------
        blocks : callable or re-iterable
            Row blocks of the data, as for :func:`em_pca_blocks`.

        Returns
        -------
        self
            The fitted estimator.
        """
        check_features(self, None)  # blocks carry no column names
        res = em_pca_blocks(blocks, **self.get_params())  # the parameters are the function's keywords
        return self._store(res, res.components.shape[1])

    def transform(self, X):
        """Coordinates in the principal subspace, shape (n_samples, n_components).

        Complete rows are projected, ``(x - mean_) @ components_.T``; a row with NaN gets the least-squares
        coordinates of its observed entries (the generalized e-step).

        Parameters
        ----------
        X : array_like, shape (n_samples, n_features)
            Data; NaN marks a missing entry.

        Returns
        -------
        ndarray, shape (n_samples, n_components)
            The coordinates.
        """
        check_is_fitted(self, "components_")
        if is_dask(X):  # a lazy Dask array, computed chunk by chunk where the data are
            return DaskSource(X, "X", first_pass=False).map_rows(self.transform)
        if is_sparse(X):  # X W' - 1 (mean_' W'), never densified
            return centred_rows(check_n_features(self, X, sparse=True), self.mean_, self.components_.T)
        X = check_n_features(self, X, allow_nan=True)
        mask = np.isnan(X)
        if not mask.any():
            return (X - self.mean_) @ self.components_.T
        empty = np.flatnonzero(mask.all(axis=1))
        if empty.size:
            raise ValueError(f"X has row(s) {_head(empty)} with every entry missing: no coordinates.")
        C = np.ascontiguousarray(self.components_.T)
        ptr, idx = _missing_structure(mask)
        Yfill = np.where(mask, self.mean_, X)
        B = (Yfill - self.mean_) @ C
        Z = np.empty((X.shape[0], C.shape[1]))
        _missing_estep(Yfill, B, C, C.T @ C, self.mean_, ptr, idx, Z, np.empty(X.shape[1]))
        return Z


@validate_params(
    {"X": ["array-like"], "n_components": [POSITIVE_INT]}, prefer_skip_nested_validation=True
)
@rescaled(_unscale_ppca, "ppca_closed_form", check=_valid_complete)
def ppca_closed_form(X, n_components: int) -> tuple[np.ndarray, float, np.ndarray]:
    """Closed-form maximum-likelihood PPCA (Tipping & Bishop 1999, Eqs. 7-8), the fixed point of SPCA.

    Parameters
    ----------
    X : array_like, shape (n_samples, n_features)
        Complete data (centred here).
    n_components : int
        ``k``, ``1..min(n_samples - 1, n_features - 1)``.

    Returns
    -------
    C : ndarray, shape (n_features, n_components)
        ``U_k (L_k - eps I)^{1/2}`` (rotation ``R = I``; columns with canonical signs).
    noise_variance : float
        ``eps = mean(l_{k+1}, ..., l_p)`` with ``l`` the eigenvalues of the ML sample covariance
        ``Xc'Xc / n`` (``ddof=0``; zeros beyond the rank of the data count), never below the floor
        ``1e-13 tr(S)``. When the centred data lie in ``k`` or fewer dimensions (e.g. ``k = n_samples - 1``)
        the ML ``eps`` is 0 (computed as a round-off value, possibly negative) and the likelihood is
        unbounded: ``eps`` is then clamped to the floor, the columns use ``max(l_j - eps, 0)``, and a
        :class:`LowRankWarning` says so. The result is then the ML model under ``eps >= floor``.
    mean : ndarray, shape (n_features,)
        The column means.

    Raises
    ------
    ValueError
        When ``X`` has zero variance (e.g. all zeros): no Gaussian with ``eps > 0`` fits it.

    See Also
    --------
    sensible_pca : reaches the same fixed point by EM.

    References
    ----------
    M. E. Tipping and C. M. Bishop. Probabilistic principal component analysis. JRSS B 61:611-622,
    1999, Eqs. 7-8. S. Roweis. EM algorithms for PCA and SPCA. NIPS 10, 1997, Sec. 4.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 30)) * np.linspace(3, 1, 30)
    >>> from repro import ppca_closed_form
    >>> C, noise_variance, mean = ppca_closed_form(X, 2)
    >>> values = np.linalg.eigvalsh(np.cov(X, rowvar=False, ddof=0))[::-1]
    >>> C.shape, bool(np.isclose(noise_variance, values[2:].mean()))  # eps: the mean discarded eigenvalue
    ((30, 2), True)
    """
    n, p = X.shape  # X was validated by the decorator (_valid_complete)
    k, _, _ = _check_common(n_components, 1, 0.0, n, p, spca=True)
    cov = Covariance._from_valid(X, ddof=0)
    trS = float(cov.trace())
    floor = _noise_floor(trS)
    values, U = cov.eigh(k)
    eps = (trS - float(values.sum())) / (p - k)
    if eps < floor:
        _warn_low_rank(k, floor, floor)
        eps = floor
    C = U * np.sqrt(np.maximum(values - eps, 0.0))
    return C, float(eps), X.mean(axis=0)


@validate_params(
    {"X": ["array-like", "sparse matrix"], **SENSIBLE_PCA_PARAMS}, prefer_skip_nested_validation=True
)
@blas_limited
@rescaled(_unscale_spca, "SensiblePCA", check=_valid_spca, sparse=_valid_sparse_spca)
def sensible_pca(
    X,
    n_components: int = 1,
    *,
    algorithm: str = "accelerated",
    max_iter: int = 5000,
    tol: float = 1e-8,
    random_state=None,
    init=None,
    callback: Callable | None = None,
) -> SensiblePCAResult:
    """Sensible PCA (Roweis 1997, Sec. 4): EM for ``C`` and the global noise level ``eps``.

    Parameters
    ----------
    X : array_like or dask.array.Array, shape (n_samples, n_features)
        Data; NaN marks a missing entry. With missing values the EM of Sec. 4 runs with the generalized
        e-step of Sec. 3.2 made exact for the noisy model: per row the posterior of ``x`` given the
        observed coordinates, ``N(M_O^-1 C_O'(y_O - mu_O), eps M_O^-1)`` with ``M_O = C_O'C_O + eps I``,
        and per column the m-step of ``(c_j, mu_j)`` over the rows observing it (the EM for PPCA with
        missing data, Tipping & Bishop 1999, App. 4.1 / Ilin & Raiko 2010); ``algorithm`` is then ignored
        (the accelerated step needs complete rows) and ``tol`` applies to the Aitken-extrapolated change
        of the parameters. A Dask array is read once per iteration, one task per row chunk.
    n_components : int
        ``k`` in ``1..min(n_samples - 1, n_features - 1)``.
    algorithm : {"accelerated", "em"}, default "accelerated"
        ``"em"``: Roweis' EM as printed (e-step Eq. 2, m-step of Sec. 4), from a random start. Its subspace
        converges like EM PCA (rate ``l_{k+1}/l_k``), but the column scales and ``eps`` converge at rate
        ``1 - 2 eps (l_j - eps)/l_j^2``: thousands of iterations when the noise is small relative to the
        signal (6,201 for k = 5 on the CBCL faces at ``tol=1e-5``), and none at all as ``eps -> 0``.
        ``"accelerated"`` (default): each iteration is the same e-step and m-step, whose new ``C`` spans
        ``S C`` (S the ML sample covariance), followed by an exact conditional maximization of the
        likelihood over the scales of ``C`` within that span and over ``eps`` (closed form in the k x k Ritz
        problem, :func:`ppca_closed_form` restricted to the subspace). The likelihood still never decreases
        (an ECM algorithm), the cost per iteration is the same two products over the data, and the scales
        and ``eps`` are exact for the current subspace, so the iterations are those of EM PCA: a few tens
        (34 for k = 5 on CBCL at ``tol=1e-5``, 0.06 s; 82 at ``tol=1e-8``), independent of the noise level.
    max_iter : int, default 5000
        Largest number of iterations; reaching it gives a ConvergenceWarning.
    tol : float
        Stop when the relative residual of the likelihood's stationarity equations is below ``tol``:
        ``|S C - C (C'C + eps I)|_F / |S C|_F`` (for ``"em"`` also ``|tr S - tr C'C - p eps| / (p eps)``),
        which vanish exactly at the ML fixed point (Tipping & Bishop 1999, Sec. 3.2). This measures the
        distance to the fixed point, not the last step: a slowly moving EM does not stop early. Round-off
        limits it to about ``1e-16 tr(S) / l_1``.
    random_state, init
        Initial ``C`` (standard normal scaled by the mean variance per coordinate, or ``init`` transposed);
        initial ``eps`` (``"em"``) = mean variance per coordinate.
    callback : callable, optional
        ``callback(t, C, eps)`` after the e-step of iteration t; True stops.

    Returns
    -------
    SensiblePCAResult
        ``components``, ``C``, ``explained_variance``, ``noise_variance``, ``mean``, ``log_likelihood``,
        ``n_iter``, ``converged`` and the per-iteration ``history``.

    Raises
    ------
    ValueError
        For data with zero variance (e.g. all zeros).

    Warns
    -----
    ConvergenceWarning
        When ``max_iter`` is reached before ``tol``.
    LowRankWarning
        When the ML noise variance is 0 (the centred data lie in k or fewer dimensions): ``eps`` is clamped
        to ``1e-13 tr(S)`` and the result is the ML model under that constraint (:func:`ppca_closed_form`
        does the same).

    See Also
    --------
    SensiblePCA : the estimator form (scores and samples the density).
    ppca_closed_form : the fixed point in closed form.

    Notes
    -----
    Cost ``O(knp)`` per iteration: the inversion lemma gives ``beta = (C'C + eps I)^-1 C'`` and only
    ``tr(YY')`` (not ``YY'``) enters the noise update (footnote 6).

    References
    ----------
    S. Roweis. EM algorithms for PCA and SPCA. NIPS 10, 1997, Sec. 4.
    M. E. Tipping and C. M. Bishop. Probabilistic principal component analysis. JRSS B, 1999.
    X.-L. Meng and D. B. Rubin. Maximum likelihood estimation via the ECM algorithm. Biometrika 80, 1993.

    Examples
    --------
    The EM stops at the maximum-likelihood model of :func:`ppca_closed_form`:

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 30)) * np.linspace(3, 1, 30)
    >>> from repro import ppca_closed_form, sensible_pca
    >>> res = sensible_pca(X, 2, random_state=0)
    >>> C, noise_variance, _ = ppca_closed_form(X, 2)
    >>> res.converged, bool(np.isclose(res.noise_variance, noise_variance))
    (True, True)
    >>> bool(np.allclose(np.abs(res.C), np.abs(C), atol=1e-6))  # the same columns up to sign
    True
    """
    source = _source_of(X, min_features=2)
    return _sensible_pca_on(source, n_components, algorithm, max_iter, tol, random_state, init, callback)


class SensiblePCA(ComponentNamesMixin, TransformerMixin, BaseEstimator):
    """Sensible PCA (Roweis 1997, Sec. 4): the Gaussian model ``N(mean, CC' + eps I)`` fitted by EM.

    Its principal subspace is that of PCA; unlike PCA it is a density, so it can score new data
    (:meth:`score_samples`) and generate data (:meth:`sample`). The fitted parameters are the
    maximum-likelihood ones (:func:`ppca_closed_form`), reached by EM in ``O(knp)`` per iteration.

    Parameters
    ----------
    n_components : int, default 1
        ``k`` in ``1..min(n_samples - 1, n_features - 1)``.
    algorithm : {"accelerated", "em"}, default "accelerated"
        ``"accelerated"``: Roweis' e-step and m-step followed by the exact ML scales and noise within the new
        subspace (an ECM algorithm; iterations of EM PCA, a few tens: 34 for k = 5 on the CBCL faces at
        ``tol=1e-5``, 0.06 s). ``"em"``: the paper's EM as printed (6,201 iterations there, 7 s; it stalls as
        the noise goes to 0). Both stop at the ML fixed point; see :func:`sensible_pca`.
    max_iter : int, default 5000
        Largest number of iterations; reaching it gives a ConvergenceWarning.
    tol : float, default 1e-8
        On the relative residual of the likelihood's stationarity equations (the distance to the ML fixed
        point, see :func:`sensible_pca`).
    random_state : None, int or np.random.Generator
        Seeds the random initial ``C``.
    init : array_like (n_components, n_features), optional
        Explicit initial ``C'``.

    Attributes
    ----------
    components_ : ndarray, shape (n_components, n_features)
        Orthonormal principal directions, ordered.
    C_ : ndarray, shape (n_features, n_components)
        The paper's ``C`` in the rotation ``components_.T * sqrt(explained_variance_ - noise_variance_)``.
    explained_variance_ : ndarray, shape (n_components,)
        Model variances ``|c_j|^2 + eps``: at the ML fixed point the leading eigenvalues of the sample
        covariance normalized by n (``ddof=0``, maximum likelihood).
    noise_variance_ : float
        The global noise level ``eps`` (ML, ``ddof=0``).
    mean_ : ndarray, shape (n_features,)
        Column means (the model's mean).
    log_likelihood_ : float
        Total training log-likelihood.
    n_iter_, converged_, history_
        As in :class:`EMPCA`; ``history_`` has ``log_likelihood``, ``noise_variance``, ``subspace_change``
        and ``residual`` (the stopping measure of each iteration).
    n_components_ : int
        Number of components fitted.
    n_features_in_ : int
        Number of features seen by ``fit``.
    feature_names_in_ : ndarray of str, shape ``(n_features_in_,)``
        Column names of ``X`` when ``fit`` got a DataFrame with string column names (only then);
        ``transform`` and ``score`` then refuse a DataFrame whose columns differ or are reordered.

    Warns
    -----
    ConvergenceWarning
        When ``max_iter`` is reached before the ML fixed point (``converged_`` is then False).
    LowRankWarning
        When the centred data lie in ``n_components`` or fewer dimensions (ML noise variance 0): the noise
        variance is kept at its floor (see :func:`sensible_pca`).

    See Also
    --------
    sensible_pca : the function form.
    EMPCA : the zero-noise limit (PCA).

    References
    ----------
    S. Roweis. EM algorithms for PCA and SPCA. NIPS 10, 1997, Sec. 4.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 30)) * np.linspace(3, 1, 30)
    >>> from repro import SensiblePCA
    >>> model = SensiblePCA(n_components=2, random_state=0).fit(X)
    >>> model.converged_, model.components_.shape, model.score_samples(X[:3]).shape
    (True, (2, 30), (3,))
    >>> model.sample(5, random_state=0).shape  # a density: it generates data
    (5, 30)
    """

    _parameter_constraints: ClassVar[dict] = {k: v for k, v in SENSIBLE_PCA_PARAMS.items() if k != "callback"}

    def __init__(
        self,
        n_components: int = 1,
        *,
        algorithm: str = "accelerated",
        max_iter: int = 5000,
        tol: float = 1e-8,
        random_state=None,
        init=None,
    ):
        self.n_components = n_components
        self.algorithm = algorithm
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.init = init

    def _store(self, res: SensiblePCAResult):
        self.components_ = res.components
        self.C_ = res.C
        self.explained_variance_ = res.explained_variance
        self.noise_variance_ = res.noise_variance
        self.mean_ = res.mean
        self.log_likelihood_ = res.log_likelihood
        self.n_iter_ = res.n_iter
        self.converged_ = res.converged
        self.history_ = res.history
        self.n_features_in_ = res.components.shape[1]
        self.n_components_ = res.components.shape[0]
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None, weights=None):
        """Fit on ``X`` (n_samples, n_features), an array or a Dask array; NaN entries are missing values.

        Parameters
        ----------
        X : array_like or dask.array.Array, shape (n_samples, n_features)
            Training data; NaN marks a missing entry.
        y : None
            Ignored (scikit-learn convention).
        sample_weight : array_like, shape (n_samples,), optional
            Frequency weights of the rows: the ML model of the weighted data (in-memory X without NaN,
            or a scipy sparse X).
        weights : None
            Per-entry weights are refused with the reason (one noise variance for every entry).

        Returns
        -------
        self
            The fitted estimator.
        """
        check_features(self, X)
        self._stream = None  # a later partial_fit starts a new stream
        if sample_weight is not None or weights is not None:
            return fit_spca_weighted(self, X, sample_weight, weights)
        return self._store(sensible_pca(X, **self.get_params()))  # the parameters are its keywords

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None, sample_weight=None):
        """Merge a batch of rows into the running mean and scatter and refit from them (see
        :mod:`repro.em_pca.streaming`): any order and size of batches, memory independent of the rows.

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
            Fitted once the rows seen suffice for ``n_components``; ``n_samples_seen_`` and
            ``sketch_error_bound_`` (0 while the scatter is exact) are set after every call.
        """
        return partial_fit_spca(self, X, sample_weight)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_blocks(self, blocks):
        """Fit on row blocks read once per iteration (see :func:`em_pca_blocks`). Returns self.

        Parameters
        ----------
        blocks : callable or re-iterable
            Row blocks of the data, as for :func:`em_pca_blocks`.

        Returns
        -------
        self
            The fitted estimator.
        """
        check_features(self, None)  # blocks carry no column names
        return self._store(sensible_pca_blocks(blocks, **self.get_params()))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN marks a missing entry (fit, transform and score)
        tags.input_tags.sparse = True  # scipy.sparse: the centring implicit, never densified
        return tags

    def _check_X(self, X):
        check_is_fitted(self, "C_")
        X = check_n_features(self, X, allow_nan=True)
        return X

    def _observed(self, X):
        """Per row with missing entries: (row index, observed mask) (complete rows are not listed)."""
        miss = np.isnan(X)
        return [(i, ~miss[i]) for i in np.flatnonzero(miss.any(axis=1))]

    def _M(self):
        k = self.C_.shape[1]
        return self.C_.T @ self.C_ + self.noise_variance_ * np.eye(k)

    def transform(self, X):
        """Posterior means ``E[x | y] = (C'C + eps I)^-1 C'(y - mean)`` (Eq. 2b), shape (n_samples, k).

        Not the PCA projection (Sec. 4): the posterior mean shrinks towards 0 by ``(L - eps)/L``. NaN
        entries are missing: such a row gets the posterior mean given its observed entries only.

        Parameters
        ----------
        X : array_like, shape (n_samples, n_features)
            Data; NaN marks a missing entry.

        Returns
        -------
        ndarray, shape (n_samples, n_components)
            The posterior means of the latent coordinates.
        """
        if is_dask(X):  # a lazy Dask array, computed chunk by chunk where the data are
            check_is_fitted(self, "C_")
            return DaskSource(X, "X", first_pass=False).map_rows(self.transform)
        if is_sparse(X):  # sparse rows (complete): the centring implicit, never densified
            check_is_fitted(self, "C_")
            T = centred_rows(check_n_features(self, X, sparse=True), self.mean_, self.C_)
            return scipy.linalg.cho_solve(_chol(self._M(), "C'C + eps I"), T.T).T
        X = self._check_X(X)
        holes = self._observed(X)
        D = np.where(np.isnan(X), 0.0, X - self.mean_)
        Z = scipy.linalg.cho_solve(_chol(self._M(), "C'C + eps I"), (D @ self.C_).T).T
        k, eps = self.C_.shape[1], self.noise_variance_
        for i, obs in holes:  # the posterior of x given the observed entries of the row only
            Co = self.C_[obs]
            Z[i] = np.linalg.solve(Co.T @ Co + eps * np.eye(k), Co.T @ D[i, obs])
        return Z

    def inverse_transform(self, Z):
        """``mean + C z`` for latent rows ``Z`` (n_samples, k).

        Parameters
        ----------
        Z : array_like, shape (n_samples, n_components)
            Latent coordinates.

        Returns
        -------
        ndarray, shape (n_samples, n_features)
            ``mean_ + Z C'``.
        """
        check_is_fitted(self, "C_")
        Z = check_latent(Z, self.C_.shape[1])
        return Z @ self.C_.T + self.mean_

    def score_samples(self, X):
        """Log-density of each row under ``N(mean_, CC' + eps I)``, shape (n_samples,); for a row with
        missing entries (NaN), the marginal density of its observed entries.

        Woodbury: ``(CC' + eps I)^-1 = (I - C M^-1 C')/eps``; determinant lemma:
        ``log|CC' + eps I| = (p - k) log eps + log|M|`` with ``M = C'C + eps I``. O(pk) per sample after an
        O(pk^2) set-up; no p x p matrix.

        Parameters
        ----------
        X : array_like, shape (n_samples, n_features)
            Data; NaN marks a missing entry.

        Returns
        -------
        ndarray, shape (n_samples,)
            The log-density of each row (of its observed entries).
        """
        if is_dask(X):  # a lazy Dask array, computed chunk by chunk where the data are
            check_is_fitted(self, "C_")
            return DaskSource(X, "X", first_pass=False).map_rows(self.score_samples)
        sparse = is_sparse(X)
        if sparse:  # sparse rows (complete): |x - mean_|^2 and (x - mean_)'C without a dense copy
            check_is_fitted(self, "C_")
            X = check_n_features(self, X, sparse=True)
        else:
            X = self._check_X(X)
        p = X.shape[1]
        k = self.C_.shape[1]
        eps = self.noise_variance_
        cf = _chol(self._M(), "C'C + eps I")
        holes = [] if sparse else self._observed(X)
        D = None if sparse else np.where(np.isnan(X), 0.0, X - self.mean_)
        T = centred_rows(X, self.mean_, self.C_) if sparse else D @ self.C_
        MT = scipy.linalg.cho_solve(cf, T.T).T
        dd = row_centred_ss(X, self.mean_) if sparse else np.einsum("ij,ij->i", D, D)
        quad = (dd - np.einsum("ij,ij->i", T, MT)) / eps
        logdet = (p - k) * math.log(eps) + 2.0 * float(np.log(np.diag(cf[0])).sum())
        out = -0.5 * (p * _LOG_2PI + logdet + quad)
        for i, obs in holes:  # the marginal density of the observed entries, N(mean_o, C_o C_o' + eps I)
            Co, d = self.C_[obs], D[i, obs]
            po = int(obs.sum())
            cfo = _chol(Co.T @ Co + eps * np.eye(k), "C_o'C_o + eps I")
            t = Co.T @ d
            q = (d @ d - t @ scipy.linalg.cho_solve(cfo, t)) / eps
            ld = (po - k) * math.log(eps) + 2.0 * float(np.log(np.diag(cfo[0])).sum())
            out[i] = -0.5 * (po * _LOG_2PI + ld + q)
        return out

    def score(self, X, y=None, sample_weight=None):
        """Mean log-likelihood per sample of ``X``.

        Parameters
        ----------
        X : array_like, shape (n_samples, n_features)
            Data; NaN marks a missing entry.
        y : None
            Ignored (scikit-learn convention).
        sample_weight : array_like, shape (n_samples,), optional
            Weights of the rows: the weighted mean of :meth:`score_samples`.

        Returns
        -------
        float
            The (weighted) mean of :meth:`score_samples`.
        """
        values = self.score_samples(X)
        return weighted_average(values, sample_weight, values.shape[0])

    def get_covariance(self):
        """The model covariance ``CC' + eps I`` (n_features x n_features; dense, O(p^2) memory).

        Returns
        -------
        ndarray, shape (n_features, n_features)
            ``CC' + eps I``.
        """
        check_is_fitted(self, "C_")
        return self.C_ @ self.C_.T + self.noise_variance_ * np.eye(self.C_.shape[0])

    def sample(self, n_samples: int = 1, random_state=None):
        """Draw "fantasy" data ``mean + C x + v``, ``x ~ N(0, I)``, ``v ~ N(0, eps I)`` (n_samples, p).

        Parameters
        ----------
        n_samples : int, default 1
            Number of draws.
        random_state : None, int or np.random.Generator
            Seeds the draws.

        Returns
        -------
        ndarray, shape (n_samples, n_features)
            Samples of the fitted density.
        """
        check_is_fitted(self, "C_")
        n_samples = check_int(n_samples, "n_samples", low=1)
        rng = check_random_state(random_state)
        p, k = self.C_.shape
        Z = rng.standard_normal((n_samples, k))
        V = rng.standard_normal((n_samples, p)) * math.sqrt(self.noise_variance_)
        return Z @ self.C_.T + V + self.mean_
