"""Checks of the command line's values, before anything is computed (standard library only).

Each check gives one line naming the argument and the fix; the parsers turn it into ``repro: error: ...``
and exit status 2 (:class:`OneLineParser`), never a traceback after minutes of computing.
"""

from __future__ import annotations

import argparse
import re

__all__ = ["NAME_MAX", "SEED_MAX", "OneLineParser", "name_problem", "seed"]

#: The largest ``--seed``: every random stream is ``np.random.default_rng([seed, ...])``, and some
#: experiments pass a derived seed to code that takes 32-bit seeds (``np.random.RandomState``, R's).
SEED_MAX = 2**32 - 1
#: The longest experiment name (a module name; the outputs are ``<out>/<name>.csv`` and so on).
NAME_MAX = 100
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
