"""A lesson's talk: its deck file, checked against the lesson, and the notebook its slides are built from.

Each core lesson ``notebooks/NN_name.ipynb`` has a deck ``notebooks/decks/NN_name.yaml``: at most 30
slides, each with a title, a few words, the cells it shows from the lesson, speaker notes and minutes::

    lesson: 02_iris_cpu_vs_gpu
    slides:
    - title: Why was the GPU slower on iris?
      text: |                        # markdown on the slide (at most 60 words)
        **Answer:** ...
      from: [d60c52a6]               # cells the slide speaks for, besides those it shows
      show:                          # what the room sees from the lesson (its stored outputs)
      - {cell: 3ccc87a7, code: [3, 12]}        # these code lines (1-based, inclusive), no output
      - {cell: 9e1f0a2b, output: figure}       # the cell's figures, without its code
      minutes: 2
      notes: |
        **Say:** ...  **Ask the room:** ...  **Demo:** ...
    skip:                            # ## sections with no slide, and why
      e0c1d2f3: the exercises are done after class
    stamp:                           # written by `python tools/slides.py --stamp NN`
      694187ca: 1a2b3c4d5e

``show`` items: ``cell`` (a cell id), ``code`` (``all`` or ``[first, last]``), ``output`` (``all``,
``figure``, ``text``, ``table`` or a 0-based index), ``output_lines`` (``[first, last]`` of a text
output), ``output_grep`` (a regular expression: only the text output's lines that match, however a run
split its stream); a markdown cell is shown whole, or its ``lines: [first, last]``. Slides show the lesson's current cells and outputs, so a deck built from a run on a GPU
shows the GPU's numbers (``tools/slides.py --from build/run``).

One source of truth: the slides take their code and results from the lesson; the deck holds only
what a talk adds (titles, a few words, notes). ``stamp`` records a hash of every ``##`` section's
cells as they were when its slides were last reviewed; :func:`problems` reports a deck whose
section changed since (stale), a section without a slide, a cell id that no longer exists, and
plumbing on a slide.
"""
from __future__ import annotations

import copy
import hashlib
import json
import re
from pathlib import Path

import nbformat
import yaml

MAX_SLIDES = 30
PICTURE_EVERY = 5        # at least one slide in this many shows a picture
MAX_WORDS = 60           # words of text on one slide
OUTPUTS = ("all", "figure", "text", "table")
# Code a talk never shows: the course's bookkeeping, parameter checks, result cards, installs.
PLUMBING = re.compile(r"\b(record|compare|finish|check_params?|ledger|missing_gpu_line|progress|load_cards?|"
                      r"require_params?|show_table)\s*\(|\bledger\.|pip install|%pip|course_utils\.(?:ledger|params|cards)\b")
PLUMBING_TAGS = ("course-install", "parameters")
# A number with a unit on a slide or in its notes must be one the lesson says or its stored run printed:
# a run's number copied into a deck goes stale when the run is redone (or built from a GPU run).
QUANTITY = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s?(?:(?:µs|us|ms|s|GFLOP/s|TFLOP/s|GB/s|MiB|GiB|%|x|×)(?![\w/])(?!\s*10)"
                      r"|毫秒|微秒|秒|倍)")  # not 1.4 × 10¹¹; a Chinese deck's units too
HAN = re.compile(r"[\u3400-\u9fff]")
STAMP_HEADER = "# Written by `python tools/slides.py --stamp NN` once the slides of a changed section are reviewed.\n"


def deck_path(lesson: Path) -> Path:
    return lesson.parent / "decks" / f"{lesson.stem}.yaml"


def load(lesson: Path) -> dict:
    """The deck of ``lesson`` as a dict (``{}`` when it has none)."""
    path = deck_path(lesson)
    if not path.exists():
        return {}
    try:
        spec = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise SystemExit(f"{path}: not valid YAML: {e}") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("slides"), list):
        raise SystemExit(f"{path}: needs a 'slides:' list (tools/deck.py says what a slide holds)")
    return spec


# --------------------------------------------------------------------------- sections and their hashes

def _source(cell) -> str:
    return cell.source if isinstance(cell.source, str) else "".join(cell.source)


def sections(nb) -> dict[str, dict]:
    """``{heading cell id: {"title", "cells": [cell ids]}}`` for the title (cells before the first
    ``##``) and every ``##`` section, in order. The install cell belongs to none: it is generated."""
    found, current = {}, None
    for i, cell in enumerate(nb.cells):
        if "course-install" in cell.metadata.get("tags", []):
            continue
        src = _source(cell).lstrip()
        if i == 0 or (cell.cell_type == "markdown" and src.startswith("## ")):
            current = cell.id
            found[current] = {"title": src.splitlines()[0].lstrip("# ").strip() if src else "", "cells": []}
        found[current]["cells"].append(cell.id)
    return found


def section_hashes(nb) -> dict[str, str]:
    """A 10-hex hash of each section's cell sources (never outputs: they differ from run to run)."""
    by_id = {c.id: c for c in nb.cells}
    return {head: hashlib.sha256("\0".join(_source(by_id[c]) for c in s["cells"]).encode()).hexdigest()[:10]
            for head, s in sections(nb).items()}


def section_of(nb) -> dict[str, str]:
    """``{cell id: heading cell id of its section}``."""
    return {c: head for head, s in sections(nb).items() for c in s["cells"]}


def cells_of(slide: dict) -> list[str]:
    """The cell ids a slide speaks for (``from``) and shows, in order, once each."""
    ids = list(slide.get("from") or []) + [item.get("cell") for item in slide.get("show") or [] if isinstance(item, dict)]
    return list(dict.fromkeys(str(i) for i in ids))


def covered(nb, spec: dict) -> dict[str, list[int]]:
    """``{heading cell id: [slide numbers (1-based) drawing on that section]}``."""
    where, out = section_of(nb), {head: [] for head in sections(nb)}
    for n, slide in enumerate(spec.get("slides", []), 1):
        for head in dict.fromkeys(where[c] for c in cells_of(slide) if c in where):
            out[head].append(n)
    return out


# --------------------------------------------------------------------------- what a slide shows

def _lines(value, total: int, what: str) -> tuple[int, int]:
    if value == "all":
        return 1, total
    if (not isinstance(value, list) or len(value) != 2 or not all(isinstance(v, int) for v in value)
            or not 1 <= value[0] <= value[1] <= total):
        raise ValueError(f"{what} is {value!r}: 'all' or [first, last] within 1..{total}")
    return value[0], value[1]


def _is_figure(out) -> bool:
    return any(k.startswith("image/") for k in out.get("data", {}))


def _is_table(out) -> bool:
    return "<table" in "".join(out.get("data", {}).get("text/html", ""))


def _is_text(out) -> bool:
    return out.get("output_type") == "stream" or set(out.get("data", {})) == {"text/plain"}


def shown_cell(cell, item: dict):
    """A copy of ``cell`` with only what ``item`` shows (raises ValueError with the reason)."""
    cell = copy.deepcopy(cell)
    if cell.cell_type != "code":  # prose: all of it, or the lines chosen (e.g. a code block in the text)
        if item.get("lines", "all") != "all":
            lines = _source(cell).splitlines()
            first, last = _lines(item["lines"], len(lines), "lines")
            cell.source = "\n".join(lines[first - 1:last])
        return cell
    lines = _source(cell).splitlines()
    if item.get("code", "none") in ("none", None):
        cell.source = ""
        cell.metadata["transient"] = {"remove_source": True}
    else:
        first, last = _lines(item["code"], len(lines), "code")
        cell.source = "\n".join(lines[first - 1:last])
    want, outputs = item.get("output", "none"), cell.get("outputs", [])
    if want in ("none", None):
        picked = []
    elif want == "all":
        picked = outputs
    elif want in OUTPUTS:
        test = {"figure": _is_figure, "table": _is_table, "text": _is_text}[want]
        picked = [o for o in outputs if test(o)]
    elif isinstance(want, int) and 0 <= want < len(outputs):
        picked = [outputs[want]]
    else:
        raise ValueError(f"output is {want!r}: one of {', '.join(OUTPUTS)}, none, or an index below {len(outputs)}")
    if want not in ("none", None) and not picked:
        raise ValueError(f"output {want!r}: the cell's stored outputs have none (run the lesson and store its outputs)")
    if "output_grep" in item:  # the lines that match, wherever a run's stream happened to split them
        texts = [o for o in picked if o.get("output_type") == "stream"]
        lines = [line for o in texts for line in "".join(o["text"]).splitlines() if re.search(item["output_grep"], line)]
        if not lines:
            raise ValueError(f"output_grep {item['output_grep']!r} matches no line of the cell's text output")
        first = copy.deepcopy(texts[0])
        first["text"] = "\n".join(lines) + "\n"
        picked = [first]
    if "output_lines" in item:
        texts = [o for o in picked if o.get("output_type") == "stream"]
        if len(texts) != 1:
            raise ValueError("output_lines needs exactly one text output among those shown")
        text = "".join(texts[0]["text"]).splitlines()
        first, last = _lines(item["output_lines"], len(text), "output_lines")
        texts[0]["text"] = "\n".join(text[first - 1:last]) + "\n"
    for out in picked:  # a talk shows what a student would unfold: folded tables open on the slide
        html = out.get("data", {}).get("text/html")
        if html is not None:
            html = re.sub(r"<details(?![^>]*\bopen)", "<details open", "".join(html))
            out["data"]["text/html"] = re.sub(r"(?: \(click to open\)|: click to open|（点击展开）|：点击展开)(?=</summary>)", "", html)
    cell.outputs = picked
    return cell


def is_picture(cell) -> bool:
    return any(_is_figure(o) for o in cell.get("outputs", [])) or bool(
        cell.cell_type == "markdown" and re.search(r"!\[[^\]]*\]\(|<img\b", _source(cell)))


# --------------------------------------------------------------------------- checks

def lesson_text(nb) -> str:
    """Everything a lesson says: its cells' sources and the text of their stored outputs."""
    parts = []
    for cell in nb.cells:
        parts.append(_source(cell))
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                parts.append("".join(out.get("text", "")))
            parts += ["".join(v) if isinstance(v, list) else str(v)
                      for k, v in out.get("data", {}).items() if k.startswith("text/")]
    return "\n".join(parts)


def foreign_numbers(nb, spec: dict) -> list[str]:
    """``slide N (title): '3.73 s'`` for each number with a unit in a slide's title, text or notes that
    neither the lesson nor its stored outputs contain. Work a derived number out in words ("about
    1.4 times") or show the output that prints it."""
    said, found = lesson_text(nb), []
    for n, slide in enumerate(spec.get("slides", []), 1):
        if not isinstance(slide, dict):
            continue
        for key in ("title", "text", "notes"):
            for m in QUANTITY.finditer(str(slide.get(key, ""))):
                if not re.search(rf"(?<![\d.]){re.escape(m[1])}(?!\d)", said):
                    found.append(f"slide {n} ({slide.get('title', '')!r}) {key}: {m[0]!r}")
    return found


def _code_only(source: str) -> str:
    """``source`` without its comments (a comment may say "finish (" without calling anything)."""
    import io
    import tokenize

    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type != tokenize.COMMENT]
        return tokenize.untokenize(tokens)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return re.sub(r"#[^\n]*", "", source)  # a few lines cut from a cell may not tokenize


def problems(nb, spec: dict, name: str = "") -> list[str]:
    """Everything wrong with a lesson's deck, one line each (empty: fine)."""
    if not spec:
        where = f"zh/decks/{name[3:]}" if name.startswith("zh/") else f"decks/{name}"
        return [f"{name}: no deck (write notebooks/{where}.yaml: docs/authoring.md#decks)"]
    found, slides = [], spec["slides"]
    by_id = {c.id: c for c in nb.cells}
    plumbing_ids = {c.id for c in nb.cells if set(c.metadata.get("tags", [])) & set(PLUMBING_TAGS)}
    if not 1 <= len(slides) <= MAX_SLIDES:
        found.append(f"{len(slides)} slides (1 to {MAX_SLIDES})")
    titles = [s.get("title") if isinstance(s, dict) else None for s in slides]
    for title in {t for t in titles if titles.count(t) > 1}:
        found.append(f"two slides are titled {title!r}")
    pictures = 0
    for n, slide in enumerate(slides, 1):
        if not isinstance(slide, dict):
            found.append(f"slide {n} is not a mapping")
            continue
        at = f"slide {n} ({slide.get('title', 'untitled')!r})"
        unknown = set(slide) - {"title", "text", "from", "show", "minutes", "notes"}
        if unknown:
            found.append(f"{at}: unknown keys {sorted(unknown)}")
        if not str(slide.get("title", "")).strip():
            found.append(f"{at}: no title")
        if not str(slide.get("notes", "")).strip():
            found.append(f"{at}: no speaker notes")
        minutes = slide.get("minutes")
        if not isinstance(minutes, (int, float)) or isinstance(minutes, bool) or not 0 < minutes <= 15:
            found.append(f"{at}: minutes is {minutes!r} (a number above 0, at most 15)")
        words = text_words(str(slide.get("text", "")))
        if words > MAX_WORDS:
            found.append(f"{at}: {words} words of text (at most {MAX_WORDS}: say the rest)")
        if not cells_of(slide):
            found.append(f"{at}: draws on no cell of the lesson (give it 'from' or 'show')")
        for cid in cells_of(slide):
            if cid not in by_id:
                found.append(f"{at}: no cell with id {cid!r} in the lesson")
        shown = []
        for item in slide.get("show") or []:
            if not isinstance(item, dict) or str(item.get("cell")) not in by_id:
                continue
            cell = by_id[str(item["cell"])]
            if cell.id in plumbing_ids:
                found.append(f"{at}: shows the {'/'.join(set(cell.metadata['tags']) & set(PLUMBING_TAGS))} cell")
                continue
            try:
                view = shown_cell(cell, item)
            except ValueError as e:
                found.append(f"{at}: cell {cell.id}: {e}")
                continue
            hit = PLUMBING.search(_code_only(view.source)) if cell.cell_type == "code" else None
            if hit:
                found.append(f"{at}: shows plumbing code ({hit[0]!r} in cell {cell.id}): show its output, or other lines")
            shown.append(view)
        pictures += any(is_picture(v) for v in shown)
    if slides and pictures * PICTURE_EVERY < len(slides):
        found.append(f"{pictures} of {len(slides)} slides show a picture (at least one in {PICTURE_EVERY})")
    for where in foreign_numbers(nb, spec):
        found.append(f"{where} is not in the lesson or its stored run: a run's number goes on a slide as the "
                     "output that prints it (a rerun, or a GPU run, changes it)")
    first = slides[0] if slides and isinstance(slides[0], dict) else {}
    if not re.search(r"[?？]", f"{first.get('title', '')} {first.get('text', '')}") or not first.get("text"):
        found.append("the first slide asks the lesson's question (a '?') and answers it in its text")
    heads = sections(nb)
    skip = spec.get("skip") or {}
    drawn_on = covered(nb, spec)
    for head, slides_here in drawn_on.items():
        if not slides_here and head not in skip:
            found.append(f"section {heads[head]['title']!r} (cell {head}) has no slide: add one, or list it "
                         "under 'skip' with the reason")
    for head in skip:
        if head not in heads:
            found.append(f"skip names {head!r}, which is no section heading of the lesson")
    stamp, now = spec.get("stamp") or {}, section_hashes(nb)
    for head, digest in now.items():
        if str(stamp.get(head)) != digest:  # (a stamp written before digests were quoted: 9290476070 reads as a number)
            which = drawn_on.get(head) or []
            found.append(f"stale: section {heads[head]['title']!r} changed since its slides {which or '(none)'} were "
                         f"reviewed: check them, then run `python tools/slides.py --stamp {name[:5] if name.startswith('zh/') else name[:2]}`")
    return [f"{name}: {p}" for p in found] if name else found


# --------------------------------------------------------------------------- stamp and build

def english_lesson(lesson: Path) -> Path | None:
    """The English lesson a Chinese one (``notebooks/zh/``) translates; None for an English lesson."""
    return lesson.parent.parent / lesson.name if lesson.parent.name == "zh" else None


def translation_hash(english: dict) -> str:
    """A hash of an English deck's content (its ``stamp`` aside, which a review rewrites): what a Chinese
    deck records under ``translates:`` when it is translated or reviewed."""
    content = {k: v for k, v in english.items() if k != "stamp"}
    return hashlib.sha256(json.dumps(content, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def translation_problems(lesson: Path, spec: dict) -> list[str]:
    """A Chinese deck whose English deck changed since it was translated (or that records none)."""
    english = english_lesson(lesson)
    if english is None:
        return []
    if spec.get("translates") != translation_hash(load(english)):
        return [f"zh/{lesson.stem}: stale, the English deck changed after this translation: translate the "
                f"change, then python tools/slides.py --stamp zh/{lesson.name[:2]}"]
    return []


def stamp(lesson: Path, nb) -> bool:
    """Record the lesson's section hashes in its deck (the block after ``stamp:``) and, for a Chinese
    deck, the hash of the English deck it translates; True if changed."""
    path = deck_path(lesson)
    text = path.read_text(encoding="utf-8")
    heads, hashes = sections(nb), section_hashes(nb)
    english = english_lesson(lesson)
    block = STAMP_HEADER + "stamp:\n" + "".join(
        f"  {_key(head)}: {_key(digest)}   # {heads[head]['title'][:60]}\n"
        for head, digest in hashes.items()) + (
        f"translates: {translation_hash(load(english))}   # the English deck this translates\n" if english else "")
    old = re.search(re.escape(STAMP_HEADER) + "|^stamp:", text, re.M)  # the block is always last
    cut = old.start() if old else len(text)
    new = text[:cut].rstrip("\n") + "\n" + block
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def _key(cell_id: str) -> str:
    """A cell id or a digest as YAML that stays a string (``12345678`` or ``1e100000`` would not)."""
    return f'"{cell_id}"'


def notebook(nb, spec: dict):
    """The notebook the slides are made from: per slide a heading cell, the cells it shows and a notes
    cell (its minutes, its section, its notes); the title slide's notes also give the plan."""
    by_id, heads, where = {c.id: c for c in nb.cells}, sections(nb), section_of(nb)
    out = nbformat.v4.new_notebook(metadata=copy.deepcopy(nb.metadata))
    plan = lesson_plan(nb, spec)
    for n, slide in enumerate(spec["slides"], 1):
        level = "#" if n == 1 else "##"
        head = nbformat.v4.new_markdown_cell(f"{level} {slide['title']}\n\n{slide.get('text', '')}".strip())
        head.metadata["slideshow"] = {"slide_type": "slide"}
        out.cells.append(head)
        for k, item in enumerate(slide.get("show") or []):
            view = shown_cell(by_id[str(item["cell"])], item)
            view.id = f"s{n}-{k}"
            view.metadata["slideshow"] = {"slide_type": "-"}
            out.cells.append(view)
        group = heads[where[cells_of(slide)[0]]]["title"] if cells_of(slide) else ""
        text = f"**{slide['minutes']:g} min** · {group}\n\n{notes_markdown(slide['notes'])}"
        if n == 1:
            text += "\n\n" + plan
        note = nbformat.v4.new_markdown_cell(text)
        note.metadata["slideshow"] = {"slide_type": "notes"}
        out.cells.append(note)
    for i, cell in enumerate(out.cells):  # ids unique in the deck: a cell may be shown on two slides
        if cell.cell_type == "markdown":
            cell.id = f"d{i}"
    return out


def text_words(text: str) -> int:
    """Words of slide text: code spans count one each; Chinese, which has no spaces, counts two
    characters a word (the rough ratio of a Chinese translation to its English)."""
    text = re.sub(r"`[^`]*`", "x", text)
    return len([w for w in text.split() if not HAN.search(w)]) + -(-len(HAN.findall(text)) // 2)


def notes_markdown(notes: str) -> str:
    """The notes with each bold label ("**Say:**", "**Ask the room:**", "**Demo:**", in a Chinese deck
    "**讲：**", "**提问：**", "**演示：**") starting its own paragraph: a deck file wraps them as one
    block of lines, which markdown would run together."""
    labelled = re.sub(r"\s+(\*\*[A-Z][^*\n]{0,40}:\*\*)|\s*(\*\*[\u4e00-\u9fff]{1,6}：\*\*)",
                      lambda m: "\n\n" + (m[1] or m[2]), notes.strip())
    return labelled.strip()


def groups(nb, spec: dict) -> list[dict]:
    """The deck's slide groups, in order: each section its slides speak for first, with their minutes."""
    heads, where, out = sections(nb), section_of(nb), []
    for n, slide in enumerate(spec.get("slides", []), 1):
        ids = [c for c in cells_of(slide) if c in where]
        title = heads[where[ids[0]]]["title"] if ids else ""
        if not out or out[-1]["title"] != title:
            out.append({"title": title, "slides": 0, "minutes": 0, "pictures": 0})
        out[-1]["slides"] += 1
        out[-1]["minutes"] += slide.get("minutes", 0)
    return out


def lesson_plan(nb, spec: dict) -> str:
    rows = []
    for g in groups(nb, spec):
        title = re.sub(r"^(\d+)\. ", r"§\1 ", g["title"])  # "§2 ...", not "2. ...": no list inside the list
        rows.append(f"- {title}: {g['slides']} slide{'s' * (g['slides'] > 1)}, {g['minutes']:g} min")
    total = sum(s.get("minutes", 0) for s in spec.get("slides", []))
    return f"**Plan** ({len(spec['slides'])} slides, {total:g} min)\n\n" + "\n".join(rows)


def pictures(nb, spec: dict) -> int:
    """How many of the deck's slides show a picture."""
    by_id = {c.id: c for c in nb.cells}
    return sum(any(is_picture(shown_cell(by_id[str(i["cell"])], i)) for i in s.get("show") or [])
               for s in spec.get("slides", []))
