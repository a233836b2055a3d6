"""Benchmark of GSPPCA (Mattei, Bouveyron & Latouche 2016): cost of a VEM iteration, of the evidence path,
and of the whole fit against a plain NumPy implementation.

All ratios are against references timed in the same run on the same data, interleaved, with BLAS limited to
one thread for everything (``threadpoolctl``, as the library does). Data: Golub leukemia (38 x 3051, centred,
``d = 30``) and 500 MNIST sevens (mnist-basic as recreated by :func:`data_fetch.load_mnist_variation`,
pixels / 255, centred, ``d = 100``; the pixels constant over the 500 images are dropped, 499 of 784 remain:
they carry nothing, get ``u = 0`` and would only pad the timings).

Part A, per iteration (``part == "iteration"``): one VEM iteration of :mod:`repro.gsppca` (``(t(12) - t(2))
/ 20`` from runs of 2 and 22 iterations, so set-up cancels) against its dominant products, ``X @ (U M)``
(``n x p`` by ``p x d``) and ``X' Mu`` (``p x n`` by ``n x d``), the ``O(npd)`` part of its
``O(npd + pd^2 + d^3)`` cost.

Part B, evidence path (``part == "path"``): :func:`repro.gsppca.evidence_path` over all ``p`` nested models
(``alpha`` maximized for each) against one call of :func:`repro.gsppca.log_evidence` on the full model
(``alpha`` maximized too): ``p`` separate evaluations would cost ``p`` times the latter.

Part C, whole fit (``part == "fit"``) against a plain NumPy implementation of the same algorithm:
:func:`plain_vem_iteration` follows Proposition 1 as written (one ``d x d`` inverse per variable for ``S_k``,
a Python loop over the ``p`` variables for ``m_k``, ``a_k``, ``b_k``) and :func:`plain_evidence_path`
maximizes the evidence of each nested model separately (``scipy.optimize.minimize_scalar`` in ``log alpha``,
norms recomputed from ``X[:, order[:q]]``), the structure of the authors' R code. Running the plain version
to convergence would take minutes, so its cost is composed from measured parts: (plain iteration time) x
(the iterations our fit took) + (plain path time, measured on ``PATH_SAMPLE`` values of ``q`` spread over
``1..p`` and scaled by ``p / PATH_SAMPLE``). Our side is composed the same way from the same repeats
(iteration x iterations + path); our measured wall time of one whole ``GSPPCA.fit`` is reported beside it.
The plain iteration is checked to give the same ``u`` as ours (``max_u_diff``), so both select the same
model with the same evidence. Goal (the issue): the fit at least 10x faster than the plain implementation.
The authors report ~91 s (Golub, ``d = 30``) and ~24 s (``d = 1``) for their R code; R is not run here.

Part D, the authors' GSPPCA.R on Golub (``part == "vs-R"``; not in ``--quick``): our
``GSPPCA`` (default ``sigma1="bc"``, the bias-corrected noise estimate GSPPCA.R uses by default, and
``sigma1="ml"``; default ``ranking="evidence"``: of the VEM's rankings at iterations 1, 2, 4, ... and at its
end, the one whose best nested model has the largest exact evidence, :mod:`repro.gsppca` "Which ranking") at
``d = 1`` and ``d = 30`` on the whole Golub data, against GSPPCA.R (pamattei/GSPPCA @ 57de9a93, every
default: ``nit = 200``, ``epsi = 1e-5``, ``method = "BC"``): its selected ``q``, its largest log evidence
(over ``q = d+1..p-1``, its range), its noise estimate, its time and its final ``u``. At ``d = 1`` GSPPCA.R is
**run live** when installed (:func:`experiments._peers.run_gsppca`, one call between our ``"bc"`` and ``"ml"``
fits, ``set.seed(0)``; about 30 s of R, the most this benchmark's budget allows); at ``d = 30`` (2-3 min of R)
and wherever R is not installed, the values **recorded** by the peers' side-by-side run
(``/work/shared/peers/results/gsppca/gsppca_side_by_side.json``, also ``experiments/peers_recorded/``) and
R's final ``u`` recorded by ``experiments/peers_recorded/gsppca_golub_rankings.R`` are used, and each row
names its source (``R_source``). The time ratio (R's seconds over our one fit's wall time) is reported, not
turned into a verdict: a recorded time comes from another machine. Goals: our default selection within 5% of
R's, and our best evidence at least that of R's final ranking, both scored by our formula under the same
noise (it reproduces R's own values to 5e-5 nats, measured by the peers, by ``tests/test_peers_gsppca.py``
and in each row). Under ``"ml"`` only R's ``q`` with its ranking is recorded (3046 at ``d = 30``, 595 at
``d = 1``). Beside them (``_gsppca._ranking_facts``): why the VEM's later rankings score a lower exact
evidence than its first (the variance order, the evidence's per-row gains, the squared norm each ranking
leaves out, the VEM with its noise held at the evidence's value) and how our ranking compares with R's
(genes shared, Spearman of the rankings).

Repeats: 3 (5 before GSPPCA.R ran here: the timing ratios lie 2.5-5x from their goals, well outside the
15% band, so 3 decide them as surely, and the 30 s of R fit the benchmark's budget; ``--quick``: 2,
with 150 Golub genes, 120 MNIST pixels and ``d = 5``).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from experiments import _peers
from experiments._mattei import capped_note
from experiments.benchmarks._gsppca import REPEATS, bench_datasets, r_comparison_rows, timing_rows
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
from repro.gsppca import (
    EVIDENCE_TIE,
)

TITLE = "Benchmark: GSPPCA VEM iteration, evidence path and whole fit vs a plain NumPy implementation"

GOAL_FIT = 10.0
GOAL_PATH = 10.0  # the path at least 10x cheaper than p separate evaluations
R_WITHIN = 0.05  # our default selection within 5% of GSPPCA.R's


def compute(cfg: _common.Config) -> pd.DataFrame:
    repeats = 2 if cfg.quick else REPEATS
    frames = []
    with threadpool_limits(limits=1, user_api="blas"):
        for name, (X, d) in bench_datasets(cfg.quick).items():
            frames.append(timing_rows(name, X, d, repeats))
        if not cfg.quick:
            frames.append(r_comparison_rows())
    return pd.concat(frames, ignore_index=True)


def plot(df: pd.DataFrame, cfg: _common.Config):
    fig, axes = plt.subplots(1, 3, figsize=(9.5, 2.9))
    titles = {
        "iteration": "VEM iteration / X(UM) + X'Mu",
        "path": "evidence path / (p x one evidence)",
        "fit": "plain NumPy fit / GSPPCA fit",
    }
    for ax, (part, title) in zip(axes, titles.items(), strict=True):
        _plot_part(ax, df, part, title)
    axes[0].set_ylabel("ratio (repeats; bar: median)")
    fig.tight_layout()
    return fig


def _plot_part(ax, df, part, title):
    """One part's ratios per data set, each repeat a point, the median a bar, with its goal."""
    g = df[df.part == part]
    names = sorted(g.dataset.unique())
    for i, name in enumerate(names):
        v = g[g.dataset == name].ratio
        ax.plot(np.full(v.size, i), v, "o", color="tab:blue", alpha=0.6)
        ax.plot([i - 0.2, i + 0.2], [v.median()] * 2, color="black")
    ax.set_xticks(range(len(names)), names)
    ax.set_xlim(-0.6, len(names) - 0.4)
    ax.set_title(title, fontsize=8)
    ax.set_yscale("log")
    if part == "fit":
        ax.axhline(GOAL_FIT, color="gray", ls="--", lw=0.8, label=f"goal {GOAL_FIT:g}x")
        ax.legend(fontsize=7)
    if part == "path":
        ax.axhline(1 / GOAL_PATH, color="gray", ls="--", lw=0.8, label=f"goal 1/{GOAL_PATH:g}")
        ax.legend(fontsize=7)


def _combine(calls) -> str:
    """All met: reproduced; all missed: not; any too close: too close to call; else partly."""
    states = {c.state for c in calls.values()}
    if states == {"met"}:
        return REPRODUCED
    if states == {"missed"}:
        return NOT_REPRODUCED
    return TOO_CLOSE if "too close" in states else PARTIAL


def _check_fit(df):
    g = df[df.part == "fit"]
    calls = {name: call_timing(h.ratio, GOAL_FIT, lower_is_better=False) for name, h in g.groupby("dataset")}
    verdict = _combine(calls)
    info = g.groupby("dataset").agg(
        it=("n_iter", "first"), wall=("fit_wall_s", "first"), du=("max_u_diff", "max")
    )
    txt = "; ".join(f"{k}: {c.text(unit='x')}" for k, c in calls.items())
    note = "; ".join(
        f"{k}: {int(r.it)} VEM iterations, one GSPPCA.fit {r.wall:.2f} s wall, plain vs ours max |u| diff "
        f"{r.du:.1e}"
        for k, r in info.iterrows()
    )
    return Outcome(txt, verdict, note + "; plain cost composed from measured parts (module docstring)")


def _check_path(df):
    g = df[df.part == "path"]
    calls = {name: call_timing(h.ratio, 1.0 / GOAL_PATH) for name, h in g.groupby("dataset")}
    verdict = _combine(calls)
    return Outcome(
        "; ".join(f"{k}: {c.text(fmt='.3g')}" for k, c in calls.items()),
        verdict,
        "ratio = path over all p models / (p x one evaluation); goal below 1/10",
    )


def _vs_r_rows(df):
    g = df[df.part == "vs-R"] if "part" in df else df.iloc[:0]
    return None if g.empty else g.set_index(["d", "sigma1"])


def _r_source_note(g) -> str:
    """Where GSPPCA.R's values came from, per d: run here, or recorded (and why)."""
    live = sorted(int(d) for (d, _), r in g.iterrows() if r.R_source == "live")
    rec = sorted({int(d) for (d, _), r in g.iterrows() if r.R_source != "live"})
    out = []
    if live:
        out.append(_peers.source_note(True, "GSPPCA.R") + f" at d = {', '.join(map(str, live))}")
    if rec and live:  # installed, but not run at these d
        out.append(f"its RECORDED values at d = {', '.join(map(str, rec))} (2-3 min of R, over the budget)")
    elif rec:
        out.append(_peers.source_note(False, "GSPPCA.R"))
    return "; ".join(out)


def _check_r_selection(df):
    g = _vs_r_rows(df)
    if g is None:
        return Outcome("-", NOT_REPRODUCED, "the GSPPCA.R comparison runs only in a full run")
    parts, ok, times = [], [], []
    for d in sorted(g.index.get_level_values(0).unique()):
        row, ml = g.loc[(d, "bc")], g.loc[(d, "ml")]
        q, q_r = int(row.q), int(row.R_q)
        rel = abs(q - q_r) / q_r
        ok.append(rel <= R_WITHIN)
        parts.append(
            f"d = {d}: ours {q} vs R {q_r} ({100 * rel:.1f}%; 'ml': ours {int(ml.q)}, R's ranking "
            f"{int(row.R_q_ml_ranking)}), {int(row.n_iter)} VEM iterations"
        )
        times.append(
            f"d = {d}: GSPPCA.R {row.R_seconds:.0f} s ({row.R_source}) / ours {row.fit_wall_s:.2f} s wall "
            f"= {row.R_seconds / row.fit_wall_s:.0f}x"
        )
    return Outcome(
        "; ".join(parts),
        REPRODUCED if all(ok) else (PARTIAL if any(ok) else NOT_REPRODUCED),
        f"goal: default (sigma1='bc') selection within {100 * R_WITHIN:g}% of GSPPCA.R's on Golub; "
        + _r_source_note(g)
        + " (module docstring; a recorded time is from another machine, so that ratio is indicative only); "
        + capped_note(g),
        measured="; ".join(times),
    )


def _check_r_evidence(df):
    g = _vs_r_rows(df)
    if g is None:
        return Outcome("-", NOT_REPRODUCED, "the GSPPCA.R comparison runs only in a full run")
    parts, ok, notes = [], [], []
    for d in sorted(g.index.get_level_values(0).unique()):
        r = g.loc[(d, "bc")]
        ev, ev_r = float(r.max_logev_R_range), float(r.R_max_logev_our_formula)
        same_noise = abs(r.sigma1_value - r.R_sigma1) <= 1e-6 * r.R_sigma1
        ok.append(same_noise and ev >= ev_r - EVIDENCE_TIE * abs(ev_r))  # a tie: one set summed in 2 orders
        parts.append(
            f"d = {d}: ours {ev:.2f} (q {int(r.q)}) vs R's ranking {ev_r:.2f} (q {int(r.R_q_our_formula)}), "
            f"{ev - ev_r:+.2f} nats (sigma1 {r.sigma1_value:.6f} vs R {r.R_sigma1:.6f})"
        )
        notes.append(
            f"d = {d}: our ranking is the VEM's at iteration {int(r.ranking_iter)} of {int(r.n_iter)} (of "
            f"its rankings at iterations 1, 2, 4, ... and its end, the one whose best model has the largest "
            f"exact evidence; its end's scores {r.max_logev_final_ranking - ev_r:+.2f} against R's); "
            f"{int(r.shared_with_R)} of our {int(r.q)} genes are among R's {int(r.R_q_our_formula)}, "
            f"Spearman of the rankings {r.spearman_R:.3f} (our end's {r.spearman_R_final:.3f}); R's own "
            f"value {r.R_max_logev:.2f} ({r.R_source}; {r.R_max_logev - ev_r:+.1e} from our formula on its "
            f"ranking). What sets the rankings' evidence, each part measured: the evidence sees each row's "
            f"squared norms on the selected and the other genes (Theorem 2; a unit moved into the selection "
            f"gains {r.w_min:.2f}-{r.w_max:.2f} nats over the rows), and the variance order's best "
            f"model scores {r.var_max_logev:.2f} (q {int(r.var_q)}, {r.var_max_logev - ev:+.2f} from ours; "
            f"reordered by those gains {r.w_order_max_logev - r.var_max_logev:+.2f} more); the VEM's first "
            f"iteration ranks genes by their variance in the leading {d}-dimensional PCA subspace (Spearman "
            f"{r.spearman_iter1_subspace:.4f}); Spearman with the variance order: ours {r.spearman_var:.3f}, "
            f"the VEM's end {r.spearman_var_final:.3f}; against the variance order's top q, ours and the end "
            f"leave out {r.sqnorm_left_out:.1f} and {r.sqnorm_left_out_final:.1f} of squared norm, which the "
            f"gains turn into {r.logev_gap_predicted:.1f} and {r.logev_gap_predicted_final:.1f} nats below "
            f"it (measured {r.logev_gap_var:.1f} and {r.logev_gap_var_final:.1f}); with the VEM's noise held "
            f"at the evidence's sigma1 (re-estimated, it ends at {r.vem_sigma1_end:.4f}) its end "
            f"({int(r.fixed_noise_n_iter)} iterations) scores {r.fixed_noise_max_logev:.2f}; the authors' "
            f"VEM (recorded rankings at its iterations 1, 2, 4, ..., 128): the best, at iteration "
            f"{int(r.R_best_checkpoint_iter)}, scores {r.R_best_checkpoint_logev:.2f}, "
            f"{r.R_best_checkpoint_logev - ev_r:+.2f} from its end's"
        )
    return Outcome(
        "; ".join(parts),
        REPRODUCED if all(ok) else (PARTIAL if any(ok) else NOT_REPRODUCED),
        "goal: the largest log evidence of our default selection (q = d+1..p-1, GSPPCA.R's range) at least "
        "that of GSPPCA.R's final ranking, both scored by our formula under the same bias-corrected noise; "
        + "; ".join(notes),
    )


GOALS = [
    Claim(
        "gsppca-r-selection",
        "Project goal: on Golub (d = 1, 30) the default selection within 5% of the authors' GSPPCA.R "
        "(595 and 2803 genes; R run live at d = 1 when installed)",
        "595, 2803 (+-5%)",
        _check_r_selection,
    ),
    Claim(
        "gsppca-r-evidence",
        "Project goal: on Golub (d = 1, 30) the best evidence of our default selection at least that of "
        "GSPPCA.R's final ranking under the same noise estimate (R run live at d = 1 when installed)",
        ">= -96389.40, -98247.95",
        _check_r_evidence,
    ),
    Claim(
        "fit-10x-plain",
        "Project goal: the whole GSPPCA fit at least 10x faster than a plain NumPy implementation of the "
        "same algorithm (Golub d = 30, MNIST d = 100)",
        ">= 10x",
        _check_fit,
        machine_dependent=True,
    ),
    Claim(
        "path-reuses-work",
        "Project goal: the evidence over every q = 1..p in one pass, far cheaper than p separate evaluations",
        "< 1/10 of p evaluations",
        _check_path,
        machine_dependent=True,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
