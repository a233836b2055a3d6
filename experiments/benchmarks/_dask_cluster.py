"""What :mod:`experiments.benchmarks.dask_cluster` measures (its docstring holds the protocol, the choices and
the goals): :func:`pass_rows`, part A (one EM pass on the cluster against the threaded scheduler, over chunk
sizes), and :func:`tall_rows`, part B (EMPCA against ``svd_compressed`` at equal accuracy on an array larger
than a worker's memory), each run by :func:`run_part` on its own two-worker ``LocalCluster``.

The cluster is quiet: the scheduler's HTTP server (there is no dashboard) listens on a free loopback port,
so a second cluster on the machine (a test suite's, another run's) does not make it warn that port 8787 is
taken, and each worker gets :data:`WORKER_CLOSE_TIMEOUT` to shut down when its cluster closes (distributed
waits 4 s before it kills a worker and logs a warning; a worker that has imported the library took 4-6 s
to exit on two busy cores).
"""

from __future__ import annotations

import asyncio
import os
import time

import numpy as np
from threadpoolctl import threadpool_limits

TARGET = (
    1e-4  # see the benchmark's docstring: 1e-6 cost 90 calibration passes and svd_compressed stalled above it
)
MEMORY_LIMIT = 640 * 2**20  # bytes per worker: above the ~330 MB a worker holds once repro is imported
K_PASS = 10
K_TALL = 5
TALL_VARIANCES = (20.0, 12.0, 8.0, 5.0, 3.0)
MAX_POWER_ITER = 8
#: Rows of one chunk at the verdict's size: ``p = 100`` columns of float64 in chunks of 128 MiB, Dask's
#: default ``array.chunk-size`` (the chunk size ``dask.array`` picks for a large array), 8 chunks (4 per
#: worker, 1 GiB in all). Chosen before any measurement at that size; see the benchmark's docstring.
VERDICT_ROWS = 128 * 2**20 // (8 * 100)
#: Passes of each side per repeat of part A (interleaved); a repeat's time is the fastest of them.
INNER = 3
#: Memory limit of each worker of part A's cluster: its 512 MiB of data, a chunk's centred copy and the
#: worker's own ~230 MiB, with room to spare (no spilling: a spilled chunk would be read from disk).
PASS_MEMORY_LIMIT = 3 * 2**30
#: Seconds each worker gets to shut down when its cluster closes, before the nanny kills it (see above).
WORKER_CLOSE_TIMEOUT = 60.0


def sizes(quick: bool) -> dict:
    if quick:
        return dict(
            curve_rows=(1_000, 5_000),
            chunks_curve=4,
            issue=(20_000, 8),
            p_pass=50,
            rep_curve=2,
            rep_verdict=3,
            n_tall=100_000,
            p_tall=16,
            rows=25_000,
            rep_tall=1,
        )
    return dict(
        curve_rows=(2_500, 12_500, 50_000, VERDICT_ROWS),
        chunks_curve=8,
        issue=(400_000, 16),
        p_pass=100,
        rep_curve=3,
        rep_verdict=5,
        n_tall=1_500_000,
        p_tall=64,
        rows=50_000,
        rep_tall=1,
    )


def _normal_rows(seed: int, i: int, m: int, p: int) -> np.ndarray:
    """Chunk ``i`` (``m x p`` standard normal) of part A's array: made where it is needed (a worker, or
    the client for the threaded reference), so no array travels in a task graph."""
    return np.random.default_rng([seed, i]).standard_normal((m, p))


def _read_rows(path: str, start: int, stop: int) -> np.ndarray:
    """Rows ``start:stop`` of the ``.npy`` file at ``path`` (read inside the task, on the worker)."""
    return np.array(np.load(path, mmap_mode="r")[start:stop])


def _write_tall(path: str, n: int, p: int, rows: int, seed: int) -> None:
    """Five components of variances TALL_VARIANCES over unit noise, shifted by 3, written block by block."""
    rng = np.random.default_rng(seed)
    W = np.linalg.qr(rng.standard_normal((p, K_TALL)))[0].T * np.sqrt(TALL_VARIANCES)[:, None]
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=(n, p))
    for i in range(0, n, rows):
        m = min(rows, n - i)
        out[i : i + m] = rng.standard_normal((m, K_TALL)) @ W + rng.standard_normal((m, p)) + 3.0
    out.flush()
    del out


def _disk_array(path: str, n: int, p: int, rows: int):
    """The file as a Dask array of row chunks, each read from disk by its task (public API only)."""
    import dask
    import dask.array as da

    read = dask.delayed(_read_rows, pure=True)
    parts = [
        da.from_delayed(read(path, i, min(i + rows, n)), shape=(min(rows, n - i), p), dtype=np.float64)
        for i in range(0, n, rows)
    ]
    return da.concatenate(parts, axis=0)


def _sin_angle(V: np.ndarray, W: np.ndarray) -> float:
    """Sine of the largest principal angle between the column spans of orthonormal ``V`` and any ``W``."""
    Q = np.linalg.qr(W)[0]
    return float(np.linalg.norm(Q - V @ (V.T @ Q), 2))


def _time(f):
    t0 = time.perf_counter()
    out = f()
    return time.perf_counter() - t0, out


def _pass_point(client, n, p, nc, reps, role, seed) -> list[dict]:
    """One point of part A: ``n x p`` in ``nc`` chunks, ``reps`` interleaved repeats of one pass each."""
    import dask
    import dask.array as da
    from distributed import wait

    from repro.sources import DaskSource

    m = n // nc
    local = da.from_array(np.concatenate([_normal_rows(seed, i, m, p) for i in range(nc)]), chunks=(m, p))
    make = dask.delayed(_normal_rows, pure=True)
    parts = [da.from_delayed(make(seed, i, m, p), shape=(m, p), dtype=np.float64) for i in range(nc)]
    on_cluster = client.persist(da.concatenate(parts, axis=0))
    wait(on_cluster)
    Q = np.linalg.qr(np.random.default_rng(seed).standard_normal((p, K_PASS)))[0]
    with dask.config.set(scheduler="threads", num_workers=2):
        src_threads = DaskSource(local)
        want = src_threads.products(Q)  # warm-up and the reference answer
    src_cluster = DaskSource(on_cluster)
    got = src_cluster.products(Q)  # warm-up (and the chunks' placement, asked once)
    err = max(float(np.max(np.abs(a - b)) / np.max(np.abs(b))) for a, b in zip(got, want, strict=True))
    rows = []
    for r in range(reps):
        t_thr = t_dist = np.inf
        for _ in range(INNER):  # interleaved; the fastest of each side (timeit's reading)
            with dask.config.set(scheduler="threads", num_workers=2):
                t_thr = min(t_thr, _time(lambda: src_threads.products(Q))[0])
            t_dist = min(t_dist, _time(lambda: src_cluster.products(Q))[0])
        rows.append(
            dict(
                part="pass",
                role=role,
                repeat=r,
                ratio=t_dist / t_thr,
                ours_s=t_dist,
                ref_s=t_thr,
                n=n,
                p=p,
                k=K_PASS,
                n_chunks=nc,
                chunk_mib=m * p * 8 / 2**20,
                max_rel_diff=err,
            )
        )
    client.cancel(on_cluster)
    return rows


def pass_rows(client, sz, seed) -> list[dict]:
    """The curve over chunk sizes (its largest point is the verdict's size), then the issue's setting."""
    rows = []
    curve = sz["curve_rows"]
    for j, m in enumerate(curve):
        last = j == len(curve) - 1
        rep = sz["rep_verdict"] if last else sz["rep_curve"]
        rows += _pass_point(
            client,
            m * sz["chunks_curve"],
            sz["p_pass"],
            sz["chunks_curve"],
            rep,
            "verdict" if last else "curve",
            seed,
        )
    n, nc = sz["issue"]
    return rows + _pass_point(client, n, sz["p_pass"], nc, sz["rep_curve"], "issue setting", seed)


def tall_rows(client, sz, seed, folder) -> list[dict]:
    import dask.array as da

    from repro import EMPCA
    from repro.sources import dask_covariance

    n, p, rows_per = sz["n_tall"], sz["p_tall"], sz["rows"]
    path = os.path.join(folder, "tall.npy")
    _write_tall(path, n, p, rows_per, seed)
    X = _disk_array(path, n, p, rows_per)
    _, _, A = dask_covariance(X)  # the exact answer, untimed
    vals, vecs = np.linalg.eigh(A)
    V = vecs[:, ::-1][:, :K_TALL]
    gap = float(vals[::-1][K_TALL] / vals[::-1][K_TALL - 1])

    def empca():
        hist = []

        def stop(t, C, lam):
            hist.append(_sin_angle(V, C))
            return hist[-1] <= TARGET

        est = EMPCA(K_TALL, random_state=seed, max_iter=500, tol=0.0, callback=stop).fit(X)
        return est, len(hist)

    def svdc(q):
        mean = X.mean(axis=0).compute()
        _, _, v = da.linalg.svd_compressed(X - mean, K_TALL, n_power_iter=q, seed=seed, compute=True)
        return np.asarray(v.compute())

    # The cheapest n_power_iter that reaches the target, searched from the value that the randomized
    # subspace iteration's rate predicts from the exact spectrum, (lambda_{l+1} / lambda_k)^(q + 1) for
    # the right singular vectors (q power iterations and the final projection) with l = k + 10
    # oversamples (Dask's default): down while q - 1 still reaches the target, up while q does not. Every
    # run is timed; the run at the q found is the reference's time.
    lam = vals[::-1] / vals[::-1][0]
    rate = lam[min(K_TALL + 10, p - 1)] / lam[K_TALL - 1]
    q = int(np.clip(np.ceil(np.log(TARGET) / np.log(rate) - 1), 0, MAX_POWER_ITER)) if rate < 1 else 0
    runs = {}

    def svd_run(q):
        if q not in runs:
            t, v = _time(lambda: svdc(q))
            runs[q] = (t, v, _sin_angle(V, v.T))
        return runs[q][2] <= TARGET

    if svd_run(q):
        while q > 0 and svd_run(q - 1):
            q -= 1
    else:
        while q < MAX_POWER_ITER and not svd_run(q + 1):
            q += 1
        q = min(q + 1, MAX_POWER_ITER)
    svd_run(q)
    t_svd, v, svd_sin = runs[q]
    out = []
    for r in range(sz["rep_tall"]):
        t_em, (est, passes) = _time(empca)
        if r:  # further repeats time the reference again, interleaved
            t_svd, v = _time(lambda: svdc(q))
            svd_sin = _sin_angle(V, v.T)
        out.append(
            dict(
                part="tall",
                role="tall",
                repeat=r,
                ratio=t_em / t_svd,
                ours_s=t_em,
                ref_s=t_svd,
                n=n,
                p=p,
                k=K_TALL,
                n_chunks=-(-n // rows_per),
                nbytes=8 * n * p,
                em_passes=passes,
                em_sin=_sin_angle(V, est.components_.T),
                power_iter=q,
                power_iter_tried=len(runs),
                svd_sin=svd_sin,
                eig_gap=gap,
            )
        )
    return out


def _cluster(memory_limit: int):
    from distributed import LocalCluster

    return LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},  # its HTTP server on a free port
        host="127.0.0.1",
        memory_limit=memory_limit,
    )


async def _close_workers(cluster) -> None:
    await asyncio.gather(*(w.close(timeout=WORKER_CLOSE_TIMEOUT) for w in list(cluster.workers.values())))


def run_part(bench, memory_limit: int, *args) -> tuple[list[dict], int, int]:
    """``bench(client, *args)`` on a client already running in the process (the test suite's), else on
    a fresh two-process cluster with ``memory_limit`` per worker; the rows, the workers' real smallest
    memory limit and their number."""
    from distributed import Client

    try:
        client, cluster = Client.current(), None
    except ValueError:
        cluster = _cluster(memory_limit)
        client = Client(cluster)
    try:
        workers = client.scheduler_info()["workers"].values()
        limit = min(int(w.get("memory_limit") or 0) or 2**62 for w in workers)
        with threadpool_limits(limits=1, user_api="blas"):
            return bench(client, *args), limit, len(workers)
    finally:
        if cluster is not None:
            client.close()
            cluster.sync(_close_workers, cluster)  # each worker given time to exit: no kill, no warning
            cluster.close()
