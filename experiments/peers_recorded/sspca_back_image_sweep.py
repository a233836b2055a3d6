"""Sweep of SSPCA's penalty on mnist-back-image at Mattei et al.'s Table 2 setting.

``mattei2016_table2`` asks SSPCA (``d = 100``) for the ``alpha`` that selects 200 of the 784 pixels; on
mnist-back-image its search found none (the count jumped from 784 to 0). This script shows whether any
penalty of the SSPCA objective reaches 200 there. For each ``alpha / alpha_max`` of a geometric grid (25
values from 12 down to 0.5; ``alpha_max`` is the largest row norm of ``X'U`` at the SVD start, which is
not an upper bound once the columns of ``U`` align) the block-coordinate descent runs from the SVD start
(the estimator's start) in chunks of 10 outer iterations, up to 500, to the estimator's default
tolerance 1e-6, and the number of selected pixels is recorded after each chunk. Data and preprocessing
as in the experiment (500 sevens, ``--seed`` 0, pixels / 255, centred). The table it writes is read by
``mattei2016_table2`` (its note), so the experiment does not rerun these fits (minutes).

Usage: ``python experiments/peers_recorded/sspca_back_image_sweep.py OUT.csv`` (with the project's
environment: ``REPRO_DATA_MIRROR`` etc.).
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
import pandas as pd

from data_fetch import load_mnist_variation
from experiments.runner import _common
from repro.baselines import sspca as S

D, N, CHUNK, MAX_CHUNKS = 100, 500, 10, 50


def main(out):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "recreated" archives
        ds = load_mnist_variation("back-image", digit=7, n=N, random_state=0)
    X = _common.preprocess(ds.X, "unit-center")
    U0, V0 = S._init(X, D)
    amax = S._alpha_max(X, U0)
    rows = []
    for r in np.geomspace(12.0, 0.5, 25):  # from no pixel towards all of them
        U, V = U0.copy(), V0.copy()
        t0 = time.process_time()
        counts = []
        for _ in range(MAX_CHUNKS):
            U, V, it = S._fit(X, r * amax, U, V, CHUNK, 1e-6)
            counts.append(int(S._support(V).sum()))
            if it < CHUNK:
                break
        G = U.T @ U
        rows.append(
            {
                "alpha_ratio": float(r),
                "alpha": float(r * amax),
                "selected": counts[-1],
                "selected_min_along_fit": min(counts),
                "converged": bool(it < CHUNK),
                "max_abs_u_cos": float(np.abs(G - np.diag(np.diag(G))).max()),
                "cpu_seconds": time.process_time() - t0,
            }
        )
        print(rows[-1], flush=True)
        pd.DataFrame(rows).to_csv(out, index=False)


if __name__ == "__main__":
    main(sys.argv[1])
