"""Numba kernels of :mod:`repro._sparse`: a compressed sparse matrix times a thin dense block.

The three arrays ``(indptr, indices, data)`` of a CSR matrix ``X`` (``n x p``) are those of the CSC matrix
``X'``, so the kernels serve both formats. Each works on a run of rows ``lo <= i < hi``:

* :func:`matmat_rows` ``out[i] = x_i W`` (the sum over the row's stored entries of ``x_ij W[j, :]``, in
  stored order: the order of scipy's ``csr_matvecs``);
* :func:`rmatmat_rows` ``acc = sum_i x_i' Y[i]``, the scatter ``acc[j, :] += x_ij Y[i, :]`` (with one run
  over all rows, the order of scipy's ``csc_matvecs`` on ``X'``);
* :func:`gather_columns` selected columns of a CSR matrix into a dense block, in one pass;
* :func:`column_sums` the per-column count, sum and centred sum of squares of the stored entries.

The ``*_parallel`` kernels split the rows in ``n_runs`` runs of about equal stored entries
(:func:`row_runs`) and run them under ``numba.prange``: a scatter writes its own accumulator per run,
summed afterwards in run order, so a result depends on the number of runs only through that sum. The
caller chooses ``n_runs`` (the library's thread setting, :func:`repro._threads.get_blas_threads`) and
calls the serial kernels for one run, which never start Numba's thread pool. The twins are in
``tests/naive.py`` (``compressed_matmat``, ``compressed_rmatmat``, ``gather_columns``,
``column_sums``).

A fused pass (``X Q`` row by row, never stored, scattered at once into ``X'(XQ)``) was tried and
dropped: it read ``X`` once instead of twice but was 1.24x the CPU time of the two products (see
``docs/notes/2026-12-03-sparse-atlas.md``).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ._jit import njit

__all__ = [
    "column_sums",
    "gather_columns",
    "matmat_parallel",
    "matmat_rows",
    "rmatmat_parallel",
    "rmatmat_rows",
    "row_runs",
]


@njit
def row_runs(indptr: np.ndarray, n_runs: int) -> np.ndarray:
    """``n_runs + 1`` non-decreasing row boundaries splitting the rows in runs of about equal stored
    entries (``0`` first, ``n`` last)."""
    n = indptr.size - 1
    nnz = indptr[n]
    bounds = np.empty(n_runs + 1, dtype=np.int64)
    bounds[0] = 0
    for t in range(1, n_runs):
        b = np.searchsorted(indptr, (nnz * t) // n_runs)
        bounds[t] = min(max(b, bounds[t - 1]), n)
    bounds[n_runs] = n
    return bounds


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


@njit(parallel=True)
def matmat_parallel(indptr, indices, data, W, out, n_runs):
    """:func:`matmat_rows` over all rows, ``n_runs`` runs in parallel."""
    bounds = row_runs(indptr, n_runs)
    for t in prange(n_runs):
        matmat_rows(indptr, indices, data, W, out, bounds[t], bounds[t + 1])


@njit(parallel=True)
def rmatmat_parallel(indptr, indices, data, Y, parts):
    """:func:`rmatmat_rows` over all rows, one run per accumulator ``parts[t]`` (``n_runs x p x k``), in
    parallel; the caller sums the accumulators."""
    n_runs = parts.shape[0]
    bounds = row_runs(indptr, n_runs)
    for t in prange(n_runs):
        rmatmat_rows(indptr, indices, data, Y, parts[t], bounds[t], bounds[t + 1])


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
