"""Launching ``torchrun`` jobs from a notebook: a real subprocess, its output streamed into the cell,
a timeout, a loud error on failure, and no process left behind.

Why not ``!torchrun ...``: a shell escape cannot time out, ignores the return code, and an
interrupted cell can leave the workers running. Why not ``mp.spawn`` on a function defined in a
cell: spawned workers import ``__main__`` afresh and cannot find it (notebook 09 shows this).

Typical use (notebook 09)::

    cmd = torchrun_command("course_utils.ddp_train", ["--out", str(out)], nproc_per_node=2)
    result = launch(cmd, timeout=120)        # prints the workers' lines as they arrive

Cleanup: the launcher runs in its own session (process group). torchrun in turn starts each worker
in a session of its own, so killing one group is not enough: while the job runs we keep a list of
all its descendants, and on timeout, failure, ``KeyboardInterrupt`` (an interrupted kernel) or
interpreter exit we send SIGTERM to every group and process on it, then SIGKILL to what is left.
"""
from __future__ import annotations

import atexit
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
from typing import IO, Iterable, Sequence

REPO = Path(__file__).resolve().parents[1]
LOOPBACK = "127.0.0.1"
IS_WINDOWS = os.name == "nt"

try:  # psutil ships with ipykernel; a /proc scan is the fallback on Linux
    import psutil
except ImportError:  # pragma: no cover - exercised only where psutil is missing
    psutil = None


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
    """A TCP port that is free on ``host`` right now (the OS picks it). Used by: notebook 09."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def usable_cpus() -> int:
    """CPUs this process may run on (respects affinity masks and containers where visible)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def torchrun_command(
    target: str,
    args: Sequence[str] = (),
    *,
    nproc_per_node: int = 1,
    nnodes: int = 1,
    rdzv_endpoint: str | None = None,
    rdzv_id: str = "course",
    port: int | None = None,
    module: bool = True,
    monitor_interval: float = 0.2,
    extra: Sequence[str] = (),
) -> list[str]:
    """The argument list for ``python -m torch.distributed.run`` (the module behind ``torchrun``).

    One node: a static rendezvous on ``127.0.0.1:port`` (a free port if none is given).
    Several nodes: ``--rdzv-backend=c10d --rdzv-endpoint=HOST:PORT``; every node runs the same
    command, and ranks are assigned in the order the nodes join. ``target`` is a module name
    (``module=True``, run as ``python -m target``) or a script path; ``extra`` holds more torchrun
    options (e.g. ``["--max-restarts=1"]``). Used by: notebook 09.
    """
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc_per_node}",
           f"--monitor-interval={monitor_interval}"]
    if nnodes == 1 and rdzv_endpoint is None:
        cmd += [f"--master-addr={LOOPBACK}", f"--master-port={port or free_port()}"]
    else:
        if rdzv_endpoint is None:
            raise ValueError("several nodes need rdzv_endpoint='HOST:PORT' (the same on every node)")
        cmd += [f"--nnodes={nnodes}", "--rdzv-backend=c10d", f"--rdzv-endpoint={rdzv_endpoint}",
                f"--rdzv-id={rdzv_id}", f"--local-addr={LOOPBACK}"]
    cmd += list(extra) + (["-m", target] if module else [target]) + [str(a) for a in args]
    return cmd


def format_command(cmd: Sequence[str]) -> str:
    """The command as a shell line, with this interpreter shown as ``python``."""
    return shlex.join(["python" if c == sys.executable else c for c in cmd])


def child_environment(nproc_per_node: int, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a job on this machine.

    - ``PYTHONUNBUFFERED=1``: workers' lines arrive as they are printed, not in blocks;
    - ``OMP_NUM_THREADS``: the machine's cores shared out between the local processes
      (torchrun would otherwise set 1 and print a warning);
    - ``OMP_WAIT_POLICY=PASSIVE``: idle OpenMP threads sleep instead of spinning, so processes that
      share cores (with each other or with other programs) do not burn each other's time;
    - ``PYTHONPATH`` starts with the repository, so ``-m course_utils....`` imports in the workers;
    - ``GLOO_SOCKET_IFNAME``: the loopback interface, as every job here talks over 127.0.0.1
      (without it gloo uses the interface the host name resolves to, which may be unreachable);
    - ``USE_LIBUV=0`` on Windows, whose PyTorch builds lack libuv for the TCP store.
    """
    env = dict(os.environ)
    env.pop("COURSE_LEDGER", None)  # workers must not rewrite the notebook's ledger
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("OMP_NUM_THREADS", str(max(1, usable_cpus() // max(1, nproc_per_node))))
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    if "GLOO_SOCKET_IFNAME" not in env and sys.platform.startswith("linux"):
        env["GLOO_SOCKET_IFNAME"] = "lo"
    elif "GLOO_SOCKET_IFNAME" not in env and sys.platform == "darwin":
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
    env = env if env is not None else child_environment(sum(_nproc_of(c) for c in cmds))
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


_LIVE: set["_Job"] = set()


class _Job:
    """One launched command plus every descendant process seen while it ran."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.tracked: dict[int, object] = {}  # pid -> handle that can tell if the pid was reused
        self.seen: set[int] = {proc.pid}
        self._last_watch = 0.0

    @classmethod
    def start(cls, cmd: list[str], env: dict[str, str], cwd: str | Path) -> "_Job":
        kwargs: dict = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP} if IS_WINDOWS else {"start_new_session": True}
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                text=True, errors="replace", bufsize=1, env=env, cwd=str(cwd), **kwargs)
        job = cls(proc)
        _LIVE.add(job)
        return job

    def watch(self) -> None:
        """Note the job's current descendants (at most every 0.2 s). Workers that outlive torchrun
        are re-parented and could not be found later, so we look while the tree is intact."""
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
        alive = [pid for pid, h in self.tracked.items() if _alive(pid, h)]
        if self.proc.poll() is None or alive:
            self._signal_all(signal.SIGTERM, alive)
            end = time.monotonic() + grace
            while time.monotonic() < end:
                alive = [pid for pid, h in self.tracked.items() if _alive(pid, h)]
                if self.proc.poll() is not None and not alive:
                    break
                time.sleep(0.05)
            alive = [pid for pid, h in self.tracked.items() if _alive(pid, h)]
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
            if not _alive(pid, handle):
                continue
            if not IS_WINDOWS:  # torchrun starts each worker in its own session: signal its group too
                _send(lambda: os.killpg(pid, sig) if os.getpgid(pid) == pid else None)
            _send(lambda: handle.send_signal(sig) if psutil else os.kill(pid, sig))


def _send(action) -> None:
    try:
        action()
    except (ProcessLookupError, PermissionError, OSError):
        pass
    except Exception as exc:  # psutil.NoSuchProcess and friends
        if psutil is None or not isinstance(exc, psutil.Error):
            raise


def _descendants(pid: int) -> dict[int, object]:
    """All descendants of ``pid``: pid -> a handle (psutil.Process, or the start time from /proc)."""
    if psutil is not None:
        try:
            return {p.pid: p for p in psutil.Process(pid).children(recursive=True)}
        except psutil.Error:
            return {}
    children: dict[int, list[int]] = {}
    starts: dict[int, object] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if entry.isdigit():
            stat = _proc_stat(int(entry))
            if stat:
                children.setdefault(stat[0], []).append(int(entry))
                starts[int(entry)] = stat[1]
    found, todo = {}, [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found[child] = starts[child]
            todo.append(child)
    return found


def _proc_stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, start time) of a running process from /proc, or None if it is gone or a zombie."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return None if fields[0] == "Z" else (int(fields[1]), fields[19])


def _alive(pid: int, handle: object) -> bool:
    """Is the process we tracked still running (and not a new process that reused its pid)?"""
    if psutil is not None:
        try:
            return handle.is_running() and handle.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False
    stat = _proc_stat(pid)
    return stat is not None and stat[1] == handle


@atexit.register
def _kill_all_live() -> None:
    """At interpreter exit (e.g. a kernel shut down while a job ran), end every job still running."""
    for job in list(_LIVE):
        job.kill(grace=1.0)


def process_alive(pid: int) -> bool:
    """True if a process with this pid runs (zombies count as gone). Used by: tests/test_launch.py."""
    if psutil is not None:
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False
    return _proc_stat(pid) is not None
