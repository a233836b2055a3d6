"""Mattei, Bouveyron & Latouche (2016), Figure 2: range of the noiseless assumption, F-score vs noise.

Protocol (Sec. 3.2): data from the noisy model (3) (:func:`repro.gsppca.make_globally_sparse`), every entry of
``W`` standard Gaussian, ``d = 10``, in two scenarios, ``n = 50, p = 150`` and ``n = p = 100``, over a grid
of noise levels ``sigma`` from 0.05 to 1. GSPPCA (:class:`repro.GSPPCA`, ``d = 10``, ``q`` chosen by the
evidence) selects the variables; the F-score (:func:`repro.metrics.fscore_selection`) compares them with the
true support. The figure shows the median and the quartiles over the runs.

Choices the paper leaves open, and reductions
---------------------------------------------
* **q** (not given): ``q = 20`` relevant variables (``Q_MAIN``): twice ``d``, a small fraction of ``p``
  so that the selection is not trivial. **Sensitivity**: ``q = 40`` (``Q_SENS``) at ``sigma`` in
  {0.05, 0.5, 1}; the claim's check is repeated on it and its result is in the note.
* **Grid**: ``sigma`` in {0.05, 0.2, 0.4, 0.6, 0.8, 1.0} (6 levels; the published grid is not listed).
* **Runs**: 20 per noise level and scenario (``RUNS``), not the published 100, and 5 for the sensitivity
  rows: the whole Mattei et al. suite must run in minutes on a 2-core machine (a GSPPCA fit here
  costs 0.1-0.4 s of wall time); 100 runs would be 1200 fits for the main grid alone. A first full run
  with 30 runs on 11 levels gave the same result (every median F-score 1). Each run draws a new ``W``,
  support and data (``cfg.rng``).
* **The protocol re-read against the text** (our medians stay at 1 where the published ones fall
  towards ``sigma = 1``): every element the text states is matched (model (3) with ``W`` and ``y``
  standard Gaussian, noise ``N(0, sigma^2 I_p)`` on every variable, ``d = 10``, the two scenarios, ``sigma``
  from 0.05 to 1, the F-score of the selected support); the unstated ones are ``q``, the grid and the runs. A
  spot check of ``q`` = 20, 50 and 75 at ``sigma`` = 0.05 and 1 (5 runs each, both scenarios) gave F-scores
  0.99-1 everywhere, so no reading of ``q`` makes the problem as hard as published; the signal per active
  variable (variance ``d = 10``) against ``sigma^2 <= 1`` is what model (3) with standard Gaussian ``W``
  gives. The difference is reported, not tuned away.
* **VEM cap**: whether each VEM stopped at ``max_iter`` is recorded (``capped``) and counted in the
  claim's note (before the VEM's exact steps: 90-100% of the runs at ``sigma = 0.2``).
* **The authors' code at this setting**: GSPPCA.R (``gsppca()`` with its defaults: at most 200
  VEM iterations, relative tolerance 1e-5) on its own draws from model (3) at the same ``d``, ``q``,
  scenarios and ``sigma`` grid, and, where its VEM stopped at the cap, again with the cap raised to 5000;
  recorded in ``experiments/peers_recorded/gsppca_fig2.csv`` by ``gsppca_fig2.R`` there (R is not needed to
  run this experiment). The claim's note reports its F-scores and whether the cap changes them.
* ``--quick``: ``sigma`` in {0.05, 1}, 1 run, the sensitivity at ``sigma = 1`` with 1 run.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from experiments._mattei import capped_note
from experiments.runner import _common
from experiments.runner.claims import NOT_REPRODUCED, PARTIAL, REPRODUCED, Claim, Outcome
from repro import GSPPCA
from repro.gsppca import make_globally_sparse
from repro.metrics import fscore_selection

TITLE = "Mattei et al. (2016) Fig. 2: F-score of GSPPCA vs noise (median and quartiles)"

D = 10
SCENARIOS = {"n = 50, p = 150": (50, 150), "n = p = 100": (100, 100)}
Q_MAIN, Q_SENS = 20, 40
SIGMAS = (0.05, 0.2, 0.4, 0.6, 0.8, 1.0)
SIGMAS_SENS = (0.05, 0.5, 1.0)
RUNS, RUNS_SENS = 20, 5
ROBUST_MEDIAN = 0.8  # "quite robust": median F-score at least this at every noise level


def _runs(cfg, scenario_id, q, sigmas, runs):
    name = list(SCENARIOS)[scenario_id]
    n, p = SCENARIOS[name]
    rows = []
    for si, sigma in enumerate(sigmas):
        for r in range(runs):
            X, v = make_globally_sparse(n, p, D, q, sigma=sigma, random_state=cfg.rng(scenario_id, q, si, r))
            m = GSPPCA(D, random_state=r).fit(X)
            rows.append(
                {
                    "scenario": name,
                    "n": n,
                    "p": p,
                    "q": q,
                    "sigma": sigma,
                    "run": r,
                    "fscore": fscore_selection(m.support_, v),
                    "n_selected": m.n_selected_,
                    "n_iter": m.n_iter_,
                    "capped": not m.vem_.converged,
                }
            )
    return rows


def compute(cfg: _common.Config) -> pd.DataFrame:
    sig = (0.05, 1.0) if cfg.quick else SIGMAS
    runs = 1 if cfg.quick else RUNS
    sig_s = (1.0,) if cfg.quick else SIGMAS_SENS
    runs_s = 1 if cfg.quick else RUNS_SENS
    rows = []
    for sid in range(len(SCENARIOS)):
        rows += _runs(cfg, sid, Q_MAIN, sig, runs)
        rows += _runs(cfg, sid, Q_SENS, sig_s, runs_s)
    return pd.DataFrame(rows)


def _summary(df):
    return (
        df.groupby(["scenario", "q", "sigma"])
        .fscore.agg(
            median="median",
            mean="mean",
            q1=lambda x: x.quantile(0.25),
            q3=lambda x: x.quantile(0.75),
            runs="size",
        )
        .reset_index()
    )


def plot(df: pd.DataFrame, cfg: _common.Config):
    s = _summary(df)
    fig, axes = plt.subplots(1, 2, figsize=(7.0, 2.8), sharey=True)
    for ax, name in zip(axes, SCENARIOS, strict=True):
        g = s[(s.scenario == name) & (s.q == Q_MAIN)].sort_values("sigma")
        ax.fill_between(g.sigma, g.q1, g.q3, color="#9ecae1", alpha=0.6, lw=0, label="1st-3rd quartile")
        ax.plot(g.sigma, g["median"], "-o", color="#08519c", ms=3, label=f"median (q = {Q_MAIN})")
        h = s[(s.scenario == name) & (s.q == Q_SENS)].sort_values("sigma")
        ax.plot(h.sigma, h["median"], "s--", color="gray", ms=3, lw=0.8, label=f"median (q = {Q_SENS})")
        ax.set_title(name)
        ax.set_xlabel("Noise sigma")
        ax.set_ylim(0, 1.05)
    axes[0].set_ylabel("F-score")
    axes[0].legend(loc="lower left")
    fig.tight_layout()
    return fig


def _robust(s, q):
    g = s[s.q == q]
    worst = g.groupby("scenario")["median"].min()
    drop = {
        name: float(h.sort_values("sigma")["median"].iloc[0] - h.sort_values("sigma")["median"].iloc[-1])
        for name, h in g.groupby("scenario")
    }
    return bool((worst >= ROBUST_MEDIAN).all()), worst, drop


DIMINISH = 0.01  # smallest drop of the mean F-score counted as the quality diminishing


def _check(df):
    s = _summary(df)
    ok, worst, _ = _robust(s, Q_MAIN)
    ok_s, worst_s, _ = _robust(s, Q_SENS)
    g = s[s.q == Q_MAIN].sort_values("sigma")
    mean_lo = g.groupby("scenario")["mean"].first()
    mean_hi = g.groupby("scenario")["mean"].last()
    # a visible decline, as in the published panels: the mean F-score at the largest sigma at least one
    # point (0.01) below the smallest sigma's in a scenario (one imperfect run of 20 is 0.001 to 0.005)
    diminishes = bool((mean_hi <= mean_lo - DIMINISH).any())
    txt = "; ".join(
        f"{k}: lowest median {worst[k]:.3f}, mean {mean_lo[k]:.3f} -> {mean_hi[k]:.3f}" for k in worst.index
    )
    verdict = REPRODUCED if (ok and ok_s and diminishes) else (PARTIAL if ok or ok_s else NOT_REPRODUCED)
    return Outcome(
        f"q = {Q_MAIN}: {txt}",
        verdict,
        f"robust = median F-score >= {ROBUST_MEDIAN} at every sigma in both scenarios (threshold fixed "
        f"before the run); diminishing = mean F-score at least {DIMINISH} lower at the largest sigma than at "
        f"the smallest in a scenario: {diminishes} (partly reproduced when robust but not diminishing). "
        f"Sensitivity q = {Q_SENS}: lowest medians "
        + ", ".join(f"{k} {v:.3f}" for k, v in worst_s.items())
        + f" ({'holds' if ok_s else 'fails'}). Runs per level: {int(s.runs.max())} (paper: 100); "
        + capped_note(df)
        + ". The published medians fall visibly towards sigma = 1, ours hardly move: every stated element "
        "of the protocol is matched (module docstring), the unstated q does not make it harder (q = 20, 40, "
        "50, 75 tried), so the selection here is more accurate than published" + _r_note(),
    )


R_CSV = Path(__file__).with_name("peers_recorded") / "gsppca_fig2.csv"


def _r_note(path=R_CSV) -> str:
    """GSPPCA.R's own F-scores at this setting (recorded: peers_recorded/gsppca_fig2.R)."""
    if not Path(path).exists():
        return "; GSPPCA.R at this setting: not recorded"
    r = pd.read_csv(path)
    parts = []
    for (n, p), g in r.groupby(["n", "p"], sort=False):
        med = g.groupby("sigma").fscore.median()
        mean = g.groupby("sigma").fscore.mean()
        parts.append(
            f"n = {n}, p = {p}: median F "
            + ", ".join(f"{med[s]:.3f}" for s in med.index)
            + f" at sigma {', '.join(f'{s:g}' for s in med.index)} ({g.groupby('sigma').size().min()}-"
            f"{g.groupby('sigma').size().max()} runs each), mean {mean.iloc[0]:.3f} -> {mean.iloc[-1]:.3f}"
        )
    capped = r[r.capped.astype(bool)]
    moved = capped[capped.fscore_nit5000 != capped.fscore]
    drop = r.groupby(["n", "p"]).apply(
        lambda g: (
            g[g.sigma == g.sigma.max()].fscore.mean() <= g[g.sigma == g.sigma.min()].fscore.mean() - DIMINISH
        ),
        include_groups=False,
    )
    if bool(drop.any()):
        verdict = "GSPPCA.R's F-score falls with the noise here where ours does not" + (
            f"; raising its cap changed the F-score in {len(moved)} capped runs: the cap contributes"
            if len(moved)
            else "; raising its cap changed no F-score: the cap is not the cause"
        )
    else:
        verdict = (
            "GSPPCA.R's own F-score does not fall with the noise at this setting either, so the published "
            "decline is not reproduced by the authors' code on model (3) as stated"
            + ("" if len(moved) else ", and its 200-iteration cap is not the cause (tested)")
        )
    return (
        ". The authors' GSPPCA.R (pamattei/GSPPCA @ 57de9a93, gsppca() defaults, its own draws from "
        f"model (3) with q = {Q_MAIN}; recorded by experiments/peers_recorded/gsppca_fig2.R): "
        + "; ".join(parts)
        + f"; its VEM stopped at the 200-iteration cap in {len(capped)} of {len(r)} runs, and with the cap "
        f"raised to 5000 the F-score changed in {len(moved)} of them. {verdict}"
    )


CLAIMS = [
    Claim(
        "fscore-robust-to-noise",
        "Sec. 3.2, Fig. 2: when the noise rises, the quality of the variable selection diminishes; however, "
        "GSPPCA appears to be quite robust to noise, even when the data are not generated from the noiseless "
        "model",
        "median F-score high over sigma = 0.05..1 (Fig. 2)",
        _check,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
