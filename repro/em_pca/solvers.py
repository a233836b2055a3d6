"""EM PCA on complete data (Roweis 1997, Sec. 3): the zero-noise EM iterations.

e-step ``X = (C'C)^-1 C'Y``, m-step ``C_new = Y X'(XX')^-1``; with ``C = QR`` and one pass computing
``U = Y Q``, ``A = Y'U``, ``G = U'U`` they are ``Z = U R^-T`` and ``C_new = A G^-1 R``
(:func:`_em_complete`, any k, with the optional oversampled Rayleigh-Ritz step), and for k = 1 on in-memory
data the fused rank-one iteration (:func:`_em_rank1`, kernel :func:`repro.em_pca._kernels.rank1_mstep`).
Inputs are validated data sources (:mod:`repro._chunked`); nothing here re-checks ``X``.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from .. import _shortcuts
from ._common import _chol, _finish_history, _new_history, _ritz, _sin_orth
from ._kernels import rank1_mstep as _rank1_mstep

#: The top-k subspace change per pass below which the oversampled EM on a large array stops using float32
#: products (see :func:`_em_complete`): 100x float32's subspace round-off at p in the thousands.
SINGLE_UNTIL = 1e-4
#: The float32 passes give way to the float32 covariance (:meth:`repro._chunked.DenseSource.covariance32`)
#: when the passes still to come, predicted from the last two changes, exceed this many times its cost.
COVARIANCE_SWITCH = 1.2
#: The change below which it switches to float64 in any case (float32 resolves a subspace to about 1e-6 at
#: p in the thousands).
SINGLE_FLOOR = 1e-5


def _em_complete(source, C0, max_iter, tol, callback, k=None, momentum=True, single=None):
    """EM PCA on complete data (Roweis 1997, Sec. 3), any k; ``source`` provides the passes.

    ``C0`` may have more columns than the ``k`` components wanted (oversampling): the EM then runs on all
    of them and convergence is measured on the span of the top-k Rayleigh-Ritz vectors of each pass.
    Returns an orthonormal basis of the final (top-k) subspace and its Gram matrix ``(YQ)'(YQ)``.

    Oversampled, with ``momentum`` (the default): the block iteration with momentum of Xu et al. (2018),
    ``Q_{t+1} R_{t+1} = Y'Y Q_t - beta_t Q_{t-1} R_t^-1``, i.e. ``span Q_t = p_t(Y'Y) span Q_0`` with the
    three-term recurrence ``p_{t+1}(x) = x p_t(x) - beta_t p_{t-1}(x)``: eigen-directions with ``l <= c``
    (``c = 2 sqrt(beta)``) are damped to ``(c/2)^t`` and those above grow as
    ``((l + sqrt(l^2 - c^2))/2)^t``, so the top k separate from the directions below the cut at rate
    ``c / (l_k + sqrt(l_k^2 - c^2))`` instead of the plain ``l_{k+s+1}/l_k`` (a Chebyshev-like filter). The
    cut is the smallest Ritz value of the block (below ``l_{k+s}``, an estimate of the largest direction
    the block does not hold, as in Chebyshev-filtered subspace iteration), capped at half the k-th Ritz
    value so that the wanted directions always outgrow the damped ones (worst rate 0.27, when a gap right
    after the block makes the plain rate smaller). The fixed point is unchanged: an invariant subspace
    maps into itself, ``Q_{t-1} R_t^-1`` included, and the Rayleigh-Ritz step then returns the exact
    eigenvectors. ``momentum=False`` is the plain block EM.

    Oversampled on a large in-memory array (walked by row blocks, :class:`repro._chunked.DenseSource`):
    the early passes multiply in float32 (about 0.7x the time of a float64 pass), until the top-k
    subspace moves by less than ``max(SINGLE_UNTIL, 10 tol)`` per pass and either two more passes at the
    observed rate should reach ``tol``, or it moves by less than ``SINGLE_FLOOR``, or the rate exceeds 0.8
    (all far above float32's round-off, a subspace error of about 1e-6); from then on every pass is
    float64, and the
    stopping test counts only a change between two float64 passes, so the result is exact to ``tol`` as
    without them. A run stopped on a float32 pass (by ``callback`` or ``max_iter``) gets one float64 pass
    more, so that the returned Ritz vectors and values are those of its subspace in float64.
    On an in-memory source, a float64 pass whose change, extrapolated from the last two at their ratio,
    should fall below ``tol / 2`` computes ``G = (YQ)'(YQ)`` first (one product instead of two) and ``A``
    only when it does not stop after all (the pass is then made in full): the iterates and the result are
    the same, the last pass costs about half.
    Where the source offers a float32 covariance (``covariance_passes``: its cost in float32 passes,
    :meth:`repro._chunked.DenseSource.covariance32`) and, from the fourth pass on, the float32 passes still
    to come (predicted from the last two changes, until ``max(SINGLE_FLOOR, tol)``) exceed
    :data:`COVARIANCE_SWITCH` times that cost, ``Y'Y`` is formed in float32 once and the float32 iterations
    run on it (``p^2 k`` per iteration instead of a pass); the switch to float64 passes is as above.
    ``single``: None (the default) for float32 early passes where they apply, False for none.
    """
    n, ss = source.n, source.ss
    k_fit = C0.shape[1]
    k = k_fit if k is None else k
    C = C0
    Q, R = np.linalg.qr(C)
    hist = _new_history()
    change = math.nan
    Qk_prev = None
    P = None  # Q_{t-1} R_t^-1 (the momentum term), None when not usable
    # float32 early passes: oversampled, on a DenseSource walked by blocks
    single = single is None and k < k_fit and getattr(source, "blocked", False)
    single_until = max(SINGLE_UNTIL, 10.0 * tol)
    prev_single = True  # whether the previous pass was float32 (none before the first pass)
    prev_change = math.nan
    # in-memory sources only; an exact shortcut (the same iterates), off with repro._shortcuts.off()
    gram = getattr(source, "gram", None) if k < k_fit and _shortcuts.enabled else None
    # the float32 covariance replaces the float32 passes when they are predicted to cost more than it
    cov_passes = source.covariance_passes(k_fit) if single else np.inf  # (single: a blocked DenseSource)
    M = None
    n_iter = 0
    converged = False
    while True:
        ch = hist["subspace_change"]
        if (
            gram is not None
            and not (single or prev_single)
            and len(ch) >= 2
            and ch[-2] > 0.0
            and ch[-1] * (ch[-1] / ch[-2]) < 0.5 * tol
        ):
            # this pass should stop (its change extrapolated at the last rate is below tol/2): G = U'U
            # first, A = Y'U only if it does not stop (then the pass is made again in full)
            A, G = None, gram(Q)
        elif single and M is not None:  # a float32 iteration on the float32 covariance
            A, G = _matrix_products(M, Q)
        else:  # U = Y Q; A = Y'U; G = U'U
            A, G = source.products(Q, single=True) if single else source.products(Q)
        g, V = _ritz(G)
        lam = g[:k] / (n - 1)
        Ck = C
        if k < k_fit:  # oversampled: follow the top-k Ritz subspace
            if not g[k - 1] > 1e-13 * g[0]:
                _chol(
                    np.zeros((1, 1)), "Y'Y restricted to the top-k Ritz subspace"
                )  # raises, as for k = k_fit
            Ck = Qk = Q @ V[:, :k]
            if Qk_prev is not None:
                change = _sin_orth(Qk_prev, Qk)
                hist["subspace_change"].append(change)
            Qk_prev = Qk
        hist["reconstruction_error"].append(max(ss - float(g[:k].sum()), 0.0) / n)
        hist["eigenvalues"].append(lam)
        if callback is not None and callback(n_iter, Ck, lam):
            converged = True
            break
        if change < tol and not (single or prev_single):
            converged = True
            break
        if n_iter >= max_iter:
            break
        prev_single = single
        if M is None and single and len(ch) >= 4 and np.isfinite(cov_passes):
            # (ch[0] is NaN; ch[1], the change from the random start, says nothing about the rate)
            if _passes_left(change, prev_change, max(SINGLE_FLOOR, tol), max_iter - n_iter) > (
                COVARIANCE_SWITCH * cov_passes
            ):
                M = source.covariance32()
        if single and change < single_until:
            # switch to float64 when two more passes at the observed rate should reach tol (the first
            # float64 pass cannot stop), or below SINGLE_FLOOR, or when the change stalls (float32's floor)
            rho = change / prev_change
            single = not (change * rho * rho < tol or change < SINGLE_FLOOR or rho > 0.8)
        prev_change = change
        if A is None:  # the predicted stop did not come
            A = source.products(Q)[0]
        if k < k_fit:
            # oversampled block EM: span C_new = span A; orthonormalize A directly (no G^-1, so oversampled
            # columns beyond the rank of the data are harmless: the Rayleigh-Ritz step ranks them last)
            C_new = A
            if momentum:
                cut = min(g[-1], 0.5 * g[k - 1])
                if P is not None and cut > 1e-8 * g[0]:
                    C_new = A - (0.25 * cut) * (cut * P)  # (cut * cut would overflow at g near 1e155)
        else:
            # m-step C_new = Y X'(XX')^-1 = A G^-1 R  (e-step X = (C'C)^-1 C'Y = R^-1 Q'Y)
            C_new = A @ scipy.linalg.cho_solve(_chol(G, "Y'Y restricted to the current subspace"), R)
        Q_new, R = np.linalg.qr(C_new)
        if k < k_fit and momentum:
            d = np.abs(np.diag(R))
            P = (
                scipy.linalg.solve_triangular(R, Q.T, trans="T", check_finite=False).T
                if d.min() > 1e-10 * d.max()
                else None  # C_new (nearly) rank-deficient: no momentum in the next step
            )
        if k == k_fit:
            change = _sin_orth(Q, Q_new)
            hist["subspace_change"].append(change)
        C, Q = C_new, Q_new
        n_iter += 1
    if k < k_fit:
        if single:  # stopped on a float32 pass: the Rayleigh-Ritz step of its subspace in float64
            g, V = _ritz(source.products(Q)[1])
        return Q @ V[:, :k], np.diag(g[:k]), n_iter, converged, _finish_history(hist)
    return Q, G, n_iter, converged, _finish_history(hist)


def _passes_left(change: float, prev_change: float, target: float, budget: int) -> float:
    """Passes until the subspace change falls below ``target`` at the rate of the last two changes (at most
    ``budget``; ``budget`` when the change is not falling)."""
    if not change > target:
        return 0.0
    rho = change / prev_change
    if not 0.0 < rho < 1.0:
        return float(budget)
    return min(math.log(target / change) / math.log(rho), float(budget))


def _matrix_products(M, Q):
    """``(MQ, Q'MQ)``: the pass of :func:`_em_complete` on a formed covariance ``M = Y'Y``."""
    A = M @ Q
    G = Q.T @ A
    return A, 0.5 * (G + G.T)


def _em_rank1(source, c0, max_iter, tol, callback):
    """EM PCA with k = 1 on complete in-memory data (a :class:`repro._chunked.DenseSource`): per iteration
    two BLAS products (over the centred copy, or block by block for a large array) and one O(p) kernel."""
    n, p, ss = source.n, source.p, source.ss
    r = float(np.linalg.norm(c0))
    q = np.ascontiguousarray(c0 / r)
    q_new = np.empty(p)
    u = np.empty(n)
    a = np.empty(p)
    errs, eigs, changes = [], [], [math.nan]
    change = math.nan
    n_iter = 0
    converged = False
    while True:
        g = source.rank1(q, u, a)
        lam = g / (n - 1)
        errs.append(max(ss - g, 0.0) / n)
        eigs.append(lam)
        if callback is not None and callback(n_iter, (q * r)[:, None], np.array([lam])):
            converged = True
            break
        if change < tol:
            converged = True
            break
        if n_iter >= max_iter:
            break
        if not g > 0.0:
            raise ValueError("the data have zero variance along the current direction; cannot continue.")
        # m-step: C_new = a r / g (Roweis 1997, Sec. 3, with x = u / r)
        r, change = _rank1_mstep(a, g, r, q, q_new)
        changes.append(change)
        q, q_new = q_new, q
        n_iter += 1
    hist = {
        "iteration": np.arange(len(errs)),
        "subspace_change": np.array(changes[: len(errs)], dtype=float),
        "reconstruction_error": np.array(errs, dtype=float),
        "eigenvalues": np.array(eigs, dtype=float)[:, None],
    }
    return q[:, None], np.array([[g]]), n_iter, converged, hist
