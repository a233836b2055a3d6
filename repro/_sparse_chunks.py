"""The chunks of a Dask array that are scipy sparse matrices: loaded as one CSR matrix per row chunk, read
with the centring implicit by the first pass and the covariance pass, or densified one row block at a time
for any other chunk function (:mod:`repro._chunked` dispatches to these; see its docstring).

This module imports only :mod:`repro._sparse` and :mod:`repro._validation`.
"""

from __future__ import annotations

import numpy as np

from ._sparse import CentredSparse, column_stats
from ._validation import _head, is_sparse

__all__ = [
    "blocks_call",
    "load_sparse",
    "max_abs_chunk",
    "max_parts",
    "sparse_first_pass",
    "sparse_moments",
    "sparse_products",
]


def load_sparse(blocks):
    """One row chunk of scipy sparse blocks as one CSR matrix of float64 values in canonical form (no
    duplicate entries, as :func:`repro._validation.check_sparse` makes them), never densified: the blocks
    of a row joined along the features (``scipy.sparse.hstack``: a column-chunked array is rechunked to
    whole rows inside the loading task, as dense chunks are joined)."""
    import scipy.sparse as sp

    B = blocks[0] if len(blocks) == 1 else sp.hstack(blocks, format="csr")
    if B.format != "csr":
        B = B.tocsr()
    if B.dtype != np.float64:
        B = B.astype(np.float64)
    if not B.has_canonical_format:  # duplicates summed on a copy (never the stored chunk)
        B = B.copy()
        B.sum_duplicates()
    return B


def sparse_first_pass(Xb):
    """:func:`repro._chunked.first_pass_chunk` of a scipy sparse row chunk (:func:`load_sparse`): the column
    means and centred sums of squares from the stored entries (:func:`repro._sparse.column_stats`), the
    rows with an infinite stored value; NaN among the stored values is refused here (the entries not
    stored are zeros, not missing, so a sparse chunk has no missing entries)."""
    n_b, p = Xb.shape
    inf_rows = np.empty(0, np.int64)
    bad = ~np.isfinite(Xb.data)
    if bad.any():
        rows = np.repeat(np.arange(n_b), np.diff(Xb.indptr))[bad]
        if np.isnan(Xb.data[bad]).any():
            nan_rows = rows[np.isnan(Xb.data[bad])]
            raise ValueError(
                f"X is a Dask array of scipy.sparse chunks with NaN among the stored values (rows "
                f"{_head(np.unique(nan_rows))} of a row chunk of {n_b} rows). Missing values are supported "
                "in dense input only (in a sparse matrix the entries not stored are zeros, not missing): "
                "impute the NaN in every chunk (X.map_blocks with a function that sets "
                "b.data[np.isnan(b.data)] = 0, if they mean zero), or pass dense chunks "
                "(X.map_blocks(lambda b: b.toarray(), dtype='float64')) to fit NaN as missing."
            )
        inf_rows = np.unique(rows)
        Xb = Xb.copy()
        Xb.data[bad] = 0.0  # refused after the pass, naming the rows; keep the statistics finite meanwhile
    if n_b:
        mean, m2 = column_stats(Xb)
    else:
        mean, m2 = np.zeros(p), np.zeros(p)
    return n_b, np.full(p, float(n_b)), mean, m2, np.empty(0, np.int64), inf_rows, 0


def blocks_call(fn, transforms, args, combine, Xb, block_bytes: int):
    """``fn`` on the rows of a sparse chunk densified ``block_bytes`` at a time (each read through the
    transforms), the results combined as they come (``combine([acc, result])``)."""
    n_b, p = Xb.shape
    step = max(1, int(block_bytes // (8 * max(p, 1))))
    if combine is None and n_b > step:
        raise TypeError(f"{getattr(fn, '__name__', fn)} reads whole dense chunks, not a sparse one")
    acc = None
    for i in range(0, max(n_b, 1), step):
        B = Xb[i : i + step].toarray()
        for f, f_args in transforms:
            B = f(B, *f_args)
        part = fn(B, None, *args)
        acc = part if acc is None else combine([acc, part])
    return acc


def sparse_moments(Xb, index):
    """:func:`repro._chunked._moments_chunk` of a scipy sparse row chunk: the means from the stored entries,
    the scatter from row blocks densified and centred one at a time (:meth:`CentredSparse.gram`)."""
    n_b, p = Xb.shape
    bad = ~np.isfinite(Xb.data)
    n_nan = n_inf = 0
    first = np.inf
    if bad.any():  # refused after the pass; keep the sums finite meanwhile
        n_nan = int(np.isnan(Xb.data).sum())
        n_inf = int(bad.sum()) - n_nan
        first = index
        Xb = Xb.copy()
        Xb.data[bad] = 0.0
    if not n_b:
        return 0, np.zeros(p), np.zeros((p, p)), n_nan, n_inf, first
    mean = column_stats(Xb)[0]
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused after the pass
        return n_b, mean, CentredSparse(Xb, mean, 1.0).gram(), n_nan, n_inf, first


def sparse_products(Xb, mean, Q):
    """``(Y'YQ, (YQ)'(YQ))`` of a sparse chunk centred at ``mean`` (None: not centred), the centring
    implicit (``Y Q = X Q - 1 (mean' Q)``, :class:`repro._sparse.CentredSparse`)."""
    F = CentredSparse(Xb, np.zeros(Xb.shape[1]) if mean is None else mean, 1.0)
    U = F @ Q
    return F.rmatvec(U), U.T @ U


def max_abs_chunk(Xb, cache):
    """``(max |x|,)`` of one chunk (its stored values for a scipy sparse chunk; 0 for an empty one)."""
    vals = np.asarray(Xb.data if is_sparse(Xb) else Xb, dtype=np.float64)
    return (float(np.max(np.abs(vals))) if vals.size else 0.0,)


def max_parts(parts):
    """The reduction of a :func:`max_abs_chunk` pass: the largest of the chunks' values."""
    return (max(float(part[0]) for part in parts),)
