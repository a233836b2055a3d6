"""Which experiments exist and what they are, without importing them (standard library only).

An experiment is a module of :mod:`experiments` whose name does not start with ``_`` (the data overview
first, then the papers in name order, the benchmarks last), or, named by a dotted path, a ``.py`` module
outside the package that defines ``compute``. Everything here is read from the file system and the
sources (``ast``, through :mod:`._describe`), so ``repro --help`` and ``repro list`` load no numerical
code. The run engine (:mod:`.engine`), ``repro verify`` (:mod:`.verify`) and the argparse front
(:mod:`.cli`) all ask this module; it imports none of them.
"""

from __future__ import annotations

from pathlib import Path

from . import _args, _describe

__all__ = [
    "PKG_DIR",
    "experiment_names",
    "module_name",
    "paper",
    "papers",
    "source",
    "stem",
    "title",
]

#: experiments/: the experiment modules.
PKG_DIR = Path(__file__).resolve().parents[1]
_NOT_EXPERIMENTS = {"__main__"}


def experiment_names() -> list[str]:
    """Every experiment module: the data overview first, then papers in order, benchmarks last."""
    names = [
        p.stem for p in PKG_DIR.glob("*.py") if not p.stem.startswith("_") and p.stem not in _NOT_EXPERIMENTS
    ]

    def key(name: str):
        return (name != "data_overview", name.startswith("bench_"), name)

    return sorted(names, key=key)


def paper(name: str) -> str:
    """The paper of experiment ``name``: its name's prefix (``sigg2008`` of ``sigg2008_fig2``)."""
    return name.split("_", 1)[0]


def papers() -> list[str]:
    """The papers of ``--paper``: the name prefixes of the experiments, in the order of the experiments."""
    return list(dict.fromkeys(paper(n) for n in experiment_names()))


def title(name: str) -> str:
    """The experiment's ``TITLE``, read from its source (``""`` when it has none)."""
    return _describe.title(name)


def module_name(name: str) -> str:
    """``sigg2008_fig2`` -> ``experiments.sigg2008_fig2``; a dotted name is a module path used as is."""
    return name if "." in name else f"experiments.{name}"


def stem(name: str) -> str:
    """The name of an experiment's outputs: the last part of its module path (``pkg.toy`` -> ``toy``)."""
    return name.rsplit(".", 1)[-1]


def source(name: str) -> Path | None:
    """The source file of experiment ``name``, without importing it.

    None when there is no such module, or the module is not an experiment: no source file, or no
    top-level ``compute``.
    """
    if _args.name_problem(name):
        return None
    if "." not in name:
        path = PKG_DIR / f"{name}.py"
        return path if path.is_file() and name in experiment_names() else None
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py") or not Path(spec.origin).is_file():
        return None  # a built-in or frozen module (os.path), a package without source, ...
    return Path(spec.origin) if _describe.defines(Path(spec.origin), "compute") else None
