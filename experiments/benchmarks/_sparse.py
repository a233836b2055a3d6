"""What part (c) of :mod:`experiments.benchmarks.sparse` measures (its docstring holds the protocol): the
Dask array of CSR chunks fitted on a two-worker ``dask.distributed`` cluster against the same fit on the
in-memory CSR matrix (:func:`distributed_rows`), run by :func:`experiments.benchmarks._dask_cluster.run_part`
(its quiet ``LocalCluster`` of two worker processes, one thread each, or the client already running in the
process, e.g. the test suite's).
"""

from __future__ import annotations

import os
import time
import warnings

import numpy as np

from repro import EMPCA, ConvergenceWarning

#: Memory limit of each worker: its half of the CSR chunks (70 MB at the full size), the ``N x 30``
#: products of its chunks and the worker's own ~330 MB, with room to spare (no spilling to disk).
WORKER_MEMORY = 2 * 2**30


def _empca(X, k: int):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return EMPCA(k, random_state=0).fit(X)


def _warm(p: int, k: int) -> bool:
    """Run on each worker before the timed fits: the kernels a fit on sparse chunks uses compiled (or
    loaded from Numba's cache) there, as the client's are by its own first fit."""
    import scipy.sparse as sp

    _empca(sp.random(400, p, density=0.02, format="csr", random_state=0), min(k, p))
    return True


def _timed(fit):
    t0 = time.perf_counter()
    out = fit()
    return out, time.perf_counter() - t0


def distributed_rows(client, X, k: int, pairs: int, n_chunks: int) -> list[dict]:
    """``EMPCA(k)`` on ``X`` (CSR) in memory and on ``X`` as a Dask array of ``n_chunks`` row chunks of CSR
    matrices persisted on the cluster's workers, in ``pairs`` alternating pairs (memory, Dask; Dask,
    memory; ...): wall time of each fit, the ratio Dask / memory of each pair, and the largest
    differences between the two fits (components, explained variances)."""
    import dask.array as da
    import scipy.sparse as sp

    n, p = X.shape
    load = os.getloadavg()[0]
    step = -(-n // n_chunks)
    # the chunks sent to the workers once (no matrix in a task graph), then read where they are
    starts = range(0, n, step)
    parts = client.scatter([X[i : i + step] for i in starts])
    meta = sp.csr_matrix((0, 0))
    Xd = da.concatenate(
        [
            da.from_delayed(f, shape=(min(step, n - i), p), dtype=np.float64, meta=meta)
            for i, f in zip(starts, parts, strict=True)
        ]
    )
    client.run(_warm, p, k)
    _empca(X[: min(n, 500)], k)  # the client's kernels, outside the timed fits
    fits: dict[str, list] = {"memory": [], "dask": []}
    for j in range(pairs):
        for name in ("memory", "dask") if j % 2 == 0 else ("dask", "memory"):
            fits[name].append(_timed(lambda name=name: _empca(X if name == "memory" else Xd, k)))
    mem, dsk = fits["memory"][0][0], fits["dask"][0][0]
    ratios = [d[1] / m[1] for d, m in zip(fits["dask"], fits["memory"], strict=True)]
    base = {"part": "distributed", "chunks": n_chunks, "workers": len(client.scheduler_info()["workers"])}
    base["load_1min"] = load
    rows = []
    for name, runs in fits.items():
        est = runs[0][0]
        row = {
            **base,
            "method": f"EMPCA({k}) on the in-memory CSR"
            if name == "memory"
            else f"EMPCA({k}) on a Dask array of CSR chunks, dask.distributed",
            "seconds": float(np.median([r[1] for r in runs])),
            "seconds_samples": " ".join(f"{r[1]:.4g}" for r in runs),
            "n_iter": int(est.n_iter_),
        }
        if name == "dask":
            row["ratio_samples"] = " ".join(f"{v:.4g}" for v in ratios)
            row["max_component_diff"] = float(np.max(np.abs(dsk.components_ - mem.components_)))
            row["max_variance_rel_diff"] = float(
                np.max(np.abs(dsk.explained_variance_ / mem.explained_variance_ - 1.0))
            )
        rows.append(row)
    return rows
