"""Benchmark of the exact sparse PCA solver (:func:`repro.optimal_sparse_pca`) on the published instances.

Instances (section 8 of the data sources): Berk & Bertsimas's (2019) Pit Props (correlation), MiniBooNE
(covariance and correlation, p = 50), Communities (covariance and correlation, p = 101) and Arrhythmia
(covariance, p = 274; its correlation matrix holds NaN where a feature is constant and is refused), and Li &
Xie's (2024) thirteen covariance matrices (p = 13-128), each at k = 5, 10, 15, 20 (k <= p), plus Pit Props
at k = 1..13 (``part == "pitprops"``). Each solve has a cap on its nodes, not a time limit, so that
the CSV and the verdicts are the same on every machine (a 5 s limit proved Li & Xie's Eisen2 at k = 20,
3,667 nodes in 4.4 s, in one run and not in another): ``NODE_CAP_LI_XIE`` = 20,000 nodes for Li & Xie's
matrices (the issue asks each to be proven within 60 s here; with the l1 bounds the largest, Eisen2
k = 15, needs 211
nodes), and ``NODE_CAP_BB`` = 7,500 for Berk & Bertsimas's (Arrhythmia's nodes cost about 25 ms with
the l1 bounds). The cap is set by the cardinality chain (docs/design.md, the certified optimum): it starts
after 1,500 nodes without a proof and may spend 4x those nodes, so it needs 7,500; with it Arrhythmia
k = 10 is proven in about 5,600 nodes (about 9 s of CPU; not proven in 10,204 nodes, 426 s, without it),
and Communities k = 20 (4,000-5,600 nodes) fits too; Arrhythmia k = 15 and 20 stop at the cap with their
certified gaps (the chain's sub-searches grow about 5x per k on its roughly 30 surviving features).
Past its cap a solve reports the best component with its certified gap,
``proven`` false, status ``node_limit``; ``SAFETY_TIME_LIMIT`` (120 s) only guards a run on a far slower
machine, and its status says so when it binds. Columns: proven value, upper bound,
gap, status, nodes (machine independent), seconds (wall, on a 2-core machine: inflated by other
processes' load), the nodes each bound pruned, and the value of four heuristics at their defaults on
the same matrix: EMSparsePCA (the EM alone, ``certify=False``: its default would run this solver on
p <= 16), the spannogram (signed, rank 3, ``SPAN_SAMPLES`` samples), thresholding
(renormalized) and PathSPCA; ``*_ratio`` is each heuristic's value over the proven optimum (over the best
known value when the solve stopped early).

Claims: the proven Pit Props optima against Li & Xie's Table 2 (s = 4..10) and Berk & Bertsimas's
asserted values (k = 5, 10); their asserted MiniBooNE and Communities optima (k = 5, 10; tolerance 1e-2
as in their test); the node count of Communities (correlation) k = 5 against their ~488,000; every Li &
Xie matrix proven at k = 5..20 within its node cap.

The papers' own data (``part == "papers"``; ``nonneg`` says which problem): the
centred LRS spectra (p = 93) at k = 5, 10, 15, 20, signed and ``x >= 0`` (the constraint of Asteris et
al.'s Fig. 6, which draws the proven optimum at every k), and the centred CBCL faces (p = 361) at k = 5,
signed and ``x >= 0``, each capped at ``NODE_CAP_PAPERS`` nodes (the figures' cap). Measured on a 2-core
machine under load: LRS signed k = 5..20 in 3-67 nodes (about 8 s together), ``x >= 0`` in at most 19 nodes
or at the root (the DNN bound); CBCL k = 5 in 15 nodes. CBCL ``x >= 0`` at k = 1..20 is proven in
asteris2014_fig4 (cap 2,000 nodes; k = 11..20 in 187-1,111 nodes), not repeated here; not here either (too
dear for this run's budget): LRS signed k = 30 (627 nodes, 12 s) and k = 50 (gap 1.5% after 2000 nodes,
45 s).

The unstructured frontier (``part == "frontier"``; :mod:`experiments.benchmarks._frontier`): Wishart
covariances ``C = A'A / n``, ``n = 2p``, ``A = default_rng(seed).standard_normal((n, p))`` with the run's
``--seed`` (0 by default) at p = 200, 500, 1,000, 2,000 and k = 5, 10, 20, and Arrhythmia at k = 15 and 20,
each solved once with ``root_dual=300`` under a time limit of 30 s (Wishart p = 200, k = 5: 69 s, its
goal's 60 s and the 15% band): the certified gap, proven or not, nodes and seconds, and one ``eigh`` of
the matrix timed beside them. The clock decides where such a search stops, so its numbers are the
``timed_*`` columns, which ``repro verify`` does not compare. Goals (fixed before the data): Wishart
p = 200 k = 5 proven within 60 s, k = 10 to a certified gap <= 2% within 10 minutes, p = 1,000 k = 10 to
<= 5% within 10 minutes, Arrhythmia k = 15 and 20 proven (within the same 10 minutes; the goal names no
limit). The 10-minute limits are not run (the benchmark would take an hour): a goal reached within 30 s
is met, one not reached is *not measured at its full limit*. Beside them the published frontier, text
from the papers on their own instances (not claims checked here): Bertsimas, Cory-Wright & Pauphilet
(JMLR 2022): bound gaps of 1-2% within minutes for p = 100s or hours for p = 1,000s (a convex relaxation
and rounding; their exact mixed-integer SDP reaches k = 5 of p = 300); Dey, Mazumder & Wang (Oper. Res.
2022): the best known dual bounds (l1 relaxation, integer programming) for covariances up to 2,000 x 2,000;
Li & Xie (2024, Table 10): their SDP-based approximation returned nothing within 3,600 s at p = 500 and
2,000; Berk & Bertsimas (2019): proofs in seconds for p = 100s, k = 10s, several hours at p = 10,000s.
``RUN_ALONE``: a neighbour in a parallel run would slow the time-limited solves (every number here is
computed with one BLAS thread all the same).

``--quick``: Pit Props, housing, MiniBooNE and Communities (correlation) at k = 5, 10 only,
heuristics with fewer samples, LRS at k = 5; the same caps; the frontier at Wishart p = 30 (k = 5, 10) and
p = 40 (k = 5), 10 s each.
"""

from __future__ import annotations

import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from data_fetch import load_spca_optimal, load_spca_optimal_results
from experiments.benchmarks import _frontier
from experiments.runner import _common
from experiments.runner.claims import NOT_REPRODUCED, PARTIAL, REPRODUCED, Claim, Outcome
from repro import Covariance, em_sparse_pca, optimal_sparse_pca, spannogram_path
from repro.baselines import pathspca, thresholding_path

TITLE = "Benchmark: the certified optimum of sparse PCA (branch and bound) on the published instances"
RUN_ALONE = True  # the frontier's time-limited solves: no neighbour in a parallel run (docstring)

KS = (5, 10, 15, 20)
NODE_CAP_LI_XIE = 20_000
NODE_CAP_BB = 7_500  # the cardinality chain's start (1,500) and budget (4x): docstring
NODE_CAP_PAPERS = 1_000  # the papers' own data (LRS, CBCL): the figures' cap
SAFETY_TIME_LIMIT = 120.0
SPAN_SAMPLES = 2000
BB_ASSERTED = {  # Berk & Bertsimas, Algorithm/test1.jl (k = 5, k = 10)
    ("pitprops", False): (3.40615, 4.17264),
    ("miniboone", False): (1.96827e9, 1.96827e9),
    ("miniboone", True): (5.0000, 9.99999),
    ("communities", False): (0.2771, 0.4452),
    ("communities", True): (4.86051, 8.8236),
}
BB_COMMUNITIES_NODES = 488_000  # Berk & Bertsimas (2019): Communities (correlation), k = 5
BB_INSTANCES = (("pitprops", False), ("miniboone", False), ("miniboone", True), ("communities", False))
BB_INSTANCES += (("communities", True), ("arrhythmia", False))
LI_XIE = (
    "pitprops", "housing", "keggdirected", "pol", "wdbc", "dermatology", "spambase", "digits", "buzz", "song",
    "gas", "Eisen1", "Eisen2",
)  # fmt: skip


def _best(path) -> float:
    """The variance of a path's one component (renormalized where the method offers it)."""
    v = getattr(path, "variance_opt", None)
    return float((path.variance if v is None else v)[0])


def _heuristics(C: np.ndarray, k: int, quick: bool) -> dict:
    cov = Covariance.from_matrix(C)
    out = {}
    # the EM alone (not its certified default), its random starts seeded: unseeded, Communities (correlation)
    # k = 5 gave 4.747 in one run and 4.861 in the next
    _, var = em_sparse_pca(cov, 1, cardinality=k, certify=False, random_state=0)
    out["em"] = float(var[0])
    sp = spannogram_path(cov, [k], nonneg=False, n_samples=200 if quick else SPAN_SAMPLES, random_state=0)
    out["spannogram"] = _best(sp)
    out["thresholding"] = _best(thresholding_path(cov, [k]))
    out["pathspca"] = _best(pathspca(cov, [k]))
    return out


def _row(part, source, name, corr, C, k, max_nodes, quick, published=np.nan, nonneg=False):
    t0 = time.perf_counter()
    res = optimal_sparse_pca(
        C, k, precomputed=True, nonneg=nonneg, max_nodes=max_nodes, time_limit=SAFETY_TIME_LIMIT
    )
    seconds = time.perf_counter() - t0
    row = {
        "part": part,
        "source": source,
        "instance": name,
        "matrix": "correlation" if corr or name == "pitprops" else "covariance",
        "p": C.shape[0],
        "k": k,
        "nonneg": bool(nonneg),
        "value": res.value,
        "upper_bound": res.upper_bound,
        "gap": res.gap,
        "proven": res.proven,
        "status": res.status,
        "nodes": res.n_nodes,
        "seconds": seconds,
        "root_bound": res.root_bound,
        "published": published,
    }
    row.update({f"pruned_{b}": n for b, n in res.prunes.items()})
    if part == "benchmark":
        for h, v in _heuristics(C, k, quick).items():
            row[f"{h}_value"] = v
            row[f"{h}_ratio"] = v / res.value
    return row


def compute(cfg: _common.Config) -> pd.DataFrame:
    with threadpool_limits(limits=1):  # run alone, still one BLAS thread: the numbers of a shared run
        return _compute(cfg)


def _compute(cfg: _common.Config) -> pd.DataFrame:
    rows = []
    table2 = load_spca_optimal_results(2)
    lx_pit = dict(zip(table2["s"].astype(int), table2["opt_val"], strict=True))
    pit = load_spca_optimal("berk_bertsimas", "pitprops")
    for k in range(1, 14):
        rows.append(
            _row(
                "pitprops",
                "berk_bertsimas",
                "pitprops",
                True,
                pit,
                k,
                NODE_CAP_BB,
                cfg.quick,
                lx_pit.get(k, np.nan),
            )
        )
    bb = (("miniboone", True), ("communities", True)) if cfg.quick else BB_INSTANCES
    ks = (5, 10) if cfg.quick else KS
    for name, corr in bb:
        C = load_spca_optimal("berk_bertsimas", name, correlation=corr)
        for k in ks:
            if k <= C.shape[0]:
                asserted = BB_ASSERTED.get((name, corr), (np.nan, np.nan))
                pub = asserted[0] if k == 5 else asserted[1] if k == 10 else np.nan
                row = _row("benchmark", "berk_bertsimas", name, corr, C, k, NODE_CAP_BB, cfg.quick, pub)
                rows.append(row)
    for name in ("pitprops", "housing") if cfg.quick else LI_XIE:
        C = load_spca_optimal("li_xie", name)
        for k in ks:
            if k <= C.shape[0]:
                pub = lx_pit.get(k, np.nan) if name == "pitprops" else np.nan
                rows.append(_row("benchmark", "li_xie", name, False, C, k, NODE_CAP_LI_XIE, cfg.quick, pub))
    rows += _papers_rows(cfg.quick)
    rows += _frontier.rows(cfg.quick, cfg.seed, lambda: load_spca_optimal("berk_bertsimas", "arrhythmia"))
    return pd.DataFrame(rows)


def _papers_rows(quick: bool) -> list[dict]:
    """The papers' own data (``part == "papers"``): LRS (p = 93; signed and ``x >= 0``, the constraint of
    Asteris et al.'s Fig. 6) and the CBCL faces (p = 361, ``x >= 0`` as in their Fig. 4), the centred data's
    covariance as in those figures, each solve capped at ``NODE_CAP_PAPERS`` nodes."""
    from data_fetch import load_cbcl_faces, load_lrs

    rows = []
    lrs = Covariance.from_data(_common.preprocess(load_lrs().X, "center")).dense()
    for nonneg in (False, True):
        for k in (5,) if quick else KS:
            rows.append(
                _row("papers", "asteris2014", "LRS", False, lrs, k, NODE_CAP_PAPERS, quick, nonneg=nonneg)
            )
    if not quick:
        cbcl = Covariance.from_data(_common.preprocess(load_cbcl_faces().X / 255.0, "center")).dense()
        for nonneg in (False, True):
            rows.append(
                _row("papers", "asteris2014", "CBCL", False, cbcl, 5, NODE_CAP_PAPERS, quick, nonneg=nonneg)
            )
    return rows


def plot(df: pd.DataFrame, cfg: _common.Config):
    fig, (a1, a2, a3) = plt.subplots(1, 3, figsize=(13.5, 3.4))
    b = df[df.part == "benchmark"]
    for h, mk in (("em", "o"), ("spannogram", "s"), ("thresholding", "^"), ("pathspca", "v")):
        a1.plot(np.arange(len(b)), b[f"{h}_ratio"], mk, ms=3.5, label=h, alpha=0.8)
    a1.axhline(1.0, color="k", lw=0.8)
    a1.set_xlabel("instance (source, matrix, k)")
    a1.set_ylabel("value / certified optimum")
    a1.legend(fontsize=7)
    ok = b.proven.astype(bool)
    a2.loglog(b.nodes[ok].clip(lower=1), b.seconds[ok], "o", ms=3.5, label="proven")
    a2.loglog(b.nodes[~ok].clip(lower=1), b.seconds[~ok], "x", ms=5, color="tab:red", label="node cap")
    a2.set_xlabel("nodes")
    a2.set_ylabel("seconds")
    a2.legend(fontsize=7)
    _frontier.plot_panel(a3, df)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- claims
def _check_pitprops(df):
    g = df[df.part == "pitprops"]
    pub = g.dropna(subset=["published"])
    err = float(np.max(np.abs(pub.value - pub.published)))
    bb = {5: 3.40615, 10: 4.17264}
    err_bb = max(abs(float(g[g.k == k].value.iloc[0]) - v) for k, v in bb.items())
    ok = bool(g.proven.all()) and err <= 1e-4 and err_bb <= 1e-4
    return Outcome(
        f"k = 1..13 proven: {int(g.proven.sum())} of {len(g)}; max |ours - Li & Xie| = {err:.1e} "
        f"(s = 4..10); "
        f"max |ours - Berk & Bertsimas| = {err_bb:.1e} (k = 5, 10); nodes {int(g.nodes.max())} at most",
        REPRODUCED if ok else NOT_REPRODUCED,
        "Pit Props is published to 3 decimals; Berk & Bertsimas's pitprops.csv used",
    )


def _check_asserted(df):
    g = df[(df.part == "benchmark") & (df.source == "berk_bertsimas") & df.published.notna()]
    g = g[g.instance != "pitprops"]
    rel = (g.value - g.published).abs() / g.published
    agree = rel <= 1e-2
    proven = g.proven.astype(bool)
    cells = "; ".join(
        f"{r.instance} {r.matrix[:4]} k={r.k}: {r.value:.6g} ({'proven' if r.proven else f'gap {r.gap:.1e}'})"
        for r in g.itertuples()
    )
    ok = bool(agree.all() and proven.all())
    return Outcome(
        cells,
        REPRODUCED if ok else (PARTIAL if agree.all() else NOT_REPRODUCED),
        f"tolerance 1e-2 relative as in their test1.jl; {int(proven.sum())} of {len(g)} proven within "
        f"the node cap ({NODE_CAP_BB:,} per solve)",
    )


def _check_nodes(df):
    g = df[
        (df.instance == "communities") & (df.matrix == "correlation") & (df.k == 5) & (df.part == "benchmark")
    ]
    if g.empty:
        return Outcome("not run", NOT_REPRODUCED, "")
    r = g.iloc[0]
    ok = bool(r.proven) and r.nodes <= BB_COMMUNITIES_NODES
    return Outcome(
        f"proven: {bool(r.proven)}, {int(r.nodes)} nodes "
        f"({BB_COMMUNITIES_NODES / max(r.nodes, 1):.0f}x fewer)",
        REPRODUCED if ok else NOT_REPRODUCED,
        "node counts are machine independent; the seconds are in the measured column (theirs: about 62 s)",
        measured=f"{r.seconds:.2f} s",
    )


def _check_lixie(df):
    g = df[(df.part == "benchmark") & (df.source == "li_xie")]
    proven = g.proven.astype(bool)
    missed = ", ".join(f"{r.instance} k={r.k} (gap {r.gap:.1e})" for r in g[~proven].itertuples())
    return Outcome(
        f"{int(proven.sum())} of {len(g)} proven; largest proof {int(g.nodes[proven].max())} nodes"
        + (f"; not proven within {NODE_CAP_LI_XIE:,} nodes: {missed}" if missed else ""),
        REPRODUCED if proven.all() else (PARTIAL if proven.mean() >= 0.5 else NOT_REPRODUCED),
        "Li & Xie prove Pit Props s = 4..10 in 0-10 s with Gurobi; a node cap per solve (machine "
        "independent)",
        measured=f"slowest proof {g.seconds[proven].max():.2f} s",
    )


CLAIMS = [
    Claim(
        "pitprops-optima",
        "Li & Xie (2024) Table 2 and Berk & Bertsimas (2019) test1.jl: the Pit Props optima",
        "Table 2 s = 4..10; 3.40615 (k = 5), 4.17264 (k = 10)",
        _check_pitprops,
    ),
    Claim(
        "bb-asserted-optima",
        "Berk & Bertsimas (2019), Algorithm/test1.jl: the optima of MiniBooNE and Communities (raw and "
        "correlation) at k = 5 and 10",
        "MiniBooNE 1.96827e9 / 1.96827e9, 5.0 / 9.99999; Communities 0.2771 / 0.4452, 4.86051 / 8.8236",
        _check_asserted,
    ),
    Claim(
        "lixie-proven",
        "Li & Xie (2024): exact solutions for covariance matrices of up to hundreds of features "
        "(here each of their 13 matrices at k = 5, 10, 15, 20)",
        "proven optima",
        _check_lixie,
    ),
]

GOALS = [
    Claim(
        "communities-nodes",
        "Berk & Bertsimas (2019): Communities (correlation, p = 101), k = 5 proven with about 488,000 nodes",
        "about 488,000 nodes, 62 s",
        _check_nodes,
    ),
    *_frontier.GOALS,
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
