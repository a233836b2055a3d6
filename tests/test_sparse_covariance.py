"""scipy.sparse input to the methods that work on the ``p x p`` covariance (NSPCA, the spannogram): the
scatter from the stored entries and densified row blocks equals the dense centred scatter (no cancellation
about a large mean), the fits, function forms, ``transform`` and ``score`` equal the dense ones in every
format, and bad sparse input gets the dense path's errors. That no dense copy of X is made is checked by
tests/test_sparse.py's ``test_no_dense_copy_of_x_is_made`` (its guard matrix and peak), which lists them."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from test_sparse import FORMATS, _counts

import repro
from repro import NSPCA, SpannogramPCA, nspca_for_cardinality
from repro._sparse import centred_scatter

FORMATS = {**FORMATS, "csc_array": sp.csc_array}


def _close(a, b, rtol=1e-10):
    """Equal to round-off relative to the quantity's magnitude (sums of a few hundred products)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * float(np.max(np.abs(b), initial=0.0)))


# --------------------------------------------------------------------------- the scatter
@pytest.mark.parametrize("fmt", ["csr", "coo", "csc_array"])
def test_the_scatter_is_the_dense_centred_scatter(fmt):
    """``Xc'Xc`` of a sparse X against the dense product, with a column about a mean of 1e6 of unit
    spread (there ``X'X - n mu mu'`` is off by 3e-3 relative), and its means."""
    D = _counts(90, 7, density=0.6)
    D[:, 2] += 1e6  # a column that stores every entry, far from the origin
    X, n, mean, A = centred_scatter(FORMATS[fmt](D), "NSPCA")
    Dc = D - D.mean(axis=0)
    assert n == 90 and X.format in ("csr", "csc")
    _close(mean, D.mean(axis=0), rtol=1e-14)
    _close(A, Dc.T @ Dc, rtol=1e-12)
    np.testing.assert_array_equal(A, A.T)


# --------------------------------------------------------------------------- equal to the dense fits
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_nspca_equals_the_dense_fit(fmt):
    D = _counts(150, 10)
    S = FORMATS[fmt](D)
    ref = NSPCA(2, alpha=1e3, beta=1.0, random_state=0).fit(D)
    est = NSPCA(2, alpha=1e3, beta=1.0, random_state=0).fit(S)
    assert est.n_iter_ == ref.n_iter_ and est.converged_
    for name in ("components_", "U_", "explained_variance_", "objective_", "mean_"):
        _close(getattr(est, name), getattr(ref, name))
    _close(est.transform(FORMATS[fmt](D[:20])), ref.transform(D[:20]))
    w = 1.0 + np.arange(150) % 3
    assert est.score(S, sample_weight=w) == pytest.approx(ref.score(D, sample_weight=w), rel=1e-10)


def test_the_nspca_functions_equal_the_dense_ones():
    D = _counts(120, 9)
    S = sp.csr_matrix(D)
    a = repro.nspca(S, 2, alpha=1e3, beta=0.5, random_state=0)
    b = repro.nspca(D, 2, alpha=1e3, beta=0.5, random_state=0)
    _close(a.U, b.U)
    U = np.abs(np.random.default_rng(0).standard_normal((9, 2)))
    ob = repro.nspca_objective(D, U, alpha=10.0, beta=0.5)
    assert repro.nspca_objective(S, U, alpha=10.0, beta=0.5) == pytest.approx(ob, rel=1e-10)
    a = nspca_for_cardinality(S, 6, alpha=1e3, random_state=0)
    b = nspca_for_cardinality(D, 6, alpha=1e3, random_state=0)
    assert a.beta == pytest.approx(b.beta, rel=1e-10) and np.count_nonzero(a.U) == 6
    _close(a.U, b.U)


@pytest.mark.parametrize(
    "params",
    [
        {"n_components": 2, "cardinality": 3, "n_samples": 500},
        {"n_components": 2, "cardinality": 4, "nonneg": False, "deflation": "mackey", "n_samples": 500},
        {"n_components": 1, "cardinality": 3, "rank": 2, "net": "exact"},
    ],
    ids=["remove", "mackey-signed", "exact"],
)
@pytest.mark.parametrize("fmt", ["csr", "coo", "csc_array"])
def test_spannogram_pca_equals_the_dense_fit(fmt, params):
    D = _counts(160, 12)
    S = FORMATS[fmt](D)
    ref = SpannogramPCA(random_state=0, **params).fit(D)
    est = SpannogramPCA(random_state=0, **params).fit(S)
    _close(est.components_, ref.components_)
    np.testing.assert_array_equal(est.n_nonzero_, ref.n_nonzero_)
    for name in ("explained_variance_", "upper_bound_", "mean_"):
        _close(getattr(est, name), getattr(ref, name))
    _close(est.transform(S), ref.transform(D))
    assert est.score(S) == pytest.approx(ref.score(D), rel=1e-10)


def test_the_spannogram_functions_equal_the_dense_ones():
    D = _counts(100, 10)
    S = sp.csc_matrix(D)
    a = repro.spannogram_path(S, [2, 4], n_samples=300, random_state=0)
    b = repro.spannogram_path(D, [2, 4], n_samples=300, random_state=0)
    _close(a.components, b.components)
    _close(a.upper_bound, b.upper_bound)
    (xa, va), (xb, vb) = repro.spannogram_exact(S, 3), repro.spannogram_exact(D, 3)
    _close(xa, xb)
    assert va == pytest.approx(vb, rel=1e-10)


def test_badly_scaled_sparse_data_are_fitted_as_x_over_s():
    D = _counts(100, 8)
    for scale in (1e-150, 1e150):
        ref = SpannogramPCA(cardinality=3, n_samples=300, random_state=0).fit(D * scale)
        est = SpannogramPCA(cardinality=3, n_samples=300, random_state=0).fit(sp.csr_matrix(D) * scale)
        _close(est.components_, ref.components_)
        _close(est.explained_variance_, ref.explained_variance_)
        _close(est.mean_, ref.mean_)


# --------------------------------------------------------------------------- bad input: the dense errors
def _message(call, X):
    with pytest.raises(ValueError) as info:
        call(X)
    return str(info.value)


CALLS = {
    "NSPCA": lambda X: NSPCA(1, alpha=10.0).fit(X),
    "nspca": lambda X: repro.nspca(X, 1, alpha=10.0),
    "SpannogramPCA": lambda X: SpannogramPCA(1, cardinality=2).fit(X),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_bad_sparse_input_gets_the_dense_errors(name):
    """Too few samples, no rows, no columns, no variance: the message of the dense path word for word
    (the shape in it aside); NaN among the stored values and infinite values: refused with the reason."""
    call = CALLS[name]
    for D in (np.ones((1, 4)), np.empty((0, 4)), np.empty((5, 0)), np.zeros((10, 4)), np.full((10, 3), 0.1)):
        assert _message(call, sp.csr_matrix(D)) == _message(call, D)
    X = sp.csr_matrix(_counts(40, 6))
    X.data[3] = np.nan
    assert "NaN among its stored values" in _message(call, X)
    X.data[3] = np.inf
    assert "infinite values" in _message(call, X)
    with pytest.raises(ValueError, match="must be 2-D"):
        call(sp.coo_array(np.ones(5)))


def test_nspca_refuses_an_overflowing_scatter_as_for_dense_data():
    D = _counts(30, 4) * 1e300
    assert _message(CALLS["NSPCA"], sp.csr_matrix(D)) == _message(CALLS["NSPCA"], D)


def test_transform_and_score_check_the_columns_of_sparse_rows():
    X = sp.csr_matrix(_counts(50, 6))
    for est in (NSPCA(1, alpha=10.0).fit(X), SpannogramPCA(1, cardinality=2).fit(X)):
        with pytest.raises(ValueError, match="6 features"):
            est.transform(sp.csr_matrix(np.ones((3, 5))))
        with pytest.raises(ValueError, match="6 features"):
            est.score(sp.csr_matrix(np.ones((3, 5))))
