"""What an experiment is, read for ``--help`` and ``repro list``: title, docstring, claims, run time.

:func:`title` and :func:`docstring` read the module's source with ``ast`` (no import: ``repro list``
must not load Numba); :func:`describe` builds the ``--help`` text of one experiment.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from . import _runtimes

__all__ = ["assigns", "defines", "describe", "docstring", "runs_alone", "runtime_line", "title"]

_PKG_DIR = Path(__file__).resolve().parents[1]  # experiments/: the experiment modules
FIGURES_DIR = _PKG_DIR.parent / "figures"


def _path(name: str) -> Path:
    """The source of experiment ``name``: ``experiments/NAME.py``, a benchmark's
    ``experiments/benchmarks/<name without bench_>.py``."""
    bench = _PKG_DIR / "benchmarks" / f"{name.removeprefix('bench_')}.py"
    return bench if name.startswith("bench_") and bench.is_file() else _PKG_DIR / f"{name}.py"


def _tree(name: str | Path) -> ast.Module:
    """The parsed source of experiment ``name`` (a stem in this package) or of the file ``name``."""
    path = name if isinstance(name, Path) else _path(name)
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _constant(name: str | Path, attr: str, default):
    """The module-level literal ``attr`` of experiment ``name`` (read from its source), or ``default``:
    its value after every module-level ``attr = literal`` and ``attr += literal`` in turn, as an import
    leaves it (``default`` when one of them is not a literal)."""
    value = default
    for node in _tree(name).body:
        target = node.target if isinstance(node, ast.AugAssign) else None
        targets = node.targets if isinstance(node, ast.Assign) else [target]
        if not any(isinstance(t, ast.Name) and t.id == attr for t in targets):
            continue
        if target is not None and not isinstance(node.op, ast.Add):
            return default
        try:
            literal = ast.literal_eval(node.value)
            value = literal if target is None else value + literal
        except (ValueError, TypeError):
            return default
    return value


def defines(name: str | Path, function: str) -> bool:
    """Whether experiment ``name`` (or the file ``name``) defines ``function`` at module level: an
    experiment module defines ``compute`` (an unreadable or unparsable file defines nothing)."""
    try:
        body = _tree(name).body
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return False
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == function for n in body)


def assigns(name: str | Path, attr: str) -> bool:
    """Whether experiment ``name`` assigns ``attr`` at module level (``CLAIMS = [...]``)."""
    try:
        body = _tree(name).body
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return False
    return any(
        isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == attr for t in n.targets)
        for n in body
    )


def title(name: str) -> str:
    """The module's ``TITLE`` (a string literal), or ``""``."""
    return str(_constant(name, "TITLE", ""))


def runs_alone(name: str | Path) -> bool:
    """The module's ``RUN_ALONE`` (default False): with ``--jobs N`` it runs when nothing else runs.

    An experiment sets it when its timing rows time milliseconds of work or memory-bound products, which
    another experiment running beside it shifts by more than their decision band (the other core shares
    the L3 cache and the memory bus).
    """
    return _constant(name, "RUN_ALONE", False) is True


def docstring(name: str) -> str:
    """The module docstring, or ``""``."""
    return ast.get_docstring(_tree(name)) or ""


def runtime_line(name: str, *folders) -> str:
    """``"Typical time: 3 min 10 s (full run), 4.2 s with --quick (recorded 2026-11-23)."``"""
    folders = folders or (FIGURES_DIR,)
    found = {}
    for folder in reversed(folders):
        found.update(_runtimes.read(folder))
    full, quick = found.get((name, False)), found.get((name, True))
    if full is None and quick is None:
        return (
            "Typical time: not recorded yet (each run writes its duration to <out>/runtimes.csv; the "
            "committed figures/runtimes.csv comes from the full run)."
        )
    parts = [f"{_runtimes.fmt_seconds(full[0]) if full else '? (not recorded)'} (full run)"]
    parts.append(f"{_runtimes.fmt_seconds(quick[0]) if quick else '? (not recorded)'} with --quick")
    dates = sorted({d for d in (full and full[1], quick and quick[1]) if d})
    when = f" (recorded {', '.join(dates)} on the machine that made figures/)" if dates else ""
    return f"Typical time: {', '.join(parts)}{when}."


def describe(name: str, module=None) -> str:
    """The ``--help`` text of experiment ``name``: title, figure, time, docstring and claims.

    ``module`` is the imported module when available (its ``CLAIMS`` are listed); without it the module
    is imported here.
    """
    if module is None:
        import importlib

        path = _path(name)
        package = "experiments.benchmarks" if path.parent.name == "benchmarks" else "experiments"
        module = importlib.import_module(f"{package}.{path.stem}")
    head = getattr(module, "TITLE", "") or name
    doc = textwrap.dedent(module.__doc__ or "").strip()
    lines = [head, "=" * min(len(head), 100), "", f"Reproduces: {head}", runtime_line(name), ""]
    if doc:
        lines += ["Choices and protocol (module docstring):", "", doc, ""]
    claims = list(getattr(module, "CLAIMS", []) or [])
    if claims:
        lines += [f"Claims checked ({len(claims)}; verdicts in CLAIMS.md, `repro claims {name}`):"]
        for c in claims:
            mark = " [timing: machine-dependent]" if getattr(c, "machine_dependent", False) else ""
            text = f"- {c.id}{mark}: {c.sentence}" + (f" Published: {c.published}." if c.published else "")
            lines += textwrap.wrap(text, 100, subsequent_indent="  ")
        lines.append("")
    goals = list(getattr(module, "GOALS", []) or [])
    if goals:
        lines += [f"Goals measured ({len(goals)}; met or missed in BENCHMARKS.md):"]
        for g in goals:
            text = f"- {g.id}: {g.sentence}" + (f" Goal: {g.published}." if g.published else "")
            lines += textwrap.wrap(text, 100, subsequent_indent="  ")
        lines.append("")
    if goals:
        lines += [
            "Outputs in --out (default figures/ in a source checkout, ./repro-figures outside one): "
            f"{name}.csv, {name}.png, goals/{name}.csv, BENCHMARKS.md, runtimes.csv"
            + (f", claims/{name}.csv, CLAIMS.md." if claims else "."),
        ]
        return "\n".join(lines)
    lines += [
        f"Outputs in --out (default figures/ in a source checkout, ./repro-figures outside one): {name}.csv, "
        f"{name}.png, claims/{name}.csv, CLAIMS.md, runtimes.csv.",
    ]
    return "\n".join(lines)
