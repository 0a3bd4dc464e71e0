"""Launching ``torchrun`` jobs from a notebook: a real subprocess, its output streamed into the cell,
a timeout, a loud error on failure, and no process left behind, even when the kernel itself dies.

Why not ``!torchrun ...``: a shell escape cannot time out, ignores the return code, and an
interrupted cell can leave the workers running. Why not ``mp.spawn`` on a function defined in a
cell: spawned workers import ``__main__`` afresh and cannot find it (notebook 09 shows this).

Typical use (notebook 09)::

    cmd = torchrun_command("ddp_train.py", ["--out", str(out)], nproc_per_node=2, module=False)
    result = launch(cmd, timeout=120)        # prints the workers' lines as they arrive

Three modules, one job each: :mod:`course_utils.torchrun` builds the command and the workers'
environment and reads torchrun's failure report; :mod:`course_utils.supervise` starts the command
under a guard process and ends every process of it on any exit; this module runs the loop between
them (output, timeout, errors). Everything is importable from here. For a failure that is the point
of a demo, :func:`failure_summary` gives the few lines that matter and :func:`show_folded` folds the
full log below them.
"""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from course_utils.i18n import t
from course_utils.supervise import (GUARD_GRACE_S, _alive, _descendants, _Job, _kill_all_live, _pump,  # noqa: F401
                                    process_alive)
from course_utils.torchrun import (IS_WINDOWS, LOOPBACK, REPO, _loopback_job, _nproc_of, check_gpus,  # noqa: F401
                                   child_environment, format_command, free_port, is_loopback, root_cause,
                                   torchrun_command, usable_cpus)


# When one of several commands (one "node") fails, the others get this many seconds to report before
# they are stopped (they would otherwise wait for the failed node until their own timeouts). A module
# setting so that tests/test_launch.py can check the same path in less time.
NODE_FAILURE_GRACE_S = 5.0


class LaunchError(RuntimeError):
    """A launched job exited with a non-zero code. ``result`` holds its output; the message ends with
    the last lines of it."""

    def __init__(self, message: str, result: "LaunchResult") -> None:
        super().__init__(message)
        self.result = result


class LaunchTimeout(LaunchError):
    """A launched job ran past its timeout and was killed (with all its processes)."""


@dataclass
class LaunchResult:
    """What one command did: its return code(s), wall time and output lines."""

    commands: list[list[str]]
    returncodes: list[int | None]
    seconds: float
    lines: list[list[str]] = field(repr=False)  # per command
    stamps: list[list[float]] = field(repr=False)  # seconds from the start to each line's arrival
    pids: set[int] = field(default_factory=set, repr=False)  # every process seen in the job

    @property
    def returncode(self) -> int | None:
        """The first non-zero return code, else 0 (``None`` if a command never ended)."""
        bad = [rc for rc in self.returncodes if rc != 0]
        return bad[0] if bad else 0

    @property
    def output(self) -> str:
        return "\n".join(line for lines in self.lines for line in lines)

    def first(self, text: str) -> float | None:
        """Seconds from the start until the first line containing ``text`` arrived (None if none did)."""
        hits = [t for ls, ts in zip(self.lines, self.stamps) for line, t in zip(ls, ts) if text in line]
        return min(hits) if hits else None

    def tail(self, n: int = 25) -> str:
        """The last ``n`` lines of output (all commands, in order)."""
        every = [line for lines in self.lines for line in lines]
        return "\n".join(every[-n:])


def launch(cmd: Sequence[str], *, timeout: float = 120, env: dict[str, str] | None = None,
           echo: bool = True, prefix: str = "", cwd: str | Path | None = None) -> LaunchResult:
    """Run one command, print its output line by line as it arrives, and return a :class:`LaunchResult`.

    Raises :class:`LaunchTimeout` after ``timeout`` seconds and :class:`LaunchError` on a non-zero
    exit code, each with the tail of the output; every process of the job is gone by then.
    Used by: notebooks 09 and 11.
    """
    return launch_many([cmd], timeout=timeout, env=env, echo=echo, prefixes=[prefix], cwd=cwd)


def launch_many(cmds: Sequence[Sequence[str]], *, timeout: float = 120, env: dict[str, str] | None = None,
                echo: bool = True, prefixes: Sequence[str] | None = None,
                cwd: str | Path | None = None) -> LaunchResult:
    """Run several commands at the same time (e.g. two torchrun "nodes"), interleaving their
    output lines, each line led by its prefix. Fails as :func:`launch` does if any command fails.
    Used by: notebook 09.
    """
    cmds = [list(c) for c in cmds]
    prefixes = list(prefixes) if prefixes is not None else [""] * len(cmds)
    if env is None:
        env = child_environment(sum(_nproc_of(c) for c in cmds), loopback=all(map(_loopback_job, cmds)))
    jobs: list[_Job] = []
    pumps: list[threading.Thread] = []
    lines: list[list[str]] = [[] for _ in cmds]
    stamps: list[list[float]] = [[] for _ in cmds]
    lines_q: queue.Queue = queue.Queue()
    t0 = time.monotonic()
    deadline = t0 + timeout
    timed_out = False
    try:
        for i, cmd in enumerate(cmds):
            jobs.append(_Job.start(cmd, env, cwd or REPO))
            pumps.append(threading.Thread(target=_pump, args=(i, jobs[-1].proc.stdout, lines_q), daemon=True))
            pumps[-1].start()
        open_streams = len(jobs)
        exited_at = failed_at = None
        while True:
            for job in jobs:
                job.watch()
            try:
                i, line = lines_q.get(timeout=0.2)
                if line is None:
                    open_streams -= 1
                else:
                    lines[i].append(line)
                    stamps[i].append(time.monotonic() - t0)
                    if echo:
                        print(prefixes[i] + line, flush=True)
            except queue.Empty:
                pass
            codes = [job.proc.poll() for job in jobs]
            if all(code is not None for code in codes):
                exited_at = exited_at or time.monotonic()
                # Done when every stream is closed; an orphan still holding a pipe gets 2 s.
                if open_streams == 0 or time.monotonic() - exited_at > 2:
                    break
            elif any(code not in (None, 0) for code in codes):
                # One command (one "node") failed: the others would wait for it until their own
                # timeouts, so give them NODE_FAILURE_GRACE_S (5 s) to report and stop them.
                failed_at = failed_at or time.monotonic()
                if time.monotonic() - failed_at > NODE_FAILURE_GRACE_S:
                    break
            if time.monotonic() > deadline:
                timed_out = True
                break
    finally:  # also on KeyboardInterrupt: never leave the job running
        for job in jobs:
            job.kill()
    for pump in pumps:  # every process is gone, so the pipes reach their end quickly
        pump.join(timeout=2)
    while not lines_q.empty():  # lines that arrived while we were stopping
        i, line = lines_q.get_nowait()
        if line is not None:
            lines[i].append(line)
            stamps[i].append(time.monotonic() - t0)
            if echo:
                print(prefixes[i] + line, flush=True)
    result = LaunchResult(cmds, [j.proc.returncode for j in jobs], time.monotonic() - t0, lines, stamps,
                          set().union(*(j.seen for j in jobs)))
    if timed_out:
        raise LaunchTimeout(f"job killed after its {timeout:g} s timeout; last output:\n{result.tail()}", result)
    if result.returncode != 0:
        cause = root_cause(result.output)
        raise LaunchError(f"job failed with exit code {result.returncode} after {result.seconds:.1f} s"
                          + (f"; root cause: {cause}" if cause else "") + f"\nlast output:\n{result.tail()}", result)
    return result


# --- showing an intended failure: a short summary first, the full log folded --------------------

def failure_summary(result: LaunchResult) -> list[str]:
    """Short lines that say what failed: torchrun's root cause, then the last exception line each rank
    printed (``[rank1]: RuntimeError: ...``), in rank order. Empty if the output holds neither.
    Used by: notebook 09's crash demo."""
    import re

    lines = []
    cause = root_cause(result.output)
    if cause:
        lines.append(f"root cause (torchrun's report): {cause}")
    last: dict[int, str] = {}
    pattern = re.compile(r"^\[rank(\d+)\]:\s+(\w+(?:\.\w+)*(?:Error|Exception|Interrupt)\b.*)$")
    for line in result.output.splitlines():
        m = pattern.match(line.strip())
        if m:
            last[int(m.group(1))] = m.group(2)
    for rank in sorted(last):
        text = last[rank]
        lines.append(f"rank {rank} ended with: {text if len(text) <= 160 else text[:157] + '...'}")
    return lines


class FoldedLog:
    """A long log shown folded: an HTML ``<details>`` in a notebook (click to open), and as plain text
    its first and last lines with a count of those left out (what nbval and a terminal see)."""

    def __init__(self, lines: Sequence[str], title: str = "full log", head: int = 3, tail: int = 3) -> None:
        self.lines, self.title, self.head, self.tail = list(lines), title, head, tail

    def __repr__(self) -> str:
        n = len(self.lines)
        if n <= self.head + self.tail + 1:
            return "\n".join([t("{title} ({n} lines):", title=self.title, n=n), *self.lines])
        left_out = n - self.head - self.tail
        return "\n".join([t("{title} ({n} lines; {left_out} left out here):", title=self.title, n=n, left_out=left_out),
                          *self.lines[:self.head], t("... {left_out} more lines ...", left_out=left_out), *self.lines[-self.tail:]])

    def _repr_html_(self) -> str:
        import html

        body = html.escape("\n".join(self.lines))
        return (f"<details><summary>{html.escape(t('{title} ({n} lines): click to open', title=self.title, n=len(self.lines)))}</summary>"
                f"<pre style='font-size: 85%; max-height: 30em; overflow: auto'>{body}</pre></details>")


def show_folded(lines: Sequence[str], title: str = "full log", head: int = 3, tail: int = 3) -> FoldedLog:
    """Display a :class:`FoldedLog` now (in a kernel) or print it (plain Python); return it for tests.
    Used by: notebook 09."""
    folded = FoldedLog(lines, title, head, tail)
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        print(repr(folded))
        return folded
    if get_ipython() is None:
        print(repr(folded))
    else:
        display(folded)
    return folded
