"""Roweis (1997): the claims of the paper that no figure shows, each measured.

Parts (the ``part`` column of the CSV):

``iterations``
    Abstract: the EM algorithms "correctly and efficiently find the leading eigenvectors of the covariance
    of datasets in a few iterations using up to hundreds of thousands of datapoints in thousands of
    dimensions". EM (Roweis' iteration: ``n_oversamples=0``) from a random start, on the CBCL faces
    (2429 x 361, pixels / 255), MNIST train (60000 x 784, pixels / 255) and synthetic Gaussian data with a
    decaying spectrum ``lambda_j = j^-1`` (n x p = 20000 x 1000 and 200000 x 1000, axis-aligned: EM from an
    isotropic random start is rotation-equivariant, so a rotation would change nothing but the cost). For
    k = 1 and k = 10, the iterations until the sine of the largest principal angle to the exact subspace
    (``eigh`` of the sample covariance) is at most ``sin(acos 0.999) = 0.0447``, the paper's own criterion
    of Fig. 2 (``|<guess, eigenvector>| >= 0.999``) extended to k columns. **"A few" is read as at most 20**
    (the number of iterations the paper itself ran in Fig. 2). The 2^17 x 2^12 case is measured by
    ``bench_em_scale``, not here.
``storage``
    Sec. 3: "the algorithm can be performed online using only a single datapoint at a time and so its
    storage requirements are only O(kp) + O(k^2)". Peak memory allocated (``tracemalloc``; NumPy reports
    its buffers to it) during :meth:`repro.em_pca.EMPCA.fit_blocks` over a generator that makes row blocks
    of 100 points on the fly, as n (5000-80000), p (250-2000) and k (1-50) vary; 2 EM iterations
    (memory does not depend on the number of iterations). The blocks themselves (100 x p) are part of
    the peak: they are the "datapoint at a time" buffer, O(p) per point.
``global``
    Sec. 3.1: "the only stable local extremum is the global maximum at which the true principal subspace is
    found; so it converges to the correct result", for k > 1. n = 500, p = 50, k = 3 and 5, three spectra
    (spiked: 10, 8, 6, 5, 4 over unit noise; power law ``j^-1``; uniform (0, 1) as footnote 5), 40 random
    starts each (10 in ``--quick``) plus 5 starts near a saddle (the span of eigenvectors k+1..2k plus 1e-6
    times a random matrix: a start with almost nothing of the principal subspace). ``tol=1e-10``, at
    most 20000 iterations; success = sine to the exact subspace <= 1e-6.
``power``
    Sec. 5: "the EM algorithm is exactly equivalent to performing power iterations for finding C".
    EM's iterates ``C_t`` (k = 1 and k = 3) against orthogonal
    iteration ``Q_t = qr(S Q_{t-1})`` on the sample covariance S from the same start: the sine between
    ``span C_t`` and ``span Q_t`` for t = 0..30 (n = 400, p = 60, eigenvalues uniform (0, 1) as in footnote 5,
    so that the iterates are still far from converged), and, so that the comparison means something, the
    sine of
    the iterate to the exact subspace (far from 0 before convergence).
``sanger``
    Sec. 5: Sanger's and Oja's rules "reduce but do not minimize the cost and so they typically need more
    iterations and require a learning rate parameter to be set by hand". Sanger's generalized Hebbian
    algorithm (GHA; Oja's rule is its k = 1 case; :func:`experiments._roweis.gha_pass`), one update per point:
    ``W += eta (z y' - tril(z z') W)``, ``z = W y``, points in a fixed random order per pass. Passes over
    the data until the sine to the exact subspace is <= 0.0447 (at most 60 passes), for a grid of
    learning rates ``eta = c / lambda_1``, c in {0.0003, 0.001, 0.003, 0.01} (larger rates stall above
    the target: a constant rate leaves a noise floor proportional to it); GHA is credited with its best
    rate. EM: iterations (one pass each) to the same accuracy. n = 1000, p = 30, k = 1 and 3, spectra
    spiked and power law, 3 seeds (1 in ``--quick``).
``ratio``
    Sec. 3.1: "the ratios of the first k eigenvalues seem to be the critical parameters controlling the
    number of iterations", tested for k = 3 on 60 random spectra (footnote 5: uniform (0, 1), p = 40,
    n = 400): Spearman correlation of the iterations to sine <= 0.0447 with ``1/log(lambda_k/lambda_k+1)``
    (the rate of subspace iteration) and, for comparison, with ``1/log(lambda_1/lambda_2)``.
``spca_cost``
    Sec. 4 and footnote 6: learning for SPCA "enjoys a complexity limited by O(knp) and not worse". Time per
    iteration of :func:`repro.em_pca.sensible_pca` as ``(t(12 iterations) - t(2 iterations)) / 10`` (set-up
    cancels), in CPU seconds of the process (the claim is about work: under load from other processes the wall
    time of an iteration was up to 27x its CPU time), one BLAS thread, for n in {2000, 8000, 32000} (p = 200,
    k = 5), p in {100, 200, 400, 800} (n = 8000, k = 5) and k in {2, 4, 8, 16} (n = 8000, p = 400); 5
    interleaved repeats (3 in ``--quick``; 7 before the CPU clock, which needs fewer). **The verdict rests on
    counted operations** (column ``counted_flops_per_iter``): the flops of every pass ``sensible_pca`` made
    over the data, at the shapes of the calls (:mod:`experiments._opcount`), per iteration as ``(count(12) -
    count(2)) / 10`` in an untimed run per configuration. The sentence is about operations (the paper's
    measure of cost was MATLAB's ``flops``), and the time slopes moved with the machine (p slope 1.31 and 1.20
    in two full runs, band edge 1.30). The log-log slopes of the counts against n, p and k are each called
    against 1.5, midway to the O(np^2) (or O(n^2 p), O(k^2)) alternative, with the ledger's +/- 15 % band, and
    must exceed 0.5; the time slopes (bootstrap of the per-size medians) are reported beside. **Not run
    alone** (``RUN_ALONE = False``): no verdict here rests on a time (the ledger has no timing row of this
    experiment), and counted operations do not move with a neighbour; the time slopes reported beside them do
    (whether the data still fit in the shared L3 cache depends on what runs on the other core: n slope 1.29
    and 1.18 in two full runs of the same code).

``--quick`` shrinks every part (synthetic data only, small sizes) to run in seconds.
"""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import scipy.stats

from experiments._roweis import (
    boot_slopes,
    global_rows,
    iteration_rows,
    power_rows,
    ratio_rows,
    sanger_rows,
    slope_text,
    spca_rows,
    storage_rows,
)
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

RUN_ALONE = False  # verdicts on counted operations: a neighbour moves only the reported times (docstring)
TITLE = "Roweis (1997): claims without a figure (iterations at scale, storage, global convergence, power "
TITLE += "iteration, Sanger's rule, SPCA cost)"

FEW = 20


def compute(cfg: _common.Config) -> pd.DataFrame:
    """Every part's rows (:mod:`experiments._roweis` measures them; the protocol is above)."""
    parts = (power_rows, global_rows, ratio_rows, sanger_rows, storage_rows, spca_rows, iteration_rows)
    return pd.DataFrame([row for part in parts for row in part(cfg)])


# --------------------------------------------------------------------------- plot
def plot(df: pd.DataFrame, cfg: _common.Config):
    fig, axes = plt.subplots(2, 3, figsize=(12.0, 7.0))
    _plot_iterations(axes[0, 0], df)
    _plot_storage(axes[0, 1], df)
    _plot_power(axes[0, 2], df)
    _plot_sanger(axes[1, 0], df)
    _plot_ratio(axes[1, 1], df)
    _plot_spca_cost(axes[1, 2], df)
    fig.tight_layout()
    return fig


def _plot_iterations(ax, df: pd.DataFrame) -> None:
    """Iterations to sin <= 0.0447 on the large data sets, k = 1 and 10."""
    d = df[df.part == "iterations"]
    for j, k in enumerate((1, 10)):
        g = d[d.k == k].groupby("dataset", sort=False).iterations
        x = np.arange(g.ngroups) + (j - 0.5) * 0.35
        ax.bar(x, g.median(), width=0.35, label=f"k = {k}")
        labels = ["\n".join(textwrap.wrap(s.replace(" x ", "x"), 12)) for s in g.median().index]
        ax.set_xticks(np.arange(g.ngroups), labels, fontsize=6)
    ax.axhline(FEW, color="black", linestyle="--", linewidth=0.9, label=f"'a few' = {FEW}")
    ax.set_yscale("log")
    ax.set_ylabel("EM iterations to sin <= 0.0447")
    ax.set_title("Iterations on large data")
    ax.legend(fontsize=7)


def _plot_storage(ax, df: pd.DataFrame) -> None:
    """Peak traced memory of fit_blocks against n, p and k."""
    st = df[df.part == "storage"]
    for vary, col, m in (("n", "n", "o"), ("p", "p", "s"), ("k", "k", "^")):
        s = st[st.vary == vary].sort_values(col)
        ax.loglog(s[col], s.peak_bytes / 2**20, marker=m, label=f"vary {vary}")
    ax.set_xlabel("n, p or k")
    ax.set_ylabel("peak traced memory (MiB)")
    ax.set_title("fit_blocks storage (100-row blocks)")
    ax.legend(fontsize=7)


def _plot_power(ax, df: pd.DataFrame) -> None:
    """EM's iterates against orthogonal iteration on S, and against the exact subspace."""
    pw = df[df.part == "power"]
    for k in sorted(pw.k.unique()):
        s = pw[pw.k == k].sort_values("iteration")
        ax.semilogy(
            s.iteration, np.maximum(s.sin_em_power, 1e-17), "-o", markersize=3, label=f"EM vs power, k={k:g}"
        )
        ax.semilogy(s.iteration, s.sin_em_exact, ":", label=f"EM vs exact, k={k:g}")
    ax.set_xlabel("iteration")
    ax.set_ylabel("sin of largest principal angle")
    ax.set_title("EM = orthogonal iteration on S")
    ax.legend(fontsize=7)


def _plot_sanger(ax, df: pd.DataFrame) -> None:
    """Sanger's rule (best rate) against EM at equal accuracy."""
    sg = df[df.part == "sanger"]
    best = sg[sg.method == "GHA"].groupby(["spectrum", "k", "seed"]).passes.min()
    em = sg[sg.method == "EM"].set_index(["spectrum", "k", "seed"]).passes
    ax.scatter(em.loc[best.index], best, s=14)
    lim = max(best.max(), em.max()) * 1.2
    ax.plot([0.8, lim], [0.8, lim], "k--", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("EM iterations (passes)")
    ax.set_ylabel("GHA passes, best learning rate")
    ax.set_title("Sanger's rule vs EM, equal accuracy")


def _plot_ratio(ax, df: pd.DataFrame) -> None:
    """Iterations (k = 3) against the two eigenvalue ratios."""
    ra = df[df.part == "ratio"]
    ax.loglog(1.0 / np.log(ra.ratio_k), ra.iterations, ".", label="1/log(l_k/l_k+1)")
    ax.loglog(1.0 / np.log(ra.ratio_1), ra.iterations, "x", alpha=0.5, label="1/log(l_1/l_2)")
    ax.set_xlabel("1 / log(eigenvalue ratio)")
    ax.set_ylabel("iterations (k = 3)")
    ax.set_title("Eigenvalue ratios control the iterations")
    ax.legend(fontsize=7)


def _plot_spca_cost(ax, df: pd.DataFrame) -> None:
    """SPCA time per iteration against n, p and k, relative to the smallest."""
    sc = df[df.part == "spca_cost"]
    for vary, m in (("n", "o"), ("p", "s"), ("k", "^")):
        s = sc[sc.vary == vary].groupby(vary).seconds_per_iter.median()
        x = s.index.to_numpy(float)
        ax.loglog(x / x[0], s / s.iloc[0], marker=m, label=f"vary {vary}")
    x = np.array([1.0, 16.0])
    ax.loglog(x, x, "k--", linewidth=0.8, label="linear")
    ax.set_xlabel("size relative to the smallest")
    ax.set_ylabel("SPCA time per iteration (relative)")
    ax.set_title("SPCA cost O(knp)")
    ax.legend(fontsize=7)


# --------------------------------------------------------------------------- claims
def _check_few(df: pd.DataFrame) -> Outcome:
    d = df[df.part == "iterations"]
    worst = d.groupby(["dataset", "k"]).iterations.max()
    by_k = {k: d[d.k == k] for k in (1, 10)}
    few = {k: bool(((g.iterations <= FEW) & g.reached).all()) for k, g in by_k.items()}
    largest = d[d.n * d.p == (d.n * d.p).max()]
    parts = "; ".join(f"{ds.split(' (')[0]}, k = {k}: {int(v)}" for (ds, k), v in worst.items())
    verdict = REPRODUCED if all(few.values()) else (PARTIAL if any(few.values()) else NOT_REPRODUCED)
    return Outcome(
        f"iterations to sin <= 0.0447 (worst start): {parts}",
        verdict,
        f"'A few' read as <= {FEW} (the paper's Fig. 2 ran 20). "
        + ("Every run met it. " if all(few.values()) else f"Met for k = 1: {few[1]}; for k = 10: {few[10]}. ")
        + "Roweis' plain iteration converges at rate lambda_k+1/lambda_k, so the count is set by the gap at "
        "k "
        f"(largest data set {largest.n.iloc[0]} x {largest.p.iloc[0]}: lambda_k+1/lambda_k "
        + ", ".join(f"{r:.3f} (k = {k})" for k, r in largest.groupby("k").gap_ratio.first().items())
        + "), not by n or p; real image spectra decay slowly past k = 10.",
    )


def _check_storage(df: pd.DataFrame) -> Outcome:
    st = df[df.part == "storage"]
    by_n = st[st.vary == "n"].sort_values("n")
    by_p = st[st.vary == "p"].sort_values("p")
    by_k = st[st.vary == "k"].sort_values("k")
    n_ratio = by_n.peak_bytes.max() / by_n.peak_bytes.min()
    p_slope = float(np.polyfit(np.log(by_p.p), np.log(by_p.peak_bytes), 1)[0])
    p0 = by_k.p.iloc[0]
    # extra words per unit of k p when k grows (O(kp)): should be a small constant, not growing with k
    per_kp = np.diff(by_k.peak_bytes.to_numpy(float)) / 8.0 / (np.diff(by_k.k.to_numpy(float)) * p0)
    data_share = float((by_n.peak_bytes / by_n.data_bytes).min())
    ok_n = n_ratio <= 1.1
    ok_p = 0.85 <= p_slope <= 1.15
    ok_k = bool(per_kp.max() <= 10.0 and per_kp.max() <= 2.0 * max(per_kp.min(), 1e-12))
    ok = ok_n and ok_p and ok_k
    return Outcome(
        f"peak memory max/min over n = {int(by_n.n.min())}-{int(by_n.n.max())}: {n_ratio:.3f} (smallest "
        "share of the "
        f"data's size {data_share:.2%}); log-log slope vs p {p_slope:.2f}; growth with k "
        f"{per_kp.min():.1f}-{per_kp.max():.1f} words per k p",
        REPRODUCED if ok else (PARTIAL if ok_n else NOT_REPRODUCED),
        "tracemalloc peak of EMPCA.fit_blocks over generated 100-row blocks (the block buffer counts). "
        "Reproduced needs: constant in n (max/min <= 1.1), linear in p (slope 0.85-1.15) and a bounded, "
        "steady number of words per k p (<= 10, within a factor 2 across k). "
        f"Constant in n: {ok_n}; linear in p: {ok_p}; O(kp) in k: {ok_k}.",
    )


def _check_global(df: pd.DataFrame) -> Outcome:
    g = df[df.part == "global"]
    good = (g.sin_to_exact <= 1e-6) & g.reached
    saddle = g[g.start == "near saddle"]
    ks = ", ".join(str(int(k)) for k in sorted(g.k.unique()))
    return Outcome(
        f"{int(good.sum())} of {len(g)} runs reach the exact subspace (sin <= 1e-6; worst "
        f"{g.sin_to_exact.max():.1e}) over {g.spectrum.nunique()} spectra, k = {ks}; near-saddle starts: "
        f"{int(((saddle.sin_to_exact <= 1e-6) & saddle.reached).sum())} of {len(saddle)}, up to "
        f"{int(saddle.iterations.max())} iterations",
        REPRODUCED if bool(good.all()) else (PARTIAL if good.mean() >= 0.9 else NOT_REPRODUCED),
        "Random starts and starts in the span of eigenvectors k+1..2k plus 1e-6 noise: a start with almost "
        "nothing of the principal subspace must leave the saddle. Slowest spectrum gap lambda_k+1/lambda_k "
        f"{g.gap_ratio.max():.3f}.",
    )


def _check_power(df: pd.DataFrame) -> Outcome:
    pw = df[df.part == "power"]
    worst = pw.sin_em_power.max()
    moving = (pw.sin_em_exact > 1e-3).mean()
    ok = worst <= 1e-8
    return Outcome(
        f"sin between span C_t (EM) and span Q_t (orthogonal iteration on S): max {worst:.1e} over t = 0-"
        f"{int(pw.iteration.max())}, k = 1 and 3; {moving:.0%} of the iterates compared are more than 1e-3 "
        f"from the exact subspace (closest {pw.sin_em_exact.min():.1e})",
        REPRODUCED if ok else (PARTIAL if worst <= 1e-4 else NOT_REPRODUCED),
        "Same start; EM never forms S, orthogonal iteration does. Threshold 1e-8 (round-off accumulated over "
        "30 iterations). The iterates compared are mostly far from converged (slowly separating footnote-5 "
        "eigenvalues), so the agreement is of the whole trajectory, not of the common limit.",
    )


def _check_sanger(df: pd.DataFrame) -> Outcome:
    """Two parts: more iterations (passes over the data) than EM at equal accuracy, and a learning rate that
    must be set by hand (the outcome depends on it: some rate of the grid fails where another succeeds)."""
    sg = df[df.part == "sanger"]
    key = ["spectrum", "k", "seed"]
    gha = sg[sg.method == "GHA"]
    best = gha.groupby(key).passes.min()
    em = sg[sg.method == "EM"].set_index(key).passes.loc[best.index]
    more = (best > em).mean()
    reach = gha.groupby("eta").reached.mean()
    more_ok = more >= 0.8
    rate_ok = bool(reach.max() >= 0.9 and reach.min() < 0.5)
    verdict = REPRODUCED if more_ok and rate_ok else (PARTIAL if more_ok or rate_ok else NOT_REPRODUCED)
    return Outcome(
        f"GHA at its best learning rate needs more passes than EM iterations in {more:.0%} of {len(best)} "
        f"cases (median {best.median():.0f} passes vs {em.median():.0f}); share of runs reaching sin <= "
        "0.0447 in 60 passes by learning rate: " + ", ".join(f"{c:g}/l1 {v:.0%}" for c, v in reach.items()),
        verdict,
        "Two parts. (1) More iterations, read as passes over the data (an EM iteration and a GHA pass each "
        "read the data once), GHA credited with the best of the hand-set rates: needs GHA slower in >= 80 % "
        f"of cases; {'met' if more_ok else 'not met'}. (2) A learning rate to set by hand: some rate of the "
        f"grid reaches the target in >= 90 % of runs and another in < 50 %; "
        f"{'met' if rate_ok else 'not met'}. "
        "Counted per update (one point), GHA's iterations are n times its passes and always far more.",
    )


def _check_ratio(df: pd.DataFrame) -> Outcome:
    r = df[df.part == "ratio"]
    rho_k = scipy.stats.spearmanr(1.0 / np.log(r.ratio_k), r.iterations)[0]
    rho_1 = scipy.stats.spearmanr(1.0 / np.log(r.ratio_1), r.iterations)[0]
    ok = rho_k >= 0.5 and rho_k > rho_1
    return Outcome(
        f"k = 3, {len(r)} random spectra: Spearman rho(iterations, 1/log(l_3/l_4)) = {rho_k:.2f}; with "
        f"1/log(l_1/l_2): {rho_1:.2f}",
        REPRODUCED if ok else (PARTIAL if rho_k >= 0.3 else NOT_REPRODUCED),
        "Reproduced needs rho >= 0.5 for the ratio at k and a stronger link than the first ratio's.",
    )


def _slope_call(df: pd.DataFrame, vary: str, threshold: float = 1.5, lower_is_better: bool = True):
    """Call the log-log slope of the SPCA time per iteration against ``vary`` (bootstrap of the medians)."""
    sc = df[(df.part == "spca_cost") & (df.vary == vary)]
    slopes = boot_slopes(sc[vary], sc.seconds_per_iter)
    return call_timing(slopes, threshold, lower_is_better=lower_is_better, bootstrap=True)


def _counted_slope(df: pd.DataFrame, vary: str) -> float:
    """Log-log slope of the counted flops per SPCA iteration against ``vary`` (one count per size)."""
    sc = df[(df.part == "spca_cost") & (df.vary == vary)].groupby(vary).counted_flops_per_iter.first()
    return float(np.polyfit(np.log(sc.index.to_numpy(float)), np.log(sc.to_numpy(float)), 1)[0])


def _check_spca_cost(df: pd.DataFrame) -> Outcome:
    # rule fixed before the counted run: each counted slope (n, p and k) against 1.5, midway
    # between linear and the quadratic alternative, with the ledger's +/- 15 % band, and above 0.5 (the
    # count grows with the size at all); the measured-time slopes are reported beside
    counted = {v: _counted_slope(df, v) for v in ("n", "p", "k")}
    calls = {v: call_timing([s], 1.5) for v, s in counted.items()}
    grows = {v: call_timing([s], 0.5, lower_is_better=False) for v, s in counted.items()}
    states = [c.state for c in calls.values()]
    informative = all(g.state == "met" for g in grows.values())
    if "missed" in states:
        verdict = NOT_REPRODUCED
    elif all(s == "met" for s in states) and informative:
        verdict = REPRODUCED
    else:
        verdict = TOO_CLOSE
    times = {v: _slope_call(df, v) for v in ("n", "p", "k")}
    return Outcome(
        "log-log slope of the counted flops per iteration vs n "
        + ", vs p ".join(f"{counted[v]:.2f}" for v in ("n", "p"))
        + f", vs k {counted['k']:.2f}; measured-time slopes (reported, not decisive) vs n "
        f"{slope_text(times['n'])}, "
        f"vs p {slope_text(times['p'])}, vs k {slope_text(times['k'])}",
        verdict,
        "Linear in k, n and p (O(knp)) vs the O(np^2) (or O(n^2 p), O(k^2)) that forming a covariance (Gram) "
        "matrix would give. Decided on the floating-point operations counted on the code that ran: every "
        "pass sensible_pca made over the data, at the shapes of the calls (experiments._opcount), per "
        "iteration as (12 - 2 iterations) / 10; the paper's measure of cost is an operation count (MATLAB's "
        "flops), and a count does not move with the machine's load. Each slope called against 1.5 with a "
        "+/- 15 % band and required above 0.5 (else too close to call). Not counted: the k x k and p x k "
        "work "
        "between passes (O(pk^2 + k^3), smaller by a factor k / n). The measured times (process CPU time, "
        "one BLAS thread, interleaved repeats, quartiles over 400 bootstrap resamples of the per-size "
        "medians) decided this row before the counts did: two full runs of the same code moved the p "
        "slope from 1.31 to 1.20 across the band edge 1.30 (under three loads the time slopes moved and "
        "the counts did not); their k slope below 1 is reported, not explained.",
    )


CLAIMS = [
    Claim(
        "few-iterations-at-scale",
        "Abstract: these EM algorithms correctly and efficiently find the leading eigenvectors of the "
        "covariance of datasets in a few iterations using up to hundreds of thousands of datapoints in "
        "thousands of dimensions.",
        "a few iterations",
        _check_few,
    ),
    Claim(
        "storage-kp",
        "Sec. 3: the algorithm can be performed online using only a single datapoint at a time and so its "
        "storage requirements are only O(kp) + O(k^2).",
        "O(kp) + O(k^2)",
        _check_storage,
    ),
    Claim(
        "global-subspace-k",
        "Sec. 3.1: the only stable local extremum is the global maximum at which the true principal subspace "
        "is found; so it converges to the correct result (here k = 3 and 5).",
        "",
        _check_global,
    ),
    Claim(
        "em-is-power-iteration",
        "Sec. 5: the EM algorithm is exactly equivalent to performing power iterations for finding C, "
        "multiplying by the sample covariance without ever computing it.",
        "exactly equivalent",
        _check_power,
    ),
    Claim(
        "sanger-needs-more-iterations",
        "Sec. 5: Sanger's and Oja's rules reduce but do not minimize the cost, so they typically need more "
        "iterations and require a learning rate parameter to be set by hand.",
        "",
        _check_sanger,
    ),
    Claim(
        "ratio-controls-k",
        "Sec. 3.1: the ratios of the first k eigenvalues seem to be the critical parameters controlling the "
        "number of iterations until convergence (k = 3, random spectra).",
        "",
        _check_ratio,
    ),
    Claim(
        "spca-cost-knp",
        "Sec. 4, footnote 6: learning for SPCA also enjoys a complexity limited by O(knp) and not worse.",
        "O(knp)",
        _check_spca_cost,
        # decided on counted operations, which do not depend on the machine: not a timing row
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
