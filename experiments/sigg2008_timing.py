"""Sigg & Buhmann (2008), Sections 3.1 and 5.2: EM iterations per run and the running time of emPCA (nn)
against NSPCA.

Two measurements (the paper has no figure for them; the plot summarizes the CSV):

* **EM iterations** (Sec. 3.1: "on average, t < 10 iterations were sufficient to achieve convergence";
  the dependence on ``D`` and ``K`` is "weak and sub-linear"): iterations of the sparse EM started from the
  first principal component, for every ``K`` on the standardized CBCL faces (``K = 1..361``) and the
  standardized leukemia data (``K = 1..150``), with the library's convergence test
  ``1 - |w(t+1)'w(t)| < tol`` at ``tol = 1e-8`` (default; the claim) and at ``1e-6`` and ``1e-4`` (the
  paper's rule is Alg. 1's ``|w(t+1)'w(t)| > 1 - eps``, ``eps`` not stated: the looser ones are in the
  row's note). For emPCA (nn) (ten random starts) the iterations per run are ``n_iter_total / 10``.
* **Running time** (Sec. 5.2: "average times for K in {1, ..., 100} were 0.4 s for emPCA (0.15 s standard
  deviation) and 24 s for NSPCA (14.7 s standard deviation)"): on the Fig. 3 setup (CBCL standardized,
  projected off the first principal component), seconds per cardinality of emPCA (nn) (best of ten random
  starts, plain EM as plotted in Fig. 3 left, every ``K = 1..100``) and of NSPCA with ``beta`` found by
  bisection (relative interval 1e-5) for a single component with exactly ``K`` non-zeros, best of ten
  restarts, for each ``alpha`` in {1e5, 1e6, 1e7}, on the grid ``K = 1, 10, 20, ..., 100`` (a bisection of
  ten restarts costs up to seconds; every ``K`` would take ~10 minutes). The NSPCA mean is over every
  (alpha, K) pair of the grid, those where the bisection failed to reach ``K`` included (the paper's average
  presumably includes them too: its runs are the Fig. 3 left sweeps). Compared: the ratio of the means
  (published 24 / 0.4 = 60) and each method's sd / mean.

Choices (and why)
-----------------
* Both methods run single-threaded (NSPCA's sweep kernel limits BLAS to one thread; emPCA limits BLAS to
  :func:`repro.set_blas_threads`, default 1), so the ratio compares algorithms, not thread counts.
* Time for emPCA (nn) per ``K`` is what a cold call for that ``K`` alone costs (set-up, covariance and ten
  starts), measured as such: ``em_sparse_pca_path(Xp, [K])`` with the path's start seeds (same iterations,
  checked), the least of ``EM_REPEATS = 3`` calls. Numba compilation is excluded by a warm-up call.
* **The emPCA (nn) calls are interleaved with the NSPCA cells**: the ``3 x 100`` cold calls are spread
  evenly over the cells of both NSPCA passes (4-5 calls before each cell), so both means are taken over
  the same minutes: the host's speed drifts over minutes, and a ratio of two means measured in different
  minutes carries that drift (two full runs with all emPCA (nn) calls first read the ratio 174 and 129).
* **Times are the process's CPU time** (``time.process_time``), for emPCA (nn) and NSPCA alike: the claim is
  about the work each method needs (both single-threaded), and the wall clock adds whatever else the
  machine runs (with the wall clock the ratio moved from 105 to 58 between two runs of the same code).
* **NSPCA is timed in two whole passes over the (alpha, K) grid** (``NSPCA_REPEATS``), the least CPU time
  of each cell kept (the same seeds: the two passes do the same work, checked by the number of fits): the
  host slows a process in bursts, and CPU time counts the stalled cycles (one pass: per-cell times 0.92x
  to 1.45x apart for identical work). Cost: about 55 s.
* **Run alone** (``RUN_ALONE``): in a parallel full run (``--jobs 2``) this experiment runs before the
  others, with the machine to itself: an emPCA (nn) call is about 15 ms of work, and the experiment beside
  it on the other core moved its mean by 13% between two full runs of the same code. The measurements
  behind these choices: docs/notes/2026-11-28-timing-rules.md.
* **The spread of the times** (Sec. 5.2's standard deviations, 0.15 s and 14.7 s): sd / mean of the
  per-cardinality times (only relative quantities are compared, as for the ratio of the means), within a
  factor 2 of the published 0.38 and 0.61; with the ratio, the three parts of that sentence's one row.
* **The dependence on D** (Sec. 3.1): the paper's two data sets give two values of ``D`` (361 and
  12,582; 1,500 genes in ``--quick``, column ``n_features``); the mean iterations over the cardinalities
  both have, their log-log slope against ``D`` called with the rule of the K part of the same row.
* The published seconds are MATLAB on a 2.2 GHz Core 2 Duo; only the ratio is compared.
* ``--quick``: 500 faces, ``K`` in {10, 40} (iterations: ``K`` up to 40), ``alpha = 1e7``, one restart.

References
----------
C. D. Sigg and J. M. Buhmann. Expectation-maximization for sparse and non-negative PCA. ICML 2008.
R. Zass and A. Shashua. Nonnegative sparse PCA. NIPS 19, 2006.
"""

from __future__ import annotations

import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments._sigg import boot_cv, boot_ratio, cold_cpu_seconds, iteration_rows, nn_path, timed_nspca
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
from repro.em_sparse_pca import em_sparse_pca_path
from repro.nspca import nspca

RUN_ALONE = True  # timed milliseconds: no other experiment beside it in a parallel run (docstring)
TITLE = "Sigg & Buhmann (2008) Sec. 3.1/5.2: EM iterations per run; emPCA (nn) vs NSPCA running time"

TOLS = (1e-8, 1e-6, 1e-4)
CLAIM_TOL = 1e-8
ALPHAS = (1e5, 1e6, 1e7)
NSPCA_GRID = (1, *range(10, 101, 10))
PUBLISHED = {"emPCA (nn)": 0.4, "NSPCA": 24.0}
PUBLISHED_SD = {"emPCA (nn)": 0.15, "NSPCA": 14.7}  # Sec. 5.2, standard deviations of the times
EM_REPEATS = 3  # cold emPCA (nn) calls per K, the least CPU time kept (a call takes ~20 ms)
NSPCA_REPEATS = 2  # passes over the NSPCA grid, the least CPU time per (alpha, K) kept (docstring)


def compute(cfg: _common.Config) -> pd.DataFrame:
    from data_fetch import load_cbcl_faces, load_leukemia_armstrong

    faces = load_cbcl_faces().X
    leuk = load_leukemia_armstrong().X
    quick = cfg.quick
    if quick:
        faces = faces[cfg.rng(0).choice(faces.shape[0], 500, replace=False)]
        leuk = leuk[:, :1500]
    rows: list[dict] = []
    restarts = 1 if quick else 10

    # ---- EM iterations, sparse emPCA from the first PC
    data = {
        "CBCL faces": _common.preprocess(faces, "standardize"),
        "leukemia": _common.preprocess(leuk, "standardize"),
    }
    kmax = {"CBCL faces": 40 if quick else 361, "leukemia": 40 if quick else 150}
    rows += [r for name, X in data.items() for r in iteration_rows(X, name, kmax[name], TOLS)]

    # ---- running time on the Fig. 3 setup
    Xp, _ = _common.minus_first_pc(_common.preprocess(faces, "standardize"))
    n = Xp.shape[0]
    A = np.ascontiguousarray(Xp.T @ Xp)
    ks = np.arange(1, 41 if quick else 101)
    em_sparse_pca_path(
        Xp, [5], nonneg=True, renormalize=False, init="random", n_restarts=1, random_state=0
    )  # warm-up
    timed = {}  # K -> its emPCA (nn) row at CLAIM_TOL, timed below, interleaved with NSPCA (docstring)
    for tol in TOLS:
        p = nn_path(Xp, ks, restarts, tol, cfg)
        for j, K in enumerate(p.cardinalities):
            rows.append(
                {
                    "kind": "iterations" if tol != CLAIM_TOL else "time",
                    "dataset": "CBCL faces, PC1 removed",
                    "method": "emPCA (nn)",
                    "tol": tol,
                    "cardinality": int(K),
                    "n_iter": p.n_iter_total[j] / restarts,
                    "seconds": np.inf if tol == CLAIM_TOL else p.init_time + p.time[j],
                    "variance": p.variance[j],
                }
            )
            if tol == CLAIM_TOL:
                timed[int(K)] = (rows[-1], int(p.n_iter_total[j]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nspca(np.ascontiguousarray(A[:20, :20]), 1, alpha=1e3, max_iter=2, precomputed=True, random_state=0)
    alphas = (1e7,) if quick else ALPHAS
    grid = (10, 40) if quick else NSPCA_GRID
    passes = 1 if quick else NSPCA_REPEATS
    # the EM_REPEATS cold emPCA (nn) calls of every K, spread evenly over the NSPCA cells of all passes
    em_jobs = iter(np.array_split(np.tile(ks, EM_REPEATS), passes * len(alphas) * len(grid)))
    cells = {}  # (alpha, K) -> the row, its "seconds" the least over the passes
    for rep in range(passes):  # whole passes over the grid, interleaved in time
        for a_i, alpha in enumerate(alphas):
            for K in _common.progress(grid, f"NSPCA alpha={alpha:g} (pass {rep + 1})"):
                for k_em in next(em_jobs):
                    em_row, n_total = timed[int(k_em)]
                    seconds = cold_cpu_seconds(Xp, int(k_em), restarts, CLAIM_TOL, cfg, n_total)
                    em_row["seconds"] = min(em_row["seconds"], seconds)
                row = {
                    "kind": "time",
                    "dataset": "CBCL faces, PC1 removed",
                    "method": "NSPCA",
                    "alpha": alpha,
                }
                row |= timed_nspca(A, n, int(K), alpha, restarts, cfg.rng(2, a_i, K))
                kept = cells.get((alpha, K))
                if kept is not None and (kept["n_fits"] != row["n_fits"] or kept["found"] != row["found"]):
                    raise RuntimeError(f"NSPCA alpha={alpha:g}, K={K}: two passes did different work.")
                if kept is None or row["seconds"] < kept["seconds"]:
                    cells[alpha, K] = row
    if next(em_jobs, None) is not None or not all(np.isfinite(r["seconds"]) for r, _ in timed.values()):
        raise RuntimeError("the emPCA (nn) calls were not all timed between the NSPCA cells.")
    rows.extend(cells.values())
    return pd.DataFrame(rows)


def plot(df: pd.DataFrame, cfg: _common.Config):
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8.5, 3.2))
    it = df[(df.tol == CLAIM_TOL) & (df.method == "emPCA") & (df.kind == "iterations")]
    for name, g in it.groupby("dataset"):
        g = g.sort_values("cardinality")
        ax1.plot(g.cardinality, g.n_iter, lw=0.9, label=f"emPCA, {name}")
    nn = df[(df.kind == "time") & (df.method == "emPCA (nn)")].sort_values("cardinality")
    ax1.plot(nn.cardinality, nn.n_iter, lw=0.9, label="emPCA (nn) per run, faces PC1 removed")
    ax1.axhline(10, color="black", ls="--", lw=0.8, label="10 (Sec. 3.1)")
    ax1.set_xscale("log")
    ax1.set_xlabel("Cardinality")
    ax1.set_ylabel(f"EM iterations (tol {CLAIM_TOL:g})")
    ax1.legend(fontsize=6.5)
    t = df[df.kind == "time"]
    st = _common.method_style("emPCA(nn)")
    st["markevery"] = 10
    ax2.plot(nn.cardinality, nn.seconds, label="emPCA (nn)", **st)
    base = _common.method_style("NSPCA")
    for (alpha, g), ls in zip(t[t.method == "NSPCA"].groupby("alpha"), ("-", "--", ":"), strict=False):
        g = g.sort_values("cardinality")
        ax2.plot(
            g.cardinality,
            g.seconds,
            color=base["color"],
            ls=ls,
            marker=base["marker"],
            label=rf"NSPCA $\alpha$=1e{round(np.log10(alpha))}",
        )
    ax2.set_yscale("log")
    ax2.set_xlabel("Cardinality")
    ax2.set_ylabel("seconds per cardinality")
    ax2.legend(fontsize=6.5)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- claims
def _iters(df, tol):
    it = df[(df.kind == "iterations") & (df.method == "emPCA") & (df.tol == tol)]
    return it.groupby("dataset").n_iter.mean()


def _check_iterations(df):
    # One sentence, one verdict: read at the tolerance every figure uses (CLAIM_TOL; the note says why),
    # the loose reading (the largest eps tried) reported in the note, not counted.
    m = _iters(df, CLAIM_TOL)
    loose = {tol: _iters(df, tol) for tol in TOLS if tol != CLAIM_TOL}
    nn = df[(df.kind == "time") & (df.method == "emPCA (nn)")].n_iter.mean()
    txt = "; ".join(f"{d}: {v:.1f}" for d, v in m.items())
    txt += f"; emPCA (nn) per run {nn:.1f} (tol {CLAIM_TOL:g})"
    txt += "; looser tol: " + "; ".join(
        f"{tol:g}: " + ", ".join(f"{v:.1f}" for v in s.values) for tol, s in loose.items()
    )
    ok = bool((m < 10).all())
    holds_at = [f"{tol:g}" for tol, s in loose.items() if bool((s < 10).all())]
    tol_max = max(TOLS)
    return Outcome(
        txt,
        REPRODUCED if ok else NOT_REPRODUCED,
        f"tested at the tolerance every figure uses, 1 - |w(t+1)'w(t)| < {CLAIM_TOL:g} (the paper's rule, "
        "Alg. 1, whose eps the paper does not state). Reading decided: 'sufficient to achieve convergence' "
        "speaks of converged components, the ones its figures compare, so the tolerance of the figures; "
        f"the loose reading (eps = {tol_max:g}, a step of about {np.sqrt(2 * tol_max):.3f} rad) is "
        "reported here and not counted"
        + (
            f"; the mean falls below 10 only at the loosest tolerance tried, {', '.join(holds_at)}, where "
            "the direction is still moving by about 1e-2 rad per step: not convergence in the sense of the "
            "figures"
            if holds_at and not ok
            else ""
        )
        + ". For context: the author's later R package nsprcomp stops on a relative change of the "
        "objective below 1e-3 (em_tol default, 100 iterations at most), another rule",
    )


def _parts_outcome(parts: dict[str, tuple[str, str]], note: str) -> Outcome:
    """One row for a sentence of several parts, each ``(verdict, value)``: reproduced when every part is,
    too close to call when none fails and one is undecided, partly when a part fails and another holds (in
    full or in part), else not reproduced; the note begins with the parts that fail, with their values."""
    verdicts = [v for v, _ in parts.values()]
    failing = {name: part for name, part in parts.items() if part[0] not in (REPRODUCED, TOO_CLOSE)}
    if not failing:
        verdict = REPRODUCED if set(verdicts) == {REPRODUCED} else TOO_CLOSE
    else:
        verdict = PARTIAL if {REPRODUCED, PARTIAL} & set(verdicts) else NOT_REPRODUCED
    named = "; ".join(f"{name} {v} ({value})" for name, (v, value) in failing.items())
    return Outcome(
        "; ".join(f"{name}: {value}" for name, (_, value) in parts.items()),
        verdict,
        (f"fails at: {named}. " if failing else "") + note,
    )


def _weak_in_k(df) -> tuple[str, str]:
    it = df[
        (df.kind == "iterations") & (df.method == "emPCA") & (df.tol == CLAIM_TOL) & (df.cardinality >= 2)
    ]
    slopes = {}
    for name, g in it.groupby("dataset"):
        slopes[name] = float(np.polyfit(np.log(g.cardinality), np.log(g.n_iter), 1)[0])
    ok = all(abs(s) <= 0.3 for s in slopes.values())
    return (
        REPRODUCED if ok else (PARTIAL if all(s < 1 for s in slopes.values()) else NOT_REPRODUCED),
        ", ".join(f"{d}: log-log slope of iterations vs K {s:+.2f}" for d, s in slopes.items()),
    )


def _weak_in_d(df) -> tuple[str, str]:
    # Rule fixed before the values were read: the rule of the K part on D, the mean iterations at tol
    # CLAIM_TOL over the cardinalities both data sets have, log-log slope between their two D
    it = df[(df.kind == "iterations") & (df.method == "emPCA") & (df.tol == CLAIM_TOL)]
    by = {d: g.set_index("cardinality") for d, g in it.groupby("dataset")}
    common = sorted(set.intersection(*(set(g.index) for g in by.values())))
    pts = sorted((int(g.n_features.iloc[0]), float(g.loc[common].n_iter.mean()), d) for d, g in by.items())
    (d0, m0, n0), (d1, m1, n1) = pts[0], pts[-1]
    slope = float(np.log(m1 / m0) / np.log(d1 / d0))
    means = ", ".join(f"{d}: {g.n_iter.mean():.1f} (K = 1..{int(g.index.max())})" for d, g in by.items())
    return (
        REPRODUCED if abs(slope) <= 0.3 else (PARTIAL if slope < 1 else NOT_REPRODUCED),
        f"mean iterations over K = {common[0]}..{common[-1]}: {m0:.1f} at D = {d0} ({n0}), {m1:.1f} at D = "
        f"{d1} ({n1}); log-log slope vs D {slope:+.2f}; over every K computed: {means}",
    )


def _check_weak(df):
    parts = {"in K": _weak_in_k(df), "in D": _weak_in_d(df)}
    return _parts_outcome(
        parts,
        "One sentence of two parts, each decided by one rule: weak = |log-log slope| <= 0.3 "
        "(sub-linear: slope < 1; a part sub-linear but not weak holds in part); reproduced when both parts "
        "are, partly when one fails. In K: the slope of the iterations against K on each data set (K >= "
        f"2). In D: the mean EM iterations (first-PC start, tol {CLAIM_TOL:g}) over the cardinalities both "
        "data sets have, so that K does not enter. Two data sets give two values of D only, and they differ "
        "in more than D (N = 2429 faces vs 72 samples, their spectra): the D slope is what the paper's own "
        "two data sets show, not a sweep of D",
    )


def _within(boot, lo: float, hi: float):
    """A bootstrapped relative quantity within ``[lo, hi]``, called by call_timing at each end:
    reproduced, too close to call, or not reproduced; and the call at ``lo`` (median and interval)."""
    low = call_timing(boot, lo, lower_is_better=False, bootstrap=True)
    high = call_timing(boot, hi, bootstrap=True)
    if low.state == "met" and high.state == "met":
        return REPRODUCED, low
    return (TOO_CLOSE if "too close" in (low.state, high.state) else NOT_REPRODUCED), low


def _spread(df, method: str) -> tuple[str, str]:
    """The spread over cardinalities of a method's times, as sd / mean against the published one (the
    seconds are MATLAB on a 2008 machine: only relative quantities are compared, as for the means)."""
    t = df[(df.kind == "time") & (df.method == method)].seconds.astype(float)
    pub = PUBLISHED_SD[method] / PUBLISHED[method]
    verdict, low = _within(boot_cv(t), pub / 2, 2 * pub)
    return (
        verdict,
        f"mean {t.mean():.3g} s, sd {t.std():.3g} s over {len(t)} cardinalities: sd / mean "
        f"{t.std() / t.mean():.2f} (bootstrap over K: median {low.median:.2f}, central 95% {low.low:.2f}-"
        f"{low.high:.2f}); published {PUBLISHED_SD[method]:g} s / {PUBLISHED[method]:g} s = {pub:.2f}",
    )


def _means(df):
    t = df[df.kind == "time"]
    em = t[t.method == "emPCA (nn)"].seconds
    ns = t[t.method == "NSPCA"].seconds
    return em, ns


def _ratio_of_means(df) -> tuple[str, str]:
    em, ns = _means(df)
    boot = boot_ratio(ns, em)
    verdict, low = _within(boot, 30.0, 120.0)
    five = call_timing(boot, 5.0, lower_is_better=False, bootstrap=True)  # partly: clearly > 5x faster
    verdict = PARTIAL if verdict == NOT_REPRODUCED and five.state == "met" else verdict
    per_alpha = df[(df.kind == "time") & (df.method == "NSPCA")].groupby("alpha").seconds.mean()
    return (
        verdict,
        f"emPCA (nn) {em.mean():.3f} s, NSPCA {ns.mean():.2f} s: ratio {ns.mean() / em.mean():.1f} "
        f"(bootstrap over K: median {low.median:.1f}, central 95% {low.low:.1f}-{low.high:.1f}; inside "
        f"{30 * (1 + low.band):.1f}..{120 / (1 + low.band):.1f} decides); NSPCA per alpha: "
        + ", ".join(f"{a:g}: {v:.2f} s" for a, v in per_alpha.items()),
    )


def _check_times(df):
    parts = {
        "ratio of the means": _ratio_of_means(df),
        **{f"{m} sd / mean": _spread(df, m) for m in PUBLISHED},
    }
    _, ns = _means(df)
    pub = {m: PUBLISHED_SD[m] / PUBLISHED[m] for m in PUBLISHED}
    return _parts_outcome(
        parts,
        "One sentence of three parts, each a relative quantity (the seconds are MATLAB on a 2008 "
        "machine; another implementation, language and machine here), each decided on its bootstrap over "
        "K by call_timing at both ends of a factor-2 range (reproduced: the median inside the range and "
        "its central 95% clear of the band; too close to call if not decided either way): the ratio of "
        "the mean times within a factor 2 of 24 / 0.4 = 60 (30..120; it holds in part if emPCA (nn) is "
        "clearly > 5x faster), and each method's sd / mean of the per-cardinality times within a factor 2 "
        f"of the published one (emPCA (nn) {pub['emPCA (nn)']:.2f}, NSPCA {pub['NSPCA']:.2f}). "
        "Reproduced when every part is, partly when one fails and another holds. Times are process CPU "
        f"seconds (module docstring). Our NSPCA takes {ns.mean():.2f} s per cardinality against the "
        "published 24 s of the authors' MATLAB code, which shrinks the ratio",
    )


def _check_no_k_dependence(df):
    t = df[df.kind == "time"]
    out, states = [], []
    for method, g in t.groupby("method"):
        half = g.cardinality.max() / 2
        lo = g[g.cardinality <= half].seconds.dropna()
        hi = g[g.cardinality > half].seconds.dropna()
        boot = boot_ratio(hi, lo)
        up = call_timing(boot, 2.0, bootstrap=True)
        down = call_timing(boot, 0.5, lower_is_better=False, bootstrap=True)
        states += [up.state, down.state]
        out.append(
            f"{method}: mean time K > {half:g} / K <= {half:g} = {hi.mean() / lo.mean():.2f} (bootstrap "
            f"central 95% {up.low:.2f}-{up.high:.2f})"
        )
    verdict = (
        REPRODUCED
        if all(s == "met" for s in states)
        else (NOT_REPRODUCED if "missed" in states else TOO_CLOSE)
    )
    return Outcome(
        "; ".join(out),
        verdict,
        "no strong dependency = the ratio stays within [0.5, 2], decided on the bootstrap over K "
        f"with {up.band_text()} around each end (inside it: too close to call)",
    )


CLAIMS = [
    Claim(
        "em-iterations-below-10",
        "Sec. 3.1: on average, t < 10 EM iterations were sufficient to achieve convergence",
        "< 10",
        _check_iterations,
    ),
    Claim(
        "iterations-weak-in-D-and-K",
        "Sec. 3.1: the number of EM iterations t until convergence also depends on D and K, but our "
        "experiments suggest that dependence is weak and sub-linear (D = 361 faces, 12,582 genes)",
        "",
        _check_weak,
    ),
    Claim(
        "nn-average-times",
        "Sec. 5.2: average times for K in {1, ..., 100} were 0.4 s for emPCA (0.15 s standard deviation) "
        "and 24 s for NSPCA (14.7 s standard deviation)",
        "0.4 s (sd 0.15 s) vs 24 s (sd 14.7 s): ratio 60, sd / mean 0.38 and 0.61",
        _check_times,
        machine_dependent=True,
    ),
    Claim(
        "nn-time-no-K-dependence",
        "Sec. 5.2: running times for both methods showed no strong dependency on K",
        "",
        _check_no_k_dependence,
        machine_dependent=True,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
