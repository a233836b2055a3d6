"""Sigg & Buhmann (2008), Figure 4: unsupervised gene selection on the leukemia data, Jaccard score vs the
number of selected genes.

Protocol (Sec. 5.3, after Varshavsky et al. 2006): select a subset of ``K`` genes, cluster the 72 patients
on those genes with k-means (k = 3), and compare the clusters with the true labels (ALL / MLL / AML) by the
pair-counting Jaccard score (:func:`repro.metrics.jaccard_score`; 1 = perfect agreement). Each subset is
clustered from 100 random centroid initializations; the figure shows mean and standard deviation, with a
small horizontal jitter per method as in the paper. The selections:

* **emPCA**: the support of the first sparse principal component with ``K`` non-zeros
  (:func:`repro.em_sparse_pca.em_sparse_pca_path`, started from the first principal component);
* **emPCA (nn)**: the support of the first *non-negative* sparse component with ``K`` non-zeros (best of ten
  random non-negative starts);
* **CE + SR**: the ``K`` genes of largest contribution to the SVD entropy (simple ranking,
  :func:`repro.baselines.cesr.cesr_select`), the method Varshavsky et al. propose;
* **all genes**: k-means on all 12582 genes, the reference the paper's claim compares with.

Choices the paper leaves open (and why)
---------------------------------------
* **Preprocessing, decided from the paper's own numbers**: the experiment runs the whole figure
  under both readings, raw expression values (``preprocessing == "raw"``) and standardized genes (zero
  mean, unit variance; ``"standardized"``), for the selection, the CE scores and the clustering. Sec. 5 says
  of its two data sets "both were standardized", but under that reading the paper's own comparison method,
  CE + SR (Varshavsky et al.'s method, which Sec. 5.3 calls competitive), clusters at the chance level
  (the mean Jaccard of permuted labels, ``method == "chance"``) and below all genes, while on the raw
  values it is well above chance. A reading under which the paper's baseline is at chance is unlikely to
  be the one its Fig. 4 shows, so the raw values are the reading of Sec. 5.3 (``PAPER_READING``): the
  figure and the verdict use them; the standardized reading's values are in the claim's note.
* **k-means**: ``sklearn.cluster.KMeans(n_clusters=3, n_init=1, init="random", random_state=s)`` (Lloyd,
  centroids drawn among the samples) for 100 seeds ``s`` drawn from ``--seed``; the same seeds for every
  subset.
* **Grid**: ``K = 10, 20, ..., 250`` (the paper's axis runs to 250; 70 is on the grid).
* **Significance** of "significantly better" is Welch's t-test over the 100 initializations, p < 0.01.
* ``--quick``: the first 2000 genes, ``K`` in {20, 70}, 5 initializations, one random start for emPCA (nn).

References
----------
C. D. Sigg and J. M. Buhmann. Expectation-maximization for sparse and non-negative PCA. ICML 2008.
R. Varshavsky, A. Gottlieb, M. Linial and D. Horn. Novel unsupervised feature filtering of biological data.
Bioinformatics 22(14), e507-e513, 2006.
"""

from __future__ import annotations

import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy import stats
from sklearn.cluster import KMeans

from experiments.runner import _common
from experiments.runner.claims import NOT_REPRODUCED, PARTIAL, REPRODUCED, Claim, Outcome
from repro.baselines.cesr import ce_scores
from repro.em_sparse_pca import em_sparse_pca_path
from repro.metrics import jaccard_score

TITLE = "Sigg & Buhmann (2008) Fig. 4: Jaccard score of k-means on genes selected by sparse PCA (leukemia)"

K_GRID = tuple(range(10, 251, 10))
N_INIT = 100
N_CLUSTERS = 3
CLAIM_K = 70
METHODS = ("emPCA", "emPCA (nn)", "CE + SR")
READINGS = {"raw": "none", "standardized": "standardize"}  # preprocessing column -> _common.preprocess
PAPER_READING = "raw"  # the reading of Sec. 5.3 (module docstring): CE + SR is at chance on the other
NEAR_CHANCE = 0.1  # a mean Jaccard within this of chance: the method clusters at the chance level
N_CHANCE = 1000  # permutations of the labels for the chance level of the Jaccard score
STYLE_KEY = {"emPCA": "emPCA", "emPCA (nn)": "emPCA(nn)", "CE + SR": "CE+SR"}


def jaccard_runs(X: np.ndarray, y: np.ndarray, seeds) -> np.ndarray:
    """Jaccard score of k-means (k = 3, one random initialization per seed) against the labels ``y``."""
    out = np.empty(len(seeds))
    for i, s in enumerate(seeds):
        km = KMeans(n_clusters=N_CLUSTERS, n_init=1, init="random", random_state=int(s)).fit(X)
        out[i] = jaccard_score(y, km.labels_)
    return out


def _one_reading(X, y, ks, seeds, cfg) -> list[dict]:
    """Selections of every method on ``X`` (one preprocessing) and the Jaccard of their k-means runs."""
    supports = {}
    em = em_sparse_pca_path(X, ks, renormalize=False, init="pc")
    supports["emPCA"] = [np.flatnonzero(w) for w in em.components]
    em_nn = em_sparse_pca_path(
        X,
        ks,
        nonneg=True,
        renormalize=False,
        init="random",
        n_restarts=1 if cfg.quick else None,
        random_state=cfg.rng(1),
    )
    supports["emPCA (nn)"] = [np.flatnonzero(w) for w in em_nn.components]
    ce = ce_scores(X)
    order = np.lexsort((np.arange(ce.size), -ce))
    supports["CE + SR"] = [order[:K] for K in ks]
    rows = []
    for method in METHODS:
        for K, S in zip(ks, supports[method], strict=True):
            scores = jaccard_runs(X[:, S], y, seeds)
            rows += [
                {
                    "method": method,
                    "n_features": int(K),
                    "n_selected": int(S.size),
                    "init": i,
                    "seed": int(s),
                    "jaccard": float(v),
                }
                for i, (s, v) in enumerate(zip(seeds, scores, strict=True))
            ]
    scores = jaccard_runs(X, y, seeds)
    rows += [
        {
            "method": "all genes",
            "n_features": X.shape[1],
            "n_selected": X.shape[1],
            "init": i,
            "seed": int(s),
            "jaccard": float(v),
        }
        for i, (s, v) in enumerate(zip(seeds, scores, strict=True))
    ]
    return rows


def compute(cfg: _common.Config) -> pd.DataFrame:
    from data_fetch import load_leukemia_armstrong

    data = load_leukemia_armstrong()
    raw, y = data.X, np.asarray(data.y)
    if cfg.quick:
        raw = raw[:, :2000]
    ks = (20, CLAIM_K) if cfg.quick else K_GRID
    n_init = 5 if cfg.quick else N_INIT
    seeds = cfg.rng(0).integers(0, 2**31 - 1, size=n_init)

    frames = []
    for reading, how in READINGS.items():
        t0 = time.perf_counter()
        part = pd.DataFrame(_one_reading(_common.preprocess(raw, how), y, ks, seeds, cfg))
        part["preprocessing"] = reading
        part["select_seconds"] = time.perf_counter() - t0
        frames.append(part)
    # chance: the Jaccard score of the labels against a random permutation of themselves (same cluster sizes)
    rng = cfg.rng(2)
    chance = [jaccard_score(y, rng.permutation(y)) for _ in range(50 if cfg.quick else N_CHANCE)]
    frames.append(
        pd.DataFrame(
            {
                "method": "chance",
                "n_features": 0,
                "n_selected": 0,
                "init": np.arange(len(chance)),
                "seed": 0,
                "jaccard": chance,
                "preprocessing": "none",
            }
        )
    )
    return pd.concat(frames, ignore_index=True)


def plot(df: pd.DataFrame, cfg: _common.Config):
    df = df[df.preprocessing == PAPER_READING]
    fig, ax = plt.subplots(figsize=(5.0, 3.4))
    agg = df.groupby(["method", "n_features"])["jaccard"].agg(["mean", "std"]).reset_index()
    ks = sorted(df[df.method != "all genes"].n_features.unique())
    step = (ks[1] - ks[0]) if len(ks) > 1 else 10
    jitter = {m: (i - 1) * 0.12 * step for i, m in enumerate(METHODS)}
    for m in METHODS:
        g = agg[agg.method == m].sort_values("n_features")
        st = _common.method_style(STYLE_KEY[m])
        st.pop("linestyle", None)
        ax.errorbar(
            g.n_features + jitter[m],
            g["mean"],
            yerr=g["std"],
            label=m,
            capsize=2,
            lw=0.9,
            elinewidth=0.7,
            **st,
        )
    ref = df[df.method == "all genes"].jaccard
    lo, hi = min(ks) - step / 2, max(ks) + step / 2
    ax.axhline(ref.mean(), color="black", ls="--", lw=0.9, label="all genes (mean)")
    ax.fill_between([lo, hi], ref.mean() - ref.std(), ref.mean() + ref.std(), color="black", alpha=0.08, lw=0)
    ax.set_xlim(lo, hi)
    ax.set_xlabel("Number of Features")
    ax.set_ylabel("Jaccard Score")
    ax.set_ylim(0.2, 0.9)
    ax.legend(loc="upper right", fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


def _welch(a, b) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # near-constant samples (one k-means optimum) lose precision
        t = stats.ttest_ind(a, b, equal_var=False)
    return float(t.pvalue) if np.isfinite(t.pvalue) else (0.0 if a.mean() != b.mean() else 1.0)


def _claim_values(df, reading):
    d = df[df.preprocessing == reading]
    sel = d[(d.method == "emPCA (nn)") & (d.n_features == CLAIM_K)].jaccard
    ref = d[d.method == "all genes"].jaccard
    return sel, ref


def _check_70(df):
    chance = float(df[df.method == "chance"].jaccard.mean())
    sel, ref = _claim_values(df, PAPER_READING)
    p = _welch(sel, ref)
    better = sel.mean() > ref.mean()
    d = df[df.preprocessing == PAPER_READING]
    others = (
        d[(d.n_features == CLAIM_K) & d.method.isin(["emPCA", "CE + SR"])].groupby("method").jaccard.mean()
    )
    txt = ", ".join(f"{m} {v:.3f}" for m, v in others.items())
    # the evidence for the reading: the paper's comparison method CE + SR under each reading, against chance
    evidence, near = [], {}
    for reading in READINGS:
        r = df[df.preprocessing == reading]
        ce = r[r.method == "CE + SR"].groupby("n_features").jaccard.mean()
        near[reading] = bool(ce.mean() - chance < NEAR_CHANCE)
        allg = r[r.method == "all genes"].jaccard.mean()
        ce70 = ce.get(CLAIM_K, np.nan)
        evidence.append(
            f"{reading}: CE + SR {ce70:.2f} at K = {CLAIM_K} (mean over K {ce.mean():.2f}), "
            f"all genes {allg:.2f}"
        )
    other = next(r for r in READINGS if r != PAPER_READING)
    so, ro = _claim_values(df, other)
    return Outcome(
        f"{PAPER_READING} values, Jaccard at K = {CLAIM_K}: emPCA (nn) {sel.mean():.3f} +/- "
        f"{sel.std():.3f} vs "
        f"all genes {ref.mean():.3f} +/- {ref.std():.3f} (Welch p = {p:.2g}; {len(sel)} inits); {txt}",
        REPRODUCED if (better and p < 0.01) else (PARTIAL if better else NOT_REPRODUCED),
        "significantly = Welch's t-test p < 0.01 over the k-means initializations (fixed before the run). "
        f"Reading: {PAPER_READING} expression values (module docstring). Sec. 5 says its data sets were "
        + (
            "standardized, but under that reading the paper's own comparison method clusters at chance "
            f"(its mean over K within {NEAR_CHANCE:g} of chance), on the raw values it does not; "
            if near["standardized"] and not near["raw"]
            else "standardized; in this run CE + SR's distance to chance does not separate the readings "
            "(near chance: " + ", ".join(k for k, v in near.items() if v) + "); "
        )
        + f"evidence: chance (permuted labels) {chance:.2f}; "
        + "; ".join(evidence)
        + ". "
        f"The other reading, not counted: {other} gives emPCA (nn) {so.mean():.3f} +/- {so.std():.3f} vs all "
        f"genes {ro.mean():.3f} +/- {ro.std():.3f} (p = {_welch(so, ro):.2g})",
    )


CLAIMS = [
    Claim(
        "nn-70-genes-beat-all",
        "Sec. 5.3, Fig. 4: selecting 70 genes according to the first non-negative sparse PC results in a "
        "significantly better Jaccard score than a clustering of the full data set",
        "",
        _check_70,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
