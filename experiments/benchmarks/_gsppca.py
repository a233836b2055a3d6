"""What :mod:`experiments.benchmarks.gsppca` measures (its docstring holds the protocol, the choices and the
goals): :func:`timing_rows`, the fit and the evidence path against their plain NumPy twins
(:func:`plain_vem_iteration`, :func:`plain_evidence_path`) on each data set, and :func:`r_comparison_rows`,
the selection and the evidence against GSPPCA.R (run live or recorded), with the ranking facts beside it.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar
from sklearn import config_context

from experiments import _peers
from experiments.runner import _common
from repro import GSPPCA
from repro.gsppca import (
    evidence_path,
    log_evidence,
    rank_variables,
    rotation_step,
    row_log_density,
    vem_init,
    vem_iterations,
)

REPEATS = 3  # was 5: the ratios lie 2.5-5x from their goals, far outside the 15% band (room for GSPPCA.R)
PATH_SAMPLE = 24
ITER_DIFF = 20  # per-iteration time from runs of 2 and 2 + ITER_DIFF iterations


def plain_vem_iteration(X, M, S, u, alpha, s2):
    """One VEM iteration as Proposition 1 reads (per-variable inverses and loops). Returns the state."""
    n, p = X.shape
    d = M.shape[1]
    EWW = np.zeros((d, d))
    for k in range(p):
        EWW += u[k] ** 2 * (S[k] + np.outer(M[k], M[k]))
    Sigma = np.linalg.inv(np.eye(d) + EWW / s2)
    Mu = X @ (u[:, None] * M) @ Sigma / s2
    B = n * Sigma + Mu.T @ Mu
    C = X.T @ Mu
    S = np.empty((p, d, d))
    M = np.empty((p, d))
    a = np.empty(p)
    b = np.empty(p)
    for k in range(p):
        S[k] = np.linalg.inv(np.eye(d) / alpha + u[k] ** 2 * B / s2)
        M[k] = u[k] / s2 * S[k] @ C[k]
        E = S[k] + np.outer(M[k], M[k])
        a[k] = np.trace(E @ B)
        b[k] = M[k] @ C[k]
    u = np.clip(b / a, 0.0, 1.0)
    resid = float(np.sum(X * X)) - 2 * float(u @ b) + float((u * u) @ a)
    s2 = resid / (n * p)
    alpha = float(sum(np.trace(S[k]) + M[k] @ M[k] for k in range(p))) / (p * d)
    for k in range(p):  # the scale step (repro.gsppca module docstring)
        if u[k] > 0:
            c = min(math.sqrt((np.trace(S[k]) + M[k] @ M[k]) / (alpha * d)), 1.0 / u[k])
            u[k], M[k], S[k] = u[k] * c, M[k] / c, S[k] / c**2
    alpha = float(sum(np.trace(S[k]) + M[k] @ M[k] for k in range(p))) / (p * d)
    _, Ainv, alpha, _ = rotation_step(B, S.sum(axis=0) + M.T @ M, alpha, n, p)  # the rotation step
    M = M @ Ainv
    S = Ainv.T @ S @ Ainv  # every S_k transformed (broadcast over k)
    return M, S, u, alpha, s2


def plain_evidence_path(X, order, d, s2, qs):
    """Log evidence of the models ``order[:q]``, ``q`` in ``qs``, each maximized apart in ``log alpha``."""
    p = X.shape[1]
    out = []
    for q in qs:
        sup = order[:q]
        r2 = np.einsum("ij,ij->i", X[:, sup], X[:, sup])
        rest = np.setdiff1d(np.arange(p), sup)
        o2 = np.einsum("ij,ij->i", X[:, rest], X[:, rest])
        t0 = math.log(r2.mean() / (d * q))

        def neg(t, r2=r2, o2=o2, q=q):
            return -float(row_log_density(r2, o2, q, p, d, t, s2).sum())

        # row_log_density is a step that trusts its input: scikit-learn's parameter validation (tens of
        # microseconds a call, hundreds of calls) is skipped, so the reference times the evidence alone
        with config_context(skip_parameter_validation=True):
            res = minimize_scalar(neg, bracket=(t0 - 1.0, t0 + 1.0), tol=1e-10)
        out.append(-res.fun)
    return np.array(out)


def bench_datasets(quick):
    from data_fetch import load_leukemia_golub, load_mnist_variation

    g = load_leukemia_golub().X
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_mnist_variation("basic", digit=7, n=500, random_state=0).X / 255.0
    if quick:
        g, m = g[:, :150], m[:, 300:420]
    out = {"golub": (_common.preprocess(g, "center"), 30 if not quick else 5)}
    m = _common.preprocess(m, "center")
    m = m[:, m.std(axis=0) > 0]  # constant (border) pixels carry nothing and have u = 0
    out["mnist-7"] = (m, 100 if not quick else 5)
    return out


def _time(f, *args, **kwargs):
    t0 = time.perf_counter()
    out = f(*args, **kwargs)
    return time.perf_counter() - t0, out


def timing_rows(name, X, d, repeats):
    n, p = X.shape
    Xc = X - X.mean(axis=0)
    rng = np.random.default_rng(0)
    M0, s20 = vem_init(Xc, d, rng)
    a0 = float(np.mean(M0 * M0))
    u0 = np.ones(p)
    # One real fit (its iterations and ranking are used below; its wall time is reported).
    t_fit, est = _time(GSPPCA(d, random_state=0).fit, X)
    iters = est.n_iter_
    order = est.ranking_
    s2 = est.sigma1_**2
    qs = np.unique(np.linspace(1, p, PATH_SAMPLE).round().astype(int))
    # Same algorithm: the plain iteration gives our u after 3 iterations.
    u_ours = vem_iterations(Xc, M0.copy(), u0.copy(), a0, s20, 3, 0.0)[0]
    state = (M0.copy(), np.zeros((p, d, d)), u0.copy(), a0, s20)
    for _ in range(3):
        state = plain_vem_iteration(Xc, *state)
    u_diff = float(np.max(np.abs(state[2] - u_ours)))
    B1 = np.ascontiguousarray(M0)
    Mu = np.ascontiguousarray(Xc @ B1)
    rows = []
    for r in range(repeats):
        t2 = _time(vem_iterations, Xc, M0.copy(), u0.copy(), a0, s20, 2, 0.0)[0]
        t_more = _time(vem_iterations, Xc, M0.copy(), u0.copy(), a0, s20, 2 + ITER_DIFF, 0.0)[0]
        it = max(t_more - t2, 1e-9) / ITER_DIFF
        tp0 = time.perf_counter()
        for _ in range(5):
            np.dot(Xc, B1)
            np.dot(Xc.T, Mu)
        prod = (time.perf_counter() - tp0) / 5.0
        st = (M0.copy(), np.zeros((p, d, d)), u0.copy(), a0, s20)
        t_plain_it = _time(plain_vem_iteration, Xc, *st)[0]
        t_path = _time(evidence_path, Xc, order, n_components=d)[0]
        t_one = _time(log_evidence, Xc, np.arange(p), n_components=d)[0]
        t_plain_path = _time(plain_evidence_path, Xc, order, d, s2, qs)[0] * p / qs.size
        ours = iters * it + t_path
        plain = iters * t_plain_it + t_plain_path
        rows += [
            {
                "dataset": name,
                "part": "iteration",
                "repeat": r,
                "ratio": it / prod,
                "ours_s": it,
                "ref_s": prod,
            },
            {
                "dataset": name,
                "part": "path",
                "repeat": r,
                "ratio": t_path / (p * t_one),
                "ours_s": t_path,
                "ref_s": p * t_one,
            },
            {
                "dataset": name,
                "part": "fit",
                "repeat": r,
                "ratio": plain / ours,
                "ours_s": ours,
                "ref_s": plain,
            },
        ]
    df = pd.DataFrame(rows)
    df["n"], df["p"], df["d"] = n, p, d
    df["fit_wall_s"], df["n_iter"], df["max_u_diff"] = t_fit, iters, u_diff
    return df


# GSPPCA.R on Golub, recorded by the peers (gsppca_side_by_side.json): d -> (q, largest log evidence over
# q = d+1..p-1, sigma1 "BC", wall seconds of its 3 runs, q of its ranking under the "ML" noise).
R_RECORDED = {
    1: (595, -96389.39718928357, 0.5341218920137996, (30.43, 31.82, 28.07), 595),
    30: (2803, -98247.9494901813, 0.19693339842604546, (151.47, 124.37, 139.52), 3046),
}
# GSPPCA.R's u at the end of its VEM on Golub, per d (gsppca_golub_rankings.R): its ranking,
# scored by our formula where R is not run live.
R_RANKINGS = "gsppca_golub_rankings_d{d}.csv"
R_LIVE = (1,)  # the d run live when GSPPCA.R is installed: d = 30 takes 2-3 min of R, over the budget


def _r_recorded(d):
    """GSPPCA.R's rankings of the Golub genes at ``d`` along its VEM (columns ``R_iter_<k>``, ``R_end``) and
    its final ``u`` (``R_u_final``), from experiments/peers_recorded/ (gsppca_golub_rankings.R)."""
    return pd.read_csv(_peers.RECORDED_DIR / R_RANKINGS.format(d=d))


def _r_recorded_u(d):
    """GSPPCA.R's final ``u`` on Golub at ``d`` (its last VEM iteration), from experiments/peers_recorded/."""
    return _r_recorded(d)["R_u_final"].to_numpy(dtype=np.float64)


def _r_rows(d, X, live):
    """GSPPCA.R at ``d``: run here (``live``) or its recorded values, as columns of the vs-R rows, and its
    final ``u`` (live, or recorded by gsppca_golub_rankings.R)."""
    q_r, ev_r, s_r, times, q_r_ml = R_RECORDED[d]
    if live:
        r = _peers.run_gsppca(X, d, seed=0)
        q_r, ev_r, s_r, times, u = r["q"], r["max_log_evidence"], r["sigma"], (r["seconds"],), r["u"]
    else:
        u = _r_recorded_u(d)
    return {
        "R_source": "live" if live else "recorded",
        "R_q": q_r,
        "R_max_logev": ev_r,
        "R_sigma1": s_r,
        "R_seconds": float(np.median(times)),
        "R_q_ml_ranking": q_r_ml,
    }, u


def _best(path, d, hi):
    """Largest log evidence of ``path`` over ``q = d+1..hi`` (GSPPCA.R's range) and its ``q``."""
    k = d + int(np.argmax(path.log_evidence[d:hi]))
    return float(path.log_evidence[k]), k + 1


def _spearman(a, b):
    """Spearman correlation of the ranks two rankings (permutations) give the variables."""
    ra, rb = np.empty(a.size), np.empty(b.size)
    ra[a], rb[b] = np.arange(a.size), np.arange(b.size)
    return float(np.corrcoef(ra, rb)[0, 1])


def _ranking_facts(X, d, m, r_u, r_rankings=None):
    """Why the VEM's later rankings score lower, and ours against GSPPCA.R's final ranking.

    ``m``: our default fit (``sigma1="bc"``, ``random_state=0``); ``r_u``: GSPPCA.R's final ``u``;
    ``r_rankings``: its rankings along its VEM (:func:`_r_recorded`; None: not scored). Every
    ranking is scored by the exact evidence under ``m``'s noise over GSPPCA.R's range of ``q``. Measured:

    * the variance order (genes by decreasing sum of squares) and the gain ``w_i`` (nats per unit of row
      ``i``'s squared norm moved from the inactive to the active genes, at the variance order's best model:
      ``1 / (2 sigma1^2)`` plus the derivative of the active log density, by central differences): with
      ``w_i`` constant the evidence at a given ``q`` ranks supports by their sum of squares; the order by
      ``sum_i w_i x_ik^2`` is scored too (one step of that local ascent);
    * for our returned ranking and the VEM's final one: the sum of squares their best model leaves out
      against the variance order's top ``q`` (same ``q``), the evidence that predicts (``sum_i w_i`` of the
      row differences) and the measured difference;
    * the VEM's first iteration from the same start, against the order by variance in the leading
      ``d``-dimensional PCA subspace;
    * the VEM with its noise held at the evidence's ``sigma1^2`` (``vem_iterations(fix_s2=True)``), its final
      ranking scored: does the noise re-estimated along the iterations change the ranking?
    * GSPPCA.R's final ranking (its range ends before its ``u = 0`` genes, as its Occam): best evidence and
      ``q``, genes shared with our selection, Spearman of the full rankings; and its rankings at its VEM's
      iterations 1, 2, 4, ..., 128 (recorded): the best of them and its iteration, does the authors' VEM
      (without our scale and rotation steps) lose evidence along its iterations too?
    """
    p = X.shape[1]
    Xc = X - X.mean(axis=0)
    s2 = m.sigma1_**2
    sq = Xc * Xc
    col2 = sq.sum(axis=0)

    def path(order):
        return evidence_path(X, order, n_components=d, sigma1=m.sigma1_)

    var_order = np.argsort(-col2, kind="stable")
    var_path = path(var_order)
    var_ev, var_q = _best(var_path, d, p - 1)
    sup = np.zeros(p, dtype=bool)
    sup[var_order[:var_q]] = True
    r2, o2 = sq[:, sup].sum(axis=1), sq[:, ~sup].sum(axis=1)
    t = float(np.log(var_path.alpha[var_q - 1]))
    h = 1e-6 * r2
    w = 1.0 / (2.0 * s2) + (
        row_log_density(r2 + h, o2, var_q, p, d, t, s2) - row_log_density(r2 - h, o2, var_q, p, d, t, s2)
    ) / (2.0 * h)
    w_ev, _ = _best(path(np.argsort(-(w @ sq), kind="stable")), d, p - 1)

    def deficit(order):
        ev, q = _best(path(order), d, p - 1)
        miss = sq[:, var_order[:q]].sum(axis=1) - sq[:, order[:q]].sum(axis=1)
        return ev, q, float(miss.sum()), float(w @ miss), float(var_path.log_evidence[q - 1] - ev)

    final = rank_variables(m.vem_.u, m.vem_.u_ratio)
    ours = deficit(m.ranking_)
    fin = deficit(final)
    M0, s20 = vem_init(Xc, d, np.random.default_rng(0))  # the start of GSPPCA(random_state=0)
    a0 = float(np.mean(M0 * M0))
    it1 = vem_iterations(Xc, M0.copy(), np.ones(p), a0, s20, 1, 0.0)
    U = np.linalg.svd(Xc, full_matrices=False)[0][:, :d]
    sub_order = np.argsort(-((U.T @ Xc) ** 2).sum(axis=0), kind="stable")
    fx = vem_iterations(Xc, M0.copy(), np.ones(p), a0, s2, m.max_iter, m.tol, fix_s2=True)
    fx_ev, fx_q = _best(path(rank_variables(fx[0], fx[1])), d, p - 1)
    r_order = np.argsort(-r_u, kind="stable")  # R's order(u, decreasing = TRUE)
    r_ev, r_q = _best(path(r_order), d, min(p - 1, p - int(np.sum(r_u <= 1e-200))))
    r_sel = r_order[:r_q]
    r_cps = [] if r_rankings is None else [c for c in r_rankings.columns if c.startswith("R_iter_")]
    r_cp = [_best(path(r_rankings[c].to_numpy(dtype=np.int64)), d, p - 1)[0] for c in r_cps] or [np.nan]
    return {
        "var_max_logev": var_ev,
        "var_q": var_q,
        "w_min": float(w.min()),
        "w_max": float(w.max()),
        "w_order_max_logev": w_ev,
        "final_q": fin[1],
        "sqnorm_left_out": ours[2],
        "sqnorm_left_out_final": fin[2],
        "logev_gap_predicted": ours[3],
        "logev_gap_predicted_final": fin[3],
        "logev_gap_var": ours[4],
        "logev_gap_var_final": fin[4],
        "spearman_var": _spearman(m.ranking_, var_order),
        "spearman_var_final": _spearman(final, var_order),
        "spearman_iter1_subspace": _spearman(rank_variables(it1[0], it1[1]), sub_order),
        "vem_sigma1_end": math.sqrt(m.vem_.sigma2),
        "fixed_noise_max_logev": fx_ev,
        "fixed_noise_q": fx_q,
        "fixed_noise_n_iter": len(fx[7]),
        "R_max_logev_our_formula": r_ev,
        "R_q_our_formula": r_q,
        "shared_with_R": int(np.intersect1d(m.ranking_[: m.n_selected_], r_sel).size),
        "spearman_R": _spearman(m.ranking_, r_order),
        "spearman_R_final": _spearman(final, r_order),
        "R_best_checkpoint_logev": max(r_cp),
        "R_best_checkpoint_iter": int(r_cps[int(np.argmax(r_cp))].split("_")[-1]) if r_cps else -1,
    }


def r_comparison_rows():
    from data_fetch import load_leukemia_golub

    X = load_leukemia_golub().X
    p = X.shape[1]
    rows = []
    for d in R_RECORDED:
        live = d in R_LIVE and _peers.available("gsppca")
        ours = {}
        for noise in ("bc", "ml"):
            t, m = _time(GSPPCA(d, sigma1=noise, random_state=0).fit, X)
            ev = m.evidence_path_
            ours[noise] = {
                "dataset": "golub",
                "part": "vs-R",
                "d": d,
                "sigma1": noise,
                "q": m.n_selected_,
                "q_R_range": d + 1 + int(np.argmax(ev[d : p - 1])),
                "max_logev_R_range": float(ev[d : p - 1].max()),
                "sigma1_value": m.sigma1_,
                "n_iter": m.n_iter_,
                "ranking_iter": m.ranking_iter_,
                "max_logev_final_ranking": float(m.ranking_evidence_[-1, 1]),
                "capped": not m.vem_.converged,
                "fit_wall_s": t,
            }
            if noise == "bc":  # GSPPCA.R between our two fits: interleaved, same process tree
                r, r_u = _r_rows(d, X, live)
                ours[noise].update(_ranking_facts(X, d, m, r_u, _r_recorded(d)))
        rows += [{**row, **r} for row in ours.values()]
    return pd.DataFrame(rows)
