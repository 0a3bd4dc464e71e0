import logging
import os
import shutil
import subprocess
import sys
import warnings

import pytest
import torch

from course_utils import profiling


def test_cpp_compiler_follows_cxx(monkeypatch):
    monkeypatch.setenv("CXX", "no-such-compiler-xyz")
    assert profiling.cpp_compiler() is None
    if shutil.which("g++") and sys.platform.startswith("linux"):
        monkeypatch.delenv("CXX")
        assert profiling.cpp_compiler() == shutil.which("g++")


def test_fresh_compile_cache_is_new_and_removable(tmp_path, monkeypatch):
    monkeypatch.delenv(profiling.INDUCTOR_CACHE_ENV, raising=False)
    first = profiling.use_fresh_compile_cache(tmp_path / "cache")
    second = profiling.use_fresh_compile_cache(tmp_path / "cache")
    assert first != second and first.is_dir() and second.is_dir()
    assert first.parent == tmp_path / "cache" and not any(second.iterdir())
    assert os.environ[profiling.INDUCTOR_CACHE_ENV] == str(second)
    profiling.remove_compile_cache(first)
    profiling.remove_compile_cache(second)
    assert not first.exists() and not second.exists()


def test_quiet_native_stderr_captures_fd2_and_restores_it():
    code = (
        "import os\n"
        "from course_utils.profiling import quiet_native_stderr\n"
        "with quiet_native_stderr() as c:\n"
        "    os.write(2, b'native noise\\n')\n"
        "assert c.stderr == 'native noise\\n', repr(c.stderr)\n"
        "os.write(2, b'after\\n')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stderr == b"after\n"


def test_quiet_compile_records_warnings_and_restores_levels():
    dynamo = logging.getLogger("torch._dynamo")
    before = dynamo.level
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # anything that escaped would raise here
        with profiling.quiet_compile() as c:
            assert dynamo.level == logging.ERROR
            warnings.warn("compile noise", UserWarning)
    assert c.warnings == ["UserWarning: compile noise"]
    assert dynamo.level == before


@pytest.mark.parametrize(
    "intervals, expected",
    [
        ([], 0.0),
        ([(0, 10)], 1.0),
        ([(0, 2), (8, 10)], 0.4),  # a 6-unit gap in a 10-unit span
        ([(0, 6), (4, 10)], 1.0),  # overlapping (two streams) counts once
        ([(0, 2), (1, 3), (7, 10)], 0.6),
        ([(5, 5), (0, 4)], 1.0),  # empty intervals are ignored
    ],
)
def test_busy_fraction(intervals, expected):
    assert profiling.busy_fraction(intervals) == pytest.approx(expected)


def test_busy_fraction_on_a_real_profile():
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    x = torch.randn(64, 64)
    with profiling.quiet_native_stderr(), profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            (x @ x).sum().item()
    spans = [(e.time_range.start, e.time_range.end) for e in prof.events() if e.device_type == DeviceType.CPU]
    assert spans and 0.0 < profiling.busy_fraction(spans) <= 1.0


def test_fresh_inductor_caches_use_a_temporary_folder_under_root(tmp_path, monkeypatch):
    monkeypatch.setenv(profiling.INDUCTOR_CACHE_ENV, str(tmp_path / "outer"))
    with profiling.fresh_inductor_caches(tmp_path / "root"):
        inner = os.environ[profiling.INDUCTOR_CACHE_ENV]
        assert os.path.dirname(inner) == str(tmp_path / "root") and os.path.isdir(inner)
    assert os.environ[profiling.INDUCTOR_CACHE_ENV] == str(tmp_path / "outer")
    assert not os.path.exists(inner)
