"""How long each experiment took: ``<out>/runtimes.csv``, written by the runner after every run.

One row per experiment and mode (``experiment,quick,seconds,date``), the latest run's. The committed
``figures/runtimes.csv`` comes from the full run that produced the committed figures; ``--help``,
``repro list`` and the progress estimates read it. Standard library only (``repro list`` stays fast).
"""

from __future__ import annotations

import csv
import datetime
import io
import os
from pathlib import Path

from ._atomic import atomic_write_text, folder_lock
from ._paths import recorded_runtimes

__all__ = ["FIELDS", "fmt_seconds", "read", "record", "typical"]

FIELDS = ("experiment", "quick", "seconds", "date")
FILENAME = "runtimes.csv"


def read(folder: str | os.PathLike) -> dict[tuple[str, bool], tuple[float, str]]:
    """``{(experiment, quick): (seconds, date)}`` from ``folder/runtimes.csv`` ({} if absent or damaged).

    For ``figures/`` outside a checkout (an installed wheel), the copy of the committed file that the wheel
    carries.
    """
    path = recorded_runtimes(Path(folder))
    out: dict[tuple[str, bool], tuple[float, str]] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return out
    for row in csv.DictReader(io.StringIO(text)):
        try:
            out[(row["experiment"], row["quick"].strip().lower() == "true")] = (
                float(row["seconds"]),
                row.get("date") or "",
            )
        except (KeyError, ValueError, AttributeError):
            continue  # a damaged row is ignored; the next run rewrites the file
    return out


def record(folder: str | os.PathLike, experiment: str, quick: bool, seconds: float) -> Path:
    """Set the row of ``(experiment, quick)`` in ``folder/runtimes.csv`` (atomic, under the folder lock)."""
    folder = Path(folder)
    with folder_lock(folder):
        rows = read(folder)
        rows[(experiment, bool(quick))] = (float(seconds), datetime.date.today().isoformat())
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(FIELDS)
        for (name, q), (sec, date) in sorted(rows.items()):
            w.writerow([name, str(q), f"{sec:.1f}", date])
        return atomic_write_text(folder / FILENAME, buf.getvalue())


def fmt_seconds(seconds: float | None) -> str:
    """``"4.2 s"``, ``"3 min 10 s"``, ``"1 h 05 min"``; ``"?"`` when unknown."""
    if seconds is None:
        return "?"
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    if seconds < 3600:
        m, s = divmod(round(seconds), 60)
        return f"{m} min {s:02d} s"
    h, m = divmod(round(seconds / 60), 60)
    return f"{h} h {m:02d} min"


def typical(experiment: str, quick: bool, *folders) -> float | None:
    """Recorded seconds of ``experiment`` in the first folder that has them, or None."""
    for folder in folders:
        hit = read(folder).get((experiment, bool(quick)))
        if hit is not None:
            return hit[0]
    return None
