"""Checks of the command line's values, before anything is computed (standard library only).

Each check gives one line naming the argument and the fix; the parsers turn it into ``repro: error: ...``
and exit status 2 (:class:`OneLineParser`), never a traceback after minutes of computing.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

__all__ = [
    "JOBS_MAX",
    "NAME_MAX",
    "SEED_MAX",
    "OneLineParser",
    "folder",
    "jobs_problem",
    "name_problem",
    "seed",
]

#: The largest ``--seed``: every random stream is ``np.random.default_rng([seed, ...])``, and some
#: experiments pass a derived seed to code that takes 32-bit seeds (``np.random.RandomState``, R's).
SEED_MAX = 2**32 - 1
#: The longest experiment name (a module name; the outputs are ``<out>/<name>.csv`` and so on).
NAME_MAX = 100
#: The largest ``--jobs``: more worker processes than any machine this runs on has cores, and the runner uses
#: at most one per experiment anyway (each worker is a Python process of 100-300 MB once NumPy is loaded).
JOBS_MAX = 256
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def seed(text: str) -> int:
    """``--seed``: an integer in ``0..SEED_MAX`` (argparse ``type``)."""
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer in 0..{SEED_MAX}; got {text!r}") from None
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"must be an integer in 0..{SEED_MAX}; got {value}")
    return value


def jobs_problem(jobs: int | None) -> str | None:
    """Why ``--jobs`` cannot be ``jobs`` (None when it can, or when it is not given): below 1 or above
    :data:`JOBS_MAX`. Within the bound, a count above the number of experiments is reduced to it."""
    if jobs is None or 1 <= jobs <= JOBS_MAX:
        return None
    if jobs < 1:
        return "--jobs must be at least 1"
    shown = str(jobs) if len(str(jobs)) <= 20 else str(jobs)[:17] + "..."
    return (
        f"--jobs must be at most {JOBS_MAX} (the runner uses at most one process per experiment); got {shown}"
    )


def folder(text: str) -> Path:
    """A folder argument (``--out``, ``--reference``, ``--keep``; argparse ``type``): a non-empty path.

    An empty string would be the current folder without saying so (``Path("")`` is ``.``): refused, with
    ``.`` as the way to ask for it.
    """
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty; name a folder (`.` for the current one)")
    return Path(text)


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be an experiment name (None when it can): too long, or not a module name.

    An experiment is a module (``sigg2008_fig2``, or the dotted path of one outside this package), so a
    name is Python identifiers joined by dots; a path (``../x``, ``a/b``), an empty name or one of
    hundreds of characters is refused before it reaches the file system.
    """
    shown = name if len(name) <= 60 else name[:57] + "..."
    if len(name) > NAME_MAX:
        return f"experiment name {shown!r} has {len(name)} characters; names have at most {NAME_MAX}."
    if not _NAME.fullmatch(name):
        return (
            f"experiment name {shown!r} is not a module name (letters, digits and _, parts joined by dots; "
            "no paths); `repro list` lists the experiments."
        )
    return None


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on stderr (no usage block) and exit status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")
