"""The one data layer of the EM methods: in memory, row blocks, and Dask arrays.

Every EM iteration (Roweis 1997; Sigg & Buhmann 2008) is one pass over the rows of the data followed by
small work: the pass produces sums over rows (``Y'YQ`` and ``(YQ)'(YQ)`` for complete data; for missing
values the e-step per row and the sums of the m-step). A *source* runs a chunk function ``fn(chunk, cache,
*args)`` on each row chunk and adds up the tuples it returns (:meth:`map_sum`), so each iteration is written
once (in :mod:`repro.em_pca` and :mod:`repro.em_sparse_pca`, beside their methods) and runs on:

* :class:`DenseSource`, an in-memory array. Complete data up to :data:`COPY_LIMIT_BYTES` (64 MiB) are
  centred once into a copy (fastest: two BLAS products per pass); larger arrays are never copied: each
  pass centres one row block of about :data:`BLOCK_BYTES` (4 MiB) at a time into a buffer and does the two
  products on it, so the memory overhead is one block (a 1e6 x 1e3 float64 array would otherwise need
  another 8 GB). With missing values the completed data are kept between passes (``cache``), so the
  e-step starts from the previous fills.
* :class:`BlockSource`, row blocks produced again by a callable for every pass (``fit_blocks``).
* :class:`repro._sparse.SparseSource`, a scipy sparse matrix (CSR or CSC), its centring implicit in the
  products (``Y Q = X Q - 1 (mu' Q)``), never densified.
* :class:`DaskSource`, a ``dask.array`` (and so anything Dask wraps: ``numpy.memmap``, Zarr, HDF5), on any
  scheduler (threads, processes, a ``dask.distributed`` cluster; the array persisted or not). A pass is
  built on Dask's public API only: the array's blocks as ``dask.delayed`` objects (``X.to_delayed()``,
  taken once), one task per row chunk that loads it and runs the chunk function (e-step and accumulation
  together), and a tree of small tasks adding the results, run by ``dask.compute``. When the array is
  persisted on a ``distributed`` cluster (its blocks are futures), a summing pass has one task per worker
  thread instead, over the chunks that worker holds (``Client.who_has``, asked once per source), adding
  its chunks' results as it goes: 16 chunks on 2 one-thread workers make 3 tasks, not 19 (fewer
  scheduler round trips per pass, which a cluster adds to the work of a pass). The data stay where
  the scheduler keeps them (on a cluster: on the workers); only the small sums of a pass reach the
  client. One pass over the data per EM iteration; memory bounded by the chunks in flight plus the small
  sums. Used by ``EMPCA``, ``SensiblePCA`` and ``EMSparsePCA`` (fit, the covariance formation and the
  cardinality path); transform and score of a Dask array return a Dask array
  (:meth:`DaskSource.map_rows`).

The covariance-based estimators (``NSPCA``, ``SpannogramPCA``) and their function forms (``nspca``,
``nspca_objective``, ``nspca_for_cardinality``, ``nspca_for_min_angle``, ``spannogram_exact``,
``spannogram_path``, ``spannogram_bound``) form the column means and the ``p x p`` scatter matrix of a
Dask array in one distributed pass (:func:`dask_covariance`; refused above
:data:`CLIENT_LIMIT_BYTES` on the client); ``GSPPCA`` takes that scatter for its VEM and evaluates its exact
evidence in passes over the row chunks; no estimator converts a Dask array to NumPy on the client.

The first pass of every source computes the per-column counts, means and centred sums of squares over the
observed entries (Chan, Golub & LeVeque's pairwise update, so no cancellation) and checks the missing-value
pattern: a row or a column without any observed entry, and infinite entries, are refused naming them
(:func:`check_observed`, the same wording for every estimator and source).

Dask input policy (one for every estimator): the array must be 2-D; integer and boolean dtypes are cast to
float64 chunk by chunk, as ``numpy.asarray(X, float64)`` does for in-memory input (floating dtypes too);
complex, object, string and datetime dtypes are refused with the fix (``X.astype('float64')``, or
``X.real``); chunks along the features are joined inside the task that loads a row chunk (each task needs
whole rows; no ``rechunk`` layer); unknown chunk sizes (after boolean indexing) are learnt in the first pass
(which reads every chunk anyway), so they cost no extra pass; an unknown number of features is refused
(the chunk functions need it).

Chunks that are scipy sparse matrices stay sparse (:mod:`repro._sparse_chunks`): a row chunk is loaded as
one CSR matrix (feature chunks joined by ``scipy.sparse.hstack`` in the loading task, never densified); the
chunk functions of :data:`TAKES_SPARSE` (first pass, products, scatter) read it with the centring implicit,
every other one gets its rows densified one block of :data:`BLOCK_BYTES` at a time. NaN among the stored
values is refused (the entries not stored are zeros, not missing values).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval, validate_params

from ._sparse import CentredSparse, SparseSource
from ._sparse_chunks import (
    blocks_call,
    load_sparse,
    max_abs_chunk,
    sparse_first_pass,
    sparse_moments,
    sparse_products,
)
from ._validation import _head, is_dask, is_sparse

__all__ = [
    "BLOCK_BYTES",
    "CLIENT_LIMIT_BYTES",
    "COPY_LIMIT_BYTES",
    "BlockSource",
    "DaskSource",
    "DenseSource",
    "SparseSource",
    "as_source",
    "check_client_matrix",
    "check_dask_array",
    "check_observed",
    "client_fits",
    "compute",
    "dask_covariance",
    "is_dask",
]

#: Complete in-memory data up to this size (bytes) are centred once into a copy; larger ones are centred
#: one row block at a time in every pass (no copy). 64 MiB: below it the copy costs little memory and saves
#: the per-block work; above it the copy would double the memory of the fit.
COPY_LIMIT_BYTES = 64 * 2**20
#: The float32 covariance (:meth:`DenseSource.covariance32`, ``n p^2 / 2`` multiply-adds in ``syrk``) costs
#: about ``p / (COVARIANCE_PASS_RATIO k)`` float32 passes at ``k`` columns (two skinny products, ``2 n p k``
#: multiply-adds at about half the rate of ``syrk``): measured 6.7 passes at 50000 x 1000, k = 20.
COVARIANCE_PASS_RATIO = 8.0
#: Largest ``p`` for which the float32 covariance is offered (a p x p float64 matrix: 128 MiB).
COVARIANCE_MAX_FEATURES = 4096
#: float32 ``syrk`` results summed in float32 over this many blocks, then added in float64.
COVARIANCE_FLUSH = 8
#: Size (bytes) of the row blocks of a large in-memory array: a few MiB, so a block stays in cache between
#: its two products.
BLOCK_BYTES = 4 * 2**20
#: The float64 products of a pass over row blocks (:meth:`DenseSource.products`, :meth:`DenseSource.gram`)
#: take blocks of ``SMALL_PRODUCT_SIZE // (p k)`` rows (when that is at least
#: :data:`SMALL_PRODUCT_MIN_ROWS`), so that ``rows x p x k`` of each product stays at most 100^3: OpenBLAS
#: multiplies such products with its small-matrix kernels, which on the CPUs measured (SkylakeX kernels,
#: one thread) make a skinny product of 10-20 columns about 1.6x faster than its general GEMM. Measured at
#: 200000 x 1000 (bench_em_scale's pass, 1 BLAS thread): a float64 pass costs 0.63-0.71x the two products
#: over the whole array at k = 10 in blocks of 48-96 rows, 1.0-1.15x in blocks of 128-524 (4 MiB); at
#: k = 20, 0.72x in blocks of 48 rows, 1.0-1.1x in blocks of 64 and more.
SMALL_PRODUCT_SIZE = 100**3
SMALL_PRODUCT_MIN_ROWS = 16


def check_observed(name: str, empty_rows, count) -> None:
    """Refuse rows and columns without any observed (non-NaN) entry, naming them.

    ``empty_rows``: indices of the rows with every entry missing; ``count``: observed entries per column.
    The one wording of every estimator and source.
    """
    empty_rows = np.asarray(empty_rows)
    if empty_rows.size:
        raise ValueError(
            f"{name} has row(s) {_head(empty_rows)} with every entry missing (NaN); drop them, they carry no "
            f"information (e.g. {name}[~np.isnan({name}).all(axis=1)])."
        )
    cols = np.flatnonzero(np.asarray(count) == 0)
    if cols.size:
        raise ValueError(
            f"{name} has column(s) {_head(cols)} with every entry missing (NaN); their mean and loadings "
            "cannot be estimated: drop them."
        )


# --------------------------------------------------------------------------- first pass
def first_pass_chunk(Xb, offset: int = 0):
    """Per-column statistics over observed entries of one chunk, and its rows without any observed entry.

    Returns ``(n_rows, count, mean, m2, empty_rows, inf_rows, n_missing)``; row indices are
    ``offset + local index``.
    """
    Xb = np.asarray(Xb, dtype=np.float64)
    n_b = Xb.shape[0]
    inf = np.isinf(Xb)
    if inf.any():  # refused after the pass, naming the rows; keep the statistics finite meanwhile
        Xb = np.where(inf, 0.0, Xb)
    inf_rows = (np.flatnonzero(inf.any(axis=1)) + offset) if inf.any() else np.empty(0, np.int64)
    mask = np.isnan(Xb)
    n_missing = int(mask.sum())
    if n_missing:
        count = (n_b - mask.sum(axis=0)).astype(np.float64)
        s = np.where(mask, 0.0, Xb).sum(axis=0)
        mean = np.divide(s, count, out=np.zeros_like(s), where=count > 0)
        D = np.where(mask, 0.0, Xb - mean)
        empty = np.flatnonzero(mask.all(axis=1)) + offset
    else:
        count = np.full(Xb.shape[1], float(n_b))
        mean = Xb.mean(axis=0) if n_b else np.zeros(Xb.shape[1])
        D = Xb - mean
        empty = np.empty(0, np.int64)
    m2 = np.einsum("ij,ij->j", D, D)
    return n_b, count, mean, m2, empty, inf_rows, n_missing


def _first_pass_task(Xb, cache):
    if is_sparse(Xb):
        return sparse_first_pass(Xb)
    return first_pass_chunk(Xb, 0)


class _Stats:
    """Merged first-pass statistics (Chan et al. pairwise update, per column)."""

    def __init__(self, p: int):
        self.n = 0
        self.count = np.zeros(p)
        self.mean = np.zeros(p)
        self.m2 = np.zeros(p)
        self.empty: list[np.ndarray] = []
        self.inf: list[np.ndarray] = []
        self.n_missing = 0

    def add(self, part, shift: int = 0) -> None:
        """Merge one chunk's statistics; ``shift`` is added to its row indices."""
        n_b, count, mean, m2, empty, inf_rows, n_missing = part
        tot = self.count + count
        safe = np.maximum(tot, 1.0)
        with np.errstate(invalid="ignore", over="ignore"):  # infinite entries are refused in finish()
            delta = mean - self.mean
            self.m2 += m2 + delta * delta * (self.count * count / safe)
            self.mean += delta * (count / safe)
        self.count = tot
        self.n += n_b
        self.empty.append(np.asarray(empty) + shift)
        self.inf.append(np.asarray(inf_rows) + shift)
        self.n_missing += n_missing

    def finish(self, source, name: str) -> None:
        inf = np.concatenate(self.inf) if self.inf else np.empty(0)
        if inf.size:
            raise ValueError(f"{name} holds infinite values (rows {_head(inf)}); remove or replace them.")
        source.n, source.p = self.n, self.count.size
        source.missing = self.n_missing > 0
        source.n_missing = self.n_missing
        if source.missing:
            check_observed(name, np.concatenate(self.empty), self.count)
        source.obs_count = self.count
        source.obs_mean = self.mean
        source.obs_m2 = self.m2
        source.mean = self.mean.copy()
        source.ss = float(self.m2.sum())


# --------------------------------------------------------------------------- chunk functions
def gram_chunk(Xb, cache, mean):
    """``(Y'Y,)`` of one chunk centred at ``mean`` (the covariance formed in one pass); a scipy sparse
    chunk from its row blocks densified and centred one at a time (:meth:`CentredSparse.gram`)."""
    if is_sparse(Xb):
        return (CentredSparse(Xb, mean, 1.0).gram(),)
    Yb = np.asarray(Xb, dtype=np.float64) - mean
    return (Yb.T @ Yb,)


def products_chunk(Xb, cache, mean, Q):
    """``(Y'YQ, (YQ)'(YQ))`` of one chunk, centred with ``mean`` (None: already centred); a scipy sparse
    chunk with the centring implicit (``Y Q = X Q - 1 (mean' Q)``, :class:`repro._sparse.CentredSparse`)."""
    if is_sparse(Xb):
        return sparse_products(Xb, mean, Q)
    Yb = np.asarray(Xb, dtype=np.float64)
    if mean is not None:
        Yb = Yb - mean
    U = Yb @ Q
    return Yb.T @ U, U.T @ U


def _add(total, part):
    if total is None:
        return [np.array(v, dtype=np.float64) if np.ndim(v) else float(v) for v in part]
    for i, v in enumerate(part):
        total[i] = total[i] + v
    return total


def _sum_parts(parts):
    """The reduction of a pass: the chunk results (tuples of arrays or floats) added in chunk order."""
    total = None
    for part in parts:
        total = _add(total, part)
    return total


def _single_scale(ss: float) -> float:
    """The power of two ``s`` that float32 passes divide the centred data by, from ``ss = ||Y||_F^2``.

    1 for ``ss`` in ``[2^-60, 2^100]``: no float32 product of ``Y``, ``YQ``, ``Y'YQ`` or ``Y'Y`` (``Q``
    orthonormal) can then overflow, and entries below float32's normal range carry under ``2^-150`` of
    the variance. Otherwise a power of two at least ``sqrt(ss)``: every such product is then at most 1
    in magnitude. Dividing by a power of two is exact, so the iterates are those of the unscaled data
    wherever neither overflows nor underflows."""
    if 2.0**-60 <= ss <= 2.0**100:
        return 1.0
    return 2.0 ** math.frexp(math.sqrt(ss))[1]


# --------------------------------------------------------------------------- sources
class DenseSource:
    """An in-memory array.

    Complete data: up to :data:`COPY_LIMIT_BYTES` (read at construction) they are centred once into a copy
    ``Y`` and a pass is two BLAS products over it; above, ``Y`` is None and every pass walks row blocks of
    :data:`BLOCK_BYTES`, centring each into one buffer before its two products (memory overhead one block, not
    a second copy of ``X``). The iterates agree to round-off either way, except that the oversampled EM PCA
    makes its early passes over blocks in float32 (``products(Q, single=True)``). Measured on a 100000 x 1000
    array (800 MB) with the library's default of one BLAS thread: a blocked pass costs 0.8-0.9x the two
    products over a centred copy at k = 10-20 columns (the block is read from cache by the second product) and
    1.1-1.2x at k = 1 (the centring is one more sweep over ``X``); since the float64 products take blocks
    small enough for OpenBLAS's small-matrix kernels (:data:`SMALL_PRODUCT_SIZE`), 0.69x (k = 10) and
    0.73x (k = 20) the two products over the whole uncentred array at 200000 x 1000 (was 1.13x and
    0.99x in 4 MiB blocks); with two BLAS threads on a loaded 2-core
    machine it was 1.2-2.5x (NumPy centres with one thread, and the small per-block products synchronize their
    threads). With missing
    values the array is one chunk and the completed data are kept between passes (``cache``), so the
    e-step starts from the previous fills.
    """

    kind = "dense"

    def __init__(self, X: np.ndarray, name: str = "X"):
        self.n, self.p = X.shape
        self.Y = None
        # a NaN makes its column's mean NaN, so the full NaN scan (a pass over X and an n x p mask) runs
        # only when some mean is not finite (a NaN, or a sum that overflowed)
        mean = X.mean(axis=0)
        if not np.isfinite(mean).all() and np.isnan(X).any():
            st = _Stats(X.shape[1])
            st.add(first_pass_chunk(X, 0))
            st.finish(self, name)
            self.X = X
            self._cache: dict = {}
            return
        self.missing, self.n_missing = False, 0
        self.mean = mean
        if X.nbytes <= COPY_LIMIT_BYTES:
            self.X = None
            self.Y = np.ascontiguousarray(X - self.mean)
            self.ss = float(np.vdot(self.Y, self.Y))
        else:
            self.X = X
            self.block_rows = max(1, int(BLOCK_BYTES // (8 * max(self.p, 1))))
            self._buf = np.empty((min(self.block_rows, self.n), self.p))
            self.ss = float(sum(np.vdot(Yb, Yb) for Yb in self._blocks()))
            self._s32 = _single_scale(self.ss)
        self.obs_count, self.obs_mean, self.obs_m2 = np.full(self.p, float(self.n)), self.mean, None

    @property
    def blocked(self) -> bool:
        """True when complete data are walked by centred row blocks (no centred copy)."""
        return not self.missing and self.Y is None

    def _blocks(self, step: int | None = None):
        """The centred row blocks of a large complete array, one after the other in the same buffer;
        ``step`` rows each (at most, and by default, ``block_rows``)."""
        X, mean, buf = self.X, self.mean, self._buf
        step = self.block_rows if step is None else min(step, self.block_rows)
        for i in range(0, self.n, step):
            Xb = X[i : i + step]
            yield np.subtract(Xb, mean, out=buf[: Xb.shape[0]])

    def map_sum(self, fn, *args):
        if self.missing:
            return list(fn(self.X, self._cache, *args))
        if self.Y is not None:
            return list(fn(self.Y, None, *args))
        return _sum_parts(fn(Yb, None, *args) for Yb in self._blocks())

    def products(self, Q, single: bool = False):
        """``(Y'YQ, (YQ)'(YQ))`` of the centred complete data: two products per block.

        ``single``: on a blocked array, each block is centred into a float32 buffer and multiplied in
        float32 (about 0.7x the time of a float64 pass at 10-30 columns; relative error about 1e-7, for
        the early passes of an iteration whose last passes are float64); ignored for a centred copy.
        Data whose float32 products could overflow or underflow (``||Y||_F^2`` outside ``[2^-60, 2^100]``)
        are multiplied as ``Y / s`` (``s`` a power of two, :func:`_single_scale`) and the results scaled back.
        """
        if self.Y is not None:
            U = self.Y @ Q
            return self.Y.T @ U, U.T @ U
        k = Q.shape[1]
        A = np.zeros((self.p, k))
        G = np.zeros((k, k))
        if single:
            Q32 = Q.astype(np.float32)
            for Yb in self._blocks32():
                U = Yb @ Q32
                A += Yb.T @ U
                G += U.T @ U
            if self._s32 != 1.0:
                A *= self._s32 * self._s32
                G *= self._s32 * self._s32
            return A, G
        for Yb in self._blocks(self.product_rows(k)):
            U = Yb @ Q
            A += Yb.T @ U
            G += U.T @ U
        return A, G

    def product_rows(self, k: int) -> int:
        """Rows per block of the float64 products with ``k`` columns: ``SMALL_PRODUCT_SIZE // (p k)``
        (small-matrix GEMM), or ``block_rows`` where that is fewer than ``SMALL_PRODUCT_MIN_ROWS``."""
        rows = SMALL_PRODUCT_SIZE // max(self.p * k, 1)
        return min(rows, self.block_rows) if rows >= SMALL_PRODUCT_MIN_ROWS else self.block_rows

    def _blocks32(self):
        """The centred row blocks of a large complete array in float32 (divided by ``self._s32``), one after
        the other in the same buffer (centred in float64 first, so a large mean costs no precision)."""
        if getattr(self, "_buf32", None) is None:
            self._buf32 = np.empty(self._buf.shape, dtype=np.float32)
        X, mean, s, step = self.X, self.mean, self._s32, self.block_rows
        for i in range(0, self.n, step):
            Xb = X[i : i + step]
            m = Xb.shape[0]
            if s == 1.0:
                yield np.subtract(Xb, mean, out=self._buf32[:m], casting="same_kind")
            else:
                Yb = np.subtract(Xb, mean, out=self._buf[:m])
                yield np.multiply(Yb, 1.0 / s, out=self._buf32[:m], casting="same_kind")

    def covariance_passes(self, k: int) -> float:
        """The cost of :meth:`covariance32` in float32 passes of ``k`` columns
        (:data:`COVARIANCE_PASS_RATIO`), or ``inf`` where it is not offered (a centred copy, missing
        values, or ``p`` above ``n / 4`` or :data:`COVARIANCE_MAX_FEATURES`)."""
        if not self.blocked or 4 * self.p > self.n or self.p > COVARIANCE_MAX_FEATURES:
            return np.inf
        return self.p / (COVARIANCE_PASS_RATIO * k)

    def covariance32(self) -> np.ndarray:
        """``Y'Y`` (p x p, float64) formed from float32 blocks: one float32 ``syrk`` per block, summed in
        float32 over :data:`COVARIANCE_FLUSH` blocks at a time and then in float64 (relative error about
        5e-8 of the largest entry at 50000 x 1000)."""
        from scipy.linalg.blas import ssyrk

        M32 = np.zeros((self.p, self.p), dtype=np.float32, order="F")
        M = np.zeros((self.p, self.p))
        for b, Yb in enumerate(self._blocks32()):
            M32 = ssyrk(1.0, Yb.T, beta=1.0, c=M32, trans=0, lower=0, overwrite_c=1)  # upper triangle
            if b % COVARIANCE_FLUSH == COVARIANCE_FLUSH - 1:
                M += M32
                M32[:] = 0.0
        M += M32
        M = np.triu(M) + np.triu(M, 1).T
        M *= self._s32 * self._s32
        return M

    def gram(self, Q):
        """``(YQ)'(YQ)`` alone (one product per block): the last pass of an EM iteration that stops."""
        if self.Y is not None:
            U = self.Y @ Q
            return U.T @ U
        G = np.zeros((Q.shape[1], Q.shape[1]))
        for Yb in self._blocks(self.product_rows(Q.shape[1])):
            U = Yb @ Q
            G += U.T @ U
        return G

    def rank1(self, q, u, a) -> float:
        """The pass of the rank-one EM: ``a = Y'(Y q)`` in place, returns ``|Y q|^2``; ``u`` (n,) is work."""
        if self.Y is not None:
            np.dot(self.Y, q, out=u)
            np.dot(self.Y.T, u, out=a)
            return float(np.dot(u, u))
        if self.X.flags.c_contiguous:  # one read of X per pass, rows centred on the fly
            from ._linalg_kernels import centred_rank1_pass

            return float(centred_rank1_pass(self.X, self.mean, q, u, a))
        a[:] = 0.0
        g = 0.0
        i = 0
        for Yb in self._blocks():
            ub = u[i : i + Yb.shape[0]]
            np.dot(Yb, q, out=ub)
            a += Yb.T @ ub
            g += float(np.dot(ub, ub))
            i += Yb.shape[0]
        return g


class BlockSource:
    """Row blocks produced again for every pass (a callable or a re-iterable); memory O(kp + block)."""

    kind = "blocks"

    def __init__(self, blocks, name: str = "blocks"):
        from ._validation import check_array

        if callable(blocks):
            self._factory = blocks
        elif isinstance(blocks, Iterable) and iter(blocks) is not blocks:
            self._factory = lambda: blocks
        else:
            raise ValueError(
                "blocks must be a callable returning a fresh iterable of 2-D arrays, or a re-iterable "
                "collection (list, tuple) of them; a one-shot iterator or generator cannot be read again "
                "on every EM iteration (wrap it: blocks=lambda: make_generator())."
            )
        from ._validation import _max_abs, _scale_for

        self.scale = 1.0
        st = None
        offset = 0
        top = 0.0
        for b, block in enumerate(self._factory()):
            B = check_array(block, f"block {b}", allow_nan=True)
            if st is None:
                st = _Stats(B.shape[1])
            elif B.shape[1] != st.count.size:
                raise ValueError(f"block {b} has {B.shape[1]} features; the first block has {st.count.size}.")
            st.add(first_pass_chunk(B, offset))
            offset += B.shape[0]
            top = max(top, _max_abs(B)) if B.size else top
        if st is None:
            raise ValueError("blocks produced no data; pass at least one block of shape (rows, n_features).")
        scale = _scale_for(top)
        # outside [2^-256, 2^256] every pass reads the blocks / scale (infinite entries: refused below)
        if scale != 1.0 and not any(a.size for a in st.inf):
            self.scale, self.n, self.p = scale, st.n, st.count.size  # the callers scale the results back
            st = _Stats(self.p)
            offset = 0
            for B in self._chunks():
                st.add(first_pass_chunk(B, offset))
                offset += B.shape[0]
        st.finish(self, "blocks")

    def _chunks(self):
        n = 0
        for b, block in enumerate(self._factory()):
            B = np.asarray(block, dtype=np.float64)
            if B.ndim != 2 or B.shape[1] != self.p:
                raise ValueError(f"block {b} has shape {B.shape}; expected (rows, {self.p}).")
            n += B.shape[0]
            yield B if self.scale == 1.0 else B / self.scale
        if n != self.n:
            raise ValueError(f"blocks produced {n} rows in a later pass but {self.n} in the first pass.")

    def map_sum(self, fn, *args):
        return _sum_parts(fn(B, None, *args) for B in self._chunks())

    def products(self, Q):
        A, G = self.map_sum(products_chunk, self.mean, Q)
        return A, G


def _load(*blocks):
    """One row chunk as a float64 array: the blocks of a row of the Dask array joined along the features;
    scipy sparse blocks as one sparse matrix (:func:`repro._sparse_chunks.load_sparse`)."""
    if is_sparse(blocks[0]):
        return load_sparse(blocks)
    B = blocks[0] if len(blocks) == 1 else np.concatenate([np.asarray(b) for b in blocks], axis=1)
    return np.asarray(B, dtype=np.float64)


def _chunk_call(fn, transforms, args, combine, *blocks):
    """One task of a pass: load a row chunk, read it through the transforms, run the chunk function.

    A scipy sparse chunk goes to the chunk functions that read one (:data:`TAKES_SPARSE`: the first pass,
    the products, the scatter; the centring implicit) as it is; any other chunk function, or one behind
    transforms, runs on its rows densified one block of :data:`BLOCK_BYTES` at a time, the results combined
    by the pass's ``combine`` (:func:`repro._sparse_chunks.blocks_call`), so no dense array of more than a
    row block is made."""
    Xb = _load(*blocks)
    if is_sparse(Xb) and (transforms or fn not in TAKES_SPARSE):
        return blocks_call(fn, transforms, args, combine, Xb, BLOCK_BYTES)
    for f, f_args in transforms:
        Xb = f(Xb, *f_args)
    return fn(Xb, None, *args)


def _group_call(fn, transforms, combine, calls, *blocks):
    """One task over several row chunks held by one worker: ``fn`` on each (``calls`` lists each chunk's
    arguments and number of feature blocks, ``blocks`` all their blocks in turn), the results combined as
    they come (``combine([acc, result])``: one partial result held at a time)."""
    acc, pos = None, 0
    for args, nb in calls:
        part = _chunk_call(fn, transforms, args, combine, *blocks[pos : pos + nb])
        pos += nb
        acc = part if acc is None else combine([acc, part])
    return acc


#: Array arguments of a pass up to this many bytes in all (their size times the number of chunks) travel
#: inside every task; above, each is sent once per pass as its own piece of data.
SHIP_BYTES = 4 * 2**20


def _rows_call(Xb, fn, *args):
    """``fn`` on one row chunk read as float64 (the block function of :meth:`DaskSource.map_rows`); a
    scipy sparse chunk stays sparse (``fn``, a ``transform`` or ``score_samples``, reads sparse rows)."""
    if is_sparse(Xb):
        return fn(load_sparse([Xb]), *args)
    return fn(np.asarray(Xb, dtype=np.float64), *args)


#: Results of a pass are added in groups of this many chunks (a tree), so the task that adds them holds at
#: most this many partial sums at once (each may be p x p when the covariance is formed).
TREE_WIDTH = 8


def compute(name: str, *graphs):
    """``dask.compute(*graphs)``, with an error that says so when data of ``name`` were lost.

    An array persisted or scattered on a ``distributed`` cluster lives in the workers' memory as futures;
    when a worker holding some of them dies (or the futures are released), the scheduler forgets those
    chunks and every later pass fails with ``FutureCancelledError ... already forgotten``, which does not
    say that data were lost. That error becomes a :class:`RuntimeError` naming the array and the fix.

    Examples
    --------
    >>> import dask.array as da
    >>> compute("X", da.ones((4, 2), chunks=2).sum())
    (np.float64(8.0),)
    """
    import concurrent.futures

    import dask

    try:
        return dask.compute(*graphs)
    except concurrent.futures.CancelledError as exc:  # distributed's FutureCancelledError derives from it
        raise RuntimeError(
            f"{name}: chunks of this Dask array were lost: a worker holding them died or their futures "
            f"were released, and the scheduler has forgotten them ({type(exc).__name__}: {exc}). The data "
            f"are gone from the cluster: persist (or scatter) {name} again from its source, e.g. "
            f"{name} = {name}.persist(), and fit again; client.replicate(...) keeps copies on several "
            "workers so that one lost worker loses no data."
        ) from exc


def check_dask_array(X, name: str = "X") -> None:
    """The Dask input policy's refusals: not 2-D, not real numbers, an unknown number of features."""
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features); got {X.ndim}-D shape {X.shape}.")
    kind = np.dtype(X.dtype).kind
    if kind not in "biuf":
        what = "complex values" if kind == "c" else "values that are not real numbers"
        raise ValueError(
            f"{name} is a Dask array of dtype {X.dtype} ({what}); these methods need real numbers: pass "
            f"{name}.astype('float64')" + (f" or {name}.real" if kind == "c" else "") + "."
        )
    if np.isnan(X.shape[1]):
        raise ValueError(
            f"{name} has an unknown number of features (chunks {X.chunks[1]}, e.g. after boolean "
            f"indexing of the columns); call {name}.compute_chunk_sizes() first (rows of unknown size "
            "are fine)."
        )


class DaskSource:
    """A ``dask.array`` of shape (n_samples, n_features), read by row chunks: one task per chunk and pass.

    The input policy is in the module docstring (cast integer and boolean dtypes, refuse complex and
    object ones, join feature chunks inside the loading task, learn unknown chunk sizes in the first pass).

    Everything goes through Dask's public API, so every scheduler runs it (threads, processes, a
    ``distributed`` client, persisted or not): the array's blocks are taken once as ``dask.delayed``
    objects (``X.to_delayed()``, its graph optimized once), a pass calls ``fn(load(row chunk), None,
    *args)`` on each row chunk (one ``dask.delayed`` task each; the array arguments inside the tasks, or
    sent once per pass above :data:`SHIP_BYTES`) and adds the results in a tree of small tasks
    (:data:`TREE_WIDTH`; on an array persisted on a ``distributed`` cluster, one task per worker thread
    over the chunks it holds, see :meth:`_worker_groups`), then ``dask.compute`` runs it on the scheduler
    Dask is configured with (``dask.config.set(scheduler=...)`` or a ``distributed`` client). The data
    stay where the scheduler keeps them (on the workers of a cluster); only the sums of a pass come back
    to the client.
    ``map_rows`` (transform, score of new data) returns a Dask array.

    Parameters
    ----------
    X : dask.array.Array
    name : str
        The argument's name in error messages.
    first_pass : bool
        Run the first pass (statistics, missing-value and infinity checks). ``False`` for reading new data
        (transform, score): only :meth:`map_rows` is then meaningful.
    min_samples, min_features : int
        Smallest shape accepted (checked after the first pass, when the row count is known).
    transforms : sequence of (callable, args)
        Applied to every loaded chunk in turn, ``chunk = f(chunk, *args)`` (a deflated data set is the
        same array read through the deflation, see :meth:`derive`).

    Attributes
    ----------
    n, p : int
    chunk_rows : tuple of int
        Rows per chunk (learnt in the first pass when the array's chunk sizes are unknown).
    n_chunks : int
    missing, n_missing, mean, ss, obs_count, obs_mean, obs_m2
        From the first pass, as for the other sources.
    """

    kind = "dask"

    def __init__(
        self, X, name: str = "X", *, first_pass: bool = True, min_samples=1, min_features=1, transforms=()
    ):
        if not is_dask(X):
            raise ValueError(f"{name} must be a dask.array.Array here; got {type(X).__name__}.")
        check_dask_array(X, name)
        self.array = X
        self.name = name
        self.p = int(X.shape[1])
        if self.p < min_features:
            raise ValueError(
                f"{name} has {self.p} feature(s) (shape={X.shape}) while a minimum of {min_features} is "
                "required."
            )
        self._transforms = tuple(transforms)
        self.n_chunks = len(X.chunks[0])
        self._blocks = None  # the delayed blocks, taken on the first pass
        self._groups = False  # row chunks by worker (persisted on a cluster), found on the first sum
        sizes = X.chunks[0]
        self.chunk_rows = None if any(np.isnan(c) for c in sizes) else tuple(int(c) for c in sizes)
        if not first_pass:
            self.n = None if self.chunk_rows is None else int(sum(self.chunk_rows))
            return
        parts = self.map_chunks(_first_pass_task)
        self.chunk_rows = tuple(int(part[0]) for part in parts)
        offsets = np.concatenate([[0], np.cumsum(self.chunk_rows)[:-1]]).astype(np.int64)
        st = _Stats(self.p)
        for part, off in zip(parts, offsets, strict=True):
            st.add(part, int(off))
        if st.n < min_samples:
            raise ValueError(
                f"{name} has {st.n} sample(s) (shape=({st.n}, {self.p})) while a minimum of {min_samples} "
                "is required."
            )
        st.finish(self, name)

    # ----- passes
    def _parts(self, fn, args, indexed: bool = False, combine=None):
        """The delayed ``fn(chunk, None, *args)`` of every row chunk, one task each (load, transforms and
        ``fn`` fused: a pass is one layer of tasks plus the sum); with ``indexed`` the chunk's index is
        passed first, ``fn(chunk, None, i, *args)``. Small array arguments travel inside the tasks, larger
        ones (over :data:`SHIP_BYTES` in all) once per pass as their own piece of data."""
        import dask

        args = self._ship(args)
        call = dask.delayed(_chunk_call, pure=True)
        return [
            call(fn, self._transforms, (i, *args) if indexed else args, combine, *row)
            for i, row in enumerate(self._blocks)
        ]

    def _ship(self, args):
        """Take the delayed blocks once; array arguments over :data:`SHIP_BYTES` in all (times the number
        of chunks) become one piece of data of the pass each, smaller ones travel inside the tasks."""
        import dask

        if self._blocks is None:
            self._blocks = self.array.to_delayed()  # (row chunks, feature chunks), graph optimized once
        size = sum(a.nbytes for a in args if isinstance(a, np.ndarray)) * self.n_chunks
        if size > SHIP_BYTES:
            args = tuple(dask.delayed(a) if isinstance(a, np.ndarray) else a for a in args)
        return args

    def _worker_groups(self):
        """The row chunks grouped by the worker that holds them, when the array is persisted on a
        ``distributed`` cluster (its blocks are futures): one list of chunk indices per worker thread
        (``Client.who_has`` and ``Client.nthreads``, asked once per source); None otherwise (a lazy array,
        another scheduler), and then a pass has one task per chunk."""
        if self._groups is not False:
            return self._groups
        self._groups = None
        try:
            from distributed import futures_of
        except ImportError:  # pragma: no cover - distributed is optional
            return None
        futures = {f.key: f for f in futures_of(self.array)}
        keys = [row[0] for row in self.array.__dask_keys__()]
        if self.n_chunks < 2 or not futures or any(k not in futures for k in keys):
            return None
        client = futures[keys[0]].client
        who = client.who_has([futures[k] for k in keys])
        threads = client.nthreads()
        by_worker: dict = {}
        for i, k in enumerate(keys):
            holders = sorted(who.get(k, ()))
            by_worker.setdefault(holders[0] if holders else None, []).append(i)
        groups = []
        for w, idx in by_worker.items():
            n_tasks = min(len(idx), max(1, int(threads.get(w, 1)))) if w is not None else len(idx)
            groups += [list(g) for g in np.array_split(idx, n_tasks)]
        self._groups = groups
        return groups

    def _reduce(self, fn, args, combine, indexed: bool = False):
        """The delayed result of one pass: ``fn`` on every row chunk, results combined by ``combine`` (a
        function of a list of results). On a persisted ``distributed`` array one task per worker thread
        runs ``fn`` over the chunks that worker holds (:meth:`_worker_groups`) and one task combines their
        results; otherwise one task per chunk and a tree of ``combine`` tasks (:data:`TREE_WIDTH`)."""
        import dask

        groups = self._worker_groups()
        if groups is None:
            return _tree(self._parts(fn, args, indexed, combine), combine)
        args = self._ship(args)
        blocks = self._blocks
        call = dask.delayed(_group_call, pure=True)
        tasks = [
            call(
                fn,
                self._transforms,
                combine,
                [((i, *args) if indexed else args, len(blocks[i])) for i in g],
                *(b for i in g for b in blocks[i]),
            )
            for g in groups
        ]
        return _tree(tasks, combine)

    def map_sum(self, fn, *args):
        """One pass: ``sum over chunks of fn(chunk, None, *args)`` (a tuple of arrays or floats), a list."""
        return self.map_reduce(fn, _sum_parts, *args)

    def map_reduce(self, fn, combine, *args):
        """One pass: ``fn(chunk, None, *args)`` on every row chunk, the results combined by ``combine`` (a
        module-level function of a list of results, applied in chunk order as :meth:`_reduce` says)."""

        (total,) = compute(self.name, self._reduce(fn, args, combine))
        return total

    def map_chunks(self, fn, *args) -> list:
        """One pass: ``[fn(chunk, None, *args) for each chunk]`` in chunk order."""
        return list(compute(self.name, *self._parts(fn, args)))

    def map_rows(self, fn, *args):
        """``fn(chunk, *args)`` per row chunk (an array with one entry or row per row of the chunk), as a
        Dask array in row order (lazy: ``transform`` or ``score_samples`` of data read in chunks).

        The trailing shape and dtype of the output are those of ``fn`` on one row of zeros (a cheap probe
        on the client); feature chunks are joined first (``rechunk`` to whole rows).
        """
        X = self.array
        if X.numblocks[1] > 1:
            X = X.rechunk({1: -1})
        for f, args_f in self._transforms:
            X = X.map_blocks(_rows_call, f, *args_f, dtype=np.float64)
        probe = np.asarray(fn(np.zeros((1, self.p)), *args))
        tail = probe.shape[1:]
        return X.map_blocks(
            _rows_call,
            fn,
            *args,
            dtype=probe.dtype,
            chunks=(X.chunks[0], *((t,) for t in tail)),
            drop_axis=[] if tail else [1],
            meta=np.empty((0, *tail), dtype=probe.dtype),
        )

    def products(self, Q):
        A, G = self.map_sum(products_chunk, self.mean, Q)
        return A, G

    def derive(self, fn, *args, first_pass: bool = True) -> DaskSource:
        """The same array read through ``chunk -> fn(chunk, *args)`` (e.g. a deflation): a new source, one
        first pass, no new Dask collection."""
        return DaskSource(
            self.array, self.name, first_pass=first_pass, transforms=(*self._transforms, (fn, args))
        )


# --------------------------------------------------------------------------- the covariance in one pass
#: Largest matrix (bytes) that :func:`dask_covariance` forms on the client from a Dask array: 2 GiB, a
#: p x p float64 matrix up to p = 16384 features. The covariance-based methods (NSPCA, the spannogram) then
#: work on that matrix in memory, with a few more of its size (NSPCA's kernel, the spannogram's
#: eigendecomposition), so a larger one would not fit a usual client either.
CLIENT_LIMIT_BYTES = 2 * 2**30


def client_fits(p: int) -> bool:
    """Whether a ``p x p`` float64 matrix stays within :data:`CLIENT_LIMIT_BYTES`."""
    return 8 * p * p <= CLIENT_LIMIT_BYTES


def check_client_matrix(p: int, name: str = "X") -> None:
    """Refuse to form the ``p x p`` covariance of a Dask array on the client above the limit."""
    if not client_fits(p):
        need = 8 * p * p
        raise ValueError(
            f"{name} has {p} features: its {p} x {p} covariance ({need / 2**30:.1f} GiB) would be formed on "
            f"the client, above the limit of {CLIENT_LIMIT_BYTES / 2**30:.0f} GiB "
            "(repro._chunked.CLIENT_LIMIT_BYTES); this method works on that matrix in memory. Use fewer "
            "features (select or aggregate columns), or raise the limit if the client has the memory."
        )


def _moments_chunk(Xb, cache, index):
    """``(rows, mean, centred scatter, NaN count, inf count, first bad chunk)`` of one row chunk."""
    if is_sparse(Xb):
        return sparse_moments(Xb, index)
    Xb = np.asarray(Xb, dtype=np.float64)
    n_b = Xb.shape[0]
    bad = ~np.isfinite(Xb)
    n_nan = n_inf = 0
    first = np.inf
    if bad.any():  # refused after the pass; keep the sums finite meanwhile
        n_nan = int(np.isnan(Xb).sum())
        n_inf = int(bad.sum()) - n_nan
        first = index
        Xb = np.where(bad, 0.0, Xb)
    mean = Xb.mean(axis=0) if n_b else np.zeros(Xb.shape[1])
    D = Xb - mean
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused after the pass
        return n_b, mean, D.T @ D, n_nan, n_inf, first


def _merge_moments(parts):
    """Chunk moments merged in order (Chan, Golub & LeVeque's pairwise update: no cancellation)."""
    n, mean, A, n_nan, n_inf, first = parts[0]
    A = np.array(A)
    for n2, mean2, A2, nan2, inf2, first2 in parts[1:]:
        tot = n + n2
        if n2:
            delta = mean2 - mean
            with np.errstate(over="ignore", invalid="ignore"):
                A += A2 + np.outer(delta, delta * (n * n2 / tot))
            mean = mean + delta * (n2 / tot)
        n, n_nan, n_inf, first = tot, n_nan + nan2, n_inf + inf2, min(first, first2)
    return n, mean, A, n_nan, n_inf, first


def _tree(parts, combine):
    """The delayed ``combine`` of the results of a pass, ``TREE_WIDTH`` at a time, in chunk order."""
    import dask

    step = dask.delayed(combine, pure=True)
    while True:
        parts = [step(parts[i : i + TREE_WIDTH]) for i in range(0, len(parts), TREE_WIDTH)]
        if len(parts) == 1:
            return parts[0]


@validate_params(
    {"X": ["array-like"], "name": [str], "min_samples": [Interval(Integral, 1, None, closed="left")]},
    prefer_skip_nested_validation=True,
)
def dask_covariance(X, name: str = "X", *, min_samples: int = 2):
    """The column means and the scatter matrix ``Xc'Xc`` of a Dask array, formed in one distributed pass.

    What stays on the workers and what the client holds: each row chunk is read where the scheduler keeps
    it and reduced there to its row count, column means and centred ``p x p`` scatter; these are merged
    in a tree of tasks (:data:`TREE_WIDTH` at a time, Chan et al.'s pairwise update), and only the merged
    ``p``-vector and ``p x p`` matrix come back to the client. ``X`` itself is never gathered. The
    covariance-based estimators (NSPCA, SpannogramPCA) use this: they work on the ``p x p`` matrix itself
    (NSPCA's coordinate ascent reads all of it, the spannogram's deflation takes principal submatrices),
    so the ``n x n`` Gram matrix of a wide array could not stand in for it.

    Parameters
    ----------
    X : dask.array.Array, shape (n_samples, n_features)
        Real numbers (integer and boolean dtypes are cast to float64 per chunk); NaN and infinite values
        are refused.
    name : str
        The argument's name in error messages.
    min_samples : int

    Returns
    -------
    n : int
    mean : ndarray, shape (n_features,)
    A : ndarray, shape (n_features, n_features)
        ``Xc'Xc`` (not divided by ``n - 1``), symmetric.

    Raises
    ------
    ValueError
        When the client-side ``p x p`` matrix would exceed :data:`CLIENT_LIMIT_BYTES`, and for the input
        the Dask policy refuses, NaN, infinite values, too few samples or an overflow.
    """

    if not is_dask(X):
        raise ValueError(f"{name} must be a dask.array.Array here; got {type(X).__name__}.")
    check_dask_array(X, name)
    p = int(X.shape[1])
    check_client_matrix(p, name)
    total = DaskSource(X, name, first_pass=False)._reduce(_moments_chunk, (), _merge_moments, indexed=True)
    (n, mean, A, n_nan, n_inf, first) = compute(name, total)[0]
    if n_inf:
        raise ValueError(
            f"{name} holds infinite values ({n_inf}, the first in row chunk {int(first)}); remove or "
            "replace them before fitting."
        )
    if n_nan:
        raise ValueError(
            f"{name} holds NaN ({n_nan} entries, the first in row chunk {int(first)}) and this method does "
            "not support missing values; impute them, drop those rows, or use EMPCA (its fit handles NaN "
            "as missing entries)."
        )
    if n < min_samples:
        raise ValueError(
            f"{name} has {n} sample(s) (shape=({n}, {p})) while a minimum of {min_samples} is required; "
            "pass more samples."
        )
    if not np.isfinite(A).all():
        raise ValueError(
            f"{name} is too large for float64: its scatter matrix Xc'Xc overflows; divide {name} by a "
            "constant before fitting."
        )
    return int(n), mean, 0.5 * (A + A.T)


#: :func:`dask_covariance` without the parameter validation, for the estimators (which validated theirs).
_dask_covariance = dask_covariance.__wrapped__


def as_source(X, name: str = "X", *, min_samples: int = 2, min_features: int = 1):
    """A :class:`DaskSource` for a Dask array, a :class:`SparseSource` for a scipy sparse matrix, else a
    :class:`DenseSource` of the validated array (NaN allowed: missing entries; at least ``min_samples``
    rows and ``min_features`` columns)."""
    if is_dask(X):
        return DaskSource(X, name, min_samples=min_samples, min_features=min_features)
    if is_sparse(X):
        from ._validation import check_sparse

        return SparseSource(check_sparse(X, name, min_samples=min_samples, min_features=min_features), name)
    from ._validation import check_array

    return DenseSource(
        check_array(X, name, allow_nan=True, min_samples=min_samples, min_features=min_features), name
    )


#: The chunk functions that read a scipy sparse chunk as it is (the centring implicit or per row block);
#: any other runs on its densified row blocks (:func:`_chunk_call`).
TAKES_SPARSE = frozenset({_first_pass_task, gram_chunk, products_chunk, _moments_chunk, max_abs_chunk})
