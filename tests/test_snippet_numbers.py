"""The numbers the user guide shows come from its examples: every ``>>>`` example of ``docs/user_guide/``
runs as a doctest (the README's are compared in ``tests/test_readme.py``)."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "user_guide"
PAGES = sorted(p for p in GUIDE.glob("*.rst") if ">>>" in p.read_text(encoding="utf-8"))


def test_the_guide_has_examples_with_numbers():
    assert any(p.name == "certificate.rst" for p in PAGES)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_user_guide_examples_give_the_numbers_shown(page):
    result = doctest.testfile(
        str(page),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
        report=True,
        verbose=False,
    )
    assert result.attempted > 0 and result.failed == 0, f"{page.name}: {result}"
