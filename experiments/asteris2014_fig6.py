"""Asteris, Papailiopoulos & Dimakis (2014), Figure 6: LRS spectra (UCI), variance vs cardinality.

The 531 IRAS Low Resolution Spectrometer spectra in 93 bands, centred only (``A`` is the empirical covariance,
Sec. 1; see :mod:`experiments.asteris2014_fig4`). Algorithm 3 (``d = 3``, 1e4 random samples) for every
``k = 1..93`` in one pass; EM (Sigg & Buhmann 2008, non-negative) for every ``k``, best of 5 random restarts;
the rigorous deterministic-net bound shaded. ``--quick``: 1000 samples, EM on 4 ``k`` with 1 restart.

Cost of a full run: a few seconds.
"""

from __future__ import annotations

import pandas as pd

from experiments._asteris import (
    N_SAMPLES,
    at_k,
    check_at_least,
    check_certified_range,
    check_similar,
    curves,
    plot_curves,
)
from experiments.runner import _common
from experiments.runner.claims import NOT_REPRODUCED, PARTIAL, REPRODUCED, Claim, Outcome

TITLE = "Asteris et al. (2014) Fig. 6: LRS spectra (93 bands), normalized variance vs k, Alg. 3 vs EM"


def compute(cfg: _common.Config) -> pd.DataFrame:
    from data_fetch import load_lrs

    X = _common.preprocess(load_lrs().X, "center")
    q = cfg.quick
    return curves(
        X,
        dataset="LRS",
        kmax=X.shape[1],
        em_ks=(10, 20, 50, 90) if q else range(1, X.shape[1] + 1),
        cfg=cfg,
        n_samples=1000 if q else N_SAMPLES,
        em_restarts=1 if q else 5,
    )


def plot(df: pd.DataFrame, cfg: _common.Config):
    return plot_curves(df, "LRS (n = 93 bands)")


def _check_k90(df):
    sp = df[df.method == "Spannogram"]
    near = sp[(sp.cardinality >= 85) & (sp.cardinality <= 93)]
    v = at_k(df, "Spannogram", 90)
    lo, hi = float(near.certified.min()), float(near.certified.max())
    return Outcome(
        f"{100 * v:.1f}% certified at k=90 ({100 * lo:.1f}-{100 * hi:.1f}% over k = 85..93)",
        REPRODUCED if lo >= 0.91 else (PARTIAL if hi >= 0.91 else NOT_REPRODUCED),
        "'climbs to nearly 93%' read as a guarantee of at least about 93% (>= 91%) at every k in 85..93; a "
        "higher certified value is a tighter certificate, not a contradiction",
    )


CLAIMS = [
    Claim(
        "lrs-k20-86",
        "Sec. 7, Fig. 6: for k = 20 the extracted non-negative component captures at least 86% of the "
        "maximum variance",
        ">= 86%",
        check_at_least(20, 0.86),
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
        check_similar,
    ),
    Claim(
        "lrs-within-40-90",
        "Abstract / Sec. 1: for all tested datasets the algorithm is provably within 40%-90% of the optimum "
        "(LRS)",
        "40-90%",
        check_certified_range,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
