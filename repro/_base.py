"""What the sparse-PCA estimators share beyond scikit-learn's base classes."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields
from numbers import Integral, Real

import numpy as np
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import Tags
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from ._sparse import centred_rows
from ._validation import check_latent, check_n_features, is_dask, is_sparse, unscale
from ._weights import check_sample_weight, rows_factor

__all__ = [
    "NONNEG_REAL",
    "POSITIVE_INT",
    "POSITIVE_REAL",
    "RANDOM_STATE",
    "ComponentNamesMixin",
    "IntInterval",
    "ProjectionMixin",
    "RealInterval",
    "ReconstructionMixin",
    "ReproTags",
    "VarianceScoreMixin",
    "dask_rows",
    "unscale_fitted",
    "unscale_path",
    "with_expected_failures",
]


# --------------------------------------------------------------------------- parameter constraints
# The building blocks of the estimators' ``_parameter_constraints`` (scikit-learn's parameter validation:
# ``fit`` runs under ``sklearn.base._fit_context``, which refuses a parameter outside its constraints with
# an ``InvalidParameterError``, a ValueError and a TypeError naming the parameter and what it accepts).
# Bounds that depend on the data (``n_components`` at most min(n_samples, n_features), a cardinality at
# most n_features) are checked in ``fit``, where the data are known.


class IntInterval(Interval):
    """scikit-learn's ``Interval(Integral, ...)`` without ``True`` / ``False``: a bool is an ``Integral`` in
    Python, and ``max_iter=True`` would run one iteration without a word."""

    def __init__(self, left, right, *, closed):
        super().__init__(Integral, left, right, closed=closed)

    def is_satisfied_by(self, val):
        return not isinstance(val, (bool, np.bool_)) and super().is_satisfied_by(val)


class RealInterval(Interval):
    """scikit-learn's ``Interval(Real, ...)`` without ``True`` / ``False`` (``tol=True`` is not 1.0)."""

    def __init__(self, left, right, *, closed):
        super().__init__(Real, left, right, closed=closed)

    def is_satisfied_by(self, val):
        return not isinstance(val, (bool, np.bool_)) and super().is_satisfied_by(val)


#: An integer >= 1 (n_components, max_iter, cardinality, ...).
POSITIVE_INT = IntInterval(1, None, closed="left")
#: A real >= 0 (tol, penalties); infinity is refused later where it is not meaningful.
NONNEG_REAL = RealInterval(0, None, closed="left")
#: A real > 0 (a penalty or a variance that must not vanish); infinity as for NONNEG_REAL.
POSITIVE_REAL = RealInterval(0, None, closed="neither")
#: What :func:`repro._validation.check_random_state` turns into a Generator.
RANDOM_STATE = [
    None,
    IntInterval(0, None, closed="left"),
    np.random.RandomState,
    np.random.Generator,
    np.random.SeedSequence,
]


@dataclass(slots=True)
class ReproTags(Tags):
    """scikit-learn's estimator tags plus the scikit-learn checks expected to fail, with their reasons.

    scikit-learn >= 1.6 has no tag for expected failures (the ``_xfail_checks`` entry of ``_more_tags``
    is gone; ``parametrize_with_checks`` takes ``expected_failed_checks`` instead), so they are kept here,
    next to the tags they follow from, and the test suite passes them on
    (``tests/test_sklearn_checks.py``).

    Attributes
    ----------
    expected_failed_checks : dict of str to str
        Check name -> why this estimator, with these parameters, fails it.
    """

    expected_failed_checks: dict = field(default_factory=dict)


def with_expected_failures(tags: Tags, failures: dict) -> ReproTags:
    """``tags`` as :class:`ReproTags` listing the expected failures ``failures`` (name -> reason)."""
    values = {f.name: getattr(tags, f.name) for f in fields(Tags)}
    return ReproTags(**values, expected_failed_checks=dict(failures))


# Fitted attributes that scale with the data (power of the scale factor): see check_scale.
_SCALED_ATTRIBUTES = {"mean_": 1, "explained_variance_": 2, "history_": 2}


def unscale_fitted(estimator, s: float, power: int = 2) -> None:
    """Undo the internal rescaling ``X / s`` of a scale-equivariant fit on the fitted attributes.

    Multiplies ``mean_`` by ``s`` and ``explained_variance_`` and ``history_`` (variances or squared
    errors, an array or a list of arrays) by ``s**2`` where present; refuses an overflow with its reason.
    ``power=1``: the fit was on a covariance matrix divided by ``s`` (:meth:`repro.Covariance.rescaled`),
    so the variances scale as ``s`` (the mean, zeros there, is left as it is).
    """
    if s == 1.0:
        return
    for attr, p in _SCALED_ATTRIBUTES.items():
        if power == 1:  # a matrix / s: the variances scale as s, the mean (zeros) not at all
            if attr == "mean_":
                continue
            p = 1
        value = getattr(estimator, attr, None)
        if value is None:
            continue
        what = "means" if attr == "mean_" else "variances"
        if isinstance(value, list):
            setattr(estimator, attr, [unscale(np.asarray(v), s, p, what) for v in value])
        else:
            strict = attr == "explained_variance_"  # a positive variance must not become 0
            setattr(estimator, attr, unscale(value, s, p, what, underflow=not strict))


def unscale_path(path, s: float, shape=None):
    """A :class:`repro.em_sparse_pca.CardinalityPath` of ``X / s`` as that of ``X`` (variances times s^2)."""
    if s == 1.0:
        return path
    return dataclasses.replace(
        path,
        variance=unscale(path.variance, s, 2, "variances", underflow=False),
        variance_opt=unscale(path.variance_opt, s, 2, "variances", underflow=False),
    )


def scale_free(result, s: float, shape=None):
    """The result of a scale-invariant function (e.g. an entropy, a ranking): unchanged."""
    return result


def dask_rows(X, fn):
    """``fn`` applied to every row chunk of ``X`` as a lazy ``dask.array`` when ``X`` is one, else None.

    The Dask dispatch of ``transform`` / ``score_samples``: ``fn`` is the method itself, called on each
    row chunk in memory (see :meth:`repro._chunked.DaskSource.map_rows`).
    """
    from ._chunked import DaskSource

    if not is_dask(X):
        return None
    return DaskSource(X, "X", first_pass=False).map_rows(fn)


class ComponentNamesMixin(ClassNamePrefixFeaturesOutMixin):
    """``get_feature_names_out``: one name per component, the lower-cased class name and its index.

    ``EMSparsePCA`` gives ``["emsparsepca0", "emsparsepca1", ...]``, scikit-learn's convention for
    transformers whose outputs are new features (``sklearn.decomposition.PCA`` does the same), so
    ``set_output(transform="pandas")`` and pipelines with ``ColumnTransformer`` work.
    """

    @property
    def _n_features_out(self):
        return self.components_.shape[0]


class VarianceScoreMixin:
    """``score(X)``: the variance of ``X`` that the fitted components explain (higher is better).

    The default score of the estimators without a likelihood, so that model selection without labels
    works (``GridSearchCV(estimator, grid).fit(X)``, ``cross_val_score``). It is the adjusted variance of
    Shen & Huang (2008) (:func:`repro.metrics.adjusted_variance`) on ``X``, centred by the *fitted*
    ``mean_``: ``(1/n) sum_i ||P (x_i - mean_)||^2`` with ``P`` the orthogonal projection on the span of
    the components. It counts each direction once (non-orthogonal sparse loadings do not double-count),
    is at most the total variance ``(1/n) sum_i ||x_i - mean_||^2`` and equals the explained variance
    for orthonormal loadings on the training data (up to the ``n`` vs ``n - 1`` normalization). Compare
    it across parameter values on the same held-out data; it scales as ``X`` squared. The probabilistic
    models (``SensiblePCA``, ``GSPPCA``) override it with their mean log-likelihood.
    """

    def score(self, X, y=None, sample_weight=None):
        """Variance of ``X`` explained by the span of the components (module docstring); ``y`` ignored.

        Parameters
        ----------
        X : array_like, shape (n_samples, n_features)
            Data with the fitted number of features (complete rows), e.g. a held-out fold.
        y : None
            Ignored (scikit-learn convention).
        sample_weight : array_like, shape (n_samples,), optional
            Weights of the rows: ``sum_i w_i ||P (x_i - mean_)||^2 / sum_i w_i``.

        Returns
        -------
        float
            ``(1/n) sum_i ||P (x_i - mean_)||^2``, between 0 and the total variance of ``X`` about
            ``mean_``; higher is better.
        """
        from .linalg import Covariance, _span_variances  # linalg sits above this module

        check_is_fitted(self, "components_")
        X = check_n_features(self, X, allow_nan=True, sparse=True)
        if is_sparse(X):  # the centring (and the rows' weights) implicit in the operator, never densified
            mean = np.asarray(self.mean_, dtype=np.float64)
            if sample_weight is not None:
                w = check_sample_weight(sample_weight, X.shape[0], ddof=None, min_positive=1)
                cov = Covariance._trusted(data=rows_factor(X, w, mean, 1.0 / w.sum()), n_samples=X.shape[0])
                return max(float(_span_variances(self.components_, cov)[-1]), 0.0)
            cov = Covariance._from_sparse(X, ddof=0, mean=mean)
            return max(float(_span_variances(self.components_, cov)[-1]), 0.0)
        if np.isnan(X).any():
            raise ValueError(
                "X holds NaN: score needs complete rows (the variance of missing entries is not defined); "
                "drop or impute those rows."
            )
        with np.errstate(over="ignore"):
            Xc = X - self.mean_
        if not np.isfinite(Xc).all():
            raise ValueError(
                "X is too large for float64: X - mean_ overflows (max 1.8e308). Divide X (and refit) by a "
                "constant c; the score scales as c^2."
            )
        # span_variances works on the covariance scaled into the safe range of float64
        if sample_weight is None:
            cov = Covariance(data=Xc / np.sqrt(X.shape[0]), n_samples=X.shape[0])
        else:
            w = check_sample_weight(sample_weight, X.shape[0], ddof=None, min_positive=1)
            cov = Covariance(data=Xc * np.sqrt(w / w.sum())[:, None], n_samples=X.shape[0])
        return max(float(_span_variances(self.components_, cov)[-1]), 0.0)


class ReconstructionMixin:
    """``inverse_transform``: the reconstruction ``Z @ components_ + mean_`` from projections ``Z``.

    scikit-learn's ``PCA`` and ``SparsePCA`` reconstruct the same way. With orthonormal loadings it is the
    orthogonal projection of the data on their span (exactly ``X`` back when they span the whole space);
    sparse loadings that are not orthogonal give ``W'W (x - mean_) + mean_``, not a least-squares fit.
    """

    def _check_data_mean(self):
        """Hook: refuse ``inverse_transform`` where the fit has no data mean (nothing by default)."""

    def inverse_transform(self, Z):
        """Reconstructions ``Z @ components_ + mean_``, shape (n_samples, n_features).

        Parameters
        ----------
        Z : array_like, shape (n_samples, n_components)
            Coordinates on the components, e.g. the output of ``transform``.

        Returns
        -------
        ndarray, shape (n_samples, n_features)
            The reconstructions, in the space of the data ``fit`` saw.
        """
        check_is_fitted(self, "components_")
        self._check_data_mean()
        Z = check_latent(Z, self.components_.shape[0])
        return Z @ self.components_ + self.mean_


class ProjectionMixin(ComponentNamesMixin, VarianceScoreMixin, ReconstructionMixin, TransformerMixin):
    """``transform`` as the projection on the fitted loadings: ``(X - mean_) @ components_.T``, and its
    ``inverse_transform`` (:class:`ReconstructionMixin`).

    For estimators whose ``fit`` sets ``components_`` (rows), ``mean_`` and ``n_features_in_``; with
    ``get_feature_names_out`` (:class:`ComponentNamesMixin`) and the default ``score``
    (:class:`VarianceScoreMixin`).
    """

    def transform(self, X):
        """Project ``X`` on the loadings: ``(X - mean_) @ components_.T``, shape (n_samples, n_components).

        A ``dask.array`` gives a ``dask.array`` (lazy, computed chunk by chunk where the data are); scipy
        sparse rows (and a Dask array of sparse chunks) give ``X W' - 1 (mean_' W')``, never densified.

        Parameters
        ----------
        X : array_like, scipy sparse matrix or dask.array.Array, shape (n_samples, n_features)
            Data with the features seen by ``fit``.

        Returns
        -------
        ndarray or dask.array.Array, shape (n_samples, n_components)
            The projections (a Dask array for Dask input).
        """
        check_is_fitted(self, "components_")
        self._check_data_mean()
        lazy = dask_rows(X, self.transform)
        if lazy is not None:
            return lazy
        X = check_n_features(self, X, sparse=True)
        if is_sparse(X):  # a projection: the centring implicit
            return centred_rows(X, self.mean_, self.components_.T)
        return (X - self.mean_) @ self.components_.T
