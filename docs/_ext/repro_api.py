"""The API reference pages, generated from the packages' ``__all__`` (no hand-kept list that can drift).

At ``config-inited`` (before Sphinx looks for source files) :func:`write_pages` writes one page per public
module under ``docs/api/``: an ``autosummary`` table of every name in the module's ``__all__``, grouped by
kind, from which autosummary generates one page per name. ``tests/test_api_reference.py`` checks that every
public name has its entry.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

__all__ = ["MODULES", "api_entries", "render_module_page", "setup", "skip_member", "write_pages"]

# (module, page title, one-line summary). The names come from each module's ``__all__``.
MODULES = (
    ("repro", "repro", "The library: estimators, their function forms and the linear-algebra helpers."),
    ("repro.baselines", "repro.baselines", "The methods the papers compare against."),
    (
        "repro.metrics",
        "repro.metrics",
        "Explained and adjusted variance, cardinality, overlap, certificates.",
    ),
    ("repro.linalg", "repro.linalg", "Covariance operators, eigenpairs, deflation and renormalization."),
    ("repro.sources", "repro.sources", "The data sources of the EM methods and a Dask array's covariance."),
    ("data_fetch", "data_fetch", "The papers' data sets: hash-checked files and their loaders."),
)

KINDS = (
    ("class", "Estimators and classes"),
    ("function", "Functions"),
    ("exception", "Exceptions and warnings"),
    ("data", "Constants"),
    ("module", "Submodules"),
)


def _kind(obj) -> str:
    if inspect.ismodule(obj):
        return "module"
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if callable(obj):
        return "function"
    return "data"


def api_entries(modname: str) -> dict[str, list[str]]:
    """``{kind: [name, ...]}`` for every name of ``modname.__all__`` (kinds as in :data:`KINDS`)."""
    mod = importlib.import_module(modname)
    names = getattr(mod, "__all__", None)
    if names is None:
        raise ValueError(f"module {modname!r} has no __all__: the API reference is generated from it")
    out: dict[str, list[str]] = {k: [] for k, _ in KINDS}
    for name in sorted(set(names), key=str.lower):
        out[_kind(getattr(mod, name))].append(name)
    return out


def render_module_page(modname: str, title: str, summary: str) -> str:
    """The reStructuredText of one module's API page."""
    lines = [
        f".. _api-{modname}:",
        "",
        title,
        "=" * len(title),
        "",
        f".. automodule:: {modname}",
        "   :no-members:",
        "   :no-index:",
        "",
        summary,
        "",
        f".. currentmodule:: {modname}",
        "",
    ]
    for kind, heading in KINDS:
        names = api_entries(modname)[kind]
        if not names:
            continue
        lines += [heading, "-" * len(heading), ""]
        if kind == "module":
            lines += [f"- :ref:`{modname}.{n} <api-{modname}.{n}>`" for n in names] + [""]
            continue
        # the path from templates_path: a bare "class.rst" is not found there and autosummary falls back to
        # base.rst, whose page lists no method
        template = "autosummary/class.rst" if kind in ("class", "exception") else "autosummary/base.rst"
        lines += [
            ".. autosummary::",
            "   :toctree: generated/",
            f"   :template: {template}",
            "",
            *(f"   {n}" for n in names),
            "",
        ]
    return "\n".join(lines)


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def write_pages(app, config=None) -> None:
    """Write ``docs/api/<module>.rst`` for every module of :data:`MODULES` (``config-inited`` handler)."""
    folder = Path(app.srcdir) / "api"
    folder.mkdir(exist_ok=True)
    for modname, title, summary in MODULES:
        _write_if_changed(folder / f"{modname}.rst", render_module_page(modname, title, summary))


def skip_member(app, what, name, obj, skip, options):
    """Leave out scikit-learn's metadata-routing setters (``set_fit_request``, ...): made for every
    estimator by scikit-learn, documented there, and their docstrings refer to its glossary."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    app.connect("config-inited", write_pages)
    app.connect("autodoc-skip-member", skip_member)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
