"""course_utils.launch: output streaming, failures, timeouts, interrupts, and no process left behind.

These tests use small Python process trees shaped like a torchrun job (a parent plus a child in a
session of its own, as torchrun starts its workers), so they run in seconds without torch.
"""
from __future__ import annotations

import _thread
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from conftest import new_children
from course_utils import launch as L

pytestmark = pytest.mark.slow  # real torchrun processes: make test-fast skips this module

# A stand-in for torchrun: starts a child in its own session (like a worker), records both pids in a
# file, prints them, sleeps, then exits with the given code. argv: pidfile, seconds, exit code.
TREE = textwrap.dedent("""
    import os, subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    with open(sys.argv[1], "w") as f:
        f.write(f"{os.getpid()} {child.pid}")
    print("pids", os.getpid(), child.pid, flush=True)
    time.sleep(float(sys.argv[2]))
    sys.exit(int(sys.argv[3]))
""")


def tree(pidfile: Path, seconds: float, code: int = 0) -> list[str]:
    return [sys.executable, "-c", TREE, str(pidfile), str(seconds), str(code)]


def wait_for_pids(pidfile: Path, timeout: float = 20) -> list[int]:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pidfile.exists() and pidfile.read_text().strip():
            return [int(p) for p in pidfile.read_text().split()]
        time.sleep(0.05)
    raise AssertionError("the process tree never started")


def my_children() -> list[int]:
    """Live descendants of this test process started since this module began."""
    return new_children()


def assert_all_gone(pids: list[int]) -> None:
    end = time.monotonic() + 5  # the launcher waited already; allow the OS a moment to reap
    while time.monotonic() < end and any(L.process_alive(p) for p in pids):
        time.sleep(0.05)
    assert not [p for p in pids if L.process_alive(p)], "processes left behind"
    assert my_children() == [], "the launcher left child processes"


def test_streams_lines_in_order_and_returns_result(capsys):
    result = L.launch([sys.executable, "-c", "print('one'); print('two')"], timeout=30, prefix="> ")
    assert result.returncode == 0 and result.lines == [["one", "two"]]
    assert capsys.readouterr().out == "> one\n> two\n"
    assert result.first("two") >= result.first("one") >= 0


def test_failure_raises_with_the_tail_of_the_output():
    with pytest.raises(L.LaunchError) as info:
        L.launch([sys.executable, "-c", "print('about to fail'); raise SystemExit(3)"], timeout=30, echo=False)
    assert info.value.result.returncode == 3
    assert "exit code 3" in str(info.value) and "about to fail" in str(info.value)
    assert not isinstance(info.value, L.LaunchTimeout)


def test_failed_launch_kills_processes_that_outlive_it(tmp_path):
    pidfile = tmp_path / "pids"
    with pytest.raises(L.LaunchError):  # the parent exits with 1; its child (own session) must not survive
        L.launch(tree(pidfile, 0.3, 1), timeout=30, echo=False)
    assert_all_gone(wait_for_pids(pidfile))


def test_timeout_kills_the_whole_tree(tmp_path):
    pidfile = tmp_path / "pids"
    t0 = time.monotonic()
    with pytest.raises(L.LaunchTimeout) as info:  # 2 s: a bare Python tree starts in ~0.1 s, 20x that under load
        L.launch(tree(pidfile, 600), timeout=2, echo=False)
    assert time.monotonic() - t0 < 15
    assert "timeout" in str(info.value)
    pids = wait_for_pids(pidfile)
    assert set(pids) <= info.value.result.pids
    assert_all_gone(pids)


def test_keyboard_interrupt_kills_the_whole_tree(tmp_path):
    """What an interrupted notebook cell does: KeyboardInterrupt in the main thread."""
    pidfile = tmp_path / "pids"

    def interrupt_when_started():
        wait_for_pids(pidfile, timeout=50)
        time.sleep(0.5)  # let the launcher see the child
        _thread.interrupt_main()

    # Python raises KeyboardInterrupt for a SIGINT only while its handler is the default one; an
    # earlier test in this worker process (a library it ran) may have left another handler behind.
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=interrupt_when_started, daemon=True).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            L.launch(tree(pidfile, 600), timeout=60, echo=False)
    finally:
        signal.signal(signal.SIGINT, handler)
    assert_all_gone(wait_for_pids(pidfile))


def test_interrupted_jupyter_kernel_leaves_nothing(tmp_path):
    """The real thing: a kernel runs a launch in a cell, the kernel is interrupted, the tree dies."""
    jupyter_client = pytest.importorskip("jupyter_client")
    pidfile = tmp_path / "pids"
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3")
    try:
        code = f"from course_utils.launch import launch\nlaunch({tree(pidfile, 600)!r}, timeout=120, echo=False)"
        msg_id = kc.execute(code)
        pids = wait_for_pids(pidfile, timeout=60)
        time.sleep(0.5)
        km.interrupt_kernel()
        reply = kc.get_shell_msg(timeout=30)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = kc.get_shell_msg(timeout=30)
        assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt"
        end = time.monotonic() + 10
        while time.monotonic() < end and any(L.process_alive(p) for p in pids):
            time.sleep(0.1)
        assert not [p for p in pids if L.process_alive(p)], "the interrupted kernel left processes"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_interpreter_exit_kills_running_jobs(tmp_path):
    """A job still running when Python exits (e.g. a kernel shut down) is killed by the atexit hook."""
    pidfile = tmp_path / "pids"
    script = textwrap.dedent(f"""
        import time
        from course_utils.launch import _Job, child_environment
        job = _Job.start({tree(pidfile, 600)!r}, child_environment(1), ".")
        while not __import__("os").path.exists({str(pidfile)!r}):
            time.sleep(0.05)
        time.sleep(0.3)
        job.watch()
    """)  # ... and exit without killing it
    subprocess.run([sys.executable, "-c", script], timeout=60, check=True, cwd=L.REPO)
    pids = wait_for_pids(pidfile)
    end = time.monotonic() + 5
    while time.monotonic() < end and any(L.process_alive(p) for p in pids):
        time.sleep(0.05)
    assert not [p for p in pids if L.process_alive(p)]


def test_launch_many_runs_commands_together(capsys):
    cmds = [[sys.executable, "-c", f"import time; time.sleep(0.3); print('node {i}')"] for i in range(2)]
    t0 = time.monotonic()
    result = L.launch_many(cmds, timeout=30, prefixes=["[a] ", "[b] "])
    assert result.returncodes == [0, 0] and result.lines == [["node 0"], ["node 1"]]
    out = capsys.readouterr().out
    assert "[a] node 0" in out and "[b] node 1" in out
    assert time.monotonic() - t0 < 20


def test_launch_many_fails_if_any_command_fails():
    cmds = [[sys.executable, "-c", "pass"], [sys.executable, "-c", "raise SystemExit(2)"]]
    with pytest.raises(L.LaunchError) as info:
        L.launch_many(cmds, timeout=30, echo=False)
    assert info.value.result.returncodes == [0, 2]


def test_torchrun_command_single_and_multi_node():
    one = L.torchrun_command("mypackage.train", ["--tasks", "env"], nproc_per_node=2)
    assert one[:3] == [sys.executable, "-m", "torch.distributed.run"]
    assert "--nproc-per-node=2" in one and "--standalone" in one and "--local-addr=127.0.0.1" in one
    assert not [a for a in one if a.startswith(("--master-port", "--rdzv"))], "one node needs no port of ours"
    assert one[-4:] == ["-m", "mypackage.train", "--tasks", "env"]
    two = L.torchrun_command("train.py", nnodes=2, rdzv_endpoint="127.0.0.1:1234", module=False)
    assert "--rdzv-backend=c10d" in two and "--rdzv-endpoint=127.0.0.1:1234" in two and two[-1] == "train.py"
    assert "--local-addr=127.0.0.1" in two and "--standalone" not in two
    with pytest.raises(ValueError):
        L.torchrun_command("x", nnodes=2)
    assert L.format_command(one).startswith("python -m torch.distributed.run")
    assert L.format_command(["python", "x y"], env={"A": "1"}) == "A=1 python 'x y'"
    assert L._nproc_of(one) == 2 and L._nproc_of(["python"]) == 1


@pytest.mark.parametrize("host", ["node0.example.org", "10.0.0.5", "[fd00::1]"])
def test_a_job_between_real_hosts_has_no_loopback_setting(host, monkeypatch):
    """On real hosts, --local-addr=127.0.0.1 or GLOO_SOCKET_IFNAME=lo would make rank 0 advertise an
    address the other machines cannot reach: the job would hang."""
    monkeypatch.delenv("GLOO_SOCKET_IFNAME", raising=False)
    cmd = L.torchrun_command("mypackage.train", nnodes=2, nproc_per_node=8, rdzv_endpoint=f"{host}:29500")
    assert not [a for a in cmd if "127.0.0.1" in a or "localhost" in a]
    assert not L._loopback_job(cmd)
    assert "GLOO_SOCKET_IFNAME" not in L.child_environment(8, loopback=False)
    for local in ("127.0.0.1", "localhost", "[::1]", "127.0.1.1"):
        assert L.is_loopback(local) and L._loopback_job(
            L.torchrun_command("x", nnodes=2, rdzv_endpoint=f"{local}:1"))


def test_more_nccl_ranks_than_gpus_is_refused_before_launch():
    torch = pytest.importorskip("torch")
    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    want = "no GPU is visible here" if visible == 0 else f"needs {visible + 1} GPUs on this node, one per rank"
    with pytest.raises(ValueError, match=want) as refused:
        L.torchrun_command("mypackage.train", nproc_per_node=visible + 1, backend="nccl")
    assert "<= 0" not in str(refused.value), "never suggests nproc_per_node <= 0"
    L.torchrun_command("mypackage.train", nproc_per_node=visible + 1, backend="gloo")  # gloo: any number
    if visible:
        L.torchrun_command("mypackage.train", nproc_per_node=visible, backend="nccl")


def test_free_port_is_bindable():
    import socket

    port = L.free_port()
    assert 1024 <= port <= 65535
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


def test_child_environment(monkeypatch):
    monkeypatch.setenv("COURSE_LEDGER", "/tmp/x.json")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    env = L.child_environment(2, {"EXTRA": "1"})
    assert "COURSE_LEDGER" not in env and env["EXTRA"] == "1" and env["PYTHONUNBUFFERED"] == "1"
    assert int(env["OMP_NUM_THREADS"]) == max(1, L.usable_cpus() // 2)
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(L.REPO)
    if sys.platform.startswith("linux"):
        assert env["GLOO_SOCKET_IFNAME"] == "lo"


def test_root_cause_is_found_in_a_torchrun_report():
    report = textwrap.dedent("""
        Root Cause (first observed failure):
        [0]:
          time      : 2026-01-01_00:00:00
          host      : localhost
          rank      : 1 (local_rank: 1)
          exitcode  : 1 (pid: 123)
          error_file: /tmp/x/error.json
          traceback : Traceback (most recent call last):
            File "x.py", line 1, in main
              train()
          RuntimeError: simulated failure on rank 1 at step 40
        ============================================================
    """)
    assert L.root_cause(report) == "rank 1 (local_rank: 1): RuntimeError: simulated failure on rank 1 at step 40"
    killed = report.replace("Traceback (most recent call last):", "Signal 9 (SIGKILL) received by PID 123")
    killed = "\n".join(line for line in killed.splitlines() if "File" not in line and "train()" not in line
                       and "RuntimeError" not in line)
    assert L.root_cause(killed) == "rank 1 (local_rank: 1): Signal 9 (SIGKILL) received by PID 123"
    assert L.root_cause("no report here") is None


def test_launch_many_stops_the_others_when_one_fails(tmp_path, monkeypatch):
    """Like a node that dies: the command still running is stopped soon, not left to its timeout."""
    # The same path with 1 s instead of 5 s of grace (a notebook's): 4 s less waiting. The tree still
    # has over 1.5 s to start and write its pids (a bare Python, ~0.1 s), even on a loaded machine.
    monkeypatch.setattr(L, "NODE_FAILURE_GRACE_S", 1.0)
    pidfile = tmp_path / "pids"
    t0 = time.monotonic()
    with pytest.raises(L.LaunchError) as info:
        L.launch_many([tree(pidfile, 600), [sys.executable, "-c", "import time; time.sleep(0.5); raise SystemExit(4)"]],
                      timeout=60, echo=False)
    assert time.monotonic() - t0 < 30 and not isinstance(info.value, L.LaunchTimeout)
    assert info.value.result.seconds >= 0.5 + 1, "the others were stopped before the grace ran out"
    assert info.value.result.returncodes[1] == 4
    assert_all_gone(wait_for_pids(pidfile))


# --- real torchrun jobs: they die with whoever launched them ---------------------------------------
WORKER = textwrap.dedent("""
    import os, pathlib, sys, time
    pathlib.Path(sys.argv[1], "worker-" + os.environ["RANK"]).write_text(str(os.getpid()))
    time.sleep(600)
""")


def marked(marker: str) -> list[int]:
    """Live processes whose environment carries this marker (every process of one job)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("COURSE_TEST_MARKER") == marker and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
        except psutil.Error:
            pass
    return found


def sleeping_job(tmp_path: Path) -> tuple[list[str], dict[str, str], str]:
    """A real torchrun job of 2 workers that sleep for 10 minutes, each process marked in its environment."""
    (tmp_path / "worker.py").write_text(WORKER)
    marker = f"{os.getpid()}-{time.monotonic_ns()}"
    cmd = L.torchrun_command(str(tmp_path / "worker.py"), [str(tmp_path)], nproc_per_node=2, module=False)
    return cmd, L.child_environment(2, {"COURSE_TEST_MARKER": marker}), marker


def wait_for_workers(tmp_path: Path, timeout: float = 120) -> None:
    end = time.monotonic() + timeout
    while len(list(tmp_path.glob("worker-*"))) < 2:
        assert time.monotonic() < end, "the workers never started (machine too busy?)"
        time.sleep(0.1)


def assert_gone_within(marker: str, seconds: float) -> None:
    end = time.monotonic() + seconds
    while marked(marker) and time.monotonic() < end:
        time.sleep(0.2)
    assert marked(marker) == [], f"processes of the job still running {seconds:g} s later"


def test_a_sigkilled_kernel_takes_its_job_along(tmp_path):
    """The kernel (here: a Python process running launch()) is killed with SIGKILL mid-job: no
    cleanup code of its own runs, yet no process of the job exists 10 s later."""
    cmd, _, marker = sleeping_job(tmp_path)
    kernel_code = ("import sys\nfrom course_utils.launch import child_environment, launch\n"  # no environment in argv
                   f"launch({cmd!r}, timeout=600, env=child_environment(2, {{'COURSE_TEST_MARKER': sys.argv[1]}}), "
                   "echo=False)")
    kernel = subprocess.Popen([sys.executable, "-c", kernel_code, marker], cwd=L.REPO, stdout=subprocess.DEVNULL)
    try:
        wait_for_workers(tmp_path)
        assert len(marked(marker)) >= 3  # torchrun and 2 workers (and the guard)
        kernel.send_signal(signal.SIGKILL)
        assert kernel.wait(timeout=10) == -signal.SIGKILL
        assert_gone_within(marker, 10)
    finally:
        kernel.kill()
        for pid in marked(marker):  # never leave a sleeping job behind, even when the test fails
            os.kill(pid, signal.SIGKILL)


def test_workers_die_when_torchrun_is_sigkilled(tmp_path):
    """torchrun killed with SIGKILL cannot stop its workers (they run in sessions of their own):
    the guard, to which the orphans are re-parented, ends them, and the launch fails loudly."""
    cmd, env, marker = sleeping_job(tmp_path)

    def kill_torchrun():
        wait_for_workers(tmp_path)
        for pid in marked(marker):
            if psutil.Process(pid).cmdline()[1:3] == ["-m", "torch.distributed.run"]:  # not the guard
                os.kill(pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_torchrun, daemon=True)
    killer.start()
    try:
        with pytest.raises(L.LaunchError) as info:
            L.launch(cmd, timeout=300, env=env, echo=False)
        assert info.value.result.returncode == -signal.SIGKILL and not isinstance(info.value, L.LaunchTimeout)
        assert_gone_within(marker, 10)
    finally:
        killer.join(timeout=1)
        for pid in marked(marker):
            os.kill(pid, signal.SIGKILL)


def test_the_split_modules_each_do_one_job():
    """torchrun.py builds commands (no process handling, no psutil); supervise.py supervises (no torch);
    launch.py re-exports both (tests/conftest.py and notebook 09 import from it)."""
    import ast

    from course_utils import supervise, torchrun

    def top_imports(module):
        tree = ast.parse(Path(module.__file__).read_text())
        return {a.name.split(".")[0] for n in tree.body if isinstance(n, ast.Import) for a in n.names} | {
            (n.module or "").split(".")[0] for n in tree.body if isinstance(n, ast.ImportFrom)}

    assert "psutil" not in top_imports(torchrun) and "subprocess" not in top_imports(torchrun)
    assert "torch" not in top_imports(supervise) and "psutil" in top_imports(supervise)
    assert L._descendants is supervise._descendants and L.process_alive is supervise.process_alive
    assert L.torchrun_command is torchrun.torchrun_command and L.child_environment is torchrun.child_environment
