"""Mattei, Bouveyron & Latouche (2016), Figure 3: variance explained by a 30-dimensional globally q-sparse
subspace on the Golub leukemia data, local vs global selections.

Protocol (Sec. 3.4): Golub et al. (1999), ``n = 38`` patients, ``p = 3051`` genes
(:func:`data_fetch.load_leukemia_golub`, as distributed by multtest: each sample already standardized over
genes), centred. For each cardinality ``q`` five selections of ``q`` genes:

* local (``d = 1``): the support of the first ``q``-sparse component by **SPCA** (Zou et al. 2006,
  :func:`repro.baselines.spca_zou_path`), **GSPPCA** (:class:`repro.GSPPCA` with ``d = 1``, the first ``q``
  variables of its ranking) and **SSPCA** (:mod:`repro.baselines.sspca` with ``d = 1``);
* global (``d = 30``): the support of the globally ``q``-sparse subspace by **GSPPCA** and **SSPCA**
  with ``d = 30``.

For each selection ``S`` the data are projected on the 30-dimensional subspace that is optimal on ``S``
(PCA of ``X[:, S]``: the post-processing of Moghaddam et al. 2005), and the percentage of explained
variance is Shen & Huang's (2008) adjusted variance of those loadings over the total variance; for
orthonormal loadings it is the sum of the 30 largest eigenvalues of ``C[S, S]`` over ``tr(C)``
(``min(30, q, n - 1)`` of them when fewer exist).

Choices the paper leaves open
-----------------------------
* **Grid of q**: {10, 20, 50, 100, 200, 300, 500, 750, 1000, 1500, 2000} (the published axis is not
  readable in the extraction).
* **SPCA**: ``ridge = inf``, the "p >> n" form Zou et al. recommend for gene expression (soft threshold of
  ``X'X a``), the first component with exactly ``q`` non-zeros.
* **GSPPCA**: one fit per ``d``; its ranking (by ``u``) gives every ``q`` (the nested models of Sec. 2.4), so
  the ``q`` genes are the first ``q`` of the ranking rather than the evidence's choice.
* **SSPCA**: one path of penalties (warm starts; ``alpha / alpha_max`` geometric, 24 values from 1 to 0.01
  for ``d = 1``, 16 values from 0.999 to 0.3 for ``d = 30``; ``tol = 1e-4``, at most 100 outer iterations
  per penalty, for time); for each ``q`` the solution with the smallest support of at least ``q`` genes,
  truncated to its ``q`` rows of largest norm (for ``d = 30`` the support jumps from 0 to about 300 genes
  as the penalty decreases, so below that every ``q`` is such a truncation).
  Both readings are reported: **A** every ``q`` of the grid, the truncated SSPCA supports
  included (as before); **B** only the ``q`` at or above the smallest support (of more than one gene) on
  the SSPCA (``d = 30``) path (the ``truncated`` column marks the ``q`` below it; on Golub the support of
  the ``d = 30`` path jumps from 1 gene to about 295 within ``alpha / alpha_max`` of 1e-4, so no penalty
  gives SSPCA (``d = 30``) fewer genes; above it only the grid of penalties truncates). The
  verdicts of ``global-retain-more`` and ``gsppca-beats-sspca`` stand when both readings agree and are
  "partly" with both results otherwise. The figure draws the truncated SSPCA points with grey markers.
* **"much more variance"**: two readings, both fixed before the run: **absolute**, both global methods above
  all three local ones at every ``q`` and by ``MUCH_MORE = 5`` points on average; **relative**, the margin of
  the worse global method over the best local one larger than the spread of the three local methods (the
  differences the paper calls "mostly similar") at every ``q``. Reproduced when both hold.
* **"highly significant"** (no test in the paper): a one-sided Wilcoxon signed-rank test over the ``q`` of
  the grid, paired, of the worse global method against the best local one; "highly significant" = p below
  0.01. The ``q`` are not independent samples (nested selections on the same 38 patients), so the p-value
  measures how consistently the gain holds across the cardinalities, not a sampling error; with 11 ``q``
  the smallest attainable p is 1/2048.
* **VEM cap**: whether each GSPPCA fit's VEM stopped at ``max_iter`` is recorded (``capped``) and counted
  in the notes.
* ``--quick``: the first 300 genes, ``q`` in {10, 50, 200}, ``d = 5`` for the global methods.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy import stats

from experiments._mattei import capped_note
from experiments.runner import _common
from experiments.runner.claims import NOT_REPRODUCED, PARTIAL, REPRODUCED, Claim, Outcome
from repro import GSPPCA
from repro.baselines import spca_zou_path, sspca_path

TITLE = "Mattei et al. (2016) Fig. 3: variance explained by a 30-dim globally q-sparse subspace (Golub)"

Q_GRID = (10, 20, 50, 100, 200, 300, 500, 750, 1000, 1500, 2000)
D_GLOBAL = 30
LOCAL = ("SPCA (d = 1)", "GSPPCA (d = 1)", "SSPCA (d = 1)")
GLOBAL = ("GSPPCA (d = 30)", "SSPCA (d = 30)")
MUCH_MORE = 5.0  # percentage points: "much more variance" on average over the grid
SIGNIFICANT = 0.01  # "highly significant": p below this
# "highly significant. This means that [...] selecting the variables according to a single axis will lead to
# very suboptimal choices": the size the sentence speaks of. Very suboptimal = the best local selection keeps
# at most 90% of the variance the worse global selection of the same q keeps (a relative loss of at least a
# tenth; 'very' rather than 'slightly'), fixed from the sentence before this rule saw the data.
VERY_SUBOPTIMAL = 0.10


def explained_percent(X: np.ndarray, support: np.ndarray, dim: int) -> float:
    """Percentage of the total variance captured by the best ``dim``-dim subspace supported on ``support``."""
    s = np.linalg.svd(X[:, support], compute_uv=False)
    k = min(dim, s.size)
    return float(100.0 * np.sum(s[:k] ** 2) / np.sum(X * X))


def _sspca_supports(X, d, qs, grid):
    """For each ``q``: the ``q`` genes, and whether ``q`` lies below every support (of more than one gene) of
    the path, so that only a truncation of a larger support gives ``q`` genes."""
    U0 = np.linalg.svd(X, full_matrices=False)[0][:, :d]
    amax = float(np.linalg.norm(X.T @ U0, axis=1).max())
    path = sspca_path(X, d, amax * grid, tol=1e-4, max_iter=100)
    norms = [np.linalg.norm(V, axis=1) for _, V in path]
    counts = np.array([(nv > 0).sum() for nv in norms])
    # Below the support size the path reaches after its jump no penalty gives q genes: those q are
    # truncations of a larger support (above it a finer grid of penalties would reach q).
    q_min = int(counts[counts > 1].min()) if (counts > 1).any() else int(counts.max())
    out, truncated = {}, {}
    for q in qs:
        ok = np.flatnonzero(counts >= q)
        j = ok[np.argmin(counts[ok])] if ok.size else len(norms) - 1
        out[q] = np.lexsort((np.arange(norms[j].size), -norms[j]))[:q]
        truncated[q] = bool(q < q_min)
    return out, truncated


# many small SVDs: one BLAS thread, the runner's policy for every experiment (_common.experiment_threads)
def compute(cfg: _common.Config) -> pd.DataFrame:
    from data_fetch import load_leukemia_golub

    X = load_leukemia_golub().X
    if cfg.quick:
        X = X[:, :300]
    X = _common.preprocess(X, "center")
    qs = (10, 50, 200) if cfg.quick else Q_GRID
    dg = 5 if cfg.quick else D_GLOBAL
    sel, trunc, capped = {}, {}, {}
    spca = spca_zou_path(X, qs, ridge=np.inf, renormalize=False)
    sel["SPCA (d = 1)"] = {q: np.flatnonzero(w) for q, w in zip(qs, spca.components, strict=True)}
    for d, label in ((1, "GSPPCA (d = 1)"), (dg, "GSPPCA (d = 30)")):
        m = GSPPCA(d, n_selected=qs[0], random_state=0).fit(X)
        sel[label] = {q: m.ranking_[:q] for q in qs}
        capped[label] = not m.vem_.converged
    sel["SSPCA (d = 1)"], trunc["SSPCA (d = 1)"] = _sspca_supports(X, 1, qs, np.geomspace(1.0, 0.01, 24))
    sel["SSPCA (d = 30)"], trunc["SSPCA (d = 30)"] = _sspca_supports(X, dg, qs, np.geomspace(0.999, 0.3, 16))
    rows = []
    for method in (*LOCAL, *GLOBAL):
        for q in qs:
            S = np.asarray(sel[method][q])
            rows.append(
                {
                    "method": method,
                    "q": q,
                    "n_selected": int(S.size),
                    "explained_percent": explained_percent(X, S, D_GLOBAL),
                    "d_global": dg,
                    "truncated": trunc.get(method, {}).get(q, False),
                    "capped": capped.get(method, False),
                }
            )
    return pd.DataFrame(rows)


def plot(df: pd.DataFrame, cfg: _common.Config):
    fig, ax = plt.subplots(figsize=(5.6, 3.6))
    # Local methods dashed or dotted with open or thin markers, global ones solid and filled, so that the
    # curves that lie on top of each other (the three local ones; the two global ones) stay visible.
    styles = {
        "SPCA (d = 1)": dict(color="tab:red", marker="x", ls="--", ms=7, zorder=3),
        "GSPPCA (d = 1)": dict(color="tab:blue", marker="o", ls=":", ms=8, mfc="none", lw=1.6, zorder=2),
        "SSPCA (d = 1)": dict(color="tab:purple", marker="+", ls="-.", ms=9, zorder=4),
        "GSPPCA (d = 30)": dict(color="tab:blue", marker="o", ls="-", ms=4, zorder=5),
        "SSPCA (d = 30)": dict(color="tab:purple", marker="s", ls="-", ms=7, mfc="none", lw=1.0, zorder=4),
    }
    for method, st in styles.items():
        g = df[df.method == method].sort_values("q")
        ax.plot(g.q, g.explained_percent, label=method, **st)
        t = g[g.truncated.astype(bool)] if "truncated" in g else g.iloc[:0]
        if method == "SSPCA (d = 30)" and len(t):
            ax.plot(
                t.q,
                t.explained_percent,
                "s",
                color="gray",
                ms=7,
                zorder=6,
                label="SSPCA (d = 30), truncated support",
            )
    ax.set_xscale("log")
    ax.set_xlabel("Number of selected genes q")
    ax.set_ylabel("Explained variance (%)")
    ax.legend(loc="upper left", fontsize=7)
    fig.tight_layout()
    return fig


def _wide(df):
    return df.pivot(index="q", columns="method", values="explained_percent")


def _untruncated_q(df):
    t = df[(df.method == "SSPCA (d = 30)") & ~df.truncated.astype(bool)] if "truncated" in df else df
    return sorted(t.q.unique())


def _global_margin(w):
    return w[list(GLOBAL)].min(axis=1) - w[list(LOCAL)].max(axis=1)


def _much_more(w):
    margin = _global_margin(w)
    spread = w[list(LOCAL)].max(axis=1) - w[list(LOCAL)].min(axis=1)
    every = bool((margin > 0).all())
    absolute = every and float(margin.mean()) >= MUCH_MORE
    relative = bool((margin > spread).all())
    verdict = REPRODUCED if absolute and relative else (PARTIAL if every else NOT_REPRODUCED)
    txt = (
        f"margin min {margin.min():.1f}, mean {margin.mean():.1f}, max {margin.max():.1f} points; above the "
        f"local spread at {int((margin > spread).sum())}/{len(margin)} q"
    )
    return verdict, txt


def _combine(a, b, what_a, what_b):
    """Verdict over the two readings: theirs when they agree, else partly."""
    (va, ta), (vb, tb) = a, b
    verdict = va if va == vb else PARTIAL
    return verdict, f"A ({what_a}): {ta} [{va}]; B ({what_b}): {tb} [{vb}]"


def _check_global(df):
    w = _wide(df)
    qb = _untruncated_q(df)
    if qb:
        reading_b = _much_more(w.loc[qb])
        what_b = f"q = {qb[0]}..{qb[-1]}, SSPCA not truncated"
    else:
        reading_b, what_b = (NOT_REPRODUCED, "SSPCA truncated at every q"), "no q"
    verdict, txt = _combine(_much_more(w), reading_b, f"q = {w.index.min()}..{w.index.max()}", what_b)
    return Outcome(
        txt,
        verdict,
        f"worse global over best local method; much more = above all three local ones at every q by "
        f"{MUCH_MORE:g} points on average (absolute) and by more than the local methods' spread at every q "
        "(relative), fixed before the run; readings A/B of the SSPCA truncation in the module docstring; "
        + capped_note(df[df.method.str.startswith("GSPPCA")].groupby("method").first()),
    )


def _beats(w):
    diff = w["GSPPCA (d = 30)"] - w["SSPCA (d = 30)"]
    wins = int((diff > 0).sum())
    verdict = REPRODUCED if wins == len(diff) else (PARTIAL if wins >= len(diff) / 2 else NOT_REPRODUCED)
    return (
        verdict,
        f"GSPPCA - SSPCA min {diff.min():.2f}, max {diff.max():.2f} points, ahead at {wins}/{len(diff)} q",
    )


def _check_gsppca_sspca(df):
    w = _wide(df)
    qb = _untruncated_q(df)
    if qb:
        verdict, txt = _combine(
            _beats(w), _beats(w.loc[qb]), "every q", f"q = {qb[0]}..{qb[-1]}, SSPCA not truncated"
        )
    else:
        verdict, txt = _beats(w)
    return Outcome(txt, verdict, "consistently = ahead at every q (d = 30 for both)")


def _check_significant(df):
    w = _wide(df)
    margin = _global_margin(w)
    if len(margin) < 2:
        return Outcome("fewer than 2 q", NOT_REPRODUCED, "needs the q grid")
    # the size: the relative loss of the best local selection against the worse global one, per q, tested
    # against the 'very suboptimal' loss with a one-sided Wilcoxon signed-rank test (H0: median relative
    # loss <= VERY_SUBOPTIMAL). A margin of +0.01 point at every q is ahead everywhere (the plain test's
    # p = 0.00049 with 11 q) but fails this one.
    glob = w[list(GLOBAL)].min(axis=1)
    loss = margin / glob
    excess = loss - VERY_SUBOPTIMAL
    p_size = float(stats.wilcoxon(excess, alternative="greater").pvalue) if (excess != 0).any() else 1.0
    p_any = float(stats.wilcoxon(margin, alternative="greater").pvalue) if (margin != 0).any() else 1.0
    big = p_size < SIGNIFICANT
    ahead = p_any < SIGNIFICANT
    verdict = REPRODUCED if big else (PARTIAL if ahead else NOT_REPRODUCED)
    return Outcome(
        f"relative loss of the best local method (margin / worse global): median {loss.median():.1%}, min "
        f"{loss.min():.1%} (q = {loss.idxmin()}), max {loss.max():.1%}; above {VERY_SUBOPTIMAL:.0%} at "
        f"{int((loss > VERY_SUBOPTIMAL).sum())}/{len(loss)} q; one-sided Wilcoxon p = {p_size:.2g} against "
        f"{VERY_SUBOPTIMAL:.0%} (against 0: p = {p_any:.2g}; margins {margin.min():.1f} to "
        f"{margin.max():.1f} points)",
        verdict,
        "'highly significant ... very suboptimal choices' tests a size: very suboptimal = the best local "
        f"selection keeps at most {1 - VERY_SUBOPTIMAL:.0%} of the variance of the worse global one "
        f"(relative loss >= {VERY_SUBOPTIMAL:.0%}, from the sentence, before the data); highly significant = "
        f"one-sided Wilcoxon signed-rank p < {SIGNIFICANT:g} for the loss exceeding that, paired by q (the q "
        "are nested selections on the same data, not independent samples: module docstring); partly when "
        "the global methods are only significantly ahead (p < 0.01 against a zero loss), not by that much",
    )


def _check_local(df):
    w = _wide(df)
    spread = w[list(LOCAL)].max(axis=1) - w[list(LOCAL)].min(axis=1)
    return Outcome(
        f"spread of the three local methods: median {spread.median():.1f}, max {spread.max():.1f} points",
        REPRODUCED if spread.median() <= MUCH_MORE else NOT_REPRODUCED,
        f"mostly similar = median spread over the grid at most {MUCH_MORE:g} points (fixed before the run)",
    )


CLAIMS = [
    Claim(
        "global-retain-more",
        "Sec. 3.4, Fig. 3: the variables selected by GSPPCA and SSPCA (d = 30) retain much more variance "
        "than the three local methods",
        "",
        _check_global,
    ),
    Claim(
        "gsppca-beats-sspca",
        "Sec. 3.4: among the two global methods, GSPPCA consistently outperforms SSPCA",
        "",
        _check_gsppca_sspca,
    ),
    Claim(
        "global-gain-significant",
        "Sec. 3.4: the improvement of the global over the local methods is highly significant. This means "
        "that achieving global sparsity by selecting the variables according to a single axis will lead to "
        "very suboptimal choices",
        "",
        _check_significant,
    ),
    Claim(
        "local-similar",
        "Sec. 3.4: the performances of the three local methods are mostly similar",
        "",
        _check_local,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
