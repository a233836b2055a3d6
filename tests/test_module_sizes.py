"""Module sizes the design keeps: a library module outside the Numba kernels at most 1,000 lines, an
experiment or benchmark module (the ones with ``compute`` / ``plot`` / ``checks``) at most 450."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIBRARY_LIMIT = 1_000
EXPERIMENT_LIMIT = 450


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _library_modules() -> list[Path]:
    return sorted(p for p in (ROOT / "repro").rglob("*.py") if "kernels" not in p.stem)


def _experiment_modules() -> list[Path]:
    found = [*(ROOT / "experiments").glob("*.py"), *(ROOT / "experiments" / "benchmarks").glob("*.py")]
    return sorted(p for p in found if not p.name.startswith("_"))


def test_the_lists_are_not_empty():
    assert len(_library_modules()) > 50 and len(_experiment_modules()) > 30


@pytest.mark.parametrize("path", _library_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_library_module_size(path):
    n = _lines(path)
    assert n <= LIBRARY_LIMIT, f"{path.relative_to(ROOT)}: {n} lines (at most {LIBRARY_LIMIT})"


@pytest.mark.parametrize("path", _experiment_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_experiment_module_size(path):
    n = _lines(path)
    assert n <= EXPERIMENT_LIMIT, f"{path.relative_to(ROOT)}: {n} lines (at most {EXPERIMENT_LIMIT})"
