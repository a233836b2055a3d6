"""Plain-NumPy twins of every Numba kernel, written for clarity, not speed.

Each kernel in ``repro/kernels/`` has a function here with the same name and signature; the tests
compare the two on a fixed and a seeded random case. Sections are per kernel module.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import sqrtm


# --------------------------------------------------------------------------- repro.em_pca._kernels
def rank1_mstep(a, g, r, q, q_new):
    """Twin of ``repro.em_pca._kernels.rank1_mstep``: ``C_new = a r / g``, its unit direction and norm, and
    the sine of the angle to ``q`` from the projection residual ``|q - q_new (q_new'q)|``."""
    c_new = a * r / g
    r_new = float(np.linalg.norm(c_new))
    q_new[:] = c_new / r_new
    sin_angle = float(np.linalg.norm(q - q_new * (q_new @ q)))
    return r_new, min(sin_angle, 1.0)


def centred_rank1_pass(X, mean, q, u, a):
    """Twin of ``repro._linalg_kernels.centred_rank1_pass``: ``u = (X - mean) q``, ``a = (X - mean)' u``,
    returns ``u'u``."""
    Y = X - mean
    u[:] = Y @ q
    a[:] = Y.T @ u
    return float(u @ u)


def missing_estep(Yfill, B, C, CtC, mu, miss_ptr, miss_idx, X, fill_colsum):
    """Twin of ``repro.em_pca._kernels.missing_estep``: per row, least squares on the observed coordinates
    (``numpy.linalg.lstsq``, minimum norm), then fill the missing ones with ``mu + C x``. ``B`` and ``CtC``
    are not needed here (the kernel uses them to avoid recomputing products)."""
    n, p = Yfill.shape
    fill_colsum[:] = 0.0
    sse = 0.0
    for i in range(n):
        miss = np.zeros(p, dtype=bool)
        miss[miss_idx[miss_ptr[i] : miss_ptr[i + 1]]] = True
        obs = ~miss
        r = Yfill[i, obs] - mu[obs]
        x = np.linalg.lstsq(C[obs], r, rcond=1e-12)[0]
        X[i] = x
        sse += float(np.sum((r - C[obs] @ x) ** 2))
        Yfill[i, miss] = mu[miss] + C[miss] @ x
        fill_colsum[miss] += Yfill[i, miss]
    return sse


def ppca_missing_estep(Yfill, B, C, CtC, mu, eps, miss_ptr, miss_idx, Xt, Stot, Hmiss):
    """Twin of ``repro.em_pca._kernels.ppca_missing_estep``: per row, the Gaussian posterior of ``x`` given
    the observed coordinates with ``numpy.linalg.inv``, the log-density from ``slogdet`` of the observed
    ``C_O C_O' + eps I`` (p x p, no lemmas), and the sums ``E[x~ x~']`` over all rows and per missing column.
    ``B`` and ``CtC`` are not needed here."""
    n, p = Yfill.shape
    k = C.shape[1]
    ll = 0.0
    for i in range(n):
        miss = np.zeros(p, dtype=bool)
        miss[miss_idx[miss_ptr[i] : miss_ptr[i + 1]]] = True
        obs = ~miss
        Co = C[obs]
        r = Yfill[i, obs] - mu[obs]
        Minv = np.linalg.inv(Co.T @ Co + eps * np.eye(k))
        x = Minv @ Co.T @ r
        cov = Co @ Co.T + eps * np.eye(int(obs.sum()))
        ll += -0.5 * (obs.sum() * np.log(2 * np.pi) + np.linalg.slogdet(cov)[1] + r @ np.linalg.solve(cov, r))
        xt = np.r_[x, 1.0]
        E = np.outer(xt, xt)
        E[:k, :k] += eps * Minv
        Xt[i] = xt
        Stot += E
        Hmiss[miss] += E
    return ll


# --------------------------------------------------------------------------- repro.nspca._kernels
def solve_depressed_cubic(P, Q):
    """Twin of ``repro.nspca._kernels.solve_depressed_cubic``: real roots of ``y^3 + P y + Q`` from
    ``numpy.roots`` (companion-matrix eigenvalues), ascending, repeated roots merged."""
    roots = np.roots([1.0, 0.0, P, Q])
    scale = max(np.sqrt(abs(P)), np.cbrt(abs(Q)), 1e-300)
    real = np.sort(roots[np.abs(roots.imag) <= 1e-6 * scale].real)
    merged = []
    for r in real:
        if merged and abs(r - merged[-1]) <= 1e-6 * scale:
            merged[-1] = 0.5 * (merged[-1] + r)
        else:
            merged.append(float(r))
    if not merged:  # a double root numpy split into a complex pair: take the real parts
        merged = [float(roots[np.argmin(np.abs(roots.imag))].real)]
    out = [*merged, np.nan, np.nan, np.nan][:3]
    return len(merged), out[0], out[1], out[2]


def _quartic(x, c1, c2, alpha):
    # Zass & Shashua (2006), Eq. 4 without the constant
    return -alpha / 4.0 * x**4 + c2 / 2.0 * x**2 + c1 * x


def nspca_argmax(c1, c2, alpha, x_cur):
    """Twin of ``repro.nspca._kernels.nspca_argmax``: evaluate Eq. 4 at zero and at every non-negative real
    root of Eq. 5 from ``numpy.roots``; keep ``x_cur`` unless a candidate is better by more than a tie."""
    if not (np.isfinite(c1) and np.isfinite(c2) and np.isfinite(alpha)) or alpha <= 0:
        return np.nan
    roots = np.roots([-alpha, 0.0, c2, c1])
    scale = max(np.sqrt(abs(c2) / alpha), np.cbrt(abs(c1) / alpha), 1e-300)
    cands = [0.0] + [float(r.real) for r in roots if abs(r.imag) <= 1e-6 * scale and r.real > 0]
    vals = [_quartic(x, c1, c2, alpha) for x in cands]

    def tie(x):  # 0 vs a positive value: within 1e-12 of the terms' size they tie (the kernel's rule)
        return 1e-12 * (alpha / 4.0 * x**4 + abs(c2) / 2.0 * x**2 + abs(c1) * abs(x))

    best, best_v = 0.0, vals[0]
    for x, v in zip(cands[1:], vals[1:], strict=True):
        if v > best_v + tie(x):
            best, best_v = x, v
    slack = tie(max(x_cur, best)) if (x_cur == 0.0) != (best == 0.0) else 0.0  # only 0 vs positive
    if _quartic(x_cur, c1, c2, alpha) >= best_v - slack:
        return x_cur
    return best


def nspca_objective(U, AU, G, alpha, beta):
    """Twin of ``repro.nspca._kernels.nspca_objective``: Eq. 3 with the caches recomputed from U and AU."""
    k = U.shape[1]
    E = np.eye(k) - U.T @ U
    return float(0.5 * np.sum(U * AU) - alpha / 4.0 * np.sum(E * E) - beta * U.sum())


def _coefficients(A, U, r, s, alpha, beta):
    # c1, c2 of Eq. 4 exactly as printed in the paper (u_is = entry s of column i), O(dk)
    d, k = U.shape
    others = [i for i in range(k) if i != r]
    not_s = np.arange(d) != s
    c1 = A[s, not_s] @ U[not_s, r] - beta
    for i in others:
        c1 -= alpha * np.sum(U[not_s, r] * U[not_s, i]) * U[s, i]
    c2 = A[s, s] + alpha - alpha * np.sum(U[not_s, r] ** 2) - alpha * sum(U[s, i] ** 2 for i in others)
    return c1, c2


def nspca_sweep(A, U, AU, G, alpha, beta, block):
    """Twin of ``repro.nspca._kernels.nspca_sweep``: one sequential sweep (rows s outer, columns r inner)
    with c1, c2 recomputed from U by the paper's formulas for every entry; the caches are then recomputed.
    ``block`` only changes the kernel's bookkeeping, not the iterates."""
    d, k = U.shape
    n_changed = 0
    for s in range(d):
        for r in range(k):
            c1, c2 = _coefficients(A, U, r, s, alpha, beta)
            x = nspca_argmax(c1, c2, alpha, U[s, r])
            if not np.isfinite(x):
                return s * k + r, n_changed
            if x != U[s, r]:
                n_changed += 1
                U[s, r] = x
    AU[:] = A @ U
    G[:] = U.T @ U
    return -1, n_changed


def nspca_fit(A, U0, alpha, beta, max_iter, tol, block, refresh):
    """Twin of ``repro.nspca._kernels.nspca_fit``: sweeps of :func:`nspca_sweep`, same stopping rule."""
    U = U0.copy()
    AU = A @ U
    G = U.T @ U

    def stats():
        E = np.eye(U.shape[1]) - G
        return nspca_objective(U, AU, G, alpha, beta), float(np.sqrt(np.sum(E * E))), int(np.count_nonzero(U))

    obj, ovl, l0 = [], [], []
    for lst, v in zip((obj, ovl, l0), stats(), strict=True):
        lst.append(v)
    status, it = 0, 0
    while it < max_iter:
        bad, n_changed = nspca_sweep(A, U, AU, G, alpha, beta, block)
        it += 1
        if bad >= 0:
            status = -(1 + bad)
            break
        for lst, v in zip((obj, ovl, l0), stats(), strict=True):
            lst.append(v)
        if n_changed == 0 or abs(obj[-1] - obj[-2]) <= tol * max(abs(obj[-1]), 1e-300):
            status = 1
            break
    return U, np.array(obj), np.array(ovl), np.array(l0, dtype=np.int64), it, status


# --------------------------------------------------------------------------- repro.baselines._gspca_kernels
def bordered_max_eig(lam, Z, a):
    """Twin of ``repro.baselines._gspca_kernels.bordered_max_eig``: ``eigvalsh`` of each bordered matrix
    ``[[diag(lam), z], [z', a]]``."""
    m, n = Z.shape
    out = np.empty(n)
    for j in range(n):
        M = np.zeros((m + 1, m + 1))
        M[:m, :m] = np.diag(lam)
        M[:m, m] = M[m, :m] = Z[:, j]
        M[m, m] = a[j]
        out[j] = np.linalg.eigvalsh(M)[-1]
    return out


def deleted_max_eig(lam, V, candidates):
    """Twin of ``repro.baselines._gspca_kernels.deleted_max_eig``: rebuild ``S = V diag(lam) V'`` and take
    ``eigvalsh`` of ``S`` without each candidate's row and column."""
    S = (V * lam) @ V.T
    out = np.empty(len(candidates))
    for t, i in enumerate(candidates):
        keep = np.arange(S.shape[0]) != i
        out[t] = np.linalg.eigvalsh(S[np.ix_(keep, keep)])[-1]
    return out


# --------------------------------------------------------------------------- repro.em_sparse_pca._kernels
def kth_largest(a, n, k):
    """Twin of ``repro.em_sparse_pca._kernels.kth_largest``: sort descending and index (``a`` untouched)."""
    return float(np.sort(np.asarray(a[:n]))[::-1][k - 1])


def constrained_mstep(wstar, K, nonneg, excluded, out, work):
    """Twin of ``repro.em_sparse_pca._kernels.constrained_mstep``: Sigg & Buhmann (2008), Algorithm 2 as
    printed -- sort the magnitudes, then for k = 1..K add ``s_k - s_(k+1)`` to elements 1..k, permute back,
    restore the signs, normalize. Eq. 17: negative entries (and Eq. 19: excluded ones) count as zero.

    Ties at the K-th place (``s_K = s_(K+1)``) are broken by index: the stable sort puts the tied entries
    of lowest index first, the first K are kept, and ``s_(K+1)`` in the loop is replaced by the largest
    magnitude strictly below ``s_K`` (so the K-th kept entry is not zero)."""
    D = wstar.shape[0]
    v = np.where(np.asarray(excluded, dtype=bool), 0.0, wstar)
    mag = np.where(v > 0, v, 0.0) if nonneg else np.abs(v)
    order = np.argsort(-mag, kind="stable")
    s = np.append(mag[order], 0.0)  # s_(D+1) = 0
    Kc = min(K, D)
    if Kc < D and s[Kc] == s[Kc - 1] and s[Kc] > 0:  # a tie at the boundary
        below = s[s < s[Kc - 1]]
        s[Kc] = below.max() if below.size else 0.0
    w_sorted = np.zeros(D)
    for k in range(1, Kc + 1):
        w_sorted[:k] += s[k - 1] - s[k]
    w = np.zeros(D)
    w[order] = w_sorted
    w *= np.sign(v)
    w[mag == 0] = 0.0
    norm = float(np.linalg.norm(w))
    out[:] = w / norm if norm > 0 else 0.0
    return norm


def mstep_threshold(wstar, K, nonneg, excluded, work, hint):
    """Twin of ``repro.em_sparse_pca._kernels.mstep_threshold``: the (K+1)-th largest candidate magnitude by
    sorting (0 when at most K candidates); the hint only speeds up the kernel and is ignored here."""
    v = np.where(np.asarray(excluded, dtype=bool), 0.0, wstar)
    mag = np.where(v > 0, v, 0.0) if nonneg else np.abs(v)
    cand = np.sort(mag[mag > 0])[::-1]
    return float(cand[K]) if K < cand.size else 0.0


def em_update(f, K, nonneg, excluded, w, work, state):
    """Twin of ``repro.em_sparse_pca._kernels.em_update``: Algorithm 2 on ``f`` (= ``X'y``, the positive
    factor ``1/h`` cancels), then ``|w_new' w|`` and the copy; ``state[0]`` receives the threshold."""
    wnew = np.empty_like(w)
    norm = constrained_mstep(f.copy(), K, nonneg, excluded, wnew, work)
    state[0] = mstep_threshold(f, K, nonneg, excluded, work, 0.0)
    if norm == 0:
        w[:] = 0.0
        return 0.0, 0.0
    c = abs(float(wnew @ w))
    w[:] = wnew
    return norm, c


# --------------------------------------------------------------------------- repro.gsppca (no kernel)
def gsppca_vem_naive(X, M, u, alpha, s2, n_iter, fix_s2=False):
    """Twin of ``repro.gsppca.vem_iterations``, written as Proposition 1 reads: one ``d x d``
    inverse per variable for ``S_k``, sums over ``i`` and ``k`` as loops, and the M-step (Eqs. 12-14, with the
    corrections of the module docstring). Starts from ``S_k = 0``. Returns ``u, M, alpha, s2, F`` (the
    free energy after each iteration). ``fix_s2``: the noise variance held at ``s2`` (Eq. 13 skipped)."""
    n, p = X.shape
    d = M.shape[1]
    S = [np.zeros((d, d)) for _ in range(p)]
    F = []
    for _ in range(n_iter):
        EWW = sum(u[k] ** 2 * (S[k] + np.outer(M[k], M[k])) for k in range(p))
        Sigma = np.linalg.inv(np.eye(d) + EWW / s2)
        Mu = np.array([Sigma @ M.T @ (u * X[i]) / s2 for i in range(n)])
        B = n * Sigma + sum(np.outer(Mu[i], Mu[i]) for i in range(n))
        S = [np.linalg.inv(np.eye(d) / alpha + u[k] ** 2 * B / s2) for k in range(p)]
        M = np.array([u[k] / s2 * S[k] @ sum(X[i, k] * Mu[i] for i in range(n)) for k in range(p)])
        a = np.array([np.trace((S[k] + np.outer(M[k], M[k])) @ B) for k in range(p)])
        b = np.array([sum(X[i, k] * M[k] @ Mu[i] for i in range(n)) for k in range(p)])
        u = np.clip(b / a, 0.0, 1.0)
        resid = sum(
            (
                X[i, k] ** 2
                - 2 * u[k] * X[i, k] * M[k] @ Mu[i]
                + u[k] ** 2 * np.trace((S[k] + np.outer(M[k], M[k])) @ (Sigma + np.outer(Mu[i], Mu[i])))
            )
            for i in range(n)
            for k in range(p)
        )
        if not fix_s2:
            s2 = resid / (n * p)
        alpha = sum(np.trace(S[k] + np.outer(M[k], M[k])) for k in range(p)) / (p * d)
        # Scale step: minimize over c > 0 with u_k c <= 1 the free energy of (u_k c, m_k / c, S_k / c^2).
        for k in range(p):
            if u[k] > 0:
                e2 = np.trace(S[k] + np.outer(M[k], M[k]))
                c = min(np.sqrt(e2 / (alpha * d)), 1.0 / u[k])
                u[k], M[k], S[k] = u[k] * c, M[k] / c, S[k] / c**2
        alpha = sum(np.trace(S[k] + np.outer(M[k], M[k])) for k in range(p)) / (p * d)
        # Rotation step: y -> A y, w_k -> A^-T w_k with A = D V' B^-1/2 (B^1/2 by scipy's sqrtm), D and alpha
        # by alternating their exact minimizers until alpha is stable; then every moment transformed.
        Bh = np.real(sqrtm(B))
        C = sum(S[k] + np.outer(M[k], M[k]) for k in range(p))
        gam, V = np.linalg.eigh(Bh @ C @ Bh)
        for _ in range(200):
            D2 = ((n - p) + np.sqrt((p - n) ** 2 + 4 * gam / alpha)) / 2
            alpha = np.sum(gam / D2) / (p * d)
        A = np.diag(np.sqrt(D2)) @ V.T @ np.linalg.inv(Bh)
        Ai = np.linalg.inv(A)
        M = M @ Ai
        S = [Ai.T @ S[k] @ Ai for k in range(p)]
        Mu = Mu @ A.T
        Sigma = A @ Sigma @ A.T
        alpha = sum(np.trace(S[k] + np.outer(M[k], M[k])) for k in range(p)) / (p * d)
        # Free energy: -E log p(X, Y, W) - H(q), term by term.
        e_loglik = -0.5 * n * p * np.log(2 * np.pi * s2) - resid / (2 * s2)
        e_logy = -0.5 * n * d * np.log(2 * np.pi) - 0.5 * sum(np.trace(Sigma + np.outer(m, m)) for m in Mu)
        e_logw = -0.5 * p * d * np.log(2 * np.pi * alpha) - sum(
            np.trace(S[k] + np.outer(M[k], M[k])) for k in range(p)
        ) / (2 * alpha)
        ent = n * 0.5 * (d * np.log(2 * np.pi * np.e) + np.linalg.slogdet(Sigma)[1]) + sum(
            0.5 * (d * np.log(2 * np.pi * np.e) + np.linalg.slogdet(Sk)[1]) for Sk in S
        )
        F.append(-(e_loglik + e_logy + e_logw) - ent)
    return u, M, alpha, s2, np.array(F)


def em_update_block(F, K, nonneg, excluded, W, work, state, rows, norms, cosines):
    """Twin of ``repro.em_sparse_pca._kernels.em_update_block``: :func:`em_update` row by row."""
    for j, r in enumerate(rows):
        st = state[r : r + 1].copy()
        w = W[r].copy()
        norms[j], cosines[j] = em_update(F[j], K, nonneg, excluded, w, work, st)
        W[r] = w
        state[r] = st[0]


def support_of(w, idx):
    """Twin of ``repro.em_sparse_pca._kernels.support_of``."""
    nz = np.flatnonzero(w)
    idx[: nz.size] = nz
    return nz.size


def support_matvec(A, idx, n, w, y):
    """Twin of ``repro._linalg_kernels.support_matvec``: ``X w`` on the listed columns (``A = X``)."""
    S = idx[:n]
    y[:] = A[:, S] @ w[S]


def gather_matvec(At, idx, n, w, y):
    """Twin of ``repro.em_sparse_pca._kernels.gather_matvec``: ``X w`` on the listed columns (``At = X'``)."""
    S = idx[:n]
    y[:] = At[S].T @ w[S]


def gather_rmatvec(At, idx, n, y, out):
    """Twin of ``repro.em_sparse_pca._kernels.gather_rmatvec``: the listed entries of ``X'y``
    (``At = X'``)."""
    out[:n] = At[idx[:n]] @ y


def screen_reference(f, nonneg, excluded, top, ref):
    """Twin of ``repro.em_sparse_pca._kernels.screen_reference``."""
    if not top > 0:
        return 0
    mag = f if nonneg else np.abs(f)
    sel = np.flatnonzero(~np.asarray(excluded, dtype=bool) & (mag >= top))
    ref[: sel.size] = sel
    return sel.size


def em_update_screened(At, colnorm, K, nonneg, excluded, w, supp, ns, y, y0, f0, ref, nref, state, *_):
    """Twin of ``repro.em_sparse_pca._kernels.em_update_screened`` when it settles the step: the plain
    :func:`em_update` on the full product ``f = X'y`` (``At = X'``; no bound, no candidates), with the
    support after. Returns ``(ns_new, norm, cosine)``."""
    f = At @ y
    norm, c = em_update(f, K, nonneg, excluded, w, None, state)
    return int(np.count_nonzero(w)), norm, c


def em_sparse_pca_run(C, w0, K, nonneg, excluded, tol, max_iter):
    """Twin of one EM run of ``repro.em_sparse_pca`` on a covariance matrix ``C``: ``f = C w``, the
    Algorithm 2 step, stop at ``|w(t+1)' w(t)| > 1 - tol``. Returns ``(w, n_iter)`` (zeros on collapse)."""
    w = np.asarray(w0, dtype=float).copy()
    out = np.empty_like(w)
    for t in range(max_iter):
        f = C @ w
        if not float(w @ f) > 0:
            return np.zeros_like(w), t
        if constrained_mstep(f, K, nonneg, excluded, out, None) == 0:
            return np.zeros_like(w), t + 1
        c = abs(float(out @ w))
        w = out.copy()
        if c > 1.0 - tol:
            return w, t + 1
    return w, max_iter


def em_rows(C, W0, K, nonneg, excluded, tol, max_iter, stop_cos=0.0, patience=0):
    """Twin of ``repro.em_sparse_pca._kernels.em_rows_matrix`` / ``em_rows_data`` on ``C`` (``X'X`` for
    the screened one): each row's whole EM run (``f = C w``, Algorithm 2 on ``f``) with the stops
    ``|w(t+1)' w(t)| > 1 - tol`` (status 0), ``max_iter`` iterations (status 1), and with ``patience > 0``
    the support unchanged for ``patience`` iterations in a row while ``|w(t+1)' w(t)| > stop_cos``
    (status 0); a row whose ``w'Cw`` is not positive, or whose M-step is the zero vector, stops with
    status 2. Returns ``(W, n_iter, status, hist, first)``: ``hist[r]`` the ``w'Cw`` before each
    iteration, ``first[r] = C w0``."""
    W = np.array(W0, dtype=float)
    R, D = W.shape
    n_iter, status = np.zeros(R, dtype=int), np.full(R, -1)
    hist, first = [[] for _ in range(R)], np.full((R, D), np.nan)
    for r in range(R):
        w, stable = W[r].copy(), 0
        for t in range(max_iter):
            f = C @ w
            h = float(w @ f)
            hist[r].append(h)
            if t == 0:
                first[r] = f
            if not h > 0:
                status[r] = 2
                break
            out = np.empty(D)
            norm = constrained_mstep(f, K, nonneg, excluded, out, None)
            n_iter[r] = t + 1
            if norm == 0:
                status[r] = 2
                break
            c = abs(float(out @ w))
            stable = stable + 1 if np.array_equal(out != 0, w != 0) else 0
            w = out
            if c > 1.0 - tol or (patience and stable >= patience and c > stop_cos):
                status[r] = 0
                break
        else:
            status[r] = 1
        W[r] = w
    return W, n_iter, status, hist, first


# --------------------------------------------------------------------------- repro.spannogram._kernels
def _side_order(a, nonneg, sgn):
    """Indices of the positive ``sgn * a`` (or non-zero ``|a|``) by decreasing value, ties by index."""
    v = np.abs(a) if not nonneg else sgn * a
    idx = np.flatnonzero(v > 0)
    return idx[np.lexsort((idx, -v[idx]))]


def rank1_solve(a, k, nonneg, x, work):
    """Twin of ``repro.spannogram._kernels.rank1_solve``: sort each side (ties by index), keep the k first,
    the side with the larger ``||a_I||^2`` (the positive side on a tie)."""
    best = (-1.0, None)
    for sgn in (1.0, -1.0) if nonneg else (1.0,):
        idx = _side_order(a, nonneg, sgn)[:k]
        val = float(np.sum(a[idx] ** 2))
        if val > best[0]:
            best = (val, idx, sgn)
    val, idx, sgn = best
    x[:] = 0.0
    if val > 0:
        x[idx] = (a[idx] if not nonneg else sgn * a[idx]) / np.sqrt(val)
    return val, len(idx)


def sorted_side(a, nonneg, sgn, kmax, order, vals, work, idx):
    """Twin of ``repro.spannogram._kernels.sorted_side``: a full sort by (value desc, index)."""
    o = _side_order(a, nonneg, sgn)[:kmax]
    order[: o.size] = o
    return o.size


def allk_pass(V, C, kmax, nonneg, best_val, best_f, best_sample, best_sign):
    """Twin of ``repro.spannogram._kernels.allk_pass``: per sample and side, cumulative sums over the sorted
    entries give ``||V'x_k||^2`` and ``s_k`` for every k; past the last positive entry they stay constant."""
    for s, c in enumerate(C):
        a = V @ c
        for sgn in (1.0, -1.0) if nonneg else (1.0,):
            o = _side_order(a, nonneg, sgn)[:kmax]
            if o.size == 0:
                continue
            s2 = np.cumsum(a[o] ** 2)
            U = np.cumsum(a[o, None] * V[o], axis=0)
            val = np.sum(U**2, axis=1) / s2
            pad = kmax - o.size
            val = np.concatenate([val, np.full(pad, val[-1])])
            s2 = np.concatenate([s2, np.full(pad, s2[-1])])
            better = val > best_val
            best_val[better] = val[better]
            best_sample[better] = s
            best_sign[better] = 1 if sgn > 0 else -1
            best_f[:] = np.maximum(best_f, s2)


def sweep2(V, kmax, best_val, best_phi):
    """Twin of ``repro.spannogram._kernels.sweep2`` without the kinetic sort: every intersection angle of two
    of the ``n + 1`` curves (zero row included) is computed and sorted; on each arc between consecutive
    angles the top-k positive set is read at the arc's midpoint and ``c'S c`` maximized in closed form
    (eigen-angle if inside the arc, else the better end). O(n^3). Returns the number of angles."""
    n = V.shape[0]
    W = np.vstack([V, np.zeros((1, 2))])
    angles = [0.0, 2 * np.pi]
    for i in range(n + 1):
        for j in range(i + 1, n + 1):
            a, b = W[i] - W[j]
            if a == 0 and b == 0:
                continue
            t = (-np.arctan2(b, a)) % np.pi  # a sin + b cos = 0
            angles += [t, t + np.pi]
    angles = np.unique(np.clip(angles, 0.0, 2 * np.pi))
    best_val[:] = -np.inf
    import itertools

    for lo, hi in itertools.pairwise(angles):
        mid = 0.5 * (lo + hi)
        v = W[:n] @ np.array([np.sin(mid), np.cos(mid)])
        order = _side_order(v, True, 1.0)
        for k in range(1, kmax + 1):
            idx = order[:k]
            S = W[idx].T @ W[idx]
            # maximize c'Sc on [lo, hi]: eigen-angles and the ends
            u = np.linalg.eigh(S)[1][:, -1]
            cands = [lo, hi]
            for phi in (np.arctan2(u[0], u[1]) % np.pi, np.arctan2(u[0], u[1]) % np.pi + np.pi):
                if lo <= phi <= hi:
                    cands.append(phi)
            for phi in cands:
                c = np.array([np.sin(phi), np.cos(phi)])
                g = c @ S @ c
                if g > best_val[k - 1]:
                    best_val[k - 1] = g
                    best_phi[k - 1] = phi
    return len(angles)


def lanczos_top(A, v0, max_steps, tol, out):
    """Twin of repro._linalg_kernels.lanczos_top: Lanczos with full reorthogonalization (twice), the
    largest Ritz pair of the tridiagonal after each step, stop at residual <= tol ||A||_F."""
    n = A.shape[0]
    m = min(max_steps, n)
    nv = np.linalg.norm(v0)
    if not nv > 0 or m < 1:
        return 0.0, -1.0, 0
    Q = [v0 / nv]
    anorm = np.linalg.norm(A)
    alpha, beta = [], []
    eps = np.finfo(float).eps
    for j in range(m):
        w = A @ Q[j]
        alpha.append(w @ Q[j])
        w = w - alpha[j] * Q[j] - (beta[j - 1] * Q[j - 1] if j else 0.0)
        B = np.array(Q)
        for _ in range(2):
            w = w - B.T @ (B @ w)
        beta.append(np.linalg.norm(w))
        T = np.diag(alpha) + np.diag(beta[:-1], 1) + np.diag(beta[:-1], -1)
        ev, Y = np.linalg.eigh(T)
        r = beta[j] * abs(Y[j, j])
        done = r <= tol * anorm or beta[j] <= eps * anorm
        if done or j == m - 1:
            x = Y[:, j] @ B
            out[:] = x / np.linalg.norm(x)
            return ev[j], (r if done else -1.0), j + 1
        Q.append(w / beta[j])
    return ev[-1], -1.0, m


def centred_scaled(X, mean, c, out, sumsq):
    """Twin of repro._linalg_kernels.centred_scaled: (X - mean) / c (unless out is 0 x 0) and its squared
    column norms."""
    A = np.subtract(X, mean)
    np.divide(A, c, out=A)
    if out.shape[0] == X.shape[0]:
        out[:] = A
    sumsq[:] = np.einsum("ij,ij->j", A, A)


def centred_float32(X, mean, c, scale, out):
    """Twin of repro._linalg_kernels.centred_float32: the centred copy, scaled, into float32."""
    A = np.subtract(X, mean)
    np.divide(A, c, out=A)
    np.multiply(A, scale, out=out, casting="same_kind")


def top_support(f, K, nonneg, excluded, work, idx):
    """Twin of repro.em_sparse_pca._kernels.top_support: a stable sort of the candidates by decreasing
    magnitude (ties: lower index first), the first K, in increasing index order."""
    a = np.where(excluded, 0.0, np.maximum(f, 0.0) if nonneg else np.abs(f))
    cand = np.flatnonzero(a > 0)
    keep = np.sort(cand[np.argsort(-a[cand], kind="stable")[:K]])
    idx[: keep.size] = keep
    return keep.size


# --------------------------------------------------------------------- SSPCA (repro.baselines._sspca_kernels)
def _group_soft_threshold(Z, t):
    # rows within a relative 1e-12 above t tie with t: zero (repro._ties.TIE_RTOL, as the kernel)
    norms = np.sqrt(np.einsum("ij,ij->i", Z, Z))
    scale = np.where(norms > t * (1.0 + 1e-12), 1.0 - t / np.where(norms > 0, norms, 1.0), 0.0)
    return Z * scale[:, None]


def _sspca_objective(X, U, V, alpha):
    R = X - U @ V.T
    return 0.5 * float(np.einsum("ij,ij->", R, R)) + alpha * float(np.sqrt(np.einsum("ij,ij->i", V, V)).sum())


def _sspca_u_step(X, U, V):
    XV = X @ V
    G = V.T @ V
    d = U.shape[1]
    for k in range(d):
        vk2 = G[k, k]
        if vk2 <= 0:
            continue
        # R_k v_k = X v_k - sum_{l != k} u_l (v_l'v_k)
        r = XV[:, k] - U @ G[:, k] + U[:, k] * vk2
        u = r / vk2
        nu = np.linalg.norm(u)
        U[:, k] = u / max(1.0, nu)
    return U


def _sspca_v_step(X, U, V, alpha, max_inner, tol):
    """FISTA on ``V`` with ``U`` fixed, monotone variant (a plain proximal step when momentum fails)."""
    G = U.T @ U
    L = float(np.linalg.eigvalsh(G)[-1])
    if L <= 0:
        return np.zeros_like(V)
    XtU = X.T @ U

    def f_smooth_grad(W):
        return W @ G - XtU

    def obj(W):
        return (
            0.5 * float(np.einsum("ij,jk,ik->", W, G, W))
            - float(np.einsum("ij,ij->", W, XtU))
            + alpha * float(np.sqrt(np.einsum("ij,ij->i", W, W)).sum())
        )

    Y, t = V.copy(), 1.0
    f_old = obj(V)
    for _ in range(max_inner):
        V_new = _group_soft_threshold(Y - f_smooth_grad(Y) / L, alpha / L)
        f_new = obj(V_new)
        if f_new > f_old:  # monotone FISTA: fall back on a plain proximal step from V
            V_new = _group_soft_threshold(V - f_smooth_grad(V) / L, alpha / L)
            f_new = obj(V_new)
            Y, t = V_new.copy(), 1.0
        else:
            t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
            Y = V_new + ((t - 1.0) / t_new) * (V_new - V)
            t = t_new
        change = abs(f_old - f_new)
        V, f_old = V_new, f_new
        if change <= tol * max(1.0, abs(f_new)):
            break
    return V


def sspca_run(X, alpha, U, V, max_iter, tol, history=None):
    """Twin of repro.baselines._sspca_kernels.sspca_run: the NumPy block-coordinate descent it replaced (U
    updated in place, a new V per step); returns (U, V, n_iter) and appends the objectives to ``history``."""
    f_old = _sspca_objective(X, U, V, alpha)
    if history is not None:
        history.append(f_old)
    n_iter = 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007
        V = _sspca_v_step(X, U, V, alpha, 50, tol * 0.1)
        U = _sspca_u_step(X, U, V)
        f = _sspca_objective(X, U, V, alpha)
        if history is not None:
            history.append(f)
        if abs(f_old - f) <= tol * max(1.0, abs(f)):
            break
        f_old = f
    return U, V, n_iter


# ---------------------------------------------------------------- Bessel ratio (repro.gsppca._kernels)
def kv_ratio_up(z, r0, nu0, steps, out):
    """Twin of repro.gsppca._kernels.kv_ratio_up: R_nu = 1 / R_(nu-1) + 2 nu / z, element by element."""
    for i in range(z.size):
        r, nu = r0[i], nu0[i]
        for _ in range(int(steps[i])):
            nu += 1.0
            r = 1.0 / r + 2.0 * nu / z[i]
        out[i] = r


# ---------------------------------------------------------------- repro._sparse_kernels
def compressed_matmat(indptr, indices, data, W):
    """Twin of repro._sparse_kernels.matmat_rows over all rows: ``out[i] = x_i W``, one NumPy dot per row."""
    out = np.zeros((indptr.size - 1, W.shape[1]))
    for i in range(indptr.size - 1):
        sl = slice(indptr[i], indptr[i + 1])
        out[i] = data[sl] @ W[indices[sl]]
    return out


def compressed_rmatmat(indptr, indices, data, Y, n_cols):
    """Twin of repro._sparse_kernels.rmatmat_rows over all rows: ``sum_i x_i' Y[i]`` by ``np.add.at``."""
    rows = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    out = np.zeros((n_cols, Y.shape[1]))
    np.add.at(out, indices, data[:, None] * Y[rows])
    return out


def gather_columns(indptr, indices, data, idx):
    """Twin of repro._sparse_kernels.gather_columns: the columns ``idx`` of the compressed rows, dense."""
    out = np.zeros((indptr.size - 1, len(idx)))
    for c, j in enumerate(idx):
        for i in range(indptr.size - 1):
            sl = slice(indptr[i], indptr[i + 1])
            out[i, c] = data[sl][indices[sl] == j].sum()
    return out


def column_sums(indices, data, centre, p):
    """Twin of repro._sparse_kernels.column_sums: ``np.bincount`` of the count, values, squared deviations."""
    return (
        np.bincount(indices, minlength=p),
        np.bincount(indices, weights=data, minlength=p),
        np.bincount(indices, weights=(data - centre[indices]) ** 2, minlength=p),
    )
