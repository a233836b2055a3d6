"""What the Zass & Shashua (2006) experiments share: the convergence measures of NSPCA's coordinate
ascent (monotone Eq. 3, coordinate-wise optimality), support sharing, the unit-norm overlap, and the
factors of Fig. 2 with their measures (one module, so no experiment imports another).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

HOLISTIC_FRACTION = 1 / 3  # a factor whose 90 % energy support exceeds this share of pixels is "holistic"
MONOTONE_RTOL = 1e-12  # a decrease of Eq. 3 larger than this share of |F| is not round-off
COORD_RTOL = (
    1e-8  # = the stopping tolerance: a single coordinate gain above it would have kept the sweeps going
)


def coordinate_gains(A: np.ndarray, U: np.ndarray, alpha: float, beta: float = 0.0):
    """For every entry of U, the gain of Eq. 3 if that entry alone moved to its best non-negative value.

    Independent of the kernel (a NumPy evaluation of Eq. 4 and 5): with the other entries fixed, F as a
    function of ``x = u_rs`` is the quartic ``-alpha/4 x^4 + c2/2 x^2 + c1 x + const`` (Eq. 4, coefficients
    derived in :mod:`repro.nspca._kernels`); its non-negative maximum is at zero or at a real root of the
    cubic ``-alpha x^3 + c2 x + c1 = 0`` (Eq. 5), here the eigenvalues of the companion matrices. A point is
    coordinate-wise optimal (what Algorithm 1 converges to) when every gain is zero.

    Returns
    -------
    gain, best : ndarray (d, k)
        ``F(U with u_rs <- best_rs) - F(U) >= 0`` and the maximizer ``best_rs``.
    """
    A = np.asarray(A, dtype=np.float64)
    x = np.asarray(U, dtype=np.float64)
    G = x.T @ x
    g = np.diag(G)[None, :]
    a = np.diag(A)[:, None]
    others_row = (x * x).sum(1, keepdims=True) - x * x  # sum_{i != r} u_is^2
    c2 = a + alpha - alpha * (g - x * x) - alpha * others_row
    c1 = (A @ x) - a * x - alpha * ((x @ G) - x * g - x * others_row) - beta
    n = x.size
    comp = np.zeros((n, 3, 3))  # companion matrix of y^3 + p y + q, p = -c2/alpha, q = -c1/alpha
    comp[:, 1, 0] = comp[:, 2, 1] = 1.0
    comp[:, 0, 2] = c1.ravel() / alpha
    comp[:, 1, 2] = c2.ravel() / alpha
    roots = np.linalg.eigvals(comp).real
    y = np.concatenate([np.zeros((n, 1)), np.maximum(roots, 0.0)], axis=1)  # any y >= 0 is a lower bound
    xv, c1v, c2v = x.reshape(-1, 1), c1.reshape(-1, 1), c2.reshape(-1, 1)
    # f(y) - f(x), factored so that nearly equal y and x do not cancel
    diff = (y - xv) * (-0.25 * alpha * (y + xv) * (y * y + xv * xv) + 0.5 * c2v * (y + xv) + c1v)
    j = np.argmax(diff, axis=1)
    rows = np.arange(n)
    return np.maximum(diff[rows, j], 0.0).reshape(x.shape), y[rows, j].reshape(x.shape)


def convergence_summary(A, res, alpha: float, beta: float) -> dict:
    """Is an NSPCA fit at a local maximum? Monotone objective and coordinate-wise optimality, relative to |F|.

    ``max_obj_drop``: the largest decrease of Eq. 3 from one sweep to the next (0 if it never decreased);
    ``max_coord_gain``: the largest gain a single coordinate update could still make at the end
    (:func:`coordinate_gains`); ``max_coord_move``: the largest such move of an entry, relative to the
    largest entry of U. All relative to ``|F|`` at the end.
    """
    obj = np.asarray(res.objective, dtype=float)
    F = abs(float(obj[-1])) or 1.0
    gain, best = coordinate_gains(A, res.U, alpha, beta)
    umax = float(np.abs(res.U).max()) or 1.0
    drops = -np.diff(obj)
    return {
        "max_obj_drop": float(max(drops.max(initial=0.0), 0.0) / F),
        "n_sweeps_down": int((drops > 0).sum()),
        "max_coord_gain": float(gain.max() / F),
        "max_coord_move": float(np.abs(best - res.U).max() / umax),
    }


def support_sharing(U: np.ndarray, rel: float = 0.0) -> tuple[float, float]:
    """How far the factors (columns of U >= 0) are from disjoint supports, on their unit-norm versions.

    ``shared``: share of the factors' energy on pixels used by more than one factor, a factor *using* a
    pixel when its weight there is non-zero (``rel = 0``) or, with ``rel > 0``, at least ``rel`` times the
    pixel's largest weight (so that small weights a finite penalty leaves do not count).
    ``nondominant``: share of the energy outside each pixel's largest factor, i.e. the energy that would
    have to move for U to become disjoint; unlike ``shared`` it does not count a pixel's whole energy when a
    second factor touches it with a tiny weight. Both are 0 exactly when the supports are disjoint.

    Examples
    --------
    >>> import numpy as np
    >>> U = np.array([[1.0, 0.0], [1.0, 0.05], [0.0, 1.0]])  # pixel 1: factor 2 touches it lightly
    >>> [round(v, 3) for v in support_sharing(U)]
    [0.251, 0.001]
    >>> support_sharing(U, rel=0.1)[0]
    0.0
    """
    U = np.asarray(U, dtype=float)
    norms = np.linalg.norm(U, axis=0)
    W = U[:, norms > 0] / norms[norms > 0]
    E = W * W
    total = E.sum()
    if total == 0:
        return 0.0, 0.0
    used = (W > rel * W.max(axis=1, keepdims=True)).sum(axis=1) if rel > 0 else (W != 0).sum(axis=1)
    return float(E[used > 1].sum() / total), float((E.sum(1) - E.max(1)).sum() / total)


def _unit_overlap(W: np.ndarray) -> float:
    norms = np.linalg.norm(W, axis=1)
    Wn = W[norms > 0] / norms[norms > 0, None]
    return float(np.linalg.norm(np.eye(len(Wn)) - Wn @ Wn.T))


# ------------------------------------------------------------------------ Fig. 2: factors, their measures
def energy_support(w: np.ndarray, q: float = 0.9) -> int:
    """Smallest number of entries holding a share ``q`` of ``||w||^2``."""
    e = np.sort(np.asarray(w, dtype=float) ** 2)[::-1]
    if e.sum() == 0:
        return 0
    return int(np.searchsorted(np.cumsum(e) / e.sum(), q) + 1)


def match_factors(Wc: np.ndarray, Wa: np.ndarray, Wb: np.ndarray) -> pd.DataFrame:
    """Match each factor of (c) to one of (a) and measure whether it is (a) with its weakest pixels dropped.

    Rows of ``W*`` are unit-norm factors. The match is one-to-one with the largest total cosine
    (Hungarian algorithm); the columns are described in the module docstring.
    """
    from scipy.optimize import linear_sum_assignment

    cos = Wc @ Wa.T
    ci, ai = linear_sum_assignment(-cos)
    rows = []
    for i, j in zip(ci, ai, strict=True):
        c, a = Wc[i], Wa[j]
        sc, sa = c != 0, a != 0
        kept = float((a[sc] ** 2).sum() / (a @ a))
        n_keep = int((sc & sa).sum())
        top = float(np.sort(a * a)[::-1][:n_keep].sum() / (a @ a))
        rows.append(
            {
                "kind": "match",
                "row": "c",
                "method": "NSPCA",
                "factor": int(i),
                "matched": int(j),
                "cos_a": float(cos[i, j]),
                "cos_b": float((Wb @ c).max()),
                "inside_energy": float((c[sa] ** 2).sum() / (c @ c)),
                "a_pixel_share": float(sa.mean()),
                "kept_energy": kept,
                "top_energy": top,
                "efficiency": kept / top if top > 0 else 0.0,
                "nnz_c": int(sc.sum()),
                "nnz_a": int(sa.sum()),
            }
        )
    return pd.DataFrame(rows)


def factor_rows(row, method, W, alpha=np.nan, beta=np.nan) -> pd.DataFrame:
    """One CSV row per pixel of every factor (rows of ``W``) of a row of Fig. 2 (``kind == "factor"``)."""
    k, d = W.shape
    return pd.DataFrame(
        {
            "kind": "factor",
            "row": row,
            "method": method,
            "alpha": alpha,
            "beta": beta,
            "preprocessing": "center",
            "factor": np.repeat(np.arange(k), d),
            "pixel": np.tile(np.arange(d), k),
            "value": W.ravel(),
        }
    )


def summary_row(row, method, W, U=None, alpha=np.nan, beta=np.nan, prep="center", kind="summary", **extra):
    """The measures of one setting (``kind == "summary"`` or ``"scaling"``; zass2006_fig2's docstring)."""
    U = W.T if U is None else U
    E = np.eye(U.shape[1]) - U.T @ U
    shared, nondominant = support_sharing(np.abs(U))
    return {
        "kind": kind,
        "row": row,
        "method": method,
        "alpha": alpha,
        "beta": beta,
        "preprocessing": prep,
        "overlap": float(np.linalg.norm(E)),
        "overlap_offdiag": float(np.linalg.norm(E - np.diag(np.diag(E)))),
        "overlap_unit": _unit_overlap(W),
        "l0": int(np.count_nonzero(U)),
        "coverage": int(np.count_nonzero(np.any(U != 0, axis=1))),
        "holistic": int(sum(energy_support(w) > HOLISTIC_FRACTION * W.shape[1] for w in W)),
        "shared_energy": shared if min(U.min(), 0) == 0 else np.nan,
        "nondominant_energy": nondominant if min(U.min(), 0) == 0 else np.nan,
        **extra,
    }
