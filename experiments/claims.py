"""The claims ledger: every published claim, what this repository reproduces of it, and a verdict.

Each experiment module declares ``CLAIMS``, a list of :class:`Claim`. A claim carries the paper's
sentence, the published value (if the paper gives one) and a ``check``: a function of the experiment's
tidy CSV (a ``pandas.DataFrame``) that returns an :class:`Outcome` with the reproduced value and a verdict.
Checks look at the data only; they are written from the paper's sentence and never tuned to pass.

After an experiment runs, its rows are written to ``<out>/claims/<experiment>.csv`` and
``<out>/CLAIMS.md`` is rebuilt from every such file, so running one experiment updates its rows and
keeps the others.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

__all__ = [
    "NOT_REPRODUCED",
    "PARTIAL",
    "REPRODUCED",
    "VERDICTS",
    "Claim",
    "Outcome",
    "evaluate",
    "read_ledger",
    "write_ledger",
]

REPRODUCED = "reproduced"
PARTIAL = "partly reproduced"
NOT_REPRODUCED = "not reproduced"
ERROR = "check failed"
VERDICTS = (REPRODUCED, PARTIAL, NOT_REPRODUCED, ERROR)

COLUMNS = ["experiment", "id", "claim", "published", "reproduced", "verdict", "note", "quick"]


@dataclass(frozen=True)
class Outcome:
    """What a claim's check found.

    Parameters
    ----------
    reproduced : str
        The measured value, as it should read in the table (e.g. ``"3.4 +/- 0.6"``).
    verdict : str
        One of ``REPRODUCED``, ``PARTIAL``, ``NOT_REPRODUCED``.
    note : str
        Why, especially when it does not reproduce: the best explanation of the difference.
    """

    reproduced: str
    verdict: str
    note: str = ""

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}; got {self.verdict!r}.")


@dataclass(frozen=True)
class Claim:
    """A published claim and the check that tests it on an experiment's CSV.

    Parameters
    ----------
    id : str
        Short stable identifier, unique within the experiment (e.g. ``"iterations-constant"``).
    sentence : str
        The paper's claim, quoted or closely paraphrased, with its location (``"Sec. 3, Fig. 2"``).
    published : str
        The published value as the paper gives it, or ``""`` for a qualitative claim.
    check : callable
        ``check(df) -> Outcome`` on the experiment's tidy DataFrame.
    """

    id: str
    sentence: str
    published: str
    check: Callable[[pd.DataFrame], Outcome]


def verdict_from(ok: bool, partial: bool = False) -> str:
    """``REPRODUCED`` if ok, else ``PARTIAL`` if partial, else ``NOT_REPRODUCED``."""
    return REPRODUCED if ok else (PARTIAL if partial else NOT_REPRODUCED)


def evaluate(experiment: str, claims: Sequence[Claim], df: pd.DataFrame, *, quick: bool) -> pd.DataFrame:
    """Run every check on ``df`` and return the ledger rows of this experiment.

    A check that raises is recorded with verdict ``"check failed"`` and the error, never dropped.
    """
    seen = set()
    rows = []
    for claim in claims:
        if claim.id in seen:
            raise ValueError(f"{experiment}: duplicate claim id {claim.id!r}.")
        seen.add(claim.id)
        try:
            out = claim.check(df)
            if not isinstance(out, Outcome):
                raise TypeError(f"check returned {type(out).__name__}, expected Outcome")
        except Exception as exc:  # a broken check is reported, not hidden
            last = traceback.format_exception_only(type(exc), exc)[-1].strip()
            out = Outcome("-", ERROR, f"check raised {last}")
        rows.append(
            {
                "experiment": experiment,
                "id": claim.id,
                "claim": claim.sentence,
                "published": claim.published,
                "reproduced": out.reproduced,
                "verdict": out.verdict,
                "note": out.note,
                "quick": bool(quick),
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def write_ledger(out_dir: Path, experiment: str, rows: pd.DataFrame) -> Path:
    """Store one experiment's rows and rebuild ``CLAIMS.md`` from all stored rows."""
    claims_dir = Path(out_dir) / "claims"
    claims_dir.mkdir(parents=True, exist_ok=True)
    rows.to_csv(claims_dir / f"{experiment}.csv", index=False)
    return render_ledger(out_dir)


def read_ledger(out_dir: Path) -> pd.DataFrame:
    """All stored claim rows under ``out_dir/claims``, ordered by experiment."""
    files = sorted((Path(out_dir) / "claims").glob("*.csv"))
    if not files:
        return pd.DataFrame(columns=COLUMNS)
    frames = [pd.read_csv(f, dtype=str, keep_default_na=False) for f in files]
    return pd.concat(frames, ignore_index=True)


def render_ledger(out_dir: Path) -> Path:
    """Write ``out_dir/CLAIMS.md``: a summary line and one table row per claim."""
    df = read_ledger(out_dir)
    path = Path(out_dir) / "CLAIMS.md"
    counts = df["verdict"].value_counts() if len(df) else pd.Series(dtype=int)
    summary = ", ".join(f"{int(counts.get(v, 0))} {v}" for v in VERDICTS if counts.get(v, 0))
    lines = [
        "# Claims ledger",
        "",
        "Every claim the experiments test: the paper's sentence, the published value, the value this",
        "repository reproduces, and the verdict. Generated by `repro run`; do not edit by hand.",
        "",
        f"{len(df)} claims: {summary or 'none yet'}.",
        "",
        "| experiment | id | claim | published | reproduced | verdict | note |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in df.itertuples(index=False):
        quick = " (quick run)" if str(r.quick).lower() == "true" else ""
        cells = [r.experiment, r.id, r.claim, r.published, r.reproduced, f"**{r.verdict}**{quick}", r.note]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # parallel runs: atomic replace
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, path)
    return path


README_START = "<!-- generated by `repro run`: gallery and claims -->"
README_END = "<!-- end of generated section -->"


def update_readme(readme: Path, out_dir: Path, titles: dict[str, str]) -> bool:
    """Rewrite the generated section of README.md: the figure gallery and the claims summary.

    Only the text between ``README_START`` and ``README_END`` changes; returns False (and changes
    nothing) when the markers are absent.
    """
    readme, out_dir = Path(readme), Path(out_dir)
    text = readme.read_text()
    if README_START not in text or README_END not in text:
        return False
    rel = out_dir.resolve().relative_to(readme.resolve().parent)
    df = read_ledger(out_dir)
    lines = [README_START, "", "### Figure gallery", ""]
    for name, title in titles.items():
        if (out_dir / f"{name}.png").exists():
            lines += [f"**{name}**: {title}", "", f"![{name}]({rel.as_posix()}/{name}.png)", ""]
    lines += ["### Claims", "", f"Full ledger: [{rel.as_posix()}/CLAIMS.md]({rel.as_posix()}/CLAIMS.md).", ""]
    lines += ["| experiment | claims | " + " | ".join(VERDICTS) + " |", "|---" * (len(VERDICTS) + 2) + "|"]
    for name, g in df.groupby("experiment", sort=True):
        counts = g["verdict"].value_counts()
        cells = [str(int(counts.get(v, 0))) for v in VERDICTS]
        lines.append(f"| {name} | {len(g)} | " + " | ".join(cells) + " |")
    missed = df[df["verdict"] != REPRODUCED]
    if len(missed):
        lines += ["", "Claims that did not fully reproduce (details and explanations in the ledger):", ""]
        lines += [
            f"- `{r.experiment}/{r.id}`: published {r.published or '(qualitative)'}, reproduced "
            f"{r.reproduced} ({r.verdict})"
            for r in missed.itertuples(index=False)
        ]
    lines += ["", README_END]
    head, rest = text.split(README_START, 1)
    tail = rest.split(README_END, 1)[1]
    readme.write_text(head + "\n".join(lines) + tail)
    return True


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")
