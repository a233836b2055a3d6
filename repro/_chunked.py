"""The one data layer of the EM methods: in memory, row blocks, and Dask arrays.

Every EM iteration (Roweis 1997; Sigg & Buhmann 2008) is one pass over the rows of the data followed by
small work: the pass produces sums over rows (``Y'YQ`` and ``(YQ)'(YQ)`` for complete data; for missing
values the e-step per row and the sums of the m-step). A *source* runs a chunk function ``fn(chunk, cache,
*args)`` on each row chunk and adds up the tuples it returns (:meth:`map_sum`), so each iteration is written
once (in :mod:`repro.em_pca` and :mod:`repro.em_sparse_pca`) and runs on:

* :class:`DenseSource`, an in-memory array. Complete data up to :data:`COPY_LIMIT_BYTES` (64 MiB) are
  centred once into a copy (fastest: two BLAS products per pass); larger arrays are never copied: each
  pass centres one row block of about :data:`BLOCK_BYTES` (4 MiB) at a time into a buffer and does the two
  products on it, so the memory overhead is one block (a 1e6 x 1e3 float64 array would otherwise need
  another 8 GB). With missing values the completed data are kept between passes (``cache``), so the
  e-step starts from the previous fills.
* :class:`BlockSource`, row blocks produced again by a callable for every pass (``fit_blocks``).
* :class:`DaskSource`, a ``dask.array`` (and so anything Dask wraps: ``numpy.memmap``, Zarr, HDF5). The
  array's task graph is optimized and materialized once; each pass adds one task per row chunk that loads
  the chunk and runs the chunk function (e-step and accumulation together), and one task summing the
  small results, and runs that graph on the scheduler Dask is configured with. One pass over the data per
  EM iteration; memory bounded by the chunks in flight plus the small sums. Used by ``EMPCA``,
  ``SensiblePCA`` and ``EMSparsePCA`` (fit, the covariance formation and the cardinality path; transform
  and score of a Dask array go through :meth:`DaskSource.map_rows`).

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
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ._validation import _head, is_dask

__all__ = [
    "BLOCK_BYTES",
    "COPY_LIMIT_BYTES",
    "BlockSource",
    "DaskSource",
    "DenseSource",
    "as_source",
    "check_observed",
    "is_dask",
]

#: Complete in-memory data up to this size (bytes) are centred once into a copy; larger ones are centred
#: one row block at a time in every pass (no copy). 64 MiB: below it the copy costs little memory and saves
#: the per-block work; above it the copy would double the memory of the fit.
COPY_LIMIT_BYTES = 64 * 2**20
#: Size (bytes) of the row blocks of a large in-memory array: a few MiB, so a block stays in cache between
#: its two products.
BLOCK_BYTES = 4 * 2**20


def missing_structure(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR lists of the missing coordinates of each row (sorted): ``(ptr, idx)``, row ``i``'s missing
    columns being ``idx[ptr[i]:ptr[i + 1]]``."""
    rows, cols = np.nonzero(mask)
    ptr = np.zeros(mask.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=mask.shape[0]), out=ptr[1:])
    return ptr, cols.astype(np.int64)


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
    """``(Y'Y,)`` of one chunk centred at ``mean`` (the covariance formed in one pass)."""
    Yb = np.asarray(Xb, dtype=np.float64) - mean
    return (Yb.T @ Yb,)


def products_chunk(Xb, cache, mean, Q):
    """``(Y'YQ, (YQ)'(YQ))`` of one chunk, centred with ``mean`` (None: already centred)."""
    Yb = np.asarray(Xb, dtype=np.float64)
    if mean is not None:
        Yb = Yb - mean
    U = Yb @ Q
    return Yb.T @ U, U.T @ U


def _missing_prepare(Xb, cache, mu):
    """Completed chunk (missing entries at ``mu``, or the previous fills when cached) and its CSR lists."""
    if cache is not None and "Yfill" in cache:
        return cache["Yfill"], cache["ptr"], cache["idx"]
    Xb = np.asarray(Xb, dtype=np.float64)
    mask = np.isnan(Xb)
    ptr, idx = missing_structure(mask)
    Yfill = np.where(mask, mu, Xb)
    if cache is not None:
        cache.update(Yfill=Yfill, ptr=ptr, idx=idx)
    return Yfill, ptr, idx


def missing_estep_chunk(Xb, cache, C, mu):
    """Generalized e-step (Roweis 1997, Sec. 3.2) on one chunk and the sums the m-step needs.

    Returns ``(sse, sum_i z_i, Z'Z, Y*'Z, sum_i y*_i)`` with ``Y*`` the chunk completed by the new fills.
    """
    from .kernels.em_pca import missing_estep

    Yfill, ptr, idx = _missing_prepare(Xb, cache, mu)
    k = C.shape[1]
    B = Yfill @ C - mu @ C
    Z = np.empty((Yfill.shape[0], k))
    fill_colsum = np.empty(Yfill.shape[1])
    sse = missing_estep(Yfill, B, C, C.T @ C, mu, ptr, idx, Z, fill_colsum)
    return sse, Z.sum(axis=0), Z.T @ Z, Yfill.T @ Z, Yfill.sum(axis=0)


def missing_final_chunk(Xb, cache, C, mu, center, Q):
    """The e-step again at the final ``(C, mu)``; ``(U'U, |Y* - center|^2)`` with ``U = (Y* - center) Q``."""
    from .kernels.em_pca import missing_estep

    Yfill, ptr, idx = _missing_prepare(Xb, cache, mu)
    if cache is None:  # fresh chunk: fills as in the last e-step
        B = Yfill @ C - mu @ C
        Z = np.empty((Yfill.shape[0], C.shape[1]))
        missing_estep(Yfill, B, C, C.T @ C, mu, ptr, idx, Z, np.empty(Yfill.shape[1]))
    D = Yfill - center
    U = D @ Q
    return U.T @ U, float(np.vdot(D, D))


def ppca_missing_chunk(Xb, cache, C, mu, eps, m0):
    """E-step of sensible PCA with missing values on one chunk and the sums of the m-step.

    The chunk is centred by ``m0`` (the observed column means) and ``mu`` is relative to it. Returns
    ``(loglik, Stot, Hmiss, B)``: see :func:`repro.kernels.em_pca.ppca_missing_estep`;
    ``B = Y0' [X 1]`` with ``Y0`` the centred observed entries (missing ones 0), so the m-step of column j
    is ``[c_j; mu_j] = (Stot - Hmiss[j])^-1 B[j]``.
    """
    from .kernels.em_pca import ppca_missing_estep

    if cache is not None and "Y0" in cache:
        Y0, rows, ptr, idx = cache["Y0"], cache["rows"], cache["ptr"], cache["idx"]
    else:
        Xb = np.asarray(Xb, dtype=np.float64)
        mask = np.isnan(Xb)
        ptr, idx = missing_structure(mask)
        rows = np.repeat(np.arange(Xb.shape[0]), np.diff(ptr))
        Y0 = np.where(mask, 0.0, Xb - m0)
        if cache is not None:
            cache.update(Y0=Y0, rows=rows, ptr=ptr, idx=idx)
    Yfill = Y0.copy()
    Yfill[rows, idx] = mu[idx]
    k = C.shape[1]
    B = Yfill @ C - mu @ C
    Xt = np.empty((Y0.shape[0], k + 1))
    Stot = np.zeros((k + 1, k + 1))
    Hmiss = np.zeros((Y0.shape[1], k + 1, k + 1))
    ll = ppca_missing_estep(Yfill, B, C, C.T @ C, mu, eps, ptr, idx, Xt, Stot, Hmiss)
    return ll, Stot, Hmiss, Y0.T @ Xt


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


# --------------------------------------------------------------------------- sources
class DenseSource:
    """An in-memory array.

    Complete data: up to :data:`COPY_LIMIT_BYTES` (read at construction) they are centred once into a
    copy ``Y`` and a pass is two BLAS products over it; above, ``Y`` is None and every pass walks row
    blocks of :data:`BLOCK_BYTES`, centring each into one buffer before its two products (memory overhead
    one block, not a second copy of ``X``). The iterates agree to round-off either way. Measured on a
    100000 x 1000 array (800 MB) with the library's default of one BLAS thread: a blocked pass costs
    0.8-0.9x the two products over a centred copy at k = 10-20 columns (the block is read from cache by
    the second product) and 1.1-1.2x at k = 1 (the centring is one more sweep over ``X``); with two BLAS
    threads on a loaded 2-core machine it was 1.2-2.5x (NumPy centres with one thread, and the small
    per-block products synchronize their threads). With missing
    values the array is one chunk and the completed data are kept between passes (``cache``), so the
    e-step starts from the previous fills.
    """

    kind = "dense"

    def __init__(self, X: np.ndarray, name: str = "X"):
        self.n, self.p = X.shape
        self.Y = None
        if np.isnan(X).any():
            st = _Stats(X.shape[1])
            st.add(first_pass_chunk(X, 0))
            st.finish(self, name)
            self.X = X
            self._cache: dict = {}
            return
        self.missing, self.n_missing = False, 0
        self.mean = X.mean(axis=0)
        if X.nbytes <= COPY_LIMIT_BYTES:
            self.X = None
            self.Y = np.ascontiguousarray(X - self.mean)
            self.ss = float(np.vdot(self.Y, self.Y))
        else:
            self.X = X
            self.block_rows = max(1, int(BLOCK_BYTES // (8 * max(self.p, 1))))
            self._buf = np.empty((min(self.block_rows, self.n), self.p))
            self.ss = float(sum(np.vdot(Yb, Yb) for Yb in self._blocks()))
        self.obs_count, self.obs_mean, self.obs_m2 = np.full(self.p, float(self.n)), self.mean, None

    @property
    def blocked(self) -> bool:
        """True when complete data are walked by centred row blocks (no centred copy)."""
        return not self.missing and self.Y is None

    def _blocks(self):
        """The centred row blocks of a large complete array, one after the other in the same buffer."""
        X, mean, buf, step = self.X, self.mean, self._buf, self.block_rows
        for i in range(0, self.n, step):
            Xb = X[i : i + step]
            yield np.subtract(Xb, mean, out=buf[: Xb.shape[0]])

    def map_sum(self, fn, *args):
        if self.missing:
            return list(fn(self.X, self._cache, *args))
        if self.Y is not None:
            return list(fn(self.Y, None, *args))
        return _sum_parts(fn(Yb, None, *args) for Yb in self._blocks())

    def products(self, Q):
        """``(Y'YQ, (YQ)'(YQ))`` of the centred complete data: two products per block."""
        if self.Y is not None:
            U = self.Y @ Q
            return self.Y.T @ U, U.T @ U
        k = Q.shape[1]
        A = np.zeros((self.p, k))
        G = np.zeros((k, k))
        for Yb in self._blocks():
            U = Yb @ Q
            A += Yb.T @ U
            G += U.T @ U
        return A, G

    def rank1(self, q, u, a) -> float:
        """The pass of the rank-one EM: ``a = Y'(Y q)`` in place, returns ``|Y q|^2``; ``u`` (n,) is work."""
        if self.Y is not None:
            np.dot(self.Y, q, out=u)
            np.dot(self.Y.T, u, out=a)
            return float(np.dot(u, u))
        if self.X.flags.c_contiguous:  # one read of X per pass, rows centred on the fly
            from .kernels.em_pca import centred_rank1_pass

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
        st = None
        offset = 0
        for b, block in enumerate(self._factory()):
            B = check_array(block, f"block {b}", allow_nan=True)
            if st is None:
                st = _Stats(B.shape[1])
            elif B.shape[1] != st.count.size:
                raise ValueError(f"block {b} has {B.shape[1]} features; the first block has {st.count.size}.")
            st.add(first_pass_chunk(B, offset))
            offset += B.shape[0]
        if st is None:
            raise ValueError("blocks produced no data; pass at least one block of shape (rows, n_features).")
        st.finish(self, "blocks")

    def _chunks(self):
        n = 0
        for b, block in enumerate(self._factory()):
            B = np.asarray(block, dtype=np.float64)
            if B.ndim != 2 or B.shape[1] != self.p:
                raise ValueError(f"block {b} has shape {B.shape}; expected (rows, {self.p}).")
            n += B.shape[0]
            yield B
        if n != self.n:
            raise ValueError(f"blocks produced {n} rows in a later pass but {self.n} in the first pass.")

    def map_sum(self, fn, *args):
        return _sum_parts(fn(B, None, *args) for B in self._chunks())

    def products(self, Q):
        A, G = self.map_sum(products_chunk, self.mean, Q)
        return A, G


def _load(*blocks):
    """One row chunk as a float64 array: the blocks of a row of the Dask array joined along the features."""
    B = blocks[0] if len(blocks) == 1 else np.concatenate([np.asarray(b) for b in blocks], axis=1)
    return np.asarray(B, dtype=np.float64)


def _call(Xb, cache, fn, *args):
    """A chunk task for a function of the chunk alone (transform, score of new data)."""
    return fn(Xb, *args)


class DaskSource:
    """A ``dask.array`` of shape (n_samples, n_features), read by row chunks: one task per chunk and pass.

    The input policy is in the module docstring (cast integer and boolean dtypes, refuse complex and
    object ones, join feature chunks inside the loading task, learn unknown chunk sizes in the first pass).

    The array's graph is optimized and materialized once (``__dask_optimize__``); a pass copies it, adds
    one task per row chunk, ``fn(load(chunk), None, *args)``, and one summing task, and runs it on the
    scheduler Dask is configured with (``dask.config.set(scheduler=...)`` or a ``distributed`` client):
    cheaper per iteration than building ``dask.delayed`` collections, and the reduction is one small task.

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
        self.array = X
        self.name = name
        self.p = int(X.shape[1])
        if self.p < min_features:
            raise ValueError(
                f"{name} has {self.p} feature(s) (shape={X.shape}) while a minimum of {min_features} is "
                "required."
            )
        self._transforms = tuple(transforms)
        rows = X.__dask_keys__()
        self._rows = [list(r) for r in rows]  # keys of the blocks of each row chunk
        flat = [k for r in self._rows for k in r]
        self._graph = dict(X.__dask_optimize__(X.__dask_graph__(), flat))
        self.n_chunks = len(self._rows)
        self._pass = 0
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
    def _chunk_task(self, i):
        task = (_load, *self._rows[i])
        for f, args in self._transforms:
            task = (f, task, *args)
        return task

    def _run(self, fn, args, reduce):
        """One pass: ``reduce([fn(chunk_i, None, *args) for each chunk])`` in one graph."""
        import dask.base

        self._pass += 1
        tag = f"repro-pass-{id(self):x}-{self._pass}"
        dsk = dict(self._graph)
        parts = []
        for i in range(self.n_chunks):
            dsk[(tag, i)] = (fn, self._chunk_task(i), None, *args)
            parts.append((tag, i))
        dsk[tag] = (reduce, parts)
        get = dask.base.get_scheduler(collections=[self.array]) or dask.base.get_scheduler()
        return get(dsk, tag)

    def map_sum(self, fn, *args):
        """One pass: ``sum over chunks of fn(chunk, None, *args)`` (a tuple of arrays or floats), a list."""
        return self._run(fn, args, _sum_parts)

    def map_chunks(self, fn, *args) -> list:
        """One pass: ``[fn(chunk, None, *args) for each chunk]`` in chunk order."""
        return self._run(fn, args, list)

    def map_rows(self, fn, *args) -> np.ndarray:
        """One pass: ``fn(chunk, *args)`` per chunk (an array with one entry or row per row of the chunk),
        stacked in row order: ``transform`` or ``score_samples`` of data read in chunks."""
        return np.concatenate(self._run(_call, (fn, *args), list), axis=0)

    def products(self, Q):
        A, G = self.map_sum(products_chunk, self.mean, Q)
        return A, G

    def derive(self, fn, *args, first_pass: bool = True) -> DaskSource:
        """The same array read through ``chunk -> fn(chunk, *args)`` (e.g. a deflation): a new source, one
        first pass, no new Dask collection."""
        return DaskSource(
            self.array, self.name, first_pass=first_pass, transforms=(*self._transforms, (fn, args))
        )


def as_source(X, name: str = "X", *, min_samples: int = 2, min_features: int = 1):
    """A :class:`DaskSource` for a Dask array, else a :class:`DenseSource` of the validated array (NaN
    allowed: missing entries; at least ``min_samples`` rows and ``min_features`` columns)."""
    if is_dask(X):
        return DaskSource(X, name, min_samples=min_samples, min_features=min_features)
    from ._validation import check_array

    return DenseSource(
        check_array(X, name, allow_nan=True, min_samples=min_samples, min_features=min_features), name
    )
