"""Data sources of the EM iterations in :mod:`repro.em_pca`: in memory, row blocks, and Dask arrays.

Every EM iteration of Roweis (1997) is one pass over the rows of the data followed by O(pk^2) work: the
pass produces sums over rows (``Y'YC`` and ``C'Y'YC`` for complete data; for missing values the e-step
per row and the sums ``Y*'Z``, ``Z'Z``, ``sum Z``, ``sum Y*``). A *source* runs a chunk function on each
row chunk and adds up what it returns (:meth:`map_sum`), so the iteration is written once
(in :mod:`repro.em_pca`) and runs on:

* :class:`DenseSource`, an in-memory array: one chunk (the whole array), centred once, with a
  persistent buffer of the completed data when values are missing;
* :class:`BlockSource`, row blocks produced again by a callable for every pass;
* :class:`DaskSource`, a ``dask.array`` (and so anything Dask wraps: ``numpy.memmap``, Zarr, HDF5): one
  Dask task per row chunk that loads the chunk, runs the chunk function (e-step and accumulation together)
  and returns the small sums, then a reduction of those sums in the calling process. One pass over the data
  per EM iteration; memory bounded by the chunks in flight (the scheduler's workers) plus ``O(pk)`` each.

The first pass of every source computes the per-column counts, means and centred sums of squares over
observed entries (Chan, Golub & LeVeque's pairwise update, so no cancellation) and checks the missing-value
pattern (a row or a column without any observed entry is refused, naming it).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["BlockSource", "DaskSource", "DenseSource", "as_source", "is_dask"]


def _head(idx, n=5) -> str:
    idx = np.asarray(idx)
    text = ", ".join(str(int(i)) for i in idx[:n])
    return text + (f", ... ({idx.size} in all)" if idx.size > n else "")


def is_dask(X) -> bool:
    """Whether ``X`` is a ``dask.array.Array`` (without importing Dask when it is not loaded)."""
    mod = type(X).__module__
    if not mod.startswith("dask"):
        return False
    import dask.array as da

    return isinstance(X, da.Array)


# --------------------------------------------------------------------------- first pass
def first_pass_chunk(Xb, offset: int):
    """Per-column statistics over observed entries of one chunk, and its rows without any observed entry.

    Returns ``(n_rows, count, mean, m2, empty_rows, inf_rows, n_missing)``.
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

    def add(self, part) -> None:
        n_b, count, mean, m2, empty, inf_rows, n_missing = part
        tot = self.count + count
        safe = np.maximum(tot, 1.0)
        with np.errstate(invalid="ignore", over="ignore"):  # infinite entries are refused in finish()
            delta = mean - self.mean
            self.m2 += m2 + delta * delta * (self.count * count / safe)
            self.mean += delta * (count / safe)
        self.count = tot
        self.n += n_b
        self.empty.append(np.asarray(empty))
        self.inf.append(np.asarray(inf_rows))
        self.n_missing += n_missing

    def finish(self, source, name: str) -> None:
        inf = np.concatenate(self.inf) if self.inf else np.empty(0)
        if inf.size:
            raise ValueError(f"{name} holds infinite values (rows {_head(inf)}); remove or replace them.")
        source.n, source.p = self.n, self.count.size
        source.missing = self.n_missing > 0
        source.n_missing = self.n_missing
        if source.missing:
            empty = np.concatenate(self.empty)
            if empty.size:
                raise ValueError(
                    f"{name} has row(s) {_head(empty)} with every entry missing (NaN); drop them, they carry "
                    "no information."
                )
            cols = np.flatnonzero(self.count == 0)
            if cols.size:
                raise ValueError(
                    f"{name} has column(s) {_head(cols)} with every entry missing (NaN); their mean and "
                    "loadings cannot be estimated: drop them."
                )
        source.obs_count = self.count
        source.obs_mean = self.mean
        source.obs_m2 = self.m2
        source.mean = self.mean.copy()
        source.ss = float(self.m2.sum())


# --------------------------------------------------------------------------- chunk functions
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
    rows, cols = np.nonzero(mask)
    ptr = np.zeros(Xb.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=Xb.shape[0]), out=ptr[1:])
    idx = cols.astype(np.int64)
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
        rows, idx = np.nonzero(mask)
        ptr = np.zeros(Xb.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=Xb.shape[0]), out=ptr[1:])
        idx = idx.astype(np.int64)
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


# --------------------------------------------------------------------------- sources
class DenseSource:
    """An in-memory array: one chunk. Complete data are centred once (``Y``); with missing values the
    completed data are kept between passes (``cache``), so the e-step starts from the previous fills."""

    kind = "dense"

    def __init__(self, X: np.ndarray, name: str = "X"):
        self.n, self.p = X.shape
        if np.isnan(X).any():
            st = _Stats(X.shape[1])
            st.add(first_pass_chunk(X, 0))
            st.finish(self, name)
            self.X = X
            self.Y = None
            self._cache: dict = {}
        else:
            self.missing, self.n_missing = False, 0
            self.mean = X.mean(axis=0)
            self.Y = np.ascontiguousarray(X - self.mean)
            self.ss = float(np.vdot(self.Y, self.Y))
            self.obs_count, self.obs_mean, self.obs_m2 = np.full(self.p, float(self.n)), self.mean, None
            self.X = None

    def map_sum(self, fn, *args):
        if self.missing:
            return list(fn(self.X, self._cache, *args))
        return list(fn(self.Y, None, *args))

    def products(self, Q):
        U = self.Y @ Q
        return self.Y.T @ U, U.T @ U


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
        total = None
        for B in self._chunks():
            total = _add(total, fn(B, None, *args))
        return total

    def products(self, Q):
        A, G = self.map_sum(products_chunk, self.mean, Q)
        return A, G


class DaskSource:
    """A ``dask.array`` of shape (n_samples, n_features), read by row chunks, one task per chunk and pass.

    Chunks along the features are merged (``rechunk({1: -1})``): an iteration needs whole rows. Unknown
    chunk sizes (NaN in ``X.chunks``, e.g. after boolean indexing) and non-floating dtypes are refused.
    """

    kind = "dask"

    def __init__(self, X, name: str = "X"):
        import dask

        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D (n_samples, n_features); got {X.ndim}-D shape {X.shape}.")
        if any(np.isnan(c) for c in X.chunks[0]) or any(np.isnan(c) for c in X.chunks[1]):
            raise ValueError(
                f"{name} is a Dask array with unknown chunk sizes {X.chunks}; call "
                f"{name}.compute_chunk_sizes() (or build it with known chunks) before fitting."
            )
        if not np.issubdtype(X.dtype, np.floating):
            raise ValueError(
                f"{name} is a Dask array of dtype {X.dtype}; EM needs real floating-point data: pass "
                f"{name}.astype('float64') (complex data are not supported)."
            )
        if len(X.chunks[1]) > 1:
            X = X.rechunk({1: -1})
        self.X = X
        self.chunk_rows = tuple(int(c) for c in X.chunks[0])
        self._blocks = list(X.to_delayed()[:, 0])
        offsets = np.concatenate([[0], np.cumsum(self.chunk_rows)[:-1]]).astype(int)
        parts = dask.compute(
            *[
                dask.delayed(first_pass_chunk, pure=False)(b, int(o))
                for b, o in zip(self._blocks, offsets, strict=True)
            ]
        )
        st = _Stats(X.shape[1])
        for part in parts:
            st.add(part)
        if st.n == 0:
            raise ValueError(f"{name} has no rows.")
        st.finish(self, name)

    def map_sum(self, fn, *args):
        import dask

        parts = dask.compute(*[dask.delayed(fn, pure=False)(b, None, *args) for b in self._blocks])
        total = None
        for part in parts:
            total = _add(total, part)
        return total

    def products(self, Q):
        A, G = self.map_sum(products_chunk, self.mean, Q)
        return A, G


def as_source(X, name: str = "X", *, min_samples: int = 2, min_features: int = 1):
    """A :class:`DaskSource` for a Dask array, else a :class:`DenseSource` of the validated array (NaN
    allowed: missing entries; at least ``min_samples`` rows and ``min_features`` columns)."""
    if is_dask(X):
        return DaskSource(X, name)
    from ._validation import check_array

    return DenseSource(
        check_array(X, name, allow_nan=True, min_samples=min_samples, min_features=min_features), name
    )
