"""An intended failure reads as intended: a real two-rank torchrun job whose rank 1 raises gives a
short summary (torchrun's root cause, each rank's last exception) and a folded full log."""
from __future__ import annotations

import sys

import pytest

from course_utils.launch import FoldedLog, LaunchError, failure_summary, launch, torchrun_command

SCRIPT = '''
import os, sys
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record


@record
def main():
    dist.init_process_group("gloo")
    if dist.get_rank() == 1:
        raise RuntimeError("planned failure on rank 1")
    dist.barrier()


main()
'''


@pytest.mark.skipif(sys.platform == "win32", reason="the course's torchrun tests run on Linux and macOS")
def test_a_failing_rank_is_summarised_and_the_log_folded(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text(SCRIPT)
    cmd = torchrun_command(str(script), nproc_per_node=2, module=False)
    with pytest.raises(LaunchError) as caught:
        launch(cmd, timeout=120, echo=False)
    lines = failure_summary(caught.value.result)
    assert lines[0].startswith("root cause (torchrun's report): rank 1"), lines
    assert "rank 1 ended with: RuntimeError: planned failure on rank 1" in lines
    assert len(lines) <= 4
    log = caught.value.result.output.splitlines()
    folded = FoldedLog(log, "full log", head=2, tail=2)
    text = repr(folded)
    assert f"({len(log)} lines; {len(log) - 4} left out here)" in text and len(text.splitlines()) == 6
    html = folded._repr_html_()
    assert html.startswith("<details>") and "planned failure on rank 1" in html


def test_a_short_log_is_shown_whole():
    assert repr(FoldedLog(["a", "b"], "log")) == "log (2 lines):\na\nb"
