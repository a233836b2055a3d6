"""Several components (Sigg & Buhmann 2008, Sec. 4): projection deflation (Eq. 18), disjoint supports for
non-negative components (Eq. 19), or quasi-orthogonality with the penalty tuned to a minimum angle
(Eq. 20; :func:`_solve_quasi`); :func:`_fit` runs them on a validated operator.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._validation import (
    ConvergenceWarning,
    check_cardinality,
    check_int,
    check_n_components,
    check_real,
    warn_not_converged,
)
from ..linalg import renormalize
from ._common import _ORTHOGONALITY, _RHO_MAX, _Component, _Settings
from ._kernels import COLLAPSED, MAX_ITER
from .missing import _ObservedData
from .operators import _leading_pc_op, _quad_rows, _rank_and_pc
from .restarts import _check_init, _resolve_restarts, _solve_component
from .solvers import _em_on_support


def _deflate(op, w, mean):
    """Projection deflation (Eq. 18) of the working operator."""
    if isinstance(op, _ObservedData):
        return op.deflate(w, mean)
    return op.deflate(w, "projection")


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


def _exact_weights(exact, w, nonneg, s: _Settings):
    """The optimal weights on the support of ``w`` (a renormalized result found on the float32 search
    covariance, :class:`repro.em_sparse_pca.operators._SearchCovariance`) for the float64 covariance
    ``exact``: the leading eigenvector of ``C[S, S]`` (:func:`repro.linalg.renormalize`), or, non-negative,
    the EM on the support from ``w`` (already at its fixed point to about 1e-7: a few iterations). Returns
    ``(w, w'Cw)``."""
    if not nonneg:
        return renormalize(exact, w)
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


def _check_params(est_params: dict, D: int, N_rank_bound: int, shape=None):
    p = est_params
    L = check_n_components(
        p["n_components"],
        N_rank_bound + 1,
        D,
        high=max(N_rank_bound, 1),
        why="the rank of the covariance: n_samples - 1 for centred data, at most n_features",
        shape=shape,
    )
    ks = check_cardinality(p["cardinality"], D, L)
    orth = p["orthogonality"]
    if orth not in _ORTHOGONALITY:
        raise ValueError(f"orthogonality must be one of {_ORTHOGONALITY}; got {orth!r}.")
    min_angle = p["min_angle_deg"]
    if min_angle is not None:
        if orth != "quasi":
            raise ValueError("min_angle_deg is used only with orthogonality='quasi'.")
        min_angle = check_real(min_angle, "min_angle_deg", low=0.0, high=90.0, low_inclusive=False)
    penalty = check_real(p["penalty"], "penalty", low=0.0, low_inclusive=False)
    tol = check_real(p["tol"], "tol", low=0.0, high=1.0, low_inclusive=False)
    max_iter = check_int(p["max_iter"], "max_iter", low=1)
    init = _check_init(p["init"], D, L)
    if p["n_restarts"] is not None:
        check_int(p["n_restarts"], "n_restarts", low=1)
    return L, ks, orth, min_angle, penalty, tol, max_iter, init
