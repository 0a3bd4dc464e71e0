"""An intended failure reads as intended: a short summary (torchrun's root cause, each rank's last
exception) and a folded full log.

The same summary of a real two-rank torchrun job whose rank 1 raises is asserted by lesson 09's crash
demo (its cell after the crash checks that rank 1's exception is named), which `make test` runs at
default size (tests/test_standalone.py). What stays here needs no process."""
from __future__ import annotations

from course_utils.launch import FoldedLog, LaunchResult, failure_summary

# The shape of torchrun's report and of the [rankN]: prefixed traceback lines (torch >= 2.4).
REPORT = """\
[rank0]: Traceback (most recent call last):
[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer
[rank1]: Traceback (most recent call last):
[rank1]:   File "fail.py", line 10, in main
[rank1]: ValueError: first
[rank1]: RuntimeError: planned failure on rank 1
Root Cause (first observed failure):
[0]:
  time      : 2026-01-01_00:00:00
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 123)
  error_file: /tmp/x/error.json
  traceback : Traceback (most recent call last):
    File "fail.py", line 10, in main
  RuntimeError: planned failure on rank 1
============================================================
"""


def test_the_summary_names_the_root_cause_and_each_ranks_last_exception():
    result = LaunchResult([["torchrun"]], [1], 1.0, [REPORT.splitlines()], [[0.0] * len(REPORT.splitlines())])
    assert failure_summary(result) == [
        "root cause (torchrun's report): rank 1 (local_rank: 1): RuntimeError: planned failure on rank 1",
        "rank 0 ended with: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer",
        "rank 1 ended with: RuntimeError: planned failure on rank 1",
    ]
    assert failure_summary(LaunchResult([["x"]], [1], 1.0, [["no report"]], [[0.0]])) == []


def test_a_short_log_is_shown_whole():
    assert repr(FoldedLog(["a", "b"], "log")) == "log (2 lines):\na\nb"
