"""Zass & Shashua (2006), Figure 5: Pit Props, (a) cumulative explained variance and (b) cumulative
cardinality vs the number of components (1..6) for NSPCA, PCA, SPCA (Zou et al.), GSPCA, emPCA and PathSPCA.

Pit Props (Jeffers 1967) is the 13 x 13 correlation matrix of 180 pit props (``data_fetch.load_pitprops()``),
wrapped as :meth:`repro.linalg.Covariance.from_matrix` (``n_samples = 180``); its trace is 13, and variances
are reported as a percentage of it.

Methods and settings
--------------------
* **PCA**: the six leading eigenvectors.
* **SPCA** (Zou, Hastie & Tibshirani 2006): six components jointly, cardinalities 7, 4, 4, 1, 1, 1 (Zou et
  al.'s Pit Props setting, Table 3 there), ridge ``1e-6`` (``elasticnet::spca`` default; on a 13 x 13
  correlation matrix the result does not depend on it).
* **GSPCA** (Moghaddam et al. 2006), **emPCA** (Sigg & Buhmann 2008) and **PathSPCA** (d'Aspremont et al.):
  sequential components, projection deflation of the correlation matrix, the same cardinalities 7, 4, 4, 1,
  1, 1, so that every cardinality-constrained method spends the same budget. (The paper does not list the
  settings of its Fig. 5; Zou et al.'s cardinalities are the usual Pit Props benchmark.) PathSPCA starts from
  the variable with the largest absolute loading on the first principal component of the deflated matrix
  (all variances are 1 on a correlation matrix, so the "largest variance" rule would be arbitrary).
* **NSPCA**: six non-negative components jointly, ``alpha = 100`` (about 24 times the largest eigenvalue,
  4.22: the components are close to orthonormal, ``||I - U'U||_F`` about 0.05, as Zass & Shashua's Sec. 2
  asks of a "large" alpha) and ``beta`` found by bisection so that the joint cardinality ``||U||_0``
  equals SPCA's, 7 + 4 + 4 + 1 + 1 + 1 = 18 (:func:`repro.nspca.nspca_for_cardinality` with
  ``n_components=6``, the bracketing of beta starting at ``1e-3`` times the gradient scale,
  ``beta_start=1e-3``), best of ten random restarts by the adjusted variance of the six components;
  ``exact=False``, so a run that misses 18 keeps the nearest and the CSV says so (``joint_exact``). NSPCA
  accepts the matrix directly (``precomputed=True``), so it runs on the correlation matrix itself, no data
  matrix is synthesized. Its components are ranked by explained variance.

Choices the paper leaves open (and why)
---------------------------------------
* **Explained variance** of non-orthogonal components is the *adjusted* variance of Shen & Huang (2008),
  :func:`repro.metrics.adjusted_variance` (variance of the projection onto the span of the first ``l``
  loadings, ``tr((V'V)^{-1} V'CV)``); it never double counts and equals the plain sum for orthonormal
  loadings. Zou et al.'s QR-based adjusted variance (:func:`repro.metrics.qr_adjusted_variance`), the measure
  behind their published 75.8 % for SPCA, is in the CSV too (``cumulative_qr``) and used for that check.
* **Cardinality** counts loadings with ``|w_i| > 0``.
* ``--quick``: NSPCA with two restarts and at most 500 sweeps.

References
----------
R. Zass and A. Shashua. Nonnegative sparse PCA. NIPS 19, 2006.
H. Zou, T. Hastie and R. Tibshirani. Sparse principal component analysis. JCGS 15(2), 2006.
J. Jeffers. Two case studies in the application of principal component analysis. Applied Statistics 16, 1967.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments.runner import _common
from experiments.runner.claims import NOT_REPRODUCED, PARTIAL, REPRODUCED, Claim, Outcome
from repro.baselines.gspca import gspca
from repro.baselines.pathspca import pathspca
from repro.baselines.spca_zou import spca_zou
from repro.em_sparse_pca import em_sparse_pca
from repro.linalg import Covariance, canonical_sign, projection_deflate
from repro.metrics import adjusted_variance, qr_adjusted_variance
from repro.nspca import nspca_for_cardinality

TITLE = "Zass & Shashua (2006) Fig. 5: Pit Props cumulative variance and cardinality, NSPCA vs sparse PCA"

N_COMP = 6
CARDS = (7, 4, 4, 1, 1, 1)
NSPCA_ALPHA = 100.0
NSPCA_BETA_START = 1e-3  # first positive beta of the bracketing, relative to max |A U| at beta = 0
METHODS = ("NSPCA", "PCA", "SPCA", "GSPCA", "emPCA", "PathSPCA")
SPARSE_METHODS = ("SPCA", "GSPCA", "emPCA", "PathSPCA")  # the cardinality-constrained methods
ZOU_SPCA_PCT = 75.8  # Zou et al. (2006), Table 3: SPCA, cumulative adjusted variance of 6 components


def pathspca_components(R: np.ndarray, cards) -> np.ndarray:
    """PathSPCA components one after another on a covariance matrix, projection deflation in between."""
    Ci = np.array(R, dtype=np.float64)
    out = []
    for K in cards:
        _, V = np.linalg.eigh(Ci)
        start = int(np.argmax(np.abs(V[:, -1])))
        p = pathspca(Covariance.from_matrix(Ci), [int(K)], start=start)
        w = p.components[0]
        out.append(w)
        Ci = projection_deflate(Ci, w)
    return np.array(out)


def compute(cfg: _common.Config) -> pd.DataFrame:
    from data_fetch import load_pitprops

    P = load_pitprops()
    R = P.to_numpy(dtype=np.float64)
    C = Covariance.from_matrix(R, n_samples=int(P.attrs.get("n_samples", 180)))
    total = float(np.trace(R))
    comps = {}
    _vals, vecs = np.linalg.eigh(R)
    comps["PCA"] = canonical_sign(vecs[:, ::-1][:, :N_COMP]).T
    comps["SPCA"], _ = spca_zou(C, N_COMP, cardinality=list(CARDS))
    comps["GSPCA"] = gspca(R, list(CARDS), N_COMP, precomputed=True).components
    comps["emPCA"], _ = em_sparse_pca(C, N_COMP, cardinality=list(CARDS), init="pc", renormalize=False)
    comps["PathSPCA"] = pathspca_components(R, CARDS)
    jr = nspca_for_cardinality(
        R,
        int(sum(CARDS)),
        n_components=N_COMP,
        alpha=NSPCA_ALPHA,
        n_restarts=2 if cfg.quick else 10,
        random_state=cfg.rng(0),
        max_iter=500 if cfg.quick else 3000,
        exact=False,
        score=lambda U: float(adjusted_variance(C, _unit(U))[-1]),
        beta_start=NSPCA_BETA_START,
        precomputed=True,
    )
    comps["NSPCA"] = jr.components[np.linalg.norm(jr.components, axis=1) > 0]
    rows = []
    for m in METHODS:
        W = comps[m]
        adj = adjusted_variance(C, W)
        qr = np.cumsum(qr_adjusted_variance(C, W))
        card = np.cumsum(np.count_nonzero(W, axis=1))
        for i in range(len(W)):
            rows.append(
                {
                    "method": m,
                    "n_components": i + 1,
                    "cumulative_variance": float(adj[i]),
                    "cumulative_pct": 100 * float(adj[i]) / total,
                    "cumulative_qr": float(qr[i]),
                    "cumulative_qr_pct": 100 * float(qr[i]) / total,
                    "cardinality": int(card[i] - (card[i - 1] if i else 0)),
                    "cumulative_cardinality": int(card[i]),
                    "min_loading": float(W[i].min()),
                    "overlap": float(np.linalg.norm(np.eye(i + 1) - W[: i + 1] @ W[: i + 1].T)),
                }
            )
    df = pd.DataFrame(rows)
    df.loc[df.method == "NSPCA", "beta"] = jr.beta
    df.loc[df.method == "NSPCA", "alpha"] = NSPCA_ALPHA
    df.loc[df.method == "NSPCA", "joint_exact"] = jr.exact
    return df


def _unit(U):
    W = np.array(U.T)
    n = np.linalg.norm(W, axis=1)
    W = W[n > 0] / n[n > 0, None]
    return W if len(W) else np.eye(1, U.shape[0])


def plot(df: pd.DataFrame, cfg: _common.Config):
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8.0, 3.2))
    for m in METHODS:
        g = df[df.method == m].sort_values("n_components")
        st = _common.method_style(m)
        ax1.plot(g.n_components, g.cumulative_pct, label=m, **st)
        ax2.plot(g.n_components, g.cumulative_cardinality, label=m, **st)
    ax1.set_xlabel("Number of principal components")
    ax1.set_ylabel("Cumulative explained variance (%, adjusted)")
    ax1.set_title("(a)")
    ax2.set_xlabel("Number of principal components")
    ax2.set_ylabel("Cumulative cardinality")
    ax2.set_title("(b)")
    for ax in (ax1, ax2):
        ax.set_xticks(range(1, N_COMP + 1))
    ax1.legend(loc="lower right", fontsize=7)
    fig.tight_layout()
    return fig


def _pct(df, method, l=N_COMP, col="cumulative_pct"):
    return float(df[(df.method == method) & (df.n_components == l)][col].iloc[0])


def _check_competitive(df):
    ns = df[df.method == "NSPCA"].set_index("n_components").cumulative_pct
    others = list(SPARSE_METHODS)
    best = df[df.method.isin(others)].groupby("n_components").cumulative_pct.max()
    worst = df[df.method.isin(others)].groupby("n_components").cumulative_pct.min()
    gap1, gapL = best[1] - ns[1], best[N_COMP] - ns[N_COMP]
    within = ns[N_COMP] >= worst[N_COMP] - 2.0
    ok = within and gapL <= gap1
    return Outcome(
        f"NSPCA {ns[1]:.1f}% -> {ns[N_COMP]:.1f}% at 1 -> {N_COMP} components; best sparse method "
        f"{best[1]:.1f}% -> {best[N_COMP]:.1f}% (gap {gap1:.1f} -> {gapL:.1f} points), lowest sparse "
        f"{worst[N_COMP]:.1f}% at {N_COMP}",
        REPRODUCED if ok else (PARTIAL if (within or gapL <= gap1) else NOT_REPRODUCED),
        "competitive = at 6 components within 2 points of the lowest cardinality-constrained method, "
        "and the gap to the best does not widen as components are added (criteria fixed before the run)",
    )


def _check_less_than_pca(df):
    piv = df.pivot(index="n_components", columns="method", values="cumulative_pct").sort_index()
    below = piv[list(SPARSE_METHODS)].gt(piv["NSPCA"], axis=0)  # sparse method explains more than NSPCA
    n_pairs, n_below = below.size, int(below.to_numpy().sum())
    below_median = piv["NSPCA"] < piv[list(SPARSE_METHODS)].median(axis=1)
    gap = piv[list(SPARSE_METHODS)].min(axis=1) - piv["NSPCA"]
    sparse_below_pca = bool((piv[list(SPARSE_METHODS)].max(axis=1) <= piv["PCA"] + 1e-9).all())
    L = int(piv.index.max())
    text = (
        f"NSPCA below the sparse method in {n_below}/{n_pairs} (components, method) pairs over 1..{L} "
        f"components; gap to the lowest sparse method {gap.min():+.1f} to {gap.max():+.1f} points; "
        f"at {L}: PCA {piv.loc[L, 'PCA']:.1f}%, NSPCA {piv.loc[L, 'NSPCA']:.1f}%, "
        + ", ".join(f"{m} {piv.loc[L, m]:.1f}%" for m in SPARSE_METHODS)
    )
    if n_below == n_pairs:
        verdict = REPRODUCED
    elif bool(below_median.all()) or n_below >= n_pairs / 2:
        verdict = PARTIAL
    else:
        verdict = NOT_REPRODUCED
    return Outcome(
        text,
        verdict,
        "tests the half that can fail, over the whole curve: reproduced if NSPCA explains less (adjusted) "
        "variance than every sparse PCA method at every number of components, partly if below their median "
        "at every number or in at least half the pairs. The other half (sparse methods below PCA: "
        f"{'holds' if sparse_below_pca else 'FAILS'}) holds for any loadings by the Ky Fan bound, so it is "
        "not evidence",
    )


def _check_zou(df):
    v = _pct(df, "SPCA", col="cumulative_qr_pct")
    card = int(df[(df.method == "SPCA") & (df.n_components == N_COMP)].cumulative_cardinality.iloc[0])
    ok = abs(v - ZOU_SPCA_PCT) <= 0.5
    return Outcome(
        f"SPCA: {v:.1f}% (QR-adjusted), cumulative cardinality {card}",
        REPRODUCED if ok else (PARTIAL if abs(v - ZOU_SPCA_PCT) <= 2 else NOT_REPRODUCED),
        "Zou et al.'s Table 3 value (the SPCA curve of Zass & Shashua's Fig. 5 is taken from there); "
        "reproduced within 0.5 points",
    )


CLAIMS = [
    Claim(
        "nspca-competitive",
        "Fig. 5 caption: although NSPCA is more constrained than other sparse PCA algorithms ... NSPCA shows "
        "competitive results when the number of principal components increases",
        "",
        _check_competitive,
    ),
    Claim(
        "constrained-below-pca",
        "Sec. 5: NSPCA can inherently explain less variance than sparse PCA algorithms, just like sparse PCA "
        "algorithms explain less variance than PCA",
        "",
        _check_less_than_pca,
    ),
    Claim(
        "spca-pitprops-75.8",
        "Zou et al. (2006), Table 3 (SPCA curve of Fig. 5): six SPCA components with cardinalities 7, 4, 4, "
        "1, 1, 1 explain 75.8% (adjusted) of the Pit Props variance",
        "75.8%",
        _check_zou,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
