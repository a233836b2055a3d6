"""The sparse / non-negative EM as Sigg & Buhmann (2008) write it, on a validated working operator (the door,
:mod:`.estimator`, checked the input and built the operator), read top to bottom:

* several components (Sec. 4, :func:`_fit`): projection deflation (Eq. 18), disjoint supports for
  non-negative components (Eq. 19), or quasi-orthogonality with the penalty tuned to a minimum angle
  (Eq. 20, :func:`_solve_quasi`);
* one component from several starts (Sec. 3.1, :func:`_solve_component`): the first principal component
  (both signs when non-negative) and random starts, run as one block, the best kept, after renormalization
  when asked;
* the renormalization (the paper's "emPCAopt"; Moghaddam, Weiss & Avidan 2006): the optimal weights on
  the support each restart found, the supports taken together (:func:`_renormalized`), and the
  truncated-power refinement of ``renormalize="refine"`` (:func:`_refined`);
* the constrained EM itself (Algorithm 1 with the M-step of Algorithm 2 / Eq. 17): E-step
  ``y = X w / (w'w)``, M-step ``w* = X'y / (y'y)`` (Eq. 13) soft-thresholded at the (K+1)-th largest
  magnitude (Eq. 14) or among the positive entries (Eq. 17), then normalized; the restarts run together
  as one block (:func:`_em_block`), each whole run one Numba call per block (:mod:`._kernels`);
* its screened iterations through the data with few samples (:class:`_Screen`, an exact shortcut of
  Algorithm 2: only the entries of ``X'y`` a bound cannot rule out of the top ``K + 1`` are computed);
* the principal-component start (:func:`_rank_and_pc`) and the variance of a result (:func:`_quad_rows`).
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg
from sklearn.utils._param_validation import validate_params

from .. import _shortcuts
from .._dense import _canonical_sign
from .._linalg_kernels import lanczos_top
from .._sparse import DENSE_EIGH_MAX, CentredSparse
from .._validation import ConvergenceWarning, check_int, warn_not_converged
from ..linalg import SPARSE_DATA_FRACTION, SPARSE_FRACTION, Covariance, _renormalize_support, renormalize
from ._common import _MAX_REDRAWS, _RHO_MAX, DEFAULT_STARTS, _Component, _Run, _Settings
from ._kernels import (
    COLLAPSED,
    CONVERGED,
    MAX_ITER,
    RUN_COLLAPSE,
    RUN_GROW,
    em_rows_data,
    em_rows_matrix,
    em_update_block,
    screened_products,
    support_of,
    top_support,
)
from .missing import _ObservedData
from .quasi import _em_quasi


# -------------------------------------------------------------------------------- several components (Sec. 4)
def _fit(
    op,
    L,
    ks,
    *,
    nonneg,
    init,
    n_restarts,
    renormalize,
    orthogonality,
    min_angle_deg,
    penalty,
    tol,
    max_iter,
    rng,
    callback=None,
):
    """Components one after another on the working operator. Returns a list of _Component."""
    D = op.n_features
    rank, pc0 = _rank_and_pc(op, need_rank=L > 1)
    if rank == 0:
        raise ValueError("X has no variance (every column is constant); there is no component to find.")
    if orthogonality == "deflation" and L > rank:
        raise ValueError(
            f"n_components={L} exceeds the numerical rank {rank} of the centred data; deflation leaves "
            f"nothing after {rank} components. Lower n_components."
        )
    if orthogonality == "quasi" and L > 1 and isinstance(op, _ObservedData):
        raise ValueError(
            "orthogonality='quasi' is not supported with missing values or Dask input; use 'deflation' or "
            "'disjoint', or impute the missing entries."
        )
    Aw = op
    excluded = np.zeros(D, dtype=bool)
    comps: list[_Component] = []
    V = np.zeros((D, 0))
    for l in range(L):
        K = int(ks[l])
        if excluded.all():
            raise ValueError(
                f"n_components={L} is too many: components {l} and later have no feature left, since "
                "orthogonal non-negative components need disjoint supports (Eq. 19). Lower n_components or "
                "use orthogonality='quasi'."
            )
        if isinstance(init, np.ndarray):
            kind = init[l] if init.shape[0] > l else "auto"
        else:
            kind = init if init is not None else "auto"
        kind_name = kind if isinstance(kind, str) else "array"
        R = _resolve_restarts(n_restarts, kind_name)
        seeds = rng.integers(0, 2**63 - 1, size=R)
        start_rngs = [np.random.default_rng(int(sd)) for sd in seeds]
        pc = None
        if isinstance(kind, str) and kind in ("pc", "auto"):
            if l == 0 or orthogonality != "deflation":
                pc = pc0
            else:
                try:
                    pc = _leading_pc_op(Aw)
                except ValueError:
                    raise ValueError(
                        f"n_components={L} exceeds the rank of the data left after {l} deflations; lower "
                        "n_components."
                    ) from None
        # only the refine default stops on a stable support: renormalize=True is Sigg & Buhmann's
        # emPCAopt (EM to convergence, then optimal weights on its support), which the stop changed by up
        # to 5% of the variance on leukemia (Asteris Fig. 5)
        stop = "stop" if renormalize == "refine" else False
        s = _Settings(nonneg, kind, R, renormalize, tol, max_iter, support_stop=stop, callback=callback)
        if orthogonality == "quasi" and l > 0:
            comp = _solve_quasi(Aw, K, s, excluded, start_rngs, pc, V, penalty, min_angle_deg)
        else:
            comp = _solve_component(Aw, K, s, excluded, start_rngs, pc)
        if hasattr(Aw, "exact"):  # found on the float32 search covariance: its weights in float64
            comp.w, comp.h = _exact_weights(Aw.exact, comp.w, nonneg, s)
        if comp.status == MAX_ITER:
            warn_not_converged("EMSparsePCA", max_iter, tol, f"(component {l})")
        comp.op = Aw
        comps.append(comp)
        w = comp.w
        V = np.column_stack([V, w])
        if orthogonality == "deflation" and l + 1 < L:
            Aw = _deflate(Aw, w, comp.mean)
        if orthogonality == "disjoint" or (orthogonality == "deflation" and nonneg):
            excluded = excluded | (w != 0)  # Eq. 19
    return comps


def _deflate(op, w, mean):
    """Projection deflation (Eq. 18) of the working operator by a fitted (unit, float64) component."""
    if isinstance(op, _ObservedData):
        return op.deflate(w, mean)
    return op._deflate(w, "projection")


def _exact_weights(exact, w, nonneg, s: _Settings):
    """The optimal weights on the support of ``w`` (a renormalized result found on the float32 search
    covariance, :class:`repro.em_sparse_pca.operators._SearchCovariance`) for the float64 covariance
    ``exact``: the leading eigenvector of ``C[S, S]`` (:func:`repro.linalg._renormalize_support`), or,
    non-negative,
    the EM on the support from ``w`` (already at its fixed point to about 1e-7: a few iterations). Returns
    ``(w, w'Cw)``."""
    if not nonneg:
        S = np.flatnonzero(w)
        return _renormalize_support(exact, S, w[S])
    r = _em_on_support(exact, w, True, s.tol, s.max_iter)
    if r.status == COLLAPSED:  # pragma: no cover - w is a non-negative fixed point with w'Cw > 0
        return w, float(_quad_rows(exact, w[None, :])[0])
    return r.w, r.h


def _solve_quasi(op, K, s, excluded, start_rngs, pc, V, penalty, min_angle_deg) -> _Component:
    """Quasi-orthogonal component (Eq. 20): restarts at the initial penalty, then the penalty search.

    With ``min_angle_deg``, the relative penalty ``rho = alpha / h`` is raised (x10) until the angle to
    every earlier component is at least the minimum, then lowered by bisection in ``log(rho)`` to the
    smallest value that still meets it (the least penalized, hence highest-variance, admissible solution).
    """
    comp = _solve_component(op, K, s, excluded, start_rngs, pc, V=V, rho=penalty)
    if min_angle_deg is None:
        return comp
    cos_max = np.cos(np.deg2rad(min_angle_deg))

    def ok(c):
        return c is not None and float(np.abs(V.T @ c.w).max()) <= cos_max + 1e-12

    def solve_at(rho, start):
        s1 = _Settings(s.nonneg, start, 1, s.renormalize, s.tol, s.max_iter, s.support_stop)
        try:
            return _solve_component(op, K, s1, excluded, start_rngs[:1], None, V=V, rho=rho)
        except ValueError:  # every start collapsed under this penalty: not admissible
            return None

    def cost(c):
        return 0 if c is None else c.n_iter_total

    total = comp.n_iter_total
    good = comp if ok(comp) else None
    bad_rho = None if good is not None else penalty
    good_rho = penalty if good is not None else None
    last = comp
    if good is None:
        rho = penalty
        while good is None and rho < _RHO_MAX:
            rho *= 10.0
            c = solve_at(rho, last.w_em)
            total += cost(c)
            if c is None:
                break
            last = c
            if ok(last):
                good, good_rho = last, rho
            else:
                bad_rho = rho
        if good is None:
            warnings.warn(
                f"EMSparsePCA: no quasi-orthogonality penalty (up to {_RHO_MAX:g}) reached the minimum "
                f"angle of {min_angle_deg} degrees to the earlier components (a non-negative vector is "
                "at most arccos(min_i v_i) away from a dense non-negative earlier component v); returning "
                "the most penalized solution. Lower min_angle_deg.",
                ConvergenceWarning,
                stacklevel=4,
            )
            last.n_iter_total = total
            return last
    else:
        # Already admissible at the initial penalty: look for a smaller one.
        rho = penalty
        while bad_rho is None and rho > 1e-6:
            rho /= 10.0
            c = solve_at(rho, good.w_em)
            total += cost(c)
            if ok(c):
                good, good_rho = c, rho
            else:
                bad_rho = rho
    if bad_rho is not None:
        lo, hi = np.log(bad_rho), np.log(good_rho)
        for _ in range(6):
            mid = 0.5 * (lo + hi)
            c = solve_at(float(np.exp(mid)), good.w_em)
            total += cost(c)
            if ok(c):
                good, hi = c, mid
            else:
                lo = mid
    good.n_iter_total = total
    return good


# --------------------------------------------------------------- one component from several starts (Sec. 3.1)
def _resolve_restarts(n_restarts, init_kind: str) -> int:
    if n_restarts is None:
        return {"random": 10, "auto": DEFAULT_STARTS}.get(init_kind, 1)
    return check_int(n_restarts, "n_restarts", low=1)


def _starts(s: _Settings, D, excluded, start_rngs, pc, op=None, K=None) -> list[tuple[np.ndarray, object]]:
    """The starts of one component as ``(w0, rng for redraws)``.

    ``"auto"`` (the default): the first principal component (both signs with ``nonneg``) and random starts
    up to ``n_restarts`` in all, and at ``K = 1`` also the best single feature (the lowest index of the
    largest variance): the optimum at ``K = 1``, where the EM stays (``|C_ij| <= C_jj`` for the largest
    ``C_jj``: the top entry of ``C e_j`` is its own), so the default is exact there; ``"pc"``: the
    principal component (both signs with ``nonneg``); ``"random"``: ``n_restarts`` random starts; an
    array: that start.
    """
    if isinstance(s.init, np.ndarray):
        return [(s.init, start_rngs[0])]
    if s.init in ("pc", "auto"):
        pcs = [pc, -pc] if s.nonneg else [pc]
        out = [(p, start_rngs[i % len(start_rngs)]) for i, p in enumerate(pcs)]
        if s.init == "auto":
            out += [(_draw_start(g, D, s.nonneg, excluded), g) for g in start_rngs[len(pcs) :]]
            if K == 1 and hasattr(op, "diag"):
                d = np.where(excluded, -np.inf, op.diag())
                e = np.zeros(D)
                e[int(np.argmax(d))] = 1.0
                out.append((e, start_rngs[0]))
        return out
    return [(_draw_start(g, D, s.nonneg, excluded), g) for g in start_rngs]


def _solve_component(op, K, s: _Settings, excluded, start_rngs, pc, V=None, rho=0.0) -> _Component:
    """EM (best of the starts, run as one block) for one component on the working operator, then
    renormalization."""
    D = op.n_features
    nonneg = s.nonneg
    starts = _starts(s, D, excluded, start_rngs, pc, op, K)
    refine = s.renormalize == "refine" and V is None and isinstance(op, Covariance)
    first = None
    if V is None:
        W0 = np.array([w for w, _ in starts])
        first = np.empty_like(W0) if refine else None
        runs = _em_block(
            op, W0, K, nonneg, excluded, s.tol, s.max_iter, [g for _, g in starts],
            support_stop=s.support_stop, first=first, callback=s.callback,
        )  # fmt: skip
    else:
        runs = []
        for w0, g in starts:
            r = _em_quasi(op, w0, K, nonneg, excluded, V, rho, s.tol, s.max_iter)
            tries, spent = 0, r.n_iter
            while r.status == COLLAPSED and tries < _MAX_REDRAWS and g is not None:
                r = _em_quasi(
                    op, _draw_start(g, D, nonneg, excluded), K, nonneg, excluded, V, rho, s.tol, s.max_iter
                )
                spent += r.n_iter
                tries += 1
            r.n_iter_total = spent
            runs.append(r)
    best, total = _best(runs)
    if best is None:
        raise ValueError(
            "every start collapsed to the zero vector (no feature can take a non-zero loading); the "
            "remaining data has no variance on the allowed features: lower n_components."
        )
    if not s.renormalize:
        w_em, h_em, mean = best.w, best.h, best.mean
        w, h = w_em, h_em
    else:
        # emPCAopt: optimal weights on the support (Sigg & Buhmann 2008, Sec. 5.1), for the support of
        # every restart (each distinct support once, all together); the restart kept is the best after
        # renormalization, so adding starts never lowers the result.
        first_of: dict = {}  # support -> the first restart that found it
        for r in runs:
            if r.status != COLLAPSED:
                first_of.setdefault((r.w != 0).tobytes(), r)
        done = _renormalized(op, list(first_of.values()), nonneg, excluded, V, rho, s)
        seen = dict(zip(first_of, done, strict=True))
        total += sum(int(v[3]) for v in seen.values())
        pick = None
        for r in runs:
            if r.status == COLLAPSED:
                continue
            w_r, h_r, mean_r, _ = seen[(r.w != 0).tobytes()]
            if (
                pick is None
                or h_r > pick[1] * (1 + 1e-12)
                or (h_r >= pick[1] * (1 - 1e-12) and r.h > pick[0].h)
            ):
                pick = (r, h_r, w_r, mean_r)
        r, h, w, mean = pick
        w_em, h_em, best = r.w, r.h, r
        if refine:
            # one truncated-power step from every start (from C w0, the EM's first product), then
            # refinement from the better of that and the EM's renormalized result (each kept only when
            # it raises the variance)
            w1, h1, spent = _best_start_step(op, first, K, nonneg, excluded, s)
            total += spent
            if h1 > h * (1 + 1e-12):
                w, h = w1, h1
            w, h, spent = _refined(op, K, nonneg, excluded, w, h, s)
            total += spent
    if not nonneg:  # the sign is arbitrary; fix it so the result does not depend on which start won
        w_em, w = _canonical_sign(w_em), _canonical_sign(w)
    return _Component(w, w_em, h, h_em, best.n_iter, total, best.status, best.history, rho, mean, best.mean)


def _best(runs: list[_Run]) -> tuple[_Run | None, int]:
    """The run of largest variance (first on ties) and the iterations spent by all."""
    best, total = None, 0
    for r in runs:
        total += r.n_iter_total
        if r.status != COLLAPSED and (best is None or r.h > best.h):
            best = r
    return best, total


# --------------------------------------------------------------------------------- renormalization (emPCAopt)
@validate_params({"A": ["array-like"], "w": ["array-like"]}, prefer_skip_nested_validation=True)
def renormalize_on_support(A: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, float]:
    """Optimal unit weights on the support of ``w`` for the covariance ``A'A`` (variational renormalization).

    :func:`repro.linalg.renormalize` on the data factor ``A``: through the ``N x N`` Gram matrix when the
    support is larger than ``N`` (so ``K = 12582`` on 72 samples costs a 72 x 72 eigenproblem).

    Returns
    -------
    w_new : ndarray, shape (n_features,)
        Unit norm, zero off the support, pointing the same way as ``w``.
    variance : float
        ``w_new' A'A w_new``.
    """
    return renormalize(Covariance._trusted(data=A), w)  # (its checks of w and of the support)



def _renormalized(op, runs: list[_Run], nonneg, excluded, V, rho, s: _Settings, supports=None) -> list:
    """Optimal weights on the support of each EM run of ``runs``: per run ``(w, h, mean, iterations
    spent)``. ``supports``: the non-zeros of each ``run.w`` (increasing) when the caller knows them.

    Without a constraint but the support, on a covariance: the leading eigenvector of ``C[S, S]``
    (:func:`repro.linalg._renormalize_support`), the supports one after another, as the restarts' EM runs
    were taken together; otherwise the EM itself restricted to the support (:func:`_em_renormalized`)."""
    if supports is None:
        supports = [None] * len(runs)
    if not nonneg and V is None and isinstance(op, Covariance):
        out = []
        for run, S in zip(runs, supports, strict=True):
            S = np.flatnonzero(run.w) if S is None else S
            w, h = _renormalize_support(op, S, run.w[S])
            out.append((w, h, run.mean, 0))
        return out
    pairs = zip(runs, supports, strict=True)
    return [_em_renormalized(op, run, nonneg, excluded, V, rho, s, S) for run, S in pairs]


def _em_renormalized(op, run: _Run, nonneg, excluded, V, rho, s: _Settings, support=None):
    """:func:`_renormalized` of one run by the EM restricted to its support (non-negative, quasi, missing
    values): kept when it does not lower ``w'Cw``."""
    D = run.w.shape[0]
    nnz = np.count_nonzero(run.w) if support is None else support.size
    small = _shortcuts.enabled and nnz * SPARSE_FRACTION < D  # (exact shortcut: the same iterates)
    if V is None and isinstance(op, Covariance) and small:  # its own small operator
        r = _em_on_support(op, run.w, nonneg, s.tol, s.max_iter, support)
    elif V is None:
        r = _em(op, run.w, D, nonneg, excluded | (run.w == 0), s.tol, s.max_iter)
    else:
        r = _em_quasi(op, run.w, D, nonneg, excluded | (run.w == 0), V, rho, s.tol, s.max_iter)
    if r.status != COLLAPSED and r.h >= run.h:
        return r.w, r.h, r.mean, r.n_iter
    return run.w, run.h, run.mean, r.n_iter


#: Most truncated-power steps of :func:`_refined` (each strictly raises the variance; 1-5 are typical).
MAX_REFINE_STEPS = 50


def _best_start_step(op, F, K, nonneg, excluded, s: _Settings):
    """One truncated-power step from each start, given ``F`` (row ``r``: ``C w0_r``, the EM's first
    product; a row of NaN is skipped): the best as ``(w, h, iterations spent)``, ``h = -inf`` when none
    qualifies. From the starts such a step reaches supports the soft-thresholded EM misses (on 12
    features, K = 4, rank 3 plus noise, it lifts the defaults from 0.9837 / 0.9696 of the brute-force
    optimum to the optimum on all eight sets)."""
    best, spent = (None, -np.inf), 0
    for step in _power_steps(op, F[~np.isnan(F[:, 0])], K, nonneg, excluded, s):
        if step is not None:
            spent += 1 + step[2]
            if step[1] > best[1]:
                best = (step[0], step[1])
    return best[0], best[1], spent


def _power_steps(op, F, K, nonneg, excluded, s: _Settings) -> list:
    """One truncated-power step from each row ``f = C w`` of ``F``: the support ``S`` of the ``K`` largest
    entries (largest magnitudes; largest positive entries when ``nonneg``; excluded features left out;
    ties to the lower index; :func:`repro.em_sparse_pca._kernels.top_support`) with the optimal weights on
    it (:func:`_renormalized`, the supports of all rows together). Per row ``(w, h, iterations, S)``, or
    None when no feature qualifies."""
    D = F.shape[1]
    cands, runs, supports = [], [], []
    for f in F:
        idx = np.empty(D, dtype=np.int64)
        cand = idx[: top_support(f, K, nonneg, excluded, np.empty(D), idx)]
        cands.append(cand)
        if cand.size == 0:
            continue
        z = np.zeros(D)
        z[cand] = f[cand]
        z /= np.linalg.norm(z)
        supports.append(cand[z[cand] != 0.0])  # (all of them, unless f spans more than float64's range)
        # h = -inf: the renormalized weights are kept unless the EM on the support collapses
        runs.append(_Run(z, -np.inf, 0, 0, np.empty(0)))
    done = iter(_renormalized(op, runs, nonneg, excluded, None, 0.0, s, supports))
    steps = []
    for cand in cands:
        if cand.size == 0:
            steps.append(None)
        else:
            w, h, _, it = next(done)
            steps.append((w, h, it, cand))
    return steps


def _refined(op, K, nonneg, excluded, w, h, s: _Settings):
    """Truncated-power refinement of a renormalized component: ``(w, h, iterations spent)``.

    From ``w`` (optimal on its support), each step is a truncated-power step (:func:`_power_steps`) from
    ``C w``, kept only when it raises ``w'Cw``, so the result is never worse than ``w``. It moves the
    support where the soft-thresholded EM stalls: the EM's fixed point is a fixed point of the soft
    threshold, not of the variance on its support (on standardized CBCL faces, K = 100, non-negative, the
    EM converges to a support worth 73.17 that these steps leave for one worth 73.36; nsprcomp reaches
    73.22 by stopping its EM early, at a relative change of 1e-3).
    """
    spent = 0
    for _ in range(MAX_REFINE_STEPS):
        (step,) = _power_steps(op, op.products(w[None, :])[0], K, nonneg, excluded, s)
        if step is None or np.array_equal(step[3], np.flatnonzero(w)):
            break
        spent += 1 + step[2]
        if not step[1] > h * (1 + 1e-12):
            break
        w, h = step[0], step[1]
    return w, h, spent


# ------------------------------------------------------------------------ the constrained EM (Algorithms 1-2)
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
    # products through the support of a sparse row (exact shortcuts; D + 1: never, the dense products)
    sf_matrix, sf_data = (SPARSE_FRACTION, SPARSE_DATA_FRACTION) if _shortcuts.enabled else (D + 1, D + 1)
    if scr is not None:
        supp, ns = scr.supp, scr.ns
        data_args = (scr.A, scr.At, scr.colnorm, scr.Y, scr.Y0, scr.F0, scr.ref, scr.nref, scr.Ut, scr.B)
        data_args += (scr.cr, scr.max_cand, sf_matrix, True)
    elif whole:  # the supports, kept by the kernel
        supp, ns = np.empty((R, D), dtype=np.int64), np.zeros(R, dtype=np.int64)
        for r in range(R):
            ns[r] = support_of(W[r], supp[r])
        if op.matrix is None:  # unscreened: one E-step and one product buffer, no bound
            A = op.data
            N = A.shape[0]
            y, f, none = np.empty((1, N)), np.empty((1, D)), np.empty(0)
            data_args = (A, A.T, none, y, y, f, np.empty((1, 0), dtype=np.int64), np.zeros(R, dtype=np.int64))
            data_args += (np.empty((0, N)), np.empty((D, 0)), none, 0, sf_data, False)

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
                pending, tol, max_iter, stop_cos, patience, sf_matrix,
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


# ----------------------------------------------------------------------- screened iterations through the data
#: Screened iterations (:class:`_Screen`) run on a data-backed covariance with at least this many samples.
SCREEN_MIN_SAMPLES = 16

#: A screened iteration computes at most ``n_features / SCREEN_CANDIDATES`` entries of ``X'y`` exactly;
#: beyond that one full product, which also renews the bound's reference.
SCREEN_CANDIDATES = 16

#: Leading eigenvectors of ``X X'`` (kept from the principal-component start) that refine the screening bound.
SCREEN_RANK = 8

class _Screen:
    """The EM iterations of a block through the data when the iterates are sparse (``N`` samples, ``D``
    features, ``K`` non-zeros): ``X w`` through the support (``N K`` flops), and of ``X'y`` only the
    entries that a bound cannot rule out of the top ``K + 1``
    (:func:`repro.em_sparse_pca._kernels.em_update_screened`), with a full product (``N D``) when the bound
    leaves too many. The M-step is exactly the one on the full ``X'y`` (the same threshold and kept
    entries; values to round-off), so the iterates are those of the plain iteration to round-off.

    Per row: ``Y`` (its E-step ``X w``), ``Y0``/``F0`` (the E-step and product of its last full pass),
    ``supp``/``ns`` (the support of ``w``), ``ref``/``nref`` (the top ``K + 1`` features of ``F0``).
    """

    def __init__(self, op: Covariance, W, K, nonneg, excluded):
        A = op.data
        N, D = A.shape
        R = W.shape[0]
        self.A, self.K, self.nonneg, self.excluded = A, int(K), bool(nonneg), excluded
        self.At = A.T  # (a transposed copy measured no faster: the gathers run 4 features at a time)
        self.colnorm = op.column_norms()
        U = getattr(op, "_gram_left", None)
        if U is not None and U.shape[0] == N:  # the refined bound (see em_update_screened)
            q = U.shape[1]
            self.Ut = np.ascontiguousarray(U.T)
            self.B = np.ascontiguousarray((U.T @ A).T)  # (A'U as written: 1.6x the time on leukemia)
            g = 8.0 * (N + q + 2) * np.finfo(float).eps
            c2 = self.colnorm**2
            self.cr = np.sqrt(np.maximum(c2 - np.einsum("ij,ij->i", self.B, self.B), 0.0) + g * c2)
        else:
            self.Ut, self.B, self.cr = np.empty((0, N)), np.empty((D, 0)), self.colnorm
        self.Y, self.Y0, self.F0 = np.empty((R, N)), np.empty((R, N)), np.empty((R, D))
        self.supp, self.ns = np.empty((R, D), dtype=np.int64), np.zeros(R, dtype=np.int64)
        self.ref, self.nref = np.empty((R, D), dtype=np.int64), np.zeros(R, dtype=np.int64)
        self.cand, self.fc, self.nomask = np.empty(D, dtype=np.int64), np.empty(D), np.zeros(D, dtype=bool)
        self.max_cand = max(D // SCREEN_CANDIDATES, self.K + 1)
        self.n_screened = self.n_full = 0  # row iterations settled by the bound / by a full product
        for r in range(R):
            self.reset(r, W)

    @staticmethod
    def applies(op, K, D) -> bool:
        return (
            _shortcuts.enabled
            and isinstance(op, Covariance)
            and op.matrix is None
            and SCREEN_MIN_SAMPLES <= op.data.shape[0] < D
            and K * SPARSE_FRACTION < D
        )

    def reset(self, r, W):
        """Row ``r`` got a new start: its support anew, no reference yet."""
        self.ns[r] = support_of(W[r], self.supp[r])
        self.nref[r] = 0

    def products(self, W, active) -> np.ndarray:
        """``Y[r] = X w_r`` for the active rows (through the support when sparse); returns ``||X w_r||^2``."""
        H = np.empty(active.size)
        dense = screened_products(self.At, W, active, self.supp, self.ns, self.Y, H, SPARSE_FRACTION)
        for j in np.flatnonzero(dense):
            r = active[j]
            np.dot(self.A, W[r], out=self.Y[r])
            H[j] = self.Y[r] @ self.Y[r]
        return H


# ------------------------------------------------------------------------------ the principal-component start
def _rank_and_pc(op, need_rank: bool = True) -> tuple[int, np.ndarray]:
    """Numerical rank of the operator and its leading eigenvector (canonical sign); for data with missing
    values, of the covariance with missing entries set to the mean.

    With ``need_rank=False`` (one component: only "is there any variance" matters) the rank is reported as
    0 or 1 and a ``D x D`` matrix gets only its leading eigenpair (Lanczos, to machine precision), not a
    full eigendecomposition.
    """
    if isinstance(op, _ObservedData):
        op = op.imputed_covariance()
    if op.matrix is not None and not need_rank and op.n_features > 50 and _shortcuts.enabled:
        return _top_pc_lanczos(op.matrix)
    if isinstance(op.data, CentredSparse) and min(op.data.shape) > DENSE_EIGH_MAX:
        # Lanczos on the operator (neither A'A nor AA' formed); the rank is then its bound
        # min(N - 1, D): a deflation past the true rank is refused when no variance is left
        vals, V = op.data.top_eigh(1)
        N, D = op.data.shape
        rank = (min(N - 1, D) if need_rank else 1) if vals[0] > 0 else 0
        return rank, _canonical_sign(V[:, 0])
    if op.matrix is not None:
        vals, V = np.linalg.eigh(op.matrix)
        v = V[:, -1].copy()
        top = max(vals[-1], 0.0)
        rank = int(np.sum(vals > 1e-10 * top)) if top > 0 else 0
        return rank, _canonical_sign(v)
    rank, pc, left = _numerical_rank_and_pc(op.data, need_rank, SCREEN_RANK)
    op._gram_left = left  # kept for the screened iterations (:class:`_Screen`) on this operator
    return rank, pc


def _numerical_rank_and_pc(A: np.ndarray, need_rank: bool = True, n_left: int = 0):
    """Numerical rank of ``A`` and the leading right singular vector (through the smaller Gram matrix).

    With ``need_rank=False`` and ``N < D`` only the top eigenpairs of the Gram matrix are computed and the
    rank is reported as 0 or 1 (as :func:`_rank_and_pc` does). With ``n_left`` (and ``N < D``) also returns
    the ``n_left`` leading eigenvectors of ``A A'`` (``N x n_left``, orthonormal), else None."""
    N, D = A.shape
    left = None
    if N < D:
        G = A @ A.T
        q = min(n_left, N)
        if need_rank or not _shortcuts.enabled:  # (the top pairs alone: an exact shortcut)
            vals, U = np.linalg.eigh(G)
        else:
            vals, U = scipy.linalg.eigh(G, subset_by_index=[N - max(q, 1), N - 1])
        if q:
            left = np.ascontiguousarray(U[:, ::-1][:, :q])
        u = U[:, -1]
        v = A.T @ u
        nv = np.linalg.norm(v)
        v = v / nv if nv > 0 else np.zeros(D)
    else:
        G = A.T @ A
        vals, V = np.linalg.eigh(G)
        v = V[:, -1].copy()
    top = max(vals[-1], 0.0)
    rank = int(np.sum(vals > 1e-10 * top)) if top > 0 else 0
    return rank, _canonical_sign(v), left


#: Most Lanczos steps of :func:`_top_pc_lanczos` before ARPACK takes over (CBCL faces: 10 steps).
PC_LANCZOS_STEPS = 100

def _top_pc_lanczos(M: np.ndarray) -> tuple[int, np.ndarray]:
    """Leading eigenvector of the ``D x D`` covariance ``M`` (positive semi-definite up to round-off), as
    ARPACK's ``eigsh(M, k=1, which="LA", v0=ones, tol=0)`` gives it.

    Lanczos with full reorthogonalization from the all-ones start (:func:`repro._linalg_kernels.lanczos_top`)
    to a residual ``r`` of ``4 eps ||M||_F``, accepted when its Ritz value ``theta`` is certified the largest
    eigenvalue by the trace: the eigenvalues of ``M`` are at least ``-delta`` (``delta``: ``1e-5`` of the
    largest diagonal entry, far above the float32 search matrix's round-off), so with ``2 theta >= tr(M) +
    2 r + D delta`` no other eigenvalue exceeds the one within ``r`` of ``theta``. That holds when the first
    component explains about half the variance or more (CBCL faces, standardized: 191 of 361; 10 steps,
    0.33 ms against ARPACK's 0.72 ms, the same vector to 2e-16). Otherwise, or without convergence in
    :data:`PC_LANCZOS_STEPS` steps, ARPACK, as before (which also restarts when the Krylov space of the start
    is invariant, e.g. when the leading eigenvector is orthogonal to the all-ones vector)."""
    import scipy.sparse.linalg

    D = M.shape[0]
    tr = float(np.trace(M))
    if not tr > 0:
        return 0, np.zeros(D)
    M = np.ascontiguousarray(M, dtype=np.float64)
    v = np.empty(D)
    theta, res, _ = lanczos_top(M, np.ones(D), PC_LANCZOS_STEPS, 4.0 * np.finfo(float).eps, v)
    delta = 1e-5 * float(np.max(np.diag(M)))
    if not (res >= 0.0 and 2.0 * theta >= tr + 2.0 * res + D * delta):
        try:
            vals, V = scipy.sparse.linalg.eigsh(M, k=1, which="LA", v0=np.ones(D), tol=0)
        except scipy.sparse.linalg.ArpackError:  # pragma: no cover - falls back to the dense solver
            vals, V = np.linalg.eigh(M)
        theta, v = vals[-1], V[:, -1].copy()
    return (1 if theta > 0 else 0), _canonical_sign(v)


def _leading_pc_op(op) -> np.ndarray:
    if isinstance(op, _ObservedData):
        op = op.imputed_covariance()
    _, vecs = op._eigh(1)  # k = 1 is within every operator's rank bound
    return vecs[:, 0]


def _quad_rows(op: Covariance, W) -> np.ndarray:
    """``w'Cw`` for the rows of ``W``, each through its support (``N K`` or ``K^2`` flops when K-sparse)."""
    op = getattr(op, "exact", op)  # a _SearchCovariance: through the float64 data
    h = np.empty(W.shape[0])
    D = W.shape[1]
    for r, w in enumerate(W):
        S = np.flatnonzero(w)
        if S.size * SPARSE_FRACTION >= D or not _shortcuts.enabled:  # dense: no copy of the support's columns
            h[r] = op.quad(w)
        elif op.matrix is not None:
            h[r] = w[S] @ op.matrix[np.ix_(S, S)] @ w[S]
        else:
            y = op._columns(S) @ w[S]
            h[r] = y @ y
    return h
