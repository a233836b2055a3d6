"""``python -m experiments``: the runner's command line (:mod:`experiments.runner.cli`).

``python -m`` puts the working folder first on ``sys.path``. It is taken off again (unless it is the
folder that holds this package, a source checkout), so that an experiment named by a dotted path
(``run pkg.module``) is imported from an installed module, as by ``repro``, never from whatever file lies
in the working folder (``run evilmod.x`` would run ``./evilmod.py`` while looking for the experiment).
"""

import os
import sys
from pathlib import Path


def _drop_working_folder() -> None:
    if getattr(sys.flags, "safe_path", False) or not sys.path:  # -P, PYTHONSAFEPATH: nothing was added
        return
    first = sys.path[0]
    if first in ("", os.getcwd()) and Path(first or ".").resolve() != Path(__file__).resolve().parents[1]:
        del sys.path[0]


if __name__ == "__main__":
    _drop_working_folder()

from experiments.runner.cli import main  # noqa: E402  (after the working folder is dropped)

if __name__ == "__main__":
    sys.exit(main())
