"""``results.sha256``: the digest of each result CSV's non-timing content, the same for two runs whose
numbers agree, still refusing a file cut off or edited; the earlier whole-file format is still read."""

from __future__ import annotations

import hashlib
import importlib
import re

import pandas as pd

from experiments.runner import _atomic
from experiments.runner._atomic import DIGESTS, DIGESTS_HEADER, content_digest, record_digest, recorded_digest
from experiments.runner._common import write_csv
from experiments.runner._paths import FIGURES_DIR


def _frame(seconds=(0.01, 0.02, 0.03), variance=(1.5, 2.25, 3.0)):
    return pd.DataFrame(
        {"method": ["EM", "EM", "PCA"], "k": [1, 2, 3], "variance": list(variance), "seconds": list(seconds)}
    )


def test_runs_with_the_same_numbers_have_the_same_record(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    write_csv(_frame(), a / "toy.csv")
    write_csv(_frame(seconds=(0.9, 0.8, 0.7)), b / "toy.csv")  # other times only
    assert (a / "toy.csv").read_bytes() != (b / "toy.csv").read_bytes()
    assert (a / DIGESTS).read_text() == (b / DIGESTS).read_text()
    assert (a / DIGESTS).read_text().splitlines()[0] == DIGESTS_HEADER
    write_csv(_frame(variance=(1.5, 2.25, 3.0001)), b / "toy.csv")  # a number moved
    assert (a / DIGESTS).read_text() != (b / DIGESTS).read_text()
    # the declared timing columns of an experiment are left out too (verify's rule)
    write_csv(pd.DataFrame({"m": ["x"], "peak_bytes": [100]}), a / "roweis1997_claims.csv")
    first = content_digest(a / "roweis1997_claims.csv")
    write_csv(pd.DataFrame({"m": ["x"], "peak_bytes": [101]}), a / "roweis1997_claims.csv")
    assert content_digest(a / "roweis1997_claims.csv") == first


def test_a_declared_timing_column_is_left_out_as_the_file_is_written(tmp_path):
    """The digest follows the experiment's rule (its declared timing columns), not the temporary's name."""
    path = write_csv(
        pd.DataFrame({"k": [1, 2], "ratio": [0.5, 0.7]}), tmp_path / "bench_em_pca.csv", quick=True
    )
    assert recorded_digest(path) is None and _atomic.recorded_mode(path) is True
    path.write_text(path.read_text().replace("0.7", "0.9"))  # a measured ratio: not a result
    assert recorded_digest(path) is None


def test_a_file_cut_or_edited_is_still_refused(tmp_path):
    path = write_csv(_frame(), tmp_path / "toy.csv")
    assert recorded_digest(path) is None
    whole = path.read_text()
    path.write_text("".join(whole.splitlines(keepends=True)[:3]))  # cut at a row boundary
    assert "does not match" in recorded_digest(path)
    path.write_text(whole.replace("2.25", "2.5"))  # a number edited
    assert "does not match" in recorded_digest(path)
    path.write_text(whole.replace("0.02", "0.07"))  # a measured time edited: not a result
    assert recorded_digest(path) is None


def _old_record(folder, names):
    lines = [f"{hashlib.sha256((folder / n).read_bytes()).hexdigest()}  {n}\n" for n in names]
    (folder / DIGESTS).write_text("".join(lines))


def test_the_earlier_whole_file_record_is_read_and_converted(tmp_path):
    for n in ("a.csv", "b.csv"):
        _frame().to_csv(tmp_path / n, index=False)
    _old_record(tmp_path, ["a.csv", "b.csv"])
    assert recorded_digest(tmp_path / "a.csv") is None and recorded_digest(tmp_path / "b.csv") is None
    text = (tmp_path / "b.csv").read_text()
    (tmp_path / "b.csv").write_text(text.replace("0.02", "0.07"))  # whole files: any edit is seen
    assert "sha256 does not match" in recorded_digest(tmp_path / "b.csv")
    # a run writes c.csv into the folder: the record is converted, a.csv still matches, b.csv still not
    write_csv(_frame(), tmp_path / "c.csv")
    content, digests = _atomic._read_record(tmp_path / DIGESTS)
    assert content and set(digests) == {"a.csv", "b.csv", "c.csv"}
    assert recorded_digest(tmp_path / "a.csv") is None and recorded_digest(tmp_path / "c.csv") is None
    assert "does not match" in recorded_digest(tmp_path / "b.csv")


def test_the_committed_figures_match_their_record():
    _, digests = _atomic._read_record(FIGURES_DIR / DIGESTS)
    assert len(digests) >= 30
    for name in digests:
        assert recorded_digest(FIGURES_DIR / name) is None, name
        assert _atomic.recorded_mode(FIGURES_DIR / name) is False, name  # a full run made them
    _, kept = _atomic._read_record(FIGURES_DIR / _atomic.LEDGER_DIGESTS)
    ledger = {f"{d}/{p.name}" for d in ("claims", "goals") for p in (FIGURES_DIR / d).glob("*.csv")}
    assert ledger | {"runtimes.csv"} == set(kept)
    for name in kept:
        assert _atomic.ledger_file_problem(FIGURES_DIR / name) is None, name


def test_record_digest_is_what_write_csv_records(tmp_path):
    path = tmp_path / "toy.csv"
    _frame().to_csv(path, index=False)
    record_digest(path)
    assert (tmp_path / DIGESTS).read_text().splitlines()[1] == f"{content_digest(path)}  toy.csv"
    record_digest(path, quick=True)
    assert (tmp_path / DIGESTS).read_text().splitlines()[1] == f"{content_digest(path)}  toy.csv  quick"
    assert _atomic.recorded_mode(path) is True


#: a time or an amount of memory as the checks write them ("0.01 s", "29 s", "568 MB")
MEASURED = re.compile(r"\d(?:\.\d+)?\s?(?:s|ms|us|µs|min|h|B|kB|KB|MB|MiB|GB|GiB|bytes)\b")


def test_no_mathematical_row_carries_a_time_or_memory_in_its_reproduced_text():
    """Evaluated on the committed full-run CSVs: the text of a non-timing row is the same from run to
    run, its measured times and memory going to the ``measured`` column instead."""
    from experiments.runner import claims, registry
    from experiments.runner._common import read_result

    found = []
    for name in registry.experiment_names():
        if not (FIGURES_DIR / f"{name}.csv").is_file():
            continue
        mod = importlib.import_module(registry.module_name(name))
        checks = [*getattr(mod, "CLAIMS", []), *getattr(mod, "GOALS", [])]
        rows = claims.evaluate(name, checks, read_result(FIGURES_DIR, name), quick=False)
        for r in rows[~rows.machine_dependent.astype(bool)].itertuples():
            if MEASURED.search(str(r.reproduced)):
                found.append(f"{name}/{r.id}: {r.reproduced}")
    assert not found, "\n".join(found)
