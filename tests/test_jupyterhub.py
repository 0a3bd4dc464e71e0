"""The shared-server kit (deploy/): who gets which GPU, and a real JupyterHub running lesson 00 for two students.

The unit tests feed `deploy/course_hub.py` an `nvidia-smi -L` listing as data (the format of the
NVIDIA MIG user guide's "CUDA Device Enumeration" example). The slow test starts JupyterHub for real
on 127.0.0.1 with the production `deploy/jupyterhub_config.py`, overriding only what a test machine
lacks: a shared-password authenticator instead of a real one, and JupyterHub's
SimpleLocalProcessSpawner (every server runs as this OS user, in its own home under a temp dir)
instead of DockerSpawner/SystemdSpawner, which need root, Docker or systemd. A fake `nvidia-smi`
lists two MIG slices and a whole GPU. Two students log in through the login form, start their
servers through the REST API, and each runs lesson 00 (SMOKE) in a kernel of their own server
through Jupyter Server's sessions API and kernel websocket.

JupyterHub comes from the `test` extra; its proxy, configurable-http-proxy, from npm (package.json,
installed into build/web/ like the slides' assets). Without them the slow test skips, except under
CI, where it fails.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from ci_kit import missing_tool

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "deploy"))
import course_hub  # noqa: E402

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

# One GPU in MIG mode with two slices, then one whole GPU (UUIDs made up, format as nvidia-smi prints them).
LISTING = """\
GPU 0: NVIDIA H200 (UUID: GPU-0c1d2e3f-4a5b-6c7d-8e9f-a0b1c2d3e4f5)
  MIG 3g.71gb     Device  0: (UUID: MIG-1a2b3c4d-5e6f-5a7b-8c9d-0e1f2a3b4c5d)
  MIG 3g.71gb     Device  1: (UUID: MIG-6e7f8a9b-0c1d-5e2f-9a3b-4c5d6e7f8a9b)
GPU 1: NVIDIA H200 (UUID: GPU-9f8e7d6c-5b4a-3c2d-1e0f-a9b8c7d6e5f4)
"""
MIG0, MIG1 = "MIG-1a2b3c4d-5e6f-5a7b-8c9d-0e1f2a3b4c5d", "MIG-6e7f8a9b-0c1d-5e2f-9a3b-4c5d6e7f8a9b"
GPU1 = "GPU-9f8e7d6c-5b4a-3c2d-1e0f-a9b8c7d6e5f4"
LESSON_00 = REPO / "notebooks" / "00_environment_check.ipynb"
CHP = REPO / "build" / "web" / "node_modules" / ".bin" / "configurable-http-proxy"
VENV_BIN = Path(sys.executable).parent


# --- the assignment, as data ---------------------------------------------------------------------

def test_a_gpu_in_mig_mode_is_replaced_by_its_slices():
    devices = course_hub.parse_nvidia_smi_list(LISTING)
    assert [d.uuid for d in devices] == [MIG0, MIG1, GPU1]
    assert devices[1].label == "GPU 0 MIG 3g.71gb device 1" and devices[2].label == "GPU 1 NVIDIA H200"
    old = "GPU 0: A100-SXM4-40GB (UUID: GPU-e86c)\n  MIG 1g.5gb Device 0: (UUID: MIG-GPU-e86c/7/0)\n"
    assert [d.uuid for d in course_hub.parse_nvidia_smi_list(old)] == ["MIG-GPU-e86c/7/0"], "pre-R470 MIG UUIDs"
    assert course_hub.parse_nvidia_smi_list("") == []
    with pytest.raises(ValueError, match="does not understand"):
        course_hub.parse_nvidia_smi_list("No devices were found\n")
    with pytest.raises(ValueError, match="before any GPU"):
        course_hub.parse_nvidia_smi_list(LISTING.split("\n", 1)[1])


def test_twenty_students_share_the_devices_round_robin_in_roster_order():
    devices = course_hub.parse_nvidia_smi_list(LISTING)
    roster = course_hub.parse_roster("\n".join(f"s{i:02d}" for i in range(20)))
    got = course_hub.assign_devices(roster, devices)
    assert list(got) == [u for u, _ in roster]
    assert [got[f"s{i:02d}"] for i in range(4)] == [MIG0, MIG1, GPU1, MIG0]
    assert sorted(list(got.values()).count(d.uuid) for d in devices) == [6, 7, 7]
    assert course_hub.assign_devices(roster, devices) == got, "deterministic"
    assert course_hub.assign_devices(roster, []) == {}, "a CPU-only server gives nobody a device"


def test_pinned_students_keep_their_device_and_the_rest_fill_the_least_loaded():
    devices = course_hub.parse_nvidia_smi_list(LISTING)
    roster = course_hub.parse_roster(f"# class of Tuesday\nana  {GPU1}\nben\ncai 0  # by index\ndan\n\neve\n")
    assert course_hub.assign_devices(roster, devices) == {"ana": GPU1, "ben": MIG1, "cai": MIG0, "dan": MIG0,
                                                          "eve": MIG1}
    with pytest.raises(ValueError, match="pinned to device 3, but there are 3"):
        course_hub.assign_devices(course_hub.parse_roster("ana 3"), devices)
    with pytest.raises(ValueError, match="not among the devices"):
        course_hub.assign_devices(course_hub.parse_roster("ana GPU-nope"), devices)
    with pytest.raises(ValueError, match="not among the devices: none"):
        course_hub.assign_devices(course_hub.parse_roster(f"ana {GPU1}"), [])
    with pytest.raises(ValueError, match="there are 0 devices"):
        course_hub.assign_devices(course_hub.parse_roster("ana 0"), [])


@pytest.mark.parametrize("text, message", [("ana\nana", "listed twice"), ("Ana", "lower-case"),
                                           ("ana GPU-1 extra", "username \\[device\\]")])
def test_a_bad_roster_line_is_named(text, message):
    with pytest.raises(ValueError, match=message):
        course_hub.parse_roster(text)


def test_settings_come_from_the_environment_with_safe_defaults():
    s = course_hub.Settings.from_env({})
    assert (s.spawner, s.devices, s.mem_limit, s.cpu_limit, s.authenticator) == ("docker", "auto", "8G", 2.0, "native")
    assert s.bind_url == "http://127.0.0.1:8000", "loopback unless told otherwise"
    assert s.roster == Path("/srv/jupyterhub/students.txt")
    s = course_hub.Settings.from_env({"COURSE_HUB_SPAWNER": "systemd", "COURSE_HUB_MEM_LIMIT": "12G",
                                      "COURSE_HUB_CPU_LIMIT": "1.5", "COURSE_HUB_DATA_DIR": "/x"})
    assert (s.spawner, s.mem_limit, s.cpu_limit, s.roster) == ("systemd", "12G", 1.5, Path("/x/students.txt"))
    for name, value in (("SPAWNER", "kubernetes"), ("MEM_LIMIT", "lots"), ("CPU_LIMIT", "two")):
        with pytest.raises(ValueError, match=f"COURSE_HUB_{name}"):
            course_hub.Settings.from_env({f"COURSE_HUB_{name}": value})


def _fake_nvidia_smi(folder: Path) -> Path:
    """`nvidia-smi -L` prints LISTING; anything else fails as on a machine whose driver is not loaded."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "listing.txt").write_text(LISTING)
    exe = folder / "nvidia-smi"
    exe.write_text(f'#!/bin/sh\nif [ "$1" = "-L" ]; then exec cat "{folder}/listing.txt"; fi\n'
                   'echo "NVIDIA-SMI has failed because it could not communicate with the driver" >&2\nexit 9\n')
    exe.chmod(0o755)
    return exe


def test_devices_are_read_from_nvidia_smi_or_given(tmp_path):
    exe = _fake_nvidia_smi(tmp_path / "bin")
    assert [d.uuid for d in course_hub.list_devices("auto", str(exe))] == [MIG0, MIG1, GPU1]
    assert course_hub.list_devices("none", str(exe)) == []
    assert [d.uuid for d in course_hub.list_devices(f"{GPU1}, {MIG0}")] == [GPU1, MIG0]
    (tmp_path / "bin" / "listing.txt").unlink()
    with pytest.raises(RuntimeError, match="COURSE_HUB_DEVICES=none"):
        course_hub.list_devices("auto", str(exe))


def test_the_command_line_shows_the_assignment_before_class(tmp_path):
    exe = _fake_nvidia_smi(tmp_path / "bin")
    (tmp_path / "students.txt").write_text("ana\nben\n")
    env = {**os.environ, "PATH": f"{exe.parent}:{os.environ['PATH']}"}
    env.pop("COURSE_HUB_DEVICES", None)
    out = subprocess.run([sys.executable, str(REPO / "deploy" / "course_hub.py"), str(tmp_path / "students.txt")],
                         env=env, capture_output=True, text=True, timeout=60, check=True).stdout
    assert f"device 2: {GPU1}  (GPU 1 NVIDIA H200)" in out
    assert f"ana -> CUDA_VISIBLE_DEVICES={MIG0}" in out and f"ben -> CUDA_VISIBLE_DEVICES={MIG1}" in out
    out = subprocess.run([sys.executable, str(REPO / "deploy" / "course_hub.py"), str(tmp_path / "none.txt")],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "roster" in out.stderr and "not found" in out.stderr


def test_the_project_installs_what_the_hub_needs():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(r.startswith("jupyterhub") for r in extras["hub"]) and any(r.startswith("jupyterhub") for r in extras["test"])
    # The course image runs jupyterhub-singleuser for DockerSpawner: its pip install must include JupyterHub.
    installed = set()
    for line in (REPO / "Dockerfile").read_text().splitlines():
        if "pip install" in line and '".[' in line:
            installed |= set(line.split('".[', 1)[1].split("]", 1)[0].split(","))
    assert any(r.startswith("jupyterhub") for e in installed for r in extras[e]), installed
    pkg = json.loads((REPO / "package.json").read_text())
    assert "configurable-http-proxy" in pkg["dependencies"]


def _load_config(monkeypatch, tmp_path, roster: str = f"alice\nbob {GPU1}\ncarol\n", **env):
    """deploy/jupyterhub_config.py as JupyterHub loads it (traitlets' loader), with COURSE_HUB_* = env."""
    from traitlets.config.loader import PyFileConfigLoader

    for name in [k for k in os.environ if k.startswith("COURSE_HUB_")]:
        monkeypatch.delenv(name)
    (tmp_path / "students.txt").write_text(roster)
    monkeypatch.setenv("COURSE_HUB_ROSTER", str(tmp_path / "students.txt"))
    monkeypatch.setenv("COURSE_HUB_DATA_DIR", str(tmp_path))
    for name, value in env.items():
        monkeypatch.setenv(f"COURSE_HUB_{name}", value)
    return PyFileConfigLoader("jupyterhub_config.py", str(REPO / "deploy")).load_config()


class _FakeSpawner:
    """What the config's callables read from a spawner: the user's name, a log, a home."""
    def __init__(self, name: str, home: str = ""):
        import logging

        self.user, self.log, self.home_dir = type("User", (), {"name": name})(), logging.getLogger("test"), home


def test_the_docker_config_gives_each_container_only_its_device_and_the_limits(monkeypatch, tmp_path):
    c = _load_config(monkeypatch, tmp_path, DEVICES=",".join([MIG0, MIG1, GPU1]), MEM_LIMIT="6G", CPU_LIMIT="3",
                     AUTHENTICATOR="pam")
    assert c.JupyterHub.spawner_class == "docker" and c.JupyterHub.authenticator_class == "pam"
    assert c.Authenticator.allowed_users == {"alice", "bob", "carol"}
    assert c.JupyterHub.bind_url == "http://127.0.0.1:8000", "loopback unless told otherwise"
    assert c.JupyterHub.cookie_secret_file == str(tmp_path / "jupyterhub_cookie_secret")
    assert (c.Spawner.mem_limit, c.Spawner.cpu_limit) == ("6G", 3.0)
    assert c.DockerSpawner.cmd == ["jupyterhub-singleuser"] and c.DockerSpawner.image == "gpu-course"
    visible = c.Spawner.environment["CUDA_VISIBLE_DEVICES"]
    assert [visible(_FakeSpawner(u)) for u in ("alice", "bob", "carol", "mallory")] == [MIG0, GPU1, MIG1, ""]
    host = c.DockerSpawner.extra_host_config(_FakeSpawner("carol"))
    assert host["device_requests"] == [{"Driver": "nvidia", "DeviceIDs": [MIG1], "Capabilities": [["gpu"]]}]
    assert host["shm_size"] == "2g"
    assert "device_requests" not in c.DockerSpawner.extra_host_config(_FakeSpawner("mallory")), "no GPU off the roster"


def test_the_systemd_config_runs_the_shared_venv_on_each_students_own_copy(monkeypatch, tmp_path):
    c = _load_config(monkeypatch, tmp_path, "alice\nbob\n", SPAWNER="systemd", DEVICES="none",
                     COURSE="/opt/gpu-course", AUTHENTICATOR="pam")
    assert c.JupyterHub.spawner_class == "systemd" and c.SystemdSpawner.isolate_tmp is True
    assert c.Spawner.cmd == ["/opt/gpu-course/.venv/bin/jupyterhub-singleuser"]
    assert "CUDA_VISIBLE_DEVICES" not in c.Spawner.environment, "a CPU-only class leaves it unset"
    assert c.Spawner.environment["PYTHONPATH"](_FakeSpawner("alice", "/home/alice")) == "/home/alice/course"
    with pytest.raises(ValueError, match="bob is pinned to .* not among the devices: none"):
        _load_config(monkeypatch, tmp_path, f"alice\nbob {GPU1}\n", DEVICES="none", AUTHENTICATOR="pam")


def test_the_default_authenticator_says_what_to_install(monkeypatch, tmp_path):
    import importlib.util

    if importlib.util.find_spec("nativeauthenticator") is not None:
        c = _load_config(monkeypatch, tmp_path, DEVICES="none", roster="alice\n")
        assert c.JupyterHub.authenticator_class == "native" and c.JupyterHub.template_paths
    else:
        with pytest.raises(SystemExit, match="pip install jupyterhub-nativeauthenticator"):
            _load_config(monkeypatch, tmp_path, DEVICES="none", roster="alice\n")


# --- a real JupyterHub ---------------------------------------------------------------------------

def _proxy() -> Path:
    stamp = REPO / "build" / "web" / "node_modules" / ".package-lock.json"
    fresh = stamp.exists() and stamp.stat().st_mtime >= (REPO / "package-lock.json").stat().st_mtime
    if not (fresh and CHP.exists()) and shutil.which("npm") and shutil.which("make"):
        subprocess.run(["make", "build/web/node_modules/.package-lock.json"], cwd=REPO, check=True,
                       capture_output=True, timeout=300)
    if not CHP.exists():
        missing_tool(f"{CHP} not found: needs Node.js and npm (`make build/web/node_modules/.package-lock.json`)")
    return CHP


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _family(pid: int) -> set[int]:
    import psutil

    try:
        return {pid} | {c.pid for c in psutil.Process(pid).children(recursive=True)}
    except psutil.NoSuchProcess:
        return set()


def _read_proc(pid: int, what: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/{what}").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return b""


def _environ(pid: int) -> dict[str, str]:
    pairs = (kv.split(b"=", 1) for kv in _read_proc(pid, "environ").split(b"\0") if b"=" in kv)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


def _stop(proc: subprocess.Popen, family: set[int]) -> None:
    """SIGTERM the hub (it stops the servers and the proxy it started), then SIGKILL whatever is left."""
    import psutil

    family = family | _family(proc.pid)
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
    alive = [p for p in (_process(pid) for pid in family) if p is not None]
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=20)
    if proc.poll() is None:
        proc.wait(timeout=10)


def _process(pid: int):
    import psutil

    try:
        p = psutil.Process(pid)
        return None if p.status() == psutil.STATUS_ZOMBIE else p
    except psutil.NoSuchProcess:
        return None


def _code_cells(nb_path: Path) -> list[str]:
    """The lesson's code, as papermill runs it at SMOKE: the parameters cell, then `SMOKE = True`."""
    cells = json.loads(nb_path.read_text())["cells"]
    code = []
    for cell in cells:
        if cell["cell_type"] == "code":
            code.append("".join(cell["source"]))
            if "parameters" in cell["metadata"].get("tags", []):
                code.append("SMOKE = True")
    return code


def _execute(ws, code: str, timeout: float) -> tuple[str, list[dict]]:
    """Run `code` in the kernel behind websocket `ws`: (reply status, its iopub outputs)."""
    msg_id = uuid.uuid4().hex
    ws.send(json.dumps({
        "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test", "session": uuid.uuid4().hex,
                   "date": "", "version": "5.3"},
        "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
        "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                    "allow_stdin": False, "stop_on_error": True},
    }))
    outputs, status, idle = [], None, False
    deadline = time.monotonic() + timeout
    while status is None or not idle:
        ws.settimeout(max(0.1, deadline - time.monotonic()))
        msg = json.loads(ws.recv())
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind = msg["msg_type"]
        if msg["channel"] == "shell" and kind == "execute_reply":
            status = msg["content"]["status"]
        elif kind == "status":
            idle = msg["content"]["execution_state"] == "idle"
        elif kind in ("stream", "error", "execute_result", "display_data"):
            outputs.append(msg["content"] | {"msg_type": kind})
    return status, outputs


def _run_lesson_00(base: str, user: str, token: str, results: dict) -> None:
    """In `user`'s own server: a session for lesson 00, its code cell by cell, then the environment probe."""
    import requests
    import websocket

    auth = {"Authorization": f"token {token}"}
    r = requests.post(f"{base}/user/{user}/api/sessions", headers=auth, timeout=60,
                      json={"path": "notebooks/00_environment_check.ipynb", "type": "notebook", "name": "",
                            "kernel": {"name": "python3"}})
    assert r.status_code == 201, r.text
    kernel = r.json()["kernel"]["id"]
    ws = websocket.create_connection(f"{base.replace('http', 'ws', 1)}/user/{user}/api/kernels/{kernel}/channels",
                                     header=[f"Authorization: token {token}"], timeout=60)
    try:
        cells = []
        for code in _code_cells(LESSON_00):
            status, outputs = _execute(ws, code, timeout=120)
            cells.append((code, status, outputs))
            if status != "ok":
                break
        probe = ("import json, os, course_utils\nprint(json.dumps({'cwd': os.getcwd(), 'course_utils': course_utils.__file__,"
                 " **{k: os.environ.get(k) for k in ('CUDA_VISIBLE_DEVICES', 'MEM_LIMIT', 'CPU_LIMIT', 'HOME')}}))")
        status, outputs = _execute(ws, probe, timeout=60)
        assert status == "ok", outputs
        results[user] = {"cells": cells, "env": json.loads(outputs[-1]["text"])}
    finally:
        ws.close()


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="needs /proc")
def test_jupyterhub_gives_two_students_their_own_gpu_and_runs_lesson_00_for_each(tmp_path):
    if not (VENV_BIN / "jupyterhub").exists() or not (VENV_BIN / "jupyterhub-singleuser").exists():
        missing_tool(f"jupyterhub is not installed in {VENV_BIN} (pip install -e '.[test]')")
    import requests

    chp = _proxy()
    started = time.monotonic()
    password = uuid.uuid4().hex  # a shared password, for the test only: it travels in the environment
    public, hub_port, proxy_api = _free_ports(3)
    base = f"http://127.0.0.1:{public}"
    fake_bin = tmp_path / "bin"
    _fake_nvidia_smi(fake_bin)
    (tmp_path / "students.txt").write_text("alice\nbob\n")
    expected = course_hub.assign_devices(course_hub.parse_roster("alice\nbob\n"), course_hub.parse_nvidia_smi_list(LISTING))
    assert expected == {"alice": MIG0, "bob": MIG1}
    # Each student's home holds their own copy of the course, as `git clone` would make it.
    for user in expected:
        course = tmp_path / "homes" / user / "course"
        shutil.copytree(REPO / "course_utils", course / "course_utils", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(REPO / "results", course / "results")
        (course / "notebooks").mkdir()
        shutil.copy(LESSON_00, course / "notebooks")
    config = tmp_path / "test_config.py"
    config.write_text(f"""\
import os
load_subconfig({str(REPO / 'deploy' / 'jupyterhub_config.py')!r})
# What a test machine lacks: a real authenticator, root/Docker/systemd for a real spawner.
c.SharedPasswordAuthenticator.user_password = os.environ["COURSE_HUB_TEST_PASSWORD"]
c.JupyterHub.spawner_class = "jupyterhub.spawner.SimpleLocalProcessSpawner"
c.SimpleLocalProcessSpawner.home_dir_template = {str(tmp_path / 'homes' / '{username}')!r}
c.JupyterHub.hub_bind_url = "http://127.0.0.1:{hub_port}"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api}"
c.ConfigurableHTTPProxy.command = [{str(chp)!r}]
c.JupyterHub.tornado_settings = {{"slow_spawn_timeout": 0}}  # answer 202 at once: both servers start together
if os.geteuid() == 0:  # CI containers run as root; Jupyter Server refuses to without this
    c.Spawner.args = ["--allow-root"]
""")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "CONFIGPROXY", "COURSE_HUB", "PYTHONPATH"))}
    env.update({
        "PATH": f"{fake_bin}:{VENV_BIN}:{env['PATH']}", "COURSE_HUB_TEST_PASSWORD": password,
        "COURSE_HUB_ROSTER": str(tmp_path / "students.txt"), "COURSE_HUB_DATA_DIR": str(tmp_path),
        "COURSE_HUB_SPAWNER": "systemd", "COURSE_HUB_VENV": str(VENV_BIN.parent),
        "COURSE_HUB_AUTHENTICATOR": "shared-password", "COURSE_HUB_BIND_URL": base,
        "COURSE_HUB_MEM_LIMIT": "3G", "COURSE_HUB_CPU_LIMIT": "1",
        "COURSE_PROGRESS": "0", "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
    })
    log = tmp_path / "hub.log"
    with open(log, "wb") as out:
        hub = subprocess.Popen([str(VENV_BIN / "jupyterhub"), "-f", str(config)], cwd=tmp_path, env=env,
                               stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    family: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while True:
            assert hub.poll() is None, f"jupyterhub exited:\n{log.read_text()[-3000:]}"
            try:
                if requests.get(f"{base}/hub/api", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            assert time.monotonic() < deadline, f"jupyterhub did not answer:\n{log.read_text()[-3000:]}"
            time.sleep(0.3)
        family |= _family(hub.pid)
        phases = {"hub up": time.monotonic()}

        # Log in through the login form: a wrong password is refused, the right one gets a session.
        sessions, tokens = {}, {}
        for user in expected:
            s = requests.Session()
            s.get(f"{base}/hub/login", timeout=10).raise_for_status()
            form = {"username": user, "password": "wrong-" + password, "_xsrf": s.cookies["_xsrf"]}
            assert s.post(f"{base}/hub/login", data=form, allow_redirects=False, timeout=10).status_code == 403
            r = s.post(f"{base}/hub/login", data=form | {"password": password}, allow_redirects=False, timeout=10)
            assert r.status_code == 302 and "jupyterhub-hub-login" in s.cookies, (r.status_code, r.text[:300])
            # A token of one's own for the API, asked for with the login cookie (and its XSRF token).
            r = s.post(f"{base}/hub/api/users/{user}/tokens", json={"note": "test", "expires_in": 600},
                       headers={"X-XSRFToken": s.cookies["_xsrf"]}, timeout=10)
            assert r.status_code == 201, r.text
            sessions[user], tokens[user] = s, r.json()["token"]
        assert requests.get(f"{base}/hub/api/users/bob", headers={"Authorization": f"token {tokens['alice']}"},
                            timeout=10).status_code == 404, "a student cannot see another student"
        # Both servers at once, through the REST API.
        for user, token in tokens.items():
            r = requests.post(f"{base}/hub/api/users/{user}/server", headers={"Authorization": f"token {token}"}, timeout=30)
            assert r.status_code in (201, 202), r.text
        deadline = time.monotonic() + 90
        for user, token in tokens.items():
            while not requests.get(f"{base}/hub/api/users/{user}", headers={"Authorization": f"token {token}"},
                                   timeout=10).json()["servers"].get("", {}).get("ready"):
                assert time.monotonic() < deadline, f"{user}'s server did not start:\n{log.read_text()[-3000:]}"
                time.sleep(0.3)
        phases["both servers ready"] = time.monotonic()
        status = requests.get(f"{base}/user/bob/api/status", headers={"Authorization": f"token {tokens['alice']}"},
                              allow_redirects=False, timeout=10).status_code
        assert status == 403, f"alice's token opened bob's server ({status})"

        # Lesson 00 in each student's server, both at once.
        results: dict = {}
        errors: list[BaseException] = []

        def run(user):
            try:
                _run_lesson_00(base, user, tokens[user], results)
            except BaseException as err:  # reported below, in the test's thread
                errors.append(err)

        threads = [threading.Thread(target=run, args=(u,)) for u in tokens]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=240)
        family |= _family(hub.pid)
        phases["lesson 00 run in both"] = time.monotonic()
        assert not errors, errors
        for user, device in expected.items():
            cells, seen = results[user]["cells"], results[user]["env"]
            bad = [(code[:60], o) for code, status, outs in cells for o in outs
                   if status != "ok" or o["msg_type"] == "error" or o.get("name") == "stderr"]
            assert not bad, f"{user}: lesson 00 printed errors: {bad[:3]}"
            assert len(cells) == len(_code_cells(LESSON_00)) and all(s == "ok" for _, s, _ in cells)
            printed = "".join(o.get("text", "") for _, _, outs in cells for o in outs)
            assert "checklist complete: no check that applies here failed" in printed
            home = tmp_path / "homes" / user
            assert seen["CUDA_VISIBLE_DEVICES"] == device, (user, seen)
            assert (seen["MEM_LIMIT"], seen["CPU_LIMIT"]) == (str(3 * 1024**3), "1.0"), seen
            assert seen["HOME"] == str(home) and seen["cwd"] == str(home / "course" / "notebooks")
            assert seen["course_utils"] == str(home / "course" / "course_utils" / "__init__.py"), "the student's own copy"

        # No secret on any command line: the password, the students' tokens, the proxy's token, the servers' tokens.
        secrets = {password, *tokens.values()}
        for pid in family:
            environ = _environ(pid)
            secrets |= {environ[k] for k in ("CONFIGPROXY_AUTH_TOKEN", "JUPYTERHUB_API_TOKEN") if environ.get(k)}
        kinds = {k for pid in family for k in ("CONFIGPROXY_AUTH_TOKEN", "JUPYTERHUB_API_TOKEN") if _environ(pid).get(k)}
        assert kinds == {"CONFIGPROXY_AUTH_TOKEN", "JUPYTERHUB_API_TOKEN"}, "the proxy and the servers were seen"
        cmdlines = {pid: _read_proc(pid, "cmdline") for pid in family}
        assert sum(b"jupyterhub-singleuser" in c for c in cmdlines.values()) == 2
        assert sum(b"ipykernel" in c for c in cmdlines.values()) == 2
        assert any(b"configurable-http-proxy" in c for c in cmdlines.values())
        for pid, cmdline in cmdlines.items():
            for secret in secrets:
                assert secret.encode() not in cmdline, f"a secret in the argv of pid {pid}: {cmdline!r}"
        cookie_secret = tmp_path / "jupyterhub_cookie_secret"
        assert stat.S_IMODE(cookie_secret.stat().st_mode) == 0o600
    finally:
        _stop(hub, family)
    assert hub.poll() is not None
    assert not [pid for pid in family if _process(pid) is not None], "every process the hub started has ended"
    phases["everything stopped"] = time.monotonic()
    print("two students, lesson 00 each:", ", ".join(f"{k} at {t - started:.1f} s" for k, t in phases.items()))
