"""The headless runner (`make run`) on throwaway notebooks: table, summary, ledger, failures."""
import json

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from course_utils import run


def _notebook(path, body):
    nb = new_notebook(cells=[
        new_code_cell("DEVICE = 'auto'\nSMOKE = False", metadata={"tags": ["parameters"]}),
        new_code_cell(body),
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


def test_runner_executes_records_and_reports_failures(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path / "results"))
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    _notebook(nbs / "01_good.ipynb", "from course_utils import record\nrecord('good.smoke', 1.0 if SMOKE else 2.0, unit='x')")
    _notebook(nbs / "02_bad.ipynb", "raise RuntimeError('boom')")
    out = tmp_path / "out"

    rc = run.main(["--notebooks", str(nbs), "--out", str(out), "--smoke"])
    assert rc == 1
    printed = capsys.readouterr().out
    assert "01_good" in printed and "02_bad" in printed and "FAILED 1" in printed
    summary = json.loads((out / "summary.json").read_text())
    good, bad = summary["notebooks"]["01_good"], summary["notebooks"]["02_bad"]
    assert good["status"] == "ok" and good["results"]["good.smoke"]["value"] == 1.0
    assert good["parameters"] == {"DEVICE": "auto", "SMOKE": True}
    assert bad["status"] == "failed" and "boom" in bad["error"]
    assert (out / "01_good.ipynb").exists()

    # A reference run merges into results/NAME.json, keeping notebooks not re-run.
    rc = run.main(["01", "--notebooks", str(nbs), "--out", str(out), "--results", "box"])
    assert rc == 0
    ref = json.loads((tmp_path / "results" / "box.json").read_text())
    assert ref["name"] == "box" and ref["notebooks"]["01_good"]["results"]["good.smoke"]["value"] == 2.0
    ref["notebooks"]["99_old"] = {"status": "ok", "results": {}}
    (tmp_path / "results" / "box.json").write_text(json.dumps(ref))
    run.main(["01", "--notebooks", str(nbs), "--out", str(out), "--results", "box"])
    assert "99_old" in json.loads((tmp_path / "results" / "box.json").read_text())["notebooks"]
