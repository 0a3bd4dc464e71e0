"""Offline reveal.js decks of every lesson, one talk per lesson, for a 1280x720 projector, then nbconvert.

A lesson's deck is written as a talk in ``notebooks/decks/NN_name.yaml`` (tools/deck.py says what a
slide holds): at most 30 slides, each with a title, a few words, the code lines or results it shows
from the lesson's cells, and speaker notes with minutes (press ``s``). The slides take code and
outputs from the lesson itself, so they show the run the lesson was stored from, or with ``--from``
the executed copies of another run (``make run`` on a GPU, then ``make slides FROM=build/run``).

    python tools/slides.py [NN ...] [--out build/slides] [--from build/run]  # build NN_*.slides.html
    python tools/slides.py --check [NN ...]   # exit 1 on a stale, missing or broken deck (make test runs it)
    python tools/slides.py --stamp NN [...]   # after reviewing the slides of a changed section
    python tools/slides.py zh/02 --check      # a Chinese deck (notebooks/zh/decks/); "zh": all of them
    python tools/slides.py --plan [--write]   # slides, pictures and minutes per deck (docs/teaching.md)

Nothing in the built slides is fetched from the network: reveal.js, require.js, jQuery and the
Jupyter widgets HTML manager are the npm-installed files (package.json, installed by ``make slides``
into build/web/) copied to ``<out>/assets/``; the template in tools/templates/offline_reveal drops
nbconvert's mermaid CDN import and MathJax (no lesson uses LaTeX math; ``build`` refuses one that
does, rather than shipping slides that fetch MathJax from a CDN).
"""
from __future__ import annotations

import argparse
import functools
import re
import shutil
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import deck as decks  # noqa: E402  (tools/deck.py)

REPO = Path(__file__).resolve().parents[1]
LESSONS = REPO / "notebooks"
TEMPLATES = REPO / "tools" / "templates"
NODE_MODULES = REPO / "build" / "web" / "node_modules"
DEFAULT_OUT = REPO / "build" / "slides"
TEACHING = REPO / "docs" / "teaching.md"

# The projector: a 1280x720 (16:9) canvas shown at scale 1 on a 1280x720 screen (margin 0), prose at
# 25 px and code at 19 px (the template's CSS); tests/test_decks.py measures every slide in Chromium.
CANVAS = (1280, 720)
THEME_NAME = "white"  # reveal.js theme: its font ships with reveal.js ("simple" imports Google Fonts)


def lessons(selected: list[str] | None = None) -> list[Path]:
    """The lessons with a deck: the English cores, then the Chinese ones (``notebooks/zh/``). ``selected``
    picks by number (``02``), ``zh/02`` (a Chinese deck) or ``zh`` (every Chinese deck)."""
    english = sorted(LESSONS.glob("[0-9][0-9]_*.ipynb"))
    chinese = sorted((LESSONS / "zh").glob("[0-9][0-9]_*.ipynb"))
    if not selected:
        return english + chinese
    found = [p for p in english if p.name[:2] in selected] + \
            [p for p in chinese if "zh" in selected or f"zh/{p.name[:2]}" in selected]
    known = {p.name[:2] for p in english} | {f"zh/{p.name[:2]}" for p in chinese} | ({"zh"} if chinese else set())
    missing = set(selected) - known
    if missing:
        raise SystemExit(f"no lesson numbered {', '.join(sorted(missing))} in {LESSONS}")
    return found


def name(lesson: Path) -> str:
    """``02_iris_cpu_vs_gpu``, or ``zh/02_iris_cpu_vs_gpu`` for a Chinese lesson: where its slides go."""
    return f"zh/{lesson.stem}" if lesson.parent.name == "zh" else lesson.stem


def check(lesson: Path) -> list[str]:
    """What is wrong with ``lesson``'s deck (tools/deck.py), one line each."""
    nb, spec = nbformat.read(lesson, as_version=4), decks.load(lesson)
    return decks.problems(nb, spec, name(lesson)) + (decks.translation_problems(lesson, spec) if spec else [])


def deck(lesson: Path, outputs_from: Path | None = None):
    """The notebook ``lesson``'s slides are made from, with the outputs of ``outputs_from/<name>``
    (an executed copy, same cells) when given."""
    nb, spec = nbformat.read(lesson, as_version=4), decks.load(lesson)
    problems = decks.problems(nb, spec, name(lesson))
    if problems:
        raise SystemExit("\n".join(problems) + "\nfix the deck (docs/authoring.md#decks), then build again")
    if outputs_from is not None:
        executed = outputs_from / f"{name(lesson)}.ipynb"
        run = nbformat.read(executed, as_version=4)
        ran = {c.id: c for c in run.cells}
        if set(ran) != {c.id for c in nb.cells}:
            raise SystemExit(f"{executed} is not a run of {lesson} (its cells differ): run it again")
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = ran[cell.id].get("outputs", [])
        nb.metadata["widgets"] = run.metadata.get("widgets", nb.metadata.get("widgets", {}))
        stale = decks.foreign_numbers(nb, spec)
        if stale:
            raise SystemExit(f"{lesson.stem}: the deck quotes numbers this run did not print:\n  " + "\n  ".join(stale))
    return decks.notebook(nb, spec)


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


# What nbconvert's HTMLExporter adds to a page after rendering it (nbconvert 7.x): alt text on images
# without one, and tabindex="0" on every cell input and output under .jp-Notebook (the lab and reveal
# templates put that class on <body>). It does so by re-parsing the whole page with BeautifulSoup's
# pure-Python html.parser and writing it out again: 3.0 of the 4.8 s that lesson 10's page and deck
# took to export (profiled), and most of `make slides site`. The same attributes are added here to the
# markup the lab template writes.
_BODY = '<body class="jp-Notebook"'
_INPUT = '<div class="jp-Cell-inputWrapper">'
_OUTPUT = re.compile(r'<div (?=[^>]*\bclass="(?:[^"]* )?jp-OutputArea-output[ "])(?![^>]*\btabindex=)')
_NO_ALT = re.compile(r"<img\b(?![^>]*\balt=)")
NO_ALT_TEXT = "No description has been provided for this image"  # nbconvert's words


def _focusable(html: str) -> str:
    html = html.replace(_INPUT, '<div class="jp-Cell-inputWrapper" tabindex="0">')
    html = _OUTPUT.sub('<div tabindex="0" ', html)
    return _NO_ALT.sub(f'<img alt="{NO_ALT_TEXT}"', html)


@functools.cache
def _without_reparse(base):
    """``base`` (nbconvert's HTMLExporter or SlidesExporter), rendering as it does but adding the
    attributes above without re-parsing the page (nbconvert's own way when a page has no
    ``<body class="jp-Notebook"``)."""
    from nbconvert.exporters.html import Highlight2HTML, WidgetsDataTypeFilter
    from nbconvert.exporters.templateexporter import TemplateExporter

    class Exporter(base):
        def from_notebook_node(self, nb, resources=None, **kw):
            lexer = nb.metadata.get("language_info", {})
            lexer = lexer.get("pygments_lexer", lexer.get("name", None))
            self.register_filter("highlight_code", self.filters.get("highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self)))
            resources = self._init_resources(resources)
            self.register_filter("filter_data_type", WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata, parent=self,
                                                                           resources=resources))
            html, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
            if _BODY not in html:
                return super().from_notebook_node(nb, resources, **kw)
            return _focusable(html), resources

    Exporter.__name__ = base.__name__  # its config section stays [SlidesExporter] / [HTMLExporter]
    return Exporter


@functools.cache
def exporter(kind: str, prefix: str):
    """An nbconvert exporter (``slides`` or ``html``) using the offline templates. One per kind and prefix,
    reused: an exporter compiles its Jinja templates on first use (a quarter of `make site`'s time when
    each page made its own), and keeps nothing of one notebook for the next (its widget-state lookup is
    keyed by the notebook, set anew by every conversion)."""
    from nbconvert import HTMLExporter, SlidesExporter
    from traitlets.config import Config

    cfg = Config()
    cls, template = (SlidesExporter, "offline_reveal") if kind == "slides" else (HTMLExporter, "offline_lab")
    cls = _without_reparse(cls)
    section = cfg[cls.__name__]
    section.extra_template_basedirs = [str(TEMPLATES)]
    section.extra_template_paths = [str(TEMPLATES)]  # where both templates find offline_input.html.j2
    section.template_name = template
    section.theme = "light"
    for key, value in asset_config(prefix).items():
        section[key] = value
    if kind == "slides":
        section.reveal_url_prefix = f"{prefix}/reveal.js"
        section.reveal_theme = THEME_NAME
        section.reveal_scroll = False  # a clicker cannot scroll: every slide fits instead
        section.reveal_width, section.reveal_height = (str(v) for v in CANVAS)
        section.reveal_number = "c/t"
    return cls(config=cfg)


def export(notebook: Path, out_file: Path, kind: str, prefix: str, outputs_from: Path | None = None) -> Path:
    """Convert one notebook (stored outputs and saved widget state as they are) to ``out_file``."""
    nb = deck(notebook, outputs_from) if kind == "slides" else nbformat.read(notebook, as_version=4)
    latex = uses_latex(nb)
    if latex:
        raise SystemExit(f"{notebook.name}: cells {latex} use LaTeX math; the offline pages ship no MathJax "
                         "(add mathjax to package.json and pass its local URL as mathjax_url in tools/slides.py)")
    body, _ = exporter(kind, prefix).from_notebook_node(nb, resources={"metadata": {"name": notebook.stem}})
    out_file.parent.mkdir(parents=True, exist_ok=True)
    out_file.write_text(body, encoding="utf-8")
    return out_file


def switch(href: str, zh_page: bool, fixed: bool = False) -> str:
    """The language switch at the top of a page: to ``href``, the same page in the other language.
    ``fixed``: pinned to the corner, over a deck (it must not move the 1280x720 slide)."""
    label = "English" if zh_page else "中文"
    lang = "en" if zh_page else "zh"
    where = "position:fixed;top:4px;right:10px;z-index:40" if fixed else "text-align:right;margin:.3rem 1rem"
    return (f'<nav class="course-lang" style="{where};font:15px system-ui,sans-serif">'
            f'<a href="{href}" hreflang="{lang}" lang="{lang}">{label}</a></nav>')


def add_switch(page: Path, href: str, zh_page: bool, fixed: bool = False) -> None:
    """Put the language switch right after ``<body>`` of a page nbconvert wrote."""
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"(<body[^>]*>)", lambda m: m[1] + "\n" + switch(href, zh_page, fixed), text, count=1)
    if zh_page:
        text = re.sub(r'<html lang="en"', '<html lang="zh-CN"', text, count=1)
    page.write_text(text, encoding="utf-8")


def build(selected: list[str] | None = None, out: Path = DEFAULT_OUT, outputs_from: Path | None = None) -> list[Path]:
    """Build ``out/NN_*.slides.html`` (the Chinese decks in ``out/zh/``) with their assets in ``out/assets``."""
    copy_assets(out / "assets")
    built = []
    for lesson in lessons(selected):
        prefix = "../assets" if lesson.parent.name == "zh" else "assets"
        built.append(export(lesson, out / f"{name(lesson)}.slides.html", "slides", prefix, outputs_from))
        zh_deck = lesson.parent.name == "zh"  # each deck links its talk in the other language, pinned to a corner
        other = (lesson.parent.parent if zh_deck else lesson.parent / "zh") / lesson.name
        if other.exists() and decks.deck_path(other).exists():
            add_switch(built[-1], f"../{lesson.stem}.slides.html" if zh_deck else f"zh/{lesson.stem}.slides.html",
                       zh_deck, fixed=True)
        print(f"{built[-1].relative_to(REPO) if built[-1].is_relative_to(REPO) else built[-1]}")
    return built


# --------------------------------------------------------------------------- the plan in docs/teaching.md

PLAN_START, PLAN_END = "<!-- decks: tools/slides.py --plan --write -->", "<!-- /decks -->"


def plan_rows() -> list[dict]:
    rows = []
    for lesson in lessons():
        if lesson.parent.name == "zh":  # the Chinese decks are the same talks
            continue
        nb, spec = nbformat.read(lesson, as_version=4), decks.load(lesson)
        if not spec:
            continue
        groups = decks.groups(nb, spec)
        rows.append({"lesson": lesson.name[:2], "slides": len(spec["slides"]), "pictures": decks.pictures(nb, spec),
                     "minutes": sum(s["minutes"] for s in spec["slides"]), "groups": groups})
    return rows


def _short(title: str) -> str:
    m = re.match(r"(\d+)\.", title)
    return f"§{m[1]}" if m else ("title" if re.match(r"\d\d ", title) else title.lower())


def plan_table() -> str:
    """The decks' table for docs/teaching.md: slides, pictures, minutes, and minutes per slide group."""
    lines = ["| # | slides | pictures | minutes | minutes per slide group |", "|---|---|---|---|---|"]
    for r in plan_rows():
        groups = " · ".join(f"{_short(g['title'])} {g['minutes']:g}" for g in r["groups"])
        lines.append(f"| {r['lesson']} | {r['slides']} | {r['pictures']} | {r['minutes']:g} | {groups} |")
    return "\n".join(lines)


def write_plan(doc: Path = TEACHING) -> bool:
    text = doc.read_text(encoding="utf-8")
    if PLAN_START not in text or PLAN_END not in text:
        raise SystemExit(f"{doc} has no {PLAN_START} ... {PLAN_END} block")
    head, rest = text.split(PLAN_START, 1)
    new = head + PLAN_START + "\n" + plan_table() + "\n" + PLAN_END + rest.split(PLAN_END, 1)[1]
    if new != text:
        doc.write_text(new, encoding="utf-8")
    return new != text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("numbers", nargs="*", help="lesson numbers (default: all)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 if a lesson's deck is stale, missing or broken")
    mode.add_argument("--stamp", action="store_true", help="record the sections' hashes after reviewing their slides")
    mode.add_argument("--plan", action="store_true", help="print slides, pictures and minutes per deck")
    parser.add_argument("--write", action="store_true", help="with --plan: write the table into docs/teaching.md")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the slides go (default build/slides)")
    parser.add_argument("--from", dest="outputs_from", type=Path, default=None,
                        help="take the outputs from the executed copies in this folder (e.g. build/run)")
    parser.add_argument("--notebooks", type=Path, default=None, help=argparse.SUPPRESS)  # tests: a temp copy
    args = parser.parse_args(argv)
    global LESSONS
    if args.notebooks:
        LESSONS = args.notebooks
    if args.stamp:
        if not args.numbers:
            parser.error("--stamp needs the lesson numbers whose slides you reviewed")
        for path in lessons(args.numbers):
            changed = decks.stamp(path, nbformat.read(path, as_version=4))
            print(f"{decks.deck_path(path).relative_to(LESSONS)}: {'stamped' if changed else 'unchanged'}")
        return 0
    if args.check:
        bad = [p for path in lessons(args.numbers) for p in check(path)]
        print("\n".join(bad) if bad else f"{len(lessons(args.numbers))} decks: fine")
        return 1 if bad else 0
    if args.plan:
        if args.write:
            print(f"{TEACHING.relative_to(REPO)}: {'written' if write_plan() else 'unchanged'}")
        else:
            print(plan_table())
        return 0
    build(args.numbers, args.out.resolve(), args.outputs_from.resolve() if args.outputs_from else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())

