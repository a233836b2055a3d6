"""Sphinx configuration of the documentation site (``python -m sphinx -W -b html docs docs/_build/html``)."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))  # the checkout's repro/, data_fetch/, experiments/, whatever is installed
sys.path.insert(0, str(DOCS / "_ext"))

os.environ.setdefault("MPLBACKEND", "Agg")

import repro  # noqa: E402

project = "repro-constrained-pca"
author = "the repro-constrained-pca developers"
copyright = "2026, " + author
release = version = repro.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "repro_api",
    "repro_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = [
    "_build",
    "**.ipynb_checkpoints",
    "auto_examples/*.ipynb",
    "auto_examples/*.py",
    "auto_examples/*.zip",
    "auto_examples/*.json",
    "auto_examples/*.md5",
]
suppress_warnings = ["myst.header"]  # design.md and CHANGELOG.md do not start at heading level one

# --- API reference ---------------------------------------------------------------------------------------
autosummary_generate = True
autodoc_default_options = {"member-order": "groupwise"}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()

# --- intersphinx -----------------------------------------------------------------------------------------
# Online the inventories come from the projects' sites. Offline (REPRO_OFFLINE=1, as in the CI, which has no
# internet) a project is linked only when its inventory lies in docs/_intersphinx/<name>.inv; the others are
# left out, so the build neither waits for the network nor fails on an unreachable inventory; the names
# then appear as plain text.
_INVENTORIES = {
    "python": "https://docs.python.org/3",
    "numpy": "https://numpy.org/doc/stable",
    "scipy": "https://docs.scipy.org/doc/scipy",
    "sklearn": "https://scikit-learn.org/stable",
    "dask": "https://docs.dask.org/en/stable",
}
_OFFLINE = os.environ.get("REPRO_OFFLINE", "") == "1"
intersphinx_mapping = {}
for _name, _url in _INVENTORIES.items():
    _local = DOCS / "_intersphinx" / f"{_name}.inv"
    if _local.exists():
        intersphinx_mapping[_name] = (_url, str(_local))
    elif not _OFFLINE:
        intersphinx_mapping[_name] = (_url, None)
intersphinx_timeout = 10

# --- examples gallery ------------------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "min_reported_time": 1,
    "reset_modules": ("matplotlib",),
    "abort_on_example_error": True,
    "show_memory": False,
    "plot_gallery": os.environ.get("REPRO_DOCS_PLOT_GALLERY", "True"),
    # "Examples using X" on the API pages (the minigallery in _templates/autosummary/)
    "doc_module": ("repro", "data_fetch"),
    "backreferences_dir": "api/backrefs",
}
warnings.filterwarnings("ignore", message="Matplotlib is currently using agg", category=UserWarning)


# --- math, offline -------------------------------------------------------------------------------------
# MathJax 3 from the django-static-mathjax package (Apache-2.0; the docs extra installs it), copied into the
# site's _static: formulas render with no CDN, at build and at view time. tex-svg-full.js carries every TeX
# extension and draws with SVG, so it loads no other file.
def _mathjax_copy() -> Path:
    import importlib.util
    import shutil

    spec = importlib.util.find_spec("mathjax")
    src = Path(next(iter(spec.submodule_search_locations))) / "static" / "mathjax" if spec else None
    if src is None or not (src / "es5" / "tex-svg-full.js").is_file():
        raise RuntimeError(
            "the documentation renders formulas with a local MathJax: install it with "
            '`pip install -e ".[docs]"` (the django-static-mathjax package)'
        )
    dest = DOCS / "_mathjax" / "mathjax"
    dest.mkdir(parents=True, exist_ok=True)
    for name, rel in (("tex-svg-full.js", "es5/tex-svg-full.js"), ("LICENSE", "LICENSE")):
        if not (dest / name).is_file() or (dest / name).stat().st_size != (src / rel).stat().st_size:
            shutil.copyfile(src / rel, dest / name)
    return dest.parent


_MATHJAX_DIR = _mathjax_copy()
mathjax_path = "mathjax/tex-svg-full.js"

# --- HTML ------------------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "Constrained and probabilistic PCA, reproduced"
html_static_path = ["_static", str(_MATHJAX_DIR)]
html_favicon = "_static/favicon.svg"
html_css_files = ["repro.css"]
html_show_sourcelink = False
html_theme_options = {
    "navbar_align": "left",
    # one line at 1280 px: the logo with the version, the sections, the search button
    "navbar_start": ["navbar-logo", "repro-version"],
    "navbar_center": ["navbar-nav"],
    "navbar_end": ["theme-switcher"],
    "navbar_persistent": ["search-button"],
    "header_links_before_dropdown": 4,
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_context = {"default_mode": "light"}
# reproduction pages: no side columns (nor the page-toc, removed by the pages' metadata), the figure and its
# claims take the page's width
html_sidebars = {"reproduction/*": []}
