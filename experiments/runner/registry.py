"""Which experiments exist and what they are, without importing them (standard library only).

A paper experiment is a module of :mod:`experiments` whose name does not start with ``_`` (the data
overview first, then the papers in name order); a benchmark is a module of :mod:`experiments.benchmarks`,
named ``bench_<module>`` (``bench_em_pca`` is ``experiments/benchmarks/em_pca.py``); an experiment named
by a dotted path is a ``.py`` module outside the package that defines ``compute``. Everything here is
read from the file system and the sources (``ast``, through :mod:`._describe`), so ``repro --help`` and
``repro list`` load no numerical code. The run engine (:mod:`.engine`), ``repro verify``
(:mod:`.verify`) and the argparse front (:mod:`.cli`) all ask this module; it imports none of them.
"""

from __future__ import annotations

from pathlib import Path

from . import _args, _describe

__all__ = [
    "BENCH_DIR",
    "BENCH_PREFIX",
    "PKG_DIR",
    "benchmark_names",
    "experiment_names",
    "is_benchmark",
    "module_name",
    "paper",
    "paper_names",
    "papers",
    "source",
    "stem",
    "title",
    "verdict_folders",
]

#: experiments/: the experiment modules.
PKG_DIR = Path(__file__).resolve().parents[1]
#: experiments/benchmarks/: the benchmark modules (``repro bench``), outside the reproduction.
BENCH_DIR = PKG_DIR / "benchmarks"
#: A benchmark's name is its module's name after this prefix (its outputs and ledger rows carry it).
BENCH_PREFIX = "bench_"
_NOT_EXPERIMENTS = {"__main__"}


def _modules(folder: Path) -> list[str]:
    stems = (p.stem for p in folder.glob("*.py"))
    return [s for s in stems if not s.startswith("_") and s not in _NOT_EXPERIMENTS]


def paper_names() -> list[str]:
    """The reproduction (``repro run all``): the data overview first, then the papers' modules in order."""
    return sorted(_modules(PKG_DIR), key=lambda name: (name != "data_overview", name))


def benchmark_names() -> list[str]:
    """The benchmarks (``repro bench all``): ``bench_<module>`` for each module of experiments/benchmarks/."""
    return sorted(BENCH_PREFIX + m for m in _modules(BENCH_DIR))


def experiment_names() -> list[str]:
    """Every experiment: the paper experiments (:func:`paper_names`), then the benchmarks."""
    return paper_names() + benchmark_names()


def is_benchmark(name: str) -> bool:
    """True for a benchmark's name (``bench_em_pca``), also for the module path of one."""
    return stem(name) in benchmark_names()


def command(name: str) -> str:
    """The ``repro`` command that runs ``name``: ``"bench"`` for a benchmark, ``"run"`` for the rest."""
    return "bench" if is_benchmark(name) else "run"


def verdict_folders(name: str) -> tuple[str, ...]:
    """The folders of ``<out>`` that hold experiment ``name``'s rows: ``claims`` (the ledger) for a paper
    experiment; ``goals`` (BENCHMARKS.md) for a benchmark, and ``claims`` too when it checks a published
    sentence or number (declares ``CLAIMS``).

    Examples
    --------
    >>> verdict_folders("sigg2008_fig2"), verdict_folders("bench_em_pca")
    (('claims',), ('goals',))
    """
    if not is_benchmark(name):
        return ("claims",)
    return ("goals", "claims") if _describe.assigns(stem(name), "CLAIMS") else ("goals",)


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
    """``sigg2008_fig2`` -> ``experiments.sigg2008_fig2``, ``bench_em_pca`` ->
    ``experiments.benchmarks.em_pca``; a dotted name is a module path used as is."""
    if "." in name:
        return name
    if name.startswith(BENCH_PREFIX) and (BENCH_DIR / f"{name[len(BENCH_PREFIX):]}.py").is_file():
        return f"experiments.benchmarks.{name[len(BENCH_PREFIX):]}"
    return f"experiments.{name}"


def stem(name: str) -> str:
    """The name of an experiment's outputs: the last part of its module path (``pkg.toy`` -> ``toy``);
    a benchmark's module path gives its name (``experiments.benchmarks.em_pca`` -> ``bench_em_pca``).

    Examples
    --------
    >>> stem("experiments.benchmarks.em_pca"), stem("pkg.toy"), stem("sigg2008_fig2")
    ('bench_em_pca', 'toy', 'sigg2008_fig2')
    """
    if name.startswith("experiments.benchmarks."):
        return BENCH_PREFIX + name.rsplit(".", 1)[-1]
    return name.rsplit(".", 1)[-1]


def source(name: str) -> Path | None:
    """The source file of experiment ``name``, without importing it.

    None when there is no such module, or the module is not an experiment: no source file, or no
    top-level ``compute``.
    """
    if _args.name_problem(name):
        return None
    if "." not in name:
        if name not in experiment_names():
            return None
        path = PKG_DIR / f"{module_name(name).split('.', 1)[1].replace('.', '/')}.py"
        return path if path.is_file() else None
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py") or not Path(spec.origin).is_file():
        return None  # a built-in or frozen module (os.path), a package without source, ...
    return Path(spec.origin) if _describe.defines(Path(spec.origin), "compute") else None
