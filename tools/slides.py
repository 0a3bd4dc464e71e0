"""Offline reveal.js slides of every lesson, laid out for a 1280x720 projector, then nbconvert.

A lesson's slides follow its own structure: the title cell and every ``##`` section start a slide;
a ``###`` heading, or a section too tall for one screen, continues as sub-slides (ArrowRight, Space
and PageDown visit them all: navigationMode "linear"); the parameters cell and the setup cell after
it are skipped. What the deck shows of each cell is ``course.deck`` in its metadata (all, output,
a line range, skip; written from rules, hand choices kept: docs/authoring.md), so every slide fits
the 16:9 canvas at 25 px prose and 19 px code; what is cut carries a pointer to the notebook section.
Speaker notes come from the section headings' metadata (tools/notes.py) and are put on every slide
and sub-slide of their section (press ``s``).

    python tools/slides.py --write-metadata [NN ...]   # write the slideshow + course.deck metadata (idempotent)
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
import copy
import functools
import math
import re
import shutil
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import notes as course_notes  # noqa: E402  (tools/notes.py)

REPO = Path(__file__).resolve().parents[1]
LESSONS = REPO / "notebooks"
TEMPLATES = REPO / "tools" / "templates"
NODE_MODULES = REPO / "build" / "web" / "node_modules"
DEFAULT_OUT = REPO / "build" / "slides"

# The projector: a 1280x720 (16:9) canvas shown at scale 1 on a 1280x720 screen (margin 0), prose at
# BODY_PX and code at CODE_PX (the template's CSS), so what fits here fits on the screen. The heights
# below are estimates in CSS px that plan the split into sub-slides; tests/test_decks.py measures
# the real thing in Chromium.
CANVAS = (1280, 720)
BODY_PX, CODE_PX = 25, 19
PROSE_LINE, PROSE_CHARS = 37, 88     # px per line of prose, characters per line
CODE_LINE, CODE_CHARS = 25, 92       # px per line of code or output, characters per line before it wraps
HEADING_PX = {1: 70, 2: 62, 3: 52}
IMAGE_PX = 440                       # a stored figure is shown at most this tall (CSS max-height)
WIDGET_PX = 330
TABLE_ROW_PX = 28                    # a table row at 19 px (+22 px for each line a long cell wraps to)
SLIDE_PX = 600                       # content height one slide holds (canvas minus padding and margins)
MAX_CELLS = 3
CELL_PX = 16                         # margins around every cell
KEY_LINES = 18                       # a code cell without output longer than this shows its first lines
OUTPUT_HEAD, OUTPUT_TAIL = 7, 3      # a long log is cut to its head and tail
THEME_NAME = "white"  # reveal.js theme, here and in RISE: its font ships with reveal.js ("simple" imports Google Fonts)
MIN_SLIDES = 6
SHOW = ("all", "output", "lines", "skip")  # what the deck shows of a cell: course.deck.show


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
    """A speaker-notes cell in today's format (tools/notes.py moves them into metadata)."""
    return course_notes.is_notes_cell(cell)


def _skipped(nb) -> set[int]:
    """The install cell (tools/standalone.py), the parameters cell and the setup cell (the next code
    cell) are plumbing, not slides."""
    install = {i for i, cell in enumerate(nb.cells) if "course-install" in cell.metadata.get("tags", [])}
    for i, cell in enumerate(nb.cells):
        if "parameters" in cell.metadata.get("tags", []):
            later = [j for j in range(i + 1, len(nb.cells)) if nb.cells[j].cell_type == "code"]
            return {*install, i, *later[:1]}
    return install


# --------------------------------------------------------------------------- sizes on the canvas

def _rows(lines: list[str], chars: int) -> int:
    return sum(max(1, math.ceil(len(line) / chars)) for line in lines)


def _prose_px(text: str) -> int:
    """Estimated height of rendered markdown: headings, paragraphs, fenced code."""
    px, fence = 20, False
    for line in text.splitlines():
        if line.strip().startswith(("```", "~~~")):
            px, fence = px + 10, not fence
        elif fence:
            px += CODE_LINE
        elif m := re.match(r"(#{1,6}) ", line):
            px += HEADING_PX.get(len(m[1]), 50)
        elif not line.strip():
            px += 12
        else:
            visible = re.sub(r"<[^>]+>", "", re.sub(r"\]\([^)]*\)", "]", line))  # link targets are not shown
            px += PROSE_LINE * max(1, math.ceil(len(visible) / PROSE_CHARS))
    return px


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _output_px(out) -> int:
    if out.get("output_type") == "stream":
        return CODE_LINE * _rows(_text(out.get("text", "")).splitlines(), CODE_CHARS) + 16
    if out.get("output_type") == "error":
        return CODE_LINE * len(out.get("traceback", [])) + 16
    data = out.get("data", {})
    if "application/vnd.jupyter.widget-view+json" in data:
        return WIDGET_PX
    if any(k.startswith("image/") for k in data):
        return IMAGE_PX
    if "text/html" in data and "<table" in _text(data["text/html"]):
        return _table_px(_text(data["text/html"]))
    if "text/markdown" in data:
        return _prose_px(_text(data["text/markdown"]))
    if "text/plain" in data:
        return CODE_LINE * _rows(_text(data["text/plain"]).splitlines(), CODE_CHARS) + 16
    return 0


_ROW = re.compile(r"<tr\b.*?</tr>", re.S)
_TBODY = re.compile(r"<tbody>(.*?)</tbody>", re.S)
_CELL = re.compile(r"<t[dh]\b[^>]*>(.*?)</t[dh]>", re.S)


def _table_px(page: str) -> int:
    """Estimated height of an HTML table: the template lays tables out full width with fixed
    columns, so a cell longer than its column wraps and its row grows by a line per wrap."""
    rows = _ROW.findall(page)
    columns = max((len(_CELL.findall(r)) for r in rows), default=1) or 1
    chars = max(8, int((CANVAS[0] - 40) / columns / 12) - 2)  # 19 px text: up to ~12 px a character
    px = 0
    for row in rows:
        lines = max((math.ceil(len(re.sub(r"<[^>]+>", "", c).strip()) / chars) for c in _CELL.findall(row)), default=1)
        px += TABLE_ROW_PX + (max(lines, 1) - 1) * 22
    captions = re.findall(r"<caption\b.*?</caption>", page, re.S)
    return px + sum(TABLE_ROW_PX * max(1, math.ceil(len(re.sub(r"<[^>]+>", "", c)) / 110)) for c in captions) + 30


def _cut_table(page: str, keep: int, where: str) -> str:
    """The table with only its first ``keep - 1`` body rows and its last, and a row that says how
    many were left out and where to read them all."""
    body = _TBODY.search(page)
    if not body:
        return page
    rows = _ROW.findall(body.group(1))
    if len(rows) <= keep + 1:
        return page
    columns = max(len(_CELL.findall(r)) for r in rows)
    gap = (f'<tr class="deck-cut"><td colspan="{columns}">… {len(rows) - keep} rows left out '
           f"(full table: {where or 'notebook'}) …</td></tr>")
    return page[:body.start(1)] + "".join(rows[:keep - 1] + [gap] + rows[-1:]) + page[body.end(1):]


MIN_TABLE_ROWS = 4  # a table is never cut below this many of its rows


def _body_rows(page: str) -> int:
    body = _TBODY.search(page)
    return len(_ROW.findall(body.group(1))) if body else 0


def fit_tables(outputs: list, budget: int, where: str) -> list:
    """Cut the longest HTML tables among ``outputs`` (their first rows and the last one) until the
    outputs' estimated height fits ``budget`` px, or no table can lose more rows."""
    pages = {i: _text(o["data"]["text/html"]) for i, o in enumerate(outputs)
             if "<table" in _text(o.get("data", {}).get("text/html", ""))}
    for i in sorted(pages, key=lambda i: -_body_rows(pages[i])):
        keep = _body_rows(pages[i]) - 1
        while sum(_output_px(o) for o in outputs) > budget and keep >= MIN_TABLE_ROWS:
            outputs[i]["data"]["text/html"] = _cut_table(pages[i], keep, where)  # always from the whole table
            keep -= 1
    return outputs


def height(cell) -> int:
    """Estimated height (CSS px on the 1280x720 canvas) of a cell as the deck shows it."""
    if cell.cell_type == "markdown":
        return _prose_px(cell.source)
    code = 0 if cell.metadata.get("transient", {}).get("remove_source") or not cell.source.strip() \
        else CODE_LINE * _rows(cell.source.splitlines(), CODE_CHARS) + 24
    return code + sum(_output_px(o) for o in cell.get("outputs", []))


# --------------------------------------------------------------------------- what the deck shows of a cell

def deck_rule(cell, skipped: bool = False) -> dict:
    """What the deck shows of ``cell`` by the rules (``{"show": "all"}`` when it shows all of it)."""
    if skipped:
        return {"show": "skip", "why": "parameters / setup: plumbing"}
    if cell.cell_type == "markdown":
        if _prose_px(cell.source) <= SLIDE_PX:
            return {"show": "all"}
        lines, keep = cell.source.splitlines(), 0
        for i, line in enumerate(lines):  # the longest run of whole paragraphs that fits, with the pointer
            breaks = not line.strip() or re.match(r"\s{0,3}(?:[-*+]|\d+\.) ", line)  # a paragraph or a list item
            if i and breaks and _prose_px("\n".join(lines[:i])) <= SLIDE_PX - PROSE_LINE:
                keep = i
        return {"show": "lines", "lines": [1, max(keep, 1)], "why": "long prose: its first paragraphs"}
    if cell.cell_type != "code":
        return {"show": "all"}
    outputs = truncated_outputs(cell.get("outputs", []), "")
    data = [o.get("data", {}) for o in outputs]
    if any(k.startswith("image/") for d in data for k in d):
        return {"show": "output", "why": "a figure: shown without the code that draws it"}
    if cell.metadata.get("jupyter", {}).get("source_hidden"):
        return {"show": "output", "why": "code hidden in the notebook"}
    n = len(cell.source.splitlines())
    code_px = CODE_LINE * _rows(cell.source.splitlines(), CODE_CHARS) + 24
    out_px = sum(_output_px(o) for o in outputs)
    if outputs and code_px + out_px > SLIDE_PX:
        return {"show": "output", "why": "too tall with its code: the result"}
    if not outputs and n > KEY_LINES:
        return {"show": "lines", "lines": [1, KEY_LINES - 2], "why": "long code: its first lines"}
    return {"show": "all"}


def deck_choice(cell, skipped: bool = False) -> dict:
    """The stored choice when an author set it by hand (``"by": "hand"``), else the rules'."""
    stored = cell.metadata.get("course", {}).get("deck")
    if stored and stored.get("by") == "hand":
        return stored
    return deck_rule(cell, skipped)


def _where(title: str) -> str:
    number = course_notes.section_number(title)
    return f"notebook §{number}" if number.isdigit() else f"notebook, section “{title}”"


def truncated_outputs(outputs: list, where: str) -> list:
    """Long logs cut to head and tail, with the count of lines left out and where to read them."""
    cut, merged = [], []
    for out in outputs:  # consecutive prints to one stream are one block on screen
        if (merged and out.get("output_type") == "stream" and merged[-1].get("output_type") == "stream"
                and merged[-1].get("name") == out.get("name")):
            merged[-1]["text"] = _text(merged[-1]["text"]) + _text(out.get("text", ""))
        else:
            merged.append(copy.deepcopy(out))
    for out in merged:
        key = "text" if out.get("output_type") == "stream" else None
        if key is None and set(out.get("data", {})) == {"text/plain"}:
            out, key = out, "text/plain"
        holder = out if key == "text" else out.get("data", {})
        if key:
            lines = _text(holder[key]).splitlines()
            if len(lines) > OUTPUT_HEAD + OUTPUT_TAIL + 4:  # cutting fewer lines would save nothing
                left = len(lines) - OUTPUT_HEAD - OUTPUT_TAIL
                holder[key] = "\n".join(lines[:OUTPUT_HEAD] + [f"… {left} lines left out (full output: {where or 'notebook'}) …"]
                                        + lines[-OUTPUT_TAIL:]) + "\n"
        cut.append(out)
    return cut


def _pointer(text: str):
    return nbformat.v4.new_output("display_data", data={"text/html": f'<p class="deck-pointer">{text}</p>',
                                                        "text/plain": text})


def shown(cell, choice: dict, title: str):
    """A copy of ``cell`` as the deck shows it (``choice`` from :func:`deck_choice`)."""
    cell, where, show = copy.deepcopy(cell), _where(title), choice.get("show", "all")
    if show not in SHOW:
        raise SystemExit(f"course.deck.show is {show!r}: one of {', '.join(SHOW)}")
    if show == "skip":
        cell.metadata["slideshow"] = {"slide_type": "skip"}
        return cell
    if cell.cell_type == "code":
        cell.outputs = truncated_outputs(cell.get("outputs", []), where)
        code_px = 0 if show == "output" else CODE_LINE * _rows(cell.source.splitlines(), CODE_CHARS) + 24
        cell.outputs = fit_tables(cell.outputs, SLIDE_PX - code_px - 40, where)  # 40: the pointer line
    if show == "output":
        cell.metadata["transient"] = {"remove_source": True}
        if "figure" not in choice.get("why", ""):
            cell.outputs.append(_pointer(f"code: {where}"))
    elif show == "lines":
        lines = cell.source.splitlines()
        first, last = choice["lines"]
        kept, left = lines[first - 1:last], len(lines) - (last - first + 1)
        if left > 0 and cell.cell_type == "code":
            kept.append(f"# … {left} more lines: full code in {where}")
        elif left > 0:
            kept.append(f"\n*… continued in {where}*")
        cell.source = "\n".join(kept)
    return cell


def sections_of(nb) -> list[str]:
    """The title of the ``#``/``##`` section each cell belongs to."""
    titles, current = [], ""
    for cell in nb.cells:
        h = course_notes.heading_of(cell)
        if h and h[0] <= 2:
            current = h[1]
        titles.append(current)
    return titles


def deck_cells(nb) -> list:
    """Every cell as the deck shows it (stored hand choices, the rules for the rest)."""
    skipped, titles = _skipped(nb), sections_of(nb)
    return [cell if is_notes(cell) else shown(cell, deck_choice(cell, i in skipped), titles[i])
            for i, cell in enumerate(nb.cells)]


def slide_types(nb) -> list[str]:
    """The ``slide_type`` every cell should have, from headings and the cells' height on the canvas."""
    skipped, types = _skipped(nb), []
    px_here = cells_here = 0
    for i, (cell, view) in enumerate(zip(nb.cells, deck_cells(nb))):
        if i in skipped or view.metadata.get("slideshow", {}).get("slide_type") == "skip" and not is_notes(cell):
            types.append("skip")
            continue
        if is_notes(cell):
            types.append("notes")
            continue
        if cell.metadata.get("course", {}).get("check_yourself"):
            types.append("skip")  # the room is asked aloud; the student's folded question stays in the notebook
            continue
        size = height(view) + CELL_PX
        heading = cell.cell_type == "markdown" and re.match(r"#{1,2} ", cell.source.lstrip())
        if heading or not types or all(t in ("skip", "notes") for t in types):
            kind, cells_here, px_here = "slide", 0, 0
        elif (cells_here >= MAX_CELLS or (cells_here and px_here + size > SLIDE_PX)
              or (cell.cell_type == "markdown" and cell.source.lstrip().startswith("### "))):
            kind, cells_here, px_here = "subslide", 0, 0
        else:
            kind = "-"
        types.append(kind)
        cells_here, px_here = cells_here + 1, px_here + size
    return types


RISE = {"theme": THEME_NAME, "scroll": True}  # notebook metadata read by jupyterlab-rise (overrides its settings)


def apply(nb) -> bool:
    """Write the computed ``slideshow`` metadata, the rules' deck choices (hand ones are kept) and
    RISE's theme into ``nb``; True if anything changed."""
    changed = False
    rise = nb.metadata.setdefault("rise", {})
    for key, value in RISE.items():
        if rise.get(key) != value:
            rise[key], changed = value, True
    skipped = _skipped(nb)
    for i, cell in enumerate(nb.cells):
        if is_notes(cell):
            continue
        course = cell.metadata.get("course", {})
        if course.get("deck", {}).get("by") == "hand":
            continue
        rule = deck_rule(cell, i in skipped)
        want = None if rule == {"show": "all"} else {**rule, "by": "rule"}
        if course.get("deck") != want:
            changed = True
            if want is None:
                course.pop("deck")
                if not course:
                    cell.metadata.pop("course")
            else:
                cell.metadata.setdefault("course", {})["deck"] = want
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
    shown_ = sum(c.metadata.get("slideshow", {}).get("slide_type") in ("slide", "subslide") for c in nb.cells)
    if shown_ < MIN_SLIDES:
        found.append(f"only {shown_} slides and sub-slides (at least {MIN_SLIDES})")
    return found


# --------------------------------------------------------------------------- speaker notes on every slide

MINUTES = re.compile(r"\*\*Speaker notes\*\*\s*\((\d+)\s*min")


def lesson_plan(nb) -> str:
    """The notes of the title slide: every section with its minutes (from its notes)."""
    rows, total = [], 0
    for s in course_notes.section_notes(nb):
        if s["level"] != 2:
            continue
        minutes = sum(int(m) for m in MINUTES.findall(s["notes"]))
        total += minutes
        rows.append(f"- {s['title']}" + (f" ({minutes} min)" if minutes else ""))
    return f"**Lesson plan** ({total} min in all)\n\n" + "\n".join(rows)


def with_notes(nb, cells: list) -> list:
    """``cells`` with a notes cell after the first cell of every slide and sub-slide: the notes of its
    ``##`` section (a ``#`` title or part gets the lesson plan), so the speaker view never goes blank."""
    plan, by_cell = lesson_plan(nb), {}
    for s in course_notes.section_notes(nb):
        by_cell[s["cell"]] = s["notes"] if s["level"] == 2 else plan  # a section without notes has none
    out, notes = [], plan
    for i, cell in enumerate(cells):
        notes = by_cell.get(i, notes)
        out.append(cell)
        if notes and cell.metadata.get("slideshow", {}).get("slide_type") in ("slide", "subslide"):
            note = nbformat.v4.new_markdown_cell(notes)
            note.metadata["slideshow"] = {"slide_type": "notes"}
            out.append(note)
    return out


def deck(nb):
    """The notebook the slides are made from: notes migrated (in memory, for a lesson still in
    today's format), each cell as the deck shows it, the section's notes on every slide."""
    nb = copy.deepcopy(nb)
    course_notes.migrate(nb)
    fill_missing(nb)
    nb.cells = with_notes(nb, deck_cells(nb))
    return nb


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


def exporter(kind: str, prefix: str):
    """An nbconvert exporter (``slides`` or ``html``) using the offline templates."""
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


def export(notebook: Path, out_file: Path, kind: str, prefix: str) -> Path:
    """Convert one notebook (stored outputs and saved widget state as they are) to ``out_file``."""
    nb = nbformat.read(notebook, as_version=4)
    if kind == "slides":
        fill_missing(nb, notebook.name)
        nb = deck(nb)
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
