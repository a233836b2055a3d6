"""The reproduction gallery: one page per experiment, generated from the committed outputs in ``figures/``.

Nothing is recomputed. At ``config-inited`` :func:`write_pages` reads, for every experiment module of
``experiments/`` (a module that defines ``TITLE``): its title and docstring (with ``ast``, without importing
it), its figure ``figures/<name>.png``, its claims ``figures/claims/<name>.csv`` and its recorded cost
``figures/runtimes.csv``, and writes ``docs/reproduction/<name>.rst`` (figure, paper, protocol, claims
table, command and cost, link to the source), ``docs/reproduction/source/<name>.rst`` (the source) and
``docs/reproduction/index.rst`` (thumbnails and the ledger's summary by paper and verdict).

The claims table is built by the ``repro-claims`` directive from the CSV as plain text nodes, so a claim's
text is shown as written, never parsed as markup.
"""

from __future__ import annotations

import csv
import html
import io
from pathlib import Path

from docutils import nodes
from docutils.core import publish_doctree
from docutils.parsers.rst import Directive
from docutils.utils import Reporter

from experiments.runner import _describe, registry
from experiments.runner._runtimes import fmt_seconds
from experiments.runner._runtimes import read as read_runtimes
from experiments.runner.registry import experiment_names

__all__ = ["PAPERS", "VERDICTS", "claims_html", "experiments", "read_claims", "setup", "write_pages"]

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ROOT / "figures"

# prefix of the experiment name -> (heading, reference)
PAPERS = {
    "data": ("The data sets", "The data sets of the five papers (no single paper)."),
    "roweis1997": (
        "Roweis (1997)",
        'S. Roweis, "EM Algorithms for PCA and SPCA", NIPS 10 (1997), pp. 626-632.',
    ),
    "sigg2008": (
        "Sigg & Buhmann (2008)",
        'C. D. Sigg, J. M. Buhmann, "Expectation-Maximization for Sparse and Non-Negative PCA", ICML 2008.',
    ),
    "zass2006": ("Zass & Shashua (2006)", 'R. Zass, A. Shashua, "Nonnegative Sparse PCA", NIPS 19 (2006).'),
    "asteris2014": (
        "Asteris et al. (2014)",
        'M. Asteris, D. Papailiopoulos, A. Dimakis, "Nonnegative Sparse PCA with Provable Guarantees", '
        "ICML 2014.",
    ),
    "mattei2016": (
        "Mattei et al. (2016)",
        'P.-A. Mattei, C. Bouveyron, P. Latouche, "Globally Sparse Probabilistic PCA", AISTATS 2016.',
    ),
    "bench": (
        "Benchmarks",
        "The project's own goals, as ratios against a reference measured in the same run, met or missed in "
        "figures/BENCHMARKS.md; their claims are the published numbers they check.",
    ),
}
# "untestable here": a claim this repository cannot test, counted in its own column, never as not reproduced
VERDICTS = ("reproduced", "partly reproduced", "not reproduced", "too close to call", "untestable here")


def paper_of(name: str) -> str:
    """The key of :data:`PAPERS` an experiment belongs to (the part of its name before ``_``)."""
    prefix = name.split("_", 1)[0]
    if prefix not in PAPERS:
        raise ValueError(
            f"experiment {name!r}: unknown paper prefix {prefix!r}; add it to PAPERS in {__file__}"
        )
    return prefix


def experiments() -> list[dict]:
    """Every experiment of ``repro list``, in the order of :data:`PAPERS`, with its title and docstring.

    Read from the sources with ``ast`` by the runner (nothing is imported or run).
    """
    out = [
        {"name": n, "title": _describe.title(n), "doc": _describe.docstring(n), "paper": paper_of(n)}
        for n in experiment_names()
    ]
    order = list(PAPERS)
    return sorted(out, key=lambda e: (order.index(e["paper"]), e["name"]))


def read_claims(name: str, figures: Path = FIGURES) -> list[dict]:
    """The rows of ``figures/claims/<name>.csv`` ([] when the experiment has no claims file)."""
    path = figures / "claims" / f"{name}.csv"
    if not path.exists():
        return []
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


def _cost(name: str, times) -> str:
    parts = []
    for quick, label in ((False, "full run"), (True, "with ``--quick``")):
        hit = times.get((name, quick))
        parts.append(
            f"{fmt_seconds(hit[0])} ({label}, recorded {hit[1]})" if hit else f"not recorded ({label})"
        )
    return "; ".join(parts)


# Sphinx's roles, unknown to plain docutils: stand-ins while a docstring is checked (Sphinx resolves them).
_SPHINX_ROLES = ("func", "class", "meth", "mod", "attr", "data", "obj", "exc", "ref", "doc", "math", "envvar")


def _is_clean_rst(text: str) -> bool:
    """Whether ``text`` parses as reStructuredText without a warning (else it is shown verbatim)."""
    from docutils.parsers.rst import roles

    saved = dict(roles._roles)
    for name in _SPHINX_ROLES:
        roles.register_generic_role(name, nodes.literal)
    try:
        doctree = publish_doctree(
            text,
            settings_overrides={
                "report_level": Reporter.SEVERE_LEVEL + 1,
                "halt_level": Reporter.SEVERE_LEVEL + 1,
                "warning_stream": io.StringIO(),
            },
        )
    except Exception:
        return False
    finally:
        roles._roles.clear()
        roles._roles.update(saved)
    return not any(m["level"] >= Reporter.WARNING_LEVEL for m in doctree.findall(nodes.system_message))


def _esc(text: str) -> str:
    """``text`` shown as written: markup characters escaped, and the first character too (so that an
    initial such as ``C. D. Sigg`` or a leading ``-`` never starts a list)."""
    out = "".join("\\" + ch if ch in "\\*`|_[]<>:" else ch for ch in text)
    return "\\" + out if text[:1].isalnum() or text[:1] in "-+#(" else out


def _indent(text: str, prefix: str = "   ") -> str:
    return "\n".join(prefix + line if line.strip() else "" for line in text.splitlines())


def _verdict_counts(rows: list[dict]) -> dict[str, int]:
    return {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}


def _badges(rows: list[dict]) -> str:
    """Raw HTML: one coloured badge per verdict present, with its count."""
    counts = _verdict_counts(rows)
    return " ".join(
        f'<span class="repro-badge {_badge_class(v)}">{n} {html.escape(v)}</span>'
        for v, n in counts.items()
        if n
    )


def _badge_class(verdict: str) -> str:
    return "repro-badge-" + verdict.replace(" ", "-")


def render_page(exp: dict, times) -> str:
    """The reStructuredText of one experiment's page: the figure at the full content width (a link to the
    full resolution), the claims directly under it, then the paper, command, cost and protocol."""
    name, title = exp["name"], exp["title"]
    _, reference = PAPERS[exp["paper"]]
    lines = [
        ":html_theme.sidebar_secondary.remove: true",
        "",
        f".. _exp-{name}:",
        "",
        name,
        "=" * len(name),
        "",
    ]
    lines += [_esc(title), ""]
    png = FIGURES / f"{name}.png"
    if png.exists():
        from PIL import Image

        with Image.open(png) as im:
            width, height = im.size
        lines += [
            f".. figure:: /../figures/{name}.png",
            f"   :alt: {name}: {title}",
            "   :figclass: repro-figure",
            f"   :target: ../_images/{name}.png",
            "",
            f"   Click the figure for the full resolution ({width} x {height} px).",
            "",
        ]
    claims = read_claims(name)
    lines += ["Claims", "------", ""]
    if claims:
        lines += [
            f"{len(claims)} claims, as in the ledger ``figures/CLAIMS.md`` (``repro claims {name} -v``); "
            "click a claim's id for the paper's sentence and the note.",
            "",
            f".. repro-claims:: {name}",
            "",
        ]
    else:
        lines += ["This experiment checks no claim.", ""]
    if registry.is_benchmark(name):
        lines += ["Its goals, each met or missed, are in ``figures/BENCHMARKS.md`` (``repro bench``).", ""]
    lines += [
        "Paper, command and cost",
        "-----------------------",
        "",
        f":Paper: {_esc(reference)}",
        f":Command: ``repro {command(name)} {name}`` (a quick look that leaves ``figures/`` alone: "
        f"``repro {command(name)} {name} --quick --out /tmp/repro``)",
        f":Recorded cost: {_cost(name, times)}",
        f":Source: :doc:`{source_path(name)} <source/{name}>`",
        f":Data: :download:`{name}.csv </../figures/{name}.csv>` (the tidy table the figure is drawn from)"
        if (FIGURES / f"{name}.csv").exists()
        else "",
        "",
        "Protocol and choices",
        "--------------------",
        "",
        f"From the module docstring (``repro {command(name)} {name} --help`` shows the same):",
        "",
    ]
    doc = exp["doc"].strip()
    if doc and _is_clean_rst(doc):
        lines += [doc, ""]
    elif doc:
        lines += ["::", "", _indent(doc), ""]
    return "\n".join(lines)


def source_path(name: str) -> str:
    """``experiments/<name>.py``; a benchmark's ``experiments/benchmarks/<module>.py``."""
    return str(registry.source(name).relative_to(registry.PKG_DIR.parent))


def command(name: str) -> str:
    """The runner's command of experiment ``name``: ``run``, or ``bench`` for a benchmark."""
    return "bench" if registry.is_benchmark(name) else "run"


def render_source(exp: dict) -> str:
    name = exp["name"]
    head = source_path(name)
    return "\n".join(
        [
            ":orphan:",
            "",
            f"{head}",
            "=" * len(head),
            "",
            f"Back to :ref:`exp-{name}`.",
            "",
            f".. literalinclude:: /../{source_path(name)}",
            "   :language: python",
            "   :linenos:",
            "",
        ]
    )


def _summary_table(exps) -> list[str]:
    """The scoreboard: claims per paper and verdict, each paper linking to its list in the gallery."""
    lines = [
        ".. list-table:: Claims by paper and verdict (timing claims, which rest on a measured time, apart)",
        "   :class: repro-scoreboard",
        "   :header-rows: 1",
        "",
        "   * - paper",
        "     - claims",
    ]
    lines += [f"     - {v}" for v in VERDICTS]
    totals = {v: 0 for v in VERDICTS}
    total = 0
    for key, (heading, _) in PAPERS.items():
        for timing in (False, True):
            rows = [
                r
                for e in exps
                if e["paper"] == key
                for r in read_claims(e["name"])
                if (r.get("machine_dependent", "False") == "True") == timing
            ]
            if not rows:
                continue
            counts = {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}
            for v in VERDICTS:
                totals[v] += counts[v]
            total += len(rows)
            label = f":ref:`{heading}{' (timing)' if timing else ''} <gallery-{key}>`"
            lines += [f"   * - {label}", f"     - {len(rows)}"] + [f"     - {counts[v]}" for v in VERDICTS]
    lines += ["   * - **all**", f"     - **{total}**"] + [f"     - **{totals[v]}**" for v in VERDICTS]
    return [*lines, ""]


def _thumbnail(name: str, folder: Path) -> str | None:
    """A 360-pixel-wide copy of the figure in ``folder`` (made once per change), or None without a figure."""
    png = FIGURES / f"{name}.png"
    if not png.exists():
        return None
    thumb = folder / f"{name}-thumb.png"  # not {name}.png: Sphinx copies both into _images/
    if not thumb.exists() or thumb.stat().st_mtime < png.stat().st_mtime:
        from PIL import Image

        with Image.open(png) as im:
            im.thumbnail((360, 360))
            im.save(thumb)
    return thumb.name


def render_index(exps, thumbs: Path) -> str:
    n = sum(len(read_claims(e["name"])) for e in exps)
    lines = [
        ".. _reproduction:",
        "",
        "Reproduction gallery",
        "====================",
        "",
        f"Every figure and table of the five papers, as the committed full run drew it, beside the paper's "
        f"claims ({n} of them) and what this repository measured. The pages are generated from "
        "``figures/`` when the site is built: nothing is recomputed. How to read a verdict: "
        ":doc:`/user_guide/ledger`.",
        "",
        ".. include:: scoreboard.inc",
        "",
    ]
    hidden = []
    for key, (heading, reference) in PAPERS.items():
        group = [e for e in exps if e["paper"] == key]
        if not group:
            continue
        lines += [f".. _gallery-{key}:", "", heading, "-" * len(heading), "", _esc(reference), ""]
        lines += [".. container:: repro-thumbs", ""]
        for e in group:
            thumb = _thumbnail(e["name"], thumbs)
            lines += ["   .. container:: repro-thumb", ""]
            if thumb:
                lines += [
                    f"      .. image:: _thumbs/{thumb}",
                    f"         :alt: {e['name']}",
                    f"         :target: {e['name']}.html",
                    "",
                ]
            lines += [f"      :ref:`{e['name']} <exp-{e['name']}>`", "", f"      {_esc(e['title'])}", ""]
            badges = _badges(read_claims(e["name"]))
            if badges:
                lines += ["      .. raw:: html", "", f'         <p class="repro-counts">{badges}</p>', ""]
            hidden.append(e["name"])
    lines += [".. toctree::", "   :hidden:", "", *(f"   {h}" for h in hidden), ""]
    return "\n".join(lines)


def _short(text: str, limit: int = 90) -> str:
    """What a claim's sentence says, in short: the part after its source ("Sec. 7, Fig. 3: ..."), cut at
    a word boundary."""
    head, sep, rest = text.partition(": ")
    said = rest if sep and len(head) < 40 else text
    if len(said) <= limit:
        return said
    return said[:limit].rsplit(" ", 1)[0].rstrip(",;") + " ..."


def claims_html(rows: list[dict]) -> str:
    """The compact claims table: id (unfolding the sentence and the note), published, reproduced, verdict
    as a coloured badge. A qualitative claim (no published number) shows the paper's statement, in short."""
    esc = html.escape
    out = [
        '<table class="repro-claims">',
        '<colgroup><col class="c-id"><col class="c-pub"><col class="c-rep">',
        '<col class="c-verdict"></colgroup>',
        "<thead><tr><th>claim</th><th>published</th><th>reproduced</th><th>verdict</th></tr></thead>",
        "<tbody>",
    ]
    for r in rows:
        published = r["published"].strip()
        pub = (
            esc(published)
            if published
            else f'<span class="repro-qualitative" title="qualitative claim: the paper says">'
            f"{esc(_short(r['claim']))}</span>"
        )
        marks = []
        if r.get("machine_dependent") == "True":
            marks.append("timing")
        if r.get("quick") == "True":
            marks.append("quick run")
        mark = f'<span class="repro-mark">{esc(", ".join(marks))}</span>' if marks else ""
        note = f'<p class="repro-note"><b>Note.</b> {esc(r["note"])}</p>' if r.get("note", "").strip() else ""
        out.append(
            f'<tr id="claim-{esc(r["id"])}">'
            f"<td><details><summary><code>{esc(r['id'])}</code></summary>"
            f"<p>{esc(r['claim'])}</p>{note}</details></td>"
            f"<td>{pub}</td><td>{esc(r['reproduced'])}</td>"
            f'<td><span class="repro-badge {_badge_class(r["verdict"])}">'
            f"{esc(r['verdict'])}</span>{mark}</td>"
            "</tr>"
        )
    out += ["</tbody>", "</table>"]
    return "\n".join(out)


class ClaimsTable(Directive):
    """``.. repro-claims:: NAME``: the claims of one experiment as a compact table (HTML, text escaped: a
    claim's text is shown as written, never parsed as markup)."""

    required_arguments = 1

    def run(self):
        return [nodes.raw("", claims_html(read_claims(self.arguments[0])), format="html")]


def write_pages(app, config=None) -> None:
    """Write the gallery's pages under ``docs/reproduction/`` (``config-inited`` handler)."""
    folder = Path(app.srcdir) / "reproduction"
    (folder / "source").mkdir(parents=True, exist_ok=True)
    (folder / "_thumbs").mkdir(exist_ok=True)
    exps = experiments()
    times = read_runtimes(FIGURES)
    pages = {folder / "index.rst": render_index(exps, folder / "_thumbs")}
    for e in exps:
        pages[folder / f"{e['name']}.rst"] = render_page(e, times)
        pages[folder / "source" / f"{e['name']}.rst"] = render_source(e)
    pages[folder / "scoreboard.inc"] = "\n".join(_summary_table(exps))
    for path, text in pages.items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


def setup(app):
    app.add_directive("repro-claims", ClaimsTable)
    app.connect("config-inited", write_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
