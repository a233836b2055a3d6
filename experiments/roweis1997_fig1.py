"""Roweis (1997), Figure 1: EM iterations learning the first principal component of 2-D data.

Left, Gaussian input data; right, non-Gaussian input data. Each solid line is one EM iterate, drawn
through the data mean along the current guess of the eigenvector; it is numbered (0 = the initial
condition). The dashed line is the leading eigenvector of the sample covariance and the dashed ellipse its
one-standard-deviation contour. Below the figure, the number of iterations is studied as a function of the
eigenvalue ratio (the paper: "the ratios of the first k eigenvalues seem to be the critical parameters").

Choices the paper leaves open (and why)
---------------------------------------
* **Line length.** The caption says the lengths "indicate the guess of the eigenvalue". The guess is the
  Rayleigh quotient ``c'Sc / c'c`` (variance of the data along the current direction; the EM matrix ``C``
  itself has an arbitrary scale). Each line runs ``+/- sqrt(guess)`` from the mean, so that a converged
  line ends on the one-standard-deviation ellipse.
* **Data.** Left: n = 200 draws of a Gaussian with standard deviations 1.2 and 0.5, major axis at 35 deg
  (eigenvalue ratio 5.8). Right: n = 300 points on a noisy ring (radius 1.5, noise 0.15), exactly whitened
  and stretched so that the sample covariance has eigenvalue ratio 1.2 with the major axis at -20 deg:
  clearly non-Gaussian, with a small ratio so that, as in the paper, learning takes more than 20 iterations.
  The paper reports a ratio of 1.0001 for Fig. 1b; with that ratio an iterate moves by about 0.006 deg
  per iteration at 45 deg, so the first 20 lines would lie on top of each other. The panel therefore uses
  1.2, and the paper's 1.0001 is run in the ratio sweep, where it decides the "more than 20 iterations"
  claim.
* **Initial condition.** 80 deg (left) and 85 deg (right) away from the leading eigenvector, so the
  rotation of the iterates is visible; a random start would be closer on average.
* **Convergence.** The panels show the iterates until ``|cos(guess, eigenvector)| >= 0.999`` (the paper's
  Fig. 2 criterion). In two dimensions EM is power iteration on the sample covariance, so
  ``tan(theta_t) = tan(theta_0) (lambda_2/lambda_1)^t`` exactly; the sweep compares the measured counts
  with ``ceil(log(tan theta_0 / tan theta*) / log(lambda_1/lambda_2))``, for the ring and for the Gaussian
  data rescaled to the same ratios.
* Seeds: ``cfg.rng(0)`` (Gaussian panel), ``cfg.rng(1)`` (ring). The whole experiment takes about two
  seconds, so ``--quick`` runs it unchanged.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.patches import Ellipse

from experiments.runner import _common
from experiments.runner.claims import NOT_REPRODUCED, PARTIAL, REPRODUCED, Claim, Outcome
from repro.em_pca import em_pca

TITLE = "Roweis (1997) Fig. 1: EM iterations for the first principal component of 2-D data"

TARGET_COS = 0.999
PANEL_RATIO = 1.2
PAPER_RATIO = 1.0001
SWEEP_RATIOS = (1.0001, 1.001, 1.01, 1.05, 1.1, 1.2, 1.5, 2.0, 5.0, 10.0)
PANELS = {"gaussian": "Gaussian Input Data", "non-gaussian": "Non-Gaussian Input Data"}


# --------------------------------------------------------------------------- data
def _rot(deg: float) -> np.ndarray:
    t = math.radians(deg)
    return np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])


def _gaussian(rng: np.random.Generator) -> np.ndarray:
    Z = rng.standard_normal((200, 2)) * np.array([1.2, 0.5])
    return Z @ _rot(35.0).T


def _with_ratio(X: np.ndarray, ratio: float, angle: float, scale: float) -> np.ndarray:
    """Whiten the sample covariance exactly, then give it eigenvalues (ratio, 1) * scale^2 along ``angle``."""
    Xc = X - X.mean(axis=0)
    w, V = np.linalg.eigh(np.cov(Xc, rowvar=False))
    W = Xc @ V / np.sqrt(w)
    return (W * (scale * np.array([math.sqrt(ratio), 1.0]))) @ _rot(angle).T


def _ring(rng: np.random.Generator) -> np.ndarray:
    t = rng.uniform(0.0, 2.0 * math.pi, 300)
    r = 1.5 + 0.15 * rng.standard_normal(300)
    return np.c_[r * np.cos(t), r * np.sin(t)]


def _leading(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    w, V = np.linalg.eigh(np.cov(X, rowvar=False))
    return w[::-1], V[:, ::-1]


def _run_em(X: np.ndarray, init_deg: float, max_iter: int, record: bool):
    """EM from a start ``init_deg`` away from the leading eigenvector; stop at |cos| >= 0.999."""
    values, V = _leading(X)
    v = V[:, 0]
    c0 = _rot(init_deg) @ v
    trace = []

    def cb(t, C, lam):
        c = C[:, 0] / np.linalg.norm(C[:, 0])
        cos = abs(float(c @ v))
        if record:
            trace.append((t, c.copy(), float(lam[0]), cos))
        return cos >= TARGET_COS

    res = em_pca(X, 1, init=c0[None, :], tol=0.0, max_iter=max_iter, callback=cb)
    return res, values, v, trace


def _predicted(init_deg: float, ratio: float) -> int:
    t0 = math.tan(math.radians(init_deg))
    ts = math.tan(math.acos(TARGET_COS))
    return max(0, math.ceil(math.log(t0 / ts) / math.log(ratio) - 1e-9))


# --------------------------------------------------------------------------- compute
def compute(cfg: _common.Config) -> pd.DataFrame:
    rows = []
    gauss = _gaussian(cfg.rng(0))
    ring = _with_ratio(_ring(cfg.rng(1)), PANEL_RATIO, -20.0, 1.25)
    for panel, X, init_deg in (("gaussian", gauss, 80.0), ("non-gaussian", ring, 85.0)):
        res, values, v, trace = _run_em(X, init_deg, 10_000, record=True)
        mean = X.mean(axis=0)
        for x1, x2 in X:
            rows.append({"panel": panel, "kind": "point", "x1": x1, "x2": x2})
        for t, c, lam, cos in trace:
            rows.append(
                {
                    "panel": panel,
                    "kind": "iterate",
                    "iteration": t,
                    "x1": c[0],
                    "x2": c[1],
                    "angle_deg": math.degrees(math.atan2(c[1], c[0])),
                    "eigenvalue": lam,
                    "cosine": cos,
                }
            )
        rows.append(
            {
                "panel": panel,
                "kind": "truth",
                "x1": v[0],
                "x2": v[1],
                "mean1": mean[0],
                "mean2": mean[1],
                "angle_deg": math.degrees(math.atan2(v[1], v[0])),
                "eigenvalue": values[0],
                "eigenvalue2": values[1],
                "ratio": values[0] / values[1],
                "iterations": res.n_iter,
                "predicted": _predicted(init_deg, values[0] / values[1]),
            }
        )
    for panel, base, init_deg in (("gaussian", gauss, 85.0), ("non-gaussian", ring, 85.0)):
        for ratio in SWEEP_RATIOS:
            X = _with_ratio(base, ratio, -20.0, 1.0)
            res, values, v, _ = _run_em(X, init_deg, 200_000, record=False)
            rows.append(
                {
                    "panel": panel,
                    "kind": "sweep",
                    "ratio": values[0] / values[1],
                    "nominal_ratio": ratio,
                    "iterations": res.n_iter,
                    "predicted": _predicted(init_deg, ratio),
                    "converged": bool(res.converged),
                }
            )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- plot
def plot(df: pd.DataFrame, cfg: _common.Config):
    fig, axes = plt.subplots(1, 2, figsize=(8.0, 3.9))
    for ax, (panel, title) in zip(axes, PANELS.items(), strict=True):
        d = df[df.panel == panel]
        pts = d[d.kind == "point"]
        ax.plot(pts.x1, pts.x2, ".", color="0.55", markersize=2.5, zorder=1)
        truth = d[d.kind == "truth"].iloc[0]
        m = np.array([truth.mean1, truth.mean2])
        v = np.array([truth.x1, truth.x2])
        ax.plot(*np.c_[m - 4 * v, m + 4 * v], "k--", linewidth=0.9, zorder=2)
        ell = Ellipse(
            m,
            2 * math.sqrt(truth.eigenvalue),
            2 * math.sqrt(truth.eigenvalue2),
            angle=truth.angle_deg,
            fill=False,
            linestyle="--",
            linewidth=0.9,
            zorder=2,
        )
        ax.add_patch(ell)
        its = d[d.kind == "iterate"].sort_values("iteration")
        last = int(its.iteration.max())
        shown = set(range(last + 1)) if last <= 6 else set(range(0, last - 2, 5)) | {last}
        for r in its.itertuples():
            c = np.array([r.x1, r.x2]) * math.sqrt(r.eigenvalue)
            ax.plot(*np.c_[m - c, m + c], "-", color="tab:blue", linewidth=1.0, zorder=3)
            if int(r.iteration) in shown:
                end = m + 1.12 * c
                ax.text(end[0], end[1], str(int(r.iteration)), fontsize=6, ha="center", va="center", zorder=4)
        ax.set_title(title)
        ax.text(0.03, 0.03, f"|cos| >= 0.999 after {last} iterations", transform=ax.transAxes, fontsize=7)
        ax.set_xlabel("x1")
        ax.set_ylabel("x2")
        ax.set_xlim(-3, 3)
        ax.set_ylim(-3, 3)
        ax.set_aspect("equal")
    return fig


def table(df: pd.DataFrame, cfg: _common.Config) -> str:
    s = df[df.kind == "sweep"].pivot_table(index="nominal_ratio", columns="panel", values="iterations")
    pred = df[df.kind == "sweep"].groupby("nominal_ratio")["predicted"].first()
    lines = [
        "EM iterations until |cos| >= 0.999 from 85 deg, by eigenvalue ratio lambda_1/lambda_2",
        "",
        "| ratio | Gaussian | non-Gaussian (ring) | predicted |",
        "|---|---|---|---|",
    ]
    for r in s.index:
        g, ng = s.loc[r, "gaussian"], s.loc[r, "non-gaussian"]
        lines.append(f"| {r:g} | {g:.0f} | {ng:.0f} | {pred[r]:.0f} |")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- claims
def _check_left(df: pd.DataFrame) -> Outcome:
    t = df[(df.panel == "gaussian") & (df.kind == "truth")].iloc[0]
    last = df[(df.panel == "gaussian") & (df.kind == "iterate")].sort_values("iteration").iloc[-1]
    rel = abs(last.eigenvalue - t.eigenvalue) / t.eigenvalue
    ok = t.iterations <= 10 and last.cosine >= TARGET_COS
    return Outcome(
        f"{int(t.iterations)} iterations to |cos| >= 0.999 (ratio {t.ratio:.2f}); final eigenvalue guess "
        f"off by {rel:.1e}",
        REPRODUCED if ok else NOT_REPRODUCED,
        "Start 80 deg away from the eigenvector; the count follows tan(theta_t) = tan(theta_0) / ratio^t, so "
        "it is set by the chosen ratio and start: this row reproduces the figure, it is not evidence of EM's "
        "speed (see roweis1997_fig2 and roweis1997_claims for that).",
    )


def _check_right(df: pd.DataFrame) -> Outcome:
    """Two parts: no local minimum (every run reaches the eigenvector) and "more than 20 iterations" at the
    stated ratio 1.0001. The first can fail; the second is met so far over (tens of thousands) that the
    stated ratio cannot be the one of the drawn figure, whose iterates are few enough to draw: partly."""
    sw = df[(df.panel == "non-gaussian") & (df.kind == "sweep")]
    panel = df[(df.panel == "non-gaussian") & (df.kind == "truth")].iloc[0]
    paper = sw[np.isclose(sw.nominal_ratio, PAPER_RATIO)].iloc[0]
    it, conv = int(paper.iterations), bool(paper.converged)
    all_conv = bool(sw.converged.astype(bool).all())
    # "more than 20" read as the figure shows it: more than 20 drawn iterates, not so many that the
    # drawing could not show them (a factor 10 over 20 is a generous bound for a hand-numbered figure)
    drawable = 20 < it <= 200
    if not (conv and all_conv):
        verdict = NOT_REPRODUCED
    elif drawable:
        verdict = REPRODUCED
    else:
        verdict = PARTIAL
    return Outcome(
        f"ratio 1.0001: converged after {it} iterations (every one of {len(sw)} sweep runs converged: "
        f"{all_conv}); drawn panel here (ratio {panel.ratio:.2f}): {int(panel.iterations)} iterations",
        verdict,
        "Partly: no local minimum is reproduced (every run reaches the eigenvector from 85 deg), but at "
        "the stated ratio 1.0001 EM needs tens of thousands of iterations (tan(theta) shrinks by only "
        "1/1.0001 per iteration), not the 'more than 20' that a figure with numbered iterates can show; "
        "the paper's ratio and its drawn figure cannot both hold, and the figure's own ratio is not "
        "stated. The panel here uses ratio 1.2, chosen, not measured.",
    )


def _check_ratio(df: pd.DataFrame) -> Outcome:
    """In 2-D the count is an identity of power iteration; what can fail is only the implementation."""
    sw = df[df.kind == "sweep"]
    exact = (sw.iterations == sw.predicted).mean()
    by = sw.pivot_table(index="nominal_ratio", columns="panel", values="iterations")
    same = bool((by["gaussian"] == by["non-gaussian"]).all())
    lo, hi = sw.nominal_ratio.min(), sw.nominal_ratio.max()
    its = sw.groupby("nominal_ratio").iterations.max()
    ok = exact == 1.0 and same
    return Outcome(
        f"iterations from {int(its.loc[hi])} (ratio {hi:g}) to {int(its.loc[lo])} (ratio {lo:g}); equal to "
        f"log(tan theta_0/tan theta*)/log(ratio) in {exact:.0%} of runs; Gaussian and ring equal: {same}",
        REPRODUCED if ok else (PARTIAL if exact > 0.8 else NOT_REPRODUCED),
        "In 2-D this is an identity, not evidence: EM is power iteration on the 2 x 2 sample covariance, "
        "so tan(theta_t) = tan(theta_0) (lambda_2/lambda_1)^t and two data sets with the same covariance "
        "give the same iterates; the row checks the implementation against that closed form. The "
        "sentence (ratios of the first k eigenvalues, k > 1, random data) is tested by "
        "roweis1997_fig2/eigenvalue-ratio-controls and roweis1997_claims/ratio-controls-k.",
    )


CLAIMS = [
    Claim(
        "gaussian-few-iterations",
        "Fig. 1 (left): on Gaussian data the EM iterates converge to the leading eigenvector and eigenvalue "
        "of the sample covariance in a few iterations.",
        "a few iterations",
        _check_left,
    ),
    Claim(
        "nongaussian-no-local-minimum",
        "Fig. 1 caption: the difficult learning on the right does not get stuck in a local minimum, although "
        "it does take more than 20 iterations to converge (Sec. 3.1: in Fig. 1b the eigenvalue ratio was "
        "1.0001).",
        "> 20 iterations at ratio 1.0001",
        _check_right,
    ),
    Claim(
        "ratio-controls-iterations",
        "Sec. 3.1: the ratios of the first k eigenvalues seem to be the critical parameters controlling the "
        "number of iterations until convergence (here k = 1 in 2-D, where it is an identity).",
        "",
        _check_ratio,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
