"""A lesson opened alone sets itself up: the package carries everything, the install cell is generated
from one setting, the Colab/Kaggle links agree with pyproject.toml, and (slow) every lesson, copied
alone into an empty folder of a fresh venv that has only torch, ipykernel and what Colab's image
carries, installs the wheel and runs headless at its default size: every cell shows the outputs
stored in the repository (nbval's comparison, nbval's sanitize file), every exercise template fails
its check in strict mode and every solution passes, the results tests/expected/ names are recorded,
and the shipped CPU reference is shown. This is the course's one execution of each lesson in `make
test` (`make nbval` runs nbval itself on notebooks/; `make run SMOKE=1` the SMOKE sizes)."""
from __future__ import annotations

import functools
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import NamedTuple

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import standalone  # noqa: E402

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from course_utils.paths import all_notebooks, core_notebooks, notebook_key, zh_notebooks  # noqa: E402

LESSONS = core_notebooks(REPO / "notebooks")
# The Chinese lessons run the English lessons' code (tools/zh.py compares them statement by statement), and
# their stored outputs must agree with the English ones (tests/test_zh.py), which all run live here. Live
# too, in `make test`: the Chinese lessons named in COURSE_ZH_LIVE (default 00: its install cell, exercise
# feedback, predictions, compare table and missing-GPU line are every kind of message course_utils
# translates). All twelve ran live on the CI machine in 200 s of worker time, which the 480 s budget does
# not hold; `make test-zh` runs all of them (COURSE_ZH_LIVE=all).
_ZH_LIVE = os.environ.get("COURSE_ZH_LIVE", "00").split()
CHINESE = [p for p in zh_notebooks(REPO / "notebooks") if "all" in _ZH_LIVE or p.name[:2] in _ZH_LIVE]
EVERY = all_notebooks(REPO / "notebooks") + CHINESE  # cores, deeper, Chinese cores
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


@pytest.mark.parametrize("path", EVERY, ids=notebook_key)
def test_the_install_cell_comes_first_and_is_short(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].id == standalone.INSTALL_ID and "parameters" in code[1].metadata.get("tags", [])
    assert len(code[0].source.splitlines()) <= 8, "the install cell is plumbing: at most 8 lines"
    assert code[0].metadata["slideshow"]["slide_type"] == "skip" and not code[0].outputs
    assert code[0].metadata["jupyter"]["source_hidden"], "hidden in JupyterLab: the lesson starts with its story"
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


@pytest.fixture(scope="session")
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


def _installer(py: str) -> list[str]:
    """uv when this venv has it (``make setup`` puts it there: it links the files from the cache the
    course's own install just filled), else pip. Neither compiles bytecode ahead: compiling all of torch
    took 19 s of CPU, while the kernels of the fresh venv write the bytecode of what they import
    (``fresh`` lifts PYTHONDONTWRITEBYTECODE, which the CI machine sets), ~1.3 s once for ``import torch``."""
    uv = Path(sys.executable).parent / "uv"
    if uv.exists():
        return [str(uv), "pip", "install", "--python", py, "-q"]
    return [py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-compile"]


def _runtime_dependencies() -> list[str]:
    """What the wheel requires besides torch (Colab and Kaggle images have these preinstalled)."""
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    return [d for d in deps if not re.match(r"torch\b", d)]


def test_without_torch_the_install_cell_says_so_and_installs_nothing(wheel, tmp_path):
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    install = nbformat.read(LESSONS[0], as_version=4).cells[1].source
    proc = _run([str(venv / "bin" / "python"), "-c", install], env={**_clean_env(), "COURSE_UTILS_SOURCE": str(wheel)},
                cwd=tmp_path)
    assert proc.returncode == 1 and "RuntimeError: This lesson needs PyTorch (torch >= 2.4)" in proc.stderr, proc.stderr
    assert not list(venv.rglob("course_utils")), "nothing may be installed"


def _clean_env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith(("COURSE_", "PYTHONPATH", "MPLBACKEND", "JPY_"))}


class Fresh(NamedTuple):
    py: str                                # the fresh venv's python
    env: dict                              # the kernel's environment
    root: Path                             # the folder holding the venv and the lessons' folders
    torch_version: str                     # torch as installed, before any lesson ran
    probe: subprocess.CompletedProcess     # the install cell, run before any lesson, with nothing to fetch
    unreachable: Path                      # the source that probe was given


@pytest.fixture(scope="session")
def fresh(wheel, tmp_path_factory):
    """A fresh venv with what Colab or Kaggle has before the course: torch (the Makefile's build), a
    Jupyter kernel and the packages their images carry; the course itself is not installed. One per
    pytest worker (session scope: the lessons it runs are spread over the workers, and a module fixture
    would be rebuilt whenever another file's tests ran in between). Its kernel spec is 'fresh' (JUPYTER_PATH)."""
    t0 = time.perf_counter()
    root = tmp_path_factory.mktemp("fresh")
    venv = root / "venv"
    uv = Path(sys.executable).parent / "uv"
    # A venv with pip, as Colab's and Kaggle's have: uv makes it in a fraction of a second (its pip from
    # the cache `make setup` filled), `python -m venv` in about 3 s of CPU (ensurepip).
    subprocess.run([str(uv), "venv", "--seed", "-q", "--python", sys.executable, str(venv)] if uv.exists()
                   else [sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    env = _clean_env()
    # As on Colab, Kaggle and most machines, Python writes the bytecode of what it imports (see _installer).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run(_installer(py) + _torch_requirement() + ["ipykernel"] + _runtime_dependencies(), check=True, env=env)
    jupyter = root / "jupyter"
    (jupyter / "kernels" / "fresh").mkdir(parents=True)
    (jupyter / "kernels" / "fresh" / "kernel.json").write_text(json.dumps(
        {"argv": [py, "-m", "ipykernel_launcher", "-f", "{connection_file}"], "display_name": "fresh", "language": "python"}))
    # PIP_NO_INDEX: the wheel is a local file and its dependencies are there, so a lesson never reaches an index.
    env.update({"JUPYTER_PATH": str(jupyter), "COURSE_PROGRESS": "0", "COURSE_UTILS_SOURCE": str(wheel), "PIP_NO_INDEX": "1"})
    torch_version = _installed(py)[1]
    # Before any lesson installs the course here: the install cell with a source that cannot be
    # fetched (test_when_the_package_cannot_be_fetched_... reads the outcome; it cannot be asked for
    # later, once a lesson on this worker has installed the wheel).
    install = nbformat.read(LESSONS[0], as_version=4).cells[1].source
    unreachable = root / "nowhere.whl"
    probe = _run([py, "-c", install], env={**env, "COURSE_UTILS_SOURCE": str(unreachable)}, cwd=root)
    print(f"\nwheel test: venv, torch {torch_version}, ipykernel and the images' packages in {time.perf_counter() - t0:.0f} s")
    return Fresh(py, env, root, torch_version, probe, unreachable)


@pytest.mark.slow
def test_when_the_package_cannot_be_fetched_the_install_cell_says_what_to_run(fresh):
    proc = fresh.probe  # run by the fixture in a folder that is not the repository (`python -c` imports from it)
    assert proc.returncode == 1 and "Could not install the course's helpers" in proc.stderr, proc.stderr
    assert f"%pip install '{fresh.unreachable}'" in proc.stderr


TIME_UNITS = {"s", "ms", "us", "ns"}
# torch 2.13's torch._dynamo, when a kernel that compiled exits after this strict run (its templates
# raised): weakref callbacks delete globals from a namespace already cleared, and Python reports each
# KeyError on stderr. Not the course's line, and not in `make run SMOKE=1`, whose lesson 10 printed nothing
# (checked 2026-12-02); only exactly this block is let through.
TORCH_EXIT_NOISE = re.compile(
    r"Exception ignored in: <function ExactWeakKeyDictionary\.__setitem__\.<locals>\.<lambda> at 0x[0-9a-f]+>\n"
    r"Traceback \(most recent call last\):\n(?:  File \"[^\n]*/torch/_dynamo/utils\.py\", line \d+, in \S+\n)+"
    r"KeyError: '__builtins_dict___\d+'\n")
_WHICH = ("import importlib.metadata as m\ntry:\n    print(m.distribution('course-utils').locate_file(''))\n"
          "except m.PackageNotFoundError:\n    print('-')\nprint(m.version('torch'))")


def _installed(py: str) -> tuple[str, str]:
    """Where the venv's course-utils is installed ('-': not installed) and its torch version, read from
    the packages' metadata (importing torch would take seconds)."""
    where, torch_version = _run([py, "-c", _WHICH], cwd="/").stdout.split()
    return where, torch_version


SANITIZE = REPO / "tests" / "nbval_sanitize.cfg"


@functools.cache  # one parse of nbval's source, not one per lesson
def _nbval_skip_compare() -> tuple[str, ...]:
    """The output keys nbval leaves out of its comparison when nbdime is not used, read from
    ``IPyNbFile.__init__`` (it sets them on the pytest item it builds, which a test outside nbval's
    collection cannot make), so an nbval that changes the list is followed instead of a copy going stale."""
    import ast
    import inspect
    import textwrap

    from nbval.plugin import IPyNbFile

    keys: list[str] = []
    for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(IPyNbFile.__init__)))):
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "self.skip_compare":
            tuples = [t for t in ast.walk(node.value) if isinstance(t, ast.Tuple)]
            keys += ast.literal_eval(tuples[0]) if tuples else ()  # the tuple first named in the assignment
    if "metadata" not in keys or "image/png" not in keys:
        raise RuntimeError(f"nbval's IPyNbFile no longer sets skip_compare as expected (found {keys}): "
                           "update _nbval_skip_compare")
    return tuple(keys)


class _Outputs:
    """nbval's own comparison (nbval.plugin.IPyNbCell.compare_outputs with the sanitize file `make
    nbval` uses), applied to cells this test executes: the same keys skipped (metadata, tracebacks,
    execution counts, images), the same streams merged, the same regexes on both sides."""

    from nbval.plugin import IPyNbCell, nocolors

    colors = nocolors
    compare_outputs = IPyNbCell.compare_outputs
    sanitize = IPyNbCell.sanitize

    def __init__(self):
        from nbval.plugin import get_sanitize_patterns

        self.parent = type("NbFile", (), {"skip_compare": _nbval_skip_compare(),
                                          "sanitize_patterns": dict(get_sanitize_patterns(SANITIZE.read_text()))})

    def format_output_compare(self, key, stored, now) -> None:
        """nbval's own asks pytest's assertion hook, which needs a pytest item: a plain diff instead."""
        import difflib

        self.comparison_traceback.append(f"mismatch in {key!r} (- stored, + now):")
        self.comparison_traceback.extend(difflib.unified_diff(str(stored).splitlines(), str(now).splitlines(), lineterm="", n=1))

    def differ(self, stored, ran) -> str | None:
        """None when ``ran`` (a cell as executed now) shows what ``stored`` (the committed cell) shows,
        else nbval's report. Cells tagged ``nbval-ignore-output`` (or marked by comment) are not
        compared, nor cells never run when stored, exactly as under nbval."""
        import copy

        from nbval.plugin import coalesce_streams, find_comment_markers, find_metadata_tags

        options = dict(find_metadata_tags(stored.metadata))
        options.update(find_comment_markers(stored.source))
        if not options.get("check", True) or stored.execution_count is None:
            return None
        ok = self.compare_outputs(coalesce_streams(copy.deepcopy(ran.outputs)),
                                  coalesce_streams(copy.deepcopy(stored.outputs)))
        return None if ok else "\n".join(self.comparison_traceback)


def test_the_stored_output_comparison_bites_where_nbval_does():
    """The comparison each lesson's run makes: a changed line fails (with a diff), the sanitize file's
    regexes and nbval's tags are honoured, streams are merged as nbval merges them."""
    from nbformat.v4 import new_code_cell, new_output

    def cell(*texts, tags=(), count=1):
        c = new_code_cell("print()", execution_count=count, metadata={"tags": list(tags)})
        c.outputs = [new_output("stream", name="stdout", text=t) for t in texts]
        return c

    outputs = _Outputs()
    assert outputs.differ(cell("loss 0.25\n"), cell("loss 0.25\n")) is None
    report = outputs.differ(cell("loss 0.25\n"), cell("loss 0.26\n"))
    assert report and "-loss 0.25" in report and "+loss 0.26" in report, report
    assert outputs.differ(cell("loss 0.25\n", tags=["nbval-ignore-output"]), cell("loss 0.26\n")) is None
    assert outputs.differ(cell("at 0x7f00aa11bb22\n"), cell("at 0x55d0cc33dd44\n")) is None, "sanitized"
    assert outputs.differ(cell("a\n", "b\n"), cell("a\nb\n")) is None, "streams merged"
    assert outputs.differ(cell("a\n"), cell()) is not None, "a missing output fails"
    assert outputs.differ(cell(count=None), cell("new\n")) is None, "a cell never run when stored is not compared"


def _strict(client, index: int, on: bool) -> None:
    """Switch the kernel's strict exercise checks on or off (read at every check: course_utils.exercises)."""
    from nbformat.v4 import new_code_cell

    cell = client.nb.cells[index]
    value = "'1'" if on else "'0'"
    client.execute_cell(new_code_cell(f"import os; os.environ['COURSE_STRICT_CHECKS'] = {value}"), index, store_history=False)
    client.nb.cells[index] = cell


def _run_lesson(path: Path, folder: Path, env: dict, bite: bool = True):
    """Execute the lesson, alone in ``folder``, at its default size, in the fresh venv's kernel, cell by
    cell, as ``make outputs`` stored it (no parameters injected), and compare every cell with its
    stored outputs as strict nbval does. Exercise checks are strict (``COURSE_STRICT_CHECKS=1``): each
    exercise cell runs as the lesson ships it (answers still ``...``) once with strict checks off,
    compared with its stored outputs, then again with them on, where it must fail with
    ``ExerciseNotPassed`` (the check bites); then its marked solution runs in the same kernel and must
    pass. The cells run are those of ``solutions/<lesson>.ipynb`` (``test_exercises`` checks that file
    is generated from the lesson), plus the templates. ``bite=False`` (a Chinese lesson, whose code and
    solutions are the English lesson's): the templates run with strict checks off and are compared, and
    neither the strict run nor the solution runs again. Returns (executed notebook, ledger dict, indices
    of the exercises that bit, the cells whose outputs differ from the stored ones, what the kernel
    process wrote to its own stdout and stderr)."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    from course_utils.kernels import LocalKernelManager

    nb = nbformat.read(folder / path.name, as_version=4)
    stored = nbformat.read(folder / path.name, as_version=4)
    outputs = _Outputs()
    ledger = folder.parent / f"{folder.name}.ledger.json"
    client = NotebookClient(nb, timeout=600, kernel_name="fresh", resources={"metadata": {"path": str(folder)}},
                            kernel_manager_class=LocalKernelManager)
    bit, differ = [], {}
    # What the kernel process itself writes (not its cells' outputs) is what `make run` would print
    # beside its table: kept in a file, and the test requires it to be empty.
    log = folder.parent / f"{folder.name}.kernel.log"
    with open(log, "wb") as out, client.setup_kernel(env={**env, "COURSE_STRICT_CHECKS": "1", "COURSE_LEDGER": str(ledger)},
                                                     cwd=str(folder), stdout=out, stderr=subprocess.STDOUT):
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            solution = cell.metadata.get("course", {}).get("solution")
            if solution is not None:
                _strict(client, index, on=False)
            client.execute_cell(cell, index)
            report = outputs.differ(stored.cells[index], cell)
            if report:
                differ[index] = report
            if solution is None or not bite:
                continue
            _strict(client, index, on=True)
            with pytest.raises(CellExecutionError) as failed:
                client.execute_cell(nbformat.from_dict({**cell, "outputs": []}), index)
            assert "ExerciseNotPassed" in str(failed.value), f"cell {index}: the unsolved exercise must fail its check"
            bit.append(index)
            cell.source = solution
            client.execute_cell(cell, index)
            nb.cells[index] = cell
    results = json.loads(ledger.read_text()) if ledger.exists() else {}
    return nb, results, bit, differ, log.read_text(errors="replace")


@pytest.mark.slow
@pytest.mark.parametrize("path", EVERY, ids=notebook_key)
def test_each_lesson_alone_from_the_wheel_shows_its_stored_outputs_and_its_checks_bite(path, fresh, monkeypatch):
    """One execution per lesson serves every check: the lesson copied alone into an empty folder of the
    fresh venv installs the course from the wheel in its first cell (the first lesson on each worker
    does; the others find it installed), runs headless at its default size, and every cell shows what
    is stored in the repository (strict nbval's comparison); in strict mode every template fails and
    every solution passes; it records what ``tests/expected/<lesson>.json`` requires, shows the
    shipped CPU reference, writes nothing outside the notebook, leaves torch as it was and makes no
    build/ folder beside itself. (`make nbval` runs nbval itself on notebooks/, in this venv.)
    A deeper notebook (notebooks/deeper/) is run the same way; it need not have exercises or a
    references table, and its expected results are in tests/expected/deeper/. A Chinese lesson
    (notebooks/zh/) runs the same way and records what its English lesson must record; its exercises'
    strict runs and solutions are its English lesson's (tools/zh.py: the same code), so they run there."""
    deeper = path.parent.name == "deeper"
    chinese = path.parent.name == "zh"
    expected_file = REPO / "tests" / "expected" / f"{path.stem if chinese else notebook_key(path)}.json"
    assert expected_file.exists(), f"{expected_file} must list the results {path.stem} records"
    required = json.loads(expected_file.read_text())["required"]
    assert required, "a lesson must record at least one result"
    folder = fresh.root / notebook_key(path).replace("/", "-")
    folder.mkdir()
    shutil.copy(path, folder / path.name)
    monkeypatch.setenv("JUPYTER_PATH", fresh.env["JUPYTER_PATH"])  # where the client finds the 'fresh' kernel spec
    t = time.perf_counter()
    out, results, bit, differ, kernel_said = _run_lesson(path, folder, fresh.env, bite=not chinese)
    nbformat.write(out, folder / f"{path.stem}.executed.ipynb")  # to read when a check below fails
    print(f"\nwheel test: {path.stem} in {time.perf_counter() - t:.0f} s")
    assert not differ, f"{path.stem}: {len(differ)} cell(s) differ from the stored outputs " \
        f"(code cells {sorted(differ)} by notebook index; run `make outputs` if the change is meant):\n" + \
        "\n\n".join(f"cell {i}:\n{report[-3000:]}" for i, report in differ.items())
    # `make run` prints its table and nothing else: a kernel started over TCP warned "Kernel is running
    # over TCP without encryption" once per lesson (course_utils.kernels starts them over ipc), and a
    # warning that C++ code writes straight to the process's stderr would land there too.
    stray = TORCH_EXIT_NOISE.sub("", kernel_said).strip()
    assert not stray, f"{path.stem}: the kernel process wrote outside the notebook:\n{stray[-2000:]}"

    assert deeper or chinese or len(bit) >= 3, f"{path.stem}: only {len(bit)} checked exercises bit in strict mode"
    missing = sorted(set(required) - set(results))
    assert not missing, f"{path.stem} did not record {missing}"
    for key, (low, high) in required.items():
        value = results[key]["value"]
        assert (low is None or value >= low) and (high is None or value <= high), f"{key}={value} outside [{low}, {high}]"
    for key, r in results.items():
        assert math.isfinite(r["value"]), key
        if r["unit"] in TIME_UNITS:
            assert r["value"] > 0, f"{key}: a measured time must be positive, got {r['value']}"

    where, now = _installed(fresh.py)
    assert where.startswith(str(fresh.root / "venv")), f"course-utils is installed at {where}, not in the fresh venv"
    assert now == fresh.torch_version, f"installing the course changed torch: {fresh.torch_version} -> {now}"
    assert not (folder / "build").exists(), f"{path.stem} wrote outside its scratch folder"
    heading = next((i for i, c in enumerate(out.cells) if any(h in c.source for h in standalone.COMPARE_HEADINGS)), None)
    if deeper and heading is None:
        return
    cell = next(c for c in out.cells[heading:] if c.cell_type == "code" and "compare(" in c.source)
    shown = "".join(o.get("data", {}).get("text/plain", "") for o in cell.outputs)
    assert re.search(r"^cpu-ci: CPU", shown, re.M) and "cpu-ci" in shown.splitlines()[0], \
        f"{path.stem}: the shipped CPU reference is not shown:\n{shown[:1500]}"
