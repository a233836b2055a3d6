"""Input checks: clean values out, ValueErrors that name the argument."""

import warnings

import numpy as np
import pytest

from repro import baselines, metrics
from repro._validation import (
    ConvergenceWarning,
    check_array,
    check_cardinalities,
    check_cardinality,
    check_int,
    check_n_components,
    check_random_state,
    check_real,
    check_symmetric,
    check_vector,
    warn_not_converged,
)


def test_check_array_returns_c_contiguous_float64():
    X = np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    out = check_array(X)
    assert out.dtype == np.float64 and out.flags.c_contiguous
    np.testing.assert_array_equal(out, X)
    copy = check_array(out, copy=True)
    assert copy is not out


@pytest.mark.parametrize(
    "X, match",
    [
        (np.ones(3), "must be 2-D"),
        (np.ones((1, 2, 2)), "must be 2-D"),
        ([["a", "b"]], "numeric"),
        (np.array([[1.0, np.inf]]), r"infinite values \(rows 0, columns 1\)"),
        (np.array([[1.0, np.nan]]), r"NaN \(rows 0, columns 1\)"),
    ],
)
def test_check_array_errors(X, match):
    with pytest.raises(ValueError, match=match):
        check_array(X, "X")


def test_check_array_nan_allowed_and_shape_limits():
    X = np.array([[1.0, np.nan], [2.0, 3.0]])
    assert np.isnan(check_array(X, allow_nan=True)[0, 1])
    with pytest.raises(ValueError, match="Y has 2 sample"):
        check_array(X, "Y", allow_nan=True, min_samples=3)
    with pytest.raises(ValueError, match="None"):
        check_array(None)


def test_check_int_and_real():
    assert check_int(3.0, "k") == 3
    assert check_int(np.int64(4), "k", low=1, high=4) == 4
    for bad in (True, 2.5, "3"):
        with pytest.raises(ValueError, match="k must be an integer"):
            check_int(bad, "k")
    with pytest.raises(ValueError, match=r"k must be in \[1, 5\]; got 6"):
        check_int(6, "k", low=1, high=5)
    assert check_real(2, "alpha", low=0, low_inclusive=False) == 2.0
    with pytest.raises(ValueError, match="alpha must be in"):
        check_real(0.0, "alpha", low=0, low_inclusive=False)
    with pytest.raises(ValueError, match="finite"):
        check_real(np.nan, "alpha")


def test_check_cardinality_and_n_components():
    np.testing.assert_array_equal(check_cardinality(None, 5, 2), [5, 5])
    np.testing.assert_array_equal(check_cardinality(3, 5, 2), [3, 3])
    np.testing.assert_array_equal(check_cardinality([1, 4], 5, 2), [1, 4])
    with pytest.raises(ValueError, match=r"cardinality must be in \[1, 5\]"):
        check_cardinality(0, 5)
    with pytest.raises(ValueError, match=r"cardinality\[1\]"):
        check_cardinality([1, 9], 5, 2)
    with pytest.raises(ValueError, match="one per component"):
        check_cardinality([1, 2, 3], 5, 2)
    assert check_n_components(2, 10, 3) == 2
    with pytest.raises(ValueError, match="n_components"):
        check_n_components(4, 10, 3)


def test_check_cardinalities_path():
    np.testing.assert_array_equal(check_cardinalities(3, 5), [3])
    np.testing.assert_array_equal(check_cardinalities(range(1, 4), 5), [1, 2, 3])
    with pytest.raises(ValueError, match="empty"):
        check_cardinalities([], 5)
    with pytest.raises(ValueError, match=r"cardinalities must be in \[1, 5\]; got 6"):
        check_cardinalities([2, 6], 5)


def test_check_random_state():
    a = check_random_state(7).random(3)
    b = check_random_state(7).random(3)
    np.testing.assert_array_equal(a, b)
    g = np.random.default_rng(1)
    assert check_random_state(g) is g
    assert isinstance(check_random_state(np.random.RandomState(0)), np.random.Generator)
    for bad in ("seed", -1, 1.5, True):
        with pytest.raises(ValueError, match="random_state"):
            check_random_state(bad)


def test_check_symmetric_and_vector():
    C = check_symmetric([[1.0, 2.0], [2.0 + 1e-12, 1.0]])
    np.testing.assert_array_equal(C, C.T)
    with pytest.raises(ValueError, match="square"):
        check_symmetric(np.ones((2, 3)))
    with pytest.raises(ValueError, match="w must have length 2"):
        check_vector([1.0, 2.0, 3.0], "w", 2)
    with pytest.raises(ValueError, match="NaN"):
        check_vector([np.nan], "w")


def test_warn_not_converged_is_a_convergence_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_not_converged("EMPCA", 10, 1e-6)
    assert caught and issubclass(caught[0].category, ConvergenceWarning)
    assert "max_iter" in str(caught[0].message)
    assert caught[0].filename == __file__  # attributed to the caller outside the package


def test_convergence_warning_points_at_user_code_through_decorators():
    from repro import SensiblePCA

    X = np.random.default_rng(0).standard_normal((30, 6))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        SensiblePCA(n_components=2, max_iter=2, random_state=0).fit(X)
    conv = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert conv and conv[0].filename == __file__


# --------------------------------------------------------------------------- hostile input (issue 9)
# Each test below failed before the fix it covers. Convergence is not what they test.
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _data(n=30, p=6, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, p)) @ np.diag(np.linspace(5.0, 0.5, p))


def _estimators():
    from repro import EMPCA, NSPCA, EMSparsePCA, SensiblePCA
    from repro.baselines import GSPCA, SPCAZou

    return [
        EMPCA(2, random_state=0),
        SensiblePCA(2, random_state=0),
        EMSparsePCA(2, cardinality=3, random_state=0),
        NSPCA(2, alpha=1e3, random_state=0),
        GSPCA(2, cardinality=3),
        SPCAZou(2, cardinality=3),
    ]


ESTIMATOR_IDS = ["EMPCA", "SensiblePCA", "EMSparsePCA", "NSPCA", "GSPCA", "SPCAZou"]


@pytest.mark.parametrize("i", range(6), ids=ESTIMATOR_IDS)
def test_complex_input_is_refused_not_cut_to_its_real_part(i):
    X = _data()
    est = _estimators()[i]
    with pytest.raises(ValueError, match="Complex data not supported"):
        est.fit(X + 1j * X)
    with pytest.raises(ValueError, match="Complex data not supported"):
        est.fit(X.astype(complex))  # a zero imaginary part is refused too: the dtype says complex
    with pytest.raises(ValueError, match="Complex data not supported"):
        est.fit([[complex(v) for v in row] for row in X.tolist()])  # nested lists of Python complex
    est.fit(X)
    with pytest.raises(ValueError, match="Complex data not supported"):
        est.transform(X + 1j)


def test_complex_input_is_refused_by_the_functions():
    import repro
    from repro import baselines, metrics
    from repro.em_pca import subspace_sin
    from repro.linalg import Covariance

    X = _data()
    Xc = X + 1j
    W = np.eye(6)[:2]
    calls = {
        "em_pca": lambda: repro.em_pca(Xc, 1),
        "sensible_pca": lambda: repro.sensible_pca(Xc, 1),
        "ppca_closed_form": lambda: repro.ppca_closed_form(Xc, 1),
        "em_sparse_pca": lambda: repro.em_sparse_pca(Xc, 1, cardinality=2),
        "em_sparse_pca_path": lambda: repro.em_sparse_pca_path(Xc, [1, 2]),
        "nspca": lambda: repro.nspca(Xc, 1, alpha=1e3),
        "nspca_objective X": lambda: repro.nspca_objective(Xc, np.ones((6, 1)), alpha=1.0),
        "nspca_objective U": lambda: repro.nspca_objective(X, np.ones((6, 1)) + 1j, alpha=1.0),
        "leading_eigenpairs": lambda: repro.leading_eigenpairs(np.eye(3) + 1j, 1),
        "center": lambda: repro.center(Xc),
        "standardize": lambda: repro.standardize(Xc),
        "Covariance.from_data": lambda: Covariance.from_data(Xc),
        "Covariance.from_matrix": lambda: Covariance.from_matrix(np.eye(3) + 0j),
        "Covariance(data=)": lambda: Covariance(data=Xc),
        "spca_zou": lambda: baselines.spca_zou(Xc, 1, cardinality=2),
        "spca_zou_path": lambda: baselines.spca_zou_path(Xc, [1, 2]),
        "larsen_k": lambda: baselines.larsen_k(Xc, X[:, 0], 1e-6, 2),
        "larsen_k y": lambda: baselines.larsen_k(X, Xc[:, 0], 1e-6, 2),
        "gspca": lambda: baselines.gspca(Xc, 2),
        "gspca_path": lambda: baselines.gspca_path(Xc),
        "pathspca": lambda: baselines.pathspca(Xc, [1, 2]),
        "thresholding_path": lambda: baselines.thresholding_path(Xc, [1, 2]),
        "simple_thresholding": lambda: baselines.simple_thresholding(Xc, 2),
        "cesr_select": lambda: baselines.cesr_select(Xc, 2),
        "svd_entropy": lambda: baselines.svd_entropy(Xc),
        "explained_variance W": lambda: metrics.explained_variance(np.eye(6), W + 1j),
        "subspace_sin": lambda: subspace_sin(Xc[:, :2], X[:, :2]),
        "EMPCA init": lambda: repro.EMPCA(1, init=np.ones((1, 6)) + 1j).fit(X),
        "EMSparsePCA init": lambda: repro.EMSparsePCA(1, init=np.ones(6) + 1j).fit(X),
        "NSPCA init": lambda: repro.NSPCA(1, alpha=1.0, init=np.ones((6, 1)) + 1j).fit(X),
    }
    for name, call in calls.items():
        with pytest.raises(ValueError, match="Complex data not supported"):
            call()
            pytest.fail(f"{name} accepted complex input")


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_scipy_sparse_input_says_so_and_suggests_toarray(fmt):
    """The EM estimators and NSPCA fit a sparse matrix (tests/test_sparse.py, test_sparse_covariance.py);
    the baselines refuse it with the fix."""
    import scipy.sparse as sp

    X = sp.random(20, 6, density=0.5, format=fmt, random_state=0)
    for est in _estimators()[4:]:
        with pytest.raises(ValueError, match=r"scipy sparse matrix .*does not take.*X\.toarray\(\)"):
            est.fit(X)
    for est in _estimators()[:4]:
        assert est.fit(X).components_.shape == (2, 6)
    with pytest.raises(ValueError, match="sparse"):
        check_array(sp.csr_array(np.eye(3)))


def test_complex_pandas_input_is_refused_without_a_silent_cast():
    import pandas as pd

    X = _data()
    frames = [
        pd.DataFrame(X + 1j),
        pd.Series(X[:, 0] + 1j),
        pd.DataFrame({"a": X[:, 0], "b": X[:, 1] + 1j}),  # one complex column
        pd.DataFrame({"a": [1.0, 2.0], "b": [1 + 1j, 2.0]}, dtype=object),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's ComplexWarning is what a silent cast would raise
        for frame in frames:
            with pytest.raises(ValueError, match="Complex data not supported"):
                check_array(frame)


def test_pd_na_is_a_missing_value_for_empca_and_nan_elsewhere():
    import pandas as pd

    from repro import EMPCA, SensiblePCA

    X = _data()
    Xnan = X.copy()
    Xnan[[0, 3], [1, 4]] = np.nan
    ref = EMPCA(2, random_state=0).fit(Xnan)
    frames = {
        "Float64": pd.DataFrame(Xnan).astype("Float64"),  # nullable dtype: NaN becomes pd.NA
        "object": pd.DataFrame(Xnan).astype(object).where(~np.isnan(Xnan), pd.NA),
    }
    obj = Xnan.astype(object)
    obj[np.isnan(Xnan)] = pd.NA
    frames["ndarray of objects"] = obj
    for frame in frames.values():
        est = EMPCA(2, random_state=0).fit(frame)
        np.testing.assert_array_equal(est.components_, ref.components_)
        np.testing.assert_array_equal(est.mean_, ref.mean_)
        np.testing.assert_array_equal(est.transform(frame), ref.transform(Xnan))
        spca = SensiblePCA(2, random_state=0).fit(frame)  # NaN and pd.NA are missing entries there too
        np.testing.assert_array_equal(spca.C_, SensiblePCA(2, random_state=0).fit(Xnan).C_)
    with pytest.raises(ValueError, match=r"holds NaN \(rows 0"):
        check_array(frames["Float64"])


def test_non_numeric_input_is_a_type_error_and_a_value_error():
    from repro._validation import NonNumericError

    X = np.ones((4, 3), dtype=object)
    X[0, 0] = {"foo": "bar"}
    for exc in (TypeError, ValueError, NonNumericError):
        with pytest.raises(exc, match=r"argument must be a string.* number"):
            check_array(X)


@pytest.mark.parametrize("K", [0, -3, 99, 2.5, True])
def test_larsen_k_refuses_a_cardinality_outside_1_to_n_features(K):
    from repro.baselines import larsen_k

    X = _data()
    with pytest.raises(ValueError, match=r"\bK\b.* must be"):  # the constraint or the bound by n_features
        larsen_k(X, X[:, 0], 1e-6, K)


def test_larsen_k_checks_its_other_arguments_and_still_answers():
    from repro.baselines import larsen_k

    X = _data()
    with pytest.raises(ValueError, match="y must have length 30"):
        larsen_k(X, X[:5, 0], 1e-6, 2)
    with pytest.raises(ValueError, match="ridge"):
        larsen_k(X, X[:, 0], -1.0, 2)
    with pytest.raises(ValueError, match="max_steps"):
        larsen_k(X, X[:, 0], 1e-6, 2, max_steps=0)
    b, _ = larsen_k(X, X[:, 0], 1e-6, 2)
    assert np.count_nonzero(b) == 2
    b_all, _ = larsen_k(X, X[:, 0], 1e-6, 6)  # K = n_features: the end of the path, the ridge solution
    np.testing.assert_allclose(b_all, np.linalg.solve(X.T @ X + 1e-6 * np.eye(6), X.T @ X[:, 0]), atol=1e-8)


def test_covariance_built_directly_is_validated():
    from repro.linalg import Covariance

    bad = {
        "data holds NaN": dict(data=np.array([[1.0, np.nan], [0.0, 1.0]])),
        "data must be 2-D": dict(data=np.ones(3)),
        "matrix must be symmetric": dict(matrix=np.array([[1.0, 2.0], [0.0, 1.0]])),
        "matrix must be a square": dict(matrix=np.ones(3)),
        "matrix holds NaN": dict(matrix=np.array([[1.0, np.inf], [np.inf, 1.0]])),
        "exactly one of": dict(),
        "must be a numeric": dict(data=[["a", "b"]]),
    }
    for match, kwargs in bad.items():
        with pytest.raises(ValueError, match=match):
            Covariance(**kwargs)
    A = _data() / np.sqrt(29)
    cov = Covariance(data=A)  # a valid factor is used as is (no copy)
    assert cov.data is A
    vals, _ = cov.eigh(2)
    np.testing.assert_allclose(vals, np.linalg.eigvalsh(A.T @ A)[::-1][:2])
    assert Covariance(data=np.array([[1e308, 1e308], [1e308, 1e308]])).n_features == 2  # sum overflows


def test_history_buffers_do_not_scale_with_max_iter():
    from repro import NSPCA, EMSparsePCA

    X = _data()
    est = EMSparsePCA(1, cardinality=3, max_iter=10**13).fit(X)  # was a 73 TiB allocation
    assert len(est.history_[0]) == est.n_iter_[0] + 1
    nsp = NSPCA(1, alpha=1e3, random_state=0, max_iter=10**13).fit(X)
    assert nsp.objective_.shape == (nsp.n_iter_ + 1,) and nsp.converged_
    assert NSPCA(1, alpha=1e3, random_state=0, max_iter=10**20).fit(X).converged_  # beyond int64


def test_growing_history_buffers_keep_every_entry():
    from repro import EMSparsePCA, nspca

    rng = np.random.default_rng(3)
    Q = np.linalg.qr(rng.standard_normal((6, 6)))[0]
    X = rng.standard_normal((40, 6))
    X = (X - X.mean(axis=0)) @ np.linalg.inv(np.linalg.cholesky(np.cov(X.T)).T)  # white
    X = X @ np.diag([1.0, 0.9999, 0.5, 0.4, 0.3, 0.2]) @ Q.T  # lambda_2 / lambda_1 = 0.9998: slow EM
    runs = [EMSparsePCA(1, max_iter=m, tol=1e-14, init=np.ones(6)).fit(X) for m in (1500, 1100)]
    long, short = (r.history_[0] for r in runs)
    assert runs[0].n_iter_[0] == 1500 and long.size == 1501 and short.size == 1101
    np.testing.assert_array_equal(long[:1100], short[:1100])
    assert np.all(np.diff(long) <= 1e-12 * long[0])  # no constraint: the error never increases (Prop. 3.2)
    a = nspca(X, 2, alpha=1e3, tol=0.0, max_iter=2500, random_state=1)
    b = nspca(X, 2, alpha=1e3, tol=0.0, max_iter=700, random_state=1)
    assert a.objective.size == a.n_iter + 1
    np.testing.assert_array_equal(a.objective[: b.objective.size], b.objective)
    np.testing.assert_array_equal(a.l0[: b.l0.size], b.l0)


def test_inverse_transform_checks_the_number_of_components():
    from repro import EMPCA, SensiblePCA

    X = _data()
    for est in (EMPCA(2, random_state=0).fit(X), SensiblePCA(2, random_state=0).fit(X)):
        with pytest.raises(ValueError, match=r"Z has 5 columns but the model has 2 components"):
            est.inverse_transform(np.ones((3, 5)))
        Z = est.transform(X[:4])
        assert est.inverse_transform(Z).shape == (4, 6)


def test_sklearn_style_messages_for_shape_errors():
    from repro import EMPCA

    X = _data()
    est = EMPCA(2, random_state=0).fit(X)
    with pytest.raises(ValueError, match="X has 3 features, but EMPCA is expecting 6 features as input"):
        est.transform(X[:, :3])
    with pytest.raises(ValueError, match="Reshape your data"):
        est.transform(X[0])
    with pytest.raises(ValueError, match=r"0 feature\(s\) \(shape=\(30, 0\)\) while a minimum of 1"):
        check_array(X[:, :0])
    with pytest.raises(ValueError, match="1 sample"):
        EMPCA(1).fit(X[:1])


# Scale: every estimator but NSPCA is scale-equivariant (loadings unchanged, variances times c^2).
_EQUIVARIANT = [0, 1, 2, 4, 5]


@pytest.mark.parametrize("i", _EQUIVARIANT, ids=[ESTIMATOR_IDS[i] for i in _EQUIVARIANT])
@pytest.mark.parametrize("c", [1e-150, 2.0**-500, 1e150])
def test_badly_scaled_data_give_the_scaled_answer(i, c):
    from repro.baselines import SPCAZou

    X = _data()
    ref = _estimators()[i].fit(X)
    if isinstance(ref, SPCAZou) and c < 1:
        # the ridge is absolute: on X * c it is ridge / c^2 relative to X (here inf, the soft-threshold limit)
        ref = SPCAZou(2, cardinality=3, ridge=np.inf).fit(X)
    est = _estimators()[i].fit(X * c)
    np.testing.assert_allclose(est.components_, ref.components_, atol=1e-6)
    np.testing.assert_allclose(est.explained_variance_, ref.explained_variance_ * c * c, rtol=1e-6)
    np.testing.assert_allclose(est.mean_, ref.mean_ * c, rtol=1e-6, atol=1e-6 * c)
    latent = 1.0 if i == 1 else c  # SensiblePCA's posterior means are scale-free; projections scale
    np.testing.assert_allclose(est.transform(X * c), ref.transform(X) * latent, rtol=1e-5, atol=1e-5 * latent)


def test_power_of_two_rescaling_is_exact_for_the_em_results():
    from repro import em_pca, sensible_pca

    X = _data()
    X = X / 2.0 ** np.round(np.log2(np.abs(X).max()))  # so that X * c is fitted as exactly X
    c = 2.0**-500
    init = np.ones((2, 6)) + np.eye(2, 6)
    a = em_pca(X, 2, init=init, tol=1e-10, random_state=0)
    b = em_pca(X * c, 2, init=init, tol=1e-10, random_state=0)
    np.testing.assert_array_equal(b.components, a.components)
    np.testing.assert_array_equal(b.explained_variance, a.explained_variance * c * c)
    np.testing.assert_array_equal(b.history["eigenvalues"], a.history["eigenvalues"] * c * c)
    np.testing.assert_array_equal(
        b.history["reconstruction_error"], a.history["reconstruction_error"] * c * c
    )
    assert b.total_variance == a.total_variance * c * c and b.n_iter == a.n_iter
    s, t = sensible_pca(X, 2, init=init, max_iter=50), sensible_pca(X * c, 2, init=init, max_iter=50)
    np.testing.assert_array_equal(t.C, s.C * c)
    assert t.noise_variance == s.noise_variance * c * c
    shift = 30 * 6 * np.log(c)  # the density of X * c is c^-p times that of X, per sample
    np.testing.assert_allclose(t.log_likelihood, s.log_likelihood - shift, rtol=1e-13)
    np.testing.assert_allclose(t.history["log_likelihood"], s.history["log_likelihood"] - shift, rtol=1e-13)


@pytest.mark.parametrize("i", _EQUIVARIANT, ids=[ESTIMATOR_IDS[i] for i in _EQUIVARIANT])
@pytest.mark.parametrize("c", [1e-160, 2.0**-700])
def test_data_whose_variances_underflow_are_refused_with_the_reason(i, c):
    # variances near 1e-320 would be subnormal (3 digits) or 0; the loadings alone are not an answer
    with pytest.raises(ValueError, match=r"too small for float64.*underflow below the smallest normal"):
        _estimators()[i].fit(_data() * c)


@pytest.mark.parametrize("i", _EQUIVARIANT, ids=[ESTIMATOR_IDS[i] for i in _EQUIVARIANT])
def test_data_whose_variances_overflow_are_refused_with_the_reason(i):
    with pytest.raises(ValueError, match=r"too large for float64.*overflow float64"):
        _estimators()[i].fit(_data() * 1e160)


def test_nspca_is_not_scale_invariant_and_refuses_an_overflowing_scatter_matrix():
    from repro import NSPCA

    with pytest.raises(ValueError, match=r"scatter matrix Xc'Xc overflows.*alpha and beta by c\^2"):
        NSPCA(2, alpha=1e3, random_state=0).fit(_data() * 1e160)


@pytest.mark.parametrize("i", _EQUIVARIANT, ids=[ESTIMATOR_IDS[i] for i in _EQUIVARIANT])
@pytest.mark.parametrize("X", [np.zeros((10, 5)), np.full((10, 5), 3.0)], ids=["zeros", "constant"])
def test_data_without_variance_are_refused(i, X):
    with pytest.raises(ValueError, match="no variance"):
        _estimators()[i].set_params(n_components=1).fit(X)


@pytest.mark.parametrize("c", [2.0**400, 2.0**-400], ids=["1e120", "1e-120"])  # powers of two: exact
@pytest.mark.parametrize("ridge", [1e-6, np.inf])
def test_spca_zou_on_a_covariance_of_badly_scaled_data(ridge, c):
    """A Covariance backed by data near 1e120 or 1e-120 is fitted as the data / s with ridge / s^2, the
    same problem (the soft-thresholding limit failed in an SVD of overflowed products near 1e120, and
    products underflowed near 1e-120): the loadings of the unscaled data, the variances times c^2."""
    from repro.baselines import spca_zou, spca_zou_path
    from repro.linalg import Covariance

    X = _data()
    big, ref = Covariance.from_data(X * c), Covariance.from_data(X)
    got, want = spca_zou_path(big, [2, 3], ridge=ridge * c**2), spca_zou_path(ref, [2, 3], ridge=ridge)
    np.testing.assert_allclose(got.components, want.components, atol=1e-12)
    np.testing.assert_allclose(got.variance / c**2, want.variance, rtol=1e-12)
    W, v = spca_zou(big, 2, cardinality=3, ridge=ridge * c**2)
    W0, v0 = spca_zou(ref, 2, cardinality=3, ridge=ridge)
    np.testing.assert_allclose(W, W0, atol=1e-12)
    np.testing.assert_allclose(v / c**2, v0, rtol=1e-12)


def test_spca_zou_normalizes_the_loadings_of_a_huge_ridge():
    from repro.baselines import SPCAZou

    X = _data()
    ref = SPCAZou(2, cardinality=3, ridge=np.inf).fit(X)
    est = SPCAZou(2, cardinality=3, ridge=1e293).fit(X)  # coefficients ~1e-291: their squares underflow
    np.testing.assert_allclose(np.linalg.norm(est.components_, axis=1), 1.0)
    np.testing.assert_allclose(est.components_, ref.components_, atol=1e-12)


def test_path_functions_rescale_badly_scaled_data_and_refuse_what_float64_cannot_hold():
    import repro
    from repro import baselines

    X = _data()
    paths = {
        "pathspca": lambda Y: baselines.pathspca(Y, [1, 3]),
        "thresholding_path": lambda Y: baselines.thresholding_path(Y, [1, 3]),
        "em_sparse_pca_path": lambda Y: repro.em_sparse_pca_path(Y, [1, 3], random_state=0),
        "spca_zou_path": lambda Y: baselines.spca_zou_path(Y, [1, 3], ridge=np.inf),
        "gspca_path": lambda Y: baselines.gspca_path(Y, 3),
    }
    for name, f in paths.items():
        ref = f(X)
        for c in (1e-150, 1e150):
            got = f(X * c)
            np.testing.assert_allclose(got.variance, ref.variance * c * c, rtol=1e-6, err_msg=name)
            np.testing.assert_allclose(got.components, ref.components, atol=1e-6, err_msg=name)
        with pytest.raises(ValueError, match="too small for float64"):
            f(X * 1e-160)
        with pytest.raises(ValueError, match="too large for float64"):
            f(X * 1e160)
        with pytest.raises(ValueError, match="no variance"):
            f(np.zeros((10, 6)))
    # the SVD entropy is scale-free: the same value at any scale; 0/0 for a zero matrix is refused
    e = baselines.svd_entropy(X)
    for c in (1e-160, 1e160):
        assert baselines.svd_entropy(X * c) == pytest.approx(e, rel=1e-12)
        np.testing.assert_array_equal(baselines.cesr_select(X * c, 3), baselines.cesr_select(X, 3))
    with pytest.raises(ValueError, match="all zeros"):
        baselines.svd_entropy(np.zeros((5, 4)))


def _public_functions():
    import inspect

    for module in (baselines, metrics):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                yield f"{module.__name__}.{name}", obj


@pytest.mark.parametrize("name, func", list(_public_functions()), ids=[n for n, _ in _public_functions()])
def test_every_baseline_and_metric_validates_each_parameter(name, func):
    """``validate_params`` on every public function of ``repro.baselines`` and ``repro.metrics``, with a
    constraint for each parameter of its signature (scikit-learn skips a parameter without one)."""
    import inspect

    constraints = getattr(func, "_skl_parameter_constraints", None)
    assert constraints is not None, f"{name} has no validate_params"
    params = [
        p.name
        for p in inspect.signature(func).parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    assert sorted(constraints) == sorted(params), name


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda X: baselines.gspca(X, 2, direction="sideways"), "direction"),
        (lambda X: baselines.gspca(X, 2, deflation="hotelling"), "deflation"),
        (lambda X: baselines.pathspca(X, start=-1), "start"),
        (lambda X: baselines.cesr_select(X, 0), "n_features"),
        (lambda X: baselines.spca_zou_path(X, [2], tol=0.0), "tol"),
        (lambda X: baselines.sspca_fit(X, 2, np.inf), "alpha"),
        (lambda X: baselines.sspca_path(X, 2, 0.5), "alphas"),
        (lambda X: baselines.group_soft_threshold(X, -1.0), "t"),
        (lambda X: metrics.fscore_selection([0], [0], n_features=-1), "n_features"),
        (lambda X: metrics.overlap(None), "W"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_a_bad_parameter_is_named_by_the_constraints(call, argument):
    from sklearn.utils._param_validation import InvalidParameterError

    with pytest.raises(InvalidParameterError, match=rf"'{argument}' parameter of \w+ must be"):
        call(_data())


def test_sspca_checks_the_shapes_of_its_factors():
    from repro.baselines import sspca_fit, sspca_objective

    X = _data()
    U, V = np.ones((30, 2)), np.ones((6, 2))
    with pytest.raises(ValueError, match=r"U has 29 rows but X has 30 samples"):
        sspca_objective(X, U[:29], V, 1.0)
    with pytest.raises(ValueError, match=r"V has shape \(5, 2\) but X has 6 features"):
        sspca_objective(X, U, V[:5], 1.0)
    with pytest.raises(ValueError, match="start must be a pair"):
        sspca_fit(X, 2, 1.0, start=(U,))
    with pytest.raises(ValueError, match="start has 2 components; n_components is 1"):
        sspca_fit(X, 1, 1.0, start=(U, V))
    assert sspca_objective(X, U, V, 1.0) == pytest.approx(
        0.5 * float(np.sum((X - U @ V.T) ** 2)) + np.sqrt(2.0) * 6
    )


@pytest.mark.parametrize("p", [5, 40, 300])
def test_the_psd_rule_is_decided_at_its_tolerance(p):
    """``check_psd`` accepts a smallest eigenvalue of ``-tol / 2`` and refuses ``-2 tol``
    (``tol = PSD_RTOL max|diag| p``), whichever of its two routes (Cholesky, eigenvalue) decides."""
    from repro._validation import PSD_RTOL, check_psd

    Q, _ = np.linalg.qr(np.random.default_rng(p).standard_normal((p, p)))
    lam = np.linspace(1.0, 2.0, p)
    C0 = (Q * lam) @ Q.T
    tol = PSD_RTOL * np.max(np.abs(np.diag(C0))) * p
    for factor, ok in ((-0.5, True), (-2.0, False), (0.0, True)):
        lam[0] = factor * tol
        C = (Q * lam) @ Q.T
        C = 0.5 * (C + C.T)
        tol_c = PSD_RTOL * np.max(np.abs(np.diag(C))) * p  # the diagonal moved a little with lam[0]
        assert abs(tol_c - tol) < 0.1 * tol
        if ok:
            check_psd(C, "C")
        else:
            with pytest.raises(ValueError, match="not positive semi-definite"):
                check_psd(C, "C")
