"""``repro verify --run DIR``: a folder a run already wrote, compared without recomputing; and the
environment record that every run writes beside its ledger, printed by verify when a number moved."""

from __future__ import annotations

import json
import shutil
import time

import pytest

from experiments.runner import _atomic, cli, environment
from experiments.runner._paths import FIGURES_DIR

NAME = "sigg2008_prop32"  # a full-run CSV of the committed figures/ (454 rows, floats, counts, text)


def _copy(folder, names=(NAME,)):
    """A copy of the committed files of ``names``, with the records that vouch for them."""
    (folder / "claims").mkdir(parents=True, exist_ok=True)
    for n in names:
        shutil.copy(FIGURES_DIR / f"{n}.csv", folder / f"{n}.csv")
        shutil.copy(FIGURES_DIR / "claims" / f"{n}.csv", folder / "claims" / f"{n}.csv")
    for record in (_atomic.DIGESTS, _atomic.LEDGER_DIGESTS):
        shutil.copy(FIGURES_DIR / record, folder / record)
    return folder


def test_a_copy_without_its_record_is_refused(tmp_path, capsys):
    run = _copy(tmp_path / "run")
    (run / _atomic.DIGESTS).unlink()
    assert cli.main(["verify", "--run", str(run)]) == 2
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith(f"{NAME}: ERROR")]
    assert "has no digest in" in line
    run = _copy(tmp_path / "run2")
    (run / "claims" / f"{NAME}.csv").write_text((run / "claims" / f"{NAME}.csv").read_text().replace(
        "reproduced", "not reproduced"))  # fmt: skip
    assert cli.main(["verify", "--run", str(run)]) == 2
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith(f"{NAME}: ERROR")]
    assert "claims" in line and "does not match" in line


def _change_a_number(path):
    """Move one number of the CSV at ``path``, as a run that computed another would (recorded anew)."""
    lines = path.read_text().splitlines(keepends=True)
    head = lines[0].rstrip("\n").split(",")
    i = head.index("final_error")
    import csv
    import io

    row = next(csv.reader([lines[1]]))
    row[i] = repr(float(row[i]) * 1.01)
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(row)
    lines[1] = buf.getvalue()
    path.write_text("".join(lines))
    _atomic.record_digest(path, quick=False)


def test_a_copy_of_the_reference_compares_equal_in_seconds(tmp_path, capsys):
    run = _copy(tmp_path / "run")
    t0 = time.perf_counter()
    assert cli.main(["verify", "--run", str(run)]) == 0
    assert time.perf_counter() - t0 < 20  # nothing is recomputed
    out = capsys.readouterr().out
    assert f"{NAME}: no number moved" in out and "1 experiment(s) compared" in out
    assert "numbers moved: none" in out and "environments" not in out  # printed only when something moved
    assert cli.main(["verify", NAME, "--run", str(run)]) == 0  # the names can be given


def test_a_moved_number_exits_1_and_prints_both_environments(tmp_path, capsys):
    run = _copy(tmp_path / "run")
    ref = _copy(tmp_path / "ref")
    env = environment.collect()
    other = json.loads(json.dumps(env))
    other["packages"]["numpy"] = "1.0.0"
    other["variables"]["OPENBLAS_CORETYPE"] = "Prescott"
    for folder, e in ((run, env), (ref, other)):
        (folder / environment.JSON_NAME).write_text(json.dumps({"environment": e, "experiments": [NAME]}))
    assert cli.main(["verify", "--run", str(run), "--reference", str(ref)]) == 0
    _change_a_number(run / f"{NAME}.csv")
    assert cli.main(["verify", "--run", str(run), "--reference", str(ref)]) == 1
    out = capsys.readouterr().out
    assert f"{NAME}: MOVED" in out and "column final_error" in out and f"numbers moved: {NAME}" in out
    lines = out.splitlines()
    assert any(line.startswith("  * packages.numpy") and "1.0.0" in line for line in lines)
    assert any(line.startswith("  * variables.OPENBLAS_CORETYPE") and "Prescott" in line for line in lines)
    assert not any(line.startswith("  * packages.scipy") for line in lines)  # equal fields are not marked
    assert cli.main(["verify", "--run", str(run), "--reference", str(ref), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["run"] == str(run) and not report["ok"]
    assert "packages.numpy" in report["environment"]["differ"]
    # against the committed figures: both records side by side, or, where figures/ has none, said so
    assert cli.main(["verify", "--run", str(run)]) == 1
    out = capsys.readouterr().out
    if environment.read(FIGURES_DIR) is None:
        assert "environment of this run (reference has no environment.json" in out and "packages.numpy" in out
        assert "  * " not in out  # nothing marked: there is nothing to compare with
    else:
        assert "environments: " in out and "field(s) differ" in out and "packages.numpy" in out


@pytest.mark.parametrize("damage", ["missing folder", "empty folder", "garbled csv", "no claims", "a file"])
def test_a_missing_or_garbled_run_exits_2_with_one_line(tmp_path, capsys, damage):
    run = tmp_path / "run"
    if damage == "empty folder":
        run.mkdir()
    elif damage == "a file":
        run.write_text("x")
    elif damage == "garbled csv":
        _copy(run)
        with open(run / f"{NAME}.csv", "a") as f:
            f.write("run,CBCL faces,cut off\n")
    elif damage == "no claims":
        _copy(run)
        (run / "claims" / f"{NAME}.csv").unlink()
    status = cli.main(["verify", "--run", str(run)])
    captured = capsys.readouterr()
    assert status == 2
    if damage in ("missing folder", "empty folder", "a file"):
        assert len(captured.err.strip().splitlines()) == 1 and str(run) in captured.err
    else:
        (line,) = [x for x in captured.out.splitlines() if x.startswith(f"{NAME}: ERROR")]
        assert str(run) in line


def test_run_refusals(tmp_path, capsys):
    run = _copy(tmp_path / "run")
    assert cli.main(["verify", "--run", str(run), "--quick"]) == 2  # a full run against quick references
    assert "holds a full run" in capsys.readouterr().err
    assert cli.main(["verify", "--run", str(run), "--update", "--quick"]) == 2
    assert cli.main(["verify", "no_such_experiment", "--run", str(run)]) == 2
    assert cli.main(["verify"]) == 2  # no names and no --run
    assert "name the experiments" in capsys.readouterr().err


def test_the_environment_record(tmp_path):
    env = environment.collect()
    assert env["packages"]["numpy"][0].isdigit() and env["python"].startswith("3.")
    assert env["numpy_cpu"]["baseline"] and env["cpu"]
    assert any(lib.get("internal_api") for lib in env["blas"])  # the BLAS and its kernel
    environment.write(tmp_path, ["b"], quick=True, seed=0, env=env)
    environment.write(tmp_path, ["a"], quick=True, seed=0, env=env)  # same environment: added
    record = environment.read(tmp_path)
    assert record["experiments"] == ["a", "b"] and record["quick"] is True
    text = (tmp_path / environment.MD_NAME).read_text()
    assert "packages.numpy" in text and "quick" in text
    other = {**env, "packages": {**env["packages"], "numpy": "0"}}
    environment.write(tmp_path, ["c"], quick=True, seed=0, env=other)  # another one: replaced
    assert environment.read(tmp_path)["experiments"] == ["c"]
    assert environment.differences(env, other) == ["packages.numpy"]
    (tmp_path / environment.JSON_NAME).write_text("{not json")
    assert environment.read(tmp_path) is None


def test_a_quick_run_writes_its_environment_and_verifies_from_its_folder(tmp_path, capsys):
    out = tmp_path / "q"
    assert cli.main(["run", "roweis1997_fig1", "--quick", "--out", str(out), "--jobs", "1"]) == 0
    record = environment.read(out)
    assert record["quick"] is True and record["experiments"] == ["roweis1997_fig1"]
    assert record["environment"] == environment.collect()
    assert "# Environment of this run" in (out / environment.MD_NAME).read_text()
    capsys.readouterr()
    # the folder's claims say quick: compared with the quick references, nothing recomputed
    assert cli.main(["verify", "--run", str(out)]) == 0
    assert "verify --quick --run" in capsys.readouterr().out
