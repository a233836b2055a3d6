"""``requirements-lock.txt`` pins one exact environment within the ranges of ``pyproject.toml``: the one that
made the committed ``figures/``, as its record ``figures/environment.json`` gives it, version by version."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from experiments.runner import environment

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


def _committed_record() -> dict:
    record = environment.read(ROOT / "figures")
    assert record is not None, "figures/ has no readable environment.json"
    return record


def test_the_lock_is_the_committed_runs_environment_version_by_version():
    env = _committed_record()["environment"]
    pins = _pins()
    recorded = {**env["packages"], **env.get("installed", {})}
    for name, version in recorded.items():
        if version == "(not installed)":
            assert _norm(name) not in pins, f"{name} is pinned but was not installed in the committed run"
        else:
            assert pins.get(_norm(name)) == version, (
                f"figures/environment.json records {name} {version}, {LOCK.name} pins {pins.get(_norm(name))}"
            )
    if env.get("installed"):  # the record lists every distribution: the lock is exactly what it writes
        assert set(pins) == {_norm(n) for n in env["installed"]}
        assert LOCK.read_text() == environment.lock_text(_committed_record())
    else:  # an older record: the writer refuses it rather than guess the pins it does not hold
        with pytest.raises(ValueError, match="lists no installed distributions"):
            environment.lock_text(_committed_record())


def test_the_header_is_the_one_the_record_gives():
    text = LOCK.read_text()
    header = environment.lock_header(_committed_record())
    assert text.startswith(header + "\n")
    env = _committed_record()["environment"]
    # the user guide's install command is the lock's own
    guide = (ROOT / "docs" / "user_guide" / "determinism.rst").read_text()
    command = environment.install_command(env["python"])
    assert command in guide and command in header
    assert f"Python {env['python']}" in header and env["libc"] in header
    assert all(line.startswith("#") for line in header.splitlines())
    assert all(len(line) <= 110 for line in header.splitlines())


def _record(**installed) -> dict:
    env = {
        "python": "3.11.7",
        "python_implementation": "CPython",
        "os": "Linux 6.1 (x86_64)",
        "libc": "glibc 2.36",
        "packages": {"numpy": "2.4.6"},
        "installed": installed,
        "git_commit": "0123456789abcdef + changes",
    }
    return {"environment": env, "experiments": ["a", "b"], "quick": False, "seed": 0}


def test_lock_text_pins_every_installed_distribution_in_pip_freeze_order():
    text = environment.lock_text(_record(scipy="1.17.1", Jinja2="3.1.6", numpy="2.4.6", alabaster="1.0.0"))
    words = " ".join(line.lstrip("# ") for line in text.split("\n\n")[0].splitlines())
    assert "Python 3.11.7 (CPython) on Linux x86-64 (glibc 2.36); a full run of 2 experiments" in words
    assert "seed 0, commit 0123456789ab + changes" in words and "Written from that record" in words
    assert "python3.11 -m venv .venv && .venv/bin/pip install -r requirements-lock.txt -e ." in text
    assert text.endswith("\n\nalabaster==1.0.0\nJinja2==3.1.6\nnumpy==2.4.6\nscipy==1.17.1\n")
    with pytest.raises(ValueError, match="lists no installed distributions"):
        environment.lock_text(_record())


def test_the_lock_command_writes_and_checks(tmp_path, capsys):
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / environment.JSON_NAME).write_text(json.dumps(_record(numpy="2.4.6")))
    out = tmp_path / "lock.txt"
    args = ["lock", "--record", str(tmp_path / "rec"), "--out", str(out)]
    assert environment.main([*args, "--check"]) == 1  # not there yet
    assert environment.main(args) == 0 and out.read_text().endswith("\n\nnumpy==2.4.6\n")
    assert environment.main([*args, "--check"]) == 0
    out.write_text(out.read_text().replace("2.4.6", "2.4.5"))
    assert environment.main([*args, "--check"]) == 1
    (tmp_path / "old").mkdir()  # a record without the installed list, and no record at all: exit 2
    (tmp_path / "old" / environment.JSON_NAME).write_text(json.dumps(_record()))
    assert environment.main(["lock", "--record", str(tmp_path / "old"), "--out", str(out)]) == 2
    assert "lists no installed distributions" in capsys.readouterr().err
    assert environment.main(["lock", "--record", str(tmp_path), "--out", str(out)]) == 2
    assert out.read_text().endswith("numpy==2.4.5\n")  # a refused run writes nothing


def test_a_run_records_every_installed_distribution_as_pip_freeze_would_pin_it():
    from importlib import metadata

    installed = environment.collect()["installed"]
    assert installed["numpy"] == metadata.version("numpy")
    assert installed["pytest"] == metadata.version("pytest")
    assert not {_norm(n) for n in installed} & {"pip", "setuptools", "repro-constrained-pca"}
    assert list(installed) == sorted(installed, key=str.lower)
    # the names as the lock spells them (pip freeze: the metadata's own spelling)
    assert {_norm(n) for n in installed} >= {_norm(n) for n in environment.PACKAGES if n != "llvmlite"} - {
        n for n, v in environment.collect()["packages"].items() if v == "(not installed)"
    }


def test_the_installed_list_is_shown_compactly_and_compared_by_verify():
    env = _record(numpy="2.4.6", scipy="1.17.1")["environment"]
    other = json.loads(json.dumps(env))
    other["installed"]["scipy"] = "1.16.0"
    text = environment.markdown({"environment": env, "experiments": ["a"], "quick": False, "seed": 0})
    assert "Installed distributions (2" in text and "numpy==2.4.6, scipy==1.17.1" in text
    assert "| installed." not in text  # not one table row per distribution
    assert environment.differences(env, other) == ["installed.scipy"]
    pair = environment.render_pair(env, other, "reference", "this run").splitlines()
    assert any(line.startswith("  * installed.scipy") and "1.16.0" in line for line in pair)
    assert not any("installed.numpy" in line for line in pair)  # equal ones are counted, not listed
    assert pair[-1].strip() == "(and 1 installed distribution(s) of the same version on both sides)"
    older = {k: v for k, v in env.items() if k != "installed"}  # a record from before the list: unknown
    assert environment.differences(older, other) == []
    pair = environment.render_pair(older, other, "reference", "this run").splitlines()
    assert pair[0] == "environments: 0 field(s) differ (marked *)"
    assert not any("installed." in line for line in pair)
    assert pair[-1].strip() == "(installed distributions not compared: one side records them, this run)"
