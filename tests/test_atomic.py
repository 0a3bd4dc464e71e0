"""course_utils.atomic: the one atomic-write helper of the checkpoints and the ledger, on real files
and in real processes (a size limit for "disk full", two processes writing one ledger)."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from course_utils import ledger
from course_utils.atomic import atomic_write, atomic_write_bytes, current_umask, new_file_mode

REPO = Path(__file__).resolve().parents[1]
posix_only = pytest.mark.skipif(os.name != "posix", reason="umask, RLIMIT_FSIZE and SIGXFSZ are POSIX")


def with_umask(mask: int, action):
    """Run ``action()`` under ``mask``, then put the previous umask back."""
    previous = os.umask(mask)
    try:
        return action()
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_write_replaces_the_file_and_leaves_nothing_else(tmp_path):
    target = tmp_path / "sub" / "a.bin"
    atomic_write_bytes(target, b"old")
    atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"new"
    assert [p.name for p in target.parent.iterdir()] == ["a.bin"]


def test_a_failing_writer_keeps_the_old_file_and_removes_its_temporary_file(tmp_path):
    target = atomic_write_bytes(tmp_path / "a.bin", b"old")

    def half_then_fail(f):
        f.write(b"half of the new conten")
        raise ValueError("the writer failed")

    with pytest.raises(ValueError, match="the writer failed"):
        atomic_write(target, half_then_fail)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.bin"]


@posix_only
def test_current_umask_is_the_process_umask():
    for mask in (0o022, 0o002, 0o077):
        assert with_umask(mask, current_umask) == mask
        assert with_umask(mask, new_file_mode) == 0o666 & ~mask


@posix_only
@pytest.mark.parametrize(("mask", "expected"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_files_get_the_mode_the_umask_gives(tmp_path, monkeypatch, mask, expected):
    """mkstemp creates 0600; a shared cluster's group must be able to read what the umask allows."""
    plain = with_umask(mask, lambda: atomic_write_bytes(tmp_path / "a.bin", b"x"))
    monkeypatch.setenv("COURSE_LEDGER", str(tmp_path / "ledger.json"))
    with_umask(mask, lambda: ledger.record("umask.test", 1.0))
    ledger.clear()
    assert (mode(plain), mode(tmp_path / "ledger.json")) == (expected, expected)


# The writer processes below import course_utils.atomic and course_utils.ledger, the real modules, but
# not course_utils/__init__.py: that file imports torch for the lessons (2-5 s of CPU per process on a
# loaded 2-core CI machine), and neither module uses it. A package object with the real __path__
# stands in for the package's __init__.
BARE_PACKAGE = f"""
import sys, types
_package = types.ModuleType("course_utils")
_package.__path__ = [{str(REPO / "course_utils")!r}]
sys.modules["course_utils"] = _package
"""

DISK_FULL_WRITER = BARE_PACKAGE + """
import json, resource, signal, sys
from course_utils.atomic import atomic_write_bytes
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the kernel kills us instead of failing the write
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))  # no file of this process grows past 4 KiB
try:
    atomic_write_bytes(sys.argv[1], b"x" * 100_000)
except OSError as exc:
    print(json.dumps({"type": type(exc).__name__, "errno": exc.errno, "message": str(exc)}))
    sys.exit(3)
"""


@posix_only
def test_disk_full_gives_a_clear_error_and_keeps_the_old_file(tmp_path):
    """RLIMIT_FSIZE stands in for a full disk: the write fails part-way with EFBIG, as with ENOSPC."""
    target = atomic_write_bytes(tmp_path / "results.json", b'{"old": 1}')
    proc = subprocess.run([sys.executable, "-c", DISK_FULL_WRITER, str(target)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    error = json.loads(proc.stdout)
    assert error["type"] == "OSError" and error["errno"] == 27  # EFBIG, "File too large"
    assert str(target) in error["message"] and "was not changed" in error["message"]
    assert target.read_bytes() == b'{"old": 1}'
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


LEDGER_WRITER = BARE_PACKAGE + """
import sys, time
from pathlib import Path
from course_utils import ledger
name, folder, n = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
(folder / f"ready_{name}").touch()
while not (folder / "go").exists():  # start together with the other writer
    time.sleep(0.002)
for i in range(n):
    ledger.record(f"{name}.k{i}", i)
"""


def _start_writers(folder: Path, ledger_file: Path, n: int) -> list[subprocess.Popen]:
    """Two processes that record ``n`` values each into the same ledger file, released together."""
    env = {**os.environ, "COURSE_LEDGER": str(ledger_file)}
    procs = [subprocess.Popen([sys.executable, "-c", LEDGER_WRITER, name, str(folder), str(n)], cwd=REPO, env=env,
                              stderr=subprocess.PIPE, text=True) for name in ("alpha", "beta")]
    deadline = time.monotonic() + 120
    while not all((folder / f"ready_{name}").exists() for name in ("alpha", "beta")):
        assert all(p.poll() is None for p in procs), [p.stderr.read() for p in procs if p.poll() is not None]
        assert time.monotonic() < deadline, "the writers never got ready"
        time.sleep(0.01)
    (folder / "go").touch()
    return procs


def test_two_processes_writing_one_ledger_never_leave_broken_json(tmp_path):
    """With a fixed ``ledger.json.tmp`` name both writers wrote into one temporary file and renamed
    it under each other; with unique names every reader sees one writer's complete file."""
    path, n = tmp_path / "ledger.json", 150
    procs = _start_writers(tmp_path, path, n)
    reads = 0
    while any(p.poll() is None for p in procs):
        try:
            text = path.read_text()
        except FileNotFoundError:  # before the first record
            continue
        json.loads(text)  # raises on a half-written or interleaved file
        reads += 1
    assert [p.wait() for p in procs] == [0, 0], [p.stderr.read() for p in procs]
    final = json.loads(path.read_text())
    assert len({key.split(".")[0] for key in final}) == 1 and len(final) == n  # one writer's complete file
    assert reads > 0
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))
