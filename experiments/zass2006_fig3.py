"""Zass & Shashua (2006), Figure 3: (a) overlap ``||I - U'U||`` as a function of alpha (beta = 0) and
(b) the number of non-zeros ``||U||_0`` as a function of beta (alpha = 2e7), ten NSPCA factors of CBCL faces.

Choices the paper leaves open
-----------------------------
* **Data and scaling**: the 2429 CBCL faces, grey levels 0..255, centred (the scaling under which the
  paper's alpha and beta of Fig. 2 behave as described; see ``zass2006_fig2`` for the evidence).
* **Grids** (the paper does not print its axes): alpha on a log grid 1e6 .. 3e9 (two points per decade,
  bracketing 2e7 and 5e8 of Fig. 2); beta on 0, 1.25e5 .. 8e6 (doubling, containing 2e6) at alpha = 2e7.
* **Seeds**: three random non-negative starts per point (``--seed`` root); the figure shows the mean and
  the min-max band, the CSV every run. Each fit stops at a relative gain of 1e-8 per sweep (3000 sweeps
  at most).
* ``--quick``: three grid points per panel, one start, at most 60 sweeps.

Besides the two curves, every fit records (columns of the CSV, see ``zass2006_fig2`` for the definitions)
``overlap_unit`` (overlap of the unit-norm factors), ``shared_energy`` and ``nondominant_energy`` (how far the
supports are from disjoint, :func:`experiments._zass.support_sharing`), ``shared_energy_rel0.01`` and
``shared_energy_rel0.1`` (the shared energy when a factor counts on a pixel only at 1% or 10% of the pixel's
largest weight: whether what the penalty leaves shared is small weights), and the convergence measures
``max_obj_drop``, ``max_coord_gain`` and ``max_coord_move``
(:func:`experiments._zass.convergence_summary`), for two claims of Sec. 2 and 4 that have no figure:
non-negativity with ``U'U = I`` forces disjoint supports, and Algorithm 1 converges to a local maximum.
"""

from __future__ import annotations

import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments._zass import (
    COORD_RTOL,
    MONOTONE_RTOL,
    _unit_overlap,
    convergence_summary,
    support_sharing,
)
from experiments.runner import _common
from experiments.runner.claims import NOT_REPRODUCED, PARTIAL, REPRODUCED, Claim, Outcome
from repro.nspca import nspca

TITLE = "Zass & Shashua (2006) Fig. 3: NSPCA overlap vs alpha and cardinality vs beta (CBCL faces)"

N_FACTORS = 10
ALPHAS = (1e6, 3e6, 1e7, 2e7, 5e7, 1e8, 3e8, 5e8, 1e9, 3e9)
BETAS = (0.0, 1.25e5, 2.5e5, 5e5, 1e6, 2e6, 4e6, 8e6)
ALPHA_FOR_BETA = 2e7


def compute(cfg: _common.Config) -> pd.DataFrame:
    from data_fetch import load_cbcl_faces

    X = _common.preprocess(load_cbcl_faces().X, "center")
    A = X.T @ X
    alphas = (1e6, 2e7, 5e8) if cfg.quick else ALPHAS
    betas = (0.0, 2e6, 8e6) if cfg.quick else BETAS
    n_seeds = 1 if cfg.quick else 3
    max_iter = 60 if cfg.quick else 3000
    rows = []
    grid = [("a", a, 0.0) for a in alphas] + [("b", ALPHA_FOR_BETA, b) for b in betas]
    for point, (panel, alpha, beta) in enumerate(_common.progress(grid, "fig3 grid")):
        for seed in range(n_seeds):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = nspca(
                    X, N_FACTORS, alpha=alpha, beta=beta, random_state=cfg.rng(point, seed), max_iter=max_iter
                )
            secs = time.perf_counter() - t0
            shared, nondominant = support_sharing(res.U)
            shared_rel = {f"shared_energy_rel{r:g}": support_sharing(res.U, r)[0] for r in SHARED_REL}
            rows.append(
                {
                    "panel": panel,
                    "method": "NSPCA",
                    "alpha": alpha,
                    "beta": beta,
                    "seed": seed,
                    "overlap": res.overlap[-1],
                    "l0": int(res.l0[-1]),
                    "objective": res.objective[-1],
                    "n_iter": res.n_iter,
                    "converged": res.converged,
                    "seconds": secs,
                    "overlap_unit": _unit_overlap(res.components),
                    "shared_energy": shared,
                    "nondominant_energy": nondominant,
                    **shared_rel,
                    **convergence_summary(A, res, alpha, beta),
                }
            )
    return pd.DataFrame(rows)


def plot(df: pd.DataFrame, cfg: _common.Config):
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(7.0, 2.8))
    st = _common.method_style("NSPCA")
    a = df[df.panel == "a"].groupby("alpha")["overlap"].agg(["mean", "min", "max"])
    ax1.plot(a.index, a["mean"], **st, label="NSPCA")
    ax1.fill_between(a.index, a["min"], a["max"], color=st.get("color"), alpha=0.2, lw=0)
    ax1.set_xscale("log")
    ax1.set_yscale("log")
    ax1.set_xlabel(r"$\alpha$")
    ax1.set_ylabel(r"$\|I - U^T U\|_F$")
    ax1.set_title(r"(a) overlap vs $\alpha$ ($\beta = 0$)")
    b = df[df.panel == "b"].groupby("beta")["l0"].agg(["mean", "min", "max"])
    ax2.plot(b.index, b["mean"], **st, label="NSPCA")
    ax2.fill_between(b.index, b["min"], b["max"], color=st.get("color"), alpha=0.2, lw=0)
    ax2.set_xscale("symlog", linthresh=1e5)
    ax2.set_xlabel(r"$\beta$")
    ax2.set_ylabel(r"$\|U\|_0$")
    ax2.set_title(r"(b) non-zeros vs $\beta$ ($\alpha = 2\times10^7$)")
    ax1.legend(loc="upper right")
    fig.tight_layout()
    return fig


def _monotone_check(df, panel, x, y, label, what=""):
    m = df[df.panel == panel].groupby(x)[y].mean().sort_index()
    diffs = np.diff(m.to_numpy())
    n_down = int((diffs < 0).sum())
    text = f"{label}: " + ", ".join(f"{v:.3g}" for v in m.to_numpy()) + f" ({n_down}/{len(diffs)} steps down)"
    if n_down == len(diffs):
        return Outcome(text, REPRODUCED, "mean over starts, strictly decreasing at every grid step" + what)
    if m.iloc[-1] < m.iloc[0] and n_down >= len(diffs) / 2:
        return Outcome(text, PARTIAL, "decreases overall but not at every grid step" + what)
    return Outcome(text, NOT_REPRODUCED, what.lstrip(". "))


def _check_local_max(df):
    drop, gain = float(df.max_obj_drop.max()), float(df.max_coord_gain.max())
    n_conv = int(df.converged.astype(bool).sum())
    worst = df.loc[df.max_coord_gain.idxmax()]
    ok = drop <= MONOTONE_RTOL and gain <= COORD_RTOL and n_conv == len(df)
    n_ok = int(((df.max_obj_drop <= MONOTONE_RTOL) & (df.max_coord_gain <= COORD_RTOL)).sum())
    return Outcome(
        f"{len(df)} fits ({n_conv} converged): largest sweep-to-sweep decrease of Eq. 3 {drop:.1e} |F|; "
        f"largest gain one coordinate update could still make {gain:.1e} |F| (alpha {worst.alpha:.0e}, beta "
        f"{worst.beta:.0e}); {n_ok}/{len(df)} fits pass both",
        REPRODUCED if ok else (PARTIAL if n_ok >= len(df) / 2 else NOT_REPRODUCED),
        "every fit of the grid: reproduced if all converged, Eq. 3 never decreased by more than "
        f"{MONOTONE_RTOL:g} |F| and no entry is more than {COORD_RTOL:g} |F| (the stopping tolerance) "
        "from the global non-negative maximum of its quartic given the others (coordinate-wise optimal, the "
        "stationarity Sec. 4 argues); partly if at least half the fits pass",
    )


SHARED_REL = (0.01, 0.1)  # a factor "uses" a pixel at >= this share of the pixel's largest weight
DISJOINT_SHARE = 0.1  # "near disjoint": at most this share of the energy on pixels used by several factors


def _check_disjoint(df):
    cols = ["overlap_unit", "nondominant_energy", "shared_energy"]
    rel_cols = [f"shared_energy_rel{r:g}" for r in SHARED_REL if f"shared_energy_rel{r:g}" in df]
    a = df[df.panel == "a"].groupby("alpha")[cols + rel_cols].mean()
    a = a.sort_values("overlap_unit", ascending=False)
    if len(a) < 3:
        return Outcome("-", NOT_REPRODUCED, "needs three or more alpha")
    ov, nd, sh = (a[c].to_numpy() for c in cols[:1] + cols[1:])
    rho = float(pd.Series(ov).corr(pd.Series(sh), method="spearman")) if np.ptp(sh) > 0 else 0.0
    falls = bool(sh[-1] < sh[0] and rho >= 0.5)
    near_disjoint = bool(sh[-1] <= DISJOINT_SHARE)
    text = (
        f"energy on pixels used by more than one factor {sh[0]:.3f} -> {sh[-1]:.3f} as the unit-norm overlap "
        f"falls {ov[0]:.3g} -> {ov[-1]:.3g} (Spearman {rho:.2f}); energy off each pixel's dominant factor "
        f"{nd[0]:.3f} -> {nd[-1]:.3f}"
    )
    cause = ""
    if rel_cols:
        text += "; counting a factor on a pixel only at >= " + ", ".join(
            f"{r:g} of its largest weight: {a[c].iloc[0]:.3f} -> {a[c].iloc[-1]:.3f}"
            for r, c in zip(SHARED_REL, rel_cols, strict=True)
        )
        small = float(a[rel_cols[-1]].iloc[-1])
        cause = (
            f"What the computation shows at the smallest overlap (alpha {a.index[-1]:g}): with weights below "
            f"{SHARED_REL[-1]:g} of a pixel's largest not counted, the shared energy is {small:.3f} "
            + (
                f"(at most {DISJOINT_SHARE:g}): the sharing that remains is in small weights of other "
                "factors that the finite alpha leaves, the larger weights are disjoint. "
                if small <= DISJOINT_SHARE
                else f"(above {DISJOINT_SHARE:g}): the sharing is not only in small weights; the factors "
                "still overlap at comparable weights at the largest alpha tried. "
            )
        )
    verdict = REPRODUCED if falls and near_disjoint else (PARTIAL if falls else NOT_REPRODUCED)
    return Outcome(
        text,
        verdict,
        "over the alpha grid (beta = 0, mean over starts), on a measure that is not the overlap: the share "
        "of the unit-norm factors' energy on pixels used (non-zero) by more than one factor. Reproduced if "
        f"it falls with the overlap (Spearman >= 0.5, last below first) to at most {DISJOINT_SHARE:g} at "
        "the smallest overlap reached; partly if it falls but stays above. "
        + cause
        + "The energy off each pixel's dominant factor falls with the overlap for any U >= 0 (it is at "
        "most the sum of the off-diagonal entries of WW'), so it shows the bound, not evidence",
    )


CLAIMS = [
    Claim(
        "overlap-decreases-with-alpha",
        "Sec. 5, Fig. 3(a): a consistent drop in the overlap ||I - U'U|| as alpha increases",
        "",
        lambda df: _monotone_check(
            df,
            "a",
            "alpha",
            "overlap",
            "overlap over the alpha grid",
            ". What it shows: at a global maximum a larger alpha can never raise the penalized ||I - U'U|| "
            "(a property of any penalty), so this tests that the local maxima reached from random starts "
            "follow it; whether the supports separate is tested by 'disjoint-when-orthonormal'",
        ),
    ),
    Claim(
        "l0-decreases-with-beta",
        "Sec. 5, Fig. 3(b): the increment in sparseness (fewer non-zeros ||U||_0) as beta increases",
        "",
        lambda df: _monotone_check(
            df,
            "b",
            "beta",
            "l0",
            "||U||_0 over the beta grid",
            ". The penalty is on sum(U) (L1), so fewer non-zeros (L0) is not implied by the objective",
        ),
    ),
    Claim(
        "converges-to-local-max",
        "Abstract, Sec. 4: the coordinate-descent scheme (Algorithm 1) converges to a local maximum of Eq. 3 "
        "(Eq. 3 never decreases; at the end each entry is the global non-negative maximizer of its quartic "
        "Eq. 4 given the others)",
        "",
        _check_local_max,
    ),
    Claim(
        "disjoint-when-orthonormal",
        "Sec. 2: the combination of U'U = I and U >= 0 entails that U is disjoint (each row of U has at most "
        "one non-zero): the supports separate as the overlap ||I - U'U|| falls (alpha grow)",
        "",
        _check_disjoint,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
