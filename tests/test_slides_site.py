"""`make slides` and `make site`: decks written as talks and checked against their lessons, pages with nothing fetched remotely.

The slow tests build lesson 00's slides and a one-lesson site into a temp folder from the npm-installed
assets (build/web/node_modules; `make slides` installs them, and so does the first slow test if npm
is there). The browser itself (requests, console, widgets) is tested in tests/test_browser.py.
"""
from __future__ import annotations

import copy
import html
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import slides  # noqa: E402

_spec = importlib.util.spec_from_file_location("course_site", REPO / "tools" / "site.py")
course_site = importlib.util.module_from_spec(_spec)  # not `import site`: that name is the stdlib's
_spec.loader.exec_module(course_site)

LESSON_00 = REPO / "notebooks" / "00_environment_check.ipynb"

# Anything a page would fetch from another host: script/link/img sources, CSS @import and url(),
# ES module imports, and quoted script/stylesheet URLs inside scripts. Plain <a href> links are fine.
REMOTE = [
    re.compile(r"<(?:script|link|img|iframe|source|video|audio|embed)\b[^>]*?\b(?:src|href)\s*=\s*[\"']?\s*(?:https?:)?//", re.I),
    re.compile(r"@import\s+(?:url\()?\s*[\"']?\s*(?:https?:)?//", re.I),
    re.compile(r"url\(\s*[\"']?\s*(?:https?:)?//", re.I),
    re.compile(r"\bimport\s*\(?\s*[\"'](?:https?:)?//", re.I),
    re.compile(r"[\"'](?:https?:)?//[^\"'\s]+\.(?:m?js|css)(?:\?[^\"'\s]*)?[\"']", re.I),
]
LOCAL_REF = re.compile(r"<(?:script|link)\b[^>]*?\b(?:src|href)\s*=\s*\"([^\"#]+)\"", re.I)


def remote_references(text: str) -> list[str]:
    return [text[max(0, m.start() - 60):m.end() + 60] for p in REMOTE for m in p.finditer(text)]


def _nb(*cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    return nb


def _md(src, **meta):
    c = nbformat.v4.new_markdown_cell(src)
    c.metadata.update(meta)
    return c


def _code(src, tags=(), lines_out=0):
    c = nbformat.v4.new_code_cell(src)
    if tags:
        c.metadata["tags"] = list(tags)
    if lines_out:
        c.outputs = [nbformat.v4.new_output("stream", name="stdout", text="x\n" * lines_out)]
    return c


DECK_00 = REPO / "notebooks" / "decks" / "00_environment_check.yaml"
decks = slides.decks


def _lesson_copy(tmp_path: Path) -> tuple[Path, object]:
    """Lesson 00 and its deck in a temp folder laid out as notebooks/ is (NN_x.ipynb, decks/NN_x.yaml)."""
    (tmp_path / "decks").mkdir()
    shutil.copy(LESSON_00, tmp_path / LESSON_00.name)
    shutil.copy(DECK_00, tmp_path / "decks" / DECK_00.name)
    return tmp_path / LESSON_00.name, nbformat.read(LESSON_00, as_version=4)


def _cell(nb, startswith: str):
    return next(c for c in nb.cells if c.source.startswith(startswith))


def test_every_lesson_has_a_deck_that_keeps_the_rules_and_is_not_stale():
    """At most 30 slides, notes and minutes on each, a picture on one in five, no plumbing, every section
    spoken for, and no section changed since its slides were reviewed. Fix what it says; after
    reviewing a changed section's slides, `python tools/slides.py --stamp NN`."""
    bad = {p.name: decks.problems(nbformat.read(p, as_version=4), decks.load(p), p.stem) for p in slides.lessons()}
    assert not {k: v for k, v in bad.items() if v}, {k: v[:4] for k, v in bad.items() if v}


def test_a_changed_section_makes_its_slides_stale_until_stamped(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(slides, "LESSONS", slides.LESSONS)  # main(--notebooks) rebinds it; restored after
    path, nb = _lesson_copy(tmp_path)
    assert slides.main(["--check", "--notebooks", str(tmp_path)]) == 0
    # An edit to the prose of §2 (a slide shows none of it) and one to code a slide shows.
    _cell(nb, "## 2. The checklist").source += "\n\nA new sentence."
    nbformat.write(nb, path)
    assert slides.main(["--check", "--notebooks", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "stale: section '2. The checklist: flags and tests' changed since its slides" in out, out
    assert out.count("stale:") == 1, "only the changed section is stale"
    assert slides.main(["--stamp", "00", "--notebooks", str(tmp_path)]) == 0
    assert slides.main(["--check", "--notebooks", str(tmp_path)]) == 0
    first = (tmp_path / "decks" / DECK_00.name).read_text()
    assert slides.main(["--stamp", "00", "--notebooks", str(tmp_path)]) == 0
    assert (tmp_path / "decks" / DECK_00.name).read_text() == first, "a second stamp changes nothing"
    assert first.split("stamp:")[0] == DECK_00.read_text().split("stamp:")[0], "stamping keeps the slides as written"
    # Outputs are not the deck's business: a run on another machine is never stale.
    _cell(nb, "report = environment_report()").outputs[0]["text"] = "torch: 2.13.0+cu130\n"
    nbformat.write(nb, path)
    assert decks.problems(nbformat.read(path, as_version=4), decks.load(path)) == []
    _cell(nb, "report = environment_report()").source += "\nprint('more')"
    nbformat.write(nb, path)
    assert any("stale: section '1. What PyTorch sees" in p for p in decks.problems(nb, decks.load(path)))


def test_a_new_section_or_a_lost_cell_is_reported(tmp_path):
    path, nb = _lesson_copy(tmp_path)
    spec = decks.load(path)
    nb.cells.insert(-6, nbformat.v4.new_markdown_cell("## 6. A new section\n\nNew text."))
    found = decks.problems(nb, spec)
    assert any("section '6. A new section'" in p and "has no slide" in p for p in found), found
    spec["skip"] = {nb.cells[-7].id: "covered aloud"}
    assert not any("has no slide" in p for p in decks.problems(nb, spec))
    nb.cells = [c for c in nb.cells if c.id != "8961d67f"]  # the cell slide 10 shows
    assert any("no cell with id '8961d67f'" in p for p in decks.problems(nb, spec))


def test_the_rules_refuse_plumbing_long_text_no_notes_and_too_many_slides():
    nb = nbformat.read(LESSON_00, as_version=4)
    base = decks.load(LESSON_00)
    record = _cell(nb, "failed = [c for c in checks").id
    params = next(c.id for c in nb.cells if "parameters" in c.metadata.get("tags", []))

    def found(**change):
        spec = copy.deepcopy(base)
        spec["slides"][1].update(change)
        return "\n".join(decks.problems(nb, spec))

    assert "shows plumbing code ('record(' in cell" in found(show=[{"cell": record, "code": "all"}])
    assert "shows the parameters cell" in found(show=[{"cell": params, "code": "all"}])
    assert "plumbing" not in found(show=[{"cell": record, "output": "text"}]), "its printed verdict may be shown"
    assert "no speaker notes" in found(notes="")
    assert "minutes is 0" in found(minutes=0)
    assert "words of text (at most 60" in found(text="word " * 61)
    assert "code is [3, 99]" in found(show=[{"cell": "80224183", "code": [3, 99]}])
    many = copy.deepcopy(base)
    many["slides"] += [dict(base["slides"][4], title=f"more {i}") for i in range(25)]
    text = "\n".join(decks.problems(nb, many))
    assert f"{len(many['slides'])} slides (1 to 30)" in text and "slides show a picture (at least one in 5)" in text
    first = copy.deepcopy(base)
    first["slides"][0].update(title="Environment check", text="Checks.")
    assert "the first slide asks the lesson's question" in "\n".join(decks.problems(nb, first))


def test_a_deck_is_its_slides_with_notes_and_nothing_cut():
    nb = slides.deck(LESSON_00)
    spec = decks.load(LESSON_00)
    heads = [c for c in nb.cells if c.metadata["slideshow"]["slide_type"] == "slide"]
    assert [h.source.splitlines()[0].lstrip("# ") for h in heads] == [s["title"] for s in spec["slides"]]
    kinds = [c.metadata["slideshow"]["slide_type"] for c in nb.cells]
    assert kinds.count("notes") == len(spec["slides"]) and kinds[-1] == "notes"
    assert all(kinds[i + 1] in ("-", "notes") for i, k in enumerate(kinds) if k == "slide")
    notes = [c.source for c in nb.cells if c.metadata["slideshow"]["slide_type"] == "notes"]
    assert notes[0].startswith(f"**{spec['slides'][0]['minutes']} min**") and "**Plan** (" in notes[0]
    assert all(decks.notes_markdown(s["notes"]) in n for s, n in zip(spec["slides"], notes))
    assert "\n\n**Ask the room:**" in notes[1], "each label of the notes starts its own paragraph"
    shown = [c for c in nb.cells if c.cell_type == "code"]
    lines = _cell(nbformat.read(LESSON_00, as_version=4), "def matmul_matches_cpu").source.splitlines()
    assert any(c.source == "\n".join(lines[:8]) and not c.outputs for c in shown), "code: [1, 8] shows those lines"
    figures = [c for c in shown if c.metadata.get("transient", {}).get("remove_source")]
    assert figures and all(c.source == "" for c in figures)
    everything = json.dumps(nb)
    assert "continued in" not in everything and "more lines" not in everything and "left out" not in everything
    assert "<details open" in everything and "<details>" not in everything, "a folded table is open on the slide"
    assert len({c.id for c in nb.cells}) == len(nb.cells), "a cell shown on two slides gets two ids"


def test_output_grep_finds_lines_wherever_a_run_split_its_stream():
    cell = nbformat.v4.new_code_cell("run()")
    for split in (["a\n$ cmd 1\n", "x\n--- done\n$ cmd 2\n"], ["a\n$ cmd 1\nx\n--- done\n", "$ cmd 2\n"]):
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=t) for t in split]
        view = decks.shown_cell(cell, {"cell": "x", "output": "text", "output_grep": r"^\$ cmd 2"})
        assert [o["text"] for o in view.outputs] == ["$ cmd 2\n"]
    with pytest.raises(ValueError, match="matches no line"):
        decks.shown_cell(cell, {"cell": "x", "output": "text", "output_grep": "nothing"})


def test_a_deck_can_show_another_runs_outputs(tmp_path):
    """`make slides FROM=build/run`: the slides show an executed copy's outputs (a GPU run's figures)."""
    nb = nbformat.read(LESSON_00, as_version=4)
    cell = _cell(nb, "report = environment_report()")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="torch: 2.13.0+cu130 on an H200\n")]
    nbformat.write(nb, tmp_path / LESSON_00.name)
    deck = slides.deck(LESSON_00, outputs_from=tmp_path)
    assert "on an H200" in json.dumps(deck)
    nb.cells.pop(3)
    nbformat.write(nb, tmp_path / LESSON_00.name)
    with pytest.raises(SystemExit, match="is not a run of"):
        slides.deck(LESSON_00, outputs_from=tmp_path)


def test_the_decks_plan_in_the_teaching_guide_is_current():
    """Fix with `python tools/slides.py --plan --write`."""
    text = slides.TEACHING.read_text(encoding="utf-8")
    assert slides.PLAN_START in text, "docs/teaching.md carries the decks' plan"
    assert text.split(slides.PLAN_START, 1)[1].split(slides.PLAN_END, 1)[0].strip() == slides.plan_table()


def test_no_lesson_keeps_speaker_notes_or_slide_cuts_in_its_cells():
    """Speaker notes live in the decks; a student's notebook shows none, and carries no slide metadata
    (but the install cell's `skip`, which tools/standalone.py writes)."""
    for path in slides.lessons():
        for cell in nbformat.read(path, as_version=4).cells:
            course = cell.metadata.get("course", {})
            assert "notes" not in course and "deck" not in course, (path.name, cell.id)
            assert not cell.source.lstrip().startswith("**Speaker notes**"), (path.name, cell.id)
            if "course-install" not in cell.metadata.get("tags", []):
                assert "slideshow" not in cell.metadata, (path.name, cell.id)


def test_no_lesson_needs_mathjax():
    """The offline pages ship no MathJax: a lesson with LaTeX math needs it added (tools/slides.py says how)."""
    assert {p.name: slides.uses_latex(nbformat.read(p, as_version=4)) for p in slides.lessons()
            if slides.uses_latex(nbformat.read(p, as_version=4))} == {}
    assert slides.uses_latex(_nb(_md("energy $E = mc^2$"))) == [0]
    assert slides.uses_latex(_nb(_md("costs $2 and $3; `echo $HOME`\n```bash\nx=$(pwd)\n```"))) == []


def test_package_json_pins_the_browser_assets_without_scripts():
    pkg = json.loads((REPO / "package.json").read_text())
    lock = json.loads((REPO / "package-lock.json").read_text())
    assert pkg["private"] is True and "scripts" not in pkg
    deps = pkg["dependencies"]
    # The browser assets, and JupyterHub's proxy for the shared-server kit (tests/test_jupyterhub.py).
    assert set(deps) == {"reveal.js", "requirejs", "jquery", "@jupyter-widgets/html-manager", "configurable-http-proxy"}
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", v) for v in deps.values()), "exact versions"
    assert deps["reveal.js"].startswith("4."), "nbconvert's reveal template expects reveal.js 4.x"
    for name, version in deps.items():
        assert lock["packages"][f"node_modules/{name}"]["version"] == version, f"lockfile out of date for {name}"
    ignored = (REPO / ".gitignore").read_text().split()
    assert "build/" in ignored and "node_modules/" in ignored


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_slides_and_site_install_assets_then_build():
    out = subprocess.run(["make", "-n", "-B", "-o", ".venv/.course-installed", "site"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    assert "npm ci --ignore-scripts" in out and "tools/slides.py" in out and "tools/site.py" in out
    assert out.index("npm ci") < out.index("tools/slides.py") < out.index("tools/site.py")


def test_site_index_links_every_lesson():
    lessons = slides.lessons()
    page = course_site.index_html(course_site.lesson_rows(lessons))
    for path in lessons:
        for link in (f"lessons/{path.stem}.html", f"slides/{path.stem}.slides.html"):
            assert f'href="{link}"' in page, link
        if (REPO / "solutions" / path.name).exists():
            assert f'href="solutions/{path.stem}.html"' in page
    assert "results/cpu-ci.json" in page and not remote_references(page)


def _assets_installed() -> Path:
    if not (slides.NODE_MODULES / "reveal.js").exists():
        if shutil.which("npm") is None or shutil.which("make") is None:
            pytest.skip("needs npm (or build/web/node_modules from `make slides`)")
        subprocess.run(["make", "build/web/node_modules/.package-lock.json"], cwd=REPO, check=True)
    return slides.NODE_MODULES


def _assert_offline(page: Path, root: Path):
    text = page.read_text(encoding="utf-8")
    assert not remote_references(text), remote_references(text)[:3]
    for ref in LOCAL_REF.findall(text):
        assert (page.parent / ref).resolve().is_file(), f"{page.name}: {ref} is not a local file"
        assert (page.parent / ref).resolve().is_relative_to(root), f"{page.name}: {ref} leaves {root}"
    return text


@pytest.mark.slow
def test_slides_of_lesson_00_are_offline_with_its_decks_slides(tmp_path):
    _assets_installed()
    [page] = slides.build(["00"], tmp_path)
    text = _assert_offline(page, tmp_path)
    assert text.count("<section") == 2 * len(decks.load(LESSON_00)["slides"])  # a column holding its one slide
    assert 'href="assets/reveal.js/dist/theme/white.css"' in text and "mermaid" not in text.lower().split("</head>")[0]
    assert "MathJax.Hub.Queue" not in text
    for css in (tmp_path / "assets").rglob("*.css"):
        assert not remote_references(css.read_text(encoding="utf-8", errors="replace")), css


@pytest.mark.slow
def test_site_of_lesson_00_is_offline_and_links_resolve(tmp_path):
    _assets_installed()
    slides.build(["00"], tmp_path / "slides")
    index = course_site.build(tmp_path / "site", tmp_path / "slides", ["00"])
    root = (tmp_path / "site").resolve()
    for page in [index, *root.glob("lessons/*.html"), *root.glob("solutions/*.html"), *root.glob("slides/*.html")]:
        _assert_offline(page, root)
    hrefs = re.findall(r'<a href="([^"#:]+)"', index.read_text(encoding="utf-8"))
    assert hrefs and all((root / h).is_file() for h in hrefs), hrefs


def test_widget_state_is_kept_in_the_pages():
    """Lesson 02's deeper notebook stores its explorer's widget state; the exported page carries it for the
    HTML manager."""
    nb = nbformat.read(REPO / "notebooks" / "deeper" / "02_iris_cpu_vs_gpu.ipynb", as_version=4)
    assert "widgets" in nb.metadata, "the stored run of lesson 02's deeper notebook keeps its explorer's state"
    body, _ = slides.exporter("html", "assets").from_notebook_node(copy.deepcopy(nb))
    assert 'type="application/vnd.jupyter.widget-state+json"' in body
    assert 'type="application/vnd.jupyter.widget-view+json"' in body
    assert "'assets/html-manager/embed-amd.js'" in body and not remote_references(body)


def test_instructor_page_has_every_slides_notes():
    page = course_site.instructor_html([LESSON_00])
    spec = decks.load(LESSON_00)
    flat = html.unescape(re.sub(r"<[^>]+>", "", page))
    for n, slide in enumerate(spec["slides"], 1):
        assert f"{n}. {slide['title']} ({slide['minutes']} min)" in flat
    assert flat.count("Ask the room") == sum(s["notes"].count("Ask the room") for s in spec["slides"]) > 0
    assert "Plan (" in flat and not remote_references(page)
    assert 'href="instructor.html"' in course_site.index_html(course_site.lesson_rows([LESSON_00]))


def test_pages_get_what_nbconvert_adds_after_rendering_without_its_reparse():
    """tools/slides.py adds nbconvert's alt text and tabindex attributes itself instead of letting
    nbconvert re-parse the page (most of `make slides site`'s time): the page must be nbconvert's own,
    compared parsed the same way, for a lesson page and a deck with a figure and an image without alt."""
    from bs4 import BeautifulSoup

    nb = nbformat.read(LESSON_00, as_version=4)
    images = sum("image/png" in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))  # the lesson's own
    nb.cells.append(nbformat.v4.new_markdown_cell('<img src="data:image/png;base64,iVBORw0KGgo=">'))
    figure = nbformat.v4.new_code_cell("plot()")
    figure.outputs = [nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"})]
    nb.cells.append(figure)
    ids = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
    for kind in ("html", "slides"):
        ours = slides.exporter(kind, "assets")
        theirs = type(ours).__mro__[1](config=ours.config)  # nbconvert's exporter, the same settings
        assert type(theirs).__module__.startswith("nbconvert.")
        mine, its = (ids.sub("ID", str(BeautifulSoup(e.from_notebook_node(copy.deepcopy(nb))[0], features="html.parser")))
                     for e in (ours, theirs))
        assert mine == its, f"{kind}: the page differs from nbconvert's"
        assert mine.count(f'alt="{slides.NO_ALT_TEXT}"') == images + 2 and 'tabindex="0"' in mine
