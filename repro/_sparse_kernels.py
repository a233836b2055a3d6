"""Numba kernels of :mod:`repro._sparse`: a compressed sparse matrix times a thin dense block.

The three arrays ``(indptr, indices, data)`` of a CSR matrix ``X`` (``n x p``) are those of the CSC matrix
``X'``, so the kernels serve both formats. The products work on a run of rows ``lo <= i < hi``:

* :func:`matmat_rows` ``out[i] = x_i W`` (the sum over the row's stored entries of ``x_ij W[j, :]``, in
  stored order: the order of scipy's ``csr_matvecs``);
* :func:`rmatmat_rows` ``acc = sum_i x_i' Y[i]``, the scatter ``acc[j, :] += x_ij Y[i, :]`` (over all
  rows: the order of scipy's ``csc_matvecs`` on ``X'``);
* :func:`gather_columns` selected columns of a CSR matrix into a dense block, in one pass;
* :func:`column_sums` the per-column count, sum and centred sum of squares of the stored entries.

Each runs in one thread. The twins are in ``tests/naive.py`` (``compressed_matmat``,
``compressed_rmatmat``, ``gather_columns``, ``column_sums``).

Two variants were measured and dropped (``docs/notes/2026-12-03-sparse-atlas.md``): a parallel one
(``numba.prange`` over runs of rows of about equal stored entries, the transpose product scattered into
one accumulator per run), 0.71x the wall time of one product on two threads but 1.2-1.9x the wall time
of a whole ``EMPCA(20)`` fit; and a fused pass (``X Q`` row by row, never stored, scattered at once into
``X'(XQ)``), which reads ``X`` once instead of twice but took 1.24x the CPU time of the two products.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit

__all__ = [
    "column_sums",
    "gather_columns",
    "matmat_rows",
    "rmatmat_rows",
]


@njit
def matmat_rows(indptr, indices, data, W, out, lo, hi):
    """``out[i] = x_i W`` for the rows ``lo <= i < hi`` of the compressed rows ``(indptr, indices, data)``
    and ``W`` (``p x k``); the other rows of ``out`` (``n x k``) are not touched."""
    k = W.shape[1]
    for i in range(lo, hi):
        for c in range(k):
            out[i, c] = 0.0
        for jj in range(indptr[i], indptr[i + 1]):
            a = data[jj]
            j = indices[jj]
            for c in range(k):
                out[i, c] += a * W[j, c]


@njit
def rmatmat_rows(indptr, indices, data, Y, acc, lo, hi):
    """``acc = sum over the rows lo <= i < hi of x_i' Y[i]`` (``acc``: ``p x k``, overwritten)."""
    k = Y.shape[1]
    acc[:, :] = 0.0
    for i in range(lo, hi):
        for jj in range(indptr[i], indptr[i + 1]):
            a = data[jj]
            j = indices[jj]
            for c in range(k):
                acc[j, c] += a * Y[i, c]


@njit
def gather_columns(indptr, indices, data, position, out):
    """``out[i, position[j]] += x_ij`` for the stored entries of the compressed rows whose column ``j`` has
    ``position[j] >= 0``: the selected columns of a CSR matrix into a dense ``n x K`` array (``out``
    zeros on entry; duplicate entries summed, as ``toarray``)."""
    n = indptr.size - 1
    for i in range(n):
        for jj in range(indptr[i], indptr[i + 1]):
            c = position[indices[jj]]
            if c >= 0:
                out[i, c] += data[jj]


@njit
def column_sums(indices, data, centre, p):
    """``(count, sum, dev2)`` per column of the stored entries (``indices``: their columns): how many,
    their sum, and the sum of ``(x - centre[j])^2`` (``centre`` zeros when not needed), each summed in
    stored order."""
    count = np.zeros(p, dtype=np.int64)
    total = np.zeros(p)
    dev2 = np.zeros(p)
    for e in range(indices.size):
        j = indices[e]
        x = data[e]
        count[j] += 1
        total[j] += x
        d = x - centre[j]
        dev2[j] += d * d
    return count, total, dev2
