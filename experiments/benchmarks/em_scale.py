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

from experiments.runner import _common
from experiments.runner.claims import (
    MIN_PAIRS,
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    Outcome,
    call_timing,
)
from repro import ConvergenceWarning
from repro.em_pca import EMPCA, em_pca, subspace_sin
from repro.linalg import Covariance

TITLE = "Benchmark: EM PCA at scale (in memory, 2^17 x 2^12 from disk with Dask, vs svd_compressed)"

K = 10
GOAL = 1.3
FEW_HOURS_S = 3 * 3600.0
MISSING_FRAC = 0.05
N_LATENT = 32
SPARSE_K = 25  # cardinality of the EMSparsePCA fit in (a): below D / 32, the support path
N_TIMED = 3  # timed EM iterations (each next to its products) of the block EM and EMSparsePCA in (a)
ROWEIS_PAIRS = MIN_PAIRS  # Roweis' iteration in (a): 9 interleaved pairs, decided by call_paired
DISK_TOL = 1e-5  # tol of the reference EM fit from disk (its own error ~ 0.24 * tol, far below 2.8e-2)


def _sizes(quick: bool):
    if quick:
        return (20000, 200), (2**12, 2**8), 512
    return (1_000_000, 1000), (2**17, 2**12), 2048


def _model(p: int, seed: int):
    rng = np.random.default_rng(seed)
    W = np.linalg.qr(rng.standard_normal((p, N_LATENT)))[0] * (10.0 * 0.1 ** (np.arange(N_LATENT) / 31))
    return W, rng.standard_normal(p)


def _fill(out: np.ndarray, W, mu, seed: int, step: int = 8192) -> None:
    """Write ``y = W x + v + mu`` into ``out`` row block by row block, in place (no full-size temporary).

    ``x`` standard normal (``N_LATENT`` entries), ``v`` independent uniform entries on
    ``[-sqrt(3), sqrt(3)]`` (unit variance: isotropic unit noise; uniform draws cost a fifth of normal
    ones, which matters at 1e9 entries); block ``c`` from ``default_rng([seed, c])``.
    """
    tmp = np.empty((min(step, out.shape[0]), out.shape[1]))
    for c, i in enumerate(range(0, out.shape[0], step)):
        rng = np.random.default_rng([seed, c])
        m = min(step, out.shape[0] - i)
        blk, t = out[i : i + m], tmp[:m]
        if blk.flags.c_contiguous:
            rng.random(out=blk)
        else:  # pragma: no cover - the callers pass C-contiguous arrays
            blk[...] = rng.random((m, out.shape[1]))
        blk -= 0.5
        blk *= np.sqrt(12.0)
        np.matmul(rng.standard_normal((m, W.shape[1])), W.T, out=t)
        blk += t
        blk += mu


def _spectrum(p: int) -> np.ndarray:
    lam = np.ones(p)
    lam[:N_LATENT] += (10.0 * 0.1 ** (np.arange(N_LATENT) / 31)) ** 2
    return lam


# --------------------------------------------------------------------------- (a) in memory, child process
def _reset_peak() -> None:
    """Start a new peak-RSS window (``VmHWM``) for this process, where the kernel allows it."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def _interleaved_em(X, Q, s: int | str, n_timed: int) -> tuple[list[float], list[float]]:
    """Iteration times of ``em_pca(X, K)`` and of the two products ``X Q``, ``X'(X Q)``, in pairs.

    One fit with ``max_iter = n_timed``; iteration ``j`` (one pass and the O(pk^2) update) is the time
    between the callbacks ``j`` and ``j + 1``, less the products timed in between. Its reference products
    run right before it for even ``j`` and right after it for odd ``j`` (R I, I R, R I, ...: the order
    alternates, as :func:`experiments.runner.claims.call_paired` asks), so every pair is of neighbours.
    CPU time of the process (one BLAS thread).
    """
    iters: list[float] = []
    refs: list[float] = []
    last: list[float] = []

    def ref() -> None:
        r0 = time.process_time()
        U = X @ Q
        X.T @ U
        refs.append(time.process_time() - r0)

    def cb(t, C, lam):
        now = time.process_time()
        if last:
            iters.append(now - last[0])
            if (t - 1) % 2 == 1:  # odd pair: its reference right after its iteration
                ref()
        if t < n_timed and t % 2 == 0:  # even pair: its reference right before its iteration
            ref()
        last[:] = [time.process_time()]
        return False

    em_pca(X, K, max_iter=n_timed, tol=0.0, random_state=0, n_oversamples=s, callback=cb)
    return iters, refs


class _IterationTimer:
    """The ``callback`` of ``EMSparsePCA``, timing the EM iterations between its calls.

    ``EMSparsePCA`` calls it after every EM iteration (all restarts of a component as one block). Each call
    runs the reference products ``A w``, ``A'(A w)`` (dense ``w``, timed, one BLAS thread) and marks the
    end; the time from that mark to the next call is one EM iteration (products and the O(D) projection
    kernel).
    """

    def __init__(self, data):
        self.data = data
        self.iters: list[float] = []
        self.refs: list[float] = []
        self._last: float | None = None
        self._w = np.random.default_rng(4).standard_normal(data.shape[1])

    def __call__(self, t, W):
        now = time.process_time()
        if self._last is not None:
            self.iters.append(now - self._last)
        with threadpool_limits(1):
            r0 = time.process_time()
            y = self.data @ self._w
            self.data.T @ y
            self.refs.append(time.process_time() - r0)
        self._last = time.process_time()


def _memory_child(n: int, p: int, n_timed: int, cov_rows: int, conn) -> None:
    import gc

    from repro import set_blas_threads
    from repro.em_sparse_pca import EMSparsePCA
    from repro.linalg import choose_operator

    out: dict = {"rows": []}
    t0 = time.perf_counter()
    W, mu = _model(p, 1)
    X = np.empty((n, p))
    _fill(X, W, mu, 11)
    out["fill_seconds"] = time.perf_counter() - t0
    out["rss_data_mb"] = _peak_rss_mb()
    rng = np.random.default_rng(2)
    for label, s, cols, pairs in (
        ("Roweis EM (k = 10 columns)", 0, K, ROWEIS_PAIRS),
        ("block EM + Rayleigh-Ritz (20 columns)", "auto", 2 * K, n_timed),
    ):
        Q = np.linalg.qr(rng.standard_normal((p, cols)))[0]
        _reset_peak()
        t0 = time.perf_counter()
        with threadpool_limits(1), warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            em_pca(X[:1000], K, max_iter=2, tol=0.0, random_state=0, n_oversamples=s)  # warm-up
            iters, refs = _interleaved_em(X, Q, s, pairs)
        gc.collect()
        out["rows"].append(
            {
                "method": label,
                "iters": iters,
                "refs": refs,
                "wall_seconds": time.perf_counter() - t0,
                "peak_rss_mb": _peak_rss_mb(),
            }
        )
    # EMSparsePCA through the data: centre and scale X in place (C = A'A, A = (X - mean) / sqrt(n - 1)),
    # so that the fit holds no copy, and time its iterations by the operator they go through.
    _reset_peak()
    t0 = time.perf_counter()
    X -= X.mean(axis=0)
    X *= 1.0 / np.sqrt(n - 1)
    op = Covariance(data=X, n_samples=n)
    timer = _IterationTimer(X)
    card = min(SPARSE_K, p // 40)
    est = EMSparsePCA(
        1,
        cardinality=card,
        init="random",
        n_restarts=1,
        renormalize=False,
        tol=1e-15,
        max_iter=n_timed + 1,
        random_state=0,
        operator="data",
        callback=timer,
    )
    set_blas_threads(None)  # the one-off set-up (rank and start: A'A) on both cores; iterations use one
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(op)
    finally:
        set_blas_threads(1)
    T = int(est.n_iter_[0])
    if len(timer.refs) != T:
        raise RuntimeError(
            f"EMSparsePCA made {len(timer.refs)} callbacks for {T} iterations (expected one per iteration): "
            "the timing in bench_em_scale no longer matches the fit's iteration."
        )
    # calls: one after each iteration; interval j (between calls j and j + 1, after reference j) is
    # iteration j + 1, from the sparse iterate of iteration j (iteration 1 starts from the dense start).
    out["rows"].append(
        {
            "method": f"EMSparsePCA (k = 1, cardinality {card}, data)",
            "iters": timer.iters,
            "refs": timer.refs[: T - 1],
            "wall_seconds": time.perf_counter() - t0,
            "peak_rss_mb": _peak_rss_mb(),
            "operator": est.operator_,
            "card": int(est.cardinality_[0]),
        }
    )
    # information: what operator="auto" picks here, and what forming C costs in data iterations (on the
    # first cov_rows rows; both costs are linear in the rows)
    out["auto_one_start"] = choose_operator(n, p, n_vectors=1)
    out["auto_default_starts"] = choose_operator(n, p, n_vectors=5)
    with threadpool_limits(1):
        sub = X[:cov_rows]
        form, it = [], []
        for _ in range(1):  # information only: one repeat
            r0 = time.process_time()
            Covariance.from_data(sub, operator="covariance")
            form.append(time.process_time() - r0)
            r0 = time.process_time()
            y = sub @ timer._w
            sub.T @ y
            it.append(time.process_time() - r0)
    out["cov_form_iterations"] = float(np.median(form) / np.median(it))
    del op, timer, X, sub
    gc.collect()
    conn.send(out)
    conn.close()


def _run_child(ctx, target, args, parent, child) -> dict:
    """Run ``target(*args)`` in a fresh process and return what it sends (its memory goes back on exit)."""
    proc = ctx.Process(target=target, args=args)
    proc.start()
    child.close()  # so that a child that dies ends recv() instead of leaving it waiting
    try:
        out = parent.recv()
    except EOFError:
        proc.join()
        raise RuntimeError(f"{target.__name__} exited with code {proc.exitcode} before reporting") from None
    proc.join()
    return out


def _in_memory(cfg: _common.Config) -> list[dict]:
    (n, p), _, _ = _sizes(cfg.quick)
    n_timed = 4 if cfg.quick else N_TIMED
    cov_rows = min(n, 50000)
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    out = _run_child(ctx, _memory_child, (n, p, n_timed, cov_rows, child), parent, child)
    rows = []
    for r in out["rows"]:
        it, ref = np.asarray(r["iters"]), np.asarray(r["refs"])
        samples = it / ref
        rows.append(
            {
                "part": "in_memory",
                "method": r["method"],
                "shape": f"{n} x {p}",
                "n": n,
                "p": p,
                "seconds": float(np.median(it)),
                "ref_seconds": float(np.median(ref)),
                "ratio": float(np.median(samples)),
                "ratio_samples": " ".join(f"{v:.4g}" for v in samples),
                "repeats": len(samples),
                "wall_seconds": r["wall_seconds"],
                "peak_rss_mb": r["peak_rss_mb"],
                "array_mb": n * p * 8 / 2**20,
                "fill_seconds": out["fill_seconds"],
                "operator": r.get("operator", ""),
                "auto_one_start": out["auto_one_start"] if "operator" in r else "",
                "auto_default_starts": out["auto_default_starts"] if "operator" in r else "",
                "cov_form_iterations": out["cov_form_iterations"] if "operator" in r else np.nan,
                "cov_rows": cov_rows,
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


class _Stop(Exception):
    """Raised by a callback to end a fit once what is timed has been measured."""


def _disk_child(path: str, shape, chunk_rows: int, quick: bool, conn) -> None:
    import dask
    import dask.array as da

    dask.config.set(scheduler="threads", num_workers=2)
    out: dict = {}
    X = da.from_array(_ChunkReader(path, shape), chunks=(chunk_rows, shape[1]), asarray=False, name=False)
    stamps, cpu, bases = [], [], []

    def cb(t, C, lam):
        stamps.append(time.perf_counter())
        cpu.append(time.process_time())
        bases.append(np.array(C))
        return False

    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref = EMPCA(K, tol=DISK_TOL, max_iter=200, random_state=0, callback=cb).fit(X)
    bases_ref = list(bases)
    out["em_seconds"] = time.perf_counter() - t0
    out["em_iter"] = ref.n_iter_
    out["em_converged"] = ref.converged_
    V = ref.components_.T
    out["timeline_s"] = [s - t0 for s in stamps]
    out["timeline_cpu_s"] = [c - c0 for c in cpu]
    out["timeline_sin"] = [subspace_sin(Bt, V) for Bt in bases_ref]
    out["rss_after_em_mb"] = _peak_rss_mb()
    # (c) svd_compressed on the centred array
    t0, c0 = time.perf_counter(), time.process_time()
    Xc = X - ref.mean_
    # compute=True: the input is read again for every pass instead of being held in memory between
    # passes (with the default compute=False the scheduler keeps the chunks: peak memory of the array)
    _, _, v = da.linalg.svd_compressed(Xc, k=K, n_power_iter=2, seed=0, compute=True)
    v = v.compute()
    out["svd_seconds"] = time.perf_counter() - t0
    out["svd_cpu_seconds"] = time.process_time() - c0
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

    def cb_stop(t, C, lam):  # time stamps; abort after the second (no final Rayleigh-Ritz pass: untimed)
        stamps.append(time.perf_counter())
        if len(stamps) == 2:
            raise _Stop

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0 = time.perf_counter()
        try:
            EMPCA(K, tol=0.0, max_iter=1, random_state=0, callback=cb_stop).fit(Xm)
        except _Stop:
            pass
        t_all = stamps[1] - t0
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
        out = _run_child(ctx, _disk_child, (path, (n, p), chunk_rows, cfg.quick, child), parent, child)
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
            "method": f"EMPCA(10) default, tol {DISK_TOL:g}",
            "seconds": out["em_seconds"],
            "n_iter": out["em_iter"],
            "converged": out["em_converged"],
            "peak_rss_mb": out["peak_rss_mb"],
            "rss_after_em_mb": out["rss_after_em_mb"],
            "lam10": lam[K - 1],
            "lam11": lam[K],
        }
    )
    for t, c, s in zip(out["timeline_s"], out["timeline_cpu_s"], out["timeline_sin"], strict=True):
        rows.append({**base, "method": "EM timeline", "seconds": t, "cpu_seconds": c, "sin_to_reference": s})
    rows.append(
        {
            **base,
            "method": "svd_compressed (n_power_iter=2)",
            "seconds": out["svd_seconds"],
            "cpu_seconds": out["svd_cpu_seconds"],
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
            # set-up, the iterations, and the final Rayleigh-Ritz pass (about one iteration's reading)
            "extrapolated_seconds": out["missing_setup_s"] + (roweis_iters + 1) * out["missing_s_per_iter"],
        }
    )
    return rows


def compute(cfg: _common.Config) -> pd.DataFrame:
    return pd.DataFrame(_in_memory(cfg) + _from_disk(cfg))


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
    a = df[df.part == "in_memory"]
    ax = axes[0]
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
    d = df[df.part == "disk"]
    ax = axes[1]
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
