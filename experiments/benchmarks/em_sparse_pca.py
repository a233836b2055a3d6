"""Benchmark of EM for sparse PCA (Sigg & Buhmann 2008): cost per iteration, cost of a whole cardinality path,
and scikit-learn's ``SparsePCA`` as the alternative a Python user would reach for.

All ratios are against references measured in the same run on the same data (CBCL faces standardized,
2429 x 361; Armstrong leukemia standardized, 72 x 12582), with BLAS limited to one thread for everything
(``threadpoolctl``; the library does the same, :func:`repro.set_blas_threads`), because on a
2-core machine busy with other processes multi-threaded BLAS timings of matrix-vector products are erratic.

Part A, per iteration (``part == "per_iteration"``): one EM iteration of
:func:`repro.em_sparse_pca.em_sparse_pca_path` (``K = 50``, a fixed random start, ``tol = 1e-300`` so it never
stops early) against the two BLAS products it cannot avoid, ``np.dot(A, w)`` and ``np.dot(A.T, y)`` on the
same C-contiguous scaled data ``A`` (:class:`repro.linalg.Covariance` ``.data``). On leukemia (``N < D``)
the library screens the iteration (see :mod:`repro.em_sparse_pca`: ``X w`` through the support, and of
``X'y`` only the entries a bound cannot rule out of the top ``K + 1``, a full product when it leaves too
many), so an iteration there can cost less than the two products; they stay the reference, as what an
unscreened iteration cannot avoid. The iteration cost is
``(t(T2) - t(T1)) / (i(T2) - i(T1))`` from the path's time and its iteration count (each the fastest of 3
runs), so set-up cancels; ``PAIRS`` = 21 interleaved pairs (in ``--quick`` too), each the reference and the
two path lengths next to each other, the order alternating. Both sides in CPU time of this process (the
goal is about work; one BLAS thread), the reference as the fastest of 3 timings of ``T2 - T1`` product
pairs. Goal: at most 1.3x, decided by :func:`experiments.runner.claims.call_paired` on the 21 per-pair
ratios (the 95% interval of their median beyond a 15% margin; docs/design.md): the row's history band (32%,
pooled with the leukemia value, whose screening changed between runs) no longer decides it. With 9
pairs the interval of a median spans ranks 2 to 8 of 9, nearly the whole sample; two
full runs of the same code read CBCL 1.00x (interval 0.92-1.02x) and 0.96x (0.93-1.11x), the second
0.02 from the 1.13x edge. 21 pairs narrow it to ranks 6 to 16 for about 5 s more.

Part B, whole path (``part == "path"``): wall time of ``em_sparse_pca_path(X, 1..Kmax, renormalize=False)``
(``Kmax`` = 361 on CBCL, 150 on leukemia; first-PC start included) divided by (total EM iterations x the two
products). Goal: at most 1.5. The same with ``renormalize=True`` (emPCAopt: one small eigenproblem per
``K``) is reported alongside, once, not part of the goal (its extra work is not EM iterations). 5 repeats,
each with the reference products timed just before the path (interleaved); both in CPU time of this process
(the goal is about work and every product runs on one thread, so CPU time is the work, and other processes
do not enter it), the reference as the fastest of 3 x 50 product pairs.

Part C, against scikit-learn (``part == "sklearn"``): ``sklearn.decomposition.SparsePCA(n_components=1)``
controls sparsity by an l1 penalty ``alpha``, so reaching a component with exactly ``K`` non-zeros needs a
search: :func:`sklearn_alpha_search` bisects ``alpha`` between 0 (dense) and the largest column norm (where
every loading is zero), starting from the ``(K+1)``-th largest magnitude of the first principal component's
scores ``|X'u_1|``, until the component has exactly ``K`` non-zeros, or a budget of fits is spent (then the
closest found is reported, with ``exact = False``). Its total time, all fits of the search included, is
compared with a cold call of :func:`repro.em_sparse_pca.em_sparse_pca` for that ``K``, and the variance
``w'Cw`` each reaches (both without renormalization), ``K`` in {10, 50, 100}. Budget per search (full run):
``SKLEARN_FITS`` fits (12 on CBCL, where every search ends within 10; 4 on leukemia, 1.5-2 s per fit),
``max_iter = SKLEARN_MAX_ITER`` per fit (its default is 1000; the fits seen here stop after 5-30
iterations), ``method="lars"`` (default), ``random_state=0``. The budget counts fits, not seconds: with a
5 s budget the fit at which a leukemia search stopped, and with it the component reported, depended on the
machine's speed (``K = 100``: nnz 1 after 3 fits in one full run, nnz 155 after 4 in the next).

On the leukemia data the number of non-zeros of SparsePCA's component is not continuous in ``alpha``: it
jumps between two local solutions (for ``K = 50``: 152 non-zeros at ``alpha = 7.36522``, 5 at ``7.36540``),
so no ``alpha`` gives ``K = 10`` or ``50`` there; the closest found is reported, and its variance ratio then
compares components of different cardinality.

Parts A and B measure the EM iteration through the data (``operator="data"``) from the paper's single start
(the principal component, ``init="pc"``), which is what their goals speak of; part D measures the defaults.

Part D, the nsprcomp table (``part == "nsprcomp"``): the 12 cells of the side-by-side table
of ``../shared/peers/compare_empca.sh`` (standardized CBCL faces and Armstrong leukemia, ``K`` in {10, 50,
100}, sparse and non-negative, first component). Like for like with nsprcomp (which always renormalizes,
5 restarts) our fit is ``EMSparsePCA(1, cardinality=K, nonneg=..., renormalize=True, random_state=0)``,
every other setting at its default (the operator chosen by shape: the ``D x D`` covariance on CBCL, formed
in float32 for the search, with the weights on the found support in float64,
the data on leukemia; the PC start, both signs when non-negative, plus random starts, 5 in all, run as one
block),
timed from the data matrix to the result; the default fit (``renormalize="refine"``) is timed next to it.
References timed in the same run, interleaved (``NSPRCOMP_REPEATS`` = 5 rounds; 2 in ``--quick``):

* ``block``: one product block through the data, ``A'(A W')`` for the 5 starts (``A`` the scaled centred
  data): ``ratio_block`` = our time in units of one such block (how many data passes the whole fit costs);
* ``plain``: a plain NumPy emPCA of the same starts (:func:`plain_empca`: sequential runs, ``np.dot`` for
  the products, ``np.partition`` for the threshold, renormalization by ``numpy.linalg.eigh`` on the support,
  or the same EM on the support when non-negative; the PC from ``numpy.linalg.eigh``): ``speedup_plain`` =
  its time / ours.

nsprcomp itself is run side by side when it is installed (R and the peers of ``../shared/peers/``, see
:mod:`experiments._peers`): one R process (:class:`experiments._peers.NsprcompSession`) holds both matrices,
and in each round one nsprcomp call (``set.seed(0); nsprcomp(X, ncomp=1, k=K, nneg=..., nrestart=5,
center=TRUE, scale.=FALSE)``, nsprcomp's defaults but ``k``/``nneg``, timed inside R after one untimed
warm-up call per cell) is made next to our fits, before or after them alternately, and its variance is
``w'Cw`` of the vector it returned (``nsprcomp_source = "live"``). Every time of part D is CPU time: the R
process's (``proc.time``, user + system, around the call) and this process's (``time.process_time``) for
our fits and the references, with one BLAS thread on both sides, so the claim is about work and other
processes do not enter the ratios (with wall time, other processes on both cores
spread single ratios over 2-4x and flipped verdicts between runs). CPU time does not shield the ratio
from what runs beside it, though: in two parallel full runs of the same code nsprcomp's CPU time per call
(CBCL K = 10 sparse) was 0.64 s and 0.23 s (12 cells: 2.8x to 1.6x more in the first), ours 13 ms in both,
depending on which experiment shared the machine (which resource the neighbour contends for was not
isolated), and the row's verdict changed. The benchmark therefore sets ``RUN_ALONE``: a parallel full run
runs it first, with nothing beside it. The recorded fallback times are wall times of an idle-machine run,
where the two clocks agree for single-threaded code. The speed claim
is decided per cell by :func:`experiments.runner.claims.call_timing` on the 5 same-run
ratios (a 15% band around 20x, which the range of the 5 ratios must clear, docs/design.md);
the verdict combines the 12 calls (all met: reproduced; any missed with any met: partly).
Without R (CI, the tests, ``--quick``) its times are the recorded ones of the last side-by-side run
(``experiments/peers_recorded/nsprcomp.csv``; ``nsprcomp_source = "recorded"``), with its recorded variance
in a full run; a ratio against a recorded time compares two runs, so the speed claim is then at most
*partly reproduced* and says so. In ``--quick`` (reduced data) only the five rows of the first
side-by-side table are run, and the nsprcomp variance is that of the EMSparsePCA of that time (the PC
start for sparse, 10 random starts for non-negative, best by EM variance, then renormalized), recomputed here
(``init="pc"``, ``n_restarts=1`` / ``init="random"``, ``n_restarts=10``), divided by that table's ratio
(``NSPRCOMP_VARIANCE_RATIO``; rounded to 3-4 digits, so variance ratios are known to about 5e-4).

Budget (ours, not the papers'): the full run took 176 s with one R process per nsprcomp call and 7 repeats
of every path; now one R session, 5 rounds per cell, and the path with renormalization (reported, not a
goal) timed once.

``--quick``: 400 faces and the first 2000 genes, ``K = 10`` only, 2 sklearn fits, 21 per-iteration pairs;
part D on the same reduced data.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from experiments.benchmarks._em_sparse_pca import nsprcomp_rows, path_rows, per_iteration_row, sklearn_rows
from experiments.runner import _common
from experiments.runner.claims import (
    NOT_REPRODUCED,
    PARTIAL,
    REPRODUCED,
    TOO_CLOSE,
    Claim,
    Outcome,
    call_paired,
    call_timing,
)

RUN_ALONE = True  # peer and ours in CPU time, unequally slowed by a neighbour (docstring)
TITLE = "Benchmark: emPCA cost per iteration and per path vs BLAS products; vs scikit-learn SparsePCA"

GOAL_ITER = 1.3
GOAL_PATH = 1.5
PATH_REPEATS = 5  # interleaved repeats of the path without renormalization (reference timed in each)
PAIRS = 21  # interleaved pairs of the per-iteration part (docstring; in --quick too: cheap at its sizes)
SKLEARN_KS = (10, 50, 100)
SKLEARN_FITS = {"CBCL faces": 12, "leukemia": 4}  # fits per alpha search, by data set (docstring)

NSPRCOMP_GOAL = 20.0
NSPRCOMP_REPEATS = 5


def compute(cfg: _common.Config) -> pd.DataFrame:
    from data_fetch import load_cbcl_faces, load_leukemia_armstrong

    faces = load_cbcl_faces().X
    leuk = load_leukemia_armstrong().X
    if cfg.quick:
        faces = faces[cfg.rng(0).choice(faces.shape[0], 400, replace=False)]
        leuk = leuk[:, :2000]
    data = {
        "CBCL faces": (_common.preprocess(faces, "standardize"), 361),
        "leukemia": (_common.preprocess(leuk, "standardize"), 150),
    }
    rows = []
    with threadpool_limits(1, user_api="blas"):
        for i, (name, (X, kmax)) in enumerate(data.items()):
            rows.append(per_iteration_row(name, X, PAIRS, cfg.rng(1, i)))
            rows += path_rows(name, X, 40 if cfg.quick else kmax, 1 if cfg.quick else PATH_REPEATS)
        for name, (X, _) in data.items():
            rows += sklearn_rows(
                name,
                X,
                (10,) if cfg.quick else SKLEARN_KS,
                2 if cfg.quick else SKLEARN_FITS[name],
                1 if cfg.quick else 3,
            )
        rows += nsprcomp_rows(data, 2 if cfg.quick else NSPRCOMP_REPEATS, cfg.quick)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- plot
def plot(df: pd.DataFrame, cfg: _common.Config):
    fig, (ax1, ax2, ax3, ax4) = plt.subplots(1, 4, figsize=(14.5, 3.4))
    _plot_cost(ax1, df)
    _plot_sklearn(ax2, df, "ratio", "time sklearn search / emPCA")
    _plot_sklearn(ax3, df, "variance_ratio", "variance sklearn / emPCA")
    _plot_nsprcomp(ax4, df)
    fig.tight_layout()
    return fig


def _plot_cost(ax1, df):
    """Parts A and B: an iteration and a whole path in units of the two BLAS products."""
    a = df[df.part.isin(["per_iteration", "path"])].reset_index(drop=True)
    labels = [f"{r.dataset}\n{r.method.replace('emPCA ', '')}" for r in a.itertuples()]
    ax1.barh(
        range(len(a)), a.ratio, color=["tab:blue" if p == "per_iteration" else "tab:cyan" for p in a.part]
    )
    ax1.set_yticks(range(len(a)), labels, fontsize=6)
    ax1.axvline(GOAL_ITER, color="black", ls="--", lw=0.8, label=f"goal {GOAL_ITER} (iteration)")
    ax1.axvline(GOAL_PATH, color="gray", ls=":", lw=0.8, label=f"goal {GOAL_PATH} (path)")
    ax1.set_xlabel("time / two BLAS products per iteration")
    ax1.legend(fontsize=6.5, loc="lower right")


def _plot_sklearn(ax, df, column, ylabel):
    """Part C: scikit-learn's search against emPCA per K, in time (log scale) or in variance."""
    for name, g in df[df.part == "sklearn"].groupby("dataset"):
        ax.plot(g.cardinality, g[column], marker="o", label=name)
        for r in g.itertuples():
            if not r.exact:
                ax.annotate(f"nnz {int(r.nnz)}", (r.cardinality, getattr(r, column)), fontsize=6)
    if column == "ratio":
        ax.set_yscale("log")
    else:
        ax.axhline(1.0, color="black", ls="--", lw=0.8)
    ax.set_xlabel("Cardinality K")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)


def _plot_nsprcomp(ax4, df):
    """Part D: the default fit's speed-up over nsprcomp and over the plain NumPy emPCA, per cell."""
    d = df[df.part == "nsprcomp"]
    if len(d):
        g = d.groupby(["dataset", "cardinality", "nonneg"], sort=False).median(numeric_only=True)
        g = g.reset_index()
        y = np.arange(len(g))
        names = [_row_name((r.dataset, r.cardinality, r.nonneg)) for r in g.itertuples()]
        src = _nsprcomp_source(df)
        ax4.barh(y - 0.2, g.speedup_nsprcomp, height=0.4, color="tab:green", label=f"vs nsprcomp ({src})")
        ax4.barh(y + 0.2, g.speedup_plain, height=0.4, color="tab:gray", label="vs plain NumPy (same run)")
        for yi, v in zip(y, g.variance_vs_nsprcomp, strict=True):
            ax4.annotate(f"var {v:.3f}", (0.02, yi + 0.32), xycoords=("axes fraction", "data"), fontsize=6)
        ax4.axvline(NSPRCOMP_GOAL, color="black", ls="--", lw=0.8, label=f"goal {NSPRCOMP_GOAL:.0f}x")
        ax4.set_yticks(y, names, fontsize=7)
        ax4.set_xscale("log")
        ticks = [0.5, 1, 2, 5, 10, 20, 50, 100]
        ax4.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax4.xaxis.set_minor_formatter(plt.NullFormatter())
        ax4.set_xlim(0.5, 200)
        ax4.set_ylim(-0.6, len(g) + 0.9)
        ax4.set_xlabel("speed-up of the default fit")
        ax4.legend(fontsize=6, loc="upper right", ncol=1)


# --------------------------------------------------------------------------- claims
def _samples(row) -> list[float]:
    return [float(v) for v in str(row.samples).split(";") if v]


def _combine(calls: dict) -> str:
    """One verdict from per-row timing calls: all met, all missed, any too close, else partly."""
    states = {c.state for c in calls.values()}
    if states == {"met"}:
        return REPRODUCED
    if states == {"missed"}:
        return NOT_REPRODUCED
    if "too close" in states and "missed" not in states:
        return TOO_CLOSE
    return PARTIAL


def _check_iter(df):
    g = df[df.part == "per_iteration"].set_index("dataset")
    calls = {d: call_paired(_samples(r), GOAL_ITER) for d, r in g.iterrows()}
    return Outcome(
        ", ".join(f"{d}: {c.text('.2f', 'x')}" for d, c in calls.items()),
        _combine(calls),
        "project goal: one emPCA iteration through the data <= 1.3 x the two BLAS products "
        f"(single-threaded, process CPU time), decided with {next(iter(calls.values())).band_text()} "
        "(each pair: the products and the two path lengths next to each other, in alternating order)",
    )


def _check_path(df):
    g = df[(df.part == "path") & (~df.renormalize.astype(bool))].set_index("dataset")
    r = df[(df.part == "path") & (df.renormalize.astype(bool))].set_index("dataset")
    calls = {d: call_timing(_samples(row), GOAL_PATH) for d, row in g.iterrows()}
    txt = ", ".join(f"{d}: {c.text('.2f')} ({int(g.n_iter_total[d])} iterations)" for d, c in calls.items())
    txt += "; with renormalization: " + ", ".join(f"{d}: {v:.2f}" for d, v in r.ratio.items())
    return Outcome(
        txt,
        _combine(calls),
        "project goal: the whole path (PC start, through the data) <= 1.5 x total iterations x two products; "
        "renormalization (emPCAopt) reported alongside, not part of the goal",
    )


def _check_sklearn(df):
    s = df[df.part == "sklearn"]
    parts = [
        f"{r.dataset} K={int(r.cardinality)}: sklearn {r.ratio:.0f}x the time, {r.variance_ratio:.3f}x the "
        "variance of emPCA"
        + ("" if r.exact else f" (closest reached: nnz {int(r.nnz)} in {int(r.n_fits)} fits)")
        for r in s.itertuples()
    ]
    ex = s[s.exact.astype(bool)]
    ok = len(ex) == len(s) and bool((s.ratio > 1).all()) and bool((s.variance_ratio <= 1.001).all())
    partial = bool((s.ratio > 1).all())
    return Outcome(
        "; ".join(parts),
        REPRODUCED if ok else (PARTIAL if partial else NOT_REPRODUCED),
        "project comparison: emPCA faster to exactly K non-zeros and at least the variance of "
        "SparsePCA; not reproduced fully where the alpha search did not reach exactly K in its budget",
    )


def _nsprcomp_rows(df):
    d = df[df.part == "nsprcomp"]
    return {k: g for k, g in d.groupby(["dataset", "cardinality", "nonneg"], sort=False)}


def _row_name(key):
    name, K, nonneg = key
    return f"{name.split()[0]} {int(K)} {'nn' if bool(nonneg) else 'sparse'}"


def _nsprcomp_source(df) -> str:
    d = df[df.part == "nsprcomp"]
    src = set(d.nsprcomp_source) if "nsprcomp_source" in d else {"published"}
    return "live" if src == {"live"} else ("recorded" if "recorded" in src else "published")


def _check_nsprcomp_variance(df):
    rows = _nsprcomp_rows(df)
    ratios = {k: float(g.default_variance_vs_nsprcomp.median()) for k, g in rows.items()}
    like = {k: float(g.variance_vs_nsprcomp.median()) for k, g in rows.items()}
    ok = all(v >= 1 - 5e-4 for v in ratios.values())
    src = _nsprcomp_source(df)
    how = {
        "live": "nsprcomp run side by side in this run: w'Cw of the vector it returned",
        "recorded": "nsprcomp's recorded variance (experiments/peers_recorded/nsprcomp.csv, last "
        "side-by-side run; R not installed here), or on --quick's reduced data the issue's ratio to the "
        "EMSparsePCA of the time, recomputed here",
        "published": "the issue's ratio to the EMSparsePCA of the time, recomputed here",
    }[src]
    n_like = sum(v >= 1 - 5e-4 for v in like.values())
    return Outcome(
        ", ".join(f"{_row_name(k)}: {v:.4f}" for k, v in ratios.items())
        + f"; like for like (renormalize=True): {n_like}/{len(like)} cells >= 1 within 5e-4 ("
        + ", ".join(f"{_row_name(k)}: {v:.4f}" for k, v in like.items() if v < 1 - 5e-4)
        + ")",
        REPRODUCED if ok else (PARTIAL if any(v >= 1 - 5e-4 for v in ratios.values()) else NOT_REPRODUCED),
        f"variance of the default fit (renormalize='refine') / nsprcomp's at its defaults (5 restarts) "
        f"({how}); >= 1 within 5e-4 in every cell; the like-for-like fit (renormalize=True) reported "
        "alongside",
    )


def _check_nsprcomp_speed(df):
    rows = _nsprcomp_rows(df)
    calls = {
        k: call_timing(g.speedup_nsprcomp, NSPRCOMP_GOAL, lower_is_better=False) for k, g in rows.items()
    }
    same_run = "; ".join(
        f"{_row_name(k)}: {g.seconds.median() * 1e3:.0f} ms = {g.ratio_block.median():.0f} product blocks, "
        f"{g.speedup_plain.median():.2f}x plain NumPy, at defaults {g.speedup_nsprcomp_default.median():.1f}x"
        for k, g in rows.items()
    )
    verdict = _combine(calls)
    if _nsprcomp_source(df) == "live":
        how = (
            "nsprcomp run side by side, interleaved with the default fit in this run; CPU time on both "
            "sides (R proc.time, Python process_time; one BLAS thread each)"
        )
    else:
        how = (
            "nsprcomp NOT run in this run (R or the peers not installed, or --quick): its RECORDED "
            "seconds of the last side-by-side run (experiments/peers_recorded/nsprcomp.csv) against this "
            "run's fits, so the ratio compares two runs and the verdict is at most partly reproduced"
        )
        verdict = PARTIAL if verdict == REPRODUCED else verdict
    return Outcome(
        ", ".join(f"{_row_name(k)}: {c.text('.1f', 'x')}" for k, c in calls.items()),
        verdict,
        f"speed-up of EMSparsePCA(renormalize=True) over nsprcomp (5 restarts), like for like, per cell, "
        f"median of {NSPRCOMP_REPEATS} interleaved rounds ({how}); goal >= 20x in every cell, each decided "
        f"with {next(iter(calls.values())).band_text()}. "
        f"Same-run ratios (and the default fit's speed-up): {same_run}",
    )


def _check_vs_plain(df):
    rows = _nsprcomp_rows(df)
    calls = {k: call_timing(g.speedup_plain, 1.0, lower_is_better=False) for k, g in rows.items()}
    return Outcome(
        ", ".join(f"{_row_name(k)}: {c.text('.2f', 'x')}" for k, c in calls.items()),
        _combine(calls),
        "speed-up of the default fit over a plain NumPy emPCA of the same starts, timed interleaved in the "
        "same run; the gains: the D x D covariance on CBCL (D^2 instead of 2ND per iteration, then D K once "
        "the iterate is K-sparse) and, on leukemia (72 x 12582), screened iterations (X w through the "
        "K-sparse support, X'y only where a bound cannot rule a feature out of the top K+1; a full product "
        "in 1 iteration in 5 to 10) and the non-negative renormalization on the support's own N x K columns",
    )


GOALS = [
    Claim(
        "iteration-cost",
        "Project goal (DESIGN.md): one emPCA iteration costs at most 1.3x the two BLAS "
        "products X w and X'y (Sigg & Buhmann: O(D) work besides them)",
        "<= 1.3x",
        _check_iter,
        machine_dependent=True,
    ),
    Claim(
        "path-cost",
        "Project goal: a whole cardinality path costs at most 1.5x (total EM iterations x two BLAS products)",
        "<= 1.5",
        _check_path,
        machine_dependent=True,
    ),
    Claim(
        "vs-sklearn",
        "Project comparison: emPCA reaches a component with exactly K non-zeros faster than "
        "scikit-learn's SparsePCA with an alpha search, with at least its variance",
        "",
        _check_sklearn,
        machine_dependent=True,
    ),
    Claim(
        "nsprcomp-variance",
        "Project goal: the default EMSparsePCA (first component) reaches at least the variance of "
        "nsprcomp at its defaults in each of the 12 cells (CBCL faces and leukemia, K = 10 / 50 / 100, "
        "sparse and non-negative)",
        ">= 1",
        _check_nsprcomp_variance,
    ),
    Claim(
        "nsprcomp-speed",
        "Project goal: like for like (renormalize=True, nsprcomp's 5 restarts), each of the 12 "
        "cells at least 20x faster than nsprcomp",
        ">= 20x",
        _check_nsprcomp_speed,
        machine_dependent=True,
    ),
    Claim(
        "vs-plain-numpy",
        "Project goal: the default fit (operator by shape, restarts as one block) is faster than a plain "
        "NumPy emPCA of the same starts",
        "> 1x",
        _check_vs_plain,
        machine_dependent=True,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
