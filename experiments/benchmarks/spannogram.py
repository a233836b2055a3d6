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

import itertools
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn import config_context
from threadpoolctl import threadpool_limits

from experiments import _peers
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
from repro import SpannogramPCA, spannogram_path
from repro.linalg import Covariance
from repro.spannogram import all_k_pass, rank2_sweep, spannogram_exact

TITLE = "Benchmark: spannogram all-k pass vs one k and vs NumPy Algorithm 3; time vs n; exact rank 2"

REPEATS = 3
K_ONE = 50
FIG5_KMAX = 1000  # the curve of experiments.asteris2014_fig5 (its KMAX)
PEER_KS = (10, 50, 180)
PEER_REPEATS = 3  # our fits per k, around one spanpc call
PEER_GOAL = 20.0
MIN_SECONDS = 0.3  # CPU time per timing sample (calls repeated until then)
SWEEP_GENES = 4000


def numpy_algorithm3(V: np.ndarray, C: np.ndarray, k: int) -> tuple[np.ndarray, float]:
    """Algorithm 3 as printed, in plain NumPy, for one ``k``: the reference of Part B."""
    best, best_x = -np.inf, None
    n = V.shape[0]
    for c in C:
        a = V @ c
        for s in (1.0, -1.0):
            b = s * a
            idx = np.argpartition(-b, k - 1)[:k] if k < n else np.arange(n)
            idx = idx[b[idx] > 0]
            if idx.size == 0:
                continue
            x = np.zeros(n)
            x[idx] = b[idx] / np.linalg.norm(b[idx])
            val = float(np.sum((V.T @ x) ** 2))
            if val > best:
                best, best_x = val, x
    return best_x, best


def _time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _cpu(fn, quick: bool) -> tuple[float, int]:
    """CPU seconds per call of ``fn`` over at least ``MIN_SECONDS`` (0.02 s in ``--quick``)."""
    return _common.cpu_seconds_per_call(fn, 0.02 if quick else MIN_SECONDS)


def _brute(A, k):
    n = A.shape[0]
    best = 0.0
    for r in range(1, k + 1):
        for J in itertools.combinations(range(n), r):
            w, U = np.linalg.eigh(A[np.ix_(J, J)])
            u = U[:, -1]
            if np.all(u >= -1e-12) or np.all(u <= 1e-12):
                best = max(best, float(w[-1]))
    return best


def compute(cfg: _common.Config) -> pd.DataFrame:
    from data_fetch import load_cbcl_faces, load_leukemia_armstrong

    q = cfg.quick
    reps = 3 if q else REPEATS
    S = 60 if q else 1000
    rows: list[dict] = []
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
        Vs = {}
        for name, X in data.items():
            V = _leading(X, 3)
            Vs[name] = V
            n = V.shape[0]
            C = _random_net(3, S, cfg.rng(1))
            _run_pass_fixed(V[:50], 5, C[:2])  # compile outside the timings
            k_fig = n if name == "CBCL" else min(FIG5_KMAX, n)  # the curve of Fig. 4 / Fig. 5
            _run_pass_fixed(V, K_ONE, C[:2]), _run_pass_fixed(V, n, C[:2]), _run_pass_fixed(V, k_fig, C[:2])
            for r in range(reps):
                t_all, _ = _cpu(lambda V=V, n=n, C=C: _run_pass_fixed(V, n, C), q)
                t_one, _ = _cpu(lambda V=V, C=C: _run_pass_fixed(V, K_ONE, C), q)
                t_fig = t_all
                if k_fig < n:
                    t_fig, _ = _cpu(lambda V=V, C=C, k=k_fig: _run_pass_fixed(V, k, C), q)
                t_np, _ = _cpu(lambda V=V, C=C: numpy_algorithm3(V, C, K_ONE), q)
                rows.append({"part": "allk", "dataset": name, "n": n, "repeat": r, "ratio": t_all / t_one,
                             "seconds": t_all, "reference_seconds": t_one, "n_samples": S,
                             "fig_kmax": k_fig, "fig_ratio": t_fig / t_one})  # fmt: skip
                rows.append({"part": "numpy", "dataset": name, "n": n, "repeat": r, "ratio": t_np / t_all,
                             "ratio_per_k": t_np / (t_all / n), "ratio_one_k": t_np / t_one,
                             "seconds": t_np, "reference_seconds": t_all, "n_samples": S})  # fmt: skip
        # Part C: scaling in n
        ns = (1000, 4000) if q else (2000, 8000, 32000, 128000)
        rng = cfg.rng(2)
        Cs = _random_net(3, 20 if q else 200, cfg.rng(3))
        for r in range(reps):
            for n in ns:
                V = rng.standard_normal((n, 3))
                z = rng.standard_normal(n)
                t, _ = _cpu(lambda V=V: _run_pass_fixed(V, K_ONE, Cs), q)
                t_sort, _ = _cpu(lambda z=z: np.sort(z), q)
                rows.append({"part": "scaling", "n": n, "repeat": r, "seconds": t / len(Cs),
                             "reference_seconds": t_sort, "ratio": t / len(Cs) / t_sort})  # fmt: skip
        # Part D: exact rank 2
        ns2 = (100, 200) if q else (250, 500, 1000, 2000)
        for r in range(max(2, reps - 2)):
            for n in ns2:
                V = rng.standard_normal((n, 2))
                t = _time(lambda V=V: rank2_sweep(V, 50))
                rows.append({"part": "exact_time", "n": n, "repeat": r, "seconds": t})
        if not q:
            # the leading SWEEP_GENES genes by loading norm (timing only: the sweep of all 12582 took 40 s)
            V2 = _leading(data["leukemia"], 2)
            V2 = np.ascontiguousarray(V2[np.argsort(-np.linalg.norm(V2, axis=1))[:SWEEP_GENES]])
            t = _time(lambda: rank2_sweep(V2, K_ONE))
            C = _random_net(3, 10000, cfg.rng(4))
            t_alg3 = _time(lambda: _run_pass_fixed(Vs["leukemia"], K_ONE, C))
            rows.append({"part": "exact_time", "dataset": f"leukemia ({SWEEP_GENES} genes)", "n": V2.shape[0],
                         "repeat": 0, "seconds": t, "reference_seconds": t_alg3,
                         "ratio": t / t_alg3})  # fmt: skip
        for d in (2, 3):
            for trial in range(1 if q else 4):
                Vr = rng.standard_normal((8, d))
                A = Vr @ Vr.T
                for k in (2, 4):
                    _, val = spannogram_exact(Covariance.from_matrix(A), k, rank=d)
                    opt = _brute(A, k)
                    rows.append({"part": "exact", "rank": d, "trial": trial, "cardinality": k,
                                 "value": val, "optimum": opt, "rel_error": (val - opt) / opt})  # fmt: skip
        rows += _vs_spanpc(load_leukemia_armstrong().X, q)
    return pd.DataFrame(rows)


def _vs_spanpc(X, quick) -> list[dict]:
    """Part E: spanpc (live or recorded) against SpannogramPCA per k and the whole curve, interleaved.

    CPU times on one thread on both sides: per ``k``, our fit (CPU time per fit over ``MIN_SECONDS``),
    one spanpc call (Octave ``cputime`` around ``spanpc``), then ``PEER_REPEATS - 1`` more of ours; each of
    our samples gives one ratio against the spanpc call.
    """
    live = not quick and _peers.available("spanpc")
    ks = PEER_KS[:1] if quick else PEER_KS
    p = X.shape[1]
    curve_ks = np.unique(np.r_[np.arange(1, 201), np.geomspace(200, p, 100).astype(int), p])
    Xc = X - X.mean(axis=0)

    def var(w):
        return float(np.sum((Xc @ w) ** 2) / ((X.shape[0] - 1) * (w @ w)))

    rec = _peers.recorded("spanpc")
    rec = rec[rec.dataset == "mll_raw"].set_index("k")
    SpannogramPCA(cardinality=ks[0], random_state=0).fit(X)  # compile outside the timings
    t0 = time.process_time()
    spannogram_path(X, curve_ks, random_state=0)
    t_curve = time.process_time() - t0
    rows = []
    for k in ks:
        peer = None
        for r in range(1 if quick else PEER_REPEATS):
            holder = {}

            def fit(k=k, r=r, holder=holder):
                holder["est"] = SpannogramPCA(cardinality=k, random_state=r).fit(X)

            t_ours, calls = _cpu(fit, quick)
            if live and peer is None:
                peer = _peers.run_spanpc(X, k, clock="cpu")
            t_peer, v_peer = (peer[0], var(peer[1])) if live else (rec.seconds[k], rec.variance[k])
            v_ours = float(holder["est"].explained_variance_[0])
            source = "live" if live else "recorded"
            rows.append({"part": "spanpc", "dataset": "leukemia raw", "cardinality": k, "repeat": r,
                         "seconds": t_ours, "calls": calls, "peer_seconds": t_peer, "peer_source": source,
                         "speedup": t_peer / t_ours, "variance": v_ours, "peer_variance": v_peer,
                         "variance_ratio": v_ours / v_peer, "curve_seconds": t_curve,
                         "curve_n_k": curve_ks.size, "curve_over_one_k": t_curve / t_ours})  # fmt: skip
    return rows


def _leading(X, d):
    """``V = U_d L_d^(1/2)`` of the covariance of ``X`` (Algorithm 1, lines 1-2; ``X`` of rank above ``d``),
    from the ``d + 1`` leading eigenpairs, as the spannogram computes it."""
    vals, U = Covariance.from_data(X).eigh(d + 1)
    return np.ascontiguousarray(U[:, :d] * np.sqrt(np.clip(vals[:d], 0.0, None)))


def _random_net(d, n_samples, rng):
    """``n_samples`` points drawn uniformly on the unit sphere of R^d (Algorithm 3, lines 5-6)."""
    C = rng.standard_normal((n_samples, d))
    nrm = np.linalg.norm(C, axis=1, keepdims=True)
    nrm[nrm == 0] = 1.0
    return np.ascontiguousarray(C / nrm)


def _run_pass_fixed(V, kmax, C):
    """The all-k kernel on given samples (what the spannogram's random net runs after drawing them)."""
    return all_k_pass(V, C, kmax)[0]


def _exponent(df: pd.DataFrame, part: str) -> np.ndarray:
    sub = df[(df.part == part) & df.dataset.isna()] if "dataset" in df else df[df.part == part]
    out = []
    for _, g in sub.groupby("repeat"):
        out.append(np.polyfit(np.log(g.n), np.log(g.seconds), 1)[0])
    return np.array(out)


def plot(df: pd.DataFrame, cfg: _common.Config):
    fig, axes = plt.subplots(1, 3, figsize=(12.0, 3.2))
    ax = axes[0]
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
    ax = axes[1]
    sc = df[df.part == "scaling"].groupby("n").seconds.median()
    ax.loglog(sc.index, sc.values, "o-", color="tab:red", label="Alg. 3, time per sample")
    ax.loglog(sc.index, sc.values[0] * (sc.index / sc.index[0]), "k--", lw=0.7, label="slope 1")
    ax.set_xlabel("n")
    ax.set_ylabel("seconds per sample")
    ax.set_title("Near-linear in n (d = 3, k = 50)")
    ax.legend()
    ax = axes[2]
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
    fig.tight_layout()
    return fig


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
