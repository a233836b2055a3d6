"""The library's defaults as numbers: every public estimator and function fitted with its default
arguments on one small, fixed data set, so that ``repro verify all`` notices a changed default.

The experiments set their parameters themselves (a paper's tolerance, its number of starts), so a
changed *library* default (EMPCA's ``tol``, EMSparsePCA's number of starts, the spannogram's sample
count) moves none of their numbers. This probe fits each public estimator and function with its defaults
(only ``random_state=0`` where there is one, and a cardinality or a number of components where the
function has no default for it) on a 200 x 12 Gaussian sample with a known spectrum, and records what
each returns: the components (each signed so that its largest entry is positive), the variances, the
iteration counts and the sizes of the supports. :mod:`experiments.runner.verify` compares the table with
``experiments/references/library_defaults.csv`` under its usual rules (counts exactly, floats to
``RTOL``), as the ``library_defaults`` entry of ``repro verify all``; the test suite compares it too
(``tests/test_verify.py``). A default changed on purpose is recorded by ``repro verify all --quick
--update``, which rewrites this reference with the quick ones.

Examples
--------
>>> df = probe()  # doctest: +SKIP
>>> sorted(df.columns)  # doctest: +SKIP
['case', 'index', 'quantity', 'value']
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

__all__ = ["NAME", "REFERENCE", "cases", "data", "probe"]

#: The name of the probe in ``repro verify``'s report.
NAME = "library_defaults"
#: Its reference table (independent of ``--quick``: the probe has one size).
REFERENCE = Path(__file__).resolve().parents[1] / "references" / f"{NAME}.csv"


def data():
    """The probe's data: 200 samples of 12 features, covariance spectrum 16, 8, 4, ... (seeded)."""
    import numpy as np

    rng = np.random.default_rng(20261127)
    p = 12
    spectrum = 16.0 * 2.0 ** -np.arange(p)
    Q, _ = np.linalg.qr(rng.standard_normal((p, p)))
    return rng.standard_normal((200, p)) * np.sqrt(spectrum) @ Q.T


def _estimator(cls, **kw) -> Callable:
    def fit(X):
        if "random_state" in cls().get_params():
            kw.setdefault("random_state", 0)
        m = cls(**kw).fit(X)
        out = {"components": m.components_}
        for attr in ("explained_variance_", "n_iter_", "n_selected_", "cardinality_", "upper_bound_"):
            if hasattr(m, attr):
                out[attr.rstrip("_")] = getattr(m, attr)
        return out

    return fit


def cases() -> dict[str, Callable]:
    """Every probe: a name and a function of the data returning a dict of arrays (or scalars)."""
    import repro
    from repro import baselines as b

    def result(r, *names):
        return {n: getattr(r, n) for n in names if getattr(r, n, None) is not None}

    out = {
        cls.__name__: _estimator(cls)
        for cls in (
            repro.EMPCA,
            repro.SensiblePCA,
            repro.EMSparsePCA,
            repro.NSPCA,
            repro.SpannogramPCA,
            repro.GSPPCA,
            b.GSPCA,
            b.SPCAZou,
            b.SSPCA,
        )
    }
    for cls in (repro.EMSparsePCA, repro.SpannogramPCA, b.GSPCA, b.SPCAZou):
        out[f"{cls.__name__}(cardinality=4)"] = _estimator(cls, cardinality=4)
    out["EMSparsePCA(cardinality=4, nonneg=True)"] = _estimator(repro.EMSparsePCA, cardinality=4, nonneg=True)
    if hasattr(repro, "OptimalSparsePCA"):
        out["OptimalSparsePCA(cardinality=4)"] = _estimator(repro.OptimalSparsePCA, cardinality=4)
    out.update(
        {
            "em_pca": lambda X: result(repro.em_pca(X, random_state=0), "components", "n_iter"),
            "sensible_pca": lambda X: result(repro.sensible_pca(X, random_state=0), "components", "n_iter"),
            "em_sparse_pca(cardinality=4)": lambda X: dict(
                zip(
                    ("components", "variance"),
                    repro.em_sparse_pca(X, cardinality=4, random_state=0),
                    strict=True,
                )
            ),
            "em_sparse_pca_path([2, 4, 6])": lambda X: result(
                repro.em_sparse_pca_path(X, [2, 4, 6], random_state=0), "variance", "variance_opt", "n_iter"
            ),
            "spannogram_bound(4)": lambda X: {
                "bound": _as_array(repro.spannogram_bound(X, 4, random_state=0))
            },
            "spannogram_exact(4)": lambda X: {"value": _as_array(repro.spannogram_exact(X, 4))},
            "gsppca_vem(2)": lambda X: result(repro.gsppca_vem(X, 2, random_state=0), "u", "alpha", "sigma2"),
            "gspca(4)": lambda X: result(b.gspca(X, 4), "components", "variance"),
            "pathspca": lambda X: result(b.pathspca(X), "variance"),
            "simple_thresholding(4)": lambda X: {"value": _as_array(b.simple_thresholding(X, 4))},
            "spca_zou": lambda X: {"value": _as_array(b.spca_zou(X))},
        }
    )
    return out


def _as_array(r):
    """Every numeric field of a result object, tuple or array, as one flat float array."""
    import numpy as np

    if hasattr(r, "__dataclass_fields__"):
        r = [getattr(r, f) for f in r.__dataclass_fields__]
    elif hasattr(r, "_asdict"):
        r = list(r._asdict().values())
    if isinstance(r, (list, tuple)):
        parts = []
        for v in r:
            try:
                a = np.asarray(v, dtype=float).ravel()
            except (TypeError, ValueError):
                continue
            parts.append(a)
        return np.concatenate(parts) if parts else np.zeros(0)
    return np.asarray(r, dtype=float).ravel()


def _signed(a):
    """Components with the sign of each row (or of a vector) fixed by its largest-magnitude entry."""
    import numpy as np

    a = np.atleast_1d(np.asarray(a, dtype=float))
    if a.ndim == 1:
        i = np.argmax(np.abs(a)) if a.size else 0
        return a * (1.0 if a.size == 0 or a[i] >= 0 else -1.0)
    rows = a.reshape(len(a), -1)
    signs = np.sign(rows[np.arange(len(rows)), np.argmax(np.abs(rows), axis=1)])
    signs[signs == 0] = 1.0
    return rows * signs[:, None]


def probe():
    """Fit every case of :func:`cases` on :func:`data`; one row per recorded number.

    Returns
    -------
    pandas.DataFrame
        Columns ``case``, ``quantity``, ``index`` and ``value`` (a case that raised records its error
        as one row whose ``quantity`` is ``error: ...`` with the message, its ``value`` NaN).
    """
    import numpy as np
    import pandas as pd

    X = data()
    rows = []
    for case, fit in cases().items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = fit(X.copy())
        except Exception as exc:  # a default that stopped working is a change to report, not a crash
            rows.append((case, f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}", 0, np.nan))
            continue
        for quantity, value in got.items():
            value = _signed(value) if quantity in ("components", "u") else value
            flat = _as_array(value)
            rows += [(case, quantity, i, float(v)) for i, v in enumerate(flat)]
    return pd.DataFrame(rows, columns=["case", "quantity", "index", "value"])
