"""The built documentation site, opened in a real headless browser (Debian's chromium, through playwright).

Runs when ``REPRO_DOCS_BUILD`` names the folder of the built HTML site (the CI sets it after building with
``python -m sphinx -W -b html docs "$REPRO_DOCS_BUILD"``); then a missing site, a missing chromium or a
missing playwright is a failure, not a skip. Without the variable the module is skipped. The browser is
``REPRO_CHROMIUM`` or the ``chromium`` on the PATH; playwright's own browser download is never used.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parent.parent
SITE_ENV = "REPRO_DOCS_BUILD"
pytestmark = pytest.mark.skipif(
    not os.environ.get(SITE_ENV), reason=f"set {SITE_ENV} to the built HTML site to check it (the CI does)"
)

# Three experiment pages the browser opens: one figure, one table, one benchmark.
EXPERIMENT_PAGES = ("sigg2008_fig3", "mattei2016_table1", "bench_em_pca")


@pytest.fixture(scope="module")
def site() -> Path:
    path = Path(os.environ[SITE_ENV])
    if not (path / "index.html").is_file():
        pytest.fail(f"{SITE_ENV}={path}: no built site there (index.html missing); build it first")
    return path


class _Refs(HTMLParser):
    """The ``href``/``src`` of links, images, scripts and stylesheets, and the ``id`` of every element."""

    def __init__(self):
        super().__init__()
        self.refs: list[tuple[str, str]] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        for key in ("href", "src"):
            if a.get(key) and tag in ("a", "img", "script", "link", "source", "iframe"):
                self.refs.append((tag, a[key]))


@functools.cache
def _parse(path: Path) -> _Refs:
    p = _Refs()
    p.feed(path.read_text(encoding="utf-8", errors="replace"))
    return p


def test_every_internal_link_and_image_resolves(site):
    broken = []
    # the site's pages; _static/ holds the theme's assets (a Jinja macro file among them), not pages
    pages = sorted(p for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts)
    assert len(pages) > 50, f"only {len(pages)} pages built"
    for page in pages:
        for tag, ref in _parse(page).refs:
            parts = urlsplit(ref)
            if parts.scheme or parts.netloc or ref.startswith(("mailto:", "javascript:")):
                continue  # external
            target = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{page.relative_to(site)}: <{tag}> {ref}")
            elif parts.fragment and target.suffix == ".html" and tag == "a":
                frag = unquote(parts.fragment)
                if frag not in _parse(target).ids and frag != "":
                    broken.append(f"{page.relative_to(site)}: <a> {ref} (no id {frag!r} there)")
    assert not broken, f"{len(broken)} broken internal links or images:\n" + "\n".join(broken[:40])


def test_every_public_name_and_experiment_has_its_page(site):
    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    import repro_api
    import repro_gallery

    missing = []
    for modname, _, _ in repro_api.MODULES:
        for kind, names in repro_api.api_entries(modname).items():
            for name in names:
                page = (
                    site
                    / "api"
                    / (f"{modname}.{name}.html" if kind == "module" else f"generated/{modname}.{name}.html")
                )
                if not page.is_file():
                    missing.append(str(page.relative_to(site)))
    for e in repro_gallery.experiments():
        page = site / "reproduction" / f"{e['name']}.html"
        if not page.is_file():
            missing.append(str(page.relative_to(site)))
            continue
        html = page.read_text(encoding="utf-8")
        n_rows = len(re.findall(r"<tr class=\"row-(?:odd|even)\">", html.split("repro-claims", 1)[-1]))
        claims = repro_gallery.read_claims(e["name"])
        assert n_rows - 1 == len(claims) if claims else "repro-claims" not in html, (e["name"], n_rows)
    assert not missing, f"pages missing from the site: {missing}"


@pytest.fixture(scope="module")
def browser_page(site):
    chromium = os.environ.get("REPRO_CHROMIUM") or shutil.which("chromium")
    if not chromium:
        pytest.fail(
            "no chromium to drive: install Debian's chromium (apt-get install chromium) or set REPRO_CHROMIUM"
        )
    from playwright.sync_api import sync_playwright

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page()
            yield page, base
            browser.close()
    finally:
        server.shutdown()


def _images_loaded(page) -> list[str]:
    """The images of the page that failed to load (``complete`` and a natural width)."""
    page.wait_for_load_state("load")
    return page.evaluate(
        "Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)"
    )


@pytest.mark.parametrize(
    "path",
    [
        "index.html",
        "auto_examples/index.html",
        "reproduction/index.html",
        *(f"reproduction/{n}.html" for n in EXPERIMENT_PAGES),
    ],
)
def test_page_opens_with_every_image_loaded(browser_page, path):
    page, base = browser_page
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    response = page.goto(base + path)
    assert response is not None and response.ok, f"{path}: HTTP {response and response.status}"
    n_images = page.evaluate("document.images.length")
    assert _images_loaded(page) == [], f"{path}: images not loaded"
    assert not errors, f"{path}: JavaScript errors {errors}"
    if path.startswith("reproduction/") and path != "reproduction/index.html":
        assert n_images >= 1, f"{path}: no figure"
        assert page.locator("table.repro-claims tbody tr").count() >= 1, f"{path}: no claims table"
    if path == "reproduction/index.html":
        assert n_images >= 20, f"the gallery index shows {n_images} thumbnails"


def test_search_finds_an_estimator(browser_page):
    page, base = browser_page
    page.goto(base + "search.html?q=EMSparsePCA")
    results = page.locator("#search-results ul.search li")
    results.first.wait_for(timeout=30_000)
    texts = results.all_inner_texts()
    assert any("EMSparsePCA" in t for t in texts), texts[:5]
