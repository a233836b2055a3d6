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
* **The paper's bound** (Sec. 7 computes it "based on Theorem 2 and the output of Alg. 3"; its supplement is
  not available): read as ``OPT <= x'A_d x / (1 - eps) + lambda_{d+1}`` with ``eps = 0.1``
  (:func:`experiments._asteris.theorem2_bound`; ``bound_theorem2``, ``certified_theorem2``). It differs from
  ours by the net factor only (``1 / (1 - eps)`` against the grid's ``1 / cos^2 theta``, about 1.0006):
  ``bound_spectral`` equals ``bound`` at the published ``k``, so our use of the residual variances is not why
  our certificate is higher. **Readings of A** (rows "Alg. 3 (reading of A)" at ``k = 180``): centred
  (the paper's, Sec. 1), uncentred ``X'X/m`` and the correlation matrix, each with both certificates.
* **NSPCA misses**: for each ``k`` NSPCA does not reach, the tightest beta bracket of the search
  (``nnz_below``, ``nnz_above``, ``beta_gap``): the claim checks that every miss is a jump of NSPCA's
  cardinality over ``k`` at a converged bracket, which is what "does not allow a precise control" says.
* **Speed** (Sec. 8, rows "speed"): one component at ``k = 180`` by :class:`repro.spannogram.SpannogramPCA`
  and :class:`repro.EMSparsePCA` (non-negative), both with default settings from the data matrix,
  interleaved, 5 samples; "similar speed" read as within 3x, decided with a 15% band that the range of the
  5 samples must clear (a timing row). A fit
  takes 0.02-0.1 s, so each sample is the CPU time of this process per fit over at least 0.3 s of repeated
  fits, BLAS on one thread (the numba kernels are single-threaded): with one fit per sample the verdict
  flipped between runs (4.76x too close to call, then 5.14x not reproduced). The claim is about the work
  of our two implementations; the paper's "a few seconds" (MATLAB, its machine) is not compared in seconds.
  Measured 2026-11-25: about 5x, so not reproduced: our Alg. 3 makes 1e4 samples of an O(n)
  sort-and-score pass over the 361 pixels for every ``k <= 180`` at once, while our EM (numba, a few
  iterations of an n x 361 product) is fast; the paper compared the authors' MATLAB codes, where
  interpreter overhead can even out the two.
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
* **The certified optimum** (:func:`repro.optimal_sparse_pca`, ``x >= 0``, black) at ``k = 1..20``
  on the centred covariance (p = 361), each search capped at 2000 nodes (a node cap, not seconds), every one
  proven: 0-119 nodes at ``k = 1..10``, 187-1111 at ``k = 11..20``. The root incumbent is already optimal at
  every ``k`` (the search never improves it): the nodes are the proof. ``of_optimum`` in the CSV gives Alg.
  3's variance over it at every ``k`` (0.980-1.000), EM's at ``k = 10, 20`` (1.000, 0.9996) and NSPCA's at
  ``k = 10`` (0.761). Before the search's speed-ups for CBCL (the Gershgorin and residual
  bounds' row sums by selection, the swap search's skip test, the "in" child's reuse of its parent's l1
  bound, the split l1 bound's skip test) ``k = 11..19`` took 187-771 nodes and 3-16 s CPU each and
  ``k = 20`` stopped at a gap of 0.23% at 1000 nodes (29 s; 1117 nodes uncapped); the node counts are the
  same but at ``k = 19`` (773) and ``k = 20`` (1111), and a node at the top of the tree (all 361 features
  allowed) costs 10-15 ms instead of about 35. Why ``k = 11..20`` need hundreds of nodes: the l1 bound at
  the root is 2.6% (``k = 15``) above the optimum, and it depends on the allowed set only, so a node is
  pruned only once about three of the features at the centre of the face are fixed out, or when about
  ``k - 6`` are fixed in (then the 2 x 2 forced-in bounds fix 100-200 features out); a DNN-strengthened l1
  dual (``lambda_max(C + N - rho 11') + rho k``, ``N >= 0``) closes only part of the root gap (2.6% -> 2.0%
  at ``k = 15``, measured with 1000 L-BFGS steps, far too dear per node).
  ``--quick``: ``k = 1..3``, 200 nodes, no EM start.

Cost of a full run on a 2-core machine: about 12 s before the optimum was drawn; 27 s with
``k = 1..10`` (the optimum 5.4 s of it); with ``k = 1..20`` 124 s wall (70 s CPU) on a machine loaded by
another solve, the optimum 45 s of it (measured 2026-11-28; a quiet machine's figure is for the lead's
full run).

References
----------
M. Asteris, D. Papailiopoulos and A. Dimakis. Nonnegative sparse PCA with provable guarantees. ICML 2014.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from experiments._asteris import (
    EM_RESTARTS,
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
    speed_rows,
)
from experiments.runner import _common
from experiments.runner.claims import NOT_REPRODUCED, PARTIAL, REPRODUCED, Claim, Outcome, call_timing

OPT_KS, OPT_NODES = range(1, 21), 2000  # the certified optimum: every k proven within the cap (docstring)
SPEED_K = 180  # the k of the paper's certificate sentence
SPEED_FOLD = 3.0  # "similar speed, both in the order of a few seconds": within a factor of 3 either way
SPEED_REPEATS = 5  # samples of the speed row, each the CPU time per fit over >= 0.3 s of fits

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
    df = curves(
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
    readings = reading_rows(faces / 255.0, [180], dataset="CBCL", cfg=cfg, n_samples=1000 if q else N_SAMPLES)
    speed = speed_rows(X, SPEED_K, cfg=cfg, repeats=3 if q else SPEED_REPEATS, min_seconds=0.05 if q else 0.3)
    opt = optimum_rows(X, range(1, 4) if q else OPT_KS, dataset="CBCL", lam1=float(df.lambda1.iloc[0]),
                       max_nodes=200 if q else OPT_NODES, root_em=not q)  # fmt: skip
    return add_optimum_ratio(pd.concat([df, readings, speed, opt], ignore_index=True))  # new rows last


def plot(df: pd.DataFrame, cfg: _common.Config):
    return plot_curves(df, "CBCL faces (n = 361)")


def _check_nspca(df):
    ns = df[df.method == "NSPCA"]
    found = ns[ns.found.fillna(False).astype(bool)]
    missed = ns[~ns.found.fillna(False).astype(bool)]
    # a miss is NSPCA's, not the search's, when the bisection closed in on one beta (relative bracket
    # below 1e-3) whose two sides give fewer and more than k non-zeros: the cardinality jumps over k
    jump = (missed.nnz_below < missed.cardinality) & (missed.nnz_above > missed.cardinality)
    jump &= missed.beta_gap <= 1e-3
    widths = (missed.nnz_above - missed.nnz_below).dropna()
    ok = len(found) > 0 and len(missed) > 0 and bool(jump.all())
    return Outcome(
        f"NSPCA reached {len(found)}/{len(ns)} target k; at {int(jump.sum())}/{len(missed)} of the missed k "
        f"the cardinality jumps over k within a beta bracket narrower than 1e-3 (jump widths "
        f"{int(widths.min()) if len(widths) else 0}-{int(widths.max()) if len(widths) else 0} non-zeros)",
        REPRODUCED if ok else (PARTIAL if len(found) and len(missed) else NOT_REPRODUCED),
        "Sec. 7: 'NSPCA does not allow for a precise control of the sparsity of its output; beta was "
        "determined via binary search for each target k; we plot only those k for which a k-sparse component "
        "was extracted': reproduced if the search reaches some k, misses others, and every miss is a jump "
        "of NSPCA's cardinality over k at a converged bracket of beta (so the imprecision is NSPCA's, not "
        "the search's); partly if some misses are not converged jumps",
    )


def _check_nspca_values(df):
    ns = df[(df.method == "NSPCA") & df.found.fillna(False).astype(bool)]
    sp = df[df.method == "Spannogram"].set_index("cardinality")["variance"]
    rel = (sp.loc[ns.cardinality].to_numpy() - ns.variance.to_numpy()) / sp.loc[ns.cardinality].to_numpy()
    lo, hi = (100 * rel.min(), 100 * rel.max()) if len(rel) else (np.nan, np.nan)
    vals = ", ".join(f"k={int(k)}: {v:.3f}" for k, v in zip(ns.cardinality, ns.normalized, strict=True))
    ok = len(rel) > 0 and bool((rel >= -0.01).all())
    return Outcome(
        f"NSPCA x'Ax / lambda_1 at the k it reached: {vals or 'none'}; (Alg. 3 - NSPCA) / Alg. 3: min "
        f"{lo:+.1f}%, max {hi:+.1f}%",
        REPRODUCED if ok else NOT_REPRODUCED,
        "Fig. 4 draws NSPCA's points; the paper's summary (Sec. 1, 8): Alg. 3 'matches or outperforms the "
        "previous state of the art'. Read as: NSPCA no more than 1% above Alg. 3 at every k it reached",
    )


def _check_speed(df):
    sp = df[df.method == "speed"]
    fold = np.maximum(sp.ratio, 1.0 / sp.ratio)
    call = call_timing(fold, SPEED_FOLD)
    return Outcome(
        f"Alg. 3 / EM time for one component at k={SPEED_K}: {call.text('.2f', 'x')} (median of "
        f"{sp.ratio.median():.2f}x as Alg. 3 / EM)",
        call.verdict,
        f"Sec. 8: 'in practice we observed similar speed, both in the order of a few seconds' read as: the "
        f"slower within {SPEED_FOLD:g}x of the faster (median of {len(sp)} interleaved samples, each the "
        f"CPU time per fit over >= 0.3 s of fits, one thread; decided with {call.band_text()}); the seconds "
        "themselves are not compared (another machine, MATLAB); both estimators with default settings from "
        "the data matrix. Our Alg. 3 scores every k <= 180 for 1e4 samples (an O(n) sort per sample), our EM "
        "needs a few numba iterations (measured costs of the two codes here; how the authors' MATLAB codes "
        "compared is not known, and no guess is made)",
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
        "cbcl-nspca-values",
        "Sec. 7, Fig. 4: the NSPCA curve (best of restarts, only the k it reaches), with Alg. 3 matching or "
        "outperforming the previous state of the art (Sec. 1, 8)",
        "",
        _check_nspca_values,
    ),
    Claim(
        "cbcl-bound-vs-apriori",
        "Abstract: the data-dependent bound is significantly tighter than a-priori bounds (CBCL)",
        "",
        check_vs_apriori,
    ),
    Claim(
        "alg3-em-speed",
        "Sec. 8: even though the theoretical running time of Alg. 3 scales better than EM, in practice we "
        "observed similar speed, both in the order of a few seconds",
        "similar",
        _check_speed,
        machine_dependent=True,
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
