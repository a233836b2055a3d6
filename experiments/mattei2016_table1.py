"""Mattei, Bouveyron & Latouche (2016), Table 1: F-scores of SSPCA-CV and GSPPCA for model selection.

Protocol (Sec. 3.3): the framework of Sec. 3.2 (model (3), ``W`` standard Gaussian) with ``p = 100``,
``d = 10``, ``sigma = 0.6`` and ``n`` in {p/2, p, 2p}. GSPPCA (:class:`repro.GSPPCA`, ``d = 10``, ``q`` by the
evidence) and SSPCA-CV (:class:`repro.baselines.SSPCA`, ``d = 10``, one global support through the l1/l2
norm on the rows of the loadings, penalty chosen by 5-fold cross-validation on the reconstruction error)
select the variables; the table gives the mean and standard deviation of the F-score against the true
support.

Choices the paper leaves open, and reductions
---------------------------------------------
* **q** (not given): ``q = 20``, the value used for Fig. 2 (``experiments/mattei2016_fig2.py``).
* **SSPCA**: the authors' MATLAB code is not available here; our SSPCA solves the penalized factorization
  of Jenatton et al. with the group norm on the rows (the globally sparse case) by proximal block-coordinate
  descent. Its CV grid: 20 values of ``alpha / alpha_max`` from 1 to 1e-3 (geometric); folds of the rows.
* **What the CV scores** ("cross-validation on the reconstruction error": which reconstruction is not
  said). Decided: the held-out rows are reconstructed by unpenalized PCA refitted on the training rows of
  the selected variables (``cv_score="refit"``, :mod:`repro.baselines.sspca`), so that the CV chooses a
  *support*, as the table's F-score judges it. The other reading, the held-out rows reconstructed on the
  penalized (shrunken) loadings, was this module's earlier protocol; its committed run (20 runs
  per ``n``) gave F = 0.783, 0.838, 0.808 with 32.6, 29.0, 30.7 variables selected where 20 are true:
  the shrinkage makes the held-out error keep falling past the true support. That reading is not run
  again here (it doubles the cost); ``SSPCA(cv_score="shrunk")`` runs it.
* **Runs**: 50 per ``n`` (``RUNS``), as published (20 earlier, for time: one SSPCA-CV fit costs
  100 fits of SSPCA, about 1-3 s on a 2-core machine). The standard deviations are those of the
  runs (ddof = 1).
* **VEM cap**: every GSPPCA fit records whether its VEM stopped at ``max_iter`` (``capped``); the count is
  in the claim's note.
* The published GSPPCA cell for ``n = p`` reads "0.985 +/- 0.34", read here as 0.985 +/- 0.034 (an F-score
  in [0, 1] with a median near 1 cannot have a standard deviation of 0.34 and a mean of 0.985).
* ``--quick``: 1 run, ``n`` in {50, 200}, a 3-fold CV.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from experiments._mattei import capped_note
from experiments.runner import _common
from experiments.runner.claims import NOT_REPRODUCED, PARTIAL, REPRODUCED, Claim, Outcome
from repro import GSPPCA
from repro.baselines import SSPCA
from repro.gsppca import make_globally_sparse
from repro.metrics import fscore_selection

TITLE = "Mattei et al. (2016) Table 1: F-scores of SSPCA-CV and GSPPCA (p = 100, d = 10, sigma = 0.6)"

P, D, Q, SIGMA = 100, 10, 20, 0.6
NS = (50, 100, 200)
RUNS = 50
PUBLISHED = {
    ("SSPCA-CV", 50): (0.944, 0.061),
    ("SSPCA-CV", 100): (0.985, 0.022),
    ("SSPCA-CV", 200): (1.0, 0.0),
    ("GSPPCA", 50): (0.97, 0.071),
    ("GSPPCA", 100): (0.985, 0.034),
    ("GSPPCA", 200): (1.0, 0.0),
}
METHODS = ("SSPCA-CV", "GSPPCA")


def compute(cfg: _common.Config) -> pd.DataFrame:
    ns = (50, 200) if cfg.quick else NS
    runs = 1 if cfg.quick else RUNS
    folds = 3 if cfg.quick else 5
    rows = []
    for n in ns:
        for r in range(runs):
            X, v = make_globally_sparse(n, P, D, Q, sigma=SIGMA, random_state=cfg.rng(n, r))
            g = GSPPCA(D, random_state=r).fit(X)
            s = SSPCA(D, cv=folds, random_state=cfg.rng(n, r, 1)).fit(X)
            for method, sel in (("GSPPCA", g.support_), ("SSPCA-CV", s.support_)):
                rows.append(
                    {
                        "method": method,
                        "n": n,
                        "run": r,
                        "fscore": fscore_selection(sel, v),
                        "n_selected": int(sel.sum()),
                        "capped": (not g.vem_.converged) if method == "GSPPCA" else False,
                        # the fit's continuous outcome, so `repro verify` sees a change of the data
                        # (sigma, seeds) that leaves the F-scores as they were
                        "log_evidence": float(np.max(g.evidence_path_)) if method == "GSPPCA" else np.nan,
                    }
                )
    return pd.DataFrame(rows)


def _stats(df):
    return df.groupby(["method", "n"]).fscore.agg(["mean", "std", "size"])


def table(df: pd.DataFrame, cfg: _common.Config) -> str:
    st = _stats(df)
    ns = sorted(df.n.unique())
    lines = [
        f"F-score over {int(st['size'].max())} runs (published: 50), p = {P}, d = {D}, q = {Q}, "
        f"sigma = {SIGMA}",
        "",
        "| method | " + " | ".join(f"n = {n}" for n in ns) + " |",
        "|---|" + "---|" * len(ns),
    ]
    for m in METHODS:
        cells = [f"{st.loc[(m, n), 'mean']:.3f} +/- {st.loc[(m, n), 'std']:.3f}" for n in ns]
        pub = [f"{PUBLISHED[(m, n)][0]:g} +/- {PUBLISHED[(m, n)][1]:g}" for n in ns]
        lines.append(f"| {m} (reproduced) | " + " | ".join(cells) + " |")
        lines.append(f"| {m} (published) | " + " | ".join(pub) + " |")
    return "\n".join(lines) + "\n"


def plot(df: pd.DataFrame, cfg: _common.Config):
    import matplotlib.pyplot as plt

    st = _stats(df).reset_index()
    fig, ax = plt.subplots(figsize=(4.6, 2.8))
    ns = sorted(df.n.unique())
    x = np.arange(len(ns))
    for i, m in enumerate(METHODS):
        g = st[st.method == m].set_index("n").loc[ns]
        key = "SSPCA" if m.startswith("SSPCA") else m
        ax.errorbar(
            x + (i - 0.5) * 0.2,
            g["mean"],
            yerr=g["std"],
            fmt="o",
            capsize=3,
            label=m,
            color=_common.method_style(key).get("color"),
        )
        pub = [PUBLISHED[(m, n)][0] for n in ns]
        ax.plot(x + (i - 0.5) * 0.2, pub, "x", color=_common.method_style(key).get("color"), ms=7)
    ax.plot([], [], "x", color="gray", label="published mean")
    ax.set_xticks(x, [f"n = {n}" for n in ns])
    ax.set_ylabel("F-score (mean +/- sd)")
    ax.set_ylim(0.5, 1.05)
    ax.legend(loc="lower right")
    fig.tight_layout()
    return fig


def _cell_ok(mean, pub):
    return abs(mean - pub[0]) <= max(pub[1], 0.03)


def _check_row(method):
    def check(df):
        st = _stats(df)
        ns = sorted(df.n.unique())
        ok = [_cell_ok(st.loc[(method, n), "mean"], PUBLISHED[(method, n)]) for n in ns]
        sel = df[df.method == method].groupby("n").n_selected.mean()
        txt = ", ".join(
            f"n={n}: {st.loc[(method, n), 'mean']:.3f} +/- {st.loc[(method, n), 'std']:.3f}" for n in ns
        )
        return Outcome(
            txt,
            REPRODUCED if all(ok) else (PARTIAL if any(ok) else NOT_REPRODUCED),
            "a cell reproduces when its mean is within the published sd (at least 0.03) of the published "
            f"mean; {sum(ok)}/{len(ok)} cells do; {int(st['size'].max())} runs (paper: 50); mean number "
            f"selected (true q = {Q}): "
            + ", ".join(f"n={n}: {sel.loc[n]:.1f}" for n in ns)
            + (
                ". CV on a PCA refit of the selected variables (module docstring; scored on the shrunken "
                "loadings it over-selected: F 0.783, 0.838, 0.808)"
                if method == "SSPCA-CV"
                else "; " + capped_note(df[df.method == "GSPPCA"])
            ),
        )

    return check


def _check_similar(df):
    st = _stats(df)
    ns = sorted(df.n.unique())
    gaps = [abs(st.loc[("GSPPCA", n), "mean"] - st.loc[("SSPCA-CV", n), "mean"]) for n in ns]
    low = min(st.loc[(m, n), "mean"] for m in METHODS for n in ns)
    similar, accurate = max(gaps) <= 0.05, low >= 0.9
    return Outcome(
        f"largest gap between the means {max(gaps):.3f}; lowest mean {low:.3f}",
        REPRODUCED if similar and accurate else (PARTIAL if similar or accurate else NOT_REPRODUCED),
        "very similar = means within 0.05 at every n; accurate = every mean >= 0.9 (thresholds fixed before "
        "the run)",
    )


CLAIMS = [
    Claim(
        "table1-gsppca",
        "Table 1: F-score of GSPPCA for n = p/2, p, 2p",
        "0.97 +/- 0.071, 0.985, 1 +/- 0",
        _check_row("GSPPCA"),
    ),
    Claim(
        "table1-sspca-cv",
        "Table 1: F-score of SSPCA-CV for n = p/2, p, 2p",
        "0.944 +/- 0.061, 0.985 +/- 0.022, 1 +/- 0",
        _check_row("SSPCA-CV"),
    ),
    Claim(
        "similar-and-accurate",
        "Sec. 3.3: the performances of the two algorithms are very similar and accurate",
        "",
        _check_similar,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
