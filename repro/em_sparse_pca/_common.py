"""Shared records of the sparse / non-negative EM (Sigg & Buhmann 2008): one EM run, the settings of a
component's restarts, one fitted component, and the constants of the starts and of the multi-component
strategies (:mod:`.algorithm`, :mod:`.quasi` and the door, :mod:`.estimator`, use them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_ORTHOGONALITY = ("deflation", "disjoint", "quasi")
_MAX_REDRAWS = 50  # random starts drawn to replace one that collapses to the zero vector
_RHO_MAX = 1e12  # largest relative quasi-orthogonality penalty tried
#: Starts of the default (``init=None`` -> ``"auto"``): the first principal component (both signs for
#: non-negative PCA) and random starts up to this many in all, run as one block.
DEFAULT_STARTS = 5


@dataclass
class _Run:
    w: np.ndarray
    h: float  # w'Cw on the working operator
    n_iter: int
    status: int
    history: np.ndarray  # h of every iterate, start included
    n_iter_total: int = 0  # iterations including collapsed starts that were redrawn
    mean: np.ndarray | None = None  # the run's mean (missing-value operator only)


@dataclass
class _Settings:
    nonneg: bool
    init: object  # "auto", "pc", "random" or an ndarray (D,)
    n_restarts: int
    renormalize: object  # True, False or "refine"
    tol: float
    max_iter: int
    # the support-stable stop of algorithm._em_block: False, or "stop" (EMSparsePCA with renormalize="refine")
    support_stop: object = False
    # called after every iteration of the restarts' block as callback(t, W), or None (algorithm._em_block)
    callback: object = None


@dataclass
class _Component:
    w: np.ndarray  # final (renormalized if asked)
    w_em: np.ndarray  # as EM found it
    h: float
    h_em: float
    n_iter: int
    n_iter_total: int
    status: int
    history: np.ndarray
    rho: float = 0.0
    mean: np.ndarray | None = None
    mean_em: np.ndarray | None = None
