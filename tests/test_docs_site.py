"""The built documentation site, opened in a real headless browser (Debian's chromium, through playwright).

The site: ``REPRO_DOCS_BUILD`` names the folder of the built HTML site (the CI sets it after building with
``python -m sphinx -W -b html docs "$REPRO_DOCS_BUILD"``); then a missing site, a missing chromium or a
missing playwright is a failure, not a skip. Without the variable, and with chromium, playwright and the
docs extra installed (the README's test command on a machine with chromium: the test extra brings the docs
extra), the session builds the site once into ``docs/_build/html`` (``-W``, the examples not executed;
incremental after the first time);
without chromium or the docs extra the module is skipped with the reason. The browser is
``REPRO_CHROMIUM`` or the ``chromium`` on the PATH; playwright's own browser download is never used.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parent.parent
SITE_ENV = "REPRO_DOCS_BUILD"


def _missing() -> str:
    """Why the site cannot be built and opened here ("" when it can)."""
    if not (os.environ.get("REPRO_CHROMIUM") or shutil.which("chromium")):
        return "no chromium (apt-get install chromium, or set REPRO_CHROMIUM); the browser tests need it"
    for module, extra in (
        ("playwright", "docs"),
        ("sphinx", "docs"),
        ("sphinx_gallery", "docs"),
        ("mathjax", "docs"),
    ):
        if importlib.util.find_spec(module) is None:
            return f'{module} is not installed: pip install -e ".[{extra}]" to build and open the site'
    return ""


pytestmark = pytest.mark.skipif(
    not os.environ.get(SITE_ENV) and bool(_missing()),
    reason=f"the documentation site cannot be built and opened here: {_missing()} (or set {SITE_ENV})",
)

# Three experiment pages whose claims table must be there: one figure, one table, one benchmark. The browser
# opens each page once: these (and every reproduction page, the gallery and the home page) in the layout
# tests below, which also check that every image loaded and no script failed.
EXPERIMENT_PAGES = ("sigg2008_fig3", "mattei2016_table1", "bench_optimal")  # a benchmark with claims


@pytest.fixture(scope="session")
def site() -> Path:
    if not os.environ.get(SITE_ENV):
        path = ROOT / "docs" / "_build" / "html"
        build = subprocess.run(
            [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "docs", str(path)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            # the examples are not executed here (the CI's docs build and `python -m sphinx` run them; their
            # thumbnails are placeholders here): the build costs less; sphinx-gallery caches nothing from it
            env={**os.environ, "MPLBACKEND": "Agg", "REPRO_DOCS_PLOT_GALLERY": "False"},
        )
        if build.returncode:
            pytest.fail(f"the documentation build failed:\n{build.stdout[-3000:]}\n{build.stderr[-3000:]}")
        return path
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
            # normpath, not resolve(): the site has no symlinks, and resolve()'s realpath was a fifth of the
            # test's time (20,000 links)
            target = page if not parts.path else Path(os.path.normpath(page.parent / unquote(parts.path)))
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
        n_rows = len(re.findall(r'<tr id="claim-', html))
        claims = repro_gallery.read_claims(e["name"])
        assert n_rows == len(claims) if claims else "repro-claims" not in html, (e["name"], n_rows)
    assert not missing, f"pages missing from the site: {missing}"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """The site's server, without an access line on stderr per request (pytest's output stays quiet)."""

    def log_message(self, format, *args):
        pass


@pytest.fixture(scope="session")
def browser_page(site):
    chromium = os.environ.get("REPRO_CHROMIUM") or shutil.which("chromium")
    if not chromium:
        pytest.fail(
            "no chromium to drive: install Debian's chromium (apt-get install chromium) or set REPRO_CHROMIUM"
        )
    from playwright.sync_api import sync_playwright

    handler = functools.partial(_QuietHandler, directory=str(site))
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


def _open_checked(page, url) -> int:
    """Open ``url``; assert HTTP OK, every image loaded, no JavaScript error; return the number of images."""
    errors: list[str] = []

    def on_error(exc):
        errors.append(str(exc))

    page.on("pageerror", on_error)
    try:
        response = page.goto(url)
        assert response is not None and response.ok, f"{url}: HTTP {response and response.status}"
        n_images = page.evaluate("document.images.length")
        assert _images_loaded(page) == [], f"{url}: images not loaded"
    finally:
        page.remove_listener("pageerror", on_error)
    assert not errors, f"{url}: JavaScript errors {errors}"
    return n_images


def test_page_opens_with_every_image_loaded(browser_page):
    # the examples' gallery; the home page, the reproduction gallery and its pages: the layout tests below
    page, base = browser_page
    _open_checked(page, base + "auto_examples/index.html")


def test_search_finds_an_estimator(browser_page):
    page, base = browser_page
    page.goto(base + "search.html?q=EMSparsePCA")
    results = page.locator("#search-results ul.search li")
    results.first.wait_for(timeout=30_000)
    texts = results.all_inner_texts()
    assert any("EMSparsePCA" in t for t in texts), texts[:5]


# ------------------------------------------------------------------ layout, measured in chromium at 1280 px
WIDTH, HEIGHT = 1280, 900


@pytest.fixture(scope="session")
def layout_page(browser_page):
    """The browser at 1280 x 900, every request outside the local server recorded and refused."""
    page, base = browser_page
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    outside: list[str] = []

    def route(r):
        if r.request.url.startswith(base):
            return r.continue_()
        outside.append(r.request.url)
        return r.abort()

    page.route("**/*", route)
    yield page, base, outside
    page.unroute("**/*")


def _open(page, url):
    response = page.goto(url)
    assert response is not None and response.ok, f"{url}: HTTP {response and response.status}"
    page.wait_for_load_state("load")


_OVERFLOW_JS = """() => {
  const article = document.querySelector('.bd-article') || document.body;
  const right = article.getBoundingClientRect().right + 1;
  const wide = Array.from(article.querySelectorAll('table, pre, figure, img'))
    .filter(e => e.getBoundingClientRect().right > right && !e.closest('.pst-scrollable-table-container')
                 && !e.closest('.highlight'))
    .map(e => e.tagName + '.' + e.className);
  return {page: document.documentElement.scrollWidth - document.documentElement.clientWidth, wide: wide};
}"""


def _experiments_with_figures() -> list[str]:
    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    import repro_gallery

    return [
        e["name"] for e in repro_gallery.experiments() if (ROOT / "figures" / f"{e['name']}.png").is_file()
    ]


@pytest.mark.parametrize("name", _experiments_with_figures())
def test_reproduction_page_reads_like_the_paper(layout_page, name):
    page, base, outside = layout_page
    n_images = _open_checked(page, f"{base}reproduction/{name}.html")
    assert n_images >= 1, f"{name}: no figure"
    if name in EXPERIMENT_PAGES:
        assert page.locator("table.repro-claims tbody tr").count() >= 1, f"{name}: no claims table"
    fig = page.evaluate(
        """() => {
      const img = document.querySelector('figure.repro-figure img');
      const a = img.closest('a');
      const table = document.querySelector('table.repro-claims');
      const r = img.getBoundingClientRect();
      return {width: r.width, bottom: r.bottom + window.scrollY, natural: img.naturalWidth,
              column: (f => f.clientWidth - parseFloat(getComputedStyle(f).paddingLeft)
                            - parseFloat(getComputedStyle(f).paddingRight))(img.closest('figure')),
              href: a ? a.href : null,
              table: table ? table.getBoundingClientRect().top + window.scrollY : null,
              published: table ? Array.from(table.querySelectorAll('tbody tr'))
                                   .map(tr => tr.children[1].innerText.trim()) : []};
    }"""
    )
    # at its natural size, never enlarged (a 678 px PNG blown up to 1,200 px is blurred), at most the column
    want = min(fig["natural"], fig["column"])
    assert abs(fig["width"] - want) <= 1, f"{name}: the figure is {fig['width']:.0f} px wide, not {want:.0f}"
    assert fig["width"] >= min(fig["natural"], 600), (
        f"{name}: the figure is {fig['width']:.0f} px at {WIDTH} px"
    )
    assert fig["href"], f"{name}: the figure links to no full-size image"
    full = page.context.request.get(fig["href"])
    assert full.ok and full.headers["content-type"] == "image/png", (name, fig["href"])
    if fig["table"] is not None:
        gap = fig["table"] - fig["bottom"]
        assert 0 <= gap <= HEIGHT, f"{name}: the claims table starts {gap:.0f} px below the figure"
        assert all(fig["published"]), f"{name}: a blank 'published' cell"
    over = page.evaluate(_OVERFLOW_JS)
    assert over["page"] <= 0 and not over["wide"], f"{name}: wider than its column: {over}"
    assert not outside, f"{name}: requests outside the site: {outside[:3]}"


_CODE_JS = """() => Array.from(document.querySelectorAll('.bd-article pre')).map(p => {
  const box = p.closest('div.highlight') || p.parentElement;
  return {text: p.innerText.slice(0, 60), scroll: p.scrollWidth, width: p.clientWidth,
          right: p.getBoundingClientRect().right, box: box.getBoundingClientRect().right};
})"""


def _guide_pages() -> list[str]:
    pages = sorted(p.stem for p in (ROOT / "docs" / "user_guide").glob("*.rst"))
    return ["index", *(f"user_guide/{p}" for p in pages)]


@pytest.mark.parametrize("page_name", _guide_pages())
def test_code_blocks_wrap_inside_their_box(layout_page, page_name):
    """No code block is wider than its box or hides text behind a scroll bar: a result in a comment
    ("# (True, 27.06..., 13 nodes)") is read whole at 1280 px."""
    page, base, _ = layout_page
    _open(page, f"{base}{page_name}.html")
    blocks = page.evaluate(_CODE_JS)
    if page_name in ("index", "user_guide/optimal", "user_guide/certificate"):
        assert blocks, f"{page_name}: no code block found"
    cut = [b for b in blocks if b["scroll"] > b["width"] + 1 or b["right"] > b["box"] + 1]
    assert not cut, f"{page_name}: code wider than its box: {cut[:3]}"


def test_gallery_index_is_a_grid_with_verdict_counts(layout_page):
    page, base, _ = layout_page
    n_images = _open_checked(page, base + "reproduction/index.html")
    assert n_images >= 20, f"the gallery index shows {n_images} thumbnails"
    rows = page.evaluate(
        """() => {
      const cards = Array.from(document.querySelectorAll('.repro-thumb'));
      const tops = cards.map(c => Math.round(c.getBoundingClientRect().top));
      const perRow = Math.max(...tops.map(t => tops.filter(u => u === t).length));
      return {first: perRow, n: cards.length,
              badges: document.querySelectorAll('.repro-thumb .repro-badge').length};
    }"""
    )
    assert rows["n"] >= 30 and rows["first"] >= 3, f"at most {rows['first']} cards in a row, of {rows['n']}"
    assert rows["badges"] >= 30, rows


def test_home_page_scoreboard_links_to_the_lists(layout_page):
    page, base, _ = layout_page
    _open_checked(page, base + "index.html")
    links = page.locator("table.repro-scoreboard tbody a").evaluate_all("as => as.map(a => a.href)")
    assert len(links) >= 6 and all("reproduction/index.html#" in h for h in links), links
    for href in links:
        assert page.context.request.get(href).ok


@pytest.mark.parametrize(
    ("name", "methods"),
    [
        ("repro.EMSparsePCA", ("fit", "transform", "score")),  # also links back to the examples (below)
        ("repro.EMPCA", ("fit", "transform", "score")),
        ("repro.GSPPCA", ("fit", "transform")),
        ("repro.Covariance", ("eigh",)),
    ],
)
def test_api_class_pages_list_their_methods(layout_page, name, methods):
    page, base, _ = layout_page
    _open(page, f"{base}api/generated/{name}.html")
    listed = page.locator("dl.py.method > dt").evaluate_all("ds => ds.map(d => d.id.split('.').pop())")
    assert set(methods) <= set(listed), (name, listed)
    over = page.evaluate(_OVERFLOW_JS)
    assert over["page"] <= 0 and not over["wide"], f"{name}: wider than its column: {over}"
    if name == "repro.EMSparsePCA":  # the API pages link back to the examples (one page opened for both)
        links = page.locator(".sphx-glr-thumbcontainer a, .sphx-glr-thumbnail-title").count()
        assert links >= 1, "no 'Examples using EMSparsePCA'"


def test_math_renders_offline_and_the_site_shows_version_favicon_one_line_navbar(layout_page):
    import repro

    page, base, outside = layout_page
    _open(page, base + "user_guide/certificate.html")
    page.wait_for_selector("mjx-container svg", timeout=20_000)
    assert page.locator("mjx-container").count() >= 1
    assert not outside, f"requests outside the site: {outside[:3]}"
    assert page.locator(".repro-version").first.inner_text().strip() == f"v{repro.__version__}"
    assert page.locator("link[rel='icon']").count() >= 1
    header = page.evaluate("() => document.querySelector('.bd-header').getBoundingClientRect().height")
    assert header <= 80, f"the navbar is {header:.0f} px tall at {WIDTH} px (wraps)"
