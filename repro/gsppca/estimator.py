"""The door of GSPPCA (Mattei et al. 2016, Sec. 2.4): the estimator :class:`GSPPCA` (VEM, ranking, the
exact evidence over the nested models, PCA on the selected variables)."""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from .._base import NONNEG_REAL, POSITIVE_INT, RANDOM_STATE, ProjectionMixin, RealInterval, dask_rows
from .._sparse import centred_rows, sparse_door
from .._threads import blas_limited
from .._validation import (
    check_array,
    check_features,
    check_has_variance,
    check_int,
    check_n_features,
    check_random_state,
    check_real,
    check_scale,
    is_dask,
    is_sparse,
    unscale,
)
from . import sparse as _sp
from ._common import EVIDENCE_TIE, NOISE_ESTIMATES, RANKINGS, _check_d, _noise_sq, _rescale
from .evidence import _dask_evidence_path, _evidence_path, log_density, row_log_density
from .vem import _run_vem, _unscale_vem, _vem_start, rank_variables

__all__ = ["GSPPCA"]


# --------------------------------------------------------------------------- estimator
class GSPPCA(ProjectionMixin, BaseEstimator):
    """Globally sparse probabilistic PCA (Mattei, Bouveyron & Latouche 2016, Sec. 2.4).

    VEM on the relaxed model, ranking of the variables by ``u``, the exact evidence (Theorem 2, corrected;
    ``alpha`` maximized per model, ``sigma1`` a PPCA noise estimate) over the ``p`` nested models, then
    PCA on the selected variables. ``score`` is the mean log-likelihood under the fitted model.

    Parameters
    ----------
    n_components : int, default 1
        ``d``, ``1 <= d < min(n_samples, n_features)`` (the authors' Golub example uses 1 and 30).
    n_selected : "evidence" or int
        ``"evidence"``: the model of largest evidence; an int forces ``q``.
    sigma1 : "bc", "ml" or float > 0, default "bc"
        The noise of the inactive variables in the evidence: ``"bc"`` the bias-corrected PPCA estimate
        (Passemier, Li & Yao 2017), the default of the authors' GSPPCA.R; ``"ml"`` the PPCA
        maximum-likelihood estimate of the paper's Sec. 2.2; or a given value (:func:`_sigma1_sq`).
    max_iter, tol : int, float
        VEM stopping rule: at most ``max_iter`` iterations, until one lowers the free energy by less than
        ``tol`` nats per entry of ``X`` (module docstring).
    ranking : "evidence" or "vem", default "evidence"
        The ranking of the variables whose nested models the evidence compares. ``"evidence"``: of the VEM's
        rankings after iterations 1, 2, 4, 8, ... and at its end, the one whose best model has the largest
        exact evidence (module docstring, "Which ranking"); ``"vem"``: the ranking at the VEM's end (the
        paper's Sec. 2.4). With an int ``n_selected`` both use the VEM's final ranking.
    random_state : None, int or Generator
        The random rotation of the VEM's PPCA start.

    Attributes
    ----------
    support_ : ndarray of bool, shape (n_features,)
        The selected variables: the first ``n_selected_`` of ``ranking_``.
    n_selected_ : int
        ``q``, the number of selected variables (of largest evidence, or as forced by ``n_selected``).
    u_ : ndarray, shape (n_features,)
        The VEM's relaxed selection weights in ``[0, 1]`` (Eq. 7), one per variable.
    ranking_ : ndarray of int, shape (n_features,)
        The variables by decreasing ``u`` of the VEM at iteration ``ranking_iter_`` (ties by the unclipped
        ratio ``b/a``, then by index); ``u_`` is the VEM's final ``u``.
    ranking_iter_ : int
        The VEM iteration whose ranking was kept (``n_iter_`` with ``ranking="vem"``).
    ranking_evidence_ : ndarray, shape (n_rankings, 2)
        For each distinct ranking evaluated, its VEM iteration and the log evidence of its best model.
    evidence_path_ : ndarray, shape (n_features,)
        Log evidence of the model of the first ``q`` ranked variables, at index ``q - 1``.
    alpha_path_ : ndarray, shape (n_features,)
        The evidence-maximizing loading variance ``alpha`` of each of those models.
    sigma1_ : float
        The inactive noise standard deviation used by the evidence: the estimate named by ``sigma1``
        (:func:`_sigma1_sq`; by default the bias-corrected one) or the given value.
    free_energy_ : ndarray
        Free energy after each VEM iteration (non-increasing).
    n_iter_ : int
        VEM iterations run.
    vem_ : VEMResult
        Everything the VEM returned (see :func:`gsppca_vem`).
    components_ : ndarray, shape (``min(n_components, n_selected_)``, n_features)
        Principal axes of ``X[:, support_]`` (unit rows, zero outside the support).
    explained_variance_ : ndarray
        Their variances (ddof=1).
    mean_ : ndarray, shape (n_features,)
        Column means of the training data (subtracted by ``transform``).
    n_features_in_ : int
        Number of features seen by ``fit``.
    feature_names_in_ : ndarray of str, shape ``(n_features_in_,)``
        Column names of ``X`` when ``fit`` got a DataFrame with string column names (only then);
        ``transform`` and ``score`` then refuse a DataFrame whose columns differ or are reordered.

    See Also
    --------
    gsppca_vem, evidence_path, log_evidence
    repro.baselines.SSPCA : the structured sparse PCA baseline of the paper.

    References
    ----------
    Mattei, P.-A., Bouveyron, C. & Latouche, P. (2016). Globally sparse probabilistic PCA. AISTATS,
    Sections 2.3-2.4 (Eqs. 5-7, Theorem 2, Proposition 1).

    Examples
    --------
    >>> import numpy as np
    >>> from repro.gsppca import make_globally_sparse
    >>> X, v = make_globally_sparse(100, 20, 2, 5, sigma=0.1, random_state=0)  # 5 of 20 variables active
    >>> np.flatnonzero(v).tolist()
    [4, 6, 9, 10, 14]
    >>> from repro import GSPPCA
    >>> est = GSPPCA(n_components=2, random_state=0).fit(X)
    >>> est.n_selected_, np.flatnonzero(est.support_).tolist()
    (5, [4, 6, 9, 10, 14])
    >>> int(np.argmax(est.evidence_path_)) + 1 == est.n_selected_
    True
    >>> est.components_.shape, est.transform(X).shape
    ((2, 20), (100, 2))
    >>> bool(est.ranking_evidence_[:, 1].max() == est.evidence_path_.max())  # the kept ranking's best model
    True
    >>> GSPPCA(n_components=2, ranking="vem", random_state=0).fit(X).ranking_iter_ == est.n_iter_
    True
    """

    _parameter_constraints: ClassVar[dict] = {
        "n_components": [POSITIVE_INT],
        "n_selected": [StrOptions({"evidence"}), POSITIVE_INT],
        "sigma1": [StrOptions(set(NOISE_ESTIMATES)), RealInterval(0, None, closed="neither")],
        "max_iter": [POSITIVE_INT],
        "tol": [NONNEG_REAL],
        "ranking": [StrOptions(set(RANKINGS))],
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self,
        n_components=1,
        *,
        n_selected="evidence",
        sigma1="bc",
        max_iter=1000,
        tol=1e-7,
        ranking="evidence",
        random_state=None,
    ):
        self.n_components = n_components
        self.n_selected = n_selected
        self.sigma1 = sigma1
        self.max_iter = max_iter
        self.tol = tol
        self.ranking = ranking
        self.random_state = random_state

    @blas_limited
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit on ``X`` (n_samples, n_features), which is centred; returns self.

        Badly scaled data (largest magnitude outside ``[2^-256, 2^256]``) are fitted as ``X / s`` and the
        results multiplied back (:func:`_rescale`); data with no variance are refused.

        A ``dask.array`` is fitted where it lies (on a ``dask.distributed`` cluster, persisted or not),
        never gathered. The VEM uses the data only through the ``p x p`` scatter ``Xc'Xc`` (module
        docstring: ``Mu = X G``, ``C = X' Mu = S G``, ``Mu' Mu = G' S G``), formed in one distributed pass
        (:func:`repro._chunked.dask_covariance`, after one pass for the largest magnitude); the exact
        evidence of every nested model of a ranking is a sum over the rows of a non-linear function of
        their norms, so it is evaluated on the workers (:func:`_dask_evidence_path`): one pass for the
        degenerate models, one per Newton iteration in ``log alpha`` (all ``p`` models at once; each row
        chunk returns, per model, the two row sums of the Newton step) and one for the evidence values.
        What stays on the workers: ``X`` and, per task, the cumulative squared norms of one row chunk
        (``rows x p``). What the client holds: the ``p x p`` scatter, ``p``-vectors and the ``p x d``
        loadings (refused with a ValueError above :data:`repro._chunked.CLIENT_LIMIT_BYTES`); the
        latent means ``vem_.Mu`` stay a lazy Dask array (``(X - mean_) G``). The answer is the in-memory
        one up to round-off (sums in another order), and the VEM's cost per iteration is ``O(p^2 d)``
        instead of ``O(n p d)``: meant for tall data. A Dask array of scipy sparse chunks is read the same
        way, each chunk kept sparse (:mod:`repro._chunked`; its evidence passes on densified row blocks).

        A scipy sparse matrix (CSR or CSC; other formats converted to CSR) is fitted without a dense copy
        (:mod:`repro.gsppca.sparse`): the VEM through the centred data as an operator (two sparse
        products per iteration, the centring implicit), its start and the noise estimate from the
        ``d`` leading eigenpairs of the scatter, the exact evidence over densified row blocks (it is a
        non-linear function of every centred entry), PCA on the selected columns from their scatter.
        The answer is the dense fit's on ``X.toarray()`` up to round-off.

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
        if is_dask(X):
            return self._fit_dask(X)
        if is_sparse(X):
            return self._fit_sparse(X)
        X = check_array(X, "X", min_samples=2)
        n, p = X.shape
        forced = self._check_params(p)
        d = _check_d(self.n_components, n, p)
        check_has_variance(X, "GSPPCA")
        Xs, sc, sigma1, _ = _rescale(X, self.sigma1, check_input=False)
        mean = Xs.mean(axis=0)
        Xc = Xs - mean
        _noise_sq(Xc, d, sigma1)  # refuse a zero noise estimate or a bad sigma1 before the VEM runs
        cps = [] if self.ranking == "evidence" and forced is None else None
        res = _run_vem(Xc, d, self.max_iter, self.tol, check_random_state(self.random_state), checkpoints=cps)

        def path_of(order):
            return _evidence_path(Xc, order, d, sigma1, check_input=False)

        order, path = self._choose_ranking(res, cps, path_of)
        support = np.zeros(p, dtype=bool)
        support[order[: forced or path.best_q]] = True
        k = min(d, int(support.sum()), n - 1)
        _, sv, Vt = np.linalg.svd(Xc[:, support], full_matrices=False)
        return self._store(res, order, path, support, Vt[:k], sv[:k] ** 2, mean, sc, n, p)

    def _check_params(self, p):
        """The checks that depend on the data (the others are ``_parameter_constraints``'); the forced ``q``
        or None."""
        if p < 2:
            raise ValueError(
                "X has 1 feature(s); GSPPCA selects variables among at least 2 (n_components < n_features)."
            )
        if isinstance(self.n_selected, str):  # "evidence", the only string the constraints let through
            return None
        return check_int(self.n_selected, "n_selected", low=1, high=p)

    def _choose_ranking(self, res, checkpoints, path_of):
        """The ranking (and its evidence path) whose best model has the largest exact evidence among the VEM's
        rankings at its checkpoints and at its end (``checkpoints`` a list: ``ranking="evidence"`` and the
        evidence selects ``q``), or the ranking at the VEM's end (``checkpoints`` None). Ties go to the
        later iteration, and evidences within :data:`EVIDENCE_TIE` (relative) of each other tie: rankings
        that order the same best set of variables differently give that set's evidence summed in
        another order (1e-15 apart on Fig. 1's data). Each distinct ranking is evaluated once (at the
        latest iteration that gave it)."""
        cands = [(it, rank_variables(u, r)) for it, u, r in checkpoints or ()]
        cands.append((res.n_iter, rank_variables(res.u, res.u_ratio)))
        best, seen, record = None, set(), []
        for it, order in reversed(cands):  # a ranking met again earlier counts at its latest iteration
            key = order.tobytes()
            if key in seen:
                continue
            seen.add(key)
            path = path_of(order)
            value = float(path.log_evidence.max())
            record.append((it, value))
            if best is None or value > best[0] + EVIDENCE_TIE * max(1.0, abs(best[0])):
                best = (value, it, order, path)
        self.ranking_iter_ = int(best[1])
        self.ranking_evidence_ = np.array(record[::-1], dtype=np.float64)
        return best[2], best[3]

    def _store(self, res, order, path, support, V, sq, mean, sc, n, p):
        """Set the fitted attributes (``V``, ``sq``: the leading right singular vectors and squared singular
        values of the selected centred columns) from a fit on ``X / sc``; returns self."""
        comps = np.zeros((V.shape[0], p))
        flip = np.sign(V[np.arange(V.shape[0]), np.argmax(np.abs(V), axis=1)])
        comps[:, support] = V * flip[:, None]
        self.components_ = comps
        self.explained_variance_ = unscale(sq / (n - 1), sc, 2, "variances", underflow=False)
        self.support_ = support
        self.n_selected_ = int(support.sum())
        self.u_ = res.u
        self.ranking_ = order
        self.evidence_path_ = path.log_evidence - n * p * math.log(sc)
        self.ranking_evidence_[:, 1] -= n * p * math.log(sc)
        self.alpha_path_ = unscale(path.alpha, sc, 2, "prior variances alpha", underflow=False)
        self.sigma1_ = float(unscale(path.sigma1, sc, 1, "noise standard deviation"))
        self.vem_ = _unscale_vem(res, sc, n, p)
        self.free_energy_ = self.vem_.free_energy
        self.n_iter_ = res.n_iter
        self.mean_ = unscale(mean, sc, 1, "means")
        self.n_features_in_ = p
        return self

    def _fit_sparse(self, X):
        """:meth:`fit` of a scipy sparse matrix, never densified (see there and :mod:`.sparse`)."""
        Xs, sc = sparse_door(X, "GSPPCA")
        n, p = Xs.shape
        forced = self._check_params(p)
        d = _check_d(self.n_components, n, p)
        sigma1 = self.sigma1
        if sigma1 is not None and not isinstance(sigma1, str):
            sigma1 = check_real(sigma1, "sigma1", low=0.0, low_inclusive=False) / sc
        F, mean, m2 = _sp.centred(Xs)
        vals, A = _sp.top_spectrum(F, d)
        total = float(m2.sum()) / n
        s2 = _sp.noise_sq(vals, total, n, p, d, sigma1)  # refused here when zero, before the VEM runs
        cps = [] if self.ranking == "evidence" and forced is None else None
        rng = check_random_state(self.random_state)
        start = _vem_start(vals, A, total, p, d, rng)
        res = _run_vem(F, d, self.max_iter, self.tol, rng, checkpoints=cps, start=start)
        rows = _sp.SparseRows(Xs)

        def path_of(order):
            return _dask_evidence_path(rows, n, mean, m2, order, d, s2)

        order, path = self._choose_ranking(res, cps, path_of)
        support = np.zeros(p, dtype=bool)
        support[order[: forced or path.best_q]] = True
        k = min(d, int(support.sum()), n - 1)
        V, sq = _sp.selected_pca(F, support, k)
        return self._store(res, order, path, support, V, sq, mean, sc, n, p)

    def _fit_dask(self, X):
        """:meth:`fit` of a Dask array, on the workers (see there)."""
        import dask
        import dask.array as da

        from .._chunked import DaskSource, _dask_covariance, check_dask_array
        from .._sparse_chunks import max_abs_chunk, max_parts
        from .._validation import _scale_for

        check_dask_array(X, "X")
        p = int(X.shape[1])
        forced = self._check_params(p)
        sparse_chunks = is_sparse(getattr(X, "_meta", None))
        if sparse_chunks:  # the largest stored magnitude, chunk by chunk (one pass, a scalar comes back)
            (top,) = DaskSource(X, "X", first_pass=False).map_reduce(max_abs_chunk, max_parts)
        else:
            (top,) = dask.compute(da.abs(X).max())  # the largest magnitude (one pass, a scalar comes back)
        sc = _scale_for(float(top))
        Xs = X / sc if sc != 1.0 else X
        n, mean, S = _dask_covariance(Xs, "X", min_samples=2)
        d = _check_d(self.n_components, n, p)
        if not float(np.trace(S)) > 0.0:
            raise ValueError(
                "X has no variance (every column is constant, e.g. all zeros), so GSPPCA has no component "
                "to find; check the data."
            )
        sigma1 = self.sigma1
        if sigma1 is not None and not isinstance(sigma1, str):
            sigma1 = check_real(sigma1, "sigma1", low=0.0, low_inclusive=False) / sc
        s2 = _noise_sq(None, d, sigma1, scatter=(n, S))
        cps = [] if self.ranking == "evidence" and forced is None else None
        rng = check_random_state(self.random_state)
        res = _run_vem(None, d, self.max_iter, self.tol, rng, scatter=(n, S), checkpoints=cps)
        src = DaskSource(Xs, first_pass=False)
        if sparse_chunks:  # the latent means, lazy: X G - 1 (mean' G) per row chunk, never densified
            res.Mu = src.map_rows(centred_rows, mean, res.Mu)
        else:
            res.Mu = (Xs - mean) @ res.Mu  # the latent means, lazy: X G (vem_iterations)
        diag = np.diag(S).copy()

        def path_of(order):
            return _dask_evidence_path(src, n, mean, diag, order, d, s2)

        order, path = self._choose_ranking(res, cps, path_of)
        support = np.zeros(p, dtype=bool)
        support[order[: forced or path.best_q]] = True
        k = min(d, int(support.sum()), n - 1)
        vals, vecs = np.linalg.eigh(S[np.ix_(support, support)])
        V = vecs[:, ::-1][:, :k].T
        return self._store(res, order, path, support, V, np.clip(vals[::-1][:k], 0.0, None), mean, sc, n, p)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # scipy.sparse: the centring implicit, never densified
        return tags

    def score_samples(self, X):
        """Log density of each row of ``X`` under the fitted model (Theorem 2, corrected).

        The model of largest evidence: the selected variables ``support_``, ``alpha`` its maximizing
        ``alpha_path_[n_selected_ - 1]``, the noise ``sigma1_`` on the other variables, rows centred by
        ``mean_``. Badly scaled data are evaluated as ``(X - mean_) / s`` (minus ``p log s`` per row).
        Sparse rows are not densified: their centred norms on and off the support come from the stored
        entries (:func:`repro.gsppca.sparse.row_norms`).

        Parameters
        ----------
        X : array_like, scipy sparse matrix or dask.array.Array, shape (n_samples, n_features)
            Data with the training data's features.

        Returns
        -------
        ndarray or dask.array.Array, shape (n_samples,)
            The log density of each row (lazy, chunk by chunk where the data are, for Dask input).
        """
        check_is_fitted(self, "support_")
        lazy = dask_rows(X, self.score_samples)
        if lazy is not None:
            return lazy
        if is_sparse(X):
            return self._score_sparse(check_n_features(self, X, sparse=True))
        X = check_n_features(self, X)
        Xc = X - self.mean_
        s = check_scale(Xc)
        alpha = float(self.alpha_path_[self.n_selected_ - 1]) / s / s
        out = log_density(
            Xc / s, self.support_, n_components=self.n_components, alpha=alpha, sigma1=self.sigma1_ / s
        )
        return out - self.n_features_in_ * math.log(s)

    def _score_sparse(self, X):
        """:meth:`score_samples` of validated sparse rows."""
        r2, out2, s = _sp.row_norms(X, np.asarray(self.mean_, dtype=np.float64), self.support_)
        if np.any(r2 == 0):
            raise ValueError("X has a row that is zero on the support: the noiseless density is degenerate.")
        alpha = float(self.alpha_path_[self.n_selected_ - 1]) / s / s
        q, p = self.n_selected_, self.n_features_in_
        s2 = (self.sigma1_ / s) ** 2
        out = row_log_density(r2, out2, q, p, self.n_components, math.log(alpha), s2)
        return out - p * math.log(s)

    def score(self, X, y=None):
        """Mean log-likelihood of the rows of ``X`` under the fitted model (:meth:`score_samples`).

        Parameters
        ----------
        X : array_like, shape (n_samples, n_features)
            Data with the training data's features.
        y : None
            Ignored (scikit-learn convention).

        Returns
        -------
        float or dask.array.Array
            The mean of :meth:`score_samples` (higher is better); a lazy 0-d Dask array for Dask input.
        """
        out = self.score_samples(X)
        return out.mean() if is_dask(out) else float(np.mean(out))
