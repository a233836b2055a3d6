"""Asteris, Papailiopoulos & Dimakis (2014), Figure 5: leukemia (Armstrong et al.), variance vs cardinality.

The Armstrong et al. MLL leukemia data, 72 samples x 12582 probe sets, centred only (``A`` is the empirical
covariance, Sec. 1; no standardization: see :mod:`experiments.asteris2014_fig4`), through the 72 x 72 Gram
matrix (the 12582 x 12582 covariance is never formed).

* **Algorithm 3** (``d = 3``, 1e4 random samples) for every ``k = 1..1000`` in one pass
  (:func:`repro.spannogram.spannogram_path`; 1000 is about 8% of the genes, far beyond the paper's
  discussion of ``k = 50``; the full ``k = 1..12582`` curve costs one full sort per sample instead of a
  selection and is timed in :mod:`experiments.bench_spannogram`).
* **Bound** (shaded): the rigorous deterministic-net bound (1e4 points), as in Fig. 4.
* **EM** (Sigg & Buhmann 2008, non-negative, renormalized on its support as in Fig. 4; the plain iterate is
  ``variance_plain``): best of 5 random restarts on a grid of ``k`` (1, 2, 5, 10, 20,
  30, 40, 50, 60, 80, 100, 150, 200, 300, 400, 500, 700, 1000) -- the issue's instruction: all-k pass for the
  spannogram, a grid for EM.
* **EM's start**: random, as the paper states for Fig. 4 ("both the EM and NSPCA algorithms are randomly
  initialized", Sec. 7); EM started from the first PC is recorded too ("EM (PC start)") and both are in the
  claim's text, since the paper's Fig. 5 paragraph does not repeat the start.
* **The paper's bound** and the readings of ``A`` at ``k = 50``: as in :mod:`experiments.asteris2014_fig4`.
* ``--quick``: the first 2000 genes, ``k <= 200``, 1000 samples, 1 EM restart.

* **The certified optimum** (:func:`repro.optimal_sparse_pca`, ``x >= 0``, black) for
  ``k = 1..10``, through the wide route (the 72 x 72 side: features screened by certified bounds, the
  search on the few hundred candidates' covariance, ``k = 1..10`` in turn), each cardinality's search
  capped at 1000 nodes (a node cap, not seconds: rows independent of the machine's load). Proven at
  ``k = 1..6`` (at most 785 nodes); at ``k = 7`` the cap stops the proof (gap about 19%), and its looser
  bound screens out too few genes at ``k = 8..10`` (more than 1500 candidates: the screening bound alone,
  gaps 43-77%): those are drawn as upper bounds, labelled so from each result's ``proven``. Without the
  cap every ``k = 1..10`` is proven (2889, 14263, 11643 and 74829 nodes at ``k = 7..10``; about 160 s in
  all on a 2-core machine, beyond this experiment's budget). ``of_optimum`` in the CSV: each method's
  variance over the optimum (over the bound where unproven, then a lower bound on the ratio): Alg. 3
  reaches 0.85-0.96 of the proven optimum at ``k = 1..6`` (its certificate vouches for only 0.54-0.90),
  EM from random starts 0.23-0.65 at ``k = 1, 2, 5``. The unproven bounds at ``k = 7..10`` are still
  below the spannogram's.
  ``--quick``: the first 2000 genes, ``k = 1, 2``, 200 nodes, no EM start.

Cost of a full run on a 2-core machine: about 20 s (Algorithm 3 for k = 1..1000 and the bound,
about 3 s each; the optimum about 12 s).
"""

from __future__ import annotations

import pandas as pd

from experiments._asteris import (
    N_SAMPLES,
    add_optimum_ratio,
    at_k,
    check_at_least,
    check_certified_range,
    check_vs_apriori,
    curves,
    optimum_rows,
    plot_curves,
    reading_rows,
)
from experiments.runner import _common
from experiments.runner.claims import NOT_REPRODUCED, PARTIAL, REPRODUCED, Claim, Outcome

TITLE = "Asteris et al. (2014) Fig. 5: leukemia (12582 genes), normalized variance vs k, Alg. 3 vs EM"

KMAX = 1000
EM_KS = (1, 2, 5, 10, 20, 30, 40, 50, 60, 80, 100, 150, 200, 300, 400, 500, 700, 1000)
OPT_KS, OPT_NODES = range(1, 11), 1000  # the certified optimum (docstring: proven at k = 1..6 within the cap)
LOW_K = 100  # "low values of k": k <= 100 (0.8% of the genes)


def compute(cfg: _common.Config) -> pd.DataFrame:
    from data_fetch import load_leukemia_armstrong

    X = load_leukemia_armstrong().X
    if cfg.quick:
        X = X[:, :2000]
    q = cfg.quick
    df = curves(
        _common.preprocess(X, "center"),
        dataset="leukemia",
        kmax=200 if q else KMAX,
        em_ks=EM_KS,
        cfg=cfg,
        n_samples=1000 if q else N_SAMPLES,
        em_restarts=1 if q else 5,
    )
    readings = reading_rows(X, [50], dataset="leukemia", cfg=cfg, n_samples=1000 if q else N_SAMPLES)
    opt = optimum_rows(
        _common.preprocess(X, "center"), range(1, 3) if q else OPT_KS, dataset="leukemia",
        lam1=float(df.lambda1.iloc[0]), max_nodes=200 if q else OPT_NODES, root_em=not q,
    )  # fmt: skip
    return add_optimum_ratio(pd.concat([df, readings, opt], ignore_index=True))  # new rows last


def plot(df: pd.DataFrame, cfg: _common.Config):
    return plot_curves(df, "Leukemia (n = 12582 probe sets)", logx=True)


def _check_low_high(df):
    sp = df[df.method == "Spannogram"].set_index("cardinality")["variance"]
    em = df[df.method == "EM"].set_index("cardinality")["variance"]
    rel = (sp.loc[em.index] - em) / sp.loc[em.index]
    low, high = rel[rel.index <= LOW_K], rel[rel.index > LOW_K]
    low_ok = bool(len(low) and (low >= -1e-9).all() and low.mean() > 0.01)
    pcs = df[df.method == "EM (PC start)"].set_index("cardinality")["variance"]
    relpc = (sp.loc[pcs.index] - pcs) / sp.loc[pcs.index]
    plain = df[df.method == "EM"].set_index("cardinality")["variance_plain"]
    relp = (sp.loc[plain.index] - plain) / sp.loc[plain.index]
    high_ok = bool(len(high) and high.abs().max() <= 0.03)
    return Outcome(
        f"(Alg. 3 - EM) / Alg. 3: k <= {LOW_K}: mean {100 * low.mean():+.2f}%, min {100 * low.min():+.2f}%; "
        f"k > {LOW_K}: max |.| {100 * high.abs().max() if len(high) else float('nan'):.2f}% (plain EM "
        f"iterate: {100 * relp[relp.index <= LOW_K].mean():+.1f}% / "
        f"{100 * relp[relp.index > LOW_K].mean():+.1f}%; EM from the first PC: max |.| "
        f"{100 * relpc.abs().max():.1f}%)",
        REPRODUCED if (low_ok and high_ok) else (PARTIAL if (low_ok or high_ok) else NOT_REPRODUCED),
        f"'outperforms for low k' read as: never below EM and ahead by > 1% on average for k <= {LOW_K}; "
        "'similar for larger k' as: within 3% for every larger k of the grid",
    )


def _check_vs_lambda1(df):
    b = at_k(df, "Spannogram", 50, "bound_normalized")
    return Outcome(
        f"bound at k=50: {100 * b:.1f}% of lambda_1",
        REPRODUCED if b <= 0.8 else (PARTIAL if b < 0.95 else NOT_REPRODUCED),
        "'a significant improvement compared to the trivial bound lambda_1' read as: at most 80% of lambda_1 "
        "at k = 50",
    )


CLAIMS = [
    Claim(
        "leuk-k50-446",
        "Sec. 7, Fig. 5: for k as small as 50 (0.4% of the features) the extracted component captures at "
        "least 44.6% of the variance of the true non-negative k-sparse PC",
        ">= 44.6%",
        check_at_least(50, 0.446),
    ),
    Claim(
        "leuk-alg3-vs-em",
        "Sec. 7, Fig. 5: for low values of k Alg. 3 outperforms the EM algorithm; for larger values the two "
        "exhibit similar performance",
        "",
        _check_low_high,
    ),
    Claim(
        "leuk-bound-vs-lambda1",
        "Sec. 7: the obtained upper bound is a significant improvement compared to the trivial bound "
        "lambda_1",
        "",
        _check_vs_lambda1,
    ),
    Claim(
        "leuk-bound-vs-apriori",
        "Abstract: the data-dependent bound is significantly tighter than a-priori bounds (leukemia)",
        "",
        check_vs_apriori,
    ),
    Claim(
        "leuk-within-40-90",
        "Abstract / Sec. 1: for all tested datasets the algorithm is provably within 40%-90% of the optimum "
        "(leukemia)",
        "40-90%",
        check_certified_range,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
