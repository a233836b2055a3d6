"""Benchmark of the spannogram (Asteris et al. 2014): the all-k pass, a plain NumPy Algorithm 3, scaling in n.

Every number is a ratio against a reference measured in the same run, interleaved, BLAS limited to one
thread (``threadpoolctl``; the numba kernels are single-threaded) on a 2-core machine. Parts A, B,
C and E time **CPU time of this process** per call, repeating a call until ``MIN_SECONDS`` (0.3 s) of CPU time
are spent (:func:`experiments.runner._common.cpu_seconds_per_call`): a pass or a fit takes 0.01-0.5 s, and
one call per sample was mostly noise (the vs-spanpc verdict flipped between runs). Data: CBCL faces
(2429 x 361, centred) and the Armstrong leukemia data (72 x 12582, centred); ``V`` from the 3 leading
eigenpairs (``d = 3``).

Part A, all k vs one k (``part == "allk"``): the one pass that scores every ``k = 1..n``
(:func:`repro.spannogram.all_k_pass`, as :class:`repro.SpannogramPCA` runs it: best value on
``A_d``, the sample and the bound's rank-1 value for every ``k``) against the same kernel for one ``k = 50``
(``kmax = 50``: our fastest one-``k`` pass) on the same 1000 samples. Goal: at most 2x on each data set.
Median of ``REPEATS`` interleaved repeats. The judged curve is ``k = 1..n``, the whole curve of the issue's
sentence; Fig. 4's curve (:mod:`experiments.asteris2014_fig4`) is that one on CBCL. Reported, not judged
(``fig_ratio``): the curve Fig. 5 plots on leukemia (:mod:`experiments.asteris2014_fig5`, ``k = 1..``
``FIG5_KMAX`` = 1000, our choice: the paper gives no range) in units of the same one-``k`` pass; it is the
pass for ``kmax = 1000`` (rows by decreasing norm, early stop), which is also what one ``k = 1000`` costs
(:class:`repro.SpannogramPCA` runs the pass up to its ``k``), so a curve up to ``kmax`` costs one ``k =
kmax``. What bounds the ``k = 1..n`` ratio on leukemia: where ``k <= n / 12`` and ``n >= 1000`` the one-``k``
pass reads a few hundred of the 12582 rows per sample; every ``k`` up to ``n`` needs each side of a sample
sorted as deep as a prefix can still beat a best value. The all-``k`` pass cuts each side at the depth its
``d x d`` scatter bound allows (:func:`repro.spannogram._kernels.uses_bounded`: a median depth of about 760 of
~6300 entries; 0.65x the CPU time of sorting every entry, identical output), but about one side in six has
a scatter whose top eigenvalue exceeds the best ``s_n`` and needs every entry. Measured and not adopted:
a least-significant-digit radix sort (1.17x on the sort alone, the sort being about half
of the pass); rows by decreasing norm with the unread rows' trace as the bound (half the rows still read on
leukemia, all on CBCL, even against the final bests). On CBCL (361 rows) the bound cuts too little to pay
for itself and the pass sorts every side in full; ``a = Vc``, a cost both passes share, got 4x cheaper in
the same change, so CBCL's ratio rose (2.1-2.3x to 2.4-2.6x) while both passes got faster.

Part B, against a plain NumPy Algorithm 3 (``part == "numpy"``): :func:`numpy_algorithm3`, the printed
algorithm in NumPy for one ``k`` (per sample ``a = Vc``, ``argpartition`` for the ``k`` largest entries of
each sign, keep the best ``||V'x||^2``), the way the authors' MATLAB code runs (one ``k`` per call), on the
same samples. Ratios: ``numpy (one k) / ours (all k)`` (goal >= 1: the whole curve in less time than the
reference needs for one ``k``) and the per-``k`` cost ``numpy (one k) / (ours (all k) / n)`` (goal >= 20).
The authors' MATLAB timings (0.8 s per ``k`` on CBCL, 10.6 s on leukemia for 1e4 samples) are not measured
here.

Part C, scaling in ``n`` (``part == "scaling"``): CPU time per sample of the pass for one ``k = 50`` on
random ``V`` (``n`` = 2000, 8000, 32000, 128000, ``d = 3``; 200 samples a call, calls repeated as in Part
A), fitted exponent of time vs ``n`` per repeat (Theorem 2: ``O(eps^-d n log n)``, near-linear). Reference
in the same run: ``numpy.sort`` of ``n`` numbers. (Wall time of one call gave exponents 0.47 and 0.94 in
two runs on a heavily loaded machine.)

Part D, exact rank 2 (``part == "exact_time"``): the kinetic sweep (:func:`repro.spannogram.rank2_sweep`,
``k <= 50``) on random ``V`` with ``n`` = 250 .. 2000: fitted exponent (``n^2 log n`` expected), and the
sweep on the ``SWEEP_GENES`` = 4000 leukemia genes of largest loading norm (one run, full mode only; timing
only, so a size of ours: all 12582 genes took 40 s; the time is in the CSV as ``seconds`` and as a ratio to
the Algorithm 3 pass with 1e4 samples). ``part == "exact"``: the exact algorithm against exhaustive search on
random rank-``d`` matrices (``d`` = 2, 3; ``n = 8``), relative error.

Part E, against the authors' code (``part == "spanpc"``): ``spanpc.m`` (Octave, Asteris et al.'s
own code: nnsparse, rank 3, 1e4 samples, early stop off, centred, ``randn/rand('seed', 0)``) against
``SpannogramPCA(cardinality=k, random_state=r).fit(X)`` (defaults: rank 3, 1e4 samples) on the raw leukemia
data (72 x 12582; both centre it) for ``k`` in ``PEER_KS``. When Octave and the peers are installed
(:mod:`experiments._peers`) spanpc runs side by side: per ``k``, one of our samples, one spanpc call in a
child process (CPU time of the Octave process around ``spanpc``, ``cputime``; one BLAS thread), then
``PEER_REPEATS - 1`` more of ours; each of our samples is one ratio. One spanpc call per ``k`` (about 15 s
each, the paper's 1e4 samples) keeps the run in its budget; its CPU time varies by a few percent, our ratio
is at least 1.5x away from the band. Otherwise (and in ``--quick``) spanpc's recorded wall times of the last
side-by-side run are used (``experiments/peers_recorded/spanpc.csv``; ``peer_source = "recorded"``).
Variances ``x'Cx`` (unit ``x``, ``C`` the sample covariance, ddof 1). Goal: >= 20x per ``k`` at >= 0.999 of
spanpc's variance (the two draw different samples). Reported, not judged: the whole curve
``spannogram_path`` over ``k = 1..200`` and 100 geometric steps to 12582 (one run, CPU time) in units of
our one-``k`` fit.

``--quick``: 60 samples, the first 2000 genes, smaller ``n``, 3 repeats, 0.02 s per timing sample, no
leukemia sweep; part E on the whole leukemia data for ``k = 10`` only, one repeat, against the recorded
spanpc time.

Cost of a full run: 71-97 s of wall time, Octave included, in five runs on a 2-core machine under load
(87-104 s before the all-k pass was cut at its scatter bound), about 45 s of it the three spanpc calls.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn import config_context
from threadpoolctl import threadpool_limits

from experiments.benchmarks._spannogram import (
    K_ONE,
    allk_rows,
    exact_rows,
    exact_time_rows,
    scaling_rows,
    spanpc_rows,
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

TITLE = "Benchmark: spannogram all-k pass vs one k and vs NumPy Algorithm 3; time vs n; exact rank 2"

REPEATS = 3
PEER_GOAL = 20.0


def compute(cfg: _common.Config) -> pd.DataFrame:
    from data_fetch import load_cbcl_faces, load_leukemia_armstrong

    q = cfg.quick
    reps = 3 if q else REPEATS
    # the timed steps trust their input: scikit-learn's parameter validation (tens of microseconds a call)
    # is skipped, so a timing is the pass itself
    with threadpool_limits(1), config_context(skip_parameter_validation=True):
        leuk = load_leukemia_armstrong().X
        if q:
            leuk = leuk[:, :2000]
        data = {
            "CBCL": _common.preprocess(load_cbcl_faces().X, "center"),
            "leukemia": _common.preprocess(leuk, "center"),
        }
        rows, Vs = allk_rows(data, reps, cfg)
        rng = cfg.rng(2)  # parts C and D draw from one generator, in this order
        rows += scaling_rows(reps, rng, cfg)
        rows += exact_time_rows(reps, rng, data["leukemia"], Vs["leukemia"], cfg)
        rows += exact_rows(rng, q)
        rows += spanpc_rows(load_leukemia_armstrong().X, q)
    return pd.DataFrame(rows)


def _exponent(df: pd.DataFrame, part: str) -> np.ndarray:
    sub = df[(df.part == part) & df.dataset.isna()] if "dataset" in df else df[df.part == part]
    out = []
    for _, g in sub.groupby("repeat"):
        out.append(np.polyfit(np.log(g.n), np.log(g.seconds), 1)[0])
    return np.array(out)


def plot(df: pd.DataFrame, cfg: _common.Config):
    fig, axes = plt.subplots(1, 3, figsize=(12.0, 3.2))
    _plot_allk(axes[0], df)
    _plot_scaling(axes[1], df)
    _plot_exact(axes[2], df)
    fig.tight_layout()
    return fig


def _plot_allk(ax, df):
    """Parts A and B: the all-k pass against one k and against NumPy's Algorithm 3."""
    labels, vals = [], []
    for (part, name), g in df[df.part.isin(["allk", "numpy"])].groupby(["part", "dataset"]):
        labels.append(f"{name}: all k / one k" if part == "allk" else f"{name}: NumPy one k / ours all k")
        vals.append(g.ratio.median())
        if part == "numpy":
            labels.append(f"{name}: per-k speed-up vs NumPy")
            vals.append(g.ratio_per_k.median())
    ax.barh(range(len(vals)), vals, color="tab:red")
    ax.set_yticks(range(len(vals)), labels, fontsize=7)
    ax.set_xscale("log")
    ax.axvline(1, color="k", lw=0.6)
    ax.set_xlabel("ratio (same run, median)")
    ax.set_title("All-k pass (d = 3)")


def _plot_scaling(ax, df):
    """Part C: time per sample over n."""
    sc = df[df.part == "scaling"].groupby("n").seconds.median()
    ax.loglog(sc.index, sc.values, "o-", color="tab:red", label="Alg. 3, time per sample")
    ax.loglog(sc.index, sc.values[0] * (sc.index / sc.index[0]), "k--", lw=0.7, label="slope 1")
    ax.set_xlabel("n")
    ax.set_ylabel("seconds per sample")
    ax.set_title("Near-linear in n (d = 3, k = 50)")
    ax.legend()


def _plot_exact(ax, df):
    """Part D: the exact rank-2 sweep's time over n."""
    ex = df[(df.part == "exact_time")]
    ex = ex[ex.dataset.isna()] if "dataset" in ex else ex
    et = ex.groupby("n").seconds.median()
    ax.loglog(et.index, et.values, "s-", color="tab:purple", label="exact rank 2 (sweep)")
    ax.loglog(et.index, et.values[0] * (et.index / et.index[0]) ** 2, "k--", lw=0.7, label="slope 2")
    ax.set_xticks(et.index, [str(int(v)) for v in et.index])
    ax.minorticks_off()
    ax.set_xlabel("n")
    ax.set_ylabel("seconds")
    ax.set_title("Exact rank 2, k <= 50")
    ax.legend()


# --------------------------------------------------------------------------- claims
def _check_allk(df):
    parts = []
    calls = {}
    fig = []
    for name, g in df[df.part == "allk"].groupby("dataset"):
        c = call_timing(g.ratio, 2.0)
        calls[name] = c
        parts.append(f"{name}: {c.text(unit='x')}")
        if "fig_ratio" in g and int(g.fig_kmax.iloc[0]) < int(g.n.iloc[0]):
            fig.append(f"{name} k = 1..{int(g.fig_kmax.iloc[0])}: {g.fig_ratio.median():.1f}x")
    verdict, why = _both(calls)
    fig_txt = f"; reported, not judged, the figure's curve in one k's units: {', '.join(fig)}" if fig else ""
    return Outcome(
        "; ".join(parts) + fig_txt,
        verdict,
        f"whole curve: the all-k pass for k = 1..n / the one-k pass (k = {K_ONE}, our fastest: the pass for "
        f"kmax = {K_ONE}) on the same samples, CPU time per pass; goal <= 2x on each data set" + why + ". "
        "Where k <= n / 12 and n >= 1000 (leukemia) the one-k pass visits rows by decreasing norm and stops "
        "early; k = 1..n sorts each side as deep as its scatter bound allows (all of it for about one side "
        "in six on leukemia); a curve up to kmax costs the pass for one k = kmax",
    )


def _both(calls: dict) -> tuple[str, str]:
    """Verdict of a goal that must hold on every data set: (verdict, the reason for a split one)."""
    met = [n for n, c in calls.items() if c.state == "met"]
    missed = [n for n, c in calls.items() if c.state == "missed"]
    close = [n for n, c in calls.items() if c.state == "too close"]
    if missed:
        close_txt = f"; too close to call on {', '.join(close)}" if close else ""
        if met:
            return PARTIAL, f" (partly: met on {', '.join(met)}, missed on {', '.join(missed)}{close_txt})"
        return NOT_REPRODUCED, f" (missed on {', '.join(missed)}{close_txt})"
    if close:
        return TOO_CLOSE, ""
    return REPRODUCED, ""


def _check_numpy(df):
    parts, states = [], []
    for name, g in df[df.part == "numpy"].groupby("dataset"):
        whole = call_timing(g.ratio, 1.0, lower_is_better=False)
        per_k = call_timing(g.ratio_per_k, 20.0, lower_is_better=False)
        parts.append(f"{name}: NumPy one k / ours all k {whole.text(unit='x')}; per k {per_k.median:.0f}x")
        states += [whole.state, per_k.state]
    if all(s == "met" for s in states):
        verdict = REPRODUCED
    elif "missed" in states:  # a goal clearly missed on some data set: partly if another is clearly met
        verdict = PARTIAL if "met" in states else NOT_REPRODUCED
    else:  # none missed, one within its band: no verdict that could flip between runs
        verdict = TOO_CLOSE
    return Outcome(
        "; ".join(parts),
        verdict,
        "goal: the whole k = 1..n curve in less time than a plain NumPy Algorithm 3 needs for one k (>= 1x), "
        "per-k cost >= 20x lower; the NumPy code stands in for the authors' MATLAB code; each ratio decided "
        f"by call_timing with {whole.band_text()} (all met: reproduced; one clearly missed: partly; one "
        "inside its band and none missed: too close to call)",
    )


def _check_linear(df):
    ex = _exponent(df, "scaling")
    c = call_timing(ex, 1.25)
    return Outcome(
        f"fitted exponent of time vs n: {c.text()}",
        c.verdict,
        "Theorem 2: O(eps^-d n log n), near-linear; met if the exponent of time per sample vs n is below "
        "1.25",
    )


def _check_exact(df):
    ex = df[df.part == "exact"]
    err = float(ex.rel_error.abs().max())
    return Outcome(
        f"max relative error vs exhaustive search: {err:.1e} over {len(ex)} rank-2/3 instances",
        REPRODUCED if err <= 1e-9 else NOT_REPRODUCED,
        "reproduced if the exact algorithm equals the exhaustive optimum to 1e-9 on every instance",
    )


def _check_spanpc(df):
    d = df[df.part == "spanpc"]
    calls = {
        int(k): call_timing(g.speedup, PEER_GOAL, lower_is_better=False) for k, g in d.groupby("cardinality")
    }
    vr = {int(k): float(g.variance_ratio.median()) for k, g in d.groupby("cardinality")}
    curve = {int(k): float(g.curve_over_one_k.median()) for k, g in d.groupby("cardinality")}
    live = set(d.peer_source) == {"live"}
    states = {c.state for c in calls.values()}
    var_ok = all(v >= 0.999 for v in vr.values())
    if "missed" in states or not var_ok:
        verdict = PARTIAL if "met" in states else NOT_REPRODUCED
    elif "too close" in states:
        verdict = TOO_CLOSE  # one k inside the band decides: no verdict that could flip between runs
    else:
        verdict = REPRODUCED if live else PARTIAL
    src = (
        "spanpc run side by side in this run, interleaved, CPU time on one thread on both sides (Octave "
        "cputime around spanpc, one call per k; ours per fit over >= 0.3 s of fits)"
        if live
        else "spanpc NOT run in this run (Octave or the peers not installed, or --quick): its RECORDED "
        "times of the last side-by-side run (experiments/peers_recorded/spanpc.csv) against this run's, "
        "so at most partly reproduced"
    )
    return Outcome(
        "; ".join(
            f"k = {k}: {c.text('.1f', 'x')}, variance {vr[k]:.5f} of spanpc's, "
            f"whole curve {curve[k]:.1f}x our one k"
            for k, c in calls.items()
        ),
        verdict,
        f"{src}; goal >= 20x per k at >= 0.999 of spanpc's variance (different random samples); the whole "
        f"curve ({int(d.curve_n_k.iloc[0])} k up to 12582) in units of our one-k fit is reported, not judged",
    )


CLAIMS = [
    Claim(
        "exact-rank-d",
        "Sec. 1: if A has rank d the algorithm returns the optimal k-sparse non-negative PC for any k",
        "exact",
        _check_exact,
    ),
    Claim(
        "near-linear",
        "Theorem 2: Alg. 3 runs in O(eps^-d n log n), near-linear in n for fixed d and eps",
        "O(n log n)",
        _check_linear,
        machine_dependent=True,
    ),
]

GOALS = [
    Claim(
        "allk-vs-onek",
        "Goal (this repository): one pass gives every k for at most 2x the cost of one k",
        "<= 2x",
        _check_allk,
        machine_dependent=True,
    ),
    Claim(
        "vs-numpy",
        "Goal (this repository): the whole curve faster than a plain Algorithm 3 needs for one k, per-k cost "
        ">= 20x lower",
        ">= 1x, >= 20x",
        _check_numpy,
        machine_dependent=True,
    ),
    Claim(
        "vs-spanpc",
        "Project goal: SpannogramPCA at least 20x faster than the authors' spanpc (Octave) per k on the raw "
        "leukemia data (72 x 12582, centred; rank 3, 1e4 samples), at its variance",
        ">= 20x",
        _check_spanpc,
        machine_dependent=True,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
