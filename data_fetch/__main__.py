"""``python -m data_fetch [list | fetch | --fetch]``, the same as ``repro data``: see ``data_fetch.cli``."""

from data_fetch._cli import cli

if __name__ == "__main__":
    raise SystemExit(cli())
