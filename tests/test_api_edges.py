"""The edges of the public API: flags that are booleans, masked arrays, reconstructions, one argument
order in the metrics, errors that name the user's input, and valid input that must not crash."""

import warnings

import numpy as np
import pytest
import scipy.sparse
from scipy.stats import ortho_group

import repro
from repro import (
    EMPCA,
    Covariance,
    EMSparsePCA,
    OptimalSparsePCA,
    SensiblePCA,
    baselines,
    em_sparse_pca,
    em_sparse_pca_path,
    metrics,
    optimal_sparse_pca,
)
from repro.linalg import _top_eigh


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _data(n=60, p=8, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, p)) @ np.diag(np.linspace(3.0, 0.5, p))


# --------------------------------------------------------------------------- booleans are booleans
X8 = _data()
V8 = np.linspace(1.0, 0.2, 8)

FLAG_CALLS = {
    "optimal_sparse_pca nonneg": lambda v: optimal_sparse_pca(X8, 3, nonneg=v),
    "optimal_sparse_pca precomputed": lambda v: optimal_sparse_pca(
        np.cov(X8, rowvar=False), 3, precomputed=v
    ),
    "optimal_sparse_pca root_em": lambda v: optimal_sparse_pca(X8, 3, root_em=v),
    "optimal_sparse_pca root_spannogram": lambda v: optimal_sparse_pca(X8, 3, root_spannogram=v),
    "optimal_sparse_pca verbose": lambda v: optimal_sparse_pca(X8, 3, verbose=v),
    "em_sparse_pca on a Covariance nonneg": lambda v: em_sparse_pca(
        Covariance.from_data(X8), 1, cardinality=3, nonneg=v
    ),
    "em_sparse_pca_path nonneg": lambda v: em_sparse_pca_path(X8, [2, 3], nonneg=v),
    "em_sparse_pca_path renormalize": lambda v: em_sparse_pca_path(X8, [2, 3], renormalize=v),
    "certified_fraction nonneg": lambda v: metrics.certified_fraction(
        X8, np.eye(8)[:1], 1, nonneg=v, n_samples=50
    ),
    "rank1_solver nonneg": lambda v: repro.rank1_solver(V8, 3, nonneg=v),
    "spannogram_exact nonneg": lambda v: repro.spannogram_exact(X8, 3, nonneg=v),
    "spannogram_path nonneg": lambda v: repro.spannogram_path(X8, [2, 3], nonneg=v, n_samples=50),
    "spannogram_bound nonneg": lambda v: repro.spannogram_bound(X8, 3, nonneg=v, n_samples=50),
    "spannogram_bound spectral_only": lambda v: repro.spannogram_bound(X8, 3, spectral_only=v, n_samples=50),
    "nspca precomputed": lambda v: repro.nspca(X8, 2, alpha=1.0, precomputed=v, random_state=0, max_iter=5),
    "thresholding_path renormalize": lambda v: baselines.thresholding_path(X8, [2, 3], renormalize=v),
    "simple_thresholding renormalize": lambda v: baselines.simple_thresholding(X8, 3, renormalize=v),
    "gspca precomputed": lambda v: baselines.gspca(X8, 3, precomputed=v),
    "spca_zou_path renormalize": lambda v: baselines.spca_zou_path(X8, [2, 3], renormalize=v),
    "spca_zou_path warm_start": lambda v: baselines.spca_zou_path(X8, [2, 3], warm_start=v),
    "Covariance.from_data center": lambda v: Covariance.from_data(X8, center=v),
    "log_evidence return_params": lambda v: repro.log_evidence(X8, [0, 1], n_components=1, return_params=v),
}


@pytest.mark.parametrize("name", sorted(FLAG_CALLS))
@pytest.mark.parametrize("bad", ["no", "False", 1, None, [True]])
def test_a_flag_is_refused_unless_a_boolean(name, bad):
    """``bool("no")`` is True: a string, an int or None as a flag is refused, naming the argument."""
    arg = name.split()[-1]
    with pytest.raises(ValueError, match=rf"{arg}\b.*must be (True|an instance of 'bool')"):
        FLAG_CALLS[name](bad)


@pytest.mark.parametrize("name", ["optimal_sparse_pca nonneg", "spannogram_bound spectral_only"])
def test_a_numpy_bool_is_a_boolean(name):
    FLAG_CALLS[name](np.bool_(False))
    FLAG_CALLS[name](np.True_)


def test_nonneg_no_is_not_the_nonneg_solve():
    with pytest.raises(ValueError, match=r"'nonneg' parameter of optimal_sparse_pca must be .*Got 'no'"):
        optimal_sparse_pca(X8, 3, nonneg="no")


@pytest.mark.parametrize(
    "est",
    [OptimalSparsePCA(nonneg="no"), OptimalSparsePCA(precomputed="yes"), EMSparsePCA(nonneg="no")],
    ids=repr,
)
def test_estimator_flags_are_refused_by_the_constraints(est):
    with pytest.raises(ValueError, match="must be an instance of 'bool'"):
        est.fit(X8)


# --------------------------------------------------------------------------- masked arrays
def _masked(seed=0):
    """200 x 5 data with every 4th entry of column 0 masked over a fill value of 1e6."""
    X = np.random.default_rng(seed).standard_normal((200, 5))
    mask = np.zeros_like(X, dtype=bool)
    mask[::4, 0] = True
    return np.ma.masked_array(np.where(mask, 1e6, X), mask=mask), X, mask


@pytest.mark.parametrize(
    "make",
    [
        lambda: EMPCA(2, random_state=0),
        lambda: SensiblePCA(2, random_state=0),
        lambda: EMSparsePCA(1, cardinality=2, random_state=0),
    ],
    ids=["EMPCA", "SensiblePCA", "EMSparsePCA"],
)
def test_masked_entries_are_missing_where_nan_is(make):
    """The fill values under the mask are not data: the fit equals the fit with NaN there."""
    Xm, X, mask = _masked()
    before = Xm.data.copy()
    est = make().fit(Xm)
    assert abs(est.mean_[0]) < 0.5  # the fill values (1e6) gave 2.5e5 and more
    ref = make().fit(np.where(mask, np.nan, X))
    np.testing.assert_allclose(est.mean_, ref.mean_)
    np.testing.assert_array_equal(Xm.data, before)  # the caller's data are not written into
    Z = est.transform(Xm)
    np.testing.assert_allclose(Z, ref.transform(np.where(mask, np.nan, X)))


def test_empca_mean_of_a_masked_array_is_the_mean_of_its_observed_entries():
    Xm, X, mask = _masked()
    mean = EMPCA(2, random_state=0).fit(Xm).mean_
    assert abs(mean[0] - X[~mask[:, 0], 0].mean()) < 0.2


@pytest.mark.parametrize(
    "call",
    [
        lambda X: optimal_sparse_pca(X, 2),
        lambda X: baselines.GSPCA(1, cardinality=2).fit(X),
        lambda X: repro.SpannogramPCA(1, cardinality=2, n_samples=50).fit(X),
        lambda X: repro.NSPCA(1, random_state=0, max_iter=5).fit(X),
    ],
    ids=["optimal_sparse_pca", "GSPCA", "SpannogramPCA", "NSPCA"],
)
def test_masked_entries_are_refused_where_missing_values_are_not_supported(call):
    Xm, _, _ = _masked()
    with pytest.raises(ValueError, match="X is a masked array with 50 masked entries"):
        call(Xm)


def test_a_masked_array_with_nothing_masked_is_its_data():
    X = _data()
    est = OptimalSparsePCA(cardinality=3).fit(np.ma.masked_array(X))
    np.testing.assert_allclose(est.components_, OptimalSparsePCA(cardinality=3).fit(X).components_)


def test_a_masked_covariance_is_refused():
    C = np.ma.masked_array(np.cov(X8, rowvar=False), mask=np.eye(8, dtype=bool))
    with pytest.raises(ValueError, match="masked array"):
        optimal_sparse_pca(C, 2, precomputed=True)


# --------------------------------------------------------------------------- inverse_transform
PROJECTIONS = [
    EMSparsePCA(3, cardinality=2, random_state=0),
    OptimalSparsePCA(2, cardinality=2),
    baselines.GSPCA(2, cardinality=2),
    baselines.SPCAZou(2, cardinality=2),
    repro.SpannogramPCA(2, cardinality=2, n_samples=50, random_state=0),
    repro.NSPCA(2, random_state=0, max_iter=20),
    EMPCA(2, random_state=0),
]


@pytest.mark.parametrize("est", PROJECTIONS, ids=lambda e: type(e).__name__)
def test_every_projection_estimator_reconstructs_as_scikit_learn_does(est):
    """``inverse_transform(Z) = Z @ components_ + mean_`` (scikit-learn's PCA and SparsePCA)."""
    X = _data(seed=1)
    est.fit(X)
    Z = np.random.default_rng(2).standard_normal((5, est.components_.shape[0]))
    np.testing.assert_allclose(est.inverse_transform(Z), Z @ est.components_ + est.mean_)
    with pytest.raises(ValueError, match="columns but the model has"):
        est.inverse_transform(np.ones((5, est.components_.shape[0] + 1)))


def test_emsparsepca_full_rank_reconstructs_the_data_exactly():
    """All ``p`` unconstrained components are an orthonormal basis: the round trip is the identity."""
    X = _data(seed=3)
    est = EMSparsePCA(n_components=X.shape[1], random_state=0).fit(X)
    np.testing.assert_allclose(est.inverse_transform(est.transform(X)), X, atol=1e-9)
    # one component: the orthogonal projection on it, plus the mean
    one = EMSparsePCA(1, random_state=0).fit(X)
    w = one.components_[0]
    Xc = X - X.mean(axis=0)
    np.testing.assert_allclose(one.inverse_transform(one.transform(X)), np.outer(Xc @ w, w) + X.mean(axis=0))


# --------------------------------------------------------------------------- no transform without a data mean
@pytest.mark.parametrize(
    "fitted",
    [
        lambda X: OptimalSparsePCA(2, cardinality=3, precomputed=True).fit(np.cov(X, rowvar=False)),
        lambda X: OptimalSparsePCA(2, cardinality=3).fit(Covariance.from_data(X)),
    ],
    ids=["precomputed", "Covariance"],
)
def test_optimal_sparse_pca_fitted_on_a_covariance_has_no_transform(fitted):
    X = _data()
    est = fitted(X)
    with pytest.raises(ValueError, match=r"fitted on a covariance .* no data mean"):
        est.transform(X)
    with pytest.raises(ValueError, match="fitted on a covariance"):
        est.inverse_transform(np.ones((2, 2)))
    data = OptimalSparsePCA(2, cardinality=3).fit(X)
    np.testing.assert_allclose(np.abs(data.components_), np.abs(est.components_), atol=1e-8)
    Xc = X - X.mean(axis=0)
    np.testing.assert_allclose(data.transform(X), Xc @ data.components_.T)


# --------------------------------------------------------------------------- one argument order in metrics
C8 = np.cov(X8, rowvar=False)
W2 = np.eye(8)[:2]


@pytest.mark.parametrize(
    "fn",
    [
        metrics.explained_variance,
        metrics.cumulative_variance,
        metrics.adjusted_variance,
        metrics.qr_adjusted_variance,
    ],
    ids=lambda f: f.__name__,
)
def test_metrics_take_the_covariance_first(fn):
    expected = {"explained_variance": np.diag(C8)[:2], "cumulative_variance": np.cumsum(np.diag(C8)[:2])}
    out = fn(C8, W2)
    if fn.__name__ in expected:
        np.testing.assert_allclose(out, expected[fn.__name__])
    np.testing.assert_allclose(fn(Covariance.from_data(X8), W2), out)
    for old in [(W2, C8), (W2, Covariance.from_data(X8)), (W2[0], C8)]:
        with pytest.raises(
            ValueError, match=rf"{fn.__name__} takes the covariance first.*{fn.__name__}\(C, W\)"
        ):
            fn(*old)


def test_certified_fraction_takes_the_data_first():
    w = np.eye(8)[:1]
    f = metrics.certified_fraction(X8, w, 1, n_samples=50, random_state=0)
    assert 0 < f[0] <= 1
    for old in [(w[0], X8), (w, Covariance.from_data(X8)), (w, C8)]:
        with pytest.raises(
            ValueError, match=r"certified_fraction takes the data first.*certified_fraction\(X, W\)"
        ):
            metrics.certified_fraction(*old, 1, n_samples=50)


def test_two_square_matrices_read_covariance_first():
    """Shapes cannot tell two p x p arrays apart: the documented rule, the first is the covariance."""
    W = np.eye(8)
    np.testing.assert_allclose(metrics.explained_variance(C8, W), np.diag(C8))


# --------------------------------------------------------------------------- errors name the user's X
@pytest.mark.parametrize(
    "call, shape",
    [
        (lambda: EMSparsePCA(n_components=40).fit(_data(569, 30)), r"\(569, 30\)"),
        (lambda: EMSparsePCA(6).fit(_data(8, 5)), r"\(8, 5\)"),
        (lambda: baselines.SSPCA(4, cv=2).fit(_data(4, 10)), r"\(4, 10\)"),
    ],
    ids=["EMSparsePCA 40 on 569 x 30", "EMSparsePCA 6 on 8 x 5", "SSPCA 4 cv=2 on 4 x 10"],
)
def test_a_too_large_n_components_names_the_shape_of_x(call, shape):
    with pytest.raises(
        ValueError, match=rf"n_components=\d+ is too large .*X of shape {shape}.*lower n_components"
    ):
        call()


# --------------------------------------------------------------------------- obscure errors made clear
@pytest.mark.parametrize("scale", [1e170, 1e200, 1e300])
@pytest.mark.parametrize(
    "call",
    [
        lambda C: optimal_sparse_pca(C, 3),
        lambda C: OptimalSparsePCA(cardinality=3).fit(C),
        lambda C: em_sparse_pca(C, 1, cardinality=3),
        lambda C: EMSparsePCA(cardinality=3, certify=True).fit(C),
        lambda C: EMSparsePCA(2, cardinality=3, certify=False).fit(C),
    ],
    ids=["optimal_sparse_pca", "OptimalSparsePCA", "em_sparse_pca", "EMSparsePCA certify", "EMSparsePCA"],
)
def test_a_covariance_of_huge_data_is_too_large_for_float64(call, scale):
    C = Covariance.from_data(X8 * scale)
    with pytest.raises(ValueError, match="too large for float64"):
        C.eigh()
    with pytest.raises(ValueError, match="too large for float64: its variances"):
        call(C)


@pytest.mark.parametrize("scale", [1e200, 1e-170])
@pytest.mark.parametrize(
    "call",
    [
        lambda C: baselines.gspca(C, 3),
        lambda C: baselines.pathspca(C, [3]),
        lambda C: baselines.thresholding_path(C, [3]),
        lambda C: em_sparse_pca_path(C, [3]),
    ],
    ids=["gspca", "pathspca", "thresholding_path", "em_sparse_pca_path"],
)
def test_paths_on_a_covariance_of_badly_scaled_data_say_float64_cannot_hold_it(call, scale):
    with pytest.raises(ValueError, match=r"too (large|small) for float64: its variances"):
        call(Covariance.from_data(X8 * scale))


@pytest.mark.parametrize("scale", [1e100, 1e-100])
@pytest.mark.parametrize(
    "call",
    [
        lambda C: baselines.gspca(C, 3).variance[-1],
        lambda C: baselines.pathspca(C, [3]).variance_opt[0],
        lambda C: em_sparse_pca_path(C, [3], random_state=0).variance_opt[0],
    ],
    ids=["gspca", "pathspca", "em_sparse_pca_path"],
)
def test_paths_on_a_covariance_of_badly_scaled_data_scale_back(call, scale):
    ref = call(Covariance.from_data(X8))
    assert call(Covariance.from_data(X8 * scale)) == pytest.approx(ref * scale**2, rel=1e-9)


@pytest.mark.parametrize(
    "call",
    [
        lambda C: baselines.GSPCA(1, cardinality=3).fit(C),
        lambda C: repro.SpannogramPCA(1, cardinality=3).fit(C),
        lambda C: repro.nspca(C, 1, alpha=1.0),
    ],
    ids=["GSPCA", "SpannogramPCA", "nspca"],
)
def test_a_covariance_where_data_rows_are_needed_is_refused_by_name(call):
    """It was read as a 0-d object array and ended in "'bool' object has no attribute 'astype'"."""
    with pytest.raises(ValueError, match=r"X is a repro\.Covariance, which this method does not take"):
        call(Covariance.from_data(X8))


@pytest.mark.parametrize("scale", [1e100, 1e-100])
def test_a_covariance_of_badly_scaled_data_is_solved_as_the_scaled_one(scale):
    C, ref = Covariance.from_data(X8 * scale), Covariance.from_data(X8)
    res = optimal_sparse_pca(C, 3)
    assert res.value == pytest.approx(optimal_sparse_pca(ref, 3).value * scale**2, rel=1e-9)
    est = EMSparsePCA(2, cardinality=3, random_state=0).fit(C)
    np.testing.assert_allclose(
        est.explained_variance_,
        EMSparsePCA(2, cardinality=3, random_state=0).fit(ref).explained_variance_ * scale**2,
    )


def test_an_empty_precomputed_matrix_is_refused_clearly():
    with pytest.raises(ValueError, match=r"empty \(0, 0\) matrix"):
        optimal_sparse_pca(np.zeros((0, 0)), 1, precomputed=True)


@pytest.mark.parametrize(
    "call",
    [
        lambda M: optimal_sparse_pca(M, 2, precomputed=True),
        lambda M: OptimalSparsePCA(cardinality=2, precomputed=True).fit(M),
    ],
)
def test_a_sparse_precomputed_matrix_is_refused_with_the_fix(call):
    with pytest.raises(ValueError, match=r"scipy sparse matrix .* X\.toarray\(\)"):
        call(scipy.sparse.csr_matrix(C8))


# --------------------------------------------------------------------------- valid input does not crash
def test_more_components_than_the_data_have_is_a_clear_error():
    rng = np.random.default_rng(0)
    rank1 = np.outer(rng.standard_normal(20), rng.standard_normal(6))
    with pytest.raises(ValueError, match=r"only 1 component\(s\) exist; pass n_components=1"):
        OptimalSparsePCA(n_components=2).fit(rank1)
    with pytest.raises(ValueError, match=r"only 2 component\(s\) exist; pass n_components=2"):
        OptimalSparsePCA(n_components=3).fit(rng.standard_normal((3, 6)))
    est = OptimalSparsePCA(n_components=2).fit(rng.standard_normal((3, 6)))  # the rank of centred 3 x 6 data
    assert est.proven_.all() and est.explained_variance_[1] > 0


def test_a_deflated_covariance_is_not_re_checked_as_a_users_matrix():
    """A second component with a small but real variance: its deflated covariance has round-off
    eigenvalues near -1e-16 x the first variance, which the door's check refused relative to the second."""
    rng = np.random.default_rng(1)
    U = np.linalg.qr(rng.standard_normal((6, 2)))[0]
    X = rng.standard_normal((40, 2)) @ np.diag([1.0, 1e-4]) @ U.T
    est = OptimalSparsePCA(n_components=2).fit(X)
    lam = np.linalg.eigvalsh(np.cov(X, rowvar=False))[::-1][:2]
    np.testing.assert_allclose(est.explained_variance_, lam, rtol=1e-6)
    sparse = OptimalSparsePCA(n_components=2, cardinality=3).fit(
        np.outer(rng.standard_normal(20), rng.standard_normal(6))
    )
    assert sparse.explained_variance_[1] > 0  # a sparse first component leaves real variance on rank-1 data


def _repeated_spectrum(seed):
    lam = np.array([0.5] * 2 + [1.0] + [2.0] * 5 + [5.0] * 9)
    Q = ortho_group.rvs(17, random_state=seed)
    C = (Q * lam) @ Q.T
    return (C + C.T) / 2


def test_top_eigenpair_of_a_repeated_top_eigenvalue():
    """LAPACK dsyevr, asked for the top eigenpair of this 16 x 16 matrix (top eigenvalue 5, nine-fold),
    reported success with no eigenpair (scipy's eigh with subset_by_index, the same driver, too)."""
    C = _repeated_spectrum(5)
    S = [i for i in range(17) if i != 11]
    A = np.ascontiguousarray(C[np.ix_(S, S)])
    for k in (1, 3):
        values, vectors = _top_eigh(A, k)
        assert vectors.shape == (16, k)
        np.testing.assert_allclose(values, 5.0, rtol=1e-12)
        np.testing.assert_allclose(A @ vectors, vectors * values, atol=1e-12)


def test_top_eigh_falls_back_when_dsyevr_returns_fewer_pairs(monkeypatch):
    """The fallback itself, whatever the LAPACK in use does with the matrix above."""
    import repro.linalg as linalg

    monkeypatch.setattr(linalg.scipy.linalg, "eigh", lambda A, **kw: (np.zeros(0), np.zeros((A.shape[0], 0))))
    A = np.diag([1.0, 3.0, 2.0])
    values, vectors = _top_eigh(A, 2)
    np.testing.assert_allclose(values, [3.0, 2.0])
    np.testing.assert_allclose(np.abs(vectors), np.eye(3)[:, [1, 2]])


@pytest.mark.parametrize("seed", [5, 9])
def test_emsparsepca_on_a_covariance_with_repeated_eigenvalues(seed):
    """Spectrum 0.5 x 2, 1, 2 x 5, 5 x 9: cardinality 16 ended in an IndexError (a support's top
    eigenpair came back empty); it must give a unit 16-sparse component of variance 5."""
    C = _repeated_spectrum(seed)
    for rs in range(3):
        est = EMSparsePCA(cardinality=16, random_state=rs).fit(Covariance.from_matrix(C))
        w = est.components_[0]
        assert np.count_nonzero(w) <= 16 and np.isclose(np.linalg.norm(w), 1.0)
        assert est.explained_variance_[0] == pytest.approx(5.0, rel=1e-9)
