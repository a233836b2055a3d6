"""``repro data`` (``python -m data_fetch``): registry files and their state; ``--fetch`` gets the missing."""

from __future__ import annotations

import argparse
import os

from ._registry import (
    CACHE_ENV,
    MIRROR_ENV,
    OFFLINE_ENV,
    DataUnavailableError,
    cache_dir,
    fetch,
    file_state,
    locate,
    registry,
)

__all__ = ["cli"]


def _parser(prog: str = "repro data") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description=(
            "List the dataset files of the registry and where each one is (mirror / cached / missing / "
            f"corrupt). {MIRROR_ENV} names a read-only mirror used in place; {CACHE_ENV} the writable "
            f"cache (default: pooch.os_cache('repro')); {OFFLINE_ENV}=1 forbids downloads."
        ),
    )
    parser.add_argument(
        "command", nargs="?", choices=("list", "fetch"), default="list",
        help="'list' (default) or 'fetch' (download the missing files into the cache)",
    )  # fmt: skip
    parser.add_argument("--fetch", action="store_true", help="same as the 'fetch' command")
    return parser


def _size(name: str, entries) -> str:
    path = locate(name, registry=entries)
    if path is None:
        return "-"
    size = float(path.stat().st_size)
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return "-"  # pragma: no cover


def _reason(exc: DataUnavailableError, limit: int = 160) -> str:
    """Short cause of a failed fetch (the full message repeats the fix printed at the end)."""
    cause = exc.__cause__
    text = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc).split(". URL:")[0]
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _print_table(entries, states: dict[str, str]) -> None:
    width = max(len(name) for name in entries)
    print(f"{'file':<{width}}  {'state':<8}  {'size':>9}  note")
    for name, entry in entries.items():
        note = "optional" if entry.optional else ""
        print(f"{name:<{width}}  {states[name]:<8}  {_size(name, entries):>9}  {note}")


def _fetch_missing(entries, states: dict[str, str]) -> None:
    for name, state in states.items():
        if state != "missing":
            continue
        try:
            fetch(name, registry=entries)
        except DataUnavailableError as exc:
            kind = "failed (optional)" if entries[name].optional else "FAILED"
            print(f"{kind}: {name} from {entries[name].url}: {_reason(exc)}")
        else:
            print(f"fetched: {name}")
            states[name] = file_state(name, registry=entries)


def cli(argv: list[str] | None = None, prog: str = "repro data") -> int:
    """Run the data command line.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name (default ``sys.argv[1:]``): ``[list]`` or ``fetch`` /
        ``--fetch``.
    prog : str
        Program name in the help and the messages (``repro data``; ``python -m data_fetch`` is the same).

    Returns
    -------
    int
        0 when every required (non-optional) file is present with the right hash, 1 otherwise
        (missing or corrupt files, or a misconfigured mirror). Errors are printed, not raised.

    See Also
    --------
    file_state, fetch

    Examples
    --------
    The table of every registry file and its state; the example expects every required file in the mirror
    ``REPRO_DATA_MIRROR`` (as in CI and the test suite) or the cache.

    >>> import contextlib, io
    >>> from data_fetch import cli
    >>> with contextlib.redirect_stdout(io.StringIO()) as table:
    ...     status = cli(["list"])
    >>> status, "pitprops/pitprops.RData" in table.getvalue()
    (0, True)
    """
    args = _parser(prog).parse_args(argv)
    try:
        entries = registry()
        states = {name: file_state(name, registry=entries) for name in entries}
        if args.fetch or args.command == "fetch":
            _fetch_missing(entries, states)
        _print_table(entries, states)
    except (DataUnavailableError, ValueError) as exc:
        print(f"error: {exc}")
        return 1
    bad = [n for n, s in states.items() if s in ("missing", "corrupt", "folder") and not entries[n].optional]
    print(f"\n{MIRROR_ENV}={os.environ.get(MIRROR_ENV, '') or '(unset)'}  {CACHE_ENV}={cache_dir()}")
    if bad:
        print(
            f"{len(bad)} required file(s) missing or corrupt: {', '.join(bad)}. Set {MIRROR_ENV} to a "
            f"folder that holds them (e.g. ../shared/data) or run `{prog} --fetch` online; "
            f"delete a corrupt cached file first, and remove or rename a folder (state 'folder') that "
            f"stands where a file belongs."
        )
        return 1
    print("all required files present.")
    return 0
