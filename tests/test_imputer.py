"""PPCAImputer: the posterior of the missing entries under sensible PCA against NumPy closed forms and brute
force Gaussian conditioning, the rows and columns at the edges, the EM's stopping rule, the draws, the
errors, and the scikit-learn composition (Pipeline, ColumnTransformer, DataFrame output)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone

import repro
from repro import PPCAImputer, SensiblePCA, ppca_closed_form, ppca_impute
from repro.em_pca import imputer as imputer_module


def _data(n=80, p=6, k=2, noise=0.3, seed=0, frac=0.25):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, k)) @ rng.standard_normal((k, p)) + noise * rng.standard_normal((n, p)) + 2.0
    hidden = rng.random(X.shape) < frac
    return X, np.where(hidden, np.nan, X), hidden


@pytest.fixture(scope="module")
def fitted():
    X, Xm, hidden = _data()
    return PPCAImputer(2, random_state=0).fit(Xm), X, Xm, hidden


def _latent_posterior(C, eps, mu, x):
    """The closed form in the latent space, row by row in plain NumPy: x | y_O ~ N(z, eps M_O^-1)."""
    miss = np.isnan(x)
    Co, Cm = C[~miss], C[miss]
    M = Co.T @ Co + eps * np.eye(C.shape[1])
    z = np.linalg.solve(M, Co.T @ (x[~miss] - mu[~miss]))
    return np.flatnonzero(miss), mu[miss] + Cm @ z, eps * (np.eye(miss.sum()) + Cm @ np.linalg.solve(M, Cm.T))


def _conditioned(Sigma, mu, x):
    """Brute force: the Gaussian N(mu, Sigma) conditioned on the observed coordinates of x."""
    m = np.isnan(x)
    So = Sigma[np.ix_(~m, ~m)]
    Smo = Sigma[np.ix_(m, ~m)]
    mean = mu[m] + Smo @ np.linalg.solve(So, x[~m] - mu[~m])
    return mean, Sigma[np.ix_(m, m)] - Smo @ np.linalg.solve(So, Smo.T)


def test_posterior_equals_the_latent_closed_form_and_brute_force_conditioning(fitted):
    imp, _, Xm, hidden = fitted
    C, eps, mu = imp.C_, imp.noise_variance_, imp.mean_
    Sigma = imp.model_.get_covariance()
    np.testing.assert_allclose(Sigma, C @ C.T + eps * np.eye(C.shape[0]), rtol=1e-14)
    filled, std = imp.transform(Xm), imp.posterior_std(Xm)
    rows = np.flatnonzero(hidden.any(axis=1))
    assert rows.size > 40
    for i in rows:
        miss, mean, cov = _latent_posterior(C, eps, mu, Xm[i])
        bmean, bcov = _conditioned(Sigma, mu, Xm[i])
        np.testing.assert_allclose(mean, bmean, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(cov, bcov, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(filled[i, miss], mean, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(std[i, miss], np.sqrt(np.diag(cov)), rtol=1e-12)
        m2, mean2, cov2 = imp.conditional(Xm[i])
        np.testing.assert_array_equal(m2, miss)
        np.testing.assert_allclose(mean2, mean, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(cov2, cov, rtol=1e-11, atol=1e-14)
    assert np.all(std[hidden] >= np.sqrt(eps) * (1 - 1e-14))  # at least the noise


def test_observed_entries_and_complete_rows_are_returned_unchanged(fitted):
    imp, X, Xm, hidden = fitted
    filled, std = imp.transform(Xm), imp.posterior_std(Xm)
    np.testing.assert_array_equal(filled[~hidden], X[~hidden])  # bit for bit
    assert np.all(std[~hidden] == 0.0)
    complete = ~hidden.any(axis=1)
    assert complete.sum() > 5
    np.testing.assert_array_equal(filled[complete], X[complete])
    np.testing.assert_array_equal(imp.transform(X), X)  # nothing missing: the input itself (a copy)
    assert imp.transform(X) is not X
    before = Xm.copy()
    imp.transform(Xm)
    np.testing.assert_array_equal(np.isnan(Xm), np.isnan(before))  # the input is not filled in place


def test_a_row_with_everything_missing_gets_the_mean_and_the_marginal_std(fitted):
    imp = fitted[0]
    empty = np.full((2, imp.n_features_in_), np.nan)
    np.testing.assert_allclose(imp.transform(empty), np.tile(imp.mean_, (2, 1)), rtol=1e-15)
    marginal = np.sqrt(np.diag(imp.model_.get_covariance()))
    np.testing.assert_allclose(imp.posterior_std(empty), np.tile(marginal, (2, 1)), rtol=1e-12)


def test_rows_missing_everything_at_fit_change_no_parameter():
    _, Xm, _ = _data()
    padded = np.vstack([Xm[:30], np.full((3, Xm.shape[1]), np.nan), Xm[30:]])
    a = PPCAImputer(2, random_state=0).fit(Xm)
    b = PPCAImputer(2, random_state=0).fit(padded)
    np.testing.assert_allclose(b.C_, a.C_, rtol=1e-12, atol=1e-14)
    assert b.noise_variance_ == pytest.approx(a.noise_variance_, rel=1e-12)
    np.testing.assert_allclose(b.transform(padded)[30:33], np.tile(a.mean_, (3, 1)), rtol=1e-12)


def test_complete_training_data_give_the_closed_form_ml_model():
    X, _, _ = _data(frac=0.0)
    imp = PPCAImputer(2, random_state=0).fit(X)
    C, eps, mean = ppca_closed_form(X, 2)
    np.testing.assert_allclose(imp.C_ @ imp.C_.T, C @ C.T, rtol=1e-6, atol=1e-8)
    assert imp.noise_variance_ == pytest.approx(eps, rel=1e-7)
    np.testing.assert_allclose(imp.mean_, mean, rtol=1e-14)


def test_the_chunked_em_is_the_uninterrupted_em():
    """Run CHECK_EVERY iterations at a time, restarted at the current mean, the EM takes the same steps as
    SensiblePCA's loop run through (tol=0: exactly max_iter iterations in both)."""
    _, Xm, _ = _data()
    imp = PPCAImputer(2, random_state=0, tol=0.0, max_iter=35)
    with pytest.warns(repro.ConvergenceWarning, match="PPCAImputer did not converge in 35"):
        imp.fit(Xm)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", repro.ConvergenceWarning)
        ref = SensiblePCA(2, random_state=0, tol=0.0, max_iter=35).fit(Xm)
    assert imp.n_iter_ == ref.n_iter_ == 35
    np.testing.assert_allclose(imp.C_ @ imp.C_.T, ref.C_ @ ref.C_.T, rtol=1e-10, atol=1e-13)
    assert imp.noise_variance_ == pytest.approx(ref.noise_variance_, rel=1e-10)
    np.testing.assert_allclose(imp.mean_, ref.mean_, rtol=1e-12)
    ll, ll_ref = imp.model_.history_["log_likelihood"], ref.history_["log_likelihood"]
    np.testing.assert_allclose(ll, ll_ref, rtol=1e-11)


def test_the_stopping_rule_watches_the_fills():
    """A tighter tol runs longer and moves the fills by less than the looser tol allowed (in units of the
    posterior standard deviation), and the fit stops well before max_iter."""
    _, Xm, hidden = _data(n=200, noise=0.5)
    loose = PPCAImputer(2, random_state=0, tol=1e-1).fit(Xm)
    tight = PPCAImputer(2, random_state=0, tol=1e-3).fit(Xm)
    assert loose.converged_ and tight.converged_
    assert loose.n_iter_ < tight.n_iter_ < 1000
    assert loose.n_iter_ % imputer_module.CHECK_EVERY == 0
    moved = loose.transform(Xm)[hidden] - tight.transform(Xm)[hidden]
    sd = tight.posterior_std(Xm)[hidden]
    assert np.sqrt(np.mean(moved**2) / np.mean(sd**2)) < 1e-1


def test_intervals_cover_draws_of_the_fitted_model_at_their_rate():
    """Data drawn from the fitted model itself, entries hidden at random: the 90% intervals cover
    90% of the hidden entries up to the binomial error (plug-in parameters exact here)."""
    _, Xm, _ = _data(n=300)
    imp = PPCAImputer(2, random_state=0).fit(Xm)
    rng = np.random.default_rng(1)
    Y = imp.model_.sample(4000, random_state=2)
    hidden = rng.random(Y.shape) < 0.4
    Ym = np.where(hidden, np.nan, Y)
    z = np.abs(imp.transform(Ym) - Y)[hidden] / imp.posterior_std(Ym)[hidden]
    n = hidden.sum()
    for level, q in ((0.90, 1.6448536269514722), (0.95, 1.959963984540054)):
        assert abs(np.mean(z < q) - level) < 4 * np.sqrt(level * (1 - level) / n)


def test_multiple_imputations_are_draws_of_the_conditional_gaussian(fitted):
    imp, X, Xm, hidden = fitted
    draws = imp.sample(Xm, n_draws=3, random_state=0)
    assert draws.shape == (3, *X.shape)
    for d in draws:
        np.testing.assert_array_equal(d[~hidden], X[~hidden])
        assert np.isfinite(d).all()
    np.testing.assert_array_equal(draws, imp.sample(Xm, n_draws=3, random_state=0))
    assert not np.array_equal(draws, imp.sample(Xm, n_draws=3, random_state=1))
    # one row repeated: the draws' mean and covariance against the conditional Gaussian (5 standard errors)
    i = int(np.flatnonzero(hidden.sum(axis=1) == 2)[0])
    miss, mean, cov = imp.conditional(Xm[i])
    many = imp.sample(np.tile(Xm[i], (4000, 1)), n_draws=5, random_state=3)[:, :, miss].reshape(-1, 2)
    n = many.shape[0]
    se = np.sqrt(np.diag(cov) / n)
    assert np.all(np.abs(many.mean(axis=0) - mean) < 5 * se)
    emp = np.cov(many, rowvar=False)
    se_cov = np.sqrt((cov**2 + np.outer(np.diag(cov), np.diag(cov))) / n)  # Gaussian: Var s_ab
    assert np.all(np.abs(emp - cov) < 5 * se_cov)


def test_the_function_form_is_fit_then_fill(fitted):
    imp, _, Xm, _ = fitted
    filled, std = ppca_impute(Xm, 2, random_state=0)
    np.testing.assert_array_equal(filled, imp.transform(Xm))
    np.testing.assert_array_equal(std, imp.posterior_std(Xm))


def test_badly_scaled_data_impute_as_the_scaled_data():
    _, Xm, _ = _data()
    a = PPCAImputer(2, random_state=0).fit(Xm)
    for s in (2.0**-450, 2.0**450):
        b = PPCAImputer(2, random_state=0).fit(Xm * s)
        np.testing.assert_allclose(b.transform(Xm * s) / s, a.transform(Xm), rtol=1e-9)
        np.testing.assert_allclose(b.posterior_std(Xm * s) / s, a.posterior_std(Xm), rtol=1e-9)


# --------------------------------------------------------------------------- bad input
def test_a_column_missing_everywhere_at_fit_is_refused_naming_it():
    _, Xm, _ = _data()
    Xm[:, 3] = np.nan
    with pytest.raises(ValueError, match=r"column\(s\) 3 with every entry missing at fit"):
        PPCAImputer(2).fit(Xm)
    with pytest.raises(ValueError, match=r"column\(s\) 3 with every entry missing at fit"):
        ppca_impute(Xm, 2)


def test_other_columns_at_transform_are_refused(fitted):
    import pandas as pd

    imp, _, Xm, _ = fitted
    with pytest.raises(ValueError, match="features"):
        imp.transform(Xm[:, :5])
    with pytest.raises(ValueError, match="features"):
        imp.sample(np.hstack([Xm, Xm[:, :1]]))
    frame = pd.DataFrame(Xm, columns=list("abcdef"))
    named = PPCAImputer(2, random_state=0).fit(frame)
    with pytest.raises(ValueError, match="feature names"):
        named.transform(frame[list("bacdef")])
    with pytest.raises(ValueError, match="one row"):
        imp.conditional(Xm[:2])


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (np.array([[1.0, np.inf], [2.0, 3.0], [1.0, 0.5]]), "infinite"),
        (np.ones((5, 1)), "feature"),
        (np.array([[1.0, 2.0, 3.0]]), "sample"),
        (np.zeros((6, 3)), "variance"),
    ],
    ids=["inf", "one feature", "one sample", "no variance"],
)
def test_bad_data_get_a_clear_error(data, match):
    with pytest.raises(ValueError, match=match):
        PPCAImputer(1).fit(data)


def test_bad_parameters_name_themselves(fitted):
    imp, _, Xm, _ = fitted
    with pytest.raises(ValueError, match="n_components"):
        PPCAImputer(6).fit(Xm)  # k <= n_features - 1
    with pytest.raises(ValueError, match="'tol' parameter of PPCAImputer"):
        PPCAImputer(tol=-1.0).fit(Xm)
    with pytest.raises(ValueError, match="n_draws"):
        imp.sample(Xm, n_draws=0)
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        PPCAImputer().transform(Xm)


# --------------------------------------------------------------------------- scikit-learn composition
def test_inside_pipeline_and_column_transformer():
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline

    X, Xm, _ = _data(n=120)
    y = X[:, 0] - X[:, 1]
    pipe = make_pipeline(PPCAImputer(2, random_state=0), LinearRegression()).fit(Xm, y)
    assert pipe.score(Xm, y) > 0.5
    frame = pd.DataFrame(Xm, columns=[f"g{i}" for i in range(6)])
    frame["label"] = ["a", "b"] * 60
    ct = ColumnTransformer(
        [("ppca", PPCAImputer(2, random_state=0), [f"g{i}" for i in range(6)])], remainder="passthrough"
    ).set_output(transform="pandas")
    out = ct.fit_transform(frame)
    assert list(out.columns) == [f"ppca__g{i}" for i in range(6)] + ["remainder__label"]
    assert not out.drop(columns="remainder__label").isna().any().any()
    imp = clone(PPCAImputer(2, random_state=0)).fit(frame.drop(columns="label"))
    np.testing.assert_array_equal(imp.get_feature_names_out(), [f"g{i}" for i in range(6)])
    np.testing.assert_array_equal(PPCAImputer(2).fit(Xm).get_feature_names_out(), [f"x{i}" for i in range(6)])


def test_the_user_guide_example_runs_as_printed():
    """docs/user_guide/imputation.rst: its example, run by doctest, prints what the page shows."""
    import doctest
    from pathlib import Path

    page = Path(__file__).resolve().parents[1] / "docs" / "user_guide" / "imputation.rst"
    result = doctest.testfile(str(page), module_relative=False, verbose=False)
    assert result.attempted >= 10 and result.failed == 0
