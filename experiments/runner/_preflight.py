"""Checks made before anything is computed: the output folder is writable and every data file is there.

What an experiment needs is read from its source without importing it (``ast``): a module-level
``DATA`` tuple (``DATA_QUICK`` for ``--quick``; registry names or loader names), or, when the module
declares none, the ``data_fetch`` loaders it mentions (mapped by ``data_fetch._needs.LOADER_FILES``).
That fallback is conservative: a loader used only in the full run is also required by ``--quick``.

Each file is resolved as ``data_fetch.fetch`` would (mirror, cache, then a download unless
``REPRO_OFFLINE`` is set) and its hash checked. When some cannot be had the run stops with one short
message naming them and the three ways to get them.
"""

from __future__ import annotations

import ast
import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

__all__ = ["check_data", "check_out", "declared_data"]

_PKG_DIR = Path(__file__).resolve().parents[1]  # experiments/: the experiment modules

#: Declarations the runner holds for modules that declare nothing yet, used only when the module has no
#: ``DATA``/``DATA_QUICK`` of its own (move them into the module and delete them here):
#: ``roweis1997_missing_data`` reads the CBCL faces only in the full run (under ``if not cfg.quick``).
_QUICK_DECLARED: dict[str, tuple[str, ...]] = {"roweis1997_missing_data": ()}


def _source(name: str) -> Path:
    return _PKG_DIR / f"{name}.py"


def declared_data(name: str, quick: bool, path: Path | None = None) -> list[str]:
    """Loader and registry names experiment ``name`` needs, from ``DATA``/``DATA_QUICK`` or its loaders."""
    from data_fetch._needs import LOADER_FILES

    path = _source(name) if path is None else Path(path)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    declared: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name) and t.id in ("DATA", "DATA_QUICK") and node.value is not None:
                    try:
                        declared[t.id] = [str(v) for v in ast.literal_eval(node.value)]
                    except ValueError as exc:
                        raise ValueError(
                            f"{path}: {t.id} must be a literal tuple of registry or loader names."
                        ) from exc
    if quick and "DATA_QUICK" in declared:
        return declared["DATA_QUICK"]
    if "DATA" in declared:
        return declared["DATA"]
    if quick and path.parent == _PKG_DIR and path.stem in _QUICK_DECLARED:
        return list(_QUICK_DECLARED[path.stem])
    found: list[str] = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("data_fetch"):
            names = [a.name for a in node.names]
        found += [n for n in names if n in LOADER_FILES and n not in found]
    return found


def check_out(out: str | os.PathLike) -> str | None:
    """None when ``out`` (and ``out/claims``) can be created and written, else a one-line message."""
    out = Path(out)
    try:
        for folder in (out, out / "claims"):
            folder.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(prefix=".repro-write-test.", dir=folder)
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        return (
            f"--out {out} is not a writable folder ({type(exc).__name__}: {exc.strerror or exc}); "
            "nothing was computed. Choose another folder with --out."
        )
    return None


def check_data(names: Iterable[str], quick: bool, paths: dict[str, Path] | None = None) -> str | None:
    """None when every data file the experiments ``names`` need is available, else a short message.

    ``paths`` gives the source file of an experiment that is not in this package (tests). Missing files
    are downloaded first unless ``REPRO_OFFLINE`` is set; a corrupt copy is never used.
    """
    import data_fetch
    from data_fetch._needs import files_for
    from data_fetch._registry import CACHE_ENV, MIRROR_ENV, OFFLINE_ENV, folder_in_place, offline

    names = list(names)
    users: dict[str, list[str]] = {}
    for name in names:
        for f in files_for(declared_data(name, quick, (paths or {}).get(name))):
            users.setdefault(f, []).append(name)
    if not users:
        return None
    try:
        entries = data_fetch.registry()
        states = {f: data_fetch.file_state(f, registry=entries) for f in users}
    except (data_fetch.DataUnavailableError, ValueError) as exc:
        return f"data check failed before anything was computed: {exc}"
    if not offline():
        for f, state in states.items():
            if state == "missing":
                print(f"downloading {f} (needed by {', '.join(users[f])}) ...", file=sys.stderr, flush=True)
                try:
                    data_fetch.fetch(f, registry=entries)
                    states[f] = "cached"
                except data_fetch.DataUnavailableError:
                    pass
    bad = {f: s for f, s in states.items() if s not in ("mirror", "cached")}
    if not bad:
        return None
    mirror = os.environ.get(MIRROR_ENV, "").strip() or "unset"

    def who(f: str) -> str:
        u = users[f]
        return ", ".join(u) if len(u) <= 3 else f"{', '.join(u[:3])} and {len(u) - 3} more"

    def state(f: str, s: str) -> str:
        if s != "folder":
            return s
        return f"a folder, not a file, at {folder_in_place(f, registry=entries)}: remove or rename it"

    listing = "\n".join(f"  {f} ({state(f, s)}; needed by {who(f)})" for f, s in bad.items())
    corrupt = " Delete a corrupt cached copy first." if "corrupt" in bad.values() else ""
    return (
        f"{len(bad)} data file(s) needed by the selected experiments cannot be had; nothing was computed:\n"
        f"{listing}\n"
        f"Get them one of three ways: (1) set {MIRROR_ENV} to a folder laid out like "
        f"data_fetch/registry.txt that holds them (now {mirror}); (2) put them in the cache {CACHE_ENV} "
        f"(now {data_fetch.cache_dir()}), e.g. with `repro data --fetch` online; (3) run online without "
        f"{OFFLINE_ENV} (now {'set' if offline() else 'unset'}) so the run downloads them.{corrupt}"
    )
