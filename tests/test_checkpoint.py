"""course_utils.checkpoint and course_utils.stall_save: every failure notebook 07 shows, as a test."""
from __future__ import annotations

import dataclasses
import json
import os
import pickle
import random
import shutil
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from ci_kit import missing_tool
from course_utils.checkpoint import (
    CheckpointError,
    CheckpointWarning,
    UnsafeCheckpointError,
    atomic_save,
    checkpoint_path,
    cuda_states_that_fit,
    list_checkpoints,
    load_checkpoint,
    load_latest,
    restore_cuda_rng_states,
    restore_training_state,
    rng_state,
    save_checkpoint,
    set_rng_state,
    stored_digest,
    training_state,
)

REPO = Path(__file__).resolve().parents[1]


def _kill_mid_save(target: Path, naive: bool) -> int:
    """Start a stalling save of ``target`` in a child process, kill it once it is mid-write."""
    ready = target.with_name(target.name + ".ready")
    proc = subprocess.Popen([sys.executable, "-m", "course_utils.stall_save", "--target", str(target),
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


def _build() -> tuple:
    model = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.ReLU(), torch.nn.Dropout(0.2), torch.nn.Linear(16, 3))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.7)
    return model, opt, sched, torch.amp.GradScaler("cuda", enabled=False)


def _train(model, opt, sched, steps: int) -> None:
    """Draws from torch (batch, dropout), NumPy (noise) and Python (scale), like the lesson's script."""
    X, y = torch.linspace(-1, 1, 200).reshape(40, 5), torch.arange(40) % 3
    for _ in range(steps):
        idx = torch.randint(0, 40, (8,))
        xb = (X[idx] + torch.from_numpy(np.random.normal(0, 0.1, (8, 5))).float()) * random.uniform(0.9, 1.1)
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(xb), y[idx]).backward()
        opt.step()
        sched.step()


@pytest.mark.parametrize("restore_rng", [True, False])
def test_training_state_resumes_exactly_only_with_the_rng_states(tmp_path, restore_rng):
    n = 5
    for s in (torch.manual_seed, np.random.seed, random.seed):
        s(3)
    ref = _build()
    _train(*ref[:3], n)
    save_checkpoint(training_state(*ref, step=n), tmp_path, n)
    _train(*ref[:3], n)
    torch.manual_seed(99), np.random.seed(99), random.seed(99)  # a new process: other weights, other draws
    fresh = _build()
    state = load_latest(tmp_path)[1]
    if not restore_rng:
        state["rng"] = rng_state()  # everything but the generators
    assert restore_training_state(state, *fresh) == (n, 0)
    _train(*fresh[:3], n)
    same = all(torch.equal(a, b) for a, b in zip(ref[0].state_dict().values(), fresh[0].state_dict().values()))
    assert same is restore_rng


# --- Damage that must be caught and skipped, never loaded and never called "unsafe" ---------------


def _two_checkpoints(folder: Path) -> Path:
    """Steps 1 and 2 with a real tensor each; returns the newest (step 2)."""
    for step in (1, 2):
        save_checkpoint({"step": step, "w": torch.arange(1000.0) * step}, folder, step, keep=3)
    return checkpoint_path(folder, 2)


@pytest.mark.parametrize("start", [b"", b"PK\x03\x04", b"\x80\x02"], ids=["random", "zip-header", "pickle-header"])
def test_random_bytes_are_corrupt_not_unsafe_and_load_latest_falls_back(tmp_path, capsys, start):
    newest = _two_checkpoints(tmp_path)
    for seed in range(40):  # many files: the first bytes decide which layer of the loader fails
        r = random.Random(seed)
        newest.write_bytes(start + bytes(r.getrandbits(8) for _ in range(4096)))
        with pytest.raises(CheckpointError) as info:
            load_checkpoint(newest)
        assert not isinstance(info.value, UnsafeCheckpointError), str(info.value)
    path, state = load_latest(tmp_path)
    assert state["step"] == 1
    assert f"skipping {newest.name}: {newest.name} " in capsys.readouterr().out


def _tensor_data_offset(path: Path, record: str = "data/0") -> tuple[int, int]:
    """Where the bytes of a tensor's storage start in a ``torch.save`` zip, and how many there are."""
    with zipfile.ZipFile(path) as z:
        info = next(i for i in z.infolist() if i.filename.endswith(record))
    raw = path.read_bytes()
    name_len, extra_len = (int.from_bytes(raw[info.header_offset + k:info.header_offset + k + 2], "little")
                           for k in (26, 28))
    return info.header_offset + 30 + name_len + extra_len, info.file_size


def test_a_flipped_bit_in_tensor_data_is_caught_by_the_digest(tmp_path, capsys):
    newest = _two_checkpoints(tmp_path)
    start, size = _tensor_data_offset(newest)
    raw = bytearray(newest.read_bytes())
    raw[start + size // 2] ^= 0x01
    newest.write_bytes(bytes(raw))
    try:  # the premise: torch.load itself does not check, it returns a wrong number
        assert not torch.equal(torch.load(newest, weights_only=True)["w"], torch.arange(1000.0) * 2)
    except RuntimeError:
        pass  # a torch that checks its zip records' CRCs would catch it on its own
    with pytest.raises(CheckpointError, match="does not match the SHA-256"):
        load_checkpoint(newest)
    path, state = load_latest(tmp_path)
    assert path.name == "ckpt_00000001.pt" and torch.equal(state["w"], torch.arange(1000.0))
    assert "skipping ckpt_00000002.pt: ckpt_00000002.pt is corrupt" in capsys.readouterr().out


def test_the_digest_is_inside_the_file_and_plain_torch_load_still_reads_it(tmp_path):
    path = atomic_save({"w": torch.ones(3)}, tmp_path / "a.pt")
    assert [p.name for p in tmp_path.iterdir()] == ["a.pt"]  # one file, no sidecar
    assert len(stored_digest(path)) == 64
    assert zipfile.ZipFile(path).comment.startswith(b"course_utils sha256:")
    assert torch.equal(torch.load(path, weights_only=True)["w"], torch.ones(3))


def test_cut_off_inside_the_digest_is_truncated(tmp_path):
    path = atomic_save({"w": torch.ones(3)}, tmp_path / "a.pt")
    path.write_bytes(path.read_bytes()[:-30])  # torch.load would still load this
    with pytest.raises(CheckpointError, match="a.pt is truncated or corrupt"):
        load_checkpoint(path)


def test_a_checkpoint_without_digest_loads_with_a_warning(tmp_path):
    """Files from plain torch.save (or saved before digests) stay loadable: a warning, not an error."""
    old = tmp_path / "old.pt"
    torch.save({"step": 7}, old)
    with pytest.warns(CheckpointWarning, match="old.pt has no SHA-256 digest"):
        assert load_checkpoint(old) == {"step": 7}


def test_a_folder_in_place_of_the_newest_is_skipped(tmp_path, capsys):
    _two_checkpoints(tmp_path)
    checkpoint_path(tmp_path, 3).mkdir()
    assert load_latest(tmp_path)[1]["step"] == 2
    assert "skipping ckpt_00000003.pt: ckpt_00000003.pt: not a file" in capsys.readouterr().out


_UNREADABLE_NEWEST = """
import sys
from pathlib import Path

import pytest

from course_utils.checkpoint import CheckpointError, load_checkpoint, load_latest

folder = Path(sys.argv[1])
with pytest.raises(CheckpointError, match="cannot be read"):
    load_checkpoint(folder / "ckpt_00000002.pt")
print("resumed from step", load_latest(folder)[1]["step"])
"""
# Root ignores file modes through two capabilities (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH). CI runs as
# root, so there the check runs in a child started without them (util-linux's setpriv), where a mode-0
# file cannot be read, as for any other user.
_NO_MODE_OVERRIDE = ["--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search"]


@pytest.mark.skipif(os.name != "posix", reason="needs POSIX file modes")
def test_an_unreadable_newest_is_skipped(tmp_path):
    newest = _two_checkpoints(tmp_path)
    prefix = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            missing_tool("as root this needs util-linux's setpriv, to drop root's override of file modes")
        prefix = [setpriv, *_NO_MODE_OVERRIDE]
    newest.chmod(0)
    try:
        proc = subprocess.run([*prefix, sys.executable, "-c", _UNREADABLE_NEWEST, str(tmp_path)],
                              capture_output=True, text=True, timeout=120)
    finally:
        newest.chmod(0o600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "skipping ckpt_00000002.pt" in proc.stdout and "resumed from step 1" in proc.stdout, proc.stdout


def test_unsafe_file_names_the_refused_global_and_is_never_skipped(tmp_path):
    """An unsafe file is an alarm, not damage: load_latest raises instead of resuming from an older one."""
    save_checkpoint({"step": 1}, tmp_path, 1)
    torch.save({"extra": _Payload(tmp_path / "marker")}, checkpoint_path(tmp_path, 2))
    with pytest.raises(UnsafeCheckpointError, match=r"needs the global (posix|nt)\.system"):
        load_latest(tmp_path)
    assert not (tmp_path / "marker").exists()


# --- Rotation, file modes, a full disk ----------------------------------------------------------


def test_rotation_never_deletes_the_file_just_saved(tmp_path):
    """A re-run into a folder that holds later steps keeps its own checkpoints and says why."""
    save_checkpoint({"step": 1}, tmp_path, 1, keep=1)
    atomic_save({"step": 3}, checkpoint_path(tmp_path, 3))  # left by an earlier run that got further
    with pytest.warns(CheckpointWarning, match=r"later steps \(ckpt_00000003\.pt\)"):
        path = save_checkpoint({"step": 2}, tmp_path, 2, keep=1)
    assert [p.name for p in list_checkpoints(tmp_path)] == ["ckpt_00000002.pt", "ckpt_00000003.pt"]
    assert load_checkpoint(path) == {"step": 2}
    with pytest.raises(ValueError, match="step"):
        save_checkpoint({}, tmp_path, -1)


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
@pytest.mark.parametrize(("mask", "expected"), [(0o022, 0o644), (0o002, 0o664)])
def test_checkpoint_mode_follows_the_umask(tmp_path, mask, expected):
    previous = os.umask(mask)
    try:
        path = save_checkpoint({"step": 1}, tmp_path, 1)
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) == expected


DISK_FULL_SAVE = """
import json, resource, signal, sys
import torch
from course_utils.checkpoint import save_checkpoint
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # fail the write with EFBIG instead of killing us
resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))  # stands in for a full disk
try:
    save_checkpoint({"step": 2, "w": torch.zeros(2**18)}, sys.argv[1], 2, keep=1)  # a 1 MiB file
except OSError as exc:
    print(json.dumps({"type": type(exc).__name__, "errno": exc.errno, "message": str(exc)}))
    sys.exit(3)
"""


@pytest.mark.skipif(os.name != "posix", reason="RLIMIT_FSIZE and SIGXFSZ are POSIX")
def test_disk_full_during_save_keeps_the_previous_checkpoint(tmp_path):
    save_checkpoint({"step": 1}, tmp_path, 1, keep=1)
    proc = subprocess.run([sys.executable, "-c", DISK_FULL_SAVE, str(tmp_path)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    error = json.loads(proc.stdout)
    assert error["errno"] == 27 and "File too large" in error["message"]  # EFBIG
    assert "ckpt_00000002.pt" in error["message"] and "was not changed" in error["message"]
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt_00000001.pt"]  # no temporary file, no rotation
    assert load_checkpoint(checkpoint_path(tmp_path, 1)) == {"step": 1}


# --- CUDA generator states saved on more GPUs than are visible ---------------------------------


def test_cuda_states_that_fit_keeps_the_first_visible_ones():
    states = [torch.full((16,), i, dtype=torch.uint8) for i in range(4)]
    fit, left_out = cuda_states_that_fit(states, 2)
    assert [int(s[0]) for s in fit] == [0, 1] and left_out == 2
    assert cuda_states_that_fit(states, 8) == (states, 0)
    assert cuda_states_that_fit(states, 0) == ([], 4)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU-only case")
def test_resuming_a_gpu_checkpoint_on_the_cpu_warns_and_restores_the_rest():
    state = rng_state()
    state["cuda"] = [torch.zeros(16, dtype=torch.uint8) for _ in range(3)]  # as if saved on 3 GPUs
    expected = torch.rand(2)  # what the CPU generator draws right after the save
    torch.manual_seed(99)
    with pytest.warns(CheckpointWarning, match="3 CUDA generator states, 0 GPU"):
        set_rng_state(state)
    assert torch.equal(torch.rand(2), expected)  # the CPU generator was still restored


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_states_beyond_the_visible_gpus_restore_what_fits():
    visible = torch.cuda.device_count()
    saved = torch.cuda.get_rng_state_all()
    expected = torch.rand(3, device="cuda:0")  # what GPU 0 draws right after the save
    torch.cuda.manual_seed_all(123)
    with pytest.warns(CheckpointWarning, match=f"{visible + 1} CUDA generator states, {visible} GPU"):
        assert restore_cuda_rng_states([*saved, saved[0].clone()]) == visible
    assert torch.equal(torch.rand(3, device="cuda:0"), expected)
