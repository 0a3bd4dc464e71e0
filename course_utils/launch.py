"""Launching ``torchrun`` jobs from a notebook: a real subprocess, its output streamed into the cell,
a timeout, a loud error on failure, and no process left behind, even when the kernel itself dies.

Why not ``!torchrun ...``: a shell escape cannot time out, ignores the return code, and an
interrupted cell can leave the workers running. Why not ``mp.spawn`` on a function defined in a
cell: spawned workers import ``__main__`` afresh and cannot find it (notebook 09 shows this).

Typical use (notebook 09)::

    cmd = torchrun_command("course_utils.ddp_train", ["--out", str(out)], nproc_per_node=2)
    result = launch(cmd, timeout=120)        # prints the workers' lines as they arrive

Cleanup, in two layers:

- The launcher (this process) keeps a list of all the job's descendants while it runs; on timeout,
  failure, ``KeyboardInterrupt`` (an interrupted kernel) or interpreter exit it sends SIGTERM to
  every group and process on it, then SIGKILL to what is left.
- A kernel killed with SIGKILL (restarted while busy, or killed by the OOM killer) runs none of
  that. So on POSIX the command does not run directly: a small *guard* process (``_GUARD`` below)
  starts it and watches the launcher. On Linux the guard asks the kernel for ``PR_SET_PDEATHSIG``
  (a signal the moment its parent dies) and becomes a *child subreaper* (``PR_SET_CHILD_SUBREAPER``:
  workers orphaned by a dead torchrun are re-parented to the guard instead of to init, so it still
  finds them); elsewhere it polls its parent's pid. When the launcher dies, or the command ends, the
  guard ends every process left below it: SIGTERM, a short grace, SIGKILL. torchrun itself also gets
  ``PR_SET_PDEATHSIG`` = SIGTERM, on which it stops its workers, should the guard be killed.
"""
from __future__ import annotations

import atexit
import ipaddress
import os
import queue
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterable, Mapping, Sequence

import psutil

REPO = Path(__file__).resolve().parents[1]
LOOPBACK = "127.0.0.1"
IS_WINDOWS = os.name == "nt"
GUARD_GRACE_S = 2.0  # seconds the guard waits after SIGTERM before it sends SIGKILL


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




def free_port(host: str = LOOPBACK) -> int:
    """A TCP port that is free on ``host`` right now (the OS picks it). Another program may take it
    before it is used, so single-node jobs do not need it (``--standalone`` lets the OS pick and keeps
    the socket); notebook 09 uses it only for the rendezvous endpoint of its two-node demo."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def usable_cpus() -> int:
    """CPUs this process may run on (respects affinity masks and containers where visible)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.x.x.x, ::1). Names are not looked up:
    a job between machines must name a host the other machines can reach."""
    host = host.strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_gpus(nproc_per_node: int, backend: str | None) -> None:
    """Refuse, before anything starts, an NCCL job with more ranks on this node than visible GPUs:
    NCCL needs one GPU per rank, and otherwise every extra rank fails on its own with
    "invalid device ordinal". (The count is what this process sees, through CUDA_VISIBLE_DEVICES.)"""
    if backend != "nccl":
        return
    import torch  # only here: the launcher itself does not need torch

    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if nproc_per_node > visible:
        raise ValueError(
            f"nproc_per_node={nproc_per_node} with backend 'nccl' needs {nproc_per_node} GPUs on this node, "
            f"one per rank, but {visible} {'is' if visible == 1 else 'are'} visible "
            f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')}): "
            f"use nproc_per_node <= {visible}, or backend 'gloo' on the CPU")


def torchrun_command(
    target: str,
    args: Sequence[str] = (),
    *,
    nproc_per_node: int = 1,
    nnodes: int = 1,
    rdzv_endpoint: str | None = None,
    rdzv_id: str = "course",
    module: bool = True,
    monitor_interval: float = 0.2,
    backend: str | None = None,
    extra: Sequence[str] = (),
) -> list[str]:
    """The argument list for ``python -m torch.distributed.run`` (the module behind ``torchrun``).

    One node: ``--standalone`` (torchrun binds a free port itself and keeps it, no race with other
    jobs) and ``--local-addr=127.0.0.1``. Several nodes: ``--rdzv-backend=c10d
    --rdzv-endpoint=HOST:PORT``; every node runs the same command, and ranks are assigned in the
    order the nodes join. ``--local-addr=127.0.0.1`` is added only when HOST is loopback (nodes
    simulated on this machine): on real hosts rank 0 would advertise an address nobody else can
    reach, and the job would hang. On real hosts with several network interfaces choose the one
    the nodes share with ``NCCL_SOCKET_IFNAME`` (NCCL; e.g. ``=eth0``, or ``^docker,lo`` to exclude;
    https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html) and ``GLOO_SOCKET_IFNAME``
    (gloo; e.g. ``eth0``; https://pytorch.org/docs/stable/distributed.html#choosing-the-network-interface-to-use).

    ``backend="nccl"`` checks that this node has a GPU per rank (:func:`check_gpus`). ``target`` is a
    module name (``module=True``, run as ``python -m target``) or a script path; ``extra`` holds more
    torchrun options (e.g. ``["--max-restarts=1"]``). Used by: notebook 09.
    """
    check_gpus(nproc_per_node, backend)
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc_per_node}",
           f"--monitor-interval={monitor_interval}"]
    if nnodes == 1 and rdzv_endpoint is None:
        cmd += ["--standalone", f"--local-addr={LOOPBACK}"]
    else:
        if rdzv_endpoint is None:
            raise ValueError("several nodes need rdzv_endpoint='HOST:PORT' (the same on every node)")
        cmd += [f"--nnodes={nnodes}", "--rdzv-backend=c10d", f"--rdzv-endpoint={rdzv_endpoint}",
                f"--rdzv-id={rdzv_id}"]
        if is_loopback(rdzv_endpoint.rsplit(":", 1)[0]):
            cmd.append(f"--local-addr={LOOPBACK}")
    cmd += list(extra) + (["-m", target] if module else [target]) + [str(a) for a in args]
    return cmd


def format_command(cmd: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """The command as a shell line, with this interpreter shown as ``python`` and ``env`` (if any)
    as ``NAME=value`` assignments in front."""
    assignments = [f"{k}={shlex.quote(v)}" for k, v in (env or {}).items()]
    return " ".join(assignments + [shlex.join(["python" if c == sys.executable else c for c in cmd])])


def child_environment(nproc_per_node: int, extra: dict[str, str] | None = None, *,
                      loopback: bool = True) -> dict[str, str]:
    """The environment for a job started from this machine.

    - ``PYTHONUNBUFFERED=1``: workers' lines arrive as they are printed, not in blocks;
    - ``OMP_NUM_THREADS``: the machine's cores shared out between the local processes
      (torchrun would otherwise set 1 and print a warning);
    - ``OMP_WAIT_POLICY=PASSIVE``: idle OpenMP threads sleep instead of spinning, so processes that
      share cores (with each other or with other programs) do not burn each other's time;
    - ``PYTHONPATH`` starts with the repository, so ``-m course_utils....`` imports in the workers;
    - ``GLOO_SOCKET_IFNAME``: the loopback interface (``lo``, ``lo0`` on macOS), only for jobs that
      talk over 127.0.0.1 (``loopback=True``, every job of notebook 09): without it gloo uses the
      interface the host name resolves to, which may be unreachable. A job between machines gets no
      such setting (it would hang): set ``GLOO_SOCKET_IFNAME`` / ``NCCL_SOCKET_IFNAME`` yourself to
      the interface the machines share when they have several (see :func:`torchrun_command`);
    - ``USE_LIBUV=0`` on Windows, whose PyTorch builds lack libuv for the TCP store.
    """
    env = dict(os.environ)
    env.pop("COURSE_LEDGER", None)  # workers must not rewrite the notebook's ledger
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("OMP_NUM_THREADS", str(max(1, usable_cpus() // max(1, nproc_per_node))))
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    if loopback and "GLOO_SOCKET_IFNAME" not in env and sys.platform.startswith("linux"):
        env["GLOO_SOCKET_IFNAME"] = "lo"
    elif loopback and "GLOO_SOCKET_IFNAME" not in env and sys.platform == "darwin":
        env["GLOO_SOCKET_IFNAME"] = "lo0"
    if IS_WINDOWS:
        env.setdefault("USE_LIBUV", "0")
    env.update(extra or {})
    return env


def launch(cmd: Sequence[str], *, timeout: float = 120, env: dict[str, str] | None = None,
           echo: bool = True, prefix: str = "", cwd: str | Path | None = None) -> LaunchResult:
    """Run one command, print its output line by line as it arrives, and return a :class:`LaunchResult`.

    Raises :class:`LaunchTimeout` after ``timeout`` seconds and :class:`LaunchError` on a non-zero
    exit code, each with the tail of the output; every process of the job is gone by then.
    Used by: notebook 09.
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
                # timeouts, so give them 5 s to report and stop them.
                failed_at = failed_at or time.monotonic()
                if time.monotonic() - failed_at > 5:
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


def root_cause(output: str) -> str | None:
    """The failing rank and its exception from torchrun's failure report, e.g.
    ``rank 1: RuntimeError: simulated failure``; None if the output holds no such report."""
    lines = output.splitlines()
    start = max((i for i, line in enumerate(lines) if "Root Cause" in line), default=None)
    if start is None:
        return None
    rank, message = None, None
    for line in lines[start + 1:]:
        text = line.strip()
        if text.startswith("=" * 10):
            break
        if text.startswith("rank ") and ":" in text and rank is None:
            rank = "rank " + text.split(":", 1)[1].strip()
        elif text.startswith("traceback") and ":" in text:
            value = text.split(":", 1)[1].strip()  # e.g. "Signal 9 (SIGKILL) received by PID 123"
            message = None if value.startswith("Traceback") else value
        elif text and not text.startswith(("File ", "^", "traceback", "time", "host", "exitcode", "error_file", "[")):
            message = text  # the last such line of the traceback is the exception
    return f"{rank or 'a rank'}: {message}" if message else rank


def _nproc_of(cmd: Sequence[str]) -> int:
    """The ``--nproc-per-node`` of a torchrun command (1 if absent or not a number)."""
    for arg in cmd:
        if arg.startswith(("--nproc-per-node=", "--nproc_per_node=")):
            value = arg.split("=", 1)[1]
            return int(value) if value.isdigit() else 1
    return 1


def _loopback_job(cmd: Sequence[str]) -> bool:
    """False if the command names a rendezvous or master host that is not loopback."""
    for arg in cmd:
        for option in ("--rdzv-endpoint=", "--rdzv_endpoint=", "--master-addr=", "--master_addr="):
            if arg.startswith(option) and not is_loopback(arg[len(option):].rsplit(":", 1)[0]):
                return False
    return True


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
