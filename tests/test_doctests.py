"""The docstrings: their examples run, and every public name documents what it takes, returns and sets.

* Every module of ``repro`` (``repro.baselines`` included) and ``data_fetch`` has its doctests run;
  any failure fails the test with the doctest report. The data_fetch examples read the data files, so
  their modules' tests are marked ``data`` (see ``tests/conftest.py``: they skip without a mirror or
  cache, and fail on a missing file when ``REPRO_DATA_MIRROR`` is set).
* Every public name (``repro.__all__``, ``repro.baselines.__all__``, ``repro.metrics.__all__``,
  ``repro.linalg.__all__``, ``data_fetch.__all__``) has a numpydoc docstring, parsed by
  :mod:`numpydoc.docscrape`, with a Parameters section naming exactly the arguments of its signature
  (where it takes any), each described, its sections in numpydoc's order, a Returns section
  (functions), an Attributes section naming every attribute that ``fit`` sets (estimators: fitted here
  on small data, every ``vars(est)`` key ending in ``_``), and an Examples section whose doctest is
  among those that the first test runs. Their public methods (``fit``, ``transform``, ...) have the
  Parameters and Returns sections.
"""

from __future__ import annotations

import dataclasses
import doctest
import importlib
import inspect
import io
import pkgutil
import types
import warnings

import numpy as np
import pytest
from numpydoc.docscrape import ClassDoc, FunctionDoc
from numpydoc.validate import validate

import data_fetch
import repro
import repro.baselines
import repro.linalg
import repro.metrics


def _modules() -> list[str]:
    names = []
    for pkg in (repro, data_fetch):
        names.append(pkg.__name__)
        for info in pkgutil.walk_packages(pkg.__path__, prefix=pkg.__name__ + "."):
            if not info.name.endswith("__main__"):  # running it would start the CLI
                names.append(info.name)
    return sorted(names)


MODULES = _modules()
# Modules whose examples read dataset files: marked ``data`` with no names, i.e. every required registry
# file (see tests/conftest.py).
DATA_MODULES = {
    "data_fetch._cli",
    "data_fetch._registry",
    "data_fetch.loaders",
    "data_fetch.mnist_variations",
}


class _Finder(doctest.DocTestFinder):
    """The standard finder, except that a decorated function (``functools.wraps``: ``blas_limited``,
    ``rescaled``) belongs to the module of the function it wraps, not to the decorator's module."""

    def _from_module(self, module, object):
        return super()._from_module(module, inspect.unwrap(object) if callable(object) else object)


def _run_doctests(modname: str) -> tuple[int, int, str]:
    module = importlib.import_module(modname)
    finder = _Finder(exclude_empty=True)
    runner = doctest.DocTestRunner(verbose=False)
    out = io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an example that warns is an example to fix
        for test in finder.find(module, modname):
            runner.run(test, out=out.write)
    return runner.failures, runner.tries, out.getvalue()


def _module_param(name: str):
    return pytest.param(name, marks=pytest.mark.data()) if name in DATA_MODULES else name


@pytest.mark.parametrize("modname", [_module_param(m) for m in MODULES])
def test_doctests_pass(modname):
    failures, _tries, report = _run_doctests(modname)
    assert failures == 0, f"{failures} doctest failure(s) in {modname}:\n{report}"


# --------------------------------------------------------------------------- the public names
def _public() -> dict[str, object]:
    spaces = [
        (repro, repro.__all__),
        (repro.baselines, repro.baselines.__all__),
        (repro.metrics, repro.metrics.__all__),
        (repro.linalg, repro.linalg.__all__),
        (data_fetch, data_fetch.__all__),
    ]
    out: dict[str, object] = {}
    seen: set[int] = set()
    for mod, names in spaces:
        for name in names:
            obj = getattr(mod, name)
            if isinstance(obj, types.ModuleType) or not callable(obj) or id(obj) in seen:
                continue  # submodules have their own page; constants cannot carry a docstring
            seen.add(id(obj))
            out[f"{mod.__name__}.{name}"] = obj
    return out


def _is_ours(obj) -> bool:
    return obj.__module__.split(".")[0] in ("repro", "data_fetch")


# Re-exported names of other projects (``repro.ConvergenceWarning`` is scikit-learn's) are documented
# there; the docs link to them. Everything else is checked here.
FOREIGN = {q: obj for q, obj in _public().items() if not _is_ours(obj)}
PUBLIC = {q: obj for q, obj in _public().items() if _is_ours(obj)}


def test_foreign_names_are_documented_upstream():
    assert set(FOREIGN) == {"repro.ConvergenceWarning"}
    for obj in FOREIGN.values():
        assert obj.__doc__ and obj.__doc__.strip()


def _is_record(cls) -> bool:
    """A result container (dataclass or NamedTuple): its fields are documented as Attributes."""
    return dataclasses.is_dataclass(cls) or (issubclass(cls, tuple) and hasattr(cls, "_fields"))


def _signature_names(obj) -> list[str]:
    if inspect.isclass(obj) and "__init__" not in vars(obj) and not _is_record(obj):
        if issubclass(obj, BaseException):
            return []  # an exception or warning that keeps BaseException's (*args)
    sig = inspect.signature(obj)
    names = []
    for p in sig.parameters.values():
        prefix = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
        names.append(prefix + p.name)
    return names


# numpydoc's own checks that are enforced: sections in the standard order, every parameter described.
NUMPYDOC_CHECKS = {"GL07", "PR07"}


def _documented(section) -> list[str]:
    names = []
    for item in section:
        names.extend(n.strip() for n in item.name.split(",") if n.strip())
    return names


def _doc(obj):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpydoc warns on unknown sections and malformed headers
        return (
            ClassDoc(obj, config={"show_class_members": False}) if inspect.isclass(obj) else FunctionDoc(obj)
        )


def _small_data(n=40, d=8):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, 3)) @ rng.standard_normal((3, d)) + 0.1 * rng.standard_normal((n, d))


# How each estimator is fitted to list the attributes that ``fit`` sets. A variant that sets more
# attributes (missing values, a path) is a second entry.
FITS = {
    "repro.EMPCA": [
        lambda X: repro.EMPCA(n_components=2, random_state=0).fit(X),
        lambda X: repro.EMPCA(n_components=2, random_state=0).fit(np.where(np.eye(*X.shape) > 0, np.nan, X)),
    ],
    "repro.SensiblePCA": [lambda X: repro.SensiblePCA(n_components=2, random_state=0).fit(X)],
    "repro.PPCAImputer": [
        lambda X: repro.PPCAImputer(2, random_state=0).fit(np.where(np.eye(*X.shape) > 0, np.nan, X)),
    ],
    "repro.OptimalSparsePCA": [
        lambda X: repro.OptimalSparsePCA(n_components=2, cardinality=3).fit(X),
    ],
    "repro.EMSparsePCA": [
        lambda X: repro.EMSparsePCA(n_components=2, cardinality=3, random_state=0).fit(X),
        lambda X: repro.EMSparsePCA(n_components=2, cardinality=3, nonneg=True, random_state=0).fit(X),
    ],
    "repro.NSPCA": [lambda X: repro.NSPCA(n_components=2, alpha=1.0, beta=1.0, random_state=0).fit(X)],
    "repro.SpannogramPCA": [
        lambda X: repro.SpannogramPCA(n_components=2, cardinality=3, n_samples=200, random_state=0).fit(X)
    ],
    "repro.GSPPCA": [lambda X: repro.GSPPCA(n_components=2, random_state=0).fit(X)],
    "repro.baselines.GSPCA": [lambda X: repro.baselines.GSPCA(n_components=2, cardinality=3).fit(X)],
    "repro.baselines.SPCAZou": [lambda X: repro.baselines.SPCAZou(n_components=2, cardinality=3).fit(X)],
    "repro.baselines.SSPCA": [
        lambda X: repro.baselines.SSPCA(n_components=2, n_selected=3, random_state=0).fit(X),
        lambda X: repro.baselines.SSPCA(n_components=2, cv=2, max_iter=20, random_state=0).fit(X),
    ],
}


def _fitted_attributes(qualname: str) -> set[str]:
    X = _small_data()
    attrs: set[str] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence on toy data is not what is tested here
        for fit in FITS[qualname]:
            est = fit(X)
            attrs |= {k for k in vars(est) if k.endswith("_") and not k.startswith("_")}
    return attrs


def _examples_run(obj) -> bool:
    """Its Examples are found by the doctest finder of its own module (so the first test runs them)."""
    module = importlib.import_module(obj.__module__)
    tests = _Finder(exclude_empty=True).find(module, module.__name__)
    target = f"{module.__name__}.{obj.__qualname__}"
    return any(t.name == target and t.examples for t in tests)


@pytest.mark.parametrize("qualname", sorted(PUBLIC))
def test_public_name_is_documented(qualname):
    obj = PUBLIC[qualname]
    doc = _doc(obj)
    problems = []
    is_class = inspect.isclass(obj)
    record = is_class and _is_record(obj)
    wanted = [n.lstrip("*") for n in _signature_names(obj)]
    section = doc["Attributes"] if record else doc["Parameters"]
    documented = [n.lstrip("*") for n in _documented(section)]
    if sorted(wanted) != sorted(documented):
        problems.append(
            f"{'Attributes' if record else 'Parameters'} name {documented}, the signature has {wanted}"
        )
    if not is_class and not (doc["Returns"] or doc["Yields"]):
        problems.append("no Returns section")
    if is_class and hasattr(obj, "fit"):
        if qualname not in FITS:
            problems.append("an estimator without an entry in FITS (tests/test_doctests.py)")
        else:
            missing = _fitted_attributes(qualname) - set(_documented(doc["Attributes"]))
            if missing:
                problems.append(f"fitted attributes not in Attributes: {sorted(missing)}")
    path = f"{obj.__module__}.{obj.__qualname__}"
    problems += [f"{code}: {msg}" for code, msg in validate(path)["errors"] if code in NUMPYDOC_CHECKS]
    if not any(">>>" in line for line in doc["Examples"]):
        problems.append("no Examples section with a doctest")
    elif not _examples_run(obj):
        problems.append("its Examples are not found by doctest in its module")
    assert not problems, f"{qualname}: " + "; ".join(problems)


def test_every_estimator_is_fitted_here():
    estimators = {q for q, obj in PUBLIC.items() if inspect.isclass(obj) and hasattr(obj, "fit")}
    assert estimators == set(FITS)


def _public_methods() -> dict[str, object]:
    """The public methods of the public classes that this project defines (inherited ones included)."""
    out: dict[str, object] = {}
    for obj in PUBLIC.values():
        if not inspect.isclass(obj):
            continue
        for name, meth in inspect.getmembers(obj, inspect.isfunction):
            if not name.startswith("_") and _is_ours(meth):
                out.setdefault(f"{meth.__module__}.{meth.__qualname__}", meth)
    return out


METHODS = _public_methods()


@pytest.mark.parametrize("qualname", sorted(METHODS))
def test_public_method_is_documented(qualname):
    meth = METHODS[qualname]
    doc = _doc(meth)
    wanted = [n.lstrip("*") for n in _signature_names(meth) if n not in ("self", "cls")]
    documented = [n.lstrip("*") for n in _documented(doc["Parameters"])]
    problems = []
    if sorted(wanted) != sorted(documented):
        problems.append(f"Parameters name {documented}, the signature has {wanted}")
    if not (doc["Returns"] or doc["Yields"]):
        problems.append("no Returns section")
    problems += [f"{code}: {msg}" for code, msg in validate(qualname)["errors"] if code in NUMPYDOC_CHECKS]
    assert not problems, f"{qualname}: " + "; ".join(problems)
