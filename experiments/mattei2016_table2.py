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
* **Reductions for time** (a fit with ``d = 100`` costs seconds here): SSPCA's search for the penalty
  giving 200 pixels uses ``tol = 1e-3`` and at most 30 outer iterations per fit. No penalty gives exactly
  200 pixels on any of the three sets; the search keeps the 200 largest loadings of the smallest larger
  support it found (``fit_q`` in the CSV: 249 on mnist-basic, 221 on back-rand, **all 784 on back-image**,
  where the count jumps from 784 to 0 at ``alpha_max``, the largest row norm of ``X'U`` at the SVD start,
  and fits run to ``tol = 1e-6`` just below it select all pixels too). On back-image the selection is
  therefore not one SSPCA makes: its on-digit fraction depended on round-off (0.23 with the NumPy steps,
  0.86 with the Numba kernel, which agree to 1e-10 per step), and its claim is reported as *untestable
  here* (a verdict counted apart, not as not reproduced). A sweep of the penalty over alpha / alpha_max
  = 0.5..12 with fits run to convergence (``experiments/peers_recorded/sspca_back_image_sweep.py``, its
  table read by the claim's note): whether any penalty reaches 200 pixels is stated there.
  GSPPCA runs with its defaults (its VEM once stopped early, at a relative change of 1e-5);
  whether its VEM hit the cap is recorded (``capped``) and counted in the notes.
* **Measurable proxies for the interpretability sentences** (fixed before the run): a
  selection is *interpretable* (a seven is recognized) when at least ``ON_DIGIT_MIN = 0.5`` of its pixels
  are among the 200 most inked pixels of the mean seven, twice the chance level (an on-digit fraction of
  exactly 0.5 counts as interpretable); SPCA *scatters* on the background sets when its on-digit fraction
  is at least ``SCATTER_GAP = 0.1`` below GSPPCA's; *erratic* is measured by
  the *coherence*, the mean share of a selected pixel's 8 neighbours that are selected too (isolated,
  scattered pixels lower it; a smooth blob scores near 1). "GSPPCA with a small value of d" (mnist-back-image
  only, not shown in the paper; no value given) is run with ``d = 1`` and ``d = 5`` (``D_SMALL``, both
  readings); the figure's last two rows, marked as not in the paper.
* ``--quick``: 50 images, ``d = 5`` for SSPCA and GSPPCA, only mnist-basic and mnist-back-image.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments._mattei import capped_note
from experiments.runner import _common
from experiments.runner.claims import NOT_REPRODUCED, PARTIAL, REPRODUCED, UNTESTABLE, Claim, Outcome
from repro import GSPPCA
from repro.baselines import SSPCA, spca_zou

TITLE = "Mattei et al. (2016) Table 2: 200 pixels selected by SPCA, SSPCA and GSPPCA on MNIST sevens"

DATASETS = {"basic": "mnist-basic", "back-rand": "mnist-back-rand", "back-image": "mnist-back-image"}
METHODS = ("SPCA", "SSPCA", "GSPPCA")
N, Q, D = 500, 200, 100
ON_DIGIT_MIN = 0.5  # "stays on the digit": at least half of the selection among the mean seven's top pixels
SCATTER_GAP = 0.1  # "scatters": SPCA's on-digit fraction at least this much below GSPPCA's
D_SMALL = (1, 5)  # "GSPPCA with a small value of d" on mnist-back-image: two readings
SMALL = {f"GSPPCA (d = {k})": k for k in D_SMALL}


def _select(X, method, d, q):
    """The support of ``q`` pixels, whether a GSPPCA fit's VEM stopped at its cap (None otherwise), and for
    SSPCA the support of the fit its ``q`` pixels were kept from (``fit_support_size_``; None otherwise)."""
    if method == "SPCA":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Zou's elastic net: only the support is used
            W, _ = spca_zou(X, 1, cardinality=q)
        return W[0] != 0, None, None
    if method == "SSPCA":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the reduced budget of the penalty search (module docstring)
            m = SSPCA(d, n_selected=q, tol=1e-3, max_iter=30).fit(X)
        return m.support_, None, m.fit_support_size_
    m = GSPPCA(d, n_selected=q, random_state=0).fit(X)
    return m.support_, not m.vem_.converged, None


# one BLAS thread: the runner's policy for every experiment (_common.experiment_threads)
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
        images, capped, fit_q = {"sample": ds.X[0] / 255.0}, {}, {}
        methods = [(m, d) for m in METHODS] + (list(SMALL.items()) if name == "back-image" else [])
        for method, dm in methods:
            sel, capped[method], fit_q[method] = _select(X, "GSPPCA" if method in SMALL else method, dm, Q)
            images[method] = sel.astype(float)
        for method, img in images.items():
            rows += [
                {
                    "dataset": DATASETS[name],
                    "method": method,
                    "pixel": k,
                    "value": float(v),
                    "recreated": recreated,
                    "capped": capped.get(method),
                    "fit_q": fit_q.get(method),
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


def coherence(sel: np.ndarray) -> float:
    """Mean share of a selected pixel's 8 neighbours (inside the 28 x 28 image) that are selected too."""
    img = sel.reshape(28, 28).astype(float)
    pad = np.pad(img, 1)
    inside = np.pad(np.ones_like(img), 1)
    nb = sum(np.roll(np.roll(pad, i, 0), j, 1) for i in (-1, 0, 1) for j in (-1, 0, 1) if (i, j) != (0, 0))
    cnt = sum(
        np.roll(np.roll(inside, i, 0), j, 1) for i in (-1, 0, 1) for j in (-1, 0, 1) if (i, j) != (0, 0)
    )
    share = (nb / cnt)[1:-1, 1:-1]
    return float(share[img > 0].mean()) if img.any() else 0.0


def on_digit(df) -> pd.DataFrame:
    """Per selection: the fraction among the ``Q`` most inked pixels of the mean seven, and its coherence."""
    mean = _image(df, "mnist-basic", "mean seven")
    top = np.zeros(mean.size, dtype=bool)
    top[np.lexsort((np.arange(mean.size), -mean))[:Q]] = True
    out = []
    for (dataset, method), g in df[df.method.isin((*METHODS, *SMALL))].groupby(["dataset", "method"]):
        sel = g.sort_values("pixel").value.to_numpy() > 0
        out.append(
            {
                "dataset": dataset,
                "method": method,
                "on_digit": float(top[sel].mean()),
                "coherence": coherence(sel),
                "q": int(sel.sum()),
            }
        )
    return pd.DataFrame(out, columns=["dataset", "method", "on_digit", "coherence", "q"])


def plot(df: pd.DataFrame, cfg: _common.Config):
    datasets = [v for v in DATASETS.values() if v in set(df.dataset)]
    od = on_digit(df).set_index(["dataset", "method"])
    frac, coh = od.on_digit, od.coherence
    rows = ("sample", *METHODS, *SMALL)
    fig, axes = plt.subplots(
        len(rows), len(datasets), figsize=(1.9 * len(datasets) + 0.6, 1.85 * len(rows)), squeeze=False
    )
    for j, ds in enumerate(datasets):
        for i, method in enumerate(rows):
            ax = axes[i, j]
            img = _image(df, ds, method)
            if not img.size:
                ax.axis("off")
                continue
            ax.imshow(img.reshape(28, 28), cmap="gray", vmin=0, vmax=1)
            ax.set_xticks([])
            ax.set_yticks([])
            if i == 0:
                ax.set_title(ds, fontsize=8)
            else:
                ax.set_xlabel(
                    f"on digit {frac.loc[(ds, method)]:.2f}, coh. {coh.loc[(ds, method)]:.2f}", fontsize=6
                )
            if j == 0 or method in SMALL:
                label = "Sample" if method == "sample" else method
                if method in SMALL:
                    label += "\n(not in the paper)"
                ax.set_ylabel(label, fontsize=7 if method in SMALL else None)
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


def _check_basic(df):
    f = on_digit(df).set_index(["dataset", "method"])
    if ("mnist-basic", "SPCA") not in f.index:
        return Outcome("-", NOT_REPRODUCED, "mnist-basic not in this run")
    g = f.loc["mnist-basic"]
    erratic = bool(g.coherence["SPCA"] < min(g.coherence["SSPCA"], g.coherence["GSPPCA"]))
    readable = bool((g.on_digit[list(METHODS)] >= ON_DIGIT_MIN).all())
    return Outcome(
        "mnist-basic: "
        + ", ".join(f"{m} on digit {g.on_digit[m]:.2f}, coherence {g.coherence[m]:.2f}" for m in METHODS),
        REPRODUCED if erratic and readable else (PARTIAL if erratic or readable else NOT_REPRODUCED),
        f"interpretable (a seven is recognized) = on-digit fraction >= {ON_DIGIT_MIN} for all three; more "
        "erratic = SPCA's coherence (mean share of a selected pixel's 8 neighbours also selected: isolated "
        f"pixels lower it) below the other two (fixed before the run); erratic: {erratic}, interpretable: "
        f"{readable}",
    )


def _sspca_fit_q(df, dataset):
    """The support of the SSPCA fit whose ``Q`` largest rows are the selection (NaN if not recorded)."""
    g = df[(df.dataset == dataset) & (df.method == "SSPCA")]
    return float(g.fit_q.iloc[0]) if "fit_q" in df and len(g) else float("nan")


SWEEP_CSV = Path(__file__).with_name("peers_recorded") / "sspca_back_image_sweep.csv"


def _sweep_note(path=SWEEP_CSV) -> str:
    """What the recorded sweep of SSPCA's penalty on back-image found (``peers_recorded/``)."""
    if not Path(path).exists():
        return "; no sweep of the penalty recorded"
    sw = pd.read_csv(path)
    counts = sorted({int(c) for c in sw.selected} | {int(c) for c in sw.selected_min_along_fit})
    between = [c for c in counts if 0 < c < 784]
    reach = sw[(sw.selected > 0) & (sw.selected <= Q)]
    along = f" ({between} only along a fit)" if between else ""
    found = (
        f": {len(reach)} penalties select between 1 and {Q} pixels"
        if len(reach)
        else f": none between 1 and 783 at a fit's end{along}, so no penalty of the SSPCA objective "
        f"reaches {Q} pixels from the estimator's start (between the grid's neighbours around alpha_max the "
        "search's own bisection, to 1e-9 in log alpha, jumps from 784 to 0 as well)"
    )
    return (
        "; a sweep of the penalty (experiments/peers_recorded/sspca_back_image_sweep.py: "
        f"{len(sw)} values of alpha / alpha_max from {sw.alpha_ratio.min():.2g} to "
        f"{sw.alpha_ratio.max():.2g}, each fitted from the SVD start to tol 1e-6, "
        f"{int(sw.converged.sum())} converged) found the counts {counts} after every 10 iterations of "
        "every fit"
        + found
        + f" (columns of U aligned at the end: max |u_k'u_l| up to {sw.max_abs_u_cos.max():.2f})"
    )


def _check_sspca_back_image(df):
    f = on_digit(df).set_index(["dataset", "method"])
    if ("mnist-back-image", "SSPCA") not in f.index:
        return Outcome("-", NOT_REPRODUCED, "mnist-back-image not in this run")
    g = f.loc["mnist-back-image"]
    v = g.on_digit["SSPCA"]
    fq = _sspca_fit_q(df, "mnist-back-image")
    p = int(df[df.dataset == "mnist-back-image"].pixel.max()) + 1
    measured = (
        f"SSPCA on mnist-back-image: on digit {v:.2f}, coherence {g.coherence['SSPCA']:.2f} (GSPPCA "
        f"{g.on_digit['GSPPCA']:.2f}, {g.coherence['GSPPCA']:.2f}); the {Q} pixels kept from a fit "
        f"selecting {fq:.0f} of {p}"
    )
    rule = (
        f"not interpretable = fewer than {ON_DIGIT_MIN:g} of its pixels on the mean seven (the proxy of "
        "'a seven is recognized' used for every row); the paper's 'notices the zone of the upper bars' is "
        "not tested"
    )
    if fq >= p:  # no penalty separated the pixels: the selection is not one SSPCA makes (docstring)
        return Outcome(
            measured,
            UNTESTABLE,
            f"untestable here: SSPCA's search found no penalty selecting fewer than all {p} pixels, so the "
            "scored pixels are the largest loadings of an all-pixel fit, which round-off decides (module "
            f"docstring){_sweep_note()}; a limitation of this SSPCA on these recreated data, not a failure "
            "of the paper, so not counted as not reproduced; " + rule,
        )
    return Outcome(measured, REPRODUCED if v < ON_DIGIT_MIN else NOT_REPRODUCED, rule)


def _check_small_d(df):
    f = on_digit(df).set_index(["dataset", "method"])
    if not all(("mnist-back-image", m) in f.index for m in SMALL):
        return Outcome("-", NOT_REPRODUCED, "mnist-back-image not in this run")
    g = f.loc["mnist-back-image"]
    poor = {m: bool(g.on_digit[m] < ON_DIGIT_MIN) for m in SMALL}
    caps = df[df.method.isin(("GSPPCA", *SMALL))].groupby(["dataset", "method"]).first()
    n_poor = sum(poor.values())
    return Outcome(
        "GSPPCA on mnist-back-image: "
        + "; ".join(
            f"d = {k}: on digit {g.on_digit[m]:.2f}, coherence {g.coherence[m]:.2f}" for m, k in SMALL.items()
        )
        + f"; d = {D}: {g.on_digit['GSPPCA']:.2f}, {g.coherence['GSPPCA']:.2f}",
        REPRODUCED if n_poor == len(SMALL) else (PARTIAL if n_poor else NOT_REPRODUCED),
        f"small d: the paper gives no value, both readings d = {' and '.join(map(str, D_SMALL))} run (partly "
        f"when only one is poor); poorly interpretable = fewer than {ON_DIGIT_MIN:g} of the pixels on the "
        "mean seven; " + capped_note(caps),
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
    Claim(
        "basic-spca-erratic-all-interpretable",
        "Sec. 3.4: on mnist-basic, even if SPCA's result is a little bit more erratic than the two others, "
        "all selections are interpretable and we can easily recognize a seven",
        "",
        _check_basic,
    ),
    Claim(
        "sspca-back-image-not-interpretable",
        "Sec. 3.4: on mnist-back-image, SSPCA's selection does not appear interpretable",
        "",
        _check_sspca_back_image,
    ),
    Claim(
        "gsppca-small-d-poor",
        "Sec. 3.4: on mnist-back-image, applying GSPPCA with a small value of d would also lead to poorly "
        "interpretable pixels",
        "",
        _check_small_d,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
