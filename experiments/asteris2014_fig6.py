"""Asteris, Papailiopoulos & Dimakis (2014), Figure 6: LRS spectra (UCI), variance vs cardinality.

The 531 IRAS Low Resolution Spectrometer spectra in 93 bands, centred only (``A`` is the empirical covariance,
Sec. 1; see :mod:`experiments.asteris2014_fig4`). Algorithm 3 (``d = 3``, 1e4 random samples) for every
``k = 1..93`` in one pass; EM (Sigg & Buhmann 2008, non-negative) for every ``k``, best of 5 random restarts;
the rigorous deterministic-net bound shaded; the paper's bound (Theorem 2's form) as in
:mod:`experiments.asteris2014_fig4`. ``--quick``: 1000 samples, EM on 4 ``k`` with 1 restart.

* **Readings of A** over the whole curve (rows "Alg. 3 (reading of A)"): centred, uncentred ``X'X/m`` and
  correlation, because the paper's "climbs to nearly 93% ... where the computed PC is no longer sparse" is
  a shape that the centred data cannot show if Alg. 3's component stops growing (the claim's note gives its
  non-zeros at k = 20 and 90); the claim is checked on each reading and says which.
* **"Sharper decay ... tighter guarantees"**: the same rows for the centred CBCL faces (``k = 1..361``) and
  the Armstrong leukemia data (40 ``k`` up to 1000), so ``lambda_4 / lambda_1`` and the certificates of the
  three data sets are compared in one run.

* **The certified optimum** (:func:`repro.optimal_sparse_pca`, ``x >= 0``, black) at every
  ``k = 1..93``, each search capped at 1000 nodes (a node cap, not seconds, so the rows do not depend on
  the machine's load), and every one proven: ``k = 1..10`` by the search (at most 19 nodes), ``k = 11`` at
  the root by the DNN bound (:func:`repro.optimal.dnn.dnn_bound`: ``lambda_max(C + N)`` with
  ``N >= 0``, a bound on the non-negative optimum at every ``k``; here within 1.6e-10 of the optimum, whose
  11 bands are the non-negative optimum without a cardinality constraint), and ``k = 12..93`` with no
  search: ``opt(11) <= opt(k) <= `` the DNN bound (``opt_nodes`` 0). Before the DNN bound, ``k = 11`` took
  861 nodes and ``k >= 12`` stopped at certified gaps of 2.1-8.4% after 1000 nodes (17 s per ``k``). The
  CSV's ``of_optimum`` gives each method's variance over it. ``--quick``: ``k = 1..3``, 200 nodes, no EM
  start.

Cost of a full run: about 12 s before the whole curve of optima; the optimum at all 93 ``k`` measured 15 s
alone on a 2-core machine under load.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from experiments._asteris import (
    N_SAMPLES,
    add_optimum_ratio,
    check_at_least,
    check_certified_range,
    check_similar,
    check_vs_apriori,
    curves,
    optimum_rows,
    plot_curves,
    reading_rows,
)
from experiments.runner import _common
from experiments.runner.claims import NOT_REPRODUCED, PARTIAL, REPRODUCED, Claim, Outcome

CLIMB_FROM, CLIMB_TO = 20, 90  # "for k = 20 ... at least 86%; for values closer to k = 90 ... nearly 93%"
NEARLY_93 = (0.91, 0.95)
OPT_KS, OPT_NODES = range(1, 94), 1000  # the certified optimum: every k proven (docstring)

TITLE = "Asteris et al. (2014) Fig. 6: LRS spectra (93 bands), normalized variance vs k, Alg. 3 vs EM"


def compute(cfg: _common.Config) -> pd.DataFrame:
    from data_fetch import load_cbcl_faces, load_leukemia_armstrong, load_lrs

    raw = load_lrs().X
    X = _common.preprocess(raw, "center")
    q = cfg.quick
    S = 1000 if q else N_SAMPLES
    df = curves(
        X,
        dataset="LRS",
        kmax=X.shape[1],
        em_ks=(10, 20, 50, 90) if q else range(1, X.shape[1] + 1),
        cfg=cfg,
        n_samples=S,
        em_restarts=1 if q else 5,
    )
    opt = optimum_rows(X, range(1, 4) if q else OPT_KS, dataset="LRS", lam1=float(df.lambda1.iloc[0]),
                       max_nodes=200 if q else OPT_NODES, root_em=not q)  # fmt: skip
    # the two readings of A beyond the centred one, over the whole curve (the climb is a curve's shape)
    readings = reading_rows(raw, np.arange(1, X.shape[1] + 1), dataset="LRS", cfg=cfg, n_samples=S)
    # "sharper decay than the previous examples, yielding tighter guarantees": Alg. 3's certificate on the
    # centred CBCL faces (k = 1..361) and leukemia (k on a grid up to 1000), as in Figs. 4-5
    faces = load_cbcl_faces().X / 255.0
    leuk = load_leukemia_armstrong().X
    if q:
        faces, leuk = faces[:600], leuk[:, :2000]
    kl = np.unique(np.geomspace(1, 200 if q else 1000, 40).astype(int))
    others = [
        reading_rows(faces, np.arange(1, faces.shape[1] + 1), dataset="CBCL", cfg=cfg, n_samples=S,
                     readings=("center",)),
        reading_rows(leuk, kl, dataset="leukemia", cfg=cfg, n_samples=S, readings=("center",)),
    ]  # fmt: skip
    return add_optimum_ratio(pd.concat([df, readings, *others, opt], ignore_index=True))  # new rows last


def _lrs(df):
    return df[df.dataset == "LRS"]


def plot(df: pd.DataFrame, cfg: _common.Config):
    return plot_curves(_lrs(df), "LRS (n = 93 bands)")


def _climb(sub, col):
    """Certificate at k = 20, at k = 90, and the rise between them."""
    sub = sub.set_index("cardinality")[col]
    at20, at90 = float(sub.loc[CLIMB_FROM]), float(sub.loc[CLIMB_TO])
    return at20, at90, at90 - at20


def _check_k90(df):
    df = _lrs(df)
    sp = df[df.method == "Spannogram"]
    rd = df[df.method == "Alg. 3 (reading of A)"]
    parts, climbs = [], []
    names = {"none": "uncentred X'X/m", "standardize": "correlation"}
    cases = [("centred", sp)] + [(names[h], rd[rd.preprocessing == h]) for h in ("none", "standardize")]
    for label, sub in cases:
        for form, col in (("our bound", "certified"), ("Theorem 2's form", "certified_theorem2")):
            if len(sub):
                a, b, c = _climb(sub, col)
                climbs.append(c >= 0.035 and NEARLY_93[0] <= b <= NEARLY_93[1])
                parts.append(f"{label}, {form}: {100 * a:.1f}% -> {100 * b:.1f}% ({100 * c:+.1f} points)")
    nnz = sp.set_index("cardinality")["nnz"]
    return Outcome(
        f"certificate at k={CLIMB_FROM} -> k={CLIMB_TO}: " + "; ".join(parts),
        REPRODUCED if any(climbs[:2]) else (PARTIAL if any(climbs) else NOT_REPRODUCED),
        f"'climbs to nearly 93%' read as: the certificate rises by at least 3.5 points (half the published "
        f"86% -> 93%) from k={CLIMB_FROM} to k={CLIMB_TO} and is within {100 * NEARLY_93[0]:g}-"
        f"{100 * NEARLY_93[1]:g}% there; partly if only another reading of A does it. On the centred data "
        f"(the paper's A, Sec. 1) Alg. 3's component has {int(nnz.loc[CLIMB_FROM])} non-zeros at "
        f"k={CLIMB_FROM} and {int(nnz.loc[CLIMB_TO])} at k={CLIMB_TO}"
        + (
            " (Vc has no more positive entries at the best c), so its value and certificate cannot change "
            "between them: it never becomes 'non-negative but no longer sparse' as the paper says at k = 90"
            if nnz.loc[CLIMB_TO] == nnz.loc[CLIMB_FROM]
            else ""
        ),
    )


def _check_decay(df):
    rd = df[(df.method == "Alg. 3 (reading of A)") & (df.preprocessing == "center")]
    lam, cmin, cmed, cmin2 = {}, {}, {}, {}
    for name, g in rd.groupby("dataset"):
        lam[name] = float(g.lambda_next_ratio.iloc[0])
        cmin[name], cmed[name] = float(g.certified.min()), float(g.certified.median())
        cmin2[name] = float(g.certified_theorem2.min())
    others = [n for n in lam if n != "LRS"]
    decay = all(lam["LRS"] < lam[n] for n in others)
    tighter = all(cmin["LRS"] > cmin[n] and cmed["LRS"] > cmed[n] for n in others)
    tighter2 = all(cmin2["LRS"] > cmin2[n] for n in others)
    text = "; ".join(
        f"{n}: lambda_4/lambda_1 {lam[n]:.3f}, certificate min {100 * cmin[n]:.1f}% median "
        f"{100 * cmed[n]:.1f}% (Theorem 2's form min {100 * cmin2[n]:.1f}%)"
        for n in ["LRS", *others]
    )
    return Outcome(
        text,
        REPRODUCED
        if (decay and tighter and tighter2)
        else (PARTIAL if (decay or tighter) else NOT_REPRODUCED),
        "both halves tested: (1) the decay, lambda_(d+1)/lambda_1 with d = 3 (the quantity of Eq. 4), is "
        "smaller for LRS than for CBCL and leukemia; (2) Alg. 3's certificate (min and median over each "
        "figure's curve: LRS k = 1..93, CBCL 1..361, leukemia 40 k up to 1000; centred data) is higher for "
        "LRS, with our bound and with Theorem 2's form. 'Because' is the theory's (Eq. 4); the data can "
        "only show both halves together",
    )


def _on_lrs(check):
    def wrapped(df):
        return check(_lrs(df))

    return wrapped


CLAIMS = [
    Claim(
        "lrs-k20-86",
        "Sec. 7, Fig. 6: for k = 20 the extracted non-negative component captures at least 86% of the "
        "maximum variance",
        ">= 86%",
        _on_lrs(check_at_least(20, 0.86)),
    ),
    Claim(
        "lrs-k90-93",
        "Sec. 7, Fig. 6: for values closer to k = 90 (non-negative but no longer sparse) this value climbs "
        "to nearly 93%",
        "about 93%",
        _check_k90,
    ),
    Claim(
        "lrs-alg3-em-similar",
        "Sec. 7, Fig. 6: Alg. 3 (d = 3, eps = 0.1) and the EM algorithm exhibit similar performance",
        "",
        _on_lrs(check_similar),
    ),
    Claim(
        "lrs-decay-tighter",
        "Sec. 7: the empirical covariance of LRS exhibits sharper decay in the spectrum than the previous "
        "examples, yielding tighter approximation guarantees",
        "",
        _check_decay,
    ),
    Claim(
        "lrs-bound-vs-apriori",
        "Abstract: the data-dependent bound is significantly tighter than a-priori bounds (LRS)",
        "",
        _on_lrs(check_vs_apriori),
    ),
    Claim(
        "lrs-within-40-90",
        "Abstract / Sec. 1: for all tested datasets the algorithm is provably within 40%-90% of the optimum "
        "(LRS)",
        "40-90%",
        _on_lrs(check_certified_range),
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
