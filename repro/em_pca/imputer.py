"""Missing entries filled under sensible PCA (Roweis 1997, Sec. 4): :class:`PPCAImputer`, :func:`ppca_impute`.

The model of Sec. 4 is a Gaussian density, ``y ~ N(mu, Sigma)`` with ``Sigma = C C' + eps I`` (``C``
``p x k``, ``eps`` the noise variance), fitted by the EM of Sec. 4 with the exact e-step given the
observed coordinates of each row (:func:`repro.em_pca.sensible_pca` with NaN). A row with observed
coordinates ``O`` and missing ones ``M`` then has the conditional Gaussian

    ``y_M | y_O ~ N(mu_M + Sigma_MO Sigma_OO^-1 (y_O - mu_O),  Sigma_MM - Sigma_MO Sigma_OO^-1 Sigma_OM)``,

and the latent form of the same Gaussian needs no ``p x p`` matrix: the posterior of the latent ``x`` given
``y_O`` is ``N(z, eps M_O^-1)`` with ``M_O = C_O'C_O + eps I`` and ``z = M_O^-1 C_O'(y_O - mu_O)``
(Roweis' e-step, Eq. 2b, on the observed rows of ``C``), and ``y_M = mu_M + C_M x + v_M`` with ``v_M ~ N(0,
eps I)`` independent of ``x`` given ``y_O``, so

    ``E[y_M | y_O] = mu_M + C_M z``,    ``Cov[y_M | y_O] = eps (I + C_M M_O^-1 C_M')``.

The two agree by the inversion lemma: ``C_O'(C_O C_O' + eps I)^-1 = M_O^-1 C_O'`` gives the mean, and
``C_M C_M' - C_M C_O'(C_O C_O' + eps I)^-1 C_O C_M' = C_M (I - M_O^-1 C_O'C_O) C_M' = eps C_M M_O^-1 C_M'``
gives the covariance (``I - M_O^-1 C_O'C_O = eps M_O^-1``). The posterior standard deviation of a filled
entry ``j`` is ``sqrt(eps (1 + c_j' M_O^-1 c_j))``, at least ``sqrt(eps)``; a row with nothing observed
gets ``mu`` and the model's marginal standard deviations ``sqrt(|c_j|^2 + eps)``.

What these intervals leave out: the uncertainty of the fitted ``(mu, C, eps)`` themselves (they are the
maximum-likelihood values plugged in, not integrated over; with ``n`` rows the error this omits shrinks as
``1/sqrt(n)``); and any misfit of the model, chiefly its one noise variance for every feature (features
noisier than the average get too narrow intervals, quieter ones too wide) and its Gaussian shape
(bounded or skewed data, e.g. pixels at 0 or 1). The missing entries are taken as missing at random, the
condition under which the EM's likelihood of the observed entries is the right one.

Cost of filling ``n`` rows: one ``k x k`` Cholesky factor per row with missing entries and two products
``O(n p k^2)`` (the per-row matrices ``C_O'C_O`` from the observed mask times the ``p x k^2`` table of
``c_j c_j'``), row blocks of at most :data:`BLOCK_BYTES`; complete rows are passed through untouched.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, _fit_context
from sklearn.utils._param_validation import validate_params
from sklearn.utils.validation import check_is_fitted

from .._chunked import DenseSource
from .._rescale import rescaled
from .._threads import blas_limited
from .._validation import (
    _head,
    check_array,
    check_features,
    check_int,
    check_n_features,
    check_random_state,
    warn_not_converged,
)
from ._common import SENSIBLE_PCA_PARAMS, SensiblePCAResult, _check_common, _unscale_spca
from .blocks import _sensible_pca_on
from .estimators import SensiblePCA
from .missing import _spca_missing_loop
from .sensible import _noise_floor, _spca_init, _spca_result_from_C, _warn_low_rank

__all__ = ["BLOCK_BYTES", "CHECK_EVERY", "PPCAImputer", "ppca_impute"]

#: The most memory one block of rows takes in :meth:`PPCAImputer.transform` (its ``n x (p + k^2)`` arrays).
BLOCK_BYTES = 8 * 2**20
#: EM iterations between two looks at the fills of the training data (the imputer's stopping rule).
CHECK_EVERY = 10

_PARAMS = {k: SENSIBLE_PCA_PARAMS[k] for k in ("n_components", "max_iter", "tol", "random_state")}


# --------------------------------------------------------------------------- the fit
def _valid_fit(X) -> np.ndarray:
    """The one check of ``X`` at ``fit``: NaN marks a missing entry; no column may be missing entirely."""
    X = check_array(X, "X", allow_nan=True, min_samples=2, min_features=2)
    empty = np.flatnonzero(np.isnan(X).all(axis=0))
    if empty.size:
        raise ValueError(
            f"X has column(s) {_head(empty)} with every entry missing at fit: the model learns nothing about "
            "them (no mean, no loading), so their entries cannot be imputed. Drop those columns, or give "
            "each at least one observed value."
        )
    return X


@blas_limited
@rescaled(_unscale_spca, "PPCAImputer")
def _fit_valid(X, n_components, max_iter, tol, random_state) -> SensiblePCAResult:
    """Sensible PCA on a validated float64 ``X`` (the decorator passes it through unchecked and fits badly
    scaled data as ``X / s``); with missing entries, the EM stopped on the fills (:func:`_em_on_fills`)."""
    source = DenseSource(X, "X")
    if not source.missing:  # complete data: the ML model (the fills' rule has nothing to watch)
        return _sensible_pca_on(source, n_components, "accelerated", max_iter, 1e-8, random_state, None, None)
    n, p = X.shape
    k, max_iter, tol = _check_common(n_components, max_iter, tol, n, p, spca=True)
    floor = _noise_floor(source.ss / n)
    C0, eps0 = _spca_init(None, p, k, source.ss, n, check_random_state(random_state))
    return _em_on_fills(X, source.obs_mean, C0, eps0, max_iter, tol, floor)


class _Centred:
    """``X`` (with NaN) read by the missing-value EM with its observed entries centred at ``m``: the source
    protocol of :mod:`repro.sources` (``map_sum`` and the observed counts, means and scatter)."""

    missing = True

    def __init__(self, X, m):
        self.X, self.n, self.p = X, X.shape[0], X.shape[1]
        obs = ~np.isnan(X)
        D = np.where(obs, X - m, 0.0)
        self.obs_count = obs.sum(axis=0).astype(np.float64)
        self.obs_mean = m
        self.obs_m2 = np.einsum("ij,ij->j", D, D)
        self._cache: dict = {}

    def map_sum(self, fn, *args):
        return list(fn(self.X, self._cache, *args))


def _em_on_fills(X, mean, C, eps, max_iter, tol, floor) -> SensiblePCAResult:
    """The EM of sensible PCA with missing values (:func:`repro.em_pca.missing._spca_missing_loop`), run
    :data:`CHECK_EVERY` iterations at a time and stopped when the fills of ``X`` have settled.

    After each run of iterations the missing entries of ``X`` are filled under the current model; with
    ``change`` the root mean square of their movement since the last check over the root mean square of
    their posterior standard deviation, and ``rate`` the ratio of two successive changes, the EM stops when
    ``change / (1 - rate)`` (the movement still to come if it shrinks geometrically, Aitken) is below
    ``tol``. Each run restarts the loop at the current ``(C, eps, mean)`` with the data centred at that
    mean, which is where the uninterrupted loop stands (the iterates agree to round-off).
    """
    rows = np.flatnonzero(np.isnan(X).any(axis=1))
    hist_parts, n_iter, converged = [], 0, False
    prev_fill, prev_change, measure = None, 0.0, math.inf
    while True:
        step = min(CHECK_EVERY, max_iter - n_iter)
        source = _Centred(X, mean)
        C, eps, ll, mean, it, _, _, hist = _spca_missing_loop(source, C, eps, step, 0.0, None, floor)
        n_iter += it
        hist_parts.append({key: v if not hist_parts else v[1:] for key, v in hist.items()})
        fill, sd = _training_fills(X, rows, C, eps, mean)
        if prev_fill is not None:  # the rate needs two changes: no stop before the third look
            change = math.sqrt(float(np.mean((fill - prev_fill) ** 2)) / max(float(np.mean(sd**2)), 1e-300))
            if prev_change > 0:
                measure = change / (1.0 - min(change / prev_change, 0.99))
            prev_change = change
        prev_fill = fill
        if measure < tol:
            converged = True
            break
        if n_iter >= max_iter or step == 0:
            break
    history = {key: np.concatenate([h[key] for h in hist_parts]) for key in hist_parts[0]}
    history["iteration"] = np.arange(history["iteration"].size)
    if eps <= floor:
        _warn_low_rank(C.shape[1], eps, floor)
    if not converged:
        warn_not_converged("PPCAImputer", n_iter, tol, "(the fills of the training data still move)")
    return _spca_result_from_C(C, eps, ll, mean, n_iter, converged, history)


def _training_fills(X, rows, C, eps, mean):
    """The fills and posterior standard deviations of the missing entries of ``X`` (in row order)."""
    fills, sds = [], []
    p, k = C.shape
    for block in _blocks(rows.size, p, k):
        post = _Posterior(C, eps, mean, X, rows[block])
        fills.append(post.mean()[post.miss] * post.s)
        sds.append(np.sqrt(post.var()[post.miss]) * post.s)
    return np.concatenate(fills), np.concatenate(sds)


def _observing_rows(X: np.ndarray) -> np.ndarray:
    """The rows of ``X`` that observe something: a row with every entry missing adds nothing to the
    likelihood of the observed entries, so leaving it out of the fit changes no parameter."""
    seen = ~np.isnan(X).all(axis=1)
    return X if seen.all() else X[seen]


# --------------------------------------------------------------------------- the conditional Gaussian
def _unit(C: np.ndarray, eps: float) -> float:
    """A power of two near the model's typical standard deviation ``sqrt(tr(Sigma) / p)``: the posterior
    is computed on ``(y - mu) / s`` with ``C / s`` and ``eps / s^2``, exactly (a power of two), so that no
    product of a finite model underflows or overflows."""
    typical = math.sqrt(float(np.vdot(C, C)) / C.shape[0] + eps)
    return 2.0 ** round(math.log2(typical)) if typical > 0 and math.isfinite(typical) else 1.0


class _Posterior:
    """The conditional Gaussians of the missing entries of a block of rows, in the unit ``s``."""

    def __init__(self, C, eps, mean, X, rows):
        self.s = _unit(C, eps)
        self.C = C / self.s
        self.eps = eps / self.s**2
        miss = np.isnan(X[rows])
        self.miss = miss
        self.D = np.where(miss, 0.0, (X[rows] - mean) / self.s)  # y_O - mu_O, missing entries 0
        p, k = self.C.shape
        outer = (self.C[:, :, None] * self.C[:, None, :]).reshape(p, k * k)  # row j: c_j c_j'
        self.outer = outer
        G = ((~miss).astype(np.float64) @ outer).reshape(-1, k, k)  # C_O'C_O per row
        G += self.eps * np.eye(k)  # M_O
        self.L = np.linalg.cholesky(G)  # M_O = L L'
        r = (self.D @ self.C)[:, :, None]  # C_O'(y_O - mu_O): the missing entries of D are 0
        self.z = _cho_solve(self.L, r)[:, :, 0]  # E[x | y_O]

    def mean(self) -> np.ndarray:
        """``E[y_M | y_O] - mu_M`` in the unit at every entry (the caller keeps the observed ones)."""
        return self.z @ self.C.T

    def var(self) -> np.ndarray:
        """``Var[y_j | y_O] = eps (1 + c_j' M_O^-1 c_j)`` in the unit squared, at every entry."""
        k = self.C.shape[1]
        Minv = _cho_solve(self.L, np.broadcast_to(np.eye(k), self.L.shape)).reshape(-1, k * k)
        quad = np.maximum(Minv @ self.outer.T, 0.0)  # c_j' M_O^-1 c_j >= 0 (clipped at round-off)
        return self.eps * (1.0 + quad)

    def draw(self, rng) -> np.ndarray:
        """One draw of ``y_M - mu_M`` (unit) given ``y_O``, jointly per row: ``x = z + sqrt(eps) L^-T e``
        has covariance ``eps M_O^-1``, then ``C_M x + v_M`` with ``v_M ~ N(0, eps I)``."""
        n, k = self.z.shape
        e = rng.standard_normal((n, k, 1))
        x = self.z + math.sqrt(self.eps) * _solve_lt(self.L, e)[:, :, 0]
        return x @ self.C.T + math.sqrt(self.eps) * rng.standard_normal(self.D.shape)


def _cho_solve(L, B):
    """``(L L')^-1 B`` for stacks of lower Cholesky factors ``L`` (n, k, k) and right-hand sides (n, k, m)."""
    return _solve_lt(L, _solve_l(L, B))


def _solve_l(L, B):
    return np.linalg.solve(L, B)


def _solve_lt(L, B):
    return np.linalg.solve(np.swapaxes(L, 1, 2), B)


def _blocks(n_rows: int, p: int, k: int):
    step = max(1, BLOCK_BYTES // (8 * (3 * p + 3 * k * k)))
    return (slice(i, min(i + step, n_rows)) for i in range(0, n_rows, step))


# --------------------------------------------------------------------------- the estimator
class PPCAImputer(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Missing entries (NaN) filled with their posterior mean under sensible PCA, with its uncertainty.

    ``fit`` fits the Gaussian ``N(mean, C C' + eps I)`` of Roweis (1997, Sec. 4) by EM on the observed
    entries (:class:`~repro.SensiblePCA` with missing values); ``transform`` replaces each missing entry by
    its conditional mean given the observed entries of its row, :meth:`posterior_std` gives its conditional
    standard deviation and :meth:`sample` draws multiple imputations from the conditional Gaussian of each
    row (the derivation and what the intervals leave out: the module ``repro.em_pca.imputer``). Observed
    entries are returned unchanged.

    Parameters
    ----------
    n_components : int, default 1
        ``k``, the number of latent dimensions, in ``1..min(n_samples - 1, n_features - 1)`` (``n_samples``
        counting the rows that observe something). Choose it like PCA's (e.g. by
        ``model_.score`` on held-out rows, the log-likelihood of their observed entries).
    max_iter : int, default 1000
        Largest number of EM iterations; reaching it gives a ConvergenceWarning.
    tol : float, default 1e-2
        The EM stops when the fills of the training data have settled: every :data:`CHECK_EVERY`
        iterations they are recomputed, and the EM stops when their movement still to come (the last
        movement over one minus its rate of decrease, Aitken), in root mean square, is below ``tol`` times
        the root mean square of their posterior standard deviations. On complete data ``fit`` finds the
        maximum-likelihood model (:class:`~repro.SensiblePCA`'s stopping rule at its default ``tol``).
    random_state : None, int or np.random.Generator
        Seeds the EM's random start (the draws of :meth:`sample` have their own ``random_state``).

    Attributes
    ----------
    model_ : SensiblePCA
        The fitted density (``C_``, ``noise_variance_``, ``mean_``, ``score_samples`` of rows with NaN).
    mean_ : ndarray, shape (n_features,)
        The model's mean (what a row with nothing observed gets).
    C_ : ndarray, shape (n_features, n_components)
        The loadings ``C``.
    noise_variance_ : float
        ``eps``.
    n_iter_ : int
        EM iterations run.
    converged_ : bool
        Whether ``tol`` was met.
    n_features_in_ : int
        Number of features seen by ``fit``.
    feature_names_in_ : ndarray of str, shape ``(n_features_in_,)``
        Column names of ``X`` when ``fit`` got a DataFrame with string column names (only then).

    See Also
    --------
    ppca_impute : the function form.
    SensiblePCA : the model.
    sklearn.impute.IterativeImputer : a chained-regression imputer.

    Notes
    -----
    A row with nothing missing is returned as it is; a row with everything missing gets ``mean_`` (its
    standard deviations are the model's marginal ones). ``fit`` refuses a column with every entry missing
    (nothing is known about it) and leaves out rows with every entry missing (they add nothing to the
    likelihood). ``fit`` needs no missing entry at all: the model is then the closed-form ML PPCA.

    References
    ----------
    S. Roweis. EM algorithms for PCA and SPCA. NIPS 10, 1997, Sec. 3.2 and 4.
    M. E. Tipping and C. M. Bishop. Probabilistic principal component analysis. JRSS B 61(3), 1999.

    Examples
    --------
    Data of rank 2 plus noise, with 20% of the entries hidden:

    >>> import numpy as np
    >>> from repro import PPCAImputer
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((300, 2)) @ rng.standard_normal((2, 8)) + 0.1 * rng.standard_normal((300, 8))
    >>> hidden = rng.random(X.shape) < 0.2
    >>> imp = PPCAImputer(n_components=2, random_state=0).fit(np.where(hidden, np.nan, X))
    >>> filled = imp.transform(np.where(hidden, np.nan, X))
    >>> bool(np.all(filled[~hidden] == X[~hidden]))  # observed entries unchanged
    True
    >>> rmse = np.sqrt(np.mean((filled - X)[hidden] ** 2))
    >>> std = imp.posterior_std(np.where(hidden, np.nan, X))[hidden]
    >>> bool(rmse < 0.2), bool(np.sqrt(np.mean(std**2)) < 0.2)  # errors near the noise level 0.1
    (True, True)
    >>> imp.sample(np.where(hidden, np.nan, X), n_draws=5, random_state=0).shape  # 5 imputations
    (5, 300, 8)
    """

    _parameter_constraints: ClassVar[dict] = dict(_PARAMS)

    def __init__(self, n_components: int = 1, *, max_iter: int = 1000, tol: float = 1e-2, random_state=None):
        self.n_components = n_components
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN marks the entries to fill
        return tags

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the model on the observed entries of ``X`` (n_samples, n_features); NaN marks a missing entry.

        Parameters
        ----------
        X : array_like, shape (n_samples, n_features)
            Training data.
        y : None
            Ignored (scikit-learn convention).

        Returns
        -------
        self
            The fitted imputer.
        """
        check_features(self, X)
        return self._fit_array(_valid_fit(X))

    def _fit_array(self, X):
        """Fit on the validated array ``X`` (``n_features_in_`` recorded by the caller)."""
        rows = _observing_rows(X)
        res = _fit_valid(rows, self.n_components, self.max_iter, self.tol, self.random_state)
        params = {k: getattr(self, k) for k in _PARAMS}
        self.model_ = SensiblePCA(**params)._store(res)
        self.mean_, self.C_, self.noise_variance_ = res.mean, res.C, res.noise_variance
        self.n_iter_, self.converged_ = res.n_iter, res.converged
        return self

    def _rows(self, X, name="X"):
        check_is_fitted(self, "C_")
        X = check_n_features(self, X, name, allow_nan=True)
        return X, np.flatnonzero(np.isnan(X).any(axis=1))

    def _posteriors(self, X, rows):
        p, k = self.C_.shape
        for block in _blocks(rows.size, p, k):
            r = rows[block]
            yield r, _Posterior(self.C_, self.noise_variance_, self.mean_, X, r)

    def _fill(self, X, rows, std: bool):
        """The filled copy of the validated ``X`` and, with ``std``, the posterior standard deviations."""
        out = X.copy()
        sd = np.zeros_like(X) if std else None
        for r, post in self._posteriors(X, rows):
            out[r] = np.where(post.miss, self.mean_ + post.s * post.mean(), X[r])
            if std:
                sd[r] = np.where(post.miss, post.s * np.sqrt(post.var()), 0.0)
        return out, sd

    def transform(self, X):
        """``X`` with each missing entry replaced by ``E[y_j | y_O]`` under the fitted model.

        Parameters
        ----------
        X : array_like, shape (n_samples, n_features)
            Data; NaN marks a missing entry.

        Returns
        -------
        ndarray, shape (n_samples, n_features)
            A new array: observed entries as given, missing ones filled.
        """
        X, rows = self._rows(X)
        return self._fill(X, rows, std=False)[0]

    def posterior_std(self, X):
        """The posterior standard deviation of each filled entry, ``sqrt(eps (1 + c_j' M_O^-1 c_j))``.

        Parameters
        ----------
        X : array_like, shape (n_samples, n_features)
            Data; NaN marks a missing entry.

        Returns
        -------
        ndarray, shape (n_samples, n_features)
            The standard deviation of ``y_j`` given the observed entries of its row; 0 at observed entries.
            ``transform(X) +- 1.645 std`` is the model's 90% interval of each filled entry.
        """
        X, rows = self._rows(X)
        out = np.zeros_like(X)
        for r, post in self._posteriors(X, rows):
            out[r] = np.where(post.miss, post.s * np.sqrt(post.var()), 0.0)
        return out

    def sample(self, X, n_draws: int = 1, random_state=None):
        """Multiple imputations: draws of the missing entries from their conditional Gaussian given each row.

        Each draw is one joint sample of all the missing entries of each row, ``N(E[y_M | y_O],
        eps (I + C_M M_O^-1 C_M'))`` (the correlations within a row included; rows independent given the
        model). The fitted parameters are plugged in, not drawn (their uncertainty is left out).

        Parameters
        ----------
        X : array_like, shape (n_samples, n_features)
            Data; NaN marks a missing entry.
        n_draws : int, default 1
            Number of completed copies of ``X``.
        random_state : None, int or np.random.Generator
            Seeds the draws.

        Returns
        -------
        ndarray, shape (n_draws, n_samples, n_features)
            The completed copies; observed entries as given in each.
        """
        n_draws = check_int(n_draws, "n_draws", low=1)
        rng = check_random_state(random_state)
        X, rows = self._rows(X)
        out = np.repeat(X[None], n_draws, axis=0)
        for r, post in self._posteriors(X, rows):
            for d in range(n_draws):
                out[d, r] = np.where(post.miss, self.mean_ + post.s * post.draw(rng), X[r])
        return out

    def conditional(self, x):
        """The conditional Gaussian of the missing entries of one row given its observed entries.

        Parameters
        ----------
        x : array_like, shape (n_features,)
            One row; NaN marks a missing entry.

        Returns
        -------
        missing : ndarray of int
            The missing coordinates ``M``, increasing.
        mean : ndarray, shape (len(missing),)
            ``E[y_M | y_O] = mu_M + C_M M_O^-1 C_O'(y_O - mu_O)``.
        covariance : ndarray, shape (len(missing), len(missing))
            ``Cov[y_M | y_O] = eps (I + C_M M_O^-1 C_M')``.
        """
        x = np.asarray(x)
        if x.ndim != 1:
            raise ValueError(f"x must be one row, shape (n_features,); got shape {x.shape}.")
        X, _ = self._rows(x[None, :], "x")
        miss = np.flatnonzero(np.isnan(X[0]))
        post = _Posterior(self.C_, self.noise_variance_, self.mean_, X, np.array([0]))
        Cm = post.C[miss]
        Minv_Cm = _cho_solve(post.L, Cm.T[None])[0]
        cov = post.eps * (np.eye(miss.size) + Cm @ Minv_Cm)
        return miss, self.mean_[miss] + post.s * post.mean()[0, miss], post.s**2 * cov


@validate_params({"X": ["array-like"], **_PARAMS}, prefer_skip_nested_validation=True)
def ppca_impute(X, n_components: int = 1, *, max_iter: int = 1000, tol: float = 1e-2, random_state=None):
    """Fill the missing entries (NaN) of ``X`` with their posterior mean under sensible PCA fitted to ``X``.

    The function form of :class:`PPCAImputer` (``fit`` and ``transform`` on the same data).

    Parameters
    ----------
    X : array_like, shape (n_samples, n_features)
        Data; NaN marks a missing entry.
    n_components, max_iter, tol, random_state
        As for :class:`PPCAImputer`.

    Returns
    -------
    filled : ndarray, shape (n_samples, n_features)
        ``X`` with its missing entries filled.
    std : ndarray, shape (n_samples, n_features)
        The posterior standard deviation of each filled entry (0 at observed entries).

    Examples
    --------
    >>> import numpy as np
    >>> from repro import ppca_impute
    >>> rng = np.random.default_rng(1)
    >>> X = rng.standard_normal((100, 1)) @ [[1.0, 2.0, 3.0, 4.0]] + 0.5 * rng.standard_normal((100, 4))
    >>> X[0, 1] = np.nan
    >>> filled, std = ppca_impute(X, 1, random_state=0)
    >>> bool(np.isfinite(filled).all()), bool(std[0, 1] > 0), float(std[0, 0])
    (True, True, 0.0)
    """
    X = _valid_fit(X)  # the one check of X: the fit and the fill below take the validated array
    imp = PPCAImputer(n_components, max_iter=max_iter, tol=tol, random_state=random_state)
    imp._fit_array(X)
    return imp._fill(X, np.flatnonzero(np.isnan(X).any(axis=1)), std=True)
