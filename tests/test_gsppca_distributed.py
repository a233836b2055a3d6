"""GSPPCA on a Dask array: the VEM from the scatter, the evidence path on the workers, and the whole fit on a
real dask.distributed cluster (two worker processes), persisted and not, against the in-memory fit and
without gathering X (the guard of tests/test_distributed.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from repro import GSPPCA, _chunked
from repro._chunked import DaskSource
from repro.gsppca import (
    evidence_path,
    gsppca_vem,
    make_globally_sparse,
    rank_variables,
    vem_init,
    vem_iterations,
)
from repro.gsppca.evidence import _dask_evidence_path
from repro.gsppca.vem import _vem_init_scatter

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import test_distributed as td  # noqa: E402

client = td.client  # a Client of the session's two-process LocalCluster (a fixture of this module too)
no_gather = td.no_gather

N, P, D, Q, CHUNK = 2400, 16, 2, 5, 600


def _data(seed=0):
    X, v = make_globally_sparse(N, P, D, Q, sigma=0.1, random_state=seed)
    return X * 3.0 + 2.0, v  # a mean to remove, a scale other than 1


def test_the_vem_from_the_scatter_follows_the_vem_on_the_data():
    X, _ = _data(0)
    Xc = X - X.mean(axis=0)
    n = X.shape[0]
    M0, s2 = vem_init(Xc, D, np.random.default_rng(0))
    M1, s21 = _vem_init_scatter(n, Xc.T @ Xc, D, np.random.default_rng(0))
    assert s21 == pytest.approx(s2, rel=1e-12)
    # the same start up to the signs of the eigenvectors (the VEM is equivariant in them): same Gram
    np.testing.assert_allclose(M1 @ M1.T, M0 @ M0.T, rtol=1e-9, atol=1e-12)
    alpha = float(np.mean(M0 * M0))
    a = vem_iterations(Xc, M0.copy(), np.ones(P), alpha, s2, 8, 0.0)
    b = vem_iterations(None, M0.copy(), np.ones(P), alpha, s2, 8, 0.0, scatter=(n, Xc.T @ Xc))
    for x, y, what in zip(a[:2], b[:2], ("u", "ratio"), strict=True):
        np.testing.assert_allclose(y, x, rtol=1e-9, atol=1e-12, err_msg=what)
    np.testing.assert_allclose(b[2], a[2], rtol=1e-8, atol=1e-12)  # M
    np.testing.assert_allclose(Xc @ b[3], a[3], rtol=1e-8, atol=1e-10)  # Mu = X G
    np.testing.assert_allclose(b[5:7], a[5:7], rtol=1e-9)  # alpha, sigma^2
    np.testing.assert_allclose(b[7], a[7], rtol=1e-11)  # the free energy of every iteration


def test_checkpoint_rankings_are_those_of_the_vem_stopped_there():
    X, _ = _data(1)
    est = GSPPCA(D, random_state=0).fit(X)
    assert est.ranking_evidence_[-1, 0] == est.n_iter_
    for it, best in est.ranking_evidence_:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = gsppca_vem(X, D, max_iter=int(it), random_state=0)
        order = rank_variables(res.u, res.u_ratio)
        path = evidence_path(X, order, n_components=D)
        assert path.log_evidence.max() == pytest.approx(best, rel=1e-12, abs=1e-9)
        if it == est.ranking_iter_:
            np.testing.assert_array_equal(order, est.ranking_)
            np.testing.assert_allclose(est.evidence_path_, path.log_evidence, rtol=1e-12)
    assert est.evidence_path_.max() == est.ranking_evidence_[:, 1].max()
    vem = GSPPCA(D, ranking="vem", random_state=0).fit(X)
    assert vem.ranking_iter_ == vem.n_iter_ and vem.ranking_evidence_.shape == (1, 2)
    np.testing.assert_array_equal(vem.ranking_, rank_variables(vem.u_, vem.vem_.u_ratio))
    with pytest.raises(ValueError, match=r"'ranking' parameter of GSPPCA must be a str among"):
        GSPPCA(D, ranking="best").fit(X)


@pytest.mark.usefixtures("client")
def test_the_evidence_path_on_the_workers_is_the_in_memory_one():
    Y = np.random.default_rng(2).integers(-5, 6, (N // 2, P)).astype(np.float64)
    Y[7, np.arange(P) != 3] = 0.0  # rows zero once centred: every model degenerate (-inf) ...
    X = np.vstack([Y, -Y])  # ... until variable 3 enters; column sums exactly 0, so the mean is exact
    Xc = X - X.mean(axis=0)
    order = np.r_[np.arange(4, P), np.arange(4)]
    s2 = 0.05
    ref = evidence_path(Xc, order, n_components=D, sigma1=np.sqrt(s2))
    Xd = da.from_array(X, chunks=(CHUNK, 5))  # feature chunks joined inside the tasks
    with no_gather():
        got = _dask_evidence_path(
            DaskSource(Xd, first_pass=False), N, X.mean(axis=0), np.einsum("ij,ij->j", Xc, Xc), order, D, s2
        )
    assert np.isneginf(ref.log_evidence[: P - 4]).all()
    np.testing.assert_array_equal(np.isneginf(got.log_evidence), np.isneginf(ref.log_evidence))
    ok = np.isfinite(ref.log_evidence)
    np.testing.assert_allclose(got.log_evidence[ok], ref.log_evidence[ok], rtol=1e-11)
    np.testing.assert_allclose(got.alpha[ok], ref.alpha[ok], rtol=1e-8)


@pytest.mark.parametrize("ranking", ["evidence", "vem"])
@pytest.mark.usefixtures("client")
def test_gsppca_fits_on_the_cluster_as_in_memory_without_gathering(ranking):
    X, v = _data(3)
    ref = GSPPCA(D, ranking=ranking, random_state=0).fit(X)
    np.testing.assert_array_equal(ref.support_, v)
    for kind, Xd in td._arrays(None, X, chunks=(CHUNK, P)).items():
        msg = f"{ranking}, {kind}"
        with no_gather():
            got = GSPPCA(D, ranking=ranking, random_state=0).fit(Xd)
            Z = got.transform(Xd)
            S = got.score_samples(Xd)
            mean_score = got.score(Xd)
        np.testing.assert_array_equal(got.support_, ref.support_, err_msg=msg)
        np.testing.assert_array_equal(got.ranking_[:Q], ref.ranking_[:Q], err_msg=msg)
        assert got.n_iter_ == ref.n_iter_ and got.ranking_iter_ == ref.ranking_iter_, msg
        np.testing.assert_allclose(got.u_, ref.u_, rtol=1e-6, atol=1e-8, err_msg=msg)
        np.testing.assert_allclose(got.evidence_path_, ref.evidence_path_, rtol=1e-9, err_msg=msg)
        np.testing.assert_allclose(got.ranking_evidence_, ref.ranking_evidence_, rtol=1e-9, err_msg=msg)
        np.testing.assert_allclose(got.alpha_path_, ref.alpha_path_, rtol=1e-6, err_msg=msg)
        assert got.sigma1_ == pytest.approx(ref.sigma1_, rel=1e-10), msg
        np.testing.assert_allclose(got.components_, ref.components_, rtol=1e-8, atol=1e-10, err_msg=msg)
        np.testing.assert_allclose(got.explained_variance_, ref.explained_variance_, rtol=1e-10, err_msg=msg)
        np.testing.assert_allclose(
            got.mean_, ref.mean_, rtol=1e-12, atol=1e-12 * np.abs(ref.mean_).max(), err_msg=msg
        )
        assert isinstance(got.vem_.Mu, da.Array), msg
        np.testing.assert_allclose(got.vem_.Mu.compute(), ref.vem_.Mu, rtol=1e-6, atol=1e-8, err_msg=msg)
        assert isinstance(Z, da.Array) and isinstance(S, da.Array) and isinstance(mean_score, da.Array), msg
        np.testing.assert_allclose(Z.compute(), ref.transform(X), rtol=1e-7, atol=1e-9, err_msg=msg)
        np.testing.assert_allclose(S.compute(), ref.score_samples(X), rtol=1e-9, err_msg=msg)
        assert float(mean_score.compute()) == pytest.approx(ref.score(X), rel=1e-9), msg


@pytest.mark.usefixtures("client")
def test_gsppca_on_dask_refuses_what_the_client_cannot_hold_and_bad_input(monkeypatch):
    X, _ = _data(4)
    Xd = da.from_array(X, chunks=(CHUNK, P))
    monkeypatch.setattr(_chunked, "CLIENT_LIMIT_BYTES", 8 * P * P - 1)
    with no_gather(), pytest.raises(ValueError, match=rf"X has {P} features: its {P} x {P} covariance"):
        GSPPCA(D).fit(Xd)
    monkeypatch.undo()
    with pytest.raises(ValueError, match=r"X has no variance"):
        GSPPCA(D).fit(da.ones((100, P), chunks=(50, P)))
    Xn = X.copy()
    Xn[1300, 2] = np.nan
    with pytest.raises(ValueError, match=r"X holds NaN \(1 entries, the first in row chunk 2\)"):
        GSPPCA(D).fit(da.from_array(Xn, chunks=(CHUNK, P)))
    with pytest.raises(ValueError, match=rf"n_components={P} is too large for X of shape .* at most {P - 1}"):
        GSPPCA(P).fit(Xd)


@pytest.mark.usefixtures("client")
def test_gsppca_on_dask_rescales_tiny_data_as_in_memory():
    X, _ = _data(5)
    X = X[:1200] * 2.0**-300  # rescaled: largest magnitude below 2^-256
    ref = GSPPCA(D, random_state=0).fit(X)
    with no_gather():
        got = GSPPCA(D, random_state=0).fit(da.from_array(X, chunks=(CHUNK, P)))
    np.testing.assert_array_equal(got.support_, ref.support_)
    np.testing.assert_allclose(got.evidence_path_, ref.evidence_path_, rtol=1e-9)
    np.testing.assert_allclose(
        got.explained_variance_ * 2.0**600, ref.explained_variance_ * 2.0**600, rtol=1e-9
    )
