import json

import matplotlib
import pytest

matplotlib.use("Agg")

from course_utils import ledger, params, plotting  # noqa: E402


@pytest.fixture(autouse=True)
def fresh(monkeypatch, tmp_path):
    ledger.clear()
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.delenv("COURSE_LEDGER", raising=False)
    yield
    ledger.clear()


def test_record_roundtrip_through_the_ledger_file(tmp_path, monkeypatch):
    path = tmp_path / "run" / "ledger.json"
    monkeypatch.setenv("COURSE_LEDGER", str(path))
    ledger.record("iris.cpu_seconds", 4.62, unit="s", note="20k epochs")
    ledger.record("iris.test_accuracy", 0.9667)
    data = json.loads(path.read_text())
    assert data["iris.cpu_seconds"] == {"value": 4.62, "unit": "s", "note": "20k epochs"}
    assert data["iris.test_accuracy"]["value"] == pytest.approx(0.9667)
    assert not list(path.parent.glob("*.tmp"))  # atomic write leaves no temp file


def test_without_a_ledger_file_values_stay_in_memory(tmp_path):
    ledger.record("a.b", 1)
    assert ledger.recorded()["a.b"].value == 1.0


@pytest.mark.parametrize("key", ["nodot", "Upper.case", "a..b", "a.b-c"])
def test_bad_keys_are_refused(key):
    with pytest.raises(ValueError):
        ledger.record(key, 1.0)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "3", True, None])
def test_bad_values_are_refused(value):
    with pytest.raises((ValueError, TypeError)):
        ledger.record("a.b", value)


def test_references_load_and_compare(tmp_path):
    from course_utils.cards import new_card

    ref = new_card("h200", {"python": "3.12", "torch": "2.13.0", "cuda_build": "13.0", "nvidia_driver": "580.1",
                            "cpu_model": "x", "cpu_count": 8,
                            "gpus": [{"name": "NVIDIA H200", "compute_capability": "9.0", "memory_gib": 139.8}]},
                   "cuda", "test")
    ref["notebooks"]["02_iris"] = {"status": "ok", "results": {"iris.gpu_seconds": {"value": 7.5, "unit": "s", "note": ""}}}
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "h200.json").write_text(json.dumps(ref))
    assert ledger.available_references() == ["h200"]
    assert ledger.load_reference("h200")["iris.gpu_seconds"].value == 7.5
    assert ledger.load_reference("nope") == {}
    assert ledger.reference_environment("h200")["gpus"][0]["name"] == "NVIDIA H200"
    ledger.record("iris.cpu_seconds", 4.0, unit="s")
    table = ledger.compare(["iris.cpu_seconds", "iris.gpu_seconds"], references=("cpu-ci", "h200"))
    lines = str(table).splitlines()
    assert lines[0].split() == ["result", "unit", "this", "machine", "h200"], "an absent card gets no column"
    assert lines[2].split() == ["iris.cpu_seconds", "s", "4", "-"]
    assert lines[3].split() == ["iris.gpu_seconds", "s", "-", "7.5"]
    assert lines[4].startswith("h200: NVIDIA H200, torch 2.13.0, ")


def test_a_key_a_core_and_its_deeper_notebook_both_record_reads_as_the_cores(tmp_path):
    """The card's comparison column in a core lesson is the card's run of that core, whichever order the
    card lists its notebooks in."""
    from course_utils.cards import new_card

    for order in (("deeper/02_iris", "02_iris"), ("02_iris", "deeper/02_iris")):
        ref = new_card("box", {"python": "3.12", "torch": "2.13.0", "cuda_build": None, "nvidia_driver": None,
                               "cpu_model": "x", "cpu_count": 2, "gpus": []}, "cpu", "test")
        for nb in order:
            value = 2.0 if nb.startswith("deeper/") else 1.0
            ref["notebooks"][nb] = {"status": "ok", "results": {"iris.epoch_us": {"value": value, "unit": "us", "note": ""}}}
        (tmp_path / "results").mkdir(exist_ok=True)
        (tmp_path / "results" / "box.json").write_text(json.dumps(ref))
        ledger.clear()
        assert ledger.load_reference("box")["iris.epoch_us"].value == 1.0, order


def test_param_checks():
    assert params.check_int("EPOCHS", 10, 1, 100) == 10
    with pytest.raises(params.ParameterError, match=r"EPOCHS must be in \[1, 100\], got 0"):
        params.check_int("EPOCHS", 0, 1, 100)
    with pytest.raises(params.ParameterError, match="integer"):
        params.check_int("EPOCHS", 1.5, 1, 100)
    with pytest.raises(params.ParameterError):
        params.check_int("EPOCHS", True, 0, 100)
    assert params.check_float("LR", 0.1, 0, 1) == 0.1
    with pytest.raises(params.ParameterError):
        params.check_float("LR", 2, 0, 1)
    assert params.check_bool("SMOKE", False) is False
    with pytest.raises(params.ParameterError):
        params.check_bool("SMOKE", "False")
    assert params.check_choice("DEVICE", "cpu", ["cpu", "cuda"]) == "cpu"
    with pytest.raises(params.ParameterError, match="one of"):
        params.check_choice("DEVICE", "tpu", ["cpu", "cuda"])
    assert params.check_sizes("SIZES", [256, 64], 1, 4096) == [64, 256]
    with pytest.raises(params.ParameterError):
        params.check_sizes("SIZES", [], 1, 10)


def test_plots_need_titles_and_labels_and_save_png(tmp_path):
    with pytest.raises(ValueError):
        plotting.new_figure("", "x", "y")
    fig, ax = plotting.new_figure("Loss", "epoch", "loss (cross-entropy)")
    ax.plot([0, 1], [1, 0], label="train")
    plotting.finish(fig, tmp_path / "loss.png")
    assert (tmp_path / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert ax.get_legend() is not None and ax.get_title() == "Loss"
    fig2, axes = plotting.new_figure("Two", "n", "ms", ncols=2)
    assert len(axes) == 2 and fig2._suptitle.get_text() == "Two"
