"""Benchmark: the EM methods on a real ``dask.distributed`` cluster (issue 21).

A ``LocalCluster`` of two worker processes (one thread each, no dashboard, loopback only, a memory limit per
worker of :data:`MEMORY_LIMIT`) and a ``Client``, started by the run (a client already running in the
process, e.g. the test suite's, is used instead; the workers' real memory limit is recorded). Every time is
a wall-clock ratio against a reference timed in the same run, interleaved repeat by repeat, BLAS limited to
one thread in the client process (the workers have one by distributed's default) so both sides use two
cores.

Part A, one EM pass (``part == "pass"``): the pass of the EM iteration (:meth:`repro._chunked.DaskSource.
products`, ``Y'YQ`` and ``(YQ)'(YQ)`` for a ``p x k`` block ``Q``; ``k = 10``) on the cluster, the array
persisted on the workers (the usual way to iterate there), against the same pass on the threaded scheduler
(two threads) of the same data held in the client's memory, in the same chunks. Goal (the issue): within
1.5x. Data: ``400000 x 100`` standard normal in 16 row chunks (``--quick``: ``20000 x 50`` in 8), each chunk
made where it is used (no array in a task graph).

Part B, a tall array larger than one worker's memory limit (``part == "tall"``): ``1,500,000 x 64`` float64
(732 MiB; ``--quick``: ``100000 x 16``, which is *not* larger than the limit, so the quick run cannot
reproduce that part), written to a ``.npy`` file in a temporary folder and read from disk in row chunks of
50,000 (``--quick``: 25,000) by each task (``np.load(mmap_mode="r")`` inside the task: the file's pages, never
the array, travel), five components of variances 20, 12, 8, 5, 3 over unit noise, shifted by 3 (so centring
matters). EMPCA (``n_components=5``, the library's default oversampled block EM) against
``dask.array.linalg.svd_compressed`` of the centred array (its column means computed in one pass first, its
time included; ``compute=True``, which the Dask documentation recommends for data larger than memory), **at
equal accuracy**: the target is a sine of the largest principal angle to the exact top-5 subspace of at most
:data:`TARGET` (the exact subspace from the ``p x p`` covariance, formed once by
:func:`repro._chunked.dask_covariance`, untimed). Each method gets the cheapest setting that reaches it: EMPCA
stops at the first iteration whose subspace is within the target (a callback that knows the exact subspace:
the number of passes a perfectly tuned ``tol`` would give), ``svd_compressed`` runs with the smallest
``n_power_iter`` (0, 1, 2, ...) that reaches it, found by untimed calibration runs. The ratio is EMPCA's time
over ``svd_compressed``'s; stated goal, fixed before the run: EMPCA no slower (ratio at most 1).
The target is ``1e-4``: the first full run used ``1e-6``, where ``svd_compressed`` stalled at 4.5e-6
(it never reached the target, so its time was only a lower bound) after calibration runs up to
``n_power_iter = 8``, about 90 passes over the 732 MiB file, which made the benchmark cost 21 minutes on
the loaded machine; at ``1e-4`` both methods reach the target with a few passes, so the ratio is at equal
accuracy.
When ``svd_compressed`` does not reach the target even at ``n_power_iter`` = :data:`MAX_POWER_ITER` (8),
it is timed at 8: its time is then a lower bound of its time at equal accuracy, so a ratio below the goal
holds a fortiori and one above it decides nothing (too close to call). (The first full run met this case:
the sine stalled at 4.5e-6; the check first called it "not reproduced" for either method missing the
target, which blamed EMPCA for the reference's miss; it now says which method missed.)

Repeats: 5 for part A, 3 for part B (``--quick``: 3 and 1). The check decides each goal with
:func:`experiments.runner.claims.call_timing` (15% band around the threshold, quartiles on the right side),
so a verdict does not flip with the machine's load; a repeat whose accuracy misses the target makes the tall
claim not reproduced.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from experiments.runner import _common
from experiments.runner.claims import NOT_REPRODUCED, Claim, Outcome, call_timing

TITLE = (
    "Benchmark: an EM pass on dask.distributed vs threads; EMPCA vs svd_compressed beyond a worker's memory"
)

GOAL_PASS = 1.5
GOAL_TALL = 1.0
TARGET = 1e-4  # see the module docstring: 1e-6 cost 90 calibration passes and svd_compressed stalled above it
MEMORY_LIMIT = 640 * 2**20  # bytes per worker: above the ~330 MB a worker holds once repro is imported
K_PASS = 10
K_TALL = 5
TALL_VARIANCES = (20.0, 12.0, 8.0, 5.0, 3.0)
MAX_POWER_ITER = 8


def _sizes(quick: bool) -> dict:
    if quick:
        return dict(
            n_pass=20_000,
            p_pass=50,
            chunks_pass=8,
            n_tall=100_000,
            p_tall=16,
            rows=25_000,
            rep_pass=3,
            rep_tall=1,
        )
    return dict(
        n_pass=400_000,
        p_pass=100,
        chunks_pass=16,
        n_tall=1_500_000,
        p_tall=64,
        rows=50_000,
        rep_pass=5,
        rep_tall=3,
    )


def _normal_rows(seed: int, i: int, m: int, p: int) -> np.ndarray:
    """Chunk ``i`` (``m x p`` standard normal) of part A's array: made where it is needed (a worker, or
    the client for the threaded reference), so no array travels in a task graph."""
    return np.random.default_rng([seed, i]).standard_normal((m, p))


# --------------------------------------------------------------------------- the tall array on disk
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


# --------------------------------------------------------------------------- the two parts
def _time(f):
    t0 = time.perf_counter()
    out = f()
    return time.perf_counter() - t0, out


def _bench_pass(client, sz, seed) -> list[dict]:
    import dask
    import dask.array as da

    from repro._chunked import DaskSource

    rng = np.random.default_rng(seed)
    n, p, nc = sz["n_pass"], sz["p_pass"], sz["chunks_pass"]
    m = n // nc
    local = da.from_array(np.concatenate([_normal_rows(seed, i, m, p) for i in range(nc)]), chunks=(m, p))
    make = dask.delayed(_normal_rows, pure=True)
    parts = [da.from_delayed(make(seed, i, m, p), shape=(m, p), dtype=np.float64) for i in range(nc)]
    on_cluster = client.persist(da.concatenate(parts, axis=0))
    from distributed import wait

    wait(on_cluster)
    Q = np.linalg.qr(rng.standard_normal((p, K_PASS)))[0]
    with dask.config.set(scheduler="threads", num_workers=2):
        src_threads = DaskSource(local)
        want = src_threads.products(Q)  # warm-up and the reference answer
    src_cluster = DaskSource(on_cluster)
    got = src_cluster.products(Q)
    err = max(float(np.max(np.abs(a - b)) / np.max(np.abs(b))) for a, b in zip(got, want, strict=True))
    rows = []
    for r in range(sz["rep_pass"]):
        with dask.config.set(scheduler="threads", num_workers=2):
            t_thr, _ = _time(lambda: src_threads.products(Q))
        t_dist, _ = _time(lambda: src_cluster.products(Q))
        rows.append(
            dict(
                part="pass",
                repeat=r,
                ratio=t_dist / t_thr,
                ours_s=t_dist,
                ref_s=t_thr,
                n=n,
                p=p,
                k=K_PASS,
                n_chunks=nc,
                max_rel_diff=err,
            )
        )
    del on_cluster
    return rows


def _bench_tall(client, sz, seed, folder) -> list[dict]:
    import dask.array as da

    from repro import EMPCA
    from repro._chunked import dask_covariance

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

    q = 0  # calibration: the smallest number of power iterations that reaches the target (untimed)
    while _sin_angle(V, svdc(q).T) > TARGET and q < MAX_POWER_ITER:
        q += 1
    out = []
    for r in range(sz["rep_tall"]):
        t_em, (est, passes) = _time(empca)
        t_svd, v = _time(lambda: svdc(q))
        out.append(
            dict(
                part="tall",
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
                svd_sin=_sin_angle(V, v.T),
                eig_gap=gap,
            )
        )
    return out


def compute(cfg: _common.Config) -> pd.DataFrame:
    from distributed import Client, LocalCluster

    sz = _sizes(cfg.quick)
    folder = tempfile.mkdtemp(prefix="repro-bench-dask-")
    try:
        client, cluster = Client.current(), None  # a client already running (the test suite's): use it
    except ValueError:
        cluster = LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            host="127.0.0.1",
            memory_limit=MEMORY_LIMIT,
        )
        client = Client(cluster)
    try:
        workers = client.scheduler_info()["workers"].values()
        limit = min(int(w.get("memory_limit") or 0) or 2**62 for w in workers)
        with threadpool_limits(limits=1, user_api="blas"):
            rows = _bench_pass(client, sz, cfg.seed) + _bench_tall(client, sz, cfg.seed, folder)
    finally:
        if cluster is not None:
            client.close()
            cluster.close()
        shutil.rmtree(folder, ignore_errors=True)
    df = pd.DataFrame(rows)
    df["n_workers"] = len(workers)
    df.loc[df.part == "tall", "memory_limit"] = limit  # what the workers really have
    return df


# --------------------------------------------------------------------------- figure and claims
def plot(df: pd.DataFrame, cfg: _common.Config):
    fig, axes = plt.subplots(1, 2, figsize=(7.5, 3.0))
    spec = {
        "pass": ("one EM pass: distributed / threads", GOAL_PASS),
        "tall": ("EMPCA / svd_compressed, equal accuracy", GOAL_TALL),
    }
    for ax, (part, (title, goal)) in zip(axes, spec.items(), strict=True):
        v = df[df.part == part].ratio
        ax.plot(np.zeros(v.size), v, "o", color="tab:blue", alpha=0.6)
        ax.plot([-0.2, 0.2], [v.median()] * 2, color="black")
        ax.axhline(goal, color="gray", ls="--", lw=0.8, label=f"goal {goal:g}x")
        ax.set_xticks([])
        ax.set_xlim(-0.6, 0.6)
        ax.set_title(title, fontsize=8)
        ax.set_ylabel("time ratio (repeats; bar: median)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _verdict(call) -> str:
    from experiments.runner.claims import REPRODUCED, TOO_CLOSE

    return {"met": REPRODUCED, "missed": NOT_REPRODUCED}.get(call.state, TOO_CLOSE)


def _check_pass(df):
    g = df[df.part == "pass"]
    call = call_timing(g.ratio, GOAL_PASS)
    r = g.iloc[0]
    note = (
        f"{int(r.n)} x {int(r.p)} in {int(r.n_chunks)} chunks, k = {int(r.k)}; the array persisted on "
        f"{int(r.n_workers)} worker processes vs held by the client on 2 threads; same sums (max rel. diff "
        f"{g.max_rel_diff.max():.1e}); wall-clock ratio, {call.n} interleaved repeats"
    )
    return Outcome(call.text(unit="x"), _verdict(call), note)


def _check_tall(df):
    g = df[df.part == "tall"]
    call = call_timing(g.ratio, GOAL_TALL)
    r = g.iloc[0]
    note = (
        f"{int(r.n)} x {int(r.p)} ({r['nbytes'] / 2**20:.0f} MiB on disk) vs a "
        f"{r.memory_limit / 2**20:.0f} MiB "
        f"limit per worker; EMPCA {int(g.em_passes.median())} iterations, svd_compressed n_power_iter = "
        f"{int(r.power_iter)}; sin(angle) to the exact subspace: EMPCA <= {g.em_sin.max():.1e}, "
        f"svd_compressed <= {g.svd_sin.max():.1e} (target {TARGET:g}); lambda6/lambda5 = {r.eig_gap:.3f}"
    )
    if not (g["nbytes"] > g["memory_limit"]).all():
        return Outcome(
            call.text(unit="x"),
            NOT_REPRODUCED,
            "the array is not larger than a worker's memory "
            "limit here (quick sizes), so the setting is not tested; " + note,
        )
    if (g.em_sin > TARGET).any():
        return Outcome(call.text(unit="x"), NOT_REPRODUCED, "EMPCA missed the accuracy target; " + note)
    if (g.svd_sin > TARGET).any():
        if (g.power_iter < MAX_POWER_ITER).any():  # calibrated to reach it, yet missed it
            return Outcome(
                call.text(unit="x"),
                NOT_REPRODUCED,
                "svd_compressed missed the target at "
                "its calibrated setting, so the accuracies differ; " + note,
            )
        # not reached at the largest setting: its time is a lower bound of its time at equal accuracy
        from experiments.runner.claims import TOO_CLOSE

        bound = (
            f"svd_compressed did not reach the target even at n_power_iter = {MAX_POWER_ITER}, so its time "
            "is a lower bound of its time at equal accuracy: a ratio below the goal holds a fortiori, one "
            "above it decides nothing; "
        )
        return Outcome(
            call.text(unit="x"), _verdict(call) if call.state == "met" else TOO_CLOSE, bound + note
        )
    return Outcome(call.text(unit="x"), _verdict(call), note)


CLAIMS = [
    Claim(
        "pass-distributed-1.5x",
        "Issue 21 goal: one EM pass on dask.distributed (two worker processes, the array persisted) within "
        "1.5x of the threaded scheduler on the same array",
        "<= 1.5x",
        _check_pass,
        machine_dependent=True,
    ),
    Claim(
        "tall-empca-vs-svd-compressed",
        "Issue 21: EMPCA on a tall array larger than one worker's memory limit, read from disk in chunks, "
        "no slower than dask.array.linalg.svd_compressed at equal accuracy (largest principal angle to the "
        "exact subspace, sine <= 1e-6)",
        "<= 1x",
        _check_tall,
        machine_dependent=True,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
