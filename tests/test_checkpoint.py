"""course_utils.checkpoint and course_utils.resume_demo: every failure notebook 07 shows, as a test."""
from __future__ import annotations

import dataclasses
import json
import os
import pickle
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from course_utils import resume_demo
from course_utils.checkpoint import (
    CheckpointError,
    UnsafeCheckpointError,
    atomic_save,
    checkpoint_path,
    list_checkpoints,
    load_checkpoint,
    load_latest,
    rng_state,
    save_checkpoint,
    set_rng_state,
)

REPO = Path(__file__).resolve().parents[1]


def _module(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "course_utils.resume_demo", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


def _kill_mid_save(target: Path, naive: bool) -> int:
    """Start a stalling save of ``target`` in a child process, kill it once it is mid-write."""
    ready = target.with_name(target.name + ".ready")
    proc = subprocess.Popen([sys.executable, "-m", "course_utils.resume_demo", "stall-save", "--target", str(target),
                             "--ready", str(ready), *(["--naive"] if naive else [])], cwd=REPO, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    try:
        while not ready.exists():
            assert proc.poll() is None, f"writer exited early: {proc.stderr.read().decode()}"
            assert time.monotonic() < deadline, "writer never reached the middle of its save"
            time.sleep(0.02)
    finally:
        proc.kill()
        proc.wait()
    return proc.returncode


def test_atomic_save_round_trip_leaves_no_temporary_file(tmp_path):
    path = atomic_save({"w": torch.arange(4.0), "step": 3}, tmp_path / "sub" / "a.pt")
    state = load_checkpoint(path)
    assert torch.equal(state["w"], torch.arange(4.0)) and state["step"] == 3
    assert [p.name for p in path.parent.iterdir()] == ["a.pt"]


def test_failed_save_keeps_previous_and_cleans_up(tmp_path):
    target = atomic_save({"step": 1}, tmp_path / "a.pt")

    def boom(f):
        raise KeyboardInterrupt  # an interruption inside the save

    with pytest.raises(KeyboardInterrupt):
        atomic_save({"step": 2}, target, wrap=boom)
    assert load_checkpoint(target) == {"step": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["a.pt"]


def test_killed_atomic_save_keeps_previous_checkpoint(tmp_path):
    target = atomic_save({"step": 10, "w": torch.ones(3)}, tmp_path / "ckpt.pt")
    before = target.read_bytes()
    rc = _kill_mid_save(target, naive=False)
    assert rc != 0
    assert target.read_bytes() == before
    assert load_checkpoint(target)["step"] == 10
    leftovers = [p for p in tmp_path.iterdir() if p.suffix == ".tmp"]
    assert len(leftovers) == 1 and leftovers[0].stat().st_size >= 2**20  # the half-written temp file


def test_killed_naive_save_leaves_truncated_file_with_clear_error(tmp_path):
    target = atomic_save({"step": 10}, tmp_path / "ckpt.pt")
    _kill_mid_save(target, naive=True)
    with pytest.raises(CheckpointError, match="truncated or corrupt") as info:
        load_checkpoint(target)
    assert str(target) in str(info.value)


@pytest.mark.parametrize("keep_fraction", [0.0, 0.5, 0.99])
def test_truncated_file_gives_clear_error(tmp_path, keep_fraction):
    good = atomic_save({"w": torch.randn(1000)}, tmp_path / "good.pt")
    bad = tmp_path / "bad.pt"
    data = good.read_bytes()
    bad.write_bytes(data[: int(len(data) * keep_fraction)])
    with pytest.raises(CheckpointError, match=r"bad\.pt is truncated or corrupt"):
        load_checkpoint(bad)


def test_missing_file_is_a_checkpoint_error(tmp_path):
    with pytest.raises(CheckpointError, match="no such checkpoint"):
        load_checkpoint(tmp_path / "nope.pt")


class _Payload:
    """Unpickling this would run a shell command that creates a marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f'echo pwned > "{self.marker}"',))


def test_malicious_pickle_is_refused_without_running(tmp_path):
    marker = tmp_path / "marker.txt"
    path = tmp_path / "evil.pt"
    torch.save({"model": {}, "extra": _Payload(marker)}, path)
    with pytest.raises(UnsafeCheckpointError, match="evil.pt: refused"):
        load_checkpoint(path)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path, weights_only=True)
    assert not marker.exists()


@dataclasses.dataclass
class _Config:
    lr: float = 0.1
    name: str = "run"


def test_safe_class_needs_allow_listing(tmp_path):
    path = atomic_save({"config": _Config(lr=0.5)}, tmp_path / "cfg.pt")
    with pytest.raises(UnsafeCheckpointError, match="_Config"):
        load_checkpoint(path)
    if hasattr(torch.serialization, "safe_globals"):  # torch >= 2.5: scoped
        with torch.serialization.safe_globals([_Config]):
            assert load_checkpoint(path)["config"] == _Config(lr=0.5)
    else:  # torch 2.4: process-wide
        torch.serialization.add_safe_globals([_Config])
        assert load_checkpoint(path)["config"] == _Config(lr=0.5)


def test_numpy_state_needs_plain_types(tmp_path):
    raw = atomic_save({"numpy": np.random.get_state()}, tmp_path / "raw.pt")
    with pytest.raises(UnsafeCheckpointError):
        load_checkpoint(raw)
    random.seed(1)
    np.random.seed(2)
    torch.manual_seed(3)
    plain = atomic_save({"rng": rng_state()}, tmp_path / "plain.pt")
    expected = (random.random(), np.random.rand(), torch.rand(1).item())
    random.seed(9)
    np.random.seed(9)
    torch.manual_seed(9)
    set_rng_state(load_checkpoint(plain)["rng"])
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected


def test_disabled_grad_scaler_has_empty_state():
    assert torch.amp.GradScaler("cuda", enabled=False).state_dict() == {}


def test_rotation_keeps_last_k(tmp_path):
    for step in (5, 10, 15, 20, 25):
        save_checkpoint({"step": step}, tmp_path, step, keep=2)
    assert [p.name for p in list_checkpoints(tmp_path)] == ["ckpt_00000020.pt", "ckpt_00000025.pt"]
    with pytest.raises(ValueError):
        save_checkpoint({}, tmp_path, 30, keep=0)


def test_load_latest_skips_a_corrupt_newest(tmp_path, capsys):
    for step in (1, 2):
        save_checkpoint({"step": step}, tmp_path, step, keep=3)
    newest = checkpoint_path(tmp_path, 2)
    newest.write_bytes(newest.read_bytes()[:100])
    (tmp_path / ".ckpt_00000003.pt.abc.tmp").write_bytes(b"half")  # leftover of a killed save
    path, state = load_latest(tmp_path)
    assert path.name == "ckpt_00000001.pt" and state == {"step": 1}
    assert "skipping ckpt_00000002.pt" in capsys.readouterr().out
    assert load_latest(tmp_path / "empty") is None


def test_resume_in_fresh_process_is_bit_identical(tmp_path):
    n, threads = 20, "1"  # the same thread count in both processes
    ref = resume_demo.train(tmp_path / "ref", 2 * n, 2 * n, threads=1)  # uninterrupted, in this process
    resume_demo.train(tmp_path / "run", n, 2 * n, threads=1)  # first half here; the second half in a fresh process
    second = _module("train", "--folder", str(tmp_path / "run"), "--until", str(2 * n), "--total", str(2 * n),
                     "--resume", "--threads", threads)
    assert second.returncode == 0, second.stderr
    out = json.loads(second.stdout.strip().splitlines()[-1])
    assert (out["start"], out["step"]) == (n, 2 * n)
    resumed = load_checkpoint(out["checkpoint"])["model"]
    for name, w in ref["model"].state_dict().items():
        assert torch.equal(resumed[name], w), name


def test_resume_without_rng_state_drifts(tmp_path):
    n = 10
    ref = resume_demo.train(tmp_path / "ref", 2 * n, 2 * n)
    resume_demo.train(tmp_path / "run", n, 2 * n)
    out = resume_demo.train(tmp_path / "run", 2 * n, 2 * n, resume=True, restore_rng=False)
    assert not all(torch.equal(out["model"].state_dict()[k], v) for k, v in ref["model"].state_dict().items())
    resume_demo.train(tmp_path / "run2", n, 2 * n)
    exact = resume_demo.train(tmp_path / "run2", 2 * n, 2 * n, resume=True)
    assert all(torch.equal(exact["model"].state_dict()[k], v) for k, v in ref["model"].state_dict().items())
