"""Benchmark: EM PCA at scale, in memory and beyond memory (Roweis 1997, Sec. 6: "2^17 points in 2^12
dimensions in a few hours").

Three measurements, all with ``EMPCA(n_components=10)``:

(a) **In memory, iteration cost against the products.** One EM iteration of the public function against
    the two BLAS products it cannot avoid, ``Y @ Q`` and ``Y.T @ U`` with as many columns as the EM
    carries (10 for Roweis' iteration, ``n_oversamples=0``; 20 for the default block EM with its
    Rayleigh-Ritz step), on a C-contiguous float64 matrix. Iteration cost: the time between two
    successive callbacks of the public function (one pass and the O(pk^2) update; set-up excluded), over
    the median of the products timed just before that fit, repeats interleaved. Goal 1.3x.
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
    timeline of the fit in (b): every iteration's subspace and time stamp are recorded by a callback) against
    svd_compressed's time. Accuracy: sine of the largest principal angle to the reference subspace, the
    EM fit of (b) run to ``tol=1e-7`` (its own error is about 1e-7, far below the compared accuracies).

Choices (and why)
-----------------
* **Sizes**: (a) 100000 x 1000 instead of the 1e6 x 1000 of the goal: the machine has 24 GB shared with
  other jobs, the fit holds the data plus its centred copy (16 GB at 1e6 rows), and the whole benchmark
  must run in about 3 minutes; a tenth of the rows keeps the per-row shape and the cost per row (the
  matrix, 800 MB, is far larger than any cache). (b, c) 2^17 x 2^12 as in the paper, chunks of
  2048 rows (64 MB). ``--quick``: 20000 x 200 and 2^12 x 2^8.
* **Data**: ``y = W x + v`` with 32 latent dimensions of standard deviations ``10 * 0.1^(j/31)`` and unit
  isotropic noise (a spectrum decaying past the 10th eigenvalue, ``lambda_11/lambda_10 = 0.87``,
  ``lambda_21/lambda_10 = 0.24``), plus a non-zero mean; generated chunk by chunk, seeded.
* **Threads**: BLAS limited to one thread per task (the library's policy); Dask's threaded scheduler runs
  one task per core (2 here). (a) uses one BLAS thread for the fit and the reference.
* **Repeats**: (a) 5 interleaved repeats of 4 iterations (20 timed iterations, CPU time of the process:
  one BLAS thread, so other processes on the machine do not count); (b) and (c) one
  run each (each reads 4.3 GB per pass; repeating them does not fit the ~3 minute budget): their verdicts
  are on a single measurement and say so.
"""

from __future__ import annotations

import multiprocessing as mp
import resource
import tempfile
import time
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from experiments import _common
from experiments.claims import NOT_REPRODUCED, REPRODUCED, Claim, Outcome, call_timing
from repro._validation import ConvergenceWarning
from repro.em_pca import EMPCA, em_pca, subspace_sin

TITLE = "Benchmark: EM PCA at scale (in memory, 2^17 x 2^12 from disk with Dask, vs svd_compressed)"

K = 10
GOAL = 1.3
FEW_HOURS_S = 3 * 3600.0
MISSING_FRAC = 0.05
N_LATENT = 32


def _sizes(quick: bool):
    if quick:
        return (20000, 200), (2**12, 2**8), 512
    return (100000, 1000), (2**17, 2**12), 2048


def _model(p: int, seed: int):
    rng = np.random.default_rng(seed)
    W = np.linalg.qr(rng.standard_normal((p, N_LATENT)))[0] * (10.0 * 0.1 ** (np.arange(N_LATENT) / 31))
    return W, rng.standard_normal(p)


def _fill(out: np.ndarray, W, mu, seed: int, step: int = 4096) -> None:
    """Write ``y = W x + v + mu`` into ``out`` row chunk by row chunk (no second full-size temporary)."""
    for c, i in enumerate(range(0, out.shape[0], step)):
        rng = np.random.default_rng([seed, c])
        m = min(step, out.shape[0] - i)
        out[i : i + m] = (
            rng.standard_normal((m, W.shape[1])) @ W.T + rng.standard_normal((m, W.shape[0])) + mu
        )


def _spectrum(p: int) -> np.ndarray:
    lam = np.ones(p)
    lam[:N_LATENT] += (10.0 * 0.1 ** (np.arange(N_LATENT) / 31)) ** 2
    return lam


# --------------------------------------------------------------------------- (a) in memory
def _in_memory(cfg: _common.Config) -> list[dict]:
    (n, p), _, _ = _sizes(cfg.quick)
    W, mu = _model(p, 1)
    X = np.empty((n, p))
    _fill(X, W, mu, 11)
    reps, T = 5, 4  # CPU time (one BLAS thread): robust to other processes on the machine
    rows = []
    rng = np.random.default_rng(2)
    for label, s in (("Roweis EM (k = 10 columns)", 0), ("block EM + Rayleigh-Ritz (20 columns)", "auto")):
        cols = K if s == 0 else 2 * K
        Q = np.linalg.qr(rng.standard_normal((p, cols)))[0]
        Y = X - X.mean(axis=0)
        stamps: list[float] = []

        def cb(t, C, lam, stamps=stamps):
            stamps.append(time.process_time())
            return False

        samples, iters, refs = [], [], []
        with threadpool_limits(1), warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            em_pca(X[:1000], K, max_iter=2, tol=0.0, random_state=0, n_oversamples=s)  # warm-up
            for _ in range(reps):  # interleaved: the products, then a fit whose iterations are timed
                ref = []
                for _ in range(T):
                    t0 = time.process_time()
                    U = Y @ Q
                    Y.T @ U
                    ref.append(time.process_time() - t0)
                stamps.clear()
                em_pca(X, K, max_iter=T, tol=0.0, random_state=0, n_oversamples=s, callback=cb)
                it = np.diff(stamps)  # one pass + the O(pk^2) update each, set-up excluded
                samples += list(it / np.median(ref))
                iters += list(it)
                refs += ref
        del Y
        rows.append(
            {
                "part": "in_memory",
                "method": label,
                "shape": f"{n} x {p}",
                "n": n,
                "p": p,
                "seconds": float(np.median(iters)),
                "ref_seconds": float(np.median(refs)),
                "ratio": float(np.median(iters) / np.median(refs)),
                "ratio_samples": " ".join(f"{v:.4g}" for v in samples),
                "repeats": len(samples),
            }
        )
    return rows


# --------------------------------------------------------------------------- (b, c) from disk, child process
class _ChunkReader:
    """Array-like over a float64 file: ``__getitem__`` maps the file, copies the rows out and unmaps it.

    Optionally inserts NaN at a reproducible random ``missing`` fraction of the entries of each read.
    """

    def __init__(self, path: str, shape: tuple[int, int], missing: float = 0.0):
        self.path, self.shape, self.missing = path, shape, missing
        self.dtype = np.dtype(np.float64)
        self.ndim = 2

    def __getitem__(self, key):
        mm = np.memmap(self.path, dtype=np.float64, mode="r", shape=self.shape)
        out = np.array(mm[key])
        del mm
        if self.missing and out.size:
            rows = key[0] if isinstance(key, tuple) else key
            rng = np.random.default_rng([7, rows.start or 0])
            flat = out.reshape(-1)
            flat[rng.integers(0, flat.size, int(self.missing * flat.size))] = np.nan  # ~missing (repeats)
        return out


def _peak_rss_mb() -> float:
    """Peak resident memory of this process (``VmHWM``; ``ru_maxrss`` would carry the parent's peak over
    ``fork`` + ``exec`` on Linux)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return float(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _disk_child(path: str, shape, chunk_rows: int, quick: bool, conn) -> None:
    import dask
    import dask.array as da

    dask.config.set(scheduler="threads", num_workers=2)
    out: dict = {}
    X = da.from_array(_ChunkReader(path, shape), chunks=(chunk_rows, shape[1]), asarray=False, name=False)
    stamps, bases = [], []

    def cb(t, C, lam):
        stamps.append(time.perf_counter())
        bases.append(np.array(C))
        return False

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref = EMPCA(K, tol=1e-7, max_iter=200, random_state=0, callback=cb).fit(X)
    bases_ref = list(bases)
    out["em_seconds"] = time.perf_counter() - t0
    out["em_iter"] = ref.n_iter_
    out["em_converged"] = ref.converged_
    V = ref.components_.T
    out["timeline_s"] = [s - t0 for s in stamps]
    out["timeline_sin"] = [subspace_sin(Bt, V) for Bt in bases_ref]
    out["rss_after_em_mb"] = _peak_rss_mb()
    # (c) svd_compressed on the centred array
    t0 = time.perf_counter()
    Xc = X - ref.mean_
    # compute=True: the input is read again for every pass instead of being held in memory between
    # passes (with the default compute=False the scheduler keeps the chunks: peak memory of the array)
    _, _, v = da.linalg.svd_compressed(Xc, k=K, n_power_iter=2, seed=0, compute=True)
    v = v.compute()
    out["svd_seconds"] = time.perf_counter() - t0
    out["svd_sin"] = subspace_sin(v.T, V)
    out["rss_after_svd_mb"] = _peak_rss_mb()
    # missing values: a few iterations of the generalized e-step on the same array, 5% NaN
    Xm = da.from_array(
        _ChunkReader(path, shape, MISSING_FRAC), chunks=(chunk_rows, shape[1]), asarray=False, name=False
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warm = np.random.default_rng(0).standard_normal((50, 20))
        warm[np.eye(50, 20, dtype=bool)] = np.nan
        EMPCA(2, max_iter=2).fit(da.from_array(warm, chunks=(25, 20)))  # compile the e-step kernel first
    stamps.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0 = time.perf_counter()
        EMPCA(K, tol=0.0, max_iter=1, random_state=0, callback=cb).fit(Xm)
        t_all = time.perf_counter() - t0
    # callbacks after the e-steps of iterations 0 and 1: one full iteration (e-step + m-step) between them
    out["missing_s_per_iter"] = stamps[1] - stamps[0]
    out["missing_setup_s"] = t_all - out["missing_s_per_iter"]
    out["peak_rss_mb"] = _peak_rss_mb()
    conn.send(out)
    conn.close()


def _from_disk(cfg: _common.Config) -> list[dict]:
    _, (n, p), chunk_rows = _sizes(cfg.quick)
    W, mu = _model(p, 3)
    with tempfile.TemporaryDirectory(prefix="bench_em_scale_") as tmp:
        path = str(Path(tmp) / "Y.f64")
        t0 = time.perf_counter()
        mm = np.memmap(path, dtype=np.float64, mode="w+", shape=(n, p))
        _fill(mm, W, mu, 13)
        mm.flush()
        del mm
        write_s = time.perf_counter() - t0
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_disk_child, args=(path, (n, p), chunk_rows, cfg.quick, child))
        proc.start()
        out = parent.recv()
        proc.join()
    rows = []
    base = {
        "part": "disk",
        "shape": f"{n} x {p}",
        "n": n,
        "p": p,
        "chunk_rows": chunk_rows,
        "array_mb": n * p * 8 / 2**20,
        "write_seconds": write_s,
    }
    lam = _spectrum(p)
    rate = lam[K] / lam[K - 1]  # Roweis' iteration converges at lambda_11/lambda_10 (planted spectrum)
    roweis_iters = int(np.ceil(np.log(1e-6) / np.log(rate)))
    rows.append(
        {
            **base,
            "method": "EMPCA(10) default, tol 1e-7",
            "seconds": out["em_seconds"],
            "n_iter": out["em_iter"],
            "converged": out["em_converged"],
            "peak_rss_mb": out["peak_rss_mb"],
            "rss_after_em_mb": out["rss_after_em_mb"],
            "lam10": lam[K - 1],
            "lam11": lam[K],
        }
    )
    for t, s in zip(out["timeline_s"], out["timeline_sin"], strict=True):
        rows.append({**base, "method": "EM timeline", "seconds": t, "sin_to_reference": s})
    rows.append(
        {
            **base,
            "method": "svd_compressed (n_power_iter=2)",
            "seconds": out["svd_seconds"],
            "sin_to_reference": out["svd_sin"],
        }
    )
    rows.append(
        {
            **base,
            "method": f"EM with {MISSING_FRAC:.0%} missing, per iteration",
            "seconds": out["missing_s_per_iter"],
            "setup_seconds": out["missing_setup_s"],
            "n_iter": roweis_iters,
            "extrapolated_seconds": out["missing_setup_s"] + roweis_iters * out["missing_s_per_iter"],
        }
    )
    return rows


def compute(cfg: _common.Config) -> pd.DataFrame:
    return pd.DataFrame(_in_memory(cfg) + _from_disk(cfg))


# --------------------------------------------------------------------------- plot
def _em_match(df: pd.DataFrame) -> tuple[float, float, float]:
    """(svd_compressed seconds, EM seconds to the same sin, that sin) from the disk rows."""
    d = df[df.part == "disk"]
    svd = d[d.method.str.startswith("svd_compressed")].iloc[0]
    tl = d[d.method == "EM timeline"].sort_values("seconds")
    hit = tl[tl.sin_to_reference <= svd.sin_to_reference]
    t_em = float(hit.seconds.iloc[0]) if len(hit) else float("nan")
    return float(svd.seconds), t_em, float(svd.sin_to_reference)


def plot(df: pd.DataFrame, cfg: _common.Config):
    fig, axes = plt.subplots(1, 3, figsize=(14.0, 4.4))
    a = df[df.part == "in_memory"]
    ax = axes[0]
    ax.bar(range(len(a)), a.ratio, color=["tab:purple", "tab:blue"][: len(a)])
    ax.set_xticks(range(len(a)))
    ax.set_xticklabels([m.replace(" (", "\n(") for m in a.method], fontsize=9)
    ax.axhline(GOAL, color="tab:red", linestyle="--", label="goal 1.3x")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_ylabel("EM iteration / its two products", fontsize=10)
    ax.set_title(f"(a) in memory, {a['shape'].iloc[0]}, k = {K}", fontsize=11)
    ax.legend(fontsize=9)
    d = df[df.part == "disk"]
    ax = axes[1]
    tl = d[d.method == "EM timeline"].sort_values("seconds").iloc[:-1]  # the last iterate is the reference
    ax.semilogy(tl.seconds, tl.sin_to_reference, "o-", color="tab:blue", label="EMPCA(10)")
    t_svd, t_em, s_svd = _em_match(df)
    ax.semilogy([t_svd], [s_svd], "s", color="tab:orange", markersize=9, label="svd_compressed, 2 power its")
    if np.isfinite(t_em):
        ax.axvline(t_em, color="tab:blue", linestyle=":", linewidth=1)
    ax.set_xlabel("seconds (incl. the first pass for the mean)", fontsize=10)
    ax.set_ylabel("sin to the final (tol 1e-7) subspace", fontsize=10)
    ax.set_title(f"(b, c) {d['shape'].iloc[0]} from disk via Dask", fontsize=11)
    ax.legend(fontsize=9)
    ax = axes[2]
    main = d[d.method.str.startswith("EMPCA(10)")].iloc[0]
    vals = [main.array_mb, main.rss_after_em_mb, main.peak_rss_mb]
    ax.bar([0, 1, 2], vals, color=["lightgray", "tab:green", "tab:olive"])
    ax.set_xticks([0, 1, 2])
    ax.set_xticklabels(["array on disk", "peak RSS,\nEM fit", "peak RSS, + svd_c.\n+ missing"], fontsize=10)
    ax.set_ylabel("MB", fontsize=10)
    ax.set_title("(b) memory", fontsize=11)
    for x, v in enumerate(vals):
        ax.text(x, v, f"{v:.0f} MB", ha="center", va="bottom", fontsize=10)
    fig.tight_layout()
    return fig


def table(df: pd.DataFrame, cfg: _common.Config) -> str:
    a = df[df.part == "in_memory"]
    lines = ["| in memory | shape | EM iteration / products |", "|---|---|---|"]
    lines += [f"| {r.method} | {r.shape} | {r.ratio:.2f}x |" for r in a.itertuples()]
    d = df[df.part == "disk"]
    main = d[d.method.str.startswith("EMPCA(10)")].iloc[0]
    miss = d[d.method.str.contains("missing")].iloc[0]
    t_svd, t_em, s_svd = _em_match(df)
    lines += [
        "",
        "| from disk (Dask) | value |",
        "|---|---|",
        f"| array | {main['shape']}, {main.array_mb:.0f} MB, chunks of {int(main.chunk_rows)} rows |",
        f"| EMPCA(10) to tol 1e-7 | {main.seconds:.1f} s, {int(main.n_iter)} iterations |",
        f"| peak RSS: EM fit / whole process | {main.rss_after_em_mb:.0f} MB / {main.peak_rss_mb:.0f} MB |",
        f"| 5% missing: per iteration | {miss.seconds:.2f} s (extrapolated fit: "
        f"{miss.extrapolated_seconds:.0f} s for {int(miss.n_iter)} iterations) |",
        f"| svd_compressed (2 power iterations) | {t_svd:.1f} s, sin {s_svd:.1e} |",
        f"| EM to the same accuracy | {t_em:.1f} s |",
    ]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- claims
def _check_in_memory(idx: int):
    def check(df: pd.DataFrame) -> Outcome:
        r = df[df.part == "in_memory"].iloc[idx]
        call = call_timing([float(v) for v in str(r.ratio_samples).split()], GOAL)
        return Outcome(
            f"{call.text('.2f', 'x')} on {r['shape']}",
            call.verdict,
            f"{r.method}; per-repeat ratios of {int(r.repeats)} interleaved repeats, 1 BLAS thread. Size "
            "reduced from 1e6 x 1e3 (memory of the shared machine; same cost per row).",
        )

    return check


def _check_few_hours(df: pd.DataFrame) -> Outcome:
    d = df[df.part == "disk"]
    main = d[d.method.str.startswith("EMPCA(10)")].iloc[0]
    miss = d[d.method.str.contains("missing")].iloc[0]
    times = [float(main.seconds), float(miss.extrapolated_seconds)]
    call = call_timing([max(times)], FEW_HOURS_S)
    return Outcome(
        f"complete data: {main.seconds:.0f} s measured ({int(main.n_iter)} iterations to tol 1e-7); "
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
        f"peak RSS {main.rss_after_em_mb:.0f} MB during the EM fit for a {main.array_mb:.0f} MB array "
        f"({frac:.1%}); whole process incl. svd_compressed and the missing-value iterations: "
        f"{main.peak_rss_mb:.0f} MB",
        REPRODUCED if frac <= 0.25 else NOT_REPRODUCED,
        f"VmHWM of the fitting process (Python, NumPy, Dask, Numba included) after the EM fit, chunks of "
        f"{int(main.chunk_rows)} rows ({main.chunk_rows * main.p * 8 / 2**20:.0f} MB), 2 Dask workers; "
        "threshold 25% of the array.",
    )


def _check_vs_svd(df: pd.DataFrame) -> Outcome:
    t_svd, t_em, s_svd = _em_match(df)
    ratio = t_svd / t_em if np.isfinite(t_em) else 0.0
    # One run each, so no spread to judge by, and the times depend on whether the 4.3 GB array is in the
    # page cache (three full runs gave 1.94x, 1.84x and 1.12x): the band is a factor 2 (margin 1.0).
    call = call_timing([ratio], 1.0, lower_is_better=False, margin=1.0)
    return Outcome(
        f"svd_compressed time / EM time at sin {s_svd:.1e}: {ratio:.2f}x ({t_svd:.1f} s vs {t_em:.1f} s)",
        call.verdict,
        "EM's time from its timeline (first iteration whose subspace is as accurate, first pass for the mean "
        "included); svd_compressed with n_power_iter=2 on the centred array; one run each, so the verdict "
        "needs a factor 2 either way (reproduced above 2x, not below 0.5x, else too close to call): the "
        "ratio depends on the page cache (1.1x to 1.9x over three runs of this machine)",
    )


CLAIMS = [
    Claim(
        f"in-memory-{tag}",
        f"Goal: one EMPCA(10) iteration ({label}) on a large in-memory float64 matrix costs at most 1.3x its "
        "two BLAS products.",
        "<= 1.3x",
        _check_in_memory(i),
        machine_dependent=True,
    )
    for i, (tag, label) in enumerate((("roweis", "Roweis' iteration"), ("block", "default block EM")))
] + [
    Claim(
        "few-hours",
        "Sec. 6: 'I have computed the 10 leading eigenvectors and eigenvalues of 2^17 points in 2^12 "
        "dimensions in a few hours using MATLAB on a modest workstation' (with missing information).",
        "a few hours",
        _check_few_hours,
        machine_dependent=True,
    ),
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
