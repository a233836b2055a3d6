"""``python -m experiments``: the runner's command line (:mod:`experiments.runner.cli`)."""

import sys

from experiments.runner.cli import main

if __name__ == "__main__":
    sys.exit(main())
