"""Mattei, Bouveyron & Latouche (2016), Table 2: the 200 pixels selected by SPCA, SSPCA and GSPPCA on
sevens of three MNIST variations.

Protocol (Sec. 3.4, "Interpretability"): ``n = 500`` grey-scale images of handwritten sevens from
mnist-basic, mnist-back-rand and mnist-back-image (Larochelle et al. 2007), ``q = 200`` pixels selected by
SPCA (Zou et al. 2006, ``d = 1``: the support of the first sparse component with 200 non-zeros,
:func:`repro.baselines.spca_zou`), SSPCA (``d = 100``, :class:`repro.baselines.SSPCA` with
``n_selected=200``) and GSPPCA (``d = 100``, :class:`repro.GSPPCA` with ``n_selected=200``: the first 200
variables of its ranking). The figure shows a sample image and each selection (selected pixels in white).

A number for "on the digit": the fraction of a selection that falls among the 200 most inked pixels of the
mean seven (mean of the mnist-basic images of the same 500 digits); a selection placed at random scores
200/784 = 0.255 on average.

Choices the paper leaves open, and reductions
---------------------------------------------
* **Data**: :func:`data_fetch.load_mnist_variation` (digit 7, ``n = 500``, ``random_state = --seed``; the
  same digits in the three variants). The original archives are not in the data mirror, so the three sets
  are *recreated* from MNIST following the published recipe (module docstring of
  :mod:`data_fetch.mnist_variations`); the figure says so. ``p = 784`` (the paper's "758" is read as a typo).
* **Preprocessing**: pixels divided by 255, then centred.
* **SPCA**: Zou's default ``ridge = 1e-6`` (``n = 500 < p``), no renormalization (only the support is used).
* **Reductions for time** (a fit with ``d = 100`` costs seconds here): GSPPCA's VEM stops at a relative
  free-energy change of 1e-5 (``tol``; default 1e-6); SSPCA's search for the penalty giving 200 pixels uses
  ``tol = 1e-3`` and at most 30 outer iterations per fit.
* ``--quick``: 50 images, ``d = 5`` for SSPCA and GSPPCA, only mnist-basic and mnist-back-image.
"""

from __future__ import annotations

import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments.runner import _common
from experiments.runner.claims import NOT_REPRODUCED, PARTIAL, REPRODUCED, Claim, Outcome
from repro import GSPPCA
from repro._threads import blas_limited
from repro.baselines import SSPCA, spca_zou

TITLE = "Mattei et al. (2016) Table 2: 200 pixels selected by SPCA, SSPCA and GSPPCA on MNIST sevens"

DATASETS = {"basic": "mnist-basic", "back-rand": "mnist-back-rand", "back-image": "mnist-back-image"}
METHODS = ("SPCA", "SSPCA", "GSPPCA")
N, Q, D = 500, 200, 100
ON_DIGIT_MIN = 0.5  # "stays on the digit": at least half of the selection among the mean seven's top pixels
SCATTER_GAP = 0.1  # "scatters": SPCA's on-digit fraction at least this much below GSPPCA's


def _select(X, method, d, q):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == "SPCA":
            W, _ = spca_zou(X, 1, cardinality=q)
            return W[0] != 0
        if method == "SSPCA":
            return SSPCA(d, n_selected=q, tol=1e-3, max_iter=30).fit(X).support_
        return GSPPCA(d, n_selected=q, tol=1e-5, random_state=0).fit(X).support_


@blas_limited  # the library's BLAS thread policy for the whole experiment
def compute(cfg: _common.Config) -> pd.DataFrame:
    from data_fetch import load_mnist_variation

    n = 50 if cfg.quick else N
    d = 5 if cfg.quick else D
    names = ("basic", "back-image") if cfg.quick else tuple(DATASETS)
    rows = []
    mean_seven = None
    for name in names:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "recreated" is recorded from the description
            ds = load_mnist_variation(name, digit=7, n=n, random_state=cfg.seed)
        recreated = "RECREATED" in ds.description
        X = _common.preprocess(ds.X, "unit-center")
        if name == "basic":
            mean_seven = ds.X.mean(axis=0) / 255.0
        images = {"sample": ds.X[0] / 255.0}
        for method in METHODS:
            images[method] = _select(X, method, d, Q).astype(float)
        for method, img in images.items():
            rows += [
                {
                    "dataset": DATASETS[name],
                    "method": method,
                    "pixel": k,
                    "value": float(v),
                    "recreated": recreated,
                }
                for k, v in enumerate(img)
            ]
    rows += [
        {"dataset": "mnist-basic", "method": "mean seven", "pixel": k, "value": float(v), "recreated": False}
        for k, v in enumerate(mean_seven)
    ]
    return pd.DataFrame(rows)


def _image(df, dataset, method):
    g = df[(df.dataset == dataset) & (df.method == method)].sort_values("pixel")
    return g.value.to_numpy()


def on_digit(df) -> pd.DataFrame:
    """Fraction of each selection among the ``Q`` most inked pixels of the mean seven."""
    mean = _image(df, "mnist-basic", "mean seven")
    top = np.zeros(mean.size, dtype=bool)
    top[np.lexsort((np.arange(mean.size), -mean))[:Q]] = True
    out = []
    for (dataset, method), g in df[df.method.isin(METHODS)].groupby(["dataset", "method"]):
        sel = g.sort_values("pixel").value.to_numpy() > 0
        out.append(
            {"dataset": dataset, "method": method, "on_digit": float(top[sel].mean()), "q": int(sel.sum())}
        )
    return pd.DataFrame(out)


def plot(df: pd.DataFrame, cfg: _common.Config):
    datasets = [v for v in DATASETS.values() if v in set(df.dataset)]
    frac = on_digit(df).set_index(["dataset", "method"]).on_digit
    fig, axes = plt.subplots(4, len(datasets), figsize=(1.9 * len(datasets) + 0.6, 7.4), squeeze=False)
    for j, ds in enumerate(datasets):
        for i, method in enumerate(("sample", *METHODS)):
            ax = axes[i, j]
            ax.imshow(_image(df, ds, method).reshape(28, 28), cmap="gray", vmin=0, vmax=1)
            ax.set_xticks([])
            ax.set_yticks([])
            if i == 0:
                ax.set_title(ds, fontsize=8)
            else:
                ax.set_xlabel(f"on digit: {frac.loc[(ds, method)]:.2f}", fontsize=7)
            if j == 0:
                ax.set_ylabel("Sample" if method == "sample" else method)
    recreated = bool(df.recreated.astype(str).str.lower().eq("true").any())
    note = "recreated from MNIST (original archives unavailable)" if recreated else "original data"
    fig.suptitle(f"q = {Q} selected pixels (white); data {note}", fontsize=8)
    fig.tight_layout()
    return fig


def _check_stay(df):
    f = on_digit(df).set_index(["dataset", "method"]).on_digit
    datasets = sorted({d for d, _ in f.index})
    stay = all(f.loc[(d, "GSPPCA")] >= ON_DIGIT_MIN for d in datasets)
    back = [d for d in datasets if d != "mnist-basic"]
    scatter = all(f.loc[(d, "SPCA")] <= f.loc[(d, "GSPPCA")] - SCATTER_GAP for d in back)
    txt = "; ".join(
        f"{d}: GSPPCA {f.loc[(d, 'GSPPCA')]:.2f}, SPCA {f.loc[(d, 'SPCA')]:.2f}" for d in datasets
    )
    return Outcome(
        f"on-digit fraction {txt}",
        REPRODUCED if stay and scatter else (PARTIAL if stay or scatter else NOT_REPRODUCED),
        f"stay = GSPPCA's on-digit fraction >= {ON_DIGIT_MIN} on every set; scatter = SPCA's at least "
        f"{SCATTER_GAP} below GSPPCA's on the background sets (thresholds fixed before the run); chance "
        f"level {Q / 784:.3f}. Data recreated from MNIST (Larochelle et al.'s archives not available)",
    )


def _check_back_image(df):
    f = on_digit(df).set_index(["dataset", "method"]).on_digit
    if ("mnist-back-image", "SPCA") not in f.index:
        return Outcome("-", NOT_REPRODUCED, "mnist-back-image not in this run")
    v = f.loc[("mnist-back-image", "SPCA")]
    chance = Q / 784
    return Outcome(
        f"SPCA on mnist-back-image: on-digit fraction {v:.2f} (chance {chance:.3f})",
        REPRODUCED if v < chance else NOT_REPRODUCED,
        "almost everywhere but near the mean seven = on-digit fraction below that of a random selection",
    )


CLAIMS = [
    Claim(
        "gsppca-on-digit-spca-scatters",
        "Sec. 3.4, Table 2: the globally sparse selections stay consistent (a seven is recognized) while "
        "SPCA's pixels are more scattered on the backgrounds",
        "",
        _check_stay,
    ),
    Claim(
        "spca-back-image-off-digit",
        "Sec. 3.4: on mnist-back-image, SPCA appears to randomly select pixels almost everywhere but near "
        "the mean seven",
        "",
        _check_back_image,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
