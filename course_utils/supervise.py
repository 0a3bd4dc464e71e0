"""Process supervision for launched jobs: no process is left behind, even when the kernel dies.

Two layers:

- The launcher (this process) keeps a list of all the job's descendants while it runs; on timeout,
  failure, ``KeyboardInterrupt`` (an interrupted kernel) or interpreter exit it sends SIGTERM to
  every group and process on it, then SIGKILL to what is left (:class:`_Job`).
- A kernel killed with SIGKILL (restarted while busy, or killed by the OOM killer) runs none of
  that. So on POSIX the command does not run directly: a small *guard* process (``_GUARD`` below)
  starts it and watches the launcher. On Linux the guard asks the kernel for ``PR_SET_PDEATHSIG``
  (a signal the moment its parent dies) and becomes a *child subreaper* (``PR_SET_CHILD_SUBREAPER``:
  workers orphaned by a dead torchrun are re-parented to the guard instead of to init, so it still
  finds them); elsewhere it polls its parent's pid. When the launcher dies, or the command ends, the
  guard ends every process left below it: SIGTERM, a short grace, SIGKILL. torchrun itself also gets
  ``PR_SET_PDEATHSIG`` = SIGTERM, on which it stops its workers, should the guard be killed.

Processes are found and signalled with psutil (a dependency of the course).
"""
from __future__ import annotations

import atexit
import os
import queue
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Iterable

import psutil

IS_WINDOWS = os.name == "nt"
GUARD_GRACE_S = 2.0  # seconds the guard waits after SIGTERM before it sends SIGKILL


def _pump(i: int, stream: IO[str], lines_q: queue.Queue) -> None:
    """Move lines from a pipe into the queue; ``None`` marks the end of the stream."""
    try:
        for line in stream:
            lines_q.put((i, line.rstrip("\n")))
    except (ValueError, OSError):  # the pipe broke while stopping
        pass
    finally:
        lines_q.put((i, None))
        stream.close()


# The guard: ``python -c _GUARD LAUNCHER_PID GRACE_S COMMAND...``. It runs the command, and when the
# launcher dies (PR_SET_PDEATHSIG, or its pid no longer being our parent), when it is told to stop
# (SIGTERM) or when the command ends, it ends every process still below it. It imports only the
# standard library and psutil, so it starts in a fraction of a second.
_GUARD = r"""
import ctypes, os, signal, subprocess, sys, time
import psutil

launcher, grace, cmd = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
linux = sys.platform.startswith("linux")
libc = ctypes.CDLL(None, use_errno=True) if linux else None
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
if linux:
    libc.prctl(36, 1, 0, 0, 0)               # PR_SET_CHILD_SUBREAPER: the job's orphans come to us
    libc.prctl(1, signal.SIGTERM, 0, 0, 0)   # PR_SET_PDEATHSIG: SIGTERM when the launcher dies


def die_with_guard():  # runs in the child before exec: torchrun stops its workers on SIGTERM
    libc.prctl(1, signal.SIGTERM, 0, 0, 0)


job = None
if os.getppid() == launcher and not stop:  # else the launcher died before we could start
    job = subprocess.Popen(cmd, preexec_fn=die_with_guard if linux else None)
while job is not None and job.poll() is None and not stop and os.getppid() == launcher:
    time.sleep(0.1)


def below():  # every live process under us but the command itself (Popen must reap that one)
    try:
        return [p for p in psutil.Process().children(recursive=True) if job is None or p.pid != job.pid]
    except psutil.Error:
        return []


for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0), (signal.SIGKILL, 5.0)):
    procs, running = below(), job is not None and job.poll() is None
    if not procs and not running:
        break
    for p in procs:
        try:
            p.send_signal(sig)
        except psutil.Error:
            pass
    if running:
        job.send_signal(sig)
    end = time.monotonic() + wait
    psutil.wait_procs(procs, timeout=wait)  # also reaps those that are our children
    try:
        job is None or job.wait(timeout=max(0.0, end - time.monotonic()))
    except subprocess.TimeoutExpired:
        pass
code = job.wait() if job is not None else 1
if code < 0:  # end the way the command ended, so the launcher sees the same signal
    if -code != signal.SIGKILL:
        signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
    time.sleep(1)
sys.exit(code)
"""


_LIVE: set["_Job"] = set()


class _Job:
    """One launched command plus every descendant process seen while it ran."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.tracked: dict[int, psutil.Process] = {}  # pid -> handle that can tell if the pid was reused
        self.seen: set[int] = {proc.pid}
        self._last_watch = 0.0

    @classmethod
    def start(cls, cmd: list[str], env: dict[str, str], cwd: str | Path) -> "_Job":
        """Start ``cmd`` in a session of its own, under the guard on POSIX. The guard's death signal
        is bound to the thread that starts it (Linux sends it when that thread ends), which is why
        :func:`launch` starts jobs in the calling thread and blocks until they end."""
        if IS_WINDOWS:  # no guard: the tree is ended with taskkill on every exit path we see
            argv, kwargs = cmd, {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
        else:
            argv = [sys.executable, "-c", _GUARD, str(os.getpid()), str(GUARD_GRACE_S), *cmd]
            kwargs = {"start_new_session": True}
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                text=True, errors="replace", bufsize=1, env=env, cwd=str(cwd), **kwargs)
        job = cls(proc)
        _LIVE.add(job)
        return job

    def watch(self) -> None:
        """Note the job's current descendants (at most every 0.2 s), so they can be ended even if
        they leave the tree (a worker re-parented after its torchrun died)."""
        now = time.monotonic()
        if now - self._last_watch < 0.2 or self.proc.poll() is not None:
            return
        self._last_watch = now
        for pid, handle in _descendants(self.proc.pid).items():
            self.tracked.setdefault(pid, handle)
            self.seen.add(pid)

    def kill(self, grace: float = 3.0) -> None:
        """SIGTERM the job's group and every tracked process (and its group), wait up to ``grace``
        seconds, then SIGKILL whatever is still alive. Safe to call twice."""
        self.watch()
        if self.proc.poll() is None:
            self.tracked.update(_descendants(self.proc.pid))
            self.seen.update(self.tracked)
        alive = [pid for pid, h in self.tracked.items() if _alive(h)]
        if self.proc.poll() is None or alive:
            self._signal_all(signal.SIGTERM, alive)
            end = time.monotonic() + grace
            while time.monotonic() < end:
                alive = [pid for pid, h in self.tracked.items() if _alive(h)]
                if self.proc.poll() is not None and not alive:
                    break
                time.sleep(0.05)
            alive = [pid for pid, h in self.tracked.items() if _alive(h)]
            if self.proc.poll() is None or alive:
                self._signal_all(signal.SIGKILL if not IS_WINDOWS else signal.SIGTERM, alive)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - a process stuck in the kernel
            pass
        _LIVE.discard(self)  # the output thread closes the pipe when it reaches its end

    def _signal_all(self, sig: int, pids: Iterable[int]) -> None:
        if IS_WINDOWS:  # no process groups to signal: end the whole tree
            subprocess.run(["taskkill", "/F", "/T", "/PID", str(self.proc.pid)], capture_output=True)
        else:
            _send(lambda: os.killpg(self.proc.pid, sig))
        for pid in pids:
            handle = self.tracked[pid]
            if not _alive(handle):
                continue
            if not IS_WINDOWS:  # torchrun starts each worker in its own session: signal its group too
                _send(lambda: os.killpg(pid, sig) if os.getpgid(pid) == pid else None)
            _send(lambda: handle.send_signal(sig))


def _send(action) -> None:
    try:
        action()
    except (ProcessLookupError, PermissionError, OSError, psutil.Error):
        pass


def _descendants(pid: int) -> dict[int, psutil.Process]:
    """All descendants of ``pid``: pid -> its psutil handle. Used by: tests/conftest.py."""
    try:
        return {p.pid: p for p in psutil.Process(pid).children(recursive=True)}
    except psutil.Error:
        return {}


def _alive(handle: psutil.Process) -> bool:
    """Is the process we tracked still running (and not a new process that reused its pid)?"""
    try:
        return handle.is_running() and handle.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@atexit.register
def _kill_all_live() -> None:
    """At interpreter exit (e.g. a kernel shut down while a job ran), end every job still running."""
    for job in list(_LIVE):
        job.kill(grace=1.0)


def process_alive(pid: int) -> bool:
    """True if a process with this pid runs (zombies count as gone). Used by: tests/conftest.py,
    tests/test_launch.py, notebook 09."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
