"""Where the runner reads and writes by default, in a source checkout and in an installed copy.

In a source checkout (``pyproject.toml`` beside the packages; an editable install is one) the default
output folder is the committed ``figures/``, and a run into it says that it rewrites them. In an
installed copy (a wheel in site-packages) the packages' folder is never written: the default is
``repro-figures/`` in the working directory, and the run says so. Standard library only.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "FIGURES_DIR",
    "INSTALLED_OUT",
    "PACKAGED_RUNTIMES",
    "REPO_ROOT",
    "default_out",
    "in_checkout",
    "out_notice",
    "recorded_runtimes",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
FIGURES_DIR = REPO_ROOT / "figures"
# The committed figures/runtimes.csv, shipped in a wheel through this link (figures/ is not in a wheel).
PACKAGED_RUNTIMES = Path(__file__).resolve().parent / "recorded_runtimes.csv"
INSTALLED_OUT = "repro-figures"  # the default output folder, in the working directory, outside a checkout


def in_checkout() -> bool:
    """Whether the runner runs from a source checkout (``pyproject.toml`` beside its packages)."""
    return (REPO_ROOT / "pyproject.toml").is_file()


def recorded_runtimes(folder: Path) -> Path:
    """The ``runtimes.csv`` to read for ``folder``: the packaged copy of the committed one when ``folder`` is
    ``figures/`` and that is absent (an installed copy), else ``folder/runtimes.csv``."""
    path = Path(folder) / "runtimes.csv"
    if not path.is_file() and Path(folder).resolve() == FIGURES_DIR.resolve():
        return PACKAGED_RUNTIMES
    return path


def default_out() -> Path:
    """``figures/`` in a source checkout, else ``./repro-figures`` (never inside site-packages)."""
    return FIGURES_DIR if in_checkout() else Path.cwd() / INSTALLED_OUT


def out_notice(out: Path) -> str:
    """The line a run prints before writing into ``out`` ("" when there is nothing to warn about)."""
    out = Path(out).resolve()
    if in_checkout() and out == FIGURES_DIR.resolve():
        return (
            f"Note: this run rewrites the committed figures in {out} (and their rows of CLAIMS.md and "
            "the README's scoreboard); git keeps the old ones. Use --out DIR to leave them alone."
        )
    if not in_checkout() and out == (Path.cwd() / INSTALLED_OUT).resolve():
        return f"Writing into {out} (the default outside a source checkout; --out DIR chooses another)."
    return ""
