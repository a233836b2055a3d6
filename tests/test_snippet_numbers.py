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


def test_cluster_page_quotes_the_client_limit_in_force():
    from repro import _chunked

    text = " ".join((GUIDE / "cluster.rst").read_text(encoding="utf-8").split())
    gib = _chunked.CLIENT_LIMIT_BYTES / 2**30
    p_max = int((_chunked.CLIENT_LIMIT_BYTES / 8) ** 0.5)  # a p x p float64 matrix
    assert f"above {gib:g} GiB, ``p > {p_max}``" in text, (gib, p_max)
    assert not _chunked.client_fits(p_max + 1) and _chunked.client_fits(p_max)
