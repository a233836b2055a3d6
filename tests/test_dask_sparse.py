"""Dask arrays of scipy.sparse chunks: read by row chunks, the centring implicit, never a dense array of more
than a row block, and equal to the in-memory CSR fit, on the session's two-process ``LocalCluster``
(persisted and not, from ``from_array(..., asarray=False)`` and from ``map_blocks`` producing CSR, whole
rows or column-chunked), without gathering ``X`` (the guard of tests/test_distributed.py)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from repro import EMPCA, GSPPCA, NSPCA, EMSparsePCA, SensiblePCA, SpannogramPCA, _chunked

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")

import test_distributed as td  # noqa: E402

client = td.client  # a Client of the session's two-process LocalCluster (a fixture of this module too)
no_gather = td.no_gather

N, P, CHUNK = 1600, 24, 400  # 4 row chunks


def _counts(seed=0, n=N, p=P):
    """log1p of Poisson counts, four correlated features, about 70% zeros."""
    rng = np.random.default_rng(seed)
    X = rng.poisson(0.3, size=(n, p)).astype(float)
    X[:, :4] += rng.poisson(1.5, size=(n, 1)) * (rng.random((n, 4)) < 0.6)
    return sp.csr_matrix(np.log1p(X))


def _to_csr(block):
    return sp.csr_matrix(block)


def _arrays(X):
    """The same sparse data as Dask arrays of CSR chunks: from the matrix (whole rows, and in feature
    chunks too), persisted on the workers, and built by map_blocks from dense chunks."""
    rows = da.from_array(X, chunks=(CHUNK, -1), asarray=False)
    persisted = rows.persist()
    distributed.wait(persisted)
    mapped = da.from_array(X.toarray(), chunks=(CHUNK, -1)).map_blocks(
        _to_csr, dtype=np.float64, meta=sp.csr_matrix((0, 0))
    )
    return {
        "rows": rows,
        "persisted": persisted,
        "columns": da.from_array(X, chunks=(CHUNK, 10), asarray=False),
        "map_blocks": mapped,
    }


# Fixed iteration counts where the method iterates over the data, as in tests/test_distributed.py, so the
# Dask fit follows the in-memory iterates exactly (to round-off). The reference is the in-memory CSR fit
# (NSPCA and the spannogram work on the p x p covariance, which the one pass over the sparse chunks forms).
FAMILIES = {
    "EMPCA": lambda: EMPCA(3, tol=0.0, max_iter=6, random_state=0),
    "EMPCA-k1": lambda: EMPCA(1, tol=0.0, max_iter=6, n_oversamples=0, random_state=0),
    "SensiblePCA": lambda: SensiblePCA(3, tol=0.0, max_iter=6, random_state=0),
    "EMSparsePCA": lambda: EMSparsePCA(2, cardinality=6, random_state=0),
    "EMSparsePCA-data": lambda: EMSparsePCA(
        1, cardinality=6, operator="data", n_restarts=1, max_iter=5, tol=1e-14, renormalize=False
    ),
    "SpannogramPCA": lambda: SpannogramPCA(2, cardinality=5, rank=2, net="exact", random_state=0),
    "NSPCA": lambda: NSPCA(2, alpha=1e6, beta=10.0, max_iter=100, random_state=0),
    "GSPPCA": lambda: GSPPCA(2, ranking="vem", random_state=0),
}


@pytest.mark.parametrize("name", list(FAMILIES))
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_sparse_chunks_fit_on_the_cluster_as_the_in_memory_csr(client, name):
    make = FAMILIES[name]
    X = _counts(1)
    ref = make().fit(X)
    for kind, Xd in _arrays(X).items():
        msg = f"{name}, {kind}"
        assert sp.issparse(Xd._meta), msg
        with no_gather():
            got = make().fit(Xd)
            Z = got.transform(Xd)
            S = got.score_samples(Xd) if hasattr(got, "score_samples") else None
        np.testing.assert_allclose(got.components_, ref.components_, rtol=1e-7, atol=1e-7, err_msg=msg)
        np.testing.assert_allclose(got.explained_variance_, ref.explained_variance_, rtol=1e-8, err_msg=msg)
        np.testing.assert_allclose(got.mean_, ref.mean_, rtol=1e-12, atol=1e-14, err_msg=msg)
        assert isinstance(Z, da.Array), msg
        np.testing.assert_allclose(Z.compute(), ref.transform(X), rtol=1e-6, atol=1e-6, err_msg=msg)
        if S is not None:
            assert isinstance(S, da.Array), msg
            np.testing.assert_allclose(S.compute(), ref.score_samples(X), rtol=1e-8, err_msg=msg)
        if name == "GSPPCA":
            np.testing.assert_array_equal(got.support_, ref.support_, err_msg=msg)
            np.testing.assert_allclose(got.evidence_path_, ref.evidence_path_, rtol=1e-9, err_msg=msg)
            assert isinstance(got.vem_.Mu, da.Array), msg
            np.testing.assert_allclose(got.vem_.Mu.compute(), ref.vem_.Mu, rtol=1e-6, atol=1e-8, err_msg=msg)


def test_the_passes_over_sparse_chunks_give_the_dense_sums(client):
    """The first pass, the products, the covariance pass and a pass of a chunk function that reads dense
    rows (the evidence path's, on densified row blocks of 7 rows) against the dense computation."""
    X = _counts(2)
    D = X.toarray()
    Xc = D - D.mean(axis=0)
    Q = np.linalg.qr(np.random.default_rng(0).standard_normal((P, 3)))[0]
    for kind, Xd in _arrays(X).items():
        with no_gather():
            src = _chunked.DaskSource(Xd)
            A, G = src.products(Q)
            n, mean, S = _chunked.dask_covariance(Xd)
            assert mean.shape == (P,)
            (M,) = src.map_sum(_chunked.gram_chunk, src.mean)
        assert src.n == N and not src.missing, kind
        np.testing.assert_allclose(src.mean, D.mean(axis=0), rtol=1e-13, atol=1e-15, err_msg=kind)
        np.testing.assert_allclose(src.ss, (Xc * Xc).sum(), rtol=1e-13, err_msg=kind)
        np.testing.assert_allclose(A, Xc.T @ (Xc @ Q), rtol=1e-11, atol=1e-10, err_msg=kind)
        np.testing.assert_allclose(G, (Xc @ Q).T @ (Xc @ Q), rtol=1e-11, atol=1e-10, err_msg=kind)
        assert n == N, kind
        np.testing.assert_allclose(S, Xc.T @ Xc, rtol=1e-11, atol=1e-10, err_msg=kind)
        np.testing.assert_allclose(M, Xc.T @ Xc, rtol=1e-11, atol=1e-10, err_msg=kind)


def _column_sums(Xb, cache):
    """A chunk function that reads dense rows (not in TAKES_SPARSE): its rows' count and column sums."""
    assert isinstance(Xb, np.ndarray) and Xb.shape[0] <= 7
    return float(Xb.shape[0]), Xb.sum(axis=0)


def test_other_chunk_functions_read_densified_row_blocks(monkeypatch):
    """A chunk function that reads dense arrays gets the rows of a sparse chunk densified a row block at a
    time (7 rows here), never the whole chunk; its results summed as the pass sums them."""
    X = _counts(3, n=100)
    monkeypatch.setattr(_chunked, "BLOCK_BYTES", 8 * P * 7)
    Xd = da.from_array(X, chunks=(40, -1), asarray=False)
    with dask.config.set(scheduler="synchronous"):
        rows, sums = _chunked.DaskSource(Xd, first_pass=False).map_sum(_column_sums)
    assert rows == 100
    np.testing.assert_allclose(sums, X.toarray().sum(axis=0), rtol=1e-13)


class _Guarded(sp.csr_matrix):
    """A CSR chunk that refuses to become a dense array of more than :data:`ROWS` rows."""

    ROWS = 0

    def toarray(self, *args, **kwargs):
        if self.shape[0] > _Guarded.ROWS:
            raise AssertionError(f"a dense copy of {self.shape[0]} rows of a sparse chunk was made")
        return super().toarray(*args, **kwargs)

    def __array__(self, *args, **kwargs):
        raise AssertionError("a sparse chunk was converted with np.asarray")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_no_dense_array_of_more_than_a_row_block_is_made():
    """Chunks of 3000 x 400 at 1% non-zero (a dense chunk: 9.6 MB), read in one process (the synchronous
    scheduler, so the guard is the chunk the functions get): no toarray of more than a row block of
    BLOCK_BYTES, and the peak of new memory of an EMPCA fit below one dense chunk."""
    rng = np.random.default_rng(0)
    n, p, rows = 12000, 400, 3000
    X = sp.random(n, p, density=0.01, format="csr", random_state=rng)
    _Guarded.ROWS = int(_chunked.BLOCK_BYTES // (8 * p))
    assert rows > _Guarded.ROWS
    parts = [
        da.from_delayed(dask.delayed(_Guarded)(X[i : i + rows]), shape=(rows, p), dtype=np.float64,
                        meta=sp.csr_matrix((0, 0)))
        for i in range(0, n, rows)
    ]  # fmt: skip
    Xd = da.concatenate(parts, axis=0)
    with dask.config.set(scheduler="synchronous"):
        ref = EMPCA(2, tol=0.0, max_iter=4, random_state=0).fit(X)
        got = EMPCA(2, tol=0.0, max_iter=4, random_state=0).fit(Xd)  # compiles, caches
        np.testing.assert_allclose(got.components_, ref.components_, atol=1e-10)
        tracemalloc.start()
        try:
            EMPCA(2, tol=0.0, max_iter=4, random_state=0).fit(Xd)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < rows * p * 8, f"peak {peak / 2**20:.1f} MiB"
        EMSparsePCA(1, cardinality=5, operator="covariance", random_state=0).fit(Xd)  # the scatter's blocks
        EMSparsePCA(  # the data route's chunk functions: on densified row blocks
            1, cardinality=5, operator="data", n_restarts=1, max_iter=3, renormalize=False
        ).fit(Xd)


def test_nan_and_inf_in_sparse_chunks_are_refused_saying_why(client):
    X = _counts(4)
    X.data[5] = np.nan
    Xd = da.from_array(X, chunks=(CHUNK, -1), asarray=False)
    with pytest.raises(ValueError, match=r"sparse chunks with NaN among the stored values.*dense input"):
        EMPCA(1).fit(Xd)
    with pytest.raises(ValueError, match=r"X holds NaN \(1 entries, the first in row chunk 0\)"):
        SpannogramPCA(1, cardinality=3).fit(Xd)
    X.data[5] = 1.0
    X.data[X.indptr[900]] = np.inf  # a stored entry of row 900, in chunk 2
    Xd = da.from_array(X, chunks=(CHUNK, -1), asarray=False)
    with pytest.raises(ValueError, match=r"X holds infinite values \(rows 900\)"):
        SensiblePCA(1).fit(Xd)
    with pytest.raises(ValueError, match=r"X holds infinite values \(1, the first in row chunk 2\)"):
        GSPPCA(1).fit(Xd)
