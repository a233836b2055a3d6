"""Benchmark of the NSPCA kernels (Zass & Shashua 2006, Algorithm 1): sweep cost and time to convergence.

Three measurements, each as a ratio to a reference timed in the same run on the same data:

1. **Sweep** (``kind == "sweep"``): one sweep of Algorithm 1 over all ``d k`` entries of U, against one dense
   product ``A @ U`` of the same size. Section 4 states a sweep costs ``O(d^2 k)``, the flops of ``A @ U``, so
   the ratio measures the kernel's efficiency (project goal: <= 5). d = 361 is the CBCL scatter matrix
   (centred 0..255 pixels); larger d use ``A = X'X`` of 256 Gaussian samples (the rank does not change the
   cost). The sweep starts from a random non-negative U with unit columns (every entry moves, the worst
   case), alpha = the largest eigenvalue of A (power iteration), beta = 0.
2. **Fit** (``kind == "fit"``): NSPCA to convergence (relative gain <= 1e-8 per sweep) for the three settings
   of Fig. 2 on the CBCL faces, against one ``A @ U`` and against ``sklearn.decomposition.PCA(10).fit`` on
   the same 2429 x 361 data. Seconds are reported too, as the project's goal is absolute (< 1 s per setting;
   the authors' MATLAB code took 24 s on average per cardinality in Sigg & Buhmann 2008, Sec. 5.2 - a
   different task on a different machine, quoted for scale only).
3. **Cardinality search** (``kind == "cardinality"``, full runs only): ``nspca_for_cardinality`` as Sigg &
   Buhmann ran NSPCA (one component, bisection on beta to a relative interval of 1e-5, ten random restarts)
   on their preprocessing of the faces (standardized, projected off the first principal component), for
   K in {10, 50, 100} and alpha in {1e5, 1e6, 1e7}; seconds per cardinality and the ratio to 24 s.

Every timing is repeated and interleaved (``rep`` column): each repeat times every size once, the sweep
and its reference ``A @ U`` back to back, and every fit next to its own PCA fit, so that a slow moment of
the machine touches both sides of a ratio. BLAS is limited to one thread for the kernel and the
references alike (the kernel is single-threaded). Numba compilation is excluded by a warm-up call.
All times are **CPU time of this process** (``time.process_time``): with BLAS and the kernel on one
thread it is the wall time the work takes on an idle machine, while the time a shared, loaded machine gives
to other processes does not count (with wall-clock time, two runs at different loads gave sweep / (A @ U)
ratios of 3.7 and 8.2 for the same size, and fits 3x slower). A sweep measurement runs several sweeps
from prepared copies of the start (at least ~5 ms), a product measurement several products (at least
~2 ms), so that timer resolution and short hiccups do not dominate.
The claims are machine-dependent (``Claim(machine_dependent=True)``) and decide with
:func:`experiments.runner.claims.call_timing` on the repeats:
a ratio (or, for the cost exponents, the growth per
doubling of d or k from each repeat's joint log-log fit: of the sweep / (A @ U) ratio in d, of the sweep
time in k, because at k <= 20 the time of ``A @ U`` is not proportional to k) is *met* or *missed* only when
the run's interval of its median (the 95% confidence interval; the range of fewer than 6 repeats) lies
outside a band around the threshold; otherwise the verdict is *too close to call*. Full runs: 9 repeats of
every sweep, 5 of every fit; ``--quick``: d in {361, 512, 1024},
k = 10, 3 repeats, no cardinality search.
"""

from __future__ import annotations

import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn import config_context
from sklearn.decomposition import PCA
from threadpoolctl import threadpool_limits

from experiments.runner import _common
from experiments.runner.claims import (
    NOT_REPRODUCED,
    PARTIAL,
    REPRODUCED,
    TOO_CLOSE,
    Claim,
    Outcome,
    call_timing,
)
from repro.nspca import CardinalityNotReached, nspca, nspca_for_cardinality, nspca_sweep

TITLE = "Benchmark: NSPCA sweep cost vs one A @ U, and time to convergence on CBCL (Zass & Shashua 2006)"

FIG2_SETTINGS = ((2e7, 0.0), (5e8, 0.0), (2e7, 2e6))
PUBLISHED_MATLAB_SECONDS = 24.0  # Sigg & Buhmann (2008), Sec. 5.2: NSPCA, average per cardinality
_clock = time.process_time  # CPU time of this process: other processes' load does not count
N_SWEEP_REPEATS = 9
N_FIT_REPEATS = 5
SLOPE_LIMIT = 0.3  # the sweep / (A @ U) ratio may grow at most like d^0.3 and k^0.3 ("does not grow")
SLOPE_BAND = 0.1  # +/- band around SLOPE_LIMIT inside which the cost exponent is too close to call
RATIO_GOAL = 5.0  # project goal: one sweep <= 5 products A @ U
FIT_GOAL_S = 1.0  # project goal: < 1 s per Fig. 2 setting


def _top_eigenvalue(A: np.ndarray, rng: np.random.Generator, steps: int = 50) -> float:
    v = rng.normal(size=A.shape[0])
    for _ in range(steps):
        v = A @ v
        v /= np.linalg.norm(v)
    return float(v @ A @ v)


def _sweep_case(A: np.ndarray, k: int, rng: np.random.Generator):
    """A timed sweep and its reference ``A @ U`` for one (A, k), from a fixed random non-negative start."""
    d = A.shape[0]
    alpha = _top_eigenvalue(A, rng)
    U0 = rng.random((d, k))
    U0 = np.ascontiguousarray(U0 / np.linalg.norm(U0, axis=0))

    def sweep(n_in: int = 1) -> float:
        starts = [(U0.copy(), A @ U0, U0.T @ U0) for _ in range(n_in)]  # prepared outside the timing
        t0 = _clock()
        for U, AU, G in starts:
            nspca_sweep(A, U, AU, G, alpha=alpha)
        return (_clock() - t0) / n_in

    sweep()  # warm-up (compilation)
    n_sweeps = int(min(20, max(1, 5e-3 / max(sweep(), 1e-7))))  # >= ~5 ms per measurement
    A @ U0
    t0 = _clock()
    A @ U0
    inner = int(min(200, max(1, 2e-3 / max(_clock() - t0, 1e-7))))  # >= ~2 ms per measurement

    def gemm() -> float:
        t0 = _clock()
        for _ in range(inner):
            A @ U0
        return (_clock() - t0) / inner

    return lambda: sweep(n_sweeps), gemm


def compute(cfg: _common.Config) -> pd.DataFrame:
    from data_fetch import load_cbcl_faces

    rng = cfg.rng(0)
    repeats = 3 if cfg.quick else N_SWEEP_REPEATS
    fit_repeats = 3 if cfg.quick else N_FIT_REPEATS
    raw = load_cbcl_faces().X
    X = _common.preprocess(raw, "center")
    A_cbcl = np.ascontiguousarray(X.T @ X)
    rows = []
    # a sweep trusts its input: scikit-learn's parameter validation (tens of microseconds a call) is skipped,
    # so a timing is the sweep itself
    with threadpool_limits(1, user_api="blas"), config_context(skip_parameter_validation=True):
        # 1. sweep vs one A @ U, repeats interleaved over every size
        ks = (10,) if cfg.quick else (5, 10, 20)
        mats = [("CBCL", A_cbcl)]
        for d in (512, 1024) if cfg.quick else (1024, 2048, 4096):
            Z = rng.normal(size=(256, d))
            mats.append(("gaussian", np.ascontiguousarray(Z.T @ Z)))
        cases = [(source, A.shape[0], k, *_sweep_case(A, k, rng)) for source, A in mats for k in ks]
        for rep in _common.progress(range(repeats), "sweep repeats"):
            for source, d, k, sweep, gemm in cases:
                t_sweep, t_gemm = sweep(), gemm()
                rows.append(
                    {
                        "kind": "sweep",
                        "source": source,
                        "d": d,
                        "k": k,
                        "rep": rep,
                        "seconds": t_sweep,
                        "ref_seconds": t_gemm,
                        "ratio": t_sweep / t_gemm,
                        "reference": "A @ U",
                    }
                )
        del cases, mats

        # 2. NSPCA to convergence, Fig. 2 settings, each repeat next to its references
        U10 = np.ascontiguousarray(np.abs(rng.normal(size=(361, 10))))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nspca(X, 10, alpha=2e7, max_iter=2, random_state=0)  # warm-up
        PCA(10, random_state=0).fit(X)
        for rep in _common.progress(range(fit_repeats), "fit repeats"):
            for alpha, beta in FIG2_SETTINGS:
                t0 = _clock()
                for _ in range(50):
                    A_cbcl @ U10
                t_gemm = (_clock() - t0) / 50
                t0 = _clock()
                PCA(10, random_state=0).fit(X)
                t_pca = _clock() - t0
                t0 = _clock()
                res = nspca(X, 10, alpha=alpha, beta=beta, random_state=cfg.rng(1, rep))
                secs = _clock() - t0
                rows.append(
                    {
                        "kind": "fit",
                        "source": "CBCL",
                        "d": 361,
                        "k": 10,
                        "alpha": alpha,
                        "beta": beta,
                        "rep": rep,
                        "seconds": secs,
                        "n_iter": res.n_iter,
                        "converged": res.converged,
                        "seconds_per_sweep": secs / max(res.n_iter, 1),
                        "ref_seconds": t_gemm,
                        "ratio": secs / t_gemm,
                        "reference": "A @ U",
                        "pca_seconds": t_pca,
                        "ratio_pca": secs / t_pca,
                    }
                )

        # 3. Sigg & Buhmann's protocol: one component of cardinality K by bisection on beta
        if not cfg.quick:
            Zs = _common.preprocess(raw, "standardize")
            _, _, Vt = np.linalg.svd(Zs, full_matrices=False)
            w = Vt[0]
            Zp = Zs - np.outer(Zs @ w, w)
            A_s = np.ascontiguousarray(Zp.T @ Zp)
            for alpha in (1e5, 1e6, 1e7):
                for K in (10, 50, 100):
                    t0 = _clock()
                    try:
                        r = nspca_for_cardinality(
                            A_s, K, alpha=alpha, n_restarts=10, precomputed=True, random_state=cfg.rng(2, K)
                        )
                        found, var, fits = True, r.variance / (Zs.shape[0] - 1), r.n_fits
                    except CardinalityNotReached:
                        found, var, fits = False, np.nan, np.nan
                    secs = _clock() - t0
                    rows.append(
                        {
                            "kind": "cardinality",
                            "source": "CBCL standardized, PC1 removed",
                            "d": 361,
                            "k": 1,
                            "alpha": alpha,
                            "target": K,
                            "found": found,
                            "variance": var,
                            "n_fits": fits,
                            "seconds": secs,
                            "ref_seconds": PUBLISHED_MATLAB_SECONDS,
                            "ratio": secs / PUBLISHED_MATLAB_SECONDS,
                            "reference": "published MATLAB NSPCA average (24 s)",
                        }
                    )
    return pd.DataFrame(rows)


def plot(df: pd.DataFrame, cfg: _common.Config):
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(7.2, 2.9))
    sw = df[df.kind == "sweep"]
    q = sw.groupby(["k", "d"])["ratio"].quantile([0.25, 0.5, 0.75]).unstack()
    for k, g in q.groupby(level="k"):
        g = g.droplevel("k").sort_index()
        ax1.errorbar(
            g.index,
            g[0.5],
            yerr=[g[0.5] - g[0.25], g[0.75] - g[0.5]],
            marker="o",
            capsize=2,
            label=f"k = {k}",
        )
    ax1.axhline(RATIO_GOAL, color="gray", ls=":", lw=1, label="goal 5")
    ax1.set_xscale("log")
    ds = sorted(sw.d.unique())
    ax1.set_xticks(ds, [str(int(d)) for d in ds])
    ax1.minorticks_off()
    ax1.set_ylim(0, max(5.5, float(sw.ratio.max()) * 1.1))
    ax1.set_xlabel("d")
    ax1.set_ylabel("time of one sweep / one A @ U")
    ax1.set_title("(a) sweep cost, Algorithm 1 (median, quartiles)")
    ax1.legend(fontsize=7)
    fit = df[df.kind == "fit"]
    settings = list(dict.fromkeys(zip(fit.alpha, fit.beta, strict=True)))
    labels, med, lo, hi, rpca = [], [], [], [], []
    for a, b in settings:
        g = fit[(fit.alpha == a) & (fit.beta == b)]
        labels.append(rf"$\alpha$={a:.0e}" "\n" rf"$\beta$={b:.0e}".replace("e+0", "e").replace("0e0", "0"))
        qs = np.percentile(g.seconds, [25, 50, 75])
        lo.append(qs[1] - qs[0])
        med.append(qs[1])
        hi.append(qs[2] - qs[1])
        rpca.append(float(np.median(g.ratio_pca)))
    x = np.arange(len(settings))
    ax2.bar(x, med, yerr=[lo, hi], capsize=3, color=_common.method_style("NSPCA")["color"])
    ax2.axhline(FIT_GOAL_S, color="gray", ls=":", lw=1)
    for i, (s_, r) in enumerate(zip(med, rpca, strict=True)):
        ax2.text(i, s_ + hi[i], f"{s_:.2f} s\n{r:.0f}x PCA", ha="center", va="bottom", fontsize=6)
    ax2.set_xticks(x, labels, fontsize=6)
    ax2.set_ylabel("CPU seconds to convergence (median)")
    ax2.set_title("(b) NSPCA on CBCL, Fig. 2 settings")
    ax2.set_ylim(0, max(1.2, float(max(m + h for m, h in zip(med, hi, strict=True))) * 1.4))
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- claims
def _combine(calls, *, all_needed: bool = False) -> str:
    """One verdict from several timing calls: met if all are met; missed if all are missed (or, when every
    call is a necessary part of the claim, ``all_needed``, if any is); partly if some are met and some
    missed; otherwise too close to call."""
    states = [c.state for c in calls]
    if "missed" in states:
        if all_needed or "met" not in states:
            return NOT_REPRODUCED
        return PARTIAL
    return REPRODUCED if all(st == "met" for st in states) else TOO_CLOSE


def _slopes(sw: pd.DataFrame) -> pd.DataFrame:
    """Per repeat: joint log-log fits in d and k of the sweep / (A @ U) ratio and of the sweep time."""
    out = []
    for rep, g in sw.groupby("rep"):
        cols = [np.ones(len(g)), np.log(g.d.to_numpy(float))]
        has_k = g.k.nunique() >= 2
        if has_k:
            cols.append(np.log(g.k.to_numpy(float)))
        M = np.column_stack(cols)
        ratio = np.linalg.lstsq(M, np.log(g.ratio.to_numpy(float)), rcond=None)[0]
        raw = np.linalg.lstsq(M, np.log(g.seconds.to_numpy(float)), rcond=None)[0]
        out.append(
            {
                "rep": rep,
                "ratio_d": ratio[1],
                "ratio_k": ratio[2] if has_k else np.nan,
                "raw_d": raw[1],
                "raw_k": raw[2] if has_k else np.nan,
            }
        )
    return pd.DataFrame(out)


def _check_scaling(df):
    # O(d^2 k) bounds the work. In d: A @ U has exactly d^2 k multiply-adds and meets the same caches, so the
    # sweep is O(d^2 k) in d when the sweep / (A @ U) ratio does not grow with d (its exponent below
    # SLOPE_LIMIT). In k: at k <= 20 the time of A @ U is not proportional to k (both read all of A once,
    # its k-exponent swings 0.1..0.6 between repeats), so the ratio would measure the reference's noise; the
    # sweep's own time must grow at most linearly in k (exponent below 1 + SLOPE_LIMIT). Exponents come from
    # one joint log-log fit per repeat and are decided on the repeats with a band of +/- SLOPE_BAND (as
    # growth factors per doubling, 2**exponent, for call_timing).
    sw = df[df.kind == "sweep"]
    if sw.d.nunique() < 2:
        return Outcome("-", NOT_REPRODUCED, "needs two or more sizes d")
    sl = _slopes(sw)
    margin = 2.0**SLOPE_BAND - 1.0
    tests = {"ratio_d": ("sweep / (A @ U) exponent in d", SLOPE_LIMIT)}
    if sl["raw_k"].notna().any():
        tests["raw_k"] = ("sweep time exponent in k", 1.0 + SLOPE_LIMIT)
    parts, calls = [], []
    for col, (label, limit) in tests.items():
        c = call_timing(2.0 ** sl[col].dropna(), 2.0**limit, margin=margin)
        calls.append(c)
        q = np.percentile(sl[col].dropna(), [25, 50, 75])
        parts.append(f"{label} {q[1]:+.2f} (quartiles {q[0]:+.2f}..{q[2]:+.2f}, limit {limit:g}: {c.state})")
    med = sw.groupby(["d", "k"]).ratio.median()
    info = f"sweep time exponent in d {sl.raw_d.median():.2f}"
    if sl["ratio_k"].notna().any():
        info += f", ratio exponent in k {sl.ratio_k.median():+.2f}"
    text = (
        f"median sweep / (A @ U) in [{med.min():.2f}, {med.max():.2f}] over d = {sw.d.min()}..{sw.d.max()}, "
        f"k = {sw.k.min()}..{sw.k.max()}; " + "; ".join(parts) + f"; {info}; {len(sl)} interleaved repeats"
    )
    return Outcome(
        text,
        _combine(calls, all_needed=True),
        "reproduced if the sweep's cost grows like d^2 k: its ratio to the d^2 k product A @ U does not grow "
        f"with d (exponent below {SLOPE_LIMIT}) and its time grows at most linearly in k (exponent below "
        f"{1 + SLOPE_LIMIT}), in median and upper quartile over the repeats, outside a band of "
        f"+/-{SLOPE_BAND} (inside: too close to call). In k the ratio to A @ U is not used: at k <= 20 the "
        "time of A @ U is not proportional to k",
    )


def _check_ratio(df):
    sw = df[df.kind == "sweep"]
    calls = {key: call_timing(g.ratio, RATIO_GOAL) for key, g in sw.groupby(["source", "d", "k"])}
    worst_key = max(calls, key=lambda key: calls[key].median)
    worst = calls[worst_key]
    cbcl = [c for (src, _d, k), c in calls.items() if src == "CBCL" and k == 10]
    text = (
        f"worst sweep / (A @ U): {worst.text('.2f')} at d={worst_key[1]}, k={worst_key[2]}"
        + (f"; CBCL k=10: {cbcl[0].text('.2f')}" if cbcl else "")
        + f"; {sum(c.state == 'met' for c in calls.values())}/{len(calls)} sizes met"
    )
    return Outcome(
        text,
        _combine(calls.values()),
        "project goal, not a paper claim; single-threaded BLAS for both; every size decided with "
        f"call_timing on its repeats ({worst.band_text()} around 5)",
    )


def _check_fit(df):
    fit = df[df.kind == "fit"]
    parts, calls = [], []
    for (a, b), g in fit.groupby(["alpha", "beta"], sort=False):
        c = call_timing(g.seconds, FIT_GOAL_S)
        calls.append(c)
        parts.append(
            f"({a:.0e}, {b:.0e}) {c.text('.2f', ' s')} = {np.median(g.ratio_pca):.0f}x PCA fit, "
            f"{int(np.median(g.n_iter))} sweeps"
        )
    return Outcome(
        "; ".join(parts),
        _combine(calls),
        "project goal (< 1 s per setting, tol 1e-8), an absolute time by its nature, measured as the "
        "process's CPU time so other processes' load does not enter (the PCA ratio "
        f"is for scale); each setting decided with call_timing on its repeats ({calls[0].band_text()} "
        "around 1 s); MATLAB NSPCA took 24 s per cardinality (Sigg & Buhmann 2008), a different task and "
        "machine",
    )


CLAIMS = [
    Claim(
        "sweep-is-O(d^2 k)",
        "Sec. 4: caching, each update is done in O(d), and the entire matrix U is updated in O(d^2 k)",
        "O(d^2 k)",
        _check_scaling,
        machine_dependent=True,
    ),
]

GOALS = [
    Claim(
        "sweep-ratio-goal",
        "Project goal: one sweep costs at most 5 dense products A @ U",
        "<= 5",
        _check_ratio,
        machine_dependent=True,
    ),
    Claim(
        "fit-under-1s",
        "Project goal: NSPCA converges for each Fig. 2 setting in under 1 s",
        "< 1 s (MATLAB: 24 s per cardinality)",
        _check_fit,
        machine_dependent=True,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
