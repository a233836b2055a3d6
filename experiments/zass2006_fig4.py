"""Zass & Shashua (2006), Figure 4: ROC curves of a linear SVM for face detection on CBCL, on ten features
from (a) NSPCA with several (alpha, beta) and (b) NMF, PCA, GSPCA and NSPCA (alpha = 5e8, beta = 2e6).

Protocol (Sec. 5): the CBCL training set (2429 faces, 4548 non-faces, ``load_cbcl_training``); 1000 faces
and 2000 non-faces train the SVM, the rest (1429 faces, 2548 non-faces) is the test set; the dimensionality
reduction is learnt on the 1000 training faces only. The area under each ROC curve (AUC) is reported.

Choices the paper leaves open
-----------------------------
* **Split**: drawn at random (seeded), ``N_SPLITS = 15`` splits in a full run (three earlier, too
  few to separate AUC differences of 0.001-0.01 between methods); the curves drawn are those of split 0,
  the claims use the mean AUC over splits (the CSV has every split's AUC, the ROC points of split 0 only),
  and the note of ``nspca-best-roc``
  compares the methods split by split (paired: wins and a Wilcoxon signed-rank test).
* **Scaling**: grey levels 0..255 centred by the mean of the 1000 training faces, as in ``zass2006_fig2``
  (the scaling under which the paper's alpha and beta behave as described). Note that A = X X' is then
  built from 1000 faces, not 2429, so the same alpha and beta weigh about 2.4 times more against the
  variance term than in Fig. 2; the paper does not say it rescaled them, so neither do we.
* **Features**: projections ``(x - mean) @ W'`` on the ten unit-norm factors for NSPCA, PCA and GSPCA (55
  pixels per factor, as in Fig. 2f); for NMF (fitted on the uncentred faces scaled to 0..1,
  ``init="nndsvda"``) the non-negative codes of ``NMF.transform`` with the factors held fixed.
* **Classifier**: scikit-learn ``LinearSVC`` (C = 1, squared hinge) after standardizing the ten features on
  the training set; the ROC uses the SVM's decision values on the test set.
* **NSPCA settings of panel (a)**: the four combinations of alpha in {2e7, 5e8} and beta in {0, 2e6}
  (the values of Fig. 2); random non-negative start, relative tolerance 1e-8, 3000 sweeps at most.
* **Sensitivity check** (full runs only; not a paper setting, not used by the claims' verdicts): the four
  NSPCA settings again with alpha and beta multiplied by 1000/2429, which restores Fig. 2's balance of the
  penalties against ``A``; rows ``method == "NSPCA-rescaled"``, reported in the note of ``nspca-best-roc``.
* ``--quick``: one split, 60 NSPCA sweeps, forward-only GSPCA, 200 NMF iterations, no sensitivity check.
"""

from __future__ import annotations

import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy import stats
from sklearn.decomposition import NMF, PCA
from sklearn.metrics import auc, roc_curve
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from experiments.runner import _common
from experiments.runner.claims import NOT_REPRODUCED, PARTIAL, REPRODUCED, Claim, Outcome
from repro.baselines.gspca import GSPCA
from repro.nspca import NSPCA

TITLE = "Zass & Shashua (2006) Fig. 4: ROC of a linear SVM on ten NSPCA / PCA / NMF / GSPCA features (CBCL)"

N_FEATURES = 10
N_TRAIN_FACES, N_TRAIN_NONFACES = 1000, 2000
NSPCA_SETTINGS = ((2e7, 0.0), (5e8, 0.0), (2e7, 2e6), (5e8, 2e6))
BEST = (5e8, 2e6)  # the NSPCA setting of panel (b)
GSPCA_CARD = 55
N_SPLITS = 15  # random train/test splits in a full run (module docstring)
PAIRED_P = 0.05  # a paired difference over the splits counts as decided below this two-sided p
RESCALE = N_TRAIN_FACES / 2429  # sensitivity check only: Fig. 2's alpha, beta per face of A


def _sci(v: float) -> str:
    if v == 0:
        return "0"
    e = int(np.floor(np.log10(v)))
    return f"{v / 10**e:g}e{e}"


def _nspca_label(alpha, beta) -> str:
    return f"NSPCA a={_sci(alpha)} b={_sci(beta)}"


def _split(y: np.ndarray, rng: np.random.Generator):
    faces = np.flatnonzero(y == 1)
    non = np.flatnonzero(y == 0)
    tr = np.concatenate(
        [rng.choice(faces, N_TRAIN_FACES, replace=False), rng.choice(non, N_TRAIN_NONFACES, replace=False)]
    )
    te = np.setdiff1d(np.arange(len(y)), tr)
    return tr, te


def _sparsity(U: np.ndarray) -> tuple[int, int]:
    """Non-zeros of U and the number of factors with at most 3 non-zero pixels."""
    nnz = np.count_nonzero(U, axis=0)
    return int(nnz.sum()), int((nnz <= 3).sum())


def _svm_roc(F_tr, y_tr, F_te, y_te):
    clf = make_pipeline(StandardScaler(), LinearSVC(C=1.0, max_iter=20000))
    clf.fit(F_tr, y_tr)
    score = clf.decision_function(F_te)
    fpr, tpr, _ = roc_curve(y_te, score)
    return fpr, tpr, float(auc(fpr, tpr))


def compute(cfg: _common.Config) -> pd.DataFrame:
    from data_fetch import load_cbcl_training

    data = load_cbcl_training()
    X_all = np.asarray(data.X, dtype=np.float64)  # 0..255
    y = np.asarray(data.y).astype(int)
    n_splits = 1 if cfg.quick else N_SPLITS
    max_iter = 60 if cfg.quick else 3000
    rows = []
    for split in range(n_splits):
        tr, te = _split(y, cfg.rng(split))
        faces_tr = X_all[tr][y[tr] == 1]
        extractors, sparsity = {}, {}
        for i, (alpha, beta) in enumerate(NSPCA_SETTINGS):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = NSPCA(
                    N_FEATURES,
                    alpha=alpha,
                    beta=beta,
                    max_iter=max_iter,
                    random_state=cfg.rng(split, 100 + i),
                ).fit(faces_tr)
            extractors[(_nspca_label(alpha, beta), "NSPCA", alpha, beta)] = est.transform
            sparsity[_nspca_label(alpha, beta)] = _sparsity(est.U_)
        if not cfg.quick:
            # sensitivity check (not a paper setting): alpha and beta scaled by 1000/2429, which keeps the
            # balance of Fig. 2's A = X X' of all 2429 faces against this split's A of 1000 faces
            for i, (alpha, beta) in enumerate(NSPCA_SETTINGS):
                a_s, b_s = alpha * RESCALE, beta * RESCALE
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est = NSPCA(
                        N_FEATURES,
                        alpha=a_s,
                        beta=b_s,
                        max_iter=max_iter,
                        random_state=cfg.rng(split, 100 + i),
                    ).fit(faces_tr)
                lab = "rescaled " + _nspca_label(alpha, beta)
                extractors[(lab, "NSPCA-rescaled", a_s, b_s)] = est.transform
                sparsity[lab] = _sparsity(est.U_)
        pca = PCA(N_FEATURES, svd_solver="full").fit(faces_tr)
        extractors[("PCA", "PCA", np.nan, np.nan)] = pca.transform
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nmf = NMF(
                N_FEATURES,
                init="nndsvda",
                max_iter=200 if cfg.quick else 1000,
                random_state=int(cfg.rng(split, 200).integers(2**31 - 1)),
            ).fit(faces_tr / 255.0)
        extractors[("NMF", "NMF", np.nan, np.nan)] = lambda Z, m=nmf: m.transform(Z / 255.0)
        gs = GSPCA(N_FEATURES, cardinality=GSPCA_CARD, direction="forward" if cfg.quick else "both").fit(
            faces_tr
        )
        extractors[("GSPCA", "GSPCA", np.nan, np.nan)] = gs.transform
        for (label, method, alpha, beta), f in extractors.items():
            F = f(X_all)
            fpr, tpr, area = _svm_roc(F[tr], y[tr], F[te], y[te])
            common = {"label": label, "method": method, "alpha": alpha, "beta": beta, "split": split}
            l0, n_tiny = sparsity.get(label, (np.nan, np.nan))
            rows.append({"kind": "auc", **common, "auc": area, "n_test": len(te), "l0": l0, "n_tiny": n_tiny})
            if split == 0:  # the curves drawn; the other splits' AUCs are enough (keeps the CSV small)
                rows.extend(
                    {"kind": "roc", **common, "fpr": a, "tpr": b} for a, b in zip(fpr, tpr, strict=True)
                )
    return pd.DataFrame(rows)


def plot(df: pd.DataFrame, cfg: _common.Config):
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(7.2, 3.2))
    roc = df[(df.kind == "roc") & (df.split == 0)]
    aucs = df[df.kind == "auc"].groupby("label")["auc"].mean()
    colors = ["tab:blue", "tab:green", "tab:red", "tab:orange"]
    for (alpha, beta), color in zip(NSPCA_SETTINGS, colors, strict=True):
        lab = _nspca_label(alpha, beta)
        g = roc[roc.label == lab]
        ax1.plot(
            g.fpr,
            g.tpr,
            color=color,
            label=rf"$\alpha$={_sci(alpha)}, $\beta$={_sci(beta)} (AUC {aucs[lab]:.3f})",
        )
    best = _nspca_label(*BEST)
    for method, lab in (("NMF", "NMF"), ("PCA", "PCA"), ("GSPCA", "GSPCA"), ("NSPCA", best)):
        g = roc[roc.label == lab]
        st = _common.method_style(method)
        st.pop("marker", None)
        ax2.plot(g.fpr, g.tpr, **st, label=f"{method} (AUC {aucs[lab]:.3f})")
    titles = (r"(a) NSPCA, different $\alpha$ and $\beta$", "(b) NMF, PCA, GSPCA, NSPCA")
    for ax, title in zip((ax1, ax2), titles, strict=True):
        ax.set_xlim(0, 0.5)
        ax.set_ylim(0.5, 1.0)
        ax.set_xlabel("false positive rate")
        ax.set_ylabel("true positive rate")
        ax.set_title(title)
        ax.legend(loc="lower right", fontsize=6)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- claims
def _mean_auc(df):
    return df[df.kind == "auc"].groupby("label")["auc"].mean()


def _check_best(df):
    a = _mean_auc(df)
    best = a[_nspca_label(*BEST)]
    others = {m: a[m] for m in ("NMF", "PCA", "GSPCA")}
    text = f"AUC NSPCA(5e8, 2e6) {best:.4f}; " + ", ".join(f"{m} {v:.4f}" for m, v in others.items())
    n_beaten = sum(best > v for v in others.values())
    verdict = REPRODUCED if n_beaten == 3 else (PARTIAL if n_beaten == 2 else NOT_REPRODUCED)
    n = int(df[df.kind == "auc"]["split"].nunique())
    note = f"mean over {n} random split(s); NSPCA beats {n_beaten} of 3"
    resc = a[[lab for lab in a.index if lab.startswith("rescaled ")]]
    if len(resc):
        note += (
            f". Sensitivity check: with alpha, beta scaled by 1000/2429 the best NSPCA setting reaches "
            f"AUC {resc.max():.4f} ({resc.idxmax()[9:]})"
        )
    panel_a = a[[_nspca_label(*st) for st in NSPCA_SETTINGS]]
    note += f". Best NSPCA setting of panel (a): {panel_a.idxmax()[6:]} with AUC {panel_a.max():.4f}"
    tiny = df[(df.kind == "auc") & (df.label == _nspca_label(*BEST))]["n_tiny"].mean()
    note += (
        f". NSPCA(5e8, 2e6) has on average {tiny:.1f} of 10 factors with <= 3 pixels on the 1000-face scatter"
    )
    note += _paired_note(df)
    return Outcome(text, verdict, note)


def _paired(df, label, other):
    """Per-split AUC differences ``label - other``: mean, wins, two-sided Wilcoxon p (1 with < 2 splits)."""
    auc_ = df[df.kind == "auc"].pivot_table(index="split", columns="label", values="auc")
    if label not in auc_ or other not in auc_:
        return None
    diff = (auc_[label] - auc_[other]).dropna()
    nonzero = diff[diff != 0]
    p = float(stats.wilcoxon(nonzero).pvalue) if len(nonzero) >= 2 else 1.0
    return float(diff.mean()), int((diff > 0).sum()), len(diff), p


def _paired_note(df):
    """Split-by-split comparison of NSPCA (the paper's setting and its rescaled twin) with each method."""
    parts, decided = [], []
    a = _mean_auc(df)
    resc_labels = [lab for lab in a.index if lab.startswith("rescaled ")]
    labels = [_nspca_label(*BEST), "rescaled " + _nspca_label(*BEST)]
    if resc_labels and a[resc_labels].idxmax() not in labels:  # the best rescaled one (chosen by its mean)
        labels.append(a[resc_labels].idxmax())
    for lab in labels:
        cells = []
        for other in ("NMF", "PCA", "GSPCA"):
            r = _paired(df, lab, other)
            if r is None:
                continue
            mean, wins, n, p = r
            cells.append(f"{other} {mean:+.4f} (ahead in {wins}/{n}, p = {p:.2g})")
            if lab == labels[1]:
                decided.append((lab, other, mean, p))
        if cells:
            parts.append(f"{lab} minus " + ", ".join(cells))
    if not parts:
        return ""
    n = int(df[df.kind == "auc"]["split"].nunique())
    resc = [(o, m, p) for lab, o, m, p in decided if lab.startswith("rescaled ")]
    if resc:
        ahead = [o for o, m, p in resc if m > 0 and p < PAIRED_P]
        behind = [o for o, m, p in resc if m < 0 and p < PAIRED_P]
        open_ = [o for o, m, p in resc if p >= PAIRED_P]
        verdict = (
            "with the penalties rescaled, NSPCA(5e8, 2e6) is significantly ahead of "
            f"{', '.join(ahead) or 'none'}, behind {', '.join(behind) or 'none'}, not separated from "
            f"{', '.join(open_) or 'none'} (two-sided p < {PAIRED_P:g} over {n} splits): the scale of alpha, "
            "beta "
            + (
                "accounts for the gap"
                if len(ahead) == len(resc)
                else ("does not account for the gap" if behind else "cannot be decided")
            )
        )
    else:
        verdict = "no rescaled rows in this run"
    return ". Paired over the splits: " + "; ".join(parts) + ". Decided: " + verdict


def _check_alpha_beta(df):
    a = _mean_auc(df)
    v = {s: a[_nspca_label(*s)] for s in NSPCA_SETTINGS}
    pairs = [
        ((5e8, 0.0), (2e7, 0.0)),
        ((5e8, 2e6), (2e7, 2e6)),  # higher alpha
        ((2e7, 2e6), (2e7, 0.0)),
        ((5e8, 2e6), (5e8, 0.0)),
    ]  # higher beta
    n_ok = sum(v[hi] > v[lo] for hi, lo in pairs)
    text = "; ".join(f"({s[0]:.0e}, {s[1]:.0e}) {val:.4f}" for s, val in v.items())
    verdict = REPRODUCED if n_ok == 4 else (PARTIAL if n_ok >= 2 else NOT_REPRODUCED)
    return Outcome(text, verdict, f"{n_ok} of 4 comparisons (higher alpha or higher beta -> higher AUC) hold")


CLAIMS = [
    Claim(
        "nspca-best-roc",
        "Sec. 5, Fig. 4(b): better generalization (higher ROC) with the NSPCA features (alpha = 5e8, "
        "beta = 2e6) than with NMF, PCA and GSPCA",
        "",
        _check_best,
    ),
    Claim(
        "roc-improves-with-alpha-beta",
        "Sec. 5, Fig. 4(a): as the factors become less overlapping (higher alpha) and sparser (higher "
        "beta), the ROC curve is higher",
        "",
        _check_alpha_beta,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
