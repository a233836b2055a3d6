"""repro._chunked, the one data layer of the EM methods: Dask passes, the input policy, blocked dense data."""

import numpy as np
import pytest

from repro import _chunked
from repro._chunked import DaskSource, DenseSource, gram_chunk
from repro.em_pca import EMPCA, SensiblePCA
from repro.em_pca.sensible import _spca_em_loop, _spca_fast_loop
from repro.em_pca.solvers import _em_complete, _em_rank1
from repro.em_sparse_pca import EMSparsePCA

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

ESTIMATORS = {
    "EMPCA": lambda: EMPCA(2, tol=1e-10, random_state=0),
    "SensiblePCA": lambda: SensiblePCA(2, tol=1e-10, random_state=0),
    "EMSparsePCA": lambda: EMSparsePCA(1, cardinality=4, random_state=0),
}


def _data(seed, n=60, p=8, frac=0.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3)) @ rng.standard_normal((3, p)) * 2 + rng.standard_normal((n, p)) + 3.0
    if frac:
        X[rng.random(X.shape) < frac] = np.nan
    return X


def _fitted(est):
    return est.components_, est.explained_variance_, est.mean_


# --------------------------------------------------------------------------- DaskSource
def test_dask_source_passes_and_first_pass_statistics():
    X = _data(1, n=37, p=5, frac=0.15)
    obs = ~np.isnan(X)
    X0 = np.where(obs, X, 0.0)
    count = obs.sum(axis=0)
    mean = X0.sum(axis=0) / count
    m2 = (np.where(obs, X - mean, 0.0) ** 2).sum(axis=0)
    for chunks in [(10, 5), (37, 5), (8, 2), (1, 3)]:  # (8, 2), (1, 3): chunked along the features too
        src = DaskSource(da.from_array(X, chunks=chunks))
        assert (src.n, src.p, src.n_chunks) == (37, 5, len(range(0, 37, chunks[0])))
        assert sum(src.chunk_rows) == 37 and src.missing and src.n_missing == int((~obs).sum())
        np.testing.assert_allclose(src.obs_count, count)
        np.testing.assert_allclose(src.obs_mean, mean, rtol=1e-13, atol=1e-13 * np.abs(mean).max())
        np.testing.assert_allclose(src.obs_m2, m2, rtol=1e-12)
        (s,) = src.map_sum(lambda B, cache: (np.nansum(B, axis=0),))
        np.testing.assert_allclose(s, X0.sum(axis=0), rtol=1e-13, atol=1e-13 * np.abs(X0).sum(axis=0).max())
        rows = src.map_rows(lambda B: np.isnan(B).sum(axis=1))  # one entry per row, in row order
        np.testing.assert_array_equal(rows, (~obs).sum(axis=1))
    Xc = np.nan_to_num(X)
    src = DaskSource(da.from_array(Xc, chunks=(10, 2)))
    (G,) = src.map_sum(gram_chunk, src.mean)
    np.testing.assert_allclose(G / 36, np.cov(Xc, rowvar=False), atol=1e-12)


def test_dask_source_one_task_per_chunk_and_pass():
    X = _data(2, n=50, p=6)
    calls = []

    def fn(B, cache, c):
        calls.append(B.shape)
        return (B.sum(axis=0) * c,)

    with dask.config.set(scheduler="synchronous"):
        src = DaskSource(da.from_array(X, chunks=(12, 4)))  # 5 row chunks, 2 feature chunks
        for c in (1.0, 2.0):
            calls.clear()
            (s,) = src.map_sum(fn, c)
            np.testing.assert_allclose(s, c * X.sum(axis=0))
            assert sorted(calls) == [(2, 6)] + [(12, 6)] * 4  # whole rows, each chunk once


def test_dask_unknown_chunk_sizes_are_learnt_in_the_first_pass():
    X = _data(3, n=40, p=6)
    Xd = da.from_array(X, chunks=(10, 3))
    keep = X[:, 0] > X[:, 0].mean()
    sub = Xd[Xd[:, 0] > X[:, 0].mean()]
    assert any(np.isnan(c) for c in sub.chunks[0])
    src = DaskSource(sub)
    assert src.n == keep.sum() and sum(src.chunk_rows) == keep.sum()
    ref = X[keep].mean(axis=0)
    np.testing.assert_allclose(src.mean, ref, rtol=1e-13, atol=1e-13 * np.abs(ref).max())
    assert any(np.isnan(c) for c in sub.chunks[0])  # the caller's array is left as it was


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_dask_input_policy_is_the_same_for_every_estimator(name):
    make = ESTIMATORS[name]
    X = _data(4)
    ref = _fitted(make().fit(X))
    # unknown chunk sizes: learnt in the first pass; chunks along the features: joined per task
    Xd = da.from_array(X, chunks=(16, 3))
    sub = Xd[Xd[:, 0] > -np.inf]
    for arr in (sub, Xd):
        for got, want in zip(_fitted(make().fit(arr)), ref, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    # integer, boolean and float32 dtypes: cast to float64, as in memory
    for Xt in (np.round(X * 4).astype(np.int32), X > 3.0, X.astype(np.float32)):
        want = _fitted(make().fit(Xt))
        got = _fitted(make().fit(da.from_array(Xt, chunks=(16, 8))))
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9)
    # complex and object dtypes: refused, naming the argument and the fix
    with pytest.raises(ValueError, match=r"X is a Dask array of dtype complex128.*X.astype\('float64'\)"):
        make().fit(da.from_array(X + 1j, chunks=(16, 8)))
    with pytest.raises(ValueError, match=r"X is a Dask array of dtype object.*X.astype\('float64'\)"):
        make().fit(da.from_array(X.astype(object), chunks=(16, 8)))
    with pytest.raises(ValueError, match="2-D"):
        make().fit(da.from_array(X[:, 0], chunks=10))
    with pytest.raises(ValueError, match=r"X has an unknown number of features.*compute_chunk_sizes"):
        make().fit(Xd[:, Xd[0] > 0])
    Xm = X.copy()
    Xm[[5, 33]] = np.nan
    for arr in (Xm, da.from_array(Xm, chunks=(16, 8))):  # in memory and Dask: one wording
        with pytest.raises(ValueError, match=r"X has row\(s\) 5, 33 with every entry missing"):
            make().fit(arr)
    Xm = X.copy()
    Xm[:, 6] = np.nan
    for arr in (Xm, da.from_array(Xm, chunks=(16, 8))):
        with pytest.raises(ValueError, match=r"X has column\(s\) 6 with every entry missing"):
            make().fit(arr)
    with pytest.raises(ValueError, match=r"X has 1 sample\(s\)"):
        make().fit(da.from_array(X[:1], chunks=(1, 8)))


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_transform_and_score_read_dask_input_chunk_by_chunk(name):
    X = _data(5, frac=0.1)
    est = ESTIMATORS[name]().fit(X)
    Xd = da.from_array(X, chunks=(7, 3))
    np.testing.assert_allclose(est.transform(Xd), est.transform(X), rtol=1e-12, atol=1e-12)
    if name == "SensiblePCA":
        np.testing.assert_allclose(est.score_samples(Xd), est.score_samples(X), rtol=1e-12)
        assert est.score(Xd) == pytest.approx(est.score(X), rel=1e-12)


def test_sensible_pca_and_sparse_em_with_missing_values_equal_in_memory_on_several_chunkings():
    X = _data(6, n=90, p=10, frac=0.15)
    spca = SensiblePCA(2, tol=1e-10, random_state=0).fit(X)
    sparse = EMSparsePCA(2, cardinality=4, random_state=0).fit(X)
    for chunks in [(90, 10), (13, 10), (25, 4)]:
        Xd = da.from_array(X, chunks=chunks)
        d = SensiblePCA(2, tol=1e-10, random_state=0).fit(Xd)
        np.testing.assert_allclose(d.get_covariance(), spca.get_covariance(), atol=1e-9)
        assert d.n_iter_ == spca.n_iter_
        e = EMSparsePCA(2, cardinality=4, random_state=0).fit(Xd)
        np.testing.assert_allclose(e.components_, sparse.components_, atol=1e-9)
        np.testing.assert_allclose(e.explained_variance_, sparse.explained_variance_, rtol=1e-9)


# --------------------------------------------------------------------------- in memory: copy or blocks
def test_large_dense_data_are_walked_by_blocks_with_the_same_iterates(monkeypatch):
    rng = np.random.default_rng(7)
    X = rng.standard_normal((203, 12)) * np.linspace(4.0, 0.5, 12) + 10.0
    copy = DenseSource(X)
    monkeypatch.setattr(_chunked, "COPY_LIMIT_BYTES", 0)
    monkeypatch.setattr(_chunked, "BLOCK_BYTES", 8 * 12 * 17)  # blocks of 17 rows, the last one ragged
    blocked = DenseSource(X)
    assert copy.Y is not None and blocked.Y is None and blocked.blocked and blocked.block_rows == 17
    assert blocked.ss == pytest.approx(copy.ss, rel=1e-13)
    Q = np.linalg.qr(rng.standard_normal((12, 3)))[0]
    for a, b in zip(blocked.products(Q), copy.products(Q), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    c0 = rng.standard_normal((12, 4))
    for loop in (
        lambda s: _em_rank1(s, c0[:, 0], 25, 0.0, None),
        lambda s: _em_complete(s, c0[:, :2], 25, 0.0, None),
        lambda s: _em_complete(s, c0, 25, 0.0, None, 2, single=False),  # oversampled, float64 passes only
        lambda s: _spca_em_loop(s, c0[:, :2], 1.0, 25, 0.0, None, 1e-12),
        lambda s: _spca_fast_loop(s, c0[:, :2], 2, 25, 0.0, None, 1e-12),
    ):
        ra, rb = loop(blocked), loop(copy)
        ha, hb = ra[-1], rb[-1]
        assert ha.keys() == hb.keys()
        for key in ha:
            np.testing.assert_allclose(ha[key], hb[key], rtol=1e-10, atol=1e-12, err_msg=key)
        np.testing.assert_allclose(ra[0], rb[0], rtol=1e-9, atol=1e-10)
    # the estimators see the same (no copy above the threshold): Roweis' iteration iterate by iterate; the
    # oversampled default on blocks makes its early passes in float32, its last two in float64, so the
    # same answer to tol
    for s in (0, "auto"):
        monkeypatch.setattr(_chunked, "COPY_LIMIT_BYTES", 0)
        a = EMPCA(3, tol=1e-10, random_state=0, n_oversamples=s).fit(X)
        monkeypatch.setattr(_chunked, "COPY_LIMIT_BYTES", 64 * 2**20)
        b = EMPCA(3, tol=1e-10, random_state=0, n_oversamples=s).fit(X)
        np.testing.assert_allclose(a.components_, b.components_, atol=1e-10)
        np.testing.assert_allclose(a.explained_variance_, b.explained_variance_, rtol=1e-12)
        assert a.n_iter_ == b.n_iter_ if s == 0 else abs(a.n_iter_ - b.n_iter_) <= 2


def test_float64_products_of_blocks_take_small_matrix_blocks(monkeypatch):
    """The float64 passes multiply blocks of ``SMALL_PRODUCT_SIZE // (p k)`` rows (the buffer's blocks where
    that is below ``SMALL_PRODUCT_MIN_ROWS``): the same products as the centred copy, ragged last block
    included, and Roweis' iteration iterate by iterate."""
    rng = np.random.default_rng(8)
    X = rng.standard_normal((203, 12)) * np.linspace(4.0, 0.5, 12) + 10.0
    Y = X - X.mean(axis=0)
    monkeypatch.setattr(_chunked, "COPY_LIMIT_BYTES", 0)
    monkeypatch.setattr(_chunked, "BLOCK_BYTES", 8 * 12 * 40)  # buffer of 40 rows
    monkeypatch.setattr(_chunked, "SMALL_PRODUCT_SIZE", 12 * 3 * 6)  # 6 rows at k = 3: 33 blocks + 5 rows
    monkeypatch.setattr(_chunked, "SMALL_PRODUCT_MIN_ROWS", 4)
    src = DenseSource(X)
    assert src.block_rows == 40 and src.product_rows(3) == 6 and src.product_rows(1) == 18
    assert src.product_rows(5) == 40  # 216 // 60 = 3 rows is below the minimum: the buffer's blocks
    calls = []
    blocks = src._blocks

    def spy(step=None):
        for Yb in blocks(step):
            calls.append(Yb.shape[0])
            yield Yb

    monkeypatch.setattr(src, "_blocks", spy)
    for k, rows in ((3, 6), (5, 40)):
        Q = np.linalg.qr(rng.standard_normal((12, k)))[0]
        calls.clear()
        A, G = src.products(Q)
        assert calls == [rows] * (203 // rows) + [203 % rows]
        np.testing.assert_allclose(A, Y.T @ (Y @ Q), rtol=1e-12, atol=1e-12 * np.abs(A).max())
        np.testing.assert_allclose(G, (Y @ Q).T @ (Y @ Q), rtol=1e-12, atol=1e-12 * np.abs(G).max())
        calls.clear()
        np.testing.assert_allclose(src.gram(Q), G, rtol=1e-12, atol=1e-12 * np.abs(G).max())
        assert calls == [rows] * (203 // rows) + [203 % rows]
    # Roweis' iteration (k = 3, no oversampling): the iterates of the centred copy
    a = EMPCA(3, tol=1e-10, random_state=0, n_oversamples=0).fit(X)
    monkeypatch.setattr(_chunked, "COPY_LIMIT_BYTES", 64 * 2**20)
    b = EMPCA(3, tol=1e-10, random_state=0, n_oversamples=0).fit(X)
    assert a.n_iter_ == b.n_iter_
    np.testing.assert_allclose(a.components_, b.components_, atol=1e-10)
    np.testing.assert_allclose(a.explained_variance_, b.explained_variance_, rtol=1e-12)


def test_sparse_em_covariance_of_a_dask_array_respects_the_client_limit(monkeypatch):
    X = _data(8, n=80, p=9)
    Xd = da.from_array(X, chunks=(20, 9))
    want = EMSparsePCA(2, cardinality=4, operator="data", renormalize=False, random_state=0).fit(X)
    monkeypatch.setattr(_chunked, "CLIENT_LIMIT_BYTES", 8 * 9 * 9 - 1)
    with pytest.raises(ValueError, match=r"X has 9 features: its 9 x 9 covariance.*fewer features"):
        EMSparsePCA(2, cardinality=4, operator="covariance", random_state=0).fit(Xd)
    # "auto" would pick the covariance; above the limit it iterates on the chunks instead
    got = EMSparsePCA(2, cardinality=4, operator="auto", renormalize=False, random_state=0).fit(Xd)
    np.testing.assert_allclose(got.components_, want.components_, atol=1e-9)
    np.testing.assert_allclose(got.explained_variance_, want.explained_variance_, rtol=1e-9)
