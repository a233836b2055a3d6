"""Progress of a run over experiments: a bar in a terminal, a heartbeat line in logs.

Used by ``repro run`` and by ``python -m experiments.NAME``, so every experiment reports progress whether
or not it has a loop of its own. Standard library only, plus tqdm in a terminal.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

from . import _runtimes

__all__ = ["PROGRESS_ENV", "Progress"]

PROGRESS_ENV = "REPRO_PROGRESS_INTERVAL"
FIGURES_DIR = Path(__file__).resolve().parents[2] / "figures"


def _interval() -> float:
    raw = os.environ.get(PROGRESS_ENV, "").strip()
    try:
        value = float(raw) if raw else 30.0
    except ValueError:
        value = 30.0
    return value if value > 0 else 30.0


class Progress:
    """Progress of a ``repro run`` over every experiment, whether or not it has its own loop.

    In a terminal: one bar, its text showing what runs and an estimate of what is left; messages go
    above it (``tqdm.write``). Without a terminal (logs, CI): a line at most every
    ``REPRO_PROGRESS_INTERVAL`` seconds (default 30) from a heartbeat thread, with what is done, what
    runs for how long, and the time left estimated from the recorded run times (``runtimes.csv``).
    """

    def __init__(self, names: list[str], quick: bool, jobs: int, out: Path, verb: str = "running", key=None):
        self.names, self.quick, self.jobs, self.verb = names, quick, max(1, jobs), verb
        key = key or (lambda n: n)
        self.expected = {n: _runtimes.typical(key(n), quick, out, FIGURES_DIR) for n in names}
        self.started: dict[str, float] = {}
        self.done: list[str] = []
        self.t0 = time.monotonic()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.tty = sys.stderr.isatty()
        self.bar = None
        if self.tty:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=len(names), desc=f"{verb} experiments", file=sys.stderr, leave=False)
        self.thread = threading.Thread(target=self._beat, daemon=True)
        self.thread.start()

    def say(self, text: str, err: bool = False) -> None:
        stream = sys.stderr if err else sys.stdout
        if self.bar is not None:
            self.bar.write(text, file=stream)
        else:
            print(text, file=stream, flush=True)

    def start(self, name: str) -> None:
        with self.lock:
            self.started[name] = time.monotonic()
        if self.bar is not None:
            self.bar.set_postfix_str(self.status(), refresh=True)
        else:
            self.say(f"{self.verb} {name} ...")

    def finish(self, name: str) -> None:
        with self.lock:
            self.done.append(name)
            self.started.pop(name, None)
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix_str(self.status(), refresh=True)

    def left(self) -> float | None:
        """Seconds left by the recorded run times (None when one of the remaining is unrecorded)."""
        now, total = time.monotonic(), 0.0
        for n in self.names:
            if n in self.done:
                continue
            exp = self.expected.get(n)
            if exp is None:
                return None
            total += max(exp - (now - self.started[n]), 0.0) if n in self.started else exp
        return total / min(self.jobs, max(1, len(self.names) - len(self.done)))

    def status(self) -> str:
        now = time.monotonic()
        with self.lock:
            running = ", ".join(f"{n} {_runtimes.fmt_seconds(now - t)}" for n, t in self.started.items())
            left = self.left()
        est = f"about {_runtimes.fmt_seconds(left)} left" if left is not None else "time left unknown"
        return f"running {running or '-'}; {est}"

    def line(self) -> str:
        elapsed = _runtimes.fmt_seconds(time.monotonic() - self.t0)
        return f"[progress {elapsed}] {len(self.done)}/{len(self.names)} done; {self.status()}"

    def _beat(self) -> None:
        interval = _interval()
        while not self.stop.wait(min(interval, 1.0) if self.bar is not None else interval):
            if self.bar is not None:
                self.bar.set_postfix_str(self.status(), refresh=True)
            else:
                self.say(self.line())

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        if self.bar is not None:
            self.bar.close()
