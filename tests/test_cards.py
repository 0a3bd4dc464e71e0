"""Results cards: every shipped card is valid, a broken one is named and skipped, compare() shows every
card (and published stand-ins only where no GPU card measured a figure), save_card writes a valid card,
and the scratch folder is writable wherever a lesson runs."""
from __future__ import annotations

import copy
import re
import shutil
import json
import os
import subprocess
import tempfile
import sys
from pathlib import Path

import pytest

from course_utils import cards, ledger, paths, published
from course_utils.tables import Table

REPO = Path(__file__).resolve().parents[1]
SHIPPED = sorted((REPO / "results").glob("*.json"))
ENV = {"python": "3.12.3", "torch": "2.11.0+cu126", "cuda_build": "12.6", "nvidia_driver": "550.54.15",
       "cpu_model": "Intel Xeon", "cpu_count": 2,
       "gpus": [{"name": "Tesla T4", "compute_capability": "7.5", "memory_gib": 14.7, "multiprocessors": 40}]}


def _card(name="t4", env=ENV, results=None) -> dict:
    card = cards.new_card(name, copy.deepcopy(env), "cuda", "test")
    card["notebooks"]["04_gpu_hardware_and_benchmarks"] = {
        "status": "ok", "seconds": 12.5, "parameters": {"SMOKE": False}, "error": None,
        "results": results if results is not None else {"hw.matmul_bf16_tflops": {"value": 24.0, "unit": "TFLOP/s", "note": ""}}}
    return card


@pytest.fixture(autouse=True)
def fresh(monkeypatch, tmp_path):
    ledger.clear()
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path / "results"))
    (tmp_path / "results").mkdir()
    yield tmp_path / "results"
    ledger.clear()


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_results_card_matches_the_schema(path):
    card, found = cards.read_card(path)
    assert not found, f"{path.relative_to(REPO)} is not a valid results card:\n  " + "\n  ".join(found)
    assert card["notebooks"], "a card holds at least one lesson"


def test_cpu_ci_is_shipped():
    assert (REPO / "results" / "cpu-ci.json") in SHIPPED


def test_a_valid_card_has_no_problems_and_each_break_is_named():
    assert cards.problems(_card(), "t4") == []
    breaks = {
        "'schema' must be 1": lambda c: c.pop("schema"),
        "but the file is t4.json": lambda c: c.update(name="other"),
        "'created'": lambda c: c.update(created="yesterday"),
        "'device' must be": lambda c: c.update(device=""),
        "'environment.torch' is missing": lambda c: c["environment"].pop("torch"),
        "'environment.gpus[0].compute_capability' is missing": lambda c: c["environment"]["gpus"][0].pop("compute_capability"),
        "'environment.cpu_count' must be int": lambda c: c["environment"].update(cpu_count="2"),
        "status must be 'ok' or 'failed'": lambda c: c["notebooks"]["04_gpu_hardware_and_benchmarks"].update(status="done"),
        "value must be a finite number": lambda c: c["notebooks"]["04_gpu_hardware_and_benchmarks"]["results"]
        ["hw.matmul_bf16_tflops"].update(value="24"),
        "is not 'lesson.what'": lambda c: c["notebooks"]["04_gpu_hardware_and_benchmarks"]["results"].update(
            {"TFLOPS": {"value": 1.0}}),
        "'notebooks' must be an object with at least one lesson": lambda c: c.update(notebooks={}),
    }
    for expected, breaker in breaks.items():
        card = _card()
        breaker(card)
        found = cards.problems(card, "t4")
        assert any(expected in p for p in found), f"{expected!r} not among {found}"
    assert cards.problems([1, 2]) == ["a card is a JSON object, got list"]


def test_an_invalid_card_is_named_and_skipped_with_one_line(fresh, capfd):
    (fresh / "t4.json").write_text(json.dumps(_card()))
    broken = _card("broken")
    broken["environment"].pop("torch")
    (fresh / "broken.json").write_text(json.dumps(broken))
    (fresh / "garbled.json").write_text("{not json")
    assert ledger.available_references() == ["t4"]
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("warning: skipped results card ") for line in err)
    assert "broken.json: 'environment.torch' is missing" in err[0] and "garbled.json: not readable as JSON" in err[1]
    assert ledger.load_reference("broken") == {}
    ledger.record("hw.matmul_bf16_tflops", 1.0, unit="TFLOP/s")
    assert "broken" not in str(ledger.compare())
    assert capfd.readouterr().err == "", "each broken file is reported once per process"


def test_the_checker_command_exits_1_on_a_broken_card(fresh):
    bad = fresh / "bad.json"
    bad.write_text(json.dumps({"name": "bad"}))
    proc = subprocess.run([sys.executable, "-m", "course_utils.cards", str(bad), str(REPO / "results" / "cpu-ci.json")],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 1
    assert f"{bad}: INVALID" in proc.stdout and "cpu-ci.json: ok" in proc.stdout


def test_compare_shows_every_card_and_drops_cards_without_these_figures(fresh):
    cpu_env = {**ENV, "gpus": [], "cuda_build": None, "nvidia_driver": None}
    (fresh / "t4.json").write_text(json.dumps(_card()))
    (fresh / "laptop.json").write_text(json.dumps(_card("laptop", cpu_env)))
    other = _card("mac", cpu_env, {"iris.cpu_seconds": {"value": 3.0, "unit": "s", "note": ""}})
    (fresh / "mac.json").write_text(json.dumps(other))
    ledger.record("hw.matmul_bf16_tflops", 0.5, unit="TFLOP/s")
    table = ledger.compare(["hw.matmul_bf16_tflops"])
    assert isinstance(table, Table) and "<table" in table._repr_html_()
    assert table.header == ["result", "unit", "this machine", "laptop", "t4"], "mac has none of these figures"
    assert table.values[0][2:] == [0.5, 24.0, 24.0]
    assert "t4: Tesla T4, torch 2.11.0+cu126" in table.note
    assert "published" not in str(table), "a GPU card measured it: no published stand-in"


def test_published_figures_stand_in_only_where_no_gpu_card_measured_them(fresh):
    cpu_env = {**ENV, "gpus": [], "cuda_build": None, "nvidia_driver": None}
    (fresh / "laptop.json").write_text(json.dumps(_card("laptop", cpu_env)))
    table = ledger.compare(["hw.matmul_bf16_tflops", "iris.cpu_seconds"])
    pub = [h for h in table.header if h.endswith("(published)")]
    assert len(pub) == len(published.figures("hw.matmul_bf16_tflops")) >= 2
    h100 = table.header.index("H100 SXM (published)")
    assert table.values[0][h100] == 794.5 and table.values[1][h100] is None
    assert "published, not measured by the course: Stas Bekman" in table.note and "ml-engineering/blob/" in table.note


def test_save_card_writes_a_valid_card_next_to_a_lesson_opened_alone(fresh, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(ledger, "checkout", lambda: None)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    with pytest.raises(ValueError, match="nothing recorded"):
        ledger.save_card("my-colab-t4")
    ledger.record("iris.cpu_seconds", 4.0, unit="s")
    path = ledger.save_card("my-colab-t4")
    assert path == tmp_path / "results" / "my-colab-t4.json"
    assert "saved" in capsys.readouterr().out
    ledger.clear()
    monkeypatch.setenv("JPY_SESSION_NAME", "/content/04_gpu_hardware_and_benchmarks.ipynb")
    ledger.record("hw.matmul_bf16_tflops", 0.9, unit="TFLOP/s")
    ledger.save_card("my-colab-t4")
    card, found = cards.read_card(path)
    assert not found
    assert set(card["notebooks"]) == {"session-iris", "04_gpu_hardware_and_benchmarks"}, "lessons accumulate"
    with pytest.raises(ValueError, match="lower case"):
        ledger.save_card("My Colab")


def test_results_dir_is_the_checkout_s_or_the_wheel_s(monkeypatch):
    monkeypatch.delenv("COURSE_RESULTS_DIR")
    assert ledger.results_dir() == REPO / "results"
    monkeypatch.setattr(ledger, "checkout", lambda: None)
    assert ledger.results_dir() == Path(ledger.__file__).resolve().parent / "results"


def test_scratch_is_writable_in_a_checkout_next_to_the_notebook_or_in_temp(tmp_path, monkeypatch):
    monkeypatch.delenv("COURSE_SCRATCH", raising=False)
    assert paths.scratch_root() == REPO / "build" / "scratch"
    monkeypatch.setattr(paths, "checkout", lambda: None)
    monkeypatch.chdir(tmp_path)
    assert paths.scratch_dir("05_x") == tmp_path / "course_scratch" / "05_x" and (tmp_path / "course_scratch").is_dir()
    blocker = tmp_path / "a-file"
    blocker.write_text("")  # a folder cannot be made under a file, not even by root
    monkeypatch.setattr(paths.Path, "cwd", classmethod(lambda cls: blocker))
    assert paths.scratch_root() == Path(tempfile.gettempdir()) / f"course_scratch-{os.getuid()}"


def test_the_site_machines_page_lists_every_card_side_by_side(fresh):
    import importlib.util

    spec = importlib.util.spec_from_file_location("site_tool", REPO / "tools" / "site.py")
    site_tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(site_tool)
    (fresh / "t4.json").write_text(json.dumps(_card()))
    shutil.copy(REPO / "results" / "cpu-ci.json", fresh / "cpu-ci.json")
    (fresh / "broken.json").write_text(json.dumps({"name": "broken"}))
    site_tool.RESULTS = fresh
    page = site_tool.machines_html()
    header = re.search(r"<table><tr><th></th><th>unit</th>(.*?)</tr>", page)[1]
    assert header == "<th>cpu-ci</th><th>t4</th>", "one column per valid card"
    assert "<td>Tesla T4</td>" in page and "<td>7.5</td>" in page and "<td>550.54.15</td>" in page
    cpu = next(nb["results"]["hw.matmul_bf16_tflops"]["value"] for nb in json.loads((fresh / "cpu-ci.json").read_text())["notebooks"].values()
               if "hw.matmul_bf16_tflops" in nb.get("results", {}))
    assert (f"<code>hw.matmul_bf16_tflops</code></td><td>TFLOP/s</td><td class=\"num\">{site_tool._fmt(cpu)}</td>"
            "<td class=\"num\">24</td>") in page, "each card's own figure, side by side"
    assert "<code>results/broken.json</code>: &#x27;schema&#x27; must be 1" in page, "a broken card is named, not shown"
