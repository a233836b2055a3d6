"""The data sources of the EM methods, public: how ``EMPCA``, ``SensiblePCA`` and ``EMSparsePCA`` read their
data, and the one-pass covariance of a Dask array.

A source runs a chunk function ``fn(chunk, cache, *args)`` on every row chunk of the data and adds up the
tuples it returns (``map_sum``): one pass over the data per EM iteration. :class:`DenseSource` reads an
in-memory array (centred once into a copy up to 64 MiB, else centred one row block at a time in every
pass); :class:`DaskSource` reads a ``dask.array`` on any scheduler, the data staying where the scheduler
keeps them and only the small sums of a pass reaching the client; :class:`SparseSource` reads a scipy
sparse matrix with the centring implicit in its products (never densified); :func:`dask_covariance` forms the
column means and the scatter matrix of a Dask array in one distributed pass. The implementation, with the
input policy for Dask arrays, is :mod:`repro._chunked`.

Examples
--------
>>> import numpy as np
>>> from repro.sources import DenseSource
>>> X = np.arange(12.0).reshape(4, 3)
>>> A, G = DenseSource(X).products(np.eye(3)[:, :1])  # (Y'YQ, (YQ)'(YQ)) of the centred data
>>> float(G[0, 0])
45.0
"""

from __future__ import annotations

from ._chunked import DaskSource, DenseSource, SparseSource, dask_covariance

__all__ = ["DaskSource", "DenseSource", "SparseSource", "dask_covariance"]
