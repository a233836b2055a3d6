"""The documentation site's generated pages: API entries from ``__all__``, one gallery page per experiment.

These run without building the site (the built site is checked by ``tests/test_docs_site.py``).
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

import repro_api  # noqa: E402
import repro_gallery  # noqa: E402


def _entries(page: str) -> set[str]:
    """Names listed in the autosummary tables and submodule links of a generated API page."""
    names = set(re.findall(r"^   ([A-Za-z_][A-Za-z0-9_]*)$", page, flags=re.M))
    return names | set(re.findall(r"^- :ref:`[\w.]+\.(\w+) <api-", page, flags=re.M))


@pytest.mark.parametrize("modname", [m for m, _, _ in repro_api.MODULES])
def test_every_public_name_has_an_api_entry(modname):
    page = repro_api.render_module_page(modname, modname, "")
    missing = set(importlib.import_module(modname).__all__) - _entries(page)
    assert not missing, f"{modname}: public names without an API entry: {sorted(missing)}"


def test_every_public_submodule_and_the_loaders_have_a_page():
    pages = {m for m, _, _ in repro_api.MODULES}
    index = (ROOT / "docs" / "api" / "index.rst").read_text(encoding="utf-8")
    listed = set(re.findall(r"^   ([\w.]+)$", index, flags=re.M))
    assert pages <= listed, f"docs/api/index.rst does not list {sorted(pages - listed)}"
    import data_fetch
    import repro

    subs = {f"repro.{n}" for n in repro.__all__ if inspect.ismodule(getattr(repro, n))}
    assert subs <= pages, f"public submodules of repro without an API page: {sorted(subs - pages)}"
    loaders = {n for n in dir(data_fetch) if n.startswith("load_")}
    assert loaders <= set(data_fetch.__all__), f"loaders outside data_fetch.__all__: {loaders}"


def test_api_kinds_are_what_the_objects_are():
    kinds = repro_api.api_entries("repro")
    assert "EMSparsePCA" in kinds["class"] and "em_sparse_pca_path" in kinds["function"]
    assert "ConvergenceWarning" in kinds["exception"] and "metrics" in kinds["module"]


def test_every_experiment_has_a_gallery_page_with_its_figure_and_claims():
    exps = repro_gallery.experiments()
    def titled(folder, prefix=""):
        return [
            prefix + p.stem
            for p in folder.glob("*.py")
            if not p.name.startswith("_")
            and re.search(r"^TITLE\s*=", p.read_text(encoding="utf-8"), flags=re.M)
        ]

    modules = sorted(titled(ROOT / "experiments") + titled(ROOT / "experiments" / "benchmarks", "bench_"))
    assert sorted(e["name"] for e in exps) == modules
    times = repro_gallery.read_runtimes(repro_gallery.FIGURES)
    for e in exps:
        page = repro_gallery.render_page(e, times)
        name, bench = e["name"], e["name"].startswith("bench_")
        module = f"benchmarks/{name.removeprefix('bench_')}" if bench else name
        source = f"experiments/{module}.py"
        assert f".. figure:: /../figures/{name}.png" in page, name
        assert f"`{source} <source/{name}>`" in page
        assert f"``repro {'bench' if bench else 'run'} {name}``" in page
        if repro_gallery.read_claims(e["name"]):
            assert f".. repro-claims:: {e['name']}" in page


def test_summary_counts_every_claim_once():
    exps = repro_gallery.experiments()
    table = repro_gallery._summary_table(exps)
    total = int(re.search(r"\*\*(\d+)\*\*", "\n".join(table[-len(repro_gallery.VERDICTS) - 2 :])).group(1))
    csvs = sum(len(repro_gallery.read_claims(e["name"])) for e in exps)
    assert total == csvs > 0
    counted = {v: 0 for v in repro_gallery.VERDICTS}
    for e in exps:
        for r in repro_gallery.read_claims(e["name"]):
            counted[r["verdict"]] += 1  # an unknown verdict is a KeyError: the summary would miss it
    assert sum(counted.values()) == total


def test_unknown_paper_prefix_is_refused():
    with pytest.raises(ValueError, match="unknown paper prefix"):
        repro_gallery.paper_of("smith2020_fig1")


@pytest.mark.parametrize(
    ("text", "clean"),
    [
        ("Plain text with ``code`` and a list:\n\n- one\n- two", True),
        ("a *broken emphasis", False),
        ("uses :func:`repro.em_pca` of Sphinx", True),
        ("uses :unknownrole:`x`", False),
    ],
)
def test_docstrings_that_are_not_clean_rst_are_shown_verbatim(text, clean):
    assert repro_gallery._is_clean_rst(text) is clean


@pytest.mark.parametrize("text", ["Roweis (1997) *claims*: X_i `w` |a|", 'C. D. Sigg, "EM"', "- not a list"])
def test_escaped_text_is_shown_as_written(text):
    from docutils import nodes
    from docutils.core import publish_doctree

    tree = publish_doctree(repro_gallery._esc(text))
    assert tree.astext() == text
    assert not list(tree.findall(nodes.enumerated_list)) and not list(tree.findall(nodes.bullet_list))
