"""Mattei, Bouveyron & Latouche (2016), Figure 1: the introductory example of GSPPCA.

Protocol (Sec. 3.1): ``n = 50`` observations from model (3), ``p = 30``, ``d = 5``, ``q = 10``,
every entry of ``W`` standard Gaussian (:func:`repro.gsppca.make_globally_sparse`). GSPPCA
(:class:`repro.GSPPCA`, ``d = 5``): the VEM gives ``u`` (left panel: ``u`` sorted in decreasing order,
dark blue, with the true ``v`` of the same variables, pale blue); the exact log evidence (Theorem 2,
corrected; ``alpha`` maximized per model, ``sigma1`` the PPCA noise estimate) of the 30 nested models
along that ranking (right panel).

Choices the paper leaves open
-----------------------------
* **Noise**: ``sigma = 0.1`` (model (3) needs one; the text does not give it). The example is the first of
  ``N_REPLICATES = 20`` data sets drawn from ``--seed`` (replicate 0 is drawn); the others are there to say
  whether replicate 0 is typical (the claim's note gives how many replicates also peak at ``q = 10``).
* **VEM start**: the PPCA maximum-likelihood loadings with a random rotation (``random_state`` = replicate).
  Whether each VEM stopped at its cap is recorded (``capped``) and counted in the claim's note (before
  the VEM's exact steps it crawled at this noise and hit its 1000-iteration cap in 20/20 replicates).
* ``--quick``: 3 replicates.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from experiments._mattei import capped_note
from experiments.runner import _common
from experiments.runner.claims import NOT_REPRODUCED, PARTIAL, REPRODUCED, Claim, Outcome
from repro import GSPPCA
from repro.gsppca import make_globally_sparse

TITLE = "Mattei et al. (2016) Fig. 1: GSPPCA on the introductory example (sorted u, evidence path)"

N, P, D, Q = 50, 30, 5, 10
SIGMA = 0.1
N_REPLICATES = 20


def compute(cfg: _common.Config) -> pd.DataFrame:
    rows = []
    for rep in range(3 if cfg.quick else N_REPLICATES):
        X, v = make_globally_sparse(N, P, D, Q, sigma=SIGMA, random_state=cfg.rng(rep))
        m = GSPPCA(D, random_state=rep).fit(X)
        order = m.ranking_
        for rank, k in enumerate(order, start=1):
            rows.append(
                {
                    "replicate": rep,
                    "rank": rank,
                    "variable": int(k),
                    "u": float(m.u_[k]),
                    "v_true": int(v[k]),
                    "q": rank,
                    "log_evidence": float(m.evidence_path_[rank - 1]),
                    "selected_q": m.n_selected_,
                    "n_iter": m.n_iter_,
                    "capped": not m.vem_.converged,
                }
            )
    return pd.DataFrame(rows)


def plot(df: pd.DataFrame, cfg: _common.Config):
    g = df[df.replicate == 0].sort_values("rank")
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(7.0, 2.8))
    a1.plot(g["rank"], g.v_true, "o", color="#9ecae1", ms=5, label="true v")
    a1.plot(g["rank"], g.u, "o", color="#08519c", ms=3.5, label="estimated u (sorted)")
    a1.set_xlabel("Variables (sorted by u)")
    a1.set_ylabel("u")
    a1.set_ylim(-0.05, 1.08)
    a1.legend(loc="center right")
    a2.plot(g.q, g.log_evidence, "-o", color="#08519c", ms=3)
    best = g.loc[g.log_evidence.idxmax()]
    a2.axvline(Q, color="gray", ls="--", lw=0.8, label=f"true q = {Q}")
    a2.plot([best.q], [best.log_evidence], "*", color="tab:red", ms=10, label=f"max at q = {int(best.q)}")
    a2.set_xlabel("Number of selected variables q")
    a2.set_ylabel("Log evidence")
    a2.legend(loc="lower right")
    fig.tight_layout()
    return fig


def _check(df):
    g = df[df.replicate == 0]
    q_hat = int(g.loc[g.log_evidence.idxmax(), "q"])
    top = g.sort_values("rank").head(Q)
    ranking_ok = bool(top.v_true.all())
    per = df.groupby("replicate").apply(
        lambda h: int(h.loc[h.log_evidence.idxmax(), "q"]), include_groups=False
    )
    rk = df.groupby("replicate").apply(
        lambda h: bool(h.sort_values("rank").head(Q).v_true.all()), include_groups=False
    )
    ok = q_hat == Q and ranking_ok
    return Outcome(
        f"example: evidence maximal at q = {q_hat}, top {Q} of u = true support: {ranking_ok}; "
        f"over {len(per)} replicates: max at q = {Q} in {int((per == Q).sum())}, "
        f"true ranking in {int(rk.sum())}",
        REPRODUCED if ok else (PARTIAL if (q_hat == Q or ranking_ok) else NOT_REPRODUCED),
        f"sigma = {SIGMA} (not given in the paper); the verdict is on the drawn example (replicate 0); "
        + capped_note(df.groupby("replicate").first())
        + f" (VEM iterations {int(df.n_iter.min())}-{int(df.n_iter.max())})",
    )


CLAIMS = [
    Claim(
        "evidence-max-true-model",
        "Sec. 3.1, Fig. 1: u captures the true ranking of the variables and the model with the largest "
        "evidence is actually the true one (q = 10)",
        "max at q = 10",
        _check,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
