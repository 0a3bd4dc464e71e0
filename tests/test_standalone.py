"""A lesson opened alone sets itself up: the package carries everything, the install cell is generated
from one setting, the Colab/Kaggle links agree with pyproject.toml, and (slow) every lesson, copied
alone into an empty folder of a fresh venv that has only torch and ipykernel, installs the wheel and
passes at SMOKE size showing the shipped CPU reference."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import standalone  # noqa: E402

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

LESSONS = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
LINK = re.compile(r"https://(?:colab\.research\.google\.com/github/|kaggle\.com/kernels/welcome\?src=https://github\.com/)"
                  r"([^/\s)]+)/([^/\s)]+)/blob/([^/\s)]+)/")


def test_the_generated_parts_are_up_to_date():
    """README, install cells, title links and compare cells are what tools/standalone.py writes."""
    assert standalone.main([]) == 0, "run: python tools/standalone.py --write"


def test_every_link_points_at_the_configured_repository():
    cfg = standalone.settings()
    texts = [(REPO / "README.md").read_text(encoding="utf-8")] + [p.read_text(encoding="utf-8") for p in LESSONS]
    found = {m.groups() for text in texts for m in LINK.finditer(text)}
    if cfg["url"] is None:
        assert not found, "pyproject names no repository, so no Colab/Kaggle link may exist"
    else:
        owner, name = standalone.GITHUB.match(cfg["url"]).groups()
        assert found == {(owner, name, cfg["ref"])}


def _copy(tmp_path: Path, url: str | None) -> Path:
    root = tmp_path / "repo"
    (root / "notebooks").mkdir(parents=True)
    for p in LESSONS:
        shutil.copy(p, root / "notebooks" / p.name)
    shutil.copy(REPO / "README.md", root / "README.md")
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    if url:
        text = re.sub(r"(?m)^\[project\.optional-dependencies\]", f'[project.urls]\nRepository = "{url}"\n\n\\g<0>', text)
    (root / "pyproject.toml").write_text(text, encoding="utf-8")
    return root


def test_a_published_copy_gets_links_that_agree_everywhere(tmp_path, capsys):
    # A repository URL that exists only in this temporary copy: nothing committed points at it.
    root = _copy(tmp_path, "https://github.com/course-owner/gpu-course")
    assert standalone.main(["--write", "--root", str(root)]) == 0
    assert standalone.main(["--root", str(root)]) == 0, "after --write nothing is out of date"
    standalone.main(["--write", "--root", str(root)])
    assert "rewrote 0 file(s)" in capsys.readouterr().out.splitlines()[-1], "idempotent"
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    blob = f"course-owner/gpu-course/blob/v{version}"
    readme = (root / "README.md").read_text(encoding="utf-8")
    for path in LESSONS:
        nb = nbformat.read(root / "notebooks" / path.name, as_version=4)
        title = nb.cells[0].source.splitlines()
        assert title[2] == (f"[Open in Colab](https://colab.research.google.com/github/{blob}/notebooks/{path.name}) · "
                            f"[Open in Kaggle](https://kaggle.com/kernels/welcome?src=https://github.com/{blob}/notebooks/{path.name})")
        assert f"[Colab](https://colab.research.google.com/github/{blob}/notebooks/{path.name})" in readme
        install = nb.cells[1]
        assert f'"course-utils @ git+https://github.com/course-owner/gpu-course@v{version}"' in install.source
        assert nb.metadata["accelerator"] == "GPU" and nb.metadata["colab"]["gpuType"] == "T4"
    spec = __import__("importlib.util").util.spec_from_file_location("site_tool", REPO / "tools" / "site.py")
    site_tool = __import__("importlib.util").util.module_from_spec(spec)
    spec.loader.exec_module(site_tool)
    site_tool.REPO = root
    rows = site_tool.readme_table()
    assert len(rows) == len(LESSONS) and "[Colab]" not in rows["02"][1], "the site still reads the lesson table"
    # Unpublishing again removes every link.
    (root / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text(encoding="utf-8"), encoding="utf-8")
    standalone.main(["--write", "--root", str(root)])
    assert not LINK.search((root / "README.md").read_text()) and not any(
        LINK.search(p.read_text()) for p in (root / "notebooks").glob("*.ipynb"))


def test_a_repository_that_is_not_on_github_is_refused(tmp_path):
    root = _copy(tmp_path, "https://gitlab.com/someone/course")
    with pytest.raises(SystemExit, match="expected https://github.com/OWNER/NAME"):
        standalone.main(["--root", str(root)])


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_the_install_cell_comes_first_and_is_short(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].id == standalone.INSTALL_ID and "parameters" in code[1].metadata.get("tags", [])
    assert len(code[0].source.splitlines()) <= 20
    assert code[0].metadata["slideshow"]["slide_type"] == "skip" and not code[0].outputs
    assert "torch==" in code[0].source, "pip is pinned to the torch that is installed"


def test_the_package_lists_every_subpackage_and_carries_the_cards():
    tool = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    subpackages = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "course_utils").rglob("__init__.py")}
    assert subpackages <= set(tool["packages"]), f"pyproject.toml [tool.setuptools] packages misses {subpackages - set(tool['packages'])}"
    assert tool["package-dir"]["course_utils.results"] == "results"
    assert tool["package-data"]["course_utils.results"] == ["*.json"]


# ---------------------------------------------------------------------------------------------------
# The real thing: a wheel, a fresh venv, each lesson alone in an empty folder.

def _torch_requirement() -> list[str]:
    """The torch the Makefile installs here (`make help` prints its choice): a wheel file or a spec + index."""
    out = subprocess.run(["make", "-s", "-C", str(REPO), "help"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"-> installs '([^']+)' from '([^']*)'", out)
    assert m, out
    spec, index = m.groups()
    return [spec] + ([] if index == "default pip sources" else ["--index-url", index, "--extra-index-url", "https://pypi.org/simple"])


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The course's wheel, built from a clean copy of the files a wheel is made of (no stale build/)."""
    src, dist = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("dist")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    for name in ("course_utils", "results"):
        shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    proc = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(src)])
    assert proc.returncode == 0, proc.stderr
    (whl,) = dist.glob("course_utils-*.whl")
    return whl


@pytest.mark.slow
def test_the_wheel_holds_every_module_and_the_results_cards(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for path in (REPO / "course_utils").rglob("*.py"):
        assert path.relative_to(REPO).as_posix() in names, f"{path.relative_to(REPO)} is not in the wheel"
    for path in (REPO / "results").glob("*.json"):
        assert f"course_utils/results/{path.name}" in names, f"results/{path.name} is not in the wheel"


@pytest.mark.slow
def test_every_lesson_opened_alone_installs_the_wheel_and_runs(wheel, tmp_path):
    t0 = time.perf_counter()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COURSE_", "PYTHONPATH", "MPLBACKEND", "JPY_"))}
    install = nbformat.read(LESSONS[0], as_version=4).cells[1].source

    # No torch: one clear sentence, nothing installed.
    proc = _run([py, "-c", install], env={**env, "COURSE_UTILS_SOURCE": str(wheel)}, cwd=tmp_path)
    assert proc.returncode == 1 and "RuntimeError: This lesson needs PyTorch (torch >= 2.4)" in proc.stderr

    # What Colab or Kaggle has before the course: torch (the Makefile's build) and a Jupyter kernel.
    pip = [py, "-m", "pip", "install", "-q", "--no-compile", "--disable-pip-version-check"]
    subprocess.run(pip + _torch_requirement() + ["ipykernel"], check=True, env=env)
    print(f"\nwheel test: venv, torch and ipykernel in {time.perf_counter() - t0:.0f} s", flush=True)
    which_torch = [py, "-m", "pip", "list", "--format=freeze"]
    torch_before = [line for line in _run(which_torch).stdout.splitlines() if line.startswith("torch==")]
    setup_s = time.perf_counter() - t0

    # The package cannot be fetched (offline, a wrong source): one sentence saying what to run.
    proc = _run([py, "-c", install], env={**env, "PIP_NO_INDEX": "1", "COURSE_UTILS_SOURCE": str(tmp_path / "nowhere.whl")},
                cwd=tmp_path)  # not the repository: `python -c` imports from the current folder
    assert proc.returncode == 1 and "Could not install the course's helpers" in proc.stderr
    assert f"%pip install '{tmp_path / 'nowhere.whl'}'" in proc.stderr

    jupyter = tmp_path / "jupyter"
    (jupyter / "kernels" / "fresh").mkdir(parents=True)
    (jupyter / "kernels" / "fresh" / "kernel.json").write_text(json.dumps(
        {"argv": [py, "-m", "ipykernel_launcher", "-f", "{connection_file}"], "display_name": "fresh", "language": "python"}))
    env.update({"JUPYTER_PATH": str(jupyter), "COURSE_PROGRESS": "0", "COURSE_UTILS_SOURCE": str(wheel)})

    def lesson(path: Path, offline: bool) -> tuple[str, float, str]:
        folder = tmp_path / path.stem
        folder.mkdir()
        shutil.copy(path, folder / path.name)
        t = time.perf_counter()
        proc = _run([sys.executable, "-m", "papermill", path.name, "out.ipynb", "-k", "fresh", "-p", "SMOKE", "True",
                     "--no-progress-bar"], cwd=folder, env={**env, **({"PIP_NO_INDEX": "1"} if offline else {})})
        return path.stem, time.perf_counter() - t, proc.stderr[-3000:] if proc.returncode else ""

    # The first lesson installs the wheel; the others find it installed (and never reach pip: no index).
    times = dict([lesson(LESSONS[0], offline=False)[:2]])  # includes installing the wheel and its dependencies
    assert (tmp_path / LESSONS[0].stem / "out.ipynb").exists()
    after = [line for line in _run(which_torch).stdout.splitlines() if line.startswith("torch==")]
    assert after == torch_before and torch_before, f"installing the course changed torch: {torch_before} -> {after}"
    install_s = times[LESSONS[0].stem]
    print(f"wheel test: lesson 00 with the install in {install_s:.0f} s", flush=True)
    assert "Location: " + str(venv) in _run([py, "-m", "pip", "show", "course-utils"]).stdout
    # One at a time: run in pairs, lesson 02's own check of its epoch model (within 20 % on a CPU) failed.
    results = [lesson(p, offline=True) for p in LESSONS[1:]]
    failed = {name: err for name, _, err in results if err}
    assert not failed, "\n\n".join(f"{n}:\n{e}" for n, e in failed.items())
    times.update({name: s for name, s, _ in results})

    for path in LESSONS:
        out = nbformat.read(tmp_path / path.stem / "out.ipynb", as_version=4)
        heading = next(i for i, c in enumerate(out.cells) if "This machine vs the references" in c.source)
        cell = next(c for c in out.cells[heading:] if c.cell_type == "code" and "compare(" in c.source)
        shown = "".join(o.get("data", {}).get("text/plain", "") for o in cell.outputs)
        assert re.search(r"^cpu-ci: CPU", shown, re.M) and "cpu-ci" in shown.splitlines()[0], \
            f"{path.stem}: the shipped CPU reference is not shown:\n{shown[:1500]}"
        assert not (tmp_path / path.stem / "build").exists(), f"{path.stem} wrote outside its scratch folder"
    total = time.perf_counter() - t0
    print(f"\nwheel test: venv + torch + ipykernel {setup_s:.0f} s, lesson 00 with the install {install_s:.0f} s, lessons "
          + ", ".join(f"{n[:2]} {s:.0f} s" for n, s in sorted(times.items())) + f"; total {total:.0f} s")
