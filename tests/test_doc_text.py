"""The project's own text stays short and says what is true now, in words a reader can resolve.

Sizes: README.md under 12,000 characters, docs/design.md under 30,000, every CHANGELOG bullet at most 200
characters (the measurement logs live in the dated notes of docs/notes/, which these rules leave alone).

Words: no issue numbers ("issue 37", "issues 12 and 23", "#12") and no talk of the machine the text was
written on ("this shared machine", "other jobs' load", "a load of 3-4") in the README, the changelog, the
documentation pages, the examples, and the docstrings and comments of ``repro``, ``data_fetch``,
``experiments`` and ``docs/_ext``. Claim sentences and notes are not docstrings: they are the ledger's text,
which changes only with a run (``figures/CLAIMS.md``), so they are not read here.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

README_LIMIT = 12_000
DESIGN_LIMIT = 30_000
BULLET_LIMIT = 200

# an issue number, a "#12" reference, or the machine a sentence was measured on and its other load
FORBIDDEN = re.compile(
    r"\bissues? #?\d+"
    r"|\bissue \""
    r"|(?<![\w&/])(?<!Database )#\d+\b"
    r"|\bshared (?:2-core )?machine"
    r"|\bthis (?:2-core |shared )?machine\b"
    r"|\bother (?:jobs|sessions)\b"
    r"|\bload of \d"
    r"|\bother load\b",
    re.IGNORECASE,
)

PLAIN_TEXT = ["README.md", "CHANGELOG.md", "docs/*.md", "docs/*.rst", "docs/api/index.rst"]
PLAIN_TEXT += ["docs/user_guide/*.rst", "examples/*.rst", "experiments/**/*.md"]
PYTHON = ["repro/**/*.py", "data_fetch/**/*.py", "experiments/**/*.py", "docs/_ext/*.py", "docs/conf.py"]
PYTHON += ["examples/*.py"]


def _files(patterns: list[str]) -> list[Path]:
    files = sorted({p for pattern in patterns for p in ROOT.glob(pattern)})
    return [p for p in files if "notes" not in p.relative_to(ROOT).parts[:2]]


def docstrings_and_comments(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of every docstring (module, class, function) and every comment of ``source``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                out.append((node.body[0].lineno, doc))
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out.append((tok.start[0], tok.string))
    return out


def offences(text: str) -> list[str]:
    """The forbidden phrases in ``text`` (line breaks read as spaces), each with a little context."""
    text = re.sub(r"\s+", " ", text)
    return [text[max(0, m.start() - 30) : m.end() + 20] for m in FORBIDDEN.finditer(text)]


def _bullets(markdown: str) -> list[str]:
    """Each top-level bullet of a Markdown list, its continuation lines joined."""
    bullets: list[str] = []
    inside = False
    for line in markdown.splitlines():
        if line.startswith("- "):
            bullets.append(line)
            inside = True
        elif inside and line.startswith("  ") and line.strip():
            bullets[-1] += " " + line.strip()
        else:
            inside = False
    return bullets


def test_sizes():
    assert len((ROOT / "README.md").read_text()) < README_LIMIT
    assert len((ROOT / "docs" / "design.md").read_text()) < DESIGN_LIMIT
    long = [b[:80] for b in _bullets((ROOT / "CHANGELOG.md").read_text()) if len(b) > BULLET_LIMIT]
    assert not long, f"CHANGELOG bullets over {BULLET_LIMIT} characters: {long}"


def test_changelog_groups():
    """Each release section has at most one Added, one Changed and one Fixed group, in that order."""
    text = (ROOT / "CHANGELOG.md").read_text()
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        groups = re.findall(r"^### (\w+)", section, flags=re.M)
        assert groups == [g for g in ("Added", "Changed", "Fixed") if g in groups], (section[:30], groups)


@pytest.mark.parametrize("path", _files(PLAIN_TEXT), ids=lambda p: str(p.relative_to(ROOT)))
def test_documents_name_no_issue_and_no_machine(path):
    assert not offences(path.read_text()), offences(path.read_text())


def test_docstrings_and_comments_name_no_issue_and_no_machine():
    found = []
    for path in _files(PYTHON):
        for line, text in docstrings_and_comments(path.read_text()):
            found += [f"{path.relative_to(ROOT)}:{line}: {o}" for o in offences(text)]
    assert not found, "\n".join(found)


def test_the_rules_can_fail():
    for bad in (
        "as measured in issue 37 part D",
        "issues 12 and 23",
        "see (#12)",
        "about 10 s on this shared machine",
        "on this 2-core machine",
        "other jobs' load",
        "under a load of 3-4",
        'profiled by issue "run budget"',
    ):
        assert offences(bad), bad
    assert offences("on this\n    shared machine")  # a phrase broken over two lines
    for fine in ("MIT CBCL Face Database #1", "the other loaders", "x = 1  # 3 passes", "a loaded machine"):
        assert not offences(fine), fine
    source = '"""Module (issue 5)."""\n\n\ndef f():\n    """Fine."""\n    return "issue 6"  # see issue 7\n'
    texts = [t for _, t in docstrings_and_comments(source)]
    assert [bool(offences(t)) for t in texts] == [True, False, True]  # the string "issue 6" is not read
    assert _bullets("- a\n  b\n\n- c\n") == ["- a b", "- c"]
