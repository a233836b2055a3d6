"""The search of :func:`repro.optimal_sparse_pca`: branch and bound on a matrix the door checked (or the
library derived from one: a deflation, a candidate set of the wide route, EMSparsePCA's certificate),
driving the kernels of :mod:`repro.optimal._kernels` in chunks of nodes between which Python reads the
clock, the node limit and Ctrl-C; and :class:`OptimalResult`, what every route returns."""

from __future__ import annotations

import contextlib
import functools
import signal
import sys
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from .._dense import _canonical_sign
from .._threads import blas_limited
from . import _kernels as _k
from .l1_dual import l1_dual_bound
from .perspective import perspective_bound

__all__ = ["OptimalResult", "search"]

_EPS = np.finfo(np.float64).eps
CHAIN_BUDGET = 4  # the chain's searches at k - 1, k - 2, ... may spend this many times the nodes before it
#: The root's optimized l1 dual (``root_dual`` iterations) may spend at most this share of a time limit.
ROOT_DUAL_SHARE = 0.25
#: A root step starts only when the time left is at least its cost in root eigendecompositions (the
#: root's ``eigh``, timed): EM and the spannogram took 0.24 and 0.31 of one at p = 2,000; the root dual
#: (:func:`~repro.optimal.l1_dual.l1_dual_bound`) may run about ROOT_DUAL_OVER past its own time limit
#: (its start's three ``eigvalsh`` and one ``eigh``, the last iterate's ``eigh``), so it gets its share
#: less that, and starts only when ROOT_DUAL_MIN of them fit (at p = 2,000 it ran 22 s past its share).
ROOT_STEP_EIGH, ROOT_DUAL_OVER, ROOT_DUAL_MIN = 0.5, 3.5, 6.0
#: The node orders of :func:`search` (:func:`repro.optimal._kernels.bnb_run`) and the default: "auto" is
#: best bound where the root dual ran (its point bounds every node and picks the branching feature; on
#: Wishart p = 200, k = 5 it proved in 1,409 nodes what depth first left at the root's 0.85% after 1,500),
#: else depth first (the order of every solve without a root dual, as before: docs/notes, 2026-12-03).
ORDERS = {"depth": _k.DEPTH, "best": _k.BEST, "hybrid": _k.HYBRID}
ORDER = "auto"
#: The memory the pool of open nodes of the best-bound orders may take (9 p + 40 bytes a node), and the
#: most nodes it holds; when it is full, the node taken from it is searched depth first.
OPEN_BYTES, MAX_OPEN = 256 * 2**20, 200_000
#: The seconds between two progress lines of ``verbose``.
PROGRESS_EVERY = 1.0


@dataclass
class OptimalResult:
    """The outcome of :func:`optimal_sparse_pca`.

    Attributes
    ----------
    component : ndarray, shape (n_features,)
        The best unit component found (at most ``k`` non-zeros).
    value : float
        Its variance ``x'Cx``.
    upper_bound : float
        A proven upper bound on the optimum.
    gap : float
        ``(upper_bound - value) / value``: the certified relative gap.
    proven : bool
        Whether ``gap`` reached the requested tolerance (the component is optimal to that tolerance).
    status : str
        Why the search ended:

        - "optimal": proven (``gap`` reached, or every support decided);
        - "time_limit": ``time_limit`` seconds passed (the root heuristics start only within it);
        - "node_limit": ``max_nodes`` nodes were processed;
        - "interrupted": Ctrl-C (the incumbent is kept);
        - "undecided_leaves": the tree is done, but a non-negative leaf's enumeration of its sub-supports
          ran out of its budget, so its bound (``lambda_max`` of the leaf) stays in ``upper_bound``;
        - "too_many_candidates": wide data only, more features survived the screening than the search
          takes (``repro.optimal.wide.MAX_CANDIDATES``); the screening bounds give the certified gap.
    n_nodes : int
        Nodes processed.
    time : float
        Seconds spent (root heuristics included).
    root_bound : float
        The upper bound known before branching (the root's bounds and the spannogram certificate).
    prunes : dict
        Nodes pruned by each bound (and features fixed out, leaves evaluated); ``chain_fixed_out``: the
        features the cardinality chain fixed out of every open node, ``chain_nodes``: the nodes of its
        searches at ``k - 1, k - 2, ...`` (part of ``n_nodes``).

    Examples
    --------
    >>> import numpy as np
    >>> from repro import optimal_sparse_pca
    >>> C = np.array([[3.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 2.5]])
    >>> res = optimal_sparse_pca(C, 1, precomputed=True)
    >>> res.proven, round(res.value, 6), int(np.argmax(np.abs(res.component)))
    (True, 3.0, 0)
    """

    component: np.ndarray
    value: float
    upper_bound: float
    gap: float
    proven: bool
    status: str
    n_nodes: int
    time: float
    root_bound: float
    prunes: dict = field(default_factory=dict)

    @property
    def support(self) -> np.ndarray:
        """Indices of the non-zero loadings."""
        return np.flatnonzero(self.component)


def _root_incumbents(
    C: np.ndarray, V: np.ndarray, k: int, nonneg: bool, em_start, out_of_time, deadline: float
) -> list[np.ndarray]:
    """Supports from greedy selection, the truncated top eigenvector and (optionally) ``em_start``, each
    polished by swap passes. ``out_of_time()`` is asked before every step but the eigenvector's (it costs
    nothing beyond the root's eigendecomposition), and the greedy selection and the swap passes stop at
    ``deadline`` themselves: one EM run is the most a solve with a time limit can overrun by."""
    v = V[:, -1]
    if nonneg and np.sum(np.maximum(v, 0)) < np.sum(np.maximum(-v, 0)):
        v = -v
    score = np.maximum(v, 0) if nonneg else np.abs(v)
    with _ctrl_c_held():
        starts = [] if out_of_time() else [_k.greedy_support(C, k, nonneg, deadline)]
    top = np.argsort(-score, kind="stable")[:k]
    if nonneg and score[top[0]] > 0:  # positive entries only: zero padding lowers the x >= 0 value
        top = top[score[top] > 0]
    starts.append(top.astype(np.int64))
    if em_start is not None and not out_of_time():
        s = em_start(C, k, nonneg)
        if s is not None:
            starts.append(s)
    out = []
    for s in starts:
        s = np.ascontiguousarray(s, dtype=np.int64)
        for _ in range(3):  # swap passes one at a time, so that the clock is read between them
            if out_of_time():
                break
            with _ctrl_c_held():
                t = _k.swap_search(C, s, nonneg, 1, deadline)
            if np.array_equal(t, s):
                break
            s = t
        out.append(s)
    return out


@contextlib.contextmanager
def _ctrl_c_held():
    """Hold a Ctrl-C while compiled code that reads the clock runs (:func:`repro.optimal._kernels.now`, an
    object-mode block): Python's handler would raise inside it, which the compiled caller turns into a
    ``SystemError`` and leaves its arrays half updated. The signal is recorded, the kernels' clock reads
    ``inf`` from then on (those with a deadline stop; without a time limit the kernel ends its chunk of
    nodes), and the ``KeyboardInterrupt`` is raised when the block ends, where the search's state is
    whole. Only in the main thread under Python's own handler (elsewhere the signal does not reach this
    thread's code, or a handler of the caller's decides)."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    hit = []

    def held(*_):
        hit.append(1)
        _k.CTRL_C[0] = True  # the kernels' clock reads inf: those with a deadline stop at once

    old = signal.signal(signal.SIGINT, held)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
        _k.CTRL_C[0] = False
    if hit:
        raise KeyboardInterrupt


def _ctrl_c_between_steps(func):
    """Decorator of :func:`search`: a Ctrl-C that lands between the steps that catch it themselves (the
    scaling before the root, the node tables' allocation, the result's assembly) returns the largest
    variance's unit vector (the first of the largest) with status "interrupted" and the sum of the ``k``
    largest variances as its bound (``lambda_max(C_S) <= tr C_S`` on a semi-definite ``C0``)."""

    @functools.wraps(func)
    def wrapper(C0, k, **kw):
        kw["t0"] = time.perf_counter() if kw.get("t0") is None else kw["t0"]
        try:
            return func(C0, k, **kw)
        except KeyboardInterrupt:
            d = np.diag(C0)
            return best_feature_result(d, float(np.sum(np.sort(d)[::-1][:k])), kw["gap"], kw["t0"])

    return wrapper


def best_feature_result(diag, upper: float, gap: float, t0: float) -> OptimalResult:
    """The result of a Ctrl-C before any incumbent: the unit vector of the largest variance in ``diag``
    (the first of the largest), status "interrupted", against the bound ``upper`` the caller proved."""
    x = np.zeros(diag.shape[0])
    j = int(np.argmax(diag))
    x[j] = 1.0
    return certified_result(x, float(diag[j]), upper, float(gap), "interrupted", 0, t0, upper, {})


@_ctrl_c_between_steps
@blas_limited  # the root's eigendecompositions: threads oversubscribe a loaded machine (0.33 s at p = 128)
def search(
    C0: np.ndarray,
    k: int,
    *,
    nonneg: bool,
    gap: float,
    time_limit: float | None = None,
    max_nodes: int | None = None,
    eig_limit: int = 40,
    em_start=None,
    spannogram=None,
    verbose: bool = False,
    t0: float | None = None,
    l1_evals: int = 8,
    branch_l1: bool = True,
    l1_split: bool = True,
    chain_after: int | None = 1500,
    chain_frac: float = 0.25,
    root_dual: int = 0,
    root_perspective: int = 0,
    order: str | None = None,
    max_open: int | None = None,
) -> OptimalResult:
    """Branch and bound on ``C0`` (dense, symmetric PSD with a positive diagonal entry, checked by the
    caller). ``em_start(C, k, nonneg)`` gives an optional root support, ``spannogram(C, k, nonneg, x)`` an
    optional root bound given the incumbent ``x`` (both on the scaled matrix). ``l1_evals``: the Lanczos
    estimates a node's l1 bound may spend searching its ``rho`` (0: the bound is not used); ``branch_l1``:
    branch on the free feature with the largest weight in the l1 relaxation's top eigenvector.
    ``chain_after``: after that many nodes without a proof, the cardinality chain (:func:`_chain_screen`:
    the search at ``k - 1`` bounds every support holding a feature; ``None``: never), when
    :func:`_chain_pays` (at most ``chain_frac`` of the features would survive). ``root_dual``: iterations
    of :func:`~repro.optimal.l1_dual.l1_dual_bound` (the l1 bound with its ``U`` optimized, one
    ``eigh`` each, at most ``ROOT_DUAL_SHARE`` of ``time_limit``) at the root when the cheaper root bounds
    leave a gap (0: not used); every node then also tries that ``U`` over its allowed features
    (:func:`~repro.optimal._kernels.dual_bound`). ``root_perspective``: evaluations of
    :func:`~repro.optimal.perspective.perspective_bound` from that ``U`` after it (0: not used); where it
    ends lower, its point replaces the l1 one at the nodes. ``order``: the node order, ``"depth"`` (depth
    first), ``"best"`` (best bound) or ``"hybrid"`` (best bound with a dive from each node), ``"auto"``
    (best bound where the root dual ran, else depth first), ``None``: ``ORDER``; ``max_open``: the most
    open nodes of the best-bound orders (``None``: ``MAX_OPEN`` within ``OPEN_BYTES``)."""
    t0 = time.perf_counter() if t0 is None else t0
    p = C0.shape[0]
    scale = 2.0 ** np.round(np.log2(float(np.max(np.diag(C0)))))  # exact: values scale back without error
    C = np.ascontiguousarray(C0 / scale)
    W = np.maximum(C, 0.0) if nonneg else np.abs(C)
    deadline = np.inf if time_limit is None else t0 + time_limit  # the kernels read the same clock

    def out_of_time() -> bool:
        return time_limit is not None and time.perf_counter() - t0 >= time_limit

    def fits(eighs: float) -> bool:  # whether a step of that many root eigendecompositions fits the limit
        return time_limit is None or t0 + time_limit - time.perf_counter() >= eighs * t_eig

    # The incumbent starts at the best single feature (the lowest index among the largest variances): the
    # optimum at k = 1, feasible at every k and for x >= 0, and what an interrupted search still returns.
    diag = np.diag(C).copy()
    inc_val = np.array([-np.inf, -np.inf])  # incumbent; largest bound of undecided non-negative leaves
    inc_x = np.zeros(p)
    j = int(np.argmax(diag))  # the first of the largest
    inc_val[0] = diag[j]
    inc_x[j] = 1.0
    root_bound = float(np.sum(np.sort(diag)[::-1][:k]))
    status = "optimal"
    lam = V2T = dual_M = None
    dual_add, dual_rho = 0.0, -1.0  # dual_rho: the l1 point's rho (the split bound at it), -1: none
    try:
        lam, V2T, V, t_eig, top = _root_spectrum(C, time_limit, t0, root_bound)
        root_bound = float(min(root_bound, top))
        em = em_start if fits(ROOT_STEP_EIGH) else None
        for S in _root_incumbents(C, V, k, nonneg, em, out_of_time, deadline):
            exact = not nonneg or (k <= 16 and not out_of_time())  # a non-negative leaf enumerates subsets
            with _ctrl_c_held():
                _k._evaluate(C, np.sort(S), nonneg, exact, inc_val, inc_x, deadline)
        if spannogram is not None and inc_val[0] < root_bound * (1 - gap) and fits(ROOT_STEP_EIGH):
            root_bound = min(root_bound, spannogram(C, k, nonneg, inc_x))  # inc_x: repro.optimal.roots
        # both duals within ROOT_DUAL_SHARE of a time limit: the nodes get the rest
        end = None if time_limit is None else time.perf_counter() + ROOT_DUAL_SHARE * time_limit

        def left(over=ROOT_DUAL_OVER):  # their time limit: what is left of the share less their overrun
            if end is None:
                return None
            return max(min(end, t0 + time_limit) - time.perf_counter() - over * t_eig, 0.0)

        if root_dual > 0 and k > 1 and inc_val[0] < root_bound * (1 - gap) and left(ROOT_DUAL_MIN) != 0.0:
            bd, U, rho = l1_dual_bound(C, k, nonneg=nonneg, iters=root_dual, time_limit=left())
            root_bound = min(root_bound, bd)
            dual_M, dual_rho = np.ascontiguousarray(C - U), float(rho)
            # rho (k - 1) and the rounding of C - U (module docstring of repro.optimal.l1_dual) and of
            # the sums the nodes form with it
            dual_add = rho * (k - 1) + _EPS * (
                2.0 * float(np.linalg.norm(dual_M)) + 8.0 * (bd + rho * (k - 1))
            )
            if root_perspective > 0 and inc_val[0] < root_bound * (1 - gap) and left(ROOT_DUAL_MIN) != 0.0:
                bp, M, add = perspective_bound(
                    C, k, U, nonneg=nonneg, iters=root_perspective, time_limit=left()
                )
                if bp < bd:  # its point replaces the l1 one at the nodes (the same kernel: M_A plus add)
                    root_bound = min(root_bound, bp)
                    dual_M, dual_add = np.ascontiguousarray(M), add + 8.0 * _EPS * (bp + add)
                    dual_rho = -1.0  # not a point of the l1 cone: no split bound at it
    except KeyboardInterrupt:
        status = "interrupted"
    if lam is None or status == "interrupted":  # stopped at the root: its incumbent and bound
        prunes = dict.fromkeys(_k.BOUND_NAMES, 0)
        return _finish(C0, scale, inc_val, inc_x, root_bound, gap, status, 0, t0, root_bound, prunes, nonneg)
    if verbose:
        print(
            f"optimal_sparse_pca k={k}: root, value {inc_val[0] * scale:.6g}, "
            f"bound {root_bound * scale:.6g}, {time.perf_counter() - t0:.1f} s",
            file=sys.stderr,
            flush=True,
        )

    node_order = ORDER if order is None else order
    if node_order == "auto":
        node_order = "best" if dual_M is not None else "depth"
    code = ORDERS[node_order]
    if code == _k.DEPTH:
        pool = 0
    else:
        pool = min(MAX_OPEN, OPEN_BYTES // (9 * p + 40)) if max_open is None else int(max_open)
        pool = max(pool, 2)
    n_rows = p + 2 + pool  # the depth-first stack, then the pool (np.zeros: pages taken as they are used)
    status_arr = np.zeros((n_rows, p), np.int8)
    bounds = np.full(n_rows, np.inf)
    bounds[0] = root_bound
    rhos = np.full(n_rows, -1.0)  # each open node's parent's l1 rho (negative: none yet)
    vecs = np.zeros((n_rows, p))  # and the l1 relaxation's top eigenvector (the Lanczos start)
    l1s = np.full(n_rows, np.inf)  # an "in" child's parent's l1 bound (same allowed set; inf: none)
    seqs = np.zeros(n_rows, np.int64)
    heap = np.zeros(max(pool, 1), np.int64)
    free = np.arange(p + 2, n_rows, dtype=np.int64)
    state = np.array([1, 0, pool, 1], np.int64)  # stack size, heap size, free slots, next sequence number
    counts = np.zeros(_k.N_COUNTS, np.int64)
    n_nodes = 0
    chunk = 64
    last_print = time.perf_counter()
    chain = {"U": None, "R": np.flatnonzero(np.ones(p, bool)), "inc": -np.inf}  # the chain's state
    tables = (C, W, lam, V2T, k, nonneg, eig_limit, l1_evals, dual_M, dual_add)

    def open_rows() -> np.ndarray:
        return np.concatenate((np.arange(state[_k.SP]), heap[: state[_k.HEAP_N]]))

    def upper() -> float:
        rows = open_rows()
        if rows.size == 0:
            return max(inc_val[0] + gap * abs(inc_val[0]), inc_val[1])
        return float(min(root_bound, max(inc_val[0], inc_val[1], bounds[rows].max())))

    try:
        while state[_k.SP] + state[_k.HEAP_N] > 0:
            if upper() <= inc_val[0] + gap * abs(inc_val[0]):
                break
            if time_limit is not None and time.perf_counter() - t0 >= time_limit:
                status = "time_limit"
                break
            if max_nodes is not None and n_nodes >= max_nodes:
                status = "node_limit"
                break
            if chain_after is not None and k > 1 and n_nodes >= chain_after and inc_val[0] > chain["inc"]:
                thr = inc_val[0] + gap * abs(inc_val[0])
                short = max_nodes is not None and max_nodes - n_nodes < CHAIN_BUDGET * n_nodes
                if chain["U"] is None and (short or not _chain_pays(C, W, k, nonneg, inc_x, thr, chain_frac)):
                    # the searches at k - 1, ... would screen little, or not get their full budget (at a
                    # cap of 2,000 their 500 nodes screened nothing on Arrhythmia k = 10, 15, 20)
                    chain_after = None
                    continue
                if chain["U"] is None:  # the search at k - 1 (itself chained from its start)
                    left = None if max_nodes is None else max_nodes - n_nodes
                    if n_nodes > 0:  # at most CHAIN_BUDGET times the nodes spent before (k = 15 on
                        # Arrhythmia: the searches at 14, 13, ... ran 135,000 nodes in 400 s unproven)
                        left = CHAIN_BUDGET * n_nodes
                    sub = search(
                        C0, k - 1, nonneg=nonneg, gap=gap, time_limit=time_limit, max_nodes=left,
                        eig_limit=eig_limit, em_start=em_start, spannogram=spannogram, t0=t0,
                        l1_evals=l1_evals, branch_l1=branch_l1, l1_split=l1_split, chain_after=0,
                        chain_frac=chain_frac, order=order, max_open=max_open,
                    )  # fmt: skip (no root dual: every level of the chain would spend its own, and on
                    # Arrhythmia k = 15 and 20 with 300 iterations the levels' roots took the whole 300 s)
                    chain["U"] = sub.upper_bound / scale  # exact: scale is a power of 2
                    counts[_k.CHAIN_NODES] += sub.n_nodes
                    n_nodes += sub.n_nodes
                    if sub.status == "interrupted":
                        raise KeyboardInterrupt
                    continue  # the clock and the node limit again
                _chain_screen(C, W, k, chain, thr, status_arr, bounds, l1s, open_rows(), counts)
                _k.heapify(heap, state[_k.HEAP_N], bounds, seqs)
                chain["inc"] = inc_val[0]
                continue
            todo = chunk if max_nodes is None else min(chunk, max_nodes - n_nodes)
            if chain_after is not None and k > 1:  # node counts independent of the clock: the chain starts
                # at exactly chain_after nodes, and re-screens (a better incumbent) every 64 nodes
                todo = min(todo, chain_after - n_nodes) if n_nodes < chain_after else min(todo, 64)
            tc = time.perf_counter()
            with _ctrl_c_held():
                n_nodes += _k.bnb_run(
                    C, W, lam, V2T, k, nonneg, gap, eig_limit, status_arr, bounds, rhos, vecs, l1s, seqs,
                    state, heap, free, inc_val, inc_x, counts, todo, code, l1_evals, branch_l1, l1_split,
                    deadline, dual_M, dual_add, dual_rho,
                )  # fmt: skip
            dt = time.perf_counter() - tc
            chunk = int(min(max(chunk * (2 if dt < 0.1 else 1) // (2 if dt > 0.4 else 1), 1), 1_000_000))
            if verbose and time.perf_counter() - last_print >= PROGRESS_EVERY:
                last_print = time.perf_counter()
                ub = max(upper(), inc_val[0]) * scale
                _progress(k, n_nodes, state, inc_val[0] * scale, ub, last_print - t0)
    except KeyboardInterrupt:
        status = "interrupted"
    at_root = n_nodes == 0 and status in ("time_limit", "interrupted")  # out of time: the root's bound
    if state[_k.SP] + state[_k.HEAP_N] > 0 and not at_root:
        start = time.perf_counter()
        if time_limit is not None and status != "interrupted":  # an interruption: REBOUND_AFTER_STOP
            deadline = max(t0 + time_limit, start) + max(REBOUND_SHARE * time_limit, REBOUND_MIN)
        else:
            deadline = start + REBOUND_AFTER_STOP
        _rebound(tables, inc_val, status_arr, bounds, rhos, open_rows(), deadline)
    ub = max(upper(), inc_val[0])
    prunes = {name: int(c) for name, c in zip(_k.BOUND_NAMES, counts, strict=False)}
    exhausted = state[_k.SP] + state[_k.HEAP_N] == 0 and inc_val[1] == -np.inf
    state = (inc_val, inc_x, ub, gap, status, n_nodes, t0, root_bound, prunes, nonneg, exhausted)
    return _finish(C0, scale, *state)


#: The share of ``time_limit`` (and at least the seconds) that re-bounding the open nodes of a stopped
#: search may take past the limit (a node limit too: up to it), and the seconds it may take after an
#: interruption (or a node limit without a time limit).
REBOUND_SHARE, REBOUND_MIN, REBOUND_AFTER_STOP = 0.05, 0.1, 1.0


#: With a time limit, on at least LANCZOS_MIN_FEATURES features, the root's full ``eigh`` (the knapsack's
#: tables) runs only where its estimated cost fits ROOT_EIGH_SHARE of the time left; else its top
#: eigenpair by Lanczos, certified by one Cholesky factorization (:func:`_certified_top`) where that
#: fits. The estimates: a Cholesky factorization of a PROBE x PROBE block of ``C`` (best of three),
#: times ``(p / PROBE)^3``, times CHOL_PER_PROBE for the factorization and EIGH_PER_PROBE for ``eigh``
#: (``dsyevd``, one thread, measured 8.3 and 8.7 at p = 1,000 and 2,000; the factorization 1.5 and 1.2).
LANCZOS_MIN_FEATURES, PROBE, ROOT_EIGH_SHARE = 500, 256, 0.5
CHOL_PER_PROBE, EIGH_PER_PROBE = 1.5, 9.0


class _OutOfTime(Exception):
    """The clock passed the deadline inside the root's Lanczos iteration."""


def _probe(C) -> float:
    """Seconds of a Cholesky factorization of ``C``'s leading PROBE x PROBE block (shifted to be positive
    definite), the best of three, scaled by ``(p / PROBE)^3``: a factorization of all of ``C``."""
    import scipy.linalg.lapack

    p = C.shape[0]
    m = min(p, PROBE)
    best = np.inf
    for _ in range(3):
        B = np.array(C[:m, :m])
        B.flat[:: m + 1] += float(np.trace(B)) + 1.0
        t = time.perf_counter()
        scipy.linalg.lapack.dpotrf(B, lower=1, clean=0, overwrite_a=1)
        best = min(best, time.perf_counter() - t)
    return best * (p / m) ** 3


def _root_spectrum(C, time_limit, t0, bound):
    """``(lam, V2T, V, t_eig, top)`` at the root: the eigen-knapsack's tables, eigenvectors whose last
    column is the (approximate) leading one, the cost of one root eigendecomposition in seconds (measured,
    or estimated where it did not run: the unit of the root steps' costs, ROOT_STEP_EIGH) and an upper
    bound on ``lambda_max(C)``.

    Without a time limit, on fewer than LANCZOS_MIN_FEATURES features, or where it fits: ``np.linalg.eigh``
    (as every solve without a limit). Else Lanczos and its certificate; the tables are then ``lam = [top]``
    and no eigenvector rows, so the knapsack bound is ``top`` at every node
    (:func:`repro.optimal._kernels.knapsack_bound` with no terms), which holds. ``bound`` (the root's bound
    so far, on the k-sparse optimum) stands in for ``top`` where the certificate did not run or failed."""
    p = C.shape[0]
    chol = 0.0 if time_limit is None or p < LANCZOS_MIN_FEATURES else _probe(C)
    if time_limit is None or t0 + time_limit - time.perf_counter() >= EIGH_PER_PROBE * chol / ROOT_EIGH_SHARE:
        t_eig = time.perf_counter()
        w, V = np.linalg.eigh(C)  # once: the root incumbent, the root bound and the knapsack's tables
        t_eig = time.perf_counter() - t_eig
        lam, V2T = _k.eigen_tables(w, V)
        return lam, V2T, V, t_eig, float(w[-1])
    top, x = _certified_top(C, t0 + time_limit, CHOL_PER_PROBE * chol)
    top = min(top, bound)
    if x is None:  # Lanczos's start: its truncation is the support of the k largest variances
        x = np.sqrt(np.diag(C))
    return np.array([top]), np.zeros((0, p)), x[:, None], EIGH_PER_PROBE * chol, top


def _certified_top(C, deadline, t_chol):
    """``(top, x)``: a certified upper bound on ``lambda_max(C)`` and the Ritz vector ``x``. ARPACK's
    Lanczos (``eigsh``, which reads the clock at each product: past ``deadline`` it stops) gives ``theta``
    and ``x``; some eigenvalue lies within ``||C x - theta x||`` of ``theta``, and a Cholesky factorization
    of ``(t - delta) I - C`` with ``t = theta + ||r||`` plus the rounding allowance
    (:func:`repro.optimal._kernels.below`'s ``delta``, Higham Thm. 10.3) proves ``lambda_max <= t``.
    ``top = inf`` where Lanczos stops, where the factorization (estimated ``t_chol`` seconds) would end
    past ``deadline``, or where it fails (a Ritz value below another eigenvalue); ``x`` is None where
    Lanczos stopped."""
    import scipy.linalg.lapack
    import scipy.sparse.linalg as sla

    p = C.shape[0]

    def matvec(v):
        if time.perf_counter() >= deadline:
            raise _OutOfTime
        return C @ np.ravel(v)

    op = sla.LinearOperator((p, p), matvec=matvec, dtype=np.float64)
    try:
        theta, X = sla.eigsh(op, k=1, which="LA", tol=1e-10, v0=np.sqrt(np.diag(C)) + 1.0 / p)
    except (_OutOfTime, sla.ArpackNoConvergence):
        return np.inf, None
    x = np.ascontiguousarray(X[:, 0])
    if deadline - time.perf_counter() < t_chol:
        return np.inf, x
    theta = float(theta[0])
    res = float(np.linalg.norm(C @ x - theta * x))
    dm = float(np.max(np.abs(np.diag(C))))
    t = theta + res
    t += 2.0 * _k.cholesky_allowance(p, t, dm)  # twice the allowance: t - delta > theta + res
    delta = _k.cholesky_allowance(p, t, dm)
    B = -C
    B.flat[:: p + 1] += t - delta
    _, info = scipy.linalg.lapack.dpotrf(B, lower=1, clean=0, overwrite_a=1)
    return (t if info == 0 else np.inf), x


def _progress(k, n_nodes, state, value, bound, seconds):
    """The progress line of ``verbose``: the nodes, the open ones, the incumbent and the live global bound
    (the largest bound of the open nodes: the bound the search would return if stopped there)."""
    gap = (bound - value) / value if value > 0 else np.inf
    print(
        f"optimal_sparse_pca k={k}: {n_nodes} nodes ({n_nodes / max(seconds, 1e-9):.0f}/s), "
        f"{state[_k.SP] + state[_k.HEAP_N]} open, value {value:.6g}, bound {bound:.6g}, gap {gap:.2e}, "
        f"{seconds:.1f} s",
        file=sys.stderr,
        flush=True,
    )


def _rebound(tables, inc_val, status_arr, bounds, rhos, rows, deadline):
    """Each open node's own bound (its parent's is looser), the largest first, until ``deadline`` (a node
    not re-bounded keeps its parent's bound, which holds). ``rows``: the open nodes' rows. A second
    Ctrl-C ends it at once."""
    C, W, lam, V2T, k, nonneg, eig_limit, l1_evals, dual_M, dual_add = tables
    try:
        for t in rows[np.argsort(-bounds[rows], kind="stable")]:
            if time.perf_counter() >= deadline:
                break
            with _ctrl_c_held():
                own = _k.node_bound(
                    C, W, lam, V2T, status_arr[t], k, nonneg, eig_limit, inc_val[0], rhos[t], 2 * l1_evals,
                    deadline, dual_M, dual_add,
                )  # fmt: skip
            bounds[t] = min(bounds[t], own)
    except KeyboardInterrupt:
        pass


def _finish(C0, scale, inc_val, inc_x, ub, gap, status, n_nodes, t0, root, prunes, nonneg, exhausted=False):
    """The :class:`OptimalResult` of :func:`search` from its state (values scaled back by ``scale``)."""
    ub = max(ub, inc_val[0])
    x = _canonical_sign(inc_x[:, None])[:, 0] if not nonneg else inc_x.copy()
    x /= np.linalg.norm(x)
    value = float(x @ C0 @ x)
    return certified_result(
        x, value, float(ub * scale), gap, status, n_nodes, t0, root * scale, prunes, exhausted=exhausted
    )


def _chain_survivors(C, W, R, k, U, thr) -> np.ndarray:
    """The features of ``R`` whose :func:`~repro.optimal._kernels.chain_bounds` (``g_j`` over the survivors,
    recomputed until nothing changes) exceed ``thr`` (``1e-12``: the 2 x 2 eigenvalue's rounding)."""
    while R.size:
        keep = _k.chain_bounds(C, W, R, k, U) * (1 + 1e-12) > thr
        if keep.all():
            break
        R = R[keep]
    return R


def _chain_pays(C, W, k, nonneg, inc_x, thr, frac) -> bool:
    """Whether the chain can fix out all but ``frac`` of the features: the screening with ``U`` the best
    value of the incumbent's support less one feature (a lower bound on the optimum at ``k - 1``, so at
    most the certified ``U`` the chain would compute, and it screens at least as much). An incumbent with
    fewer than ``k`` features: the optimum at ``k - 1`` reaches it, nothing can be screened."""
    S = np.flatnonzero(inc_x)
    if S.size < k:
        return False
    low = -np.inf
    for i in range(S.size):
        T = np.delete(S, i)
        val = _k.nonneg_lower(C, T)[0] if nonneg else _k.signed_value(C, T)[0]
        low = max(low, val)
    R = _chain_survivors(C, W, np.arange(C.shape[0]), k, low, thr)
    return R.size <= frac * C.shape[0]


def _chain_screen(C, W, k, chain, thr, status_arr, bounds, l1s, rows, counts) -> None:
    """Fix out of every open node the features that no support beating ``thr`` can hold.

    ``chain["U"]`` is a certified bound on the optimum at ``k - 1`` (scaled as ``C``), so a support of at
    most ``k`` features that holds ``j`` has value at most ``chain_bounds``' ``lambda_max [[U, g_j], [g_j,
    C_jj]]``; when that is at most ``thr``, no support with ``j`` beats the incumbent (to the gap), in any
    node. ``g_j`` only sums over the features still in ``chain["R"]`` (a support beating ``thr`` lies in
    them), so the screening repeats until nothing changes. An open node that fixed a screened feature in
    is pruned (its bound set to ``-inf``: counted as stale when popped); one where it is free fixes it
    out, and loses its parent's l1 bound (a smaller allowed set). ``rows``: the open nodes' rows."""
    R = _chain_survivors(C, W, chain["R"], k, chain["U"], thr)
    gone = np.setdiff1d(chain["R"], R)
    chain["R"] = R
    counts[_k.CHAIN_OUT] += gone.size
    if gone.size == 0:
        return
    for t in rows:
        row = status_arr[t]
        if np.any(row[gone] == 1):
            bounds[t] = -np.inf
            continue
        free = gone[row[gone] == 0]
        if free.size:
            row[free] = -1
            l1s[t] = np.inf


def certified_result(
    x, value, upper, gap, status, n_nodes, t0, root, prunes, exhausted=False
) -> OptimalResult:
    """The :class:`OptimalResult` of a finished search (both routes): the relative gap of ``value`` to the
    certified ``upper`` bound, ``proven`` when it is within ``gap`` (or the tree is ``exhausted``), and the
    status: ``"optimal"`` when proven, ``"undecided_leaves"`` when the tree is done but non-negative leaves
    ran out of their budget, else the search's own."""
    rel = max(upper - value, 0.0) / value if value > 0 else np.inf
    proven = bool(rel <= gap * (1 + 1e-9) + 1e-12) or bool(exhausted)
    if proven:
        status = "optimal"
    elif status == "optimal":
        status = "undecided_leaves"
    return OptimalResult(
        component=x,
        value=value,
        upper_bound=max(upper, value),
        gap=float(rel),
        proven=proven,
        status=status,
        n_nodes=int(n_nodes),
        time=time.perf_counter() - t0,
        root_bound=float(root),
        prunes=prunes,
    )
