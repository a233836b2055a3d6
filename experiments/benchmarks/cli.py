"""Benchmark: how long the command line takes to answer ``repro --help`` and ``repro list``.

A newcomer's first commands should answer at once ("well under a second"; the old command line imported
NumPy, Numba and the whole library first and took 2.4-2.8 s). Both now import only the standard library
(the experiments' titles are read from their source with ``ast``). Measured as a ratio against what the
old command line could not avoid, ``python -c "import repro"`` (the library with NumPy, SciPy, Numba and
scikit-learn), started in the same run and interleaved (each round starts it, a bare ``python -c pass``,
then ``python -m experiments --help``, then ``python -m experiments list``), so the ratio does not depend
on how fast the machine starts Python. Goal: each at most a quarter of the library import ("well under").
The bare start is recorded for scale, not judged.

Choices: 15 rounds (2 with ``--quick``); wall-clock time of the child process (it is what a user waits for),
decided by :func:`experiments.runner.claims.call_timing` on the per-round ratios (a 15% band, which the
95% confidence interval of their median must clear, docs/design.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments.runner import _common
from experiments.runner.claims import Claim, Outcome, call_timing

TITLE = "Benchmark: repro --help and repro list start-up time against a bare Python start"

DATA = ()
GOAL = 0.25
REFERENCE = "python -c 'import repro'"
COMMANDS = {
    REFERENCE: ["-c", "import repro"],
    "python -c pass": ["-c", "pass"],
    "repro --help": ["-m", "experiments", "--help"],
    "repro list": ["-m", "experiments", "list"],
}


def _seconds(args: list[str]) -> float:
    env = dict(os.environ, PYTHONPATH=str(_common.REPO_ROOT))
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, capture_output=True, env=env)
    return time.perf_counter() - t0


def compute(cfg: _common.Config) -> pd.DataFrame:
    rounds = 2 if cfg.quick else 15
    for args in COMMANDS.values():  # warm the file cache
        _seconds(args)
    rows = []
    for r in range(rounds):
        for name, args in COMMANDS.items():
            rows.append({"round": r, "command": name, "seconds": _seconds(args)})
    return pd.DataFrame(rows)


def _ratios(df: pd.DataFrame, command: str) -> np.ndarray:
    t = df.pivot_table(index="round", columns="command", values="seconds")
    return (t[command] / t[REFERENCE]).to_numpy()


def plot(df: pd.DataFrame, cfg: _common.Config):
    fig, ax = plt.subplots(figsize=(5.0, 2.6))
    names = list(COMMANDS)
    data = [df[df.command == n].seconds.to_numpy() * 1e3 for n in names]
    ax.boxplot(data, orientation="horizontal", tick_labels=names)
    base = float(np.median(data[0]))
    ax.axvline(GOAL * base, color="tab:red", ls="--", lw=0.9, label=f"goal: {GOAL:g}x 'import repro'")
    ax.set_xlabel("milliseconds per call (child process)")
    ax.set_title("Command-line start-up")
    ax.legend(loc="upper right", fontsize=7)
    fig.tight_layout()
    return fig


def _check(command: str):
    def check(df):
        call = call_timing(_ratios(df, command), GOAL)
        med = df[df.command == command].seconds.median()
        return Outcome(
            f"{command} / import repro = {call.text('.2f', 'x')} ({1e3 * med:.0f} ms; bare Python start "
            f"{1e3 * df[df.command == 'python -c pass'].seconds.median():.0f} ms)",
            call.verdict,
            f"goal at most {GOAL:g}x the time of `python -c 'import repro'` (what the old command line paid "
            f"first), per-round ratios, {call.band_text()} (inside it: too close to call)",
        )

    return check


GOALS = [
    Claim(
        "help-fast",
        "Project goal (newcomer's first hour): `repro --help` answers well under a second: at most a quarter "
        "of importing the library, which the old command line did first (2.4-2.8 s)",
        "<= 0.25x",
        _check("repro --help"),
        machine_dependent=True,
    ),
    Claim(
        "list-fast",
        "Project goal: `repro list` answers well under a second: at most a quarter of importing the library",
        "<= 0.25x",
        _check("repro list"),
        machine_dependent=True,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
