"""Make every lesson runnable when it is opened alone (Colab, Kaggle, a lab server, an empty folder).

    python tools/standalone.py            # --check: list what is out of date, exit 1 if anything is
    python tools/standalone.py --write    # rewrite it (idempotent: a second run changes nothing)

It rewrites exactly these parts, from one setting, the repository URL in pyproject.toml's
``[project.urls] Repository`` (and the version, ``project.version``, whose tag ``v<version>`` is the
git ref the links and the install use):

- each lesson's **install cell** (id ``course-install``, right under the title cell: the first code
  cell, before the parameters): when ``course_utils`` cannot be imported it pip-installs it from ``$COURSE_UTILS_SOURCE``,
  else from ``git+<Repository>@v<version>``, keeping the torch that is installed;
- the **title cell**'s links line, ``[Open in Colab](...) · [Open in Kaggle](...)``, right under the
  ``# NN · Title`` heading;
- the **compare cell** (the code cell after the "This machine vs the references" heading):
  ``print(compare(...))`` becomes ``display(compare(...))``, so the Table shows as HTML;
- the notebook metadata Colab reads to ask for a GPU runtime (``accelerator: GPU``, ``colab.gpuType``);
- README.md's lesson table (and README.zh.md's): an "open alone" column with the same two links;
- the Chinese lessons (``notebooks/zh/``) get the same parts, with the Chinese install cell.

While ``Repository`` is unset (the course is not yet published) no link is written anywhere, and the
install cell asks for ``COURSE_UTILS_SOURCE``: no link may point at a repository that is not this one.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from course_utils.paths import all_notebooks, zh_notebooks  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zh  # noqa: E402  (tools/zh.py: the hash a translated cell records)

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
INSTALL_ID = "course-install"
GITHUB = re.compile(r"^https://github\.com/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)/?$")
LINKS = re.compile(r"^\[Open in Colab\]\([^)]*\) · \[Open in Kaggle\]\([^)]*\)$")
ROW = re.compile(r"^\|\s*(\d\d)\s*\|\s*(\[[^\]]+\]\(notebooks/([^)]+\.ipynb)\))\s*\|\s*([^|]*?)\s*\|(.*)$")
COLAB_METADATA = {"accelerator": "GPU", "colab": {"gpuType": "T4", "provenance": []}}

# The install cell: at most 8 lines, hidden in JupyterLab (plumbing, not the lesson). Without torch, or when pip
# cannot fetch the package, it stops with two lines that say what to do. {source} is the package's source.
INSTALL = '''\
# Opened alone (Colab, Kaggle, an empty folder)? This installs the course's helpers, course_utils; your torch stays.
import importlib, importlib.metadata as md, importlib.util as iu, os, subprocess, sys
if iu.find_spec("course_utils") is None:
    src = {source}
    if iu.find_spec("torch") is None or not src or subprocess.run([sys.executable, "-m", "pip", "install", "-q", src, "torch==" + md.version("torch")]).returncode:
        raise RuntimeError("This lesson needs PyTorch (torch >= 2.4): install it first (https://pytorch.org/get-started/locally/), then run this cell again." if iu.find_spec("torch") is None else
                           f"Could not install the course's helpers from {{src or 'COURSE_UTILS_SOURCE (not set: %env COURSE_UTILS_SOURCE=<the course wheel, folder or git URL>)'}}.\\nColab or Kaggle: turn on the internet, then run  %pip install '{{src}}'  in a cell. Elsewhere: download the course, run  pip install -e <its folder>, and run this cell again.")
importlib.invalidate_caches(); import course_utils; course_utils.setup_notebook("en")
'''
# The Chinese lessons' install cell (notebooks/zh/): the same code, its comment and messages in Chinese,
# and the setup call that makes course_utils speak Chinese (tools/zh.py checks it is the English code).
INSTALL_ZH = '''\
# 单独打开本课（Colab、Kaggle 或空文件夹）？这个单元会安装课程的辅助包 course_utils，不会改动你已装的 torch。
import importlib, importlib.metadata as md, importlib.util as iu, os, subprocess, sys
if iu.find_spec("course_utils") is None:
    src = {source}
    if iu.find_spec("torch") is None or not src or subprocess.run([sys.executable, "-m", "pip", "install", "-q", src, "torch==" + md.version("torch")]).returncode:
        raise RuntimeError("本课需要 PyTorch（torch >= 2.4）：请先安装（https://pytorch.org/get-started/locally/），再运行这个单元。" if iu.find_spec("torch") is None else
                           f"无法从 {{src or 'COURSE_UTILS_SOURCE（未设置：%env COURSE_UTILS_SOURCE=<课程的 wheel、文件夹或 git 地址>）'}} 安装课程的辅助包。\\nColab 或 Kaggle：打开联网，然后在一个单元里运行  %pip install '{{src}}'。其他环境：下载课程，运行  pip install -e <课程文件夹>，再运行这个单元。")
importlib.invalidate_caches(); import course_utils; course_utils.setup_notebook("zh")
'''
SOURCE_PUBLISHED = 'os.environ.get("COURSE_UTILS_SOURCE") or "course-utils @ git+{url}@{ref}"'
SOURCE_UNPUBLISHED = 'os.environ.get("COURSE_UTILS_SOURCE", "")  # tools/standalone.py writes the repository here once published'


def settings(root: Path = REPO) -> dict:
    """``{"url": "https://github.com/o/r" or None, "ref": "v0.1.0"}`` from pyproject.toml.

    A Repository that is not a GitHub repository URL is an error: Colab and Kaggle open notebooks
    from GitHub paths only.
    """
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    url = project.get("urls", {}).get("Repository")
    if url is not None and not GITHUB.match(url):
        raise SystemExit(f"pyproject.toml [project.urls] Repository = {url!r}: expected https://github.com/OWNER/NAME")
    return {"url": url.rstrip("/") if url else None, "ref": f"v{project['version']}"}


def links(cfg: dict, path: str) -> tuple[str, str] | None:
    """(Colab URL, Kaggle URL) of one file of the repository at the release tag, or None while unpublished."""
    if not cfg["url"]:
        return None
    owner, name = GITHUB.match(cfg["url"]).groups()
    blob = f"{owner}/{name}/blob/{cfg['ref']}/{path}"
    return (f"https://colab.research.google.com/github/{blob}",
            f"https://kaggle.com/kernels/welcome?src=https://github.com/{blob}")


def links_line(cfg: dict, path: str) -> str | None:
    found = links(cfg, path)
    return None if found is None else f"[Open in Colab]({found[0]}) · [Open in Kaggle]({found[1]})"


def install_source(cfg: dict, lang: str = "en") -> str:
    """The install cell's source for this setting, in the lesson's language."""
    template = INSTALL_ZH if lang == "zh" else INSTALL
    if cfg["url"]:
        return template.format(source=SOURCE_PUBLISHED.format(url=cfg["url"], ref=cfg["ref"]))
    return template.format(source=SOURCE_UNPUBLISHED)


def _unwrap_print(source: str, call: str = "compare(") -> str:
    """``print(compare(...))`` -> ``display(compare(...))`` (balanced parentheses; idempotent)."""
    out, i = [], 0
    while (j := source.find("print(" + call, i)) >= 0:
        out.append(source[i:j] + "display(")
        i = j + len("print(")
    out.append(source[i:])
    return "".join(out)


def _title(cell, line: str | None) -> None:
    lines = cell.source.split("\n")
    rest = lines[1:]
    while rest and (not rest[0].strip() or LINKS.match(rest[0].strip())):  # old links and blank lines under the title
        rest = rest[1:]
    cell.source = "\n".join([lines[0], "", *([line, ""] if line else []), *rest])


# The heading above a core's compare cell, in each language.
COMPARE_HEADINGS = ("This machine vs the references", "本机与参考机器对比")


def fix_notebook(nb, path: str, cfg: dict) -> None:
    """Rewrite one lesson's install cell, title links, compare cell and Colab metadata in place.
    A Chinese lesson (``notebooks/zh/``) gets the Chinese install cell, marked as the translation of
    the English one (tools/zh.py)."""
    lang = "zh" if "/zh/" in f"/{path}" else "en"
    cells = nb.cells
    _title(cells[0], links_line(cfg, path))
    install = next((c for c in cells if c.get("id") == INSTALL_ID), None)
    if install is None:
        install = nbformat.v4.new_code_cell(id=INSTALL_ID)
        cells.insert(1, install)  # right under the title: the first code cell, before the parameters
    source = install_source(cfg, lang).rstrip("\n")
    if install.source != source:  # a new install cell: its stored output is no longer this cell's
        install.source, install.outputs, install.execution_count = source, [], None
    # Only these keys are this tool's: the deck's choice (tools/slides.py) and others stay.
    install.metadata.update({"slideshow": {"slide_type": "skip"}, "tags": [INSTALL_ID], "jupyter": {"source_hidden": True}})
    if lang == "zh":
        english = install_source(cfg).rstrip("\n")
        install.metadata["translation"] = {"of": INSTALL_ID, "sha": zh.sha(english)}
    heading = next((i for i, c in enumerate(cells)
                    if c.cell_type == "markdown" and any(h in c.source for h in COMPARE_HEADINGS)), None)
    if heading is not None:  # every core has one; a deeper notebook may not
        compare = next(c for c in cells[heading:] if c.cell_type == "code" and "compare(" in c.source)
        compare.source = _unwrap_print(compare.source)
    for key, value in COLAB_METADATA.items():
        nb.metadata[key] = value


# The lesson table's heading in README.md and README.zh.md, and the "open alone" column's.
HEADINGS = {"| # | notebook | what it teaches |": " open alone |", "| # | 笔记本 | 内容 |": " 单独打开 |"}


def fix_readme(text: str, cfg: dict) -> str:
    """The README's lesson table with (or, unpublished, without) the "open alone" column."""
    out = []
    for line in text.split("\n"):
        heading = next((h for h in HEADINGS if line.replace(" ", "").startswith(h.replace(" ", ""))), None)
        if heading:
            line = heading + (HEADINGS[heading] if cfg["url"] else "")
        elif re.match(r"^\|---\|---\|---\|(---\|)?$", line):
            line = "|---|---|---|" + ("---|" if cfg["url"] else "")
        elif (m := ROW.match(line)):
            found = links(cfg, f"notebooks/{m[3]}")
            line = f"| {m[1]} | {m[2]} | {m[4]} |" + (f" [Colab]({found[0]}) · [Kaggle]({found[1]}) |" if found else "")
        out.append(line)
    return "\n".join(out)


def plan(root: Path = REPO) -> dict[Path, str]:
    """Every file this tool owns, with the text it should have."""
    cfg = settings(root)
    want = {}
    for path in all_notebooks(root / "notebooks") + zh_notebooks(root / "notebooks"):  # cores, deeper/, zh/
        nb = nbformat.read(path, as_version=4)
        fix_notebook(nb, path.relative_to(root).as_posix(), cfg)
        want[path] = nbformat.writes(nb) + "\n"
    for readme in (root / "README.md", root / "README.zh.md"):
        if readme.exists():
            want[readme] = fix_readme(readme.read_text(encoding="utf-8"), cfg)
    return want


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="rewrite the files (default: only check them)")
    ap.add_argument("--root", type=Path, default=REPO, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    stale = [p for p, text in plan(args.root).items() if p.read_text(encoding="utf-8") != text]
    if args.write:
        for path, text in plan(args.root).items():
            if path in stale:
                path.write_text(text, encoding="utf-8")
        print(f"rewrote {len(stale)} file(s)" + "".join(f"\n  {p.relative_to(args.root)}" for p in stale))
        return 0
    for p in stale:
        print(f"out of date: {p.relative_to(args.root)} (run python tools/standalone.py --write)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
