"""The one switch of the exact shortcuts: code paths that compute what a paper's algorithm computes, to
round-off, for less work (a screened product, a Lanczos eigenpair certified against the dense one, a
product through a support, a fused kernel, a choice of operator).

Each is taken only where :data:`enabled` is true (the default); inside ``with off():`` every family runs its
algorithm as written, so that ``tests/test_shortcuts.py`` can check that the two give the same result.
Approximate speedups (float32 products whose result is recomputed or finished in float64) are not exact
shortcuts and are listed apart in ``docs/notes/2026-12-03-shortcuts.md``. Private: the switch is for the
tests and for measuring the shortcuts' gain, not part of the API. It is a module flag, so it holds for
every thread of the process while set. Imports nothing from ``repro``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

#: Whether the exact shortcuts may be taken: true unless inside :func:`off`. Read as an attribute
#: (``_shortcuts.enabled``) where a shortcut is chosen, so a fit's path enters no function of this module.
enabled = True


@contextmanager
def off() -> Iterator[None]:
    """Within the block every family runs its algorithm without its exact shortcuts; restored on exit."""
    global enabled
    before = enabled
    enabled = False
    try:
        yield
    finally:
        enabled = before
