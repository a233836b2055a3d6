"""The constrained EM (Sigg & Buhmann 2008, Algorithm 1 with the M-step of Algorithm 2 / Eq. 17).

E-step ``y = X w / (w'w)``, M-step ``w* = X'y / (y'y)`` (Eq. 13) soft-thresholded at the (K+1)-th largest
magnitude (cardinality, Eq. 14) or among the positive entries (non-negativity, Eq. 17), then normalized;
the restarts of a component run together as one block (:func:`_em_block`) on a validated operator.
"""

from __future__ import annotations

import numpy as np

from ..linalg import SPARSE_DATA_FRACTION, SPARSE_FRACTION, Covariance
from ._common import _MAX_REDRAWS, _Run
from ._kernels import (
    COLLAPSED,
    CONVERGED,
    MAX_ITER,
    RUN_COLLAPSE,
    RUN_GROW,
    em_rows_data,
    em_rows_matrix,
    em_update_block,
    support_of,
)
from .screening import _Screen

#: With ``support_stop`` (the refine default of EMSparsePCA), a restart also stops once its support has
#: stayed the same for this many iterations in a row and ``|w(t+1)' w(t)| > 1 - SUPPORT_TOL``: the
#: refinement keeps only a run's support and improves on it, so iterating on to ``tol`` would mostly
#: polish weights that are then replaced.
SUPPORT_PATIENCE = 3
#: The cosine tolerance of the support-stable stop (nsprcomp, the authors' code, stops at a relative
#: change of 1e-3).
SUPPORT_TOL = 1e-4
#: The EM on a support (:func:`_em_on_support`) forms the support's covariance up to this many features.
SUPPORT_MATRIX_MAX = 512


def _em_block(
    op, W0, K, nonneg, excluded, tol, max_iter, rngs=None, screen=True, support_stop=False, first=None,
    callback=None,
) -> list[_Run]:  # fmt: skip
    """EM runs (Algorithms 1-2) from the rows of ``W0`` (R x D), all together.

    One iteration of every active restart is one call ``op.products(W)`` (``W C`` and ``w'Cw`` for a block:
    one matrix-matrix product) and the kernel :func:`repro.em_sparse_pca._kernels.em_update_block` (the
    O(D) projection per row). A restart that converges (``|w(t+1)' w(t)| > 1 - tol``) or reaches
    ``max_iter`` leaves the block; one that collapses to the zero vector is replaced by a new random start
    from its generator ``rngs[r]`` (up to 50 times) when given. Row ``r``'s iterates are those of a run
    from ``W0[r]`` alone (to round-off: the block product sums in another order).

    ``support_stop="stop"`` (``renormalize="refine"``, the estimator's default): a restart also stops
    (converged) when its support has not changed for :data:`SUPPORT_PATIENCE` iterations and
    ``|w(t+1)' w(t)| > 1 -`` :data:`SUPPORT_TOL` (not with missing values, whose renormalization also
    re-estimates the mean, nor without a constraint, where the support is every feature from the start).
    ``first``: an ``R x D`` array that receives, per row, the product ``C w`` of its first iteration
    (``C w0``, or ``C`` times the redrawn start when ``w0`` gave ``w0'Cw0 = 0``), for the caller to reuse;
    or None. ``callback``: called after every iteration of the block as ``callback(t, W)`` (``t`` the
    block's iterations so far, ``W`` the ``R x D`` iterates, not to be changed), or None; with a callback
    every iteration is one Python round (:func:`_em_loop`), not a whole-run kernel call.
    """
    W = np.array(W0, dtype=np.float64, order="C", ndmin=2)
    R, D = W.shape
    K, nonneg, tol = int(K), bool(nonneg), float(tol)
    if hasattr(op, "start"):
        op.start(R)
    state = np.zeros(R)
    it = np.zeros(R, dtype=np.int64)  # iterations of each row's current run
    spent = np.zeros(R, dtype=np.int64)  # iterations of runs that collapsed and were redrawn
    tries = np.zeros(R, dtype=np.int64)
    status = np.full(R, -1, dtype=np.int64)
    stable = np.zeros(R, dtype=np.int64)  # iterations in a row with an unchanged support
    hist = np.empty((R, min(max_iter, 255) + 1))  # grown on demand (max_iter may be huge)
    active = np.arange(R)
    pending = np.zeros(R, dtype=bool)  # rows whose first product is still to be kept in ``first``
    if first is not None:
        first[:] = np.nan
        pending[:] = True
    if support_stop and (not isinstance(op, Covariance) or (K >= D and not nonneg)):
        support_stop = False  # missing values (the mean is re-estimated), or no constraint: plain EM
    stop_cos = 1.0 - max(float(tol), SUPPORT_TOL) if support_stop else 0.0
    # whole runs in one kernel call: a covariance matrix, or C-contiguous data (screened or not); with a
    # callback (called between iterations), the iterations run one at a time
    whole = (
        callback is None
        and isinstance(op, Covariance)
        and (op.matrix is not None or op.data.flags.c_contiguous)
    )
    scr = _Screen(op, W, K, nonneg, excluded) if screen and whole and _Screen.applies(op, K, D) else None
    if scr is not None:
        supp, ns = scr.supp, scr.ns
        data_args = (scr.A, scr.At, scr.colnorm, scr.Y, scr.Y0, scr.F0, scr.ref, scr.nref, scr.Ut, scr.B)
        data_args += (scr.cr, scr.max_cand, SPARSE_FRACTION, True)
    elif whole:  # the supports, kept by the kernel
        supp, ns = np.empty((R, D), dtype=np.int64), np.zeros(R, dtype=np.int64)
        for r in range(R):
            ns[r] = support_of(W[r], supp[r])
        if op.matrix is None:  # unscreened: one E-step and one product buffer, no bound
            A = op.data
            N = A.shape[0]
            y, f, none = np.empty((1, N)), np.empty((1, D)), np.empty(0)
            data_args = (A, A.T, none, y, y, f, np.empty((1, 0), dtype=np.int64), np.zeros(R, dtype=np.int64))
            data_args += (np.empty((0, N)), np.empty((D, 0)), none, 0, SPARSE_DATA_FRACTION, False)

    def grow(hist):
        return np.concatenate([hist, np.empty((R, min(hist.shape[1], max_iter + 1 - hist.shape[1]) + 1))], 1)

    def collapse(r, t_end):
        stable[r] = 0
        if rngs is not None and rngs[r] is not None and tries[r] < _MAX_REDRAWS:
            tries[r] += 1
            spent[r] += t_end
            W[r] = _draw_start(rngs[r], D, nonneg, excluded)
            it[r] = 0
            state[r] = 0.0
            if hasattr(op, "restart_row"):
                op.restart_row(r)
            if scr is not None:
                scr.reset(r, W)
            elif whole:
                ns[r] = support_of(W[r], supp[r])
            return
        status[r] = COLLAPSED
        it[r] = t_end
        W[r] = 0.0

    fst = first if first is not None else np.empty((0, D))
    patience = SUPPORT_PATIENCE if support_stop else 0
    counts = np.zeros(2, dtype=np.int64)
    while whole and active.size:  # Python is entered per block (and per collapse), not per iteration
        if op.matrix is None:
            A, At, cn, Y, Y0, F0, ref, nref, Ut, B, cr, mc, sf, scr_on = data_args
            code, r = em_rows_data(
                A, At, cn, K, nonneg, excluded, W, active, state, supp, ns, Y, Y0, F0, ref, nref, Ut, B, cr,
                mc, it, status, stable, hist, fst, pending, tol, max_iter, stop_cos, patience, sf, scr_on,
                counts,
            )  # fmt: skip
        else:
            code, r = em_rows_matrix(
                op.matrix, K, nonneg, excluded, W, active, state, supp, ns, it, status, stable, hist, fst,
                pending, tol, max_iter, stop_cos, patience, SPARSE_FRACTION,
            )  # fmt: skip
        if code == RUN_GROW or it.max() >= hist.shape[1]:  # (room for the final w'Cw too)
            hist = grow(hist)
        elif code == RUN_COLLAPSE:
            collapse(r, it[r])
        active = active[status[active] < 0]
    if scr is not None:
        scr.n_screened += int(counts[0])
        scr.n_full += int(counts[1])
    if active.size:  # other operators (missing values, Dask, own products): Python per iteration
        hist = _em_loop(
            op, W, K, nonneg, excluded, tol, max_iter, state, it, status, stable, hist, active, fst, pending,
            stop_cos, patience, grow, collapse, callback,
        )  # fmt: skip
    done = np.flatnonzero(status != COLLAPSED)
    hfinal = np.zeros(R)
    if done.size:
        if scr is not None:
            hd = scr.products(W, done)
        elif isinstance(op, Covariance):  # w'Cw alone (through the data: not C w)
            hd = op.quad_rows(W[done])
        else:
            hd = op.products(W[done], done)[1]
        if it.max() >= hist.shape[1]:
            hist = grow(hist)
        hfinal[done] = hd
        hist[done, it[done]] = hd
    runs = []
    for r in range(R):
        n = int(it[r])
        col = status[r] == COLLAPSED
        hist_r = hist[r, : n + (0 if col else 1)].copy()
        mean = op.row_mean(r) if hasattr(op, "row_mean") else None
        runs.append(_Run(W[r].copy(), float(hfinal[r]), n, int(status[r]), hist_r, n + int(spent[r]), mean))
    return runs


def _em_loop(
    op, W, K, nonneg, excluded, tol, max_iter, state, it, status, stable, hist, active, first, pending,
    stop_cos, patience, grow, collapse, callback=None,
):  # fmt: skip
    """The iterations of :func:`_em_block` one at a time for every active row: ``op.products`` of the block
    then :func:`repro.em_sparse_pca._kernels.em_update_block`, with the stops of
    :func:`repro.em_sparse_pca._kernels.em_rows_matrix`, and ``callback(t, W)`` after each iteration when
    given. Returns ``hist`` (grown as needed)."""
    R, D = W.shape
    work = np.empty(D)
    norms, cosines = np.empty(R), np.empty(R)
    mask = W != 0.0
    t = 0
    while active.size:
        F, H = op.products(W if active.size == R else W[active], active)
        if it.max() + 1 >= hist.shape[1]:
            hist = grow(hist)
        hist[active, it[active]] = H
        ok = H > 0
        if not ok.all():
            for r in active[~ok]:
                collapse(r, it[r])
            F, rows = F[ok], active[ok]
        else:
            rows = active
        F = np.ascontiguousarray(F)
        new = pending[rows]
        if new.any():
            first[rows[new]] = F[new]
            pending[rows] = False
        em_update_block(F, K, nonneg, excluded, W, work, state, rows, norms, cosines)
        it[rows] += 1
        m = rows.size
        zero = norms[:m] == 0.0
        if zero.any():
            for r in rows[zero]:
                collapse(r, it[r])
        conv = ~zero & (cosines[:m] > 1.0 - tol)
        if patience:
            now = W[rows] != 0.0
            same = (now == mask[rows]).all(axis=1)
            stable[rows] = np.where(same, stable[rows] + 1, 0)
            mask[rows] = now
            conv |= ~zero & (stable[rows] >= patience) & (cosines[:m] > stop_cos)
        status[rows[conv]] = CONVERGED
        status[rows[~zero & ~conv & (it[rows] >= max_iter)]] = MAX_ITER
        active = active[status[active] < 0]
        t += 1
        if callback is not None:
            callback(t, W)
    return hist


def _em(op, w0, K, nonneg, excluded, tol, max_iter) -> _Run:
    """One EM run from ``w0``: :func:`_em_block` with a block of one."""
    return _em_block(op, np.asarray(w0)[None, :], K, nonneg, excluded, tol, max_iter)[0]


def _em_on_support(op: Covariance, w0, nonneg, tol, max_iter, support=None) -> _Run:
    """The EM from ``w0`` with every feature off its support excluded (no cardinality bound), run on the
    support's own operator (:meth:`repro.linalg.Covariance.restrict`: ``N K`` or ``K^2`` per iteration
    instead of ``N D`` or ``D^2``); the same iterates as ``_em(op, w0, D, nonneg, w0 == 0, ...)`` to
    round-off, mapped back to all ``D`` features. A support of at most :data:`SUPPORT_MATRIX_MAX` features
    of a data-backed operator gets its ``K x K`` covariance (``N K^2 / 2`` flops, about as much as a few
    iterations through the data), so that the whole run is one kernel call
    (:func:`repro.em_sparse_pca._kernels.em_rows_matrix`) instead of a Python round per iteration.
    ``support``: the non-zeros of ``w0`` (increasing) when the caller knows them."""
    S = np.flatnonzero(w0) if support is None else support
    sub = op.restrict(S)
    if sub.matrix is None and S.size <= SUPPORT_MATRIX_MAX:
        A = sub.data
        M = A.T @ A
        sub = Covariance._trusted(matrix=0.5 * (M + M.T), n_samples=sub.n_samples)  # symmetric, finite
    r = _em(sub, w0[S], S.size, nonneg, np.zeros(S.size, dtype=bool), tol, max_iter)
    w = np.zeros(w0.shape[0])
    w[S] = r.w
    r.w = w
    return r


def _draw_start(rng: np.random.Generator, D: int, nonneg: bool, excluded: np.ndarray) -> np.ndarray:
    """A random unit start: Gaussian direction, folded into the non-negative orthant if ``nonneg``."""
    w = rng.standard_normal(D)
    if nonneg:
        w = np.abs(w)
    w[excluded] = 0.0
    n = np.linalg.norm(w)
    if n == 0:  # every feature excluded; the caller refuses this case
        return w
    return w / n
