"""A toy experiment module for the runner's tests: ``TOY.format(name=..., body=..., data=...)``.

``body`` runs inside ``compute`` (one line, 8 spaces in), ``data`` is the module's ``DATA``; ``compute``
touches ``$TOY_MARKER`` when set (proof that it ran) and returns three rows, with one claim and a plot.
"""

import textwrap

TOY = textwrap.dedent(
    '''
    """Toy {name}."""
    import os
    import time
    import warnings

    import matplotlib.pyplot as plt
    import pandas as pd

    from experiments.runner import _common
    from experiments.runner.claims import Claim, Outcome, REPRODUCED

    TITLE = "Toy {name}"
    DATA = {data!r}
    CLAIMS = [Claim("one", "One claim.", "", lambda df: Outcome("1", REPRODUCED))]

    def compute(cfg):
        open(os.environ.get("TOY_MARKER", os.devnull), "a").close()  # proves compute ran
        {body}
        return pd.DataFrame({{"x": [1, 2, 3]}})

    def plot(df, cfg):
        fig, ax = plt.subplots(figsize=(2, 2))
        ax.plot(df.x)
        return fig

    def main(argv=None):
        return _common.run(__name__, argv)
    '''
)
