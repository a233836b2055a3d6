"""The data sets of the five papers at a glance, and the published facts about them.

Panels: sample CBCL faces and non-faces; MNIST sevens of each Larochelle et al. (2007) variation; a few
LRS spectra; and the eigenvalue decay ``lambda_i / lambda_1`` of every data set in the preprocessing
each paper uses:

* CBCL faces, standardized (Sigg & Buhmann 2008, Fig. 2) and centred pixels in 0..255 (Asteris et al. 2014);
* Armstrong leukemia, standardized (Sigg & Buhmann 2008; Asteris et al. 2014 use the same data);
* Golub leukemia, centred (Mattei et al. 2016 assume a centred sample; the multtest values are already
  normalized per array);
* LRS, centred fluxes (Asteris et al. 2014, empirical covariance);
* Pit Props, the correlation matrix itself (Zass & Shashua 2006, Fig. 5);
* MNIST sevens (n = 500) of each variation, centred (Mattei et al. 2016).

Choices: images are drawn from the first rows of each set (faces 0..7, the first eight non-faces of the
pickle, the first four sevens of each variation); spectra are the first five LRS records. The MNIST
variations are recreated from MNIST when the original zips cannot be had (the loader warns and says so in
its description); the note of the corresponding claim repeats that. ``--quick`` skips nothing but the
eigen-decay of the 12582-feature Armstrong set is computed through its 72 x 72 Gram matrix either way.
"""

from __future__ import annotations

import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import data_fetch
from experiments.runner import _common
from experiments.runner.claims import NOT_REPRODUCED, REPRODUCED, Claim, Outcome
from repro.linalg import Covariance

TITLE = "The papers' data sets: samples, spectra, eigenvalue decay and published facts"

N_EIG = 50  # eigenvalues shown per data set


# --------------------------------------------------------------------------- compute
def _eigen_rows(dataset: str, prep: str, paper: str, C: Covariance) -> pd.DataFrame:
    k = min(N_EIG, C.n_features, (C.n_samples or C.n_features) - 1)
    vals, _ = C.eigh(k)
    return pd.DataFrame(
        {
            "kind": "eigenvalue",
            "dataset": dataset,
            "preprocessing": prep,
            "paper": paper,
            "index": np.arange(1, k + 1),
            "value": vals,
            "normalized": vals / vals[0],
        }
    )


def _image_rows(dataset: str, images: np.ndarray, side: int, transpose: bool = False) -> pd.DataFrame:
    frames = []
    for i, img in enumerate(images):
        im = img.reshape(side, side)
        im = im.T if transpose else im
        r, c = np.divmod(np.arange(side * side), side)
        frames.append(
            pd.DataFrame(
                {"kind": "image", "dataset": dataset, "item": i, "row": r, "col": c, "value": im.ravel()}
            )
        )
    return pd.concat(frames, ignore_index=True)


def _fact_rows(dataset: str, **facts) -> pd.DataFrame:
    return pd.DataFrame(
        [{"kind": "fact", "dataset": dataset, "fact": k, "value": float(v)} for k, v in facts.items()]
    )


def compute(cfg: _common.Config) -> pd.DataFrame:
    frames = []
    prep = _common.preprocess

    faces = data_fetch.load_cbcl_faces()
    frames += [
        _fact_rows(
            "CBCL faces",
            n_samples=faces.X.shape[0],
            n_features=faces.X.shape[1],
            side=round(np.sqrt(faces.X.shape[1])),
        ),
        _image_rows("CBCL faces", faces.X[:8], 19),
        _eigen_rows(
            "CBCL faces", "standardize", "Sigg 2008", Covariance.from_data(prep(faces.X, "standardize"))
        ),
        _eigen_rows("CBCL faces", "center", "Asteris 2014", Covariance.from_data(faces.X)),
    ]
    training = data_fetch.load_cbcl_training()
    nonface = training.X[training.y == 0]
    frames += [
        _fact_rows("CBCL training", n_faces=int((training.y == 1).sum()), n_nonfaces=nonface.shape[0]),
        _image_rows("CBCL non-faces", nonface[:8], 19),
    ]

    mll = data_fetch.load_leukemia_armstrong()
    counts = pd.Series(mll.y).value_counts()
    frames += [
        _fact_rows(
            "Armstrong leukemia",
            n_samples=mll.X.shape[0],
            n_features=mll.X.shape[1],
            **{f"n_{c}": counts.get(c, 0) for c in ("ALL", "MLL", "AML")},
        ),
        _eigen_rows(
            "Armstrong leukemia", "standardize", "Sigg 2008", Covariance.from_data(prep(mll.X, "standardize"))
        ),
    ]

    golub = data_fetch.load_leukemia_golub()
    gcounts = pd.Series(golub.y).value_counts()
    frames += [
        _fact_rows(
            "Golub leukemia",
            n_samples=golub.X.shape[0],
            n_features=golub.X.shape[1],
            n_ALL=gcounts.get("ALL", 0),
            n_AML=gcounts.get("AML", 0),
        ),
        _eigen_rows("Golub leukemia", "center", "Mattei 2016", Covariance.from_data(golub.X)),
    ]

    lrs = data_fetch.load_lrs()
    spectra = lrs.X[:5]
    frames += [
        _fact_rows("LRS", n_samples=lrs.X.shape[0], n_features=lrs.X.shape[1]),
        pd.DataFrame(
            {
                "kind": "spectrum",
                "dataset": "LRS",
                "item": np.repeat(np.arange(spectra.shape[0]), spectra.shape[1]),
                "index": np.tile(np.arange(1, spectra.shape[1] + 1), spectra.shape[0]),
                "value": spectra.ravel(),
            }
        ),
        _eigen_rows("LRS", "center", "Asteris 2014", Covariance.from_data(lrs.X)),
    ]

    pit = data_fetch.load_pitprops()
    frames += [
        _fact_rows("Pit Props", n_variables=pit.shape[1], n_samples=pit.attrs["n_samples"]),
        _eigen_rows(
            "Pit Props",
            "correlation",
            "Zass 2006",
            Covariance.from_matrix(pit.to_numpy(), n_samples=pit.attrs["n_samples"]),
        ),
    ]

    for name in ("basic", "back-rand", "back-image"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sevens = data_fetch.load_mnist_variation(name, digit=7, n=500, random_state=cfg.seed)
        recreated = any("recreat" in str(w.message).lower() for w in caught)
        label = f"mnist-{name}"
        nonconstant = int((sevens.X.std(axis=0) > 0).sum())
        frames += [
            _fact_rows(
                label,
                n_samples=sevens.X.shape[0],
                n_features=sevens.X.shape[1],
                n_nonconstant_pixels=nonconstant,
                recreated=recreated,
            ),
            _image_rows(label, sevens.X[:4], 28),
            _eigen_rows(label, "center", "Mattei 2016", Covariance.from_data(sevens.X)),
        ]
    return pd.concat(frames, ignore_index=True)


# --------------------------------------------------------------------------- plot
def plot(df: pd.DataFrame, cfg: _common.Config):
    fig = plt.figure(figsize=(9, 9))
    grid = fig.add_gridspec(3, 1, height_ratios=[1.0, 1.25, 1.5], hspace=0.3)
    top = grid[0].subgridspec(2, 8, hspace=0.1, wspace=0.05)
    img = df[df.kind == "image"]
    for r, name in enumerate(["CBCL faces", "CBCL non-faces"]):
        for i in range(8):
            ax = fig.add_subplot(top[r, i])
            _show(ax, img[(img.dataset == name) & (img.item == i)])
            if i == 0:
                ax.set_ylabel(name.replace("CBCL ", ""), fontsize=8)
    mid = grid[1].subgridspec(1, 2, width_ratios=[0.75, 1.0], wspace=0.25)
    digits = mid[0].subgridspec(3, 4, hspace=0.08, wspace=0.05)
    for r, name in enumerate(["mnist-basic", "mnist-back-rand", "mnist-back-image"]):
        for i in range(4):
            ax = fig.add_subplot(digits[r, i])
            _show(ax, img[(img.dataset == name) & (img.item == i)])
            if i == 0:
                ax.set_ylabel(name.replace("mnist-", ""), fontsize=7)
            if r == 0 and i == 0:
                recreated = [
                    n for n in ("mnist-basic", "mnist-back-rand", "mnist-back-image")
                    if _recreated(df, n)
                ]
                title = (
                    "MNIST sevens, " + "/".join(n.replace("mnist-", "") for n in recreated)
                    + " RECREATED\nfrom MNIST (original zips unavailable)"
                    if recreated
                    else "MNIST sevens (Larochelle et al. zips)"
                )
                ax.set_title(title, fontsize=6.5, loc="left", color="darkred" if recreated else "black")
    ax = fig.add_subplot(mid[1])
    spec = df[df.kind == "spectrum"]
    for _item, g in spec.groupby("item"):
        ax.plot(g["index"], g["value"], lw=0.8)
    ax.set(xlabel="channel (44 blue, 49 red)", ylabel="flux", title="LRS spectra (first five)")
    ax = fig.add_subplot(grid[2])
    eig = df[df.kind == "eigenvalue"]
    for (dataset, prep, paper), g in eig.groupby(["dataset", "preprocessing", "paper"], sort=False):
        ax.semilogy(g["index"], g["normalized"], marker=".", lw=0.9, label=f"{dataset} ({prep}; {paper})")
    ax.set(
        xlabel="index i",
        ylabel=r"$\lambda_i / \lambda_1$",
        title="Eigenvalue decay, each paper's preprocessing",
    )
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return fig


def _recreated(df: pd.DataFrame, name: str) -> bool:
    rows = df[(df.kind == "fact") & (df.dataset == name) & (df.fact == "recreated")]
    return bool(len(rows)) and bool(float(rows.value.iloc[0]))


def _show(ax, g: pd.DataFrame) -> None:
    rows, cols = g["row"].to_numpy(dtype=int), g["col"].to_numpy(dtype=int)
    side = rows.max() + 1
    im = np.zeros((side, side))
    im[rows, cols] = g["value"].to_numpy()
    ax.imshow(im, cmap="gray", vmin=0, vmax=255)
    ax.set_xticks([])
    ax.set_yticks([])


# --------------------------------------------------------------------------- claims
def _fact(df: pd.DataFrame, dataset: str, fact: str) -> float:
    sel = df[(df.kind == "fact") & (df.dataset == dataset) & (df.fact == fact)]
    if sel.empty:
        raise KeyError(f"no fact {fact!r} for {dataset!r}")
    return float(sel["value"].iloc[0])


def _facts_claim(dataset: str, expected: dict[str, int], note: str = ""):
    def check(df: pd.DataFrame) -> Outcome:
        got = {k: int(_fact(df, dataset, k)) for k in expected}
        text = ", ".join(f"{k}={v}" for k, v in got.items())
        ok = got == expected
        why = note if ok else f"differs from published: {expected}. {note}".strip()
        return Outcome(text, REPRODUCED if ok else NOT_REPRODUCED, why)

    return check


def _mnist_pixels(df: pd.DataFrame) -> Outcome:
    p = int(_fact(df, "mnist-basic", "n_nonconstant_pixels"))
    recreated = bool(_fact(df, "mnist-basic", "recreated"))
    src = (
        "recreated from MNIST (original zips unavailable)" if recreated else "original Larochelle et al. zip"
    )
    if p == 758:
        return Outcome(
            f"784 pixels, {p} non-constant", REPRODUCED, f"p = 758 matches the non-constant pixels; {src}."
        )
    return Outcome(
        f"784 pixels, {p} non-constant",
        NOT_REPRODUCED,
        "MNIST images have 28 x 28 = 784 pixels; 758 is neither that nor the number of non-constant pixels "
        f"in our 500 sevens, so the paper probably dropped pixels by a rule it does not state; {src}.",
    )


CLAIMS = [
    Claim(
        "cbcl-faces",
        "CBCL: 2429 grey-scale face images of 19 x 19 pixels (Asteris et al. 2014, Sec. 7; "
        "Zass & Shashua 2006; Sigg & Buhmann 2008).",
        "2429 x 361 (19 x 19)",
        _facts_claim("CBCL faces", {"n_samples": 2429, "n_features": 361, "side": 19}),
    ),
    Claim(
        "cbcl-training",
        "CBCL training set for face detection: 2429 faces and 4548 non-faces "
        "(Zass & Shashua 2006, Sec. 5, via the CBCL database).",
        "2429 / 4548",
        _facts_claim("CBCL training", {"n_faces": 2429, "n_nonfaces": 4548}),
    ),
    Claim(
        "armstrong",
        "Leukemia (Armstrong et al.): 72 samples of 12582 probe sets, ALL 24 / MLL 20 / AML 28 "
        "(Sigg & Buhmann 2008, Sec. 5; Asteris et al. 2014, Sec. 7).",
        "72 x 12582; 24/20/28",
        _facts_claim(
            "Armstrong leukemia",
            {"n_samples": 72, "n_features": 12582, "n_ALL": 24, "n_MLL": 20, "n_AML": 28},
        ),
    ),
    Claim(
        "golub",
        "Leukemia (Golub et al.): expression levels of p = 3051 genes for n = 38 patients "
        "(Mattei et al. 2016, Sec. 5).",
        "38 x 3051",
        _facts_claim(
            "Golub leukemia",
            {"n_samples": 38, "n_features": 3051, "n_ALL": 27, "n_AML": 11},
            note="27 ALL / 11 AML are the multtest labels (not stated in the paper).",
        ),
    ),
    Claim(
        "lrs",
        "LRS: 531 high quality spectra measured in 93 bands (Asteris et al. 2014, Sec. 7).",
        "531 x 93",
        _facts_claim("LRS", {"n_samples": 531, "n_features": 93}),
    ),
    Claim(
        "pitprops",
        "Pit Props: 13 variables, 180 observations, given as a correlation matrix "
        "(Zass & Shashua 2006, Sec. 5; Jeffers 1967).",
        "13 variables",
        _facts_claim("Pit Props", {"n_variables": 13, "n_samples": 180}),
    ),
    Claim(
        "mnist-sevens",
        "n = 500 grey-scale images (with p = 758 pixels) of handwritten sevens (Mattei et al. 2016, Sec. 5).",
        "500 x 758",
        _mnist_pixels,
    ),
]


def main(argv=None) -> int:
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
