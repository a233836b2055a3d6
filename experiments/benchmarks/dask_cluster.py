"""Benchmark: the EM methods on a real ``dask.distributed`` cluster.

Each part runs on its own ``LocalCluster`` of two worker processes (one thread each, no dashboard, loopback
only) and a ``Client``, started by the run (a client already running in the process, e.g. the test
suite's, is used instead; the workers' real memory limit is recorded): part A with
:data:`PASS_MEMORY_LIMIT` (3 GiB) per worker, so that its persisted data never spill to disk (with part B's
640 MiB a worker holding 160 MiB of data next to its own ~230 MiB spilled chunks and read them back in the
timed passes), part B with :data:`MEMORY_LIMIT`. Every time is a wall-clock ratio against a reference
timed in the same run, interleaved repeat by repeat, BLAS limited to one thread in the client process (the
workers have one by distributed's default) so both sides use two cores. The clusters log nothing: no
spilling (the memory limits above), no port taken, no worker killed at close (``_dask_cluster.py``).

Part A, one EM pass (``part == "pass"``): the pass of the EM iteration (:meth:`repro.sources.DaskSource.
products`, ``Y'YQ`` and ``(YQ)'(YQ)`` for a ``p x k`` block ``Q``; ``k = 10``, ``p = 100``) on the cluster,
the array persisted on the workers (the usual way to iterate there), against the same pass on the threaded
scheduler (two threads) of the same data held in the client's memory, in the same chunks. Each chunk is
made where it is used (no array in a task graph). Goal (the issue): within 1.5x. The issue gives no array
size, and what the cluster adds is per pass (scheduler round trips, a few tasks) while the work grows with
the data, so the ratio falls with the size of the chunks; the run therefore measures a curve, 8 chunks of
2, 10, 39 and 128 MiB (2,500 to 167,772 rows each), and the issue's first setting (``400000 x 100`` in 16
chunks of 20 MiB), and decides the claim at one size fixed before any measurement there (``role ==
"verdict"``): 8 chunks of 128 MiB, 1 GiB in all. Why that size: 128 MiB is Dask's default
``array.chunk-size``, the chunk size ``dask.array`` itself picks for a large array, so it is what a user's
array on a cluster has unless they chose otherwise; 8 chunks keep 4 per worker (more chunks of that size
would only lengthen the run: the ratio is per chunk). Repeats: 5 at the verdict's size, 3 elsewhere
(``--quick``: ``p = 50``, 4 chunks of 1,000 and 5,000 rows, the issue setting ``20000 x 50`` in 8, 2 and 3
repeats; the quick verdict is at 2 MiB chunks, so it says nothing about the full one). Each repeat times
:data:`INNER` (3) passes of each side, interleaved, and keeps the fastest of each: on a 2-core machine
busy with other processes, one pass of 1 GiB took 0.4 to 7 s, and the
fastest of three is the reading least disturbed by the load (the first full run, one pass per side and
repeat, spread 0.78-2.29x at the verdict's size).

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
:func:`repro.sources.dask_covariance`, untimed). Each method gets the cheapest setting that reaches it: EMPCA
stops at the first iteration whose subspace is within the target (a callback that knows the exact subspace:
the number of passes a perfectly tuned ``tol`` would give), ``svd_compressed`` runs with the smallest
``n_power_iter`` that reaches it (the search is below). The ratio is EMPCA's time
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

Part B's search for the cheapest ``n_power_iter`` starts where the rate of randomized subspace iteration
puts it for the right singular vectors, ``(lambda_{k+11} / lambda_k)^(q + 1) <= TARGET`` with the exact
eigenvalues (Dask's 10 oversamples; the first full run started from the exponent ``q + 1/2``, one step
too high, which cost one more run), and walks down while ``q - 1`` still reaches the target, up while
``q`` does not, so the smallest ``q`` is still found and proven (``q - 1`` run and missed); every run is
timed and the run at the ``q`` found is the reference's time (it is the same call as a separate timed
run). This replaced a search from ``q = 0`` (63 passes over the 732 MiB file before the timed runs), and
the repeats went from 3 to 1: the ratio was 0.41-0.44 over three repeats against a goal of 1, far outside
its band (on a quiet machine; see the ledger's note for the run's own value).

The check decides each goal with :func:`experiments.runner.claims.call_timing` (a 15% band around the
threshold, which the run's own interval of the median must clear; else too close to call),
so a verdict does not flip with the machine's load; a repeat whose accuracy misses the target makes the
tall claim not reproduced.
"""

from __future__ import annotations

import shutil
import tempfile

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments.benchmarks._dask_cluster import (
    MAX_POWER_ITER,
    MEMORY_LIMIT,
    PASS_MEMORY_LIMIT,
    TARGET,
    pass_rows,
    run_part,
    sizes,
    tall_rows,
)
from experiments.runner import _common
from experiments.runner.claims import NOT_REPRODUCED, Claim, Outcome, call_timing

TITLE = (
    "Benchmark: an EM pass on dask.distributed vs threads; EMPCA vs svd_compressed beyond a worker's memory"
)

GOAL_PASS = 1.5
GOAL_TALL = 1.0


def compute(cfg: _common.Config) -> pd.DataFrame:
    sz = sizes(cfg.quick)
    folder = tempfile.mkdtemp(prefix="repro-bench-dask-")
    try:
        rows_pass, _, n_workers = run_part(pass_rows, PASS_MEMORY_LIMIT, sz, cfg.seed)
        rows_tall, limit, _ = run_part(tall_rows, MEMORY_LIMIT, sz, cfg.seed, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    df = pd.DataFrame(rows_pass + rows_tall)
    df["n_workers"] = n_workers
    df.loc[df.part == "tall", "memory_limit"] = limit  # what the workers really have
    return df


# --------------------------------------------------------------------------- figure and claims
def plot(df: pd.DataFrame, cfg: _common.Config):
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(8.0, 3.2))
    _plot_pass(ax, df)
    _plot_tall(bx, df)
    fig.tight_layout()
    return fig


def _plot_pass(ax, df):
    """Part A: one EM pass on the cluster against the threaded scheduler, over the chunk size."""
    g = df[df.part == "pass"]
    curve = g[g.role != "issue setting"]
    med = curve.groupby("chunk_mib").ratio.median()
    ax.plot(curve.chunk_mib, curve.ratio, "o", color="tab:blue", alpha=0.5, label="repeats (8 chunks)")
    ax.plot(med.index, med.values, "-", color="tab:blue", label="median")
    v = g[g.role == "verdict"]
    ax.plot(v.chunk_mib, v.ratio, "o", mfc="none", mec="black", ms=9, label="verdict's size")
    i = g[g.role == "issue setting"]
    if len(i):
        ax.plot(i.chunk_mib, i.ratio, "s", color="tab:orange", alpha=0.6, label="issue's first setting")
    ax.axhline(GOAL_PASS, color="gray", ls="--", lw=0.8, label=f"goal {GOAL_PASS:g}x")
    ax.set_xscale("log")
    ax.set_xlabel("chunk size (MiB)")
    ax.set_ylabel("one EM pass: distributed / threads")
    ax.set_title("one EM pass, persisted on 2 worker processes", fontsize=8)
    ax.legend(fontsize=6)


def _plot_tall(bx, df):
    """Part B: EMPCA against svd_compressed at equal accuracy."""
    t = df[df.part == "tall"].ratio
    bx.plot(np.zeros(t.size), t, "o", color="tab:blue", alpha=0.6)
    bx.plot([-0.2, 0.2], [t.median()] * 2, color="black")
    bx.axhline(GOAL_TALL, color="gray", ls="--", lw=0.8, label=f"goal {GOAL_TALL:g}x")
    bx.set_xticks([])
    bx.set_xlim(-0.6, 0.6)
    bx.set_title("EMPCA / svd_compressed, equal accuracy", fontsize=8)
    bx.set_ylabel("time ratio")
    bx.legend(fontsize=7)


def _verdict(call) -> str:
    from experiments.runner.claims import REPRODUCED, TOO_CLOSE

    return {"met": REPRODUCED, "missed": NOT_REPRODUCED}.get(call.state, TOO_CLOSE)


DEFAULT_NOTE = " (Dask's default chunk size)"


def _check_pass(df):
    g = df[df.part == "pass"]
    v = g[g.role == "verdict"]
    call = call_timing(v.ratio, GOAL_PASS)
    r = v.iloc[0]
    med = g.groupby(["role", "chunk_mib", "n_chunks"], sort=False).ratio.median()
    curve = ", ".join(f"{mib:.3g} MiB x {nc}: {x:.2f}x" for (role, mib, nc), x in med.items())
    note = (
        f"verdict at {int(r.n)} x {int(r.p)} in {int(r.n_chunks)} chunks of {r.chunk_mib:.3g} MiB"
        f"{DEFAULT_NOTE if r.chunk_mib >= 127 else ''}, k = {int(r.k)}; the array persisted on "
        f"{int(r.n_workers)} worker processes vs held by the client on 2 threads; same sums (max rel. "
        f"diff {g.max_rel_diff.max():.1e}); "
        f"wall-clock ratio, {call.n} interleaved repeats, decided with {call.band_text()}; median ratio "
        f"by chunk size (chunk x count, "
        f"the issue's first setting last): {curve}"
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
        f"{int(r.power_iter)} (the cheapest reaching the target; {int(r.power_iter_tried)} settings run); "
        f"sin(angle) to the exact subspace: EMPCA <= {g.em_sin.max():.1e}, "
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


GOALS = [
    Claim(
        "pass-distributed-1.5x",
        "Project goal: one EM pass on dask.distributed (two worker processes, the array persisted) within "
        "1.5x of the threaded scheduler on the same array (1 GiB in chunks of Dask's default 128 MiB)",
        "<= 1.5x",
        _check_pass,
        machine_dependent=True,
    ),
    Claim(
        "tall-empca-vs-svd-compressed",
        "Project goal: EMPCA on a tall array larger than one worker's memory limit, read from disk in chunks,"
        " no slower than dask.array.linalg.svd_compressed at equal accuracy (largest principal angle to the "
        f"exact subspace, sine <= {TARGET:g})",
        "<= 1x",
        _check_tall,
        machine_dependent=True,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
