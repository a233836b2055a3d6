"""What Asteris et al. (2014) Figures 4-6 share: the curves of Alg. 3, EM and NSPCA with the certified
region, their plot, and the claim checks they have in common (one module, so no experiment imports another).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import replace

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments.runner import _common
from experiments.runner.claims import NOT_REPRODUCED, PARTIAL, REPRODUCED, Outcome
from repro.em_sparse_pca import em_sparse_pca_path
from repro.linalg import Covariance
from repro.nspca import CardinalityNotReached, nspca_for_cardinality
from repro.spannogram import rho_d, spannogram_bound, spannogram_path

RANK = 3
EPS = 0.1  # the accuracy of Alg. 3 in Sec. 7 (d = 3, eps = 0.1)
N_SAMPLES = 10000
EM_RESTARTS = 5
PREPROCESSINGS = ("center", "none", "standardize")  # the readings of "A" compared in the variant rows


def theorem2_bound(cov: Covariance, components, *, rank: int = RANK, eps: float = EPS) -> np.ndarray:
    """The paper's data-dependent bound, read from Theorem 2 and the output of Alg. 3 (Sec. 7).

    Alg. 3's output ``x`` has ``x'A_d x >= (1 - eps) OPT_d`` (Theorem 2's net argument) and ``OPT <= OPT_d
    + lambda_{d+1}`` (Theorem 1's proof), so ``OPT <= x'A_d x / (1 - eps) + lambda_{d+1}``, as written: not
    capped at ``lambda_1`` (the paper calls ``lambda_1`` the trivial bound its own improves on).
    Our own bound (:func:`repro.spannogram.spannogram_bound`) replaces ``1 / (1 - eps)`` by the
    covering factor of the net actually used (``1 / cos^2 theta``, about 1.0006 for a 1e4-point grid at
    ``d = 3``).

    Parameters
    ----------
    cov : Covariance
    components : ndarray (n_k, n_features)
        Alg. 3's unit vectors, one per ``k``.
    rank, eps : the ``d`` and ``eps`` of Alg. 3.

    Returns
    -------
    ndarray (n_k,)
    """
    values, vectors = cov.eigh(rank + 1)
    proj = np.atleast_2d(components) @ vectors[:, :rank]
    value_d = (proj**2) @ values[:rank]
    return value_d / (1.0 - eps) + values[rank]


def curves(
    X,
    *,
    dataset: str,
    kmax: int,
    em_ks,
    cfg: _common.Config,
    n_samples: int,
    em_restarts: int,
    nspca_ks=(),
    nspca_alpha: float = 1e6,
    nspca_restarts: int = 2,
    nspca_iter: int = 300,
) -> pd.DataFrame:
    """The rows of one variance-vs-k figure: Algorithm 3 for ``k = 1..kmax``, EM and NSPCA on their grids."""
    cov = Covariance.from_data(X)
    spectrum = np.zeros(X.shape[1])
    vals = cov.eigh(min(X.shape[1], X.shape[0] - 1))[0]
    spectrum[: vals.size] = vals
    lam1 = float(spectrum[0])
    ks = np.arange(1, kmax + 1)
    t0 = time.perf_counter()
    path = spannogram_path(X, ks, rank=RANK, n_samples=n_samples, random_state=cfg.rng(1))
    t_span = time.perf_counter() - t0
    t0 = time.perf_counter()
    bound = spannogram_bound(cov, ks, rank=RANK, n_samples=n_samples, net="grid")
    t_bound = time.perf_counter() - t0
    spectral = spannogram_bound(cov, ks, rank=RANK, n_samples=n_samples, net="grid", spectral_only=True)
    thm2 = theorem2_bound(cov, path.components)
    rows = []

    def row(method, k, var, nnz, **extra):
        b = float(bound[k - 1])
        return {
            "dataset": dataset,
            "method": method,
            "cardinality": int(k),
            "variance": float(var),
            "normalized": float(var) / lam1,
            "nnz": int(nnz),
            "bound": b,
            "bound_normalized": b / lam1,
            "bound_spectral": float(spectral[k - 1]),
            "certified": float(var) / b,
            "bound_theorem2": float(thm2[k - 1]),
            "certified_theorem2": float(var) / float(thm2[k - 1]),
            "rho_d": rho_d(spectrum, k, RANK),  # the a-priori factor of Theorem 1 (Eq. 4)
            "lambda1": lam1,
            "lambda_next_ratio": float(spectrum[RANK]) / lam1,
            **extra,
        }

    for j, k in enumerate(ks):
        rows.append(
            row(
                "Spannogram",
                k,
                path.variance[j],
                path.n_nonzero[j],
                bound_random=float(path.upper_bound[j]),
                seconds=t_span,
                bound_seconds=t_bound,
            )
        )
    em_ks = np.array([k for k in em_ks if k <= kmax])
    t0 = time.perf_counter()
    em = em_sparse_pca_path(
        X,
        em_ks,
        nonneg=True,
        renormalize=True,
        init="random",
        n_restarts=em_restarts,
        random_state=cfg.rng(2),
    )
    t_em = time.perf_counter() - t0
    for j, k in enumerate(em.cardinalities):
        rows.append(
            row(
                "EM",
                k,
                em.variance_opt[j],
                np.count_nonzero(em.components_opt[j]),
                variance_plain=float(em.variance[j]),
                seconds=t_em,
            )
        )
    # the same EM started from the first principal component (both signs): not the paper's protocol,
    # recorded to show how much of any gap to Alg. 3 is EM's random initialization
    pc = em_sparse_pca_path(X, em_ks, nonneg=True, renormalize=True, init="pc", random_state=cfg.rng(4))
    for j, k in enumerate(pc.cardinalities):
        rows.append(
            row("EM (PC start)", k, pc.variance_opt[j], np.count_nonzero(pc.components_opt[j]),
                variance_plain=float(pc.variance[j]))
        )  # fmt: skip
    if len(nspca_ks):
        A = np.ascontiguousarray(X.T @ X)  # NSPCA's scatter matrix (Zass & Shashua, Eq. 3)
        for k in nspca_ks:
            t0 = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    r = nspca_for_cardinality(
                        A,
                        int(k),
                        alpha=nspca_alpha,
                        n_restarts=nspca_restarts,
                        precomputed=True,
                        max_iter=nspca_iter,
                        random_state=cfg.rng(3, int(k)),
                    )
                w = r.component
                rows.append(
                    row("NSPCA", k, cov.quad(w), np.count_nonzero(w), found=True, alpha=nspca_alpha)
                    | {"seconds": time.perf_counter() - t0}
                )
            except CardinalityNotReached as miss:
                rows.append(
                    {
                        "dataset": dataset,
                        "method": "NSPCA",
                        "cardinality": int(k),
                        "found": False,
                        "alpha": nspca_alpha,
                        "lambda1": lam1,
                        "seconds": time.perf_counter() - t0,
                        **_bracket(miss.seen, int(k)),
                    }
                )
    return pd.DataFrame(rows)


OPTIMUM_METHOD = "Optimum (B&B)"
OPTIMUM_COMPARED = ("Spannogram", "EM", "EM (PC start)", "NSPCA")


def optimum_rows(X, ks, *, dataset: str, lam1: float, max_nodes: int, root_em: bool = True) -> pd.DataFrame:
    """The certified non-negative optimum (:func:`repro.optimal_sparse_pca`, ``x >= 0``, the covariance of
    the centred ``X`` as in :func:`curves`) at each ``k`` of ``ks``, each search capped at ``max_nodes``
    nodes (not seconds: the rows do not depend on the machine's load). ``proven`` says whether the cap
    was enough; otherwise ``bound`` is the certified upper bound where the search stopped. A ``k`` above
    one whose optimum reaches the DNN bound (:func:`repro.optimal.dnn_bound`, valid at every ``k``)
    takes that optimum, proven, with no search (0 nodes): the optimum cannot fall as ``k`` grows and cannot
    exceed the bound. Wide data (``n < p``) go through :func:`repro.optimal_sparse_pca_wide` once for
    ``k = 1..max(ks)`` (each cardinality's search capped), never forming the ``p x p`` covariance."""
    from repro import optimal_sparse_pca, optimal_sparse_pca_wide
    from repro.optimal import DNN_MAX_FEATURES, dnn_bound

    ks = sorted(int(k) for k in ks)
    X = np.asarray(X, dtype=np.float64)
    results = {}
    t0 = time.perf_counter()
    if X.shape[0] < X.shape[1]:
        levels = optimal_sparse_pca_wide(X, ks[-1], nonneg=True, max_nodes=max_nodes, root_em=root_em)
        results = {k: levels[k] for k in ks}
        for r in results.values():
            r.time = np.nan  # the chain's levels share one clock: the total is in "seconds"
    else:
        C = Covariance.from_data(X).dense()
        # the DNN bound holds at every k: once a k0's optimum reaches it, opt(k0) <= opt(k) <= bound proves
        # that optimum at every k > k0 without a search (LRS: the optimum has 11 non-zeros at every k >= 11)
        dnn = dnn_bound(C)[0] if C.shape[0] <= DNN_MAX_FEATURES else np.inf
        for k in ks:
            held = next((r for r in results.values() if r.value * (1 + 1e-6) >= dnn), None)
            if held is not None:
                results[k] = replace(held, upper_bound=max(dnn, held.value), gap=max(dnn - held.value, 0.0) /
                                     held.value, proven=True, status="optimal", n_nodes=0)  # fmt: skip
                continue
            results[k] = optimal_sparse_pca(C, k, nonneg=True, precomputed=True, max_nodes=max_nodes,
                                            root_em=root_em)  # fmt: skip
    total = time.perf_counter() - t0
    return pd.DataFrame(
        [
            {
                "dataset": dataset,
                "method": OPTIMUM_METHOD,
                "cardinality": k,
                "variance": r.value,
                "normalized": r.value / lam1,
                "nnz": int(np.count_nonzero(r.component)),
                "bound": r.upper_bound,
                "bound_normalized": r.upper_bound / lam1,
                "proven": bool(r.proven),
                "opt_gap": r.gap,
                "opt_status": r.status,
                "opt_nodes": int(r.n_nodes),
                "node_cap": int(max_nodes),
                "lambda1": lam1,
                "seconds": total,
            }
            for k, r in results.items()
        ]
    )


def add_optimum_ratio(df: pd.DataFrame) -> pd.DataFrame:
    """Column ``of_optimum`` on each compared method's rows (:data:`OPTIMUM_COMPARED`): its variance over the
    optimum at its ``k`` (the proven value; where the node cap stopped the proof, the certified upper bound,
    so the ratio is a lower bound on the true one: ``optimum_proven`` says which); NaN where no optimum was
    computed."""
    opt = df[df.method == OPTIMUM_METHOD]
    df = df.copy()
    df["of_optimum"] = np.nan
    df["optimum_proven"] = pd.Series(pd.NA, index=df.index, dtype="boolean")
    for (name, k), r in opt.set_index(["dataset", "cardinality"]).iterrows():
        ref = r.variance if r.proven else r.bound
        rows = (df.dataset == name) & (df.cardinality == k) & df.method.isin(OPTIMUM_COMPARED)
        df.loc[rows, "of_optimum"] = df.loc[rows, "variance"] / ref
        df.loc[rows, "optimum_proven"] = bool(r.proven)
    return df


def reading_rows(
    X_raw, ks, *, dataset: str, cfg: _common.Config, n_samples: int, readings=PREPROCESSINGS
) -> pd.DataFrame:
    """Alg. 3 at the published ``k`` under each reading of ``A`` (:data:`PREPROCESSINGS`).

    The paper says ``A = S S' / m`` for ``m`` zero-mean samples (Sec. 1): centred, which the figures use.
    ``"none"`` is the uncentred second moment ``X'X / m``, ``"standardize"`` the correlation matrix. For
    each: Alg. 3's value, its non-zeros, and the certificates with our bound and with Theorem 2's form.
    """
    rows = []
    ks = np.asarray(ks)
    for how in readings:
        Xr = np.asarray(X_raw, dtype=np.float64)
        if how == "standardize" and not (Xr.std(axis=0) > 0).all():
            continue  # constant columns: the correlation matrix is not defined
        cov = Covariance.from_data(
            Xr if how == "none" else _common.preprocess(Xr, how), center=how != "none", ddof=0
        )
        path = spannogram_path(cov, ks, rank=RANK, n_samples=n_samples, random_state=cfg.rng(5))
        bound = spannogram_bound(cov, ks, rank=RANK, n_samples=n_samples, net="grid")
        thm2 = theorem2_bound(cov, path.components)
        lam = cov.eigh(RANK + 1)[0]
        for j, k in enumerate(ks):
            rows.append(
                {
                    "dataset": dataset,
                    "method": "Alg. 3 (reading of A)",
                    "preprocessing": how,
                    "cardinality": int(k),
                    "variance": float(path.variance[j]),
                    "normalized": float(path.variance[j] / lam[0]),
                    "nnz": int(path.n_nonzero[j]),
                    "bound": float(bound[j]),
                    "certified": float(path.variance[j] / bound[j]),
                    "bound_theorem2": float(thm2[j]),
                    "certified_theorem2": float(path.variance[j] / thm2[j]),
                    "lambda1": float(lam[0]),
                    "lambda_next_ratio": float(lam[RANK] / lam[0]),
                }
            )
    return pd.DataFrame(rows)


def speed_rows(X, k: int, *, cfg: _common.Config, repeats: int = 5, min_seconds: float = 0.3) -> pd.DataFrame:
    """Alg. 3 and EM timed one after the other on the same data, ``repeats`` times (Sec. 8's speed claim).

    Both through their one-component estimators with default settings (Alg. 3: ``d = 3``, 1e4 samples;
    EM: non-negative, its default random starts), each from the data matrix, so each includes its own set-up.
    A fit takes 0.01-0.1 s, so one fit per sample was mostly noise (the verdict flipped between runs): each
    sample is the CPU time of this process per fit over at least ``min_seconds`` of fits
    (:func:`experiments.runner._common.cpu_seconds_per_call`), BLAS on one thread (numba kernels are
    single-threaded), the two methods interleaved.
    """
    from threadpoolctl import threadpool_limits

    from repro import EMSparsePCA
    from repro.spannogram import SpannogramPCA

    def alg3(r):
        return SpannogramPCA(n_components=1, cardinality=k, rank=RANK, random_state=cfg.rng(6, r)).fit(X)

    def em(r):
        return EMSparsePCA(n_components=1, cardinality=k, nonneg=True, random_state=cfg.rng(7, r)).fit(X)

    rows = []
    with threadpool_limits(1):
        alg3(0), em(0)  # compile and warm the caches outside the timed runs
        for r in range(repeats):
            t, n = {}, {}
            for name, fit in (("Alg. 3", alg3), ("EM", em)):
                t[name], n[name] = _common.cpu_seconds_per_call(lambda fit=fit, r=r: fit(r), min_seconds)
            rows.append({"method": "speed", "cardinality": int(k), "repeat": r, "seconds_alg3": t["Alg. 3"],
                         "seconds_em": t["EM"], "ratio": t["Alg. 3"] / t["EM"], "calls_alg3": n["Alg. 3"],
                         "calls_em": n["EM"]})  # fmt: skip
    return pd.DataFrame(rows)


def _bracket(seen, target: int) -> dict:
    """The tightest beta bracket of a search that missed ``target``: the two fits, one with fewer and one with
    more non-zeros than ``target``, whose betas are closest (relative distance ``beta_gap``). A gap near the
    search's ``rtol`` means the search converged and NSPCA's cardinality jumps over ``target`` there."""
    best = {"nnz_below": np.nan, "nnz_above": np.nan, "beta_gap": np.nan}
    for b1, c1 in seen:
        for b2, c2 in seen:
            if c1 < target < c2:
                gap = abs(b1 - b2) / max(abs(b1), abs(b2), 1e-300)
                if not gap >= best["beta_gap"]:  # also replaces the initial NaN
                    best = {"nnz_below": c1, "nnz_above": c2, "beta_gap": gap}
    return best


def plot_curves(df: pd.DataFrame, title: str, *, logx: bool = False):
    """Left: the published figure. Right: the guarantees vs k -- the data-dependent certificate (value /
    bound) of Alg. 3 and EM against the a-priori factor ``(1 - eps) rho_d`` of Theorems 1-2 (Eq. 4), which
    depends on the spectrum only through ``lambda_{d+1} / lambda_1`` and ``n / k``."""
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(9.6, 3.6))
    sp = df[df.method == "Spannogram"].sort_values("cardinality")
    ax.fill_between(
        sp.cardinality, sp.normalized, sp.bound_normalized, color="tab:red", alpha=0.15, lw=0,
        label="optimum lies here (certified)",
    )  # fmt: skip
    ax.plot(sp.cardinality, sp.bound_normalized, color="tab:red", lw=0.8, ls="--", label="upper bound")
    ax.plot(sp.cardinality, sp.normalized, color="tab:red", lw=1.4, label="Alg. 3 (d = 3, eps = 0.1)")
    em = df[df.method == "EM"].sort_values("cardinality")
    st = _common.method_style("EM")
    ax.plot(em.cardinality, em.normalized, ls="none", label="EM (Sigg & Buhmann), renormalized", **st)
    ax.plot(
        em.cardinality,
        em.variance_plain / em.lambda1,
        color=st["color"],
        lw=0.7,
        ls=":",
        label="EM, plain iterate",
    )
    if "EM (PC start)" in set(df.method):
        pcs = df[df.method == "EM (PC start)"].sort_values("cardinality")
        # drawn over the EM dots (black crosses, on top) so the series stays visible where the two coincide
        ax.plot(pcs.cardinality, pcs.normalized, ls="none", marker="x", color="k", ms=4, mew=0.8, zorder=5,
                label="EM from the first PC (not the paper's)")  # fmt: skip
    if "NSPCA" in set(df.method):
        ns = df[(df.method == "NSPCA") & df.found.fillna(False).astype(bool)].sort_values("cardinality")
        ax.plot(ns.cardinality, ns.normalized, ls="none", label="NSPCA", **_common.method_style("NSPCA"))
    if OPTIMUM_METHOD in set(df.method):
        opt = df[df.method == OPTIMUM_METHOD].sort_values("cardinality")
        done = opt[opt.proven.astype(bool)]
        ax.plot(done.cardinality, done.normalized, color="k", lw=1.0, marker=".", ms=4, zorder=6,
                label="optimum (proven, branch and bound)")  # fmt: skip
        open_ = opt[~opt.proven.astype(bool)]
        if len(open_):
            cap = int(open_.node_cap.iloc[0])
            ax.plot(open_.cardinality, open_.bound_normalized, ls="none", marker="v", color="k", ms=4,
                    zorder=6, label=f"optimum <= (bound where {cap} nodes stop)")  # fmt: skip
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel("Sparsity k")
    ax.set_ylabel(r"Normalized variance $x^T A x / \lambda_1$")
    ax.set_ylim(0, 1.02)
    ax.set_xlim(1, sp.cardinality.max())
    ax.set_title(title)
    ax.legend(loc="upper left" if logx else "lower right")
    ax2.plot(sp.cardinality, sp.certified, color="tab:red", label="Alg. 3: value / bound (certified)")
    if "certified_theorem2" in sp:
        ax2.plot(sp.cardinality, sp.certified_theorem2, color="tab:red", ls=":", lw=1.2,
                 label=r"Alg. 3: value / $x^TA_dx/(1-\epsilon) + \lambda_{d+1}$ (paper's form)")  # fmt: skip
    ax2.plot(em.cardinality, em.certified, ls="none", label="EM: value / bound", **st)
    ax2.plot(
        sp.cardinality,
        0.9 * sp.rho_d,
        color="k",
        ls="--",
        lw=0.9,
        label=r"a priori $(1-\epsilon)\rho_3$ (Eq. 4)",
    )
    if logx:
        ax2.set_xscale("log")
    ax2.set_xlim(1, sp.cardinality.max())
    ax2.set_ylim(0, 1.02)
    ax2.set_xlabel("Sparsity k")
    ax2.set_ylabel("fraction of the optimum, guaranteed")
    ax2.set_title("Guarantees: data-dependent vs a priori")
    ax2.legend(loc="upper center" if logx else "lower right", fontsize=7)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- claim checks (shared)
def at_k(df, method, k, col="certified"):
    sub = df[df.method == method].set_index("cardinality")
    if k not in sub.index:
        raise KeyError(f"no {method} row at k={k}")
    return float(sub.loc[k, col])


def _readings_text(df, k: int) -> tuple[str, list[float]]:
    """The certificates at ``k`` under each reading of ``A`` (rows of :func:`reading_rows`)."""
    rd = df[(df.method == "Alg. 3 (reading of A)") & (df.cardinality == k)]
    names = {"center": "centred", "none": "uncentred X'X/m", "standardize": "correlation"}
    parts, values = [], {}
    for r in rd.itertuples():
        name = names[r.preprocessing]
        parts.append(
            f"{name}: {100 * r.certified:.1f}% (Theorem 2's form "
            f"{100 * r.certified_theorem2:.1f}%, {int(r.nnz)} non-zeros)"
        )
        values[f"{name}, our bound"] = float(r.certified)
        values[f"{name}, Theorem 2's form"] = float(r.certified_theorem2)
    return "; ".join(parts), values


def check_at_least(k: int, published: float):
    def check(df):
        v = at_k(df, "Spannogram", k)
        t2 = at_k(df, "Spannogram", k, "certified_theorem2")
        spec = at_k(df, "Spannogram", k, "variance") / at_k(df, "Spannogram", k, "bound_spectral")
        rho = at_k(df, "Spannogram", k, "rho_d")
        ok = v >= published
        readings, values = _readings_text(df, k)
        near = min(values, key=lambda name: abs(values[name] - published)) if values else None
        gap = abs(values[near] - published) if near else float("inf")
        same_spec = abs(spec - v) < 5e-4
        return Outcome(
            f"{100 * v:.1f}% certified at k={k} (Theorem 2's form x'A_d x / (1 - eps) + lambda_(d+1): "
            f"{100 * t2:.1f}%; lambda_(d+1) alone as the residual: {100 * spec:.1f}%; a-priori "
            f"(1 - eps) rho_d: {100 * (1 - EPS) * rho:.1f}%)",
            REPRODUCED if ok else (PARTIAL if v >= 0.9 * published else NOT_REPRODUCED),
            f"value of Alg. 3 / rigorous upper bound at k={k}; reproduced if >= {100 * published:g}% (the "
            "sentence's 'at least'), partly if within 10% of it. Why ours is higher than the published "
            "value: "
            + (
                "not the residual variances (the bound with lambda_(d+1) alone gives the same value, "
                "bound_spectral in the CSV) but the net factor: "
                if same_spec
                else "partly the residual variances (bound_spectral), and the net factor: "
            )
            + "our bound divides Alg. 3's rank-d value by the covering factor of the 1e4-point grid actually "
            "used (cos^2 theta, about 0.999), the paper's reading of Theorem 2 by 1 - eps = 0.9 "
            "(bound_theorem2, certified_theorem2 in the CSV). "
            f"Readings of A at k={k} (Alg. 3 rerun on each): {readings}. "
            + (
                ""
                if near is None
                else f"The published {100 * published:g}% is matched within 1 point by the {near} reading "
                f"({100 * values[near]:.1f}%)."
                if gap <= 0.01
                else f"None gives the published {100 * published:g}% (nearest: {near}, "
                f"{100 * values[near]:.1f}%): the "
                "paper's number cannot be obtained from its stated bound on these data; the paper's "
                "supplement, which gives the bound it used, is not available."
            ),
        )

    return check


# "significantly tighter" (abstract), a rule derived from the sentence before it saw the data: a
# bound is tighter when it leaves less room between the guarantee and the optimum (1 - guarantee, the part
# of the optimum it cannot vouch for); "significantly" = by a factor, at least halving that room, so that
# the data-dependent bound proves at least half of what the a-priori bound leaves unproven. Scale-free, so
# the same rule serves a data set where the a-priori bound is near 100% and one where it is near 0.
TIGHTER_FACTOR = 0.5


def check_vs_apriori(df):
    """Abstract: the data-dependent bound is significantly tighter than the a-priori bound (Eq. 4-5)."""
    sp = df[df.method == "Spannogram"].sort_values("cardinality")
    apriori = (1.0 - EPS) * sp.rho_d
    gain = sp.certified_theorem2 - apriori
    every = bool((gain > 0).all())
    # the room each bound leaves to the optimum, and its ratio (data-dependent / a-priori), per k
    room = (1.0 - sp.certified_theorem2) / (1.0 - apriori)
    room_ours = (1.0 - sp.certified) / (1.0 - apriori)
    med = float(room.median())
    halves = med <= TIGHTER_FACTOR
    k_at = sp.cardinality
    return Outcome(
        "room left to the optimum, data-dependent / a-priori (1 - eps) rho_d, over "
        f"k = 1..{int(k_at.max())}: "
        f"median {med:.2f} (max {room.max():.2f} at k={int(k_at[room.idxmax()])}) with Theorem 2's form; "
        f"median {room_ours.median():.2f} with our bound; guarantee gain median {100 * gain.median():+.1f} "
        f"points, min {100 * gain.min():+.1f} (k={int(k_at[gain.idxmin()])}) with Theorem 2's form",
        REPRODUCED if (every and halves) else (PARTIAL if halves or every else NOT_REPRODUCED),
        "a priori: the guarantee of Theorem 2, (1 - eps) max{k/2n, 1/(1 + 2 (n/k) lambda_(d+1)/lambda_1)} "
        "(Eq. 4-5); data dependent: Alg. 3's value / the bound from its output (Theorem 2's form, the "
        "paper's). 'Significantly tighter' (rule from the sentence): higher at every k of the "
        f"curve and, in the median over k, leaving at most {TIGHTER_FACTOR:g} of the room (1 - guarantee) "
        "that the a-priori bound leaves to the optimum (partly: one of the two); margin to the rule: "
        f"{TIGHTER_FACTOR - med:+.2f}. An earlier rule, a 10-point median gain, was set in the commit "
        f"that brought the data; it reads {100 * gain.median():+.1f} points here",
    )


def check_similar(df, tol_max=0.02, tol_median=0.01):
    sp = df[df.method == "Spannogram"].set_index("cardinality")["variance"]
    em = df[df.method == "EM"].set_index("cardinality")["variance"]
    rel = (sp.loc[em.index] - em) / sp.loc[em.index]
    worst = rel.abs().idxmax()
    ok = rel.abs().max() <= tol_max
    plain = df[df.method == "EM"].set_index("cardinality")["variance_plain"]
    relp = (sp.loc[plain.index] - plain) / sp.loc[plain.index]
    return Outcome(
        f"|Alg. 3 - EM| / Alg. 3 over {len(rel)} k: median {100 * rel.abs().median():.2f}%, max "
        f"{100 * rel.abs().max():.2f}% (k={worst}); Alg. 3 higher at {int((rel > 0).sum())}, EM higher at "
        f"{int((rel < 0).sum())} (plain EM iterate: median {100 * relp.median():+.1f}%)",
        REPRODUCED if ok else (PARTIAL if rel.abs().median() <= tol_median else NOT_REPRODUCED),
        f"'nearly identical' read as: within {100 * tol_max:g}% at every k of the EM grid (partly: median "
        f"within {100 * tol_median:g}%); EM = its support with optimal weights (renormalized)",
    )


def check_certified_range(df):
    sp = df[df.method == "Spannogram"]
    lo, hi = float(sp.certified.min()), float(sp.certified.max())
    klo = int(sp.loc[sp.certified.idxmin(), "cardinality"])
    return Outcome(
        f"certified fraction of Alg. 3 over k = 1..{int(sp.cardinality.max())}: min {100 * lo:.1f}% "
        f"(k={klo}), max {100 * hi:.1f}%",
        REPRODUCED if lo >= 0.40 else NOT_REPRODUCED,
        "Sec. 1 / abstract: 'provably within 40-90% from the unknown optimum': reproduced if the certified "
        "fraction is >= 40% at every k of the curve",
    )
