"""GSPPCA on scipy.sparse input: the fit, its function forms and the model's scores equal the dense ones on
``X.toarray()`` (to round-off; the tolerances of the Dask tests or tighter), through both eigen routes
(Gram matrix, Lanczos) and row blocks of any size, never densified; bad sparse input gives the dense
answer or a clear error."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import repro
import repro.gsppca.sparse as gs
from repro import GSPPCA, evidence_path, gsppca_vem, log_evidence
from repro.gsppca import log_density, make_globally_sparse

FORMATS = {"csr": sp.csr_matrix, "csc": sp.csc_matrix, "coo": sp.coo_matrix, "csr_array": sp.csr_array}
ATTRIBUTES = ("u_", "evidence_path_", "ranking_evidence_", "free_energy_", "explained_variance_", "mean_")


def _counts(n=150, p=24, q=6, seed=0):
    """Globally sparse counts: ``q`` correlated active variables, the rest Poisson noise; log1p, about 60%
    zeros (so the mean is not zero and the centring matters)."""
    rng = np.random.default_rng(seed)
    X = rng.poisson(0.4, size=(n, p)).astype(float)
    X[:, :q] += rng.poisson(2.0, size=(n, 1)) * (rng.random((n, q)) < 0.7)
    return np.log1p(X)


def _planted(n=120, p=20, d=2, q=5, seed=0):
    X, v = make_globally_sparse(n, p, d, q, sigma=0.1, random_state=seed)
    X = X * (np.random.default_rng(seed).random(X.shape) < 0.6)  # sparse entries, still the model's signal
    return X, v


def _assert_same_fit(got, ref, msg=""):
    np.testing.assert_array_equal(got.support_, ref.support_, err_msg=msg)
    np.testing.assert_array_equal(got.ranking_, ref.ranking_, err_msg=msg)
    assert got.n_iter_ == ref.n_iter_ and got.ranking_iter_ == ref.ranking_iter_, msg
    for name in ATTRIBUTES:
        a, b = getattr(got, name), getattr(ref, name)
        ok = np.isfinite(b)
        np.testing.assert_array_equal(np.isfinite(a), ok, err_msg=f"{msg} {name}")
        np.testing.assert_allclose(a[ok], b[ok], rtol=1e-9, atol=1e-12, err_msg=f"{msg} {name}")
    ok = np.isfinite(ref.alpha_path_)
    np.testing.assert_allclose(got.alpha_path_[ok], ref.alpha_path_[ok], rtol=1e-6, err_msg=msg)
    assert got.sigma1_ == pytest.approx(ref.sigma1_, rel=1e-10), msg
    np.testing.assert_allclose(got.components_, ref.components_, rtol=1e-8, atol=1e-10, err_msg=msg)


# --------------------------------------------------------------------------- the fit equals the dense fit
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_gsppca_on_sparse_input_equals_the_dense_fit(fmt):
    X = _counts()
    ref = GSPPCA(2, random_state=0).fit(X)
    got = GSPPCA(2, random_state=0).fit(FORMATS[fmt](X))
    _assert_same_fit(got, ref, fmt)
    assert 1 <= got.n_selected_ < X.shape[1]
    Xs = FORMATS[fmt](X)
    np.testing.assert_allclose(got.transform(Xs), ref.transform(X), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(got.score_samples(Xs), ref.score_samples(X), rtol=1e-10)
    assert got.score(Xs) == pytest.approx(ref.score(X), rel=1e-10)
    np.testing.assert_allclose(got.vem_.Mu @ got.vem_.M.T, ref.vem_.Mu @ ref.vem_.M.T, rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize(
    "kw",
    [
        dict(ranking="vem"),
        dict(sigma1="ml"),
        dict(sigma1=0.3),
        dict(n_selected=4),
        dict(n_components=3, ranking="vem", sigma1="ml"),
    ],
    ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()),
)
def test_every_setting_on_sparse_input_equals_the_dense_fit(kw):
    X, _ = _planted()
    kw = {"n_components": 2, "random_state": 0, **kw}
    ref = GSPPCA(**kw).fit(X)
    got = GSPPCA(**kw).fit(sp.csr_matrix(X))
    _assert_same_fit(got, ref, str(kw))


def test_the_lanczos_route_and_small_row_blocks_give_the_dense_fit(monkeypatch):
    """Above DENSE_EIGH_MAX the start, the noise estimate and the PCA of the selected variables come from
    Lanczos on the operator; the evidence sums over row blocks of 7 rows (the last one shorter)."""
    X = _counts(150, 24)
    ref = GSPPCA(2, random_state=0).fit(X)
    monkeypatch.setattr(gs, "DENSE_EIGH_MAX", 3)
    monkeypatch.setattr(gs, "EVIDENCE_BLOCK_BYTES", 8 * 24 * 7)
    got = GSPPCA(2, random_state=0).fit(sp.csr_matrix(X))
    _assert_same_fit(got, ref, "lanczos")
    wide = _counts(30, 40, seed=1)  # n < p: the start from the n x n Gram matrix (and by Lanczos)
    for limit in (3, gs.DENSE_EIGH_MAX):
        monkeypatch.setattr(gs, "DENSE_EIGH_MAX", limit)
        _assert_same_fit(
            GSPPCA(2, random_state=0).fit(sp.csc_matrix(wide)), GSPPCA(2, random_state=0).fit(wide), "wide"
        )


def test_the_function_forms_take_sparse_input_as_dense():
    X, v = _planted()
    X = X * 3.0 + np.where(X != 0, 1.0, 0.0)  # stored entries shifted: a mean far from zero
    Xs = sp.csr_matrix(X)
    order = np.r_[np.flatnonzero(v), np.flatnonzero(~v)]
    for sigma1 in ("bc", "ml", 0.4):
        a = evidence_path(X, order, n_components=2, sigma1=sigma1)
        b = evidence_path(Xs, order, n_components=2, sigma1=sigma1)
        np.testing.assert_allclose(b.log_evidence, a.log_evidence, rtol=1e-11)
        np.testing.assert_allclose(b.alpha, a.alpha, rtol=1e-7)
        assert b.sigma1 == pytest.approx(a.sigma1, rel=1e-12) and b.best_q == a.best_q
        got = log_evidence(Xs, v, n_components=2, sigma1=sigma1, return_params=True)
        np.testing.assert_allclose(got, log_evidence(X, v, n_components=2, sigma1=sigma1, return_params=True))
    assert log_evidence(Xs, v, n_components=2, alpha=2.0) == pytest.approx(
        log_evidence(X, v, n_components=2, alpha=2.0), rel=1e-12
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r0, r1 = gsppca_vem(X, 2, max_iter=50, random_state=0), gsppca_vem(Xs, 2, max_iter=50, random_state=0)
    np.testing.assert_allclose(r1.u, r0.u, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(r1.free_energy, r0.free_energy, rtol=1e-11)
    assert (r1.alpha, r1.sigma2) == pytest.approx((r0.alpha, r0.sigma2), rel=1e-9)
    rows = X[(X[:, v] != 0).any(axis=1)]  # the rows as given (no centring): none zero on the support
    dens = log_density(sp.csr_matrix(rows), v, n_components=2, alpha=1.5, sigma1=0.5)
    np.testing.assert_allclose(dens, log_density(rows, v, n_components=2, alpha=1.5, sigma1=0.5), rtol=1e-13)
    with pytest.raises(ValueError, match="order must be a permutation"):
        evidence_path(Xs, order[:-1], n_components=2)


@pytest.mark.parametrize("scale", [1e-100, 1e100])
def test_badly_scaled_sparse_data_are_fitted_as_x_over_s(scale):
    X = _counts(100, 12)
    ref = GSPPCA(2, random_state=0).fit(X * scale)
    got = GSPPCA(2, random_state=0).fit(sp.csr_matrix(X) * scale)
    np.testing.assert_array_equal(got.support_, ref.support_)
    np.testing.assert_allclose(got.evidence_path_, ref.evidence_path_, rtol=1e-10)
    np.testing.assert_allclose(
        got.explained_variance_ / scale**2, ref.explained_variance_ / scale**2, rtol=1e-9
    )
    assert got.sigma1_ / scale == pytest.approx(ref.sigma1_ / scale, rel=1e-10)
    Xs = sp.csr_matrix(X) * scale
    np.testing.assert_allclose(got.score_samples(Xs), ref.score_samples(X * scale), rtol=1e-10)
    path = evidence_path(Xs, ref.ranking_, n_components=2)
    np.testing.assert_allclose(path.log_evidence, ref.evidence_path_, rtol=1e-10)


# --------------------------------------------------------------------------- odd and bad sparse input
def test_explicit_zeros_duplicates_int_dtype_and_empty_rows_or_columns_give_the_dense_answer():
    Xd = np.rint(np.expm1(_counts(100, 12)))  # integer counts
    Xd[[4, 60]] = 0.0  # empty rows (a cell with no counts)
    Xd[:, 9] = 0.0  # an empty column (never seen): no variance
    ref = GSPPCA(2, random_state=0).fit(Xd)
    coo = sp.coo_matrix(Xd)
    stored_zeros = sp.csr_matrix((np.r_[coo.data, 0.0, 0.0], (np.r_[coo.row, 0, 4], np.r_[coo.col, 9, 2])))
    rows, cols = np.r_[coo.row, coo.row], np.r_[coo.col, coo.col]
    halves = sp.coo_matrix((np.r_[coo.data, coo.data] / 2, (rows, cols)))
    ints = sp.csr_matrix(Xd.astype(np.int64))
    assert stored_zeros.nnz == coo.nnz + 2
    for name, X in (("stored zeros", stored_zeros), ("duplicates", halves), ("int64", ints)):
        _assert_same_fit(GSPPCA(2, random_state=0).fit(X), ref, name)
    assert halves.nnz == 2 * coo.nnz  # the caller's matrix is not modified by summing its duplicates
    assert not ref.support_[9]


def test_bad_sparse_input_is_refused_saying_why():
    X = sp.csr_matrix(_counts(40, 8))
    X.data[3] = np.nan
    with pytest.raises(ValueError, match=r"NaN among its stored values.*dense input only"):
        GSPPCA(1).fit(X)
    with pytest.raises(ValueError, match=r"NaN among its stored values"):
        evidence_path(X, np.arange(8), n_components=1)
    X.data[3] = np.inf
    with pytest.raises(ValueError, match="infinite"):
        GSPPCA(1).fit(X)
    with pytest.raises(ValueError, match="no variance"):
        GSPPCA(1).fit(sp.csr_matrix(np.ones((10, 4))))
    with pytest.raises(ValueError, match="no variance"):
        gsppca_vem(sp.csr_matrix((10, 4)), 1)
    with pytest.raises(ValueError, match="minimum of 2"):
        GSPPCA(1).fit(sp.csr_matrix(np.ones((1, 4))))
    with pytest.raises(ValueError, match="1 feature"):
        GSPPCA(1).fit(sp.csr_matrix(np.arange(6.0)[:, None]))
    with pytest.raises(ValueError, match="Complex data not supported"):
        GSPPCA(1).fit(sp.csr_matrix(np.eye(4) * 1j))
    with pytest.raises(ValueError, match=r"n_components=4 is too large"):
        GSPPCA(4).fit(sp.csr_matrix(_counts(40, 4, q=2)))
    low = sp.csr_matrix(np.outer(np.arange(1.0, 21.0), [1.0, 2.0, 0.0, 3.0]))  # rank one once centred
    with pytest.raises(ValueError, match="estimate of sigma1 is zero"):
        GSPPCA(1).fit(low)


def test_new_sparse_rows_are_checked_and_scored_as_dense():
    X = _counts(80, 10)
    est = GSPPCA(2, random_state=0).fit(sp.csr_matrix(X))
    with pytest.raises(ValueError, match="10 features"):
        est.transform(sp.csr_matrix(np.ones((3, 9))))
    with pytest.raises(ValueError, match="10 features"):
        est.score_samples(sp.csr_matrix(np.ones((3, 9))))
    on_support = np.zeros((1, 10))
    on_support[0, est.support_] = est.mean_[est.support_]  # zero on the support once centred
    with pytest.raises(ValueError, match="zero on the support"):
        est.score_samples(sp.csr_matrix(on_support))
    with pytest.raises(ValueError, match="zero on the support"):
        est.score_samples(on_support)
    dense = GSPPCA(2, random_state=0).fit(X)
    rows = sp.random(5, 10, density=0.3, format="csr", random_state=1)
    np.testing.assert_allclose(est.score_samples(rows), dense.score_samples(rows.toarray()), rtol=1e-10)
    np.testing.assert_allclose(est.transform(rows), dense.transform(rows.toarray()), atol=1e-10)


def test_the_step_functions_on_the_centred_data_refuse_a_sparse_matrix_by_name():
    """vem_init and vem_iterations take the centred data Xc (dense by definition); gsppca_vem is the form
    for a sparse X."""
    X = sp.csr_matrix(_counts(40, 8))
    with pytest.raises(ValueError, match=r"'Xc' parameter of vem_init must be an instance of 'numpy"):
        repro.gsppca.vem_init(X, 1, np.random.default_rng(0))
