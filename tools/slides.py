"""Offline reveal.js slides of every lesson: slide metadata from the headings, then nbconvert.

A lesson's slides follow its own structure: the title cell and every ``##`` section start a slide;
a ``###`` heading, or a section too long for one screen, continues as sub-slides (down-arrow); the
parameters cell and the setup cell after it are skipped; speaker-notes cells (``slide_type``
``notes`` already, or markdown starting with ``**Speaker notes**``) stay notes (press ``s``).

    python tools/slides.py --write-metadata [NN ...]   # write the `slideshow` metadata (idempotent)
    python tools/slides.py --check [NN ...]            # exit 1 if a lesson's metadata is missing or wrong
    python tools/slides.py [NN ...] [--out build/slides] # build NN_*.slides.html (needs `make slides`' npm step)

Nothing in the built slides is fetched from the network: reveal.js, require.js, jQuery and the
Jupyter widgets HTML manager are the npm-installed files (package.json, installed by ``make slides``
into build/web/) copied to ``<out>/assets/``; the template in tools/templates/offline_reveal drops
nbconvert's mermaid CDN import and MathJax (no lesson uses LaTeX math; ``build`` refuses one that
does, rather than shipping slides that fetch MathJax from a CDN).
"""
from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
LESSONS = REPO / "notebooks"
TEMPLATES = REPO / "tools" / "templates"
NODE_MODULES = REPO / "build" / "web" / "node_modules"
DEFAULT_OUT = REPO / "build" / "slides"

# A sub-slide holds at most this many cells, and about this many lines of source + output:
# reveal's 960x700 canvas at the template's 19-20px fonts shows ~26 lines.
MAX_CELLS = 3
LINE_BUDGET = 26
IMAGE_LINES = 14  # a stored figure counts as this many lines
NOTES_PREFIX = "**Speaker notes**"
THEME_NAME = "white"  # reveal.js theme, here and in RISE: its font ships with reveal.js ("simple" imports Google Fonts)
MIN_SLIDES = 6


def lessons(selected: list[str] | None = None) -> list[Path]:
    """The lesson notebooks, optionally only those whose number is in ``selected``."""
    found = sorted(LESSONS.glob("[0-9][0-9]_*.ipynb"))
    if selected:
        found = [p for p in found if p.name[:2] in selected]
        missing = set(selected) - {p.name[:2] for p in found}
        if missing:
            raise SystemExit(f"no lesson numbered {', '.join(sorted(missing))} in {LESSONS}")
    return found


def is_notes(cell) -> bool:
    if cell.metadata.get("slideshow", {}).get("slide_type") == "notes":
        return True
    return cell.cell_type == "markdown" and cell.source.lstrip().startswith(NOTES_PREFIX)


def _skipped(nb) -> set[int]:
    """The install cell (tools/standalone.py), the parameters cell and the setup cell (the next code
    cell) are plumbing, not slides."""
    install = {i for i, cell in enumerate(nb.cells) if "course-install" in cell.metadata.get("tags", [])}
    for i, cell in enumerate(nb.cells):
        if "parameters" in cell.metadata.get("tags", []):
            later = [j for j in range(i + 1, len(nb.cells)) if nb.cells[j].cell_type == "code"]
            return {*install, i, *later[:1]}
    return install


def _lines(cell) -> int:
    """Roughly how many screen lines a cell takes in the slides (source + stored outputs)."""
    width = 90 if cell.cell_type == "code" else 75  # characters per line before the slide wraps it
    n = sum(1 + len(line) // width for line in cell.source.splitlines())
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            n += len(out.get("text", "").splitlines())
            continue
        data = out.get("data", {})
        if any(k.startswith("image/") for k in data) or "application/vnd.jupyter.widget-view+json" in data:
            n += IMAGE_LINES
        elif "text/plain" in data:
            n += len(str(data["text/plain"]).splitlines())
    return n


def slide_types(nb) -> list[str]:
    """The ``slide_type`` every cell should have, computed from headings and sizes only."""
    skipped, types = _skipped(nb), []
    cells_here = lines_here = 0
    for i, cell in enumerate(nb.cells):
        if i in skipped:
            types.append("skip")
            continue
        if is_notes(cell):
            types.append("notes")
            continue
        size = _lines(cell)
        heading = cell.cell_type == "markdown" and re.match(r"#{1,2} ", cell.source.lstrip())
        if heading or not types:
            kind, cells_here, lines_here = "slide", 0, 0
        elif (cells_here >= MAX_CELLS or (cells_here and lines_here + size > LINE_BUDGET)
              or (cell.cell_type == "markdown" and cell.source.lstrip().startswith("### "))):
            kind, cells_here, lines_here = "subslide", 0, 0
        else:
            kind = "-"
        types.append(kind)
        cells_here, lines_here = cells_here + 1, lines_here + size
    return types


RISE = {"theme": THEME_NAME, "scroll": True}  # notebook metadata read by jupyterlab-rise (overrides its settings)


def apply(nb) -> bool:
    """Write the computed ``slideshow`` metadata (and RISE's theme) into ``nb``; True if anything changed."""
    changed = False
    rise = nb.metadata.setdefault("rise", {})
    for key, value in RISE.items():
        if rise.get(key) != value:
            rise[key], changed = value, True
    for cell, kind in zip(nb.cells, slide_types(nb)):
        if cell.metadata.get("slideshow", {}).get("slide_type") != kind:
            cell.metadata.setdefault("slideshow", {})["slide_type"] = kind
            changed = True
    return changed


def fill_missing(nb, name: str = "") -> int:
    """Give cells without ``slideshow`` metadata their computed type (in memory); how many lacked it.

    Stored metadata wins, so a hand-tuned slide stays as its author set it.
    """
    missing = 0
    for cell, kind in zip(nb.cells, slide_types(nb)):
        if "slide_type" not in cell.metadata.get("slideshow", {}):
            cell.metadata.setdefault("slideshow", {})["slide_type"] = kind
            missing += 1
    if missing and name:
        print(f"note: {name}: {missing} cells without slideshow metadata get the computed one "
              "(python tools/slides.py --write-metadata stores it)", file=sys.stderr)
    return missing


def problems(nb) -> list[str]:
    """What is wrong with a lesson's stored slide metadata (empty: fine).

    Checks the structure, not the exact split into sub-slides (which follows output sizes and
    may differ after a run on another machine): every cell has a slide_type, every ``##``
    section starts a slide, parameters/setup are skipped, notes are notes, >= MIN_SLIDES slides.
    """
    found, expected = [], slide_types(nb)
    for i, (cell, want) in enumerate(zip(nb.cells, expected)):
        have = cell.metadata.get("slideshow", {}).get("slide_type")
        first = cell.source.lstrip().splitlines()[0][:60] if cell.source.strip() else ""
        if have is None:
            found.append(f"cell {i} ({first!r}) has no slideshow metadata")
        elif want in ("slide", "skip", "notes") and have != want:
            found.append(f"cell {i} ({first!r}) is {have!r}, should be {want!r}")
    if nb.metadata.get("rise", {}).get("theme") != THEME_NAME:
        found.append(f"notebook metadata rise.theme is not {THEME_NAME!r} (RISE's default, 'simple', imports Google Fonts)")
    shown = sum(c.metadata.get("slideshow", {}).get("slide_type") in ("slide", "subslide") for c in nb.cells)
    if shown < MIN_SLIDES:
        found.append(f"only {shown} slides and sub-slides (at least {MIN_SLIDES})")
    return found


def uses_latex(nb) -> list[int]:
    """Markdown cells with LaTeX math outside code (they would need MathJax)."""
    math = re.compile(r"\$\$|\\\(|\\\[|\\begin\{|(?<![\\$])\$[^\s$][^$\n]*?[^\s$\\]\$(?!\d)")
    hits = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        text = re.sub(r"```.*?```|~~~.*?~~~", "", cell.source, flags=re.S)
        text = re.sub(r"`[^`\n]*`", "", text)
        if math.search(text):
            hits.append(i)
    return hits


# --------------------------------------------------------------------------- assets and export

ASSET_FILES = {  # destination under <out>/assets/  <-  source under build/web/node_modules/
    "require.js": "requirejs/require.js",
    "jquery.min.js": "jquery/dist/jquery.min.js",
}
ASSET_DIRS = {
    "reveal.js/dist": "reveal.js/dist",
    "reveal.js/plugin/notes": "reveal.js/plugin/notes",
    "html-manager": "@jupyter-widgets/html-manager/dist",
}

# Not needed offline: source maps, the ESM and non-AMD builds (the pages load AMD/UMD files only),
# and the other reveal.js themes (most of them @import Google Fonts).
_IGNORE = shutil.ignore_patterns("*.map", "*.esm.js", "embed.js", "embed.js.LICENSE.txt", "libembed-amd.js")


def ASSET_IGNORE(folder: str, names: list[str]) -> set[str]:
    ignored = set(_IGNORE(folder, names))
    if Path(folder).name == "theme":
        ignored |= {n for n in names if n.endswith(".css") and n != f"{THEME_NAME}.css"}
    if Path(folder).name == "fonts" and Path(folder).parent.name == "theme":
        ignored |= {n for n in names if n != "source-sans-pro"}
    return ignored


def copy_assets(assets: Path, node_modules: Path = NODE_MODULES) -> Path:
    """Copy the npm-installed browser files to ``assets`` (replacing what was there)."""
    if not (node_modules / "reveal.js" / "package.json").exists():
        raise SystemExit(f"{node_modules} has no reveal.js: run `make slides` (it runs `npm ci` into build/web/ first)")
    version = nbformat.reader.json.loads((node_modules / "reveal.js" / "package.json").read_text())["version"]
    if not version.startswith("4."):
        raise SystemExit(f"reveal.js {version} installed; nbconvert's reveal template needs 4.x (package.json)")
    if assets.exists():
        shutil.rmtree(assets)
    for dest, src in ASSET_DIRS.items():
        shutil.copytree(node_modules / src, assets / dest, ignore=ASSET_IGNORE)
    for dest, src in ASSET_FILES.items():
        shutil.copy2(node_modules / src, assets / dest)
    return assets


def asset_config(prefix: str) -> dict:
    """nbconvert settings pointing every script at the local copies under ``prefix`` (a relative URL)."""
    return {
        "require_js_url": f"{prefix}/require.js",
        "jquery_url": f"{prefix}/jquery.min.js",
        "widget_renderer_url": f"{prefix}/html-manager/embed-amd.js",
        "jupyter_widgets_base_url": f"{prefix}/",  # unused while widget_renderer_url is set
        "mathjax_url": "",
    }


def exporter(kind: str, prefix: str):
    """An nbconvert exporter (``slides`` or ``html``) using the offline templates."""
    from nbconvert import HTMLExporter, SlidesExporter
    from traitlets.config import Config

    cfg = Config()
    cls, template = (SlidesExporter, "offline_reveal") if kind == "slides" else (HTMLExporter, "offline_lab")
    section = cfg[cls.__name__]
    section.extra_template_basedirs = [str(TEMPLATES)]
    section.template_name = template
    section.theme = "light"
    for key, value in asset_config(prefix).items():
        section[key] = value
    if kind == "slides":
        section.reveal_url_prefix = f"{prefix}/reveal.js"
        section.reveal_theme = THEME_NAME
        section.reveal_scroll = True
    return cls(config=cfg)


def export(notebook: Path, out_file: Path, kind: str, prefix: str) -> Path:
    """Convert one notebook (stored outputs and saved widget state as they are) to ``out_file``."""
    nb = nbformat.read(notebook, as_version=4)
    if kind == "slides":
        fill_missing(nb, notebook.name)
    latex = uses_latex(nb)
    if latex:
        raise SystemExit(f"{notebook.name}: cells {latex} use LaTeX math; the offline pages ship no MathJax "
                         "(add mathjax to package.json and pass its local URL as mathjax_url in tools/slides.py)")
    body, _ = exporter(kind, prefix).from_notebook_node(nb, resources={"metadata": {"name": notebook.stem}})
    out_file.parent.mkdir(parents=True, exist_ok=True)
    out_file.write_text(body, encoding="utf-8")
    return out_file


def build(selected: list[str] | None = None, out: Path = DEFAULT_OUT) -> list[Path]:
    """Build ``out/NN_*.slides.html`` with their assets in ``out/assets``."""
    copy_assets(out / "assets")
    built = []
    for lesson in lessons(selected):
        built.append(export(lesson, out / f"{lesson.stem}.slides.html", "slides", "assets"))
        print(f"{built[-1].relative_to(REPO) if built[-1].is_relative_to(REPO) else built[-1]}")
    return built


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("numbers", nargs="*", help="lesson numbers (default: all)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write-metadata", action="store_true", help="store the slideshow metadata in the lessons")
    mode.add_argument("--check", action="store_true", help="exit 1 if a lesson's slideshow metadata is missing or wrong")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the slides go (default build/slides)")
    parser.add_argument("--notebooks", type=Path, default=None, help=argparse.SUPPRESS)  # tests: a temp copy
    args = parser.parse_args(argv)
    global LESSONS
    if args.notebooks:
        LESSONS = args.notebooks
    if args.write_metadata:
        for path in lessons(args.numbers):
            nb = nbformat.read(path, as_version=4)
            if apply(nb):
                nbformat.write(nb, path)
                print(f"{path.name}: slideshow metadata written")
            else:
                print(f"{path.name}: unchanged")
        return 0
    if args.check:
        bad = 0
        for path in lessons(args.numbers):
            for problem in problems(nbformat.read(path, as_version=4)):
                print(f"{path.name}: {problem}")
                bad += 1
        if bad:
            print("fix: python tools/slides.py --write-metadata", file=sys.stderr)
        return 1 if bad else 0
    build(args.numbers, args.out.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
