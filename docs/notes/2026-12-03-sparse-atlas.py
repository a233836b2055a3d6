"""The atlas-sized run of the sparse benchmark's data model, once, measured.

Generates ``log1p`` single-cell-like counts of ``n x p`` (default ``10^6 x 2 10^4``, about 1% non-zero)
with the benchmark's generator (:func:`experiments.benchmarks.sparse.counts`: row block by row block into
CSR, never dense) and fits ``EMPCA(n_components=20)`` and ``EMSparsePCA(n_components=5,
cardinality=50)`` on the CSR matrix, recording for each fit the wall and process CPU time, the iteration
counts, the peak resident memory of the process (``VmHWM``, reset before each stage through
``/proc/self/clear_refs`` where the kernel allows it, and ``resource.getrusage(...).ru_maxrss`` over the
whole process) and ``tracemalloc``'s peak of the fit's new allocations, beside the CSR's own bytes; then
the certified fraction of the first sparse component (:func:`repro.metrics.certified_fraction`, the
rank-3 spannogram bound, on the same sparse data) unless ``--no-certify``.

``--compare N P`` (repeatable) instead fits both estimators on an ``N x P`` matrix of the same model and on
its dense copy (``X.toarray()``), for the sizes where the dense fit is affordable, and reports the largest
difference of the components and of the explained variances.

Progress goes to stdout line by line (one line per EMPCA iteration, through its ``callback``), so a run
that cannot finish still says how far it got; the results go to ``--out`` as JSON, stage by stage.

Usage::

    PYTHONPATH=. python docs/notes/2026-12-03-sparse-atlas.py --out atlas.json > atlas.log 2>&1
    PYTHONPATH=. python docs/notes/2026-12-03-sparse-atlas.py --compare 5000 1500 --compare 10000 5000 \
        --out compare.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
import tracemalloc
import warnings

import numpy as np

from experiments.benchmarks.sparse import CARDINALITY, SPARSE_COMPONENTS, K, counts
from repro import EMPCA, ConvergenceWarning, EMSparsePCA
from repro.metrics import certified_fraction

MB = 2**20


def _status(field: str) -> float:
    """``VmRSS`` / ``VmHWM`` of this process in MB (nan where /proc is not there)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024 / MB
    except OSError:
        pass
    return float("nan")


def _reset_hwm() -> bool:
    """Reset the process's peak resident set (Linux: ``5`` into ``/proc/self/clear_refs``)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / MB  # kB on Linux


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _stage(name: str, fn, record: dict, out: str):
    """Run ``fn()`` measured; store its numbers under ``record[name]`` and write ``out``."""
    reset = _reset_hwm()
    rss0 = _status("VmRSS")
    tracemalloc.start()
    tracemalloc.reset_peak()
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            result, extra = fn()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        traced = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    record[name] = {
        "wall_s": wall,
        "cpu_s": cpu,
        "tracemalloc_peak_mb": traced / MB,
        "rss_before_mb": rss0,
        "rss_peak_mb": _status("VmHWM") if reset else float("nan"),
        "ru_maxrss_mb": _maxrss_mb(),
        **extra,
    }
    _log(f"{name}: {json.dumps(record[name])}")
    with open(out, "w") as f:
        json.dump(record, f, indent=1)
    return result


def compare(sizes, seed: int, out: str) -> int:
    """The sparse fits against the dense fits on ``X.toarray()``, for each ``(n, p)`` of ``sizes``."""
    record: dict = {"seed": seed, "sizes": []}
    for n, p in sizes:
        X = counts(n, p, seed + 1)  # the benchmark's part (b) uses seed + 1
        D = X.toarray()
        row = {"n": n, "p": p, "nnz": int(X.nnz), "dense_mb": D.nbytes / MB}
        for label, make in (
            ("EMPCA", lambda: EMPCA(K, random_state=0)),
            ("EMSparsePCA", lambda: EMSparsePCA(SPARSE_COMPONENTS, cardinality=CARDINALITY, random_state=0)),
        ):
            fits = {}
            for kind, data in (("sparse", X), ("dense", D)):
                t0 = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    fits[kind] = make().fit(data)
                row[f"{label}_{kind}_cpu_s"] = time.process_time() - t0
            a, b = fits["sparse"], fits["dense"]
            row[f"{label}_max_component_diff"] = float(np.max(np.abs(a.components_ - b.components_)))
            row[f"{label}_max_variance_rel_diff"] = float(
                np.max(np.abs(a.explained_variance_ / b.explained_variance_ - 1.0))
            )
            row[f"{label}_n_iter"] = [np.asarray(a.n_iter_).tolist(), np.asarray(b.n_iter_).tolist()]
        record["sizes"].append(row)
        _log(json.dumps(row))
        with open(out, "w") as f:
            json.dump(record, f, indent=1)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10**6)
    ap.add_argument("--p", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="sparse-atlas.json")
    ap.add_argument("--no-certify", action="store_true")
    ap.add_argument("--skip-empca", action="store_true")
    ap.add_argument("--compare", nargs=2, type=int, action="append", metavar=("N", "P"))
    args = ap.parse_args(argv)
    if args.compare:
        return compare(args.compare, args.seed, args.out)
    import numba

    import repro

    record: dict = {
        "n": args.n,
        "p": args.p,
        "seed": args.seed,
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "numba_threads": numba.get_num_threads(),
        "blas_threads": repro.get_blas_threads(),
        "cpus": os.cpu_count(),
        "loadavg_start": os.getloadavg(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    }
    _log(f"generating {args.n} x {args.p}")

    def generate():
        X = counts(args.n, args.p, args.seed)
        csr = int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)
        return X, {
            "nnz": int(X.nnz),
            "density": X.nnz / (args.n * args.p),
            "csr_mb": csr / MB,
            "dense_mb": args.n * args.p * 8 / MB,
            "index_dtype": str(X.indices.dtype),
        }

    X = _stage("generate", generate, record, args.out)
    _log("compiling on a 500-row slice")
    EMPCA(K, random_state=0).fit(X[:500])  # Numba caches and first-call costs, outside the timed fits

    if not args.skip_empca:
        t_last = [time.perf_counter()]
        times = []

        def progress(i, C, lam):
            now = time.perf_counter()
            times.append(now - t_last[0])
            t_last[0] = now
            _log(f"EMPCA iteration {i}: {times[-1]:.2f} s, lambda_1 {lam[0]:.6g}, lambda_20 {lam[-1]:.6g}")
            return False

        def empca():
            t_last[0] = time.perf_counter()
            m = EMPCA(K, random_state=0, callback=progress).fit(X)
            return m, {
                "n_iter": int(m.n_iter_),
                "iteration_s": times,
                "explained_variance": m.explained_variance_.tolist(),
            }

        _stage("EMPCA", empca, record, args.out)

    def sparse_pca():
        m = EMSparsePCA(SPARSE_COMPONENTS, cardinality=CARDINALITY, random_state=0).fit(X)
        return m, {
            "n_iter": np.asarray(m.n_iter_).tolist(),
            "n_iter_total": int(np.sum(m.n_iter_)),
            "operator": str(getattr(m, "operator_", "")),
            "explained_variance": m.explained_variance_.tolist(),
            "cardinality": [int(np.count_nonzero(c)) for c in m.components_],
        }

    spca = _stage("EMSparsePCA", sparse_pca, record, args.out)
    if not args.no_certify:

        def certify():
            frac = certified_fraction(X, spca.components_[0], CARDINALITY, nonneg=False)[0]
            return frac, {"certified_fraction": float(frac)}

        _stage("certified_fraction", certify, record, args.out)
    record["loadavg_end"] = os.getloadavg()
    record["ru_maxrss_mb"] = _maxrss_mb()
    with open(args.out, "w") as f:
        json.dump(record, f, indent=1)
    _log("done")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
