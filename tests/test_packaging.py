"""Setup files agree with each other and are safe: pyproject, environment.yml, Dockerfile, Makefile."""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib


def _name(req: str) -> str:
    return re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0].lower().replace("_", "-")


def _pyproject_requirements() -> dict[str, str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        reqs += extra
    return {_name(r): r.replace(" ", "") for r in reqs if "python_version" not in r}


def test_environment_yml_lists_the_same_packages_as_pyproject():
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    listed = {_name(r): r.replace(" ", "") for r in pip_section if not r.startswith("-e")}
    assert listed == _pyproject_requirements()
    assert "-e ." in pip_section, "environment.yml must install the course package itself"


def _dockerfile() -> list[tuple[str, str]]:
    """The Dockerfile as (INSTRUCTION, arguments) pairs: comments dropped, continuations joined."""
    logical, parts = [], []
    for line in (REPO / "Dockerfile").read_text().splitlines():
        if not parts and (not line.strip() or line.lstrip().startswith("#")):
            continue
        parts.append(line.rstrip().removesuffix("\\").strip())
        if not line.rstrip().endswith("\\"):
            text = " ".join(p for p in parts if p)
            logical.append((text.split()[0].upper(), text.split(None, 1)[1] if " " in text else ""))
            parts = []
    return logical


def _index(instructions, kind: str, pattern: str = "") -> int:
    return next(i for i, (k, a) in enumerate(instructions) if k == kind and re.search(pattern, a))


def test_dockerfile_installs_from_pyproject_on_a_pinned_cuda_pytorch_base():
    ins = _dockerfile()
    base = re.fullmatch(r"pytorch/pytorch:(\d+)\.(\d+)\.\d+-cuda[\d.]+-cudnn\d+-runtime(@sha256:[0-9a-f]{64})?", ins[0][1])
    assert ins[0][0] == "FROM" and base, "base image: an official PyTorch CUDA runtime image, full tag"
    assert (int(base.group(1)), int(base.group(2))) >= (2, 4), "base image torch must satisfy torch>=2.4"
    # Layer order: dependencies from pyproject.toml (+ pins) alone, then the code with --no-deps.
    deps_copy = _index(ins, "COPY", r"pyproject\.toml")
    assert set(ins[deps_copy][1].split()[1:-1]) == {"pyproject.toml", "tools/docker-constraints.txt"}
    deps_run = _index(ins, "RUN", r'pip install .*-c docker-constraints\.txt "\.\[lab,test\]"')
    code_copy = _index(ins, "COPY", r"^(--chown=\S+ )?\. \.$")
    code_run = _index(ins, "RUN", r"pip install .*--no-deps -e \.")
    assert deps_copy < deps_run < code_copy < code_run
    assert re.search(r"^USER\s+(?!0\b|root\b)\S+", "\n".join(f"{k} {a}" for k, a in ins), re.M), "must run as a non-root user"
    assert _index(ins, "HEALTHCHECK") and _index(ins, "EXPOSE", r"\b8888\b")


def test_course_folder_belongs_to_the_user_before_user_switch():
    ins = _dockerfile()
    workdir = ins[_index(ins, "WORKDIR")][1]
    user = _index(ins, "USER")
    assert ins[user][1].split(":")[0] == "1000"
    made = [i for i, (k, a) in enumerate(ins) if k == "RUN" and re.search(rf"install -d -o 1000 -g 1000 {re.escape(workdir)}(\s|$)", a)]
    assert made and made[0] < _index(ins, "WORKDIR") < user, "the course folder is created owned by uid 1000 first"
    assert all(re.search(r"--chown=(1000|student)", a) for k, a in ins if k == "COPY")


def test_container_runs_jupyter_by_default_and_any_other_command_on_request():
    ins = _dockerfile()
    assert json.loads(ins[_index(ins, "ENTRYPOINT")][1]) == ["/home/student/course/tools/docker-entrypoint.sh"]
    assert json.loads(ins[_index(ins, "CMD")][1]) == ["lab"]
    assert os.access(REPO / "tools" / "docker-entrypoint.sh", os.X_OK), "COPY keeps the mode: it must be executable"
    out = subprocess.run(["sh", str(REPO / "tools" / "docker-entrypoint.sh"), "echo", "a shell instead"],
                         capture_output=True, text=True, check=True, timeout=30).stdout
    assert out == "a shell instead\n"


def test_no_token_is_baked_into_the_image_or_put_on_a_command_line():
    text = (REPO / "Dockerfile").read_text()
    assert not re.search(r"^(ENV|ARG)\s.*JUPYTER_TOKEN", text, re.M), "a token in ENV/ARG is stored in the image"
    for path in ("Dockerfile", "tools/docker-entrypoint.sh", "Makefile"):
        assert not re.search(r"(IdentityProvider|ServerApp|NotebookApp)\.token", (REPO / path).read_text()), path


def test_run_commands_publish_on_loopback_with_enough_shared_memory():
    for path in ("Dockerfile", "README.md"):
        runs = [m for m in re.findall(r"docker run [^\n`]*", (REPO / path).read_text()) if "8888" in m]
        assert runs, f"{path} shows how to run the image"
        for cmd in runs:
            assert "-p 127.0.0.1:8888:8888" in cmd, f"{path}: publish on loopback only: {cmd}"
            assert "--ipc=host" in cmd or "--shm-size" in cmd, f"{path}: /dev/shm is 64 MB by default: {cmd}"
    assert re.search(r"docker run [^\n`]*\bbash\b", (REPO / "README.md").read_text()), "README shows the shell"


def test_dockerignore_keeps_local_junk_out_of_the_build_context():
    entries = {line.strip().rstrip("/") for line in (REPO / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    assert {".git", ".venv", "build", ".whl", "**/__pycache__", "*.egg-info"} <= entries
    assert not entries & {"notebooks", "course_utils", "tools", "pyproject.toml"}


def test_docker_constraints_pin_exact_versions_within_pyproject_bounds():
    from packaging.requirements import Requirement

    pins = {}
    for line in (REPO / "tools" / "docker-constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pins[_name(name)] = version.strip()
    assert "torch" not in pins, "torch comes from the pinned base image"
    for req in _pyproject_requirements().values():
        r = Requirement(req)
        if r.name != "torch" and not r.marker:
            assert r.name.lower() in pins, f"{r.name} has no pin"
            assert r.specifier.contains(pins[r.name.lower()]), f"{r.name}=={pins[r.name.lower()]} breaks {req}"


@pytest.mark.slow
def test_dockerfile_passes_hadolint():
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).with_name("hadolint"))
    result = subprocess.run([hadolint, str(REPO / "Dockerfile")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def _make_dry_run(target: str, env_extra: dict[str, str], *args: str) -> str:
    # A clean slate: no pip settings, and none of the variables an outer `make` passes down.
    inherited = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "TORCH_SPEC", "TORCH_INDEX", "PYTHON", "VENV"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k not in inherited}
    env.update(env_extra)
    return subprocess.run(["make", "-n", "-B", target, *args], cwd=REPO, env=env, capture_output=True, text=True, check=True).stdout


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("nvidia-smi") is not None, reason="needs make, no GPU")
def test_make_picks_a_cpu_torch_build_without_gpu_or_mirror():
    out = _make_dry_run("setup", {"PIP_CONFIG_FILE": os.devnull})
    assert "--index-url https://download.pytorch.org/whl/cpu" in out


@pytest.fixture(scope="module")
def explicit_choice(tmp_path_factory) -> tuple[Path, str]:
    """`make -n -B setup TORCH_SPEC=torch==2.13.0 TORCH_INDEX=` into a venv whose recorded torch choice
    is that one: the dry run two tests read (each one costs seconds: make asks pip for its
    configuration several times)."""
    venv = tmp_path_factory.mktemp("explicit") / "venv"
    venv.mkdir()
    (venv / ".torch-choice").write_text("torch==2.13.0 from default pip sources\n")
    out = _make_dry_run("setup", {"PIP_CONFIG_FILE": os.devnull}, f"VENV={venv}", "TORCH_SPEC=torch==2.13.0", "TORCH_INDEX=")
    return venv, out


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_respects_explicit_torch_choices(explicit_choice):
    out = explicit_choice[1]
    assert '"torch==2.13.0"' in out and "--index-url" not in out
    out = _make_dry_run("setup", {"PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": "/some/wheelhouse"})
    assert "--index-url" not in out, "a configured mirror/wheelhouse is respected"


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("nvidia-smi") is not None, reason="needs make, no GPU")
def test_make_prefers_a_cpu_wheel_from_a_configured_wheelhouse(tmp_path):
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    for version in ("2.9.0", "2.13.0", "2.10.1"):
        (tmp_path / f"torch-{version}+cpu-{tag}-{tag}-manylinux_2_28_x86_64.whl").touch()
    (tmp_path / f"torch-2.14.1-{tag}-{tag}-manylinux_2_28_x86_64.whl").touch()  # a CUDA build: not chosen
    out = _make_dry_run("setup", {"PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": str(tmp_path)})
    assert f'"{tmp_path}/torch-2.13.0+cpu-{tag}-{tag}-manylinux_2_28_x86_64.whl"' in out
    out = _make_dry_run("setup", {"PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": str(tmp_path)}, "TORCH_SPEC=torch>=2.5")
    assert '"torch>=2.5"' in out, "an explicit TORCH_SPEC wins over the wheelhouse"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_changing_the_torch_choice_reinstalls_torch(explicit_choice):
    venv, out = explicit_choice
    assert f"> {venv}/.torch-choice" in out and "pip uninstall" in out
    # The recipe rewrites the file only when the choice differs (so its date moves only then).
    subprocess.run(["make", f"VENV={venv}", "TORCH_SPEC=torch==2.13.0", "TORCH_INDEX=", f"{venv}/.torch-choice"],
                   cwd=REPO, check=True, capture_output=True)
    assert (venv / ".torch-choice").read_text() == "torch==2.13.0 from default pip sources\n"
    subprocess.run(["make", f"VENV={venv}", "TORCH_SPEC=torch==2.12.0", "TORCH_INDEX=", f"{venv}/.torch-choice"],
                   cwd=REPO, check=True, capture_output=True)
    assert (venv / ".torch-choice").read_text() == "torch==2.12.0 from default pip sources\n"


def _fake_nvidia_smi(tmp_path: Path, driver: str) -> dict[str, str]:
    """An `nvidia-smi` that reports `driver` (this machine has no GPU to ask)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "nvidia-smi").write_text(f"#!/bin/sh\necho {driver}\n")
    (bin_dir / "nvidia-smi").chmod(0o755)
    return {"PIP_CONFIG_FILE": os.devnull, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


@pytest.mark.skipif(shutil.which("make") is None or sys.platform != "linux", reason="needs make on Linux")
@pytest.mark.parametrize("driver, warned", [("570.86.15", True), ("580.95.05", False)])
def test_make_setup_warns_when_the_driver_is_too_old_for_pypis_cuda13_build(tmp_path, driver, warned):
    out = _make_dry_run("setup", _fake_nvidia_smi(tmp_path, driver))
    assert ("TORCH_INDEX=https://download.pytorch.org/whl/cu126" in out) == warned
    assert (f"NVIDIA driver {driver} is older than 580" in out) == warned
    out = _make_dry_run("setup", _fake_nvidia_smi(tmp_path, driver), "TORCH_INDEX=https://download.pytorch.org/whl/cu126")
    assert "older than 580" not in out, "no warning once a CUDA 12 index is chosen"


# --- JupyterLab for real: the token is never in any process's argv -------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _status(port: int, token: str | None) -> int:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api/status")
    if token:
        req.add_header("Authorization", f"token {token}")
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code


def _wait_until_serving(proc: subprocess.Popen, port: int, token: str, log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"server exited early:\n{log.read_text()}"
        try:
            if _status(port, token) == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)  # a refused connection costs nothing: ask often, so a test waits less
    raise AssertionError(f"server did not answer on port {port}:\n{log.read_text()}")


def _tree_cmdlines(pid: int) -> dict[int, bytes]:
    import psutil

    procs = [pid] + [c.pid for c in psutil.Process(pid).children(recursive=True)]
    cmdlines = {}
    for p in procs:
        try:
            cmdlines[p] = Path(f"/proc/{p}/cmdline").read_bytes()
        except FileNotFoundError:  # exited meanwhile
            pass
    return cmdlines


def _kill_tree(proc: subprocess.Popen) -> None:
    import psutil

    try:
        family = [proc.pid] + [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        family = []
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in family:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        try:
            proc.wait(timeout=20)
            break
        except subprocess.TimeoutExpired:
            continue
    psutil.wait_procs([p for p in map(_proc_or_none, family) if p], timeout=20)


def _proc_or_none(pid: int):
    import psutil

    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None


def _serve(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


VENV_BIN = Path(sys.executable).parent
needs_jupyter = pytest.mark.skipif(not (VENV_BIN / "jupyter-lab").exists() or sys.platform != "linux",
                                   reason="needs JupyterLab in this venv and /proc")


@pytest.mark.slow
@needs_jupyter
@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_lab_keeps_the_token_off_every_command_line(tmp_path):
    token, port, log = secrets.token_hex(24), _free_port(), tmp_path / "lab.log"
    venv = VENV_BIN.parent
    env = {**os.environ, "JUPYTER_TOKEN": token, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    for k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
        env.pop(k, None)
    # -o: never reinstall the venv from inside a test (this one is already set up).
    cmd = ["make", "-o", f"{venv}/.course-installed", "lab", f"VENV={venv}", f"PORT={port}", "LAB_ARGS=--no-browser"]
    proc = _serve(cmd, env, log)
    second = None
    try:
        _wait_until_serving(proc, port, token, log)
        # A second server on the same port must fail (checked below); it takes seconds to start and
        # fail, so it starts now and fails while the first server is checked.
        second = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert _status(port, None) == 403 and _status(port, "wrong") == 403 and _status(port, token) == 200
        printed = re.search(r"Open JupyterLab at: (\S+)", log.read_text()).group(1)
        assert printed == f"http://127.0.0.1:{port}/lab/tree/notebooks?token={token}"
        with urllib.request.urlopen(printed, timeout=10) as resp:
            assert resp.status == 200, "the printed URL is the one that works"
        # The solutions every exercise names open from the lab, beside the lessons.
        for folder in ("notebooks", "solutions"):
            req = urllib.request.Request(f"http://127.0.0.1:{port}/api/contents/{folder}/00_environment_check.ipynb",
                                         headers={"Authorization": f"token {token}"})
            with urllib.request.urlopen(req, timeout=10) as resp:
                assert resp.status == 200 and json.loads(resp.read())["type"] == "notebook", folder
        # A kernel too: every process in the tree, the kernel included, has a token-free argv.
        req = urllib.request.Request(f"http://127.0.0.1:{port}/api/kernels", data=b"{}", method="POST",
                                     headers={"Authorization": f"token {token}"})
        urllib.request.urlopen(req, timeout=30).close()
        deadline = time.monotonic() + 60
        while not any(b"ipykernel" in c for c in _tree_cmdlines(proc.pid).values()) and time.monotonic() < deadline:
            time.sleep(0.2)
        cmdlines = _tree_cmdlines(proc.pid)
        assert any(b"ipykernel" in c for c in cmdlines.values()) and any(b"jupyter" in c for c in cmdlines.values())
        for pid, cmdline in cmdlines.items():
            assert token.encode() not in cmdline, f"token in argv of pid {pid}: {cmdline!r}"
        # A second server on the same port fails instead of moving to a port the URL does not name.
        second_output, _ = second.communicate(timeout=120)
        assert second.returncode != 0 and f"port {port} is not available" in second_output, second_output
        assert _status(port, token) == 200, "the first server still serves"
    finally:
        if second is not None and second.poll() is None:
            _kill_tree(second)
        _kill_tree(proc)
    assert proc.poll() is not None


@pytest.mark.slow
@needs_jupyter
@pytest.mark.parametrize("given", ["", None])
def test_container_entrypoint_generates_a_token_and_keeps_it_off_the_command_line(tmp_path, given):
    port, log = _free_port(), tmp_path / "entrypoint.log"
    env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}", "JUPYTER_PORT": str(port), "JUPYTER_IP": "127.0.0.1",
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    env.pop("JUPYTER_TOKEN", None)
    if given is not None:
        env["JUPYTER_TOKEN"] = given  # empty: would disable authentication, so it must be replaced
    extra = "--ServerApp.shutdown_no_activity_timeout=900"  # a harmless option: it must reach JupyterLab
    proc = _serve(["sh", str(REPO / "tools" / "docker-entrypoint.sh"), extra], env, log)
    try:
        deadline = time.monotonic() + 60
        while not (m := re.search(r"lab/tree/notebooks\?token=(\w+)", log.read_text())) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert m, log.read_text()
        token = m.group(1)
        assert len(token) >= 32
        _wait_until_serving(proc, port, token, log)
        assert _status(port, None) == 403 and _status(port, token) == 200
        for pid, cmdline in _tree_cmdlines(proc.pid).items():
            assert token.encode() not in cmdline, f"token in argv of pid {pid}: {cmdline!r}"
        assert extra.encode() in Path(f"/proc/{proc.pid}/cmdline").read_bytes(), "extra options reach JupyterLab"
    finally:
        _kill_tree(proc)


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    assert "make test" in readme and "make lab" in readme
    assert "make test" in (REPO / ".ci" / "run").read_text()
    wf = yaml.safe_load((REPO / ".github" / "workflows" / "ci.yml").read_text())
    steps = "\n".join(s.get("run", "") for job in wf["jobs"].values() for s in job["steps"])
    assert "make test" in steps and "DEVICE=cuda" in steps


def test_ci_workflow_is_read_only_cached_serialised_and_pinned():
    wf = yaml.safe_load((REPO / ".github" / "workflows" / "ci.yml").read_text())
    assert wf["permissions"] == {"contents": "read"}
    assert "${{ github.ref }}" in wf["concurrency"]["group"]
    assert wf["jobs"]["gpu"]["needs"] == "cpu", "the GPU job runs only after the CPU job passed"
    steps = [step for job in wf["jobs"].values() for step in job["steps"]]
    setup = next(s for s in steps if s.get("uses", "").startswith("actions/setup-python@"))
    assert setup["with"]["cache"] == "pip"
    for step in steps:
        if "uses" in step:
            assert re.fullmatch(r"[\w-]+/[\w-]+@[0-9a-f]{40}", step["uses"]), f"pin to a full commit SHA: {step['uses']}"
    text = (REPO / ".github" / "workflows" / "ci.yml").read_text()
    assert all(re.search(r"@[0-9a-f]{40}  # v\d+\.\d+\.\d+$", line) for line in text.splitlines() if "uses:" in line)
    assert "docker build" in text, "the self-hosted GPU job builds the image for real"


def _gpu_run_sandbox(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A copy of tools/gpu_run.sh in an empty tree, with stand-ins for what only a GPU machine has:
    `nvidia-smi` and the image's `python3` (whose pytest/papermill steps are what the script times)."""
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "tree" / "tools").mkdir(parents=True)
    shutil.copy(REPO / "tools" / "gpu_run.sh", tmp_path / "tree" / "tools")
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "nvidia-smi").write_text('#!/bin/sh\necho "NVIDIA H200, 580.95.05, 143771 MiB"\n')
    (fake / "python3").write_text("""#!/bin/bash
case "$1 $2" in
  "-c import torch"*) echo "torch 2.11.0+cu130";;
  "-m pytest") if [[ "$*" == *nbval* ]]; then sleep "${NBVAL_SLEEP:-0}"; else exit "${UNIT_RC:-0}"; fi;;
  "-m course_utils.run") mkdir -p results build/run; echo '{}' > "results/$6.json"; echo '{}' > build/run/summary.json;;
  *) exit 3;;
esac
""")
    for f in fake.iterdir():
        f.chmod(0o755)
    return tmp_path / "tree", {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "OUT": str(tmp_path / "out")}


GPU_RUN_TEST = "test_gpu_run_reports_failures_timeouts_and_writes_results_as_it_goes"


@pytest.fixture(scope="module", autouse=True)
def _gpu_run_with_a_timeout(request, tmp_path_factory):
    """The gpu_run test's failing run, started with this module's first test: its nbval step sleeps
    into its 10 s timeout (the least budget tools/gpu_run.sh gives a step), and those 10 s of
    waiting pass while the module's other tests run. The test itself collects the run's output."""
    wanted = any(item.name == GPU_RUN_TEST for item in request.session.items)
    if not wanted or shutil.which("bash") is None or shutil.which("timeout") is None:
        yield None
        return
    tree, env = _gpu_run_sandbox(tmp_path_factory.mktemp("gpu_run") / "bad")
    env.update(UNIT_RC="1", NBVAL_SLEEP="30", NBVAL_S="10")
    proc = subprocess.Popen(["bash", "tools/gpu_run.sh", "box"], cwd=tree, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:  # the test did not collect it (deselected or failed before)
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None, reason="needs bash, timeout")
def test_gpu_run_reports_failures_timeouts_and_writes_results_as_it_goes(tmp_path, _gpu_run_with_a_timeout):
    text = (REPO / "tools" / "gpu_run.sh").read_text()
    assert "set -euo pipefail" in text
    budget = {k: int(v) for k, v in re.findall(r"(TOTAL_S|UNIT_S|LESSONS_S|NBVAL_S) = (\d+)", text)}
    assert budget["UNIT_S"] + budget["LESSONS_S"] + budget["NBVAL_S"] <= budget["TOTAL_S"] <= 540, "fits 9 minutes"
    # Three runs, each in a sandbox of its own: all steps pass; a failing step and a step past its
    # budget (the run the module fixture above started); no time left for any step.
    tree, env = _gpu_run_sandbox(tmp_path / "ok")
    ok = subprocess.run(["bash", "tools/gpu_run.sh", "box"], cwd=tree, env=env, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert re.search(r"gpu_run: unit=ok/\d+s lessons=ok/\d+s nbval=ok/\d+s total=\d+s -> PASS", ok.stdout)
    assert {"box.json", "unit.log", "lessons.log", "nbval.log", "steps.tsv", "summary.txt"} <= {
        p.name for p in (tmp_path / "ok" / "out").iterdir()}
    bad = _gpu_run_with_a_timeout
    bad_out, _ = bad.communicate(timeout=60)
    assert bad.returncode == 1
    assert re.search(r"unit=FAILED\(rc=1\)/\d+s lessons=ok/\d+s nbval=TIMEOUT\(10s\)/\d+s .*-> FAIL", bad_out)
    tree, env = _gpu_run_sandbox(tmp_path / "short")
    env.update(TOTAL_S="5")
    short = subprocess.run(["bash", "tools/gpu_run.sh", "box"], cwd=tree, env=env, capture_output=True, text=True, timeout=60)
    assert short.returncode == 1 and "unit=skipped(no-time)" in short.stdout


@pytest.mark.skipif((REPO / "results" / "h200.json").exists(), reason="the GPU reference file is there")
@pytest.mark.parametrize("doc", ["README.md", "docs/gpu.md"])
def test_docs_promise_no_gpu_figures_while_there_are_none(doc):
    """Until a GPU run's file is committed, every sentence that names it is conditional."""
    text = re.sub(r"```.*?```", "", (REPO / doc).read_text(), flags=re.S)
    sentences = re.split(r"(?<=[.!?])\s+|\n\s*\n|\n- ", text)
    for sentence in (s for s in sentences if "h200.json" in s):
        assert re.search(r"\b(when|once|until|if|where)\b", sentence, re.I), f"{doc}: unconditional: {sentence!r}"


def _table_number(text: str):
    """'1 000 000' -> 1000000, '2³² − 1' -> 2**32 - 1, '0.01' -> 0.01, '`EPOCHS`' -> 'EPOCHS'."""
    text = text.strip().strip("`")
    m = re.fullmatch(r"2([²³¹⁰-⁹]+) − 1", text)
    if m:
        return 2 ** int(m.group(1).translate(str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789"))) - 1
    text = text.replace(" ", "")
    return text if text.isidentifier() else float(text)


def _arithmetic(text: str) -> float:
    """The value of a numeric literal expression such as ``2**32 - 1`` or ``1_000_000`` (nothing else)."""
    import ast
    import operator

    ops = {ast.Pow: operator.pow, ast.Sub: operator.sub, ast.Add: operator.add, ast.Mult: operator.mul}

    def value(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return ops[type(node.op)](value(node.left), value(node.right))
        raise ValueError(f"not a numeric literal: {text!r}")

    return value(ast.parse(text, mode="eval").body)


def test_bad_inputs_table_matches_every_lesson_parameter_check():
    """docs/bad-inputs.md lists each `check_*` range of every lesson's validation, as the lesson has it."""
    import ast

    import nbformat

    rows = {}
    for line in (REPO / "docs" / "bad-inputs.md").read_text().splitlines():
        m = re.match(r"\| (\d\d(?: deeper)?) \| `(\w+)` \| ([^|]*)\|", line)
        if m:  # "| 11 deeper | ..." : a deeper notebook's own range, where it differs from its core's
            rows[(m.group(1), m.group(2))] = m.group(3)
    checked, wrong = 0, []
    from course_utils.paths import all_notebooks

    for path in all_notebooks(REPO / "notebooks"):  # a deeper notebook's parameters are its lesson's rows
        lesson = path.name[:2]
        deeper = path.parent.name == "deeper"
        source = "\n".join(c.source for c in nbformat.read(path, 4).cells if c.cell_type == "code")
        found = re.findall(r'check_(int|float|sizes|choice)\("(\w+)", \w+, ([^()]+)\)', source)
        # the one-line form: check_params(globals(), EPOCHS=Int(1, 10), MODE=Choice("a", "b"), ...)
        found += [(kind.lower(), name, f"({args},)" if kind == "Choice" else args)
                  for name, kind, args in re.findall(r'\b([A-Z_][A-Z0-9_]*)=(Int|Float|Sizes|Choice)\(([^()]*)\)', source)]
        for kind, name, args in found:
            checked += 1
            row = (deeper and rows.get((f"{lesson} deeper", name))) or rows.get((lesson, name))
            if row is None:
                wrong.append(f"no row for lesson {lesson} parameter {name}: check_{kind}({args})")
            elif kind == "choice":
                wrong += [f"{lesson} {name}: choice {c!r} missing" for c in ast.literal_eval(args) if f'`"{c}"`' not in row]
            else:
                lo, hi = args.split(", ")[:2]
                want = [v if v.isidentifier() else _arithmetic(v) for v in (lo, hi)]
                got = [_table_number(t) for t in re.search(r"\[([^]]+)\]", row).group(1).split(",")]
                if got != want:
                    wrong.append(f"lesson {lesson} {name}: the table says {got}, the notebook checks {want}")
    assert not wrong, "docs/bad-inputs.md is out of date:\n" + "\n".join(wrong)
    assert checked >= 60, f"only {checked} checks found: did the lessons' validation change form?"
