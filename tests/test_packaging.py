"""Setup files agree with each other and are safe: pyproject, environment.yml, Dockerfile, Makefile."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
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


def test_dockerfile_installs_from_pyproject_on_a_cuda_pytorch_base():
    text = (REPO / "Dockerfile").read_text()
    base = re.search(r"^FROM\s+pytorch/pytorch:(\d+)\.(\d+)\.\d+-cuda[\d.]+-cudnn\d+-runtime\s*$", text, re.M)
    assert base, "base image: an official PyTorch CUDA runtime image with a pinned tag"
    assert (int(base.group(1)), int(base.group(2))) >= (2, 4), "base image torch must satisfy torch>=2.4"
    assert re.search(r'pip install -e "\.\[lab,test\]"', text), "dependencies must come from pyproject.toml"
    assert re.search(r"^USER\s+(?!0\b|root\b)\S+", text, re.M), "must run as a non-root user"
    assert re.search(r"^HEALTHCHECK\s", text, re.M) and re.search(r"^EXPOSE\s+8888\b", text, re.M)


def test_dockerfile_passes_hadolint():
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).with_name("hadolint"))
    result = subprocess.run([hadolint, str(REPO / "Dockerfile")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def _fake_jupyter(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "jupyter"
    fake.write_text('#!/bin/sh\nfor a in "$@"; do echo "ARG $a"; done\n')
    fake.chmod(0o755)
    py = bin_dir / "python"
    py.symlink_to(sys.executable)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


@pytest.mark.parametrize("token", ["", None])
def test_container_entrypoint_never_starts_without_a_token(tmp_path, token):
    env = _fake_jupyter(tmp_path)
    env.pop("JUPYTER_TOKEN", None)
    if token is not None:
        env["JUPYTER_TOKEN"] = token
    out = subprocess.run(["sh", str(REPO / "tools" / "docker-entrypoint.sh")], env=env, capture_output=True, text=True, check=True).stdout
    given = re.search(r"ARG --IdentityProvider\.token=(\S*)", out).group(1)
    assert len(given) >= 32


def test_container_entrypoint_uses_the_given_token(tmp_path):
    env = {**_fake_jupyter(tmp_path), "JUPYTER_TOKEN": "s3cret-token"}
    out = subprocess.run(["sh", str(REPO / "tools" / "docker-entrypoint.sh")], env=env, capture_output=True, text=True, check=True).stdout
    assert "ARG --IdentityProvider.token=s3cret-token" in out and "ARG --ip=0.0.0.0" in out


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


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_respects_explicit_torch_choices():
    out = _make_dry_run("setup", {"PIP_CONFIG_FILE": os.devnull}, "TORCH_SPEC=torch==2.13.0", "TORCH_INDEX=")
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


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_lab_always_sets_a_token():
    out = _make_dry_run("lab", {})
    assert "--IdentityProvider.token=" in out and "secrets.token_hex" in out


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    assert "make test" in readme and "make lab" in readme
    assert "make test" in (REPO / ".ci" / "run").read_text()
    wf = yaml.safe_load((REPO / ".github" / "workflows" / "ci.yml").read_text())
    steps = "\n".join(s.get("run", "") for job in wf["jobs"].values() for s in job["steps"])
    assert "make test" in steps and "DEVICE=cuda" in steps
