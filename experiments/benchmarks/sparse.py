"""Benchmark: sparse input never densified, on a synthetic single-cell-like count matrix in CSR.

The data: ``log1p`` of counts of ``n`` cells by ``p`` genes at about 1% non-zero. Each cell belongs to
one of 10 types; its library size (total count) is negative-binomial (shape 4, mean ``1.25 p / 100``:
the draws with replacement below repeat genes, so about 1% of the entries end up non-zero), and its
counts are that many draws of genes with its type's rates (a log-normal base rate per gene, times a
log-normal factor on 2% of the genes, the type's markers): given the library size, independent
Poisson counts per gene. Generated row block by row block straight into CSR from seeded Generators
(``default_rng([seed, block])``); the dense array is never formed.

Two parts:

(a) **scale** (``part == "scale"``): ``EMPCA(n_components=20)`` against scikit-learn's
    ``PCA(20, svd_solver="arpack")`` on the same CSR matrix (its implicit centring through a
    ``LinearOperator``), in 3 alternating pairs (EM, arpack; arpack, EM; EM, arpack): the time ratio of
    each pair, decided by ``call_timing`` on their range. Peak memory of each fit by ``tracemalloc``
    (the new Python and NumPy allocations of the fit, the data excluded), beside the CSR's own size
    (``data``, ``indices``, ``indptr``); the dense array would be ``8 / (12 * 0.01)``, about 67 times
    the CSR. The subspace angle (sine of the largest principal angle) between the two fits. Then
    ``EMSparsePCA(n_components=5, cardinality=50)``: time, peak memory, and the certified fraction of
    its first component (:func:`repro.metrics.certified_fraction`, the rank-3 spannogram bound, on the
    same sparse data). ``PCA(svd_solver="covariance_eigh")`` is not run at this size: it forms the
    ``p x p`` covariance (3.2 GB at ``p = 2 10^4``) and decomposes it in ``O(p^3)``; it runs in (b).
(b) **subsample** (``part == "subsample"``): a smaller matrix of the same model, small enough to be
    fitted dense too (below the 64 MiB at which the dense EM changes its passes,
    ``repro._chunked.COPY_LIMIT_BYTES``): ``EMPCA(20)`` and ``EMSparsePCA(5, cardinality=50)`` on the
    CSR matrix against the same estimators on ``X.toarray()`` (largest difference of the components),
    and the three solvers' times (EMPCA, arpack, covariance_eigh), one fit each, with the subspace
    angles to covariance_eigh.

(c) **distributed** (``part == "distributed"``): the matrix of (a) as a Dask array of CSR row chunks
    (8 chunks of ``n / 8`` rows, 4 in ``--quick``, sent to the workers with ``client.scatter``) held by a
    ``dask.distributed`` ``LocalCluster`` of two worker processes (one thread each; the client already
    running in the process where there is one), against the same ``EMPCA(20)`` on the in-memory CSR
    matrix, in 3 alternating pairs: wall time of each fit, their ratio (Dask / in memory), and the
    largest differences between the two fits (components, explained variances). The ratio is reported,
    not a goal: no goal was fixed for it before the first measurement. The client's BLAS runs on one
    thread, so both sides use one thread per process; the distributed fit adds a round trip to the
    scheduler per pass over the chunks and the transfer of the ``p x 30`` products.

Sizes: full (a) and (c) ``5 10^4 x 2 10^4`` at about 1% (1.2 10^7 stored entries, a 140 MB CSR; the dense
array would be 8 GB). A large single-cell atlas is ``10^6 x 2 10^4``: that CSR (2.3 10^8 stored entries,
2.8 GB) fits in memory, and both fits were run on it once, measured
(``docs/notes/2026-12-03-sparse-atlas.md``): ``EMPCA(20)`` took 84 iterations and 557 s of process CPU
time on one thread, its traced peak 0.10x the CSR;
``EMSparsePCA(5, cardinality=50)`` 131 iterations, 417 s of CPU, peak 0.36x the CSR. The benchmark
stays at ``5 10^4``: at ``10^6`` its three timed pairs of fits and the sparse fit would take well over
half an hour of CPU. (b) ``5000 x 1500``. ``--quick``: (a) and (c) ``4000 x 1000``, (b) ``1000 x 300``;
at these sizes the fixed terms of the fits (``p x p`` matrices of the start, ``N x 30`` products) outweigh
the tiny CSR, so the memory goals are missed there by construction: they are goals of the full size.

Threads: the library runs its sparse products on one thread (its Numba kernels for blocks of vectors,
:mod:`repro._sparse_kernels`, in scipy's order of summation; scipy's for single vectors) and its dense
steps on one BLAS thread; scikit-learn's ARPACK runs its dense steps on the default BLAS threads (2
here).

Goals (fixed before the data): no dense copy (each fit's peak at most 1x the CSR's size), EMPCA at
least as fast as arpack (``<= 1.0x``, 15% band), the subspaces within ``sin <= 1e-4``, the sparse fits
equal to the dense fits to ``1e-8`` (the components; the tests use the same tolerance or tighter).
"""

from __future__ import annotations

import time
import tracemalloc
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.decomposition import PCA

from experiments.benchmarks._dask_cluster import run_part
from experiments.benchmarks._sparse import WORKER_MEMORY, distributed_rows
from experiments.runner import _common
from experiments.runner.claims import NOT_REPRODUCED, REPRODUCED, Claim, Outcome, call_timing
from repro import EMPCA, ConvergenceWarning, EMSparsePCA
from repro.em_pca import subspace_sin
from repro.metrics import certified_fraction

TITLE = "Benchmark: scipy.sparse input never densified (single-cell-like counts, EMPCA vs ARPACK)"

K = 20
SPARSE_COMPONENTS, CARDINALITY = 5, 50
DENSITY = 0.01
N_TYPES = 10
PAIRS = 3
SPEED_GOAL = 1.0  # EMPCA time / arpack time
MEMORY_GOAL = 1.0  # peak traced memory of a fit / the CSR's bytes
SIN_GOAL = 1e-4
EQUAL_GOAL = 1e-8


def _sizes(quick: bool):
    return ((4000, 1000), (1000, 300)) if quick else ((50_000, 20_000), (5000, 1500))


def counts(n: int, p: int, seed: int, block: int = 20000) -> sp.csr_matrix:
    """``log1p`` of the single-cell-like counts of the module docstring, as a CSR matrix (n x p)."""
    rng = np.random.default_rng([seed, 0])
    rates = np.tile(rng.lognormal(0.0, 1.5, p), (N_TYPES, 1))
    for t in range(N_TYPES):
        markers = rng.choice(p, size=max(1, p // 50), replace=False)
        rates[t, markers] *= rng.lognormal(1.5, 0.5, markers.size)
    cdf = np.cumsum(rates, axis=1)
    cdf /= cdf[:, -1:]
    mean_total = 1.25 * DENSITY * p
    blocks = []
    for b, i in enumerate(range(0, n, block)):
        r = np.random.default_rng([seed, 1, b])
        m = min(block, n - i)
        types = r.integers(0, N_TYPES, m)
        totals = r.negative_binomial(4, 4 / (4 + mean_total), m)
        rows = np.repeat(np.arange(m), totals)
        u, kind = r.random(rows.size), types[rows]
        genes = np.empty(rows.size, dtype=np.int64)
        for t in range(N_TYPES):
            sel = kind == t
            genes[sel] = np.minimum(np.searchsorted(cdf[t], u[sel]), p - 1)
        B = sp.csr_matrix((np.ones(rows.size), (rows, genes)), shape=(m, p))  # duplicates summed: counts
        B.data = np.log1p(B.data)
        blocks.append(B)
    return sp.vstack(blocks, format="csr")


def _csr_bytes(X) -> int:
    return int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)


def _measured(fit):
    """``(result, seconds, peak bytes)`` of ``fit()``: wall time, and tracemalloc's peak of the new
    allocations (the data were allocated before)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            out = fit()
        seconds = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return out, seconds, peak


def _empca(X):
    return EMPCA(K, random_state=0).fit(X)


def _arpack(X):
    return PCA(K, svd_solver="arpack", random_state=0).fit(X)


def _sparse_pca(X):
    return EMSparsePCA(SPARSE_COMPONENTS, cardinality=CARDINALITY, random_state=0).fit(X)


def _scale(quick: bool, seed: int) -> list[dict]:
    (n, p), _ = _sizes(quick)
    t0 = time.perf_counter()
    X = counts(n, p, seed)
    base = {
        "part": "scale",
        "shape": f"{n} x {p}",
        "n": n,
        "p": p,
        "nnz": int(X.nnz),
        "density": X.nnz / (n * p),
        "csr_mb": _csr_bytes(X) / 2**20,
        "dense_mb": n * p * 8 / 2**20,
        "generate_seconds": time.perf_counter() - t0,
    }
    _empca(X[: min(n, 500)])  # compiles what the fits run (Numba caches), outside the timed fits
    fits: dict[str, list] = {"EMPCA": [], "arpack": []}
    for j in range(PAIRS):  # EM, arpack; arpack, EM; ...: neighbours in alternating order
        order = ("EMPCA", "arpack") if j % 2 == 0 else ("arpack", "EMPCA")
        for name in order:
            fits[name].append(_measured(lambda name=name: (_empca if name == "EMPCA" else _arpack)(X)))
    em, arp = fits["EMPCA"][0][0], fits["arpack"][0][0]
    sin = float(subspace_sin(em.components_.T, arp.components_.T))
    ratios = [e[1] / a[1] for e, a in zip(fits["EMPCA"], fits["arpack"], strict=True)]
    rows = []
    for name, runs in fits.items():
        rows.append(
            {
                **base,
                "method": f"EMPCA({K})" if name == "EMPCA" else f'PCA({K}, svd_solver="arpack")',
                "seconds": float(np.median([r[1] for r in runs])),
                "seconds_samples": " ".join(f"{r[1]:.4g}" for r in runs),
                "ratio_samples": " ".join(f"{v:.4g}" for v in ratios) if name == "EMPCA" else "",
                "peak_mb": max(r[2] for r in runs) / 2**20,
                "n_iter": int(em.n_iter_) if name == "EMPCA" else np.nan,
                "sin_to_arpack": sin if name == "EMPCA" else np.nan,
            }
        )
    spca, seconds, peak = _measured(lambda: _sparse_pca(X))
    frac = certified_fraction(X, spca.components_[0], CARDINALITY, nonneg=False)[0]
    rows.append(
        {
            **base,
            "method": f"EMSparsePCA({SPARSE_COMPONENTS}, cardinality={CARDINALITY})",
            "seconds": seconds,
            "peak_mb": peak / 2**20,
            "n_iter": int(spca.n_iter_.sum()),
            "variance_first": float(spca.explained_variance_[0]),
            "certified_fraction": float(frac),
            "operator": spca.operator_,
        }
    )
    return rows


def _subsample(quick: bool, seed: int) -> list[dict]:
    _, (n, p) = _sizes(quick)
    X = counts(n, p, seed + 1)
    D = X.toarray()  # the subsample only: the dense fits to compare with
    base = {"part": "subsample", "shape": f"{n} x {p}", "n": n, "p": p, "nnz": int(X.nnz)}
    base["density"] = X.nnz / (n * p)
    rows = []
    cov = PCA(K, svd_solver="covariance_eigh").fit(X)
    for label, make in (("EMPCA", _empca), ("EMSparsePCA", _sparse_pca)):
        (sparse_fit, seconds, _), dense_fit = _measured(lambda make=make: make(X)), make(D)
        rows.append(
            {
                **base,
                "method": f"{label} on CSR vs on X.toarray()",
                "seconds": seconds,
                "max_component_diff": float(np.max(np.abs(sparse_fit.components_ - dense_fit.components_))),
                "max_variance_rel_diff": float(
                    np.max(np.abs(sparse_fit.explained_variance_ / dense_fit.explained_variance_ - 1.0))
                ),
                "sin_to_covariance_eigh": (
                    subspace_sin(sparse_fit.components_.T, cov.components_.T) if label == "EMPCA" else np.nan
                ),
            }
        )
    for solver in ("arpack", "covariance_eigh"):
        fit, seconds, _ = _measured(lambda solver=solver: PCA(K, svd_solver=solver, random_state=0).fit(X))
        rows.append(
            {
                **base,
                "method": f'PCA({K}, svd_solver="{solver}")',
                "seconds": seconds,
                "sin_to_covariance_eigh": subspace_sin(fit.components_.T, cov.components_.T),
            }
        )
    return rows


def _distributed(quick: bool, seed: int) -> list[dict]:
    (n, p), _ = _sizes(quick)
    X = counts(n, p, seed)
    base = {"part": "distributed", "shape": f"{n} x {p}", "n": n, "p": p, "nnz": int(X.nnz)}
    base.update(density=X.nnz / (n * p), csr_mb=_csr_bytes(X) / 2**20)
    rows, _, _ = run_part(distributed_rows, WORKER_MEMORY, X, K, PAIRS, 4 if quick else 8)
    return [{**base, **r} for r in rows]


def compute(cfg: _common.Config) -> pd.DataFrame:
    parts = _scale(cfg.quick, cfg.seed) + _subsample(cfg.quick, cfg.seed)
    return pd.DataFrame(parts + _distributed(cfg.quick, cfg.seed))


# --------------------------------------------------------------------------- figure and table
def plot(df: pd.DataFrame, cfg: _common.Config):
    a = df[df.part == "scale"]
    fig, axes = plt.subplots(1, 2, figsize=(11.0, 4.2))
    labels = [m.replace("(", "\n(", 1) for m in a.method]
    ax = axes[0]
    ax.bar(range(len(a)), a.seconds, color=["tab:blue", "tab:orange", "tab:green"][: len(a)])
    ax.set_xticks(range(len(a)))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("seconds (median of the repeats)", fontsize=10)
    ax.set_title(f"time, {a['shape'].iloc[0]} CSR, {a.density.iloc[0]:.1%} non-zero", fontsize=11)
    ax = axes[1]
    csr = float(a.csr_mb.iloc[0])
    ax.bar(range(len(a)), a.peak_mb / csr, color=["tab:blue", "tab:orange", "tab:green"][: len(a)])
    ax.axhline(MEMORY_GOAL, color="tab:red", linestyle="--", label=f"goal {MEMORY_GOAL:g}x the CSR")
    ax.set_xticks(range(len(a)))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("peak new memory / CSR size", fontsize=10)
    ax.set_title(f"memory (CSR {csr:.0f} MB; dense {a.dense_mb.iloc[0] / 1024:.1f} GB)", fontsize=11)
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


def table(df: pd.DataFrame, cfg: _common.Config) -> str:
    a, b = df[df.part == "scale"], df[df.part == "subsample"]
    r0 = a.iloc[0]
    lines = [
        f"Scale: {r0['shape']} CSR, {int(r0.nnz)} stored entries ({r0.density:.2%}), {r0.csr_mb:.0f} MB "
        f"(dense: {r0.dense_mb / 1024:.1f} GB).",
        "",
        "| method | seconds | peak memory / CSR | note |",
        "|---|---|---|---|",
    ]
    for r in a.itertuples():
        if r.method.startswith("EMPCA"):
            note = f"{int(r.n_iter)} iterations; sin to arpack {r.sin_to_arpack:.1e}"
        elif r.method.startswith("EMSparsePCA"):
            note = f"certified fraction {r.certified_fraction:.3f} (first component, rank-3 bound)"
        else:
            note = ""
        lines.append(f"| {r.method} | {r.seconds:.2f} | {r.peak_mb / r.csr_mb:.2f}x | {note} |")
    lines += ["", f"Subsample {b['shape'].iloc[0]} (dense fits too):", "", "| method | seconds | result |"]
    lines.append("|---|---|---|")
    for r in b.itertuples():
        if "toarray" in r.method:
            res = f"max component difference {r.max_component_diff:.1e}"
        else:
            res = f"sin to covariance_eigh {r.sin_to_covariance_eigh:.1e}"
        lines.append(f"| {r.method} | {r.seconds:.2f} | {res} |")
    c = df[df.part == "distributed"]
    if c.empty:  # a run before part (c) was added
        return "\n".join(lines) + "\n"
    lines += ["", f"Distributed {c['shape'].iloc[0]}, {int(c.chunks.iloc[0])} row chunks of CSR matrices on "]
    lines[-1] += f"{int(c.workers.iloc[0])} workers (load {c.load_1min.iloc[0]:.1f}):"
    lines += ["", "| method | seconds | iterations | ratio to in memory (per pair) | max component diff |"]
    lines.append("|---|---|---|---|---|")
    for r in c.itertuples():
        on_dask = isinstance(r.ratio_samples, str) and r.ratio_samples
        ratio, diff = (r.ratio_samples, f"{r.max_component_diff:.1e}") if on_dask else ("", "")
        lines.append(f"| {r.method} | {r.seconds:.2f} | {int(r.n_iter)} | {ratio} | {diff} |")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- goals
def _check_memory(prefix: str):
    def check(df: pd.DataFrame) -> Outcome:
        a = df[df.part == "scale"]
        r = a[a.method.str.startswith(prefix)].iloc[0]
        frac = r.peak_mb / r.csr_mb
        ok = frac <= MEMORY_GOAL
        return Outcome(
            f"peak {'within' if ok else 'above'} {MEMORY_GOAL:g}x the CSR",
            REPRODUCED if ok else NOT_REPRODUCED,
            f"{r.method} on a {r['shape']} CSR ({r.csr_mb:.0f} MB, {r.density:.2%} non-zero); tracemalloc's "
            f"peak of the fit's new allocations; the dense array would be {r.dense_mb / r.csr_mb:.0f}x the "
            "CSR.",
            measured=f"peak {r.peak_mb:.1f} MB = {frac:.2f}x the CSR",
        )

    return check


def _check_speed(df: pd.DataFrame) -> Outcome:
    a = df[df.part == "scale"]
    r = a[a.method.str.startswith("EMPCA")].iloc[0]
    call = call_timing([float(v) for v in str(r.ratio_samples).split()], SPEED_GOAL)
    return Outcome(
        f"{call.text('.2f', 'x')} on {r['shape']}",
        call.verdict,
        f"EMPCA({K}) time / PCA(svd_solver='arpack') time on the same CSR matrix, {PAIRS} alternating pairs "
        f"(wall time; decided on {call.band_text()}); EMPCA took {int(r.n_iter)} iterations of two sparse "
        "products with 30 columns (20 + 10 oversampled), ARPACK's Lanczos one column per product.",
    )


def _check_subspace(df: pd.DataFrame) -> Outcome:
    a = df[df.part == "scale"]
    r = a[a.method.str.startswith("EMPCA")].iloc[0]
    ok = r.sin_to_arpack <= SIN_GOAL
    return Outcome(
        f"sin {'<=' if ok else '>'} {SIN_GOAL:g}",
        REPRODUCED if ok else NOT_REPRODUCED,
        f"sine of the largest principal angle between EMPCA({K}) (tol 1e-6 on its own subspace change) and "
        "ARPACK's 20 leading eigenvectors, on the same CSR matrix.",
        measured=f"sin {r.sin_to_arpack:.1e}",
    )


def _check_equal(df: pd.DataFrame) -> Outcome:
    b = df[(df.part == "subsample") & df.method.str.contains("toarray")]
    worst = float(b.max_component_diff.max())
    ok = worst <= EQUAL_GOAL
    return Outcome(
        f"largest difference {'<=' if ok else '>'} {EQUAL_GOAL:g}",
        REPRODUCED if ok else NOT_REPRODUCED,
        f"EMPCA({K}) and EMSparsePCA({SPARSE_COMPONENTS}, cardinality={CARDINALITY}) on the CSR matrix and "
        f"on X.toarray(), {b['shape'].iloc[0]}: the largest absolute difference of their components.",
        measured=", ".join(
            f"{m.split(' ')[0]} {v:.1e}" for m, v in zip(b.method, b.max_component_diff, strict=True)
        ),
    )


GOALS = [
    Claim(
        f"no-dense-copy-{tag}",
        f"Goal: {label} fits a 1%-dense CSR matrix without a dense copy: its peak new memory is at most "
        f"{MEMORY_GOAL:g}x the CSR's own size.",
        f"<= {MEMORY_GOAL:g}x the CSR",
        _check_memory(prefix),
        case=label,
    )
    for tag, label, prefix in (
        ("empca", f"EMPCA({K})", "EMPCA"),
        ("em-sparse-pca", f"EMSparsePCA({SPARSE_COMPONENTS}, cardinality={CARDINALITY})", "EMSparsePCA"),
    )
] + [
    Claim(
        "speed-vs-arpack",
        f"Goal: EMPCA({K}) on a sparse count matrix is at least as fast as scikit-learn's "
        "PCA(svd_solver='arpack') on the same CSR input.",
        f"<= {SPEED_GOAL:g}x",
        _check_speed,
        machine_dependent=True,
    ),
    Claim(
        "subspace-vs-arpack",
        f"Goal: EMPCA({K})'s subspace on sparse input agrees with ARPACK's.",
        f"sin <= {SIN_GOAL:g}",
        _check_subspace,
    ),
    Claim(
        "equals-dense",
        "Goal: the fits on a sparse matrix equal the fits on its dense copy (where both fit).",
        f"<= {EQUAL_GOAL:g}",
        _check_equal,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
