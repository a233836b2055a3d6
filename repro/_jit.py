"""The one place for numba options.

Kernels are arrays and scalars in, arrays out; no RNG, no Python objects. Every kernel module (beside
the method it serves) does ``from repro._jit import njit``
and decorates with ``@njit``; ``cache=True`` keeps compile time out of all but the first run and
``nogil=True`` lets callers run kernels from threads. ``fastmath`` stays off: the tests compare
kernels with their NumPy twins to round-off, and reassociation would blur that. The one exception is
:func:`repro._linalg_kernels.centred_rank1_pass`, a pass over a large array whose dot products must
vectorize to keep up with memory; it allows reassociation only (``{"reassoc", "contract"}``), and its test
bounds the difference from the twin by round-off relative to the data's norm.
:func:`repro.spannogram._kernels._positive_scatter` does the same for a ``d x d`` scatter that only feeds a
bound with a round-off margin (the spannogram's all-k pass), so its order of summation changes no result.
"""

from __future__ import annotations

import numba

__all__ = ["njit"]

_OPTIONS = {"cache": True, "nogil": True, "fastmath": False, "error_model": "numpy"}


def njit(*args, **kwargs):
    """``numba.njit`` with the project's options; usable bare (``@njit``) or with a signature."""
    options = {**_OPTIONS, **kwargs}
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return numba.njit(**options)(args[0])
    return numba.njit(*args, **options)
