"""Sigg & Buhmann (2008), Figure 2: sparse PCA, variance vs cardinality and running time vs cardinality.

Three panels, as in the paper:

* **left**, CBCL faces (2429 x 361, standardized): explained variance ``w'Cw`` of the first sparse component
  versus its cardinality ``K`` for emPCA, emPCAopt, SPCA, SPCAopt and PathSPCA ("opt": optimal weights
  recomputed on the found support, i.e. variational renormalization). Computed for every ``K = 1..361``
  (SPCA on a grid); the plot shows ``K <= 150`` as the published panel does, the claims use every ``K``.
* **middle**, Armstrong leukemia data (72 x 12582, standardized), ``K = 1..150``: emPCA, SPCA, PathSPCA and
  simple thresholding. The text says thresholding is plotted "after renormalization" and the caption of the
  time panel says the timings "include renormalization for SPCA and emPCA", so every method in this panel
  is shown renormalized (emPCA = emPCAopt, SPCA = SPCAopt; PathSPCA is optimal on its pattern by
  construction). The un-renormalized values are in the CSV (``variance_raw``).
* **right**, leukemia: seconds to produce the component of cardinality ``K`` (log scale), ``K`` up to 400,
  for emPCA, PathSPCA and SPCA.

Choices the paper leaves open (and why)
---------------------------------------
* **Preprocessing**: both data sets standardized (Sec. 5: "zero mean and unit variance"), through
  ``_common.preprocess(X, "standardize")`` (column standard deviation with ddof=1). Variances are
  ``w'Cw`` with ``C`` the sample covariance (ddof=1), i.e. the correlation matrix; its trace is ``D``.
* **emPCA**: :func:`repro.em_sparse_pca.em_sparse_pca_path` started from the first principal component
  (Sec. 3.1), tolerance ``1 - |w(t+1)'w(t)| < 1e-8`` (library default), one run per ``K`` (deterministic).
* **SPCA ridge**: ``lambda2 = 1e-6``, the default of Zou's ``elasticnet::spca`` (the paper's SPCA is "a
  re-implementation of the author's R code") and the only choice consistent with the paper's remark that
  SPCA runs an *active set* optimization (LARS-EN); the soft-thresholding limit ``ridge = inf`` (Zou et al.'s
  recommendation for p >> n) has no active set. Because the ridge changes the result a lot (leukemia,
  ``K = 150``: SPCAopt 92.5 with 1e-6, 121.5 with inf), both are computed; the plot shows the inf variant as a
  thin dotted line ("SPCAopt, ridge=inf") and the claims use 1e-6. SPCA starts from the first PC,
  ``tol = 1e-3``, at most 200 alternations (elasticnet defaults). SPCA runs on a grid of ``K`` (it costs
  O(K) LARS steps per alternation), emPCA and PathSPCA on every ``K``.
* **PathSPCA start**: the algorithm starts from the variable of largest variance, but after
  standardization every variance is 1 and that rule picks whichever column round-off favours (on leukemia
  it gives a path far below emPCA: 107.4 vs 123.1 at ``K = 150``, a gap the paper would have remarked on;
  the paper calls the middle panel "analogous results"). The main PathSPCA curve therefore starts from the
  variable with the largest absolute loading on the first principal component (the natural tie-break: the
  largest variance along the dominant direction); the literal rule (``start=None``) is computed too and drawn
  as a thin dotted line ("PathSPCA, start=argmax C_ii").
* **Timing** (right): wall-clock seconds to produce cardinality ``K`` from scratch: for emPCA the shared
  first PC (``init_time``) plus that ``K``'s EM and renormalization; for PathSPCA the set-up plus the greedy
  steps ``1..K``; for SPCA the first PC plus the alternations and renormalization. BLAS is limited to one
  thread (:func:`repro.set_blas_threads`, default 1). Seven repeats, each timing every method in turn
  (interleaved); the figure draws the median per ``K``. The absolute seconds depend on the machine; the
  claims are about the *shape*: the ratio ``time(K=400) / time(K=10)``, one per repeat, decided by
  :func:`experiments.runner.claims.call_timing` (the 95% interval of the median of the repeats must clear a
  15% band around the threshold, else the verdict is *too close to call*). These rows are marked
  machine-dependent.
* **EM iterations** (the bump at ``10 <= K <= 25``): K = 1 is excluded from every mean (one start from the
  first PC converges at once there: the largest loading is the whole answer). The claim is tested on the
  paper's start (the first PC) over the whole computed curve (leukemia ``K <= 150``, the counts of the time
  panel up to 400 reported; CBCL every ``K``). To show what the counts do rather than assert it, the note
  reports the bootstrap interval (over the ``K`` of each window) of both ratios, the range of ``K`` whose
  running median stays within 20% of the ``10..25`` mean, and the same rule on the counts from one random
  start for each of ``BUMP_SEEDS = 4`` seeds (``K = 2..40``, rows ``iter-random``; not the paper's start
  for sparse PCA, so context, not the verdict).
* **Cost** (ours): SPCA, which takes 70% of the run, is timed in the first ``SPCA_TIME_REPEATS = 2`` of
  the 7 repeats only (its verdict, SPCA / emPCA about 40x against a threshold of 1.15, needs no more);
  emPCA and PathSPCA are timed in all 7.
* ``--quick``: CBCL rows subsampled to 400, leukemia genes to the first 1500; a handful of ``K``; one
  repeat.
* **The certified optimum is not drawn**. Leukemia panel: the standardized genes all have
  variance 1, so the wide route's screening (trace, eigen-knapsack, previous ``k``'s bound plus
  ``C_ii``) removes none of the 12,582 genes past ``k = 1`` and returns only its screening bound (gaps
  8%, 12%, 16%, 18% at ``K = 2..5``, the trace bound ``K`` itself; measured 2026-11-27; status
  ``too_many_candidates``). CBCL panel
  (p = 361, signed): as in :mod:`experiments.asteris2014_fig4`, each ``K`` costs seconds to tens of
  seconds on a 2-core machine, beyond this experiment's budget for its ``K = 1..150``.

References
----------
C. D. Sigg and J. M. Buhmann. Expectation-maximization for sparse and non-negative PCA. ICML 2008.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments._sigg import (
    ALT_PATH,
    ALT_SPCA,
    boot_window_ratios,
    bump_means,
    elevated_range,
    random_start_bumps,
    random_start_iterations,
    time_panel_rows,
    variance_panel_rows,
)
from experiments.runner import _common
from experiments.runner.claims import (
    NOT_REPRODUCED,
    PARTIAL,
    REPRODUCED,
    Claim,
    Outcome,
    call_timing,
    verdict_from,
)

TITLE = "Sigg & Buhmann (2008) Fig. 2: sparse PCA variance vs cardinality (CBCL, leukemia) and running time"

SPCA_RIDGE = 1e-6
TIME_GRID = (1, 5, 10, 15, 20, 25, 30, 40, 50, 75, 100, 150, 200, 250, 300, 350, 400)
TIME_REPEATS = 7
SPCA_TIME_REPEATS = 2  # SPCA is timed in the first repeats only: 70% of the run's time with 7 (docstring)
BUMP_SEEDS = 4  # random starts per data set for the iteration counts' spread (not the paper's start)
BUMP_KMAX = 40
SPCA_GRID = (1, 2, 3, 5, 7, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150, 175,
             200, 250, 300, 361)  # fmt: skip
DATASET = {"cbcl": "CBCL faces", "leukemia": "leukemia"}
PLOT_KMAX = 150  # the published left and middle panels show K = 0..150
# (legend label, style key) of the methods per panel
LABEL_STYLE = {
    "emPCA": "emPCA",
    "emPCAopt": "emPCAopt",
    "SPCA": "SPCA",
    "SPCAopt": "SPCAopt",
    "PathSPCA": "PathSPCA",
    "Thresholding": "thresholding",
}


# --------------------------------------------------------------------------- compute
def compute(cfg: _common.Config) -> pd.DataFrame:
    from data_fetch import load_cbcl_faces, load_leukemia_armstrong

    faces = load_cbcl_faces().X
    leuk = load_leukemia_armstrong().X
    if cfg.quick:
        faces = faces[cfg.rng(0).choice(faces.shape[0], 400, replace=False)]
        leuk = leuk[:, :1500]
    Xf = _common.preprocess(faces, "standardize")
    Xl = _common.preprocess(leuk, "standardize")
    if cfg.quick:
        ks_f = ks_l = np.array([1, 5, 10, 20, 40])
        spca_f = spca_l = (5, 20)
        time_ks, repeats = (10, 40, 100), 1
    else:
        ks_f = np.arange(1, Xf.shape[1] + 1)
        ks_l = np.arange(1, 151)
        spca_f = SPCA_GRID
        spca_l = tuple(k for k in SPCA_GRID if k <= 150)
        time_ks, repeats = TIME_GRID, TIME_REPEATS
    cbcl = variance_panel_rows(Xf, "cbcl", ks_f, spca_f, True, SPCA_RIDGE)
    leukemia = variance_panel_rows(Xl, "leukemia", ks_l, spca_l, False, SPCA_RIDGE)
    leukemia += time_panel_rows(Xl, time_ks, repeats, SPCA_TIME_REPEATS, SPCA_RIDGE)
    rows = [dict(r, dataset="CBCL faces") for r in cbcl] + [dict(r, dataset="leukemia") for r in leukemia]
    seeds, kmax = (2, 12) if cfg.quick else (BUMP_SEEDS, BUMP_KMAX)
    for panel, X in (("cbcl", Xf), ("leukemia", Xl)):
        rows += random_start_iterations(X, DATASET[panel], kmax, seeds, cfg)
    df = pd.DataFrame(rows)
    df["total_variance"] = np.where(df.panel == "cbcl", Xf.shape[1], Xl.shape[1])
    return df


# --------------------------------------------------------------------------- plot
def _line(ax, g, x, y, label):
    if label in (ALT_PATH, ALT_SPCA):
        base = "PathSPCA" if label == ALT_PATH else "SPCAopt"
        st = {"color": _common.method_style(base).get("color"), "linestyle": ":", "linewidth": 0.9}
        ax.plot(g[x], g[y], label=label, **st)
        return
    st = _common.method_style(LABEL_STYLE.get(label, label))
    if len(g) > 60:  # every K: a marker every ~10 % of the curve, staggered so coinciding curves stay visible
        every = max(1, len(g) // 10)
        offset = {"emPCA": 0, "emPCAopt": every // 3, "PathSPCA": 2 * every // 3}.get(label, every // 2)
        st["markevery"] = (offset, every)
    # PathSPCA below as a wide pale band: emPCA(opt) coincides with it and runs visibly inside it
    if label == "PathSPCA":
        st.update(linewidth=4.0, alpha=0.45)
    ax.plot(g[x], g[y], label=label, zorder=1.5 if label == "PathSPCA" else 2, **st)


def plot(df: pd.DataFrame, cfg: _common.Config):
    fig, axes = plt.subplots(1, 3, figsize=(11.0, 3.3))
    order = {
        "cbcl": ["emPCA", "emPCAopt", "SPCA", "SPCAopt", "PathSPCA", ALT_SPCA, ALT_PATH],
        "leukemia": ["emPCA", "SPCA", "PathSPCA", "Thresholding", ALT_SPCA, ALT_PATH],
    }
    titles = {
        "cbcl": "CBCL faces (standardized; K <= 150 shown)",
        "leukemia": "Leukemia (standardized), renormalized",
    }
    for ax, panel in zip(axes[:2], ("cbcl", "leukemia"), strict=True):
        sub = df[df.panel == panel]
        for m in order[panel]:
            g = sub[sub.method == m].sort_values("cardinality")
            if len(g):
                _line(ax, g, "cardinality", "variance", m)
        ax.set_xlabel("Cardinality")
        ax.set_ylabel("Variance")
        ax.set_title(titles[panel])
        kmax = min(int(sub.cardinality.max()), PLOT_KMAX)
        ax.set_xlim(0, kmax)
        ax.set_ylim(0, 1.05 * sub[sub.cardinality <= kmax].variance.max())
        ax.legend(loc="upper left", fontsize=6.5)
    ax = axes[2]
    t = df[df.panel == "time"].groupby(["method", "cardinality"], as_index=False)["seconds"].median()
    for m in ("emPCA", "SPCA", "PathSPCA"):
        g = t[t.method == m].sort_values("cardinality")
        if len(g):
            ax.plot(g.cardinality, g.seconds, label=m, **_common.method_style(m))
    ax.set_yscale("log")
    ax.set_xlabel("Cardinality")
    ax.set_ylabel("CPU Time [s]")
    ax.set_title("Leukemia: time per cardinality (median)")
    ax.legend(loc="lower right")
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- claims
def _curve(df, panel, method, col="variance"):
    g = df[(df.panel == panel) & (df.method == method)]
    return g.groupby("cardinality")[col].median()


def _rel_gap(df, panel, method, ref="PathSPCA"):
    """Mean and max of (ref - method) / ref over the cardinalities both have (K >= 2: K = 1 is trivial)."""
    a, r = _curve(df, panel, method), _curve(df, panel, ref)
    common = a.index.intersection(r.index)
    common = common[common >= 2]
    gap = (r[common] - a[common]) / r[common]
    return float(gap.mean()), float(gap.max()), len(common)


def _check_renorm(method):
    def check(df):
        g_plain, _, n = _rel_gap(df, "cbcl", method)
        g_opt, gmax_opt, _ = _rel_gap(df, "cbcl", method + "opt")
        closed, gap_before = g_opt <= 0.01, g_plain >= 0.05
        extra, why = "", ""
        if method == "SPCA":
            g_inf, _, _ = _rel_gap(df, "cbcl", ALT_SPCA)
            extra = f"; with ridge=inf SPCAopt {100 * g_inf:.2f}%"
            why = (
                "; the paper does not state SPCA's ridge (the elastic-net weight of the MATLAB spca it ran), "
                "so "
                f"both readings are shown: ridge=inf (soft thresholding) leaves {100 * g_inf:.2f}%, "
                + ("also closed" if g_inf <= 0.01 else "also above 1%")
                + "; the gap left is in SPCA's supports (SPCAopt already has their optimal weights)"
            )
        verdict = (
            REPRODUCED if (closed and gap_before) else (PARTIAL if (g_opt < g_plain / 2) else NOT_REPRODUCED)
        )
        return Outcome(
            f"mean relative gap to PathSPCA over {n} K: {method} {100 * g_plain:.1f}%, {method}opt "
            f"{100 * g_opt:.2f}% (max {100 * gmax_opt:.1f}%){extra}",
            verdict,
            "closed = mean gap after renormalization <= 1%; a gap before = mean gap >= 5% (criteria fixed "
            "before the run)" + (f"; SPCA ridge {SPCA_RIDGE:g}" if method == "SPCA" else "") + why,
        )

    return check


def _check_leukemia_analogous(df):
    g_em, _gmax, n = _rel_gap(df, "leukemia", "emPCA")
    g_alt, _, _ = _rel_gap(df, "leukemia", "emPCA", ref=ALT_PATH)
    g_thr, _, _ = _rel_gap(df, "leukemia", "Thresholding", ref="emPCA")
    g_sp, _, _ = _rel_gap(df, "leukemia", "SPCA", ref="emPCA")
    ok = g_em <= 0.01 and g_thr > 0
    return Outcome(
        f"emPCA (renormalized) vs PathSPCA: mean gap {100 * g_em:.2f}% over {n} K (vs the literal start: "
        f"{100 * g_alt:.1f}%, negative = emPCA higher); thresholding below emPCA by {100 * g_thr:.1f}%; "
        f"SPCAopt "
        f"below emPCA by {100 * g_sp:.1f}%",
        verdict_from(ok, g_em <= 0.05),
        "reproduced if emPCA is within 1% of PathSPCA on average and thresholding is below emPCA "
        "(the reference role the paper gives it)",
    )


def _time_ratios(df, method, lo=10, hi=400) -> tuple[np.ndarray, int]:
    """``time(K=hi) / time(K=lo)`` for each repeat (the largest K of the grid if ``hi`` is absent)."""
    t = df[(df.panel == "time") & (df.method == method)].pivot_table(
        index="repeat", columns="cardinality", values="seconds"
    )
    hi = int(t.columns.max()) if hi not in t.columns else hi
    return (t[hi] / t[lo]).to_numpy(), hi


def _check_em_time_flat(df):
    r, hi = _time_ratios(df, "emPCA")
    call = call_timing(r, 2.0)
    rp, _ = _time_ratios(df, "PathSPCA")
    return Outcome(
        f"emPCA time(K={hi}) / time(K=10) = {call.text('.2f')}; PathSPCA: {np.median(rp):.1f}",
        call.verdict,
        "'only marginally affected' read as a ratio <= 2 over K = 10..400 (fixed before the run); median of "
        f"the repeats, decided with {call.band_text()} around 2",
    )


def _check_path_time_grows(df):
    r, hi = _time_ratios(df, "PathSPCA")
    call = call_timing(r, 10.0, lower_is_better=False)
    t = _curve(df, "time", "PathSPCA", "seconds")
    mono = float(np.mean(np.diff(t.to_numpy()) > 0))
    return Outcome(
        f"PathSPCA time(K={hi}) / time(K=10) = {call.text('.1f')}; median time increasing on "
        f"{100 * mono:.0f}% of grid steps",
        call.verdict,
        "grows with K read as a ratio >= 10 over K = 10..400 (the greedy path costs O(K) steps); median of "
        f"the repeats, decided with {call.band_text()} around 10",
    )


def _check_spca_time(df):
    t = df[df.panel == "time"].pivot_table(
        index=["repeat", "cardinality"], columns="method", values="seconds"
    )
    call = call_timing((t["SPCA"] / t["emPCA"]).to_numpy(), 1.0, lower_is_better=False)
    rs, hi = _time_ratios(df, "SPCA")
    re, _ = _time_ratios(df, "emPCA")
    k_dep = float(np.median(rs)) > 2 * float(np.median(re))
    verdict = call.verdict if (k_dep or call.verdict != REPRODUCED) else PARTIAL
    return Outcome(
        f"SPCA time / emPCA time over every (K, repeat): {call.text('.1f')}; time(K={hi}) / time(K=10): "
        f"SPCA {np.median(rs):.1f}, emPCA {np.median(re):.2f}",
        verdict,
        "qualitative reading of Fig. 2 right: SPCA slower than emPCA (time ratio > 1 with "
        f"{call.band_text()}) and "
        "more K-dependent (its K=400/K=10 ratio more than twice emPCA's; partly without it); ridge 1e-6",
    )


def _bump_outcome(df, panel, name):
    low, inside, high = bump_means(df, panel)
    t = df[(df.panel == panel) & (df.method == "emPCA")].groupby("cardinality")["n_iter"].first()
    r_low, r_high = boot_window_ratios(t)
    above_low, above_high = inside >= 1.2 * low, inside >= 1.2 * high
    k0, k1 = elevated_range(t, inside / 1.2)
    text = (
        f"mean EM iterations on {name}: {low:.1f} for 2 <= K <= 9, {inside:.1f} for 10 <= K <= 25, "
        f"{high:.1f} for K > 25 (ratios {inside / low:.2f}, bootstrap over K 5-95% "
        f"{np.percentile(r_low, 5):.2f}-{np.percentile(r_low, 95):.2f}, and {inside / high:.2f}, "
        f"{np.percentile(r_high, 5):.2f}-{np.percentile(r_high, 95):.2f}); counts within 20% of the "
        f"10..25 mean (running median of 5) for K = {k0}..{k1}"
    )
    both, one, n_seeds = random_start_bumps(df, DATASET[panel])
    if panel == "leukemia":
        tk = df[(df.panel == "time") & (df.method == "emPCA") & (df.cardinality > 150)]
        if len(tk):
            text += f"; K = 200..400 (time panel): {int(tk.n_iter.min())}-{int(tk.n_iter.max())}"
    why = (
        f"; what the counts show: above 2 <= K <= 9 {'yes' if above_low else 'no'}, above K > 25 "
        f"{'yes' if above_high else 'no'}; the raised counts span K = {k0}..{k1} against the paper's 10..25"
    )
    if n_seeds:
        why += (
            f"; from one random start instead of the first PC (not the paper's start for sparse PCA; the "
            f"spread over {n_seeds} seeds, K = 2..{int(df[df.panel == 'iter-random'].cardinality.max())}): "
            f"a bump by the same rule in {both}, above one side only in {one}"
        )
    if above_low and above_high:
        return Outcome(text, REPRODUCED, BUMP_RULE + why)
    if above_low or above_high:
        return Outcome(text, PARTIAL, BUMP_RULE + why)
    return Outcome(text, NOT_REPRODUCED, BUMP_RULE + why)


BUMP_RULE = (
    "a bump: the mean over 10 <= K <= 25 at least 20% above both the mean over 2 <= K <= 9 and the mean "
    "over K > 25 (K = 1 converges at once and is left out); partly when above one side only"
)


def _check_iter_bump(df):
    return _bump_outcome(df, "leukemia", "leukemia (K <= 150)")


def _check_iter_bump_other(df):
    return _bump_outcome(df, "cbcl", "CBCL faces (K <= 361)")


CLAIMS = [
    Claim(
        "renorm-closes-gap-empca",
        "Sec. 5.1, Fig. 2 left: variational renormalization is necessary for emPCA to close the performance "
        "gap to PathSPCA on the face image data",
        "",
        _check_renorm("emPCA"),
    ),
    Claim(
        "renorm-closes-gap-spca",
        "Sec. 5.1, Fig. 2 left: variational renormalization is necessary for SPCA to close the performance "
        "gap to PathSPCA on the face image data",
        "",
        _check_renorm("SPCA"),
    ),
    Claim(
        "leukemia-analogous",
        "Sec. 5.1, Fig. 2 middle: analogous results for the gene expression data (emPCA on par with "
        "PathSPCA), simple thresholding plotted for reference",
        "",
        _check_leukemia_analogous,
    ),
    Claim(
        "empca-time-flat",
        "Sec. 5.1, Fig. 2 right: emPCA is only marginally affected by the choice of K",
        "",
        _check_em_time_flat,
        machine_dependent=True,
    ),
    Claim(
        "pathspca-time-grows",
        "Sec. 5.1, Fig. 2 right: the PathSPCA curve is well explained by the incremental forward greedy "
        "search (time grows with K)",
        "",
        _check_path_time_grows,
        machine_dependent=True,
    ),
    Claim(
        "spca-slower",
        "Fig. 2 right: SPCA runs slower than emPCA, with a K dependence (active-set scheme)",
        "",
        _check_spca_time,
        machine_dependent=True,
    ),
    Claim(
        "iterations-bump-10-25",
        "Sec. 5.1 (Fig. 2, leukemia): emPCA shows an increased number of EM iterations for 10 <= K <= 25",
        "",
        _check_iter_bump,
    ),
    Claim(
        "iterations-bump-other-data",
        "Sec. 5.1: the increased number of EM iterations for 10 <= K <= 25 was observed on other data sets "
        "as well (here: the CBCL faces of Fig. 2 left)",
        "",
        _check_iter_bump_other,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
