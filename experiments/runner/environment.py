"""The environment of a run: what made its numbers, written beside its ledger.

Two runs of the same code agree bit for bit on one machine, and can differ in the last bits of a
product on another: the BLAS library and the kernel it picked for the CPU, NumPy's SIMD paths, the
thread counts and the versions of NumPy and SciPy decide how a sum is ordered. So every ``repro run``
writes, beside ``CLAIMS.md``:

* ``environment.json``: the record, machine-readable (``{"environment": {...}, "experiments": [...],
  "quick": ..., "seed": ...}``), read back by ``repro verify`` to say what differs between a reference
  and a run when a number moved;
* ``ENVIRONMENT.md``: the same, for a reader.

The environment holds Python's version and implementation, the installed version of each dependency
named in ``pyproject.toml`` (and of llvmlite, Numba's compiler), the exact version of every installed
distribution (``installed``: what ``requirements-lock.txt`` is written from), each BLAS/OpenMP library that
threadpoolctl finds (its API, version, CPU kernel and threads), NumPy's CPU features (the baseline it
was built for, and the optional paths this CPU enables), the CPU model, the operating system, the
environment variables that choose kernels or threads (``OPENBLAS_CORETYPE``, ``NPY_DISABLE_CPU_FEATURES``,
``OMP_NUM_THREADS``...) and the git commit of a source checkout. A later run into the same folder in the
same environment adds its experiments to the record; in another, it replaces the record (the
experiments it does not list were made under an earlier one).

``python -m experiments.runner.environment lock`` writes ``requirements-lock.txt`` from the committed
record (``figures/environment.json``): the exact environment that made ``figures/``, installed with one
command (the lock's header says which).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

__all__ = [
    "JSON_NAME",
    "LOCK_NAME",
    "MD_NAME",
    "collect",
    "differences",
    "install_command",
    "lock_header",
    "lock_text",
    "read",
    "render_pair",
    "write",
]

JSON_NAME = "environment.json"
MD_NAME = "ENVIRONMENT.md"
LOCK_NAME = "requirements-lock.txt"
#: The distribution of this project (installed from the source, never pinned) and the installers that a
#: fresh virtual environment brings with it (``pip freeze`` leaves them out too).
NOT_PINNED = ("repro-constrained-pca", "pip", "setuptools", "wheel", "distribute")

#: The distributions whose versions are recorded: the dependencies of pyproject.toml, and llvmlite.
PACKAGES = (
    "numpy",
    "scipy",
    "scikit-learn",
    "numba",
    "llvmlite",
    "pandas",
    "matplotlib",
    "pooch",
    "tqdm",
    "threadpoolctl",
    "rdata",
    "h5py",
    "dask",
    "distributed",
)
#: The environment variables that choose a kernel, a SIMD path or a thread count.
VARIABLES = (
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
    "OPENBLAS_VERBOSE",
    "OPENBLAS_NUM_THREADS",
    "NPY_DISABLE_CPU_FEATURES",
    "NPY_ENABLE_CPU_FEATURES",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "MKL_CBWR",
    "MKL_ENABLE_INSTRUCTIONS",
    "NUMBA_NUM_THREADS",
    "NUMBA_THREADING_LAYER",
    "NUMBA_CPU_NAME",
    "NUMBA_OPT",
    "PYTHONHASHSEED",
)


def _versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "(not installed)"
    return out


def _canonical(name: str) -> str:
    """A distribution's name as packaging compares it (``PyYAML`` = ``pyyaml``, ``typing_extensions`` =
    ``typing-extensions``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _installed() -> dict[str, str]:
    """Every installed distribution but :data:`NOT_PINNED`, ``{name: version}`` in ``pip freeze``'s order
    and spelling. A name found twice on the path is the first one, the copy that ``import`` sees."""
    from importlib import metadata

    out: dict[str, str] = {}
    seen = {_canonical(n) for n in NOT_PINNED}
    for dist in metadata.distributions():
        name = dist.metadata["Name"] if dist.metadata else None
        if not name or _canonical(name) in seen:
            continue
        seen.add(_canonical(name))
        out[name] = dist.version
    return dict(sorted(out.items(), key=lambda item: item[0].lower()))


def _blas() -> list[dict[str, str]]:
    """Each BLAS or OpenMP library that NumPy and SciPy ship (``numpy.libs``, ``scipy.libs`` or inside
    their packages), as threadpoolctl reports it. Only theirs: threadpoolctl lists every library loaded so
    far, so another package's OpenMP (loaded by whatever the process imported before) would make the record
    depend on the process's history."""
    try:
        import numpy  # noqa: F401  (threadpoolctl lists the libraries loaded so far)
        import scipy.linalg  # noqa: F401
        from threadpoolctl import threadpool_info
    except ImportError as exc:
        return [{"error": f"{type(exc).__name__}: {exc}"}]
    # no thread count: it is whatever limit the process holds at the moment (a test, a threadpool_limits
    # block), not a property of the environment; the experiments set theirs (one, unless RUN_ALONE)
    keys = ("user_api", "internal_api", "version", "architecture", "threading_layer")
    libs = []
    for info in threadpool_info():
        parts = Path(str(info.get("filepath", ""))).parts
        if not any(part.split(".")[0] in ("numpy", "scipy") for part in parts):
            continue
        lib = {k: str(info[k]) for k in keys if info.get(k) is not None}
        lib["library"] = Path(str(info.get("filepath", ""))).name
        libs.append(lib)
    return sorted(libs, key=lambda d: (d.get("user_api", ""), d.get("internal_api", ""), d["library"]))


def _numpy_cpu() -> dict[str, str]:
    try:
        from numpy._core import _multiarray_umath as mu
    except ImportError:  # NumPy 1.x
        try:
            from numpy.core import _multiarray_umath as mu
        except ImportError:
            return {}
    features = getattr(mu, "__cpu_features__", {})
    return {
        "baseline": " ".join(getattr(mu, "__cpu_baseline__", [])),
        "dispatch": " ".join(getattr(mu, "__cpu_dispatch__", [])),
        "enabled": " ".join(k for k, v in features.items() if v),
    }


def _cpu_model() -> str:
    with contextlib.suppress(OSError, UnicodeDecodeError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _numba() -> dict[str, str]:
    try:
        import numba
    except ImportError:
        return {}
    out = {"num_threads": str(numba.config.NUMBA_NUM_THREADS)}
    with contextlib.suppress(Exception):  # llvmlite's host CPU, the target Numba compiles for
        import llvmlite.binding as ll

        out["cpu_name"] = ll.get_host_cpu_name()
    return out


def _git_commit() -> str:
    """The checkout's commit (``+ changes`` when files differ from it), or ``""`` outside a checkout."""
    from ._paths import REPO_ROOT, in_checkout

    if not in_checkout() or not (REPO_ROOT / ".git").exists():
        return ""
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if head.returncode:
            return ""
        dirty = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return head.stdout.strip() + (" + changes" if dirty.returncode == 0 and dirty.stdout.strip() else "")


def collect() -> dict:
    """The environment of this process, as a flat-ish dictionary of strings (see the module docstring).

    Examples
    --------
    >>> env = collect()
    >>> env["python"].count(".") >= 2, "numpy" in env["packages"]
    (True, True)
    """
    return {
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "os": f"{platform.system()} {platform.release()} ({platform.machine()})",
        "libc": " ".join(platform.libc_ver()).strip(),
        "cpu": _cpu_model(),
        "cores": str(os.cpu_count() or ""),
        "packages": _versions(),
        "installed": _installed(),
        "blas": _blas(),
        "numpy_cpu": _numpy_cpu(),
        "numba": _numba(),
        "variables": {k: os.environ[k] for k in VARIABLES if k in os.environ},
        "git_commit": _git_commit(),
    }


def read(folder: Path) -> dict | None:
    """The record of ``folder`` (``environment.json``), or None when it has none or it is unreadable."""
    try:
        data = json.loads((Path(folder) / JSON_NAME).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("environment"), dict) else None


def write(folder: Path, experiments: list[str], *, quick: bool, seed: int, env: dict | None = None) -> Path:
    """Write ``environment.json`` and ``ENVIRONMENT.md`` into ``folder`` for a run of ``experiments``.

    When the folder's record describes the same environment and kind of run, the experiments are
    added to it; otherwise it is replaced. Returns the path of the JSON record.
    """
    from ._atomic import atomic_write_text, folder_lock

    folder = Path(folder)
    env = collect() if env is None else env
    with folder_lock(folder):
        old = read(folder)
        names = list(experiments)
        if old and old["environment"] == env and old.get("quick") == bool(quick) and old.get("seed") == seed:
            names = sorted({*old.get("experiments", []), *names})
        record = {"environment": env, "experiments": sorted(names), "quick": bool(quick), "seed": seed}
        atomic_write_text(folder / JSON_NAME, json.dumps(record, indent=1, sort_keys=True) + "\n")
        atomic_write_text(folder / MD_NAME, markdown(record))
    return folder / JSON_NAME


def _flat(env: dict) -> dict[str, str]:
    """``env`` as ``{"packages.numpy": "2.4.6", "blas[0].version": ...}``: one line per field."""
    out: dict[str, str] = {}
    for key, value in env.items():
        if isinstance(value, dict):
            for k, v in value.items():
                out[f"{key}.{k}"] = str(v)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                for k, v in item.items() if isinstance(item, dict) else [("", item)]:
                    out[f"{key}[{i}]{'.' + k if k else ''}"] = str(v)
        else:
            out[key] = str(value)
    return out


def markdown(record: dict) -> str:
    """``ENVIRONMENT.md``: the record as a reader sees it."""
    env = record["environment"]
    kind = "quick (--quick)" if record.get("quick") else "full"
    lines = [
        "# Environment of this run",
        "",
        "What made the numbers of this folder: written by `repro run` beside the ledger "
        f"(machine-readable: `{JSON_NAME}`); do not edit by hand. `repro verify` prints it beside a "
        "reference's when a number moved.",
        "",
        f"- run: {kind}, seed {record.get('seed')}; experiments ({len(record.get('experiments', []))}): "
        + (", ".join(record.get("experiments", [])) or "none"),
        f"- git commit: {env.get('git_commit') or '(not a git checkout)'}",
        f"- Python {env.get('python')} ({env.get('python_implementation')}), {env.get('os')}, "
        f"{env.get('libc') or 'libc unknown'}",
        f"- CPU: {env.get('cpu')} ({env.get('cores')} cores seen)",
        "",
        "BLAS thread counts are not recorded: the experiments compute with one BLAS thread unless they "
        "run alone (`RUN_ALONE`), so that the thread count does not depend on the machine's cores.",
        "",
        "| field | value |",
        "|---|---|",
    ]
    shown = {k: v for k, v in env.items() if k not in ("git_commit", "python", "installed")}
    for key, value in _flat(shown).items():
        lines.append(f"| {key} | {str(value).replace('|', '/') or '(empty)'} |")
    installed = env.get("installed")
    lines += [
        "",
        f"Installed distributions ({len(installed)}, `installed` in `{JSON_NAME}`; `{LOCK_NAME}` is "
        f"written from the committed record): " + ", ".join(f"{k}=={v}" for k, v in installed.items())
        if installed
        else "This record lists no installed distributions beyond the packages above (written before "
        "the runner recorded them).",
        "",
        "Experiments of this folder that the list above does not name were made under an earlier "
        "environment (a run in another one replaces this record).",
    ]
    return "\n".join(lines) + "\n"


def _comparable(old: dict, new: dict) -> tuple[dict[str, str], dict[str, str]]:
    """Both records flat, without the installed distributions when one side has no list of them (a
    record written before the runner recorded them): unknown there, not different."""
    if not (old.get("installed") and new.get("installed")):
        old, new = ({k: v for k, v in e.items() if k != "installed"} for e in (old, new))
    return _flat(old), _flat(new)


def differences(old: dict, new: dict) -> list[str]:
    """The fields (``packages.numpy``, ``blas[0].architecture``...) whose values differ."""
    a, b = _comparable(old, new)
    return [k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k)]


def render_pair(old: dict | None, new: dict | None, old_label: str, new_label: str) -> str:
    """Both environments side by side, the differing fields marked ``*`` and listed first."""
    if old is None and new is None:
        return (
            f"environments: neither the {old_label} nor {new_label} has an environment record ({JSON_NAME})"
        )
    if old is None or new is None:  # one side only: nothing to compare, what is known is shown
        label, other, env = (old_label, new_label, old) if new is None else (new_label, old_label, new)
        flat = _flat(env)
        width = max(len(k) for k in flat)
        lines = [f"environment of {label} ({other} has no {JSON_NAME}, so nothing to compare it with):"]
        return "\n".join(lines + [f"    {k:<{width}}  {v}" for k, v in flat.items()])
    a, b = _comparable(old, new)
    keys = list(dict.fromkeys([*a, *b]))
    differ = [k for k in keys if a.get(k) != b.get(k)]
    # the installed distributions are listed only where they differ: the dependencies are under packages.*
    same = [k for k in keys if k not in differ and not k.startswith("installed.")]
    n_installed = sum(k.startswith("installed.") for k in keys if k not in differ)
    width = max(len(k) for k in keys)
    vw = max([len(old_label)] + [len(a.get(k, "")) for k in keys])
    vw = min(vw, 48)
    lines = [
        f"environments: {len(differ)} field(s) differ (marked *)",
        f"    {'field':<{width}}  {old_label:<{vw}}  {new_label}",
    ]
    for k in differ + same:
        mark = "*" if k in differ else " "
        lines.append(f"  {mark} {k:<{width}}  {a.get(k, '-'):<{vw}}  {b.get(k, '-')}")
    if n_installed:
        lines.append(f"    (and {n_installed} installed distribution(s) of the same version on both sides)")
    elif bool(old.get("installed")) != bool(new.get("installed")):
        side = old_label if old.get("installed") else new_label
        lines.append(f"    (installed distributions not compared: one side records them, {side})")
    return "\n".join(lines)


def install_command(python: str) -> str:
    """The one command that installs the lock, the package and its tools in a fresh virtual environment."""
    minor = ".".join(python.split(".")[:2])
    return f"python{minor} -m venv .venv && .venv/bin/pip install -r {LOCK_NAME} -e ."


def lock_header(record: dict) -> str:
    """The comment block that opens ``requirements-lock.txt`` for ``record``: which environment it pins,
    where the pins come from and the one command that installs it."""
    import textwrap

    env = record["environment"]
    python = str(env.get("python", ""))
    system, _, rest = str(env.get("os", "")).partition(" ")
    machine = rest.rsplit("(", 1)[-1].rstrip(")").replace("_", "-") if "(" in rest else ""
    commit = str(env.get("git_commit") or "")
    made = (
        f"The exact versions of the environment that made the committed figures/, as its record "
        f"figures/{JSON_NAME} gives them: Python {python} ({env.get('python_implementation')}) on "
        f"{system} {machine} ({env.get('libc') or 'libc unknown'}); a "
        f"{'quick (--quick)' if record.get('quick') else 'full'} run of {len(record.get('experiments', []))} "
        f"experiments, seed {record.get('seed')}, commit {commit[:12] or '(not recorded)'}"
        f"{' + changes' if commit.endswith('+ changes') else ''}. pyproject.toml gives the open ranges the "
        "package accepts; this file pins the one environment within them that made figures/ (each run "
        "records what it ran on in OUT/ENVIRONMENT.md)."
    )
    if env.get("installed"):
        source = (
            "Written from that record by `python -m experiments.runner.environment lock`: do not edit by "
            "hand. tests/test_lock_file.py checks it against the record, version by version, and every "
            "dependency of pyproject.toml against its range."
        )
    else:
        source = (
            "That record names the versions of the dependencies only (it was written before the runner "
            "recorded every installed distribution): they are checked here version by version "
            "(tests/test_lock_file.py), and the other pins are `pip freeze --exclude-editable` of the "
            "environment the run was made in. The next full run records them all; then `python -m "
            "experiments.runner.environment lock` writes this file from the record."
        )
    paragraphs = [
        textwrap.fill(made, 100),
        "Install it, the package and its test and documentation tools, in a fresh virtual environment:",
        f"    {install_command(python)}",
        textwrap.fill(
            source + " On another Python or platform some pins may have no wheel: install from "
            "pyproject.toml's ranges instead (`pip install -e .`).",
            100,
        ),
    ]
    text = "\n\n".join(paragraphs)
    return "\n".join(f"# {line}".rstrip() for line in text.splitlines()) + "\n"


def lock_text(record: dict) -> str:
    """``requirements-lock.txt`` for the environment of ``record``: its header, then one exact pin per
    installed distribution of the record (``installed``), in ``pip freeze``'s order and spelling.

    Raises ``ValueError`` when the record lists no installed distributions (a record written before the
    runner recorded them: a full ``repro run all`` writes one that does).

    Examples
    --------
    >>> record = {"environment": {"python": "3.11.7", "installed": {"numpy": "2.4.6", "scipy": "1.17.1"}}}
    >>> print(lock_text(record).split("\n\n")[-1], end="")
    numpy==2.4.6
    scipy==1.17.1
    """
    installed = record.get("environment", {}).get("installed")
    if not installed:
        raise ValueError(
            f"the record lists no installed distributions ('installed' in {JSON_NAME}): it was written "
            "before the runner recorded them; a full `repro run all` writes one the lock can be made from"
        )
    pins = sorted(installed.items(), key=lambda item: item[0].lower())
    return lock_header(record) + "\n" + "".join(f"{name}=={version}\n" for name, version in pins)


def main(argv: list[str] | None = None) -> int:
    """``python -m experiments.runner.environment lock [--record FOLDER] [--out FILE] [--check]``."""
    import argparse

    from ._paths import FIGURES_DIR, REPO_ROOT

    parser = argparse.ArgumentParser(
        prog="python -m experiments.runner.environment",
        description=f"Write {LOCK_NAME} from a run's environment record (default: the committed figures/).",
    )
    parser.add_argument("command", choices=["lock"])
    parser.add_argument("--record", type=Path, default=FIGURES_DIR, help=f"the folder holding {JSON_NAME}")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / LOCK_NAME, help="the lock file to write")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the file differs")
    args = parser.parse_args(argv)
    record = read(args.record)
    if record is None:
        print(f"no readable {JSON_NAME} in {args.record}", file=sys.stderr)
        return 2
    try:
        text = lock_text(record)
    except ValueError as exc:
        print(f"{args.record / JSON_NAME}: {exc}", file=sys.stderr)
        return 2
    if args.check:
        same = args.out.is_file() and args.out.read_text(encoding="utf-8") == text
        print(f"{args.out}: {'the same as' if same else 'differs from'} the record of {args.record}")
        return 0 if same else 1
    args.out.write_text(text, encoding="utf-8")
    print(f"{args.out}: {len(record['environment']['installed'])} pins from {args.record / JSON_NAME}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
