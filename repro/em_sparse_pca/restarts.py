"""One component from several starts (Sigg & Buhmann 2008, Sec. 3.1): the first principal component (both
signs when non-negative) and random starts, run as one block; the best restart, after renormalization
when asked (:func:`_solve_component`).
"""

from __future__ import annotations

import numpy as np

from .._validation import as_float, check_int
from ..linalg import Covariance, canonical_sign
from ._common import _MAX_REDRAWS, _Component, _Run, _Settings
from ._kernels import COLLAPSED
from .quasi import _em_quasi
from .renormalization import _best_start_step, _refined, _renormalized
from .solvers import _draw_start, _em_block


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


def _best(runs: list[_Run]) -> tuple[_Run | None, int]:
    """The run of largest variance (first on ties) and the iterations spent by all."""
    best, total = None, 0
    for r in runs:
        total += r.n_iter_total
        if r.status != COLLAPSED and (best is None or r.h > best.h):
            best = r
    return best, total


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
        # every restart (each distinct support once); the restart kept is the best after renormalization,
        # so adding starts never lowers the result.
        seen: dict = {}
        pick = None
        for r in runs:
            if r.status == COLLAPSED:
                continue
            key = (r.w != 0).tobytes()
            if key not in seen:
                seen[key] = _renormalized(op, r, nonneg, excluded, V, rho, s)
                total += seen[key][3]
            w_r, h_r, mean_r, _ = seen[key]
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
        w_em, w = canonical_sign(w_em), canonical_sign(w)
    return _Component(w, w_em, h, h_em, best.n_iter, total, best.status, best.history, rho, mean, best.mean)


_INITS = ("auto", "pc", "random")


def _check_init(init, D: int, L: int):
    if init is None or (isinstance(init, str) and init in _INITS):
        return init
    if isinstance(init, str):
        raise ValueError(f"init must be None, 'auto', 'pc', 'random' or an array; got {init!r}.")
    arr = as_float(init, "init")
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != D or arr.shape[0] not in (1, L):
        raise ValueError(
            f"init must have shape ({D},) or ({L}, {D}) (one start per component); got {np.shape(init)}."
        )
    if not np.isfinite(arr).all():
        raise ValueError("init holds NaN or infinite values.")
    norms = np.linalg.norm(arr, axis=1)
    if (norms == 0).any():
        raise ValueError("init holds a zero vector; a start must be a non-zero direction.")
    return arr / norms[:, None]


#: Starts of the default (``init=None`` -> ``"auto"``): the first principal component (both signs for
#: non-negative PCA) and random starts up to this many in all, run as one block.
DEFAULT_STARTS = 5


def _resolve_restarts(n_restarts, init_kind: str) -> int:
    if n_restarts is None:
        return {"random": 10, "auto": DEFAULT_STARTS}.get(init_kind, 1)
    return check_int(n_restarts, "n_restarts", low=1)
