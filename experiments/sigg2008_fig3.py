"""Sigg & Buhmann (2008), Figure 3: non-negative sparse PCA on the CBCL faces, emPCA (nn) vs NSPCA.

Setup (Sec. 5 and 5.2): the 2429 faces, standardized (zero mean, unit variance per pixel), then projected
onto the orthogonal complement of their first principal component, ``X <- X (I - w1 w1')``, because that
component lies in the non-negative orthant (all 361 loadings have one sign) and the non-negativity
constraint would otherwise be inactive. Variances are ``w'Cw`` with ``C`` the sample covariance (ddof=1) of
the projected data.

* **left**: variance of the first non-negative sparse component vs cardinality ``K``. emPCA (nn): best of
  ten random non-negative starts (Sec. 5.2), every ``K = 1..200``. NSPCA (Zass & Shashua 2006) with one
  component, ``alpha`` in {1e5, 1e6, 1e7}, ``beta`` found for each ``K`` by bisection until the cardinality
  is exactly ``K`` or the relative length of the beta interval is below 1e-5, best of ten random restarts
  (:func:`repro.nspca.nspca_for_cardinality`). NSPCA runs on a grid of twelve ``K`` (``K_GRID``: 1, 5,
  10, 20, 40, 60, 80, 100, 125, 150, 175, 200): each point is a bisection of about 20 fits per restart
  (about 10 s at ``alpha = 1e7``); a grid of every 10 gave the same curves. A ``K`` NSPCA cannot reach at an
  ``alpha`` is recorded with ``found = False`` and not drawn.
* **middle**: cumulative variance vs the number of *orthogonal* components (1..10): emPCA (sparse, signed)
  and emPCA (nn), ``K = 20`` for every component, deflation ``X <- X (I - ww')`` (Eq. 18; for nn components
  orthogonality forces disjoint supports, Eq. 19); NSPCA with ten components, ``alpha = 1e8`` and ``beta``
  tuned by bisection to a joint cardinality ``||U||_0 = 200``
  (:func:`repro.nspca.nspca_for_cardinality` with ``n_components=10``; the bracketing starts at ``1e-3``
  times the gradient scale, ``beta_start=1e-3``). When no beta gives exactly 200 the fit nearest to 200
  (then the larger variance) is kept and the CSV says so (``exact = False``, ``joint_nnz``): the committed
  run has 201.
* **right**: cumulative variance vs the number of *quasi-orthogonal* components, a minimum angle of 85
  degrees between components: emPCA (nn) with the penalty of Eq. 20 tuned to the angle
  (``orthogonality="quasi"``, ``min_angle_deg=85``) and NSPCA (``beta = 0``) with ``alpha`` set by bisection
  in ``log(alpha)`` to the smallest value whose components are at least 85 degrees apart
  (:func:`repro.nspca.nspca_for_min_angle`, decades 1e3..1e10, then until the bracket's ratio is at most
  1.25). Strategy 2 of Sec. 5.2 *replaces* the cardinality constraint of strategy 1 by
  the angle, so no cardinality is imposed here.

Choices the paper leaves open (and why)
---------------------------------------
* **Cumulative variance** of components that are not orthogonal (NSPCA always; emPCA's sparse signed
  components after projection deflation; quasi-orthogonal components) would double count shared directions,
  so every curve in the middle and right panels is the *adjusted* variance of Shen & Huang (2008),
  :func:`repro.metrics.adjusted_variance`: the variance of the projection of the data onto the span of the
  first ``l`` loadings, ``tr((V'V)^{-1} V'CV)``. It equals the plain sum for orthonormal loadings (the
  plain sum is also in the CSV, ``cumulative_plain``).
* **Order of NSPCA's components**: NSPCA fits all components jointly; they are ranked by explained variance.
  emPCA's components are in the order they were computed (sequentially).
* **alpha, beta scale**: NSPCA's penalties are on the scale of the scatter matrix ``A = X'X`` (not divided by
  ``n``), the scale of Zass & Shashua's Eq. 3; the paper's 1e5..1e8 only make sense there (the largest
  eigenvalue of ``A`` is about 8.4e4).
* **emPCA (nn) in the left panel** is the plain EM result (the paper's label has no "opt"); the result
  after renormalization on the support ("emPCAopt (nn)", EM restricted to the support) is drawn thin and
  dashed and is in the CSV.
* **Restarts in the middle and right panels**: emPCA (nn) takes the best of ten random starts per component;
  NSPCA one random start per fit, the bisection warm-starting each fit from the denser solution (ten
  restarts of a 20-fit bisection of a 10-component fit would take minutes). NSPCA stops at a relative gain
  of 1e-8 per sweep or 3000 sweeps (library defaults).
* ``--quick``: 500 faces, ``K`` in {10, 40}, ``alpha = 1e7`` only, one restart, 100 NSPCA sweeps, three
  components.
* **The certified optimum is not drawn**: the left panel's problem (CBCL after projecting out
  the first PC, p = 361, ``x >= 0``, ``K = 1..200``) is the size of :mod:`experiments.asteris2014_fig4`'s,
  where each ``k`` costs 15-22 s on a 2-core machine and only ``k <= 9`` is proven within 1000 nodes;
  the non-negative search enumerates sub-supports of decided supports, so most of the curve is out of
  its reach.

References
----------
C. D. Sigg and J. M. Buhmann. Expectation-maximization for sparse and non-negative PCA. ICML 2008.
R. Zass and A. Shashua. Nonnegative sparse PCA. NIPS 19, 2006.
H. Shen and J. Z. Huang. Sparse principal component analysis via regularized low rank matrix
approximation. J. Multivariate Analysis 99, 2008 (adjusted variance).
"""

from __future__ import annotations

import itertools

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments._sigg import (
    ORTH_RULE,
    QUASI_RULE,
    fig3_cum,
    fig3_left,
    fig3_left_rows,
    fig3_middle_k_rows,
    fig3_middle_rows,
    fig3_right_angle_rows,
    fig3_right_rows,
    orth_call,
    plot_curves,
    plot_left,
    plot_other_settings,
    quasi_call,
)
from experiments.runner import _common
from experiments.runner.claims import NOT_REPRODUCED, PARTIAL, REPRODUCED, Claim, Outcome, verdict_from
from repro.linalg import Covariance

TITLE = "Sigg & Buhmann (2008) Fig. 3: non-negative sparse PCA on CBCL faces, emPCA (nn) vs NSPCA"

ALPHAS = (1e5, 1e6, 1e7)
K_GRID = (1, 5, 10, 20, 40, 60, 80, 100, 125, 150, 175, 200)
K_MAX = 200
N_COMP = 10
K_PER_COMP = 20
ALPHA_JOINT = 1e8
JOINT_CARD = 200
JOINT_BETA_START = 1e-3  # middle panel: first positive beta, relative to max |A U| at beta = 0
MIN_ANGLE = 85.0
RTOL = 1e-5
EXTRA_JOINT = (100, 400)  # middle panel, other K: ~10 and ~40 non-zeros per component
EXTRA_ANGLES = (80.0, 88.0)  # right panel, other minimum angles
EXTRA_RTOL = 0.05  # coarser beta bisection for the other K


# --------------------------------------------------------------------------- compute
def compute(cfg: _common.Config) -> pd.DataFrame:
    from data_fetch import load_cbcl_faces

    faces = load_cbcl_faces().X
    if cfg.quick:
        faces = faces[cfg.rng(0).choice(faces.shape[0], 500, replace=False)]
    X, w1 = _common.minus_first_pc(_common.preprocess(faces, "standardize"))
    C = Covariance.from_data(X)
    A = np.ascontiguousarray(X.T @ X)  # NSPCA's scatter matrix (Zass & Shashua, Eq. 3)
    size = _sizes(cfg.quick)
    rows, em_seconds = fig3_left_rows(X, A, cfg, size)
    rows += fig3_middle_rows(X, A, C, cfg, size)
    rows += fig3_right_rows(X, A, C, cfg, size)
    # "confirmed for various values of K and L" (middle) and "various L and minimum angle" (right): the
    # same comparisons at other settings, drawn in a second row of the figure
    rows += fig3_middle_k_rows(X, A, C, cfg, size)
    rows += fig3_right_angle_rows(X, A, C, cfg, size)
    df = pd.DataFrame(rows)
    df["em_path_seconds"] = em_seconds
    df["pc1_sign_share"] = float(max((w1 > 0).mean(), (w1 < 0).mean()))
    return df


def _sizes(quick: bool) -> dict:
    """The run's settings: the paper's, with the small sizes of ``--quick`` (module docstring)."""
    return {
        "alphas": (1e7,) if quick else ALPHAS,
        "k_grid": (10, 40) if quick else K_GRID,
        "k_max": 40 if quick else K_MAX,
        "restarts": 1 if quick else 10,
        "n_comp": 3 if quick else N_COMP,
        "max_iter": 100 if quick else 3000,
        "joint": 60 if quick else JOINT_CARD,
        "quasi_restarts": 1 if quick else None,
        "extra_joint": (30, 90) if quick else EXTRA_JOINT,
        "extra_angles": (80.0,) if quick else EXTRA_ANGLES,
        "rtol": RTOL,
        "extra_rtol": EXTRA_RTOL,
        "alpha_joint": ALPHA_JOINT,
        "beta_start": JOINT_BETA_START,
        "k_per_comp": K_PER_COMP,
        "min_angle": MIN_ANGLE,
    }


# --------------------------------------------------------------------------- plot
def plot(df: pd.DataFrame, cfg: _common.Config):
    extra = bool(len(df[df.panel.isin(["middle-K", "right-angle"])]))
    fig, grid = plt.subplots(2 if extra else 1, 3, figsize=(11.0, 6.6 if extra else 3.3), squeeze=False)
    plot_left(grid[0, 0], df)
    plot_curves(grid[0, 1], df, "middle", "Orthogonal components, K = 20 each", ALPHA_JOINT)
    plot_curves(grid[0, 2], df, "right", r"Quasi-orthogonal, $\geq 85^\circ$ apart", ALPHA_JOINT)
    if extra:
        plot_other_settings(df, grid[1])
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- claims
def _check_em_beats_nspca(df):
    em, ns = fig3_left(df)
    found = ns[ns.found.astype(bool)]
    diff = found.apply(lambda r: em.loc[r.cardinality, "variance"] - r.variance, axis=1)
    n_win = int((diff >= -1e-3 * found.variance).sum())  # not below (ties within 0.1% allowed)
    more = diff > 1e-2 * found.variance  # clearly more (by over 1%)
    # Points compared at equal cardinality: emPCA (nn) has exactly K non-zeros (at K = 175 it stops at
    # the 160 positive loadings) and K > 1 (K = 1 is the best single pixel, a degenerate sparse problem
    # where NSPCA's beta bisection lands on a worse pixel).
    em_nnz = found.cardinality.map(em["nnz"])
    fair = (em_nnz == found.cardinality) & (found.cardinality > 1)
    n_fair, n_more_fair = int(fair.sum()), int((more & fair).sum())
    worst = found.assign(diff=diff).sort_values("diff").iloc[0] if len(found) else None
    msg = (
        f"emPCA (nn) >= NSPCA at {n_win}/{len(found)} (alpha, K) points NSPCA reached; more by over 1% at "
        f"{int(more.sum())}/{len(found)}, of which {n_more_fair}/{n_fair} at equal cardinality with K > 1 "
        f"(median gain there {100 * float((diff / found.variance)[fair].median()):.2f}%)"
        + (
            f"; largest deficit {-worst['diff']:.3f} at alpha={worst.alpha:g}, K={int(worst.cardinality)}"
            if worst is not None and worst["diff"] < 0
            else ""
        )
    )
    never_below = len(found) > 0 and n_win == len(found)
    share = n_more_fair / n_fair if n_fair else 0.0
    verdict = (
        REPRODUCED
        if never_below and share >= 0.5
        else (PARTIAL if never_below and share >= 0.25 else NOT_REPRODUCED)
    )
    return Outcome(
        msg,
        verdict,
        "plain emPCA (nn) (the paper's label). 'More variance ... significant improvements' (Sec. 6) read as "
        "never below NSPCA (ties within 0.1%) and more by over 1% at half or more of the points compared "
        "at equal cardinality (K > 1, emPCA (nn) reaching K); partly at a quarter or more. Not reproduced: "
        "the two methods tie (median gain under 0.1%); the large gains are at K = 1 and at K = 175, "
        "where emPCA (nn) has only 160 non-zeros. Our NSPCA (beta by bisection, best of ten restarts) "
        "finds about the same supports as emPCA (nn)"
        if verdict == NOT_REPRODUCED
        else "read as never below NSPCA and more by over 1% at half or more of the points compared at "
        "equal cardinality (K > 1, emPCA (nn) reaching K); partly at a quarter or more",
    )


def _check_alpha_coverage(df):
    _, ns = fig3_left(df)
    parts, mins, shares, missing = [], [], [], []
    for alpha, g in ns.groupby("alpha"):
        f = g[g.found.astype(bool)]
        kmin = int(f.cardinality.min()) if len(f) else None
        mins.append(np.inf if kmin is None else kmin)
        shares.append(len(f) / len(g))
        missing.append(sorted(int(k) for k in g[~g.found.astype(bool)].cardinality))
        parts.append(f"alpha={alpha:g}: {len(f)}/{len(g)} K reached, smallest {kmin}")
    ok = (
        len(mins) >= 2
        and all(a >= b for a, b in itertools.pairwise(mins))
        and mins[0] > mins[-1]
        and shares[-1] >= 0.9
    )
    partial = len(mins) >= 2 and shares[-1] > shares[0]
    why = ""
    if not ok and len(mins) >= 2:
        why = (
            f"; the smallest alpha already reaches K = {mins[0]:g}, not only cardinalities near the full "
            "one, "
            f"and the largest alpha misses K = {', '.join(map(str, missing[-1])) or 'none'}"
        )
    return Outcome(
        "; ".join(parts),
        REPRODUCED if ok else (PARTIAL if partial else NOT_REPRODUCED),
        "reproduced if the smallest reachable K decreases with alpha and the largest alpha reaches "
        ">= 90% of the K grid; partly if only the share of the grid reached grows with alpha" + why,
    )


def _check_alpha_degrades(df):
    _, ns = fig3_left(df)
    f = ns[ns.found.astype(bool)].pivot_table(index="cardinality", columns="alpha", values="variance")
    f = f.dropna()
    if f.shape[1] < 2 or not len(f):
        return Outcome("no cardinality reached by every alpha", NOT_REPRODUCED)
    means = f.mean()
    order_ok = bool(np.all(np.diff(means.to_numpy()) <= 0))
    txt = ", ".join(f"{a:g}: {v:.3f}" for a, v in means.items())
    return Outcome(
        f"mean variance over the {len(f)} K every alpha reached: {txt} (spread "
        f"{100 * (means.max() - means.min()) / means.mean():.2f}% of the mean)",
        REPRODUCED if order_ok else (PARTIAL if means.iloc[-1] < means.iloc[0] else NOT_REPRODUCED),
        "reproduced if the variance decreases with alpha at the cardinalities all alphas reach",
    )


def _check_orth(df):
    nn, em, ns = (
        fig3_cum(df, "middle", "emPCA (nn)"),
        fig3_cum(df, "middle", "emPCA"),
        fig3_cum(df, "middle", "NSPCA"),
    )
    nnz = int(df[(df.panel == "middle") & (df.method == "NSPCA")].joint_nnz.iloc[0])
    text, ok, partial, _ = orth_call(nn, em, ns)
    return Outcome(
        f"K = 20 each, NSPCA joint cardinality {nnz}: {text}",
        REPRODUCED if ok else (PARTIAL if partial else NOT_REPRODUCED),
        ORTH_RULE,
    )


def _check_orth_various(df):
    sub = df[df.panel == "middle-K"]
    if not len(sub):
        return Outcome("no run at other K", NOT_REPRODUCED)
    parts, oks, partials = [], [], []
    for target in sorted(sub.target.dropna().unique()):
        nn, em, ns = (fig3_cum(df, "middle-K", m, target=target) for m in ("emPCA (nn)", "emPCA", "NSPCA"))
        k_each = int(sub[(sub.target == target) & (sub.method == "emPCA")].k_each.iloc[0])
        nnz = int(sub[(sub.target == target) & (sub.method == "NSPCA")].joint_nnz.iloc[0])
        _, ok, partial, frac = orth_call(nn, em, ns)
        oks.append(ok)
        partials.append(partial)
        parts.append(
            f"K = {k_each} each (NSPCA joint {nnz}): above at {frac}, emPCA (nn) / NSPCA at the "
            f"last {float(nn.iloc[-1] / ns.loc[nn.index.max()]):.2f}"
        )
    return Outcome(
        "; ".join(parts),
        REPRODUCED if all(oks) else (PARTIAL if any(oks) or all(partials) else NOT_REPRODUCED),
        ORTH_RULE + ", at each other K (NSPCA: beta by a coarser bisection, relative interval "
        f"{EXTRA_RTOL:g}, to the joint cardinality 10 K; emPCA at K = NSPCA's non-zeros / 10)",
    )


def _check_quasi(df):
    em, ns = fig3_cum(df, "right", "emPCA (nn)"), fig3_cum(df, "right", "NSPCA")
    sub = df[(df.panel == "right") & (df.method == "NSPCA")]
    text, ok, partial = quasi_call(em, ns)
    return Outcome(
        f"85 degrees: {text} (NSPCA alpha={sub.alpha.iloc[0]:.3g}, min angle {sub.min_angle.iloc[-1]:.1f} "
        f"deg; emPCA (nn) {em.iloc[-1]:.1f} vs NSPCA {ns.iloc[-1]:.1f} at the last)",
        REPRODUCED if ok else (PARTIAL if partial else NOT_REPRODUCED),
        QUASI_RULE,
    )


def _check_quasi_various(df):
    sub = df[df.panel == "right-angle"]
    if not len(sub):
        return Outcome("no run at other angles", NOT_REPRODUCED)
    parts, oks, partials = [], [], []
    for angle in sorted(sub.target_angle.dropna().unique()):
        em, ns = (fig3_cum(df, "right-angle", m, target_angle=angle) for m in ("emPCA (nn)", "NSPCA"))
        text, ok, partial = quasi_call(em, ns)
        oks.append(ok)
        partials.append(partial)
        parts.append(f"{angle:g} degrees: {text}")
    return Outcome(
        "; ".join(parts),
        REPRODUCED if all(oks) else (PARTIAL if any(oks) else NOT_REPRODUCED),
        QUASI_RULE + ", at each other minimum angle (partly when it holds at some)",
    )


def _check_comparable_small_alpha(df):
    em, ns = fig3_left(df)
    alphas = sorted(ns.alpha.unique())
    smaller = alphas[:-1] if len(alphas) > 1 else alphas  # every alpha below the largest of the grid
    parts, shares = [], []
    for alpha in smaller:
        f = ns[ns.found.astype(bool) & np.isclose(ns.alpha, alpha)]
        fair = f[(f.cardinality.map(em["nnz"]) == f.cardinality) & (f.cardinality > 1)]
        if not len(fair):
            parts.append(f"alpha={alpha:g}: no cardinality reached")
            shares.append(0.0)
            continue
        ref = fair.cardinality.map(em["variance"])
        gap = 100 * (ref - fair.variance) / ref
        shares.append(float((gap.abs() <= 2.0).mean()))
        parts.append(
            f"alpha={alpha:g}: NSPCA within 2% of emPCA (nn) at {int((gap.abs() <= 2).sum())}/{len(fair)} "
            f"cardinalities reached (K > 1, equal cardinality), largest gap {gap.abs().max():.2f}%, median "
            f"{gap.median():+.2f}%"
        )
    return Outcome(
        "; ".join(parts),
        verdict_from(min(shares) >= 0.9, min(shares) >= 0.5),
        "'comparable' read as within 2% of emPCA (nn) at 90% or more of the cardinalities NSPCA reaches, at "
        "every alpha below the largest of the grid; the other half of the sentence (only large K found) is "
        "alpha-sweeps-path",
    )


def _check_pc1_orthant(df):
    share = float(df.pc1_sign_share.iloc[0])
    return Outcome(
        f"{100 * share:.1f}% of the 361 loadings of the first PC of the standardized faces have one sign",
        verdict_from(share == 1.0, share >= 0.95),
        "reproduced only if every loading has the same sign (the PC lies in the non-negative orthant up to "
        "its sign)",
    )


CLAIMS = [
    Claim(
        "nn-empca-beats-nspca",
        "Sec. 5.2, Fig. 3 left: emPCA (nn) explains more variance than NSPCA at every cardinality "
        '("significant improvements for non-negative sparse problems", Sec. 6)',
        "",
        _check_em_beats_nspca,
    ),
    Claim(
        "alpha-sweeps-path",
        "Sec. 5.2: for smaller alpha only solutions close to the full cardinality are found; increasing "
        "alpha makes it possible to sweep the whole cardinality path",
        "",
        _check_alpha_coverage,
    ),
    Claim(
        "alpha-degrades",
        "Sec. 5.2: increasing alpha ... but the performance degrades",
        "",
        _check_alpha_degrades,
    ),
    Claim(
        "orthogonal-empca-more",
        "Sec. 5.2, Fig. 3 middle: with orthogonal components (K = 20 each; NSPCA joint cardinality 200) "
        "emPCA captures significantly more of the variance",
        "",
        _check_orth,
    ),
    Claim(
        "orthogonal-various-K",
        "Sec. 5.2, Fig. 3 middle: this observation (emPCA captures significantly more variance) was "
        "confirmed for various values of K and L",
        "",
        _check_orth_various,
    ),
    Claim(
        "nspca-comparable-small-alpha",
        "Sec. 5.2, Fig. 3 left: for smaller values of alpha the performance of NSPCA is comparable to emPCA",
        "",
        _check_comparable_small_alpha,
    ),
    Claim(
        "pc1-nonneg-orthant",
        "Sec. 5.2: the first principal component for the face image data happens to lie in the non-negative "
        "orthant",
        "",
        _check_pc1_orthant,
    ),
    Claim(
        "quasi-various-angles",
        "Sec. 5.2, Fig. 3 right: various values for L and minimum angle lead to essentially the same "
        "behavior",
        "",
        _check_quasi_various,
    ),
    Claim(
        "quasi-complementary",
        "Sec. 5.2, Fig. 3 right (85 degrees): the complementary objectives match expectations: emPCA more "
        "variance in the first components, NSPCA larger cumulative variance",
        "",
        _check_quasi,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
