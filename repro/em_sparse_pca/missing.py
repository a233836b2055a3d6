"""Missing values for the sparse EM (Roweis 1998, Sec. 4, in the zero-noise limit; used by Sigg & Buhmann's
Algorithm 1 unchanged at the M-step).

:class:`_ObservedData`: per sample the least-squares coefficient of ``w`` on the observed coordinates, the
missing ones filled with ``mu + y w``, the mean re-estimated; one pass over the data per E-step (in memory
or chunk by chunk through :class:`repro._chunked.DaskSource`).
"""

from __future__ import annotations

import numpy as np

from .._chunked import DaskSource
from ..linalg import Covariance


class _ObservedData:
    """The data with missing entries (NaN) as an operator for the zero-noise EM (Roweis 1998, Sec. 4).

    Roweis' generalized E-step in the zero-noise limit, for one component ``w`` (and one mean ``mu`` per
    restart, estimated jointly): per sample, ``y_n`` is the least-squares coefficient of ``w`` on the
    observed coordinates, ``y_n = sum_O (x_nd - mu_d) w_d / sum_O w_d^2``; the missing ones are filled
    with ``mu_d + y_n w_d``; the mean becomes the column mean of the filled data, and the M-step sees
    ``f = Z_c' y`` with ``Z_c`` the filled data centred at the new mean (the constrained M-step then
    thresholds ``f`` exactly as for complete data). With nothing missing this is the complete-data EM:
    ``y = X_c w``, ``f = X_c' X_c w``. All of it is one pass over the data: per chunk
    (:func:`_rank1_chunk_stats`) the products ``Y'X0``, ``Y'M``, ``(Y*Y)'M`` (``X0``: the data with
    zeros at the missing entries, ``M``: the missing mask), then a small reduction.

    ``h`` (the quality of a restart) is ``(T - SSE) / (N - 1)`` with ``SSE`` the squared error on the
    observed entries and ``T`` their sum of squares about the observed column means: ``w'Cw`` when
    nothing is missing.
    """

    def __init__(self, source, *, estimate_mean: bool = True, mean=None, ddof: int = 1):
        self.source = source
        self.chunked = isinstance(source, DaskSource)
        if self.chunked:  # from the source's first pass (observed counts, means, centred sums of squares)
            nobs = source.obs_count
            colsum = nobs * source.obs_mean
            sumsq = source.obs_m2 + colsum * source.obs_mean
            self.n_samples, self.n_features = source.n, source.p
        else:
            miss = np.isnan(source)
            self.X0 = np.where(miss, 0.0, source)
            self.Mf = miss.astype(np.float64) if miss.any() else None
            self.Of = 1.0 - self.Mf if self.Mf is not None else None
            colsum, nobs = self.X0.sum(axis=0), (~miss).sum(axis=0).astype(np.float64)
            sumsq = np.einsum("ij,ij->j", self.X0, self.X0)
            self.n_samples, self.n_features = source.shape
        self.colsum, self.nobs, self.nmiss = colsum, nobs, self.n_samples - nobs
        self.obs_mean = colsum / np.maximum(nobs, 1.0)
        self.estimate_mean = estimate_mean
        self.fixed_mean = self.obs_mean if mean is None else np.asarray(mean, dtype=np.float64)
        if not estimate_mean and mean is None:
            self.fixed_mean = np.zeros(self.n_features)
        self.colsq = sumsq
        self.sumsq = sumsq = float(sumsq.sum())
        # T: squared deviations of the observed entries from the starting mean.
        m0 = self.obs_mean if estimate_mean else self.fixed_mean
        self.total = sumsq - 2.0 * float(m0 @ colsum) + float(nobs @ (m0 * m0))
        self.dof = self.n_samples - ddof
        self.mu = np.zeros((0, self.n_features))

    # ----- the interface used by _em_block
    def start(self, R: int):
        """Reset the per-restart means for a block of ``R`` restarts."""
        base = self.obs_mean if self.estimate_mean else self.fixed_mean
        self.mu = np.tile(base, (R, 1))

    def restart_row(self, r: int):
        self.mu[r] = self.obs_mean if self.estimate_mean else self.fixed_mean

    def row_mean(self, r: int) -> np.ndarray:
        return self.mu[r].copy()

    def trace(self) -> float:
        return self.total / self.dof

    def products(self, W, rows=None, *, update: bool = True, mean=None):
        """One E-step and the M-step statistics for the rows of ``W``: ``(f rows, h)`` as for a covariance."""
        W = np.ascontiguousarray(W, dtype=np.float64)
        if mean is not None:
            mu = np.tile(mean, (W.shape[0], 1))
        else:
            rows = np.arange(W.shape[0]) if rows is None else rows
            mu = self.mu[rows]
        YtX, YtM, Y2tM, sY, sYnum, _ = self._stats(mu, W)
        N = self.n_samples
        mu_new = (self.colsum + mu * self.nmiss + W * YtM) / N if self.estimate_mean else mu
        F = YtX + mu * YtM + W * Y2tM - mu_new * sY[:, None]
        sse = self.sumsq - 2.0 * (mu @ self.colsum) + (mu * mu) @ self.nobs - sYnum
        h = (self.total - sse) / self.dof
        if update and mean is None:
            self.mu[rows] = mu_new
        return F / self.dof, h

    def _stats(self, mu, W):
        if self.chunked:
            return self.source.map_sum(_rank1_chunk_stats, mu, W)
        return _rank1_stats(self.X0, self.Of, self.Mf, mu, W)

    def completed_variance(self, W, w1, mean) -> tuple[np.ndarray, float]:
        """``w'C w`` for the rows of ``W`` and ``tr C``, ``C`` the covariance of the data completed by the
        E-step of ``w1`` (missing entries filled with ``mean + y w1``); the sample covariance when
        nothing is missing. Two passes."""
        W = np.ascontiguousarray(W, dtype=np.float64)
        w1 = np.asarray(w1, dtype=np.float64)[None, :]
        mu = np.asarray(mean, dtype=np.float64)[None, :]
        _, YtM, Y2tM, _, _, _ = self._stats(mu, w1)
        N = self.n_samples
        col_sum = self.colsum + mu[0] * self.nmiss + w1[0] * YtM[0]
        col_sq = self.colsq + mu[0] ** 2 * self.nmiss + 2.0 * mu[0] * w1[0] * YtM[0] + w1[0] ** 2 * Y2tM[0]
        tr = float((col_sq - col_sum * col_sum / N).sum()) / self.dof
        mu_fill = col_sum / N
        if self.chunked:
            (q,) = self.source.map_sum(_completed_quad, mu[0], w1[0], mu_fill, W)
        else:
            X = self.X0 if self.Mf is None else np.where(self.Mf.astype(bool), np.nan, self.X0)
            (q,) = _completed_quad(X, None, mu[0], w1[0], mu_fill, W)
        return q / self.dof, tr

    def deflate(self, w, mean) -> _ObservedData:
        """The residual ``x - mean - y w`` on the observed entries (missing ones stay missing), ``y`` from the
        E-step of ``w``: projection deflation (Eq. 18) of the data, with the mean fixed from now on."""
        w = np.asarray(w, dtype=np.float64)
        mean = np.asarray(mean, dtype=np.float64)
        if self.chunked:
            src = self.source.derive(_rank1_residual, mean, w)  # the same chunks, read through the deflation
        else:
            X = np.where(self.Mf.astype(bool), np.nan, self.X0) if self.Mf is not None else self.X0
            src = _rank1_residual(X, mean, w)
        return _ObservedData(src, estimate_mean=False)

    def imputed_covariance(self) -> Covariance:
        """The covariance of the data with missing entries set to the mean (one pass); ``C`` when complete."""
        m = self.obs_mean if self.estimate_mean else self.fixed_mean
        if self.chunked:
            (G,) = self.source.map_sum(_imputed_gram, m)
        else:
            Z = self.X0 - m if self.Mf is None else np.where(self.Mf.astype(bool), 0.0, self.X0 - m)
            G = Z.T @ Z
        return Covariance._derived(0.5 * (G + G.T) / self.dof, n_samples=self.n_samples)


def _rank1_stats(X0, Of, Mf, mu, W):
    """Per chunk: the E-step of :class:`_ObservedData` and its sufficient statistics.

    ``X0`` (n x D) has zeros at the missing entries, ``Of``/``Mf`` are the observed/missing masks (None:
    nothing missing), ``mu`` and ``W`` (R x D) the restarts' means and loadings. Returns ``Y'X0``, ``Y'M``,
    ``(Y*Y)'M`` (R x D), ``sum_n y`` and ``sum_n y num`` (R,).
    """
    P = X0 @ W.T
    if Mf is None:
        num = P - np.einsum("ij,ij->i", mu, W)
        Y = num / np.einsum("ij,ij->i", W, W)
        YtM = np.zeros(W.shape)
        Y2tM = YtM
    else:
        num = P - Of @ (mu * W).T
        den = Of @ (W * W).T
        Y = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
        YtM = Y.T @ Mf
        Y2tM = (Y * Y).T @ Mf
    return Y.T @ X0, YtM, Y2tM, Y.sum(axis=0), np.einsum("ij,ij->j", Y, num), np.einsum("ij,ij->j", Y, Y)


def _rank1_chunk_stats(B, cache, mu, W):
    B = np.asarray(B, dtype=np.float64)
    miss = np.isnan(B)
    if miss.any():
        Mf = miss.astype(np.float64)
        return _rank1_stats(np.where(miss, 0.0, B), 1.0 - Mf, Mf, mu, W)
    return _rank1_stats(B, None, None, mu, W)


def _completed_quad(B, cache, mean, w, mu_fill, W):
    """Per chunk: ``sum_n ((z_n - mu_fill) . w_j)^2`` for the rows ``w_j`` of ``W``, ``z_n`` the sample
    completed by the E-step of ``w``."""
    B = np.asarray(B, dtype=np.float64)
    miss = np.isnan(B)
    Z = np.where(miss, 0.0, B)
    if miss.any():
        den = (~miss) @ (w * w)
        num = np.where(miss, 0.0, B - mean) @ w
        y = np.divide(num, den, out=np.zeros(B.shape[0]), where=den > 0)
        Z = np.where(miss, mean + np.outer(y, w), Z)
    P = (Z - mu_fill) @ W.T
    return (np.einsum("ij,ij->j", P, P),)


def _rank1_residual(B, mean, w):
    B = np.asarray(B, dtype=np.float64)
    miss = np.isnan(B)
    R = np.where(miss, 0.0, B - mean)
    den = (~miss) @ (w * w)
    y = np.divide(R @ w, den, out=np.zeros(B.shape[0]), where=den > 0)
    R -= np.outer(y, w)
    R[miss] = np.nan
    return R


def _imputed_gram(B, cache, mean):
    Z = np.asarray(B, dtype=np.float64) - mean
    Z[np.isnan(Z)] = 0.0
    return (Z.T @ Z,)
