"""scikit-learn's own estimator checks on every estimator of repro and repro.baselines.

Every check passes except those an estimator lists, with the reason, in its tags: scikit-learn 1.9
has no expected-failure tag (``_more_tags``' ``_xfail_checks`` is gone; ``parametrize_with_checks`` takes
``expected_failed_checks``), so ``repro._base.ReproTags`` adds ``expected_failed_checks`` to the tags
and this module passes it on. Only ``EMPCA(n_oversamples > 0)`` lists one. EMPCA declares
``input_tags.allow_nan`` (NaN marks its missing values).

The instances use small iteration budgets so that the whole module runs in seconds; the checks fit on
scikit-learn's own small data sets (at most a few hundred samples, a handful of features).
"""

import inspect

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import parametrize_with_checks

import repro
import repro.baselines
from repro import EMPCA, GSPPCA, NSPCA, EMSparsePCA, SensiblePCA, SpannogramPCA
from repro.baselines import GSPCA, SSPCA, SPCAZou

#: Every estimator class of repro and repro.baselines (public names that are scikit-learn estimators).
ESTIMATOR_CLASSES = sorted(
    {
        obj
        for module in (repro, repro.baselines)
        for name, obj in vars(module).items()
        if not name.startswith("_") and inspect.isclass(obj) and issubclass(obj, BaseEstimator)
    },
    key=lambda cls: cls.__name__,
)

ESTIMATORS = [
    *(cls() for cls in ESTIMATOR_CLASSES),
    EMPCA(n_oversamples=1, random_state=0),
    SensiblePCA(random_state=0, max_iter=500),
    EMSparsePCA(cardinality=1, random_state=0),
    EMSparsePCA(nonneg=True, random_state=0),
    NSPCA(alpha=1.0, random_state=0, max_iter=200),
    NSPCA(alpha=1.0, beta=0.1, random_state=0, max_iter=200),
    SpannogramPCA(cardinality=1, n_samples=500, random_state=0),
    SpannogramPCA(2, cardinality=2, nonneg=False, deflation="mackey", n_samples=500, random_state=0),
    GSPCA(cardinality=1),
    GSPCA(cardinality=1, direction="forward", deflation="schur"),
    SPCAZou(cardinality=1, ridge=np.inf),
    SSPCA(n_components=2, alpha=0.1, random_state=0),
    SSPCA(n_components=1, n_selected=1, random_state=0),
    SSPCA(n_components=1, cv=3, random_state=0),
]

# --- Mattei et al. (2016) estimators at their defaults (issue 20; kept apart from the list above for merges)
ESTIMATORS += [
    GSPPCA(random_state=0),
    GSPPCA(sigma1="ml", random_state=0),
    SSPCA(random_state=0),
]
# --- end of the Mattei et al. block

# --- the exact solver (issue 37)
ESTIMATORS += [
    repro.OptimalSparsePCA(cardinality=1),
    repro.OptimalSparsePCA(2, cardinality=1, nonneg=True),
]
# --- end of the exact-solver block


def _expected_failures(estimator) -> dict:
    return getattr(get_tags(estimator), "expected_failed_checks", {})


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # small iteration budgets
@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failures)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


@pytest.mark.parametrize("cls", ESTIMATOR_CLASSES, ids=lambda cls: cls.__name__)
def test_every_estimator_is_default_constructible(cls):
    est = cls()
    assert est.get_params() == cls().get_params()
    assert any(type(e) is cls and e.get_params() == est.get_params() for e in ESTIMATORS)


def test_estimator_list_is_complete():
    """The classes found are the ones the README promises, so a new estimator cannot be missed."""
    names = {cls.__name__ for cls in ESTIMATOR_CLASSES}
    assert names >= {"EMPCA", "SensiblePCA", "EMSparsePCA", "NSPCA", "SpannogramPCA", "GSPPCA"}
    assert names >= {"GSPCA", "SPCAZou", "SSPCA"}


def test_expected_failures_are_listed_with_reasons():
    listed = {type(e).__name__ + str(e.get_params()): _expected_failures(e) for e in ESTIMATORS}
    # a sparse X with sample_weight fits the weighted covariance (its centring implicit): no estimator
    # lists scikit-learn's sparse sample-weight check as an expected failure any more
    assert not [k for k, v in listed.items() if "check_sample_weight_equivalence_on_sparse_data" in v]
    assert sum(len(v) for v in listed.values()) == 1
    assert _expected_failures(EMPCA(n_oversamples=1)).keys() == {"check_estimators_nan_inf"}
    assert "n_oversamples" in _expected_failures(EMPCA(n_oversamples=1))["check_estimators_nan_inf"]
    assert get_tags(EMPCA()).input_tags.allow_nan
    assert not get_tags(EMPCA(n_oversamples=2)).input_tags.allow_nan


def _small_fit(cls):
    X = np.random.default_rng(5).standard_normal((40, 6)) @ np.diag([3.0, 2.0, 1.5, 1.0, 0.5, 0.2])
    est = cls()
    if "random_state" in est.get_params():
        est.set_params(random_state=0)  # the refit below must give the same components
    return est, X


#: The decompositions (components_, a score, outputs named after the class); the imputer's outputs are its
#: inputs, named as they are (tests/test_imputer.py).
DECOMPOSITIONS = [cls for cls in ESTIMATOR_CLASSES if cls is not repro.PPCAImputer]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("cls", DECOMPOSITIONS, ids=lambda cls: cls.__name__)
def test_score_and_feature_names_out(cls):
    est, X = _small_fit(cls)
    est.fit(X)
    value = est.score(X)
    assert np.isfinite(value)
    names = est.get_feature_names_out()
    k = est.components_.shape[0]
    assert list(names) == [f"{cls.__name__.lower()}{i}" for i in range(k)]
    frame = clone(est).set_output(transform="pandas").fit(X).transform(X)
    assert list(frame.columns) == list(names)
    np.testing.assert_allclose(frame.to_numpy(), est.transform(X), rtol=1e-7, atol=1e-9)


def test_default_score_is_the_explained_variance_of_the_span():
    """Orthonormal loadings (unconstrained EMSparsePCA = PCA) on the training data: the score is the
    sum of the leading eigenvalues times (n - 1) / n; and it is the same for any basis of the span."""
    rng = np.random.default_rng(6)
    X = rng.standard_normal((50, 5)) @ np.diag([4.0, 2.0, 1.0, 0.5, 0.1])
    est = EMSparsePCA(2, random_state=0).fit(X)
    vals = np.linalg.eigvalsh(np.cov(X.T))[::-1]
    assert est.score(X) == pytest.approx(vals[:2].sum() * 49 / 50, rel=1e-8)
    est.components_ = np.array([est.components_[0] + est.components_[1], est.components_[1]])  # same span
    assert est.score(X) == pytest.approx(vals[:2].sum() * 49 / 50, rel=1e-8)
    Y = rng.standard_normal((7, 5))  # held out, centred by the fitted mean: at most its total variance
    assert 0.0 <= est.score(Y) <= np.mean(np.sum((Y - est.mean_) ** 2, axis=1)) * (1 + 1e-12)


def test_grid_search_without_labels():
    from sklearn.model_selection import GridSearchCV

    X = np.random.default_rng(8).standard_normal((60, 6)) @ np.diag([3.0, 2.0, 1.0, 0.5, 0.3, 0.1])
    search = GridSearchCV(SpannogramPCA(n_samples=200, random_state=0), {"cardinality": [1, 3, 6]}, cv=3)
    search.fit(X)
    assert search.best_params_ == {"cardinality": 6}  # the unconstrained span explains the most
    assert np.all(np.diff(search.cv_results_["mean_test_score"]) > 0)


# --- issue 35: scikit-learn's parameter validation and column-name checks, which parametrize_with_checks
# does not run (scikit-learn runs them on its own estimators in its common tests)
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("cls", ESTIMATOR_CLASSES, ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("check", ["check_param_validation", "check_dataframe_column_names_consistency"])
def test_sklearn_param_and_column_checks(cls, check):
    from sklearn.utils import estimator_checks

    est = cls()
    if "random_state" in est.get_params():
        est.set_params(random_state=0)
    assert set(cls._parameter_constraints) == set(est.get_params())  # every parameter declared
    getattr(estimator_checks, check)(cls.__name__, est)


@pytest.mark.parametrize("cls", ESTIMATOR_CLASSES, ids=lambda cls: cls.__name__)
def test_numeric_parameters_refuse_booleans(cls):
    """``max_iter=True`` is an Integral to Python (and 1 to NumPy); the constraints refuse it, naming it."""
    from repro._base import IntInterval, RealInterval

    X = np.random.default_rng(0).standard_normal((30, 6))
    numeric = [
        name
        for name, options in cls._parameter_constraints.items()
        if any(isinstance(c, (IntInterval, RealInterval)) for c in options) and "boolean" not in options
    ]
    assert numeric
    for name in numeric:
        with pytest.raises(ValueError, match=f"The '{name}' parameter of {cls.__name__} must be"):
            cls(**{name: True}).fit(X)
