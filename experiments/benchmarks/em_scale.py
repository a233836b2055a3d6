"""Benchmark: EM PCA at scale, in memory and beyond memory (Roweis 1997, Sec. 6: "2^17 points in 2^12
dimensions in a few hours").

Three measurements:

(a) **In memory, iteration cost against the products**, on a 1e6 x 1e3 float64 matrix (8 GB, C order)
    held in memory, as the goal states, in a fresh child process (its memory goes back on exit; its
    peak resident memory, ``VmHWM``, is recorded per method). One EM iteration of the public function
    against the two BLAS products it cannot avoid, with as many columns as the EM carries:
    ``EMPCA(10)`` with Roweis' iteration (``n_oversamples=0``; ``X Q``, ``X'(XQ)`` with 10 columns: one
    float64 pass over centred row blocks of 100 rows, whose products OpenBLAS multiplies with its
    small-matrix kernels, ``repro._chunked.SMALL_PRODUCT_SIZE``), the
    default block EM with its Rayleigh-Ritz step (20 columns; its first passes, the ones timed here, are
    float32), and ``EMSparsePCA`` (one component,
    cardinality 25, one random start, ``operator="data"``: the iteration through the data the goal
    speaks of; ``X w``, ``X'y`` with one column; 25 is below ``D / 32``, so ``X w`` of the sparse iterate
    goes through its support, gathered from the rows, as it does for any sparse enough iterate). The
    iterations are timed inside one fit per method:
    EMPCA's callback, and EMSparsePCA's (its fit through a :class:`repro.linalg.Covariance` over
    ``A = (X - mean) / sqrt(n - 1)``, centred and scaled in place so the fit holds no copy; called after
    every EM iteration), first run the
    reference products (timed) and mark the end; the time from that mark to the next call is one EM
    iteration (its pass over the data and the small update), so iterations and references alternate
    and each ratio is of neighbours. Set-up excluded (EMPCA's first pass for the mean; EMSparsePCA's
    rank and start, which form ``A'A``, and its first iteration, from the dense start). Goal 1.3x. As
    information, the rows record what ``operator="auto"`` picks for this shape (one start and the
    default five) and what forming the covariance costs in data iterations (k = 1), both measured once
    on the first 50000 rows (both costs are linear in the rows).
(b) **Roweis' case from disk.** A 2^17 x 2^12 float64 array (4.3 GB) written to a temporary directory as
    a ``numpy.memmap``, wrapped by ``dask.array.from_array`` in row chunks; ``EMPCA(10)`` reads it once
    per iteration, one Dask task per chunk. Run in a fresh child process, whose peak resident memory
    (``VmHWM``) shows that memory is bounded by the chunks in flight, not by the array. The reader opens
    the memmap for each chunk and copies the chunk out, so pages of the file are not kept mapped in the
    process (a single long-lived memmap would count every page read as resident memory until the kernel
    reclaims it). Roweis' run had missing values, so (b) also measures iterations on the same array with
    5% of the entries missing (NaN inserted by the reader at reproducible random places): the
    generalized e-step per chunk. That fit is not run to convergence (it would exceed the time budget of
    the full run): its time is extrapolated from the measured seconds per iteration and the iterations
    Roweis' EM needs at its rate ``lambda_11/lambda_10`` (of the planted spectrum) to reach a subspace
    change of 1e-6, and stated as such.
(c) **Against ``dask.array.linalg.svd_compressed``** (randomized, ``n_power_iter=2``: six passes over
    the data; ``compute=True``, Dask's setting for data larger than memory, which reads the input again
    for every pass; with the default ``compute=False`` the scheduler keeps every chunk in memory between
    passes) on the same centred chunked array: EM's time to reach the same subspace accuracy (from the
    timeline of the fit in (b): every iteration's subspace and time stamps are recorded by a callback)
    against svd_compressed's time. Accuracy: sine of the largest principal angle to the reference
    subspace, the EM fit of (b) run to ``tol=1e-5`` (its own error is about ``0.24 * 1e-5``, far below
    the compared accuracies, about 3e-2). The verdict uses **process CPU time** (both Dask threads:
    the products and copying each chunk out of the page cache or the file), which counts the work of
    each method whatever the page cache holds; the wall-clock ratio, which depended on it (1.1x to 1.9x
    over four runs, when the goal was decided on wall time with a factor-2 band), is reported alongside.

Choices (and why)
-----------------
* **Sizes**: (a) 1e6 x 1e3, the goal's size: the array (8 GB) is filled in place block by block; the
  fits add no copy of it (EMPCA walks large arrays by centred row blocks; peak about 8.6 GiB; the machine
  has 24 GB). (b, c) 2^17 x 2^12 as in the paper, chunks of 2048 rows (64 MB). ``--quick``: 20000 x 200
  (EMSparsePCA cardinality 5) and 2^12 x 2^8.
* **Data**: ``y = W x + v + mu``: ``W`` (p x 32) orthonormal columns scaled to standard deviations
  ``10 * 0.1^(j/31)``, ``x`` standard normal, ``v`` independent uniform entries of unit variance
  (isotropic unit noise; uniform draws are five times cheaper than normal ones at 1e9 entries), ``mu``
  a standard normal mean: covariance ``W W' + I``, a spectrum decaying past the 10th eigenvalue
  (``lambda_11/lambda_10 = 0.87``, ``lambda_21/lambda_10 = 0.24``); generated block by block in
  place from seeded Generators (``default_rng([seed, block])``).
* **Threads**: BLAS limited to one thread per task (the library's policy); Dask's threaded scheduler runs
  one task per core (2 here). (a) uses one BLAS thread for the iterations and the references
  (EMSparsePCA's one-off set-up, forming ``A'A``, runs on both cores to save time; its iterations and
  references run on one).
* **Repeats**: (a) Roweis' iteration: 9 iterations (``claims.MIN_PAIRS``), each next to its reference
  in alternating order (reference before the iteration, then after the next one, ...), decided by
  ``call_paired`` on the 95% interval of the median ratio (edge 1.3 / 1.15 = 1.13x). With 3 pairs and the
  history band it read 0.79, 0.69, 1.00, 0.97, 0.88 and 1.06 over six full runs (sigma 0.157: band 37%,
  edge 0.95x), because its pass then cost about its two products: centring each 4 MiB block (0.3x) and two
  products from cache that were no faster than from memory (about 0.65-0.7x; 200000 x 1000, one process:
  blocked pass 0.95-1.13x the reference, centring alone 0.31x, ``X Q`` alone 0.42x). In blocks of 100 rows
  the products use OpenBLAS's small-matrix GEMM: the pass costs 0.69x (same process, same array; the old
  blocks 1.13x). The block EM (3 pairs; its timed passes are float32, 0.61-0.64x) and EMSparsePCA (3
  pairs, 0.77x) keep 3, far from their edges (process CPU time: one BLAS thread, so other processes on the
  machine do not count). A data iteration costs 0.6-3.5 s here, and the part's wall
  time is dominated by filling 8 GB (the first touch of fresh memory is slow on this virtual machine,
  about 2 s per GB) and set-up; (b) and (c) one run each (each reads 4.3 GB per pass; repeating them
  does not fit the time budget of the full run): their verdicts are on a single measurement and say so.
  The reference fit of (b) stops at ``tol=1e-5`` (was 1e-7: 3 passes fewer, about 12 s). The
  missing-value fit is stopped (by its callback) once its one iteration is timed, so it does not make
  its final Rayleigh-Ritz pass, which the extrapolation counts as one more iteration.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments.benchmarks._em_scale import DISK_TOL, MISSING_FRAC, from_disk_rows, in_memory_rows
from experiments.runner import _common
from experiments.runner.claims import (
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    Outcome,
    call_timing,
)

TITLE = "Benchmark: EM PCA at scale (in memory, 2^17 x 2^12 from disk with Dask, vs svd_compressed)"

GOAL = 1.3
FEW_HOURS_S = 3 * 3600.0


def compute(cfg: _common.Config) -> pd.DataFrame:
    return pd.DataFrame(in_memory_rows(cfg) + from_disk_rows(cfg))


# --------------------------------------------------------------------------- plot
def _em_match(df: pd.DataFrame, clock: str = "seconds") -> tuple[float, float, float]:
    """(svd_compressed time, EM time to the same sin, that sin) from the disk rows; ``clock`` is the column
    of the times: ``"seconds"`` (wall) or ``"cpu_seconds"`` (process CPU time, all Dask threads)."""
    d = df[df.part == "disk"]
    svd = d[d.method.str.startswith("svd_compressed")].iloc[0]
    tl = d[d.method == "EM timeline"].sort_values("seconds")
    hit = tl[tl.sin_to_reference <= svd.sin_to_reference]
    t_em = float(hit[clock].iloc[0]) if len(hit) else float("nan")
    return float(svd[clock]), t_em, float(svd.sin_to_reference)


def _short(method: str) -> str:
    return (
        method.replace(" + Rayleigh-Ritz", " + RR").replace(", cardinality", ",\ncard.").replace(" (", "\n(")
    )


def plot(df: pd.DataFrame, cfg: _common.Config):
    fig, axes = plt.subplots(1, 3, figsize=(14.0, 4.4))
    _plot_in_memory(axes[0], df)
    _plot_disk(axes[1], df)
    _plot_memory(axes[2], df)
    fig.tight_layout()
    return fig


def _plot_in_memory(ax, df):
    """(a) an EM iteration in units of its two products, with quartiles and peak memory."""
    a = df[df.part == "in_memory"]
    ax.bar(range(len(a)), a.ratio, color=["tab:purple", "tab:blue", "tab:green"][: len(a)])
    for x, r in enumerate(a.itertuples()):
        q = np.percentile([float(v) for v in str(r.ratio_samples).split()], [25, 75])
        ax.plot([x, x], q, color="black", linewidth=2)
        ax.text(
            x,
            max(q[1], r.ratio),
            f"{r.ratio:.2f}x\npeak {r.peak_rss_mb / 1024:.1f} GiB",
            ha="center",
            va="bottom",
            fontsize=9,
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1},
        )
    ax.set_xticks(range(len(a)))
    ax.set_xticklabels([_short(m) for m in a.method], fontsize=9)
    ax.axhline(GOAL, color="tab:red", linestyle="--", label="goal 1.3x")
    ax.axhline(1.0, color="black", linewidth=0.8)
    upper = [np.percentile([float(v) for v in str(s).split()], 75) for s in a.ratio_samples]
    ax.set_ylim(0, max(GOAL, float(a.ratio.max()), *upper) * 1.25)
    ax.set_ylabel("EM iteration / its two products", fontsize=10)
    ax.set_title(f"(a) in memory, {a['shape'].iloc[0]} float64, 1 thread", fontsize=11)
    ax.legend(fontsize=9)


def _plot_disk(ax, df):
    """(b, c) the EM fit's accuracy over time from disk, and svd_compressed's point."""
    d = df[df.part == "disk"]
    tl = d[d.method == "EM timeline"].sort_values("seconds").iloc[:-1]  # the last iterate is the reference
    ax.semilogy(tl.seconds, tl.sin_to_reference, "o-", color="tab:blue", label="EMPCA(10)")
    t_svd, t_em, s_svd = _em_match(df)
    ax.semilogy([t_svd], [s_svd], "s", color="tab:orange", markersize=9, label="svd_compressed, 2 power its")
    if np.isfinite(t_em):
        ax.axvline(t_em, color="tab:blue", linestyle=":", linewidth=1)
    ax.set_xlabel("seconds (incl. the first pass for the mean)", fontsize=10)
    ax.set_ylabel(f"sin to the final (tol {DISK_TOL:g}) subspace", fontsize=10)
    ax.set_title(f"(b, c) {d['shape'].iloc[0]} from disk via Dask", fontsize=11)
    ax.legend(fontsize=9)


def _plot_memory(ax, df):
    """(b) memory: the array on disk against the peak RSS of the fit and of the whole process."""
    d = df[df.part == "disk"]
    main = d[d.method.str.startswith("EMPCA(10)")].iloc[0]
    vals = [main.array_mb, main.rss_after_em_mb, main.peak_rss_mb]
    ax.bar([0, 1, 2], vals, color=["lightgray", "tab:green", "tab:olive"])
    ax.set_xticks([0, 1, 2])
    ax.set_xticklabels(["array on disk", "peak RSS,\nEM fit", "peak RSS, + svd_c.\n+ missing"], fontsize=10)
    ax.set_ylabel("MB", fontsize=10)
    ax.set_title("(b) memory", fontsize=11)
    for x, v in enumerate(vals):
        ax.text(x, v, f"{v:.0f} MB", ha="center", va="bottom", fontsize=10)


def table(df: pd.DataFrame, cfg: _common.Config) -> str:
    a = df[df.part == "in_memory"]
    lines = [
        "| in memory | shape | EM iteration / products (quartiles, repeats) | iteration | peak RSS |",
        "|---|---|---|---|---|",
    ]
    for r in a.itertuples():
        lo, hi = np.percentile([float(v) for v in str(r.ratio_samples).split()], [25, 75])
        lines.append(
            f"| {r.method} | {r.shape} | {r.ratio:.2f}x ({lo:.2f}-{hi:.2f}, {int(r.repeats)}) | "
            f"{r.seconds:.2f} s | {r.peak_rss_mb / 1024:.1f} GiB |"
        )
    sp = a[a.method.str.startswith("EMSparsePCA")]
    if len(sp):
        s = sp.iloc[0]
        lines += [
            "",
            f'Array {s.array_mb / 1024:.1f} GiB. For this shape `operator="auto"` picks '
            f"`{s.auto_one_start}` for one start and `{s.auto_default_starts}` for the default 5 starts; "
            f"forming the covariance costs {s.cov_form_iterations:.0f} data iterations (k = 1; measured on "
            f"{int(s.cov_rows)} rows, both linear in the rows).",
        ]
    d = df[df.part == "disk"]
    main = d[d.method.str.startswith("EMPCA(10)")].iloc[0]
    miss = d[d.method.str.contains("missing")].iloc[0]
    t_svd, t_em, s_svd = _em_match(df)
    lines += [
        "",
        "| from disk (Dask) | value |",
        "|---|---|",
        f"| array | {main['shape']}, {main.array_mb:.0f} MB, chunks of {int(main.chunk_rows)} rows |",
        f"| EMPCA(10) to tol {DISK_TOL:g} | {main.seconds:.1f} s, {int(main.n_iter)} iterations |",
        f"| peak RSS: EM fit / whole process | {main.rss_after_em_mb:.0f} MB / {main.peak_rss_mb:.0f} MB |",
        f"| 5% missing: per iteration | {miss.seconds:.2f} s (extrapolated fit: "
        f"{miss.extrapolated_seconds:.0f} s for {int(miss.n_iter)} iterations) |",
        f"| svd_compressed (2 power iterations) | {t_svd:.1f} s, sin {s_svd:.1e} |",
        f"| EM to the same accuracy | {t_em:.1f} s |",
        "| CPU time (process, all Dask threads): svd_compressed / EM to the same accuracy | "
        "{:.1f} s / {:.1f} s |".format(*_em_match(df, "cpu_seconds")[:2]),
    ]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- claims
def _check_in_memory(prefix: str):
    def check(df: pd.DataFrame) -> Outcome:
        a = df[df.part == "in_memory"]
        r = a[a.method.str.startswith(prefix)].iloc[0]
        # interleaved pairs in alternating order: at least MIN_PAIRS, the run's own interval
        call = call_timing([float(v) for v in str(r.ratio_samples).split()], GOAL)
        rule = (
            "decided on the 95% CI of the median ratio, 15% margin"
            if call.interval == "ci"
            else "decided on the range of the repeats, 15% margin"
        )
        note = (
            f"{r.method}; each EM iteration next to its reference products ({int(r.repeats)} pairs, per-pair "
            f"ratios, process CPU time, 1 BLAS thread; {rule}); float64 array of {r.array_mb / 1024:.1f} "
            f"GiB in memory, peak RSS of the fitting process {r.peak_rss_mb / 1024:.1f} GiB."
        )
        return Outcome(f"{call.text('.2f', 'x')} on {r['shape']}", call.verdict, note)

    return check


def _check_few_hours(df: pd.DataFrame) -> Outcome:
    d = df[df.part == "disk"]
    main = d[d.method.str.startswith("EMPCA(10)")].iloc[0]
    miss = d[d.method.str.contains("missing")].iloc[0]
    times = [float(main.seconds), float(miss.extrapolated_seconds)]
    call = call_timing([max(times)], FEW_HOURS_S)
    return Outcome(
        f"complete data: {main.seconds:.0f} s measured ({int(main.n_iter)} iterations to tol {DISK_TOL:g}); "
        f"{MISSING_FRAC:.0%} missing: {miss.seconds:.2f} s per iteration, about "
        f"{miss.extrapolated_seconds:.0f} s extrapolated for {int(miss.n_iter)} iterations (not run to "
        "convergence)",
        call.verdict,
        f"{main['shape']} from disk through Dask on this 2-core machine; threshold 3 hours for 'a few "
        "hours'. "
        "The missing-value time is measured per iteration and multiplied by the iterations Roweis' EM needs "
        f"at its rate lambda_11/lambda_10 = {main.lam11 / main.lam10:.3f} to a subspace change of 1e-6. One "
        "run (single measurement).",
    )


def _check_memory(df: pd.DataFrame) -> Outcome:
    d = df[df.part == "disk"]
    main = d[d.method.str.startswith("EMPCA(10)")].iloc[0]
    frac = main.rss_after_em_mb / main.array_mb
    return Outcome(
        f"peak RSS during the EM fit {'within' if frac <= 0.25 else 'above'} 25% of the array",
        REPRODUCED if frac <= 0.25 else NOT_REPRODUCED,
        f"a {main.array_mb:.0f} MB array; "
        f"VmHWM of the fitting process (Python, NumPy, Dask, Numba included) after the EM fit, chunks of "
        f"{int(main.chunk_rows)} rows ({main.chunk_rows * main.p * 8 / 2**20:.0f} MB), 2 Dask workers; "
        "threshold 25% of the array.",
        measured=f"peak RSS {main.rss_after_em_mb:.0f} MB during the EM fit ({frac:.1%} of the array); "
        f"whole process incl. svd_compressed and the missing-value iterations: {main.peak_rss_mb:.0f} MB",
    )


def _check_vs_svd(df: pd.DataFrame) -> Outcome:
    c_svd, c_em, s_svd = _em_match(df, "cpu_seconds")
    t_svd, t_em, _ = _em_match(df)
    ratio = c_svd / c_em if np.isfinite(c_em) else 0.0
    wall = t_svd / t_em if np.isfinite(t_em) else 0.0
    # Decided on process CPU time (the work of each method: its products, and copying the chunks from the
    # page cache or the file), which does not depend on whether the 4.3 GB array is in the page cache; the
    # wall-clock ratio did (1.94x, 1.84x, 1.12x, 1.13x over four runs). But one run each is one sample, and
    # the CPU-time ratio still moved between runs (1.39x, 1.46x, 0.76x, 1.20x over four full runs of the
    # final code, the svd_compressed side from 20 to 32 s): a single sample is decided only a factor 2 away.
    call = call_timing([ratio], 1.0, lower_is_better=False, margin=1.0)
    return Outcome(
        f"svd_compressed CPU time / EM CPU time at sin {s_svd:.1e}: {ratio:.2f}x ({c_svd:.1f} s "
        f"vs {c_em:.1f} s); wall clock {wall:.2f}x ({t_svd:.1f} s vs {t_em:.1f} s)",
        call.verdict,
        "EM's time from its timeline (first iteration whose subspace is as accurate, first pass for the mean "
        "included); svd_compressed with n_power_iter=2 on the centred array; process CPU time (both Dask "
        "threads), which counts the work (products, reading the chunks) whatever the page cache holds; the "
        "wall-clock ratio, reported alongside, depends on the page cache and on other processes. One run each"
        " (a single measurement), whose ratio moved from 0.76x to 1.46x over four full runs: decided only a "
        "factor 2 from 1 (reproduced above 2x, not reproduced below 0.5x, else too close to call).",
    )


CLAIMS = [
    Claim(
        "few-hours",
        "Sec. 6: 'I have computed the 10 leading eigenvectors and eigenvalues of 2^17 points in 2^12 "
        "dimensions in a few hours using MATLAB on a modest workstation' (with missing information).",
        "a few hours",
        _check_few_hours,
        machine_dependent=True,
    ),
]

GOALS = [
    Claim(
        f"in-memory-{tag}",
        f"Goal: one {label} iteration on a 1e6 x 1e3 float64 matrix in memory costs at most 1.3x its "
        f"two BLAS products ({products}).",
        "<= 1.3x",
        _check_in_memory(prefix),
        machine_dependent=True,
        case=label,
    )
    for tag, label, products, prefix in (
        ("roweis", "EMPCA(10) (Roweis' iteration)", "X Q, X'(XQ), 10 columns", "Roweis"),
        ("block", "EMPCA(10) (default block EM)", "X Q, X'(XQ), 20 columns", "block"),
        ("sparse", "EMSparsePCA (one component, through the data)", "X w, X'y", "EMSparsePCA"),
    )
] + [
    Claim(
        "memory-bounded",
        "Goal: fitting Roweis' 2^17 x 2^12 case from a chunked on-disk array keeps peak memory far below the "
        "array's 4.3 GB (bounded by a few chunks).",
        "<= 25% of the array",
        _check_memory,
    ),
    Claim(
        "vs-svd-compressed",
        "Goal: EM with oversampling is faster than dask.array.linalg.svd_compressed at equal subspace "
        "accuracy on the same chunked array (it reads the data once per iteration).",
        ">= 1.0x (svd_compressed / EM)",
        _check_vs_svd,
        machine_dependent=True,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
