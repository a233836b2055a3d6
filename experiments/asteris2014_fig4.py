"""Asteris, Papailiopoulos & Dimakis (2014), Figure 4: CBCL faces, normalized variance vs cardinality.

The variance ``x'Ax / lambda_1`` explained by the non-negative ``k``-sparse component of Algorithm 3
(``d = 3``, ``eps = 0.1``: 1e4 random samples, the authors' setting), of the EM algorithm of Sigg & Buhmann
(2008, emPCA with the non-negativity constraint) and of NSPCA (Zass & Shashua 2006, ``beta`` by bisection,
only the ``k`` it reaches), with the region where the unknown optimum lies shaded between the achieved value
and the upper bound.

Setup and choices (the paper leaves them open)
----------------------------------------------
* **Preprocessing**: ``A`` is the empirical covariance (Sec. 1), so the faces are centred only -- no
  standardization (pixels are on one scale, and standardization would change the problem; it also reproduces
  the published shapes: the first PC of the centred faces is nearly non-negative, so the curves rise to about
  1 at large ``k``). Pixels are divided by 255 (a constant factor, invisible in ``x'Ax / lambda_1``) so that
  NSPCA's penalties have a usable scale.
* **Algorithm 3** runs for every ``k = 1..361`` in one pass (:func:`repro.spannogram.spannogram_path`).
* **The bound** (shaded): :func:`repro.spannogram.spannogram_bound` with a deterministic net of 1e4 points on
  the cube's faces -- rigorous, so the optimum *provably* lies in the shaded area, for every method's ``k``
  (``certified`` = value / bound). The bound from Algorithm 3's own random samples (it holds with probability
  ``1 - 1/n`` per ``k``, the form of Theorem 2) and the one with ``lambda_{d+1}`` alone as the residual
  (Theorem 1's route) are in the CSV (``bound_random``, ``bound_spectral``).
* **EM**: :func:`repro.em_sparse_pca.em_sparse_pca_path` with ``nonneg=True``, best of 5 random non-negative
  restarts (the paper: "best results over multiple random restarts"), on ``k = 10, 20, ..., 360``. The curve
  (``variance``) is EM's support with its optimal non-negative weights (renormalized: the non-negative EM
  restricted to the support, Sigg & Buhmann's emPCAopt): the plain EM iterate is a soft-thresholded vector
  whose shrunken weights lose 15-25% of the variance on CBCL (``variance_plain`` in the CSV, drawn thin),
  which no reading of "nearly identical" covers; the paper ran the author's MATLAB code and does not say
  which variant it plots. Both comparisons are in the claim's text. ``EM (PC start)``: the same EM started
  from the first principal component (both signs) -- not the paper's protocol ("randomly initialized"),
  recorded and drawn as grey crosses to show how much of a gap to Alg. 3 comes from EM's random starts.
* **NSPCA**: one component, ``alpha = 1e6`` (scatter matrix of the scaled pixels, ``lambda_1(X'X)`` about
  1.9e4), ``beta`` by bisection for each ``k`` in ``10, 30, ..., 350``
  (:func:`repro.nspca.nspca_for_cardinality`, 2 restarts, 300 sweeps per fit); ``k`` it cannot reach
  exactly are recorded with ``found = False``, not drawn.
* ``--quick``: 600 faces, 1000 samples, EM on 4 ``k`` with 1 restart, NSPCA on 2 ``k``.

Cost of a full run on the shared 2-core machine: about 12 s.

References
----------
M. Asteris, D. Papailiopoulos and A. Dimakis. Nonnegative sparse PCA with provable guarantees. ICML 2014.
"""

from __future__ import annotations

import pandas as pd

from experiments._asteris import (
    EM_RESTARTS,
    N_SAMPLES,
    check_at_least,
    check_certified_range,
    check_similar,
    curves,
    plot_curves,
)
from experiments.runner import _common
from experiments.runner.claims import NOT_REPRODUCED, REPRODUCED, Claim, Outcome

TITLE = (
    "Asteris et al. (2014) Fig. 4: CBCL, normalized variance vs k, Alg. 3 vs EM vs NSPCA, certified region"
)


# --------------------------------------------------------------------------- this figure
def compute(cfg: _common.Config) -> pd.DataFrame:
    from data_fetch import load_cbcl_faces

    faces = load_cbcl_faces().X
    if cfg.quick:
        faces = faces[cfg.rng(0).choice(faces.shape[0], 600, replace=False)]
    X = _common.preprocess(faces, "unit-center")
    q = cfg.quick
    return curves(
        X,
        dataset="CBCL",
        kmax=X.shape[1],
        em_ks=(40, 100, 180, 300) if q else range(10, 361, 10),
        cfg=cfg,
        n_samples=1000 if q else N_SAMPLES,
        em_restarts=1 if q else EM_RESTARTS,
        nspca_ks=(40, 180) if q else range(10, 351, 20),
        nspca_restarts=1 if q else 2,
        nspca_iter=100 if q else 300,
    )


def plot(df: pd.DataFrame, cfg: _common.Config):
    return plot_curves(df, "CBCL faces (n = 361)")


def _check_nspca(df):
    ns = df[df.method == "NSPCA"]
    found = ns[ns.found.fillna(False).astype(bool)]
    sp = df[df.method == "Spannogram"].set_index("cardinality")["variance"]
    below = int((found.variance.to_numpy() <= sp.loc[found.cardinality].to_numpy() * (1 + 1e-9)).sum())
    ok = 0 < len(found) < len(ns)
    return Outcome(
        f"NSPCA reached {len(found)}/{len(ns)} target k; at {below}/{len(found)} of them at or below Alg. 3",
        REPRODUCED if ok else NOT_REPRODUCED,
        "Sec. 7: 'NSPCA does not allow for a precise control of the sparsity ... we plot only those k for "
        "which a k-sparse component was extracted': reproduced if beta-bisection misses some target k but "
        "not all",
    )


CLAIMS = [
    Claim(
        "cbcl-k180-58",
        "Sec. 7, Fig. 4: for k = 180 the extracted component explains at least 58% of the variance of the "
        "true non-negative k-sparse PC",
        ">= 58%",
        check_at_least(180, 0.58),
    ),
    Claim(
        "cbcl-alg3-em-identical",
        "Sec. 7, Fig. 4: Alg. 3 (d = 3, eps = 0.1) and the EM algorithm exhibit nearly identical performance",
        "",
        check_similar,
    ),
    Claim(
        "cbcl-nspca-some-k",
        "Sec. 7: NSPCA does not allow a precise control of the sparsity; beta by binary search, plotted only "
        "for the k it reaches",
        "",
        _check_nspca,
    ),
    Claim(
        "cbcl-within-40-90",
        "Abstract / Sec. 1: for all tested datasets the algorithm is provably within 40%-90% of the optimum "
        "(CBCL)",
        "40-90%",
        check_certified_range,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
