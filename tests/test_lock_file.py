"""``requirements-lock.txt`` pins one exact environment within the ranges of ``pyproject.toml``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements-lock.txt"


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements() -> list[str]:
    """The dependencies of the package and of its test extra, the extras they bring included."""
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    out, todo, seen = list(project["dependencies"]), ["test"], set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for req in extras[extra]:
            own = re.fullmatch(rf"{re.escape(project['name'])}\[([^\]]+)\]", req.replace(" ", ""))
            if own:
                todo += own.group(1).split(",")
            else:
                out.append(req)
    return out


def _pins() -> dict[str, str]:
    pins = {}
    for line in LOCK.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        assert sep and version and not any(c in version for c in "<>=!~*,; "), f"not an exact pin: {line!r}"
        assert _norm(name) not in pins, f"pinned twice: {name}"
        pins[_norm(name)] = version
    return pins


def test_every_dependency_is_pinned_within_its_range():
    from packaging.requirements import Requirement

    pins = _pins()
    for text in _requirements():
        req = Requirement(text)
        name = _norm(req.name)
        assert name in pins, f"{req.name} (pyproject.toml: {text!r}) is not pinned in {LOCK.name}"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"{LOCK.name} pins {req.name}=={pins[name]}, outside pyproject.toml's {text!r}"
        )


def test_the_header_says_what_it_pins_and_how_to_install_it():
    head = LOCK.read_text().split("\n\n")[0] if "\n\n" in LOCK.read_text() else LOCK.read_text()[:2000]
    assert "Python 3.11" in head and "Linux x86-64" in head
    assert "pip install -r requirements-lock.txt -e ." in LOCK.read_text()
    assert "repro-constrained-pca" not in _pins()  # the package itself comes from -e .
