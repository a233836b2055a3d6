"""The import graph: no cycle among the modules of ``repro``, ``data_fetch`` and ``experiments``; the
library imports nothing from the experiments; and X validated once per call.

The graph is read from the sources with ``ast`` (imports inside functions included, relative imports
resolved), so a cycle hidden behind a deferred import fails here as well as one at module level. An
edge ``from P import name`` goes to the module ``P.name`` when there is one, else to ``P`` itself; the
implicit import of a parent package is not an edge (every submodule would otherwise depend on
``repro/__init__``, which imports them all).
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
#: The packages whose modules the graph holds: the library, the data download, the experiments.
PACKAGES = ("repro", "data_fetch", "experiments")


def _modules() -> dict[str, Path]:
    mods = {}
    for path in (p for pkg in PACKAGES for p in sorted((REPO / pkg).rglob("*.py"))):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


def _resolve(module: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_pkg else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph() -> dict[str, set[str]]:
    """``module -> modules of PACKAGES it imports`` (anywhere in its source)."""
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                src = _resolve(name, path.name == "__init__.py", node)
                targets = [f"{src}.{a.name}" if f"{src}.{a.name}" in mods else src for a in node.names]
            else:
                continue
            for t in targets:
                while t and t not in mods:  # `import repro.x.y` of a name below a module
                    t = t.rpartition(".")[0]
                if t and t != name:
                    edges.add(t)
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a list of modules (first repeated at the end), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(u):
        state[u] = 1
        stack.append(u)
        for v in sorted(graph.get(u, ())):
            if state.get(v) == 1:
                return [*stack[stack.index(v) :], v]
            if v not in state and (c := visit(v)):
                return c
        stack.pop()
        state[u] = 2
        return None

    for u in sorted(graph):
        if u not in state and (c := visit(u)):
            return c
    return None


def test_cycle_finder_finds_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_graph_reads_deferred_and_relative_imports():
    g = import_graph()
    assert "repro._validation" in g["repro.linalg"]  # module level, relative
    assert "repro._linalg_kernels" in g["repro._chunked"]  # inside a function
    assert "repro._jit" in g["repro.em_pca._kernels"]  # `from .._jit import njit`: relative, two levels


def test_graph_holds_the_experiments_and_the_data_package():
    g = import_graph()
    assert "experiments.runner.claims" in g["experiments.runner._common"]  # `from . import claims as ledger`
    assert "data_fetch._needs" in g["experiments.runner._preflight"]  # inside a function
    assert "repro" in g["experiments.benchmarks._gsppca"]  # `from repro import GSPPCA`: the package


def test_no_import_cycle():
    """No cycle among the modules of ``repro``, ``data_fetch`` and ``experiments`` (the runner's argparse
    front ``cli`` and ``verify`` imported each other while ``cli`` was also the registry and the engine)."""
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_library_imports_nothing_from_the_experiments():
    """``repro`` and ``data_fetch`` stand alone: the library works without the experiments (a benchmark
    that needs a hook passes a callback; the library does not import it)."""
    bad = sorted(
        f"{u} -> {v}"
        for u, vs in import_graph().items()
        if not u.startswith("experiments")
        for v in vs
        if v.split(".")[0] == "experiments"
    )
    assert not bad, f"the library imports the experiments: {bad}"


# --------------------------------------------------------------------------- experiments use the public API
LIBRARY = ("repro", "data_fetch")
#: Private library names the experiments still reach, each with why it is not public yet. Nothing else may
#: be added here: a figure that needs a library name gets a public one (a documented function in its
#: module's ``__all__``), or the helper moves into the experiment.
PENDING: dict[str, str] = {}


def _private(parts) -> bool:
    return any(p.startswith("_") and not (p.startswith("__") and p.endswith("__")) for p in parts)


def private_library_names(path: Path) -> list[tuple[int, str]]:
    """``(line, dotted name)`` of every private name of ``repro`` or ``data_fetch`` that ``path`` imports:
    a private module or name in an import (``from repro._validation import X``, ``from repro.gsppca import
    _vem_loop``), or a private attribute of an imported library module (``gsppca._vem_loop``)."""
    tree = ast.parse(path.read_text(), str(path))
    modules = _modules()
    bound: dict[str, str] = {}  # local name -> the library module it is bound to
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in LIBRARY:
                    if _private(a.name.split(".")):
                        found.append((node.lineno, a.name))
                    bound[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif (
            isinstance(node, ast.ImportFrom)
            and not node.level
            and (node.module or "").split(".")[0] in LIBRARY
        ):
            for a in node.names:
                full = f"{node.module}.{a.name}"
                if _private(full.split(".")):
                    found.append((node.lineno, full))
                if full in modules:
                    bound[a.asname or a.name] = full
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain, base = [], node
            while isinstance(base, ast.Attribute):
                chain.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name) and base.id in bound and _private(chain):
                found.append((node.lineno, ".".join([bound[base.id], *reversed(chain)])))
    return sorted(set(found))


def test_private_name_finder(tmp_path):
    import textwrap

    src = textwrap.dedent(
        """
        import repro.gsppca as g
        from repro import gsppca, _chunked, EMPCA
        from repro.spannogram import _run_pass, spannogram_exact
        from repro._validation import ConvergenceWarning
        from experiments.runner import _common

        def f():
            return gsppca._vem_loop, g._ranking, gsppca.GSPPCA, _common.Config, repro.__version__
        """
    )
    path = tmp_path / "probe.py"
    path.write_text(src)
    assert private_library_names(path) == [
        (3, "repro._chunked"),
        (4, "repro.spannogram._run_pass"),
        (5, "repro._validation.ConvergenceWarning"),
        (9, "repro.gsppca._ranking"),
        (9, "repro.gsppca._vem_loop"),
    ]


def test_experiments_use_the_public_api_only():
    """No experiment imports a private name of the library: a figure is made with what a user has. The
    experiments' own helper modules (``experiments._asteris``, ``experiments.runner._common``) are theirs."""
    folders = (REPO / "experiments", REPO / "experiments" / "benchmarks")
    modules = sorted(p for folder in folders for p in folder.glob("*.py"))
    bad = [
        f"{path.relative_to(REPO)}:{line}: {name}"
        for path in modules
        for line, name in private_library_names(path)
        if name not in PENDING
    ]
    assert not bad, "private library names imported by experiments:\n" + "\n".join(bad)
    used = {name for path in modules for _, name in private_library_names(path)}
    assert set(PENDING) <= used, f"no longer used, remove from PENDING: {sorted(set(PENDING) - used)}"


def test_no_package_init_re_exports_a_private_name():
    """A package's ``__init__`` holds its public names only: a private helper is imported from the module
    that defines it (``repro.em_sparse_pca.algorithm._em_block``), so ``__init__`` is not a second home
    for it."""
    bad = []
    for path in sorted((REPO / "repro").rglob("__init__.py")):
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, ast.ImportFrom):
                for a in node.names:
                    if _private([a.asname or a.name]):
                        bad.append(f"{path.relative_to(REPO)}:{node.lineno}: {a.asname or a.name}")
    assert not bad, "private names re-exported by package __init__s:\n" + "\n".join(bad)


def test_validation_is_at_the_bottom():
    assert import_graph()["repro._validation"] == set()


# --------------------------------------------------------------------------- X validated once per public call
def _count_checks(monkeypatch, shape) -> list:
    """Wrap ``check_array`` (and ``_check_array``, which also reports whether NaN was found) wherever the
    library holds it, but ``_check_array`` inside ``repro._validation`` (``check_array`` calls it); record
    the calls on an array of ``shape``."""
    import sys

    from repro import _validation

    calls = []

    def counting(original):
        def wrapper(X, *args, **kwargs):
            if np.shape(X) == shape:
                calls.append(kwargs.get("name", args[0] if args else "X"))
            return original(X, *args, **kwargs)

        return wrapper

    for attr in ("check_array", "_check_array"):
        original = getattr(_validation, attr)
        wrapped = counting(original)
        for name, module in list(sys.modules.items()):
            in_repro = name == "repro" or name.startswith("repro.")
            if attr == "_check_array" and module is _validation:
                continue
            if in_repro and getattr(module, attr, None) is original:
                monkeypatch.setattr(module, attr, wrapped)
    return calls


def _fits():
    from repro import EMPCA, EMSparsePCA, SensiblePCA, em_pca, em_sparse_pca, em_sparse_pca_path
    from repro.em_pca import ppca_closed_form, sensible_pca

    return {
        "EMPCA.fit": lambda X: EMPCA(2, random_state=0).fit(X),
        "EMPCA.fit k=1": lambda X: EMPCA(1, random_state=0).fit(X),
        "SensiblePCA.fit": lambda X: SensiblePCA(2, random_state=0).fit(X),
        "EMSparsePCA.fit sparse": lambda X: EMSparsePCA(2, cardinality=3, random_state=0).fit(X),
        "EMSparsePCA.fit nonneg": lambda X: EMSparsePCA(2, cardinality=3, nonneg=True, random_state=0).fit(X),
        "em_pca": lambda X: em_pca(X, 2, random_state=0),
        "sensible_pca": lambda X: sensible_pca(X, 2, random_state=0),
        "ppca_closed_form": lambda X: ppca_closed_form(X, 2),
        "em_sparse_pca": lambda X: em_sparse_pca(X, 1, cardinality=3, random_state=0),
        "em_sparse_pca_path": lambda X: em_sparse_pca_path(X, [2, 4], random_state=0),
    }


@pytest.mark.parametrize("missing", [False, True], ids=["complete", "missing values"])
@pytest.mark.parametrize("kind", ["float64", "list"])
@pytest.mark.parametrize("call", list(_fits()))
def test_x_is_validated_once_per_public_call(monkeypatch, call, kind, missing):
    if missing and call == "ppca_closed_form":
        pytest.skip("the closed form takes complete data only")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 8)) @ rng.standard_normal((8, 8))
    if missing:
        X[[1, 4, 7], [2, 5, 0]] = np.nan
    data = X.tolist() if kind == "list" else X
    calls = _count_checks(monkeypatch, X.shape)
    _fits()[call](data)
    assert len(calls) == 1, f"{call} checked X {len(calls)} times"


def _optimum_calls():
    from repro import EMSparsePCA, OptimalSparsePCA, optimal_sparse_pca

    return {
        "optimal_sparse_pca": lambda X: optimal_sparse_pca(X, 3),
        "optimal_sparse_pca nonneg": lambda X: optimal_sparse_pca(X, 3, nonneg=True),
        "OptimalSparsePCA.fit": lambda X: OptimalSparsePCA(2, cardinality=3).fit(X),
        "EMSparsePCA.fit certify": lambda X: EMSparsePCA(cardinality=3, certify=True, random_state=0).fit(X),
    }


def _wide_calls():
    from repro import OptimalSparsePCA, optimal_sparse_pca, optimal_sparse_pca_wide

    return {
        "optimal_sparse_pca wide": lambda X: optimal_sparse_pca(X, 3),
        "optimal_sparse_pca_wide": lambda X: optimal_sparse_pca_wide(X, 3),
        "OptimalSparsePCA.fit wide": lambda X: OptimalSparsePCA(2, cardinality=3).fit(X),
    }


@pytest.mark.parametrize("kind", ["float64", "list"])
@pytest.mark.parametrize("call", [*_optimum_calls(), *_wide_calls()])
def test_the_optimum_validates_x_once(monkeypatch, call, kind):
    """The certified optimum's doors check X once; its root heuristics, its wide route and EMSparsePCA's
    certificate take what the door checked."""
    rng = np.random.default_rng(0)
    wide = call in _wide_calls()
    n, p = (12, 110) if wide else (30, 8)
    X = rng.standard_normal((n, 4)) @ rng.standard_normal((4, p)) + 0.1 * rng.standard_normal((n, p))
    calls = _count_checks(monkeypatch, X.shape)
    {**_optimum_calls(), **_wide_calls()}[call](X.tolist() if kind == "list" else X)
    assert len(calls) == 1, f"{call} checked X {len(calls)} times"
