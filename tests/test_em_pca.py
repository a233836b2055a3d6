"""EM PCA and sensible PCA (Roweis 1997) against exact answers: eigh, the closed-form ML PPCA, scipy's
multivariate normal, the NumPy twins of the kernels, and the batch fit for the block fit."""

import sys
import warnings

import naive
import numpy as np
import pytest
import scipy.stats
from sklearn.base import clone

from repro._chunked import BlockSource
from repro._linalg_kernels import centred_rank1_pass
from repro._validation import ConvergenceWarning
from repro.em_pca import (
    EMPCA,
    SensiblePCA,
    em_pca,
    em_pca_blocks,
    ppca_closed_form,
    sensible_pca,
    subspace_sin,
)
from repro.em_pca import _kernels as kern
from repro.em_pca._common import _rotate
from repro.em_pca.missing import _em_missing, _spca_missing_loop
from repro.em_pca.missing import missing_structure as _missing_structure
from repro.em_pca.sensible import _spca_em_loop, _spca_init
from repro.em_pca.solvers import _em_complete, _em_rank1

mod = sys.modules["repro.em_pca"]  # `repro.em_pca` itself is the re-exported function


def _spiked(rng, n, p, k, scales=None, noise=0.1, shift=3.0):
    scales = np.linspace(5.0, 2.0, k) if scales is None else np.asarray(scales)
    W = np.linalg.qr(rng.standard_normal((p, k)))[0] * scales
    noise_part = noise * rng.standard_normal((n, p))
    return rng.standard_normal((n, k)) @ W.T + noise_part + shift * rng.standard_normal(p)


def _eigh_pca(X, k, ddof=1):
    Xc = X - X.mean(axis=0)
    w, V = np.linalg.eigh(Xc.T @ Xc / (X.shape[0] - ddof))
    return w[::-1][:k], V[:, ::-1][:, :k].T


def _assert_same_components(A, B, atol):
    signs = np.sign(np.sum(A * B, axis=1))
    np.testing.assert_allclose(A * signs[:, None], B, atol=atol)


# --------------------------------------------------------------------------- EM PCA = eigh PCA
@pytest.mark.parametrize(
    ("n", "p", "k"),
    [(300, 20, 1), (300, 20, 4), (40, 120, 1), (40, 120, 3), (25, 8, 8), (60, 60, 2)],
)
def test_empca_equals_eigh(n, p, k):
    rng = np.random.default_rng(n + p + k)
    X = rng.standard_normal((n, p)) * np.linspace(4.0, 0.5, p) + 7.0
    model = EMPCA(k, tol=1e-12, max_iter=20000, random_state=1).fit(X)
    values, vectors = _eigh_pca(X, k)
    assert model.converged_ and model.components_.shape == (k, p)
    np.testing.assert_allclose(model.explained_variance_, values, rtol=1e-9)
    _assert_same_components(model.components_, vectors, atol=1e-6)
    np.testing.assert_allclose(model.components_ @ model.components_.T, np.eye(k), atol=1e-12)
    np.testing.assert_allclose(model.mean_, X.mean(axis=0))
    total = np.trace(np.cov(X, rowvar=False))
    np.testing.assert_allclose(model.explained_variance_ratio_, values / total, rtol=1e-9)
    Z = model.transform(X)
    np.testing.assert_allclose(Z, (X - X.mean(axis=0)) @ model.components_.T)
    np.testing.assert_allclose(model.inverse_transform(Z), Z @ model.components_ + model.mean_)


def test_rank1_fast_path_matches_general_loop():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((200, 15)) * np.linspace(3.0, 1.0, 15)
    c0 = rng.standard_normal(15)
    src = mod.DenseSource(X)
    Q1, G1, it1, _, h1 = _em_rank1(src, c0, 30, 0.0, None)
    Q2, G2, it2, _, h2 = _em_complete(src, c0[:, None], 30, 0.0, None)
    assert it1 == it2 == 30
    for key in ("subspace_change", "reconstruction_error", "eigenvalues"):
        np.testing.assert_allclose(h1[key], h2[key], rtol=1e-9, atol=1e-12)
    assert subspace_sin(Q1, Q2) < 1e-10
    np.testing.assert_allclose(G1, G2, rtol=1e-12)


def test_oversampling_same_answer_fewer_iterations():
    rng = np.random.default_rng(20)
    n, p = 400, 60
    X = rng.standard_normal((n, p)) * np.sqrt(1.0 / np.arange(1, p + 1))  # slowly decaying spectrum
    values, vectors = _eigh_pca(X, 4)
    plain = EMPCA(4, tol=1e-10, max_iter=20000, random_state=0, n_oversamples=0).fit(X)
    over = EMPCA(4, tol=1e-10, max_iter=20000, random_state=0, n_oversamples=8).fit(X)
    for m in (plain, over):
        np.testing.assert_allclose(m.explained_variance_, values, rtol=1e-9)
        _assert_same_components(m.components_, vectors, atol=1e-6)
    assert over.n_iter_ < plain.n_iter_ / 2
    assert over.history_["eigenvalues"].shape == (over.n_iter_ + 1, 4)
    blocks = EMPCA(4, tol=1e-10, random_state=0, n_oversamples=8).fit_blocks([X[:150], X[150:]])
    np.testing.assert_allclose(blocks.components_, over.components_, atol=1e-8)
    one = EMPCA(1, tol=1e-10, max_iter=20000, random_state=0, n_oversamples=3).fit(X)
    _assert_same_components(one.components_, vectors[:1], atol=1e-6)
    with pytest.raises(ValueError, match="n_oversamples must be 0"):
        EMPCA(2, n_oversamples=2).fit(np.where(np.eye(n, p, dtype=bool), np.nan, X))
    with pytest.raises(ValueError, match="n_oversamples"):
        EMPCA(2, n_oversamples=-1).fit(X)


def _decaying(rng, n, p, shift=2.0):
    return rng.standard_normal((n, p)) * np.sqrt(1.0 / np.arange(1, p + 1)) + shift * rng.standard_normal(p)


def test_momentum_same_fixed_point_fewer_iterations():
    rng = np.random.default_rng(21)
    X = _decaying(rng, 500, 80)
    values, vectors = _eigh_pca(X, 5)
    src = mod.DenseSource(X)
    c0 = rng.standard_normal((80, 10))
    runs = {m: _em_complete(src, c0, 5000, 1e-10, None, 5, momentum=m) for m in (False, True)}
    for Q, G, _, converged, _ in runs.values():
        assert converged
        W, ev = _rotate(Q, G, 500)
        np.testing.assert_allclose(ev, values, rtol=1e-10)
        _assert_same_components(W, vectors, atol=1e-7)
    assert runs[True][2] < 0.8 * runs[False][2]
    # a gap right after the block (the plain iteration's best case): the cut at half the k-th Ritz value
    # still lets it converge at rate <= 0.27
    lam = np.r_[np.linspace(10.0, 9.0, 8), 1e-3 * np.ones(52)]
    Y = rng.standard_normal((400, 60)) * np.sqrt(lam)
    values, vectors = _eigh_pca(Y, 4)
    Q, G, it, converged, _ = _em_complete(
        mod.DenseSource(Y), rng.standard_normal((60, 8)), 200, 1e-10, None, 4
    )
    W, ev = _rotate(Q, G, 400)
    assert converged and it <= 25
    np.testing.assert_allclose(ev, values, rtol=1e-10)


def test_products_single_precision(monkeypatch):
    from repro import _chunked

    rng = np.random.default_rng(22)
    X = _decaying(rng, 300, 40)
    monkeypatch.setattr(_chunked, "COPY_LIMIT_BYTES", 0)
    monkeypatch.setattr(_chunked, "BLOCK_BYTES", 8 * 40 * 37)  # blocks of 37 rows, the last one ragged
    src = mod.DenseSource(X)
    assert src.blocked
    Q = np.linalg.qr(rng.standard_normal((40, 6)))[0]
    Y = X - X.mean(axis=0)
    A, G = src.products(Q, single=True)
    assert A.dtype == G.dtype == np.float64
    np.testing.assert_allclose(A, Y.T @ (Y @ Q), rtol=1e-5, atol=1e-5 * np.abs(A).max())
    np.testing.assert_allclose(G, (Y @ Q).T @ (Y @ Q), rtol=1e-5, atol=1e-5 * np.abs(G).max())
    A64, _ = src.products(Q)
    # float64 to round-off of the matrix (its entries reach 100; a relative 1e-12 of each entry asked
    # 7e-16 of one of 5.5e-4, below the last bit of the sums it comes from)
    ref = Y.T @ (Y @ Q)
    np.testing.assert_allclose(A64, ref, rtol=0, atol=1e-12 * np.abs(ref).max())


def test_single_precision_early_passes_exact_result(monkeypatch):
    from repro import _chunked

    rng = np.random.default_rng(23)
    X = _decaying(rng, 400, 50)
    values, vectors = _eigh_pca(X, 4)
    passes = []
    products = _chunked.DenseSource.products

    def spy(self, Q, single=False):
        passes.append(single)
        return products(self, Q, single)

    monkeypatch.setattr(_chunked.DenseSource, "products", spy)
    monkeypatch.setattr(_chunked, "COPY_LIMIT_BYTES", 0)
    monkeypatch.setattr(_chunked, "BLOCK_BYTES", 8 * 50 * 64)
    m = EMPCA(4, tol=1e-10, random_state=0).fit(X)  # n_oversamples "auto": 4, float32 first
    assert passes[0] and not passes[-1] and not passes[-2] and passes == sorted(passes, reverse=True)
    np.testing.assert_allclose(m.explained_variance_, values, rtol=1e-10)
    _assert_same_components(m.components_, vectors, atol=1e-7)
    # stopped by the callback on a float32 pass: one float64 pass more, so the values are exact
    # Rayleigh quotients of the returned subspace
    passes.clear()
    res = em_pca(X, 4, tol=0.0, max_iter=100, random_state=0, callback=lambda t, C, lam: t == 2)
    assert passes == [True, True, True, False]
    Xc = X - X.mean(axis=0)
    S = Xc.T @ Xc / (X.shape[0] - 1)
    np.testing.assert_allclose(
        res.explained_variance, np.diag(res.components @ S @ res.components.T), rtol=1e-12
    )
    with pytest.warns(ConvergenceWarning):  # max_iter reached on a float32 pass: the same
        res = em_pca(X, 4, tol=1e-10, max_iter=1, random_state=0)
    np.testing.assert_allclose(
        res.explained_variance, np.diag(res.components @ S @ res.components.T), rtol=1e-12
    )


@pytest.mark.parametrize("blocked", [True, False])
@pytest.mark.parametrize("scale", [2.0**-250, 1e-25, 1e25, 2.0**250])
def test_oversampled_em_at_extreme_finite_scales(monkeypatch, blocked, scale):
    """Scale equivariance where float32 products of Y (blocked arrays) and the momentum's cut^2 would leave
    the floating-point range (both crashed before: ``eigh`` of a NaN Gram matrix)."""
    from repro import _chunked

    rng = np.random.default_rng(25)
    X = _decaying(rng, 400, 50)
    if blocked:
        monkeypatch.setattr(_chunked, "COPY_LIMIT_BYTES", 0)
        monkeypatch.setattr(_chunked, "BLOCK_BYTES", 8 * 50 * 64)
    ref = EMPCA(4, tol=1e-10, random_state=0).fit(X)
    m = EMPCA(4, tol=1e-10, random_state=0).fit(X * scale)
    np.testing.assert_allclose(m.explained_variance_, ref.explained_variance_ * scale**2, rtol=1e-9)
    _assert_same_components(m.components_, ref.components_, atol=1e-7)
    if blocked:  # the float32 products themselves, against float64, at that scale
        src = mod.DenseSource(X * scale)
        assert src._s32 != 1.0
        Q = np.linalg.qr(rng.standard_normal((50, 6)))[0]
        A, G = src.products(Q, single=True)
        A64, G64 = src.products(Q)
        np.testing.assert_allclose(A, A64, rtol=1e-5, atol=1e-5 * np.abs(A64).max())
        np.testing.assert_allclose(G, G64, rtol=1e-5, atol=1e-5 * np.abs(G64).max())


def test_single_scale():
    assert _chunked_mod()._single_scale(1.0) == _chunked_mod()._single_scale(2.0**100) == 1.0
    for ss in (2.0**-700, 1e-30, 1e40, 2.0**900):
        s = _chunked_mod()._single_scale(ss)
        assert np.log2(s) == int(np.log2(s)) and 0.25 <= ss / s**2 <= 1.0


def _chunked_mod():
    from repro import _chunked

    return _chunked


def test_float32_covariance_replaces_slow_float32_passes(monkeypatch):
    """A slowly converging spectrum: the float32 passes give way to the float32 covariance once the
    predicted passes left exceed its cost; the result is still exact to tol (the last passes are float64)."""
    from repro import _chunked

    rng = np.random.default_rng(26)
    n, p = 800, 60
    X = rng.standard_normal((n, p)) * (1.0 / np.arange(1, p + 1) ** 0.25) + 3.0 * rng.standard_normal(p)
    values, vectors = _eigh_pca(X, 5)
    monkeypatch.setattr(_chunked, "COPY_LIMIT_BYTES", 0)
    monkeypatch.setattr(_chunked, "BLOCK_BYTES", 8 * p * 50)  # blocks of 50 rows: 16 blocks, two flushes
    formed, passes = [], []
    cov, products = _chunked.DenseSource.covariance32, _chunked.DenseSource.products

    def spy_cov(self):
        formed.append(cov(self))
        return formed[-1]

    def spy_products(self, Q, single=False):
        passes.append(single)
        return products(self, Q, single)

    monkeypatch.setattr(_chunked.DenseSource, "covariance32", spy_cov)
    monkeypatch.setattr(_chunked.DenseSource, "products", spy_products)
    m = EMPCA(5, tol=1e-10, random_state=0, max_iter=2000).fit(X)
    assert len(formed) == 1
    Y = X - X.mean(axis=0)
    np.testing.assert_allclose(formed[0], Y.T @ Y, rtol=0, atol=1e-6 * np.abs(Y.T @ Y).max())
    np.testing.assert_array_equal(formed[0], formed[0].T)
    # three float32 passes over the data (the third's change gives the rate), then the covariance, then
    # float64 passes only
    assert passes[:4] == [True] * 4 and not any(passes[4:]) and len(passes) >= 6
    assert m.n_iter_ > len(passes)  # iterations on the covariance
    np.testing.assert_allclose(m.explained_variance_, values, rtol=1e-10)
    _assert_same_components(m.components_, vectors, atol=1e-6)
    # without the covariance (a source that does not offer it): the same answer to tol
    monkeypatch.setattr(_chunked.DenseSource, "covariance_passes", lambda self, k: np.inf)
    formed.clear()
    m2 = EMPCA(5, tol=1e-10, random_state=0, max_iter=2000).fit(X)
    assert not formed
    np.testing.assert_allclose(m2.explained_variance_, m.explained_variance_, rtol=1e-12)


def test_float32_covariance_offered_only_where_it_can_pay(monkeypatch):
    from repro import _chunked

    monkeypatch.setattr(_chunked, "COPY_LIMIT_BYTES", 0)
    rng = np.random.default_rng(27)
    assert mod.DenseSource(rng.standard_normal((400, 50))).covariance_passes(10) == 50 / (8.0 * 10)
    assert mod.DenseSource(rng.standard_normal((150, 50))).covariance_passes(10) == np.inf  # p > n / 4
    monkeypatch.setattr(_chunked, "COPY_LIMIT_BYTES", 2**30)
    assert mod.DenseSource(rng.standard_normal((400, 50))).covariance_passes(10) == np.inf  # a centred copy
    solvers = sys.modules["repro.em_pca.solvers"]
    assert solvers._passes_left(1e-2, 1e-1, 1e-5, 100) == pytest.approx(3.0)
    assert solvers._passes_left(1e-2, 1e-1, 1e-5, 2) == 2.0
    assert solvers._passes_left(1e-6, 1e-1, 1e-5, 100) == 0.0
    assert solvers._passes_left(1e-2, 1e-2, 1e-5, 100) == 100.0  # not falling


def test_predicted_last_pass_computes_the_gram_matrix_alone(monkeypatch):
    from repro import _chunked

    rng = np.random.default_rng(24)
    X = _spiked(rng, 400, 50, 4, scales=[5.0, 4.0, 3.0, 2.0], noise=0.3)  # a steady rate: stop predicted
    values, vectors = _eigh_pca(X, 4)
    grams = []
    gram = _chunked.DenseSource.gram

    def spy(self, Q):
        grams.append(Q.shape[1])
        return gram(self, Q)

    monkeypatch.setattr(_chunked.DenseSource, "gram", spy)
    a = EMPCA(4, tol=1e-10, random_state=0).fit(X)
    assert grams == [8]  # the last pass only, and it stopped there
    np.testing.assert_allclose(a.explained_variance_, values, rtol=1e-10)
    _assert_same_components(a.components_, vectors, atol=1e-7)
    monkeypatch.delattr(_chunked.DenseSource, "gram")  # every pass in full: the same iterates
    b = EMPCA(4, tol=1e-10, random_state=0).fit(X)
    assert a.n_iter_ == b.n_iter_
    np.testing.assert_array_equal(a.components_, b.components_)
    np.testing.assert_array_equal(a.explained_variance_, b.explained_variance_)
    for key in a.history_:
        np.testing.assert_array_equal(a.history_[key], b.history_[key])


def test_history_and_reconstruction_error():
    rng = np.random.default_rng(4)
    X = _spiked(rng, 300, 25, 2)
    m = EMPCA(2, tol=1e-10, random_state=0).fit(X)
    h = m.history_
    assert len(h["iteration"]) == m.n_iter_ + 1 and np.isnan(h["subspace_change"][0])
    assert h["subspace_change"][-1] < 1e-10 <= h["subspace_change"][1]
    # EM never increases the squared reconstruction error; at convergence it is the discarded variance.
    assert np.all(np.diff(h["reconstruction_error"]) <= 1e-12 * h["reconstruction_error"][0])
    values, _ = _eigh_pca(X, 25)
    np.testing.assert_allclose(h["reconstruction_error"][-1], values[2:].sum() * 299 / 300, rtol=1e-8)
    np.testing.assert_allclose(h["eigenvalues"][-1], values[:2], rtol=1e-8)


def test_identical_random_state_identical_result():
    rng = np.random.default_rng(5)
    X = _spiked(rng, 120, 30, 3)
    a = EMPCA(3, random_state=7).fit(X)
    b = EMPCA(3, random_state=7).fit(X)
    c = EMPCA(3, random_state=8).fit(X)
    np.testing.assert_array_equal(a.components_, b.components_)
    np.testing.assert_array_equal(a.history_["subspace_change"], b.history_["subspace_change"])
    assert a.n_iter_ == b.n_iter_
    assert not np.array_equal(a.history_["subspace_change"], c.history_["subspace_change"])
    assert subspace_sin(a.components_.T, c.components_.T) < 1e-5
    s1 = SensiblePCA(2, random_state=3).fit(X)
    s2 = SensiblePCA(2, random_state=3).fit(X)
    np.testing.assert_array_equal(s1.C_, s2.C_)


def test_init_and_callback():
    rng = np.random.default_rng(6)
    X = _spiked(rng, 200, 10, 1)
    _, v = _eigh_pca(X, 1)
    seen = []

    def stop_when_close(t, C, lam):
        seen.append((t, C.shape, lam.shape))
        return abs(v[0] @ C[:, 0]) / np.linalg.norm(C[:, 0]) >= 0.999

    m = EMPCA(1, init=v + 0.01 * rng.standard_normal((1, 10)), callback=stop_when_close, tol=0.0).fit(X)
    assert m.n_iter_ == 0 and seen == [(0, (10, 1), (1,))] and m.converged_
    res = em_pca(X, 1, init=np.ones((1, 10)), callback=lambda t, C, lam: t == 3, tol=0.0)
    assert res.n_iter == 3 and res.converged


def test_convergence_warning_at_max_iter():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((100, 10))
    with pytest.warns(ConvergenceWarning, match="EMPCA did not converge in 3"):
        m = EMPCA(2, max_iter=3, tol=0.0, random_state=0).fit(X)
    assert m.n_iter_ == 3 and not m.converged_
    with pytest.warns(ConvergenceWarning, match="SensiblePCA"):
        SensiblePCA(2, max_iter=2, random_state=0).fit(X)


def test_sklearn_api():
    m = EMPCA(2, tol=1e-7, random_state=0)
    assert clone(m).get_params() == m.get_params()
    X = _spiked(np.random.default_rng(8), 80, 12, 2)
    Z = m.fit_transform(X)
    assert Z.shape == (80, 2)
    with pytest.raises(ValueError, match="features"):
        m.transform(X[:, :5])


# --------------------------------------------------------------------------- missing values
def _missing_mask(rng, shape, frac):
    M = rng.random(shape) < frac
    M[np.arange(shape[0]), rng.integers(0, shape[1], shape[0])] = True  # every row misses something
    return M


def test_missing_loop_without_missing_values_is_exact():
    rng = np.random.default_rng(9)
    X = rng.standard_normal((150, 12)) * np.linspace(3.0, 0.5, 12) + 4.0
    # a chunked source runs the missing-value iteration even when nothing is missing
    src = BlockSource([X[:70], X[70:]])
    Q, G, mean, total, _, conv, _ = _em_missing(src, rng.standard_normal((12, 3)), 5000, 1e-12, None)
    W, ev = _rotate(Q, G, 150)
    values, vectors = _eigh_pca(X, 3)
    assert conv
    np.testing.assert_allclose(ev, values, rtol=1e-9)
    _assert_same_components(W, vectors, atol=1e-6)
    np.testing.assert_allclose(mean, X.mean(axis=0), atol=1e-12)
    np.testing.assert_allclose(total / 149, np.trace(np.cov(X, rowvar=False)), rtol=1e-12)


def test_missing_values_recover_subspace_gracefully():
    rng = np.random.default_rng(10)
    n, p, k = 400, 40, 3
    X = _spiked(rng, n, p, k, noise=0.2)
    exact = EMPCA(k, tol=1e-12, random_state=0).fit(X)
    angles, imputed = [], []
    for frac in (0.05, 0.25, 0.5):
        Xm = X.copy()
        M = _missing_mask(rng, X.shape, frac)
        Xm[M] = np.nan
        assert np.isnan(Xm).any(axis=1).all()
        m = EMPCA(k, tol=1e-9, max_iter=3000, random_state=0).fit(Xm)
        assert m.converged_
        err = m.history_["reconstruction_error"]
        assert np.all(np.diff(err) <= 1e-10 * err[0])  # generalized EM never increases the observed error
        angles.append(subspace_sin(exact.components_.T, m.components_.T))
        mi = EMPCA(k, tol=1e-12, random_state=0).fit(np.where(M, np.nanmean(Xm, axis=0), Xm))
        imputed.append(subspace_sin(exact.components_.T, mi.components_.T))
        np.testing.assert_allclose(m.mean_, X.mean(axis=0), atol=0.1)
    assert angles[0] < 0.01 and angles[2] < 0.1
    assert angles[0] < angles[1] < angles[2]
    assert all(a < b for a, b in zip(angles, imputed, strict=True))


def test_missing_values_exact_low_rank():
    """Data exactly of rank k: EM with missing entries recovers the subspace and the missing values."""
    rng = np.random.default_rng(11)
    X = _spiked(rng, 200, 15, 2, noise=0.0)
    M = _missing_mask(rng, X.shape, 0.3)
    Xm = np.where(M, np.nan, X)
    m = EMPCA(2, tol=1e-12, max_iter=20000, random_state=0).fit(Xm)
    exact = EMPCA(2, tol=1e-12, random_state=0).fit(X)
    assert subspace_sin(exact.components_.T, m.components_.T) < 1e-6
    Z = m.transform(Xm)  # least squares on the observed entries
    np.testing.assert_allclose(m.inverse_transform(Z), X, atol=1e-5)
    np.testing.assert_allclose(m.transform(X[:3]), Z[:3], atol=1e-5)


def test_missing_value_errors():
    X = np.random.default_rng(12).standard_normal((20, 5))
    X[3] = np.nan
    with pytest.raises(ValueError, match=r"row\(s\) 3 with every entry missing"):
        EMPCA(1).fit(X)
    X = np.random.default_rng(12).standard_normal((20, 5))
    X[:, 4] = np.nan
    with pytest.raises(ValueError, match=r"column\(s\) 4 with every entry missing"):
        EMPCA(1).fit(X)
    with pytest.raises(ValueError, match=r"column\(s\) 4 with every entry missing"):
        SensiblePCA(1).fit(X)


# --------------------------------------------------------------------------- sensible PCA
def _closed_form_numpy(X, k):
    n = X.shape[0]
    Xc = X - X.mean(axis=0)
    w, V = np.linalg.eigh(Xc.T @ Xc / n)  # ML covariance, ddof=0
    w, V = w[::-1], V[:, ::-1]
    eps = w[k:].mean()
    return V[:, :k] * np.sqrt(w[:k] - eps), eps, w[:k]


@pytest.mark.parametrize(("n", "p", "k"), [(400, 12, 2), (60, 25, 3), (30, 80, 2)])
def test_spca_equals_closed_form(n, p, k):
    rng = np.random.default_rng(13 + n)
    X = _spiked(rng, n, p, k, noise=0.5)
    s = SensiblePCA(k, tol=1e-12, max_iter=20000, random_state=0).fit(X)
    C, eps, values = _closed_form_numpy(X, k)
    assert s.converged_
    np.testing.assert_allclose(s.noise_variance_, eps, rtol=1e-9)
    np.testing.assert_allclose(s.explained_variance_, values, rtol=1e-9)
    np.testing.assert_allclose(s.C_ @ s.C_.T, C @ C.T, atol=1e-8 * np.abs(C).max() ** 2)
    _assert_same_components(s.C_.T, C.T, atol=1e-6 * np.abs(C).max())
    C2, eps2, mean2 = ppca_closed_form(X, k)
    np.testing.assert_allclose(mean2, X.mean(axis=0))
    np.testing.assert_allclose(C2 @ C2.T, C @ C.T, atol=1e-9 * np.abs(C).max() ** 2)
    np.testing.assert_allclose(eps2, eps, rtol=1e-10)
    # The log-likelihood never decreases and ends at the ML value.
    ll = s.history_["log_likelihood"]
    assert np.all(np.diff(ll) >= -1e-9 * abs(ll[0]))
    cov = C @ C.T + eps * np.eye(p)
    direct = scipy.stats.multivariate_normal(X.mean(axis=0), cov).logpdf(X).sum()
    np.testing.assert_allclose(s.log_likelihood_, direct, rtol=1e-9)


def test_spca_likelihood_and_sampling():
    rng = np.random.default_rng(14)
    X = _spiked(rng, 150, 10, 2, noise=0.7)
    s = SensiblePCA(2, random_state=0).fit(X)
    Xt = rng.standard_normal((7, 10)) * 3
    direct = scipy.stats.multivariate_normal(s.mean_, s.get_covariance()).logpdf(Xt)
    np.testing.assert_allclose(s.score_samples(Xt), direct, rtol=1e-11)
    assert s.score(Xt) == pytest.approx(direct.mean(), rel=1e-11)
    # Posterior mean (Eq. 2b): beta (y - mean) with beta = C'(CC' + eps I)^-1.
    beta = s.C_.T @ np.linalg.inv(s.get_covariance())
    np.testing.assert_allclose(s.transform(Xt), (Xt - s.mean_) @ beta.T, atol=1e-10)
    # Same subspace as PCA (Sec. 4).
    pca = EMPCA(2, tol=1e-12, random_state=0).fit(X)
    assert subspace_sin(pca.components_.T, s.components_.T) < 1e-6
    Y = s.sample(20000, random_state=1)
    assert Y.shape == (20000, 10)
    atol = 0.15 * s.explained_variance_[0]
    np.testing.assert_allclose(np.cov(Y, rowvar=False), s.get_covariance(), atol=atol)
    np.testing.assert_array_equal(Y, s.sample(20000, random_state=1))


# --------------------------------------------------------------------------- blocks
@pytest.mark.parametrize("k", [1, 3])
def test_block_fit_equals_batch(k):
    rng = np.random.default_rng(15)
    X = _spiked(rng, 503, 17, 3)
    batch = EMPCA(k, tol=1e-11, random_state=2).fit(X)

    def row_blocks():
        return (X[i : i + 64] for i in range(0, 503, 64))

    blocks = EMPCA(k, tol=1e-11, random_state=2).fit_blocks(row_blocks)
    as_list = em_pca_blocks([X[:100], X[100:]], k, tol=1e-11, random_state=2)
    for other in (blocks.components_, as_list.components):
        np.testing.assert_allclose(other, batch.components_, atol=1e-9)
    np.testing.assert_allclose(blocks.explained_variance_, batch.explained_variance_, rtol=1e-10)
    np.testing.assert_allclose(blocks.mean_, batch.mean_, atol=1e-12)
    assert abs(blocks.n_iter_ - batch.n_iter_) <= 1
    np.testing.assert_allclose(blocks.explained_variance_ratio_, batch.explained_variance_ratio_, rtol=1e-10)
    s_batch = SensiblePCA(2, tol=1e-10, random_state=0).fit(X)
    s_block = SensiblePCA(2, tol=1e-10, random_state=0).fit_blocks([X[:250], X[250:]])
    np.testing.assert_allclose(s_block.noise_variance_, s_batch.noise_variance_, rtol=1e-9)
    np.testing.assert_allclose(s_block.C_, s_batch.C_, atol=1e-7)


def test_block_input_errors():
    X = np.random.default_rng(16).standard_normal((50, 4))
    with pytest.raises(ValueError, match="one-shot iterator"):
        em_pca_blocks(iter([X]), 1)
    with pytest.raises(ValueError, match="block 1 has 3 features"):
        em_pca_blocks([X, X[:, :3]], 1)
    with pytest.raises(ValueError, match="no data"):
        em_pca_blocks([], 1)
    calls = iter(range(100))

    def shrinking():
        return [X] if next(calls) == 0 else [X[:10]]

    with pytest.raises(ValueError, match="later pass"):
        em_pca_blocks(shrinking, 1)


# --------------------------------------------------------------------------- kernels vs NumPy twins
def _rank1_case(a, g, r, q):
    out_k, out_n = np.empty_like(q), np.empty_like(q)
    rk, sk = kern.rank1_mstep(a, g, r, q, out_k)
    rn, sn = naive.rank1_mstep(a, g, r, q, out_n)
    np.testing.assert_allclose(out_k, out_n, rtol=1e-13, atol=1e-15)
    assert rk == pytest.approx(rn, rel=1e-13)
    assert sk == pytest.approx(sn, rel=1e-9, abs=1e-15)


def test_rank1_mstep_twin():
    _rank1_case(np.array([3.0, 4.0, 0.0]), 2.0, 0.5, np.array([0.0, 1.0, 0.0]))  # fixed: |C_new| = 1.25
    out = np.empty(3)
    r, s = kern.rank1_mstep(np.array([3.0, 4.0, 0.0]), 2.0, 0.5, np.array([0.0, 1.0, 0.0]), out)
    assert r == 1.25 and s == pytest.approx(0.6) and out == pytest.approx([0.6, 0.8, 0.0])
    rng = np.random.default_rng(17)
    for p in (1, 2, 4, 5, 7, 13, 100):
        q = rng.standard_normal(p)
        q /= np.linalg.norm(q)
        _rank1_case(rng.standard_normal(p), 3.7, 1.3, q)
    q = np.ones(50) / np.sqrt(50)  # tiny angle: the sine stays accurate
    _rank1_case(q + 1e-9 * rng.standard_normal(50), 1.0, 1.0, q)


def test_centred_rank1_pass_twin():
    """The fused pass (reassociated sums) equals the NumPy twin to round-off, with a mean far from zero (the
    rows are centred before the dot product, so no cancellation)."""
    rng = np.random.default_rng(23)
    for n, p in ((1, 1), (7, 3), (40, 33), (300, 129)):
        X = rng.standard_normal((n, p)) * 0.01 + 1e4
        mean = X.mean(axis=0)
        q = rng.standard_normal(p)
        u, a, u_n, a_n = np.empty(n), np.empty(p), np.empty(n), np.empty(p)
        g = centred_rank1_pass(X, mean, q, u, a)
        g_n = naive.centred_rank1_pass(X, mean, q, u_n, a_n)
        scale = np.linalg.norm(X - mean) * np.linalg.norm(q)
        np.testing.assert_allclose(u, u_n, rtol=0, atol=1e-13 * scale)
        np.testing.assert_allclose(a, a_n, rtol=0, atol=1e-13 * scale**2)
        assert g == pytest.approx(g_n, rel=1e-12, abs=1e-24)


def _estep_case(Y, M, C, mu):
    ptr, idx = _missing_structure(M)
    outs = []
    for fn in (kern.missing_estep, naive.missing_estep):
        Yf = Y.copy()
        B = (Yf - mu) @ C
        Z = np.empty((Y.shape[0], C.shape[1]))
        fs = np.empty(Y.shape[1])
        sse = fn(Yf, B, C, C.T @ C, mu, ptr, idx, Z, fs)
        outs.append((Yf, Z, fs, sse))
    for a, b in zip(outs[0], outs[1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)


def test_missing_estep_twin():
    Y = np.array([[1.0, 2.0, 0.0], [0.0, 3.0, 5.0], [2.0, 0.0, 1.0]])
    M = np.array([[False, False, True], [True, False, False], [False, True, True]])
    C = np.array([[1.0], [1.0], [0.0]])
    _estep_case(Y, M, C, np.zeros(3))
    Yf = Y.copy()
    Z = np.empty((3, 1))
    kern.missing_estep(Yf, Yf @ C, C, C.T @ C, np.zeros(3), *_missing_structure(M), Z, np.empty(3))
    np.testing.assert_allclose(Z[:, 0], [1.5, 3.0, 2.0])  # LS on the observed coordinates
    np.testing.assert_allclose(Yf[2], [2.0, 2.0, 0.0])  # fills = C x
    rng = np.random.default_rng(18)
    n, p, k = 40, 9, 3
    Y = rng.standard_normal((n, p))
    M = rng.random((n, p)) < 0.4
    M[0, :] = True
    M[0, :2] = False  # fewer observed coordinates than k: minimum-norm solution
    _estep_case(Y, M, rng.standard_normal((p, k)), rng.standard_normal(p))


def test_ppca_missing_estep_twin():
    rng = np.random.default_rng(28)
    n, p, k = 30, 8, 3
    Y = rng.standard_normal((n, p))
    M = rng.random((n, p)) < 0.3
    M[0, :] = True
    M[0, :2] = False  # fewer observed coordinates than k: still defined (eps > 0)
    M[1, :] = False
    C, mu = rng.standard_normal((p, k)), rng.standard_normal(p)
    ptr, idx = _missing_structure(M)
    Yfill = np.where(M, mu, Y)
    outs = []
    for fn in (kern.ppca_missing_estep, naive.ppca_missing_estep):
        Xt, St, Hm = np.empty((n, k + 1)), np.zeros((k + 1, k + 1)), np.zeros((p, k + 1, k + 1))
        ll = fn(Yfill, (Yfill - mu) @ C, C, C.T @ C, mu, 0.37, ptr, idx, Xt, St, Hm)
        outs.append((Xt, St, Hm, ll))
    for a, b in zip(outs[0], outs[1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------- bad input
def test_bad_input():
    X = np.random.default_rng(19).standard_normal((10, 6))
    for k in (0, 7, 10, 2.5):
        with pytest.raises(ValueError, match="n_components"):
            EMPCA(k).fit(X)
    with pytest.raises(ValueError, match="n_components=6 is too large"):
        SensiblePCA(6).fit(X)
    with pytest.raises(ValueError, match="n_components=4 is too large"):
        EMPCA(4).fit(X[:4])  # centring leaves n - 1 = 3 directions
    Xi = X.copy()
    Xi[2, 3] = np.inf
    with pytest.raises(ValueError, match=r"infinite values \(rows 2, columns 3\)"):
        EMPCA(1).fit(Xi)
    with pytest.raises(ValueError, match="tol"):
        EMPCA(1, tol=-1.0).fit(X)
    with pytest.raises(ValueError, match="max_iter"):
        EMPCA(1, max_iter=0).fit(X)
    with pytest.raises(ValueError, match="init must have shape"):
        EMPCA(2, init=np.ones((1, 6))).fit(X)
    with pytest.raises(ValueError, match="linearly independent"):
        EMPCA(2, init=np.ones((2, 6))).fit(X)
    with pytest.raises(ValueError, match="callback"):
        EMPCA(1, callback=3).fit(X)
    with pytest.raises(ValueError, match="2-D"):
        EMPCA(1).fit(X[0])
    with pytest.raises(ValueError, match="rank below n_components"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            EMPCA(3, random_state=0).fit(np.outer(np.arange(10.0), np.ones(6)))
    with pytest.raises(ValueError, match="n_samples"):
        SensiblePCA(1).fit(X).sample(0)
    assert sensible_pca(X, 1, random_state=0).C.shape == (6, 1)


# --------------------------------------------------------------------------- sensible PCA at small noise
def _low_rank(rng, n, p, rank, noise):
    W = np.linalg.qr(rng.standard_normal((p, rank)))[0] * np.linspace(6.0, 3.0, rank)
    return rng.standard_normal((n, rank)) @ W.T + noise * rng.standard_normal((n, p)) + rng.standard_normal(p)


def _assert_ml(s, X, k, rtol):
    """The fitted model is the closed-form ML one: covariance, noise, variances, likelihood."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mod.LowRankWarning)  # checked where it is expected
        C, eps, _ = ppca_closed_form(X, k)
    cov = C @ C.T + eps * np.eye(X.shape[1])
    scale = np.linalg.norm(cov, 2)
    np.testing.assert_allclose(s.get_covariance(), cov, atol=rtol * scale)
    np.testing.assert_allclose(s.noise_variance_, eps, rtol=rtol, atol=1e-14 * scale)
    values = np.sum(C * C, axis=0) + eps
    np.testing.assert_allclose(s.explained_variance_, values, rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("noise", [1e-1, 1e-3, 1e-5, 0.0])
@pytest.mark.parametrize("k", [2, 3])  # rank 2: k = rank and k > rank
def test_spca_reaches_ml_at_small_noise(noise, k):
    rng = np.random.default_rng(21)
    X = _low_rank(rng, 120, 12, 2, noise)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = SensiblePCA(k, tol=1e-12, max_iter=3000, random_state=0).fit(X)
        _, eps, _ = ppca_closed_form(X, k)
    low_rank = [w for w in caught if issubclass(w.category, mod.LowRankWarning)]
    assert bool(low_rank) == (noise == 0.0)  # exact low rank: the ML noise is 0, clamped and said
    assert eps >= 0.0
    assert s.converged_ and s.n_iter_ < 200
    _assert_ml(s, X, k, 1e-7)
    # the log-likelihood never decreases, up to its round-off: eps = (tr S - sum t)/(p - k) cancels
    ll = s.history_["log_likelihood"]
    trS = np.trace(np.cov(X, rowvar=False, ddof=0))
    assert np.all(np.diff(ll) >= -1e-9 * np.abs(ll).max() - X.size * 1e-14 * trS / s.noise_variance_)
    if noise >= 1e-3:  # (scipy refuses the nearly singular covariance at smaller noise)
        direct = scipy.stats.multivariate_normal(X.mean(axis=0), s.get_covariance()).logpdf(X).sum()
        np.testing.assert_allclose(s.log_likelihood_, direct, rtol=1e-8)
    # Roweis' EM as printed: either it is at the ML point or it says it is not.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        e = SensiblePCA(k, algorithm="em", tol=1e-9, max_iter=1500, random_state=0).fit(X)
    if e.converged_:
        _assert_ml(e, X, k, 1e-6)
    else:
        assert any(issubclass(w.category, ConvergenceWarning) for w in caught)


def test_spca_issue_cases():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 50))  # k = n - 1: the centred data span exactly k directions
    with pytest.warns(mod.LowRankWarning):
        s = SensiblePCA(19, random_state=0).fit(X)
    with pytest.warns(mod.LowRankWarning):
        _, eps, _ = ppca_closed_form(X, 19)
    Xc = X - X.mean(axis=0)
    values = np.linalg.eigvalsh(Xc.T @ Xc / 20)[::-1][:19]
    np.testing.assert_allclose(s.explained_variance_, values, rtol=1e-9)
    assert eps == pytest.approx(s.noise_variance_, rel=1e-12) and eps > 0
    # the paper's EM cannot get there, and says so
    with pytest.warns(ConvergenceWarning), pytest.warns(mod.LowRankWarning):
        SensiblePCA(19, algorithm="em", max_iter=300, random_state=0).fit(X)
    # exactly rank 1, k = 2: no jump in likelihood, not isotropic
    X = np.outer(rng.standard_normal(100), rng.standard_normal(10))
    with pytest.warns(mod.LowRankWarning):
        s = SensiblePCA(2, random_state=0).fit(X)
    l1 = np.linalg.eigvalsh(np.cov(X, rowvar=False, ddof=0))[-1]
    assert s.explained_variance_[0] == pytest.approx(l1, rel=1e-9)
    assert s.explained_variance_[1] == s.noise_variance_ < 1e-12 * l1
    assert np.all(np.diff(s.history_["log_likelihood"]) >= 0)
    for fit in (lambda Z: SensiblePCA(1).fit(Z), lambda Z: ppca_closed_form(Z, 1)):
        with pytest.raises(ValueError, match="no variance"):  # the validation layer's wording
            fit(np.zeros((10, 4)))
    with pytest.raises(ValueError, match="'algorithm' parameter of SensiblePCA must be a str among"):
        SensiblePCA(1, algorithm="fast").fit(rng.standard_normal((10, 4)))


def test_spca_accelerated_equals_em_where_em_converges():
    rng = np.random.default_rng(22)
    X = _spiked(rng, 300, 20, 3, noise=1.0)
    a = SensiblePCA(3, tol=1e-11, random_state=0).fit(X)
    e = SensiblePCA(3, algorithm="em", tol=1e-11, max_iter=20000, random_state=0).fit(X)
    assert a.converged_ and e.converged_ and a.n_iter_ < e.n_iter_ / 5
    np.testing.assert_allclose(a.get_covariance(), e.get_covariance(), atol=1e-8)
    np.testing.assert_allclose(a.log_likelihood_, e.log_likelihood_, rtol=1e-12)


# --------------------------------------------------------------------------- Dask, and blocks with NaN
da = pytest.importorskip("dask.array")

CHUNKINGS = [(503, 17), (64, 17), (101, 5), (40, 3)]  # rows x features (feature chunks are merged)


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_dask_equals_in_memory(chunks):
    rng = np.random.default_rng(23)
    X = _spiked(rng, 503, 17, 3)
    Xd = da.from_array(X, chunks=chunks)
    for k, s in ((1, 0), (3, 0), (3, "auto")):
        mem = EMPCA(k, tol=1e-11, random_state=2, n_oversamples=s).fit(X)
        dsk = EMPCA(k, tol=1e-11, random_state=2, n_oversamples=s).fit(Xd)
        np.testing.assert_allclose(dsk.components_, mem.components_, atol=1e-9)
        np.testing.assert_allclose(dsk.explained_variance_, mem.explained_variance_, rtol=1e-10)
        np.testing.assert_allclose(dsk.mean_, mem.mean_, atol=1e-12)
        assert abs(dsk.n_iter_ - mem.n_iter_) <= 1
    X = _spiked(rng, 503, 17, 2, noise=1.0)  # noise of the signal's order: the paper's EM is fast too
    Xd = da.from_array(X, chunks=chunks)
    for alg in ("accelerated", "em"):
        mem = SensiblePCA(2, algorithm=alg, tol=1e-10, random_state=0).fit(X)
        dsk = SensiblePCA(2, algorithm=alg, tol=1e-10, random_state=0).fit(Xd)
        np.testing.assert_allclose(dsk.get_covariance(), mem.get_covariance(), atol=1e-9)
        np.testing.assert_allclose(dsk.noise_variance_, mem.noise_variance_, rtol=1e-9)


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_dask_and_blocks_with_missing_values_equal_in_memory(chunks):
    rng = np.random.default_rng(24)
    X = _spiked(rng, 503, 17, 2, noise=0.2)
    Xm = np.where(_missing_mask(rng, X.shape, 0.2), np.nan, X)
    mem = EMPCA(2, tol=1e-10, random_state=0).fit(Xm)
    dsk = EMPCA(2, tol=1e-10, random_state=0).fit(da.from_array(Xm, chunks=chunks))
    blk = EMPCA(2, tol=1e-10, random_state=0).fit_blocks(
        [Xm[i : i + chunks[0]] for i in range(0, Xm.shape[0], chunks[0])]
    )
    assert mem.converged_
    for other in (dsk, blk):
        np.testing.assert_allclose(other.components_, mem.components_, atol=1e-8)
        np.testing.assert_allclose(other.explained_variance_, mem.explained_variance_, rtol=1e-9)
        np.testing.assert_allclose(other.mean_, mem.mean_, atol=1e-9)
        np.testing.assert_allclose(
            other.history_["reconstruction_error"], mem.history_["reconstruction_error"], rtol=1e-9
        )


def test_dask_bad_input():
    # (the input policy shared with EMSparsePCA is tested for every estimator in tests/test_chunked.py)
    X = np.random.default_rng(25).standard_normal((40, 6))
    Xm = X.copy()
    Xm[[3, 27]] = np.nan
    with pytest.raises(ValueError, match=r"row\(s\) 3, 27 with every entry missing"):
        EMPCA(1).fit(da.from_array(Xm, chunks=(10, 6)))
    with pytest.raises(ValueError, match=r"row\(s\) 3, 27 with every entry missing"):
        SensiblePCA(1).fit(da.from_array(Xm, chunks=(10, 6)))
    Xi = X.copy()
    Xi[12, 1] = np.inf
    with pytest.raises(ValueError, match=r"infinite values \(rows 12\)"):
        EMPCA(1).fit(da.from_array(Xi, chunks=(10, 6)))
    with pytest.raises(ValueError, match="2-D"):
        EMPCA(1).fit(da.from_array(X[:, 0], chunks=10))


# --------------------------------------------------------------------------- sensible PCA with missing values
def _observed_loglik(X, C, mu, eps):
    total = 0.0
    for row in X:
        o = ~np.isnan(row)
        cov = C[o] @ C[o].T + eps * np.eye(o.sum())
        total += scipy.stats.multivariate_normal(mu[o], cov).logpdf(row[o])
    return total


def test_spca_missing_values_is_the_observed_data_ml():
    rng = np.random.default_rng(26)
    X = _spiked(rng, 80, 6, 2, scales=[3.0, 2.0], noise=0.7)
    Xm = np.where(_missing_mask(rng, X.shape, 0.15), np.nan, X)
    s = SensiblePCA(2, tol=1e-12, max_iter=20000, random_state=0).fit(Xm)
    assert s.converged_
    ll = s.history_["log_likelihood"]
    assert np.all(np.diff(ll) >= -1e-9 * np.abs(ll).max())  # EM: the observed likelihood never decreases
    C, mu, eps = s.C_, s.mean_, s.noise_variance_
    np.testing.assert_allclose(s.log_likelihood_, _observed_loglik(Xm, C, mu, eps), rtol=1e-10)
    # a stationary point of the observed-data likelihood: central differences in every parameter vanish
    theta = np.r_[C.ravel(), mu, np.log(eps)]

    def f(t):
        return _observed_loglik(Xm, t[: C.size].reshape(C.shape), t[C.size : C.size + 6], np.exp(t[-1]))

    h = 1e-5
    grad = [(f(theta + h * e) - f(theta - h * e)) / (2 * h) for e in np.eye(theta.size)]
    assert np.max(np.abs(grad)) < 1e-5 * abs(s.log_likelihood_)


def test_spca_missing_values_against_complete_data_and_empca():
    rng = np.random.default_rng(27)
    X = _spiked(rng, 400, 20, 3, noise=1.0)
    full = SensiblePCA(3, tol=1e-11, random_state=0).fit(X)
    # nothing missing: the missing-value iteration is Roweis' EM, iterate by iterate
    src = BlockSource([X[:150], X[150:]])
    src.missing = True
    C0, eps0 = _spca_init(None, 20, 3, src.ss, 400, np.random.default_rng(0))
    a = _spca_missing_loop(src, C0, eps0, 8, 0.0, None, 1e-20)
    b = _spca_em_loop(mod.DenseSource(X), C0, eps0, 8, 0.0, None, 1e-20)
    np.testing.assert_allclose(a[0], b[0], atol=1e-10)
    np.testing.assert_allclose(a[1], b[1], rtol=1e-12)
    np.testing.assert_allclose(a[7]["log_likelihood"], b[6]["log_likelihood"], rtol=1e-12)
    # 10% missing: close to the complete-data fit and to EMPCA's generalized e-step on the same data
    Xm = np.where(_missing_mask(rng, X.shape, 0.1), np.nan, X)
    s = SensiblePCA(3, tol=1e-9, random_state=0).fit(Xm)
    e = EMPCA(3, tol=1e-9, random_state=0).fit(Xm)
    assert s.converged_
    assert subspace_sin(s.components_.T, full.components_.T) < 0.15
    assert subspace_sin(s.components_.T, e.components_.T) < 0.1
    np.testing.assert_allclose(s.noise_variance_, full.noise_variance_, rtol=0.05)
    # the same fit from a Dask array and from row blocks
    d = SensiblePCA(3, tol=1e-9, random_state=0).fit(da.from_array(Xm, chunks=(64, 7)))
    blk = SensiblePCA(3, tol=1e-9, random_state=0).fit_blocks([Xm[:100], Xm[100:]])
    for other in (d, blk):
        np.testing.assert_allclose(other.get_covariance(), s.get_covariance(), atol=1e-9)
        assert other.n_iter_ == s.n_iter_
    assert np.isfinite(s.score(Xm))  # rows with missing entries: the density of their observed entries


def test_sensible_pca_transform_and_score_with_missing_entries_use_the_observed_marginal():
    import scipy.stats

    rng = np.random.default_rng(11)
    X = rng.standard_normal((80, 3)) @ rng.standard_normal((3, 7)) + 0.3 * rng.standard_normal((80, 7))
    s = SensiblePCA(2, random_state=0).fit(X)
    x = X[:1].copy()
    full = s.score_samples(x)[0]
    cov = s.get_covariance()
    assert full == pytest.approx(scipy.stats.multivariate_normal(s.mean_, cov).logpdf(x[0]), rel=1e-10)
    x[0, [1, 4]] = np.nan
    obs = ~np.isnan(x[0])
    want = scipy.stats.multivariate_normal(s.mean_[obs], cov[np.ix_(obs, obs)]).logpdf(x[0, obs])
    assert s.score_samples(x)[0] == pytest.approx(want, rel=1e-10)
    Co = s.C_[obs]
    z = np.linalg.solve(Co.T @ Co + s.noise_variance_ * np.eye(2), Co.T @ (x[0, obs] - s.mean_[obs]))
    np.testing.assert_allclose(s.transform(x)[0], z, rtol=1e-10, atol=1e-10 * np.abs(z).max())
    np.testing.assert_allclose(s.transform(X[1:3]), s.transform(np.vstack([X[1:3]])), rtol=0)
